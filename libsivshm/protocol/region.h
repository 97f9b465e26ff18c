/* SPDX-License-Identifier: MIT */
/*
 * The mapper's memory: one fd per slot, so that the fd a reducer receives
 * reaches its slot and nothing else, mapped side by side into one contiguous
 * range.  Shared by libsivshm's host backend and the QEMU device.
 */
#ifndef SIVSHM_REGION_H
#define SIVSHM_REGION_H

#include <stddef.h>
#include <stdint.h>

#include "geometry.h"

struct sivshm_region {
	struct sivshm_geometry geo;
	int fd[SIVSHM_MAX_REDUCERS + 1];
	void *base;			/* the mapper's mapping, or NULL */
	int locked;			/* base is mlocked */
};

/*
 * Create or reattach the slot fds of region @name.
 *
 * Every slot a reducer can hold is a memfd sealed with PROTO_SLOT_SEALS, so
 * that no reducer can truncate it under the mapper; @dir, if given, chooses
 * its pages (huge pages of its size on hugetlbfs).
 *
 * With @persist, the region outlives the mapper.  Slot 0, which only the
 * mapper maps, is the named file @dir/@name.slot0 itself.  Reducer slot j
 * starts with what @dir/@name.slot<j> kept (sivshm_region_save() writes it),
 * and a reducer that held slot j through the restart hands it back
 * (sivshm_region_adopt()).  A file of another size is another geometry:
 * -EINVAL.  Returns 0 or -errno.
 */
int sivshm_region_open(struct sivshm_region *rg,
		       const struct sivshm_geometry *geo, const char *name,
		       const char *dir, int persist);

/*
 * Persistent regions: copy every reducer slot into its named file, for the
 * next mapper.  Returns 0 or -errno.
 */
int sivshm_region_save(struct sivshm_region *rg, const char *name,
		       const char *dir);

/*
 * Make @fd, a reducer's copy of slot @j checked with proto_slot_check(),
 * the slot: mapped in its place if the region is mapped, handed to the
 * next reducer j.  The old slot's pages are freed.  Takes @fd on success;
 * returns 0 or -errno.
 */
int sivshm_region_adopt(struct sivshm_region *rg, uint32_t j, int fd);

/*
 * The name of slot @j's file in the persistent mode, "@name.slot<j>", in
 * @buf (@len bytes): 0 or -ENAMETOOLONG.  The libvirt hook removes them.
 */
int sivshm_region_slot_name(char *buf, size_t len, const char *name,
			    uint32_t j);

/* Map every slot, side by side; with @lock, mlock the whole range. */
int sivshm_region_map(struct sivshm_region *rg, int lock);

/* Unmap and close.  Persistent files stay unless @remove_files. */
void sivshm_region_close(struct sivshm_region *rg, const char *name,
			 const char *dir, int remove_files);

#endif
