/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reservation-based transparent superpages: declarations shared by the
 * files of mm/superpage/ and by nothing else.
 */
#ifndef _MM_SUPERPAGE_INTERNAL_H
#define _MM_SUPERPAGE_INTERNAL_H

#include <linux/mm_types.h>

/* vm.superpage_promote_threshold: populated subpages needed to promote. */
extern unsigned int sysctl_superpage_promote_threshold;
/* vm.superpage_scan_sleep_millisecs: ksuperpaged's sleep between passes. */
extern unsigned int sysctl_superpage_scan_sleep_millisecs;
/* vm.superpage_pages_to_scan: 4 KiB pages of address space per pass. */
extern unsigned int sysctl_superpage_pages_to_scan;
/* vm.superpage_cluster_max_order: largest cluster mapped by one fault. */
extern unsigned int sysctl_superpage_cluster_max_order;
/* vm.superpage_demote_on_reclaim: reclaim demotes superpages it selects. */
extern unsigned int sysctl_superpage_demote_on_reclaim;
/* vm.superpage_fault_zero_pages: subpages that one fault zeroes, at most. */
extern unsigned int sysctl_superpage_fault_zero_pages;
/* vm.superpage_prezero_frames: zeroed frames kept per node, at most. */
extern unsigned int sysctl_superpage_prezero_frames;

/**
 * enum superpage_promote_result - outcome of superpage_promote()
 * @SUPERPAGE_PROMOTED: the range is now mapped by one PMD
 * @SUPERPAGE_PROMOTE_NONE: the range holds no promotable reservation (no
 *	reservation, too few subpages populated, shared after fork, VMA not
 *	eligible): not a failure, nothing is counted
 * @SUPERPAGE_PROMOTE_BUSY: the folio lock was contended, zero.c's worker
 *	held the folio, or no page table could be allocated: ksuperpaged
 *	tries again soon (daemon.c)
 * @SUPERPAGE_PROMOTE_PINNED: the folio holds references beyond its
 *	mappings (GUP pins, I/O, a zap waiting for its TLB flush)
 * @SUPERPAGE_PROMOTE_CHANGED: the page table or the folio changed between
 *	the scan and the promotion (an entry became a swap or migration entry,
 *	uffd-wp, NUMA hinting, another folio, or a subpage mapped elsewhere)
 * @SUPERPAGE_PROMOTE_LOCKED: writers kept the range's VMA lock and the mmap
 *	lock (for about 20 ms, the second time): counted as busy, left to
 *	the scan
 */
/* How a fault that the reservation code looked at ended (trace.h). */
enum superpage_fault_result {
	SUPERPAGE_FAULT_CREATED,	/* a new reservation */
	SUPERPAGE_FAULT_GROWN,		/* subpages of one mapped */
	SUPERPAGE_FAULT_RACED,		/* the entry changed: fault again */
	SUPERPAGE_FAULT_RETRY,		/* the reservation stayed busy */
	SUPERPAGE_FAULT_ZERO_PAGE,	/* a read: the zero page */
	SUPERPAGE_FAULT_NO_RESV,	/* pages, but no reservation */
	SUPERPAGE_FAULT_UNSUITABLE,	/* the range is not all in the VMA */
	SUPERPAGE_FAULT_UNUSABLE,	/* R4 or R5 failed */
	SUPERPAGE_FAULT_REFS,		/* an extra reference stayed */
	SUPERPAGE_FAULT_NO_MEMORY,	/* no order-9 page or no charge */
};

enum superpage_promote_result {
	SUPERPAGE_PROMOTED,
	SUPERPAGE_PROMOTE_NONE,
	SUPERPAGE_PROMOTE_BUSY,
	SUPERPAGE_PROMOTE_PINNED,
	SUPERPAGE_PROMOTE_CHANGED,
	SUPERPAGE_PROMOTE_LOCKED,
};

/* promote.c */
struct folio *superpage_resv_of(struct vm_area_struct *vma, pte_t pte,
				unsigned long haddr, unsigned int j,
				unsigned int i);
bool superpage_folio_unusable(struct folio *folio);

bool superpage_promote_ready(struct vm_area_struct *vma, unsigned long haddr,
			     unsigned int threshold);
enum superpage_promote_result superpage_promote(struct mm_struct *mm,
						unsigned long haddr);

/* break.c */
void superpage_resv_grew(struct folio *folio);
void superpage_resv_requeue(struct folio *folio);
unsigned int superpage_resv_preempt(struct mm_struct *mm, int nid,
				    int max_zone);

/* demote.c */
bool superpage_under_pressure(struct folio *folio);

/* zero.c */
void superpage_zeroed_get(struct folio *folio, unsigned int *lo,
			  unsigned int *hi, unsigned int *clo,
			  unsigned int *chi);
int superpage_zero_refs(struct folio *folio);
unsigned int superpage_zeroed_take(struct folio *folio,
				   const unsigned long *map);
void superpage_zero_ahead(struct folio *folio, int from, int to);
void superpage_zero_steal(struct folio *folio, unsigned int i,
			  unsigned int nr);
void superpage_zeroed_init(struct folio *folio, unsigned int i);
int superpage_zero_start_stop(bool run);

/* prezero.c */
struct folio *superpage_prezero_take(gfp_t gfp);
void superpage_prezero_put_back(struct folio *folio);
void superpage_prezero_kick(void);
void superpage_prezero_resize(void);
int superpage_prezero_start_stop(bool run);

/* daemon.c */
void superpage_daemon_enter_mm(struct mm_struct *mm);
void superpage_daemon_note_ready(struct mm_struct *mm, unsigned long haddr);
int superpage_daemon_start_stop(bool run);
void superpage_daemon_kick(void);

#endif /* _MM_SUPERPAGE_INTERNAL_H */
