// SPDX-License-Identifier: MIT
/*
 * No leak: 1000 reducer connect and disconnect cycles leave the mapper's fd
 * count where it started and its resident memory within 1 MiB of it.
 */
#include <unistd.h>

#include "check.h"
#include "hostile.h"
#include "sivshm.h"

#define CYCLES	1000

static void cycle(const char *path, uint32_t id, struct sivshm *mapper)
{
	struct sivshm *r;
	uint64_t peers;

	T_EQ(sivshm_reducer_open(&r, path, id, 2, 0, 2000), 0);
	sivshm_close(r);
	/* Wait until the mapper has seen the departure. */
	for (int i = 0; i < 2000; i++) {
		sivshm_peers(mapper, &peers);
		if (!(peers & (1ULL << id)))
			return;
		usleep(1000);
	}
	T_ASSERT(0, "reducer %u never left", id);
}

int main(void)
{
	char path[108];
	struct sivshm_mapper_opts opts = {
		.socket_path = path, .name = "leak", .size = 8 << 20,
		.nreducers = 7, .nvectors = 2,
	};
	struct sivshm *mapper;
	int fds0, fds1;
	long rss0, rss1;

	snprintf(path, sizeof(path), "/tmp/sivshm-test-leak-%d.sock", getpid());
	T_EQ(sivshm_mapper_open(&mapper, &opts), 0);
	/* Warm up: first-time allocations are not leaks. */
	for (uint32_t i = 0; i < 20; i++)
		cycle(path, 1 + i % 7, mapper);
	fds0 = open_fd_count();
	rss0 = rss_kib();
	for (uint32_t i = 0; i < CYCLES; i++)
		cycle(path, 1 + i % 7, mapper);
	fds1 = open_fd_count();
	rss1 = rss_kib();
	printf("after %d cycles: fds %d -> %d, RSS %ld -> %ld KiB\n", CYCLES,
	       fds0, fds1, rss0, rss1);
	T_EQ(fds1, fds0);
#if defined(__SANITIZE_ADDRESS__)
	/* ASan's quarantine holds freed memory; LeakSanitizer checks at exit. */
	puts("RSS not compared under AddressSanitizer");
#else
	T_ASSERT(rss1 - rss0 < 1024, "RSS grew by %ld KiB", rss1 - rss0);
#endif
	sivshm_close(mapper);
	unlink(path);
	return 0;
}
