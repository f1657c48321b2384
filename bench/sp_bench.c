// SPDX-License-Identifier: GPL-2.0
/*
 * sp_bench: the workloads of the superpage benchmark (bench/README.md).
 *
 * One invocation runs one workload in whatever memory mode the caller
 * (harness/guest/bench.sh) has set up: THP and mTHP sysfs knobs, the
 * vm.superpage_* sysctls, or -H for MAP_HUGETLB.  It measures what the
 * kernel did from /proc/self/smaps, /proc/vmstat, /proc/meminfo, the
 * memory cgroup it runs in, getrusage() and the daemons' schedstat, and
 * prints one line per figure:
 *
 *	R <workload> <mode> <metric> <value> <rep>
 *	S <workload> <mode> <ms> <percent> <rep>	(huge-mapping coverage samples)
 *
 * Every page written is read back; a wrong value is reported as
 * "corrupt_pages" and makes the exit status 1.  Nothing here is asserted
 * about performance: the report compares the modes.
 *
 *	sp_bench [-H] [-M] [-P] [-T COVER_MS] [-m MODE] [-r REP] [-w NAME]
 *		 WORKLOAD ARGS...
 *	  sparse SIZE_MIB STRIDE_KIB SETTLE_MS	(SETTLE_MS -1: touches only)
 *	  fill   SIZE_MIB seq|rand|stride [GUPS_UPDATES]
 *		 (stride: every other 4 KiB page in order, then the rest)
 *	  latency SIZE_MIB
 *	  fork   SIZE_MIB STRIDE_KIB
 *	  procs  COUNT SIZE_MIB
 *	  exec   COUNT INFILE OUTFILE CMD ARGS...	(a real program, COUNT times)
 *	  pstat  PID AVAIL0_KIB			(a running real program's memory)
 *	-H: map with MAP_HUGETLB (hugetlbfs pool, 2 MiB pages)
 *	-M: madvise(MADV_HUGEPAGE) after the first touch (khugepaged mode)
 *	-P: fill only: run the mmap() prober and report only its latencies
 *	    (the prober's failed-trylock restarts distort the daemons, so
 *	    coverage, CPU and copy figures come from runs without it)
 *	-T: wait up to COVER_MS for 99% huge-mapping coverage (0: do not wait)
 *	-r: the repetition number printed on every line (default 1)
 *	-w: the name printed for the workload's figures (default: as above)
 */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../tools/testing/selftests/superpage/superpage_util.h"

#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB	(21 << 26)
#endif

static const char *mode = "?", *label;
static int opt_hugetlb, opt_madvise, opt_probe, rep_nr = 1;
static long cover_ms;
static long corrupt;

static void result(const char *wl, const char *metric, double v)
{
	/* GUPS runs inside "fill" but is a workload of its own. */
	if (label && strcmp(wl, "gups"))
		wl = label;
	printf("R %s %s %s %.6g %d\n", wl, mode, metric, v, rep_nr);
	fflush(stdout);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static long minflt(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return ru.ru_minflt;
}

/* The pid whose cgroup memcg_*() read: 0 for this process. */
static pid_t memcg_pid;

/* The path of the file @name of memcg_pid's cgroup; 0 on success. */
static int memcg_path(const char *name, char *path, size_t len)
{
	char buf[512], *p;

	if (memcg_pid)
		snprintf(buf, sizeof(buf), "/proc/%d/cgroup", (int)memcg_pid);
	else
		strcpy(buf, "/proc/self/cgroup");
	if (sp_read_file(buf, buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, "0::");
	if (!p)
		return -1;
	p += 3;
	p[strcspn(p, "\n")] = 0;
	snprintf(path, len, "/sys/fs/cgroup%s/%s", p, name);
	return 0;
}

/* The memory cgroup file @name (or its line @field) as a number, or -1. */
static long memcg_field(const char *name, const char *field)
{
	char path[600], buf[64];

	if (memcg_path(name, path, sizeof(path)))
		return -1;
	if (field)
		return sp_file_field(path, field, ' ');
	if (sp_read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	return atol(buf);
}

static int memcg_write(const char *name, const char *val)
{
	char path[600];

	return memcg_path(name, path, sizeof(path)) ? -1 :
	       sp_write_file(path, val);
}

/*
 * Memory in use, in kB: the memory cgroup's charge plus the hugetlb pool
 * pages in use (hugetlb is not charged to the memory cgroup by default).
 */
static long mem_used_kb(void)
{
	long cur = memcg_field("memory.current", NULL);
	long tot = sp_meminfo_kb("HugePages_Total");
	long fr = sp_meminfo_kb("HugePages_Free");
	long hsz = sp_meminfo_kb("Hugepagesize");

	return (cur < 0 ? 0 : cur / 1024) + (tot - fr) * hsz;
}

static long vm(const char *name)
{
	long v = sp_vmstat(name);

	return v < 0 ? 0 : v;
}

/* On-CPU time in ns of the kernel thread named @comm (schedstat), or -1. */
static long long kthread_ns(const char *comm)
{
	char path[300], buf[64];
	long long ns = -1;
	struct dirent *d;
	DIR *dir;

	dir = opendir("/proc");
	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		if (sp_read_file(path, buf, sizeof(buf)) <= 0)
			continue;
		buf[strcspn(buf, "\n")] = 0;
		if (strcmp(buf, comm))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/schedstat", d->d_name);
		if (sp_read_file(path, buf, sizeof(buf)) > 0)
			ns = atoll(buf);
		break;
	}
	closedir(dir);
	return ns;
}

/* Resident memory of the mapping at @p in kB, hugetlb pages included. */
static long rss_kb(char *p)
{
	long rss = sp_smaps_kb(p, "Rss");
	long htlb = sp_smaps_kb(p, "Private_Hugetlb");

	return (rss > 0 ? rss : 0) + (htlb > 0 ? htlb : 0);
}

static char *map(size_t size)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	char *p;

	if (opt_hugetlb)
		flags |= MAP_HUGETLB | MAP_HUGE_2MB;
	/* Over-map, then trim, so that the mapping is 2 MiB aligned. */
	if (opt_hugetlb) {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, -1, 0);
	} else {
		char *raw = mmap(NULL, size + SP_HPAGE, PROT_READ | PROT_WRITE,
				 flags, -1, 0);
		size_t head;

		if (raw == MAP_FAILED) {
			perror("mmap");
			exit(2);
		}
		head = (SP_HPAGE - (uintptr_t)raw % SP_HPAGE) % SP_HPAGE;
		if (head)
			munmap(raw, head);
		munmap(raw + head + size, SP_HPAGE - head);
		p = raw + head;
	}
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return p;
}

static void madvise_after(char *p, size_t size)
{
	if (opt_madvise && madvise(p, size, MADV_HUGEPAGE))
		perror("madvise(MADV_HUGEPAGE)");
}

/* Per cent of [p, p + size) mapped by PMDs or hugetlb pages. */
static double coverage(char *p, size_t size)
{
	long thp = sp_smaps_kb(p, "AnonHugePages");
	long htlb = sp_smaps_kb(p, "Private_Hugetlb");

	return 100.0 * ((thp > 0 ? thp : 0) + (htlb > 0 ? htlb : 0)) * 1024 /
	       size;
}

static uint64_t pattern(uintptr_t i)
{
	return i * 0x9e3779b97f4a7c15ULL + 1;
}

static void check(const char *wl, char *p, size_t size, unsigned long stride,
		  uint64_t flip)
{
	long bad = 0;
	size_t off;

	for (off = 0; off < size; off += stride)
		if (*(uint64_t *)(p + off) != (pattern(off / SP_PAGE) ^ flip))
			bad++;
	if (bad)
		fprintf(stderr, "%s %s: %ld corrupt pages\n", wl, mode, bad);
	corrupt += bad;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void percentiles(const char *wl, const char *what, double *v, long n)
{
	char name[64];

	if (!n)
		return;
	qsort(v, n, sizeof(*v), cmp_double);
	snprintf(name, sizeof(name), "%s_p50_us", what);
	result(wl, name, v[n / 2] / 1000);
	snprintf(name, sizeof(name), "%s_p99_us", what);
	result(wl, name, v[(n * 99) / 100] / 1000);
	snprintf(name, sizeof(name), "%s_p999_us", what);
	result(wl, name, v[(n * 999) / 1000] / 1000);
	snprintf(name, sizeof(name), "%s_max_us", what);
	result(wl, name, v[n - 1] / 1000);
}

/*
 * An array for the latencies of a timed loop, its pages faulted in now: a
 * first write to one of them inside the loop would be a fault that
 * touch_all() counts, and times, as the next touch's.  (Not zeroes: the
 * compiler turns malloc() and memset(0) into calloc(), which writes
 * nothing to a fresh mapping.)
 */
static void *prefaulted(size_t size)
{
	void *v = malloc(size);

	if (!v) {
		perror("malloc");
		exit(2);
	}
	memset(v, 0xff, size);
	return v;
}

/*
 * Touch one page per @stride of @size, timing each touch; the latencies of
 * touches that took a fault go to @lat (if not NULL), those of every touch
 * to @all (if not NULL, with @lat).  Returns the faults.
 */
static long touch_all(char *p, size_t size, size_t stride,
		      const size_t *order, double *lat, long *nlat, double *all)
{
	long f0 = minflt(RUSAGE_THREAD), f = f0, n = size / stride, i;

	for (i = 0; i < n; i++) {
		size_t off = (order ? order[i] : (size_t)i) * stride;
		double t0 = 0;

		if (lat)
			t0 = now_ns();
		*(uint64_t *)(p + off) = pattern(off / SP_PAGE);
		if (lat) {
			double t = now_ns() - t0;
			long f1 = minflt(RUSAGE_THREAD);

			if (f1 != f)
				lat[(*nlat)++] = t;
			if (all)
				all[i] = t;
			f = f1;
		}
	}
	return minflt(RUSAGE_THREAD) - f0;
}

static long touch(char *p, size_t size, size_t stride, const size_t *order,
		  double *lat, long *nlat)
{
	return touch_all(p, size, stride, order, lat, nlat, NULL);
}

/* The mmap_lock prober: how long an mmap() waits while the daemon works. */
static volatile int probe_stop;
static double *probe_lat;
static long probe_n, probe_max = 1 << 16;

static pthread_t probe_thread;
static void *prober(void *arg);

static void probe_resume(void)
{
	probe_stop = 0;
	pthread_create(&probe_thread, NULL, prober, NULL);
}

static void probe_pause(void)
{
	probe_stop = 1;
	pthread_join(probe_thread, NULL);
}

/* Ready to run; the prober starts with probe_resume(). */
static void probe_start(void)
{
	probe_lat = prefaulted(probe_max * sizeof(*probe_lat));
	probe_n = 0;
}

/* The prober is paused. */
static void probe_end(const char *wl)
{
	result(wl, "mmap_wait_samples", probe_n);
	percentiles(wl, "mmap_wait", probe_lat, probe_n);
	free(probe_lat);
}

static void *prober(void *arg)
{
	(void)arg;
	while (!probe_stop && probe_n < probe_max) {
		double t0 = now_ns();
		void *q = mmap(NULL, SP_PAGE, PROT_READ, MAP_PRIVATE |
			       MAP_ANONYMOUS, -1, 0);

		probe_lat[probe_n++] = now_ns() - t0;
		if (q != MAP_FAILED)
			munmap(q, SP_PAGE);
		usleep(500);
	}
	return NULL;
}

/* 2 MiB mappings built by the daemons so far (khugepaged, ksuperpaged). */
static long built(void)
{
	return vm("thp_collapse_alloc") + vm("superpage_promote");
}

/*
 * Coverage (%) of @size bytes without reading smaps: @c0, what smaps
 * showed when built() returned @b0, plus what the daemons built since.
 */
static double coverage_since(double c0, long b0, size_t size)
{
	return c0 + 100.0 * (built() - b0) * SP_HPAGE / size;
}

/*
 * Poll coverage every 10 ms until 99% or cover_ms; print the samples, the
 * time to 99% (ms after the last touch), and the final coverage.  The
 * samples count the daemons' collapses and promotions since the start
 * (/proc/vmstat) on top of the coverage smaps showed then: reading smaps
 * every 10 ms would hold the mmap lock for most of the time under TCG
 * and stall the very daemons being measured.  smaps gives the final
 * figure.
 */
static void wait_coverage(const char *wl, char *p, size_t size)
{
	double t0 = now_ns(), c, c0, reached = -1;
	long b0 = built();

	c = c0 = coverage(p, size);
	printf("S %s %s 0 %.2f %d\n", label ? label : wl, mode, c, rep_nr);
	if (c >= 99)
		reached = 0;
	while (reached < 0 && (now_ns() - t0) / 1e6 < cover_ms) {
		usleep(10000);
		c = coverage_since(c0, b0, size);
		if (c >= 99) {
			/* Confirm with smaps (and start counting again). */
			b0 = built();
			c = c0 = coverage(p, size);
		}
		printf("S %s %s %.0f %.2f %d\n", label ? label : wl, mode,
		       (now_ns() - t0) / 1e6, c, rep_nr);
		if (c >= 99)
			reached = (now_ns() - t0) / 1e6;
	}
	fflush(stdout);
	if (reached >= 0)
		result(wl, "cover99_ms", reached);
	result(wl, "cover_pct", coverage(p, size));
}

/*
 * The prober's wait for coverage after the fill (-P): as wait_coverage(),
 * but smaps, which holds the mmap lock for as long as it walks the page
 * tables (most of a millisecond under TCG while ranges are PTE-mapped), is
 * read only with the prober paused, so that what the prober measures is
 * the kernel's work in every mode, not this program's own reads.  Returns
 * with the prober paused.
 */
static void probe_wait_coverage(char *p, size_t size)
{
	long b0 = built();
	double c0, t0;

	probe_pause();
	/* Promotions after b0 count twice: the wait ends early, not late. */
	c0 = coverage(p, size);
	if (c0 >= 99)
		return;
	probe_resume();
	t0 = now_ns();
	while ((now_ns() - t0) / 1e6 < cover_ms &&
	       coverage_since(c0, b0, size) < 99)
		usleep(10000);
	probe_pause();
}

/* Every other page, then the pages in between: 0, 2, 4, ..., 1, 3, ... */
static size_t *strided(long n)
{
	size_t *o = malloc(n * sizeof(*o));
	long i, k = 0;

	for (i = 0; i < n; i += 2)
		o[k++] = i;
	for (i = 1; i < n; i += 2)
		o[k++] = i;
	return o;
}

static size_t *shuffled(long n)
{
	size_t *o = malloc(n * sizeof(*o));
	uint64_t x = 88172645463325252ULL;
	long i;

	for (i = 0; i < n; i++)
		o[i] = i;
	for (i = n - 1; i > 0; i--) {
		size_t j, t;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = x % (i + 1);
		t = o[i];
		o[i] = o[j];
		o[j] = t;
	}
	return o;
}

static int dtlb_open(void)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_HW_CACHE,
		.size = sizeof(a),
		.config = PERF_COUNT_HW_CACHE_DTLB |
			  (PERF_COUNT_HW_CACHE_OP_READ << 8) |
			  (PERF_COUNT_HW_CACHE_RESULT_MISS << 16),
		.disabled = 1,
		.exclude_hv = 1,
	};

	return syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

/* GUPS-style: @n random 8-byte read-modify-writes over @p. */
static void gups(char *p, size_t size, long n)
{
	uint64_t x = 2463534242ULL, sum = 0, words = size / 8;
	uint64_t *w = (uint64_t *)p;
	long long misses = -1;
	int fd = dtlb_open();
	double t0;
	long i;

	if (fd >= 0) {
		ioctl(fd, PERF_EVENT_IOC_RESET, 0);
		ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	}
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		sum += w[x % words] += 1;
	}
	result("gups", "ns_per_update", (now_ns() - t0) / n);
	if (fd >= 0) {
		ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
		if (read(fd, &misses, sizeof(misses)) == sizeof(misses))
			result("gups", "dtlb_misses_per_update",
			       (double)misses / n);
		close(fd);
	}
	/* Undo, so that the patterns still check. */
	x = 2463534242ULL;
	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		w[x % words] -= 1;
	}
	if (sum == 42)
		printf("# %llu\n", (unsigned long long)sum);
}

/*
 * Huge-mapped kB of the mapping at @p only (its VMA in smaps):
 * AnonHugePages, plus Private_Hugetlb for a hugetlbfs mapping.
 */
static long huge_kb(char *p)
{
	long thp = sp_smaps_kb(p, "AnonHugePages");
	long htlb = sp_smaps_kb(p, "Private_Hugetlb");

	return (thp > 0 ? thp : 0) + (htlb > 0 ? htlb : 0);
}

/*
 * sparse: one write per @stride of @size.  With @settle_ms >= 0, then
 * wait @settle_ms (the daemons run) and ask the memory cgroup to reclaim
 * the untouched size of the mapping, @size minus the pages written: the
 * same request in every mode, whatever each holds (a mode that holds no
 * untouched memory can meet it only by swapping out what was written).
 * With @settle_ms < 0 (the density sweep), the touches only.
 */
static int do_sparse(size_t size, size_t stride, long settle_ms)
{
	long n = size / stride, nlat = 0, rss0, swp0;
	double *lat = prefaulted(n * sizeof(*lat)), t0, t;
	long mem0 = mem_used_kb(), avail0 = sp_meminfo_kb("MemAvailable");
	char *p, buf[32];
	long faults;

	p = map(size);
	swp0 = vm("pswpout");
	rss0 = rss_kb(p);
	t0 = now_ns();
	faults = touch(p, size, stride, NULL, lat, &nlat);
	t = now_ns() - t0;
	madvise_after(p, size);
	result("sparse", "touches", n);
	result("sparse", "faults", faults);
	result("sparse", "ns_per_touch", t / n);
	percentiles("sparse", "fault", lat, nlat);
	result("sparse", "rss_kib", rss_kb(p) - rss0);
	result("sparse", "huge_kib", huge_kb(p));
	result("sparse", "mem_kib", mem_used_kb() - mem0);
	result("sparse", "avail_drop_kib",
	       avail0 - sp_meminfo_kb("MemAvailable"));
	if (settle_ms < 0)
		goto out;
	usleep(settle_ms * 1000);
	result("sparse", "swapped_out", vm("pswpout") - swp0);
	result("sparse", "rss_settled_kib", rss_kb(p) - rss0);
	result("sparse", "huge_settled_kib", huge_kb(p));
	result("sparse", "mem_settled_kib", mem_used_kb() - mem0);
	/* The same reclaim request in every mode (see above). */
	swp0 = vm("pswpout");
	snprintf(buf, sizeof(buf), "%zu", size - n * SP_PAGE);
	t0 = now_ns();
	memcg_write("memory.reclaim", buf);	/* EAGAIN when not all met */
	result("sparse", "reclaim_ms", (now_ns() - t0) / 1e6);
	result("sparse", "mem_reclaimed_kib", mem_used_kb() - mem0);
	result("sparse", "rss_reclaimed_kib", rss_kb(p) - rss0);
	result("sparse", "huge_reclaimed_kib", huge_kb(p));
	result("sparse", "swapped_by_reclaim", vm("pswpout") - swp0);
out:
	check("sparse", p, size, stride, 0);
	munmap(p, size);
	free(lat);
	return 0;
}

/*
 * The prober's rounds (-P), until it has PROBE_SAMPLES samples or after
 * PROBE_ROUNDS rounds: a p99 over fewer than 100 samples is their
 * maximum, and a mode whose fill is short (superpages fill 128 MiB in a
 * sixth of 4 KiB pages' time) would otherwise have its p99 taken over a
 * fraction of the samples of the others.
 */
#define PROBE_SAMPLES	1000
#define PROBE_ROUNDS	20

/*
 * do_fill() with the prober (-P): in each round, a fresh mapping filled
 * with the prober running from the first touch until coverage (promotion
 * may happen during the fill: threshold reached, range filled), then
 * paused while this thread checks and unmaps it, which is this program's
 * own work.  Its faults are in its own thread and do not count.
 */
static int fill_probed(size_t size, const char *wl, size_t *order)
{
	int rounds = 0;
	char *p;

	probe_start();
	do {
		p = map(size);
		probe_resume();
		touch(p, size, SP_PAGE, order, NULL, NULL);
		madvise_after(p, size);
		/* Until coverage as do_fill(), its figures not reported. */
		if (cover_ms)
			probe_wait_coverage(p, size);
		else
			probe_pause();
		check(wl, p, size, SP_PAGE, 0);
		munmap(p, size);
	} while (++rounds < PROBE_ROUNDS && probe_n < PROBE_SAMPLES);
	result(wl, "mmap_wait_rounds", rounds);
	probe_end(wl);
	free(order);
	return 0;
}

/*
 * fill: first-touch every page (in order, shuffled or strided: @kind
 * "seq", "rand" or "stride"), then wait for
 * huge-mapping coverage, then GUPS.  With -P, the same in rounds with
 * the mmap() prober running from the first touch until coverage
 * (fill_probed()), and only the prober's latencies reported: a daemon's
 * mmap_read_trylock() that fails
 * while the prober holds the lock makes it give up its pass, so figures
 * of the daemons' work taken with the prober running would be distorted.
 * The prober is paused while this program reads smaps
 * (probe_wait_coverage()).
 */
static int do_fill(size_t size, const char *kind, long updates)
{
	int rand = !strcmp(kind, "rand"), stride = !strcmp(kind, "stride");
	const char *wl = rand ? "fill-rand" : stride ? "fill-stride" :
			 "fill-seq";
	long n = size / SP_PAGE, faults;
	long long ks0, kh0, ks1, kh1, kz0, kz1;
	long col0, pro0, col, pro, pz0;
	size_t *order = rand ? shuffled(n) : stride ? strided(n) : NULL;
	double t0, t;
	char *p;

	if (opt_probe)
		return fill_probed(size, wl, order);
	p = map(size);
	col0 = vm("thp_collapse_alloc");
	pro0 = vm("superpage_promote");
	ks0 = kthread_ns("ksuperpaged");
	kh0 = kthread_ns("khugepaged");
	kz0 = kthread_ns("ksuperpage_zerod");
	pz0 = vm("superpage_prezero_used");
	t0 = now_ns();
	faults = touch(p, size, SP_PAGE, order, NULL, NULL);
	t = now_ns() - t0;
	madvise_after(p, size);
	if (cover_ms)
		wait_coverage(wl, p, size);
	else
		result(wl, "cover_pct", coverage(p, size));
	result(wl, "fill_ms", t / 1e6);
	result(wl, "faults", faults);
	result(wl, "faults_per_2m", (double)faults * SP_HPAGE / size);
	col = vm("thp_collapse_alloc") - col0;
	pro = vm("superpage_promote") - pro0;
	ks1 = kthread_ns("ksuperpaged");
	kh1 = kthread_ns("khugepaged");
	kz1 = kthread_ns("ksuperpage_zerod");
	result(wl, "collapses", col);
	/*
	 * Reservations made on frames zeroed in advance by ksuperpage_zerod
	 * (the pool of zeroed frames), and the CPU time it spent from the
	 * first touch to coverage, refilling the pool (its zeroing before
	 * the fill, in idle time, is not in it).
	 */
	if (pz0 > 0 || vm("superpage_prezero_used") > 0)
		result(wl, "prezeroed_frames",
		       vm("superpage_prezero_used") - pz0);
	if (kz0 >= 0 && kz1 >= 0)
		result(wl, "zerod_ms", (kz1 - kz0) / 1e6);
	result(wl, "promotions", pro);
	/* khugepaged copies every present subpage; promotion copies none. */
	result(wl, "copied_kib", col * (SP_HPAGE / 1024));
	/*
	 * What a 2 MiB mapping cost the daemon that built it: ksuperpaged's
	 * CPU time per promotion, or khugepaged's per collapse; nothing
	 * when the kernel has no /proc/PID/schedstat (CONFIG_SCHED_INFO:
	 * the test kernel) for a daemon that did some of the work.
	 */
	if (pro + col > 0 && (!pro || (ks0 >= 0 && ks1 >= 0)) &&
	    (!col || (kh0 >= 0 && kh1 >= 0)))
		result(wl, "daemon_us_per_2m",
		       ((ks0 >= 0 && ks1 >= 0 ? ks1 - ks0 : 0) +
			(kh0 >= 0 && kh1 >= 0 ? kh1 - kh0 : 0)) / 1e3 /
		       (pro + col));
	if (updates > 0)
		gups(p, size, updates);
	check(wl, p, size, SP_PAGE, 0);
	munmap(p, size);
	free(order);
	return 0;
}

/*
 * Latency of a sequential fill, each touch timed: over the touches that
 * took a fault ("fault_*") and over every touch ("touch_*").
 */
static int do_latency(size_t size)
{
	long n = size / SP_PAGE, nlat = 0, faults;
	double *lat = prefaulted(n * sizeof(*lat));
	double *all = prefaulted(n * sizeof(*all));
	char *p = map(size);
	double t0 = now_ns();

	faults = touch_all(p, size, SP_PAGE, NULL, lat, &nlat, all);
	result("latency", "fill_ms", (now_ns() - t0) / 1e6);
	result("latency", "faults", faults);
	percentiles("latency", "fault", lat, nlat);
	percentiles("latency", "touch", all, n);
	free(all);
	check("latency", p, size, SP_PAGE, 0);
	munmap(p, size);
	free(lat);
	return 0;
}

/* A Redis-style snapshot: fork a filled heap, the child writes sparsely. */
static int do_fork(size_t size, size_t stride)
{
	int pipefd[2], st;
	double t0, tfork;
	char *p = map(size);
	pid_t pid;

	touch(p, size, SP_PAGE, NULL, NULL, NULL);
	madvise_after(p, size);
	if (cover_ms)
		wait_coverage("fork", p, size);
	if (pipe(pipefd))
		return 2;
	fflush(stdout);
	t0 = now_ns();
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 2;
	}
	if (pid == 0) {
		long mem0, f0, cbad = 0;
		double t1;
		size_t off;

		tfork = now_ns() - t0;
		close(pipefd[0]);
		mem0 = mem_used_kb();
		f0 = minflt(RUSAGE_SELF);
		t1 = now_ns();
		for (off = 0; off < size; off += stride)
			*(uint64_t *)(p + off) ^= 1;
		result("fork", "child_write_ms", (now_ns() - t1) / 1e6);
		result("fork", "child_write_faults", minflt(RUSAGE_SELF) - f0);
		result("fork", "child_write_mem_kib", mem_used_kb() - mem0);
		result("fork", "child_fork_return_ms", tfork / 1e6);
		for (off = 0; off < size; off += stride)
			if (*(uint64_t *)(p + off) != (pattern(off / SP_PAGE) ^ 1))
				cbad++;
		if (write(pipefd[1], &cbad, sizeof(cbad)) != sizeof(cbad))
			_exit(2);
		_exit(0);
	}
	tfork = now_ns() - t0;
	close(pipefd[1]);
	{
		long cbad = 0;

		if (read(pipefd[0], &cbad, sizeof(cbad)) != sizeof(cbad))
			cbad = 1;
		corrupt += cbad;
	}
	waitpid(pid, &st, 0);
	result("fork", "fork_ms", tfork / 1e6);
	check("fork", p, size, SP_PAGE, 0);
	munmap(p, size);
	return 0;
}

/* Many short-lived processes, each touching every page of a few MiB. */
static int do_procs(long count, size_t size)
{
	long f0 = minflt(RUSAGE_CHILDREN), i, bad = 0;
	double t0 = now_ns();

	for (i = 0; i < count; i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			char *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS |
				       (opt_hugetlb ? MAP_HUGETLB | MAP_HUGE_2MB :
					0), -1, 0);
			size_t off;

			if (p == MAP_FAILED)
				_exit(2);
			for (off = 0; off < size; off += SP_PAGE)
				p[off] = 1;
			for (off = 0; off < size; off += SP_PAGE)
				if (p[off] != 1)
					_exit(3);
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			bad++;
	}
	result("procs", "us_per_process", (now_ns() - t0) / 1e3 / count);
	result("procs", "faults_per_process",
	       (double)(minflt(RUSAGE_CHILDREN) - f0) / count);
	if (bad)
		fprintf(stderr, "procs %s: %ld processes failed\n", mode, bad);
	corrupt += bad;
	return 0;
}

/* A field of /proc/@pid/smaps_rollup in kB, or -1 (the process is gone). */
static long rollup_kb(pid_t pid, const char *field)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	return sp_file_field(path, field, ':');
}

/*
 * exec: run a real program @count times, one after the other, its
 * standard input from @infile, its standard output to @outfile: per run the wall time, page faults and
 * peak RSS (wait4()'s rusage), and, sampled every 10 ms while it runs,
 * its AnonHugePages (smaps_rollup: the whole process) and the lowest
 * MemAvailable.  Then the memory cgroup's peak (memory.peak).  A run
 * that does not exit with status 0 counts as a failure.
 */
static int do_exec(long count, const char *infile, const char *outfile,
		   char **cmd)
{
	double *ms = malloc(count * sizeof(*ms));
	long avail0 = sp_meminfo_kb("MemAvailable"), avail_min = avail0;
	long huge_max = 0, rss_max = 0, faults = 0, bad = 0, i;

	for (i = 0; i < count; i++) {
		struct rusage ru;
		double t0 = now_ns();
		int st, fd;
		pid_t pid = fork();

		if (pid == 0) {
			fd = open(infile, O_RDONLY);
			if (fd < 0 || dup2(fd, 0) < 0)
				_exit(126);
			fd = open(outfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd < 0 || dup2(fd, 1) < 0)
				_exit(126);
			execvp(cmd[0], cmd);
			_exit(127);
		}
		if (pid < 0) {
			bad++;
			continue;
		}
		while (wait4(pid, &st, WNOHANG, &ru) == 0) {
			long h = rollup_kb(pid, "AnonHugePages");
			long a = sp_meminfo_kb("MemAvailable");

			if (h > huge_max)
				huge_max = h;
			if (a >= 0 && a < avail_min)
				avail_min = a;
			usleep(10000);
		}
		ms[i] = (now_ns() - t0) / 1e6;
		faults += ru.ru_minflt + ru.ru_majflt;
		if (ru.ru_maxrss > rss_max)
			rss_max = ru.ru_maxrss;
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	}
	qsort(ms, count, sizeof(*ms), cmp_double);
	result("exec", "ms_per_run", ms[count / 2]);
	result("exec", "faults_per_run", (double)faults / count);
	result("exec", "maxrss_kib", rss_max);
	result("exec", "huge_max_kib", huge_max);
	result("exec", "avail_drop_kib", avail0 - avail_min);
	result("exec", "mem_peak_kib", memcg_field("memory.peak", NULL) / 1024);
	if (bad)
		fprintf(stderr, "exec %s %s: %ld runs failed\n", cmd[0], mode,
			bad);
	corrupt += bad;
	free(ms);
	return 0;
}

/*
 * pstat: the memory of a running real program @pid (smaps_rollup: the
 * whole process), of the memory cgroup it runs in (memory.current), and
 * the MemAvailable drop since @avail0 kB.
 */
static int do_pstat(pid_t pid, long avail0)
{
	long rss = rollup_kb(pid, "Rss"), huge = rollup_kb(pid, "AnonHugePages");

	if (rss < 0) {
		fprintf(stderr, "pstat: no process %d\n", (int)pid);
		return 2;
	}
	result("pstat", "rss_kib", rss);
	result("pstat", "huge_kib", huge);
	memcg_pid = pid;
	result("pstat", "mem_kib", memcg_field("memory.current", NULL) / 1024);
	memcg_pid = 0;
	result("pstat", "avail_drop_kib",
	       avail0 - sp_meminfo_kb("MemAvailable"));
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: sp_bench [-H] [-M] [-P] [-T COVER_MS] [-m MODE] "
		"[-r REP] [-w NAME] sparse|fill|latency|fork|procs|exec|pstat "
		"ARGS...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *wl;
	int c, rc = 2;

	while ((c = getopt(argc, argv, "+HMPT:m:r:w:")) != -1) {
		switch (c) {
		case 'H':
			opt_hugetlb = 1;
			break;
		case 'M':
			opt_madvise = 1;
			break;
		case 'P':
			opt_probe = 1;
			break;
		case 'r':
			rep_nr = atoi(optarg);
			break;
		case 'T':
			cover_ms = atol(optarg);
			break;
		case 'm':
			mode = optarg;
			break;
		case 'w':
			label = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind >= argc)
		usage();
	wl = argv[optind];
	argv += optind + 1;
	argc -= optind + 1;
#define MIB(s) ((size_t)atol(s) << 20)
	if (!strcmp(wl, "sparse") && argc == 3)
		rc = do_sparse(MIB(argv[0]), atol(argv[1]) * 1024,
			       atol(argv[2]));
	else if (!strcmp(wl, "fill") && argc >= 2 &&
		 (!strcmp(argv[1], "seq") || !strcmp(argv[1], "rand") ||
		  !strcmp(argv[1], "stride")))
		rc = do_fill(MIB(argv[0]), argv[1], argc > 2 ? atol(argv[2]) : 0);
	else if (!strcmp(wl, "latency") && argc == 1)
		rc = do_latency(MIB(argv[0]));
	else if (!strcmp(wl, "fork") && argc == 2)
		rc = do_fork(MIB(argv[0]), atol(argv[1]) * 1024);
	else if (!strcmp(wl, "procs") && argc == 2)
		rc = do_procs(atol(argv[0]), MIB(argv[1]));
	else if (!strcmp(wl, "exec") && argc >= 4 && atol(argv[0]) > 0)
		rc = do_exec(atol(argv[0]), argv[1], argv[2], argv + 3);
	else if (!strcmp(wl, "pstat") && argc == 2)
		rc = do_pstat(atoi(argv[0]), atol(argv[1]));
	else
		usage();
	if (corrupt)
		printf("R %s %s corrupt_pages %ld %d\n", label ? label : wl,
		       mode, corrupt, rep_nr);
	return rc ? rc : corrupt ? 1 : 0;
}
