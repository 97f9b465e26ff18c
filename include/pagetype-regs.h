/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The pagetype PCI device's register map (docs/specs/pagetype.rst): one
 * definition for the QEMU device, the guest modules and the tests.
 *
 * BAR0: 32-bit registers, little-endian, 32-bit accesses only.  The
 * device carries the guest's op batches (linux/kvm_pagetype.h) to
 * kvm_pagetype.ko on the host.
 */
#ifndef PAGETYPE_REGS_H
#define PAGETYPE_REGS_H

#define PAGETYPE_PCI_VENDOR_ID	0x1234	/* QEMU's */
#define PAGETYPE_PCI_DEVICE_ID	0x5054

#define PAGETYPE_REG_MAGIC	0x00	/* RO: PAGETYPE_MAGIC */
#define PAGETYPE_REG_VERSION	0x04	/* RO: KVM_PAGETYPE_ABI_VERSION */
#define PAGETYPE_REG_FEATURES	0x08	/* RO: PAGETYPE_F_* */
#define PAGETYPE_REG_NULL	0x0c	/* WO: does nothing */
#define PAGETYPE_REG_BATCH_LO	0x10	/* RW: gpa of a batch */
#define PAGETYPE_REG_BATCH_HI	0x14
#define PAGETYPE_REG_COUNT	0x18	/* WO: run COUNT ops at BATCH */
#define PAGETYPE_REG_STATUS	0x1c	/* RO: 0 or a positive errno */
#define PAGETYPE_REG_DONE	0x20	/* RO: ops the last batch ran */
#define PAGETYPE_REG_DB_LO	0x24	/* RW: gpa of the doorbell page */
#define PAGETYPE_REG_DB_HI	0x28	/* RW: writing it sets the page */
#define PAGETYPE_REG_RESET	0x2c	/* WO: PAGETYPE_RESET_KEY: device reset */
#define PAGETYPE_BAR0_SIZE	0x100

#define PAGETYPE_MAGIC		0x50475459	/* "PGTY" */
/* PAGETYPE_REG_FEATURES */
#define PAGETYPE_F_DOORBELL	(1U << 0)	/* the doorbell page fast path */
#define PAGETYPE_F_RESET	(1U << 1)	/* PAGETYPE_REG_RESET */
/* What RESET takes: a stray store of 0 or 1 resets nothing. */
#define PAGETYPE_RESET_KEY	0x52534554	/* "RSET" */

#endif /* PAGETYPE_REGS_H */
