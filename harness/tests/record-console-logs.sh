#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Record the console logs that harness/tests/check-console-test.sh checks:
# one clean boot of the test kernel running the demo job, and one boot per
# splat provoked through LKDTM (CONFIG_LKDTM in config/test.config).  Run
# by hand after a change to the console format or to the detector; the logs
# are committed under harness/tests/console/.
. "$(dirname "$0")/../lib.sh"
"$TOP/harness/build-kernel.sh" test
"$TOP/harness/build-guest-tools.sh"
initrd=$BUILD/initramfs-record.cpio
"$TOP/harness/initramfs.sh" "$initrd" "$BUILD/guest-bin=guest"
dest=$TOP/harness/tests/console
mkdir -p "$dest"
"$TOP/harness/run-guest.sh" --initrd "$initrd" --job demo --name rec-clean --mem 1G --timeout 300
cp "$LOGS/rec-clean.console.log" "$dest/clean-demo-boot.log"
for t in WARNING BUG EXCEPTION SPINLOCKUP; do
	"$TOP/harness/run-guest.sh" --initrd "$initrd" --job splat --name "rec-$t" \
		--mem 1G --timeout 90 --append "sp.splat=$t" || true
	tr -d '\r' <"$LOGS/rec-$t.console.log" >"$dest/splat-lkdtm-$(echo "$t" | tr A-Z a-z).log"
done
ls -l "$dest"
