// SPDX-License-Identifier: MIT
/*
 * The RDMA transport's wire codec and MACs (libsivshm/rdma/wire.c): round
 * trips, every decoder refusal, MACs that bind what they claim to, and
 * sivshm_key_parse().
 */
#include "check.h"
#include "le.h"
#include "rdma/wire.h"

static const uint8_t key1[SIVSHM_KEY_BYTES] = { 1, 2, 3 };
static const uint8_t key2[SIVSHM_KEY_BYTES] = { 1, 2, 4 };

static struct srd_hello hello(uint8_t type)
{
	struct srd_hello h = { .type = type, .id = 5, .nvectors = 2 };

	for (int i = 0; i < SRD_NONCE_BYTES; i++)
		h.nonce_r[i] = 0xa0 + i;
	if (type == SRD_PROVE)
		memset(h.mac, 0x5c, SRD_MAC_BYTES);
	return h;
}

static int hello_dec(const uint8_t *buf, size_t len, struct srd_hello *h)
{
	const char *why = NULL;
	int err = srd_hello_decode(buf, len, h, &why);

	T_ASSERT(!err || why, "a refusal without a reason");
	return err;
}

static void hellos(void)
{
	uint8_t buf[SRD_HELLO_SIZE + 8] = { 0 };
	struct srd_hello h = hello(SRD_PROVE), d;

	srd_hello_encode(&h, buf);
	T_EQ(hello_dec(buf, SRD_HELLO_SIZE, &d), 0);
	T_ASSERT(!memcmp(&h, &d, sizeof(h)), "PROVE round trip");
	/* RDMA CM may hand over more than was sent: zero padding is fine. */
	T_EQ(hello_dec(buf, sizeof(buf), &d), 0);
	T_EQ(hello_dec(buf, SRD_HELLO_SIZE - 1, &d), -EBADMSG);
	T_EQ(hello_dec(NULL, SRD_HELLO_SIZE, &d), -EBADMSG);

	h = hello(SRD_ASK);
	srd_hello_encode(&h, buf);
	T_EQ(hello_dec(buf, SRD_HELLO_SIZE, &d), 0);
	T_EQ(d.type, SRD_ASK);
	for (int i = 0; i < SRD_MAC_BYTES; i++)
		T_EQ(buf[24 + i], 0);
	buf[40] = 1;		/* a request for a challenge carries no MAC */
	T_EQ(hello_dec(buf, SRD_HELLO_SIZE, &d), -EBADMSG);
	buf[40] = 0;

	struct { int off; uint8_t val; } bad[] = {
		{ 0, 0 },		/* magic */
		{ 4, 0 }, { 4, 3 },	/* type */
		{ 5, 0 }, { 5, SIVSHM_MAX_REDUCERS + 1 },
		{ 6, 0 }, { 6, SIVSHM_MAX_VECTORS + 1 },
		{ 7, 1 },		/* reserved */
	};
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t copy[SRD_HELLO_SIZE];

		memcpy(copy, buf, sizeof(copy));
		copy[bad[i].off] = bad[i].val;
		T_ASSERT(hello_dec(copy, sizeof(copy), &d) == -EBADMSG,
			 "byte %d = %u accepted", bad[i].off, bad[i].val);
	}
}

static void rejects(void)
{
	struct srd_reject r = { .code = SRD_CHALLENGE }, d;
	uint8_t buf[SRD_REJECT_SIZE];

	memset(r.nonce_m, 0x77, SRD_NONCE_BYTES);
	srd_reject_encode(&r, buf);
	T_EQ(srd_reject_decode(buf, sizeof(buf), &d), 0);
	T_ASSERT(!memcmp(&r, &d, sizeof(r)), "reject round trip");
	T_EQ(srd_reject_decode(buf, sizeof(buf) - 1, &d), -EBADMSG);
	buf[4] = 0;
	T_EQ(srd_reject_decode(buf, sizeof(buf), &d), -EBADMSG);
	buf[4] = SRD_E_RESOURCES + 1;
	T_EQ(srd_reject_decode(buf, sizeof(buf), &d), -EBADMSG);
	/* Only a challenge carries a nonce. */
	r.code = SRD_E_AUTH;
	srd_reject_encode(&r, buf);
	for (int i = 0; i < SRD_NONCE_BYTES; i++)
		T_EQ(buf[8 + i], 0);
	buf[8] = 1;
	T_EQ(srd_reject_decode(buf, sizeof(buf), &d), -EBADMSG);
	buf[8] = 0;
	buf[6] = 1;		/* reserved */
	T_EQ(srd_reject_decode(buf, sizeof(buf), &d), -EBADMSG);
}

static const struct srd_welcome welcome = {
	.nreducers = 7, .nvectors = 2,
	.slice_size = 1 << 20, .region_size = 8 << 20,
	.addr = 0x7f0000000000, .rkey = 0x1234,
	.mac = { 9, 9, 9 },
};

static int welcome_dec(const struct srd_welcome *w, uint32_t id,
		       uint32_t nvectors)
{
	uint8_t buf[SRD_WELCOME_SIZE];
	struct srd_welcome d;
	const char *why = NULL;
	int err;

	srd_welcome_encode(w, buf);
	err = srd_welcome_decode(buf, sizeof(buf), id, nvectors, &d, &why);
	T_ASSERT(!err || why, "a refusal without a reason");
	if (!err)
		T_ASSERT(d.nreducers == w->nreducers &&
			 d.nvectors == w->nvectors &&
			 d.slice_size == w->slice_size &&
			 d.region_size == w->region_size &&
			 d.addr == w->addr && d.rkey == w->rkey &&
			 !memcmp(d.mac, w->mac, SRD_MAC_BYTES),
			 "welcome round trip");
	return err;
}

static void welcomes(void)
{
	struct srd_welcome w;

	T_EQ(welcome_dec(&welcome, 5, 2), 0);
	T_EQ(welcome_dec(&welcome, 7, 2), 0);
	T_EQ(welcome_dec(&welcome, 8, 2), -EBADMSG);	/* id past nreducers */
	T_EQ(welcome_dec(&welcome, 5, 3), -EBADMSG);	/* vectors differ */
	w = welcome;
	w.slice_size = 4095;
	w.region_size = 8 * 4095;
	T_EQ(welcome_dec(&w, 5, 2), -EBADMSG);
	w = welcome;
	w.region_size += 4096;
	T_EQ(welcome_dec(&w, 5, 2), -EBADMSG);
	w = welcome;
	w.slice_size = 2 << 20;
	T_EQ(welcome_dec(&w, 5, 2), -EBADMSG);
	w = welcome;
	w.nreducers = 63;
	w.slice_size = SIVSHM_MAX_REGION / 32;
	w.region_size = 64 * w.slice_size;		/* past the limit */
	T_EQ(welcome_dec(&w, 5, 2), -EBADMSG);
	w = welcome;
	w.addr = UINT64_MAX - 4096;
	T_EQ(welcome_dec(&w, 5, 2), -EBADMSG);
	w = welcome;
	w.nreducers = 0;
	T_EQ(welcome_dec(&w, 5, 2), -EBADMSG);
	for (int off = 6; off < 40; off += off == 7 ? 29 : 1) {
		uint8_t buf[SRD_WELCOME_SIZE];
		struct srd_welcome d;
		const char *why;

		srd_welcome_encode(&welcome, buf);
		buf[off] = 1;		/* reserved: 6, 7 and 36..39 */
		T_ASSERT(srd_welcome_decode(buf, sizeof(buf), 5, 2, &d,
					    &why) == -EBADMSG,
			 "reserved byte %d accepted", off);
	}
}

static int msg_dec(const struct srd_msg *m, size_t len)
{
	uint8_t buf[SRD_MSG_SIZE + 1] = { 0 };
	struct srd_msg d;
	const char *why = NULL;
	int err;

	srd_msg_encode(m, buf);
	err = srd_msg_decode(buf, len, 2, 1 << 20, &d, &why);
	T_ASSERT(!err || why, "a refusal without a reason");
	if (!err)
		T_ASSERT(d.type == m->type && d.vector == m->vector &&
			 d.offset == m->offset && d.length == m->length &&
			 !memcmp(d.line, m->line, sizeof(d.line)),
			 "message round trip");
	return err;
}

static void messages(void)
{
	struct srd_msg m = { .type = SRD_NOTIFY, .vector = 1,
			     .offset = 4096, .length = 8192,
			     .line = { 7, 1, 2, 3, UINT64_MAX, 5, 6, 0 } };
	uint8_t buf[SRD_MSG_SIZE];
	struct srd_msg d;
	const char *why;

	T_EQ(msg_dec(&m, SRD_MSG_SIZE), 0);
	T_EQ(msg_dec(&m, SRD_MSG_SIZE - 1), -EBADMSG);
	T_EQ(msg_dec(&m, SRD_MSG_SIZE + 1), -EBADMSG);
	m.offset = 0;
	m.length = 1 << 20;
	T_EQ(msg_dec(&m, SRD_MSG_SIZE), 0);		/* the whole slot */
	m.length++;
	T_EQ(msg_dec(&m, SRD_MSG_SIZE), -EBADMSG);
	m.offset = 1;
	m.length = UINT64_MAX;				/* wraps */
	T_EQ(msg_dec(&m, SRD_MSG_SIZE), -EBADMSG);
	m.offset = (1 << 20) + 1;
	m.length = 0;
	T_EQ(msg_dec(&m, SRD_MSG_SIZE), -EBADMSG);
	m.offset = 0;
	m.vector = 2;
	T_EQ(msg_dec(&m, SRD_MSG_SIZE), -EBADMSG);
	m.vector = 0;
	m.type = SRD_PING;			/* a heartbeat: all zero */
	T_EQ(msg_dec(&m, SRD_MSG_SIZE), -EBADMSG);	/* but the line */
	memset(m.line, 0, sizeof(m.line));
	T_EQ(msg_dec(&m, SRD_MSG_SIZE), 0);
	m.length = 1;
	T_EQ(msg_dec(&m, SRD_MSG_SIZE), -EBADMSG);
	m.length = 0;
	m.vector = 1;
	T_EQ(msg_dec(&m, SRD_MSG_SIZE), -EBADMSG);
	m.vector = 0;
	m.type = 3;
	T_EQ(msg_dec(&m, SRD_MSG_SIZE), -EBADMSG);
	m.type = SRD_NOTIFY;
	srd_msg_encode(&m, buf);
	buf[5] = 1;					/* reserved */
	T_EQ(srd_msg_decode(buf, sizeof(buf), 2, 1 << 20, &d, &why),
	     -EBADMSG);
}

static void macs(void)
{
	struct srd_hello h = hello(SRD_PROVE), h2;
	uint8_t nonce_m[SRD_NONCE_BYTES] = { 0x11 }, nonce2[SRD_NONCE_BYTES];
	uint8_t a[SRD_MAC_BYTES], b[SRD_MAC_BYTES], m[SRD_MAC_BYTES];
	struct srd_welcome w = welcome;

	T_EQ(srd_crypto_init(), 0);
	srd_mac_reducer(key1, &h, nonce_m, a);
	srd_mac_reducer(key1, &h, nonce_m, b);
	T_ASSERT(srd_mac_equal(a, b), "the MAC is not a function");
	srd_mac_reducer(key2, &h, nonce_m, b);
	T_ASSERT(!srd_mac_equal(a, b), "another key, the same MAC");
	memcpy(nonce2, nonce_m, sizeof(nonce2));
	nonce2[15] ^= 1;
	srd_mac_reducer(key1, &h, nonce2, b);
	T_ASSERT(!srd_mac_equal(a, b), "the challenge is not bound");
	h2 = h;
	h2.id = 6;
	srd_mac_reducer(key1, &h2, nonce_m, b);
	T_ASSERT(!srd_mac_equal(a, b), "the id is not bound");
	h2 = h;
	h2.nonce_r[0] ^= 1;
	srd_mac_reducer(key1, &h2, nonce_m, b);
	T_ASSERT(!srd_mac_equal(a, b), "the reducer's nonce is not bound");
	/* The mapper's proof is not the reducer's, and binds the welcome. */
	srd_mac_mapper(key1, h.id, h.nonce_r, nonce_m, &w, m);
	T_ASSERT(!srd_mac_equal(a, m), "the two labels collide");
	w.rkey ^= 1;
	srd_mac_mapper(key1, h.id, h.nonce_r, nonce_m, &w, b);
	T_ASSERT(!srd_mac_equal(m, b), "the rkey is not bound");
	w = welcome;
	w.addr += 4096;
	srd_mac_mapper(key1, h.id, h.nonce_r, nonce_m, &w, b);
	T_ASSERT(!srd_mac_equal(m, b), "the address is not bound");
	/* The MAC field itself is not signed. */
	w = welcome;
	w.mac[0] ^= 0xff;
	srd_mac_mapper(key1, h.id, h.nonce_r, nonce_m, &w, b);
	T_ASSERT(srd_mac_equal(m, b), "the MAC covers itself");
}

/* A challenge binds the mapper's secret, the id, nonce_r and the epoch. */
static void challenges(void)
{
	uint8_t nonce_r[SRD_NONCE_BYTES] = { 9, 8, 7 }, n2[SRD_NONCE_BYTES];
	uint8_t a[SRD_NONCE_BYTES], b[SRD_NONCE_BYTES];

	T_EQ(srd_crypto_init(), 0);
	srd_challenge(key1, 5, nonce_r, 1000, a);
	srd_challenge(key1, 5, nonce_r, 1000, b);
	T_ASSERT(!memcmp(a, b, sizeof(a)), "the challenge is not a function");
	srd_challenge(key2, 5, nonce_r, 1000, b);
	T_ASSERT(memcmp(a, b, sizeof(a)), "the secret is not bound");
	srd_challenge(key1, 6, nonce_r, 1000, b);
	T_ASSERT(memcmp(a, b, sizeof(a)), "the id is not bound");
	memcpy(n2, nonce_r, sizeof(n2));
	n2[15] ^= 1;
	srd_challenge(key1, 5, n2, 1000, b);
	T_ASSERT(memcmp(a, b, sizeof(a)), "the reducer's nonce is not bound");
	srd_challenge(key1, 5, nonce_r, 1001, b);
	T_ASSERT(memcmp(a, b, sizeof(a)), "the epoch is not bound");
	srd_challenge(key1, 5, nonce_r, 1000 + (1ull << 32), b);
	T_ASSERT(memcmp(a, b, sizeof(a)), "the epoch's high bits are not bound");
}

static void keys(void)
{
	uint8_t k[SIVSHM_KEY_BYTES];
	char hex[2 * SIVSHM_KEY_BYTES + 2];

	for (int i = 0; i < SIVSHM_KEY_BYTES; i++)
		sprintf(hex + 2 * i, "%02X", 255 - i);
	T_EQ(sivshm_key_parse(hex, k), 0);
	for (int i = 0; i < SIVSHM_KEY_BYTES; i++)
		T_EQ(k[i], 255 - i);
	hex[5] = 'g';
	T_EQ(sivshm_key_parse(hex, k), -EINVAL);
	hex[5] = '0';
	hex[2 * SIVSHM_KEY_BYTES - 1] = 0;
	T_EQ(sivshm_key_parse(hex, k), -EINVAL);
	strcpy(hex + 2 * SIVSHM_KEY_BYTES - 1, "00");
	T_EQ(sivshm_key_parse(hex, k), -EINVAL);
	T_EQ(sivshm_key_parse(NULL, k), -EINVAL);
}

int main(void)
{
	hellos();
	rejects();
	welcomes();
	messages();
	macs();
	challenges();
	keys();
	printf("rdma wire: ok\n");
	return 0;
}
