// SPDX-License-Identifier: MIT
/*
 * The physical limit for Xfer: memcpy bandwidth from private buffers into
 * shared destinations, from T threads at once, in chunks of the slot size,
 * each thread cycling through D destination chunks as the mapper cycles
 * through its reducers' slots (so the working set is as large).
 *
 *   memcpy-bw --threads T --chunk BYTES --bytes TOTAL [--dests D]
 *
 * Prints "result threads=T chunk=C bytes=B seconds=S gib_s=G".
 */
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

struct worker {
	pthread_t thread;
	uint8_t *src, *dst;
	uint64_t chunk, bytes, ns;
	unsigned int dests;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	uint64_t t0 = now_ns();

	unsigned int d = 0;

	for (uint64_t done = 0; done < w->bytes; done += w->chunk) {
		memcpy(w->dst + d * w->chunk, w->src, w->chunk);
		d = (d + 1) % w->dests;
	}
	w->ns = now_ns() - t0;
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "dests", required_argument, NULL, 'd' },
		{ 0 }
	};
	uint64_t chunk = 32 << 20, bytes = 1ULL << 30, ns = 0;
	unsigned int nthreads = 1, dests = 1;
	struct worker *w;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't': nthreads = strtoul(optarg, NULL, 0); break;
		case 'c': chunk = strtoull(optarg, NULL, 0); break;
		case 'b': bytes = strtoull(optarg, NULL, 0); break;
		case 'd': dests = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: memcpy-bw [--threads T] [--chunk B] "
				"[--bytes B] [--dests D]\n");
			return 2;
		}
	}
	if (!nthreads || !chunk || !dests || bytes < chunk) {
		fprintf(stderr, "memcpy-bw: bad arguments\n");
		return 2;
	}
	w = calloc(nthreads, sizeof(*w));
	for (unsigned int t = 0; t < nthreads; t++) {
		w[t].src = malloc(chunk);
		w[t].dst = mmap(NULL, chunk * dests, PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (!w[t].src || w[t].dst == MAP_FAILED) {
			perror("memcpy-bw");
			return 1;
		}
		memset(w[t].src, t + 1, chunk);
		memset(w[t].dst, 0, chunk * dests);	/* fault it all in first */
		w[t].chunk = chunk;
		w[t].dests = dests;
		w[t].bytes = bytes / nthreads / chunk * chunk;
	}
	for (unsigned int t = 0; t < nthreads; t++)
		pthread_create(&w[t].thread, NULL, run, &w[t]);
	for (unsigned int t = 0; t < nthreads; t++) {
		pthread_join(w[t].thread, NULL);
		ns = w[t].ns > ns ? w[t].ns : ns;
	}
	bytes = w[0].bytes * nthreads;
	printf("result threads=%u chunk=%llu bytes=%llu seconds=%.6f gib_s=%.3f\n",
	       nthreads, (unsigned long long)chunk, (unsigned long long)bytes,
	       ns / 1e9, bytes / (ns / 1e9) / (1 << 30));
	return 0;
}
