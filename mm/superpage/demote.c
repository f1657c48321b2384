// SPDX-License-Identifier: GPL-2.0
/*
 * Reservation-based transparent superpages: demotion in reclaim.
 *
 * What this file does
 *   A PMD mapping has one accessed bit for 2 MiB, so reclaim can only keep
 *   or evict a superpage whole: a few hot subpages keep all of it resident,
 *   and a cold one goes to swap whole.  With vm.superpage_demote_on_reclaim
 *   on, shrink_folio_list() hands every anonymous PMD-order folio it
 *   selects (before it looks at accessed bits) to
 *   superpage_demote_folio(), which acts in two steps:
 *   1. demotion: a PMD-mapped folio is remapped with 512 PTEs (the PMDs
 *      are split, the folio is not); each PTE inherits the PMD's bits, and
 *      reclaim then treats the folio as usual.  Counted in
 *      superpage_demote.
 *   2. split: when reclaim selects the PTE-mapped folio again, it is split
 *      into 4 KiB pages, which go through reclaim one by one: those whose
 *      PTE was accessed since stay, the others are swapped.  Counted in
 *      superpage_demote_split.
 *   Between the two, the folio is still one physically contiguous folio:
 *   if the pressure ends, ksuperpaged promotes it again in place (the same
 *   PFNs, nothing copied).  superpage_under_pressure() is how it knows:
 *   it does not re-promote a demoted folio while the folio's zone is below
 *   its high watermark or its memcg (or an ancestor) is within 1/8 of
 *   memory.max or memory.high, which would only make reclaim demote it
 *   again.
 *
 *   Reservations are not handled here: reclaim splits a partly mapped one
 *   before swap-out (freeing its unused subpages), and break.c breaks them
 *   before reclaim scans at all.  THPs made by the fault path or by
 *   khugepaged are treated like promoted superpages.
 *
 * Invariants
 *   - Only anonymous, swap-backed, PMD-order folios outside the swap
 *     cache are touched, only while swap space is left, and only when the
 *     caller honours accessed bits (not for MADV_PAGEOUT or the isolation
 *     of clean pages), may swap (__GFP_IO) and does not migrate folios
 *     whole to a lower memory tier instead.
 *   - An mlocked mapping keeps its PMD (as in try_to_unmap_one()).
 *   - Demotion changes mappings, not the folio: no data moves, the
 *     folio's reference and map counts are those of the same pages mapped
 *     by PTEs, and PageAnonExclusive is carried over to every subpage.
 *   - The split is that of reclaim's own fallback path: only a fully
 *     mapped, unpinned folio is split, with the folio lock held.
 *
 * Locking
 *   Called with the folio locked and isolated from the LRU.  The PMDs are
 *   found by an rmap walk (the anon_vma read lock) and split under their
 *   PMD lock by split_huge_pmd_address(), as try_to_unmap() does with
 *   TTU_SPLIT_HUGE_PMD.  superpage_under_pressure() reads counters only.
 */
#include <linux/mm.h>
#include <linux/huge_mm.h>
#include <linux/memcontrol.h>
#include <linux/mmzone.h>
#include <linux/page_counter.h>
#include <linux/rmap.h>
#include <linux/superpage.h>
#include <linux/swap.h>
#include <linux/vmstat.h>

#include "../internal.h"
#include "internal.h"

static bool superpage_demote_one(struct folio *folio,
				 struct vm_area_struct *vma,
				 unsigned long addr, void *arg)
{
	split_huge_pmd_address(vma, addr, false, folio);
	return true;
}

/* As try_to_unmap_one(): an mlocked mapping keeps its PMD. */
static bool superpage_demote_skip(struct vm_area_struct *vma, void *arg)
{
	return vma->vm_flags & VM_LOCKED;
}

static int superpage_demote_done(struct folio *folio)
{
	return !folio_entire_mapcount(folio);
}

/* Remap the PMD-mapped @folio with PTEs wherever it is mapped. */
static void superpage_demote_pmds(struct folio *folio)
{
	struct rmap_walk_control rwc = {
		.rmap_one = superpage_demote_one,
		.done = superpage_demote_done,
		.invalid_vma = superpage_demote_skip,
		.anon_lock = folio_lock_anon_vma_read,
	};

	rmap_walk(folio, &rwc);
	if (!folio_entire_mapcount(folio))
		count_vm_event(SUPERPAGE_DEMOTE);
}

/* See superpage_demote_folio() in include/linux/superpage.h. */
bool __superpage_demote_folio(struct folio *folio, struct list_head *list)
{
	VM_WARN_ON_ONCE_FOLIO(!folio_test_locked(folio), folio);
	/* Without swap space, splitting would only cost TLB reach. */
	if (!READ_ONCE(sysctl_superpage_demote_on_reclaim) ||
	    !get_nr_swap_pages())
		return false;
	if (folio_order(folio) != HPAGE_PMD_ORDER || !folio_test_anon(folio) ||
	    !folio_test_swapbacked(folio) || folio_test_swapcache(folio) ||
	    folio_test_superpage_resv(folio))
		return false;

	if (folio_entire_mapcount(folio)) {
		superpage_demote_pmds(folio);
		return false;
	}

	/* Partly mapped THPs are split by reclaim's own path. */
	if (!folio_mapped(folio) ||
	    folio_nr_pages_mapped(folio) != folio_nr_pages(folio) ||
	    folio_maybe_dma_pinned(folio) || !can_split_folio(folio, 1, NULL))
		return false;
	if (split_folio_to_list(folio, list))
		return false;
	count_vm_event(SUPERPAGE_DEMOTE_SPLIT);
	return true;
}

#ifdef CONFIG_MEMCG
/* Is the usage of @memcg or of an ancestor within 1/8 of its limit? */
static bool superpage_memcg_near_limit(struct mem_cgroup *memcg)
{
	for (; memcg && !mem_cgroup_is_root(memcg);
	     memcg = parent_mem_cgroup(memcg)) {
		unsigned long limit = min(READ_ONCE(memcg->memory.max),
					  READ_ONCE(memcg->memory.high));

		if (page_counter_read(&memcg->memory) > limit - limit / 8)
			return true;
	}
	return false;
}
#else
static bool superpage_memcg_near_limit(struct mem_cgroup *memcg)
{
	return false;
}
#endif

/**
 * superpage_under_pressure() - is memory short where @folio lives?
 * @folio: a demoted superpage that the daemon could promote again
 *
 * Return: true while @folio's zone is below its high watermark (plus one
 * superpage), or while the usage of its memcg or of an ancestor is within
 * 1/8 of that memcg's memory.max or memory.high.
 */
bool superpage_under_pressure(struct folio *folio)
{
	struct zone *zone = folio_zone(folio);
	bool ret;

	if (zone_page_state(zone, NR_FREE_PAGES) <
	    high_wmark_pages(zone) + HPAGE_PMD_NR)
		return true;

	rcu_read_lock();
	ret = superpage_memcg_near_limit(folio_memcg(folio));
	rcu_read_unlock();
	return ret;
}
