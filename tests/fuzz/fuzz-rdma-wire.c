// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for the RDMA transport's decoders (libsivshm/rdma/
 * wire.c).  The first input byte picks the decoder and, for the welcome
 * and NOTIFY, the id, vector count and slot size checked against; the
 * rest is the private data or message.  Whatever the input, a decoder
 * must not crash or read out of bounds; what it accepts must lie within
 * the bounds it promises and re-encode to the very bytes it came from.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "rdma/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t out[SRD_MSG_SIZE > SRD_WELCOME_SIZE ? SRD_MSG_SIZE :
		    SRD_WELCOME_SIZE];
	const char *why = NULL;
	struct srd_welcome w;
	struct srd_reject r;
	struct srd_hello h;
	struct srd_msg m;
	uint32_t id, nvec;
	uint64_t slice;

	if (size < 1)
		return 0;
	id = 1 + (data[0] >> 2) % SIVSHM_MAX_REDUCERS;
	nvec = 1 + (data[0] >> 2) % SIVSHM_MAX_VECTORS;
	slice = 4096ULL << ((data[0] >> 2) % 20);
	switch (data[0] & 3) {
	case 0:
		if (srd_hello_decode(data + 1, size - 1, &h, &why)) {
			assert(why);
			break;
		}
		assert(h.id >= 1 && h.id <= SIVSHM_MAX_REDUCERS);
		assert(h.nvectors >= 1 && h.nvectors <= SIVSHM_MAX_VECTORS);
		srd_hello_encode(&h, out);
		assert(!memcmp(out, data + 1, SRD_HELLO_SIZE));
		break;
	case 1:
		if (srd_reject_decode(data + 1, size - 1, &r))
			break;
		srd_reject_encode(&r, out);
		assert(!memcmp(out, data + 1, SRD_REJECT_SIZE));
		break;
	case 2:
		if (srd_welcome_decode(data + 1, size - 1, id, nvec, &w,
				       &why)) {
			assert(why);
			break;
		}
		assert(w.nvectors == nvec && w.nreducers >= id);
		assert(w.region_size <= SIVSHM_MAX_REGION);
		assert(w.region_size == (w.nreducers + 1ULL) * w.slice_size);
		assert(w.addr + w.slice_size >= w.addr);
		srd_welcome_encode(&w, out);
		assert(!memcmp(out, data + 1, SRD_WELCOME_SIZE));
		break;
	case 3:
		if (srd_msg_decode(data + 1, size - 1, nvec, slice, &m, &why)) {
			assert(why);
			break;
		}
		assert(m.vector < nvec);
		assert(m.offset <= slice && m.offset + m.length <= slice);
		srd_msg_encode(&m, out);
		assert(!memcmp(out, data + 1, SRD_MSG_SIZE));
		break;
	}
	return 0;
}
