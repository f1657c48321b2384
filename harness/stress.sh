#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make stress / make stress-short (README): build the sanitizer kernel
# (KASAN, KFENCE, DEBUG_PAGEALLOC, page poisoning, DEBUG_VM, lockdep),
# boot a guest with trinity, stress-ng, sp_soak and sp_vmafuzz in its
# initramfs, and run harness/guest/stress.sh for SECONDS (default 1800).
#   stress.sh [SECONDS]
# SP_STRESS_KERNEL=test runs on the test kernel instead (./run test does,
# for its short variant, to reuse the kernel it has built).
# Fails on a kernel splat, a corrupt page, a page mapped against its VMAs,
# a leaked reservation, a failed stressor, a guest that did not survive to
# the end (the guest's verdict), and on what harness/stress-check.sh finds
# in the job's output: a stressor killed by a signal, a SIGKILL that the
# cgroup's memory.events does not count as an OOM kill, a worker that did
# fewer operations than its floor, superpage counters that did not grow.
. "$(dirname "$0")/lib.sh"
secs=${1:-1800}
flavour=${SP_STRESS_KERNEL:-sanitizer}
"$TOP/harness/deps.sh"
"$TOP/harness/build-kernel.sh" "$flavour"
kernel=$(kimage "$flavour")
"$TOP/harness/build-guest-tools.sh"
"$TOP/harness/stress-root.sh" "$BUILD/stress-root"
initrd=$BUILD/initramfs-stress.cpio
"$TOP/harness/initramfs.sh" "$initrd" "$BUILD/guest-bin=guest" "$BUILD/stress-root=/"
name=stress-$secs
# The stressors stop late under KASAN and memory pressure (a 1800 s run
# ended 2196 s after its start): half the run again, plus the boot.
set +e
"$TOP/harness/run-guest.sh" --kernel "$kernel" --initrd "$initrd" --job stress \
	--name "$name" --mem 2G --smp 2 --timeout $((secs * 3 / 2 + 600)) \
	--append "sp.stress=$secs"
grc=$?
set -e
[ $grc -eq 0 ] || echo "FAIL: the stress job failed (exit $grc)" >&2
crc=0
"$TOP/harness/stress-check.sh" "$LOGS/$name.out.log" || crc=$?
[ $crc -eq 0 ] || echo "FAIL: harness/stress-check.sh (see the not ok lines above)" >&2
# The guest's status first (100: a splat, 101: no end), else the check's.
[ $grc -ne 0 ] && exit $grc
exit $crc
