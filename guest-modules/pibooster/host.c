// SPDX-License-Identifier: GPL-2.0
/*
 * pibooster's host backend: the pagetype PCI device carries each batch to
 * kvm_pagetype.ko, through its doorbell page when the host offers one (no
 * exit to user space), else through its registers.  Its counts are the
 * host's to give (debugfs on the host).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/io.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

#include "pagetype-regs.h"
#include "pibooster.h"

struct pib_host {
	struct pci_dev *pdev;
	void __iomem *regs;
	struct mutex lock;		/* batch, doorbell, dead */
	struct kvm_pagetype_op *batch;	/* one page */
	u64 *doorbell;			/* one page, or NULL: the registers */
	bool dead;			/* the device or the kernel is going */
};

static struct pib_host *pib_host;

static void pib_host_lock(void)
{
	mutex_lock(&pib_host->lock);
}

static bool pib_host_trylock(void)
{
	return mutex_trylock(&pib_host->lock);
}

static void pib_host_unlock(void)
{
	mutex_unlock(&pib_host->lock);
}

/*
 * One batch of up to n ops (at most KVM_PAGETYPE_MAX_BATCH) through the
 * device; returns how many ran, 0 if the host ran none.
 */
static u32 pib_host_batch(struct kvm_pagetype_op *ops, u32 n)
{
	struct pib_host *h = pib_host;
	phys_addr_t pa;
	u32 status, done;

	if (h->dead)
		return 0;
	n = min_t(u32, n, KVM_PAGETYPE_MAX_BATCH);
	pa = page_to_phys(virt_to_page(h->batch));
	memcpy(h->batch, ops, n * sizeof(*ops));
	if (h->doorbell) {
		/* One store: the host has run the batch when it completes. */
		WRITE_ONCE(h->doorbell[0], KVM_PAGETYPE_DB_RING(pa, n));
		status = READ_ONCE(((u32 *)h->doorbell)[KVM_PAGETYPE_DB_STATUS_OFF / 4]);
		done = READ_ONCE(((u32 *)h->doorbell)[KVM_PAGETYPE_DB_DONE_OFF / 4]);
	} else {
		writel(lower_32_bits(pa), h->regs + PAGETYPE_REG_BATCH_LO);
		writel(upper_32_bits(pa), h->regs + PAGETYPE_REG_BATCH_HI);
		writel(n, h->regs + PAGETYPE_REG_COUNT);
		status = readl(h->regs + PAGETYPE_REG_STATUS);
		done = readl(h->regs + PAGETYPE_REG_DONE);
	}
	if (status || done > n) {
		pr_err_ratelimited("the host failed a batch of %u: status %u, %u done\n",
				   n, status, done);
		return 0;
	}
	memcpy(ops, h->batch, done * sizeof(*ops));
	return done;
}

static ssize_t pib_host_name(char *buf)
{
	return sysfs_emit(buf, "host %s\n",
			  pib_host->doorbell ? "doorbell" : "registers");
}

/* After pib_host_exit(): the device is gone, the hooks are off. */
static void pib_host_destroy(void)
{
	kfree(pib_host);
	pib_host = NULL;
}

static const struct pib_backend_ops pib_host_ops = {
	.lock = pib_host_lock,
	.trylock = pib_host_trylock,
	.unlock = pib_host_unlock,
	.batch = pib_host_batch,
	.name = pib_host_name,
	.kept = "page types kept by the host",
	.validates_links = true,
	.destroy = pib_host_destroy,
};

static bool pib_probing;	/* only while the module loads */

/* A device that appears after the load is left alone: pib_backend_init(). */
static int pib_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct pib_host *h;
	u32 magic, version, status;
	phys_addr_t db;
	int ret;

	if (!pib_probing || pib_host) {
		dev_info(&pdev->dev, "not used: pibooster chose its backend at load\n");
		return -EBUSY;
	}
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = pcim_iomap_regions(pdev, BIT(0), KBUILD_MODNAME);
	if (ret)
		return ret;
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		return -ENOMEM;
	h->regs = pcim_iomap_table(pdev)[0];
	magic = readl(h->regs + PAGETYPE_REG_MAGIC);
	version = readl(h->regs + PAGETYPE_REG_VERSION);
	if (magic != PAGETYPE_MAGIC || version != KVM_PAGETYPE_ABI_VERSION) {
		dev_err(&pdev->dev, "magic %#x, op set version %u: want %#x, %u\n",
			magic, version, PAGETYPE_MAGIC,
			KVM_PAGETYPE_ABI_VERSION);
		ret = -ENODEV;
		goto err_free;
	}
	ret = -ENOMEM;
	h->batch = (void *)get_zeroed_page(GFP_KERNEL);
	if (!h->batch)
		goto err_free;
	if (readl(h->regs + PAGETYPE_REG_FEATURES) & PAGETYPE_F_DOORBELL)
		h->doorbell = (void *)get_zeroed_page(GFP_KERNEL);
	if (h->doorbell) {
		db = virt_to_phys(h->doorbell);
		writel(lower_32_bits(db), h->regs + PAGETYPE_REG_DB_LO);
		writel(upper_32_bits(db), h->regs + PAGETYPE_REG_DB_HI);
		status = readl(h->regs + PAGETYPE_REG_STATUS);
		if (status) {
			dev_warn(&pdev->dev, "doorbell page refused (%u): the registers carry the batches\n",
				 status);
			free_page((unsigned long)h->doorbell);
			h->doorbell = NULL;
		}
	}
	mutex_init(&h->lock);
	h->pdev = pdev;
	pci_set_drvdata(pdev, h);
	pib_host = h;
	pib_backend = &pib_host_ops;
	dev_info(&pdev->dev, "host backend: batches through the %s\n",
		 h->doorbell ? "doorbell page" : "registers");
	return 0;

err_free:
	kfree(h);
	return ret;
}

/*
 * The device is gone (unplugged, or the module unloads): no batch reaches
 * the host from here on; pins fail (tables go out unpinned) and frames
 * whose unpin fails stay out of use.  pib_host itself lives on until the
 * module's exit, the hooks may still look at it.
 */
static void pib_remove(struct pci_dev *pdev)
{
	struct pib_host *h = pci_get_drvdata(pdev);

	mutex_lock(&h->lock);
	h->dead = true;
	if (h->doorbell) {
		writel(~0U, h->regs + PAGETYPE_REG_DB_LO);
		writel(~0U, h->regs + PAGETYPE_REG_DB_HI);
		free_page((unsigned long)h->doorbell);
		h->doorbell = NULL;
	}
	free_page((unsigned long)h->batch);
	h->batch = NULL;
	mutex_unlock(&h->lock);
}

/*
 * The kernel is going (reboot, poweroff, kexec): whatever runs next must
 * find no table of ours at the host and no doorbell.  A reboot resets the
 * device anyway; kexec does not, so ask for the reset now.  From here no
 * batch reaches the host: a table allocated meanwhile goes out unpinned,
 * under parents the host has forgotten.
 */
static void pib_shutdown(struct pci_dev *pdev)
{
	struct pib_host *h = pci_get_drvdata(pdev);

	mutex_lock(&h->lock);
	h->dead = true;
	if (readl(h->regs + PAGETYPE_REG_FEATURES) & PAGETYPE_F_RESET)
		writel(PAGETYPE_RESET_KEY, h->regs + PAGETYPE_REG_RESET);
	else
		dev_warn(&pdev->dev, "the host cannot reset: a kexec'd kernel would meet our tables\n");
	mutex_unlock(&h->lock);
}

static const struct pci_device_id pib_ids[] = {
	{ PCI_DEVICE(PAGETYPE_PCI_VENDOR_ID, PAGETYPE_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, pib_ids);

static struct pci_driver pib_pci_driver = {
	.name = KBUILD_MODNAME,
	.id_table = pib_ids,
	.probe = pib_probe,
	.remove = pib_remove,
	.shutdown = pib_shutdown,
	.driver.suppress_bind_attrs = true,
};

/*
 * Register the driver; a pagetype device present now makes the host the
 * backend (pib_backend set).  The driver stays registered either way.
 */
int pib_host_init(void)
{
	int ret;

	pib_probing = true;
	ret = pci_register_driver(&pib_pci_driver);
	pib_probing = false;
	if (ret && pib_host) {
		pib_host_destroy();
		pib_backend = NULL;
	}
	return ret;
}

void pib_host_exit(void)
{
	pci_unregister_driver(&pib_pci_driver);
}
