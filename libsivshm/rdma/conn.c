// SPDX-License-Identifier: MIT
/*
 * One reliable connection of the RDMA transport: its verbs resources,
 * bounded posting and completion reaping (conn.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conn.h"
#include "log.h"

int srd_conn_create(struct srd_conn *c, struct rdma_cm_id *cm)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
		.cap = {
			.max_send_wr = SRD_SEND_DEPTH,
			.max_recv_wr = SRD_RECV_DEPTH,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = SRD_MSG_SIZE,
		},
	};
	size_t bytes = (size_t)SRD_RECV_DEPTH * SRD_MSG_SIZE;
	uint8_t timeout = SRD_ACK_TIMEOUT;
	int err, flags;

	memset(c, 0, sizeof(*c));
	c->cm = cm;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	err = -ENOMEM;
	c->msgs = calloc(1, bytes);
	if (!c->msgs)
		goto err;
	c->pd = ibv_alloc_pd(cm->verbs);
	if (!c->pd)
		goto err_errno;
	c->ch = ibv_create_comp_channel(cm->verbs);
	if (!c->ch)
		goto err_errno;
	flags = fcntl(c->ch->fd, F_GETFL);
	if (flags < 0 || fcntl(c->ch->fd, F_SETFL, flags | O_NONBLOCK) < 0)
		goto err_errno;
	c->cq = ibv_create_cq(cm->verbs, SRD_SEND_DEPTH + SRD_RECV_DEPTH,
			      NULL, c->ch, 0);
	if (!c->cq)
		goto err_errno;
	if (ibv_req_notify_cq(c->cq, 0))
		goto err_errno;
	attr.send_cq = attr.recv_cq = c->cq;
	if (rdma_create_qp(cm, c->pd, &attr))
		goto err_errno;
	/* rdma_cm's default would be far longer than our bound. */
	if (rdma_set_option(cm, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			    &timeout, sizeof(timeout)))
		goto err_qp;
	c->msg_mr = ibv_reg_mr(c->pd, c->msgs, bytes, IBV_ACCESS_LOCAL_WRITE);
	if (!c->msg_mr)
		goto err_qp;
	for (uint32_t i = 0; i < SRD_RECV_DEPTH; i++) {
		err = srd_conn_recv(c, i);
		if (err)
			goto err_mr;
	}
	return 0;

err_mr:
	ibv_dereg_mr(c->msg_mr);
	c->msg_mr = NULL;
	goto err_qp_keep;
err_qp:
	err = -errno;
err_qp_keep:
	rdma_destroy_qp(cm);
	goto err;
err_errno:
	err = errno ? -errno : -ENOMEM;
err:
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->ch)
		ibv_destroy_comp_channel(c->ch);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	free(c->msgs);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	memset(c, 0, sizeof(*c));
	return err;
}

void srd_conn_destroy(struct srd_conn *c)
{
	int err;

	if (!c->pd)
		return;
	/*
	 * The queue pair first: nothing may touch the buffers after.  The
	 * regions before their protection domain, which stays allocated
	 * (EBUSY) while one is left.
	 */
	rdma_destroy_qp(c->cm);
	if (c->slot_mr)
		ibv_dereg_mr(c->slot_mr);
	ibv_dereg_mr(c->msg_mr);
	ibv_destroy_cq(c->cq);
	ibv_destroy_comp_channel(c->ch);
	err = ibv_dealloc_pd(c->pd);
	if (err)
		sivshm_log("rdma: a protection domain left allocated: %s",
			   strerror(err));
	free(c->msgs);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	memset(c, 0, sizeof(*c));
}

int srd_conn_reg_slot(struct srd_conn *c, void *addr, size_t len,
		      int access)
{
	c->slot_mr = ibv_reg_mr(c->pd, addr, len, access);
	return c->slot_mr ? 0 : errno ? -errno : -ENOMEM;
}

void srd_conn_fail(struct srd_conn *c, int err)
{
	pthread_mutex_lock(&c->lock);
	if (!c->error)
		c->error = err;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static void deadline_in(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/* With c->lock held: wait for a free send slot and take it. */
static int take_slot(struct srd_conn *c, int timeout_ms)
{
	struct timespec ts;

	deadline_in(&ts, timeout_ms);
	while (!c->error && c->sq_used >= SRD_SEND_DEPTH) {
		if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) ==
		    ETIMEDOUT)
			return -ETIMEDOUT;
	}
	if (c->error)
		return c->error;
	c->sq_used++;
	return 0;
}

int64_t srd_conn_send(struct srd_conn *c, const struct srd_msg *m,
		      int timeout_ms)
{
	uint8_t buf[SRD_MSG_SIZE];
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf,
		.length = sizeof(buf),
	};
	struct ibv_send_wr wr = {
		.wr_id = SRD_WR_ID(SRD_WR_SEND, 0),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
	}, *bad;
	int64_t seq;
	int err;

	srd_msg_encode(m, buf);
	pthread_mutex_lock(&c->lock);
	err = take_slot(c, timeout_ms);
	if (!err) {
		err = -ibv_post_send(c->cm->qp, &wr, &bad);
		if (err)
			c->sq_used--;
	}
	seq = err ? err : (int64_t)++c->sends_posted;
	pthread_mutex_unlock(&c->lock);
	return seq;
}

int srd_conn_wait_send(struct srd_conn *c, int64_t seq)
{
	struct timespec ts;
	int err = 0;

	deadline_in(&ts, SRD_POST_TIMEOUT_MS);
	pthread_mutex_lock(&c->lock);
	while (!c->error && c->sends_done < (uint64_t)seq && !err)
		err = pthread_cond_timedwait(&c->cond, &c->lock, &ts);
	if (c->sends_done >= (uint64_t)seq)
		err = 0;
	else
		err = c->error ? c->error : -ETIMEDOUT;
	pthread_mutex_unlock(&c->lock);
	return err;
}

int srd_conn_rdma(struct srd_conn *c, enum ibv_wr_opcode op, void *local,
		  uint32_t lkey, uint64_t remote, uint32_t rkey, uint64_t len,
		  uint64_t cookie)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)local,
		.length = (uint32_t)len,
		.lkey = lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = SRD_WR_ID(op == IBV_WR_RDMA_READ ? SRD_WR_READ :
				   SRD_WR_WRITE, cookie),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = remote, .rkey = rkey },
	}, *bad;
	int err;

	/* One SGE carries at most 2 GiB - 1; slots are cut by the caller. */
	if (len > INT32_MAX)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	err = take_slot(c, SRD_POST_TIMEOUT_MS);
	if (!err) {
		err = -ibv_post_send(c->cm->qp, &wr, &bad);
		if (err)
			c->sq_used--;
	}
	pthread_mutex_unlock(&c->lock);
	return err;
}

void srd_conn_ping(struct srd_conn *c)
{
	struct srd_msg m = { .type = SRD_PING };

	srd_conn_send(c, &m, 0);
}

int srd_conn_recv(struct srd_conn *c, uint32_t idx)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->msgs + (size_t)idx * SRD_MSG_SIZE),
		.length = SRD_MSG_SIZE,
		.lkey = c->msg_mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = SRD_WR_ID(SRD_WR_RECV, idx),
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;

	return -ibv_post_recv(c->cm->qp, &wr, &bad);
}

static int wc_errno(const struct ibv_wc *wc)
{
	switch (wc->status) {
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_LOC_PROT_ERR:
		return -EACCES;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return -ETIMEDOUT;
	default:
		return -ECONNRESET;
	}
}

int srd_conn_poll(struct srd_conn *c,
		  void (*cb)(void *arg, const struct ibv_wc *wc), void *arg)
{
	struct ibv_wc wc[16];
	struct ibv_cq *cq;
	void *ctx;
	int n;

	if (ibv_get_cq_event(c->ch, &cq, &ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		if (ibv_req_notify_cq(c->cq, 0))
			srd_conn_fail(c, -EIO);
	}
	while ((n = ibv_poll_cq(c->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			uint32_t kind = SRD_WR_KIND(wc[i].wr_id);

			pthread_mutex_lock(&c->lock);
			if (kind != SRD_WR_RECV) {
				c->sq_used--;
				if (kind == SRD_WR_SEND &&
				    wc[i].status == IBV_WC_SUCCESS)
					c->sends_done++;
				pthread_cond_broadcast(&c->cond);
			}
			pthread_mutex_unlock(&c->lock);
			if (wc[i].status != IBV_WC_SUCCESS)
				srd_conn_fail(c, wc_errno(&wc[i]));
			else if (kind == SRD_WR_RECV || kind == SRD_WR_READ)
				cb(arg, &wc[i]);
		}
	}
	if (n < 0)
		srd_conn_fail(c, -EIO);
	pthread_mutex_lock(&c->lock);
	n = c->error;
	pthread_mutex_unlock(&c->lock);
	return n;
}

void srd_conn_param(struct rdma_conn_param *p, const void *priv,
		    uint8_t priv_len)
{
	*p = (struct rdma_conn_param) {
		.private_data = priv,
		.private_data_len = priv_len,
		/* One READ in flight each way suffices: reads are queued. */
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = SRD_RETRY_COUNT,
		.rnr_retry_count = SRD_RNR_RETRY,
	};
}

int srd_addr_parse(const char *text, int passive,
		   struct sockaddr_storage *sa)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0),
	};
	struct addrinfo *res;
	char host[256];
	const char *colon, *port;
	size_t len;
	int err;

	if (!text)
		return -EINVAL;
	colon = strrchr(text, ':');
	if (!colon || !colon[1])
		return -EINVAL;
	port = colon + 1;
	len = colon - text;
	if (len && text[0] == '[') {
		if (text[len - 1] != ']')
			return -EINVAL;
		text++;
		len -= 2;
	}
	if (len >= sizeof(host))
		return -ENAMETOOLONG;
	memcpy(host, text, len);
	host[len] = 0;
	err = getaddrinfo(len ? host : NULL, port, &hints, &res);
	if (err)
		return err == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL;
	if (res->ai_addrlen > sizeof(*sa)) {
		freeaddrinfo(res);
		return -EINVAL;
	}
	memset(sa, 0, sizeof(*sa));
	memcpy(sa, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}
