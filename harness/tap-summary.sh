#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# tap-summary.sh OUT.LOG...: count the test cases of kselftest TAP output
# (harness/guest/run-kselftests.sh) and print "P passed, F failed, S skipped".
# A case is a nested "# ok N ..." / "# not ok N ..." line of a binary's TAP;
# a binary that failed without reporting a failed case (a crash, a timeout,
# a bad exit) counts as one failed case.  Exit 1 if anything failed.
set -euo pipefail
tr -d '\r' <"$@" | awk '
	/^# selftests: / { infail = 0; next }
	/^# (ok|not ok) [0-9]+ / {
		if ($0 ~ /^# ok/) { if ($0 ~ /# SKIP/) skip++; else pass++ }
		else { fail++; infail++ }
		next
	}
	/^not ok [0-9]+ selftests: / { if (!infail) fail++; next }
	END {
		printf "%d passed, %d failed, %d skipped\n", pass, fail, skip
		exit fail ? 1 : 0
	}'
