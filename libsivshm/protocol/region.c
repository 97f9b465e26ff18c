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

#include "fds.h"
#include "region.h"

#ifndef MFD_HUGE_SHIFT
#define MFD_HUGE_SHIFT	26	/* <linux/memfd.h>, which clashes with glibc's */
#endif

int sivshm_region_slot_name(char *buf, size_t len, const char *name,
			    uint32_t j)
{
	int n = snprintf(buf, len, "%s.slot%u", name, j);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int slot_path(char *buf, size_t len, const char *dir, const char *name,
		     uint32_t j)
{
	char file[NAME_MAX + 1];
	int n, err;

	err = sivshm_region_slot_name(file, sizeof(file), name, j);
	if (err)
		return err;
	n = snprintf(buf, len, "%s/%s", dir, file);
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
	    fcntl(fd, F_ADD_SEALS, PROTO_SLOT_SEALS & ~F_SEAL_SEAL) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/*
 * Open the named file @path: a regular file, never a symlink, of the slice
 * size or empty (with @create, one is made).  Returns the fd, -ENOENT if
 * there is none and !@create, or -EINVAL for a region of another geometry.
 */
static int slot_file(const struct sivshm_geometry *geo, const char *path,
		     int create)
{
	struct stat st;
	int fd, err;

	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0),
		  0600);
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
		err = -EINVAL;
		goto err_close;
	}
	return fd;

err_close:
	close(fd);
	return err;
}

/* Copy @size bytes from file @src to file @dst, through mappings (hugetlbfs
 * has no write()). */
static int slot_copy(int dst, int src, uint64_t size)
{
	void *from, *to;

	from = mmap(NULL, size, PROT_READ, MAP_SHARED, src, 0);
	if (from == MAP_FAILED)
		return -errno;
	to = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, dst, 0);
	if (to == MAP_FAILED) {
		munmap(from, size);
		return -errno;
	}
	memcpy(to, from, size);
	munmap(to, size);
	munmap(from, size);
	return 0;
}

/* Fill reducer slot @j's memfd with what its named file kept, if any. */
static int slot_restore(struct sivshm_region *rg, const char *name,
			const char *dir, uint32_t j)
{
	char path[PATH_MAX];
	int fd, err;

	err = slot_path(path, sizeof(path), dir, name, j);
	if (err)
		return err;
	fd = slot_file(&rg->geo, path, 0);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	err = slot_copy(rg->fd[j], fd, rg->geo.slice_size);
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

	err = memfd_flags(dir, &flags);
	if (err)
		return err;
	for (j = 0; j <= geo->nreducers; j++) {
		if (persist && j == 0) {
			/* The mapper's own slot: no reducer ever holds it. */
			err = slot_path(path, sizeof(path), dir, name, j);
			if (!err)
				err = slot_file(geo, path, 1);
		} else {
			err = slot_memfd(geo, name, j, flags);
		}
		if (err < 0)
			goto err_close;
		rg->fd[j] = err;
		if (persist && j > 0) {
			err = slot_restore(rg, name, dir, j);
			if (err)
				goto err_close;
		}
	}
	return 0;

err_close:
	sivshm_region_close(rg, name, dir, 0);
	return err;
}

int sivshm_region_save(struct sivshm_region *rg, const char *name,
		       const char *dir)
{
	char path[PATH_MAX];
	int fd, err = 0;

	for (uint32_t j = 1; j <= rg->geo.nreducers && !err; j++) {
		err = slot_path(path, sizeof(path), dir, name, j);
		if (err)
			break;
		fd = slot_file(&rg->geo, path, 1);
		if (fd < 0)
			return fd;
		err = slot_copy(fd, rg->fd[j], rg->geo.slice_size);
		close(fd);
	}
	return err;
}

int sivshm_region_adopt(struct sivshm_region *rg, uint32_t j, int fd)
{
	uint8_t *slot;

	if (j == 0 || j > rg->geo.nreducers)
		return -EINVAL;
	if (rg->base) {
		slot = (uint8_t *)rg->base + sivshm_slot_offset(&rg->geo, j);
		if (mmap(slot, rg->geo.slice_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
			return -errno;
		/* Best effort: the slot is in place whatever this says. */
		if (rg->locked)
			(void)mlock(slot, rg->geo.slice_size);
	}
	/* Whoever still maps the old copy keeps it, without its pages. */
	fallocate(rg->fd[j], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
		  rg->geo.slice_size);
	close(rg->fd[j]);
	rg->fd[j] = fd;
	return 0;
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
	rg->locked = lock;
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
