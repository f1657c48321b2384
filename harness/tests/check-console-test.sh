#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Prove harness/check-console.sh on console logs (harness/tests/console/,
# see its README: real boots of the test kernel, and a few logs built from
# the kernel's format strings where a real boot cannot provoke the report):
# every splat-*.log must be flagged (exit 1), every clean-*.log must pass
# (exit 0).  console/want names, for a splat log, an extended regular
# expression that one of the flagged lines must match, so that the log
# is flagged for its own report and not for some other line.
# Prints TAP; exits 1 if any expectation fails.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
check=$here/../check-console.sh
wants=$here/console/want
logs=("$here"/console/*.log)
echo "TAP version 13"
echo "1..${#logs[@]}"
i=0 fail=0
for log in "${logs[@]}"; do
	i=$((i + 1))
	name=$(basename "$log")
	case "$name" in
	clean-*) want=0 ;;
	splat-*) want=1 ;;
	*) echo "not ok $i $name # neither clean- nor splat-"; fail=1; continue ;;
	esac
	out=$("$check" "$log" 2>&1 >/dev/null)
	got=$?
	if [ "$got" -ne "$want" ]; then
		echo "not ok $i $name: detector exit $got, want $want"
		fail=1
		continue
	fi
	re=$(awk -F'\t' -v n="$name" '$1 == n { print $2 }' "$wants")
	if [ -n "$re" ]; then
		# The flagged lines come between these two of the detector's.
		hit=$(printf '%s\n' "$out" |
		      sed -n '/kernel splat in/,/check-console: context:/p' |
		      grep -E -m 1 -e "$re")
		if [ -z "$hit" ]; then
			echo "not ok $i $name: no flagged line matches '$re'"
			fail=1
			continue
		fi
		echo "ok $i $name (exit $got:${hit#*]})"
	else
		echo "ok $i $name (exit $got)"
	fi
done
exit $fail
