// SPDX-License-Identifier: GPL-2.0
/*
 * Reservation-based transparent superpages: zeroing ahead of the fault.
 *
 * What this file does
 *   Every subpage of a reservation is zeroed before a PTE maps it.  A fault
 *   that continues a sequential fill maps a cluster of subpages (fault.c),
 *   up to 64 at the default vm.superpage_cluster_max_order; zeroing all of
 *   them inside that one fault made it as slow as 256 KiB of clearing.  So
 *   a fault zeroes at most vm.superpage_fault_zero_pages subpages itself
 *   (the faulting one first, then those nearest to it), and the rest of
 *   its cluster is mapped only if it was zeroed ahead of time.  Ahead of
 *   the fill, a worker zeroes the unmapped subpages beyond the cluster, in
 *   the direction of the fill, while the faulting thread goes on: the fault
 *   asks for it with superpage_zero_ahead().  A
 *   subpage that nobody zeroed ahead is not mapped by the cluster; the
 *   next fault there maps it (and zeroes it itself).  A fault never waits
 *   for the worker: a fill that catches up with it takes back the near
 *   end of the chunk being zeroed and zeroes that itself.
 *
 * Idle time only
 *   The worker is the kthread ksuperpage_zahd, SCHED_IDLE, which runs while
 *   the feature is on.  A fault queues a request only while another CPU
 *   that shares its cache is idle (or the worker runs already): where
 *   every CPU is busy, the fill's own faults zero what they map, and no
 *   other task of the machine pays for its clearing.  A task that wakes up
 *   on the worker's CPU preempts it at the next subpage (at once where the
 *   kernel is preemptible: the worker sees it in its count of involuntary
 *   switches); the worker then sleeps for a moment instead of waiting on
 *   that CPU's run queue, and its wakeup places it on an idle CPU.  If no
 *   CPU is idle, it gives up: it keeps what it zeroed and drops every
 *   request, with its reference (Z2).  A worker that stayed runnable
 *   behind a busy task would get almost no CPU time, and the requests it
 *   holds would keep their reservations from being promoted, split or
 *   migrated meanwhile.
 *
 * The zeroed run
 *   Each reservation records one run of subpages [lo, hi), the *zeroed
 *   run*, in folio->_superpage_zeroed (page 2's private word, which
 *   prep_compound_tail() clears when the folio is allocated).  The worker
 *   grows the run at one edge; a fault that maps subpages of the run keeps
 *   the larger part of what remains.  A run that would not be contiguous
 *   is started again: losing zeroed subpages from the run is always safe,
 *   they are zeroed again when they are mapped.
 *
 * Invariants
 *   Z1. Every subpage in the run is zero and has not been mapped since it
 *       was zeroed.  The worker zeroes a subpage only if it is unmapped (its
 *       own _mapcount is -1) and the folio holds no reference beyond its
 *       mappings and the worker's (no zap waiting for its TLB flush, no
 *       pipe buffer, no pin can read or write it later), and it is not
 *       poisoned.  Nothing maps an unmapped subpage of a reservation but
 *       the fault path, which does so under the folio lock and takes what
 *       it maps out of the run (superpage_zeroed_take()).  Fork, migration
 *       and UFFDIO_MOVE only copy or move subpages that are mapped.
 *   Z2. While a request for the folio is queued or being carried out (the
 *       *queued* bit of the word), the queue holds exactly one reference on
 *       the folio: a fault counts it as expected in R6
 *       (superpage_zero_refs()), and promotion, split and migration,
 *       which need the reference count exact, wait for the worker.  The
 *       subpages that the worker zeroes with the folio unlocked are
 *       *claimed* (a second run in the word): a fault maps no claimed
 *       subpage.  A fault on a claimed subpage takes back the near end
 *       of the claim (superpage_zero_steal()) rather than wait for the
 *       worker.
 *   Z3. The word is zero unless the folio is a reservation
 *       (PG_superpage_resv): superpage_resv_start() clears it and
 *       __superpage_resv_end() clears it again when the reservation is
 *       promoted, split or freed (none of which can happen while a request
 *       is queued, by Z2), so a split finds page 2's private word clear, as
 *       __split_huge_page_tail() expects, and a folio that was never a
 *       reservation (a migration target, a PTE-mapped THP) has no run, no
 *       claim and no request.
 *   Z4. The worker clears a claimed subpage only while it is claimed: it
 *       publishes the subpage in superpage_zero_busy, then checks the
 *       claim, with a full barrier in between; a fault that takes part of
 *       a claim back shrinks the claim, then, after a full barrier, waits
 *       while superpage_zero_busy names a subpage of that part (one
 *       subpage's clearing, with preemption off).  Either the worker sees
 *       the subpage gone from the claim, or the fault sees it and waits:
 *       no subpage is cleared after a fault took it.  A claim only
 *       shrinks while the worker zeroes it, and the worker visits each of
 *       its subpages, so whatever is still claimed when it is done was
 *       zeroed (Z1).
 *
 *   Z5. Requests are queued only while superpage_zero_worker is set: it
 *       is set once the worker runs and cleared before it is stopped, and
 *       stopping it carries out (drops) what is queued, so no request and
 *       no reference outlives the worker.  One worker carries requests out.
 *
 * Locking
 *   The word (runs, request, queued bit) is written under the folio lock
 *   only, and read under it but for the claim, which the worker reads
 *   without it (Z4).  superpage_zero_busy is written by the worker only.
 *   The worker takes the folio lock to claim a chunk of
 *   SUPERPAGE_ZERO_CHUNK subpages at the edge of the zeroed run and again
 *   to add what is left of the claim to the run; it zeroes with no lock
 *   held.  It holds the folio lock only with preemption off
 *   (superpage_zero_lock_folio()): where the kernel is preemptible, a
 *   SCHED_IDLE task preempted with the lock held would make a task of any
 *   priority wait for idle time.  It clears the queued bit and drops the
 *   queue's reference with the folio still locked (freeing the folio after
 *   the unlock if that was the last reference), so that no fault ever sees
 *   the reference without the bit.  superpage_zero_lock (a spinlock, taken
 *   under the PTE lock by the fault) protects the queue and
 *   superpage_zero_worker; superpage_sysctl_mutex (sysctl.c) serialises
 *   starting and stopping the worker.
 */

#include <linux/delay.h>
#include <linux/highmem.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/sched.h>
#include <linux/sched/topology.h>
#include <linux/spinlock.h>
#include <linux/superpage.h>
#include <linux/vmstat.h>

#include "internal.h"

/* The word lives in page 2's private word, which a new folio has clear. */
static_assert(offsetof(struct folio, _superpage_zeroed) -
	      offsetof(struct folio, __page_2) ==
	      offsetof(struct page, private));
static_assert(BITS_PER_LONG >= 64);

/* Subpages zeroed in one claim, at most. */
#define SUPERPAGE_ZERO_CHUNK	16
/* Folios queued at most; more requests are dropped (a cluster shrinks). */
#define SUPERPAGE_ZERO_QUEUE	64
/* CPUs that a fault looks at for an idle one, at most. */
#define SUPERPAGE_ZERO_PROBE	16

static DEFINE_SPINLOCK(superpage_zero_lock);
/* The PFN of the subpage that the worker is clearing, or 0 (Z4). */
static unsigned long superpage_zero_busy;
static struct folio *superpage_zero_queue[SUPERPAGE_ZERO_QUEUE];
static unsigned int superpage_zero_head, superpage_zero_tail;

/* Z5: the worker, while it runs. */
static struct kthread_worker *superpage_zero_worker;
/* The worker is on a CPU, carrying requests out (a hint for the faults). */
static bool superpage_zero_running;
/* No CPU was idle: the worker drops what is queued (worker only). */
static bool superpage_zero_giving_up;
/* The worker's involuntary switches when it last looked (worker only). */
static unsigned long superpage_zero_nivcsw;

static void superpage_zero_fn(struct kthread_work *work);
static DEFINE_KTHREAD_WORK(superpage_zero_work, superpage_zero_fn);

/*
 * The word of a reservation, unpacked: the zeroed run [lo, hi), the claim
 * [clo, chi), the request (zero from @from towards @to, excluded; @to may
 * be -1 for a fill going down) and the queued bit.  10 bits each.
 */
struct superpage_zero_word {
	unsigned int lo, hi, clo, chi;
	int from, to;
	bool queued;
};

#define SUPERPAGE_ZERO_BITS	10
#define SUPERPAGE_ZERO_MASK	((1UL << SUPERPAGE_ZERO_BITS) - 1)

static unsigned int superpage_zero_field(unsigned long w, int k)
{
	return (w >> (k * SUPERPAGE_ZERO_BITS)) & SUPERPAGE_ZERO_MASK;
}

static struct superpage_zero_word superpage_word_get(struct folio *folio)
{
	unsigned long w = folio->_superpage_zeroed;
	struct superpage_zero_word z = {
		.lo = superpage_zero_field(w, 0),
		.hi = superpage_zero_field(w, 1),
		.clo = superpage_zero_field(w, 2),
		.chi = superpage_zero_field(w, 3),
		.from = superpage_zero_field(w, 4),
		.to = (int)superpage_zero_field(w, 5) - 1,
		.queued = w >> (6 * SUPERPAGE_ZERO_BITS) & 1,
	};

	VM_WARN_ON_ONCE_FOLIO(!folio_test_locked(folio), folio);
	/* Z3: only a reservation has a word (a PTE-mapped THP may be grown). */
	if (!folio_test_superpage_resv(folio))
		return (struct superpage_zero_word){};
	if (WARN_ON_ONCE(z.hi > HPAGE_PMD_NR || z.lo > z.hi ||
			 z.chi > HPAGE_PMD_NR || z.clo > z.chi))
		return (struct superpage_zero_word){ .queued = z.queued };
	return z;
}

static void superpage_word_set(struct folio *folio,
			       struct superpage_zero_word z)
{
	unsigned long w;

	/* Z3: page 2's private word stays clear in any other folio. */
	if (!folio_test_superpage_resv(folio))
		return;
	if (z.lo >= z.hi) {
		z.lo = 0;
		z.hi = 0;
	}
	if (z.clo >= z.chi) {
		z.clo = 0;
		z.chi = 0;
	}
	w = (unsigned long)z.lo |
	    (unsigned long)z.hi << SUPERPAGE_ZERO_BITS |
	    (unsigned long)z.clo << (2 * SUPERPAGE_ZERO_BITS) |
	    (unsigned long)z.chi << (3 * SUPERPAGE_ZERO_BITS) |
	    (unsigned long)z.from << (4 * SUPERPAGE_ZERO_BITS) |
	    (unsigned long)(z.to + 1) << (5 * SUPERPAGE_ZERO_BITS) |
	    (unsigned long)z.queued << (6 * SUPERPAGE_ZERO_BITS);
	/* The worker reads the claim without the lock (Z4). */
	WRITE_ONCE(folio->_superpage_zeroed, w);
}

/**
 * superpage_zeroed_get() - the zeroed run and the claim of a reservation
 * @folio: a locked folio
 * @lo: first subpage of the zeroed run
 * @hi: one past its last (@lo == @hi: empty)
 * @clo: first subpage that the worker is zeroing now
 * @chi: one past its last (@clo == @chi: no claim)
 */
void superpage_zeroed_get(struct folio *folio, unsigned int *lo,
			  unsigned int *hi, unsigned int *clo,
			  unsigned int *chi)
{
	struct superpage_zero_word z = superpage_word_get(folio);

	*lo = z.lo;
	*hi = z.hi;
	*clo = z.clo;
	*chi = z.chi;
}

/**
 * superpage_zero_refs() - references that the zeroing queue holds (Z2)
 * @folio: a locked folio
 *
 * Return: 1 while a request to zero subpages of @folio is queued or being
 * carried out, else 0.
 */
int superpage_zero_refs(struct folio *folio)
{
	return superpage_word_get(folio).queued;
}

/*
 * Is subpage @i of @folio in the worker's claim?  Exact under the folio
 * lock; without it, as the worker reads it, ordered by Z4.
 */
static bool superpage_zero_claims(struct folio *folio, unsigned int i)
{
	unsigned long w = READ_ONCE(folio->_superpage_zeroed);

	return i >= superpage_zero_field(w, 2) && i < superpage_zero_field(w, 3);
}

/**
 * superpage_zeroed_take() - the fault maps subpages of @folio
 * @folio: a locked reservation
 * @map: the subpages that the fault is about to map (none claimed)
 *
 * Takes the subpages of @map out of the zeroed run, keeping the longest
 * part of the run that none of them cuts (Z1).
 *
 * Return: how many subpages of @map were in the run (zeroed ahead).
 */
unsigned int superpage_zeroed_take(struct folio *folio, const unsigned long *map)
{
	struct superpage_zero_word z = superpage_word_get(folio);
	unsigned int j, start, best_lo = 0, best_hi = 0, nr = 0;

	if (z.lo == z.hi)
		return 0;
	for (start = z.lo, j = z.lo; j <= z.hi; j++) {
		if (j < z.hi && !test_bit(j, map))
			continue;
		if (j < z.hi)
			nr++;
		if (j - start > best_hi - best_lo) {
			best_lo = start;
			best_hi = j;
		}
		start = j + 1;
	}
	z.lo = best_lo;
	z.hi = best_hi;
	superpage_word_set(folio, z);
	return nr;
}

/**
 * superpage_zeroed_init() - a new reservation on a frame zeroed whole
 * @folio: the reservation, not yet mapped or visible to anyone else
 * @i: the subpage that the creating fault maps
 *
 * Every subpage of a frame from the pool of zeroed frames (prezero.c, P1)
 * is zero: the zeroed run is the longer side of @i (Z1).  Called before
 * the folio is published, so without the folio lock.
 */
void superpage_zeroed_init(struct folio *folio, unsigned int i)
{
	struct superpage_zero_word z = {};

	if (i >= HPAGE_PMD_NR - 1 - i) {
		z.lo = 0;
		z.hi = i;
	} else {
		z.lo = i + 1;
		z.hi = HPAGE_PMD_NR;
	}
	superpage_word_set(folio, z);
}

/*
 * Claim, under the folio lock, up to SUPERPAGE_ZERO_CHUNK subpages at the
 * edge of the zeroed run towards the request's end (starting a new run at
 * its start if the run does not reach it).  Returns the claim's size, 0
 * when the request is done or can no longer be carried out.
 */
static unsigned int superpage_zero_claim(struct folio *folio)
{
	struct superpage_zero_word z = superpage_word_get(folio);
	bool up = z.to > z.from;
	unsigned int n;
	int j;

	/* Promoted, unmapped, in the swap cache, ...: nothing to do. */
	if (!READ_ONCE(superpage_zero_worker) || superpage_zero_giving_up ||
	    !folio_test_superpage_resv(folio) || !folio_mapped(folio) ||
	    folio_entire_mapcount(folio) || superpage_folio_unusable(folio))
		return 0;
	/* Z1: an unmapped subpage may still be read through a reference. */
	if (folio_ref_count(folio) != folio_mapcount(folio) + 1)
		return 0;
	if (WARN_ON_ONCE(z.clo != z.chi) || z.from == z.to)
		return 0;

	if (up && (z.lo == z.hi || z.from < (int)z.lo || z.from > (int)z.hi)) {
		z.lo = z.from;
		z.hi = z.from;
	} else if (!up && (z.lo == z.hi || z.from + 1 < (int)z.lo ||
			   z.from >= (int)z.hi)) {
		z.lo = z.from + 1;
		z.hi = z.from + 1;
	}
	z.clo = up ? z.hi : z.lo;
	z.chi = z.clo;
	for (n = 0; n < SUPERPAGE_ZERO_CHUNK; n++) {
		j = up ? z.chi : (int)z.clo - 1;
		if (up ? j >= z.to : j <= z.to)
			break;
		if (atomic_read(&folio_page(folio, j)->_mapcount) != -1 ||
		    PageHWPoison(folio_page(folio, j)))
			break;
		if (up)
			z.chi++;
		else
			z.clo--;
	}
	superpage_word_set(folio, z);
	return n;
}

/*
 * The worker's folio lock, held with preemption off (see Locking).  The
 * worker sleeps only while someone else holds the lock.
 */
static void superpage_zero_lock_folio(struct folio *folio)
{
	for (;;) {
		preempt_disable();
		if (folio_trylock(folio))
			return;
		preempt_enable();
		/* Asleep, and maybe woken on a busy CPU: no idle time. */
		WRITE_ONCE(superpage_zero_running, false);
		folio_wait_locked(folio);
		WRITE_ONCE(superpage_zero_running, !superpage_zero_giving_up);
	}
}

static void superpage_zero_unlock_folio(struct folio *folio)
{
	folio_unlock(folio);
	preempt_enable();
}

/*
 * Is another CPU that shares this one's cache idle?  Looks at a few CPUs
 * only.
 */
static bool superpage_zero_idle_cpu(void)
{
	int this = raw_smp_processor_id(), cpu, n = 0;

	for_each_cpu_wrap(cpu, cpu_online_mask, this + 1) {
		if (n++ >= SUPERPAGE_ZERO_PROBE)
			break;
		if (cpu != this && cpus_share_cache(this, cpu) &&
		    available_idle_cpu(cpu))
			return true;
	}
	return false;
}

/*
 * Where cond_resched() would let another task run, or once another task
 * did (a preemptible kernel preempts the worker as soon as a task wakes on
 * its CPU): a SCHED_IDLE thread left runnable behind it would hardly run
 * again on this CPU, so sleep for a moment instead, and the wakeup places
 * the worker on an idle CPU; or, if no CPU is idle, give up (see Idle
 * time only).
 *
 * Return: true if the worker gives up.
 */
static bool superpage_zero_yield(void)
{
	unsigned long nivcsw = READ_ONCE(current->nivcsw);
	bool preempted = nivcsw != superpage_zero_nivcsw;

	superpage_zero_nivcsw = nivcsw;
	if (!need_resched() && !preempted)
		return false;
	if (!superpage_zero_idle_cpu()) {
		superpage_zero_giving_up = true;
		/* Faults stop queueing requests that would be dropped. */
		WRITE_ONCE(superpage_zero_running, false);
		return true;
	}
	WRITE_ONCE(superpage_zero_running, false);
	usleep_idle_range(100, 200);
	WRITE_ONCE(superpage_zero_running, true);
	return false;
}

/*
 * Zero the claimed subpages with the folio unlocked (the queue's reference
 * keeps it), then, locked again, add them to the zeroed run.
 */
static void superpage_zero_claimed(struct folio *folio)
{
	struct superpage_zero_word z = superpage_word_get(folio);
	unsigned int n, j, nr = 0, clo = z.clo, chi = z.chi;
	bool up = z.to > z.from;
	bool claimed;

	superpage_zero_unlock_folio(folio);
	/*
	 * Farthest from the fill first: a fault that catches up takes back
	 * the near end of the claim.  Every subpage is visited (a claim
	 * only shrinks), so what is still claimed at the end was zeroed.
	 */
	for (n = 0; n < z.chi - z.clo; n++) {
		struct page *page;

		j = up ? z.chi - 1 - n : z.clo + n;
		page = folio_page(folio, j);
		preempt_disable();
		/* Z4: after the clearing of the previous subpage. */
		smp_store_release(&superpage_zero_busy, page_to_pfn(page));
		/* Z4: published before the claim is read; pairs with steal. */
		smp_mb();
		claimed = superpage_zero_claims(folio, j);
		if (claimed)
			clear_highpage(page);
		/* Z4: a fault that reads 0 sees the subpage cleared. */
		smp_store_release(&superpage_zero_busy, 0);
		preempt_enable();
		if (!claimed)
			continue;
		nr++;
		if (superpage_zero_yield()) {
			n++;
			break;
		}
	}
	count_vm_events(SUPERPAGE_ZERO_AHEAD, nr);
	superpage_zero_lock_folio(folio);
	z = superpage_word_get(folio);
	/*
	 * Z1: given up after @n subpages, only the part of the claim that was
	 * visited, from its far end, was zeroed.  The claim only shrank
	 * meanwhile (faults took parts back): keep what is in both.
	 */
	if (z.clo < z.chi && up)
		z.clo = min(max(z.clo, chi - n), z.chi);
	else if (z.clo < z.chi)
		z.chi = max(min(z.chi, clo + n), z.clo);
	/* The claim at the run's edge extends it, else the longer wins. */
	if (z.hi == z.clo && z.lo != z.hi) {
		z.hi = z.chi;
	} else if (z.lo == z.chi && z.lo != z.hi) {
		z.lo = z.clo;
	} else if (z.chi - z.clo > z.hi - z.lo) {
		z.lo = z.clo;
		z.hi = z.chi;
	}
	z.clo = 0;
	z.chi = 0;
	superpage_word_set(folio, z);
}

static void superpage_zero_fn(struct kthread_work *work)
{
	struct superpage_zero_word z;
	struct folio *folio;
	bool last;

	superpage_zero_nivcsw = READ_ONCE(current->nivcsw);
	for (;;) {
		spin_lock(&superpage_zero_lock);
		if (superpage_zero_head == superpage_zero_tail) {
			WRITE_ONCE(superpage_zero_running, false);
			superpage_zero_giving_up = false;
			spin_unlock(&superpage_zero_lock);
			return;
		}
		WRITE_ONCE(superpage_zero_running, !superpage_zero_giving_up);
		folio = superpage_zero_queue[superpage_zero_head++ %
					     SUPERPAGE_ZERO_QUEUE];
		spin_unlock(&superpage_zero_lock);

		superpage_zero_lock_folio(folio);
		while (superpage_zero_claim(folio))
			superpage_zero_claimed(folio);
		/* Z2: the bit goes with the reference, under the lock. */
		z = superpage_word_get(folio);
		z.queued = false;
		superpage_word_set(folio, z);
		last = folio_put_testzero(folio);
		superpage_zero_unlock_folio(folio);
		if (last)
			__folio_put(folio);
		superpage_zero_yield();
	}
}

/**
 * superpage_zero_start_stop() - start or stop ksuperpage_zahd (Z5)
 * @run: true to make sure the worker runs, false to stop it
 *
 * Stopping it drops every queued request, and its reference.  Called
 * under superpage_sysctl_mutex.
 *
 * Return: 0, or the error of kthread_create_worker().
 */
int superpage_zero_start_stop(bool run)
{
	struct sched_param param = { .sched_priority = 0 };
	struct kthread_worker *worker;

	if (run) {
		if (superpage_zero_worker)
			return 0;
		worker = kthread_create_worker(0, "ksuperpage_zahd");
		if (IS_ERR(worker))
			return PTR_ERR(worker);
		/* Only CPU time that nothing else wants. */
		sched_setscheduler_nocheck(worker->task, SCHED_IDLE, &param);
		/* Idle since the last worker was destroyed (flushed). */
		kthread_init_work(&superpage_zero_work, superpage_zero_fn);
		spin_lock(&superpage_zero_lock);
		WRITE_ONCE(superpage_zero_worker, worker);
		spin_unlock(&superpage_zero_lock);
		return 0;
	}
	spin_lock(&superpage_zero_lock);
	worker = superpage_zero_worker;
	WRITE_ONCE(superpage_zero_worker, NULL);
	spin_unlock(&superpage_zero_lock);
	if (!worker)
		return 0;
	/* Drop the requests without waiting for idle time, under the mutex. */
	sched_setscheduler_nocheck(worker->task, SCHED_NORMAL, &param);
	/* Flushes the queued work, which drops each request (claim). */
	kthread_destroy_worker(worker);
	return 0;
}

/**
 * superpage_zero_steal() - take back the near end of a claim
 * @folio: a locked reservation
 * @i: the subpage that a fault is about to map
 * @nr: how many subpages, from @i on in the direction of the fill, the
 *	fault may zero itself
 *
 * For a fault that found its subpage claimed by the worker, which zeroes
 * it with the folio unlocked: rather than sleep until the worker is done
 * (the fault would drop its locks and be retried, and a fill that runs
 * right behind the worker would wait at every claim), the fault takes
 * back the part of the claim from its end nearest to the fill through
 * @nr subpages from @i, and zeroes what it maps of it itself; the worker
 * keeps the far part, which it zeroes first.  Waits, spinning, only while
 * the worker is clearing a subpage of the part taken back (Z4): the
 * caller may hold the PTE lock.
 */
void superpage_zero_steal(struct folio *folio, unsigned int i,
			  unsigned int nr)
{
	struct superpage_zero_word z = superpage_word_get(folio);
	unsigned long pfn = folio_pfn(folio), busy;
	unsigned int lo = z.clo, hi = z.chi;

	if (i < z.clo || i >= z.chi)
		return;
	nr = max(nr, 1U);
	if (z.to > z.from) {
		/* Going up: [i, i + nr) and what is below it. */
		z.clo = min(i + nr, z.chi);
		hi = z.clo;
	} else {
		/* Going down: (i - nr, i] and what is above it. */
		z.chi = i + 1 > nr ? max(i + 1 - nr, z.clo) : z.clo;
		lo = z.chi;
	}
	superpage_word_set(folio, z);
	/* Z4: the worker sees the claim shrunk, or this sees its subpage. */
	smp_mb();
	for (;;) {
		/* Z4: pairs with the worker's releases. */
		busy = smp_load_acquire(&superpage_zero_busy);
		if (busy < pfn + lo || busy >= pfn + hi)
			break;
		cpu_relax();
	}
	count_vm_events(SUPERPAGE_ZERO_AHEAD_STOLEN, hi - lo);
}

/**
 * superpage_zero_ahead() - ask for subpages to be zeroed ahead of a fill
 * @folio: the reservation, locked, mapped under the held PTE lock
 * @from: the first subpage to zero, next to what the fault mapped
 * @to: where to stop, excluded: above @from for a fill going up, below it
 *	(down to -1) for a fill going down
 *
 * Called by a fault that continues a sequential fill.  Records the request
 * in the folio, where a request already queued picks it up; else queues
 * the folio, with a reference (Z2), and wakes the worker, unless the queue
 * is full, the worker does not run (Z5) or no CPU is idle.
 */
void superpage_zero_ahead(struct folio *folio, int from, int to)
{
	struct superpage_zero_word z = superpage_word_get(folio);
	bool queue;

	/* Not for a PTE-mapped THP that a fault grows (Z3). */
	if (!folio_test_superpage_resv(folio) || from == to || from < 0 ||
	    from >= HPAGE_PMD_NR || WARN_ON_ONCE(to < -1 || to > HPAGE_PMD_NR))
		return;
	/* Zeroed already. */
	if (to > from ? (int)z.hi >= to && (int)z.lo <= from :
			(int)z.lo <= to + 1 && (int)z.hi > from)
		return;

	queue = !z.queued;
	/* Idle time: the worker is on a CPU, or a CPU is idle (a hint). */
	if (queue && !READ_ONCE(superpage_zero_running) &&
	    !superpage_zero_idle_cpu())
		return;
	if (queue) {
		spin_lock(&superpage_zero_lock);
		if (!superpage_zero_worker ||
		    superpage_zero_tail - superpage_zero_head >=
		    SUPERPAGE_ZERO_QUEUE) {
			spin_unlock(&superpage_zero_lock);
			return;
		}
		folio_get(folio);
		superpage_zero_queue[superpage_zero_tail++ %
				     SUPERPAGE_ZERO_QUEUE] = folio;
		/* Z5: the worker is not stopped while the lock is held. */
		kthread_queue_work(superpage_zero_worker, &superpage_zero_work);
		spin_unlock(&superpage_zero_lock);
	}
	z.from = from;
	z.to = to;
	z.queued = true;
	superpage_word_set(folio, z);
}
