// SPDX-License-Identifier: MIT
/*
 * charcount reducer: count one byte in whatever the mapper puts in our slot.
 *
 *   charcount-reducer {--socket PATH --id J | --device DEV |
 *                      --connect HOST:PORT --id J --keys FILE}
 *                     [--mode poll|irq]
 *
 * --connect joins a mapper on another host over RDMA, as reducer J with
 * J's key from FILE (keys.c); the slot is then a copy the library keeps
 * in step, so only irq mode works.
 *
 * A restarted reducer first answers any request still pending in its
 * mailbox: the slot outlives us, so the data is still there.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "charcount.h"
#include "sivshm.h"

static void usage(void)
{
	fprintf(stderr, "usage: charcount-reducer {--socket PATH --id J | "
		"--device /dev/sivshmN |\n"
		"                          --connect HOST:PORT --id J --keys FILE}\n"
		"         [--mode poll|irq] [--mlock] [--timeout MS]\n");
	exit(2);
}

struct reducer {
	struct cc_reducer r;
	struct sivshm *sh;
	int timeout_ms;
	/* A remote reducer: where to rejoin when the mapper is lost. */
	const char *address;
	const uint8_t *key;
	uint32_t flags;
};

static struct reducer *reducer_of(struct cc_reducer *r)
{
	return cc_container_of(r, struct reducer, r);
}

/*
 * A remote reducer whose mapper is gone (a lost link, a restarted mapper)
 * joins again until @timeout_ms; its new slot holds what the mapper left.
 */
static int rejoin(struct reducer *red)
{
	struct sivshm *sh;
	int waited = 0, err;

	sivshm_close(red->sh);
	red->sh = NULL;
	fprintf(stderr, "reducer %u: the mapper is gone; joining again\n",
		red->r.id);
	for (;;) {
		err = sivshm_reducer_connect(&sh, red->address, red->r.id,
					     CC_NVECTORS, red->key, red->flags,
					     10000);
		if (!err)
			break;
		if (err == -EACCES || err == -EINVAL ||
		    (red->timeout_ms >= 0 && waited >= red->timeout_ms))
			return err;
		usleep(500000);
		waited += 500;
	}
	fprintf(stderr, "reducer %u: joined again\n", red->r.id);
	red->sh = sh;
	red->r.mb = sivshm_slot(sh, red->r.id);
	return -ERESTART;
}

/* Wait for request @seq: spin in polling mode, sleep on vector 0 in irq. */
static int wait_request(struct cc_reducer *r, uint64_t seq, uint64_t *req)
{
	struct reducer *red = reducer_of(r);
	uint64_t peers;
	int waited = 0;

	if (!r->irq)
		return sivshm_mbox_wait_request(r->mb, seq, red->timeout_ms,
						req);
	for (;;) {
		if (!sivshm_mbox_wait_request(r->mb, seq, 0, req))
			return 0;
		if (red->address && !sivshm_peers(red->sh, &peers) && !peers)
			return rejoin(red);
		if (red->timeout_ms >= 0 && waited >= red->timeout_ms)
			return -ETIMEDOUT;
		/* Short waits: an interrupt lost while we were away is no hang. */
		sivshm_wait(red->sh, CC_VECTOR, 100, NULL);
		waited += 100;
	}
}

/* Only the mailbox changed: a remote reducer writes back that alone. */
static void ring(struct cc_reducer *r)
{
	sivshm_notify_range(reducer_of(r)->sh, 0, CC_VECTOR, 0,
			    SIVSHM_MBOX_SIZE);
}

static const struct cc_reducer_ops sivshm_reducer_ops = {
	.wait = wait_request,
	.ring = ring,
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "id", required_argument, NULL, 'i' },
		{ "mode", required_argument, NULL, 'm' },
		{ "mlock", no_argument, NULL, 'l' },
		{ "timeout", required_argument, NULL, 't' },
		{ "device", required_argument, NULL, 'D' },
		{ "connect", required_argument, NULL, 'C' },
		{ "keys", required_argument, NULL, 'K' },
		{ 0 }
	};
	static uint8_t keys[SIVSHM_MAX_REDUCERS + 1][SIVSHM_KEY_BYTES];
	const char *address = NULL, *keyfile = NULL;
	uint64_t ids = 0;
	struct reducer red = {
		.r = { .ops = &sivshm_reducer_ops }, .timeout_ms = 60000,
	};
	const char *path = NULL, *device = NULL;
	struct sivshm_info info;
	struct sivshm *sh;
	uint32_t id = 0, flags = 0;
	int c, err;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': path = optarg; break;
		case 'i': id = strtoul(optarg, NULL, 0); break;
		case 'm':
			if (strcmp(optarg, "irq") && strcmp(optarg, "poll"))
				usage();
			red.r.irq = !strcmp(optarg, "irq");
			break;
		case 'l': flags |= SIVSHM_MLOCK; break;
		case 't': red.timeout_ms = atoi(optarg); break;
		case 'D': device = optarg; break;
		case 'C': address = optarg; break;
		case 'K': keyfile = optarg; break;
		default: usage();
		}
	}
	if (address && (!id || id > SIVSHM_MAX_REDUCERS || !keyfile))
		usage();
	if (!device && !address && (!path || !id))
		usage();
	if (address && !red.r.irq) {
		fprintf(stderr, "reducer %u: a remote reducer runs in irq mode "
			"(its slot is a copy, kept in step by notifies)\n", id);
		return 2;
	}
	if (address && cc_read_keys(keyfile, &ids, keys))
		return 2;
	if (address && !(ids & 1ULL << id)) {
		fprintf(stderr, "reducer %u: %s has no key for id %u\n", id,
			keyfile, id);
		return 2;
	}

	if (device)
		err = sivshm_device_open(&sh, device, flags);
	else if (address)
		err = sivshm_reducer_connect(&sh, address, id, CC_NVECTORS,
					     keys[id], flags, 10000);
	else
		err = sivshm_reducer_open(&sh, path, id, CC_NVECTORS, flags,
					  10000);
	if (err) {
		fprintf(stderr, "reducer %u: %s\n", id, strerror(-err));
		return 1;
	}
	sivshm_get_info(sh, &info);
	id = info.id;
	if (id == SIVSHM_MAPPER) {
		fprintf(stderr, "reducer: %s is the mapper's device\n", device);
		return 1;
	}
	printf("reducer %u: joined, %llu-byte slot\n", id,
	       (unsigned long long)info.slice_size);
	fflush(stdout);
	red.sh = sh;
	red.r.mb = sivshm_slot(sh, id);
	red.r.id = id;
	red.r.cap = info.slice_size - SIVSHM_MBOX_SIZE;
	red.address = address;
	red.key = keys[id];
	red.flags = flags;
	err = cc_serve(&red.r);
	sivshm_close(red.sh);
	return err ? 1 : 0;
}
