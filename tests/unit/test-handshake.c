// SPDX-License-Identifier: MIT
/*
 * The mapper refuses, with a logged reason and without disturbing the
 * connected peers: a wrong version, a duplicate id, id 0 or above N, a
 * truncated or oversized message, garbage, a wrong number or kind of fds, a
 * vector count mismatch, a silent peer (timeout) and floods of connections
 * and of messages.  Reducer 1 stays connected throughout and is checked to
 * still exchange interrupts at the end.
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "hostile.h"
#include "client.h"
#include "fds.h"
#include "proto.h"
#include "server.h"
#include "sivshm.h"

#define NRED	3
#define NVEC	2

static char sock_path[108];
static int refusals_logged;

static void count_log(const char *msg)
{
	if (strstr(msg, "refused") || strstr(msg, "dropped") ||
	    strstr(msg, "left"))
		refusals_logged++;
	fprintf(stderr, "  log: %s\n", msg);
}

static void ping_pong(struct sivshm *mapper, struct sivshm *red, uint32_t id)
{
	uint32_t peer = 99;

	T_EQ(sivshm_notify(mapper, id, 1), 0);
	T_EQ(sivshm_wait(red, 1, 2000, &peer), 0);
	T_EQ(peer, 0);
	T_EQ(sivshm_notify(red, 0, 0), 0);
	T_EQ(sivshm_wait(mapper, 0, 2000, &peer), 0);
	T_EQ(peer, id);
	T_EQ(sivshm_wait(mapper, 0, 0, &peer), -ETIMEDOUT);
}

int main(void)
{
	struct sivshm_mapper_opts opts = {
		.socket_path = sock_path, .name = "handshake",
		.size = 4 << 20, .nreducers = NRED, .nvectors = NVEC,
	};
	struct sivshm *mapper, *r1, *r2, *dup;
	uint8_t buf[PROTO_BUF_SIZE * 2];
	int efd[64], fd, conns[PROTO_MAX_PENDING + 24];
	uint64_t peers;
	time_t t0;

	snprintf(sock_path, sizeof(sock_path), "/tmp/sivshm-test-hs-%d.sock",
		 getpid());
	sivshm_set_logger(count_log);

	/* A file that is not a socket is never replaced. */
	fd = open(sock_path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	T_ASSERT(fd >= 0, "create %s", sock_path);
	close(fd);
	T_EQ(sivshm_mapper_open(&mapper, &opts), -EADDRINUSE);
	T_EQ(access(sock_path, F_OK), 0);
	unlink(sock_path);

	T_EQ(sivshm_mapper_open(&mapper, &opts), 0);
	T_EQ(sivshm_reducer_open(&r1, sock_path, 1, NVEC, 0, 2000), 0);
	T_EQ(sivshm_wait_peers(mapper, 1 << 1, 2000), 0);
	ping_pong(mapper, r1, 1);

	/* duplicate id, through the library */
	T_EQ(sivshm_reducer_open(&dup, sock_path, 1, NVEC, 0, 2000),
	     -EADDRINUSE);

	/* Every malformed or unwelcome HELLO, while reducer 1 is connected. */
	hostile_refusals(sock_path, NRED, NVEC, 1, 2);

	/* A silent peer is dropped at the HELLO timeout. */
	fd = raw_connect_to(sock_path);
	t0 = time(NULL);
	{
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		T_ASSERT(poll(&pfd, 1, PROTO_HELLO_TIMEOUT_MS + 2000) == 1,
			 "silent peer not dropped");
		T_ASSERT(recv(fd, buf, sizeof(buf), 0) == 0,
			 "silent peer got data");
		close(fd);
		printf("silent peer dropped after ~%ld s\n",
		       (long)(time(NULL) - t0));
	}

	/* A flood of connections: those beyond the pending limit are refused. */
	for (int i = 0; i < PROTO_MAX_PENDING + 24; i++)
		conns[i] = raw_connect_to(sock_path);
	{
		int busy = 0;

		for (int i = 0; i < PROTO_MAX_PENDING + 24; i++) {
			struct pollfd pfd = { .fd = conns[i], .events = POLLIN };

			if (poll(&pfd, 1, 200) == 1 &&
			    recv(conns[i], buf, sizeof(buf), 0) == PROTO_REFUSE_SIZE)
				busy++;
			close(conns[i]);
		}
		T_ASSERT(busy >= 24, "only %d of %d flood connections refused",
			 busy, PROTO_MAX_PENDING + 24);
		printf("connection flood: %d refused as busy\n", busy);
	}

	/* A welcomed peer that keeps talking is dropped; its slot is free. */
	{
		struct proto_msg w;
		int wfds[PROTO_MAX_FDS];
		char reason[PROTO_REASON_LEN];
		struct pollfd pfd;
		ssize_t n;

		fd = raw_connect_to(sock_path);
		eventfds(efd, NVEC);
		T_EQ(proto_client_hello(fd, 3, NVEC, efd, 2000, &w, wfds,
					reason, sizeof(reason)), 0);
		proto_close_fds(wfds, 1 + NVEC);
		T_EQ(sivshm_wait_peers(mapper, 1 << 3, 2000), 0);
		hello_bytes(buf, 3, NVEC);
		for (int i = 0; i < 1000; i++)
			if (send(fd, buf, PROTO_HELLO_SIZE,
				 MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
				break;
		pfd = (struct pollfd) { .fd = fd, .events = POLLIN };
		T_ASSERT(poll(&pfd, 1, 3000) == 1, "talkative peer kept");
		/* Hung up on with unread data: end of stream or a reset. */
		n = recv(fd, buf, sizeof(buf), 0);
		T_ASSERT(n == 0 || (n < 0 && errno == ECONNRESET),
			 "talkative peer not hung up on (%zd)", n);
		close(fd);
		proto_close_fds(efd, NVEC);
		printf("a welcomed peer that kept talking was dropped\n");
	}
	T_EQ(sivshm_reducer_open(&r2, sock_path, 3, NVEC, 0, 2000), 0);
	ping_pong(mapper, r2, 3);
	sivshm_close(r2);

	/*
	 * A reducer whose eventfd blocks and is full cannot stall the mapper's
	 * notify (SIGALRM would end the test if it did).
	 */
	{
		struct proto_msg w;
		int wfds[PROTO_MAX_FDS];
		char reason[PROTO_REASON_LEN];
		uint64_t full = 0xfffffffffffffffeULL;

		fd = raw_connect_to(sock_path);
		for (int v = 0; v < NVEC; v++) {
			efd[v] = eventfd(0, EFD_CLOEXEC);	/* blocking */
			T_EQ(write(efd[v], &full, sizeof(full)), sizeof(full));
		}
		T_EQ(proto_client_hello(fd, 3, NVEC, efd, 2000, &w, wfds,
					reason, sizeof(reason)), 0);
		proto_close_fds(wfds, 1 + NVEC);
		alarm(5);
		T_EQ(sivshm_notify(mapper, 3, 0), 0);
		alarm(0);
		close(fd);
		proto_close_fds(efd, NVEC);
		printf("a full, blocking eventfd did not stall the mapper\n");
	}

	/* A reducer that leaves and comes back finds its slot as it left it. */
	T_EQ(sivshm_reducer_open(&r2, sock_path, 2, NVEC, 0, 2000), 0);
	T_EQ(sivshm_wait_peers(mapper, 1 << 2, 2000), 0);
	*(volatile uint64_t *)sivshm_slot(r2, 2) = 0x1234;
	sivshm_close(r2);
	T_EQ(sivshm_reducer_open(&r2, sock_path, 2, NVEC, 0, 2000), 0);
	T_EQ(*(volatile uint64_t *)sivshm_slot(r2, 2), 0x1234);
	ping_pong(mapper, r2, 2);
	sivshm_close(r2);

	/* Reducer 1 was never disturbed. */
	T_EQ(sivshm_peers(mapper, &peers), 0);
	T_ASSERT(peers & (1 << 1), "reducer 1 lost its connection");
	ping_pong(mapper, r1, 1);
	T_ASSERT(refusals_logged >= 12, "only %d refusals logged",
		 refusals_logged);

	sivshm_close(r1);
	sivshm_close(mapper);
	unlink(sock_path);
	puts("handshake: every refusal refused, reducer 1 undisturbed");
	return 0;
}
