// SPDX-License-Identifier: MIT
/*
 * Directories named by untrusted text, handled as root without following a
 * symlink anywhere: every component is opened with O_NOFOLLOW from "/", the
 * last one is made with mkdirat() and changed through its own fd (fchown,
 * fchmod), and files are removed with unlinkat() from the directory's fd,
 * so nothing outside that directory is ever touched.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "safedir.h"

#define DIR_FLAGS	(O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* Open the first @len bytes of absolute @path, component by component. */
static int walk(const char *path, size_t len)
{
	char comp[NAME_MAX + 1];
	const char *p = path, *end = path + len;
	int fd, next;

	fd = open("/", DIR_FLAGS);
	if (fd < 0)
		return -errno;
	while (p < end) {
		size_t len;

		p++;		/* the '/' */
		len = strcspn(p, "/");
		if (len > (size_t)(end - p))
			len = end - p;
		if (!len || len > NAME_MAX) {
			close(fd);
			return -ENAMETOOLONG;
		}
		memcpy(comp, p, len);
		comp[len] = '\0';
		next = openat(fd, comp, DIR_FLAGS);
		close(fd);
		if (next < 0)
			return errno == ELOOP ? -ENOTDIR : -errno;
		fd = next;
		p += len;
	}
	return fd;
}

int sdir_open(const char *path)
{
	if (path[0] != '/')
		return -EINVAL;
	return walk(path, strlen(path));
}

int sdir_open_parent(const char *path, const char **base)
{
	const char *slash = strrchr(path, '/');

	if (path[0] != '/' || !slash[1] || strlen(slash + 1) > NAME_MAX)
		return -EINVAL;
	*base = slash + 1;
	return walk(path, slash - path);
}

int sdir_stream(int fd, DIR **d)
{
	int dfd = openat(fd, ".", DIR_FLAGS);

	if (dfd < 0)
		return -errno;
	*d = fdopendir(dfd);
	if (!*d) {
		close(dfd);
		return -ENOMEM;
	}
	return 0;
}

/* Whether directory @fd has no entry but . and .. (-errno on error). */
static int is_empty(int fd)
{
	struct dirent *de;
	int empty = 1, err;
	DIR *d;

	err = sdir_stream(fd, &d);
	if (err)
		return err;
	while (empty && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = 0;
	}
	closedir(d);
	return empty;
}

/* Take over directory @fd (@created by us, or found as @st). */
static int adopt(int fd, const struct stat *st, int created,
		 const char *path, uid_t uid, gid_t gid, mode_t mode,
		 struct hook_err *e)
{
	int empty;

	if (!S_ISDIR(st->st_mode))
		return hook_fail(e, "%s is not a directory", path);
	if (st->st_uid == uid && st->st_gid == gid &&
	    (st->st_mode & 07777) == mode)
		return 0;
	if (st->st_mode & S_ISVTX)
		return hook_fail(e, "%s is a sticky, shared directory: give the socket a directory of its own",
				 path);
	empty = created ? 1 : is_empty(fd);
	if (empty < 0)
		return hook_fail(e, "cannot read %s: %s", path, strerror(-empty));
	if (!empty)
		return hook_fail(e, "%s is %u:%u mode %04o, not %u:%u mode %04o, and not empty: the hook takes over only an empty directory",
				 path, st->st_uid, st->st_gid,
				 st->st_mode & 07777, uid, gid, mode);
	if (fchown(fd, uid, gid))
		return hook_fail(e, "cannot chown %s to %u:%u: %s", path, uid,
				 gid, strerror(errno));
	if (fchmod(fd, mode))
		return hook_fail(e, "cannot chmod %s: %s", path, strerror(errno));
	return 0;
}

int sdir_ensure(const char *path, uid_t uid, gid_t gid, mode_t mode,
		struct hook_err *e)
{
	const char *base;
	struct stat st;
	int parent, fd, err, created = 0;

	parent = sdir_open_parent(path, &base);
	if (parent < 0)
		return hook_fail(e, "cannot open the parent of %s: %s", path,
				 parent == -ENOTDIR ?
				 "a component is a symlink or not a directory" :
				 strerror(-parent));
	fd = openat(parent, base, DIR_FLAGS);
	if (fd < 0 && errno == ENOENT) {
		created = !mkdirat(parent, base, 0700);
		if (!created && errno != EEXIST) {
			err = errno;
			close(parent);
			return hook_fail(e, "cannot create %s: %s", path,
					 strerror(err));
		}
		fd = openat(parent, base, DIR_FLAGS);
	}
	err = errno;
	close(parent);
	if (fd < 0)
		return hook_fail(e, "cannot open %s: %s", path,
				 err == ELOOP || err == ENOTDIR ?
				 "a symlink or not a directory" : strerror(err));
	if (fstat(fd, &st)) {
		err = errno;
		close(fd);
		return hook_fail(e, "cannot stat %s: %s", path, strerror(err));
	}
	err = adopt(fd, &st, created, path, uid, gid, mode, e);
	close(fd);
	return err;
}

int sdir_check_listening(int dirfd, const char *base)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int s, cwd, err = 0;

	if (strlen(base) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (!S_ISSOCK(st.st_mode))
		return -ENOTSOCK;
	strcpy(sa.sun_path, base);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	/* Connect relative to the directory we hold, not through its path. */
	cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cwd < 0 || fchdir(dirfd)) {
		err = -errno;
	} else if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) &&
		   errno != EAGAIN) {
		/* EAGAIN: a listener with a full backlog is listening. */
		err = -errno;
	}
	if (cwd >= 0) {
		if (fchdir(cwd) && !err)
			err = -errno;
		close(cwd);
	}
	close(s);
	return err;
}

int sdir_remove(int dirfd, const char *base, mode_t type)
{
	struct stat st;

	if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if ((st.st_mode & S_IFMT) != type)
		return -EEXIST;
	if (unlinkat(dirfd, base, 0))
		return -errno;
	return 0;
}
