/* SPDX-License-Identifier: MIT */
/*
 * The mapper's memory: one fd per slot, so that the fd a reducer receives
 * reaches its slot and nothing else, mapped side by side into one contiguous
 * range.  Shared by libsivshm's host backend and the QEMU device.
 */
#ifndef SIVSHM_REGION_H
#define SIVSHM_REGION_H

#include <stdint.h>

#include "geometry.h"

struct sivshm_region {
	struct sivshm_geometry geo;
	int fd[SIVSHM_MAX_REDUCERS + 1];
	void *base;			/* the mapper's mapping, or NULL */
};

/*
 * Create or reattach the slot fds of region @name.
 *
 * Unless @persist, each slot is a memfd sealed against shrink, grow and
 * further sealing, so a reducer cannot truncate it under the mapper; @dir,
 * if given, only chooses its pages (huge pages of its size on hugetlbfs).
 * With @persist, each slot is the named file @dir/@name.slot<j>, which stays
 * after the mapper exits so that a restarted mapper reattaches it (its size
 * must match the geometry).  Named files cannot be sealed: in that mode a
 * reducer holding its slot's fd can still truncate it.  Returns 0 or -errno.
 */
int sivshm_region_open(struct sivshm_region *rg,
		       const struct sivshm_geometry *geo, const char *name,
		       const char *dir, int persist);

/* Map every slot, side by side; with @lock, mlock the whole range. */
int sivshm_region_map(struct sivshm_region *rg, int lock);

/* Unmap and close.  Persistent files stay unless @remove_files. */
void sivshm_region_close(struct sivshm_region *rg, const char *name,
			 const char *dir, int remove_files);

#endif
