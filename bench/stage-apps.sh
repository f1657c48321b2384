#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# stage-apps.sh DIR [perf]: stage the real programs of the benchmark
# (bench/README.md) into DIR, for the bench guest's initramfs, as
# harness/stress-root.sh stages the stress tools: each binary with every
# shared library it loads (as ldd(1) lists them) and its ELF interpreter.
# The programs go to /usr/local/bin (busybox has a /usr/bin/xz applet).
#   - Debian's redis 7 (redis-server, redis-cli, redis-benchmark): the
#     redis-tools package and the two libraries it needs that a build host
#     does not have, fetched with "apt-get download" into build/dl and
#     unpacked with dpkg -x (nothing is installed on the host; in Debian,
#     redis-server is redis-check-rdb under another name);
#   - xz (xz-utils, in harness/packages.txt), from the host;
#   - with "perf": the host's perf (Debian's linux-perf), if it has one,
#     for dTLB misses through "perf stat" in a guest with a PMU (KVM).
# Fails if a library or an interpreter cannot be found.
. "$(dirname "$0")/../harness/lib.sh"
dir=${1:?usage: stage-apps.sh DIR [perf]}
want_perf=${2:-}
rm -rf "$dir"
mkdir -p "$dir/usr/local/bin" "$DL"
ext=$BUILD/bench-debs
rm -rf "$ext"
mkdir -p "$ext"
for pkg in redis-tools libjemalloc2 liblzf1; do
	deb=$(ls "$DL/${pkg}_"*.deb 2>/dev/null | tail -n 1 || true)
	if [ -z "$deb" ]; then
		(cd "$DL" && apt-get download "$pkg" >/dev/null 2>&1) ||
			die "apt-get download $pkg failed"
		deb=$(ls "$DL/${pkg}_"*.deb | tail -n 1)
	fi
	dpkg -x "$deb" "$ext"
done
libpath=$ext/usr/lib/x86_64-linux-gnu:$ext/lib/x86_64-linux-gnu

# stage BINARY [NAME]: copy BINARY to DIR/usr/local/bin/NAME (busybox owns
# /usr/bin/xz) with its libraries.
stage() {
	local b=$1 name=${2:-$(basename "$1")} lib interp
	[ -x "$b" ] || die "$b is missing"
	cp -L "$b" "$dir/usr/local/bin/$name"
	if LD_LIBRARY_PATH=$libpath ldd "$b" | grep -q 'not found'; then
		LD_LIBRARY_PATH=$libpath ldd "$b" | grep 'not found' >&2
		die "$b: libraries not found"
	fi
	# "lib => /path (addr)" for a library; "/path (addr)" for the
	# interpreter.  POSIX awk only (mawk).  A library unpacked from a
	# .deb goes where it would be installed.
	LD_LIBRARY_PATH=$libpath ldd "$b" |
		awk '/=> \// { print $3 } !/=>/ && $1 ~ /^\// { print $1 }' |
		while read -r lib; do
			dest=${lib#"$ext"}
			mkdir -p "$dir$(dirname "$dest")"
			cp -L "$lib" "$dir$dest"
		done
	interp=$(readelf -l "$b" | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')
	[ -n "$interp" ] || die "no ELF interpreter found in $b (readelf -l)"
	[ -f "$dir$interp" ] || die "$b: its interpreter $interp was not staged into $dir"
}
stage "$ext/usr/bin/redis-check-rdb"
ln -s redis-check-rdb "$dir/usr/local/bin/redis-server"
stage "$ext/usr/bin/redis-cli"
stage "$ext/usr/bin/redis-benchmark"
stage /usr/bin/xz
if [ "$want_perf" = perf ] && [ -x /usr/bin/perf ] &&
   file -L /usr/bin/perf | grep -q ELF; then
	stage /usr/bin/perf
fi
[ -d "$dir/lib" ] && [ ! -e "$dir/usr/lib" ] && ln -s ../lib "$dir/usr/lib"
rm -rf "$ext"
say "benchmark programs staged in ${dir#$TOP/}: $(du -sh "$dir" | cut -f1)" \
	"($(ls "$dir/usr/local/bin" | tr '\n' ' '))"
