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
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/shrinker.h>
#include <linux/slab.h>

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

/* ---- the per-level caches: singly-linked by frame number ---- */

static unsigned long pib_level_limit(struct pib_level *l)
{
	return l->ratio ? atomic_long_read(&l->tables) * l->ratio / 100 :
			  l->limit;
}

/*
 * A cached frame is semi-writable: the guest may write it, no device may.
 * The list's link lives in the frame itself, so a push and a pop are a
 * few loads and stores under the level's lock.  A frame with a hardware
 * memory error is never cached: the caller gives it back, and the page
 * allocator keeps it out of use.
 */
bool pib_push(int level, struct page *page)
{
	struct pib_level *l = &pib_levels[level - 1];
	unsigned long pfn = page_to_pfn(page);
	bool ok;

	if (PageHWPoison(page)) {
		atomic_long_inc(&pib_stats[PIB_POISONED]);
		return false;
	}
	spin_lock(&l->lock);
	ok = pib_cache_on && !l->dropped && l->count < pib_level_limit(l);
	if (ok) {
		*(unsigned long *)page_address(page) = l->head;
		WRITE_ONCE(l->head, pfn + 1);	/* read unlocked by pib_pop() */
		l->count++;
		WRITE_ONCE(pib_state[pfn], PIB_S_CACHED | PIB_S_SEMI | level);
	}
	spin_unlock(&l->lock);
	return ok;
}

/* Some level has frames off its list: pib_cache_recover() has work. */
static atomic_t pib_cache_dropped;

/*
 * Under the level's lock: empty the list, leaving its n frames
 * PIB_S_CACHED and on no list; the level takes no push until
 * pib_cache_recover() has given them back.
 */
static void pib_drop_list(struct pib_level *l, unsigned long n)
{
	WRITE_ONCE(l->head, 0);
	l->count = 0;
	if (!n)
		return;
	l->dropped = true;
	atomic_set(&pib_cache_dropped, 1);
	atomic_long_add(n, &pib_stats[PIB_DROPPED]);
}

/*
 * Whether @link, read from the head of a level's list of @count frames,
 * is one the list can hold: 0 at the last frame only, else a frame the
 * module has cached at that level.  A frame is written by the guest
 * while it is cached (it is semi-writable), so its link is checked
 * before it is followed.
 */
static bool pib_link_ok(unsigned long link, unsigned long count, int level)
{
	if (!link)
		return count == 1;
	return count > 1 && link - 1 < pib_nr_frames &&
	       READ_ONCE(pib_state[link - 1]) ==
	       (PIB_S_CACHED | PIB_S_SEMI | level);
}

static noinline struct page *pib_pop_locked(struct pib_level *l, int level)
{
	unsigned long pfn, link;
	struct page *page;

	spin_lock(&l->lock);
	pfn = l->head;
	if (!pfn) {		/* emptied since pib_pop() looked */
		spin_unlock(&l->lock);
		return NULL;
	}
	pfn--;
	page = pfn_to_page(pfn);
	if (PageHWPoison(page)) {
		/* Not handed out; its link is not read, so the rest goes too. */
		atomic_long_inc(&pib_stats[PIB_POISONED]);
		pib_drop_list(l, l->count);
		spin_unlock(&l->lock);
		return NULL;
	}
	WRITE_ONCE(pib_state[pfn], PIB_S_SEMI | level);
	link = *(unsigned long *)page_address(page);
	if (pib_link_ok(link, l->count, level)) {
		WRITE_ONCE(l->head, link);
		l->count--;
	} else {
		atomic_long_inc(&pib_stats[PIB_BAD_LINKS]);
		pr_warn_once("bad link %#lx in cached L%d frame %#lx: the %lu frames after it are given back\n",
			     link, level, pfn, l->count - 1);
		pib_drop_list(l, l->count - 1);
	}
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
noinline struct page *pib_pop(int level)
{
	struct pib_level *l = &pib_levels[level - 1];

	if (!READ_ONCE(l->head))
		return NULL;
	return pib_pop_locked(l, level);
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
 * backend keeps semi-writable stays ours, on no list.
 */
static void pib_give_back(struct pib_batch *b, u32 k, bool locked)
{
	u32 i;

	if (locked)
		pib_run_locked(b->ops, k);
	else
		pib_run(b->ops, k);
	for (i = 0; i < k; i++)
		if (!b->ops[i].result)
			pib_free_frame(b->pages[i]);
}

/*
 * Give back up to n cached frames of a level to the page allocator, in
 * batches of TO_WRITABLE conversions; locked: the caller holds the
 * backend's lock.  Returns how many went.
 */
static unsigned long pib_release_cached(struct pib_batch *b, int level,
					unsigned long n, bool locked)
{
	unsigned long done = 0;
	u32 k;

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
		pib_give_back(b, k, locked);
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

unsigned long pib_cached_total(void)
{
	unsigned long n = 0;
	int i;

	for (i = 0; i < PIB_LEVELS; i++)
		n += READ_ONCE(pib_levels[i].count);
	return n;
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
 * Give back the frames that a bad link or a poisoned frame cut off their
 * level's list (pib_drop_list()): every frame still PIB_S_CACHED at a
 * level marked dropped, since such a level's list is empty and takes no
 * push until this is done.  From the reaper, once a second, and at
 * unload; a walk of every frame, only after a drop.
 */
void pib_cache_recover(void)
{
	bool dropped[PIB_LEVELS];
	struct pib_batch *b;
	unsigned long pfn;
	u32 n = 0;
	int i;

	if (!atomic_read(&pib_cache_dropped))
		return;
	b = kmalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return;		/* the next sweep tries again */
	/* A drop from here on sets it again: a full barrier first. */
	atomic_xchg(&pib_cache_dropped, 0);
	for (i = 0; i < PIB_LEVELS; i++) {
		spin_lock(&pib_levels[i].lock);
		dropped[i] = pib_levels[i].dropped;
		spin_unlock(&pib_levels[i].lock);
	}
	for (pfn = 0; pfn < pib_nr_frames; pfn++) {
		u8 s = READ_ONCE(pib_state[pfn]);

		pib_walk_resched(pfn);
		if (!(s & PIB_S_CACHED) || !dropped[(s & PIB_S_LEVEL) - 1])
			continue;
		WRITE_ONCE(pib_state[pfn], s & ~PIB_S_CACHED);
		b->pages[n] = pfn_to_page(pfn);
		pib_op(&b->ops[n], KVM_PAGETYPE_OP_TO_WRITABLE, pfn);
		if (++n == KVM_PAGETYPE_MAX_BATCH) {
			pib_give_back(b, n, false);
			n = 0;
		}
	}
	if (n)
		pib_give_back(b, n, false);
	for (i = 0; i < PIB_LEVELS; i++) {
		if (!dropped[i])
			continue;
		spin_lock(&pib_levels[i].lock);
		pib_levels[i].dropped = false;
		spin_unlock(&pib_levels[i].lock);
	}
	kfree(b);
}

/*
 * For tests only (debugfs pibooster/test_corrupt_link): store @link as
 * the link word of the first cached frame of @level, as a stray write to
 * a semi-writable frame would.  -ENOENT: the level is empty.
 */
int pib_cache_corrupt_link(int level, unsigned long link)
{
	struct pib_level *l;
	int ret = -ENOENT;

	if (level < 1 || level > PIB_LEVELS)
		return -EINVAL;
	l = &pib_levels[level - 1];
	spin_lock(&l->lock);
	if (l->head) {
		*(unsigned long *)page_address(pfn_to_page(l->head - 1)) = link;
		ret = 0;
	}
	spin_unlock(&l->lock);
	return ret;
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
			n = DIV_ROUND_UP(READ_ONCE(pib_levels[i].count) * val,
					 100);
			pib_release_cached_alloc(i + 1, n);
		}
		return;
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
			struct page *page = alloc_page(GFP_KERNEL);

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
		pib_release_cached(b, i + 1, ULONG_MAX, false);
out:
	mutex_unlock(&pib_mode_lock);
	kfree(b);
	return 0;
}

/* ---- the shrinker ---- */

static unsigned long pib_shrink_count(struct shrinker *s,
				      struct shrink_control *sc)
{
	return pib_cached_total() ?: SHRINK_EMPTY;
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
					    sc->nr_to_scan - freed, true);
	pib_backend->unlock();
	mutex_unlock(&pib_shrink_lock);
	atomic_long_add(freed, &pib_stats[PIB_SHRINKER_FREED]);
	return freed ?: SHRINK_STOP;
}

static struct shrinker pib_shrinker = {
	.count_objects = pib_shrink_count,
	.scan_objects = pib_shrink_scan,
	.seeks = DEFAULT_SEEKS,
};

/* The levels empty, no threshold, the cache off; the shrinker on. */
int pib_cache_init(void)
{
	int i, ret;

	for (i = 0; i < PIB_LEVELS; i++) {
		spin_lock_init(&pib_levels[i].lock);
		pib_levels[i].limit = ULONG_MAX;
	}
	pib_shrink_batch = kmalloc(sizeof(*pib_shrink_batch), GFP_KERNEL);
	if (!pib_shrink_batch)
		return -ENOMEM;
	ret = register_shrinker(&pib_shrinker, "pibooster");
	if (ret)
		kfree(pib_shrink_batch);
	return ret;
}

/*
 * The shrinker off, then the cache: every cached frame goes back, those
 * cut off a list too.
 */
void pib_cache_exit(void)
{
	unregister_shrinker(&pib_shrinker);
	pib_set_cache(false);
	pib_cache_recover();
	kfree(pib_shrink_batch);
}
