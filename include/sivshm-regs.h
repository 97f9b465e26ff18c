/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The sivshm PCI device's register map (docs/specs/sivshm.rst): one
 * definition for the QEMU device and the guest driver.
 *
 * BAR0: 32-bit registers, little-endian.  BAR1: the shared memory (the
 * whole region for the mapper, the VM's own slice at offset 0 for a
 * reducer).  BAR3: MSI-X, nvectors doorbell vectors then one for peer
 * changes.
 */
#ifndef SIVSHM_REGS_H
#define SIVSHM_REGS_H

#define SIVSHM_PCI_VENDOR_ID	0x1234	/* QEMU's */
#define SIVSHM_PCI_DEVICE_ID	0x5356

#define SIVSHM_REG_ID		0x00	/* RO: this VM's id */
#define SIVSHM_REG_ROLE		0x04	/* RO: 0 mapper, 1 reducer */
#define SIVSHM_REG_NREDUCERS	0x08	/* RO */
#define SIVSHM_REG_NVECTORS	0x0c	/* RO: doorbell vectors */
#define SIVSHM_REG_SLICE_LO	0x10	/* RO: slice size */
#define SIVSHM_REG_SLICE_HI	0x14
#define SIVSHM_REG_REGION_LO	0x18	/* RO: bytes of memory behind BAR1 */
#define SIVSHM_REG_REGION_HI	0x1c
#define SIVSHM_REG_PEERS_LO	0x20	/* RO: peer-connected bitmap */
#define SIVSHM_REG_PEERS_HI	0x24
#define SIVSHM_REG_INTR_MASK	0x28	/* RW: INTx mask */
#define SIVSHM_REG_INTR_STATUS	0x2c	/* RW: INTx status, write 1 to clear */
#define SIVSHM_REG_DOORBELL	0x30	/* WO: peer << 16 | vector */
#define SIVSHM_BAR0_SIZE	0x100

/*
 * The most doorbell vectors a device has (SIVSHM_REG_NVECTORS).  The same
 * definition as libsivshm's sivshm.h: the QEMU device includes both, so
 * the compiler holds them equal.
 */
#define SIVSHM_MAX_VECTORS	16

/* SIVSHM_REG_ROLE values */
#define SIVSHM_REG_ROLE_MAPPER	0
#define SIVSHM_REG_ROLE_REDUCER	1
/* INTx status bit of the peer-change event (its MSI-X vector: nvectors) */
#define SIVSHM_INTR_PEER_CHANGE	(1u << 31)

#define SIVSHM_BAR_REGS		0
#define SIVSHM_BAR_MEM		1
#define SIVSHM_BAR_MSIX		3

#endif
