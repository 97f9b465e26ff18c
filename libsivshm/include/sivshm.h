/* SPDX-License-Identifier: MIT */
/*
 * libsivshm: secure sliced inter-VM shared memory.
 *
 * One mapper (id 0) and reducers 1..N share a region cut into N + 1 equal
 * slots.  The mapper reaches every slot; reducer j reaches slot j only.
 * Peers interrupt each other through eventfds exchanged directly between
 * them at connection time (no distributor).  Every function returns 0 (or a
 * non-negative value) on success and a negative errno on failure.
 */
#ifndef LIBSIVSHM_H
#define LIBSIVSHM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIVSHM_MAPPER		0
/* sivshm_wait()'s peer when the backend cannot tell (a guest mapper) */
#define SIVSHM_PEER_ANY		UINT32_MAX

/* Reducer ids are 1..63: the peer bitmap is 64 bits, mapper included. */
#define SIVSHM_MAX_REDUCERS	63
#define SIVSHM_MAX_VECTORS	16
/* The largest region: 1 TiB. */
#define SIVSHM_MAX_REGION	(1ULL << 40)

/*
 * Flags: SIVSHM_MLOCK for both roles, SIVSHM_PERSIST and SIVSHM_CHECK_CREDS
 * for the mapper only.
 */
#define SIVSHM_MLOCK		(1U << 0)	/* lock the memory (mlock) */
#define SIVSHM_PERSIST		(1U << 1)	/* unlink=off: keep the slot files */
#define SIVSHM_CHECK_CREDS	(1U << 2)	/* opts.creds say who may join */

/* A uid and a gid; SIVSHM_ANY_ID in a field allows any value. */
#define SIVSHM_ANY_ID		UINT32_MAX
struct sivshm_cred {
	uint32_t uid;
	uint32_t gid;
};

struct sivshm;

struct sivshm_mapper_opts {
	const char *socket_path;	/* where reducers connect */
	const char *name;		/* the shared-memory id */
	uint64_t size;			/* total bytes, cut into nreducers + 1 slots */
	uint32_t nreducers;		/* 1..63 */
	uint32_t nvectors;		/* interrupt vectors per peer, 1..16 */
	uint32_t flags;
	const char *dir;		/* tmpfs/hugetlbfs directory; NULL: memfds */
	/*
	 * Read only with SIVSHM_CHECK_CREDS: creds[j], for j = 1..nreducers
	 * (creds[0] is not read), is who may take reducer id j, as the
	 * connection's SO_PEERCRED says, checked before any descriptor is sent.
	 */
	const struct sivshm_cred *creds;
};

struct sivshm_info {
	uint32_t id;			/* 0 for the mapper */
	uint32_t nreducers;
	uint32_t nvectors;
	uint32_t flags;
	uint64_t region_size;		/* (nreducers + 1) * slice_size */
	uint64_t slice_size;
};

int sivshm_mapper_open(struct sivshm **out,
		       const struct sivshm_mapper_opts *opts);
int sivshm_reducer_open(struct sivshm **out, const char *socket_path,
			uint32_t id, uint32_t nvectors, uint32_t flags,
			int timeout_ms);
/*
 * sivshm_reducer_open(), joining only a mapper whose credentials @mapper
 * allows (NULL: any), checked before the HELLO carries our eventfds.
 */
int sivshm_reducer_open_checked(struct sivshm **out, const char *socket_path,
				uint32_t id, uint32_t nvectors, uint32_t flags,
				int timeout_ms,
				const struct sivshm_cred *mapper);
/*
 * Reducers on other hosts, over RDMA (rdma-core's verbs and RDMA CM; any
 * RDMA device, Soft-RoCE included).  A remote reducer proves it holds the
 * key of its id (libsodium's crypto_auth, both ways) before the mapper
 * registers anything for it; it then reaches its own slot only, one
 * memory region in a protection domain of its own.
 */
#define SIVSHM_KEY_BYTES	32

struct sivshm_remote_opts {
	const char *listen;		/* "HOST:PORT", HOST an RDMA device's */
	uint64_t ids;			/* bit j: reducer j joins remotely only */
	/* keys[j] for every j in ids: that id's key (keys[0] not read). */
	const uint8_t *const *keys;
};

/*
 * A mapper serves the reducers of @opts->ids over RDMA from now on, and
 * refuses them locally (PROTO_E_REMOTE).  -EBUSY if one is connected
 * locally, -EALREADY if the mapper serves remotely already.
 */
int sivshm_mapper_serve_remote(struct sivshm *sh,
			       const struct sivshm_remote_opts *opts);
/*
 * Join the mapper at @address ("HOST:PORT") over RDMA as reducer @id with
 * @key.  @timeout_ms bounds the whole handshake.  The slot is local
 * memory kept in step by the library: see sivshm_notify_range().
 */
int sivshm_reducer_connect(struct sivshm **out, const char *address,
			   uint32_t id, uint32_t nvectors,
			   const uint8_t key[SIVSHM_KEY_BYTES], uint32_t flags,
			   int timeout_ms);
/*
 * sivshm_reducer_connect(), taking a slot of at most @max_slot bytes (0:
 * any): a mapper offering more is refused with -EFBIG before anything is
 * allocated for it.
 */
int sivshm_reducer_connect_checked(struct sivshm **out, const char *address,
				   uint32_t id, uint32_t nvectors,
				   const uint8_t key[SIVSHM_KEY_BYTES],
				   uint32_t flags, int timeout_ms,
				   uint64_t max_slot);
/* 64 hex digits into a key; 0 or -EINVAL. */
int sivshm_key_parse(const char *hex, uint8_t key[SIVSHM_KEY_BYTES]);

/*
 * Inside a VM: open the sivshm device @path (/dev/sivshmN), mapper or
 * reducer as the device says.  @flags: SIVSHM_MLOCK.
 */
int sivshm_device_open(struct sivshm **out, const char *path,
		       uint32_t flags);
void sivshm_close(struct sivshm *sh);

int sivshm_get_info(struct sivshm *sh, struct sivshm_info *info);
/* Slot @id's memory, or NULL where this peer cannot reach it. */
void *sivshm_slot(struct sivshm *sh, uint32_t id);
/* Bitmap of connected peers: reducers for the mapper, bit 0 for a reducer. */
int sivshm_peers(struct sivshm *sh, uint64_t *bitmap);
/* Wait until every peer of @mask is connected. */
int sivshm_wait_peers(struct sivshm *sh, uint64_t mask, int timeout_ms);

/* Interrupt @vector of @peer (the mapper names a reducer; a reducer, 0). */
int sivshm_notify(struct sivshm *sh, uint32_t peer, uint32_t vector);
/*
 * sivshm_notify(), saying that only bytes [@offset, @offset + @length) of
 * the slot changed since the last notify: a remote peer's copy is brought
 * up to date for those bytes alone before it hears the interrupt (the
 * plain call moves the whole slot).  Locally the slot is shared and the
 * range changes nothing.
 */
int sivshm_notify_range(struct sivshm *sh, uint32_t peer, uint32_t vector,
			uint64_t offset, uint64_t length);
/*
 * Wait at most @timeout_ms (-1: forever) for an interrupt on @vector and
 * consume it; *@peer (may be NULL) says who rang.  -ETIMEDOUT if none came.
 */
int sivshm_wait(struct sivshm *sh, uint32_t vector, int timeout_ms,
		uint32_t *peer);
/* An fd, readable when @peer rings @vector, for epoll; read 8 bytes to ack. */
int sivshm_eventfd(struct sivshm *sh, uint32_t peer, uint32_t vector);

typedef void (*sivshm_callback)(struct sivshm *sh, uint32_t peer,
				uint32_t vector, void *arg);
/*
 * Call @cb from a library thread for each interrupt (NULL stops it).  While
 * a callback is set, sivshm_wait() is -EBUSY.  The callback must not call
 * sivshm_set_callback() (-EDEADLK) or sivshm_close() on its handle.
 */
int sivshm_set_callback(struct sivshm *sh, sivshm_callback cb, void *arg);

/*
 * Polling mode.  Each reducer slot starts with a mailbox: a request line the
 * mapper writes and a response line the reducer writes, each published by a
 * sequence number stored with release semantics, so whatever was written to
 * the slot before the post is visible once the wait sees the sequence.
 */
#define SIVSHM_MBOX_WORDS	7
#define SIVSHM_MBOX_SIZE	128	/* data may start at this offset */

struct sivshm_mbox {
	uint64_t req_seq;
	uint64_t req[SIVSHM_MBOX_WORDS];
	uint64_t resp_seq;
	uint64_t resp[SIVSHM_MBOX_WORDS];
};

void sivshm_mbox_post_request(struct sivshm_mbox *mb, uint64_t seq,
			      const uint64_t req[SIVSHM_MBOX_WORDS]);
int sivshm_mbox_wait_request(struct sivshm_mbox *mb, uint64_t seq,
			     int timeout_ms, uint64_t req[SIVSHM_MBOX_WORDS]);
void sivshm_mbox_post_response(struct sivshm_mbox *mb, uint64_t seq,
			       const uint64_t resp[SIVSHM_MBOX_WORDS]);
int sivshm_mbox_wait_response(struct sivshm_mbox *mb, uint64_t seq,
			      int timeout_ms,
			      uint64_t resp[SIVSHM_MBOX_WORDS]);

/*
 * Diagnostics (refusals, departures, mlock failures) go to stderr, or to
 * @fn; NULL restores stderr.
 */
typedef void (*sivshm_logger)(const char *msg);
void sivshm_set_logger(sivshm_logger fn);

#ifdef __cplusplus
}
#endif

#endif
