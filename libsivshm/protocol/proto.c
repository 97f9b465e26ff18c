// SPDX-License-Identifier: MIT
/*
 * The SIVSHM handshake protocol: encoding, validation and fd passing.
 * docs/protocol.md is the specification; keep the two in step.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v);
	put16(p + 2, v >> 16);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, v);
	put32(p + 4, v >> 32);
}

static uint16_t get16(const uint8_t *p)
{
	return p[0] | (uint16_t)p[1] << 8;
}

static uint32_t get32(const uint8_t *p)
{
	return get16(p) | (uint32_t)get16(p + 2) << 16;
}

static uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

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
	}
	return EBADMSG;
}

int64_t proto_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void proto_close_fds(int *fds, unsigned int nfds)
{
	for (unsigned int i = 0; i < nfds; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

int proto_send(int sock, const struct proto_msg *msg, const int *fds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * PROTO_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	uint8_t buf[PROTO_BUF_SIZE];
	unsigned int nfds = proto_nfds(msg);
	struct iovec iov;
	struct msghdr mh;
	ssize_t n;

	if (nfds > PROTO_MAX_FDS)
		return -EINVAL;
	iov.iov_base = buf;
	iov.iov_len = proto_encode(msg, buf, sizeof(buf));
	if (!iov.iov_len)
		return -EINVAL;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (nfds) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	do {
		n = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)iov.iov_len ? 0 : -EIO;
}

int proto_recv(int sock, uint8_t *buf, int *fds, unsigned int *nfds)
{
	union {
		/* Room for one fd more than allowed: a flood shows as CTRUNC. */
		char buf[CMSG_SPACE(sizeof(int) * (PROTO_MAX_FDS + 1))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = PROTO_BUF_SIZE };
	struct msghdr mh;
	struct cmsghdr *c;
	int err = 0;
	ssize_t n;

	*nfds = 0;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof(ctl.buf);
	do {
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;

	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		unsigned int cnt, i;
		int *data = (int *)CMSG_DATA(c);

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
			err = -EBADMSG;
			continue;
		}
		cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < cnt; i++) {
			int fd;

			memcpy(&fd, data + i, sizeof(fd));
			if (*nfds < PROTO_MAX_FDS)
				fds[(*nfds)++] = fd;
			else {
				close(fd);
				err = -ETOOMANYREFS;
			}
		}
	}
	if (mh.msg_flags & MSG_CTRUNC)
		err = -ETOOMANYREFS;
	if (mh.msg_flags & MSG_TRUNC)
		err = -EMSGSIZE;
	/*
	 * A SOCK_SEQPACKET message may be empty and still carry descriptors;
	 * it reads like the end of the stream, and ends the connection as
	 * one, with nothing of it kept.
	 */
	if (err || n == 0) {
		proto_close_fds(fds, *nfds);
		*nfds = 0;
		return err ? err : 0;
	}
	return n;
}

int proto_cred_get(int sock, struct proto_cred *got)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
		return -errno;
	got->uid = uc.uid;
	got->gid = uc.gid;
	return 0;
}

int proto_cred_allows(const struct proto_cred *want,
		      const struct proto_cred *got)
{
	return (want->uid == PROTO_CRED_ANY || want->uid == got->uid) &&
	       (want->gid == PROTO_CRED_ANY || want->gid == got->gid);
}

/* One field: "*" or a decimal below PROTO_CRED_ANY; *@end past it. */
static int cred_field(const char *p, const char **end, uint32_t *out)
{
	uint64_t v = 0;

	if (*p == '*') {
		*out = PROTO_CRED_ANY;
		*end = p + 1;
		return 0;
	}
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (v >= PROTO_CRED_ANY)
			return -EINVAL;
	}
	*out = v;
	*end = p;
	return 0;
}

static int cred_pair(const char *p, const char **end, struct proto_cred *c)
{
	if (cred_field(p, &p, &c->uid) || *p != ':' ||
	    cred_field(p + 1, end, &c->gid))
		return -EINVAL;
	return 0;
}

int proto_cred_parse(const char *text, struct proto_cred *cred)
{
	const char *end;

	if (cred_pair(text, &end, cred) || *end)
		return -EINVAL;
	return 0;
}

int proto_creds_parse(const char *text, uint32_t nreducers,
		      struct proto_cred *allow, const char **why)
{
	uint64_t named = 0;
	const char *p = text;

	for (;;) {
		struct proto_cred c;
		uint32_t id;

		if (cred_field(p, &p, &id) || id == PROTO_CRED_ANY || *p != ':')
			BAD(-EINVAL, "expected ID:UID:GID");
		if (id < 1 || id > nreducers)
			BAD(-EINVAL, "reducer id out of range");
		if (named & (1ULL << id))
			BAD(-EINVAL, "reducer id named twice");
		if (cred_pair(p + 1, &p, &c))
			BAD(-EINVAL, "expected ID:UID:GID");
		named |= 1ULL << id;
		allow[id] = c;
		if (!*p)
			return 0;
		if (*p++ != ';')
			BAD(-EINVAL, "expected ; between entries");
	}
}

int proto_slot_check(int fd, int like, uint64_t size, const char **why)
{
	struct statfs fs, like_fs;
	struct stat st;
	int seals;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != size) {
		*why = "the slot is not a file of the slice size";
		return -EINVAL;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (seals != PROTO_SLOT_SEALS) {
		*why = "the slot is not sealed as the mapper seals its slots";
		return -EPERM;
	}
	if (like < 0)
		return 0;
	if (fstatfs(fd, &fs) < 0 || fstatfs(like, &like_fs) < 0 ||
	    fs.f_type != like_fs.f_type || fs.f_bsize != like_fs.f_bsize) {
		*why = "the slot's pages are not of the mapper's kind";
		return -EINVAL;
	}
	return 0;
}

int proto_fd_is_eventfd(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return 0;
	link[n] = '\0';
	return strcmp(link, "anon_inode:[eventfd]") == 0;
}
