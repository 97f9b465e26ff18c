// SPDX-License-Identifier: GPL-2.0
/*
 * pibooster's per-level caches of semi-writable frames: push and pop,
 * filling them, releasing frames to the page allocator (thresholds,
 * sysfs shrink, the shrinker), and the switch between the cache on
 * (PiBooster's fine-grained mode) and off (coarse).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/gfp.h>
#include <linux/kernel.h>
#include <linux/list_lru.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched/mm.h>
#include <linux/shrinker.h>
#include <linux/slab.h>

#include "compat.h"
#include "pibooster.h"

/*
 * The cache is filled in one batch that starts with the SET_MODE op:
 * at most (KVM_PAGETYPE_MAX_BATCH - 1) / PIB_LEVELS frames per level.
 */
#define PIB_FILL_MAX	((KVM_PAGETYPE_MAX_BATCH - 1) / PIB_LEVELS)

static unsigned int fill = 48;

static int pib_fill_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;
	int ret = kstrtouint(val, 0, &n);

	if (ret)
		return ret;
	if (n > PIB_FILL_MAX)
		return -EINVAL;
	WRITE_ONCE(fill, n);
	return 0;
}

static const struct kernel_param_ops pib_fill_ops = {
	.set = pib_fill_set,
	.get = param_get_uint,
};
module_param_cb(fill, &pib_fill_ops, &fill, 0644);
MODULE_PARM_DESC(fill, "frames per level put in the cache when it is enabled (the four levels and SET_MODE fit one batch)");

struct pib_level pib_levels[PIB_LEVELS];

static DEFINE_MUTEX(pib_mode_lock);	/* pib_cache_on transitions */
bool pib_cache_on;			/* read under a level lock too */

static DEFINE_MUTEX(pib_shrink_lock);	/* pib_shrink_batch */
static struct pib_batch *pib_shrink_batch;

/* ---- the per-level caches: one list per memory cgroup ---- */

/*
 * A cached frame is listed by a descriptor of ours, never by a word in
 * the frame: the frame is semi-writable, the guest kernel's to write.
 * The descriptor is charged to the memory cgroup the frame is charged to,
 * which puts it on that cgroup's list of the level's list_lru; an
 * uncharged frame's (a root cgroup's table, a frame with no accounting)
 * goes on the lru's global list, the root cgroup's.
 */
struct pib_cached {
	struct list_head lru;
	struct page *page;
};

static struct kmem_cache *pib_cached_cache;

static unsigned long pib_level_limit(struct pib_level *l)
{
	return l->ratio ? atomic_long_read(&l->tables) * l->ratio / 100 :
			  l->limit;
}

/*
 * The descriptor of @page for @l's list_lru, or NULL: not to be cached.
 * A charged frame's descriptor is allocated in its cgroup's name
 * (set_active_memcg()) from the lru-aware allocator, which gives the lru
 * that cgroup's list first: pib_list_lru_add() then files the descriptor
 * where pib_pop() of a task in that cgroup looks.  GFP_NOWAIT: a cgroup
 * at its limit, or a kernel short of memory, caches nothing more (the
 * frame goes back, its charge with it), and a push never enters reclaim,
 * whose shrinker is this cache's.  A frame whose cgroup is going away is
 * given back too.
 */
static struct pib_cached *pib_cached_alloc(struct pib_level *l,
					   struct page *page)
{
	const gfp_t gfp = GFP_NOWAIT | __GFP_NOWARN;
	struct mem_cgroup *memcg, *old;
	struct pib_cached *c;

	rcu_read_lock();
	memcg = folio_memcg(page_folio(page));
	if (memcg && !css_tryget(&memcg->css)) {
		rcu_read_unlock();
		return NULL;
	}
	rcu_read_unlock();
	if (!memcg)
		return kmem_cache_alloc(pib_cached_cache, gfp);
	old = set_active_memcg(memcg);
	c = kmem_cache_alloc_lru(pib_cached_cache, &l->lru,
				 gfp | __GFP_ACCOUNT);
	set_active_memcg(old);
	mem_cgroup_put(memcg);
	return c;
}

/*
 * A cached frame is semi-writable: the guest may write it, no device may.
 * A frame with a hardware memory error is never cached: the caller gives
 * it back, and the page allocator keeps it out of use.
 */
bool pib_push(int level, struct page *page)
{
	struct pib_level *l = &pib_levels[level - 1];
	unsigned long pfn = page_to_pfn(page);
	struct pib_cached *c;
	bool ok;

	if (PageHWPoison(page)) {
		atomic_long_inc(&pib_stats[PIB_POISONED]);
		return false;
	}
	if (!READ_ONCE(pib_cache_on))
		return false;
	c = pib_cached_alloc(l, page);
	if (!c) {
		atomic_long_inc(&pib_stats[PIB_UNLISTED]);
		return false;
	}
	c->page = page;
	INIT_LIST_HEAD(&c->lru);	/* the lru add takes an unlisted item */
	spin_lock(&l->lock);
	ok = pib_cache_on &&
	     atomic_long_read(&l->count) < pib_level_limit(l);
	if (ok) {
		WRITE_ONCE(pib_state[pfn], PIB_S_CACHED | PIB_S_SEMI | level);
		atomic_long_inc(&l->count);
		pib_list_lru_add(&l->lru, &c->lru);
	}
	spin_unlock(&l->lock);
	if (!ok)
		kmem_cache_free(pib_cached_cache, c);
	return ok;
}

/* list_lru walk: take the first descriptor (pib_pop()) or every one. */
static enum lru_status pib_take(struct list_head *item,
				struct list_lru_one *list, spinlock_t *lock,
				void *arg)
{
	list_lru_isolate_move(list, item, arg);
	return LRU_REMOVED;
}

/*
 * A descriptor taken off its list (freed here): its frame, no longer
 * cached, semi-writable.
 */
static struct page *pib_uncache(struct pib_level *l, struct pib_cached *c,
				int level)
{
	struct page *page = c->page;

	list_del(&c->lru);
	kmem_cache_free(pib_cached_cache, c);
	atomic_long_dec(&l->count);
	WRITE_ONCE(pib_state[page_to_pfn(page)], PIB_S_SEMI | level);
	return page;
}

/*
 * The memory cgroup a table allocated now is charged to, as the page
 * allocator's __GFP_ACCOUNT finds it: the active one if set, else the
 * task's.  The root's (or none, memory cgroups off) names the lru's
 * global list, where the uncharged frames are.  Under rcu_read_lock().
 */
static struct mem_cgroup *pib_charged_memcg(void)
{
	if (mem_cgroup_disabled())
		return NULL;
	if (current->active_memcg)
		return current->active_memcg;
	return mem_cgroup_from_task(current);
}

static bool pib_take_one(struct pib_level *l, int nid,
			 struct mem_cgroup *memcg, struct list_head *got)
{
	unsigned long one = 1;

	return list_lru_walk_one(&l->lru, nid, memcg, pib_take, got, &one);
}

/*
 * A frame of the allocating task's cgroup: from this node's list, else
 * another node's.  Frames of other cgroups are not taken, so a hit is
 * charged to the cgroup that allocates, as a miss would be.
 */
static noinline struct page *pib_pop_memcg(struct pib_level *l, int level)
{
	int here = numa_node_id(), nid;
	struct kvm_pagetype_op op;
	struct mem_cgroup *memcg;
	struct pib_cached *c;
	struct page *page;
	LIST_HEAD(got);

	rcu_read_lock();
	memcg = pib_charged_memcg();
	if (!pib_take_one(l, here, memcg, &got))
		for_each_node_state(nid, N_NORMAL_MEMORY)
			if (nid != here && pib_take_one(l, nid, memcg, &got))
				break;
	rcu_read_unlock();
	c = list_first_entry_or_null(&got, struct pib_cached, lru);
	if (!c)
		return NULL;
	page = pib_uncache(l, c, level);
	if (PageHWPoison(page)) {
		/* Not handed out: back, and the page allocator keeps it. */
		atomic_long_inc(&pib_stats[PIB_POISONED]);
		pib_op(&op, KVM_PAGETYPE_OP_TO_WRITABLE, page_to_pfn(page));
		pib_run(&op, 1);
		if (!op.result)
			pib_free_frame(page);
		return NULL;
	}
	return page;
}

/*
 * An empty level is seen without a lock: a miss costs a call, a load and
 * a test on top of the page allocator's path.  Out of line, and apart
 * from the lru walk (whose registers would be saved first), so that
 * those instructions are few and can be counted in the module's
 * disassembly (tests/bench/pibooster-misspath.py, in make bench).  A
 * level with frames of other cgroups only costs the walk of one empty
 * list more.
 */
noinline struct page *pib_pop(int level)
{
	struct pib_level *l = &pib_levels[level - 1];

	if (!atomic_long_read(&l->count))
		return NULL;
	return pib_pop_memcg(l, level);
}

/* A frame the module no longer uses goes back to the page allocator. */
void pib_free_frame(struct page *page)
{
	WRITE_ONCE(pib_state[page_to_pfn(page)], 0);
	put_page(page);
}

/*
 * Convert the batch's k frames back to writable and give them to the page
 * allocator; locked: the caller holds the backend's lock.  A frame the
 * backend keeps semi-writable stays ours, on no list.  Returns how many
 * went to the page allocator.
 */
static u32 pib_give_back(struct pib_batch *b, u32 k, bool locked)
{
	u32 i, freed = 0;

	if (locked)
		pib_run_locked(b->ops, k);
	else
		pib_run(b->ops, k);
	for (i = 0; i < k; i++) {
		if (!b->ops[i].result) {
			pib_free_frame(b->pages[i]);
			freed++;
		}
	}
	return freed;
}

/*
 * Take up to n descriptors of @l off their lists onto @got: the shrinker's
 * node and cgroup only (sc), else any.  Returns how many.
 */
static unsigned long pib_isolate(struct pib_level *l, struct shrink_control *sc,
				 unsigned long n, struct list_head *got)
{
	if (sc)
		return list_lru_walk_one(&l->lru, sc->nid, sc->memcg, pib_take,
					 got, &n);
	return list_lru_walk(&l->lru, pib_take, got, n);
}

/*
 * Give back up to n cached frames of a level to the page allocator, in
 * batches of TO_WRITABLE conversions: of the shrinker's node and cgroup
 * (sc), else of any; locked: the caller holds the backend's lock.
 * Returns how many left the cache.  For the shrinker, the frames freed
 * are counted to the reclaim that called it: without them, reclaim that
 * only the cache can satisfy sees no progress, and an allocation that
 * waits on it goes to the OOM killer with the frames already free.
 */
static unsigned long pib_release_cached(struct pib_batch *b, int level,
					unsigned long n,
					struct shrink_control *sc, bool locked)
{
	struct pib_level *l = &pib_levels[level - 1];
	unsigned long done = 0, freed = 0, got_n;
	struct pib_cached *c, *t;
	LIST_HEAD(got);
	u32 k;

	while (done < n) {
		got_n = pib_isolate(l, sc, min_t(unsigned long, n - done,
						 KVM_PAGETYPE_MAX_BATCH), &got);
		if (!got_n)
			break;
		k = 0;
		/* a poisoned frame too: the page allocator keeps it */
		list_for_each_entry_safe(c, t, &got, lru) {
			struct page *page = pib_uncache(l, c, level);

			b->pages[k] = page;
			pib_op(&b->ops[k++], KVM_PAGETYPE_OP_TO_WRITABLE,
			       page_to_pfn(page));
		}
		if (k)
			freed += pib_give_back(b, k, locked);
		done += got_n;
	}
	if (sc)
		pib_account_reclaimed(freed);
	atomic_long_add(done, &pib_stats[PIB_RELEASED]);
	return done;
}

static unsigned long pib_release_cached_alloc(int level, unsigned long n)
{
	struct pib_batch *b = kmalloc(sizeof(*b), GFP_KERNEL);
	unsigned long done;

	if (!b)
		return 0;
	done = pib_release_cached(b, level, n, NULL, false);
	kfree(b);
	return done;
}

unsigned long pib_cached_total(void)
{
	unsigned long n = 0;
	int i;

	for (i = 0; i < PIB_LEVELS; i++)
		n += atomic_long_read(&pib_levels[i].count);
	return n;
}

/* A level's frames cached for the current task's memory cgroup. */
unsigned long pib_cached_here(int level)
{
	struct list_lru *lru = &pib_levels[level - 1].lru;
	unsigned long n = 0;
	int nid;

	rcu_read_lock();
	for_each_node_state(nid, N_NORMAL_MEMORY)
		n += list_lru_count_one(lru, nid, pib_charged_memcg());
	rcu_read_unlock();
	return n;
}

/* Bring every level down to its threshold. */
static void pib_enforce_limits(void)
{
	int i;

	for (i = 0; i < PIB_LEVELS; i++) {
		struct pib_level *l = &pib_levels[i];
		unsigned long count = atomic_long_read(&l->count);
		unsigned long limit = pib_level_limit(l);

		if (count > limit)
			pib_release_cached_alloc(i + 1, count - limit);
	}
}

/*
 * Per level: at most val cached frames (ULONG_MAX: no limit), or, with
 * percent, val% of its tables in use.
 */
void pib_cache_set_threshold(unsigned long val, bool percent)
{
	int i;

	for (i = 0; i < PIB_LEVELS; i++) {
		spin_lock(&pib_levels[i].lock);
		pib_levels[i].ratio = percent ? val : 0;
		pib_levels[i].limit = percent ? ULONG_MAX : val;
		spin_unlock(&pib_levels[i].lock);
	}
	pib_enforce_limits();
}

/*
 * Release val frames, from the fullest level first, or, with percent,
 * val% of each level's (0%: none); a plain 0: all of them.
 */
void pib_cache_shrink(unsigned long val, bool percent)
{
	unsigned long n;
	int i;

	if (!val && !percent) {
		for (i = 0; i < PIB_LEVELS; i++)
			pib_release_cached_alloc(i + 1, ULONG_MAX);
		return;
	}
	if (percent) {
		for (i = 0; i < PIB_LEVELS; i++) {
			n = DIV_ROUND_UP(atomic_long_read(&pib_levels[i].count) * val,
					 100);
			pib_release_cached_alloc(i + 1, n);
		}
		return;
	}
	while (val) {
		int big = 0;

		for (i = 1; i < PIB_LEVELS; i++)
			if (atomic_long_read(&pib_levels[i].count) >
			    atomic_long_read(&pib_levels[big].count))
				big = i;
		n = pib_release_cached_alloc(big + 1, val);
		if (!n)
			break;
		val -= n;
	}
}

/*
 * Fill every level with up to fill fresh frames in one batch, which
 * starts with the caller's ops (first of them).
 */
static void pib_fill(struct pib_batch *b, u32 first)
{
	unsigned int per_level = READ_ONCE(fill);
	u32 end[PIB_LEVELS], n = first, i;
	int level;

	/* pib_fill_set() bounds fill; the one op before is SET_MODE */
	BUILD_BUG_ON(1 + PIB_LEVELS * PIB_FILL_MAX > KVM_PAGETYPE_MAX_BATCH);

	for (level = 1; level <= PIB_LEVELS; level++) {
		unsigned int k;

		for (k = 0; k < per_level; k++) {
			/* charged to the cgroup turning the cache on */
			struct page *page = alloc_page(GFP_KERNEL_ACCOUNT);

			if (!page)
				break;
			if (page_to_pfn(page) < pib_nr_frames)
				pib_forget_stale(page);
			b->pages[n] = page;
			pib_op(&b->ops[n], KVM_PAGETYPE_OP_TO_SEMI,
			       page_to_pfn(page));
			n++;
		}
		end[level - 1] = n;	/* the level's frames end here */
	}
	pib_run(b->ops, n);
	for (i = first, level = 1; i < n; i++) {
		struct page *page = b->pages[i];

		while (i >= end[level - 1])
			level++;
		if (b->ops[i].result) {
			put_page(page);
			continue;
		}
		if (pib_push(level, page))
			continue;
		/* Over the threshold already: straight back. */
		pib_op(&b->ops[0], KVM_PAGETYPE_OP_TO_WRITABLE,
		       page_to_pfn(page));
		pib_run(b->ops, 1);
		if (!b->ops[0].result)
			put_page(page);
	}
}

/*
 * The cache on (PiBooster: fine-grained mode, a filled cache) or off
 * (coarse: every table pins and unpins writable <-> table, and the cache
 * is released in one batch per 256 frames).
 */
int pib_set_cache(bool on)
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
	for (i = 0; i < PIB_LEVELS; i++)
		pib_release_cached(b, i + 1, ULONG_MAX, NULL, false);
out:
	mutex_unlock(&pib_mode_lock);
	kfree(b);
	return 0;
}

/* ---- the shrinker ---- */

/* The levels' lrus are set up (they need the shrinker's id first). */
static bool pib_lrus_ready;

/*
 * Per node and memory cgroup, as the lrus are: a cgroup's reclaim (its
 * limit reached, memory.reclaim) gives back that cgroup's frames.
 */
static unsigned long pib_shrink_count(struct shrinker *s,
				      struct shrink_control *sc)
{
	unsigned long n = 0;
	int i;

	/* pairs with pib_cache_init(): the lrus' setup seen first */
	if (!smp_load_acquire(&pib_lrus_ready))
		return 0;
	for (i = 0; i < PIB_LEVELS; i++)
		n += list_lru_shrink_count(&pib_levels[i].lru, sc);
	return n ?: SHRINK_EMPTY;
}

/*
 * Inside reclaim: no allocation, and no waiting for the backend, whose
 * holder may be the task reclaiming (a pin allocates its shadow).
 */
static unsigned long pib_shrink_scan(struct shrinker *s,
				     struct shrink_control *sc)
{
	unsigned long freed = 0;
	int i;

	if (!mutex_trylock(&pib_shrink_lock))
		return SHRINK_STOP;
	if (!pib_backend->trylock()) {
		mutex_unlock(&pib_shrink_lock);
		return SHRINK_STOP;
	}
	for (i = PIB_LEVELS - 1; i >= 0 && freed < sc->nr_to_scan; i--)
		freed += pib_release_cached(pib_shrink_batch, i + 1,
					    sc->nr_to_scan - freed, sc, true);
	pib_backend->unlock();
	mutex_unlock(&pib_shrink_lock);
	atomic_long_add(freed, &pib_stats[PIB_SHRINKER_FREED]);
	return freed ?: SHRINK_STOP;
}

static struct shrinker *pib_shrinker;

static void pib_cache_free(int lrus)
{
	while (lrus--)
		list_lru_destroy(&pib_levels[lrus].lru);
	kmem_cache_destroy(pib_cached_cache);
	kfree(pib_shrink_batch);
}

/* The levels empty, no threshold, the cache off; the shrinker on. */
int pib_cache_init(void)
{
	int i, ret;

	pib_shrink_batch = kmalloc(sizeof(*pib_shrink_batch), GFP_KERNEL);
	pib_cached_cache = KMEM_CACHE(pib_cached, 0);
	pib_shrinker = pib_shrinker_alloc(SHRINKER_NUMA_AWARE |
					  SHRINKER_MEMCG_AWARE, "pibooster");
	if (!pib_shrink_batch || !pib_cached_cache || !pib_shrinker) {
		pib_shrinker_free(pib_shrinker);
		pib_cache_free(0);
		return -ENOMEM;
	}
	pib_shrinker->count_objects = pib_shrink_count;
	pib_shrinker->scan_objects = pib_shrink_scan;
	/* the lrus are tied to the shrinker's memcg id: 6.1 gives it here */
	ret = pib_shrinker_register(pib_shrinker);
	if (ret) {
		pib_shrinker_free(pib_shrinker);
		pib_cache_free(0);
		return ret;
	}
	for (i = 0; i < PIB_LEVELS; i++) {
		spin_lock_init(&pib_levels[i].lock);
		pib_levels[i].limit = ULONG_MAX;
		ret = list_lru_init_memcg(&pib_levels[i].lru, pib_shrinker);
		if (ret) {
			pib_shrinker_free(pib_shrinker);
			pib_cache_free(i);
			return ret;
		}
	}
	/* pairs with pib_shrink_count(): the lrus set up before this */
	smp_store_release(&pib_lrus_ready, true);
	return 0;
}

/* The shrinker off, then the cache: every cached frame goes back. */
void pib_cache_exit(void)
{
	pib_shrinker_free(pib_shrinker);
	pib_set_cache(false);
	pib_cache_free(PIB_LEVELS);
}
