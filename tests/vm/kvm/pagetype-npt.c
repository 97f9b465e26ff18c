// SPDX-License-Identifier: MIT
/*
 * The platform facts the design rests on (docs/pagetype.md, "The
 * platform"): what a guest does when its page-table frames are
 * write-tracked and the processor's page walk must set an accessed bit
 * in one of them.
 *
 *   pagetype-npt loops|emulates|runs
 *
 * loops: kvm_amd npt=1 on Linux 6.1, which retries the walk's nested
 * page fault for ever.  emulates: npt=1 on 6.12, which emulates the
 * instruction: a load completes, an instruction KVM's emulator lacks
 * (PSHUFB) ends KVM_RUN with an emulation error.  runs: npt=0 (shadow
 * paging, KVM's walker sets the bit), where both complete.  A second
 * load in the tracked VM, with every accessed bit on its way set, shows
 * whether a walk that changes nothing is emulated too (under emulates it
 * must be: QEMU's processor, as 6.12's mmu.c says of AMD's, walks the
 * guest's tables with write access under NPT).
 *
 * Each instruction first runs, as a control, in a new VM while nothing is
 * tracked; then in another new VM, its tables pinned (tracked), within
 * 10 s.  The operand is at page offset 0x800, that of the kernel half's
 * L4 entry, whose accessed bit the code fetch's walk sets first: an
 * emulator that took the walk's fault address for the operand's (6.12 at
 * npt=1, without kvm_pagetype's fix) reads the L4.  The caller names the
 * outcome its platform should show.
 */
#include "kvmtest.h"

#define TIMEOUT_S 10
#define DATA_GFN 0x20
#define DATA_OFF 0x800		/* KT_L4_GFN's entry 256 */
#define MARK 0x1122334455667788ULL

enum outcome { LOOPS, EMULATES, RUNS };

/* Whether a walk through a tracked table must be emulated (EMULATES). */
static bool tracked_emulates;

/* The instructions KVM emulated, all vCPUs (KVM's debugfs statistic). */
static uint64_t emulations(void)
{
	unsigned long long n = 0;
	FILE *f = fopen("/sys/kernel/debug/kvm/insn_emulation", "r");

	T_ASSERT(f && fscanf(f, "%llu", &n) == 1, "insn_emulation");
	fclose(f);
	return n;
}

/*
 * The load (or, with sse, PSHUFB) from DATA_GFN at DATA_OFF in a new VM,
 * its tables untouched by any walk; KVM_RUN's exit reason at *exit.
 */
static int run(bool tracked, bool sse, uint64_t *val, uint32_t *exit)
{
	struct kt_vm vm;
	int ret;

	kt_vm_create(&vm, 4 << 20);
	kt_frame(&vm, DATA_GFN)[DATA_OFF / 8] = MARK;
	T_EQ(kt_attach(&vm, KVM_PAGETYPE_ATTACH_KERNEL_HALF), 0);
	if (tracked)
		kt_pin_user_tables(&vm);
	*val = 0;
	if (sse)
		ret = kt_guest_sse_load(&vm, DATA_GFN * KT_PAGE + DATA_OFF,
					TIMEOUT_S);
	else
		ret = kt_guest_load(&vm, DATA_GFN * KT_PAGE + DATA_OFF, val,
				    TIMEOUT_S);
	*exit = vm.run->exit_reason;
	if (tracked && !sse && ret == 0) {
		/* again: every accessed bit on the way is set now */
		uint64_t n = emulations();

		T_EQ(kt_guest_load(&vm, DATA_GFN * KT_PAGE + DATA_OFF, val,
				   TIMEOUT_S), 0);
		n = emulations() - n;
		printf("tracked, accessed bits set: %llu emulated\n",
		       (unsigned long long)n);
		T_ASSERT(!tracked_emulates || n > 0, "no emulation");
	}
	if (*exit == KVM_EXIT_INTERNAL_ERROR)
		printf("KVM_EXIT_INTERNAL_ERROR, suberror %u\n",
		       vm.run->internal.suberror);
	T_ASSERT(*exit != KVM_EXIT_INTERNAL_ERROR ||
		 vm.run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION,
		 "an internal error other than emulation's");
	kt_vm_destroy(&vm);
	return ret;
}

static void load(enum outcome expect)
{
	uint64_t val;
	uint32_t exit;
	int ret;

	T_EQ(run(false, false, &val, &exit), 0);
	T_EQ(val, MARK);
	printf("untracked: the load completed\n");

	ret = run(true, false, &val, &exit);
	if (ret == -EINTR) {
		printf("tracked: no exit in %d s (the vCPU loops)\n", TIMEOUT_S);
		T_ASSERT(expect == LOOPS, "the guest looped");
		return;
	}
	T_EQ(ret, 0);
	T_EQ(val, MARK);
	printf("tracked: the load completed\n");
	T_ASSERT(expect != LOOPS, "the guest ran, expected it to loop");
}

static void sse_load(enum outcome expect)
{
	uint64_t val;
	uint32_t exit;
	int ret;

	T_EQ(run(false, true, &val, &exit), 0);
	printf("untracked: PSHUFB completed\n");

	ret = run(true, true, &val, &exit);
	if (ret == -1 && exit == KVM_EXIT_INTERNAL_ERROR) {
		printf("tracked: PSHUFB went to the emulator, which failed\n");
		T_ASSERT(expect == EMULATES, "PSHUFB was emulated");
		return;
	}
	T_EQ(ret, 0);
	printf("tracked: PSHUFB completed\n");
	T_ASSERT(expect == RUNS, "PSHUFB ran, expected the emulator to fail");
}

KVMTEST_NAMED(loops)
{
	load(LOOPS);
}

KVMTEST_NAMED(emulates)
{
	tracked_emulates = true;
	load(EMULATES);
	sse_load(EMULATES);
}

KVMTEST_NAMED(runs)
{
	load(RUNS);
	sse_load(RUNS);
}

KVMTEST_MAIN(NULL)
