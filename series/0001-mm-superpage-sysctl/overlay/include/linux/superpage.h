/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reservation-based transparent superpages: the interface that the rest of
 * the kernel calls.  Every hook has a no-op stub for !CONFIG_SUPERPAGE, so
 * that callers need no #ifdef.
 *
 * See Documentation/admin-guide/mm/superpage.rst and
 * Documentation/mm/superpage.rst.
 */
#ifndef _LINUX_SUPERPAGE_H
#define _LINUX_SUPERPAGE_H

#include <linux/jump_label.h>

/**
 * enum superpage_mode - values of the vm.superpage_enabled sysctl
 * @SUPERPAGE_OFF: off; the kernel behaves as without CONFIG_SUPERPAGE
 * @SUPERPAGE_THP_POLICY: reserve where the THP policy allows a PMD-sized
 *	page at fault time (transparent_hugepage/enabled, MADV_HUGEPAGE)
 * @SUPERPAGE_ALWAYS: reserve in every eligible anonymous VMA
 *
 * MADV_NOHUGEPAGE, PR_SET_THP_DISABLE and userfaultfd are respected in
 * every mode.
 */
enum superpage_mode {
	SUPERPAGE_OFF = 0,
	SUPERPAGE_THP_POLICY = 1,
	SUPERPAGE_ALWAYS = 2,
};

#ifdef CONFIG_SUPERPAGE

DECLARE_STATIC_KEY_FALSE(superpage_enabled_key);
extern int sysctl_superpage_enabled;

/**
 * superpage_enabled() - is vm.superpage_enabled non-zero?
 *
 * A static branch: costs one patched jump while the feature is off.
 */
static inline bool superpage_enabled(void)
{
	return static_branch_unlikely(&superpage_enabled_key);
}

/**
 * superpage_mode() - the current value of vm.superpage_enabled
 */
static inline enum superpage_mode superpage_mode(void)
{
	if (!superpage_enabled())
		return SUPERPAGE_OFF;
	return READ_ONCE(sysctl_superpage_enabled);
}

#else /* !CONFIG_SUPERPAGE */

static inline bool superpage_enabled(void)
{
	return false;
}

static inline enum superpage_mode superpage_mode(void)
{
	return SUPERPAGE_OFF;
}

#endif /* CONFIG_SUPERPAGE */

#endif /* _LINUX_SUPERPAGE_H */
