#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The test job: the superpage kselftests on a freshly booted kernel.
export SUPERPAGE_FRESH_BOOT=1
exec /guest/run-kselftests.sh superpage /selftests/superpage
