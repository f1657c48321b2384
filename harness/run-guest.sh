#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# run-guest.sh [options]: boot a guest under QEMU and run one job in it.
#   --kernel IMG     (default build/bzImage)
#   --initrd CPIO    (required)
#   --job NAME       guest job (harness/guest/NAME.sh); "shell" is interactive
#   --name NAME      log name: build/logs/NAME.{console,out}.log (default: job)
#   --mem SIZE       guest memory (default 2G)
#   --smp N          vCPUs (default 2)
#   --timeout SECS   hard limit for the whole boot (default 900)
#   --append ARGS    extra kernel command line
#   --prealloc       back all guest memory on the host before boot
#                    (-mem-prealloc): the first touch of guest memory then
#                    costs the host nothing (the benchmark, bench.sh)
# The kernel console goes to NAME.console.log, the job's output to
# NAME.out.log and to stdout.  Exit status: the job's, read from the
# sentinel line; 101 when the sentinel never came (timeout, panic, hang);
# 100 when the console shows a kernel splat (harness/check-console.sh),
# whatever the job said.
. "$(dirname "$0")/lib.sh"
kernel=$BUILD/bzImage initrd= job= name= mem=2G smp=2 tmo=900 append=
prealloc=()
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift 2 ;;
	--initrd) initrd=$2; shift 2 ;;
	--job) job=$2; shift 2 ;;
	--name) name=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--timeout) tmo=$2; shift 2 ;;
	--append) append=$2; shift 2 ;;
	--prealloc) prealloc=(-mem-prealloc); shift ;;
	*) die "run-guest.sh: unknown option $1" ;;
	esac
done
[ -n "$initrd" ] && [ -n "$job" ] || die "run-guest.sh: --initrd and --job are required"
name=${name:-$job}
mkdir -p "$LOGS"
con=$LOGS/$name.console.log
out=$LOGS/$name.out.log
rm -f "$con" "$out"

accel=$("$TOP/harness/accel.sh" "$kernel" "$initrd")
if [ "$accel" = kvm ]; then cpu=host; else cpu=max,la57=off; fi
cmdline="console=ttyS0,115200 panic=-1 sp.job=$job $append"
qemu=(qemu-system-x86_64 -accel "$accel" -cpu "$cpu" -m "$mem" -smp "$smp"
      "${prealloc[@]}"
      -nographic -no-reboot -display none -kernel "$kernel" -initrd "$initrd")

if [ "$job" = shell ]; then
	say "interactive guest ($accel); 'reboot -f' or Ctrl-A x leaves it"
	exec "${qemu[@]}" -append "$cmdline" -serial mon:stdio -serial "file:$out"
fi

say "booting guest: job=$job accel=$accel mem=$mem smp=$smp timeout=${tmo}s"
: >"$out"
tail -n +1 -f "$out" 2>/dev/null &
tailpid=$!
start=$(date +%s)
set +e
timeout -k 10 "$tmo" "${qemu[@]}" -append "$cmdline" -monitor none \
	-serial "file:$con" -serial "file:$out" </dev/null >/dev/null 2>"$LOGS/$name.qemu.err"
qrc=$?
set -e
sleep 0.3
kill "$tailpid" 2>/dev/null || true
wait "$tailpid" 2>/dev/null || true
say "guest done in $(( $(date +%s) - start ))s (qemu exit $qrc); console: ${con#$TOP/}"

rc=$(tr -d '\r' <"$out" | sed -n 's/^SUPERPAGE-GUEST-EXIT rc=\([0-9]*\)$/\1/p' | tail -n 1)
if ! "$TOP/harness/check-console.sh" "$con"; then
	echo "FAIL: kernel splat on the console (job status ${rc:-none})" >&2
	exit 100
fi
if [ -z "$rc" ]; then
	[ $qrc -eq 124 ] && echo "FAIL: guest timed out after ${tmo}s" >&2
	echo "FAIL: no exit sentinel from the guest (crash or hang); last console lines:" >&2
	tail -n 30 "$con" | sed 's/^/  | /' >&2
	cat "$LOGS/$name.qemu.err" >&2
	exit 101
fi
exit "$rc"
