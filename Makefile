# SPDX-License-Identifier: GPL-2.0
# Entry points of the superpage harness.  Everything is built in build/
# (git-ignored); see README.  ./run TARGET installs the packages first.

H := harness

.PHONY: all kernel kernel-sanitizer kernel-stock kernel-bench test demo shell \
	mm-selftests mm-selftests-sanitizer bench bench-short stress stress-short \
	series series-build check-detector cleanroom apply edit export \
	clean \
	distclean

all: kernel

# Apply the series to the pinned base and build build/bzImage (test config).
kernel:
	@$(H)/build-kernel.sh test

kernel-sanitizer:
	@$(H)/build-kernel.sh sanitizer

# The same test kernel without CONFIG_SUPERPAGE, for baselines.
kernel-stock:
	@$(H)/build-kernel.sh stock

# The test kernel without its debugging options, for benchmarks.
kernel-bench:
	@$(H)/build-kernel.sh bench

apply:
	@$(H)/apply.sh

# Change the series (README, "Changing a patch"): "edit" applies it as
# commits in build/linux and copies in top-level edits; "export" writes
# the commits back to series/*.patch and the top-level files.
edit:
	@$(H)/edit.sh

export:
	@$(H)/export.sh

# The README's test command: build, boot, run the superpage kselftests.
test:
	@$(H)/test.sh

# The README's main job: boot, switch superpages on, run a demo workload.
demo:
	@$(H)/demo.sh

# An interactive guest shell on the test kernel (Ctrl-A x quits).
shell:
	@$(H)/shell.sh

# The kernel's own tools/testing/selftests/mm suite in the guest.
mm-selftests:
	@$(H)/mm-selftests.sh

# The same suite on the sanitizer kernel, with superpages on.
mm-selftests-sanitizer:
	@SP_FLAVOUR=sanitizer SP_SUPERPAGE=2 $(H)/mm-selftests.sh

# Every workload under every memory mode in one boot, on the bench kernel:
# bench/results/ (CSV, table.md, plots).  bench-short: small sizes, a few
# minutes, into build/bench-short/.
bench:
	@$(H)/bench.sh full

bench-short:
	@$(H)/bench.sh short

# The sanitizer kernel under trinity, stress-ng and the data-integrity soak
# for 30 minutes (stress-short: 2 minutes).
stress:
	@$(H)/stress.sh 1800

stress-short:
	@$(H)/stress.sh 120

# Export the series (git format-patch + cover letter) and checkpatch it.
series:
	@$(H)/series.sh

# As "series", then build the kernel at every patch of the series.
series-build:
	@$(H)/series.sh --build-each

# Prove the console splat detector on recorded console logs.
check-detector:
	@$(H)/tests/check-console-test.sh

# The README's two commands in a fresh Debian 12 minbase chroot (root;
# SP_CLEANROOM_DIR, SP_CLEANROOM_REUSE=1): about 30 minutes or more.
cleanroom:
	@$(H)/cleanroom.sh

clean:
	rm -rf build/obj-* build/selftests build/logs build/*.cpio build/bzImage*

distclean:
	rm -rf build
