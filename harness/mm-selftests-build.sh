#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# mm-selftests-build.sh: the first piece of "make mm-selftests"
# (harness/mm-selftests.sh, which documents the environment): the kernel
# the guests boot (SP_KERNEL, or the SP_FLAVOUR kernel built here), the
# list of runs (harness/mm-selftests.list less what SP_MM_FILTER leaves
# out), the tools/testing/selftests/mm binaries they need, built static
# from a private copy of the sources, and the initramfs with them, all in
# build/mm-selftests/ (harness/mm-selftests-common.sh).
# shellcheck source-path=SCRIPTDIR source=mm-selftests-common.sh
. "$(dirname "$0")/mm-selftests-common.sh"
"$TOP/harness/deps.sh"

list=$TOP/harness/mm-selftests.list
mkdir -p "$mmb"

# The kernel: a private copy, so that a concurrent rebuild cannot change it
# under the guest.
if [ -n "${SP_KERNEL:-}" ]; then
	kernel=$SP_KERNEL
else
	"$TOP/harness/build-kernel.sh" "$flavour"
	kernel=$(kimage "$flavour")
fi
[ -f "$kernel" ] || die "no kernel image $kernel"
[ "$(realpath "$kernel")" = "$(realpath -m "$mmb/bzImage")" ] ||
	cp "$kernel" "$mmb/bzImage"

# The sources: the selftests, the tools headers and mm/gup_test.h, copied
# out of the kernel tree, which is only read.
say "copying the mm selftests sources to ${mmb#$TOP/}/src"
src=$mmb/src
mkdir -p "$src"
(cd "$SRC" && rsync -a --delete --relative tools/include tools/arch/x86/include \
	tools/testing/selftests/lib.mk tools/testing/selftests/kselftest.h \
	tools/testing/selftests/kselftest_harness.h tools/testing/selftests/kselftest \
	tools/testing/selftests/mm tools/testing/selftests/x86 mm/gup_test.h "$src/")
mm=$src/tools/testing/selftests/mm
# The 6.12 khugepaged.c uses KSFT_SKIP without including kselftest.h (fixed
# upstream later); include it in our copy only.
grep -q '"../kselftest.h"' "$mm/khugepaged.c" ||
	sed -i 's|^#include "vm_util.h"|#include "../kselftest.h"\n#include "vm_util.h"|' \
		"$mm/khugepaged.c"

# The UAPI headers: those of the test kernel's object directory when
# harness/build-selftests.sh made them, else "make headers" on a copy of
# the files it needs, with our own O=.
hdr=$mmb/usr/include
mkdir -p "$hdr"
if [ -d "$(objdir test)/usr/include/linux" ]; then
	rsync -a --delete "$(objdir test)/usr/include/" "$hdr/"
else
	say "making the UAPI headers in ${mmb#$TOP/}/linux"
	mkdir -p "$mmb/linux"
	(cd "$SRC" && rsync -a --delete --relative Makefile Kbuild Kconfig scripts \
		include arch/x86 usr tools/include tools/arch/x86 tools/scripts \
		"$mmb/linux/")
	quiet make -C "$mmb/linux" O="$mmb/obj" headers
	rsync -a --delete "$mmb/obj/usr/include/" "$hdr/"
fi

# The runs: the list, less the runs SP_MM_FILTER leaves out.
grep -v -E '^[[:space:]]*(#|$)' "$list" |
	awk -v re="${SP_MM_FILTER:-}" '{
		cmd = $4; for (i = 5; i <= NF; i++) cmd = cmd " " $i
		if (re == "" || cmd ~ re) print
	}' >"$runs"
[ -s "$runs" ] || die "no run of ${list#$TOP/} matches SP_MM_FILTER=${SP_MM_FILTER:-}"
mapfile -t bins < <(awk '{ print $4 }' "$runs" | sort -u)

say "building ${#bins[@]} mm selftests (static)"
bin=$mmb/bin
rm -rf "$bin"
mkdir -p "$bin"
quiet make -C "$mm" -j"$JOBS" OUTPUT="$bin" KHDR_INCLUDES="-isystem $hdr" \
	LDFLAGS=-static "${bins[@]/#/$bin/}"
cp "$runs" "$bin/mm-selftests.list"

"$TOP/harness/initramfs.sh" "$initrd" "$bin=selftests/mm"
