// SPDX-License-Identifier: MIT
/*
 * Start a whole SIVSHM service on this host: one mapper process and its
 * reducer processes, wired through a fresh socket.
 *
 *   sivshm-run charcount --reducers N --size BYTES [charcount-mapper options]
 *
 * The mapper gets every option; each reducer gets the socket, its id and
 * the mode.  Exits with the mapper's status, or 1 if a reducer failed.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_REDUCERS	63

static char tooldir[PATH_MAX];

/* Our programs sit next to us (or, in a libtool build tree, above .libs). */
static void find_tooldir(const char *argv0)
{
	char exe[PATH_MAX], *dir;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char probe[PATH_MAX + 32];

	if (strchr(argv0, '/')) {
		snprintf(exe, sizeof(exe), "%s", argv0);
		dir = dirname(exe);
		snprintf(probe, sizeof(probe), "%s/charcount-mapper", dir);
		if (!access(probe, X_OK)) {
			snprintf(tooldir, sizeof(tooldir), "%s", dir);
			return;
		}
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	}
	if (n > 0) {
		exe[n] = '\0';
		dir = dirname(exe);
		if (!strcmp(basename(dir), ".libs"))
			dir = dirname(dir);
		snprintf(probe, sizeof(probe), "%s/charcount-mapper", dir);
		if (!access(probe, X_OK)) {
			snprintf(tooldir, sizeof(tooldir), "%s", dir);
			return;
		}
	}
	tooldir[0] = '\0';	/* use $PATH */
}

static pid_t spawn(char **argv)
{
	char path[PATH_MAX + 64];
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	if (tooldir[0]) {
		snprintf(path, sizeof(path), "%s/%s", tooldir, argv[0]);
		execv(path, argv);
	}
	execvp(argv[0], argv);
	fprintf(stderr, "sivshm-run: cannot run %s: %s\n", argv[0],
		strerror(errno));
	_exit(127);
}

static int wait_exit(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void usage(void)
{
	fprintf(stderr, "usage: sivshm-run charcount --reducers N --size BYTES "
		"[--mode poll|irq] [--random BYTES | --data FILE] [...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	char sock[108], ids[MAX_REDUCERS + 1][12];
	char *margv[argc + 4], *rargv[10];
	const char *mode = "poll";
	pid_t mapper, reducer[MAX_REDUCERS + 1];
	int nred = 0, i, n = 0, status, failed = 0, mlock = 0;

	if (argc < 2 || strcmp(argv[1], "charcount"))
		usage();
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--reducers") && i + 1 < argc)
			nred = atoi(argv[i + 1]);
		if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			mode = argv[i + 1];
		if (!strcmp(argv[i], "--mlock"))
			mlock = 1;
	}
	if (nred < 1 || nred > MAX_REDUCERS)
		usage();
	find_tooldir(argv[0]);
	snprintf(sock, sizeof(sock), "%s/sivshm-run-%d.sock",
		 getenv("XDG_RUNTIME_DIR") ? getenv("XDG_RUNTIME_DIR") : "/tmp",
		 getpid());

	margv[n++] = "charcount-mapper";
	margv[n++] = "--socket";
	margv[n++] = sock;
	for (i = 2; i < argc; i++)
		margv[n++] = argv[i];
	margv[n] = NULL;
	mapper = spawn(margv);

	for (i = 1; i <= nred; i++) {
		n = 0;
		snprintf(ids[i], sizeof(ids[i]), "%d", i);
		rargv[n++] = "charcount-reducer";
		rargv[n++] = "--socket";
		rargv[n++] = sock;
		rargv[n++] = "--id";
		rargv[n++] = ids[i];
		rargv[n++] = "--mode";
		rargv[n++] = (char *)mode;
		if (mlock)
			rargv[n++] = "--mlock";
		rargv[n] = NULL;
		reducer[i] = spawn(rargv);
	}

	status = wait_exit(mapper);
	for (i = 1; i <= nred; i++) {
		/* A reducer stuck after its mapper is gone is not waited for. */
		for (int t = 0; t < 100; t++) {
			if (waitpid(reducer[i], &n, WNOHANG) == reducer[i])
				break;
			if (t == 99) {
				kill(reducer[i], SIGKILL);
				waitpid(reducer[i], &n, 0);
			}
			usleep(50000);
		}
		if (!WIFEXITED(n) || WEXITSTATUS(n)) {
			fprintf(stderr, "sivshm-run: reducer %d failed\n", i);
			failed = 1;
		}
	}
	unlink(sock);
	return status ? status : failed;
}
