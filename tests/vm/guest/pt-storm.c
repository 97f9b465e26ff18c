// SPDX-License-Identifier: GPL-2.0
/*
 * pt-storm: page-table churn with a checked result.
 *
 *   pt-storm [-m fork|exec|sh|threads|exit] [-n iterations] [-s seconds]
 *            [-w spans] [-S seconds]
 *   pt-storm -H MiB [-R pins]
 *   pt-storm -V seconds
 *
 * The parent populates a few megabytes (so that fork copies page tables);
 * each iteration forks a child that maps regions far enough apart to need
 * new tables at every level the guest module caches (a PTE table per
 * 2 MiB, a PMD table per 1 GiB, a PUD table per 512 GiB), writes a pattern
 * of its own into each page it touches, checks it, checks that it still
 * sees the parent's pages as they were, and exits 0.  With -m exec the
 * child first execs `pt-storm --child`, with -m sh it runs that through
 * `/bin/sh -c`; with -m threads it does its work in THREADS threads at
 * once, each at its own addresses in the one mm, so that they allocate
 * and free tables under shared upper-level tables concurrently; with
 * -m exit the parent maps nothing more and each child exits at once (the
 * fork copied the tables of the binary, its data and its stack: a
 * short-lived process's whole life).  Any
 * wrong byte or failed call fails the run: the exit
 * status is the number of failed children (at most 100) and the last line
 * says "pt-storm: N iterations, F failures".  -w N has each child also
 * touch N more 2 MiB spans, each its own PTE table (up to 4096), and -S
 * seconds makes it hold them that long, then check them again, before it
 * lets go; it prints "pt-storm: holding M MiB" when it starts to hold.
 * SIGTERM ends a run after the child in progress, with the same last
 * line: a storm bounded by -s can be stopped once what it ran beside is
 * done.
 *
 * -H MiB is memory pressure instead: touch that much anonymous memory,
 * page by page, and exit 0 (or be killed by the OOM killer).  With -R N
 * pibooster.ko first refuses its next N table pins (the test-only debugfs
 * pibooster/test_refuse_pins): the faults that needed them are retried.
 *
 * -V seconds is a DMA victim: one page of 0xab bytes, its frame printed
 * ("victim pfn 0x..."), then after that many seconds "victim landed" if
 * its first 256 bytes are all 0 (what edu-dma writes), else "victim
 * intact".
 */
#include <errno.h>
#include <signal.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vmtest.h"

#define PARENT_SIZE	(4UL << 20)
#define SPAN_2M		(2UL << 20)
#define SPAN_1G		(1UL << 30)
#define SPAN_512G	(512UL << 30)
/* Where the child maps: far from the binary, the heap and the stack. */
#define CHILD_BASE	(16UL << 40)
/* -m threads: so many, each 16 GiB from the last (one L3 table for all). */
#define THREADS		4
#define THREAD_STEP	(16 * SPAN_1G)

static uint8_t *parent_mem;
static long wide, hold;

static uint8_t pattern(uintptr_t addr, unsigned int seed)
{
	return (uint8_t)((addr >> 12) * 131 + seed);
}

/*
 * Map len bytes at hint, touch one page every stride, check, unmap.  With
 * THP on, a touched 2 MiB span may be a huge page (its PTE table only
 * deposited); nohuge keeps every span a PTE table and 4 KiB.
 */
static int churn(uintptr_t hint, size_t len, size_t stride, unsigned int seed,
		 int nohuge)
{
	uint8_t *p = mmap((void *)hint, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
			  MAP_FIXED_NOREPLACE, -1, 0);
	size_t off;
	int bad = 0;

	if (p == MAP_FAILED) {
		fprintf(stderr, "pt-storm: mmap at %#lx: %s\n",
			(unsigned long)hint, strerror(errno));
		return 1;
	}
	if (nohuge && madvise(p, len, MADV_NOHUGEPAGE) && errno != EINVAL)
		bad = 1;
	for (off = 0; off < len; off += stride)
		p[off] = pattern((uintptr_t)p + off, seed);
	for (off = 0; off < len; off += stride)
		bad |= p[off] != pattern((uintptr_t)p + off, seed);
	if (nohuge && hold) {
		/* the caller waits for this line (pibooster.sh's held) */
		printf("pt-storm: holding %zu MiB\n", len >> 20);
		fflush(stdout);
		sleep(hold);
		/* what a stray DMA into a table or a page would have changed */
		for (off = 0; off < len; off += stride)
			bad |= p[off] != pattern((uintptr_t)p + off, seed);
	}
	if (munmap(p, len))
		bad = 1;
	return bad;
}

static int work_at(uintptr_t base, unsigned int seed)
{
	int bad = 0, i;
	size_t off;

	/* 32 PTE tables under one PMD table. */
	bad |= churn(base, 64UL << 20, SPAN_2M, seed, 0);
	/* 4 PMD tables under one PUD table, and their PTE tables. */
	for (i = 0; i < 4; i++)
		bad |= churn(base + (i + 1) * SPAN_1G, SPAN_2M,
			     4096, seed + i, 0);
	/* 2 PUD tables. */
	for (i = 0; i < 2; i++)
		bad |= churn(base + (i + 1) * SPAN_512G, 4096, 4096,
			     seed + 7 + i, 0);
	/* wide PTE tables, under PMD tables of their own */
	if (wide)
		bad |= churn(base + 8 * SPAN_1G, wide * SPAN_2M, SPAN_2M,
			     seed + 11, 1);
	if (parent_mem)
		for (off = 0; off < PARENT_SIZE; off += 4096)
			bad |= parent_mem[off] != pattern(off, 0);
	return bad;
}

struct thread_work {
	pthread_t tid;
	uintptr_t base;
	unsigned int seed;
	int bad;
};

static void *thread_main(void *arg)
{
	struct thread_work *w = arg;

	w->bad = work_at(w->base, w->seed);
	return NULL;
}

static int child_work(void)
{
	return work_at(CHILD_BASE, (unsigned int)getpid());
}

static int threads_work(void)
{
	struct thread_work w[THREADS];
	int bad = 0, i;

	/* -w spans must stay below the next thread's addresses */
	T_ASSERT(8 * SPAN_1G + wide * SPAN_2M <= THREAD_STEP, "-w %ld", wide);
	for (i = 0; i < THREADS; i++) {
		w[i].base = CHILD_BASE + i * THREAD_STEP;
		w[i].seed = (unsigned int)getpid() + 101 * i;
		T_EQ(pthread_create(&w[i].tid, NULL, thread_main, &w[i]), 0);
	}
	for (i = 0; i < THREADS; i++) {
		T_EQ(pthread_join(w[i].tid, NULL), 0);
		bad |= w[i].bad;
	}
	return bad;
}

static void refuse_pins(long n)
{
	const char *path = "/sys/kernel/debug/pibooster/test_refuse_pins";
	FILE *f = fopen(path, "w");

	T_ASSERT(f, "%s", path);
	T_ASSERT(fprintf(f, "%d %ld\n", (int)getpid(), n) > 0 && !fclose(f),
		 "%s", path);
}

static int hog(long mib)
{
	size_t len = (size_t)mib << 20, off;
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	T_ASSERT(p != MAP_FAILED, "mmap");
	for (off = 0; off < len; off += 4096)
		p[off] = 1;
	printf("pt-storm: touched %ld MiB\n", mib);
	return 0;
}

/* The frame of the page at p, from /proc/self/pagemap (root sees it). */
static uint64_t pfn_of(const void *p)
{
	uint64_t entry = 0;
	FILE *f = fopen("/proc/self/pagemap", "rb");

	T_ASSERT(f, "/proc/self/pagemap");
	T_ASSERT(!fseek(f, (uintptr_t)p / 4096 * 8, SEEK_SET) &&
		 fread(&entry, 8, 1, f) == 1, "pagemap read");
	fclose(f);
	T_ASSERT(entry >> 63 && (entry & ((1ULL << 55) - 1)),
		 "page not present or no frame: %#llx",
		 (unsigned long long)entry);
	return entry & ((1ULL << 55) - 1);
}

static int victim(long seconds)
{
	uint8_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0);
	int i, zero = 1;

	T_ASSERT(p != MAP_FAILED, "mmap");
	memset(p, 0xab, 4096);
	printf("victim pfn %#llx\n", (unsigned long long)pfn_of(p));
	fflush(stdout);
	sleep(seconds);
	for (i = 0; i < 256; i++)
		zero &= p[i] == 0;
	printf("victim %s\n", zero ? "landed" : "intact");
	return 0;
}

static volatile sig_atomic_t stopping;

static void stop(int sig)
{
	(void)sig;
	stopping = 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = stop, .sa_flags = SA_RESTART };
	const char *mode = "fork";
	long iterations = 100, seconds = 0, i, failures = 0, hog_mib = 0;
	long refuse = 0;
	time_t end;
	size_t off;
	int c;

	if (argc == 2 && !strcmp(argv[1], "--child"))
		return child_work();
	while ((c = getopt(argc, argv, "m:n:s:w:S:H:R:V:")) != -1) {
		switch (c) {
		case 'm':
			mode = optarg;
			break;
		case 'n':
			iterations = atol(optarg);
			break;
		case 's':
			seconds = atol(optarg);
			break;
		case 'w':
			wide = atol(optarg);
			T_ASSERT(wide >= 0 && wide <= 4096, "-w %ld", wide);
			break;
		case 'S':
			hold = atol(optarg);
			break;
		case 'H':
			hog_mib = atol(optarg);
			break;
		case 'R':
			refuse = atol(optarg);
			break;
		case 'V':
			return victim(atol(optarg));
		default:
			fprintf(stderr, "usage: pt-storm [-m fork|exec|sh|threads|exit] [-n N] [-s S] [-w N] [-S S] | -H MiB [-R N] | -V S\n");
			return 2;
		}
	}
	if (hog_mib) {
		if (refuse)
			refuse_pins(refuse);
		return hog(hog_mib);
	}
	T_ASSERT(!strcmp(mode, "fork") || !strcmp(mode, "exec") ||
		 !strcmp(mode, "sh") || !strcmp(mode, "threads") ||
		 !strcmp(mode, "exit"),
		 "mode %s", mode);
	/* -m exit: the few tables of the binary, its data and stack only */
	if (strcmp(mode, "exit")) {
		parent_mem = mmap(NULL, PARENT_SIZE, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		T_ASSERT(parent_mem != MAP_FAILED, "mmap");
		for (off = 0; off < PARENT_SIZE; off += 4096)
			parent_mem[off] = pattern(off, 0);
	}
	T_ASSERT(!sigaction(SIGTERM, &sa, NULL), "sigaction");
	end = time(NULL) + seconds;
	for (i = 0; !stopping && (seconds ? time(NULL) < end : i < iterations);
	     i++) {
		int status;
		pid_t pid = fork();

		T_ASSERT(pid >= 0, "fork");
		if (!pid) {
			if (!strcmp(mode, "exec"))
				execl("/proc/self/exe", "pt-storm", "--child",
				      (char *)NULL);
			else if (!strcmp(mode, "sh"))
				execl("/bin/sh", "sh", "-c",
				      "exec pt-storm --child", (char *)NULL);
			else if (!strcmp(mode, "threads"))
				_exit(threads_work());
			else if (!strcmp(mode, "exit"))
				_exit(0);
			else
				_exit(child_work());
			_exit(127);
		}
		T_ASSERT(waitpid(pid, &status, 0) == pid, "waitpid");
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			failures++;
			fprintf(stderr, "pt-storm: child %d: status %#x\n",
				pid, status);
		}
	}
	printf("pt-storm: %ld iterations, %ld failures\n", i, failures);
	return failures > 100 ? 100 : (int)failures;
}
