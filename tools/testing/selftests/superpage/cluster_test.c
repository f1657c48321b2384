// SPDX-License-Identifier: GPL-2.0
/*
 * Fault clusters: a fault that continues a sequential fill of a
 * reservation, or falls in a naturally aligned block of which a quarter is
 * already used, maps a cluster of subpages around the faulting one (up to
 * 2^vm.superpage_cluster_max_order), and a scattered fault in a sparse
 * range maps its own subpage only.  The tests count faults with
 * getrusage() (minor faults), read residency and PFNs from smaps and
 * /proc/self/pagemap, and the superpage_cluster_* counters.
 *
 * The fixture switches the feature on (mode 2) with clusters of up to 64
 * subpages (order 6), the default threshold (512), a fault zeroing at most
 * 8 subpages itself (the default) and a 10 ms scan.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "superpage_util.h"

#define MIB	(1024UL * 1024)

FIXTURE(cluster) {
	struct sp_settings saved;
};

FIXTURE_SETUP(cluster)
{
	self->saved.pushed = 0;
	if (geteuid())
		SKIP(return, "must be run as root (pagemap PFNs, sysctl)");
	if (access(SP_ENABLED, F_OK))
		SKIP(return, "no %s: CONFIG_SUPERPAGE=n", SP_ENABLED);
	if (access(SP_CLUSTER, F_OK) ||
	    sp_vmstat("superpage_cluster_mapped") < 0)
		SKIP(return, "this kernel has no fault clusters");
	sp_settings_push(&self->saved);
	ASSERT_EQ(0, sp_write_int(SP_THRESHOLD, SP_NR));
	ASSERT_EQ(0, sp_write_int(SP_SCAN_SLEEP, 10));
	ASSERT_EQ(0, sp_write_int(SP_CLUSTER, 6));
	if (!access(SP_FAULT_ZERO, F_OK))
		ASSERT_EQ(0, sp_write_int(SP_FAULT_ZERO, SP_FAULT_ZERO_DEFAULT));
	ASSERT_EQ(0, sp_write_int(SP_ENABLED, 2));
}

FIXTURE_TEARDOWN_PARENT(cluster)
{
	sp_settings_pop(&self->saved);
}

static long sp_minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static unsigned long sp_word(unsigned long k)
{
	return (k + 1) * 0x9e3779b97f4a7c15UL;
}

/*
 * For a page whose only write was the word at offset 64: the offset of the
 * first nonzero byte outside that word, or -1.
 */
static long sp_stray_byte(const char *page)
{
	long off = sp_first_nonzero(page, 64);

	if (off >= 0)
		return off;
	off = sp_first_nonzero(page + 72, SP_PAGE - 72);
	return off < 0 ? -1 : off + 72;
}

/* Pages of [@p, @p + @npages pages) that pagemap shows present. */
static long sp_present(const char *p, long npages)
{
	long k, n = 0;

	for (k = 0; k < npages; k++)
		n += !!(sp_pagemap(p + k * SP_PAGE) & PM_PRESENT);
	return n;
}

/*
 * A sequential write of 64 MiB, one word per page.  Where a fault zeroes
 * whole clusters (vm.superpage_fault_zero_pages 512) it takes at most 20
 * faults per 2 MiB (14 with clusters of up to 64 subpages: 1, 1, 2, 4,
 * ... 32, then 64 at a time).  At the default, a fault zeroes at most 8
 * subpages itself and maps more only as far as a worker zeroed them ahead
 * (superpage_zero_ahead_mapped): so at least one fault per 8 subpages that
 * were not zeroed ahead.  How many faults that takes depends on how much
 * CPU time the worker gets (from about 37 per 2 MiB on an idle host to 72
 * when it gets none, more when a fault finds the folio locked), so it is
 * reported here and measured by the benchmark, not asserted.  Every page
 * reads back, and all of it is PMD-mapped within 2 s of the last write.
 */
static void sequential_fill(struct __test_metadata *_metadata, int zero_pages,
			    long max_faults)
{
	const long npages = 64 * MIB / SP_PAGE;
	long faults, mapped, ahead, huge, k;
	char *p = sp_map_aligned(64 * MIB);

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, sp_write_int(SP_FAULT_ZERO, zero_pages));
	mapped = sp_vmstat("superpage_cluster_mapped");
	ahead = sp_vmstat("superpage_zero_ahead_mapped");
	faults = sp_minflt();
	for (k = 0; k < npages; k++)
		*(unsigned long *)(p + k * SP_PAGE) = sp_word(k);
	faults = sp_minflt() - faults;
	huge = sp_wait_anon_huge(p, 64 * 1024, 2000);
	mapped = sp_vmstat("superpage_cluster_mapped") - mapped;
	ahead = sp_vmstat("superpage_zero_ahead_mapped") - ahead;
	ksft_print_msg("64 MiB sequential write, fault zeroing %d: %ld faults (%.1f per 2 MiB)\n",
		       zero_pages, faults, faults / 32.0);
	ksft_print_msg("%ld subpages mapped ahead (%ld zeroed ahead), %ld kB PMD-mapped\n",
		       mapped, ahead, huge);
	if (max_faults)
		EXPECT_GE(max_faults * 32, faults);
	EXPECT_LE(npages - ahead, zero_pages * faults);
	EXPECT_LE(npages - faults, mapped);
	EXPECT_EQ(64 * 1024, huge);
	for (k = 0; k < npages; k++)
		if (*(unsigned long *)(p + k * SP_PAGE) != sp_word(k)) {
			EXPECT_EQ(sp_word(k), *(unsigned long *)(p + k * SP_PAGE))
				TH_LOG("page %ld", k);
			break;
		}
	munmap(p, 64 * MIB);
}

TEST_F(cluster, sequential_write_few_faults)
{
	sequential_fill(_metadata, SP_NR, 20);
	sequential_fill(_metadata, SP_FAULT_ZERO_DEFAULT, 0);
}

/*
 * Sparse: one page per 64 KiB of 16 MiB.  No fault continues a run, so
 * nothing is mapped ahead: exactly one page per touch is resident.
 */
TEST_F(cluster, sparse_maps_nothing_ahead)
{
	long mapped = sp_vmstat("superpage_cluster_mapped");
	char *p = sp_map_aligned(16 * MIB);
	long k, n = 16 * MIB / (64 << 10);

	ASSERT_NE(NULL, p);
	for (k = 0; k < n; k++)
		p[k * (64 << 10)] = 1;
	EXPECT_EQ(n * 4, sp_smaps_kb(p, "Rss"));
	EXPECT_EQ(n, sp_present(p, 16 * MIB / SP_PAGE));
	EXPECT_EQ(0, sp_vmstat("superpage_cluster_mapped") - mapped);
}

/*
 * One page per 16 KiB of 16 MiB: a quarter of every aligned block of 4
 * pages, counting the faulting one, but no fault finds a quarter of the
 * others used; nothing is mapped ahead.
 */
TEST_F(cluster, sparse_16k_maps_nothing_ahead)
{
	long mapped = sp_vmstat("superpage_cluster_mapped");
	char *p = sp_map_aligned(16 * MIB);
	long k, n = 16 * MIB / (16 << 10);

	ASSERT_NE(NULL, p);
	for (k = 0; k < n; k++)
		p[k * (16 << 10)] = 1;
	EXPECT_EQ(n * 4, sp_smaps_kb(p, "Rss"));
	EXPECT_EQ(n, sp_present(p, 16 * MIB / SP_PAGE));
	EXPECT_EQ(0, sp_vmstat("superpage_cluster_mapped") - mapped);
}

/*
 * A random-order fill of 32 MiB takes at most 128 faults per 2 MiB (a
 * fault per page before the quarter rule: about 400 per 2 MiB), maps each
 * page at its reservation's PFN, and every page reads back.
 */
TEST_F(cluster, random_fill_few_faults)
{
	size_t size = 32 * MIB, n = size / SP_PAGE, k;
	char *p = sp_map_aligned(size);
	int *idx = calloc(n, sizeof(*idx));
	long faults;

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, idx);
	sp_shuffle(idx, n, 11);
	faults = sp_minflt();
	for (k = 0; k < n; k++)
		*(unsigned long *)(p + idx[k] * SP_PAGE) = sp_word(idx[k]);
	faults = sp_minflt() - faults;
	ksft_print_msg("random fill of 32 MiB: %ld faults\n", faults);
	EXPECT_GE((long)(size / SP_HPAGE * 128), faults);
	for (k = 0; k < n; k++) {
		if (*(unsigned long *)(p + k * SP_PAGE) != sp_word(k)) {
			EXPECT_EQ(sp_word(k), *(unsigned long *)(p + k * SP_PAGE))
				TH_LOG("page %zu", k);
			break;
		}
		if (k % SP_NR == 0) {
			uint64_t pfn = sp_pfn(p + k * SP_PAGE);

			EXPECT_EQ(0, pfn % SP_NR) TH_LOG("page %zu", k);
		}
	}
	free(idx);
	munmap(p, size);
}

/*
 * Random order over one 2 MiB range: every subpage of the reservation is
 * mapped exactly once (mapped by faults plus mapped ahead make 512, the
 * PFNs are the folio's in order), and every page reads back.
 */
TEST_F(cluster, random_order_maps_each_subpage_once)
{
	long resv_mapped = sp_vmstat("superpage_resv_mapped");
	long ahead = sp_vmstat("superpage_cluster_mapped");
	char *p = sp_map_aligned(SP_HPAGE);
	int idx[SP_NR], k;
	uint64_t pfn0;

	ASSERT_NE(NULL, p);
	sp_shuffle(idx, SP_NR, 7);
	for (k = 0; k < SP_NR; k++)
		*(unsigned long *)(p + idx[k] * SP_PAGE) = sp_word(idx[k]);
	resv_mapped = sp_vmstat("superpage_resv_mapped") - resv_mapped;
	ahead = sp_vmstat("superpage_cluster_mapped") - ahead;
	ksft_print_msg("random order: %ld subpages mapped ahead of their fault\n",
		       ahead);
	/* The first subpage is mapped by the creation, the rest from it. */
	EXPECT_EQ(SP_NR - 1, resv_mapped);
	EXPECT_GE(SP_NR - 1, ahead);
	pfn0 = sp_pfn(p);
	ASSERT_NE(0, pfn0);
	for (k = 0; k < SP_NR; k++) {
		if (sp_pfn(p + k * SP_PAGE) != pfn0 + k ||
		    *(unsigned long *)(p + k * SP_PAGE) != sp_word(k)) {
			EXPECT_EQ(pfn0 + k, sp_pfn(p + k * SP_PAGE))
				TH_LOG("subpage %d", k);
			EXPECT_EQ(sp_word(k), *(unsigned long *)(p + k * SP_PAGE));
			break;
		}
	}
}

/*
 * Pages mapped ahead read zero, and fork, MADV_DONTNEED and mremap after
 * a cluster fault behave as without clusters.  Writing page 0 creates
 * the reservation; writing page 1 maps 1-3 (a quarter of block 0-3 is
 * used); page 2 is then present; writing page 4 maps 4-15 (a quarter of
 * block 0-15 is used, not of block 0-31).  Sixteen pages are present.
 * A fault zeroes whole clusters here (vm.superpage_fault_zero_pages 512):
 * with fewer, how much of the cluster of page 4 is mapped depends on how
 * far the zeroing ahead got (zeroed_ahead_reads_zero_on_dirty_frames).
 */
TEST_F(cluster, mapped_ahead_reads_zero_fork_dontneed_mremap)
{
	char *p = sp_map_aligned(2 * SP_HPAGE), *q;
	int status, k;
	pid_t pid;

	ASSERT_NE(NULL, p);
	if (!access(SP_FAULT_ZERO, F_OK))
		ASSERT_EQ(0, sp_write_int(SP_FAULT_ZERO, SP_NR));
	p[0] = 1;
	p[SP_PAGE] = 2;
	p[2 * SP_PAGE] = 3;
	p[4 * SP_PAGE] = 5;
	EXPECT_EQ(16, sp_present(p, SP_NR));
	for (k = 0; k < 16; k++) {
		char want = (k == 0 || k == 1 || k == 2 || k == 4) ?
			    (k == 4 ? 5 : k + 1) : 0;

		EXPECT_EQ(want, p[k * SP_PAGE]) TH_LOG("page %d", k);
		EXPECT_EQ(0, p[k * SP_PAGE + SP_PAGE - 1]) TH_LOG("page %d", k);
	}

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* The child sees the parent's pages, then its own copies. */
		if (p[4 * SP_PAGE] != 5 || p[5 * SP_PAGE] != 0)
			_exit(1);
		p[5 * SP_PAGE] = 9;
		_exit(p[5 * SP_PAGE] == 9 ? 0 : 2);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	EXPECT_EQ(0, p[5 * SP_PAGE]);

	p[6 * SP_PAGE] = 7;
	ASSERT_EQ(0, madvise(p + 6 * SP_PAGE, SP_PAGE, MADV_DONTNEED));
	EXPECT_EQ(0, p[6 * SP_PAGE]);

	q = mremap(p, SP_HPAGE, SP_HPAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
		   p + SP_HPAGE);
	ASSERT_EQ(p + SP_HPAGE, q);
	EXPECT_EQ(1, q[0]);
	EXPECT_EQ(5, q[4 * SP_PAGE]);
	EXPECT_EQ(0, q[7 * SP_PAGE]);
}

/*
 * A fault zeroes at most vm.superpage_fault_zero_pages subpages itself; the
 * rest of its cluster must have been zeroed ahead of the fill by a worker
 * (mm/superpage/zero.c).  At the knob's extreme, 1 (a fault zeroes only its
 * own subpage), and at its default, 8, 32 fills of 2 MiB over frames that
 * held a pattern
 * (sp_dirty_frames()), half of them upwards and half downwards, one word
 * written per page: every other byte reads zero, every page is its
 * reservation's subpage, and some subpages were mapped zeroed ahead
 * (superpage_zero_ahead_mapped).  A fill that writes one word per page
 * catches up with the worker, and its faults take the near end of the
 * worker's claim back (superpage_zero_ahead_stolen), the race in which the
 * worker must not clear a subpage once a fault has it (Z4 in zero.c): a
 * late clearing would wipe the word written.  A pass on never-used
 * memory, with nothing zeroed ahead or nothing taken back, would prove
 * nothing: the test tries three times, then fails.  The pool of zeroed
 * frames (mm/superpage/prezero.c) is emptied first: its frames need no
 * zeroing ahead (fault.no_stale_data_prezeroed checks them).
 */
#define AHEAD_DIRTY	128	/* patterned 2 MiB ranges (256 MiB) */
#define AHEAD_RANGES	32	/* filled ranges (64 MiB) */

static void zeroed_ahead_fills(struct __test_metadata *_metadata,
			       int zero_pages)
{
	uint64_t frames[AHEAD_DIRTY], pfns[SP_NR];
	size_t size = AHEAD_RANGES * SP_HPAGE;
	long ahead = 0, zeroed = 0, stolen = 0, off;
	int attempt, nframes, reused = 0, r, k, n;
	char *p = NULL, *page;

	ASSERT_EQ(0, sp_write_int(SP_FAULT_ZERO, zero_pages));
	/* A frame of the pool is zeroed already: nothing to zero ahead. */
	sp_prezero_set(0);
	for (attempt = 1; attempt <= 3; attempt++) {
		nframes = sp_dirty_frames(AHEAD_DIRTY, 0x5a, frames);
		ASSERT_LE(AHEAD_DIRTY / 2, nframes);
		ahead = sp_vmstat("superpage_zero_ahead_mapped");
		zeroed = sp_vmstat("superpage_zero_ahead");
		stolen = sp_vmstat("superpage_zero_ahead_stolen");
		p = sp_map_aligned(size);
		ASSERT_NE(NULL, p);
		reused = 0;
		for (r = 0; r < AHEAD_RANGES; r++) {
			for (n = 0; n < SP_NR; n++) {
				k = r % 2 ? SP_NR - 1 - n : n;
				page = p + r * SP_HPAGE + k * SP_PAGE;
				*(unsigned long *)(page + 64) = sp_word(k);
			}
			reused += sp_frames_has(frames, nframes,
						sp_pfn(p + r * SP_HPAGE));
		}
		ahead = sp_vmstat("superpage_zero_ahead_mapped") - ahead;
		zeroed = sp_vmstat("superpage_zero_ahead") - zeroed;
		stolen = sp_vmstat("superpage_zero_ahead_stolen") - stolen;
		ksft_print_msg("fault zeroing %d, attempt %d: %d of %d ranges on old frames\n",
			       zero_pages, attempt, reused, AHEAD_RANGES);
		ksft_print_msg("%ld subpages zeroed ahead, %ld mapped so\n",
			       zeroed, ahead);
		ksft_print_msg("%ld taken back by faults\n", stolen);
		if (reused >= AHEAD_RANGES / 2 && ahead > 0 && stolen > 0)
			break;
		munmap(p, size);
	}
	ASSERT_LE(AHEAD_RANGES / 2, reused)
		TH_LOG("the allocator gave never-used memory: nothing proven");
	ASSERT_LT(0, ahead) TH_LOG("nothing was zeroed ahead: nothing proven");
	ASSERT_LT(0, stolen) TH_LOG("no fault took a claim back: nothing proven");
	EXPECT_LE(ahead, zeroed);

	for (r = 0; r < AHEAD_RANGES; r++) {
		ASSERT_EQ(0, sp_pfns(p + r * SP_HPAGE, SP_NR, pfns));
		ASSERT_EQ(0, pfns[0] % SP_NR) TH_LOG("range %d", r);
		for (k = 0; k < SP_NR; k++) {
			page = p + r * SP_HPAGE + k * SP_PAGE;
			ASSERT_EQ(pfns[0] + k, pfns[k])
				TH_LOG("range %d page %d", r, k);
			ASSERT_EQ(sp_word(k), *(unsigned long *)(page + 64))
				TH_LOG("range %d page %d", r, k);
			off = sp_stray_byte(page);
			ASSERT_EQ(-1, off)
				TH_LOG("range %d page %d: byte %ld reads %#x",
				       r, k, off, (unsigned char)page[off]);
		}
	}
	munmap(p, size);
}

TEST_F(cluster, zeroed_ahead_reads_zero_on_dirty_frames)
{
	if (access(SP_FAULT_ZERO, F_OK) ||
	    sp_vmstat("superpage_zero_ahead_stolen") < 0)
		SKIP(return, "this kernel does not zero ahead of the fault");
	zeroed_ahead_fills(_metadata, 1);
	zeroed_ahead_fills(_metadata, SP_FAULT_ZERO_DEFAULT);
}

/* A 32 MiB sequential fill, one word per page; returns subpages zeroed ahead. */
static long zero_ahead_fill(struct __test_metadata *_metadata, const char *what)
{
	const long npages = 32 * MIB / SP_PAGE;
	long zeroed, huge, k, off;
	char *p = sp_map_aligned(32 * MIB);

	if (!p)
		return -1;
	zeroed = sp_vmstat("superpage_zero_ahead");
	for (k = 0; k < npages; k++)
		*(unsigned long *)(p + k * SP_PAGE + 64) = sp_word(k);
	zeroed = sp_vmstat("superpage_zero_ahead") - zeroed;
	huge = sp_wait_anon_huge(p, 32 * 1024, 10000);
	ksft_print_msg("%s: %ld of %ld subpages zeroed ahead, %ld kB PMD-mapped\n",
		       what, zeroed, npages, huge);
	/* Given up or not, the worker keeps no reference that stops it. */
	EXPECT_EQ(32 * 1024, huge) TH_LOG("%s", what);
	for (k = 0; k < npages; k++) {
		char *page = p + k * SP_PAGE;

		if (*(unsigned long *)(page + 64) != sp_word(k)) {
			EXPECT_EQ(sp_word(k), *(unsigned long *)(page + 64))
				TH_LOG("%s: page %ld", what, k);
			break;
		}
		off = sp_stray_byte(page);
		if (off >= 0) {
			EXPECT_EQ(-1, off)
				TH_LOG("%s: page %ld: byte %ld reads %#x", what,
				       k, off, (unsigned char)page[off]);
			break;
		}
	}
	munmap(p, 32 * MIB);
	return zeroed;
}

/*
 * Zeroing ahead uses idle CPU time only (mm/superpage/zero.c, "Idle time
 * only").  While the feature is on, the worker ksuperpage_zahd runs
 * SCHED_IDLE.  On an otherwise idle machine a 32 MiB sequential fill (one
 * word per page, no pool of zeroed frames) gets more than one subpage in
 * 256 zeroed ahead (about 300 of 8,192 here: such a fill outruns the
 * worker); with one spinning process more than there are CPUs, no CPU is
 * ever idle, and the same fill gets at most one subpage in 256 zeroed
 * ahead (none here; a worker that competes for the CPU, as the workqueue
 * worker before it did, zeroes thousands).  Either way every range is
 * promoted within 10 s, so the worker holds no request, and no reference,
 * that would keep it from being promoted, and every byte reads as written
 * or zero.
 */
TEST_F(cluster, zero_ahead_only_in_idle_time)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN), idle, busy, k;
	pid_t worker, *spinners;
	int nspin = 0;

	if (access(SP_FAULT_ZERO, F_OK) ||
	    sp_vmstat("superpage_zero_ahead") < 0)
		SKIP(return, "this kernel does not zero ahead of the fault");
	if (cpus < 2)
		SKIP(return, "one CPU: never another idle CPU to zero ahead on");
	worker = sp_kthread_pid("ksuperpage_zahd");
	ASSERT_LT(0, worker) TH_LOG("no ksuperpage_zahd while the feature is on");
	EXPECT_EQ(SCHED_IDLE, sched_getscheduler(worker));
	sp_prezero_set(0);

	idle = zero_ahead_fill(_metadata, "idle machine");
	ASSERT_LT(32 * MIB / SP_PAGE / 256, idle)
		TH_LOG("nothing zeroed ahead on an idle machine: nothing proven");

	spinners = calloc(cpus + 1, sizeof(*spinners));
	ASSERT_NE(NULL, spinners);
	for (k = 0; k <= cpus; k++) {
		pid_t pid = fork();

		if (!pid) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				;
		}
		ASSERT_LT(0, pid);
		spinners[nspin++] = pid;
	}
	usleep(200000);
	busy = zero_ahead_fill(_metadata, "every CPU busy");
	for (k = 0; k < nspin; k++) {
		kill(spinners[k], SIGKILL);
		waitpid(spinners[k], NULL, 0);
	}
	free(spinners);
	EXPECT_LE(busy, 32 * MIB / SP_PAGE / 256);

	ASSERT_EQ(0, sp_write_int(SP_ENABLED, 0));
	EXPECT_EQ(0, sp_kthread_pid("ksuperpage_zahd"))
		TH_LOG("ksuperpage_zahd runs with the feature off");
}

/* With vm.superpage_cluster_max_order at 0, every fault maps one page. */
TEST_F(cluster, order_zero_disables)
{
	long ahead = sp_vmstat("superpage_cluster_mapped");
	char *p = sp_map_aligned(SP_HPAGE);
	long faults;
	int k;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, sp_write_int(SP_CLUSTER, 0));
	faults = sp_minflt();
	for (k = 0; k < SP_NR; k++)
		p[k * SP_PAGE] = 1;
	faults = sp_minflt() - faults;
	EXPECT_LE(SP_NR, faults);
	EXPECT_EQ(0, sp_vmstat("superpage_cluster_mapped") - ahead);
}

/*
 * Regression tests: each guards a bug that was found and fixed.
 */

/*
 * Below the default threshold, ksuperpaged promotes ranges while the fill
 * goes on in them.  Its reference on the folio was taken before the VMA
 * was write-locked, so a fault growing the range could see it, take the
 * subpage for pinned and map a 4 KiB page of its own there, after which
 * the range could never be promoted (the benchmark lost one range of 32
 * in half of its threshold-128 fills).  Three 64 MiB fills at threshold
 * 128: every range ends PMD-mapped, each page at its folio's PFN, and
 * every page reads back.
 */
TEST_F(cluster, low_threshold_fill_promotes_every_range)
{
	const long npages = 64 * MIB / SP_PAGE;
	uint64_t ent[SP_NR];
	long round, k, r, huge;
	int fd;

	ASSERT_EQ(0, sp_write_int(SP_THRESHOLD, 128));
	fd = open("/proc/self/pagemap", O_RDONLY);
	ASSERT_LE(0, fd);
	for (round = 0; round < 3; round++) {
		char *p = sp_map_aligned(64 * MIB);

		ASSERT_NE(NULL, p);
		for (k = 0; k < npages; k++)
			*(unsigned long *)(p + k * SP_PAGE) = sp_word(k);
		huge = sp_wait_anon_huge(p, 64 * 1024, 2000);
		EXPECT_EQ(64 * 1024, huge) TH_LOG("round %ld", round);
		for (r = 0; r < 32; r++) {
			off_t at = (uintptr_t)(p + r * SP_HPAGE) / SP_PAGE *
				   sizeof(ent[0]);

			ASSERT_EQ(sizeof(ent), pread(fd, ent, sizeof(ent), at));
			for (k = 0; k < SP_NR; k++)
				if ((ent[k] & PM_PFN_MASK) !=
				    (ent[0] & PM_PFN_MASK) + k)
					break;
			EXPECT_EQ(SP_NR, k)
				TH_LOG("round %ld, range %ld: subpage %ld is not the folio's",
				       round, r, k);
		}
		for (k = 0; k < npages; k++)
			if (*(unsigned long *)(p + k * SP_PAGE) != sp_word(k))
				break;
		EXPECT_EQ(npages, k);
		munmap(p, 64 * MIB);
	}
	close(fd);
}

TEST_HARNESS_MAIN
