// SPDX-License-Identifier: MIT
/*
 * The polling-mode mailbox under two threads: a mapper thread writes a
 * payload into the slot and posts a request; a reducer thread waits for it,
 * checks the whole payload (it must be visible once the sequence is), and
 * answers with its sum.  Any reordering shows as a wrong payload or sum.
 */
#include <pthread.h>

#include "check.h"
#include "sivshm.h"

#define ROUNDS	200000
#define WORDS	64

static struct {
	struct sivshm_mbox mb;
	uint64_t data[WORDS];
} slot __attribute__((aligned(64)));

static void *reducer(void *arg)
{
	uint64_t req[SIVSHM_MBOX_WORDS], resp[SIVSHM_MBOX_WORDS] = { 0 };

	for (uint64_t seq = 1; seq <= ROUNDS; seq++) {
		uint64_t sum = 0;

		T_EQ(sivshm_mbox_wait_request(&slot.mb, seq, 10000, req), 0);
		T_EQ(req[0], seq * 3);
		for (int i = 0; i < WORDS; i++) {
			T_EQ(slot.data[i], seq + i);
			sum += slot.data[i];
		}
		resp[0] = sum;
		sivshm_mbox_post_response(&slot.mb, seq, resp);
	}
	return NULL;
}

int main(void)
{
	uint64_t req[SIVSHM_MBOX_WORDS] = { 0 }, resp[SIVSHM_MBOX_WORDS];
	pthread_t t;

	T_EQ(sizeof(struct sivshm_mbox), SIVSHM_MBOX_SIZE);
	T_EQ(sivshm_mbox_wait_request(&slot.mb, 1, 10, req), -ETIMEDOUT);
	T_EQ(pthread_create(&t, NULL, reducer, NULL), 0);
	for (uint64_t seq = 1; seq <= ROUNDS; seq++) {
		uint64_t sum = 0;

		for (int i = 0; i < WORDS; i++) {
			slot.data[i] = seq + i;
			sum += seq + i;
		}
		req[0] = seq * 3;
		sivshm_mbox_post_request(&slot.mb, seq, req);
		T_EQ(sivshm_mbox_wait_response(&slot.mb, seq, 10000, resp), 0);
		T_EQ(resp[0], sum);
	}
	T_EQ(pthread_join(t, NULL), 0);
	printf("mailbox: %d round trips under two threads, all consistent\n",
	       ROUNDS);
	return 0;
}
