// SPDX-License-Identifier: GPL-2.0
/*
 * pt-before: page tables built before a module that pins tables loaded,
 * linked under tables it pinned after the load, the ways a stock 6.1
 * kernel does it.
 *
 *   pt-before thp|pud|share|wide
 *
 * Each mode maps and touches its memory at once, in tables nobody pinned,
 * prints "pt-before: MODE ready", waits for SIGUSR1 (sent once the module
 * is loaded), then:
 *
 * thp    a 2 MiB anonymous huge page (MADV_HUGEPAGE) is moved by mremap
 *        to an address whose tables are new (move_huge_pmd: its deposited
 *        PTE table goes with it, unlinked), checked to be still mapped
 *        huge there, then split by unmapping its last 4 KiB page, which
 *        links the deposited PTE table under the new PMD table.
 * pud    1 GiB of anonymous memory, 1 GiB aligned, 4 KiB pages touched in
 *        PUD_SPANS 2 MiB spans, is moved by mremap to a 1 GiB-aligned
 *        address whose PUD table is new: move_normal_pud() moves the PMD
 *        table with its PUD_SPANS PTE tables in one entry.
 * share  1 GiB of MAP_SHARED hugetlb memory spanning one PUD entry, with
 *        SHARE_PAGES huge pages faulted; a child forked now faults the
 *        range, and huge_pmd_share() links the parent's PMD table under
 *        the child's PUD table.  Needs SHARE_PAGES + 1 free huge pages.
 * wide   WIDE_SPANS 2 MiB spans, a 4 KiB page touched in each: more PTE
 *        tables than the host validates in one op (513).  After the
 *        signal a page in another PGD slot: its __pud_alloc() pins the
 *        root under pibooster.ko's pin=roots, which the host refuses
 *        for the tables below it (R_LIMIT); the root stays the kernel's.
 *
 * After the move the bytes written before are read through the new
 * mapping, then new ones written and read back.  Exit 0 and "pt-before:
 * MODE ok", or 1 with an ASSERT line (tests/unit/check.h).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmtest.h"

#define SZ_4K		4096UL
#define SZ_2M		(2UL << 20)
#define SZ_1G		(1UL << 30)
/*
 * Before the load: one 512 GiB PGD slot.  After: another, so the PUD
 * table the move needs there is allocated, and pinned, after the load.
 */
#define SRC		(2UL << 40)
#define DST		(4UL << 40)
#define PUD_SPANS	4
#define SHARE_PAGES	2
#define WIDE_SPANS	600

static uint8_t pattern(unsigned long off, unsigned int seed)
{
	return (uint8_t)((off >> 12) * 131 + seed);
}

/* One byte per 4 KiB page of [p + from, p + to): set, or count the bad. */
static void fill(uint8_t *p, unsigned long from, unsigned long to,
		 unsigned int seed)
{
	for (; from < to; from += SZ_4K)
		p[from] = pattern(from, seed);
}

static unsigned long bad(const uint8_t *p, unsigned long from,
			 unsigned long to, unsigned int seed)
{
	unsigned long n = 0;

	for (; from < to; from += SZ_4K)
		n += p[from] != pattern(from, seed);
	return n;
}

/* AnonHugePages of the mapping that starts at addr, in kB (smaps). */
static long thp_kb(unsigned long addr)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[256];
	unsigned long start, end;
	int in = 0;
	long kb = -1;

	T_ASSERT(f, "/proc/self/smaps");
	while (fgets(line, sizeof(line), f)) {
		/* a mapping's first line: start-end perms ... */
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2) {
			in = start == addr;
			continue;
		}
		if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	T_ASSERT(kb >= 0, "no mapping at %#lx in smaps", addr);
	return kb;
}

static void *map_at(unsigned long addr, unsigned long len, int flags)
{
	void *p = mmap((void *)addr, len, PROT_READ | PROT_WRITE,
		       flags | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);

	T_ASSERT(p == (void *)addr, "mmap of %#lx bytes at %#lx", len, addr);
	return p;
}

static void *move(unsigned long from, unsigned long len, unsigned long to)
{
	void *p = mremap((void *)from, len, len,
			 MREMAP_MAYMOVE | MREMAP_FIXED, (void *)to);

	T_ASSERT(p == (void *)to, "mremap %#lx -> %#lx", from, to);
	return p;
}

static void ready(const char *mode, sigset_t *set)
{
	int sig;

	printf("pt-before: %s ready\n", mode);
	T_ASSERT(!sigwait(set, &sig) && sig == SIGUSR1, "sigwait");
}

static void thp(sigset_t *set)
{
	uint8_t *p = map_at(SRC, SZ_2M, MAP_PRIVATE | MAP_ANONYMOUS);

	T_ASSERT(!madvise(p, SZ_2M, MADV_HUGEPAGE), "MADV_HUGEPAGE");
	fill(p, 0, SZ_2M, 1);
	T_ASSERT(thp_kb(SRC) == 2048,
		 "%ld kB of huge pages at %#lx: THP off, or no free 2 MiB",
		 thp_kb(SRC), SRC);
	ready("thp", set);

	p = move(SRC, SZ_2M, DST);
	T_ASSERT(thp_kb(DST) == 2048,
		 "moved, not as a huge PMD: %ld kB huge at %#lx",
		 thp_kb(DST), DST);
	T_EQ(bad(p, 0, SZ_2M, 1), 0);
	/* The split links the deposited PTE table. */
	T_ASSERT(!munmap(p + SZ_2M - SZ_4K, SZ_4K), "munmap of the last page");
	T_ASSERT(thp_kb(DST) == 0, "not split: %ld kB huge", thp_kb(DST));
	T_EQ(bad(p, 0, SZ_2M - SZ_4K, 1), 0);
	fill(p, 0, SZ_2M - SZ_4K, 2);
	T_EQ(bad(p, 0, SZ_2M - SZ_4K, 2), 0);
}

/* Span i of the PUD_SPANS touched, 256 MiB apart. */
static unsigned long span(int i)
{
	return (unsigned long)i * (SZ_1G / PUD_SPANS);
}

static void pud(sigset_t *set)
{
	uint8_t *p = map_at(SRC, SZ_1G, MAP_PRIVATE | MAP_ANONYMOUS);
	int i;

	/* 4 KiB pages: PTE tables under the PMD table, no huge PMD. */
	T_ASSERT(!madvise(p, SZ_1G, MADV_NOHUGEPAGE), "MADV_NOHUGEPAGE");
	for (i = 0; i < PUD_SPANS; i++)
		fill(p, span(i), span(i) + 4 * SZ_4K, 1);
	ready("pud", set);

	p = move(SRC, SZ_1G, DST);
	for (i = 0; i < PUD_SPANS; i++) {
		T_EQ(bad(p, span(i), span(i) + 4 * SZ_4K, 1), 0);
		fill(p, span(i), span(i) + 8 * SZ_4K, 2);
	}
	/* a span of its own: a new PTE table under the moved PMD table */
	fill(p, SZ_1G - SZ_2M, SZ_1G - SZ_2M + SZ_4K, 2);
	for (i = 0; i < PUD_SPANS; i++)
		T_EQ(bad(p, span(i), span(i) + 8 * SZ_4K, 2), 0);
	T_EQ(bad(p, SZ_1G - SZ_2M, SZ_1G - SZ_2M + SZ_4K, 2), 0);
}

/* Huge page i of those the share mode touches, 256 MiB apart. */
static unsigned long huge(int i)
{
	return (unsigned long)i * (SZ_1G / 4);
}

static void share(sigset_t *set)
{
	uint8_t *p = map_at(SRC, SZ_1G, MAP_SHARED | MAP_ANONYMOUS |
			    MAP_HUGETLB);
	int i, status;
	pid_t pid;

	for (i = 0; i < SHARE_PAGES; i++)
		p[huge(i)] = pattern(huge(i), 1);
	ready("share", set);

	pid = fork();
	T_ASSERT(pid >= 0, "fork");
	if (!pid) {
		/* The first fault shares the parent's PMD table. */
		for (i = 0; i < SHARE_PAGES; i++) {
			T_EQ(p[huge(i)], pattern(huge(i), 1));
			p[huge(i)] = pattern(huge(i), 2);
		}
		/* a huge page of its own, in the shared table */
		p[huge(SHARE_PAGES)] = pattern(huge(SHARE_PAGES), 2);
		exit(0);
	}
	T_ASSERT(waitpid(pid, &status, 0) == pid, "waitpid");
	T_ASSERT(WIFEXITED(status) && !WEXITSTATUS(status),
		 "the child failed: status %#x", status);
	for (i = 0; i <= SHARE_PAGES; i++)
		T_EQ(p[huge(i)], pattern(huge(i), 2));
}

static void wide(sigset_t *set)
{
	uint8_t *p = map_at(SRC, WIDE_SPANS * SZ_2M,
			    MAP_PRIVATE | MAP_ANONYMOUS);
	uint8_t *q;
	int i;

	/* 4 KiB pages: a PTE table per span, no huge PMD. */
	T_ASSERT(!madvise(p, WIDE_SPANS * SZ_2M, MADV_NOHUGEPAGE),
		 "MADV_NOHUGEPAGE");
	for (i = 0; i < WIDE_SPANS; i++)
		fill(p, i * SZ_2M, i * SZ_2M + SZ_4K, 1);
	ready("wide", set);

	q = map_at(DST, SZ_4K, MAP_PRIVATE | MAP_ANONYMOUS);
	fill(q, 0, SZ_4K, 2);
	T_EQ(bad(q, 0, SZ_4K, 2), 0);
	for (i = 0; i < WIDE_SPANS; i++)
		T_EQ(bad(p, i * SZ_2M, i * SZ_2M + SZ_4K, 1), 0);
}

int main(int argc, char **argv)
{
	sigset_t set;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: pt-before thp|pud|share|wide\n");
		return 2;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	T_ASSERT(!sigprocmask(SIG_BLOCK, &set, NULL), "sigprocmask");
	if (!strcmp(argv[1], "thp"))
		thp(&set);
	else if (!strcmp(argv[1], "pud"))
		pud(&set);
	else if (!strcmp(argv[1], "share"))
		share(&set);
	else if (!strcmp(argv[1], "wide"))
		wide(&set);
	else
		T_ASSERT(0, "unknown mode %s", argv[1]);
	printf("pt-before: %s ok\n", argv[1]);
	return 0;
}
