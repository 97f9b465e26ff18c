// SPDX-License-Identifier: MIT
/*
 * A library mapper in a host process, for VM tests that need one outside
 * the QEMU under test:
 *
 *   sivshm-mapper SOCKET NREDUCERS NVECTORS BYTES
 *
 * Listens until its stdin closes; prints "listening" once it does.  Then
 * prints what each reducer's slot starts with, as "slot<j>: <text>".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sivshm.h"

int main(int argc, char **argv)
{
	struct sivshm_mapper_opts opts = { .name = "host-mapper" };
	struct sivshm *mapper;
	char c;
	int err;

	if (argc != 5) {
		fprintf(stderr, "usage: sivshm-mapper SOCKET NREDUCERS NVECTORS "
			"BYTES\n");
		return 2;
	}
	opts.socket_path = argv[1];
	opts.nreducers = strtoul(argv[2], NULL, 0);
	opts.nvectors = strtoul(argv[3], NULL, 0);
	opts.size = strtoull(argv[4], NULL, 0);
	err = sivshm_mapper_open(&mapper, &opts);
	if (err) {
		fprintf(stderr, "sivshm-mapper: %s\n", strerror(-err));
		return 1;
	}
	puts("listening");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	for (uint32_t j = 1; j <= opts.nreducers; j++)
		printf("slot%u: %.63s\n", j, (char *)sivshm_slot(mapper, j));
	sivshm_close(mapper);
	return 0;
}
