/* SPDX-License-Identifier: MIT */
/*
 * Region geometry: how a shared region of a given size is cut into one slot
 * per VM (the mapper's and one per reducer).  The only place the slice
 * arithmetic lives; the QEMU device and libsivshm both use it.
 */
#ifndef SIVSHM_GEOMETRY_H
#define SIVSHM_GEOMETRY_H

#include <stdint.h>

#include "sivshm.h"	/* the limits */

struct sivshm_geometry {
	uint64_t region_size;	/* bytes mapped by the mapper: slots * slice */
	uint64_t slice_size;	/* bytes per slot, a multiple of the page size */
	uint32_t nreducers;	/* reducers 1..nreducers; slot 0 is the mapper's */
	uint32_t page_size;
};

/*
 * Cut @total bytes into nreducers + 1 slots of
 *	slice_size = total / (nreducers + 1), rounded down to @page_size.
 * Returns 0, or -EINVAL for a geometry that cannot work (no reducer, too many
 * reducers, a page size that is not a power of two, a total over
 * SIVSHM_MAX_REGION, less than one page per slot).
 */
int sivshm_geometry_init(struct sivshm_geometry *geo, uint64_t total,
			 uint32_t nreducers, uint32_t page_size);

/*
 * Whether @self may address @peer (ring it, hear it): a mapper (id 0)
 * addresses reducers 1..nreducers, a reducer the mapper only.
 */
int sivshm_peer_valid(const struct sivshm_geometry *geo, uint32_t self,
		      uint32_t peer);

/* Offset of slot @id in the mapper's contiguous mapping; id <= nreducers. */
static inline uint64_t sivshm_slot_offset(const struct sivshm_geometry *geo,
					  uint32_t id)
{
	return (uint64_t)id * geo->slice_size;
}

#endif
