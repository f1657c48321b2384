#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# stress-root.sh DIR: stage Debian's trinity and stress-ng (installed on
# the host from harness/packages.txt) with every shared library they load,
# as ldd(1) lists them, into DIR, for the stress guest's initramfs.
. "$(dirname "$0")/lib.sh"
dir=${1:?usage: stress-root.sh DIR}
rm -rf "$dir"
mkdir -p "$dir/usr/bin"
for b in /usr/bin/trinity /usr/bin/stress-ng; do
	[ -x "$b" ] || die "$b is missing (apt-get install trinity stress-ng)"
	cp "$b" "$dir/usr/bin/"
	ldd "$b" | awk '/=> \// { print $3 } /^\s*\/.*ld-linux/ { print $1 }' |
		while read -r lib; do
			mkdir -p "$dir$(dirname "$lib")"
			cp -L "$lib" "$dir$lib"
		done
done
# Both live where the loader looks on Debian (/lib -> usr/lib there).
[ -d "$dir/lib" ] && [ ! -e "$dir/usr/lib" ] && ln -s ../lib "$dir/usr/lib"
say "stress tools staged in ${dir#$TOP/}: $(du -sh "$dir" | cut -f1)"
