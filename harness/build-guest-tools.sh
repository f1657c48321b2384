#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the harness's own guest programs (harness/guest-src/*.c) as static
# binaries into build/guest-bin.
. "$(dirname "$0")/lib.sh"
mkdir -p "$BUILD/guest-bin"
for c in "$TOP"/harness/guest-src/*.c; do
	b=$BUILD/guest-bin/$(basename "$c" .c)
	[ "$b" -nt "$c" ] && continue
	gcc -O2 -Wall -Werror -static -o "$b" "$c"
done
