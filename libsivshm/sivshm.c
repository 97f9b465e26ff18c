// SPDX-License-Identifier: MIT
/*
 * libsivshm's API over its two backends, each an ops table chosen at open:
 * host processes speaking the protocol themselves (host.c) and guests
 * over the sivshm driver (device.c).  What both share lives here: the
 * handle, argument checks, waiting for interrupts and the callback thread.
 */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "handle.h"
#include "sock.h"

struct sivshm *sivshm_handle_new(const struct sivshm_ops *ops, uint32_t id,
				 uint32_t nvectors, uint32_t flags)
{
	struct sivshm *sh = calloc(1, sizeof(*sh));
	pthread_condattr_t attr;

	if (!sh)
		return NULL;
	sh->ops = ops;
	sh->id = id;
	sh->nvectors = nvectors;
	sh->flags = flags;
	sh->sock = -1;
	sh->dev_fd = -1;
	sh->peer_fd = -1;
	sh->server_stop = -1;
	sh->cb_stop = -1;
	for (int v = 0; v < SIVSHM_MAX_VECTORS; v++)
		sh->own_fd[v] = sh->mapper_fd[v] = -1;
	for (int j = 0; j <= SIVSHM_MAX_REDUCERS; j++)
		sh->region.fd[j] = -1;
	pthread_mutex_init(&sh->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&sh->peers_changed, &attr);
	pthread_condattr_destroy(&attr);
	return sh;
}

int sivshm_reducer_wait_peers(uint64_t mask, int connected)
{
	if (mask & ~1ULL)
		return -EINVAL;
	return !mask || connected ? 0 : -ENOTCONN;
}

void sivshm_handle_free(struct sivshm *sh)
{
	pthread_mutex_destroy(&sh->lock);
	pthread_cond_destroy(&sh->peers_changed);
	free(sh);
}

void sivshm_close(struct sivshm *sh)
{
	if (!sh)
		return;
	sivshm_set_callback(sh, NULL, NULL);
	sh->ops->close(sh);
	sivshm_handle_free(sh);
}

int sivshm_key_parse(const char *hex, uint8_t key[SIVSHM_KEY_BYTES])
{
	size_t len = 0;

	if (!hex || !key || strlen(hex) != 2 * SIVSHM_KEY_BYTES)
		return -EINVAL;
	for (size_t i = 0; i < 2 * SIVSHM_KEY_BYTES; i += 2) {
		char pair[3] = { hex[i], hex[i + 1], 0 };
		char *end;

		if (!isxdigit((unsigned char)pair[0]) ||
		    !isxdigit((unsigned char)pair[1]))
			return -EINVAL;
		key[len++] = (uint8_t)strtoul(pair, &end, 16);
	}
	return 0;
}

int sivshm_get_info(struct sivshm *sh, struct sivshm_info *info)
{
	if (!sh || !info)
		return -EINVAL;
	*info = (struct sivshm_info) {
		.id = sh->id,
		.nreducers = sh->geo.nreducers,
		.nvectors = sh->nvectors,
		.flags = sh->flags,
		.region_size = sh->geo.region_size,
		.slice_size = sh->geo.slice_size,
	};
	return 0;
}

void *sivshm_slot(struct sivshm *sh, uint32_t id)
{
	if (!sh || id > sh->geo.nreducers)
		return NULL;
	return sh->ops->slot(sh, id);
}

int sivshm_peers(struct sivshm *sh, uint64_t *bitmap)
{
	if (!sh || !bitmap)
		return -EINVAL;
	return sh->ops->peers(sh, bitmap);
}

int sivshm_wait_peers(struct sivshm *sh, uint64_t mask, int timeout_ms)
{
	if (!sh)
		return -EINVAL;
	return sh->ops->wait_peers(sh, mask, timeout_ms);
}

int sivshm_notify_range(struct sivshm *sh, uint32_t peer, uint32_t vector,
		       uint64_t offset, uint64_t length)
{
	if (!sh || vector >= sh->nvectors ||
	    !sivshm_peer_valid(&sh->geo, sh->id, peer) ||
	    offset > sh->geo.slice_size ||
	    length > sh->geo.slice_size - offset)
		return -EINVAL;
	return sh->ops->notify(sh, peer, vector, offset, length);
}

int sivshm_notify(struct sivshm *sh, uint32_t peer, uint32_t vector)
{
	return sivshm_notify_range(sh, peer, vector, 0,
				   sh ? sh->geo.slice_size : 0);
}

/* The fd @peer rings for @vector; fixed for the handle's lifetime. */
static int in_fd(struct sivshm *sh, uint32_t peer, uint32_t vector)
{
	if (vector >= sh->nvectors || !sivshm_peer_valid(&sh->geo, sh->id, peer))
		return -EINVAL;
	return sh->ops->in_fd(sh, peer, vector);
}

int sivshm_eventfd(struct sivshm *sh, uint32_t peer, uint32_t vector)
{
	return sh ? in_fd(sh, peer, vector) : -EINVAL;
}

/* Poll every (peer, vector) in @vmask; consume one interrupt. */
static int wait_any(struct sivshm *sh, uint32_t vmask, int timeout_ms,
		    int stop_fd, uint32_t *peer, uint32_t *vector)
{
	struct pollfd pfd[SIVSHM_MAX_REDUCERS * SIVSHM_MAX_VECTORS + 1];
	uint32_t who[SIVSHM_MAX_REDUCERS * SIVSHM_MAX_VECTORS];
	/* A guest mapper has one fd per vector: who rang is unknown. */
	int merged = sh->ops->merged && sh->id == SIVSHM_MAPPER;
	uint32_t first = sh->id == SIVSHM_MAPPER ? 1 : 0;
	uint32_t last = sh->id == SIVSHM_MAPPER && !merged ?
			sh->geo.nreducers : first;
	int64_t deadline = proto_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	unsigned int n = 0, i;
	uint64_t count;
	int r;

	for (uint32_t p = first; p <= last; p++) {
		for (uint32_t v = 0; v < sh->nvectors; v++) {
			if (!(vmask & (1U << v)))
				continue;
			pfd[n] = (struct pollfd) {
				.fd = in_fd(sh, p, v), .events = POLLIN,
			};
			who[n++] = p << 16 | v;
		}
	}
	if (stop_fd >= 0)
		pfd[n] = (struct pollfd) { .fd = stop_fd, .events = POLLIN };
	for (;;) {
		int left = timeout_ms;

		if (timeout_ms > 0) {
			int64_t now = proto_now_ms();

			left = now >= deadline ? 0 : (int)(deadline - now);
		}
		r = poll(pfd, n + (stop_fd >= 0), left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		if (stop_fd >= 0 && pfd[n].revents)
			return -ECANCELED;
		for (i = 0; i < n; i++) {
			if (!(pfd[i].revents & POLLIN))
				continue;
			if (read(pfd[i].fd, &count, sizeof(count)) < 0)
				continue;	/* another waiter took it */
			if (peer)
				*peer = merged ? SIVSHM_PEER_ANY : who[i] >> 16;
			if (vector)
				*vector = who[i] & 0xffff;
			return 0;
		}
	}
}

int sivshm_wait(struct sivshm *sh, uint32_t vector, int timeout_ms,
		uint32_t *peer)
{
	if (!sh || vector >= sh->nvectors)
		return -EINVAL;
	if (sh->cb)
		return -EBUSY;
	return wait_any(sh, 1U << vector, timeout_ms, -1, peer, NULL);
}

static void *callback_thread(void *arg)
{
	struct sivshm *sh = arg;
	uint32_t peer, vector;

	for (;;) {
		int err = wait_any(sh, (1U << sh->nvectors) - 1, -1,
				   sh->cb_stop, &peer, &vector);

		if (err == -ECANCELED)
			break;
		if (err) {
			sivshm_log("callback thread stops: %s", strerror(-err));
			break;
		}
		sh->cb(sh, peer, vector, sh->cb_arg);
	}
	return NULL;
}

int sivshm_set_callback(struct sivshm *sh, sivshm_callback cb, void *arg)
{
	uint64_t one = 1;
	int err;

	if (!sh)
		return -EINVAL;
	if (sh->cb_stop >= 0 && pthread_equal(pthread_self(), sh->cb_thread))
		return -EDEADLK;	/* from inside the callback */
	if (sh->cb_stop >= 0) {
		if (write(sh->cb_stop, &one, sizeof(one)) == sizeof(one))
			pthread_join(sh->cb_thread, NULL);
		close(sh->cb_stop);
		sh->cb_stop = -1;
		sh->cb = NULL;
	}
	if (!cb)
		return 0;
	sh->cb_stop = eventfd(0, EFD_CLOEXEC);
	if (sh->cb_stop < 0)
		return -errno;
	sh->cb = cb;
	sh->cb_arg = arg;
	err = -pthread_create(&sh->cb_thread, NULL, callback_thread, sh);
	if (err) {
		close(sh->cb_stop);
		sh->cb_stop = -1;
		sh->cb = NULL;
	}
	return err;
}
