/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The page-type rule engine: Xen's PV page types (xen/arch/x86/mm.c) for
 * one guest, with PiBooster's semi-writable type.  It knows nothing of
 * KVM: guest memory is read and write tracking is switched through
 * struct pt_env, so the same file builds into kvm_pagetype.ko and into the
 * user-space unit tests (tests/unit/test-pagetype.c).  docs/pagetype.md
 * states the rules this file implements.
 */
#ifndef KVM_PAGETYPE_PT_RULES_H
#define KVM_PAGETYPE_PT_RULES_H

#ifdef __KERNEL__
#include <linux/bits.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/types.h>

#define pt_mutex		mutex
#define pt_mutex_init(m)	mutex_init(m)
#define pt_mutex_destroy(m)	mutex_destroy(m)
#define pt_mutex_lock(m)	mutex_lock(m)
#define pt_mutex_unlock(m)	mutex_unlock(m)
#define pt_calloc(n, size)	kvcalloc(n, size, GFP_KERNEL_ACCOUNT)
#define pt_cfree(p)		kvfree(p)
#define pt_page_alloc()		kmalloc(PT_PAGE_SIZE, GFP_KERNEL_ACCOUNT)
#define pt_page_free(p)		kfree(p)
#define pt_cond_resched()	cond_resched()
/* a counter read without the lock that its writers hold */
#define pt_read_racy(x)		data_race(READ_ONCE(x))
#else
#include "pt_user.h"		/* tests/unit: the same in user space */
#endif

#include <linux/kvm_pagetype.h>

#define PT_ENTRIES		512
#define PT_PAGE_SIZE		4096

/* x86-64 page-table entry bits the rules look at. */
#define PT_P			BIT_ULL(0)
#define PT_RW			BIT_ULL(1)
#define PT_PS			BIT_ULL(7)
#define PT_ADDR_MASK		GENMASK_ULL(51, 12)
/* What an entry grants: a change outside these bits changes no reference. */
#define PT_GRANT_MASK		(PT_P | PT_RW | PT_PS | PT_ADDR_MASK)

/* The environment: how the engine reaches guest memory and KVM. */
struct pt_env {
	/* Read the frame's 512 entries; 0 or -errno. */
	int (*read_table)(void *priv, u64 gfn, u64 *entries);
	/* Start (on) or stop write tracking the frame; 0 or -errno. */
	int (*track)(void *priv, u64 gfn, bool on);
	void *priv;
	/*
	 * Optional: the frame's DMA rights change (pt_engine_dma_ok_locked), how
	 * is PT_DMA_*.  PT_DMA_REVOKE returns only once no device can reach
	 * the frame (unmapped, IOTLB synced); PT_DMA_REVOKE_LAZY unmaps and
	 * leaves the IOTLB sync to the next dma_sync.  A revoke returns 0,
	 * or -errno and the op fails changing nothing.  The engine revokes
	 * before the type change takes effect and grants after it; a failed
	 * grant is ignored (the frame stays unreachable by DMA: the safe
	 * side).
	 */
	int (*dma)(void *priv, u64 gfn, int how);
	/*
	 * Sync the IOTLB for every lazy revoke since the last sync.  The
	 * engine calls it before a batch returns and before any pin
	 * validates a frame, so no op that relies on a revoke completes
	 * before its sync.
	 */
	void (*dma_sync)(void *priv);
	/*
	 * Optional: the guest's frame count now (the end of its highest
	 * memslot, within the caller's bound).  The engine asks when an entry
	 * or op names a frame beyond the count it covers, and grows to it.
	 */
	u64 (*frames)(void *priv);
};

#define PT_DMA_GRANT		0
#define PT_DMA_REVOKE		1
#define PT_DMA_REVOKE_LAZY	2

struct pt_engine {
	struct pt_mutex lock;	/* everything below */
	const struct pt_env *env;
	u64 nr_frames;
	u32 flags;		/* KVM_PAGETYPE_ATTACH_* */
	u32 mode;		/* KVM_PAGETYPE_MODE_* */
	u64 doorbell;		/* the fast path's tracked frame, or PT_NO_HOME */
	u64 home;		/* the running batch's frame, or PT_NO_HOME */
	u32 validate_left;	/* tables the current op or write may validate */
	u32 table_pct;		/* tables at most, % of nr_frames; 0: no bound */
	bool dma_pending;	/* lazy revokes not synced yet */
	u32 *word;		/* the type word, per frame */
	u64 **shadow;		/* per table: its validated entries */
	u64 *scratch;		/* a table as memory holds it (writes) */
	/* Per 2 MiB and 1 GiB region: tables inside, writable PS leaves over. */
	u32 *tables_2m, *writable_2m;
	u32 *tables_1g, *writable_1g;
	struct kvm_pagetype_stats stats;
};

/* 0 or -ENOMEM; on failure nothing is left to destroy. */
int pt_engine_init(struct pt_engine *e, u64 nr_frames, u32 flags,
		   const struct pt_env *env);
/*
 * Stops tracking every pinned table and frees everything; grants no DMA
 * (the caller has released its devices).
 */
void pt_engine_destroy(struct pt_engine *e);

/*
 * Back to the state of a new engine (every frame writable, no table, no
 * doorbell, coarse mode), DMA granted again where it was revoked; the
 * counters of events stay.
 */
void pt_engine_reset(struct pt_engine *e);

/*
 * Make gfn the doorbell frame (tracked, never pinned), or none with
 * PT_NO_HOME.  Returns an R_* code: RANGE, TYPE for a table, IO.
 */
u16 pt_engine_set_doorbell(struct pt_engine *e, u64 gfn);

/*
 * The memory of the n frames from gfn went away (a memslot deleted or
 * moved), and their write tracking with it: if the doorbell frame is
 * among them, forget it without untracking it.  Returns whether it was.
 */
bool pt_engine_forget_doorbell(struct pt_engine *e, u64 gfn, u64 n);

/*
 * Run a batch of count ops in order, under the engine's lock, writing each
 * op's result (and out).  At most KVM_PAGETYPE_WORK_BUDGET units of work:
 * the ops past it get R_SKIPPED.  Lazy DMA revokes are synced before it
 * returns.  Returns the number of ops run.  The caller bounds count
 * (KVM_PAGETYPE_MAX_BATCH).
 */
u32 pt_engine_batch(struct pt_engine *e, struct kvm_pagetype_op *ops,
		    u32 count);

/*
 * The same under the caller's pt_engine_lock(), for a batch read from
 * guest frame home: home never becomes a table (R_BUSY), so the results
 * can be written back there before the lock is dropped.
 */
#define PT_NO_HOME	(~0ULL)
void pt_engine_lock(struct pt_engine *e);
void pt_engine_unlock(struct pt_engine *e);
u32 pt_engine_batch_locked(struct pt_engine *e, u64 home,
			   struct kvm_pagetype_op *ops, u32 count);

/*
 * A guest write at gpa has landed.  If its frame is a table, every entry
 * whose grant differs between memory now and the table's shadow is
 * validated like an mmu_update.  Returns 0, or the R_* code of the rule
 * broken (R_IO: the table could not be read; the caller kills the VM), or
 * PT_DOORBELL: the frame is the doorbell's (the caller rings it).
 */
#define PT_DOORBELL	0xffff
u16 pt_engine_write(struct pt_engine *e, u64 gpa);

/* Whether the frame is a table (validated, write tracked); under the lock. */
bool pt_engine_is_table_locked(struct pt_engine *e, u64 gfn);

/* Whether any of the n frames from gfn is a table. */
bool pt_engine_has_table(struct pt_engine *e, u64 gfn, u64 n);

/*
 * Whether a device may DMA to the frame: only a writable frame that is not
 * semi-writable.  Under the lock, or before anything can run ops.
 */
bool pt_engine_dma_ok_locked(struct pt_engine *e, u64 gfn);

/* A copy of the counters, taken under the lock. */
void pt_engine_stats(struct pt_engine *e, struct kvm_pagetype_stats *out);

/*
 * The same without the lock, for a reader that must not wait on this
 * engine (the totals over every VM): each counter is read once, so the
 * copy may mix moments.
 */
void pt_engine_stats_peek(struct pt_engine *e, struct kvm_pagetype_stats *out);

/*
 * Bound the tables (each holds a shadow page) to pct percent of the frames
 * covered, as they grow; 0: no bound.  Past it a pin gets R_FULL and a
 * write that would validate a table is refused like a broken rule.  Set
 * before any op runs.
 */
void pt_engine_set_table_bound(struct pt_engine *e, u32 pct);

/* The fields of a type word. */
static inline u32 pt_type(u32 w)
{
	return (w & KVM_PAGETYPE_TYPE_MASK) >> KVM_PAGETYPE_TYPE_SHIFT;
}

static inline u32 pt_count(u32 w)
{
	return w & KVM_PAGETYPE_COUNT_MASK;
}

#endif /* KVM_PAGETYPE_PT_RULES_H */
