// SPDX-License-Identifier: GPL-2.0
/*
 * In-place promotion by ksuperpaged: each test checks what the kernel
 * really did, from /proc/self/smaps (AnonHugePages: PMD-mapped memory),
 * /proc/self/pagemap (PFNs, the same before and after: nothing copied) and
 * /proc/vmstat (superpage_promote*, thp_collapse_alloc).
 *
 * The fixture "promote" switches the feature on (mode 2) with the shipped
 * defaults otherwise (fault clusters at the default order, the default
 * threshold, 512) and a 100 ms scan period, and restores the sysctls
 * afterwards; the tests that fill a range up to one page short of full run
 * in "promote_nocluster", with clusters off (a cluster would fill it).
 * The counters are global; the tests run one at a time in a quiet guest.
 */
#define _GNU_SOURCE
#include <linux/userfaultfd.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "superpage_util.h"

/* Bounded waits: a hint makes the daemon promote within milliseconds. */
#define SP_WAIT_MS	2000
#define SP_MADV_POPULATE_WRITE	23	/* include/uapi/asm-generic/mman-common.h */

/* Long enough for several scan periods of the fixture (100 ms). */
#define SP_QUIET_MS	500

struct sp_pcounters {
	long promote, failed, busy, pinned, collapse;
};

static void sp_pcounters_read(struct sp_pcounters *c)
{
	c->promote = sp_vmstat("superpage_promote");
	c->failed = sp_vmstat("superpage_promote_failed");
	c->busy = sp_vmstat("superpage_promote_failed_busy");
	c->pinned = sp_vmstat("superpage_promote_failed_pinned");
	c->collapse = sp_vmstat("thp_collapse_alloc");
}

/*
 * Switch the feature on (mode 2) with fault clusters of up to 2^@cluster
 * subpages, the default threshold and a 100 ms scan period, every knob
 * pushed first; the fixture's teardown pops them.
 */
static void sp_knobs_setup(struct __test_metadata *_metadata,
			   struct sp_settings *saved, int cluster)
{
	saved->pushed = 0;
	if (geteuid())
		SKIP(return, "must be run as root (pagemap PFNs, sysctl)");
	if (access(SP_ENABLED, F_OK))
		SKIP(return, "no %s: CONFIG_SUPERPAGE=n", SP_ENABLED);
	if (access(SP_THRESHOLD, F_OK) || sp_vmstat("superpage_promote") < 0)
		SKIP(return, "this kernel has no promotion");
	sp_settings_push(saved);
	ASSERT_EQ(0, sp_write_int(SP_THRESHOLD, SP_THRESHOLD_DEFAULT));
	ASSERT_EQ(0, sp_write_int(SP_SCAN_SLEEP, 100));
	sp_cluster_set(cluster);
	ASSERT_EQ(0, sp_write_int(SP_ENABLED, 2));
}

FIXTURE(promote) {
	struct sp_settings saved;
	struct sp_pcounters before;
};

FIXTURE_SETUP(promote)
{
	sp_knobs_setup(_metadata, &self->saved, SP_CLUSTER_DEFAULT);
	sp_pcounters_read(&self->before);
}

FIXTURE_TEARDOWN_PARENT(promote)
{
	sp_settings_pop(&self->saved);
}

FIXTURE(promote_nocluster) {
	struct sp_settings saved;
	struct sp_pcounters before;
};

FIXTURE_SETUP(promote_nocluster)
{
	sp_knobs_setup(_metadata, &self->saved, 0);
	sp_pcounters_read(&self->before);
}

FIXTURE_TEARDOWN_PARENT(promote_nocluster)
{
	sp_settings_pop(&self->saved);
}

static long sp_delta(long before, const char *name)
{
	return sp_vmstat(name) - before;
}

/* Page @k of a range holds this pattern in its first and last word. */
static int sp_pattern(int k, int salt)
{
	return (k + 1) * 7919 + salt;
}

static void sp_fill(char *p, int npages, int salt)
{
	int k;

	for (k = 0; k < npages; k++) {
		*(int *)(p + k * SP_PAGE) = sp_pattern(k, salt);
		*(int *)(p + (k + 1) * SP_PAGE - sizeof(int)) = sp_pattern(k, salt);
	}
}

/* The first page of [p, p + npages) whose pattern is wrong, or -1. */
static int sp_bad_page(const char *p, int npages, int salt)
{
	int k;

	for (k = 0; k < npages; k++)
		if (*(const int *)(p + k * SP_PAGE) != sp_pattern(k, salt) ||
		    *(const int *)(p + (k + 1) * SP_PAGE - sizeof(int)) !=
		    sp_pattern(k, salt))
			return k;
	return -1;
}

/* Every page of the range maps PFN @base + index. */
static int sp_bad_pfn(const char *p, int npages, uint64_t base)
{
	int k;

	for (k = 0; k < npages; k++)
		if (sp_pfn(p + k * SP_PAGE) != base + k)
			return k;
	return -1;
}

/* The byte that fills every byte of page @k with sp_fill_whole(). */
static int sp_whole_byte(int k, int salt)
{
	return ((k + salt) % 255) + 1;
}

/* Fill every byte of each page with a nonzero pattern. */
static void sp_fill_whole(char *p, int npages, int salt)
{
	int k;

	for (k = 0; k < npages; k++)
		memset(p + k * SP_PAGE, sp_whole_byte(k, salt), SP_PAGE);
}

/* The first page of [p, p + npages) not filled by sp_fill_whole(), or -1. */
static int sp_bad_whole(const char *p, int npages, int salt)
{
	int k;

	for (k = 0; k < npages; k++)
		if (sp_first_not(p + k * SP_PAGE, sp_whole_byte(k, salt),
				 SP_PAGE) >= 0)
			return k;
	return -1;
}

/* Is a kernel thread called @comm running?  1, 0, or -1 (no /proc). */
static int sp_kthread_running(const char *comm)
{
	pid_t pid = sp_kthread_pid(comm);

	return pid < 0 ? -1 : pid > 0;
}

/*
 * Fill a range in random order: within a bounded wait it is PMD-mapped,
 * every page keeps its PFN (nothing copied) and its data, and the counters
 * moved by one promotion and no failure.
 */
TEST_F(promote, full_range_in_place)
{
	char *p = sp_map_aligned(SP_HPAGE);
	int order[SP_NR], k;
	uint64_t base;

	ASSERT_NE(NULL, p);
	sp_shuffle(order, SP_NR, 42);
	for (k = 0; k < SP_NR; k++) {
		int i = order[k];

		*(int *)(p + i * SP_PAGE) = sp_pattern(i, 0);
		*(int *)(p + (i + 1) * SP_PAGE - sizeof(int)) = sp_pattern(i, 0);
	}
	base = sp_pfn(p);
	ASSERT_NE(0, base);
	EXPECT_EQ(0, base % SP_NR)
		TH_LOG("base PFN %#llx not 2 MiB-aligned",
		       (unsigned long long)base);

	ASSERT_EQ(2048, sp_wait_anon_huge(p, 2048, SP_WAIT_MS))
		TH_LOG("not PMD-mapped within %d ms", SP_WAIT_MS);
	EXPECT_EQ(-1, sp_bad_pfn(p, SP_NR, base));
	EXPECT_EQ(-1, sp_bad_page(p, SP_NR, 0));
	EXPECT_EQ(2048, sp_smaps_kb(p, "Rss"));
	EXPECT_EQ(1, sp_delta(self->before.promote, "superpage_promote"));
	/*
	 * Only a try that found the folio busy (the last fault or the zeroing
	 * worker still holding it) may fail: it is tried again 10 ms later.
	 */
	EXPECT_EQ(0, sp_delta(self->before.failed, "superpage_promote_failed") -
		  sp_delta(self->before.busy, "superpage_promote_failed_busy"));
	EXPECT_EQ(0, sp_delta(self->before.collapse, "thp_collapse_alloc"));
	munmap(p, SP_HPAGE);
}

/*
 * Below 512 the holes are zeroed in place.  A patterned buffer is filled as
 * whole reservations and freed first, so that its 2 MiB blocks go back to
 * the page allocator; the test asserts that the new reservation got one of
 * them (it tries three times, then fails: holes in never-used memory read
 * zero anyway).  Then every byte of every hole of the promoted range reads
 * zero, and the touched pages hold their word and zeroes.  The pool of
 * zeroed frames is emptied first, so that the reservation's holes are zeroed
 * by promotion (below: by the pool).
 */
static void holes_read_zero(struct __test_metadata *_metadata,
			    struct sp_pcounters *before, int pool)
{
	uint64_t frames[128], base = 0;
	int k, nframes = 0, attempt, reused = 0, t, tries = pool ? 16 : 1;
	long off, used;
	char *p;

	for (attempt = 1; attempt <= 3 && !reused; attempt++) {
		ASSERT_EQ(0, sp_write_int(SP_THRESHOLD, SP_NR));
		/* Empty: the pool is filled from the patterned blocks. */
		sp_prezero_set(0);
		nframes = sp_dirty_frames(pool ? 128 : 8, 0xa5, frames);
		ASSERT_LE(pool ? 64 : 4, nframes);
		if (pool) {
			sp_prezero_set(tries);
			ASSERT_LE(tries, sp_prezero_wait(tries, 30000))
				TH_LOG("the pool of zeroed frames did not fill");
		}
		/*
		 * The patterned buffer was promoted too, the last range maybe
		 * counted after it was unmapped: count from here.
		 */
		usleep(SP_QUIET_MS * 1000);
		sp_pcounters_read(before);
		ASSERT_EQ(0, sp_write_int(SP_THRESHOLD, SP_NR / 2));
		/* With the pool, its frames in turn, until one was patterned. */
		for (t = 0; t < tries && !reused; t++) {
			p = sp_map_aligned(SP_HPAGE);
			ASSERT_NE(NULL, p);
			used = sp_vmstat("superpage_prezero_used");
			*(int *)p = sp_pattern(0, 1);
			used = sp_vmstat("superpage_prezero_used") - used;
			EXPECT_EQ(pool ? 1 : 0, used);
			base = sp_pfn(p);
			ASSERT_NE(0, base);
			reused = sp_frames_has(frames, nframes, base);
			if (!reused)
				munmap(p, SP_HPAGE);
		}
		TH_LOG("attempt %d: reservation %d at PFN %#llx, %s of the %d patterned blocks",
		       attempt, t, (unsigned long long)base,
		       reused ? "one" : "none", nframes);
	}
	ASSERT_TRUE(reused)
		TH_LOG("the allocator gave never-used memory: nothing proven");

	/* The range is promoted as soon as the 256th page is touched. */
	for (k = 2; k < SP_NR; k += 2)
		*(int *)(p + k * SP_PAGE) = sp_pattern(k, 1);

	ASSERT_EQ(2048, sp_wait_anon_huge(p, 2048, SP_WAIT_MS));
	EXPECT_EQ(-1, sp_bad_pfn(p, SP_NR, base));
	for (k = 0; k < SP_NR; k++) {
		if (k % 2) {
			off = sp_first_nonzero(p + k * SP_PAGE, SP_PAGE);
			ASSERT_EQ(-1, off)
				TH_LOG("hole %d: byte %ld reads %#x", k, off,
				       (unsigned char)p[k * SP_PAGE + off]);
			continue;
		}
		ASSERT_EQ(sp_pattern(k, 1), *(int *)(p + k * SP_PAGE));
		off = sp_first_nonzero(p + k * SP_PAGE + sizeof(int),
				       SP_PAGE - sizeof(int));
		ASSERT_EQ(-1, off) TH_LOG("page %d: byte %ld", k, off + 4);
	}
	/* The holes are resident now. */
	EXPECT_EQ(2048, sp_smaps_kb(p, "Rss"));
	EXPECT_EQ(1, sp_delta(before->promote, "superpage_promote"));
	munmap(p, SP_HPAGE);
}

TEST_F(promote, threshold_holes_read_zero)
{
	holes_read_zero(_metadata, &self->before, 0);
}

/*
 * The same on a frame of the pool of zeroed frames (mm/superpage/prezero.c),
 * filled with 16 frames after 256 MiB of patterned blocks were freed (the
 * first frames it takes are often other free blocks): reservations take
 * its frames in turn until one is patterned.  Promotion does not zero
 * again the holes that the pool zeroed, and they read zero.
 */
TEST_F(promote, threshold_holes_read_zero_prezeroed)
{
	if (access(SP_PREZERO, F_OK))
		SKIP(return, "this kernel keeps no zeroed frames");
	holes_read_zero(_metadata, &self->before, 1);
}

/* Nothing is promoted below the threshold. */
TEST_F(promote_nocluster, below_threshold_stays)
{
	char *p = sp_map_aligned(SP_HPAGE);

	ASSERT_NE(NULL, p);
	sp_fill(p, SP_NR - 1, 2);
	usleep(SP_QUIET_MS * 1000);
	EXPECT_EQ(0, sp_smaps_kb(p, "AnonHugePages"));
	EXPECT_EQ(0, sp_delta(self->before.promote, "superpage_promote"));
	EXPECT_EQ(-1, sp_bad_page(p, SP_NR - 1, 2));
	munmap(p, SP_HPAGE);
}

/* Fork after promotion: both see the data; the child's write is its own. */
TEST_F(promote, fork_after_promotion)
{
	char *p = sp_map_aligned(SP_HPAGE);
	int status;
	pid_t pid;

	ASSERT_NE(NULL, p);
	sp_fill(p, SP_NR, 3);
	ASSERT_EQ(2048, sp_wait_anon_huge(p, 2048, SP_WAIT_MS));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		if (sp_bad_page(p, SP_NR, 3) >= 0)
			_exit(1);
		*(int *)(p + 5 * SP_PAGE) = -1;
		if (*(int *)(p + 5 * SP_PAGE) != -1 ||
		    *(int *)(p + 6 * SP_PAGE) != sp_pattern(6, 3))
			_exit(2);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(-1, sp_bad_page(p, SP_NR, 3));
	munmap(p, SP_HPAGE);
}

/*
 * Fork before the range is full: growth stops, so the reservation never
 * fills and is never promoted; data stays right in parent and child.  The
 * parent's writes after fork never land in the reservation, which the
 * child still maps: a page first touched after fork is a page of its own,
 * and a page the child shares is copied.
 */
TEST_F(promote, fork_before_full_no_promotion)
{
	char *p = sp_map_aligned(SP_HPAGE);
	uint64_t base, pfns[SP_NR];
	int go[2], status, k;
	char c;
	pid_t pid;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, pipe(go));
	sp_fill(p, 100, 4);
	base = sp_pfn(p);
	ASSERT_NE(0, base);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		if (read(go[0], &c, 1) != 1)
			_exit(3);
		_exit(sp_bad_page(p, 100, 4) >= 0);
	}
	sp_fill(p, SP_NR, 14);
	usleep(SP_QUIET_MS * 1000);
	EXPECT_EQ(0, sp_smaps_kb(p, "AnonHugePages"));
	EXPECT_EQ(0, sp_delta(self->before.promote, "superpage_promote"));
	EXPECT_EQ(-1, sp_bad_page(p, SP_NR, 14));
	ASSERT_EQ(0, sp_pfns(p, SP_NR, pfns));
	for (k = 0; k < SP_NR; k++) {
		EXPECT_FALSE(sp_pfn_in(pfns[k], base))
			TH_LOG("the parent's page %d is subpage %lld of the reservation",
			       k, (long long)(pfns[k] - base));
	}
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("the child does not see its data");
	munmap(p, SP_HPAGE);
}

/*
 * MADV_DONTNEED in a promoted range splits its PMD; refilling the holes
 * maps the same subpages, zeroed (every byte of every page held a nonzero
 * pattern before), and the full range is promoted again.
 */
TEST_F(promote, dontneed_refill_promotes_again)
{
	char *p = sp_map_aligned(SP_HPAGE);
	uint64_t base;
	long off;
	int k;

	ASSERT_NE(NULL, p);
	sp_fill_whole(p, SP_NR, 5);
	base = sp_pfn(p);
	ASSERT_EQ(2048, sp_wait_anon_huge(p, 2048, SP_WAIT_MS));
	ASSERT_EQ(0, madvise(p + 100 * SP_PAGE, 10 * SP_PAGE, MADV_DONTNEED));
	EXPECT_EQ(0, sp_smaps_kb(p, "AnonHugePages"));
	for (k = 100; k < 110; k++)
		ASSERT_EQ(0, sp_pagemap(p + k * SP_PAGE) & PM_PRESENT);
	/* Read faults map the same subpages back, every byte zero. */
	for (k = 100; k < 110; k++) {
		off = sp_first_nonzero(p + k * SP_PAGE, SP_PAGE);
		ASSERT_EQ(-1, off)
			TH_LOG("refilled page %d: byte %ld reads %#x", k, off,
			       (unsigned char)p[k * SP_PAGE + off]);
		ASSERT_EQ(base + k, sp_pfn(p + k * SP_PAGE)) TH_LOG("page %d", k);
	}
	sp_fill_whole(p + 100 * SP_PAGE, 10, 5 + 100);
	EXPECT_EQ(-1, sp_bad_pfn(p, SP_NR, base));
	ASSERT_EQ(2048, sp_wait_anon_huge(p, 2048, SP_WAIT_MS));
	EXPECT_EQ(-1, sp_bad_pfn(p, SP_NR, base));
	EXPECT_EQ(-1, sp_bad_whole(p, SP_NR, 5));
	EXPECT_EQ(2, sp_delta(self->before.promote, "superpage_promote"));
	munmap(p, SP_HPAGE);
}

/*
 * Promotion holds only a read lock (the VMA's, or the mmap read lock), as
 * MADV_DONTNEED does: a zap must never be undone by a promotion that read
 * the range before it.  Refilling one page completes the range and hints
 * the daemon; the page is zapped at once, maybe while the daemon switches
 * the range to a PMD, and must then read zero, every byte, while every
 * other page keeps its pattern and its subpage.
 */
TEST_F(promote, dontneed_during_promotion_reads_zero)
{
	char *p = sp_map_aligned(SP_HPAGE);
	long end, off, n = 0, promoted;
	uint64_t base;
	int k;

	ASSERT_NE(NULL, p);
	sp_fill_whole(p, SP_NR, 9);
	base = sp_pfn(p);
	ASSERT_EQ(2048, sp_wait_anon_huge(p, 2048, SP_WAIT_MS));
	end = sp_now_ms() + 3000;
	while (sp_now_ms() < end) {
		k = 1 + (n * 37) % (SP_NR - 1);
		memset(p + k * SP_PAGE, 0x5a, SP_PAGE);
		if (n & 1)
			usleep(n % 5 * 200);
		ASSERT_EQ(0, madvise(p + k * SP_PAGE, SP_PAGE, MADV_DONTNEED));
		off = sp_first_nonzero(p + k * SP_PAGE, SP_PAGE);
		ASSERT_EQ(-1, off)
			TH_LOG("round %ld: page %d byte %ld reads %#x after MADV_DONTNEED",
			       n, k, off, (unsigned char)p[k * SP_PAGE + off]);
		/* Back to its pattern, for the final check. */
		sp_fill_whole(p + k * SP_PAGE, 1, 9 + k);
		n++;
	}
	promoted = sp_delta(self->before.promote, "superpage_promote");
	ksft_print_msg("%ld rounds, %ld promotions\n", n, promoted);
	EXPECT_LT(10, promoted) TH_LOG("too few promotions raced the zaps");
	EXPECT_EQ(-1, sp_bad_whole(p, SP_NR, 9));
	EXPECT_EQ(-1, sp_bad_pfn(p, SP_NR, base));
	munmap(p, SP_HPAGE);
}

/* mremap of a promoted range, to a congruent and an incongruent address. */
TEST_F(promote, mremap_promoted)
{
	char *p = sp_map_aligned(SP_HPAGE), *dst = sp_map_aligned(4 * SP_HPAGE);
	uint64_t base;
	char *q, *r;

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, dst);
	sp_fill(p, SP_NR, 6);
	base = sp_pfn(p);
	ASSERT_EQ(2048, sp_wait_anon_huge(p, 2048, SP_WAIT_MS));

	q = mremap(p, SP_HPAGE, SP_HPAGE, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	ASSERT_EQ(dst, q);
	EXPECT_EQ(2048, sp_smaps_kb(q, "AnonHugePages"));
	EXPECT_EQ(-1, sp_bad_pfn(q, SP_NR, base));
	EXPECT_EQ(-1, sp_bad_page(q, SP_NR, 6));

	r = mremap(q, SP_HPAGE, SP_HPAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
		   dst + 2 * SP_HPAGE + SP_PAGE);
	ASSERT_EQ(dst + 2 * SP_HPAGE + SP_PAGE, r);
	EXPECT_EQ(0, sp_smaps_kb(r, "AnonHugePages"));
	EXPECT_EQ(-1, sp_bad_pfn(r, SP_NR, base));
	EXPECT_EQ(-1, sp_bad_page(r, SP_NR, 6));
	munmap(dst, 4 * SP_HPAGE);
}

/*
 * mprotect of half a promoted range splits the PMD; the range now spans
 * two VMAs and stays PTE-mapped; the data and PFNs stay.
 */
TEST_F(promote, mprotect_part_of_promoted)
{
	char *p = sp_map_aligned(SP_HPAGE);
	uint64_t base;

	ASSERT_NE(NULL, p);
	sp_fill(p, SP_NR, 7);
	base = sp_pfn(p);
	ASSERT_EQ(2048, sp_wait_anon_huge(p, 2048, SP_WAIT_MS));
	ASSERT_EQ(0, mprotect(p + SP_HPAGE / 2, SP_HPAGE / 2, PROT_READ));
	EXPECT_EQ(0, sp_smaps_kb(p, "AnonHugePages"));
	usleep(SP_QUIET_MS * 1000);
	EXPECT_EQ(0, sp_smaps_kb(p, "AnonHugePages"));
	EXPECT_EQ(0, sp_smaps_kb(p + SP_HPAGE / 2, "AnonHugePages"));
	EXPECT_EQ(-1, sp_bad_pfn(p, SP_NR, base));
	EXPECT_EQ(-1, sp_bad_page(p, SP_NR, 7));
	EXPECT_EQ(1, sp_delta(self->before.promote, "superpage_promote"));
	munmap(p, SP_HPAGE);
}

/* mlock fills the reservation, which is promoted and stays locked. */
TEST_F(promote, mlock_promoted)
{
	char *p = sp_map_aligned(SP_HPAGE);
	uint64_t base;

	ASSERT_NE(NULL, p);
	p[0] = 1;
	if (mlock(p, SP_HPAGE))
		SKIP(return, "mlock: %s", strerror(errno));
	base = sp_pfn(p);
	ASSERT_EQ(2048, sp_wait_anon_huge(p, 2048, SP_WAIT_MS));
	EXPECT_EQ(2048, sp_smaps_kb(p, "Locked"));
	EXPECT_EQ(-1, sp_bad_pfn(p, SP_NR, base));
	EXPECT_EQ(1, p[0]);
	EXPECT_EQ(0, p[SP_HPAGE - 1]);
	munlock(p, SP_HPAGE);
	munmap(p, SP_HPAGE);
}

/* MADV_NOHUGEPAGE after the fill: the full range is left alone. */
TEST_F(promote_nocluster, nohugepage_not_promoted)
{
	char *p = sp_map_aligned(SP_HPAGE);

	ASSERT_NE(NULL, p);
	sp_fill(p, SP_NR - 1, 8);
	ASSERT_EQ(0, madvise(p, SP_HPAGE, MADV_NOHUGEPAGE));
	sp_fill(p, SP_NR, 8);
	usleep(SP_QUIET_MS * 1000);
	EXPECT_EQ(0, sp_smaps_kb(p, "AnonHugePages"));
	EXPECT_EQ(0, sp_delta(self->before.promote, "superpage_promote"));
	munmap(p, SP_HPAGE);
}

/*
 * A page held by a pipe (vmsplice) is an extra reference: promotion fails
 * with the reason "pinned" and no PMD; once the pipe is drained, the scan
 * promotes the range.  The reference is taken while the full range spans
 * two VMAs (the upper half made read-only after the reservation was
 * created, then filled by read faults), which keeps the daemon off it;
 * making the upper half writable again merges the VMAs.  The reservation
 * is created by a write (of a zero) to the first page of the upper half,
 * so that the read-only piece holds one of its pages: a fault looks for
 * the reservation in its own VMA only (and a read fault creates none).
 */
TEST_F(promote, pinned_page_delays_promotion)
{
	char *p = sp_map_aligned(SP_HPAGE), buf[SP_PAGE];
	struct iovec iov;
	int fds[2], k;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, pipe(fds));
	p[SP_HPAGE / 2] = 0;
	sp_fill(p, SP_NR / 2, 9);
	ASSERT_EQ(0, mprotect(p + SP_HPAGE / 2, SP_HPAGE / 2, PROT_READ));
	for (k = SP_NR / 2; k < SP_NR; k++)
		ASSERT_EQ(0, sp_load(p + k * SP_PAGE));
	ASSERT_EQ(-1, sp_bad_pfn(p, SP_NR, sp_pfn(p)));
	iov.iov_base = p + 3 * SP_PAGE;
	iov.iov_len = SP_PAGE;
	ASSERT_EQ(SP_PAGE, vmsplice(fds[1], &iov, 1, 0));
	ASSERT_EQ(0, mprotect(p + SP_HPAGE / 2, SP_HPAGE / 2,
			      PROT_READ | PROT_WRITE));
	usleep(SP_QUIET_MS * 1000);
	EXPECT_EQ(0, sp_smaps_kb(p, "AnonHugePages"));
	EXPECT_EQ(0, sp_delta(self->before.promote, "superpage_promote"));
	EXPECT_LT(0, sp_delta(self->before.pinned,
			      "superpage_promote_failed_pinned"));
	ASSERT_EQ(SP_PAGE, read(fds[0], buf, SP_PAGE));
	EXPECT_EQ(sp_pattern(3, 9), *(int *)buf);
	EXPECT_EQ(2048, sp_wait_anon_huge(p, 2048, SP_WAIT_MS));
	EXPECT_EQ(-1, sp_bad_page(p, SP_NR / 2, 9));
	for (k = SP_NR / 2; k < SP_NR; k++)
		ASSERT_EQ(0, sp_load(p + k * SP_PAGE));
	close(fds[0]);
	close(fds[1]);
	munmap(p, SP_HPAGE);
}

/*
 * A new scan period takes effect at once: with an hour's sleep, a range
 * that only the scan can find (it filled while split across two VMAs, so
 * its hint found nothing to promote) waits; writing a short period makes
 * the daemon scan now.  As above, the read-only piece holds a page of the
 * reservation (its first, written) before it is split off.
 */
TEST_F(promote, scan_sleep_change_takes_effect)
{
	char *p = sp_map_aligned(SP_HPAGE);
	int k;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, sp_write_int(SP_SCAN_SLEEP, 3600000));
	usleep(SP_QUIET_MS * 1000);
	p[SP_HPAGE / 2] = 0;
	sp_fill(p, SP_NR / 2, 11);
	ASSERT_EQ(0, mprotect(p + SP_HPAGE / 2, SP_HPAGE / 2, PROT_READ));
	for (k = SP_NR / 2; k < SP_NR; k++)
		ASSERT_EQ(0, sp_load(p + k * SP_PAGE));
	/* Let the daemon take the hint of the full range while it is split. */
	usleep(SP_QUIET_MS * 1000);
	ASSERT_EQ(0, mprotect(p + SP_HPAGE / 2, SP_HPAGE / 2,
			      PROT_READ | PROT_WRITE));
	usleep(SP_QUIET_MS * 1000);
	EXPECT_EQ(0, sp_smaps_kb(p, "AnonHugePages"));
	ASSERT_EQ(0, sp_write_int(SP_SCAN_SLEEP, 100));
	EXPECT_EQ(2048, sp_wait_anon_huge(p, 2048, SP_WAIT_MS));
	EXPECT_EQ(-1, sp_bad_page(p, SP_NR / 2, 11));
	munmap(p, SP_HPAGE);
}

#define KHUGEPAGED	"/sys/kernel/mm/transparent_hugepage/khugepaged/"

/* Wait up to @ms for khugepaged to finish two more full scans. */
static int sp_wait_full_scans(long ms)
{
	int start = sp_read_int(KHUGEPAGED "full_scans");
	long end = sp_now_ms() + ms;

	while (sp_now_ms() < end) {
		if (sp_read_int(KHUGEPAGED "full_scans") >= start + 2)
			return 0;
		usleep(10000);
	}
	return -1;
}

/*
 * khugepaged leaves a reservation alone while the feature is on (it would
 * copy it into a new huge page), and copies the very same layout once the
 * feature is off: the control that shows the check matters.
 */
TEST_F(promote, khugepaged_leaves_reservations)
{
	char *p = NULL;
	long collapse;
	uint64_t base;

	if (access(KHUGEPAGED "full_scans", F_OK))
		SKIP(return, "no khugepaged");
	/* The fixture's teardown puts every knob back. */
	ASSERT_EQ(0, sp_write_file(SP_THP_ENABLED, "madvise"));
	ASSERT_EQ(0, sp_write_int(KHUGEPAGED "scan_sleep_millisecs", 10));
	ASSERT_EQ(0, sp_write_int(KHUGEPAGED "pages_to_scan", 4096));

	p = sp_map_aligned(SP_HPAGE);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, madvise(p, SP_HPAGE, MADV_HUGEPAGE));
	sp_fill(p, 300, 10);
	base = sp_pfn(p);
	collapse = sp_vmstat("thp_collapse_alloc");
	EXPECT_EQ(0, sp_wait_full_scans(10000));
	EXPECT_EQ(0, sp_smaps_kb(p, "AnonHugePages"));
	EXPECT_EQ(0, sp_vmstat("thp_collapse_alloc") - collapse);
	EXPECT_EQ(-1, sp_bad_pfn(p, 300, base));

	/* The control: with the feature off, khugepaged copies the range. */
	ASSERT_EQ(0, sp_write_int(SP_ENABLED, 0));
	EXPECT_EQ(0, sp_wait_full_scans(10000));
	EXPECT_EQ(2048, sp_wait_anon_huge(p, 2048, SP_WAIT_MS));
	EXPECT_EQ(1, sp_vmstat("thp_collapse_alloc") - collapse);
	EXPECT_NE(base, sp_pfn(p));
	EXPECT_EQ(-1, sp_bad_page(p, 300, 10));

	munmap(p, SP_HPAGE);
}

/* ksuperpaged runs exactly while the feature is on. */
TEST_F(promote, daemon_follows_sysctl)
{
	EXPECT_EQ(1, sp_kthread_running("ksuperpaged"));
	ASSERT_EQ(0, sp_write_int(SP_ENABLED, 0));
	EXPECT_EQ(0, sp_kthread_running("ksuperpaged"));
	ASSERT_EQ(0, sp_write_int(SP_ENABLED, 1));
	EXPECT_EQ(1, sp_kthread_running("ksuperpaged"));
}

/*
 * Promotion of a sequential fill: a 256 MiB sequential fill is at least 99%
 * PMD-mapped within 2 s of its end, with every page at the PFN it got at
 * fault time (nothing copied; khugepaged allocated nothing).
 */
TEST_F(promote, fill_256m_promoted_within_2s)
{
	const int nr = 128;
	size_t size = nr * SP_HPAGE;
	char *p = sp_map_aligned(size);
	uint64_t base[128];
	long t0, huge;
	int r, bad = -1;

	ASSERT_NE(NULL, p);
	for (r = 0; r < nr; r++) {
		char *range = p + r * SP_HPAGE;

		/* The PFN before the range is full, so before promotion. */
		sp_fill(range, 1, r);
		base[r] = sp_pfn(range);
		sp_fill(range, SP_NR, r);
	}
	t0 = sp_now_ms();
	huge = sp_wait_anon_huge(p, size / 1024 * 99 / 100, SP_WAIT_MS);
	TH_LOG("%ld of %zu kB PMD-mapped %ld ms after the fill", huge,
	       size / 1024, sp_now_ms() - t0);
	EXPECT_LE(size / 1024 * 99 / 100, huge);
	for (r = 0; r < nr && bad < 0; r++) {
		if (sp_bad_pfn(p + r * SP_HPAGE, SP_NR, base[r]) >= 0 ||
		    sp_bad_page(p + r * SP_HPAGE, SP_NR, r) >= 0)
			bad = r;
	}
	EXPECT_EQ(-1, bad) TH_LOG("range %d moved or lost data", bad);
	EXPECT_LE(nr * 99 / 100, sp_delta(self->before.promote,
					  "superpage_promote"));
	EXPECT_EQ(0, sp_delta(self->before.collapse, "thp_collapse_alloc"));
	munmap(p, size);
}

/*
 * Regression tests: each guards a bug that was found and fixed.
 */

/*
 * 64 ranges that fill at the same moment: each gets all but its first
 * subpage, then one MADV_POPULATE_WRITE over the whole mapping faults in
 * the first subpage of every range while it holds the mmap lock, so the
 * daemon cannot promote meanwhile and 64 hints meet an array of 32.  With
 * the scan period at 60 s, the lost hints must start a scan at once: all
 * 64 ranges are PMD-mapped within 2 s (half of them waited for the next
 * period before).
 */
TEST_F(promote, hint_burst_starts_a_scan)
{
	const int nr = 64;
	size_t size = nr * SP_HPAGE;
	char *p = sp_map_aligned(size);
	int r, k;
	long huge, t0, busy = sp_vmstat("superpage_promote_failed_busy");

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, sp_write_int(SP_PAGES_TO_SCAN, nr * SP_NR));
	ASSERT_EQ(0, sp_write_int(SP_SCAN_SLEEP, 60000));
	for (r = 0; r < nr; r++)
		for (k = 1; k < SP_NR; k++)
			p[r * SP_HPAGE + k * SP_PAGE] = 1;
	ASSERT_EQ(0, madvise(p, size, SP_MADV_POPULATE_WRITE));
	t0 = sp_now_ms();
	huge = sp_wait_anon_huge(p, size / 1024, SP_WAIT_MS);
	TH_LOG("%ld of %zu kB PMD-mapped %ld ms after the burst, %ld tries busy",
	       huge, size / 1024, sp_now_ms() - t0,
	       sp_vmstat("superpage_promote_failed_busy") - busy);
	EXPECT_EQ(size / 1024, huge);
	munmap(p, size);
}

#define SP_TAINTED	"/proc/sys/kernel/tainted"
#define SP_TAINT_WARN	512		/* 1 << TAINT_WARN: a WARN_ON() fired */
#define SP_MOVE_RANGES	8	/* 2 MiB ranges per round: 16 MiB */
#define SP_MOVE_MS	5000	/* rounds for about this long, */
#define SP_MOVE_ROUNDS	500	/* and at most this many */
#define SP_MOVE_TRIES	2000	/* retries of a stalled move */

/*
 * From the last write of a range (the hint) to its first move, in us: the
 * move comes before the daemon, while it promotes, or after, depending on
 * how fast the daemon takes the hint.
 */
static const int sp_move_delay_us[] = {
	0, 10, 20, 40, 60, 80, 100, 150, 200, 300, 500, 1000,
};

/* The words of each page that hold its tag. */
static const int sp_move_offs[] = { 0, SP_PAGE / 2, SP_PAGE - 8 };

/* The word at byte @off of page @page of the source in round @round. */
static uint64_t sp_move_tag(long round, int page, int off)
{
	return (((uint64_t)round << 32 | (uint64_t)page << 12 | off) *
		0x9e3779b97f4a7c15ULL) | 1;
}

static uint64_t *sp_move_word(const char *p, int page, int i)
{
	return (uint64_t *)(p + page * SP_PAGE + sp_move_offs[i]);
}

/* Write the tags of pages [@first, @first + @n) of @p, in order. */
static void sp_move_fill(char *p, long round, int first, int n)
{
	int k, i;

	for (k = first; k < first + n; k++)
		for (i = 0; i < (int)ARRAY_SIZE(sp_move_offs); i++)
			*sp_move_word(p, k, i) =
				sp_move_tag(round, k, sp_move_offs[i]);
}

/* The first of the @n pages of @p that does not hold its tags, or -1. */
static int sp_move_bad(const char *p, long round, int n)
{
	int k, i;

	for (k = 0; k < n; k++)
		for (i = 0; i < (int)ARRAY_SIZE(sp_move_offs); i++)
			if (*sp_move_word(p, k, i) !=
			    sp_move_tag(round, k, sp_move_offs[i]))
				return k;
	return -1;
}

static long sp_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Spin: a sleep would be far longer than the shortest delays. */
static void sp_spin_us(long us)
{
	long end = sp_now_us() + us;

	while (sp_now_us() < end)
		;
}

struct sp_move_stats {
	long ioctls, partial, busy, again;
};

/*
 * A userfaultfd that offers UFFDIO_MOVE, or -1 with the test skipped
 * (the kernel has no userfaultfd or no UFFDIO_MOVE).
 */
static int sp_uffd_open_move(struct __test_metadata *_metadata)
{
	struct uffdio_api api = { .api = UFFD_API };
	int uffd;

	uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		SKIP(return -1, "userfaultfd: %s", strerror(errno));
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_API, &api))
		TH_LOG("UFFDIO_API: %s", strerror(errno));
	if (!(api.features & UFFD_FEATURE_MOVE)) {
		close(uffd);
		SKIP(return -1, "no UFFDIO_MOVE");
	}
	return uffd;
}

/* Register @len bytes at @dst for missing faults: the moves' target. */
static void sp_uffd_register_missing(struct __test_metadata *_metadata,
				     int uffd, char *dst, size_t len)
{
	struct uffdio_register reg = { 0 };

	reg.range.start = (uintptr_t)dst;
	reg.range.len = len;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg))
		TH_LOG("UFFDIO_REGISTER: %s", strerror(errno));
	ASSERT_NE(0ULL, reg.ioctls & (1ULL << _UFFDIO_MOVE));
}

/*
 * UFFDIO_MOVE @len bytes from @src to @dst with mode 0, where a source
 * page that is not there fails the move with ENOENT.  The ioctl returns 0
 * when all of it moved; a short move fails with EAGAIN and .move the bytes
 * moved (the rest is retried from there); nothing moved fails with .move
 * the negative error: EAGAIN (mmap_changing) and EBUSY (a large folio
 * whose split met a transient reference, such as the daemon's, dropped
 * just after its folio lock) are retried up to SP_MOVE_TRIES times in a
 * row.  Returns 0, the negative errno that stopped the move, or -EPROTO
 * if the ioctl broke its contract; *@done is the number of bytes moved.
 */
static int sp_uffd_move(int uffd, char *dst, char *src, size_t len,
			struct sp_move_stats *st, size_t *done)
{
	struct uffdio_move mv;
	int tries = 0, err;

	*done = 0;
	while (*done < len) {
		memset(&mv, 0, sizeof(mv));
		mv.dst = (uintptr_t)(dst + *done);
		mv.src = (uintptr_t)(src + *done);
		mv.len = len - *done;
		st->ioctls++;
		if (!ioctl(uffd, UFFDIO_MOVE, &mv)) {
			if (mv.move != (__s64)mv.len)
				return -EPROTO;
			*done = len;
			return 0;
		}
		err = -errno;
		if (err == -EAGAIN && mv.move > 0) {
			if (mv.move > (__s64)mv.len || mv.move % SP_PAGE)
				return -EPROTO;
			st->partial++;
			*done += mv.move;
			tries = 0;
			continue;
		}
		if ((err != -EAGAIN && err != -EBUSY) || mv.move != err)
			return err;
		if (++tries >= SP_MOVE_TRIES)
			return err;
		if (err == -EBUSY) {
			st->busy++;
			usleep(50);
		} else {
			st->again++;
			sched_yield();
		}
	}
	return 0;
}

/*
 * Fill range @r of @src (every page, so that the last write completes the
 * reservation and hints the daemon), wait a delay of the round's choice,
 * then move the range to @dst in chunks of the round's size, from a page
 * of the round's choice on, wrapping around: no move may fail.
 */
static void sp_move_range(struct __test_metadata *_metadata, int uffd,
			  char *dst, char *src, long round, int r,
			  struct sp_move_stats *st)
{
	int delay = sp_move_delay_us[(round + 5 * r) %
				     ARRAY_SIZE(sp_move_delay_us)];
	int chunk = 1 << ((round + r) % 5);	/* 1 to 16 pages */
	int start = (round * 97 + r * 131) % SP_NR / chunk * chunk;
	int i, page, err;
	char why[96] = "";
	size_t done;

	sp_move_fill(src, round, r * SP_NR, SP_NR);
	sp_spin_us(delay);
	for (i = 0; i < SP_NR; i += chunk) {
		page = r * SP_NR + (start + i) % SP_NR;
		err = sp_uffd_move(uffd, dst + page * SP_PAGE,
				   src + page * SP_PAGE, chunk * SP_PAGE,
				   st, &done);
		page += done / SP_PAGE;
		if (err)
			snprintf(why, sizeof(why),
				 "UFFDIO_MOVE: %s%s; the source page is %spresent",
				 strerror(-err), err == -ENOENT ?
				 " (a populated page taken for a hole)" : "",
				 (sp_pagemap(src + page * SP_PAGE) &
				  PM_PRESENT) ? "" : "not ");
		ASSERT_EQ(0, err)
			TH_LOG("round %ld, page %d (%d us after the fill, %d KiB chunks): %s",
			       round, page, delay, chunk * 4, why);
	}
}

/*
 * Promotion holds only a read lock (the VMA's, or the mmap read lock), and
 * so does UFFDIO_MOVE, whose source need not be registered with
 * userfaultfd: move_pages_pte() may have mapped the range's page table
 * just before the daemon empties it and installs the PMD.  It must
 * recheck the source PMD under the PTE lock and retry, not WARN (a huge
 * source PMD) nor take a populated page of the emptied table for a hole:
 * mode 0 would fail with ENOENT, and ALLOW_SRC_HOLES would report the
 * page moved while it stays behind.  Each round fills every page of
 * 16 MiB (8 ranges, each promotable as soon as its last page is written)
 * and, one range after the other, right after its fill or a few
 * microseconds to a millisecond later, moves its pages to a registered
 * destination in 4 to 64 KiB chunks: no move may fail, every destination
 * page must be present with its data and every source page gone.
 * Promotions must have happened meanwhile (else the race was never run),
 * and the kernel must not have warned.
 */
TEST_F(promote, uffd_move_during_promotion)
{
	const int nr = SP_MOVE_RANGES * SP_NR;
	const size_t size = SP_MOVE_RANGES * SP_HPAGE;
	struct sp_move_stats st = { 0 };
	uint64_t pfns[SP_MOVE_RANGES * SP_NR];
	long end, round, promoted, failed, taint;
	char *src, *dst;
	int uffd, k;

	uffd = sp_uffd_open_move(_metadata);
	if (uffd < 0)
		return;
	taint = sp_read_int(SP_TAINTED);
	end = sp_now_ms() + SP_MOVE_MS;
	for (round = 0; round < SP_MOVE_ROUNDS && sp_now_ms() < end; round++) {
		src = sp_map_aligned(size);
		dst = sp_map_aligned(size);
		ASSERT_NE(NULL, src);
		ASSERT_NE(NULL, dst);
		sp_uffd_register_missing(_metadata, uffd, dst, size);

		/* Starting at a different range each round. */
		for (k = 0; k < SP_MOVE_RANGES; k++)
			sp_move_range(_metadata, uffd, dst, src, round,
				      (round + k) % SP_MOVE_RANGES, &st);

		/* A missing destination page is not touched: it would block. */
		ASSERT_EQ(0, sp_pfns(dst, nr, pfns));
		for (k = 0; k < nr; k++)
			ASSERT_NE(0ULL, pfns[k])
				TH_LOG("round %ld: destination page %d missing",
				       round, k);
		k = sp_move_bad(dst, round, nr);
		ASSERT_EQ(-1, k)
			TH_LOG("round %ld: destination page %d has wrong data",
			       round, k);
		ASSERT_EQ(0, sp_pfns(src, nr, pfns));
		for (k = 0; k < nr; k++)
			ASSERT_EQ(0ULL, pfns[k])
				TH_LOG("round %ld: source page %d not moved",
				       round, k);
		munmap(src, size);
		munmap(dst, size);
	}
	close(uffd);
	promoted = sp_delta(self->before.promote, "superpage_promote");
	failed = sp_delta(self->before.failed, "superpage_promote_failed");
	ksft_print_msg("%ld rounds, %ld UFFDIO_MOVE calls, %ld of them short\n",
		       round, st.ioctls, st.partial);
	ksft_print_msg("%ld EBUSY and %ld EAGAIN retries, %ld promotions, %ld failed\n",
		       st.busy, st.again, promoted, failed);
	EXPECT_LT(0, promoted)
		TH_LOG("no range was promoted: no move met a promotion");
	if (taint >= 0 && !(taint & SP_TAINT_WARN))
		EXPECT_EQ(0, sp_read_int(SP_TAINTED) & SP_TAINT_WARN)
			TH_LOG("the kernel warned during the moves: see dmesg");
}

/*
 * A reservation maps its subpages one by one, and only the mapped ones are
 * exclusive: UFFDIO_MOVE of a page of a reservation whose first subpage
 * was never touched must move it (after splitting the folio), not fail
 * with EBUSY because the folio's head page is not exclusive.
 */
TEST_F(promote, uffd_move_from_partial_reservation)
{
	struct sp_move_stats st = { 0 };
	char *src, *dst;
	uint64_t base;
	size_t done;
	int uffd, err;

	uffd = sp_uffd_open_move(_metadata);
	if (uffd < 0)
		return;
	src = sp_map_aligned(SP_HPAGE);
	dst = sp_map_aligned(SP_HPAGE);
	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	sp_uffd_register_missing(_metadata, uffd, dst, SP_HPAGE);

	/* One write to subpage 5: a reservation, subpage 0 never mapped. */
	sp_move_fill(src, 1, 5, 1);
	base = sp_pfn(src + 5 * SP_PAGE);
	ASSERT_NE(0, base);
	ASSERT_EQ(5, base % SP_NR)
		TH_LOG("PFN %#llx is not subpage 5 of a reservation",
		       (unsigned long long)base);
	ASSERT_EQ(0, sp_pagemap(src) & PM_PRESENT);

	err = sp_uffd_move(uffd, dst + 5 * SP_PAGE, src + 5 * SP_PAGE,
			   SP_PAGE, &st, &done);
	ASSERT_EQ(0, err)
		TH_LOG("UFFDIO_MOVE of subpage 5: %s after %ld EBUSY retries",
		       strerror(-err), st.busy);
	ASSERT_NE(0, sp_pagemap(dst + 5 * SP_PAGE) & PM_PRESENT);
	EXPECT_EQ(base, sp_pfn(dst + 5 * SP_PAGE));
	EXPECT_EQ(0, sp_pagemap(src + 5 * SP_PAGE) & PM_PRESENT);
	/* The page moved is subpage 5, with its data. */
	EXPECT_EQ(sp_move_tag(1, 5, 0), *sp_move_word(dst, 5, 0));
	EXPECT_EQ(sp_move_tag(1, 5, SP_PAGE - 8), *sp_move_word(dst, 5, 2));
	munmap(src, SP_HPAGE);
	munmap(dst, SP_HPAGE);
	close(uffd);
}

TEST_HARNESS_MAIN
