// SPDX-License-Identifier: MIT
/*
 * charcount over plain IVSHMEM, reducer: join ivshmem-server, map the whole
 * region, find the mapper's directory in slot 0, publish our peer id there
 * and count one byte in whatever the mapper puts in slot J.  When the
 * server says the mapper has left, we leave too.
 *
 *   charcount-ivshmem-reducer --server-socket PATH --id J
 *                             [--mode poll|irq] [--timeout MS]
 *
 * The mapper is trusted, but the geometry it publishes is checked against
 * the region before any slot is touched.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "charcount.h"
#include "ivshmem-client.h"
#include "sivshm.h"

struct reducer {
	struct ivc ivc;
	uint8_t *region;
	uint32_t id;
	int irq;
	int timeout_ms;
	uint64_t slice;
	int64_t mapper;		/* the mapper's peer id */
	int ring;		/* rings the mapper's vector 0 */
	struct sivshm_mbox *mb;
};

static void usage(void)
{
	fprintf(stderr, "usage: charcount-ivshmem-reducer --server-socket PATH "
		"--id J [--mode poll|irq] [--timeout MS]\n");
	exit(2);
}

/* Wait for the mapper's directory and check it: 0, or a negative errno. */
static int read_directory(struct reducer *r, int64_t *mapper)
{
	struct ivc_directory *dir = (struct ivc_directory *)r->region;
	uint64_t deadline = cc_now_ns() + r->timeout_ms * 1000000ULL;
	uint64_t n, slice, peer;

	while (__atomic_load_n(&dir->magic, __ATOMIC_ACQUIRE) != IVC_DIR_MAGIC) {
		if (cc_now_ns() >= deadline)
			return -ETIMEDOUT;
		usleep(1000);
	}
	n = __atomic_load_n(&dir->nreducers, __ATOMIC_RELAXED);
	slice = __atomic_load_n(&dir->slice_size, __ATOMIC_RELAXED);
	peer = __atomic_load_n(&dir->mapper_peer, __ATOMIC_RELAXED);
	if (r->id > n || n >= IVC_DIR_SLOTS || slice <= SIVSHM_MBOX_SIZE ||
	    slice % 4096 || slice > r->ivc.shm_size / (n + 1) ||
	    peer > IVC_MAX_ID || (int64_t)peer == r->ivc.id)
		return -EPROTO;
	r->slice = slice;
	r->mb = (struct sivshm_mbox *)(r->region + r->id * slice);
	*mapper = peer;
	/* Our peer id + 1 (0 is "not yet"): now the mapper can ring us. */
	__atomic_store_n(&dir->reducer_peer[r->id], r->ivc.id + 1,
			 __ATOMIC_RELEASE);
	return 0;
}

/* Wait until the server has announced the mapper's eventfd to us. */
static int find_mapper(struct reducer *r)
{
	uint64_t deadline = cc_now_ns() + r->timeout_ms * 1000000ULL;
	int ret;

	while ((r->ring = ivc_peer_fd(&r->ivc, r->mapper, CC_VECTOR)) < 0) {
		if (cc_now_ns() >= deadline)
			return -ETIMEDOUT;
		ret = ivc_handle(&r->ivc, 10);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Has the server said the mapper left (or gone itself)? */
static int mapper_gone(struct reducer *r)
{
	int ret;

	while ((ret = ivc_handle(&r->ivc, 0)) > 0)
		;
	return ret < 0 || ivc_peer_fd(&r->ivc, r->mapper, CC_VECTOR) < 0;
}

static int open_reducer(struct reducer *r, const char *path)
{
	int err;

	err = ivc_connect(&r->ivc, path, CC_NVECTORS, r->timeout_ms);
	if (err)
		return err;
	if (r->ivc.shm_size < sizeof(struct ivc_directory))
		return -EPROTO;
	r->region = mmap(NULL, r->ivc.shm_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, r->ivc.shm_fd, 0);
	if (r->region == MAP_FAILED) {
		err = -errno;
		r->region = NULL;
		return err;
	}
	err = read_directory(r, &r->mapper);
	if (!err)
		err = find_mapper(r);
	return err;
}

/*
 * Wait for request @seq: spin in polling mode, sleep on vector 0 in irq.
 * Every 100 ms, see whether the mapper is still there.
 */
static int wait_request(struct reducer *r, uint64_t seq, uint64_t *req)
{
	struct pollfd pfd = { .fd = r->ivc.own[CC_VECTOR], .events = POLLIN };
	uint64_t deadline = cc_now_ns() + r->timeout_ms * 1000000ULL;

	for (;;) {
		if (!sivshm_mbox_wait_request(r->mb, seq, r->irq ? 0 : 100, req))
			return 0;
		if (cc_now_ns() >= deadline)
			return -ETIMEDOUT;
		/* Short waits: an interrupt lost while we were away is no hang. */
		if (r->irq && poll(&pfd, 1, 100) == 1)
			ivc_ack(pfd.fd);
		if (mapper_gone(r))
			return -ECONNRESET;
	}
}

static void answer(struct reducer *r, uint64_t seq, const uint64_t *resp)
{
	sivshm_mbox_post_response(r->mb, seq, resp);
	if (r->irq)
		ivc_ring(r->ring);
}

/* Serve requests until the exit request: 0, or a negative errno. */
static int serve(struct reducer *r)
{
	uint64_t req[SIVSHM_MBOX_WORDS], resp[SIVSHM_MBOX_WORDS] = { 0 };
	uint8_t *data = (uint8_t *)r->mb + SIVSHM_MBOX_SIZE;
	uint64_t seq;
	int err;

	seq = __atomic_load_n(&r->mb->resp_seq, __ATOMIC_ACQUIRE) + 1;
	for (;; seq++) {
		err = wait_request(r, seq, req);
		if (err) {
			fprintf(stderr, "reducer %u: no request %llu: %s\n",
				r->id, (unsigned long long)seq, strerror(-err));
			return err;
		}
		if (req[0] == CC_EXIT) {
			answer(r, seq, resp);
			return 0;
		}
		if (req[0] != CC_COUNT ||
		    req[1] > r->slice - SIVSHM_MBOX_SIZE || req[2] > 255) {
			fprintf(stderr, "reducer %u: bad request %llu\n", r->id,
				(unsigned long long)seq);
			return -EPROTO;
		}
		resp[0] = cc_count(data, req[1], req[2]);
		answer(r, seq, resp);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "server-socket", required_argument, NULL, 's' },
		{ "id", required_argument, NULL, 'i' },
		{ "mode", required_argument, NULL, 'm' },
		{ "timeout", required_argument, NULL, 't' },
		{ 0 }
	};
	struct reducer r = { .timeout_ms = 60000, .ring = -1 };
	const char *path = NULL;
	unsigned long id = 0;
	int c, err;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': path = optarg; break;
		case 'i': id = strtoul(optarg, NULL, 0); break;
		case 'm':
			if (strcmp(optarg, "irq") && strcmp(optarg, "poll"))
				usage();
			r.irq = !strcmp(optarg, "irq");
			break;
		case 't': r.timeout_ms = atoi(optarg); break;
		default: usage();
		}
	}
	if (optind != argc || !path || !id || id >= IVC_DIR_SLOTS ||
	    r.timeout_ms <= 0)
		usage();
	r.id = id;

	err = open_reducer(&r, path);
	if (err)
		fprintf(stderr, "reducer %u: cannot join %s: %s\n", r.id, path,
			strerror(-err));
	else
		err = serve(&r);
	if (r.region)
		munmap(r.region, r.ivc.shm_size);
	ivc_close(&r.ivc);
	return err ? 1 : 0;
}
