#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# series.sh [--build-each]: export the series as git format-patch files with
# a cover letter (series/cover-letter) into build/series/, and run
# scripts/checkpatch.pl --strict on every patch: any ERROR, WARNING or CHECK
# fails.  With --build-each, also build the test kernel at every patch of
# the series in turn (a worktree in build/series-tree, objects in
# build/obj-series), to prove that each patch builds on its own; with
# --build-each N, from patch N on (after a change to the last patches).
. "$(dirname "$0")/lib.sh"
"$TOP/harness/apply.sh"
out=$BUILD/series
rm -rf "$out"
mkdir -p "$out"
git -C "$SRC" format-patch -q --cover-letter --subject-prefix="RFC PATCH" \
	--base=pristine -o "$out" pristine..HEAD
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
say "series: $n patches + cover letter in ${out#$TOP/}"

bad=0
for p in "$out"/0*.patch; do
	case "$p" in *0000-cover-letter.patch) continue ;; esac
	res=$(cd "$SRC" && PATH=/usr/bin:$PATH ./scripts/checkpatch.pl --strict --no-color -q "$p" 2>&1 || true)
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
for c in $(git -C "$SRC" rev-list --reverse pristine..HEAD | tail -n +"$first"); do
	git -C "$tree" checkout -q --detach "$c"
	subj=$(git -C "$tree" log -1 --format=%s)
	say "building at: $subj"
	frags=$(awk -F': *' '$1 == "test" { print $2 }' "$TOP/config/flavours")
	paths=()
	for f in $frags; do paths+=("$TOP/config/$f"); done
	quiet make -C "$tree" O="$obj" tinyconfig
	quiet env KCONFIG_CONFIG="$obj/.config" "$tree/scripts/kconfig/merge_config.sh" \
		-m -O "$obj" "$obj/.config" "${paths[@]}"
	quiet make -C "$tree" O="$obj" olddefconfig
	make -C "$tree" O="$obj" -j"$JOBS" -s bzImage >"$obj/build.log" 2>&1 ||
		{ tail -n 40 "$obj/build.log" >&2; die "build failed at: $subj"; }
	if grep -q 'warning:' "$obj/build.log"; then
		grep 'warning:' "$obj/build.log" >&2
		die "build warnings at: $subj"
	fi
	echo "builds: $subj"
done
say "every patch of the series builds"
