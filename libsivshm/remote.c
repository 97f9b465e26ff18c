// SPDX-License-Identifier: MIT
/*
 * libsivshm's remote-reducer backend: a reducer on another host joins the
 * mapper over RDMA (docs/protocol.md, "Remote reducers").  Its slot is
 * local memory; a NOTIFY from the mapper names the bytes that changed,
 * which this backend reads from the mapper's slot before it rings the
 * reducer's eventfd, and sivshm_notify_range() writes the reducer's bytes
 * back before its NOTIFY.  The mapper's memory is reachable only through
 * the one region the welcome names, in a protection domain of ours alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "fds.h"
#include "handle.h"
#include "log.h"
#include "rdma/conn.h"
#include "remote.h"
#include "server.h"
#include "sock.h"

static const struct sivshm_ops remote_ops;

static int wait_cm(struct srd_reducer *r, enum rdma_cm_event_type want,
		   int64_t deadline, struct rdma_cm_event **out)
{
	struct pollfd pfd = { .fd = r->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	for (;;) {
		int64_t left = deadline - proto_now_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
		if (rdma_get_cm_event(r->ch, &ev))
			continue;
		if (ev->event == want) {
			*out = ev;
			return 0;
		}
		*out = ev;		/* the caller reads and acks it */
		return -ECONNREFUSED;
	}
}

static void reducer_teardown(struct srd_reducer *r)
{
	if (r->cm && r->connected)
		rdma_disconnect(r->cm);
	srd_conn_destroy(&r->conn);
	if (r->cm)
		rdma_destroy_id(r->cm);
	r->cm = NULL;
	if (r->ch)
		rdma_destroy_event_channel(r->ch);
	r->ch = NULL;
}

/* Why a REJECT came, as an errno and words. */
static int reject_errno(uint8_t code, const char **why)
{
	switch (code) {
	case SRD_E_ID:
		*why = "not an id the mapper serves over RDMA";
		return -ERANGE;
	case SRD_E_BUSY:
		*why = "a reducer with this id is connected";
		return -EADDRINUSE;
	case SRD_E_AUTH:
		*why = "the mapper refused our key";
		return -EACCES;
	case SRD_E_VECTORS:
		*why = "vector count differs from the mapper's";
		return -EINVAL;
	case SRD_E_RESOURCES:
		*why = "the mapper could not set the connection up";
		return -EAGAIN;
	}
	*why = "the mapper refused the request as malformed";
	return -EBADMSG;
}

/*
 * One connection attempt carrying @h.  On SRD_ASK, returns -EAGAIN with
 * the challenge in @nonce_m; on SRD_PROVE, 0 with the connection up and
 * the welcome in @w.  *@why explains a failure.
 */
static int attempt(struct srd_reducer *r, const struct sockaddr *dst,
		   const struct srd_hello *h, int64_t deadline,
		   uint8_t *nonce_m, struct srd_welcome *w, const char **why)
{
	uint8_t buf[SRD_HELLO_SIZE];
	struct rdma_conn_param param;
	struct rdma_cm_event *ev = NULL;
	struct srd_reject rej;
	int64_t left;
	int err;

	*why = "";
	r->ch = rdma_create_event_channel();
	if (!r->ch) {
		*why = "no RDMA CM (is rdma_ucm loaded?)";
		return -errno;
	}
	if (fcntl(r->ch->fd, F_SETFL, O_NONBLOCK) < 0 ||
	    rdma_create_id(r->ch, &r->cm, NULL, RDMA_PS_TCP))
		return -errno;
	left = deadline - proto_now_ms();
	if (left <= 0)
		return -ETIMEDOUT;
	if (rdma_resolve_addr(r->cm, NULL, (struct sockaddr *)dst,
			      (int)left)) {
		*why = "no RDMA device reaches the address";
		return -errno;
	}
	err = wait_cm(r, RDMA_CM_EVENT_ADDR_RESOLVED, deadline, &ev);
	if (err) {
		*why = "resolving the address";
		goto out;
	}
	rdma_ack_cm_event(ev);
	ev = NULL;
	left = deadline - proto_now_ms();
	if (left <= 0 || rdma_resolve_route(r->cm, (int)(left > 0 ? left : 1))) {
		*why = "resolving the route";
		return left <= 0 ? -ETIMEDOUT : -errno;
	}
	err = wait_cm(r, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline, &ev);
	if (err) {
		*why = "resolving the route";
		goto out;
	}
	rdma_ack_cm_event(ev);
	ev = NULL;
	err = srd_conn_create(&r->conn, r->cm);
	if (err) {
		*why = "setting up the queue pair";
		return err;
	}
	srd_hello_encode(h, buf);
	srd_conn_param(&param, buf, sizeof(buf));
	if (rdma_connect(r->cm, &param)) {
		*why = "connecting";
		return -errno;
	}
	err = wait_cm(r, RDMA_CM_EVENT_ESTABLISHED, deadline, &ev);
	if (!err) {
		r->connected = 1;
		err = srd_welcome_decode(ev->param.conn.private_data,
					 ev->param.conn.private_data_len,
					 h->id, h->nvectors, w, why);
		goto out;
	}
	if (err != -ECONNREFUSED) {
		*why = "waiting for the mapper";
		goto out;
	}
	if (ev->event != RDMA_CM_EVENT_REJECTED ||
	    srd_reject_decode(ev->param.conn.private_data,
			      ev->param.conn.private_data_len, &rej)) {
		*why = rdma_event_str(ev->event);
		err = -ECONNREFUSED;
		goto out;
	}
	if (rej.code == SRD_CHALLENGE && h->type == SRD_ASK) {
		memcpy(nonce_m, rej.nonce_m, SRD_NONCE_BYTES);
		err = -EAGAIN;
		goto out;
	}
	err = rej.code == SRD_CHALLENGE ? -EBADMSG : reject_errno(rej.code, why);
out:
	if (ev)
		rdma_ack_cm_event(ev);
	return err;
}

static void ring_done(struct srd_reducer *r, struct sivshm *sh)
{
	/*
	 * Ring, in order, every NOTIFY whose bytes are all here, and only
	 * then take another: the FIFO never holds more than our receives.
	 */
	while (r->count && !r->ring[r->head].reads) {
		struct pending_ring *pr = &r->ring[r->head];

		if (pr->vector == SRD_NO_VECTOR) {
			pthread_mutex_lock(&sh->lock);
			r->synced = 1;
			pthread_cond_broadcast(&sh->peers_changed);
			pthread_mutex_unlock(&sh->lock);
		} else {
			/* The bytes are in: now the request may be seen. */
			sivshm_mbox_line_put(sh->slot, 0, pr->line);
			proto_ring(sh->own_fd[pr->vector]);
			if (srd_conn_recv(&r->conn, pr->idx))
				srd_conn_fail(&r->conn, -EIO);
		}
		r->head = (r->head + 1) % SRD_FIFO;
		r->count--;
	}
}

/*
 * Queue an entry for @vector and read bytes [@off, +@len) of the
 * mapper's slot into ours for it.  0, or the connection is failed.
 */
static int fifo_read(struct sivshm *sh, uint32_t vector, uint32_t idx,
		     uint64_t off, uint64_t len, const uint64_t *line)
{
	struct srd_reducer *r = sh->rdma;
	struct pending_ring *pr = &r->ring[(r->head + r->count) % SRD_FIFO];

	/* One entry per receive buffer, and the sync's: there is room. */
	pr->vector = vector;
	pr->reads = 0;
	pr->idx = idx;
	if (line)
		memcpy(pr->line, line, sizeof(pr->line));
	r->count++;
	while (len) {
		uint64_t n = len < SRD_CHUNK ? len : SRD_CHUNK;

		if (srd_conn_rdma(&r->conn, IBV_WR_RDMA_READ,
				  (uint8_t *)sh->slot + off,
				  r->conn.slot_mr->lkey, r->remote_addr + off,
				  r->rkey, n, 0)) {
			srd_conn_fail(&r->conn, -EIO);
			return -EIO;
		}
		pr->reads++;
		off += n;
		len -= n;
	}
	ring_done(r, sh);
	return 0;
}

/*
 * The part of [*@off, +*@len) past the mailbox, which RDMA moves; the
 * mailbox's lines travel in the NOTIFYs, each side's own.
 */
static void bulk_range(uint64_t *off, uint64_t *len)
{
	uint64_t end = *off + *len;

	if (*off < SIVSHM_MBOX_SIZE)
		*off = SIVSHM_MBOX_SIZE;
	*len = end > *off ? end - *off : 0;
}

static void on_completion(void *arg, const struct ibv_wc *wc)
{
	struct sivshm *sh = arg;
	struct srd_reducer *r = sh->rdma;
	uint32_t idx = SRD_WR_LOW(wc->wr_id);
	const char *why;
	struct srd_msg m;

	if (SRD_WR_KIND(wc->wr_id) == SRD_WR_READ) {
		if (r->count && r->ring[r->head].reads)
			r->ring[r->head].reads--;
		ring_done(r, sh);
		return;
	}
	if (idx >= SRD_RECV_DEPTH)
		return;
	if (srd_msg_decode(srd_conn_msg(&r->conn, idx), wc->byte_len,
			   sh->nvectors, sh->geo.slice_size, &m, &why)) {
		sivshm_log("reducer %u: the mapper sent a bad message: %s",
			   sh->id, why);
		srd_conn_fail(&r->conn, -EPROTO);
		return;
	}
	if (m.type == SRD_PING) {
		if (srd_conn_recv(&r->conn, idx))
			srd_conn_fail(&r->conn, -EIO);
		return;
	}
	bulk_range(&m.offset, &m.length);
	fifo_read(sh, m.vector, idx, m.offset, m.length, m.line);
}

static void set_disconnected(struct sivshm *sh, const char *why)
{
	struct srd_reducer *r = sh->rdma;

	pthread_mutex_lock(&sh->lock);
	if (r->connected)
		sivshm_log("reducer %u: lost the mapper: %s", sh->id, why);
	r->connected = 0;
	pthread_cond_broadcast(&sh->peers_changed);
	pthread_mutex_unlock(&sh->lock);
}

static void *reducer_thread(void *arg)
{
	struct sivshm *sh = arg;
	struct srd_reducer *r = sh->rdma;
	struct pollfd pfd[3] = {
		{ .fd = r->stop, .events = POLLIN },
		{ .fd = r->ch->fd, .events = POLLIN },
		{ .fd = r->conn.ch->fd, .events = POLLIN },
	};
	struct rdma_cm_event *ev;
	int64_t next_ping = proto_now_ms() + SRD_HEARTBEAT_MS;

	for (;;) {
		int64_t now = proto_now_ms();
		int n;

		if (now >= next_ping) {
			/* A lost mapper fails this within the retries. */
			if (pfd[2].fd >= 0)
				srd_conn_ping(&r->conn);
			next_ping = now + SRD_HEARTBEAT_MS;
		}
		n = poll(pfd, 3, (int)(next_ping - now));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[0].revents)
			break;
		if (pfd[2].revents) {
			int err = srd_conn_poll(&r->conn, on_completion, sh);

			if (err) {
				set_disconnected(sh, err == -EPROTO ?
						 "protocol violation" :
						 strerror(-err));
				/* Stop hearing a dead queue pair's flushes. */
				pfd[2].fd = -1;
			}
		}
		if (pfd[1].revents && !rdma_get_cm_event(r->ch, &ev)) {
			enum rdma_cm_event_type type = ev->event;

			rdma_ack_cm_event(ev);
			if (type == RDMA_CM_EVENT_DISCONNECTED ||
			    type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
				srd_conn_fail(&r->conn, -ENOTCONN);
				set_disconnected(sh, rdma_event_str(type));
				pfd[2].fd = -1;
			}
		}
	}
	return NULL;
}

/* Wait until the slot's first read is in, until @deadline. */
static int wait_synced(struct sivshm *sh, int64_t deadline)
{
	struct srd_reducer *r = sh->rdma;
	struct timespec ts;
	int64_t left;
	int err = 0;

	pthread_mutex_lock(&sh->lock);
	while (!r->synced && r->connected && !err) {
		left = deadline - proto_now_ms();
		if (left <= 0) {
			err = ETIMEDOUT;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += left / 1000;
		ts.tv_nsec += (left % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		err = pthread_cond_timedwait(&sh->peers_changed, &sh->lock,
					     &ts);
	}
	if (!r->synced && !err)
		err = ENOTCONN;
	pthread_mutex_unlock(&sh->lock);
	return r->synced ? 0 : -err;
}

int sivshm_reducer_connect(struct sivshm **out, const char *address,
			   uint32_t id, uint32_t nvectors,
			   const uint8_t key[SIVSHM_KEY_BYTES], uint32_t flags,
			   int timeout_ms)
{
	return sivshm_reducer_connect_checked(out, address, id, nvectors, key,
					      flags, timeout_ms, 0);
}

int sivshm_reducer_connect_checked(struct sivshm **out, const char *address,
				   uint32_t id, uint32_t nvectors,
				   const uint8_t key[SIVSHM_KEY_BYTES],
				   uint32_t flags, int timeout_ms,
				   uint64_t max_slot)
{
	struct sockaddr_storage dst;
	struct srd_hello h = { 0 };
	uint8_t nonce_m[SRD_NONCE_BYTES];
	struct srd_welcome w;
	uint8_t mac[SRD_MAC_BYTES];
	struct srd_reducer *r;
	struct sivshm *sh;
	const char *why = "";
	int64_t deadline;
	uint32_t v;
	int err;

	if (!out || !address || !key || id == SIVSHM_MAPPER ||
	    id > SIVSHM_MAX_REDUCERS || nvectors < 1 ||
	    nvectors > SIVSHM_MAX_VECTORS || (flags & ~SIVSHM_MLOCK) ||
	    timeout_ms <= 0)
		return -EINVAL;
	err = srd_crypto_init();
	if (err)
		return err;
	err = srd_addr_parse(address, 0, &dst);
	if (err) {
		sivshm_log("reducer %u: %s is no HOST:PORT: %s", id, address,
			   strerror(-err));
		return err;
	}
	sh = sivshm_handle_new(&remote_ops, id, nvectors, flags);
	r = calloc(1, sizeof(*r));
	if (!sh || !r) {
		free(r);
		if (sh)
			sivshm_handle_free(sh);
		return -ENOMEM;
	}
	sh->rdma = r;
	r->stop = -1;
	for (v = 0; v < nvectors; v++) {
		sh->own_fd[v] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (sh->own_fd[v] < 0) {
			err = -errno;
			goto err_free;
		}
	}

	deadline = proto_now_ms() + timeout_ms;
	h.type = SRD_ASK;
	h.id = id;
	h.nvectors = nvectors;
	srd_random(h.nonce_r, SRD_NONCE_BYTES);
	err = attempt(r, (struct sockaddr *)&dst, &h, deadline, nonce_m, &w,
		      &why);
	reducer_teardown(r);
	if (err != -EAGAIN) {
		if (!err)
			err = -EPROTO;	/* accepted without a proof */
		goto err_log;
	}
	h.type = SRD_PROVE;
	srd_mac_reducer(key, &h, nonce_m, h.mac);
	err = attempt(r, (struct sockaddr *)&dst, &h, deadline, nonce_m, &w,
		      &why);
	if (err)
		goto err_log;
	srd_mac_mapper(key, id, h.nonce_r, nonce_m, &w, mac);
	if (!srd_mac_equal(mac, w.mac)) {
		err = -EACCES;
		why = "the mapper did not prove it holds the key";
		goto err_log;
	}
	/* Nothing is allocated, registered or read for a slot over the cap. */
	if (max_slot && w.slice_size > max_slot) {
		sivshm_log("reducer %u: the mapper at %s offers a %llu-byte "
			   "slot, over the %llu bytes this reducer takes", id,
			   address, (unsigned long long)w.slice_size,
			   (unsigned long long)max_slot);
		err = -EFBIG;
		goto err_quiet;
	}
	sh->geo.slice_size = w.slice_size;
	sh->geo.region_size = w.region_size;
	sh->geo.nreducers = w.nreducers;
	r->remote_addr = w.addr;
	r->rkey = w.rkey;
	sh->slot = mmap(NULL, w.slice_size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sh->slot == MAP_FAILED) {
		sh->slot = NULL;
		err = -errno;
		why = "no memory for the slot";
		goto err_log;
	}
	if ((flags & SIVSHM_MLOCK) && mlock(sh->slot, w.slice_size)) {
		err = -errno;
		why = "mlock of the slot failed (RLIMIT_MEMLOCK?)";
		goto err_log;
	}
	/* Our slot: local access only; the mapper never reaches it. */
	err = srd_conn_reg_slot(&r->conn, sh->slot, w.slice_size,
				IBV_ACCESS_LOCAL_WRITE);
	if (err) {
		why = "registering the slot (RLIMIT_MEMLOCK?)";
		goto err_log;
	}
	r->stop = eventfd(0, EFD_CLOEXEC);
	if (r->stop < 0) {
		err = -errno;
		goto err_log;
	}
	/*
	 * Read the whole slot first: a reducer rejoining finds what the
	 * mapper left there (a pending request), as on one host.
	 */
	err = fifo_read(sh, SRD_NO_VECTOR, 0, 0, w.slice_size, NULL);
	if (err) {
		why = "reading the slot";
		goto err_log;
	}
	err = -pthread_create(&r->thread, NULL, reducer_thread, sh);
	if (err) {
		close(r->stop);
		r->stop = -1;
		goto err_log;
	}
	err = wait_synced(sh, deadline);
	if (err) {
		uint64_t one = 1;

		why = "reading the slot";
		if (write(r->stop, &one, sizeof(one)) == sizeof(one))
			pthread_join(r->thread, NULL);
		close(r->stop);
		r->stop = -1;
		goto err_log;
	}
	*out = sh;
	return 0;

err_log:
	sivshm_log("reducer %u: cannot join the mapper at %s: %s%s%s", id,
		   address, strerror(-err), *why ? ": " : "", why);
err_quiet:
	reducer_teardown(r);
	if (sh->slot)
		munmap(sh->slot, w.slice_size);
err_free:
	proto_close_fds(sh->own_fd, nvectors);
	free(r);
	sivshm_handle_free(sh);
	return err;
}

static void remote_close(struct sivshm *sh)
{
	struct srd_reducer *r = sh->rdma;
	uint64_t one = 1;

	if (write(r->stop, &one, sizeof(one)) == sizeof(one))
		pthread_join(r->thread, NULL);
	close(r->stop);
	reducer_teardown(r);
	munmap(sh->slot, sh->geo.slice_size);
	proto_close_fds(sh->own_fd, sh->nvectors);
	free(r);
}

static void *remote_slot(struct sivshm *sh, uint32_t id)
{
	return id == sh->id ? sh->slot : NULL;
}

static int remote_connected(struct sivshm *sh)
{
	int c;

	pthread_mutex_lock(&sh->lock);
	c = sh->rdma->connected;
	pthread_mutex_unlock(&sh->lock);
	return c;
}

static int remote_peers(struct sivshm *sh, uint64_t *bitmap)
{
	*bitmap = remote_connected(sh) ? 1 : 0;
	return 0;
}

static int remote_wait_peers(struct sivshm *sh, uint64_t mask, int timeout_ms)
{
	return sivshm_reducer_wait_peers(mask, remote_connected(sh));
}

/*
 * Write our bytes into the mapper's copy of the slot, then NOTIFY; RC
 * places the WRITE before the SEND completes there.  Returns once the
 * NOTIFY is acknowledged, so the slot is ours to change again.
 */
static int remote_notify(struct sivshm *sh, uint32_t peer, uint32_t vector,
			 uint64_t offset, uint64_t length)
{
	struct srd_reducer *r = sh->rdma;
	struct srd_msg m = {
		.type = SRD_NOTIFY,
		.vector = vector,
		.offset = offset,
		.length = length,
	};
	uint64_t off = offset, left = length;
	int64_t seq;
	int err;

	(void)peer;
	if (!remote_connected(sh))
		return -ENOTCONN;
	bulk_range(&off, &left);
	/* Our response line travels with the NOTIFY, after the bytes. */
	sivshm_mbox_line_get(sh->slot, 1, m.line);
	while (left) {
		uint64_t n = left < SRD_CHUNK ? left : SRD_CHUNK;

		err = srd_conn_rdma(&r->conn, IBV_WR_RDMA_WRITE,
				    (uint8_t *)sh->slot + off,
				    r->conn.slot_mr->lkey, r->remote_addr + off,
				    r->rkey, n, 0);
		if (err)
			return err;
		off += n;
		left -= n;
	}
	seq = srd_conn_send(&r->conn, &m, SRD_POST_TIMEOUT_MS);
	if (seq < 0)
		return (int)seq;
	return srd_conn_wait_send(&r->conn, seq);
}

static int remote_in_fd(struct sivshm *sh, uint32_t peer, uint32_t vector)
{
	(void)peer;
	return sh->own_fd[vector];
}

static const struct sivshm_ops remote_ops = {
	.close = remote_close,
	.slot = remote_slot,
	.peers = remote_peers,
	.wait_peers = remote_wait_peers,
	.notify = remote_notify,
	.in_fd = remote_in_fd,
};
