// SPDX-License-Identifier: MIT
/*
 * charcount mapper: stripe the input across the reducers' slots in
 * slot-sized rounds, from several threads, and sum what they count.
 *
 *   charcount-mapper {--socket PATH --reducers N --size BYTES | --device DEV}
 *                    [--data FILE | --random BYTES [--seed S]] [--char C]
 *                    [--mode poll|irq] [--threads T] [--mlock]
 *
 * Xfer is the time the mapper spends copying input into the slots, Resp the
 * time it then waits for the reducers' answers; each is summed per thread
 * and the slowest thread's figure is reported (the threads run at once).
 * The total is checked against a direct count of the same input.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "charcount.h"
#include "sivshm.h"

struct job {
	struct sivshm *sh;
	uint32_t nreducers;
	uint32_t nthreads;
	uint64_t cap;		/* data bytes per slot per round */
	uint64_t total;		/* input bytes */
	uint64_t rounds;
	const uint8_t *file;	/* the mapped input file, or NULL */
	uint64_t seed;
	uint8_t ch;
	int irq;
	int timeout_ms;
};

struct worker {
	struct job *job;
	pthread_t thread;
	uint32_t index;
	uint8_t *buf;		/* the application buffer for random input */
	uint64_t count;		/* what the reducers answered */
	uint64_t direct;	/* what we counted ourselves */
	uint64_t xfer_ns;
	uint64_t resp_ns;
	int err;
};

static struct sivshm_mbox *mbox(struct job *job, uint32_t j)
{
	return sivshm_slot(job->sh, j);
}

/* Wait for reducer @j's answer to @seq. */
static int wait_response(struct job *job, uint32_t j, uint64_t seq,
			 uint64_t *resp)
{
	struct pollfd pfd = {
		.fd = sivshm_eventfd(job->sh, j, CC_VECTOR), .events = POLLIN,
	};
	int waited = 0;
	uint64_t cnt;

	if (!job->irq)
		return sivshm_mbox_wait_response(mbox(job, j), seq,
						 job->timeout_ms, resp);
	for (;;) {
		if (!sivshm_mbox_wait_response(mbox(job, j), seq, 0, resp))
			return 0;
		if (waited >= job->timeout_ms)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, 100) == 1 &&
		    read(pfd.fd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
			return -errno;
		waited += 100;
	}
}

static void post(struct job *job, uint32_t j, uint64_t seq,
		 uint64_t cmd, uint64_t len)
{
	uint64_t req[SIVSHM_MBOX_WORDS] = { cmd, len, job->ch };

	sivshm_mbox_post_request(mbox(job, j), seq, req);
	/* A reducer that is away re-reads its mailbox when it comes back. */
	if (job->irq)
		sivshm_notify(job->sh, j, CC_VECTOR);
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	struct job *job = w->job;
	uint64_t resp[SIVSHM_MBOX_WORDS];
	uint64_t len[SIVSHM_MAX_REDUCERS + 1];

	for (uint64_t r = 0; r < job->rounds && !w->err; r++) {
		uint64_t seq = r + 1, t0;

		for (uint32_t j = 1 + w->index; j <= job->nreducers;
		     j += job->nthreads) {
			uint64_t k = r * job->nreducers + (j - 1);
			const uint8_t *src;

			len[j] = cc_chunk_len(k, job->cap, job->total);
			if (job->file) {
				src = job->file + k * job->cap;
			} else {
				cc_fill_random(w->buf, len[j], job->seed, k);
				src = w->buf;
			}
			w->direct += cc_count(src, len[j], job->ch);

			t0 = cc_now_ns();
			memcpy((uint8_t *)mbox(job, j) + SIVSHM_MBOX_SIZE, src,
			       len[j]);
			post(job, j, seq, CC_COUNT, len[j]);
			w->xfer_ns += cc_now_ns() - t0;
		}

		t0 = cc_now_ns();
		for (uint32_t j = 1 + w->index; j <= job->nreducers;
		     j += job->nthreads) {
			w->err = wait_response(job, j, seq, resp);
			if (w->err) {
				fprintf(stderr, "charcount: reducer %u did not "
					"answer round %llu: %s\n", j,
					(unsigned long long)seq,
					strerror(-w->err));
				break;
			}
			/* Reducers are untrusted: an impossible count is an error. */
			if (resp[0] > len[j]) {
				fprintf(stderr, "charcount: reducer %u answered "
					"%llu for %llu bytes\n", j,
					(unsigned long long)resp[0],
					(unsigned long long)len[j]);
				w->err = -EPROTO;
				break;
			}
			w->count += resp[0];
		}
		w->resp_ns += cc_now_ns() - t0;
	}

	/* Tell our reducers to exit, whatever happened. */
	for (uint32_t j = 1 + w->index; j <= job->nreducers; j += job->nthreads)
		post(job, j, job->rounds + 1, CC_EXIT, 0);
	return NULL;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: charcount-mapper {--socket PATH --reducers N --size BYTES |\n"
		"                         --device /dev/sivshmN}\n"
		"         [--data FILE | --random BYTES [--seed S]] [--char C]\n"
		"         [--mode poll|irq] [--threads T] [--mlock] [--name ID]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "reducers", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 'z' },
		{ "data", required_argument, NULL, 'd' },
		{ "random", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 'S' },
		{ "char", required_argument, NULL, 'c' },
		{ "mode", required_argument, NULL, 'm' },
		{ "threads", required_argument, NULL, 't' },
		{ "mlock", no_argument, NULL, 'l' },
		{ "name", required_argument, NULL, 'N' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "device", required_argument, NULL, 'D' },
		{ 0 }
	};
	struct sivshm_mapper_opts mo = { .nvectors = CC_NVECTORS };
	struct job job = { .ch = 'a', .seed = 1, .timeout_ms = 60000 };
	const char *data = NULL, *device = NULL;
	struct worker *w;
	struct sivshm_info info;
	uint64_t t_open, t_ready, t_start, t_end, count = 0, direct = 0;
	uint64_t xfer = 0, resp = 0, mask;
	char name[64];
	int c, err, fail = 0;

	snprintf(name, sizeof(name), "charcount-%d", getpid());
	mo.name = name;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': mo.socket_path = optarg; break;
		case 'n': mo.nreducers = strtoul(optarg, NULL, 0); break;
		case 'z': mo.size = cc_parse_size(optarg); break;
		case 'd': data = optarg; break;
		case 'r': job.total = cc_parse_size(optarg); break;
		case 'S': job.seed = strtoull(optarg, NULL, 0); break;
		case 'c': job.ch = optarg[0]; break;
		case 'm':
			if (strcmp(optarg, "irq") && strcmp(optarg, "poll"))
				usage();
			job.irq = !strcmp(optarg, "irq");
			break;
		case 't': job.nthreads = strtoul(optarg, NULL, 0); break;
		case 'l': mo.flags |= SIVSHM_MLOCK; break;
		case 'N': mo.name = optarg; break;
		case 'T': job.timeout_ms = atoi(optarg); break;
		case 'D': device = optarg; break;
		default: usage();
		}
	}
	if ((!device && (!mo.socket_path || !mo.nreducers || !mo.size)) ||
	    (!data && !job.total))
		usage();

	if (data) {
		struct stat st;
		int fd = open(data, O_RDONLY | O_CLOEXEC);

		if (fd < 0 || fstat(fd, &st) < 0) {
			perror(data);
			return 1;
		}
		job.total = st.st_size;
		job.file = job.total ? mmap(NULL, job.total, PROT_READ,
					    MAP_PRIVATE, fd, 0) : NULL;
		close(fd);
		if (job.file == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
	}

	t_open = cc_service_t0(cc_now_ns());
	if (device)
		err = sivshm_device_open(&job.sh, device, mo.flags);
	else
		err = sivshm_mapper_open(&job.sh, &mo);
	if (err) {
		fprintf(stderr, "charcount: mapper: %s\n", strerror(-err));
		return 1;
	}
	sivshm_get_info(job.sh, &info);
	if (info.id != SIVSHM_MAPPER) {
		fprintf(stderr, "charcount: %s is reducer %u's device, not the "
			"mapper's\n", device, info.id);
		return 1;
	}
	job.nreducers = info.nreducers;
	if (info.slice_size <= SIVSHM_MBOX_SIZE) {
		fprintf(stderr, "charcount: a %llu-byte slice has no room for data\n",
			(unsigned long long)info.slice_size);
		return 1;
	}
	job.cap = info.slice_size - SIVSHM_MBOX_SIZE;
	job.rounds = (job.total + job.cap * job.nreducers - 1) /
		     (job.cap * job.nreducers);
	if (!job.nthreads || job.nthreads > job.nreducers)
		job.nthreads = job.nreducers < 4 ? job.nreducers : 4;

	mask = ((1ULL << job.nreducers) - 1) << 1;
	err = sivshm_wait_peers(job.sh, mask, job.timeout_ms);
	if (err) {
		fprintf(stderr, "charcount: not every reducer connected: %s\n",
			strerror(-err));
		sivshm_close(job.sh);
		return 1;
	}
	t_ready = cc_now_ns();
	/* Fault the slots in now: Xfer measures copying, not page faults. */
	for (uint32_t j = 1; j <= job.nreducers; j++)
		memset((uint8_t *)mbox(&job, j) + SIVSHM_MBOX_SIZE, 0, job.cap);
	t_start = cc_now_ns();
	printf("charcount: %u reducers ready in %.1f ms; %llu bytes in %llu "
	       "rounds of %llu-byte slots, %s mode, %u threads\n",
	       job.nreducers, (t_ready - t_open) / 1e6,
	       (unsigned long long)job.total, (unsigned long long)job.rounds,
	       (unsigned long long)info.slice_size, job.irq ? "irq" : "poll",
	       job.nthreads);

	w = calloc(job.nthreads, sizeof(*w));
	for (uint32_t t = 0; t < job.nthreads; t++) {
		w[t].job = &job;
		w[t].index = t;
		if (!job.file)
			w[t].buf = malloc(job.cap);
		if (pthread_create(&w[t].thread, NULL, worker_run, &w[t])) {
			fprintf(stderr, "charcount: cannot start threads\n");
			return 1;
		}
	}
	for (uint32_t t = 0; t < job.nthreads; t++) {
		pthread_join(w[t].thread, NULL);
		count += w[t].count;
		direct += w[t].direct;
		xfer = w[t].xfer_ns > xfer ? w[t].xfer_ns : xfer;
		resp = w[t].resp_ns > resp ? w[t].resp_ns : resp;
		fail |= w[t].err != 0;
		free(w[t].buf);
	}
	t_end = cc_now_ns();

	/* Let the reducers read their exit request before the region goes. */
	job.timeout_ms = 5000;
	for (uint32_t j = 1; j <= job.nreducers && !fail; j++)
		wait_response(&job, j, job.rounds + 1, (uint64_t[SIVSHM_MBOX_WORDS]){ 0 });

	free(w);
	sivshm_close(job.sh);
	return cc_report(&(struct cc_result) {
		.prog = "charcount", .mode = job.irq ? "irq" : "poll",
		.ch = job.ch, .nreducers = job.nreducers,
		.nthreads = job.nthreads, .bytes = job.total, .count = count,
		.direct = direct, .xfer_ns = xfer, .resp_ns = resp,
		.job_ns = t_end - t_start, .ready_ns = t_ready - t_open,
		.fail = fail,
	});
}
