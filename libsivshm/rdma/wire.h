/* SPDX-License-Identifier: MIT */
/*
 * The RDMA transport's wire formats (docs/protocol.md, "Remote reducers"):
 * what travels in RDMA CM's private data (the challenge, the proof, the
 * welcome) and in the SEND messages on a connection (NOTIFY), and the
 * MACs that authenticate both ends (libsodium's crypto_auth, HMAC-SHA-512-256,
 * keyed per reducer id).  Fixed layouts, little-endian; every decoder check
 * lives here, so what passes a decoder is well-formed and in range.
 */
#ifndef SIVSHM_RDMA_WIRE_H
#define SIVSHM_RDMA_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "sivshm.h"

#define SRD_MAGIC		0x31445253u	/* "SRD1" on the wire */
#define SRD_NONCE_BYTES		16
#define SRD_MAC_BYTES		32

/*
 * A reducer's connect request (CM REQ private data: RoCE carries 56 bytes
 * there, all of them used).  SRD_ASK asks for a challenge and carries no
 * MAC; SRD_PROVE answers one.
 */
#define SRD_HELLO_SIZE		56
enum srd_hello_type {
	SRD_ASK = 1,
	SRD_PROVE = 2,
};

struct srd_hello {
	uint8_t type;			/* enum srd_hello_type */
	uint8_t id;			/* 1..SIVSHM_MAX_REDUCERS */
	uint8_t nvectors;		/* 1..SIVSHM_MAX_VECTORS */
	uint8_t nonce_r[SRD_NONCE_BYTES];	/* the reducer's, fresh */
	uint8_t mac[SRD_MAC_BYTES];	/* SRD_PROVE: srd_mac_reducer() */
};

/*
 * The mapper's answer to a request it does not accept (CM REJ private
 * data): a challenge, or why it refused.
 */
#define SRD_REJECT_SIZE		24
enum srd_code {
	SRD_CHALLENGE = 1,	/* nonce_m holds the challenge to answer */
	SRD_E_ID = 2,		/* the id is not one this mapper serves remotely */
	SRD_E_BUSY = 3,		/* a reducer with this id is joining */
	SRD_E_AUTH = 4,		/* wrong key, or a challenge spent or expired */
	SRD_E_VECTORS = 5,	/* vector count differs from the mapper's */
	SRD_E_MALFORMED = 6,	/* not a well-formed request */
	SRD_E_RESOURCES = 7,	/* the mapper could not set the connection up */
};

struct srd_reject {
	uint8_t code;				/* enum srd_code */
	uint8_t nonce_m[SRD_NONCE_BYTES];	/* SRD_CHALLENGE only */
};

/*
 * The mapper's welcome (CM REP private data, at most 196 bytes): the
 * geometry, where the reducer's slot is (@addr, @rkey: that slot's memory
 * region alone, in a protection domain of the reducer's own), and the
 * mapper's proof that it holds the key too.
 */
#define SRD_WELCOME_SIZE	72
struct srd_welcome {
	uint8_t nreducers;
	uint8_t nvectors;
	uint64_t slice_size;
	uint64_t region_size;
	uint64_t addr;
	uint32_t rkey;
	uint8_t mac[SRD_MAC_BYTES];	/* srd_mac_mapper() */
};

/*
 * A SEND on an established connection.  NOTIFY rings @vector and names
 * the bytes of the slot that changed past the mailbox, which the reducer
 * moves (reads, or wrote before) by RDMA; it carries the sender's own
 * mailbox line (the mapper's request line, the reducer's response line:
 * sequence, then SIVSHM_MBOX_WORDS words), which the receiver publishes
 * as sivshm_mbox_post_*() do, after the bytes.  PING (everything else 0)
 * is each side's heartbeat: a peer that cannot be reached fails the
 * connection within the transport's retries.
 */
#define SRD_LINE_WORDS		(1 + SIVSHM_MBOX_WORDS)
#define SRD_MSG_SIZE		(24 + 8 * SRD_LINE_WORDS)
enum srd_msg_type {
	SRD_NOTIFY = 1,
	SRD_PING = 2,
};
/* Each side pings every connection this often. */
#define SRD_HEARTBEAT_MS	2000

struct srd_msg {
	uint16_t type;
	uint16_t vector;
	uint64_t offset;
	uint64_t length;
	uint64_t line[SRD_LINE_WORDS];
};

void srd_hello_encode(const struct srd_hello *h, uint8_t *buf);
/* @len is what CM delivered (it may pad); *@why says what was wrong. */
int srd_hello_decode(const uint8_t *buf, size_t len, struct srd_hello *h,
		     const char **why);

void srd_reject_encode(const struct srd_reject *r, uint8_t *buf);
int srd_reject_decode(const uint8_t *buf, size_t len, struct srd_reject *r);

void srd_welcome_encode(const struct srd_welcome *w, uint8_t *buf);
/* Checks the geometry against the reducer's @id and @nvectors too. */
int srd_welcome_decode(const uint8_t *buf, size_t len, uint32_t id,
		       uint32_t nvectors, struct srd_welcome *w,
		       const char **why);

void srd_msg_encode(const struct srd_msg *m, uint8_t *buf);
/* A vector below @nvectors and a range inside a slot of @slice bytes. */
int srd_msg_decode(const uint8_t *buf, size_t len, uint32_t nvectors,
		   uint64_t slice, struct srd_msg *m, const char **why);

/* libsodium's initialisation; 0, or -EIO if it cannot run. */
int srd_crypto_init(void);
void srd_random(uint8_t *buf, size_t len);

/*
 * The reducer's proof: MAC under @key of ("sivshm-rdma-1 reducer", id,
 * nvectors, nonce_r, nonce_m).  The mapper's: MAC of ("sivshm-rdma-1
 * mapper", id, nonce_r, nonce_m, the welcome's bytes before its MAC).
 * Different labels, so neither proof can be replayed as the other.
 */
void srd_mac_reducer(const uint8_t key[SIVSHM_KEY_BYTES],
		     const struct srd_hello *h,
		     const uint8_t nonce_m[SRD_NONCE_BYTES],
		     uint8_t mac[SRD_MAC_BYTES]);
void srd_mac_mapper(const uint8_t key[SIVSHM_KEY_BYTES], uint32_t id,
		    const uint8_t nonce_r[SRD_NONCE_BYTES],
		    const uint8_t nonce_m[SRD_NONCE_BYTES],
		    const struct srd_welcome *w, uint8_t mac[SRD_MAC_BYTES]);
/*
 * The mapper's challenge to an ASK: the first SRD_NONCE_BYTES of the MAC
 * under @secret (the mapper's own, random at start) of ("sivshm-rdma-1
 * challenge", id, nonce_r, epoch).  Derived, not stored: the mapper keeps
 * no state for an ASK, so no flood of them can push out a reducer's
 * challenge; it recomputes the challenge when the proof comes.
 */
void srd_challenge(const uint8_t secret[SIVSHM_KEY_BYTES], uint32_t id,
		   const uint8_t nonce_r[SRD_NONCE_BYTES], uint64_t epoch,
		   uint8_t nonce_m[SRD_NONCE_BYTES]);
/* Constant time; 1 if the MACs match. */
int srd_mac_equal(const uint8_t a[SRD_MAC_BYTES],
		  const uint8_t b[SRD_MAC_BYTES]);

#endif
