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
 * at its level before the kernel links it in (with pin=roots only roots
 * are, and the host validates the tables below them by reference).  A
 * freed table is unpinned, and goes back to the cache or to the page
 * allocator, only once the kernel has dropped its last reference to the
 * page: the module holds a reference of its own, so the moment the kernel
 * would have freed the page (after the mmu_gather's TLB flush and the RCU
 * deferral of table freeing) is the moment the count falls to ours.
 * docs/pibooster.md explains the design, the sysfs interface and what is
 * not covered yet.
 *
 * The op batches go to a backend, chosen once at load: the host, through
 * the pagetype device (host.c), or, without the device, the page-type
 * rule engine the host module runs (kvm-pagetype/pt_rules.c), run in the
 * guest on the guest's own frames (local.c), so that every transition the
 * cache makes is checked against the same rules without a host.
 *
 * This file: the batch call, load and unload.  pibooster.h says which
 * file holds which job.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/livepatch.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include "pibooster.h"

static bool enable = true;
module_param(enable, bool, 0444);
MODULE_PARM_DESC(enable, "enable the cache at load (else coarse: hooks only; never with pin=roots)");

/*
 * pin=all: every table is pinned as it is allocated.  pin=roots: only
 * roots are; a table below one is handed out as the stock kernel's, and
 * the host validates it by reference when a store links it under a
 * validated table, and drops it when the entry goes (Xen's
 * get_page_type() and put_page_type()).  Read-only: which tables are
 * ours must not change while they live.
 */
bool pib_roots_only __read_mostly;

static int pib_pin_set(const char *val, const struct kernel_param *kp)
{
	if (sysfs_streq(val, "all"))
		pib_roots_only = false;
	else if (sysfs_streq(val, "roots"))
		pib_roots_only = true;
	else
		return -EINVAL;
	return 0;
}

static int pib_pin_get(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%s\n",
			 pib_roots_only ? "roots" : "all");
}

static const struct kernel_param_ops pib_pin_ops = {
	.set = pib_pin_set,
	.get = pib_pin_get,
};
module_param_cb(pin, &pib_pin_ops, NULL, 0444);
MODULE_PARM_DESC(pin, "all: every table pinned (default); roots: roots only, the tables below validated by the host by reference");

/* Chosen at load, before the hooks go on: pib_backend_init(). */
const struct pib_backend_ops *pib_backend __read_mostly;
u8 *pib_state;
unsigned long pib_nr_frames;
struct mm_struct *pib_init_mm;
atomic_long_t pib_stats[PIB_NR_STATS];

/* ---- the batch call ---- */

/*
 * Run count ops under the backend's lock; each op's result is in its
 * result field.  A batch the rules cut short at their work bound is
 * resubmitted from where it stopped.  Ops the backend did not run (it
 * ran none: the device is gone or the kernel going down, or the host
 * failed the batch) get R_SKIPPED.
 */
static void pib_submit_locked(struct kvm_pagetype_op *ops, u32 count)
{
	u32 done = 0, ran;

	while (done < count) {
		ran = pib_backend->batch(ops + done, count - done);
		atomic_long_inc(&pib_stats[PIB_BATCHES]);
		if (!ran)
			break;
		done += ran;
	}
	for (; done < count; done++)
		ops[done].result = KVM_PAGETYPE_R_SKIPPED;
}

void pib_op(struct kvm_pagetype_op *op, u16 code, u64 arg)
{
	memset(op, 0, sizeof(*op));
	op->code = code;
	op->arg = arg;
}

/*
 * Whether an UNPIN that succeeded left the frame writable.  The host drops
 * only the pin's reference: a table that another table's entry still
 * points at stays a table, and its frame must never be reused.
 */
bool pib_unpin_freed(const struct kvm_pagetype_op *op)
{
	return !op->result && !(op->out & KVM_PAGETYPE_TYPE_MASK);
}

static void pib_count_op(const struct kvm_pagetype_op *op)
{
	/*
	 * Only a pin that validates tables below it meets the host's bound:
	 * a root with more tables below it than one op may validate
	 * (pin=roots), which stays the kernel's (root.c).
	 */
	if (op->result == KVM_PAGETYPE_R_LIMIT) {
		atomic_long_inc(&pib_stats[PIB_LIMITED]);
		return;
	}
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

/* Each op in the counter of what it did (stats/), or in stats/errors. */
void pib_count_ops(const struct kvm_pagetype_op *ops, u32 count)
{
	u32 i;

	for (i = 0; i < count; i++)
		pib_count_op(&ops[i]);
}

/* Run count ops and count them; the caller holds the backend's lock. */
void pib_run_locked(struct kvm_pagetype_op *ops, u32 count)
{
	pib_submit_locked(ops, count);
	pib_count_ops(ops, count);
}

/* Run count ops and count them. */
void pib_run(struct kvm_pagetype_op *ops, u32 count)
{
	pib_backend->lock();
	pib_run_locked(ops, count);
	pib_backend->unlock();
}

/*
 * Run count ops and leave the counting to the caller: for a result that
 * is retried rather than counted (pib_pin()).
 */
void __pib_run(struct kvm_pagetype_op *ops, u32 count)
{
	pib_backend->lock();
	pib_submit_locked(ops, count);
	pib_backend->unlock();
}

/* ---- load and unload ---- */

/*
 * The backend is chosen once, at load, before the hooks go on: the types
 * of every frame live on one side.  The PCI driver stays registered with
 * either backend (a device that appears later is turned away).
 */
static int pib_backend_init(void)
{
	int ret = pib_host_init();

	if (ret || pib_backend)
		return ret;
	ret = pib_local_init();
	if (ret)
		pib_host_exit();
	return ret;
}

static void pib_backend_exit(void)
{
	pib_host_exit();
	pib_backend->destroy();
	pib_backend = NULL;
}

/* Why roots stay the kernel's on this machine; NULL if they need not. */
static const char *pib_roots_refused(void)
{
	if (pgtable_l5_enabled())
		return "under 5-level paging a root is an L5 table";
	if (boot_cpu_has(X86_FEATURE_PTI))
		return "with page-table isolation a root is two tables";
	return NULL;
}

/*
 * pin=roots where no root can be pinned, or where no link is validated,
 * would leave every table unchecked: refused.
 */
static int pib_pin_check(void)
{
	const char *why = pib_roots_refused();

	if (!pib_roots_only)
		return 0;
	if (!why && !pib_backend->validates_links)
		why = "the local backend sees no store that links a table";
	if (!why)
		return 0;
	pr_err("pin=roots refused: %s\n", why);
	return -EINVAL;
}

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
	int level, held;
	u32 n = 0;

	rcu_barrier();	/* mmu_gather's RCU-deferred table frees */
	while (!pib_release_pending()) {
		if (time_after(jiffies, deadline)) {
			pr_warn("tables still held by the kernel's mmu_gather\n");
			deadline = jiffies + 10 * HZ;
		}
		msleep(20);
	}
	/*
	 * The cache is off: every frame leaves writable.  A table the kernel
	 * still uses has no free list to ride on (its struct page is the
	 * kernel's): batch it by frame.  pib_tables_unpatching() unpinned
	 * every live table before the first task left the hooks; what is
	 * left is an L1 table and a table claimed for its unpin whose unpin
	 * failed (kept, PIB_S_PENDING: the reference is still ours), which
	 * carry our reference, which goes with the frame once its unpin
	 * succeeds (pib_holds_ref()), and, should the host have run no op
	 * at pre_unpatch, live L2..L4 tables without one, which the stock
	 * functions may free at any moment: convert the frame and leave the
	 * page alone.  Top level first: a table that a pinned table's entry
	 * references is busy at the host until that table is unpinned
	 * (tables are pinned bottom up, unpinned top down).  A frame whose
	 * unpin fails here too stays a table at the host and is never given
	 * back.
	 */
	b = kmalloc(sizeof(*b), GFP_KERNEL | __GFP_NOFAIL);
	for (level = PIB_LEVELS; level >= 1; level--) {
		for (held = 1; held >= 0; held--) {
			for (pfn = 0; pfn < pib_nr_frames; pfn++) {
				u8 s = READ_ONCE(pib_state[pfn]);

				pib_walk_resched(pfn);
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
	int ret;

	pib_init_mm = init_task.active_mm;
	pib_nr_frames = pib_max_pfn();
	pib_state = vzalloc(pib_nr_frames);
	if (!pib_state)
		return -ENOMEM;
	ret = pib_backend_init();
	if (ret)
		goto err_free;
	ret = pib_pin_check();
	if (ret)
		goto err_backend;
	ret = pib_cache_init();
	if (ret)
		goto err_backend;
	ret = pib_sysfs_init();
	if (ret)
		goto err_cache;
	pib_debugfs_init();
	if (enable && !pib_roots_only)
		pib_set_cache(true);
	pib_reaper_start();
	ret = pib_hooks_enable();
	if (ret)
		goto err_reaper;
	if (pib_roots_refused())
		pr_info("roots left to the kernel: %s\n", pib_roots_refused());
	else if (pib_roots_only)
		pr_info("roots pinned at L4, the tables below them validated by the host by reference (pin=roots)\n");
	else
		pr_info("roots pinned at L4\n");
	pr_info("%s; cache %s, %lu frames\n", pib_backend->kept,
		pib_cache_on ? "on" : "off", pib_nr_frames);
	return 0;

err_reaper:
	pib_reaper_stop();
	pib_debugfs_exit();
	pib_sysfs_exit();
err_cache:
	pib_cache_exit();
err_backend:
	pib_backend_exit();
err_free:
	vfree(pib_state);
	return ret;
}

static void __exit pib_exit(void)
{
	pib_reaper_stop();
	pib_debugfs_exit();
	pib_sysfs_exit();
	pib_cache_exit();
	pib_drain();
	pr_info("unloaded: %ld pins, %ld unpins, %ld errors; %ld frames made semi-writable, %ld back\n",
		atomic_long_read(&pib_stats[PIB_PINS]),
		atomic_long_read(&pib_stats[PIB_UNPINS]),
		atomic_long_read(&pib_stats[PIB_ERRORS]),
		atomic_long_read(&pib_stats[PIB_TO_SEMI]),
		atomic_long_read(&pib_stats[PIB_TO_WRITABLE]));
	pib_backend_exit();
	vfree(pib_state);
}

module_init(pib_init);
module_exit(pib_exit);
MODULE_INFO(livepatch, "Y");
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("PiBooster: a cache of semi-writable page-table frames");
