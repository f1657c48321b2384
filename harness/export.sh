#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make export: write the commits of build/linux (pristine..HEAD) back to
# series/ as git format-patch files, and the files they add back to the
# top of the repository, with our MAINTAINERS entry; the inverse of
# harness/apply.sh.  Refuses while build/linux has uncommitted changes.
# The stored patches carry no Signed-off-by: "make series" adds the
# exporter's (README, "Changing a patch").
. "$(dirname "$0")/lib.sh"

cd "$SRC"
git rev-parse -q --verify pristine >/dev/null || die "no build/linux: run 'make edit' first"
[ -z "$(git status --porcelain --untracked-files=no)" ] ||
	die "build/linux has uncommitted changes: commit them (git commit --fixup=...) first"
n=$(git rev-list --count pristine..HEAD)
[ "$n" -gt 0 ] || die "build/linux has no commits on pristine"
if git log --format=%B pristine..HEAD | grep -q '^Signed-off-by:'; then
	die "a commit has a Signed-off-by line: the stored series carries none ('make series' adds it)"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git format-patch -q -N --zero-commit --no-signature -o "$tmp" pristine..HEAD
rm -f "$TOP"/series/[0-9][0-9][0-9][0-9]-*.patch
cp "$tmp"/*.patch "$TOP/series/"

# The top-level files: what the series adds, at top-level paths.
for f in $(top_files); do
	[ -f "$SRC/$(kpath "$f")" ] || { rm -f "$TOP/$f"; echo "removed $f"; }
done
for k in $(series_added); do
	f=$(toppath "$k")
	if ! cmp -s "$SRC/$k" "$TOP/$f" 2>/dev/null; then
		mkdir -p "$(dirname "$TOP/$f")"
		cp "$SRC/$k" "$TOP/$f"
		echo "updated $f"
	fi
done
maintainers_entry >"$tmp/entry"
cmp -s "$tmp/entry" "$TOP/MAINTAINERS" || { cp "$tmp/entry" "$TOP/MAINTAINERS"; echo "updated MAINTAINERS"; }

# The stored patches make exactly the tree of build/linux (checked in a
# scratch index), which is then what apply.sh has applied.
export GIT_INDEX_FILE=$tmp/index
git read-tree pristine
for p in $(series_patches); do
	git apply --cached --whitespace=error-all "$p" || die "exported $(basename "$p") does not apply"
done
[ "$(git write-tree)" = "$(git rev-parse "HEAD^{tree}")" ] ||
	die "the exported series does not make the tree of build/linux"
unset GIT_INDEX_FILE
echo "$(series_hash) $(git rev-parse HEAD)" >"$BUILD/.applied"
say "exported $n patches to series/"
git -C "$TOP" status --short -- series MAINTAINERS $(cd "$TOP" && top_files) | cat
