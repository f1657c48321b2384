#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make bench / make bench-short (bench/README.md): build the benchmark
# kernel and sp_bench, boot one guest that runs every workload under every
# mode (harness/guest/bench.sh), then write the CSV, the Markdown table and
# the plots with bench/report.py.
#   bench.sh full   -> bench/results/          (3 repetitions; see
#                                               bench/README.md for times)
#   bench.sh short  -> build/bench-short/      (1 repetition, a few
#                                               minutes; CI)
# SP_BENCH_KERNEL=test runs on the debug test kernel instead of the bench
# flavour (the short variant in ./run test does, to reuse its build).
# SP_BENCH_REPS=N overrides the repetitions, SP_BENCH_SEED=N the seed of
# the shuffled mode order (default: drawn here, and recorded).
# Fails when the guest crashed, a workload read back a wrong value, or the
# console shows a kernel splat; never on performance.
. "$(dirname "$0")/lib.sh"
size=${1:-full}
case "$size" in
full) out=${2:-$TOP/bench/results} tmo=5400 mem=3G ;;
short) out=${2:-$BUILD/bench-short} tmo=1200 mem=2G ;;
*) die "usage: bench.sh [full|short] [OUTDIR]" ;;
esac
flavour=${SP_BENCH_KERNEL:-bench}
"$TOP/harness/deps.sh"
"$TOP/harness/build-kernel.sh" "$flavour"
kernel=$(kimage "$flavour")
"$TOP/harness/build-guest-tools.sh"
# The real programs (redis, xz), staged with their libraries; perf too
# when the guest will run under KVM (a PMU to count with).
apps=$BUILD/bench-root
"$TOP/bench/stage-apps.sh" "$apps"
initrd=$BUILD/initramfs-bench.cpio
"$TOP/harness/initramfs.sh" "$initrd" "$BUILD/guest-bin=guest" "$apps=/"
accel=$("$TOP/harness/accel.sh" "$kernel" "$initrd")
if [ "$accel" = kvm ] && [ -x /usr/bin/perf ]; then
	"$TOP/bench/stage-apps.sh" "$apps" perf
	"$TOP/harness/initramfs.sh" "$initrd" "$BUILD/guest-bin=guest" "$apps=/"
fi
# What was measured: the commit of this tree, and whether it differed
# from it (tracked changes or untracked files; read-only git commands).
commit=$(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$TOP" --no-optional-locks status --porcelain 2>/dev/null)" ]; then
	commit="$commit (dirty)"
fi
seed=${SP_BENCH_SEED:-$(( $(od -An -N2 -tu2 /dev/urandom) + 1 ))}
reps=${SP_BENCH_REPS:+sp.reps=$SP_BENCH_REPS}

# Guest memory is backed on the host before boot (--prealloc).  Without
# it the first touch of each 2 MiB of guest memory is a fault on the host
# (QEMU asks for transparent huge pages there): a mode that takes fresh
# 2 MiB frames (superpages, THP, hugetlbfs) paid 3-6 ms per frame that
# 4 KiB pages, recycled from the guest's warm free lists, did not.
set +e
"$TOP/harness/run-guest.sh" --kernel "$kernel" --initrd "$initrd" --job bench \
	--name "bench-$size" --mem "$mem" --smp 2 --timeout "$tmo" --prealloc \
	--append "sp.bench=$size sp.seed=$seed $reps hugepages=256"
grc=$?
set -e
log=$LOGS/bench-$size.out.log
mkdir -p "$out"
python3 "$TOP/bench/report.py" --log "$log" --out "$out" --accel "$accel" \
	--kernel "$flavour" --commit "$commit"
[ $grc -eq 0 ] || die "benchmark guest failed (status $grc; see $LOGS/bench-$size.*.log)"
say "results in ${out#$TOP/}/"
