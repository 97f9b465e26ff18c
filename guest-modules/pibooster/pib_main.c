// SPDX-License-Identifier: GPL-2.0
/*
 * pibooster: the PiBooster page-table cache for a stock Linux guest.
 *
 * A paravirtual guest whose page tables the host validates pays for every
 * page-table allocation and free with a type change (Xen's pin and unpin),
 * and, where a device is confined by the IOMMU, with an IOMMU update and
 * an IOTLB flush.  PiBooster keeps freed tables in per-level caches of
 * semi-writable frames: a frame enters the cache with one batched
 * conversion, and moves between semi-writable and page table from then on
 * without touching the IOMMU.
 *
 * The stock kernel's page-table allocators are replaced through the
 * livepatch API (the pv_ops call sites are patched at boot, so writing
 * pv_ops now would do nothing).  Every table the hooks hand out is pinned
 * at its level before the kernel links it in.  A freed table is unpinned,
 * and goes back to the cache or to the page allocator, only once the
 * kernel has dropped its last reference to the page: the module holds a
 * reference of its own, so the moment the kernel would have freed the
 * page (after the mmu_gather's TLB flush and the RCU deferral of table
 * freeing) is the moment the count falls to ours.  docs/pibooster.md
 * explains the design, the sysfs interface and what is not covered yet.
 *
 * The op batches go to a backend.  This version carries the local one:
 * the page-type rule engine the host module runs (kvm-pagetype/pt_rules.c),
 * run in the guest on the guest's own frames, so that every transition
 * the cache makes is checked against the same rules without a host.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/kobject.h>
#include <linux/livepatch.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/sched/task.h>
#include <linux/seq_file.h>
#include <linux/shrinker.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/srcu.h>
#include <linux/sysfs.h>
#include <linux/utsname.h>
#include <linux/version.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>
#include <asm/pgalloc.h>
#include <asm/paravirt.h>

#include "pagetype-regs.h"
#include "pt_rules.h"

/*
 * The hooks are 6.1's page-table functions with the cache in them, and
 * their bodies follow that kernel (ptdesc, the shrinker API and where the
 * table destructor runs all changed after it).  Built for another kernel,
 * the module says so and does not load.
 */
#if KERNEL_VERSION(6, 1, 0) > LINUX_VERSION_CODE || \
	KERNEL_VERSION(6, 2, 0) <= LINUX_VERSION_CODE	/* not 6.1 */

static int __init pib_init(void)
{
	pr_err("the hooks are Linux 6.1's page-table functions: not for %s\n",
	       init_utsname()->release);
	return -EOPNOTSUPP;
}
module_init(pib_init);

#else

/* Only passed on: asm/tlb.h is not for modules. */
struct mmu_gather;

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

/* Reaper cadence: pending pages every 2 jiffies, a full sweep each second. */
#define PIB_REAP_DELAY		2
#define PIB_SWEEP_DELAY		HZ

/* Frames handled per batch when releasing: up to two ops each. */
#define PIB_RELEASE_CHUNK	(KVM_PAGETYPE_MAX_BATCH / 2)

static unsigned int fill = 48;
module_param(fill, uint, 0644);
MODULE_PARM_DESC(fill, "frames per level put in the cache when it is enabled");

static bool enable = true;
module_param(enable, bool, 0444);
MODULE_PARM_DESC(enable, "enable the cache at load (else coarse: hooks only)");

struct pib_level {
	spinlock_t lock;	/* head, count */
	unsigned long head;	/* pfn + 1 of the first cached frame, 0: none */
	unsigned long count;
	atomic_long_t tables;	/* live tables we pinned at this level */
	unsigned long limit;	/* by number; ULONG_MAX: none */
	unsigned int ratio;	/* or percent of tables; 0: by number */
};

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
	PIB_EARLY,
	PIB_NR_STATS
};

static const char * const pib_stat_names[PIB_NR_STATS] = {
	[PIB_HITS] = "hits",
	[PIB_MISSES] = "misses",
	[PIB_PINS] = "pins",
	[PIB_UNPINS] = "unpins",
	[PIB_TO_SEMI] = "to_semi",
	[PIB_TO_WRITABLE] = "to_writable",
	[PIB_BATCHES] = "batches",
	[PIB_ERRORS] = "errors",
	[PIB_MODE_RETRIES] = "mode_retries",
	[PIB_FREED_BY_HOOK] = "freed_by_hook",
	[PIB_FREED_INLINE] = "freed_inline",
	[PIB_RELEASED] = "released",
	[PIB_SHRINKER_FREED] = "shrinker_freed",
	[PIB_STOCK] = "stock",
	[PIB_STALE] = "stale",
	[PIB_ROOTS] = "roots",
	[PIB_ROOTS_FREED] = "roots_freed",
	[PIB_EARLY] = "early",
};

static struct pib_level pib_levels[PIB_LEVELS];
static atomic_long_t pib_stats[PIB_NR_STATS];

/*
 * Time per level (debugfs pibooster/latency): an allocation from the
 * hook's entry to its return; a free as the frame's share of the batch
 * that unpinned it and cached it or gave it back (the kernel's own part,
 * queueing it in the hook, is a few stores).
 */
struct pib_lat {
	atomic64_t allocs, alloc_ns, frees, free_ns;
};

static struct pib_lat pib_lat[PIB_LEVELS];

static u8 *pib_state;
static unsigned long pib_nr_frames;
static struct mm_struct *pib_init_mm;

static DEFINE_MUTEX(pib_mode_lock);	/* pib_cache_on transitions */
static bool pib_cache_on;		/* read under a level lock too */

static DEFINE_SPINLOCK(pib_pending_lock);
static LIST_HEAD(pib_pending);		/* freed through a hook: page->lru */
static unsigned long pib_next_sweep;
static bool pib_stopping;
static void pib_reap(struct work_struct *work);
static DECLARE_DELAYED_WORK(pib_reaper, pib_reap);

/*
 * ---- the backends ----
 *
 * host: the pagetype device carries each batch to kvm_pagetype.ko, through
 * its doorbell page when the host offers one (no exit to user space), else
 * through its registers.  local, without the device: the host's rule
 * engine runs here on the guest's own frames.  Batches are serialized by
 * the backend's lock.
 */
struct pib_host {
	struct pci_dev *pdev;
	void __iomem *regs;
	struct mutex lock;		/* batch, doorbell, dead */
	struct kvm_pagetype_op *batch;	/* one page */
	u64 *doorbell;			/* one page, or NULL: the registers */
	bool dead;			/* the device went away */
};

static struct pib_host *pib_host;	/* set before the hooks go on */
static struct pt_engine pib_engine;

static int pib_local_read(void *priv, u64 gfn, u64 *entries)
{
	if (!pfn_valid(gfn))
		return -EFAULT;
	memcpy(entries, page_address(pfn_to_page(gfn)), PT_PAGE_SIZE);
	return 0;
}

static int pib_local_track(void *priv, u64 gfn, bool on)
{
	return 0;	/* nothing traps the guest's writes to itself */
}

static const struct pt_env pib_local_env = {
	.read_table = pib_local_read,
	.track = pib_local_track,
};

static void pib_backend_lock(void)
{
	if (pib_host)
		mutex_lock(&pib_host->lock);
	else
		pt_engine_lock(&pib_engine);
}

static bool pib_backend_trylock(void)
{
	return mutex_trylock(pib_host ? &pib_host->lock : &pib_engine.lock);
}

static void pib_backend_unlock(void)
{
	if (pib_host)
		mutex_unlock(&pib_host->lock);
	else
		pt_engine_unlock(&pib_engine);
}

/*
 * One batch of n ops (n <= KVM_PAGETYPE_MAX_BATCH) through the device;
 * returns how many ran, 0 if the host ran none.
 */
static u32 pib_host_batch(struct pib_host *h, struct kvm_pagetype_op *ops,
			  u32 n)
{
	phys_addr_t pa = page_to_phys(virt_to_page(h->batch));
	u32 status, done;

	if (h->dead)
		return 0;
	memcpy(h->batch, ops, n * sizeof(*ops));
	if (h->doorbell) {
		/* One store: the host has run the batch when it completes. */
		WRITE_ONCE(h->doorbell[0], KVM_PAGETYPE_DB_RING(pa, n));
		status = READ_ONCE(((u32 *)h->doorbell)[KVM_PAGETYPE_DB_STATUS_OFF / 4]);
		done = READ_ONCE(((u32 *)h->doorbell)[KVM_PAGETYPE_DB_DONE_OFF / 4]);
	} else {
		writel(lower_32_bits(pa), h->regs + PAGETYPE_REG_BATCH_LO);
		writel(upper_32_bits(pa), h->regs + PAGETYPE_REG_BATCH_HI);
		writel(n, h->regs + PAGETYPE_REG_COUNT);
		status = readl(h->regs + PAGETYPE_REG_STATUS);
		done = readl(h->regs + PAGETYPE_REG_DONE);
	}
	if (status || done > n) {
		pr_err_ratelimited("the host failed a batch of %u: status %u, %u done\n",
				   n, status, done);
		return 0;
	}
	memcpy(ops, h->batch, done * sizeof(*ops));
	return done;
}

/*
 * Run count ops under the backend's lock; each op's result is in its
 * result field.  A batch the rules cut short at their work bound is
 * resubmitted from where it stopped; ops a failed batch left get R_IO.
 */
static void pib_run_locked(struct kvm_pagetype_op *ops, u32 count)
{
	u32 done = 0, ran;

	while (done < count) {
		if (pib_host)
			ran = pib_host_batch(pib_host, ops + done,
					     min_t(u32, count - done,
						   KVM_PAGETYPE_MAX_BATCH));
		else
			ran = pt_engine_batch_locked(&pib_engine, PT_NO_HOME,
						     ops + done, count - done);
		atomic_long_inc(&pib_stats[PIB_BATCHES]);
		if (!ran)
			break;
		done += ran;
	}
	for (; done < count; done++)
		ops[done].result = KVM_PAGETYPE_R_IO;
}

static void pib_run(struct kvm_pagetype_op *ops, u32 count)
{
	pib_backend_lock();
	pib_run_locked(ops, count);
	pib_backend_unlock();
}

static void pib_op(struct kvm_pagetype_op *op, u16 code, u64 arg)
{
	memset(op, 0, sizeof(*op));
	op->code = code;
	op->arg = arg;
}

static void pib_count_op(const struct kvm_pagetype_op *op)
{
	if (op->result) {
		atomic_long_inc(&pib_stats[PIB_ERRORS]);
		pr_warn_ratelimited("op %u on frame %#llx: result %u\n",
				    op->code, op->arg, op->result);
		return;
	}
	switch (op->code) {
	case KVM_PAGETYPE_OP_PIN_L1 ... KVM_PAGETYPE_OP_PIN_L4:
		atomic_long_inc(&pib_stats[PIB_PINS]);
		break;
	case KVM_PAGETYPE_OP_UNPIN:
		atomic_long_inc(&pib_stats[PIB_UNPINS]);
		break;
	case KVM_PAGETYPE_OP_TO_SEMI:
		atomic_long_inc(&pib_stats[PIB_TO_SEMI]);
		break;
	case KVM_PAGETYPE_OP_TO_WRITABLE:
		atomic_long_inc(&pib_stats[PIB_TO_WRITABLE]);
		break;
	}
}

/* ---- the per-level caches: singly-linked by frame number ---- */

/*
 * A cached frame is semi-writable: the guest may write it, no device may.
 * The list's link lives in the frame itself, so a push and a pop are a
 * few loads and stores under the level's lock.
 */
static bool pib_push(int level, struct page *page)
{
	struct pib_level *l = &pib_levels[level - 1];
	unsigned long pfn = page_to_pfn(page);
	unsigned long limit;
	bool ok;

	spin_lock(&l->lock);
	limit = l->ratio ? atomic_long_read(&l->tables) * l->ratio / 100 :
			   l->limit;
	ok = pib_cache_on && l->count < limit;
	if (ok) {
		*(unsigned long *)page_address(page) = l->head;
		WRITE_ONCE(l->head, pfn + 1);	/* read unlocked by pib_pop() */
		l->count++;
		WRITE_ONCE(pib_state[pfn], PIB_S_CACHED | PIB_S_SEMI | level);
	}
	spin_unlock(&l->lock);
	return ok;
}

static noinline struct page *pib_pop_locked(struct pib_level *l, int level)
{
	struct page *page;
	unsigned long pfn;

	spin_lock(&l->lock);
	pfn = l->head;
	if (!pfn) {		/* emptied since pib_pop() looked */
		spin_unlock(&l->lock);
		return NULL;
	}
	pfn--;
	page = pfn_to_page(pfn);
	WRITE_ONCE(l->head, *(unsigned long *)page_address(page));
	l->count--;
	WRITE_ONCE(pib_state[pfn], PIB_S_SEMI | level);
	spin_unlock(&l->lock);
	return page;
}

/*
 * An empty level is seen without the lock: a miss costs a call, a load
 * and a test on top of the page allocator's path.  Out of line, and apart
 * from the locked part (whose registers would be saved first), so that
 * those instructions are few and can be counted in the module's
 * disassembly (tests/bench/pibooster-misspath.py, in make bench).
 */
static noinline struct page *pib_pop(int level)
{
	struct pib_level *l = &pib_levels[level - 1];

	if (!READ_ONCE(l->head))
		return NULL;
	return pib_pop_locked(l, level);
}

/*
 * Buffers for one release batch: the ops and the frames they name.  The
 * shrinker cannot allocate (it runs inside reclaim) and uses its own.
 */
struct pib_batch {
	struct kvm_pagetype_op ops[KVM_PAGETYPE_MAX_BATCH];
	struct page *pages[KVM_PAGETYPE_MAX_BATCH];
	u8 levels[KVM_PAGETYPE_MAX_BATCH];
};

static DEFINE_MUTEX(pib_shrink_lock);	/* pib_shrink_batch */
static struct pib_batch *pib_shrink_batch;

/* A frame the module no longer uses goes back to the page allocator. */
static void pib_free_frame(struct page *page)
{
	WRITE_ONCE(pib_state[page_to_pfn(page)], 0);
	put_page(page);
}

/*
 * A frame fresh from the page allocator that we still have pinned: an L2
 * to L4 table the stock functions freed while a livepatch transition had
 * some tasks on them and some on the hooks (only L1 tables carry our
 * reference, which keeps them from the allocator).  Unpin it now that it
 * is ours; docs/pibooster.md, "Livepatch transitions".
 */
static void pib_forget_stale(struct page *page)
{
	unsigned long pfn = page_to_pfn(page);
	struct kvm_pagetype_op ops[2];
	u8 s = READ_ONCE(pib_state[pfn]);
	u32 n = 0, i;

	if (!(s & PIB_S_TABLE))
		return;
	pib_op(&ops[n++], KVM_PAGETYPE_OP_UNPIN, pfn);
	if (s & PIB_S_SEMI)
		pib_op(&ops[n++], KVM_PAGETYPE_OP_TO_WRITABLE, pfn);
	pib_run(ops, n);
	for (i = 0; i < n; i++)
		pib_count_op(&ops[i]);
	if (!ops[0].result)
		atomic_long_dec(&pib_levels[(s & PIB_S_LEVEL) - 1].tables);
	atomic_long_inc(&pib_stats[PIB_STALE]);
	WRITE_ONCE(pib_state[pfn], 0);
}

/*
 * Give back up to n cached frames of a level to the page allocator, in
 * batches of TO_WRITABLE conversions; locked: the caller holds the
 * engine's lock.  Returns how many went.
 */
static unsigned long pib_release_cached(struct pib_batch *b, int level,
					unsigned long n, bool locked)
{
	unsigned long done = 0;
	u32 i, k;

	while (done < n) {
		for (k = 0; k < KVM_PAGETYPE_MAX_BATCH && done + k < n; k++) {
			b->pages[k] = pib_pop(level);
			if (!b->pages[k])
				break;
			pib_op(&b->ops[k], KVM_PAGETYPE_OP_TO_WRITABLE,
			       page_to_pfn(b->pages[k]));
		}
		if (!k)
			break;
		if (locked)
			pib_run_locked(b->ops, k);
		else
			pib_run(b->ops, k);
		for (i = 0; i < k; i++) {
			pib_count_op(&b->ops[i]);
			/* A frame the backend kept semi-writable stays ours. */
			if (!b->ops[i].result)
				pib_free_frame(b->pages[i]);
		}
		done += k;
	}
	atomic_long_add(done, &pib_stats[PIB_RELEASED]);
	return done;
}

static unsigned long pib_release_cached_alloc(int level, unsigned long n)
{
	struct pib_batch *b = kmalloc(sizeof(*b), GFP_KERNEL);
	unsigned long done;

	if (!b)
		return 0;
	done = pib_release_cached(b, level, n, false);
	kfree(b);
	return done;
}

static unsigned long pib_cached_total(void)
{
	unsigned long n = 0;
	int i;

	for (i = 0; i < PIB_LEVELS; i++)
		n += READ_ONCE(pib_levels[i].count);
	return n;
}

static unsigned long pib_level_limit(struct pib_level *l)
{
	return l->ratio ? atomic_long_read(&l->tables) * l->ratio / 100 :
			  l->limit;
}

/* Bring every level down to its threshold. */
static void pib_enforce_limits(void)
{
	int i;

	for (i = 0; i < PIB_LEVELS; i++) {
		struct pib_level *l = &pib_levels[i];
		unsigned long count = READ_ONCE(l->count);
		unsigned long limit = pib_level_limit(l);

		if (count > limit)
			pib_release_cached_alloc(i + 1, count - limit);
	}
}

/*
 * Fill every level with up to fill fresh frames in one batch, which
 * starts with the caller's ops (first of them).
 */
static void pib_fill(struct pib_batch *b, u32 first)
{
	u32 n = first, i;
	int level;

	for (level = 1; level <= PIB_LEVELS; level++) {
		unsigned int k;

		for (k = 0; k < fill && n < KVM_PAGETYPE_MAX_BATCH; k++) {
			struct page *page = alloc_page(GFP_KERNEL);

			if (!page)
				break;
			if (page_to_pfn(page) < pib_nr_frames)
				pib_forget_stale(page);
			b->pages[n] = page;
			b->levels[n] = level;
			pib_op(&b->ops[n], KVM_PAGETYPE_OP_TO_SEMI,
			       page_to_pfn(page));
			n++;
		}
	}
	pib_run(b->ops, n);
	for (i = 0; i < first; i++)
		pib_count_op(&b->ops[i]);
	for (i = first; i < n; i++) {
		struct page *page = b->pages[i];

		pib_count_op(&b->ops[i]);
		if (b->ops[i].result) {
			put_page(page);
			continue;
		}
		if (pib_push(b->levels[i], page))
			continue;
		/* Over the threshold already: straight back. */
		pib_op(&b->ops[0], KVM_PAGETYPE_OP_TO_WRITABLE,
		       page_to_pfn(page));
		pib_run(b->ops, 1);
		pib_count_op(&b->ops[0]);
		if (!b->ops[0].result)
			put_page(page);
	}
}

/*
 * The cache on (PiBooster: fine-grained mode, a filled cache) or off
 * (coarse: every table pins and unpins writable <-> table, and the cache
 * is released in one batch per 256 frames).
 */
static int pib_set_cache(bool on)
{
	struct pib_batch *b = kmalloc(sizeof(*b), GFP_KERNEL);
	int i;

	if (!b)
		return -ENOMEM;
	mutex_lock(&pib_mode_lock);
	if (on == pib_cache_on)
		goto out;
	if (on) {
		WRITE_ONCE(pib_cache_on, true);
		pib_op(&b->ops[0], KVM_PAGETYPE_OP_SET_MODE,
		       KVM_PAGETYPE_MODE_FINE);
		pib_fill(b, 1);
		goto out;
	}
	/* No push after this: each level's lock orders it. */
	for (i = 0; i < PIB_LEVELS; i++) {
		spin_lock(&pib_levels[i].lock);
		WRITE_ONCE(pib_cache_on, false);
		spin_unlock(&pib_levels[i].lock);
	}
	pib_op(&b->ops[0], KVM_PAGETYPE_OP_SET_MODE, KVM_PAGETYPE_MODE_COARSE);
	pib_run(b->ops, 1);
	pib_count_op(&b->ops[0]);
	for (i = 0; i < PIB_LEVELS; i++)
		pib_release_cached(b, i + 1, ULONG_MAX, false);
out:
	mutex_unlock(&pib_mode_lock);
	kfree(b);
	return 0;
}

/* ---- tables: handed out pinned, taken back once the kernel lets go ---- */

/*
 * Whether the module holds a reference on a level's tables for as long
 * as they are tables.  L1 tables are also freed by inline code the hooks
 * never see (pte_free() after a lost race in pmd_install(), THP's
 * deposited tables, khugepaged): the reference keeps such a page from the
 * page allocator until the sweep finds the count at ours.  L2 tables must
 * not carry one (hugetlb decides PMD sharing by page_count()), and no
 * inline path frees an L2..L4 table of a user mm: their hooks take the
 * reference when the kernel frees them.
 */
static bool pib_lifetime_ref(int level)
{
	return level == 1;
}

/* The same for a frame in state @s: an L1 table or a root (below). */
static bool pib_holds_ref(u8 s)
{
	return (s & PIB_S_ROOT) || pib_lifetime_ref(s & PIB_S_LEVEL);
}

/*
 * Unpin the batch's n table frames, then cache them or give them to the
 * page allocator: one batch for the unpins, one for the conversions of
 * the frames the cache does not keep.  A frame the backend refuses to
 * unpin stays ours for good, never reused.  With borrowed, the pages are
 * not ours to cache or put (tables the kernel may be freeing right now):
 * only the frames are converted.
 */
static void pib_release_pages(struct pib_batch *b, u32 n, bool borrowed)
{
	struct page *page;
	u32 i, m = 0;

	for (i = 0; i < n; i++) {
		b->levels[i] = READ_ONCE(pib_state[page_to_pfn(b->pages[i])]);
		pib_op(&b->ops[i], KVM_PAGETYPE_OP_UNPIN,
		       page_to_pfn(b->pages[i]));
	}
	pib_run(b->ops, n);
	for (i = 0; i < n; i++) {
		u8 s = b->levels[i];
		int level = s & PIB_S_LEVEL;

		page = b->pages[i];
		pib_count_op(&b->ops[i]);
		if (b->ops[i].result)
			continue;
		atomic_long_dec(&pib_levels[level - 1].tables);
		WRITE_ONCE(pib_state[page_to_pfn(page)],
			   s & ~(PIB_S_TABLE | PIB_S_PENDING | PIB_S_ROOT));
		if (!(s & PIB_S_SEMI)) {
			if (!borrowed)
				pib_free_frame(page);
			continue;
		}
		/* A root is not cached: only a p4d would take it. */
		if (!borrowed && !(s & PIB_S_ROOT) && pib_push(level, page))
			continue;
		b->pages[m] = page;
		pib_op(&b->ops[m++], KVM_PAGETYPE_OP_TO_WRITABLE,
		       page_to_pfn(page));
	}
	if (m) {
		pib_run(b->ops, m);
		for (i = 0; i < m; i++) {
			pib_count_op(&b->ops[i]);
			if (!b->ops[i].result && !borrowed)
				pib_free_frame(b->pages[i]);
		}
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
		int level = b->levels[i] & PIB_S_LEVEL;

		if (!level || (b->levels[i] & PIB_S_ROOT))
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
 * Pin frame pfn at a level.  In fine-grained mode a writable frame is
 * made semi-writable in the same batch (*semi says which it is, before
 * and after); a pin that raced a switch to fine-grained mode is retried
 * that way.  A refused pin leaves the frame writable.
 */
static bool pib_pin(unsigned long pfn, int level, u8 *semi)
{
	struct kvm_pagetype_op ops[2];
	u32 n = 0, pin;

	if (!*semi && READ_ONCE(pib_cache_on)) {
		pib_op(&ops[n++], KVM_PAGETYPE_OP_TO_SEMI, pfn);
		*semi = PIB_S_SEMI;
	}
	pin = n;
	pib_op(&ops[n++], KVM_PAGETYPE_OP_PIN_L1 + level - 1, pfn);
	pib_run(ops, n);
	if (ops[pin].result == KVM_PAGETYPE_R_MODE && !*semi) {
		/* The cache went on since we looked: fine-grained now. */
		atomic_long_inc(&pib_stats[PIB_MODE_RETRIES]);
		pib_op(&ops[0], KVM_PAGETYPE_OP_TO_SEMI, pfn);
		pib_op(&ops[1], KVM_PAGETYPE_OP_PIN_L1 + level - 1, pfn);
		pib_run(ops, 2);
		*semi = PIB_S_SEMI;
		pin = 1;
	}
	for (n = 0; n <= pin; n++)
		pib_count_op(&ops[n]);
	if (!ops[pin].result)
		return true;
	if (*semi && (!pin || !ops[0].result)) {
		pib_op(&ops[0], KVM_PAGETYPE_OP_TO_WRITABLE, pfn);
		pib_run(ops, 1);
		pib_count_op(&ops[0]);
	}
	return false;
}

/*
 * A table at a level: from the cache when it is on and has one,
 * else from the page allocator (PiBooster's miss: the coarse path for
 * this frame); pinned before it is returned.  A table the backend
 * refuses to pin is handed out as the stock kernel would (counted as an
 * error: the rules and the cache disagree).
 */
static struct page *__pib_table_alloc(int level, gfp_t gfp)
{
	struct page *page = NULL;
	unsigned long pfn;
	u8 semi = 0;

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
	if (!pib_pin(pfn, level, &semi)) {
		WRITE_ONCE(pib_state[pfn], 0);
		atomic_long_inc(&pib_stats[PIB_STOCK]);
		return page;
	}
	if (pib_lifetime_ref(level))
		page_ref_inc(page);
	atomic_long_inc(&pib_levels[level - 1].tables);
	WRITE_ONCE(pib_state[pfn], PIB_S_TABLE | semi | level);
	return page;
}

/*
 * While the patch switches task by task, a task still on the stock
 * allocators could link an unpinned table into a table we pinned, which
 * the host refuses, killing the guest.  So until every task runs the
 * hooks (pib_post_patch()), the hooks hand tables out unpinned, as the
 * stock kernel does, and these stay the kernel's.  From then on a pinned
 * table only receives tables allocated after it was, pinned too.  Roots
 * are pinned after the fact: they wait for the __pud_alloc() hooks that
 * looked before the switch (pib_early_srcu), whose tables they may hold.
 */
static bool pib_patched __read_mostly;
DEFINE_STATIC_SRCU(pib_early_srcu);

static struct page *pib_table_alloc(struct mm_struct *mm, int level,
				    gfp_t gfp)
{
	struct page *page;
	u64 t0;

	if (mm == pib_init_mm)
		return alloc_page(gfp);
	if (!READ_ONCE(pib_patched)) {
		atomic_long_inc(&pib_stats[PIB_EARLY]);
		return alloc_page(gfp);
	}
	t0 = ktime_get_ns();
	page = __pib_table_alloc(level, gfp);
	if (page) {
		atomic64_inc(&pib_lat[level - 1].allocs);
		atomic64_add(ktime_get_ns() - t0, &pib_lat[level - 1].alloc_ns);
	}
	return page;
}

/*
 * The root.  Under 4-level paging the pgd is an L4 table, but pgd_alloc()
 * and pgd_free() cannot be replaced from a module: they fill and empty
 * pgd_list under pgd_lock, neither exported.  So a root is pinned just
 * before the first table is linked into it (the first __pud_alloc() of an
 * mm: the p4d level is folded into the pgd), and taken back when the
 * kernel lets go of it: we hold a reference on its page, pgd_free()'s
 * free_pages() then frees only the block's second page (with page-table
 * isolation off, unused) and leaves the first to us, and the sweep finds
 * its count down to ours.  A root whose user half already points at
 * tables we did not pin (an mm from before the module) stays the kernel's.
 * With page-table isolation on, a root is two tables (the user half is
 * the second page): roots are left to the kernel then.
 */
static bool pib_roots __read_mostly;
static DEFINE_MUTEX(pib_root_lock);

static bool pib_root_pinnable(pgd_t *pgd)
{
	unsigned int i;

	for (i = 0; i < KERNEL_PGD_BOUNDARY; i++) {
		/* pgd_present() is always true when the p4d is folded */
		pgdval_t e = READ_ONCE(pgd[i].pgd);
		unsigned long pfn = (e & PTE_PFN_MASK) >> PAGE_SHIFT;

		if (!(e & _PAGE_PRESENT))
			continue;
		if (pfn >= pib_nr_frames ||
		    (READ_ONCE(pib_state[pfn]) & (PIB_S_TABLE | PIB_S_LEVEL)) !=
		    (PIB_S_TABLE | 3))
			return false;
	}
	return true;
}

static void pib_root_pin(struct mm_struct *mm)
{
	struct page *page = virt_to_page(mm->pgd);
	unsigned long pfn = page_to_pfn(page);
	u8 semi = 0;

	if (pfn >= pib_nr_frames || (READ_ONCE(pib_state[pfn]) & PIB_S_TABLE))
		return;
	mutex_lock(&pib_root_lock);
	if ((READ_ONCE(pib_state[pfn]) & PIB_S_TABLE) || !READ_ONCE(pib_roots) ||
	    !pib_root_pinnable(mm->pgd))
		goto out;
	if (!pib_pin(pfn, 4, &semi)) {
		/* The rules refuse this kernel's roots: stop trying. */
		WRITE_ONCE(pib_roots, false);
		pr_warn("a root was refused: roots left to the kernel from now on\n");
		goto out;
	}
	get_page(page);
	atomic_long_inc(&pib_levels[3].tables);
	atomic_long_inc(&pib_stats[PIB_ROOTS]);
	WRITE_ONCE(pib_state[pfn], PIB_S_TABLE | PIB_S_ROOT | semi | 4);
out:
	mutex_unlock(&pib_root_lock);
}

static bool pib_pinned(struct page *page)
{
	unsigned long pfn = page_to_pfn(page);

	return pfn < pib_nr_frames && (READ_ONCE(pib_state[pfn]) & PIB_S_TABLE);
}

/*
 * A table pib_table_alloc() handed out that the kernel never linked,
 * freed at once through batch @b.
 */
static void __pib_table_abandon(struct page *page, int level,
				struct pib_batch *b)
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

static void pib_table_abandon(struct page *page, int level)
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
static void pib_table_freeing(struct page *page)
{
	unsigned long pfn = page_to_pfn(page);
	bool first;
	u8 s;

	if (pfn >= pib_nr_frames)
		return;
	s = READ_ONCE(pib_state[pfn]);
	if (!(s & PIB_S_TABLE))
		return;		/* not ours: a table from before the module */
	if (!pib_lifetime_ref(s & PIB_S_LEVEL))
		page_ref_inc(page);
	WRITE_ONCE(pib_state[pfn], s | PIB_S_PENDING);
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

		if ((s & (PIB_S_TABLE | PIB_S_PENDING)) != PIB_S_TABLE ||
		    !pib_holds_ref(s))
			continue;
		page = pfn_to_page(pfn);
		if (page_ref_count(page) != 1)
			continue;
		/* A hook marks PENDING before the kernel drops its count. */
		smp_rmb();
		s = READ_ONCE(pib_state[pfn]);
		if (s & PIB_S_PENDING)
			continue;
		WRITE_ONCE(pib_state[pfn], s | PIB_S_PENDING);
		list_add_tail(&page->lru, ready);
		atomic_long_inc(&pib_stats[s & PIB_S_ROOT ? PIB_ROOTS_FREED :
					   PIB_FREED_INLINE]);
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
	spin_lock(&pib_pending_lock);
	idle = list_empty(&pib_pending);
	spin_unlock(&pib_pending_lock);
	if (!READ_ONCE(pib_stopping))
		schedule_delayed_work(&pib_reaper, idle ? PIB_SWEEP_DELAY :
				      PIB_REAP_DELAY);
}

/* ---- the hooks: the stock functions, with tables from the cache ---- */

static pgtable_t pib_pte_alloc_one(struct mm_struct *mm)
{
	struct page *page = pib_table_alloc(mm, 1, GFP_PGTABLE_USER);

	if (!page)
		return NULL;
	if (!pgtable_pte_page_ctor(page)) {
		pib_table_abandon(page, 1);
		return NULL;
	}
	return page;
}

static pmd_t *pib_pmd_alloc_one(struct mm_struct *mm)
{
	gfp_t gfp = mm == pib_init_mm ? GFP_PGTABLE_KERNEL : GFP_PGTABLE_USER;
	struct page *page = pib_table_alloc(mm, 2, gfp);

	if (!page)
		return NULL;
	if (!pgtable_pmd_page_ctor(page)) {
		pib_table_abandon(page, 2);
		return NULL;
	}
	return page_address(page);
}

static int pib___pmd_alloc(struct mm_struct *mm, pud_t *pud,
			   unsigned long address)
{
	pmd_t *new = pib_pmd_alloc_one(mm);
	spinlock_t *ptl;	/* the pud's */

	if (!new)
		return -ENOMEM;
	ptl = pud_lock(mm, pud);
	if (!pud_present(*pud)) {
		mm_inc_nr_pmds(mm);
		smp_wmb(); /* the table's zeroes before the link: pmd_install() */
		pud_populate(mm, pud, new);
		new = NULL;
	}
	spin_unlock(ptl);
	if (new) {	/* another thread populated it */
		pgtable_pmd_page_dtor(virt_to_page(new));
		pib_table_abandon(virt_to_page(new), 2);
	}
	return 0;
}

static int pib___pud_alloc(struct mm_struct *mm, p4d_t *p4d,
			   unsigned long address)
{
	gfp_t gfp = mm == pib_init_mm ? GFP_PGTABLE_KERNEL : GFP_PGTABLE_USER;
	int idx = srcu_read_lock(&pib_early_srcu);
	struct page *page = pib_table_alloc(mm, 3, gfp);
	pud_t *new;

	if (!page) {
		srcu_read_unlock(&pib_early_srcu, idx);
		return -ENOMEM;
	}
	if (READ_ONCE(pib_roots) && mm != pib_init_mm)
		pib_root_pin(mm);
	new = page_address(page);
	spin_lock(&mm->page_table_lock);
	if (!p4d_present(*p4d)) {
		mm_inc_nr_puds(mm);
		smp_wmb(); /* as in __pmd_alloc() */
		p4d_populate(mm, p4d, new);
		new = NULL;
	}
	spin_unlock(&mm->page_table_lock);
	srcu_read_unlock(&pib_early_srcu, idx);
	if (new)
		pib_table_abandon(page, 3);
	return 0;
}

static void pib___pte_free_tlb(struct mmu_gather *tlb, struct page *pte)
{
	pgtable_pte_page_dtor(pte);
	paravirt_release_pte(page_to_pfn(pte));
	pib_table_freeing(pte);
	paravirt_tlb_remove_table(tlb, pte);
}

static void pib___pmd_free_tlb(struct mmu_gather *tlb, pmd_t *pmd)
{
	struct page *page = virt_to_page(pmd);

	paravirt_release_pmd(__pa(pmd) >> PAGE_SHIFT);
	pgtable_pmd_page_dtor(page);
	pib_table_freeing(page);
	paravirt_tlb_remove_table(tlb, page);
}

static void pib___pud_free_tlb(struct mmu_gather *tlb, pud_t *pud)
{
	struct page *page = virt_to_page(pud);

	paravirt_release_pud(__pa(pud) >> PAGE_SHIFT);
	pib_table_freeing(page);
	paravirt_tlb_remove_table(tlb, page);
}

/* Called only under 5-level paging: with 4 levels the p4d is the pgd. */
static int pib___p4d_alloc(struct mm_struct *mm, pgd_t *pgd,
			   unsigned long address)
{
	gfp_t gfp = mm == pib_init_mm ? GFP_PGTABLE_KERNEL : GFP_PGTABLE_USER;
	struct page *page = pib_table_alloc(mm, 4, gfp);
	p4d_t *new;

	if (!page)
		return -ENOMEM;
	new = page_address(page);
	spin_lock(&mm->page_table_lock);
	if (!pgd_present(*pgd)) {
		smp_wmb(); /* as in __pmd_alloc() */
		pgd_populate(mm, pgd, new);
		new = NULL;
	}
	spin_unlock(&mm->page_table_lock);
	if (new)
		pib_table_abandon(page, 4);
	return 0;
}

static void pib___p4d_free_tlb(struct mmu_gather *tlb, p4d_t *p4d)
{
	struct page *page = virt_to_page(p4d);

	paravirt_release_p4d(__pa(p4d) >> PAGE_SHIFT);
	pib_table_freeing(page);
	paravirt_tlb_remove_table(tlb, page);
}

static struct klp_func pib_funcs[] = {
	{ .old_name = "pte_alloc_one", .new_func = pib_pte_alloc_one },
	{ .old_name = "__pmd_alloc", .new_func = pib___pmd_alloc },
	{ .old_name = "__pud_alloc", .new_func = pib___pud_alloc },
	{ .old_name = "__p4d_alloc", .new_func = pib___p4d_alloc },
	{ .old_name = "___pte_free_tlb", .new_func = pib___pte_free_tlb },
	{ .old_name = "___pmd_free_tlb", .new_func = pib___pmd_free_tlb },
	{ .old_name = "___pud_free_tlb", .new_func = pib___pud_free_tlb },
	{ .old_name = "___p4d_free_tlb", .new_func = pib___p4d_free_tlb },
	{ }
};

/* Every task runs the hooks now: pin from here on (pib_table_alloc()). */
static void pib_post_patch(struct klp_object *obj)
{
	WRITE_ONCE(pib_patched, true);
	synchronize_srcu(&pib_early_srcu);
	WRITE_ONCE(pib_roots, !pgtable_l5_enabled() &&
		   !boot_cpu_has(X86_FEATURE_PTI));
	pr_info("every task on the hooks: new tables pinned (%ld before left to the kernel)\n",
		atomic_long_read(&pib_stats[PIB_EARLY]));
}

static struct klp_object pib_objs[] = {
	{ .funcs = pib_funcs,		/* vmlinux */
	  .callbacks = { .post_patch = pib_post_patch } },
	{ }
};

static struct klp_patch pib_patch = {
	.mod = THIS_MODULE,
	.objs = pib_objs,
};

/* ---- the shrinker ---- */

static unsigned long pib_shrink_count(struct shrinker *s,
				      struct shrink_control *sc)
{
	return pib_cached_total() ?: SHRINK_EMPTY;
}

/*
 * Inside reclaim: no allocation, and no waiting for the engine, whose
 * holder may be the task reclaiming (a pin allocates its shadow).
 */
static unsigned long pib_shrink_scan(struct shrinker *s,
				     struct shrink_control *sc)
{
	unsigned long freed = 0;
	int i;

	if (!mutex_trylock(&pib_shrink_lock))
		return SHRINK_STOP;
	if (!pib_backend_trylock()) {
		mutex_unlock(&pib_shrink_lock);
		return SHRINK_STOP;
	}
	for (i = PIB_LEVELS - 1; i >= 0 && freed < sc->nr_to_scan; i--)
		freed += pib_release_cached(pib_shrink_batch, i + 1,
					    sc->nr_to_scan - freed, true);
	pib_backend_unlock();
	mutex_unlock(&pib_shrink_lock);
	atomic_long_add(freed, &pib_stats[PIB_SHRINKER_FREED]);
	return freed ?: SHRINK_STOP;
}

static struct shrinker pib_shrinker = {
	.count_objects = pib_shrink_count,
	.scan_objects = pib_shrink_scan,
	.seeks = DEFAULT_SEEKS,
};

/* ---- /sys/kernel/pibooster ---- */

/* "N" or "P%": the number, and whether it is a percentage. */
static int pib_parse(const char *buf, unsigned long *val, bool *percent)
{
	char tmp[24];
	size_t len;

	len = strscpy(tmp, buf, sizeof(tmp)) < 0 ? 0 : strlen(tmp);
	while (len && (tmp[len - 1] == '\n' || tmp[len - 1] == ' '))
		tmp[--len] = 0;
	*percent = len && tmp[len - 1] == '%';
	if (*percent)
		tmp[--len] = 0;
	if (!len || kstrtoul(tmp, 10, val))
		return -EINVAL;
	if (*percent && *val > 100)
		return -ERANGE;
	return 0;
}

static ssize_t enable_show(struct kobject *k, struct kobj_attribute *a,
			   char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(pib_cache_on));
}

static ssize_t enable_store(struct kobject *k, struct kobj_attribute *a,
			    const char *buf, size_t len)
{
	bool on;
	int ret = kstrtobool(buf, &on);

	if (!ret)
		ret = pib_set_cache(on);
	return ret ?: len;
}

static ssize_t backend_name_show(struct kobject *k, struct kobj_attribute *a,
				 char *buf)
{
	if (!pib_host)
		return sysfs_emit(buf, "local\n");
	return sysfs_emit(buf, "host %s\n",
			  pib_host->doorbell ? "doorbell" : "registers");
}

/* Release n frames, from the fullest level first; 0: all of them. */
static ssize_t shrink_store(struct kobject *k, struct kobj_attribute *a,
			    const char *buf, size_t len)
{
	unsigned long val, n;
	bool percent;
	int i, ret;

	ret = pib_parse(buf, &val, &percent);
	if (ret)
		return ret;
	if (!val) {
		for (i = 0; i < PIB_LEVELS; i++)
			pib_release_cached_alloc(i + 1, ULONG_MAX);
		return len;
	}
	if (percent) {
		for (i = 0; i < PIB_LEVELS; i++) {
			n = DIV_ROUND_UP(READ_ONCE(pib_levels[i].count) * val,
					 100);
			pib_release_cached_alloc(i + 1, n);
		}
		return len;
	}
	while (val) {
		int big = 0;

		for (i = 1; i < PIB_LEVELS; i++)
			if (READ_ONCE(pib_levels[i].count) >
			    READ_ONCE(pib_levels[big].count))
				big = i;
		n = pib_release_cached_alloc(big + 1, val);
		if (!n)
			break;
		val -= n;
	}
	return len;
}

static ssize_t threshold_show(struct kobject *k, struct kobj_attribute *a,
			      char *buf)
{
	struct pib_level *l = &pib_levels[0];

	if (l->ratio)
		return sysfs_emit(buf, "%u%%\n", l->ratio);
	if (l->limit == ULONG_MAX)
		return sysfs_emit(buf, "none\n");
	return sysfs_emit(buf, "%lu\n", l->limit);
}

/* Per level: at most N cached frames, or P% of its tables in use. */
static ssize_t threshold_store(struct kobject *k, struct kobj_attribute *a,
			       const char *buf, size_t len)
{
	unsigned long val;
	bool percent;
	int i, ret;

	if (sysfs_streq(buf, "none")) {
		val = ULONG_MAX;
		percent = false;
	} else {
		ret = pib_parse(buf, &val, &percent);
		if (ret)
			return ret;
		if (percent && !val)
			return -EINVAL;
	}
	for (i = 0; i < PIB_LEVELS; i++) {
		spin_lock(&pib_levels[i].lock);
		pib_levels[i].ratio = percent ? val : 0;
		pib_levels[i].limit = percent ? ULONG_MAX : val;
		spin_unlock(&pib_levels[i].lock);
	}
	pib_enforce_limits();
	return len;
}

#define PIB_LEVEL_ATTR(name, lvl, expr)					\
static ssize_t name##_show(struct kobject *k, struct kobj_attribute *a,	\
			   char *buf)					\
{									\
	struct pib_level *l = &pib_levels[(lvl) - 1];			\
	return sysfs_emit(buf, "%lu\n", (unsigned long)(expr));		\
}									\
static struct kobj_attribute name##_attr = __ATTR_RO(name)

PIB_LEVEL_ATTR(cached_l1, 1, READ_ONCE(l->count));
PIB_LEVEL_ATTR(cached_l2, 2, READ_ONCE(l->count));
PIB_LEVEL_ATTR(cached_l3, 3, READ_ONCE(l->count));
PIB_LEVEL_ATTR(cached_l4, 4, READ_ONCE(l->count));
PIB_LEVEL_ATTR(tables_l1, 1, atomic_long_read(&l->tables));
PIB_LEVEL_ATTR(tables_l2, 2, atomic_long_read(&l->tables));
PIB_LEVEL_ATTR(tables_l3, 3, atomic_long_read(&l->tables));
PIB_LEVEL_ATTR(tables_l4, 4, atomic_long_read(&l->tables));

static ssize_t cached_show(struct kobject *k, struct kobj_attribute *a,
			   char *buf)
{
	return sysfs_emit(buf, "%lu\n", pib_cached_total());
}

static struct kobj_attribute enable_attr = __ATTR_RW(enable);
static struct kobj_attribute shrink_attr = __ATTR_WO(shrink);
static struct kobj_attribute threshold_attr = __ATTR_RW(threshold);
static struct kobj_attribute cached_attr = __ATTR_RO(cached);

static struct attribute *pib_attrs[] = {
	&enable_attr.attr, &shrink_attr.attr,
	&threshold_attr.attr, &cached_attr.attr,
	&cached_l1_attr.attr, &cached_l2_attr.attr, &cached_l3_attr.attr,
	&cached_l4_attr.attr,
	&tables_l1_attr.attr, &tables_l2_attr.attr, &tables_l3_attr.attr,
	&tables_l4_attr.attr,
	NULL
};

static const struct attribute_group pib_group = { .attrs = pib_attrs };

/* stats/: one file per counter. */
static struct kobj_attribute pib_stat_list[PIB_NR_STATS];
static struct attribute *pib_stat_attrs[PIB_NR_STATS + 1];

static ssize_t pib_stat_show(struct kobject *k, struct kobj_attribute *a,
			     char *buf)
{
	return sysfs_emit(buf, "%ld\n",
			  atomic_long_read(&pib_stats[a - pib_stat_list]));
}

static const struct attribute_group pib_stat_group = {
	.name = "stats",
	.attrs = pib_stat_attrs,
};

/*
 * The backend's side of the same counts (the rule engine's), to check
 * against ours: tables pinned per level, semi-writable frames, ops and
 * batches it ran, ops it refused.
 */
static u64 pib_sum_ops(const struct kvm_pagetype_stats *st)
{
	u64 n = 0;
	int i;

	for (i = 0; i < KVM_PAGETYPE_NR_OPS; i++)
		n += st->ops[i];
	return n;
}

#define PIB_BACKEND_ATTR(name, expr)					\
static ssize_t backend_##name##_show(struct kobject *k,			\
				     struct kobj_attribute *a, char *buf) \
{									\
	struct kvm_pagetype_stats st;					\
									\
	pt_engine_stats(&pib_engine, &st);				\
	return sysfs_emit(buf, "%llu\n", (u64)(expr));			\
}									\
static struct kobj_attribute backend_##name##_attr =			\
	__ATTR(name, 0444, backend_##name##_show, NULL)

static struct kobj_attribute backend_name_attr =
	__ATTR(name, 0444, backend_name_show, NULL);
PIB_BACKEND_ATTR(tables_l1, st.pinned[0]);
PIB_BACKEND_ATTR(tables_l2, st.pinned[1]);
PIB_BACKEND_ATTR(tables_l3, st.pinned[2]);
PIB_BACKEND_ATTR(tables_l4, st.pinned[3]);
PIB_BACKEND_ATTR(semi, st.semi);
PIB_BACKEND_ATTR(batches, st.batches);
PIB_BACKEND_ATTR(op_errors, st.op_errors);
PIB_BACKEND_ATTR(ops, pib_sum_ops(&st));

static struct attribute *pib_backend_attrs[] = {
	&backend_name_attr.attr,
	&backend_tables_l1_attr.attr, &backend_tables_l2_attr.attr,
	&backend_tables_l3_attr.attr, &backend_tables_l4_attr.attr,
	&backend_semi_attr.attr,
	&backend_batches_attr.attr, &backend_op_errors_attr.attr,
	&backend_ops_attr.attr,
	NULL
};

/* With the host backend, its counts are the host's to give (debugfs). */
static umode_t pib_backend_visible(struct kobject *k, struct attribute *a,
				   int n)
{
	return !pib_host || a == &backend_name_attr.attr ? a->mode : 0;
}

static const struct attribute_group pib_backend_group = {
	.name = "backend",
	.attrs = pib_backend_attrs,
	.is_visible = pib_backend_visible,
};

static const struct attribute_group *pib_groups[] = {
	&pib_group, &pib_stat_group, &pib_backend_group, NULL
};

static struct kobject *pib_kobj;

/*
 * debugfs pibooster/frames: every frame the module holds or has pinned,
 * one per line: "<pfn> l<level> <state>", state table (writable before
 * the pin), table-semi, pending (freed, the kernel still holds it) or
 * cached.  For tests and debugging: which frames no device may reach.
 */
static int pib_frames_show(struct seq_file *m, void *unused)
{
	unsigned long pfn;

	for (pfn = 0; pfn < pib_nr_frames; pfn++) {
		u8 s = READ_ONCE(pib_state[pfn]);
		const char *what;

		if (!s)
			continue;
		if (s & PIB_S_CACHED)
			what = "cached";
		else if (s & PIB_S_PENDING)
			what = "pending";
		else if (s & PIB_S_ROOT)
			what = s & PIB_S_SEMI ? "root-semi" : "root";
		else if (s & PIB_S_TABLE)
			what = s & PIB_S_SEMI ? "table-semi" : "table";
		else
			continue;	/* in passing between two states */
		seq_printf(m, "%#lx l%u %s\n", pfn, s & PIB_S_LEVEL, what);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(pib_frames);

/* debugfs pibooster/latency: per level, "l<n> <allocs> <ns> <frees> <ns>". */
static int pib_latency_show(struct seq_file *m, void *unused)
{
	int i;

	for (i = 0; i < PIB_LEVELS; i++)
		seq_printf(m, "l%d %lld %lld %lld %lld\n", i + 1,
			   atomic64_read(&pib_lat[i].allocs),
			   atomic64_read(&pib_lat[i].alloc_ns),
			   atomic64_read(&pib_lat[i].frees),
			   atomic64_read(&pib_lat[i].free_ns));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(pib_latency);

/*
 * debugfs pibooster/bench: writing N times N allocations and N frees of
 * a table at each level through the module's own paths, in the mode it
 * is in: cache off, the page allocator and a pin, then an unpin and the
 * page allocator (the coarse path); cache on, a pop and a pin, then an
 * unpin and a push.  One frame per op batch, as a table costs without
 * the reaper's batching.  Reading gives the last run, per level:
 * "l<n> <coarse|pibooster> <N> <alloc ns> <free ns>" (means).
 */
#define PIB_BENCH_MAX		100000

struct pib_bench_row {
	u64 n, alloc_ns, free_ns;
};

static struct pib_bench_row pib_bench_rows[PIB_LEVELS];
static bool pib_bench_cache;
static DEFINE_MUTEX(pib_bench_lock);

static int pib_bench_run(unsigned int n, struct pib_batch *b)
{
	unsigned int i;
	int level;

	for (level = 1; level <= PIB_LEVELS; level++) {
		struct pib_bench_row *r = &pib_bench_rows[level - 1];

		memset(r, 0, sizeof(*r));
		for (i = 0; i < n; i++) {
			u64 t0 = ktime_get_ns(), t1;
			struct page *page;
			bool pinned;

			page = __pib_table_alloc(level, GFP_PGTABLE_USER);
			t1 = ktime_get_ns();
			if (!page)
				return -ENOMEM;
			pinned = pib_pinned(page);
			__pib_table_abandon(page, level, b);
			if (!pinned)
				return -EIO;	/* stats/errors says why */
			r->alloc_ns += t1 - t0;
			r->free_ns += ktime_get_ns() - t1;
			r->n++;
			cond_resched();
		}
	}
	return 0;
}

static ssize_t pib_bench_write(struct file *file, const char __user *ubuf,
			       size_t len, loff_t *ppos)
{
	struct pib_batch *b;
	unsigned int n;
	int ret;

	ret = kstrtouint_from_user(ubuf, len, 0, &n);
	if (ret)
		return ret;
	if (!n || n > PIB_BENCH_MAX)
		return -EINVAL;
	b = kmalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	mutex_lock(&pib_bench_lock);
	pib_bench_cache = READ_ONCE(pib_cache_on);
	ret = pib_bench_run(n, b);
	mutex_unlock(&pib_bench_lock);
	kfree(b);
	return ret ? ret : len;
}

static int pib_bench_show(struct seq_file *m, void *unused)
{
	int i;

	mutex_lock(&pib_bench_lock);
	for (i = 0; i < PIB_LEVELS; i++) {
		struct pib_bench_row *r = &pib_bench_rows[i];

		if (!r->n)
			continue;
		seq_printf(m, "l%d %s %llu %llu %llu\n", i + 1,
			   pib_bench_cache ? "pibooster" : "coarse", r->n,
			   div64_u64(r->alloc_ns, r->n),
			   div64_u64(r->free_ns, r->n));
	}
	mutex_unlock(&pib_bench_lock);
	return 0;
}

static int pib_bench_open(struct inode *inode, struct file *file)
{
	return single_open(file, pib_bench_show, NULL);
}

static const struct file_operations pib_bench_fops = {
	.owner = THIS_MODULE,
	.open = pib_bench_open,
	.read = seq_read,
	.write = pib_bench_write,
	.llseek = seq_lseek,
	.release = single_release,
};

static struct dentry *pib_debugfs;

/* ---- the pagetype device ---- */

static bool pib_probing;	/* only while the module loads */

/*
 * The host backend is chosen once, at load, before the hooks go on: the
 * types of every frame live on one side.  A device that appears later is
 * left alone.
 */
static int pib_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct pib_host *h;
	u32 magic, version, status;
	phys_addr_t db;
	int ret;

	if (!pib_probing || pib_host) {
		dev_info(&pdev->dev, "not used: pibooster chose its backend at load\n");
		return -EBUSY;
	}
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = pcim_iomap_regions(pdev, BIT(0), KBUILD_MODNAME);
	if (ret)
		return ret;
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		return -ENOMEM;
	h->regs = pcim_iomap_table(pdev)[0];
	magic = readl(h->regs + PAGETYPE_REG_MAGIC);
	version = readl(h->regs + PAGETYPE_REG_VERSION);
	if (magic != PAGETYPE_MAGIC || version != KVM_PAGETYPE_ABI_VERSION) {
		dev_err(&pdev->dev, "magic %#x, op set version %u: want %#x, %u\n",
			magic, version, PAGETYPE_MAGIC,
			KVM_PAGETYPE_ABI_VERSION);
		ret = -ENODEV;
		goto err_free;
	}
	ret = -ENOMEM;
	h->batch = (void *)get_zeroed_page(GFP_KERNEL);
	if (!h->batch)
		goto err_free;
	if (readl(h->regs + PAGETYPE_REG_FEATURES) & PAGETYPE_F_DOORBELL)
		h->doorbell = (void *)get_zeroed_page(GFP_KERNEL);
	if (h->doorbell) {
		db = virt_to_phys(h->doorbell);
		writel(lower_32_bits(db), h->regs + PAGETYPE_REG_DB_LO);
		writel(upper_32_bits(db), h->regs + PAGETYPE_REG_DB_HI);
		status = readl(h->regs + PAGETYPE_REG_STATUS);
		if (status) {
			dev_warn(&pdev->dev, "doorbell page refused (%u): the registers carry the batches\n",
				 status);
			free_page((unsigned long)h->doorbell);
			h->doorbell = NULL;
		}
	}
	mutex_init(&h->lock);
	h->pdev = pdev;
	pci_set_drvdata(pdev, h);
	pib_host = h;
	dev_info(&pdev->dev, "host backend: batches through the %s\n",
		 h->doorbell ? "doorbell page" : "registers");
	return 0;

err_free:
	kfree(h);
	return ret;
}

/*
 * The device is gone (unplugged, or the module unloads): no batch reaches
 * the host from here on; pins fail (tables go out unpinned) and frames
 * whose unpin fails stay out of use.  pib_host itself lives on until the
 * module's exit, the hooks may still look at it.
 */
static void pib_remove(struct pci_dev *pdev)
{
	struct pib_host *h = pci_get_drvdata(pdev);

	mutex_lock(&h->lock);
	h->dead = true;
	if (h->doorbell) {
		writel(~0U, h->regs + PAGETYPE_REG_DB_LO);
		writel(~0U, h->regs + PAGETYPE_REG_DB_HI);
		free_page((unsigned long)h->doorbell);
		h->doorbell = NULL;
	}
	free_page((unsigned long)h->batch);
	h->batch = NULL;
	mutex_unlock(&h->lock);
}

static const struct pci_device_id pib_ids[] = {
	{ PCI_DEVICE(PAGETYPE_PCI_VENDOR_ID, PAGETYPE_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, pib_ids);

static struct pci_driver pib_pci_driver = {
	.name = KBUILD_MODNAME,
	.id_table = pib_ids,
	.probe = pib_probe,
	.remove = pib_remove,
	.driver.suppress_bind_attrs = true,
};

/* ---- load and unload ---- */

static unsigned long pib_max_pfn(void)
{
	unsigned long end = 0;
	int nid;

	for_each_online_node(nid)
		end = max(end, pgdat_end_pfn(NODE_DATA(nid)));
	return end;
}

/*
 * Unload: the patch is off (livepatch will not let the module go before),
 * so no hook runs.  Wait for the tables the kernel was freeing through a
 * hook, then unpin whatever is still pinned and drop our references: the
 * kernel's tables stay the kernel's, unvalidated, as without the module.
 */
static void pib_drain(void)
{
	unsigned long deadline = jiffies + 10 * HZ, pfn;
	struct pib_batch *b;
	LIST_HEAD(ready);
	bool empty;
	int level, held;
	u32 n = 0;

	rcu_barrier();	/* mmu_gather's RCU-deferred table frees */
	for (;;) {
		pib_collect(&ready);
		pib_release_tables(&ready);
		spin_lock(&pib_pending_lock);
		empty = list_empty(&pib_pending);
		spin_unlock(&pib_pending_lock);
		if (empty)
			break;
		if (time_after(jiffies, deadline)) {
			pr_warn("tables still held by the kernel's mmu_gather\n");
			deadline = jiffies + 10 * HZ;
		}
		msleep(20);
	}
	/*
	 * The cache is off: every frame leaves writable.  A table the kernel
	 * still uses has no free list to ride on (its struct page is the
	 * kernel's): batch it by frame.  An L1 table or a root carries our
	 * reference, which goes with it.  An L2..L4 table does not, and the stock
	 * functions, back in place, may free it at any moment: convert the
	 * frame and leave the page alone.  Top level first: a table that a
	 * pinned table's entry references is busy at the host until that
	 * table is unpinned (tables are pinned bottom up, unpinned top down).
	 */
	b = kmalloc(sizeof(*b), GFP_KERNEL | __GFP_NOFAIL);
	for (level = PIB_LEVELS; level >= 1; level--) {
		for (held = 1; held >= 0; held--) {
			for (pfn = 0; pfn < pib_nr_frames; pfn++) {
				u8 s = READ_ONCE(pib_state[pfn]);

				if (!(s & PIB_S_TABLE) ||
				    (s & PIB_S_LEVEL) != level ||
				    pib_holds_ref(s) != held)
					continue;
				b->pages[n] = pfn_to_page(pfn);
				if (++n == KVM_PAGETYPE_MAX_BATCH) {
					pib_release_pages(b, n, !held);
					n = 0;
				}
			}
			if (n)
				pib_release_pages(b, n, !held);
			n = 0;
		}
	}
	kfree(b);
}

static int __init pib_init(void)
{
	int i, ret;

	pib_init_mm = init_task.active_mm;
	pib_nr_frames = pib_max_pfn();
	pib_state = vzalloc(pib_nr_frames);
	pib_shrink_batch = kmalloc(sizeof(*pib_shrink_batch), GFP_KERNEL);
	if (!pib_state || !pib_shrink_batch) {
		ret = -ENOMEM;
		goto err_free;
	}
	pib_probing = true;
	ret = pci_register_driver(&pib_pci_driver);
	pib_probing = false;
	if (ret)
		goto err_free;
	if (!pib_host) {
		/* as the QEMU device attaches: roots hold the kernel half */
		ret = pt_engine_init(&pib_engine, pib_nr_frames,
				     KVM_PAGETYPE_ATTACH_KERNEL_HALF,
				     &pib_local_env);
		if (ret)
			goto err_pci;
	}
	for (i = 0; i < PIB_LEVELS; i++) {
		spin_lock_init(&pib_levels[i].lock);
		pib_levels[i].limit = ULONG_MAX;
	}
	pib_kobj = kobject_create_and_add("pibooster", kernel_kobj);
	if (!pib_kobj) {
		ret = -ENOMEM;
		goto err_engine;
	}
	for (i = 0; i < PIB_NR_STATS; i++) {
		sysfs_attr_init(&pib_stat_list[i].attr);
		pib_stat_list[i].attr.name = pib_stat_names[i];
		pib_stat_list[i].attr.mode = 0444;
		pib_stat_list[i].show = pib_stat_show;
		pib_stat_attrs[i] = &pib_stat_list[i].attr;
	}
	ret = sysfs_create_groups(pib_kobj, pib_groups);
	if (ret)
		goto err_kobj;
	ret = register_shrinker(&pib_shrinker, "pibooster");
	if (ret)
		goto err_kobj;
	pib_debugfs = debugfs_create_dir("pibooster", NULL);
	debugfs_create_file("frames", 0400, pib_debugfs, NULL,
			    &pib_frames_fops);
	debugfs_create_file("latency", 0400, pib_debugfs, NULL,
			    &pib_latency_fops);
	debugfs_create_file("bench", 0600, pib_debugfs, NULL,
			    &pib_bench_fops);
	if (enable)
		pib_set_cache(true);
	pib_next_sweep = jiffies + PIB_SWEEP_DELAY;
	schedule_delayed_work(&pib_reaper, PIB_SWEEP_DELAY);
	ret = klp_enable_patch(&pib_patch);
	if (ret)
		goto err_reaper;
	if (pgtable_l5_enabled())
		pr_info("roots left to the kernel: under 5-level paging a root is an L5 table\n");
	else if (boot_cpu_has(X86_FEATURE_PTI))
		pr_info("roots left to the kernel: with page-table isolation a root is two tables\n");
	else
		pr_info("roots pinned at L4\n");
	if (pib_host)
		pr_info("page types kept by the host; cache %s, %lu frames\n",
			pib_cache_on ? "on" : "off", pib_nr_frames);
	else
		pr_info("no pagetype device: page types kept in the guest only (the host's rule engine runs here); cache %s, %lu frames\n",
			pib_cache_on ? "on" : "off", pib_nr_frames);
	return 0;

err_reaper:
	debugfs_remove(pib_debugfs);
	WRITE_ONCE(pib_stopping, true);
	cancel_delayed_work_sync(&pib_reaper);
	pib_set_cache(false);
	unregister_shrinker(&pib_shrinker);
err_kobj:
	kobject_put(pib_kobj);
err_engine:
	if (!pib_host)
		pt_engine_destroy(&pib_engine);
err_pci:
	pci_unregister_driver(&pib_pci_driver);
	kfree(pib_host);
	pib_host = NULL;
err_free:
	kfree(pib_shrink_batch);
	vfree(pib_state);
	return ret;
}

static void __exit pib_exit(void)
{
	WRITE_ONCE(pib_stopping, true);
	cancel_delayed_work_sync(&pib_reaper);
	debugfs_remove(pib_debugfs);
	kobject_put(pib_kobj);
	unregister_shrinker(&pib_shrinker);
	pib_set_cache(false);
	pib_drain();
	pr_info("unloaded: %ld pins, %ld unpins, %ld errors; %ld frames made semi-writable, %ld back\n",
		atomic_long_read(&pib_stats[PIB_PINS]),
		atomic_long_read(&pib_stats[PIB_UNPINS]),
		atomic_long_read(&pib_stats[PIB_ERRORS]),
		atomic_long_read(&pib_stats[PIB_TO_SEMI]),
		atomic_long_read(&pib_stats[PIB_TO_WRITABLE]));
	pci_unregister_driver(&pib_pci_driver);
	if (!pib_host)
		pt_engine_destroy(&pib_engine);
	kfree(pib_host);
	kfree(pib_shrink_batch);
	vfree(pib_state);
}

module_init(pib_init);
module_exit(pib_exit);
MODULE_INFO(livepatch, "Y");

#endif

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("PiBooster: a cache of semi-writable page-table frames");
