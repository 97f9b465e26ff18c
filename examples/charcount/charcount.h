/* SPDX-License-Identifier: MIT */
/*
 * charcount, the papers' workload: the mapper stripes its input across the
 * reducers' slots in slot-sized rounds; each reducer counts the occurrences
 * of one byte in its slot and answers through its mailbox.
 *
 * Mailbox words (struct sivshm_mbox at the start of each reducer slot):
 *	req[0]	command: CC_COUNT or CC_EXIT
 *	req[1]	bytes of data in the slot, from offset SIVSHM_MBOX_SIZE
 *	req[2]	the byte to count
 *	resp[0]	the count
 * Interrupt mode rings vector 0 both ways after each post; polling mode
 * only spins on the mailbox.
 */
#ifndef CHARCOUNT_H
#define CHARCOUNT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CC_COUNT	1
#define CC_EXIT		2
#define CC_VECTOR	0
#define CC_NVECTORS	1

/*
 * The workload itself, shared by charcount and its baselines (TCP loopback,
 * ivshmem-server) so that all of them move and count the same bytes.
 */
static inline uint64_t cc_count(const uint8_t *p, size_t len, uint8_t c)
{
	uint64_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += p[i] == c;
	return n;
}

/* Seeded random input, reproducible chunk by chunk from any thread. */
static inline void cc_fill_random(uint8_t *buf, uint64_t len, uint64_t seed,
				  uint64_t chunk)
{
	uint64_t x = seed ^ (chunk + 1) * 0x9e3779b97f4a7c15ULL;
	uint64_t i, v;

	for (i = 0; i + 8 <= len; i += 8) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		v = x * 0x2545f4914f6cdd1dULL;
		memcpy(buf + i, &v, 8);
	}
	for (; i < len; i++)
		buf[i] = (uint8_t)(x >> (8 * (i & 7)));
}

/*
 * Chunk k of the input is what reducer j gets in round r, k = r * N + j - 1:
 * its length, given the input's total and the chunk capacity.
 */
static inline uint64_t cc_chunk_len(uint64_t k, uint64_t cap, uint64_t total)
{
	uint64_t off = k * cap;

	return off >= total ? 0 : total - off < cap ? total - off : cap;
}

static inline uint64_t cc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * When the service started, for its ready time: sivshm-run sets
 * SIVSHM_RUN_T0 (CLOCK_MONOTONIC, ns) before it starts any process of it,
 * ivshmem-server included, so every system is timed from the same point.
 * Started by hand, a mapper counts from its own start, @fallback.
 */
static inline uint64_t cc_service_t0(uint64_t fallback)
{
	const char *s = getenv("SIVSHM_RUN_T0");
	char *end;
	uint64_t t0;

	if (!s)
		return fallback;
	t0 = strtoull(s, &end, 10);
	return *end || !t0 || t0 > fallback ? fallback : t0;
}

/* What a mapper prints at the end: for people, then one line for scripts. */
struct cc_result {
	const char *prog;	/* "charcount", "charcount-tcp", ... */
	const char *mode;	/* "poll", "irq", "tcp" */
	uint8_t ch;
	uint32_t nreducers;
	uint32_t nthreads;
	uint64_t bytes;
	uint64_t count;		/* what the reducers answered */
	uint64_t direct;	/* what the mapper counted itself */
	uint64_t xfer_ns;
	uint64_t resp_ns;
	uint64_t job_ns;
	uint64_t ready_ns;
	int fail;
};

/* The "result" line is what make bench parses: keep its keys stable. */
static inline int cc_report(const struct cc_result *r)
{
	int ok = r->count == r->direct && !r->fail;

	printf("%s: '%c' occurs %llu times (direct count %llu: %s)\n",
	       r->prog, r->ch, (unsigned long long)r->count,
	       (unsigned long long)r->direct, ok ? "match" : "MISMATCH");
	printf("%s: Xfer %.3f s (%.2f GiB/s), Resp %.3f s, job %.3f s\n",
	       r->prog, r->xfer_ns / 1e9,
	       r->xfer_ns ? r->bytes / (r->xfer_ns / 1e9) / (1 << 30) : 0.0,
	       r->resp_ns / 1e9, r->job_ns / 1e9);
	printf("result reducers=%u mode=%s threads=%u bytes=%llu count=%llu "
	       "direct=%llu xfer_s=%.6f resp_s=%.6f job_s=%.6f ready_ms=%.3f\n",
	       r->nreducers, r->mode, r->nthreads,
	       (unsigned long long)r->bytes, (unsigned long long)r->count,
	       (unsigned long long)r->direct, r->xfer_ns / 1e9,
	       r->resp_ns / 1e9, r->job_ns / 1e9, r->ready_ns / 1e6);
	return ok ? 0 : 1;
}

/* "1G", "512M", "64k" or plain bytes; exits on anything else. */
static inline uint64_t cc_parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K': return v << 10;
	case 'm': case 'M': return v << 20;
	case 'g': case 'G': return v << 30;
	case '\0': return v;
	}
	fprintf(stderr, "charcount: bad size %s\n", s);
	exit(2);
}

#endif
