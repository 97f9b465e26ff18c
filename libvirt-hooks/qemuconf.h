/* SPDX-License-Identifier: MIT */
/* qemu.conf: who libvirt runs QEMU as. */
#ifndef SIVSHM_LIBVIRT_QEMUCONF_H
#define SIVSHM_LIBVIRT_QEMUCONF_H

#include "hook.h"

/*
 * The first `user` and `group` strings of @len bytes of qemu.conf into
 * @user and @group (HOOK_FIELD_MAX + 1 bytes each; "" when not set).
 * Returns 0, or -1 with @e set for text libvirt would not read either.
 */
int qconf_parse(const char *buf, size_t len, char *user, char *group,
		struct hook_err *e);

/*
 * The uid and gid of QEMU processes, as qemu.conf at @path sets them or
 * HOOK_QEMU_USER and HOOK_QEMU_GROUP when it does not (or is missing).
 * Returns 0 or -1 with @e set.
 */
int qconf_owner(const char *path, uid_t *uid, gid_t *gid,
		struct hook_err *e);

#endif
