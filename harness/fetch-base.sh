#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Fetch the pinned kernel base (base/linux.pin) and unpack it into build/linux
# as a git tree whose first commit, tagged "pristine", is the untouched source.
#
# The package comes from Debian's archive with "apt-get download" (apt checks
# the .deb against the signed archive index); the tarball inside it is then
# checked against PIN_SHA256.  If the pinned version is no longer in the
# archive, the newest 6.12 package is used instead, and this is said loudly:
# its checksum cannot be checked, and the hook patches may not apply.
. "$(dirname "$0")/lib.sh"

# The stamp names the pin the tree was unpacked for (and, after a fallback,
# the version it got): a changed base/linux.pin refetches.
stamp=$BUILD/.base-version
pin="pin $PIN_PKG=$PIN_VERSION $PIN_SHA256"
if [ -f "$stamp" ] && [ -d "$SRC/.git" ] &&
   [ "$(head -n 1 "$stamp")" = "$pin" ] &&
   git -C "$SRC" rev-parse -q --verify pristine >/dev/null; then
	exit 0
fi
[ -f "$stamp" ] && [ "$(head -n 1 "$stamp")" != "$pin" ] &&
	say "base/linux.pin changed ($(head -n 1 "$stamp") -> $pin): refetching"

mkdir -p "$DL"
version=$PIN_VERSION
if [ -z "$(apt-cache madison "$PIN_PKG" 2>/dev/null | awk -v v="$version" '$3 == v')" ]; then
	apt-get update -qq >/dev/null 2>&1 || true
fi
if [ -z "$(apt-cache madison "$PIN_PKG" 2>/dev/null | awk -v v="$version" '$3 == v')" ]; then
	newest=$(apt-cache madison "$PIN_PKG" 2>/dev/null | awk '{print $3}' |
		 sort -V | tail -n 1)
	[ -n "$newest" ] || die "no $PIN_PKG package in the apt sources at all"
	printf '\n*** WARNING: pinned %s=%s is not in the archive any more.\n' \
		"$PIN_PKG" "$PIN_VERSION" >&2
	printf '*** Falling back to the newest one, %s: its checksum is NOT checked\n' \
		"$newest" >&2
	printf '*** and the hook patches may not apply; harness/apply.sh says.\n\n' >&2
	version=$newest
fi

find_deb() {
	ls "$DL/${PIN_PKG}_"*.deb 2>/dev/null |
		grep -e "_${version}_" -e "_${version//\~/%7e}_" | head -n 1 || true
}
deb=$(find_deb)
if [ -z "$deb" ]; then
	say "downloading $PIN_PKG=$version"
	(cd "$DL" && apt-get download -qq "$PIN_PKG=$version" 2>&1 | grep -v unsandboxed || true)
	deb=$(find_deb)
	[ -n "$deb" ] || die "apt-get download $PIN_PKG=$version failed"
fi
tarball=$DL/$(basename "$PIN_TARBALL")
dpkg-deb --fsys-tarfile "$deb" | tar -xO "./$PIN_TARBALL" >"$tarball.tmp"
mv "$tarball.tmp" "$tarball"
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
if [ "$version" = "$PIN_VERSION" ]; then
	[ "$sum" = "$PIN_SHA256" ] ||
		die "checksum mismatch for $tarball: $sum, pinned $PIN_SHA256"
	say "checksum ok ($sum)"
else
	say "fallback tarball sha256 $sum (not checked)"
fi

say "unpacking into $SRC"
rm -rf "$SRC" "$SRC.tmp"
mkdir -p "$SRC.tmp"
tar -xJf "$tarball" -C "$SRC.tmp" --strip-components=1
mv "$SRC.tmp" "$SRC"
rm -f "$tarball"
cd "$SRC"
git init -q -b pristine-base .
git config user.name "Superpage Team"
git config user.email "superpage-dev@example.org"
git config core.autocrlf false
git config gc.auto 0
git add -A -f .
git commit -q -m "Linux $(make -s kernelversion) from Debian $PIN_PKG $version (pristine)"
git tag -f pristine >/dev/null
printf '%s\nunpacked %s\n' "$pin" "$version" >"$stamp"
say "base ready: $(git log --oneline -1)"
