// SPDX-License-Identifier: GPL-2.0
/*
 * Nothing left behind by remote reducers that come and go, on either end:
 *
 *   rdma-leak ADDRESS          the test (mapper and reducers in this process)
 *   rdma-leak join ADDRESS     a reducer that joins as 2, says so, and dies
 *                              by SIGKILL (the test runs it)
 *
 * One mapper serves reducers 1 and 2 over RDMA at ADDRESS (this host's
 * RDMA device: Soft-RoCE loops the traffic back).  The process's state is
 * its open descriptors and what the RDMA device holds (the kernel's
 * resource counts: protection domains, queues, queue pairs, CM ids, memory
 * regions, contexts).  After a warm-up join, each of these must bring the
 * state back to what it was, within SETTLE_MS:
 *
 *   1. a reducer joins, one interrupt each way with bytes, and leaves;
 *   2. a reducer with a wrong key is refused;
 *   3. a reducer joins as an id that is connected already: it replaces
 *      the first, which sees its connection end; both close;
 *   4. a reducer process is killed while joined;
 *   5. the mapper closes while a reducer is joined; a new mapper serves,
 *      the reducer joins it;
 *   6. a reducer asks for a challenge, FLOOD_ASKS other requests ask for
 *      challenges of its id, and its proof is still accepted; the same
 *      proof sent again is refused (a replay).  Done by hand on RDMA CM
 *      with the wire format (rdma/wire.h).
 * Each step is done ROUNDS times, so that a leak per step shows as growth.
 * Prints one line per step.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "check.h"
#include "nldev.h"
#include "rdma/conn.h"
#include "rdma/wire.h"
#include "sivshm.h"

#define RXE		"rxe0"
#define SOCKET		"/tmp/rdma-leak.sock"
#define SLICE		(64 * 1024)
/* Bounds in ms (TCG, Soft-RoCE): a join; the state settling. */
#define JOIN_MS		20000
#define SETTLE_MS	15000
#define ROUNDS		3
/* Requests for challenges between a reducer's own and its proof. */
#define FLOOD_ASKS	24

struct state {
	unsigned int fds;
	uint64_t res[NLDEV_RES_COUNT];
};

static uint8_t key[SIVSHM_MAX_REDUCERS + 1][SIVSHM_KEY_BYTES];
static uint8_t wrong_key[SIVSHM_KEY_BYTES];

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void take(struct state *s)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int err;

	T_ASSERT(d, "opendir /proc/self/fd");
	s->fds = 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			s->fds++;
	closedir(d);
	err = nldev_res_summary(RXE, s->res);
	T_ASSERT(!err, "resources of %s: %s", RXE, strerror(-err));
}

static int same(const struct state *a, const struct state *b)
{
	return a->fds == b->fds && !memcmp(a->res, b->res, sizeof(a->res));
}

static void show(const char *what, const struct state *s)
{
	fprintf(stderr, "%s: fds %u", what, s->fds);
	for (unsigned int k = 0; k < NLDEV_RES_COUNT; k++)
		fprintf(stderr, " %s %llu", nldev_res_name[k],
			(unsigned long long)s->res[k]);
	fprintf(stderr, "\n");
}

/* Until the state is @want again; fails past SETTLE_MS. */
static void settle(const struct state *want, const char *step)
{
	int64_t deadline = now_ms() + SETTLE_MS;
	struct state s;

	for (;;) {
		take(&s);
		if (same(&s, want))
			return;
		if (now_ms() > deadline)
			break;
		usleep(50000);
	}
	show("expected", want);
	show("found", &s);
	T_ASSERT(0, "%s left state behind (%d ms)", step, SETTLE_MS);
}

/* The state once it has held still for a second. */
static void steady(struct state *s)
{
	int64_t deadline = now_ms() + SETTLE_MS;
	struct state prev;

	take(&prev);
	for (;;) {
		usleep(1000000);
		take(s);
		if (same(s, &prev))
			return;
		T_ASSERT(now_ms() < deadline, "the state never held still");
		prev = *s;
	}
}

static struct sivshm *mapper_start(const char *address)
{
	const uint8_t *keys[SIVSHM_MAX_REDUCERS + 1] = {
		NULL, key[1], key[2],
	};
	struct sivshm_mapper_opts o = {
		.socket_path = SOCKET,
		.name = "rdma-leak",
		.size = 3 * SLICE,
		.nreducers = 2,
		.nvectors = 1,
	};
	struct sivshm_remote_opts r = {
		.listen = address,
		.ids = 1ull << 1 | 1ull << 2,
		.keys = keys,
	};
	struct sivshm *m;
	int err;

	err = sivshm_mapper_open(&m, &o);
	T_ASSERT(!err, "mapper: %s", strerror(-err));
	err = sivshm_mapper_serve_remote(m, &r);
	T_ASSERT(!err, "serving on %s: %s", address, strerror(-err));
	return m;
}

static struct sivshm *join(const char *address, uint32_t id)
{
	struct sivshm *sh;
	int err = sivshm_reducer_connect(&sh, address, id, 1, key[id], 0,
					 JOIN_MS);

	T_ASSERT(!err, "joining as %u: %s", id, strerror(-err));
	return sh;
}

/* Until the mapper sees exactly the reducers of @want. */
static void wait_peers(struct sivshm *m, uint64_t want)
{
	int64_t deadline = now_ms() + SETTLE_MS;
	uint64_t peers;

	for (;;) {
		T_ASSERT(!sivshm_peers(m, &peers));
		if (peers == want)
			return;
		T_ASSERT(now_ms() < deadline, "peers %#llx, not %#llx",
			 (unsigned long long)peers, (unsigned long long)want);
		usleep(20000);
	}
}

/*
 * One interrupt each way, each with bytes that must arrive, once the
 * mapper has seen @r join (its side of the connection completes after the
 * reducer's: a mapper waits for its peers, as charcount does).
 */
static void round_trip(struct sivshm *m, struct sivshm *r, uint32_t id,
		       uint8_t tag)
{
	uint8_t *ms = sivshm_slot(m, id), *rs = sivshm_slot(r, id);
	uint8_t answer = tag ^ 0xff;
	uint32_t peer;
	int err;

	T_ASSERT(ms && rs, "no slot %u", id);
	wait_peers(m, 1ull << id);
	memset(ms + 4096, tag, 4096);
	err = sivshm_notify_range(m, id, 0, 4096, 4096);
	T_ASSERT(!err, "mapper's notify: %s", strerror(-err));
	err = sivshm_wait(r, 0, JOIN_MS, &peer);
	T_ASSERT(!err, "reducer's wait: %s", strerror(-err));
	T_ASSERT(rs[4096] == tag && rs[8191] == tag, "the bytes did not come");
	memset(rs + 8192, answer, 4096);
	err = sivshm_notify_range(r, 0, 0, 8192, 4096);
	T_ASSERT(!err, "reducer's notify: %s", strerror(-err));
	err = sivshm_wait(m, 0, JOIN_MS, &peer);
	T_ASSERT(!err && peer == id, "mapper's wait: %s, peer %u",
		 strerror(-err), peer);
	T_ASSERT(ms[8192] == answer, "the answer did not come");
}

/* Until @r sees the mapper gone. */
static void wait_gone(struct sivshm *r)
{
	int64_t deadline = now_ms() + SETTLE_MS;
	uint64_t peers;

	for (;;) {
		T_ASSERT(!sivshm_peers(r, &peers));
		if (!peers)
			return;
		T_ASSERT(now_ms() < deadline, "the reducer still sees its "
			 "mapper");
		usleep(20000);
	}
}

static void killed_reducer(struct sivshm *m, const char *self,
			   const char *address)
{
	int fd[2], status;
	char line[64];
	pid_t pid;
	FILE *f;

	T_ASSERT(!pipe(fd));
	pid = fork();
	T_ASSERT(pid >= 0);
	if (!pid) {
		dup2(fd[1], STDOUT_FILENO);
		execl("/proc/self/exe", self, "join", address, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	f = fdopen(fd[0], "r");
	T_ASSERT(f);
	T_ASSERT(fgets(line, sizeof(line), f) && !strcmp(line, "joined\n"),
		 "the child did not join");
	T_ASSERT(waitpid(pid, &status, 0) == pid);
	T_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		 "the child was not killed: %#x", status);
	fclose(f);
	wait_peers(m, 0);
}

/* The next event on @ch, which must be @want. */
static void raw_event(struct rdma_event_channel *ch,
		      enum rdma_cm_event_type want)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	T_ASSERT(poll(&pfd, 1, JOIN_MS) == 1, "no %s in %d ms",
		 rdma_event_str(want), JOIN_MS);
	T_ASSERT(!rdma_get_cm_event(ch, &ev));
	T_ASSERT(ev->event == want, "%s (status %d), not %s",
		 rdma_event_str(ev->event), ev->status, rdma_event_str(want));
	rdma_ack_cm_event(ev);
}

/*
 * One connection request carrying HELLO @h.  Returns 1 if the mapper
 * accepted it (the connection is then closed at once), or 0 with its
 * refusal in *@rej.
 */
static int raw_request(const struct sockaddr *dst, const struct srd_hello *h,
		       struct srd_reject *rej)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	uint8_t buf[SRD_HELLO_SIZE];
	struct rdma_conn_param param;
	struct rdma_cm_id *cm;
	int accepted = 0;

	T_ASSERT(ch && !rdma_create_id(ch, &cm, NULL, RDMA_PS_TCP));
	T_ASSERT(!rdma_resolve_addr(cm, NULL, (struct sockaddr *)dst,
				    JOIN_MS));
	raw_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	T_ASSERT(!rdma_resolve_route(cm, JOIN_MS));
	raw_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	/* librdmacm makes the queues; a proof accepted needs a QP. */
	T_ASSERT(!rdma_create_qp(cm, NULL, &attr));
	srd_hello_encode(h, buf);
	srd_conn_param(&param, buf, sizeof(buf));
	T_ASSERT(!rdma_connect(cm, &param));
	{
		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
		struct rdma_cm_event *ev;

		T_ASSERT(poll(&pfd, 1, JOIN_MS) == 1, "no answer to a HELLO");
		T_ASSERT(!rdma_get_cm_event(ch, &ev));
		if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
			accepted = 1;
		} else {
			T_ASSERT(ev->event == RDMA_CM_EVENT_REJECTED,
				 "a HELLO ended in %s",
				 rdma_event_str(ev->event));
			T_ASSERT(!srd_reject_decode(
					ev->param.conn.private_data,
					ev->param.conn.private_data_len, rej),
				 "a REJECT we cannot read");
		}
		rdma_ack_cm_event(ev);
	}
	if (accepted) {
		T_ASSERT(!rdma_disconnect(cm));
		raw_event(ch, RDMA_CM_EVENT_DISCONNECTED);
	}
	rdma_destroy_qp(cm);
	rdma_destroy_id(cm);
	rdma_destroy_event_channel(ch);
	return accepted;
}

/* Step 6: a flood of ASKs between an ASK and its proof; then a replay. */
static void ask_flood(struct sivshm *m, const char *address)
{
	struct srd_hello h = { .type = SRD_ASK, .id = 1, .nvectors = 1 };
	struct srd_hello flood = h;
	struct sockaddr_storage dst;
	struct srd_reject rej;

	T_ASSERT(!srd_addr_parse(address, 0, &dst), "%s", address);
	for (unsigned int i = 0; i < SRD_NONCE_BYTES; i++)
		h.nonce_r[i] = random();
	T_ASSERT(!raw_request((struct sockaddr *)&dst, &h, &rej));
	T_EQ(rej.code, SRD_CHALLENGE);
	for (int i = 0; i < FLOOD_ASKS; i++) {
		struct srd_reject r;

		flood.nonce_r[0] = i;
		T_ASSERT(!raw_request((struct sockaddr *)&dst, &flood, &r));
		T_EQ(r.code, SRD_CHALLENGE);
	}
	h.type = SRD_PROVE;
	srd_mac_reducer(key[1], &h, rej.nonce_m, h.mac);
	T_ASSERT(raw_request((struct sockaddr *)&dst, &h, &rej),
		 "the proof refused (code %u) after %d ASKs", rej.code,
		 FLOOD_ASKS);
	wait_peers(m, 0);
	T_ASSERT(!raw_request((struct sockaddr *)&dst, &h, &rej),
		 "a replayed proof accepted");
	T_EQ(rej.code, SRD_E_AUTH);
}

static int child_join(const char *address)
{
	struct sivshm *r = join(address, 2);

	(void)r;
	printf("joined\n");
	fflush(stdout);
	raise(SIGKILL);
	return 1;
}

int main(int argc, char **argv)
{
	struct sivshm *m, *a, *b;
	struct state base;
	int err;

	for (unsigned int j = 1; j <= 2; j++)
		memset(key[j], 0x10 * j, SIVSHM_KEY_BYTES);
	memset(wrong_key, 0x77, SIVSHM_KEY_BYTES);
	if (argc == 3 && !strcmp(argv[1], "join"))
		return child_join(argv[2]);
	if (argc != 2) {
		fprintf(stderr, "usage: rdma-leak ADDRESS | rdma-leak join "
			"ADDRESS\n");
		return 2;
	}

	/* Warm up: the libraries open their device contexts once. */
	m = mapper_start(argv[1]);
	a = join(argv[1], 1);
	round_trip(m, a, 1, 1);
	sivshm_close(a);
	wait_peers(m, 0);
	steady(&base);
	show("rdma-leak: state", &base);

	for (int i = 0; i < ROUNDS; i++) {
		a = join(argv[1], 1);
		round_trip(m, a, 1, 2 + i);
		sivshm_close(a);
		wait_peers(m, 0);
		settle(&base, "a reducer leaving");
	}
	printf("rdma-leak: join and leave x%d: state as before\n", ROUNDS);

	for (int i = 0; i < ROUNDS; i++) {
		err = sivshm_reducer_connect(&a, argv[1], 1, 1, wrong_key, 0,
					     JOIN_MS);
		T_ASSERT(err == -EACCES, "a wrong key: %s",
			 err ? strerror(-err) : "accepted");
		settle(&base, "a refused reducer");
	}
	printf("rdma-leak: wrong key x%d: refused, state as before\n", ROUNDS);

	for (int i = 0; i < ROUNDS; i++) {
		a = join(argv[1], 1);
		b = join(argv[1], 1);
		wait_gone(a);
		round_trip(m, b, 1, 0x40 + i);
		sivshm_close(a);
		sivshm_close(b);
		wait_peers(m, 0);
		settle(&base, "a replaced reducer");
	}
	printf("rdma-leak: id taken again x%d: the first ends, state as "
	       "before\n", ROUNDS);

	for (int i = 0; i < ROUNDS; i++) {
		killed_reducer(m, argv[0], argv[1]);
		settle(&base, "a killed reducer");
	}
	printf("rdma-leak: reducer killed x%d: state as before\n", ROUNDS);

	for (int i = 0; i < ROUNDS; i++) {
		b = join(argv[1], 2);
		sivshm_close(m);
		wait_gone(b);
		sivshm_close(b);
		m = mapper_start(argv[1]);
		b = join(argv[1], 2);
		round_trip(m, b, 2, 0x80 + i);
		sivshm_close(b);
		wait_peers(m, 0);
		settle(&base, "a mapper closed under a reducer");
	}
	printf("rdma-leak: mapper closed and started again x%d: state as "
	       "before\n", ROUNDS);

	for (int i = 0; i < ROUNDS; i++) {
		ask_flood(m, argv[1]);
		settle(&base, "a flood of ASKs");
	}
	printf("rdma-leak: proof after %d ASKs x%d: accepted, its replay "
	       "refused, state as before\n", FLOOD_ASKS, ROUNDS);
	sivshm_close(m);
	return 0;
}
