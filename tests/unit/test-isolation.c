// SPDX-License-Identifier: MIT
/*
 * Isolation: a reducer process holds no fd and no mapping that reaches
 * another slot, and the mapper's markers in the other slots never show up
 * in what it can read.  The reducer is a fresh process (forked before the
 * mapper exists, so it inherits nothing of the mapper's).
 */
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "sivshm.h"

#define NRED	3
#define ME	2
#define SIZE	(4 << 20)

static char sock_path[108], name[64];

static void marker(char *buf, size_t len, uint32_t j, int k)
{
	snprintf(buf, len, "SIVSHM-MARKER-%s-slot%u-%d", name, j, k);
}

/* The slot's memfd name is sivshm-<name>-<j> (region.c). */
static int names_other_slot(const char *s)
{
	char prefix[96];
	const char *p;

	snprintf(prefix, sizeof(prefix), "memfd:sivshm-%s-", name);
	p = strstr(s, prefix);
	return p && strtoul(p + strlen(prefix), NULL, 10) != ME;
}

static int reducer(void)
{
	struct sivshm *sh;
	struct sivshm_info info;
	char line[512], path[300], link[300], m[96];
	int seen_own = 0, mappings = 0;
	struct dirent *de;
	uint8_t *slot;
	FILE *f;
	DIR *d;

	T_EQ(sivshm_reducer_open(&sh, sock_path, ME, 1, 0, 5000), 0);
	T_EQ(sivshm_get_info(sh, &info), 0);
	slot = sivshm_slot(sh, ME);
	T_ASSERT(slot, "no own slot");
	for (uint32_t j = 0; j <= NRED; j++)
		if (j != ME)
			T_ASSERT(!sivshm_slot(sh, j), "slot %u reachable", j);

	/* Wait for the mapper's markers, then look for the others'. */
	T_EQ(sivshm_wait(sh, 0, 5000, NULL), 0);
	for (uint32_t j = 0; j <= NRED; j++) {
		for (int k = 0; k < 4; k++) {
			marker(m, sizeof(m), j, k);
			for (uint64_t off = 0; off + strlen(m) <= info.slice_size;
			     off += 4096) {
				int hit = !memcmp(slot + off, m, strlen(m));

				T_ASSERT(!hit || j == ME,
					 "slot %u's marker at %llu", j,
					 (unsigned long long)off);
				seen_own += hit;
			}
		}
	}
	T_EQ(seen_own, 4);

	/* No mapping of another slot's memfd; ours is exactly one slice. */
	f = fopen("/proc/self/maps", "r");
	T_ASSERT(f, "maps");
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		line[strcspn(line, "\n")] = '\0';
		T_ASSERT(!names_other_slot(line), "maps: %s", line);
		if (strstr(line, "memfd:sivshm-") &&
		    sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
			T_EQ(hi - lo, info.slice_size);
			mappings++;
		}
	}
	fclose(f);
	T_EQ(mappings, 1);

	/* No fd that reaches any slot: the slot fd was closed after mmap. */
	d = opendir("/proc/self/fd");
	T_ASSERT(d, "fd dir");
	while ((de = readdir(d))) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = '\0';
		T_ASSERT(!strstr(link, "memfd:sivshm-"), "fd %s -> %s",
			 de->d_name, link);
	}
	closedir(d);
	sivshm_close(sh);
	return 0;
}

int main(void)
{
	struct sivshm_mapper_opts opts = {
		.socket_path = sock_path, .name = name, .size = SIZE,
		.nreducers = NRED, .nvectors = 1,
	};
	struct sivshm_info info;
	struct sivshm *mapper;
	char m[96];
	pid_t pid;
	int status;

	snprintf(sock_path, sizeof(sock_path), "/tmp/sivshm-test-iso-%d.sock",
		 getpid());
	snprintf(name, sizeof(name), "iso%d", getpid());
	pid = fork();
	T_ASSERT(pid >= 0, "fork");
	if (pid == 0)
		exit(reducer());

	T_EQ(sivshm_mapper_open(&mapper, &opts), 0);
	T_EQ(sivshm_get_info(mapper, &info), 0);
	T_EQ(sivshm_wait_peers(mapper, 1 << ME, 5000), 0);
	for (uint32_t j = 0; j <= NRED; j++) {
		uint8_t *slot = sivshm_slot(mapper, j);

		for (int k = 0; k < 4; k++) {
			marker(m, sizeof(m), j, k);
			memcpy(slot + (info.slice_size / 4) * k, m, strlen(m));
		}
	}
	T_EQ(sivshm_notify(mapper, ME, 0), 0);
	T_EQ(waitpid(pid, &status, 0), pid);
	sivshm_close(mapper);
	unlink(sock_path);
	T_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "the reducer's checks failed (status %#x)", status);
	puts("isolation: the reducer reaches its own slot and nothing else");
	return 0;
}
