// SPDX-License-Identifier: MIT
/*
 * sivshm-hook: libvirt's QEMU hook for sivshm domains, installed as
 * /etc/libvirt/hooks/qemu.d/50-sivshm.  libvirt runs it as
 *
 *	50-sivshm DOMAIN OPERATION SUB-OPERATION EXTRA  < domain XML
 *
 * and a non-zero exit at "prepare begin" stops the start, with our one line
 * of stderr in the error virsh prints.  It acts only on domains whose
 * <metadata> carries <sivshm:device>, at "prepare begin" and "release end";
 * for anything else it exits 0 without a word.  It never calls libvirt.
 * docs/libvirt.md says what it checks and why.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hook.h"
#include "lease.h"
#include "qemuconf.h"
#include "region.h"
#include "safedir.h"

#define PROG	"sivshm-hook"

/* The socket's directory and its file name in it. */
struct sock_path {
	char dir[HOOK_SOCKET_MAX + 1];
	const char *base;
};

static void split_socket(const char *socket, struct sock_path *sp)
{
	size_t n = strrchr(socket, '/') - socket;

	memcpy(sp->dir, socket, n);
	sp->dir[n] = '\0';
	sp->base = socket + n + 1;
}

static const char *env_or(const char *name, const char *def)
{
	const char *v = getenv(name);

	return v && *v ? v : def;
}

/* All of stdin, up to HOOK_XML_MAX + 1 bytes (meta_parse refuses more). */
static int read_stdin(char **buf, size_t *len, struct hook_err *e)
{
	size_t cap = HOOK_XML_MAX + 1;
	ssize_t n;

	*len = 0;
	*buf = malloc(cap);
	if (!*buf)
		return hook_fail(e, "out of memory");
	while (*len < cap) {
		n = read(STDIN_FILENO, *buf + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(*buf);
			return hook_fail(e, "cannot read the domain XML: %s",
					 strerror(errno));
		}
		if (!n)
			break;
		*len += n;
	}
	return 0;
}

/*
 * Check that a mapper listens on @sp: 0 if one does, else -errno from
 * opening its directory safely or from sdir_check_listening().
 */
static int mapper_check_listening(const struct sock_path *sp)
{
	int fd = sdir_open(sp->dir);
	int err;

	if (fd < 0)
		return fd;
	err = sdir_check_listening(fd, sp->base);
	close(fd);
	return err;
}

/* With unlink=off in the socket's directory, remember the slot files. */
static int record_slots(const struct lease_dir *ld, const struct hook_meta *m,
			const struct sock_path *sp, struct hook_err *e)
{
	struct lease rec;
	int ret;

	if (m->unlink || strcmp(m->dir, sp->dir))
		return 0;
	ret = lease_read(ld, m->service, LEASE_SLOTS, &rec, e);
	if (ret < 0)
		return -1;
	if (!ret || rec.reducers < m->reducers)
		rec.reducers = m->reducers;
	strcpy(rec.dir, m->dir);
	return lease_write(ld, m->service, LEASE_SLOTS, &rec, e);
}

static void fill_lease(const struct hook_domain *dom, struct lease *l)
{
	memset(l, 0, sizeof(*l));
	strcpy(l->uuid, dom->uuid);
	strcpy(l->name, dom->name);
	if (dom->meta.role != HOOK_MAPPER)
		return;
	strcpy(l->socket, dom->meta.socket);
	l->size = dom->meta.size;
	l->reducers = dom->meta.reducers;
	l->vectors = dom->dev.vectors;
}

/* The id is free, or held by this very domain (a start after a crash). */
static int id_free(const struct lease_dir *ld, const struct hook_domain *dom,
		   struct hook_err *e)
{
	const struct hook_meta *m = &dom->meta;
	struct lease held;
	int ret;

	ret = lease_read(ld, m->service, m->vm_id, &held, e);
	if (ret < 0)
		return -1;
	if (ret && strcmp(held.uuid, dom->uuid))
		return hook_fail(e, "vm-id %u of service %s is taken by running domain %s (lease %s/%s.%u)",
				 m->vm_id, m->service, held.name, ld->path,
				 m->service, m->vm_id);
	return 0;
}

static int mapper_prepare(const struct lease_dir *ld,
			  const struct hook_domain *dom, uid_t uid, gid_t gid,
			  struct hook_err *e)
{
	const struct hook_meta *m = &dom->meta;
	struct sock_path sp;
	struct lease l;

	split_socket(m->socket, &sp);
	if (id_free(ld, dom, e) ||
	    sdir_ensure(sp.dir, uid, gid, HOOK_DIR_MODE, e))
		return -1;
	if (mapper_check_listening(&sp) == 0)
		return hook_fail(e, "something already listens on %s: another mapper of service %s?",
				 m->socket, m->service);
	if (record_slots(ld, m, &sp, e))
		return -1;
	fill_lease(dom, &l);
	return lease_write(ld, m->service, 0, &l, e);
}

/* The reducer against its mapper's lease, when libvirt runs the mapper. */
static int match_mapper(const struct lease_dir *ld,
			const struct hook_domain *dom, struct hook_err *e)
{
	const struct hook_meta *m = &dom->meta;
	struct lease mp;
	int ret;

	ret = lease_read(ld, m->service, 0, &mp, e);
	if (ret <= 0)
		return ret;
	if (strcmp(mp.socket, m->socket))
		return hook_fail(e, "the mapper of service %s (domain %s) listens on %s, not %s",
				 m->service, mp.name, mp.socket, m->socket);
	if (m->vm_id > mp.reducers)
		return hook_fail(e, "vm-id %u is above the %u reducers of the mapper of service %s (domain %s)",
				 m->vm_id, mp.reducers, m->service, mp.name);
	if (mp.size != m->size || mp.reducers != m->reducers)
		return hook_fail(e, "size %llu and reducers %u differ from the mapper's %llu and %u (domain %s)",
				 (unsigned long long)m->size, m->reducers,
				 (unsigned long long)mp.size, mp.reducers,
				 mp.name);
	if (mp.vectors != dom->dev.vectors)
		return hook_fail(e, "vectors %u differ from the mapper's %u (domain %s)",
				 dom->dev.vectors, mp.vectors, mp.name);
	return 0;
}

static int reducer_prepare(const struct lease_dir *ld,
			   const struct hook_domain *dom, uid_t uid, gid_t gid,
			   struct hook_err *e)
{
	const struct hook_meta *m = &dom->meta;
	struct sock_path sp;
	struct lease l;
	int err;

	split_socket(m->socket, &sp);
	err = mapper_check_listening(&sp);
	if (err)
		return hook_fail(e, "the mapper of service %s is not listening on %s (%s): start it first",
				 m->service, m->socket,
				 err == -ENOTDIR ? "a symlink or not a directory" :
				 strerror(-err));
	if (match_mapper(ld, dom, e) || id_free(ld, dom, e) ||
	    sdir_ensure(sp.dir, uid, gid, HOOK_DIR_MODE, e))
		return -1;
	fill_lease(dom, &l);
	return lease_write(ld, m->service, m->vm_id, &l, e);
}

static int prepare(const struct hook_domain *dom, struct hook_err *e)
{
	const char *conf = env_or(HOOK_ENV_QEMU_CONF, HOOK_QEMU_CONF);
	struct lease_dir ld;
	uid_t uid;
	gid_t gid;
	int err;

	if (qconf_owner(conf, &uid, &gid, e) ||
	    lease_open(&ld, env_or(HOOK_ENV_STATE_DIR, HOOK_STATE_DIR), 1, e))
		return -1;
	if (dom->meta.role == HOOK_MAPPER)
		err = mapper_prepare(&ld, dom, uid, gid, e);
	else
		err = reducer_prepare(&ld, dom, uid, gid, e);
	lease_close(&ld);
	return err;
}

/* Remove the unlink=off slot files a slot record names. */
static int remove_slots(const struct lease_dir *ld, const char *service,
			struct hook_err *e)
{
	char name[HOOK_SERVICE_MAX + 32];
	struct lease rec;
	int ret, fd, failed = 0;

	ret = lease_read(ld, service, LEASE_SLOTS, &rec, e);
	if (ret <= 0)
		return ret;
	fd = sdir_open(rec.dir);
	if (fd < 0 && fd != -ENOENT)
		return hook_fail(e, "cannot open %s: %s", rec.dir, strerror(-fd));
	for (uint32_t j = 0; fd >= 0 && j <= rec.reducers; j++) {
		ret = sivshm_region_slot_name(name, sizeof(name), service, j);
		if (!ret)
			ret = sdir_remove(fd, name, S_IFREG);
		if (ret && ret != -ENOENT && !failed++)
			hook_fail(e, "cannot remove %s/%s: %s", rec.dir, name,
				  ret == -EEXIST ? "not a regular file" :
				  strerror(-ret));
	}
	if (fd >= 0)
		close(fd);
	lease_drop(ld, service, LEASE_SLOTS);
	return failed ? -1 : 0;
}

static int remove_socket(const struct hook_meta *m, struct hook_err *e)
{
	struct sock_path sp;
	int fd, err;

	split_socket(m->socket, &sp);
	fd = sdir_open(sp.dir);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return hook_fail(e, "cannot open %s: %s", sp.dir, strerror(-fd));
	err = sdir_remove(fd, sp.base, S_IFSOCK);
	close(fd);
	if (err && err != -ENOENT)
		return hook_fail(e, "cannot remove %s: %s", m->socket,
				 err == -EEXIST ? "not a socket" : strerror(-err));
	return 0;
}

static int release(const struct hook_domain *dom, struct hook_err *e)
{
	const struct hook_meta *m = &dom->meta;
	struct hook_err later;
	struct lease_dir ld;
	struct lease held;
	int ret, err = 0;

	ret = lease_open(&ld, env_or(HOOK_ENV_STATE_DIR, HOOK_STATE_DIR), 0, e);
	if (ret)
		return ret > 0 ? 0 : -1;	/* no state: nothing was held */
	ret = lease_read(&ld, m->service, m->vm_id, &held, e);
	if (ret <= 0 || strcmp(held.uuid, dom->uuid)) {
		/* Never held (refused at prepare): nothing here is ours. */
		lease_close(&ld);
		return ret < 0 ? -1 : 0;
	}
	lease_drop(&ld, m->service, m->vm_id);
	if (m->role == HOOK_MAPPER)
		err = remove_socket(m, e);
	/* The last domain of the service is gone: so are its slot files. */
	if (lease_count(&ld, m->service) == 0 &&
	    remove_slots(&ld, m->service, err ? &later : e))
		err = -1;
	lease_close(&ld);
	return err;
}

static void print_usage(FILE *f)
{
	fprintf(f, "usage: %s DOMAIN OPERATION SUB-OPERATION EXTRA < domain.xml\n"
		"libvirt's QEMU hook for sivshm domains (man sivshm-hook)\n",
		PROG);
}

int main(int argc, char **argv)
{
	int (*op)(const struct hook_domain *dom, struct hook_err *e);
	struct hook_domain *dom;
	struct hook_err e = { "" };
	size_t len;
	char *buf;
	int ret;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		print_usage(stdout);
		return 0;
	}
	if (argc != 5) {
		print_usage(stderr);
		return 1;
	}
	if (!strcmp(argv[2], "prepare") && !strcmp(argv[3], "begin"))
		op = prepare;
	else if (!strcmp(argv[2], "release") && !strcmp(argv[3], "end"))
		op = release;
	else
		return 0;
	dom = malloc(sizeof(*dom));
	if (!dom)
		hook_fail(&e, "out of memory");
	if (!dom || read_stdin(&buf, &len, &e)) {
		free(dom);
		hook_print(PROG, &e);
		return 1;
	}
	ret = meta_parse(buf, len, dom, &e);
	free(buf);
	if (ret > 0 && strcmp(argv[1], dom->name))
		ret = hook_fail(&e, "libvirt named domain %s, its XML %s", argv[1],
				dom->name);
	if (ret > 0)
		ret = op(dom, &e);
	free(dom);
	if (ret < 0) {
		hook_print(PROG, &e);
		return 1;
	}
	return 0;
}
