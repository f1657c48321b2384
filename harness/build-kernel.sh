#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Apply the series, configure and build a flavour out of tree, incrementally.
# Usage: build-kernel.sh [flavour]   (default: test; leaves build/bzImage for
# the test flavour and build/bzImage-<flavour> for the others)
. "$(dirname "$0")/lib.sh"
flavour=${1:-test}
"$TOP/harness/apply.sh"
"$TOP/harness/config.sh" "$flavour"
obj=$(objdir "$flavour")
say "building $flavour kernel (make -j$JOBS O=${obj#$TOP/})"
start=$(date +%s)
if ! make -C "$SRC" O="$obj" -j"$JOBS" -s bzImage >"$obj/build.log" 2>&1; then
	grep -E 'error|Error' -A3 "$obj/build.log" | head -n 80 >&2
	die "kernel build failed; full log: $obj/build.log"
fi
grep -E 'warning:' "$obj/build.log" >&2 || true
img=$(kimage "$flavour")
cp "$obj/arch/x86/boot/bzImage" "$img"
say "kernel ready: ${img#$TOP/} ($(( $(date +%s) - start ))s)"
