// SPDX-License-Identifier: MIT
/*
 * Polling-mode mailbox.  The sequence numbers are the only synchronisation:
 * a post stores its words, then the sequence with release semantics; a wait
 * loads the sequence with acquire semantics, then the words.  Whatever the
 * poster wrote anywhere in shared memory before posting is visible to the
 * waiter once it has seen the sequence.
 */
#include <errno.h>
#include <sched.h>
#include <time.h>

#include "handle.h"
#include "sivshm.h"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void post(uint64_t *seq_word, uint64_t *words, uint64_t seq,
		 const uint64_t *src)
{
	for (int i = 0; i < SIVSHM_MBOX_WORDS; i++)
		__atomic_store_n(&words[i], src ? src[i] : 0, __ATOMIC_RELAXED);
	__atomic_store_n(seq_word, seq, __ATOMIC_RELEASE);
}

static int wait_seq(uint64_t *seq_word, uint64_t *words, uint64_t seq,
		    int timeout_ms, uint64_t *dst)
{
	int64_t deadline = timeout_ms < 0 ? 0 :
			   now_ns() + (int64_t)timeout_ms * 1000000;
	unsigned int spins = 0;

	while (__atomic_load_n(seq_word, __ATOMIC_ACQUIRE) != seq) {
		cpu_relax();
		if (++spins % 1024)
			continue;
		/*
		 * Still polling (the CPU stays busy), but a peer sharing this
		 * CPU gets to run: with more pollers than CPUs, spinning alone
		 * would starve the very peer being waited for.
		 */
		sched_yield();
		if (timeout_ms >= 0 && now_ns() >= deadline)
			return -ETIMEDOUT;
	}
	if (dst)
		for (int i = 0; i < SIVSHM_MBOX_WORDS; i++)
			dst[i] = __atomic_load_n(&words[i], __ATOMIC_RELAXED);
	return 0;
}

void sivshm_mbox_post_request(struct sivshm_mbox *mb, uint64_t seq,
			      const uint64_t req[SIVSHM_MBOX_WORDS])
{
	post(&mb->req_seq, mb->req, seq, req);
}

int sivshm_mbox_wait_request(struct sivshm_mbox *mb, uint64_t seq,
			     int timeout_ms, uint64_t req[SIVSHM_MBOX_WORDS])
{
	return wait_seq(&mb->req_seq, mb->req, seq, timeout_ms, req);
}

void sivshm_mbox_post_response(struct sivshm_mbox *mb, uint64_t seq,
			       const uint64_t resp[SIVSHM_MBOX_WORDS])
{
	post(&mb->resp_seq, mb->resp, seq, resp);
}

int sivshm_mbox_wait_response(struct sivshm_mbox *mb, uint64_t seq,
			      int timeout_ms,
			      uint64_t resp[SIVSHM_MBOX_WORDS])
{
	return wait_seq(&mb->resp_seq, mb->resp, seq, timeout_ms, resp);
}

/*
 * A remote peer's mailbox (libsivshm/rdma/): a slot's line travels in a
 * message, its sequence first.  Getting it is the poster's own line,
 * read in any order; putting it publishes as a post does.
 */
void sivshm_mbox_line_get(struct sivshm_mbox *mb, int resp,
			  uint64_t line[1 + SIVSHM_MBOX_WORDS])
{
	uint64_t *seq = resp ? &mb->resp_seq : &mb->req_seq;
	uint64_t *words = resp ? mb->resp : mb->req;

	line[0] = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
	for (int i = 0; i < SIVSHM_MBOX_WORDS; i++)
		line[1 + i] = __atomic_load_n(&words[i], __ATOMIC_RELAXED);
}

void sivshm_mbox_line_put(struct sivshm_mbox *mb, int resp,
			  const uint64_t line[1 + SIVSHM_MBOX_WORDS])
{
	post(resp ? &mb->resp_seq : &mb->req_seq, resp ? mb->resp : mb->req,
	     line[0], line + 1);
}
