#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The project's test command (README; .ci/run): install what is missing,
# prove the console splat detector on recorded logs, build the patched test
# kernel and the superpage kselftests, boot the kernel under QEMU, run the
# kselftests in the guest, run the benchmark's short variant (its figures
# are reported, not judged) and the stress run's, print the TAP and a
# closing line
# "N passed, N failed, N skipped".  Exits non-zero on any failed test, on a
# guest that did not finish, and on any kernel splat on the console.
# Every case a binary's sources declare must report (a case that did not
# counts as failed), and a SKIP not listed in harness/kselftest-skips.list
# counts as failed too (harness/tap-summary.sh).
. "$(dirname "$0")/lib.sh"
t0=$(date +%s)
"$TOP/harness/deps.sh"

extra_pass=0 extra_fail=0
note() { # note ok|fail DESCRIPTION
	if [ "$1" = ok ]; then
		extra_pass=$((extra_pass + 1)); echo "ok - $2"
	else
		extra_fail=$((extra_fail + 1)); echo "not ok - $2"
	fi
}

say "console splat detector self-test"
if "$TOP/harness/tests/check-console-test.sh"; then
	note ok "splat detector flags every recorded splat and passes clean logs"
else
	note fail "splat detector self-test"
fi
say "kselftest counting self-test"
if "$TOP/harness/tests/tap-summary-test.sh"; then
	note ok "kselftest counting flags every missing case and undocumented skip in the recorded TAP"
else
	note fail "kselftest counting self-test"
fi
say "stress verdict self-test"
if "$TOP/harness/tests/stress-check-test.sh"; then
	note ok "stress verdict fails every recorded bad stress run and passes the good ones"
else
	note fail "stress verdict self-test"
fi

"$TOP/harness/build-kernel.sh" test
"$TOP/harness/build-selftests.sh"
# How many cases each binary must report, counted from the sources it was
# built from (harness/ksft-count.sh; tap-summary.sh --expect checks).
expect=$BUILD/selftests/superpage.expect
mapfile -t bins < <(cd "$BUILD/selftests/superpage" &&
	for f in *; do [ -f "$f" ] && [ -x "$f" ] && echo "$f"; done)
"$TOP/harness/ksft-count.sh" "$SRC/tools/testing/selftests/superpage" "${bins[@]}" >"$expect"
say "superpage kselftests: $(awk '{ n += $2; s = s " " $1 "=" $2 } END { print n " cases:" s }' "$expect")"
initrd=$BUILD/initramfs-test.cpio
"$TOP/harness/initramfs.sh" "$initrd" "$BUILD/selftests/superpage=selftests/superpage"

set +e
"$TOP/harness/run-guest.sh" --initrd "$initrd" --job test --name test \
	--mem 2G --smp 2 --timeout 1200
grc=$?
set -e
out=$LOGS/test.out.log
case $grc in
100) note fail "kernel console free of BUG/WARNING/Oops/lockdep/KASAN (see $LOGS/test.console.log)" ;;
101) note fail "guest ran the tests to the end" ;;
*) note ok "kernel console free of BUG/WARNING/Oops/lockdep/KASAN"
   note ok "guest ran the tests to the end" ;;
esac

# The benchmark's short variant on the same kernel: it must run to the
# end with every page reading back right and a clean console; its figures
# are reported (build/bench-short/table.md), never judged.
say "benchmark, short variant (make bench-short, on the test kernel)"
if SP_BENCH_KERNEL=test "$TOP/harness/bench.sh" short >"$LOGS/bench-short.report" 2>&1; then
	note ok "benchmark short variant ran every workload in every mode (build/bench-short/table.md)"
else
	tail -n 20 "$LOGS/bench-short.report" | sed 's/^/  | /'
	note fail "benchmark short variant (see $LOGS/bench-short.report)"
fi

# The stress run's short variant on the same kernel (DEBUG_VM, lockdep):
# trinity, stress-ng and the data-integrity soak for two minutes.
say "stress, short variant (make stress-short, on the test kernel)"
if SP_STRESS_KERNEL=test "$TOP/harness/stress.sh" 120 >"$LOGS/stress-short.report" 2>&1; then
	note ok "stress short variant: no splat, no corrupt page, guest alive ($LOGS/stress-120.out.log)"
else
	tail -n 30 "$LOGS/stress-short.report" | sed 's/^/  | /'
	note fail "stress short variant (see $LOGS/stress-short.report)"
fi

# Every case of every binary must have reported, and only the skips that
# harness/kselftest-skips.list allows may skip (tap-summary.sh).
set +e
"$TOP/harness/tap-summary.sh" --expect "$expect" \
	--skips "$TOP/harness/kselftest-skips.list" "$out" >"$LOGS/test.summary"
set -e
sed '$d' "$LOGS/test.summary"
summary=$(tail -n 1 "$LOGS/test.summary")
read -r p _ f _ s _ <<<"$(echo "$summary" | tr -d ',')"
p=$((p + extra_pass)) f=$((f + extra_fail))
echo "# kselftests: $summary; harness checks: $extra_pass passed, $extra_fail failed"
echo "# total time $(( $(date +%s) - t0 ))s"
echo "$p passed, $f failed, $s skipped"
[ "$f" -eq 0 ] && [ "$grc" -eq 0 ]
