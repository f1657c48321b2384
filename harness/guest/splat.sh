#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The splat job (harness/tests/record-console-logs.sh): provoke the kernel
# splat named by sp.splat=TYPE on the command line through LKDTM, so that
# the console detector can be tested on a real console log.
. "$(dirname "$0")/lib.sh"
type=$(sp_cmdline_get splat)
echo "provoking $type"
( echo "$type" >/sys/kernel/debug/provoke-crash/DIRECT ) &
sleep 5
echo "provoked $type"
