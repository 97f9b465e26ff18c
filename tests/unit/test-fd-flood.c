// SPDX-License-Identifier: MIT
/*
 * Descriptors received with SCM_RIGHTS are closed on every path.
 *
 * Mapper side: 10000 hostile messages of every kind (hostile_flood()), each
 * carrying descriptors, against a library mapper (the server code the QEMU
 * device compiles too).  Reducer side: 10000 hostile answers to a HELLO,
 * each carrying descriptors, and a lying mapper that answers every join with
 * an empty message full of descriptors.  The process's descriptor count is
 * the same after as before, and its resident set within 1 MiB.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "client.h"
#include "fds.h"
#include "sock.h"
#include "hostile.h"
#include "sivshm.h"

#define MESSAGES	10000
#define SLICE		(64 * 1024)

/* The mapper may still be closing the last connection: give it 2 s. */
static void expect_fds(int want, const char *what)
{
	int now = open_fd_count();

	for (int i = 0; i < 200 && now != want; i++) {
		usleep(10000);
		now = open_fd_count();
	}
	T_ASSERT(now == want, "%s: %d descriptors before, %d after", what,
		 want, now);
}

/*
 * The count once the mapper thread is idle: it closes a dropped reducer's
 * eventfds just after its connection, which the flood waits for.
 */
static int settled_fd_count(void)
{
	int last = open_fd_count(), same = 0;

	for (int i = 0; i < 200 && same < 10; i++) {
		int now;

		usleep(10000);
		now = open_fd_count();
		same = now == last ? same + 1 : 0;
		last = now;
	}
	return last;
}

static void expect_rss(long before, const char *what)
{
#if defined(__SANITIZE_ADDRESS__)
	(void)before;
	printf("%s: RSS not compared under AddressSanitizer\n", what);
#else
	long grew = rss_kib() - before;

	T_ASSERT(grew < 1024, "%s: RSS grew by %ld KiB", what, grew);
#endif
}

static void mapper_side(void)
{
	char path[108];
	struct sivshm_mapper_opts opts = {
		.socket_path = path, .name = "flood", .size = 4 << 20,
		.dir = "/dev/shm",
		.nreducers = 3, .nvectors = 2,
	};
	struct sivshm *mapper, *busy;
	int fds0;
	long rss0;

	snprintf(path, sizeof(path), "/tmp/sivshm-test-flood-%d.sock",
		 getpid());
	T_EQ(sivshm_mapper_open(&mapper, &opts), 0);
	T_EQ(sivshm_reducer_open(&busy, path, 1, 2, 0, 2000), 0);
	hostile_flood(path, 3, 2, 1, 2, 2 * HOSTILE_KINDS);	/* warm up */
	fds0 = settled_fd_count();
	rss0 = rss_kib();
	hostile_flood(path, 3, 2, 1, 2, MESSAGES);
	expect_fds(fds0, "mapper");
	expect_rss(rss0, "mapper");
	/* And it still welcomes and keeps its reducer. */
	T_EQ(sivshm_wait_peers(mapper, 1ULL << 1, 0), 0);
	sivshm_close(busy);
	sivshm_close(mapper);
	unlink(path);
	printf("mapper: %d hostile messages, descriptors flat at %d\n",
	       MESSAGES, fds0);
}

static int slot(size_t size)
{
	return slot_memfd(size, PROTO_SLOT_SEALS);
}

/* One wrong answer of kind @kind (the last kind is a good WELCOME). */
#define ANSWER_KINDS	10
static void answer_one(unsigned int kind)
{
	struct proto_msg m = {
		.version = PROTO_VERSION, .type = PROTO_WELCOME,
		.welcome = {
			.id = 1, .nreducers = 2, .region_size = 3 * SLICE,
			.slice_size = SLICE, .slot_offset = SLICE,
			.nvectors = 1,
		},
	};
	uint8_t buf[PROTO_BUF_SIZE * 2] = { 0 };
	char reason[PROTO_REASON_LEN];
	int sv[2], fds[20], got[PROTO_MAX_FDS], p[2] = { -1, -1 }, err;
	unsigned int nfds = 2;
	size_t len;

	fds[0] = slot(SLICE);
	eventfds(fds + 1, 19);
	switch (kind) {
	case 2:
		m = (struct proto_msg) {
			.version = PROTO_VERSION, .type = PROTO_REFUSE,
			.refuse = { .code = PROTO_E_BUSY, .reason = "no" },
		};
		break;
	case 3:
		close(fds[0]);
		fds[0] = slot(SLICE / 2);
		break;
	case 4:
		T_EQ(pipe2(p, O_CLOEXEC), 0);
		close(fds[1]);
		fds[1] = p[0];
		break;
	case 5:
		nfds = 3;
		break;
	case 6:
		nfds = 20;
		break;
	case 7:
		m.welcome.id = 2;
		m.welcome.slot_offset = 2 * SLICE;
		break;
	}
	len = proto_encode(&m, buf, PROTO_BUF_SIZE);
	if (kind == 0)
		len = 0;
	if (kind == 1)
		memset(buf, 0x5a, len);
	if (kind == 8)
		len = sizeof(buf);
	T_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	raw_send(sv[1], buf, len, fds, nfds);
	proto_close_fds(fds, 20);
	if (p[1] >= 0)
		close(p[1]);
	err = proto_client_recv_welcome(sv[0], 1, 1, &m, got, reason,
					sizeof(reason));
	T_ASSERT((err == 0) == (kind == ANSWER_KINDS - 1),
		 "answer %u: %d (%s)", kind, err, reason);
	if (!err)
		proto_close_fds(got, 2);	/* the caller's to close */
	close(sv[0]);
	close(sv[1]);
}

/* A mapper that answers every HELLO with an empty message and fds. */
static int liar_fd, liar_answers;
static volatile int liar_stop;

static void *liar(void *arg)
{
	(void)arg;
	while (!liar_stop) {
		struct pollfd pfd = { .fd = liar_fd, .events = POLLIN };
		uint8_t buf[PROTO_BUF_SIZE];
		int conn, fds[PROTO_MAX_FDS], out[3];
		unsigned int nfds;

		if (poll(&pfd, 1, 50) != 1)
			continue;
		conn = accept4(liar_fd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0)
			continue;
		pfd.fd = conn;
		if (poll(&pfd, 1, 2000) == 1 &&
		    proto_recv(conn, buf, fds, &nfds) > 0)
			proto_close_fds(fds, nfds);
		out[0] = slot(SLICE);
		eventfds(out + 1, 2);
		raw_send(conn, buf, 0, out, 3);
		proto_close_fds(out, 3);
		liar_answers++;
		close(conn);
	}
	return NULL;
}

static void reducer_side(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct sivshm *r;
	pthread_t t;
	int fds0, err;
	long rss0;

	for (unsigned int i = 0; i < 2 * ANSWER_KINDS; i++)
		answer_one(i % ANSWER_KINDS);
	fds0 = open_fd_count();
	rss0 = rss_kib();
	for (unsigned int i = 0; i < MESSAGES; i++)
		answer_one(i % ANSWER_KINDS);
	expect_fds(fds0, "reducer");
	expect_rss(rss0, "reducer");
	printf("reducer: %d hostile answers, descriptors flat at %d\n",
	       MESSAGES, fds0);

	/* The library's join, retrying against a mapper that lies. */
	snprintf(sa.sun_path, sizeof(sa.sun_path),
		 "/tmp/sivshm-test-liar-%d.sock", getpid());
	liar_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	T_ASSERT(liar_fd >= 0, "socket");
	T_EQ(bind(liar_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	T_EQ(listen(liar_fd, 8), 0);
	T_EQ(pthread_create(&t, NULL, liar, NULL), 0);
	fds0 = open_fd_count();
	err = sivshm_reducer_open(&r, sa.sun_path, 1, 2, 0, 1000);
	liar_stop = 1;
	pthread_join(t, NULL);
	T_EQ(err, -ETIMEDOUT);
	T_ASSERT(liar_answers >= 10, "only %d lies told", liar_answers);
	expect_fds(fds0, "reducer joining a liar");
	printf("reducer: %d lying answers to its joins, descriptors flat\n",
	       liar_answers);
	close(liar_fd);
	unlink(sa.sun_path);
}

int main(void)
{
	mapper_side();
	reducer_side();
	return 0;
}
