#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The test job: the superpage kselftests on a freshly booted kernel.  The
# value of vm.superpage_enabled at boot is read before any test can change
# it, for sysctl_test's default_is_off_at_boot.
SUPERPAGE_BOOT_ENABLED=$(cat /proc/sys/vm/superpage_enabled 2>/dev/null)
export SUPERPAGE_BOOT_ENABLED
exec /guest/run-kselftests.sh superpage /selftests/superpage
