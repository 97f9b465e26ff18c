// SPDX-License-Identifier: MIT
/*
 * The platform fact the design rests on: a guest whose page-table frames
 * are write-tracked runs under kvm_amd npt=0 (shadow paging), and loops
 * under npt=1 on Linux 6.1: a nested page walk through a tracked frame is
 * an NPT write fault that 6.1 retries forever.
 *
 *   pagetype-npt loops|runs
 *
 * First, as a control, a guest load runs in a new VM while nothing is
 * tracked; then the same load in another new VM, its tables pinned
 * (tracked), must end as the test named says within 10 s, with the value
 * in memory.  Its operand is at page offset 0x800, that of the
 * kernel half's L4 entry, whose accessed bit the code fetch's walk sets
 * first: an emulator that took the walk's fault address for the
 * operand's (6.12 at npt=1, without kvm_pagetype's fix) reads the L4.
 * The caller names the outcome its platform should show: neither runs
 * unnamed.
 */
#include "kvmtest.h"

#define TIMEOUT_S 10
#define DATA_GFN 0x20
#define DATA_OFF 0x800		/* KT_L4_GFN's entry 256 */
#define MARK 0x1122334455667788ULL

/* A load from DATA_GFN, at DATA_OFF, in a new VM: its tables untouched. */
static int load(bool tracked, uint64_t *val)
{
	struct kt_vm vm;
	int ret;

	kt_vm_create(&vm, 4 << 20);
	kt_frame(&vm, DATA_GFN)[DATA_OFF / 8] = MARK;
	T_EQ(kt_attach(&vm, KVM_PAGETYPE_ATTACH_KERNEL_HALF), 0);
	if (tracked)
		kt_pin_user_tables(&vm);
	*val = 0;
	ret = kt_guest_load(&vm, DATA_GFN * KT_PAGE + DATA_OFF, val,
			    TIMEOUT_S);
	kt_vm_destroy(&vm);
	return ret;
}

static void load_through_tracked_tables(bool expect_loop)
{
	uint64_t val;
	int ret;

	T_EQ(load(false, &val), 0);
	T_EQ(val, MARK);
	printf("untracked: the load completed\n");

	ret = load(true, &val);
	if (ret == -EINTR) {
		printf("tracked: no exit in %d s (the vCPU loops)\n", TIMEOUT_S);
		T_ASSERT(expect_loop, "the guest looped, expected it to run");
	} else {
		T_EQ(ret, 0);
		T_EQ(val, MARK);
		printf("tracked: the load completed\n");
		T_ASSERT(!expect_loop, "the guest ran, expected it to loop");
	}
}

KVMTEST_NAMED(loops)
{
	load_through_tracked_tables(true);
}

KVMTEST_NAMED(runs)
{
	load_through_tracked_tables(false);
}

KVMTEST_MAIN(NULL)
