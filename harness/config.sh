#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Make the .config of a flavour (config/flavours) in build/obj-<flavour>:
# tinyconfig, then the flavour's fragments merged with the kernel's
# scripts/kconfig/merge_config.sh, then olddefconfig; then check that every
# option a fragment asks for is in the final .config as asked, and fail
# naming the ones that are not (a missing dependency, a renamed option).
# Usage: config.sh [flavour]     (default: test)
# SP_CONFIG_SRC and SP_CONFIG_OBJ configure another tree and object
# directory (harness/series.sh builds every patch in a worktree), and
# SP_CONFIG_CHECK=0 skips the check (patches before CONFIG_SUPERPAGE exists).
. "$(dirname "$0")/lib.sh"
flavour=${1:-test}
obj=${SP_CONFIG_OBJ:-$(objdir "$flavour")}
SRC=${SP_CONFIG_SRC:-$SRC}
frags=$(awk -v f="$flavour" -F': *' '$1 == f { print $2 }' "$TOP/config/flavours")
[ -n "$frags" ] || die "unknown config flavour '$flavour' (see config/flavours)"
paths=()
for f in $frags; do paths+=("$TOP/config/$f"); done

stamp=$obj/.config-inputs
want=$( (cat "${paths[@]}" "$0"; git -C "$SRC" rev-parse HEAD:mm/Kconfig 2>/dev/null;
	 git -C "$SRC" ls-tree -r HEAD -- '*Kconfig*' | sha256sum) | sha256sum | cut -d' ' -f1)
if [ -f "$obj/.config" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	exit 0
fi

mkdir -p "$obj"
say "configuring $flavour: tinyconfig + $frags"
quiet make -C "$SRC" O="$obj" tinyconfig
quiet env KCONFIG_CONFIG="$obj/.config" "$SRC/scripts/kconfig/merge_config.sh" \
	-m -O "$obj" "$obj/.config" "${paths[@]}"
quiet make -C "$SRC" O="$obj" olddefconfig

[ "${SP_CONFIG_CHECK:-1}" = 0 ] ||
	"$TOP/harness/check-config.sh" "$obj/.config" "${paths[@]}"
echo "$want" >"$stamp"
