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
 *   emptied and freed after an RCU grace period; a new one is deposited,
 *   as for a THP, so that a later PMD split needs no allocation.
 */

/**
 * DOC: Invariants of promotion
 *
 * Before a range is promoted, on its page table, with the PMD lock and the
 * PTE lock held, so that no entry can change but for the hardware's
 * accessed and dirty bits:
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
 * which would let a copy-on-write page be reused after ``fork()``.  A new
 * table is deposited for a later split, and the emptied one freed after an
 * RCU grace period, so ``pgtables_bytes`` is unchanged; the new table is
 * charged to the mm's memory cgroup, as the old one was, and allocated
 * before any lock is taken: the charge may reclaim.  If any check
 * fails, nothing was changed; only holes were zeroed, and they were
 * unmapped.
 */

/**
 * DOC: Locking of promotion
 *
 * Promotion holds the VMA of the range locked for read, as a fault does:
 * by its per-VMA lock (``lock_vma_under_rcu()``), or, when that cannot be
 * had, by the mmap read lock, as ``collapse_pte_mapped_thp()`` does to
 * replace the page table of a file THP.  Either excludes every change of
 * the VMA (``munmap()``, ``mremap()``, ``mprotect()``, ``fork()`` and
 * khugepaged write-lock it); with the per-VMA lock, ``mmap()`` and
 * ``munmap()`` of the mm's other VMAs do not wait for promotion at all, and
 * with the mmap read lock a writer waits out the switch of one range
 * (microseconds), never a clearing.  Both are taken by trylock (the
 * per-VMA lock only ever is).  Promotion comes in two steps.  The first,
 * with the VMA locked: under the range's PTE lock it takes the
 * candidate's folio lock, by trylock, and a reference, both at once, so
 * that a fault, which takes the folio lock by trylock under the same PTE
 * lock, sees either neither or both, never a bare reference (it would take
 * that for a pin, and after its retries map a 4 KiB page of its own in the
 * range, which no promotion can absorb).  Still under that PTE lock, which
 * every zap of the range takes, it checks the reference count (equal to the
 * map count plus its own: no pipe or pin holds a hole) and notes the holes of
 * that instant.  Then it drops the PTE lock and the VMA's lock and zeroes
 * those holes.  No fault can map a subpage while the folio is locked, so a zeroed
 * hole stays zeroed and unreferenced.  (Checking the references before the PTE
 * lock and reading the holes after it would be wrong: a subpage pinned by
 * ``vmsplice()`` and then zapped by ``MADV_DONTNEED`` in between would be
 * zeroed under the pipe.)
 *
 * The second step, the folio still locked, locks the VMA again (by
 * trylock), looks the candidate up again (the same folio), then takes the
 * anon_vma write lock (rmap walkers), starts the mmu notifiers, and takes the
 * PMD lock and, nested, the PTE lock of the range's table, in
 * ``collapse_pte_mapped_thp()``'s order.  With both held no entry of the range
 * can be set or cleared and no table installed or removed, so P1-P3 are
 * checked on the live table.  Faults under the per-VMA lock, zaps under the
 * mmap read lock (``MADV_DONTNEED``, the OOM reaper, which is checked for
 * under the PMD lock) and NUMA hinting may have
 * changed the range up to that instant: a changed entry fails P1, and a
 * subpage zapped since the first step is a hole not yet zeroed, which the
 * second step zeroes with every lock but the folio's dropped before it tries
 * again.  The PTEs are cleared with ``ptep_get_and_clear()``, whose result
 * carries the last accessed and dirty bits.  The PMD then goes from the table
 * to an invalid huge entry (``pmd_mkinvalid()``: a huge PMD to software, which
 * waits for the PMD lock; not present to the hardware and to GUP-fast), the
 * 4 KiB translations are flushed from every CPU that ran the mm
 * (``flush_tlb_range()``), and the huge entry is set: the PMD is never none,
 * because a walker that reads a PMD without its lock (``zap_pmd_range()``,
 * the fault path) skips a none PMD or installs a table of its own there,
 * which would lose a ``MADV_DONTNEED`` or a subpage; and no CPU holds a 4 KiB
 * and a 2 MiB translation of the range at once.  A walker that read the old
 * PMD finds it changed once it holds the PTE lock (``pte_offset_map_lock()``;
 * GUP-fast rechecks the PMD after taking its reference), or finds the emptied
 * table's entries none where it expected its own (``pte_same()``), and looks
 * again.  ``move_pages_pte()`` (``UFFDIO_MOVE``, whose source need not be
 * registered with userfaultfd) rechecks the source PMD under its PTE lock.
 * Walkers that only read, or only advise (``MADV_FREE``, ``MADV_COLD``,
 * ``MADV_PAGEOUT``, MGLRU's page table walk), may skip the range once.  The
 * old table may still be mapped by such a walker under ``rcu_read_lock()``,
 * so it is freed with ``pte_free_defer()``, and a new table is deposited for
 * a later split.  The broadcast ``tlb_remove_table_sync_one()`` of
 * ``collapse_huge_page()`` is not needed: no table is freed before a grace
 * period, and GUP-fast rechecks the PMD.  The reference count is read under
 * the PTE lock; a GUP-fast reference taken after that is taken on a subpage
 * that stays mapped, by the PMD, and is accounted for as on any huge page
 * (``fork()`` copies a pinned huge page).
 *
 * The VMA is locked again by trylock, retried for about 20 ms (16 tries, 1 to
 * 1.5 ms apart), because a folio lock is held, which a fault takes after
 * its VMA's lock or the mmap lock; if writers keep both, promotion gives
 * up, counted as *busy*,
 * leaving the range to a later pass of the scan.  One daemon serves every mm,
 * and a task can hold its mmap lock for minutes: the memcg charge path
 * throttles a task over its cgroup's memory.high (up to 2 s per batch of
 * pages, ``mem_cgroup_handle_over_high()``) with the mmap read lock held if it
 * was populating or faulting.  With the mmap write lock, which promotion took
 * until it moved to read locks, the daemon slept in ``mmap_write_lock()``
 * of one such mm for over six minutes in a 30-minute stress run (three
 * hung-task reports) and promoted nothing in any mm meanwhile; the regression
 * test ``held_mmap_lock_does_not_stall_the_daemon`` in ``pressure_test``
 * builds that case on purpose.
 */

#include <linux/delay.h>
#include <linux/highmem.h>
#include <linux/huge_mm.h>
#include <linux/hugetlb.h>
#include <linux/ksm.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/oom.h>
#include <linux/pgalloc.h>
#include <linux/pgtable.h>
#include <linux/rmap.h>
#include <linux/sched/mm.h>
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
 * The VMA cannot change: its own lock, or the mmap lock, is held for read
 * (superpage_lock_vma(); the scan holds the mmap lock).
 */
static void superpage_assert_vma_locked(struct vm_area_struct *vma)
{
	if (!rwsem_is_locked(&vma->vm_mm->mmap_lock))
		vma_assert_locked(vma);
}

/*
 * The VMA of @haddr, locked for read: by its per-VMA lock if it can be
 * had, as a fault takes it, else by the mmap lock, taken by trylock (the
 * caller may hold a folio lock, which a fault takes after either lock;
 * vma_start_read() only ever tries).  *@mmap_locked says which one, for
 * superpage_unlock_vma().  Returns the VMA, NULL if no VMA covers @haddr,
 * or ERR_PTR(-EBUSY) if neither lock could be had.
 */
static struct vm_area_struct *superpage_lock_vma(struct mm_struct *mm,
						 unsigned long haddr,
						 bool *mmap_locked)
{
	struct vm_area_struct *vma = lock_vma_under_rcu(mm, haddr);

	*mmap_locked = false;
	if (vma)
		return vma;
	/* No VMA there, or it is being changed: ask under the mmap lock. */
	if (!mmap_read_trylock(mm))
		return ERR_PTR(-EBUSY);
	*mmap_locked = true;
	vma = vma_lookup(mm, haddr);
	if (!vma) {
		mmap_read_unlock(mm);
		*mmap_locked = false;
	}
	return vma;
}

static void superpage_unlock_vma(struct vm_area_struct *vma, bool mmap_locked)
{
	if (mmap_locked)
		mmap_read_unlock(vma->vm_mm);
	else
		vma_end_read(vma);
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
 * Called with the VMA locked (superpage_assert_vma_locked()); the verdict is a hint until
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

	superpage_assert_vma_locked(vma);
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
		/* zero.c's worker holds a reference while it zeroes (Z2). */
		k = superpage_folio_unusable(folio) ? -ESTALE :
		    superpage_zero_refs(folio) ? -EBUSY :
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

/*
 * Zero the subpages of the locked @folio set in @holes, but those that
 * zero.c zeroed ahead (its zeroed run: zero, and not mapped since, Z1).
 */
static void superpage_zero_list(struct folio *folio, const unsigned long *holes)
{
	unsigned int k, lo, hi, clo, chi;

	VM_WARN_ON_ONCE_FOLIO(!folio_test_locked(folio), folio);
	superpage_zeroed_get(folio, &lo, &hi, &clo, &chi);
	for_each_set_bit(k, holes, HPAGE_PMD_NR) {
		if (k >= lo && k < hi)
			continue;
		clear_highpage(folio_page(folio, k));
		cond_resched();
	}
}

/*
 * The first step of a promotion, with the VMA locked for read: find the
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
	bool mmap_locked;

	*ret = SUPERPAGE_PROMOTE_LOCKED;
	vma = superpage_lock_vma(mm, haddr, &mmap_locked);
	if (IS_ERR(vma))
		return NULL;
	*ret = SUPERPAGE_PROMOTE_NONE;
	if (!vma)
		return NULL;
	if (range_in_vma(vma, haddr, haddr + HPAGE_PMD_SIZE) &&
	    vma->anon_vma && __superpage_vma_eligible(vma))
		folio = superpage_candidate(vma, haddr, threshold, zeroed);
	if (IS_ERR(folio)) {
		*ret = PTR_ERR(folio) == -EBUSY ? SUPERPAGE_PROMOTE_BUSY :
		       PTR_ERR(folio) == -EPERM ? SUPERPAGE_PROMOTE_PINNED :
		       SUPERPAGE_PROMOTE_CHANGED;
		folio = NULL;
	}
	superpage_unlock_vma(vma, mmap_locked);
	if (folio)
		superpage_zero_list(folio, zeroed);
	return folio;
}

struct superpage_ptes {
	unsigned int present;
	bool all_write, dirty, young, soft_dirty;
};

/*
 * P1-P3 for the page table @pte of @folio, collecting the PTE bits for P4.
 * Holes that were not zeroed (not set in @zeroed: subpages zapped since
 * superpage_candidate()) are set in @more; the caller zeroes them with
 * every lock but the folio's dropped and tries again.  Called with the
 * table's PTE lock and the PMD lock held, so that no entry but the
 * hardware's accessed and dirty bits can change.  A GUP-fast reference
 * that GUP-fast drops again once it sees the entry changed fails P3
 * (PINNED), and the range is tried again later; one that it keeps is on a
 * subpage that stays mapped, by the PMD.
 */
static enum superpage_promote_result
superpage_check_ptes(struct vm_area_struct *vma, unsigned long haddr,
		     pte_t *pte, struct folio *folio,
		     const unsigned long *zeroed, unsigned long *more,
		     struct superpage_ptes *s)
{
	unsigned int k;

	superpage_assert_vma_locked(vma);
	VM_WARN_ON_ONCE_FOLIO(!folio_test_locked(folio), folio);
	*s = (struct superpage_ptes){ .all_write = true };
	for (k = 0; k < HPAGE_PMD_NR; k++) {
		struct page *sub = folio_page(folio, k);
		pte_t entry = ptep_get(pte + k);

		if (pte_none(entry) ||
		    (pte_present(entry) && is_zero_pfn(pte_pfn(entry)))) {
			if (atomic_read(&sub->_mapcount) != -1)
				return SUPERPAGE_PROMOTE_CHANGED;
			if (!test_bit(k, zeroed))
				__set_bit(k, more);
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
	}
	if (!s->present)
		return SUPERPAGE_PROMOTE_CHANGED;
	/*
	 * P3; the references: one per PTE and ours.  Checked before the
	 * holes in @more are zeroed: a pipe may hold a zapped subpage.
	 */
	if (folio_mapcount(folio) != s->present)
		return SUPERPAGE_PROMOTE_CHANGED;
	if (folio_maybe_dma_pinned(folio) ||
	    folio_ref_count(folio) != s->present + 1)
		return SUPERPAGE_PROMOTE_PINNED;
	return SUPERPAGE_PROMOTED;
}

/*
 * Clear the PTEs of the table @pte, which P1-P3 passed, and swap their
 * mappings of @folio for a PMD mapping, keeping the counts of P3.
 * ptep_get_and_clear() returns the accessed and dirty bits that the
 * hardware set up to that instant; a CPU that still caches a
 * translation of the range cannot set them in a cleared entry (it
 * faults instead, and finds the PMD), so the PMD made from them (P4)
 * loses none.  Called with the table's PTE lock and the PMD lock held.
 */
static pmd_t superpage_switch_rmap(struct vm_area_struct *vma,
				   unsigned long haddr, pte_t *pte,
				   struct folio *folio,
				   struct superpage_ptes *s)
{
	unsigned int k, run = 0, holes = HPAGE_PMD_NR - s->present;
	struct mm_struct *mm = vma->vm_mm;
	pmd_t entry;

	/*
	 * The PMD mapping first: the folio's mapcount never drops to zero and
	 * the PTE removals below account nothing and queue nothing.
	 */
	folio_add_anon_rmap_pmd(folio, &folio->page, vma, haddr, RMAP_EXCLUSIVE);
	for (k = 0; k <= HPAGE_PMD_NR; k++) {
		pte_t e = k < HPAGE_PMD_NR ? ptep_get(pte + k) : __pte(0);
		bool mapped = !pte_none(e) && !is_zero_pfn(pte_pfn(e));

		if (k < HPAGE_PMD_NR && !pte_none(e)) {
			e = ptep_get_and_clear(mm, haddr + k * PAGE_SIZE, pte + k);
			if (mapped) {
				s->dirty |= pte_dirty(e);
				s->young |= pte_young(e);
				s->soft_dirty |= pte_soft_dirty(e);
			} else {
				/* A zero page that KSM merged is counted as such. */
				ksm_might_unmap_zero_page(mm, e);
			}
		}
		if (mapped) {
			run++;
		} else if (run) {
			folio_remove_rmap_ptes(folio, folio_page(folio, k - run),
					       run, vma);
			run = 0;
		}
	}
	/* The removals munlock an mlocked folio; the PMD keeps it locked. */
	mlock_vma_folio(folio, vma);
	for (k = 1; k < HPAGE_PMD_NR; k++)
		ClearPageAnonExclusive(folio_page(folio, k));
	folio_ref_sub(folio, s->present - 1);
	add_mm_counter(mm, MM_ANONPAGES, holes);

	entry = mk_huge_pmd(&folio->page, vma->vm_page_prot);
	if (s->all_write && (vma->vm_flags & VM_WRITE))
		entry = pmd_mkwrite(entry, vma);
	if (s->dirty || holes)
		entry = pmd_mkdirty(entry);
	if (s->soft_dirty)
		entry = pmd_mksoft_dirty(entry);
	return s->young ? pmd_mkyoung(entry) : pmd_mkold(entry);
}

/*
 * A page table for @mm, charged to its memory cgroup as a table allocated
 * by a fault would be: the daemon, a kernel thread, has no cgroup of its
 * own, and the table it replaces was charged.
 */
static pgtable_t superpage_pte_alloc(struct mm_struct *mm)
{
	struct mem_cgroup *memcg = get_mem_cgroup_from_mm(mm);
	struct mem_cgroup *old = set_active_memcg(memcg);
	pgtable_t pgtable = pte_alloc_one(mm);

	set_active_memcg(old);
	mem_cgroup_put(memcg);
	return pgtable;
}

/*
 * The second step of a promotion, with the VMA locked for read, @folio
 * locked and its holes in @zeroed zeroed: check the range's page table
 * and replace it by a PMD mapping of @folio, in one pmdp_establish(),
 * under the anon_vma write lock, the PMD lock and the PTE lock.  Holes
 * still to zero are set in @more (SUPERPAGE_PROMOTE_CHANGED).  *@pgtable,
 * allocated by the caller before it took any lock, is deposited for a
 * later split and set to NULL if the range is promoted.
 */
static enum superpage_promote_result
superpage_switch(struct vm_area_struct *vma, unsigned long haddr,
		 struct folio *folio, const unsigned long *zeroed,
		 unsigned long *more, pgtable_t *pgtable)
{
	enum superpage_promote_result ret = SUPERPAGE_PROMOTE_CHANGED;
	struct mm_struct *mm = vma->vm_mm;
	struct mmu_notifier_range range;
	struct superpage_ptes s;
	pgtable_t old = NULL;
	spinlock_t *pml, *ptl;
	pmd_t *pmd, pmdval, entry;
	pte_t *pte;

	pmd = superpage_pte_table(mm, haddr);
	if (!pmd)
		return ret;
	anon_vma_lock_write(vma->anon_vma);
	mmu_notifier_range_init(&range, MMU_NOTIFY_CLEAR, 0, mm, haddr,
				haddr + HPAGE_PMD_SIZE);
	mmu_notifier_invalidate_range_start(&range);
	pml = pmd_lock(mm, pmd);
	pmdval = pmdp_get(pmd);
	if (pmd_none(pmdval) || !pmd_present(pmdval) ||
	    pmd_trans_huge(pmdval) || pmd_bad(pmdval))
		goto out_pml;
	/*
	 * The OOM reaper zaps under the PTE or PMD lock after it marks the
	 * mm unstable: either it has not reached this range, and will zap
	 * the PMD, or this sees the mark.
	 */
	if (check_stable_address_space(mm)) {
		ret = SUPERPAGE_PROMOTE_NONE;
		goto out_pml;
	}
	/* The PMD lock keeps the table in place: no recheck needed. */
	pte = pte_offset_map_nolock(mm, pmd, haddr, &ptl);
	if (!pte)
		goto out_pml;
	if (ptl != pml)
		spin_lock_nested(ptl, SINGLE_DEPTH_NESTING);
	ret = superpage_check_ptes(vma, haddr, pte, folio, zeroed, more, &s);
	/* Holes may be zeroed only if P3 held: none is referenced. */
	if (ret != SUPERPAGE_PROMOTED) {
		bitmap_zero(more, HPAGE_PMD_NR);
		goto out_ptl;
	}
	if (!bitmap_empty(more, HPAGE_PMD_NR)) {
		ret = SUPERPAGE_PROMOTE_CHANGED;
		goto out_ptl;
	}

	entry = superpage_switch_rmap(vma, haddr, pte, folio, &s);
	/* Every subpage is mapped now: the folio is no longer partial. */
	deferred_split_clear_partially_mapped(folio);
	/* A huge page now, no longer a reservation. */
	superpage_resv_end(folio);
	/* The zeroed holes must be visible before the PMD is. */
	smp_wmb();
	pgtable_trans_huge_deposit(mm, pmd, *pgtable);
	*pgtable = NULL;
	old = pmd_pgtable(pmdval);
	/*
	 * The PMD goes from the table to the huge entry without passing
	 * through none: a walker under the mmap read lock (MADV_DONTNEED's
	 * zap, a fault) that reads it without the PMD lock would skip a
	 * none PMD, or fill it with a table of its own.  First an invalid
	 * huge entry, which software takes for a huge PMD (and waits for
	 * the PMD lock) and the hardware does not map, then the flush of
	 * the 4 KiB translations of every CPU that ran the mm, then the
	 * entry: no CPU ever holds a 4 KiB and a 2 MiB translation of the
	 * range at once (a stale zero page next to the new mapping), as
	 * __split_huge_pmd_locked() does the other way round.
	 */
	pmdp_establish(vma, haddr, pmd, pmd_mkinvalid(entry));
	flush_tlb_range(vma, haddr, haddr + HPAGE_PMD_SIZE);
	set_pmd_at(mm, haddr, pmd, entry);
	update_mmu_cache_pmd(vma, haddr, pmd);
out_ptl:
	if (ptl != pml)
		spin_unlock(ptl);
	pte_unmap(pte);
out_pml:
	spin_unlock(pml);
	mmu_notifier_invalidate_range_end(&range);
	anon_vma_unlock_write(vma->anon_vma);
	/* Unreachable and flushed: freed after an RCU grace period. */
	if (old)
		pte_free_defer(mm, old);
	return ret;
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
	case SUPERPAGE_PROMOTE_LOCKED:
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
 * superpage_lock_vma(), tried for about SUPERPAGE_MMAP_TRIES milliseconds:
 * the caller holds a folio lock, which a fault takes after its VMA's lock
 * or the mmap lock, and a writer may wait for minutes behind a reader (a
 * populate or an mlock() throttled by memory.high, a fault waiting for
 * I/O), which would stop the one daemon that serves every mm: give up
 * instead, and leave the range to a later pass of the scan (a folio that
 * was busy is tried again sooner: daemon.c).
 */
#define SUPERPAGE_MMAP_TRIES	16

static struct vm_area_struct *superpage_lock_vma_retry(struct mm_struct *mm,
						       unsigned long haddr,
						       bool *mmap_locked)
{
	struct vm_area_struct *vma;
	int i;

	for (i = 0; i < SUPERPAGE_MMAP_TRIES; i++) {
		vma = superpage_lock_vma(mm, haddr, mmap_locked);
		if (!IS_ERR(vma))
			return vma;
		usleep_range(1000, 1500);
	}
	return vma;
}

/* How often holes zapped meanwhile are zeroed before promotion gives up. */
#define SUPERPAGE_ZERO_TRIES	3

/**
 * superpage_promote() - map a populated reservation with one PMD, in place
 * @mm: the address space, pinned by the caller (mmget)
 * @haddr: the 2 MiB-aligned start of the range
 *
 * Locks the candidate and zeroes its holes (superpage_promote_prepare());
 * then, with the folio still locked, locks the VMA again, or
 * gives up with SUPERPAGE_PROMOTE_BUSY if a writer keeps it for about
 * 20 ms (see superpage_lock_vma_retry()), and switches the range to a PMD
 * mapping (superpage_switch()).  The range is promoted if it lies in one
 * eligible VMA and superpage_candidate() finds a reservation with
 * vm.superpage_promote_threshold subpages mapped, and every entry then
 * passes P1-P3.  Subpages zapped meanwhile are zeroed with the VMA lock
 * dropped, and the switch tried again, up to SUPERPAGE_ZERO_TRIES times.
 *
 * Return: the outcome; only BUSY, PINNED and CHANGED are failures.
 */
enum superpage_promote_result superpage_promote(struct mm_struct *mm,
						unsigned long haddr)
{
	unsigned int threshold = READ_ONCE(sysctl_superpage_promote_threshold);
	enum superpage_promote_result ret = SUPERPAGE_PROMOTE_NONE;
	DECLARE_BITMAP(zeroed, HPAGE_PMD_NR);
	DECLARE_BITMAP(more, HPAGE_PMD_NR);
	struct vm_area_struct *vma;
	struct folio *folio;
	pgtable_t pgtable;
	bool mmap_locked;
	int tries = 0;

	/*
	 * The table deposited for a later split is a new one: the range's
	 * table may still be read by a walker that found it before the
	 * switch (pte_offset_map_nolock(), under RCU), so it is freed only
	 * after a grace period, never deposited and reused, or freed by a
	 * zap of the PMD at once.  It is allocated, and charged, before any
	 * lock is taken: a charge can reclaim for long in this nice-19
	 * thread, and a munmap() of the range would wait for the VMA lock
	 * that long (khugepaged allocates before it locks too).
	 */
	pgtable = superpage_pte_alloc(mm);
	if (!pgtable) {
		ret = SUPERPAGE_PROMOTE_BUSY;
		goto out_count;
	}
	bitmap_zero(zeroed, HPAGE_PMD_NR);
	folio = superpage_promote_prepare(mm, haddr, threshold, zeroed, &ret);
	if (!folio)
		goto out_free;
again:
	bitmap_zero(more, HPAGE_PMD_NR);
	/*
	 * Trylock only, with the folio locked: a task holding the VMA lock
	 * never waits for this folio's lock (faults take it by trylock).
	 */
	vma = superpage_lock_vma_retry(mm, haddr, &mmap_locked);
	if (IS_ERR(vma)) {
		ret = SUPERPAGE_PROMOTE_LOCKED;
		goto out_unlock;
	}
	ret = SUPERPAGE_PROMOTE_NONE;
	if (!vma)
		goto out_unlock;
	/* The OOM reaper may be tearing the address space down. */
	if (check_stable_address_space(mm))
		goto out_mmap;
	if (!range_in_vma(vma, haddr, haddr + HPAGE_PMD_SIZE) ||
	    !vma->anon_vma || !__superpage_vma_eligible(vma))
		goto out_mmap;
	/* The range may have been unmapped or remapped meanwhile. */
	ret = SUPERPAGE_PROMOTE_CHANGED;
	if (superpage_candidate(vma, haddr, threshold, NULL) != folio)
		goto out_mmap;
	if (superpage_folio_unusable(folio))
		goto out_mmap;
	ret = superpage_switch(vma, haddr, folio, zeroed, more, &pgtable);
out_mmap:
	superpage_unlock_vma(vma, mmap_locked);
	/*
	 * Subpages zapped since the first step (MADV_DONTNEED) are holes to
	 * zero too; the folio lock keeps them unmapped, and P3 held.
	 */
	if (ret == SUPERPAGE_PROMOTE_CHANGED &&
	    !bitmap_empty(more, HPAGE_PMD_NR) &&
	    ++tries < SUPERPAGE_ZERO_TRIES) {
		superpage_zero_list(folio, more);
		bitmap_or(zeroed, zeroed, more, HPAGE_PMD_NR);
		goto again;
	}
out_unlock:
	folio_unlock(folio);
	folio_put(folio);
out_free:
	if (pgtable)
		pte_free(mm, pgtable);
out_count:
	superpage_count_promote(ret);
	trace_superpage_promote(mm, haddr, ret);
	return ret;
}
