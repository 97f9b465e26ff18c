// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "region.h"

#ifndef MFD_HUGE_SHIFT
#define MFD_HUGE_SHIFT	26	/* <linux/memfd.h>, which clashes with glibc's */
#endif

static int slot_path(char *buf, size_t len, const char *dir, const char *name,
		     uint32_t j)
{
	int n = snprintf(buf, len, "%s/%s.slot%u", dir, name, j);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * The memfd flags for slots like the files of @dir: huge pages of its size
 * on hugetlbfs, normal pages otherwise (or with no @dir).
 */
static int memfd_flags(const char *dir, unsigned int *flags)
{
	struct statfs fs;
	unsigned int shift = 0;

	*flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
	if (!dir)
		return 0;
	if (statfs(dir, &fs) < 0)
		return -errno;
	if (fs.f_type != HUGETLBFS_MAGIC)
		return 0;
	while (shift < 63 && (1ULL << shift) < (unsigned long long)fs.f_bsize)
		shift++;
	*flags |= MFD_HUGETLB | shift << MFD_HUGE_SHIFT;
	return 0;
}

static int slot_memfd(const struct sivshm_geometry *geo, const char *name,
		      uint32_t j, unsigned int flags)
{
	char label[64];
	int fd, err;

	snprintf(label, sizeof(label), "sivshm-%s-%u", name, j);
	fd = memfd_create(label, flags);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, geo->slice_size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int slot_file(const struct sivshm_geometry *geo, const char *path)
{
	struct stat st;
	int fd, err;

	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto err_close;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
		goto err_close;
	}
	if (st.st_size == 0 && ftruncate(fd, geo->slice_size) < 0) {
		err = -errno;
		goto err_close;
	}
	if (st.st_size != 0 && (uint64_t)st.st_size != geo->slice_size) {
		/* Reattaching a region of another geometry. */
		err = -EINVAL;
		goto err_close;
	}
	return fd;

err_close:
	close(fd);
	return err;
}

int sivshm_region_open(struct sivshm_region *rg,
		       const struct sivshm_geometry *geo, const char *name,
		       const char *dir, int persist)
{
	char path[PATH_MAX];
	unsigned int flags;
	uint32_t j;
	int err;

	memset(rg, 0, sizeof(*rg));
	for (j = 0; j <= SIVSHM_MAX_REDUCERS; j++)
		rg->fd[j] = -1;
	rg->geo = *geo;
	if (!name || !*name || strchr(name, '/') || (persist && !dir))
		return -EINVAL;

	if (!persist) {
		err = memfd_flags(dir, &flags);
		if (err)
			return err;
	}
	for (j = 0; j <= geo->nreducers; j++) {
		if (persist) {
			err = slot_path(path, sizeof(path), dir, name, j);
			if (!err)
				err = slot_file(geo, path);
		} else {
			err = slot_memfd(geo, name, j, flags);
		}
		if (err < 0)
			goto err_close;
		rg->fd[j] = err;
	}
	return 0;

err_close:
	sivshm_region_close(rg, name, dir, 0);
	return err;
}

int sivshm_region_map(struct sivshm_region *rg, int lock)
{
	const struct sivshm_geometry *geo = &rg->geo;
	uint8_t *base;
	int err;

	/* Reserve the whole range, then put each slot in its place. */
	base = mmap(NULL, geo->region_size, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return -errno;
	for (uint32_t j = 0; j <= geo->nreducers; j++) {
		void *p = mmap(base + sivshm_slot_offset(geo, j),
			       geo->slice_size, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_FIXED, rg->fd[j], 0);

		if (p == MAP_FAILED) {
			err = -errno;
			goto err_unmap;
		}
	}
	if (lock && mlock(base, geo->region_size) < 0) {
		err = -errno;
		goto err_unmap;
	}
	rg->base = base;
	return 0;

err_unmap:
	munmap(base, geo->region_size);
	return err;
}

void sivshm_region_close(struct sivshm_region *rg, const char *name,
			 const char *dir, int remove_files)
{
	char path[PATH_MAX];

	if (rg->base)
		munmap(rg->base, rg->geo.region_size);
	rg->base = NULL;
	for (uint32_t j = 0; j <= SIVSHM_MAX_REDUCERS; j++) {
		if (rg->fd[j] < 0)
			continue;
		close(rg->fd[j]);
		rg->fd[j] = -1;
		if (dir && remove_files &&
		    !slot_path(path, sizeof(path), dir, name, j))
			unlink(path);
	}
}
