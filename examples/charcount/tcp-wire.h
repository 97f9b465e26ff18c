/* SPDX-License-Identifier: MIT */
/*
 * The TCP baseline's wire, shared by charcount-tcp-mapper and
 * charcount-tcp-reducer: the reducer sends its id (u32 LE); the mapper
 * answers with the chunk capacity (u64 LE); then, per round, a header
 * (length u64 LE, byte u64 LE) and the chunk, answered by a count (u64 LE).
 * A length of TCP_EXIT ends the job.
 */
#ifndef CHARCOUNT_TCP_WIRE_H
#define CHARCOUNT_TCP_WIRE_H

#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>

/* The largest chunk; the reducer refuses more. */
#define TCP_MAX_CHUNK	(1ULL << 30)
#define TCP_EXIT	UINT64_MAX

static inline int tcp_send_all(int fd, const void *buf, size_t len, int flags)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, flags | MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		p += n;
		len -= n;
	}
	return 0;
}

static inline int tcp_recv_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= n;
	}
	return 0;
}

/* Bound every send and receive on @fd to @timeout_ms. */
static inline int tcp_set_timeouts(int fd, int timeout_ms)
{
	struct timeval tv = {
		.tv_sec = timeout_ms / 1000,
		.tv_usec = (timeout_ms % 1000) * 1000,
	};

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		return -errno;
	return 0;
}

#endif
