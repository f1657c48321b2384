// SPDX-License-Identifier: GPL-2.0
/*
 * Reservations filled by several threads at once.  The threads of one
 * process write interleaved 64 KiB chunks of one mapping, so that faults
 * of different threads meet in the same 2 MiB range and the same page
 * table.  A fault that finds the reservation busy (another thread's fault
 * holds its folio lock, or a transient reference) must retry rather than
 * map a 4 KiB page of its own inside the range, which would leave the
 * range unpromotable for good.  The tests read what the kernel did from
 * /proc/self/smaps (AnonHugePages of the mapping) and /proc/vmstat
 * (superpage_resv_fallback), and every page is read back.
 *
 * The fixture switches the feature on (mode 2) and leaves every other
 * knob at its value: the shipped defaults (clusters, threshold 512).
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "../kselftest_harness.h"
#include "superpage_util.h"

#define SP_CHUNK	(64UL << 10)
#define SP_RUNS		3

FIXTURE(threads) {
	int mode;
};

FIXTURE_SETUP(threads)
{
	self->mode = -1;
	if (geteuid())
		SKIP(return, "must be run as root (sysctl)");
	if (access(SP_ENABLED, F_OK))
		SKIP(return, "no %s: CONFIG_SUPERPAGE=n", SP_ENABLED);
	self->mode = sp_read_int(SP_ENABLED);
	ASSERT_EQ(0, sp_write_int(SP_ENABLED, 2));
}

FIXTURE_TEARDOWN_PARENT(threads)
{
	if (self->mode >= 0)
		sp_write_int(SP_ENABLED, self->mode);
}

struct sp_fill {
	char *base;
	size_t size;
	int nr_threads, id;
};

/* The word every page starts with: its offset, scrambled. */
static unsigned long sp_tag(size_t off)
{
	return (off + 1) * 0x9e3779b97f4a7c15UL;
}

/* Write the first word of every page of this thread's chunks. */
static void *sp_fill_chunks(void *arg)
{
	struct sp_fill *f = arg;
	size_t off, b;

	for (off = f->id * SP_CHUNK; off < f->size;
	     off += f->nr_threads * SP_CHUNK)
		for (b = 0; b < SP_CHUNK; b += SP_PAGE)
			__atomic_store_n((unsigned long *)(f->base + off + b),
					 sp_tag(off + b), __ATOMIC_RELAXED);
	return NULL;
}

/*
 * @nr_threads threads fill @mib MiB in interleaved chunks; 3 s after the
 * last write at least 99% of it is PMD-mapped, no fault fell back inside
 * a reservation, and every page reads back.
 */
static void sp_threaded_fill(struct __test_metadata *_metadata,
			     int nr_threads, size_t mib)
{
	size_t size = mib << 20, off;
	struct sp_fill fill[16];
	pthread_t th[16];
	long fallback, kb;
	int run, t, bad;
	char *p;

	ASSERT_GE(16, nr_threads);
	for (run = 0; run < SP_RUNS; run++) {
		p = sp_map_aligned(size);
		ASSERT_NE(NULL, p);
		fallback = sp_vmstat("superpage_resv_fallback");
		EXPECT_LE(0, fallback)
			TH_LOG("no superpage_resv_fallback in /proc/vmstat");
		for (t = 0; t < nr_threads; t++) {
			fill[t] = (struct sp_fill){ p, size, nr_threads, t };
			ASSERT_EQ(0, pthread_create(&th[t], NULL,
						    sp_fill_chunks, &fill[t]));
		}
		for (t = 0; t < nr_threads; t++)
			ASSERT_EQ(0, pthread_join(th[t], NULL));
		sleep(3);
		kb = sp_smaps_kb(p, "AnonHugePages");
		bad = 0;
		for (off = 0; off < size; off += SP_PAGE)
			bad += *(unsigned long *)(p + off) != sp_tag(off);
		EXPECT_EQ(0, bad) TH_LOG("run %d: %d pages read back wrong",
					 run, bad);
		EXPECT_EQ(0, sp_vmstat("superpage_resv_fallback") - fallback)
			TH_LOG("run %d: faults fell back inside reservations",
			       run);
		EXPECT_LE((long)(size >> 10) * 99 / 100, kb)
			TH_LOG("run %d: %ld of %zu KiB PMD-mapped 3 s after the last write",
			       run, kb, size >> 10);
		munmap(p, size);
	}
}

TEST_F(threads, two_threads_256m_interleaved)
{
	sp_threaded_fill(_metadata, 2, 256);
}

TEST_F(threads, eight_threads_64m_interleaved)
{
	sp_threaded_fill(_metadata, 8, 64);
}

TEST_HARNESS_MAIN
