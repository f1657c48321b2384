# SPDX-License-Identifier: GPL-2.0
# Common settings for the harness scripts.  Sourced, never run.
#
# Layout of the (git-ignored) build directory:
#   build/dl/            the downloaded .deb and the tarball taken out of it
#   build/linux/         the kernel source as a git tree: tag "pristine", then
#                        one commit per entry of series/ (harness/apply.sh)
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
