#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mm-selftests.sh: build the kernel's own tools/testing/selftests/mm tests
# that run in our busybox guest (static, from a private copy of the sources
# in build/mm-selftests/), boot the test kernel under QEMU with 3 GiB,
# numa=fake=2, 1 GiB of zram swap and 128 hugetlb pages, run the list of
# harness/mm-selftests.list (group "main" on 2 vCPUs, then "migration" on
# 3), and print one line per run, "ok N mm: NAME" / "not ok ..." /
# "ok ... # SKIP", and "N passed, N failed, N skipped".
#
# Environment:
#   SP_KERNEL=IMG     boot IMG and build no kernel (default: build the test
#                     kernel with harness/build-kernel.sh, boot build/bzImage)
#   SP_SUPERPAGE=M    write M to vm.superpage_enabled in the guest first
#   SP_FLAVOUR=F      build and boot the kernel flavour F (default test;
#                     sanitizer: KASAN and the rest, timeouts times 3)
#   SP_MM_TMO_SCALE=N multiply every run's timeout by N
#   SP_MM_FILTER=RE   only the runs whose command matches the egrep RE,
#                     e.g. SP_MM_FILTER='^(cow|khugepaged.*)$'
#
# Each run's full output: build/logs/mm-selftests/NNN-NAME.log; the result
# lines with the guest parameters: build/logs/mm-selftests.txt (the format
# of baseline/mm-selftests.txt; the runs whose result differs from the
# baseline's are listed).  Under TCG on 2 busy cores the whole list takes
# 25 to 40 minutes.  Exit status: 100 on a kernel splat, 101 when a guest
# did not finish (run-guest.sh), else 1 if any run failed, else 0.
. "$(dirname "$0")/lib.sh"
t0=$(date +%s)
"$TOP/harness/deps.sh"

mmb=$BUILD/mm-selftests
list=$TOP/harness/mm-selftests.list
baseline=$TOP/baseline/mm-selftests.txt
# With the feature on, compare with the record made with it on.
[ -f "$TOP/baseline/mm-selftests-superpage${SP_SUPERPAGE:-}.txt" ] &&
	baseline=$TOP/baseline/mm-selftests-superpage$SP_SUPERPAGE.txt
mkdir -p "$mmb"

# The kernel: a private copy, so that a concurrent rebuild cannot change it
# under the guest.
flavour=${SP_FLAVOUR:-test}
if [ -n "${SP_KERNEL:-}" ]; then
	kernel=$SP_KERNEL
else
	"$TOP/harness/build-kernel.sh" "$flavour"
	kernel=$(kimage "$flavour")
fi
# Every run's timeout times SP_MM_TMO_SCALE: the sanitizer kernel (KASAN,
# DEBUG_PAGEALLOC) runs the suite about three times slower.
scale=${SP_MM_TMO_SCALE:-1}
[ "$flavour" = sanitizer ] && scale=${SP_MM_TMO_SCALE:-3}
[ -f "$kernel" ] || die "no kernel image $kernel"
[ "$(realpath "$kernel")" = "$(realpath -m "$mmb/bzImage")" ] ||
	cp "$kernel" "$mmb/bzImage"
kver=$(file -bL "$mmb/bzImage" | sed -n 's/.*version \([^ ]*\) .*/\1/p')

# The sources: the selftests, the tools headers and mm/gup_test.h, copied
# out of the kernel tree, which is only read.
say "copying the mm selftests sources to ${mmb#$TOP/}/src"
src=$mmb/src
mkdir -p "$src"
(cd "$SRC" && rsync -a --delete --relative tools/include tools/arch/x86/include \
	tools/testing/selftests/lib.mk tools/testing/selftests/kselftest.h \
	tools/testing/selftests/kselftest_harness.h tools/testing/selftests/kselftest \
	tools/testing/selftests/mm tools/testing/selftests/x86 mm/gup_test.h "$src/")
mm=$src/tools/testing/selftests/mm
# The 6.12 khugepaged.c uses KSFT_SKIP without including kselftest.h (fixed
# upstream later); include it in our copy only.
grep -q '"../kselftest.h"' "$mm/khugepaged.c" ||
	sed -i 's|^#include "vm_util.h"|#include "../kselftest.h"\n#include "vm_util.h"|' \
		"$mm/khugepaged.c"

# The UAPI headers: those of the test kernel's object directory when
# harness/build-selftests.sh made them, else "make headers" on a copy of
# the files it needs, with our own O=.
hdr=$mmb/usr/include
mkdir -p "$hdr"
if [ -d "$(objdir test)/usr/include/linux" ]; then
	rsync -a --delete "$(objdir test)/usr/include/" "$hdr/"
else
	say "making the UAPI headers in ${mmb#$TOP/}/linux"
	mkdir -p "$mmb/linux"
	(cd "$SRC" && rsync -a --delete --relative Makefile Kbuild Kconfig scripts \
		include arch/x86 usr tools/include tools/arch/x86 tools/scripts \
		"$mmb/linux/")
	quiet make -C "$mmb/linux" O="$mmb/obj" headers
	rsync -a --delete "$mmb/obj/usr/include/" "$hdr/"
fi

# The runs: the list, less the runs SP_MM_FILTER leaves out.
runs=$mmb/mm-selftests.list
grep -v -E '^[[:space:]]*(#|$)' "$list" |
	awk -v re="${SP_MM_FILTER:-}" '{
		cmd = $4; for (i = 5; i <= NF; i++) cmd = cmd " " $i
		if (re == "" || cmd ~ re) print
	}' >"$runs"
[ -s "$runs" ] || die "no run of ${list#$TOP/} matches SP_MM_FILTER=${SP_MM_FILTER:-}"
mapfile -t bins < <(awk '{ print $4 }' "$runs" | sort -u)

say "building ${#bins[@]} mm selftests (static)"
bin=$mmb/bin
rm -rf "$bin"
mkdir -p "$bin"
quiet make -C "$mm" -j"$JOBS" OUTPUT="$bin" KHDR_INCLUDES="-isystem $hdr" \
	LDFLAGS=-static "${bins[@]/#/$bin/}"
cp "$runs" "$bin/mm-selftests.list"

initrd=$mmb/initramfs.cpio
"$TOP/harness/initramfs.sh" "$initrd" "$bin=selftests/mm"

# One boot per group, numbering the runs on from one group to the next.
append="numa=fake=2 sp.mmscale=$scale"
[ -n "${SP_SUPERPAGE:-}" ] && append="$append sp.superpage=$SP_SUPERPAGE"
dump_ok='page dumped because: gup_test: dump_pages() test'
worst=0
first=1
env=
rm -f "$LOGS"/mm-selftests-*.log
results=$mmb/results
: >"$results"
for group in main migration; do
	n=$(awk -v g=$group '$1 == g' "$runs" | wc -l)
	[ "$n" -gt 0 ] || continue
	smp=2
	[ $group = migration ] && smp=3
	# run-guest.sh's progress lines ("==> ") are shown as they come, the
	# rest of its stderr (its verdict on the console) once it is clear
	# whether the "splat" is only gup_test -ct's page dumps.
	err=$mmb/run-guest-$group.err
	set +e
	"$TOP/harness/run-guest.sh" --kernel "$mmb/bzImage" --initrd "$initrd" \
		--job mm-selftests --name "mm-selftests-$group" --mem 3G --smp $smp \
		--timeout $((5400 * scale)) --append "$append sp.mmgroup=$group sp.mmfirst=$first" \
		2> >(tee "$err" | grep --line-buffered '^==> ' >&2) |
		sed -u -n -E 's/\r$//; /^(not )?ok [0-9]+ |^# (env|cmdline|setup)/p'
	grc=${PIPESTATUS[0]}
	wait $!
	set -e
	out=$LOGS/mm-selftests-$group.out.log
	con=$LOGS/mm-selftests-$group.console.log
	# "gup_test -ct" asks the kernel to dump_page() a few pages: not a
	# splat.  Check the console again without those lines.
	if [ "$grc" -eq 100 ] &&
	   tr -d '\r' <"$con" | grep -v -F "$dump_ok" >"$con.nodump" &&
	   "$TOP/harness/check-console.sh" "$con.nodump" 2>/dev/null; then
		say "the console's only 'splat' is gup_test -ct's page dumps: ignored"
		grc=101
		tr -d '\r' <"$out" | grep -q '^SUPERPAGE-GUEST-EXIT rc=' && grc=0
	else
		grep -v '^==> ' "$err" >&2 || true
	fi
	rm -f "$con.nodump" "$err"
	tr -d '\r' <"$out" | grep -E '^(not )?ok [0-9]+ ' >>"$results" || true
	# Runs the guest never reported (it crashed or hung) count as failed.
	i=$first
	while read -r _ _ _ cmd; do
		if ! grep -q -E "^(not )?ok $i " "$results"; then
			echo "not ok $i mm: $cmd # not run: the guest did not finish" |
				tee -a "$results"
		fi
		i=$((i + 1))
	done < <(awk -v g=$group '$1 == g' "$runs")
	case $grc in
	100) worst=100 ;;
	101) [ $worst -eq 100 ] || worst=101 ;;
	esac
	[ -n "$env" ] || env=$(tr -d '\r' <"$out" | grep -E '^# (env|cmdline):' || true)
	first=$((first + n))
done

# Split the guests' output into one log per run, named by its number.
logdir=$LOGS/mm-selftests
rm -rf "$logdir"
mkdir -p "$logdir"
outs=()
for f in "$LOGS"/mm-selftests-{main,migration}.out.log; do
	[ -f "$f" ] && outs+=("$f")
done
cat "${outs[@]}" /dev/null | tr -d '\r' | awk -v dir="$logdir" '
	/^# selftests: mm: / && !/: exit=[0-9]+ / {
		if (!started) { started = 1; buf = "" }
		if (/running it once more$/) { buf = buf $0 "\n"; next }
		name = substr($0, 18); buf = $0 "\n"; next
	}
	/^(not )?ok [0-9]+ mm: / && started {
		n = ($1 == "not") ? $3 : $2
		f = name; gsub(/[^A-Za-z0-9_.-]+/, "_", f)
		f = sprintf("%s/%03d-%s.log", dir, n, f)
		printf "%s%s\n", buf, $0 > f; close(f)
		started = 0; next
	}
	started { buf = buf $0 "\n" }'

# The subtest totals each kselftest binary printed ("# Totals: ..."); of a
# rerun, the last; none for a binary of one passing case (gup_test).
totals=$(cat "${outs[@]}" /dev/null | tr -d '\r' | awk '
	/^# selftests: mm: / && !/: exit=[0-9]+/ { name = substr($0, 18) }
	/^# # Totals: / {
		t = $0; sub(/^# # Totals: /, "", t)
		if (!(name in tot)) order[++k] = name
		tot[name] = t
	}
	END {
		for (i = 1; i <= k; i++)
			if (tot[order[i]] != "pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0")
				print "#   " order[i] ": " tot[order[i]]
	}')

awk '{ print (($1 == "not") ? $3 : $2) "\t" $0 }' "$results" | sort -n -s -k1,1 |
	cut -f2- >"$results.sorted"
mv "$results.sorted" "$results"
read -r pass fail skip < <(awk '
	/^ok / { if ($0 ~ /# SKIP/) s++; else p++ }
	/^not ok / { f++ }
	END { printf "%d %d %d\n", p, f, s }' "$results")
summary="$pass passed, $fail failed, $skip skipped"
secs=$(( $(date +%s) - t0 ))

res=$LOGS/mm-selftests.txt
{
	echo "# make mm-selftests on $kver, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "# guest: $("$TOP/harness/accel.sh" "$mmb/bzImage" "$initrd"), 3 GiB," \
		"2 vCPUs (3 for migration), numa=fake=2, 1 GiB zram swap," \
		"128 hugetlb pages${SP_SUPERPAGE:+, sp.superpage=$SP_SUPERPAGE}"
	echo "${env:-# env: (none: the main guest did not report it)}"
	[ -n "${SP_MM_FILTER:-}" ] && echo "# SP_MM_FILTER=$SP_MM_FILTER"
	[ $worst -eq 100 ] && echo "# FAIL: kernel splat on the console"
	[ $worst -eq 101 ] && echo "# FAIL: a guest did not finish"
	cat "$results"
	[ -n "$totals" ] && printf '# subtest totals of the kselftest binaries:\n%s\n' "$totals"
	echo "# total time ${secs}s"
	echo "$summary"
} >"$res"

# Compare the result of each run with the baseline's, by name (with
# SP_MM_FILTER, only the runs that were run).
status() { # status FILE: "NAME<tab>ok|not ok|skip" for each run of FILE
	sed -n -E 's/^(not ok|ok) [0-9]+ mm: ([^#]*[^ #]) *(# SKIP)?.*/\2\t\1\3/p' "$1" |
		sed 's/\tok# SKIP$/\tskip/'
}
if [ -f "$baseline" ]; then
	changes=$(awk -F'\t' -v all="$([ -z "${SP_MM_FILTER:-}" ] && echo 1)" '
		NR == FNR { b[$1] = $2; next }
		!($1 in b) { print "  " $1 ": new, " $2; next }
		b[$1] != $2 { print "  " $1 ": " b[$1] " -> " $2 }
		{ delete b[$1] }
		END { if (all) for (n in b) print "  " n ": " b[n] " -> not run" }' \
		<(status "$baseline") <(status "$res"))
	if [ -z "$changes" ]; then
		say "same results as ${baseline#$TOP/}"
	else
		say "results that differ from ${baseline#$TOP/}:"
		echo "$changes" >&2
	fi
fi

echo "# per-run logs: ${logdir#$TOP/}/; results: ${res#$TOP/}"
echo "# total time ${secs}s"
echo "$summary"
[ $worst -eq 0 ] || exit $worst
[ "$fail" -eq 0 ]
