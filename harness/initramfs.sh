#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# initramfs.sh OUT.cpio [DIR=DEST]...: build an uncompressed initramfs with
# Debian's static busybox (all applets linked), the guest scripts of
# harness/guest/ in /guest (its init as /init), and each DIR copied to DEST.
. "$(dirname "$0")/lib.sh"
out=$1; shift
bb=/bin/busybox
[ -x "$bb" ] && ! ldd "$bb" >/dev/null 2>&1 ||
	die "$bb is missing or not static (apt-get install busybox-static)"

root=$(mktemp -d "$BUILD/initramfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
chmod 755 "$root"
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,root,etc,guest,selftests}
cp "$bb" "$root/bin/busybox"
for a in $("$bb" --list-full); do
	[ -e "$root/$a" ] || ln -s /bin/busybox "$root/$a"
done
cp "$TOP"/harness/guest/* "$root/guest/"
cp "$TOP/harness/guest/init" "$root/init"
chmod +x "$root/init" "$root"/guest/*
echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
echo "nobody:x:65534:65534:nobody:/nonexistent:/bin/false" >>"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
for spec in "$@"; do
	src=${spec%%=*}
	dst=${spec#*=}
	mkdir -p "$root/$dst"
	cp -a "$src/." "$root/$dst/"
done
(cd "$root" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --owner=0:0 --quiet) >"$out.tmp"
mv "$out.tmp" "$out"
say "initramfs ${out#$TOP/}: $(du -h "$out" | cut -f1)"
