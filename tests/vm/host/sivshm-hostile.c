// SPDX-License-Identifier: MIT
/*
 * A hostile client on a mapper's socket, from the host:
 *
 *   sivshm-hostile SOCKET NREDUCERS NVECTORS CONNECTED_ID FREE_ID
 *
 * Sends every malformed or unwelcome HELLO of tests/unit/hostile.c and
 * exits 0 only if each was refused with the right code.
 */
#include <stdio.h>
#include <stdlib.h>

#include "hostile.h"

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: sivshm-hostile SOCKET NREDUCERS NVECTORS "
			"CONNECTED_ID FREE_ID\n");
		return 2;
	}
	hostile_refusals(argv[1], strtoul(argv[2], NULL, 0),
			 strtoul(argv[3], NULL, 0), strtoul(argv[4], NULL, 0),
			 strtoul(argv[5], NULL, 0));
	puts("sivshm-hostile: every hostile HELLO was refused");
	return 0;
}
