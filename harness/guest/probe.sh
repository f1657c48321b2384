#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Accelerator probe: the guest booted and ran userspace.
echo "SUPERPAGE-PROBE-OK $(uname -r)"
