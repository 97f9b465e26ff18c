/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvm_pagetype's private header: the attached VM, and what each file of
 * the module offers the others.
 */
#ifndef KPT_H
#define KPT_H

#include <linux/atomic.h>
#include <linux/kvm_host.h>
#include <linux/list.h>
#include <linux/types.h>
#include <asm/kvm_page_track.h>

#include "pt_rules.h"

struct dentry;
struct kpt_dma;
struct pci_dev;

struct kpt_vm {
	refcount_t refs;		/* the file's, and kpt_unseen.c's */
	struct kpt_bits __rcu *tracked;	/* kpt_track.c */
	struct rcu_head rcu;		/* kpt_vm_put() */
	struct kvm *kvm;
	struct pt_engine engine;
	struct pt_env env;
	struct kvm_page_track_notifier_node notifier;
	struct list_head node;		/* on kpt_vms */
	struct dentry *debugfs;
	unsigned int id;
	u64 doorbells;			/* batches run through it */
	int killed;			/* set once, by kpt_kill */
	u32 kill_reason;		/* KVM_PAGETYPE_KILL_* */
	struct kpt_dma *dma;		/* under the engine's lock */
	u64 dma_maps, dma_unmaps, dma_flushes;	/* under the engine's lock */
	u64 dma_pinned;
};

/* kpt_main.c: the VM's end, its batches (ioctl or doorbell), its counters. */
/*
 * The attached VM of kvm, referenced (kpt_vm_put()), or NULL; any context
 * (an RCU lookup).
 */
struct kpt_vm *kpt_vm_get(struct kvm *kvm);
/* Under rcu_read_lock(): the attached VM of kvm, unreferenced, or NULL. */
struct kpt_vm *kpt_vm_lookup_rcu(struct kvm *kvm);
void kpt_vm_put(struct kpt_vm *vm);
void kpt_kill(struct kpt_vm *vm, u32 why, u64 gpa, u16 rule);
long kpt_batch(struct kpt_vm *vm, struct kvm_vcpu *vcpu, u64 gpa, u32 count);
void kpt_vm_stats(struct kpt_vm *vm, struct kvm_pagetype_stats *s);
void kpt_global_stats(struct kvm_pagetype_stats *sum);

/* kpt_dma.c: DMA confinement. */
extern atomic64_t kpt_dma_pinned_pages;
int kpt_dma_hook(void *priv, u64 gfn, int how);
void kpt_dma_sync(void *priv);
long kpt_dma_confine(struct kpt_vm *vm, void __user *argp);
long kpt_dma_release_ioctl(struct kpt_vm *vm, void __user *argp);
int kpt_dma_release(struct kpt_vm *vm, struct pci_dev *pdev, const char *why);
void kpt_dma_region_gone(struct kpt_vm *vm, u64 gfn, u64 npages);

/*
 * kpt_track.c: the engine's track hook, the page-track notifier in the
 * shape kpt_compat.h adapts, and the emulation of faults under TDP.
 */
int kpt_track_init(void);
void kpt_track_exit(void);
int kpt_track(void *priv, u64 gfn, bool on);
void kpt_track_write(struct kvm_vcpu *vcpu, gpa_t gpa, const u8 *new,
		     int bytes, struct kvm_page_track_notifier_node *node);
void kpt_region_gone(struct kvm_page_track_notifier_node *node, u64 gfn,
		     u64 npages);
/* A write no notifier saw: its frames checked as a trapped write's. */
void kpt_check_range(struct kpt_vm *vm, u64 gpa, u64 len);
/* Whether kvm's VM tracks a frame in the range: any context. */
bool kpt_tracked_any(struct kvm *kvm, u64 gpa, u64 len);
void kpt_tracked_free(struct kpt_vm *vm);

/* kpt_unseen.c: KVM's own writes of guest memory, probed. */
int kpt_unseen_init(void);
void kpt_unseen_exit(void);

/* kpt_debugfs.c: the counters, global and per VM. */
void kpt_debugfs_init(void);
void kpt_debugfs_exit(void);
void kpt_debugfs_add_vm(struct kpt_vm *vm);
void kpt_debugfs_remove_vm(struct kpt_vm *vm);

#endif /* KPT_H */
