/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the superpage selftests: read what the kernel did from
 * /proc/self/pagemap, /proc/self/statm, /proc/vmstat and the sysctls.
 */
#ifndef SUPERPAGE_UTIL_H
#define SUPERPAGE_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SP_PAGE		4096UL
#define SP_HPAGE	(2UL << 20)
#define SP_NR		512
#define SP_ENABLED	"/proc/sys/vm/superpage_enabled"
#define SP_THRESHOLD	"/proc/sys/vm/superpage_promote_threshold"
#define SP_SCAN_SLEEP	"/proc/sys/vm/superpage_scan_sleep_millisecs"
#define SP_PAGES_TO_SCAN "/proc/sys/vm/superpage_pages_to_scan"
#define SP_DEMOTE	"/proc/sys/vm/superpage_demote_on_reclaim"
#define SP_CLUSTER	"/proc/sys/vm/superpage_cluster_max_order"
#define SP_FAULT_ZERO	"/proc/sys/vm/superpage_fault_zero_pages"
#define SP_PREZERO	"/proc/sys/vm/superpage_prezero_frames"
#define SP_THP_ENABLED	"/sys/kernel/mm/transparent_hugepage/enabled"

/* The shipped defaults of the knobs above (mm/superpage/sysctl.c). */
#define SP_CLUSTER_DEFAULT	6
#define SP_FAULT_ZERO_DEFAULT	8
#define SP_PREZERO_DEFAULT	64
#define SP_THRESHOLD_DEFAULT	SP_NR

#define PM_PRESENT	0x8000000000000000ULL	/* bit 63 */
#define PM_SWAP		0x4000000000000000ULL	/* bit 62 */
#define PM_PFN_MASK	0x007fffffffffffffULL	/* bits 0-54 */

/* Read one byte of user memory for real (a fault, not a cached value). */
static inline char sp_load(const char *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* Read a whole small file into @buf; returns bytes read or -1. */
static inline int sp_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/*
 * The pid of a task called @comm (a kernel thread), 0 if there is none, -1
 * if /proc cannot be read.
 */
static inline pid_t sp_kthread_pid(const char *comm)
{
	char path[300], buf[64];
	struct dirent *d;
	pid_t pid = 0;
	DIR *dir;

	dir = opendir("/proc");
	if (!dir)
		return -1;
	while (!pid && (d = readdir(dir))) {
		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		if (sp_read_file(path, buf, sizeof(buf)) > 0 &&
		    !strncmp(buf, comm, strlen(comm)) &&
		    buf[strlen(comm)] == '\n')
			pid = atoi(d->d_name);
	}
	closedir(dir);
	return pid;
}

/* Write @val to @path in one write(); 0 or the errno. */
static inline int sp_write_file(const char *path, const char *val)
{
	ssize_t len = strlen(val);
	int fd = open(path, O_WRONLY);
	int err = 0;

	if (fd < 0)
		return errno;
	if (write(fd, val, len) != len)
		err = errno ? errno : EIO;
	close(fd);
	return err;
}

static inline int sp_read_int(const char *path)
{
	char buf[64];

	if (sp_read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	return atoi(buf);
}

static inline int sp_write_int(const char *path, int val)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%d", val);
	return sp_write_file(path, buf);
}

/*
 * The number after "@name@sep" on a line of the file @path (/proc/vmstat,
 * /proc/meminfo, a cgroup's memory.events), or -1 when there is none.
 */
static inline long sp_file_field(const char *path, const char *name, char sep)
{
	size_t len = strlen(name);
	char line[256];
	long val = -1;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, name, len) && line[len] == sep) {
			val = atol(line + len + 1);
			break;
		}
	}
	fclose(f);
	return val;
}

/* A /proc/vmstat counter, or -1 when the kernel does not have it. */
static inline long sp_vmstat(const char *name)
{
	return sp_file_field("/proc/vmstat", name, ' ');
}

/* A /proc/meminfo field in kB, or -1. */
static inline long sp_meminfo_kb(const char *field)
{
	return sp_file_field("/proc/meminfo", field, ':');
}

/*
 * Switch fault clusters off (vm.superpage_cluster_max_order = 0), for the
 * tests that count what each fault maps one subpage at a time; the
 * fixture's sp_settings_pop() puts the old value back.
 */
static inline void sp_cluster_off(void)
{
	if (!access(SP_CLUSTER, F_OK))
		sp_write_int(SP_CLUSTER, 0);
}

/*
 * Set vm.superpage_prezero_frames to @frames, on a kernel with the pool of
 * zeroed frames (0 empties it: new reservations are zeroed as they are
 * mapped); the fixture's sp_settings_pop() puts the old value back.
 */
static inline void sp_prezero_set(int frames)
{
	if (!access(SP_PREZERO, F_OK))
		sp_write_int(SP_PREZERO, frames);
}

/*
 * Wait up to @timeout_ms for the pool to hold at least @frames zeroed
 * frames (nr_superpage_prezeroed); returns the frames it holds.
 */
static inline long sp_prezero_wait(long frames, long timeout_ms)
{
	long n = 0, ms;

	for (ms = 0; ms <= timeout_ms; ms += 20) {
		n = sp_vmstat("nr_superpage_prezeroed") / SP_NR;
		if (n >= frames)
			break;
		usleep(20000);
	}
	return n;
}

/*
 * Set vm.superpage_cluster_max_order to @order (SP_CLUSTER_DEFAULT: the
 * shipped default), on a kernel with clusters; the fixture's
 * sp_settings_pop() puts the old value back.
 */
static inline void sp_cluster_set(int order)
{
	if (!access(SP_CLUSTER, F_OK))
		sp_write_int(SP_CLUSTER, order);
}

/*
 * Every knob a test may change: the superpage sysctls and the THP sysfs
 * files.  A fixture pushes them all in its setup (sp_settings_push()) and
 * pops them in its teardown (sp_settings_pop()), as selftests/mm's
 * thp_settings.h does, so that a test body changes knobs freely and never
 * restores them itself (an assert that fails cannot skip a restore).
 */
#define SP_THP_DIR	"/sys/kernel/mm/transparent_hugepage/"

static const char * const sp_knob_files[] = {
	SP_ENABLED, SP_THRESHOLD, SP_SCAN_SLEEP, SP_PAGES_TO_SCAN, SP_DEMOTE,
	SP_CLUSTER, SP_FAULT_ZERO, SP_PREZERO, SP_THP_ENABLED, SP_THP_DIR "defrag",
	SP_THP_DIR "shrink_underused", SP_THP_DIR "khugepaged/defrag",
	SP_THP_DIR "khugepaged/max_ptes_none",
	SP_THP_DIR "khugepaged/scan_sleep_millisecs",
	SP_THP_DIR "khugepaged/pages_to_scan",
};

/* Also for bench/sp_bench.c, which has no kselftest.h. */
#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif
#define SP_NR_KNOBS	ARRAY_SIZE(sp_knob_files)

struct sp_settings {
	int pushed;
	/* Each knob's value, "" where the kernel has no such file. */
	char val[SP_NR_KNOBS][32];
};

/*
 * The value to write back from what a knob file reads: the bracketed word
 * of a choice ("always [madvise] never"), else the first line.
 */
static inline void sp_knob_value(const char *buf, char *out, size_t len)
{
	const char *b = strchr(buf, '[');
	size_t n;

	if (b) {
		b++;
		n = strcspn(b, "]");
	} else {
		b = buf;
		n = strcspn(b, "\n");
	}
	if (n >= len)
		n = len - 1;
	memcpy(out, b, n);
	out[n] = 0;
}

static inline void sp_settings_push(struct sp_settings *st)
{
	char buf[256];
	size_t i;

	for (i = 0; i < SP_NR_KNOBS; i++) {
		st->val[i][0] = 0;
		if (sp_read_file(sp_knob_files[i], buf, sizeof(buf)) > 0)
			sp_knob_value(buf, st->val[i], sizeof(st->val[i]));
	}
	st->pushed = 1;
}

/* Restore what sp_settings_push() saw, the feature switch last. */
static inline void sp_settings_pop(const struct sp_settings *st)
{
	size_t i = SP_NR_KNOBS;

	if (!st->pushed)
		return;
	while (i--)
		if (st->val[i][0])
			sp_write_file(sp_knob_files[i], st->val[i]);
}

/* The pagemap entry of @addr in this process. */
static inline uint64_t sp_pagemap(const void *addr)
{
	uint64_t ent = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return 0;
	if (pread(fd, &ent, sizeof(ent),
		  (uintptr_t)addr / SP_PAGE * sizeof(ent)) != sizeof(ent))
		ent = 0;
	close(fd);
	return ent;
}

/* PFN of @addr, or 0 when the page is not present. */
static inline uint64_t sp_pfn(const void *addr)
{
	uint64_t ent = sp_pagemap(addr);

	return (ent & PM_PRESENT) ? (ent & PM_PFN_MASK) : 0;
}

/*
 * The PFNs of the @n pages from @addr on, in one read of the pagemap: 0 for
 * a page that is not present.  Returns 0, or -1 if the pagemap fails.
 */
static inline int sp_pfns(const void *addr, size_t n, uint64_t *pfns)
{
	ssize_t len = n * sizeof(*pfns);
	int fd = open("/proc/self/pagemap", O_RDONLY);
	size_t k;

	if (fd < 0)
		return -1;
	if (pread(fd, pfns, len, (uintptr_t)addr / SP_PAGE * sizeof(*pfns)) != len) {
		close(fd);
		return -1;
	}
	close(fd);
	for (k = 0; k < n; k++)
		pfns[k] = (pfns[k] & PM_PRESENT) ? (pfns[k] & PM_PFN_MASK) : 0;
	return 0;
}

/* Is @pfn a frame of the 2 MiB block (a reservation) that starts at @base? */
static inline int sp_pfn_in(uint64_t pfn, uint64_t base)
{
	return pfn >= base && pfn < base + SP_NR;
}

/* The offset of the first nonzero byte of [@addr, @addr + @len), or -1. */
static inline long sp_first_nonzero(const void *addr, size_t len)
{
	const unsigned char *p = addr;
	size_t k = 0;
	uint64_t w;

	for (; k + sizeof(w) <= len; k += sizeof(w)) {
		memcpy(&w, p + k, sizeof(w));
		if (w)
			break;
	}
	for (; k < len; k++)
		if (p[k])
			return k;
	return -1;
}

/* The offset of the first byte of [@addr, @addr + @len) that is not @byte, or -1. */
static inline long sp_first_not(const void *addr, int byte, size_t len)
{
	const unsigned char *p = addr;
	size_t k;

	for (k = 0; k < len; k++)
		if (p[k] != (unsigned char)byte)
			return k;
	return -1;
}

static inline int sp_pfn_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Is @pfn one of the @n sorted frames of sp_dirty_frames()? */
static inline int sp_frames_has(const uint64_t *frames, int n, uint64_t pfn)
{
	return n > 0 && bsearch(&pfn, frames, n, sizeof(pfn), sp_pfn_cmp);
}

/* Resident anonymous memory of this process in pages (statm). */
static inline long sp_rss_pages(void)
{
	long size, resident;
	char buf[256];

	if (sp_read_file("/proc/self/statm", buf, sizeof(buf)) <= 0)
		return -1;
	if (sscanf(buf, "%ld %ld", &size, &resident) != 2)
		return -1;
	return resident;
}

/* A field of /proc/self/smaps for the VMA containing @addr, in kB. */
static inline long sp_smaps_kb(const void *addr, const char *field)
{
	unsigned long start, end, a = (uintptr_t)addr;
	size_t len = strlen(field);
	char line[512];
	int in = 0;
	long kb = -1;
	FILE *f;

	f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = a >= start && a < end;
			continue;
		}
		if (in && !strncmp(line, field, len) && line[len] == ':') {
			kb = atol(line + len + 1);
			break;
		}
	}
	fclose(f);
	return kb;
}

/* Monotonic time in milliseconds. */
static inline long sp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Poll the AnonHugePages of the VMA at @addr (PMD-mapped memory) every
 * 5 ms until it reaches @kb or @timeout_ms pass; returns the last value.
 */
static inline long sp_wait_anon_huge(const void *addr, long kb, long timeout_ms)
{
	long end = sp_now_ms() + timeout_ms, v;

	for (;;) {
		v = sp_smaps_kb(addr, "AnonHugePages");
		if (v >= kb || sp_now_ms() >= end)
			return v;
		usleep(5000);
	}
}

/*
 * Map @size bytes of private anonymous memory (a multiple of 2 MiB) at a
 * 2 MiB-aligned address, with 2 MiB of unused space trimmed off around it.
 */
static inline char *sp_map_aligned(size_t size)
{
	char *raw, *p;

	raw = mmap(NULL, size + SP_HPAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	p = (char *)(((uintptr_t)raw + SP_HPAGE - 1) & ~(SP_HPAGE - 1));
	if (p > raw)
		munmap(raw, p - raw);
	munmap(p + size, raw + SP_HPAGE - p);
	return p;
}

/* Fisher-Yates shuffle of 0..n-1 into @idx, from a fixed seed. */
static inline void sp_shuffle(int *idx, int n, unsigned int seed)
{
	int k, j, t;

	for (k = 0; k < n; k++)
		idx[k] = k;
	srand(seed);
	for (k = n - 1; k > 0; k--) {
		j = rand() % (k + 1);
		t = idx[k];
		idx[k] = idx[j];
		idx[j] = t;
	}
}

/*
 * Leave stale data in free memory, where the next order-9 allocations find
 * it: fill @nr 2 MiB ranges with @byte (every byte), one range after the
 * other, then unmap them.  With vm.superpage_enabled at 2 (the caller's
 * job), each range fills one reservation, an order-9 folio, so its frames
 * go back to the page allocator whole, as a 2 MiB block (to the per-CPU
 * list of THP's order first), and the next order-9 allocations take them
 * before never-used blocks.  Stores the base PFN of every range that was
 * one 2 MiB-aligned block (PFNs base + index) in @frames, sorted, and
 * returns how many there were, or -1 if the memory could not be mapped.
 */
static inline int sp_dirty_frames(int nr, int byte, uint64_t *frames)
{
	uint64_t pfns[SP_NR];
	int r, k, n = 0;
	char *p;

	p = sp_map_aligned(nr * SP_HPAGE);
	if (!p)
		return -1;
	for (r = 0; r < nr; r++) {
		char *range = p + r * SP_HPAGE;

		memset(range, byte, SP_HPAGE);
		if (sp_pfns(range, SP_NR, pfns) || !pfns[0] || pfns[0] % SP_NR)
			continue;
		for (k = 1; k < SP_NR && pfns[k] == pfns[0] + k; k++)
			;
		if (k == SP_NR)
			frames[n++] = pfns[0];
	}
	munmap(p, nr * SP_HPAGE);
	qsort(frames, n, sizeof(*frames), sp_pfn_cmp);
	return n;
}

#endif /* SUPERPAGE_UTIL_H */
