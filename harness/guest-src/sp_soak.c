// SPDX-License-Identifier: GPL-2.0
/*
 * sp_soak: the data-integrity soak of "make stress".
 *
 * WORKERS processes each own a 2 MiB-aligned anonymous region and keep a
 * record of what every page of it must hold: a tag made of the worker,
 * the page and a generation, in the page's first and last word, or zero
 * for a page that was never written or was punched out.  Until SECONDS
 * have passed, each worker picks operations at random:
 *
 *	write	new generations into a run of pages
 *	verify	every page against the record
 *	fork	the child checks every page, writes a run of its own copy
 *		(copy-on-write) and checks again; then the parent checks that
 *		its own pages did not change
 *	mremap	move the region to a new address, 2 MiB-aligned or not
 *	punch	MADV_DONTNEED a run: those pages must read zero
 *	protect	make a run read-only, read it, make it writable again
 *	pageout	MADV_PAGEOUT a run (to swap), MADV_COLD another
 *	pause	sleep up to 5 ms, so that the daemons get at the region
 *
 * with reservations, clusters, promotion, demotion and reclaim running
 * underneath (the stress job sets them up).  A page that reads back wrong
 * is reported with what it held and what it should have held, and makes
 * the exit status 1.  Each worker prints its operation counts.
 *
 * A worker or a fork child killed by a signal is reported ("killed by
 * signal N"); any signal but SIGKILL is a failure (exit 1).  SIGKILL is
 * what the OOM killer sends, but the soak cannot tell an OOM kill from any
 * other: when SIGKILL is all that went wrong it exits 3, and the caller
 * must confirm those kills against the memory cgroup's oom_kill count (the
 * stress job does).
 *
 *	sp_soak SECONDS WORKERS MIB_PER_WORKER
 *	sp_soak --self-test	one worker, one page changed behind its back:
 *				exits 0 only if the soak reports it
 *	sp_soak --cycle SECONDS MIB CGROUP
 *		promotion and demotion in rounds, in the memory cgroup
 *		CGROUP (a directory) that the caller put it in: map MIB
 *		(2 MiB-aligned) afresh, write every page (the ranges fill and
 *		the daemon promotes them), wait a second, set the cgroup's
 *		memory.high to half of MIB (reclaim demotes the superpages
 *		and swaps part of them), lift it again, check every page,
 *		unmap; prints "rounds=N"
 *
 * Exit status: 0 every page read back right; 1 a corrupt page, or a process
 * killed by a signal other than SIGKILL; 2 bad usage or setup failure;
 * 3 no failure, but processes killed by SIGKILL (counted in the output).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT	21
#endif
#ifndef MADV_COLD
#define MADV_COLD	20
#endif

#define PAGE	4096UL
#define HPAGE	(2UL << 20)

enum { OP_WRITE, OP_VERIFY, OP_FORK, OP_MREMAP, OP_PUNCH, OP_PROTECT,
	OP_PAGEOUT, OP_PAUSE, NR_OPS };
static const char * const op_name[NR_OPS] = {
	"write", "verify", "fork", "mremap", "punch", "protect", "pageout",
	"pause",
};

static int worker;
static char *region;
static size_t size, npages;
static uint32_t *gen;		/* per page; 0: must read zero */
static uint64_t rng;
static long corrupt;
static long sigkilled;		/* fork children killed by SIGKILL */
static int inject;		/* --self-test: corrupt a page on purpose */

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t tag(size_t page, uint32_t g)
{
	return g ? ((uint64_t)(worker + 1) << 56) ^ ((uint64_t)page << 24) ^ g :
		   0;
}

static void put(size_t page, uint32_t g)
{
	uint64_t *w = (uint64_t *)(region + page * PAGE);

	w[0] = tag(page, g);
	w[PAGE / 8 - 1] = ~tag(page, g);
	gen[page] = g;
}

/* Check @page; reports and counts a mismatch. */
static int check(size_t page, const char *when)
{
	uint64_t *w = (uint64_t *)(region + page * PAGE);
	uint64_t want = tag(page, gen[page]);
	uint64_t want_last = gen[page] ? ~want : 0;

	if (w[0] == want && w[PAGE / 8 - 1] == want_last)
		return 0;
	if (corrupt < 10)
		printf("sp_soak: worker %d: CORRUPT page %zu (%s): %016llx %016llx, want %016llx %016llx (gen %u)\n",
		       worker, page, when, (unsigned long long)w[0],
		       (unsigned long long)w[PAGE / 8 - 1],
		       (unsigned long long)want, (unsigned long long)want_last,
		       gen[page]);
	corrupt++;
	return 1;
}

static long verify_all(const char *when)
{
	long bad = 0;
	size_t k;

	for (k = 0; k < npages; k++)
		bad += check(k, when);
	return bad;
}

/* A random run of pages: [*first, *first + *n). */
static void run(size_t *first, size_t *n)
{
	size_t max = (rnd() & 1) ? 512 : 64;

	*n = 1 + rnd() % max;
	if (*n > npages)
		*n = npages;
	*first = rnd() % (npages - *n + 1);
}

static void op_fork(void)
{
	size_t first, n, k;
	int st;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		long bad = verify_all("child after fork");

		run(&first, &n);
		for (k = first; k < first + n; k++)
			put(k, gen[k] + 1);
		bad += verify_all("child after its writes");
		fflush(stdout);
		_exit(bad ? 1 : 0);
	}
	if (waitpid(pid, &st, 0) != pid) {
		printf("sp_soak: worker %d: waitpid: %s\n", worker,
		       strerror(errno));
		corrupt++;
	} else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
		printf("sp_soak: worker %d: its fork child (pid %d) was killed by signal %d (SIGKILL)\n",
		       worker, (int)pid, WTERMSIG(st));
		sigkilled++;
	} else if (WIFSIGNALED(st)) {
		printf("sp_soak: worker %d: its fork child (pid %d) was killed by signal %d (%s)\n",
		       worker, (int)pid, WTERMSIG(st), strsignal(WTERMSIG(st)));
		corrupt++;
	} else if (WEXITSTATUS(st)) {
		printf("sp_soak: worker %d: the forked child found corrupt pages\n",
		       worker);
		corrupt++;
	}
	verify_all("parent after the child's writes");
}

static void op_mremap(void)
{
	size_t off = (rnd() & 1) ? 0 : PAGE * (1 + rnd() % 511);
	char *raw, *dst, *moved;

	raw = mmap(NULL, size + 2 * HPAGE, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		return;
	dst = (char *)(((uintptr_t)raw + HPAGE - 1) & ~(HPAGE - 1)) + off;
	moved = mremap(region, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	if (moved == MAP_FAILED) {
		munmap(raw, size + 2 * HPAGE);
		return;
	}
	/* Unmap what is left of the reservation around the new place. */
	if (dst > raw)
		munmap(raw, dst - raw);
	if (raw + size + 2 * HPAGE > dst + size)
		munmap(dst + size, raw + size + 2 * HPAGE - (dst + size));
	region = moved;
	verify_all("after mremap");
}

static void op_punch(void)
{
	size_t first, n, k;

	run(&first, &n);
	if (madvise(region + first * PAGE, n * PAGE, MADV_DONTNEED))
		return;
	for (k = first; k < first + n; k++)
		gen[k] = 0;
	for (k = first; k < first + n; k++)
		check(k, "after MADV_DONTNEED");
}

static void op_protect(void)
{
	size_t first, n, k;

	run(&first, &n);
	if (mprotect(region + first * PAGE, n * PAGE, PROT_READ))
		return;
	for (k = first; k < first + n; k++)
		check(k, "read-only");
	mprotect(region + first * PAGE, n * PAGE, PROT_READ | PROT_WRITE);
}

static void op_pageout(void)
{
	size_t first, n;

	run(&first, &n);
	madvise(region + first * PAGE, n * PAGE, MADV_PAGEOUT);
	run(&first, &n);
	madvise(region + first * PAGE, n * PAGE, MADV_COLD);
}

static int work(int w, long seconds, size_t mib)
{
	long ops[NR_OPS] = { 0 };
	time_t end = time(NULL) + seconds;
	size_t first, n, k;
	char *raw;
	int op;

	worker = w;
	rng = 0x9e3779b97f4a7c15ULL * (w + 1);
	size = mib << 20;
	npages = size / PAGE;
	gen = calloc(npages, sizeof(*gen));
	raw = mmap(NULL, size + HPAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!gen || raw == MAP_FAILED) {
		perror("sp_soak");
		return 2;
	}
	region = (char *)(((uintptr_t)raw + HPAGE - 1) & ~(HPAGE - 1));
	/* The self-test goes on until its page was changed and checked. */
	while (time(NULL) < end || inject) {
		op = rnd() % NR_OPS;
		switch (op) {
		case OP_WRITE:
			run(&first, &n);
			for (k = first; k < first + n; k++)
				put(k, gen[k] + 1);
			break;
		case OP_VERIFY:
			for (k = 0; inject && k < npages; k++) {
				if (!gen[k])
					continue;
				/* Behind the record's back. */
				*(uint64_t *)(region + k * PAGE) ^= 1;
				inject = 0;
			}
			verify_all("verify");
			break;
		case OP_FORK:
			op_fork();
			break;
		case OP_MREMAP:
			op_mremap();
			break;
		case OP_PUNCH:
			op_punch();
			break;
		case OP_PROTECT:
			op_protect();
			break;
		case OP_PAGEOUT:
			op_pageout();
			break;
		case OP_PAUSE:
			usleep(rnd() % 5000);
			break;
		}
		ops[op]++;
	}
	verify_all("final");
	printf("sp_soak: worker %d:", w);
	for (op = 0, n = 0; op < NR_OPS; op++) {
		printf(" %s=%ld", op_name[op], ops[op]);
		n += ops[op];
	}
	printf(" ops=%zu corrupt=%ld sigkilled=%ld\n", n, corrupt, sigkilled);
	return corrupt ? 1 : sigkilled ? 3 : 0;
}

static int set_high(const char *cg, const char *val)
{
	char path[512];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/memory.high", cg);
	f = fopen(path, "w");
	if (!f)
		return -1;
	rc = fputs(val, f) < 0;
	/* Reclaim down to the new limit happens in this write. */
	rc |= fclose(f) != 0;
	return rc ? -1 : 0;
}

static int cycle(long seconds, size_t mib, const char *cg)
{
	time_t end = time(NULL) + seconds;
	char half[32];
	long rounds = 0;
	size_t k;
	char *raw;

	worker = 0;
	rng = 0x9e3779b97f4a7c15ULL;
	size = mib << 20;
	npages = size / PAGE;
	snprintf(half, sizeof(half), "%zuM", mib / 2 ? mib / 2 : 1);
	gen = calloc(npages, sizeof(*gen));
	if (!gen || set_high(cg, "max")) {
		perror("sp_soak: --cycle");
		return 2;
	}
	while (time(NULL) < end) {
		raw = mmap(NULL, size + HPAGE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (raw == MAP_FAILED) {
			perror("sp_soak: --cycle: mmap");
			return 2;
		}
		region = (char *)(((uintptr_t)raw + HPAGE - 1) & ~(HPAGE - 1));
		memset(gen, 0, npages * sizeof(*gen));
		for (k = 0; k < npages; k++)
			put(k, (uint32_t)rounds + 1);
		sleep(1);
		/* Not checked under the limit: that would only thrash. */
		if (set_high(cg, half))
			perror("sp_soak: --cycle: memory.high");
		set_high(cg, "max");
		verify_all("after reclaim");
		munmap(raw, size + HPAGE);
		rounds++;
	}
	printf("sp_soak: cycle: rounds=%ld corrupt=%ld\n", rounds, corrupt);
	return corrupt ? 1 : 0;
}

int main(int argc, char **argv)
{
	int workers, w, st, rc = 0, killed = 0;
	pid_t pid;

	if (argc == 2 && !strcmp(argv[1], "--self-test")) {
		inject = 1;
		rc = work(0, 2, 4);
		printf("sp_soak: self-test: %s\n", rc == 1 ?
		       "the changed page was reported" : "NOT DETECTED");
		return rc == 1 ? 0 : 1;
	}
	if (argc == 5 && !strcmp(argv[1], "--cycle")) {
		setvbuf(stdout, NULL, _IOLBF, 0);
		return cycle(atol(argv[2]), atol(argv[3]), argv[4]);
	}
	if (argc != 4) {
		fprintf(stderr, "usage: sp_soak SECONDS WORKERS MIB_PER_WORKER\n"
			"       sp_soak --cycle SECONDS MIB CGROUP\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	workers = atoi(argv[2]);
	if (workers < 1 || workers > 64) {
		fprintf(stderr, "sp_soak: 1 to 64 workers\n");
		return 2;
	}
	printf("sp_soak: %d workers of %ld MiB for %ld s\n", workers,
	       atol(argv[3]), atol(argv[1]));
	for (w = 0; w < workers; w++) {
		pid = fork();
		if (pid == 0)
			_exit(work(w, atol(argv[1]), atol(argv[3])));
		if (pid < 0) {
			perror("fork");
			return 2;
		}
		printf("sp_soak: worker %d is pid %d\n", w, (int)pid);
	}
	while ((pid = wait(&st)) > 0) {
		if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
			printf("sp_soak: worker pid %d was killed by signal %d (SIGKILL)\n",
			       (int)pid, WTERMSIG(st));
			killed = 1;
		} else if (WIFSIGNALED(st)) {
			printf("sp_soak: worker pid %d was killed by signal %d (%s)\n",
			       (int)pid, WTERMSIG(st), strsignal(WTERMSIG(st)));
			rc = 1;
		} else if (WEXITSTATUS(st) == 3) {
			killed = 1;	/* SIGKILLed fork children, reported */
		} else if (WEXITSTATUS(st)) {
			rc = 1;
		}
	}
	if (rc)
		printf("sp_soak: FAILED\n");
	else if (killed)
		printf("sp_soak: all pages read back right, but processes were killed by SIGKILL (OOM kills?)\n");
	else
		printf("sp_soak: all pages read back right\n");
	return rc ? rc : killed ? 3 : 0;
}
