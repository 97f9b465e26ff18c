// SPDX-License-Identifier: GPL-2.0
/*
 * mmio-map VENDOR DEVICE BAR: map the first page of a PCI device's memory
 * BAR through sysfs (resourceBAR, no driver needed), as a user-space
 * driver does, read its first word and store it back, and print the
 * BAR's bus address: "mmio-map: bar at 0x..., read 0x...".  The mapping
 * puts a leaf entry for a frame that is no RAM into a user L1 table.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmtest.h"

int main(int argc, char **argv)
{
	unsigned long long start = 0;
	char dir[512], path[600];
	volatile uint32_t *p;
	uint32_t v;
	FILE *f;
	int fd;

	T_ASSERT(argc == 4, "usage: mmio-map VENDOR DEVICE BAR (hex, hex, 0-5)");
	vm_find_pci(strtoul(argv[1], NULL, 16), strtoul(argv[2], NULL, 16),
		    dir, sizeof(dir));
	/* sysfs resource: one "start end flags" line per BAR */
	snprintf(path, sizeof(path), "%s/resource", dir);
	f = fopen(path, "r");
	T_ASSERT(f, "%s", path);
	for (int bar = atoi(argv[3]); bar >= 0; bar--)
		T_ASSERT(fscanf(f, "%llx %*x %*x", &start) == 1, "%s", path);
	fclose(f);
	snprintf(path, sizeof(path), "%s/resource%s", dir, argv[3]);
	fd = open(path, O_RDWR | O_SYNC);
	T_ASSERT(fd >= 0, "%s", path);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_ASSERT(p != MAP_FAILED, "mmap %s", path);
	v = p[0];
	p[0] = v;
	T_ASSERT(!munmap((void *)p, 4096), "munmap");
	close(fd);
	printf("mmio-map: bar at %#llx, read %#x\n", start, v);
	return 0;
}
