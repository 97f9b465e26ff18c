// SPDX-License-Identifier: GPL-2.0
/*
 * kvm_pagetype: Xen-style paravirtual page types for a KVM guest.
 *
 * A VMM opens /dev/kvm-pagetype and attaches one of its KVM VMs.  From
 * then on the guest's op batches (pin a frame as a level-n page table,
 * unpin it, convert frames to and from semi-writable) run through the rule
 * engine of pt_rules.c, pinned tables are write-tracked with KVM's page
 * tracking, and every trapped write to one is validated like Xen's
 * mmu_update.  A write that breaks a rule kills that VM (kvm_vm_dead) and
 * nothing else.  A PCI device can be confined to the VM's RAM through the
 * host IOMMU, where the frame types decide what it may reach.
 * docs/pagetype.md is the specification.
 *
 * This file holds the device node, attach and detach, the ioctls, the
 * batches and the counters; kpt_track.c the write tracking, kpt_unseen.c
 * KVM's own writes, kpt_dma.c the DMA confinement, kpt_debugfs.c the
 * debugfs files (kpt.h).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/file.h>
#include <linux/fs.h>
#include <linux/kvm_host.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/ratelimit.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <asm/kvm_page_track.h>

#include "kpt.h"
#include "kpt_compat.h"

/*
 * The most guest memory the words cover: 512 GiB.  The largest array, a
 * shadow pointer per frame, then stays below the INT_MAX bytes kvmalloc
 * takes without a WARN (a panic on a panic_on_warn host).
 */
#define KPT_MAX_FRAMES		BIT_ULL(27)

/*
 * The most tables a VM may have validated at once, in percent of its
 * frames: each holds a page of host kernel memory (its shadow), charged
 * to the VMM's memory cgroup.  A Linux guest's tables are a few percent
 * of its memory; past the bound a pin gets R_FULL and a write that would
 * validate a table kills the VM.
 */
static unsigned int max_tables_pct = 25;

static int kpt_pct_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;
	int ret = kstrtouint(val, 0, &n);

	if (ret)
		return ret;
	if (!n || n > 100)
		return -EINVAL;
	WRITE_ONCE(max_tables_pct, n);
	return 0;
}

static const struct kernel_param_ops kpt_pct_ops = {
	.set = kpt_pct_set,
	.get = param_get_uint,
};
module_param_cb(max_tables_pct, &kpt_pct_ops, &max_tables_pct, 0644);
MODULE_PARM_DESC(max_tables_pct,
		 "the most page tables a VM may have validated, in percent of its memory (1..100), taken at attach");

/* One open /dev/kvm-pagetype: at most one VM. */
struct kpt_file {
	struct mutex lock;		/* vm */
	struct kpt_vm *vm;
};

static LIST_HEAD(kpt_vms);
static DEFINE_MUTEX(kpt_vms_lock);
/* The same VMs by their struct kvm, for lookups from any context. */
static DEFINE_XARRAY(kpt_vms_by_kvm);

/* A struct kvm is large and aligned: its address over 64 is unique. */
static unsigned long kpt_kvm_index(struct kvm *kvm)
{
	return (unsigned long)kvm >> 6;
}

/* The counters of VMs already detached, for the global totals. */
static struct kvm_pagetype_stats kpt_retired;
static unsigned int kpt_next_id;

static const char * const kpt_kill_names[] = {
	[KVM_PAGETYPE_KILL_WRITE] = "a trapped write broke a rule",
	[KVM_PAGETYPE_KILL_BATCH] = "malformed batch",
	[KVM_PAGETYPE_KILL_MEMSLOT] = "memslot holding a pinned table removed",
	[KVM_PAGETYPE_KILL_UNSEEN] = "a write KVM made itself broke a rule",
};

/* One log budget per reason: a flood of one kind hides no other. */
static struct ratelimit_state kpt_kill_rs[ARRAY_SIZE(kpt_kill_names)];

/*
 * Kill the VM: its vCPUs leave KVM_RUN with -EIO and never re-enter.  The
 * write that caused it is already in guest memory (docs/pagetype.md, "The
 * window").
 */
void kpt_kill(struct kpt_vm *vm, u32 why, u64 gpa, u16 rule)
{
	if (xchg(&vm->killed, 1))
		return;
	vm->kill_reason = why;
	if (__ratelimit(&kpt_kill_rs[why]))
		pr_warn("vm%u (pid %d) killed: %s at gpa %#llx (result %u)\n",
			vm->id, vm->kvm->userspace_pid, kpt_kill_names[why],
			gpa, rule);
	kvm_vm_dead(vm->kvm);
}

struct kpt_vm *kpt_vm_get(struct kvm *kvm)
{
	struct kpt_vm *vm;

	rcu_read_lock();
	vm = xa_load(&kpt_vms_by_kvm, kpt_kvm_index(kvm));
	if (vm && !refcount_inc_not_zero(&vm->refs))
		vm = NULL;
	rcu_read_unlock();
	return vm;
}

struct kpt_vm *kpt_vm_lookup_rcu(struct kvm *kvm)
{
	return xa_load(&kpt_vms_by_kvm, kpt_kvm_index(kvm));
}

/*
 * The last reference frees the engine and lets the VM go; the struct
 * after a grace period (kpt_vm_get() may be looking at it).
 */
void kpt_vm_put(struct kpt_vm *vm)
{
	if (!refcount_dec_and_test(&vm->refs))
		return;
	pt_engine_destroy(&vm->engine);
	kpt_tracked_free(vm);
	kvm_put_kvm(vm->kvm);
	kfree_rcu(vm, rcu);
}

static int kpt_read_table(void *priv, u64 gfn, u64 *entries)
{
	struct kpt_vm *vm = priv;
	int idx, ret;

	idx = srcu_read_lock(&vm->kvm->srcu);
	ret = kvm_read_guest(vm->kvm, gfn << PAGE_SHIFT, entries, PAGE_SIZE);
	srcu_read_unlock(&vm->kvm->srcu, idx);
	return ret;
}

/*
 * From the ioctl, results go back through the VMM's mapping of guest
 * memory, as QEMU would write them: kvm_write_guest wants a vCPU for the
 * dirty ring.  Neither way is write-tracked, so never into a table
 * (kpt_batch).
 */
static int kpt_write_back(struct kvm *kvm, struct kvm_vcpu *vcpu, u64 gpa,
			  const void *data, size_t len)
{
	unsigned long hva;
	int idx, ret = 0;

	/* within a page; not through the function kpt_unseen.c probes */
	if (vcpu)
		return kvm_vcpu_write_guest_page(vcpu, gpa >> PAGE_SHIFT, data,
						 offset_in_page(gpa), len);
	idx = srcu_read_lock(&kvm->srcu);
	hva = gfn_to_hva(kvm, gpa >> PAGE_SHIFT);
	if (kvm_is_error_hva(hva) ||
	    copy_to_user((void __user *)(hva + offset_in_page(gpa)), data, len))
		ret = -EFAULT;
	srcu_read_unlock(&kvm->srcu, idx);
	return ret;
}

static int kpt_read(struct kvm *kvm, struct kvm_vcpu *vcpu, u64 gpa,
		    void *data, size_t len)
{
	int idx, ret;

	if (vcpu)
		return kvm_vcpu_read_guest(vcpu, gpa, data, len);
	idx = srcu_read_lock(&kvm->srcu);
	ret = kvm_read_guest(kvm, gpa, data, len);
	srcu_read_unlock(&kvm->srcu, idx);
	return ret;
}

/*
 * Run the batch of count ops the guest placed at gpa: from the ioctl
 * (vcpu NULL) or from the doorbell page in the vCPU thread.  Returns the
 * ops run, or -EIO after killing the VM for a malformed batch, or
 * -ENOMEM.  The whole call holds the engine's lock, so no op (this
 * batch's or another's) can make the batch's frame a table before the
 * results are written back there.
 */
long kpt_batch(struct kpt_vm *vm, struct kvm_vcpu *vcpu, u64 gpa, u32 count)
{
	struct kvm_pagetype_op *ops;
	struct kvm *kvm = vm->kvm;
	size_t len;
	long ret;

	if (READ_ONCE(vm->killed))
		return -EIO;
	len = (size_t)count * sizeof(*ops);
	/* Outside guest RAM, kpt_read fails. */
	if (!count || count > KVM_PAGETYPE_MAX_BATCH ||
	    gpa % sizeof(*ops) || offset_in_page(gpa) + len > PAGE_SIZE)
		goto malformed;

	ops = kmalloc(len, GFP_KERNEL_ACCOUNT);
	if (!ops)
		return -ENOMEM;
	pt_engine_lock(&vm->engine);
	if (pt_engine_is_table_locked(&vm->engine, gpa >> PAGE_SHIFT) ||
	    kpt_read(kvm, vcpu, gpa, ops, len))
		goto err_malformed;
	ret = pt_engine_batch_locked(&vm->engine, gpa >> PAGE_SHIFT, ops,
				     count);
	if (kpt_write_back(kvm, vcpu, gpa, ops, len))
		goto err_malformed;
	pt_engine_unlock(&vm->engine);
	kfree(ops);
	return ret;

err_malformed:
	pt_engine_unlock(&vm->engine);
	kfree(ops);
malformed:
	kpt_kill(vm, KVM_PAGETYPE_KILL_BATCH, gpa, KVM_PAGETYPE_R_INVAL);
	return -EIO;
}

static long kpt_run_batch(struct kpt_vm *vm, void __user *argp)
{
	struct kvm_pagetype_batch b;
	long ret;

	/* The batch is read and answered through the VMM's own mappings. */
	if (vm->kvm->mm != current->mm)
		return -EIO;
	if (copy_from_user(&b, argp, sizeof(b)))
		return -EFAULT;
	ret = kpt_batch(vm, NULL, b.gpa, b.count);
	if (ret < 0)
		return ret;
	b.done = ret;
	if (copy_to_user(argp, &b, sizeof(b)))
		return -EFAULT;
	return 0;
}

/* peek: without the VM's engine lock, for readers that must not wait. */
static void __kpt_vm_stats(struct kpt_vm *vm, struct kvm_pagetype_stats *s,
			   bool peek)
{
	if (peek)
		pt_engine_stats_peek(&vm->engine, s);
	else
		pt_engine_stats(&vm->engine, s);
	s->kills = READ_ONCE(vm->killed);
	s->doorbells = READ_ONCE(vm->doorbells);
	s->last_kill = vm->kill_reason;
	s->dma_maps = READ_ONCE(vm->dma_maps);
	s->dma_unmaps = READ_ONCE(vm->dma_unmaps);
	s->dma_flushes = READ_ONCE(vm->dma_flushes);
	s->dma_pinned = READ_ONCE(vm->dma_pinned);
	s->dma_devices = !!READ_ONCE(vm->dma);
}

void kpt_vm_stats(struct kpt_vm *vm, struct kvm_pagetype_stats *s)
{
	__kpt_vm_stats(vm, s, false);
}

static void kpt_stats_add(struct kvm_pagetype_stats *sum,
			  const struct kvm_pagetype_stats *s)
{
	const u64 *from = (const u64 *)s;
	u64 *to = (u64 *)sum;
	size_t i;

	for (i = 0; i < sizeof(*s) / sizeof(u64); i++)
		to[i] += from[i];
	sum->last_kill = s->last_kill ?: sum->last_kill;
}

/*
 * The totals over every VM.  kpt_vms_lock is what attach and detach of
 * every VMM take, and a VM's engine lock may be held across a fault on its
 * VMM's memory that never ends (userfaultfd, FUSE): so no engine lock
 * here, only each VM's counters read as they are.
 */
void kpt_global_stats(struct kvm_pagetype_stats *sum)
{
	struct kvm_pagetype_stats s;
	struct kpt_vm *vm;

	mutex_lock(&kpt_vms_lock);
	*sum = kpt_retired;
	sum->vms = 0;
	list_for_each_entry(vm, &kpt_vms, node) {
		__kpt_vm_stats(vm, &s, true);
		kpt_stats_add(sum, &s);
	}
	mutex_unlock(&kpt_vms_lock);
	/* What is pinned, whether or not a VM still owns it. */
	sum->dma_pinned = atomic64_read(&kpt_dma_pinned_pages);
}

/* The frames the type words cover: up to the end of the highest slot. */
static u64 kpt_guest_frames(struct kvm *kvm)
{
	struct kvm_memory_slot *slot;
	u64 end = 0;
	int idx, bkt;

	idx = srcu_read_lock(&kvm->srcu);
	kvm_for_each_memslot(slot, bkt, kvm_memslots(kvm))
		end = max_t(u64, end, slot->base_gfn + slot->npages);
	srcu_read_unlock(&kvm->srcu, idx);
	return end;
}

/* The engine grows to memslots added after the attach, within the bound. */
static u64 kpt_frames(void *priv)
{
	struct kpt_vm *vm = priv;

	return min_t(u64, kpt_guest_frames(vm->kvm), KPT_MAX_FRAMES);
}

static void kpt_detach(struct kpt_vm *vm)
{
	struct kvm_pagetype_stats s;

	/* The device first: attach confined nothing. */
	kpt_dma_release(vm, NULL, "its VM was detached");
	/* Its engine lock before kpt_vms_lock, never under it. */
	kpt_vm_stats(vm, &s);
	mutex_lock(&kpt_vms_lock);
	list_del(&vm->node);
	xa_erase(&kpt_vms_by_kvm, kpt_kvm_index(vm->kvm));
	/* Its events stay in the totals; what it holds now goes with it. */
	memset(s.pinned, 0, sizeof(s.pinned));
	memset(s.tables, 0, sizeof(s.tables));
	s.frames = 0;
	s.semi = 0;
	s.vms = 0;
	s.dma_pinned = 0;
	s.dma_devices = 0;
	kpt_stats_add(&kpt_retired, &s);
	mutex_unlock(&kpt_vms_lock);
	kpt_debugfs_remove_vm(vm);

	/* After this no notifier runs: synchronize_srcu, so never locked. */
	kvm_page_track_unregister_notifier(vm->kvm, &vm->notifier);
	/* A check of a write KVM made may still hold it (kpt_unseen.c). */
	kpt_vm_put(vm);
}

static long kpt_attach(struct kpt_file *kf, void __user *argp)
{
	struct kvm_pagetype_attach a;
	struct kpt_vm *vm, *other;
	struct kvm *kvm;
	struct file *f;
	long ret;

	if (copy_from_user(&a, argp, sizeof(a)))
		return -EFAULT;
	if (a.flags & ~KVM_PAGETYPE_ATTACH_FLAGS)
		return -EINVAL;

	f = fget(a.vm_fd);
	if (!f)
		return -EBADF;
	if (!file_is_kvm(f)) {
		fput(f);
		return -EINVAL;
	}
	kvm = f->private_data;
	if (!kvm_get_kvm_safe(kvm)) {
		fput(f);
		return -ENOENT;
	}
	fput(f);

	/* Guest memory is read through the VMM's own mappings. */
	ret = -EPERM;
	if (kvm->mm != current->mm)
		goto err_put_kvm;
	/*
	 * Without it KVM tracks no write under TDP, and WARNs at the first
	 * frame asked for: the rules could hold nothing.
	 */
	ret = -EOPNOTSUPP;
	if (!IS_ENABLED(CONFIG_KVM_EXTERNAL_WRITE_TRACKING)) {
		pr_warn_once("attach refused: the kernel is built without CONFIG_KVM_EXTERNAL_WRITE_TRACKING\n");
		goto err_put_kvm;
	}
	a.nr_frames = kpt_guest_frames(kvm);
	ret = -EINVAL;
	if (!a.nr_frames)
		goto err_put_kvm;
	ret = -E2BIG;
	if (a.nr_frames > KPT_MAX_FRAMES)
		goto err_put_kvm;

	ret = -ENOMEM;
	vm = kzalloc(sizeof(*vm), GFP_KERNEL_ACCOUNT);
	if (!vm)
		goto err_put_kvm;
	refcount_set(&vm->refs, 1);
	vm->kvm = kvm;
	vm->env.read_table = kpt_read_table;
	vm->env.track = kpt_track;
	vm->env.dma = kpt_dma_hook;
	vm->env.dma_sync = kpt_dma_sync;
	vm->env.frames = kpt_frames;
	vm->env.priv = vm;
	ret = pt_engine_init(&vm->engine, a.nr_frames, a.flags, &vm->env);
	if (ret)
		goto err_free_vm;
	pt_engine_set_table_bound(&vm->engine, READ_ONCE(max_tables_pct));
	kpt_set_notifier(&vm->notifier);
	/* No fault on the VMM's memory under kpt_vms_lock: the answer first. */
	ret = -EFAULT;
	if (copy_to_user(argp, &a, sizeof(a)))
		goto err_destroy;

	mutex_lock(&kf->lock);
	ret = -EBUSY;
	if (kf->vm)
		goto err_unlock_file;
	mutex_lock(&kpt_vms_lock);
	list_for_each_entry(other, &kpt_vms, node) {
		if (other->kvm == kvm)
			goto err_unlock_vms;
	}
	ret = xa_err(xa_store(&kpt_vms_by_kvm, kpt_kvm_index(kvm), vm,
			      GFP_KERNEL_ACCOUNT));
	if (ret)
		goto err_unlock_vms;
	vm->id = kpt_next_id++;
	list_add_tail(&vm->node, &kpt_vms);
	kvm_page_track_register_notifier(kvm, &vm->notifier);
	mutex_unlock(&kpt_vms_lock);
	kf->vm = vm;
	mutex_unlock(&kf->lock);

	kpt_debugfs_add_vm(vm);
	return 0;

err_unlock_vms:
	mutex_unlock(&kpt_vms_lock);
err_unlock_file:
	mutex_unlock(&kf->lock);
err_destroy:
	pt_engine_destroy(&vm->engine);
err_free_vm:
	kfree(vm);
err_put_kvm:
	kvm_put_kvm(kvm);
	return ret;
}

static long kpt_set_doorbell(struct kpt_vm *vm, void __user *argp)
{
	struct kvm_pagetype_doorbell d;
	u64 gfn;

	if (copy_from_user(&d, argp, sizeof(d)))
		return -EFAULT;
	if (d.gpa != KVM_PAGETYPE_NO_DOORBELL && offset_in_page(d.gpa))
		return -EINVAL;
	gfn = d.gpa == KVM_PAGETYPE_NO_DOORBELL ? PT_NO_HOME :
	      d.gpa >> PAGE_SHIFT;
	switch (pt_engine_set_doorbell(&vm->engine, gfn)) {
	case KVM_PAGETYPE_R_OK:
		return 0;
	case KVM_PAGETYPE_R_RANGE:
		return -ERANGE;
	case KVM_PAGETYPE_R_TYPE:
		return -EBUSY;
	}
	return -EFAULT;
}

/*
 * GET_STATS as ABI 1 had it: first the counters before dma_maps, then
 * those before tables.  The number encodes the size.
 */
#define KPT_GET_STATS_SIZED(size)					\
	_IOC(_IOC_READ | _IOC_WRITE, KVM_PAGETYPE_IOC_MAGIC, 0x03, size)
#define KPT_GET_STATS_V1_SIZE						\
	offsetof(struct kvm_pagetype_get_stats, stats.dma_maps)
#define KPT_GET_STATS_V1_DMA_SIZE					\
	offsetof(struct kvm_pagetype_get_stats, stats.tables)

static long kpt_get_stats(struct kpt_vm *vm, void __user *argp, size_t size)
{
	struct kvm_pagetype_get_stats g = { 0 };

	if (copy_from_user(&g, argp, size))
		return -EFAULT;
	if (g.flags & ~KVM_PAGETYPE_STATS_GLOBAL || g.pad)
		return -EINVAL;
	if (g.flags & KVM_PAGETYPE_STATS_GLOBAL) {
		/* other VMMs' counts */
		if (!capable(CAP_SYS_ADMIN))
			return -EPERM;
		kpt_global_stats(&g.stats);
	} else if (vm) {
		kpt_vm_stats(vm, &g.stats);
	} else {
		return -ENOENT;
	}
	if (copy_to_user(argp, &g, size))
		return -EFAULT;
	return 0;
}

static long kpt_reset(struct kpt_vm *vm, void __user *argp)
{
	pt_engine_reset(&vm->engine);
	return 0;
}

static struct kpt_vm *kpt_file_vm(struct kpt_file *kf)
{
	struct kpt_vm *vm;

	mutex_lock(&kf->lock);
	vm = kf->vm;
	mutex_unlock(&kf->lock);
	return vm;
}

static long kpt_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	long (*vm_ioctl)(struct kpt_vm *vm, void __user *argp);
	struct kpt_file *kf = file->private_data;
	void __user *argp = (void __user *)arg;
	struct kpt_vm *vm;

	switch (cmd) {
	case KVM_PAGETYPE_VERSION:
		return KVM_PAGETYPE_ABI_VERSION;
	case KVM_PAGETYPE_ATTACH:
		return kpt_attach(kf, argp);
	/* The global counters need no VM. */
	case KVM_PAGETYPE_GET_STATS:
		return kpt_get_stats(kpt_file_vm(kf), argp,
				     sizeof(struct kvm_pagetype_get_stats));
	case KPT_GET_STATS_SIZED(KPT_GET_STATS_V1_SIZE):
		return kpt_get_stats(kpt_file_vm(kf), argp,
				     KPT_GET_STATS_V1_SIZE);
	case KPT_GET_STATS_SIZED(KPT_GET_STATS_V1_DMA_SIZE):
		return kpt_get_stats(kpt_file_vm(kf), argp,
				     KPT_GET_STATS_V1_DMA_SIZE);
	case KVM_PAGETYPE_RUN_BATCH:
		vm_ioctl = kpt_run_batch;
		break;
	case KVM_PAGETYPE_SET_DOORBELL:
		vm_ioctl = kpt_set_doorbell;
		break;
	case KVM_PAGETYPE_RESET:
		vm_ioctl = kpt_reset;
		break;
	case KVM_PAGETYPE_DMA_CONFINE:
		vm_ioctl = kpt_dma_confine;
		break;
	case KVM_PAGETYPE_DMA_RELEASE:
		vm_ioctl = kpt_dma_release_ioctl;
		break;
	default:
		return -ENOTTY;
	}

	/* The others act on the attached VM. */
	vm = kpt_file_vm(kf);
	if (!vm)
		return -ENOENT;
	return vm_ioctl(vm, argp);
}

static int kpt_open(struct inode *inode, struct file *file)
{
	struct kpt_file *kf;

	kf = kzalloc(sizeof(*kf), GFP_KERNEL_ACCOUNT);
	if (!kf)
		return -ENOMEM;
	mutex_init(&kf->lock);
	file->private_data = kf;
	return 0;
}

static int kpt_release(struct inode *inode, struct file *file)
{
	struct kpt_file *kf = file->private_data;

	if (kf->vm)
		kpt_detach(kf->vm);
	mutex_destroy(&kf->lock);
	kfree(kf);
	return 0;
}

static const struct file_operations kpt_fops = {
	.owner = THIS_MODULE,
	.open = kpt_open,
	.release = kpt_release,
	.unlocked_ioctl = kpt_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice kpt_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "kvm-pagetype",
	.fops = &kpt_fops,
	.mode = 0600,
};

static int __init kpt_init(void)
{
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(kpt_kill_rs); i++)
		ratelimit_state_init(&kpt_kill_rs[i], DEFAULT_RATELIMIT_INTERVAL,
				     DEFAULT_RATELIMIT_BURST);
	ret = kpt_track_init();
	if (ret)
		return ret;
	ret = kpt_unseen_init();
	if (ret) {
		kpt_track_exit();
		return ret;
	}
	kpt_debugfs_init();
	ret = misc_register(&kpt_misc);
	if (ret) {
		kpt_debugfs_exit();
		kpt_unseen_exit();
		kpt_track_exit();
		return ret;
	}
	pr_info("ABI %d, /dev/%s\n", KVM_PAGETYPE_ABI_VERSION, kpt_misc.name);
	return 0;
}

/* Every open file holds a module reference: no VM is attached here. */
static void __exit kpt_exit(void)
{
	misc_deregister(&kpt_misc);
	kpt_debugfs_exit();
	kpt_unseen_exit();
	kpt_track_exit();
}

module_init(kpt_init);
module_exit(kpt_exit);
MODULE_DESCRIPTION("Xen-style paravirtual page types for KVM guests");
MODULE_LICENSE("GPL");
