// SPDX-License-Identifier: MIT
/*
 * libsivshm's guest backend: the same API over the sivshm driver's
 * /dev/sivshmN, so that a program runs unchanged on host processes and
 * inside VMs.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/sivshm.h>

#include "fds.h"
#include "handle.h"
#include "log.h"
#include "sock.h"

static const struct sivshm_ops device_ops;

static void device_close(struct sivshm *sh)
{
	if (sh->dev_mem)
		munmap(sh->dev_mem, sh->dev_len);
	sh->dev_mem = NULL;
	proto_close_fds(sh->own_fd, sh->nvectors);
	proto_close_fds(&sh->peer_fd, 1);
	close(sh->dev_fd);
	sh->dev_fd = -1;
}

/* An eventfd the driver signals for @vector (nvectors: peer changes). */
static int device_eventfd(struct sivshm *sh, uint32_t vector)
{
	struct sivshm_irqfd irqfd = { .vector = vector };
	int err;

	irqfd.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (irqfd.fd < 0)
		return -errno;
	if (ioctl(sh->dev_fd, SIVSHM_IOC_SET_EVENTFD, &irqfd) < 0) {
		err = -errno;
		close(irqfd.fd);
		return err;
	}
	return irqfd.fd;
}

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
	sh = sivshm_handle_new(&device_ops, info.id, info.nvectors, flags);
	if (!sh) {
		err = -ENOMEM;
		goto err_close;
	}
	sh->dev_fd = fd;
	sh->geo.nreducers = info.nreducers;
	sh->geo.slice_size = info.slice_size;
	sh->geo.region_size = info.slice_size * (info.nreducers + 1);
	sh->dev_len = info.mappable;

	for (uint32_t v = 0; v <= sh->nvectors; v++) {
		err = device_eventfd(sh, v);
		if (err < 0)
			goto err_free;
		if (v < sh->nvectors)
			sh->own_fd[v] = err;
		else
			sh->peer_fd = err;
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
	*out = sh;
	return 0;

err_free:
	device_close(sh);
	sivshm_handle_free(sh);
	return err;
err_close:
	close(fd);
	return err;
}

static void *device_slot(struct sivshm *sh, uint32_t id)
{
	if (sh->id == SIVSHM_MAPPER)
		return (uint8_t *)sh->dev_mem + sivshm_slot_offset(&sh->geo, id);
	return id == sh->id ? sh->dev_mem : NULL;
}

static int device_peers(struct sivshm *sh, uint64_t *bitmap)
{
	struct sivshm_dev_info info;

	if (ioctl(sh->dev_fd, SIVSHM_IOC_INFO, &info) < 0)
		return -errno;
	*bitmap = info.peers;
	return 0;
}

/*
 * Sleep on the peer-change interrupt between looks at the bitmap.  Each
 * sleep is bounded, so that a second waiter that took the event (they
 * share the eventfd) costs the other at most that long.
 */
#define PEER_RECHECK_MS	100

static int device_wait_peers(struct sivshm *sh, uint64_t mask, int timeout_ms)
{
	int64_t deadline = proto_now_ms() + timeout_ms;
	uint64_t peers = 0, count;
	int err;

	for (;;) {
		struct pollfd pfd = { .fd = sh->peer_fd, .events = POLLIN };
		int left = PEER_RECHECK_MS;

		err = device_peers(sh, &peers);
		if (err || (peers & mask) == mask)
			return err;
		if (timeout_ms >= 0) {
			int64_t now = proto_now_ms();

			if (now >= deadline)
				return -ETIMEDOUT;
			if (deadline - now < left)
				left = deadline - now;
		}
		if (poll(&pfd, 1, left) > 0 &&
		    read(sh->peer_fd, &count, sizeof(count)) < 0 &&
		    errno != EAGAIN)
			return -errno;
	}
}

static int device_notify(struct sivshm *sh, uint32_t peer, uint32_t vector,
			 uint64_t offset, uint64_t length)
{
	struct sivshm_doorbell db = { .peer = peer, .vector = vector };

	if (ioctl(sh->dev_fd, SIVSHM_IOC_NOTIFY, &db) < 0)
		return -errno;
	return 0;
}

/* The device merges every peer's rings for a vector into one fd. */
static int device_in_fd(struct sivshm *sh, uint32_t peer, uint32_t vector)
{
	return sh->own_fd[vector];
}

static const struct sivshm_ops device_ops = {
	.close = device_close,
	.slot = device_slot,
	.peers = device_peers,
	.wait_peers = device_wait_peers,
	.notify = device_notify,
	.in_fd = device_in_fd,
	.merged = 1,
};
