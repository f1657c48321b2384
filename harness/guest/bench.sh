#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The benchmark job (make bench, bench/README.md): run every workload of
# /guest/sp_bench under every memory mode, one after the other in this one
# boot, and print sp_bench's "R" (result) and "S" (coverage sample) lines
# for the host's report (bench/report.py).
#
# The kernel command line says how big:
#   sp.bench=full|short   workload sizes (default: full)
#   sp.reps=N             repetitions of every mode (default: 3 full, 1 short)
#   sp.seed=N             seed of the per-repetition shuffle of the modes
#   hugepages=N           the hugetlb pool, reserved at boot
# Exit status: 1 when a workload read back a wrong value, crashed, or a
# mode could not be set up; performance never fails the job.
export PATH=/usr/local/bin:$PATH
. "$(dirname "$0")/lib.sh"
size=$(sp_cmdline_get bench full)
reps=$(sp_cmdline_get reps)
seed=$(sp_cmdline_get seed 1)

# COVER: how long a fill waits for 99% huge-mapped; PROBE: how long the
# mmap() prober runs after a fill (its own runs); SWEEP: the mapping of
# the density sweep (MiB); REDIS_*: keys, value size, requests per test
# of redis-benchmark; XZ_*: runs and input size (KiB) of the xz job.
case "$size" in
short)
	SPARSE=128 SETTLE=1000 MEMCG_SPARSE=256 MEMCG_MAX=80M
	FILL=64 GUPS=500000 COVER=10000 PROBE=3000 LAT=16 FORK=64 PROCS=20
	SWEEP=16 REDIS_KEYS=5000 REDIS_VAL=1024 REDIS_N=2000
	XZ_RUNS=2 XZ_KIB=128 REPS=${reps:-1}
	;;
*)
	SPARSE=512 SETTLE=5000 MEMCG_SPARSE=512 MEMCG_MAX=160M
	FILL=128 GUPS=2000000 COVER=30000 PROBE=10000 LAT=256 FORK=128 PROCS=50
	SWEEP=64 REDIS_KEYS=20000 REDIS_VAL=1024 REDIS_N=5000
	XZ_RUNS=3 XZ_KIB=256 REPS=${reps:-3}
	;;
esac
MODES=${MODES:-"4k thp thp-shrink khugepaged mthp64 hugetlb sp512 sp128 sp512-zall sp512-nopool"}

thp=/sys/kernel/mm/transparent_hugepage
sp=/proc/sys/vm
fail=0

# 1 GiB of swap on zram, for the memory cgroup workload (a kernel without
# zram runs without).
sp_zram_swap 1G
case $? in 1) echo "# setup failed: zram swap"; fail=1 ;; esac
sp_knob /sys/fs/cgroup/cgroup.subtree_control +memory || fail=1
[ -e $sp/superpage_enabled ] || { echo "# no vm.superpage_enabled"; fail=1; }
[ -e $thp/hugepages-64kB/enabled ] || { echo "# no 64 kB mTHP"; fail=1; }

sp_env "swap $(sp_meminfo SwapTotal)" \
	"hugetlb pool $(cat $sp/nr_hugepages) x 2 MiB" "sizes $size"
echo "I size $size"
echo "I kernel $(uname -r)"
echo "I cpus $(nproc)"
echo "I mem_kib $(sed -n 's/^MemTotal: *\([0-9]*\).*/\1/p' /proc/meminfo)"
echo "I reps $REPS"
echo "I seed $seed"
echo "I sweep_mib $SWEEP"
echo "I sparse_mib $SPARSE"
# A PMU: x86's core PMU registers as "cpu" (none under TCG).  perf is
# staged only for a KVM guest (harness/bench.sh); it counts if "perf stat"
# reads a number for dTLB-load-misses.
pmu=no perf=absent
[ -e /sys/bus/event_source/devices/cpu ] && pmu=yes
if command -v perf >/dev/null; then
	perf=staged
	perf stat -x, -e dTLB-load-misses true 2>&1 | grep -q '^[0-9]' &&
		perf=works
fi
echo "I pmu $pmu"
echo "I perf $perf"
command -v redis-server >/dev/null && [ -x /usr/local/bin/xz ] ||
	{ echo "# setup failed: redis-server or xz not staged"; fail=1; }
echo "I redis $(redis-server --version 2>/dev/null | sed -n 's/.*v=\([^ ]*\).*malloc=\([^ ]*\).*/\1 (\2)/p')"
# (Not plain "xz": busybox's sh runs its own xz applet before PATH.)
echo "I xz $(/usr/local/bin/xz --version 2>&1 | head -n 1)"
[ $fail -eq 0 ] || exit 1

knob() { # knob FILE VALUE: write, and fail the job if it does not take
	sp_knob "$1" "$2" || fail=1
}

reset_mode() {
	knob $sp/superpage_enabled 0
	knob $sp/superpage_promote_threshold 512
	knob $sp/superpage_fault_zero_pages 8
	[ -e $sp/superpage_prezero_frames ] && knob $sp/superpage_prezero_frames 64
	knob $thp/enabled never
	knob $thp/hugepages-64kB/enabled never
	knob $thp/khugepaged/scan_sleep_millisecs 10000
	knob $thp/khugepaged/alloc_sleep_millisecs 60000
	knob $thp/khugepaged/max_ptes_none 511
	knob $thp/shrink_underused 1
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
	thp-shrink)
		# Stock 6.12's remedy for THP bloat: the deferred-split
		# shrinker splits a THP with more than max_ptes_none zero-
		# filled subpages and frees those (thp_underused(), which
		# does nothing while max_ptes_none is 511).
		knob $thp/enabled always
		knob $thp/khugepaged/max_ptes_none 409
		knob $thp/shrink_underused 1
		;;
	khugepaged)
		# Fault-time THP stays off: MADV_HUGEPAGE comes after the
		# first touch (-M), and khugepaged, made to scan every
		# 100 ms instead of 10 s, does the work; max_ptes_none 409
		# as in thp-shrink, so that it does not fill sparse ranges.
		knob $thp/enabled madvise
		knob $thp/khugepaged/scan_sleep_millisecs 100
		knob $thp/khugepaged/alloc_sleep_millisecs 100
		knob $thp/khugepaged/max_ptes_none 409
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
	sp512-zall)
		# As before vm.superpage_fault_zero_pages: a fault zeroes
		# its whole cluster, nothing is zeroed ahead.
		knob $sp/superpage_fault_zero_pages 512
		knob $sp/superpage_enabled 2
		;;
	sp512-nopool)
		# No pool of zeroed frames (vm.superpage_prezero_frames 0):
		# every subpage is zeroed in the fault or ahead of it.
		knob $sp/superpage_prezero_frames 0
		knob $sp/superpage_enabled 2
		;;
	*) echo "# unknown mode $1"; fail=1 ;;
	esac
	FLAGS="$FLAGS -r $rep"
	echo "# mode $1 (repetition $rep): THP $(cat $thp/enabled);" \
		"64kB $(cat $thp/hugepages-64kB/enabled);" \
		"max_ptes_none $(cat $thp/khugepaged/max_ptes_none);" \
		"shrink_underused $(cat $thp/shrink_underused);" \
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
	echo "R $name $m oom_kills ${oom:-0} $rep"
	echo "# $name $m: exit $rc in $(( $(date +%s) - start ))s"
	if [ $rc -ne 0 ] && ! { [ $rc -eq 137 ] && [ "${oom:-0}" -gt 0 ]; }; then
		echo "# FAILED: $name in mode $m (exit $rc)"
		fail=1
	fi
	rmdir $cg 2>/dev/null
}

# R NAME MODE METRIC VALUE: a result line of this script's own.
R() { echo "R $1 $2 $3 $4 $rep"; }

# redis MODE: Debian's redis-server, as its users run it (no persistence;
# "disable-thp no", or redis would switch THP off for itself with
# PR_SET_THP_DISABLE and every mode would be 4 KiB pages; a Unix socket:
# the test kernel has no TCP/IP), in a fresh
# memory cgroup: loaded by redis-benchmark with REDIS_KEYS random keys of
# REDIS_VAL bytes, then three keys in four deleted (a Lua loop; what is
# left is fragmented), then redis-benchmark's own SET and GET test:
# throughput and latency.  Memory after the load, after the deletes and
# after 2 s of settling (sp_bench pstat: the server's RSS and
# AnonHugePages, its cgroup, the MemAvailable drop).
redis() {
	m=$1 cg=/sys/fs/cgroup/bench
	sock="-s /tmp/redis.sock"
	rmdir $cg 2>/dev/null
	mkdir $cg || { fail=1; return; }
	start=$(date +%s)
	avail0=$(sed -n 's/^MemAvailable: *\([0-9]*\).*/\1/p' /proc/meminfo)
	sh -c "cd /tmp && echo \$\$ >$cg/cgroup.procs && exec redis-server \
		--port 0 --unixsocket /tmp/redis.sock --save '' --appendonly no \
		--disable-thp no --daemonize no --loglevel warning \
		>/tmp/redis.log 2>&1" &
	pid=$!
	i=0
	until redis-cli $sock ping 2>/dev/null | grep -q PONG; do
		i=$((i + 1))
		if [ $i -ge 100 ] || ! kill -0 $pid 2>/dev/null; then
			echo "# FAILED: redis-server in mode $m did not start"
			cat /tmp/redis.log
			kill $pid 2>/dev/null
			fail=1
			rmdir $cg 2>/dev/null
			return
		fi
		sleep 0.2
	done
	redis-benchmark $sock -q -t set -n $((REDIS_KEYS * 2)) -r $REDIS_KEYS \
		-d $REDIS_VAL -P 16 >/dev/null 2>&1
	keys=$(redis-cli $sock dbsize)
	R redis-load "$m" keys "$keys"
	/guest/sp_bench -m "$m" -r $rep -w redis-load pstat $pid $avail0
	del=$(redis-cli $sock EVAL "local d=0 for i=0,tonumber(ARGV[1])-1 do if i%4~=0 then d=d+redis.call('DEL',string.format('key:%012d',i)) end end return d" 0 $REDIS_KEYS)
	case "$keys$del" in
	'' | *[!0-9]*) echo "# FAILED: redis in mode $m: keys '$keys', deleted '$del'"
		fail=1 keys=0 del=0 ;;
	esac
	R redis-frag "$m" keys "$((keys - del))"
	/guest/sp_bench -m "$m" -r $rep -w redis-frag pstat $pid $avail0
	sleep 2
	/guest/sp_bench -m "$m" -r $rep -w redis-settled pstat $pid $avail0
	# With a PMU and a perf that counts (KVM): the server's dTLB misses
	# over the SET and GET tests.
	ppid=
	if [ "$perf" = works ]; then
		perf stat -x, -o /tmp/perf.out -e dTLB-load-misses,dTLB-store-misses \
			-p $pid >/dev/null 2>&1 &
		ppid=$!
	fi
	# "SET","rps","avg_latency_ms","min","p50","p95","p99","max"
	redis-benchmark $sock --csv -t set,get -n $REDIS_N -r $REDIS_KEYS \
		-d $REDIS_VAL 2>/dev/null | tr -d '"' |
		awk -F, -v m="$m" -v r=$rep '$1 == "SET" || $1 == "GET" {
			t = tolower($1)
			printf "R redis-bench %s %s_rps %s %d\n", m, t, $2, r
			printf "R redis-bench %s %s_avg_ms %s %d\n", m, t, $3, r
			printf "R redis-bench %s %s_p50_ms %s %d\n", m, t, $5, r
			printf "R redis-bench %s %s_p99_ms %s %d\n", m, t, $7, r
			printf "R redis-bench %s %s_max_ms %s %d\n", m, t, $8, r }'
	if [ -n "$ppid" ]; then
		kill -INT $ppid
		wait $ppid
		awk -F, -v m="$m" -v r=$rep -v n=$((REDIS_N * 2)) '
			$3 ~ /^dTLB-(load|store)-misses/ && $1 ~ /^[0-9]+$/ {
				e = $3; sub(/-misses.*/, "", e); sub(/dTLB-/, "", e)
				printf "R redis-bench %s dtlb_%s_misses_per_req %g %d\n",
					m, e, $1 / n, r }' /tmp/perf.out
	fi
	/guest/sp_bench -m "$m" -r $rep -w redis-bench pstat $pid $avail0
	redis-cli $sock shutdown nosave >/dev/null 2>&1
	wait $pid
	rc=$?
	oom=$(sed -n 's/^oom_kill //p' $cg/memory.events)
	R redis-bench "$m" oom_kills "${oom:-0}"
	echo "# redis $m: exit $rc in $(( $(date +%s) - start ))s; $(grep -c . /tmp/redis.log) log lines"
	[ -n "$keys" ] && [ "$keys" -gt 0 ] && [ $rc -eq 0 ] ||
		{ echo "# FAILED: redis in mode $m"; cat /tmp/redis.log; fail=1; }
	rmdir $cg 2>/dev/null
}

# xz MODE: XZ_RUNS runs of "xz -6 -T1" (the default preset, one thread)
# compressing XZ_KIB KiB from its standard input, as in "tar c | xz" (the
# size unknown, xz sets up its whole 8 MiB-dictionary encoder, about
# 94 MiB), each a short-lived process, in a fresh memory cgroup; the
# output decompresses back to the input.
xzjob() {
	m=$1 cg=/sys/fs/cgroup/bench
	rmdir $cg 2>/dev/null
	mkdir $cg || { fail=1; return; }
	start=$(date +%s)
	sh -c "echo \$\$ >$cg/cgroup.procs && exec /guest/sp_bench -m $m -r $rep -w xz exec $XZ_RUNS /tmp/xz.in /tmp/xz.out /usr/local/bin/xz -6 -T1 -c"
	rc=$?
	# busybox's own xz decoder checks it: an independent one.
	xz -d -c /tmp/xz.out | cmp -s - /tmp/xz.in || rc=3
	echo "# xz $m: exit $rc in $(( $(date +%s) - start ))s"
	[ $rc -eq 0 ] || { echo "# FAILED: xz in mode $m (exit $rc)"; fail=1; }
	rmdir $cg 2>/dev/null
}

# The xz job's input: XZ_KIB KiB of the staged programs (compressible
# about 3:1), the same in every mode.
cat /usr/local/bin/redis-check-rdb /usr/local/bin/redis-benchmark /bin/busybox |
	head -c $((XZ_KIB * 1024)) >/tmp/xz.in

# shuffle SEED REP WORDS...: the words in an order drawn from SEED and REP.
shuffle() {
	s=$1 r=$2
	shift 2
	echo "$@" | awk -v s="$s" -v r="$r" '{
		srand(s * 1000 + r)
		for (i = NF; i > 1; i--) {
			j = int(rand() * i) + 1; t = $i; $i = $j; $j = t
		}
		print }'
}

t0=$(date +%s)
# A warm-up, so that the first mode does not pay for what a fresh boot
# still does (its figures are not kept).
rep=0
reset_mode
/guest/sp_bench -m warmup fill $FILL seq >/dev/null
rep=1
while [ $rep -le $REPS ]; do
	order=$(shuffle "$seed" $rep $MODES)
	echo "I order$rep $order"
	for m in $order; do
		set_mode "$m"
		run "$m" sparse max sparse $SPARSE 64 $SETTLE
		run "$m" sparse-memcg $MEMCG_MAX sparse $MEMCG_SPARSE 64 1000
		for kib in 4 16 64 256 2048; do
			run "$m" sweep-$kib max sparse $SWEEP $kib -1
		done
		run "$m" fill-seq max fill $FILL seq $GUPS
		run "$m" fill-rand max fill $FILL rand
		run "$m" fill-rand-256 max fill $((FILL * 2)) rand
		run "$m" fill-stride max fill $FILL stride
		# The mmap() prober's own runs (sp_bench -P): the same
		# fills, the prober running until coverage or PROBE ms.
		if [ "$m" = 4k ] || [ "$m" = mthp64 ]; then pt=0; else pt=$PROBE; fi
		run "$m" fill-seq max -P -T $pt fill $FILL seq
		run "$m" fill-rand max -P -T $pt fill $FILL rand
		run "$m" latency max latency $LAT
		run "$m" fork max fork $FORK 64
		run "$m" procs max procs $PROCS 4
		# hugetlbfs needs the program's own MAP_HUGETLB: the real
		# programs do not run in that mode.
		if [ "$m" != hugetlb ]; then
			redis "$m"
			xzjob "$m"
		fi
		echo "# counters after $m:" $(grep -E '^(thp_fault_alloc|thp_collapse_alloc|thp_split_page|thp_underused_split_page|superpage_resv_alloc|superpage_promote|superpage_resv_broken|pswpout) ' /proc/vmstat)
	done
	rep=$((rep + 1))
done
reset_mode
echo "# all modes in $(( $(date +%s) - t0 ))s"
exit $fail
