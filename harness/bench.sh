#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make bench / make bench-short (bench/README.md): build the benchmark
# kernel and sp_bench, boot one guest that runs every workload under every
# mode (harness/guest/bench.sh), then write the CSV, the Markdown table and
# the plots with bench/report.py.
#   bench.sh full   -> bench/results/          (about 25 minutes under TCG)
#   bench.sh short  -> build/bench-short/      (a few minutes; CI)
# SP_BENCH_KERNEL=test runs on the debug test kernel instead of the bench
# flavour (the short variant in ./run test does, to reuse its build).
# Fails when the guest crashed, a workload read back a wrong value, or the
# console shows a kernel splat; never on performance.
. "$(dirname "$0")/lib.sh"
size=${1:-full}
case "$size" in
full) out=${2:-$TOP/bench/results} tmo=3600 mem=3G ;;
short) out=${2:-$BUILD/bench-short} tmo=1200 mem=2G ;;
*) die "usage: bench.sh [full|short] [OUTDIR]" ;;
esac
flavour=${SP_BENCH_KERNEL:-bench}
"$TOP/harness/deps.sh"
"$TOP/harness/build-kernel.sh" "$flavour"
kernel=$(kimage "$flavour")
"$TOP/harness/build-guest-tools.sh"
initrd=$BUILD/initramfs-bench.cpio
"$TOP/harness/initramfs.sh" "$initrd" "$BUILD/guest-bin=guest"
accel=$("$TOP/harness/accel.sh" "$kernel" "$initrd")

set +e
"$TOP/harness/run-guest.sh" --kernel "$kernel" --initrd "$initrd" --job bench \
	--name "bench-$size" --mem "$mem" --smp 2 --timeout "$tmo" \
	--append "sp.bench=$size hugepages=256"
grc=$?
set -e
log=$LOGS/bench-$size.out.log
mkdir -p "$out"
python3 "$TOP/bench/report.py" --log "$log" --out "$out" --accel "$accel" \
	--kernel "$flavour"
[ $grc -eq 0 ] || die "benchmark guest failed (status $grc; see $LOGS/bench-$size.*.log)"
say "results in ${out#$TOP/}/"
