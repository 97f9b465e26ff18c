// SPDX-License-Identifier: MIT
/*
 * Descriptor utilities of the handshake: what a slot fd and an eventfd
 * received from a peer must be, and closing a set of fds.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "fds.h"

void proto_close_fds(int *fds, unsigned int nfds)
{
	for (unsigned int i = 0; i < nfds; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

int proto_slot_check(int fd, int like, uint64_t size, const char **why)
{
	struct statfs fs, like_fs;
	struct stat st;
	int seals;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != size) {
		*why = "the slot is not a file of the slice size";
		return -EINVAL;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (seals != PROTO_SLOT_SEALS) {
		*why = "the slot is not sealed as the mapper seals its slots";
		return -EPERM;
	}
	if (like < 0)
		return 0;
	if (fstatfs(fd, &fs) < 0 || fstatfs(like, &like_fs) < 0 ||
	    fs.f_type != like_fs.f_type || fs.f_bsize != like_fs.f_bsize) {
		*why = "the slot's pages are not of the mapper's kind";
		return -EINVAL;
	}
	return 0;
}

int proto_fd_is_eventfd(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return 0;
	link[n] = '\0';
	return strcmp(link, "anon_inode:[eventfd]") == 0;
}
