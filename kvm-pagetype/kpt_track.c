// SPDX-License-Identifier: GPL-2.0
/*
 * Write tracking: the engine's track hook write-protects a pinned table
 * through KVM's page tracking, and KVM's notifier hands each trapped
 * write to the engine, or rings the doorbell page.  A memslot that goes
 * takes its tracking with it.  Under TDP, a fault on a tracked frame is
 * emulated with the instruction's own addresses (kpt_tdp_emulate()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kprobes.h>
#include <linux/kvm_host.h>
#include <linux/mm.h>
#include <linux/string.h>
#include <asm/kvm_page_track.h>

#include "kpt.h"
#include "kpt_compat.h"

/*
 * The frames tracked, as bits readable under RCU from any context (the
 * probes of kpt_unseen.c): set before a frame is tracked, cleared after.
 * Written under the engine's lock, which every track hook call holds;
 * grown to the highest frame tracked.
 */
struct kpt_bits {
	u64 n;
	unsigned long bits[];
};

static int kpt_tracked_grow(struct kpt_vm *vm, u64 gfn)
{
	struct kpt_bits *old = rcu_dereference_protected(vm->tracked, 1);
	u64 n = max_t(u64, gfn + 1, old ? 2 * old->n : 1ULL << 15);
	struct kpt_bits *b;

	n = round_up(n, BITS_PER_LONG);
	b = kvzalloc(struct_size(b, bits, BITS_TO_LONGS(n)),
		     GFP_KERNEL_ACCOUNT);
	if (!b)
		return -ENOMEM;
	b->n = n;
	if (old)
		bitmap_copy(b->bits, old->bits, old->n);
	rcu_assign_pointer(vm->tracked, b);
	if (old) {
		synchronize_rcu();
		kvfree(old);
	}
	return 0;
}

void kpt_tracked_free(struct kpt_vm *vm)
{
	kvfree(rcu_dereference_protected(vm->tracked, 1));
}

bool kpt_tracked_any(struct kvm *kvm, u64 gpa, u64 len)
{
	u64 gfn = gpa >> PAGE_SHIFT, last;
	const struct kpt_bits *b;
	struct kpt_vm *vm;
	bool hit = false;

	if (!len)
		return false;
	last = (gpa + len - 1) >> PAGE_SHIFT;
	if (last < gfn)
		last = U64_MAX >> PAGE_SHIFT;
	rcu_read_lock();
	vm = kpt_vm_lookup_rcu(kvm);
	b = vm ? rcu_dereference(vm->tracked) : NULL;
	for (; b && gfn <= last && gfn < b->n && !hit; gfn++)
		hit = test_bit(gfn, b->bits);
	rcu_read_unlock();
	return hit;
}

/* The engine's track hook: write-track frame gfn (a pinned table), or stop. */
int kpt_track(void *priv, u64 gfn, bool on)
{
	struct kpt_vm *vm = priv;
	struct kpt_bits *b = rcu_dereference_protected(vm->tracked, 1);
	int ret;

	/*
	 * A killed VM keeps its tracking: its memslots may have gone (the
	 * count would go negative on a new slot), and it runs no more.
	 */
	if (!on && READ_ONCE(vm->killed))
		return 0;
	if (on) {
		if (!b || gfn >= b->n) {
			ret = kpt_tracked_grow(vm, gfn);
			if (ret)
				return ret;
			b = rcu_dereference_protected(vm->tracked, 1);
		}
		set_bit(gfn, b->bits);
	}
	ret = kpt_write_track(vm->kvm, gfn, on);
	if ((ret && on) || (!ret && !on && b && gfn < b->n))
		clear_bit(gfn, b->bits);
	return ret;
}

/* The fast path: the guest rang the doorbell page (kvm_pagetype.h). */
static void kpt_doorbell(struct kpt_vm *vm, struct kvm_vcpu *vcpu, u64 gpa,
			 const u8 *new, int bytes)
{
	u64 ring, db = gpa & PAGE_MASK;
	u32 result[2] = { 0, 0 };	/* status, done */
	long ret;

	if (offset_in_page(gpa) != KVM_PAGETYPE_DB_RING_OFF || bytes != 8)
		return;		/* the rest of the page is the guest's */
	memcpy(&ring, new, sizeof(ring));
	vm->doorbells++;
	ret = kpt_batch(vm, vcpu, ring & GENMASK_ULL(51, 0),
			ring >> KVM_PAGETYPE_DB_COUNT_SHIFT);
	if (ret == -EIO)
		return;		/* killed */
	if (ret < 0)
		result[0] = -ret;
	else
		result[1] = ret;
	/* not through the function kpt_unseen.c probes */
	kvm_vcpu_write_guest_page(vcpu, db >> PAGE_SHIFT, result,
				  KVM_PAGETYPE_DB_STATUS_OFF, sizeof(result));
}

/* Runs in the vCPU thread, after the write landed; may sleep. */
void kpt_track_write(struct kvm_vcpu *vcpu, gpa_t gpa, const u8 *new,
		     int bytes, struct kvm_page_track_notifier_node *node)
{
	struct kpt_vm *vm = container_of(node, struct kpt_vm, notifier);
	u16 rule;

	if (READ_ONCE(vm->killed))
		return;
	rule = pt_engine_write(&vm->engine, gpa);
	if (rule == PT_DOORBELL) {
		/*
		 * From 6.7 the vCPU is kvm_get_running_vcpu(): a write no
		 * vCPU made rings nothing (there is none to answer).
		 */
		if (vcpu)
			kpt_doorbell(vm, vcpu, gpa, new, bytes);
		return;
	}
	if (rule)
		kpt_kill(vm, KVM_PAGETYPE_KILL_WRITE, gpa, rule);
}

void kpt_check_range(struct kpt_vm *vm, u64 gpa, u64 len)
{
	u64 end = gpa + len, page;
	u16 rule;

	if (end < gpa)
		end = U64_MAX;
	for (page = gpa & PAGE_MASK; page < end && !READ_ONCE(vm->killed);
	     page += PAGE_SIZE) {
		rule = pt_engine_write(&vm->engine, page);
		/* KVM writing the doorbell page rings nothing */
		if (rule && rule != PT_DOORBELL)
			kpt_kill(vm, KVM_PAGETYPE_KILL_UNSEEN, page, rule);
		if (page + PAGE_SIZE < page)
			break;
	}
}

/*
 * Whether valid slots of guest RAM (address space 0) still cover the n
 * frames from gfn.  A slot of SMM's address space, which aliases RAM,
 * goes without taking anything of ours; a RAM slot being deleted or moved
 * is already marked invalid when the notifier runs.
 */
static bool kpt_still_ram(struct kvm *kvm, u64 gfn, u64 n)
{
	struct kvm_memory_slot *slot;
	u64 covered = 0, lo, hi;
	int idx, bkt;

	idx = srcu_read_lock(&kvm->srcu);
	kvm_for_each_memslot(slot, bkt, kvm_memslots(kvm)) {
		if (slot->flags & KVM_MEMSLOT_INVALID)
			continue;
		lo = max_t(u64, gfn, slot->base_gfn);
		hi = min_t(u64, gfn + n, slot->base_gfn + slot->npages);
		if (lo < hi)
			covered += hi - lo;
	}
	srcu_read_unlock(&kvm->srcu, idx);
	return covered == n;
}

/*
 * A memslot moves or goes: tracking of its frames is lost with it.  A
 * doorbell there is forgotten (the guest sets it again); a pinned table
 * there kills the VM.  Neither is untracked later: a new slot in the same
 * place has no tracking to remove.
 */
void kpt_region_gone(struct kvm_page_track_notifier_node *node, u64 gfn,
		     u64 npages)
{
	struct kpt_vm *vm = container_of(node, struct kpt_vm, notifier);

	if (kpt_still_ram(vm->kvm, gfn, npages))
		return;
	pt_engine_forget_doorbell(&vm->engine, gfn, npages);
	if (pt_engine_has_table(&vm->engine, gfn, npages))
		kpt_kill(vm, KVM_PAGETYPE_KILL_MEMSLOT, gfn << PAGE_SHIFT, 0);
	kpt_dma_region_gone(vm, gfn, npages);
}

/*
 * Under TDP (kvm_amd npt=1) a guest access that meets a tracked frame is
 * a nested page fault that KVM emulates (kvm_mmu_page_fault()); so is
 * every page walk through a tracked table, the processor walking the
 * guest's tables with write access.  With EMULTYPE_PF the emulator takes
 * the fault's GPA as the address of any memory operand at the same page
 * offset, instead of translating the operand.  That holds when the
 * operand made the fault, not when the walk did: the GPA is then the
 * table entry's.  6.1 never emulates a walk's fault (it retries it for
 * ever, docs/pagetype.md); 6.12 does, and a store whose operand shares
 * the entry's page offset lands in the table, a load reads the table.
 * So for a fault on a tracked frame under TDP, EMULTYPE_PF goes, and with
 * it EMULTYPE_ALLOW_RETRY_PF (allowed with it only; under TDP there is no
 * shadow page to unprotect): the emulator translates every operand
 * through the guest's tables itself.  The accessed and dirty bits it sets
 * there never matter to the rules.
 */
static int kpt_tdp_emulate(struct kprobe *p, struct pt_regs *regs)
{
	/* x86_emulate_instruction(vcpu, cr2_or_gpa, emulation_type, ...) */
	struct kvm_vcpu *vcpu = (struct kvm_vcpu *)regs->di;
	int type = regs->dx;

	if ((type & EMULTYPE_PF) && vcpu->arch.mmu->root_role.direct &&
	    kpt_tracked_any(vcpu->kvm, regs->si, 1))
		regs->dx = type & ~(EMULTYPE_PF | EMULTYPE_ALLOW_RETRY_PF);
	return 0;
}

static struct kprobe kpt_tdp_probe = {
	.symbol_name = "x86_emulate_instruction",
	.pre_handler = kpt_tdp_emulate,
};

int kpt_track_init(void)
{
	int ret = register_kprobe(&kpt_tdp_probe);

	if (ret)
		pr_err("cannot probe KVM's emulation of TDP faults (%d)\n",
		       ret);
	return ret;
}

void kpt_track_exit(void)
{
	unregister_kprobe(&kpt_tdp_probe);
}
