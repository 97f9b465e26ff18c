// SPDX-License-Identifier: MIT
/*
 * pagetype-fuzz: a bounded random tester for kvm_pagetype, in the spirit
 * of syzkaller.  From a seed it drives, for a given time, what a hostile
 * guest and a hostile VMM can: op batches (random ops on a small pool of
 * frames, random op codes and pads), guest stores of random entries into
 * those frames from two vCPUs (one at a time, and both at once), stores
 * the VMM makes itself to frames that are not tables, the doorbell (set,
 * cleared, rung from the guest) and RESET.  After every step that leaves
 * the VM alive, every frame's type word must be what guest memory says:
 *
 *   - each validated table's present entries link frames of the type its
 *     level needs (a table one level down, or a writable frame for an L1
 *     leaf and, with the kernel-half flag, for an L4's upper half);
 *   - each frame's count is the number of such links to it, plus one if
 *     it is pinned.
 *
 * A VM the module kills (a store or batch that broke a rule) is checked
 * dead and replaced.  At the end no VM is left attached and nothing is
 * pinned anywhere.  The harness around it (tests/vm/tests/pagetype-fuzz.py)
 * fails on any kernel warning, and the program's own bound is the time.
 *
 * Usage: pagetype-fuzz SEED SECONDS
 * Prints the counts (steps, ops, stores, refusals, kills by reason, VMs).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <time.h>

#include "kvmtest.h"

#define MEM		(4 << 20)
#define FRAMES		(MEM / KT_PAGE)
/* Frames the ops and stores aim at: outside the user L1's writable map. */
#define POOL		0x100
#define POOL_N		24
/* The frame of the doorbell's batch, and of the stores' vCPU batches. */
#define DB_BATCH_GFN	0x200

static uint64_t rng;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dULL;
}

static unsigned int below(unsigned int n)
{
	return rnd() % n;
}

static struct {
	uint64_t steps, ops, refused, stores, pairs, vmm_writes, doorbells;
	uint64_t resets, vms, kills[KVM_PAGETYPE_KILL_UNSEEN + 1];
} count;

static uint64_t pool_gfn(void)
{
	/* now and then a fixed table, a code frame or beyond RAM */
	switch (below(16)) {
	case 0:
		return KT_UL3_GFN + below(3);	/* the user L3, L2, L1 */
	case 1:
		return FRAMES + below(4);
	default:
		return POOL + below(POOL_N);
	}
}

/* Where stores go: the pool and the user tables, never the code's map. */
static uint64_t store_gfn(void)
{
	return below(8) ? POOL + below(POOL_N) : KT_UL3_GFN + below(3);
}

static uint64_t random_entry(void)
{
	static const uint64_t flags[] = { 0, KT_RW, KT_PS, KT_RW | KT_PS };
	uint64_t e;

	if (!below(4))
		return 0;
	e = kt_pte(pool_gfn(), flags[below(4)]);
	if (!below(8))
		e |= 0x60;		/* accessed, dirty */
	if (!below(16))
		e &= ~KT_P;
	return e;
}

/* The kernel-half address of entry i of frame gfn. */
static uint64_t entry_va(uint64_t gfn, unsigned int i)
{
	return kt_kva(gfn * KT_PAGE + i * 8);
}

/* Slot 0 or 1, or one of the last two: the kernel half of an L4. */
static unsigned int random_slot(void)
{
	static const unsigned int slots[] = { 0, 1, 256, 511 };

	return slots[below(4)];
}

static void query_all(struct kt_vm *vm, uint32_t *word)
{
	struct kvm_pagetype_op ops[KVM_PAGETYPE_MAX_BATCH];
	uint64_t gfn, i;

	for (gfn = 0; gfn < FRAMES; gfn += KVM_PAGETYPE_MAX_BATCH) {
		for (i = 0; i < KVM_PAGETYPE_MAX_BATCH; i++)
			ops[i] = (struct kvm_pagetype_op){
				.code = KVM_PAGETYPE_OP_QUERY, .arg = gfn + i,
			};
		kt_batch_all(vm, ops, KVM_PAGETYPE_MAX_BATCH);
		for (i = 0; i < KVM_PAGETYPE_MAX_BATCH; i++) {
			T_EQ(ops[i].result, KVM_PAGETYPE_R_OK);
			word[gfn + i] = ops[i].out;
		}
	}
}

static unsigned int pt_type_of(uint32_t w)
{
	return (w & KVM_PAGETYPE_TYPE_MASK) >> KVM_PAGETYPE_TYPE_SHIFT;
}

static bool is_leaf(unsigned int level, uint64_t e)
{
	return level == 1 || ((level == 2 || level == 3) && (e & KT_PS));
}

/* The invariant of the header, over every frame. */
static void check_view(struct kt_vm *vm, bool kernel_half)
{
	static uint32_t word[FRAMES], refs[FRAMES];
	uint64_t gfn, t, e;
	unsigned int level, i;

	query_all(vm, word);
	memset(refs, 0, sizeof(refs));
	for (gfn = 0; gfn < FRAMES; gfn++) {
		level = pt_type_of(word[gfn]);
		if (!(word[gfn] & KVM_PAGETYPE_F_VALIDATED))
			continue;
		T_ASSERT(level >= 1 && level <= 4, "frame %#" PRIx64
			 " validated with type %u", gfn, level);
		for (i = 0; i < 512; i++) {
			e = kt_frame(vm, gfn)[i];
			t = (e & 0xffffffffff000ULL) >> 12;
			if (!(e & KT_P) || t >= FRAMES)
				continue;
			if (is_leaf(level, e)) {
				if (level == 1 && (e & KT_RW)) {
					T_ASSERT(pt_type_of(word[t]) == KVM_PAGETYPE_WRITABLE,
						 "L1 %#" PRIx64 "[%u] maps %#"
						 PRIx64 " (word %#x) writable",
						 gfn, i, t, word[t]);
					refs[t]++;
				}
				continue;
			}
			T_ASSERT(pt_type_of(word[t]) == level - 1 ||
				 (level == 4 && i >= 256 && kernel_half &&
				  pt_type_of(word[t]) == KVM_PAGETYPE_WRITABLE),
				 "L%u %#" PRIx64 "[%u] links %#" PRIx64
				 " (word %#x)", level, gfn, i, t, word[t]);
			refs[t]++;
		}
	}
	for (gfn = 0; gfn < FRAMES; gfn++)
		T_ASSERT((word[gfn] & KVM_PAGETYPE_COUNT_MASK) ==
			 refs[gfn] + !!(word[gfn] & KVM_PAGETYPE_F_PINNED),
			 "frame %#" PRIx64 ": word %#x, %u links in memory",
			 gfn, word[gfn], refs[gfn]);
}

struct pair {
	struct kt_vcpu vcpu;
	uint64_t va, val;
	pthread_barrier_t *go;
	int err;
};

static void *pair_store(void *arg)
{
	struct pair *p = arg;

	pthread_barrier_wait(p->go);
	p->err = kt_vcpu_store(&p->vcpu, p->va, p->val);
	return NULL;
}

struct fuzz_vm {
	struct kt_vm vm;
	struct pair pair[2];
	bool kernel_half;
};

static void vm_start(struct fuzz_vm *f)
{
	kt_vm_create(&f->vm, MEM);
	f->kernel_half = below(4);
	T_EQ(kt_attach(&f->vm, f->kernel_half ?
		       KVM_PAGETYPE_ATTACH_KERNEL_HALF : 0), 0);
	kt_vcpu_add(&f->vm, &f->pair[0].vcpu);
	kt_vcpu_add(&f->vm, &f->pair[1].vcpu);
	count.vms++;
}

static void vm_stop(struct fuzz_vm *f)
{
	kt_vcpu_free(&f->vm, &f->pair[0].vcpu);
	kt_vcpu_free(&f->vm, &f->pair[1].vcpu);
	kt_vm_destroy(&f->vm);
}

/* Whether the step's -errno says the VM died: then it was a kill. */
static bool died(struct fuzz_vm *f, int err)
{
	struct kvm_pagetype_stats s;

	if (!err)
		return false;
	T_EQ(err, -EIO);
	kt_stats(&f->vm, false, &s);
	T_EQ(s.kills, 1);
	T_ASSERT(s.last_kill >= 1 && s.last_kill <= KVM_PAGETYPE_KILL_UNSEEN,
		 "kill reason %llu", (unsigned long long)s.last_kill);
	count.kills[s.last_kill]++;
	vm_stop(f);
	vm_start(f);
	return true;
}

static int step_batch(struct fuzz_vm *f)
{
	struct kvm_pagetype_op ops[4];
	unsigned int n = 1 + below(4), i;
	uint32_t done;
	int err;

	for (i = 0; i < n; i++) {
		ops[i] = (struct kvm_pagetype_op){
			.code = 1 + below(9), .arg = pool_gfn(),
		};
		if (ops[i].code == KVM_PAGETYPE_OP_SET_MODE)
			ops[i].arg = below(2);
		if (!below(64))		/* malformed: an unknown op */
			ops[i].code = 10 + below(100);
	}
	err = kt_batch(&f->vm, ops, n, &done);
	if (err)
		return err;
	count.ops += done;
	for (i = 0; i < done; i++)
		count.refused += ops[i].result != KVM_PAGETYPE_R_OK;
	return 0;
}

static int step_store(struct fuzz_vm *f)
{
	count.stores++;
	return kt_guest_store(&f->vm, entry_va(store_gfn(), random_slot()),
			      random_entry(), 8);
}

/* Both extra vCPUs store at once, to one entry or two. */
static int step_pair(struct fuzz_vm *f)
{
	uint64_t gfn = POOL + below(POOL_N);
	unsigned int slot = random_slot(), i;
	pthread_barrier_t go;
	pthread_t t[2];

	T_EQ(pthread_barrier_init(&go, NULL, 2), 0);
	for (i = 0; i < 2; i++) {
		f->pair[i].va = entry_va(gfn, below(2) ? slot : random_slot());
		f->pair[i].val = random_entry();
		f->pair[i].go = &go;
		T_EQ(pthread_create(&t[i], NULL, pair_store, &f->pair[i]), 0);
	}
	for (i = 0; i < 2; i++)
		T_EQ(pthread_join(t[i], NULL), 0);
	pthread_barrier_destroy(&go);
	count.pairs++;
	return f->pair[0].err ? f->pair[0].err : f->pair[1].err;
}

/* The VMM writes a frame that is not a table: unseen, and allowed. */
static int step_vmm_write(struct fuzz_vm *f)
{
	uint64_t gfn = POOL + below(POOL_N);

	if (kt_query(&f->vm, gfn) & KVM_PAGETYPE_F_VALIDATED)
		return 0;
	kt_frame(&f->vm, gfn)[random_slot()] = random_entry();
	count.vmm_writes++;
	return 0;
}

static int step_doorbell(struct fuzz_vm *f)
{
	struct kvm_pagetype_op op = {
		.code = 1 + below(9), .arg = pool_gfn(),
	};
	uint64_t gfn = POOL + below(POOL_N);

	switch (below(3)) {
	case 0:
		kt_set_doorbell(&f->vm, below(4) ? gfn * KT_PAGE :
				KVM_PAGETYPE_NO_DOORBELL);
		return 0;
	default:
		/* rung wherever the guest likes: only the doorbell runs it */
		if (op.code == KVM_PAGETYPE_OP_SET_MODE)
			op.arg = below(2);
		memcpy(kt_frame(&f->vm, DB_BATCH_GFN), &op, sizeof(op));
		count.doorbells++;
		return kt_guest_store(&f->vm, kt_kva(gfn * KT_PAGE),
				      KVM_PAGETYPE_DB_RING(DB_BATCH_GFN *
							   KT_PAGE, 1), 8);
	}
}

static int step_reset(struct fuzz_vm *f)
{
	count.resets++;
	T_EQ(ioctl(f->vm.pt_fd, KVM_PAGETYPE_RESET), 0);
	return 0;
}

static int (*const steps[])(struct fuzz_vm *) = {
	step_batch, step_batch, step_batch, step_store, step_store,
	step_store, step_store, step_pair, step_pair, step_vmm_write,
	step_doorbell,
};

int main(int argc, char **argv)
{
	struct kvm_pagetype_stats s;
	struct fuzz_vm f;
	time_t end;
	int err;

	if (argc != 3) {
		fprintf(stderr, "usage: pagetype-fuzz SEED SECONDS\n");
		return 2;
	}
	rng = strtoull(argv[1], NULL, 0) | 1;
	end = time(NULL) + atoi(argv[2]);
	printf("pagetype-fuzz: seed %s, %s s\n", argv[1], argv[2]);
	fflush(stdout);

	vm_start(&f);
	while (time(NULL) < end) {
		count.steps++;
		if (!below(500))
			err = step_reset(&f);
		else
			err = steps[below(sizeof(steps) / sizeof(steps[0]))](&f);
		if (!died(&f, err))
			check_view(&f.vm, f.kernel_half);
	}
	vm_stop(&f);

	/* Every VM gone: nothing pinned anywhere. */
	kt_vm_new(&f.vm, MEM, 0);
	kt_stats(&f.vm, true, &s);
	T_EQ(s.pinned[0] + s.pinned[1] + s.pinned[2] + s.pinned[3], 0);
	kt_vm_destroy(&f.vm);

	printf("pagetype-fuzz: %" PRIu64 " steps, %" PRIu64 " ops (%" PRIu64
	       " refused), %" PRIu64 " stores, %" PRIu64 " store pairs, %"
	       PRIu64 " VMM writes, %" PRIu64 " doorbells, %" PRIu64
	       " resets, %" PRIu64 " VMs; kills: %" PRIu64 " write, %" PRIu64
	       " batch, %" PRIu64 " memslot, %" PRIu64 " unseen\n",
	       count.steps, count.ops, count.refused, count.stores,
	       count.pairs, count.vmm_writes, count.doorbells, count.resets,
	       count.vms, count.kills[1], count.kills[2], count.kills[3],
	       count.kills[4]);
	printf("pagetype-fuzz: the module's view was memory's after every "
	       "step\n");
	return 0;
}
