// SPDX-License-Identifier: MIT
/*
 * DMA confinement of kvm_pagetype.ko, coarse mode, with QEMU's edu device
 * as the attacker's device, driven from this program (level 1 user space)
 * through its BAR and unbound from any driver.  Level 1 runs on q35 with
 * an emulated VT-d (intel_iommu=on) and edu alone in its IOMMU group.
 *
 *   pagetype-dma [TEST...]     (default: all; "list" prints the names)
 *
 * Every edu transfer here is T_LEN bytes from the start of its buffer
 * (edu.h).
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>
#include <sys/syscall.h>

#include "edu.h"
#include "kvmtest.h"

#define R(x)	KVM_PAGETYPE_R_##x
#define OP(x)	KVM_PAGETYPE_OP_##x

#define T_LEN		256
#define F_WRITABLE	0x40	/* frames free in kvmtest's layout */
#define F_SOURCE	0x41
#define F_SEMI		0x42
#define F_TABLE		0x100	/* not mapped by the user L1 */

/* Fill edu's buffer with pattern, by DMA from the writable F_SOURCE. */
static void edu_load(struct kt_vm *vm, uint8_t pattern)
{
	memset(kt_frame(vm, F_SOURCE), pattern, T_LEN);
	edu_dma(F_SOURCE * KT_PAGE, EDU_BUF, T_LEN, false);
}

/* Whether the first T_LEN bytes of frame gfn are all pattern. */
static bool frame_is(struct kt_vm *vm, uint64_t gfn, uint8_t pattern)
{
	const uint8_t *p = (const uint8_t *)kt_frame(vm, gfn);
	int i;

	for (i = 0; i < T_LEN; i++)
		if (p[i] != pattern)
			return false;
	return true;
}

/* edu's buffer, loaded with pattern, written to frame gfn: did it land? */
static bool dma_lands(struct kt_vm *vm, uint64_t gfn, uint8_t pattern)
{
	edu_load(vm, pattern);
	edu_dma(EDU_BUF, gfn * KT_PAGE, T_LEN, true);
	return frame_is(vm, gfn, pattern);
}

/*
 * Pages pinned with FOLL_PIN in the whole of level 1, from /proc/vmstat:
 * acquired minus released, independent of the module's own count.  The
 * per-CPU deltas are folded in first (stat_refresh): without that the
 * counters lag by up to a per-CPU threshold.
 */
static long long foll_pinned(void)
{
	long long acquired = -1, released = -1, v;
	char name[64];
	FILE *f;
	int fd;

	fd = open("/proc/sys/vm/stat_refresh", O_WRONLY);
	T_ASSERT(fd >= 0, "open stat_refresh");
	T_EQ(write(fd, "1", 1), 1);
	close(fd);
	f = fopen("/proc/vmstat", "r");
	T_ASSERT(f, "/proc/vmstat");
	while (fscanf(f, "%63s %lld", name, &v) == 2) {
		if (!strcmp(name, "nr_foll_pin_acquired"))
			acquired = v;
		else if (!strcmp(name, "nr_foll_pin_released"))
			released = v;
	}
	fclose(f);
	T_ASSERT(acquired >= 0 && released >= 0, "no FOLL_PIN counters");
	return acquired - released;
}

/* The module's totals, from a file with no VM. */
static void global_stats(struct kvm_pagetype_stats *s)
{
	struct kvm_pagetype_get_stats g = { .flags = KVM_PAGETYPE_STATS_GLOBAL };
	int fd = open("/dev/kvm-pagetype", O_RDWR);

	T_ASSERT(fd >= 0, "open");
	T_EQ(ioctl(fd, KVM_PAGETYPE_GET_STATS, &g), 0);
	close(fd);
	*s = g.stats;
}

/* Confine d; edu's bus mastering back on (a release turned it off). */
static int confine(int fd, struct kvm_pagetype_dma_device d)
{
	if (ioctl(fd, KVM_PAGETYPE_DMA_CONFINE, &d))
		return -errno;
	if (!memcmp(&d, &edu, sizeof(d)))
		edu_bus_master();
	return 0;
}

static void write_str(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);

	T_ASSERT(fd >= 0, "open %s", path);
	T_EQ(write(fd, val, strlen(val)), (ssize_t)strlen(val));
	close(fd);
}

/* edu bound to pci-stub, which manages DMA itself (as vfio-pci), or not. */
static void edu_stub(bool bind)
{
	char path[256];

	snprintf(path, sizeof(path), SYSPCI "/%s/driver_override", edu_name);
	if (bind) {
		write_str(path, "pci-stub");
		write_str("/sys/bus/pci/drivers_probe", edu_name);
		T_ASSERT(has_driver(edu_name), "edu not bound to pci-stub");
	} else {
		write_str("/sys/bus/pci/drivers/pci-stub/unbind", edu_name);
		write_str(path, "\n");
		T_ASSERT(!has_driver(edu_name), "edu still has a driver");
	}
}

/* CAP_SYS_ADMIN in the effective set, or out of it. */
static void sys_admin(bool on)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct c[2];

	T_EQ(syscall(SYS_capget, &h, c), 0);
	if (on)
		c[0].effective |= 1U << CAP_SYS_ADMIN;
	else
		c[0].effective &= ~(1U << CAP_SYS_ADMIN);
	T_EQ(syscall(SYS_capset, &h, c), 0);
}

static int release(int fd, struct kvm_pagetype_dma_device d)
{
	return ioctl(fd, KVM_PAGETYPE_DMA_RELEASE, &d) ? -errno : 0;
}

static void new_vm(struct kt_vm *vm)
{
	kt_vm_new(vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
}

KVMTEST(refusals)
{
	struct kvm_pagetype_dma_device d;
	struct kt_vm vm, other;
	char name[32];
	int fd;

	fd = open("/dev/kvm-pagetype", O_RDWR);
	T_ASSERT(fd >= 0, "open");
	T_EQ(confine(fd, edu), -ENOENT);	/* nothing attached */
	close(fd);

	new_vm(&vm);
	d = edu;
	d.pad = 1;
	T_EQ(confine(vm.pt_fd, d), -EINVAL);
	d = edu;
	d.flags = 1;
	T_EQ(confine(vm.pt_fd, d), -EINVAL);
	d = edu;
	d.segment = 0x10000;
	T_EQ(confine(vm.pt_fd, d), -EINVAL);
	d = edu;
	d.bus = 0xfe;
	T_EQ(confine(vm.pt_fd, d), -ENODEV);
	T_EQ(release(vm.pt_fd, edu), -ENOENT);	/* not confined */
	if (find_device(1, name, sizeof(name))) {
		T_EQ(confine(vm.pt_fd, kt_pci_addr(name)), -EINVAL);
		printf("# %s shares its IOMMU group: refused\n", name);
	} else {
		printf("# no device shares an IOMMU group here: not tried\n");
	}
	if (find_device(2, name, sizeof(name))) {
		T_EQ(confine(vm.pt_fd, kt_pci_addr(name)), -EPERM);
		T_ASSERT(has_driver(name), "%s lost its driver", name);
		printf("# %s has a driver: refused\n", name);
	} else {
		printf("# no device with a driver alone in a group: not tried\n");
	}
	/* Endpoints only; no driver, not even one that manages DMA itself. */
	T_ASSERT(find_device(3, name, sizeof(name)), "no bridge alone");
	T_EQ(confine(vm.pt_fd, kt_pci_addr(name)), -EINVAL);
	edu_stub(true);
	T_EQ(confine(vm.pt_fd, edu), -EPERM);
	edu_stub(false);
	/* A host device given to a VM: CAP_SYS_ADMIN, not the node's mode. */
	sys_admin(false);
	T_EQ(confine(vm.pt_fd, edu), -EPERM);
	sys_admin(true);

	/* GET_STATS of the size ABI 1 had before the dma_* fields. */
	{
		size_t v1 = offsetof(struct kvm_pagetype_get_stats,
				     stats.dma_maps);
		struct kvm_pagetype_get_stats g;

		memset(&g, 0xff, sizeof(g));
		g.flags = 0;
		g.pad = 0;
		T_EQ(ioctl(vm.pt_fd, _IOC(_IOC_READ | _IOC_WRITE,
					  KVM_PAGETYPE_IOC_MAGIC, 0x03, v1),
			   &g), 0);
		T_EQ(g.stats.vms, 1);
		T_EQ(g.stats.dma_maps, ~0ULL);	/* not written */
	}

	/* One device per VM, one VM per device. */
	T_EQ(confine(vm.pt_fd, edu), 0);
	T_EQ(confine(vm.pt_fd, edu), -EBUSY);
	new_vm(&other);
	T_EQ(confine(other.pt_fd, edu), -EPERM);
	kt_vm_destroy(&other);
	T_ASSERT(edu_is_master(), "edu is no bus master while confined");
	T_EQ(release(vm.pt_fd, edu), 0);
	/* quiesced before the host's domain took it back */
	T_ASSERT(!edu_is_master(), "edu still a bus master after release");
	T_EQ(release(vm.pt_fd, edu), -ENOENT);
	kt_vm_destroy(&vm);
}

/*
 * Coarse mode: DMA lands in writable frames only; a pin unmaps and
 * flushes before it returns, an unpin maps again; the counters say so.
 */
KVMTEST(coarse)
{
	struct kvm_pagetype_stats s0, s;
	long long pinned0;
	struct kt_vm vm;

	new_vm(&vm);
	pinned0 = foll_pinned();
	kt_stats(&vm, false, &s0);
	T_EQ(confine(vm.pt_fd, edu), 0);
	kt_stats(&vm, false, &s);
	T_EQ(s.dma_devices, 1);
	T_EQ(s.dma_pinned, 1024);
	T_EQ(s.dma_maps - s0.dma_maps, 1024);	/* every frame writable */
	/* The kernel's own count agrees, and goes back on release (below). */
	T_EQ(foll_pinned() - pinned0, 1024);

	/* A writable frame: the write lands, through the IOMMU. */
	T_ASSERT(dma_lands(&vm, F_WRITABLE, 0xa1), "DMA to a writable frame");
	printf("# DMA write to writable gfn %#x landed\n", F_WRITABLE);

	/*
	 * Pinned as a table: unmapped, one flush, and DMA bounces, also
	 * after a DMA just before the pin left a translation in the IOTLB.
	 */
	T_ASSERT(dma_lands(&vm, F_TABLE, 0x9f), "DMA before the pin");
	memset(kt_frame(&vm, F_TABLE), 0, KT_PAGE);
	kt_stats(&vm, false, &s0);
	T_EQ(kt_op(&vm, OP(PIN_L1), F_TABLE), R(OK));
	kt_stats(&vm, false, &s);
	T_EQ(s.dma_unmaps - s0.dma_unmaps, 1);
	T_EQ(s.dma_flushes - s0.dma_flushes, 1);
	T_EQ(s.dma_maps - s0.dma_maps, 0);
	T_ASSERT(!dma_lands(&vm, F_TABLE, 0xb2), "DMA reached a table");
	T_ASSERT(frame_is(&vm, F_TABLE, 0), "table frame changed");
	T_EQ(kt_query(&vm, F_TABLE) >> KVM_PAGETYPE_TYPE_SHIFT,
	     KVM_PAGETYPE_L1);
	printf("# DMA write to L1 table gfn %#x did not land\n", F_TABLE);

	/* Unpinned: mapped again, and DMA lands. */
	kt_stats(&vm, false, &s0);
	T_EQ(kt_op(&vm, OP(UNPIN), F_TABLE), R(OK));
	kt_stats(&vm, false, &s);
	T_EQ(s.dma_maps - s0.dma_maps, 1);
	T_EQ(s.dma_unmaps - s0.dma_unmaps, 0);
	T_EQ(s.dma_flushes - s0.dma_flushes, 0);
	T_ASSERT(dma_lands(&vm, F_TABLE, 0xc3), "DMA after unpin");
	printf("# after unpin, DMA to gfn %#x landed\n", F_TABLE);

	/* Semi-writable is CPU-writable but not DMA-writable. */
	kt_stats(&vm, false, &s0);
	T_EQ(kt_op(&vm, OP(TO_SEMI), F_SEMI), R(OK));
	kt_stats(&vm, false, &s);
	T_EQ(s.dma_unmaps - s0.dma_unmaps, 1);
	T_EQ(s.dma_flushes - s0.dma_flushes, 1);
	T_ASSERT(!dma_lands(&vm, F_SEMI, 0xd4), "DMA reached a semi frame");
	T_EQ(kt_op(&vm, OP(TO_WRITABLE), F_SEMI), R(OK));
	T_ASSERT(dma_lands(&vm, F_SEMI, 0xe5), "DMA after to_writable");
	printf("# semi-writable gfn %#x: DMA refused, then landed once writable\n",
	       F_SEMI);

	/* The source of every load is writable: reads work too. */
	kt_stats(&vm, false, &s);
	printf("# dma_maps %llu dma_unmaps %llu dma_flushes %llu dma_pinned %llu\n",
	       (unsigned long long)s.dma_maps,
	       (unsigned long long)s.dma_unmaps,
	       (unsigned long long)s.dma_flushes,
	       (unsigned long long)s.dma_pinned);

	/* Reset maps back what a table or semi frame had taken. */
	memset(kt_frame(&vm, F_TABLE), 0, KT_PAGE);	/* DMA filled it */
	T_EQ(kt_op(&vm, OP(PIN_L1), F_TABLE), R(OK));
	T_EQ(kt_op(&vm, OP(TO_SEMI), F_SEMI), R(OK));
	kt_stats(&vm, false, &s0);
	T_EQ(ioctl(vm.pt_fd, KVM_PAGETYPE_RESET), 0);
	kt_stats(&vm, false, &s);
	T_EQ(s.dma_maps - s0.dma_maps, 2);
	T_ASSERT(dma_lands(&vm, F_TABLE, 0xf6), "DMA after reset");

	T_EQ(release(vm.pt_fd, edu), 0);
	kt_stats(&vm, false, &s);
	T_EQ(s.dma_devices, 0);
	T_EQ(s.dma_pinned, 0);
	T_EQ(foll_pinned(), pinned0);
	kt_vm_destroy(&vm);
}

/* Closing everything, or taking a memslot away, releases the device. */
KVMTEST(lifetimes)
{
	struct kvm_userspace_memory_region gone = { .slot = 0 };
	long long pinned0 = foll_pinned();
	struct kvm_pagetype_stats s;
	struct kt_vm vm, probe;
	long long vm0;

	new_vm(&vm);
	vm0 = foll_pinned();
	printf("# FOLL_PIN pages: %lld before the VM, %lld with it\n",
	       pinned0, vm0);
	T_EQ(confine(vm.pt_fd, edu), 0);
	T_EQ(kt_op(&vm, OP(PIN_L1), F_TABLE), R(OK));
	T_EQ(foll_pinned() - vm0, 1024);
	kt_vm_destroy(&vm);			/* no release */
	T_EQ(foll_pinned(), pinned0);

	new_vm(&vm);
	vm0 = foll_pinned();
	kt_stats(&vm, true, &s);
	T_EQ(s.dma_pinned, 0);
	T_EQ(s.dma_devices, 0);
	T_EQ(confine(vm.pt_fd, edu), 0);	/* the close released it */
	T_EQ(ioctl(vm.vm_fd, KVM_SET_USER_MEMORY_REGION, &gone), 0);
	kt_stats(&vm, false, &s);
	T_EQ(s.dma_devices, 0);
	T_EQ(s.dma_pinned, 0);
	T_EQ(s.kills, 0);			/* no table was there */
	T_EQ(foll_pinned(), vm0);
	kt_vm_destroy(&vm);

	new_vm(&probe);
	T_EQ(confine(probe.pt_fd, edu), 0);
	T_ASSERT(dma_lands(&probe, F_WRITABLE, 0x17), "DMA in a new VM");
	kt_vm_destroy(&probe);
	global_stats(&s);
	T_EQ(s.dma_pinned, 0);
	T_EQ(s.dma_devices, 0);
	T_EQ(s.vms, 0);
	T_EQ(foll_pinned(), pinned0);
}

/*
 * 64 pins of scattered frames in one batch, coarse mode: 64 unmaps and 64
 * IOTLB flushes, and 64 maps to unpin them.  The frames (from 4 MiB up)
 * exist only in this VM, so level 0's QEMU sees exactly three IOTLB
 * invalidations of each (map, pin, unpin): pagetype-dma.py counts them.
 */
#define F_SCATTER	0x400
#define NR_SCATTER	64

/* Run one op on each of NR_SCATTER frames from first, step 2, in a batch. */
static void scatter_batch(struct kt_vm *vm, uint16_t code, uint64_t first)
{
	struct kvm_pagetype_op ops[NR_SCATTER];
	int i;

	for (i = 0; i < NR_SCATTER; i++)
		ops[i] = (struct kvm_pagetype_op){
			.code = code, .arg = first + 2 * i,
		};
	kt_batch_all(vm, ops, NR_SCATTER);
	for (i = 0; i < NR_SCATTER; i++)
		T_EQ(ops[i].result, R(OK));
}

KVMTEST(flushes)
{
	struct kvm_pagetype_op ops[NR_SCATTER];
	struct kvm_pagetype_stats s0, s;
	struct kt_vm vm;
	int i;

	kt_vm_new(&vm, 8 << 20, 0);
	T_EQ(confine(vm.pt_fd, edu), 0);
	kt_stats(&vm, false, &s0);
	T_EQ(s0.dma_pinned, 2048);
	scatter_batch(&vm, OP(PIN_L1), F_SCATTER);
	kt_stats(&vm, false, &s);
	T_EQ(s.dma_unmaps - s0.dma_unmaps, NR_SCATTER);
	T_EQ(s.dma_flushes - s0.dma_flushes, NR_SCATTER);
	T_EQ(s.dma_maps - s0.dma_maps, 0);
	T_ASSERT(!dma_lands(&vm, F_SCATTER + 2 * 7, 0x29), "DMA to a table");

	s0 = s;
	for (i = 0; i < NR_SCATTER; i++)
		ops[i] = (struct kvm_pagetype_op){
			.code = OP(UNPIN), .arg = F_SCATTER + 2 * i,
		};
	kt_batch_all(&vm, ops, NR_SCATTER);
	kt_stats(&vm, false, &s);
	T_EQ(s.dma_maps - s0.dma_maps, NR_SCATTER);
	T_EQ(s.dma_unmaps - s0.dma_unmaps, 0);
	T_EQ(s.dma_flushes - s0.dma_flushes, 0);
	printf("# coarse: %d pins in one batch cost %d unmaps and %d IOTLB flushes, %d unpins %d maps (module)\n",
	       NR_SCATTER, NR_SCATTER, NR_SCATTER, NR_SCATTER, NR_SCATTER);
	printf("# scattered frames %#x..%#x step 2\n", F_SCATTER,
	       F_SCATTER + 2 * (NR_SCATTER - 1));
	kt_vm_destroy(&vm);
}

/* The counters' changes since *s0, which becomes now. */
static void expect_dma(struct kt_vm *vm, struct kvm_pagetype_stats *s0,
		       uint64_t maps, uint64_t unmaps, uint64_t flushes)
{
	struct kvm_pagetype_stats s;

	kt_stats(vm, false, &s);
	T_EQ(s.dma_maps - s0->dma_maps, maps);
	T_EQ(s.dma_unmaps - s0->dma_unmaps, unmaps);
	T_EQ(s.dma_flushes - s0->dma_flushes, flushes);
	*s0 = s;
}

/*
 * Fine-grained mode, PiBooster's: 64 scattered writable -> semi-writable
 * conversions in one batch are 64 unmaps and one IOTLB flush; 64 pins and
 * 64 unpins between semi-writable and table touch neither; 64
 * conversions back are 64 maps.  Semi and table frames take no DMA.
 * Frames from 6 MiB up exist only in this VM (pagetype-dma.py counts
 * level 0's invalidations of them).
 */
#define F_FINE		0x600

KVMTEST(fine)
{
	struct kvm_pagetype_stats s0;
	struct kt_vm vm;

	kt_vm_new(&vm, 8 << 20, 0);
	T_EQ(confine(vm.pt_fd, edu), 0);
	T_EQ(kt_op(&vm, OP(SET_MODE), KVM_PAGETYPE_MODE_FINE), R(OK));
	T_EQ(kt_op(&vm, OP(PIN_L1), F_TABLE), R(MODE));
	/* A translation of one of them in the IOTLB, to be flushed. */
	T_ASSERT(dma_lands(&vm, F_FINE + 2 * 9, 0x2f), "DMA to writable");
	memset(kt_frame(&vm, F_FINE + 2 * 9), 0, KT_PAGE);
	kt_stats(&vm, false, &s0);

	scatter_batch(&vm, OP(TO_SEMI), F_FINE);
	expect_dma(&vm, &s0, 0, NR_SCATTER, 1);
	T_ASSERT(!dma_lands(&vm, F_FINE + 2 * 9, 0x3a), "DMA to semi");
	scatter_batch(&vm, OP(PIN_L1), F_FINE);
	expect_dma(&vm, &s0, 0, 0, 0);
	T_ASSERT(!dma_lands(&vm, F_FINE + 2 * 11, 0x4b), "DMA to a table");
	scatter_batch(&vm, OP(UNPIN), F_FINE);
	expect_dma(&vm, &s0, 0, 0, 0);
	T_ASSERT(!dma_lands(&vm, F_FINE + 2 * 13, 0x5c), "DMA to semi");
	scatter_batch(&vm, OP(TO_WRITABLE), F_FINE);
	expect_dma(&vm, &s0, NR_SCATTER, 0, 0);
	T_ASSERT(dma_lands(&vm, F_FINE + 2 * 13, 0x6d), "DMA to writable");
	printf("# fine: %d scattered writable->semi in one batch: %d unmaps, 1 IOTLB flush; %d pins, %d unpins: no IOMMU work; %d semi->writable: %d maps (module)\n",
	       NR_SCATTER, NR_SCATTER, NR_SCATTER, NR_SCATTER, NR_SCATTER,
	       NR_SCATTER);
	printf("# fine frames %#x..%#x step 2\n", F_FINE,
	       F_FINE + 2 * (NR_SCATTER - 1));
	kt_vm_destroy(&vm);
}

/*
 * Bad batches while edu is confined.  Frames outside guest memory are
 * R_RANGE in either mode, and nothing is mapped, unmapped or flushed for
 * them.  A frame named twice in one batch gets, at each op, the result of
 * its type at that point: the IOMMU work is that of the ops that
 * succeeded, no more, and DMA reaches the frame as its final type says.
 */
KVMTEST(bad_batches)
{
	struct kvm_pagetype_stats s0;
	struct kt_vm vm;
	long long pinned;
	int mode, i;

	new_vm(&vm);
	T_EQ(confine(vm.pt_fd, edu), 0);
	pinned = foll_pinned();
	kt_stats(&vm, false, &s0);

	for (mode = KVM_PAGETYPE_MODE_COARSE; mode <= KVM_PAGETYPE_MODE_FINE;
	     mode++) {
		static const uint16_t codes[] = {
			OP(PIN_L1), OP(UNPIN), OP(TO_SEMI), OP(TO_WRITABLE),
		};
		uint64_t out[] = { vm.nr_frames, vm.nr_frames + 1, 1ULL << 40,
				   ~0ULL };
		struct kvm_pagetype_op ops[4 * 4];

		T_EQ(kt_op(&vm, OP(SET_MODE), mode), R(OK));
		kt_stats(&vm, false, &s0);
		for (i = 0; i < 16; i++)
			ops[i] = (struct kvm_pagetype_op){
				.code = codes[i / 4], .arg = out[i % 4],
			};
		kt_batch_all(&vm, ops, 16);
		for (i = 0; i < 16; i++)
			T_EQ(ops[i].result, R(RANGE));
		expect_dma(&vm, &s0, 0, 0, 0);
		T_EQ(s0.dma_pinned, 1024);
	}

	/*
	 * Fine: the second TO_SEMI is R_EXIST; the pin syncs the first
	 * one's lazy unmap (flush 1) and needs no unmap of its own; the
	 * frame, a table, cannot go back to writable (R_TYPE); unpinned it
	 * is semi-writable again, a second unpin is R_NOENT; back to
	 * writable it is mapped; made semi again, unmapped, and the batch's
	 * end flushes that (flush 2).
	 */
	{
		struct kvm_pagetype_op ops[] = {
			{ .code = OP(TO_SEMI), .arg = F_SEMI },
			{ .code = OP(TO_SEMI), .arg = F_SEMI },
			{ .code = OP(PIN_L1), .arg = F_SEMI },
			{ .code = OP(PIN_L1), .arg = F_SEMI },
			{ .code = OP(TO_WRITABLE), .arg = F_SEMI },
			{ .code = OP(UNPIN), .arg = F_SEMI },
			{ .code = OP(UNPIN), .arg = F_SEMI },
			{ .code = OP(TO_WRITABLE), .arg = F_SEMI },
			{ .code = OP(TO_SEMI), .arg = F_SEMI },
		};
		static const uint16_t want[] = {
			R(OK), R(EXIST), R(OK), R(EXIST), R(TYPE), R(OK),
			R(NOENT), R(OK), R(OK),
		};

		memset(kt_frame(&vm, F_SEMI), 0, KT_PAGE);
		kt_batch_all(&vm, ops, 9);
		for (i = 0; i < 9; i++)
			T_EQ(ops[i].result, want[i]);
		expect_dma(&vm, &s0, 1, 2, 2);
		T_ASSERT(!dma_lands(&vm, F_SEMI, 0x71), "DMA to semi");
		T_EQ(kt_op(&vm, OP(TO_WRITABLE), F_SEMI), R(OK));
		T_ASSERT(dma_lands(&vm, F_SEMI, 0x72), "DMA to writable");
		kt_stats(&vm, false, &s0);
	}

	/*
	 * Coarse: each pin unmaps and flushes, the unpin between maps, and
	 * the repeats do nothing.
	 */
	{
		struct kvm_pagetype_op ops[] = {
			{ .code = OP(PIN_L1), .arg = F_TABLE },
			{ .code = OP(PIN_L1), .arg = F_TABLE },
			{ .code = OP(UNPIN), .arg = F_TABLE },
			{ .code = OP(UNPIN), .arg = F_TABLE },
			{ .code = OP(PIN_L1), .arg = F_TABLE },
		};
		static const uint16_t want[] = {
			R(OK), R(EXIST), R(OK), R(NOENT), R(OK),
		};

		T_EQ(kt_op(&vm, OP(SET_MODE), KVM_PAGETYPE_MODE_COARSE),
		     R(OK));
		memset(kt_frame(&vm, F_TABLE), 0, KT_PAGE);
		kt_stats(&vm, false, &s0);
		kt_batch_all(&vm, ops, 5);
		for (i = 0; i < 5; i++)
			T_EQ(ops[i].result, want[i]);
		expect_dma(&vm, &s0, 1, 2, 2);
		T_ASSERT(!dma_lands(&vm, F_TABLE, 0x73), "DMA to a table");
		T_ASSERT(frame_is(&vm, F_TABLE, 0), "table frame changed");
		T_EQ(kt_op(&vm, OP(UNPIN), F_TABLE), R(OK));
		T_ASSERT(dma_lands(&vm, F_TABLE, 0x74), "DMA after unpin");
	}
	/* Nothing pinned or unpinned by any of it. */
	T_EQ(foll_pinned(), pinned);
	kt_stats(&vm, false, &s0);
	T_EQ(s0.dma_pinned, 1024);
	T_EQ(s0.kills, 0);
	kt_vm_destroy(&vm);
}

/*
 * A mode switch with frames in flight.  SET_MODE changes which
 * transitions are allowed from then on, nothing else: no frame changes
 * type, nothing is mapped, unmapped or flushed.  Semi-writable frames and
 * tables made in one mode keep no DMA in the other; a revoke left lazy by
 * TO_SEMI before the switch is synced by the next pin or the batch's end,
 * as in one mode; a table unpins back to what it was in either mode.
 */
#define F_MODE_A	0x50
#define F_MODE_B	0x52
#define F_MODE_C	0x54
#define F_MODE_D	0x56

KVMTEST(mode_switch)
{
	struct kvm_pagetype_stats s0;
	struct kt_vm vm;
	int i;

	new_vm(&vm);
	T_EQ(confine(vm.pt_fd, edu), 0);
	kt_stats(&vm, false, &s0);

	/* Fine: A and B semi-writable (one flush), B a table. */
	T_EQ(kt_op(&vm, OP(SET_MODE), KVM_PAGETYPE_MODE_FINE), R(OK));
	{
		struct kvm_pagetype_op ops[] = {
			{ .code = OP(TO_SEMI), .arg = F_MODE_A },
			{ .code = OP(TO_SEMI), .arg = F_MODE_B },
		};

		kt_batch_all(&vm, ops, 2);
		T_EQ(ops[0].result, R(OK));
		T_EQ(ops[1].result, R(OK));
	}
	T_EQ(kt_op(&vm, OP(PIN_L1), F_MODE_B), R(OK));
	expect_dma(&vm, &s0, 0, 2, 1);

	/* To coarse: no IOMMU work, and A and B still take no DMA. */
	T_EQ(kt_op(&vm, OP(SET_MODE), KVM_PAGETYPE_MODE_COARSE), R(OK));
	expect_dma(&vm, &s0, 0, 0, 0);
	T_ASSERT(kt_query(&vm, F_MODE_A) & KVM_PAGETYPE_SEMI, "A not semi");
	T_ASSERT(!dma_lands(&vm, F_MODE_A, 0x81), "DMA to semi after switch");
	T_ASSERT(!dma_lands(&vm, F_MODE_B, 0x82), "DMA to table after switch");
	/* Coarse takes semi -> table too, without IOMMU work. */
	T_EQ(kt_op(&vm, OP(PIN_L1), F_MODE_A), R(OK));
	T_EQ(kt_op(&vm, OP(UNPIN), F_MODE_A), R(OK));
	T_EQ(kt_op(&vm, OP(UNPIN), F_MODE_B), R(OK));
	expect_dma(&vm, &s0, 0, 0, 0);
	T_ASSERT(kt_query(&vm, F_MODE_B) & KVM_PAGETYPE_SEMI, "B not semi");
	T_EQ(kt_op(&vm, OP(TO_WRITABLE), F_MODE_A), R(OK));
	T_EQ(kt_op(&vm, OP(TO_WRITABLE), F_MODE_B), R(OK));
	expect_dma(&vm, &s0, 2, 0, 0);
	T_ASSERT(dma_lands(&vm, F_MODE_A, 0x83), "DMA to A, writable again");
	T_ASSERT(dma_lands(&vm, F_MODE_B, 0x84), "DMA to B, writable again");

	/*
	 * Switches inside one batch: C's lazy unmap is synced by the coarse
	 * pin of D (flush 1) before D's own unmap and flush (flush 2); then
	 * fine again, and D, pinned from writable in coarse mode, unpins to
	 * writable and is mapped.
	 */
	memset(kt_frame(&vm, F_MODE_D), 0, KT_PAGE);
	{
		struct kvm_pagetype_op ops[] = {
			{ .code = OP(SET_MODE), .arg = KVM_PAGETYPE_MODE_FINE },
			{ .code = OP(TO_SEMI), .arg = F_MODE_C },
			{ .code = OP(PIN_L1), .arg = F_MODE_D },
			{ .code = OP(SET_MODE), .arg = KVM_PAGETYPE_MODE_COARSE },
			{ .code = OP(PIN_L1), .arg = F_MODE_D },
			{ .code = OP(SET_MODE), .arg = KVM_PAGETYPE_MODE_FINE },
		};
		static const uint16_t want[] = {
			R(OK), R(OK), R(MODE), R(OK), R(OK), R(OK),
		};

		kt_batch_all(&vm, ops, 6);
		for (i = 0; i < 6; i++)
			T_EQ(ops[i].result, want[i]);
	}
	expect_dma(&vm, &s0, 0, 2, 2);
	T_ASSERT(!dma_lands(&vm, F_MODE_C, 0x85), "DMA to semi C");
	T_ASSERT(!dma_lands(&vm, F_MODE_D, 0x86), "DMA to table D");
	T_ASSERT(frame_is(&vm, F_MODE_D, 0), "table D changed");
	T_EQ(kt_op(&vm, OP(UNPIN), F_MODE_D), R(OK));	/* in fine mode */
	expect_dma(&vm, &s0, 1, 0, 0);
	T_ASSERT(dma_lands(&vm, F_MODE_D, 0x87), "DMA to D, unpinned");
	T_EQ(kt_op(&vm, OP(TO_WRITABLE), F_MODE_C), R(OK));
	expect_dma(&vm, &s0, 1, 0, 0);
	T_EQ(s0.kills, 0);
	kt_vm_destroy(&vm);
}

/*
 * The VM goes while edu is confined, with a table pinned and a frame
 * semi-writable.  The KVM fds closed before the module's: the module
 * holds the VM, so its pages stay pinned and mapped until the module's
 * fd closes, then every one is released.  The process exiting without
 * closing anything: the same, by the time its parent has reaped it.
 * Either way edu is confinable by a new VM, and DMA lands there.
 */
static void vm_in_flight(struct kt_vm *vm)
{
	new_vm(vm);
	T_EQ(confine(vm->pt_fd, edu), 0);
	T_EQ(kt_op(vm, OP(PIN_L1), F_TABLE), R(OK));
	T_EQ(kt_op(vm, OP(SET_MODE), KVM_PAGETYPE_MODE_FINE), R(OK));
	T_EQ(kt_op(vm, OP(TO_SEMI), F_SEMI), R(OK));
}

KVMTEST(vm_gone)
{
	long long pinned0 = foll_pinned();
	struct kvm_pagetype_stats s;
	struct kt_vm vm;
	int status;
	pid_t pid;

	vm_in_flight(&vm);
	T_EQ(foll_pinned() - pinned0, 1024);
	munmap(vm.run, vm.run_size);
	T_EQ(close(vm.vcpu_fd), 0);
	T_EQ(close(vm.vm_fd), 0);
	T_EQ(close(vm.kvm_fd), 0);
	kt_stats(&vm, false, &s);
	T_EQ(s.dma_devices, 1);
	T_EQ(s.dma_pinned, 1024);
	T_EQ(foll_pinned() - pinned0, 1024);
	T_ASSERT(dma_lands(&vm, F_WRITABLE, 0x91), "DMA, KVM fds closed");
	T_EQ(close(vm.pt_fd), 0);
	munmap(vm.mem, vm.mem_size);
	global_stats(&s);
	T_EQ(s.dma_pinned, 0);
	T_EQ(s.dma_devices, 0);
	T_EQ(s.vms, 0);
	T_EQ(foll_pinned(), pinned0);
	printf("# KVM fds closed first: pinned until the module's fd closed\n");

	pid = fork();
	T_ASSERT(pid >= 0, "fork");
	if (!pid) {
		vm_in_flight(&vm);
		_exit(0);
	}
	T_EQ(waitpid(pid, &status, 0), pid);
	T_ASSERT(WIFEXITED(status) && !WEXITSTATUS(status),
		 "child status %#x", status);
	global_stats(&s);
	T_EQ(s.dma_pinned, 0);
	T_EQ(s.dma_devices, 0);
	T_EQ(s.vms, 0);
	T_EQ(foll_pinned(), pinned0);
	printf("# process exited with edu confined: nothing left pinned\n");

	new_vm(&vm);
	T_EQ(confine(vm.pt_fd, edu), 0);
	T_ASSERT(dma_lands(&vm, F_WRITABLE, 0x92), "DMA in a new VM");
	kt_vm_destroy(&vm);
	T_EQ(foll_pinned(), pinned0);
}

/*
 * Release while batches run: a thread converts the scattered frames
 * writable -> semi-writable -> writable in a loop (fine mode) while the
 * main thread releases edu.  The engine's lock orders the two: every op
 * of every batch is R_OK, nothing stays pinned, batches after the release
 * do no IOMMU work, and edu can be confined again, DMA landing where the
 * frames' types allow.
 */
#define F_RACE		0x200	/* below 4 MiB: pagetype-dma.py counts above */

struct racer {
	struct kt_vm *vm;
	int stop;
	unsigned long rounds;
};

static void *race_batches(void *arg)
{
	struct racer *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		scatter_batch(r->vm, OP(TO_SEMI), F_RACE);
		scatter_batch(r->vm, OP(TO_WRITABLE), F_RACE);
		__atomic_add_fetch(&r->rounds, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void rounds_pass(struct racer *r, unsigned long n)
{
	unsigned long until = __atomic_load_n(&r->rounds, __ATOMIC_ACQUIRE) + n;

	while (__atomic_load_n(&r->rounds, __ATOMIC_ACQUIRE) < until)
		usleep(1000);
}

KVMTEST(release_racing)
{
	long long pinned0 = foll_pinned();
	struct kvm_pagetype_stats s, after;
	struct racer r = { 0 };
	unsigned long at;
	struct kt_vm vm;
	pthread_t t;

	new_vm(&vm);
	T_EQ(confine(vm.pt_fd, edu), 0);
	T_EQ(kt_op(&vm, OP(SET_MODE), KVM_PAGETYPE_MODE_FINE), R(OK));
	r.vm = &vm;
	T_EQ(pthread_create(&t, NULL, race_batches, &r), 0);
	rounds_pass(&r, 10);
	T_EQ(release(vm.pt_fd, edu), 0);
	at = __atomic_load_n(&r.rounds, __ATOMIC_ACQUIRE);
	rounds_pass(&r, 10);
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	T_EQ(pthread_join(t, NULL), 0);

	kt_stats(&vm, false, &s);
	T_EQ(s.dma_devices, 0);
	T_EQ(s.dma_pinned, 0);
	T_EQ(foll_pinned(), pinned0);
	scatter_batch(&vm, OP(TO_SEMI), F_RACE);
	scatter_batch(&vm, OP(TO_WRITABLE), F_RACE);
	kt_stats(&vm, false, &after);
	T_EQ(after.dma_maps, s.dma_maps);
	T_EQ(after.dma_unmaps, s.dma_unmaps);
	T_EQ(after.dma_flushes, s.dma_flushes);

	T_EQ(confine(vm.pt_fd, edu), 0);
	T_ASSERT(dma_lands(&vm, F_RACE + 2 * 3, 0xa1),
		 "DMA after confining again");
	T_EQ(kt_op(&vm, OP(TO_SEMI), F_RACE + 2 * 5), R(OK));
	T_ASSERT(!dma_lands(&vm, F_RACE + 2 * 5, 0xa2), "DMA to semi");
	kt_vm_destroy(&vm);
	T_EQ(foll_pinned(), pinned0);
	printf("# release while batches ran: released after round %lu of %lu, every op R_OK, nothing pinned\n",
	       at, r.rounds);
}

/* edu, found and mapped once: every test's child inherits it. */
static void dma_setup(void)
{
	edu_setup();
	printf("# edu %s\n", edu_name);
}

KVMTEST_MAIN(dma_setup)
