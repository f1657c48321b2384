// SPDX-License-Identifier: GPL-2.0
/*
 * Reservation-based transparent superpages: frames zeroed before the fault.
 *
 * What this file does
 *   Every subpage of a reservation is zeroed before a PTE maps it: by the
 *   fault, or for a sequential fill by the zero-ahead worker (zero.c) while
 *   the fill goes on.  Either way the clearing is paid during the fill, by
 *   the faulting thread or by a worker that competes with it for the CPU.
 *   As HawkEye (Panwar et al., ASPLOS 2019) does for huge pages, this file
 *   zeroes frames before anyone asks for them, with CPU time that nobody
 *   else wants: the kthread ksuperpage_zerod, a SCHED_IDLE task, allocates
 *   free order-9 frames without reclaim, zeroes them and keeps up to
 *   vm.superpage_prezero_frames of them in a pool.  A new reservation
 *   takes a frame from the pool (superpage_prezero_take()); the frame's
 *   subpages on the longer side of the first fault's are then its zeroed
 *   run (zero.c, superpage_zeroed_init(): one run per reservation), so
 *   the faults of a fill that starts at either end of the range map whole
 *   clusters and zero nothing, and no worker zeroes ahead of them.  The
 *   pool is kept per node but used only on machines with one node of
 *   memory: elsewhere, taking a frame of the local node could defeat a
 *   memory policy or a cpuset.
 *
 * Invariants
 *   P1. A frame in the pool is an order-9 folio of which the pool holds the
 *       only reference, on no LRU, charged to no memcg, every byte of it
 *       zero: it was cleared after it was allocated and nothing else can
 *       reach it, and the thread writes nothing to it after clearing it.
 *   P2. NR_SUPERPAGE_PREZEROED of a node counts the pages of the frames in
 *       its pool, superpage_prezero_nr[] the frames.
 *   P3. The pool is empty while the feature is off: the thread runs while
 *       it is on (sysctl.c), and empties the pool when it is stopped.
 *   P4. The pool gives memory back under pressure and takes none that is
 *       wanted: its shrinker frees frames to the buddy allocator (a reclaim
 *       that is not limited to one memory cgroup runs it), after which the
 *       thread refills nothing for a second; the thread allocates with
 *       GFP_TRANSHUGE_LIGHT (no reclaim, no compaction, no kswapd wakeup),
 *       only while the node's free pages exceed twice its high watermarks
 *       by two frames, and holds at most an eighth of the node's memory.
 *       It keeps no frame of ZONE_MOVABLE or of a CMA area (what is there
 *       must be migratable) and empties the pool when memory is about to
 *       go offline and before hibernation.  A frame in which a page was
 *       poisoned is never given back to the allocator.
 *
 * Locking
 *   superpage_prezero_lock, a spinlock, protects the lists, the counts,
 *   superpage_prezero_stopping and superpage_prezero_shrunk; nothing
 *   clears or allocates with it held.  The counts are also read without
 *   it, as hints (superpage_prezero_take()'s quick check, the shrinker's
 *   count).  superpage_prezero_mutex serialises starting and stopping the
 *   thread; superpage_prezero_kicked is a flag written and read with
 *   WRITE_ONCE()/READ_ONCE() around the wait queue's own locking.
 */

#include <linux/freezer.h>
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/kthread.h>
#include <linux/memory.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/nodemask.h>
#include <linux/sched.h>
#include <linux/shrinker.h>
#include <linux/spinlock.h>
#include <linux/suspend.h>
#include <linux/superpage.h>
#include <linux/vmstat.h>
#include <linux/wait.h>

#include "internal.h"

static DEFINE_SPINLOCK(superpage_prezero_lock);
static DEFINE_MUTEX(superpage_prezero_mutex);
static struct list_head superpage_prezero_lists[MAX_NUMNODES];
static unsigned int superpage_prezero_nr[MAX_NUMNODES];
static bool superpage_prezero_stopping = true;
static unsigned long superpage_prezero_shrunk;
static struct task_struct *superpage_prezero_thread;
static DECLARE_WAIT_QUEUE_HEAD(superpage_prezero_wait);
static bool superpage_prezero_kicked;
static struct shrinker *superpage_prezero_shrinker;

/* The frames that the pool of node @nid may hold now (P4). */
static unsigned int superpage_prezero_target(int nid)
{
	unsigned long cap = node_present_pages(nid) / 8 / HPAGE_PMD_NR;

	return min_t(unsigned long, READ_ONCE(sysctl_superpage_prezero_frames),
		     cap);
}

/* Has node @nid free memory to spare for one more frame (P4)? */
static bool superpage_prezero_room(int nid)
{
	pg_data_t *pgdat = NODE_DATA(nid);
	unsigned long free = 0, wmark = 0;
	int z;

	for (z = 0; z < MAX_NR_ZONES; z++) {
		struct zone *zone = &pgdat->node_zones[z];

		if (!populated_zone(zone))
			continue;
		free += zone_page_state(zone, NR_FREE_PAGES) -
			zone_page_state(zone, NR_FREE_CMA_PAGES);
		wmark += high_wmark_pages(zone);
	}
	return free > 2 * wmark + 2 * HPAGE_PMD_NR;
}

/*
 * Was a page of @folio poisoned while it sat in the pool?  memory_failure()
 * cannot handle a page that no mapping or LRU holds, and only marks it
 * (not the folio): such a frame is kept out for good, neither mapped nor
 * freed, since an order-9 free would hand the poisoned page out again.
 */
static bool superpage_prezero_poisoned(struct folio *folio)
{
	int j;

	for (j = 0; j < HPAGE_PMD_NR; j++) {
		if (PageHWPoison(folio_page(folio, j))) {
			pr_warn_ratelimited("superpage: pool frame %#lx poisoned, kept out\n",
					    folio_pfn(folio));
			return true;
		}
	}
	return false;
}

/* Give a frame of the pool back to the page allocator, if not poisoned. */
static bool superpage_prezero_release(struct folio *folio)
{
	if (superpage_prezero_poisoned(folio))
		return false;
	folio_put(folio);
	return true;
}

/* Add a frame to the pool of @nid, with superpage_prezero_lock held. */
static void superpage_prezero_push(struct folio *folio, int nid, bool head)
{
	lockdep_assert_held(&superpage_prezero_lock);
	if (head)
		list_add(&folio->lru, &superpage_prezero_lists[nid]);
	else
		list_add_tail(&folio->lru, &superpage_prezero_lists[nid]);
	superpage_prezero_nr[nid]++;
	mod_node_page_state(NODE_DATA(nid), NR_SUPERPAGE_PREZEROED,
			    HPAGE_PMD_NR);
}

/* Remove a frame from the pool of @nid, with superpage_prezero_lock held. */
static struct folio *superpage_prezero_pop(int nid)
{
	struct folio *folio;

	lockdep_assert_held(&superpage_prezero_lock);
	folio = list_first_entry_or_null(&superpage_prezero_lists[nid],
					 struct folio, lru);
	if (!folio)
		return NULL;
	list_del_init(&folio->lru);
	superpage_prezero_nr[nid]--;
	mod_node_page_state(NODE_DATA(nid), NR_SUPERPAGE_PREZEROED,
			    -HPAGE_PMD_NR);
	return folio;
}

/* Free up to @nr frames of the pool of @nid; returns how many were. */
static unsigned long superpage_prezero_free(int nid, unsigned long nr)
{
	unsigned long freed = 0;
	struct folio *folio;

	while (freed < nr) {
		spin_lock(&superpage_prezero_lock);
		folio = superpage_prezero_pop(nid);
		spin_unlock(&superpage_prezero_lock);
		if (!folio)
			break;
		freed += superpage_prezero_release(folio);
	}
	if (freed)
		count_vm_events(SUPERPAGE_PREZERO_FREED, freed);
	return freed;
}

enum superpage_prezero_fill {
	SUPERPAGE_PREZERO_ADDED,	/* one frame more */
	SUPERPAGE_PREZERO_FULL,		/* at its size: wait for a kick */
	SUPERPAGE_PREZERO_LATER,	/* short of one, but not now */
};

/* Empty every node's pool. */
static void superpage_prezero_drain(void)
{
	int nid;

	for_each_node(nid)
		superpage_prezero_free(nid, ULONG_MAX);
}

/* Allocate, zero and add one frame to the pool of @nid, if it wants one. */
static enum superpage_prezero_fill superpage_prezero_fill_one(int nid)
{
	/* Movable pageblocks, but never ZONE_MOVABLE (P4). */
	gfp_t gfp = (GFP_TRANSHUGE_LIGHT & ~__GFP_HIGHMEM) | __GFP_THISNODE;
	struct folio *folio;
	bool wanted, now;
	int j;

	spin_lock(&superpage_prezero_lock);
	wanted = !superpage_prezero_stopping &&
		 superpage_prezero_nr[nid] < superpage_prezero_target(nid);
	now = time_after(jiffies, superpage_prezero_shrunk + HZ);
	spin_unlock(&superpage_prezero_lock);
	if (!wanted)
		return SUPERPAGE_PREZERO_FULL;
	if (!now || !superpage_prezero_room(nid))
		return SUPERPAGE_PREZERO_LATER;

	folio = __folio_alloc_node(gfp, HPAGE_PMD_ORDER, nid);
	if (!folio)
		return SUPERPAGE_PREZERO_LATER;
	/* P4: held here, it could not be migrated away (CMA). */
	if (!folio_is_longterm_pinnable(folio)) {
		folio_put(folio);
		return SUPERPAGE_PREZERO_LATER;
	}
	/* init_on_alloc cleared it already. */
	for (j = 0; j < HPAGE_PMD_NR && !want_init_on_alloc(gfp); j++) {
		clear_highpage(folio_page(folio, j));
		cond_resched();
	}

	spin_lock(&superpage_prezero_lock);
	wanted = !superpage_prezero_stopping &&
		 superpage_prezero_nr[nid] < superpage_prezero_target(nid);
	/* P1: the lock orders the clearing before any take. */
	if (wanted)
		superpage_prezero_push(folio, nid, false);
	spin_unlock(&superpage_prezero_lock);
	if (!wanted) {
		folio_put(folio);
		return SUPERPAGE_PREZERO_FULL;
	}
	count_vm_event(SUPERPAGE_PREZERO_FILLED);
	return SUPERPAGE_PREZERO_ADDED;
}

static int superpage_prezerod(void *unused)
{
	struct sched_param param = { .sched_priority = 0 };
	enum superpage_prezero_fill fill, state;
	int nid;

	/* Only CPU time that nothing else wants. */
	sched_setscheduler_nocheck(current, SCHED_IDLE, &param);
	set_freezable();
	while (!kthread_should_stop()) {
		WRITE_ONCE(superpage_prezero_kicked, false);
		state = SUPERPAGE_PREZERO_FULL;
		/* Used with one node of memory only (superpage_prezero_take()). */
		if (num_node_state(N_MEMORY) == 1) {
			for_each_node_state(nid, N_MEMORY) {
				fill = superpage_prezero_fill_one(nid);
				if (fill == SUPERPAGE_PREZERO_ADDED ||
				    state == SUPERPAGE_PREZERO_FULL)
					state = fill;
			}
		}
		if (state == SUPERPAGE_PREZERO_ADDED)
			continue;
		/* Full: until kicked; short of frames: in a second. */
		wait_event_freezable_timeout(superpage_prezero_wait,
					     kthread_should_stop() ||
					     READ_ONCE(superpage_prezero_kicked),
					     state == SUPERPAGE_PREZERO_FULL ?
					     MAX_SCHEDULE_TIMEOUT : HZ);
	}
	return 0;
}

/* Wake the thread: the pool lost a frame, or its size changed. */
void superpage_prezero_kick(void)
{
	WRITE_ONCE(superpage_prezero_kicked, true);
	wake_up_interruptible(&superpage_prezero_wait);
}

/**
 * superpage_prezero_take() - a zeroed frame for a new reservation
 * @gfp: the allocation flags of the reservation
 *
 * Takes a frame from the pool, on a machine with one node of memory.  Its
 * zone is ZONE_NORMAL or below, which every anonymous fault's @gfp allows.
 *
 * Return: an order-9 folio of which every byte is zero (P1), with one
 * reference, not charged, or NULL.  The caller charges it, and may give
 * it back with superpage_prezero_put_back() while nothing has written it.
 */
struct folio *superpage_prezero_take(gfp_t gfp)
{
	int nid = numa_mem_id();
	struct folio *folio;

	/*
	 * With one node of memory, every memory policy and cpuset allows it;
	 * with more, the pool could defeat them, and is not used.
	 */
	if (!READ_ONCE(superpage_prezero_nr[nid]) ||
	    num_node_state(N_MEMORY) > 1)
		return NULL;
	spin_lock(&superpage_prezero_lock);
	folio = superpage_prezero_pop(nid);
	spin_unlock(&superpage_prezero_lock);
	if (!folio)
		return NULL;
	superpage_prezero_kick();
	if (superpage_prezero_poisoned(folio))
		return NULL;
	count_vm_event(SUPERPAGE_PREZERO_USED);
	return folio;
}

/**
 * superpage_prezero_put_back() - return an unused frame to the pool
 * @folio: a frame from superpage_prezero_take(), not charged (its memcg
 *	charge failed), which nothing has written
 */
void superpage_prezero_put_back(struct folio *folio)
{
	int nid = folio_nid(folio);
	bool back;

	spin_lock(&superpage_prezero_lock);
	back = !superpage_prezero_stopping;
	if (back)
		superpage_prezero_push(folio, nid, true);
	spin_unlock(&superpage_prezero_lock);
	if (!back && superpage_prezero_release(folio))
		count_vm_event(SUPERPAGE_PREZERO_FREED);
}

/**
 * superpage_prezero_pages() - pages held zeroed in the pools
 *
 * Counted in MemAvailable: the shrinker gives them back at once (P4).
 */
unsigned long superpage_prezero_pages(void)
{
	return global_node_page_state(NR_SUPERPAGE_PREZEROED);
}

static unsigned long superpage_prezero_count(struct shrinker *shrink,
					     struct shrink_control *sc)
{
	return (unsigned long)READ_ONCE(superpage_prezero_nr[sc->nid]) *
	       HPAGE_PMD_NR;
}

static unsigned long superpage_prezero_scan(struct shrinker *shrink,
					    struct shrink_control *sc)
{
	unsigned long freed;

	spin_lock(&superpage_prezero_lock);
	superpage_prezero_shrunk = jiffies;
	spin_unlock(&superpage_prezero_lock);
	freed = superpage_prezero_free(sc->nid,
				       DIV_ROUND_UP(sc->nr_to_scan,
						    HPAGE_PMD_NR));
	/* Refilled a second later (P4), not at the next take. */
	superpage_prezero_kick();
	return freed ? freed * HPAGE_PMD_NR : SHRINK_STOP;
}

/**
 * superpage_prezero_resize() - vm.superpage_prezero_frames was written
 *
 * Frees the frames beyond the new size and wakes the thread to fill up.
 */
void superpage_prezero_resize(void)
{
	unsigned int nr, target;
	int nid;

	for_each_node_state(nid, N_MEMORY) {
		target = superpage_prezero_target(nid);
		nr = READ_ONCE(superpage_prezero_nr[nid]);
		if (nr > target)
			superpage_prezero_free(nid, nr - target);
	}
	superpage_prezero_kick();
}

/**
 * superpage_prezero_start_stop() - start or stop ksuperpage_zerod
 * @run: true to make sure the thread runs, false to stop it and empty the
 *	pools (P3)
 *
 * Return: 0, or the error of kthread_run().
 */
int superpage_prezero_start_stop(bool run)
{
	struct task_struct *thread;
	int ret = 0;

	mutex_lock(&superpage_prezero_mutex);
	/* No shrinker (its allocation failed at boot): no pool (P4). */
	if (run && !superpage_prezero_thread && superpage_prezero_shrinker) {
		spin_lock(&superpage_prezero_lock);
		superpage_prezero_stopping = false;
		spin_unlock(&superpage_prezero_lock);
		thread = kthread_run(superpage_prezerod, NULL,
				     "ksuperpage_zerod");
		if (IS_ERR(thread)) {
			ret = PTR_ERR(thread);
			spin_lock(&superpage_prezero_lock);
			superpage_prezero_stopping = true;
			spin_unlock(&superpage_prezero_lock);
		} else {
			superpage_prezero_thread = thread;
		}
	} else if (!run && superpage_prezero_thread) {
		spin_lock(&superpage_prezero_lock);
		superpage_prezero_stopping = true;
		spin_unlock(&superpage_prezero_lock);
		kthread_stop(superpage_prezero_thread);
		superpage_prezero_thread = NULL;
		superpage_prezero_drain();
	}
	mutex_unlock(&superpage_prezero_mutex);
	return ret;
}

/* Memory going offline: the pool's frames would keep it from going. */
static int superpage_prezero_memory_event(struct notifier_block *nb,
					  unsigned long action, void *arg)
{
	if (action == MEM_GOING_OFFLINE)
		superpage_prezero_drain();
	return NOTIFY_OK;
}

/* Hibernation: the pool's zeroes need not go into the image. */
static int superpage_prezero_pm_event(struct notifier_block *nb,
				      unsigned long action, void *arg)
{
	if (action == PM_HIBERNATION_PREPARE)
		superpage_prezero_drain();
	return NOTIFY_OK;
}

static struct notifier_block superpage_prezero_pm_nb = {
	.notifier_call = superpage_prezero_pm_event,
};

static int __init superpage_prezero_init(void)
{
	int nid;

	for (nid = 0; nid < MAX_NUMNODES; nid++)
		INIT_LIST_HEAD(&superpage_prezero_lists[nid]);
	superpage_prezero_shrunk = jiffies - HZ - 1;
	superpage_prezero_shrinker = shrinker_alloc(SHRINKER_NUMA_AWARE,
						    "superpage-prezero");
	if (!superpage_prezero_shrinker)
		return -ENOMEM;
	superpage_prezero_shrinker->count_objects = superpage_prezero_count;
	superpage_prezero_shrinker->scan_objects = superpage_prezero_scan;
	/*
	 * Cheap to make again: half of the pool per call (seeks 0), one
	 * frame per batch of scanned objects (pages).
	 */
	superpage_prezero_shrinker->seeks = 0;
	superpage_prezero_shrinker->batch = HPAGE_PMD_NR;
	shrinker_register(superpage_prezero_shrinker);
	hotplug_memory_notifier(superpage_prezero_memory_event,
				DEFAULT_CALLBACK_PRI);
	register_pm_notifier(&superpage_prezero_pm_nb);
	return 0;
}
subsys_initcall(superpage_prezero_init);
