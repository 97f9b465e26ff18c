// SPDX-License-Identifier: MIT
/*
 * charcount over plain IVSHMEM, the baseline without isolation: the mapper
 * and every reducer map the whole region that ivshmem-server hands out,
 * cut into slots exactly like sivshm's, and ring each other through the
 * eventfds the server distributes (vector 0), as QEMU's doorbell would.
 *
 *   charcount-ivshmem-mapper --server-socket PATH --reducers N --size BYTES
 *                            --random BYTES [--seed S] [--char C]
 *                            [--mode poll|irq] [--threads T] [--timeout MS]
 *
 * The server is already running, with a region of at least --size bytes.
 * How the processes find each other's peer ids is in ivshmem-client.h.
 * Xfer and Resp are measured as in charcount-mapper; ready_ms is the time
 * from our start until every reducer has published its peer id and the
 * server has announced its eventfd to us.
 *
 * With ivshmem every reducer rings the same eventfd of ours (one per
 * vector, not one per peer), so in interrupt mode a doorbell thread
 * consumes it and wakes every waiting worker, as a guest's interrupt
 * handler would.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "charcount.h"
#include "ivshmem-client.h"
#include "sivshm.h"

struct job {
	struct cc_slots s;
	struct ivc ivc;
	uint8_t *region;
	struct ivc_directory *dir;
	uint64_t slice;
	int ring[SIVSHM_MAX_REDUCERS + 1];	/* rings reducer j's vector 0 */
	/* The doorbell: @gen counts the interrupts we have taken. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t gen;
	int stop;
	pthread_t doorbell;
};

static struct sivshm_mbox *mbox(struct job *job, uint32_t j)
{
	return (struct sivshm_mbox *)(job->region + j * job->slice);
}

static void *doorbell_run(void *arg)
{
	struct job *job = arg;
	struct pollfd pfd = { .fd = job->ivc.own[CC_VECTOR], .events = POLLIN };

	while (!__atomic_load_n(&job->stop, __ATOMIC_ACQUIRE)) {
		if (poll(&pfd, 1, 100) != 1)
			continue;
		ivc_ack(pfd.fd);
		pthread_mutex_lock(&job->lock);
		__atomic_store_n(&job->gen, job->gen + 1, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&job->cond);
		pthread_mutex_unlock(&job->lock);
	}
	return NULL;
}

/* Sleep until the doorbell passes @gen, or 100 ms. */
static void doorbell_wait(struct job *job, uint64_t gen)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += 100 * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&job->lock);
	while (job->gen == gen &&
	       !pthread_cond_timedwait(&job->cond, &job->lock, &ts))
		;
	pthread_mutex_unlock(&job->lock);
}

static int doorbell_start(struct job *job)
{
	pthread_condattr_t attr;
	int err;

	if (pthread_condattr_init(&attr))
		return -ENOMEM;
	err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (!err)
		err = pthread_cond_init(&job->cond, &attr);
	pthread_condattr_destroy(&attr);
	if (err)
		return -err;
	err = pthread_mutex_init(&job->lock, NULL);
	if (!err)
		err = pthread_create(&job->doorbell, NULL, doorbell_run, job);
	return -err;
}

static void doorbell_stop(struct job *job)
{
	__atomic_store_n(&job->stop, 1, __ATOMIC_RELEASE);
	pthread_join(job->doorbell, NULL);
	pthread_cond_destroy(&job->cond);
	pthread_mutex_destroy(&job->lock);
}

/* Wait for reducer @j's answer to @seq. */
static int wait_response(struct job *job, uint32_t j, uint64_t seq,
			 int timeout_ms, uint64_t *resp)
{
	uint64_t deadline = cc_now_ns() + timeout_ms * 1000000ULL, gen;

	if (!job->s.irq)
		return sivshm_mbox_wait_response(mbox(job, j), seq,
						 timeout_ms, resp);
	for (;;) {
		/* Sample the doorbell first: a ring after this wakes us. */
		gen = __atomic_load_n(&job->gen, __ATOMIC_ACQUIRE);
		if (!sivshm_mbox_wait_response(mbox(job, j), seq, 0, resp))
			return 0;
		if (cc_now_ns() >= deadline)
			return -ETIMEDOUT;
		doorbell_wait(job, gen);
	}
}

static struct job *job_of(struct cc_slots *s)
{
	return cc_container_of(s, struct job, s);
}

static struct sivshm_mbox *slot_mbox(struct cc_slots *s, uint32_t j)
{
	return mbox(job_of(s), j);
}

static void slot_ring(struct cc_slots *s, uint32_t j, uint64_t len)
{
	ivc_ring(job_of(s)->ring[j]);
}

static int slot_wait(struct cc_slots *s, uint32_t j, uint64_t seq,
		     int timeout_ms, uint64_t *resp)
{
	return wait_response(job_of(s), j, seq, timeout_ms, resp);
}

static const struct cc_slot_ops ivshmem_slot_ops = {
	.mbox = slot_mbox,
	.ring = slot_ring,
	.wait = slot_wait,
};

/* Map the whole region and publish the directory in slot 0. */
static int setup_region(struct job *job, uint64_t size)
{
	struct ivc_directory *dir;

	job->slice = size / (job->s.cc.nreducers + 1) & ~4095ULL;
	if (job->slice <= SIVSHM_MBOX_SIZE || job->slice < sizeof(*dir) ||
	    size > job->ivc.shm_size) {
		fprintf(stderr, "charcount-ivshmem: %llu bytes in %u + 1 slots "
			"do not fit a %llu-byte region\n",
			(unsigned long long)size, job->s.cc.nreducers,
			(unsigned long long)job->ivc.shm_size);
		return -EINVAL;
	}
	job->s.cc.cap = job->slice - SIVSHM_MBOX_SIZE;
	cc_plan(&job->s.cc);
	job->region = mmap(NULL, job->ivc.shm_size, PROT_READ | PROT_WRITE,
			   MAP_SHARED, job->ivc.shm_fd, 0);
	if (job->region == MAP_FAILED) {
		int err = -errno;

		job->region = NULL;
		return err;
	}

	for (uint32_t j = 1; j <= job->s.cc.nreducers; j++)
		memset(mbox(job, j), 0, SIVSHM_MBOX_SIZE);
	dir = (struct ivc_directory *)job->region;
	job->dir = dir;
	memset(dir, 0, sizeof(*dir));
	dir->mapper_peer = job->ivc.id;
	dir->nreducers = job->s.cc.nreducers;
	dir->slice_size = job->slice;
	__atomic_store_n(&dir->magic, IVC_DIR_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

/*
 * Reducer @j's doorbell, once it has published a peer id the server has
 * announced, that is not ours and that no other reducer claims: an fd, or
 * -EAGAIN while it is not there yet.
 */
static int reducer_ring(struct job *job, uint32_t j)
{
	uint64_t v = __atomic_load_n(&job->dir->reducer_peer[j],
				     __ATOMIC_ACQUIRE);
	int fd;

	if (!v || v - 1 > IVC_MAX_ID || (int64_t)(v - 1) == job->ivc.id)
		return -EAGAIN;
	for (uint32_t i = 1; i < j; i++)
		if (__atomic_load_n(&job->dir->reducer_peer[i],
				    __ATOMIC_RELAXED) == v)
			return -EAGAIN;
	fd = ivc_peer_fd(&job->ivc, v - 1, CC_VECTOR);
	return fd < 0 ? -EAGAIN : fd;
}

/* Wait until every reducer is in, taking the server's news meanwhile. */
static int wait_reducers(struct job *job)
{
	uint64_t deadline = cc_now_ns() + job->s.cc.timeout_ms * 1000000ULL;
	uint32_t j = 1;
	int ret;

	while (j <= job->s.cc.nreducers) {
		ret = reducer_ring(job, j);
		if (ret >= 0) {
			job->ring[j++] = ret;
			continue;
		}
		if (cc_now_ns() >= deadline) {
			fprintf(stderr, "charcount-ivshmem: reducer %u is not "
				"in\n", j);
			return -ETIMEDOUT;
		}
		ret = ivc_handle(&job->ivc, 1);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Let the reducers read their exit request before the region goes. */
static void wait_exits(struct job *job)
{
	uint64_t resp[SIVSHM_MBOX_WORDS];

	for (uint32_t j = 1; j <= job->s.cc.nreducers; j++)
		wait_response(job, j, job->s.cc.rounds + 1, 5000, resp);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: charcount-ivshmem-mapper --server-socket PATH --reducers N\n"
		"         --size BYTES --random BYTES [--seed S] [--char C]\n"
		"         [--mode poll|irq] [--threads T] [--timeout MS]\n");
	exit(2);
}

static const char *parse_args(int argc, char **argv, struct job *job,
			      uint64_t *size)
{
	static const struct option opts[] = {
		{ "server-socket", required_argument, NULL, 's' },
		{ "reducers", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 'z' },
		{ "random", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 'S' },
		{ "char", required_argument, NULL, 'c' },
		{ "mode", required_argument, NULL, 'm' },
		{ "threads", required_argument, NULL, 't' },
		{ "timeout", required_argument, NULL, 'T' },
		{ 0 }
	};
	const char *path = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': path = optarg; break;
		case 'n': job->s.cc.nreducers = strtoul(optarg, NULL, 0); break;
		case 'z': *size = cc_parse_size(optarg); break;
		case 'r': job->s.cc.total = cc_parse_size(optarg); break;
		case 'S': job->s.cc.seed = strtoull(optarg, NULL, 0); break;
		case 'c': job->s.cc.ch = optarg[0]; break;
		case 'm':
			if (strcmp(optarg, "irq") && strcmp(optarg, "poll"))
				usage();
			job->s.irq = !strcmp(optarg, "irq");
			break;
		case 't': job->s.cc.nthreads = strtoul(optarg, NULL, 0); break;
		case 'T': job->s.cc.timeout_ms = atoi(optarg); break;
		default: usage();
		}
	}
	if (optind != argc || !path || !job->s.cc.nreducers ||
	    job->s.cc.nreducers > SIVSHM_MAX_REDUCERS ||
	    job->s.cc.nreducers >= IVC_DIR_SLOTS || !*size || !job->s.cc.total ||
	    job->s.cc.timeout_ms <= 0)
		usage();
	return path;
}

/* Connect, map, and wait for the reducers: 0, or a negative errno. */
static int open_job(struct job *job, const char *path, uint64_t size)
{
	int err;

	err = ivc_connect(&job->ivc, path, CC_NVECTORS, job->s.cc.timeout_ms);
	if (err) {
		fprintf(stderr, "charcount-ivshmem: cannot join %s: %s\n",
			path, strerror(-err));
		return err;
	}
	err = setup_region(job, size);
	if (!err)
		err = wait_reducers(job);
	if (err)
		fprintf(stderr, "charcount-ivshmem: not ready: %s\n",
			strerror(-err));
	return err;
}

static void close_job(struct job *job)
{
	if (job->region)
		munmap(job->region, job->ivc.shm_size);
	ivc_close(&job->ivc);
}

int main(int argc, char **argv)
{
	struct job job = {
		.s = {
			.cc = { .prog = "charcount-ivshmem",
				.ops = &cc_slot_transport, .ch = 'a', .seed = 1,
				.timeout_ms = 60000 },
			.ops = &ivshmem_slot_ops,
		},
	};
	struct cc_job *cc = &job.s.cc;
	uint64_t size = 0, t_open, t_ready, t_start, t_end;
	const char *path;
	int err;

	path = parse_args(argc, argv, &job, &size);
	t_open = cc_service_t0(cc_now_ns());
	err = open_job(&job, path, size);
	if (err) {
		close_job(&job);
		return 1;
	}
	t_ready = cc_now_ns();
	t_start = cc_slots_ready(&job.s, job.slice, t_ready - t_open);

	err = job.s.irq ? doorbell_start(&job) : 0;
	if (err) {
		fprintf(stderr, "charcount-ivshmem: no doorbell: %s\n",
			strerror(-err));
		close_job(&job);
		return 1;
	}
	err = cc_run(cc);
	t_end = cc_now_ns();
	if (!err)
		wait_exits(&job);
	if (job.s.irq)
		doorbell_stop(&job);
	err = cc_report(cc, job.s.irq ? "irq" : "poll", t_end - t_start,
			t_ready - t_open, err != 0);
	close_job(&job);
	return err;
}
