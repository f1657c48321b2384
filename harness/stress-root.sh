#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# stress-root.sh DIR: stage Debian's trinity and stress-ng (installed on
# the host from harness/packages.txt) with every shared library they load,
# as ldd(1) lists them, and their ELF interpreter, into DIR, for the stress
# guest's initramfs.  Fails if a binary's interpreter did not make it.
. "$(dirname "$0")/lib.sh"
dir=${1:?usage: stress-root.sh DIR}
rm -rf "$dir"
mkdir -p "$dir/usr/bin"
for b in /usr/bin/trinity /usr/bin/stress-ng; do
	[ -x "$b" ] || die "$b is missing (apt-get install trinity stress-ng)"
	cp "$b" "$dir/usr/bin/"
	# "lib => /path (addr)" for a library; "/path (addr)" for the
	# interpreter.  POSIX awk only: mawk, Debian's default awk, has no \s.
	ldd "$b" | awk '/=> \// { print $3 } !/=>/ && $1 ~ /^\// { print $1 }' |
		while read -r lib; do
			mkdir -p "$dir$(dirname "$lib")"
			cp -L "$lib" "$dir$lib"
		done
	interp=$(readelf -l "$b" | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')
	[ -n "$interp" ] || die "no ELF interpreter found in $b (readelf -l)"
	[ -f "$dir$interp" ] || die "$b: its interpreter $interp was not staged into $dir"
done
# Both live where the loader looks on Debian (/lib -> usr/lib there).
[ -d "$dir/lib" ] && [ ! -e "$dir/usr/lib" ] && ln -s ../lib "$dir/usr/lib"
say "stress tools staged in ${dir#$TOP/}: $(du -sh "$dir" | cut -f1)"
