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

/* Wait for request @seq: spin in polling mode, sleep on vector 0 in irq. */
static int wait_request(struct sivshm *sh, struct sivshm_mbox *mb,
			uint64_t seq, int irq, int timeout_ms, uint64_t *req)
{
	int waited = 0;

	if (!irq)
		return sivshm_mbox_wait_request(mb, seq, timeout_ms, req);
	for (;;) {
		if (!sivshm_mbox_wait_request(mb, seq, 0, req))
			return 0;
		if (timeout_ms >= 0 && waited >= timeout_ms)
			return -ETIMEDOUT;
		/* Short waits: an interrupt lost while we were away is no hang. */
		sivshm_wait(sh, CC_VECTOR, 100, NULL);
		waited += 100;
	}
}

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
	uint64_t req[SIVSHM_MBOX_WORDS], resp[SIVSHM_MBOX_WORDS] = { 0 };
	const char *path = NULL, *device = NULL;
	struct sivshm_info info;
	struct sivshm_mbox *mb;
	struct sivshm *sh;
	uint32_t id = 0, flags = 0;
	int irq = 0, timeout_ms = 60000, c, err;
	uint64_t seq;
	uint8_t *data;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': path = optarg; break;
		case 'i': id = strtoul(optarg, NULL, 0); break;
		case 'm':
			if (strcmp(optarg, "irq") && strcmp(optarg, "poll"))
				usage();
			irq = !strcmp(optarg, "irq");
			break;
		case 'l': flags |= SIVSHM_MLOCK; break;
		case 't': timeout_ms = atoi(optarg); break;
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
	mb = sivshm_slot(sh, id);
	data = (uint8_t *)mb + SIVSHM_MBOX_SIZE;

	/* Answer what is pending, if a previous incarnation left something. */
	seq = __atomic_load_n(&mb->resp_seq, __ATOMIC_ACQUIRE) + 1;
	for (;; seq++) {
		err = wait_request(sh, mb, seq, irq, timeout_ms, req);
		if (err) {
			fprintf(stderr, "reducer %u: no request %llu: %s\n", id,
				(unsigned long long)seq, strerror(-err));
			sivshm_close(sh);
			return 1;
		}
		if (req[0] == CC_EXIT) {
			sivshm_mbox_post_response(mb, seq, resp);
			if (irq)
				sivshm_notify(sh, 0, CC_VECTOR);
			break;
		}
		/* The mapper is trusted, but a length past the slot is a bug. */
		if (req[0] != CC_COUNT ||
		    req[1] > info.slice_size - SIVSHM_MBOX_SIZE) {
			fprintf(stderr, "reducer %u: bad request %llu\n", id,
				(unsigned long long)seq);
			sivshm_close(sh);
			return 1;
		}
		resp[0] = cc_count(data, req[1], req[2]);
		sivshm_mbox_post_response(mb, seq, resp);
		if (irq)
			sivshm_notify(sh, 0, CC_VECTOR);
	}
	sivshm_close(sh);
	return 0;
}
