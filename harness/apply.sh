#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Apply the series to the pristine tree in build/linux, one commit per entry
# of series/ (in name order).  An entry is a directory holding:
#   message   the commit message (subject line, blank line, changelog)
#   files     overlay files this patch adds or changes, one repository path
#             a line; the file comes from the top of the repository (its
#             final version) unless the entry keeps an earlier version of
#             it under overlay/<path>, for a file that later patches change
#   *.patch   hook patches for existing kernel files, applied with git apply
#
# Overlay paths map to the same kernel paths, except
#   Kconfig.superpage -> mm/superpage/Kconfig
# Our MAINTAINERS entry is in no "files" list: after each patch,
# harness/maintainers.py (re)inserts it into the kernel's MAINTAINERS with
# the F: lines that match files present at that point, so that each patch
# that adds files adds them to the entry too (as checkpatch asks).
#
# To keep the build incremental, the tree is rebuilt only when an input
# changed, and files whose content did not change get their old mtime back.
. "$(dirname "$0")/lib.sh"

"$TOP/harness/fetch-base.sh"

kpath() {
	case "$1" in
	Kconfig.superpage) echo mm/superpage/Kconfig ;;
	*) echo "$1" ;;
	esac
}

inputs_hash() {
	(
		cd "$TOP"
		find series -type f | LC_ALL=C sort
		cat base/linux.pin harness/apply.sh harness/maintainers.py MAINTAINERS
		find series -type f | LC_ALL=C sort | xargs cat
		for f in series/*/files; do
			grep -v '^#' "$f" | sed '/^$/d' | while read -r p; do
				echo "$p"; cat "$p"
			done
		done
	) | sha256sum | cut -d' ' -f1
}

stamp=$BUILD/.applied
want=$(inputs_hash)
head=$(git -C "$SRC" rev-parse HEAD)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want $head" ]; then
	exit 0
fi

cd "$SRC"
git config user.name "Superpage Team"
git config user.email "superpage-dev@example.org"
old=$head
declare -A mtime=()
while read -r f; do
	[ -e "$f" ] && mtime[$f]=$(stat -c %Y "$f")
done < <(git diff --name-only pristine "$old")

git reset -q --hard pristine
git clean -q -fdx

applied=0
for entry in "$TOP"/series/*/; do
	[ -f "$entry/message" ] || continue
	name=$(basename "$entry")
	if [ -f "$entry/files" ]; then
		grep -v '^#' "$entry/files" | sed '/^$/d' | while read -r p; do
			from=$TOP/$p
			[ -f "$entry/overlay/$p" ] && from=$entry/overlay/$p
			[ -f "$from" ] || die "$name: overlay file $p is missing"
			k=$(kpath "$p")
			mkdir -p "$(dirname "$k")"
			cp "$from" "$k"
			# -f: Debian's top-level .gitignore ignores everything
			git add -f -- "$k"
		done
	fi
	for p in "$entry"/*.patch; do
		[ -f "$p" ] || continue
		git apply --index --whitespace=error-all "$p" ||
			die "$name: hook patch $(basename "$p") does not apply to $(git describe --tags --always)"
	done
	"$TOP/harness/maintainers.py" "$TOP/MAINTAINERS" MAINTAINERS
	git add -u .
	git commit -q --allow-empty -F "$entry/message"
	applied=$((applied + 1))
done

# The series must end with the final version of every overlay file.
for f in "$TOP"/series/*/files; do
	grep -v '^#' "$f" | sed '/^$/d'
done | sort -u | while read -r p; do
	cmp -s "$TOP/$p" "$(kpath "$p")" ||
		die "the series leaves $(kpath "$p") different from $p: the last entry listing it must use the top-level file"
done

new=$(git rev-parse HEAD)
for f in "${!mtime[@]}"; do
	[ -e "$f" ] || continue
	if [ "$(git rev-parse -q "$old:$f" 2>/dev/null)" = \
	     "$(git rev-parse -q "$new:$f" 2>/dev/null)" ]; then
		touch -m -d "@${mtime[$f]}" "$f"
	fi
done
echo "$want $new" >"$stamp"
say "applied $applied patches on $(git describe --tags pristine) ($(git rev-parse --short HEAD))"
