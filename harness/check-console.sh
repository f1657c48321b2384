#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# check-console.sh CONSOLE.LOG: fail (exit 1) if the kernel console shows a
# splat: BUG:, WARNING:, Oops, a lockdep report, KASAN/KFENCE/UBSAN, a
# general protection fault, a hung task or a panic; also the mm reports
# found by their own text: "BUG: Bad rss-counter state" (kernel/fork.c),
# and two that print no "BUG:" at all, "FILE:LINE: bad pte|pmd|pud|p4d|pgd
# PTR(VALUE)" (p?d_ERROR() of arch/x86/include/asm/pgtable_64.h, from
# p?d_clear_bad() in mm/pgtable-generic.c) and "FUNC: Bad|Unused swap
# file|offset entry VALUE" (mm/swapfile.c).  The offending lines are
# printed with a little context.  Exit 0 on a clean log, 2 if it is
# missing.
set -uo pipefail
log=${1:?usage: check-console.sh CONSOLE.LOG}
[ -r "$log" ] || { echo "check-console: no log $log" >&2; exit 2; }
pattern='BUG:|WARNING:|Oops|general protection fault|Kernel panic|'
pattern+='possible circular locking|possible recursive locking|'
pattern+='inconsistent lock state|INFO: possible|DEBUG_LOCKS_WARN_ON|'
pattern+='turning off the locking correctness validator|suspicious RCU usage|'
pattern+='INFO: task .* blocked for more than|'
pattern+='KASAN:|KFENCE:|UBSAN:|kernel BUG at|Unable to handle kernel|'
pattern+='rcu_sched self-detected stall|rcu: INFO:|list_add corruption|'
pattern+='list_del corruption|page dumped because|Bad page state|'
pattern+='watchdog: BUG: soft lockup|refcount_t: |Bad rss-counter|'
pattern+=':[0-9]+: bad (pte|pmd|pud|p4d|pgd) |'
pattern+='(Bad|Unused) swap (file|offset) entry'
hits=$(tr -d '\r' <"$log" | grep -naE -e "$pattern" | grep -vE 'Kernel command line:' || true)
if [ -n "$hits" ]; then
	echo "check-console: kernel splat in $log:" >&2
	echo "$hits" | head -n 20 | sed 's/^/  /' >&2
	first=$(echo "$hits" | head -n 1 | cut -d: -f1)
	echo "check-console: context:" >&2
	tr -d '\r' <"$log" | sed -n "$((first > 5 ? first - 5 : 1)),$((first + 40))p" | sed 's/^/  | /' >&2
	exit 1
fi
exit 0
