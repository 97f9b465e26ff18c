// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/debug/pibooster: the frames the module holds (frames), the
 * time per level of the hooks' allocations and frees (latency), a
 * microbenchmark of the module's own paths (bench), the frames cached for
 * the reader's memory cgroup (memcg_cached), and a fault injector for
 * tests (test_refuse_pins).
 */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <asm/pgalloc.h>

#include "pibooster.h"

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

		pib_walk_resched(pfn);
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

/* A test file's write, as a string in buf (size bytes). */
static int pib_test_line(char *buf, size_t size, const char __user *ubuf,
			 size_t len)
{
	if (len >= size)
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;
	return 0;
}

/*
 * debugfs pibooster/memcg_cached: per level, "l<n> <frames>", the frames
 * cached for the reader's memory cgroup: those its tasks' allocations
 * take, charged to it.
 */
static int pib_memcg_cached_show(struct seq_file *m, void *unused)
{
	int level;

	for (level = 1; level <= PIB_LEVELS; level++)
		seq_printf(m, "l%d %lu\n", level, pib_cached_here(level));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(pib_memcg_cached);

/*
 * debugfs pibooster/test_refuse_pins, for tests only: writing "PID N"
 * refuses the next N pins of tables of process PID as a host out of
 * memory would (stats/refused).
 */
static ssize_t pib_refuse_write(struct file *file, const char __user *ubuf,
				size_t len, loff_t *ppos)
{
	char buf[48];
	int pid, n, ret;

	ret = pib_test_line(buf, sizeof(buf), ubuf, len);
	if (ret)
		return ret;
	if (sscanf(buf, "%d %d", &pid, &n) != 2 || pid <= 0 || n < 0)
		return -EINVAL;
	pib_test_refuse_pins(pid, n);
	return len;
}

static const struct file_operations pib_refuse_fops = {
	.owner = THIS_MODULE,
	.write = pib_refuse_write,
	.llseek = noop_llseek,
};

static struct dentry *pib_debugfs;

void pib_debugfs_init(void)
{
	pib_debugfs = debugfs_create_dir("pibooster", NULL);
	debugfs_create_file("frames", 0400, pib_debugfs, NULL,
			    &pib_frames_fops);
	debugfs_create_file("latency", 0400, pib_debugfs, NULL,
			    &pib_latency_fops);
	debugfs_create_file("bench", 0600, pib_debugfs, NULL,
			    &pib_bench_fops);
	debugfs_create_file("memcg_cached", 0444, pib_debugfs, NULL,
			    &pib_memcg_cached_fops);
	debugfs_create_file("test_refuse_pins", 0200, pib_debugfs, NULL,
			    &pib_refuse_fops);
}

void pib_debugfs_exit(void)
{
	debugfs_remove(pib_debugfs);
}
