#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The mm-selftests job: run the kernel's own tools/testing/selftests/mm
# binaries (static, in /selftests/mm, with the host's list of runs in
# /selftests/mm/mm-selftests.list) and print TAP as run-kselftests.sh does:
# each run's output indented with "# ", then "ok N mm: NAME" (or "not ok",
# or "# SKIP" for exit 4).  busybox has no bash, so run_vmtests.sh cannot be
# used; the list gives each run the arguments run_vmtests.sh would.
#
# The kernel command line says what to run and how:
#   sp.mmgroup=G     run the list's entries of group G (default: main)
#   sp.mmfirst=N     number the first run N (default 1)
#   sp.superpage=M   write M to vm.superpage_enabled before the first run
#   sp.mmscale=N     multiply every run's timeout by N (sanitizer kernel)
# Before the runs: 1 GiB of swap on zram, 128 hugetlb pages.
# A run flagged "rerun" in the list that fails is run once more; its line
# then says "# rerun" and the first exit status.
. "$(dirname "$0")/lib.sh"
dir=/selftests/mm
list=$dir/mm-selftests.list
group=$(sp_cmdline_get mmgroup main)
first=$(sp_cmdline_get mmfirst 1)
superpage=$(sp_cmdline_get superpage)
scale=$(sp_cmdline_get mmscale 1)

setup_failed=0
setup() { # setup DESCRIPTION COMMAND...: run a set-up step, report a failure
	desc=$1
	shift
	if ! "$@"; then
		echo "# setup failed: $desc"
		setup_failed=1
	fi
}

hugetlb_pages() {
	sp_knob /proc/sys/vm/nr_hugepages 128 &&
		[ "$(cat /proc/sys/vm/nr_hugepages)" -eq 128 ]
}

superpage_mode() {
	[ -e /proc/sys/vm/superpage_enabled ] &&
		sp_knob /proc/sys/vm/superpage_enabled "$superpage"
}

# The THP knobs the tests change; they restore them themselves, except when
# they die (timeout, crash), so put them back after a failed run.
thp=/sys/kernel/mm/transparent_hugepage
thp_knobs="enabled defrag shmem_enabled use_zero_page khugepaged/defrag
	khugepaged/max_ptes_none khugepaged/max_ptes_swap khugepaged/max_ptes_shared
	khugepaged/pages_to_scan khugepaged/scan_sleep_millisecs
	khugepaged/alloc_sleep_millisecs"
thp_value() { # the selected value of a knob: "always [madvise] never" -> madvise
	v=$(cat "$thp/$1" 2>/dev/null) || return
	case "$v" in
	*\[*) v=${v#*\[}; v=${v%%\]*} ;;
	esac
	echo "$v"
}
thp_save() {
	mkdir -p /tmp/thp-saved
	for k in $thp_knobs; do
		thp_value "$k" >"/tmp/thp-saved/${k##*/}"
	done
}
thp_restore() {
	for k in $thp_knobs; do
		[ -s "/tmp/thp-saved/${k##*/}" ] &&
			cat "/tmp/thp-saved/${k##*/}" >"$thp/$k" 2>/dev/null
	done
}

setup "1 GiB of swap on zram" sp_zram_swap 1G
setup "128 hugetlb pages" hugetlb_pages
[ -n "$superpage" ] && setup "vm.superpage_enabled=$superpage" superpage_mode
thp_save

sp=none
[ -e /proc/sys/vm/superpage_enabled ] && sp=$(cat /proc/sys/vm/superpage_enabled)
sp_env "$(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l) NUMA nodes" \
	"swap $(sp_meminfo SwapTotal)" \
	"hugetlb pages $(cat /proc/sys/vm/nr_hugepages)" \
	"THP $(thp_value enabled), shmem $(thp_value shmem_enabled)" \
	"vm.superpage_enabled $sp"
[ $setup_failed -eq 0 ] || exit 1

# run_one CMD...: run one test binary of $dir with the timeout $tmo, its
# output indented on stdout; sets rc.
run_one() {
	b=$1
	shift
	{
		(cd "$dir" && exec timeout -k 10 "$tmo" "./$b" "$@") </dev/null 2>&1
		echo $? >/tmp/mm-selftests.rc
	} | sed 's/^/# /'
	rc=$(cat /tmp/mm-selftests.rc)
}

n=$((first - 1))
fail=0
while read -r grp tmo flags cmd; do
	case "$grp" in
	''|\#*) continue ;;
	esac
	[ "$grp" = "$group" ] || continue
	tmo=$((tmo * scale))
	n=$((n + 1))
	echo "# selftests: mm: $cmd"
	start=$(date +%s)
	# $cmd holds the binary and its arguments, split at blanks on purpose.
	# shellcheck disable=SC2086
	run_one $cmd
	note=
	case "$rc" in
	0|4) ;;
	*)
		thp_restore
		if [ "$flags" = rerun ]; then
			echo "# selftests: mm: $cmd: exit=$rc, running it once more"
			note=" # rerun after exit=$rc"
			# shellcheck disable=SC2086
			run_one $cmd
			case "$rc" in
			0|4) ;;
			*) thp_restore ;;
			esac
		fi
		;;
	esac
	echo "# selftests: mm: $cmd: exit=$rc in $(( $(date +%s) - start ))s"
	case "$rc" in
	0) echo "ok $n mm: $cmd$note" ;;
	4) echo "ok $n mm: $cmd # SKIP$note" ;;
	124|137|143) echo "not ok $n mm: $cmd # TIMEOUT $tmo seconds$note"; fail=1 ;;
	*) echo "not ok $n mm: $cmd # exit=$rc$note"; fail=1 ;;
	esac
done <"$list"
exit $fail
