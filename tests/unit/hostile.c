// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "client.h"
#include "fds.h"
#include "sock.h"
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

int slot_memfd(uint64_t size, int seals)
{
	int fd = memfd_create("test-slot", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	T_ASSERT(fd >= 0 && ftruncate(fd, size) == 0, "memfd");
	T_ASSERT(!seals || fcntl(fd, F_ADD_SEALS, seals) == 0, "seals %#x",
		 seals);
	return fd;
}

void expect_refuse(int fd, uint32_t code, const char *what)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint8_t buf[PROTO_BUF_SIZE];
	struct proto_msg m;
	const char *why;
	unsigned int nfds;
	int fds[PROTO_MAX_FDS], n;
	const char *say = what;

	if (!what)
		what = "one of a flood";

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
	if (say)
		printf("refused as expected: %s (%s)\n", say, m.refuse.reason);
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

/* Follow a connection until the mapper ends it; drop what it sends. */
static void until_hangup(int fd, const char *what)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint8_t buf[PROTO_BUF_SIZE];
	int fds[PROTO_MAX_FDS], n;
	unsigned int nfds;

	for (;;) {
		T_ASSERT(poll(&pfd, 1, 5000) == 1,
			 "%s: the mapper kept the connection", what);
		n = proto_recv(fd, buf, fds, &nfds);
		if (n == -EAGAIN)
			continue;
		if (n <= 0)
			break;		/* hung up */
		proto_close_fds(fds, nfds);
	}
	close(fd);
}

/*
 * Join as @id (the slot received must be sealed), then speak again: the
 * mapper must drop the reducer.
 */
static void after_welcome(const char *path, uint32_t id, uint32_t nvec,
			  int *efd, int empty)
{
	struct pollfd pfd;
	uint8_t buf[PROTO_BUF_SIZE];
	int fd = raw_connect_to(path), fds[PROTO_MAX_FDS], n;
	unsigned int nfds;
	struct proto_msg m;
	const char *why;

	hello_bytes(buf, id, nvec);
	raw_send(fd, buf, PROTO_HELLO_SIZE, efd, nvec);
	pfd = (struct pollfd) { .fd = fd, .events = POLLIN };
	T_ASSERT(poll(&pfd, 1, 5000) == 1, "no WELCOME for %u", id);
	n = proto_recv(fd, buf, fds, &nfds);
	T_ASSERT(n > 0, "no WELCOME for %u (%d)", id, n);
	T_EQ(proto_decode(buf, n, nfds, &m, &why), 0);
	T_ASSERT(m.type == PROTO_WELCOME, "reducer %u refused: %s", id,
		 m.type == PROTO_REFUSE ? m.refuse.reason : "?");
	/* The slot can be neither shrunk nor grown under the mapper. */
	T_ASSERT((fcntl(fds[0], F_GET_SEALS) & PROTO_SLOT_SEALS) == PROTO_SLOT_SEALS,
		 "the slot of %u is not sealed", id);
	T_ASSERT(ftruncate(fds[0], 0) < 0 && errno == EPERM,
		 "the slot of %u could be truncated", id);
	proto_close_fds(fds, nfds);
	raw_send(fd, buf, empty ? 0 : PROTO_HELLO_SIZE, efd, nvec);
	until_hangup(fd, empty ? "empty message after WELCOME" :
		     "HELLO after WELCOME");
}

static void hostile_one(const char *path, unsigned int kind, uint32_t nred,
			uint32_t nvec, uint32_t busy_id, uint32_t free_id)
{
	uint8_t buf[PROTO_BUF_SIZE * 2];
	int efd[20], pipes[SIVSHM_MAX_VECTORS], *sent = efd, fd, p[2];
	unsigned int nfds = nvec;
	size_t len = PROTO_HELLO_SIZE;

	eventfds(efd, 20);
	hello_bytes(buf, free_id, nvec);
	switch (kind) {
	case 0:				/* an empty message */
		len = 0;
		break;
	case 1:
		hello_bytes(buf, busy_id, nvec);
		break;
	case 2:
		buf[4] = 2;		/* version */
		break;
	case 3:
		hello_bytes(buf, 0, nvec);
		break;
	case 4:
		hello_bytes(buf, nred + 1, nvec);
		break;
	case 5:
		len -= 4;
		break;
	case 6:
		memset(buf + PROTO_HELLO_SIZE, 0xab, PROTO_BUF_SIZE);
		len = sizeof(buf);
		break;
	case 7:
		memset(buf, 0x5a, 64);
		len = 64;
		break;
	case 8:
		nfds = nvec - 1;
		break;
	case 9:
		nfds = 20;
		break;
	case 10:			/* the same pipe end for every vector */
		T_EQ(pipe2(p, O_CLOEXEC), 0);
		for (unsigned int i = 0; i < nvec; i++)
			pipes[i] = p[0];
		sent = pipes;
		break;
	case 11:			/* a vector count not the mapper's */
		hello_bytes(buf, free_id, nvec + 1);
		nfds = nvec + 1;
		break;
	case 12:			/* send and hang up at once */
		hello_bytes(buf, busy_id, nvec);
		fd = raw_connect_to(path);
		raw_send(fd, buf, len, efd, nfds);
		close(fd);
		goto out;
	case 13:
	case 14:
		after_welcome(path, free_id, nvec, efd, kind == 13);
		goto out;
	}
	fd = raw_connect_to(path);
	raw_send(fd, buf, len, sent, nfds);
	until_hangup(fd, "a hostile message");
	if (kind == 10) {
		close(p[0]);
		close(p[1]);
	}
out:
	proto_close_fds(efd, 20);
}

void hostile_flood(const char *path, uint32_t nred, uint32_t nvec,
		   uint32_t busy_id, uint32_t free_id, unsigned int count)
{
	for (unsigned int i = 0; i < count; i++)
		hostile_one(path, i % HOSTILE_KINDS, nred, nvec, busy_id,
			    free_id);
}

int open_fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	T_ASSERT(d, "opendir /proc/self/fd");
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the directory's own */
}

long rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	T_ASSERT(f, "/proc/self/status");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}
