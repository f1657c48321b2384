// SPDX-License-Identifier: GPL-2.0
/*
 * Reservation-based transparent superpages: the anonymous fault path.
 *
 * What this file does
 *   The first anonymous fault in a 2 MiB-aligned range that lies inside an
 *   eligible VMA creates a *reservation*: one order-9 anonymous folio,
 *   allocated without zeroing and charged in full to the memcg, of which
 *   only the faulting subpage is zeroed and mapped (with a PTE).  A later
 *   fault in the range finds the reservation through a present neighbour
 *   PTE in the same page table, validates it, and maps the matching subpage
 *   of the same folio, so the range fills physically contiguous.  The folio
 *   sits on the LRU and, from its creation, on the deferred split queue as
 *   partially mapped, so reclaim and the deferred split shrinker split it
 *   (freeing the unused subpages) before any of it could be swapped or
 *   migrated whole.  Creation and growth stamp the folio, so that reclaim
 *   breaks the least recently grown reservations first, and a failed
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
 * Invariants (checked before a subpage is mapped)
 *   R1 the candidate is a present, non-NUMA-hinting PTE of a normal page of
 *      an order-9 anonymous, non-KSM folio that is not PMD-mapped;
 *   R2 it sits at its own index j in the folio, the folio's index lines up
 *      the faulting subpage i with its address, and the folio's anon_vma
 *      is the VMA's own: the folio was made for this range of this mm;
 *   R3 the candidate page is PageAnonExclusive.  fork() clears it on every
 *      page it copies and it never comes back on a large folio, so growth
 *      stops in parent and child after fork;
 *   R4 with the folio locked: not in the swap cache, not under writeback,
 *      swap-backed, no hardware-poisoned page;
 *   R5 the target subpage is not mapped (its own _mapcount is -1);
 *   R6 the folio holds no reference beyond its mappings (no zap waiting
 *      for its TLB flush, no pin, no pipe buffer): a zapped subpage, or one
 *      that another process still reaches, is never handed out again.
 *   Security: an unmapped subpage holds a previous owner's data.  It is
 *   zeroed before its PTE is set (smp_wmb() orders the two), and it never
 *   reaches user space otherwise: GUP, /proc/pid/mem and core dumps walk
 *   page tables, and the partially-mapped flag makes reclaim and migration
 *   split the folio (freeing unmapped subpages) instead of copying it.
 *
 * Locking
 *   Called from do_anonymous_page() with the mmap read lock or the per-VMA
 *   lock.  Lookup and growth run under the PTE lock, taking the folio lock
 *   with folio_trylock() only (never sleeping under the PTL); creation
 *   drops the PTE lock to allocate and charge, then retakes it and
 *   proceeds only if the whole range is still empty.  The deferred split
 *   queue's lock nests inside the PTE lock, as in the rmap removal path.
 *   The daemon's slot lock is taken after the PTE lock is dropped.
 */
#include <linux/highmem.h>
#include <linux/huge_mm.h>
#include <linux/khugepaged.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/compaction.h>
#include <linux/oom.h>
#include <linux/rmap.h>
#include <linux/superpage.h>
#include <linux/swap.h>
#include <linux/userfaultfd_k.h>
#include <linux/vmstat.h>

#include "../internal.h"
#include "internal.h"

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
	if (mode == SUPERPAGE_THP_POLICY)
		tva_flags |= TVA_ENFORCE_SYSFS;
	return thp_vma_allowable_order(vma, vma->vm_flags, tva_flags, PMD_ORDER);
}

/*
 * R1-R3 for the present PTE @pte at index @j; the fault is at index @i.
 * The PTE may belong to a neighbouring VMA in the same page table: special
 * entries (the zero page, PFN maps) are skipped before vm_normal_page(),
 * which would report them as bad in an anonymous VMA.
 */
static struct folio *superpage_resv_of(struct vm_area_struct *vma, pte_t pte,
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
 * Find the reservation of the range whose page table starts at @table, for
 * a fault at index @i: the nearest PTE that passes R1-R3.  Entries that do
 * not (a 4 KiB fallback page, the zero page) are passed over, so that one
 * of them does not end growth for the rest of the range.  Returns the
 * folio, or NULL with *@empty telling whether every PTE of the range is
 * none.  Called under the PTE lock.
 */
static struct folio *superpage_find_resv(struct vm_area_struct *vma,
					 pte_t *table, unsigned long haddr,
					 unsigned int i, bool *empty)
{
	struct folio *folio;
	int d, j, side;
	pte_t pte;

	*empty = true;
	for (d = 1; d < HPAGE_PMD_NR; d++) {
		for (side = -1; side <= 1; side += 2) {
			j = i + side * d;
			if (j < 0 || j >= HPAGE_PMD_NR)
				continue;
			pte = ptep_get(table + j);
			if (pte_none(pte))
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
 * A read fault maps the subpage clean and read-only, as the zero page would
 * be: neither dirty nor soft-dirty.  The subpage is exclusive, so a later
 * write fault reuses it in place (do_wp_page()).
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
 * R4-R6, with @folio locked.  The reference count must equal the map count
 * whatever the target's PageAnonExclusive says: a clear bit does not prove
 * that the subpage was never mapped (fork clears it on every page it
 * copies, and DONTFORK VMAs keep the parent's candidates exclusive), and an
 * extra reference may be a pipe's or a zap's waiting for its TLB flush.
 */
static bool superpage_subpage_usable(struct folio *folio, struct page *page)
{
	if (folio_test_swapcache(folio) || folio_test_writeback(folio) ||
	    !folio_test_swapbacked(folio) || folio_test_has_hwpoisoned(folio) ||
	    PageHWPoison(page))
		return false;
	if (atomic_read(&page->_mapcount) != -1)
		return false;
	if (folio_ref_count(folio) != folio_mapcount(folio))
		return false;
	return true;
}

/*
 * Tell ksuperpaged about the range at @haddr when its reservation has just
 * reached @nr mapped subpages: the threshold, or all of them (the threshold
 * may have been raised since).  A hint, see daemon.c.
 */
static void superpage_maybe_ready(struct mm_struct *mm, unsigned long haddr,
				  int nr)
{
	if (nr == READ_ONCE(sysctl_superpage_promote_threshold) ||
	    nr == HPAGE_PMD_NR)
		superpage_daemon_note_ready(mm, haddr);
}

/*
 * Map subpage @i of the reservation @folio at the faulting address.  Called
 * with the PTE lock held; returns with it released.  False: the subpage is
 * not usable, go on with the usual path.
 */
static bool superpage_resv_grow(struct vm_fault *vmf, struct folio *folio,
				unsigned int i, vm_fault_t *ret)
{
	struct vm_area_struct *vma = vmf->vma;
	unsigned long addr = vmf->address & PAGE_MASK;
	struct page *page = folio_page(folio, i);
	int nr;

	*ret = check_stable_address_space(vma->vm_mm);
	if (*ret) {
		pte_unmap_unlock(vmf->pte, vmf->ptl);
		vmf->pte = NULL;
		return true;
	}
	if (!folio_trylock(folio))
		goto fallback;
	if (!superpage_subpage_usable(folio, page)) {
		folio_unlock(folio);
		goto fallback;
	}

	/* The reference of the new PTE. */
	folio_get(folio);
	clear_user_highpage(page, addr);
	/* The zeroes must be visible before the PTE is. */
	smp_wmb();
	folio_add_anon_rmap_pte(folio, page, vma, addr, RMAP_EXCLUSIVE);
	add_mm_counter(vma->vm_mm, MM_ANONPAGES, 1);
	set_pte_at(vma->vm_mm, addr, vmf->pte, superpage_mk_pte(vmf, page));
	update_mmu_cache_range(vmf, vma, addr, vmf->pte, 1);

	superpage_resv_grew(folio);
	nr = folio_nr_pages_mapped(folio);
	/* Rechecked under the split queue lock, against concurrent zaps. */
	if (nr == HPAGE_PMD_NR)
		deferred_split_clear_partially_mapped(folio);
	pte_unmap_unlock(vmf->pte, vmf->ptl);
	vmf->pte = NULL;
	folio_unlock(folio);
	count_vm_event(SUPERPAGE_RESV_MAPPED);
	superpage_maybe_ready(vma->vm_mm, addr & HPAGE_PMD_MASK, nr);
	*ret = 0;
	return true;

fallback:
	pte_unmap_unlock(vmf->pte, vmf->ptl);
	vmf->pte = NULL;
	return false;
}

static bool superpage_range_empty(pte_t *table)
{
	int k;

	for (k = 0; k < HPAGE_PMD_NR; k++)
		if (!pte_none(ptep_get(table + k)))
			return false;
	return true;
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
 * @i.  Called without the PTE lock.  False: no order-9 page or no memcg
 * charge, go on with the usual path.
 */
static bool superpage_resv_create(struct vm_fault *vmf, unsigned long haddr,
				  unsigned int i, vm_fault_t *ret)
{
	struct vm_area_struct *vma = vmf->vma;
	struct mm_struct *mm = vma->vm_mm;
	unsigned long addr = vmf->address & PAGE_MASK;
	gfp_t gfp = vma_thp_gfp_mask(vma);
	struct folio *folio;
	struct page *page;

	/* Not zeroed: only the subpages that get mapped are. */
	folio = vma_alloc_folio(gfp, HPAGE_PMD_ORDER, vma, haddr, true);
	if (!folio)
		folio = superpage_resv_alloc_preempt(vma, haddr, gfp);
	if (!folio) {
		count_vm_event(SUPERPAGE_RESV_ALLOC_FAILED);
		return false;
	}
	if (mem_cgroup_charge(folio, mm, gfp)) {
		folio_put(folio);
		count_vm_event(SUPERPAGE_RESV_ALLOC_FAILED);
		return false;
	}
	folio_throttle_swaprate(folio, gfp);

	page = folio_page(folio, i);
	clear_user_highpage(page, addr);
	/* Orders the zeroes before the PTE (smp_wmb()). */
	__folio_mark_uptodate(folio);

	*ret = 0;
	vmf->pte = pte_offset_map_lock(mm, vmf->pmd, addr, &vmf->ptl);
	if (!vmf->pte)
		goto release;
	if (!superpage_range_empty(vmf->pte - i)) {
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
	superpage_resv_grew(folio);
	folio_add_new_anon_rmap_pte(folio, page, vma, addr);
	deferred_split_folio(folio, true);
	folio_add_lru_vma(folio, vma);
	add_mm_counter(mm, MM_ANONPAGES, 1);
	set_pte_at(mm, addr, vmf->pte, superpage_mk_pte(vmf, page));
	update_mmu_cache_range(vmf, vma, addr, vmf->pte, 1);
	pte_unmap_unlock(vmf->pte, vmf->ptl);
	vmf->pte = NULL;
	count_vm_event(SUPERPAGE_RESV_ALLOC);
	superpage_daemon_enter_mm(mm);
	superpage_maybe_ready(mm, haddr, 1);
	return true;

unlock_release:
	pte_unmap_unlock(vmf->pte, vmf->ptl);
	vmf->pte = NULL;
release:
	folio_put(folio);
	return true;
}

bool __superpage_anon_fault(struct vm_fault *vmf, vm_fault_t *ret)
{
	struct vm_area_struct *vma = vmf->vma;
	unsigned long addr = vmf->address & PAGE_MASK;
	unsigned long haddr = addr & HPAGE_PMD_MASK;
	unsigned int i = pte_index(addr);
	struct folio *folio;
	bool empty;

	if (!__superpage_vma_eligible(vma))
		return false;
	*ret = vmf_anon_prepare(vmf);
	if (*ret)
		return true;

	*ret = 0;
	vmf->pte = pte_offset_map_lock(vma->vm_mm, vmf->pmd, addr, &vmf->ptl);
	if (!vmf->pte)
		return true;
	/* The fault raced with another one filling the PTE. */
	if (!pte_none(ptep_get(vmf->pte))) {
		update_mmu_tlb(vma, addr, vmf->pte);
		pte_unmap_unlock(vmf->pte, vmf->ptl);
		vmf->pte = NULL;
		return true;
	}

	folio = superpage_find_resv(vma, vmf->pte - i, haddr, i, &empty);
	if (folio)
		return superpage_resv_grow(vmf, folio, i, ret);

	pte_unmap_unlock(vmf->pte, vmf->ptl);
	vmf->pte = NULL;
	if (!empty || !thp_vma_suitable_order(vma, haddr, PMD_ORDER))
		return false;
	/*
	 * Where do_huge_pmd_anonymous_page() would have run (the first fault
	 * of a suitable range), khugepaged learns about the mm as it would
	 * have there, for the ranges that fall back to 4 KiB pages.
	 */
	khugepaged_enter_vma(vma, vma->vm_flags);
	return superpage_resv_create(vmf, haddr, i, ret);
}
