/* SPDX-License-Identifier: MIT */
/*
 * The libsivshm handle, shared by its two backends: host processes
 * (sivshm.c, speaking the protocol itself) and guests (device.c, over the
 * sivshm driver's /dev/sivshmN).
 */
#ifndef SIVSHM_HANDLE_H
#define SIVSHM_HANDLE_H

#include <pthread.h>

#include "region.h"
#include "server.h"
#include "sivshm.h"

struct sivshm {
	uint32_t id;
	uint32_t flags;
	uint32_t nvectors;
	struct sivshm_geometry geo;
	pthread_mutex_t lock;
	pthread_cond_t peers_changed;

	/* mapper */
	struct sivshm_region region;
	struct proto_server srv;
	char *name;
	char *dir;
	pthread_t server_thread;
	int server_stop;		/* eventfd; -1 when no thread runs */

	/* reducer */
	int sock;
	void *slot;
	int own_fd[SIVSHM_MAX_VECTORS];		/* the mapper rings these */
	int mapper_fd[SIVSHM_MAX_VECTORS];	/* we ring these */

	/* guest backend: /dev/sivshmN (device.c); -1 for the host backend */
	int dev_fd;
	void *dev_mem;
	uint64_t dev_len;

	/* callback mode */
	sivshm_callback cb;
	void *cb_arg;
	pthread_t cb_thread;
	int cb_stop;			/* eventfd; -1 when no thread runs */
};

struct sivshm *sivshm_handle_new(uint32_t id, uint32_t nvectors,
				 uint32_t flags);
void sivshm_handle_free(struct sivshm *sh);

/* device.c */
void sivshm_device_close(struct sivshm *sh);
int sivshm_device_peers(struct sivshm *sh, uint64_t *bitmap);
int sivshm_device_notify(struct sivshm *sh, uint32_t peer, uint32_t vector);

#endif
