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
	struct cc_reducer r;
	struct ivc ivc;
	uint8_t *region;
	int timeout_ms;
	int64_t mapper;		/* the mapper's peer id */
	int ring;		/* rings the mapper's vector 0 */
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
	if (r->r.id > n || n >= IVC_DIR_SLOTS || slice <= SIVSHM_MBOX_SIZE ||
	    slice % 4096 || slice > r->ivc.shm_size / (n + 1) ||
	    peer > IVC_MAX_ID || (int64_t)peer == r->ivc.id)
		return -EPROTO;
	r->r.cap = slice - SIVSHM_MBOX_SIZE;
	r->r.mb = (struct sivshm_mbox *)(r->region + r->r.id * slice);
	*mapper = peer;
	/* Our peer id + 1 (0 is "not yet"): now the mapper can ring us. */
	__atomic_store_n(&dir->reducer_peer[r->r.id], r->ivc.id + 1,
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

static struct reducer *reducer_of(struct cc_reducer *r)
{
	return cc_container_of(r, struct reducer, r);
}

/*
 * Wait for request @seq: spin in polling mode, sleep on vector 0 in irq.
 * Every 100 ms, see whether the mapper is still there.
 */
static int wait_request(struct cc_reducer *cr, uint64_t seq, uint64_t *req)
{
	struct reducer *r = reducer_of(cr);
	struct pollfd pfd = { .fd = r->ivc.own[CC_VECTOR], .events = POLLIN };
	uint64_t deadline = cc_now_ns() + r->timeout_ms * 1000000ULL;

	for (;;) {
		if (!sivshm_mbox_wait_request(cr->mb, seq, cr->irq ? 0 : 100,
					      req))
			return 0;
		if (cc_now_ns() >= deadline)
			return -ETIMEDOUT;
		/* Short waits: an interrupt lost while we were away is no hang. */
		if (cr->irq && poll(&pfd, 1, 100) == 1)
			ivc_ack(pfd.fd);
		if (mapper_gone(r))
			return -ECONNRESET;
	}
}

static void ring(struct cc_reducer *r)
{
	ivc_ring(reducer_of(r)->ring);
}

static const struct cc_reducer_ops ivshmem_reducer_ops = {
	.wait = wait_request,
	.ring = ring,
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "server-socket", required_argument, NULL, 's' },
		{ "id", required_argument, NULL, 'i' },
		{ "mode", required_argument, NULL, 'm' },
		{ "timeout", required_argument, NULL, 't' },
		{ 0 }
	};
	struct reducer r = {
		.r = { .ops = &ivshmem_reducer_ops }, .timeout_ms = 60000,
		.ring = -1,
	};
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
			r.r.irq = !strcmp(optarg, "irq");
			break;
		case 't': r.timeout_ms = atoi(optarg); break;
		default: usage();
		}
	}
	if (optind != argc || !path || !id || id >= IVC_DIR_SLOTS ||
	    r.timeout_ms <= 0)
		usage();
	r.r.id = id;

	err = open_reducer(&r, path);
	if (err)
		fprintf(stderr, "reducer %u: cannot join %s: %s\n", r.r.id, path,
			strerror(-err));
	else
		err = cc_serve(&r.r);
	if (r.region)
		munmap(r.region, r.ivc.shm_size);
	ivc_close(&r.ivc);
	return err ? 1 : 0;
}
