// SPDX-License-Identifier: GPL-2.0
/*
 * Reservation-based transparent superpages: accounting of reservations.
 *
 * What this file does
 *   It keeps two node counters true: NR_SUPERPAGE_RESV, the reservations
 *   that exist (created by a fault, not yet promoted, split or freed), and
 *   NR_SUPERPAGE_RESV_UNUSED, the subpages of those reservations that no
 *   page table maps.  The unused subpages are memory that breaking the
 *   reservation frees at once: /proc/meminfo shows them (SuperpageUnused)
 *   and MemAvailable counts them as available.
 *
 * How a reservation is known
 *   By PG_superpage_resv on the folio's second page, set by the fault path
 *   when it creates the reservation and cleared when the reservation ends:
 *   promotion (promote.c), a split (__split_huge_page(), counted in
 *   superpage_resv_broken), or the free of the folio
 *   (free_pages_prepare()), which covers migration, swap-out of a full
 *   reservation and khugepaged's copy too.
 *
 * Invariants
 *   - For each folio with the flag, it added 1 to NR_SUPERPAGE_RESV and
 *     folio_nr_pages() - (pages mapped) to NR_SUPERPAGE_RESV_UNUSED, where
 *     "pages mapped" is what __folio_mod_stat() adds to NR_ANON_MAPPED:
 *     every change of it passes through superpage_resv_mod_mapped().
 *   - The flag is set before the first rmap of the folio and cleared only
 *     where the folio cannot gain or lose mappings concurrently: with the
 *     folio locked and the PMD and PTE locks held (promotion), with the
 *     folio unmapped and its references frozen (split), or with no
 *     reference left (free).
 *
 * Locking
 *   None of its own: the node counters are per-CPU deltas updated with
 *   mod_node_page_state(), safe in any context.  The rmap callers hold the
 *   page table lock of the mapping that changes.
 */
#include <linux/mm.h>
#include <linux/superpage.h>
#include <linux/vmstat.h>

#include "../internal.h"

/*
 * @folio, newly allocated by the fault path, becomes a reservation; none
 * of its pages is mapped yet.
 */
void superpage_resv_start(struct folio *folio)
{
	pg_data_t *pgdat = folio_pgdat(folio);

	folio_set_superpage_resv(folio);
	/* No subpage zeroed ahead yet (zero.c, Z2). */
	folio->_superpage_zeroed = 0;
	mod_node_page_state(pgdat, NR_SUPERPAGE_RESV, 1);
	mod_node_page_state(pgdat, NR_SUPERPAGE_RESV_UNUSED,
			    folio_nr_pages(folio));
}

/* @nr pages of the reservation @folio were mapped (or unmapped if < 0). */
void __superpage_resv_mod_mapped(struct folio *folio, int nr)
{
	mod_node_page_state(folio_pgdat(folio), NR_SUPERPAGE_RESV_UNUSED, -nr);
}

/*
 * The reservation @folio ends (promoted, split or freed): take it and its
 * unused pages out of the counters and clear its flag.
 */
void __superpage_resv_end(struct folio *folio)
{
	pg_data_t *pgdat = folio_pgdat(folio);
	long mapped;

	if (folio_entire_mapcount(folio))
		mapped = folio_nr_pages(folio);
	else
		mapped = folio_nr_pages_mapped(folio);
	folio_clear_superpage_resv(folio);
	/* Page 2's private word, clear again for a split (zero.c, Z2). */
	folio->_superpage_zeroed = 0;
	mod_node_page_state(pgdat, NR_SUPERPAGE_RESV, -1);
	mod_node_page_state(pgdat, NR_SUPERPAGE_RESV_UNUSED,
			    mapped - folio_nr_pages(folio));
}

/* The reservation @folio is being split: it is broken. */
void __superpage_resv_split(struct folio *folio)
{
	count_vm_event(SUPERPAGE_RESV_BROKEN);
	__superpage_resv_end(folio);
}

/**
 * superpage_resv_unused_pages() - unused subpages of all reservations
 *
 * Return: the number of pages, for /proc/meminfo and MemAvailable.
 */
unsigned long superpage_resv_unused_pages(void)
{
	return global_node_page_state(NR_SUPERPAGE_RESV_UNUSED);
}
