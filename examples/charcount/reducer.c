// SPDX-License-Identifier: MIT
/*
 * charcount reducer: count one byte in whatever the mapper puts in our slot.
 *
 *   charcount-reducer {--socket PATH --id J | --device DEV} [--mode poll|irq]
 *
 * A restarted reducer first answers any request still pending in its
 * mailbox: the slot outlives us, so the data is still there.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "charcount.h"
#include "sivshm.h"

static void usage(void)
{
	fprintf(stderr, "usage: charcount-reducer {--socket PATH --id J | "
		"--device /dev/sivshmN}\n"
		"         [--mode poll|irq] [--mlock] [--timeout MS]\n");
	exit(2);
}

struct reducer {
	struct cc_reducer r;
	struct sivshm *sh;
	int timeout_ms;
};

static struct reducer *reducer_of(struct cc_reducer *r)
{
	return cc_container_of(r, struct reducer, r);
}

/* Wait for request @seq: spin in polling mode, sleep on vector 0 in irq. */
static int wait_request(struct cc_reducer *r, uint64_t seq, uint64_t *req)
{
	struct reducer *red = reducer_of(r);
	int waited = 0;

	if (!r->irq)
		return sivshm_mbox_wait_request(r->mb, seq, red->timeout_ms,
						req);
	for (;;) {
		if (!sivshm_mbox_wait_request(r->mb, seq, 0, req))
			return 0;
		if (red->timeout_ms >= 0 && waited >= red->timeout_ms)
			return -ETIMEDOUT;
		/* Short waits: an interrupt lost while we were away is no hang. */
		sivshm_wait(red->sh, CC_VECTOR, 100, NULL);
		waited += 100;
	}
}

static void ring(struct cc_reducer *r)
{
	sivshm_notify(reducer_of(r)->sh, 0, CC_VECTOR);
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
		{ 0 }
	};
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
		default: usage();
		}
	}
	if (!device && (!path || !id))
		usage();

	if (device)
		err = sivshm_device_open(&sh, device, flags);
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
	err = cc_serve(&red.r);
	sivshm_close(sh);
	return err ? 1 : 0;
}
