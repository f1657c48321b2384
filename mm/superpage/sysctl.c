// SPDX-License-Identifier: GPL-2.0
/*
 * Reservation-based transparent superpages: the vm.superpage_* sysctls.
 *
 * What this file does
 *   It registers /proc/sys/vm/superpage_enabled and keeps the static key
 *   superpage_enabled_key in step with it, so that every hook in the fault
 *   path costs one patched jump while the feature is off; it starts the
 *   ksuperpaged daemon when the feature is switched on and stops it when it
 *   is switched off.  It also registers the daemon's tunables,
 *   vm.superpage_promote_threshold, vm.superpage_scan_sleep_millisecs and
 *   vm.superpage_pages_to_scan, the fault path's
 *   vm.superpage_cluster_max_order and vm.superpage_fault_zero_pages, and
 *   reclaim's switch,
 *   vm.superpage_demote_on_reclaim.
 *
 * Invariants
 *   - sysctl_superpage_enabled is always one of enum superpage_mode
 *     (0, 1 or 2): proc_dointvec_minmax() rejects anything else with
 *     -EINVAL before it stores, so a bad write changes nothing.
 *   - superpage_enabled_key is enabled if and only if
 *     sysctl_superpage_enabled != SUPERPAGE_OFF, except for the instant
 *     between the store and the key update below, during which readers see
 *     the key as it was (superpage_mode() reads the key first).
 *   - ksuperpaged, ksuperpage_zerod (prezero.c) and ksuperpage_zahd
 *     (zero.c) run while the feature is on: they are started before the
 *     key is enabled (so a failure to start them changes nothing) and
 *     stopped after the key is disabled, which empties the pool of zeroed
 *     frames and drops the requests to zero ahead.
 *   - Every tunable stays within its documented range: the handlers
 *     reject other values with -EINVAL and store nothing.
 *
 * Locking
 *   superpage_sysctl_mutex serialises writers of sysctl_superpage_enabled
 *   and of superpage_enabled_key.  Readers take no lock: they read the key,
 *   then the value with READ_ONCE().  The tunables are single words that
 *   readers sample with READ_ONCE().
 */
#include <linux/init.h>
#include <linux/jump_label.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/superpage.h>
#include <linux/sysctl.h>

#include "internal.h"

DEFINE_STATIC_KEY_FALSE(superpage_enabled_key);
int sysctl_superpage_enabled __read_mostly = SUPERPAGE_OFF;
unsigned int sysctl_superpage_promote_threshold __read_mostly = HPAGE_PMD_NR;
unsigned int sysctl_superpage_scan_sleep_millisecs __read_mostly = 1000;
unsigned int sysctl_superpage_pages_to_scan __read_mostly = 64 * HPAGE_PMD_NR;
unsigned int sysctl_superpage_demote_on_reclaim __read_mostly = 1;
unsigned int sysctl_superpage_cluster_max_order __read_mostly = 6;
unsigned int sysctl_superpage_fault_zero_pages __read_mostly = 8;
unsigned int sysctl_superpage_prezero_frames __read_mostly = 64;

static unsigned int superpage_one = 1;
static unsigned int superpage_pmd_nr = HPAGE_PMD_NR;
static unsigned int superpage_sleep_max = 3600 * MSEC_PER_SEC;
static unsigned int superpage_scan_max = 32768 * HPAGE_PMD_NR;
static unsigned int superpage_pmd_order = HPAGE_PMD_ORDER;
static unsigned int superpage_prezero_max = 65536;

static DEFINE_MUTEX(superpage_sysctl_mutex);

static int superpage_enabled_handler(const struct ctl_table *table, int write,
				     void *buffer, size_t *lenp, loff_t *ppos)
{
	struct ctl_table tmp = *table;
	int mode, ret;

	mutex_lock(&superpage_sysctl_mutex);
	mode = READ_ONCE(sysctl_superpage_enabled);
	tmp.data = &mode;
	ret = proc_dointvec_minmax(&tmp, write, buffer, lenp, ppos);
	if (ret || !write)
		goto out;

	if (mode != SUPERPAGE_OFF && !has_transparent_hugepage()) {
		/* No PMD-sized pages on this machine: nothing to reserve. */
		ret = -EOPNOTSUPP;
		goto out;
	}

	if (mode != SUPERPAGE_OFF) {
		ret = superpage_daemon_start_stop(true);
		if (!ret)
			ret = superpage_prezero_start_stop(true);
		if (!ret)
			ret = superpage_zero_start_stop(true);
		if (ret) {
			if (READ_ONCE(sysctl_superpage_enabled) == SUPERPAGE_OFF) {
				superpage_prezero_start_stop(false);
				superpage_daemon_start_stop(false);
			}
			goto out;
		}
	}
	WRITE_ONCE(sysctl_superpage_enabled, mode);
	if (mode != SUPERPAGE_OFF) {
		static_branch_enable(&superpage_enabled_key);
	} else {
		static_branch_disable(&superpage_enabled_key);
		superpage_zero_start_stop(false);
		superpage_prezero_start_stop(false);
		superpage_daemon_start_stop(false);
	}
out:
	mutex_unlock(&superpage_sysctl_mutex);
	return ret;
}

/* The scan tunables: a new value takes effect at once. */
static int superpage_scan_handler(const struct ctl_table *table, int write,
				  void *buffer, size_t *lenp, loff_t *ppos)
{
	int ret = proc_douintvec_minmax(table, write, buffer, lenp, ppos);

	if (!ret && write)
		superpage_daemon_kick();
	return ret;
}

/* The pool size: frames beyond it are freed at once. */
static int superpage_prezero_handler(const struct ctl_table *table, int write,
				     void *buffer, size_t *lenp, loff_t *ppos)
{
	int ret = proc_douintvec_minmax(table, write, buffer, lenp, ppos);

	if (!ret && write)
		superpage_prezero_resize();
	return ret;
}

static struct ctl_table superpage_sysctl_table[] = {
	{
		.procname	= "superpage_enabled",
		.data		= &sysctl_superpage_enabled,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= superpage_enabled_handler,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_TWO,
	},
	{
		.procname	= "superpage_promote_threshold",
		.data		= &sysctl_superpage_promote_threshold,
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= proc_douintvec_minmax,
		.extra1		= &superpage_one,
		.extra2		= &superpage_pmd_nr,
	},
	{
		.procname	= "superpage_scan_sleep_millisecs",
		.data		= &sysctl_superpage_scan_sleep_millisecs,
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= superpage_scan_handler,
		.extra1		= &superpage_one,
		.extra2		= &superpage_sleep_max,
	},
	{
		.procname	= "superpage_pages_to_scan",
		.data		= &sysctl_superpage_pages_to_scan,
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= superpage_scan_handler,
		.extra1		= &superpage_pmd_nr,
		.extra2		= &superpage_scan_max,
	},
	{
		.procname	= "superpage_cluster_max_order",
		.data		= &sysctl_superpage_cluster_max_order,
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= proc_douintvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= &superpage_pmd_order,
	},
	{
		.procname	= "superpage_fault_zero_pages",
		.data		= &sysctl_superpage_fault_zero_pages,
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= proc_douintvec_minmax,
		.extra1		= &superpage_one,
		.extra2		= &superpage_pmd_nr,
	},
	{
		.procname	= "superpage_prezero_frames",
		.data		= &sysctl_superpage_prezero_frames,
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= superpage_prezero_handler,
		.extra1		= SYSCTL_ZERO,
		.extra2		= &superpage_prezero_max,
	},
	{
		.procname	= "superpage_demote_on_reclaim",
		.data		= &sysctl_superpage_demote_on_reclaim,
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= proc_douintvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
};

/* After hugepage_init() (a subsys_initcall) has probed THP support. */
static int __init superpage_sysctl_init(void)
{
	register_sysctl_init("vm", superpage_sysctl_table);
	return 0;
}
late_initcall(superpage_sysctl_init);
