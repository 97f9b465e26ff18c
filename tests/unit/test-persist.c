// SPDX-License-Identifier: MIT
/*
 * unlink=off: a mapper that restarts on the same named slot files finds the
 * region as it left it, and one with another geometry is refused.  And
 * SIVSHM_MLOCK: where RLIMIT_MEMLOCK forbids the lock, opening fails with
 * a logged reason that names RLIMIT_MEMLOCK.
 */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "sivshm.h"

static int memlock_named;

static void watch_log(const char *msg)
{
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
#if defined(__SANITIZE_ADDRESS__)
	/* ASan intercepts mlock() and makes it succeed without locking. */
	puts("mlock: not checked under AddressSanitizer (mlock is a no-op there)");
#else
	mlock_refused();
#endif
	return 0;
}
