#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The benchmark job (make bench, bench/README.md): run every workload of
# /guest/sp_bench under every memory mode, one after the other in this one
# boot, and print sp_bench's "R" (result) and "S" (coverage sample) lines
# for the host's report (bench/report.py).
#
# The kernel command line says how big:
#   sp.bench=full|short   workload sizes (default: full)
#   hugepages=N           the hugetlb pool, reserved at boot
# Exit status: 1 when a workload read back a wrong value, crashed, or a
# mode could not be set up; performance never fails the job.
size=full
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	sp.bench=*) size=${arg#sp.bench=} ;;
	esac
done

case "$size" in
short)
	SPARSE=128 SETTLE=1000 MEMCG_SPARSE=256 MEMCG_MAX=80M
	FILL=64 GUPS=500000 COVER=10000 LAT=16 FORK=64 PROCS=20
	;;
*)
	SPARSE=512 SETTLE=5000 MEMCG_SPARSE=512 MEMCG_MAX=160M
	FILL=256 GUPS=4000000 COVER=30000 LAT=64 FORK=256 PROCS=100
	;;
esac
MODES=${MODES:-"4k thp khugepaged mthp64 hugetlb sp512 sp128"}

thp=/sys/kernel/mm/transparent_hugepage
sp=/proc/sys/vm
fail=0

# 1 GiB of swap on zram, for the memory cgroup workload.
if [ -e /sys/block/zram0/disksize ] && ! grep -q zram0 /proc/swaps; then
	echo 1G >/sys/block/zram0/disksize && mkswap /dev/zram0 >/dev/null &&
		swapon /dev/zram0 || { echo "# setup failed: zram swap"; fail=1; }
fi
echo +memory >/sys/fs/cgroup/cgroup.subtree_control || fail=1
[ -e $sp/superpage_enabled ] || { echo "# no vm.superpage_enabled"; fail=1; }
[ -e $thp/hugepages-64kB/enabled ] || { echo "# no 64 kB mTHP"; fail=1; }

echo "# env: kernel $(uname -r); $(nproc) CPUs;" \
	"$(sed -n 's/^MemTotal: *//p' /proc/meminfo) RAM;" \
	"swap $(sed -n 's/^SwapTotal: *//p' /proc/meminfo);" \
	"hugetlb pool $(cat $sp/nr_hugepages) x 2 MiB; sizes $size"
echo "# cmdline: $(cat /proc/cmdline)"
echo "I size $size"
echo "I kernel $(uname -r)"
echo "I cpus $(nproc)"
echo "I mem_kib $(sed -n 's/^MemTotal: *\([0-9]*\).*/\1/p' /proc/meminfo)"
[ $fail -eq 0 ] || exit 1

knob() { # knob FILE VALUE: write, and fail the job if it does not take
	echo "$2" >"$1" 2>/dev/null || { echo "# cannot write $2 to $1"; fail=1; }
}

reset_mode() {
	knob $sp/superpage_enabled 0
	knob $sp/superpage_promote_threshold 512
	knob $thp/enabled never
	knob $thp/hugepages-64kB/enabled never
	knob $thp/khugepaged/scan_sleep_millisecs 10000
	knob $thp/khugepaged/alloc_sleep_millisecs 60000
	echo 3 >$sp/drop_caches
	echo 1 >$sp/compact_memory
}

# set_mode MODE: the knobs, and in FLAGS the sp_bench options of the mode.
set_mode() {
	reset_mode
	FLAGS="-T $COVER"
	case "$1" in
	4k) FLAGS="-T 0" ;;
	thp) knob $thp/enabled always ;;
	khugepaged)
		# Fault-time THP stays off: MADV_HUGEPAGE comes after the
		# first touch (-M), and khugepaged, made to scan every
		# 100 ms instead of 10 s, does the work.
		knob $thp/enabled madvise
		knob $thp/khugepaged/scan_sleep_millisecs 100
		knob $thp/khugepaged/alloc_sleep_millisecs 100
		FLAGS="-M -T $COVER"
		;;
	mthp64)
		knob $thp/hugepages-64kB/enabled always
		FLAGS="-T 0"
		;;
	hugetlb) FLAGS="-H -T $COVER" ;;
	sp512) knob $sp/superpage_enabled 2 ;;
	sp128)
		knob $sp/superpage_promote_threshold 128
		knob $sp/superpage_enabled 2
		;;
	*) echo "# unknown mode $1"; fail=1 ;;
	esac
	echo "# mode $1: THP $(cat $thp/enabled); 64kB $(cat $thp/hugepages-64kB/enabled);" \
		"superpage_enabled $(cat $sp/superpage_enabled);" \
		"threshold $(cat $sp/superpage_promote_threshold); sp_bench $FLAGS"
}

# run MODE NAME LIMIT ARGS...: sp_bench in a fresh memory cgroup (LIMIT:
# its memory.max, or "max"); an OOM kill there is a result, not a failure.
run() {
	m=$1 name=$2 limit=$3
	shift 3
	cg=/sys/fs/cgroup/bench
	rmdir $cg 2>/dev/null
	mkdir $cg && echo "$limit" >$cg/memory.max || { fail=1; return; }
	start=$(date +%s)
	# shellcheck disable=SC2086
	sh -c "echo \$\$ >$cg/cgroup.procs && exec /guest/sp_bench -m $m -w $name $FLAGS $*"
	rc=$?
	oom=$(sed -n 's/^oom_kill //p' $cg/memory.events)
	echo "R $name $m oom_kills ${oom:-0}"
	echo "# $name $m: exit $rc in $(( $(date +%s) - start ))s"
	if [ $rc -ne 0 ] && ! { [ $rc -eq 137 ] && [ "${oom:-0}" -gt 0 ]; }; then
		echo "# FAILED: $name in mode $m (exit $rc)"
		fail=1
	fi
	rmdir $cg 2>/dev/null
}

t0=$(date +%s)
# A warm-up, so that the first mode does not pay for what a fresh boot
# still does (its figures are not kept).
reset_mode
/guest/sp_bench -m warmup fill $FILL seq >/dev/null
for m in $MODES; do
	set_mode "$m"
	run "$m" sparse max sparse $SPARSE 64 $SETTLE
	run "$m" sparse-memcg $MEMCG_MAX sparse $MEMCG_SPARSE 64 1000
	run "$m" fill-seq max fill $FILL seq $GUPS
	run "$m" fill-rand max fill $FILL rand
	run "$m" latency max latency $LAT
	run "$m" fork max fork $FORK 64
	run "$m" procs max procs $PROCS 4
	echo "# counters after $m:" $(grep -E '^(thp_fault_alloc|thp_collapse_alloc|superpage_resv_alloc|superpage_promote|superpage_resv_broken|pswpout) ' /proc/vmstat)
done
reset_mode
echo "# all modes in $(( $(date +%s) - t0 ))s"
exit $fail
