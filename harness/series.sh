#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# series.sh [--build-each [N]]: write the series for posting into
# build/series/: git format-patch of build/linux (pristine..HEAD, as
# harness/apply.sh made it from series/), numbered, with the cover letter
# (series/cover-letter) and a Signed-off-by of the exporter's git identity
# (git var GIT_AUTHOR_IDENT, so GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL
# work); then scripts/checkpatch.pl --strict on every patch: any ERROR,
# WARNING or CHECK fails (but an unknown commit id, below).  With
# --build-each, also build the test kernel at every patch in turn (a
# worktree in build/series-tree, objects in build/obj-series, configured
# by harness/config.sh), to prove that each patch builds on its own,
# without warnings; --build-each N starts at patch N.
. "$(dirname "$0")/lib.sh"
"$TOP/harness/apply.sh"
[ -z "$(git -C "$SRC" status --porcelain --untracked-files=no)" ] &&
	[ "$(cut -d' ' -f2 "$BUILD/.applied")" = "$(git -C "$SRC" rev-parse HEAD)" ] ||
	die "build/linux differs from series/: 'make export' first"

ident=$(git -C "$TOP" var GIT_AUTHOR_IDENT) ||
	die "no git identity: set user.name and user.email (or GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL)"
who=$(printf '%s\n' "$ident" | sed 's/ [0-9]* [-+][0-9]*$//')
case "$who" in
*@example.org\>|*@localhost\>|*'(none)'*) die "not an identity to sign off with: $who" ;;
esac

out=$BUILD/series
rm -rf "$out"
mkdir -p "$out"
git -C "$SRC" format-patch -q --cover-letter --subject-prefix="RFC PATCH" \
	--no-signature --base=pristine --from="$who" -o "$out" pristine..HEAD
for p in "$out"/0*.patch; do
	case "$p" in *0000-cover-letter.patch) continue ;; esac
	git -C "$SRC" interpret-trailers --in-place --if-exists addIfDifferent \
		--trailer "Signed-off-by: $who" "$p"
done
python3 - "$out"/0000-cover-letter.patch "$TOP/series/cover-letter" <<'PY'
import sys
path, src = sys.argv[1], sys.argv[2]
text = open(src).read().split('\n')
text = [l for l in text if not l.startswith('#')]
subject, body = text[0], '\n'.join(text[1:]).strip('\n')
s = open(path).read()
s = s.replace('*** SUBJECT HERE ***', subject).replace('*** BLURB HERE ***', body)
open(path, 'w').write(s)
PY
n=$(ls "$out"/0*.patch | grep -vc 0000-cover-letter)
say "series: $n patches + cover letter in ${out#$TOP/}, signed off by $who"

bad=0
for p in "$out"/0*.patch; do
	case "$p" in *0000-cover-letter.patch) continue ;; esac
	# build/linux has one commit of history (pristine): every upstream
	# commit that a Fixes: tag names is unknown to it.
	res=$(cd "$SRC" && PATH=/usr/bin:$PATH ./scripts/checkpatch.pl --strict --no-color -q \
		--ignore UNKNOWN_COMMIT_ID "$p" 2>&1 || true)
	if [ -n "$res" ]; then
		echo "checkpatch: $(basename "$p"):" >&2
		echo "$res" | sed 's/^/  /' >&2
		bad=1
	else
		echo "checkpatch --strict: $(basename "$p"): clean"
	fi
done
[ $bad -eq 0 ] || die "checkpatch found problems"

[ "${1:-}" = --build-each ] || exit 0
tree=$BUILD/series-tree
obj=$BUILD/obj-series
if [ ! -d "$tree" ]; then
	git -C "$SRC" worktree prune
	git -C "$SRC" worktree add -q --detach "$tree" pristine
fi
mkdir -p "$obj"
first=${2:-1}
i=0
for c in $(git -C "$SRC" rev-list --reverse pristine..HEAD); do
	i=$((i + 1))
	[ "$i" -ge "$first" ] || continue
	git -C "$tree" checkout -q --detach "$c"
	subj=$(git -C "$tree" log -1 --format=%s)
	say "building at $i/$n: $subj"
	SP_CONFIG_SRC=$tree SP_CONFIG_OBJ=$obj SP_CONFIG_CHECK=0 "$TOP/harness/config.sh" test
	make -C "$tree" O="$obj" -j"$JOBS" -s bzImage >"$obj/build.log" 2>&1 ||
		{ tail -n 40 "$obj/build.log" >&2; die "build failed at $i: $subj"; }
	if grep -q 'warning:' "$obj/build.log"; then
		grep 'warning:' "$obj/build.log" >&2
		die "build warnings at $i: $subj"
	fi
	echo "builds: $i/$n $subj"
done
say "every patch of the series builds"
