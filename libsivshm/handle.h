/* SPDX-License-Identifier: MIT */
/*
 * The libsivshm handle, shared by its two backends: host processes
 * (host.c, speaking the protocol itself) and guests (device.c, over the
 * sivshm driver's /dev/sivshmN), each reached only through its ops.
 */
#ifndef SIVSHM_HANDLE_H
#define SIVSHM_HANDLE_H

#include <pthread.h>

#include "region.h"
#include "server.h"
#include "sivshm.h"

struct sivshm;
struct srd_service;
struct srd_reducer;

/*
 * A backend, chosen at open.  Arguments are checked before these are
 * called: a vector is below nvectors, a slot id at most nreducers, a peer
 * one this handle may address (sivshm_peer_valid()).
 */
struct sivshm_ops {
	void (*close)(struct sivshm *sh);	/* all but the handle itself */
	void *(*slot)(struct sivshm *sh, uint32_t id);
	int (*peers)(struct sivshm *sh, uint64_t *bitmap);
	int (*wait_peers)(struct sivshm *sh, uint64_t mask, int timeout_ms);
	/* Bytes [@offset, @offset + @length) of the slot changed (checked). */
	int (*notify)(struct sivshm *sh, uint32_t peer, uint32_t vector,
		      uint64_t offset, uint64_t length);
	/* The fd that @peer rings for @vector, or -errno. */
	int (*in_fd)(struct sivshm *sh, uint32_t peer, uint32_t vector);
	/* A mapper here has one fd per vector: who rang is unknown. */
	int merged;
};

struct sivshm {
	const struct sivshm_ops *ops;
	uint32_t id;
	uint32_t flags;
	uint32_t nvectors;
	struct sivshm_geometry geo;
	pthread_mutex_t lock;
	pthread_cond_t peers_changed;

	/* mapper */
	struct sivshm_region region;
	struct proto_server srv;
	char *name;
	char *dir;
	pthread_t server_thread;
	int server_stop;		/* eventfd; -1 when no thread runs */
	struct srd_service *remote;	/* reducers over RDMA (rdma/service.c) */

	/* reducer */
	int sock;
	void *slot;
	int own_fd[SIVSHM_MAX_VECTORS];		/* the mapper rings these */
	int mapper_fd[SIVSHM_MAX_VECTORS];	/* we ring these */
	struct srd_reducer *rdma;	/* a remote reducer (remote.c) */

	/* guest backend: /dev/sivshmN (device.c); -1 for the host backend */
	int dev_fd;
	void *dev_mem;
	uint64_t dev_len;
	int peer_fd;			/* eventfd of the peer-change vector */

	/* callback mode */
	sivshm_callback cb;
	void *cb_arg;
	pthread_t cb_thread;
	int cb_stop;			/* eventfd; -1 when no thread runs */
};

/*
 * A mailbox line (its sequence, then its words) out of and into a slot,
 * for a remote peer (mbox.c): @resp picks the response line.
 */
void sivshm_mbox_line_get(struct sivshm_mbox *mb, int resp,
			  uint64_t line[1 + SIVSHM_MBOX_WORDS]);
void sivshm_mbox_line_put(struct sivshm_mbox *mb, int resp,
			  const uint64_t line[1 + SIVSHM_MBOX_WORDS]);

/*
 * A reducer's wait_peers, host or remote: it does not rejoin by itself,
 * so its mapper (bit 0 of @mask) is there (@connected) or gone.
 */
int sivshm_reducer_wait_peers(uint64_t mask, int connected);

struct sivshm *sivshm_handle_new(const struct sivshm_ops *ops, uint32_t id,
				 uint32_t nvectors, uint32_t flags);
void sivshm_handle_free(struct sivshm *sh);

#endif
