// SPDX-License-Identifier: MIT
/*
 * libsivshm's host-process backend: the mapper and the reducers are
 * processes on one host, speaking the same protocol as the QEMU device.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "fds.h"
#include "log.h"
#include "handle.h"
#include "mapper.h"
#include "rdma/service.h"

static const struct sivshm_ops mapper_ops, reducer_ops;

static void server_log(void *opaque, const char *fmt, va_list ap)
{
	(void)opaque;
	sivshm_vlog(fmt, ap);
}

static void peer_changed(void *opaque, uint32_t id, int connected)
{
	struct sivshm *sh = opaque;

	(void)id;
	(void)connected;
	pthread_cond_broadcast(&sh->peers_changed);	/* lock held by dispatch */
}

/* A reducer rejoining a persistent region hands back its newer slot. */
static int adopt_slot(void *opaque, uint32_t id, int fd)
{
	struct sivshm *sh = opaque;

	return sivshm_region_adopt(&sh->region, id, fd);
}

static void *server_thread(void *arg)
{
	struct sivshm *sh = arg;
	struct pollfd pfd[PROTO_MAX_POLLFDS + 1];

	for (;;) {
		unsigned int n;
		int timeout;

		pthread_mutex_lock(&sh->lock);
		n = proto_server_pollfds(&sh->srv, pfd);
		timeout = proto_server_timeout(&sh->srv);
		pthread_mutex_unlock(&sh->lock);
		pfd[n] = (struct pollfd) { .fd = sh->server_stop, .events = POLLIN };
		if (poll(pfd, n + 1, timeout) < 0 && errno != EINTR)
			sivshm_log("mapper: poll: %s", strerror(errno));
		if (pfd[n].revents)
			break;
		pthread_mutex_lock(&sh->lock);
		proto_server_dispatch(&sh->srv, pfd, n);
		pthread_mutex_unlock(&sh->lock);
	}
	return NULL;
}

static void log_mlock_failure(uint64_t bytes, int err)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		sivshm_log("mlock of %llu bytes failed (%s): RLIMIT_MEMLOCK is "
			   "%llu bytes; raise it (ulimit -l) or do not ask for "
			   "SIVSHM_MLOCK", (unsigned long long)bytes,
			   strerror(-err), (unsigned long long)rl.rlim_cur);
	else
		sivshm_log("mlock of %llu bytes failed (%s) under RLIMIT_MEMLOCK",
			   (unsigned long long)bytes, strerror(-err));
}

int sivshm_mapper_open(struct sivshm **out,
		       const struct sivshm_mapper_opts *opts)
{
	struct proto_cred allow[SIVSHM_MAX_REDUCERS + 1];
	struct proto_mapper_conf conf;
	enum proto_mapper_step failed;
	uint32_t page = getpagesize();
	struct sivshm *sh;
	struct statfs fs;
	int err;

	if (!out || !opts || !opts->socket_path || !opts->name ||
	    (opts->flags & ~(SIVSHM_MLOCK | SIVSHM_PERSIST |
			     SIVSHM_CHECK_CREDS)) ||
	    ((opts->flags & SIVSHM_PERSIST) && !opts->dir) ||
	    ((opts->flags & SIVSHM_CHECK_CREDS) && !opts->creds))
		return -EINVAL;
	if (opts->nvectors < 1 || opts->nvectors > SIVSHM_MAX_VECTORS)
		return -EINVAL;
	if (opts->dir) {
		/* hugetlbfs reports its huge page size as the block size. */
		if (statfs(opts->dir, &fs) < 0)
			return -errno;
		page = fs.f_bsize;
	}
	sh = sivshm_handle_new(&mapper_ops, SIVSHM_MAPPER, opts->nvectors,
			       opts->flags);
	if (!sh)
		return -ENOMEM;
	sh->name = strdup(opts->name);
	sh->dir = opts->dir ? strdup(opts->dir) : NULL;
	if (!sh->name || (opts->dir && !sh->dir)) {
		err = -ENOMEM;
		goto err_free;
	}
	conf = (struct proto_mapper_conf) {
		.size = opts->size,
		.nreducers = opts->nreducers,
		.nvectors = opts->nvectors,
		.page_size = page,
		.name = sh->name,
		.dir = sh->dir,
		.persist = !!(opts->flags & SIVSHM_PERSIST),
		.socket_path = opts->socket_path,
		.peer_changed = peer_changed,
		.adopt_slot = adopt_slot,
		.log = server_log,
		.opaque = sh,
	};
	err = proto_mapper_open(&conf, &sh->geo, &sh->region, &failed);
	if (err && failed == PROTO_MAPPER_GEOMETRY) {
		sivshm_log("mapper: %llu bytes for %u reducers is no geometry "
			   "(at most %u reducers, %llu bytes, a page per slot)",
			   (unsigned long long)opts->size, opts->nreducers,
			   SIVSHM_MAX_REDUCERS,
			   (unsigned long long)SIVSHM_MAX_REGION);
		goto err_free;
	}
	if (err) {
		sivshm_log("mapper: cannot create the slots of %s: %s",
			   sh->name, strerror(-err));
		goto err_free;
	}
	err = sivshm_region_map(&sh->region, !!(opts->flags & SIVSHM_MLOCK));
	if (err) {
		if (opts->flags & SIVSHM_MLOCK)
			log_mlock_failure(sh->geo.region_size, err);
		goto err_region;
	}
	if (opts->flags & SIVSHM_CHECK_CREDS) {
		for (uint32_t j = 1; j <= sh->geo.nreducers; j++) {
			allow[j].uid = opts->creds[j].uid;
			allow[j].gid = opts->creds[j].gid;
		}
		conf.allow = allow;
	}
	err = proto_mapper_serve(&conf, &sh->geo, &sh->region, &sh->srv,
				 &failed);
	if (err) {
		if (failed == PROTO_MAPPER_LISTEN)
			sivshm_log("mapper: cannot listen on %s: %s",
				   opts->socket_path, strerror(-err));
		goto err_region;
	}
	sh->server_stop = eventfd(0, EFD_CLOEXEC);
	if (sh->server_stop < 0) {
		err = -errno;
		goto err_server;
	}
	err = -pthread_create(&sh->server_thread, NULL, server_thread, sh);
	if (err)
		goto err_stop;
	*out = sh;
	return 0;

err_stop:
	close(sh->server_stop);
	sh->server_stop = -1;
err_server:
	proto_server_fini(&sh->srv);
err_region:
	sivshm_region_close(&sh->region, sh->name, sh->dir, 0);
err_free:
	free(sh->name);
	free(sh->dir);
	sivshm_handle_free(sh);
	return err;
}

int sivshm_reducer_open(struct sivshm **out, const char *socket_path,
			uint32_t id, uint32_t nvectors, uint32_t flags,
			int timeout_ms)
{
	return sivshm_reducer_open_checked(out, socket_path, id, nvectors,
					   flags, timeout_ms, NULL);
}

int sivshm_reducer_open_checked(struct sivshm **out, const char *socket_path,
				uint32_t id, uint32_t nvectors, uint32_t flags,
				int timeout_ms,
				const struct sivshm_cred *mapper)
{
	struct proto_cred want;
	int fds[PROTO_MAX_FDS];
	struct proto_msg welcome;
	char reason[PROTO_REASON_LEN] = "";
	struct sivshm *sh;
	uint32_t v;
	int err;

	if (!out || !socket_path || id == SIVSHM_MAPPER ||
	    id > SIVSHM_MAX_REDUCERS || nvectors < 1 ||
	    nvectors > SIVSHM_MAX_VECTORS || (flags & ~SIVSHM_MLOCK))
		return -EINVAL;
	sh = sivshm_handle_new(&reducer_ops, id, nvectors, flags);
	if (!sh)
		return -ENOMEM;
	for (v = 0; v < nvectors; v++) {
		sh->own_fd[v] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (sh->own_fd[v] < 0) {
			err = -errno;
			goto err_fds;
		}
	}
	if (mapper) {
		want.uid = mapper->uid;
		want.gid = mapper->gid;
	}
	sh->sock = proto_client_join(socket_path, id, nvectors, sh->own_fd,
				     mapper ? &want : NULL, timeout_ms,
				     &welcome, fds, reason, sizeof(reason));
	if (sh->sock < 0) {
		err = sh->sock;
		sivshm_log("reducer %u: cannot join the mapper at %s: %s%s%s",
			   id, socket_path, strerror(-err), *reason ? ": " : "",
			   reason);
		goto err_fds;
	}
	sh->geo.slice_size = welcome.welcome.slice_size;
	sh->geo.region_size = welcome.welcome.region_size;
	sh->geo.nreducers = welcome.welcome.nreducers;
	sh->slot = mmap(NULL, sh->geo.slice_size, PROT_READ | PROT_WRITE,
			MAP_SHARED, fds[0], 0);
	err = sh->slot == MAP_FAILED ? -errno : 0;
	close(fds[0]);		/* the mapping is all we keep of the slot */
	for (v = 0; v < nvectors; v++)
		sh->mapper_fd[v] = fds[1 + v];
	if (err) {
		sh->slot = NULL;
		goto err_sock;
	}
	if ((flags & SIVSHM_MLOCK) && mlock(sh->slot, sh->geo.slice_size)) {
		err = -errno;
		log_mlock_failure(sh->geo.slice_size, err);
		goto err_unmap;
	}
	*out = sh;
	return 0;

err_unmap:
	munmap(sh->slot, sh->geo.slice_size);
err_sock:
	close(sh->sock);
err_fds:
	proto_close_fds(sh->own_fd, nvectors);
	proto_close_fds(sh->mapper_fd, nvectors);
	sivshm_handle_free(sh);
	return err;
}

int sivshm_mapper_serve_remote(struct sivshm *sh,
			       const struct sivshm_remote_opts *opts)
{
	struct srd_service *svc;
	uint64_t all, busy;
	int err;

	if (!sh || sh->ops != &mapper_ops || !opts || !opts->listen ||
	    !opts->keys || !opts->ids)
		return -EINVAL;
	all = ((1ULL << sh->geo.nreducers) - 1) << 1;
	if (opts->ids & ~all)
		return -EINVAL;
	for (uint32_t j = 1; j <= sh->geo.nreducers; j++)
		if ((opts->ids & 1ULL << j) && !opts->keys[j])
			return -EINVAL;
	pthread_mutex_lock(&sh->lock);
	busy = sh->srv.remote ? 0 : proto_server_peers(&sh->srv) & opts->ids;
	err = sh->srv.remote ? -EALREADY : busy ? -EBUSY : 0;
	if (!err)
		__atomic_store_n(&sh->srv.remote, opts->ids, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&sh->lock);
	if (busy)
		sivshm_log("mapper: reducers %#llx are connected locally; "
			   "they cannot be served over RDMA",
			   (unsigned long long)busy);
	if (err)
		return err;
	err = srd_service_start(sh, opts, &svc);
	if (!err)
		__atomic_store_n(&sh->remote, svc, __ATOMIC_RELEASE);
	if (err) {
		pthread_mutex_lock(&sh->lock);
		__atomic_store_n(&sh->srv.remote, 0, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&sh->lock);
	}
	return err;
}

/* Reducers connected: locally or over RDMA.  With sh->lock held. */
static uint64_t mapper_all_peers(struct sivshm *sh)
{
	return proto_server_peers(&sh->srv) |
	       (sh->remote ? srd_service_peers(sh->remote) : 0);
}

static void mapper_close(struct sivshm *sh)
{
	uint64_t one = 1;

	if (sh->remote)
		srd_service_stop(sh->remote);
	if (write(sh->server_stop, &one, sizeof(one)) == sizeof(one))
		pthread_join(sh->server_thread, NULL);
	close(sh->server_stop);
	proto_server_fini(&sh->srv);
	if (sh->flags & SIVSHM_PERSIST) {
		int err = sivshm_region_save(&sh->region, sh->name, sh->dir);

		if (err)
			sivshm_log("mapper: saving the slots of %s in %s: %s",
				   sh->name, sh->dir, strerror(-err));
	}
	sivshm_region_close(&sh->region, sh->name, sh->dir, 0);
	free(sh->name);
	free(sh->dir);
}

static void *mapper_slot(struct sivshm *sh, uint32_t id)
{
	return (uint8_t *)sh->region.base + sivshm_slot_offset(&sh->geo, id);
}

static int mapper_peers(struct sivshm *sh, uint64_t *bitmap)
{
	pthread_mutex_lock(&sh->lock);
	*bitmap = mapper_all_peers(sh);
	pthread_mutex_unlock(&sh->lock);
	return 0;
}

static int mapper_wait_peers(struct sivshm *sh, uint64_t mask, int timeout_ms)
{
	struct timespec ts;
	int err = 0;

	/* Only reducers 1..N can ever be connected. */
	if (mask & ~(((1ULL << sh->geo.nreducers) - 1) << 1))
		return -EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&sh->lock);
	while ((mapper_all_peers(sh) & mask) != mask && !err) {
		if (timeout_ms < 0)
			err = pthread_cond_wait(&sh->peers_changed, &sh->lock);
		else
			err = pthread_cond_timedwait(&sh->peers_changed,
						     &sh->lock, &ts);
	}
	pthread_mutex_unlock(&sh->lock);
	return err == ETIMEDOUT ? -ETIMEDOUT : -err;
}

static int mapper_notify(struct sivshm *sh, uint32_t peer, uint32_t vector,
			 uint64_t offset, uint64_t length)
{
	struct srd_service *svc;
	int fd, err;

	/* Reserved ids never join locally; the service follows. */
	if (__atomic_load_n(&sh->srv.remote, __ATOMIC_ACQUIRE) & 1ULL << peer) {
		svc = __atomic_load_n(&sh->remote, __ATOMIC_ACQUIRE);
		return svc ? srd_service_notify(svc, peer, vector, offset,
						length) : -ENOTCONN;
	}

	/*
	 * Ring a private duplicate outside the lock: the server may close the
	 * peer's fd meanwhile, and the peer's eventfd is not ours to trust.
	 */
	pthread_mutex_lock(&sh->lock);
	fd = sh->srv.peer[peer].conn >= 0 ?
	     fcntl(sh->srv.peer[peer].out_fd[vector], F_DUPFD_CLOEXEC, 0) :
	     -ENOTCONN;
	if (fd == -1)
		fd = -errno;
	pthread_mutex_unlock(&sh->lock);
	if (fd < 0)
		return fd;
	err = proto_ring(fd);
	close(fd);
	return err;
}

/* Each reducer rings its own eventfd per vector; they are fixed. */
static int mapper_in_fd(struct sivshm *sh, uint32_t peer, uint32_t vector)
{
	return sh->srv.peer[peer].in_fd[vector];
}

static void reducer_close(struct sivshm *sh)
{
	munmap(sh->slot, sh->geo.slice_size);
	close(sh->sock);
	proto_close_fds(sh->own_fd, sh->nvectors);
	proto_close_fds(sh->mapper_fd, sh->nvectors);
}

static void *reducer_slot(struct sivshm *sh, uint32_t id)
{
	return id == sh->id ? sh->slot : NULL;
}

static int reducer_connected(struct sivshm *sh)
{
	struct pollfd pfd = { .fd = sh->sock, .events = POLLIN };

	/* The mapper never sends after WELCOME: any event is its departure. */
	return poll(&pfd, 1, 0) == 0;
}

static int reducer_peers(struct sivshm *sh, uint64_t *bitmap)
{
	*bitmap = reducer_connected(sh) ? 1 : 0;
	return 0;
}

static int reducer_wait_peers(struct sivshm *sh, uint64_t mask,
			      int timeout_ms)
{
	return sivshm_reducer_wait_peers(mask, reducer_connected(sh));
}

/* The slot is shared memory: the range needs no moving. */
static int reducer_notify(struct sivshm *sh, uint32_t peer, uint32_t vector,
			  uint64_t offset, uint64_t length)
{
	return proto_ring(sh->mapper_fd[vector]);
}

static int reducer_in_fd(struct sivshm *sh, uint32_t peer, uint32_t vector)
{
	return sh->own_fd[vector];
}

static const struct sivshm_ops mapper_ops = {
	.close = mapper_close,
	.slot = mapper_slot,
	.peers = mapper_peers,
	.wait_peers = mapper_wait_peers,
	.notify = mapper_notify,
	.in_fd = mapper_in_fd,
};

static const struct sivshm_ops reducer_ops = {
	.close = reducer_close,
	.slot = reducer_slot,
	.peers = reducer_peers,
	.wait_peers = reducer_wait_peers,
	.notify = reducer_notify,
	.in_fd = reducer_in_fd,
};
