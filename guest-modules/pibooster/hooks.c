// SPDX-License-Identifier: GPL-2.0
/*
 * pibooster's livepatch: the kernel's page-table functions (6.1's and
 * 6.12's: the same code but for compat.h's constructors) with the cache
 * in them.  A table comes from pib_table_alloc() (the cache or the page
 * allocator, pinned) and a freed one goes to pib_table_freeing() (the
 * reaper takes it back).  The klp_func table at the end names what each
 * hook replaces.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/livepatch.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/srcu.h>
#include <asm/paravirt.h>
#include <asm/pgalloc.h>

#include "compat.h"
#include "pibooster.h"

/*
 * asm/tlb.h, for struct mmu_gather's mm: its tlb_flush(), unused here,
 * calls a function asm/tlbflush.h declares for built-in code only.
 */
void flush_tlb_mm_range(struct mm_struct *mm, unsigned long start,
			unsigned long end, unsigned int stride_shift,
			bool freed_tables);
#include <asm/tlb.h>

static pgtable_t pib_pte_alloc_one(struct mm_struct *mm)
{
	struct page *page = pib_table_alloc(mm, 1, GFP_PGTABLE_USER);

	if (!page)
		return NULL;
	if (!pib_pte_ctor(page)) {
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
	if (!pib_pmd_ctor(page)) {
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
		pib_pmd_dtor(virt_to_page(new));
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
	pib_pud_ctor(page);
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
	if (new) {	/* another thread populated it */
		pib_pud_dtor(page);
		pib_table_abandon(page, 3);
	}
	return 0;
}

static void pib___pte_free_tlb(struct mmu_gather *tlb, struct page *pte)
{
	pib_pte_dtor(pte);
	paravirt_release_pte(page_to_pfn(pte));
	pib_table_freeing(pte);
	paravirt_tlb_remove_table(tlb, pte);
}

static void pib___pmd_free_tlb(struct mmu_gather *tlb, pmd_t *pmd)
{
	struct page *page = virt_to_page(pmd);

	paravirt_release_pmd(__pa(pmd) >> PAGE_SHIFT);
	pib_pmd_dtor(page);
	pib_table_freeing(page);
	paravirt_tlb_remove_table(tlb, page);
}

static void pib___pud_free_tlb(struct mmu_gather *tlb, pud_t *pud)
{
	struct page *page = virt_to_page(pud);

	paravirt_release_pud(__pa(pud) >> PAGE_SHIFT);
	pib_pud_dtor(page);
	pib_table_freeing(page);
	paravirt_tlb_remove_table(tlb, page);
	/* Its entry in the root is cleared: was it the root's last? */
	pib_root_emptied(tlb->mm);
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
	pib_tables_patched();
	if (pib_roots_only)
		pr_info("every task on the hooks: roots pinned from now on\n");
	else
		pr_info("every task on the hooks: new tables pinned (%ld before left to the kernel)\n",
			atomic_long_read(&pib_stats[PIB_EARLY]));
}

/* The module is being disabled: hand tables out unpinned from now on. */
static void pib_pre_unpatch(struct klp_object *obj)
{
	pib_tables_unpatching();
}

static struct klp_object pib_objs[] = {
	{ .funcs = pib_funcs,		/* vmlinux */
	  .callbacks = { .post_patch = pib_post_patch,
			 .pre_unpatch = pib_pre_unpatch } },
	{ }
};

static struct klp_patch pib_patch = {
	.mod = THIS_MODULE,
	.objs = pib_objs,
};

int pib_hooks_enable(void)
{
	return klp_enable_patch(&pib_patch);
}
