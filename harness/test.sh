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

"$TOP/harness/build-kernel.sh" test
"$TOP/harness/build-selftests.sh"
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

set +e
summary=$("$TOP/harness/tap-summary.sh" "$out")
set -e
read -r p _ f _ s _ <<<"$(echo "$summary" | tr -d ',')"
p=$((p + extra_pass)) f=$((f + extra_fail))
echo "# kselftests: $summary; harness checks: $extra_pass passed, $extra_fail failed"
echo "# total time $(( $(date +%s) - t0 ))s"
echo "$p passed, $f failed, $s skipped"
[ "$f" -eq 0 ] && [ "$grc" -eq 0 ]
