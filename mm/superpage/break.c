// SPDX-License-Identifier: GPL-2.0
/*
 * Reservation-based transparent superpages: breaking reservations.
 *
 * What this file does
 *   A reservation that is only partly populated holds memory that nothing
 *   uses: its unmapped subpages.  Breaking it (splitting the folio) frees
 *   them at once, without I/O, and leaves every mapped subpage mapped as a
 *   4 KiB page.  Reservations are broken in two situations, and always the
 *   least recently grown first, as in Navarro et al. and FreeBSD's
 *   vm_reserv (its partpopq):
 *   - reclaim: shrink_node() asks superpage_reclaim_node() for pages before
 *     it scans the LRU lists (kswapd, direct reclaim, memory.high,
 *     memory.max, memory.reclaim), so reservations go before any page in
 *     use is swapped out or dropped;
 *   - contiguity: when the fault path cannot get an order-9 page for a new
 *     reservation, superpage_resv_preempt() breaks a few stale
 *     reservations of the faulting task's memcg on the local node, so
 *     that compaction (direct if the THP defrag policy allows it, else
 *     kcompactd) can move their few used pages away and make a 2 MiB
 *     block free again.
 *   Reservations also end by promotion, by a split elsewhere (the
 *   deferred split shrinker, partial munmap, mprotect, migration) and by
 *   being freed; superpage_resv_broken counts every split of one.
 *
 * Where reservations are found
 *   On the deferred split queue (of their memcg, or of their node without
 *   memcg), where the fault path put them as partially mapped.  No other
 *   list is kept: growth moves a reservation to the tail of the queue
 *   (superpage_resv_requeue()), so the queue holds reservations in the
 *   order of their last growth, and the age of each is also stamped in
 *   the folio (folio->_superpage_grown, jiffies of its creation or last
 *   growth) for the cases where it cannot move; the stalest of the first
 *   SUPERPAGE_BREAK_SCAN queued folios is broken first.  The queue
 *   also holds THPs: promoted superpages stay queued (no longer partially
 *   mapped) until the deferred split shrinker drops them, and the
 *   underused-THP shrinker queues whole THPs on purpose.  A lookup moves
 *   every THP it passes to the tail of the queue, under the queue lock,
 *   so that however many were queued first (a memcg with hundreds of
 *   promoted ranges), the reservations come into the window.
 *
 * Invariants
 *   - Only partially mapped folios with PG_superpage_resv, outside the
 *     swap cache, are broken: their unmapped subpages are free for the
 *     taking.  A full reservation frees nothing and is left to promotion.
 *   - Reclaim breaks only what it could reclaim itself: reservations in
 *     zones up to its reclaim_idx, on its node, in memcgs that
 *     memory.min and memory.low do not protect.
 *   - A reservation that cannot be split now (pinned) is stamped as just
 *     grown, so that it does not stop the others from going; one whose
 *     lock is held is not chosen again by the same caller.
 *   - A folio is broken with a reference held (taken under the queue lock,
 *     where it cannot be freed: the free path unqueues it under that lock
 *     first) and with its lock held, as split_folio() requires.
 *   - The work is bounded: SUPERPAGE_BREAK_SCAN queue entries per lookup,
 *     SUPERPAGE_BREAK_MAX reservations per reclaim call and
 *     SUPERPAGE_PREEMPT_MAX per failed allocation.
 *
 * Locking
 *   The queue's split_queue_lock (irqsave) is held while a candidate is
 *   chosen and its reference taken, never across the split.  The folio
 *   lock is only tried (reclaim may run with other folios locked).
 *   _superpage_grown is written under the folio lock (growth, a failed
 *   break) or before the folio is visible (creation), never where the
 *   folio could be split meanwhile; it is read under the queue lock,
 *   where the folio is still whole, without the folio lock: a stale read
 *   only changes which reservation goes first.
 */
#include <linux/mm.h>
#include <linux/huge_mm.h>
#include <linux/jiffies.h>
#include <linux/memcontrol.h>
#include <linux/mmzone.h>
#include <linux/sched/mm.h>
#include <linux/superpage.h>
#include <linux/vmstat.h>

#include "../internal.h"
#include "internal.h"

/* Queue entries looked at, under the queue lock, to choose one victim. */
#define SUPERPAGE_BREAK_SCAN	256
/* Reservations broken per call from reclaim. */
#define SUPERPAGE_BREAK_MAX	16
/* Reservations broken per failed order-9 allocation. */
#define SUPERPAGE_PREEMPT_MAX	2
/* ... and only those that have not grown for this long (100 ms). */
#define SUPERPAGE_PREEMPT_AGE	(HZ / 10)

/* @folio, a reservation, was just created or grew by one subpage. */
void superpage_resv_grew(struct folio *folio)
{
	WRITE_ONCE(folio->_superpage_grown, jiffies);
}

/*
 * The deferred split queue of @memcg, or of @pgdat without memcg; it must
 * match get_deferred_split_queue() in mm/huge_memory.c.
 */
static struct deferred_split *superpage_queue(struct mem_cgroup *memcg,
					      struct pglist_data *pgdat)
{
#ifdef CONFIG_MEMCG
	if (memcg)
		return &memcg->deferred_split_queue;
#endif
	return &pgdat->deferred_split_queue;
}

/**
 * superpage_resv_requeue() - a reservation grew: to the tail of its queue
 * @folio: the reservation, locked, just grown by the caller's fault
 *
 * Keeps the reservations of a deferred split queue in the order of their
 * last growth (to the jiffy: the caller requeues once per jiffy), so that
 * breaking takes them least recently grown first at any queue length.
 * deferred_split_scan() walks a private list without the queue lock: it
 * holds a reference on the folio it is at and on every folio after it,
 * and on the one kept before it, and lets the free path unqueue, under
 * the queue lock, the earlier folios it has dropped its reference on.
 * A folio whose reference count equals its map count is none of those
 * it holds, so moving it under the queue lock is such an unqueue (plus
 * an insertion in the queue itself).  Split, migration and swap-out need
 * the folio lock, which the caller holds.  (A transient reference,
 * GUP-fast for one, only leaves the folio where it is: its stamp still
 * orders it within a lookup.)  Called under the PTE lock, in which the
 * queue lock nests.
 */
void superpage_resv_requeue(struct folio *folio)
{
	struct deferred_split *queue;
	unsigned long flags;

	VM_WARN_ON_ONCE_FOLIO(!folio_test_locked(folio), folio);
	/* Unlocked peek: checked again under the lock before the move. */
	if (data_race(list_empty(&folio->_deferred_list)))
		return;
	queue = superpage_queue(folio_memcg(folio),
				NODE_DATA(folio_nid(folio)));
	spin_lock_irqsave(&queue->split_queue_lock, flags);
	if (!list_empty(&folio->_deferred_list) &&
	    folio_ref_count(folio) == folio_mapcount(folio))
		list_move_tail(&folio->_deferred_list, &queue->split_queue);
	spin_unlock_irqrestore(&queue->split_queue_lock, flags);
}

/* Which reservations a caller may break. */
struct superpage_break_ctl {
	int nid;		/* this node only, or NUMA_NO_NODE */
	int max_zone;		/* in zones up to this one */
	unsigned long min_age;	/* not grown for this many jiffies */
	/* Victims whose lock was taken: not chosen again by this caller. */
	struct folio *busy[SUPERPAGE_BREAK_MAX];
	unsigned int nr_busy;
};

static bool superpage_break_busy(const struct superpage_break_ctl *ctl,
				 struct folio *folio)
{
	unsigned int i;

	for (i = 0; i < ctl->nr_busy; i++)
		if (ctl->busy[i] == folio)
			return true;
	return false;
}

/*
 * May the queued @folio be broken for @ctl?  A reservation with unused
 * subpages, none of them in the swap cache (a full reservation swapped out
 * whole and partly faulted back in is not partially mapped again: its
 * "unused" pages are swap cache, which a split does not free).
 */
static bool superpage_breakable(struct folio *folio,
				const struct superpage_break_ctl *ctl)
{
	if (!folio_test_superpage_resv(folio) ||
	    !folio_test_partially_mapped(folio) ||
	    folio_test_swapcache(folio) || folio_test_writeback(folio) ||
	    !folio_ref_count(folio) || superpage_break_busy(ctl, folio))
		return false;
	if (ctl->nid != NUMA_NO_NODE && folio_nid(folio) != ctl->nid)
		return false;
	if (folio_zonenum(folio) > ctl->max_zone)
		return false;
	return time_after_eq(jiffies, READ_ONCE(folio->_superpage_grown) +
				      ctl->min_age);
}

/*
 * The least recently grown breakable reservation among the first
 * SUPERPAGE_BREAK_SCAN entries of @queue, with a reference taken; or NULL.
 * The queue also holds THPs, promoted superpages among them (the deferred
 * split shrinker drops those only when it runs, and the underused-THP
 * shrinker keeps whole THPs queued on purpose): the entries looked at that
 * are not reservations go to the tail of the queue, so that the next
 * lookup finds the reservations in its window however many THPs were
 * queued before them.  *@rotated says whether any did.  Moving entries of
 * the queue itself is safe under its lock: deferred_split_scan() moves
 * folios to a private list under that lock too.
 */
static struct folio *superpage_stalest_resv(struct deferred_split *queue,
					    const struct superpage_break_ctl *ctl,
					    bool *rotated)
{
	struct folio *folio, *next, *victim = NULL;
	unsigned long flags, grown = 0;
	LIST_HEAD(others);
	int scanned = 0;

	*rotated = false;
	/* Unlocked peek: an empty queue is not worth its lock. */
	if (!data_race(queue->split_queue_len))
		return NULL;
	spin_lock_irqsave(&queue->split_queue_lock, flags);
	list_for_each_entry_safe(folio, next, &queue->split_queue,
				 _deferred_list) {
		if (++scanned > SUPERPAGE_BREAK_SCAN)
			break;
		if (!folio_test_superpage_resv(folio)) {
			list_move_tail(&folio->_deferred_list, &others);
			*rotated = true;
			continue;
		}
		if (!superpage_breakable(folio, ctl))
			continue;
		if (victim && !time_before(READ_ONCE(folio->_superpage_grown),
					   grown))
			continue;
		victim = folio;
		grown = READ_ONCE(folio->_superpage_grown);
	}
	list_splice_tail(&others, &queue->split_queue);
	/* Only a racing final folio_put() can make this fail. */
	if (victim && !folio_try_get(victim))
		victim = NULL;
	spin_unlock_irqrestore(&queue->split_queue_lock, flags);
	return victim;
}

/*
 * Break the reservation @folio, referenced by the caller.  Returns the
 * number of subpages freed (its unused ones), 0 if it could not be split
 * now (locked, pinned, grown full or split meanwhile).  A reservation that
 * could not be split is stamped as just grown, so that the next attempt
 * goes to another one; the stamp is written under the folio lock, where
 * the folio cannot be split (its third page would belong to another
 * folio then).
 */
static unsigned long superpage_break(struct folio *folio,
				     struct superpage_break_ctl *ctl)
{
	unsigned long freed = 0;
	long unused;

	/*
	 * A locked folio is busy (maybe being split): no restamp either, but
	 * this caller does not choose it again.
	 */
	if (!folio_trylock(folio)) {
		if (ctl->nr_busy < ARRAY_SIZE(ctl->busy))
			ctl->busy[ctl->nr_busy++] = folio;
		return 0;
	}
	if (folio_test_large(folio) && folio_test_superpage_resv(folio) &&
	    folio_test_partially_mapped(folio) &&
	    !folio_test_swapcache(folio)) {
		unused = folio_nr_pages(folio) - folio_nr_pages_mapped(folio);
		if (unused > 0 && !split_folio(folio))
			freed = unused;
		/* Still whole, under our lock: the stamp is its own. */
		if (!freed)
			superpage_resv_grew(folio);
	}
	folio_unlock(folio);
	return freed;
}

/*
 * Break up to @max reservations of @queue allowed by @ctl, stalest first,
 * until @nr_wanted pages are freed.  Returns the pages freed; *@broken is
 * increased by the reservations broken.
 */
static unsigned long superpage_break_queue(struct deferred_split *queue,
					   struct superpage_break_ctl *ctl,
					   unsigned long nr_wanted,
					   unsigned int max,
					   unsigned int *broken)
{
	unsigned long freed = 0, n;
	struct folio *folio;
	unsigned int tries;
	bool rotated;

	for (tries = 0; tries < max && freed < nr_wanted; tries++) {
		folio = superpage_stalest_resv(queue, ctl, &rotated);
		if (!folio) {
			/* THPs were moved out of the window: look again. */
			if (rotated)
				continue;
			break;
		}
		n = superpage_break(folio, ctl);
		folio_put(folio);
		if (n) {
			freed += n;
			(*broken)++;
		}
	}
	return freed;
}

/* See superpage_reclaim_node() in include/linux/superpage.h. */
bool __superpage_reclaim_node(struct pglist_data *pgdat,
			      struct mem_cgroup *target, int reclaim_idx,
			      unsigned long nr_to_reclaim,
			      unsigned long *nr_reclaimed)
{
	unsigned long nr_wanted = nr_to_reclaim - *nr_reclaimed;
	struct superpage_break_ctl ctl = {
		.nid = pgdat->node_id,
		.max_zone = reclaim_idx,
	};
	unsigned int broken = 0;
	unsigned long freed = 0;
	struct mem_cgroup *memcg;

	/*
	 * Without memcg, the iterator yields NULL: the node's own queue.  An
	 * empty queue costs an unlocked peek (superpage_stalest_resv()); the
	 * node counter is no test, its per-CPU deltas may hide a few.
	 */
	memcg = mem_cgroup_iter(target, NULL, NULL);
	do {
		/* As shrink_node_memcgs(), without the memory.low override. */
		mem_cgroup_calculate_protection(target, memcg);
		if (mem_cgroup_below_min(target, memcg) ||
		    mem_cgroup_below_low(target, memcg))
			continue;
		freed += superpage_break_queue(superpage_queue(memcg, pgdat),
					       &ctl, nr_wanted - freed,
					       SUPERPAGE_BREAK_MAX - broken,
					       &broken);
		if (freed >= nr_wanted || broken >= SUPERPAGE_BREAK_MAX) {
			mem_cgroup_iter_break(target, memcg);
			break;
		}
	} while ((memcg = mem_cgroup_iter(target, memcg, NULL)));
	if (freed) {
		*nr_reclaimed += freed;
		pgdat->kswapd_failures = 0;
	}
	return freed >= nr_wanted;
}

/**
 * superpage_resv_preempt() - break stale reservations for a new one
 * @mm: the faulting address space, whose order-9 allocation failed
 * @nid: the node the allocation wanted
 * @max_zone: the highest zone the allocation may use
 *
 * Break up to SUPERPAGE_PREEMPT_MAX of the least recently grown partly
 * populated reservations of @mm's memcg (reservations of other memcgs are
 * theirs) on node @nid, among those that have not grown for
 * SUPERPAGE_PREEMPT_AGE.  Their unused subpages go back to the buddy
 * allocator; compaction can then empty their 2 MiB blocks by moving the
 * few used pages away.  Counted in superpage_resv_preempt.
 *
 * Return: the number of reservations broken.
 */
unsigned int superpage_resv_preempt(struct mm_struct *mm, int nid,
				    int max_zone)
{
	struct mem_cgroup *memcg = get_mem_cgroup_from_mm(mm);
	struct superpage_break_ctl ctl = {
		.nid = nid,
		.max_zone = max_zone,
		.min_age = SUPERPAGE_PREEMPT_AGE,
	};
	unsigned int broken = 0;

	superpage_break_queue(superpage_queue(memcg, NODE_DATA(nid)), &ctl,
			      ULONG_MAX, SUPERPAGE_PREEMPT_MAX, &broken);
	mem_cgroup_put(memcg);
	if (broken)
		count_vm_events(SUPERPAGE_RESV_PREEMPT, broken);
	return broken;
}
