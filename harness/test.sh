#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The project's test command (README; .ci/run): install what is missing,
# prove the console splat detector on recorded logs, build the patched test
# kernel and the superpage kselftests, boot the kernel under QEMU, run the
# kselftests in the guest, print their TAP and a closing line
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

set +e
summary=$("$TOP/harness/tap-summary.sh" "$out")
set -e
read -r p _ f _ s _ <<<"$(echo "$summary" | tr -d ',')"
p=$((p + extra_pass)) f=$((f + extra_fail))
echo "# kselftests: $summary; harness checks: $extra_pass passed, $extra_fail failed"
echo "# total time $(( $(date +%s) - t0 ))s"
echo "$p passed, $f failed, $s skipped"
[ "$f" -eq 0 ] && [ "$grc" -eq 0 ]
