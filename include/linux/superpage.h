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
#include <linux/mm_types.h>
#include <linux/page-flags.h>

struct mem_cgroup;
struct pglist_data;
struct vm_fault;

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
 *
 * Return: true while the feature is switched on.
 */
static inline bool superpage_enabled(void)
{
	return static_branch_unlikely(&superpage_enabled_key);
}

/**
 * superpage_mode() - the current value of vm.superpage_enabled
 *
 * Return: the mode, SUPERPAGE_OFF while the feature is off.
 */
static inline enum superpage_mode superpage_mode(void)
{
	if (!superpage_enabled())
		return SUPERPAGE_OFF;
	return READ_ONCE(sysctl_superpage_enabled);
}

bool __superpage_vma_eligible(struct vm_area_struct *vma);
bool __superpage_anon_fault(struct vm_fault *vmf, vm_fault_t *ret);
bool __superpage_wp_zero_fault(struct vm_fault *vmf, vm_fault_t *ret);
bool __superpage_khugepaged_skip(struct folio *folio);
void superpage_resv_start(struct folio *folio);
void __superpage_resv_mod_mapped(struct folio *folio, int nr);
void __superpage_resv_end(struct folio *folio);
unsigned long superpage_resv_unused_pages(void);
unsigned long superpage_prezero_pages(void);
void __superpage_resv_split(struct folio *folio);
bool __superpage_reclaim_node(struct pglist_data *pgdat,
			      struct mem_cgroup *target, int reclaim_idx,
			      unsigned long nr_to_reclaim,
			      unsigned long *nr_reclaimed);
bool __superpage_demote_folio(struct folio *folio, struct list_head *list);

/**
 * superpage_vma_eligible() - may faults in @vma create reservations?
 * @vma: the faulting VMA
 *
 * For such a VMA the fault path leaves a none PMD to the reservation code
 * instead of installing a huge page (or the huge zero page) eagerly.
 *
 * Return: true when the feature is on and @vma is a private anonymous VMA
 * that the mode allows (see enum superpage_mode), that is not
 * userfaultfd-armed, VM_DROPPABLE, mlocked on fault (MLOCK_ONFAULT),
 * MADV_NOHUGEPAGE or PR_SET_THP_DISABLE.
 */
static inline bool superpage_vma_eligible(struct vm_area_struct *vma)
{
	return superpage_enabled() && __superpage_vma_eligible(vma);
}

/**
 * superpage_anon_fault() - handle an anonymous fault with a reservation
 * @vmf: the fault, from do_anonymous_page() after pte_alloc()
 * @ret: where to store the fault result when it is handled
 *
 * Map the faulting page from the reservation of its 2 MiB range, creating
 * the reservation when the range is empty.
 *
 * Return: true when the fault was handled (or must be retried) and *@ret
 * holds the result; false when the caller must go on with its usual path.
 */
static inline bool superpage_anon_fault(struct vm_fault *vmf, vm_fault_t *ret)
{
	return superpage_enabled() && __superpage_anon_fault(vmf, ret);
}

/**
 * superpage_wp_zero_fault() - a write to the zero page, with a reservation
 * @vmf: the fault, from wp_page_copy() after vmf_anon_prepare(), where
 *	 vmf->orig_pte maps the zero page
 * @ret: where to store the fault result when it is handled
 *
 * A read fault maps the zero page, as without the feature; the first write
 * there maps the matching subpage of the range's reservation (creating it
 * when the range holds no other page) instead of a new 4 KiB page.
 *
 * Return: as superpage_anon_fault().
 */
static inline bool superpage_wp_zero_fault(struct vm_fault *vmf,
					   vm_fault_t *ret)
{
	return superpage_enabled() && __superpage_wp_zero_fault(vmf, ret);
}

/**
 * superpage_khugepaged_skip() - must khugepaged leave this folio's range?
 * @folio: an anonymous folio that a PTE in the range maps
 *
 * While the feature is on, a reservation is left to ksuperpaged, which
 * promotes it in place; khugepaged would copy it into a new huge page.
 *
 * Return: true if khugepaged must not collapse the range.
 */
static inline bool superpage_khugepaged_skip(struct folio *folio)
{
	return superpage_enabled() && __superpage_khugepaged_skip(folio);
}

/*
 * The accounting hooks below work whatever vm.superpage_enabled says:
 * reservations made while it was on outlive it.
 */

/**
 * superpage_resv_mod_mapped() - account a change of mapped pages
 * @folio: the folio whose NR_ANON_MAPPED contribution changes
 * @nr: pages newly mapped (positive) or unmapped (negative)
 *
 * Called from __folio_mod_stat(); only reservations are accounted.
 */
static inline void superpage_resv_mod_mapped(struct folio *folio, int nr)
{
	if (nr && folio_test_large(folio) && folio_test_superpage_resv(folio))
		__superpage_resv_mod_mapped(folio, nr);
}

/**
 * superpage_resv_end() - a reservation is split or freed
 * @folio: a large folio about to be split, or a compound page being freed
 */
static inline void superpage_resv_end(struct folio *folio)
{
	if (folio_test_superpage_resv(folio))
		__superpage_resv_end(folio);
}

/**
 * superpage_resv_split() - a reservation is being split
 * @folio: a large folio about to be split
 *
 * Called from __split_huge_page(): the reservation is broken, its unused
 * subpages are freed by the split.  Counted in superpage_resv_broken.
 */
static inline void superpage_resv_split(struct folio *folio)
{
	if (folio_test_superpage_resv(folio))
		__superpage_resv_split(folio);
}

/**
 * superpage_reclaim_node() - break reservations before reclaim scans
 * @pgdat: the node under reclaim
 * @target: the memcg under reclaim, or NULL for global reclaim
 * @reclaim_idx: the highest zone that reclaim may free pages in
 * @nr_to_reclaim: what reclaim wants to free
 * @nr_reclaimed: what it has freed so far; the pages freed here are added
 *
 * Called by shrink_node() before it scans the LRU lists: breaking a partly
 * populated reservation frees its unused subpages without I/O.  The least
 * recently grown reservations of @pgdat in @target's subtree go first;
 * memcgs protected by memory.min or memory.low are left alone.  Freeing
 * any page resets @pgdat's kswapd failure count, as shrink_node() does.
 *
 * Return: true if reclaim has freed @nr_to_reclaim pages now, and need not
 * scan the LRU lists.
 */
static inline bool superpage_reclaim_node(struct pglist_data *pgdat,
					  struct mem_cgroup *target,
					  int reclaim_idx,
					  unsigned long nr_to_reclaim,
					  unsigned long *nr_reclaimed)
{
	if (!superpage_enabled() || *nr_reclaimed >= nr_to_reclaim)
		return false;
	return __superpage_reclaim_node(pgdat, target, reclaim_idx,
					nr_to_reclaim, nr_reclaimed);
}

/**
 * superpage_demote_folio() - demote a superpage that reclaim selected
 * @folio: a locked folio isolated by shrink_folio_list()
 * @list: where the subpages go if @folio is split
 *
 * Called only where reclaim honours accessed bits, does not migrate
 * folios whole to a lower memory tier, and may swap (__GFP_IO).
 *
 * With vm.superpage_demote_on_reclaim on: a PMD-mapped anonymous huge page
 * is remapped with PTEs, so that the daemon can promote it again in place
 * if pressure ends first; a PTE-mapped one is split, so that its subpages
 * age and are swapped one by one.
 *
 * Return: true if @folio was split (it is a 4 KiB page now and its other
 * subpages are on @list).
 */
static inline bool superpage_demote_folio(struct folio *folio,
					  struct list_head *list)
{
	if (!superpage_enabled() || !folio_test_large(folio))
		return false;
	return __superpage_demote_folio(folio, list);
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

static inline bool superpage_vma_eligible(struct vm_area_struct *vma)
{
	return false;
}

static inline bool superpage_anon_fault(struct vm_fault *vmf, vm_fault_t *ret)
{
	return false;
}

static inline bool superpage_wp_zero_fault(struct vm_fault *vmf,
					   vm_fault_t *ret)
{
	return false;
}

static inline bool superpage_khugepaged_skip(struct folio *folio)
{
	return false;
}

static inline void superpage_resv_mod_mapped(struct folio *folio, int nr)
{
}

static inline void superpage_resv_end(struct folio *folio)
{
}

static inline unsigned long superpage_resv_unused_pages(void)
{
	return 0;
}

static inline unsigned long superpage_prezero_pages(void)
{
	return 0;
}

static inline void superpage_resv_split(struct folio *folio)
{
}

static inline bool superpage_reclaim_node(struct pglist_data *pgdat,
					  struct mem_cgroup *target,
					  int reclaim_idx,
					  unsigned long nr_to_reclaim,
					  unsigned long *nr_reclaimed)
{
	return false;
}

static inline bool superpage_demote_folio(struct folio *folio,
					  struct list_head *list)
{
	return false;
}

#endif /* CONFIG_SUPERPAGE */

#endif /* _LINUX_SUPERPAGE_H */
