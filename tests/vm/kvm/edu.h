/* SPDX-License-Identifier: MIT */
/*
 * QEMU's edu device driven from level-1 user space, through its BAR, as
 * the attacker's device of the DMA-confinement tests: found by its IDs,
 * bound to no driver, alone in its IOMMU group.  edu copies between its
 * 4 KiB buffer (at EDU_BUF in its DMA space) and DMA addresses, 100 ms
 * after the command; a count past the buffer aborts QEMU.  Also the sysfs
 * helpers those tests use to find devices of other kinds.
 */
#ifndef TESTS_VM_KVM_EDU_H
#define TESTS_VM_KVM_EDU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/kvm_pagetype.h>

#define EDU_VENDOR	0x1234
#define EDU_DEVICE	0x11e8
#define EDU_DMA_SRC	0x80
#define EDU_DMA_DST	0x88
#define EDU_DMA_CNT	0x90
#define EDU_DMA_CMD	0x98
#define EDU_CMD_RUN	0x1
#define EDU_CMD_TO_RAM	0x2	/* buffer -> DMA address */
#define EDU_BUF		0x40000
#define EDU_BUF_SIZE	4096

#define SYSPCI		"/sys/bus/pci/devices"
#define PCI_COMMAND_REG	0x04
#define PCI_CMD_MEMORY	0x2
#define PCI_CMD_MASTER	0x4

/* Set by edu_setup(): its PCI name, its address for the ioctls. */
extern char edu_name[32];
extern struct kvm_pagetype_dma_device edu;

bool has_driver(const char *dev);
/* Devices in dev's IOMMU group, or -1 without one. */
int group_size(const char *dev);
/*
 * The first device that matches: edu (want 0), a device sharing its
 * IOMMU group (1), a device alone in its group with a driver bound (2).
 */
/*
 * A device: want 0 edu, 1 one that shares its IOMMU group, 2 one alone in
 * its group with a driver, 3 a bridge alone in its group.
 */
bool find_device(int want, char *name, size_t len);
/* edu: found, unbound, memory decoding and bus mastering on, BAR mapped. */
void edu_setup(void);
/*
 * Memory space and bus mastering on: at setup, and after each confine
 * (a release turns bus mastering off).
 */
void edu_bus_master(void);
bool edu_is_master(void);
/* One transfer of len bytes; returns when edu says it is done. */
void edu_dma(uint64_t src, uint64_t dst, uint32_t len, bool to_ram);

#endif /* TESTS_VM_KVM_EDU_H */
