// SPDX-License-Identifier: MIT
/* Write a seed corpus for fuzz-proto: one valid message of each type. */
#include <stdio.h>
#include <string.h>

#include "proto.h"

static int seed(const char *dir, const char *name, const struct proto_msg *m)
{
	uint8_t buf[PROTO_BUF_SIZE + 1];
	char path[512];
	size_t n;
	FILE *f;

	buf[0] = proto_nfds(m);
	n = proto_encode(m, buf + 1, PROTO_BUF_SIZE);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, n + 1, f) != n + 1) {
		perror(path);
		return 1;
	}
	return fclose(f) != 0;
}

int main(int argc, char **argv)
{
	struct proto_msg hello = {
		.version = PROTO_VERSION, .type = PROTO_HELLO,
		.hello = { .id = 1, .nvectors = 2 },
	};
	struct proto_msg welcome = {
		.version = PROTO_VERSION, .type = PROTO_WELCOME,
		.welcome = { .id = 2, .nreducers = 3, .region_size = 16384,
			     .slice_size = 4096, .slot_offset = 8192,
			     .nvectors = 1 },
	};
	struct proto_msg refuse = {
		.version = PROTO_VERSION, .type = PROTO_REFUSE,
		.refuse = { .code = PROTO_E_ID_BUSY, .reason = "busy" },
	};

	if (argc != 2) {
		fprintf(stderr, "usage: seed-proto DIR\n");
		return 2;
	}
	return seed(argv[1], "hello", &hello) | seed(argv[1], "welcome", &welcome) |
	       seed(argv[1], "refuse", &refuse);
}
