/* SPDX-License-Identifier: MIT */
/*
 * The SIVSHM handshake protocol (docs/protocol.md): fixed-layout,
 * little-endian messages over a unix SOCK_SEQPACKET socket, with eventfds
 * and slot fds passed in SCM_RIGHTS.  This is its wire codec; sock.h sends
 * and receives, cred.h and fds.h check who and what came.  Plain C with no
 * dependency QEMU lacks: the QEMU device and libsivshm compile this same
 * file.
 *
 * Every decoder check lives here; a message that passes proto_decode() is
 * well-formed, and only its meaning (is this id free?) is left to the caller.
 */
#ifndef SIVSHM_PROTO_H
#define SIVSHM_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "geometry.h"

#define PROTO_MAGIC		0x4d535653u	/* "SVSM" on the wire */
#define PROTO_VERSION		1

enum proto_type {
	PROTO_HELLO = 1,	/* reducer -> mapper, with its eventfds */
	PROTO_WELCOME = 2,	/* mapper -> reducer, slot fd + eventfds */
	PROTO_REFUSE = 3,	/* mapper -> peer, then the mapper hangs up */
};

#define PROTO_HDR_SIZE		16
#define PROTO_HELLO_SIZE	32
#define PROTO_WELCOME_SIZE	56
#define PROTO_REFUSE_SIZE	88
/*
 * HELLO features.  PROTO_F_SLOT: a reducer rejoining a restarted mapper
 * hands back the slot it holds, its fd after the eventfds; a persistent
 * mapper that has not given that slot to anyone yet adopts it.
 */
#define PROTO_F_SLOT		(1ull << 0)
#define PROTO_FEATURES		PROTO_F_SLOT
/* Receive buffers are larger than any message, so oversize is detected. */
#define PROTO_BUF_SIZE		256
#define PROTO_MAX_FDS		(1 + SIVSHM_MAX_VECTORS)
#define PROTO_REASON_LEN	64

/* Why the mapper refused a peer: the code in a REFUSE message. */
enum proto_refusal {
	PROTO_E_VERSION = 1,	/* unsupported protocol version */
	PROTO_E_ID_RANGE = 2,	/* id 0 or above the reducer count */
	PROTO_E_ID_BUSY = 3,	/* a reducer with this id is connected */
	PROTO_E_MALFORMED = 4,	/* not a well-formed HELLO */
	PROTO_E_FDS = 5,	/* wrong number or kind of fds */
	PROTO_E_VECTORS = 6,	/* vector count differs from the mapper's */
	PROTO_E_BUSY = 7,	/* too many handshakes in progress */
	PROTO_E_CRED = 8,	/* the peer's credentials may not take this id */
	PROTO_E_REMOTE = 9,	/* this id joins over RDMA only */
};

/* A decoded message, in host byte order. */
struct proto_msg {
	uint16_t version;
	uint16_t type;
	union {
		struct {
			uint32_t id;
			uint32_t nvectors;
			uint64_t features;
		} hello;
		struct {
			uint32_t id;
			uint32_t nreducers;
			uint64_t region_size;
			uint64_t slice_size;
			uint64_t slot_offset;
			uint32_t nvectors;
			uint32_t flags;
		} welcome;
		struct {
			uint32_t code;		/* enum proto_refusal */
			char reason[PROTO_REASON_LEN];	/* NUL-terminated */
		} refuse;
	};
};

/* Encode @msg into @buf; returns its size, or 0 if @len is too small. */
size_t proto_encode(const struct proto_msg *msg, uint8_t *buf, size_t len);

/*
 * Decode and validate @len bytes that arrived with @nfds fds.
 * Returns 0, or a negative errno with *@why set to a static explanation:
 * -EPROTONOSUPPORT for another version (msg->version is then valid),
 * -EBADMSG for anything malformed, -EINVAL for out-of-range values,
 * -EBADF for a wrong fd count.
 */
int proto_decode(const uint8_t *buf, size_t len, unsigned int nfds,
		 struct proto_msg *msg, const char **why);

/* Number of fds a message of this type carries. */
unsigned int proto_nfds(const struct proto_msg *msg);

/* Errno a reducer reports for a refusal code. */
int proto_refusal_errno(uint32_t code);

#endif
