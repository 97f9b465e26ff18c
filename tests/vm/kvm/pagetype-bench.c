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

	KT_ASSERT(!ioctl(vm->vcpu_fd, KVM_SET_REGS, &regs), "KVM_SET_REGS");
	t0 = now();
	for (;;) {
		KT_ASSERT(!ioctl(vm->vcpu_fd, KVM_RUN, 0), "KVM_RUN");
		KT_EQ(vm->run->exit_reason, KVM_EXIT_IO);
		if (vm->run->io.port == PORT_DONE)
			break;
		if (vm->run->io.port == PORT_BATCH)
			KT_ASSERT(!ioctl(vm->pt_fd, KVM_PAGETYPE_RUN_BATCH, &b),
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
		KT_EQ(kt_batch(vm, ops, 64, &done), 0);
		t_pin += now() - t0;
		KT_EQ(done, 64);
		KT_EQ(ops[63].result, KVM_PAGETYPE_R_OK);
		for (j = 0; j < 64; j++)
			ops[j] = (struct kvm_pagetype_op){
				.code = KVM_PAGETYPE_OP_UNPIN, .arg = first + j };
		t0 = now();
		KT_EQ(kt_batch(vm, ops, 64, &done), 0);
		t_unpin += now() - t0;
		KT_EQ(ops[63].result, KVM_PAGETYPE_R_OK);
	}
	*pin_us = t_pin * 1e6 / count;
	*unpin_us = t_unpin * 1e6 / count;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 100000;
	struct kvm_pagetype_op null = { .code = KVM_PAGETYPE_OP_NULL };
	struct kvm_pagetype_doorbell d = { .gpa = DB_GFN * KT_PAGE };
	uint32_t tables = ((n / 100) + 63) & ~63U;	/* 64 to a batch */
	double base, t, store, trapped, pin, unpin;
	uint8_t *code;
	struct kt_vm vm;
	int level;

	if (!tables)
		tables = 64;
	kt_vm_create(&vm, 8 << 20);
	KT_EQ(kt_attach(&vm, KVM_PAGETYPE_ATTACH_KERNEL_HALF), 0);
	kt_pin_user_tables(&vm);
	code = (uint8_t *)kt_frame(&vm, KT_CODE_GFN);
	memcpy(code + LOOP_OUT, loop_out, sizeof(loop_out));
	memcpy(code + LOOP_STORE, loop_store, sizeof(loop_store));
	memcpy(kt_frame(&vm, KT_BATCH_GFN), &null, sizeof(null));
	memcpy((uint8_t *)kt_frame(&vm, DB_GFN) + 16, &null, sizeof(null));
	KT_ASSERT(!ioctl(vm.pt_fd, KVM_PAGETYPE_SET_DOORBELL, &d), "doorbell");

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
	printf("(native: a guest exit to the VMM that does nothing for the "
	       "null ops, an untracked store for the trapped store; pins and "
	       "unpins run 64 to a batch from the VMM)\n");
	kt_vm_destroy(&vm);
	return 0;
}
