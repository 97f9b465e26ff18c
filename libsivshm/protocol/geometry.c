// SPDX-License-Identifier: MIT
#include <errno.h>

#include "geometry.h"

int sivshm_geometry_init(struct sivshm_geometry *geo, uint64_t total,
			 uint32_t nreducers, uint32_t page_size)
{
	uint64_t slice;

	if (nreducers < 1 || nreducers > SIVSHM_MAX_REDUCERS)
		return -EINVAL;
	if (page_size == 0 || (page_size & (page_size - 1)))
		return -EINVAL;
	if (total > SIVSHM_MAX_REGION)
		return -EINVAL;

	slice = total / (nreducers + 1);
	slice &= ~((uint64_t)page_size - 1);
	if (slice == 0)
		return -EINVAL;

	geo->slice_size = slice;
	geo->region_size = slice * (nreducers + 1);
	geo->nreducers = nreducers;
	geo->page_size = page_size;
	return 0;
}

int sivshm_peer_valid(const struct sivshm_geometry *geo, uint32_t self,
		      uint32_t peer)
{
	if (self == SIVSHM_MAPPER)
		return peer != SIVSHM_MAPPER && peer <= geo->nreducers;
	return peer == SIVSHM_MAPPER;
}
