// SPDX-License-Identifier: MIT
/*
 * charcount's key files for remote reducers: one line per reducer,
 *
 *	ID HEXKEY
 *
 * the key as 64 hex digits (32 bytes, e.g. from `od -An -tx1 -N32
 * /dev/urandom | tr -d ' \n'`); blank lines and lines starting with #
 * are skipped.  The mapper reads every line, a reducer its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "charcount.h"
#include "sivshm.h"

int cc_read_keys(const char *path, uint64_t *ids,
		 uint8_t (*keys)[SIVSHM_KEY_BYTES])
{
	char line[256], hex[2 * SIVSHM_KEY_BYTES + 2];
	unsigned int lineno = 0, id;
	FILE *f = fopen(path, "re");
	int err = 0;

	*ids = 0;
	if (!f) {
		err = -errno;
		fprintf(stderr, "charcount: %s: %s\n", path, strerror(-err));
		return err;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (line[0] == '#' || strspn(line, " \t\n") == strlen(line))
			continue;
		if (sscanf(line, "%u %65s", &id, hex) != 2 || !id ||
		    id > SIVSHM_MAX_REDUCERS ||
		    sivshm_key_parse(hex, keys[id])) {
			fprintf(stderr, "charcount: %s:%u: not \"ID HEXKEY\" "
				"(an id 1..%u, 64 hex digits)\n", path, lineno,
				SIVSHM_MAX_REDUCERS);
			err = -EINVAL;
			break;
		}
		*ids |= 1ULL << id;
	}
	fclose(f);
	return err;
}
