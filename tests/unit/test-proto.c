// SPDX-License-Identifier: MIT
/* Encode and decode of every message type, and every decoder refusal. */
#include "check.h"
#include "proto.h"

static const struct proto_msg hello = {
	.version = PROTO_VERSION, .type = PROTO_HELLO,
	.hello = { .id = 3, .nvectors = 2 },
};

static const struct proto_msg welcome = {
	.version = PROTO_VERSION, .type = PROTO_WELCOME,
	.welcome = {
		.id = 3, .nreducers = 7, .region_size = 8ULL << 20,
		.slice_size = 1ULL << 20, .slot_offset = 3ULL << 20,
		.nvectors = 2,
	},
};

static struct proto_msg refuse(void)
{
	struct proto_msg m = {
		.version = PROTO_VERSION, .type = PROTO_REFUSE,
		.refuse.code = PROTO_E_ID_BUSY,
	};

	strcpy(m.refuse.reason, "a reducer with this id is connected");
	return m;
}

static size_t enc(const struct proto_msg *m, uint8_t *buf)
{
	size_t n = proto_encode(m, buf, PROTO_BUF_SIZE);

	T_ASSERT(n > 0, "encode failed");
	return n;
}

static int dec(const uint8_t *buf, size_t len, unsigned int nfds,
	       struct proto_msg *m)
{
	const char *why = NULL;
	int err = proto_decode(buf, len, nfds, m, &why);

	T_ASSERT(err == 0 || why, "a refusal without a reason");
	return err;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = v >> (8 * i);
}

static void round_trips(void)
{
	uint8_t buf[PROTO_BUF_SIZE];
	struct proto_msg m, r = refuse();

	T_EQ(enc(&hello, buf), PROTO_HELLO_SIZE);
	T_EQ(dec(buf, PROTO_HELLO_SIZE, 2, &m), 0);
	T_ASSERT(!memcmp(&m.hello, &hello.hello, sizeof(m.hello)), "HELLO");

	T_EQ(enc(&welcome, buf), PROTO_WELCOME_SIZE);
	T_EQ(dec(buf, PROTO_WELCOME_SIZE, 3, &m), 0);
	T_ASSERT(!memcmp(&m.welcome, &welcome.welcome, sizeof(m.welcome)),
		 "WELCOME");

	T_EQ(enc(&r, buf), PROTO_REFUSE_SIZE);
	T_EQ(dec(buf, PROTO_REFUSE_SIZE, 0, &m), 0);
	T_EQ(m.refuse.code, PROTO_E_ID_BUSY);
	T_ASSERT(!strcmp(m.refuse.reason, r.refuse.reason), "REFUSE reason");

	T_EQ(proto_nfds(&hello), 2);
	T_EQ(proto_nfds(&welcome), 3);
	T_EQ(proto_nfds(&r), 0);
	T_EQ(proto_encode(&hello, buf, PROTO_HELLO_SIZE - 1), 0);
}

/* The wire layout is fixed and little-endian whatever the host. */
static void wire_layout(void)
{
	static const uint8_t want[PROTO_HELLO_SIZE] = {
		'S', 'V', 'S', 'M', 1, 0, 1, 0, 32, 0, 0, 0, 0, 0, 0, 0,
		3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	};
	uint8_t buf[PROTO_BUF_SIZE];

	enc(&hello, buf);
	T_ASSERT(!memcmp(buf, want, sizeof(want)), "HELLO bytes differ");
}

static void refusals(void)
{
	uint8_t buf[PROTO_BUF_SIZE], b[PROTO_BUF_SIZE];
	struct proto_msg m, w;
	size_t n = enc(&hello, buf);

	/* header */
	T_EQ(dec(buf, 0, 2, &m), -EBADMSG);
	T_EQ(dec(buf, PROTO_HDR_SIZE - 1, 2, &m), -EBADMSG);
	memcpy(b, buf, n);
	b[0] ^= 1;
	T_EQ(dec(b, n, 2, &m), -EBADMSG);
	memcpy(b, buf, n);
	b[4] = 2;
	T_EQ(dec(b, n, 2, &m), -EPROTONOSUPPORT);
	T_EQ(m.version, 2);
	memcpy(b, buf, n);
	b[6] = 9;
	T_EQ(dec(b, n, 2, &m), -EBADMSG);
	memcpy(b, buf, n);
	b[12] = 1;
	T_EQ(dec(b, n, 2, &m), -EBADMSG);

	/* size: field disagreeing with the length, truncated, oversized */
	T_EQ(dec(buf, n - 1, 2, &m), -EBADMSG);
	memcpy(b, buf, n);
	put32(b + 8, n - 8);
	T_EQ(dec(b, n - 8, 2, &m), -EBADMSG);
	memset(b, 0, sizeof(b));
	memcpy(b, buf, n);
	put32(b + 8, n + 8);
	T_EQ(dec(b, n + 8, 2, &m), -EBADMSG);

	/* HELLO fields */
	memcpy(b, buf, n);
	put32(b + 20, 0);
	T_EQ(dec(b, n, 0, &m), -EINVAL);
	put32(b + 20, SIVSHM_MAX_VECTORS + 1);
	T_EQ(dec(b, n, SIVSHM_MAX_VECTORS + 1, &m), -EINVAL);
	memcpy(b, buf, n);
	b[24] = 2;
	T_EQ(dec(b, n, 2, &m), -EINVAL);
	/* PROTO_F_SLOT: the slot handed back follows the eventfds. */
	b[24] = 1;
	T_EQ(dec(b, n, 2, &m), -EBADF);
	T_EQ(dec(b, n, 3, &m), 0);
	T_EQ(m.hello.features, PROTO_F_SLOT);
	T_EQ(proto_nfds(&m), 3);

	/* fd counts */
	T_EQ(dec(buf, n, 0, &m), -EBADF);
	T_EQ(dec(buf, n, 1, &m), -EBADF);
	T_EQ(dec(buf, n, 3, &m), -EBADF);

	/* WELCOME consistency */
	w = welcome;
	w.welcome.slot_offset += 4096;
	T_EQ(dec(b, enc(&w, b), 3, &m), -EINVAL);
	w = welcome;
	w.welcome.slice_size = w.welcome.region_size + 1;
	T_EQ(dec(b, enc(&w, b), 3, &m), -EINVAL);
	w = welcome;
	w.welcome.id = 8;
	w.welcome.slot_offset = 8ULL << 20;
	T_EQ(dec(b, enc(&w, b), 3, &m), -EINVAL);
	w = welcome;
	w.welcome.slice_size = 0;
	w.welcome.slot_offset = 0;
	T_EQ(dec(b, enc(&w, b), 3, &m), -EINVAL);
	w = welcome;
	w.welcome.flags = 1;
	T_EQ(dec(b, enc(&w, b), 3, &m), -EINVAL);
	w = welcome;
	w.welcome.region_size = SIVSHM_MAX_REGION * 2;
	T_EQ(dec(b, enc(&w, b), 3, &m), -EINVAL);

	/* REFUSE: unterminated reason, non-zero reserved word */
	w = refuse();
	n = enc(&w, b);
	memset(b + 24, 'x', PROTO_REASON_LEN);
	T_EQ(dec(b, n, 0, &m), -EBADMSG);
	n = enc(&w, b);
	b[24 + PROTO_REASON_LEN - 1] = 'x';
	T_EQ(dec(b, n, 0, &m), -EBADMSG);
	n = enc(&w, b);
	b[20] = 1;
	T_EQ(dec(b, n, 0, &m), -EBADMSG);
	T_EQ(dec(b, enc(&w, b), 1, &m), -EBADF);
}

int main(void)
{
	round_trips();
	wire_layout();
	refusals();
	T_EQ(proto_refusal_errno(PROTO_E_VERSION), EPROTONOSUPPORT);
	T_EQ(proto_refusal_errno(PROTO_E_ID_BUSY), EADDRINUSE);
	T_EQ(proto_refusal_errno(12345), EBADMSG);
	puts("proto: every message round-trips, every malformed one is refused");
	return 0;
}
