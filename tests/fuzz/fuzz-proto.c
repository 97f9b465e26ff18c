// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for the handshake parser.  The first input byte is the
 * number of fds that "arrived" with the message, the rest is the message.
 * Whatever the input, proto_decode() must not crash or read out of bounds;
 * what it accepts must re-encode to the very same bytes, and carry the fd
 * count it was accepted with.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t out[PROTO_BUF_SIZE];
	struct proto_msg msg;
	const char *why = NULL;
	unsigned int nfds;
	size_t n;

	if (size < 1 || size - 1 > PROTO_BUF_SIZE)
		return 0;
	nfds = data[0] % (PROTO_MAX_FDS + 2);
	if (proto_decode(data + 1, size - 1, nfds, &msg, &why)) {
		assert(why != NULL);
		return 0;
	}
	assert(proto_nfds(&msg) == nfds);
	n = proto_encode(&msg, out, sizeof(out));
	assert(n == size - 1);
	assert(memcmp(out, data + 1, n) == 0);
	return 0;
}
