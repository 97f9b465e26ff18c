/* SPDX-License-Identifier: MIT */
/*
 * A small KVM-selftests-style library for kvm_pagetype's tests: a level-1
 * program makes its own VM through /dev/kvm, lays out guest memory and
 * 4-level page tables itself, and runs a few guest instructions.  No
 * guest kernel boots.  The tests' runner is at the end.
 *
 * The guest (identity frames, 64-bit, interrupts off):
 *   frame 1 its L4 (CR3); 2, 3, 4 the user half's L3, L2, L1 mapping
 *   virtual 0..2 MiB; 5, 6 the "kernel half": L4 slot 256 -> an L3 -> an
 *   L2 of writable 2 MiB leaves mapping all of slot 0 at KT_KBASE, the way
 *   a Linux guest's direct map does; 7 the code; KT_BATCH_GFN the op
 *   batch.  Frames from KT_FREE_GFN on are free for the tests.
 */
#ifndef TESTS_VM_KVM_KVMTEST_H
#define TESTS_VM_KVM_KVMTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/kvm.h>
#include <linux/kvm_pagetype.h>

#include "check.h"

#define KT_PAGE		4096ULL
#define KT_L4_GFN	1
#define KT_UL3_GFN	2
#define KT_UL2_GFN	3
#define KT_UL1_GFN	4
#define KT_KL3_GFN	5
#define KT_KL2_GFN	6
#define KT_CODE_GFN	7
#define KT_BATCH_GFN	8
#define KT_FREE_GFN	16
#define KT_KBASE	0xffff800000000000ULL

#define KT_P		(1ULL << 0)
#define KT_RW		(1ULL << 1)
#define KT_PS		(1ULL << 7)

struct kt_vm {
	int kvm_fd, vm_fd, vcpu_fd, pt_fd;
	struct kvm_run *run;
	size_t run_size;
	uint8_t *mem;
	uint64_t mem_size;
	uint64_t nr_frames;	/* from the attach */
	int extra_vcpus;	/* kt_vcpu_add()'s, numbered from 1 */
};

/* A vCPU beside vCPU 0 (vm->vcpu_fd), in the same long mode. */
struct kt_vcpu {
	int fd;
	struct kvm_run *run;
};

static inline uint64_t kt_pte(uint64_t gfn, uint64_t flags)
{
	return (gfn << 12) | KT_P | flags;
}

/* A VM with mem_size bytes at guest-physical 0, page tables laid out. */
void kt_vm_create(struct kt_vm *vm, uint64_t mem_size);
/* kt_vm_create(), then attached with flags. */
void kt_vm_new(struct kt_vm *vm, uint64_t mem_size, uint32_t flags);
/*
 * kt_vm_new() with max_tables_pct at 100 for the attach, then put back:
 * for VMs whose few MiB hold more tables than any real guest's.
 */
void kt_vm_new_unbounded(struct kt_vm *vm, uint64_t mem_size, uint32_t flags);
/* kvm_pagetype's max_tables_pct: read (as text), written (0 or -errno). */
void kt_pct_get(char *buf, size_t size);
int kt_pct_set(const char *val);
/* Close every fd, the pagetype one last (it holds the VM). */
void kt_vm_destroy(struct kt_vm *vm);
uint64_t *kt_frame(struct kt_vm *vm, uint64_t gfn);

/* Open /dev/kvm-pagetype and attach; returns 0 or -errno. */
int kt_attach(struct kt_vm *vm, uint32_t flags);

/* Run ops as one batch at KT_BATCH_GFN; 0 with results in ops, or -errno. */
int kt_batch(struct kt_vm *vm, struct kvm_pagetype_op *ops, uint32_t count,
	     uint32_t *done);
/* kt_batch(), asserting that it ran every op; the caller checks results. */
void kt_batch_all(struct kt_vm *vm, struct kvm_pagetype_op *ops,
		  uint32_t count);
/* One op; returns its result code, asserting the batch ran. */
uint16_t kt_op(struct kt_vm *vm, uint16_t code, uint64_t arg);
uint32_t kt_query(struct kt_vm *vm, uint64_t gfn);
void kt_stats(struct kt_vm *vm, bool global, struct kvm_pagetype_stats *s);
/* KVM_PAGETYPE_SET_DOORBELL; 0 or -errno. */
int kt_set_doorbell(struct kt_vm *vm, uint64_t gpa);
/* The address of PCI device "SSSS:BB:DD.F" for the DMA ioctls. */
struct kvm_pagetype_dma_device kt_pci_addr(const char *name);

/*
 * Guest actions: one instruction, then an I/O exit.  Each returns 0, or
 * -errno of KVM_RUN (-EIO: the VM is dead; -EINTR: KVM_RUN was interrupted
 * by the alarm of timeout_s seconds, 0 for none), or -1 for an unexpected
 * exit (printed).
 */
int kt_guest_store(struct kt_vm *vm, uint64_t va, uint64_t val, int bytes);
int kt_guest_load(struct kt_vm *vm, uint64_t va, uint64_t *val,
		  unsigned int timeout_s);
/*
 * PSHUFB xmm0, [va] (16 bytes, aligned): an SSE load that KVM's
 * instruction emulator does not implement (its 0f 38 map holds MOVBE
 * alone).  On -1 vm->run says how KVM_RUN ended.
 */
int kt_guest_sse_load(struct kt_vm *vm, uint64_t va, unsigned int timeout_s);
/*
 * Load the GDTR (the IDTR with idt) from the 10 bytes at desc_va, then
 * store it at va with SGDT (SIDT): a store the instruction emulator makes
 * through its write_std, which no page-track notifier sees.
 */
int kt_guest_store_dt(struct kt_vm *vm, bool idt, uint64_t va,
		      uint64_t desc_va);

/*
 * Another vCPU of vm (kt_vcpu_add), freed before the VM (kt_vcpu_free);
 * kt_vcpu_store() is kt_guest_store() of 8 bytes on it.
 */
void kt_vcpu_add(struct kt_vm *vm, struct kt_vcpu *vcpu);
void kt_vcpu_free(struct kt_vm *vm, struct kt_vcpu *vcpu);
int kt_vcpu_store(struct kt_vcpu *vcpu, uint64_t va, uint64_t val);

/* The kernel-half virtual address of a guest-physical address. */
static inline uint64_t kt_kva(uint64_t gpa)
{
	return KT_KBASE + gpa;
}

/* Pin the user half's tables L1 up to the L4 (the L4 with kernel half). */
void kt_pin_user_tables(struct kt_vm *vm);

/*
 * The runner, after the kernel's kselftest_harness.h.  A program declares
 * its tests with KVMTEST() and ends with KVMTEST_MAIN():
 *
 *	KVMTEST(legal_writes)
 *	{
 *		T_EQ(kt_op(&vm, KVM_PAGETYPE_OP_PIN_L1, gfn), KVM_PAGETYPE_R_OK);
 *	}
 *	...
 *	KVMTEST_MAIN(NULL)
 *
 *   prog [NAME...]     the tests named, or all; in the order of the file
 *   prog list          their names
 *
 * A test's name is its identifier with '-' for '_'.  Each runs in a child
 * process, so a failed assertion ends that test only.  The runner prints
 * "ok NAME", "FAIL NAME: why" or "skip NAME" (T_SKIP) for each, then
 * "# prog: P passed, F failed, S skipped", and exits 1 if one failed, 77
 * if all it ran skipped, else 0.  KVMTEST_MAIN's setup, if not NULL, runs
 * once before the tests, and they inherit what it set up.
 *
 * KVMTEST_NAMED() declares a test that runs only when named: one of the
 * outcomes a caller may expect of the platform (pagetype-npt).
 *
 * The tools built on this library, pagetype-bench and edu-dma, are not
 * tests and keep main() of their own: they take operands (a count, a PCI
 * name, an address) rather than test names, and print figures or do one
 * transfer that the caller judges.
 */
struct kt_test {
	const char *id;
	void (*fn)(void);
	int line;
	bool named_only;
	char *name;
	struct kt_test *next;
};

void kt_register(struct kt_test *t);
int kvmtest_main(int argc, char **argv, void (*setup)(void));

#define KT_DECLARE(id_, named_only_)					\
	static void kt_test_##id_(void);				\
	static struct kt_test kt_desc_##id_ = {				\
		.id = #id_, .fn = kt_test_##id_, .line = __LINE__,	\
		.named_only = named_only_,				\
	};								\
	static void __attribute__((constructor)) kt_reg_##id_(void)	\
	{								\
		kt_register(&kt_desc_##id_);				\
	}								\
	static void kt_test_##id_(void)

#define KVMTEST(id)		KT_DECLARE(id, false)
#define KVMTEST_NAMED(id)	KT_DECLARE(id, true)

#define KVMTEST_MAIN(setup)						\
	int main(int argc, char **argv)					\
	{								\
		return kvmtest_main(argc, argv, setup);			\
	}

#endif /* TESTS_VM_KVM_KVMTEST_H */
