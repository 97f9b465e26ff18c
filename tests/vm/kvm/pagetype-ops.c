// SPDX-License-Identifier: MIT
/*
 * kvm_pagetype.ko against VMs this program makes itself (kvm_amd npt=0):
 * the ABI, pin and unpin with validation, legal trapped writes, writes and
 * batches that kill their VM and only it, counts at their maximum,
 * memslots, and the VM's and the module's lifetimes.
 *
 *   pagetype-ops [TEST...]     (default: all; "list" prints the names)
 */
#include <fcntl.h>
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/userfaultfd.h>
#include <unistd.h>

#include "kvmtest.h"

#define R(x)	KVM_PAGETYPE_R_##x
#define OP(x)	KVM_PAGETYPE_OP_##x
#define MARK	0x5a5a0000c0ffee00ULL

/* Frames >= 256 are not mapped by the user L1: free for test tables. */
#define T_FRAME	0x100

/*
 * Level 1 (one CPU) stays responsive while one store validates the most a
 * store may: in one of SUBTREE_ROUNDS links at least, a thread of level 1
 * waits less than half the link's time (were there no scheduling point
 * between tables, a spinlock held across them say, it would wait all of
 * it; the allocations and guest-memory reads are such points, as is the
 * engine's own cond_resched).  The best of several rounds, so that one stall of the
 * host's own, which lengthens both, decides nothing.
 */
#define SUBTREE_ROUNDS		5

static uint32_t word(uint32_t type, uint32_t flags, uint32_t count)
{
	return (type << KVM_PAGETYPE_TYPE_SHIFT) | flags | count;
}

#define VALID	KVM_PAGETYPE_F_VALIDATED
#define PINNED	(KVM_PAGETYPE_F_PINNED | KVM_PAGETYPE_F_VALIDATED)

static void new_vm(struct kt_vm *vm, uint64_t size, uint32_t flags)
{
	kt_vm_new(vm, size, flags);
	T_EQ(vm->nr_frames, size / KT_PAGE);
}

/* The user-half address of frame gfn's entry i in the user L1. */
static uint64_t ul1_entry(unsigned int i)
{
	return kt_kva(KT_UL1_GFN * KT_PAGE + i * 8);
}

static void expect_dead(struct kt_vm *vm, uint64_t why)
{
	struct kvm_pagetype_stats s;
	struct kvm_pagetype_op op = { .code = OP(NULL) };
	uint64_t v;

	kt_stats(vm, false, &s);
	T_EQ(s.kills, 1);
	T_EQ(s.last_kill, why);
	T_EQ(kt_guest_load(vm, kt_kva(0x20 * KT_PAGE), &v, 0), -EIO);
	T_EQ(kt_batch(vm, &op, 1, NULL), -EIO);
}

/* A new VM attaches and runs: level 1 is healthy after a kill. */
static void expect_healthy(void)
{
	struct kt_vm vm;
	uint64_t v = 0;

	new_vm(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	kt_pin_user_tables(&vm);
	kt_frame(&vm, 0x21)[0] = MARK;
	T_EQ(kt_guest_load(&vm, 0x21000, &v, 0), 0);
	T_EQ(v, MARK);
	kt_vm_destroy(&vm);
}

KVMTEST(abi)
{
	struct kvm_pagetype_attach a = { .vm_fd = -1 };
	struct kvm_pagetype_get_stats g = { 0 };
	struct kvm_pagetype_batch b = { 0 };
	struct kt_vm vm, bare;
	int fd, fd2, null;

	fd = open("/dev/kvm-pagetype", O_RDWR);
	T_ASSERT(fd >= 0, "open");
	T_EQ(ioctl(fd, KVM_PAGETYPE_VERSION), KVM_PAGETYPE_ABI_VERSION);
	T_ASSERT(ioctl(fd, _IO(KVM_PAGETYPE_IOC_MAGIC, 0x7f)) == -1 &&
		 errno == ENOTTY, "unknown ioctl");
	T_ASSERT(ioctl(fd, KVM_PAGETYPE_GET_STATS, &g) == -1 &&
		 errno == ENOENT, "per-VM stats, nothing attached");
	T_ASSERT(ioctl(fd, KVM_PAGETYPE_RUN_BATCH, &b) == -1 &&
		 errno == ENOENT, "batch, nothing attached");
	g.flags = 2;
	T_ASSERT(ioctl(fd, KVM_PAGETYPE_GET_STATS, &g) == -1 &&
		 errno == EINVAL, "stats flags");

	T_ASSERT(ioctl(fd, KVM_PAGETYPE_ATTACH, &a) == -1 && errno == EBADF,
		 "attach fd -1");
	null = open("/dev/null", O_RDWR);
	a.vm_fd = null;
	T_ASSERT(ioctl(fd, KVM_PAGETYPE_ATTACH, &a) == -1 && errno == EINVAL,
		 "attach /dev/null");
	close(null);

	/* A VM with no memory yet. */
	bare.kvm_fd = open("/dev/kvm", O_RDWR);
	bare.vm_fd = ioctl(bare.kvm_fd, KVM_CREATE_VM, 0);
	a.vm_fd = bare.vm_fd;
	T_ASSERT(ioctl(fd, KVM_PAGETYPE_ATTACH, &a) == -1 && errno == EINVAL,
		 "attach a VM without memory");
	close(bare.vm_fd);
	close(bare.kvm_fd);

	/*
	 * Guest memory ending past 512 GiB is refused, not attempted: at 1 TiB
	 * the arrays would pass INT_MAX bytes and kvmalloc would WARN (the
	 * harness fails a test on any splat).
	 */
	for (int at = 39; at <= 40; at++) {
		static uint8_t page[4096] __attribute__((aligned(4096)));
		struct kvm_userspace_memory_region r = {
			.slot = 1, .memory_size = sizeof(page),
			.guest_phys_addr = (1ULL << at) - (at == 40) * 4096,
			.userspace_addr = (uintptr_t)page,
		};

		kt_vm_create(&vm, 4 << 20);
		if (ioctl(vm.vm_fd, KVM_SET_USER_MEMORY_REGION, &r)) {
			printf("abi: no slot at %#llx here (%s)\n",
			       (unsigned long long)r.guest_phys_addr,
			       strerror(errno));
			kt_vm_destroy(&vm);
			continue;
		}
		T_EQ(kt_attach(&vm, 0), -E2BIG);
		kt_vm_destroy(&vm);
	}

	kt_vm_create(&vm, 4 << 20);
	a.vm_fd = vm.vm_fd;
	a.flags = 0x80;
	T_ASSERT(ioctl(fd, KVM_PAGETYPE_ATTACH, &a) == -1 && errno == EINVAL,
		 "unknown attach flag");
	a.flags = 0;
	T_EQ(ioctl(fd, KVM_PAGETYPE_ATTACH, &a), 0);
	T_EQ(a.nr_frames, 1024);
	T_ASSERT(ioctl(fd, KVM_PAGETYPE_ATTACH, &a) == -1 && errno == EBUSY,
		 "a second attach on one file");
	fd2 = open("/dev/kvm-pagetype", O_RDWR);
	T_ASSERT(ioctl(fd2, KVM_PAGETYPE_ATTACH, &a) == -1 && errno == EBUSY,
		 "one VM attached twice");
	g.flags = KVM_PAGETYPE_STATS_GLOBAL;
	T_EQ(ioctl(fd2, KVM_PAGETYPE_GET_STATS, &g), 0);
	T_EQ(g.stats.vms, 1);
	close(fd2);
	close(fd);
	kt_vm_destroy(&vm);
}

KVMTEST(pin)
{
	struct kvm_pagetype_stats s;
	struct kt_vm vm;
	uint64_t v = 0;
	int level;

	new_vm(&vm, 4 << 20, 0);
	T_EQ(kt_op(&vm, OP(PIN_L1), KT_UL1_GFN), R(OK));
	T_EQ(kt_op(&vm, OP(PIN_L2), KT_UL2_GFN), R(OK));
	T_EQ(kt_op(&vm, OP(PIN_L3), KT_UL3_GFN), R(OK));
	/* Without the kernel-half flag the kernel's L3 is no L3. */
	T_EQ(kt_op(&vm, OP(PIN_L4), KT_L4_GFN), R(TYPE));
	kt_vm_destroy(&vm);

	new_vm(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	kt_pin_user_tables(&vm);
	T_EQ(kt_query(&vm, KT_UL1_GFN), word(1, PINNED, 2));
	T_EQ(kt_query(&vm, KT_UL2_GFN), word(2, PINNED, 2));
	T_EQ(kt_query(&vm, KT_UL3_GFN), word(3, PINNED, 2));
	T_EQ(kt_query(&vm, KT_L4_GFN), word(4, PINNED, 1));
	T_EQ(kt_query(&vm, KT_KL3_GFN), word(0, 0, 1));
	T_EQ(kt_query(&vm, 0x20), word(0, 0, 1));
	T_EQ(kt_query(&vm, KT_CODE_GFN), word(0, 0, 0));
	kt_stats(&vm, false, &s);
	for (level = 0; level < 4; level++)
		T_EQ(s.pinned[level], 1);
	T_EQ(s.validations, 4 * 512);

	/* The guest runs through its pinned tables. */
	kt_frame(&vm, 0x20)[0] = MARK;
	T_EQ(kt_guest_load(&vm, 0x20000, &v, 0), 0);
	T_EQ(v, MARK);

	T_EQ(kt_op(&vm, OP(PIN_L1), KT_UL1_GFN), R(EXIST));
	T_EQ(kt_op(&vm, OP(PIN_L2), KT_UL1_GFN), R(TYPE));
	/* Unpinned, a referenced table stays one; pinned again. */
	T_EQ(kt_op(&vm, OP(UNPIN), KT_UL1_GFN), R(OK));
	T_EQ(kt_query(&vm, KT_UL1_GFN), word(1, VALID, 1));
	T_EQ(kt_op(&vm, OP(PIN_L1), KT_UL1_GFN), R(OK));
	T_EQ(kt_op(&vm, OP(UNPIN), T_FRAME), R(NOENT));
	T_EQ(kt_op(&vm, OP(PIN_L1), 1024), R(RANGE));
	T_EQ(kt_op(&vm, OP(PIN_L1), ~0ULL), R(RANGE));
	T_EQ(kt_op(&vm, OP(PIN_L1), 0x20), R(BUSY));	/* mapped writable */
	T_EQ(kt_op(&vm, OP(PIN_L3), KT_KL3_GFN), R(BUSY));
	T_EQ(kt_op(&vm, 999, 0), R(INVAL));
	/* A leaf outside guest memory is an I/O mapping; a wrong level. */
	kt_frame(&vm, T_FRAME)[3] = kt_pte(4096, 0);
	T_EQ(kt_op(&vm, OP(PIN_L1), T_FRAME), R(OK));
	T_EQ(kt_op(&vm, OP(UNPIN), T_FRAME), R(OK));
	kt_frame(&vm, T_FRAME)[3] = kt_pte(4096, KT_RW);
	T_EQ(kt_op(&vm, OP(PIN_L2), T_FRAME), R(RANGE));
	kt_frame(&vm, T_FRAME)[3] = kt_pte(KT_UL2_GFN, KT_RW);
	T_EQ(kt_op(&vm, OP(PIN_L2), T_FRAME), R(TYPE));
	T_EQ(kt_query(&vm, T_FRAME), 0);

	/* Top down, everything comes back. */
	T_EQ(kt_op(&vm, OP(UNPIN), KT_L4_GFN), R(OK));
	T_EQ(kt_op(&vm, OP(UNPIN), KT_UL3_GFN), R(OK));
	T_EQ(kt_op(&vm, OP(UNPIN), KT_UL2_GFN), R(OK));
	T_EQ(kt_op(&vm, OP(UNPIN), KT_UL1_GFN), R(OK));
	T_EQ(kt_query(&vm, KT_UL1_GFN), 0);
	T_EQ(kt_query(&vm, KT_KL3_GFN), 0);
	T_EQ(kt_query(&vm, 0x20), 0);
	kt_stats(&vm, false, &s);
	for (level = 0; level < 4; level++)
		T_EQ(s.pinned[level], 0);
	T_EQ(s.kills, 0);
	/* Untracked again: an entry no rule allows now just lands. */
	T_EQ(kt_guest_store(&vm, ul1_entry(0x102),
			    kt_pte(KT_UL2_GFN, KT_RW), 8), 0);
	T_EQ(kt_guest_load(&vm, 0x20000, &v, 0), 0);
	kt_vm_destroy(&vm);
}

KVMTEST(legal_writes)
{
	struct kvm_pagetype_stats s;
	struct kt_vm vm;
	uint64_t v = 0;

	new_vm(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	kt_pin_user_tables(&vm);
	kt_frame(&vm, 0x120)[0] = MARK;

	/* Map a frame writable, read through it, make it read-only, unmap. */
	T_EQ(kt_guest_store(&vm, ul1_entry(0x100), kt_pte(0x120, KT_RW), 8), 0);
	T_EQ(kt_query(&vm, 0x120), word(0, 0, 1));
	T_EQ(kt_guest_load(&vm, 0x100000, &v, 0), 0);
	T_EQ(v, MARK);
	T_EQ(kt_guest_store(&vm, ul1_entry(0x100), kt_pte(0x120, 0), 8), 0);
	T_EQ(kt_query(&vm, 0x120), word(0, 0, 0));
	T_EQ(kt_guest_store(&vm, ul1_entry(0x100), 0, 8), 0);
	/* Read-only mappings of tables are fine. */
	T_EQ(kt_guest_store(&vm, ul1_entry(0x101), kt_pte(KT_UL2_GFN, 0), 8),
	     0);
	T_EQ(kt_query(&vm, KT_UL2_GFN), word(2, PINNED, 2));
	/* A 4-byte store is validated with the rest of the entry. */
	T_EQ(kt_guest_store(&vm, ul1_entry(0x102), kt_pte(0x121, KT_RW), 4),
	     0);
	T_EQ(kt_query(&vm, 0x121), word(0, 0, 1));
	T_EQ(kt_op(&vm, OP(PIN_L1), 0x121), R(BUSY));
	T_EQ(kt_guest_store(&vm, ul1_entry(0x102), 0, 4), 0);
	T_EQ(kt_query(&vm, 0x121), word(0, 0, 0));

	/* A non-leaf entry to a new L1 takes and drops its reference. */
	T_EQ(kt_op(&vm, OP(PIN_L1), T_FRAME), R(OK));
	T_EQ(kt_guest_store(&vm, kt_kva(KT_UL2_GFN * KT_PAGE + 8),
			    kt_pte(T_FRAME, KT_RW), 8), 0);
	T_EQ(kt_query(&vm, T_FRAME), word(1, PINNED, 2));
	T_EQ(kt_op(&vm, OP(UNPIN), T_FRAME), R(OK));
	T_EQ(kt_query(&vm, T_FRAME), word(1, VALID, 1));
	T_EQ(kt_guest_store(&vm, kt_kva(KT_UL2_GFN * KT_PAGE + 8), 0, 8), 0);
	T_EQ(kt_query(&vm, T_FRAME), 0);

	kt_stats(&vm, false, &s);
	T_EQ(s.writes, 8);
	T_EQ(s.write_updates, 8);
	T_EQ(s.violations, 0);
	T_EQ(s.kills, 0);
	kt_vm_destroy(&vm);
}

/*
 * A guest store that breaks a rule: KVM_RUN fails, the VM is dead.  prep,
 * if set, first lays out frames of no type for the store to link.
 */
static void kill_by_store_after(void (*prep)(struct kt_vm *vm), uint64_t va,
				uint64_t val)
{
	struct kvm_pagetype_stats s;
	struct kt_vm vm;

	new_vm(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	kt_pin_user_tables(&vm);
	if (prep)
		prep(&vm);
	T_EQ(kt_guest_store(&vm, va, val, 8), -EIO);
	expect_dead(&vm, KVM_PAGETYPE_KILL_WRITE);
	kt_stats(&vm, false, &s);
	T_EQ(s.violations, 1);
	kt_vm_destroy(&vm);
	expect_healthy();
}

static void kill_by_store(uint64_t va, uint64_t val)
{
	kill_by_store_after(NULL, va, val);
}

KVMTEST(kill_write)
{
	/* A leaf mapping a table writable. */
	kill_by_store(ul1_entry(0x102), kt_pte(KT_UL2_GFN, KT_RW));
	/* A non-leaf entry at a frame that is no L1. */
	kill_by_store(kt_kva(KT_UL2_GFN * KT_PAGE + 16), kt_pte(0x20, KT_RW));
	/* A user-half L4 entry at the kernel's (writable) L3. */
	kill_by_store(kt_kva(KT_L4_GFN * KT_PAGE + 8), kt_pte(KT_KL3_GFN, 0));
	/* A table outside guest memory (a leaf there is an I/O mapping). */
	kill_by_store(kt_kva(KT_UL2_GFN * KT_PAGE + 16),
		      kt_pte(0x100000, KT_RW));
	/* A writable 2 MiB leaf over the tables. */
	kill_by_store(kt_kva(KT_UL2_GFN * KT_PAGE + 8),
		      kt_pte(0, KT_RW | KT_PS));
}

/* T_FRAME as an L1 nobody pinned, mapping the L2 table writable. */
static void prep_l1_mapping_table(struct kt_vm *vm)
{
	kt_frame(vm, T_FRAME)[5] = kt_pte(KT_UL2_GFN, KT_RW);
}

/* T_FRAME as an L2 nobody pinned, its L1 mapped writable by the user L1. */
static void prep_l2_over_data(struct kt_vm *vm)
{
	kt_frame(vm, T_FRAME)[0] = kt_pte(0x20, KT_RW);
}

KVMTEST(kill_by_reference)
{
	/* Linking a frame that maps a table writable: validation refuses. */
	kill_by_store_after(prep_l1_mapping_table,
			    kt_kva(KT_UL2_GFN * KT_PAGE + 8),
			    kt_pte(T_FRAME, KT_RW));
	/* Linking a frame whose entry names data in use as a table. */
	kill_by_store_after(prep_l2_over_data, kt_kva(KT_UL3_GFN * KT_PAGE + 8),
			    kt_pte(T_FRAME, KT_RW));
}

/*
 * The guest links an L1 nobody pinned under its pinned L2: the module
 * validates it by reference, the guest runs through it, and unlinking it
 * makes it writable and untracked again.
 */
KVMTEST(by_reference)
{
	struct kvm_pagetype_stats s;
	struct kt_vm vm;
	uint64_t v = 0;

	new_vm(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	kt_pin_user_tables(&vm);
	kt_frame(&vm, T_FRAME)[0] = kt_pte(0x120, KT_RW);
	kt_frame(&vm, 0x120)[0] = MARK;
	T_EQ(kt_guest_store(&vm, kt_kva(KT_UL2_GFN * KT_PAGE + 8),
			    kt_pte(T_FRAME, KT_RW), 8), 0);
	T_EQ(kt_query(&vm, T_FRAME), word(1, VALID, 1));
	T_EQ(kt_query(&vm, 0x120), word(0, 0, 1));
	T_EQ(kt_guest_load(&vm, 2 << 20, &v, 0), 0);
	T_EQ(v, MARK);
	/* A table now: its writes are validated. */
	T_EQ(kt_guest_store(&vm, kt_kva(T_FRAME * KT_PAGE + 8),
			    kt_pte(0x121, KT_RW), 8), 0);
	T_EQ(kt_query(&vm, 0x121), word(0, 0, 1));
	/* Unlinked: writable again and untracked, anything lands in it. */
	T_EQ(kt_guest_store(&vm, kt_kva(KT_UL2_GFN * KT_PAGE + 8), 0, 8), 0);
	T_EQ(kt_query(&vm, T_FRAME), 0);
	T_EQ(kt_query(&vm, 0x120), 0);
	T_EQ(kt_query(&vm, 0x121), 0);
	T_EQ(kt_guest_store(&vm, kt_kva(T_FRAME * KT_PAGE),
			    kt_pte(KT_UL2_GFN, KT_RW), 8), 0);
	kt_stats(&vm, false, &s);
	T_EQ(s.ref_validations, 1);
	T_EQ(s.devalidations, 1);
	T_EQ(s.tables[0], 1);
	T_EQ(s.pinned[0], 1);
	T_EQ(s.violations, 0);
	T_EQ(s.kills, 0);
	kt_vm_destroy(&vm);
}

/* An L2 of 512 L1s nobody pinned, at SUB_L2 and SUB_L1 on. */
#define SUB_L3		0x110
#define SUB_L2		0x111
#define SUB_L2B		0x112
#define SUB_L1		0x200

static void lay_subtree(struct kt_vm *vm)
{
	for (unsigned int i = 0; i < 512; i++) {
		kt_frame(vm, SUB_L2)[i] = kt_pte(SUB_L1 + i, KT_RW);
		kt_frame(vm, SUB_L1 + i)[0] = kt_pte(0x120, KT_RW);
	}
	kt_frame(vm, 0x120)[0] = MARK;
}

static volatile bool gap_stop;
static volatile uint64_t gap_max_ns;

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ULL + t.tv_nsec;
}

/* A level-1 thread that notes the longest time it was not scheduled. */
static void *gap_watch(void *arg)
{
	uint64_t last = now_ns(), t;

	while (!gap_stop) {
		t = now_ns();
		if (t - last > gap_max_ns)
			gap_max_ns = t - last;
		last = t;
		sched_yield();
	}
	return arg;
}

/*
 * The most one store can make the module validate: an L2 with 512 L1s
 * (KVM_PAGETYPE_VALIDATE_MAX tables) passes; an L3 over it and one more L2
 * is two tables too many, and the VM is killed after validating and
 * unwinding as much.  Level 1 stays responsive throughout.
 */
KVMTEST(subtree)
{
	uint64_t v = 0, t0, link = 0, gap = 0, unlink = 0, refuse;
	struct kvm_pagetype_stats s;
	struct kt_vm vm;
	pthread_t watch;
	unsigned int i;

	T_EQ(pthread_create(&watch, NULL, gap_watch, NULL), 0);
	kt_vm_new_unbounded(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	kt_pin_user_tables(&vm);
	lay_subtree(&vm);
	for (i = 1; i <= SUBTREE_ROUNDS; i++) {
		uint64_t l, g;

		gap_max_ns = 0;
		t0 = now_ns();
		T_EQ(kt_guest_store(&vm, kt_kva(KT_UL3_GFN * KT_PAGE + 8),
				    kt_pte(SUB_L2, KT_RW), 8), 0);
		l = now_ns() - t0;
		g = gap_max_ns;
		printf("subtree: round %u: linking %u tables %llu ms, a "
		       "level-1 thread's longest wait %llu ms\n", i,
		       KVM_PAGETYPE_VALIDATE_MAX,
		       (unsigned long long)l / 1000000,
		       (unsigned long long)g / 1000000);
		/* the round whose wait is the smallest share of its link */
		if (i == 1 || g * link < gap * l) {
			link = l;
			gap = g;
		}
		T_EQ(kt_query(&vm, SUB_L2), word(2, VALID, 1));
		T_EQ(kt_query(&vm, 0x120), word(0, 0, 512));
		kt_stats(&vm, false, &s);
		T_EQ(s.ref_validations, i * KVM_PAGETYPE_VALIDATE_MAX);
		T_EQ(s.tables[0], 1 + 512);
		T_EQ(kt_guest_load(&vm, (1ULL << 30) + (511ULL << 21), &v, 0),
		     0);
		T_EQ(v, MARK);
		t0 = now_ns();
		T_EQ(kt_guest_store(&vm, kt_kva(KT_UL3_GFN * KT_PAGE + 8), 0,
				    8), 0);
		unlink = now_ns() - t0;
		kt_stats(&vm, false, &s);
		T_EQ(s.devalidations, i * KVM_PAGETYPE_VALIDATE_MAX);
		T_EQ(s.tables[0], 1);
		T_EQ(kt_query(&vm, 0x120), 0);
	}
	kt_vm_destroy(&vm);

	kt_vm_new_unbounded(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	kt_pin_user_tables(&vm);
	lay_subtree(&vm);
	kt_frame(&vm, SUB_L3)[0] = kt_pte(SUB_L2, KT_RW);
	kt_frame(&vm, SUB_L3)[1] = kt_pte(SUB_L2B, KT_RW);
	t0 = now_ns();
	T_EQ(kt_guest_store(&vm, kt_kva(KT_L4_GFN * KT_PAGE + 8),
			    kt_pte(SUB_L3, KT_RW), 8), -EIO);
	refuse = now_ns() - t0;
	expect_dead(&vm, KVM_PAGETYPE_KILL_WRITE);
	/* A dead VM answers no query: its counts say the unwind was whole. */
	kt_stats(&vm, false, &s);
	T_EQ(s.tables[0] + s.tables[1] + s.tables[2], 3);
	/* The L3 and the L2 took two of the budget; 511 L1s fit, then undone. */
	T_EQ(s.ref_validations, KVM_PAGETYPE_VALIDATE_MAX - 2);
	T_EQ(s.devalidations, s.ref_validations);
	kt_vm_destroy(&vm);
	gap_stop = true;
	pthread_join(watch, NULL);
	printf("subtree: unlinking %llu ms, refusing %llu ms\n",
	       (unsigned long long)unlink / 1000000,
	       (unsigned long long)refuse / 1000000);
	T_ASSERT(gap * 2 < link,
		 "level 1 stalled %llu ms of a %llu ms link in its best round",
		 (unsigned long long)gap / 1000000,
		 (unsigned long long)link / 1000000);
}

static void kill_by_batch(uint64_t gpa, uint32_t count)
{
	struct kvm_pagetype_batch b = { .gpa = gpa, .count = count };
	struct kt_vm vm;

	kt_vm_new_unbounded(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	kt_pin_user_tables(&vm);
	T_ASSERT(ioctl(vm.pt_fd, KVM_PAGETYPE_RUN_BATCH, &b) == -1 &&
		 errno == EIO, "batch at %#llx of %u",
		 (unsigned long long)gpa, count);
	expect_dead(&vm, KVM_PAGETYPE_KILL_BATCH);
	kt_vm_destroy(&vm);
}

KVMTEST(batches)
{
	struct kvm_pagetype_op ops[KVM_PAGETYPE_MAX_BATCH] = { 0 };
	uint32_t pins = KVM_PAGETYPE_WORK_BUDGET / 512, done, i;
	uint64_t home = KT_BATCH_GFN * KT_PAGE;
	struct kvm_pagetype_stats s;
	struct kt_vm vm;

	kill_by_batch(home, 0);
	kill_by_batch(home, KVM_PAGETYPE_MAX_BATCH + 1);
	kill_by_batch(home, 0xffffffff);
	kill_by_batch(home + 8, 1);			/* misaligned */
	kill_by_batch(home + KT_PAGE - 16, 2);		/* crosses a page */
	kill_by_batch(1ULL << 40, 1);			/* outside RAM */
	kill_by_batch(4 << 20, 1);			/* just past it */
	kill_by_batch(KT_UL1_GFN * KT_PAGE, 1);		/* in a table */
	expect_healthy();

	/* Too much work: cut and reported, not killed. */
	new_vm(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	for (i = 0; i <= pins; i++)
		ops[i] = (struct kvm_pagetype_op){ .code = OP(PIN_L1),
						   .arg = T_FRAME + i };
	T_EQ(kt_batch(&vm, ops, pins + 1, &done), 0);
	T_EQ(done, pins);
	T_EQ(ops[pins - 1].result, R(OK));
	T_EQ(ops[pins].result, R(SKIPPED));
	/* A full batch of cheap ops runs whole, errors and all. */
	for (i = 0; i < KVM_PAGETYPE_MAX_BATCH; i++)
		ops[i] = (struct kvm_pagetype_op){ .code = i % 2 ? OP(NULL) : 77 };
	kt_batch_all(&vm, ops, KVM_PAGETYPE_MAX_BATCH);
	T_EQ(ops[0].result, R(INVAL));
	T_EQ(ops[1].result, R(OK));
	/* The batch's own frame cannot be pinned by it. */
	T_EQ(kt_op(&vm, OP(PIN_L1), KT_BATCH_GFN), R(BUSY));
	kt_stats(&vm, false, &s);
	T_EQ(s.batches_cut, 1);
	T_EQ(s.pinned[0], pins);
	T_EQ(s.kills, 0);
	kt_vm_destroy(&vm);
}

/*
 * A type count at its maximum (2^22 - 1): 8191 L1 tables of 512 writable
 * entries and one of 511 all map frame X.  One more reference is refused:
 * by a pin with R_OVERFLOW, by a guest write with a kill.
 */
KVMTEST(overflow)
{
	const uint64_t x = 0x140, first = 1024, tables = 8192;
	struct kvm_pagetype_op ops[64];
	struct kt_vm vm;
	uint64_t t, i;
	uint32_t n;

	kt_vm_new_unbounded(&vm, 40 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	kt_pin_user_tables(&vm);
	for (t = first; t < first + tables; t++)
		for (i = 0; i < 512; i++)
			kt_frame(&vm, t)[i] = kt_pte(x, KT_RW);
	for (t = 0; t < tables - 1; t += n) {
		n = tables - 1 - t < 64 ? tables - 1 - t : 64;
		for (i = 0; i < n; i++)
			ops[i] = (struct kvm_pagetype_op){
				.code = OP(PIN_L1), .arg = first + t + i };
		kt_batch_all(&vm, ops, n);
		for (i = 0; i < n; i++)
			T_EQ(ops[i].result, R(OK));
	}
	T_EQ(kt_query(&vm, x), word(0, 0, 8191 * 512));
	/* 512 more do not fit in the 511 left: refused, nothing taken. */
	T_EQ(kt_op(&vm, OP(PIN_L1), first + tables - 1), R(OVERFLOW));
	T_EQ(kt_query(&vm, x), word(0, 0, 8191 * 512));
	kt_frame(&vm, first + tables - 1)[511] = 0;
	T_EQ(kt_op(&vm, OP(PIN_L1), first + tables - 1), R(OK));
	T_EQ(kt_query(&vm, x), word(0, 0, KVM_PAGETYPE_COUNT_MASK));
	T_EQ(kt_guest_store(&vm, ul1_entry(0x104), kt_pte(x, KT_RW), 8),
	     -EIO);
	expect_dead(&vm, KVM_PAGETYPE_KILL_WRITE);
	kt_vm_destroy(&vm);
	expect_healthy();
}

static void set_slot(struct kt_vm *vm, uint32_t slot, uint64_t gpa,
		     uint64_t size, void *mem)
{
	struct kvm_userspace_memory_region r = {
		.slot = slot, .guest_phys_addr = gpa, .memory_size = size,
		.userspace_addr = (uintptr_t)mem,
	};

	T_ASSERT(!ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &r),
		 "slot %u", slot);
}

KVMTEST(memslots)
{
	static uint64_t extra[2][512 * 256] __attribute__((aligned(4096)));
	struct kvm_pagetype_stats s;
	struct kt_vm vm;
	uint64_t v;

	/* Slot 1 (4-5 MiB) holds no table: removing it is fine. */
	kt_vm_create(&vm, 4 << 20);
	set_slot(&vm, 1, 4 << 20, 1 << 20, extra[0]);
	set_slot(&vm, 2, 5 << 20, 1 << 20, extra[1]);
	T_EQ(kt_attach(&vm, KVM_PAGETYPE_ATTACH_KERNEL_HALF), 0);
	T_EQ(vm.nr_frames, 1536);
	kt_pin_user_tables(&vm);
	T_EQ(kt_op(&vm, OP(PIN_L1), 1300), R(OK));	/* in slot 2 */
	set_slot(&vm, 1, 4 << 20, 0, extra[0]);
	kt_stats(&vm, false, &s);
	T_EQ(s.kills, 0);
	T_EQ(kt_guest_load(&vm, 0x20000, &v, 0), 0);
	/* Frames whose slot is gone are refused. */
	T_EQ(kt_op(&vm, OP(PIN_L1), 1100), R(IO));
	/*
	 * A doorbell page whose slot goes: its tracking went with it, and a
	 * new slot in the same place is not untracked for it later (that
	 * would take KVM's track count below zero: a WARN on the host).
	 */
	set_slot(&vm, 1, 4 << 20, 1 << 20, extra[0]);
	T_EQ(kt_set_doorbell(&vm, 1100 * KT_PAGE), 0);
	set_slot(&vm, 1, 4 << 20, 0, extra[0]);
	set_slot(&vm, 1, 4 << 20, 1 << 20, extra[0]);
	T_EQ(ioctl(vm.pt_fd, KVM_PAGETYPE_RESET), 0);
	kt_stats(&vm, false, &s);
	T_EQ(s.kills, 0);
	kt_pin_user_tables(&vm);
	T_EQ(kt_op(&vm, OP(PIN_L1), 1300), R(OK));
	/*
	 * A slot of SMM's address space over the same memory (what SeaBIOS's
	 * SMRAM handling makes) comes and goes: nothing of ours goes with it.
	 */
	if (ioctl(vm.kvm_fd, KVM_CHECK_EXTENSION,
		  KVM_CAP_MULTI_ADDRESS_SPACE) > 1) {
		set_slot(&vm, 1U << 16 | 5, 5 << 20, 1 << 20, extra[1]);
		set_slot(&vm, 1U << 16 | 5, 5 << 20, 0, extra[1]);
		kt_stats(&vm, false, &s);
		T_EQ(s.kills, 0);
	}
	/* Slot 2 holds a pinned table: its removal kills the VM. */
	set_slot(&vm, 2, 5 << 20, 0, extra[1]);
	expect_dead(&vm, KVM_PAGETYPE_KILL_MEMSLOT);
	kt_vm_destroy(&vm);
	expect_healthy();
}

/*
 * A leaf beyond guest RAM maps the guest's own I/O space and takes
 * nothing; memory added above after the attach is covered when first
 * named, and a leaf that mapped it as I/O then holds its reference.
 */
KVMTEST(io_and_growth)
{
	static uint64_t extra[2][512 * 256] __attribute__((aligned(4096)));
	struct kvm_pagetype_stats s;
	struct kt_vm vm;
	uint64_t v = 0;

	new_vm(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	kt_pin_user_tables(&vm);
	/* A 64-bit BAR at 4 GiB, mapped by a process. */
	T_EQ(kt_guest_store(&vm, ul1_entry(0x103), kt_pte(0x100000, KT_RW), 8),
	     0);
	T_EQ(kt_op(&vm, OP(QUERY), 0x100000), R(RANGE));
	/* RAM at 4 MiB, added after the attach: covered, counted. */
	set_slot(&vm, 1, 4 << 20, 1 << 20, extra[0]);
	extra[0][(1100 - 1024) * 512] = MARK;
	T_EQ(kt_guest_store(&vm, ul1_entry(0x104), kt_pte(1100, KT_RW), 8), 0);
	T_EQ(kt_query(&vm, 1100), word(0, 0, 1));
	T_EQ(kt_guest_load(&vm, 0x104000, &v, 0), 0);
	T_EQ(v, MARK);
	/* Mapped as I/O first, RAM later: the mapping holds its reference. */
	T_EQ(kt_guest_store(&vm, ul1_entry(0x105), kt_pte(1300, KT_RW), 8), 0);
	set_slot(&vm, 2, 5 << 20, 1 << 20, extra[1]);
	T_EQ(kt_op(&vm, OP(PIN_L1), 1300), R(BUSY));
	T_EQ(kt_query(&vm, 1300), word(0, 0, 1));
	T_EQ(kt_guest_store(&vm, ul1_entry(0x105), 0, 8), 0);
	T_EQ(kt_op(&vm, OP(PIN_L1), 1300), R(OK));
	kt_stats(&vm, false, &s);
	T_EQ(s.frames, 1536);
	T_EQ(s.grown, 2);
	T_EQ(s.kills, 0);
	kt_vm_destroy(&vm);
}

static int kvm_debugfs_vms(void)
{
	char prefix[32];
	struct dirent *d;
	int n = 0;
	DIR *dir;

	snprintf(prefix, sizeof(prefix), "%d-", getpid());
	dir = opendir("/sys/kernel/debug/kvm");
	T_ASSERT(dir, "/sys/kernel/debug/kvm");
	while ((d = readdir(dir)))
		n += !strncmp(d->d_name, prefix, strlen(prefix));
	closedir(dir);
	return n;
}

KVMTEST(lifetimes)
{
	struct kvm_pagetype_stats s;
	struct kt_vm vm;
	uint64_t v;
	int pt_fd;

	/* The VMM closes the VM first: the attachment holds it until closed. */
	new_vm(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	kt_pin_user_tables(&vm);
	T_EQ(kvm_debugfs_vms(), 1);
	pt_fd = vm.pt_fd;
	vm.pt_fd = -1;
	kt_vm_destroy(&vm);
	T_EQ(kvm_debugfs_vms(), 1);
	vm.pt_fd = pt_fd;
	kt_stats(&vm, false, &s);
	T_EQ(s.pinned[3], 1);
	/* The module holds the VM's last reference; closing frees it. */
	T_ASSERT(syscall(SYS_delete_module, "kvm_pagetype", O_NONBLOCK) == -1 &&
		 (errno == EWOULDBLOCK || errno == EBUSY),
		 "unloading with a VM attached");
	close(pt_fd);
	T_EQ(kvm_debugfs_vms(), 0);

	/* Detached first: tracking is gone, the VM runs on unchecked. */
	new_vm(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	kt_pin_user_tables(&vm);
	close(vm.pt_fd);
	vm.pt_fd = -1;
	T_EQ(kt_guest_store(&vm, ul1_entry(0x102),
			    kt_pte(KT_UL2_GFN, KT_RW), 8), 0);
	T_EQ(kt_guest_load(&vm, 0x20000, &v, 0), 0);
	/* ... and can be attached again, from its new state. */
	T_EQ(kt_attach(&vm, KVM_PAGETYPE_ATTACH_KERNEL_HALF), 0);
	T_EQ(kt_op(&vm, OP(PIN_L1), KT_UL1_GFN), R(OK));
	T_EQ(kt_op(&vm, OP(PIN_L2), KT_UL2_GFN), R(BUSY));
	kt_vm_destroy(&vm);
}

KVMTEST(modes)
{
	struct kvm_pagetype_stats s;
	struct kt_vm vm;

	new_vm(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	T_EQ(kt_op(&vm, OP(SET_MODE), 7), R(INVAL));
	T_EQ(kt_op(&vm, OP(SET_MODE), KVM_PAGETYPE_MODE_FINE), R(OK));
	T_EQ(kt_op(&vm, OP(PIN_L1), T_FRAME), R(MODE));
	T_EQ(kt_op(&vm, OP(TO_SEMI), T_FRAME), R(OK));
	T_EQ(kt_op(&vm, OP(TO_SEMI), T_FRAME), R(EXIST));
	T_EQ(kt_op(&vm, OP(PIN_L1), T_FRAME), R(OK));
	T_EQ(kt_query(&vm, T_FRAME), word(1, PINNED | KVM_PAGETYPE_SEMI, 1));
	T_EQ(kt_op(&vm, OP(TO_WRITABLE), T_FRAME), R(TYPE));
	T_EQ(kt_op(&vm, OP(UNPIN), T_FRAME), R(OK));
	T_EQ(kt_query(&vm, T_FRAME), word(0, KVM_PAGETYPE_SEMI, 0));
	kt_stats(&vm, false, &s);
	T_EQ(s.semi, 1);
	T_EQ(kt_op(&vm, OP(TO_WRITABLE), T_FRAME), R(OK));
	T_EQ(kt_op(&vm, OP(TO_WRITABLE), T_FRAME), R(NOENT));
	T_EQ(kt_op(&vm, OP(SET_MODE), KVM_PAGETYPE_MODE_COARSE), R(OK));
	T_EQ(kt_op(&vm, OP(PIN_L1), T_FRAME), R(OK));
	kt_stats(&vm, false, &s);
	T_EQ(s.semi, 0);
	T_EQ(s.ops[OP(SET_MODE)], 3);
	T_EQ(s.ops[OP(TO_SEMI)], 2);
	T_EQ(s.op_errors, 5);
	kt_vm_destroy(&vm);
}

#define DB_GFN		9
#define DB_BATCH_GFN	10

/* Ring the doorbell page from the guest with count ops at DB_BATCH_GFN. */
static int ring(struct kt_vm *vm, struct kvm_pagetype_op *ops, uint32_t count,
		uint64_t ring_val)
{
	memcpy(kt_frame(vm, DB_BATCH_GFN), ops, count * sizeof(*ops));
	return kt_guest_store(vm, kt_kva(DB_GFN * KT_PAGE), ring_val, 8);
}

KVMTEST(doorbell)
{
	struct kvm_pagetype_op ops[2] = {
		{ .code = OP(NULL) },
		{ .code = OP(PIN_L1), .arg = T_FRAME },
	};
	uint64_t bgpa = DB_BATCH_GFN * KT_PAGE;
	uint32_t *db;
	struct kvm_pagetype_stats s;
	struct kt_vm vm;

	new_vm(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	kt_pin_user_tables(&vm);
	db = (uint32_t *)kt_frame(&vm, DB_GFN);
	T_EQ(kt_set_doorbell(&vm, DB_GFN * KT_PAGE + 8), -EINVAL);
	T_EQ(kt_set_doorbell(&vm, 4 << 20), -ERANGE);
	T_EQ(kt_set_doorbell(&vm, KT_UL1_GFN * KT_PAGE), -EBUSY);
	T_EQ(kt_set_doorbell(&vm, DB_GFN * KT_PAGE), 0);
	T_EQ(kt_op(&vm, OP(PIN_L1), DB_GFN), R(BUSY));

	/* One store runs the batch; results are there when it completes. */
	db[2] = db[3] = 0xdead;
	T_EQ(ring(&vm, ops, 2, KVM_PAGETYPE_DB_RING(bgpa, 2)), 0);
	T_EQ(db[2], 0);
	T_EQ(db[3], 2);
	memcpy(ops, kt_frame(&vm, DB_BATCH_GFN), sizeof(ops));
	T_EQ(ops[0].result, R(OK));
	T_EQ(ops[1].result, R(OK));
	T_EQ(kt_query(&vm, T_FRAME), word(1, PINNED, 1));
	/* The batch may share the doorbell's page, past the ring. */
	ops[0] = (struct kvm_pagetype_op){ .code = OP(UNPIN), .arg = T_FRAME };
	memcpy((uint8_t *)db + 16, ops, sizeof(ops[0]));
	T_EQ(kt_guest_store(&vm, kt_kva(DB_GFN * KT_PAGE),
			    KVM_PAGETYPE_DB_RING(DB_GFN * KT_PAGE + 16, 1), 8),
	     0);
	T_EQ(db[3], 1);
	T_EQ(((struct kvm_pagetype_op *)(db + 4))->result, R(OK));
	T_EQ(kt_query(&vm, T_FRAME), 0);
	/* Stores elsewhere in the page ring nothing. */
	db[3] = 0xdead;
	T_EQ(kt_guest_store(&vm, kt_kva(DB_GFN * KT_PAGE + 24), 0, 8), 0);
	T_EQ(kt_guest_store(&vm, kt_kva(DB_GFN * KT_PAGE + 0), 7, 4), 0);
	T_EQ(db[3], 0xdead);
	kt_stats(&vm, false, &s);
	T_EQ(s.doorbells, 2);
	T_EQ(s.batches, 6);	/* 2 rung, 4 through the ioctl */

	/* Reset: no table, no doorbell, and the guest runs unchecked. */
	T_EQ(ioctl(vm.pt_fd, KVM_PAGETYPE_RESET), 0);
	T_EQ(kt_query(&vm, KT_UL1_GFN), 0);
	T_EQ(kt_query(&vm, KT_KL3_GFN), 0);
	T_EQ(ring(&vm, ops, 1, KVM_PAGETYPE_DB_RING(bgpa, 1)), 0);
	T_EQ(db[3], 0xdead);
	T_EQ(kt_guest_store(&vm, ul1_entry(0x102),
			    kt_pte(KT_UL2_GFN, KT_RW), 8), 0);
	kt_stats(&vm, false, &s);
	T_EQ(s.pinned[0] + s.pinned[3], 0);
	T_EQ(s.kills, 0);
	/* A malformed ring kills, like a malformed ioctl batch. */
	T_EQ(kt_set_doorbell(&vm, DB_GFN * KT_PAGE), 0);
	T_EQ(ring(&vm, ops, 1, KVM_PAGETYPE_DB_RING(bgpa, 0)), -EIO);
	expect_dead(&vm, KVM_PAGETYPE_KILL_BATCH);
	kt_vm_destroy(&vm);
	expect_healthy();
}

/* The global counters: every VM so far, attached or not. */
KVMTEST(global)
{
	struct kvm_pagetype_stats g0, g1;
	struct kt_vm vm;

	new_vm(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	kt_stats(&vm, true, &g0);
	T_EQ(g0.vms, 1);
	kt_pin_user_tables(&vm);
	kt_stats(&vm, true, &g1);
	T_EQ(g1.ops[OP(PIN_L4)], g0.ops[OP(PIN_L4)] + 1);
	T_EQ(g1.pinned[3], g0.pinned[3] + 1);
	T_EQ(g1.batches, g0.batches + 1);
	kt_vm_destroy(&vm);
	printf("global: %llu batches, %llu kills, %llu validations\n",
	       (unsigned long long)g1.batches, (unsigned long long)g1.kills,
	       (unsigned long long)g1.validations);
}

/*
 * Stores KVM makes without a notifier (kpt_unseen.c): SGDT and SIDT, which
 * the instruction emulator writes through its write_std when they fault
 * on a tracked frame, plant an entry mapping the L2 table writable in the
 * pinned L1 (the descriptor's base, its limit 0 in the entry before).
 * The VM is killed before it runs again.  The same stores to a frame that
 * is no table change nothing.
 */
#define DT_DESC_GFN	0x30
#define DT_DATA_GFN	0x31

static int store_dt(struct kt_vm *vm, bool idt, uint64_t va, uint64_t base)
{
	uint8_t *desc = (uint8_t *)kt_frame(vm, DT_DESC_GFN);

	memset(desc, 0, 10);			/* limit 0 */
	memcpy(desc + 2, &base, sizeof(base));
	return kt_guest_store_dt(vm, idt, va, DT_DESC_GFN * KT_PAGE);
}

KVMTEST(unseen_writes)
{
	uint64_t bad = kt_pte(KT_UL2_GFN, KT_RW);
	struct kvm_pagetype_stats s;
	struct kt_vm vm;
	int idt;

	for (idt = 0; idt <= 1; idt++) {
		new_vm(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
		kt_pin_user_tables(&vm);
		T_EQ(store_dt(&vm, idt, DT_DATA_GFN * KT_PAGE, bad), 0);
		T_EQ(kt_frame(&vm, DT_DATA_GFN)[0] >> 16, bad & 0xffffffffffff);
		T_EQ(store_dt(&vm, idt, ul1_entry(0x102) - 2, bad), -EIO);
		T_EQ(kt_frame(&vm, KT_UL1_GFN)[0x102], bad);
		expect_dead(&vm, KVM_PAGETYPE_KILL_UNSEEN);
		kt_stats(&vm, false, &s);
		T_EQ(s.violations, 1);
		kt_vm_destroy(&vm);
	}
	expect_healthy();
}

/*
 * A VMM whose memory faults and never gets an answer (userfaultfd here;
 * FUSE would do) while a pin of its holds its engine lock: the global
 * counters and another VMM's attach and close still finish at once.
 * STUCK_WAIT_S bounds "at once", far above their milliseconds.
 */
#define STUCK_WAIT_S	10

static void *stuck_pin(void *arg)
{
	struct kt_vm *vm = arg;

	/* the frame is missing: the read under the engine lock waits */
	T_EQ(kt_op(vm, OP(PIN_L1), T_FRAME), R(OK));
	return NULL;
}

static void *stuck_global(void *arg)
{
	struct kvm_pagetype_stats s;

	kt_stats(arg, true, &s);
	return NULL;
}

static void *stuck_other(void *arg)
{
	struct kt_vm other;

	(void)arg;
	new_vm(&other, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	kt_pin_user_tables(&other);
	kt_vm_destroy(&other);
	return NULL;
}

static void expect_done(void *(*fn)(void *), void *arg, const char *what)
{
	struct timespec until;
	pthread_t t;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += STUCK_WAIT_S;
	T_EQ(pthread_create(&t, NULL, fn, arg), 0);
	T_ASSERT(!pthread_timedjoin_np(t, NULL, &until),
		 "%s waited %d s on a VM stuck in a fault", what,
		 STUCK_WAIT_S);
}

KVMTEST(stuck_vm)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	struct pollfd pfd;
	struct kt_vm vm;
	pthread_t pin;
	int uffd;

	new_vm(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	uffd = syscall(__NR_userfaultfd, O_CLOEXEC);
	T_ASSERT(uffd >= 0, "userfaultfd");
	T_EQ(ioctl(uffd, UFFDIO_API, &api), 0);
	reg = (struct uffdio_register){
		.range = { .start = (uintptr_t)kt_frame(&vm, T_FRAME),
			   .len = KT_PAGE },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	T_EQ(ioctl(uffd, UFFDIO_REGISTER, &reg), 0);
	T_EQ(madvise(kt_frame(&vm, T_FRAME), KT_PAGE, MADV_DONTNEED), 0);
	T_EQ(pthread_create(&pin, NULL, stuck_pin, &vm), 0);
	/* the fault reported: the pin is waiting, its engine lock held */
	pfd = (struct pollfd){ .fd = uffd, .events = POLLIN };
	T_EQ(poll(&pfd, 1, STUCK_WAIT_S * 1000), 1);
	expect_done(stuck_global, &vm, "the global counters");
	expect_done(stuck_other, NULL, "another VMM's attach and close");
	/* no answer ever: closing the uffd lets the fault go on */
	close(uffd);
	T_EQ(pthread_join(pin, NULL), 0);
	kt_vm_destroy(&vm);
	printf("stuck-vm: the global counters and another VM's life went on "
	       "while a VM's engine waited on a fault\n");
}

/*
 * The bound on a VM's tables (max_tables_pct, taken at attach): at 1% of
 * 1024 frames, 10 tables.  Pins pass up to 10 tables (those the user
 * tables' pins validated included), the next gets R_FULL and takes
 * nothing; a guest store linking an L1 of no type under the pinned L2
 * would validate an eleventh: the VM is killed.  Values outside 1..100
 * are refused.
 */
KVMTEST(table_bound)
{
	struct kvm_pagetype_stats s;
	struct kt_vm vm;
	char was[16];
	uint64_t gfn;
	uint16_t r;


	kt_pct_get(was, sizeof(was));
	T_EQ(kt_pct_set("0"), -EINVAL);
	T_EQ(kt_pct_set("101"), -EINVAL);
	T_EQ(kt_pct_set("1"), 0);
	new_vm(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	T_EQ(kt_pct_set(was), 0);
	kt_pin_user_tables(&vm);
	for (gfn = T_FRAME, r = R(OK); gfn < T_FRAME + 10 && r == R(OK); gfn++)
		r = kt_op(&vm, OP(PIN_L1), gfn);
	gfn--;
	T_EQ(r, R(FULL));
	kt_stats(&vm, false, &s);
	T_EQ(s.tables[0] + s.tables[1] + s.tables[2] + s.tables[3], 10);
	T_EQ(kt_query(&vm, gfn), 0);
	T_EQ(kt_guest_store(&vm, kt_kva(KT_UL2_GFN * KT_PAGE + 8),
			    kt_pte(gfn, KT_RW), 8), -EIO);
	expect_dead(&vm, KVM_PAGETYPE_KILL_WRITE);
	kt_vm_destroy(&vm);
	expect_healthy();
}

/*
 * Two vCPUs store to the same entry of a pinned L2 at once, one linking
 * an L1 nobody pinned (validated by reference), the other clearing it.
 * Each trapped store is written by KVM's emulator first and notified
 * after, without a lock, so the two notifiers may run in the opposite
 * order to the stores; the module must take the entry from memory under
 * its lock, never from the bytes a notifier was handed.  After every
 * round the module's view must be memory's: the L1 validated with one
 * reference while the link is there, of no type when it is not (else it
 * would be untracked while live under the L2).  RACE_ROUNDS rounds.
 */
#define RACE_ROUNDS	4000

struct race {
	struct kt_vcpu vcpu;
	uint64_t val;
	pthread_barrier_t *go, *done;
	int err;
};

static void *race_store(void *arg)
{
	struct race *r = arg;
	unsigned int i;
	int err;

	for (i = 0; i < RACE_ROUNDS; i++) {
		pthread_barrier_wait(r->go);
		err = kt_vcpu_store(&r->vcpu,
				    kt_kva(KT_UL2_GFN * KT_PAGE + 8), r->val);
		if (err && !r->err)
			r->err = err;
		pthread_barrier_wait(r->done);
	}
	return NULL;
}

KVMTEST(race)
{
	uint64_t link = kt_pte(T_FRAME, KT_RW);
	pthread_barrier_t go, done;
	struct race r[2] = {
		{ .val = link, .go = &go, .done = &done },
		{ .val = 0, .go = &go, .done = &done },
	};
	unsigned int i, linked = 0;
	pthread_t t[2];
	struct kt_vm vm;
	uint64_t entry;

	new_vm(&vm, 4 << 20, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	kt_pin_user_tables(&vm);
	T_EQ(pthread_barrier_init(&go, NULL, 3), 0);
	T_EQ(pthread_barrier_init(&done, NULL, 3), 0);
	for (i = 0; i < 2; i++) {
		kt_vcpu_add(&vm, &r[i].vcpu);
		T_EQ(pthread_create(&t[i], NULL, race_store, &r[i]), 0);
	}
	for (i = 0; i < RACE_ROUNDS; i++) {
		pthread_barrier_wait(&go);
		pthread_barrier_wait(&done);
		T_ASSERT(!r[0].err && !r[1].err, "round %u: stores %d, %d", i,
			 r[0].err, r[1].err);
		entry = kt_frame(&vm, KT_UL2_GFN)[1];
		T_ASSERT(entry == link || entry == 0, "round %u: entry %#llx",
			 i, (unsigned long long)entry);
		T_ASSERT(kt_query(&vm, T_FRAME) ==
			 (entry ? word(1, VALID, 1) : 0),
			 "round %u: the L1 is %#x with the link %s memory", i,
			 kt_query(&vm, T_FRAME), entry ? "in" : "not in");
		linked += !!entry;
	}
	for (i = 0; i < 2; i++) {
		T_EQ(pthread_join(t[i], NULL), 0);
		kt_vcpu_free(&vm, &r[i].vcpu);
	}
	pthread_barrier_destroy(&go);
	pthread_barrier_destroy(&done);
	kt_vm_destroy(&vm);
	expect_healthy();
	printf("race: %u rounds, the module's view was memory's after each; "
	       "the link stayed in %u, the clear in %u\n", RACE_ROUNDS, linked,
	       RACE_ROUNDS - linked);
}

KVMTEST_MAIN(NULL)
