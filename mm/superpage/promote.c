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
 */

/**
 * DOC: Invariants of promotion
 *
 * Before a range is promoted, on the page table after it was detached from
 * the PMD and GUP-fast was waited out, so that the checks are exact:
 *
 * P1. each entry is none, the zero page, or a present PTE of subpage *k* of
 *     the folio at index *k*, ``PageAnonExclusive`` and mapped once; there
 *     is no swap, migration, uffd-wp or NUMA-hinting entry;
 *
 * P2. the subpage of each hole is mapped nowhere;
 *
 * P3. ``folio_mapcount()`` equals the number of present entries, and the
 *     only other reference is the daemon's: no pin, no I/O, no other
 *     process.  The reference count is checked once more before the holes
 *     are zeroed, because a hole may be a zapped subpage that a pipe still
 *     reads;
 *
 * P4. the PMD gets write permission only if every present PTE had it
 *     (otherwise a write fault reuses the exclusive huge page), dirty if any
 *     PTE was dirty or a hole was zeroed, young if any was young,
 *     soft-dirty if any was.
 *
 * The PMD rmap is added before the PTE rmaps are removed, so the map count
 * never drops to zero and the removals neither account nor requeue
 * anything.  ``PageAnonExclusive`` is cleared on the 511 tail pages: the
 * bit of a PMD-mapped page lives on its head, and a later split of a
 * non-exclusive PMD re-adds PTE mappings without clearing stale tail bits,
 * which would let a copy-on-write page be reused after ``fork()``.  The
 * emptied table is deposited for a later split, so ``pgtables_bytes`` is
 * unchanged.  If any check fails, the table is put back with
 * ``pmd_populate()``; only holes were touched, and they were unmapped.
 */

/**
 * DOC: Locking of promotion
 *
 * Promotion comes in two steps.  The first runs under the mmap read lock (taken
 * by trylock): under the range's PTE lock it takes the candidate's folio lock,
 * by trylock, and a reference, both at once, so that a fault, which takes the
 * folio lock by trylock under the same PTE lock, sees either neither or both,
 * never a bare reference (it would take that for a pin, and after its retries
 * map a 4 KiB page of its own in the range, which no promotion can absorb).
 * Still under that PTE lock, which every zap of the range takes, it checks the
 * reference count (equal to the map count plus its own: no pipe or pin holds a
 * hole) and notes the holes of that instant.  Then it drops the PTE lock and
 * zeroes those holes.  No fault can map a subpage while the folio is locked, so
 * a zeroed hole stays zeroed and unreferenced; up to 2 MiB of clearing thus
 * runs while the mm's other faults, ``mmap()`` and ``munmap()`` go on.
 * (Checking the references before the PTE lock and reading the holes after it
 * would be wrong: a subpage pinned by ``vmsplice()`` and then zapped by
 * ``MADV_DONTNEED`` in between would be zeroed under the pipe.) The second
 * step, the folio still locked, follows khugepaged's ``collapse_huge_page()``:
 * the mmap write lock (no fault under the mmap lock, no GUP, no zap), then
 * ``vma_start_write()`` (faults and ``UFFDIO_MOVE`` under the per-VMA lock;
 * none of them waits for the folio lock, which faults in the range take by
 * trylock).  The candidate is looked up again and must be the same folio.  From
 * there no subpage can be mapped or unmapped, so the reference count, checked
 * again, is exact; subpages zapped between the two steps (``MADV_DONTNEED``
 * under the mmap read lock) are the only holes still to zero.  Then the
 * anon_vma write lock (rmap walkers), the mmu notifiers, the PMD lock around
 * ``pmdp_collapse_flush()``, then ``tlb_remove_table_sync_one()`` and the
 * detached table's PTE lock.  For the same reason as above the scan's check
 * under the mmap read lock (``superpage_promote_ready()``) takes no reference.
 *
 * Unlike ``collapse_huge_page()``, promotion does not sleep in
 * ``mmap_write_lock()``: it retries ``mmap_write_trylock()`` for about
 * 20 ms (16 tries, 1 to 1.5 ms apart) and then gives up, counted as *busy*,
 * leaving the range to a later pass of the scan.  One daemon serves every
 * mm, and a task can hold its mmap lock for minutes: the memcg charge
 * path throttles a task over its cgroup's memory.high (up to 2 s per batch
 * of pages, ``mem_cgroup_handle_over_high()``) with the mmap read lock held
 * if it was populating or faulting.  In a 30-minute stress run (``make
 * stress``), whose stressors run in a cgroup kept over its memory.high, the
 * daemon slept in ``mmap_write_lock()`` of one mm for over six minutes
 * (three hung-task reports) and promoted nothing in any mm meanwhile; the
 * regression test ``held_mmap_lock_does_not_stall_the_daemon`` in
 * ``pressure_test`` builds that case on purpose.  A writer that only tries
 * also never makes the mm's other readers queue behind it.
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
#include "trace.h"

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

/**
 * superpage_candidate() - the promotable reservation of a range
 * @vma: the VMA, which covers the whole range
 * @haddr: the 2 MiB-aligned start of the range
 * @threshold: how many subpages must be mapped
 * @holes: NULL, or where to set the holes of the range (see below)
 *
 * The first present PTE of the range decides: it must pass R1-R3
 * (superpage_resv_of(), as for a fault: subpage k of an exclusive,
 * PTE-mapped, order-9 anonymous folio of this VMA's anon_vma at index k),
 * with at least @threshold subpages mapped, all by this range
 * (none shared after fork, none mapped elsewhere after mremap).  A folio
 * that is not a reservation (a superpage demoted by reclaim) is promoted
 * again only once memory is no longer short (superpage_under_pressure()).
 * Called with the mmap lock held; the verdict is a hint until
 * superpage_promote() has checked every entry.
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
	spinlock_t *ptl;	/* of the range's page table */
	pte_t *start, pte;
	int nr, k;

	mmap_assert_locked(vma->vm_mm);
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
		break;
	}
	if (k == HPAGE_PMD_NR)
		goto out;
	folio = superpage_resv_of(vma, pte, haddr, k, k);
	if (!folio)
		goto out;
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
 *
 * Return: true if the range holds a reservation that promotion would try.
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

	VM_WARN_ON_ONCE_FOLIO(!folio_test_locked(folio), folio);
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
	DECLARE_BITMAP(more, HPAGE_PMD_NR);
	unsigned int k, holes = 0;

	bitmap_zero(more, HPAGE_PMD_NR);
	for (k = 0; k < HPAGE_PMD_NR; k++) {
		if (atomic_read(&folio_page(folio, k)->_mapcount) != -1)
			continue;
		holes++;
		if (!test_bit(k, zeroed))
			__set_bit(k, more);
	}
	superpage_zero_list(folio, more);
	bitmap_or(zeroed, zeroed, more, HPAGE_PMD_NR);
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

	mmap_assert_write_locked(vma->vm_mm);
	VM_WARN_ON_ONCE_FOLIO(!folio_test_locked(folio), folio);
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
	trace_superpage_promote(mm, haddr, ret);
	return ret;
}
