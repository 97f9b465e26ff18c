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

#include "sivshm.h"
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

/*
 * The mapper's side, the same over every transport (charcount.c): a pool of
 * threads runs the rounds, thread t serving reducers t + 1, t + 1 + T, ...
 * A transport embeds struct cc_job and says how a chunk reaches a reducer
 * and how its count comes back.
 */
struct cc_job;

struct cc_transport {
	/* Hand reducer @j the @len bytes at @src as request @seq (Xfer). */
	int (*send)(struct cc_job *job, uint32_t j, uint64_t seq,
		    const uint8_t *src, uint64_t len);
	/* Wait for reducer @j's count for request @seq (Resp). */
	int (*recv)(struct cc_job *job, uint32_t j, uint64_t seq,
		    uint64_t *count);
	/* Tell reducer @j to exit, as request @seq. */
	void (*stop)(struct cc_job *job, uint32_t j, uint64_t seq);
};

struct cc_job {
	const char *prog;	/* "charcount", "charcount-tcp", ... */
	const struct cc_transport *ops;
	uint32_t nreducers;
	uint32_t nthreads;	/* 0 before cc_plan(): up to 4 */
	uint64_t cap;		/* data bytes per chunk */
	uint64_t total;		/* input bytes */
	uint64_t rounds;
	const uint8_t *file;	/* the mapped input file, or NULL: random */
	uint64_t seed;
	uint8_t ch;
	int timeout_ms;
	/* What cc_run() found: the sums, and the slowest thread's times. */
	uint64_t count;		/* what the reducers answered */
	uint64_t direct;	/* what the mapper counted itself */
	uint64_t xfer_ns;
	uint64_t resp_ns;
};

#define cc_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

void cc_plan(struct cc_job *job);
int cc_run(struct cc_job *job);
int cc_report(const struct cc_job *job, const char *mode, uint64_t job_ns,
	      uint64_t ready_ns, int fail);

/*
 * The transport through the reducers' slots (slots.c), for sivshm and plain
 * ivshmem alike: a chunk is copied into reducer j's slot after its mailbox,
 * the request posted there, and in interrupt mode its doorbell rung.
 */
struct sivshm_mbox;
struct cc_slots;

struct cc_slot_ops {
	/* Reducer @j's mailbox, at the start of its slot. */
	struct sivshm_mbox *(*mbox)(struct cc_slots *s, uint32_t j);
	/*
	 * Ring reducer @j's vector CC_VECTOR (interrupt mode); the first
	 * @len bytes of its slot changed (a remote reducer reads them).
	 */
	void (*ring)(struct cc_slots *s, uint32_t j, uint64_t len);
	/* Wait up to @timeout_ms for reducer @j's answer to @seq. */
	int (*wait)(struct cc_slots *s, uint32_t j, uint64_t seq,
		    int timeout_ms, uint64_t *resp);
};

struct cc_slots {
	struct cc_job cc;
	const struct cc_slot_ops *ops;
	int irq;
};

extern const struct cc_transport cc_slot_transport;
uint64_t cc_slots_ready(struct cc_slots *s, uint64_t slice, uint64_t ready_ns);

/* A reducer's side of the same slots: its mailbox and how it waits. */
struct cc_reducer;

struct cc_reducer_ops {
	/*
	 * Wait for request @seq in the mailbox.  -ERESTART: the reducer
	 * rejoined (a new slot, maybe a new mapper): cc_serve() starts again
	 * from the mailbox it finds.
	 */
	int (*wait)(struct cc_reducer *r, uint64_t seq, uint64_t *req);
	/* Ring the mapper's vector CC_VECTOR (interrupt mode). */
	void (*ring)(struct cc_reducer *r);
};

struct cc_reducer {
	const struct cc_reducer_ops *ops;
	struct sivshm_mbox *mb;
	uint32_t id;
	uint64_t cap;		/* data bytes in the slot */
	int irq;
};

int cc_serve(struct cc_reducer *r);

/* Key files of remote reducers (keys.c): 0 or -errno, said on stderr. */
int cc_read_keys(const char *path, uint64_t *ids,
		 uint8_t (*keys)[SIVSHM_KEY_BYTES]);

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
