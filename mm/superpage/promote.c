// SPDX-License-Identifier: GPL-2.0
/*
 * Reservation-based transparent superpages: in-place promotion.
 *
 * What this file does
 *   superpage_promote() rewrites a 2 MiB range whose reservation (one
 *   order-9 anonymous folio, PTE-mapped subpage by subpage by fault.c) is
 *   populated enough into one PMD mapping of the same folio.  Nothing is
 *   copied: the PFNs before and after are the same.  Unpopulated subpages
 *   (holes; only when vm.superpage_promote_threshold is below 512) are
 *   zeroed in place first.  The page table that held the 512 PTEs is
 *   emptied and deposited, as for a THP, so that a later PMD split needs no
 *   allocation.
 *
 * Invariants (all checked on the detached page table, where they are exact)
 *   P1 each entry is none, the zero page, or a present PTE of subpage k of
 *      the folio at index k, PageAnonExclusive and mapped once (_mapcount
 *      0); no swap, migration, uffd-wp or NUMA-hinting entry;
 *   P2 a hole's subpage is mapped nowhere (_mapcount -1);
 *   P3 folio_mapcount() is the number of present entries and the only
 *      other reference is ours: no GUP pin, no I/O, no other process, so
 *      the PMD may take PageAnonExclusive (RMAP_EXCLUSIVE) and the tail
 *      pages must lose theirs (a later non-exclusive PMD split re-adds the
 *      PTE mappings without it);
 *   P4 the PMD gets write permission only if every present PTE had it,
 *      dirty if any was dirty or a hole was zeroed, young if any was
 *      young, soft-dirty if any was.
 *   On any failure the page table is put back as it was: only holes were
 *   zeroed, and they were unmapped anyway.
 *
 * Locking
 *   First, under the mmap read lock (by trylock) and the range's PTE lock
 *   (which every zap of the range takes): the candidate's reference,
 *   folio_trylock() (reclaim, migration, KSM, split and every fault that
 *   would map a subpage of it), the reference check and the set of holes
 *   of that instant.  Then, with only the folio lock held, the zeroing of
 *   those holes, so that up to 2 MiB of clearing never runs while faults
 *   are stopped.  No fault can map a hole while the folio is locked, so a
 *   zeroed hole stays zeroed and unreferenced; a subpage zapped after the
 *   check (and maybe still pinned) is not in the set, and is zeroed in the
 *   second step, after the reference check there.  Then, the folio still locked,
 *   as khugepaged's collapse_huge_page(): the mmap write lock (no fault
 *   under the mmap lock, no GUP, no zap), but only by trylock, retried for
 *   about 20 ms: the daemon must not sleep behind one mm's holder for as
 *   long as it holds the lock; then vma_start_write() (faults and
 *   UFFDIO_MOVE under the per-VMA lock).  The candidate is looked up again
 *   and must be the same folio.  From there no subpage can be mapped or
 *   unmapped, so the reference check before the remaining holes are zeroed
 *   is exact for them.  Then the anon_vma write lock (rmap walkers), the
 *   mmu notifiers, and the PMD lock to clear the PMD.  After
 *   pmdp_collapse_flush() and tlb_remove_table_sync_one() no CPU and no
 *   GUP-fast walker can reach the old table, whose entries are then checked
 *   and cleared under its own PTE lock.
 */
#include <linux/delay.h>
#include <linux/highmem.h>
#include <linux/huge_mm.h>
#include <linux/ksm.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/oom.h>
#include <linux/pgalloc.h>
#include <linux/pgtable.h>
#include <linux/rmap.h>
#include <linux/superpage.h>
#include <linux/vmstat.h>
#include <asm/tlb.h>

#include "../internal.h"
#include "internal.h"

/* The PMD at @haddr if it points to a page table, else NULL. */
static pmd_t *superpage_pte_table(struct mm_struct *mm, unsigned long haddr)
{
	pmd_t *pmd = mm_find_pmd(mm, haddr);
	pmd_t pmdval;

	if (!pmd)
		return NULL;
	pmdval = pmdp_get_lockless(pmd);
	if (pmd_none(pmdval) || !pmd_present(pmdval) ||
	    pmd_trans_huge(pmdval) || pmd_bad(pmdval))
		return NULL;
	return pmd;
}

/*
 * A hole may be a zapped subpage that a pipe or a pin still holds: zeroing
 * it would change what they see.  No new reference to a hole can appear
 * while the folio is locked (nothing maps it), so this check, with the
 * caller's one reference, comes before zeroing.
 */
static bool superpage_folio_pinned(struct folio *folio)
{
	return folio_maybe_dma_pinned(folio) ||
	       folio_ref_count(folio) != folio_mapcount(folio) + 1;
}

static bool superpage_folio_unusable(struct folio *folio)
{
	return folio_test_swapcache(folio) || folio_test_writeback(folio) ||
	       !folio_test_swapbacked(folio) ||
	       folio_test_has_hwpoisoned(folio);
}

/**
 * superpage_candidate() - the promotable reservation of a range
 * @vma: the VMA, which covers the whole range
 * @haddr: the 2 MiB-aligned start of the range
 * @threshold: how many subpages must be mapped
 *
 * The first present PTE of the range decides: it must map subpage k of an
 * exclusive, PTE-mapped, order-9 anonymous folio of this VMA's anon_vma at
 * index k, with at least @threshold subpages mapped, all by this range
 * (none shared after fork, none mapped elsewhere after mremap).  A folio
 * that is not a reservation (a superpage demoted by reclaim) is promoted
 * again only once memory is no longer short (superpage_under_pressure()).  Called
 * with the mmap lock held; the verdict is a hint until superpage_promote()
 * has checked every entry.
 *
 * With @holes, the folio is locked (by trylock) and a reference taken, both
 * under the PTE lock: a fault that grows the reservation takes the folio
 * lock by trylock under the same PTE lock, so it sees either neither or
 * both, never a bare reference (which it would take for a pin, and
 * eventually map a 4 KiB page of its own in the range, which no promotion
 * can absorb).  Still under the PTE lock, where no zap of this range can
 * run, the reference count is checked (superpage_folio_pinned()) and the
 * holes of that instant are set in @holes: none of them is referenced,
 * and none can be mapped, or referenced, while the folio stays locked, so
 * they may be zeroed with the PTE lock dropped.  A subpage zapped later
 * is not among them.  Errors: ERR_PTR(-EBUSY), the folio lock is
 * contended; -EPERM, the folio is pinned; -ESTALE, it is in the swap
 * cache, under writeback or poisoned.
 *
 * Return: the folio (locked and referenced if @holes), an error, or NULL.
 */
static struct folio *superpage_candidate(struct vm_area_struct *vma,
					 unsigned long haddr,
					 unsigned int threshold,
					 unsigned long *holes)
{
	pmd_t *pmd = superpage_pte_table(vma->vm_mm, haddr);
	struct folio *folio = NULL;
	struct page *page = NULL;
	spinlock_t *ptl;	/* of the range's page table */
	pte_t *start, pte;
	int nr, k;

	if (!pmd)
		return NULL;
	start = pte_offset_map_lock(vma->vm_mm, pmd, haddr, &ptl);
	if (!start)
		return NULL;
	for (k = 0; k < HPAGE_PMD_NR; k++) {
		pte = ptep_get(start + k);
		/* A hole: none, or the zero page of a read fault. */
		if (pte_none(pte) ||
		    (pte_present(pte) && is_zero_pfn(pte_pfn(pte))))
			continue;
		if (!pte_present(pte) || pte_protnone(pte) || pte_special(pte))
			break;
		page = vm_normal_page(vma, haddr + k * PAGE_SIZE, pte);
		break;
	}
	if (!page)
		goto out;
	folio = page_folio(page);
	if (folio_order(folio) != HPAGE_PMD_ORDER || !folio_test_anon(folio) ||
	    folio_test_ksm(folio) || folio_entire_mapcount(folio) ||
	    folio_page_idx(folio, page) != k || !PageAnonExclusive(page) ||
	    folio_anon_vma(folio) != vma->anon_vma ||
	    folio->index != linear_page_index(vma, haddr)) {
		folio = NULL;
		goto out;
	}
	nr = folio_nr_pages_mapped(folio);
	if (nr < threshold || folio_mapcount(folio) != nr) {
		folio = NULL;
		goto out;
	}
	/* A demoted superpage waits for the end of the pressure (demote.c). */
	if (!folio_test_superpage_resv(folio) &&
	    superpage_under_pressure(folio)) {
		folio = NULL;
		goto out;
	}
	if (holes) {
		if (!folio_trylock(folio)) {
			folio = ERR_PTR(-EBUSY);
			goto out;
		}
		folio_get(folio);
		k = superpage_folio_unusable(folio) ? -ESTALE :
		    superpage_folio_pinned(folio) ? -EPERM : 0;
		if (k) {
			folio_unlock(folio);
			/* Mapped, under the PTE lock: not the last one. */
			folio_put(folio);
			folio = ERR_PTR(k);
			goto out;
		}
		for (k = 0; k < HPAGE_PMD_NR; k++)
			if (atomic_read(&folio_page(folio, k)->_mapcount) == -1)
				__set_bit(k, holes);
	}
out:
	pte_unmap_unlock(start, ptl);
	return folio;
}

/**
 * superpage_promote_ready() - does a range hold a promotable reservation?
 * @vma: the VMA, which covers the whole range
 * @haddr: the 2 MiB-aligned start of the range
 * @threshold: how many subpages must be mapped
 *
 * For the scan, under the mmap read lock: superpage_candidate() without a
 * reference, so that faults in the range never see one.
 */
bool superpage_promote_ready(struct vm_area_struct *vma, unsigned long haddr,
			     unsigned int threshold)
{
	return superpage_candidate(vma, haddr, threshold, NULL);
}

/* Zero the subpages of the locked @folio set in @holes. */
static void superpage_zero_list(struct folio *folio, const unsigned long *holes)
{
	unsigned int k;

	for_each_set_bit(k, holes, HPAGE_PMD_NR) {
		clear_highpage(folio_page(folio, k));
		cond_resched();
	}
}

/*
 * Zero the subpages of @folio that no PTE maps, except those already
 * zeroed (set in @zeroed), and set them in @zeroed.  With the folio lock
 * held no fault can map them meanwhile (fault.c maps a subpage only with
 * the folio locked).  Returns how many subpages are holes now.
 */
static unsigned int superpage_zero_holes(struct folio *folio,
					 unsigned long *zeroed)
{
	unsigned int k, holes = 0;

	for (k = 0; k < HPAGE_PMD_NR; k++) {
		struct page *page = folio_page(folio, k);

		if (atomic_read(&page->_mapcount) != -1)
			continue;
		holes++;
		if (test_bit(k, zeroed))
			continue;
		clear_highpage(page);
		__set_bit(k, zeroed);
		cond_resched();
	}
	return holes;
}

/*
 * The first step of a promotion, under the mmap read lock only: find the
 * candidate of the range at @haddr and lock it (superpage_candidate()),
 * then zero the holes it found, with no lock but the folio's held (up to
 * 2 MiB of clearing), while faults elsewhere in the mm go on.  Returns
 * the folio, locked and with a reference, its zeroed holes set in
 * @zeroed; or NULL with *@ret saying why not.
 */
static struct folio *superpage_promote_prepare(struct mm_struct *mm,
					       unsigned long haddr,
					       unsigned int threshold,
					       unsigned long *zeroed,
					       enum superpage_promote_result *ret)
{
	struct vm_area_struct *vma;
	struct folio *folio = NULL;

	*ret = SUPERPAGE_PROMOTE_BUSY;
	if (!mmap_read_trylock(mm))
		return NULL;
	*ret = SUPERPAGE_PROMOTE_NONE;
	vma = vma_lookup(mm, haddr);
	if (!vma || !range_in_vma(vma, haddr, haddr + HPAGE_PMD_SIZE) ||
	    !vma->anon_vma || !__superpage_vma_eligible(vma))
		goto out;
	folio = superpage_candidate(vma, haddr, threshold, zeroed);
	if (IS_ERR(folio)) {
		*ret = PTR_ERR(folio) == -EBUSY ? SUPERPAGE_PROMOTE_BUSY :
		       PTR_ERR(folio) == -EPERM ? SUPERPAGE_PROMOTE_PINNED :
		       SUPERPAGE_PROMOTE_CHANGED;
		folio = NULL;
	}
	mmap_read_unlock(mm);
	if (folio)
		superpage_zero_list(folio, zeroed);
	return folio;
out:
	mmap_read_unlock(mm);
	return NULL;
}

struct superpage_ptes {
	unsigned int present;
	bool all_write, dirty, young, soft_dirty;
};

/*
 * P1 and P2 for the detached table @pte of @folio, collecting the PTE
 * bits for P4.  Called with the table's PTE lock held.
 */
static enum superpage_promote_result
superpage_check_ptes(struct vm_area_struct *vma, unsigned long haddr,
		     pte_t *pte, struct folio *folio, struct superpage_ptes *s)
{
	unsigned int k;

	*s = (struct superpage_ptes){ .all_write = true };
	for (k = 0; k < HPAGE_PMD_NR; k++) {
		struct page *sub = folio_page(folio, k);
		pte_t entry = ptep_get(pte + k);

		if (pte_none(entry) ||
		    (pte_present(entry) && is_zero_pfn(pte_pfn(entry)))) {
			if (atomic_read(&sub->_mapcount) != -1)
				return SUPERPAGE_PROMOTE_CHANGED;
			continue;
		}
		if (!pte_present(entry) || pte_protnone(entry) ||
		    pte_uffd_wp(entry))
			return SUPERPAGE_PROMOTE_CHANGED;
		if (pte_pfn(entry) != folio_pfn(folio) + k ||
		    vm_normal_page(vma, haddr + k * PAGE_SIZE, entry) != sub ||
		    !PageAnonExclusive(sub) ||
		    atomic_read(&sub->_mapcount) != 0)
			return SUPERPAGE_PROMOTE_CHANGED;
		s->present++;
		s->all_write &= pte_write(entry);
		s->dirty |= pte_dirty(entry);
		s->young |= pte_young(entry);
		s->soft_dirty |= pte_soft_dirty(entry);
	}
	if (!s->present)
		return SUPERPAGE_PROMOTE_CHANGED;
	/* P3; the references: one per PTE and ours. */
	if (folio_mapcount(folio) != s->present)
		return SUPERPAGE_PROMOTE_CHANGED;
	if (folio_maybe_dma_pinned(folio) ||
	    folio_ref_count(folio) != s->present + 1)
		return SUPERPAGE_PROMOTE_PINNED;
	return SUPERPAGE_PROMOTED;
}

/*
 * Swap the PTE mappings of the detached table @pte for a PMD mapping of
 * @folio, keeping the counts of P3.  Called with the table's PTE lock held;
 * the PMD is still clear.
 */
static pmd_t superpage_switch_rmap(struct vm_area_struct *vma,
				   unsigned long haddr, pte_t *pte,
				   struct folio *folio,
				   const struct superpage_ptes *s,
				   unsigned int holes)
{
	struct mm_struct *mm = vma->vm_mm;
	unsigned int k, run = 0;
	pmd_t entry;

	entry = mk_huge_pmd(&folio->page, vma->vm_page_prot);
	if (s->all_write && (vma->vm_flags & VM_WRITE))
		entry = pmd_mkwrite(entry, vma);
	if (s->dirty || holes)
		entry = pmd_mkdirty(entry);
	if (s->soft_dirty)
		entry = pmd_mksoft_dirty(entry);
	entry = s->young ? pmd_mkyoung(entry) : pmd_mkold(entry);

	/*
	 * The PMD mapping first: the folio's mapcount never drops to zero and
	 * the PTE removals below account nothing and queue nothing.
	 */
	folio_add_anon_rmap_pmd(folio, &folio->page, vma, haddr, RMAP_EXCLUSIVE);
	for (k = 0; k <= HPAGE_PMD_NR; k++) {
		pte_t e = k < HPAGE_PMD_NR ? ptep_get(pte + k) : __pte(0);
		bool mapped = !pte_none(e) && !is_zero_pfn(pte_pfn(e));

		if (mapped) {
			run++;
		} else if (run) {
			folio_remove_rmap_ptes(folio, folio_page(folio, k - run),
					       run, vma);
			run = 0;
		}
		if (k < HPAGE_PMD_NR && !pte_none(e)) {
			ptep_clear(mm, haddr + k * PAGE_SIZE, pte + k);
			/* A zero page that KSM merged is counted as such. */
			if (!mapped)
				ksm_might_unmap_zero_page(mm, e);
		}
	}
	/* The removals munlock an mlocked folio; the PMD keeps it locked. */
	mlock_vma_folio(folio, vma);
	for (k = 1; k < HPAGE_PMD_NR; k++)
		ClearPageAnonExclusive(folio_page(folio, k));
	folio_ref_sub(folio, s->present - 1);
	add_mm_counter(mm, MM_ANONPAGES, holes);
	return entry;
}

bool __superpage_khugepaged_skip(struct folio *folio)
{
	return folio_test_large(folio) && folio_test_superpage_resv(folio);
}

static void superpage_count_promote(enum superpage_promote_result ret)
{
	switch (ret) {
	case SUPERPAGE_PROMOTED:
		count_vm_event(SUPERPAGE_PROMOTE);
		return;
	case SUPERPAGE_PROMOTE_NONE:
		return;
	case SUPERPAGE_PROMOTE_BUSY:
		count_vm_event(SUPERPAGE_PROMOTE_FAILED_BUSY);
		break;
	case SUPERPAGE_PROMOTE_PINNED:
		count_vm_event(SUPERPAGE_PROMOTE_FAILED_PINNED);
		break;
	case SUPERPAGE_PROMOTE_CHANGED:
		count_vm_event(SUPERPAGE_PROMOTE_FAILED_CHANGED);
		break;
	}
	count_vm_event(SUPERPAGE_PROMOTE_FAILED);
}

/*
 * The mmap write lock, if it can be had within about SUPERPAGE_MMAP_TRIES
 * milliseconds.  A task may hold an mmap lock for minutes (a populate or
 * an mlock() throttled by memory.high, a fault waiting for I/O), and
 * mmap_write_lock() would stop the one daemon that serves every mm behind
 * it: give up instead, and leave the range to a later pass.
 */
#define SUPERPAGE_MMAP_TRIES	16

static bool superpage_mmap_write_lock(struct mm_struct *mm)
{
	int i;

	for (i = 0; i < SUPERPAGE_MMAP_TRIES; i++) {
		if (mmap_write_trylock(mm))
			return true;
		usleep_range(1000, 1500);
	}
	return false;
}

/**
 * superpage_promote() - map a populated reservation with one PMD, in place
 * @mm: the address space, pinned by the caller (mmget)
 * @haddr: the 2 MiB-aligned start of the range
 *
 * Locks the candidate and zeroes its holes under the mmap read lock
 * (superpage_promote_prepare()); then, with the folio still locked, takes
 * and releases the mmap write lock, or gives up with
 * SUPERPAGE_PROMOTE_BUSY if it stays contended for about 20 ms (see
 * superpage_mmap_write_lock()).  The range is promoted if it lies
 * in one eligible VMA and superpage_candidate() finds a reservation
 * with vm.superpage_promote_threshold subpages mapped, and every entry then
 * passes P1-P3.
 *
 * Return: the outcome; only BUSY, PINNED and CHANGED are failures.
 */
enum superpage_promote_result superpage_promote(struct mm_struct *mm,
						unsigned long haddr)
{
	unsigned int threshold = READ_ONCE(sysctl_superpage_promote_threshold);
	enum superpage_promote_result ret = SUPERPAGE_PROMOTE_NONE;
	struct mmu_notifier_range range;
	struct vm_area_struct *vma;
	DECLARE_BITMAP(zeroed, HPAGE_PMD_NR);
	struct superpage_ptes s;
	spinlock_t *pml, *ptl;
	struct folio *folio;
	unsigned int holes;
	pmd_t *pmd, _pmd, entry;
	pte_t *pte;

	bitmap_zero(zeroed, HPAGE_PMD_NR);
	folio = superpage_promote_prepare(mm, haddr, threshold, zeroed, &ret);
	if (!folio)
		goto out_count;
	/*
	 * Trylock only, with the folio locked: a task holding the mmap lock
	 * never waits for this folio's lock (faults take it by trylock).
	 */
	if (!superpage_mmap_write_lock(mm)) {
		ret = SUPERPAGE_PROMOTE_BUSY;
		goto out_unlock;
	}
	ret = SUPERPAGE_PROMOTE_NONE;
	/* The OOM reaper may be tearing the address space down. */
	if (check_stable_address_space(mm))
		goto out_mmap;
	vma = vma_lookup(mm, haddr);
	if (!vma || !range_in_vma(vma, haddr, haddr + HPAGE_PMD_SIZE) ||
	    !vma->anon_vma || !__superpage_vma_eligible(vma))
		goto out_mmap;
	/*
	 * Before the checks: per-VMA-lock faults could unmap a subpage
	 * (superpage_candidate()).  Their faults in this range take the
	 * folio lock by trylock only, so none of them holds the VMA lock
	 * while it waits for ours.
	 */
	vma_start_write(vma);
	/* The range may have been unmapped or remapped meanwhile. */
	ret = SUPERPAGE_PROMOTE_CHANGED;
	if (superpage_candidate(vma, haddr, threshold, NULL) != folio)
		goto out_mmap;
	/* Stable: page tables are freed under the mmap write lock only. */
	pmd = superpage_pte_table(mm, haddr);
	if (WARN_ON_ONCE(!pmd))
		goto out_mmap;
	if (superpage_folio_unusable(folio))
		goto out_mmap;
	/* Subpages zapped since the first check are holes to zero too. */
	ret = SUPERPAGE_PROMOTE_PINNED;
	if (superpage_folio_pinned(folio))
		goto out_mmap;

	holes = superpage_zero_holes(folio, zeroed);
	anon_vma_lock_write(vma->anon_vma);
	mmu_notifier_range_init(&range, MMU_NOTIFY_CLEAR, 0, mm, haddr,
				haddr + HPAGE_PMD_SIZE);
	mmu_notifier_invalidate_range_start(&range);
	pml = pmd_lock(mm, pmd);
	/* Clears the PMD and flushes the 4 KiB TLB entries of the range. */
	_pmd = pmdp_collapse_flush(vma, haddr, pmd);
	spin_unlock(pml);
	mmu_notifier_invalidate_range_end(&range);
	/* Waits out GUP-fast walkers that still see the old table. */
	tlb_remove_table_sync_one();

	pte = pte_offset_map_lock(mm, &_pmd, haddr, &ptl);
	if (!pte)
		goto out_restore;
	ret = superpage_check_ptes(vma, haddr, pte, folio, &s);
	if (ret != SUPERPAGE_PROMOTED) {
		pte_unmap_unlock(pte, ptl);
		goto out_restore;
	}
	entry = superpage_switch_rmap(vma, haddr, pte, folio, &s, holes);
	pte_unmap_unlock(pte, ptl);
	/* Every subpage is mapped now: the folio is no longer partial. */
	deferred_split_clear_partially_mapped(folio);
	/* A huge page now, no longer a reservation. */
	superpage_resv_end(folio);
	/* The zeroed holes must be visible before the PMD is. */
	smp_wmb();

	spin_lock(pml);
	VM_WARN_ON_ONCE(!pmd_none(*pmd));
	pgtable_trans_huge_deposit(mm, pmd, pmd_pgtable(_pmd));
	set_pmd_at(mm, haddr, pmd, entry);
	update_mmu_cache_pmd(vma, haddr, pmd);
	spin_unlock(pml);
	anon_vma_unlock_write(vma->anon_vma);
	goto out_mmap;

out_restore:
	/* As collapse_huge_page(): a page table is restored, never set_pmd_at. */
	spin_lock(pml);
	VM_WARN_ON_ONCE(!pmd_none(*pmd));
	pmd_populate(mm, pmd, pmd_pgtable(_pmd));
	spin_unlock(pml);
	anon_vma_unlock_write(vma->anon_vma);
out_mmap:
	mmap_write_unlock(mm);
out_unlock:
	folio_unlock(folio);
	folio_put(folio);
out_count:
	superpage_count_promote(ret);
	return ret;
}
