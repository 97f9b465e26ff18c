// SPDX-License-Identifier: MIT
/*
 * The SIVSHM handshake's socket calls: one message and its fds in one
 * SOCK_SEQPACKET datagram, never blocking, and the clock of the deadlines.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fds.h"
#include "sock.h"

int64_t proto_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
