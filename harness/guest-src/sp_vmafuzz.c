// SPDX-License-Identifier: GPL-2.0
/*
 * sp_vmafuzz: the VMA-edit soak of "make stress".
 *
 * THREADS threads of one process (one mm: shared page tables, mmap lock
 * and per-VMA locks) each own an arena of MIB MiB, 2 MiB-aligned, placed
 * at a fixed address far below mmap_base so that nothing else is ever
 * mapped into its holes.  Each thread keeps a model of every page of its
 * arena: no VMA, PROT_NONE, PROT_READ or PROT_READ|PROT_WRITE, and what
 * the page must hold: a tag made of the thread, the page and a generation
 * in its first and last word (the last one inverted), or zero for a page
 * never written, punched or freshly mapped; after MADV_FREE, the tag or
 * zero.  Until SECONDS have passed (or ROUNDS operations), each thread
 * edits its arena at random, mostly inside one 2 MiB range at a time and
 * at the offsets where clusters start and end:
 *
 *	mmap		MAP_FIXED over a range (a hole or not), a whole 2 MiB
 *			range at times, with one page written in it
 *	fill		sequential write or read faults, up or down (clusters),
 *			half the time into a place where the VMA changes
 *	scatter		a few scattered faults
 *	munmap		a range, leaving a hole for a later mmap
 *	mprotect	to PROT_NONE, PROT_READ or back to read-write
 *	mremap-shrink, mremap-grow (in place, into a hole),
 *	mremap-move	(to a 2 MiB-congruent or a misaligned address in the
 *			arena, resizing at times),
 *	mremap-dontunmap
 *	dontneed	MADV_DONTNEED: the pages read zero
 *	free		MADV_FREE: the pages read their tag or zero
 *	mlock, munlock	mlock(), mlock2(MLOCK_ONFAULT), munlock()
 *	hugepage	MADV_HUGEPAGE or MADV_NOHUGEPAGE
 *	fork		the child checks its copy, edits it, checks it again
 *			and exits; then the parent's pages must be unchanged
 *	check		the whole arena (below)
 *	edge		a whole 2 MiB range mapped afresh, one page written
 *			(its reservation), the VMA edited 1 to 70 pages above
 *			or below (PROT_NONE, PROT_READ, munmap, or moved away
 *			by mremap), then write faults in a row from that page
 *			into the edit: where a growing cluster meets a VMA end
 *
 * After every operation the 2 MiB ranges it touched are checked page by
 * page: an access to a page without a VMA or in PROT_NONE, and a write to
 * a PROT_READ page, must fault (SIGSEGV or SIGBUS, caught by a per-thread
 * sigsetjmp()/siglongjmp() on a per-thread sigaltstack); every allowed
 * access must read what the model says.  A whole-arena check also compares
 * /proc/self/maps with the model and looks in /proc/self/pagemap for a
 * present page where the model has no VMA.  Pagemap walks VMAs, so it
 * cannot show a PTE left in a hole (the access probe catches that one);
 * it does show it once a later mmap() covers the hole: a fresh mapping
 * must have no present page (unless a daemon has meanwhile mapped its
 * whole 2 MiB range: promotion, khugepaged).  Each violation is reported
 * with the thread, the time, the address, its page in the arena and its
 * offset in its 2 MiB range, what happened and what was expected (with the
 * thread's first one, its last 32 operations; when the parent's check
 * after a fork finds one, also the fork child's last 32, which the child
 * leaves in a shared mapping), once per page and kind until the model of
 * the page changes (the repeats are counted), and makes the exit
 * status 1.  Each thread prints its operation counts (and
 * how many of their system calls failed: the model then takes
 * /proc/self/maps for the truth), probes, expected faults and violations.
 *
 * The work runs in a child process; the parent reports how it ended and,
 * with --check-leaks, then writes /proc/sys/vm/stat_refresh until
 * nr_superpage_resv and nr_superpage_resv_unused are back to their values
 * at the start (10 s at most; after the first miss it writes
 * /proc/sys/vm/drop_caches, which drains the per-CPU LRU batches that may
 * hold a last reference): only meaningful on a quiet system, as other
 * processes' reservations come and go in the same gauges.
 *
 *	sp_vmafuzz [--check-leaks] [--rounds N] [--seed S] [--trace] SECONDS THREADS [MIB]
 *		SECONDS 0 with --rounds N: N operations per thread, no time
 *		limit; MIB per thread, even, 4 to 64 (default 8); the seed of
 *		a run is printed first (threads interleave, so a seed repeats
 *		each thread's choices, not their timing); --trace prints every
 *		operation as it starts (for a kernel that crashes mid-run)
 *	sp_vmafuzz --self-test
 *		one thread, no random operation (so that it passes on a kernel
 *		with the bug too), pages mis-modelled on purpose: a mapped page
 *		taken for a hole, a hole for a mapped page, a writable page for
 *		a read-only one, a changed word, a present page in a fresh
 *		mapping, a VMA the kernel does not have, a page changed in a
 *		fork child; exits 0 only if every one is reported
 *
 * Exit status: 0 no violation (and no leak); 1 a violation, a leak, or the
 * work process killed by a signal other than SIGKILL (an OOM kill in a
 * small memory cgroup is not a violation); 2 bad usage or setup failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP	4
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE	0x100000
#endif
#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT		1
#endif

#define PAGE		4096UL
#define HPAGE		(2UL << 20)
#define HPAGE_NR	512
/* Far below mmap_base (top-down) and TASK_UNMAPPED_BASE (bottom-up). */
#define ARENA_BASE	0x200000000000UL
#define ALTSTACK	(64UL << 10)
#define MAPSBUF		(64UL << 10)
#define HIST		32
#define PM_PRESENT	(1ULL << 63)
#define PM_SWAP		(1ULL << 62)
#define PM_PFN_MASK	((1ULL << 55) - 1)
#define MAX_REPORTS	40

enum { P_HOLE, P_NONE, P_READ, P_RW };
static const char * const prot_name[] = {
	"no VMA", "PROT_NONE", "PROT_READ", "PROT_READ|PROT_WRITE",
};

static const int prot_bits[] = {
	PROT_NONE, PROT_NONE, PROT_READ, PROT_READ | PROT_WRITE,
};

/* What a page holds: exactly val; val or zero (MADV_FREE); anything. */
enum { C_EXACT, C_EITHER, C_ANY };

/* THP flags of the page's VMA, as far as the model knows. */
enum { H_DEFAULT, H_HUGE, H_NOHUGE };

struct page_model {
	uint64_t val;		/* first word; the last holds ~val; 0: zero */
	uint8_t prot;		/* P_* */
	uint8_t content;	/* C_* */
	uint8_t locked;		/* mlock()ed, as far as the model knows */
	uint8_t huge;		/* H_* */
	uint8_t reported;	/* kinds of violation reported since it changed */
};

enum {
	OP_MAP, OP_FILL, OP_SCATTER, OP_MUNMAP, OP_MPROTECT, OP_SHRINK,
	OP_GROW, OP_MOVE, OP_DONTUNMAP, OP_DONTNEED, OP_FREE, OP_MLOCK,
	OP_MUNLOCK, OP_HUGE, OP_FORK, OP_CHECK, OP_EDGE, NR_OPS
};

static const struct {
	const char *name;
	int weight;
} ops[NR_OPS] = {
	[OP_MAP] = { "mmap", 10 },
	[OP_FILL] = { "fill", 22 },
	[OP_SCATTER] = { "scatter", 8 },
	[OP_MUNMAP] = { "munmap", 8 },
	[OP_MPROTECT] = { "mprotect", 12 },
	[OP_SHRINK] = { "mremap-shrink", 3 },
	[OP_GROW] = { "mremap-grow", 4 },
	[OP_MOVE] = { "mremap-move", 5 },
	[OP_DONTUNMAP] = { "mremap-dontunmap", 2 },
	[OP_DONTNEED] = { "dontneed", 5 },
	[OP_FREE] = { "free", 4 },
	[OP_MLOCK] = { "mlock", 2 },
	[OP_MUNLOCK] = { "munlock", 2 },
	[OP_HUGE] = { "hugepage", 4 },
	[OP_FORK] = { "fork", 1 },
	[OP_CHECK] = { "check", 2 },
	[OP_EDGE] = { "edge", 6 },
};

/* Kinds of violation. */
enum {
	V_ACCESS, V_WRITE, V_FAULT, V_CONTENT, V_PRESENT, V_LAYOUT, V_CHILD,
	NR_V
};

static const char * const v_name[NR_V] = {
	"access", "write", "fault", "content", "present", "layout", "child",
};

struct hist {
	int op, err;
	size_t a, n, b, m;
	long x;
};

struct child_hist {
	struct hist hist[HIST];
	unsigned int first, nhist;	/* its first operation, and the end */
};

struct thread {
	int id;
	pthread_t tid;
	char *base;		/* the arena */
	size_t npages, nranges;
	struct page_model *pg;
	uint8_t *kprot;		/* scratch: the kernel's view */
	uint64_t *pm;		/* scratch: pagemap entries */
	char *mapsbuf;
	char *altstack;
	uint64_t *dirty;	/* 2 MiB ranges to check after the operation */
	uint64_t rng;
	uint32_t gen;
	size_t focus;
	int in_child;
	int pagemap_fd;
	long ops[NR_OPS], failed[NR_OPS];
	long faults, probes, resyncs;
	long violations, vkind[NR_V], distinct;
	struct hist hist[HIST];
	unsigned int nhist;
	/* Shared with the fork child: its last operations, for the parent. */
	struct child_hist *child;
	int reported_hist;
	/* The fault probe. */
	sigjmp_buf jb;
	volatile sig_atomic_t probing;
	volatile int sig;
	/* --self-test: the fork child changes a page behind its model. */
	int inject_child;
	/* Set at the end of its loop: an Oops kills the thread, not the join. */
	int finished;
};

static __thread struct thread *self;
static long rounds;
static int trace;
static struct timespec deadline, started;
static int timed;
static pthread_barrier_t start_barrier;

static void say(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	/* One write() per line: lines of concurrent threads do not mix. */
	if (write(1, buf, n) < 0)
		return;
}

static uint64_t rnd(struct thread *t)
{
	t->rng ^= t->rng << 13;
	t->rng ^= t->rng >> 7;
	t->rng ^= t->rng << 17;
	return t->rng;
}

static char *addr(struct thread *t, size_t k)
{
	return t->base + k * PAGE;
}

static uint64_t last_word(uint64_t val)
{
	return val ? ~val : 0;
}

static uint64_t new_tag(struct thread *t, size_t k)
{
	return ((uint64_t)(t->id + 1) << 48) | ((uint64_t)(k & 0xffff) << 32) |
	       ++t->gen;
}

/* ---- probes ---------------------------------------------------------- */

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	struct thread *t = self;

	(void)si;
	(void)uc;
	if (t && t->probing) {
		t->probing = 0;
		t->sig = sig;
		siglongjmp(t->jb, 1);
	}
	/* Not a probe: die of it when the access is retried. */
	signal(sig, SIG_DFL);
}

/* Read the word at @p into *@out: 0, or the signal that the read raised. */
static int probe_read(struct thread *t, const char *p, uint64_t *out)
{
	t->probes++;
	if (sigsetjmp(t->jb, 0))
		return t->sig;
	t->probing = 1;
	*out = *(const volatile uint64_t *)p;
	t->probing = 0;
	return 0;
}

/* Write the word at @p with what it holds (a locked OR of 0). */
static int probe_write(struct thread *t, char *p)
{
	t->probes++;
	if (sigsetjmp(t->jb, 0))
		return t->sig;
	t->probing = 1;
	__atomic_fetch_or((uint64_t *)p, 0, __ATOMIC_RELAXED);
	t->probing = 0;
	return 0;
}

/* Store @v in the first word of @p and ~@v in the last. */
static int probe_put(struct thread *t, char *p, uint64_t v)
{
	t->probes++;
	if (sigsetjmp(t->jb, 0))
		return t->sig;
	t->probing = 1;
	*(volatile uint64_t *)p = v;
	*(volatile uint64_t *)(p + PAGE - 8) = last_word(v);
	t->probing = 0;
	return 0;
}

static const char *signame(int sig)
{
	return sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : "signal";
}

/* ---- reports --------------------------------------------------------- */

static void hist_line(struct thread *t, struct hist *h, const char *prefix);

/* Record an operation (or a step of one); --trace prints it too. */
static void hist_add(struct thread *t, int op, size_t a, size_t n, size_t b,
		     size_t m, long x, int err)
{
	struct hist *h = &t->hist[t->nhist++ % HIST];
	char prefix[32];

	h->op = op;
	h->a = a;
	h->n = n;
	h->b = b;
	h->m = m;
	h->x = x;
	h->err = err;
	if (trace) {
		snprintf(prefix, sizeof(prefix), "T%d%s: ", t->id,
			 t->in_child ? " child" : "");
		hist_line(t, h, prefix);
	}
}

static const char *who(struct thread *t)
{
	return t->in_child ? " fork child" : "";
}

static void hist_line(struct thread *t, struct hist *h, const char *prefix)
{
	char extra[96] = "";

	switch (h->op) {
	case OP_MAP:
	case OP_MPROTECT:
		snprintf(extra, sizeof(extra), " %s", prot_name[h->x]);
		break;
	case OP_FILL:
		snprintf(extra, sizeof(extra), " %s %s",
			 h->x & 1 ? "down" : "up",
			 h->x & 2 ? "writes" : "reads");
		break;
	case OP_SHRINK:
	case OP_GROW:
		snprintf(extra, sizeof(extra), " to %zu pages", h->m);
		break;
	case OP_MOVE:
	case OP_DONTUNMAP:
		snprintf(extra, sizeof(extra), " to page %zu, %zu pages", h->b,
			 h->m);
		break;
	case OP_HUGE:
		snprintf(extra, sizeof(extra), " %s",
			 h->x == H_HUGE ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE");
		break;
	case OP_MLOCK:
		snprintf(extra, sizeof(extra), "%s",
			 h->x ? " MLOCK_ONFAULT" : "");
		break;
	}
	say("sp_vmafuzz: %s%-16s pages %zu-%zu (range %zu +%zu)%s%s%s", prefix,
	    ops[h->op].name, h->a, h->a + h->n - 1, h->a / HPAGE_NR,
	    h->a % HPAGE_NR, extra, h->err ? ": failed, " : "",
	    h->err ? strerror(h->err) : "");
}

/* Entries @from to @to (excluded) of the ring @h, the last HIST at most. */
static void hist_lines(struct thread *t, struct hist *h, unsigned int from,
		       unsigned int to, const char *prefix)
{
	unsigned int i = to - from > HIST ? to - HIST : from;

	for (; i < to; i++)
		hist_line(t, &h[i % HIST], prefix);
}

static void hist_print(struct thread *t)
{
	say("sp_vmafuzz: T%d%s: last operations (page numbers in the arena at %p, oldest first):",
	    t->id, who(t), t->base);
	hist_lines(t, t->hist, 0, t->nhist, "  ");
}

/* Count a violation; report it (and return 1) unless it was already. */
static int violation(struct thread *t, int kind, size_t k, const char *when,
		     const char *fmt, ...)
{
	struct timespec now;
	char msg[512];
	va_list ap;

	t->violations++;
	t->vkind[kind]++;
	/* Each page once per kind until its model changes. */
	if (kind != V_CHILD) {
		if (t->pg[k].reported & (1 << kind))
			return 0;
		t->pg[k].reported |= 1 << kind;
	}
	if (++t->distinct > MAX_REPORTS) {
		if (t->distinct == MAX_REPORTS + 1)
			say("sp_vmafuzz: T%d%s: more violations, counted only",
			    t->id, who(t));
		return 0;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_MONOTONIC, &now);
	say("sp_vmafuzz: T%d%s: %.1fs: VIOLATION (%s) at %p (page %zu: range %zu +0x%05lx): %s [%s]",
	    t->id, who(t), (now.tv_sec - started.tv_sec) +
	    (now.tv_nsec - started.tv_nsec) / 1e9, v_name[kind], addr(t, k),
	    k, k / HPAGE_NR, (unsigned long)(k % HPAGE_NR) * PAGE, msg, when);
	if (!t->reported_hist) {
		t->reported_hist = 1;
		hist_print(t);
	}
	return 1;
}

/* Pagemap entries of pages [a, a + n) into t->pm; 0 on success. */
static int pagemap(struct thread *t, size_t a, size_t n)
{
	off_t off = ((uintptr_t)addr(t, a) / PAGE) * 8;
	ssize_t len = n * 8;

	if (t->pagemap_fd < 0)
		return -1;
	return pread(t->pagemap_fd, t->pm, len, off) == len ? 0 : -1;
}

/*
 * What the kernel maps at page @k and its neighbours, for a report of a
 * page with the wrong content: the pagemap entry (PFN, present, swapped,
 * exclusive), and /proc/kpageflags and /proc/kpagecount of the PFN (both
 * need CAP_SYS_ADMIN; the guest runs as root).  Tells a zapped and
 * refaulted page (the zero page, or a fresh PFN) from a page whose frame
 * was overwritten in place (the PFN of its neighbours' frame).
 */
static void pm_describe(struct thread *t, size_t k)
{
	static int flags_fd = -2, count_fd = -2;
	size_t lo = k ? k - 1 : 0, hi = k + 2 < t->npages ? k + 2 : t->npages;
	size_t n = hi - lo, j;
	char line[512];
	int len = 0;

	if (flags_fd == -2) {
		flags_fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
		count_fd = open("/proc/kpagecount", O_RDONLY | O_CLOEXEC);
	}
	/* Into t->pm: no caller of check_page() is walking it. */
	if (pagemap(t, lo, n))
		return;
	for (j = lo; j < lo + n; j++) {
		uint64_t e = t->pm[j - lo], fl = 0, cnt = 0;
		uint64_t pfn = e & PM_PFN_MASK;

		if ((e & PM_PRESENT) && pfn) {
			if (flags_fd >= 0)
				pread(flags_fd, &fl, 8, pfn * 8);
			if (count_fd >= 0)
				pread(count_fd, &cnt, 8, pfn * 8);
		}
		len += snprintf(line + len, sizeof(line) - len,
				" [page %zu: pagemap %016llx pfn 0x%llx%s%s%s flags 0x%llx count %llu]",
				j, (unsigned long long)e,
				(unsigned long long)((e & PM_PRESENT) ? pfn : 0),
				(e & PM_PRESENT) ? " present" : "",
				(e & PM_SWAP) ? " swapped" : "",
				(e >> 56 & 1) ? " exclusive" : "",
				(unsigned long long)fl, (unsigned long long)cnt);
		if (len >= (int)sizeof(line))
			break;
	}
	say("sp_vmafuzz: T%d%s: kernel view:%s", t->id, who(t), line);
}

/* What a word pair read back holds, for a report. */
static void describe(char *buf, size_t len, uint64_t w0, uint64_t w1)
{
	if (!w0 && !w1)
		snprintf(buf, len, "zero");
	else if (w1 == ~w0 && (w0 >> 48) && (w0 >> 48) <= 256)
		snprintf(buf, len, "%016llx %016llx (thread %llu page %llu gen %llu)",
			 (unsigned long long)w0, (unsigned long long)w1,
			 (unsigned long long)(w0 >> 48) - 1,
			 (unsigned long long)(w0 >> 32) & 0xffff,
			 (unsigned long long)w0 & 0xffffffff);
	else
		snprintf(buf, len, "%016llx %016llx", (unsigned long long)w0,
			 (unsigned long long)w1);
}

/* ---- checks ---------------------------------------------------------- */

static int content_ok(struct page_model *m, uint64_t w0, uint64_t w1)
{
	int exact = w0 == m->val && w1 == last_word(m->val);

	switch (m->content) {
	case C_EXACT:
		return exact;
	case C_EITHER:
		if (!w0 && !w1) {
			/* Freed and refaulted: zero from now on. */
			m->val = 0;
			m->content = C_EXACT;
			return 1;
		}
		return exact;
	}
	return 1;
}

/* Check page @k against the model with the accesses it allows and forbids. */
static void check_page(struct thread *t, size_t k, const char *when)
{
	struct page_model *m = &t->pg[k];
	char *p = addr(t, k);
	char got[128], want[128];
	uint64_t w0, w1;
	int sig;

	sig = probe_read(t, p, &w0);
	if (m->prot == P_HOLE || m->prot == P_NONE) {
		if (sig) {
			t->faults++;
			return;
		}
		probe_read(t, p + PAGE - 8, &w1);
		describe(got, sizeof(got), w0, w1);
		violation(t, V_ACCESS, k, when,
			  "read succeeded (%s), want SIGSEGV: %s", got,
			  prot_name[m->prot]);
		return;
	}
	if (!sig)
		sig = probe_read(t, p + PAGE - 8, &w1);
	if (sig) {
		violation(t, V_FAULT, k, when, "read raised %s, want content: %s",
			  signame(sig), prot_name[m->prot]);
		return;
	}
	if (!content_ok(m, w0, w1)) {
		describe(got, sizeof(got), w0, w1);
		describe(want, sizeof(want), m->val, last_word(m->val));
		if (violation(t, V_CONTENT, k, when, "holds %s, want %s%s (%s)",
			      got, want, m->content == C_EITHER ? " or zero" : "",
			      prot_name[m->prot]))
			pm_describe(t, k);
	}
	if (m->prot == P_READ) {
		if (probe_write(t, p)) {
			t->faults++;
			return;
		}
		violation(t, V_WRITE, k, when,
			  "write succeeded, want SIGSEGV: PROT_READ");
	}
}

/* Write a new tag into page @k, which the model says is writable. */
static void put(struct thread *t, size_t k, const char *when)
{
	struct page_model *m = &t->pg[k];
	uint64_t v = new_tag(t, k);
	int sig;

	sig = probe_put(t, addr(t, k), v);
	if (sig) {
		violation(t, V_FAULT, k, when, "write raised %s, want none: %s",
			  signame(sig), prot_name[m->prot]);
		return;
	}
	m->val = v;
	m->content = C_EXACT;
	m->reported = 0;
}

/* Access page @k as a program would: a write where allowed, else a check. */
static void touch(struct thread *t, size_t k, int write, const char *when)
{
	if (write && t->pg[k].prot == P_RW)
		put(t, k, when);
	else
		check_page(t, k, when);
}

static void mark(struct thread *t, size_t k)
{
	if (k < t->npages)
		t->dirty[k / HPAGE_NR / 64] |= 1ULL << (k / HPAGE_NR % 64);
}

/* Mark the 2 MiB ranges of the boundaries of [a, a + n). */
static void mark_edges(struct thread *t, size_t a, size_t n)
{
	if (a)
		mark(t, a - 1);
	mark(t, a);
	mark(t, a + n - 1);
	mark(t, a + n);
}

static void check_range(struct thread *t, size_t r, const char *when)
{
	size_t k;

	for (k = r * HPAGE_NR; k < (r + 1) * HPAGE_NR; k++)
		check_page(t, k, when);
}

static void check_dirty(struct thread *t, const char *when)
{
	size_t r;

	for (r = 0; r < t->nranges; r++) {
		if (!(t->dirty[r / 64] & (1ULL << (r % 64))))
			continue;
		t->dirty[r / 64] &= ~(1ULL << (r % 64));
		check_range(t, r, when);
	}
}

/* Pagemap: no page present (or swapped) where the model has no VMA. */
static void check_holes(struct thread *t, const char *when)
{
	size_t k;

	if (pagemap(t, 0, t->npages))
		return;
	for (k = 0; k < t->npages; k++)
		if (t->pg[k].prot == P_HOLE && (t->pm[k] & (PM_PRESENT | PM_SWAP)))
			violation(t, V_PRESENT, k, when,
				  "pagemap shows a %s page (%016llx), want none: no VMA",
				  t->pm[k] & PM_PRESENT ? "present" : "swapped",
				  (unsigned long long)t->pm[k]);
}

/*
 * Pagemap right after mmap() of [a, a + n): nothing may be there yet, unless
 * a daemon has meanwhile mapped the whole 2 MiB range (promotion, collapse).
 */
static void check_fresh(struct thread *t, size_t a, size_t n, const char *when)
{
	size_t r, k, first = a / HPAGE_NR, last = (a + n - 1) / HPAGE_NR;
	int all;

	for (r = first; r <= last; r++) {
		if (pagemap(t, r * HPAGE_NR, HPAGE_NR))
			return;
		for (k = 0, all = 1; k < HPAGE_NR; k++)
			if (!(t->pm[k] & (PM_PRESENT | PM_SWAP)))
				all = 0;
		if (all)
			continue;
		for (k = 0; k < HPAGE_NR; k++) {
			size_t page = r * HPAGE_NR + k;

			if (page < a || page >= a + n ||
			    !(t->pm[k] & (PM_PRESENT | PM_SWAP)))
				continue;
			violation(t, V_PRESENT, page, when,
				  "pagemap shows a present page (%016llx) right after mmap(), want none",
				  (unsigned long long)t->pm[k]);
		}
	}
}

static void parse_maps_line(struct thread *t, char *line, uintptr_t lo,
			    uintptr_t hi, uint8_t *out)
{
	uintptr_t start, end, x;
	char *e;
	int prot;

	start = strtoul(line, &e, 16);
	if (*e != '-')
		return;
	end = strtoul(e + 1, &e, 16);
	if (*e != ' ' || end <= lo || start >= hi)
		return;
	prot = e[2] == 'w' ? P_RW : e[1] == 'r' ? P_READ : P_NONE;
	if (start < lo)
		start = lo;
	if (end > hi)
		end = hi;
	for (x = start; x < end; x += PAGE)
		out[(x - lo) / PAGE] = prot;
}

/* The kernel's view of pages [a, a + n) from /proc/self/maps into t->kprot. */
static int maps_prot(struct thread *t, size_t a, size_t n)
{
	uintptr_t lo = (uintptr_t)addr(t, a), hi = lo + n * PAGE;
	uint8_t *out = t->kprot + a;
	char *buf = t->mapsbuf, *line, *nl;
	size_t len = 0;
	ssize_t r;
	int fd;

	memset(out, P_HOLE, n);
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	do {
		r = read(fd, buf + len, MAPSBUF - 1 - len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			return -1;
		}
		len += r;
		for (line = buf; (nl = memchr(line, '\n', buf + len - line));
		     line = nl + 1) {
			*nl = 0;
			parse_maps_line(t, line, lo, hi, out);
		}
		len = buf + len - line;
		memmove(buf, line, len);
	} while (r > 0);
	close(fd);
	return 0;
}

/*
 * Take the kernel's VMAs for the truth in [a, a + n), after a system call
 * that failed and may have done part of its work.
 */
static void resync(struct thread *t, size_t a, size_t n)
{
	size_t k;

	if (maps_prot(t, a, n))
		return;
	t->resyncs++;
	for (k = a; k < a + n; k++) {
		struct page_model *m = &t->pg[k];

		if (t->kprot[k] == m->prot)
			continue;
		m->reported = 0;
		if (t->kprot[k] == P_HOLE) {
			m->val = 0;
			m->content = C_EXACT;
			m->locked = 0;
			m->huge = H_DEFAULT;
		} else if (m->prot == P_HOLE) {
			m->val = 0;
			m->content = C_ANY;
		}
		m->prot = t->kprot[k];
	}
	mark_edges(t, a, n);
}

/* /proc/self/maps against the model. */
static void check_layout(struct thread *t, const char *when)
{
	size_t k;

	if (maps_prot(t, 0, t->npages))
		return;
	for (k = 0; k < t->npages; k++) {
		struct page_model *m = &t->pg[k];

		if (t->kprot[k] == m->prot)
			continue;
		violation(t, V_LAYOUT, k, when,
			  "/proc/self/maps says %s, the model %s",
			  prot_name[t->kprot[k]], prot_name[m->prot]);
		/* Report it once. */
		if (t->kprot[k] == P_HOLE) {
			m->val = 0;
			m->content = C_EXACT;
		} else if (m->prot == P_HOLE) {
			m->content = C_ANY;
		}
		m->prot = t->kprot[k];
	}
}

static void check_all(struct thread *t, const char *when)
{
	size_t k;

	check_layout(t, when);
	check_holes(t, when);
	for (k = 0; k < t->npages; k++)
		check_page(t, k, when);
	memset(t->dirty, 0, (t->nranges + 63) / 64 * 8);
}

/* ---- operations ------------------------------------------------------ */

static size_t rnd_len(struct thread *t, size_t max)
{
	size_t n;

	switch (rnd(t) % 4) {
	case 0:
		n = 1 + rnd(t) % 4;
		break;
	case 1:
		n = 1 + rnd(t) % 32;
		break;
	case 2:
		n = 1 + rnd(t) % 128;
		break;
	default:
		n = 1 + rnd(t) % 600;
		break;
	}
	return n < max ? n : max;
}

/*
 * A page of the range in focus (which moves now and then), most often where
 * a cluster starts or ends: near the range's ends or a 64-page boundary.
 */
static size_t rnd_page(struct thread *t)
{
	size_t off;

	if (rnd(t) % 8 == 0)
		t->focus = rnd(t) % t->nranges;
	switch (rnd(t) % 4) {
	case 0:
		off = rnd(t) % 8;
		break;
	case 1:
		off = HPAGE_NR - 1 - rnd(t) % 8;
		break;
	case 2:
		off = (rnd(t) % (HPAGE_NR / 64)) * 64 + rnd(t) % 8;
		off = (off + HPAGE_NR - 4) % HPAGE_NR;
		break;
	default:
		off = rnd(t) % HPAGE_NR;
		break;
	}
	return t->focus * HPAGE_NR + off;
}

/* A random range [*a, *a + *n) inside the arena. */
static void rnd_range(struct thread *t, size_t *a, size_t *n, size_t max)
{
	*a = rnd_page(t);
	*n = rnd_len(t, max);
	if (*a + *n > t->npages)
		*n = t->npages - *a;
}

/* Could pages @m and @o be in one VMA, as far as the model knows? */
static int same_vma(struct page_model *m, struct page_model *o)
{
	return o->prot == m->prot && o->locked == m->locked &&
	       o->huge == m->huge;
}

/* How many pages from @a on look like one VMA to the model (at most @n). */
static size_t uniform_run(struct thread *t, size_t a, size_t n)
{
	size_t i;

	for (i = 1; i < n && same_vma(&t->pg[a], &t->pg[a + i]); i++)
		;
	return i;
}

static size_t mapped_run(struct thread *t, size_t a, size_t n)
{
	size_t i;

	for (i = 0; i < n && t->pg[a + i].prot != P_HOLE; i++)
		;
	return i;
}

static void set_fresh(struct thread *t, size_t a, size_t n, int prot)
{
	size_t k;

	for (k = a; k < a + n; k++) {
		t->pg[k].prot = prot;
		t->pg[k].val = 0;
		t->pg[k].content = C_EXACT;
		t->pg[k].locked = 0;
		t->pg[k].huge = H_DEFAULT;
		t->pg[k].reported = 0;
	}
}

static int rnd_prot(struct thread *t)
{
	int r = rnd(t) % 10;

	return r < 7 ? P_RW : r < 8 ? P_READ : P_NONE;
}

static int op_map(struct thread *t)
{
	size_t a, n, k;
	int prot, whole = rnd(t) % 3 == 0;
	void *p;

	if (whole) {
		a = rnd_page(t) / HPAGE_NR * HPAGE_NR;
		n = HPAGE_NR;
		prot = P_RW;
	} else {
		rnd_range(t, &a, &n, 600);
		/* Reuse a hole, most of the time, if there is one here. */
		for (k = a; k < a + n && t->pg[k].prot != P_HOLE; k++)
			;
		if (k < a + n && rnd(t) % 4) {
			a = k;
			for (n = 1; a + n < t->npages &&
			     t->pg[a + n].prot == P_HOLE; n++)
				;
			if (rnd(t) & 1)
				n = 1 + rnd(t) % n;
		}
		prot = rnd_prot(t);
	}
	hist_add(t, OP_MAP, a, n, 0, 0, prot, 0);
	mark_edges(t, a, n);
	p = mmap(addr(t, a), n * PAGE, prot_bits[prot],
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (p == MAP_FAILED) {
		t->hist[(t->nhist - 1) % HIST].err = errno;
		resync(t, a, n);
		return -1;
	}
	set_fresh(t, a, n, prot);
	check_fresh(t, a, n, "mmap");
	if (whole)	/* The reservation of the range, at a random page. */
		put(t, a + rnd(t) % HPAGE_NR, "mmap");
	return 0;
}

/*
 * A page of the range in focus where the model's VMA changes (the page
 * before it has another protection), or 0 if there is none.
 */
static size_t rnd_boundary(struct thread *t)
{
	size_t r = rnd_page(t) / HPAGE_NR, off = rnd(t) % HPAGE_NR, i, k;

	for (i = 0; i < HPAGE_NR; i++) {
		k = r * HPAGE_NR + (off + i) % HPAGE_NR;
		if (k && t->pg[k].prot != t->pg[k - 1].prot)
			return k;
	}
	return 0;
}

/*
 * Faults in a row, up or down, half the time into a place where the VMA
 * changes, from up to 70 pages away: a growing cluster meets the VMA's end.
 */
static int op_fill(struct thread *t)
{
	size_t a = rnd_page(t), n = rnd_len(t, 600), b, i, k;
	int down = rnd(t) & 1, write = rnd(t) % 4 != 0;

	b = rnd(t) & 1 ? rnd_boundary(t) : 0;
	if (b && t->pg[b - 1].prot != P_HOLE && t->pg[b - 1].prot != P_NONE) {
		down = 0;
		a = b - 1 - rnd(t) % 70 % b;
		n = b - a + rnd(t) % 4;
	} else if (b && t->pg[b].prot != P_HOLE && t->pg[b].prot != P_NONE) {
		down = 1;
		a = b + rnd(t) % 70;
		n = a - b + 1 + rnd(t) % 4;
	}
	if (down && n > a + 1)
		n = a + 1;
	if (a >= t->npages)
		a = t->npages - 1;
	if (!down && a + n > t->npages)
		n = t->npages - a;
	hist_add(t, OP_FILL, down ? a - n + 1 : a, n, 0, 0,
		 down | write << 1, 0);
	for (i = 0; i < n; i++) {
		k = down ? a - i : a + i;
		touch(t, k, write, "fill");
		mark(t, k);
	}
	return 0;
}

static int op_scatter(struct thread *t)
{
	size_t r = rnd_page(t) / HPAGE_NR, i, n = 1 + rnd(t) % 16, k;

	hist_add(t, OP_SCATTER, r * HPAGE_NR, HPAGE_NR, 0, 0, 0, 0);
	for (i = 0; i < n; i++) {
		k = r * HPAGE_NR + rnd(t) % HPAGE_NR;
		touch(t, k, rnd(t) & 1, "scatter");
	}
	mark(t, r * HPAGE_NR);
	return 0;
}

static int op_munmap(struct thread *t)
{
	size_t a, n;

	rnd_range(t, &a, &n, 600);
	hist_add(t, OP_MUNMAP, a, n, 0, 0, 0, 0);
	mark_edges(t, a, n);
	if (munmap(addr(t, a), n * PAGE)) {
		t->hist[(t->nhist - 1) % HIST].err = errno;
		resync(t, a, n);
		return -1;
	}
	set_fresh(t, a, n, P_HOLE);
	return 0;
}

static int op_mprotect(struct thread *t)
{
	size_t a, n, k;
	int prot = rnd_prot(t);

	rnd_range(t, &a, &n, 600);
	n = mapped_run(t, a, n);
	if (!n)
		return 1;
	hist_add(t, OP_MPROTECT, a, n, 0, 0, prot, 0);
	mark_edges(t, a, n);
	if (mprotect(addr(t, a), n * PAGE, prot_bits[prot])) {
		t->hist[(t->nhist - 1) % HIST].err = errno;
		resync(t, a, n);
		return -1;
	}
	for (k = a; k < a + n; k++) {
		t->pg[k].prot = prot;
		t->pg[k].reported = 0;
	}
	return 0;
}

static int op_shrink(struct thread *t)
{
	size_t a, n, m;

	rnd_range(t, &a, &n, 600);
	if (t->pg[a].prot == P_HOLE)
		return 1;
	n = uniform_run(t, a, n);
	if (n < 2)
		return 1;
	m = 1 + rnd(t) % (n - 1);
	hist_add(t, OP_SHRINK, a, n, 0, m, 0, 0);
	mark_edges(t, a, n);
	if (mremap(addr(t, a), n * PAGE, m * PAGE, 0) == MAP_FAILED) {
		t->hist[(t->nhist - 1) % HIST].err = errno;
		resync(t, a, n);
		return -1;
	}
	set_fresh(t, a + m, n - m, P_HOLE);
	return 0;
}

/* Grow a run that ends at a hole into the hole, in place. */
static int op_grow(struct thread *t)
{
	size_t a = rnd_page(t), e, h, g, n, k;
	struct page_model m;

	/* The next run that ends at a hole, from a. */
	for (e = a; e < t->npages && t->pg[e].prot == P_HOLE; e++)
		;
	for (a = e; e < t->npages && t->pg[e].prot != P_HOLE; e++)
		;
	if (e >= t->npages || a == e)
		return 1;
	/* Back from the hole to the start of its uniform run, then in. */
	for (a = e - 1; a > 0 && same_vma(&t->pg[e - 1], &t->pg[a - 1]); a--)
		;
	a += rnd(t) % (e - a);
	n = e - a;
	for (h = 0; e + h < t->npages && t->pg[e + h].prot == P_HOLE; h++)
		;
	g = 1 + rnd(t) % (h < 600 ? h : 600);
	hist_add(t, OP_GROW, a, n, 0, n + g, 0, 0);
	mark_edges(t, a, n + g);
	if (mremap(addr(t, a), n * PAGE, (n + g) * PAGE, 0) == MAP_FAILED) {
		t->hist[(t->nhist - 1) % HIST].err = errno;
		resync(t, a, n + g);
		return -1;
	}
	m = t->pg[e - 1];
	for (k = e; k < e + g; k++) {
		t->pg[k] = m;
		t->pg[k].val = 0;
		t->pg[k].content = C_EXACT;
		t->pg[k].reported = 0;
	}
	return 0;
}

/*
 * Move a run elsewhere in the arena: congruent modulo 2 MiB or at a random
 * page, at times resized; with MREMAP_DONTUNMAP the source stays, empty.
 */
static int op_move(struct thread *t, int dontunmap)
{
	int op = dontunmap ? OP_DONTUNMAP : OP_MOVE;
	size_t a, n, m, b, k, tries;
	struct page_model *tmp;
	int flags = MREMAP_MAYMOVE | MREMAP_FIXED;

	rnd_range(t, &a, &n, 600);
	if (t->pg[a].prot == P_HOLE)
		return 1;
	n = uniform_run(t, a, n);
	m = n;
	if (dontunmap)
		flags |= MREMAP_DONTUNMAP;
	else if (rnd(t) % 4 == 0)
		m = 1 + rnd(t) % (2 * n);	/* shrink or grow on the way */
	if (m > t->npages / 4)
		return 1;
	for (tries = 0; tries < 16; tries++) {
		if (rnd(t) & 1)
			b = (rnd(t) % t->nranges) * HPAGE_NR + a % HPAGE_NR;
		else
			b = rnd(t) % t->npages;
		if (b + m <= t->npages && (b + m <= a || b >= a + n))
			break;
	}
	if (tries == 16)
		return 1;
	hist_add(t, op, a, n, b, m, 0, 0);
	mark_edges(t, a, n);
	mark_edges(t, b, m);
	if (mremap(addr(t, a), n * PAGE, m * PAGE, flags,
		   addr(t, b)) == MAP_FAILED) {
		t->hist[(t->nhist - 1) % HIST].err = errno;
		/* The destination may be unmapped already. */
		resync(t, a, n);
		resync(t, b, m);
		return -1;
	}
	tmp = t->pg + t->npages;	/* scratch behind the model */
	memcpy(tmp, t->pg + a, n * sizeof(*tmp));
	if (dontunmap) {
		for (k = a; k < a + n; k++) {
			t->pg[k].val = 0;
			t->pg[k].content = C_EXACT;
			t->pg[k].locked = 0;
		}
	} else {
		set_fresh(t, a, n, P_HOLE);
	}
	for (k = 0; k < m; k++) {
		t->pg[b + k] = tmp[k < n ? k : n - 1];
		t->pg[b + k].reported = 0;
		if (k >= n) {
			t->pg[b + k].val = 0;
			t->pg[b + k].content = C_EXACT;
		}
	}
	return 0;
}

/* MADV_DONTNEED or MADV_FREE over a range, holes and all. */
static int op_discard(struct thread *t, int free)
{
	int op = free ? OP_FREE : OP_DONTNEED, err = 0;
	size_t a, n, k;

	rnd_range(t, &a, &n, 600);
	hist_add(t, op, a, n, 0, 0, 0, 0);
	mark_edges(t, a, n);
	if (madvise(addr(t, a), n * PAGE, free ? MADV_FREE : MADV_DONTNEED))
		err = errno;
	t->hist[(t->nhist - 1) % HIST].err = err;
	/*
	 * A hole in the range makes it ENOMEM after the rest was done; a
	 * locked VMA makes it EINVAL, with part of it done: either way a page
	 * may or may not have been discarded.
	 */
	for (k = a; k < a + n; k++) {
		struct page_model *m = &t->pg[k];

		if (m->prot == P_HOLE)
			continue;
		if (!free && (!err || err == ENOMEM)) {
			m->val = 0;
			m->content = C_EXACT;
		} else if (m->content == C_EXACT && m->val) {
			m->content = C_EITHER;
		}
	}
	return err && err != ENOMEM ? -1 : 0;
}

static int op_mlock(struct thread *t, int lock)
{
	size_t a, n, k;
	int onfault = 0, ret;

	rnd_range(t, &a, &n, 600);
	n = mapped_run(t, a, n);
	if (!n)
		return 1;
	if (lock) {
		onfault = rnd(t) & 1;
		ret = onfault ? mlock2(addr(t, a), n * PAGE, MLOCK_ONFAULT) :
				mlock(addr(t, a), n * PAGE);
	} else {
		ret = munlock(addr(t, a), n * PAGE);
	}
	hist_add(t, lock ? OP_MLOCK : OP_MUNLOCK, a, n, 0, 0, onfault,
		 ret ? errno : 0);
	mark_edges(t, a, n);
	/*
	 * A failure is not a violation (mlock() sets VM_LOCKED, then fails to
	 * populate a PROT_NONE range); the flag only steers choices.
	 */
	for (k = a; k < a + n; k++)
		t->pg[k].locked = lock;
	return ret ? -1 : 0;
}

static int op_huge(struct thread *t)
{
	size_t a, n, k;
	int huge = rnd(t) & 1 ? H_HUGE : H_NOHUGE, ret;

	rnd_range(t, &a, &n, 600);
	n = mapped_run(t, a, n);
	if (!n)
		return 1;
	ret = madvise(addr(t, a), n * PAGE,
		      huge == H_HUGE ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	hist_add(t, OP_HUGE, a, n, 0, 0, huge, ret ? errno : 0);
	mark_edges(t, a, n);
	for (k = a; k < a + n && !ret; k++)
		t->pg[k].huge = huge;
	return ret ? -1 : 0;
}

/*
 * The pattern of a cluster that meets the end of its VMA: a fresh 2 MiB
 * range, its reservation made by one write, an edit of the VMA 1 to 70
 * pages above or below that page (PROT_NONE, PROT_READ, munmap, or the
 * part moved away by mremap), then write faults in a row from the page
 * into the edit.
 */
static int op_edge(struct thread *t)
{
	size_t r = rnd_page(t) / HPAGE_NR, lo = r * HPAGE_NR, hi = lo + HPAGE_NR;
	size_t p, d, a, n, b = 0, k;
	int up = rnd(t) & 1, how = rnd(t) % 5, err = 0, prot = P_RW, moved = 0;
	const char *when = "faults into a VMA edit";

	hist_add(t, OP_EDGE, lo, HPAGE_NR, 0, 0, 0, 0);
	mark(t, lo);
	if (mmap(addr(t, lo), HPAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		t->hist[(t->nhist - 1) % HIST].err = errno;
		resync(t, lo, HPAGE_NR);
		return -1;
	}
	set_fresh(t, lo, HPAGE_NR, P_RW);
	d = 1 + rnd(t) % 70;
	if (up) {
		p = lo + rnd(t) % (HPAGE_NR - d);
		a = p + d;
		n = 1 + rnd(t) % (hi - a);
	} else {
		p = lo + d + rnd(t) % (HPAGE_NR - d);
		n = 1 + rnd(t) % (p - d - lo + 1);
		a = p - d - n + 1;
	}
	put(t, p, when);
	switch (how) {
	case 0:
	case 1:
		prot = how ? P_READ : P_NONE;
		hist_add(t, OP_MPROTECT, a, n, 0, 0, prot, 0);
		if (mprotect(addr(t, a), n * PAGE, prot_bits[prot]))
			err = errno;
		break;
	case 2:
	case 3:
		prot = P_HOLE;
		hist_add(t, OP_MUNMAP, a, n, 0, 0, 0, 0);
		if (munmap(addr(t, a), n * PAGE))
			err = errno;
		break;
	default:
		/* Moved to the same offset of another range, if there is one. */
		prot = P_HOLE;
		moved = 1;
		b = (r + 1) % t->nranges * HPAGE_NR + (a - lo);
		hist_add(t, OP_MOVE, a, n, b, n, 0, 0);
		if (t->nranges < 2 ||
		    mremap(addr(t, a), n * PAGE, n * PAGE,
			   MREMAP_MAYMOVE | MREMAP_FIXED, addr(t, b)) == MAP_FAILED)
			err = t->nranges < 2 ? EINVAL : errno;
		break;
	}
	if (err) {
		t->hist[(t->nhist - 1) % HIST].err = err;
		resync(t, a, n);
		if (moved)
			resync(t, b, n);
		return -1;
	}
	if (moved) {
		memcpy(t->pg + b, t->pg + a, n * sizeof(*t->pg));
		mark_edges(t, b, n);
	}
	for (k = a; k < a + n; k++) {
		if (prot == P_HOLE)
			set_fresh(t, k, 1, P_HOLE);
		t->pg[k].prot = prot;
		t->pg[k].reported = 0;
	}
	/* From the page into the edit, and a few pages beyond its edge. */
	hist_add(t, OP_FILL, up ? p + 1 : p - d - 3 < lo ? lo : p - d - 3,
		 d + 3, 0, 0, up ? 2 : 3, 0);
	for (k = 1; k <= d + 3; k++) {
		size_t q = up ? p + k : p - k;

		if (q < lo || q >= hi)
			break;
		touch(t, q, 1, when);
	}
	return 0;
}

static int do_op(struct thread *t, int op);

static void child_work(struct thread *t)
{
	long before;
	size_t k;
	int i, n, op;

	t->in_child = 1;
	t->reported_hist = 0;
	before = t->violations;
	/* The parent's pagemap fd shows the parent's page tables. */
	t->pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	/* mlock() is not inherited. */
	for (k = 0; k < t->npages; k++)
		t->pg[k].locked = 0;
	check_all(t, "fork child, before its edits");
	if (t->inject_child) {
		for (k = 0; k < t->npages; k++) {
			if (t->pg[k].prot == P_RW && t->pg[k].val) {
				/* Behind the model's back. */
				*(uint64_t *)addr(t, k) ^= 1;
				break;
			}
		}
		check_all(t, "self-test: a page changed in the child");
		_exit(t->violations - before ? 1 : 0);
	}
	n = 10 + rnd(t) % 20;
	for (i = 0; i < n; i++) {
		do {
			op = rnd(t) % NR_OPS;
		} while (op == OP_FORK || op == OP_CHECK);
		do_op(t, op);
		/* After each one: an OOM kill may end the child. */
		if (t->child) {
			memcpy(t->child->hist, t->hist, sizeof(t->hist));
			t->child->nhist = t->nhist;
		}
	}
	check_all(t, "fork child, after its edits");
	n = t->violations - before;
	_exit(n > 125 ? 125 : n);
}

static int op_fork(struct thread *t)
{
	long before;
	pid_t pid;
	int st;

	hist_add(t, OP_FORK, 0, t->npages, 0, 0, 0, 0);
	if (t->child)
		t->child->first = t->child->nhist = t->nhist;
	pid = fork();
	if (pid < 0) {
		t->hist[(t->nhist - 1) % HIST].err = errno;
		return -1;
	}
	if (pid == 0)
		child_work(t);
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			say("sp_vmafuzz: T%d: waitpid: %s", t->id,
			    strerror(errno));
			return -1;
		}
	}
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
		say("sp_vmafuzz: T%d: the fork child was killed (OOM?)", t->id);
	} else if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		t->violations++;
		t->vkind[V_CHILD]++;
		t->distinct++;
		say("sp_vmafuzz: T%d: VIOLATION (child): the fork child %s %d",
		    t->id, WIFEXITED(st) ? "reported violations:" :
		    "died of signal", WIFEXITED(st) ? WEXITSTATUS(st) :
		    WTERMSIG(st));
	}
	before = t->violations;
	check_all(t, "parent after its fork child's edits");
	if (t->violations != before && t->child) {
		struct child_hist *c = t->child;

		say("sp_vmafuzz: T%d: the fork child's operations (%u, the last %d at most, oldest first):",
		    t->id, c->nhist - c->first, HIST);
		hist_lines(t, c->hist, c->first, c->nhist, "  child ");
	}
	return 0;
}

static const char * const op_when[NR_OPS] = {
	[OP_MAP] = "after mmap", [OP_FILL] = "after fill",
	[OP_SCATTER] = "after scattered faults", [OP_MUNMAP] = "after munmap",
	[OP_MPROTECT] = "after mprotect", [OP_SHRINK] = "after mremap shrink",
	[OP_GROW] = "after mremap grow", [OP_MOVE] = "after mremap move",
	[OP_DONTUNMAP] = "after mremap DONTUNMAP",
	[OP_DONTNEED] = "after MADV_DONTNEED", [OP_FREE] = "after MADV_FREE",
	[OP_MLOCK] = "after mlock", [OP_MUNLOCK] = "after munlock",
	[OP_HUGE] = "after MADV_(NO)HUGEPAGE", [OP_FORK] = "after fork",
	[OP_CHECK] = "full check",
	[OP_EDGE] = "after faults into a VMA edit",
};

/* One operation and the check of the ranges it touched. */
static int do_op(struct thread *t, int op)
{
	int ret = 0;

	if (op < 0 || op >= NR_OPS)
		return 1;
	switch (op) {
	case OP_MAP:
		ret = op_map(t);
		break;
	case OP_FILL:
		ret = op_fill(t);
		break;
	case OP_SCATTER:
		ret = op_scatter(t);
		break;
	case OP_MUNMAP:
		ret = op_munmap(t);
		break;
	case OP_MPROTECT:
		ret = op_mprotect(t);
		break;
	case OP_SHRINK:
		ret = op_shrink(t);
		break;
	case OP_GROW:
		ret = op_grow(t);
		break;
	case OP_MOVE:
		ret = op_move(t, 0);
		break;
	case OP_DONTUNMAP:
		ret = op_move(t, 1);
		break;
	case OP_DONTNEED:
		ret = op_discard(t, 0);
		break;
	case OP_FREE:
		ret = op_discard(t, 1);
		break;
	case OP_MLOCK:
		ret = op_mlock(t, 1);
		break;
	case OP_MUNLOCK:
		ret = op_mlock(t, 0);
		break;
	case OP_HUGE:
		ret = op_huge(t);
		break;
	case OP_FORK:
		ret = op_fork(t);
		break;
	case OP_CHECK:
		check_all(t, op_when[op]);
		break;
	case OP_EDGE:
		ret = op_edge(t);
		break;
	}
	if (ret > 0)		/* nothing to do it on here */
		return ret;
	t->ops[op]++;
	if (ret < 0)
		t->failed[op]++;
	check_dirty(t, op_when[op]);
	return ret;
}

/* ---- threads --------------------------------------------------------- */

static int total_weight;

static void init_weights(void)
{
	int op;

	for (op = 0, total_weight = 0; op < NR_OPS; op++)
		total_weight += ops[op].weight;
}

static int pick_op(struct thread *t)
{
	int op, r;

	r = rnd(t) % total_weight;
	for (op = 0; r >= ops[op].weight; op++)
		r -= ops[op].weight;
	return op;
}

static int time_is_up(void)
{
	struct timespec now;

	if (!timed)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > deadline.tv_sec ||
	       (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec);
}

static int setup_signals(struct thread *t)
{
	stack_t ss = { .ss_sp = t->altstack, .ss_size = ALTSTACK };

	self = t;
	return sigaltstack(&ss, NULL);
}

static void print_counts(struct thread *t)
{
	char buf[1024];
	size_t len = 0;
	long total = 0;
	int op;

	for (op = 0; op < NR_OPS; op++) {
		total += t->ops[op];
		len += snprintf(buf + len, sizeof(buf) - len, " %s=%ld",
				ops[op].name, t->ops[op]);
		if (t->failed[op])
			len += snprintf(buf + len, sizeof(buf) - len,
					"(%ld failed)", t->failed[op]);
	}
	say("sp_vmafuzz: T%d:%s", t->id, buf);
	len = 0;
	for (op = 0; op < NR_V; op++)
		if (t->vkind[op])
			len += snprintf(buf + len, sizeof(buf) - len, " %s=%ld",
					v_name[op], t->vkind[op]);
	buf[len] = 0;
	say("sp_vmafuzz: T%d: ops=%ld probes=%ld faults=%ld resyncs=%ld violations=%ld (%ld distinct)%s",
	    t->id, total, t->probes, t->faults, t->resyncs, t->violations,
	    t->distinct, buf);
}

static void *thread_main(void *arg)
{
	struct thread *t = arg;
	long n;

	if (setup_signals(t))
		say("sp_vmafuzz: T%d: sigaltstack: %s", t->id, strerror(errno));
	pthread_barrier_wait(&start_barrier);
	check_layout(t, "start");
	for (n = 0; !rounds || n < rounds; n++) {
		if (time_is_up())
			break;
		do_op(t, pick_op(t));
	}
	n = t->violations;
	check_all(t, "final");
	if (t->violations > n)
		say("sp_vmafuzz: T%d: %ld violations in the final check", t->id,
		    t->violations - n);
	/* Leave nothing mapped: the leak check looks for what stays behind. */
	munmap(t->base, t->npages * PAGE);
	t->finished = 1;
	return NULL;
}

/* Allocate @t and map its arena at @base, read-write. */
static int thread_init(struct thread *t, int id, char *base, size_t npages,
		       uint64_t seed)
{
	void *p;

	memset(t, 0, sizeof(*t));
	t->id = id;
	t->npages = npages;
	t->nranges = npages / HPAGE_NR;
	t->rng = seed * 0x9e3779b97f4a7c15ULL + id + 1;
	t->focus = 0;
	/* Twice the model: the second half is op_move()'s scratch. */
	t->pg = calloc(2 * npages, sizeof(*t->pg));
	t->kprot = calloc(npages, 1);
	t->pm = calloc(npages, 8);
	t->mapsbuf = malloc(MAPSBUF);
	t->altstack = malloc(ALTSTACK);
	t->dirty = calloc((t->nranges + 63) / 64, 8);
	if (!t->pg || !t->kprot || !t->pm || !t->mapsbuf || !t->altstack ||
	    !t->dirty)
		return -1;
	t->pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	/* Away from the arenas (top-down); none if it fails. */
	t->child = mmap(NULL, sizeof(*t->child), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (t->child == MAP_FAILED)
		t->child = NULL;
	p = mmap(base, npages * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	if (p != base) {	/* a kernel without MAP_FIXED_NOREPLACE */
		munmap(p, npages * PAGE);
		errno = EEXIST;
		return -1;
	}
	t->base = base;
	set_fresh(t, 0, npages, P_RW);
	return 0;
}

static int install_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	/* SA_NODEFER: siglongjmp() leaves the handler with nothing blocked. */
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGSEGV, &sa, NULL) || sigaction(SIGBUS, &sa, NULL);
}

/* The work process: THREADS threads; exit status 0, 1 or 2. */
static int work(long seconds, int nthreads, size_t mib, uint64_t seed)
{
	size_t npages = mib * (1 << 20) / PAGE;
	struct thread *th;
	long violations = 0, distinct = 0, total = 0, kind[NR_V] = { 0 };
	int i, op;

	th = calloc(nthreads, sizeof(*th));
	if (!th || install_handler())
		return 2;
	for (i = 0; i < nthreads; i++) {
		if (thread_init(&th[i], i, (char *)ARENA_BASE + i * npages * PAGE,
				npages, seed)) {
			say("sp_vmafuzz: arena of thread %d: %s", i,
			    strerror(errno));
			return 2;
		}
	}
	if (seconds) {
		timed = 1;
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += seconds;
	}
	pthread_barrier_init(&start_barrier, NULL, nthreads);
	for (i = 0; i < nthreads; i++) {
		if (pthread_create(&th[i].tid, NULL, thread_main, &th[i])) {
			say("sp_vmafuzz: pthread_create failed");
			return 2;
		}
	}
	for (i = 0; i < nthreads; i++)
		pthread_join(th[i].tid, NULL);
	for (i = 0; i < nthreads; i++) {
		print_counts(&th[i]);
		if (!th[i].finished) {
			say("sp_vmafuzz: T%d: VIOLATION: the thread did not finish (killed in the kernel?)",
			    i);
			th[i].violations++;
			th[i].distinct++;
		}
		violations += th[i].violations;
		distinct += th[i].distinct;
		for (op = 0; op < NR_OPS; op++)
			total += th[i].ops[op];
		for (op = 0; op < NR_V; op++)
			kind[op] += th[i].vkind[op];
	}
	say("sp_vmafuzz: %d threads, %ld operations, %ld violations, %ld distinct (access %ld, write %ld, fault %ld, content %ld, present %ld, layout %ld, child %ld)",
	    nthreads, total, violations, distinct, kind[V_ACCESS], kind[V_WRITE],
	    kind[V_FAULT], kind[V_CONTENT], kind[V_PRESENT], kind[V_LAYOUT],
	    kind[V_CHILD]);
	return violations ? 1 : 0;
}

/* ---- leaks ----------------------------------------------------------- */

/* nr_superpage_resv and nr_superpage_resv_unused, after stat_refresh. */
static int gauges(long *resv, long *unused)
{
	char buf[16384], *p;
	ssize_t n;
	int fd;

	fd = open("/proc/sys/vm/stat_refresh", O_WRONLY);
	if (fd >= 0) {
		/* EINVAL: a counter went negative; the values are still read. */
		if (write(fd, "1", 1) < 0 && errno != EINVAL)
			say("sp_vmafuzz: stat_refresh: %s", strerror(errno));
		close(fd);
	}
	fd = open("/proc/vmstat", O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strstr(buf, "\nnr_superpage_resv ");
	if (!p)
		return -1;
	*resv = atol(p + strlen("\nnr_superpage_resv "));
	p = strstr(buf, "\nnr_superpage_resv_unused ");
	if (!p)
		return -1;
	*unused = atol(p + strlen("\nnr_superpage_resv_unused "));
	return 0;
}

static void drain_lru(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);

	if (fd < 0)
		return;
	if (write(fd, "1", 1) < 0)
		say("sp_vmafuzz: drop_caches: %s", strerror(errno));
	close(fd);
}

/* ---- self-test ------------------------------------------------------- */

static long detected(struct thread *t, long before, const char *what)
{
	long n = t->violations - before;

	say("sp_vmafuzz: self-test: %s: %s", what,
	    n ? "reported" : "NOT REPORTED");
	return n ? 1 : 0;
}

static int self_test(void)
{
	struct thread *t = calloc(1, sizeof(*t));
	size_t k, r = HPAGE_NR;		/* range 1 */
	long v, found = 0, tests = 0;

	if (!t || install_handler() ||
	    thread_init(t, 0, (char *)ARENA_BASE, 4 * HPAGE_NR, 1) ||
	    setup_signals(t)) {
		say("sp_vmafuzz: self-test: setup: %s", strerror(errno));
		return 2;
	}
	/*
	 * No random operations: on a kernel with the bug this soak looks for,
	 * they could crash it before the detector is tried.  A known state:
	 * range 1 read-write with a tag in every page.
	 */
	mmap(addr(t, r), HPAGE, PROT_READ | PROT_WRITE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	set_fresh(t, r, HPAGE_NR, P_RW);
	for (k = r; k < r + HPAGE_NR; k++)
		put(t, k, "self-test");
	t->reported_hist = 1;

	/* 1: a mapped page that the model takes for a hole. */
	v = t->violations;
	t->pg[r + 3].prot = P_HOLE;
	check_page(t, r + 3, "self-test: mapped page modelled as a hole");
	t->pg[r + 3].prot = P_RW;
	found += detected(t, v, "a mapped page modelled as a hole"), tests++;

	/* 2: a hole that the model takes for a mapped page. */
	v = t->violations;
	munmap(addr(t, r + 5), PAGE);
	check_page(t, r + 5, "self-test: hole modelled as a mapped page");
	set_fresh(t, r + 5, 1, P_HOLE);
	found += detected(t, v, "a hole modelled as a mapped page"), tests++;

	/* 3: a writable page that the model takes for a read-only one. */
	v = t->violations;
	t->pg[r + 7].prot = P_READ;
	check_page(t, r + 7, "self-test: writable page modelled read-only");
	t->pg[r + 7].prot = P_RW;
	found += detected(t, v, "a writable page modelled as read-only"),
		tests++;

	/* 4: a word changed behind the model's back. */
	v = t->violations;
	*(uint64_t *)(addr(t, r + 9) + PAGE - 8) ^= 1ULL << 20;
	check_page(t, r + 9, "self-test: changed word");
	put(t, r + 9, "self-test");
	found += detected(t, v, "a changed word"), tests++;

	/* 5: a present page in a fresh mapping (the only one in its range). */
	v = t->violations;
	munmap(addr(t, r), HPAGE);
	set_fresh(t, r, HPAGE_NR, P_HOLE);
	mmap(addr(t, r + 16), 8 * PAGE, PROT_READ | PROT_WRITE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	*(volatile uint64_t *)addr(t, r + 19) = 0;
	check_fresh(t, r + 16, 8, "self-test: present page after mmap");
	set_fresh(t, r + 16, 8, P_RW);
	found += detected(t, v, "a present page in a fresh mapping"), tests++;

	/* 6: a VMA the kernel does not have. */
	v = t->violations;
	t->pg[r + 100].prot = P_NONE;
	check_layout(t, "self-test: layout");
	t->pg[r + 100].prot = P_HOLE;
	found += detected(t, v, "a VMA that /proc/self/maps does not show"),
		tests++;

	/* 7: a fork child's page changed behind its model. */
	v = t->violations;
	put(t, r + 17, "self-test");
	t->inject_child = 1;
	op_fork(t);
	t->inject_child = 0;
	found += detected(t, v, "a page changed in a fork child"), tests++;

	check_all(t, "self-test: final");
	print_counts(t);
	say("sp_vmafuzz: self-test: %ld of %ld mis-modelled pages reported: %s",
	    found, tests, found == tests ? "PASS" : "FAIL");
	return found == tests ? 0 : 1;
}

/* ---- main ------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr,
		"usage: sp_vmafuzz [--check-leaks] [--rounds N] [--seed S] [--trace] SECONDS THREADS [MIB]\n"
		"       sp_vmafuzz --self-test\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "check-leaks", no_argument, NULL, 'l' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 's' },
		{ "self-test", no_argument, NULL, 'T' },
		{ "trace", no_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	long seconds, r0 = 0, u0 = 0, r1, u1;
	int check_leaks = 0, nthreads, c, st, rc, i;
	uint64_t seed = time(NULL) ^ ((uint64_t)getpid() << 32);
	size_t mib = 8;
	pid_t pid;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			check_leaks = 1;
			break;
		case 'r':
			rounds = atol(optarg);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 't':
			trace = 1;
			break;
		case 'T':
			clock_gettime(CLOCK_MONOTONIC, &started);
			init_weights();
			return self_test();
		default:
			usage();
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &started);
	if (argc - optind < 2 || argc - optind > 3)
		usage();
	seconds = atol(argv[optind]);
	nthreads = atoi(argv[optind + 1]);
	if (argc - optind == 3)
		mib = atol(argv[optind + 2]);
	if (nthreads < 1 || nthreads > 64 || mib < 4 || mib > 64 || mib % 2 ||
	    (!seconds && !rounds) || seconds < 0 || rounds < 0)
		usage();

	init_weights();
	say("sp_vmafuzz: %d threads x %zu MiB, %ld s, %ld rounds per thread (0: no limit), seed %llu",
	    nthreads, mib, seconds, rounds, (unsigned long long)seed);
	if (check_leaks && gauges(&r0, &u0)) {
		say("sp_vmafuzz: --check-leaks: no nr_superpage_resv in /proc/vmstat");
		return 2;
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 2;
	}
	if (pid == 0)
		_exit(work(seconds, nthreads, mib, seed));
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(st)) {
		say("sp_vmafuzz: the work process died of signal %d",
		    WTERMSIG(st));
		/* An OOM kill in a small memory cgroup is not a violation. */
		rc = WTERMSIG(st) == SIGKILL ? 0 : 1;
	} else {
		rc = WEXITSTATUS(st);
	}
	if (check_leaks) {
		/*
		 * A free may lag behind the exit: a per-CPU LRU batch can hold
		 * the last reference to a folio; drop_caches drains them all.
		 */
		for (i = 0; i < 100; i++) {
			if (gauges(&r1, &u1))
				return 2;
			if (r1 <= r0 && u1 <= u0)
				break;
			if (i == 1)
				drain_lru();
			usleep(100000);
		}
		say("sp_vmafuzz: leak check: nr_superpage_resv %ld -> %ld, nr_superpage_resv_unused %ld -> %ld%s",
		    r0, r1, u0, u1, r1 <= r0 && u1 <= u0 ? "" :
		    ": LEAKED (after 10 s)");
		if (r1 > r0 || u1 > u0)
			rc = 1;
	}
	say("sp_vmafuzz: %s", rc == 0 ? "PASS" : rc == 1 ? "FAIL" : "ERROR");
	return rc;
}
