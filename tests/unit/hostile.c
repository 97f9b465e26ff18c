// SPDX-License-Identifier: MIT
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "client.h"
#include "hostile.h"

int raw_connect_to(const char *path)
{
	int fd = proto_client_connect(path, 2000);

	T_ASSERT(fd >= 0, "connect: %s", strerror(-fd));
	return fd;
}

void raw_send(int fd, const void *buf, size_t len, const int *fds,
		     unsigned int nfds)
{
	char ctl[CMSG_SPACE(sizeof(int) * 64)] = { 0 };
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds) {
		struct cmsghdr *c;

		mh.msg_control = ctl;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	T_ASSERT(sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)len, "sendmsg: %s",
		 strerror(errno));
}

void hello_bytes(uint8_t *buf, uint32_t id, uint32_t nvec)
{
	struct proto_msg m = {
		.version = PROTO_VERSION, .type = PROTO_HELLO,
		.hello = { .id = id, .nvectors = nvec },
	};

	T_EQ(proto_encode(&m, buf, PROTO_BUF_SIZE), PROTO_HELLO_SIZE);
}

void eventfds(int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		fds[i] = eventfd(0, EFD_CLOEXEC);
		T_ASSERT(fds[i] >= 0, "eventfd");
	}
}

void expect_refuse(int fd, uint32_t code, const char *what)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint8_t buf[PROTO_BUF_SIZE];
	struct proto_msg m;
	const char *why;
	unsigned int nfds;
	int fds[PROTO_MAX_FDS], n;

	T_ASSERT(poll(&pfd, 1, 3000) == 1, "%s: no answer", what);
	n = proto_recv(fd, buf, fds, &nfds);
	T_ASSERT(n > 0, "%s: no REFUSE (%d)", what, n);
	T_EQ(proto_decode(buf, n, nfds, &m, &why), 0);
	T_EQ(m.type, PROTO_REFUSE);
	T_ASSERT(m.refuse.code == code, "%s: refused with %u, expected %u (%s)",
		 what, m.refuse.code, code, m.refuse.reason);
	T_ASSERT(poll(&pfd, 1, 3000) == 1, "%s: connection left open", what);
	T_EQ(proto_recv(fd, buf, fds, &nfds), 0);
	close(fd);
	printf("refused as expected: %s (%s)\n", what, m.refuse.reason);
}

void hostile_refusals(const char *path, uint32_t nred, uint32_t nvec,
		      uint32_t busy_id, uint32_t free_id)
{
	uint8_t buf[PROTO_BUF_SIZE * 2];
	int efd[64], fd;

	fd = raw_connect_to(path);
	hello_bytes(buf, busy_id, nvec);
	eventfds(efd, nvec);
	raw_send(fd, buf, PROTO_HELLO_SIZE, efd, nvec);
	expect_refuse(fd, PROTO_E_ID_BUSY, "duplicate id");
	proto_close_fds(efd, nvec);

	fd = raw_connect_to(path);
	hello_bytes(buf, free_id, nvec);
	buf[4] = 2;
	eventfds(efd, nvec);
	raw_send(fd, buf, PROTO_HELLO_SIZE, efd, nvec);
	expect_refuse(fd, PROTO_E_VERSION, "wrong version");

	fd = raw_connect_to(path);
	hello_bytes(buf, 0, nvec);
	raw_send(fd, buf, PROTO_HELLO_SIZE, efd, nvec);
	expect_refuse(fd, PROTO_E_ID_RANGE, "id 0");

	fd = raw_connect_to(path);
	hello_bytes(buf, nred + 1, nvec);
	raw_send(fd, buf, PROTO_HELLO_SIZE, efd, nvec);
	expect_refuse(fd, PROTO_E_ID_RANGE, "id above N");

	fd = raw_connect_to(path);
	hello_bytes(buf, free_id, nvec);
	raw_send(fd, buf, PROTO_HELLO_SIZE - 4, efd, nvec);
	expect_refuse(fd, PROTO_E_MALFORMED, "truncated HELLO");

	fd = raw_connect_to(path);
	memset(buf, 0xab, sizeof(buf));
	hello_bytes(buf, free_id, nvec);
	raw_send(fd, buf, sizeof(buf), efd, nvec);
	expect_refuse(fd, PROTO_E_MALFORMED, "oversized HELLO");

	fd = raw_connect_to(path);
	memset(buf, 0x5a, 64);
	raw_send(fd, buf, 64, NULL, 0);
	expect_refuse(fd, PROTO_E_MALFORMED, "garbage");

	fd = raw_connect_to(path);
	hello_bytes(buf, free_id, nvec);
	raw_send(fd, buf, PROTO_HELLO_SIZE, efd, nvec - 1);
	expect_refuse(fd, PROTO_E_FDS, "too few fds");

	fd = raw_connect_to(path);
	eventfds(efd, 40);
	raw_send(fd, buf, PROTO_HELLO_SIZE, efd, 40);
	expect_refuse(fd, PROTO_E_FDS, "too many fds");
	for (int i = 0; i < 40; i++)
		close(efd[i]);

	fd = raw_connect_to(path);
	T_ASSERT(nvec <= 2, "the pipe case sends at most two fds");
	T_EQ(pipe(efd), 0);
	raw_send(fd, buf, PROTO_HELLO_SIZE, efd, nvec);
	expect_refuse(fd, PROTO_E_FDS, "pipes instead of eventfds");
	close(efd[0]);
	close(efd[1]);

	fd = raw_connect_to(path);
	hello_bytes(buf, free_id, nvec + 1);
	eventfds(efd, nvec + 1);
	raw_send(fd, buf, PROTO_HELLO_SIZE, efd, nvec + 1);
	expect_refuse(fd, PROTO_E_VECTORS, "vector count mismatch");
	proto_close_fds(efd, nvec + 1);
}
