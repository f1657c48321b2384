#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Prove harness/check-console.sh on console logs recorded from real boots of
# the test kernel (harness/tests/console/, see its README): every
# splat-*.log must be flagged (exit 1), every clean-*.log must pass (exit 0).
# Prints TAP; exits 1 if any expectation fails.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
check=$here/../check-console.sh
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
	"$check" "$log" >/dev/null 2>&1
	got=$?
	if [ "$got" -eq "$want" ]; then
		echo "ok $i $name (exit $got)"
	else
		echo "not ok $i $name: detector exit $got, want $want"
		fail=1
	fi
done
exit $fail
