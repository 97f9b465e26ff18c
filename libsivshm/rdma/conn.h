/* SPDX-License-Identifier: MIT */
/*
 * One reliable connection of the RDMA transport, the same on both ends:
 * its own protection domain, completion channel and queue, a queue pair
 * made through RDMA CM, and receive buffers for SRD_NOTIFY messages.
 * Posting is thread-safe and bounded; completions are reaped by whoever
 * polls the channel (the owner's thread) through srd_conn_poll().
 */
#ifndef SIVSHM_RDMA_CONN_H
#define SIVSHM_RDMA_CONN_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "wire.h"

/* Receives posted per connection: NOTIFYs that may be in flight at once. */
#define SRD_RECV_DEPTH		32
/* Work requests outstanding on the send queue. */
#define SRD_SEND_DEPTH		64
/*
 * Transport retries.  The ack timeout is 4.096 us * 2^SRD_ACK_TIMEOUT
 * (0.54 s); a peer silent for SRD_RETRY_COUNT + 1 of them is gone (rxe
 * takes 7 as "forever", so less).  A receiver not ready (RNR) is alive
 * and busy reading earlier bytes: wait for it (7: forever); a stuck one
 * stalls only posts to it, each bounded by SRD_POST_TIMEOUT_MS.
 */
#define SRD_ACK_TIMEOUT		17
#define SRD_RETRY_COUNT		6
#define SRD_RNR_RETRY		7
/* How long a post waits for room on the send queue or a send to complete. */
#define SRD_POST_TIMEOUT_MS	10000

/* What a work request was, in the top byte of its wr_id. */
enum srd_wr {
	SRD_WR_RECV = 1,	/* low bits: the receive buffer's index */
	SRD_WR_SEND = 2,
	SRD_WR_READ = 3,	/* low bits: the owner's cookie */
	SRD_WR_WRITE = 4,
};
#define SRD_WR_ID(kind, low)	((uint64_t)(kind) << 56 | (low))
#define SRD_WR_KIND(wr_id)	((uint32_t)((wr_id) >> 56))
#define SRD_WR_LOW(wr_id)	((wr_id) & ((1ull << 56) - 1))

struct srd_conn {
	struct rdma_cm_id *cm;		/* not owned */
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_mr *msg_mr;
	uint8_t *msgs;			/* SRD_RECV_DEPTH buffers */
	struct ibv_mr *slot_mr;		/* the slot, once srd_conn_reg_slot() */

	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int sq_used;		/* work requests not yet completed */
	uint64_t sends_posted;
	uint64_t sends_done;
	int error;			/* first failure, -errno; sticky */
};

/*
 * Create the verbs resources on @cm's device and post the receives.
 * Registers only the receive buffers (local access).  0 or -errno; on
 * failure nothing is left.
 */
int srd_conn_create(struct srd_conn *c, struct rdma_cm_id *cm);
/*
 * Destroy what srd_conn_create() and srd_conn_reg_slot() made (the QP
 * too), every region before the protection domain; @cm is the caller's.
 */
void srd_conn_destroy(struct srd_conn *c);
/*
 * Register the slot, @len bytes at @addr, with @access in the
 * connection's protection domain: c->slot_mr.  0 or -errno.
 */
int srd_conn_reg_slot(struct srd_conn *c, void *addr, size_t len,
		      int access);

/* Mark the connection failed (the first error wins) and wake waiters. */
void srd_conn_fail(struct srd_conn *c, int err);

/*
 * Post a message (inline: @m need not outlive the call), waiting up to
 * @timeout_ms for room.  Returns the send's sequence number (> 0) for
 * srd_conn_wait_send(), or -errno.
 */
int64_t srd_conn_send(struct srd_conn *c, const struct srd_msg *m,
		      int timeout_ms);
/* A PING, if the send queue has room now (the owner's thread calls it). */
void srd_conn_ping(struct srd_conn *c);
/* Wait until send @seq has completed; 0, or the connection's error. */
int srd_conn_wait_send(struct srd_conn *c, int64_t seq);
/* Post an RDMA READ or WRITE of @len bytes (one SGE). */
int srd_conn_rdma(struct srd_conn *c, enum ibv_wr_opcode op, void *local,
		  uint32_t lkey, uint64_t remote, uint32_t rkey, uint64_t len,
		  uint64_t cookie);
/* Give receive buffer @idx back to the queue pair. */
int srd_conn_recv(struct srd_conn *c, uint32_t idx);
/* Receive buffer @idx's bytes. */
static inline const uint8_t *srd_conn_msg(const struct srd_conn *c,
					  uint32_t idx)
{
	return c->msgs + (size_t)idx * SRD_MSG_SIZE;
}

/*
 * Take the channel's event and reap every completion, calling @cb for
 * each receive and READ completion that succeeded.  A failed completion
 * fails the connection (after the first, the queue pair's flushes).
 * Returns 0, or the connection's error.
 */
int srd_conn_poll(struct srd_conn *c,
		  void (*cb)(void *arg, const struct ibv_wc *wc), void *arg);

/* The queue pair's attributes both ends use. */
void srd_conn_param(struct rdma_conn_param *p, const void *priv,
		    uint8_t priv_len);

/*
 * "HOST:PORT" or "[IPV6]:PORT" into @sa (getaddrinfo; a name resolves
 * too).  @passive: for a listener, where an empty HOST means any.
 */
int srd_addr_parse(const char *text, int passive,
		   struct sockaddr_storage *sa);

#endif
