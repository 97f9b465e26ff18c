// SPDX-License-Identifier: GPL-2.0
/*
 * pibooster's roots (pgd): pinned at L4 before the first L3 table is
 * linked into one, unpinned when its user half empties.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <asm/pgalloc.h>

#include "pibooster.h"

/*
 * The root.  Under 4-level paging the pgd is an L4 table, but pgd_alloc()
 * and pgd_free() cannot be replaced from a module: they fill and empty
 * pgd_list under pgd_lock, neither exported.  So a root is pinned just
 * before the first table is linked into it (the first __pud_alloc() of an
 * mm: the p4d level is folded into the pgd), and unpinned when its user
 * half empties (the hook that frees its last L3 table, in exit_mmap() at
 * the latest), while the kernel still has it: pgd_free() then frees a
 * frame the host has forgotten, whole.  (Holding a reference on the page
 * instead would split pgd_free()'s order-1 block, which is charged to the
 * mm's memory cgroup as one: a page of charge would outlive every root.)
 * A root whose user half already points at tables we did not pin (an mm
 * from before the module) stays the kernel's; with pin=roots, where no
 * table below a root is ours, the host validates them by reference at
 * the pin instead, unless there are more than it validates in one op.
 * With page-table isolation on, a root is two tables (the user half is
 * the second page): roots are left to the kernel then.
 */
bool pib_roots __read_mostly;
static DEFINE_MUTEX(pib_root_lock);

/* Held across a walk of every root (pib_unpin_live()). */
void pib_roots_lock(void)
{
	mutex_lock(&pib_root_lock);
}

void pib_roots_unlock(void)
{
	mutex_unlock(&pib_root_lock);
}

/*
 * Whether a root's user half lets it be pinned: with pin=all only if
 * every L3 table it points at is one we pinned; with pin=roots whatever
 * it holds, which the host validates by reference at the pin.
 */
static bool pib_root_pinnable(pgd_t *pgd)
{
	unsigned int i;

	if (pib_roots_only)
		return true;
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

void pib_root_pin(struct mm_struct *mm)
{
	struct page *page = virt_to_page(mm->pgd);
	unsigned long pfn = page_to_pfn(page);
	u8 semi = 0;
	u16 r;

	if (pfn >= pib_nr_frames || (READ_ONCE(pib_state[pfn]) & PIB_S_TABLE))
		return;
	mutex_lock(&pib_root_lock);
	if ((READ_ONCE(pib_state[pfn]) & PIB_S_TABLE) || !READ_ONCE(pib_roots) ||
	    !pib_root_pinnable(mm->pgd))
		goto out;
	r = pib_pin(pfn, 4, &semi);
	if (r == KVM_PAGETYPE_R_LIMIT) {
		/*
		 * pin=roots: more tables below it than one op validates
		 * (stats/limited).  This root stays the kernel's; the next
		 * __pud_alloc() of its mm tries again.
		 */
		goto out;
	}
	if (r) {
		/* The rules refuse this kernel's roots: stop trying. */
		WRITE_ONCE(pib_roots, false);
		pr_warn("a root was refused: roots left to the kernel from now on\n");
		goto out;
	}
	atomic_long_inc(&pib_levels[3].tables);
	atomic_long_inc(&pib_stats[PIB_ROOTS]);
	WRITE_ONCE(pib_state[pfn], PIB_S_TABLE | PIB_S_ROOT | semi | 4);
out:
	mutex_unlock(&pib_root_lock);
}

static bool pib_root_empty(pgd_t *pgd)
{
	unsigned int i;

	for (i = 0; i < KERNEL_PGD_BOUNDARY; i++)
		if (READ_ONCE(pgd[i].pgd) & _PAGE_PRESENT)
			return false;
	return true;
}

/*
 * Unpin the claimed roots b->pages[0..n): the caller holds pib_root_lock,
 * so no pgd_free() can be past the hook that empties one.  A root the
 * host does not let go of whole (unpin or conversion refused) is kept out
 * of use with a reference.
 */
void pib_root_unpin(struct pib_batch *b, u32 n)
{
	u32 i;

	pib_release_pages(b, n, true);
	for (i = 0; i < n; i++) {
		if (READ_ONCE(pib_state[page_to_pfn(b->pages[i])]))
			get_page(b->pages[i]);
		else
			atomic_long_inc(&pib_stats[PIB_ROOTS_FREED]);
	}
}

/*
 * A hook freed one of @mm's L3 tables, its entry in the root already
 * cleared: if that was the last, unpin the root before pgd_free() can
 * give its frame back.  The next __pud_alloc() pins it again.
 */
void pib_root_emptied(struct mm_struct *mm)
{
	struct page *page = virt_to_page(mm->pgd);
	unsigned long pfn = page_to_pfn(page);
	struct pib_batch *b;
	u8 s;

	if (mm == pib_init_mm || pfn >= pib_nr_frames ||
	    !(READ_ONCE(pib_state[pfn]) & PIB_S_ROOT))
		return;
	mutex_lock(&pib_root_lock);
	s = READ_ONCE(pib_state[pfn]);
	if ((s & PIB_S_ROOT) && pib_root_empty(mm->pgd) && pib_claim(pfn, s)) {
		b = kmalloc(sizeof(*b), GFP_KERNEL | __GFP_NOFAIL);
		b->pages[0] = page;
		pib_root_unpin(b, 1);
		kfree(b);
	}
	mutex_unlock(&pib_root_lock);
}
