// SPDX-License-Identifier: MIT
/*
 * charcount's mapper side, shared by charcount-mapper and its baselines
 * (TCP loopback, ivshmem-server): the rounds, the worker pool and the
 * report, so that every system moves, counts and times the same bytes.
 *
 * Xfer is the time a thread spends handing chunks to its reducers, Resp the
 * time it then waits for their counts; each is summed per thread and the
 * slowest thread's figure is reported (the threads run at once).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "charcount.h"
#include "sivshm.h"

struct cc_worker {
	struct cc_job *job;
	pthread_t thread;
	uint32_t index;
	uint8_t *buf;		/* the application buffer for random input */
	uint64_t count;
	uint64_t direct;
	uint64_t xfer_ns;
	uint64_t resp_ns;
	int err;
};

void cc_plan(struct cc_job *job)
{
	job->rounds = (job->total + job->cap * job->nreducers - 1) /
		      (job->cap * job->nreducers);
	if (!job->nthreads || job->nthreads > job->nreducers)
		job->nthreads = job->nreducers < 4 ? job->nreducers : 4;
}

/* Hand round @r's chunks to this thread's reducers; their lengths in @len. */
static int send_round(struct cc_worker *w, uint64_t r, uint64_t *len)
{
	struct cc_job *job = w->job;

	for (uint32_t j = 1 + w->index; j <= job->nreducers;
	     j += job->nthreads) {
		uint64_t k = r * job->nreducers + (j - 1), t0;
		const uint8_t *src;
		int err;

		len[j] = cc_chunk_len(k, job->cap, job->total);
		if (job->file) {
			src = job->file + k * job->cap;
		} else {
			cc_fill_random(w->buf, len[j], job->seed, k);
			src = w->buf;
		}
		w->direct += cc_count(src, len[j], job->ch);

		t0 = cc_now_ns();
		err = job->ops->send(job, j, r + 1, src, len[j]);
		w->xfer_ns += cc_now_ns() - t0;
		if (err) {
			fprintf(stderr, "%s: cannot send to reducer %u: %s\n",
				job->prog, j, strerror(-err));
			return err;
		}
	}
	return 0;
}

/* Collect this thread's counts for @seq; they are untrusted, so bounded. */
static int collect(struct cc_worker *w, uint64_t seq, const uint64_t *len)
{
	struct cc_job *job = w->job;
	uint64_t count;
	int err;

	for (uint32_t j = 1 + w->index; j <= job->nreducers;
	     j += job->nthreads) {
		err = job->ops->recv(job, j, seq, &count);
		if (err) {
			fprintf(stderr, "%s: reducer %u did not answer round "
				"%llu: %s\n", job->prog, j,
				(unsigned long long)seq, strerror(-err));
			return err;
		}
		if (count > len[j]) {
			fprintf(stderr, "%s: reducer %u answered %llu for %llu "
				"bytes\n", job->prog, j,
				(unsigned long long)count,
				(unsigned long long)len[j]);
			return -EPROTO;
		}
		w->count += count;
	}
	return 0;
}

static void *worker_run(void *arg)
{
	struct cc_worker *w = arg;
	struct cc_job *job = w->job;
	uint64_t len[SIVSHM_MAX_REDUCERS + 1], t0;

	for (uint64_t r = 0; r < job->rounds && !w->err; r++) {
		w->err = send_round(w, r, len);
		if (w->err)
			break;
		t0 = cc_now_ns();
		w->err = collect(w, r + 1, len);
		w->resp_ns += cc_now_ns() - t0;
	}

	/* Tell our reducers to exit, whatever happened. */
	for (uint32_t j = 1 + w->index; j <= job->nreducers; j += job->nthreads)
		job->ops->stop(job, j, job->rounds + 1);
	return NULL;
}

int cc_run(struct cc_job *job)
{
	struct cc_worker *w = calloc(job->nthreads, sizeof(*w));
	uint32_t started = 0;
	int fail = 0;

	if (!w)
		return -ENOMEM;
	for (; started < job->nthreads; started++) {
		struct cc_worker *t = &w[started];

		t->job = job;
		t->index = started;
		if (!job->file)
			t->buf = malloc(job->cap ? job->cap : 1);
		if ((!job->file && !t->buf) ||
		    pthread_create(&t->thread, NULL, worker_run, t)) {
			free(t->buf);
			fprintf(stderr, "%s: cannot start threads\n", job->prog);
			fail = 1;
			break;
		}
	}
	for (uint32_t t = 0; t < started; t++) {
		pthread_join(w[t].thread, NULL);
		job->count += w[t].count;
		job->direct += w[t].direct;
		if (w[t].xfer_ns > job->xfer_ns)
			job->xfer_ns = w[t].xfer_ns;
		if (w[t].resp_ns > job->resp_ns)
			job->resp_ns = w[t].resp_ns;
		fail |= w[t].err != 0;
		free(w[t].buf);
	}
	free(w);
	return fail ? -EIO : 0;
}

/*
 * What a mapper prints at the end: for people, then one line for scripts.
 * The "result" line is what make bench parses: keep its keys stable.
 */
int cc_report(const struct cc_job *job, const char *mode, uint64_t job_ns,
	      uint64_t ready_ns, int fail)
{
	int ok = job->count == job->direct && !fail;

	printf("%s: '%c' occurs %llu times (direct count %llu: %s)\n",
	       job->prog, job->ch, (unsigned long long)job->count,
	       (unsigned long long)job->direct, ok ? "match" : "MISMATCH");
	printf("%s: Xfer %.3f s (%.2f GiB/s), Resp %.3f s, job %.3f s\n",
	       job->prog, job->xfer_ns / 1e9,
	       job->xfer_ns ?
	       job->total / (job->xfer_ns / 1e9) / (1 << 30) : 0.0,
	       job->resp_ns / 1e9, job_ns / 1e9);
	printf("result reducers=%u mode=%s threads=%u bytes=%llu count=%llu "
	       "direct=%llu xfer_s=%.6f resp_s=%.6f job_s=%.6f ready_ms=%.3f\n",
	       job->nreducers, mode, job->nthreads,
	       (unsigned long long)job->total, (unsigned long long)job->count,
	       (unsigned long long)job->direct, job->xfer_ns / 1e9,
	       job->resp_ns / 1e9, job_ns / 1e9, ready_ns / 1e6);
	return ok ? 0 : 1;
}
