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
 *
 * --listen HOST:PORT --keys FILE serves the reducers FILE names (keys.c)
 * over RDMA, from other hosts; the others join on the socket.  Remote
 * reducers need irq mode.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
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
	struct cc_slots s;
	struct sivshm *sh;
};

static struct job *job_of(struct cc_slots *s)
{
	return cc_container_of(s, struct job, s);
}

static struct sivshm_mbox *mbox(struct cc_slots *s, uint32_t j)
{
	return sivshm_slot(job_of(s)->sh, j);
}

static void ring(struct cc_slots *s, uint32_t j, uint64_t len)
{
	sivshm_notify_range(job_of(s)->sh, j, CC_VECTOR, 0, len);
}

/* Wait for reducer @j's answer to @seq. */
static int wait_response(struct cc_slots *s, uint32_t j, uint64_t seq,
			 int timeout_ms, uint64_t *resp)
{
	struct pollfd pfd = {
		.fd = sivshm_eventfd(job_of(s)->sh, j, CC_VECTOR),
		.events = POLLIN,
	};
	int waited = 0;
	uint64_t cnt;

	if (!s->irq)
		return sivshm_mbox_wait_response(mbox(s, j), seq, timeout_ms,
						 resp);
	for (;;) {
		if (!sivshm_mbox_wait_response(mbox(s, j), seq, 0, resp))
			return 0;
		if (waited >= timeout_ms)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, 100) == 1 &&
		    read(pfd.fd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
			return -errno;
		waited += 100;
	}
}

static const struct cc_slot_ops sivshm_slot_ops = {
	.mbox = mbox,
	.ring = ring,
	.wait = wait_response,
};

static void usage(void)
{
	fprintf(stderr,
		"usage: charcount-mapper {--socket PATH --reducers N --size BYTES |\n"
		"                         --device /dev/sivshmN}\n"
		"         [--data FILE | --random BYTES [--seed S]] [--char C]\n"
		"         [--mode poll|irq] [--threads T] [--mlock] [--name ID]\n"
		"         [--listen HOST:PORT --keys FILE]\n");
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
		{ "listen", required_argument, NULL, 'L' },
		{ "keys", required_argument, NULL, 'K' },
		{ 0 }
	};
	static uint8_t keys[SIVSHM_MAX_REDUCERS + 1][SIVSHM_KEY_BYTES];
	const uint8_t *key_of[SIVSHM_MAX_REDUCERS + 1];
	struct sivshm_remote_opts ro = { .keys = key_of };
	const char *keyfile = NULL;
	struct sivshm_mapper_opts mo = { .nvectors = CC_NVECTORS };
	struct job job = {
		.s = {
			.cc = { .prog = "charcount", .ops = &cc_slot_transport,
				.ch = 'a', .seed = 1, .timeout_ms = 60000 },
			.ops = &sivshm_slot_ops,
		},
	};
	struct cc_job *cc = &job.s.cc;
	const char *data = NULL, *device = NULL;
	struct sivshm_info info;
	uint64_t t_open, t_ready, t_start, t_end, mask;
	char name[64];
	int c, err, fail;

	snprintf(name, sizeof(name), "charcount-%d", getpid());
	mo.name = name;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': mo.socket_path = optarg; break;
		case 'n': mo.nreducers = strtoul(optarg, NULL, 0); break;
		case 'z': mo.size = cc_parse_size(optarg); break;
		case 'd': data = optarg; break;
		case 'r': cc->total = cc_parse_size(optarg); break;
		case 'S': cc->seed = strtoull(optarg, NULL, 0); break;
		case 'c': cc->ch = optarg[0]; break;
		case 'm':
			if (strcmp(optarg, "irq") && strcmp(optarg, "poll"))
				usage();
			job.s.irq = !strcmp(optarg, "irq");
			break;
		case 't': cc->nthreads = strtoul(optarg, NULL, 0); break;
		case 'l': mo.flags |= SIVSHM_MLOCK; break;
		case 'N': mo.name = optarg; break;
		case 'T': cc->timeout_ms = atoi(optarg); break;
		case 'D': device = optarg; break;
		case 'L': ro.listen = optarg; break;
		case 'K': keyfile = optarg; break;
		default: usage();
		}
	}
	if (!ro.listen != !keyfile || (ro.listen && device))
		usage();
	if (ro.listen && !job.s.irq) {
		fprintf(stderr, "charcount: remote reducers need irq mode\n");
		return 2;
	}
	if (keyfile && cc_read_keys(keyfile, &ro.ids, keys))
		return 2;
	for (uint32_t j = 0; j <= SIVSHM_MAX_REDUCERS; j++)
		key_of[j] = keys[j];
	if ((!device && (!mo.socket_path || !mo.nreducers || !mo.size)) ||
	    (!data && !cc->total))
		usage();

	if (data) {
		struct stat st;
		int fd = open(data, O_RDONLY | O_CLOEXEC);

		if (fd < 0 || fstat(fd, &st) < 0) {
			perror(data);
			return 1;
		}
		cc->total = st.st_size;
		cc->file = cc->total ? mmap(NULL, cc->total, PROT_READ,
					    MAP_PRIVATE, fd, 0) : NULL;
		close(fd);
		if (cc->file == MAP_FAILED) {
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
	if (ro.listen) {
		err = sivshm_mapper_serve_remote(job.sh, &ro);
		if (err) {
			fprintf(stderr, "charcount: serving remote reducers on "
				"%s: %s\n", ro.listen, strerror(-err));
			sivshm_close(job.sh);
			return 1;
		}
	}
	sivshm_get_info(job.sh, &info);
	if (info.id != SIVSHM_MAPPER) {
		fprintf(stderr, "charcount: %s is reducer %u's device, not the "
			"mapper's\n", device, info.id);
		return 1;
	}
	cc->nreducers = info.nreducers;
	if (info.slice_size <= SIVSHM_MBOX_SIZE) {
		fprintf(stderr, "charcount: a %llu-byte slice has no room for data\n",
			(unsigned long long)info.slice_size);
		return 1;
	}
	cc->cap = info.slice_size - SIVSHM_MBOX_SIZE;
	cc_plan(cc);

	mask = ((1ULL << cc->nreducers) - 1) << 1;
	err = sivshm_wait_peers(job.sh, mask, cc->timeout_ms);
	if (err) {
		fprintf(stderr, "charcount: not every reducer connected: %s\n",
			strerror(-err));
		sivshm_close(job.sh);
		return 1;
	}
	t_ready = cc_now_ns();
	t_start = cc_slots_ready(&job.s, info.slice_size, t_ready - t_open);

	fail = cc_run(cc) != 0;
	t_end = cc_now_ns();

	/* Let the reducers read their exit request before the region goes. */
	for (uint32_t j = 1; j <= cc->nreducers && !fail; j++)
		wait_response(&job.s, j, cc->rounds + 1, 5000,
			      (uint64_t[SIVSHM_MBOX_WORDS]){ 0 });

	sivshm_close(job.sh);
	return cc_report(cc, job.s.irq ? "irq" : "poll", t_end - t_start,
			 t_ready - t_open, fail);
}
