// SPDX-License-Identifier: MIT
/*
 * The libvirt hook, run as libvirt runs it: the domain XML on stdin, a
 * temporary qemu.conf and state directory given in its environment, and a
 * listening socket standing in for the mapper's QEMU.
 *
 * A domain without the metadata, and any operation but prepare and release,
 * pass silently.  A good mapper gets its socket directory, owned by
 * qemu.conf's user and group, mode 0770; a good reducer joins a listening
 * mapper.  Every refusal is exit 1 with one line naming its reason: a
 * reducer without its mapper, a duplicate vm id, an id above the mapper's
 * count, metadata and -device that disagree, each malformed field and
 * document, and directories it must not take over.  At release the
 * mapper's socket goes, and the slot files of an unlink=off service go with
 * its last domain, only from the socket's directory.  Called in this
 * process, its units leave no descriptor open on any path.
 */
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include "check.h"
#include "hook.h"
#include "lease.h"
#include "qemuconf.h"
#include "safedir.h"

#define HOOK		HOOK_BUILDDIR "/libvirt-hooks/50-sivshm"
#define UUID(n)		"11111111-2222-3333-4444-00000000000" #n
#define OTHER_UUID	"AAAAAAAA-2222-3333-4444-000000000000"
/* A <qemu:commandline> of one option and its value. */
#define CMDLINE(opt, val)	"<qemu:commandline><qemu:arg value='" opt \
				"'/><qemu:arg value='" val "'/></qemu:commandline>"

static char tmp[64], conf[128], state[128], sockdir[128], sock[160];
static char out[8192];		/* the stderr of the last run */
static char conf_text[512];	/* the qemu.conf of the test */
static uid_t quid;
static gid_t qgid;

/* A domain: NULL fields are left out, the device is built from the rest. */
struct dom {
	const char *name, *uuid;
	const char *role, *service, *vm_id, *socket, *size, *reducers;
	const char *unlink, *dir;
	const char *meta_extra;		/* more inside <sivshm:device> */
	const char *device;		/* the -device value, or built */
	const char *extra;		/* more inside <domain> */
	int no_meta, no_device;
};

static const struct dom mapper = {
	.name = "job1-mapper", .uuid = UUID(0), .role = "mapper",
	.service = "job1", .vm_id = "0", .socket = sock, .size = "16M",
	.reducers = "3",
};

static struct dom reducer(int id)
{
	static const char *const uuids[] = { UUID(0), UUID(1), UUID(2), UUID(3) };
	static const char *const names[] = {
		"job1-mapper", "job1-reducer1", "job1-reducer2", "job1-reducer3",
	};
	static const char *const ids[] = { "0", "1", "2", "3" };
	struct dom d = mapper;

	d.role = "reducer";
	d.name = names[id];
	d.uuid = uuids[id];
	d.vm_id = ids[id];
	return d;
}

static void field(char **p, const char *tag, const char *v)
{
	if (v)
		*p += sprintf(*p, "<sivshm:%s>%s</sivshm:%s>\n", tag, v, tag);
}

static const char *xml(const struct dom *d)
{
	static char buf[1 << 16];
	char dev[1024], *p = buf;

	snprintf(dev, sizeof(dev), "sivshm,vm-id=%s,shm=%s,socket=%s,size=%s,reducers=%s%s%s%s%s,bus=pci.0,addr=0x10",
		 d->vm_id, d->service, d->socket, d->size, d->reducers,
		 d->unlink ? ",unlink=" : "", d->unlink ? d->unlink : "",
		 d->dir ? ",dir=" : "", d->dir ? d->dir : "");
	p += sprintf(p, "<domain type='kvm' xmlns:qemu='%s'>\n", HOOK_QEMU_NS);
	p += sprintf(p, "<name>%s</name>\n<uuid>%s</uuid>\n", d->name, d->uuid);
	p += sprintf(p, "<metadata>\n<other:x xmlns:other='urn:other'/>\n");
	if (!d->no_meta) {
		p += sprintf(p, "<sivshm:device xmlns:sivshm='%s'>\n", HOOK_NS);
		field(&p, "role", d->role);
		field(&p, "service", d->service);
		field(&p, "vm-id", d->vm_id);
		field(&p, "socket", d->socket);
		field(&p, "size", d->size);
		field(&p, "reducers", d->reducers);
		field(&p, "unlink", d->unlink);
		field(&p, "dir", d->dir);
		p += sprintf(p, "%s</sivshm:device>\n",
			     d->meta_extra ? d->meta_extra : "");
	}
	p += sprintf(p, "</metadata>\n<memory unit='MiB'>256</memory>\n%s",
		     d->extra ? d->extra : "");
	if (!d->no_device)
		p += sprintf(p, "<qemu:commandline>\n<qemu:arg value='-m'/>\n"
			     "<qemu:arg value='256'/>\n<qemu:arg value='-device'/>\n"
			     "<qemu:arg value='%s'/>\n</qemu:commandline>\n",
			     d->device ? d->device : dev);
	sprintf(p, "</domain>\n");
	return buf;
}

/* Run the hook with @in on stdin; its exit status, its stderr in out[]. */
static int run_args(char *const argv[], const char *in, size_t len)
{
	int ipipe[2], epipe[2], status;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	T_ASSERT(!pipe2(ipipe, O_CLOEXEC) && !pipe2(epipe, O_CLOEXEC), "pipe");
	pid = fork();
	T_ASSERT(pid >= 0, "fork");
	if (!pid) {
		dup2(ipipe[0], 0);
		dup2(epipe[1], 2);
		setenv(HOOK_ENV_QEMU_CONF, conf, 1);
		setenv(HOOK_ENV_STATE_DIR, state, 1);
		execv(HOOK, argv);
		_exit(127);
	}
	close(ipipe[0]);
	close(epipe[1]);
	while (len) {		/* the hook may stop reading: EPIPE */
		n = write(ipipe[1], in, len);
		if (n <= 0)
			break;
		in += n;
		len -= n;
	}
	close(ipipe[1]);
	while ((n = read(epipe[0], out + got, sizeof(out) - 1 - got)) > 0)
		got += n;
	out[got] = '\0';
	close(epipe[0]);
	T_EQ(waitpid(pid, &status, 0), pid);
	T_ASSERT(WIFEXITED(status), "the hook was killed by signal %d",
		 WTERMSIG(status));
	T_ASSERT(WEXITSTATUS(status) != 127, "cannot run %s", HOOK);
	return WEXITSTATUS(status);
}

static int run(const char *name, const char *op, const char *in, size_t len)
{
	const char *sub = !strcmp(op, "prepare") ? "begin" :
			  !strcmp(op, "release") ? "end" : "begin";
	char *argv[6] = { "50-sivshm", (char *)name, (char *)op, (char *)sub,
			  "-", NULL };

	return run_args(argv, in, len);
}

static void ok(const char *what, const struct dom *d, const char *op)
{
	const char *x = xml(d);
	int st = run(d->name, op, x, strlen(x));

	T_ASSERT(st == 0 && !out[0], "%s: exit %d, stderr '%s'", what, st, out);
}

/* Refused: exit 1 and one line of stderr containing @needle. */
static void refused_text(const char *what, const char *name, const char *op,
			 const char *in, size_t len, const char *needle)
{
	int st = run(name, op, in, len);
	char *nl = strchr(out, '\n');

	T_ASSERT(st == 1, "%s: exit %d, stderr '%s'", what, st, out);
	T_ASSERT(nl && !nl[1], "%s: not one line: '%s'", what, out);
	T_ASSERT(!strncmp(out, "sivshm-hook: ", 13), "%s: '%s'", what, out);
	T_ASSERT(strstr(out, needle), "%s: '%s' lacks '%s'", what, out, needle);
}

static void refused(const char *what, const struct dom *d, const char *needle)
{
	const char *x = xml(d);

	refused_text(what, d->name, "prepare", x, strlen(x), needle);
}

static int listen_at(const char *path, int type)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

	T_ASSERT(s >= 0, "socket");
	strcpy(sa.sun_path, path);
	unlink(path);
	T_ASSERT(!bind(s, (struct sockaddr *)&sa, sizeof(sa)) && !listen(s, 8),
		 "listen on %s: %s", path, strerror(errno));
	return s;
}

static int exists(const char *dir, const char *name)
{
	char p[256];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return !lstat(p, &st);
}

static void touch(const char *dir, const char *name)
{
	char p[256];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	T_ASSERT(fd >= 0, "create %s", p);
	close(fd);
}

static void write_conf(const char *text)
{
	FILE *f = fopen(conf, "w");

	T_ASSERT(f && fputs(text, f) >= 0 && !fclose(f), "write %s", conf);
}

static void check_dir(const char *dir)
{
	struct stat st;

	T_ASSERT(!lstat(dir, &st) && S_ISDIR(st.st_mode), "%s is no directory", dir);
	T_EQ(st.st_uid, quid);
	T_EQ(st.st_gid, qgid);
	T_EQ(st.st_mode & 07777, HOOK_DIR_MODE);
}

/* The user and group the hook should give the directory. */
static void pick_owner(char *text, size_t len)
{
	struct passwd *pw;
	struct group *gr;

	if (geteuid() == 0) {
		pw = getpwnam("nobody");
		gr = getgrnam("nogroup");
		if (!pw || !gr)
			T_SKIP("no user nobody and group nogroup to run QEMU as");
	} else {
		pw = getpwuid(geteuid());
		gr = getgrgid(getegid());
		T_ASSERT(pw && gr, "who am I");
	}
	quid = pw->pw_uid;
	qgid = gr->gr_gid;
	snprintf(text, len, "# qemu.conf for the test\n"
		 "#user = \"root\"\nnamespaces = [ \"mount\", # a list\n  ]\n"
		 "user = \"%s\"   # the QEMU user\ngroup = '%s'\n"
		 "user = \"root\"\n", pw->pw_name, gr->gr_name);
}

static void setup(void)
{
	char text[256];

	strcpy(tmp, "/tmp/sivshm-hook-XXXXXX");
	T_ASSERT(mkdtemp(tmp), "mkdtemp");
	chmod(tmp, 0755);
	snprintf(conf, sizeof(conf), "%s/qemu.conf", tmp);
	snprintf(state, sizeof(state), "%s/state", tmp);
	snprintf(sockdir, sizeof(sockdir), "%s/run/sivshm", tmp);
	snprintf(sock, sizeof(sock), "%s/job1.sock", sockdir);
	snprintf(text, sizeof(text), "%s/run", tmp);
	T_ASSERT(!mkdir(text, 0755), "mkdir %s", text);
	pick_owner(conf_text, sizeof(conf_text));
	write_conf(conf_text);
	signal(SIGPIPE, SIG_IGN);
}

/* Neither other domains nor other operations are the hook's business. */
static void test_silent(void)
{
	struct dom d = mapper;
	char *argv[2] = { "50-sivshm", NULL };
	const char *x;

	d.no_meta = 1;
	ok("a domain without the metadata", &d, "prepare");
	ok("its release", &d, "release");
	d.no_device = 1;
	ok("a domain with neither metadata nor device", &d, "prepare");
	/* Not even read: garbage on stdin. */
	T_EQ(run("job1-mapper", "started", "<garbage", 8), 0);
	T_ASSERT(!out[0], "started: '%s'", out);
	T_EQ(run("job1-mapper", "stopped", "<garbage", 8), 0);
	T_EQ(run("job1-mapper", "reconnect", "<garbage", 8), 0);
	T_EQ(run("job1-mapper", "migrate", "<garbage", 8), 0);
	/* Nothing was made for them. */
	T_ASSERT(!exists(tmp, "run/sivshm"), "a socket directory appeared");
	T_ASSERT(!exists(tmp, "state"), "a state directory appeared");
	/* Called wrongly: a usage line. */
	x = xml(&mapper);
	T_EQ(run_args(argv, x, strlen(x)), 1);
	T_ASSERT(strstr(out, "usage"), "'%s'", out);
}

/* What each malformed field, document and device is told. */
static void test_metadata(void)
{
	static char longv[HOOK_FIELD_MAX + 2], longsock[HOOK_SOCKET_MAX + 8];
	static const struct {
		const char *what, *field, *value, *needle;
	} bad[] = {
		{ "role", "role", "boss", "neither mapper nor reducer" },
		{ "service", "service", "job/1", "only letters" },
		{ "service", "service", "job,1", "only letters" },
		{ "service", "service",
		  "a123456789b123456789c123456789d123456789e123456789",
		  "longer than" },
		{ "vm-id", "vm_id", "x", "not a decimal" },
		{ "vm-id", "vm_id", "-1", "not a decimal" },
		{ "vm-id", "vm_id", "00", "leading zero" },
		{ "vm-id", "vm_id", "64", "out of range" },
		{ "vm-id", "vm_id", "4294967296", "out of range" },
		{ "size", "size", "16Q", "not a size" },
		{ "size", "size", "1.5G", "not a size" },
		{ "size", "size", "99999999999999999999", "out of range" },
		{ "size", "size", "17179869184T", "out of range" },
		{ "size", "size", "1", "too small" },
		{ "size", "size", "2T", "above the largest region" },
		{ "reducers", "reducers", "0", "reducers must be 1" },
		{ "reducers", "reducers", "64", "out of range" },
		{ "socket", "socket", "run/x.sock", "not an absolute path" },
		{ "socket", "socket", "/run/../etc/x.sock", "'..'" },
		{ "socket", "socket", "/run/./sivshm/x.sock", "'.'" },
		{ "socket", "socket", "/run//sivshm/x.sock", "empty path component" },
		{ "socket", "socket", "/run/sivshm/", "empty path component" },
		{ "socket", "socket", "/run/siv shm/x.sock", "only letters" },
		{ "socket", "socket", "/run/sivshm/x,y.sock", "only letters" },
		{ "socket", "socket", "/x.sock", "directory of its own" },
		{ "socket", "socket", "/tmp/x.sock", "directory of its own" },
		{ "unlink", "unlink", "maybe", "neither on nor off" },
		{ "unlink without dir", "unlink", "off", "unlink off needs dir" },
		{ "dir", "dir", "dev/shm", "not an absolute path" },
		{ "an over-long field", "size", longv, "longer than" },
		{ "an over-long socket", "socket", longsock, "longer than" },
		{ "an empty field", "size", "  ", "is empty" },
	};
	struct dom d;

	memset(longv, '1', HOOK_FIELD_MAX + 1);
	longsock[0] = '/';
	memset(longsock + 1, 'a', HOOK_SOCKET_MAX + 2);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		d = mapper;
		if (!strcmp(bad[i].field, "role"))
			d.role = bad[i].value;
		else if (!strcmp(bad[i].field, "service"))
			d.service = bad[i].value;
		else if (!strcmp(bad[i].field, "vm_id"))
			d.vm_id = bad[i].value;
		else if (!strcmp(bad[i].field, "size"))
			d.size = bad[i].value;
		else if (!strcmp(bad[i].field, "reducers"))
			d.reducers = bad[i].value;
		else if (!strcmp(bad[i].field, "socket"))
			d.socket = bad[i].value;
		else if (!strcmp(bad[i].field, "unlink"))
			d.unlink = bad[i].value;
		else if (!strcmp(bad[i].field, "dir"))
			d.dir = bad[i].value;
		refused(bad[i].what, &d, bad[i].needle);
	}

	/* Missing, duplicate and unknown elements. */
	d = mapper;
	d.size = NULL;
	refused("no size", &d, "has no <size>");
	d = mapper;
	d.role = NULL;
	refused("no role", &d, "has no <role>");
	d = mapper;
	d.meta_extra = "<sivshm:size>16M</sivshm:size>";
	refused("size twice", &d, "<size> is given twice");
	d.meta_extra = "<sivshm:colour>red</sivshm:colour>";
	refused("unknown field", &d, "unknown element <colour>");
	d.meta_extra = "<other:size xmlns:other='urn:x'>1</other:size>";
	refused("foreign field", &d, "another namespace");
	d.meta_extra = "<sivshm:dir attr='1'>/dev/shm</sivshm:dir>";
	refused("attribute", &d, "attributes are not allowed");
	d.meta_extra = "<sivshm:dir><b/></sivshm:dir>";
	refused("nested element", &d, "only text");
	d.meta_extra = "stray text";
	refused("stray text", &d, "only elements");
	d = mapper;
	d.extra = "<metadata><sivshm:device xmlns:sivshm='" HOOK_NS "'/></metadata>";
	refused("two metadata elements", &d, "more than one");
	d = mapper;
	d.extra = "<metadata><sivshm:job xmlns:sivshm='" HOOK_NS "'/></metadata>";
	refused("an unknown element of ours", &d, "unknown element <job>");

	/* Roles and ids. */
	d = mapper;
	d.vm_id = "1";
	refused("a mapper with id 1", &d, "a mapper's vm-id is 0");
	d = reducer(1);
	d.vm_id = "0";
	refused("a reducer with id 0", &d, "a reducer's vm-id is 1");
	d.vm_id = "4";
	refused("a reducer above its count", &d, "above the 3 reducers");
	d = reducer(1);
	d.unlink = "on";
	refused("a reducer with unlink", &d, "the mapper's to set");

	/* The domain itself. */
	d = mapper;
	d.uuid = "not-a-uuid";
	refused("a bad uuid", &d, "not a UUID");
	d = mapper;
	d.name = "job1\tmapper";
	refused("a control character in the name", &d, "control character");
	d = mapper;
	d.role = "boss\tof&#10;all";
	refused("a control character echoed", &d, "neither mapper nor reducer");
	T_ASSERT(strstr(out, "boss\\x09of\\x0aall"), "not escaped: '%s'", out);
	d = mapper;
	refused_text("argv and XML disagree", "other", "prepare", xml(&d),
		     strlen(xml(&d)), "libvirt named domain other");
}

static void test_device(void)
{
	static const struct {
		const char *what, *device, *needle;
	} bad[] = {
		{ "shm", "sivshm,shm=job2,socket=%s,size=16M,reducers=3", "shm=job2" },
		{ "socket", "sivshm,shm=job1,socket=/run/sivshm/x.sock,size=16M,reducers=3",
		  "socket=/run/sivshm/x.sock" },
		{ "vm-id", "sivshm,vm-id=1,shm=job1,socket=%s,size=16M,reducers=3",
		  "vm-id=1" },
		{ "size", "sivshm,shm=job1,socket=%s,size=32M,reducers=3",
		  "size=33554432" },
		{ "size in bytes", "sivshm,shm=job1,socket=%s,size=16777216,reducers=2",
		  "reducers=2" },
		{ "unlink", "sivshm,shm=job1,socket=%s,size=16M,reducers=3,unlink=off,dir=/dev/shm",
		  "unlink=off" },
		{ "dir", "sivshm,shm=job1,socket=%s,size=16M,reducers=3,dir=/dev/hugepages",
		  "dir=/dev/hugepages" },
		{ "no size", "sivshm,shm=job1,socket=%s,reducers=3", "needs size" },
		{ "twice", "sivshm,shm=job1,shm=job1,socket=%s,size=16M,reducers=3",
		  "given twice" },
		{ "escaped comma", "sivshm,shm=job1,socket=%s,,x,size=16M,reducers=3",
		  "escaped comma" },
		{ "no key", "sivshm,shm=job1,socket=%s,size=16M,reducers=3,flag",
		  "is not key=value" },
		{ "bool", "sivshm,shm=job1,socket=%s,size=16M,reducers=3,msix=maybe",
		  "not a bool" },
		{ "vectors", "sivshm,shm=job1,socket=%s,size=16M,reducers=3,vectors=17",
		  "vectors=17" },
		{ "creds", "sivshm,shm=job1,socket=%s,size=16M,reducers=3,creds=4:0:0",
		  "reducer id out of range" },
		{ "creds twice", "sivshm,shm=job1,socket=%s,size=16M,reducers=3,creds=1:0:0;1:*:*",
		  "named twice" },
		{ "creds syntax", "sivshm,shm=job1,socket=%s,size=16M,reducers=3,creds=1:x:0",
		  "expected ID:UID:GID" },
		{ "mapper-cred", "sivshm,shm=job1,socket=%s,size=16M,reducers=3,mapper-cred=0:0",
		  "a reducer's to set" },
		{ "JSON", "{\"driver\":\"sivshm\"}", "JSON" },
	};
	char dev[512], extra[512];
	struct hook_domain dom;
	struct hook_err e;
	struct dom d;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		d = mapper;
		snprintf(dev, sizeof(dev), bad[i].device, sock);
		d.device = dev;
		refused(bad[i].what, &d, bad[i].needle);
	}
	d = mapper;
	d.no_device = 1;
	refused("metadata without a device", &d, "no -device sivshm");
	d = mapper;
	snprintf(extra, sizeof(extra),
		 "<qemu:commandline><qemu:arg value='-device'/><qemu:arg value='driver=sivshm,shm=job1,socket=%s,size=16M,reducers=3'/></qemu:commandline>",
		 sock);
	d.extra = extra;
	refused("two devices", &d, "more than one -device sivshm");
	d = mapper;
	d.extra = CMDLINE("-global", "sivshm.vm-id=2");
	refused("-global", &d, "-global or -set sivshm.vm-id=2 could change the device");
	d.extra = CMDLINE("--set", "device.s0.socket=/x");
	refused("--set", &d, "-set device.s0.socket=/x");
	d.extra = CMDLINE("-global", "kvm-pit.lost_tick_policy=delay");
	T_ASSERT(meta_parse(xml(&d), strlen(xml(&d)), &dom, &e) == 1,
		 "another -global: %s", e.msg);
	d = reducer(1);
	snprintf(dev, sizeof(dev), "sivshm,vm-id=1,shm=job1,socket=%s,creds=1:0:0",
		 sock);
	d.device = dev;
	refused("creds on a reducer", &d, "the mapper's (vm-id=0) to set");
	snprintf(dev, sizeof(dev), "sivshm,vm-id=1,shm=job1,socket=%s,mapper-cred=0",
		 sock);
	refused("mapper-cred syntax", &d, "is not UID:GID");
}

static void test_documents(void)
{
	static const char *const bad[][2] = {
		{ "", "malformed" },
		{ "\x89PNG\r\n\x1a\n", "malformed" },
		{ "<domain><name>x</name>", "malformed" },
		{ "<domain><metadata></domain>", "malformed" },
		{ "<domain>&undefined;</domain>", "malformed" },
		{ "<?xml version='1.0'?><!DOCTYPE domain [<!ENTITY a 'aaaa'><!ENTITY b '&a;&a;&a;&a;'>]><domain>&b;</domain>",
		  "DTD" },
		{ "<!DOCTYPE domain SYSTEM 'http://example.invalid/x.dtd'><domain/>",
		  "DTD" },
		{ "<network><name>x</name></network>", "not a <domain>" },
	};
	const char *good = xml(&mapper);
	size_t big = HOOK_XML_MAX + 100;
	char *buf;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		refused_text(bad[i][0], "job1-mapper", "prepare", bad[i][0],
			     strlen(bad[i][0]), bad[i][1]);
	/* A NUL inside, and a document cut short. */
	refused_text("NUL", "job1-mapper", "prepare", "<domain>\0</domain>",
		     18, "malformed");
	refused_text("cut short", "job1-mapper", "prepare", good,
		     strlen(good) / 2, "malformed");
	/* Over the bound: refused, and stdin is not read to its end. */
	buf = malloc(big);
	T_ASSERT(buf, "malloc");
	memset(buf, ' ', big);
	memcpy(buf, good, strlen(good));
	refused_text("oversized", "job1-mapper", "prepare", buf, big, "is over");
	free(buf);
}

static void test_qemu_conf(void)
{
	char user[HOOK_FIELD_MAX + 1], group[HOOK_FIELD_MAX + 1];
	struct hook_err e;
	const char *text;
	struct stat st;

	/* The parser alone: libvirt's syntax, the first setting counts. */
	text = "# c\nuser = \"a\" ; group = \"\"\"b\n\"\"\"\nx = [ 1, -2,\n"
	       "'s', [ \"n\" ] , ]\nuser = \"c\"\n";
	T_EQ(qconf_parse(text, strlen(text), user, group, &e), 0);
	T_ASSERT(!strcmp(user, "a") && !strcmp(group, "b\n"), "%s %s", user, group);
	text = "user = 5\n";
	T_EQ(qconf_parse(text, strlen(text), user, group, &e), -1);
	T_ASSERT(strstr(e.msg, "must be strings"), "%s", e.msg);
	text = "user = \"a\nb\"\n";
	T_EQ(qconf_parse(text, strlen(text), user, group, &e), -1);
	text = "x = [ 1, 2\n";
	T_EQ(qconf_parse(text, strlen(text), user, group, &e), -1);
	T_ASSERT(strstr(e.msg, "line"), "%s", e.msg);
	text = "user \"a\"\n";
	T_EQ(qconf_parse(text, strlen(text), user, group, &e), -1);

	/* Through the hook: a broken file refuses the start. */
	write_conf("user = \"nobody\"\ngroup = [ 1 ]\n");
	refused("a list for group", &mapper, "qemu.conf, line 2");
	write_conf("user = \"no-such-user-here\"\n");
	refused("an unknown user", &mapper, "user no-such-user-here does not exist");
	if (!getpwnam(HOOK_QEMU_USER)) {
		write_conf("# nothing set\n");
		refused("libvirt's default user", &mapper,
			"user " HOOK_QEMU_USER " does not exist");
	}
	/* "+N" is an id; the directory gets it. */
	if (geteuid() == 0) {
		write_conf("user = \"+4242\"\ngroup = \"4343\"\n");
		ok("numeric ids", &mapper, "prepare");
		T_ASSERT(!stat(sockdir, &st) && st.st_uid == 4242 &&
			 st.st_gid == 4343, "owner %u:%u", st.st_uid, st.st_gid);
		ok("its release", &mapper, "release");
		T_ASSERT(!rmdir(sockdir), "rmdir %s", sockdir);
	}
	write_conf(conf_text);
}

/* The mapper, its reducers, the checks between them, and release. */
static void test_service(void)
{
	struct dom d, r1 = reducer(1);
	int lsn;

	refused("a reducer before its mapper", &r1, "is not listening on");
	T_ASSERT(strstr(out, "start it first"), "'%s'", out);

	ok("the mapper", &mapper, "prepare");
	check_dir(sockdir);
	T_ASSERT(exists(state, "job1.0"), "no lease");
	ok("the mapper again (after a crash)", &mapper, "prepare");
	d = mapper;
	d.uuid = OTHER_UUID;
	d.name = "job1-mapper2";
	refused("a second mapper", &d, "vm-id 0 of service job1 is taken by running domain job1-mapper");
	ok("its release", &d, "release");
	T_ASSERT(exists(state, "job1.0"), "the refused domain dropped the lease");

	refused("a reducer while QEMU does not listen yet", &r1, "not listening");
	/* The mapper's QEMU listens. */
	lsn = listen_at(sock, SOCK_SEQPACKET);
	ok("reducer 1", &r1, "prepare");
	T_ASSERT(exists(state, "job1.1"), "no lease for reducer 1");
	check_dir(sockdir);
	d = r1;
	d.uuid = OTHER_UUID;
	d.name = "job1-reducer1b";
	refused("a duplicate vm id", &d, "vm-id 1 of service job1 is taken by running domain job1-reducer1");
	ok("its release", &d, "release");
	T_ASSERT(exists(state, "job1.1"), "the duplicate dropped the lease");

	d = reducer(3);
	d.reducers = "5";
	d.vm_id = "4";
	refused("an id above the mapper's count", &d, "vm-id 4 is above the 3 reducers of the mapper");
	d = reducer(2);
	d.size = "32M";
	refused("another geometry", &d, "differ from the mapper's");
	d = reducer(2);
	d.device = "sivshm,vm-id=2,shm=job1,socket=/x/y/z.sock";
	d.socket = "/x/y/z.sock";
	refused("another socket, nobody there", &d, "not listening");

	ok("reducer 2", (d = reducer(2), &d), "prepare");
	ok("reducer 2 released", &d, "release");
	T_ASSERT(!exists(state, "job1.2"), "the lease of reducer 2 stayed");
	ok("reducer 1 released", &r1, "release");
	T_ASSERT(exists(sockdir, "job1.sock"), "a reducer removed the socket");

	/* The mapper stops: its socket goes, not the directory. */
	close(lsn);
	ok("the mapper released", &mapper, "release");
	T_ASSERT(!exists(sockdir, "job1.sock"), "the socket stayed");
	T_ASSERT(!exists(state, "job1.0"), "the mapper's lease stayed");
	check_dir(sockdir);
	ok("released twice", &mapper, "release");

	/* Something else listening on the mapper's socket. */
	lsn = listen_at(sock, SOCK_SEQPACKET);
	refused("a socket in use", &mapper, "already listens on");
	close(lsn);
	/* A stream socket is no mapper. */
	ok("the mapper", &mapper, "prepare");
	lsn = listen_at(sock, SOCK_STREAM);
	refused("a stream listener", &r1, "not listening");
	close(lsn);
	unlink(sock);
	/* A file that is not a socket is never removed. */
	touch(sockdir, "job1.sock");
	refused_text("a file at the socket's path", mapper.name, "release",
		     xml(&mapper), strlen(xml(&mapper)), "not a socket");
	T_ASSERT(exists(sockdir, "job1.sock"), "the file was removed");
	unlink(sock);
}

/* unlink=off: slot files go with the last domain, from the socket's dir. */
static void test_slots(void)
{
	struct dom m = mapper, r = reducer(1);
	char other[160], sock3[160], link[192];
	int lsn;

	snprintf(sock3, sizeof(sock3), "%s/job3.sock", sockdir);
	m.service = "job3";
	r.service = "job3";
	m.socket = sock3;
	r.socket = sock3;
	m.unlink = "off";
	m.dir = sockdir;
	ok("a persistent mapper", &m, "prepare");
	T_ASSERT(exists(state, "job3.slots"), "no slot record");
	for (int j = 0; j <= 3; j++) {
		char name[32];

		snprintf(name, sizeof(name), "job3.slot%d", j);
		touch(sockdir, name);
	}
	touch(sockdir, "job3.slot4.keep");
	touch(sockdir, "job31.slot0");
	snprintf(link, sizeof(link), "%s/job3.slot3", sockdir);
	unlink(link);
	T_ASSERT(!symlink(conf, link), "symlink");
	lsn = listen_at(sock3, SOCK_SEQPACKET);
	ok("its reducer", &r, "prepare");
	close(lsn);
	/* The mapper restarts while a reducer runs: the files stay. */
	ok("the mapper released", &m, "release");
	T_ASSERT(exists(sockdir, "job3.slot0") && exists(sockdir, "job3.slot1"),
		 "slot files went with a reducer running");
	T_ASSERT(!exists(sockdir, "job3.sock"), "the socket stayed");
	/* The last domain goes: so do the files, and only they. */
	refused_text("the reducer released", r.name, "release", xml(&r),
		     strlen(xml(&r)), "job3.slot3: not a regular file");
	for (int j = 0; j <= 2; j++) {
		char name[32];

		snprintf(name, sizeof(name), "job3.slot%d", j);
		T_ASSERT(!exists(sockdir, name), "%s stayed", name);
	}
	T_ASSERT(exists(sockdir, "job3.slot3"), "a symlink was removed");
	T_ASSERT(!access(conf, R_OK), "the symlink's target was touched");
	T_ASSERT(exists(sockdir, "job3.slot4.keep") &&
		 exists(sockdir, "job31.slot0"), "another file was removed");
	T_ASSERT(!exists(state, "job3.slots"), "the slot record stayed");
	unlink(link);

	/* A slot directory elsewhere is never touched. */
	snprintf(other, sizeof(other), "%s/shm", tmp);
	T_ASSERT(!mkdir(other, 0700), "mkdir");
	m.dir = other;
	ok("slots outside the socket's directory", &m, "prepare");
	T_ASSERT(!exists(state, "job3.slots"), "a slot record for %s", other);
	touch(other, "job3.slot0");
	ok("released", &m, "release");
	T_ASSERT(exists(other, "job3.slot0"), "a file outside was removed");
}

/* Directories the hook must not take over, and one it may. */
static void test_dirs(void)
{
	char dir[160], target[160], s[192];
	struct dom d = mapper;
	struct stat st;

	d.socket = s;
	/* A symlink as the directory, or in its path. */
	snprintf(target, sizeof(target), "%s/target", tmp);
	T_ASSERT(!mkdir(target, 0755), "mkdir");
	snprintf(dir, sizeof(dir), "%s/run/link", tmp);
	T_ASSERT(!symlink(target, dir), "symlink");
	snprintf(s, sizeof(s), "%s/job1.sock", dir);
	refused("a symlinked directory", &d, "a symlink or not a directory");
	snprintf(s, sizeof(s), "%s/sub/job1.sock", dir);
	refused("a symlink in the path", &d, "a component is a symlink");
	T_ASSERT(!stat(target, &st) && st.st_uid == geteuid() &&
		 (st.st_mode & 07777) == 0755, "the target changed");
	/* A missing parent is not made. */
	snprintf(s, sizeof(s), "%s/none/sivshm/job1.sock", tmp);
	refused("a missing parent", &d, "No such file or directory");
	/* A non-empty directory of someone else's. */
	snprintf(dir, sizeof(dir), "%s/run/busy", tmp);
	T_ASSERT(!mkdir(dir, 0755), "mkdir");
	touch(dir, "precious");
	snprintf(s, sizeof(s), "%s/job1.sock", dir);
	if (quid != geteuid()) {
		refused("a busy directory", &d, "not empty");
		T_ASSERT(!stat(dir, &st) && (st.st_mode & 07777) == 0755,
			 "the busy directory changed");
	}
	/* A sticky one. */
	snprintf(dir, sizeof(dir), "%s/run/sticky", tmp);
	T_ASSERT(!mkdir(dir, 01777) && !chmod(dir, 01777), "mkdir");
	snprintf(s, sizeof(s), "%s/job1.sock", dir);
	refused("a sticky directory", &d, "sticky");
	/* An empty one of the wrong mode is taken over. */
	snprintf(dir, sizeof(dir), "%s/run/empty", tmp);
	T_ASSERT(!mkdir(dir, 0755), "mkdir");
	snprintf(s, sizeof(s), "%s/job1.sock", dir);
	ok("an empty directory", &d, "prepare");
	check_dir(dir);
	ok("released", &d, "release");
	/* A state directory others may write to is refused. */
	T_ASSERT(!chmod(state, 0777), "chmod");
	refused("an open state directory", &mapper, "mode 0700");
	T_ASSERT(!chmod(state, 0700), "chmod");
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	T_ASSERT(d, "opendir /proc/self/fd");
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Every path of the units, in this process: no descriptor stays open. */
static void test_fds(void)
{
	char dir[160], busy[160], user[HOOK_FIELD_MAX + 1], group[HOOK_FIELD_MAX + 1];
	const char *good = xml(&mapper), *base;
	struct hook_domain dom;
	struct lease_dir ld;
	struct hook_err e;
	struct lease l;
	int before = open_fds(), fd;
	uid_t uid;
	gid_t gid;

	T_EQ(meta_parse(good, strlen(good), &dom, &e), 1);
	T_EQ(meta_parse(good, 10, &dom, &e), -1);
	T_EQ(qconf_owner(conf, &uid, &gid, &e), 0);
	T_EQ(qconf_owner("/nonexistent/qemu.conf", &uid, &gid, &e),
	     getpwnam(HOOK_QEMU_USER) ? 0 : -1);
	T_EQ(qconf_owner(tmp, &uid, &gid, &e), -1);	/* a directory */
	T_EQ(qconf_parse("x = [", 5, user, group, &e), -1);
	snprintf(dir, sizeof(dir), "%s/run/fds", tmp);
	T_EQ(sdir_ensure(dir, quid, qgid, HOOK_DIR_MODE, &e), 0);
	T_EQ(sdir_ensure(dir, quid, qgid, HOOK_DIR_MODE, &e), 0);
	snprintf(busy, sizeof(busy), "%s/run/busy", tmp);
	if (quid != geteuid())
		T_EQ(sdir_ensure(busy, quid, qgid, HOOK_DIR_MODE, &e), -1);
	T_EQ(sdir_ensure("/nonexistent/a/b", quid, qgid, HOOK_DIR_MODE, &e), -1);
	fd = sdir_open_parent(sock, &base);
	T_ASSERT(fd >= 0, "open %s", sock);
	T_EQ(sdir_check_listening(fd, base), -ENOENT);
	T_EQ(sdir_check_listening(fd, "job3.slot4.keep"), -ENOTSOCK);
	T_EQ(sdir_remove(fd, "none", S_IFREG), -ENOENT);
	close(fd);
	T_EQ(lease_open(&ld, state, 0, &e), 0);
	T_EQ(lease_read(&ld, "job1", 7, &l, &e), 0);
	T_EQ(lease_count(&ld, "job1"), 0);
	lease_close(&ld);
	T_EQ(lease_open(&ld, "/nonexistent/state", 0, &e), 1);
	T_EQ(lease_open(&ld, "/nonexistent/state", 1, &e), -1);
	T_EQ(lease_open(&ld, "relative", 1, &e), -1);
	T_EQ(open_fds(), before);
}

static void cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmp);
}

int main(void)
{
	if (access(HOOK, X_OK))
		T_SKIP("%s is not built (make)", HOOK);
	setup();
	test_silent();
	test_metadata();
	test_device();
	test_documents();
	test_qemu_conf();
	test_service();
	test_slots();
	test_dirs();
	test_fds();
	cleanup();
	return 0;
}
