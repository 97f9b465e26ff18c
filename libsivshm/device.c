// SPDX-License-Identifier: MIT
/*
 * libsivshm's guest backend: the same API over the sivshm driver's
 * /dev/sivshmN, so that a program runs unchanged on host processes and
 * inside VMs.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/sivshm.h>

#include "handle.h"
#include "log.h"

int sivshm_device_open(struct sivshm **out, const char *path,
		       uint32_t flags)
{
	struct sivshm_dev_info info;
	struct sivshm *sh;
	int fd, err;

	if (!out || !path || (flags & ~SIVSHM_MLOCK))
		return -EINVAL;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, SIVSHM_IOC_INFO, &info) < 0) {
		err = -errno;
		goto err_close;
	}
	if (info.nvectors < 1 || info.nvectors > SIVSHM_MAX_VECTORS ||
	    info.nreducers < 1 || info.nreducers > SIVSHM_MAX_REDUCERS ||
	    !info.slice_size || !info.mappable) {
		err = -EPROTO;
		goto err_close;
	}
	sh = sivshm_handle_new(info.id, info.nvectors, flags);
	if (!sh) {
		err = -ENOMEM;
		goto err_close;
	}
	sh->dev_fd = fd;
	sh->geo.nreducers = info.nreducers;
	sh->geo.slice_size = info.slice_size;
	sh->geo.region_size = info.slice_size * (info.nreducers + 1);
	sh->dev_len = info.mappable;

	for (uint32_t v = 0; v < sh->nvectors; v++) {
		struct sivshm_irqfd irqfd = { .vector = v };

		sh->own_fd[v] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		irqfd.fd = sh->own_fd[v];
		if (sh->own_fd[v] < 0 ||
		    ioctl(fd, SIVSHM_IOC_SET_EVENTFD, &irqfd) < 0) {
			err = -errno;
			goto err_free;
		}
	}
	sh->dev_mem = mmap(NULL, sh->dev_len, PROT_READ | PROT_WRITE,
			   MAP_SHARED, fd, 0);
	if (sh->dev_mem == MAP_FAILED) {
		err = -errno;
		sh->dev_mem = NULL;
		goto err_free;
	}
	if ((flags & SIVSHM_MLOCK) && mlock(sh->dev_mem, sh->dev_len) < 0) {
		err = -errno;
		sivshm_log("mlock of the device memory failed: %s "
			   "(RLIMIT_MEMLOCK)", strerror(-err));
		goto err_free;
	}
	sh->slot = sh->id == SIVSHM_MAPPER ? NULL : sh->dev_mem;
	*out = sh;
	return 0;

err_free:
	sivshm_device_close(sh);
	sivshm_handle_free(sh);
	return err;
err_close:
	close(fd);
	return err;
}

void sivshm_device_close(struct sivshm *sh)
{
	if (sh->dev_mem)
		munmap(sh->dev_mem, sh->dev_len);
	sh->dev_mem = NULL;
	proto_close_fds(sh->own_fd, sh->nvectors);
	close(sh->dev_fd);
	sh->dev_fd = -1;
}

int sivshm_device_peers(struct sivshm *sh, uint64_t *bitmap)
{
	struct sivshm_dev_info info;

	if (ioctl(sh->dev_fd, SIVSHM_IOC_INFO, &info) < 0)
		return -errno;
	*bitmap = info.peers;
	return 0;
}

int sivshm_device_notify(struct sivshm *sh, uint32_t peer, uint32_t vector)
{
	struct sivshm_doorbell db = { .peer = peer, .vector = vector };

	if (sh->id == SIVSHM_MAPPER ? peer == SIVSHM_MAPPER ||
	    peer > sh->geo.nreducers : peer != SIVSHM_MAPPER)
		return -EINVAL;
	if (ioctl(sh->dev_fd, SIVSHM_IOC_NOTIFY, &db) < 0)
		return -errno;
	return 0;
}
