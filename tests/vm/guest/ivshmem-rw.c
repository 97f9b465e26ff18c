// SPDX-License-Identifier: GPL-2.0
/*
 * Read and write the shared memory BAR of an ivshmem-plain device from a
 * test guest, through sysfs (no driver needed).
 *
 *   ivshmem-rw write OFFSET STRING          store STRING at OFFSET
 *   ivshmem-rw wait OFFSET STRING TIMEOUT_MS  poll until STRING is there
 *
 * The multi-VM harness test runs it in two guests that share one region.
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vmtest.h"

#define IVSHMEM_VENDOR	0x1af4
#define IVSHMEM_DEVICE	0x1110

static int open_bar2(size_t *size)
{
	char dir[512], path[600];
	struct stat st;
	int fd;

	vm_find_pci(IVSHMEM_VENDOR, IVSHMEM_DEVICE, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/resource2", dir);
	fd = open(path, O_RDWR | O_SYNC);
	T_ASSERT(fd >= 0, "%s", path);
	T_ASSERT(fstat(fd, &st) == 0, "%s", path);
	*size = st.st_size;
	return fd;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t size, off, len;
	volatile char *mem;
	double deadline;
	int fd;

	T_ASSERT(argc >= 4, "usage: ivshmem-rw write|wait OFFSET STRING [TIMEOUT_MS]");
	fd = open_bar2(&size);
	off = strtoul(argv[2], NULL, 0);
	len = strlen(argv[3]);
	T_ASSERT(off < size && len <= size - off,
		 "offset %zu + %zu beyond the %zu-byte BAR", off, len, size);
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_ASSERT(mem != MAP_FAILED, "mmap resource2");

	if (!strcmp(argv[1], "write")) {
		for (size_t i = 0; i < len; i++)
			mem[off + i] = argv[3][i];
		__sync_synchronize();
		printf("wrote \"%s\" at %zu\n", argv[3], off);
		return 0;
	}

	T_ASSERT(!strcmp(argv[1], "wait") && argc == 5, "unknown command %s",
		 argv[1]);
	deadline = now() + strtoul(argv[4], NULL, 0) / 1000.0;
	for (;;) {
		size_t i;

		__sync_synchronize();
		for (i = 0; i < len && mem[off + i] == argv[3][i]; i++)
			;
		if (i == len)
			break;
		T_ASSERT(now() < deadline, "\"%s\" did not appear at %zu",
			 argv[3], off);
		usleep(10000);
	}
	printf("found \"%s\" at %zu\n", argv[3], off);
	return 0;
}
