/* SPDX-License-Identifier: MIT */
/*
 * The remote-reducer backend's state (remote.c), behind a handle's
 * sh->rdma.  Internal: the tests that play a hostile remote reducer reach
 * the connection through it.
 */
#ifndef SIVSHM_REMOTE_H
#define SIVSHM_REMOTE_H

#include "rdma/conn.h"

/* The most bytes one READ or WRITE moves; larger ranges are cut. */
#define SRD_CHUNK		(1ull << 30)

/* A NOTIFY whose bytes are being read: rung once its reads complete. */
struct pending_ring {
	uint32_t vector;
	uint32_t reads;			/* READs not yet completed */
	uint32_t idx;			/* its receive buffer, reposted then */
};

struct srd_reducer {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *cm;
	struct srd_conn conn;
	struct ibv_mr *slot_mr;
	uint64_t remote_addr;
	uint32_t rkey;
	/* FIFO of NOTIFYs in arrival order; reads complete in order too. */
	struct pending_ring ring[SRD_RECV_DEPTH];
	unsigned int head, count;
	pthread_t thread;
	int stop;			/* eventfd; -1 when no thread runs */
	int connected;
};

#endif
