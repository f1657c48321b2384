#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Apply the series to the pristine tree in build/linux: "git am" of every
# series/NNNN-*.patch on the tag "pristine", one commit per patch, then
# check that the top-level files (new files at their kernel paths, and our
# MAINTAINERS entry) equal what the series made.  The patches are the one
# source of truth; "make edit" and "make export" (harness/edit.sh,
# harness/export.sh) are how they change (README, "Changing a patch").
#
# Work in build/linux that is not in series/ yet (commits or changes made
# after the last apply or export) is never thrown away: when series/ is
# unchanged, it is built as it is, with a warning (an error under CI=true);
# when series/ changed too, apply.sh stops.  SP_FORCE=1 re-applies anyway.
#
# To keep the build incremental, the tree is rebuilt only when an input
# changed, and files whose content did not change get their old mtime back.
. "$(dirname "$0")/lib.sh"

"$TOP/harness/fetch-base.sh"

[ -n "$(series_patches)" ] || die "no series/NNNN-*.patch: nothing to apply"
stamp=$BUILD/.applied
want=$(series_hash)
cd "$SRC"
head=$(git rev-parse HEAD)
dirty=$(git status --porcelain --untracked-files=no)
read -r had_want had_head 2>/dev/null <"$stamp" || had_want= had_head=

if [ -n "$had_head" ] && [ "${SP_FORCE:-0}" != 1 ] &&
   { [ "$head" != "$had_head" ] || [ -n "$dirty" ]; }; then
	# build/linux holds work of its own.
	if [ "$want" != "$had_want" ]; then
		die "series/ changed, and build/linux has commits or changes that are not in it: 'make export' them first, or discard them with SP_FORCE=1"
	fi
	[ "${CI:-}" != true ] ||
		die "build/linux differs from series/ ('make export', or SP_FORCE=1)"
	say "warning: building build/linux with changes that are not in series/ yet ('make export')"
	exit 0
fi

if [ "$want $head" != "$had_want $had_head" ] || [ -n "$dirty" ] ||
   [ "${SP_FORCE:-0}" = 1 ]; then
	declare -A mtime=()
	while read -r f; do
		[ -e "$f" ] && mtime[$f]=$(stat -c %Y "$f")
	done < <(git diff --name-only pristine "$head")

	git reset -q --hard pristine
	git clean -q -fdx
	# The committer of these local commits does not matter; the patches
	# keep their authors.  Set one for machines without a git identity.
	git var GIT_COMMITTER_IDENT >/dev/null 2>&1 ||
		export GIT_COMMITTER_NAME="superpage harness" \
			GIT_COMMITTER_EMAIL="harness@localhost"
	git am -q --whitespace=error-all $(series_patches) || {
		git am --abort 2>/dev/null || true
		die "the series does not apply to $(git describe --tags pristine): see the message above"
	}

	new=$(git rev-parse HEAD)
	for f in "${!mtime[@]}"; do
		[ -e "$f" ] || continue
		if [ "$(git rev-parse -q "$head:$f" 2>/dev/null)" = \
		     "$(git rev-parse -q "$new:$f" 2>/dev/null)" ]; then
			touch -m -d "@${mtime[$f]}" "$f"
		fi
	done
	echo "$want $new" >"$stamp"
	say "applied $(git rev-list --count pristine..HEAD) patches on $(git describe --tags pristine) ($(git rev-parse --short HEAD))"
fi

[ "${SP_APPLY_NOCHECK:-0}" = 1 ] && exit 0
bad=$(check_top)
if [ -n "$bad" ]; then
	printf '%s\n' "$bad" >&2
	die "the top-level files differ from what series/ makes: to change the series, 'make edit' (README, \"Changing a patch\")"
fi
