// SPDX-License-Identifier: GPL-2.0
/*
 * sivshm: guest driver for the QEMU sivshm device (secure sliced inter-VM
 * shared memory).  One /dev/sivshmN per device: mmap() of the shared memory
 * (write-back: it is RAM), ioctls for information, doorbells, an eventfd
 * per vector and SIGUSR1 delivery, and read()/poll() of interrupt counts.
 * The ABI is include/uapi/linux/sivshm.h; the registers sivshm-regs.h.
 *
 * Lifetime: the per-device state is reference counted, one reference for
 * the bound device and one per open file.  On remove (unplug, unbind,
 * rmmod) the device is marked dead under the rwsem before its registers go:
 * every later call on a file still open returns -ENODEV, a blocked read()
 * returns -ENODEV, poll() reports EPOLLHUP, and every mapping of the shared
 * memory is zapped, so a later access to it raises SIGBUS instead of
 * reaching whatever the guest puts at that physical address next.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/eventfd.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/poll.h>
#include <linux/rwsem.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "sivshm-regs.h"
#include "uapi/linux/sivshm.h"

/*
 * What differs between the kernels this builds for: Debian 12's 6.1 and
 * the 6.12 of bookworm-backports and Debian 13.
 */
#if KERNEL_VERSION(6, 3, 0) > LINUX_VERSION_CODE	/* before 6.3 */
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}
#endif

#if KERNEL_VERSION(6, 8, 0) > LINUX_VERSION_CODE	/* before 6.8 */
#define sivshm_eventfd_signal(ctx)	eventfd_signal(ctx, 1)
#else
#define sivshm_eventfd_signal(ctx)	eventfd_signal(ctx)
#endif

#ifndef PCI_IRQ_INTX
#define PCI_IRQ_INTX			PCI_IRQ_LEGACY
#endif

struct sivshm_vec {
	struct sivshm_dev *sd;
	u32 vector;
};

struct sivshm_dev {
	struct kref ref;		/* the device's, and one per open file */
	struct rw_semaphore rwsem;	/* held for reading to use regs */
	bool dead;			/* removed: written under rwsem */
	struct mutex files_lock;
	struct list_head files;		/* open files, to zap their mappings */
	struct pci_dev *pdev;
	struct miscdevice misc;
	char name[16];
	int index;
	void __iomem *regs;
	phys_addr_t mem_phys;
	void *mem;			/* memremap()ed, write-back */
	u64 mappable;
	u32 nvectors;
	int nirqs;			/* MSI-X vectors, or 0 for INTx */
	struct sivshm_vec *vecs;	/* their handlers' data */

	spinlock_t lock;		/* protects the fields below */
	struct eventfd_ctx *efd[SIVSHM_MAX_VECTORS + 1];
	struct pid *sig_pid;
	u32 sig_mask;
	u64 irqs;			/* interrupts received, all vectors */
	wait_queue_head_t wait;
};

struct sivshm_file {
	struct sivshm_dev *sd;
	struct file *file;
	struct list_head node;		/* in sd->files */
	u64 seen;			/* sd->irqs at the last read */
};

static DEFINE_IDA(sivshm_ida);

static u32 sivshm_reg(struct sivshm_dev *sd, u32 reg)
{
	return ioread32(sd->regs + reg);
}

static u64 sivshm_reg64(struct sivshm_dev *sd, u32 lo)
{
	return sivshm_reg(sd, lo) | (u64)sivshm_reg(sd, lo + 4) << 32;
}

/* An interrupt on @vector (nvectors: a peer came or went). */
static void sivshm_deliver(struct sivshm_dev *sd, u32 vector)
{
	unsigned long flags;

	spin_lock_irqsave(&sd->lock, flags);
	sd->irqs++;
	if (sd->efd[vector])
		sivshm_eventfd_signal(sd->efd[vector]);
	if (sd->sig_pid && (sd->sig_mask & BIT(vector)))
		kill_pid(sd->sig_pid, SIGUSR1, 1);
	spin_unlock_irqrestore(&sd->lock, flags);
	wake_up_interruptible(&sd->wait);
}

static irqreturn_t sivshm_msix_irq(int irq, void *data)
{
	struct sivshm_vec *v = data;

	sivshm_deliver(v->sd, v->vector);
	return IRQ_HANDLED;
}

static irqreturn_t sivshm_intx_irq(int irq, void *data)
{
	struct sivshm_dev *sd = data;
	u32 status = sivshm_reg(sd, SIVSHM_REG_INTR_STATUS);
	u32 v;

	if (!status)
		return IRQ_NONE;
	iowrite32(status, sd->regs + SIVSHM_REG_INTR_STATUS);
	for (v = 0; v < sd->nvectors; v++)
		if (status & BIT(v))
			sivshm_deliver(sd, v);
	if (status & SIVSHM_INTR_PEER_CHANGE)
		sivshm_deliver(sd, sd->nvectors);
	return IRQ_HANDLED;
}

static void sivshm_free(struct kref *ref)
{
	struct sivshm_dev *sd = container_of(ref, struct sivshm_dev, ref);

	kfree(sd);
}

static void sivshm_put(void *sd)
{
	struct sivshm_dev *d = sd;

	kref_put(&d->ref, sivshm_free);
}

/*
 * misc_open() calls this under misc_mtx, which misc_deregister() takes:
 * a device being removed is either found here with its reference or not
 * at all.
 */
static int sivshm_open(struct inode *inode, struct file *file)
{
	struct sivshm_dev *sd = container_of(file->private_data,
					     struct sivshm_dev, misc);
	struct sivshm_file *sf;

	sf = kzalloc(sizeof(*sf), GFP_KERNEL);
	if (!sf)
		return -ENOMEM;
	kref_get(&sd->ref);
	sf->sd = sd;
	sf->file = file;
	spin_lock_irq(&sd->lock);
	sf->seen = sd->irqs;
	spin_unlock_irq(&sd->lock);
	mutex_lock(&sd->files_lock);
	list_add(&sf->node, &sd->files);
	mutex_unlock(&sd->files_lock);
	file->private_data = sf;
	return 0;
}

static int sivshm_release(struct inode *inode, struct file *file)
{
	struct sivshm_file *sf = file->private_data;
	struct sivshm_dev *sd = sf->sd;
	struct pid *pid = NULL;

	mutex_lock(&sd->files_lock);
	list_del(&sf->node);
	mutex_unlock(&sd->files_lock);
	/* The task that asked for signals stops getting them with its file. */
	spin_lock_irq(&sd->lock);
	if (sd->sig_pid == task_tgid(current)) {
		pid = sd->sig_pid;
		sd->sig_pid = NULL;
	}
	spin_unlock_irq(&sd->lock);
	put_pid(pid);
	kfree(sf);
	kref_put(&sd->ref, sivshm_free);
	return 0;
}

/*
 * Read-lock the device for a call that may touch it, or -ENODEV (and no
 * lock) once it is removed.  The caller up_read()s the rwsem.
 */
static int sivshm_lock_live(struct sivshm_dev *sd)
{
	down_read(&sd->rwsem);
	if (sd->dead) {
		up_read(&sd->rwsem);
		return -ENODEV;
	}
	return 0;
}

static u64 sivshm_irqs(struct sivshm_dev *sd)
{
	u64 n;

	spin_lock_irq(&sd->lock);
	n = sd->irqs;
	spin_unlock_irq(&sd->lock);
	return n;
}

static ssize_t sivshm_read(struct file *file, char __user *buf, size_t len,
			   loff_t *ppos)
{
	struct sivshm_file *sf = file->private_data;
	struct sivshm_dev *sd = sf->sd;
	u64 now, count;
	int ret;

	if (len < sizeof(u64))
		return -EINVAL;
	if (file->f_flags & O_NONBLOCK) {
		if (sivshm_irqs(sd) == sf->seen)
			return -EAGAIN;
	} else {
		ret = wait_event_interruptible(sd->wait,
					       sivshm_irqs(sd) != sf->seen ||
					       READ_ONCE(sd->dead));
		if (ret)
			return ret;
	}
	if (READ_ONCE(sd->dead))
		return -ENODEV;
	now = sivshm_irqs(sd);
	count = now - sf->seen;
	sf->seen = now;
	if (copy_to_user(buf, &count, sizeof(count)))
		return -EFAULT;
	return sizeof(count);
}

static __poll_t sivshm_poll(struct file *file, poll_table *wait)
{
	struct sivshm_file *sf = file->private_data;

	poll_wait(file, &sf->sd->wait, wait);
	if (READ_ONCE(sf->sd->dead))
		return EPOLLHUP | EPOLLERR;
	return sivshm_irqs(sf->sd) != sf->seen ? EPOLLIN | EPOLLRDNORM : 0;
}

/* Only a zapped mapping faults: the device is gone. */
static vm_fault_t sivshm_vm_fault(struct vm_fault *vmf)
{
	return VM_FAULT_SIGBUS;
}

static const struct vm_operations_struct sivshm_vm_ops = {
	.fault = sivshm_vm_fault,
};

static int sivshm_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct sivshm_file *sf = file->private_data;
	struct sivshm_dev *sd = sf->sd;
	unsigned long len = vma->vm_end - vma->vm_start;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	int ret;

	/* Nothing beyond what this VM may reach: its slice, or the region. */
	if (vma->vm_pgoff > (sd->mappable >> PAGE_SHIFT) ||
	    off > sd->mappable || len > sd->mappable - off)
		return -EINVAL;
	ret = sivshm_lock_live(sd);
	if (ret)
		return ret;
	vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &sivshm_vm_ops;
	/* It is RAM on the host: map it write-back, as the kernel does. */
	ret = remap_pfn_range(vma, vma->vm_start,
			      (sd->mem_phys + off) >> PAGE_SHIFT, len,
			      vma->vm_page_prot);
	up_read(&sd->rwsem);
	return ret;
}

static long sivshm_set_eventfd(struct sivshm_dev *sd,
			       const struct sivshm_irqfd *arg)
{
	struct eventfd_ctx *ctx = NULL, *old;

	if (arg->vector > sd->nvectors)
		return -EINVAL;
	if (arg->fd >= 0) {
		ctx = eventfd_ctx_fdget(arg->fd);
		if (IS_ERR(ctx))
			return PTR_ERR(ctx);
	} else if (arg->fd != -1) {
		return -EBADF;
	}
	spin_lock_irq(&sd->lock);
	old = sd->efd[arg->vector];
	sd->efd[arg->vector] = ctx;
	spin_unlock_irq(&sd->lock);
	if (old)
		eventfd_ctx_put(old);
	return 0;
}

static long sivshm_set_signal(struct sivshm_dev *sd,
			      const struct sivshm_signal *arg)
{
	struct pid *pid = NULL, *old;

	if (arg->signo && arg->signo != SIGUSR1)
		return -EINVAL;
	if (arg->vector_mask & ~GENMASK(sd->nvectors, 0))
		return -EINVAL;
	if (arg->signo)
		pid = get_pid(task_tgid(current));
	spin_lock_irq(&sd->lock);
	old = sd->sig_pid;
	sd->sig_pid = pid;
	sd->sig_mask = arg->signo ? arg->vector_mask : 0;
	spin_unlock_irq(&sd->lock);
	put_pid(old);
	return 0;
}

static long sivshm_do_ioctl(struct sivshm_dev *sd, unsigned int cmd,
			    void __user *argp)
{
	switch (cmd) {
	case SIVSHM_IOC_INFO: {
		struct sivshm_dev_info info = {
			.id = sivshm_reg(sd, SIVSHM_REG_ID),
			.role = sivshm_reg(sd, SIVSHM_REG_ROLE) ==
				SIVSHM_REG_ROLE_MAPPER ? SIVSHM_ROLE_MAPPER :
				SIVSHM_ROLE_REDUCER,
			.nreducers = sivshm_reg(sd, SIVSHM_REG_NREDUCERS),
			.nvectors = sd->nvectors,
			.slice_size = sivshm_reg64(sd, SIVSHM_REG_SLICE_LO),
			.mappable = sd->mappable,
			.peers = sivshm_reg64(sd, SIVSHM_REG_PEERS_LO),
		};

		return copy_to_user(argp, &info, sizeof(info)) ? -EFAULT : 0;
	}
	case SIVSHM_IOC_NOTIFY: {
		struct sivshm_doorbell db;

		if (copy_from_user(&db, argp, sizeof(db)))
			return -EFAULT;
		/* The device checks the peer; the value must not alias. */
		if (db.peer > 0xffff || db.vector >= sd->nvectors)
			return -EINVAL;
		iowrite32(db.peer << 16 | db.vector,
			  sd->regs + SIVSHM_REG_DOORBELL);
		return 0;
	}
	case SIVSHM_IOC_SET_EVENTFD: {
		struct sivshm_irqfd irqfd;

		if (copy_from_user(&irqfd, argp, sizeof(irqfd)))
			return -EFAULT;
		return sivshm_set_eventfd(sd, &irqfd);
	}
	case SIVSHM_IOC_SET_SIGNAL: {
		struct sivshm_signal sig;

		if (copy_from_user(&sig, argp, sizeof(sig)))
			return -EFAULT;
		return sivshm_set_signal(sd, &sig);
	}
	}
	return -ENOTTY;
}

static long sivshm_ioctl(struct file *file, unsigned int cmd,
			 unsigned long uarg)
{
	struct sivshm_file *sf = file->private_data;
	struct sivshm_dev *sd = sf->sd;
	long ret;

	ret = sivshm_lock_live(sd);
	if (ret)
		return ret;
	ret = sivshm_do_ioctl(sd, cmd, (void __user *)uarg);
	up_read(&sd->rwsem);
	return ret;
}

static const struct file_operations sivshm_fops = {
	.owner = THIS_MODULE,
	.open = sivshm_open,
	.release = sivshm_release,
	.read = sivshm_read,
	.poll = sivshm_poll,
	.mmap = sivshm_mmap,
	.unlocked_ioctl = sivshm_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static int sivshm_setup_irqs(struct sivshm_dev *sd)
{
	struct pci_dev *pdev = sd->pdev;
	struct sivshm_vec *vecs;
	int n, i, ret;

	n = pci_alloc_irq_vectors(pdev, sd->nvectors + 1, sd->nvectors + 1,
				  PCI_IRQ_MSIX);
	if (n < 0) {
		/* INTx: one shared line, the status register says which. */
		ret = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_INTX);
		if (ret < 0)
			return ret;
		iowrite32(GENMASK(sd->nvectors - 1, 0) | SIVSHM_INTR_PEER_CHANGE,
			  sd->regs + SIVSHM_REG_INTR_MASK);
		return devm_request_irq(&pdev->dev, pci_irq_vector(pdev, 0),
					sivshm_intx_irq, IRQF_SHARED,
					sd->name, sd);
	}
	sd->nirqs = n;
	vecs = devm_kcalloc(&pdev->dev, n, sizeof(*vecs), GFP_KERNEL);
	if (!vecs)
		return -ENOMEM;
	sd->vecs = vecs;
	for (i = 0; i < n; i++) {
		vecs[i].sd = sd;
		vecs[i].vector = i;
		ret = devm_request_irq(&pdev->dev, pci_irq_vector(pdev, i),
				       sivshm_msix_irq, 0, sd->name, &vecs[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static void sivshm_free_irq_vectors(void *pdev)
{
	pci_free_irq_vectors(pdev);
}

static int sivshm_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct sivshm_dev *sd;
	resource_size_t bar_len;
	int ret;

	sd = kzalloc(sizeof(*sd), GFP_KERNEL);
	if (!sd)
		return -ENOMEM;
	kref_init(&sd->ref);
	init_rwsem(&sd->rwsem);
	mutex_init(&sd->files_lock);
	INIT_LIST_HEAD(&sd->files);
	sd->pdev = pdev;
	spin_lock_init(&sd->lock);
	init_waitqueue_head(&sd->wait);
	/* The device's reference, dropped after everything devm below. */
	ret = devm_add_action_or_reset(&pdev->dev, sivshm_put, sd);
	if (ret)
		return ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	/* MSI-X messages are writes by the device: it must be bus master. */
	pci_set_master(pdev);
	ret = pcim_iomap_regions(pdev, BIT(SIVSHM_BAR_REGS), KBUILD_MODNAME);
	if (ret)
		return ret;
	sd->regs = pcim_iomap_table(pdev)[SIVSHM_BAR_REGS];

	sd->nvectors = sivshm_reg(sd, SIVSHM_REG_NVECTORS);
	sd->mappable = sivshm_reg64(sd, SIVSHM_REG_REGION_LO);
	bar_len = pci_resource_len(pdev, SIVSHM_BAR_MEM);
	/* The device is trusted, but a bad value must not become a mapping. */
	if (!sd->nvectors || sd->nvectors > SIVSHM_MAX_VECTORS ||
	    !sd->mappable || !PAGE_ALIGNED(sd->mappable) ||
	    sd->mappable > bar_len) {
		dev_err(&pdev->dev, "inconsistent device: %u vectors, %llu of %llu bytes\n",
			sd->nvectors, sd->mappable, (u64)bar_len);
		return -ENODEV;
	}
	if (!devm_request_mem_region(&pdev->dev,
				     pci_resource_start(pdev, SIVSHM_BAR_MEM),
				     sd->mappable, KBUILD_MODNAME))
		return -EBUSY;
	sd->mem_phys = pci_resource_start(pdev, SIVSHM_BAR_MEM);
	sd->mem = devm_memremap(&pdev->dev, sd->mem_phys, sd->mappable,
				MEMREMAP_WB);
	if (IS_ERR(sd->mem))
		return PTR_ERR(sd->mem);

	sd->index = ida_alloc(&sivshm_ida, GFP_KERNEL);
	if (sd->index < 0)
		return sd->index;
	snprintf(sd->name, sizeof(sd->name), "sivshm%d", sd->index);

	ret = devm_add_action_or_reset(&pdev->dev, sivshm_free_irq_vectors,
				       pdev);
	if (ret)
		goto err_free_index;
	ret = sivshm_setup_irqs(sd);
	if (ret)
		goto err_free_index;

	sd->misc.minor = MISC_DYNAMIC_MINOR;
	sd->misc.name = sd->name;
	sd->misc.fops = &sivshm_fops;
	sd->misc.parent = &pdev->dev;
	ret = misc_register(&sd->misc);
	if (ret)
		goto err_free_index;
	pci_set_drvdata(pdev, sd);
	dev_info(&pdev->dev, "%s: id %u, %llu bytes, %u vectors, %s\n",
		 sd->name, sivshm_reg(sd, SIVSHM_REG_ID), sd->mappable,
		 sd->nvectors, sd->nirqs ? "MSI-X" : "INTx");
	return 0;

err_free_index:
	ida_free(&sivshm_ida, sd->index);
	return ret;
}

/* Stop the handlers before the state they use can go. */
static void sivshm_free_irqs(struct sivshm_dev *sd)
{
	struct pci_dev *pdev = sd->pdev;
	int i;

	if (!sd->nirqs) {
		devm_free_irq(&pdev->dev, pci_irq_vector(pdev, 0), sd);
		return;
	}
	for (i = 0; i < sd->nirqs; i++)
		devm_free_irq(&pdev->dev, pci_irq_vector(pdev, i),
			      &sd->vecs[i]);
}

static void sivshm_remove(struct pci_dev *pdev)
{
	struct sivshm_dev *sd = pci_get_drvdata(pdev);
	struct eventfd_ctx *efd[SIVSHM_MAX_VECTORS + 1];
	struct sivshm_file *sf;
	struct pid *pid;
	u32 v;

	misc_deregister(&sd->misc);
	/* From here on no file touches the registers or maps the memory. */
	down_write(&sd->rwsem);
	WRITE_ONCE(sd->dead, true);
	up_write(&sd->rwsem);
	sivshm_free_irqs(sd);
	mutex_lock(&sd->files_lock);
	list_for_each_entry(sf, &sd->files, node)
		unmap_mapping_range(sf->file->f_mapping, 0, 0, 1);
	mutex_unlock(&sd->files_lock);

	spin_lock_irq(&sd->lock);
	memcpy(efd, sd->efd, sizeof(efd));
	memset(sd->efd, 0, sizeof(sd->efd));
	pid = sd->sig_pid;
	sd->sig_pid = NULL;
	spin_unlock_irq(&sd->lock);
	for (v = 0; v <= sd->nvectors; v++)
		if (efd[v])
			eventfd_ctx_put(efd[v]);
	put_pid(pid);
	wake_up_interruptible_all(&sd->wait);
	ida_free(&sivshm_ida, sd->index);
	/* devm drops the device's reference on sd after this returns. */
}

static const struct pci_device_id sivshm_ids[] = {
	{ PCI_DEVICE(SIVSHM_PCI_VENDOR_ID, SIVSHM_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, sivshm_ids);

static struct pci_driver sivshm_driver = {
	.name = KBUILD_MODNAME,
	.id_table = sivshm_ids,
	.probe = sivshm_probe,
	.remove = sivshm_remove,
};
module_pci_driver(sivshm_driver);

MODULE_DESCRIPTION("Secure sliced inter-VM shared memory (sivshm) driver");
MODULE_LICENSE("GPL");
