/* SPDX-License-Identifier: MIT */
/*
 * The page-type rule engine (kvm-pagetype/pt_rules.c) in user space:
 * every transition and count edge, each validation rule accepted and
 * refused, the superpage and kernel-half rules, modes, the work budget,
 * trapped writes, failures of the environment, the DMA hook's calls and
 * their order, and two threads on one engine.  After each case the
 * reference counts are recomputed from the shadows and compared with the
 * type words, and each frame's DMA rights with its type.
 */
#include <pthread.h>

#include "check.h"
#include "pt_rules.h"

#define W	KVM_PAGETYPE_WRITABLE

/* What the engine asked of its environment, in order (test_dma). */
struct call {
	char what;		/* 'R'ead, 'T'rack, 'D'MA, 'S'ync */
	int on;			/* T: on; D: PT_DMA_* */
	u64 gfn;
};

#define MAX_CALLS	64

/*
 * A sparse fake guest: a page only where a test wrote one; DMA blocked
 * (dma_off) where the engine revoked it.
 */
struct fake {
	u64 nr;			/* frames the fake holds: twice the engine's */
	u64 frames;		/* the guest's frame count now (memslots) */
	u64 **page;
	int *tracked;
	int *dma_off;
	int dma_pending;	/* lazy revokes since the last sync */
	int fail_track, fail_read, fail_dma;
	struct call calls[MAX_CALLS];
	unsigned int ncalls;
};

static void record(struct fake *f, char what, int on, u64 gfn)
{
	if (f->ncalls < MAX_CALLS)
		f->calls[f->ncalls] = (struct call){ what, on, gfn };
	f->ncalls++;
}

static int fake_read(void *priv, u64 gfn, u64 *entries)
{
	struct fake *f = priv;

	record(f, 'R', 0, gfn);
	/* What is validated must be out of every device's reach already. */
	T_ASSERT(!f->dma_pending, "frame %llu read before a DMA sync",
		 (unsigned long long)gfn);
	if (f->fail_read)
		return -EIO;
	/* Entry by entry, as a vCPU's 8-byte stores land (test_threads). */
	for (int i = 0; i < PT_ENTRIES; i++)
		entries[i] = f->page[gfn] ?
			     __atomic_load_n(&f->page[gfn][i], __ATOMIC_RELAXED) :
			     0;
	return 0;
}

static int fake_track(void *priv, u64 gfn, bool on)
{
	struct fake *f = priv;

	record(f, 'T', on, gfn);
	if (on && f->fail_track)
		return -EFAULT;
	f->tracked[gfn] += on ? 1 : -1;
	T_ASSERT(f->tracked[gfn] == 0 || f->tracked[gfn] == 1,
		 "frame %llu tracked %d times", (unsigned long long)gfn,
		 f->tracked[gfn]);
	return 0;
}

static int fake_dma(void *priv, u64 gfn, int how)
{
	struct fake *f = priv;
	bool allow = how == PT_DMA_GRANT;

	record(f, 'D', how, gfn);
	if (!allow && f->fail_dma)
		return -ENOMEM;
	T_ASSERT(f->dma_off[gfn] == allow, "frame %llu DMA %s twice",
		 (unsigned long long)gfn, allow ? "granted" : "revoked");
	f->dma_off[gfn] = !allow;
	if (how == PT_DMA_REVOKE_LAZY)
		f->dma_pending++;
	return 0;
}

static void fake_dma_sync(void *priv)
{
	struct fake *f = priv;

	record(f, 'S', 0, 0);
	T_ASSERT(f->dma_pending, "a sync with nothing to sync");
	f->dma_pending = 0;
}

static u64 fake_frames(void *priv)
{
	struct fake *f = priv;

	return f->frames;
}

static struct fake fk;
static struct pt_env env = { fake_read, fake_track, &fk, fake_dma,
			     fake_dma_sync, fake_frames };
static struct pt_engine eng;

static void setup(u64 nr, u32 flags)
{
	fk.nr = 2 * nr;
	fk.frames = nr;
	fk.page = calloc(fk.nr, sizeof(*fk.page));
	fk.tracked = calloc(fk.nr, sizeof(*fk.tracked));
	fk.dma_off = calloc(fk.nr, sizeof(*fk.dma_off));
	fk.fail_track = fk.fail_read = fk.fail_dma = 0;
	fk.dma_pending = 0;
	fk.ncalls = 0;
	T_ASSERT(fk.page && fk.tracked && fk.dma_off, "oom");
	T_EQ(pt_engine_init(&eng, nr, flags, &env), 0);
}

static void teardown(void)
{
	T_ASSERT(!fk.dma_pending, "lazy revokes never synced");
	pt_engine_destroy(&eng);
	for (u64 i = 0; i < fk.nr; i++) {
		T_ASSERT(fk.tracked[i] == 0, "frame %llu still tracked",
			 (unsigned long long)i);
		free(fk.page[i]);
	}
	free(fk.page);
	free(fk.tracked);
	free(fk.dma_off);
}

static u64 *page(u64 gfn)
{
	if (!fk.page[gfn])
		fk.page[gfn] = calloc(PT_ENTRIES, sizeof(u64));
	return fk.page[gfn];
}

static u64 pte(u64 gfn, u64 flags)
{
	return (gfn << 12) | PT_P | flags;
}

static u16 op(u16 code, u64 arg)
{
	struct kvm_pagetype_op o = { .code = code, .arg = arg };

	T_EQ(pt_engine_batch(&eng, &o, 1), 1);
	return o.result;
}

static u16 pin(int level, u64 gfn)
{
	return op(KVM_PAGETYPE_OP_PIN_L1 + level - 1, gfn);
}

static u16 unpin(u64 gfn)
{
	return op(KVM_PAGETYPE_OP_UNPIN, gfn);
}

static u32 query(u64 gfn)
{
	struct kvm_pagetype_op o = { .code = KVM_PAGETYPE_OP_QUERY, .arg = gfn };

	T_EQ(pt_engine_batch(&eng, &o, 1), 1);
	T_EQ(o.result, KVM_PAGETYPE_R_OK);
	return o.out;
}

/*
 * A guest store of len bytes at gpa: into memory first, then the
 * notifier, as KVM's emulator does.  A store off the page's end is cut.
 */
static u16 store(u64 gpa, const void *bytes, unsigned int len)
{
	unsigned int off = gpa % PT_PAGE_SIZE;

	if (off + len > PT_PAGE_SIZE)
		len = PT_PAGE_SIZE - off;
	memcpy((u8 *)page(gpa / PT_PAGE_SIZE) + off, bytes, len);
	return pt_engine_write(&eng, gpa);
}

static u16 write64(u64 gfn, unsigned int index, u64 val)
{
	return store(gfn * PT_PAGE_SIZE + index * 8, &val, 8);
}

/* An 8-byte store from another thread: the page exists already. */
static u16 write64_atomic(u64 gfn, unsigned int index, u64 val)
{
	__atomic_store_n(&fk.page[gfn][index], val, __ATOMIC_RELAXED);
	return pt_engine_write(&eng, gfn * PT_PAGE_SIZE + index * 8);
}

/*
 * Recompute every count from the pins and the shadows; compare.  A table
 * is referenced (a count of 0 would have returned it to writable).
 */
static void check_invariants(void)
{
	u64 n = eng.nr_frames, gfn;
	u32 *count = calloc(n, sizeof(u32));
	u64 pinned[4] = { 0 }, tables[4] = { 0 }, semi = 0;

	for (gfn = 0; gfn < n; gfn++) {
		u32 w = eng.word[gfn];
		int level = pt_type(w);

		T_ASSERT(fk.dma_off[gfn] == !pt_engine_dma_ok_locked(&eng, gfn),
			 "frame %llx type %x DMA %s", (unsigned long long)gfn,
			 w, fk.dma_off[gfn] ? "revoked" : "allowed");
		T_EQ(pt_engine_dma_ok_locked(&eng, gfn),
		     level == W && !(w & KVM_PAGETYPE_SEMI));
		if (w & KVM_PAGETYPE_SEMI)
			semi++;
		if (level == W) {
			T_ASSERT(!eng.shadow[gfn], "writable frame with shadow");
			T_ASSERT(!(w & (KVM_PAGETYPE_F_PINNED |
					KVM_PAGETYPE_F_VALIDATED)),
				 "writable frame %llx flags %x",
				 (unsigned long long)gfn, w);
			continue;
		}
		T_ASSERT(eng.shadow[gfn] && fk.tracked[gfn] == 1,
			 "table %llx untracked", (unsigned long long)gfn);
		T_ASSERT(w & KVM_PAGETYPE_F_VALIDATED,
			 "table %llx not validated", (unsigned long long)gfn);
		T_ASSERT(pt_count(w), "table %llx with no reference",
			 (unsigned long long)gfn);
		tables[level - 1]++;
		if (w & KVM_PAGETYPE_F_PINNED) {
			pinned[level - 1]++;
			count[gfn]++;
		}
		for (int i = 0; i < PT_ENTRIES; i++) {
			u64 en = eng.shadow[gfn][i], to = (en & PT_ADDR_MASK) >> 12;
			u64 mem = fk.page[gfn] ? fk.page[gfn][i] : 0;

			T_ASSERT(!((en | mem) & PT_P) ||
				 !((en ^ mem) & PT_GRANT_MASK),
				 "table %llx entry %d: %llx validated, %llx in memory",
				 (unsigned long long)gfn, i,
				 (unsigned long long)en, (unsigned long long)mem);

			if (!(en & PT_P) || to >= n)
				continue;	/* I/O mappings hold nothing */
			if (level == 1 ? (en & PT_RW) :
			    !((level == 2 || level == 3) && (en & PT_PS)))
				count[to]++;
		}
	}
	for (gfn = 0; gfn < n; gfn++)
		T_ASSERT(pt_count(eng.word[gfn]) == count[gfn],
			 "frame %llx count %u, references %u",
			 (unsigned long long)gfn, pt_count(eng.word[gfn]),
			 count[gfn]);
	for (int l = 0; l < 4; l++) {
		T_EQ(eng.stats.pinned[l], pinned[l]);
		T_EQ(eng.stats.tables[l], tables[l]);
	}
	T_EQ(eng.stats.semi, semi);
	free(count);
}

static void test_pin_unpin(void)
{
	setup(1024, 0);
	T_EQ(query(10), 0);
	for (int level = 1; level <= 4; level++) {
		T_EQ(pin(level, 10), KVM_PAGETYPE_R_OK);
		T_EQ(query(10), ((u32)level << 28) | KVM_PAGETYPE_F_PINNED |
		     KVM_PAGETYPE_F_VALIDATED | 1);
		T_EQ(fk.tracked[10], 1);
		T_EQ(pin(level, 10), KVM_PAGETYPE_R_EXIST);
		T_EQ(pin(level % 4 + 1, 10), KVM_PAGETYPE_R_TYPE);
		check_invariants();
		T_EQ(unpin(10), KVM_PAGETYPE_R_OK);
		T_EQ(query(10), 0);
		T_EQ(fk.tracked[10], 0);
		T_EQ(unpin(10), KVM_PAGETYPE_R_NOENT);
	}
	T_EQ(pin(1, 1024), KVM_PAGETYPE_R_RANGE);
	T_EQ(pin(1, ~0ULL), KVM_PAGETYPE_R_RANGE);
	T_EQ(unpin(1024), KVM_PAGETYPE_R_RANGE);
	T_EQ(op(KVM_PAGETYPE_OP_QUERY, 5000), KVM_PAGETYPE_R_RANGE);
	T_EQ(op(KVM_PAGETYPE_NR_OPS, 0), KVM_PAGETYPE_R_INVAL);
	T_EQ(op(0xffff, 0), KVM_PAGETYPE_R_INVAL);
	T_EQ(op(KVM_PAGETYPE_OP_NULL, 12345), KVM_PAGETYPE_R_OK);
	T_EQ(op(KVM_PAGETYPE_OP_SET_MODE, 2), KVM_PAGETYPE_R_INVAL);
	T_EQ(eng.stats.ops[KVM_PAGETYPE_OP_PIN_L1], 5);
	check_invariants();
	teardown();
}

static void test_l1_rules(void)
{
	setup(1024, 0);
	page(20)[0] = pte(30, PT_RW);		/* writable data */
	page(20)[1] = pte(31, 0);		/* read-only data */
	page(20)[2] = pte(30, PT_RW | PT_PS);	/* PS is PAT in an L1 */
	T_EQ(pin(1, 20), KVM_PAGETYPE_R_OK);
	T_EQ(pt_count(query(30)), 2);
	T_EQ(pt_count(query(31)), 0);
	/* A frame mapped writable cannot become a table. */
	T_EQ(pin(1, 30), KVM_PAGETYPE_R_BUSY);
	T_EQ(pin(1, 31), KVM_PAGETYPE_R_OK);
	check_invariants();

	/* No leaf maps a table writable; read-only is fine. */
	page(21)[7] = pte(31, PT_RW);
	T_EQ(pin(1, 21), KVM_PAGETYPE_R_TYPE);
	T_EQ(fk.tracked[21], 0);
	T_EQ(query(21), 0);
	page(21)[7] = pte(31, 0);
	page(21)[8] = pte(20, 0);
	T_EQ(pin(1, 21), KVM_PAGETYPE_R_OK);

	/* Beyond guest memory: the guest's I/O space, taking nothing. */
	page(22)[0] = pte(1024, PT_RW);
	page(22)[1] = pte(0xfffffffffULL, PT_RW);
	T_EQ(pin(1, 22), KVM_PAGETYPE_R_OK);
	T_EQ(unpin(22), KVM_PAGETYPE_R_OK);
	/* Not present: anything goes. */
	page(22)[0] = 0xfffffffffffffffeULL;
	page(22)[1] = 0;
	T_EQ(pin(1, 22), KVM_PAGETYPE_R_OK);

	/* A table mapping itself: writable refused, read-only accepted. */
	page(23)[0] = pte(23, PT_RW);
	T_EQ(pin(1, 23), KVM_PAGETYPE_R_TYPE);
	T_EQ(query(23), 0);
	page(23)[0] = pte(23, 0);
	T_EQ(pin(1, 23), KVM_PAGETYPE_R_OK);
	check_invariants();

	/* A refused pin takes nothing: the entries before the bad one. */
	page(24)[0] = pte(40, PT_RW);
	page(24)[1] = pte(41, PT_RW);
	page(24)[2] = pte(20, PT_RW);
	T_EQ(pin(1, 24), KVM_PAGETYPE_R_TYPE);
	T_EQ(pt_count(query(40)), 0);
	T_EQ(pt_count(query(41)), 0);
	check_invariants();

	T_EQ(unpin(20), KVM_PAGETYPE_R_OK);
	T_EQ(pt_count(query(30)), 0);
	T_EQ(pin(1, 30), KVM_PAGETYPE_R_OK);
	check_invariants();
	teardown();
}

#define VALID	KVM_PAGETYPE_F_VALIDATED
#define PINNED	(KVM_PAGETYPE_F_PINNED | KVM_PAGETYPE_F_VALIDATED)

static u32 word(u32 type, u32 flags, u32 count)
{
	return (type << KVM_PAGETYPE_TYPE_SHIFT) | flags | count;
}

static void test_hierarchy(void)
{
	setup(1024, 0);
	page(1)[0] = pte(30, PT_RW);
	page(2)[0] = pte(1, PT_RW);
	page(3)[0] = pte(2, PT_RW);
	page(4)[0] = pte(3, PT_RW);
	/* Top down: the pin validates the tree below it by reference. */
	T_EQ(pin(4, 4), KVM_PAGETYPE_R_OK);
	T_EQ(query(4), word(4, PINNED, 1));
	T_EQ(query(3), word(3, VALID, 1));
	T_EQ(query(2), word(2, VALID, 1));
	T_EQ(query(1), word(1, VALID, 1));
	T_EQ(query(30), word(W, 0, 1));
	T_EQ(eng.stats.ref_validations, 3);
	check_invariants();
	/* The last reference going devalidates the whole tree. */
	T_EQ(unpin(4), KVM_PAGETYPE_R_OK);
	for (u64 f = 1; f <= 4; f++)
		T_EQ(query(f), 0);
	T_EQ(query(30), 0);
	T_EQ(eng.stats.devalidations, 4);
	check_invariants();

	/* Bottom up as before: each pin is one more reference. */
	T_EQ(pin(1, 1), KVM_PAGETYPE_R_OK);
	T_EQ(pin(2, 2), KVM_PAGETYPE_R_OK);
	T_EQ(pin(3, 3), KVM_PAGETYPE_R_OK);
	T_EQ(pin(4, 4), KVM_PAGETYPE_R_OK);
	T_EQ(pt_count(query(1)), 2);
	T_EQ(pt_count(query(3)), 2);
	T_EQ(pt_count(query(4)), 1);
	T_EQ(eng.stats.ref_validations, 3);
	check_invariants();

	/* The wrong level below is refused at every level. */
	page(5)[0] = pte(1, 0);		/* L3 -> L1 */
	T_EQ(pin(3, 5), KVM_PAGETYPE_R_TYPE);
	page(5)[0] = pte(4, 0);		/* L2 -> L4 */
	T_EQ(pin(2, 5), KVM_PAGETYPE_R_TYPE);
	page(5)[0] = pte(2, 0);		/* L4 -> L2 */
	T_EQ(pin(4, 5), KVM_PAGETYPE_R_TYPE);
	page(5)[0] = pte(3, PT_PS);	/* PS in an L4 is reserved */
	T_EQ(pin(4, 5), KVM_PAGETYPE_R_BADENTRY);
	page(5)[0] = pte(5000, 0);
	T_EQ(pin(2, 5), KVM_PAGETYPE_R_RANGE);
	/* Data in use (mapped writable) is never typed as a table. */
	page(5)[0] = pte(30, 0);
	T_EQ(pin(2, 5), KVM_PAGETYPE_R_BUSY);
	T_EQ(query(30), word(W, 0, 1));
	/* Two parents may share a child: two references. */
	page(5)[0] = pte(1, PT_RW);
	T_EQ(pin(2, 5), KVM_PAGETYPE_R_OK);
	T_EQ(pt_count(query(1)), 3);
	check_invariants();

	/* Unpin drops the pin only: a referenced table stays a table. */
	T_EQ(unpin(1), KVM_PAGETYPE_R_OK);
	T_EQ(query(1), word(1, VALID, 2));
	T_EQ(unpin(1), KVM_PAGETYPE_R_NOENT);
	/* ... and may be pinned again at its level, not at another. */
	T_EQ(pin(2, 1), KVM_PAGETYPE_R_TYPE);
	T_EQ(pin(1, 1), KVM_PAGETYPE_R_OK);
	T_EQ(query(1), word(1, PINNED, 3));
	T_EQ(unpin(1), KVM_PAGETYPE_R_OK);
	T_EQ(unpin(3), KVM_PAGETYPE_R_OK);
	T_EQ(query(3), word(3, VALID, 1));
	T_EQ(unpin(4), KVM_PAGETYPE_R_OK);	/* 4, then 3 go */
	T_EQ(query(3), 0);
	T_EQ(query(2), word(2, PINNED, 1));
	T_EQ(unpin(2), KVM_PAGETYPE_R_OK);
	T_EQ(query(1), word(1, VALID, 1));	/* 5 still holds it */
	T_EQ(unpin(5), KVM_PAGETYPE_R_OK);
	T_EQ(query(1), 0);
	T_EQ(query(30), 0);
	check_invariants();
	teardown();
}

static void test_superpages(void)
{
	u64 big = (1ULL << 18) + 4096 + 100;	/* a little over 1 GiB */

	setup(big, 0);
	T_EQ(pin(1, 600), KVM_PAGETYPE_R_OK);	/* a table in 2M region 1 */
	/* A writable 2M leaf over a table is refused, read-only is fine. */
	page(2)[0] = pte(512, PT_PS | PT_RW);
	T_EQ(pin(2, 2), KVM_PAGETYPE_R_TYPE);
	page(2)[0] = pte(512, PT_PS);
	T_EQ(pin(2, 2), KVM_PAGETYPE_R_OK);
	T_EQ(unpin(2), KVM_PAGETYPE_R_OK);
	/* Writable over region 2, then no table may appear in it. */
	page(2)[0] = pte(1024, PT_PS | PT_RW);
	page(2)[1] = pte(1024, PT_PS | PT_RW | (1ULL << 12));	/* PAT ok */
	T_EQ(pin(2, 2), KVM_PAGETYPE_R_OK);
	T_EQ(pin(1, 1024 + 77), KVM_PAGETYPE_R_BUSY);
	T_EQ(pin(1, 1024 + 511), KVM_PAGETYPE_R_BUSY);
	T_EQ(pin(1, 1024 + 512), KVM_PAGETYPE_R_OK);
	/* Misaligned: bits between PAT and the base are reserved. */
	page(3)[0] = pte(1026, PT_PS);
	T_EQ(pin(2, 3), KVM_PAGETYPE_R_BADENTRY);
	page(3)[0] = pte(1024, PT_PS) | (1ULL << 20);
	T_EQ(pin(2, 3), KVM_PAGETYPE_R_BADENTRY);
	/* Beyond memory: the last 2M region is partly outside. */
	page(3)[0] = pte(big & ~511ULL, PT_PS);
	T_EQ(pin(2, 3), KVM_PAGETYPE_R_RANGE);
	/* Wholly outside: the guest's I/O space, taking nothing. */
	page(3)[0] = pte((big + 511) & ~511ULL, PT_PS | PT_RW);
	T_EQ(pin(2, 3), KVM_PAGETYPE_R_OK);
	T_EQ(unpin(3), KVM_PAGETYPE_R_OK);
	check_invariants();

	/* 1G leaves in an L3: region 0 holds tables, region 1 is partial. */
	page(4)[0] = pte(0, PT_PS | PT_RW);
	T_EQ(pin(3, 4), KVM_PAGETYPE_R_TYPE);
	page(4)[0] = pte(1ULL << 18, PT_PS);
	T_EQ(pin(3, 4), KVM_PAGETYPE_R_RANGE);
	page(4)[0] = pte(0, PT_PS);
	page(4)[1] = pte(512, PT_PS);	/* not 1G aligned */
	T_EQ(pin(3, 4), KVM_PAGETYPE_R_BADENTRY);
	page(4)[1] = 0;
	T_EQ(pin(3, 4), KVM_PAGETYPE_R_OK);
	check_invariants();
	T_EQ(unpin(4), KVM_PAGETYPE_R_OK);
	T_EQ(unpin(1024 + 512), KVM_PAGETYPE_R_OK);
	T_EQ(unpin(600), KVM_PAGETYPE_R_OK);
	T_EQ(unpin(2), KVM_PAGETYPE_R_OK);
	T_EQ(pin(1, 1024 + 77), KVM_PAGETYPE_R_OK);
	/* With no table left in region 0 but 1024+77, 1G writable fails. */
	page(4)[0] = pte(0, PT_PS | PT_RW);
	T_EQ(pin(3, 4), KVM_PAGETYPE_R_TYPE);
	T_EQ(unpin(1024 + 77), KVM_PAGETYPE_R_OK);
	page(4)[0] = pte(0, PT_PS | PT_RW);
	/* Now the L3 itself sits in region 0: still refused (self). */
	T_EQ(pin(3, 4), KVM_PAGETYPE_R_TYPE);
	check_invariants();
	teardown();
}

static void test_kernel_half(void)
{
	for (int flag = 0; flag <= 1; flag++) {
		setup(1024, flag ? KVM_PAGETYPE_ATTACH_KERNEL_HALF : 0);
		page(9)[0] = pte(0, PT_RW);	/* the user L3 */
		T_EQ(pin(1, 7), KVM_PAGETYPE_R_OK);
		page(8)[0] = pte(7, PT_RW);
		T_EQ(pin(2, 8), KVM_PAGETYPE_R_OK);
		page(9)[0] = pte(8, PT_RW);
		T_EQ(pin(3, 9), KVM_PAGETYPE_R_OK);
		page(10)[0] = pte(9, PT_RW);
		page(10)[256] = pte(100, PT_RW);	/* the kernel's L3 */
		page(10)[511] = pte(101, PT_RW);
		T_EQ(pin(4, 10), KVM_PAGETYPE_R_OK);
		if (!flag) {
			/* No exception: the kernel's L3s become L3s. */
			T_EQ(query(100), word(3, VALID, 1));
			T_EQ(query(101), word(3, VALID, 1));
			check_invariants();
			T_EQ(unpin(10), KVM_PAGETYPE_R_OK);
			T_EQ(query(100), 0);
		} else {
			/* A writable reference: 100 cannot become a table. */
			T_EQ(query(100), 1);
			T_EQ(pin(3, 100), KVM_PAGETYPE_R_BUSY);
			T_EQ(pin(1, 100), KVM_PAGETYPE_R_BUSY);
			/* The user half gets no exception: 100 is no L3. */
			page(11)[255] = pte(100, PT_RW);
			T_EQ(pin(4, 11), KVM_PAGETYPE_R_BUSY);
			/* A kernel-half entry at another table type: refused. */
			page(11)[255] = 0;
			page(11)[300] = pte(8, PT_RW);
			T_EQ(pin(4, 11), KVM_PAGETYPE_R_TYPE);
			/* ... at a real L3: an ordinary L3 reference. */
			page(11)[300] = pte(9, PT_RW);
			T_EQ(pin(4, 11), KVM_PAGETYPE_R_OK);
			T_EQ(pt_count(query(9)), 3);
			/* Only L4s: an L3's upper half has no exception. */
			page(12)[300] = pte(100, PT_RW);
			T_EQ(pin(3, 12), KVM_PAGETYPE_R_BUSY);
			check_invariants();
			T_EQ(unpin(11), KVM_PAGETYPE_R_OK);
			T_EQ(unpin(10), KVM_PAGETYPE_R_OK);
			T_EQ(query(100), 0);
		}
		check_invariants();
		teardown();
	}
}

static void test_overflow(void)
{
	setup(1024, 0);
	/* White box: bring frame 50's count to one below the maximum. */
	eng.word[50] = KVM_PAGETYPE_COUNT_MASK - 1;
	page(20)[0] = pte(50, PT_RW);
	page(20)[1] = pte(50, PT_RW);
	T_EQ(pin(1, 20), KVM_PAGETYPE_R_OVERFLOW);
	T_EQ(pt_count(query(50)), KVM_PAGETYPE_COUNT_MASK - 1);
	page(20)[1] = 0;
	T_EQ(pin(1, 20), KVM_PAGETYPE_R_OK);
	T_EQ(pt_count(query(50)), KVM_PAGETYPE_COUNT_MASK);
	T_EQ(write64(20, 1, pte(50, PT_RW)), KVM_PAGETYPE_R_OVERFLOW);
	T_EQ(unpin(20), KVM_PAGETYPE_R_OK);
	T_EQ(pt_count(query(50)), KVM_PAGETYPE_COUNT_MASK - 1);
	/* The semi bit sits above the count: the maximum leaves it alone. */
	T_EQ(query(50) & KVM_PAGETYPE_SEMI, 0);
	eng.word[50] = 0;
	/* A table's own count at its maximum: no more parents. */
	T_EQ(pin(1, 60), KVM_PAGETYPE_R_OK);
	eng.word[60] += KVM_PAGETYPE_COUNT_MASK - 1;
	page(61)[0] = pte(60, 0);
	T_EQ(pin(2, 61), KVM_PAGETYPE_R_OVERFLOW);
	eng.word[60] -= KVM_PAGETYPE_COUNT_MASK - 1;
	T_EQ(pin(2, 61), KVM_PAGETYPE_R_OK);
	/* The count of writable superpage leaves over a region: no wrap. */
	eng.writable_2m[1] = UINT32_MAX;
	page(62)[0] = pte(512, PT_PS | PT_RW);
	T_EQ(pin(2, 62), KVM_PAGETYPE_R_OVERFLOW);
	T_EQ(eng.writable_2m[1], UINT32_MAX);
	eng.writable_2m[1] = 0;
	T_EQ(pin(2, 62), KVM_PAGETYPE_R_OK);
	T_EQ(eng.writable_2m[1], 1);
	T_EQ(unpin(62), KVM_PAGETYPE_R_OK);
	check_invariants();
	teardown();
}

static void test_modes(void)
{
	setup(1024, 0);
	T_EQ(op(KVM_PAGETYPE_OP_SET_MODE, KVM_PAGETYPE_MODE_FINE),
	     KVM_PAGETYPE_R_OK);
	/* Fine-grained: writable <-> table only through semi-writable. */
	T_EQ(pin(1, 30), KVM_PAGETYPE_R_MODE);
	T_EQ(op(KVM_PAGETYPE_OP_TO_WRITABLE, 30), KVM_PAGETYPE_R_NOENT);
	T_EQ(op(KVM_PAGETYPE_OP_TO_SEMI, 30), KVM_PAGETYPE_R_OK);
	T_EQ(op(KVM_PAGETYPE_OP_TO_SEMI, 30), KVM_PAGETYPE_R_EXIST);
	T_EQ(query(30), KVM_PAGETYPE_SEMI);
	T_EQ(eng.stats.semi, 1);
	T_EQ(pin(1, 30), KVM_PAGETYPE_R_OK);
	T_ASSERT(query(30) & KVM_PAGETYPE_SEMI, "semi bit lost on pin");
	/* A table cannot be made writable or semi again. */
	T_EQ(op(KVM_PAGETYPE_OP_TO_WRITABLE, 30), KVM_PAGETYPE_R_TYPE);
	T_EQ(op(KVM_PAGETYPE_OP_TO_SEMI, 30), KVM_PAGETYPE_R_TYPE);
	T_EQ(unpin(30), KVM_PAGETYPE_R_OK);
	T_EQ(query(30), KVM_PAGETYPE_SEMI);	/* back to semi, not writable */
	/* A semi-writable frame is CPU-writable: mapped writable, it is busy. */
	page(20)[0] = pte(30, PT_RW);
	page(21)[0] = pte(20, 0);
	T_EQ(op(KVM_PAGETYPE_OP_TO_SEMI, 20), KVM_PAGETYPE_R_OK);
	T_EQ(pin(1, 20), KVM_PAGETYPE_R_OK);
	T_EQ(pin(1, 30), KVM_PAGETYPE_R_BUSY);
	T_EQ(unpin(20), KVM_PAGETYPE_R_OK);
	T_EQ(op(KVM_PAGETYPE_OP_TO_WRITABLE, 30), KVM_PAGETYPE_R_OK);
	T_EQ(op(KVM_PAGETYPE_OP_TO_WRITABLE, 20), KVM_PAGETYPE_R_OK);
	check_invariants();
	/* Coarse: directly, and a semi frame may still be pinned. */
	T_EQ(op(KVM_PAGETYPE_OP_SET_MODE, KVM_PAGETYPE_MODE_COARSE),
	     KVM_PAGETYPE_R_OK);
	T_EQ(pin(1, 30), KVM_PAGETYPE_R_OK);
	T_EQ(op(KVM_PAGETYPE_OP_TO_SEMI, 31), KVM_PAGETYPE_R_OK);
	T_EQ(pin(1, 31), KVM_PAGETYPE_R_OK);
	T_EQ(unpin(31), KVM_PAGETYPE_R_OK);
	T_EQ(query(31), KVM_PAGETYPE_SEMI);
	T_EQ(eng.stats.semi, 1);
	check_invariants();
	teardown();
}

static void test_batch(void)
{
	struct kvm_pagetype_op ops[KVM_PAGETYPE_MAX_BATCH];
	u32 pins = KVM_PAGETYPE_WORK_BUDGET / PT_ENTRIES;

	setup(1024, 0);
	memset(ops, 0, sizeof(ops));
	for (int i = 0; i < KVM_PAGETYPE_MAX_BATCH; i++)
		ops[i].result = 0xdead;
	T_EQ(pt_engine_batch(&eng, ops, KVM_PAGETYPE_MAX_BATCH),
	     KVM_PAGETYPE_MAX_BATCH);
	for (int i = 0; i < KVM_PAGETYPE_MAX_BATCH; i++)
		T_EQ(ops[i].result, KVM_PAGETYPE_R_OK);

	/* One pin more than the budget: the last one is cut. */
	for (u32 i = 0; i <= pins; i++)
		ops[i] = (struct kvm_pagetype_op){
			.code = KVM_PAGETYPE_OP_PIN_L1, .arg = 100 + i };
	ops[pins + 1] = (struct kvm_pagetype_op){ .code = KVM_PAGETYPE_OP_NULL };
	T_EQ(pt_engine_batch(&eng, ops, pins + 2), pins);
	for (u32 i = 0; i < pins; i++)
		T_EQ(ops[i].result, KVM_PAGETYPE_R_OK);
	T_EQ(ops[pins].result, KVM_PAGETYPE_R_SKIPPED);
	T_EQ(ops[pins + 1].result, KVM_PAGETYPE_R_SKIPPED);
	T_EQ(query(100 + pins), 0);
	T_EQ(eng.stats.batches_cut, 1);
	T_EQ(eng.stats.pinned[0], pins);
	/* Errors inside a batch do not stop it. */
	ops[0] = (struct kvm_pagetype_op){ .code = KVM_PAGETYPE_OP_UNPIN,
					   .arg = 999 };
	ops[1] = (struct kvm_pagetype_op){ .code = 77 };
	ops[2] = (struct kvm_pagetype_op){ .code = KVM_PAGETYPE_OP_UNPIN,
					   .arg = 100 };
	T_EQ(pt_engine_batch(&eng, ops, 3), 3);
	T_EQ(ops[0].result, KVM_PAGETYPE_R_NOENT);
	T_EQ(ops[1].result, KVM_PAGETYPE_R_INVAL);
	T_EQ(ops[2].result, KVM_PAGETYPE_R_OK);
	/* The frame a batch lives in is not pinned by it: results go there. */
	ops[0] = (struct kvm_pagetype_op){ .code = KVM_PAGETYPE_OP_PIN_L2,
					   .arg = 500 };
	ops[1] = (struct kvm_pagetype_op){ .code = KVM_PAGETYPE_OP_TO_SEMI,
					   .arg = 500 };
	ops[2] = (struct kvm_pagetype_op){ .code = KVM_PAGETYPE_OP_PIN_L1,
					   .arg = 501 };
	pt_engine_lock(&eng);
	T_EQ(pt_engine_batch_locked(&eng, 500, ops, 3), 3);
	pt_engine_unlock(&eng);
	T_EQ(ops[0].result, KVM_PAGETYPE_R_BUSY);
	T_EQ(ops[1].result, KVM_PAGETYPE_R_OK);
	T_EQ(ops[2].result, KVM_PAGETYPE_R_OK);
	T_ASSERT(!pt_engine_has_table(&eng, 500, 1), "batch frame pinned");
	T_ASSERT(pt_engine_has_table(&eng, 400, 200), "501 not found");
	T_ASSERT(!pt_engine_has_table(&eng, 1000, 1ULL << 40), "past the end");
	T_EQ(op(KVM_PAGETYPE_OP_TO_WRITABLE, 500), KVM_PAGETYPE_R_OK);
	check_invariants();
	teardown();
}

static void test_writes(void)
{
	u64 v;

	setup(1024, 0);
	T_EQ(pin(1, 1), KVM_PAGETYPE_R_OK);
	T_EQ(pin(1, 20), KVM_PAGETYPE_R_OK);
	/* Map, remap read-only, unmap: counts follow. */
	T_EQ(write64(20, 5, pte(30, PT_RW)), 0);
	T_EQ(pt_count(query(30)), 1);
	T_EQ(write64(20, 5, pte(30, 0)), 0);
	T_EQ(pt_count(query(30)), 0);
	T_EQ(write64(20, 5, pte(30, PT_RW)), 0);
	T_EQ(write64(20, 5, pte(31, PT_RW)), 0);
	T_EQ(pt_count(query(30)), 0);
	T_EQ(pt_count(query(31)), 1);
	T_EQ(write64(20, 5, 0), 0);
	T_EQ(pt_count(query(31)), 0);
	check_invariants();

	/* Mapping a table writable is a violation; the shadow keeps the old. */
	T_EQ(write64(20, 6, pte(31, PT_RW)), 0);
	T_EQ(write64(20, 6, pte(1, PT_RW)), KVM_PAGETYPE_R_TYPE);
	T_EQ(eng.shadow[20][6], pte(31, PT_RW));
	T_EQ(eng.stats.violations, 1);
	/* The VM is killed then; here memory goes back for the next case. */
	page(20)[6] = pte(31, PT_RW);
	/* An I/O mapping is none. */
	T_EQ(write64(20, 7, pte(1024, PT_RW)), 0);
	T_EQ(write64(20, 7, 0), 0);
	check_invariants();

	/* Accessed and dirty bits change nothing a reference depends on. */
	v = eng.stats.write_updates;
	T_EQ(write64(20, 6, pte(31, PT_RW | 0x60)), 0);
	T_EQ(eng.stats.write_updates, v);
	/* Half writes compose with the rest of the entry. */
	{
		u32 lo = (u32)pte(40, PT_RW), hi = 0;

		T_EQ(store(20 * 4096 + 8 * 9 + 4, &hi, 4), 0);
		T_EQ(store(20 * 4096 + 8 * 9, &lo, 4), 0);
		T_EQ(pt_count(query(40)), 1);
		T_EQ(eng.shadow[20][9], pte(40, PT_RW));
		/* A one-byte write clears RW. */
		u8 b = (u8)(pte(40, 0) & 0xff);

		T_EQ(store(20 * 4096 + 8 * 9, &b, 1), 0);
		T_EQ(pt_count(query(40)), 0);
	}
	/* A write spanning two entries validates both. */
	{
		u64 two[2] = { pte(41, PT_RW), pte(42, PT_RW) };

		T_EQ(store(20 * 4096 + 8 * 10, two, 16), 0);
		T_EQ(pt_count(query(41)) + pt_count(query(42)), 2);
	}
	/* A write running off the page is cut at its end. */
	{
		u64 v2[2] = { pte(43, PT_RW), pte(44, PT_RW) };

		T_EQ(store(20 * 4096 + 8 * 511, v2, 16), 0);
		T_EQ(pt_count(query(43)), 1);
		T_EQ(pt_count(query(44)), 0);
	}
	/* Writes to frames that are not tables are not counted. */
	v = eng.stats.writes;
	T_EQ(write64(30, 0, pte(1, PT_RW)), 0);
	T_EQ(pt_engine_write(&eng, 1024 * 4096), 0);
	T_EQ(eng.stats.writes, v);
	check_invariants();

	/* Non-leaf entries: an L2 gains and loses a reference on an L1. */
	T_EQ(pin(2, 50), KVM_PAGETYPE_R_OK);
	T_EQ(write64(50, 0, pte(20, PT_RW)), 0);
	T_EQ(pt_count(query(20)), 2);
	/* Unpinned, the L1 lives on under the L2. */
	T_EQ(unpin(20), KVM_PAGETYPE_R_OK);
	T_EQ(query(20), word(1, VALID, 1));
	/* An entry at a frame of no type validates it by reference ... */
	T_EQ(write64(50, 1, pte(35, PT_RW)), 0);
	T_EQ(query(35), word(1, VALID, 1));
	/* ... and refuses it when an entry breaks a rule: 30 maps 1. */
	T_EQ(write64(50, 4, pte(30, PT_RW)), KVM_PAGETYPE_R_TYPE);
	T_EQ(query(30), 0);
	T_EQ(fk.tracked[30], 0);
	page(50)[4] = 0;
	/* ... not at data in use: 31 is mapped writable by 20. */
	T_EQ(write64(50, 3, pte(31, PT_RW)), KVM_PAGETYPE_R_BUSY);
	T_EQ(eng.shadow[50][3], 0);
	page(50)[3] = 0;
	check_invariants();
	T_EQ(write64(50, 2, pte(512, PT_PS | PT_RW)), 0);
	T_EQ(pin(1, 600), KVM_PAGETYPE_R_BUSY);
	T_EQ(write64(50, 2, pte(512, PT_PS)), 0);
	T_EQ(pin(1, 600), KVM_PAGETYPE_R_OK);
	T_EQ(write64(50, 2, pte(512, PT_PS | PT_RW)), KVM_PAGETYPE_R_TYPE);
	page(50)[2] = pte(512, PT_PS);
	/* The entry goes, and with it the last reference: writable again. */
	T_EQ(write64(50, 0, 0), 0);
	T_EQ(query(20), 0);
	T_EQ(fk.tracked[20], 0);
	T_EQ(pt_count(query(31)), 0);
	check_invariants();
	teardown();
}

static void test_env_failures(void)
{
	setup(1024, 0);
	page(20)[0] = pte(30, PT_RW);
	fk.fail_track = 1;
	T_EQ(pin(1, 20), KVM_PAGETYPE_R_IO);
	fk.fail_track = 0;
	fk.fail_read = 1;
	T_EQ(pin(1, 20), KVM_PAGETYPE_R_IO);
	T_EQ(fk.tracked[20], 0);
	fk.fail_read = 0;
	T_EQ(query(20), 0);
	T_EQ(pt_count(query(30)), 0);
	/* Tables still pinned at destroy are untracked (teardown checks). */
	T_EQ(pin(1, 20), KVM_PAGETYPE_R_OK);
	T_EQ(pin(2, 21), KVM_PAGETYPE_R_OK);
	check_invariants();
	teardown();
}

/*
 * The calls since the last expect_calls(), as "D-40 T+40 R40": D+ grant,
 * D- revoke, D~ lazy revoke, S sync.
 */
static void expect_calls(const char *want)
{
	char got[MAX_CALLS * 12] = "";
	size_t len = 0;

	T_ASSERT(fk.ncalls <= MAX_CALLS, "too many calls: %u", fk.ncalls);
	for (unsigned int i = 0; i < fk.ncalls; i++) {
		const struct call *c = &fk.calls[i];

		static const char * const dma[] = { "+", "-", "~" };

		if (c->what == 'S') {
			len += snprintf(got + len, sizeof(got) - len, "%sS",
					i ? " " : "");
			continue;
		}
		len += snprintf(got + len, sizeof(got) - len, "%s%c%s%llu",
				i ? " " : "", c->what,
				c->what == 'R' ? "" :
				c->what == 'D' ? dma[c->on] : c->on ? "+" : "-",
				(unsigned long long)c->gfn);
	}
	T_ASSERT(!strcmp(got, want), "calls \"%s\", expected \"%s\"", got,
		 want);
	fk.ncalls = 0;
}

/*
 * The DMA hook: which transitions change DMA rights, in which order
 * against tracking and reading, and what a failure undoes.
 */
static void test_dma(void)
{
	setup(1024, 0);
	/* Coarse: revoked before the frame is tracked or read. */
	T_EQ(pin(1, 40), KVM_PAGETYPE_R_OK);
	expect_calls("D-40 T+40 R40");
	T_EQ(pin(1, 40), KVM_PAGETYPE_R_EXIST);
	expect_calls("");
	/* Granted once the frame is writable and untracked. */
	T_EQ(unpin(40), KVM_PAGETYPE_R_OK);
	expect_calls("T-40 D+40");
	T_EQ(unpin(40), KVM_PAGETYPE_R_NOENT);
	expect_calls("");

	/* A revoke that fails fails the op and touches nothing else. */
	fk.fail_dma = 1;
	T_EQ(pin(1, 41), KVM_PAGETYPE_R_IO);
	expect_calls("D-41");
	T_EQ(op(KVM_PAGETYPE_OP_TO_SEMI, 41), KVM_PAGETYPE_R_IO);
	expect_calls("D~41");
	T_EQ(query(41), 0);
	fk.fail_dma = 0;
	/* Failures after the revoke give it back, last. */
	fk.fail_track = 1;
	T_EQ(pin(1, 41), KVM_PAGETYPE_R_IO);
	expect_calls("D-41 T+41 D+41");
	fk.fail_track = 0;
	fk.fail_read = 1;
	T_EQ(pin(1, 41), KVM_PAGETYPE_R_IO);
	expect_calls("D-41 T+41 R41 T-41 D+41");
	fk.fail_read = 0;
	page(42)[0] = pte(42, PT_RW);
	T_EQ(pin(1, 42), KVM_PAGETYPE_R_TYPE);
	expect_calls("D-42 T+42 R42 T-42 D+42");
	/* Refused before anything is asked of the environment. */
	T_EQ(pin(1, 1024), KVM_PAGETYPE_R_RANGE);
	page(43)[0] = pte(44, PT_RW);
	T_EQ(pin(1, 43), KVM_PAGETYPE_R_OK);
	expect_calls("D-43 T+43 R43");
	T_EQ(pin(1, 44), KVM_PAGETYPE_R_BUSY);
	expect_calls("");
	T_EQ(unpin(43), KVM_PAGETYPE_R_OK);
	expect_calls("T-43 D+43");
	check_invariants();

	/*
	 * Semi-writable carries the DMA change, lazily, synced before the
	 * batch returns; semi <-> table none.
	 */
	T_EQ(op(KVM_PAGETYPE_OP_TO_SEMI, 50), KVM_PAGETYPE_R_OK);
	expect_calls("D~50 S");
	T_EQ(pin(1, 50), KVM_PAGETYPE_R_OK);
	expect_calls("T+50 R50");
	T_EQ(unpin(50), KVM_PAGETYPE_R_OK);
	expect_calls("T-50");
	T_EQ(op(KVM_PAGETYPE_OP_TO_WRITABLE, 50), KVM_PAGETYPE_R_OK);
	expect_calls("D+50");
	T_EQ(op(KVM_PAGETYPE_OP_SET_MODE, KVM_PAGETYPE_MODE_FINE),
	     KVM_PAGETYPE_R_OK);
	T_EQ(pin(1, 51), KVM_PAGETYPE_R_MODE);
	T_EQ(op(KVM_PAGETYPE_OP_TO_SEMI, 51), KVM_PAGETYPE_R_OK);
	T_EQ(pin(1, 51), KVM_PAGETYPE_R_OK);
	T_EQ(unpin(51), KVM_PAGETYPE_R_OK);
	T_EQ(op(KVM_PAGETYPE_OP_TO_WRITABLE, 51), KVM_PAGETYPE_R_OK);
	expect_calls("D~51 S T+51 R51 T-51 D+51");
	check_invariants();

	/* Reset: tables untracked, then everything reachable again. */
	T_EQ(op(KVM_PAGETYPE_OP_SET_MODE, KVM_PAGETYPE_MODE_COARSE),
	     KVM_PAGETYPE_R_OK);
	T_EQ(pin(1, 60), KVM_PAGETYPE_R_OK);
	T_EQ(op(KVM_PAGETYPE_OP_TO_SEMI, 61), KVM_PAGETYPE_R_OK);
	expect_calls("D-60 T+60 R60 D~61 S");
	pt_engine_reset(&eng);
	expect_calls("T-60 D+60 D+61");
	check_invariants();

	/* One sync per batch, and one before a pin validates anything. */
	{
		struct kvm_pagetype_op b[] = {
			{ .code = KVM_PAGETYPE_OP_TO_SEMI, .arg = 70 },
			{ .code = KVM_PAGETYPE_OP_TO_SEMI, .arg = 72 },
			{ .code = KVM_PAGETYPE_OP_TO_SEMI, .arg = 1024 },
			{ .code = KVM_PAGETYPE_OP_PIN_L1, .arg = 1024 },
			{ .code = KVM_PAGETYPE_OP_PIN_L1, .arg = 72 },
			{ .code = KVM_PAGETYPE_OP_TO_SEMI, .arg = 74 },
			{ .code = KVM_PAGETYPE_OP_TO_WRITABLE, .arg = 70 },
		};

		T_EQ(pt_engine_batch(&eng, b, 7), 7);
		T_EQ(b[2].result, KVM_PAGETYPE_R_RANGE);
		T_EQ(b[3].result, KVM_PAGETYPE_R_RANGE);
		T_EQ(b[4].result, KVM_PAGETYPE_R_OK);
		expect_calls("D~70 D~72 S T+72 R72 D~74 D+70 S");
		T_EQ(unpin(72), KVM_PAGETYPE_R_OK);
		T_EQ(op(KVM_PAGETYPE_OP_TO_WRITABLE, 72), KVM_PAGETYPE_R_OK);
		T_EQ(op(KVM_PAGETYPE_OP_TO_WRITABLE, 74), KVM_PAGETYPE_R_OK);
		expect_calls("T-72 D+72 D+74");
		check_invariants();
	}

	/* Without the hook the rules are the same. */
	env.dma = NULL;
	T_EQ(pin(1, 62), KVM_PAGETYPE_R_OK);
	T_EQ(unpin(62), KVM_PAGETYPE_R_OK);
	T_EQ(op(KVM_PAGETYPE_OP_TO_SEMI, 62), KVM_PAGETYPE_R_OK);
	T_EQ(op(KVM_PAGETYPE_OP_TO_WRITABLE, 62), KVM_PAGETYPE_R_OK);
	expect_calls("T+62 R62 T-62");
	env.dma = fake_dma;
	check_invariants();
	teardown();
}

static void test_doorbell_reset(void)
{
	setup(1024, KVM_PAGETYPE_ATTACH_KERNEL_HALF);
	T_EQ(pt_engine_set_doorbell(&eng, 1024), KVM_PAGETYPE_R_RANGE);
	T_EQ(pin(1, 20), KVM_PAGETYPE_R_OK);
	T_EQ(pt_engine_set_doorbell(&eng, 20), KVM_PAGETYPE_R_TYPE);
	T_EQ(fk.tracked[20], 1);
	T_EQ(pt_engine_set_doorbell(&eng, 30), KVM_PAGETYPE_R_OK);
	T_EQ(fk.tracked[30], 1);
	T_EQ(pt_engine_set_doorbell(&eng, 30), KVM_PAGETYPE_R_OK);
	T_EQ(fk.tracked[30], 1);
	/* The doorbell frame is never a table; a write to it rings. */
	T_EQ(pin(1, 30), KVM_PAGETYPE_R_BUSY);
	T_EQ(write64(30, 0, 1), PT_DOORBELL);
	/* Moving it untracks the old one. */
	T_EQ(pt_engine_set_doorbell(&eng, 31), KVM_PAGETYPE_R_OK);
	T_EQ(fk.tracked[30], 0);
	T_EQ(fk.tracked[31], 1);
	fk.fail_track = 1;
	T_EQ(pt_engine_set_doorbell(&eng, 32), KVM_PAGETYPE_R_IO);
	fk.fail_track = 0;
	T_EQ(fk.tracked[31], 1);
	T_EQ(eng.doorbell, 31);
	/* Its memory goes: forgotten, never untracked afterwards. */
	T_ASSERT(!pt_engine_forget_doorbell(&eng, 32, 100), "not inside");
	T_ASSERT(!pt_engine_forget_doorbell(&eng, 0, 31), "not inside");
	T_ASSERT(pt_engine_forget_doorbell(&eng, 31, 1), "inside");
	T_EQ(eng.doorbell, PT_NO_HOME);
	fk.tracked[31] = 0;		/* what the memslot's removal did */
	T_EQ(pt_engine_set_doorbell(&eng, 31), KVM_PAGETYPE_R_OK);

	/* Reset: a fresh engine but for the event counters. */
	page(21)[0] = pte(20, PT_RW);
	T_EQ(pin(2, 21), KVM_PAGETYPE_R_OK);
	T_EQ(op(KVM_PAGETYPE_OP_TO_SEMI, 40), KVM_PAGETYPE_R_OK);
	page(22)[0] = pte(512, PT_PS | PT_RW);
	T_EQ(pin(2, 22), KVM_PAGETYPE_R_OK);
	T_EQ(op(KVM_PAGETYPE_OP_SET_MODE, KVM_PAGETYPE_MODE_FINE),
	     KVM_PAGETYPE_R_OK);
	pt_engine_reset(&eng);
	for (u64 i = 0; i < 1024; i++) {
		T_EQ(query(i), 0);
		T_EQ(fk.tracked[i], 0);
	}
	T_EQ(eng.doorbell, PT_NO_HOME);
	T_EQ(write64(31, 0, 0), 0);	/* rings nothing any more */
	T_EQ(eng.mode, KVM_PAGETYPE_MODE_COARSE);
	T_EQ(eng.stats.ops[KVM_PAGETYPE_OP_PIN_L2], 2);
	check_invariants();
	/* Everything works as new: the 2M region and the frames are free. */
	T_EQ(pin(1, 600), KVM_PAGETYPE_R_OK);
	T_EQ(pin(2, 21), KVM_PAGETYPE_R_OK);
	T_EQ(query(20), word(1, VALID, 1));
	T_EQ(pin(1, 20), KVM_PAGETYPE_R_OK);
	T_EQ(pt_engine_set_doorbell(&eng, 33), KVM_PAGETYPE_R_OK);
	T_EQ(pt_engine_set_doorbell(&eng, PT_NO_HOME), KVM_PAGETYPE_R_OK);
	T_EQ(fk.tracked[33], 0);
	T_EQ(pt_engine_set_doorbell(&eng, 34), KVM_PAGETYPE_R_OK);
	/* The old doorbell frame as a table: its writes are validated. */
	T_EQ(pin(1, 31), KVM_PAGETYPE_R_OK);
	T_EQ(write64(31, 0, pte(21, PT_RW)), KVM_PAGETYPE_R_TYPE);
	page(31)[0] = 0;
	check_invariants();
	teardown();	/* asserts the doorbell was untracked too */
}

/* Two threads on one engine: one rewrites entries of a shared table, the
 * other pins and unpins tables that map the same frame writable. */
#define ROUNDS 20000

static void *writer(void *arg)
{
	for (int i = 0; i < ROUNDS; i++) {
		T_EQ(write64_atomic(20, i % 64, pte(30, PT_RW)), 0);
		T_EQ(write64_atomic(20, i % 64, 0), 0);
	}
	return arg;
}

static void *pinner(void *arg)
{
	for (int i = 0; i < ROUNDS / 4; i++) {
		struct kvm_pagetype_op o[3] = {
			{ .code = KVM_PAGETYPE_OP_PIN_L1, .arg = 21 },
			{ .code = KVM_PAGETYPE_OP_PIN_L2, .arg = 22 },
			{ .code = KVM_PAGETYPE_OP_UNPIN, .arg = 22 },
		};
		struct kvm_pagetype_op u = { .code = KVM_PAGETYPE_OP_UNPIN,
					     .arg = 21 };

		T_EQ(pt_engine_batch(&eng, o, 3), 3);
		T_EQ(o[0].result, 0);
		T_EQ(o[1].result, 0);
		T_EQ(o[2].result, 0);
		T_EQ(pt_engine_batch(&eng, &u, 1), 1);
		T_EQ(u.result, 0);
	}
	return arg;
}

static void test_threads(void)
{
	pthread_t a, b;

	setup(1024, 0);
	page(20);
	T_EQ(pin(1, 20), KVM_PAGETYPE_R_OK);
	for (int i = 0; i < 64; i++)
		page(21)[i] = pte(30, PT_RW);
	page(22)[0] = pte(21, PT_RW);
	T_EQ(pthread_create(&a, NULL, writer, NULL), 0);
	T_EQ(pthread_create(&b, NULL, pinner, NULL), 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	T_EQ(pt_count(query(30)), 0);
	T_EQ(eng.stats.writes, 2 * ROUNDS);
	T_EQ(eng.stats.ops[KVM_PAGETYPE_OP_PIN_L1], 1 + ROUNDS / 4);
	check_invariants();
	teardown();
}

/*
 * Types by reference: an entry at a frame of no type validates it, what
 * that costs in DMA rights, and what UNPIN reports.
 */
static void test_by_reference(void)
{
	struct kvm_pagetype_op o = { .code = KVM_PAGETYPE_OP_UNPIN, .arg = 61 };

	setup(1024, 0);
	T_EQ(pin(2, 50), KVM_PAGETYPE_R_OK);
	/* A semi-writable frame keeps its bit; no device reached it. */
	T_EQ(op(KVM_PAGETYPE_OP_TO_SEMI, 60), KVM_PAGETYPE_R_OK);
	fk.ncalls = 0;
	T_EQ(write64(50, 0, pte(60, PT_RW)), 0);
	expect_calls("R50 T+60 R60");
	T_EQ(query(60), word(1, VALID | KVM_PAGETYPE_SEMI, 1));
	/*
	 * A writable one is revoked before it is read, in fine mode too,
	 * where a pin of it is refused: the guest did not choose the frame.
	 */
	T_EQ(op(KVM_PAGETYPE_OP_SET_MODE, KVM_PAGETYPE_MODE_FINE),
	     KVM_PAGETYPE_R_OK);
	T_EQ(pin(1, 61), KVM_PAGETYPE_R_MODE);
	fk.ncalls = 0;
	T_EQ(write64(50, 1, pte(61, PT_RW)), 0);
	expect_calls("R50 D-61 T+61 R61");
	T_EQ(query(61), word(1, VALID, 1));
	T_EQ(eng.stats.ref_validations, 2);
	check_invariants();
	/* Pinned too, then unpinned: still an L1 under 50, and UNPIN says so. */
	T_EQ(pin(1, 61), KVM_PAGETYPE_R_OK);
	T_EQ(pt_engine_batch(&eng, &o, 1), 1);
	T_EQ(o.result, KVM_PAGETYPE_R_OK);
	T_EQ(o.out, word(1, VALID, 1));
	/* Unlinked: tracking stops, then DMA comes back; semi stays semi. */
	fk.ncalls = 0;
	T_EQ(write64(50, 1, 0), 0);
	expect_calls("R50 T-61 D+61");
	T_EQ(write64(50, 0, 0), 0);
	expect_calls("R50 T-60");
	T_EQ(query(60), KVM_PAGETYPE_SEMI);
	T_EQ(eng.stats.devalidations, 2);
	/* The last reference a pin: UNPIN's word is the writable one. */
	T_EQ(pin(1, 60), KVM_PAGETYPE_R_OK);
	o.arg = 60;
	T_EQ(pt_engine_batch(&eng, &o, 1), 1);
	T_EQ(o.out, KVM_PAGETYPE_SEMI);
	T_EQ(op(KVM_PAGETYPE_OP_TO_WRITABLE, 60), KVM_PAGETYPE_R_OK);
	T_EQ(op(KVM_PAGETYPE_OP_SET_MODE, KVM_PAGETYPE_MODE_COARSE),
	     KVM_PAGETYPE_R_OK);
	/* A failed validation leaves nothing: no track, no revoke, no type. */
	page(62)[0] = pte(62, PT_RW);
	fk.ncalls = 0;
	T_EQ(write64(50, 2, pte(62, PT_RW)), KVM_PAGETYPE_R_TYPE);
	expect_calls("R50 D-62 T+62 R62 T-62 D+62");
	T_EQ(query(62), 0);
	page(50)[2] = 0;
	/* The batch's own frame never becomes a table, not even below one. */
	{
		struct kvm_pagetype_op b = { .code = KVM_PAGETYPE_OP_PIN_L2,
					     .arg = 51 };

		page(51)[0] = pte(63, PT_RW);
		pt_engine_lock(&eng);
		T_EQ(pt_engine_batch_locked(&eng, 63, &b, 1), 1);
		pt_engine_unlock(&eng);
		T_EQ(b.result, KVM_PAGETYPE_R_BUSY);
		T_EQ(query(63), 0);
	}
	check_invariants();
	teardown();
}

/*
 * The bound on one event's validation: an L2 and its 512 L1s pass, one
 * table more is refused whole, as a write or as a pin, and a pin that
 * validated many tables uses up its batch's budget.
 */
static void test_subtree_bound(void)
{
	struct kvm_pagetype_op ops[2] = {
		{ .code = KVM_PAGETYPE_OP_PIN_L3, .arg = 11 },
		{ .code = KVM_PAGETYPE_OP_NULL },
	};
	u64 n;

	setup(4096, 0);
	for (int i = 0; i < 512; i++) {
		page(20)[i] = pte(1024 + i, PT_RW);
		page(1024 + i)[i] = pte(3000 + i % 8, PT_RW);
	}
	T_EQ(pin(3, 10), KVM_PAGETYPE_R_OK);
	T_EQ(write64(10, 0, pte(20, PT_RW)), 0);
	T_EQ(eng.stats.tables[0], 512);
	T_EQ(eng.stats.tables[1], 1);
	T_EQ(eng.stats.ref_validations, KVM_PAGETYPE_VALIDATE_MAX);
	T_EQ(pt_count(query(3000)), 64);
	check_invariants();
	T_EQ(write64(10, 0, 0), 0);
	T_EQ(eng.stats.tables[0], 0);
	T_EQ(eng.stats.devalidations, KVM_PAGETYPE_VALIDATE_MAX);
	T_EQ(pt_count(query(3000)), 0);

	/* An L3 over it: 514 tables, one too many; then 513 exactly. */
	T_EQ(pin(4, 12), KVM_PAGETYPE_R_OK);
	page(11)[0] = pte(20, PT_RW);
	page(11)[1] = pte(21, PT_RW);
	page(20)[511] = 0;
	T_EQ(write64(12, 0, pte(11, PT_RW)), KVM_PAGETYPE_R_LIMIT);
	page(12)[0] = 0;
	T_EQ(pin(3, 11), KVM_PAGETYPE_R_LIMIT);
	for (n = 0; n < 4096; n++)
		T_ASSERT(fk.tracked[n] == (n == 10 || n == 12),
			 "frame %llu tracked", (unsigned long long)n);
	check_invariants();
	page(11)[1] = 0;
	/* As an op, it uses up the batch: the next op is not run. */
	T_EQ(pt_engine_batch(&eng, ops, 2), 1);
	T_EQ(ops[0].result, KVM_PAGETYPE_R_OK);
	T_EQ(ops[1].result, KVM_PAGETYPE_R_SKIPPED);
	T_EQ(eng.stats.tables[0], 511);
	T_EQ(unpin(11), KVM_PAGETYPE_R_OK);
	T_EQ(write64(12, 0, pte(11, PT_RW)), 0);
	T_EQ(eng.stats.tables[2], 2);
	check_invariants();
	teardown();
}

/* Xen's page-table advisories, through the by-reference path. */
static void test_xsa(void)
{
	setup(1024, 0);
	T_EQ(pin(4, 100), KVM_PAGETYPE_R_OK);
	/* XSA-185/240: linear and recursive entries. */
	T_EQ(write64(100, 0, pte(100, 0)), KVM_PAGETYPE_R_TYPE);
	page(100)[0] = 0;
	page(101)[0] = pte(101, 0);	/* an L3 at itself */
	T_EQ(write64(100, 1, pte(101, 0)), KVM_PAGETYPE_R_TYPE);
	page(101)[0] = pte(102, 0);	/* a cycle through two frames */
	page(102)[0] = pte(101, 0);
	T_EQ(write64(100, 1, pte(101, 0)), KVM_PAGETYPE_R_TYPE);
	page(100)[1] = 0;
	T_EQ(query(101) | query(102), 0);
	/* An untyped L1 mapping itself writable; an L1 mapping its parent. */
	page(103)[0] = pte(103, PT_RW);
	page(104)[0] = pte(103, PT_RW);
	T_EQ(pin(2, 104), KVM_PAGETYPE_R_TYPE);
	page(105)[0] = pte(106, PT_RW);
	page(106)[0] = pte(105, PT_RW);
	T_EQ(pin(2, 105), KVM_PAGETYPE_R_TYPE);
	/* XSA-148: a writable superpage over a table, either order. */
	page(107)[0] = pte(512, PT_PS | PT_RW);
	T_EQ(pin(2, 107), KVM_PAGETYPE_R_OK);
	T_EQ(write64(107, 1, pte(600, PT_RW)), KVM_PAGETYPE_R_BUSY);
	page(107)[1] = 0;
	T_EQ(write64(107, 0, 0), 0);
	T_EQ(write64(107, 1, pte(600, PT_RW)), 0);
	T_EQ(write64(107, 0, pte(512, PT_PS | PT_RW)), KVM_PAGETYPE_R_TYPE);
	page(107)[0] = 0;
	/* A table is never mapped writable, a frame in use never typed. */
	page(108)[0] = pte(600, PT_RW);
	T_EQ(pin(1, 108), KVM_PAGETYPE_R_TYPE);
	page(108)[0] = pte(109, PT_RW);
	T_EQ(pin(1, 108), KVM_PAGETYPE_R_OK);
	T_EQ(write64(107, 2, pte(109, PT_RW)), KVM_PAGETYPE_R_BUSY);
	page(107)[2] = 0;
	/* Counts saturate: one reference past the maximum is refused. */
	eng.word[600] += KVM_PAGETYPE_COUNT_MASK - 1;
	T_EQ(write64(107, 3, pte(600, PT_RW)), KVM_PAGETYPE_R_OVERFLOW);
	eng.word[600] -= KVM_PAGETYPE_COUNT_MASK - 1;
	page(107)[3] = 0;
	check_invariants();
	teardown();
}

/* Two tables link and unlink one untyped frame while a third pins it. */
static void *linker(void *arg)
{
	u64 table = (u64)(uintptr_t)arg;

	for (int i = 0; i < ROUNDS; i++) {
		T_EQ(write64_atomic(table, 0, pte(60, PT_RW)), 0);
		T_EQ(write64_atomic(table, 0, 0), 0);
	}
	return arg;
}

static void *l1_pinner(void *arg)
{
	for (int i = 0; i < ROUNDS / 4; i++) {
		T_EQ(pin(1, 60), KVM_PAGETYPE_R_OK);
		T_EQ(unpin(60), KVM_PAGETYPE_R_OK);
	}
	return arg;
}

static void test_threads_by_reference(void)
{
	pthread_t a, b, c;

	setup(1024, 0);
	for (int i = 0; i < 8; i++)
		page(60)[i] = pte(70 + i, PT_RW);
	page(50);
	page(51);
	T_EQ(pin(2, 50), KVM_PAGETYPE_R_OK);
	T_EQ(pin(2, 51), KVM_PAGETYPE_R_OK);
	T_EQ(pthread_create(&a, NULL, linker, (void *)50), 0);
	T_EQ(pthread_create(&b, NULL, linker, (void *)51), 0);
	T_EQ(pthread_create(&c, NULL, l1_pinner, NULL), 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	pthread_join(c, NULL);
	T_EQ(query(60), 0);
	T_EQ(fk.tracked[60], 0);
	T_EQ(pt_count(query(70)), 0);
	T_ASSERT(eng.stats.ref_validations + eng.stats.ops[1] >=
		 eng.stats.devalidations, "more devalidated than validated");
	check_invariants();
	teardown();
}

/*
 * Leaves beyond guest RAM are the guest's own I/O space and take nothing;
 * memory added later (a memslot above) is covered when first named, and
 * the leaves into it then hold their references.
 */
static void test_io_and_growth(void)
{
	setup(1024, 0);
	T_EQ(pin(1, 20), KVM_PAGETYPE_R_OK);
	T_EQ(write64(20, 0, pte(1500, PT_RW)), 0);
	T_EQ(write64(20, 1, pte(1500, PT_RW)), 0);
	page(21)[0] = pte(1536, PT_PS | PT_RW);	/* 2M region 3, all beyond */
	T_EQ(pin(2, 21), KVM_PAGETYPE_R_OK);
	/* A non-leaf entry must name RAM: it is read. */
	T_EQ(write64(21, 1, pte(1100, PT_RW)), KVM_PAGETYPE_R_RANGE);
	page(21)[1] = 0;
	T_EQ(pin(1, 1500), KVM_PAGETYPE_R_RANGE);
	T_EQ(eng.stats.grown, 0);
	check_invariants();

	/* A memslot appears above: the leaves into it take their references. */
	fk.frames = 2048;
	T_EQ(pin(1, 1500), KVM_PAGETYPE_R_BUSY);
	T_EQ(eng.nr_frames, 2048);
	T_EQ(eng.stats.frames, 2048);
	T_EQ(eng.stats.grown, 1);
	T_EQ(query(1500), word(W, 0, 2));
	T_EQ(pin(1, 1600), KVM_PAGETYPE_R_BUSY);	/* under the 2M leaf */
	check_invariants();
	/* Removing them drops what they hold now. */
	T_EQ(write64(20, 0, 0), 0);
	T_EQ(write64(20, 1, 0), 0);
	T_EQ(pin(1, 1500), KVM_PAGETYPE_R_OK);
	T_EQ(write64(21, 0, 0), 0);
	T_EQ(pin(1, 1600), KVM_PAGETYPE_R_OK);
	/* And the new frames link like any other. */
	T_EQ(write64(21, 2, pte(1700, PT_RW)), 0);
	T_EQ(query(1700), word(1, VALID, 1));
	check_invariants();
	/* Nothing more beyond: no growth, frames there still refused. */
	T_EQ(pin(1, 2048), KVM_PAGETYPE_R_RANGE);
	T_EQ(eng.stats.grown, 1);
	teardown();
}

/*
 * Two vCPUs store to one entry, A 0 and then B a link, and B's notifier
 * runs first.  The engine validates memory, not the stores' bytes: it
 * ends with the link counted, in either order, so the L1 it names is
 * never unpinned while it is live.
 */
static void test_notify_order(void)
{
	setup(1024, 0);
	T_EQ(pin(2, 50), KVM_PAGETYPE_R_OK);
	T_EQ(pin(1, 60), KVM_PAGETYPE_R_OK);
	T_EQ(write64(50, 0, pte(60, PT_RW)), 0);
	page(50)[0] = 0;			/* A's store */
	page(50)[0] = pte(60, PT_RW);		/* B's store */
	T_EQ(pt_engine_write(&eng, 50 * PT_PAGE_SIZE), 0);	/* B's */
	T_EQ(pt_engine_write(&eng, 50 * PT_PAGE_SIZE), 0);	/* A's */
	T_EQ(eng.shadow[50][0], pte(60, PT_RW));
	T_EQ(pt_count(query(60)), 2);
	T_EQ(unpin(60), KVM_PAGETYPE_R_OK);
	T_EQ(query(60), word(1, VALID, 1));
	check_invariants();
	/* A store no notifier saw is caught at the next write to the table. */
	page(50)[5] = pte(50, PT_RW);
	T_EQ(write64(50, 6, 0), KVM_PAGETYPE_R_TYPE);
	page(50)[5] = 0;
	check_invariants();
	teardown();
}

/*
 * The bound on a VM's tables (a shadow page each): 10% of 200 frames is
 * 20 tables.  The 21st pin gets R_FULL and takes nothing; a write linking
 * a frame that would be the 21st is refused like a broken rule, leaving
 * nothing; an unpin makes room; the peeked counters match the locked ones
 * when nothing runs.
 */
static void test_table_bound(void)
{
	struct kvm_pagetype_stats a, b;
	u64 gfn;

	setup(200, 0);
	pt_engine_set_table_bound(&eng, 10);
	for (gfn = 100; gfn < 119; gfn++)
		T_EQ(pin(1, gfn), KVM_PAGETYPE_R_OK);
	T_EQ(pin(2, 119), KVM_PAGETYPE_R_OK);
	T_EQ(pin(1, 120), KVM_PAGETYPE_R_FULL);
	T_EQ(query(120), 0);
	T_EQ(fk.tracked[120], 0);
	T_EQ(write64(119, 0, pte(121, PT_RW)), KVM_PAGETYPE_R_FULL);
	T_EQ(query(121), 0);
	page(119)[0] = 0;
	/* an entry to a table already validated needs no new shadow */
	T_EQ(write64(119, 1, pte(100, 0)), 0);
	T_EQ(query(100), word(1, PINNED, 2));
	T_EQ(unpin(101), KVM_PAGETYPE_R_OK);
	T_EQ(pin(1, 120), KVM_PAGETYPE_R_OK);
	pt_engine_stats(&eng, &a);
	pt_engine_stats_peek(&eng, &b);
	T_ASSERT(!memcmp(&a, &b, sizeof(a)), "peeked counters differ");
	check_invariants();
	teardown();
}

int main(void)
{
	test_pin_unpin();
	test_l1_rules();
	test_hierarchy();
	test_superpages();
	test_kernel_half();
	test_overflow();
	test_modes();
	test_batch();
	test_writes();
	test_env_failures();
	test_dma();
	test_doorbell_reset();
	test_threads();
	test_by_reference();
	test_subtree_bound();
	test_xsa();
	test_threads_by_reference();
	test_io_and_growth();
	test_notify_order();
	test_table_bound();
	printf("test-pagetype: all cases passed\n");
	return 0;
}
