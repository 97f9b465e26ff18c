// SPDX-License-Identifier: MIT
/*
 * The RDMA transport's wire codec and MACs.  docs/protocol.md, "Remote
 * reducers", is the specification; keep the two in step.
 */
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "le.h"
#include "wire.h"

#define BAD(text)			\
	do {				\
		*why = text;		\
		return -EBADMSG;	\
	} while (0)

static int all_zero(const uint8_t *p, size_t len)
{
	while (len--)
		if (*p++)
			return 0;
	return 1;
}

void srd_hello_encode(const struct srd_hello *h, uint8_t *buf)
{
	memset(buf, 0, SRD_HELLO_SIZE);
	put32(buf, SRD_MAGIC);
	buf[4] = h->type;
	buf[5] = h->id;
	buf[6] = h->nvectors;
	memcpy(buf + 8, h->nonce_r, SRD_NONCE_BYTES);
	if (h->type == SRD_PROVE)
		memcpy(buf + 24, h->mac, SRD_MAC_BYTES);
}

int srd_hello_decode(const uint8_t *buf, size_t len, struct srd_hello *h,
		     const char **why)
{
	memset(h, 0, sizeof(*h));
	if (!buf || len < SRD_HELLO_SIZE)
		BAD("request too short");
	if (get32(buf) != SRD_MAGIC)
		BAD("not a sivshm request (bad magic)");
	h->type = buf[4];
	h->id = buf[5];
	h->nvectors = buf[6];
	if (h->type != SRD_ASK && h->type != SRD_PROVE)
		BAD("unknown request type");
	if (buf[7])
		BAD("reserved byte set");
	if (h->id < 1 || h->id > SIVSHM_MAX_REDUCERS)
		BAD("reducer id out of range");
	if (h->nvectors < 1 || h->nvectors > SIVSHM_MAX_VECTORS)
		BAD("vector count out of range");
	if (h->type == SRD_ASK && !all_zero(buf + 24, SRD_MAC_BYTES))
		BAD("a request for a challenge carries a MAC");
	memcpy(h->nonce_r, buf + 8, SRD_NONCE_BYTES);
	memcpy(h->mac, buf + 24, SRD_MAC_BYTES);
	return 0;
}

void srd_reject_encode(const struct srd_reject *r, uint8_t *buf)
{
	memset(buf, 0, SRD_REJECT_SIZE);
	put32(buf, SRD_MAGIC);
	buf[4] = r->code;
	if (r->code == SRD_CHALLENGE)
		memcpy(buf + 8, r->nonce_m, SRD_NONCE_BYTES);
}

int srd_reject_decode(const uint8_t *buf, size_t len, struct srd_reject *r)
{
	memset(r, 0, sizeof(*r));
	if (!buf || len < SRD_REJECT_SIZE || get32(buf) != SRD_MAGIC ||
	    buf[4] < SRD_CHALLENGE || buf[4] > SRD_E_RESOURCES ||
	    !all_zero(buf + 5, 3) ||
	    (buf[4] != SRD_CHALLENGE && !all_zero(buf + 8, SRD_NONCE_BYTES)))
		return -EBADMSG;
	r->code = buf[4];
	memcpy(r->nonce_m, buf + 8, SRD_NONCE_BYTES);
	return 0;
}

/* The welcome's bytes before its MAC, which the MAC covers. */
#define WELCOME_SIGNED	40

static void welcome_fields(const struct srd_welcome *w, uint8_t *buf)
{
	memset(buf, 0, WELCOME_SIGNED);
	put32(buf, SRD_MAGIC);
	buf[4] = w->nreducers;
	buf[5] = w->nvectors;
	put64(buf + 8, w->slice_size);
	put64(buf + 16, w->region_size);
	put64(buf + 24, w->addr);
	put32(buf + 32, w->rkey);
}

void srd_welcome_encode(const struct srd_welcome *w, uint8_t *buf)
{
	memset(buf, 0, SRD_WELCOME_SIZE);
	welcome_fields(w, buf);
	memcpy(buf + WELCOME_SIGNED, w->mac, SRD_MAC_BYTES);
}

int srd_welcome_decode(const uint8_t *buf, size_t len, uint32_t id,
		       uint32_t nvectors, struct srd_welcome *w,
		       const char **why)
{
	memset(w, 0, sizeof(*w));
	if (!buf || len < SRD_WELCOME_SIZE)
		BAD("welcome too short");
	if (get32(buf) != SRD_MAGIC)
		BAD("not a sivshm welcome (bad magic)");
	w->nreducers = buf[4];
	w->nvectors = buf[5];
	w->slice_size = get64(buf + 8);
	w->region_size = get64(buf + 16);
	w->addr = get64(buf + 24);
	w->rkey = get32(buf + 32);
	memcpy(w->mac, buf + WELCOME_SIGNED, SRD_MAC_BYTES);
	if (!all_zero(buf + 6, 2) || !all_zero(buf + 36, 4))
		BAD("reserved bytes set");
	if (w->nvectors != nvectors)
		BAD("vector count differs from ours");
	if (w->nreducers < id || w->nreducers > SIVSHM_MAX_REDUCERS)
		BAD("reducer count does not include our id");
	/* A page per slot at least; slots of whole 4 KiB pages. */
	if (w->slice_size < 4096 || w->slice_size % 4096 ||
	    w->region_size > SIVSHM_MAX_REGION ||
	    w->region_size / (w->nreducers + 1u) != w->slice_size ||
	    w->region_size % (w->nreducers + 1u))
		BAD("slot geometry inconsistent");
	if (w->addr > UINT64_MAX - w->slice_size)
		BAD("slot address wraps");
	return 0;
}

void srd_msg_encode(const struct srd_msg *m, uint8_t *buf)
{
	memset(buf, 0, SRD_MSG_SIZE);
	put16(buf, m->type);
	put16(buf + 2, m->vector);
	put64(buf + 8, m->offset);
	put64(buf + 16, m->length);
	for (int i = 0; i < SRD_LINE_WORDS; i++)
		put64(buf + 24 + 8 * i, m->line[i]);
}

int srd_msg_decode(const uint8_t *buf, size_t len, uint32_t nvectors,
		   uint64_t slice, struct srd_msg *m, const char **why)
{
	memset(m, 0, sizeof(*m));
	if (len != SRD_MSG_SIZE)
		BAD("message of the wrong size");
	m->type = get16(buf);
	m->vector = get16(buf + 2);
	m->offset = get64(buf + 8);
	m->length = get64(buf + 16);
	for (int i = 0; i < SRD_LINE_WORDS; i++)
		m->line[i] = get64(buf + 24 + 8 * i);
	if (m->type != SRD_NOTIFY && m->type != SRD_PING)
		BAD("unknown message type");
	if (m->type == SRD_PING && !all_zero(buf + 2, SRD_MSG_SIZE - 2))
		BAD("a ping that carries something");
	if (get32(buf + 4))
		BAD("reserved bytes set");
	if (m->vector >= nvectors)
		BAD("vector out of range");
	if (m->offset > slice || m->length > slice - m->offset)
		BAD("range outside the slot");
	return 0;
}

int srd_crypto_init(void)
{
	return sodium_init() < 0 ? -EIO : 0;
}

void srd_random(uint8_t *buf, size_t len)
{
	randombytes_buf(buf, len);
}

static const char reducer_label[] = "sivshm-rdma-1 reducer";
static const char mapper_label[] = "sivshm-rdma-1 mapper";
static const char challenge_label[] = "sivshm-rdma-1 challenge";

void srd_challenge(const uint8_t secret[SIVSHM_KEY_BYTES], uint32_t id,
		   const uint8_t nonce_r[SRD_NONCE_BYTES], uint64_t epoch,
		   uint8_t nonce_m[SRD_NONCE_BYTES])
{
	uint8_t in[sizeof(challenge_label) + 1 + SRD_NONCE_BYTES + 8];
	uint8_t mac[SRD_MAC_BYTES];
	uint8_t *p = in;

	memcpy(p, challenge_label, sizeof(challenge_label));
	p += sizeof(challenge_label);
	*p++ = id;
	memcpy(p, nonce_r, SRD_NONCE_BYTES);
	p += SRD_NONCE_BYTES;
	put64(p, epoch);
	crypto_auth(mac, in, sizeof(in), secret);
	memcpy(nonce_m, mac, SRD_NONCE_BYTES);
	sodium_memzero(mac, sizeof(mac));
}

void srd_mac_reducer(const uint8_t key[SIVSHM_KEY_BYTES],
		     const struct srd_hello *h,
		     const uint8_t nonce_m[SRD_NONCE_BYTES],
		     uint8_t mac[SRD_MAC_BYTES])
{
	uint8_t in[sizeof(reducer_label) + 2 + 2 * SRD_NONCE_BYTES];
	uint8_t *p = in;

	memcpy(p, reducer_label, sizeof(reducer_label));
	p += sizeof(reducer_label);
	*p++ = h->id;
	*p++ = h->nvectors;
	memcpy(p, h->nonce_r, SRD_NONCE_BYTES);
	memcpy(p + SRD_NONCE_BYTES, nonce_m, SRD_NONCE_BYTES);
	crypto_auth(mac, in, sizeof(in), key);
}

void srd_mac_mapper(const uint8_t key[SIVSHM_KEY_BYTES], uint32_t id,
		    const uint8_t nonce_r[SRD_NONCE_BYTES],
		    const uint8_t nonce_m[SRD_NONCE_BYTES],
		    const struct srd_welcome *w, uint8_t mac[SRD_MAC_BYTES])
{
	uint8_t in[sizeof(mapper_label) + 1 + 2 * SRD_NONCE_BYTES +
		   WELCOME_SIGNED];
	uint8_t *p = in;

	memcpy(p, mapper_label, sizeof(mapper_label));
	p += sizeof(mapper_label);
	*p++ = id;
	memcpy(p, nonce_r, SRD_NONCE_BYTES);
	memcpy(p + SRD_NONCE_BYTES, nonce_m, SRD_NONCE_BYTES);
	welcome_fields(w, p + 2 * SRD_NONCE_BYTES);
	crypto_auth(mac, in, sizeof(in), key);
}

int srd_mac_equal(const uint8_t a[SRD_MAC_BYTES],
		  const uint8_t b[SRD_MAC_BYTES])
{
	return sodium_memcmp(a, b, SRD_MAC_BYTES) == 0;
}
