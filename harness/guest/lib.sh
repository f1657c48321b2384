# SPDX-License-Identifier: GPL-2.0
# lib.sh: what the guest jobs share.  Sourced (". /guest/lib.sh" from
# /init, ". "$(dirname "$0")/lib.sh"" from a job), never run.  POSIX sh
# for busybox ash: it sets no shell option and defines only sp_*
# functions and SP_* variables.  A function that fails returns non-zero
# (sp_knob also says why, on a "# ..." line); whether that fails the job
# is the caller's business.
#
#   SP_CMDLINE=FILE   the kernel command line (default /proc/cmdline; for
#                     testing these functions on the host with a fake one)

SP_CMDLINE=${SP_CMDLINE:-/proc/cmdline}

# sp_cmdline_get KEY [DEFAULT]: print the value of the last sp.KEY=VALUE on
# the kernel command line, else DEFAULT (else nothing).  A subshell, with
# globbing off: it leaves no variable behind.
sp_cmdline_get() (
	set -f
	v=${2-}
	# shellcheck disable=SC2013 # words, not lines
	for arg in $(cat "$SP_CMDLINE"); do
		case "$arg" in
		"sp.$1="*) v=${arg#"sp.$1="} ;;
		esac
	done
	printf '%s\n' "$v"
)

# sp_meminfo FIELD: print FIELD's value in /proc/meminfo as it is written
# there ("3014500 kB").
sp_meminfo() {
	sed -n "s/^$1: *//p" /proc/meminfo
}

# sp_env [PART]...: print the job's environment for the host's logs (the
# host's mm-selftests report copies them):
#   # env: kernel RELEASE; N CPUs; MEMTOTAL RAM[; PART]...
#   # cmdline: THE KERNEL COMMAND LINE
sp_env() (
	line="# env: kernel $(uname -r); $(nproc) CPUs; $(sp_meminfo MemTotal) RAM"
	for part in "$@"; do
		line="$line; $part"
	done
	printf '%s\n' "$line"
	echo "# cmdline: $(cat "$SP_CMDLINE")"
)

# sp_knob FILE VALUE: write VALUE to the sysctl or sysfs file FILE.  If the
# write fails, say "# cannot write VALUE to FILE" and return 1.
sp_knob() {
	echo "$2" >"$1" 2>/dev/null && return 0
	echo "# cannot write $2 to $1"
	return 1
}

# sp_zram_swap SIZE: SIZE of swap (zram's syntax: 1G, 512M) on /dev/zram0,
# at swapon's default priority; nothing to do when zram0 is swap already.
# Status 0: the swap is on; 1: a step failed; 2: the kernel has no zram0
# (a caller to which swap is optional tells 2 from 1).  The caller says
# what it means for the job.
sp_zram_swap() {
	grep -q zram0 /proc/swaps 2>/dev/null && return 0
	[ -e /sys/block/zram0/disksize ] || return 2
	echo "$1" >/sys/block/zram0/disksize &&
		mkswap /dev/zram0 >/dev/null &&
		swapon /dev/zram0 && return 0
	return 1
}
