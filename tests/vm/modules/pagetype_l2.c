// SPDX-License-Identifier: GPL-2.0
/*
 * A level-2 guest's end of the pagetype test: through the pagetype PCI
 * device, pin a real, live page table of this guest (the PTE page that
 * maps the loading process's stack) as an L1, check its type, and unpin it;
 * then run a batch through the doorbell page.  Every op is counted and the
 * counts printed, for the test to compare with the host module's.
 *
 * With violate=1 it instead breaks a rule on purpose: with the PTE page
 * pinned, it writes an entry mapping that page itself writable.  The host
 * must kill this VM at that store.
 *
 * With bench=N it then times N round trips of each carrier (make bench):
 * a write to the NULL register (an exit to QEMU that does nothing), a
 * one-op NULL batch through the COUNT register (QEMU calls the host
 * module's ioctl) and the same through the doorbell page (no exit to
 * user space), and prints "bench <carrier> <ns per op>".
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/io.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/sched/mm.h>
#include <linux/kvm_pagetype.h>

#include "pagetype-regs.h"

static bool violate;
module_param(violate, bool, 0444);
MODULE_PARM_DESC(violate, "map a pinned table writable: the VM must die");

static unsigned int bench;
module_param(bench, uint, 0444);
MODULE_PARM_DESC(bench, "time this many round trips of each carrier");

struct ptl2 {
	void __iomem *regs;
	struct kvm_pagetype_op *batch;	/* one page */
	u64 *doorbell;			/* one page */
	unsigned long ops[KVM_PAGETYPE_NR_OPS];
	unsigned long doorbells;
};

/* Run n ops through the BATCH/COUNT registers; returns DONE or -errno. */
static int ptl2_mmio_batch(struct ptl2 *p, struct kvm_pagetype_op *ops,
			   u32 n)
{
	phys_addr_t pa = virt_to_phys(p->batch);
	u32 status, i;

	memcpy(p->batch, ops, n * sizeof(*ops));
	writel(lower_32_bits(pa), p->regs + PAGETYPE_REG_BATCH_LO);
	writel(upper_32_bits(pa), p->regs + PAGETYPE_REG_BATCH_HI);
	writel(n, p->regs + PAGETYPE_REG_COUNT);
	status = readl(p->regs + PAGETYPE_REG_STATUS);
	if (status)
		return -(int)status;
	memcpy(ops, p->batch, n * sizeof(*ops));
	for (i = 0; i < n; i++)
		p->ops[ops[i].code]++;
	return readl(p->regs + PAGETYPE_REG_DONE);
}

static u16 ptl2_op(struct ptl2 *p, u16 code, u64 arg, u32 *out)
{
	struct kvm_pagetype_op op = { .code = code, .arg = arg };
	int done = ptl2_mmio_batch(p, &op, 1);

	if (done != 1) {
		pr_err("op %u: batch returned %d\n", code, done);
		return 0xffff;
	}
	if (out)
		*out = op.out;
	return op.result;
}

/* The frame of the PTE page that maps addr in mm, or 0. */
static unsigned long ptl2_pte_page(struct mm_struct *mm, unsigned long addr)
{
	unsigned long pfn = 0;
	pgd_t *pgd;
	p4d_t *p4d;
	pud_t *pud;
	pmd_t *pmd;

	mmap_read_lock(mm);
	pgd = pgd_offset(mm, addr);
	if (pgd_none(*pgd))
		goto out;
	p4d = p4d_offset(pgd, addr);
	if (p4d_none(*p4d))
		goto out;
	pud = pud_offset(p4d, addr);
	if (pud_none(*pud) || pud_leaf(*pud))
		goto out;
	pmd = pmd_offset(pud, addr);
	if (pmd_none(*pmd) || pmd_leaf(*pmd))
		goto out;
	pfn = pmd_pfn(*pmd);
out:
	mmap_read_unlock(mm);
	return pfn;
}

static int ptl2_doorbell(struct ptl2 *p)
{
	struct kvm_pagetype_op *ops = (void *)(p->doorbell + 2);
	phys_addr_t db = virt_to_phys(p->doorbell);
	u32 status;

	writel(lower_32_bits(db), p->regs + PAGETYPE_REG_DB_LO);
	writel(upper_32_bits(db), p->regs + PAGETYPE_REG_DB_HI);
	status = readl(p->regs + PAGETYPE_REG_STATUS);
	if (status)
		return -(int)status;
	ops[0] = (struct kvm_pagetype_op){ .code = KVM_PAGETYPE_OP_NULL };
	ops[1] = (struct kvm_pagetype_op){ .code = KVM_PAGETYPE_OP_QUERY,
					   .arg = PHYS_PFN(db) };
	/* One store: the host runs the batch before it completes. */
	WRITE_ONCE(p->doorbell[0], KVM_PAGETYPE_DB_RING(db + 16, 2));
	p->doorbells++;
	p->ops[KVM_PAGETYPE_OP_NULL]++;
	p->ops[KVM_PAGETYPE_OP_QUERY]++;
	if (((u32 *)p->doorbell)[3] != 2 || ops[0].result || ops[1].result)
		return -EPROTO;
	pr_info("doorbell: batch of 2 ran, doorbell page word %#x\n",
		ops[1].out);
	return 0;
}

/*
 * What a kernel about to kexec does: pin, then RESET.  The host forgets
 * the table and the doorbell, so a ring of the doorbell is a plain store.
 */
static int ptl2_reset(struct ptl2 *p, unsigned long pfn)
{
	u32 *db = (u32 *)p->doorbell;
	phys_addr_t batch = virt_to_phys(db) + 16;
	u32 word = ~0U;
	u16 r;

	if (!(readl(p->regs + PAGETYPE_REG_FEATURES) & PAGETYPE_F_RESET))
		return -EOPNOTSUPP;
	r = ptl2_op(p, KVM_PAGETYPE_OP_PIN_L1, pfn, NULL);
	if (r)
		return -EINVAL;
	writel(PAGETYPE_RESET_KEY, p->regs + PAGETYPE_REG_RESET);
	r = ptl2_op(p, KVM_PAGETYPE_OP_QUERY, pfn, &word);
	db[3] = 0xdead;
	WRITE_ONCE(p->doorbell[0], KVM_PAGETYPE_DB_RING(batch, 1));
	pr_info("reset: query result %u word %#x, doorbell done %#x\n", r,
		word, db[3]);
	return r || word || db[3] != 0xdead ? -EPROTO : 0;
}

/*
 * Every 256 round trips, let the CPU go: under TCG a few thousand exits
 * take longer than the soft-lockup watchdog allows one task.
 */
static void ptl2_yield(unsigned int i)
{
	if (i % 256 == 255)
		cond_resched();
}

/*
 * N round trips of each carrier, ns per op.  The doorbell must be set up
 * (ptl2_doorbell).  A NULL batch's result lands in guest memory before
 * the COUNT write or the doorbell store completes; it is checked once.
 */
static int ptl2_bench(struct ptl2 *p, unsigned int n)
{
	struct kvm_pagetype_op *dbops = (void *)(p->doorbell + 2);
	phys_addr_t pa = virt_to_phys(p->batch);
	phys_addr_t db = virt_to_phys(p->doorbell);
	u64 t0, t[3];
	unsigned int i;

	t0 = ktime_get_ns();
	for (i = 0; i < n; i++) {
		writel(0, p->regs + PAGETYPE_REG_NULL);
		ptl2_yield(i);
	}
	t[0] = ktime_get_ns() - t0;

	p->batch[0] = (struct kvm_pagetype_op){ .code = KVM_PAGETYPE_OP_NULL,
						.result = 0xffff };
	writel(lower_32_bits(pa), p->regs + PAGETYPE_REG_BATCH_LO);
	writel(upper_32_bits(pa), p->regs + PAGETYPE_REG_BATCH_HI);
	t0 = ktime_get_ns();
	for (i = 0; i < n; i++) {
		writel(1, p->regs + PAGETYPE_REG_COUNT);
		ptl2_yield(i);
	}
	t[1] = ktime_get_ns() - t0;
	if (readl(p->regs + PAGETYPE_REG_STATUS) || p->batch[0].result)
		return -EIO;

	dbops[0] = (struct kvm_pagetype_op){ .code = KVM_PAGETYPE_OP_NULL,
					     .result = 0xffff };
	t0 = ktime_get_ns();
	for (i = 0; i < n; i++) {
		WRITE_ONCE(p->doorbell[0], KVM_PAGETYPE_DB_RING(db + 16, 1));
		ptl2_yield(i);
	}
	t[2] = ktime_get_ns() - t0;
	if (((u32 *)p->doorbell)[2] || dbops[0].result)
		return -EIO;

	pr_info("bench null-register %llu\n", div_u64(t[0], n));
	pr_info("bench qemu-count %llu\n", div_u64(t[1], n));
	pr_info("bench doorbell %llu\n", div_u64(t[2], n));
	p->ops[KVM_PAGETYPE_OP_NULL] += 2 * n;
	p->doorbells += n;
	return 0;
}

static int ptl2_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	unsigned long pfn, addr;
	struct ptl2 *p;
	u32 word = 0;
	u16 r;
	int ret;

	p = devm_kzalloc(&pdev->dev, sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	p->regs = pcim_iomap(pdev, 0, 0);
	if (!p->regs)
		return -ENOMEM;
	if (readl(p->regs + PAGETYPE_REG_MAGIC) != PAGETYPE_MAGIC)
		return -ENODEV;
	p->batch = (void *)devm_get_free_pages(&pdev->dev, GFP_KERNEL, 0);
	p->doorbell = (void *)devm_get_free_pages(&pdev->dev,
						  GFP_KERNEL | __GFP_ZERO, 0);
	if (!p->batch || !p->doorbell)
		return -ENOMEM;

	/* Probed from insmod's module init: its user stack is mapped. */
	addr = current->mm ? current->mm->start_stack : 0;
	pfn = addr ? ptl2_pte_page(current->mm, addr) : 0;
	if (!pfn) {
		dev_err(&pdev->dev, "no PTE page for %#lx\n", addr);
		return -ENOENT;
	}
	r = ptl2_op(p, KVM_PAGETYPE_OP_PIN_L1, pfn, NULL);
	pr_info("pin_l1 of the PTE page %#lx (user stack %#lx): result %u\n",
		pfn, addr, r);
	if (r)
		return -EINVAL;
	r = ptl2_op(p, KVM_PAGETYPE_OP_QUERY, pfn, &word);
	pr_info("query: result %u word %#x\n", r, word);
	if (violate) {
		u64 *table = page_address(pfn_to_page(pfn));
		unsigned int i;

		for (i = 0; i < PTRS_PER_PTE && READ_ONCE(table[i]); i++)
			;
		if (i == PTRS_PER_PTE)
			return -ENOSPC;
		pr_info("violate: mapping the pinned table writable in slot %u\n",
			i);
		WRITE_ONCE(table[i], PFN_PHYS(pfn) | _PAGE_PRESENT | _PAGE_RW);
		pr_err("violate: still running after the store\n");
		return -EIO;
	}
	r = ptl2_op(p, KVM_PAGETYPE_OP_PIN_L1, pfn, NULL);
	pr_info("pin_l1 again: result %u\n", r);
	if (r != KVM_PAGETYPE_R_EXIST)
		return -EINVAL;
	r = ptl2_op(p, KVM_PAGETYPE_OP_UNPIN, pfn, NULL);
	pr_info("unpin: result %u\n", r);
	if (r)
		return -EINVAL;
	ret = ptl2_doorbell(p);
	if (ret)
		return ret;
	if (bench) {
		ret = ptl2_bench(p, bench);
		if (ret)
			return ret;
	} else {
		ret = ptl2_reset(p, pfn);
		if (ret)
			return ret;
	}
	pr_info("ops null=%lu pin_l1=%lu unpin=%lu query=%lu doorbells=%lu\n",
		p->ops[KVM_PAGETYPE_OP_NULL], p->ops[KVM_PAGETYPE_OP_PIN_L1],
		p->ops[KVM_PAGETYPE_OP_UNPIN], p->ops[KVM_PAGETYPE_OP_QUERY],
		p->doorbells);
	pci_set_drvdata(pdev, p);
	return 0;
}

static const struct pci_device_id ptl2_ids[] = {
	{ PCI_DEVICE(PAGETYPE_PCI_VENDOR_ID, PAGETYPE_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, ptl2_ids);

static struct pci_driver ptl2_driver = {
	.name = "pagetype_l2",
	.id_table = ptl2_ids,
	.probe = ptl2_probe,
};
module_pci_driver(ptl2_driver);

MODULE_DESCRIPTION("Level-2 end of the pagetype device test");
MODULE_LICENSE("GPL");
