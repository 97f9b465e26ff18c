// SPDX-License-Identifier: MIT
/*
 * charcount's transport through the reducers' slots, shared by the sivshm
 * mapper and the ivshmem baseline: the mailbox protocol of charcount.h.
 * Each mapper says where a slot is, how a doorbell rings and how it waits;
 * each reducer how it waits and rings.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "charcount.h"
#include "sivshm.h"

static struct cc_slots *slots_of(struct cc_job *cc)
{
	return cc_container_of(cc, struct cc_slots, cc);
}

static void post(struct cc_slots *s, uint32_t j, uint64_t seq, uint64_t cmd,
		 uint64_t len)
{
	uint64_t req[SIVSHM_MBOX_WORDS] = { cmd, len, s->cc.ch };

	sivshm_mbox_post_request(s->ops->mbox(s, j), seq, req);
	/* A reducer that is away re-reads its mailbox when it comes back. */
	if (s->irq)
		s->ops->ring(s, j, SIVSHM_MBOX_SIZE + len);
}

static int slot_send(struct cc_job *cc, uint32_t j, uint64_t seq,
		     const uint8_t *src, uint64_t len)
{
	struct cc_slots *s = slots_of(cc);

	memcpy((uint8_t *)s->ops->mbox(s, j) + SIVSHM_MBOX_SIZE, src, len);
	post(s, j, seq, CC_COUNT, len);
	return 0;
}

static int slot_recv(struct cc_job *cc, uint32_t j, uint64_t seq,
		     uint64_t *count)
{
	struct cc_slots *s = slots_of(cc);
	uint64_t resp[SIVSHM_MBOX_WORDS];
	int err = s->ops->wait(s, j, seq, cc->timeout_ms, resp);

	if (!err)
		*count = resp[0];
	return err;
}

static void slot_stop(struct cc_job *cc, uint32_t j, uint64_t seq)
{
	post(slots_of(cc), j, seq, CC_EXIT, 0);
}

/*
 * Every reducer is in, @ready_ns after the service started: fault the slots
 * in (Xfer measures copying, not page faults) and say what the job is.
 * Returns when the job starts.
 */
uint64_t cc_slots_ready(struct cc_slots *s, uint64_t slice, uint64_t ready_ns)
{
	struct cc_job *cc = &s->cc;

	for (uint32_t j = 1; j <= cc->nreducers; j++)
		memset((uint8_t *)s->ops->mbox(s, j) + SIVSHM_MBOX_SIZE, 0,
		       cc->cap);
	printf("%s: %u reducers ready in %.1f ms; %llu bytes in %llu rounds "
	       "of %llu-byte slots, %s mode, %u threads\n", cc->prog,
	       cc->nreducers, ready_ns / 1e6, (unsigned long long)cc->total,
	       (unsigned long long)cc->rounds, (unsigned long long)slice,
	       s->irq ? "irq" : "poll", cc->nthreads);
	fflush(stdout);		/* the job has started: say so now */
	return cc_now_ns();
}

const struct cc_transport cc_slot_transport = {
	.send = slot_send,
	.recv = slot_recv,
	.stop = slot_stop,
};

static void answer(struct cc_reducer *r, uint64_t seq, const uint64_t *resp)
{
	sivshm_mbox_post_response(r->mb, seq, resp);
	if (r->irq)
		r->ops->ring(r);
}

/*
 * Answer requests until the exit request: 0, or a negative errno.  A
 * restarted reducer first answers any request still pending in its
 * mailbox: the slot outlives it, so the data is still there.
 */
int cc_serve(struct cc_reducer *r)
{
	uint64_t req[SIVSHM_MBOX_WORDS], resp[SIVSHM_MBOX_WORDS] = { 0 };
	uint8_t *data = (uint8_t *)r->mb + SIVSHM_MBOX_SIZE;
	uint64_t seq;
	int err;

	seq = __atomic_load_n(&r->mb->resp_seq, __ATOMIC_ACQUIRE) + 1;
	if (seq > 1)
		printf("reducer %u: resuming at request %llu\n", r->id,
		       (unsigned long long)seq);
	for (;; seq++) {
		err = r->ops->wait(r, seq, req);
		if (err == -ERESTART) {
			data = (uint8_t *)r->mb + SIVSHM_MBOX_SIZE;
			seq = __atomic_load_n(&r->mb->resp_seq,
					      __ATOMIC_ACQUIRE);
			printf("reducer %u: serving again at request %llu\n",
			       r->id, (unsigned long long)seq + 1);
			fflush(stdout);
			continue;
		}
		if (err) {
			fprintf(stderr, "reducer %u: no request %llu: %s\n",
				r->id, (unsigned long long)seq, strerror(-err));
			return err;
		}
		if (req[0] == CC_EXIT) {
			answer(r, seq, resp);
			return 0;
		}
		/* The mapper is trusted, but a length past the slot is a bug. */
		if (req[0] != CC_COUNT || req[1] > r->cap || req[2] > 255) {
			fprintf(stderr, "reducer %u: bad request %llu\n", r->id,
				(unsigned long long)seq);
			return -EPROTO;
		}
		resp[0] = cc_count(data, req[1], req[2]);
		answer(r, seq, resp);
	}
}
