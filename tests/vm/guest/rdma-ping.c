// SPDX-License-Identifier: GPL-2.0
/*
 * The smoke test of RDMA between test guests (Soft-RoCE, rxe):
 *
 *   rdma-ping server ADDR PORT SESSIONS TIMEOUT_MS
 *   rdma-ping client ADDR PORT TIMEOUT_MS [WAITFILE]
 *
 * The server listens with RDMA CM on ADDR:PORT and registers 1 MiB, filled
 * with a pattern of a seed, for remote reads; it accepts each connection
 * with the buffer's address, rkey and length and the seed in the private
 * data, and posts a receive.  The client connects, sends one message
 * ("rdma-ping hello SEED"), reads the whole buffer with one RDMA READ,
 * checks every byte, and disconnects.  A session is a connection whose
 * message arrived and that then closed; the server exits 0 after SESSIONS
 * of them, 1 at TIMEOUT_MS.
 *
 * Every wait is bounded: the client's connection (tried again while the
 * address does not resolve or nobody listens yet) by TIMEOUT_MS, then each
 * completion and its disconnection by TIMEOUT_MS each; with WAITFILE it
 * waits, once connected, for that file to exist (at most HOLD_MAX_S), so a
 * test can take the link down first.  Failures are one line,
 * "rdma-ping: client: ..." or "rdma-ping: server: ...", and exit 1.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rxe-static.h"

#define BUF_SIZE	(1u << 20)
#define MSG_SIZE	64
#define MAX_CONNS	16
#define PING_MAGIC	0x52504e47	/* "RPNG" */
/* IB_CM_REJ_INVALID_SERVICE_ID: nobody listens on that port (yet). */
#define REJ_NO_LISTENER	8
/* How long one address or route resolution may take before a retry. */
#define RESOLVE_MS	2000
#define HOLD_MAX_S	120
/*
 * Transport and RNR retries of the QPs: 7 would be "forever" (rxe takes it
 * so for the transport's too), 6 gives up after 7 timeouts of the path's
 * (for RoCE about 2 s each).
 */
#define RETRY_COUNT	6

/* What the server's accept carries to the client (big-endian). */
struct ping_info {
	uint32_t magic;
	uint32_t rkey;
	uint64_t addr;
	uint32_t len;
	uint32_t seed;
};

static const char *role = "rdma-ping";

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "rdma-ping: %s: ", role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static void __attribute__((format(printf, 1, 2))) say(const char *fmt, ...)
{
	va_list ap;

	printf("rdma-ping: %s: ", role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Milliseconds left before @deadline, 0 once past it, for poll(). */
static int left_ms(double deadline)
{
	double left = deadline - now_ms();

	return left <= 0 ? 0 : (int)left + 1;
}

static unsigned long number(const char *s, const char *what,
			    unsigned long max)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || v > max)
		die("bad %s \"%s\" (0 to %lu)", what, s, max);
	return v;
}

static void parse_addr(const char *addr, const char *port,
		       struct sockaddr_in *sin)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(number(port, "port", 65535));
	if (inet_pton(AF_INET, addr, &sin->sin_addr) != 1)
		die("bad IPv4 address \"%s\"", addr);
}

static uint32_t pattern(uint32_t seed, size_t i)
{
	return (uint32_t)i * 2654435761u ^ seed;
}

static void register_rxe(void)
{
	int n = rxe_static_init();

	if (n < 0)
		die("no verbs devices: %s (ib_uverbs loaded?)", strerror(-n));
	if (!n)
		die("no verbs devices (make one: rxe-link add rxe0 eth0)");
}

/* The next CM event by @deadline; NULL once past it. */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch,
					double deadline)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int r;

	for (;;) {
		r = poll(&p, 1, left_ms(deadline));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("poll on the CM channel: %s", strerror(errno));
		if (!r)
			return NULL;
		if (rdma_get_cm_event(ch, &ev))
			die("rdma_get_cm_event: %s", strerror(errno));
		return ev;
	}
}

/*
 * Wait @timeout ms at most for one completion on @cq, armed on @cc, and
 * check it: success, of opcode @op.
 */
static void wait_wc(struct ibv_cq *cq, struct ibv_comp_channel *cc,
		    unsigned long timeout, enum ibv_wc_opcode op,
		    const char *what)
{
	double t0 = now_ms(), deadline = t0 + timeout;
	struct pollfd p = { .fd = cc->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	struct ibv_wc wc;
	void *ctx;
	int n, r;

	for (;;) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq failed (%d)", n);
		if (n)
			break;
		r = poll(&p, 1, left_ms(deadline));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("poll on the completion channel: %s",
			    strerror(errno));
		if (!r)
			die("%s: no completion in %lu ms", what, timeout);
		if (ibv_get_cq_event(cc, &ev_cq, &ctx))
			die("ibv_get_cq_event: %s", strerror(errno));
		ibv_ack_cq_events(ev_cq, 1);
		if (ibv_req_notify_cq(cq, 0))
			die("ibv_req_notify_cq: %s", strerror(errno));
	}
	if (wc.status != IBV_WC_SUCCESS)
		die("%s failed after %.0f ms: %s (status %d, vendor error %#x)",
		    what, now_ms() - t0, ibv_wc_status_str(wc.status),
		    wc.status, wc.vendor_err);
	if (wc.opcode != op)
		die("%s: a completion of opcode %d, not %d", what, wc.opcode,
		    op);
}

/* The CQ, its completion channel and the PD of a device. */
struct verbs {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
};

static void verbs_open(struct verbs *v, struct ibv_context *ctx)
{
	if (!ctx)
		die("the CM id has no RDMA device");
	v->ctx = ctx;
	v->pd = ibv_alloc_pd(ctx);
	if (!v->pd)
		die("ibv_alloc_pd: %s", strerror(errno));
	v->cc = ibv_create_comp_channel(ctx);
	if (!v->cc)
		die("ibv_create_comp_channel: %s", strerror(errno));
	v->cq = ibv_create_cq(ctx, 4 * MAX_CONNS, NULL, v->cc, 0);
	if (!v->cq)
		die("ibv_create_cq: %s", strerror(errno));
	if (ibv_req_notify_cq(v->cq, 0))
		die("ibv_req_notify_cq: %s", strerror(errno));
}

static struct ibv_mr *reg(struct verbs *v, void *buf, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(v->pd, buf, len, access);

	if (!mr)
		die("ibv_reg_mr of %zu bytes: %s", len, strerror(errno));
	return mr;
}

static void create_qp(struct verbs *v, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = v->cq,
		.recv_cq = v->cq,
		.cap = {
			.max_send_wr = 4,
			.max_recv_wr = 4,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};

	if (rdma_create_qp(id, v->pd, &attr))
		die("rdma_create_qp: %s", strerror(errno));
}

static void post_send(struct ibv_qp *qp, enum ibv_wr_opcode op, void *buf,
		      uint32_t len, uint32_t lkey, uint64_t raddr,
		      uint32_t rkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf, .length = len, .lkey = lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int err;

	if (op == IBV_WR_RDMA_READ) {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	err = ibv_post_send(qp, &wr, &bad);
	if (err)
		die("ibv_post_send: %s", strerror(err));
}

static void post_recv(struct ibv_qp *qp, void *buf, uint32_t len,
		      uint32_t lkey, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf, .length = len, .lkey = lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
	}, *bad;
	int err;

	err = ibv_post_recv(qp, &wr, &bad);
	if (err)
		die("ibv_post_recv: %s", strerror(err));
}

/* The server's side of one connection. */
struct conn {
	struct rdma_cm_id *id;
	int n;
	int got_send;
	char msg[MSG_SIZE];
	struct ibv_mr *mr;
	char peer[INET_ADDRSTRLEN];
};

struct server {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct verbs v;
	uint32_t *buf;
	struct ibv_mr *mr;
	uint32_t seed;
	struct conn conns[MAX_CONNS];
	int nconns;
	int sessions;
};

static struct conn *conn_of_id(struct server *s, struct rdma_cm_id *id)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (s->conns[i].id == id)
			return &s->conns[i];
	return NULL;
}

static void conn_drop(struct conn *c)
{
	rdma_destroy_qp(c->id);
	if (rdma_destroy_id(c->id))
		die("rdma_destroy_id: %s", strerror(errno));
	if (ibv_dereg_mr(c->mr))
		die("ibv_dereg_mr failed");
	memset(c, 0, sizeof(*c));
}

/* Accept a connection: 1, or 0 if it was rejected. */
static int accept_conn(struct server *s, struct rdma_cm_event *ev)
{
	struct rdma_cm_id *id = ev->id;
	struct sockaddr_in *peer = (struct sockaddr_in *)rdma_get_peer_addr(id);
	struct ping_info info = {
		.magic = htobe32(PING_MAGIC),
		.rkey = htobe32(s->mr->rkey),
		.addr = htobe64((uintptr_t)s->buf),
		.len = htobe32(BUF_SIZE),
		.seed = htobe32(s->seed),
	};
	struct rdma_conn_param param = {
		.private_data = &info,
		.private_data_len = sizeof(info),
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = RETRY_COUNT,
		.rnr_retry_count = RETRY_COUNT,
	};
	struct conn *c = conn_of_id(s, NULL);

	if (!c) {
		say("a connection beyond %d open ones: rejected", MAX_CONNS);
		rdma_reject(id, NULL, 0);
		return 0;
	}
	if (id->verbs != s->v.ctx)
		die("a connection on another RDMA device than the listener's");
	c->id = id;
	c->n = ++s->nconns;
	inet_ntop(AF_INET, &peer->sin_addr, c->peer, sizeof(c->peer));
	c->mr = reg(&s->v, c->msg, sizeof(c->msg), IBV_ACCESS_LOCAL_WRITE);
	create_qp(&s->v, id);
	post_recv(id->qp, c->msg, sizeof(c->msg), c->mr->lkey,
		  c - s->conns);
	say("connection %d from %s", c->n, c->peer);
	if (rdma_accept(id, &param))
		die("rdma_accept of connection %d: %s", c->n,
		    strerror(errno));
	return 1;
}

/* Handle one CM event; the event is acknowledged here. */
static void server_event(struct server *s, struct rdma_cm_event *ev)
{
	enum rdma_cm_event_type type = ev->event;
	int status = ev->status;
	struct conn *c = conn_of_id(s, ev->id);

	if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		struct rdma_cm_id *id = ev->id;

		if (accept_conn(s, ev)) {
			rdma_ack_cm_event(ev);
		} else {
			rdma_ack_cm_event(ev);
			rdma_destroy_id(id);
		}
		return;
	}
	/* Before rdma_destroy_id(), which waits for its events' acks. */
	rdma_ack_cm_event(ev);
	if (!c) {
		say("%s (status %d) on no connection of ours",
		    rdma_event_str(type), status);
		return;
	}
	switch (type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		say("connection %d established", c->n);
		return;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (c->got_send) {
			s->sessions++;
			say("connection %d closed: session %d done", c->n,
			    s->sessions);
		} else {
			say("connection %d closed before its message", c->n);
		}
		conn_drop(c);
		return;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		return;
	default:
		say("connection %d: %s (status %d): dropped", c->n,
		    rdma_event_str(type), status);
		conn_drop(c);
	}
}

/* The completions on the server's CQ: the clients' messages. */
static void server_completions(struct server *s)
{
	char want[MSG_SIZE];
	struct ibv_cq *ev_cq;
	struct ibv_wc wc;
	struct conn *c;
	void *ctx;
	int n;

	if (ibv_get_cq_event(s->v.cc, &ev_cq, &ctx))
		die("ibv_get_cq_event: %s", strerror(errno));
	ibv_ack_cq_events(ev_cq, 1);
	if (ibv_req_notify_cq(s->v.cq, 0))
		die("ibv_req_notify_cq: %s", strerror(errno));
	snprintf(want, sizeof(want), "rdma-ping hello %u", s->seed);
	while ((n = ibv_poll_cq(s->v.cq, 1, &wc)) > 0) {
		if (wc.wr_id >= MAX_CONNS)
			die("a completion of work request %llu, none of ours",
			    (unsigned long long)wc.wr_id);
		c = &s->conns[wc.wr_id];
		if (!c->id || !c->id->qp || c->id->qp->qp_num != wc.qp_num)
			continue;	/* a closed connection's flush */
		if (wc.status != IBV_WC_SUCCESS) {
			say("connection %d: receive failed: %s", c->n,
			    ibv_wc_status_str(wc.status));
			continue;
		}
		if (wc.opcode != IBV_WC_RECV || wc.byte_len > sizeof(c->msg) ||
		    !wc.byte_len || c->msg[wc.byte_len - 1])
			die("connection %d: a message of opcode %d, %u bytes, not a string",
			    c->n, wc.opcode, wc.byte_len);
		if (strcmp(c->msg, want))
			die("connection %d: the message is \"%s\", not \"%s\"",
			    c->n, c->msg, want);
		c->got_send = 1;
		say("connection %d: message \"%s\"", c->n, c->msg);
	}
	if (n < 0)
		die("ibv_poll_cq failed (%d)", n);
}

static int server(const char *addr, const char *port, const char *nstr,
		  const char *tstr)
{
	int want = number(nstr, "session count", 1000);
	double deadline = now_ms() + number(tstr, "timeout", 86400000);
	struct server *s = calloc(1, sizeof(*s));
	struct sockaddr_in sin;
	struct pollfd p[2];
	int r;

	if (!s)
		die("out of memory");
	parse_addr(addr, port, &sin);
	register_rxe();
	s->ch = rdma_create_event_channel();
	if (!s->ch)
		die("rdma_create_event_channel: %s (rdma_ucm loaded?)",
		    strerror(errno));
	if (rdma_create_id(s->ch, &s->listen, NULL, RDMA_PS_TCP))
		die("rdma_create_id: %s", strerror(errno));
	if (rdma_bind_addr(s->listen, (struct sockaddr *)&sin))
		die("bind to %s:%s: %s", addr, port, strerror(errno));
	if (!s->listen->verbs)
		die("%s is no RDMA device's address", addr);
	verbs_open(&s->v, s->listen->verbs);
	if (posix_memalign((void **)&s->buf, 4096, BUF_SIZE))
		die("out of memory");
	s->seed = (uint32_t)getpid() * 2654435761u ^ (uint32_t)now_ms();
	for (size_t i = 0; i < BUF_SIZE / 4; i++)
		s->buf[i] = pattern(s->seed, i);
	s->mr = reg(&s->v, s->buf, BUF_SIZE,
		    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (rdma_listen(s->listen, 4))
		die("listen on %s:%s: %s", addr, port, strerror(errno));
	say("listening on %s:%s (%s), %d session(s) in %s ms", addr, port,
	    ibv_get_device_name(s->v.ctx->device), want, tstr);

	p[0] = (struct pollfd){ .fd = s->ch->fd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = s->v.cc->fd, .events = POLLIN };
	while (s->sessions < want) {
		r = poll(p, 2, left_ms(deadline));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("poll: %s", strerror(errno));
		if (!r)
			die("%d of %d session(s) in %s ms", s->sessions, want,
			    tstr);
		if (p[1].revents)
			server_completions(s);
		if (p[0].revents) {
			struct rdma_cm_event *ev;

			if (rdma_get_cm_event(s->ch, &ev))
				die("rdma_get_cm_event: %s", strerror(errno));
			server_event(s, ev);
		}
	}
	say("%d session(s) done", s->sessions);
	return 0;
}

struct client {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct verbs v;
	struct sockaddr_in dst;
	struct ping_info info;
	unsigned long timeout;
	int tries;
	char why[160];
};

/*
 * The event @want on the client's id by @deadline; NULL (with c->why) for
 * an error worth another attempt.
 */
static struct rdma_cm_event *client_event(struct client *c, double deadline,
					  enum rdma_cm_event_type want,
					  const char *what)
{
	struct rdma_cm_event *ev = next_event(c->ch, deadline);
	enum rdma_cm_event_type type;
	int status;

	if (!ev)
		die("no connection in %lu ms (%d attempt(s)): %s pending%s%s",
		    c->timeout, c->tries, what,
		    c->why[0] ? "; the attempt before: " : "", c->why);
	if (ev->event == want)
		return ev;
	type = ev->event;
	status = ev->status;
	/* Errors of resolution and of the CM's timeouts are -errno. */
	snprintf(c->why, sizeof(c->why), "%s: %s (status %d%s%s)", what,
		 rdma_event_str(type), status, status < 0 ? ", " : "",
		 status < 0 ? strerror(-status) : "");
	rdma_ack_cm_event(ev);
	switch (type) {
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return NULL;
	case RDMA_CM_EVENT_REJECTED:
		if (status == REJ_NO_LISTENER)
			return NULL;
		break;
	default:
		break;
	}
	die("%s", c->why);
}

/* One attempt to connect: 1 on success, 0 for another attempt. */
static int client_attempt(struct client *c, double deadline)
{
	struct rdma_conn_param param = {
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = RETRY_COUNT,
		.rnr_retry_count = RETRY_COUNT,
	};
	struct rdma_cm_event *ev;
	int ms = left_ms(deadline);

	if (rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_TCP))
		die("rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&c->dst,
			      ms < RESOLVE_MS ? ms : RESOLVE_MS))
		die("rdma_resolve_addr: %s", strerror(errno));
	ev = client_event(c, deadline, RDMA_CM_EVENT_ADDR_RESOLVED,
			  "address resolution");
	if (!ev)
		goto again;
	rdma_ack_cm_event(ev);
	ms = left_ms(deadline);
	if (rdma_resolve_route(c->id, ms < RESOLVE_MS ? ms : RESOLVE_MS))
		die("rdma_resolve_route: %s", strerror(errno));
	ev = client_event(c, deadline, RDMA_CM_EVENT_ROUTE_RESOLVED,
			  "route resolution");
	if (!ev)
		goto again;
	rdma_ack_cm_event(ev);
	if (!c->v.ctx)
		verbs_open(&c->v, c->id->verbs);
	else if (c->id->verbs != c->v.ctx)
		die("the route is on another RDMA device than before");
	create_qp(&c->v, c->id);
	if (rdma_connect(c->id, &param))
		die("rdma_connect: %s", strerror(errno));
	ev = client_event(c, deadline, RDMA_CM_EVENT_ESTABLISHED,
			  "connection");
	if (!ev) {
		rdma_destroy_qp(c->id);
		goto again;
	}
	if (!ev->param.conn.private_data ||
	    ev->param.conn.private_data_len < sizeof(c->info))
		die("the server's accept carries %u bytes, not %zu",
		    ev->param.conn.private_data_len, sizeof(c->info));
	memcpy(&c->info, ev->param.conn.private_data, sizeof(c->info));
	rdma_ack_cm_event(ev);
	return 1;
again:
	if (rdma_destroy_id(c->id))
		die("rdma_destroy_id: %s", strerror(errno));
	c->id = NULL;
	return 0;
}

static void hold(const char *file)
{
	double deadline = now_ms() + HOLD_MAX_S * 1000.0;

	say("waiting for %s", file);
	while (access(file, F_OK)) {
		if (now_ms() > deadline)
			die("no %s in %d s", file, HOLD_MAX_S);
		usleep(100000);
	}
}

static int client(const char *addr, const char *port, const char *tstr,
		  const char *waitfile)
{
	unsigned long timeout = number(tstr, "timeout", 86400000);
	double t0 = now_ms(), deadline = t0 + timeout, t1, t2, t3;
	struct client *c = calloc(1, sizeof(*c));
	char msg[MSG_SIZE];
	struct ibv_mr *msg_mr, *buf_mr;
	struct rdma_cm_event *ev;
	uint32_t *buf, seed, rkey;
	uint64_t raddr;

	if (!c)
		die("out of memory");
	parse_addr(addr, port, &c->dst);
	register_rxe();
	c->ch = rdma_create_event_channel();
	if (!c->ch)
		die("rdma_create_event_channel: %s (rdma_ucm loaded?)",
		    strerror(errno));
	c->timeout = timeout;
	do {
		if (c->tries++)
			usleep(100000);
		t1 = now_ms();
	} while (!client_attempt(c, deadline));
	t2 = now_ms();
	if (be32toh(c->info.magic) != PING_MAGIC ||
	    be32toh(c->info.len) != BUF_SIZE)
		die("the server's accept is not rdma-ping's (magic %#x, length %u)",
		    be32toh(c->info.magic), be32toh(c->info.len));
	seed = be32toh(c->info.seed);
	rkey = be32toh(c->info.rkey);
	raddr = be64toh(c->info.addr);
	say("connected to %s:%s in %.1f ms (attempt %d, %.1f ms in all)",
	    addr, port, t2 - t1, c->tries, t2 - t0);
	if (waitfile)
		hold(waitfile);

	if (posix_memalign((void **)&buf, 4096, BUF_SIZE))
		die("out of memory");
	memset(buf, 0, BUF_SIZE);
	snprintf(msg, sizeof(msg), "rdma-ping hello %u", seed);
	msg_mr = reg(&c->v, msg, sizeof(msg), 0);
	buf_mr = reg(&c->v, buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE);
	t1 = now_ms();
	post_send(c->id->qp, IBV_WR_SEND, msg, strlen(msg) + 1, msg_mr->lkey,
		  0, 0);
	wait_wc(c->v.cq, c->v.cc, timeout, IBV_WC_SEND, "the SEND");
	t2 = now_ms();
	post_send(c->id->qp, IBV_WR_RDMA_READ, buf, BUF_SIZE, buf_mr->lkey,
		  raddr, rkey);
	wait_wc(c->v.cq, c->v.cc, timeout, IBV_WC_RDMA_READ, "the RDMA READ");
	t3 = now_ms();
	for (size_t i = 0; i < BUF_SIZE / 4; i++)
		if (buf[i] != pattern(seed, i))
			die("the RDMA READ's word %zu is %#x, not %#x", i,
			    buf[i], pattern(seed, i));
	say("SEND in %.1f ms; RDMA READ of %u bytes in %.1f ms, every byte as the server wrote it",
	    t2 - t1, BUF_SIZE, t3 - t2);

	if (rdma_disconnect(c->id))
		die("rdma_disconnect: %s", strerror(errno));
	ev = next_event(c->ch, now_ms() + timeout);
	if (!ev)
		die("no DISCONNECTED event in %lu ms", timeout);
	if (ev->event != RDMA_CM_EVENT_DISCONNECTED)
		die("%s (status %d), not DISCONNECTED",
		    rdma_event_str(ev->event), ev->status);
	rdma_ack_cm_event(ev);
	rdma_destroy_qp(c->id);
	rdma_destroy_id(c->id);
	say("ok");
	return 0;
}

int main(int argc, char **argv)
{
	role = argc > 1 ? argv[1] : role;
	if (argc == 6 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3], argv[4], argv[5]);
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3], argv[4],
			      argc == 6 ? argv[5] : NULL);
	fprintf(stderr, "usage: rdma-ping server ADDR PORT SESSIONS TIMEOUT_MS\n");
	fprintf(stderr, "       rdma-ping client ADDR PORT TIMEOUT_MS [WAITFILE]\n");
	return 1;
}
