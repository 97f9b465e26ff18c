// SPDX-License-Identifier: MIT
/*
 * sivshm-virt-xml: write the libvirt domain XML of a sivshm service, one
 * file for the mapper and one per reducer, each with the project's
 * <metadata>, the -device sivshm string in <qemu:commandline> and what a
 * domain of our minimal QEMU needs (no USB controller, no memballoon, ACPI).
 * The values are checked by the very functions the hook checks them with.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libxml/tree.h>

#include "hook.h"

#define PROG	"sivshm-virt-xml"
/* In --disk, the token each domain's own name replaces. */
#define VM_TOKEN	"@VM@"

struct job {
	struct hook_meta meta;		/* the mapper's; reducers copy it */
	uint32_t vectors;
	uint32_t memory_mib;
	uint32_t vcpus;
	const char *kernel, *initrd, *append, *disk;
	const char *emulator;
	const char *type;
	const char *out_dir;
	const char *socket_dir;
	const char *dir;
};

enum {
	OPT_NAME = 256, OPT_SIZE, OPT_REDUCERS, OPT_KERNEL, OPT_INITRD,
	OPT_APPEND, OPT_DISK, OPT_MEMORY, OPT_VCPUS, OPT_VECTORS,
	OPT_SOCKET_DIR, OPT_UNLINK, OPT_DIR, OPT_EMULATOR, OPT_TYPE,
	OPT_OUT_DIR, OPT_HELP,
};

static const struct option options[] = {
	{ "name", required_argument, NULL, OPT_NAME },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "reducers", required_argument, NULL, OPT_REDUCERS },
	{ "kernel", required_argument, NULL, OPT_KERNEL },
	{ "initrd", required_argument, NULL, OPT_INITRD },
	{ "append", required_argument, NULL, OPT_APPEND },
	{ "disk", required_argument, NULL, OPT_DISK },
	{ "memory", required_argument, NULL, OPT_MEMORY },
	{ "vcpus", required_argument, NULL, OPT_VCPUS },
	{ "vectors", required_argument, NULL, OPT_VECTORS },
	{ "socket-dir", required_argument, NULL, OPT_SOCKET_DIR },
	{ "unlink", required_argument, NULL, OPT_UNLINK },
	{ "dir", required_argument, NULL, OPT_DIR },
	{ "emulator", required_argument, NULL, OPT_EMULATOR },
	{ "type", required_argument, NULL, OPT_TYPE },
	{ "out-dir", required_argument, NULL, OPT_OUT_DIR },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static void print_usage(FILE *f)
{
	fprintf(f,
		"usage: %s --name NAME --size SIZE --reducers N\n"
		"       (--kernel PATH [--initrd PATH] [--append TEXT] | --disk PATH)\n"
		"       [--memory MIB] [--vcpus N] [--vectors N] [--socket-dir DIR]\n"
		"       [--unlink on|off] [--dir DIR] [--emulator PATH]\n"
		"       [--type kvm|qemu] [--out-dir DIR]\n"
		"Writes NAME-mapper.xml and NAME-reducer1.xml .. NAME-reducerN.xml\n"
		"(man sivshm-virt-xml).\n", PROG);
}

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", PROG);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static int path_opt(const char *opt, const char *v)
{
	const char *why;

	if (value_path(v, HOOK_PATH_MAX, &why))
		return die("--%s: %s", opt, why);
	return 0;
}

static int u32_opt(const char *opt, const char *v, uint32_t min,
		   uint32_t max, uint32_t *out)
{
	const char *why;

	if (value_u32(v, max, out, &why))
		return die("--%s: %s", opt, why);
	if (*out < min)
		return die("--%s: %s is too small", opt, v);
	return 0;
}

static int parse_opt(struct job *job, int c, const char *v)
{
	const char *why;

	switch (c) {
	case OPT_NAME:
		if (value_service(v, &why))
			return die("--name: %s", why);
		strcpy(job->meta.service, v);
		return 0;
	case OPT_SIZE:
		if (value_size(v, &job->meta.size, &why))
			return die("--size: %s", why);
		return 0;
	case OPT_REDUCERS:
		return u32_opt("reducers", v, 1, SIVSHM_MAX_REDUCERS,
			       &job->meta.reducers);
	case OPT_MEMORY:
		return u32_opt("memory", v, 1, GEN_MEMORY_MAX_MIB,
			       &job->memory_mib);
	case OPT_VCPUS:
		return u32_opt("vcpus", v, 1, GEN_VCPUS_MAX, &job->vcpus);
	case OPT_VECTORS:
		return u32_opt("vectors", v, 1, SIVSHM_MAX_VECTORS, &job->vectors);
	case OPT_UNLINK:
		if (value_onoff(v, &job->meta.unlink, &why))
			return die("--unlink: %s", why);
		return 0;
	case OPT_TYPE:
		if (strcmp(v, "kvm") && strcmp(v, "qemu"))
			return die("--type: %s is neither kvm nor qemu", v);
		job->type = v;
		return 0;
	case OPT_APPEND:
		if (strnlen(v, GEN_APPEND_MAX + 1) > GEN_APPEND_MAX)
			return die("--append: longer than %d bytes", GEN_APPEND_MAX);
		for (const char *p = v; *p; p++) {
			if ((unsigned char)*p < 0x20)
				return die("--append: a control character");
		}
		job->append = v;
		return 0;
	}
	return -1;
}

static int parse_path_opt(struct job *job, int c, const char *v)
{
	static const char *const names[] = {
		[OPT_KERNEL - OPT_NAME] = "kernel",
		[OPT_INITRD - OPT_NAME] = "initrd",
		[OPT_DISK - OPT_NAME] = "disk",
		[OPT_SOCKET_DIR - OPT_NAME] = "socket-dir",
		[OPT_DIR - OPT_NAME] = "dir",
		[OPT_EMULATOR - OPT_NAME] = "emulator",
		[OPT_OUT_DIR - OPT_NAME] = "out-dir",
	};
	const char **dst[] = {
		[OPT_KERNEL - OPT_NAME] = &job->kernel,
		[OPT_INITRD - OPT_NAME] = &job->initrd,
		[OPT_DISK - OPT_NAME] = &job->disk,
		[OPT_SOCKET_DIR - OPT_NAME] = &job->socket_dir,
		[OPT_DIR - OPT_NAME] = &job->dir,
		[OPT_EMULATOR - OPT_NAME] = &job->emulator,
		[OPT_OUT_DIR - OPT_NAME] = &job->out_dir,
	};
	int i = c - OPT_NAME;

	if (i < 0 || i >= (int)ARRAY_SIZE(dst) || !dst[i])
		return -1;
	/* The output directory may be relative: it is ours, not libvirt's. */
	if (c != OPT_OUT_DIR && c != OPT_DISK && path_opt(names[i], v))
		return 1;
	*dst[i] = v;
	return 0;
}

/* The domain name of VM @id. */
static void vm_name(const struct job *job, uint32_t id, char *buf, size_t len)
{
	if (id)
		snprintf(buf, len, "%s-reducer%u", job->meta.service, id);
	else
		snprintf(buf, len, "%s-mapper", job->meta.service);
}

/* --disk with VM_TOKEN replaced by the name of VM @id, checked. */
static int disk_path(const struct job *job, uint32_t id, char *buf,
		     size_t len)
{
	const char *tok = strstr(job->disk, VM_TOKEN), *why;
	char name[HOOK_SERVICE_MAX + 32];
	int n;

	if (!tok || strstr(tok + 1, VM_TOKEN))
		return die("--disk: VMs cannot share one writable image: put %s, once, in the path (each domain's name replaces it)",
			   VM_TOKEN);
	vm_name(job, id, name, sizeof(name));
	n = snprintf(buf, len, "%.*s%s%s", (int)(tok - job->disk), job->disk,
		     name, tok + strlen(VM_TOKEN));
	if (n < 0 || (size_t)n >= len || value_path(buf, HOOK_PATH_MAX, &why))
		return die("--disk: %s: %s", buf,
			   n < 0 || (size_t)n >= len ? "too long" : why);
	return 0;
}

/* The job's mapper metadata, checked as the hook checks it. */
static int finish(struct job *job)
{
	struct hook_err e;
	const char *why;
	int n;

	if (!job->meta.service[0] || !job->meta.size || !job->meta.reducers)
		return die("--name, --size and --reducers are required");
	if (!job->kernel == !job->disk)
		return die("give --kernel or --disk, one of them");
	if (job->disk && (job->initrd || job->append))
		return die("--initrd and --append go with --kernel");
	for (uint32_t id = 0; job->disk && id <= job->meta.reducers; id++) {
		char disk[HOOK_PATH_MAX + 1];

		if (disk_path(job, id, disk, sizeof(disk)))
			return 1;
	}
	n = snprintf(job->meta.socket, sizeof(job->meta.socket), "%s/%s.sock",
		     job->socket_dir, job->meta.service);
	if (n < 0 || (size_t)n >= sizeof(job->meta.socket) ||
	    value_path(job->meta.socket, HOOK_SOCKET_MAX, &why))
		return die("--socket-dir: the socket %s/%s.sock is too long",
			   job->socket_dir, job->meta.service);
	if (job->dir)
		strcpy(job->meta.dir, job->dir);
	else if (!job->meta.unlink)
		strcpy(job->meta.dir, job->socket_dir);
	job->meta.role = HOOK_MAPPER;
	job->meta.vm_id = 0;
	if (meta_check(&job->meta, &e))
		return die("%s", e.msg);
	return 0;
}

/* The metadata of VM @id: the mapper's, or a reducer's without unlink/dir. */
static void vm_meta(const struct job *job, uint32_t id, struct hook_meta *m)
{
	*m = job->meta;
	m->vm_id = id;
	if (!id)
		return;
	m->role = HOOK_REDUCER;
	m->unlink = 1;
	m->dir[0] = '\0';
}

static void put_meta(FILE *f, const struct hook_meta *m)
{
	const char *p = HOOK_NS_PREFIX;

	fprintf(f, "  <metadata>\n");
	fprintf(f, "    <%s:%s xmlns:%s='%s'>\n", p, HOOK_ELEMENT, p, HOOK_NS);
	fprintf(f, "      <%s:role>%s</%s:role>\n", p,
		m->role == HOOK_MAPPER ? "mapper" : "reducer", p);
	fprintf(f, "      <%s:service>%s</%s:service>\n", p, m->service, p);
	fprintf(f, "      <%s:vm-id>%u</%s:vm-id>\n", p, m->vm_id, p);
	fprintf(f, "      <%s:socket>%s</%s:socket>\n", p, m->socket, p);
	fprintf(f, "      <%s:size>%llu</%s:size>\n", p,
		(unsigned long long)m->size, p);
	fprintf(f, "      <%s:reducers>%u</%s:reducers>\n", p, m->reducers, p);
	if (!m->unlink)
		fprintf(f, "      <%s:unlink>off</%s:unlink>\n", p, p);
	if (m->dir[0])
		fprintf(f, "      <%s:dir>%s</%s:dir>\n", p, m->dir, p);
	fprintf(f, "    </%s:%s>\n", p, HOOK_ELEMENT);
	fprintf(f, "  </metadata>\n");
}

static int put_os(FILE *f, const struct job *job)
{
	xmlChar *append;

	fprintf(f, "  <os>\n");
	fprintf(f, "    <type arch='x86_64' machine='pc'>hvm</type>\n");
	if (job->disk) {
		fprintf(f, "    <boot dev='hd'/>\n");
	} else {
		fprintf(f, "    <kernel>%s</kernel>\n", job->kernel);
		if (job->initrd)
			fprintf(f, "    <initrd>%s</initrd>\n", job->initrd);
		if (job->append) {
			append = xmlEncodeSpecialChars(NULL,
						       (const xmlChar *)job->append);
			if (!append)
				return -1;
			fprintf(f, "    <cmdline>%s</cmdline>\n", append);
			xmlFree(append);
		}
	}
	fprintf(f, "  </os>\n");
	return 0;
}

static void put_devices(FILE *f, const struct job *job, uint32_t id)
{
	char disk[HOOK_PATH_MAX + 1];
	size_t n;

	fprintf(f, "  <devices>\n");
	fprintf(f, "    <emulator>%s</emulator>\n", job->emulator);
	if (job->disk) {
		disk_path(job, id, disk, sizeof(disk));	/* checked already */
		n = strlen(disk);
		fprintf(f, "    <disk type='file' device='disk'>\n");
		fprintf(f, "      <driver name='qemu' type='%s'/>\n",
			n > 6 && !strcmp(disk + n - 6, ".qcow2") ? "qcow2" : "raw");
		fprintf(f, "      <source file='%s'/>\n", disk);
		/* Our QEMU has IDE (i440fx's PIIX) but no virtio-blk. */
		fprintf(f, "      <target dev='hda' bus='ide'/>\n");
		fprintf(f, "    </disk>\n");
	}
	/* Nor USB, nor virtio-balloon: ask for neither. */
	fprintf(f, "    <controller type='usb' model='none'/>\n");
	fprintf(f, "    <serial type='pty'>\n");
	fprintf(f, "      <target port='0'/>\n");
	fprintf(f, "    </serial>\n");
	fprintf(f, "    <console type='pty'>\n");
	fprintf(f, "      <target type='serial' port='0'/>\n");
	fprintf(f, "    </console>\n");
	fprintf(f, "    <memballoon model='none'/>\n");
	fprintf(f, "  </devices>\n");
}

static int put_domain(FILE *f, const struct job *job, uint32_t id)
{
	char dev[HOOK_DEVARG_MAX + 1];
	struct hook_device parsed;
	char name[HOOK_SERVICE_MAX + 32];
	struct hook_meta m;
	struct hook_err e;

	vm_meta(job, id, &m);
	vm_name(job, id, name, sizeof(name));
	/* What we write is what the hook reads back. */
	if (devarg_format(&m, job->vectors, dev, sizeof(dev)) ||
	    devarg_parse(dev, &parsed, &e) || devarg_agree(&m, &parsed, &e))
		return -1;
	fprintf(f, "<domain type='%s' xmlns:qemu='%s'>\n", job->type,
		HOOK_QEMU_NS);
	fprintf(f, "  <name>%s</name>\n", name);
	put_meta(f, &m);
	fprintf(f, "  <memory unit='MiB'>%u</memory>\n", job->memory_mib);
	fprintf(f, "  <vcpu>%u</vcpu>\n", job->vcpus);
	if (put_os(f, job))
		return -1;
	/* Without ACPI libvirt passes -no-acpi and a powered-off guest hangs. */
	fprintf(f, "  <features>\n    <acpi/>\n  </features>\n");
	fprintf(f, "  <on_poweroff>destroy</on_poweroff>\n");
	fprintf(f, "  <on_reboot>restart</on_reboot>\n");
	fprintf(f, "  <on_crash>destroy</on_crash>\n");
	put_devices(f, job, id);
	fprintf(f, "  <qemu:commandline>\n");
	fprintf(f, "    <qemu:arg value='-device'/>\n");
	fprintf(f, "    <qemu:arg value='%s'/>\n", dev);
	fprintf(f, "  </qemu:commandline>\n");
	fprintf(f, "</domain>\n");
	return 0;
}

static int write_domain(const struct job *job, uint32_t id)
{
	char path[4096], name[HOOK_SERVICE_MAX + 32];
	FILE *f;
	int n, err;

	vm_name(job, id, name, sizeof(name));
	n = snprintf(path, sizeof(path), "%s/%s.xml", job->out_dir, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return die("--out-dir: %s is too long", job->out_dir);
	f = fopen(path, "w");
	if (!f)
		return die("cannot create %s: %s", path, strerror(errno));
	err = put_domain(f, job, id);
	if (fclose(f) || err) {
		unlink(path);
		return die("cannot write %s%s", path,
			   err ? ": the device string is not what the hook reads" : "");
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct job job = {
		.meta.unlink = 1,
		.vectors = 1,
		.memory_mib = GEN_MEMORY_MIB,
		.vcpus = 1,
		.emulator = GEN_EMULATOR,
		.type = "kvm",
		.out_dir = ".",
		.socket_dir = GEN_SOCKET_DIR,
	};
	int c, err;

	while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
		if (c == OPT_HELP) {
			print_usage(stdout);
			return 0;
		}
		err = parse_opt(&job, c, optarg);
		if (err < 0)
			err = parse_path_opt(&job, c, optarg);
		if (err < 0) {
			print_usage(stderr);
			return 1;
		}
		if (err)
			return 1;
	}
	if (optind != argc) {
		print_usage(stderr);
		return 1;
	}
	if (finish(&job))
		return 1;
	for (uint32_t id = 0; id <= job.meta.reducers; id++) {
		if (write_domain(&job, id))
			return 1;
	}
	return 0;
}
