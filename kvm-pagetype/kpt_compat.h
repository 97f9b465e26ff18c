/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What differs between the kernels kvm_pagetype.ko builds for: Debian
 * 12's 6.1 and the 6.12 of bookworm-backports and Debian 13.  Every
 * LINUX_VERSION_CODE test of the module is here, each behind a small
 * wrapper, so that the .c files read the same on both.
 */
#ifndef KPT_COMPAT_H
#define KPT_COMPAT_H

#include <linux/iommu.h>
#include <linux/kvm_host.h>
#include <linux/mm.h>
#include <linux/pci.h>
#include <linux/version.h>
#include <asm/kvm_page_track.h>

#include "kpt.h"

/* iommu_map() took a gfp from 6.3. */
static inline int kpt_iommu_map(struct iommu_domain *domain,
				unsigned long iova, phys_addr_t paddr,
				size_t size, int prot)
{
#if KERNEL_VERSION(6, 3, 0) > LINUX_VERSION_CODE	/* before 6.3 */
	return iommu_map(domain, iova, paddr, size, prot);
#else
	return iommu_map(domain, iova, paddr, size, prot, GFP_KERNEL_ACCOUNT);
#endif
}

/* pin_user_pages_remote() lost its vmas in 6.5.  Under mmap_read_lock. */
static inline long kpt_pin_user_pages_remote(struct mm_struct *mm,
					     unsigned long start,
					     unsigned long nr_pages,
					     unsigned int gup_flags,
					     struct page **pages)
{
#if KERNEL_VERSION(6, 5, 0) > LINUX_VERSION_CODE	/* before 6.5 */
	return pin_user_pages_remote(mm, start, nr_pages, gup_flags, pages,
				     NULL, NULL);
#else
	return pin_user_pages_remote(mm, start, nr_pages, gup_flags, pages,
				     NULL);
#endif
}

/* A paging domain is allocated for a device from 6.11. */
static inline struct iommu_domain *kpt_domain_alloc(struct pci_dev *pdev)
{
#if KERNEL_VERSION(6, 11, 0) > LINUX_VERSION_CODE	/* before 6.11 */
	return iommu_domain_alloc(&pci_bus_type) ?: ERR_PTR(-ENOMEM);
#else
	return iommu_paging_domain_alloc(&pdev->dev);
#endif
}

/*
 * Write-track gfn, or stop: 0, or -EFAULT when no memslot holds it.
 * From 6.7 tracking is by gfn, and KVM takes kvm->srcu and the mmu_lock
 * itself.
 */
static inline int kpt_write_track(struct kvm *kvm, u64 gfn, bool on)
{
	int ret;
#if KERNEL_VERSION(6, 7, 0) > LINUX_VERSION_CODE	/* before 6.7 */
	struct kvm_memory_slot *slot;
	int idx;

	idx = srcu_read_lock(&kvm->srcu);
	write_lock(&kvm->mmu_lock);
	slot = gfn_to_memslot(kvm, gfn);
	/*
	 * A slot being deleted or moved, its tracking already flushed
	 * (kpt_region_gone): a frame tracked there now would be untracked
	 * later in the new slot, whose count KVM WARNs below zero.
	 */
	if (slot && on && (slot->flags & KVM_MEMSLOT_INVALID))
		slot = NULL;
	ret = slot ? 0 : -EFAULT;
	if (slot && on)
		kvm_slot_page_track_add_page(kvm, slot, gfn,
					     KVM_PAGE_TRACK_WRITE);
	else if (slot)
		kvm_slot_page_track_remove_page(kvm, slot, gfn,
						KVM_PAGE_TRACK_WRITE);
	write_unlock(&kvm->mmu_lock);
	srcu_read_unlock(&kvm->srcu, idx);
#else
	ret = on ? kvm_write_track_add_gfn(kvm, gfn) :
		   kvm_write_track_remove_gfn(kvm, gfn);
	if (ret == -EINVAL)
		ret = -EFAULT;				/* no memslot */
#endif
	return ret;
}

/*
 * The notifier's shape changed in 6.7: track_write lost its vCPU (it
 * still runs in the vCPU thread) and track_flush_slot became
 * track_remove_region.  kpt_track_write() and kpt_region_gone() keep
 * one shape; these adapt it.
 */
#if KERNEL_VERSION(6, 7, 0) > LINUX_VERSION_CODE	/* before 6.7 */
static inline void kpt_track_flush_slot(struct kvm *kvm,
					struct kvm_memory_slot *slot,
					struct kvm_page_track_notifier_node *node)
{
	kpt_region_gone(node, slot->base_gfn, slot->npages);
}

static inline void kpt_set_notifier(struct kvm_page_track_notifier_node *n)
{
	n->track_write = kpt_track_write;
	n->track_flush_slot = kpt_track_flush_slot;
}
#else
static inline void kpt_track_write_gpa(gpa_t gpa, const u8 *new, int bytes,
				       struct kvm_page_track_notifier_node *node)
{
	kpt_track_write(kvm_get_running_vcpu(), gpa, new, bytes, node);
}

static inline void kpt_track_remove_region(gfn_t gfn, unsigned long nr_pages,
					   struct kvm_page_track_notifier_node *node)
{
	kpt_region_gone(node, gfn, nr_pages);
}

static inline void kpt_set_notifier(struct kvm_page_track_notifier_node *n)
{
	n->track_write = kpt_track_write_gpa;
	n->track_remove_region = kpt_track_remove_region;
}
#endif

#endif /* KPT_COMPAT_H */
