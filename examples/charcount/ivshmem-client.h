/* SPDX-License-Identifier: MIT */
/*
 * The client side of QEMU's ivshmem-server protocol, for charcount's
 * ivshmem baseline, and the layout that baseline puts in the region.
 *
 * The server only ever talks: each message is a little-endian int64, with
 * at most one file descriptor (SCM_RIGHTS).  On connect it sends the
 * protocol version (0), our peer id, -1 with the shared-memory fd, then for
 * each other peer its id once per vector with the eventfd that rings it,
 * then our own id once per vector with the eventfds we are rung on.  Later,
 * a peer id with fds announces a join, a peer id alone a leave.
 */
#ifndef CHARCOUNT_IVSHMEM_CLIENT_H
#define CHARCOUNT_IVSHMEM_CLIENT_H

#include <stdint.h>

#define IVC_PROTOCOL_VERSION	0
#define IVC_MAX_ID		65535	/* the doorbell has 16 bits for ids */
#define IVC_MAX_VECTORS		16
#define IVC_MAX_PEERS		128

struct ivc_peer {
	int64_t id;
	unsigned int nfds;
	int fds[IVC_MAX_VECTORS];	/* write 8 bytes to ring the peer */
};

struct ivc {
	int sock;
	int64_t id;			/* ours, from the server */
	int shm_fd;
	uint64_t shm_size;
	unsigned int nvectors;		/* what we use; extras are closed */
	unsigned int nown;
	int own[IVC_MAX_VECTORS];	/* readable when someone rings us */
	unsigned int npeers;
	struct ivc_peer peers[IVC_MAX_PEERS];
};

/*
 * Connect to the server at @path (retrying until @timeout_ms while it is not
 * there yet) and read the initial messages up to our own vectors.
 */
int ivc_connect(struct ivc *c, const char *path, unsigned int nvectors,
		int timeout_ms);
/*
 * Wait at most @timeout_ms for one message from the server and apply it
 * (a join, a leave, a further vector of ours).  Returns 1 if one was
 * handled, 0 on timeout, a negative errno if the server went or broke the
 * protocol.
 */
int ivc_handle(struct ivc *c, int timeout_ms);
/* The fd that rings @vector of peer @id, or -ENOENT. */
int ivc_peer_fd(const struct ivc *c, int64_t id, unsigned int vector);
/* Ring an eventfd; consume what rang ours. */
int ivc_ring(int fd);
int ivc_ack(int fd);
void ivc_close(struct ivc *c);

/*
 * charcount over ivshmem.  The region is cut into N + 1 slots exactly like
 * sivshm's (slot j at j * slice, slice = size / (N + 1) rounded down to
 * 4096); slots 1..N start with a struct sivshm_mbox and carry the reducers'
 * data, and every process maps all of it.
 *
 * Peer ids come from ivshmem-server, so the processes tell each other which
 * id goes with which slot through this directory at the start of slot 0:
 * the mapper zeroes the mailboxes and the directory, fills in its own peer
 * id and the geometry, and publishes @magic last (release).  Reducer j
 * waits for @magic (acquire), checks the geometry against the region, and
 * stores its own peer id + 1 in @reducer_peer[j] (release; 0 means not yet).
 * Nothing stops a reducer from writing anywhere else, other slots and this
 * directory included: that is what this baseline measures against.
 */
#define IVC_DIR_MAGIC		0x5649564348444952ULL	/* "RIDHCVIV" */
#define IVC_DIR_SLOTS		64

struct ivc_directory {
	uint64_t magic;
	uint64_t mapper_peer;
	uint64_t nreducers;
	uint64_t slice_size;
	uint64_t reducer_peer[IVC_DIR_SLOTS];
};

#endif
