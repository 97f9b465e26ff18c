// SPDX-License-Identifier: MIT
/*
 * The mapper's RDMA service (service.h).  Per remote reducer id: the
 * challenges its proofs have spent, and once it has proved its key, one
 * connection (conn.h) with the reducer's slot registered in that
 * connection's protection domain, remote read and write, nothing else.
 * Nothing is registered before the proof: the challenge and the proof
 * travel in RDMA CM's private data, answered by rejecting the request.
 * A challenge is derived, not stored (srd_challenge()): an ASK leaves
 * no state behind.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <sodium.h>

#include "conn.h"
#include "handle.h"
#include "log.h"
#include "service.h"
#include "sock.h"

/* Connection requests queued on the listener. */
#define SRD_BACKLOG		(SIVSHM_MAX_REDUCERS + 1)

enum peer_state {
	PEER_FREE,
	PEER_ACCEPTING,		/* accepted, not yet established */
	PEER_LIVE,
};

struct spent {
	uint8_t nonce_m[SRD_NONCE_BYTES];
	uint64_t epoch;			/* the challenge's; 0: a free entry */
};

struct srd_peer {
	struct srd_service *svc;
	uint32_t id;
	enum peer_state state;
	struct rdma_cm_id *cm;
	struct srd_conn conn;		/* conn.slot_mr: the reducer's slot */
	struct spent spent[SRD_SPENT];
};

struct srd_service {
	struct sivshm *sh;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	uint64_t ids;
	uint8_t key[SIVSHM_MAX_REDUCERS + 1][SIVSHM_KEY_BYTES];
	uint8_t secret[SIVSHM_KEY_BYTES];	/* the challenges' */
	struct srd_peer peer[SIVSHM_MAX_REDUCERS + 1];
	/* Readers post on a live peer; the thread writes to change state. */
	pthread_rwlock_t state_lock;
	uint64_t live;
	pthread_t thread;
	int stop;			/* eventfd */
};

static const char *addr_text(struct rdma_cm_id *cm, char *buf, size_t len)
{
	struct sockaddr *sa = rdma_get_peer_addr(cm);
	const void *a = sa->sa_family == AF_INET6 ?
		(const void *)&((struct sockaddr_in6 *)sa)->sin6_addr :
		(const void *)&((struct sockaddr_in *)sa)->sin_addr;

	if (!inet_ntop(sa->sa_family, a, buf, len))
		snprintf(buf, len, "?");
	return buf;
}

static void set_live(struct srd_service *svc, struct srd_peer *p,
		     enum peer_state state)
{
	struct sivshm *sh = svc->sh;

	pthread_rwlock_wrlock(&svc->state_lock);
	p->state = state;
	if (state == PEER_LIVE)
		svc->live |= 1ull << p->id;
	else
		svc->live &= ~(1ull << p->id);
	pthread_rwlock_unlock(&svc->state_lock);
	pthread_mutex_lock(&sh->lock);
	pthread_cond_broadcast(&sh->peers_changed);
	pthread_mutex_unlock(&sh->lock);
}

/* Undo a connection: called by the thread only, events for it acked. */
static void peer_drop(struct srd_service *svc, struct srd_peer *p,
		      const char *why)
{
	struct rdma_cm_id *cm = p->cm;

	if (p->state == PEER_FREE)
		return;
	sivshm_log("mapper: remote reducer %u left: %s", p->id, why);
	/* Wake any notify waiting for room, then take the peer away. */
	srd_conn_fail(&p->conn, -ENOTCONN);
	set_live(svc, p, PEER_FREE);
	rdma_disconnect(cm);
	srd_conn_destroy(&p->conn);
	p->cm = NULL;
	rdma_destroy_id(cm);
}

static void reject(struct rdma_cm_id *cm, uint8_t code,
		   const uint8_t *nonce)
{
	struct srd_reject r = { .code = code };
	uint8_t buf[SRD_REJECT_SIZE];

	if (nonce)
		memcpy(r.nonce_m, nonce, SRD_NONCE_BYTES);
	srd_reject_encode(&r, buf);
	rdma_reject(cm, buf, sizeof(buf));
}

/* The epoch now, from 1 (0 marks a free spent entry). */
static uint64_t epoch_now(void)
{
	return (uint64_t)proto_now_ms() / SRD_EPOCH_MS + 1;
}

/*
 * Check the proof of PROVE @h against the challenges of this epoch and
 * the last, and spend the one it answers (its nonce in @nonce_m).
 * 0, or an srd_code with *@why.
 */
static uint8_t proof_check(struct srd_service *svc, struct srd_peer *p,
			   const struct srd_hello *h,
			   uint8_t nonce_m[SRD_NONCE_BYTES], const char **why)
{
	uint64_t now = epoch_now(), epoch = 0;
	uint8_t mac[SRD_MAC_BYTES];
	struct spent *free_entry = NULL;

	for (uint64_t e = now; e + 1 >= now && e; e--) {
		srd_challenge(svc->secret, p->id, h->nonce_r, e, nonce_m);
		srd_mac_reducer(svc->key[p->id], h, nonce_m, mac);
		if (srd_mac_equal(mac, h->mac)) {
			epoch = e;
			break;
		}
	}
	if (!epoch) {
		*why = "wrong key, or a challenge expired";
		return SRD_E_AUTH;
	}
	for (unsigned int i = 0; i < SRD_SPENT; i++) {
		struct spent *s = &p->spent[i];

		if (s->epoch + 1 < now)
			s->epoch = 0;		/* expired: its proof cannot pass */
		if (!s->epoch) {
			free_entry = free_entry ? free_entry : s;
			continue;
		}
		if (s->epoch == epoch &&
		    !memcmp(s->nonce_m, nonce_m, SRD_NONCE_BYTES)) {
			*why = "a challenge spent already (a replay)";
			return SRD_E_AUTH;
		}
	}
	if (!free_entry) {
		*why = "too many proofs for this id in the last 20 s";
		return SRD_E_RESOURCES;
	}
	memcpy(free_entry->nonce_m, nonce_m, SRD_NONCE_BYTES);
	free_entry->epoch = epoch;
	return 0;
}

/* Set up and accept a reducer that proved its key.  0, or an srd_code. */
static uint8_t peer_accept(struct srd_service *svc, struct srd_peer *p,
			   struct rdma_cm_id *cm, const struct srd_hello *h,
			   const uint8_t *nonce_m)
{
	struct sivshm *sh = svc->sh;
	struct rdma_conn_param param;
	uint8_t buf[SRD_WELCOME_SIZE];
	struct srd_welcome w;
	void *slot = (uint8_t *)sh->region.base +
		     sivshm_slot_offset(&sh->geo, p->id);
	int err;

	err = srd_conn_create(&p->conn, cm);
	if (err) {
		sivshm_log("mapper: remote reducer %u: no connection: %s",
			   p->id, strerror(-err));
		return SRD_E_RESOURCES;
	}
	/* The reducer's slot, alone in the reducer's protection domain. */
	err = srd_conn_reg_slot(&p->conn, slot, sh->geo.slice_size,
				IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_READ |
				IBV_ACCESS_REMOTE_WRITE);
	if (err) {
		sivshm_log("mapper: remote reducer %u: registering its slot: "
			   "%s", p->id, strerror(-err));
		srd_conn_destroy(&p->conn);
		return SRD_E_RESOURCES;
	}
	w = (struct srd_welcome) {
		.nreducers = sh->geo.nreducers,
		.nvectors = sh->nvectors,
		.slice_size = sh->geo.slice_size,
		.region_size = sh->geo.region_size,
		.addr = (uintptr_t)slot,
		.rkey = p->conn.slot_mr->rkey,
	};
	srd_mac_mapper(svc->key[p->id], p->id, h->nonce_r, nonce_m, &w, w.mac);
	srd_welcome_encode(&w, buf);
	srd_conn_param(&param, buf, sizeof(buf));
	p->cm = cm;
	cm->context = p;
	p->state = PEER_ACCEPTING;
	if (rdma_accept(cm, &param)) {
		sivshm_log("mapper: remote reducer %u: accept: %s", p->id,
			   strerror(errno));
		p->state = PEER_FREE;
		p->cm = NULL;
		cm->context = NULL;
		srd_conn_destroy(&p->conn);
		return SRD_E_RESOURCES;
	}
	return 0;
}

/*
 * A connection request.  Returns 1 if @cm is now the peer's, 0 if it was
 * rejected and is to be destroyed once its event is acked.
 */
static int on_request(struct srd_service *svc, struct rdma_cm_event *ev)
{
	struct rdma_cm_id *cm = ev->id;
	const char *why = NULL;
	uint8_t nonce_m[SRD_NONCE_BYTES];
	struct srd_hello h;
	struct srd_peer *p;
	char from[64];
	uint8_t code;

	addr_text(cm, from, sizeof(from));
	if (srd_hello_decode(ev->param.conn.private_data,
			     ev->param.conn.private_data_len, &h, &why)) {
		sivshm_log("mapper: refused a remote request from %s: %s",
			   from, why);
		reject(cm, SRD_E_MALFORMED, NULL);
		return 0;
	}
	if (h.id > svc->sh->geo.nreducers || !(svc->ids & 1ull << h.id)) {
		sivshm_log("mapper: refused remote reducer %u from %s: not an "
			   "id served over RDMA", h.id, from);
		reject(cm, SRD_E_ID, NULL);
		return 0;
	}
	if (h.nvectors != svc->sh->nvectors) {
		sivshm_log("mapper: refused remote reducer %u from %s: %u "
			   "vectors, the mapper has %u", h.id, from,
			   h.nvectors, svc->sh->nvectors);
		reject(cm, SRD_E_VECTORS, NULL);
		return 0;
	}
	p = &svc->peer[h.id];
	if (h.type == SRD_ASK) {
		srd_challenge(svc->secret, h.id, h.nonce_r, epoch_now(),
			      nonce_m);
		reject(cm, SRD_CHALLENGE, nonce_m);
		return 0;
	}
	code = proof_check(svc, p, &h, nonce_m, &why);
	if (code) {
		sivshm_log("mapper: refused remote reducer %u from %s: %s",
			   h.id, from, why);
		reject(cm, code, NULL);
		return 0;
	}
	if (p->state == PEER_ACCEPTING) {
		sivshm_log("mapper: refused remote reducer %u from %s: a "
			   "reducer with this id is joining", h.id, from);
		reject(cm, SRD_E_BUSY, NULL);
		return 0;
	}
	/*
	 * The key's holder is back (its old connection lost with a link or
	 * a crash, and not failed on our side yet): the new one wins.
	 */
	if (p->state == PEER_LIVE)
		peer_drop(svc, p, "the key's holder joined again");
	code = peer_accept(svc, p, cm, &h, nonce_m);
	if (code) {
		reject(cm, code, NULL);
		return 0;
	}
	return 1;
}

/* Reducer @id's mailbox: the start of its slot. */
static struct sivshm_mbox *peer_mbox(struct srd_service *svc, uint32_t id)
{
	struct sivshm *sh = svc->sh;

	return (struct sivshm_mbox *)((uint8_t *)sh->region.base +
				      sivshm_slot_offset(&sh->geo, id));
}

/*
 * A NOTIFY from a remote reducer: publish its response line, then ring
 * the mapper's eventfd for it.
 */
static void on_completion(void *arg, const struct ibv_wc *wc)
{
	struct srd_peer *p = arg;
	struct srd_service *svc = p->svc;
	uint32_t idx = SRD_WR_LOW(wc->wr_id);
	const char *why;
	struct srd_msg m;

	if (SRD_WR_KIND(wc->wr_id) != SRD_WR_RECV || idx >= SRD_RECV_DEPTH)
		return;
	if (srd_msg_decode(srd_conn_msg(&p->conn, idx), wc->byte_len,
			   svc->sh->nvectors, svc->sh->geo.slice_size, &m,
			   &why)) {
		sivshm_log("mapper: remote reducer %u sent a bad message: %s",
			   p->id, why);
		srd_conn_fail(&p->conn, -EPROTO);
		return;
	}
	if (m.type == SRD_NOTIFY) {
		/* Its bytes were written before this SEND completed. */
		sivshm_mbox_line_put(peer_mbox(svc, p->id), 1, m.line);
		proto_ring(svc->sh->srv.peer[p->id].in_fd[m.vector]);
	}
	if (srd_conn_recv(&p->conn, idx))
		srd_conn_fail(&p->conn, -EIO);
}

static void on_cm_event(struct srd_service *svc)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *cm;
	struct srd_peer *p;
	enum rdma_cm_event_type type;
	int status, keep;

	if (rdma_get_cm_event(svc->ch, &ev))
		return;			/* EAGAIN: nothing yet */
	cm = ev->id;
	type = ev->event;
	status = ev->status;
	if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		keep = on_request(svc, ev);
		rdma_ack_cm_event(ev);
		if (!keep)
			rdma_destroy_id(cm);
		return;
	}
	p = cm->context;
	rdma_ack_cm_event(ev);
	if (cm == svc->listen) {
		if (type == RDMA_CM_EVENT_DEVICE_REMOVAL)
			sivshm_log("mapper: the RDMA device went away; remote "
				   "reducers cannot join");
		return;
	}
	if (!p || p->cm != cm)
		return;
	switch (type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		set_live(svc, p, PEER_LIVE);
		{
			char from[64];

			sivshm_log("mapper: remote reducer %u joined from %s",
				   p->id, addr_text(cm, from, sizeof(from)));
		}
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		peer_drop(svc, p, "disconnected");
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		peer_drop(svc, p, "the RDMA device went away");
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		(void)status;
		peer_drop(svc, p, rdma_event_str(type));
		break;
	default:
		break;
	}
}

static void *service_thread(void *arg)
{
	struct srd_service *svc = arg;
	struct pollfd pfd[SIVSHM_MAX_REDUCERS + 2];
	uint32_t who[SIVSHM_MAX_REDUCERS + 2];
	int64_t next_ping = proto_now_ms() + SRD_HEARTBEAT_MS;

	for (;;) {
		int64_t now = proto_now_ms();
		unsigned int n = 0;

		if (now >= next_ping) {
			/* A reducer that is gone fails within the retries. */
			for (uint32_t j = 1; j <= SIVSHM_MAX_REDUCERS; j++)
				if (svc->peer[j].state == PEER_LIVE)
					srd_conn_ping(&svc->peer[j].conn);
			next_ping = now + SRD_HEARTBEAT_MS;
		}

		pfd[n++] = (struct pollfd) { .fd = svc->stop, .events = POLLIN };
		pfd[n++] = (struct pollfd) { .fd = svc->ch->fd,
					     .events = POLLIN };
		for (uint32_t j = 1; j <= SIVSHM_MAX_REDUCERS; j++) {
			if (svc->peer[j].state == PEER_FREE)
				continue;
			who[n] = j;
			pfd[n++] = (struct pollfd) {
				.fd = svc->peer[j].conn.ch->fd,
				.events = POLLIN,
			};
		}
		if (poll(pfd, n, (int)(next_ping - now)) < 0) {
			if (errno == EINTR)
				continue;
			sivshm_log("mapper: RDMA service: poll: %s",
				   strerror(errno));
			break;
		}
		if (pfd[0].revents)
			break;
		for (unsigned int i = 2; i < n; i++) {
			struct srd_peer *p = &svc->peer[who[i]];
			int err;

			if (!pfd[i].revents || p->state == PEER_FREE)
				continue;
			err = srd_conn_poll(&p->conn, on_completion, p);
			if (err)
				peer_drop(svc, p, err == -EPROTO ?
					  "protocol violation" :
					  strerror(-err));
		}
		if (pfd[1].revents)
			on_cm_event(svc);
	}
	return NULL;
}

static void service_free(struct srd_service *svc)
{
	for (uint32_t j = 1; j <= SIVSHM_MAX_REDUCERS; j++)
		if (svc->peer[j].state != PEER_FREE)
			peer_drop(svc, &svc->peer[j], "the mapper closes");
	if (svc->listen)
		rdma_destroy_id(svc->listen);
	if (svc->ch)
		rdma_destroy_event_channel(svc->ch);
	if (svc->stop >= 0)
		close(svc->stop);
	pthread_rwlock_destroy(&svc->state_lock);
	sodium_memzero(svc->key, sizeof(svc->key));
	sodium_memzero(svc->secret, sizeof(svc->secret));
	free(svc);
}

int srd_service_start(struct sivshm *sh, const struct sivshm_remote_opts *opts,
		      struct srd_service **out)
{
	struct sockaddr_storage sa;
	struct srd_service *svc;
	int err, flags;

	err = srd_crypto_init();
	if (err) {
		sivshm_log("mapper: libsodium cannot start");
		return err;
	}
	err = srd_addr_parse(opts->listen, 1, &sa);
	if (err) {
		sivshm_log("mapper: %s is no HOST:PORT to listen on: %s",
			   opts->listen, strerror(-err));
		return err;
	}
	svc = calloc(1, sizeof(*svc));
	if (!svc)
		return -ENOMEM;
	svc->sh = sh;
	svc->stop = -1;
	svc->ids = opts->ids;
	pthread_rwlock_init(&svc->state_lock, NULL);
	for (uint32_t j = 1; j <= SIVSHM_MAX_REDUCERS; j++) {
		svc->peer[j].svc = svc;
		svc->peer[j].id = j;
		if (opts->ids & 1ull << j)
			memcpy(svc->key[j], opts->keys[j], SIVSHM_KEY_BYTES);
	}
	srd_random(svc->secret, sizeof(svc->secret));
	svc->stop = eventfd(0, EFD_CLOEXEC);
	if (svc->stop < 0) {
		err = -errno;
		goto err;
	}
	svc->ch = rdma_create_event_channel();
	if (!svc->ch) {
		err = -errno;
		sivshm_log("mapper: no RDMA CM (is rdma_ucm loaded?): %s",
			   strerror(-err));
		goto err;
	}
	flags = fcntl(svc->ch->fd, F_GETFL);
	if (flags < 0 ||
	    fcntl(svc->ch->fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
	    rdma_create_id(svc->ch, &svc->listen, NULL, RDMA_PS_TCP)) {
		err = -errno;
		goto err;
	}
	if (rdma_bind_addr(svc->listen, (struct sockaddr *)&sa) ||
	    rdma_listen(svc->listen, SRD_BACKLOG)) {
		err = -errno;
		sivshm_log("mapper: cannot listen for remote reducers on %s: "
			   "%s (an address of an RDMA device?)", opts->listen,
			   strerror(-err));
		goto err;
	}
	err = -pthread_create(&svc->thread, NULL, service_thread, svc);
	if (err)
		goto err;
	*out = svc;
	return 0;
err:
	service_free(svc);
	return err;
}

void srd_service_stop(struct srd_service *svc)
{
	uint64_t one = 1;

	if (write(svc->stop, &one, sizeof(one)) == sizeof(one))
		pthread_join(svc->thread, NULL);
	service_free(svc);
}

uint64_t srd_service_peers(struct srd_service *svc)
{
	uint64_t live;

	pthread_rwlock_rdlock(&svc->state_lock);
	live = svc->live;
	pthread_rwlock_unlock(&svc->state_lock);
	return live;
}

int srd_service_notify(struct srd_service *svc, uint32_t peer,
		       uint32_t vector, uint64_t offset, uint64_t length)
{
	struct srd_msg m = {
		.type = SRD_NOTIFY,
		.vector = vector,
		.offset = offset,
		.length = length,
	};
	struct srd_peer *p = &svc->peer[peer];
	int64_t seq = -ENOTCONN;

	/* The request line is ours: it travels with the NOTIFY. */
	sivshm_mbox_line_get(peer_mbox(svc, peer), 0, m.line);
	pthread_rwlock_rdlock(&svc->state_lock);
	if (p->state == PEER_LIVE)
		seq = srd_conn_send(&p->conn, &m, SRD_POST_TIMEOUT_MS);
	pthread_rwlock_unlock(&svc->state_lock);
	return seq < 0 ? (int)seq : 0;
}
