// SPDX-License-Identifier: MIT
/*
 * The -device sivshm,... string of a domain's <qemu:commandline>, in QEMU's
 * legacy key=value form, read as the device reads it (properties in
 * qemu-sivshm/overlay/docs/specs/sivshm.rst), and written by the generator.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "hook.h"
#include "cred.h"

#define DEVARG_MAX_ITEMS	64

int devarg_is_sivshm(const char *arg)
{
	const char *p = arg;

	if (!strncmp(p, "sivshm", 6) && (p[6] == ',' || !p[6]))
		return 1;
	while (p) {
		if (!strncmp(p, "driver=sivshm", 13) && (p[13] == ',' || !p[13]))
			return 1;
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return 0;
}

/* Cut @buf at each ',' into @items; returns their number or -1. */
static int split(char *buf, char **items, struct hook_err *e)
{
	int n = 0;
	char *p = buf;

	for (;;) {
		char *comma = strchr(p, ',');

		if (n == DEVARG_MAX_ITEMS)
			return hook_fail(e, "-device sivshm: more than %d properties",
					 DEVARG_MAX_ITEMS);
		items[n++] = p;
		if (!comma)
			return n;
		*comma = '\0';
		p = comma + 1;
		if (*p == ',')
			return hook_fail(e, "-device sivshm: ',,' (an escaped comma) is not supported");
	}
}

static int copy_path(char *dst, const char *key, const char *val, size_t max,
		     struct hook_err *e)
{
	const char *why;

	if (value_path(val, max, &why))
		return hook_fail(e, "-device sivshm: %s=%s: %s", key, val, why);
	strcpy(dst, val);
	return 0;
}

static int u32_prop(const char *key, const char *val, uint32_t min,
		    uint32_t max, uint32_t *out, struct hook_err *e)
{
	const char *why;

	if (value_u32(val, max, out, &why))
		return hook_fail(e, "-device sivshm: %s=%s: %s (%u to %u)",
				 key, val, why, min, max);
	if (*out < min)
		return hook_fail(e, "-device sivshm: %s=%s: below %u", key, val,
				 min);
	return 0;
}

static int bool_prop(const char *key, const char *val, int *out,
		     struct hook_err *e)
{
	const char *why;

	if (value_qemu_bool(val, out, &why))
		return hook_fail(e, "-device sivshm: %s=%s: %s", key, val, why);
	return 0;
}

/* One key=value item into @d; creds and mapper-cred are kept for later. */
static int item(const char *key, const char *val, struct hook_device *d,
		const char **creds, const char **mapper_cred,
		struct hook_err *e)
{
	const char *why;
	uint32_t u;
	int b;

	if (!strcmp(key, "driver")) {
		if (strcmp(val, "sivshm"))
			return hook_fail(e, "-device sivshm: driver=%s", val);
	} else if (!strcmp(key, "shm")) {
		if (value_service(val, &why))
			return hook_fail(e, "-device sivshm: shm=%s: %s", val, why);
		strcpy(d->shm, val);
	} else if (!strcmp(key, "socket")) {
		return copy_path(d->socket, key, val, HOOK_SOCKET_MAX, e);
	} else if (!strcmp(key, "dir")) {
		return copy_path(d->dir, key, val, HOOK_PATH_MAX, e);
	} else if (!strcmp(key, "vm-id")) {
		return u32_prop(key, val, 0, SIVSHM_MAX_REDUCERS, &d->vm_id, e);
	} else if (!strcmp(key, "reducers")) {
		d->has_reducers = 1;
		return u32_prop(key, val, 1, SIVSHM_MAX_REDUCERS, &d->reducers, e);
	} else if (!strcmp(key, "vectors")) {
		return u32_prop(key, val, 1, SIVSHM_MAX_VECTORS, &d->vectors, e);
	} else if (!strcmp(key, "timeout")) {
		return u32_prop(key, val, 0, UINT32_MAX, &u, e);
	} else if (!strcmp(key, "size")) {
		d->has_size = 1;
		if (value_size(val, &d->size, &why))
			return hook_fail(e, "-device sivshm: size=%s: %s", val, why);
	} else if (!strcmp(key, "unlink")) {
		return bool_prop(key, val, &d->unlink, e);
	} else if (!strcmp(key, "msix")) {
		return bool_prop(key, val, &b, e);
	} else if (!strcmp(key, "creds")) {
		d->has_creds = 1;
		*creds = val;
	} else if (!strcmp(key, "mapper-cred")) {
		d->has_mapper_cred = 1;
		*mapper_cred = val;
	}
	/* Anything else (bus, addr, id, ...) is QEMU's, not ours. */
	return 0;
}

/* The rules the device applies at realize, for the role vm-id gives. */
static int role_rules(const struct hook_device *d, const char *creds,
		      const char *mapper_cred, struct hook_err *e)
{
	struct proto_cred allow[SIVSHM_MAX_REDUCERS + 1];
	struct proto_cred want;
	const char *why;

	if (!d->shm[0] || !d->socket[0])
		return hook_fail(e, "-device sivshm: shm and socket must be set");
	if (!d->unlink && !d->dir[0])
		return hook_fail(e, "-device sivshm: unlink=off needs dir");
	if (d->vm_id == 0) {
		if (!d->has_size || !d->has_reducers)
			return hook_fail(e, "-device sivshm: the mapper (vm-id=0) needs size and reducers");
		if (mapper_cred)
			return hook_fail(e, "-device sivshm: mapper-cred is a reducer's to set");
		if (creds && proto_creds_parse(creds, d->reducers, allow, &why))
			return hook_fail(e, "-device sivshm: creds=%s: %s", creds,
					 why);
		return 0;
	}
	if (creds)
		return hook_fail(e, "-device sivshm: creds are the mapper's (vm-id=0) to set");
	if (mapper_cred && proto_cred_parse(mapper_cred, &want))
		return hook_fail(e, "-device sivshm: mapper-cred=%s is not UID:GID (each a number or *)",
				 mapper_cred);
	if (d->has_reducers && d->vm_id > d->reducers)
		return hook_fail(e, "-device sivshm: vm-id %u is above reducers=%u",
				 d->vm_id, d->reducers);
	return 0;
}

int devarg_parse(const char *arg, struct hook_device *d, struct hook_err *e)
{
	char buf[HOOK_DEVARG_MAX + 1];
	char *items[DEVARG_MAX_ITEMS];
	const char *creds = NULL, *mapper_cred = NULL;
	int n;

	memset(d, 0, sizeof(*d));
	d->unlink = 1;
	d->vectors = 1;
	if (strnlen(arg, HOOK_DEVARG_MAX + 1) > HOOK_DEVARG_MAX)
		return hook_fail(e, "-device sivshm: longer than %d bytes",
				 HOOK_DEVARG_MAX);
	strcpy(buf, arg);
	n = split(buf, items, e);
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		char *eq = strchr(items[i], '=');

		if (!eq) {
			if (i == 0 && !strcmp(items[i], "sivshm"))
				continue;
			return hook_fail(e, "-device sivshm: '%s' is not key=value",
					 items[i]);
		}
		*eq = '\0';
		for (int j = 0; j < i; j++) {
			if (!strcmp(items[j], items[i]))
				return hook_fail(e, "-device sivshm: %s is given twice",
						 items[i]);
		}
		if (item(items[i], eq + 1, d, &creds, &mapper_cred, e))
			return -1;
	}
	return role_rules(d, creds, mapper_cred, e);
}

int devarg_agree(const struct hook_meta *m, const struct hook_device *d,
		 struct hook_err *e)
{
	if (strcmp(d->shm, m->service))
		return hook_fail(e, "-device sivshm has shm=%s, the metadata service %s",
				 d->shm, m->service);
	if (strcmp(d->socket, m->socket))
		return hook_fail(e, "-device sivshm has socket=%s, the metadata %s",
				 d->socket, m->socket);
	if (d->vm_id != m->vm_id)
		return hook_fail(e, "-device sivshm has vm-id=%u, the metadata %u",
				 d->vm_id, m->vm_id);
	if (d->has_size && d->size != m->size)
		return hook_fail(e, "-device sivshm has size=%" PRIu64
				 " bytes, the metadata %" PRIu64, d->size, m->size);
	if (d->has_reducers && d->reducers != m->reducers)
		return hook_fail(e, "-device sivshm has reducers=%u, the metadata %u",
				 d->reducers, m->reducers);
	if (d->unlink != m->unlink)
		return hook_fail(e, "-device sivshm has unlink=%s, the metadata %s",
				 d->unlink ? "on" : "off", m->unlink ? "on" : "off");
	if (strcmp(d->dir, m->dir))
		return hook_fail(e, "-device sivshm has dir=%s, the metadata %s",
				 d->dir[0] ? d->dir : "(none)",
				 m->dir[0] ? m->dir : "(none)");
	return 0;
}

int devarg_format(const struct hook_meta *m, uint32_t vectors, char *buf,
		  size_t len)
{
	int n;

	n = snprintf(buf, len, "sivshm,vm-id=%u,shm=%s,socket=%s,size=%" PRIu64
		     ",reducers=%u", m->vm_id, m->service, m->socket, m->size,
		     m->reducers);
	if (n >= 0 && (size_t)n < len && vectors != 1)
		n += snprintf(buf + n, len - n, ",vectors=%u", vectors);
	if (n >= 0 && (size_t)n < len && !m->unlink)
		n += snprintf(buf + n, len - n, ",unlink=off");
	if (n >= 0 && (size_t)n < len && m->dir[0])
		n += snprintf(buf + n, len - n, ",dir=%s", m->dir);
	if (n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, ",bus=pci.0,addr=0x%x",
			      GEN_PCI_SLOT);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}
