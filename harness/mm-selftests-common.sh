# SPDX-License-Identifier: GPL-2.0
# mm-selftests-common.sh: what the three pieces of "make mm-selftests"
# (harness/mm-selftests-{build,run,report}.sh) share: lib.sh's settings,
# the files through which each piece hands its work to the next, and the
# settings of the environment.  Sourced, never run.
#
# In build/mm-selftests/:
#   bzImage, initramfs.cpio  the kernel and initramfs the guests boot  (build)
#   mm-selftests.list        the runs: harness/mm-selftests.list less those
#                            SP_MM_FILTER leaves out                   (build)
#   results                  one result line per run                   (run;
#                            sorted by number by report)
#   guest-status             0, or the worst of the boots: 100 (kernel
#                            splat), 101 (a guest did not finish)      (run)
#   env                      the first guest's "# env:" and "# cmdline:"
#                            lines                                     (run)
# In build/logs/: mm-selftests-GROUP.{out,console}.log of each boot and
# mm-selftests/NNN-NAME.log of each run (run), mm-selftests.txt (report).
# Every piece reads SP_FLAVOUR, SP_SUPERPAGE and SP_MM_FILTER: run them
# alone with the same environment.
# shellcheck shell=bash disable=SC2034 # the variables are the pieces'
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mmb=$BUILD/mm-selftests
runs=$mmb/mm-selftests.list
initrd=$mmb/initramfs.cpio
results=$mmb/results
guest_status=$mmb/guest-status
envfile=$mmb/env
logdir=$LOGS/mm-selftests
flavour=${SP_FLAVOUR:-test}
# When "make mm-selftests" started, for its total time: set by
# harness/mm-selftests.sh; a piece run alone counts from its own start.
SP_MM_T0=${SP_MM_T0:-$(date +%s)}
