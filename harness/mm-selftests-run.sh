#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mm-selftests-run.sh: the second piece of "make mm-selftests"
# (harness/mm-selftests.sh, which documents the environment): boot what
# harness/mm-selftests-build.sh left in build/mm-selftests/, once per
# group of the list ("main" on 2 vCPUs, then "migration" on 3), numbering
# the runs on from one group to the next; show the result lines as they
# come; collect them, with a "not ok" for every run a guest never
# reported, into build/mm-selftests/results, and each run's output into
# build/logs/mm-selftests/NNN-NAME.log.
# Exit status: 100 on a kernel splat, 101 when a guest did not finish
# (run-guest.sh), else 0, whatever the tests did (the verdict is
# harness/mm-selftests-report.sh's); also written to
# build/mm-selftests/guest-status.
# shellcheck source-path=SCRIPTDIR source=mm-selftests-common.sh
. "$(dirname "$0")/mm-selftests-common.sh"
[ -f "$runs" ] && [ -f "$initrd" ] && [ -f "$mmb/bzImage" ] ||
	die "nothing to boot in ${mmb#$TOP/}: run harness/mm-selftests-build.sh first"

# Every run's timeout times SP_MM_TMO_SCALE: the sanitizer kernel (KASAN,
# DEBUG_PAGEALLOC) runs the suite about three times slower.
scale=${SP_MM_TMO_SCALE:-1}
[ "$flavour" = sanitizer ] && scale=${SP_MM_TMO_SCALE:-3}

# One boot per group, numbering the runs on from one group to the next.
append="numa=fake=2 sp.mmscale=$scale"
[ -n "${SP_SUPERPAGE:-}" ] && append="$append sp.superpage=$SP_SUPERPAGE"
dump_ok='page dumped because: gup_test: dump_pages() test'
worst=0
first=1
env=
rm -f "$LOGS"/mm-selftests-*.log "$guest_status" "$envfile"
: >"$results"
for group in main migration; do
	n=$(awk -v g=$group '$1 == g' "$runs" | wc -l)
	[ "$n" -gt 0 ] || continue
	smp=2
	[ $group = migration ] && smp=3
	# run-guest.sh's progress lines ("==> ") are shown as they come, the
	# rest of its stderr (its verdict on the console) once it is clear
	# whether the "splat" is only gup_test -ct's page dumps.  The filter
	# is a process substitution on fd 4, outside the pipeline, so that its
	# end can be waited for before "$err" is read.
	err=$mmb/run-guest-$group.err
	exec 4> >(tee "$err" | grep --line-buffered '^==> ' >&2)
	errpid=$!
	set +e
	"$TOP/harness/run-guest.sh" --kernel "$mmb/bzImage" --initrd "$initrd" \
		--job mm-selftests --name "mm-selftests-$group" --mem 3G --smp $smp \
		--timeout $((5400 * scale)) --append "$append sp.mmgroup=$group sp.mmfirst=$first" \
		2>&4 |
		sed -u -n -E 's/\r$//; /^(not )?ok [0-9]+ |^# (env|cmdline|setup)/p'
	grc=${PIPESTATUS[0]}
	exec 4>&-
	wait "$errpid"
	set -e
	out=$LOGS/mm-selftests-$group.out.log
	con=$LOGS/mm-selftests-$group.console.log
	# "gup_test -ct" asks the kernel to dump_page() a few pages: not a
	# splat.  Check the console again without those lines.
	if [ "$grc" -eq 100 ] &&
	   tr -d '\r' <"$con" | grep -v -F "$dump_ok" >"$con.nodump" &&
	   "$TOP/harness/check-console.sh" "$con.nodump" 2>/dev/null; then
		say "the console's only 'splat' is gup_test -ct's page dumps: ignored"
		grc=101
		tr -d '\r' <"$out" | grep -q '^SUPERPAGE-GUEST-EXIT rc=' && grc=0
	else
		grep -v '^==> ' "$err" >&2 || true
	fi
	rm -f "$con.nodump" "$err"
	tr -d '\r' <"$out" | grep -E '^(not )?ok [0-9]+ ' >>"$results" || true
	# Runs the guest never reported (it crashed or hung) count as failed.
	i=$first
	while read -r _ _ _ cmd; do
		if ! grep -q -E "^(not )?ok $i " "$results"; then
			echo "not ok $i mm: $cmd # not run: the guest did not finish" |
				tee -a "$results"
		fi
		i=$((i + 1))
	done < <(awk -v g=$group '$1 == g' "$runs")
	case $grc in
	100) worst=100 ;;
	101) [ $worst -eq 100 ] || worst=101 ;;
	esac
	[ -n "$env" ] || env=$(tr -d '\r' <"$out" | grep -E '^# (env|cmdline):' || true)
	first=$((first + n))
done
[ -z "$env" ] || printf '%s\n' "$env" >"$envfile"

# Split the guests' output into one log per run, named by its number.
rm -rf "$logdir"
mkdir -p "$logdir"
outs=()
for f in "$LOGS"/mm-selftests-{main,migration}.out.log; do
	[ -f "$f" ] && outs+=("$f")
done
cat "${outs[@]}" /dev/null | tr -d '\r' | awk -v dir="$logdir" '
	/^# selftests: mm: / && !/: exit=[0-9]+ / {
		if (!started) { started = 1; buf = "" }
		if (/running it once more$/) { buf = buf $0 "\n"; next }
		name = substr($0, 18); buf = $0 "\n"; next
	}
	/^(not )?ok [0-9]+ mm: / && started {
		n = ($1 == "not") ? $3 : $2
		f = name; gsub(/[^A-Za-z0-9_.-]+/, "_", f)
		f = sprintf("%s/%03d-%s.log", dir, n, f)
		printf "%s%s\n", buf, $0 > f; close(f)
		started = 0; next
	}
	started { buf = buf $0 "\n" }'

echo "$worst" >"$guest_status"
exit "$worst"
