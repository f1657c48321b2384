# SPDX-License-Identifier: GPL-2.0
# Common settings for the harness scripts.  Sourced, never run.
#
# Layout of the (git-ignored) build directory:
#   build/dl/            the downloaded .deb and the tarball taken out of it
#   build/linux/         the kernel source as a git tree: tag "pristine", then
#                        one commit per patch of series/ (harness/apply.sh;
#                        make edit / make export, see README)
#   build/obj-<flavour>/ out-of-tree object directory (O=) per config flavour
#   build/bzImage        the image of the last "make kernel"
#   build/selftests/     static test binaries for the guest
#   build/logs/          console and TAP logs of guest runs

set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
SRC=$BUILD/linux
DL=$BUILD/dl
LOGS=$BUILD/logs
JOBS=${JOBS:-$(nproc)}
ARCH=x86_64
export ARCH

# shellcheck source=../base/linux.pin
. "$TOP/base/linux.pin"

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

objdir() { echo "$BUILD/obj-${1:-test}"; }

# The image a flavour's build leaves: build/bzImage for the test flavour,
# build/bzImage-<flavour> for the others.
kimage() {
	if [ "${1:-test}" = test ]; then echo "$BUILD/bzImage"; else echo "$BUILD/bzImage-$1"; fi
}

# Run a command quietly, showing its output only when it fails.
quiet() {
	local log
	log=$(mktemp)
	if ! "$@" >"$log" 2>&1; then
		tail -n 60 "$log" >&2
		rm -f "$log"
		return 1
	fi
	rm -f "$log"
}

# The series and the top-level files.  series/NNNN-*.patch (git
# format-patch files) are the one source of truth; the files that the
# series adds are also kept at the top of the repository, at their kernel
# paths (Kconfig.superpage for mm/superpage/Kconfig), and harness/apply.sh
# checks that they equal what the series makes.  Our MAINTAINERS entry is
# the top-level MAINTAINERS.
series_patches() { ls "$TOP"/series/[0-9][0-9][0-9][0-9]-*.patch 2>/dev/null; }
kpath() {
	case "$1" in
	Kconfig.superpage) echo mm/superpage/Kconfig ;;
	*) echo "$1" ;;
	esac
}
toppath() {
	case "$1" in
	mm/superpage/Kconfig) echo Kconfig.superpage ;;
	*) echo "$1" ;;
	esac
}
# Top-level files that mirror files of the series (tracked or not).
top_files() {
	git -C "$TOP" ls-files --cached --others --exclude-standard -- \
		Kconfig.superpage mm include arch tools Documentation |
		grep -v '/\.gitkeep$' | LC_ALL=C sort -u
}
# What the applied tree depends on (harness/apply.sh's stamp).
series_hash() {
	(
		cd "$TOP"
		cat base/linux.pin harness/apply.sh
		for p in $(series_patches); do
			basename "$p"
			cat "$p"
		done
	) | sha256sum | cut -d' ' -f1
}
# Files that the series adds to the kernel tree, at kernel paths.
series_added() {
	git -C "$SRC" diff --name-only --diff-filter=A pristine HEAD | LC_ALL=C sort
}
# Our MAINTAINERS entry as it stands in the kernel tree's MAINTAINERS.
maintainers_entry() {
	awk -v t="$(head -n1 "$TOP/MAINTAINERS")" '$0 == t { on = 1 } on && $0 == "" { exit } on' \
		"$SRC/MAINTAINERS"
}
# Compare the top-level files with the tree; print one line per difference.
check_top() {
	local f k
	for f in $(top_files); do
		k=$(kpath "$f")
		if [ ! -f "$SRC/$k" ]; then
			echo "$f: at the top, not in the series"
		elif ! cmp -s "$TOP/$f" "$SRC/$k"; then
			echo "$f: differs from the series"
		fi
	done
	for k in $(series_added); do
		[ -f "$TOP/$(toppath "$k")" ] || echo "$(toppath "$k"): in the series, not at the top"
	done
	maintainers_entry | cmp -s - <(grep -v '^#' "$TOP/MAINTAINERS") ||
		echo "MAINTAINERS: the entry differs from the series"
}

