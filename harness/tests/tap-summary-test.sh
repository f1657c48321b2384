#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Prove the kselftest counting of harness/tap-summary.sh and
# harness/ksft-count.sh on TAP logs cut from a real run of the superpage
# kselftests (harness/tests/tap/, see its README): a clean run, an allowed
# skip, and every way a case can go missing or be skipped without leave
# (a binary crashed mid-way, died before its plan, a log cut short, a
# binary that never ran, a plan that shrank, an undocumented SKIP, a bad
# skip list), each with the verdict it must get (tap/want).  Also counts
# the cases of tap/sample_test.c, which uses every test macro the count
# knows, variants and comments.  Prints TAP; exits 1 if any expectation
# fails.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=$here/tap
mapfile -t lines < <(grep -v '^#' "$dir/want" | sed '/^$/d')
echo "TAP version 13"
echo "1..${#lines[@]}"
i=0 fail=0
for line in "${lines[@]}"; do
	i=$((i + 1))
	# Tabs are IFS white space, which read merges: split on \x1f.
	IFS=$'\x1f' read -r name want sum re skips <<<"${line//$'\t'/$'\x1f'}"
	if [ "${name%.c}" != "$name" ]; then
		got=$("$here/../ksft-count.sh" "$dir" "${name%.c}" 2>&1)
		if [ "$got" = "${name%.c} $want" ]; then
			echo "ok $i $name: ksft-count.sh counts $want cases"
		else
			echo "not ok $i $name: ksft-count.sh says '$got', want $want cases"
			fail=1
		fi
		continue
	fi
	skips=${skips:-skips}
	out=$(cd "$dir" && "$here/../tap-summary.sh" --expect expect --skips "$skips" "$name" 2>&1)
	got=$?
	last=$(printf '%s\n' "$out" | tail -n 1)
	diags=$(printf '%s\n' "$out" | grep '^not ok - ')
	why=""
	[ "$got" -eq "$want" ] || why="exit $got, want $want"
	[ "$last" = "$sum" ] || why="${why:+$why; }summary '$last', want '$sum'"
	if [ -n "$re" ]; then
		hit=$(printf '%s\n' "$diags" | grep -E -m 1 -e "$re")
		[ -n "$hit" ] || why="${why:+$why; }no 'not ok - ' line matches '$re'"
	elif [ -n "$diags" ]; then
		why="${why:+$why; }unexpected: $(printf '%s\n' "$diags" | head -n 1)"
	fi
	if [ -n "$why" ]; then
		echo "not ok $i $name ($skips): $why"
		printf '%s\n' "$out" | sed 's/^/#   /'
		fail=1
	else
		echo "ok $i $name ($skips): $sum${hit:+ [${hit#not ok - }]}"
	fi
	hit=
done
exit $fail
