// SPDX-License-Identifier: GPL-2.0
/*
 * pibooster's side of the kernel's page tables: a table handed out
 * pinned (from the cache or the page allocator), every live one unpinned
 * when the patch goes, a table abandoned before it was linked, and the
 * reaper that takes freed tables back once the kernel lets go of them
 * (the pending list, the sweep), unpinning them into the cache or to the
 * page allocator.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/srcu.h>
#include <linux/workqueue.h>
#include <asm/pgalloc.h>

#include "pibooster.h"

/* Reaper cadence: pending pages every 2 jiffies, a full sweep each second. */
#define PIB_REAP_DELAY		2
#define PIB_SWEEP_DELAY		HZ

struct pib_lat pib_lat[PIB_LEVELS];

static DEFINE_SPINLOCK(pib_pending_lock);
static LIST_HEAD(pib_pending);		/* freed through a hook: page->lru */
static unsigned long pib_next_sweep;
static bool pib_stopping;
static void pib_reap(struct work_struct *work);
static DECLARE_DELAYED_WORK(pib_reaper, pib_reap);

/* ---- tables: handed out pinned, taken back once the kernel lets go ---- */

/*
 * Whether the module holds a reference on a level's tables for as long
 * as they are tables.  L1 tables are also freed by inline code the hooks
 * never see (pte_free() after a lost race in pmd_install(), THP's
 * deposited tables, khugepaged): the reference keeps such a page from the
 * page allocator until the sweep finds the count at ours.  No inline
 * path frees an L2..L4 table of a user mm, so their hooks take the
 * reference when the kernel frees them.  6.1.192 decides hugetlb PMD
 * sharing by the table's pt_share_count, not by page_count(), but Kbuild
 * builds this module for every 6.1 sublevel and earlier ones decided it
 * by page_count() (huge_pmd_unshare()): a reference held on a live L2
 * table there would make every PMD table look shared.
 */
static bool pib_lifetime_ref(int level)
{
	return level == 1;
}

/*
 * The same for a frame in state @s: an L1 table, or a table claimed for
 * its unpin (PIB_S_PENDING: the hook, the sweep or pib_unpin_live() took
 * the reference, or an unpin failed and the frame is kept).  A root holds
 * none: it is unpinned before the kernel can free it (pib_root_emptied()).
 */
bool pib_holds_ref(u8 s)
{
	return (s & PIB_S_PENDING) || pib_lifetime_ref(s & PIB_S_LEVEL);
}

/*
 * Claim frame pfn, a table of ours in state @s, for its unpin: the hooks,
 * the sweep and pib_unpin_live() race for it, and one of them wins.
 */
bool pib_claim(unsigned long pfn, u8 s)
{
	return (s & (PIB_S_TABLE | PIB_S_PENDING)) == PIB_S_TABLE &&
	       cmpxchg(&pib_state[pfn], s, s | PIB_S_PENDING) == s;
}

/*
 * A frame fresh from the page allocator that we still have pinned: an L2
 * to L4 table the stock functions freed while a livepatch transition had
 * some tasks on them and some on the hooks (only L1 tables carry our
 * reference, which keeps them from the allocator).  Unpin it now that it
 * is ours; docs/pibooster.md, "Livepatch transitions".
 */
void pib_forget_stale(struct page *page)
{
	unsigned long pfn = page_to_pfn(page);
	struct kvm_pagetype_op ops[2];
	u8 s = READ_ONCE(pib_state[pfn]);
	u32 n = 0;

	if (!(s & PIB_S_TABLE))
		return;
	pib_op(&ops[n++], KVM_PAGETYPE_OP_UNPIN, pfn);
	if (s & PIB_S_SEMI)
		pib_op(&ops[n++], KVM_PAGETYPE_OP_TO_WRITABLE, pfn);
	pib_run(ops, n);
	if (!ops[0].result)
		atomic_long_dec(&pib_levels[(s & PIB_S_LEVEL) - 1].tables);
	atomic_long_inc(&pib_stats[PIB_STALE]);
	WRITE_ONCE(pib_state[pfn], 0);
	/* The allocator has it: we can only say so (docs/pibooster.md). */
	if (!ops[0].result && !pib_unpin_freed(&ops[0]))
		pr_warn_ratelimited("frame %#lx freed while still a table\n",
				    pfn);
}

/*
 * Unpin the batch's n table frames, then cache them or give them to the
 * page allocator: one batch for the unpins, one for the conversions of
 * the frames the cache does not keep.  A frame the backend refuses to
 * unpin, or that stays a table after it (another table's entry still
 * points at it: stats/held), stays ours for good, never reused.  With
 * borrowed, the pages are not ours to cache or put (tables the kernel may
 * be freeing right now): only the frames are converted, and forgotten.
 * b->pages[] is left as it was, for the caller.
 */
void pib_release_pages(struct pib_batch *b, u32 n, bool borrowed)
{
	struct page *page;
	u32 i, m = 0;

	for (i = 0; i < n; i++) {
		b->states[i] = READ_ONCE(pib_state[page_to_pfn(b->pages[i])]);
		pib_op(&b->ops[i], KVM_PAGETYPE_OP_UNPIN,
		       page_to_pfn(b->pages[i]));
	}
	pib_run(b->ops, n);
	for (i = 0; i < n; i++) {
		u8 s = b->states[i];
		int level = s & PIB_S_LEVEL;

		page = b->pages[i];
		if (b->ops[i].result) {
			/*
			 * Still a table: kept, with the page reference that
			 * came with it, which the drain drops if its unpin
			 * succeeds then.
			 */
			if (!borrowed)
				WRITE_ONCE(pib_state[page_to_pfn(page)],
					   s | PIB_S_PENDING);
			continue;
		}
		atomic_long_dec(&pib_levels[level - 1].tables);
		WRITE_ONCE(pib_state[page_to_pfn(page)],
			   s & ~(PIB_S_TABLE | PIB_S_PENDING | PIB_S_ROOT));
		if (!pib_unpin_freed(&b->ops[i])) {
			/* Still linked below another table: ours for good. */
			atomic_long_inc(&pib_stats[PIB_HELD]);
			continue;
		}
		if (!(s & PIB_S_SEMI)) {
			if (!borrowed)
				pib_free_frame(page);
			else
				WRITE_ONCE(pib_state[page_to_pfn(page)], 0);
			continue;
		}
		/* A root is not cached: only a p4d would take it. */
		if (!borrowed && !(s & PIB_S_ROOT) && pib_push(level, page))
			continue;
		pib_op(&b->ops[m++], KVM_PAGETYPE_OP_TO_WRITABLE,
		       page_to_pfn(page));
	}
	if (!m)
		return;
	pib_run(b->ops, m);
	for (i = 0; i < m; i++) {
		page = pfn_to_page(b->ops[i].arg);
		if (b->ops[i].result)
			continue;	/* semi-writable: never reused */
		if (!borrowed)
			pib_free_frame(page);
		else
			WRITE_ONCE(pib_state[page_to_pfn(page)], 0);
	}
}

/*
 * The kernel's tables, freed in a batch: each frame's share of the
 * batch's time goes to its level (debugfs pibooster/latency).
 */
static void pib_release_timed(struct pib_batch *b, u32 n)
{
	u64 t0 = ktime_get_ns(), share;
	u32 i;

	pib_release_pages(b, n, false);
	share = (ktime_get_ns() - t0) / n;
	for (i = 0; i < n; i++) {
		int level = b->states[i] & PIB_S_LEVEL;

		if (!level || (b->states[i] & PIB_S_ROOT))
			continue;	/* not allocated by us: not timed */
		atomic64_inc(&pib_lat[level - 1].frees);
		atomic64_add(share, &pib_lat[level - 1].free_ns);
	}
}

/*
 * The same for a list of pages the kernel has let go of, linked through
 * page->lru (which no one else uses once a table is freed).
 */
static void pib_release_tables(struct list_head *list)
{
	struct pib_batch *b;
	struct page *page, *next;
	u32 n = 0;

	if (list_empty(list))
		return;
	b = kmalloc(sizeof(*b), GFP_KERNEL | __GFP_NOFAIL);
	list_for_each_entry_safe(page, next, list, lru) {
		list_del(&page->lru);
		page->lru.next = NULL;
		page->lru.prev = NULL;
		b->pages[n++] = page;
		if (n == KVM_PAGETYPE_MAX_BATCH) {
			pib_release_timed(b, n);
			n = 0;
		}
	}
	if (n)
		pib_release_timed(b, n);
	kfree(b);
}

/*
 * debugfs pibooster/test_refuse_pins, for tests only: the next pins of
 * tables of one process are refused as a host out of memory refuses
 * them (R_IO), without reaching the backend.
 */
static pid_t pib_refuse_tgid;
static atomic_t pib_refuse_left = ATOMIC_INIT(0);

void pib_test_refuse_pins(pid_t tgid, int n)
{
	atomic_set(&pib_refuse_left, 0);
	WRITE_ONCE(pib_refuse_tgid, tgid);
	atomic_set(&pib_refuse_left, n);
}

static bool pib_test_refused(void)
{
	return unlikely(atomic_read(&pib_refuse_left)) &&
	       READ_ONCE(pib_refuse_tgid) == task_tgid_nr(current) &&
	       atomic_dec_if_positive(&pib_refuse_left) >= 0;
}

/*
 * Pin frame pfn at a level; returns the pin's result.  In fine-grained
 * mode a writable frame is made semi-writable in the same batch (*semi
 * says which it is, before and after); a pin that raced a switch to
 * fine-grained mode is retried that way.  A refused pin leaves the frame
 * writable if the backend lets it (*semi 0).
 */
u16 pib_pin(unsigned long pfn, int level, u8 *semi)
{
	struct kvm_pagetype_op ops[2];
	u32 n = 0, pin;
	u16 r;

	if (!*semi && READ_ONCE(pib_cache_on)) {
		pib_op(&ops[n++], KVM_PAGETYPE_OP_TO_SEMI, pfn);
		*semi = PIB_S_SEMI;
	}
	pin = n;
	pib_op(&ops[n++], KVM_PAGETYPE_OP_PIN_L1 + level - 1, pfn);
	if (pib_test_refused()) {
		/* Nothing ran, so nothing is counted but stats/refused. */
		ops[0].result = KVM_PAGETYPE_R_SKIPPED;
		ops[pin].result = KVM_PAGETYPE_R_IO;
	} else {
		/* counted below: a pin refused for the mode is retried */
		__pib_run(ops, n);
		if (ops[pin].result == KVM_PAGETYPE_R_MODE && !*semi) {
			/* The cache went on since we looked: fine-grained. */
			atomic_long_inc(&pib_stats[PIB_MODE_RETRIES]);
			pib_op(&ops[0], KVM_PAGETYPE_OP_TO_SEMI, pfn);
			pib_op(&ops[1], KVM_PAGETYPE_OP_PIN_L1 + level - 1,
			       pfn);
			pib_run(ops, 2);
			*semi = PIB_S_SEMI;
			pin = 1;
		} else {
			pib_count_ops(ops, n);
		}
	}
	r = ops[pin].result;
	if (!r)
		return r;
	if (pin && ops[0].result) {
		*semi = 0;	/* never made semi-writable */
	} else if (*semi) {
		pib_op(&ops[0], KVM_PAGETYPE_OP_TO_WRITABLE, pfn);
		pib_run(ops, 1);
		if (!ops[0].result)
			*semi = 0;
	}
	return r;
}

/*
 * A table at a level: from the cache when it is on and has one,
 * else from the page allocator (PiBooster's miss: the coarse path for
 * this frame); pinned before it is returned.  A frame beyond the frames
 * the module covers, or any frame once the backend runs no op (the device
 * gone, the kernel going down), is handed out as the stock kernel would:
 * a pinned table it is linked under is validated by reference, or the
 * host has forgotten them all.  A table the backend refuses to pin is not
 * handed out: the same frame linked under a pinned table would be refused
 * too, and the guest killed.  The allocation fails instead, as when
 * memory runs out (a fault is retried, a fork fails with ENOMEM);
 * stats/refused counts them.
 */
struct page *__pib_table_alloc(int level, gfp_t gfp)
{
	struct page *page = NULL;
	unsigned long pfn;
	u8 semi = 0;
	u16 r;

	if (READ_ONCE(pib_cache_on)) {
		page = pib_pop(level);
		if (page) {
			clear_page(page_address(page));
			semi = PIB_S_SEMI;
			atomic_long_inc(&pib_stats[PIB_HITS]);
		} else {
			atomic_long_inc(&pib_stats[PIB_MISSES]);
		}
	}
	if (!page) {
		page = alloc_page(gfp);
		if (!page)
			return NULL;
		if (page_to_pfn(page) >= pib_nr_frames) {
			atomic_long_inc(&pib_stats[PIB_STOCK]);
			return page;
		}
		pib_forget_stale(page);
	}
	pfn = page_to_pfn(page);
	r = pib_pin(pfn, level, &semi);
	if (r == KVM_PAGETYPE_R_SKIPPED) {
		WRITE_ONCE(pib_state[pfn], 0);
		atomic_long_inc(&pib_stats[PIB_STOCK]);
		return page;
	}
	if (r) {
		atomic_long_inc(&pib_stats[PIB_REFUSED]);
		if (semi) {
			/* Not writable again: kept out of use, as a held one. */
			WRITE_ONCE(pib_state[pfn], semi | level);
			atomic_long_inc(&pib_stats[PIB_HELD]);
		} else {
			pib_free_frame(page);
		}
		return NULL;
	}
	if (pib_lifetime_ref(level))
		page_ref_inc(page);
	atomic_long_inc(&pib_levels[level - 1].tables);
	WRITE_ONCE(pib_state[pfn], PIB_S_TABLE | semi | level);
	return page;
}

/*
 * While the patch switches task by task, a task still on the stock
 * allocators may link a table the module did not pin into one it did.
 * The host validates such a table by reference; the local backend, which
 * sees no stores, would not know of it.  So until every task runs the
 * hooks (pib_post_patch()), the hooks hand tables out unpinned, as the
 * stock kernel does, and these stay the kernel's.  From then on a pinned
 * table only receives tables allocated after it was, pinned too.  Roots
 * are pinned after the fact: they wait for the __pud_alloc() hooks that
 * looked before the switch (pib_early_srcu), whose tables they may hold.
 */
static bool pib_patched __read_mostly;
DEFINE_SRCU(pib_early_srcu);

struct page *pib_table_alloc(struct mm_struct *mm, int level, gfp_t gfp)
{
	struct page *page;
	int idx;
	u64 t0;

	if (mm == pib_init_mm)
		return alloc_page(gfp);
	/*
	 * pin=roots: the kernel's own table, which the host validates by
	 * reference when it is linked under a pinned root, and which the
	 * free hooks, the sweep and the walks leave alone (no state).
	 */
	if (pib_roots_only) {
		atomic_long_inc(&pib_stats[PIB_BY_REF]);
		return alloc_page(gfp);
	}
	idx = srcu_read_lock(&pib_early_srcu);
	if (!READ_ONCE(pib_patched)) {
		srcu_read_unlock(&pib_early_srcu, idx);
		atomic_long_inc(&pib_stats[PIB_EARLY]);
		return alloc_page(gfp);
	}
	t0 = ktime_get_ns();
	page = __pib_table_alloc(level, gfp);
	srcu_read_unlock(&pib_early_srcu, idx);
	if (page) {
		atomic64_inc(&pib_lat[level - 1].allocs);
		atomic64_add(ktime_get_ns() - t0, &pib_lat[level - 1].alloc_ns);
	}
	return page;
}

/* Every task runs the hooks: pin from here on, roots where they can be. */
void pib_tables_patched(void)
{
	WRITE_ONCE(pib_patched, true);
	synchronize_srcu(&pib_early_srcu);
	WRITE_ONCE(pib_roots, !pgtable_l5_enabled() &&
		   !boot_cpu_has(X86_FEATURE_PTI));
}

/*
 * Claim the live table at pfn of @level for pib_unpin_live(); an L2..L4
 * table also gets a reference, so that a stock free cannot hand the frame
 * to the allocator before the host has let it go.  A root needs none:
 * the roots' lock keeps its mm's hook, and so pgd_free(), waiting.
 */
static bool pib_claim_live(unsigned long pfn, int level)
{
	u8 s = READ_ONCE(pib_state[pfn]);
	struct page *page;

	if ((s & (PIB_S_TABLE | PIB_S_PENDING | PIB_S_LEVEL)) !=
	    (PIB_S_TABLE | level))
		return false;
	if (pib_holds_ref(s) || (s & PIB_S_ROOT))
		return pib_claim(pfn, s);
	page = pfn_to_page(pfn);
	if (!get_page_unless_zero(page))
		return false;
	if (pib_claim(pfn, s))
		return true;
	put_page(page);
	return false;
}

/* Unpin the claimed live tables b->pages[0..n) of @level. */
static void pib_unpin_claimed(struct pib_batch *b, u32 n, int level)
{
	u32 i;

	if (level == 1) {
		/* Our lifetime reference goes with the frame (cache off). */
		pib_release_pages(b, n, false);
		return;
	}
	if (READ_ONCE(pib_state[page_to_pfn(b->pages[0])]) & PIB_S_ROOT) {
		pib_root_unpin(b, n);
		return;
	}
	pib_release_pages(b, n, true);
	/*
	 * A frame the host let go of whole is forgotten (state 0): the
	 * reference goes.  One still a table keeps it for pib_drain(); one
	 * held below another table, or left semi-writable, for good.
	 */
	for (i = 0; i < n; i++)
		if (!READ_ONCE(pib_state[page_to_pfn(b->pages[i])]))
			put_page(b->pages[i]);
}

/*
 * Unpin every live table of ours, top level first, roots with the other
 * L4 tables but in batches of their own.  The hooks still run and may
 * free any of them meanwhile: pib_claim() gives each frame one owner.
 */
static void pib_unpin_live(void)
{
	struct pib_batch *b = kmalloc(sizeof(*b), GFP_KERNEL | __GFP_NOFAIL);
	unsigned long pfn;
	int level, root;
	u32 n;

	pib_roots_lock();
	for (level = PIB_LEVELS; level >= 1; level--) {
		for (root = level == 4; root >= 0; root--) {
			n = 0;
			for (pfn = 0; pfn < pib_nr_frames; pfn++) {
				pib_walk_resched(pfn);
				if (!!(READ_ONCE(pib_state[pfn]) &
				       PIB_S_ROOT) != root ||
				    !pib_claim_live(pfn, level))
					continue;
				b->pages[n] = pfn_to_page(pfn);
				if (++n == KVM_PAGETYPE_MAX_BATCH) {
					pib_unpin_claimed(b, n, level);
					n = 0;
				}
			}
			if (n)
				pib_unpin_claimed(b, n, level);
		}
	}
	pib_roots_unlock();
	kfree(b);
}

/*
 * The patch is going (pre_unpatch: every task still runs the hooks).
 * Tasks will leave them one by one, and a stock free would give the page
 * allocator a frame still pinned at the host, whose next owner's stores
 * would then be taken as table writes.  So: pin nothing more (allocations
 * in flight finish first: pib_early_srcu), turn the cache off, and unpin
 * every live table now.  What the tasks allocate and link from here on
 * stays the kernel's (stats/early); the host validates links into the
 * tables still pinned meanwhile by reference.  Tables freed through a
 * hook before the last task leaves come back through the reaper; the
 * rest of the work is pib_drain()'s, at exit.
 */
void pib_tables_unpatching(void)
{
	WRITE_ONCE(pib_roots, false);
	WRITE_ONCE(pib_patched, false);
	synchronize_srcu(&pib_early_srcu);
	pib_set_cache(false);
	pib_unpin_live();
}

bool pib_pinned(struct page *page)
{
	unsigned long pfn = page_to_pfn(page);

	return pfn < pib_nr_frames && (READ_ONCE(pib_state[pfn]) & PIB_S_TABLE);
}

/*
 * A table pib_table_alloc() handed out that the kernel never linked,
 * freed at once through batch @b.
 */
void __pib_table_abandon(struct page *page, int level, struct pib_batch *b)
{
	if (!pib_pinned(page)) {
		__free_page(page);
		return;
	}
	if (pib_lifetime_ref(level))
		page_ref_dec(page);	/* the kernel's: the caller's free */
	b->pages[0] = page;
	pib_release_pages(b, 1, false);
}

void pib_table_abandon(struct page *page, int level)
{
	struct pib_batch *b = kmalloc(sizeof(*b), GFP_KERNEL | __GFP_NOFAIL);

	__pib_table_abandon(page, level, b);
	kfree(b);
}

/*
 * The kernel frees a table through a hook: it goes to the mmu_gather,
 * which drops its reference only after the TLB flush and the RCU grace
 * period.  Queue it; the reaper takes it back once the count is ours.
 */
void pib_table_freeing(struct page *page)
{
	unsigned long pfn = page_to_pfn(page);
	bool first;
	u8 s;

	if (pfn >= pib_nr_frames)
		return;
	/*
	 * Not ours (a table from before the module), or claimed already by
	 * pib_unpin_live(), which has a reference until the host let it go.
	 */
	do {
		s = READ_ONCE(pib_state[pfn]);
		if ((s & (PIB_S_TABLE | PIB_S_PENDING)) != PIB_S_TABLE)
			return;
	} while (!pib_claim(pfn, s));
	if (!pib_lifetime_ref(s & PIB_S_LEVEL))
		page_ref_inc(page);
	spin_lock(&pib_pending_lock);
	first = list_empty(&pib_pending);
	list_add_tail(&page->lru, &pib_pending);
	spin_unlock(&pib_pending_lock);
	atomic_long_inc(&pib_stats[PIB_FREED_BY_HOOK]);
	if (first)
		mod_delayed_work(system_wq, &pib_reaper, PIB_REAP_DELAY);
}

/*
 * L1 tables the kernel freed inline, and roots pgd_free() let go of:
 * their count is at our reference and no hook queued them.
 */
static void pib_sweep(struct list_head *ready)
{
	unsigned long pfn;

	for (pfn = 0; pfn < pib_nr_frames; pfn++) {
		u8 s = READ_ONCE(pib_state[pfn]);
		struct page *page;

		pib_walk_resched(pfn);
		if ((s & (PIB_S_TABLE | PIB_S_PENDING)) != PIB_S_TABLE ||
		    !pib_holds_ref(s))
			continue;
		page = pfn_to_page(pfn);
		if (page_ref_count(page) != 1)
			continue;
		/* A hook claims the frame before the kernel drops its count. */
		smp_rmb();
		if (!pib_claim(pfn, READ_ONCE(pib_state[pfn])))
			continue;
		list_add_tail(&page->lru, ready);
		atomic_long_inc(&pib_stats[PIB_FREED_INLINE]);
	}
}

/* Pending pages whose count is down to ours; the rest stay pending. */
static void pib_collect(struct list_head *ready)
{
	struct page *page, *next;
	LIST_HEAD(todo);

	spin_lock(&pib_pending_lock);
	list_splice_init(&pib_pending, &todo);
	spin_unlock(&pib_pending_lock);
	list_for_each_entry_safe(page, next, &todo, lru)
		if (page_ref_count(page) == 1)
			list_move_tail(&page->lru, ready);
	if (list_empty(&todo))
		return;
	spin_lock(&pib_pending_lock);
	list_splice(&todo, &pib_pending);
	spin_unlock(&pib_pending_lock);
}

static bool pib_pending_empty(void)
{
	bool empty;

	spin_lock(&pib_pending_lock);
	empty = list_empty(&pib_pending);
	spin_unlock(&pib_pending_lock);
	return empty;
}

static void pib_reap(struct work_struct *work)
{
	LIST_HEAD(ready);
	bool idle;

	pib_collect(&ready);
	if (time_after_eq(jiffies, pib_next_sweep)) {
		pib_sweep(&ready);
		pib_next_sweep = jiffies + PIB_SWEEP_DELAY;
	}
	pib_release_tables(&ready);
	idle = pib_pending_empty();
	if (!READ_ONCE(pib_stopping))
		schedule_delayed_work(&pib_reaper, idle ? PIB_SWEEP_DELAY :
				      PIB_REAP_DELAY);
}

void pib_reaper_start(void)
{
	pib_next_sweep = jiffies + PIB_SWEEP_DELAY;
	schedule_delayed_work(&pib_reaper, PIB_SWEEP_DELAY);
}

void pib_reaper_stop(void)
{
	WRITE_ONCE(pib_stopping, true);
	cancel_delayed_work_sync(&pib_reaper);
}

/*
 * With the reaper stopped (unload): release the pending tables whose
 * count is down to ours; true once none is left pending.
 */
bool pib_release_pending(void)
{
	LIST_HEAD(ready);

	pib_collect(&ready);
	pib_release_tables(&ready);
	return pib_pending_empty();
}
