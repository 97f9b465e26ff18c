// SPDX-License-Identifier: GPL-2.0
/*
 * The writes KVM makes to guest memory that no page-track notifier sees.
 * KVM notifies only the instruction emulator's emulated writes
 * (emulator_write_phys).  It writes guest memory itself, at addresses the
 * guest chose, through kvm_vcpu_write_guest() (the emulator's write_std:
 * FXSAVE, SGDT, SIDT, task switches; the SMM state save; nested VMX's
 * stores), kvm_write_guest() (the kvmclock wall clock, the clock-pairing
 * hypercall) and kvm_write_guest_offset_cached() (PV EOI, async page
 * faults).  A kprobe on each records the range; before the vCPU thread
 * runs the guest again (task work, which KVM's entry loop runs) the
 * frames are checked as a trapped write is (pt_engine_write()): what
 * memory holds against the validated shadow, a broken rule killing the
 * VM.  The guest thus never runs on an unchecked table, as with trapped
 * writes.  Writers through mapped or cached pointers (steal time,
 * kvmclock's pvclock page, nested SVM's VMCB12) are none of these and
 * are not seen here: docs/pagetype.md, "Writers of guest memory", says
 * what is open.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kprobes.h>
#include <linux/kvm_host.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/task_work.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>

#include "kpt.h"

/* One write KVM made: checked in the writer's thread, or a worker. */
struct kpt_unseen {
	union {
		struct callback_head twork;
		struct work_struct work;
	};
	struct kpt_vm *vm;		/* referenced */
	u64 gpa, len;
};

/* Records not yet checked: the module waits for them at exit. */
static atomic_t kpt_unseen_pending = ATOMIC_INIT(0);

static void kpt_unseen_check(struct kpt_unseen *u)
{
	kpt_check_range(u->vm, u->gpa, u->len);
	kpt_vm_put(u->vm);
	kfree(u);
	if (atomic_dec_and_test(&kpt_unseen_pending))
		wake_up_var(&kpt_unseen_pending);
}

static void kpt_unseen_twork(struct callback_head *cb)
{
	kpt_unseen_check(container_of(cb, struct kpt_unseen, twork));
}

static void kpt_unseen_work(struct work_struct *work)
{
	kpt_unseen_check(container_of(work, struct kpt_unseen, work));
}

/*
 * From a kprobe: atomic.  Nothing for a VM not attached here.  A write the
 * check cannot be queued for (no memory for the record) is caught at the
 * table's next trapped write, which compares all of memory with the
 * shadow, and not before.
 */
static void kpt_unseen_record(struct kvm *kvm, u64 gpa, u64 len)
{
	struct kpt_unseen *u;

	/* KVM writes some pages at every entry (the vAPIC's): tables only */
	if (!kpt_tracked_any(kvm, gpa, len))
		return;
	u = kmalloc(sizeof(*u), GFP_ATOMIC | __GFP_NOWARN);
	if (!u)
		return;
	/* no put here: the last one frees the engine, which sleeps */
	u->vm = kpt_vm_get(kvm);
	if (!u->vm) {
		kfree(u);
		return;
	}
	u->gpa = gpa;
	u->len = len;
	atomic_inc(&kpt_unseen_pending);
	/* The vCPU thread runs it before it enters the guest again. */
	if (!(current->flags & PF_KTHREAD)) {
		init_task_work(&u->twork, kpt_unseen_twork);
		if (!task_work_add(current, &u->twork, TWA_RESUME))
			return;
	}
	INIT_WORK(&u->work, kpt_unseen_work);
	schedule_work(&u->work);
}

/*
 * The emulator's emulated writes call kvm_vcpu_write_guest() too, from
 * emulator_write_phys() (or its copy inlined in write_emulate(), as in
 * Debian's 6.1 build), which then notifies: those are checked already.
 * At a probe on a function's first instruction the return address is on
 * top of the stack; "%ps" prints its function, a suffix (".isra.0") and
 * the module.
 */
static bool kpt_from_notified(struct pt_regs *regs)
{
	static const char * const notified[] = {
		"emulator_write_phys", "write_emulate",
	};
	char caller[48];
	size_t i, n;

	snprintf(caller, sizeof(caller), "%ps",
		 (void *)regs_get_kernel_stack_nth(regs, 0));
	for (i = 0; i < ARRAY_SIZE(notified); i++) {
		n = strlen(notified[i]);
		if (!strncmp(caller, notified[i], n) &&
		    (!caller[n] || caller[n] == ' ' || caller[n] == '.'))
			return true;
	}
	return false;
}

/* x86-64 calling convention: the first five arguments. */
static int kpt_vcpu_write_guest(struct kprobe *p, struct pt_regs *regs)
{
	struct kvm_vcpu *vcpu = (struct kvm_vcpu *)regs->di;

	if (kpt_tracked_any(vcpu->kvm, regs->si, regs->cx) &&
	    !kpt_from_notified(regs))
		kpt_unseen_record(vcpu->kvm, regs->si, regs->cx);
	return 0;
}

static int kpt_write_guest(struct kprobe *p, struct pt_regs *regs)
{
	kpt_unseen_record((struct kvm *)regs->di, regs->si, regs->cx);
	return 0;
}

static int kpt_write_guest_cached(struct kprobe *p, struct pt_regs *regs)
{
	struct gfn_to_hva_cache *ghc = (struct gfn_to_hva_cache *)regs->si;

	kpt_unseen_record((struct kvm *)regs->di, ghc->gpa + regs->cx,
			  regs->r8);
	return 0;
}

/* kvm_write_guest_cached(kvm, ghc, data, len), if not inlined in it */
static int kpt_write_guest_cached0(struct kprobe *p, struct pt_regs *regs)
{
	struct gfn_to_hva_cache *ghc = (struct gfn_to_hva_cache *)regs->si;

	kpt_unseen_record((struct kvm *)regs->di, ghc->gpa, regs->cx);
	return 0;
}

static struct kprobe kpt_probes[] = {
	{ .symbol_name = "kvm_vcpu_write_guest",
	  .pre_handler = kpt_vcpu_write_guest },
	{ .symbol_name = "kvm_write_guest",
	  .pre_handler = kpt_write_guest },
	{ .symbol_name = "kvm_write_guest_cached",
	  .pre_handler = kpt_write_guest_cached0 },
	{ .symbol_name = "kvm_write_guest_offset_cached",
	  .pre_handler = kpt_write_guest_cached },
};

int kpt_unseen_init(void)
{
	struct kprobe *probes[ARRAY_SIZE(kpt_probes)];
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(kpt_probes); i++)
		probes[i] = &kpt_probes[i];
	ret = register_kprobes(probes, ARRAY_SIZE(probes));
	if (ret)
		pr_err("cannot probe KVM's own writes of guest memory (%d)\n",
		       ret);
	return ret;
}

void kpt_unseen_exit(void)
{
	struct kprobe *probes[ARRAY_SIZE(kpt_probes)];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kpt_probes); i++)
		probes[i] = &kpt_probes[i];
	unregister_kprobes(probes, ARRAY_SIZE(probes));
	wait_var_event(&kpt_unseen_pending,
		       !atomic_read(&kpt_unseen_pending));
}
