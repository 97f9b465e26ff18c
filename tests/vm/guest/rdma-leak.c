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
 *      the reducer joins it.
 * Each step is done ROUNDS times, so that a leak per step shows as growth.
 * Prints one line per step.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "nldev.h"
#include "sivshm.h"

#define RXE		"rxe0"
#define SOCKET		"/tmp/rdma-leak.sock"
#define SLICE		(64 * 1024)
/* Bounds in ms (TCG, Soft-RoCE): a join; the state settling. */
#define JOIN_MS		20000
#define SETTLE_MS	15000
#define ROUNDS		3

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

/* One interrupt each way, each with bytes that must arrive. */
static void round_trip(struct sivshm *m, struct sivshm *r, uint32_t id,
		       uint8_t tag)
{
	uint8_t *ms = sivshm_slot(m, id), *rs = sivshm_slot(r, id);
	uint32_t peer;
	int err;

	T_ASSERT(ms && rs, "no slot %u", id);
	memset(ms + 4096, tag, 4096);
	err = sivshm_notify_range(m, id, 0, 4096, 4096);
	T_ASSERT(!err, "mapper's notify: %s", strerror(-err));
	err = sivshm_wait(r, 0, JOIN_MS, &peer);
	T_ASSERT(!err, "reducer's wait: %s", strerror(-err));
	T_ASSERT(rs[4096] == tag && rs[8191] == tag, "the bytes did not come");
	memset(rs + 8192, tag ^ 0xff, 4096);
	err = sivshm_notify_range(r, 0, 0, 8192, 4096);
	T_ASSERT(!err, "reducer's notify: %s", strerror(-err));
	err = sivshm_wait(m, 0, JOIN_MS, &peer);
	T_ASSERT(!err && peer == id, "mapper's wait: %s, peer %u",
		 strerror(-err), peer);
	T_ASSERT(ms[8192] == (uint8_t)(tag ^ 0xff), "the answer did not come");
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
	sivshm_close(m);
	return 0;
}
