// SPDX-License-Identifier: GPL-2.0
/*
 * pt-lat: the latency of the kernel operations that allocate and free page
 * tables, in the manner of lmbench's lat_proc and lat_pagefault (lmbench
 * is not in Debian; this is the equivalent, not lmbench).
 *
 *   pt-lat [-r rounds] [-n per-round]
 *
 * Each operation runs n times per round; a round's time divided by n is
 * one sample; the median of the rounds is printed, in microseconds:
 *
 *   fork+exit      fork, the child _exit(0)s, the parent waits
 *   fork+execve    the child execs `pt-lat --exit`
 *   fork+sh        the child runs `/bin/sh -c '<pt-lat> --exit'`
 *   pagefault      first touch of a page in a fresh 2 MiB-aligned span
 *                  (a new PTE table every 512 faults), per fault
 *   mmap+munmap    map 1 MiB at a fresh 1 GiB-aligned address, touch one
 *                  page (a PMD and a PTE table), unmap
 *
 * Output: one line per operation, "lat <name> <median-us>".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vmtest.h"

#define MAX_ROUNDS	64
#define FAULT_SPAN	(64UL << 20)
#define MAP_BASE	(32UL << 40)

static char self[4096];

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void spawn(const char *how)
{
	int status;
	pid_t pid = fork();

	T_ASSERT(pid >= 0, "fork");
	if (!pid) {
		if (!strcmp(how, "execve"))
			execl("/proc/self/exe", "pt-lat", "--exit", (char *)NULL);
		else if (!strcmp(how, "sh"))
			execl("/bin/sh", "sh", "-c", "exec \"$0\" --exit", self,
			      (char *)NULL);
		_exit(strcmp(how, "exit") ? 127 : 0);
	}
	T_ASSERT(waitpid(pid, &status, 0) == pid, "waitpid");
	T_ASSERT(WIFEXITED(status) && !WEXITSTATUS(status),
		 "child of %s: status %#x", how, status);
}

/* n first touches, one per page, in a fresh mapping; per fault. */
static void faults(long n)
{
	size_t len = FAULT_SPAN, off;
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	T_ASSERT(p != MAP_FAILED, "mmap");
	/* 4 KiB pages whatever THP's setting: a PTE table per 2 MiB */
	madvise(p, len, MADV_NOHUGEPAGE);
	for (off = 0; off < (size_t)n * 4096 && off < len; off += 4096)
		p[off] = 1;
	T_ASSERT(munmap(p, len) == 0, "munmap");
}

static void map_unmap(long i)
{
	uintptr_t at = MAP_BASE + ((uintptr_t)(i % 1024) << 30);
	uint8_t *p = mmap((void *)at, 1 << 20, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			  -1, 0);

	T_ASSERT(p != MAP_FAILED, "mmap");
	p[0] = 1;
	T_ASSERT(munmap(p, 1 << 20) == 0, "munmap");
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	static const char * const ops[] = { "fork+exit", "fork+execve",
					    "fork+sh", "pagefault",
					    "mmap+munmap" };
	double sample[MAX_ROUNDS];
	long rounds = 7, n = 20, i;
	unsigned int k;
	int c, r;

	if (argc == 2 && !strcmp(argv[1], "--exit"))
		return 0;
	T_ASSERT(readlink("/proc/self/exe", self, sizeof(self) - 1) > 0,
		 "readlink");
	while ((c = getopt(argc, argv, "r:n:")) != -1) {
		switch (c) {
		case 'r':
			rounds = atol(optarg);
			break;
		case 'n':
			n = atol(optarg);
			break;
		default:
			fprintf(stderr, "usage: pt-lat [-r rounds] [-n per-round]\n");
			return 2;
		}
	}
	T_ASSERT(rounds > 0 && rounds <= MAX_ROUNDS && n > 0, "bad counts");
	for (k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		for (r = 0; r < rounds; r++) {
			double t0 = now_us(), t;
			long per = n;

			if (k == 3) {
				/* one mapping of 8192 faults counts as 8192 */
				per = FAULT_SPAN / 4096 / 2;
				faults(per);
			} else {
				for (i = 0; i < n; i++) {
					if (k == 0)
						spawn("exit");
					else if (k == 1)
						spawn("execve");
					else if (k == 2)
						spawn("sh");
					else
						map_unmap(r * n + i);
				}
			}
			t = now_us() - t0;
			sample[r] = t / per;
		}
		printf("lat %s %.2f\n", ops[k], median(sample, rounds));
	}
	return 0;
}
