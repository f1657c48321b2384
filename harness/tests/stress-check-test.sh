#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Prove harness/stress-check.sh on stress job logs (harness/tests/stress/,
# see its README): a real short stress run (stress/short-run.log), which
# must pass, and copies of it edited by a sed script each to show one
# failure the check exists for (stress-ng exit 5 or 6, a soak process
# killed by a signal, a SIGKILL that memory.events does not count as an
# OOM kill, a worker below its floor of operations, a superpage counter
# that did not grow, ...), and a few edits that must still pass (an OOM
# kill that memory.events confirms).  stress/want, one case a line:
#   NAME<TAB>EXIT<TAB>ERE<TAB>SED
# the exit status the check must give, an extended regular expression
# that one of its "not ok - " lines must match (when empty: it must print
# none), and the sed script that makes the case from short-run.log.
# Prints TAP; exits 1 if any expectation fails.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=$here/stress
mapfile -t lines < <(grep -v '^#' "$dir/want" | sed '/^$/d')
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
echo "TAP version 13"
echo "1..${#lines[@]}"
i=0 fail=0
for line in "${lines[@]}"; do
	i=$((i + 1))
	# Tabs are IFS white space, which read merges: split on \x1f.
	IFS=$'\x1f' read -r name want re script <<<"${line//$'\t'/$'\x1f'}"
	if ! sed -e "$script" "$dir/short-run.log" >"$tmp"; then
		echo "not ok $i $name: bad sed script"
		fail=1
		continue
	fi
	if [ -n "$script" ] && cmp -s "$tmp" "$dir/short-run.log"; then
		echo "not ok $i $name: its sed script changes nothing in short-run.log"
		fail=1
		continue
	fi
	# The floors are the shipped ones, whatever the environment says.
	out=$(env -u SP_STRESS_FLOOR_SOAK -u SP_STRESS_FLOOR_FUZZ -u SP_STRESS_FLOOR_CYCLE \
		-u SP_STRESS_FLOOR_STRESSNG -u SP_STRESS_FLOOR_TRINITY \
		"$here/../stress-check.sh" "$tmp" 2>&1)
	got=$?
	diags=$(printf '%s\n' "$out" | grep '^not ok - ')
	why='' hit=''
	[ "$got" -eq "$want" ] || why="exit $got, want $want"
	if [ -n "$re" ]; then
		hit=$(printf '%s\n' "$diags" | grep -E -m 1 -e "$re")
		[ -n "$hit" ] || why="${why:+$why; }no 'not ok - ' line matches '$re'"
	elif [ -n "$diags" ]; then
		why="${why:+$why; }unexpected: $(printf '%s\n' "$diags" | head -n 1)"
	fi
	if [ -n "$why" ]; then
		echo "not ok $i $name: $why"
		printf '%s\n' "$out" | sed 's/^/#   /'
		fail=1
	else
		echo "ok $i $name (exit $got${hit:+: ${hit#not ok - stress: }})"
	fi
done
exit $fail
