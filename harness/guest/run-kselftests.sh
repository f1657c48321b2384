#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# run-kselftests.sh COLLECTION DIR: run every test binary in DIR as one
# kselftest collection and print TAP as the kselftest runner does: each
# binary's own TAP output indented with "# ", then
# "ok N selftests: COLLECTION: NAME" (or "not ok", or "# SKIP" for exit 4).
# A "timeout=" line in DIR/settings bounds each binary (default 300 s).
# Exit status: 1 if any binary failed, else 0.
coll=$1
dir=$2
timeout=300
[ -f "$dir/settings" ] && timeout=$(sed -n 's/^timeout=//p' "$dir/settings")
tests=
for f in "$dir"/*; do
	[ -f "$f" ] && [ -x "$f" ] && tests="$tests ${f##*/}"
done
n=$(echo $tests | wc -w)
echo "TAP version 13"
echo "1..$n"
i=0
fail=0
for t in $tests; do
	i=$((i + 1))
	echo "# selftests: $coll: $t"
	(cd "$dir" && timeout "$timeout" "./$t") >/tmp/ksft.out 2>&1
	rc=$?
	sed 's/^/# /' /tmp/ksft.out
	case $rc in
	0) echo "ok $i selftests: $coll: $t" ;;
	4) echo "ok $i selftests: $coll: $t # SKIP" ;;
	124|143) echo "not ok $i selftests: $coll: $t # TIMEOUT $timeout seconds"; fail=1 ;;
	*) echo "not ok $i selftests: $coll: $t # exit=$rc"; fail=1 ;;
	esac
done
exit $fail
