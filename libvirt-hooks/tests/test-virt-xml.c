// SPDX-License-Identifier: MIT
/*
 * The domain XML generator.  It writes the checked-in examples exactly
 * (libvirt-hooks/examples/generate.sh, run again here); each file passes
 * libvirt's own schema (virt-xml-validate, from libvirt-clients), carries
 * the must-haves our QEMU needs, and is a domain the hook accepts with the
 * role and id its name says.  Bad job descriptions are refused with a
 * reason and write nothing.
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "hook.h"

#define GEN		HOOK_BUILDDIR "/libvirt-hooks/sivshm-virt-xml"
#define EXAMPLES	HOOK_SRCDIR "/libvirt-hooks/examples"
#define VALIDATE	"virt-xml-validate"

static char tmp[64];
static char out[4096];		/* the output of the last command */

/* Run @argv, output in out[]; its exit status (127: not found). */
static int run(char *const argv[])
{
	int p[2], status;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	T_ASSERT(!pipe2(p, O_CLOEXEC), "pipe");
	pid = fork();
	T_ASSERT(pid >= 0, "fork");
	if (!pid) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	while ((n = read(p[0], out + got, sizeof(out) - 1 - got)) > 0)
		got += n;
	out[got] = '\0';
	close(p[0]);
	T_EQ(waitpid(pid, &status, 0), pid);
	T_ASSERT(WIFEXITED(status), "%s killed", argv[0]);
	return WEXITSTATUS(status);
}

/* The contents of @dir/@name, NUL-terminated; *@len its size. */
static char *slurp(const char *dir, const char *name, size_t *len)
{
	char path[256];
	struct stat st;
	char *buf;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	T_ASSERT(!fstat(fd, &st), "fstat %s", path);
	buf = malloc(st.st_size + 1);
	T_ASSERT(buf && read(fd, buf, st.st_size) == st.st_size, "read %s", path);
	buf[st.st_size] = '\0';
	close(fd);
	*len = st.st_size;
	return buf;
}

/* The sorted *.xml names of @dir, as one string. */
static void xml_names(const char *dir, char *names, size_t len)
{
	struct dirent **list;
	int n = scandir(dir, &list, NULL, alphasort);

	T_ASSERT(n >= 0, "scandir %s", dir);
	names[0] = '\0';
	for (int i = 0; i < n; i++) {
		size_t l = strlen(list[i]->d_name);

		if (l > 4 && !strcmp(list[i]->d_name + l - 4, ".xml")) {
			strncat(names, list[i]->d_name, len - strlen(names) - 2);
			strcat(names, " ");
		}
		free(list[i]);
	}
	free(list);
}

/* The hook reads @name back with the role and id its name gives. */
static void read_back(const char *name, const char *text, size_t len)
{
	struct hook_domain dom;
	struct hook_err e;
	const char *r = strstr(name, "-reducer");
	uint32_t id = r ? strtoul(r + 8, NULL, 10) : 0;
	int ret = meta_parse(text, len, &dom, &e);

	/* libvirt adds the uuid; the hook needs one. */
	T_ASSERT(ret == -1 && strstr(e.msg, "<domain> has no <uuid>"),
		 "%s: %d %s", name, ret, e.msg);
	T_ASSERT(!strstr(text, "<uuid>"), "%s has a uuid", name);
	{
		char *with = malloc(len + 64);
		const char *at = strstr(text, "</name>") + 7;

		T_ASSERT(with, "malloc");
		sprintf(with, "%.*s\n  <uuid>00000000-0000-0000-0000-%012u</uuid>%s",
			(int)(at - text), text, id, at);
		ret = meta_parse(with, strlen(with), &dom, &e);
		free(with);
	}
	T_ASSERT(ret == 1, "%s: the hook refuses it: %s", name, e.msg);
	T_EQ(dom.meta.vm_id, id);
	T_EQ(dom.meta.role, id ? HOOK_REDUCER : HOOK_MAPPER);
	T_ASSERT(!strncmp(name, dom.name, strlen(dom.name)) &&
		 !strcmp(name + strlen(dom.name), ".xml"), "%s names %s", name,
		 dom.name);
}

static void must_haves(const char *name, const char *text)
{
	static const char *const need[] = {
		"<controller type='usb' model='none'/>",
		"<memballoon model='none'/>",
		"<acpi/>",
		"<on_poweroff>destroy</on_poweroff>",
		"xmlns:qemu='" HOOK_QEMU_NS "'",
		"<qemu:arg value='-device'/>",
		",bus=pci.0,addr=0x10'/>",
		"<sivshm:device xmlns:sivshm='" HOOK_NS "'>",
	};

	for (size_t i = 0; i < ARRAY_SIZE(need); i++)
		T_ASSERT(strstr(text, need[i]), "%s lacks %s", name, need[i]);
}

/* Generate the examples again and compare; returns whether validated. */
static int check_examples(void)
{
	char *gen[5] = { "sh", EXAMPLES "/generate.sh", GEN, tmp, NULL };
	char want[1024], got[1024];
	int validated = 1;

	T_ASSERT(run(gen) == 0, "generate.sh: %s", out);
	xml_names(EXAMPLES, want, sizeof(want));
	xml_names(tmp, got, sizeof(got));
	T_ASSERT(!strcmp(want, got), "examples/ has '%s', the generator writes '%s' (make libvirt-examples)",
		 want, got);
	for (char *name = strtok(got, " "); name; name = strtok(NULL, " ")) {
		char path[256];
		char *validate[4] = { VALIDATE, path, "domain", NULL };
		size_t len, elen;
		char *a = slurp(tmp, name, &len), *b = slurp(EXAMPLES, name, &elen);
		int st;

		T_ASSERT(a && b, "read %s", name);
		T_ASSERT(len == elen && !memcmp(a, b, len),
			 "examples/%s is not what the generator writes today (make libvirt-examples)",
			 name);
		must_haves(name, a);
		read_back(name, a, len);
		snprintf(path, sizeof(path), "%s/%s", tmp, name);
		st = run(validate);
		if (st == 127) {
			validated = 0;
		} else {
			T_ASSERT(st == 0 && strstr(out, "validates"),
				 "%s does not validate: %s", name, out);
			printf("%s validates\n", name);
		}
		free(a);
		free(b);
	}
	return validated;
}

/* The generator refuses @args (after --out-dir) with @needle. */
static void expect_refused(const char *needle, const char *const *args)
{
	char *argv[32] = { GEN, "--out-dir", tmp };
	int i = 3;
	char names[256];

	for (; *args; args++)
		argv[i++] = (char *)*args;
	argv[i] = NULL;
	T_ASSERT(run(argv) == 1, "accepted: %s", needle);
	T_ASSERT(strstr(out, needle), "'%s' lacks '%s'", out, needle);
	xml_names(tmp, names, sizeof(names));
	T_ASSERT(!names[0], "no file may be written, but %s was", names);
}

#define JOB	"--name", "j", "--size", "16M", "--reducers", "2"
#define KERNEL	"--kernel", "/boot/vmlinuz"
#define DISK	"--disk", "/x/@VM@.img"

static const struct {
	const char *needle;
	const char *args[16];
} bad_jobs[] = {
	{ "are required", { "--size", "16M", "--reducers", "2", KERNEL } },
	{ "one of them", { JOB } },
	{ "one of them", { JOB, KERNEL, DISK } },
	{ "too small", { "--name", "j", "--size", "4096", "--reducers", "2", KERNEL } },
	{ "out of range", { "--name", "j", "--size", "16M", "--reducers", "64", KERNEL } },
	{ "only letters", { "--name", "j.1", "--size", "16M", "--reducers", "2", KERNEL } },
	{ "put @VM@", { JOB, "--disk", "/var/lib/one.img" } },
	{ "not an absolute path", { JOB, "--kernel", "vmlinuz" } },
	{ "not an absolute path", { JOB, KERNEL, "--socket-dir", "run" } },
	{ "directory of its own", { JOB, KERNEL, "--socket-dir", "/run" } },
	{ "go with --kernel", { JOB, DISK, "--append", "quiet" } },
	{ "neither kvm nor qemu", { JOB, KERNEL, "--type", "xen" } },
	{ "neither on nor off", { JOB, KERNEL, "--unlink", "no" } },
	{ "control character", { JOB, KERNEL, "--append", "a\nb" } },
	{ "usage", { JOB, KERNEL, "extra" } },
};

static void check_bad_jobs(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -f %s/*.xml", tmp);
	T_ASSERT(!system(cmd), "%s", cmd);
	for (size_t i = 0; i < ARRAY_SIZE(bad_jobs); i++)
		expect_refused(bad_jobs[i].needle, bad_jobs[i].args);
}

int main(void)
{
	int validated;
	char cmd[128];

	if (access(GEN, X_OK))
		T_SKIP("%s is not built (make)", GEN);
	strcpy(tmp, "/tmp/sivshm-virt-xml-XXXXXX");
	T_ASSERT(mkdtemp(tmp), "mkdtemp");
	validated = check_examples();
	check_bad_jobs();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	T_ASSERT(!system(cmd), "%s", cmd);
	if (!validated) {
		if (getenv("CI"))
			T_ASSERT(0, "no %s (apt-get install libvirt-clients)", VALIDATE);
		T_SKIP("no %s (apt-get install libvirt-clients): the schema check did not run",
		       VALIDATE);
	}
	return 0;
}
