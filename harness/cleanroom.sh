#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make cleanroom: prove the README's two commands on a fresh Debian 12.
# Builds a minimal bookworm root with debootstrap (--variant=minbase) from
# the Debian archive that apt uses on this machine, with this machine's
# apt sources, clones the committed HEAD of this checkout into it, and
# runs there, in a chroot (/proc, /sys, /dev, /dev/pts bind-mounted):
#     ./run demo
#     CI=true ./run test
# each as a fresh login would (root, a clean environment), printing its
# wall time and exit status.  Exits non-zero if either failed.  Whatever
# either needs beyond minbase it must install itself (harness/deps.sh), so
# a package missing from harness/packages.txt fails here.
#
#   SP_CLEANROOM_DIR    the root (default /srv/superpage-cleanroom)
#   SP_CLEANROOM_REUSE  1: reuse the root left by an earlier run (its
#                       packages stay installed, which can hide a missing
#                       dependency; the repository is cloned afresh).
#                       Default: delete it and debootstrap a new one.
#   SP_CLEANROOM_ONLY   demo or test: run only that command; none: only
#                       prepare the root (then SP_CLEANROOM_REUSE=1)
#
# Needs root (debootstrap, mounts, chroot); re-runs itself with sudo.
# Takes about as long as both commands cold: 30 minutes or more on 2 cores.
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" -ne 0 ]; then
	exec sudo --preserve-env=SP_CLEANROOM_DIR,SP_CLEANROOM_REUSE,SP_CLEANROOM_ONLY "$0" "$@"
fi
root=${SP_CLEANROOM_DIR:-/srv/superpage-cleanroom}
reuse=${SP_CLEANROOM_REUSE:-0}
only=${SP_CLEANROOM_ONLY:-}
suite=bookworm
root=$(realpath -m "$root")
case "$root" in
/|/bin|/boot|/dev|/etc|/home|/lib|/proc|/root|/run|/sys|/tmp|/usr|/var|/srv|"$TOP"|"$BUILD")
	die "cleanroom: refusing to use $root as the root" ;;
esac
case "$TOP/" in "$root"/*) die "cleanroom: $root holds this checkout" ;; esac
# Root runs git on a checkout that may be another user's.
git() { command git -c safe.directory='*' "$@"; }
t0=$(date +%s)

# Everything mounted below the root, deepest first.
mounts_below() {
	awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts | sort -r
}
# Processes left in the chroot (an interrupted run's build or guest).
chrooted() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && echo "${p#/proc/}"
	done
	return 0
}
unmount_all() {
	local m pids
	pids=$(chrooted)
	if [ -n "$pids" ]; then
		echo "cleanroom: stopping what still runs in the root: $(echo $pids)" >&2
		kill $pids 2>/dev/null || true
		sleep 2
		pids=$(chrooted)
		[ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
	fi
	for m in $(mounts_below); do
		umount "$m" 2>/dev/null || umount -l "$m" ||
			echo "cleanroom: could not unmount $m" >&2
	done
}
trap unmount_all EXIT
trap 'exit 130' INT TERM HUP

# The Debian archive apt uses here: the first URI that serves $suite itself
# (not -updates or -security), from the deb822 sources or sources.list.
mirror() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		awk -v s="$suite" '
			/^[ \t]*$/ { if (uri != "" && hit && deb) { print uri; done = 1; exit } uri = ""; hit = 0; deb = 0; next }
			tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
			tolower($1) == "uris:" { uri = $2 }
			tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == s) hit = 1 }
			END { if (!done && uri != "" && hit && deb) print uri }' "$f"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		# "deb [OPTIONS] URI SUITE COMPONENTS..."
		awk -v s="$suite" '$1 == "deb" {
			i = 2
			if ($i ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }
			if ($(i + 1) == s) print $i }' "$f"
	done
}
uri=$(mirror | head -n 1)
[ -n "$uri" ] || die "cleanroom: no '$suite' source in /etc/apt/sources.list{,.d/}"

if ! command -v debootstrap >/dev/null; then
	say "installing debootstrap"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ||
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends debootstrap >/dev/null; } ||
		die "cleanroom: cannot install debootstrap"
fi

unmount_all
[ -z "$(mounts_below)" ] || die "cleanroom: something is still mounted below $root"
if [ "$reuse" = 1 ] && [ -f "$root/.cleanroom-ready" ]; then
	say "reusing the root in $root (SP_CLEANROOM_REUSE=1: its installed packages stay)"
else
	if [ -e "$root" ]; then
		say "deleting the old root $root"
		rm -rf --one-file-system "$root"
	fi
	mkdir -p "$root"
	say "debootstrap --variant=minbase $suite $root $uri"
	keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	ts=$(date +%s)
	quiet debootstrap --variant=minbase ${keyring:+--keyring=$keyring} "$suite" "$root" "$uri" ||
		die "cleanroom: debootstrap failed"
	say "root ready in $(( $(date +%s) - ts ))s: $(du -sh --one-file-system "$root" | cut -f1)"
	touch "$root/.cleanroom-ready"
fi

# The host's apt sources (and the keyrings they name), instead of
# debootstrap's one-line sources.list; and the two apt settings that let
# this host use an archive snapshot whose Release files have expired.
rm -f "$root/etc/apt/sources.list" "$root"/etc/apt/sources.list.d/*
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
	[ -r "$f" ] || continue
	cp "$f" "$root$f"
	for k in $(sed -n 's/^[[:space:]]*Signed-By:[[:space:]]*\(\/[^[:space:]]*\).*/\1/p; s/.*signed-by=\(\/[^] ]*\).*/\1/p' "$f"); do
		[ -e "$root$k" ] || { mkdir -p "$root$(dirname "$k")"; cp "$k" "$root$k"; }
	done
done
apt-config dump Acquire::Check-Valid-Until Acquire::Check-Date |
	sed 's/$/;/; s/;;$/;/' >"$root/etc/apt/apt.conf.d/99cleanroom-host"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# No service may start inside the chroot.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"

# The committed HEAD of this checkout (not its uncommitted changes).
head=$(git -C "$TOP" rev-parse HEAD)
src=/src/superpage
rm -rf --one-file-system "$root$src"
mkdir -p "$root/src"
git clone -q --no-hardlinks --no-checkout "$TOP" "$root$src"
git -C "$root$src" checkout -q --detach "$head"
say "cloned $(git -C "$TOP" log --oneline -1 "$head") into $src"
if [ -n "$(git -C "$TOP" status --porcelain --untracked-files=no)" ]; then
	say "note: $TOP has uncommitted changes; the clean room runs the committed HEAD only"
fi

for d in proc sys dev dev/pts; do
	mkdir -p "$root/$d"
	mount --bind "/$d" "$root/$d"
done
[ -e /dev/kvm ] && say "/dev/kvm is there; harness/accel.sh decides whether KVM boots a guest" ||
	say "no /dev/kvm: the guests run under TCG"

logs=$BUILD/cleanroom
mkdir -p "$logs"
# One command in the chroot, as a fresh root login: a clean environment.
inroot() { # inroot NAME COMMAND
	local name=$1 cmd=$2 ts rc pid
	say "cleanroom: $cmd (log: ${logs#$TOP/}/$name.log)"
	ts=$(date +%s)
	# In the background, so that a signal to this script is handled at
	# once (bash runs traps only between foreground commands): the EXIT
	# trap then stops what runs in the root and unmounts.
	: >"$logs/$name.log"
	chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		/bin/bash -c "cd $src && $cmd" </dev/null >"$logs/$name.log" 2>&1 &
	pid=$!
	tail -n +1 -f --pid=$pid "$logs/$name.log" &
	set +e
	wait $pid
	rc=$?
	wait $!
	set -e
	secs=$(( $(date +%s) - ts ))
	printf '%s\t%d\t%dm%02ds\n' "$cmd" "$rc" $((secs / 60)) $((secs % 60)) >>"$logs/results"
	return "$rc"
}
: >"$logs/results"
rc_demo=skipped rc_test=skipped
if [ -z "$only" ] || [ "$only" = demo ]; then
	rc_demo=0; inroot demo "./run demo" || rc_demo=$?
fi
if [ -z "$only" ] || [ "$only" = test ]; then
	rc_test=0; inroot test "CI=true ./run test" || rc_test=$?
fi
unmount_all

echo
echo "clean room: Debian $(cat "$root/etc/debian_version") minbase from $uri, HEAD $(git -C "$TOP" log --oneline -1 "$head")"
awk -F'\t' '{ printf "  %-22s exit %-3s wall %s\n", $1, $2, $3 }' "$logs/results"
echo "  total $(( ($(date +%s) - t0) / 60 )) min"
[ "$rc_demo" = 0 ] || [ "$rc_demo" = skipped ] || exit 1
[ "$rc_test" = 0 ] || [ "$rc_test" = skipped ] || exit 1
exit 0
