// SPDX-License-Identifier: MIT
/*
 * charcount over TCP, reducer: receive each chunk whole, as a slot would
 * hold it, count one byte in it and send the count back.
 *
 *   charcount-tcp-reducer --port P --id J [--timeout MS] [--addr A.B.C.D]
 *
 * --addr is the mapper's IPv4 address (loopback by default).
 *
 * The protocol is in tcp-mapper.c.  The mapper is trusted, but a capacity
 * above TCP_MAX_CHUNK, a chunk longer than the capacity or a byte above 255
 * is refused all the same.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "charcount.h"
#include "tcp-wire.h"


static int setup(int fd, int timeout_ms)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		return -errno;
	return tcp_set_timeouts(fd, timeout_ms);
}

/* Connect to the mapper, retrying while it is not listening yet. */
static int connect_mapper(struct in_addr addr, uint16_t port, uint32_t id,
			  int timeout_ms)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr = addr,
	};
	uint64_t deadline = cc_now_ns() + timeout_ms * 1000000ULL;
	uint32_t le = htole32(id);
	int fd, err;

	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (!connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
			break;
		err = -errno;
		close(fd);
		if (err != -ECONNREFUSED || cc_now_ns() >= deadline)
			return err;
		usleep(10000);
	}
	err = setup(fd, timeout_ms);
	if (!err)
		err = tcp_send_all(fd, &le, sizeof(le), 0);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/* The chunk capacity, and a buffer for it, faulted in now. */
static int read_capacity(int fd, uint8_t **buf, uint64_t *cap)
{
	uint64_t le;
	int err = tcp_recv_all(fd, &le, sizeof(le));

	if (err)
		return err;
	*cap = le64toh(le);
	if (!*cap || *cap > TCP_MAX_CHUNK)
		return -EPROTO;
	*buf = malloc(*cap);
	if (!*buf)
		return -ENOMEM;
	memset(*buf, 0, *cap);
	return 0;
}

/* Serve chunks until the exit request: 0, or a negative errno. */
static int serve(int fd, uint32_t id)
{
	uint64_t hdr[2], len, ch, count, cap = 0;
	uint8_t *buf = NULL;
	int err;

	err = read_capacity(fd, &buf, &cap);
	while (!err) {
		err = tcp_recv_all(fd, hdr, sizeof(hdr));
		if (err)
			break;
		len = le64toh(hdr[0]);
		ch = le64toh(hdr[1]);
		if (len == TCP_EXIT)
			break;
		if (len > cap || ch > 255) {
			fprintf(stderr, "reducer %u: bad request (%llu bytes)\n",
				id, (unsigned long long)len);
			err = -EPROTO;
			break;
		}
		err = tcp_recv_all(fd, buf, len);
		if (err)
			break;
		count = htole64(cc_count(buf, len, ch));
		err = tcp_send_all(fd, &count, sizeof(count), 0);
	}
	free(buf);
	return err;
}

static void usage(void)
{
	fprintf(stderr, "usage: charcount-tcp-reducer --port P --id J "
		"[--timeout MS] [--addr A.B.C.D]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "id", required_argument, NULL, 'i' },
		{ "timeout", required_argument, NULL, 't' },
		{ "addr", required_argument, NULL, 'a' },
		{ 0 }
	};
	struct in_addr addr = { .s_addr = htonl(INADDR_LOOPBACK) };
	unsigned long port = 0, id = 0;
	int timeout_ms = 60000, c, fd, err;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p': port = strtoul(optarg, NULL, 0); break;
		case 'i': id = strtoul(optarg, NULL, 0); break;
		case 't': timeout_ms = atoi(optarg); break;
		case 'a':
			if (inet_pton(AF_INET, optarg, &addr) != 1)
				usage();
			break;
		default: usage();
		}
	}
	if (optind != argc || !port || port > 65535 || !id || id > UINT32_MAX ||
	    timeout_ms <= 0)
		usage();

	fd = connect_mapper(addr, port, id, timeout_ms);
	if (fd < 0) {
		fprintf(stderr, "reducer %lu: cannot connect: %s\n", id,
			strerror(-fd));
		return 1;
	}
	err = serve(fd, id);
	close(fd);
	if (err) {
		fprintf(stderr, "reducer %lu: %s\n", id, strerror(-err));
		return 1;
	}
	return 0;
}
