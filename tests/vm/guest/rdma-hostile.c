// SPDX-License-Identifier: GPL-2.0
/*
 * A hostile remote reducer: joins a mapper over RDMA as two reducers it
 * holds the keys of, A and B, honestly, then through A's queue pair
 * names what A may not reach and checks that the NIC refuses it:
 *
 *   rdma-hostile ADDRESS KEYFILE A B
 *
 * 1. A reads B's slot with B's own address and rkey (rkeys are not
 *    secret; A's protection domain is not B's): a remote access error.
 * 2. B still works: it notifies the mapper and is still connected.
 * 3. B reads one page past the end of its own slot, with its rkey: a
 *    remote access error.
 * Each refusal must end that connection only.  Prints one line per step.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "charcount.h"
#include "check.h"
#include "handle.h"
#include "remote.h"
#include "sivshm.h"

/* How long the NIC may take to refuse (TCG, Soft-RoCE): retries and all. */
#define REFUSAL_MS	20000

static uint8_t keys[SIVSHM_MAX_REDUCERS + 1][SIVSHM_KEY_BYTES];

static struct sivshm *join(const char *address, uint32_t id)
{
	struct sivshm *sh;
	int err = sivshm_reducer_connect(&sh, address, id, CC_NVECTORS,
					 keys[id], 0, 20000);

	T_ASSERT(!err, "joining as %u: %s", id, strerror(-err));
	return sh;
}

/* Wait for @sh's connection to fail; its error. */
static int wait_error(struct sivshm *sh)
{
	struct srd_conn *c = &sh->rdma->conn;
	int err = 0;

	for (int ms = 0; ms < REFUSAL_MS && !err; ms += 10) {
		pthread_mutex_lock(&c->lock);
		err = c->error;
		pthread_mutex_unlock(&c->lock);
		usleep(10000);
	}
	return err;
}

/* A READ through @sh's queue pair of @remote with @rkey. */
static void bad_read(struct sivshm *sh, uint64_t remote, uint32_t rkey)
{
	struct srd_reducer *r = sh->rdma;
	int err = srd_conn_rdma(&r->conn, IBV_WR_RDMA_READ, sh->slot,
				r->conn.slot_mr->lkey, remote, rkey, 4096, 0);

	T_ASSERT(!err, "posting the READ: %s", strerror(-err));
	err = wait_error(sh);
	T_ASSERT(err == -EACCES, "the NIC did not refuse: %s",
		 err ? strerror(-err) : "no error");
}

int main(int argc, char **argv)
{
	struct sivshm *a, *b;
	uint64_t ids, peers;
	uint32_t ida, idb;
	int err;

	if (argc != 5) {
		fprintf(stderr, "usage: rdma-hostile ADDRESS KEYFILE A B\n");
		return 2;
	}
	ida = strtoul(argv[3], NULL, 0);
	idb = strtoul(argv[4], NULL, 0);
	T_ASSERT(ida && idb && ida != idb && ida <= SIVSHM_MAX_REDUCERS &&
		 idb <= SIVSHM_MAX_REDUCERS, "bad ids");
	T_ASSERT(!cc_read_keys(argv[2], &ids, keys));
	T_ASSERT((ids & 1ULL << ida) && (ids & 1ULL << idb), "keys missing");
	a = join(argv[1], ida);
	b = join(argv[1], idb);
	printf("hostile: joined as %u and %u\n", ida, idb);

	bad_read(a, b->rdma->remote_addr, b->rdma->rkey);
	printf("hostile: reading %u's slot through %u: remote access error\n",
	       idb, ida);

	err = sivshm_notify_range(b, 0, 0, 0, 64);
	T_ASSERT(!err, "%u's notify after %u's refusal: %s", idb, ida,
		 strerror(-err));
	T_ASSERT(!sivshm_peers(b, &peers) && peers == 1,
		 "%u lost the mapper", idb);
	printf("hostile: %u still served\n", idb);

	bad_read(b, b->rdma->remote_addr + b->geo.slice_size, b->rdma->rkey);
	printf("hostile: reading past %u's slot: remote access error\n", idb);
	sivshm_close(a);
	sivshm_close(b);
	return 0;
}
