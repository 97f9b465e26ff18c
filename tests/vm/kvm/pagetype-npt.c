// SPDX-License-Identifier: MIT
/*
 * The platform fact the design rests on: a guest whose page-table frames
 * are write-tracked runs under kvm_amd npt=0 (shadow paging), and loops
 * under npt=1 on Linux 6.1: a nested page walk through a tracked frame is
 * an NPT write fault that 6.1 retries forever.
 *
 *   pagetype-npt loops|runs
 *
 * First, as a control, the same guest load through the same tables runs
 * while nothing is tracked; then the tables are pinned (tracked) and the
 * load must end as the test named says within 10 s.  The caller names
 * the one its platform should show: neither runs unnamed.
 */
#include "kvmtest.h"

#define TIMEOUT_S 10

static void load_through_tracked_tables(bool expect_loop)
{
	struct kt_vm vm;
	uint64_t val = 0;
	int ret;

	kt_vm_create(&vm, 4 << 20);
	kt_frame(&vm, 0x20)[0] = 0x1122334455667788ULL;
	T_EQ(kt_attach(&vm, KVM_PAGETYPE_ATTACH_KERNEL_HALF), 0);
	T_EQ(kt_guest_load(&vm, 0x20000, &val, TIMEOUT_S), 0);
	T_EQ(val, 0x1122334455667788ULL);
	printf("untracked: the load completed\n");

	kt_pin_user_tables(&vm);
	val = 0;
	ret = kt_guest_load(&vm, 0x20000, &val, TIMEOUT_S);
	if (ret == -EINTR) {
		printf("tracked: no exit in %d s (the vCPU loops)\n", TIMEOUT_S);
		T_ASSERT(expect_loop, "the guest looped, expected it to run");
	} else {
		T_EQ(ret, 0);
		T_EQ(val, 0x1122334455667788ULL);
		printf("tracked: the load completed\n");
		T_ASSERT(!expect_loop, "the guest ran, expected it to loop");
	}
	kt_vm_destroy(&vm);
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
