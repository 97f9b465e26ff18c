// SPDX-License-Identifier: MIT
/*
 * The SIVSHM handshake's wire codec: encoding and validation of its
 * messages.  docs/protocol.md is the specification; keep the two in step.
 */
#include <errno.h>
#include <string.h>

#include "le.h"
#include "proto.h"

static size_t proto_size(uint16_t type)
{
	switch (type) {
	case PROTO_HELLO:
		return PROTO_HELLO_SIZE;
	case PROTO_WELCOME:
		return PROTO_WELCOME_SIZE;
	case PROTO_REFUSE:
		return PROTO_REFUSE_SIZE;
	}
	return 0;
}

unsigned int proto_nfds(const struct proto_msg *msg)
{
	switch (msg->type) {
	case PROTO_HELLO:
		return msg->hello.nvectors +
		       !!(msg->hello.features & PROTO_F_SLOT);
	case PROTO_WELCOME:
		return 1 + msg->welcome.nvectors;
	}
	return 0;
}

size_t proto_encode(const struct proto_msg *msg, uint8_t *buf, size_t len)
{
	size_t size = proto_size(msg->type);

	if (!size || len < size)
		return 0;
	memset(buf, 0, size);
	put32(buf, PROTO_MAGIC);
	put16(buf + 4, msg->version);
	put16(buf + 6, msg->type);
	put32(buf + 8, size);

	switch (msg->type) {
	case PROTO_HELLO:
		put32(buf + 16, msg->hello.id);
		put32(buf + 20, msg->hello.nvectors);
		put64(buf + 24, msg->hello.features);
		break;
	case PROTO_WELCOME:
		put32(buf + 16, msg->welcome.id);
		put32(buf + 20, msg->welcome.nreducers);
		put64(buf + 24, msg->welcome.region_size);
		put64(buf + 32, msg->welcome.slice_size);
		put64(buf + 40, msg->welcome.slot_offset);
		put32(buf + 48, msg->welcome.nvectors);
		put32(buf + 52, msg->welcome.flags);
		break;
	case PROTO_REFUSE:
		put32(buf + 16, msg->refuse.code);
		memcpy(buf + 24, msg->refuse.reason,
		       strnlen(msg->refuse.reason, PROTO_REASON_LEN - 1));
		break;
	}
	return size;
}

#define BAD(err, text)			\
	do {				\
		*why = text;		\
		return err;		\
	} while (0)

static int decode_welcome(struct proto_msg *msg, const char **why)
{
	uint64_t region = msg->welcome.region_size;
	uint64_t slice = msg->welcome.slice_size;
	uint64_t off = msg->welcome.slot_offset;

	if (msg->welcome.nvectors < 1 ||
	    msg->welcome.nvectors > SIVSHM_MAX_VECTORS)
		BAD(-EINVAL, "vector count out of range");
	if (msg->welcome.nreducers < 1 ||
	    msg->welcome.nreducers > SIVSHM_MAX_REDUCERS ||
	    msg->welcome.id < 1 || msg->welcome.id > msg->welcome.nreducers)
		BAD(-EINVAL, "id or reducer count out of range");
	if (!slice || region > SIVSHM_MAX_REGION || slice > region ||
	    off > region - slice ||
	    off != (uint64_t)msg->welcome.id * slice)
		BAD(-EINVAL, "slot geometry inconsistent");
	if (msg->welcome.flags)
		BAD(-EINVAL, "unknown flags");
	return 0;
}

int proto_decode(const uint8_t *buf, size_t len, unsigned int nfds,
		 struct proto_msg *msg, const char **why)
{
	const uint8_t *end;
	size_t size;

	memset(msg, 0, sizeof(*msg));
	if (len < PROTO_HDR_SIZE)
		BAD(-EBADMSG, "truncated header");
	if (get32(buf) != PROTO_MAGIC)
		BAD(-EBADMSG, "bad magic");
	msg->version = get16(buf + 4);
	msg->type = get16(buf + 6);
	if (msg->version != PROTO_VERSION)
		BAD(-EPROTONOSUPPORT, "unsupported protocol version");
	size = proto_size(msg->type);
	if (!size)
		BAD(-EBADMSG, "unknown message type");
	if (get32(buf + 8) != len)
		BAD(-EBADMSG, "size field does not match the message");
	if (len < size)
		BAD(-EBADMSG, "truncated message");
	if (len > size)
		BAD(-EBADMSG, "oversized message");
	if (get32(buf + 12))
		BAD(-EBADMSG, "reserved header field not zero");

	switch (msg->type) {
	case PROTO_HELLO:
		msg->hello.id = get32(buf + 16);
		msg->hello.nvectors = get32(buf + 20);
		msg->hello.features = get64(buf + 24);
		if (msg->hello.nvectors < 1 ||
		    msg->hello.nvectors > SIVSHM_MAX_VECTORS)
			BAD(-EINVAL, "vector count out of range");
		if (msg->hello.features & ~PROTO_FEATURES)
			BAD(-EINVAL, "unknown features");
		break;
	case PROTO_WELCOME:
		msg->welcome.id = get32(buf + 16);
		msg->welcome.nreducers = get32(buf + 20);
		msg->welcome.region_size = get64(buf + 24);
		msg->welcome.slice_size = get64(buf + 32);
		msg->welcome.slot_offset = get64(buf + 40);
		msg->welcome.nvectors = get32(buf + 48);
		msg->welcome.flags = get32(buf + 52);
		if (decode_welcome(msg, why))
			return -EINVAL;
		break;
	case PROTO_REFUSE:
		msg->refuse.code = get32(buf + 16);
		if (get32(buf + 20))
			BAD(-EBADMSG, "reserved field not zero");
		end = memchr(buf + 24, 0, PROTO_REASON_LEN);
		if (!end)
			BAD(-EBADMSG, "reason not terminated");
		/* Zero padding after the reason: one message, one encoding. */
		for (const uint8_t *p = end; p < buf + 24 + PROTO_REASON_LEN; p++)
			if (*p)
				BAD(-EBADMSG, "reason not zero-padded");
		memcpy(msg->refuse.reason, buf + 24, PROTO_REASON_LEN);
		break;
	}
	if (nfds != proto_nfds(msg))
		BAD(-EBADF, "wrong number of fds");
	return 0;
}

int proto_refusal_errno(uint32_t code)
{
	switch (code) {
	case PROTO_E_VERSION:
		return EPROTONOSUPPORT;
	case PROTO_E_ID_RANGE:
		return ERANGE;
	case PROTO_E_ID_BUSY:
		return EADDRINUSE;
	case PROTO_E_FDS:
		return EBADF;
	case PROTO_E_VECTORS:
		return EINVAL;
	case PROTO_E_BUSY:
		return EAGAIN;
	case PROTO_E_CRED:
		return EACCES;
	case PROTO_E_REMOTE:
		return EREMOTE;
	}
	return EBADMSG;
}
