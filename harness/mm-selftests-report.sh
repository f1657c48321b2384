#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mm-selftests-report.sh: the last piece of "make mm-selftests"
# (harness/mm-selftests.sh, which documents the environment): from what
# harness/mm-selftests-run.sh collected, write build/logs/mm-selftests.txt
# (the format of baseline/mm-selftests.txt: the guest parameters, the
# result lines in order, the subtest totals of the kselftest binaries, the
# tally), list the runs whose result differs from the baseline's, and
# print the tally, "N passed, N failed, N skipped".  Can be run again on
# the same results.
# Exit status: the guests' (build/mm-selftests/guest-status: 100 on a
# kernel splat, 101 when a guest did not finish), else 1 if any run
# failed, else 0.
# shellcheck source-path=SCRIPTDIR source=mm-selftests-common.sh
. "$(dirname "$0")/mm-selftests-common.sh"
[ -f "$guest_status" ] && [ -f "$results" ] ||
	die "no results in ${mmb#$TOP/}: run harness/mm-selftests-run.sh first"
worst=$(cat "$guest_status")
env=
[ -f "$envfile" ] && env=$(cat "$envfile")
kver=$(file -bL "$mmb/bzImage" | sed -n 's/.*version \([^ ]*\) .*/\1/p')

baseline=$TOP/baseline/mm-selftests.txt
# With the feature on, compare with the record made with it on.
[ -f "$TOP/baseline/mm-selftests-superpage${SP_SUPERPAGE:-}.txt" ] &&
	baseline=$TOP/baseline/mm-selftests-superpage$SP_SUPERPAGE.txt

outs=()
for f in "$LOGS"/mm-selftests-{main,migration}.out.log; do
	[ -f "$f" ] && outs+=("$f")
done

# The subtest totals each kselftest binary printed ("# Totals: ..."); of a
# rerun, the last; none for a binary of one passing case (gup_test).
totals=$(cat "${outs[@]}" /dev/null | tr -d '\r' | awk '
	/^# selftests: mm: / && !/: exit=[0-9]+/ { name = substr($0, 18) }
	/^# # Totals: / {
		t = $0; sub(/^# # Totals: /, "", t)
		if (!(name in tot)) order[++k] = name
		tot[name] = t
	}
	END {
		for (i = 1; i <= k; i++)
			if (tot[order[i]] != "pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0")
				print "#   " order[i] ": " tot[order[i]]
	}')

awk '{ print (($1 == "not") ? $3 : $2) "\t" $0 }' "$results" | sort -n -s -k1,1 |
	cut -f2- >"$results.sorted"
mv "$results.sorted" "$results"
read -r pass fail skip < <(awk '
	/^ok / { if ($0 ~ /# SKIP/) s++; else p++ }
	/^not ok / { f++ }
	END { printf "%d %d %d\n", p, f, s }' "$results")
summary="$pass passed, $fail failed, $skip skipped"
secs=$(( $(date +%s) - SP_MM_T0 ))

res=$LOGS/mm-selftests.txt
{
	echo "# make mm-selftests on $kver, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "# guest: $("$TOP/harness/accel.sh" "$mmb/bzImage" "$initrd"), 3 GiB," \
		"2 vCPUs (3 for migration), numa=fake=2, 1 GiB zram swap," \
		"128 hugetlb pages${SP_SUPERPAGE:+, sp.superpage=$SP_SUPERPAGE}"
	echo "${env:-# env: (none: the main guest did not report it)}"
	[ -n "${SP_MM_FILTER:-}" ] && echo "# SP_MM_FILTER=$SP_MM_FILTER"
	[ "$worst" -eq 100 ] && echo "# FAIL: kernel splat on the console"
	[ "$worst" -eq 101 ] && echo "# FAIL: a guest did not finish"
	cat "$results"
	[ -n "$totals" ] && printf '# subtest totals of the kselftest binaries:\n%s\n' "$totals"
	echo "# total time ${secs}s"
	echo "$summary"
} >"$res"

# Compare the result of each run with the baseline's, by name (with
# SP_MM_FILTER, only the runs that were run).
status() { # status FILE: "NAME<tab>ok|not ok|skip" for each run of FILE
	sed -n -E 's/^(not ok|ok) [0-9]+ mm: ([^#]*[^ #]) *(# SKIP)?.*/\2\t\1\3/p' "$1" |
		sed 's/\tok# SKIP$/\tskip/'
}
if [ -f "$baseline" ]; then
	changes=$(awk -F'\t' -v all="$([ -z "${SP_MM_FILTER:-}" ] && echo 1)" '
		NR == FNR { b[$1] = $2; next }
		!($1 in b) { print "  " $1 ": new, " $2; next }
		b[$1] != $2 { print "  " $1 ": " b[$1] " -> " $2 }
		{ delete b[$1] }
		END { if (all) for (n in b) print "  " n ": " b[n] " -> not run" }' \
		<(status "$baseline") <(status "$res"))
	if [ -z "$changes" ]; then
		say "same results as ${baseline#$TOP/}"
	else
		say "results that differ from ${baseline#$TOP/}:"
		echo "$changes" >&2
	fi
fi

echo "# per-run logs: ${logdir#$TOP/}/; results: ${res#$TOP/}"
echo "# total time ${secs}s"
echo "$summary"
[ "$worst" -eq 0 ] || exit "$worst"
[ "$fail" -eq 0 ]
