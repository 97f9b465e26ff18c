// SPDX-License-Identifier: MIT
/*
 * The client side of QEMU's ivshmem-server protocol (docs/specs/
 * ivshmem-spec.txt in QEMU): what an ivshmem device with interrupts does
 * on its chardev, for host processes.  Everything the server sends is
 * bounded before use: ids, fd counts, the protocol version.
 */
#include <errno.h>
#include <endian.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ivshmem-client.h"

/* At most this many fds with one message; more is a protocol error. */
#define IVC_MSG_FDS	4

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fds(int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* The fds that came with @msg, up to @max into @fds; the count or -EPROTO. */
static int take_fds(struct msghdr *msg, int *fds, unsigned int max)
{
	unsigned int n = 0, extra = 0;
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		size_t k;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			if (n < max) {
				fds[n++] = fd;
			} else {
				close(fd);
				extra++;
			}
		}
	}
	if (extra || (msg->msg_flags & MSG_CTRUNC)) {
		close_fds(fds, n);
		return -EPROTO;
	}
	return n;
}

/* Wait at most @timeout_ms (-1: forever) for @fd to be readable. */
static int wait_readable(int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int ret;

	do
		ret = poll(&pfd, 1, timeout_ms);
	while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : ret;
}

/*
 * Read one message: 1 with *@val and *@fd (-1: none), 0 if nothing came in
 * @timeout_ms, or a negative errno.  A message split across reads is put
 * back together; its fd comes with its first byte.
 */
static int read_msg(int sock, int timeout_ms, int64_t *val, int *fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * IVC_MSG_FDS)];
	} control;
	uint8_t raw[8];
	size_t got = 0;
	int fds[IVC_MSG_FDS], nfds = 0, ret;
	uint64_t le;

	*fd = -1;
	ret = wait_readable(sock, timeout_ms);
	if (ret <= 0)
		return ret;
	while (got < sizeof(raw)) {
		struct iovec iov = {
			.iov_base = raw + got, .iov_len = sizeof(raw) - got,
		};
		struct msghdr msg = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = control.buf,
			.msg_controllen = sizeof(control.buf),
		};
		ssize_t n;

		/* The rest of a split message is due at once. */
		if (got && wait_readable(sock, 1000) <= 0) {
			ret = -EPROTO;
			goto fail;
		}
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -ECONNRESET;
			goto fail;
		}
		ret = take_fds(&msg, fds + nfds, IVC_MSG_FDS - nfds);
		if (ret < 0)
			goto fail;
		nfds += ret;
		got += n;
	}
	if (nfds > 1) {
		ret = -EPROTO;
		goto fail;
	}
	memcpy(&le, raw, sizeof(le));
	*val = (int64_t)le64toh(le);
	*fd = nfds ? fds[0] : -1;
	return 1;
fail:
	close_fds(fds, nfds);
	return ret;
}

static struct ivc_peer *find_peer(struct ivc *c, int64_t id)
{
	for (unsigned int i = 0; i < c->npeers; i++)
		if (c->peers[i].id == id)
			return &c->peers[i];
	return NULL;
}

static int peer_join(struct ivc *c, int64_t id, int fd)
{
	struct ivc_peer *p = find_peer(c, id);

	if (!p) {
		if (c->npeers == IVC_MAX_PEERS) {
			close(fd);
			return -ENOSPC;
		}
		p = &c->peers[c->npeers++];
		p->id = id;
		p->nfds = 0;
	}
	/* Vectors come in order; those we do not use are closed. */
	if (p->nfds < c->nvectors)
		p->fds[p->nfds++] = fd;
	else
		close(fd);
	return 0;
}

static void peer_leave(struct ivc *c, int64_t id)
{
	struct ivc_peer *p = find_peer(c, id);

	if (!p)
		return;
	close_fds(p->fds, p->nfds);
	*p = c->peers[--c->npeers];
}

static int apply(struct ivc *c, int64_t val, int fd)
{
	if (val < 0 || val > IVC_MAX_ID) {
		if (fd >= 0)
			close(fd);
		return -EPROTO;
	}
	if (val != c->id) {
		if (fd < 0) {
			peer_leave(c, val);
			return 0;
		}
		return peer_join(c, val, fd);
	}
	if (fd < 0)
		return -EPROTO;
	if (c->nown < c->nvectors)
		c->own[c->nown++] = fd;
	else
		close(fd);
	return 0;
}

int ivc_handle(struct ivc *c, int timeout_ms)
{
	int64_t val;
	int fd, ret;

	ret = read_msg(c->sock, timeout_ms, &val, &fd);
	if (ret <= 0)
		return ret;
	ret = apply(c, val, fd);
	return ret < 0 ? ret : 1;
}

static int connect_unix(const char *path, int timeout_ms)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int64_t deadline = now_ms() + timeout_ms;
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	for (;;) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (!connect(fd, (struct sockaddr *)&sun, sizeof(sun)))
			return fd;
		close(fd);
		if ((errno != ENOENT && errno != ECONNREFUSED) ||
		    now_ms() >= deadline)
			return -errno;
		usleep(10000);
	}
}

/* A message the server must send now: *@val, with an fd or without. */
static int expect(struct ivc *c, int64_t deadline, int want_fd,
		  int64_t *val, int *fd)
{
	int64_t left = deadline - now_ms();
	int ret = read_msg(c->sock, left > 0 ? (int)left : 0, val, fd);

	if (ret == 0)
		return -ETIMEDOUT;
	if (ret < 0)
		return ret;
	if ((*fd >= 0) != want_fd) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return -EPROTO;
	}
	return 0;
}

static int read_greeting(struct ivc *c, int64_t deadline)
{
	struct stat st;
	int64_t val;
	int fd, ret;

	ret = expect(c, deadline, 0, &val, &fd);
	if (ret)
		return ret;
	if (val != IVC_PROTOCOL_VERSION)
		return -EPROTONOSUPPORT;
	ret = expect(c, deadline, 0, &val, &fd);
	if (ret)
		return ret;
	if (val < 0 || val > IVC_MAX_ID)
		return -EPROTO;
	c->id = val;
	ret = expect(c, deadline, 1, &val, &c->shm_fd);
	if (ret)
		return ret;
	if (val != -1)
		return -EPROTO;
	if (fstat(c->shm_fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size <= 0)
		return -EPROTO;
	c->shm_size = st.st_size;
	return 0;
}

int ivc_connect(struct ivc *c, const char *path, unsigned int nvectors,
		int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms, left;
	int ret;

	memset(c, 0, sizeof(*c));
	c->shm_fd = -1;
	if (nvectors < 1 || nvectors > IVC_MAX_VECTORS)
		return -EINVAL;
	c->nvectors = nvectors;
	c->sock = connect_unix(path, timeout_ms);
	if (c->sock < 0)
		return c->sock;
	ret = read_greeting(c, deadline);
	/* Other peers, then our own vectors, which end the greeting. */
	while (!ret && c->nown < c->nvectors) {
		left = deadline - now_ms();
		ret = ivc_handle(c, left > 0 ? (int)left : 0);
		ret = ret == 0 ? -ETIMEDOUT : ret < 0 ? ret : 0;
	}
	if (ret)
		ivc_close(c);
	return ret;
}

int ivc_peer_fd(const struct ivc *c, int64_t id, unsigned int vector)
{
	for (unsigned int i = 0; i < c->npeers; i++)
		if (c->peers[i].id == id)
			return vector < c->peers[i].nfds ?
			       c->peers[i].fds[vector] : -ENOENT;
	return -ENOENT;
}

int ivc_ring(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) == sizeof(one))
		return 0;
	/* A counter about to overflow has been rung anyway. */
	return errno == EAGAIN ? 0 : -errno;
}

int ivc_ack(int fd)
{
	uint64_t cnt;

	if (read(fd, &cnt, sizeof(cnt)) == sizeof(cnt))
		return 0;
	return errno == EAGAIN ? 0 : -errno;
}

void ivc_close(struct ivc *c)
{
	for (unsigned int i = 0; i < c->npeers; i++)
		close_fds(c->peers[i].fds, c->peers[i].nfds);
	c->npeers = 0;
	close_fds(c->own, c->nown);
	c->nown = 0;
	if (c->shm_fd >= 0)
		close(c->shm_fd);
	c->shm_fd = -1;
	if (c->sock >= 0)
		close(c->sock);
	c->sock = -1;
}
