#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The stress job (make stress, make stress-short): with superpages on, a
# low promotion threshold and a fast daemon, run at the same time, inside
# one memory cgroup small enough to force reclaim onto zram swap:
#   - trinity on the memory-management syscalls, as user nobody;
#   - stress-ng's vm-class stressors;
#   - sp_soak, the data-integrity soak (harness/guest-src/sp_soak.c);
#   - sp_soak --cycle: rounds of a fresh 16 MiB region filled (promoted),
#     then its own cgroup's memory.high lowered (demoted, partly swapped),
#     checked and unmapped, so that the run demotes whatever else it does;
#   - sp_vmafuzz, the VMA-edit soak (harness/guest-src/sp_vmafuzz.c):
#     threads of one process editing their ranges with munmap, mprotect,
#     mremap, madvise, mlock and fork between fault runs, every access
#     checked against a per-page model;
# for sp.stress=SECONDS (default 1800), then report what ran and how much.
# Before that, sp_vmafuzz runs alone for 20 s on the quiet system, with
# its exact check that its reservations are all gone once it has exited;
# after it, with every stressor gone, nr_superpage_resv must be back to its
# value at the start of the job.
# The host fails the run on any kernel splat (harness/check-console.sh),
# and judges from this job's output (harness/stress-check.sh) what needs
# the whole run: processes killed by SIGKILL confirmed as OOM kills by
# memory.events, operations per worker, the superpage counters.
# Exit status: 1 when sp_soak found a corrupt page or a process of it was
# killed by a signal other than SIGKILL, sp_vmafuzz a page mapped against
# its VMAs (or with the wrong content) or a leaked reservation, stress-ng
# reported a failed stressor or one killed by a signal, reservations stayed
# behind, or a tool could not run.
. "$(dirname "$0")/lib.sh"
secs=$(sp_cmdline_get stress 1800)
sp=/proc/sys/vm
thp=/sys/kernel/mm/transparent_hugepage
cg=/sys/fs/cgroup/stress
fail=0
export PATH=/usr/bin:/bin:/usr/sbin:/sbin

echo "# stress: kernel $(uname -r), $(nproc) CPUs," \
	"$(sp_meminfo MemTotal), ${secs}s"
for t in trinity stress-ng sp_soak sp_vmafuzz; do
	command -v $t >/dev/null || [ -x /guest/$t ] ||
		{ echo "# missing: $t"; fail=1; }
done

# The reservations that exist now (none, unless something leaked before).
resv() {
	echo 1 >$sp/stat_refresh 2>/dev/null
	sed -n 's/^nr_superpage_resv //p' /proc/vmstat
}
resv0=$(resv)
[ -n "$resv0" ] || { echo "# no nr_superpage_resv in /proc/vmstat"; fail=1; }
# A long log: its start (the first violations) and its end (the counts).
show() {
	if [ "$(wc -l <"$1")" -gt 200 ]; then
		head -n 140 "$1"
		echo "[... $(wc -l <"$1") lines ...]"
		tail -n 50 "$1"
	else
		cat "$1"
	fi | sed 's/^/#   /'
}

# The soaks' detectors must work before their silence means anything.
/guest/sp_soak --self-test >/tmp/self-test.log ||
	{ echo "# sp_soak self-test failed"; fail=1; }
tail -n 1 /tmp/self-test.log
/guest/sp_vmafuzz --self-test >/tmp/self-test.log ||
	{ echo "# sp_vmafuzz self-test failed"; cat /tmp/self-test.log; fail=1; }
tail -n 1 /tmp/self-test.log

sp_zram_swap 1G || { echo "# no zram swap"; fail=1; }
sp_knob $sp/superpage_enabled 2 &&
	sp_knob $sp/superpage_promote_threshold 64 &&
	sp_knob $sp/superpage_scan_sleep_millisecs 10 &&
	sp_knob $sp/superpage_pages_to_scan 65536 &&
	sp_knob $sp/superpage_demote_on_reclaim 1 &&
	sp_knob $sp/superpage_cluster_max_order 6 || { echo "# sysctls"; fail=1; }
# khugepaged runs too, on whatever trinity and stress-ng madvise.
echo madvise >$thp/enabled && echo 100 >$thp/khugepaged/scan_sleep_millisecs
# One cgroup, stress (192 MiB), with two children:
#   stress/load, sp_soak and stress-ng: memory.high below what the soak
#     alone needs (3 x 40 MiB), so that limit reclaim, not only
#     MADV_PAGEOUT, keeps pushing their pages to zram;
#   stress/trinity: 64 MiB protected by memory.min, or the thrashing of
#     its neighbours starves trinity before it runs a syscall;
#   stress/cycle: sp_soak --cycle, which sets its memory.high itself.
echo +memory >/sys/fs/cgroup/cgroup.subtree_control
mkdir -p $cg && sp_knob $cg/memory.max 192M &&
	sp_knob $cg/cgroup.subtree_control +memory &&
	mkdir -p $cg/load $cg/trinity $cg/cycle &&
	sp_knob $cg/load/memory.max 128M && sp_knob $cg/load/memory.high 96M &&
	sp_knob $cg/trinity/memory.min 64M || { echo "# memory cgroup"; fail=1; }
[ $fail -eq 0 ] || exit 1

# sp_vmafuzz alone first: nothing else creates reservations, so that its
# leak check (nr_superpage_resv* back where they were once it has exited)
# is exact.  Its output goes out as it comes: if the kernel dies of what
# it found, the report is there.
qsecs=20
[ "$secs" -lt 60 ] && qsecs=$((secs / 3 + 1))
echo "# sp_vmafuzz alone, ${qsecs}s, leak-checked:"
(
	/guest/sp_vmafuzz --check-leaks $qsecs 2 8
	echo $? >/tmp/vmafuzz-alone.rc
) 2>&1 | sed 's/^/#   /'
qrc=$(cat /tmp/vmafuzz-alone.rc)
echo "# sp_vmafuzz alone: exit $qrc"
[ "$qrc" = 0 ] || fail=1

# The counters reported (pglazyfree*: MADV_FREE, for the fork child's).
counters='^(superpage|thp_(fault|collapse)|pswp|pglazyfree)'
grep -E "$counters" /proc/vmstat >/tmp/vmstat.0

# Every tool in the cgroup ("0" moves the subshell that writes it; $$
# would be this script); trinity as nobody, in a directory of its own.
mkdir -p /tmp/trinity && chmod 777 /tmp/trinity
tsecs=$((secs - 5))
(
	echo 0 >$cg/trinity/cgroup.procs
	cd /tmp/trinity && exec timeout -s INT -k 30 $tsecs su nobody -s /bin/sh -c \
		"trinity -q -l off -C 2 --disable-fds=sockets,perf,drm,pseudo -c mmap -c munmap -c mremap -c mprotect \
		-c madvise -c mlock -c munlock -c mlock2 -c mlockall -c munlockall -c brk \
		-c msync -c mincore -c process_madvise -c userfaultfd -c mbind -c move_pages \
		-c migrate_pages -c set_mempolicy -c get_mempolicy -c remap_file_pages"
) >/tmp/trinity.log 2>&1 &
tpid=$!
(
	echo 0 >$cg/load/cgroup.procs
	exec stress-ng --timeout "${secs}s" --metrics-brief --verify \
		--vm 1 --vm-bytes 64M --mmap 1 --mmap-bytes 32M --mmapfork 1 \
		--madvise 1 --mremap 1 --mremap-bytes 32M --fork 1 \
		--bigheap 1 --brk 1 --stack 1 --vm-segv 1 --mprotect 1 \
		--msync 1 --pagemove 1 --mlock 1 --userfaultfd 1 --mmapmany 1
) >/tmp/stress-ng.log 2>&1 &
spid=$!
(
	echo 0 >$cg/load/cgroup.procs
	# The OOM killer takes a stressor first (stress-ng respawns it).
	echo -900 >/proc/self/oom_score_adj
	exec /guest/sp_soak "$secs" 3 40
) >/tmp/soak.log 2>&1 &
kpid=$!
(
	echo 0 >$cg/load/cgroup.procs
	echo -900 >/proc/self/oom_score_adj
	exec /guest/sp_vmafuzz "$secs" 3 8
) >/tmp/vmafuzz.log 2>&1 &
vpid=$!
(
	echo 0 >$cg/cycle/cgroup.procs
	echo -900 >/proc/self/oom_score_adj
	exec /guest/sp_soak --cycle "$secs" 16 $cg/cycle
) >/tmp/cycle.log 2>&1 &
cpid=$!

t0=$(date +%s)
while kill -0 $spid 2>/dev/null || kill -0 $kpid 2>/dev/null ||
	kill -0 $vpid 2>/dev/null || kill -0 $cpid 2>/dev/null; do
	sleep 60
	echo "# $(( $(date +%s) - t0 ))s: memory.current $(cat $cg/load/memory.current)" \
		"+ $(cat $cg/trinity/memory.current)," \
		"over memory.high $(sed -n 's/^high //p' $cg/load/memory.events) times," \
		"promotions $(sed -n 's/^superpage_promote //p' /proc/vmstat)," \
		"demotions $(sed -n 's/^superpage_demote //p' /proc/vmstat)," \
		"swapped out $(sed -n 's/^pswpout //p' /proc/vmstat)"
done
wait $kpid
krc=$?
wait $vpid
vrc=$?
wait $spid
src=$?
wait $tpid
trc=$?
wait $cpid
crc=$?

echo "# sp_soak (exit $krc):"
sed 's/^/#   /' /tmp/soak.log
# 3: processes killed by SIGKILL and nothing else wrong; the host checks
# them against the cgroup's oom_kill count.
[ $krc -eq 0 ] || [ $krc -eq 3 ] || fail=1
echo "# sp_soak --cycle (exit $crc):"
sed 's/^/#   /' /tmp/cycle.log
[ $crc -eq 0 ] || fail=1
echo "# sp_vmafuzz (exit $vrc):"
show /tmp/vmafuzz.log
[ $vrc -eq 0 ] || fail=1
echo "# sp_vmafuzz operations per thread:"
grep -E 'sp_vmafuzz: T[0-9]+: ops=' /tmp/vmafuzz.log | sed 's/^/#   /'
# What the OOM killer may have done, as the soaks saw it (counted in their
# whole logs; harness/stress-check.sh compares with memory.events).
echo "# killed by SIGKILL: sp_soak $(grep -c 'killed by signal 9 (SIGKILL)' /tmp/soak.log)," \
	"sp_vmafuzz $(grep -c -e 'the fork child was killed (OOM?)' \
		-e 'the work process died of signal 9$' /tmp/vmafuzz.log)"
echo "# stress-ng (exit $src):"
grep -E 'stressor|passed|failed|skipped|info:' /tmp/stress-ng.log | grep -v 'metrc:' |
	sed 's/^/#   /' | tail -n 40
echo "# stress-ng bogo ops:"
grep 'metrc:' /tmp/stress-ng.log | sed 's/^/#   /'
# 0: all passed; 1: an error; 2: a stressor failed (a verify error among
# them); 5: a stressor killed by an unexpected signal; 6: a stressor that
# exited unexpectedly.  3 and 4: a stressor could not run here, which is
# not a kernel failure; 7: bogo-op counts untrustworthy, most likely after
# an OOM kill (the host checks that there was one).
case $src in 1|2|5|6) fail=1 ;; esac
echo "# trinity (exit $trc; 124/130 = stopped by the timeout):"
grep -iE 'syscalls|iterations|error|taint' /tmp/trinity.log | sed 's/^/#   /' | tail -n 10
tail -n 3 /tmp/trinity.log | sed 's/^/#   /'
# trinity stops at the timeout; it must have run syscalls until then.
ran=$(sed -n 's/.*Ran \([0-9]*\) syscalls.*/\1/p' /tmp/trinity.log | sort -n | tail -n 1)
echo "# trinity: ${ran:-0} syscalls"
[ "${ran:-0}" -gt 0 ] || {
	echo "# trinity ran no syscall; its log ends:"
	tail -n 20 /tmp/trinity.log | sed 's/^/#   /'
	fail=1
}
for c in load trinity; do
	echo "# memory cgroup $c: $(tr '\n' ' ' <$cg/$c/memory.events)"
done
# The point of the cgroup is limit reclaim: it must have been reached.
[ "$(sed -n 's/^high //p' $cg/load/memory.events)" -gt 0 ] ||
	{ echo "# the memory cgroup never reached memory.high"; fail=1; }
echo "# counters during the run:"
grep -E "$counters" /proc/vmstat >/tmp/vmstat.1
paste /tmp/vmstat.0 /tmp/vmstat.1 | awk '{ d = $4 - $2; if (d) printf "#   %s %d\n", $1, d }'
# Every superpage counter, zero or not, for harness/stress-check.sh.
echo "# superpage counters at the end (name, value, change during the run):"
paste /tmp/vmstat.0 /tmp/vmstat.1 |
	awk '$1 ~ /^superpage_/ { printf "#   %s %d %d\n", $1, $4, $4 - $2 }'
# Every stressor has exited: the reservations they made must be gone.  A
# free may lag a little: per-CPU LRU batches (drained by drop_caches) and
# the swap cache (emptied by swapoff) can hold a last reference.
resv1=$(resv)
n=0
while [ "$resv1" -gt "$resv0" ] && [ $n -lt 30 ]; do
	[ $n -eq 2 ] && echo 1 >$sp/drop_caches
	[ $n -eq 5 ] && swapoff /dev/zram0
	sleep 1
	n=$((n + 1))
	resv1=$(resv)
done
echo "# nr_superpage_resv: $resv0 at the start, $resv1 at the end (${n}s after the stressors)"
if [ "$resv1" -gt "$resv0" ]; then
	echo "# reservations stayed behind; user processes still there:"
	ps | grep -v ' \[' | sed 's/^/#   /'
	fail=1
fi
echo "# kernel taint: $(cat /proc/sys/kernel/tainted)"
[ "$(cat /proc/sys/kernel/tainted)" = 0 ] || fail=1
echo 0 >$sp/superpage_enabled
exit $fail
