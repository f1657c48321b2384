// SPDX-License-Identifier: GPL-2.0
/*
 * Reservation-based transparent superpages: the ksuperpaged daemon.
 *
 * What this file does
 *   ksuperpaged is a kernel thread, running while vm.superpage_enabled is
 *   non-zero, that finds 2 MiB ranges whose reservation is populated enough
 *   and hands them to superpage_promote() (promote.c).  It learns about
 *   ranges in two ways:
 *   - hints: when a fault maps the subpage that brings a reservation to
 *     vm.superpage_promote_threshold (or fills it), fault.c records the
 *     range in its mm's slot and wakes the daemon, which promotes it at
 *     once;
 *   - the scan: every vm.superpage_scan_sleep_millisecs the daemon walks
 *     vm.superpage_pages_to_scan pages' worth of address space (512 per
 *     2 MiB range, as khugepaged counts), round robin over the registered
 *     mms, resuming where it stopped.  It catches what hints miss: a full
 *     hint array (which also starts a scan at once), a threshold lowered
 *     later, a promotion that failed.
 *   A range (hinted or scanned) whose promotion finds the folio busy
 *   (zero.c's worker still zeroing ahead of the fill that completed it, a
 *   fault holding the folio lock) is tried again SUPERPAGE_RETRY_MS later,
 *   then after twice as long, up to SUPERPAGE_RETRIES times (at least
 *   1.3 s in all), rather than a scan period later; not one whose VMA and
 *   mmap locks writers held (SUPERPAGE_PROMOTE_LOCKED, promote.c).  At
 *   most 32 retries are queued, one per range, each keeping its mm_struct
 *   with mmgrab().
 *   An mm gets a slot (mm/mm_slot.h, as khugepaged's) when its first
 *   reservation is created.  Like khugepaged's, a slot pins the mm_struct
 *   (mmgrab) but not the address space; the daemon takes mmget_not_zero()
 *   while it works on one, and frees the slot of an exited mm when it
 *   comes to it (in a hint or in the scan).
 *
 * Invariants
 *   - Hints are only hints: the page table is the index (see fault.c), and
 *     superpage_promote() checks everything again under the page table
 *     locks.  A lost hint delays a promotion until the scan comes by.
 *   - An mm has a slot exactly while MMF_VM_SUPERPAGE is set in its flags:
 *     the bit is set and cleared under superpage_slots_lock with the slot
 *     inserted or removed, so the fault path tests it without the lock
 *     (creation of a reservation in a registered mm takes no lock).
 *   - A slot is on superpage_hinted exactly while it has hints (nr_ready
 *     is not 0), so the daemon finds them without walking every slot.
 *   - Only the daemon frees slots (or the sysctl, once the daemon has
 *     stopped), so the daemon may use a slot without the lock.
 *   - Slots exist only while the daemon runs: a fault that registers its
 *     mm after the daemon was stopped adds none, so no mm_struct stays
 *     pinned with nobody to free its slot.
 */

/**
 * DOC: Locking of the daemon
 *
 * superpage_slots_lock (a spinlock) protects superpage_slots_hash,
 * superpage_slots, superpage_nr_slots, superpage_hinted,
 * superpage_scan_slot, superpage_daemon_running, MMF_VM_SUPERPAGE and
 * each slot's ready[], nr_ready and hinted.  superpage_kicked and
 * superpage_hints_pending are flags read by the daemon without the
 * lock, with READ_ONCE()/WRITE_ONCE().  slot->scan_address and the
 * retries (superpaged_retry[], superpaged_nr_retry) belong to the daemon.
 * superpaged_mutex serialises starting and stopping the thread and
 * protects superpaged_thread.  The daemon takes the mmap read lock with
 * mmap_read_trylock() to scan; superpage_promote() locks the range's VMA
 * for read, by its per-VMA lock or the mmap read lock, by trylock too
 * (retried for about 20 ms): the one daemon must not sleep behind an mm
 * whose lock is held for long.
 */

#include <linux/freezer.h>
#include <linux/hashtable.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/superpage.h>
#include <linux/swap.h>
#include <linux/wait.h>

#include "../mm_slot.h"
#include "internal.h"

#define SUPERPAGE_READY_HINTS	32

/**
 * struct superpage_mm_slot - the daemon's record of one mm
 * @slot: the mm (pinned with mmgrab() while the slot exists), in
 *	superpage_slots_hash and, in the order of registration, in
 *	superpage_slots
 * @hinted: in superpage_hinted while @nr_ready is not 0
 * @ready: start addresses of ranges that reached the threshold
 * @nr_ready: how many of @ready are valid
 * @scan_address: where the scan resumes in the mm (0: from the start)
 */
struct superpage_mm_slot {
	struct mm_slot slot;
	struct list_head hinted;
	unsigned long ready[SUPERPAGE_READY_HINTS];
	unsigned int nr_ready;
	unsigned long scan_address;
};

static DEFINE_SPINLOCK(superpage_slots_lock);
static DEFINE_HASHTABLE(superpage_slots_hash, 8);
static LIST_HEAD(superpage_slots);
static LIST_HEAD(superpage_hinted);
static unsigned int superpage_nr_slots;
static struct superpage_mm_slot *superpage_scan_slot;
static bool superpage_hints_pending;
static bool superpage_daemon_running;
static bool superpage_kicked;

/*
 * A range to promote again (superpaged_promote_range()), no sooner
 * than @due.  @mm is pinned with mmgrab() while the retry is queued.
 */
struct superpage_retry {
	struct mm_struct *mm;
	unsigned long haddr;
	unsigned long due;
	unsigned int tries;
};

#define SUPERPAGE_RETRIES	7
#define SUPERPAGE_RETRY_MS	10

static struct superpage_retry superpaged_retry[SUPERPAGE_READY_HINTS];
static unsigned int superpaged_nr_retry;

static DEFINE_MUTEX(superpaged_mutex);
static struct task_struct *superpaged_thread;
static DECLARE_WAIT_QUEUE_HEAD(superpaged_wait);

static struct superpage_mm_slot *superpage_slot_lookup(struct mm_struct *mm)
{
	struct mm_slot *slot;

	lockdep_assert_held(&superpage_slots_lock);
	slot = mm_slot_lookup(superpage_slots_hash, mm);
	return slot ? mm_slot_entry(slot, struct superpage_mm_slot, slot) : NULL;
}

/**
 * superpage_daemon_enter_mm() - register @mm with ksuperpaged
 * @mm: the current mm, in which a reservation was just created
 *
 * Called from the fault path without spinlocks held.  A registered mm
 * costs a bit test.  If the slot cannot be allocated, the mm is registered
 * by a later reservation.
 */
void superpage_daemon_enter_mm(struct mm_struct *mm)
{
	struct superpage_mm_slot *slot;
	bool added = false;

	if (test_bit(MMF_VM_SUPERPAGE, &mm->flags))
		return;
	slot = kzalloc(sizeof(*slot), GFP_KERNEL);
	if (!slot)
		return;
	INIT_LIST_HEAD(&slot->hinted);
	spin_lock(&superpage_slots_lock);
	if (superpage_daemon_running &&
	    !test_bit(MMF_VM_SUPERPAGE, &mm->flags)) {
		mmgrab(mm);
		struct mm_slot *mm_slot = &slot->slot;

		mm_slot_insert(superpage_slots_hash, mm, mm_slot);
		list_add_tail(&slot->slot.mm_node, &superpage_slots);
		superpage_nr_slots++;
		set_bit(MMF_VM_SUPERPAGE, &mm->flags);
		added = true;
	}
	spin_unlock(&superpage_slots_lock);
	if (!added)
		kfree(slot);
}

/**
 * superpage_daemon_note_ready() - ask for the promotion of a range
 * @mm: the mm of the range, registered by superpage_daemon_enter_mm()
 * @haddr: the 2 MiB-aligned start of the range
 *
 * Called from the fault path, which holds the mmap read lock or the VMA
 * lock but no spinlock, when a reservation reaches the threshold.
 */
void superpage_daemon_note_ready(struct mm_struct *mm, unsigned long haddr)
{
	struct superpage_mm_slot *slot;
	bool wake = false;

	spin_lock(&superpage_slots_lock);
	slot = superpage_slot_lookup(mm);
	if (slot && slot->nr_ready < SUPERPAGE_READY_HINTS &&
	    (!slot->nr_ready || slot->ready[slot->nr_ready - 1] != haddr)) {
		if (!slot->nr_ready)
			list_add_tail(&slot->hinted, &superpage_hinted);
		slot->ready[slot->nr_ready++] = haddr;
		wake = !superpage_hints_pending;
		WRITE_ONCE(superpage_hints_pending, true);
	} else if (slot && slot->nr_ready == SUPERPAGE_READY_HINTS &&
		   !READ_ONCE(superpage_kicked)) {
		/*
		 * A full array loses this hint: scan now rather than a scan
		 * period later.  Ranges that fill together (a random-order
		 * fill completes most of them at its very end) come in
		 * bursts larger than the array.
		 */
		WRITE_ONCE(superpage_kicked, true);
		wake = true;
	}
	spin_unlock(&superpage_slots_lock);
	if (wake)
		wake_up_interruptible(&superpaged_wait);
}

/*
 * Take @slot off every list and clear the mm's bit; the caller drops the
 * mm and frees the slot after the lock.
 */
static void superpage_slot_remove(struct superpage_mm_slot *slot)
{
	lockdep_assert_held(&superpage_slots_lock);
	if (superpage_scan_slot == slot)
		superpage_scan_slot =
			list_is_last(&slot->slot.mm_node, &superpage_slots) ?
			NULL : list_next_entry(slot, slot.mm_node);
	hash_del(&slot->slot.hash);
	list_del(&slot->slot.mm_node);
	list_del_init(&slot->hinted);
	slot->nr_ready = 0;
	superpage_nr_slots--;
	clear_bit(MMF_VM_SUPERPAGE, &slot->slot.mm->flags);
}

/* Free the slot of an mm that has exited.  Called by the daemon only. */
static void superpage_slot_free_dead(struct superpage_mm_slot *slot)
{
	spin_lock(&superpage_slots_lock);
	superpage_slot_remove(slot);
	spin_unlock(&superpage_slots_lock);
	mmdrop(slot->slot.mm);
	kfree(slot);
}

/*
 * Promote the range at @haddr of @mm (referenced by the caller), tried
 * @tries times before; queue a retry if the folio was busy.
 */
static void superpaged_promote_range(struct mm_struct *mm,
				     unsigned long haddr, unsigned int tries)
{
	struct superpage_retry *r;
	unsigned int i;

	if (superpage_promote(mm, haddr) != SUPERPAGE_PROMOTE_BUSY ||
	    tries >= SUPERPAGE_RETRIES ||
	    superpaged_nr_retry == ARRAY_SIZE(superpaged_retry))
		return;
	/* A scan or a hint may find a range whose retry is queued. */
	for (i = 0; i < superpaged_nr_retry; i++)
		if (superpaged_retry[i].mm == mm &&
		    superpaged_retry[i].haddr == haddr)
			return;
	mmgrab(mm);
	r = &superpaged_retry[superpaged_nr_retry++];
	r->mm = mm;
	r->haddr = haddr;
	r->tries = tries + 1;
	r->due = jiffies + msecs_to_jiffies(SUPERPAGE_RETRY_MS << tries);
}

/* Try again the ranges whose retry is due; @all: drop every retry. */
static void superpaged_do_retries(bool all)
{
	struct superpage_retry r;
	unsigned int i = 0;

	while (i < superpaged_nr_retry) {
		if (kthread_should_stop())
			all = true;
		if (!all && time_before(jiffies, superpaged_retry[i].due)) {
			i++;
			continue;
		}
		/* A retry queued meanwhile comes later: it is not due. */
		r = superpaged_retry[i];
		superpaged_retry[i] = superpaged_retry[--superpaged_nr_retry];
		if (!all && mmget_not_zero(r.mm)) {
			superpaged_promote_range(r.mm, r.haddr, r.tries);
			mmput(r.mm);
		}
		mmdrop(r.mm);
		cond_resched();
	}
}

/* When the daemon must wake: the scan at @next, or an earlier retry. */
static unsigned long superpaged_wake_at(unsigned long next)
{
	unsigned int i;

	for (i = 0; i < superpaged_nr_retry; i++)
		if (time_before(superpaged_retry[i].due, next))
			next = superpaged_retry[i].due;
	return next;
}

/*
 * Promote the ranges that faults reported, mm by mm: only the slots that
 * have hints are visited.
 */
static void superpaged_do_hints(void)
{
	unsigned long ready[SUPERPAGE_READY_HINTS];
	struct superpage_mm_slot *slot;
	struct mm_struct *mm;
	unsigned int i, nr;

	WRITE_ONCE(superpage_hints_pending, false);
	spin_lock(&superpage_slots_lock);
	while (!list_empty(&superpage_hinted) && !kthread_should_stop()) {
		slot = list_first_entry(&superpage_hinted,
					struct superpage_mm_slot, hinted);
		list_del_init(&slot->hinted);
		nr = slot->nr_ready;
		memcpy(ready, slot->ready, nr * sizeof(ready[0]));
		slot->nr_ready = 0;
		spin_unlock(&superpage_slots_lock);
		/* Only the daemon removes slots: @slot stays valid. */
		mm = slot->slot.mm;
		if (mmget_not_zero(mm)) {
			for (i = 0; i < nr && !kthread_should_stop(); i++) {
				superpaged_promote_range(mm, ready[i], 0);
				cond_resched();
			}
			mmput(mm);
		} else {
			superpage_slot_free_dead(slot);
		}
		spin_lock(&superpage_slots_lock);
	}
	spin_unlock(&superpage_slots_lock);
}

static bool superpaged_vma_ok(struct vm_area_struct *vma)
{
	return vma->anon_vma && __superpage_vma_eligible(vma);
}

/*
 * Scan @slot's mm from slot->scan_address for at most @budget pages'
 * worth of ranges, promoting those that qualify.  Returns the pages'
 * worth scanned; *@more is true when the budget ran out in this mm (the
 * next pass resumes here), false when the mm was scanned to its end or is
 * busy or gone (the next pass moves on to the next mm).
 */
static unsigned int superpaged_scan_mm(struct superpage_mm_slot *slot,
				       unsigned int budget, bool *more)
{
	unsigned int threshold = READ_ONCE(sysctl_superpage_promote_threshold);
	struct mm_struct *mm = slot->slot.mm;
	struct vm_area_struct *vma;
	unsigned int progress = 0;
	unsigned long addr;

	*more = false;
	if (!mmget_not_zero(mm)) {
		superpage_slot_free_dead(slot);
		return 1;
	}
restart:
	if (!mmap_read_trylock(mm)) {
		/* Contended: resume here when the scan comes back. */
		mmput(mm);
		return progress + 1;
	}
	vma = find_vma(mm, slot->scan_address);
	for (; vma; vma = find_vma(mm, vma->vm_end)) {
		progress++;
		if (!superpaged_vma_ok(vma))
			continue;
		addr = max(ALIGN(vma->vm_start, HPAGE_PMD_SIZE),
			   slot->scan_address);
		for (; addr + HPAGE_PMD_SIZE <= vma->vm_end;
		     addr += HPAGE_PMD_SIZE) {
			if (progress >= budget || kthread_should_stop()) {
				slot->scan_address = addr;
				*more = true;
				goto out_unlock;
			}
			progress += HPAGE_PMD_NR;
			if (!superpage_promote_ready(vma, addr, threshold))
				continue;
			mmap_read_unlock(mm);
			superpaged_promote_range(mm, addr, 0);
			slot->scan_address = addr + HPAGE_PMD_SIZE;
			cond_resched();
			goto restart;
		}
	}
	slot->scan_address = 0;
out_unlock:
	mmap_read_unlock(mm);
	mmput(mm);
	return progress;
}

/*
 * One pass of the scan over at most @budget pages' worth of ranges, each
 * registered mm at most once.  A slot freed on the way (its mm exited)
 * moves the cursor on by itself.
 */
static void superpaged_scan(unsigned int budget)
{
	struct superpage_mm_slot *slot;
	unsigned int progress = 0, visited = 0, slots;
	bool more;

	while (progress < budget && !kthread_should_stop()) {
		spin_lock(&superpage_slots_lock);
		slots = superpage_nr_slots;
		if (!slots || visited >= slots) {
			spin_unlock(&superpage_slots_lock);
			break;
		}
		slot = superpage_scan_slot;
		if (!slot)
			slot = list_first_entry(&superpage_slots,
						struct superpage_mm_slot,
						slot.mm_node);
		superpage_scan_slot = slot;
		spin_unlock(&superpage_slots_lock);

		visited++;
		progress += superpaged_scan_mm(slot, budget - progress, &more);
		if (more)
			break;	/* out of budget in this mm */

		spin_lock(&superpage_slots_lock);
		if (superpage_scan_slot == slot)
			superpage_scan_slot =
				list_is_last(&slot->slot.mm_node,
					     &superpage_slots) ?
				NULL : list_next_entry(slot, slot.mm_node);
		spin_unlock(&superpage_slots_lock);
	}
}

static bool superpaged_should_wake(unsigned long at)
{
	return kthread_should_stop() || READ_ONCE(superpage_hints_pending) ||
		READ_ONCE(superpage_kicked) || time_after_eq(jiffies, at);
}

static int superpaged(void *unused)
{
	unsigned long next_scan = jiffies;

	set_freezable();
	set_user_nice(current, MAX_NICE);
	while (!kthread_should_stop()) {
		unsigned long wake_at;
		unsigned int sleep;

		superpaged_do_hints();
		superpaged_do_retries(false);
		/* New scan tunables: scan now, then sleep the new time. */
		if (READ_ONCE(superpage_kicked)) {
			WRITE_ONCE(superpage_kicked, false);
			next_scan = jiffies;
		}
		if (time_after_eq(jiffies, next_scan)) {
			superpaged_scan(READ_ONCE(sysctl_superpage_pages_to_scan));
			sleep = READ_ONCE(sysctl_superpage_scan_sleep_millisecs);
			next_scan = jiffies + msecs_to_jiffies(sleep);
		}
		wake_at = superpaged_wake_at(next_scan);
		wait_event_freezable_timeout(superpaged_wait,
					     superpaged_should_wake(wake_at),
					     max_t(long, wake_at - jiffies, 1));
	}
	superpaged_do_retries(true);
	return 0;
}

/**
 * superpage_daemon_kick() - make ksuperpaged scan now
 *
 * For the sysctls: a new sleep time or scan size takes effect at once.
 */
void superpage_daemon_kick(void)
{
	WRITE_ONCE(superpage_kicked, true);
	wake_up_interruptible(&superpaged_wait);
}

/**
 * superpage_daemon_start_stop() - start or stop ksuperpaged
 * @run: true to make sure the thread runs, false to stop it
 *
 * Stopping also drops every slot; mms register again with their next
 * reservation.
 *
 * Return: 0, or the error of kthread_run().
 */
int superpage_daemon_start_stop(bool run)
{
	struct superpage_mm_slot *slot, *next;
	struct task_struct *thread;
	LIST_HEAD(slots);
	int ret = 0;

	mutex_lock(&superpaged_mutex);
	if (run && !superpaged_thread) {
		spin_lock(&superpage_slots_lock);
		superpage_daemon_running = true;
		spin_unlock(&superpage_slots_lock);
		thread = kthread_run(superpaged, NULL, "ksuperpaged");
		if (IS_ERR(thread)) {
			ret = PTR_ERR(thread);
			spin_lock(&superpage_slots_lock);
			superpage_daemon_running = false;
			spin_unlock(&superpage_slots_lock);
		} else {
			superpaged_thread = thread;
		}
	} else if (!run && superpaged_thread) {
		kthread_stop(superpaged_thread);
		superpaged_thread = NULL;

		spin_lock(&superpage_slots_lock);
		superpage_daemon_running = false;
		list_for_each_entry_safe(slot, next, &superpage_slots,
					 slot.mm_node) {
			superpage_slot_remove(slot);
			list_add(&slot->slot.mm_node, &slots);
		}
		WRITE_ONCE(superpage_hints_pending, false);
		spin_unlock(&superpage_slots_lock);
		list_for_each_entry_safe(slot, next, &slots, slot.mm_node) {
			mmdrop(slot->slot.mm);
			kfree(slot);
		}
	}
	mutex_unlock(&superpaged_mutex);
	return ret;
}
