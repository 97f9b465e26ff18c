// SPDX-License-Identifier: MIT
/*
 * The mapper's side of the SIVSHM handshake.  No distributor: each reducer
 * connects here, proves nothing but a free id in range and a well-formed
 * HELLO carrying its eventfds, and gets back the fd of its own slot and the
 * mapper's eventfds for it.  Whatever else arrives is refused with a logged
 * reason and never disturbs the connected peers.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cred.h"
#include "fds.h"
#include "server.h"
#include "sock.h"

static void __attribute__((format(printf, 2, 3)))
server_log(struct proto_server *srv, const char *fmt, ...)
{
	va_list ap;

	if (!srv->log)
		return;
	va_start(ap, fmt);
	srv->log(srv->opaque, fmt, ap);
	va_end(ap);
}

int proto_server_init(struct proto_server *srv,
		      const struct sivshm_geometry *geo, uint32_t nvectors,
		      const int *slot_fd)
{
	uint32_t j, v;
	int err;

	memset(srv, 0, sizeof(*srv));
	srv->listen_fd = -1;
	for (j = 0; j <= SIVSHM_MAX_REDUCERS; j++) {
		srv->allow[j].uid = srv->allow[j].gid = PROTO_CRED_ANY;
		srv->peer[j].conn = -1;
		for (v = 0; v < SIVSHM_MAX_VECTORS; v++) {
			srv->peer[j].in_fd[v] = -1;
			srv->peer[j].out_fd[v] = -1;
		}
	}
	for (j = 0; j < PROTO_MAX_PENDING; j++)
		srv->pending[j].conn = -1;
	if (nvectors < 1 || nvectors > SIVSHM_MAX_VECTORS)
		return -EINVAL;
	srv->geo = *geo;
	srv->nvectors = nvectors;
	srv->slot_fd = slot_fd;
	srv->hello_timeout_ms = PROTO_HELLO_TIMEOUT_MS;

	for (j = 1; j <= geo->nreducers; j++) {
		for (v = 0; v < nvectors; v++) {
			int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

			if (fd < 0) {
				err = -errno;
				proto_server_fini(srv);
				return err;
			}
			srv->peer[j].in_fd[v] = fd;
		}
	}
	return 0;
}

int proto_server_listen(struct proto_server *srv, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int probe;

		if (errno != EADDRINUSE) {
			err = -errno;
			goto err_close;
		}
		/* Replace a socket file only if nobody answers on it. */
		probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (probe < 0) {
			err = -errno;
			goto err_close;
		}
		if (connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0 ||
		    errno != ECONNREFUSED || lstat(path, &st) < 0 ||
		    !S_ISSOCK(st.st_mode)) {
			close(probe);
			err = -EADDRINUSE;
			goto err_close;
		}
		close(probe);
		unlink(path);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			err = -errno;
			goto err_close;
		}
	}
	if (listen(fd, PROTO_LISTEN_BACKLOG) < 0) {
		err = -errno;
		goto err_close;
	}
	srv->listen_fd = fd;
	return 0;

err_close:
	close(fd);
	return err;
}

static void server_refuse(struct proto_server *srv, int conn, uint32_t code,
			  const char *why)
{
	struct proto_msg msg = {
		.version = PROTO_VERSION,
		.type = PROTO_REFUSE,
		.refuse.code = code,
	};

	snprintf(msg.refuse.reason, sizeof(msg.refuse.reason), "%s", why);
	server_log(srv, "refused a peer: %s", why);
	/* Best effort: a peer that does not read its refusal loses nothing. */
	proto_send(conn, &msg, NULL);
	close(conn);
}

static void peer_drop(struct proto_server *srv, uint32_t id, const char *why)
{
	struct proto_peer *p = &srv->peer[id];

	if (why)
		server_log(srv, "reducer %u dropped: %s", id, why);
	close(p->conn);
	p->conn = -1;
	/* The owner may still hold the eventfds (QEMU's ioeventfds). */
	if (srv->peer_changed)
		srv->peer_changed(srv->opaque, id, 0);
	proto_close_fds(p->out_fd, srv->nvectors);
}

static void pending_free(struct proto_pending *pend, int close_conn)
{
	if (close_conn)
		close(pend->conn);
	pend->conn = -1;
}

/* Check a HELLO against the mapper's state; returns a refusal code or 0. */
static uint32_t hello_check(struct proto_server *srv, int conn,
			    const struct proto_msg *msg, const int *fds,
			    const char **why)
{
	uint32_t id = msg->hello.id;
	struct proto_cred cred;

	if (msg->type != PROTO_HELLO) {
		*why = "expected HELLO";
		return PROTO_E_MALFORMED;
	}
	if (id == 0 || id > srv->geo.nreducers) {
		*why = "reducer id out of range";
		return PROTO_E_ID_RANGE;
	}
	if (srv->remote & 1ull << id) {
		*why = "this id joins over RDMA only";
		return PROTO_E_REMOTE;
	}
	/* Before anything is sent, and before the id's state is told. */
	if (proto_cred_get(conn, &cred) ||
	    !proto_cred_allows(&srv->allow[id], &cred)) {
		*why = "these credentials may not take this id";
		return PROTO_E_CRED;
	}
	if (srv->peer[id].conn >= 0) {
		*why = "a reducer with this id is connected";
		return PROTO_E_ID_BUSY;
	}
	if (msg->hello.nvectors != srv->nvectors) {
		*why = "vector count differs from the mapper's";
		return PROTO_E_VECTORS;
	}
	for (uint32_t v = 0; v < msg->hello.nvectors; v++) {
		if (!proto_fd_is_eventfd(fds[v])) {
			*why = "an fd is not an eventfd";
			return PROTO_E_FDS;
		}
	}
	return 0;
}

static int same_file(int a, int b)
{
	struct stat sa, sb;

	return !fstat(a, &sa) && !fstat(b, &sb) && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/*
 * Reducer @id handed back the slot @fd it holds.  Once a slot has gone to a
 * reducer, the one it holds is ours: only a slot given to nobody yet can be
 * replaced.  Takes @fd; returns a refusal code, or 0.
 */
static uint32_t server_take_slot(struct proto_server *srv, uint32_t id,
				 int fd, const char **why)
{
	int err;

	if (!srv->adopt_slot || (srv->given & 1ull << id)) {
		close(fd);
		return 0;
	}
	if (proto_slot_check(fd, srv->slot_fd[id], srv->geo.slice_size, why)) {
		close(fd);
		return PROTO_E_FDS;
	}
	/*
	 * One file in two slots would show one reducer what the mapper
	 * writes for another: a slot handed back must be none of ours.
	 */
	for (uint32_t j = 0; j <= srv->geo.nreducers; j++) {
		if (j != id && same_file(fd, srv->slot_fd[j])) {
			close(fd);
			*why = "the slot is another slot of this mapper";
			return PROTO_E_FDS;
		}
	}
	if (same_file(fd, srv->slot_fd[id])) {
		close(fd);			/* ours already */
		srv->given |= 1ull << id;
		return 0;
	}
	err = srv->adopt_slot(srv->opaque, id, fd);
	if (err) {
		server_log(srv, "reducer %u: cannot take back its slot: %s", id,
			   strerror(-err));
		close(fd);
	}
	/* Taken or not, it is not replaced twice. */
	srv->given |= 1ull << id;
	return 0;
}

static void server_hello(struct proto_server *srv,
			 struct proto_pending *pend)
{
	uint8_t buf[PROTO_BUF_SIZE];
	int fds[PROTO_MAX_FDS], wfds[PROTO_MAX_FDS];
	struct proto_msg msg, welcome;
	const char *why = "";
	unsigned int nfds;
	uint32_t code, id, v;
	int n, err;

	n = proto_recv(pend->conn, buf, fds, &nfds);
	if (n == -EAGAIN)
		return;
	if (n == 0) {
		server_log(srv, "a peer hung up before HELLO");
		pending_free(pend, 1);
		return;
	}
	if (n == -EMSGSIZE || n == -ETOOMANYREFS || n == -EBADMSG) {
		server_refuse(srv, pend->conn,
			      n == -ETOOMANYREFS ? PROTO_E_FDS : PROTO_E_MALFORMED,
			      n == -EMSGSIZE ? "oversized message" :
			      n == -ETOOMANYREFS ? "too many fds" :
			      "bad ancillary data");
		pending_free(pend, 0);
		return;
	}
	if (n < 0) {
		server_log(srv, "receiving a HELLO failed: %s", strerror(-n));
		pending_free(pend, 1);
		return;
	}

	err = proto_decode(buf, n, nfds, &msg, &why);
	if (err == -EPROTONOSUPPORT)
		code = PROTO_E_VERSION;
	else if (err == -EBADF)
		code = PROTO_E_FDS;
	else if (err)
		code = PROTO_E_MALFORMED;
	else
		code = hello_check(srv, pend->conn, &msg, fds, &why);
	if (!code && (msg.hello.features & PROTO_F_SLOT)) {
		nfds--;
		code = server_take_slot(srv, msg.hello.id, fds[nfds], &why);
	}
	if (code) {
		proto_close_fds(fds, nfds);
		server_refuse(srv, pend->conn, code, why);
		pending_free(pend, 0);
		return;
	}

	id = msg.hello.id;
	welcome = (struct proto_msg) {
		.version = PROTO_VERSION,
		.type = PROTO_WELCOME,
		.welcome = {
			.id = id,
			.nreducers = srv->geo.nreducers,
			.region_size = srv->geo.region_size,
			.slice_size = srv->geo.slice_size,
			.slot_offset = sivshm_slot_offset(&srv->geo, id),
			.nvectors = srv->nvectors,
		},
	};
	wfds[0] = srv->slot_fd[id];
	for (v = 0; v < srv->nvectors; v++)
		wfds[1 + v] = srv->peer[id].in_fd[v];
	err = proto_send(pend->conn, &welcome, wfds);
	if (err) {
		server_log(srv, "reducer %u: sending WELCOME failed: %s", id,
			   strerror(-err));
		proto_close_fds(fds, nfds);
		pending_free(pend, 1);
		return;
	}

	srv->given |= 1ull << id;
	srv->peer[id].conn = pend->conn;
	memcpy(srv->peer[id].out_fd, fds, sizeof(int) * srv->nvectors);
	pending_free(pend, 0);
	if (srv->peer_changed)
		srv->peer_changed(srv->opaque, id, 1);
}

/* A connected reducer never speaks again: data or hang-up ends it. */
static void server_peer_event(struct proto_server *srv, uint32_t id,
			      short revents)
{
	uint8_t buf[PROTO_BUF_SIZE];
	int fds[PROTO_MAX_FDS];
	unsigned int nfds;
	int n;

	if (!(revents & POLLIN)) {
		peer_drop(srv, id, NULL);
		return;
	}
	n = proto_recv(srv->peer[id].conn, buf, fds, &nfds);
	if (n == -EAGAIN)
		return;
	proto_close_fds(fds, n > 0 ? nfds : 0);
	peer_drop(srv, id, n == 0 ? NULL :
		  "unexpected message after the handshake");
}

static void server_accept(struct proto_server *srv)
{
	for (int i = 0; i < PROTO_ACCEPTS_PER_ROUND; i++) {
		struct proto_pending *pend = NULL;
		int conn;

		conn = accept4(srv->listen_fd, NULL, NULL,
			       SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (conn < 0) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				server_log(srv, "accept: %s", strerror(errno));
			return;
		}
		for (int k = 0; k < PROTO_MAX_PENDING; k++) {
			if (srv->pending[k].conn < 0) {
				pend = &srv->pending[k];
				break;
			}
		}
		if (!pend) {
			server_refuse(srv, conn, PROTO_E_BUSY,
				      "too many handshakes in progress");
			continue;
		}
		pend->conn = conn;
		pend->deadline_ms = proto_now_ms() + srv->hello_timeout_ms;
	}
}

unsigned int proto_server_pollfds(struct proto_server *srv,
				  struct pollfd *pfd)
{
	unsigned int n = 0;

	for (int k = 0; k < PROTO_MAX_PENDING; k++) {
		if (srv->pending[k].conn >= 0)
			pfd[n++] = (struct pollfd) {
				.fd = srv->pending[k].conn, .events = POLLIN,
			};
	}
	for (uint32_t j = 1; j <= srv->geo.nreducers; j++) {
		if (srv->peer[j].conn >= 0)
			pfd[n++] = (struct pollfd) {
				.fd = srv->peer[j].conn, .events = POLLIN,
			};
	}
	if (srv->listen_fd >= 0)
		pfd[n++] = (struct pollfd) {
			.fd = srv->listen_fd, .events = POLLIN,
		};
	return n;
}

int proto_server_timeout(const struct proto_server *srv)
{
	int64_t now = proto_now_ms(), next = INT64_MAX;

	for (int k = 0; k < PROTO_MAX_PENDING; k++) {
		const struct proto_pending *pend = &srv->pending[k];

		if (pend->conn >= 0 && pend->deadline_ms - now < next)
			next = pend->deadline_ms - now;
	}
	if (next == INT64_MAX)
		return -1;
	if (next < 0)
		return 0;
	return next > 0x7fffffff ? 0x7fffffff : (int)next;
}

void proto_server_dispatch(struct proto_server *srv, const struct pollfd *pfd,
			   unsigned int n)
{
	int accept_ready = 0;
	int64_t now;

	for (unsigned int i = 0; i < n; i++) {
		if (!pfd[i].revents)
			continue;
		if (pfd[i].fd == srv->listen_fd) {
			accept_ready = 1;
			continue;
		}
		for (int k = 0; k < PROTO_MAX_PENDING; k++) {
			if (srv->pending[k].conn == pfd[i].fd) {
				server_hello(srv, &srv->pending[k]);
				goto next;
			}
		}
		for (uint32_t j = 1; j <= srv->geo.nreducers; j++) {
			if (srv->peer[j].conn == pfd[i].fd) {
				server_peer_event(srv, j, pfd[i].revents);
				break;
			}
		}
next:
		;
	}

	now = proto_now_ms();
	for (int k = 0; k < PROTO_MAX_PENDING; k++) {
		struct proto_pending *pend = &srv->pending[k];

		if (pend->conn >= 0 && now >= pend->deadline_ms) {
			server_log(srv, "dropped a peer that sent no HELLO in %d ms",
				   srv->hello_timeout_ms);
			pending_free(pend, 1);
		}
	}
	/* Last, so a new connection cannot reuse an fd handled above. */
	if (accept_ready)
		server_accept(srv);
}

int proto_ring(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	uint64_t one = 1;

	/*
	 * The eventfd is the peer's: it decides whether it blocks, and can
	 * fill its counter.  A full counter still has an interrupt pending,
	 * so skip the write rather than block on it.  (The peer can still
	 * fill it between the poll and the write; it then stalls only the
	 * thread that rang.)
	 */
	if (poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLOUT))
		return 0;
	if (write(fd, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN)
		return -errno;
	return 0;
}

uint64_t proto_server_peers(const struct proto_server *srv)
{
	uint64_t map = 0;

	for (uint32_t j = 1; j <= srv->geo.nreducers; j++)
		if (srv->peer[j].conn >= 0)
			map |= 1ULL << j;
	return map;
}

void proto_server_fini(struct proto_server *srv)
{
	for (int k = 0; k < PROTO_MAX_PENDING; k++)
		if (srv->pending[k].conn >= 0)
			pending_free(&srv->pending[k], 1);
	for (uint32_t j = 0; j <= SIVSHM_MAX_REDUCERS; j++) {
		struct proto_peer *p = &srv->peer[j];

		if (p->conn >= 0)
			close(p->conn);
		p->conn = -1;
		proto_close_fds(p->out_fd, SIVSHM_MAX_VECTORS);
		proto_close_fds(p->in_fd, SIVSHM_MAX_VECTORS);
	}
	if (srv->listen_fd >= 0)
		close(srv->listen_fd);
	srv->listen_fd = -1;
}
