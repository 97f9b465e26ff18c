// SPDX-License-Identifier: MIT
/*
 * What kvm_pagetype's operations cost, in the manner of LLVA-OS's
 * per-operation tables and the deprivileged-mode seed's 100000 trapped
 * writes.  A benchmark, not a test: it prints figures.  Run in level 1
 * (kvm_amd npt=0) against a VM it makes itself:
 *
 *   pagetype-bench [N]          (default 100000)
 *
 * Rows: a guest exit to the VMM that does nothing (the baseline of a
 * carrier), a null op through the VMM and KVM_PAGETYPE_RUN_BATCH (what
 * the QEMU device does, without QEMU's MMIO dispatch), a null op through
 * the doorbell page (no exit to user space); a store to a pinned table
 * (trapped and validated) against a store to an ordinary page; pin and
 * unpin per level, from the VMM.
 *
 *   pagetype-bench dma SSSS:BB:DD.F [FRAMES]     (default 4096)
 *
 * The IOMMU half (docs/pagetype.md, "DMA confinement"), with the PCI
 * device named (QEMU's edu in a level 1 with emulated VT-d) confined to
 * the VM: a conversion per frame at batch sizes 1, 8, 64 and 512, in
 * fine-grained mode (writable -> semi-writable, one IOTLB flush per call)
 * against coarse mode (writable -> L1 table, one flush per frame); then
 * the other transitions of each mode.  FRAMES (rounded up to a multiple
 * of 512) conversions of each.
 */
#include <sys/ioctl.h>
#include <time.h>

#include "kvmtest.h"

#define PORT_DONE	0x10
#define PORT_NOP	0x12
#define PORT_BATCH	0x13
#define DB_GFN		9
#define LOOP_OUT	0x100
#define LOOP_STORE	0x110

/* rcx times: out to the port in al's place; then out 0x10. */
static const uint8_t loop_out[] = {
	0xe6, 0x00, 0xff, 0xc9, 0x75, 0xfa, 0xe6, PORT_DONE, 0xf4,
};

/* rcx times: mov [rdi], rsi; then out 0x10. */
static const uint8_t loop_store[] = {
	0x48, 0x89, 0x37, 0xff, 0xc9, 0x75, 0xf9, 0xe6, PORT_DONE, 0xf4,
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Run guest code at off until it reports done; returns seconds. */
static double run(struct kt_vm *vm, unsigned int off, uint64_t rdi,
		  uint64_t rsi, uint64_t n)
{
	struct kvm_regs regs = {
		.rip = kt_kva(KT_CODE_GFN * KT_PAGE) + off,
		.rdi = rdi, .rsi = rsi, .rcx = n, .rflags = 0x2,
	};
	struct kvm_pagetype_batch b = {
		.gpa = KT_BATCH_GFN * KT_PAGE, .count = 1,
	};
	double t0;

	T_ASSERT(!ioctl(vm->vcpu_fd, KVM_SET_REGS, &regs), "KVM_SET_REGS");
	t0 = now();
	for (;;) {
		T_ASSERT(!ioctl(vm->vcpu_fd, KVM_RUN, 0), "KVM_RUN");
		T_EQ(vm->run->exit_reason, KVM_EXIT_IO);
		if (vm->run->io.port == PORT_DONE)
			break;
		if (vm->run->io.port == PORT_BATCH)
			T_ASSERT(!ioctl(vm->pt_fd, KVM_PAGETYPE_RUN_BATCH, &b),
				 "RUN_BATCH");
	}
	return now() - t0;
}

/* base_us < 0: no native counterpart. */
static void row(const char *what, double base_us, double us)
{
	if (base_us < 0)
		printf("%-44s %10s %10.2f %10s\n", what, "-", us, "-");
	else
		printf("%-44s %10.2f %10.2f %9.0f%%\n", what, base_us, us,
		       100.0 * (us - base_us) / base_us);
}

/* Pin and unpin count empty tables of a level, 64 to a batch. */
static void pin_unpin(struct kt_vm *vm, int level, uint64_t first,
		      uint32_t count, double *pin_us, double *unpin_us)
{
	struct kvm_pagetype_op ops[64];
	double t_pin = 0, t_unpin = 0, t0;
	uint32_t i, j, done;

	for (i = 0; i < count; i += 64) {
		for (j = 0; j < 64; j++)
			ops[j] = (struct kvm_pagetype_op){
				.code = KVM_PAGETYPE_OP_PIN_L1 + level - 1,
				.arg = first + j };
		t0 = now();
		T_EQ(kt_batch(vm, ops, 64, &done), 0);
		t_pin += now() - t0;
		T_EQ(done, 64);
		T_EQ(ops[63].result, KVM_PAGETYPE_R_OK);
		for (j = 0; j < 64; j++)
			ops[j] = (struct kvm_pagetype_op){
				.code = KVM_PAGETYPE_OP_UNPIN, .arg = first + j };
		t0 = now();
		T_EQ(kt_batch(vm, ops, 64, &done), 0);
		t_unpin += now() - t0;
		T_EQ(ops[63].result, KVM_PAGETYPE_R_OK);
	}
	*pin_us = t_pin * 1e6 / count;
	*unpin_us = t_unpin * 1e6 / count;
}

/*
 * An empty L1 linked under the pinned user L2 and unlinked again by two
 * guest stores, count times: validated by reference in the notifier,
 * against pinned first and unpinned after (an op each, from the VMM).
 */
static void link_bench(struct kt_vm *vm, uint64_t first, uint32_t count)
{
	uint64_t entry = kt_kva(KT_UL2_GFN * KT_PAGE + 8);
	double t0, by_ref = 0, pinned = 0;
	uint32_t i;

	for (i = 0; i < count; i++) {
		t0 = now();
		T_EQ(kt_guest_store(vm, entry, kt_pte(first + i, KT_RW), 8), 0);
		T_EQ(kt_guest_store(vm, entry, 0, 8), 0);
		by_ref += now() - t0;
		t0 = now();
		T_EQ(kt_op(vm, KVM_PAGETYPE_OP_PIN_L1, first + i), KVM_PAGETYPE_R_OK);
		T_EQ(kt_guest_store(vm, entry, kt_pte(first + i, KT_RW), 8), 0);
		T_EQ(kt_guest_store(vm, entry, 0, 8), 0);
		T_EQ(kt_op(vm, KVM_PAGETYPE_OP_UNPIN, first + i), KVM_PAGETYPE_R_OK);
		pinned += now() - t0;
	}
	row("link+unlink an L1, pinned around it", -1,
	    pinned * 1e6 / count);
	row("link+unlink an L1, by reference", pinned * 1e6 / count,
	    by_ref * 1e6 / count);
}

/* The DMA rows' frames: every other one from 4 MiB, in an 8 MiB VM. */
#define DMA_FIRST	0x400
#define DMA_MAX		512
#define DMA_GFN(i)	(DMA_FIRST + 2 * (i))
#define OP(x)		KVM_PAGETYPE_OP_##x

enum { T_CONV, T_PIN, T_UNPIN, T_BACK, NR_T };

struct dma_cost {
	double us[NR_T];	/* per frame */
	double flushes;		/* per batch of b frames */
	double calls;		/* RUN_BATCH calls per batch */
};

/*
 * One op on each of b frames, as a guest would issue a batch of b: in as
 * few RUN_BATCH calls as the ABI allows (256 ops to a call, and 64 pins
 * by the work budget), resubmitting what a call skipped.  Returns
 * seconds; adds the calls made to *calls, if calls.
 */
static double dma_ops(struct kt_vm *vm, uint16_t code, uint32_t b,
		      uint64_t *calls)
{
	struct kvm_pagetype_op ops[KVM_PAGETYPE_MAX_BATCH];
	uint32_t i, j, n, done;
	double t0, t = 0;

	for (i = 0; i < b; i += done) {
		n = b - i < KVM_PAGETYPE_MAX_BATCH ? b - i :
			KVM_PAGETYPE_MAX_BATCH;
		for (j = 0; j < n; j++)
			ops[j] = (struct kvm_pagetype_op){
				.code = code, .arg = DMA_GFN(i + j) };
		t0 = now();
		T_EQ(kt_batch(vm, ops, n, &done), 0);
		t += now() - t0;
		if (calls)
			(*calls)++;
		T_ASSERT(done, "no op run");
		for (j = 0; j < done; j++)
			T_ASSERT(ops[j].result == KVM_PAGETYPE_R_OK,
				 "op %u on gfn %#llx: result %u", code,
				 (unsigned long long)ops[j].arg,
				 ops[j].result);
	}
	return t;
}

/*
 * frames conversions, b to a batch, in one mode.  Fine: writable -> semi
 * (the conversion), semi -> L1, unpin to semi, semi -> writable.  Coarse:
 * writable -> L1 (the conversion), unpin to writable.  One round first,
 * untimed, so that the first write protection of each frame is not in it.
 */
static void dma_cost(struct kt_vm *vm, bool fine, uint32_t b,
		     uint32_t frames, struct dma_cost *c)
{
	uint64_t conv_calls = 0;
	struct kvm_pagetype_stats s0, s;
	double t[NR_T] = { 0 }, warm[NR_T] = { 0 };
	uint32_t r, rounds = frames / b;
	int k;

	T_EQ(kt_op(vm, OP(SET_MODE),
		   fine ? KVM_PAGETYPE_MODE_FINE : KVM_PAGETYPE_MODE_COARSE),
	     KVM_PAGETYPE_R_OK);
	for (r = 0; r <= rounds; r++) {
		double *tt = r ? t : warm;

		if (r == 1)
			kt_stats(vm, false, &s0);
		tt[T_CONV] += dma_ops(vm, fine ? OP(TO_SEMI) : OP(PIN_L1), b,
				      r ? &conv_calls : NULL);
		if (r == rounds)
			kt_stats(vm, false, &s);
		if (fine) {
			tt[T_PIN] += dma_ops(vm, OP(PIN_L1), b, NULL);
			tt[T_UNPIN] += dma_ops(vm, OP(UNPIN), b, NULL);
			tt[T_BACK] += dma_ops(vm, OP(TO_WRITABLE), b, NULL);
		} else {
			tt[T_UNPIN] += dma_ops(vm, OP(UNPIN), b, NULL);
		}
	}
	for (k = 0; k < NR_T; k++)
		c->us[k] = t[k] * 1e6 / (rounds * b);
	/*
	 * Between s0 and s only the conversions flush: a pin of a
	 * semi-writable frame has nothing left to sync (the batch that made
	 * it semi-writable synced before it returned), and maps do not flush.
	 */
	c->flushes = (double)(s.dma_flushes - s0.dma_flushes) / rounds;
	c->calls = (double)conv_calls / rounds;
}

static int dma_bench(const char *dev, uint32_t frames)
{
	static const uint32_t sizes[] = { 1, 8, 64, DMA_MAX };
	struct dma_cost fine[4], coarse[4];
	struct kvm_pagetype_dma_device d = kt_pci_addr(dev);
	struct kvm_pagetype_stats s;
	struct kt_vm vm;
	size_t i;

	frames = frames ? (frames + DMA_MAX - 1) / DMA_MAX * DMA_MAX : DMA_MAX;

	kt_vm_new_unbounded(&vm, 8 << 20, 0);
	T_ASSERT(DMA_GFN(DMA_MAX - 1) < vm.mem_size / KT_PAGE, "VM size");
	T_ASSERT(!ioctl(vm.pt_fd, KVM_PAGETYPE_DMA_CONFINE, &d),
		 "DMA_CONFINE %s", dev);
	kt_stats(&vm, false, &s);
	T_EQ(s.dma_devices, 1);

	for (i = 0; i < 4; i++) {
		dma_cost(&vm, true, sizes[i], frames, &fine[i]);
		dma_cost(&vm, false, sizes[i], frames, &coarse[i]);
	}

	printf("kvm_pagetype DMA confinement, %s confined, %u conversions "
	       "per cell (level 1 under TCG with emulated VT-d, its guest "
	       "under KVM; ratios only)\n", dev, frames);
	printf("%-12s %12s %12s %8s %16s %16s\n", "frames/batch",
	       "fine us/fr", "coarse us/fr", "ratio", "fine flushes/b",
	       "coarse flushes/b");
	for (i = 0; i < 4; i++)
		printf("%-12u %12.2f %12.2f %8.2f %16.2f %16.2f\n", sizes[i],
		       fine[i].us[T_CONV], coarse[i].us[T_CONV],
		       coarse[i].us[T_CONV] / fine[i].us[T_CONV],
		       fine[i].flushes, coarse[i].flushes);
	printf("(fine: writable -> semi-writable; coarse: writable -> L1 "
	       "pin; a batch of 512 is %.0f RUN_BATCH calls in fine mode "
	       "(256 ops a call), %.0f in coarse (64 pins a call))\n",
	       fine[3].calls, coarse[3].calls);
	printf("\nper frame, us, by batch size\n");
	printf("%-44s", "transition");
	for (i = 0; i < 4; i++)
		printf(" %8u", sizes[i]);
	printf("\n");
#define DMA_ROW(what, m, k)						\
	do {								\
		printf("%-44s", what);					\
		for (i = 0; i < 4; i++)					\
			printf(" %8.2f", m[i].us[k]);			\
		printf("\n");						\
	} while (0)
	DMA_ROW("coarse: pin L1, writable -> table", coarse, T_CONV);
	DMA_ROW("coarse: unpin, table -> writable (map)", coarse, T_UNPIN);
	DMA_ROW("fine: writable -> semi-writable", fine, T_CONV);
	DMA_ROW("fine: pin L1, semi-writable -> table", fine, T_PIN);
	DMA_ROW("fine: unpin, table -> semi-writable", fine, T_UNPIN);
	DMA_ROW("fine: semi-writable -> writable (map)", fine, T_BACK);
#undef DMA_ROW

	T_ASSERT(!ioctl(vm.pt_fd, KVM_PAGETYPE_DMA_RELEASE, &d),
		 "DMA_RELEASE");
	kt_stats(&vm, false, &s);
	T_EQ(s.dma_pinned, 0);
	kt_vm_destroy(&vm);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 100000;
	struct kvm_pagetype_op null = { .code = KVM_PAGETYPE_OP_NULL };
	uint32_t tables = ((n / 100) + 63) & ~63U;	/* 64 to a batch */
	double base, t, store, trapped, pin, unpin;
	uint8_t *code;
	struct kt_vm vm;
	int level;

	if (argc > 2 && !strcmp(argv[1], "dma"))
		return dma_bench(argv[2], argc > 3 ?
				 strtoul(argv[3], NULL, 0) : 4096);
	if (!tables)
		tables = 64;
	kt_vm_new_unbounded(&vm, 8 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	kt_pin_user_tables(&vm);
	code = (uint8_t *)kt_frame(&vm, KT_CODE_GFN);
	memcpy(code + LOOP_OUT, loop_out, sizeof(loop_out));
	memcpy(code + LOOP_STORE, loop_store, sizeof(loop_store));
	memcpy(kt_frame(&vm, KT_BATCH_GFN), &null, sizeof(null));
	memcpy((uint8_t *)kt_frame(&vm, DB_GFN) + 16, &null, sizeof(null));
	T_EQ(kt_set_doorbell(&vm, DB_GFN * KT_PAGE), 0);

	printf("kvm_pagetype, %llu of each (level 1 under TCG, its guest under "
	       "KVM; ratios only)\n", (unsigned long long)n);
	printf("%-44s %10s %10s %10s\n", "operation", "native us", "pagetype us",
	       "overhead");

	code[LOOP_OUT + 1] = PORT_NOP;
	base = run(&vm, LOOP_OUT, 0, 0, n) * 1e6 / n;
	code[LOOP_OUT + 1] = PORT_BATCH;
	t = run(&vm, LOOP_OUT, 0, 0, n) * 1e6 / n;
	row("null op, exit to the VMM + RUN_BATCH", base, t);
	t = run(&vm, LOOP_STORE, kt_kva(DB_GFN * KT_PAGE),
		KVM_PAGETYPE_DB_RING(DB_GFN * KT_PAGE + 16, 1), n) * 1e6 / n;
	row("null op, doorbell page (no exit)", base, t);

	store = run(&vm, LOOP_STORE, kt_kva(0x20 * KT_PAGE), 0x1234, n) *
		1e6 / n;
	trapped = run(&vm, LOOP_STORE, kt_kva(KT_UL1_GFN * KT_PAGE + 0x100 * 8),
		      kt_pte(0x120, KT_RW), n) * 1e6 / n;
	row("store to a pinned L1 (trapped, validated)", store, trapped);

	for (level = 1; level <= 4; level++) {
		char what[64];

		pin_unpin(&vm, level, 0x400, tables, &pin, &unpin);
		snprintf(what, sizeof(what), "pin L%d (empty table), per op", level);
		row(what, -1, pin);
		snprintf(what, sizeof(what), "unpin L%d, per op", level);
		row(what, -1, unpin);
	}
	link_bench(&vm, 0x400, tables);
	printf("(native: a guest exit to the VMM that does nothing for the "
	       "null ops, an untracked store for the trapped store; pins and "
	       "unpins run 64 to a batch from the VMM)\n");
	kt_vm_destroy(&vm);
	return 0;
}
