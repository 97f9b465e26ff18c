/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pibooster's private header: the types its files share and the calls
 * they make across.  One file per job:
 *
 *   core.c	load and unload (drain), the backend chosen once, the batch
 *		call that runs ops at the backend and counts them
 *   host.c	backend: the pagetype PCI device (registers, doorbell page)
 *   local.c	backend: kvm_pagetype's rule engine (pt_rules.c) in the guest
 *   cache.c	the per-level caches: push, pop, fill, limits, shrinker
 *   table.c	the kernel's tables: alloc and pin, abandon, the walk that
 *		unpins them at unpatch, the reaper that takes freed tables
 *		back (pending, sweep)
 *   root.c	roots: pinned before their first L3 link, unpinned when
 *		their user half empties
 *   hooks.c	the livepatch: the stock page-table functions with the cache
 *   sysfs.c	/sys/kernel/pibooster
 *   debugfs.c	/sys/kernel/debug/pibooster
 */
#ifndef PIBOOSTER_H
#define PIBOOSTER_H

#include <linux/atomic.h>
#include <linux/list_lru.h>
#include <linux/mm_types.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/srcu.h>
#include <linux/types.h>
#include <linux/kvm_pagetype.h>

/*
 * The levels the hooks cover: L1 (pte), L2 (pmd), L3 (pud), and L4: the
 * p4d under 5-level paging, the root (pgd) under 4-level paging.  A root
 * is pinned lazily and never cached (pib_root_pin()); under 5-level
 * paging it is an L5 table, which the op set does not have.
 */
#define PIB_LEVELS		4

/* Per-frame state, one byte each (pib_state). */
#define PIB_S_LEVEL		0x07	/* 1..4 while a table or cached */
#define PIB_S_SEMI		0x08	/* semi-writable at the backend */
#define PIB_S_TABLE		0x10	/* pinned by us, the kernel's table */
#define PIB_S_PENDING		0x20	/* freed by a hook, awaiting the count */
#define PIB_S_CACHED		0x40	/* in a cache list */
#define PIB_S_ROOT		0x80	/* a root (pgd), with PIB_S_TABLE | 4 */

/*
 * A level's cache: a list per NUMA node and memory cgroup (cache.c says
 * which frame goes on which).
 */
struct pib_level {
	spinlock_t lock;	/* a push against the cache going off */
	struct list_lru lru;
	atomic_long_t count;	/* frames cached, on every list */
	atomic_long_t tables;	/* live tables we pinned at this level */
	unsigned long limit;	/* by number; ULONG_MAX: none */
	unsigned int ratio;	/* or percent of tables; 0: by number */
};

/*
 * Walks of pib_state[] (the sweep, the drain, the unpatch walk, debugfs
 * frames) call cond_resched() every PIB_WALK_STRIDE
 * frames: one page of states, 16 MiB of guest memory.  Even when every
 * frame in it is a table whose page count is read (a cache miss each),
 * that is well under a millisecond between two reschedule points, and it
 * costs one test per 4 KiB scanned; a 512 GiB guest has 2^27 frames,
 * tens of milliseconds to walk.
 */
#define PIB_WALK_STRIDE		4096

static inline void pib_walk_resched(unsigned long pfn)
{
	if (!(pfn % PIB_WALK_STRIDE))
		cond_resched();
}

/* The module's counters, one file each in stats/. */
enum pib_stat {
	PIB_HITS,
	PIB_MISSES,
	PIB_PINS,
	PIB_UNPINS,
	PIB_TO_SEMI,
	PIB_TO_WRITABLE,
	PIB_BATCHES,
	PIB_ERRORS,
	PIB_MODE_RETRIES,
	PIB_FREED_BY_HOOK,
	PIB_FREED_INLINE,
	PIB_RELEASED,
	PIB_SHRINKER_FREED,
	PIB_STOCK,
	PIB_STALE,
	PIB_ROOTS,
	PIB_ROOTS_FREED,
	PIB_BY_REF,
	PIB_LIMITED,
	PIB_EARLY,
	PIB_HELD,
	PIB_POISONED,
	PIB_UNLISTED,
	PIB_REFUSED,
	PIB_NR_STATS
};

/*
 * Time per level (debugfs pibooster/latency): an allocation from the
 * hook's entry to its return; a free as the frame's share of the batch
 * that unpinned it and cached it or gave it back (the kernel's own part,
 * queueing it in the hook, is a few stores).
 */
struct pib_lat {
	atomic64_t allocs, alloc_ns, frees, free_ns;
};

/*
 * Buffers for one batch of ops on frames: the ops and the frames they
 * name.  The shrinker cannot allocate (it runs inside reclaim) and uses
 * its own.
 */
struct pib_batch {
	struct kvm_pagetype_op ops[KVM_PAGETYPE_MAX_BATCH];
	struct page *pages[KVM_PAGETYPE_MAX_BATCH];
	/*
	 * pib_state[] of each frame as pib_release_pages() found it before
	 * the batch unpinned it: what it does with the frame afterwards
	 * (cache it, convert it, time it) depends on it.
	 */
	u8 states[KVM_PAGETYPE_MAX_BATCH];
};

/*
 * Where the op batches go, chosen once at load (core.c): the host through
 * the pagetype device (host.c), else the rule engine run here (local.c).
 * Batches are serialized by the backend's lock.
 */
struct pib_backend_ops {
	void (*lock)(void);
	bool (*trylock)(void);
	void (*unlock)(void);
	/*
	 * Under the lock, run up to n ops (a backend may take fewer at a
	 * time); each op's result is in its result field.  Returns how many
	 * ran, 0 if the backend ran none.
	 */
	u32 (*batch)(struct kvm_pagetype_op *ops, u32 n);
	/* sysfs backend/name: the backend and how it carries batches. */
	ssize_t (*name)(char *buf);
	/*
	 * The backend's side of the module's counts (the rule engine's), for
	 * sysfs backend/; NULL: the backend's counts are not ours to give.
	 */
	void (*stats)(struct kvm_pagetype_stats *st);
	/* The load message's first part: where the page types are kept. */
	const char *kept;
	/*
	 * The backend traps the guest's stores to its tables, so a table
	 * linked under a validated one is validated then, by reference
	 * (pin=roots needs it).
	 */
	bool validates_links;
	void (*destroy)(void);
};

/* core.c */
extern const struct pib_backend_ops *pib_backend;
extern u8 *pib_state;
extern unsigned long pib_nr_frames;
extern struct mm_struct *pib_init_mm;
extern bool pib_roots_only;
extern atomic_long_t pib_stats[PIB_NR_STATS];
void pib_op(struct kvm_pagetype_op *op, u16 code, u64 arg);
bool pib_unpin_freed(const struct kvm_pagetype_op *op);
void pib_run_locked(struct kvm_pagetype_op *ops, u32 count);
void pib_run(struct kvm_pagetype_op *ops, u32 count);
void __pib_run(struct kvm_pagetype_op *ops, u32 count);
void pib_count_ops(const struct kvm_pagetype_op *ops, u32 count);

/* host.c, local.c */
int pib_host_init(void);
void pib_host_exit(void);
int pib_local_init(void);

/* cache.c */
extern struct pib_level pib_levels[PIB_LEVELS];
extern bool pib_cache_on;
bool pib_push(int level, struct page *page);
struct page *pib_pop(int level);
void pib_free_frame(struct page *page);
unsigned long pib_cached_total(void);
unsigned long pib_cached_here(int level);
int pib_set_cache(bool on);
void pib_cache_shrink(unsigned long val, bool percent);
void pib_cache_set_threshold(unsigned long val, bool percent);
int pib_cache_init(void);
void pib_cache_exit(void);

/* table.c */
extern struct pib_lat pib_lat[PIB_LEVELS];
extern struct srcu_struct pib_early_srcu;
bool pib_holds_ref(u8 s);
bool pib_claim(unsigned long pfn, u8 s);
u16 pib_pin(unsigned long pfn, int level, u8 *semi);
void pib_forget_stale(struct page *page);
void pib_release_pages(struct pib_batch *b, u32 n, bool borrowed);
struct page *__pib_table_alloc(int level, gfp_t gfp);
struct page *pib_table_alloc(struct mm_struct *mm, int level, gfp_t gfp);
void pib_test_refuse_pins(pid_t tgid, int n);
bool pib_pinned(struct page *page);
void __pib_table_abandon(struct page *page, int level, struct pib_batch *b);
void pib_table_abandon(struct page *page, int level);
void pib_table_freeing(struct page *page);
void pib_tables_patched(void);
void pib_tables_unpatching(void);
void pib_reaper_start(void);
void pib_reaper_stop(void);
bool pib_release_pending(void);

/* root.c */
extern bool pib_roots;
void pib_root_pin(struct mm_struct *mm);
void pib_root_emptied(struct mm_struct *mm);
void pib_root_unpin(struct pib_batch *b, u32 n);
void pib_roots_lock(void);
void pib_roots_unlock(void);

/* hooks.c */
int pib_hooks_enable(void);

/* sysfs.c, debugfs.c */
int pib_sysfs_init(void);
void pib_sysfs_exit(void);
void pib_debugfs_init(void);
void pib_debugfs_exit(void);

#endif
