// SPDX-License-Identifier: GPL-2.0
/*
 * Reservations in the anonymous fault path: each test checks what the
 * kernel really did, from /proc/self/pagemap (PFNs), /proc/self/statm
 * (RSS) and /proc/vmstat (superpage_resv_* counters).
 *
 * The fixture "fault" runs the tests with the shipped defaults: fault
 * clusters at the default order and the default promotion threshold, as
 * users get them; every test that guards data or address-space isolation
 * runs there, and counts what it expects from the pagemap (the subpages a
 * reservation maps) rather than from one subpage per fault.  The fixture
 * "fault_nocluster" switches clusters off, for the tests that count
 * exactly one subpage per fault.
 *
 * The counters are global; the tests run one at a time in a quiet guest,
 * so each checks exact deltas over its own faults.
 */
#define _GNU_SOURCE
#include <linux/userfaultfd.h>
#include <sys/uio.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "superpage_util.h"

struct sp_counters {
	long alloc, failed, mapped;
};

static void sp_counters_read(struct sp_counters *c)
{
	c->alloc = sp_vmstat("superpage_resv_alloc");
	c->failed = sp_vmstat("superpage_resv_alloc_failed");
	c->mapped = sp_vmstat("superpage_resv_mapped");
}

/*
 * Switch the feature on (mode 2) with fault clusters of up to 2^@cluster
 * subpages and the default threshold, every knob pushed first; the
 * fixture's teardown pops them.
 */
static void sp_knobs_setup(struct __test_metadata *_metadata,
			   struct sp_settings *saved, int cluster)
{
	saved->pushed = 0;
	if (geteuid())
		SKIP(return, "must be run as root (pagemap PFNs, sysctl)");
	if (access(SP_ENABLED, F_OK))
		SKIP(return, "no %s: CONFIG_SUPERPAGE=n", SP_ENABLED);
	if (sp_vmstat("superpage_resv_alloc") < 0)
		SKIP(return, "no superpage_resv_* counters in /proc/vmstat");
	sp_settings_push(saved);
	sp_cluster_set(cluster);
	if (!access(SP_THRESHOLD, F_OK))
		ASSERT_EQ(0, sp_write_int(SP_THRESHOLD, SP_THRESHOLD_DEFAULT));
	ASSERT_EQ(0, sp_write_int(SP_ENABLED, 2));
}

FIXTURE(fault) {
	struct sp_settings saved;
	struct sp_counters before;
};

FIXTURE_SETUP(fault)
{
	sp_knobs_setup(_metadata, &self->saved, SP_CLUSTER_DEFAULT);
	sp_counters_read(&self->before);
}

FIXTURE_TEARDOWN_PARENT(fault)
{
	sp_settings_pop(&self->saved);
}

FIXTURE(fault_nocluster) {
	struct sp_settings saved;
	struct sp_counters before;
};

FIXTURE_SETUP(fault_nocluster)
{
	sp_knobs_setup(_metadata, &self->saved, 0);
	sp_counters_read(&self->before);
}

FIXTURE_TEARDOWN_PARENT(fault_nocluster)
{
	sp_settings_pop(&self->saved);
}

/* Counter deltas since the fixture (or the last reset). */
static void expect_deltas(struct __test_metadata *_metadata,
			  const struct sp_counters *before,
			  long alloc, long mapped, long failed)
{
	struct sp_counters now;

	sp_counters_read(&now);
	EXPECT_EQ(alloc, now.alloc - before->alloc)
		TH_LOG("superpage_resv_alloc moved by %ld, want %ld",
		       now.alloc - before->alloc, alloc);
	if (mapped >= 0)
		EXPECT_EQ(mapped, now.mapped - before->mapped)
			TH_LOG("superpage_resv_mapped moved by %ld, want %ld",
			       now.mapped - before->mapped, mapped);
	if (failed >= 0)
		EXPECT_EQ(failed, now.failed - before->failed)
			TH_LOG("superpage_resv_alloc_failed moved by %ld, want %ld",
			       now.failed - before->failed, failed);
}

static void sp_counters_reset(struct sp_counters *c)
{
	sp_counters_read(c);
}

/* Every page of [p, p + n pages) that is present maps PFN base + index. */
static int sp_check_contiguous(char *p, int n, uint64_t *basep)
{
	uint64_t base = 0, pfn;
	int k;

	for (k = 0; k < n; k++) {
		pfn = sp_pfn(p + k * SP_PAGE);
		if (!pfn)
			continue;
		if (!base)
			base = pfn - k;
		if (pfn != base + k)
			return k + 1;
	}
	if (basep)
		*basep = base;
	return 0;
}

/*
 * How many pages of the 2 MiB range at @p map the subpage of the
 * reservation at @base that belongs there (PFN @base + index): the
 * subpages it has mapped, however many each fault mapped.
 */
static int sp_resv_mapped(const char *p, uint64_t base)
{
	uint64_t pfns[SP_NR];
	int k, n = 0;

	if (sp_pfns(p, SP_NR, pfns))
		return -1;
	for (k = 0; k < SP_NR; k++)
		n += pfns[k] == base + k;
	return n;
}

/*
 * Touch the pages of a 2 MiB range in random order: one reservation, PFN =
 * base + index with a 2 MiB-aligned base, untouched pages not present, RSS
 * up by one page per touch (clusters off: a touch next to a present page
 * would map a cluster).
 */
TEST_F(fault_nocluster, contiguity_random_order)
{
	int order[SP_NR], touched = 400, k;
	char *p = sp_map_aligned(SP_HPAGE);
	long rss0, rss;
	uint64_t base;

	ASSERT_NE(NULL, p);
	sp_shuffle(order, SP_NR, 42);
	sp_rss_pages();		/* warm up the stack and libc first */
	rss0 = sp_rss_pages();
	for (k = 0; k < touched; k++) {
		p[order[k] * SP_PAGE] = (char)(order[k] + 1);
		rss = sp_rss_pages();
		ASSERT_EQ(rss0 + k + 1, rss)
			TH_LOG("RSS %ld pages after %d touches, want %ld", rss,
			       k + 1, rss0 + k + 1);
	}
	ASSERT_EQ(0, sp_check_contiguous(p, SP_NR, &base));
	EXPECT_EQ(0, base % SP_NR) TH_LOG("base PFN %#llx not 2 MiB aligned",
					  (unsigned long long)base);
	for (k = 0; k < SP_NR; k++) {
		int was_touched = 0, m;

		for (m = 0; m < touched; m++)
			was_touched |= order[m] == k;
		if (was_touched) {
			ASSERT_EQ(base + k, sp_pfn(p + k * SP_PAGE));
			ASSERT_EQ((char)(k + 1), p[k * SP_PAGE]);
		} else {
			ASSERT_EQ(0, sp_pagemap(p + k * SP_PAGE) & PM_PRESENT)
				TH_LOG("untouched page %d is present", k);
		}
	}
	expect_deltas(_metadata, &self->before, 1, touched - 1, 0);
	munmap(p, SP_HPAGE);
}

/*
 * Read faults allocate nothing: in a range without a reservation they map
 * the zero page, as without the feature (the same PFN for every page, no
 * RSS, no reservation), so that a MAP_NORESERVE or read-only mapping,
 * which overcommit does not account, is not charged 2 MiB for a read.
 * The first write then creates the reservation in place of the zero page
 * (PFN base + index, 2 MiB-aligned base), the written page reads its byte
 * and zeroes, and writes to the rest fill the same reservation.
 */
TEST_F(fault, read_fault_maps_zero_page)
{
	char *p = mmap(NULL, 2 * SP_HPAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint64_t zero, base, pfn;
	long off;
	int k;

	ASSERT_NE(MAP_FAILED, p);
	p = (char *)(((uintptr_t)p + SP_HPAGE - 1) & ~(SP_HPAGE - 1));
	for (k = 0; k < SP_NR; k++) {
		off = sp_first_nonzero(p + k * SP_PAGE, SP_PAGE);
		ASSERT_EQ(-1, off) TH_LOG("page %d, byte %ld", k, off);
	}
	zero = sp_pfn(p);
	ASSERT_NE(0, zero);
	for (k = 0; k < SP_NR; k++) {
		pfn = sp_pfn(p + k * SP_PAGE);
		ASSERT_EQ(zero, pfn)
			TH_LOG("read page %d maps PFN %#llx, page 0 %#llx", k,
			       (unsigned long long)pfn,
			       (unsigned long long)zero);
	}
	EXPECT_EQ(0, sp_smaps_kb(p, "Rss"))
		TH_LOG("read faults made %ld kB resident", sp_smaps_kb(p, "Rss"));
	expect_deltas(_metadata, &self->before, 0, 0, 0);

	p[5 * SP_PAGE] = 1;
	base = sp_pfn(p + 5 * SP_PAGE) - 5;
	EXPECT_NE(zero, base + 5);
	EXPECT_EQ(0, base % SP_NR)
		TH_LOG("the first write maps PFN %#llx, not a reservation's",
		       (unsigned long long)base + 5);
	EXPECT_EQ(-1, sp_first_nonzero(p + 5 * SP_PAGE + 1, SP_PAGE - 1));
	expect_deltas(_metadata, &self->before, 1, -1, 0);
	for (k = 0; k < SP_NR; k++)
		p[k * SP_PAGE] = (char)k;
	for (k = 0; k < SP_NR; k++) {
		pfn = sp_pfn(p + k * SP_PAGE);
		ASSERT_EQ(base + k, pfn)
			TH_LOG("page %d written after a read: PFN %#llx, want %#llx",
			       k, (unsigned long long)pfn,
			       (unsigned long long)base + k);
		ASSERT_EQ((char)k, p[k * SP_PAGE]);
		off = sp_first_nonzero(p + k * SP_PAGE + 1, SP_PAGE - 1);
		ASSERT_EQ(-1, off) TH_LOG("page %d, byte %ld", k, off + 1);
	}
	expect_deltas(_metadata, &self->before, 1, -1, 0);
	munmap(p, 2 * SP_HPAGE);
}

/*
 * A read-only private mapping is not accounted by overcommit: reading it
 * maps the zero page and creates no reservation.  Made writable, its first
 * write creates one.
 */
TEST_F(fault, read_only_mapping_reserves_nothing)
{
	char *p = sp_map_aligned(SP_HPAGE);
	uint64_t zero;
	int k;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, mprotect(p, SP_HPAGE, PROT_READ));
	for (k = 0; k < SP_NR; k += 3)
		ASSERT_EQ(0, sp_load(p + k * SP_PAGE));
	zero = sp_pfn(p);
	for (k = 0; k < SP_NR; k += 3) {
		ASSERT_EQ(zero, sp_pfn(p + k * SP_PAGE))
			TH_LOG("page %d", k);
	}
	EXPECT_EQ(0, sp_smaps_kb(p, "Rss"));
	expect_deltas(_metadata, &self->before, 0, 0, 0);
	ASSERT_EQ(0, mprotect(p, SP_HPAGE, PROT_READ | PROT_WRITE));
	p[3 * SP_PAGE] = 1;
	EXPECT_EQ(3, sp_pfn(p + 3 * SP_PAGE) % SP_NR);
	expect_deltas(_metadata, &self->before, 1, -1, 0);
	munmap(p, SP_HPAGE);
}

/*
 * A read fault maps its subpage clean and read-only, as the zero page would
 * be: not soft-dirty (when the kernel tracks soft-dirty).  A write then
 * reuses the same subpage in place: same PFN, no new mapping counted.
 */
TEST_F(fault, read_fault_clean_then_write_reuses)
{
	const uint64_t soft_dirty = 1ULL << 55;
	char *p = sp_map_aligned(SP_HPAGE);
	uint64_t base;
	int tracked;

	ASSERT_NE(NULL, p);
	p[0] = 1;
	base = sp_pfn(p);
	ASSERT_NE(0, base);
	/* Soft-dirty is tracked if clearing it and writing sets it again. */
	tracked = !sp_write_file("/proc/self/clear_refs", "4") &&
		  !(sp_pagemap(p) & soft_dirty);
	p[0] = 2;
	tracked = tracked && (sp_pagemap(p) & soft_dirty);
	ASSERT_EQ(0, sp_write_file("/proc/self/clear_refs", "4"));

	ASSERT_EQ(0, sp_load(p + 5 * SP_PAGE));
	ASSERT_EQ(base + 5, sp_pfn(p + 5 * SP_PAGE));
	if (tracked)
		EXPECT_EQ(0, sp_pagemap(p + 5 * SP_PAGE) & soft_dirty)
			TH_LOG("a read fault made the page soft-dirty");
	p[5 * SP_PAGE] = 7;
	EXPECT_EQ(base + 5, sp_pfn(p + 5 * SP_PAGE));
	EXPECT_EQ(7, p[5 * SP_PAGE]);
	if (tracked)
		EXPECT_NE(0, sp_pagemap(p + 5 * SP_PAGE) & soft_dirty);
	expect_deltas(_metadata, &self->before, 1, 1, 0);
	munmap(p, SP_HPAGE);
}

/*
 * No other owner's data ever shows.  A buffer is filled with a pattern as
 * whole reservations (order-9 folios) and freed, so that its 2 MiB blocks
 * go back to the page allocator, which hands them to the next order-9
 * allocations.  The test asserts that most of the new reservations got
 * frames the buffer held (it tries three times, then fails: a pass on
 * never-used memory would prove nothing).  Then every byte of every
 * subpage the new reservations map must read zero, whether a write fault,
 * a scattered read fault or a cluster mapped it, and every page must be
 * its reservation's own subpage (not the zero page).  no_stale_data empties
 * the pool of zeroed frames first, so that the faults zero what they map.
 */
#define STALE_DIRTY	128	/* patterned 2 MiB ranges (256 MiB) */
#define STALE_RANGES	32	/* new reservations checked (64 MiB) */

static void check_zero_page(struct __test_metadata *_metadata, const char *page,
			    size_t skip, int r, int k)
{
	long off = sp_first_nonzero(page + skip, SP_PAGE - skip);

	ASSERT_EQ(-1, off)
		TH_LOG("range %d page %d: byte %ld reads %#x", r, k, off + (long)skip,
		       (unsigned char)page[off + (long)skip]);
}

static void stale_data(struct __test_metadata *_metadata,
		       struct sp_counters *before, int pool)
{
	uint64_t frames[STALE_DIRTY], base[STALE_RANGES], pfns[SP_NR];
	size_t size = STALE_RANGES * SP_HPAGE;
	/* Write faults from page @lo on; a pool's frame is zeroed whole. */
	int lo = pool ? 1 : SP_NR / 2;
	int attempt, nframes = 0, reused = 0, r, k;
	long clustered = sp_vmstat("superpage_cluster_mapped");
	long used = sp_vmstat("superpage_prezero_used");
	char *p = NULL, *range;

	for (attempt = 1; attempt <= 3; attempt++) {
		/* Empty: the pool is filled from the patterned blocks. */
		sp_prezero_set(0);
		nframes = sp_dirty_frames(STALE_DIRTY, 0xa5, frames);
		ASSERT_LE(STALE_DIRTY / 2, nframes)
			TH_LOG("%d of %d patterned ranges were one 2 MiB block",
			       nframes, STALE_DIRTY);
		if (pool) {
			sp_prezero_set(STALE_RANGES);
			ASSERT_LE(STALE_RANGES, sp_prezero_wait(STALE_RANGES, 30000))
				TH_LOG("the pool of zeroed frames did not fill");
			used = sp_vmstat("superpage_prezero_used");
		}
		sp_counters_reset(before);
		p = sp_map_aligned(size);
		ASSERT_NE(NULL, p);
		/*
		 * Scattered faults, each read then written: every third page
		 * of the upper half.  The first one creates the reservation.
		 */
		reused = 0;
		for (r = 0; r < STALE_RANGES; r++) {
			range = p + r * SP_HPAGE;
			for (k = lo; k < SP_NR; k += 3) {
				check_zero_page(_metadata, range + k * SP_PAGE, 0, r, k);
				range[k * SP_PAGE] = 1;
			}
			base[r] = sp_pfn(range + lo * SP_PAGE) - lo;
			reused += sp_frames_has(frames, nframes, base[r]);
		}
		TH_LOG("attempt %d: %d of %d new reservations on frames of the %d patterned blocks",
		       attempt, reused, STALE_RANGES, nframes);
		if (reused >= STALE_RANGES / 2)
			break;
		munmap(p, size);
	}
	ASSERT_LE(STALE_RANGES / 2, reused)
		TH_LOG("the allocator gave never-used memory: nothing proven");

	for (r = 0; r < STALE_RANGES; r++) {
		range = p + r * SP_HPAGE;
		/* Read faults of a sequential pass: clusters. */
		for (k = 0; k < lo; k++)
			check_zero_page(_metadata, range + k * SP_PAGE, 0, r, k);
		/* Scattered read faults: the rest of the upper half. */
		for (k = lo; k < SP_NR; k++)
			if ((k - lo) % 3)
				check_zero_page(_metadata, range + k * SP_PAGE, 0, r, k);
		/* The written pages hold their one byte and zeroes. */
		for (k = lo; k < SP_NR; k += 3) {
			ASSERT_EQ(1, range[k * SP_PAGE]);
			check_zero_page(_metadata, range + k * SP_PAGE, 1, r, k);
		}
		/* Every page is the reservation's own subpage. */
		ASSERT_EQ(0, base[r] % SP_NR)
			TH_LOG("range %d: base PFN %#llx", r, (unsigned long long)base[r]);
		ASSERT_EQ(0, sp_pfns(range, SP_NR, pfns));
		for (k = 0; k < SP_NR; k++) {
			ASSERT_EQ(base[r] + k, pfns[k])
				TH_LOG("range %d page %d", r, k);
		}
	}
	/* Each reservation took a frame of the pool, or none did. */
	used = sp_vmstat("superpage_prezero_used") - used;
	EXPECT_EQ(pool ? STALE_RANGES : 0, used)
		TH_LOG("%ld reservations on zeroed frames of the pool", used);
	expect_deltas(_metadata, before, STALE_RANGES,
		      STALE_RANGES * (SP_NR - 1), 0);
	/* The sequential pass mapped clusters: the defaults are in force. */
	if (clustered >= 0)
		EXPECT_LT(0, sp_vmstat("superpage_cluster_mapped") - clustered);
	munmap(p, size);
}

TEST_F(fault, no_stale_data)
{
	stale_data(_metadata, &self->before, 0);
}

/*
 * The same over frames that ksuperpage_zerod zeroed ahead of any fault
 * (mm/superpage/prezero.c): the pool is emptied, the patterned blocks are
 * freed, and the pool is filled again (from them, which the test asserts
 * as above): every reservation takes a frame of the pool, and nothing the
 * pattern left shows through a fault, a cluster or a read.  The write
 * faults start at page 1, every third page to 511: the first one takes
 * the frame, all of whose pages above it are then mapped unzeroed.
 */
TEST_F(fault, no_stale_data_prezeroed)
{
	if (access(SP_PREZERO, F_OK))
		SKIP(return, "this kernel keeps no zeroed frames");
	stale_data(_metadata, &self->before, 1);
}

/* With the sysctl at 0 nothing moves and nothing is reserved. */
TEST_F(fault, off_means_off)
{
	char *p = sp_map_aligned(SP_HPAGE);
	int k;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, sp_write_int(SP_ENABLED, 0));
	sp_counters_reset(&self->before);
	for (k = 0; k < SP_NR; k += 2)
		p[k * SP_PAGE] = 1;
	expect_deltas(_metadata, &self->before, 0, 0, 0);
	/* Untouched pages stay absent, unless THP "always" made a huge page. */
	{
		char thp[128] = "";

		sp_read_file(SP_THP_ENABLED, thp, sizeof(thp));
		if (!strstr(thp, "[always]"))
			EXPECT_EQ(0, sp_pagemap(p + SP_PAGE) & PM_PRESENT);
	}
	munmap(p, SP_HPAGE);
}

static void touch_range(char *p, int step)
{
	int k;

	for (k = 0; k < SP_NR; k += step)
		p[k * SP_PAGE] = 1;
}

TEST_F(fault, excluded_nohugepage)
{
	char *p = sp_map_aligned(SP_HPAGE);

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, madvise(p, SP_HPAGE, MADV_NOHUGEPAGE));
	touch_range(p, 4);
	expect_deltas(_metadata, &self->before, 0, 0, -1);
	munmap(p, SP_HPAGE);
}

/*
 * MADV_NOHUGEPAGE on part of a range after its reservation was created: a
 * sequential fill of the eligible part (whose faults map clusters) never
 * maps a subpage into the excluded part, and a fault there gets a page of
 * its own.
 */
TEST_F(fault, excluded_nohugepage_part)
{
	char *p = sp_map_aligned(SP_HPAGE);
	uint64_t base, pfns[SP_NR];
	int k;

	ASSERT_NE(NULL, p);
	p[0] = 1;
	base = sp_pfn(p);
	ASSERT_NE(0, base);
	ASSERT_EQ(0, madvise(p + 3 * SP_PAGE, SP_HPAGE - 3 * SP_PAGE,
			     MADV_NOHUGEPAGE));
	p[SP_PAGE] = 2;
	p[2 * SP_PAGE] = 3;
	ASSERT_EQ(0, sp_pfns(p, SP_NR, pfns));
	for (k = 0; k < 3; k++) {
		EXPECT_EQ(base + k, pfns[k])
			TH_LOG("page %d", k);
	}
	for (k = 3; k < SP_NR; k++) {
		unsigned long long pfn = pfns[k];

		ASSERT_EQ(0, pfn)
			TH_LOG("excluded page %d is mapped (PFN %#llx, reservation at %#llx)",
			       k, pfn, (unsigned long long)base);
	}
	p[3 * SP_PAGE] = 4;
	p[300 * SP_PAGE] = 5;
	EXPECT_FALSE(sp_pfn_in(sp_pfn(p + 3 * SP_PAGE), base));
	EXPECT_FALSE(sp_pfn_in(sp_pfn(p + 300 * SP_PAGE), base));
	EXPECT_EQ(4, p[3 * SP_PAGE]);
	EXPECT_EQ(5, p[300 * SP_PAGE]);
	expect_deltas(_metadata, &self->before, 1, 2, -1);
	munmap(p, SP_HPAGE);
}

TEST_F(fault, excluded_small_vma)
{
	/* 1 MiB VMA: no 2 MiB range fits in it. */
	char *p = sp_map_aligned(SP_HPAGE);

	ASSERT_NE(NULL, p);
	munmap(p + SP_HPAGE / 2, SP_HPAGE / 2);
	for (int k = 0; k < SP_NR / 2; k += 2)
		p[k * SP_PAGE] = 1;
	expect_deltas(_metadata, &self->before, 0, -1, -1);
	munmap(p, SP_HPAGE / 2);
}

TEST_F(fault, excluded_thp_disable_prctl)
{
	int status;
	pid_t pid = fork();

	ASSERT_GE(pid, 0);
	if (!pid) {
		char *p;

		if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
			_exit(2);
		p = sp_map_aligned(SP_HPAGE);
		if (!p)
			_exit(3);
		touch_range(p, 4);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	expect_deltas(_metadata, &self->before, 0, 0, -1);
}

TEST_F(fault, excluded_userfaultfd)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	char *p = sp_map_aligned(SP_HPAGE);
	int uffd;

	ASSERT_NE(NULL, p);
	uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		SKIP(return, "userfaultfd: %s", strerror(errno));
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_API, &api));
	/* Write-protect mode arms the VMA without trapping missing faults. */
	reg.range.start = (uintptr_t)p;
	reg.range.len = SP_HPAGE;
	reg.mode = UFFDIO_REGISTER_MODE_WP;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		SKIP(return, "UFFDIO_REGISTER_MODE_WP: %s", strerror(errno));
	touch_range(p, 4);
	expect_deltas(_metadata, &self->before, 0, 0, -1);
	close(uffd);
	munmap(p, SP_HPAGE);
}

/* Mode 1 follows the THP policy: with "madvise", only MADV_HUGEPAGE. */
TEST_F(fault, mode1_follows_thp_policy)
{
	char thp[128], *p, *q;

	ASSERT_GT(sp_read_file(SP_THP_ENABLED, thp, sizeof(thp)), 0);
	if (!strstr(thp, "[madvise]"))
		SKIP(return, "THP policy is not madvise: %s", thp);
	ASSERT_EQ(0, sp_write_int(SP_ENABLED, 1));
	p = sp_map_aligned(SP_HPAGE);
	q = sp_map_aligned(SP_HPAGE);
	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, q);
	touch_range(p, 8);
	expect_deltas(_metadata, &self->before, 0, -1, -1);
	ASSERT_EQ(0, madvise(q, SP_HPAGE, MADV_HUGEPAGE));
	touch_range(q, 8);
	expect_deltas(_metadata, &self->before, 1, SP_NR / 8 - 1, -1);
	/* Not a huge page at fault time: a reservation. */
	EXPECT_EQ(0, sp_smaps_kb(q, "AnonHugePages"));
	EXPECT_EQ(0, sp_check_contiguous(q, SP_NR, NULL));
	munmap(p, SP_HPAGE);
	munmap(q, SP_HPAGE);
}

/*
 * Fork stops growth in parent and child: a page first touched after fork,
 * or copied on write, is never a subpage of the reservation; data stays
 * right in both.
 */
TEST_F(fault, fork_stops_growth)
{
	char *p = sp_map_aligned(SP_HPAGE);
	int status, k, n;
	uint64_t base;
	pid_t pid;

	ASSERT_NE(NULL, p);
	for (k = 0; k < 10; k++)
		p[k * SP_PAGE] = (char)(k + 1);
	ASSERT_EQ(0, sp_check_contiguous(p, SP_NR, &base));
	n = sp_resv_mapped(p, base);
	ASSERT_LE(10, n);
	/* Pages 20 and 30 are first touched after fork. */
	ASSERT_EQ(0, sp_pfn(p + 20 * SP_PAGE));
	ASSERT_EQ(0, sp_pfn(p + 30 * SP_PAGE));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		int bad = 0;

		p[20 * SP_PAGE] = 20;
		p[3 * SP_PAGE] = 33;	/* COW of a reserved subpage */
		if (sp_pfn_in(sp_pfn(p + 20 * SP_PAGE), base))
			_exit(2);
		if (sp_pfn_in(sp_pfn(p + 3 * SP_PAGE), base))
			_exit(3);
		for (k = 0; k < 10; k++)
			bad |= p[k * SP_PAGE] != (k == 3 ? 33 : k + 1);
		bad |= p[20 * SP_PAGE] != 20;
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("child: %s", WEXITSTATUS(status) == 2 ?
		       "the reservation grew after fork" :
		       WEXITSTATUS(status) == 3 ?
		       "the COW copy is a subpage of the reservation" :
		       "wrong data");
	p[30 * SP_PAGE] = 30;
	for (k = 0; k < 10; k++) {
		EXPECT_EQ((char)(k + 1), p[k * SP_PAGE]);
		EXPECT_EQ(base + k, sp_pfn(p + k * SP_PAGE));
	}
	EXPECT_EQ(0, p[20 * SP_PAGE]);
	EXPECT_EQ(30, p[30 * SP_PAGE]);
	EXPECT_FALSE(sp_pfn_in(sp_pfn(p + 20 * SP_PAGE), base));
	EXPECT_FALSE(sp_pfn_in(sp_pfn(p + 30 * SP_PAGE), base));
	/* One reservation, what its first 10 writes mapped, no growth after. */
	EXPECT_EQ(n, sp_resv_mapped(p, base));
	expect_deltas(_metadata, &self->before, 1, n - 1, -1);
	munmap(p, SP_HPAGE);
}

/*
 * MADV_DONTNEED of part, then refill: the same subpages come back, zeroed.
 * Every page was filled with a nonzero pattern first, so that a subpage
 * handed out again without zeroing would show it.
 */
TEST_F(fault, dontneed_then_refill)
{
	char *p = sp_map_aligned(SP_HPAGE);
	uint64_t base;
	long off;
	int k, n;

	ASSERT_NE(NULL, p);
	for (k = 0; k < 100; k++)
		memset(p + k * SP_PAGE, k + 1, SP_PAGE);
	ASSERT_EQ(0, sp_check_contiguous(p, SP_NR, &base));
	n = sp_resv_mapped(p, base);
	ASSERT_LE(100, n);
	ASSERT_EQ(0, madvise(p + 10 * SP_PAGE, 10 * SP_PAGE, MADV_DONTNEED));
	for (k = 10; k < 20; k++)
		ASSERT_EQ(0, sp_pagemap(p + k * SP_PAGE) & PM_PRESENT);
	for (k = 10; k < 20; k++)
		p[k * SP_PAGE] = 7;
	for (k = 10; k < 20; k++) {
		ASSERT_EQ(7, p[k * SP_PAGE]);
		off = sp_first_nonzero(p + k * SP_PAGE + 1, SP_PAGE - 1);
		ASSERT_EQ(-1, off)
			TH_LOG("refilled page %d: byte %ld reads %#x", k, off + 1,
			       (unsigned char)p[k * SP_PAGE + off + 1]);
	}
	for (k = 0; k < 100; k++) {
		ASSERT_EQ(base + k, sp_pfn(p + k * SP_PAGE))
			TH_LOG("page %d", k);
	}
	for (k = 0; k < 100; k++) {
		if (k >= 10 && k < 20)
			continue;
		off = sp_first_not(p + k * SP_PAGE, k + 1, SP_PAGE);
		ASSERT_EQ(-1, off) TH_LOG("page %d byte %ld", k, off);
	}
	expect_deltas(_metadata, &self->before, 1, n - 1 + 10, -1);
	munmap(p, SP_HPAGE);
}

/*
 * mremap to a 2 MiB-congruent address: the reservation keeps growing, in
 * place, and what it maps ahead reads zero.
 */
TEST_F(fault, mremap_congruent_keeps_growing)
{
	char *p = sp_map_aligned(SP_HPAGE), *dst = sp_map_aligned(2 * SP_HPAGE);
	uint64_t base, moved;
	char *q;
	int k;

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, dst);
	for (k = 0; k < 10; k++)
		p[k * SP_PAGE] = (char)(k + 1);
	ASSERT_EQ(0, sp_check_contiguous(p, SP_NR, &base));
	q = mremap(p, SP_HPAGE, SP_HPAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
		   dst + SP_HPAGE);
	ASSERT_EQ(dst + SP_HPAGE, q);
	for (k = 10; k < 20; k++)
		q[k * SP_PAGE] = (char)(k + 1);
	for (k = 0; k < 20; k++) {
		ASSERT_EQ((char)(k + 1), q[k * SP_PAGE]);
		ASSERT_EQ(base + k, sp_pfn(q + k * SP_PAGE)) TH_LOG("page %d", k);
	}
	ASSERT_EQ(0, sp_check_contiguous(q, SP_NR, &moved));
	ASSERT_EQ(base, moved);
	for (k = 20; k < SP_NR; k++) {
		if (sp_pfn(q + k * SP_PAGE))
			ASSERT_EQ(-1, sp_first_nonzero(q + k * SP_PAGE, SP_PAGE))
				TH_LOG("page %d", k);
	}
	expect_deltas(_metadata, &self->before, 1, sp_resv_mapped(q, base) - 1, -1);
	munmap(dst, 2 * SP_HPAGE);
}

/*
 * mremap to an incongruent address: data intact, the reservation strands:
 * the pages touched after the move are not its subpages.
 */
TEST_F(fault, mremap_incongruent_strands)
{
	char *p = sp_map_aligned(SP_HPAGE), *dst = sp_map_aligned(4 * SP_HPAGE);
	uint64_t base;
	char *q;
	int k, n;

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, dst);
	for (k = 0; k < 10; k++)
		p[k * SP_PAGE] = (char)(k + 1);
	ASSERT_EQ(0, sp_check_contiguous(p, SP_NR, &base));
	n = sp_resv_mapped(p, base);
	/* Pages 0 to n - 1 are mapped; the test needs some after them. */
	ASSERT_LT(n, 20);
	q = mremap(p, SP_HPAGE, SP_HPAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
		   dst + SP_HPAGE + 16 * SP_PAGE);
	ASSERT_EQ(dst + SP_HPAGE + 16 * SP_PAGE, q);
	for (k = 10; k < 20; k++)
		q[k * SP_PAGE] = (char)(k + 1);
	for (k = 0; k < 20; k++) {
		ASSERT_EQ((char)(k + 1), q[k * SP_PAGE]);
		if (k < n) {
			ASSERT_EQ(base + k, sp_pfn(q + k * SP_PAGE)) TH_LOG("page %d", k);
		} else {
			ASSERT_FALSE(sp_pfn_in(sp_pfn(q + k * SP_PAGE), base))
				TH_LOG("page %d, touched after the move", k);
		}
	}
	expect_deltas(_metadata, &self->before, 1, n - 1, -1);
	munmap(dst, 4 * SP_HPAGE);
}

/*
 * mprotect of part of a reservation splits the VMA.  Growth goes on in the
 * piece that holds the reservation's pages; the read-only piece reads the
 * zero page: a fault looks for the reservation among the PTEs of its own
 * VMA only, and that piece holds none of its pages.  Nothing is mapped
 * ahead in it either.
 */
TEST_F(fault, mprotect_part)
{
	char *p = sp_map_aligned(SP_HPAGE);
	uint64_t base, zero, pfns[SP_NR];
	const char *v = p;
	int k;

	ASSERT_NE(NULL, p);
	for (k = 0; k < 10; k++)
		p[k * SP_PAGE] = (char)(k + 1);
	ASSERT_EQ(0, sp_check_contiguous(p, SP_NR, &base));
	ASSERT_EQ(0, mprotect(p + SP_HPAGE / 2, SP_HPAGE / 2, PROT_READ));
	for (k = SP_NR / 2; k < SP_NR / 2 + 10; k++)
		ASSERT_EQ(-1, sp_first_nonzero(v + k * SP_PAGE, SP_PAGE));
	for (k = 10; k < 20; k++)
		p[k * SP_PAGE] = (char)(k + 1);
	for (k = 0; k < 20; k++)
		ASSERT_EQ((char)(k + 1), p[k * SP_PAGE]);
	ASSERT_EQ(0, sp_pfns(p, SP_NR, pfns));
	for (k = 0; k < SP_NR / 2; k++) {
		if (pfns[k] || k < 20)
			ASSERT_EQ(base + k, pfns[k]) TH_LOG("page %d", k);
	}
	zero = pfns[SP_NR / 2];
	ASSERT_FALSE(sp_pfn_in(zero, base))
		TH_LOG("read-only page %d maps subpage %lld of the reservation",
		       SP_NR / 2, (long long)(zero - base));
	for (k = SP_NR / 2; k < SP_NR; k++) {
		if (k < SP_NR / 2 + 10) {
			ASSERT_EQ(zero, pfns[k])
				TH_LOG("read-only page %d: PFN %#llx, not the zero page %#llx",
				       k, (unsigned long long)pfns[k],
				       (unsigned long long)zero);
		} else {
			ASSERT_EQ(0, pfns[k])
				TH_LOG("read-only page %d, never touched, maps PFN %#llx",
				       k, (unsigned long long)pfns[k]);
		}
	}
	expect_deltas(_metadata, &self->before, 1, sp_resv_mapped(p, base) - 1, -1);
	munmap(p, SP_HPAGE);
}

/* Mlocked in kB, with the per-CPU deltas folded in. */
static long sp_mlocked_kb(void)
{
	sp_write_file("/proc/sys/vm/stat_refresh", "1");
	return sp_meminfo_kb("Mlocked");
}

/*
 * mlock populates the whole range from one reservation, and Mlocked grows
 * by the range: every page of it is mapped.
 */
TEST_F(fault, mlock_fills_reservation)
{
	char *p = sp_map_aligned(SP_HPAGE);
	long mlocked;
	int k;

	ASSERT_NE(NULL, p);
	p[0] = 1;
	mlocked = sp_mlocked_kb();
	if (mlock(p, SP_HPAGE))
		SKIP(return, "mlock: %s", strerror(errno));
	for (k = 0; k < SP_NR; k++) {
		ASSERT_NE(0, sp_pfn(p + k * SP_PAGE))
			TH_LOG("page %d", k);
	}
	ASSERT_EQ(0, sp_check_contiguous(p, SP_NR, NULL));
	EXPECT_EQ(1, p[0]);
	EXPECT_EQ(0, p[SP_HPAGE - 1]);
	EXPECT_EQ(SP_HPAGE >> 10, sp_mlocked_kb() - mlocked);
	expect_deltas(_metadata, &self->before, 1, SP_NR - 1, -1);
	munlock(p, SP_HPAGE);
	EXPECT_EQ(0, sp_mlocked_kb() - mlocked);
	munmap(p, SP_HPAGE);
}

/*
 * MLOCK_ONFAULT locks what is touched: Mlocked grows by the touched pages
 * only, not by 2 MiB per range, and no reservation is made.
 */
TEST_F(fault, mlock_onfault_counts_touched_pages)
{
	size_t size = 4 * SP_HPAGE;
	char *p = sp_map_aligned(size), thp[128] = "";
	long mlocked, delta;
	int r, k, touched = 0;

	ASSERT_NE(NULL, p);
	if (syscall(SYS_mlock2, p, size, 1 /* MLOCK_ONFAULT */))
		SKIP(return, "mlock2(MLOCK_ONFAULT): %s", strerror(errno));
	/* THP "always" would lock 2 MiB per range here, as without us. */
	if (sp_read_file(SP_THP_ENABLED, thp, sizeof(thp)) > 0 &&
	    strstr(thp, "[always]"))
		ASSERT_EQ(0, sp_write_file(SP_THP_ENABLED, "madvise"));
	mlocked = sp_mlocked_kb();
	for (r = 0; r < 4; r++) {
		for (k = 0; k <= r; k++) {
			p[r * SP_HPAGE + k * 5 * SP_PAGE] = 1;
			touched++;
		}
	}
	delta = sp_mlocked_kb() - mlocked;
	EXPECT_EQ(touched * (long)(SP_PAGE >> 10), delta)
		TH_LOG("Mlocked grew by %ld kB for %d touched pages", delta,
		       touched);
	expect_deltas(_metadata, &self->before, 0, 0, -1);
	munlock(p, size);
	EXPECT_EQ(0, sp_mlocked_kb() - mlocked);
	munmap(p, size);
}

/*
 * A subpage that another process still reaches is never handed out again.
 * A reservation spans a MADV_DONTFORK half (whose pages keep
 * PageAnonExclusive across fork) and a normal half.  The child pins a
 * subpage of the normal half in a pipe with vmsplice(), then both unmap
 * it; the parent's refault must not zero and reuse that subpage, or the
 * child would read the parent's new data from its pipe.  (A fault looks
 * for the reservation in its own VMA only, so the DONTFORK half's pages
 * are no candidates for a fault in the normal half; the next test reaches
 * the reference check itself.)
 */
TEST_F(fault, no_reuse_of_subpage_held_by_pipe)
{
	char *p = sp_map_aligned(SP_HPAGE), *t, buf[SP_PAGE];
	int data[2], c2p[2], p2c[2], status;
	uint64_t base;
	char c = 0;
	pid_t pid;

	ASSERT_NE(NULL, p);
	t = p + 300 * SP_PAGE;
	p[0] = 1;
	memset(t, 'X', SP_PAGE);
	base = sp_pfn(p);
	ASSERT_EQ(base + 300, sp_pfn(t));
	ASSERT_EQ(0, madvise(p, SP_HPAGE / 2, MADV_DONTFORK));
	ASSERT_EQ(0, pipe(data));
	/* One pipe per direction: a process never reads its own token. */
	ASSERT_EQ(0, pipe(c2p));
	ASSERT_EQ(0, pipe(p2c));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		struct iovec iov = { .iov_base = t, .iov_len = SP_PAGE };
		int k;

		if (vmsplice(data[1], &iov, 1, 0) != SP_PAGE)
			_exit(2);
		if (madvise(t, SP_PAGE, MADV_DONTNEED))
			_exit(3);
		if (write(c2p[1], "c", 1) != 1)
			_exit(4);
		/* Wait for the parent's refault and write. */
		if (read(p2c[0], &c, 1) != 1)
			_exit(5);
		if (read(data[0], buf, SP_PAGE) != SP_PAGE)
			_exit(6);
		for (k = 0; k < SP_PAGE; k++)
			if (buf[k] != 'X')
				_exit(7);
		_exit(0);
	}
	ASSERT_EQ(1, read(c2p[0], &c, 1));
	ASSERT_EQ(0, madvise(t, SP_PAGE, MADV_DONTNEED));
	ASSERT_EQ(-1, sp_first_nonzero(t, SP_PAGE));
	EXPECT_NE(base + 300, sp_pfn(t));
	memset(t, 'P', SP_PAGE);
	EXPECT_NE(base + 300, sp_pfn(t));
	ASSERT_EQ(1, write(p2c[1], "p", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("child: %s", WEXITSTATUS(status) == 7 ?
		       "the pipe shows the parent's new data" : "setup failed");
	munmap(p, SP_HPAGE);
}

/*
 * The same within one process and one VMA: a subpage held by a pipe
 * (vmsplice) and then unmapped is not zeroed and handed out again at the
 * refault, although the reservation has present pages next to it (the
 * fault finds the reservation and must stop at the extra reference): the
 * pipe keeps the data, the refault gets another page.
 */
TEST_F(fault, no_reuse_of_own_subpage_held_by_pipe)
{
	char *p = sp_map_aligned(SP_HPAGE), *t, buf[SP_PAGE];
	struct iovec iov;
	uint64_t base;
	int fds[2];

	ASSERT_NE(NULL, p);
	t = p + 300 * SP_PAGE;
	p[0] = 1;
	memset(t, 'X', SP_PAGE);
	memset(t + SP_PAGE, 'Y', SP_PAGE);
	base = sp_pfn(p);
	ASSERT_EQ(base + 300, sp_pfn(t));
	ASSERT_EQ(base + 301, sp_pfn(t + SP_PAGE));
	ASSERT_EQ(0, pipe(fds));
	iov.iov_base = t;
	iov.iov_len = SP_PAGE;
	ASSERT_EQ(SP_PAGE, vmsplice(fds[1], &iov, 1, 0));
	ASSERT_EQ(0, madvise(t, SP_PAGE, MADV_DONTNEED));
	ASSERT_EQ(0, sp_pagemap(t) & PM_PRESENT);
	ASSERT_EQ(-1, sp_first_nonzero(t, SP_PAGE));
	memset(t, 'P', SP_PAGE);
	EXPECT_NE(base + 300, sp_pfn(t))
		TH_LOG("the subpage the pipe holds was mapped again");
	ASSERT_EQ(SP_PAGE, read(fds[0], buf, SP_PAGE));
	EXPECT_EQ(-1, sp_first_not(buf, 'X', SP_PAGE))
		TH_LOG("the pipe does not show the data it was given");
	EXPECT_EQ(-1, sp_first_not(t, 'P', SP_PAGE));
	EXPECT_EQ(-1, sp_first_not(t + SP_PAGE, 'Y', SP_PAGE));
	close(fds[0]);
	close(fds[1]);
	munmap(p, SP_HPAGE);
}

/*
 * An anonymous page next to [vvar] (special PTEs in the same page table)
 * faults cleanly: the neighbour scan must not report the special entries
 * as bad page maps (the harness fails the run on such a console splat).
 */
TEST_F(fault, special_neighbours)
{
	unsigned long start = 0, end = 0, a;
	char line[256], *q = NULL;
	FILE *f = fopen("/proc/self/maps", "r");

	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[vvar]"))
			sscanf(line, "%lx-%lx", &start, &end);
	fclose(f);
	if (!start)
		SKIP(return, "no [vvar] mapping");
	/* A free page in the same 2 MiB range, just below or above [vvar]. */
	for (a = start - SP_PAGE; !q && a >= (start & ~(SP_HPAGE - 1)); a -= SP_PAGE) {
		q = mmap((void *)a, SP_PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (q == MAP_FAILED)
			q = NULL;
		if (a == 0)
			break;
	}
	for (a = end; !q && a < ((end + SP_HPAGE - 1) & ~(SP_HPAGE - 1)); a += SP_PAGE) {
		q = mmap((void *)a, SP_PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (q == MAP_FAILED)
			q = NULL;
	}
	if (!q)
		SKIP(return, "no free page next to [vvar] in its 2 MiB range");
	q[0] = 1;
	EXPECT_EQ(1, q[0]);
	EXPECT_NE(0, sp_pfn(q));
	expect_deltas(_metadata, &self->before, 0, 0, -1);
	munmap(q, SP_PAGE);
}

TEST_HARNESS_MAIN
