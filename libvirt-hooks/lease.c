// SPDX-License-Identifier: MIT
/*
 * The hook's state: one lease file per (service, vm id) that a running
 * domain holds, from its prepare to its release, and one slot record per
 * persistent service, in a root-only directory.  Every change is made under
 * an flock() of that directory's lock file, so hooks that libvirt runs at
 * the same time for different domains see each other's leases.
 *
 *	<state>/lock		the lock
 *	<state>/<service>.<id>	a lease: uuid=, name= and the mapper's
 *				socket=, size=, reducers=, vectors=
 *	<state>/<service>.slots	dir= and reducers= of unlink=off slot files
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lease.h"
#include "safedir.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int take_lock(struct lease_dir *ld, struct hook_err *e)
{
	int64_t deadline = now_ms() + HOOK_LOCK_WAIT_MS;
	const struct timespec tick = { 0, 10 * 1000 * 1000 };

	ld->lock = openat(ld->fd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW |
			  O_CLOEXEC, 0600);
	if (ld->lock < 0)
		return hook_fail(e, "cannot open %s/lock: %s", ld->path,
				 strerror(errno));
	while (flock(ld->lock, LOCK_EX | LOCK_NB)) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return hook_fail(e, "cannot lock %s/lock: %s", ld->path,
					 strerror(errno));
		if (now_ms() > deadline)
			return hook_fail(e, "%s/lock is held for over %d ms",
					 ld->path, HOOK_LOCK_WAIT_MS);
		nanosleep(&tick, NULL);
	}
	return 0;
}

/* Open the state directory, made root-only if it is missing. */
static int open_state(struct lease_dir *ld, int create, struct hook_err *e)
{
	struct stat st;

	ld->fd = sdir_open(ld->path);
	if (ld->fd == -ENOENT && !create)
		return 1;
	if (ld->fd == -ENOENT) {
		if (sdir_ensure(ld->path, geteuid(), getegid(), 0700, e))
			return -1;
		ld->fd = sdir_open(ld->path);
	}
	if (ld->fd < 0)
		return hook_fail(e, "cannot open the state directory %s: %s",
				 ld->path, ld->fd == -ENOTDIR ?
				 "a symlink or not a directory" :
				 strerror(-ld->fd));
	if (fstat(ld->fd, &st))
		return hook_fail(e, "cannot stat %s: %s", ld->path,
				 strerror(errno));
	if (st.st_uid != geteuid() || (st.st_mode & 077))
		return hook_fail(e, "the state directory %s must be owned by uid %u with mode 0700",
				 ld->path, geteuid());
	return 0;
}

int lease_open(struct lease_dir *ld, const char *path, int create,
	       struct hook_err *e)
{
	const char *why;
	int ret;

	ld->fd = -1;
	ld->lock = -1;
	if (value_path(path, HOOK_PATH_MAX, &why))
		return hook_fail(e, "state directory %s: %s", path, why);
	strcpy(ld->path, path);
	ret = open_state(ld, create, e);
	if (!ret)
		ret = take_lock(ld, e);
	if (ret)
		lease_close(ld);
	return ret;
}

void lease_close(struct lease_dir *ld)
{
	if (ld->lock >= 0)
		close(ld->lock);	/* drops the flock */
	if (ld->fd >= 0)
		close(ld->fd);
	ld->lock = -1;
	ld->fd = -1;
}

static void file_name(char *buf, size_t len, const char *service, int id)
{
	if (id < 0)
		snprintf(buf, len, "%s.slots", service);
	else
		snprintf(buf, len, "%s.%d", service, id);
}

/* One "key=value" line into @l; unknown keys are an error. */
static int parse_line(char *line, struct lease *l)
{
	char *v = strchr(line, '=');
	const char *why;

	if (!v)
		return -1;
	*v++ = '\0';
	if (!strcmp(line, "uuid"))
		return value_uuid(v, l->uuid, &why);
	if (!strcmp(line, "name")) {
		if (strlen(v) > HOOK_NAME_MAX)
			return -1;
		strcpy(l->name, v);
		return 0;
	}
	if (!strcmp(line, "socket") || !strcmp(line, "dir")) {
		char *dst = line[0] == 's' ? l->socket : l->dir;

		if (value_path(v, line[0] == 's' ? HOOK_SOCKET_MAX :
			       HOOK_PATH_MAX, &why))
			return -1;
		strcpy(dst, v);
		return 0;
	}
	if (!strcmp(line, "size"))
		return value_size(v, &l->size, &why);
	if (!strcmp(line, "reducers"))
		return value_u32(v, SIVSHM_MAX_REDUCERS, &l->reducers, &why);
	if (!strcmp(line, "vectors"))
		return value_u32(v, SIVSHM_MAX_VECTORS, &l->vectors, &why);
	return -1;
}

static int read_file(const struct lease_dir *ld, const char *name,
		     struct lease *l, struct hook_err *e)
{
	char buf[HOOK_LEASE_MAX + 1];
	struct stat st;
	ssize_t n;
	char *line, *save;
	int fd;

	memset(l, 0, sizeof(*l));
	fd = openat(ld->fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0)
		return hook_fail(e, "cannot open %s/%s: %s", ld->path, name,
				 strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return hook_fail(e, "%s/%s is not a regular file", ld->path, name);
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0 || n > HOOK_LEASE_MAX || memchr(buf, '\0', n))
		return hook_fail(e, "%s/%s is corrupt: remove it", ld->path, name);
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (parse_line(line, l))
			return hook_fail(e, "%s/%s is corrupt: remove it",
					 ld->path, name);
	}
	return 1;
}

static int write_file(const struct lease_dir *ld, const char *name,
		      const struct lease *l, struct hook_err *e)
{
	char buf[HOOK_LEASE_MAX + 1], tmp[NAME_MAX + 1];
	int n, fd, err = 0;

	n = 0;
	if (l->uuid[0])
		n += snprintf(buf + n, sizeof(buf) - n, "uuid=%s\n", l->uuid);
	if (l->name[0])
		n += snprintf(buf + n, sizeof(buf) - n, "name=%s\n", l->name);
	if (l->socket[0])
		n += snprintf(buf + n, sizeof(buf) - n, "socket=%s\n", l->socket);
	if (l->dir[0])
		n += snprintf(buf + n, sizeof(buf) - n, "dir=%s\n", l->dir);
	if (l->size)
		n += snprintf(buf + n, sizeof(buf) - n, "size=%" PRIu64 "\n",
			      l->size);
	if (l->reducers)
		n += snprintf(buf + n, sizeof(buf) - n, "reducers=%u\n",
			      l->reducers);
	if (l->vectors)
		n += snprintf(buf + n, sizeof(buf) - n, "vectors=%u\n",
			      l->vectors);
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	fd = openat(ld->fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	if (fd < 0)
		return hook_fail(e, "cannot create %s/%s: %s", ld->path, tmp,
				 strerror(errno));
	errno = 0;
	if (write(fd, buf, n) != n)
		err = errno ? errno : EIO;
	if (close(fd) && !err)
		err = errno;
	if (!err && renameat(ld->fd, tmp, ld->fd, name))
		err = errno;
	if (err) {
		unlinkat(ld->fd, tmp, 0);
		return hook_fail(e, "cannot write %s/%s: %s", ld->path, name,
				 strerror(err));
	}
	return 0;
}

int lease_read(const struct lease_dir *ld, const char *service, int id,
	       struct lease *l, struct hook_err *e)
{
	char name[NAME_MAX + 1];
	int ret;

	file_name(name, sizeof(name), service, id);
	ret = read_file(ld, name, l, e);
	if (ret > 0 && id >= 0 && !l->uuid[0])
		return hook_fail(e, "%s/%s is corrupt: remove it", ld->path, name);
	return ret;
}

int lease_write(const struct lease_dir *ld, const char *service, int id,
		const struct lease *l, struct hook_err *e)
{
	char name[NAME_MAX + 1];

	file_name(name, sizeof(name), service, id);
	return write_file(ld, name, l, e);
}

int lease_drop(const struct lease_dir *ld, const char *service, int id)
{
	char name[NAME_MAX + 1];

	file_name(name, sizeof(name), service, id);
	if (unlinkat(ld->fd, name, 0) && errno != ENOENT)
		return -errno;
	return 0;
}

int lease_count(const struct lease_dir *ld, const char *service)
{
	size_t len = strlen(service);
	struct dirent *de;
	int err, count = 0;
	DIR *d;

	err = sdir_stream(ld->fd, &d);
	if (err)
		return err;
	while ((de = readdir(d))) {
		const char *id = de->d_name + len + 1;

		if (!strncmp(de->d_name, service, len) &&
		    de->d_name[len] == '.' && *id &&
		    strspn(id, "0123456789") == strlen(id))
			count++;
	}
	closedir(d);
	return count;
}
