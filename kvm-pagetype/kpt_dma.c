// SPDX-License-Identifier: GPL-2.0
/*
 * DMA confinement: a PCI device, alone in its IOMMU group, gets an IOMMU
 * domain of its own in which the VM's RAM is mapped at IOVA = gpa, except
 * the frames whose type forbids DMA.  The rule engine calls the dma and
 * dma_sync hooks as types change.  docs/pagetype.md, "DMA confinement".
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/iommu.h>
#include <linux/kvm_host.h>
#include <linux/mm.h>
#include <linux/pci.h>
#include <linux/sched/mm.h>
#include <linux/capability.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kpt.h"
#include "kpt_compat.h"

/* The most guest-physical space DMA confinement covers: 16 GiB. */
#define KPT_DMA_MAX_FRAMES	BIT_ULL(22)
/* Pages pinned per pin_user_pages_remote() call. */
#define KPT_PIN_CHUNK		512UL
#define KPT_DMA_PROT		(IOMMU_READ | IOMMU_WRITE | IOMMU_CACHE)

/*
 * A device confined to a VM's RAM: its own IOMMU domain, where frame gfn
 * is at IOVA gfn << PAGE_SHIFT while its type allows DMA.  Every RAM frame
 * is pinned for as long as the device is confined, mapped or not, so a
 * type change only maps or unmaps.  Reached from the engine's dma hook
 * under the engine's lock, and set and cleared under it.
 */
struct kpt_dma {
	struct pci_dev *pdev;
	struct iommu_group *group;
	struct iommu_domain *domain;
	struct mm_struct *mm;		/* whose pinned_vm holds the pins */
	u64 nr_frames;
	struct page **pages;		/* per frame: pinned, or NULL */
	unsigned long *mapped;		/* per frame: mapped in domain */
	u64 nr_pinned;
	/* Lazy unmaps whose IOTLB entries the next kpt_dma_sync flushes. */
	struct iommu_iotlb_gather gather;
};

/* Pages pinned for DMA by every VM, until the moment they are unpinned. */
atomic64_t kpt_dma_pinned_pages;

/* Pin n pages of the VMM's at hva. */
static long kpt_pin_pages(struct mm_struct *mm, unsigned long hva,
			  unsigned long n, struct page **pages)
{
	long ret;

	mmap_read_lock(mm);
	ret = kpt_pin_user_pages_remote(mm, hva, n, FOLL_LONGTERM | FOLL_WRITE,
					pages);
	mmap_read_unlock(mm);
	return ret;
}

/* Map gfn for DMA, if it is pinned and not mapped yet. */
static int kpt_dma_map(struct kpt_vm *vm, struct kpt_dma *dma, u64 gfn)
{
	int ret;

	if (!dma->pages[gfn] || test_bit(gfn, dma->mapped))
		return 0;
	ret = kpt_iommu_map(dma->domain, gfn << PAGE_SHIFT,
			    page_to_phys(dma->pages[gfn]), PAGE_SIZE,
			    KPT_DMA_PROT);
	if (ret) {
		dev_warn_ratelimited(&dma->pdev->dev,
				     "vm%u: cannot map gfn %#llx (%d): left unreachable\n",
				     vm->id, gfn, ret);
		return ret;
	}
	__set_bit(gfn, dma->mapped);
	vm->dma_maps++;
	return 0;
}

/* Account for an unmap of gfn that removed @unmapped bytes. */
static int kpt_dma_account_unmap(struct kpt_vm *vm, struct kpt_dma *dma,
				 u64 gfn, size_t unmapped)
{
	if (unmapped != PAGE_SIZE) {
		dev_warn_ratelimited(&dma->pdev->dev,
				     "vm%u: unmap of gfn %#llx removed %zu bytes\n",
				     vm->id, gfn, unmapped);
		return -EIO;
	}
	__clear_bit(gfn, dma->mapped);
	vm->dma_unmaps++;
	return 0;
}

/*
 * Unmap gfn.  iommu_unmap() syncs the IOTLB before it returns: from then
 * on no DMA of the device reaches the frame, not even through a cached
 * translation.  That is one flush per frame (coarse mode).
 */
static int kpt_dma_unmap(struct kpt_vm *vm, struct kpt_dma *dma, u64 gfn)
{
	size_t unmapped;

	if (!test_bit(gfn, dma->mapped))
		return 0;
	unmapped = iommu_unmap(dma->domain, gfn << PAGE_SHIFT, PAGE_SIZE);
	vm->dma_flushes++;
	return kpt_dma_account_unmap(vm, dma, gfn, unmapped);
}

/*
 * Unmap gfn, leaving its IOTLB entry to kpt_dma_sync: one flush for all
 * the lazy unmaps in between.  The IOMMU core syncs a gather at once when
 * the next page is not next to its range, so each page is unmapped into
 * a gather of its own, which is then folded into dma->gather.  The range
 * is kept a naturally aligned power of two: VT-d's page-selective
 * invalidation covers such a block, and 6.1 does not align it itself.
 */
static int kpt_dma_unmap_lazy(struct kpt_vm *vm, struct kpt_dma *dma,
			      u64 gfn)
{
	struct iommu_iotlb_gather one;
	unsigned long start, end, size = PAGE_SIZE;
	size_t unmapped;

	if (!test_bit(gfn, dma->mapped))
		return 0;
	iommu_iotlb_gather_init(&one);
	unmapped = iommu_unmap_fast(dma->domain, gfn << PAGE_SHIFT, PAGE_SIZE,
				    &one);
	start = min(dma->gather.start, one.start);
	end = max(dma->gather.end, one.end);
	if (one.start <= one.end) {
		while (ALIGN_DOWN(start, size) + size - 1 < end)
			size <<= 1;
		dma->gather.start = ALIGN_DOWN(start, size);
		dma->gather.end = dma->gather.start + size - 1;
		dma->gather.pgsize = PAGE_SIZE;
	}
	list_splice_init(&one.freelist, &dma->gather.freelist);
	return kpt_dma_account_unmap(vm, dma, gfn, unmapped);
}

/* The engine's dma hook: the frame's type now allows DMA, or will not. */
int kpt_dma_hook(void *priv, u64 gfn, int how)
{
	struct kpt_vm *vm = priv;
	struct kpt_dma *dma = vm->dma;

	if (!dma || gfn >= dma->nr_frames)
		return 0;
	switch (how) {
	case PT_DMA_GRANT:
		return kpt_dma_map(vm, dma, gfn);
	case PT_DMA_REVOKE:
		return kpt_dma_unmap(vm, dma, gfn);
	}
	return kpt_dma_unmap_lazy(vm, dma, gfn);
}

/* The engine's dma_sync hook: one IOTLB flush for the lazy unmaps. */
void kpt_dma_sync(void *priv)
{
	struct kpt_vm *vm = priv;
	struct kpt_dma *dma = vm->dma;

	if (!dma || dma->gather.start > dma->gather.end)
		return;
	iommu_iotlb_sync(dma->domain, &dma->gather);
	iommu_iotlb_gather_init(&dma->gather);
	vm->dma_flushes++;
}

/* Charge n pinned pages to the VMM's RLIMIT_MEMLOCK, as RDMA does. */
static int kpt_dma_charge(struct kpt_dma *dma, unsigned long n)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;

	if (atomic64_add_return(n, &dma->mm->pinned_vm) > limit &&
	    !capable(CAP_IPC_LOCK)) {
		atomic64_sub(n, &dma->mm->pinned_vm);
		return -ENOMEM;
	}
	return 0;
}

/* Pin the slot's frames below dma->nr_frames, and map those DMA may reach. */
static int kpt_dma_pin_slot(struct kpt_vm *vm, struct kpt_dma *dma,
			    struct kvm_memory_slot *slot)
{
	u64 gfn = slot->base_gfn;
	u64 end = min(gfn + slot->npages, dma->nr_frames);
	unsigned long hva, n;
	long pinned, i;
	int ret;

	while (gfn < end) {
		n = min_t(u64, end - gfn, KPT_PIN_CHUNK);
		hva = slot->userspace_addr + ((gfn - slot->base_gfn) << PAGE_SHIFT);
		pinned = kpt_pin_pages(dma->mm, hva, n, dma->pages + gfn);
		if (pinned <= 0)
			return pinned ?: -EFAULT;
		ret = kpt_dma_charge(dma, pinned);
		if (ret) {
			unpin_user_pages(dma->pages + gfn, pinned);
			memset(dma->pages + gfn, 0, pinned * sizeof(*dma->pages));
			return ret;
		}
		dma->nr_pinned += pinned;
		atomic64_add(pinned, &kpt_dma_pinned_pages);
		for (i = 0; i < pinned; i++, gfn++) {
			if (!pt_engine_dma_ok_locked(&vm->engine, gfn))
				continue;
			ret = kpt_dma_map(vm, dma, gfn);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* Under the engine's lock: the types cannot change while we map. */
static int kpt_dma_pin_all(struct kpt_vm *vm, struct kpt_dma *dma)
{
	struct kvm *kvm = vm->kvm;
	struct kvm_memory_slot *slot;
	int idx, bkt, ret = 0;

	if (!mmget_not_zero(kvm->mm))
		return -ESRCH;
	idx = srcu_read_lock(&kvm->srcu);
	kvm_for_each_memslot(slot, bkt, kvm_memslots(kvm)) {
		/* KVM's private slots, ROM and slots going are no DMA target. */
		if (slot->id >= KVM_USER_MEM_SLOTS ||
		    (slot->flags & (KVM_MEM_READONLY | KVM_MEMSLOT_INVALID)))
			continue;
		ret = kpt_dma_pin_slot(vm, dma, slot);
		if (ret)
			break;
	}
	srcu_read_unlock(&kvm->srcu, idx);
	mmput(kvm->mm);
	return ret;
}

/*
 * Unpin everything, only once no device can reach it: after the domain
 * is detached (which flushes its IOTLB entries) or was never attached.
 */
static void kpt_dma_unpin(struct kpt_dma *dma)
{
	u64 gfn;

	for (gfn = 0; gfn < dma->nr_frames; gfn++) {
		if (!dma->pages[gfn])
			continue;
		/* The device may have written it. */
		unpin_user_pages_dirty_lock(dma->pages + gfn, 1, true);
		dma->pages[gfn] = NULL;
	}
	atomic64_sub(dma->nr_pinned, &dma->mm->pinned_vm);
	atomic64_sub(dma->nr_pinned, &kpt_dma_pinned_pages);
	dma->nr_pinned = 0;
}

static void kpt_dma_free(struct kpt_dma *dma)
{
	bitmap_free(dma->mapped);
	kvfree(dma->pages);
	kfree(dma);
}

/*
 * Undo kpt_dma_confine, in reverse, except that the domain is detached
 * before the pages are unpinned and is freed whole (with every mapping
 * in it) instead of being unmapped frame by frame.
 */
static void kpt_dma_teardown(struct kpt_dma *dma)
{
	/*
	 * Quiesced before the host's default domain takes it back, as vfio
	 * does: no DMA meant for the VM lands at a host address then.  A
	 * device with no reset method keeps its state, bus mastering off.
	 */
	pci_clear_master(dma->pdev);
	if (pci_reset_function(dma->pdev))
		pci_info(dma->pdev, "no reset method: bus mastering off only\n");
	iommu_detach_group(dma->domain, dma->group);
	iommu_domain_free(dma->domain);
	kpt_dma_unpin(dma);
	iommu_group_release_dma_owner(dma->group);
	iommu_group_put(dma->group);
	pci_dev_put(dma->pdev);
	kpt_dma_free(dma);
}

/* Release the VM's device, if any (and if pdev, only that one). */
int kpt_dma_release(struct kpt_vm *vm, struct pci_dev *pdev, const char *why)
{
	struct kpt_dma *dma;

	pt_engine_lock(&vm->engine);
	dma = vm->dma;
	if (dma && (!pdev || pdev == dma->pdev)) {
		vm->dma = NULL;
		WRITE_ONCE(vm->dma_pinned, 0);
	} else {
		dma = NULL;
	}
	pt_engine_unlock(&vm->engine);
	if (!dma)
		return -ENOENT;
	pci_info(dma->pdev, "released from vm%u (%s)\n", vm->id, why);
	kpt_dma_teardown(dma);
	return 0;
}

/* A memslot went: a device that could reach its pages is released. */
void kpt_dma_region_gone(struct kpt_vm *vm, u64 gfn, u64 npages)
{
	bool hit = false;
	u64 end;

	pt_engine_lock(&vm->engine);
	if (vm->dma) {
		end = min(gfn + npages, vm->dma->nr_frames);
		for (; gfn < end && !hit; gfn++)
			hit = vm->dma->pages[gfn];
	}
	pt_engine_unlock(&vm->engine);
	if (hit)
		kpt_dma_release(vm, NULL, "a memslot it maps was removed");
}

static int kpt_count_dev(struct device *dev, void *data)
{
	(*(int *)data)++;
	return 0;
}

static struct pci_dev *kpt_dma_get_pdev(void __user *argp)
{
	struct kvm_pagetype_dma_device d;
	struct pci_dev *pdev;

	if (copy_from_user(&d, argp, sizeof(d)))
		return ERR_PTR(-EFAULT);
	if (d.pad || d.flags || d.pad2 || d.segment > 0xffff)
		return ERR_PTR(-EINVAL);
	pdev = pci_get_domain_bus_and_slot(d.segment, d.bus, d.devfn);
	return pdev ?: ERR_PTR(-ENODEV);
}

long kpt_dma_confine(struct kpt_vm *vm, void __user *argp)
{
	struct kvm *kvm = vm->kvm;
	struct kpt_dma *dma;
	int ret, devices = 0;

	if (kvm->mm != current->mm)
		return -EPERM;		/* it pins the VMM's memory */
	/* A host device handed to a VM: the node's mode is not enough. */
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (READ_ONCE(vm->killed))
		return -EIO;
	if (vm->engine.nr_frames > KPT_DMA_MAX_FRAMES)
		return -E2BIG;
	/* One device per VM (checked again below, under the same lock). */
	pt_engine_lock(&vm->engine);
	ret = vm->dma ? -EBUSY : 0;
	pt_engine_unlock(&vm->engine);
	if (ret)
		return ret;
	dma = kzalloc(sizeof(*dma), GFP_KERNEL_ACCOUNT);
	if (!dma)
		return -ENOMEM;
	dma->nr_frames = vm->engine.nr_frames;
	dma->mm = kvm->mm;
	iommu_iotlb_gather_init(&dma->gather);
	dma->pages = kvcalloc(dma->nr_frames, sizeof(*dma->pages),
			      GFP_KERNEL_ACCOUNT);
	dma->mapped = bitmap_zalloc(dma->nr_frames, GFP_KERNEL_ACCOUNT);
	ret = -ENOMEM;
	if (!dma->pages || !dma->mapped)
		goto err_free;

	dma->pdev = kpt_dma_get_pdev(argp);
	if (IS_ERR(dma->pdev)) {
		ret = PTR_ERR(dma->pdev);
		goto err_free;
	}
	/* An endpoint: a bridge forwards the DMA of devices behind it. */
	if (dma->pdev->hdr_type != PCI_HEADER_TYPE_NORMAL) {
		pci_warn(dma->pdev, "vm%u: not an endpoint, not confined\n",
			 vm->id);
		ret = -EINVAL;
		goto err_put_pdev;
	}
	dma->group = iommu_group_get(&dma->pdev->dev);
	if (!dma->group) {
		pci_warn(dma->pdev, "vm%u: not behind an IOMMU, not confined\n",
			 vm->id);
		ret = -ENODEV;
		goto err_put_pdev;
	}
	iommu_group_for_each_dev(dma->group, &devices, kpt_count_dev);
	if (devices != 1) {
		pci_warn(dma->pdev, "vm%u: IOMMU group %d has %d devices, not confined\n",
			 vm->id, iommu_group_id(dma->group), devices);
		ret = -EINVAL;
		goto err_put_group;
	}
	/*
	 * From here no DMA-API driver can bind to it, as for vfio-pci.  A
	 * driver that manages DMA itself (vfio-pci, pci-stub) would not stop
	 * the claim: no driver at all, checked under the device's lock.
	 */
	device_lock(&dma->pdev->dev);
	ret = dma->pdev->dev.driver ? -EPERM :
	      iommu_group_claim_dma_owner(dma->group, vm);
	device_unlock(&dma->pdev->dev);
	if (ret) {
		pci_warn(dma->pdev, "vm%u: a driver or another owner holds its DMA (%d), not confined\n",
			 vm->id, ret);
		goto err_put_group;
	}
	dma->domain = kpt_domain_alloc(dma->pdev);
	if (IS_ERR(dma->domain)) {
		ret = PTR_ERR(dma->domain);
		goto err_release_owner;
	}
	ret = iommu_attach_group(dma->domain, dma->group);
	if (ret)
		goto err_free_domain;

	pt_engine_lock(&vm->engine);
	ret = -EBUSY;
	if (vm->dma)
		goto err_unlock;
	ret = kpt_dma_pin_all(vm, dma);
	if (ret)
		goto err_unlock;
	vm->dma = dma;
	WRITE_ONCE(vm->dma_pinned, dma->nr_pinned);
	pt_engine_unlock(&vm->engine);
	pci_info(dma->pdev, "confined to vm%u: %llu pages pinned, DMA to RAM at IOVA = GPA by page type\n",
		 vm->id, dma->nr_pinned);
	return 0;

err_unlock:
	pt_engine_unlock(&vm->engine);
	iommu_detach_group(dma->domain, dma->group);
err_free_domain:
	iommu_domain_free(dma->domain);
	kpt_dma_unpin(dma);		/* not attached now: unreachable */
err_release_owner:
	iommu_group_release_dma_owner(dma->group);
err_put_group:
	iommu_group_put(dma->group);
err_put_pdev:
	pci_dev_put(dma->pdev);
err_free:
	kpt_dma_free(dma);
	return ret;
}

long kpt_dma_release_ioctl(struct kpt_vm *vm, void __user *argp)
{
	struct pci_dev *pdev = kpt_dma_get_pdev(argp);
	int ret;

	if (IS_ERR(pdev))
		return PTR_ERR(pdev);
	ret = kpt_dma_release(vm, pdev, "by its VMM");
	pci_dev_put(pdev);
	return ret;
}
