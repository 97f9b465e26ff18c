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

/*
 * A NOTIFY whose bytes are being read: rung once its reads complete.  The
 * first entry is the whole slot's, read at connection, which rings
 * nothing (SRD_NO_VECTOR) and sets synced.
 */
#define SRD_NO_VECTOR		UINT32_MAX
#define SRD_FIFO		(SRD_RECV_DEPTH + 1)
struct pending_ring {
	uint32_t vector;
	uint32_t reads;			/* READs not yet completed */
	uint32_t idx;			/* its receive buffer, reposted then */
	uint64_t line[SRD_LINE_WORDS];	/* the mapper's request line */
};

struct srd_reducer {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *cm;
	struct srd_conn conn;		/* conn.slot_mr: our slot, local only */
	uint64_t remote_addr;
	uint32_t rkey;
	/* FIFO of NOTIFYs in arrival order; reads complete in order too. */
	struct pending_ring ring[SRD_FIFO];
	unsigned int head, count;
	int synced;			/* the slot was read at connection */
	pthread_t thread;
	int stop;			/* eventfd; -1 when no thread runs */
	int connected;
};

#endif
