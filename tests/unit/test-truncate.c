// SPDX-License-Identifier: MIT
/*
 * Truncation: the slot fd a reducer receives is sealed, with no backing
 * dir, with one, and in the persistent mode; ftruncate fails in every one,
 * and the mapper, reading and writing the whole slot afterwards, does not
 * crash.
 */
#include <fcntl.h>
#include <limits.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "check.h"
#include "client.h"
#include "fds.h"
#include "sivshm.h"

/* A mapper with @dir (NULL: none), persistent or not, hands out only
 * sealed slots. */
static void sealed(const char *dir, uint32_t flags)
{
	char path[108], reason[PROTO_REASON_LEN];
	struct sivshm_mapper_opts opts = {
		.socket_path = path, .name = "truncate", .size = 1 << 20,
		.nreducers = 1, .nvectors = 1, .dir = dir, .flags = flags,
	};
	int efd, fds[PROTO_MAX_FDS], sock, seals;
	struct proto_msg w;
	struct sivshm *mapper;
	struct sivshm_info info;
	volatile uint8_t *slot;
	uint64_t sum = 0;

	snprintf(path, sizeof(path), "/tmp/sivshm-test-trunc-%d.sock", getpid());
	T_EQ(sivshm_mapper_open(&mapper, &opts), 0);
	T_EQ(sivshm_get_info(mapper, &info), 0);

	efd = eventfd(0, EFD_CLOEXEC);
	sock = proto_client_connect(path, 2000);
	T_ASSERT(sock >= 0, "connect");
	T_EQ(proto_client_hello(sock, 1, 1, &efd, 2000, &w, fds, reason,
				sizeof(reason)), 0);

	seals = fcntl(fds[0], F_GET_SEALS);
	T_ASSERT(seals >= 0, "F_GET_SEALS: %s", strerror(errno));
	T_ASSERT((seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) ==
		 (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), "seals %#x", seals);
	T_ASSERT(ftruncate(fds[0], 0) < 0 && errno == EPERM,
		 "shrinking the slot did not fail with EPERM");
	T_ASSERT(ftruncate(fds[0], info.slice_size * 2) < 0 && errno == EPERM,
		 "growing the slot did not fail with EPERM");
	T_ASSERT(fcntl(fds[0], F_ADD_SEALS, F_SEAL_WRITE) < 0,
		 "the reducer could add a write seal");

	/* The mapper touches every byte of that slot: no SIGBUS. */
	slot = sivshm_slot(mapper, 1);
	for (uint64_t i = 0; i < info.slice_size; i++) {
		slot[i] = (uint8_t)i;
		sum += slot[i];
	}
	T_ASSERT(sum > 0, "slot not written");

	proto_close_fds(fds, 2);
	close(sock);
	close(efd);
	sivshm_close(mapper);
	unlink(path);
	printf("truncate: %s%s%s: sealed; the mapper survived\n",
	       dir ? "backing dir " : "memfds", dir ? dir : "",
	       flags & SIVSHM_PERSIST ? ", persistent" : "");
}

int main(void)
{
	char dir[] = "/dev/shm/sivshm-test-trunc-XXXXXX";

	sealed(NULL, 0);
	T_ASSERT(mkdtemp(dir), "mkdtemp");
	sealed(dir, 0);
	/* Nothing was left in it: the slots were never named files. */
	T_EQ(rmdir(dir), 0);
	/* The persistent mode keeps files, but hands out no file a reducer
	 * could shrink. */
	strcpy(dir, "/dev/shm/sivshm-test-trunc-XXXXXX");
	T_ASSERT(mkdtemp(dir), "mkdtemp");
	sealed(dir, SIVSHM_PERSIST);
	for (int j = 0; j <= 1; j++) {
		char file[PATH_MAX];

		snprintf(file, sizeof(file), "%s/truncate.slot%d", dir, j);
		T_EQ(unlink(file), 0);
	}
	T_EQ(rmdir(dir), 0);
	return 0;
}
