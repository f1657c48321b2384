// SPDX-License-Identifier: GPL-2.0
/*
 * Reservation-based transparent superpages: the vm.superpage_* sysctls.
 *
 * What this file does
 *   It registers /proc/sys/vm/superpage_enabled and keeps the static key
 *   superpage_enabled_key in step with it, so that every hook in the fault
 *   path costs one patched jump while the feature is off.
 *
 * Invariants
 *   - sysctl_superpage_enabled is always one of enum superpage_mode
 *     (0, 1 or 2): proc_dointvec_minmax() rejects anything else with
 *     -EINVAL before it stores, so a bad write changes nothing.
 *   - superpage_enabled_key is enabled if and only if
 *     sysctl_superpage_enabled != SUPERPAGE_OFF, except for the instant
 *     between the store and the key update below, during which readers see
 *     the key as it was (superpage_mode() reads the key first).
 *
 * Locking
 *   superpage_sysctl_mutex serialises writers of sysctl_superpage_enabled
 *   and of superpage_enabled_key.  Readers take no lock: they read the key,
 *   then the value with READ_ONCE().
 */
#include <linux/init.h>
#include <linux/jump_label.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/superpage.h>
#include <linux/sysctl.h>

DEFINE_STATIC_KEY_FALSE(superpage_enabled_key);
int sysctl_superpage_enabled __read_mostly = SUPERPAGE_OFF;

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

	WRITE_ONCE(sysctl_superpage_enabled, mode);
	if (mode != SUPERPAGE_OFF)
		static_branch_enable(&superpage_enabled_key);
	else
		static_branch_disable(&superpage_enabled_key);
out:
	mutex_unlock(&superpage_sysctl_mutex);
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
};

/* After hugepage_init() (a subsys_initcall) has probed THP support. */
static int __init superpage_sysctl_init(void)
{
	register_sysctl_init("vm", superpage_sysctl_table);
	return 0;
}
late_initcall(superpage_sysctl_init);
