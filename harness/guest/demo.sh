#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demo job: run a small workload with superpages off and on, and show
# the vm.superpage_* settings and the superpage counters of /proc/vmstat.
. "$(dirname "$0")/lib.sh"
counters() {
	c=$(grep -E '^(nr_)?superpage' /proc/vmstat)
	if [ -n "$c" ]; then echo "$c"; else echo "(no superpage counters in this kernel yet)"; fi
}
echo "kernel: $(uname -r)"
echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
if [ ! -e /proc/sys/vm/superpage_enabled ]; then
	echo "vm.superpage_enabled is missing: kernel built without CONFIG_SUPERPAGE"
	exit 1
fi
for mode in 0 2; do
	echo "--- vm.superpage_enabled=$mode"
	sp_knob /proc/sys/vm/superpage_enabled $mode || exit 1
	echo "vm.superpage_enabled = $(cat /proc/sys/vm/superpage_enabled)"
	/guest/sp_demo 64 4 || exit 1
	/guest/sp_demo 64 64 || exit 1
	echo "/proc/vmstat superpage counters:"
	counters
done
echo 0 >/proc/sys/vm/superpage_enabled
