// SPDX-License-Identifier: MIT
/*
 * charcount over TCP, the baseline for a network between VMs (virtio-net)
 * and between hosts: the same rounds as charcount-mapper, sent to the
 * reducers over loopback, or from the IPv4 address --addr.
 *
 *   charcount-tcp-mapper --port P --reducers N --size BYTES
 *                        --random BYTES [--seed S] [--char C]
 *                        [--threads T] [--timeout MS] [--addr A.B.C.D]
 *
 * --size is the shared region sivshm would use: a chunk holds what a slot
 * would, size / (N + 1) rounded down to 4096 less the 128-byte mailbox, so
 * the rounds are identical.  Each reducer connects and sends its id (u32);
 * the mapper answers with the chunk capacity (u64), so that the reducer can
 * allocate and fault in its buffer before the job, as a slot would be.
 * Then, per chunk, the mapper sends a header (u64 length, u64 byte) and the
 * data, and the reducer answers with the count (u64); a length of
 * UINT64_MAX tells it to exit.  All integers are little-endian.
 *
 * Xfer is the time spent in send(), Resp the time then waiting for the
 * counts; each is summed per thread and the slowest thread's figure is
 * reported.  ready_ms is the time from listen() until every reducer is in.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "charcount.h"
#include "tcp-wire.h"
#include "sivshm.h"

/* How long a new connection may take to say who it is. */
#define TCP_HELLO_MS	5000

struct job {
	struct cc_job cc;
	int fd[SIVSHM_MAX_REDUCERS + 1];	/* reducer j's connection */
};

/* Reducer @j's connection. */
static int conn(struct cc_job *cc, uint32_t j)
{
	return cc_container_of(cc, struct job, cc)->fd[j];
}

static int send_chunk(int fd, uint64_t len, uint8_t ch, const void *data)
{
	uint64_t hdr[2] = { htole64(len), htole64(ch) };
	int err;

	err = tcp_send_all(fd, hdr, sizeof(hdr), len && len != TCP_EXIT ?
		       MSG_MORE : 0);
	if (err || len == TCP_EXIT || !len)
		return err;
	return tcp_send_all(fd, data, len, 0);
}

static int tcp_send(struct cc_job *cc, uint32_t j, uint64_t seq,
		    const uint8_t *src, uint64_t len)
{
	return send_chunk(conn(cc, j), len, cc->ch, src);
}

/* Reducer @j's count; the pool bounds it. */
static int tcp_recv(struct cc_job *cc, uint32_t j, uint64_t seq,
		    uint64_t *count)
{
	uint64_t le;
	int err = tcp_recv_all(conn(cc, j), &le, sizeof(le));

	if (!err)
		*count = le64toh(le);
	return err;
}

static void tcp_stop(struct cc_job *cc, uint32_t j, uint64_t seq)
{
	send_chunk(conn(cc, j), TCP_EXIT, 0, NULL);
}

static const struct cc_transport tcp_ops = {
	.send = tcp_send,
	.recv = tcp_recv,
	.stop = tcp_stop,
};

static int listen_on(struct in_addr addr, uint16_t port)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr = addr,
	};
	int one = 1, fd, err;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(fd, SOMAXCONN)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* With --port 0 the kernel picks one: say which. */
static void print_port(int lfd)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	if (getsockname(lfd, (struct sockaddr *)&sin, &len))
		return;
	printf("charcount-tcp: listening on 127.0.0.1:%u\n",
	       ntohs(sin.sin_port));
	fflush(stdout);
}

/* Read a new connection's id; 1..N and not yet taken, or it is refused. */
static int hello(struct job *job, int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint64_t cap = htole64(job->cc.cap);
	int one = 1, err;
	uint32_t le, j;

	if (poll(&pfd, 1, TCP_HELLO_MS) != 1)
		return -ETIMEDOUT;
	err = tcp_set_timeouts(fd, TCP_HELLO_MS);
	if (!err)
		err = tcp_recv_all(fd, &le, sizeof(le));
	if (err)
		return err;
	j = le32toh(le);
	if (j < 1 || j > job->cc.nreducers || job->fd[j] >= 0) {
		fprintf(stderr, "charcount-tcp: refusing reducer id %u\n", j);
		return -EPROTO;
	}
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		return -errno;
	err = tcp_set_timeouts(fd, job->cc.timeout_ms);
	if (!err)
		err = tcp_send_all(fd, &cap, sizeof(cap), 0);
	if (err)
		return err;
	job->fd[j] = fd;
	return 0;
}

static int accept_reducers(struct job *job, int lfd)
{
	uint64_t deadline = cc_now_ns() + job->cc.timeout_ms * 1000000ULL;
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	uint32_t in = 0;

	while (in < job->cc.nreducers) {
		uint64_t now = cc_now_ns();
		int fd, ret;

		if (now >= deadline)
			return -ETIMEDOUT;
		ret = poll(&pfd, 1, (deadline - now) / 1000000 + 1);
		if (ret < 0 && errno != EINTR)
			return -errno;
		if (ret <= 0)
			continue;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return -errno;
		}
		if (hello(job, fd)) {
			close(fd);
			continue;
		}
		in++;
	}
	return 0;
}

/* After the exit request: wait until each reducer has closed its end. */
static void drain(struct job *job)
{
	char c;

	for (uint32_t j = 1; j <= job->cc.nreducers; j++) {
		if (job->fd[j] < 0)
			continue;
		shutdown(job->fd[j], SHUT_WR);
		tcp_set_timeouts(job->fd[j], 5000);
		while (recv(job->fd[j], &c, 1, 0) > 0)
			;
		close(job->fd[j]);
		job->fd[j] = -1;
	}
}

static void usage(void)
{
	fprintf(stderr,
		"usage: charcount-tcp-mapper --port P --reducers N --size BYTES\n"
		"         --random BYTES [--seed S] [--char C] [--threads T]\n"
		"         [--timeout MS] [--addr A.B.C.D]\n");
	exit(2);
}

static void parse_args(int argc, char **argv, struct cc_job *job,
		       uint64_t *size, unsigned long *port,
		       struct in_addr *addr)
{
	static const struct option opts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "reducers", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 'z' },
		{ "random", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 'S' },
		{ "char", required_argument, NULL, 'c' },
		{ "threads", required_argument, NULL, 't' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "addr", required_argument, NULL, 'a' },
		{ 0 }
	};
	int c;

	addr->s_addr = htonl(INADDR_LOOPBACK);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p': *port = strtoul(optarg, NULL, 0); break;
		case 'n': job->nreducers = strtoul(optarg, NULL, 0); break;
		case 'z': *size = cc_parse_size(optarg); break;
		case 'r': job->total = cc_parse_size(optarg); break;
		case 'S': job->seed = strtoull(optarg, NULL, 0); break;
		case 'c': job->ch = optarg[0]; break;
		case 't': job->nthreads = strtoul(optarg, NULL, 0); break;
		case 'T': job->timeout_ms = atoi(optarg); break;
		case 'a':
			if (inet_pton(AF_INET, optarg, addr) != 1)
				usage();
			break;
		default: usage();
		}
	}
	if (optind != argc || !job->nreducers ||
	    job->nreducers > SIVSHM_MAX_REDUCERS || !*size || !job->total ||
	    *port > 65535 || job->timeout_ms <= 0)
		usage();
}

/* The chunk a slot would hold, and the rounds; 0, or -EINVAL if none fits. */
static int geometry(struct cc_job *job, uint64_t size)
{
	uint64_t slice = size / (job->nreducers + 1) & ~4095ULL;

	if (slice <= SIVSHM_MBOX_SIZE || slice - SIVSHM_MBOX_SIZE > TCP_MAX_CHUNK) {
		fprintf(stderr, "charcount-tcp: a %llu-byte slice is out of "
			"range\n", (unsigned long long)slice);
		return -EINVAL;
	}
	job->cap = slice - SIVSHM_MBOX_SIZE;
	cc_plan(job);
	return 0;
}

int main(int argc, char **argv)
{
	struct job job = {
		.cc = { .prog = "charcount-tcp", .ops = &tcp_ops, .ch = 'a',
			.seed = 1, .timeout_ms = 60000 },
	};
	struct cc_job *cc = &job.cc;
	uint64_t size = 0, t_listen, t_ready, t_end;
	struct in_addr addr;
	unsigned long port = 0;
	int lfd, err;

	parse_args(argc, argv, cc, &size, &port, &addr);
	if (geometry(cc, size))
		return 1;
	for (uint32_t j = 0; j <= SIVSHM_MAX_REDUCERS; j++)
		job.fd[j] = -1;

	lfd = listen_on(addr, port);
	if (lfd < 0) {
		fprintf(stderr, "charcount-tcp: cannot listen on port %lu: %s\n",
			port, strerror(-lfd));
		return 1;
	}
	t_listen = cc_service_t0(cc_now_ns());
	if (!port)
		print_port(lfd);
	err = accept_reducers(&job, lfd);
	close(lfd);
	if (err) {
		fprintf(stderr, "charcount-tcp: not every reducer connected: "
			"%s\n", strerror(-err));
		drain(&job);
		return 1;
	}
	t_ready = cc_now_ns();
	printf("charcount-tcp: %u reducers ready in %.1f ms; %llu bytes in "
	       "%llu rounds of %llu-byte chunks, %u threads\n",
	       cc->nreducers, (t_ready - t_listen) / 1e6,
	       (unsigned long long)cc->total, (unsigned long long)cc->rounds,
	       (unsigned long long)cc->cap, cc->nthreads);

	err = cc_run(cc);
	t_end = cc_now_ns();
	drain(&job);
	return cc_report(cc, "tcp", t_end - t_ready, t_ready - t_listen,
			 err != 0);
}
