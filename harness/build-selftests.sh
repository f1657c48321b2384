#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the superpage kselftests (tools/testing/selftests/superpage of the
# patched tree) as static binaries into build/selftests/superpage, against
# the UAPI headers of the test kernel's object directory.
. "$(dirname "$0")/lib.sh"
obj=$(objdir test)
quiet make -C "$SRC" O="$obj" headers
out=$BUILD/selftests/superpage
rm -rf "$out"
mkdir -p "$out"
quiet make -C "$SRC/tools/testing/selftests/superpage" OUTPUT="$out" \
	KHDR_INCLUDES="-isystem $obj/usr/include" LDFLAGS=-static
cp "$SRC/tools/testing/selftests/superpage/settings" "$out/"
say "superpage selftests: $(cd "$out" && ls -d -- * | grep -v '\.' | tr '\n' ' ')"
