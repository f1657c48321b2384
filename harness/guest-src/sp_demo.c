// SPDX-License-Identifier: GPL-2.0
/*
 * sp_demo: the demo workload.  Map SIZE MiB of anonymous memory (2 MiB
 * aligned), touch it one page per STRIDE KiB, and report what the kernel
 * did: minor faults (getrusage), resident and huge-mapped memory
 * (/proc/self/smaps_rollup) and the time taken.
 *   usage: sp_demo [SIZE_MIB [STRIDE_KIB]]     (default 64 MiB, 4 KiB)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define HPAGE (2UL << 20)
#define PAGE 4096UL

/*
 * Count the 2 MiB ranges of [p, p + size) whose touched pages (one per
 * @stride) all sit at PFN = 2 MiB-aligned base + index: physically
 * contiguous as a reservation makes them.  Needs root for PFNs.
 */
static long contiguous_ranges(char *p, unsigned long size, unsigned long stride)
{
	unsigned long off, r;
	long good = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return -1;
	for (r = 0; r < size; r += HPAGE) {
		uint64_t base = 0, ent;
		int ok = 1;

		for (off = 0; off < HPAGE && ok; off += stride) {
			uint64_t pfn;

			if (pread(fd, &ent, 8, ((uintptr_t)p + r + off) / PAGE * 8) != 8)
				ok = 0;
			pfn = ent & ((1ULL << 55) - 1);
			if (!(ent >> 63) || !pfn) {
				ok = 0;
				break;
			}
			if (!off)
				base = pfn;
			ok = pfn == base + off / PAGE && !(base % 512);
		}
		good += ok;
	}
	close(fd);
	return good;
}

static long smaps_kb(const char *field)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/smaps_rollup", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)) && line[strlen(field)] == ':')
			kb = atol(line + strlen(field) + 1);
	fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	unsigned long size = (argc > 1 ? atol(argv[1]) : 64) << 20;
	unsigned long stride = (argc > 2 ? atol(argv[2]) : 4) << 10;
	struct rusage r0, r1;
	struct timespec t0, t1;
	unsigned long off, touched = 0;
	char *raw, *p;

	raw = mmap(NULL, size + HPAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	p = (char *)(((unsigned long)raw + HPAGE - 1) & ~(HPAGE - 1));
	getrusage(RUSAGE_SELF, &r0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (off = 0; off < size; off += stride, touched++)
		p[off] = (char)off;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &r1);
	usleep(200000);
	printf("sp_demo: %lu MiB, one page per %lu KiB: %lu pages touched\n",
	       size >> 20, stride >> 10, touched);
	printf("sp_demo:   minor faults   %ld\n", r1.ru_minflt - r0.ru_minflt);
	printf("sp_demo:   fill time      %.1f ms (guest clock; TCG is not hardware speed)\n",
	       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
	printf("sp_demo:   Rss            %ld kB\n", smaps_kb("Rss"));
	printf("sp_demo:   AnonHugePages  %ld kB\n", smaps_kb("AnonHugePages"));
	printf("sp_demo:   2 MiB ranges physically contiguous: %ld of %lu\n",
	       contiguous_ranges(p, size, stride), size / HPAGE);
	for (off = 0; off < size; off += stride)
		if (p[off] != (char)off) {
			printf("sp_demo: data mismatch at offset %lu\n", off);
			return 1;
		}
	return 0;
}
