// SPDX-License-Identifier: MIT
/*
 * unlink=off: a mapper that restarts on the same named slot files finds the
 * region as it left it, and one with another geometry is refused.  A
 * reducer that lived through the restart hands back its slot, newer than
 * any file, and the new mapper maps that very slot; a hand-back that is not
 * a slot sealed like the mapper's is refused, one for a slot already given
 * out (or to a mapper that is not persistent) is closed unused, and no
 * descriptor stays behind.  And
 * SIVSHM_MLOCK: where RLIMIT_MEMLOCK forbids the lock, opening fails with
 * a logged reason that names RLIMIT_MEMLOCK.
 */
#include <fcntl.h>
#include <poll.h>
#include <limits.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "client.h"
#include "fds.h"
#include "hostile.h"
#include "sivshm.h"

static int memlock_named, flooding;

static void watch_log(const char *msg)
{
	if (!flooding)
		fprintf(stderr, "  log: %s\n", msg);
	if (strstr(msg, "RLIMIT_MEMLOCK"))
		memlock_named = 1;
}

static void persist(void)
{
	char dir[] = "/dev/shm/sivshm-test-persist-XXXXXX", path[108];
	struct sivshm_mapper_opts opts = {
		.socket_path = path, .name = "persist", .size = 1 << 20,
		.nreducers = 3, .nvectors = 1, .flags = SIVSHM_PERSIST,
	};
	struct sivshm *m;

	T_ASSERT(mkdtemp(dir), "mkdtemp");
	opts.dir = dir;
	snprintf(path, sizeof(path), "%s/sock", dir);
	T_EQ(sivshm_mapper_open(&m, &opts), 0);
	strcpy(sivshm_slot(m, 2), "left by the first mapper");
	strcpy(sivshm_slot(m, 0), "the mailbox too");
	sivshm_close(m);

	T_EQ(sivshm_mapper_open(&m, &opts), 0);
	T_ASSERT(!strcmp(sivshm_slot(m, 2), "left by the first mapper"),
		 "slot 2 lost its data across the restart");
	T_ASSERT(!strcmp(sivshm_slot(m, 0), "the mailbox too"),
		 "slot 0 lost its data across the restart");
	sivshm_close(m);

	/* Another geometry on the same files is refused, not reinterpreted. */
	opts.nreducers = 7;
	T_EQ(sivshm_mapper_open(&m, &opts), -EINVAL);
	/* PERSIST needs a directory. */
	opts.nreducers = 3;
	opts.dir = NULL;
	T_EQ(sivshm_mapper_open(&m, &opts), -EINVAL);

	for (int j = 0; j <= 7; j++) {
		snprintf(path, sizeof(path), "%s/persist.slot%d", dir, j);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/sock", dir);
	unlink(path);
	T_EQ(rmdir(dir), 0);
	puts("persist: a restarted mapper reattached its region");
}

/* Reducer @id joins, handing back @slot (-1: none); returns the socket. */
static int join(const char *path, uint32_t id, int slot, int *got_slot)
{
	char reason[PROTO_REASON_LEN];
	int sock, efd, fds[PROTO_MAX_FDS];
	struct proto_msg w;

	sock = proto_client_connect(path, 2000);
	T_ASSERT(sock >= 0, "connect");
	efd = eventfd(0, EFD_CLOEXEC);
	T_EQ(proto_client_send_hello(sock, id, 1, &efd, slot), 0);
	T_EQ(poll(&(struct pollfd){ .fd = sock, .events = POLLIN }, 1, 2000), 1);
	T_EQ(proto_client_recv_welcome(sock, id, 1, &w, fds, reason,
				       sizeof(reason)), 0);
	close(efd);
	close(fds[1]);
	*got_slot = fds[0];
	return sock;
}

/* Until the mapper has seen reducer @id go. */
static void wait_gone(struct sivshm *m, uint32_t id)
{
	uint64_t peers = 0;

	for (int i = 0; i < 2000; i++) {
		T_EQ(sivshm_peers(m, &peers), 0);
		if (!(peers & 1ull << id))
			return;
		usleep(1000);
	}
	T_ASSERT(0, "reducer %u never left (%#llx)", id,
		 (unsigned long long)peers);
}

static void same_file(int a, int b, const char *what)
{
	struct stat sa, sb;

	T_EQ(fstat(a, &sa), 0);
	T_EQ(fstat(b, &sb), 0);
	T_ASSERT(sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino, "%s", what);
}

/*
 * A hand-back refused with PROTO_E_FDS, its fd closed by the mapper (@what
 * NULL: one of a flood).
 */
static void refused(const char *path, uint32_t id, int slot, const char *what)
{
	int fd = raw_connect_to(path), efd, fds[2];
	uint8_t buf[PROTO_BUF_SIZE];

	hello_bytes(buf, id, 1);
	buf[24] = PROTO_F_SLOT;
	efd = eventfd(0, EFD_CLOEXEC);
	fds[0] = efd;
	fds[1] = slot;
	raw_send(fd, buf, PROTO_HELLO_SIZE, fds, 2);
	close(efd);
	close(slot);
	expect_refuse(fd, PROTO_E_FDS, what);
}

static void hand_back(void)
{
	char dir[] = "/dev/shm/sivshm-test-handback-XXXXXX", path[108];
	char file[PATH_MAX];
	struct sivshm_mapper_opts opts = {
		.socket_path = path, .name = "back", .size = 1 << 20,
		.nreducers = 3, .nvectors = 1, .flags = SIVSHM_PERSIST,
	};
	struct sivshm_info info;
	struct sivshm *m;
	int sock, held, again, before, named, other;
	char *mine;

	T_ASSERT(mkdtemp(dir), "mkdtemp");
	opts.dir = dir;
	snprintf(path, sizeof(path), "%s/sock", dir);

	/* The first mapper: reducer 1 joins and keeps its slot. */
	T_EQ(sivshm_mapper_open(&m, &opts), 0);
	T_EQ(sivshm_get_info(m, &info), 0);
	strcpy(sivshm_slot(m, 3), "slot 3, kept by its file");
	sock = join(path, 1, -1, &held);
	mine = mmap(NULL, info.slice_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    held, 0);
	T_ASSERT(mine != MAP_FAILED, "mmap");
	strcpy(mine, "before the restart");
	close(sock);
	sivshm_close(m);
	/* The mapper is gone; the reducer keeps writing. */
	strcpy(mine, "written while the mapper was away");

	T_EQ(sivshm_mapper_open(&m, &opts), 0);
	T_ASSERT(!strcmp(sivshm_slot(m, 1), "before the restart"),
		 "slot 1 from its file: \"%s\"", (char *)sivshm_slot(m, 1));
	T_ASSERT(!strcmp(sivshm_slot(m, 3), "slot 3, kept by its file"),
		 "slot 3 lost across the restart");
	before = open_fd_count();
	sock = join(path, 1, held, &again);
	same_file(held, again, "reducer 1 got another slot than it handed back");
	T_EQ(sivshm_wait_peers(m, 1 << 1, 2000), 0);
	T_ASSERT(!strcmp(sivshm_slot(m, 1), "written while the mapper was away"),
		 "the mapper does not map the slot handed back: \"%s\"",
		 (char *)sivshm_slot(m, 1));
	strcpy(sivshm_slot(m, 1), "the new mapper's answer");
	T_ASSERT(!strcmp(mine, "the new mapper's answer"), "not shared");
	close(again);
	close(sock);
	wait_gone(m, 1);

	/* Once given out, a slot is not replaced: this one is closed. */
	other = slot_memfd(info.slice_size, PROTO_SLOT_SEALS);
	sock = join(path, 1, other, &again);
	same_file(held, again, "a given slot was replaced");
	close(other);
	close(again);
	close(sock);

	/* What may not stand for a slot is refused. */
	refused(path, 2, slot_memfd(info.slice_size, 0), "unsealed slot");
	refused(path, 2, slot_memfd(info.slice_size / 2, PROTO_SLOT_SEALS),
		"sealed slot of half the size");
	refused(path, 2, slot_memfd(info.slice_size, PROTO_SLOT_SEALS |
				    F_SEAL_WRITE), "write-sealed slot");
	snprintf(file, sizeof(file), "%s/back.slot0", dir);
	named = open(file, O_RDWR | O_CLOEXEC);
	T_ASSERT(named >= 0, "open %s", file);
	refused(path, 2, named, "a named file (slot 0's)");
	refused(path, 2, eventfd(0, EFD_CLOEXEC), "an eventfd");
	flooding = 1;
	for (int i = 0; i < 1000; i++)
		refused(path, 2, slot_memfd(4096, 0), NULL);
	flooding = 0;
	puts("refused as expected: 1000 more bad slots");
	usleep(100 * 1000);
	T_EQ(open_fd_count(), before);
	sivshm_close(m);

	munmap(mine, info.slice_size);
	close(held);
	for (int j = 0; j <= 3; j++) {
		snprintf(file, sizeof(file), "%s/back.slot%d", dir, j);
		T_EQ(unlink(file), 0);
	}
	unlink(path);
	T_EQ(rmdir(dir), 0);
	puts("hand-back: a restarted mapper maps the slot its reducer kept; "
	     "bad ones refused");
}

/*
 * A reducer that held two ids before the restart hands the same slot back
 * for both: the second is refused, so no file backs two slots of the new
 * mapper (one reducer would see what the mapper writes for the other).
 */
static void hand_back_alias(void)
{
	char dir[] = "/dev/shm/sivshm-test-alias-XXXXXX", path[108];
	char file[PATH_MAX];
	struct sivshm_mapper_opts opts = {
		.socket_path = path, .name = "alias", .size = 1 << 20,
		.nreducers = 2, .nvectors = 1, .flags = SIVSHM_PERSIST,
	};
	struct sivshm *m;
	int s1, s2, held1, held2, got;

	T_ASSERT(mkdtemp(dir), "mkdtemp");
	opts.dir = dir;
	snprintf(path, sizeof(path), "%s/sock", dir);
	T_EQ(sivshm_mapper_open(&m, &opts), 0);
	s1 = join(path, 1, -1, &held1);
	s2 = join(path, 2, -1, &held2);
	close(s1);
	close(s2);
	sivshm_close(m);

	T_EQ(sivshm_mapper_open(&m, &opts), 0);
	s1 = join(path, 1, held2, &got);	/* slot 2's file, as slot 1 */
	same_file(got, held2, "slot 2's file was not taken as slot 1");
	close(got);
	refused(path, 2, dup(held2), "the same file again, as slot 2");
	strcpy(sivshm_slot(m, 1), "for reducer 1");
	T_ASSERT(strcmp(sivshm_slot(m, 2), "for reducer 1"),
		 "slots 1 and 2 share their memory");
	close(s1);
	sivshm_close(m);

	close(held1);
	close(held2);
	for (int j = 0; j <= 2; j++) {
		snprintf(file, sizeof(file), "%s/alias.slot%d", dir, j);
		T_EQ(unlink(file), 0);
	}
	unlink(path);
	T_EQ(rmdir(dir), 0);
	puts("hand-back: one file is never two slots");
}

/* A mapper that is not persistent closes a slot handed back, unused. */
static void hand_back_ignored(void)
{
	char path[108];
	struct sivshm_mapper_opts opts = {
		.socket_path = path, .name = "fresh", .size = 1 << 20,
		.nreducers = 1, .nvectors = 1,
	};
	struct sivshm_info info;
	struct sivshm *m;
	int sock, mine, got, before;

	snprintf(path, sizeof(path), "/tmp/sivshm-test-back-%d.sock", getpid());
	T_EQ(sivshm_mapper_open(&m, &opts), 0);
	T_EQ(sivshm_get_info(m, &info), 0);
	before = open_fd_count();
	mine = slot_memfd(info.slice_size, PROTO_SLOT_SEALS);
	sock = join(path, 1, mine, &got);
	T_ASSERT(!strcmp((char *)sivshm_slot(m, 1), ""), "slot changed");
	close(got);
	close(mine);
	close(sock);
	wait_gone(m, 1);
	usleep(100 * 1000);
	T_EQ(open_fd_count(), before);
	sivshm_close(m);
	unlink(path);
	puts("hand-back: ignored by a mapper that is not persistent");
}

#if !defined(__SANITIZE_ADDRESS__)
/* In a child without the privilege to lock beyond RLIMIT_MEMLOCK. */
static void mlock_refused(void)
{
	struct sivshm_mapper_opts opts = {
		.name = "mlock", .size = 64 << 20, .nreducers = 1,
		.nvectors = 1, .flags = SIVSHM_MLOCK,
	};
	struct rlimit rl = { 64 << 10, 64 << 10 };
	char path[108];
	struct sivshm *m;
	int status;
	pid_t pid;

	snprintf(path, sizeof(path), "/tmp/sivshm-test-mlock-%d.sock", getpid());
	fflush(stdout);
	opts.socket_path = path;
	pid = fork();
	T_ASSERT(pid >= 0, "fork");
	if (pid == 0) {
		int err;

		T_EQ(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
		/* root locks whatever it likes: become nobody to be refused. */
		if (getuid() == 0)
			T_EQ(setuid(65534), 0);
		err = sivshm_mapper_open(&m, &opts);
		T_ASSERT(err == -ENOMEM || err == -EPERM || err == -EAGAIN,
			 "mlock beyond RLIMIT_MEMLOCK gave %d", err);
		T_ASSERT(memlock_named, "the refusal did not name RLIMIT_MEMLOCK");
		exit(0);
	}
	T_EQ(waitpid(pid, &status, 0), pid);
	T_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "child failed (%#x)", status);
	unlink(path);
	puts("mlock: refused with RLIMIT_MEMLOCK named");
}
#endif

int main(void)
{
	sivshm_set_logger(watch_log);
	persist();
	hand_back();
	hand_back_alias();
	hand_back_ignored();
#if defined(__SANITIZE_ADDRESS__)
	/* ASan intercepts mlock() and makes it succeed without locking. */
	puts("mlock: not checked under AddressSanitizer (mlock is a no-op there)");
#else
	mlock_refused();
#endif
	return 0;
}
