#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# ksft-count.sh DIR NAME...: for each kselftest_harness.h program NAME,
# count from DIR/NAME.c the test cases it must report, and print
# "NAME COUNT" per line: what harness/tap-summary.sh --expect checks every
# binary's TAP plan and results against.
#
# Counted as the harness runs them: each TEST(), TEST_SIGNAL(), TEST_F(),
# TEST_F_SIGNAL() and TEST_F_TIMEOUT() at the start of a line runs once per
# FIXTURE_VARIANT_ADD() of its fixture, once if the fixture has none (TEST
# and TEST_SIGNAL belong to the fixture "global", which has none).  Text
# in /* */ and // comments is ignored; #if 0 blocks and tests defined by
# other macros are not understood (the run then fails on the mismatch,
# naming this script).  Fails if NAME.c is missing or declares no test.
set -euo pipefail
dir=${1:?usage: ksft-count.sh DIR NAME...}
shift
rc=0
for name in "$@"; do
	src=$dir/$name.c
	if [ ! -r "$src" ]; then
		echo "ksft-count: no source $src for the binary $name" >&2
		rc=1
		continue
	fi
	# POSIX awk only (mawk: no \s, no gensub).
	n=$(awk '
		# Drop comments; "inc" carries an open /* across lines.
		{
			line = $0; out = ""
			while (line != "") {
				if (inc) {
					p = index(line, "*/")
					if (!p) { line = ""; break }
					line = substr(line, p + 2); inc = 0
					continue
				}
				p = index(line, "/*"); q = index(line, "//")
				if (q && (!p || q < p)) { out = out substr(line, 1, q - 1); line = ""; break }
				if (!p) { out = out line; line = ""; break }
				out = out substr(line, 1, p - 1); line = substr(line, p + 2); inc = 1
			}
			$0 = out
		}
		function arg1(s) {
			sub(/^[^(]*\([ \t]*/, "", s)
			sub(/[ \t]*[,)].*$/, "", s)
			return s
		}
		/^[ \t]*FIXTURE_VARIANT_ADD[ \t]*\(/ { nvar[arg1($0)]++; next }
		/^[ \t]*TEST(_SIGNAL)?[ \t]*\(/ { fix[++nt] = "global"; next }
		/^[ \t]*TEST_F(_SIGNAL|_TIMEOUT)?[ \t]*\(/ { fix[++nt] = arg1($0); next }
		END {
			for (i = 1; i <= nt; i++)
				n += (fix[i] in nvar) ? nvar[fix[i]] : 1
			print n + 0
		}' "$src")
	if [ "$n" -eq 0 ]; then
		echo "ksft-count: $src declares no TEST/TEST_F" >&2
		rc=1
		continue
	fi
	echo "$name $n"
done
exit $rc
