#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make edit: make build/linux the place to change the series.  Applies
# series/ as one commit per patch (if it is not applied yet), then copies
# every top-level file that differs from the tree into it, uncommitted, so
# that edits made at the top of the repository show in "git status" there.
# Commit them as fixups of the patches they belong to, squash with
# "git rebase -i --autosquash pristine", then "make export" (README,
# "Changing a patch").
. "$(dirname "$0")/lib.sh"

SP_APPLY_NOCHECK=1 "$TOP/harness/apply.sh"
n=0
for f in $(top_files); do
	k=$(kpath "$f")
	if ! cmp -s "$TOP/$f" "$SRC/$k" 2>/dev/null; then
		mkdir -p "$(dirname "$SRC/$k")"
		cp "$TOP/$f" "$SRC/$k"
		n=$((n + 1))
	fi
done
if ! maintainers_entry | cmp -s - <(grep -v '^#' "$TOP/MAINTAINERS"); then
	"$TOP/harness/maintainers.py" "$TOP/MAINTAINERS" "$SRC/MAINTAINERS"
	n=$((n + 1))
fi
cd "$SRC"
say "build/linux: $(git rev-list --count pristine..HEAD) patches on pristine; $n top-level file(s) copied in"
git log --oneline --reverse pristine..HEAD | cat
git status --short --untracked-files=no | cat
cat <<'TXT'
Next (in build/linux): git commit --fixup=<commit> for each change, then
  git rebase -i --autosquash pristine ; make -C ../.. export
(new files: git add -f, as Debian's .gitignore ignores everything)
TXT
