#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# tap-summary.sh [--expect FILE] [--skips FILE] OUT.LOG: count the test
# cases of kselftest TAP output (harness/guest/run-kselftests.sh), check
# that every case that must run did, and print, as its last line,
# "P passed, F failed, S skipped".
#
# A case is a nested "# ok N NAME" / "# not ok N NAME" line of a binary's
# TAP.  F counts, besides the failed cases:
#   - a binary that failed without reporting a failed case (a bad exit);
#   - every case that did not report: a binary must report as many results
#     as its own plan ("# 1..N") says, and, with --expect FILE ("BINARY
#     COUNT" lines, harness/ksft-count.sh), as many as its sources declare;
#     its plan must agree with the sources too (one failure if not);
#     every binary of FILE must have run, and the collection as many
#     binaries as its plan ("1..N") says;
#   - with --skips FILE, every "# SKIP" that FILE does not allow: lines
#     "BINARY CASE REASON..." (whitespace-separated, # comments; a line
#     without a reason is an error); an allowed skip counts in S.
# Each of these is explained in a "not ok - ..." line before the summary.
# Exit 1 if anything failed.
set -euo pipefail
expect=/dev/null skips=/dev/null useexp=0 useskips=0
while [ $# -gt 1 ]; do
	case "$1" in
	--expect) expect=$2; useexp=1; shift 2 ;;
	--skips) skips=$2; useskips=1; shift 2 ;;
	*) break ;;
	esac
done
log=${1:?usage: tap-summary.sh [--expect FILE] [--skips FILE] OUT.LOG}
[ -r "$log" ] || { echo "not ok - no TAP log $log"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
[ -r "$expect" ] || { echo "tap-summary: cannot read $expect" >&2; exit 2; }
[ -r "$skips" ] || { echo "tap-summary: cannot read $skips" >&2; exit 2; }
tr -d '\r' <"$log" | awk -v useexp="$useexp" -v useskips="$useskips" -v expfile="$expect" -v skipfile="$skips" '
	function diag(msg) { print "not ok - " msg }
	# The binary named on a "# selftests: COLL: NAME" or result line.
	function binname(s) {
		sub(/^.*selftests: [^ ]*: /, "", s)
		sub(/ .*$/, "", s)
		return s
	}
	# A binary is done (its result line, or the end of the log): check that
	# every case it must report did.
	function close_binary(endline,   want, src) {
		if (cur == "")
			return
		src = "sources declare"
		if (useexp && !(cur in expn)) {
			diag(cur ": not in the expected list " expfile " (harness/ksft-count.sh)")
			chk++
			want = plan >= 0 ? plan : res
		} else if (useexp) {
			want = expn[cur]
			if (plan >= 0 && plan != want) {
				diag(cur ": its TAP plan says 1.." plan " but its sources declare " want \
				     " cases (harness/ksft-count.sh counts TEST*/FIXTURE_VARIANT_ADD in " \
				     cur ".c; if it miscounted, fix it there)")
				chk++
			}
		} else {
			want = plan >= 0 ? plan : res
			src = "its plan says"
		}
		if (plan < 0) {
			diag(cur ": no TAP plan line (# 1..N): did it die before its tests started?")
			if (res >= want) chk++
		}
		if (res < want) {
			diag(cur ": reported " res " results, " src " " want "; the " want - res \
			     " missing count as failed" (endline ? "" : " (the log ends inside it)"))
			fail += want - res
		} else if (res > want) {
			diag(cur ": reported " res " results, more than the " want " " src)
			chk++
		} else if (plan >= 0 && plan != res) {
			diag(cur ": reported " res " results, its plan says " plan)
			chk++
		}
		if (endline ~ /^not ok/ && !infail && res >= want) {
			# The binary failed but no case did (a bad exit after its
			# last result): one failure.
			diag(cur ": failed (" endline "), though none of its cases did")
			fail++
		}
		ran[cur] = 1
		cur = ""
	}
	BEGIN {
		while ((getline l < expfile) > 0) {
			split(l, a, " ")
			if (a[1] != "") { expn[a[1]] = a[2] + 0; nexp++; order[nexp] = a[1] }
		}
		while ((getline l < skipfile) > 0) {
			sub(/#.*/, "", l)
			n = split(l, a, " ")
			if (n == 0)
				continue
			if (n < 3) {
				diag("skip list " skipfile ": \"" l "\" needs BINARY CASE REASON")
				chk++
				continue
			}
			allow[a[1] SUBSEP a[2]] = 1
		}
		cur = ""; oplan = -1
	}
	/^1\.\.[0-9]+$/ && oplan < 0 { oplan = substr($0, 4) + 0; next }
	/^# selftests: / {
		close_binary("")
		cur = binname($0); plan = -1; res = 0; infail = 0; nbin++
		next
	}
	cur != "" && /^# 1\.\.[0-9]+/ && plan < 0 { plan = $2; sub(/^1\.\./, "", plan); plan += 0; next }
	/^# (ok|not ok) [0-9]+ / {
		res++
		if ($2 == "ok") {
			if ($0 ~ /# SKIP/) {
				if (!useskips)
					skip++
				else if ((cur SUBSEP $4) in allow)
					skip++
				else {
					diag(cur ": " $4 " skipped, and the skip list does not allow it:" \
					     substr($0, index($0, "# SKIP") + 6))
					fail++
				}
			} else
				pass++
		} else {
			fail++; infail++
		}
		next
	}
	/^(ok|not ok) [0-9]+ selftests: / {
		if (cur == "") { cur = binname($0); plan = -1; res = 0; infail = 0; nbin++ }
		close_binary($0)
		next
	}
	END {
		close_binary("")
		if (oplan >= 0 && nbin != oplan) {
			diag("the collection planned " oplan " binaries (1.." oplan "), " nbin " ran")
			chk++
		}
		for (i = 1; i <= nexp; i++)
			if (!(order[i] in ran)) {
				diag(order[i] ": did not run; its " expn[order[i]] " cases count as failed")
				fail += expn[order[i]]
			}
		fail += chk
		printf "%d passed, %d failed, %d skipped\n", pass, fail, skip
		exit fail ? 1 : 0
	}'
