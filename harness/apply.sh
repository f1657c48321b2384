#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Apply the series to the pristine tree in build/linux, one commit per entry
# of series/ (in name order).  An entry is a directory holding:
#   message   the commit message (subject line, blank line, changelog)
#   files     overlay files this patch adds, one repository path a line
#   *.patch   hook patches for existing kernel files, applied with git apply
#
# Overlay paths map to the same kernel paths, except:
#   Kconfig.superpage -> mm/Kconfig.superpage
#   MAINTAINERS       -> our entry, inserted in order into the kernel's file
#
# To keep the build incremental, the tree is rebuilt only when an input
# changed, and files whose content did not change get their old mtime back.
. "$(dirname "$0")/lib.sh"

"$TOP/harness/fetch-base.sh"

kpath() {
	case "$1" in
	Kconfig.superpage) echo mm/Kconfig.superpage ;;
	*) echo "$1" ;;
	esac
}

inputs_hash() {
	(
		cd "$TOP"
		find series -type f | LC_ALL=C sort
		cat base/linux.pin harness/apply.sh
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

# Insert our MAINTAINERS entry before the first section that sorts after it.
insert_maintainers() {
	python3 - "$TOP/MAINTAINERS" "$SRC/MAINTAINERS" <<'EOF'
import re, sys
ours = open(sys.argv[1]).read().strip('\n').split('\n')
ours = [l for l in ours if not l.startswith('#')]
title = ours[0]
lines = open(sys.argv[2]).read().split('\n')
tag = re.compile(r'^[A-Z]:\t')
for i in range(1, len(lines) - 1):
    if lines[i - 1] == '' and lines[i] and not tag.match(lines[i]) \
       and tag.match(lines[i + 1]) and lines[i] > title \
       and lines[i] != 'THE REST' and i > 100:
        lines[i:i] = ours + ['']
        break
else:
    sys.exit('MAINTAINERS: no place for ' + title)
open(sys.argv[2], 'w').write('\n'.join(lines))
EOF
}

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
			[ -f "$TOP/$p" ] || die "$name: overlay file $p is missing"
			if [ "$p" = MAINTAINERS ]; then
				insert_maintainers
				continue
			fi
			k=$(kpath "$p")
			mkdir -p "$(dirname "$k")"
			cp "$TOP/$p" "$k"
		done
	fi
	for p in "$entry"/*.patch; do
		[ -f "$p" ] || continue
		git apply --index --whitespace=error-all "$p" ||
			die "$name: hook patch $(basename "$p") does not apply to $(git describe --tags --always)"
	done
	git add -A .
	git commit -q --allow-empty -F "$entry/message"
	applied=$((applied + 1))
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
