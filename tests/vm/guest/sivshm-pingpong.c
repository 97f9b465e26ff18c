// SPDX-License-Identifier: MIT
/*
 * Interrupt ping-pong between a mapper VM and a reducer VM through the
 * sivshm device, counting every interrupt that reaches the program:
 *
 *   sivshm-pingpong [OPTIONS] mapper ROUNDS PEER eventfd|signal
 *   sivshm-pingpong [OPTIONS] reducer ROUNDS eventfd|signal
 *
 *   --host SOCKET  be a host process on libsivshm's host backend instead
 *                  of a guest on /dev/sivshm0 (eventfd only): a mapper
 *                  with one reducer and 8 MiB listening on SOCKET, or
 *                  reducer 1 of the mapper there
 *   --run N        which run this is (default: 0 for eventfd, 1 for
 *                  signal); both sides of a run must agree
 *   --runs K       runs N to N + K - 1, one after the other
 *
 * Strictly one interrupt is in flight at a time, so each wait must see
 * exactly one: an eventfd read returning more (or a second SIGUSR1) is a
 * spurious interrupt, a wait that times out a lost one.  After the last
 * round neither side may receive anything more.  The reducer announces
 * itself through a flag in the last 8 bytes of its slot (clear of
 * sivshm-poke's markers) before the first ping.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/sivshm.h>

#include "sivshm.h"
#include "vmtest.h"

#define READY	0x5245414459ULL		/* "READY" */

static int use_signal, is_mapper;
static sigset_t usr1;

/* Wait for one interrupt; returns how many arrived (0: none in @ms). */
static uint64_t wait_one(struct sivshm *sh, int ms)
{
	if (use_signal) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		return sigtimedwait(&usr1, NULL, &ts) == SIGUSR1 ? 1 : 0;
	} else {
		struct pollfd pfd = {
			/* A guest mapper has one fd per vector: peer 1's. */
			.fd = sivshm_eventfd(sh, is_mapper ? 1 : 0, 0),
			.events = POLLIN,
		};
		uint64_t n = 0;

		if (poll(&pfd, 1, ms) == 1)
			T_ASSERT(read(pfd.fd, &n, sizeof(n)) == sizeof(n),
				 "eventfd read");
		return n;
	}
}

static volatile uint64_t *ready_flag(struct sivshm *sh, uint32_t id,
				     const struct sivshm_info *info)
{
	char *slot = sivshm_slot(sh, id);

	T_ASSERT(slot, "no slot %u", id);
	return (volatile uint64_t *)(slot + info->slice_size - 8);
}

static void want_signals(void)
{
	struct sivshm_signal sig = { .signo = SIGUSR1, .vector_mask = 1 };
	int fd = open("/dev/sivshm0", O_RDWR);	/* kept open */

	T_ASSERT(fd >= 0, "/dev/sivshm0");
	T_ASSERT(ioctl(fd, SIVSHM_IOC_SET_SIGNAL, &sig) == 0,
		 "SET_SIGNAL");
}

static void mapper_run(struct sivshm *sh, const struct sivshm_info *info,
		       uint32_t peer, int rounds, uint64_t ready,
		       const char *mode)
{
	volatile uint64_t *flag = ready_flag(sh, peer, info);
	struct timespec t0, t1;

	for (int t = 0; __atomic_load_n(flag, __ATOMIC_ACQUIRE) != ready; t++) {
		T_ASSERT(t < 60000, "reducer %u never ready", peer);
		usleep(1000);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < rounds; i++) {
		uint64_t n;

		T_ASSERT(sivshm_notify(sh, peer, 0) == 0, "notify");
		/* as long as the reducer waits: under nested TCG a first
		 * round trip has taken more than 10 s */
		n = wait_one(sh, 60000);
		T_ASSERT(n == 1, "round %d: %llu interrupts (%s)", i,
			 (unsigned long long)n, n ? "spurious" : "lost");
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	T_ASSERT(wait_one(sh, 500) == 0, "spurious interrupt after");
	printf("pingpong %s: %d round trips, each interrupt exactly once, "
	       "%.1f us per round trip\n", mode, rounds,
	       ((t1.tv_sec - t0.tv_sec) * 1e9 +
		(t1.tv_nsec - t0.tv_nsec)) / rounds / 1e3);
}

static void reducer_run(struct sivshm *sh, const struct sivshm_info *info,
			int rounds, uint64_t ready, const char *mode)
{
	volatile uint64_t *flag = ready_flag(sh, info->id, info);

	__atomic_store_n(flag, ready, __ATOMIC_RELEASE);
	for (int i = 0; i < rounds; i++) {
		uint64_t n = wait_one(sh, 60000);

		T_ASSERT(n == 1, "round %d: %llu interrupts (%s)", i,
			 (unsigned long long)n, n ? "spurious" : "lost");
		T_ASSERT(sivshm_notify(sh, 0, 0) == 0, "notify");
	}
	T_ASSERT(wait_one(sh, 1000) == 0, "spurious interrupt after");
	printf("pingpong %s: %d interrupts, each exactly once\n", mode,
	       rounds);
}

int main(int argc, char **argv)
{
	int mapper, rounds, run = -1, runs = 1;
	const char *host = NULL, *mode;
	struct sivshm_info info;
	struct sivshm *sh;
	uint32_t peer = 0;

	for (; argc > 2 && !strncmp(argv[1], "--", 2); argc -= 2, argv += 2) {
		if (!strcmp(argv[1], "--host"))
			host = argv[2];
		else if (!strcmp(argv[1], "--run"))
			run = atoi(argv[2]);
		else if (!strcmp(argv[1], "--runs"))
			runs = atoi(argv[2]);
		else
			T_ASSERT(0, "unknown option %s", argv[1]);
	}
	T_ASSERT(argc >= 4, "usage: sivshm-pingpong [--host SOCKET] "
		 "[--run N] [--runs N] mapper|reducer ROUNDS [PEER] "
		 "eventfd|signal");
	mapper = is_mapper = !strcmp(argv[1], "mapper");
	rounds = atoi(argv[2]);
	if (mapper)
		peer = strtoul(argv[3], NULL, 0);
	mode = argv[argc - 1];
	use_signal = !strcmp(mode, "signal");
	T_ASSERT(!host || !use_signal, "a host process has no SIGUSR1 path");
	if (run < 0)
		run = use_signal;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	if (!host) {
		T_ASSERT(sivshm_device_open(&sh, "/dev/sivshm0", 0) == 0,
			 "open");
	} else if (mapper) {
		struct sivshm_mapper_opts opts = {
			.socket_path = host, .name = "pingpong",
			.size = 8 << 20, .nreducers = 1, .nvectors = 1,
		};

		T_ASSERT(sivshm_mapper_open(&sh, &opts) == 0, "mapper on %s",
			 host);
	} else {
		T_ASSERT(sivshm_reducer_open(&sh, host, 1, 1, 0, 60000) == 0,
			 "reducer 1 of %s", host);
	}
	sivshm_get_info(sh, &info);
	if (use_signal)
		want_signals();

	/* Each run has its own ready value, so runs can follow. */
	for (int r = run; r < run + runs; r++) {
		if (mapper)
			mapper_run(sh, &info, peer, rounds, READY + r, mode);
		else
			reducer_run(sh, &info, rounds, READY + r, mode);
	}
	sivshm_close(sh);
	return 0;
}
