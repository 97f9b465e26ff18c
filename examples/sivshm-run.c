// SPDX-License-Identifier: MIT
/*
 * Start a whole SIVSHM service on this host: one mapper process and its
 * reducer processes, wired through a fresh socket.
 *
 *   sivshm-run charcount --reducers N --size BYTES [charcount-mapper options]
 *
 * The mapper gets every option; each reducer gets the socket, its id and
 * the mode.  Exits with the mapper's status, or 1 if a reducer failed.
 *
 * The baselines run the same way:
 *
 *   sivshm-run charcount-tcp ...	over TCP loopback, on a free port
 *   sivshm-run charcount-ivshmem ...	through QEMU's ivshmem-server, which
 *					is started first (1 vector, a fresh
 *					socket and shm name, --size bytes)
 *					and stopped at the end
 *
 * ivshmem-server is $SIVSHM_IVSHMEM_SERVER, else our QEMU build's
 * (qemu-sivshm/out/bin beside the programs' directory), else from $PATH.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "charcount/charcount.h"

#define MAX_REDUCERS	63

/* How each service's processes are told where to meet. */
enum wiring { WIRE_SIVSHM, WIRE_TCP, WIRE_IVSHMEM };

struct service {
	const char *name;
	const char *mapper;
	const char *reducer;
	const char *where;	/* the option naming the meeting point */
	enum wiring wiring;
};

static const struct service services[] = {
	{ "charcount", "charcount-mapper", "charcount-reducer", "--socket",
	  WIRE_SIVSHM },
	{ "charcount-tcp", "charcount-tcp-mapper", "charcount-tcp-reducer",
	  "--port", WIRE_TCP },
	{ "charcount-ivshmem", "charcount-ivshmem-mapper",
	  "charcount-ivshmem-reducer", "--server-socket", WIRE_IVSHMEM },
};

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

/* Run @file (a path, or a name looked up in $PATH) as @argv. */
static pid_t spawn_file(const char *file, char **argv, int quiet)
{
	pid_t pid = fork();
	int fd;

	if (pid != 0)
		return pid;
	if (quiet) {
		fd = open("/dev/null", O_WRONLY);
		if (fd >= 0 && fd != STDOUT_FILENO) {
			dup2(fd, STDOUT_FILENO);
			close(fd);
		}
	}
	if (strchr(file, '/'))
		execv(file, argv);
	else
		execvp(file, argv);
	fprintf(stderr, "sivshm-run: cannot run %s: %s\n", file,
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
	fprintf(stderr, "usage: sivshm-run charcount|charcount-tcp|"
		"charcount-ivshmem --reducers N --size BYTES\n"
		"         [--mode poll|irq] [--random BYTES | --data FILE] [...]\n");
	exit(2);
}

/* A port on 127.0.0.1 that was free a moment ago, or 0. */
static int free_port(void)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = 0;

	if (fd < 0)
		return 0;
	if (!bind(fd, (struct sockaddr *)&sin, sizeof(sin)) &&
	    !getsockname(fd, (struct sockaddr *)&sin, &len))
		port = ntohs(sin.sin_port);
	close(fd);
	return port;
}

static const char *ivshmem_server_path(void)
{
	static char path[PATH_MAX + 64];
	const char *env = getenv("SIVSHM_IVSHMEM_SERVER");

	if (env && *env)
		return env;
	if (tooldir[0]) {
		snprintf(path, sizeof(path),
			 "%s/../qemu-sivshm/out/bin/ivshmem-server", tooldir);
		if (!access(path, X_OK))
			return path;
	}
	return "ivshmem-server";
}

/* Stop ivshmem-server (it removes its socket and shm) and clean up after it. */
static void stop_server(pid_t server, const char *sock, const char *shm)
{
	int status;

	if (server > 0) {
		kill(server, SIGTERM);
		for (int t = 0; t < 100; t++) {
			if (waitpid(server, &status, WNOHANG) == server)
				break;
			if (t == 99) {
				kill(server, SIGKILL);
				waitpid(server, &status, 0);
			}
			usleep(20000);
		}
	}
	unlink(sock);
	shm_unlink(shm);
}

/*
 * Start ivshmem-server in the foreground with @size bytes of shared memory
 * and 1 vector; wait until its socket is there.  Its pid, or -1.
 */
static pid_t start_server(const char *sock, const char *shm, uint64_t size)
{
	char lsize[24], *sargv[12];
	const char *bin = ivshmem_server_path();
	struct stat st;
	pid_t server;
	int n = 0, status;

	unlink(sock);
	shm_unlink(shm);
	snprintf(lsize, sizeof(lsize), "%llu", (unsigned long long)size);
	sargv[n++] = "ivshmem-server";
	sargv[n++] = "-F";
	sargv[n++] = "-S";
	sargv[n++] = (char *)sock;
	sargv[n++] = "-M";
	sargv[n++] = (char *)shm;
	sargv[n++] = "-l";
	sargv[n++] = lsize;
	sargv[n++] = "-n";
	sargv[n++] = "1";
	sargv[n] = NULL;
	server = spawn_file(bin, sargv, 1);
	if (server < 0) {
		perror("sivshm-run: fork");
		return -1;
	}
	for (int t = 0; t < 500; t++) {
		if (!stat(sock, &st) && S_ISSOCK(st.st_mode))
			return server;
		if (waitpid(server, &status, WNOHANG) == server) {
			fprintf(stderr, "sivshm-run: %s exited\n", bin);
			stop_server(-1, sock, shm);
			return -1;
		}
		usleep(10000);
	}
	fprintf(stderr, "sivshm-run: %s did not create %s\n", bin, sock);
	stop_server(server, sock, shm);
	return -1;
}

static int reducer_failed(int i, int status)
{
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	fprintf(stderr, "sivshm-run: reducer %d failed\n", i);
	return 1;
}

/*
 * Reap reducers 1..@nred; those still there 5 s after their mapper is gone
 * are stuck and killed.  1 if any failed.
 */
static int reap_reducers(pid_t *reducer, int nred)
{
	int left = nred, failed = 0, status;

	for (int t = 0; left && t < 100; t++) {
		for (int i = 1; i <= nred; i++) {
			if (reducer[i] <= 0 ||
			    waitpid(reducer[i], &status, WNOHANG) != reducer[i])
				continue;
			failed |= reducer_failed(i, status);
			reducer[i] = 0;
			left--;
		}
		if (left)
			usleep(50000);
	}
	for (int i = 1; i <= nred; i++) {
		if (reducer[i] <= 0)
			continue;
		kill(reducer[i], SIGKILL);
		waitpid(reducer[i], &status, 0);
		failed |= reducer_failed(i, status);
	}
	return failed;
}

static const struct service *find_service(const char *name)
{
	for (size_t i = 0; i < sizeof(services) / sizeof(services[0]); i++)
		if (!strcmp(name, services[i].name))
			return &services[i];
	usage();
	return NULL;
}

int main(int argc, char **argv)
{
	char sock[108], shm[64], ids[MAX_REDUCERS + 1][12];
	char *margv[argc + 4], *rargv[10];
	const char *mode = "poll", *size = NULL;
	const struct service *svc;
	pid_t mapper, server = -1, reducer[MAX_REDUCERS + 1];
	int nred = 0, i, n = 0, status, failed = 0, mlock = 0, port;

	if (argc < 2)
		usage();
	svc = find_service(argv[1]);
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--reducers") && i + 1 < argc)
			nred = atoi(argv[i + 1]);
		if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			mode = argv[i + 1];
		if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = argv[i + 1];
		if (!strcmp(argv[i], "--mlock"))
			mlock = 1;
	}
	if (nred < 1 || nred > MAX_REDUCERS)
		usage();
	find_tooldir(argv[0]);
	{
		/* Every system's ready time counts from here (charcount.h). */
		struct timespec ts;
		char t0[32];

		clock_gettime(CLOCK_MONOTONIC, &ts);
		snprintf(t0, sizeof(t0), "%llu", (unsigned long long)ts.tv_sec *
			 1000000000ULL + ts.tv_nsec);
		setenv("SIVSHM_RUN_T0", t0, 1);
	}
	snprintf(sock, sizeof(sock), "%s/sivshm-run-%d.sock",
		 getenv("XDG_RUNTIME_DIR") ? getenv("XDG_RUNTIME_DIR") : "/tmp",
		 getpid());
	snprintf(shm, sizeof(shm), "/sivshm-run-%d", getpid());
	/* For TCP the meeting point is a port, not a socket path. */
	if (svc->wiring == WIRE_TCP) {
		port = free_port();
		if (!port) {
			fprintf(stderr, "sivshm-run: no free port\n");
			return 1;
		}
		snprintf(sock, sizeof(sock), "%d", port);
	}
	if (svc->wiring == WIRE_IVSHMEM) {
		if (!size)
			usage();
		server = start_server(sock, shm, cc_parse_size(size));
		if (server < 0)
			return 1;
	}

	margv[n++] = (char *)svc->mapper;
	margv[n++] = (char *)svc->where;
	margv[n++] = sock;
	for (i = 2; i < argc; i++)
		margv[n++] = argv[i];
	margv[n] = NULL;
	mapper = spawn(margv);
	if (mapper < 0)
		perror("sivshm-run: fork");

	for (i = 1; i <= nred; i++) {
		n = 0;
		snprintf(ids[i], sizeof(ids[i]), "%d", i);
		rargv[n++] = (char *)svc->reducer;
		rargv[n++] = (char *)svc->where;
		rargv[n++] = sock;
		rargv[n++] = "--id";
		rargv[n++] = ids[i];
		if (svc->wiring != WIRE_TCP) {
			rargv[n++] = "--mode";
			rargv[n++] = (char *)mode;
		}
		if (mlock && svc->wiring == WIRE_SIVSHM)
			rargv[n++] = "--mlock";
		rargv[n] = NULL;
		reducer[i] = spawn(rargv);
		if (reducer[i] < 0) {
			perror("sivshm-run: fork");
			failed = 1;
		}
	}

	status = mapper < 0 ? 1 : wait_exit(mapper);
	failed |= reap_reducers(reducer, nred);
	if (svc->wiring == WIRE_IVSHMEM)
		stop_server(server, sock, shm);
	else if (svc->wiring == WIRE_SIVSHM)
		unlink(sock);
	return status ? status : failed;
}
