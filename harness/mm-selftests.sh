#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mm-selftests.sh: build the kernel's own tools/testing/selftests/mm tests
# that run in our busybox guest (static, from a private copy of the sources
# in build/mm-selftests/), boot the test kernel under QEMU with 3 GiB,
# numa=fake=2, 1 GiB of zram swap and 128 hugetlb pages, run the list of
# harness/mm-selftests.list (group "main" on 2 vCPUs, then "migration" on
# 3), and print one line per run, "ok N mm: NAME" / "not ok ..." /
# "ok ... # SKIP", and "N passed, N failed, N skipped".
#
# Environment:
#   SP_KERNEL=IMG     boot IMG and build no kernel (default: build the test
#                     kernel with harness/build-kernel.sh, boot build/bzImage)
#   SP_SUPERPAGE=M    write M to vm.superpage_enabled in the guest first
#   SP_FLAVOUR=F      build and boot the kernel flavour F (default test;
#                     sanitizer: KASAN and the rest, timeouts times 3)
#   SP_MM_TMO_SCALE=N multiply every run's timeout by N
#   SP_MM_FILTER=RE   only the runs whose command matches the egrep RE,
#                     e.g. SP_MM_FILTER='^(cow|khugepaged.*)$'
#
# Each run's full output: build/logs/mm-selftests/NNN-NAME.log; the result
# lines with the guest parameters: build/logs/mm-selftests.txt (the format
# of baseline/mm-selftests.txt; the runs whose result differs from the
# baseline's are listed).  Under TCG on 2 busy cores the whole list takes
# 25 to 40 minutes.  Exit status: 100 on a kernel splat, 101 when a guest
# did not finish (run-guest.sh), else 1 if any run failed, else 0.
#
# Three pieces, each of which can be run alone (with the same environment;
# files they hand on: harness/mm-selftests-common.sh):
#   harness/mm-selftests-build.sh   kernel, selftest binaries, initramfs
#   harness/mm-selftests-run.sh     the boots, collecting the results
#   harness/mm-selftests-report.sh  mm-selftests.txt, the baseline diff,
#                                   the tally and the exit status
. "$(dirname "$0")/lib.sh"
SP_MM_T0=$(date +%s)
export SP_MM_T0
"$TOP/harness/mm-selftests-build.sh"
rc=0
"$TOP/harness/mm-selftests-run.sh" || rc=$?
# 100 and 101 are the guests' verdict, which the report gives; any other
# status is the run piece's own failure.
case $rc in 0|100|101) ;; *) exit "$rc" ;; esac
exec "$TOP/harness/mm-selftests-report.sh"
