/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note OR MIT */
/*
 * kvm_pagetype: Xen-style page types for a KVM guest.
 *
 * Two interfaces share this header:
 *
 *  - the guest's op set: an array of struct kvm_pagetype_op in guest
 *    memory (a "batch"), executed in order, each op getting a result code.
 *    The guest hands a batch to its VMM (the QEMU `pagetype` device), which
 *    passes it to the module with KVM_PAGETYPE_RUN_BATCH;
 *  - the VMM's ioctls on /dev/kvm-pagetype.
 *
 * Everything in guest memory is little-endian.  docs/pagetype.md is the
 * specification: the type word, the rules, each op's results and cost.
 */
#ifndef _UAPI_LINUX_KVM_PAGETYPE_H
#define _UAPI_LINUX_KVM_PAGETYPE_H

#include <linux/ioctl.h>
#include <linux/types.h>

/*
 * The version changes when an existing op, result or ioctl changes
 * meaning.  Additions keep it: a new ioctl is found by trying it (-ENOTTY
 * before), and fields appended to struct kvm_pagetype_stats change
 * KVM_PAGETYPE_GET_STATS's size, while the module still answers the older
 * size with the fields it had.
 */
#define KVM_PAGETYPE_ABI_VERSION	2

/*
 * The type word, one per guest frame (the PiBooster paper's figures 6
 * and 7): type in bits 28-31, flags in 23-27, the semi-writable bit 22,
 * the type count in bits 0-21.
 */
#define KVM_PAGETYPE_TYPE_SHIFT		28
#define KVM_PAGETYPE_TYPE_MASK		(0xfU << KVM_PAGETYPE_TYPE_SHIFT)
#define KVM_PAGETYPE_F_VALIDATED	(1U << 26)
#define KVM_PAGETYPE_F_PINNED		(1U << 27)
#define KVM_PAGETYPE_SEMI		(1U << 22)
#define KVM_PAGETYPE_COUNT_MASK		((1U << 22) - 1)

/* Values of the type field. */
#define KVM_PAGETYPE_WRITABLE		0	/* every frame starts here */
#define KVM_PAGETYPE_L1			1
#define KVM_PAGETYPE_L2			2
#define KVM_PAGETYPE_L3			3
#define KVM_PAGETYPE_L4			4

/* Op codes. */
#define KVM_PAGETYPE_OP_NULL		0	/* nothing: the round trip */
#define KVM_PAGETYPE_OP_PIN_L1		1	/* arg: frame */
#define KVM_PAGETYPE_OP_PIN_L2		2
#define KVM_PAGETYPE_OP_PIN_L3		3
#define KVM_PAGETYPE_OP_PIN_L4		4
#define KVM_PAGETYPE_OP_UNPIN		5	/* arg: frame; out: its type word after */
#define KVM_PAGETYPE_OP_TO_SEMI		6	/* arg: frame, writable -> semi */
#define KVM_PAGETYPE_OP_TO_WRITABLE	7	/* arg: frame, semi -> writable */
#define KVM_PAGETYPE_OP_SET_MODE	8	/* arg: KVM_PAGETYPE_MODE_* */
#define KVM_PAGETYPE_OP_QUERY		9	/* arg: frame; out: its type word */
#define KVM_PAGETYPE_NR_OPS		10

#define KVM_PAGETYPE_MODE_COARSE	0	/* Xen's: writable <-> table */
#define KVM_PAGETYPE_MODE_FINE		1	/* PiBooster's: via semi-writable */

/* Result codes, written back into each op. */
#define KVM_PAGETYPE_R_OK		0
#define KVM_PAGETYPE_R_INVAL		1	/* unknown op or argument */
#define KVM_PAGETYPE_R_RANGE		2	/* frame outside guest memory */
#define KVM_PAGETYPE_R_TYPE		3	/* the frame has another type */
#define KVM_PAGETYPE_R_BUSY		4	/* type count not zero */
#define KVM_PAGETYPE_R_EXIST		5	/* already pinned, already semi */
#define KVM_PAGETYPE_R_NOENT		6	/* not pinned, not semi */
#define KVM_PAGETYPE_R_BADENTRY		7	/* an entry breaks a rule */
#define KVM_PAGETYPE_R_OVERFLOW		8	/* a type count is at its max */
#define KVM_PAGETYPE_R_MODE		9	/* not in the current mode */
#define KVM_PAGETYPE_R_IO		10	/* the frame could not be read */
#define KVM_PAGETYPE_R_SKIPPED		11	/* not run: the batch was cut */
#define KVM_PAGETYPE_R_LIMIT		12	/* over KVM_PAGETYPE_VALIDATE_MAX */
#define KVM_PAGETYPE_R_FULL		13	/* the VM's tables at their bound */

/* One op: 16 bytes in guest memory. */
struct kvm_pagetype_op {
	__u16 code;		/* KVM_PAGETYPE_OP_* */
	__u16 result;		/* written back: KVM_PAGETYPE_R_* */
	__u32 out;		/* written back: QUERY's and UNPIN's type word */
	__u64 arg;
};

/*
 * A batch is 1 to KVM_PAGETYPE_MAX_BATCH ops inside one guest page.  A
 * call does at most KVM_PAGETYPE_WORK_BUDGET units of work (a pin costs
 * 512, one per entry validated; any other op costs 1): the ops past the
 * budget are not run, get R_SKIPPED, and the call reports how many ran.
 */
#define KVM_PAGETYPE_MAX_BATCH		256
#define KVM_PAGETYPE_WORK_BUDGET	(64 * 512)

/*
 * Frames of no type become tables by reference (docs/pagetype.md): one op
 * or one trapped write validates at most this many, an L2 and a full set
 * of L1s below it, the most a Linux guest links at once (mremap's
 * move_normal_pud).  Past it an op fails with R_LIMIT, a write kills.
 */
#define KVM_PAGETYPE_VALIDATE_MAX	513

/* ioctls on /dev/kvm-pagetype */
#define KVM_PAGETYPE_IOC_MAGIC		0xb9

/* Attach flags. */
/*
 * A stock Linux guest's pgd carries the kernel's own tables in entries
 * 256-511, which nobody pins: let those entries point at writable frames
 * (taking a writable reference on them) instead of at L3 tables.
 */
#define KVM_PAGETYPE_ATTACH_KERNEL_HALF	(1U << 0)
#define KVM_PAGETYPE_ATTACH_FLAGS	KVM_PAGETYPE_ATTACH_KERNEL_HALF

struct kvm_pagetype_attach {
	__s32 vm_fd;		/* a KVM VM fd of the calling process */
	__u32 flags;		/* KVM_PAGETYPE_ATTACH_* */
	__u64 nr_frames;	/* out: frames the type words cover */
};

struct kvm_pagetype_batch {
	__u64 gpa;		/* first op, 16-byte aligned */
	__u32 count;		/* ops */
	__u32 done;		/* out: ops run (the rest are R_SKIPPED) */
};

/*
 * The fast path: a doorbell page in guest RAM that the module
 * write-tracks.  The guest stores KVM_PAGETYPE_DB_RING(gpa, count) at
 * offset KVM_PAGETYPE_DB_RING_OFF with one 8-byte store; the module runs
 * that batch in the vCPU thread, with no exit to user space, and has
 * written DB_STATUS (0, or a positive errno) and DB_DONE when the store
 * instruction completes.  A malformed batch kills the VM, as through the
 * ioctl.  Other bytes of the page are the guest's (a batch may live
 * there, from offset 16 on).
 */
#define KVM_PAGETYPE_DB_RING_OFF	0x00
#define KVM_PAGETYPE_DB_STATUS_OFF	0x08	/* __u32, written back */
#define KVM_PAGETYPE_DB_DONE_OFF	0x0c	/* __u32, written back */
#define KVM_PAGETYPE_DB_COUNT_SHIFT	52
#define KVM_PAGETYPE_DB_RING(gpa, count) \
	((__u64)(gpa) | ((__u64)(count) << KVM_PAGETYPE_DB_COUNT_SHIFT))

#define KVM_PAGETYPE_NO_DOORBELL	(~0ULL)

struct kvm_pagetype_doorbell {
	__u64 gpa;		/* page aligned, or KVM_PAGETYPE_NO_DOORBELL */
};

/* Why a VM was killed (kvm_pagetype_stats.last_kill). */
#define KVM_PAGETYPE_KILL_NONE		0
#define KVM_PAGETYPE_KILL_WRITE		1	/* a trapped write broke a rule */
#define KVM_PAGETYPE_KILL_BATCH		2	/* a malformed batch */
#define KVM_PAGETYPE_KILL_MEMSLOT	3	/* a pinned table's memory left */
#define KVM_PAGETYPE_KILL_UNSEEN	4	/* a write KVM made broke a rule */

struct kvm_pagetype_stats {
	__u64 ops[KVM_PAGETYPE_NR_OPS];	/* ops run, per code */
	__u64 op_errors;	/* ops whose result was not R_OK */
	__u64 batches;
	__u64 batches_cut;	/* batches that hit the work budget */
	__u64 doorbells;	/* batches run through the doorbell page */
	__u64 validations;	/* entries validated, by pins and writes */
	__u64 writes;		/* trapped writes to pinned tables */
	__u64 write_updates;	/* ... that changed what an entry grants */
	__u64 violations;	/* ... that broke a rule */
	__u64 kills;		/* VMs killed */
	__u64 last_kill;	/* KVM_PAGETYPE_KILL_* */
	__u64 pinned[4];	/* tables pinned now, L1..L4 */
	__u64 semi;		/* semi-writable frames now */
	__u64 vms;		/* global: VMs attached now; per VM: 1 */
	/* DMA confinement (KVM_PAGETYPE_DMA_CONFINE); appended in ABI 1. */
	__u64 dma_maps;		/* 4 KiB IOMMU mappings made */
	__u64 dma_unmaps;	/* 4 KiB IOMMU mappings removed by type changes */
	__u64 dma_flushes;	/* IOTLB syncs waited for by type changes */
	__u64 dma_pinned;	/* guest pages pinned for DMA now */
	__u64 dma_devices;	/* devices confined now */
	/* Types by reference; appended in ABI 2. */
	__u64 tables[4];	/* validated tables now, pinned or not, L1..L4 */
	__u64 ref_validations;	/* tables validated because an entry needed them */
	__u64 devalidations;	/* tables writable again: last reference gone */
	__u64 frames;		/* frames the type words cover now */
	__u64 grown;		/* times they grew to memslots added later */
};

#define KVM_PAGETYPE_STATS_GLOBAL	(1U << 0)

struct kvm_pagetype_get_stats {
	__u32 flags;		/* KVM_PAGETYPE_STATS_GLOBAL, or 0: this VM */
	__u32 pad;
	struct kvm_pagetype_stats stats;
};

/* Returns KVM_PAGETYPE_ABI_VERSION. */
#define KVM_PAGETYPE_VERSION	_IO(KVM_PAGETYPE_IOC_MAGIC, 0x00)
#define KVM_PAGETYPE_ATTACH	_IOWR(KVM_PAGETYPE_IOC_MAGIC, 0x01, \
				      struct kvm_pagetype_attach)
#define KVM_PAGETYPE_RUN_BATCH	_IOWR(KVM_PAGETYPE_IOC_MAGIC, 0x02, \
				      struct kvm_pagetype_batch)
#define KVM_PAGETYPE_GET_STATS	_IOWR(KVM_PAGETYPE_IOC_MAGIC, 0x03, \
				      struct kvm_pagetype_get_stats)
/* Track a doorbell page (the fast path), or stop. */
#define KVM_PAGETYPE_SET_DOORBELL _IOW(KVM_PAGETYPE_IOC_MAGIC, 0x04, \
				      struct kvm_pagetype_doorbell)
/*
 * The guest reset: every table unpinned and untracked, every frame
 * writable, coarse mode, no doorbell.  A killed VM stays killed.
 */
#define KVM_PAGETYPE_RESET	_IO(KVM_PAGETYPE_IOC_MAGIC, 0x05)

/*
 * DMA confinement: the PCI device at segment:bus:slot.function, alone in
 * its IOMMU group and bound to no driver, gets an IOMMU domain of its own
 * in which the VM's RAM is mapped at IOVA = guest-physical address, except
 * the frames whose type forbids DMA (page tables, semi-writable frames).
 * One device per VM; it is released by DMA_RELEASE, by closing the file,
 * and when a memslot goes away.  docs/pagetype.md, "DMA confinement".
 */
struct kvm_pagetype_dma_device {
	__u32 segment;		/* PCI domain */
	__u8 bus;
	__u8 devfn;		/* slot << 3 | function */
	__u16 pad;		/* 0 */
	__u32 flags;		/* 0 */
	__u32 pad2;		/* 0 */
};

#define KVM_PAGETYPE_DMA_CONFINE _IOW(KVM_PAGETYPE_IOC_MAGIC, 0x06, \
				      struct kvm_pagetype_dma_device)
#define KVM_PAGETYPE_DMA_RELEASE _IOW(KVM_PAGETYPE_IOC_MAGIC, 0x07, \
				      struct kvm_pagetype_dma_device)

#endif /* _UAPI_LINUX_KVM_PAGETYPE_H */
