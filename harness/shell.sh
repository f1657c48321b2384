#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# An interactive shell in a guest running the test kernel, with the
# superpage kselftests in /selftests and the demo tools in /guest.
# "reboot -f" (or Ctrl-A x) leaves it.
. "$(dirname "$0")/lib.sh"
"$TOP/harness/deps.sh"
"$TOP/harness/build-kernel.sh" test
"$TOP/harness/build-selftests.sh"
"$TOP/harness/build-guest-tools.sh"
initrd=$BUILD/initramfs-shell.cpio
"$TOP/harness/initramfs.sh" "$initrd" "$BUILD/guest-bin=guest" \
	"$BUILD/selftests/superpage=selftests/superpage"
exec "$TOP/harness/run-guest.sh" --initrd "$initrd" --job shell --mem "${SP_MEM:-2G}" \
	--smp "${SP_SMP:-2}" --append "${SP_APPEND:-}"
