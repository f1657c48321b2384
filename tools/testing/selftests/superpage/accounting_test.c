// SPDX-License-Identifier: GPL-2.0
/*
 * Accounting of reservations: the nr_superpage_resv and
 * nr_superpage_resv_unused gauges of /proc/vmstat, SuperpageUnused in
 * /proc/meminfo and its share of MemAvailable, through creation, growth,
 * MADV_DONTNEED, refill, fork, a split, promotion and munmap.
 *
 * The gauges are node counters with per-CPU deltas; every read first
 * folds them with /proc/sys/vm/stat_refresh, so the deltas are exact in
 * a quiet guest.  The pool of zeroed frames is kept empty (it would take
 * and free memory in the background), but in prezeroed_pool, which checks
 * its own gauges.
 */
#define _GNU_SOURCE
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "superpage_util.h"

#define STAT_REFRESH	"/proc/sys/vm/stat_refresh"

struct sp_gauges {
	long resv, unused, meminfo_kb, free_kb, avail_kb;
};

static void sp_gauges_read(struct sp_gauges *g)
{
	sp_write_file(STAT_REFRESH, "1");
	g->resv = sp_vmstat("nr_superpage_resv");
	g->unused = sp_vmstat("nr_superpage_resv_unused");
	g->meminfo_kb = sp_meminfo_kb("SuperpageUnused");
	g->free_kb = sp_meminfo_kb("MemFree");
	g->avail_kb = sp_meminfo_kb("MemAvailable");
}

FIXTURE(acct) {
	struct sp_settings saved;
	struct sp_gauges before;
};

FIXTURE_SETUP(acct)
{
	self->saved.pushed = 0;
	if (geteuid())
		SKIP(return, "must be run as root (sysctl, stat_refresh)");
	if (access(SP_ENABLED, F_OK))
		SKIP(return, "no %s: CONFIG_SUPERPAGE=n", SP_ENABLED);
	if (sp_vmstat("nr_superpage_resv") < 0)
		SKIP(return, "this kernel has no reservation gauges");
	sp_settings_push(&self->saved);
	ASSERT_EQ(0, sp_write_int(SP_THRESHOLD, SP_NR));
	sp_cluster_off();
	/* No frame zeroed in the background moves MemFree meanwhile. */
	sp_prezero_set(0);
	ASSERT_EQ(0, sp_write_int(SP_ENABLED, 2));
	sp_gauges_read(&self->before);
	ASSERT_LE(0, self->before.resv);
	ASSERT_LE(0, self->before.unused);
	ASSERT_EQ(self->before.unused * 4, self->before.meminfo_kb);
}

FIXTURE_TEARDOWN_PARENT(acct)
{
	sp_settings_pop(&self->saved);
}

/* The gauges moved by @resv reservations and @unused unused pages. */
static void expect_gauges(struct __test_metadata *_metadata,
			  const struct sp_gauges *before, long resv,
			  long unused)
{
	struct sp_gauges now;

	sp_gauges_read(&now);
	EXPECT_EQ(resv, now.resv - before->resv)
		TH_LOG("nr_superpage_resv moved by %ld, want %ld",
		       now.resv - before->resv, resv);
	EXPECT_EQ(unused, now.unused - before->unused)
		TH_LOG("nr_superpage_resv_unused moved by %ld, want %ld",
		       now.unused - before->unused, unused);
	EXPECT_EQ(now.unused * 4, now.meminfo_kb);
}

/* Creation, growth, MADV_DONTNEED, refill and munmap. */
TEST_F(acct, create_grow_dontneed_unmap)
{
	char *p = sp_map_aligned(SP_HPAGE);
	int k;

	ASSERT_NE(NULL, p);
	p[0] = 1;
	expect_gauges(_metadata, &self->before, 1, SP_NR - 1);
	for (k = 1; k < 10; k++)
		p[k * SP_PAGE] = 1;
	expect_gauges(_metadata, &self->before, 1, SP_NR - 10);
	ASSERT_EQ(0, madvise(p + 2 * SP_PAGE, 3 * SP_PAGE, MADV_DONTNEED));
	expect_gauges(_metadata, &self->before, 1, SP_NR - 7);
	p[3 * SP_PAGE] = 1;
	expect_gauges(_metadata, &self->before, 1, SP_NR - 8);
	ASSERT_EQ(0, munmap(p, SP_HPAGE));
	expect_gauges(_metadata, &self->before, 0, 0);
}

#define SP_MTHP_STATS	"/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/stats"

/* The 2 MiB mTHP split_deferred stat, or -1 without it. */
static long sp_mthp_split_deferred(void)
{
	return sp_read_int(SP_MTHP_STATS "/split_deferred");
}

/*
 * A new reservation sits on the deferred split queue as partially mapped,
 * but no THP was partly unmapped: thp_deferred_split_page and the 2 MiB
 * mTHP split_deferred stat do not move, through creation, growth and
 * MADV_DONTNEED of part of a reservation.
 */
TEST_F(acct, reservations_are_no_deferred_splits)
{
	long thp = sp_vmstat("thp_deferred_split_page");
	long mthp = sp_mthp_split_deferred();
	char *p = sp_map_aligned(8 * SP_HPAGE);
	int r;

	ASSERT_NE(NULL, p);
	ASSERT_LE(0, thp);
	for (r = 0; r < 8; r++) {
		p[r * SP_HPAGE] = 1;
		p[r * SP_HPAGE + SP_PAGE] = 1;
	}
	ASSERT_EQ(0, madvise(p + SP_PAGE, SP_PAGE, MADV_DONTNEED));
	expect_gauges(_metadata, &self->before, 8, 8 * SP_NR - 15);
	EXPECT_EQ(thp, sp_vmstat("thp_deferred_split_page"));
	if (mthp >= 0)
		EXPECT_EQ(mthp, sp_mthp_split_deferred());
	munmap(p, 8 * SP_HPAGE);
}

/*
 * The unused pages count as available: MemAvailable includes them, where
 * MemFree does not.  Free memory moves in 2 MiB steps through the per-CPU
 * page lists (a freed order-9 page waits there, outside MemFree, and the
 * reservation may be taken from there), so the check is on the difference
 * of the two drops, which must be the reservation's unused pages.
 */
TEST_F(acct, unused_pages_are_available)
{
	char *p = sp_map_aligned(SP_HPAGE);
	long free_drop, avail_drop;
	struct sp_gauges now;

	ASSERT_NE(NULL, p);
	p[0] = 1;
	sp_gauges_read(&now);
	free_drop = self->before.free_kb - now.free_kb;
	avail_drop = self->before.avail_kb - now.avail_kb;
	TH_LOG("MemFree -%ld kB, MemAvailable -%ld kB", free_drop, avail_drop);
	EXPECT_GE(256, labs(free_drop - avail_drop - (SP_NR - 1) * 4));
	EXPECT_EQ((SP_NR - 1) * 4, now.meminfo_kb - self->before.meminfo_kb);
	munmap(p, SP_HPAGE);
}

/* Fork shares the mapped pages: nothing moves, also when the child exits. */
TEST_F(acct, fork_and_exit)
{
	char *p = sp_map_aligned(SP_HPAGE);
	int status, k;
	pid_t pid;

	ASSERT_NE(NULL, p);
	for (k = 0; k < 20; k++)
		p[k * SP_PAGE] = 1;
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid)
		_exit(p[5 * SP_PAGE] != 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	expect_gauges(_metadata, &self->before, 1, SP_NR - 20);
	munmap(p, SP_HPAGE);
	expect_gauges(_metadata, &self->before, 0, 0);
}

/*
 * A split (MADV_COLD of part of the range splits the folio) ends the
 * reservation and frees its unused pages; the mapped ones keep their data.
 */
TEST_F(acct, split_ends_reservation)
{
	char *p = sp_map_aligned(SP_HPAGE);
	uint64_t pfn5;
	int k;

	ASSERT_NE(NULL, p);
	for (k = 0; k < 10; k++)
		p[k * SP_PAGE] = (char)(k + 1);
	pfn5 = sp_pfn(p + 5 * SP_PAGE);
	ASSERT_EQ(0, madvise(p, 4 * SP_PAGE, MADV_COLD));
	expect_gauges(_metadata, &self->before, 0, 0);
	for (k = 0; k < 10; k++)
		ASSERT_EQ((char)(k + 1), p[k * SP_PAGE]);
	EXPECT_EQ(pfn5, sp_pfn(p + 5 * SP_PAGE));
	munmap(p, SP_HPAGE);
	expect_gauges(_metadata, &self->before, 0, 0);
}

/* Promotion turns the reservation into a huge page: it leaves the gauges. */
TEST_F(acct, promotion_ends_reservation)
{
	char *p = sp_map_aligned(SP_HPAGE);
	int k;

	ASSERT_NE(NULL, p);
	for (k = 0; k < SP_NR - 1; k++)
		p[k * SP_PAGE] = 1;
	expect_gauges(_metadata, &self->before, 1, 1);
	p[(SP_NR - 1) * SP_PAGE] = 1;
	ASSERT_EQ(2048, sp_wait_anon_huge(p, 2048, 2000));
	expect_gauges(_metadata, &self->before, 0, 0);
	munmap(p, SP_HPAGE);
	expect_gauges(_metadata, &self->before, 0, 0);
}

/*
 * The pool of zeroed frames (mm/superpage/prezero.c): nr_superpage_prezeroed
 * and SuperpagePrezeroed count its pages and MemAvailable counts them as
 * available; it fills to vm.superpage_prezero_frames and no further, a
 * smaller value frees the rest at once, dropping the kernel's caches (which
 * runs its shrinker) gives frames back, and switching the feature off
 * empties it.
 */
#define DROP_CACHES	"/proc/sys/vm/drop_caches"

static long prezeroed_pages(void)
{
	sp_write_file(STAT_REFRESH, "1");
	return sp_vmstat("nr_superpage_prezeroed");
}

TEST_F(acct, prezeroed_pool)
{
	struct sp_gauges full;
	long freed;

	if (access(SP_PREZERO, F_OK))
		SKIP(return, "this kernel keeps no zeroed frames");
	ASSERT_EQ(0, prezeroed_pages());
	ASSERT_EQ(0, sp_write_int(SP_PREZERO, 8));
	ASSERT_EQ(8, sp_prezero_wait(8, 30000));
	usleep(200000);
	sp_gauges_read(&full);
	EXPECT_EQ(8 * SP_NR, prezeroed_pages());
	EXPECT_EQ(8 * 2048, sp_meminfo_kb("SuperpagePrezeroed"));
	/*
	 * MemAvailable counts the 16 MiB as available: beyond MemFree by
	 * 16 MiB more than before.  (MemFree itself may not move by all
	 * of it: a freed 2 MiB block on a per-CPU list is not in MemFree.)
	 */
	EXPECT_GE(1024, labs(full.avail_kb - full.free_kb -
			     (self->before.avail_kb - self->before.free_kb) -
			     8 * 2048))
		TH_LOG("MemAvailable %+ld kB, MemFree %+ld kB",
		       full.avail_kb - self->before.avail_kb,
		       full.free_kb - self->before.free_kb);

	freed = sp_vmstat("superpage_prezero_freed");
	ASSERT_EQ(0, sp_write_int(SP_PREZERO, 2));
	EXPECT_EQ(2 * SP_NR, prezeroed_pages());
	EXPECT_EQ(6, sp_vmstat("superpage_prezero_freed") - freed);

	ASSERT_EQ(0, sp_write_int(SP_PREZERO, 8));
	ASSERT_EQ(8, sp_prezero_wait(8, 30000));
	freed = sp_vmstat("superpage_prezero_freed");
	ASSERT_EQ(0, sp_write_file(DROP_CACHES, "2"));
	EXPECT_GT(4 * SP_NR, prezeroed_pages());
	EXPECT_LT(4, sp_vmstat("superpage_prezero_freed") - freed);

	ASSERT_EQ(8, sp_prezero_wait(8, 30000));
	ASSERT_EQ(0, sp_write_int(SP_ENABLED, 0));
	EXPECT_EQ(0, prezeroed_pages());
	EXPECT_EQ(0, sp_meminfo_kb("SuperpagePrezeroed"));
	/* Off, nothing fills it. */
	usleep(1500 * 1000);
	EXPECT_EQ(0, prezeroed_pages());
}

TEST_HARNESS_MAIN
