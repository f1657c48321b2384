// SPDX-License-Identifier: GPL-2.0
/*
 * Reservation-based transparent superpages: the anonymous fault path.
 *
 * What this file does
 *   The first anonymous write fault in a 2 MiB-aligned range that lies
 *   inside an eligible VMA creates a *reservation*: one order-9 anonymous
 *   folio,
 *   allocated without zeroing (or taken from the pool of frames zeroed
 *   in advance, prezero.c) and charged in full to the memcg, of which
 *   only the faulting subpage is zeroed, if it is not yet, and mapped
 *   (with a PTE).  A later
 *   fault in the range finds the reservation through a present neighbour
 *   PTE in the same page table, validates it, and maps the matching subpage
 *   of the same folio, so the range fills physically contiguous.  A read
 *   fault in a range without a reservation maps the zero page, as it does
 *   without the feature (nothing is allocated or charged), and the first
 *   write there maps the reservation's subpage in its place (from
 *   wp_page_copy(), superpage_wp_zero_fault()), creating the reservation
 *   if the range has none: zero page entries count as unused.  When the
 *   fault continues a run of present entries (a sequential fill, up or
 *   down), it maps a naturally aligned cluster of unmapped subpages around
 *   the faulting one, up to 2^vm.superpage_cluster_max_order, and at most
 *   twice the run; a scattered fault maps its own subpage only.  The
 *   cluster is derived from the page table alone.  Of it, the fault zeroes
 *   at most vm.superpage_fault_zero_pages subpages itself; the others it
 *   maps only if zero.c's worker zeroed them ahead of the fill (the
 *   folio's zeroed run), and leaves them to later faults otherwise, so
 *   that no fault clears a whole cluster.  The folio
 *   sits on the LRU and, from its creation, on the deferred split queue as
 *   partially mapped, so reclaim and the deferred split shrinker split it
 *   (freeing the unused subpages) before any of it could be swapped or
 *   migrated whole.  Creation and growth stamp the folio, and growth
 *   moves it to the tail of that queue, so that reclaim breaks the least
 *   recently grown reservations first, and a failed
 *   order-9 allocation breaks stale ones to make room (break.c).  The
 *   first reservation of an mm registers it with ksuperpaged, and a
 *   fault that brings a reservation to
 *   vm.superpage_promote_threshold (or fills it) asks the daemon to
 *   promote the range (daemon.c, promote.c).
 *
 * The page table is the index
 *   No per-mm structure records reservations.  Subpage k of the folio is
 *   either mapped at haddr + k * PAGE_SIZE by this page table or not mapped
 *   at all; fork, mremap, munmap, migration and exit act on page tables and
 *   folios, so nothing here can go stale.  superpage_find_resv() probes the
 *   entries nearest the faulting one (O(1) for a sequential fill, 512 at
 *   most) and takes the first present one as the candidate.
 *
 * The VMA bounds every mapping
 *   A reservation outlives the VMA it was made in: munmap, mprotect,
 *   mremap and madvise can cut its 2 MiB range after creation, and the
 *   pieces share the page table.  So the fault path looks only at the
 *   entries of the faulting VMA's part of the range (struct
 *   superpage_span): the lookup takes its candidate there, and a cluster
 *   is clamped there.  A range that is cut goes on growing inside each
 *   piece that already maps some of its subpages (R2 ties the folio to
 *   the VMA's anon_vma and offset), never across a VMA edge; a piece that
 *   maps none of them falls back to the usual path.  Such a range is
 *   promoted only once one VMA covers it whole again (promote.c), and is
 *   otherwise broken by reclaim like any partly used reservation.
 */

/**
 * DOC: Invariants of the fault path
 *
 * Before a subpage is mapped, every entry that the fault path reads or
 * writes lies inside the faulting VMA (see "The VMA bounds every
 * mapping"), and:
 *
 * R1. the candidate PTE is present, not a NUMA hinting PTE, and maps a
 *     normal page of an order-9 anonymous, non-KSM folio that is not
 *     PMD-mapped;
 *
 * R2. the candidate sits at its own index in the folio, the folio's index
 *     lines the faulting subpage up with its address, and the folio's
 *     anon_vma is the VMA's own (kept across mprotect splits and mremap;
 *     the same root is not enough: a sibling VMA's anon_vma can be freed
 *     while the folio stays mapped here);
 *
 * R3. the candidate is ``PageAnonExclusive``.  ``fork()`` clears that bit on
 *     every page it copies and a large folio never gets it back, so a
 *     reservation stops growing in parent and child after fork (a candidate
 *     in a ``MADV_DONTFORK`` VMA keeps the bit; R6 covers that case);
 *
 * R4. with the folio locked: not in the swap cache, not under writeback,
 *     swap-backed, no hardware-poisoned page;
 *
 * R5. the target subpage is unmapped (its own ``_mapcount`` is -1;
 *     ``page_mapped()`` is folio-wide), and its entry is none, or the zero
 *     page that a write replaces (below);
 *
 * R6. the folio's reference count equals its map count: no reference from
 *     a zap still waiting for its TLB flush, no pin, no pipe buffer is
 *     outstanding, so a subpage that was mapped before (here or, before a
 *     fork, in another process) is never handed out again while something
 *     else can still reach it.  This is checked whatever the target's
 *     ``PageAnonExclusive`` says: a clear bit does not prove that the
 *     subpage was never mapped.
 *
 * Security invariant: the unmapped subpages of a reservation hold a previous
 * owner's data.  A subpage is zeroed before its PTE is set (``smp_wmb()``,
 * or ``__folio_mark_uptodate()`` on creation, orders the two), by the fault
 * or ahead of it by zero.c's worker, under the folio lock that the fault
 * holds (see Z1 there for what the zeroed run guarantees); GUP,
 * ``/proc/pid/mem``, ptrace and core dumps walk page tables, where an
 * unmapped subpage is a hole.  A new reservation is queued as partially
 * mapped *before* it goes on the LRU, so reclaim never sees it unflagged:
 * swap-out and the deferred split shrinker split a partially mapped folio
 * first, which frees the unmapped subpages.  Migration splits it too, and
 * if the split fails it copies the whole folio to a new one that is
 * queued with the same flag: the data stays inside the kernel, unmapped.
 */

/**
 * DOC: Locking of the fault path
 *
 * Faults come with the mmap read lock or the per-VMA lock.  The lookup and
 * growth run under the PTE lock and take the folio lock with
 * ``folio_trylock()`` only: sleeping on a folio lock is not allowed under the
 * PTE lock.  Growth unlocks the folio before the PTE lock, so that a fault of
 * another thread waiting for that PTE lock finds the folio unlocked.  A fault
 * that still finds the reservation busy (the folio lock held by reclaim, a
 * split, migration or zero.c's worker, or R6 failing on an extra reference)
 * must not fall back: a 4 KiB page of the usual path would sit inside the
 * range for good, which no promotion can absorb, and khugepaged leaves
 * reservations alone.  It drops the
 * PTE lock and looks again, up to 8 times (``cond_resched()`` in between); then
 * a contended lock makes the access fault again (the holder never waits for the
 * mmap lock, which comes first in the lock order), while an extra reference
 * that stays makes it take the usual path, counted in
 * ``superpage_resv_fallback``: a pipe or a pin may hold a zapped subpage, which
 * must never be handed out again, and waiting for it could wait forever.
 * Before this, two threads filling interleaved 64 KiB chunks of 256 MiB left up
 * to 5.5% of it 4 KiB-mapped for good, and eight threads on 64 MiB up to 12.5%
 * (``threads_test``).  A fault on a subpage that zero.c's worker is zeroing
 * (with the folio unlocked) never sleeps for it: under the folio and PTE
 * locks it takes the near end of the worker's claim back
 * (``superpage_zero_steal()``), waiting only for the one subpage being
 * cleared, and zeroes what it maps itself; no fault is retried because of
 * the worker.  The subpages of a cluster that the fault zeroes itself, when
 * there are more than one, are zeroed with the PTE lock dropped, so that the
 * clearing runs preemptible: the fault keeps the folio lock and a
 * reference, which keep every other fault off the folio's unmapped subpages,
 * and after retaking the PTE lock it checks the target entry, the reservation
 * (found again) and R4-R6 once more, and maps only the faulting subpage if
 * another entry of the cluster was filled meanwhile.  Creation drops the PTE
 * lock to allocate and charge the folio (both may sleep), zeroes the faulting
 * subpage, retakes the PTE lock and goes on only if the whole range is still
 * empty; a lost race frees the folio and returns, and the refault finds the
 * winner's reservation.  The deferred split queue lock nests inside the PTE
 * lock, as in the rmap removal path.  The documented order of ``mm/rmap.c``
 * applies: mmap_lock > folio lock > anon_vma > PTE lock.
 */

#include <linux/highmem.h>
#include <linux/huge_mm.h>
#include <linux/khugepaged.h>
#include <linux/ksm.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/compaction.h>
#include <linux/oom.h>
#include <linux/rmap.h>
#include <linux/superpage.h>
#include <linux/swap.h>
#include <linux/userfaultfd_k.h>
#include <linux/vmstat.h>

#include "../internal.h"
#include "internal.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

/*
 * See superpage_vma_eligible().  In mode 1 the THP sysfs policy decides too
 * (TVA_ENFORCE_SYSFS: enabled never/madvise/always and MADV_HUGEPAGE).
 */
bool __superpage_vma_eligible(struct vm_area_struct *vma)
{
	enum superpage_mode mode = superpage_mode();
	unsigned long tva_flags = TVA_IN_PF;

	/* Switched off since the caller's superpage_enabled(). */
	if (mode == SUPERPAGE_OFF)
		return false;
	if (!vma_is_anonymous(vma) || (vma->vm_flags & (VM_SHARED | VM_DROPPABLE)))
		return false;
	if (userfaultfd_armed(vma))
		return false;
	/*
	 * MLOCK_ONFAULT locks what is touched: a reservation would lock, and
	 * count in Mlocked, 2 MiB for one page.  mlock() without it populates
	 * the whole range at once, which a reservation fills exactly.
	 */
	if (vma->vm_flags & VM_LOCKONFAULT)
		return false;
	if (mode == SUPERPAGE_THP_POLICY)
		tva_flags |= TVA_ENFORCE_SYSFS;
	return thp_vma_allowable_order(vma, vma->vm_flags, tva_flags, PMD_ORDER);
}

/**
 * superpage_resv_of() - R1-R3: the reservation that a PTE maps, if any
 * @vma: the VMA of the fault (or of the promotion)
 * @pte: an entry of the range, at index @j
 * @haddr: the 2 MiB-aligned start of the range
 * @j: the index of @pte in the range
 * @i: the index that the folio must line up with @vma at (the fault's)
 *
 * The one check of R1-R3, for the fault path and for promotion (which
 * passes @i == @j).  Special entries (the zero page) are skipped before
 * vm_normal_page().  Called under the range's PTE lock.
 *
 * Return: the folio of a reservation made for this range of @vma, or NULL.
 */
struct folio *superpage_resv_of(struct vm_area_struct *vma, pte_t pte,
				unsigned long haddr, unsigned int j,
				unsigned int i)
{
	struct folio *folio;
	struct page *page;

	if (!pte_present(pte) || pte_protnone(pte) || pte_special(pte))
		return NULL;
	page = vm_normal_page(vma, haddr + j * PAGE_SIZE, pte);
	if (!page)
		return NULL;
	folio = page_folio(page);
	if (folio_order(folio) != HPAGE_PMD_ORDER || !folio_test_anon(folio) ||
	    folio_test_ksm(folio) || folio_entire_mapcount(folio))
		return NULL;
	if (folio_page_idx(folio, page) != j ||
	    folio->index + i != linear_page_index(vma, haddr + i * PAGE_SIZE))
		return NULL;
	/*
	 * The very anon_vma of this VMA (kept across mprotect splits and
	 * mremap), not just the same root: the rmap must find the new mapping
	 * through the folio's anon_vma, and a sibling VMA's anon_vma may go
	 * away while the folio stays mapped here.
	 */
	if (folio_anon_vma(folio) != vma->anon_vma)
		return NULL;
	if (!PageAnonExclusive(page))
		return NULL;
	return folio;
}

/*
 * The part of the range at @haddr that lies inside @vma, as page indices
 * [lo, hi).  A reservation outlives VMA edits (munmap, mprotect, mremap and
 * madvise may cut its range after creation), so the fault path reads and
 * writes only the entries of its own VMA: the page table and the folio
 * alone never decide a range.
 */
struct superpage_span {
	unsigned int lo, hi;
};

static struct superpage_span superpage_vma_span(struct vm_area_struct *vma,
						unsigned long haddr)
{
	unsigned long start = max(vma->vm_start, haddr);
	unsigned long end = min(vma->vm_end, haddr + HPAGE_PMD_SIZE);

	return (struct superpage_span){
		.lo = (start - haddr) >> PAGE_SHIFT,
		.hi = (end - haddr) >> PAGE_SHIFT,
	};
}

/*
 * An entry that maps no page of the range: none, or the zero page that a
 * read fault mapped.
 */
static bool superpage_pte_unused(pte_t pte)
{
	return pte_none(pte) || (pte_present(pte) && is_zero_pfn(pte_pfn(pte)));
}

/*
 * Is the faulting entry still what the fault found: none, or for a write
 * to the zero page (@zero) the zero page entry vmf->orig_pte?
 */
static bool superpage_target_ok(struct vm_fault *vmf, bool zero)
{
	pte_t pte = ptep_get(vmf->pte);

	return zero ? pte_same(pte, vmf->orig_pte) : pte_none(pte);
}

/*
 * Find the reservation of the range whose page table starts at @table, for
 * a fault at index @i: the nearest PTE of @span (the faulting VMA's part of
 * the range) that passes R1-R3.  Entries that do not (a 4 KiB fallback
 * page, the zero page) are passed over, so that one of them does not end
 * growth for the rest of the range.  Returns the folio, or NULL with
 * *@empty telling whether no PTE of @span maps a page (each is none or
 * the zero page).  Called under the PTE lock.
 */
static struct folio *superpage_find_resv(struct vm_area_struct *vma,
					 pte_t *table, unsigned long haddr,
					 struct superpage_span span,
					 unsigned int i, bool *empty)
{
	struct folio *folio;
	int d, j, side;
	pte_t pte;

	*empty = true;
	for (d = 1; d < HPAGE_PMD_NR; d++) {
		for (side = -1; side <= 1; side += 2) {
			j = i + side * d;
			if (j < (int)span.lo || j >= (int)span.hi)
				continue;
			pte = ptep_get(table + j);
			if (superpage_pte_unused(pte))
				continue;
			*empty = false;
			folio = superpage_resv_of(vma, pte, haddr, j, i);
			if (folio)
				return folio;
		}
	}
	return NULL;
}

/*
 * A read fault that finds a reservation maps the subpage clean and
 * read-only, as the zero page would be: neither dirty nor soft-dirty.  The
 * subpage is exclusive, so a later write fault reuses it in place
 * (do_wp_page()).  (A read fault that finds none maps the zero page.)
 */
static pte_t superpage_mk_pte(struct vm_fault *vmf, struct page *page)
{
	struct vm_area_struct *vma = vmf->vma;
	pte_t entry = pte_sw_mkyoung(mk_pte(page, vma->vm_page_prot));

	if ((vmf->flags & FAULT_FLAG_WRITE) && (vma->vm_flags & VM_WRITE))
		entry = pte_mkwrite(pte_mkdirty(entry), vma);
	return entry;
}

/*
 * What a growth fault found: the subpage is mapped (or the fault is over,
 * *ret says how), the reservation is busy for now, or it cannot give this
 * subpage.
 */
enum superpage_grow {
	SUPERPAGE_GROWN,
	SUPERPAGE_GROW_BUSY,
	SUPERPAGE_GROW_REFS,
	SUPERPAGE_GROW_NO,
};

/**
 * superpage_folio_unusable() - R4: a reservation that nothing may grow
 * @folio: a locked reservation (or a promotion candidate)
 *
 * The one check of R4, for the fault path and for promotion: in the swap
 * cache, under writeback, no longer swap-backed, or holding a poisoned
 * page.
 *
 * Return: true if no subpage of @folio may be mapped, or promoted, now.
 */
bool superpage_folio_unusable(struct folio *folio)
{
	VM_WARN_ON_ONCE_FOLIO(!folio_test_locked(folio), folio);
	return folio_test_swapcache(folio) || folio_test_writeback(folio) ||
	       !folio_test_swapbacked(folio) ||
	       folio_test_has_hwpoisoned(folio);
}

/*
 * R4-R6, with @folio locked.  The reference count must equal the map count
 * (plus the caller's own @extra references)
 * whatever the target's PageAnonExclusive says: a clear bit does not prove
 * that the subpage was never mapped (fork clears it on every page it
 * copies, and DONTFORK VMAs keep the parent's candidates exclusive), and an
 * extra reference may be a pipe's or a zap's waiting for its TLB flush.
 * An extra reference is usually brief (reclaim or the split shrinker
 * looking at the folio, GUP-fast, a TLB flush), but may last (a pipe, a
 * pin): SUPERPAGE_GROW_REFS lets the caller tell the two apart.
 */
static enum superpage_grow superpage_subpage_usable(struct folio *folio,
						    struct page *page,
						    int extra)
{
	if (superpage_folio_unusable(folio) || PageHWPoison(page))
		return SUPERPAGE_GROW_NO;
	if (atomic_read(&page->_mapcount) != -1)
		return SUPERPAGE_GROW_NO;
	if (folio_ref_count(folio) != folio_mapcount(folio) + extra)
		return SUPERPAGE_GROW_REFS;
	return SUPERPAGE_GROWN;
}

/*
 * Tell ksuperpaged about the range at @haddr when its reservation has just
 * gone from @from to @to mapped subpages, crossing the threshold or
 * reaching all of them (the threshold may have been raised since).  A
 * hint, see daemon.c.
 */
static void superpage_maybe_ready(struct mm_struct *mm, unsigned long haddr,
				  int from, int to)
{
	int threshold = READ_ONCE(sysctl_superpage_promote_threshold);

	if ((from < threshold && to >= threshold) || to == HPAGE_PMD_NR)
		superpage_daemon_note_ready(mm, haddr);
}

/*
 * How many entries of @span next to index @i, going by @step (+1 or -1),
 * are present (or none, if @none), up to @max.
 */
static unsigned int superpage_run(pte_t *table, struct superpage_span span,
				  int i, int step, unsigned int max, bool none)
{
	unsigned int run = 0;
	int j;

	for (j = i + step; j >= (int)span.lo && j < (int)span.hi && run < max;
	     j += step) {
		if (pte_none(ptep_get(table + j)) != none)
			break;
		run++;
	}
	return run;
}

/*
 * May subpage @j of @folio be mapped ahead by a cluster?  Its entry is
 * none and it is mapped nowhere (R5), and it is not poisoned.
 */
static bool superpage_cluster_slot(pte_t *table, struct folio *folio,
				   unsigned int j)
{
	struct page *page = folio_page(folio, j);

	return pte_none(ptep_get(table + j)) &&
	       atomic_read(&page->_mapcount) == -1 && !PageHWPoison(page);
}

/*
 * The cluster of a fault at index @i of @folio, whose range's page table
 * starts at @table, as a set of indices in @map (@i among them); returns
 * its size.  Two rules, each giving a naturally aligned block of 2^k
 * subpages around @i with k at most vm.superpage_cluster_max_order, inside
 * @span, the faulting VMA's part of the range (a cluster never maps a page
 * outside the VMA); the larger block wins:
 *   run      a block whose entries are all free (superpage_cluster_slot()),
 *            k at most one more than the order of the run of present
 *            entries next to @i, on either side: a sequential fill doubles
 *            its cluster at every fault up to the maximum;
 *   density  a block of at least 4 subpages in which a quarter or more of
 *            the entries other than @i already map a page: its free
 *            entries are mapped too, so that a range filled in random or
 *            strided order gets dense in a few faults.  A pattern sparser
 *            than one page in four (every 16 KiB or more) never meets it,
 *            so sparse mappings get nothing ahead.
 * A fault next to nothing in a sparse range gets @i alone.  (Entry @i
 * itself, none or the zero page, the caller has checked.)  Called under
 * the PTE lock, so that the entries cannot change.
 */
static unsigned int superpage_cluster(pte_t *table, struct folio *folio,
				      struct superpage_span span,
				      unsigned int i, unsigned long *map)
{
	unsigned int max = READ_ONCE(sysctl_superpage_cluster_max_order);
	unsigned int run, k, start, size, j, used, best = 0, nr = 1;
	bool dense = false;

	bitmap_zero(map, HPAGE_PMD_NR);
	__set_bit(i, map);
	if (!max)
		return 1;
	/* Density: the largest block a quarter used. */
	for (k = max; k >= 2 && !best; k--) {
		size = 1U << k;
		start = round_down(i, size);
		if (start < span.lo || start + size > span.hi)
			continue;
		for (used = 0, j = start; j < start + size; j++)
			used += j != i &&
				!superpage_pte_unused(ptep_get(table + j));
		if (4 * used >= size) {
			best = k;
			dense = true;
		}
	}
	/* Run: the largest free block the run allows. */
	run = max(superpage_run(table, span, i, -1, 1U << max, false),
		  superpage_run(table, span, i, 1, 1U << max, false));
	for (k = run ? min_t(unsigned int, max, ilog2(run) + 1) : 0; k > best;
	     k--) {
		size = 1U << k;
		start = round_down(i, size);
		if (start < span.lo || start + size > span.hi)
			continue;
		for (j = start; j < start + size; j++)
			if (j != i && !superpage_cluster_slot(table, folio, j))
				break;
		if (j == start + size) {
			best = k;
			dense = false;
			break;
		}
	}
	if (!best)
		return 1;
	size = 1U << best;
	start = round_down(i, size);
	for (j = start; j < start + size; j++) {
		if (j == i || !superpage_cluster_slot(table, folio, j))
			continue;
		__set_bit(j, map);
		nr++;
	}
	/* A dense block with no free entry left maps @i alone. */
	WARN_ON_ONCE(!dense && nr != size);
	return nr;
}

/*
 * Which subpages of the cluster @map the fault zeroes itself: those that
 * were not zeroed ahead (zero.c), at most @budget of them, nearest to @i
 * first (@i itself first of all), in @zmap.  Going out from @i on each
 * side, the cluster ends at the first of its subpages that was not zeroed
 * ahead and does not fit in that budget, or that the worker is zeroing
 * now (the caller has checked that @i is not one of them); the next
 * faults map the rest.  So what the fault takes from the zeroed run
 * leaves one run.  Returns the size of the cluster.  Called with the
 * folio locked, which keeps the runs as they are.
 */
static unsigned int superpage_zero_plan(struct folio *folio, unsigned int i,
					unsigned long *map, unsigned long *zmap,
					unsigned int budget)
{
	int first = find_first_bit(map, HPAGE_PMD_NR);
	int last = find_last_bit(map, HPAGE_PMD_NR);
	unsigned int lo, hi, clo, chi, d, nr = 0;
	bool open[2] = { true, true };
	int j, side;

	superpage_zeroed_get(folio, &lo, &hi, &clo, &chi);
	bitmap_zero(zmap, HPAGE_PMD_NR);
	for (d = 0; open[0] || open[1]; d++) {
		for (side = 0; side < 2; side++) {
			j = side ? (int)(i + d) : (int)i - (int)d;
			if (!open[side] || (!d && !side))
				continue;
			if (j < first || j > last) {
				open[side] = false;
				continue;
			}
			if (!test_bit(j, map))
				continue;
			if (j >= (int)lo && j < (int)hi) {
				nr++;
				continue;
			}
			if (budget && (j < (int)clo || j >= (int)chi)) {
				budget--;
				__set_bit(j, zmap);
				nr++;
				continue;
			}
			/* The cluster ends here, on this side. */
			open[side] = false;
			for (; j >= first && j <= last; j += side ? 1 : -1)
				__clear_bit(j, map);
		}
	}
	return nr;
}

/*
 * Does a fault at index @i (or a cluster from @i to @last) continue a
 * sequential fill?  Yes if the SUPERPAGE_SEQ_RUN entries just below @i are
 * present and as many just above @last are none (each run may stop at the
 * edge of @span): the fill goes up, returns 1; or the other way round: it
 * goes down, returns -1.  0 for a scattered fault, and for a random fill,
 * which leaves entries free behind it and fills some ahead.
 */
#define SUPERPAGE_SEQ_RUN	8

static int superpage_sequential(pte_t *table, struct superpage_span span,
				int i, int last)
{
	const unsigned int n = SUPERPAGE_SEQ_RUN;
	int below = min_t(int, n, i - (int)span.lo);
	int above = min_t(int, n, (int)span.hi - 1 - last);

	if (superpage_run(table, span, i, -1, n, false) >= below &&
	    superpage_run(table, span, last, 1, n, true) >= above)
		return 1;
	if (superpage_run(table, span, last, 1, n, false) >= above &&
	    superpage_run(table, span, i, -1, n, true) >= below)
		return -1;
	return 0;
}

/*
 * A fault that continued a sequential fill (superpage_sequential()) asks
 * for the subpages beyond its cluster @map to be zeroed ahead of the next
 * faults (zero.c): twice the largest cluster, inside @span.  Not when a
 * fault zeroes whole clusters itself.  Called under the PTE lock, with the
 * cluster mapped and the folio locked.
 */
static void superpage_grow_ahead(pte_t *table, struct folio *folio,
				 struct superpage_span span,
				 const unsigned long *map)
{
	unsigned int order = READ_ONCE(sysctl_superpage_cluster_max_order);
	int first = find_first_bit(map, HPAGE_PMD_NR);
	int last = find_last_bit(map, HPAGE_PMD_NR);
	int ahead = 2 << order;
	int dir;

	if (!order || READ_ONCE(sysctl_superpage_fault_zero_pages) >= 1U << order)
		return;
	dir = superpage_sequential(table, span, first, last);
	if (dir > 0)
		superpage_zero_ahead(folio, last + 1,
				     min_t(int, last + 1 + ahead, span.hi));
	else if (dir < 0)
		superpage_zero_ahead(folio, first - 1,
				     max_t(int, first - 1 - ahead,
					   (int)span.lo - 1));
}

/*
 * Zero the subpages of @folio in @zmap, those of the cluster @map (*@nr
 * subpages) of a fault at index @i that were not zeroed ahead, with the
 * PTE lock dropped: clearing must not run with preemption off.  The
 * folio lock, held throughout,
 * keeps every other fault off the folio's unmapped subpages, so they stay
 * unmapped and zeroed; but the range's entries may change meanwhile (a
 * zap, a page of the usual path), so the target entry, the reservation
 * and R4-R6 are checked again under the retaken lock, and a cluster entry
 * that is no longer none leaves the cluster.  Returns SUPERPAGE_GROWN
 * with the PTE lock held again, or SUPERPAGE_GROW_BUSY with the PTE lock
 * released and the folio unlocked: the fault looks again.
 */
static enum superpage_grow superpage_zero_cluster(struct vm_fault *vmf,
						  struct folio *folio,
						  struct superpage_span span,
						  unsigned int i, bool zero,
						  unsigned long *map,
						  const unsigned long *zmap,
						  unsigned int *nr)
{
	struct vm_area_struct *vma = vmf->vma;
	unsigned long addr = vmf->address & PAGE_MASK;
	unsigned long haddr = addr & HPAGE_PMD_MASK;
	pte_t *table;
	unsigned int j;
	bool empty;

	lockdep_assert_held(vmf->ptl);
	VM_WARN_ON_ONCE_FOLIO(!folio_test_locked(folio), folio);
	/* No PTE lock pins a mapping of the folio while it is dropped. */
	folio_get(folio);
	pte_unmap_unlock(vmf->pte, vmf->ptl);
	vmf->pte = NULL;
	for_each_set_bit(j, zmap, HPAGE_PMD_NR) {
		clear_user_highpage(folio_page(folio, j), haddr + j * PAGE_SIZE);
		cond_resched();
	}

	vmf->pte = pte_offset_map_lock(vma->vm_mm, vmf->pmd, addr, &vmf->ptl);
	if (!vmf->pte)
		goto busy;
	table = vmf->pte - i;
	if (check_stable_address_space(vma->vm_mm) ||
	    !superpage_target_ok(vmf, zero) ||
	    superpage_find_resv(vma, table, haddr, span, i, &empty) != folio ||
	    superpage_subpage_usable(folio, folio_page(folio, i),
				     1 + superpage_zero_refs(folio)) !=
	    SUPERPAGE_GROWN) {
		pte_unmap_unlock(vmf->pte, vmf->ptl);
		vmf->pte = NULL;
		goto busy;
	}
	for_each_set_bit(j, map, HPAGE_PMD_NR) {
		if (j != i && !pte_none(ptep_get(table + j))) {
			__clear_bit(j, map);
			(*nr)--;
		}
	}
	/* Still mapped, under the PTE lock: not the last reference. */
	folio_put(folio);
	return SUPERPAGE_GROWN;

busy:
	folio_unlock(folio);
	folio_put(folio);
	return SUPERPAGE_GROW_BUSY;
}

/*
 * Map subpage @i of the reservation @folio at the faulting address, with
 * the rest of its cluster (superpage_cluster()); @zero: entry @i maps the
 * zero page, which the new entry replaces.  Called with the PTE lock
 * held; returns with it released, and with the folio unlocked before it:
 * a fault of another thread in the range, waiting for the PTE lock, must
 * find the folio unlocked.  Returns SUPERPAGE_GROWN when the fault is
 * done (*@ret), else why the subpage could not be mapped.
 */
static enum superpage_grow superpage_resv_grow(struct vm_fault *vmf,
					       struct folio *folio,
					       struct superpage_span span,
					       unsigned int i, bool zero,
					       vm_fault_t *ret)
{
	struct vm_area_struct *vma = vmf->vma;
	unsigned long addr = vmf->address & PAGE_MASK;
	unsigned long haddr = addr & HPAGE_PMD_MASK;
	pte_t *table = vmf->pte - i;
	enum superpage_grow verdict = SUPERPAGE_GROWN;
	DECLARE_BITMAP(map, HPAGE_PMD_NR);
	DECLARE_BITMAP(zmap, HPAGE_PMD_NR);
	unsigned int nr, j, end, ahead, budget;
	int from, to;

	lockdep_assert_held(vmf->ptl);
	*ret = check_stable_address_space(vma->vm_mm);
	if (*ret)
		goto unlock;
	verdict = SUPERPAGE_GROW_BUSY;
	if (!folio_trylock(folio))
		goto unlock;
	verdict = superpage_subpage_usable(folio, folio_page(folio, i),
					   superpage_zero_refs(folio));
	if (verdict != SUPERPAGE_GROWN) {
		folio_unlock(folio);
		goto unlock;
	}
	/* The worker is zeroing @i now: take that part back (zero.c). */
	budget = READ_ONCE(sysctl_superpage_fault_zero_pages);
	superpage_zero_steal(folio, i, budget);
	nr = superpage_cluster(table, folio, span, i, map);
	if (WARN_ON_ONCE(find_first_bit(map, HPAGE_PMD_NR) < span.lo ||
			 find_last_bit(map, HPAGE_PMD_NR) >= span.hi)) {
		bitmap_zero(map, HPAGE_PMD_NR);
		__set_bit(i, map);
		nr = 1;
	}
	/*
	 * A sequential fill has its next subpages zeroed ahead: the fault
	 * zeroes at most vm.superpage_fault_zero_pages itself.  No one can
	 * tell where a random fill goes next: its cluster is zeroed here.
	 */
	if (nr <= budget || !superpage_sequential(table, span, i, i))
		budget = HPAGE_PMD_NR;
	nr = superpage_zero_plan(folio, i, map, zmap, budget);
	j = bitmap_weight(zmap, HPAGE_PMD_NR);
	if (j > 1) {
		verdict = superpage_zero_cluster(vmf, folio, span, i, zero,
						 map, zmap, &nr);
		if (verdict != SUPERPAGE_GROWN)
			return verdict;
		table = vmf->pte - i;
	} else if (j == 1) {
		/* @i, or the one subpage next to the zeroed run that is not. */
		j = find_first_bit(zmap, HPAGE_PMD_NR);
		clear_user_highpage(folio_page(folio, j), haddr + j * PAGE_SIZE);
	}
	ahead = superpage_zeroed_take(folio, map);

	/* The references of the new PTEs. */
	folio_ref_add(folio, nr);
	/* The zeroes must be visible before the PTEs are. */
	smp_wmb();
	from = folio_nr_pages_mapped(folio);
	/* Each run of the cluster at once. */
	for_each_set_bitrange(j, end, map, HPAGE_PMD_NR)
		folio_add_anon_rmap_ptes(folio, folio_page(folio, j), end - j,
					 vma, haddr + j * PAGE_SIZE,
					 RMAP_EXCLUSIVE);
	add_mm_counter(vma->vm_mm, MM_ANONPAGES, nr);
	for_each_set_bit(j, map, HPAGE_PMD_NR) {
		pte_t entry = superpage_mk_pte(vmf, folio_page(folio, j));

		/* Mapped ahead, not yet used: old, for reclaim to see. */
		if (j != i) {
			entry = pte_mkold(entry);
		} else if (zero) {
			ptep_clear_flush(vma, addr, table + i);
			ksm_might_unmap_zero_page(vma->vm_mm, vmf->orig_pte);
		}
		set_pte_at(vma->vm_mm, haddr + j * PAGE_SIZE, table + j, entry);
	}
	for_each_set_bitrange(j, end, map, HPAGE_PMD_NR)
		update_mmu_cache_range(vmf, vma, haddr + j * PAGE_SIZE,
				       table + j, end - j);

	/* Requeued once per jiffy at most: the queue lock is shared. */
	if (time_after(jiffies, READ_ONCE(folio->_superpage_grown))) {
		superpage_resv_grew(folio);
		superpage_resv_requeue(folio);
	}
	to = folio_nr_pages_mapped(folio);
	superpage_grow_ahead(table, folio, span, map);
	if (to == HPAGE_PMD_NR) {
		/* Rechecked under the split queue lock, against zaps. */
		deferred_split_clear_partially_mapped(folio);
		/*
		 * Mapped whole in a VM_LOCKED VMA (mlock() populating a range
		 * reserved before it): mlocked whole now, exactly, as a PMD
		 * would be.  One made in a VM_LOCKED VMA already is.
		 */
		if (!folio_test_mlocked(folio))
			mlock_vma_folio(folio, vma);
	}
	folio_unlock(folio);
	pte_unmap_unlock(vmf->pte, vmf->ptl);
	vmf->pte = NULL;
	count_vm_events(SUPERPAGE_RESV_MAPPED, nr);
	if (nr > 1)
		count_vm_events(SUPERPAGE_CLUSTER_MAPPED, nr - 1);
	if (ahead)
		count_vm_events(SUPERPAGE_ZERO_AHEAD_MAPPED, ahead);
	trace_superpage_fault(vma->vm_mm, addr, SUPERPAGE_FAULT_GROWN, nr);
	superpage_maybe_ready(vma->vm_mm, haddr, from, to);
	*ret = 0;
	return SUPERPAGE_GROWN;

unlock:
	pte_unmap_unlock(vmf->pte, vmf->ptl);
	vmf->pte = NULL;
	return verdict;
}

/* Does no entry of the range map a page (each none or the zero page)? */
static bool superpage_range_empty(pte_t *table)
{
	int k;

	for (k = 0; k < HPAGE_PMD_NR; k++)
		if (!superpage_pte_unused(ptep_get(table + k)))
			return false;
	return true;
}

/*
 * A write fault replaces the zero page entry at vmf->address (@zero):
 * secondary MMUs may map the zero page, so the mmu notifiers are called
 * around the PTE lock section, as wp_page_copy() does (and never around
 * an allocation, which may reclaim and invalidate on its own).
 */
static void superpage_zero_notify(struct vm_fault *vmf, bool zero,
				  struct mmu_notifier_range *range, bool start)
{
	unsigned long addr = vmf->address & PAGE_MASK;

	if (!zero)
		return;
	if (start) {
		mmu_notifier_range_init(range, MMU_NOTIFY_CLEAR, 0,
					vmf->vma->vm_mm, addr, addr + PAGE_SIZE);
		mmu_notifier_invalidate_range_start(range);
	} else {
		mmu_notifier_invalidate_range_end(range);
	}
}

/*
 * No free 2 MiB block for a new reservation: break stale reservations of
 * this memcg on the local node, so that compaction can move their few used
 * pages away.  As the THP defrag policy says (@gfp): where it allows direct
 * compaction, try once more now; where it does not, wake kcompactd, for
 * the next new range.  Returns the folio, or NULL.
 */
static struct folio *superpage_resv_alloc_preempt(struct vm_area_struct *vma,
						  unsigned long haddr, gfp_t gfp)
{
	int nid = numa_node_id();

	if (!superpage_resv_preempt(vma->vm_mm, nid, gfp_zone(gfp)))
		return NULL;
	if (gfpflags_allow_blocking(gfp))
		return vma_alloc_folio(gfp, HPAGE_PMD_ORDER, vma, haddr, true);
	wakeup_kcompactd(NODE_DATA(nid), HPAGE_PMD_ORDER, gfp_zone(gfp));
	return NULL;
}

/*
 * Create a reservation for the empty range at @haddr and map its subpage
 * @i (in place of the zero page if @zero).  Called without the PTE lock.
 * False: no order-9 page or no memcg charge, go on with the usual path.
 */
static bool superpage_resv_create(struct vm_fault *vmf, unsigned long haddr,
				  unsigned int i, bool zero, vm_fault_t *ret)
{
	struct vm_area_struct *vma = vmf->vma;
	struct mm_struct *mm = vma->vm_mm;
	unsigned long addr = vmf->address & PAGE_MASK;
	gfp_t gfp = vma_thp_gfp_mask(vma);
	struct mmu_notifier_range range;
	struct folio *folio;
	bool prezeroed;
	struct page *page;

	/* Zeroed whole in advance, or not at all (only what gets mapped). */
	folio = superpage_prezero_take(gfp);
	prezeroed = !!folio;
	if (!folio)
		folio = vma_alloc_folio(gfp, HPAGE_PMD_ORDER, vma, haddr, true);
	if (!folio)
		folio = superpage_resv_alloc_preempt(vma, haddr, gfp);
	if (!folio)
		goto failed;
	if (mem_cgroup_charge(folio, mm, gfp)) {
		if (prezeroed)
			superpage_prezero_put_back(folio);
		else
			folio_put(folio);
		goto failed;
	}
	folio_throttle_swaprate(folio, gfp);

	page = folio_page(folio, i);
	if (!prezeroed)
		clear_user_highpage(page, addr);
	/* Orders the zeroes before the PTE (smp_wmb()). */
	__folio_mark_uptodate(folio);

	*ret = 0;
	superpage_zero_notify(vmf, zero, &range, true);
	vmf->pte = pte_offset_map_lock(mm, vmf->pmd, addr, &vmf->ptl);
	if (!vmf->pte)
		goto release;
	if (!superpage_target_ok(vmf, zero) ||
	    !superpage_range_empty(vmf->pte - i)) {
		/* Lost a race: the refault finds the winner's reservation. */
		update_mmu_tlb(vma, addr, vmf->pte);
		goto unlock_release;
	}
	*ret = check_stable_address_space(mm);
	if (*ret)
		goto unlock_release;

	/*
	 * The folio's reference becomes the reference of this PTE.  It is
	 * queued as partially mapped before it goes on the LRU, where reclaim
	 * can see it: reclaim splits a partially mapped folio before swap-out,
	 * and the unmapped subpages must never be written to swap.
	 */
	superpage_resv_start(folio);
	if (prezeroed)
		superpage_zeroed_init(folio, i);
	superpage_resv_grew(folio);
	folio_add_new_anon_rmap_pte(folio, page, vma, addr);
	deferred_split_folio(folio, true);
	folio_add_lru_vma(folio, vma);
	add_mm_counter(mm, MM_ANONPAGES, 1);
	if (zero) {
		ptep_clear_flush(vma, addr, vmf->pte);
		ksm_might_unmap_zero_page(mm, vmf->orig_pte);
	}
	set_pte_at(mm, addr, vmf->pte, superpage_mk_pte(vmf, page));
	update_mmu_cache_range(vmf, vma, addr, vmf->pte, 1);
	pte_unmap_unlock(vmf->pte, vmf->ptl);
	vmf->pte = NULL;
	superpage_zero_notify(vmf, zero, &range, false);
	count_vm_event(SUPERPAGE_RESV_ALLOC);
	trace_superpage_fault(mm, addr, SUPERPAGE_FAULT_CREATED, 1);
	superpage_daemon_enter_mm(mm);
	superpage_maybe_ready(mm, haddr, 0, 1);
	return true;

unlock_release:
	pte_unmap_unlock(vmf->pte, vmf->ptl);
	vmf->pte = NULL;
release:
	superpage_zero_notify(vmf, zero, &range, false);
	folio_put(folio);
	trace_superpage_fault(mm, addr, SUPERPAGE_FAULT_RACED, 0);
	return true;

failed:
	count_vm_event(SUPERPAGE_RESV_ALLOC_FAILED);
	trace_superpage_fault(mm, addr, SUPERPAGE_FAULT_NO_MEMORY, 0);
	return false;
}

/*
 * How often a fault that finds its reservation busy looks again before it
 * gives up: a contended folio lock then makes the access fault again, an
 * extra reference that stays makes it take the usual path.
 */
#define SUPERPAGE_BUSY_TRIES	8

/*
 * Grow the reservation of the range for the fault at vmf->address, whose
 * entry is none, or maps the zero page (@zero).  Returns 1 when the fault
 * was handled (or must be retried; *@ret), 0 when the caller must go on
 * with its usual path, -1 when the range has no reservation, with *@empty
 * telling whether it holds no page at all.
 */
static int superpage_fault_grow(struct vm_fault *vmf, bool zero,
				struct superpage_span span, vm_fault_t *ret,
				bool *empty)
{
	struct vm_area_struct *vma = vmf->vma;
	unsigned long addr = vmf->address & PAGE_MASK;
	unsigned long haddr = addr & HPAGE_PMD_MASK;
	unsigned int i = pte_index(addr);
	enum superpage_grow verdict;
	struct folio *folio;
	int tries = 0;

again:
	*ret = 0;
	vmf->pte = pte_offset_map_lock(vma->vm_mm, vmf->pmd, addr, &vmf->ptl);
	if (!vmf->pte)
		goto raced;
	/* The fault raced with another one filling the PTE. */
	if (!superpage_target_ok(vmf, zero)) {
		update_mmu_tlb(vma, addr, vmf->pte);
		pte_unmap_unlock(vmf->pte, vmf->ptl);
		vmf->pte = NULL;
		goto raced;
	}

	folio = superpage_find_resv(vma, vmf->pte - i, haddr, span, i, empty);
	if (!folio) {
		pte_unmap_unlock(vmf->pte, vmf->ptl);
		vmf->pte = NULL;
		return -1;
	}
	verdict = superpage_resv_grow(vmf, folio, span, i, zero, ret);
	if (verdict == SUPERPAGE_GROWN)
		return 1;
	if (verdict == SUPERPAGE_GROW_NO) {
		trace_superpage_fault(vma->vm_mm, addr,
				      SUPERPAGE_FAULT_UNUSABLE, 0);
		return 0;
	}
	/*
	 * Busy (R6 or the folio lock): a 4 KiB page of the usual path would
	 * sit inside the range for good and no promotion could absorb it.
	 * Look again; a lock that stays contended makes the access fault
	 * again; a reference that stays may be a pipe's or a pin's, which
	 * must not see the subpage reused.
	 */
	if (++tries < SUPERPAGE_BUSY_TRIES) {
		cond_resched();
		goto again;
	}
	if (verdict == SUPERPAGE_GROW_BUSY) {
		trace_superpage_fault(vma->vm_mm, addr,
				      SUPERPAGE_FAULT_RETRY, 0);
		return 1;
	}
	count_vm_event(SUPERPAGE_RESV_FALLBACK);
	trace_superpage_fault(vma->vm_mm, addr, SUPERPAGE_FAULT_REFS, 0);
	return 0;

raced:
	trace_superpage_fault(vma->vm_mm, addr, SUPERPAGE_FAULT_RACED, 0);
	return 1;
}

/*
 * The fault at vmf->address, whose entry is none, or maps the zero page
 * (@zero, a write fault from wp_page_copy()).  Returns as
 * superpage_anon_fault().
 */
static bool superpage_fault(struct vm_fault *vmf, bool zero, vm_fault_t *ret)
{
	struct vm_area_struct *vma = vmf->vma;
	unsigned long addr = vmf->address & PAGE_MASK;
	unsigned long haddr = addr & HPAGE_PMD_MASK;
	struct mmu_notifier_range range;
	struct superpage_span span;
	bool empty;
	int done;

	span = superpage_vma_span(vma, haddr);
	superpage_zero_notify(vmf, zero, &range, true);
	done = superpage_fault_grow(vmf, zero, span, ret, &empty);
	superpage_zero_notify(vmf, zero, &range, false);
	if (done >= 0)
		return done;
	if (!empty) {
		trace_superpage_fault(vma->vm_mm, addr, SUPERPAGE_FAULT_NO_RESV,
				      0);
		return false;
	}
	if (!thp_vma_suitable_order(vma, haddr, PMD_ORDER)) {
		trace_superpage_fault(vma->vm_mm, addr,
				      SUPERPAGE_FAULT_UNSUITABLE, 0);
		return false;
	}
	/*
	 * A read fault maps the zero page, as without reservations: no
	 * memory is allocated or charged (overcommit does not account a
	 * read-only or MAP_NORESERVE mapping), and the first write there
	 * creates the reservation (superpage_wp_zero_fault()).
	 */
	if (!(vmf->flags & FAULT_FLAG_WRITE) &&
	    !mm_forbids_zeropage(vma->vm_mm)) {
		trace_superpage_fault(vma->vm_mm, addr,
				      SUPERPAGE_FAULT_ZERO_PAGE, 0);
		return false;
	}
	/*
	 * Where do_huge_pmd_anonymous_page() would have run (the first fault
	 * of a suitable range), khugepaged learns about the mm as it would
	 * have there, for the ranges that fall back to 4 KiB pages.
	 */
	khugepaged_enter_vma(vma, vma->vm_flags);
	return superpage_resv_create(vmf, haddr, pte_index(addr), zero, ret);
}

bool __superpage_anon_fault(struct vm_fault *vmf, vm_fault_t *ret)
{
	struct vm_area_struct *vma = vmf->vma;

	if (!__superpage_vma_eligible(vma))
		return false;
	/*
	 * A read fault can only grow a reservation, which needs an anon_vma:
	 * none, and the zero page follows, with no anon_vma made for it.
	 */
	if (!(vmf->flags & FAULT_FLAG_WRITE) && !vma->anon_vma)
		return false;
	*ret = vmf_anon_prepare(vmf);
	if (*ret)
		return true;
	return superpage_fault(vmf, false, ret);
}

bool __superpage_wp_zero_fault(struct vm_fault *vmf, vm_fault_t *ret)
{
	struct vm_area_struct *vma = vmf->vma;

	/* A write that makes the page writable: no unshare, no FOLL_FORCE. */
	if (!(vmf->flags & FAULT_FLAG_WRITE) || !(vma->vm_flags & VM_WRITE))
		return false;
	if (!__superpage_vma_eligible(vma))
		return false;
	return superpage_fault(vmf, true, ret);
}
