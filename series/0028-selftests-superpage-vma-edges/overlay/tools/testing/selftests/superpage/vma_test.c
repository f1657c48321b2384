// SPDX-License-Identifier: GPL-2.0
/*
 * Reservations against VMA edits.  A reservation spans a 2 MiB range, but
 * the VMA that created it may be cut into pieces afterwards: a fault may
 * only ever map pages of its own VMA, with its own protection.
 *
 * vma.cluster_stays_inside_vma, vma.cluster_stays_inside_vma_left
 *	the regression: a fault that continues a run right next to a
 *	munmap or mprotect(PROT_NONE) edge must not map its cluster across
 *	the edge, at every cluster order the sysctl takes;
 * vma_edit.<edit>.cut_partly_filled_reservation
 *	the edge matrix: a partly filled reservation (sequentially or at
 *	random) is cut by one edit (munmap, mprotect PROT_NONE, PROT_READ,
 *	PROT_NONE and back to read-write, mremap shrink, grow, and move to
 *	the same offset, to a 2 MiB boundary and 16 pages off, mmap over a
 *	hole, MADV_DONTNEED, MADV_FREE, mlock, MADV_NOHUGEPAGE, munmap or
 *	mprotect in a forked child) at several cut points, and the pieces
 *	are touched on: outward from their middles (clusters grow toward
 *	every edge) or at random;
 * vma.random_edit_sequences
 *	random sequences of edits, touches and checks, from fixed seeds.
 *
 * Each scenario runs in a child process and checks against a model of its
 * address space:
 *
 *  - every access outside a VMA or against its protection raises SIGSEGV
 *    and every access inside does not fault (probed under SIGSEGV and
 *    SIGBUS handlers);
 *  - every page holds what was last written to it (a tag at its head and
 *    tail, zeroes between) or zeroes only;
 *  - /proc/self/pagemap: an edit changes the presence of no page outside
 *    the range it works on; a PROT_NONE or MADV_NOHUGEPAGE piece holds no
 *    page that was neither present at the edit nor touched since, and no
 *    page faulted in a MADV_NOHUGEPAGE piece is a subpage of a reservation;
 *  - after the child exits, nr_superpage_resv and nr_superpage_resv_unused
 *    of /proc/vmstat are back where they were: a PTE left outside every
 *    VMA is never unmapped, and its reservation leaks.
 *
 * pagemap reports nothing for an address outside every VMA, whatever the
 * page table holds there, so those pages are probed by access.
 *
 * The fixtures switch the feature on (mode 2) and leave every other knob
 * as it is: the shipped defaults are what users run.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "superpage_util.h"

#define STAT_REFRESH	"/proc/sys/vm/stat_refresh"

/* The window a scenario works in: 8 ranges of 2 MiB, in pages. */
#define WIN_RANGES	8
#define WIN_PAGES	(WIN_RANGES * SP_NR)
/* The mapping under test, 4 MiB: ranges 1 and 2 of the window. */
#define MAP_AT		SP_NR
#define MAP_PAGES	(2 * SP_NR)
#define MAP_END		(MAP_AT + MAP_PAGES)
/* Where mremap moves a piece to: from range 5 of the window. */
#define DST_AT		(5 * SP_NR)
/* Failures reported per process; all of them are counted. */
#define MAX_REPORTS	10
/* Exit status of a scenario that could not run (mlock refused). */
#define SC_SKIP		4
/* Pages written before the edit: sequentially, or at random. */
#define SEQ_FILL	200
#define RAND_FILL	160

/* The access a VMA gives to a page of the window. */
enum sp_acc { ACC_HOLE, ACC_NONE, ACC_READ, ACC_RW };

/* What the model knows about a page of the window. */
struct sp_pg {
	unsigned char acc;	/* enum sp_acc: the VMA there, if any */
	unsigned char vma;	/* the edit that made its VMA, for pieces */
	bool bounded;		/* may be present only if @may */
	bool may;		/* present at the edit, or touched since */
	bool nohuge;		/* in a MADV_NOHUGEPAGE VMA */
	bool fresh;		/* not present when it became nohuge */
	bool freed;		/* MADV_FREE: holds @tag or zeroes */
	uint64_t tag;		/* head and tail of the page, 0: zeroes */
};

/* A scenario, in the child process that runs it. */
struct sp_sc {
	char name[160];
	char *win;
	int pmfd, fails, ids;
	unsigned int seq;
	/* PFN of subpage 0 of each range's reservation, 0: unknown */
	uint64_t base[WIN_RANGES];
	struct sp_pg pg[WIN_PAGES];
	uint64_t pm[WIN_PAGES], pm0[WIN_PAGES];
};

/* The edits, one step of a scenario each. */
enum sp_op {
	OP_END, OP_MUNMAP, OP_PROT_NONE, OP_PROT_READ, OP_PROT_RW, OP_SHRINK,
	OP_GROW, OP_MMAP, OP_MOVE, OP_MOVE_ALIGNED, OP_MOVE_MISALIGNED,
	OP_DONTNEED, OP_FREE, OP_MLOCK, OP_NOHUGEPAGE,
};

static const char * const sp_op_name[] = {
	[OP_MUNMAP]		= "munmap",
	[OP_PROT_NONE]		= "mprotect(PROT_NONE)",
	[OP_PROT_READ]		= "mprotect(PROT_READ)",
	[OP_PROT_RW]		= "mprotect(PROT_READ | PROT_WRITE)",
	[OP_SHRINK]		= "mremap shrink",
	[OP_GROW]		= "mremap grow",
	[OP_MMAP]		= "mmap(MAP_FIXED)",
	[OP_MOVE]		= "mremap move (same offset in 2 MiB)",
	[OP_MOVE_ALIGNED]	= "mremap move (to a 2 MiB boundary)",
	[OP_MOVE_MISALIGNED]	= "mremap move (16 pages off)",
	[OP_DONTNEED]		= "MADV_DONTNEED",
	[OP_FREE]		= "MADV_FREE",
	[OP_MLOCK]		= "mlock",
	[OP_NOHUGEPAGE]		= "MADV_NOHUGEPAGE",
};

enum sp_pattern { PAT_SEQ, PAT_RAND };

static struct sp_sc sp_scg;
static const char sp_zero[SP_PAGE];

static __printf(2, 3) void sc_fail(struct sp_sc *sc, const char *fmt, ...)
{
	va_list ap;

	if (sc->fails++ >= MAX_REPORTS)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "# %s: ", sc->name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static int sc_sys_fail(struct sp_sc *sc, const char *what)
{
	sc_fail(sc, "%s: %s", what, strerror(errno));
	return -1;
}

static char *sp_at(const struct sp_sc *sc, int k)
{
	return sc->win + (long)k * SP_PAGE;
}

/* Where window page @k is, for the reports: from A or from D. */
static const char *sp_where(int k)
{
	static char buf[4][48];
	static int n;
	char *b = buf[n++ % 4];
	int from = k >= DST_AT - SP_NR / 2 ? DST_AT : MAP_AT;

	snprintf(b, sizeof(buf[0]), "%c%+ldK (subpage %d)",
		 from == DST_AT ? 'D' : 'A', (long)(k - from) * 4, k % SP_NR);
	return b;
}

/*
 * The protection probe: one access under SIGSEGV and SIGBUS handlers that
 * jump back out of it.  SA_NODEFER and sigsetjmp(, 0): the signal is never
 * blocked, so there is no mask to restore.
 */
static sigjmp_buf sp_probe_env;
static int sp_probe_armed;

static void sp_probe_handler(int sig)
{
	if (__atomic_load_n(&sp_probe_armed, __ATOMIC_RELAXED))
		siglongjmp(sp_probe_env, sig);
	/* Not a probe: die of it at once, the parent reports the signal. */
	signal(sig, SIG_DFL);
}

static void sp_probe_init(void)
{
	struct sigaction sa = {
		.sa_handler = sp_probe_handler,
		.sa_flags = SA_NODEFER,
	};

	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

/*
 * Read the byte at @p into *@c, or (@write) write *@c there.  Returns the
 * signal the access raised, 0 if it did not fault.
 */
static int sp_probe(char *p, bool write, char *c)
{
	int sig;

	__atomic_store_n(&sp_probe_armed, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	sig = sigsetjmp(sp_probe_env, 0);
	if (!sig) {
		if (write)
			__atomic_store_n(p, *c, __ATOMIC_RELAXED);
		else
			*c = __atomic_load_n(p, __ATOMIC_RELAXED);
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&sp_probe_armed, 0, __ATOMIC_RELAXED);
	return sig;
}

static void sp_pm_read(struct sp_sc *sc)
{
	off_t at = (uintptr_t)sc->win / SP_PAGE * sizeof(uint64_t);

	if (pread(sc->pmfd, sc->pm, sizeof(sc->pm), at) != sizeof(sc->pm)) {
		sc_sys_fail(sc, "pread /proc/self/pagemap");
		memset(sc->pm, 0, sizeof(sc->pm));
	}
}

static bool sp_present(const struct sp_sc *sc, int k)
{
	return sc->pm[k] & PM_PRESENT;
}

static bool sp_was_present(const struct sp_sc *sc, int k)
{
	return sc->pm0[k] & PM_PRESENT;
}

static unsigned long long sp_pm_pfn(const struct sp_sc *sc, int k)
{
	return sc->pm[k] & PM_PFN_MASK;
}

static bool sp_accessible(const struct sp_sc *sc, int k)
{
	return sc->pg[k].acc == ACC_READ || sc->pg[k].acc == ACC_RW;
}

/* Store @tag at the head and the tail of the page at @p. */
static void sp_put_tag(char *p, uint64_t tag)
{
	__atomic_store_n((uint64_t *)p, tag, __ATOMIC_RELAXED);
	__atomic_store_n((uint64_t *)(p + SP_PAGE - 8), tag, __ATOMIC_RELAXED);
}

/*
 * Touch window page @k as its VMA allows: write a new tag to its head and
 * tail, or read it.  None of it may fault.
 */
static void sp_touch(struct sp_sc *sc, int k)
{
	struct sp_pg *pg = &sc->pg[k];
	char *p = sp_at(sc, k);
	uint64_t tag;
	char c;

	if (!sp_accessible(sc, k))
		return;
	pg->may = true;
	if (pg->acc == ACC_READ) {
		if (sp_probe(p, false, &c))
			sc_fail(sc, "%s: read faulted in a PROT_READ VMA",
				sp_where(k));
		return;
	}
	sc->seq++;
	tag = 0x5350000000000000ULL | ((uint64_t)sc->seq << 16) | k;
	c = (char)tag;
	if (sp_probe(p, true, &c)) {
		sc_fail(sc, "%s: write faulted in a read-write VMA",
			sp_where(k));
		return;
	}
	sp_put_tag(p, tag);
	pg->tag = tag;
	pg->freed = false;
}

/* Does the page at @p hold @tag at its head and tail and zeroes between? */
static bool sp_holds(const char *p, uint64_t tag)
{
	uint64_t head, tail;

	if (!tag)
		return !memcmp(p, sp_zero, SP_PAGE);
	memcpy(&head, p, sizeof(head));
	memcpy(&tail, p + SP_PAGE - 8, sizeof(tail));
	return head == tag && tail == tag &&
	       !memcmp(p + 8, sp_zero, SP_PAGE - 16);
}

static void sp_report_content(struct sp_sc *sc, const char *when, int k)
{
	const char *p = sp_at(sc, k);
	uint64_t head, tail;
	int off;

	memcpy(&head, p, sizeof(head));
	memcpy(&tail, p + SP_PAGE - 8, sizeof(tail));
	for (off = 8; off < SP_PAGE - 8 && !p[off]; off++)
		;
	sc_fail(sc,
		"%s: %s holds %#llx ... %#llx (first non-zero byte between at %d), want %#llx%s",
		when, sp_where(k), (unsigned long long)head,
		(unsigned long long)tail, off < SP_PAGE - 8 ? off : -1,
		(unsigned long long)sc->pg[k].tag,
		sc->pg[k].freed ? " or zeroes" : "");
}

/* pagemap against the model: no page present where none may be. */
static void sp_check_present(struct sp_sc *sc, const char *when)
{
	int k;

	sp_pm_read(sc);
	for (k = 0; k < WIN_PAGES; k++) {
		const struct sp_pg *pg = &sc->pg[k];
		uint64_t base = sc->base[k / SP_NR];

		if (!sp_present(sc, k))
			continue;
		if (pg->acc == ACC_HOLE)
			sc_fail(sc, "%s: %s present (PFN %#llx) outside every VMA",
				when, sp_where(k), sp_pm_pfn(sc, k));
		else if (pg->bounded && !pg->may)
			sc_fail(sc,
				"%s: %s present (PFN %#llx) in a %s VMA: it was not at the edit and was never touched since",
				when, sp_where(k), sp_pm_pfn(sc, k),
				pg->nohuge ? "MADV_NOHUGEPAGE" : "PROT_NONE");
		else if (pg->nohuge && pg->fresh && base &&
			 sp_pm_pfn(sc, k) == base + k % SP_NR)
			sc_fail(sc,
				"%s: %s in a MADV_NOHUGEPAGE VMA was faulted in as a subpage of the range's reservation (PFN %#llx)",
				when, sp_where(k), sp_pm_pfn(sc, k));
	}
}

/*
 * An access to window page @k (@what: where it is) that must raise
 * SIGSEGV: report it if it does not.  Returns the signal raised, or 0.
 */
static int sp_must_segv(struct sp_sc *sc, int k, bool write,
			const char *when, const char *what)
{
	char c = 0x5a;
	int sig = sp_probe(sp_at(sc, k), write, &c);

	if (!sig)
		sc_fail(sc, "%s: %s of %s %s did not fault (the byte was %#x)",
			when, write ? "write" : "read", sp_where(k), what,
			c & 0xff);
	else if (sig != SIGSEGV)
		sc_fail(sc, "%s: %s of %s %s raised signal %d, not SIGSEGV",
			when, write ? "write" : "read", sp_where(k), what, sig);
	return sig;
}

/*
 * Every page outside every VMA in a range where some VMA is left (others
 * have no page table), and every page of a PROT_NONE VMA, must fault.
 * One read each; a write too where it could go through: where the read
 * did, on a present page, and next to an accessible page.
 */
static void sp_check_faults(struct sp_sc *sc, const char *when)
{
	bool live[WIN_RANGES] = { false };
	int k;

	for (k = 0; k < WIN_PAGES; k++)
		if (sc->pg[k].acc != ACC_HOLE)
			live[k / SP_NR] = true;
	for (k = 0; k < WIN_PAGES; k++) {
		const struct sp_pg *pg = &sc->pg[k];
		const char *what;

		if (pg->acc != ACC_NONE &&
		    (pg->acc != ACC_HOLE || !live[k / SP_NR]))
			continue;
		what = pg->acc == ACC_NONE ? "in a PROT_NONE VMA" :
					     "outside every VMA";
		if (sp_must_segv(sc, k, false, when, what) == SIGSEGV &&
		    !sp_present(sc, k) &&
		    !(k > 0 && sp_accessible(sc, k - 1)) &&
		    !(k + 1 < WIN_PAGES && sp_accessible(sc, k + 1)))
			continue;
		sp_must_segv(sc, k, true, when, what);
	}
}

static bool sp_same_piece(const struct sp_sc *sc, int j, int k)
{
	return sc->pg[j].acc == sc->pg[k].acc &&
	       sc->pg[j].vma == sc->pg[k].vma &&
	       sc->pg[j].nohuge == sc->pg[k].nohuge;
}

/*
 * Every accessible page: a read does not fault and finds the page's
 * contents whole; a write back of the byte read faults in a PROT_READ VMA
 * and does not in a read-write one (where the touches write most pages,
 * it is tried at the edges of each piece, and where MADV_FREE left
 * either contents, to settle them).
 */
static void sp_check_reads(struct sp_sc *sc, const char *when)
{
	int k;

	for (k = 0; k < WIN_PAGES; k++) {
		struct sp_pg *pg = &sc->pg[k];
		char *p = sp_at(sc, k);
		char c;

		if (!sp_accessible(sc, k))
			continue;
		pg->may = true;
		if (sp_probe(p, false, &c)) {
			sc_fail(sc, "%s: read of %s faulted in its VMA",
				when, sp_where(k));
			continue;
		}
		if (pg->freed && sp_holds(p, 0)) {
			/* MADV_FREE let it go: from now on, zeroes. */
			pg->tag = 0;
			c = 0;
		} else if (!sp_holds(p, pg->tag)) {
			sp_report_content(sc, when, k);
		}
		if (pg->acc == ACC_READ) {
			sp_must_segv(sc, k, true, when, "in a PROT_READ VMA");
			continue;
		}
		if (!pg->freed && k > 0 && sp_same_piece(sc, k - 1, k) &&
		    k + 1 < WIN_PAGES && sp_same_piece(sc, k, k + 1))
			continue;
		if (sp_probe(p, true, &c)) {
			sc_fail(sc, "%s: write of %s faulted in a read-write VMA",
				when, sp_where(k));
			continue;
		}
		if (pg->freed && pg->tag) {
			/* Dirty again: the tag stays. */
			sp_put_tag(p, pg->tag);
		}
		pg->freed = false;
	}
}

/*
 * The whole check.  The reads fault pages in, with clusters, so the
 * presence check runs again after them, and the fault probes only then.
 */
static void sp_verify(struct sp_sc *sc, const char *when)
{
	sp_check_present(sc, when);
	sp_check_reads(sc, when);
	sp_check_present(sc, when);
	sp_check_faults(sc, when);
}

/* Before an edit: what pagemap shows, to compare with after it. */
static void sp_snap(struct sp_sc *sc)
{
	sp_pm_read(sc);
	memcpy(sc->pm0, sc->pm, sizeof(sc->pm));
}

/*
 * After the edit @what of window pages [@s, @e), with no access since:
 * every page of [@s, @e) is present (@want 1), none is (0) or either
 * (-1), and every other page is present as it was before the edit.
 */
static void sp_check_edit(struct sp_sc *sc, const char *what, int s, int e,
			  int want)
{
	int k;

	sp_pm_read(sc);
	for (k = 0; k < WIN_PAGES; k++) {
		bool now = sp_present(sc, k), was = sp_was_present(sc, k);

		if (k >= s && k < e) {
			if (want >= 0 && now != want)
				sc_fail(sc, "%s: %s %s right after it",
					what, sp_where(k),
					want ? "not present" : "present");
		} else if (now != was) {
			sc_fail(sc, "%s of [%s, %s): %s made %s by it",
				what, sp_where(s), sp_where(e), sp_where(k),
				now ? "present" : "not present");
		}
	}
}

/*
 * After the move of @n pages from window page @s to @d: the pages at @d
 * are present as they were at @s, every other page as it was.
 */
static void sp_check_move(struct sp_sc *sc, const char *what, int s, int d,
			  int n)
{
	int k;

	sp_pm_read(sc);
	for (k = 0; k < WIN_PAGES; k++) {
		bool now = sp_present(sc, k);

		if (k >= d && k < d + n) {
			if (now != sp_was_present(sc, s + k - d))
				sc_fail(sc, "%s: %s %s, %s was %s",
					what, sp_where(k),
					now ? "present" : "not present",
					sp_where(s + k - d),
					now ? "not" : "present");
		} else if (k >= s && k < s + n) {
			continue;
		} else if (now != sp_was_present(sc, k)) {
			sc_fail(sc, "%s: %s made %s by it", what, sp_where(k),
				now ? "present" : "not present");
		}
	}
}

/* The model: pages [@s, @e) get VMA access @acc from the edit @id. */
static void sp_set(struct sp_sc *sc, int s, int e, enum sp_acc acc, int id)
{
	int k;

	for (k = s; k < e; k++) {
		struct sp_pg *pg = &sc->pg[k];

		if (acc == ACC_HOLE || pg->acc == ACC_HOLE)
			memset(pg, 0, sizeof(*pg));
		pg->acc = acc;
		pg->vma = id;
	}
}

/*
 * The PFN of subpage 0 of the reservation of each range, guessed from a
 * present page of the range before the edit: 0 if it is not aligned.
 */
static void sp_note_bases(struct sp_sc *sc)
{
	int r, j;

	for (r = 0; r < WIN_RANGES; r++) {
		sc->base[r] = 0;
		for (j = 0; j < SP_NR; j++) {
			uint64_t pfn = sc->pm0[r * SP_NR + j] & PM_PFN_MASK;

			if (!sp_was_present(sc, r * SP_NR + j))
				continue;
			if (pfn >= (uint64_t)j && !((pfn - j) % SP_NR))
				sc->base[r] = pfn - j;
			break;
		}
	}
}

/*
 * Make the edit @op of window pages [@s, @e), update the model and check
 * pagemap right after it.  Returns 0, SC_SKIP or -1.
 */
static int sp_edit(struct sp_sc *sc, enum sp_op op, int s, int e)
{
	size_t len = (size_t)(e - s) * SP_PAGE;
	char *p = sp_at(sc, s), *a = sp_at(sc, MAP_AT), *want, *q;
	const char *what = sp_op_name[op];
	int id = ++sc->ids, k, d, prot;

	sp_snap(sc);
	switch (op) {
	case OP_MUNMAP:
		if (munmap(p, len))
			return sc_sys_fail(sc, what);
		sp_set(sc, s, e, ACC_HOLE, id);
		sp_check_edit(sc, what, s, e, 0);
		break;
	case OP_PROT_NONE:
	case OP_PROT_READ:
	case OP_PROT_RW:
		prot = op == OP_PROT_NONE ? PROT_NONE :
		       op == OP_PROT_READ ? PROT_READ : PROT_READ | PROT_WRITE;
		if (mprotect(p, len, prot))
			return sc_sys_fail(sc, what);
		sp_set(sc, s, e, op == OP_PROT_NONE ? ACC_NONE :
				 op == OP_PROT_READ ? ACC_READ : ACC_RW, id);
		for (k = s; k < e; k++) {
			struct sp_pg *pg = &sc->pg[k];

			pg->bounded = op == OP_PROT_NONE || pg->nohuge;
			pg->may = sp_was_present(sc, k);
		}
		sp_check_edit(sc, what, 0, 0, -1);
		break;
	case OP_SHRINK:
		/* The mapping from @s on, or [@s + 1, @e) of [@s, @e). */
		if (e == MAP_END) {
			want = a;
			q = mremap(a, MAP_PAGES * SP_PAGE,
				   (size_t)(s - MAP_AT) * SP_PAGE, 0);
		} else {
			want = p;
			q = mremap(p, len, SP_PAGE, 0);
			s++;
		}
		if (q != want)
			return sc_sys_fail(sc, what);
		sp_set(sc, s, e, ACC_HOLE, id);
		sp_check_edit(sc, what, s, e, 0);
		break;
	case OP_GROW:
		/* The piece [A, @s) grows in place over the hole [@s, @e). */
		q = mremap(a, (size_t)(s - MAP_AT) * SP_PAGE,
			   (size_t)(e - MAP_AT) * SP_PAGE, 0);
		if (q != a)
			return sc_sys_fail(sc, what);
		sp_set(sc, s, e, ACC_RW, id);
		sp_check_edit(sc, what, s, e, 0);
		break;
	case OP_MMAP:
		q = mmap(p, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (q != p)
			return sc_sys_fail(sc, what);
		sp_set(sc, s, e, ACC_HOLE, id);
		sp_set(sc, s, e, ACC_RW, id);
		sp_check_edit(sc, what, s, e, 0);
		break;
	case OP_MOVE:
	case OP_MOVE_ALIGNED:
	case OP_MOVE_MISALIGNED:
		d = op == OP_MOVE_ALIGNED ? DST_AT : DST_AT + s - MAP_AT;
		if (op == OP_MOVE_MISALIGNED)
			d += 16;
		q = mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
			   sp_at(sc, d));
		if (q != sp_at(sc, d))
			return sc_sys_fail(sc, what);
		memcpy(&sc->pg[d], &sc->pg[s], (e - s) * sizeof(sc->pg[0]));
		sp_set(sc, s, e, ACC_HOLE, id);
		for (k = d; k < d + e - s; k++)
			sc->pg[k].vma = id;
		sp_check_move(sc, what, s, d, e - s);
		break;
	case OP_DONTNEED:
		if (madvise(p, len, MADV_DONTNEED))
			return sc_sys_fail(sc, what);
		for (k = s; k < e; k++) {
			sc->pg[k].tag = 0;
			sc->pg[k].freed = false;
		}
		sp_check_edit(sc, what, s, e, 0);
		break;
	case OP_FREE:
		if (madvise(p, len, MADV_FREE))
			return sc_sys_fail(sc, what);
		for (k = s; k < e; k++)
			sc->pg[k].freed = sc->pg[k].tag;
		sp_check_edit(sc, what, s, e, -1);
		break;
	case OP_MLOCK:
		if (mlock(p, len)) {
			if (errno != EPERM && errno != ENOMEM && errno != EAGAIN)
				return sc_sys_fail(sc, what);
			fprintf(stderr, "# %s: mlock: %s, skipped\n",
				sc->name, strerror(errno));
			return SC_SKIP;
		}
		for (k = s; k < e; k++)
			sc->pg[k].vma = id;
		/* mlock populates its range, and only its range. */
		sp_check_edit(sc, what, s, e, 1);
		break;
	case OP_NOHUGEPAGE:
		if (madvise(p, len, MADV_NOHUGEPAGE))
			return sc_sys_fail(sc, what);
		sp_note_bases(sc);
		for (k = s; k < e; k++) {
			struct sp_pg *pg = &sc->pg[k];

			pg->vma = id;
			pg->nohuge = true;
			pg->bounded = true;
			pg->may = sp_was_present(sc, k);
			pg->fresh = !pg->may;
		}
		sp_check_edit(sc, what, 0, 0, -1);
		break;
	default:
		sc_fail(sc, "unknown edit %d", op);
		return -1;
	}
	return 0;
}

/* Before the edit: part of the mapping's first range, in order or not. */
static void sp_fill(struct sp_sc *sc, enum sp_pattern pattern)
{
	int idx[SP_NR], k;

	if (pattern == PAT_SEQ) {
		for (k = 0; k < SEQ_FILL; k++)
			sp_touch(sc, MAP_AT + k);
		return;
	}
	sp_shuffle(idx, SP_NR, 1);
	for (k = 0; k < RAND_FILL; k++)
		sp_touch(sc, MAP_AT + idx[k]);
}

/*
 * After an edit.  Sequential: the pages of every piece (a run of
 * accessible pages from one edit) that were not present before the edit
 * are touched outward from its middle, so that a run grows toward each
 * edge of the piece; the pages that were present keep what the edit left
 * them, for the check.  Random: a quarter of all accessible pages, in
 * random order.
 */
static void sp_refill(struct sp_sc *sc, enum sp_pattern pattern, int seed)
{
	static int pages[WIN_PAGES], idx[WIN_PAGES];
	int s, e, m, k, n = 0;

	if (pattern == PAT_RAND) {
		for (k = 0; k < WIN_PAGES; k++)
			if (sp_accessible(sc, k))
				pages[n++] = k;
		sp_shuffle(idx, n, seed);
		for (k = 0; k < n / 4; k++)
			sp_touch(sc, pages[idx[k]]);
		return;
	}
	for (s = 0; s < WIN_PAGES; s = e) {
		for (e = s + 1; e < WIN_PAGES && sp_same_piece(sc, s, e); e++)
			;
		if (!sp_accessible(sc, s))
			continue;
		m = s + (e - s) / 2;
		for (k = m; k < e; k++)
			if (!sp_was_present(sc, k))
				sp_touch(sc, k);
		for (k = m - 1; k >= s; k--)
			if (!sp_was_present(sc, k))
				sp_touch(sc, k);
	}
}

/* The arguments of a scenario of the edge matrix. */
struct sp_args {
	const enum sp_op *op;	/* OP_END ends it, after 2 at most */
	bool fork;
	int s, e;		/* the edit's pages, from the mapping's start */
	enum sp_pattern pattern;
};

/* The edit steps of @a, each followed by more touches and a check. */
static int sp_steps(struct sp_sc *sc, const struct sp_args *a)
{
	int i, ret;

	for (i = 0; i < 2 && a->op[i] != OP_END; i++) {
		char when[96];

		ret = sp_edit(sc, a->op[i], MAP_AT + a->s, MAP_AT + a->e);
		if (ret)
			return ret;
		sp_refill(sc, a->pattern, 2 + i);
		snprintf(when, sizeof(when), "after the %s",
			 sp_op_name[a->op[i]]);
		sp_verify(sc, when);
	}
	return 0;
}

static int sp_pagemap_open(struct sp_sc *sc)
{
	sc->pmfd = open("/proc/self/pagemap", O_RDONLY);
	return sc->pmfd < 0 ? sc_sys_fail(sc, "open /proc/self/pagemap") : 0;
}

/*
 * The edit is made by a child of this process on its copy; this one goes
 * on touching its own pages meanwhile, and must see none of the child's
 * doings.
 */
static int sp_forked(struct sp_sc *sc, const struct sp_args *a)
{
	int status, ret;
	pid_t pid;

	sp_snap(sc);
	pid = fork();
	if (pid < 0)
		return sc_sys_fail(sc, "fork");
	if (!pid) {
		/* A pagemap file shows the mm of its opener. */
		close(sc->pmfd);
		strncat(sc->name, " [the forked child]",
			sizeof(sc->name) - strlen(sc->name) - 1);
		sc->fails = 0;
		ret = sp_pagemap_open(sc);
		if (!ret)
			ret = sp_steps(sc, a);
		_exit(ret == SC_SKIP ? SC_SKIP : ret || sc->fails);
	}
	sp_refill(sc, a->pattern, 5);
	if (waitpid(pid, &status, 0) != pid)
		return sc_sys_fail(sc, "waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		sc_fail(sc, "the forked child that made the edit failed (wait status %#x)",
			status);
	sp_verify(sc, "in the parent after the forked child's edit");
	return 0;
}

static int sp_matrix_child(struct sp_sc *sc, const void *arg)
{
	const struct sp_args *a = arg;

	sp_fill(sc, a->pattern);
	return a->fork ? sp_forked(sc, a) : sp_steps(sc, a);
}

/*
 * A scenario's child process: the window (a 4 MiB read-write mapping in
 * the middle of 16 MiB of holes), the model, the probe; then @fn.  Returns
 * the exit status: 0 pass, 1 fail, SC_SKIP.
 */
static int sp_child(const char *name,
		    int (*fn)(struct sp_sc *sc, const void *arg),
		    const void *arg)
{
	struct sp_sc *sc = &sp_scg;
	int ret;

	memset(sc, 0, sizeof(*sc));
	snprintf(sc->name, sizeof(sc->name), "%s", name);
	sp_probe_init();
	if (sp_pagemap_open(sc))
		return 1;
	sc->win = sp_map_aligned(WIN_PAGES * SP_PAGE);
	if (!sc->win) {
		sc_sys_fail(sc, "mmap");
		return 1;
	}
	if (munmap(sc->win, MAP_AT * SP_PAGE) ||
	    munmap(sp_at(sc, MAP_END), (WIN_PAGES - MAP_END) * SP_PAGE)) {
		sc_sys_fail(sc, "munmap");
		return 1;
	}
	sp_set(sc, MAP_AT, MAP_END, ACC_RW, 0);
	ret = fn(sc, arg);
	if (ret == SC_SKIP && !sc->fails)
		return SC_SKIP;
	return ret || sc->fails;
}

struct sp_gauges {
	long resv, unused;
};

/* The gauges, with the per-CPU deltas folded in. */
static void sp_gauges_read(struct sp_gauges *g)
{
	sp_write_file(STAT_REFRESH, "1");
	g->resv = sp_vmstat("nr_superpage_resv");
	g->unused = sp_vmstat("nr_superpage_resv_unused");
}

/*
 * Run @fn in a child process; once it has exited, the gauges must come
 * back to where they were (within a second: frees may be deferred).
 * Returns the child's exit status, or -1.
 */
static int sp_scenario(struct __test_metadata *_metadata, const char *name,
		       int (*fn)(struct sp_sc *sc, const void *arg),
		       const void *arg)
{
	struct sp_gauges before, now;
	int status, ret = -1;
	long end;
	pid_t pid;

	sp_gauges_read(&before);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(sp_child(name, fn, arg));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	if (WIFEXITED(status)) {
		ret = WEXITSTATUS(status);
		EXPECT_TRUE(ret == 0 || ret == SC_SKIP)
			TH_LOG("%s: failed", name);
	} else {
		EXPECT_TRUE(WIFEXITED(status))
			TH_LOG("%s: killed by signal %d", name,
			       WTERMSIG(status));
	}
	end = sp_now_ms() + 1000;
	for (;;) {
		sp_gauges_read(&now);
		if ((now.resv == before.resv && now.unused == before.unused) ||
		    sp_now_ms() >= end)
			break;
		usleep(10000);
	}
	EXPECT_EQ(before.resv, now.resv)
		TH_LOG("%s: nr_superpage_resv %ld before, %ld after the exit: a reservation leaked",
		       name, before.resv, now.resv);
	EXPECT_EQ(before.unused, now.unused)
		TH_LOG("%s: nr_superpage_resv_unused %ld before, %ld after the exit",
		       name, before.unused, now.unused);
	return ret;
}

/* The knobs the fixtures save, and restore in the parent. */
struct sp_knobs {
	int mode, cluster, threshold;
};

/*
 * Save the knobs and switch the feature on for every eligible mapping,
 * leaving the rest at what the kernel has.  False: skip the test.
 */
static bool sp_knobs_setup(struct __test_metadata *_metadata,
			   struct sp_knobs *k)
{
	k->mode = -1;
	if (geteuid())
		SKIP(return false, "must be run as root (sysctl, pagemap PFNs)");
	if (access(SP_ENABLED, F_OK))
		SKIP(return false, "no %s: CONFIG_SUPERPAGE=n", SP_ENABLED);
	if (sp_vmstat("nr_superpage_resv") < 0 ||
	    sp_vmstat("nr_superpage_resv_unused") < 0)
		SKIP(return false, "this kernel has no reservation gauges");
	k->cluster = access(SP_CLUSTER, F_OK) ? -1 : sp_read_int(SP_CLUSTER);
	k->threshold = sp_read_int(SP_THRESHOLD);
	k->mode = sp_read_int(SP_ENABLED);
	ASSERT_EQ(0, sp_write_int(SP_ENABLED, 2));
	return true;
}

static void sp_knobs_restore(const struct sp_knobs *k)
{
	if (k->mode < 0)
		return;
	sp_write_int(SP_ENABLED, k->mode);
	if (k->cluster >= 0)
		sp_write_int(SP_CLUSTER, k->cluster);
	if (k->threshold > 0)
		sp_write_int(SP_THRESHOLD, k->threshold);
}

FIXTURE(vma) {
	struct sp_knobs knobs;
};

FIXTURE_SETUP(vma)
{
	sp_knobs_setup(_metadata, &self->knobs);
}

FIXTURE_TEARDOWN_PARENT(vma)
{
	sp_knobs_restore(&self->knobs);
}

/*
 * The regression: a fault that continues a run maps an aligned block of
 * unmapped subpages around it, and that block must stop at the edge of
 * the faulting VMA.  Write A[0] (the reservation), cut [A + 12K, A + 2M)
 * off with munmap or mprotect(PROT_NONE), write A[4K] and A[8K]: the
 * second write continues a run and, unclamped, maps the block of subpages
 * 2 and 3, so that A + 12K is a present, writable page with no VMA access
 * (after munmap, one that no unmap ever reaches: the reservation leaks
 * and exit reports a bad rss-counter).  On the left: the reservation
 * starts at A + 2M - 4K, [A, A + 2M - 12K) is cut off, the writes go down
 * (unclamped, the page below the VMA gets an rmap offset from it that
 * wraps: a DEBUG_VM kernel stops in __page_check_anon_rmap()).
 */
struct sp_regress {
	bool unmap, left;
};

static int sp_regress_child(struct sp_sc *sc, const void *arg)
{
	const struct sp_regress *r = arg;
	int first, s, e, t1, t2, out, ret;
	const char *what;

	if (!r->left) {
		first = MAP_AT;
		s = MAP_AT + 3;
		e = MAP_AT + SP_NR;
		t1 = MAP_AT + 1;
		t2 = MAP_AT + 2;
		out = MAP_AT + 3;
	} else {
		first = MAP_AT + SP_NR - 1;
		s = MAP_AT;
		e = MAP_AT + SP_NR - 3;
		t1 = MAP_AT + SP_NR - 2;
		t2 = MAP_AT + SP_NR - 3;
		out = MAP_AT + SP_NR - 4;
	}
	sp_touch(sc, first);
	ret = sp_edit(sc, r->unmap ? OP_MUNMAP : OP_PROT_NONE, s, e);
	if (ret)
		return ret;
	sp_touch(sc, t1);
	sp_touch(sc, t2);
	sp_pm_read(sc);
	if (sp_present(sc, out))
		sc_fail(sc,
			"%s present (PFN %#llx) after the write to %s: the fault cluster left the VMA",
			sp_where(out), sp_pm_pfn(sc, out), sp_where(t2));
	what = r->unmap ? "outside every VMA" : "in a PROT_NONE VMA";
	sp_must_segv(sc, out, false, "after the writes", what);
	sp_must_segv(sc, out, true, "after the writes", what);
	sp_verify(sc, "after the writes");
	return 0;
}

/* Every cluster order the sysctl takes, both edits. */
static void sp_regress(struct __test_metadata *_metadata, int saved,
		       bool left)
{
	int order, err, unmap, tried = 0;
	char name[128];

	for (order = 0; order <= 9; order++) {
		if (saved >= 0) {
			err = sp_write_int(SP_CLUSTER, order);
			if (err == EINVAL)
				continue;
			EXPECT_EQ(0, err)
				TH_LOG("cluster order %d: %s", order,
				       strerror(err));
			if (err)
				continue;
		} else if (order) {
			break;
		}
		tried++;
		for (unmap = 0; unmap < 2; unmap++) {
			struct sp_regress r = { .unmap = unmap, .left = left };

			snprintf(name, sizeof(name),
				 "cut on the %s by %s, cluster order %d",
				 left ? "left" : "right",
				 unmap ? "munmap" : "mprotect(PROT_NONE)",
				 saved >= 0 ? order : -1);
			sp_scenario(_metadata, name, sp_regress_child, &r);
		}
	}
	if (saved >= 0)
		sp_write_int(SP_CLUSTER, saved);
	EXPECT_LT(0, tried);
}

TEST_F_TIMEOUT(vma, cluster_stays_inside_vma, 300)
{
	sp_regress(_metadata, self->knobs.cluster, false);
}

TEST_F_TIMEOUT(vma, cluster_stays_inside_vma_left, 300)
{
	sp_regress(_metadata, self->knobs.cluster, true);
}

/*
 * Random sequences of edits of random ranges of the mapping (munmap, mmap
 * over a range, which fills its holes again, mprotect to any protection,
 * MADV_DONTNEED, MADV_FREE, MADV_NOHUGEPAGE), so that VMAs fall apart and
 * merge again, with random or sequential touches after each edit and a
 * check after them.  Fixed seeds.
 */
#define RAND_SEQS	12
#define RAND_STEPS	5

static int sp_random_child(struct sp_sc *sc, const void *arg)
{
	static const enum sp_op ops[] = {
		OP_MUNMAP, OP_MMAP, OP_PROT_NONE, OP_PROT_READ, OP_PROT_RW,
		OP_DONTNEED, OP_FREE, OP_NOHUGEPAGE,
	};
	unsigned int seed = *(const unsigned int *)arg;
	int step, s, e, k, len, ret;
	char when[128];
	enum sp_op op;

	sp_fill(sc, seed & 1 ? PAT_RAND : PAT_SEQ);
	for (step = 0; step < RAND_STEPS; step++) {
		s = MAP_AT + rand_r(&seed) % MAP_PAGES;
		/* Short ranges as often as long ones. */
		len = rand_r(&seed) & 1 ? 8 : MAP_PAGES;
		e = s + 1 + rand_r(&seed) % (len < MAP_END - s ? len :
								 MAP_END - s);
		op = ops[rand_r(&seed) % ARRAY_SIZE(ops)];
		/* mprotect and madvise take no range with a hole in it. */
		for (k = s; k < e && op != OP_MUNMAP; k++)
			if (sc->pg[k].acc == ACC_HOLE)
				op = OP_MMAP;
		ret = sp_edit(sc, op, s, e);
		if (ret)
			return ret;
		sp_refill(sc, rand_r(&seed) & 1 ? PAT_RAND : PAT_SEQ,
			  rand_r(&seed));
		snprintf(when, sizeof(when), "step %d, after the %s of [%s, %s)",
			 step, sp_op_name[op], sp_where(s), sp_where(e));
		sp_verify(sc, when);
	}
	return 0;
}

TEST_F_TIMEOUT(vma, random_edit_sequences, 300)
{
	unsigned int seed;
	char name[64];

	for (seed = 1; seed <= RAND_SEQS; seed++) {
		snprintf(name, sizeof(name), "random edit sequence %u", seed);
		sp_scenario(_metadata, name, sp_random_child, &seed);
	}
}

/*
 * The edge matrix: each edit at several cut points of a partly filled
 * reservation (the first SEQ_FILL pages, clusters mapping ahead to page
 * 255, or RAND_FILL pages at random), over three pages from there or
 * from there to the end of the mapping.
 */
static const int sp_cuts[] = { 1, 3, 65, 255, 256, 511 };

static void sp_matrix(struct __test_metadata *_metadata, const char *what,
		      const enum sp_op *op, bool fork)
{
	int c, sub, pat, ret, run = 0, skipped = 0;
	char name[128];

	for (c = 0; c < (int)ARRAY_SIZE(sp_cuts); c++) {
		for (sub = 1; sub >= 0; sub--) {
			for (pat = PAT_SEQ; pat <= PAT_RAND; pat++) {
				struct sp_args a = {
					.op = op,
					.fork = fork,
					.s = sp_cuts[c],
					.e = sub ? sp_cuts[c] + 3 : MAP_PAGES,
					.pattern = pat,
				};

				snprintf(name, sizeof(name),
					 "%s of pages [%d, %d) after a %s fill",
					 what, a.s, a.e,
					 pat == PAT_SEQ ? "sequential" :
							  "random");
				ret = sp_scenario(_metadata, name,
						  sp_matrix_child, &a);
				skipped += ret == SC_SKIP;
				run++;
			}
		}
	}
	if (skipped == run && _metadata->exit_code == KSFT_PASS)
		SKIP(return, "%s: every scenario skipped", what);
}

FIXTURE(vma_edit) {
	struct sp_knobs knobs;
};

FIXTURE_SETUP(vma_edit)
{
	sp_knobs_setup(_metadata, &self->knobs);
}

FIXTURE_TEARDOWN_PARENT(vma_edit)
{
	sp_knobs_restore(&self->knobs);
}

/* A kind of scenario: its edits in turn, maybe made by a forked child. */
FIXTURE_VARIANT(vma_edit) {
	const char *name;
	enum sp_op op[2];
	bool fork;
};

FIXTURE_VARIANT_ADD(vma_edit, munmap) {
	.name = "munmap",
	.op = { OP_MUNMAP },
};

FIXTURE_VARIANT_ADD(vma_edit, mprotect_none) {
	.name = "mprotect(PROT_NONE)",
	.op = { OP_PROT_NONE },
};

FIXTURE_VARIANT_ADD(vma_edit, mprotect_read) {
	.name = "mprotect(PROT_READ)",
	.op = { OP_PROT_READ },
};

FIXTURE_VARIANT_ADD(vma_edit, mprotect_none_then_rw) {
	.name = "mprotect(PROT_NONE), then back to read-write,",
	.op = { OP_PROT_NONE, OP_PROT_RW },
};

FIXTURE_VARIANT_ADD(vma_edit, mremap_shrink) {
	.name = "mremap shrink",
	.op = { OP_SHRINK },
};

FIXTURE_VARIANT_ADD(vma_edit, mremap_grow) {
	.name = "munmap, then mremap grow over the hole,",
	.op = { OP_MUNMAP, OP_GROW },
};

FIXTURE_VARIANT_ADD(vma_edit, munmap_then_mmap) {
	.name = "munmap, then mmap over the hole,",
	.op = { OP_MUNMAP, OP_MMAP },
};

FIXTURE_VARIANT_ADD(vma_edit, mremap_move) {
	.name = "mremap move to the same offset in 2 MiB",
	.op = { OP_MOVE },
};

FIXTURE_VARIANT_ADD(vma_edit, mremap_move_aligned) {
	.name = "mremap move to a 2 MiB boundary",
	.op = { OP_MOVE_ALIGNED },
};

FIXTURE_VARIANT_ADD(vma_edit, mremap_move_misaligned) {
	.name = "mremap move to 16 pages off",
	.op = { OP_MOVE_MISALIGNED },
};

FIXTURE_VARIANT_ADD(vma_edit, madv_dontneed) {
	.name = "MADV_DONTNEED",
	.op = { OP_DONTNEED },
};

FIXTURE_VARIANT_ADD(vma_edit, madv_free) {
	.name = "MADV_FREE",
	.op = { OP_FREE },
};

FIXTURE_VARIANT_ADD(vma_edit, mlock) {
	.name = "mlock",
	.op = { OP_MLOCK },
};

FIXTURE_VARIANT_ADD(vma_edit, madv_nohugepage) {
	.name = "MADV_NOHUGEPAGE",
	.op = { OP_NOHUGEPAGE },
};

FIXTURE_VARIANT_ADD(vma_edit, fork_munmap) {
	.name = "munmap in a forked child",
	.op = { OP_MUNMAP },
	.fork = true,
};

FIXTURE_VARIANT_ADD(vma_edit, fork_mprotect_none) {
	.name = "mprotect(PROT_NONE) in a forked child",
	.op = { OP_PROT_NONE },
	.fork = true,
};

TEST_F_TIMEOUT(vma_edit, cut_partly_filled_reservation, 300)
{
	sp_matrix(_metadata, variant->name, variant->op, variant->fork);
}

TEST_HARNESS_MAIN
