#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the harness's own guest programs (harness/guest-src/*.c) and the
# benchmark's (bench/*.c, which use the selftests' superpage_util.h) as
# static binaries into build/guest-bin.
. "$(dirname "$0")/lib.sh"
mkdir -p "$BUILD/guest-bin"
util=$TOP/tools/testing/selftests/superpage/superpage_util.h
for c in "$TOP"/harness/guest-src/*.c "$TOP"/bench/*.c; do
	b=$BUILD/guest-bin/$(basename "$c" .c)
	[ "$b" -nt "$c" ] && [ "$b" -nt "$util" ] && continue
	gcc -O2 -Wall -Werror -static -pthread -o "$b" "$c"
done
