/* SPDX-License-Identifier: MIT */
/*
 * The mapper's side of the handshake: listens, welcomes reducers, refuses
 * everything else, and tracks who is connected.  It owns no thread and no
 * event loop: the owner polls the fds proto_server_pollfds() lists and hands
 * the results to proto_server_dispatch().  libsivshm runs that in a thread;
 * the QEMU device in its main loop.
 */
#ifndef SIVSHM_SERVER_H
#define SIVSHM_SERVER_H

#include <poll.h>
#include <stdarg.h>
#include <stdint.h>

#include "cred.h"
#include "geometry.h"
#include "proto.h"

/*
 * Handshakes in progress at once; more connections are refused as busy.
 * Room for a whole service joining at once, and a bound for a flood.
 */
#define PROTO_MAX_PENDING	64
/* A connection that sends no HELLO in this time is dropped. */
#define PROTO_HELLO_TIMEOUT_MS	2000
/* Enough pollfds for the listener, the pending and the connected peers. */
#define PROTO_MAX_POLLFDS	(1 + PROTO_MAX_PENDING + SIVSHM_MAX_REDUCERS)
/* The listening socket's backlog: every reducer and a full pending set. */
#define PROTO_LISTEN_BACKLOG	(SIVSHM_MAX_REDUCERS + PROTO_MAX_PENDING)
/* Connections accepted in one round, so a flood cannot starve the rest. */
#define PROTO_ACCEPTS_PER_ROUND	(PROTO_MAX_PENDING + 1)

struct proto_peer {
	int conn;			/* -1 while the reducer is away */
	int in_fd[SIVSHM_MAX_VECTORS];	/* the peer rings these; kept across reconnects */
	int out_fd[SIVSHM_MAX_VECTORS];	/* the peer's own; we ring them */
};

struct proto_pending {
	int conn;			/* -1 if the entry is free */
	int64_t deadline_ms;
};

struct proto_server {
	struct sivshm_geometry geo;
	uint32_t nvectors;
	int listen_fd;
	int hello_timeout_ms;
	const int *slot_fd;		/* nreducers + 1 fds, owned by the caller */
	struct proto_peer peer[SIVSHM_MAX_REDUCERS + 1];	/* [0] unused */
	/* Who may take reducer id j (SO_PEERCRED); PROTO_CRED_ANY by default. */
	struct proto_cred allow[SIVSHM_MAX_REDUCERS + 1];
	struct proto_pending pending[PROTO_MAX_PENDING];
	/* Bit j: reducer j joins over RDMA (libsivshm/rdma/), never here. */
	uint64_t remote;
	/*
	 * Called on a reducer's arrival (connected = 1) and departure.  On
	 * departure the reducer's eventfds (out_fd) are still open, and are
	 * closed when this returns.
	 */
	void (*peer_changed)(void *opaque, uint32_t id, int connected);
	/*
	 * Persistent regions only (else NULL): a reducer rejoining a restarted
	 * mapper hands back its slot (PROTO_F_SLOT), the newer copy of it.
	 * Called with that fd, checked with proto_slot_check(), for a slot
	 * given to nobody since proto_server_init(): returns 0 once slot_fd[id]
	 * is @fd (the callee's from then on), or -errno (the server closes it
	 * and the reducer gets our own slot).
	 */
	int (*adopt_slot)(void *opaque, uint32_t id, int fd);
	uint64_t given;			/* bit j: slot j went to a reducer */
	/* Every refusal and drop is logged with its reason. */
	void (*log)(void *opaque, const char *fmt, va_list ap)
		__attribute__((format(printf, 2, 0)));
	void *opaque;
};

/*
 * Set up @srv for @geo with @nvectors vectors per peer; @slot_fd[j] is the
 * fd handed to reducer j.  Creates the mapper's eventfds.  Returns 0 or -errno.
 */
int proto_server_init(struct proto_server *srv,
		      const struct sivshm_geometry *geo, uint32_t nvectors,
		      const int *slot_fd);

/*
 * Listen on the unix socket @path.  A stale socket file nobody listens on is
 * replaced; a live one is -EADDRINUSE.
 */
int proto_server_listen(struct proto_server *srv, const char *path);

/* Fill @pfd (PROTO_MAX_POLLFDS entries); returns how many are used. */
unsigned int proto_server_pollfds(struct proto_server *srv,
				  struct pollfd *pfd);

/* Milliseconds until the next handshake deadline, or -1 if none. */
int proto_server_timeout(const struct proto_server *srv);

/* Act on the revents of @pfd (as filled by proto_server_pollfds). */
void proto_server_dispatch(struct proto_server *srv, const struct pollfd *pfd,
			   unsigned int n);

/* Add one to a peer's eventfd without blocking on a full counter. */
int proto_ring(int fd);

/* Bitmap of connected reducers (bit j for reducer j). */
uint64_t proto_server_peers(const struct proto_server *srv);

/* Close every connection and eventfd (not the slot fds, nor the socket file). */
void proto_server_fini(struct proto_server *srv);


#endif
