// SPDX-License-Identifier: MIT
/*
 * A hostile client on a mapper's socket, from the host:
 *
 *   sivshm-hostile SOCKET NREDUCERS NVECTORS CONNECTED_ID FREE_ID [FLOOD [hold]]
 *
 * Sends every malformed or unwelcome HELLO of tests/unit/hostile.c and
 * exits 0 only if each was refused with the right code.  With FLOOD (0 or
 * more), it first joins as CONNECTED_ID itself (leave that id free), and
 * after the refusals sends FLOOD hostile messages of every kind, each with
 * descriptors (hostile_flood()), following each connection until the
 * mapper ends it; then it leaves, with "hold" only once its stdin closes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"
#include "sivshm.h"

int main(int argc, char **argv)
{
	unsigned long flood = 0;
	struct sivshm *busy = NULL;
	int err;

	if (argc < 6 || argc > 8 || (argc == 8 && strcmp(argv[7], "hold"))) {
		fprintf(stderr, "usage: sivshm-hostile SOCKET NREDUCERS NVECTORS "
			"CONNECTED_ID FREE_ID [FLOOD [hold]]\n");
		return 2;
	}
	if (argc >= 7) {
		flood = strtoul(argv[6], NULL, 0);
		err = sivshm_reducer_open(&busy, argv[1],
					  strtoul(argv[4], NULL, 0),
					  strtoul(argv[3], NULL, 0), 0, 10000);
		if (err) {
			fprintf(stderr, "sivshm-hostile: cannot join: %s\n",
				strerror(-err));
			return 1;
		}
	}
	hostile_refusals(argv[1], strtoul(argv[2], NULL, 0),
			 strtoul(argv[3], NULL, 0), strtoul(argv[4], NULL, 0),
			 strtoul(argv[5], NULL, 0));
	puts("sivshm-hostile: every hostile HELLO was refused");
	if (flood) {
		hostile_flood(argv[1], strtoul(argv[2], NULL, 0),
			      strtoul(argv[3], NULL, 0),
			      strtoul(argv[4], NULL, 0),
			      strtoul(argv[5], NULL, 0), flood);
		printf("sivshm-hostile: %lu hostile messages sent\n", flood);
	}
	if (argc == 8) {
		char c;

		puts("sivshm-hostile: holding");
		fflush(stdout);
		while (read(0, &c, 1) > 0)
			;
	}
	sivshm_close(busy);
	return 0;
}
