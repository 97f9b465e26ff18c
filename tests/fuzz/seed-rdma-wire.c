// SPDX-License-Identifier: MIT
/*
 * Write a seed corpus for fuzz-rdma-wire: one valid input per decoder,
 * its selector byte first (0 with nothing else picks id 1, one vector,
 * 4 KiB slots).
 */
#include <stdio.h>

#include "rdma/wire.h"

static int seed(const char *dir, const char *name, uint8_t sel,
		const uint8_t *buf, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(&sel, 1, 1, f) != 1 || fwrite(buf, 1, len, f) != len) {
		perror(path);
		return 1;
	}
	return fclose(f) != 0;
}

int main(int argc, char **argv)
{
	struct srd_hello h = { .type = SRD_PROVE, .id = 1, .nvectors = 1 };
	struct srd_reject r = { .code = SRD_CHALLENGE };
	struct srd_welcome w = {
		.nreducers = 1, .nvectors = 1, .slice_size = 4096,
		.region_size = 8192, .addr = 0x10000, .rkey = 7,
	};
	struct srd_msg m = { .type = SRD_NOTIFY, .length = 4096 };
	uint8_t buf[SRD_MSG_SIZE > SRD_WELCOME_SIZE ? SRD_MSG_SIZE :
		    SRD_WELCOME_SIZE];
	int err = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: seed-rdma-wire DIR\n");
		return 2;
	}
	srd_hello_encode(&h, buf);
	err |= seed(argv[1], "hello", 0, buf, SRD_HELLO_SIZE);
	srd_reject_encode(&r, buf);
	err |= seed(argv[1], "reject", 1, buf, SRD_REJECT_SIZE);
	srd_welcome_encode(&w, buf);
	err |= seed(argv[1], "welcome", 2, buf, SRD_WELCOME_SIZE);
	srd_msg_encode(&m, buf);
	err |= seed(argv[1], "notify", 3, buf, SRD_MSG_SIZE);
	return err;
}
