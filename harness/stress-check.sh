#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# stress-check.sh OUT.LOG: judge a stress job's output (build/logs/
# stress-SECONDS.out.log, written by harness/guest/stress.sh) on what only
# the whole run shows, beyond the guest's own verdict:
#   - stress-ng's exit status: 1 (error), 2 (a stressor failed), 5 (a
#     stressor killed by an unexpected signal) and 6 (a stressor exited
#     unexpectedly) fail; 7 (bogo-op counts untrustworthy, as after an OOM
#     kill) fails unless the cgroup saw an OOM kill; 3 and 4 (a stressor
#     could not run here) are reported;
#   - sp_soak: any exit but 0, or 3 (processes killed by SIGKILL, nothing
#     else wrong), fails, and so does a process of it killed by any other
#     signal; sp_soak --cycle must exit 0;
#   - OOM kills: the processes of sp_soak and sp_vmafuzz killed by SIGKILL
#     must not outnumber the oom_kill count of their memory cgroup
#     (stress/load memory.events): a SIGKILL that the OOM killer did not
#     send fails the run;
#   - operations: every sp_soak worker and sp_vmafuzz thread, sp_soak
#     --cycle and trinity must have done at least a floor of operations
#     (below), so that a stressor that hung or barely ran cannot pass; a
#     worker that left no count is excused only as a confirmed OOM kill.
#     stress-ng: every stressor it dispatched must report its bogo ops,
#     and all of them together reach a floor; no floor per stressor, as
#     under the cgroup's memory.high some (vm, mmap, mremap, pagemove) can
#     finish no bogo op at all in the short run (they are listed);
#   - superpage counters: superpage_promote, superpage_demote and
#     superpage_resv_broken must have grown during the run (promotion,
#     demotion under reclaim, reservations broken under pressure).
# Prints what it read as "# " lines and each failure as "not ok - ...";
# exit 1 on any failure.
#
# The floors hold with a wide margin for the short variant (2 minutes,
# "make stress-short" and ./run test) under TCG on the test kernel (see
# harness/tests/stress/README for the counts they were set from); the
# sanitizer kernel and the 30-minute run do more.  SP_STRESS_FLOOR_*
# override them.
set -euo pipefail
log=${1:?usage: stress-check.sh OUT.LOG}
[ -r "$log" ] || { echo "not ok - stress-check: no log $log"; exit 1; }
soak_floor=${SP_STRESS_FLOOR_SOAK:-5}
fuzz_floor=${SP_STRESS_FLOOR_FUZZ:-5}
cycle_floor=${SP_STRESS_FLOOR_CYCLE:-1}
sng_floor=${SP_STRESS_FLOOR_STRESSNG:-100}
trinity_floor=${SP_STRESS_FLOOR_TRINITY:-50}
tr -d '\r' <"$log" | awk -v soak_floor="$soak_floor" -v fuzz_floor="$fuzz_floor" \
	-v cycle_floor="$cycle_floor" -v sng_floor="$sng_floor" \
	-v trinity_floor="$trinity_floor" '
	function bad(msg) { print "not ok - stress: " msg; nbad++ }
	function num(s) { return s ~ /^[0-9]+$/ }
	# A section header of the job: "# NAME..." (its tool output is "#   ...").
	/^# [^ ]/ {
		sect = ""
		if ($0 ~ /^# sp_soak \(exit [0-9]+\):/) { sect = "soak"; krc = $4; sub(/\).*/, "", krc) }
		else if ($0 ~ /^# sp_soak --cycle \(exit [0-9]+\):/) { sect = "cycle"; crc = $5; sub(/\).*/, "", crc) }
		else if ($0 ~ /^# sp_vmafuzz \(exit [0-9]+\):/) { sect = "fuzz"; vrc = $4; sub(/\).*/, "", vrc) }
		else if ($0 ~ /^# sp_vmafuzz operations per thread:/) sect = "fuzzops"
		else if ($0 ~ /^# stress-ng \(exit [0-9]+\):/) { sect = "sng"; src = $4; sub(/\).*/, "", src) }
		else if ($0 ~ /^# stress-ng bogo ops:/) sect = "sngops"
		else if ($0 ~ /^# superpage counters at the end/) sect = "ctr"
		else if ($0 ~ /^# killed by SIGKILL: sp_soak [0-9]+, sp_vmafuzz [0-9]+$/) {
			soakk = $6; sub(/,/, "", soakk); fuzzk = $8; havek = 1
		} else if ($0 ~ /^# trinity: [0-9]+ syscalls/)
			trinity = $3
		else if ($0 ~ /^# memory cgroup load: /) {
			for (i = 5; i < NF; i++) {
				if ($i == "oom_kill") oomk = $(i + 1)
				if ($i == "high") high = $(i + 1)
			}
			havecg = 1
		}
		next
	}
	/^#   / {
		l = substr($0, 5)
		if (sect == "soak") {
			if (l ~ /^sp_soak: [0-9]+ workers of /) { split(l, a, " "); soakn = a[2] }
			else if (l ~ /^sp_soak: worker [0-9]+: write=.* ops=[0-9]+/) {
				split(l, a, " "); w = a[3]; sub(/:/, "", w)
				for (i = 4; i in a; i++)
					if (a[i] ~ /^ops=/) { soakops[w] = substr(a[i], 5); nsoakops++ }
			}
			if (l ~ /killed by signal [0-9]+ /) {
				s = l; sub(/.*killed by signal /, "", s); sub(/ .*/, "", s)
				if (s + 0 != 9) bad("sp_soak: " l)
			}
		} else if (sect == "cycle") {
			if (l ~ /^sp_soak: cycle: rounds=[0-9]+/) {
				split(l, a, " "); cycles = substr(a[3], 8)
			}
		} else if (sect == "fuzz") {
			if (l ~ /^sp_vmafuzz: [0-9]+ threads x /) { split(l, a, " "); fuzzn = a[2] }
		} else if (sect == "fuzzops") {
			if (l ~ /^sp_vmafuzz: T[0-9]+: ops=[0-9]+/) {
				split(l, a, " "); t = a[2]; sub(/^T/, "", t); sub(/:/, "", t)
				fuzzops[t] = substr(a[3], 5)
			}
		} else if (sect == "sng") {
			if (l ~ /dispatching hogs:/) {
				s = l; sub(/.*dispatching hogs: */, "", s)
				n = split(s, a, ",")
				for (i = 1; i <= n; i++) {
					split(a[i], b, " ")
					if (b[2] != "") { nsng++; sngname[nsng] = b[2] }
				}
			}
		} else if (sect == "sngops") {
			s = l; sub(/^[^]]*\] */, "", s)
			split(s, a, " ")
			if (a[1] != "stressor" && a[1] !~ /^\(/ && num(a[2])) sngops[a[1]] = a[2]
		} else if (sect == "ctr") {
			split(l, a, " ")
			if (a[1] ~ /^superpage_/) { ctr[a[1]] = a[2]; dctr[a[1]] = a[3] }
		}
		next
	}
	END {
		# stress-ng
		if (src == "") bad("no stress-ng exit status in the log")
		else if (src + 0 == 1) bad("stress-ng exit 1: an error in stress-ng or a stressor")
		else if (src + 0 == 2) bad("stress-ng exit 2: a stressor failed")
		else if (src + 0 == 5) bad("stress-ng exit 5: a stressor was killed by an unexpected signal")
		else if (src + 0 == 6) bad("stress-ng exit 6: a stressor exited unexpectedly, without its metrics")
		else if (src + 0 == 7 && oomk + 0 == 0)
			bad("stress-ng exit 7 (bogo ops untrustworthy, as after an OOM kill), but memory.events counts no OOM kill")
		else if (src + 0 != 0 && src + 0 != 7)
			print "# stress-ng exit " src ": a stressor could not run here (3: no resources, 4: not implemented)"
		# OOM kills, as memory.events counts them
		if (!havecg) bad("no \"# memory cgroup load:\" line (memory.events)")
		if (!havek) bad("no \"# killed by SIGKILL:\" line")
		claimed = soakk + fuzzk
		print "# OOM kills in stress/load (memory.events oom_kill): " oomk + 0 \
		      "; processes killed by SIGKILL: sp_soak " soakk + 0 ", sp_vmafuzz " fuzzk + 0
		if (claimed > oomk + 0)
			bad(claimed " processes of sp_soak/sp_vmafuzz were killed by SIGKILL, but memory.events counts only " \
			    oomk + 0 " OOM kills: not every SIGKILL was the OOM killer")
		confirmed = claimed > 0 && claimed <= oomk + 0
		# sp_soak
		if (krc == "") bad("no sp_soak exit status in the log")
		else if (krc + 0 == 3 && soakk + 0 == 0)
			bad("sp_soak exit 3 (processes killed by SIGKILL), but none is reported")
		else if (krc + 0 != 0 && krc + 0 != 3)
			bad("sp_soak exit " krc ": a corrupt page, a process killed by a signal, or a setup failure")
		if (soakn == "") bad("no \"sp_soak: N workers\" line")
		s = ""; missing = 0
		for (w = 0; w < soakn + 0; w++) {
			if (!(w in soakops)) { s = s " " w "=none"; missing++; continue }
			s = s " " w "=" soakops[w]
			if (soakops[w] + 0 < soak_floor + 0)
				bad("sp_soak worker " w ": " soakops[w] " operations, fewer than " soak_floor)
		}
		print "# sp_soak operations per worker (floor " soak_floor "):" s
		if (missing && !(confirmed && soakk + 0 > 0))
			bad(missing " sp_soak workers left no operation count, and no confirmed OOM kill explains it")
		# sp_soak --cycle
		if (crc == "") bad("no sp_soak --cycle exit status in the log")
		else if (crc + 0 != 0) bad("sp_soak --cycle exit " crc ": a corrupt page or a setup failure")
		print "# sp_soak --cycle rounds (floor " cycle_floor "): " cycles + 0
		if (cycles + 0 < cycle_floor + 0)
			bad("sp_soak --cycle ran " cycles + 0 " rounds, fewer than " cycle_floor)
		# sp_vmafuzz
		if (fuzzn == "") bad("no \"sp_vmafuzz: N threads\" line")
		s = ""; missing = 0
		for (t = 0; t < fuzzn + 0; t++) {
			if (!(t in fuzzops)) { s = s " T" t "=none"; missing++; continue }
			s = s " T" t "=" fuzzops[t]
			if (fuzzops[t] + 0 < fuzz_floor + 0)
				bad("sp_vmafuzz thread T" t ": " fuzzops[t] " operations, fewer than " fuzz_floor)
		}
		print "# sp_vmafuzz operations per thread (floor " fuzz_floor "):" s
		if (missing && !(confirmed && fuzzk + 0 > 0))
			bad(missing " sp_vmafuzz threads left no operation count, and no confirmed OOM kill explains it")
		# stress-ng
		if (!nsng) bad("no \"dispatching hogs\" line from stress-ng")
		s = ""; z = ""; tot = 0
		for (i = 1; i <= nsng; i++) {
			n = sngname[i]
			if (!(n in sngops)) {
				s = s " " n "=none"
				bad("stress-ng " n ": no bogo-ops line")
				continue
			}
			s = s " " n "=" sngops[n]
			tot += sngops[n]
			if (sngops[n] + 0 == 0) z = z " " n
		}
		print "# stress-ng bogo ops per stressor:" s
		print "# stress-ng bogo ops in all (floor " sng_floor "): " tot (z != "" ? "; none from" z : "")
		if (nsng && tot < sng_floor + 0)
			bad("stress-ng did " tot " bogo ops in all, fewer than " sng_floor)
		# trinity
		print "# trinity syscalls (floor " trinity_floor "): " trinity + 0
		if (trinity + 0 < trinity_floor + 0)
			bad("trinity ran " trinity + 0 " syscalls, fewer than " trinity_floor)
		# superpage counters
		split("superpage_promote superpage_demote superpage_resv_broken", need, " ")
		s = ""
		for (i = 1; i in need; i++) {
			n = need[i]
			if (!(n in ctr)) { bad(n ": not in the counters at the end of the run"); continue }
			s = s " " n "=" ctr[n] "(+" dctr[n] ")"
			if (dctr[n] + 0 <= 0)
				bad(n " did not grow during the run (" ctr[n] " at the end)")
		}
		print "# superpage counters at the end (+ during the run):" s
		if (nbad) print "# stress-check: " nbad " failures"
		else print "# stress-check: ok"
		exit nbad ? 1 : 0
	}'
