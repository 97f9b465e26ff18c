/* SPDX-License-Identifier: MIT */
/* The hook's leases: which running domain holds which (service, vm id). */
#ifndef SIVSHM_LIBVIRT_LEASE_H
#define SIVSHM_LIBVIRT_LEASE_H

#include "hook.h"

struct lease_dir {
	char path[HOOK_PATH_MAX + 1];
	int fd;
	int lock;
};

/* A lease, or (with no uuid) a slot record; 0 or "" for a field not set. */
struct lease {
	char uuid[HOOK_UUID_LEN + 1];
	char name[HOOK_NAME_MAX + 1];
	char socket[HOOK_SOCKET_MAX + 1];
	char dir[HOOK_PATH_MAX + 1];
	uint64_t size;
	uint32_t reducers;
	uint32_t vectors;
};

/* The slot record's id in lease_read() and friends. */
#define LEASE_SLOTS	(-1)

/*
 * Open the state directory @path and take its lock (waiting at most
 * HOOK_LOCK_WAIT_MS).  A missing directory is made, root-only, with
 * @create; without, it is 1 and nothing is open.  0, or -1 with @e set.
 */
int lease_open(struct lease_dir *ld, const char *path, int create,
	       struct hook_err *e);
void lease_close(struct lease_dir *ld);

/* Lease @id (or LEASE_SLOTS) of @service: 1 read, 0 none, -1 with @e set. */
int lease_read(const struct lease_dir *ld, const char *service, int id,
	       struct lease *l, struct hook_err *e);
/* Write it, replacing any: 0, or -1 with @e set. */
int lease_write(const struct lease_dir *ld, const char *service, int id,
		const struct lease *l, struct hook_err *e);
/* Remove it: 0 (also if there was none) or -errno. */
int lease_drop(const struct lease_dir *ld, const char *service, int id);
/* How many leases of @service are held, or -errno. */
int lease_count(const struct lease_dir *ld, const char *service);

#endif
