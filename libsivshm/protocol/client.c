// SPDX-License-Identifier: MIT
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "client.h"
#include "cred.h"
#include "fds.h"
#include "sock.h"

int proto_client_connect(const char *path, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int64_t deadline = proto_now_ms() + timeout_ms;
	int backoff_ms = PROTO_CONNECT_RETRY_MIN_MS;
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	for (;;) {
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		err = errno;
		close(fd);
		if (err != ENOENT && err != ECONNREFUSED && err != EAGAIN)
			return -err;
		if (proto_now_ms() >= deadline)
			return -ETIMEDOUT;
		/* A mapper starting now is up in a few ms: back off from 1 ms. */
		usleep(backoff_ms * 1000);
		if (backoff_ms < PROTO_CONNECT_RETRY_MAX_MS)
			backoff_ms *= 2;
	}
}

static int check_welcome(const struct proto_msg *msg, uint32_t id,
			 uint32_t nvectors, const int *fds, const char **why)
{
	if (msg->welcome.id != id || msg->welcome.nvectors != nvectors) {
		*why = "WELCOME for another id or vector count";
		return -EPROTO;
	}
	/* Sealed, or the mapper could truncate it under us. */
	if (proto_slot_check(fds[0], -1, msg->welcome.slice_size, why))
		return -EPROTO;
	for (uint32_t v = 0; v < nvectors; v++) {
		if (!proto_fd_is_eventfd(fds[1 + v])) {
			*why = "an fd from the mapper is not an eventfd";
			return -EPROTO;
		}
	}
	return 0;
}

int proto_client_send_hello(int sock, uint32_t id, uint32_t nvectors,
			    const int *efds, int slot_fd)
{
	struct proto_msg hello = {
		.version = PROTO_VERSION,
		.type = PROTO_HELLO,
		.hello = { .id = id, .nvectors = nvectors },
	};
	int fds[PROTO_MAX_FDS];

	if (nvectors < 1 || nvectors > SIVSHM_MAX_VECTORS)
		return -EINVAL;
	memcpy(fds, efds, sizeof(int) * nvectors);
	if (slot_fd >= 0) {
		hello.hello.features = PROTO_F_SLOT;
		fds[nvectors] = slot_fd;
	}
	return proto_send(sock, &hello, fds);
}

int proto_client_recv_welcome(int sock, uint32_t id, uint32_t nvectors,
			      struct proto_msg *welcome, int *fds,
			      char *reason, size_t reason_len)
{
	uint8_t buf[PROTO_BUF_SIZE];
	const char *why = "";
	unsigned int nfds;
	int n, err;

	if (reason_len)
		reason[0] = '\0';
	n = proto_recv(sock, buf, fds, &nfds);
	if (n == 0)
		return -ECONNRESET;
	if (n < 0)
		return n;
	err = proto_decode(buf, n, nfds, welcome, &why);
	if (!err && welcome->type == PROTO_REFUSE) {
		snprintf(reason, reason_len, "%s", welcome->refuse.reason);
		return -proto_refusal_errno(welcome->refuse.code);
	}
	if (!err && welcome->type != PROTO_WELCOME) {
		why = "expected WELCOME";
		err = -EPROTO;
	}
	if (!err)
		err = check_welcome(welcome, id, nvectors, fds, &why);
	if (err) {
		proto_close_fds(fds, nfds);
		snprintf(reason, reason_len, "%s", why);
		return err;
	}
	return 0;
}

int proto_client_hello(int sock, uint32_t id, uint32_t nvectors,
		       const int *efds, int timeout_ms,
		       struct proto_msg *welcome, int *fds,
		       char *reason, size_t reason_len)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	int n, err;

	if (reason_len)
		reason[0] = '\0';
	err = proto_client_send_hello(sock, id, nvectors, efds, -1);
	if (err)
		return err;
	n = poll(&pfd, 1, timeout_ms);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ETIMEDOUT;
	return proto_client_recv_welcome(sock, id, nvectors, welcome, fds,
					 reason, reason_len);
}

int proto_client_check_mapper(int sock, const struct proto_cred *want,
			      char *reason, size_t reason_len)
{
	struct proto_cred got;
	int err;

	if (!want)
		return 0;
	err = proto_cred_get(sock, &got);
	if (err) {
		snprintf(reason, reason_len, "cannot read the mapper's "
			 "credentials: %s", strerror(-err));
		return -EACCES;
	}
	if (!proto_cred_allows(want, &got)) {
		snprintf(reason, reason_len, "the mapper runs as uid %u gid %u",
			 got.uid, got.gid);
		return -EACCES;
	}
	return 0;
}

int proto_client_join(const char *path, uint32_t id, uint32_t nvectors,
		      const int *efds, const struct proto_cred *mapper,
		      int timeout_ms, struct proto_msg *welcome, int *fds,
		      char *reason, size_t reason_len)
{
	int64_t deadline = proto_now_ms() + timeout_ms;
	int sock, err, left;

	for (;;) {
		left = (int)(deadline - proto_now_ms());
		if (left <= 0)
			return -ETIMEDOUT;
		sock = proto_client_connect(path, left);
		if (sock < 0)
			return sock;
		err = proto_client_check_mapper(sock, mapper, reason,
						reason_len);
		if (err) {
			close(sock);
			return err;
		}
		err = proto_client_hello(sock, id, nvectors, efds, left,
					 welcome, fds, reason, reason_len);
		if (!err)
			return sock;
		close(sock);
		if (err != -EAGAIN && err != -ECONNRESET && err != -EPIPE)
			return err;
		usleep(PROTO_JOIN_RETRY_MS * 1000);
	}
}
