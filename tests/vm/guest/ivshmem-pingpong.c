// SPDX-License-Identifier: MIT
/*
 * Interrupt ping-pong between two guests through QEMU's ivshmem-doorbell
 * device, driven from user space by the kernel's vfio-pci, counting every
 * interrupt that reaches the program: the baseline of sivshm-pingpong.
 *
 *   ivshmem-pingpong ping ROUNDS [RUN]   ring the peer, wait for its answer
 *   ivshmem-pingpong pong ROUNDS [RUN]   wait for a ring, answer it
 *
 * Runs that follow each other in one boot must differ in RUN (0, 1, ...):
 * the ready flags stay in the shared memory.
 *
 * The device must be bound to vfio-pci first (echo "1af4 1110" >
 * /sys/bus/pci/drivers/vfio-pci/new_id) under a guest IOMMU.  vfio-pci
 * and not uio_pci_generic: since QEMU 4.0 ivshmem-doorbell raises MSI-X
 * only (no interrupt pin, no msi=off), and uio_pci_generic handles INTx
 * only; it binds, but read() on /dev/uioN fails with EIO.
 *
 * MSI-X vector 0 is routed to an eventfd (VFIO_DEVICE_SET_IRQS); BAR0 (the
 * registers) and BAR2 (the shared memory) are mapped through the device
 * fd.  Each side publishes its IVPosition and a ready flag in BAR2 once
 * its interrupt is set up; a doorbell is a store of (peer << 16 | 0) to
 * BAR0's Doorbell register, with no system call.
 *
 * Strictly one interrupt is in flight at a time, so each wait must see
 * exactly one: an eventfd count above 1 is a spurious interrupt, a wait
 * that times out a lost one.  After the last round neither side may
 * receive anything more.
 */
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/pci_regs.h>
#include <linux/vfio.h>

#include "vmtest.h"

#define IVSHMEM_VENDOR	0x1af4
#define IVSHMEM_DEVICE	0x1110

/* BAR0 registers (QEMU's docs/specs/ivshmem-spec.txt), 32 bits each. */
#define IVSHMEM_IVPOSITION	(0x8 / 4)
#define IVSHMEM_DOORBELL	(0xc / 4)

#define READY	0x5245414459ULL		/* "READY" */

/* At the start of BAR2: one entry per side, ping's first. */
struct side {
	uint64_t ready;
	uint32_t id;
	uint32_t pad;
};

struct dev {
	int fd;
	int efd;
	volatile uint32_t *regs;
	struct side *sides;
};

static void find_device(char *bdf, size_t len, int *group)
{
	char dir[512], path[600], link[PATH_MAX];
	ssize_t n;

	vm_find_pci(IVSHMEM_VENDOR, IVSHMEM_DEVICE, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/iommu_group", dir);
	snprintf(bdf, len, "%s", strrchr(dir, '/') + 1);
	n = readlink(path, link, sizeof(link) - 1);
	T_ASSERT(n > 0, "iommu_group (no guest IOMMU?)");
	link[n] = '\0';
	*group = atoi(basename(link));
}

static void *map_region(int fd, unsigned int index, size_t min)
{
	struct vfio_region_info reg = { .argsz = sizeof(reg), .index = index };
	void *p;

	T_ASSERT(ioctl(fd, VFIO_DEVICE_GET_REGION_INFO, &reg) == 0,
		 "VFIO_DEVICE_GET_REGION_INFO");
	T_ASSERT(reg.flags & VFIO_REGION_INFO_FLAG_MMAP,
		 "region %u cannot be mapped", index);
	T_ASSERT(reg.size >= min, "region %u: %llu bytes, want %zu", index,
		 (unsigned long long)reg.size, min);
	p = mmap(NULL, reg.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 reg.offset);
	T_ASSERT(p != MAP_FAILED, "mmap region");
	return p;
}

/* MSI-X writes are DMA: QEMU drops them unless the device is bus master. */
static void set_bus_master(int fd)
{
	struct vfio_region_info reg = {
		.argsz = sizeof(reg),
		.index = VFIO_PCI_CONFIG_REGION_INDEX,
	};
	uint16_t cmd;

	T_ASSERT(ioctl(fd, VFIO_DEVICE_GET_REGION_INFO, &reg) == 0,
		 "config region");
	T_ASSERT(pread(fd, &cmd, sizeof(cmd), reg.offset + PCI_COMMAND)
		 == sizeof(cmd), "read PCI_COMMAND");
	cmd |= PCI_COMMAND_MASTER;
	T_ASSERT(pwrite(fd, &cmd, sizeof(cmd), reg.offset + PCI_COMMAND)
		 == sizeof(cmd), "write PCI_COMMAND");
}

/* MSI-X vector 0 to an eventfd. */
static int set_irq(int fd)
{
	struct vfio_irq_info irq = {
		.argsz = sizeof(irq),
		.index = VFIO_PCI_MSIX_IRQ_INDEX,
	};
	char buf[sizeof(struct vfio_irq_set) + sizeof(int32_t)];
	struct vfio_irq_set *set = (struct vfio_irq_set *)buf;
	int32_t efd;

	T_ASSERT(ioctl(fd, VFIO_DEVICE_GET_IRQ_INFO, &irq) == 0,
		 "VFIO_DEVICE_GET_IRQ_INFO");
	T_ASSERT(irq.count >= 1 && (irq.flags & VFIO_IRQ_INFO_EVENTFD),
		 "no MSI-X vector to signal an eventfd");
	efd = eventfd(0, EFD_CLOEXEC);
	T_ASSERT(efd >= 0, "eventfd");
	set->argsz = sizeof(buf);
	set->flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
	set->index = VFIO_PCI_MSIX_IRQ_INDEX;
	set->start = 0;
	set->count = 1;
	memcpy(set->data, &efd, sizeof(efd));
	T_ASSERT(ioctl(fd, VFIO_DEVICE_SET_IRQS, set) == 0,
		 "VFIO_DEVICE_SET_IRQS");
	return efd;
}

static void open_device(struct dev *dev)
{
	struct vfio_group_status status = { .argsz = sizeof(status) };
	char bdf[NAME_MAX + 1], path[64];
	int container, group, gid;

	find_device(bdf, sizeof(bdf), &gid);
	container = open("/dev/vfio/vfio", O_RDWR);
	T_ASSERT(container >= 0, "/dev/vfio/vfio");
	T_ASSERT(ioctl(container, VFIO_GET_API_VERSION) == VFIO_API_VERSION,
		 "unknown VFIO API version");
	T_ASSERT(ioctl(container, VFIO_CHECK_EXTENSION, VFIO_TYPE1_IOMMU) == 1,
		 "no type 1 IOMMU");
	snprintf(path, sizeof(path), "/dev/vfio/%d", gid);
	group = open(path, O_RDWR);
	T_ASSERT(group >= 0, "%s", path);
	T_ASSERT(ioctl(group, VFIO_GROUP_GET_STATUS, &status) == 0,
		 "VFIO_GROUP_GET_STATUS");
	T_ASSERT(status.flags & VFIO_GROUP_FLAGS_VIABLE,
		 "group %d is not viable (%s not bound to vfio-pci?)", gid,
		 bdf);
	T_ASSERT(ioctl(group, VFIO_GROUP_SET_CONTAINER, &container) == 0,
		 "VFIO_GROUP_SET_CONTAINER");
	T_ASSERT(ioctl(container, VFIO_SET_IOMMU, VFIO_TYPE1_IOMMU) == 0,
		 "VFIO_SET_IOMMU");
	dev->fd = ioctl(group, VFIO_GROUP_GET_DEVICE_FD, bdf);
	T_ASSERT(dev->fd >= 0, "VFIO_GROUP_GET_DEVICE_FD");

	dev->regs = map_region(dev->fd, VFIO_PCI_BAR0_REGION_INDEX, 16);
	dev->sides = map_region(dev->fd, VFIO_PCI_BAR2_REGION_INDEX,
				2 * sizeof(struct side));
	set_bus_master(dev->fd);
	dev->efd = set_irq(dev->fd);
}

/* Wait for interrupts; returns how many arrived (0: none in @ms). */
static uint64_t wait_one(struct dev *dev, int ms)
{
	struct pollfd pfd = { .fd = dev->efd, .events = POLLIN };
	uint64_t n = 0;
	int ret;

	ret = poll(&pfd, 1, ms);
	T_ASSERT(ret >= 0, "poll");
	if (ret == 1)
		T_ASSERT(read(dev->efd, &n, sizeof(n)) == sizeof(n),
			 "eventfd read");
	return n;
}

static void ring(struct dev *dev, uint32_t peer)
{
	dev->regs[IVSHMEM_DOORBELL] = peer << 16;
}

int main(int argc, char **argv)
{
	struct dev dev;
	struct side *me, *other;
	uint32_t peer;
	int ping, rounds;
	uint64_t ready;
	struct timespec t0, t1;

	T_ASSERT((argc == 3 || argc == 4) && (!strcmp(argv[1], "ping") ||
					      !strcmp(argv[1], "pong")),
		 "usage: ivshmem-pingpong ping|pong ROUNDS [RUN]");
	ping = !strcmp(argv[1], "ping");
	rounds = atoi(argv[2]);
	T_ASSERT(rounds > 0, "bad ROUNDS %s", argv[2]);
	ready = READY + (argc == 4 ? strtoul(argv[3], NULL, 0) : 0);

	open_device(&dev);
	me = &dev.sides[ping ? 0 : 1];
	other = &dev.sides[ping ? 1 : 0];
	me->id = dev.regs[IVSHMEM_IVPOSITION];
	__atomic_store_n(&me->ready, ready, __ATOMIC_RELEASE);
	for (int t = 0; __atomic_load_n(&other->ready, __ATOMIC_ACQUIRE) != ready;
	     t++) {
		T_ASSERT(t < 120000, "peer never ready");
		usleep(1000);
	}
	peer = other->id;
	T_ASSERT(peer != me->id, "peer has our id %u", peer);

	if (ping) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = 0; i < rounds; i++) {
			uint64_t n;

			ring(&dev, peer);
			n = wait_one(&dev, 10000);
			T_ASSERT(n == 1, "round %d: %llu interrupts (%s)", i,
				 (unsigned long long)n, n ? "spurious" : "lost");
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		T_ASSERT(wait_one(&dev, 500) == 0, "spurious interrupt after");
		printf("pingpong vfio: %d round trips, each interrupt exactly "
		       "once, %.1f us per round trip\n", rounds,
		       ((t1.tv_sec - t0.tv_sec) * 1e9 +
			(t1.tv_nsec - t0.tv_nsec)) / rounds / 1e3);
	} else {
		for (int i = 0; i < rounds; i++) {
			uint64_t n = wait_one(&dev, 60000);

			T_ASSERT(n == 1, "round %d: %llu interrupts (%s)", i,
				 (unsigned long long)n, n ? "spurious" : "lost");
			ring(&dev, peer);
		}
		T_ASSERT(wait_one(&dev, 1000) == 0, "spurious interrupt after");
		printf("pingpong vfio: %d interrupts, each exactly once\n",
		       rounds);
	}
	return 0;
}
