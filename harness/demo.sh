#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The project's main job (README): build the patched kernel, boot it, switch
# superpages on, run a short demo workload and print the superpage counters.
. "$(dirname "$0")/lib.sh"
"$TOP/harness/deps.sh"
"$TOP/harness/build-kernel.sh" test
"$TOP/harness/build-guest-tools.sh"
initrd=$BUILD/initramfs-demo.cpio
"$TOP/harness/initramfs.sh" "$initrd" "$BUILD/guest-bin=guest"
"$TOP/harness/run-guest.sh" --initrd "$initrd" --job demo --mem 1G --timeout 600
