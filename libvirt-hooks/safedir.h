/* SPDX-License-Identifier: MIT */
/* Directories and the files in them, never through a symlink. */
#ifndef SIVSHM_LIBVIRT_SAFEDIR_H
#define SIVSHM_LIBVIRT_SAFEDIR_H

#include <dirent.h>
#include <sys/stat.h>

#include "hook.h"

/*
 * Open directory @path (absolute) with no symlink in any component.
 * Returns the fd, or -errno: -ENOTDIR for a symlink or a non-directory.
 */
int sdir_open(const char *path);

/*
 * A directory stream on directory @fd (which stays open and is not moved):
 * 0 with *@d to closedir(), or -errno.
 */
int sdir_stream(int fd, DIR **d);

/*
 * The same as sdir_open() for the directory holding @path's last
 * component, *@base.
 */
int sdir_open_parent(const char *path, const char **base);

/*
 * Make directory @path (its parent must exist) owned by @uid:@gid with
 * @mode.  An existing one is changed only if it is empty; one that already
 * is so is left alone.  Returns 0 or -1 with @e set.
 */
int sdir_ensure(const char *path, uid_t uid, gid_t gid, mode_t mode,
		struct hook_err *e);

/*
 * Whether a SOCK_SEQPACKET socket listens at @base in directory @dirfd:
 * 0, or -errno (-ENOENT: no file, -ENOTSOCK: not a socket,
 * -ECONNREFUSED: nobody listens).
 */
int sdir_check_listening(int dirfd, const char *base);

/*
 * Remove @base from directory @dirfd if it is of @type (S_IFSOCK, S_IFREG).
 * Returns 0, -ENOENT, -EEXIST for another type, or -errno.
 */
int sdir_remove(int dirfd, const char *base, mode_t type);

#endif
