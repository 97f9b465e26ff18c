/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What pibooster calls that differs between the two kernels it is built
 * for (Kbuild builds the stub, unsupported.c, for any other): Linux 6.1
 * (Debian 12) and 6.12 (Debian 13, and bookworm-backports).  Between them:
 *
 *   - a page table is described by a struct ptdesc over its struct page,
 *     and the constructors and destructors take one (pagetable_*_ctor());
 *   - an L3 (pud) table has a constructor and a destructor too: it is
 *     counted in NR_PAGETABLE and typed PG_table, as L1 and L2 tables
 *     were already (6.1 allocates it as a plain zeroed page);
 *   - a shrinker is allocated by the kernel (shrinker_alloc()), which
 *     gives it its memcg id there, and registered separately;
 *   - list_lru_add() names the node and cgroup, list_lru_add_obj() finds
 *     them from the object as 6.1's list_lru_add() did;
 *   - pages a shrinker frees outside the LRUs are counted to the reclaim
 *     under way by mm_account_reclaimed_pages(), where 6.1's reclaim
 *     counted its reclaim_state's reclaimed_slab.
 *
 * The table destructors run where they did: in the ___p?d_free_tlb()
 * functions the hooks replace, before the table goes to the mmu_gather;
 * and the mmu_gather frees tables as 6.1's did.
 */
#ifndef PIBOOSTER_COMPAT_H
#define PIBOOSTER_COMPAT_H

#include <linux/list_lru.h>
#include <linux/mm.h>
#include <linux/shrinker.h>
#include <linux/slab.h>
#include <linux/swap.h>
#include <linux/version.h>

#if KERNEL_VERSION(6, 12, 0) <= LINUX_VERSION_CODE

static inline bool pib_pte_ctor(struct page *page)
{
	return pagetable_pte_ctor(page_ptdesc(page));
}

static inline void pib_pte_dtor(struct page *page)
{
	pagetable_pte_dtor(page_ptdesc(page));
}

static inline bool pib_pmd_ctor(struct page *page)
{
	return pagetable_pmd_ctor(page_ptdesc(page));
}

static inline void pib_pmd_dtor(struct page *page)
{
	pagetable_pmd_dtor(page_ptdesc(page));
}

static inline void pib_pud_ctor(struct page *page)
{
	pagetable_pud_ctor(page_ptdesc(page));
}

static inline void pib_pud_dtor(struct page *page)
{
	pagetable_pud_dtor(page_ptdesc(page));
}

static inline struct shrinker *pib_shrinker_alloc(unsigned int flags,
						  const char *name)
{
	return shrinker_alloc(flags, "%s", name);
}

/* Its memcg id is the one shrinker_alloc() gave it. */
static inline int pib_shrinker_register(struct shrinker *s)
{
	shrinker_register(s);
	return 0;
}

static inline void pib_shrinker_free(struct shrinker *s)
{
	shrinker_free(s);
}

static inline bool pib_list_lru_add(struct list_lru *lru,
				    struct list_head *item)
{
	return list_lru_add_obj(lru, item);
}

static inline void pib_account_reclaimed(unsigned long pages)
{
	mm_account_reclaimed_pages(pages);
}

#else	/* 6.1 */

static inline bool pib_pte_ctor(struct page *page)
{
	return pgtable_pte_page_ctor(page);
}

static inline void pib_pte_dtor(struct page *page)
{
	pgtable_pte_page_dtor(page);
}

static inline bool pib_pmd_ctor(struct page *page)
{
	return pgtable_pmd_page_ctor(page);
}

static inline void pib_pmd_dtor(struct page *page)
{
	pgtable_pmd_page_dtor(page);
}

/* An L3 table is a plain page on 6.1. */
static inline void pib_pud_ctor(struct page *page)
{
}

static inline void pib_pud_dtor(struct page *page)
{
}

/*
 * The shrinker is ours to allocate; its name is its debugfs entry's,
 * given at registration, which also gives it its memcg id.
 */
struct pib_shrinker {
	struct shrinker s;
	const char *name;
};

static inline struct shrinker *pib_shrinker_alloc(unsigned int flags,
						  const char *name)
{
	struct pib_shrinker *p = kzalloc(sizeof(*p), GFP_KERNEL);

	if (!p)
		return NULL;
	p->s.flags = flags;
	p->s.seeks = DEFAULT_SEEKS;
	p->name = name;
	return &p->s;
}

static inline int pib_shrinker_register(struct shrinker *s)
{
	return register_shrinker(s, "%s",
				 container_of(s, struct pib_shrinker, s)->name);
}

/* Registered or not (unregister_shrinker() tells), or NULL. */
static inline void pib_shrinker_free(struct shrinker *s)
{
	if (!s)
		return;
	unregister_shrinker(s);
	kfree(container_of(s, struct pib_shrinker, s));
}

static inline bool pib_list_lru_add(struct list_lru *lru,
				    struct list_head *item)
{
	return list_lru_add(lru, item);
}

static inline void pib_account_reclaimed(unsigned long pages)
{
	if (current->reclaim_state)
		current->reclaim_state->reclaimed_slab += pages;
}

#endif

#endif
