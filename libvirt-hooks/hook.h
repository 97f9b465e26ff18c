/* SPDX-License-Identifier: MIT */
/*
 * The libvirt side of sivshm: the QEMU hook (sivshm-hook.c, installed as
 * /etc/libvirt/hooks/qemu.d/50-sivshm) and the domain XML generator
 * (sivshm-virt-xml.c).  Every number and name docs/libvirt.md states is
 * defined here, once.
 */
#ifndef SIVSHM_LIBVIRT_HOOK_H
#define SIVSHM_LIBVIRT_HOOK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/un.h>

#include "sivshm.h"	/* SIVSHM_MAX_REDUCERS, SIVSHM_MAX_REGION, ... */

/* The project's <metadata> element: <sivshm:device xmlns:sivshm=HOOK_NS>. */
#define HOOK_NS			"https://sivshm-kvm.example/xmlns/sivshm/1"
#define HOOK_NS_PREFIX		"sivshm"
#define HOOK_ELEMENT		"device"
/* libvirt's <qemu:commandline> namespace. */
#define HOOK_QEMU_NS		"http://libvirt.org/schemas/domain/qemu/1.0"

/* Bounds on what stdin may carry. */
#define HOOK_XML_MAX		(4 << 20)	/* bytes of domain XML */
#define HOOK_NAME_MAX		255	/* a domain name */
#define HOOK_FIELD_MAX		255	/* the text of a metadata element */
/*
 * A service name: [A-Za-z0-9_-], so that the memfd label
 * "sivshm-<service>-<id>" fits region.c's 64 bytes.
 */
#define HOOK_SERVICE_MAX	48
/* A socket path: what fits sun_path with its NUL (107 on Linux). */
#define HOOK_SOCKET_MAX		(sizeof(((struct sockaddr_un *)0)->sun_path) - 1)
#define HOOK_PATH_MAX		255	/* the slot directory */
#define HOOK_DEVARG_MAX		4096	/* a -device sivshm,... string, creds included */
#define HOOK_UUID_LEN		36

/* Files the hook reads and writes, and their bounds. */
#define HOOK_QEMU_CONF		"/etc/libvirt/qemu.conf"
#define HOOK_CONF_MAX		(1 << 20)	/* bytes of qemu.conf */
/* libvirt's QEMU user and group when qemu.conf names none (Debian's build). */
#define HOOK_QEMU_USER		"libvirt-qemu"
#define HOOK_QEMU_GROUP		"libvirt-qemu"
#define HOOK_STATE_DIR		"/run/sivshm-hook"
#define HOOK_LEASE_MAX		4096	/* bytes of one lease file */
#define HOOK_LOCK_WAIT_MS	5000	/* the longest wait for the state lock */
#define HOOK_DIR_MODE		0770	/* the socket directory */
/* Tests point the hook elsewhere; libvirt runs hooks with a trimmed env. */
#define HOOK_ENV_QEMU_CONF	"SIVSHM_HOOK_QEMU_CONF"
#define HOOK_ENV_STATE_DIR	"SIVSHM_HOOK_STATE_DIR"

/* The generator's defaults. */
#define GEN_EMULATOR		"/usr/bin/qemu-system-x86_64-sivshm"
#define GEN_SOCKET_DIR		"/run/sivshm"
#define GEN_MEMORY_MIB		256	/* guest memory */
#define GEN_MEMORY_MAX_MIB	(1 << 20)
#define GEN_VCPUS_MAX		64
#define GEN_APPEND_MAX		1024	/* a kernel command line */
#define GEN_PCI_SLOT		0x10	/* bus=pci.0,addr=0x10: a slot libvirt leaves free */

#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))

/* One refusal, reported as one line on stderr. */
#define HOOK_MSG_MAX		320
struct hook_err {
	char msg[HOOK_MSG_MAX];
};

/* Format the reason into @e; returns -1. */
int hook_fail(struct hook_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Print "@prog: reason" on one line, control characters escaped. */
void hook_print(const char *prog, const struct hook_err *e);

enum hook_role {
	HOOK_MAPPER,
	HOOK_REDUCER,
};

/* The metadata, checked: each field within its bounds. */
struct hook_meta {
	enum hook_role role;
	char service[HOOK_SERVICE_MAX + 1];
	uint32_t vm_id;
	char socket[HOOK_SOCKET_MAX + 1];
	uint64_t size;
	uint32_t reducers;
	int unlink;			/* 1: memfds (the default), 0: files */
	char dir[HOOK_PATH_MAX + 1];	/* "" when not given */
};

/* The -device sivshm,... string; has_* says what it named. */
struct hook_device {
	char shm[HOOK_SERVICE_MAX + 1];
	char socket[HOOK_SOCKET_MAX + 1];
	uint32_t vm_id;			/* the device's default is 0 */
	int has_size, has_reducers;
	uint64_t size;
	uint32_t reducers;
	int unlink;			/* the device's default is on */
	char dir[HOOK_PATH_MAX + 1];
	uint32_t vectors;		/* the device's default is 1 */
	int has_creds, has_mapper_cred;
};

/* What the hook needs of a domain carrying the metadata. */
struct hook_domain {
	char name[HOOK_NAME_MAX + 1];
	char uuid[HOOK_UUID_LEN + 1];	/* lower case */
	struct hook_meta meta;
	struct hook_device dev;
};

/*
 * value.c: the syntax of every value the hook and the generator take.
 * Each returns 0, or -1 with @why set to a static explanation.
 */
int value_u32(const char *s, uint32_t max, uint32_t *out, const char **why);
/* Bytes, or a number with one of the suffixes K, M, G, T (powers of 1024). */
int value_size(const char *s, uint64_t *out, const char **why);
/* [A-Za-z0-9_-], 1 to HOOK_SERVICE_MAX characters. */
int value_service(const char *s, const char **why);
/* An absolute path of [A-Za-z0-9._+-] components, no ".", "..", "//". */
int value_path(const char *s, size_t max, const char **why);
/* on, off (the metadata's words). */
int value_onoff(const char *s, int *out, const char **why);
/* QEMU's spellings of a bool property: on/off, yes/no, true/false, y/n. */
int value_qemu_bool(const char *s, int *out, const char **why);
/* A UUID, stored lower case in @out. */
int value_uuid(const char *s, char out[HOOK_UUID_LEN + 1], const char **why);
/* The page-cut geometry of @size and @reducers (libsivshm's own rule). */
int value_geometry(uint64_t size, uint32_t reducers, const char **why);

/*
 * meta.c: read a domain XML document.  Returns 1 for a domain carrying the
 * project's metadata (@dom filled and checked, device included), 0 for any
 * other well-formed domain, -1 with @e set for a refusal.
 */
int meta_parse(const char *buf, size_t len, struct hook_domain *dom,
	       struct hook_err *e);
/* Check @m alone: roles, ids and bounds.  0 or -1 with @e set. */
int meta_check(const struct hook_meta *m, struct hook_err *e);

/* devarg.c: the -device sivshm,... string. */
/* Whether the -device value @arg names the sivshm driver. */
int devarg_is_sivshm(const char *arg);
/* Parse and check @arg as the device would (creds, mapper-cred included). */
int devarg_parse(const char *arg, struct hook_device *d, struct hook_err *e);
/* The device and the metadata say the same. */
int devarg_agree(const struct hook_meta *m, const struct hook_device *d,
		 struct hook_err *e);
/* The device property text for @m (the generator's), into @buf. */
int devarg_format(const struct hook_meta *m, uint32_t vectors, char *buf,
		  size_t len);

#endif
