// SPDX-License-Identifier: GPL-2.0
/*
 * Memory pressure: reservations are broken before anything in use is
 * swapped, the least recently grown first; a failed order-9 allocation
 * breaks stale reservations to make room; reclaim demotes superpages so
 * that their subpages are swapped one by one, and ksuperpaged promotes
 * them again, in place, once the pressure is over.  And, superpages on or
 * off, a fork child's MADV_FREE leaves its parent's swapped-in pages alone.
 *
 * Each test runs its workload in a memory cgroup of its own (cgroup v2,
 * created under /sys/fs/cgroup and removed afterwards) and reads what the
 * kernel did from /proc/vmstat (pswpout, superpage_*), the cgroup's
 * memory.events (oom_kill), /proc/self/pagemap and /proc/kpageflags (is a
 * page still part of a 2 MiB folio, at which PFN) and smaps.  Swap is
 * zram: if no swap is on, the fixture puts 512 MiB of swap on
 * /dev/zram0 and takes it off again at the end.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "superpage_util.h"

#define CG_ROOT		"/sys/fs/cgroup"
#define STAT_REFRESH	"/proc/sys/vm/stat_refresh"
#define ZRAM		"/dev/zram0"
#define ZRAM_SYS	"/sys/block/zram0"
#define ZRAM_SIZE	(512UL << 20)
#define MIB		(1024UL * 1024)

#define KPF_COMPOUND_HEAD	15
#define KPF_COMPOUND_TAIL	16

FIXTURE(pressure) {
	struct sp_settings saved;
	int swap_ours;
	char cg[128];
};

/* Write @val to the file @name of the cgroup @cg; 0 or an errno. */
static int cg_write(const char *cg, const char *name, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", cg, name);
	return sp_write_file(path, val);
}

/* The value of @key in the flat-keyed file @name of @cg, or -1. */
static long cg_key(const char *cg, const char *name, const char *key)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", cg, name);
	return sp_file_field(path, key, ' ');
}

/* The number in the file @name of @cg (memory.current), or -1. */
static long cg_long(const char *cg, const char *name)
{
	char path[256], buf[64];

	snprintf(path, sizeof(path), "%s/%s", cg, name);
	if (sp_read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	return atol(buf);
}

/* Is any swap area on? */
static int sp_swap_active(void)
{
	char line[256];
	int n = 0;
	FILE *f = fopen("/proc/swaps", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	return n > 1;
}

/*
 * Put ZRAM_SIZE of swap on /dev/zram0, writing the swap header (version
 * 1, no bad pages) as mkswap(8) would.  0 on success.
 */
static int sp_zram_swap_on(void)
{
	static char hdr[SP_PAGE];
	unsigned int *info = (unsigned int *)(hdr + 1024);
	char size[32];
	int fd;

	if (access(ZRAM_SYS "/disksize", W_OK))
		return -1;
	sp_write_file(ZRAM_SYS "/reset", "1");
	snprintf(size, sizeof(size), "%lu", ZRAM_SIZE);
	if (sp_write_file(ZRAM_SYS "/disksize", size))
		return -1;
	memset(hdr, 0, sizeof(hdr));
	info[0] = 1;				/* version */
	info[1] = ZRAM_SIZE / SP_PAGE - 1;	/* last_page */
	info[2] = 0;				/* nr_badpages */
	memcpy(hdr + SP_PAGE - 10, "SWAPSPACE2", 10);
	fd = open(ZRAM, O_WRONLY);
	if (fd < 0)
		return -1;
	if (write(fd, hdr, sizeof(hdr)) != sizeof(hdr)) {
		close(fd);
		return -1;
	}
	fsync(fd);
	close(fd);
	return swapon(ZRAM, 0);
}

FIXTURE_SETUP(pressure)
{
	char ctl[256];

	self->saved.pushed = 0;
	if (geteuid())
		SKIP(return, "must be run as root (cgroups, swap, sysctl)");
	if (access(SP_ENABLED, F_OK))
		SKIP(return, "no %s: CONFIG_SUPERPAGE=n", SP_ENABLED);
	if (access(SP_DEMOTE, F_OK) || sp_vmstat("superpage_resv_broken") < 0)
		SKIP(return, "this kernel has no superpage memory pressure");
	if (sp_read_file(CG_ROOT "/cgroup.controllers", ctl, sizeof(ctl)) <= 0 ||
	    !strstr(ctl, "memory"))
		SKIP(return, "no cgroup v2 memory controller at %s", CG_ROOT);
	if (!sp_swap_active()) {
		if (sp_zram_swap_on())
			SKIP(return, "no swap, and none could be put on %s",
			     ZRAM);
		self->swap_ours = 1;
	}

	sp_settings_push(&self->saved);

	snprintf(self->cg, sizeof(self->cg), CG_ROOT "/sp_pressure_%d",
		 getpid());
	ASSERT_EQ(0, sp_write_file(CG_ROOT "/cgroup.subtree_control",
				   "+memory"));
	ASSERT_EQ(0, mkdir(self->cg, 0755));
	ASSERT_EQ(0, cg_write(self->cg, "memory.swap.max", "max"));

	/* khugepaged off: any PMD mapping below is ksuperpaged's work. */
	ASSERT_EQ(0, sp_write_file(SP_THP_ENABLED, "never"));
	ASSERT_EQ(0, sp_write_int(SP_THRESHOLD, SP_NR));
	ASSERT_EQ(0, sp_write_int(SP_SCAN_SLEEP, 10));
	ASSERT_EQ(0, sp_write_int(SP_DEMOTE, 1));
	ASSERT_EQ(0, sp_write_int(SP_ENABLED, 2));
}

FIXTURE_TEARDOWN_PARENT(pressure)
{
	int k;

	if (!self->saved.pushed)
		return;
	sp_settings_pop(&self->saved);
	for (k = 0; k < 50 && self->cg[0] && rmdir(self->cg) && errno == EBUSY;
	     k++)
		usleep(20000);
	if (self->swap_ours) {
		swapoff(ZRAM);
		sp_write_file(ZRAM_SYS "/reset", "1");
	}
}

/* Move the calling process into the cgroup @cg. */
static int cg_enter(const char *cg)
{
	return cg_write(cg, "cgroup.procs", "0");
}

/* Page @k of a test holds this value in its first word. */
static unsigned long sp_word(unsigned long k, unsigned long salt)
{
	return (k + 1) * 0x9e3779b97f4a7c15UL ^ salt;
}

/* The /proc/kpageflags bits of @pfn, or 0. */
static uint64_t sp_kpageflags(uint64_t pfn)
{
	uint64_t flags = 0;
	int fd = open("/proc/kpageflags", O_RDONLY);

	if (fd < 0)
		return 0;
	if (pread(fd, &flags, sizeof(flags), pfn * sizeof(flags)) !=
	    sizeof(flags))
		flags = 0;
	close(fd);
	return flags;
}

/* Is the page mapped at @addr part of a large folio? */
static int sp_in_large_folio(const void *addr)
{
	uint64_t pfn = sp_pfn(addr);

	return pfn && (sp_kpageflags(pfn) & (1ULL << KPF_COMPOUND_HEAD |
					       1ULL << KPF_COMPOUND_TAIL));
}

/*
 * Fork a child that enters @cg, maps @size bytes, writes one word in each
 * page at @stride, and reads them all back.  Returns its wait status;
 * exit code 2 means corrupt data.
 */
static int sp_sparse_child(const char *cg, size_t size, size_t stride)
{
	unsigned long off;
	int status = -1;
	char *p;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		if (cg_enter(cg))
			_exit(3);
		p = sp_map_aligned(size);
		if (!p)
			_exit(4);
		for (off = 0; off < size; off += stride)
			*(unsigned long *)(p + off) = sp_word(off / SP_PAGE, 1);
		for (off = 0; off < size; off += stride)
			if (*(unsigned long *)(p + off) !=
			    sp_word(off / SP_PAGE, 1))
				_exit(2);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	return status;
}

/*
 * The sparse benchmark case: 512 MiB mapped, one 4 KiB page touched in every 64 KiB
 * (32 MiB of data), in a 160 MiB memory cgroup.  First with the feature
 * off and THP "always" (stock 6.12, whose figure is printed), then with
 * superpages on: the reservations are broken before anything is swapped,
 * so not one page goes to swap, and nothing is OOM-killed.
 */
TEST_F(pressure, sparse_memcg_breaks_reservations_not_swap)
{
	long swp, broken, oom, stock_swp, stock_oom;
	int status;

	ASSERT_EQ(0, cg_write(self->cg, "memory.max", "160M"));

	ASSERT_EQ(0, sp_write_int(SP_ENABLED, 0));
	ASSERT_EQ(0, sp_write_file(SP_THP_ENABLED, "always"));
	swp = sp_vmstat("pswpout");
	oom = cg_key(self->cg, "memory.events", "oom_kill");
	status = sp_sparse_child(self->cg, 512 * MIB, 64 << 10);
	stock_swp = sp_vmstat("pswpout") - swp;
	stock_oom = cg_key(self->cg, "memory.events", "oom_kill") - oom;
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("stock THP run: wait status %#x", status);
	ASSERT_EQ(0, sp_write_file(SP_THP_ENABLED, "never"));

	ASSERT_EQ(0, sp_write_int(SP_ENABLED, 2));
	swp = sp_vmstat("pswpout");
	broken = sp_vmstat("superpage_resv_broken");
	oom = cg_key(self->cg, "memory.events", "oom_kill");
	status = sp_sparse_child(self->cg, 512 * MIB, 64 << 10);
	swp = sp_vmstat("pswpout") - swp;
	broken = sp_vmstat("superpage_resv_broken") - broken;
	oom = cg_key(self->cg, "memory.events", "oom_kill") - oom;

	ksft_print_msg("sparse 512 MiB, 1 page per 64 KiB, 160 MiB memcg\n");
	ksft_print_msg("stock THP always: %ld pages swapped out, %ld OOM kills\n",
		       stock_swp, stock_oom);
	ksft_print_msg("superpages: %ld pages swapped out, %ld OOM kills, %ld broken\n",
		       swp, oom, broken);
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("killed: status %#x", status);
	ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("2: data corrupt");
	EXPECT_EQ(0, oom);
	EXPECT_EQ(0, swp);
	EXPECT_LT(0, broken);
}

/*
 * Two reservations: A created first, B second, then A grown again after a
 * pause (by writes far from its first pages, which fault clusters may
 * have mapped ahead already).  A pressure that one break satisfies (memory.reclaim of 4 KiB)
 * breaks B, the least recently grown, not A, the oldest; the gauges lose
 * B and its unused pages, exactly (after vm.stat_refresh).  The workload
 * runs in a child that allocates nothing else in the cgroup, so no other
 * reservation of the cgroup competes.
 */
TEST_F(pressure, least_recently_grown_breaks_first)
{
	long broken = sp_vmstat("superpage_resv_broken");
	long resv, unused, bmapped = 0;
	char path[256];
	int status = -1, k, fd;
	char *a, *b;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/memory.reclaim", self->cg);
	/* The stdio buffers of sp_vmstat() come from memory charged here. */
	sp_vmstat("nr_superpage_resv");
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (cg_enter(self->cg))
			_exit(3);
		a = sp_map_aligned(SP_HPAGE);
		b = sp_map_aligned(SP_HPAGE);
		if (!a || !b)
			_exit(4);
		for (k = 0; k < 8; k++)
			a[k * SP_PAGE] = 1;
		for (k = 0; k < 8; k++)
			b[k * SP_PAGE] = 1;
		usleep(200000);
		/* Far from the first 8 pages, which clusters filled ahead. */
		for (k = 256; k < 264; k++)
			a[k * SP_PAGE] = 1;
		if (!sp_in_large_folio(a) || !sp_in_large_folio(b))
			_exit(5);
		/* What B maps: its 8 pages and any that clusters mapped. */
		for (k = 0; k < SP_NR; k++)
			bmapped += !!(sp_pagemap(b + k * SP_PAGE) & PM_PRESENT);
		sp_write_file(STAT_REFRESH, "1");
		resv = sp_vmstat("nr_superpage_resv");
		unused = sp_vmstat("nr_superpage_resv_unused");
		fd = open(path, O_WRONLY);
		if (fd < 0 || write(fd, "4096", 4) != 4)
			_exit(6);
		close(fd);
		if (!sp_in_large_folio(a))
			_exit(7);
		if (sp_in_large_folio(b))
			_exit(8);
		/* The gauges lost B and its unused pages, exactly. */
		sp_write_file(STAT_REFRESH, "1");
		if (resv - sp_vmstat("nr_superpage_resv") != 1 ||
		    unused - sp_vmstat("nr_superpage_resv_unused") !=
		    SP_NR - bmapped)
			_exit(9);
		for (k = 0; k < 8; k++)
			if (a[k * SP_PAGE] != 1 || a[(256 + k) * SP_PAGE] != 1 ||
			    b[k * SP_PAGE] != 1)
				_exit(2);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("status %#x", status);
	/* 5: no reservations; 7: A was broken; 8: B was not; 9: gauges. */
	ASSERT_EQ(0, WEXITSTATUS(status));
	EXPECT_LE(1, sp_vmstat("superpage_resv_broken") - broken);
}

/*
 * The order of last growth holds at any queue length, not only among the
 * queue entries that one lookup looks at.  300 sparse reservations (more
 * than the 256 entries of a lookup) are created in order, then all but
 * the last 20 grow by one page, in order: the 20 are now the least
 * recently grown, although 280 were created before them.  A
 * memory.reclaim of 30 MiB (which 16 of them cover, 15 do not) must
 * break only some of those 20, none of the 280, and swap out nothing.
 */
#define LRG_RANGES	300
#define LRG_STALE	20

TEST_F(pressure, least_recently_grown_first_at_any_length)
{
	size_t size = LRG_RANGES * SP_HPAGE;
	int status = -1, r, fd, nstale = 0;
	long swp, broken;
	char path[256];
	char *p;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/memory.reclaim", self->cg);
	swp = sp_vmstat("pswpout");
	broken = sp_vmstat("superpage_resv_broken");
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (cg_enter(self->cg))
			_exit(3);
		p = sp_map_aligned(size);
		if (!p)
			_exit(4);
		for (r = 0; r < LRG_RANGES; r++)
			*(unsigned long *)(p + r * SP_HPAGE) = sp_word(r, 5);
		usleep(50000);
		for (r = 0; r < LRG_RANGES - LRG_STALE; r++)
			*(unsigned long *)(p + r * SP_HPAGE + SP_PAGE) =
				sp_word(r, 6);
		for (r = 0; r < LRG_RANGES; r++)
			if (!sp_in_large_folio(p + r * SP_HPAGE))
				_exit(5);
		fd = open(path, O_WRONLY);
		if (fd < 0 || write(fd, "30M", 3) != 3)
			_exit(6);
		close(fd);
		/* Not one of the recently grown ones is broken. */
		for (r = 0; r < LRG_RANGES - LRG_STALE; r++)
			if (!sp_in_large_folio(p + r * SP_HPAGE))
				_exit(7);
		for (; r < LRG_RANGES; r++)
			nstale += !sp_in_large_folio(p + r * SP_HPAGE);
		/* 30 MiB takes at least 16 breaks of 511 unused pages. */
		if (nstale < 16)
			_exit(8);
		for (r = 0; r < LRG_RANGES; r++) {
			if (*(unsigned long *)(p + r * SP_HPAGE) != sp_word(r, 5))
				_exit(2);
			if (r < LRG_RANGES - LRG_STALE &&
			    *(unsigned long *)(p + r * SP_HPAGE + SP_PAGE) !=
			    sp_word(r, 6))
				_exit(2);
		}
		_exit(0);
	}
	waitpid(pid, &status, 0);
	swp = sp_vmstat("pswpout") - swp;
	broken = sp_vmstat("superpage_resv_broken") - broken;
	ksft_print_msg("300 sparse, 280 grown again, reclaim 30 MiB: %ld broken, %ld swapped out\n",
		       broken, swp);
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("status %#x", status);
	/* 5: no reservation; 7: a recently grown one broken; 8: too few. */
	ASSERT_EQ(0, WEXITSTATUS(status));
	EXPECT_LE(16, broken);
	EXPECT_EQ(0, swp);
}

/*
 * Promoted ranges stay on the deferred split queue (no longer partially
 * mapped) until the deferred split shrinker drops them, ahead of the
 * reservations created after them.  With 272 promoted ranges in a memcg
 * (more than the 256 queue entries one lookup looks at) and 16 sparse
 * reservations behind them, a memory.reclaim of 30 MiB (which the 511
 * unused pages of each of the 16 cover, and 15 do not) must break the 16
 * sparse reservations, and swap out nothing.
 */
TEST_F(pressure, promoted_ranges_do_not_hide_reservations)
{
	size_t dense = 272 * SP_HPAGE, off;
	long swp, broken;
	int status = -1, k, fd;
	char path[256];
	char *d, *s;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/memory.reclaim", self->cg);
	swp = sp_vmstat("pswpout");
	broken = sp_vmstat("superpage_resv_broken");
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (cg_enter(self->cg))
			_exit(3);
		d = sp_map_aligned(dense);
		s = sp_map_aligned(16 * SP_HPAGE);
		if (!d || !s)
			_exit(4);
		for (off = 0; off < dense; off += SP_PAGE)
			*(unsigned long *)(d + off) = sp_word(off / SP_PAGE, 3);
		if (sp_wait_anon_huge(d, dense >> 10, 20000) < (long)(dense >> 10))
			_exit(5);
		for (k = 0; k < 16; k++)
			*(unsigned long *)(s + k * SP_HPAGE) = sp_word(k, 4);
		for (k = 0; k < 16; k++)
			if (!sp_in_large_folio(s + k * SP_HPAGE))
				_exit(6);
		fd = open(path, O_WRONLY);
		if (fd < 0 || write(fd, "30M", 3) != 3)
			_exit(7);
		close(fd);
		for (k = 0; k < 16; k++)
			if (sp_in_large_folio(s + k * SP_HPAGE))
				_exit(8);
		for (off = 0; off < dense; off += SP_PAGE)
			if (*(unsigned long *)(d + off) !=
			    sp_word(off / SP_PAGE, 3))
				_exit(2);
		for (k = 0; k < 16; k++)
			if (*(unsigned long *)(s + k * SP_HPAGE) != sp_word(k, 4))
				_exit(2);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	swp = sp_vmstat("pswpout") - swp;
	broken = sp_vmstat("superpage_resv_broken") - broken;
	ksft_print_msg("272 promoted, 16 sparse, reclaim 30 MiB: %ld broken, %ld swapped out\n",
		       broken, swp);
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("status %#x", status);
	/* 5: not promoted; 7: memory.reclaim; 8: a sparse one not broken. */
	ASSERT_EQ(0, WEXITSTATUS(status));
	EXPECT_LE(16, broken);
	EXPECT_EQ(0, swp);
}

/*
 * Unzeroed memory never reaches swap: a reservation with 10 of its 512
 * subpages written is paged out (MADV_PAGEOUT); it is split first, and
 * exactly its 10 pages are written to swap.  They read back intact, and
 * the holes read zero.
 */
TEST_F(pressure, partial_reservation_swaps_only_used_pages)
{
	long swp, broken;
	char *p;
	int k;

	ASSERT_EQ(0, cg_enter(self->cg));
	p = sp_map_aligned(SP_HPAGE);
	ASSERT_NE(NULL, p);
	for (k = 0; k < 10; k++)
		memset(p + k * 7 * SP_PAGE, k + 1, SP_PAGE);
	ASSERT_TRUE(sp_in_large_folio(p));
	swp = sp_vmstat("pswpout");
	broken = sp_vmstat("superpage_resv_broken");
	ASSERT_EQ(0, madvise(p, SP_HPAGE, MADV_PAGEOUT));
	EXPECT_EQ(10, sp_vmstat("pswpout") - swp);
	EXPECT_EQ(1, sp_vmstat("superpage_resv_broken") - broken);
	for (k = 0; k < SP_NR; k++) {
		char want = k % 7 || k / 7 >= 10 ? 0 : k / 7 + 1;

		if (p[k * SP_PAGE] != want ||
		    p[k * SP_PAGE + SP_PAGE - 1] != want) {
			EXPECT_EQ(want, p[k * SP_PAGE]) TH_LOG("page %d", k);
			break;
		}
	}
}

/* Fill @npages pages at @p with their words; check them; 0 if intact. */
static void sp_fill_words(char *p, unsigned long npages, unsigned long salt)
{
	unsigned long k;

	for (k = 0; k < npages; k++)
		*(unsigned long *)(p + k * SP_PAGE) = sp_word(k, salt);
}

static unsigned long sp_bad_words(char *p, unsigned long npages,
				  unsigned long salt)
{
	unsigned long k, bad = 0;

	for (k = 0; k < npages; k++)
		bad += *(unsigned long *)(p + k * SP_PAGE) != sp_word(k, salt);
	return bad;
}

/*
 * Page out @npages pages at @p that hold their words, read them back (a
 * read fault: zram swaps them in around the swap cache), fork a child
 * that MADV_FREEs them and exits, and page them out again.  Returns how
 * many words were lost, or -1 if the pages were not swapped out and in
 * as the scenario needs (so that a pass means something).
 */
static long sp_madv_free_in_child(char *p, unsigned long npages)
{
	unsigned long k, swapped = 0, present = 0;
	int status = -1, tries;
	pid_t pid;

	sp_fill_words(p, npages, 7);
	/*
	 * A whole range is promoted at the threshold: let ksuperpaged do it
	 * first, as MADV_PAGEOUT skips a folio that is locked meanwhile.
	 */
	if (npages == SP_NR && sp_read_int(SP_ENABLED))
		sp_wait_anon_huge(p, 2048, 2000);
	/* MADV_PAGEOUT is best effort: a folio busy elsewhere is skipped. */
	for (tries = 0; tries < 20 && swapped < npages * 3 / 4; tries++) {
		if (tries)
			usleep(50000);
		if (madvise(p, npages * SP_PAGE, MADV_PAGEOUT))
			return -1;
		for (swapped = 0, k = 0; k < npages; k++)
			swapped += !!(sp_pagemap(p + k * SP_PAGE) & PM_SWAP);
	}
	if (sp_bad_words(p, npages, 7))
		return npages;
	for (k = 0; k < npages; k++)
		present += !!sp_pfn(p + k * SP_PAGE);
	ksft_print_msg("%lu pages: %lu swapped out (%d MADV_PAGEOUT), %lu read back\n",
		       npages, swapped, tries, present);
	if (swapped < npages * 3 / 4 || present != npages)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid)
		_exit(madvise(p, npages * SP_PAGE, MADV_FREE) ? 1 : 0);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	if (madvise(p, npages * SP_PAGE, MADV_PAGEOUT))
		return -1;
	return sp_bad_words(p, npages, 7);
}

/*
 * A fork child's MADV_FREE must not free its parent's data.  Pages
 * swapped out to zram and read back are read around the swap cache, and
 * their swap entries freed: the folio then holds the only copy of its
 * data, mapped by a clean PTE.  Stock 6.12 left that folio clean, so that
 * the child's MADV_FREE lazily freed it and reclaim discarded it from the
 * parent too (62 of 64 pages read zero).  With superpages off, on 64
 * pages (THP never), and on, on a whole 2 MiB range (a reservation,
 * promoted before it is paged out), no page may be lost.
 */
TEST_F(pressure, madv_free_in_fork_child_keeps_parent_pages)
{
	static const struct {
		int enabled;
		unsigned long npages;
	} run[] = { { 0, 64 }, { 0, SP_NR }, { 2, SP_NR } };
	unsigned long i;
	char *p;
	long lost;

	for (i = 0; i < ARRAY_SIZE(run); i++) {
		ASSERT_EQ(0, sp_write_int(SP_ENABLED, run[i].enabled));
		p = sp_map_aligned(SP_HPAGE);
		ASSERT_NE(NULL, p);
		lost = sp_madv_free_in_child(p, run[i].npages);
		ksft_print_msg("superpage_enabled %d: %ld of %lu pages lost\n",
			       run[i].enabled, lost, run[i].npages);
		ASSERT_LE(0, lost) TH_LOG("not swapped out and in as needed");
		EXPECT_EQ(0, lost);
		munmap(p, SP_HPAGE);
	}
}

/*
 * Dense overcommit: 32 MiB promoted to superpages, then 64 MiB more, in a
 * 64 MiB memory cgroup.  Reclaim demotes superpages and swaps their
 * subpages; every byte reads back; nothing is OOM-killed.  Swapping some
 * 60 MiB to zram takes 10 s under TCG on an idle host, more than the
 * harness's default 30 s on a busy one: the limit is 120 s.
 */
TEST_F_TIMEOUT(pressure, dense_overcommit_demotes_and_swaps, 120)
{
	long demote = sp_vmstat("superpage_demote");
	long split = sp_vmstat("superpage_demote_split");
	long swp = sp_vmstat("pswpout");
	long oom = cg_key(self->cg, "memory.events", "oom_kill");
	char *a, *b;

	ASSERT_EQ(0, cg_write(self->cg, "memory.max", "64M"));
	ASSERT_EQ(0, cg_enter(self->cg));
	a = sp_map_aligned(32 * MIB);
	b = sp_map_aligned(64 * MIB);
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	sp_fill_words(a, 32 * MIB / SP_PAGE, 3);
	ASSERT_LT(16 * 1024, sp_wait_anon_huge(a, 32 * 1024, 3000))
		TH_LOG("the first 32 MiB were not promoted");
	sp_fill_words(b, 64 * MIB / SP_PAGE, 4);

	EXPECT_EQ(0, sp_bad_words(a, 32 * MIB / SP_PAGE, 3));
	EXPECT_EQ(0, sp_bad_words(b, 64 * MIB / SP_PAGE, 4));
	demote = sp_vmstat("superpage_demote") - demote;
	split = sp_vmstat("superpage_demote_split") - split;
	swp = sp_vmstat("pswpout") - swp;
	ksft_print_msg("demoted %ld, split %ld, pages swapped out %ld\n",
		       demote, split, swp);
	EXPECT_LT(0, demote);
	EXPECT_LT(0, split);
	EXPECT_LT(0, swp);
	EXPECT_EQ(0, cg_key(self->cg, "memory.events", "oom_kill") - oom);
}

/*
 * Pressure, then its end: 16 MiB of superpages, then memory.high at
 * 12 MiB makes reclaim demote them (and split and swap some).  While the
 * cgroup stays near its memory.high, the daemon (scanning every 10 ms)
 * promotes nothing again; once the limit is lifted and the data read
 * back, it promotes the demoted ranges again, in place: every range still
 * in a 2 MiB folio has its old PFN.  The scan is slowed down during
 * reclaim itself, so that the check under pressure has something to find.
 */
TEST_F(pressure, promoted_again_after_pressure)
{
	long demote, promote, huge, usage;
	unsigned long pfn[8];
	int k, inplace = 0;
	char high[32];
	char *a;

	ASSERT_EQ(0, cg_enter(self->cg));
	a = sp_map_aligned(16 * MIB);
	ASSERT_NE(NULL, a);
	sp_fill_words(a, 16 * MIB / SP_PAGE, 5);
	ASSERT_EQ(16 * 1024, sp_wait_anon_huge(a, 16 * 1024, 3000));
	for (k = 0; k < 8; k++)
		pfn[k] = sp_pfn(a + k * SP_HPAGE);

	ASSERT_EQ(0, sp_write_int(SP_SCAN_SLEEP, 60000));
	demote = sp_vmstat("superpage_demote");
	ASSERT_EQ(0, cg_write(self->cg, "memory.high", "12M"));
	demote = sp_vmstat("superpage_demote") - demote;
	ASSERT_LT(0, demote);

	/* The pressure stays: usage within 1/8 of memory.high. */
	usage = cg_long(self->cg, "memory.current");
	ASSERT_LT(0, usage);
	snprintf(high, sizeof(high), "%ld", usage + 512 * 1024);
	ASSERT_EQ(0, cg_write(self->cg, "memory.high", high));
	promote = sp_vmstat("superpage_promote");
	huge = sp_smaps_kb(a, "AnonHugePages");
	ASSERT_GT(16 * 1024, huge);
	ASSERT_EQ(0, sp_write_int(SP_SCAN_SLEEP, 10));
	usleep(300000);
	EXPECT_EQ(0, sp_vmstat("superpage_promote") - promote)
		TH_LOG("promoted again under pressure");

	ASSERT_EQ(0, cg_write(self->cg, "memory.high", "max"));
	EXPECT_EQ(0, sp_bad_words(a, 16 * MIB / SP_PAGE, 5));
	sp_wait_anon_huge(a, huge + 2048, 3000);
	EXPECT_LT(0, sp_vmstat("superpage_promote") - promote);
	EXPECT_LT(huge, sp_smaps_kb(a, "AnonHugePages"));
	for (k = 0; k < 8; k++) {
		if (!sp_in_large_folio(a + k * SP_HPAGE))
			continue;
		EXPECT_EQ(pfn[k], sp_pfn(a + k * SP_HPAGE))
			TH_LOG("range %d moved", k);
		inplace++;
	}
	ksft_print_msg("demoted %ld, %d of 8 ranges kept their 2 MiB folio\n",
		       demote, inplace);
	EXPECT_LT(0, inplace);
	EXPECT_EQ(0, sp_bad_words(a, 16 * MIB / SP_PAGE, 5));
}

/*
 * Fragmentation: stale reservations (one page used in each) take every
 * free 2 MiB block, until an order-9 allocation fails.  From then on, new
 * reservations still form: the fault path breaks stale ones
 * (superpage_resv_preempt) and compaction moves their used pages away
 * (kcompactd here: THP "never" gives the fault no direct compaction).
 */
TEST_F(pressure, stale_reservations_make_room_for_new_ones)
{
	long preempt = sp_vmstat("superpage_resv_preempt");
	long alloc, total_kb, nr, k, touched, after = 0, formed_after = 0;
	const long chunk = 64;	/* ranges per mapping */
	char **maps;

	ASSERT_EQ(0, cg_enter(self->cg));
	total_kb = sp_meminfo_kb("MemTotal");
	ASSERT_LT(0, total_kb);
	nr = (total_kb / 2048 + 64 + chunk - 1) / chunk * chunk;
	maps = calloc(nr / chunk, sizeof(*maps));
	ASSERT_NE(NULL, maps);

	for (k = 0; k < nr; k++) {
		char *p;

		if (!(k % chunk)) {
			maps[k / chunk] = sp_map_aligned(chunk * SP_HPAGE);
			ASSERT_NE(NULL, maps[k / chunk]);
		}
		p = maps[k / chunk] + (k % chunk) * SP_HPAGE;
		alloc = sp_vmstat("superpage_resv_alloc");
		*(unsigned long *)(p + (k % SP_NR) * SP_PAGE) = sp_word(k, 6);
		if (after) {
			formed_after += sp_vmstat("superpage_resv_alloc") > alloc;
			if (++after > 32)
				break;
			/* Time for kcompactd, which the failure woke. */
			usleep(20000);
		} else if (sp_vmstat("superpage_resv_preempt") > preempt) {
			after = 1;
		}
	}
	touched = k < nr ? k + 1 : nr;
	ksft_print_msg("%ld ranges touched, %ld reservations preempted\n",
		       touched, sp_vmstat("superpage_resv_preempt") - preempt);
	ksft_print_msg("%ld of the next 32 ranges got a reservation\n",
		       formed_after);
	ASSERT_LT(0, after) TH_LOG("no order-9 allocation ever failed");
	EXPECT_LT(0, formed_after);
	for (k = 0; k < touched; k++) {
		char *p = maps[k / chunk] + (k % chunk) * SP_HPAGE;
		unsigned long w = *(unsigned long *)(p + (k % SP_NR) * SP_PAGE);

		if (w != sp_word(k, 6)) {
			EXPECT_EQ(sp_word(k, 6), w) TH_LOG("range %ld", k);
			break;
		}
	}
}

/*
 * Regression tests: each guards a bug that was found and fixed.
 */

struct sp_populate {
	char *p;
	size_t size;
};

static void *sp_populate_thread(void *arg)
{
	struct sp_populate *a = arg;

	madvise(a->p, a->size, MADV_POPULATE_WRITE);
	return NULL;
}

/*
 * The child of held_mmap_lock_does_not_stall_the_daemon: fill 511 pages
 * of a range, enter @cg, start a thread that populates 256 MiB there
 * (under the mmap read lock, throttled by memory.high on every charge),
 * and once the cgroup is over memory.high fill the range's last page, so
 * that its hint sends the daemon to this mm.  Then write a byte to @fd and
 * wait to be killed.
 */
static void sp_lock_holder(const char *cg, int fd)
{
	struct sp_populate a = { .size = 256 * MIB };
	pthread_t t;
	char *range;
	int k;

	range = sp_map_aligned(SP_HPAGE);
	a.p = mmap(NULL, a.size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!range || a.p == MAP_FAILED)
		_exit(3);
	/* 4 KiB pages: a charge, and a throttle, every 64 pages. */
	madvise(a.p, a.size, MADV_NOHUGEPAGE);
	for (k = 0; k < SP_NR - 1; k++)
		range[k * SP_PAGE] = 1;
	if (cg_enter(cg) || pthread_create(&t, NULL, sp_populate_thread, &a))
		_exit(4);
	for (k = 0; k < 1000 && cg_key(cg, "memory.events", "high") <= 0; k++)
		usleep(10000);
	if (k == 1000)
		_exit(5);
	range[(SP_NR - 1) * SP_PAGE] = 1;
	if (write(fd, "x", 1) != 1)
		_exit(6);
	for (;;)
		pause();
}

/* AnonHugePages of the whole of process @pid, in KiB, or -1. */
static long sp_pid_anon_huge_kb(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", pid);
	return sp_file_field(path, "AnonHugePages", ':');
}

/*
 * ksuperpaged took the mmap write lock with mmap_write_lock(): behind a
 * task holding an mm's lock for minutes, the one daemon promoted nothing
 * in any mm (the 30-minute "make stress" run: six minutes, three
 * hung-task reports).  A task throttled at its cgroup's memory.high holds
 * its mmap read lock while it sleeps, if it was populating.  Here a child
 * does that, with no swap to reclaim to, and completes a range while it
 * does; then this process fills a range.  Both must be promoted within
 * 5 s while the child still holds its lock: promotion takes the mmap lock
 * for read only, so the child's read lock does not keep it out.
 */
TEST_F(pressure, held_mmap_lock_does_not_stall_the_daemon)
{
	long busy = sp_vmstat("superpage_promote_failed_busy"), huge, child = -1;
	int sync[2], status, k;
	char *p, c;
	pid_t pid;

	sp_cluster_off();
	ASSERT_EQ(0, pipe(sync));
	ASSERT_EQ(0, cg_write(self->cg, "memory.swap.max", "0"));
	ASSERT_EQ(0, cg_write(self->cg, "memory.high", "1M"));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(sync[0]);
		sp_lock_holder(self->cg, sync[1]);
	}
	close(sync[1]);
	k = read(sync[0], &c, 1);
	close(sync[0]);
	if (k != 1) {
		waitpid(pid, &status, 0);
		ASSERT_EQ(1, k) TH_LOG("the child failed: %d",
				       WEXITSTATUS(status));
	}

	p = sp_map_aligned(SP_HPAGE);
	ASSERT_NE(NULL, p);
	for (k = 0; k < SP_NR; k++)
		p[k * SP_PAGE] = 2;
	huge = sp_wait_anon_huge(p, 2048, 5000);
	for (k = 0; k < 500; k++) {
		child = sp_pid_anon_huge_kb(pid);
		if (child >= 2048)
			break;
		usleep(10000);
	}
	/* The child must still have been populating all along. */
	EXPECT_EQ(0, waitpid(pid, &status, WNOHANG));
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	ksft_print_msg("%ld KiB PMD-mapped here, %ld KiB in the child; %s %ld\n",
		       huge, child, "promotions given up as busy",
		       sp_vmstat("superpage_promote_failed_busy") - busy);
	EXPECT_EQ(2048, huge);
	EXPECT_EQ(2048, child)
		TH_LOG("the child's range, under its mmap read lock, stayed 4 KiB");
	for (k = 0; k < SP_NR; k++)
		ASSERT_EQ(2, p[k * SP_PAGE]);
	munmap(p, SP_HPAGE);
}

TEST_HARNESS_MAIN
