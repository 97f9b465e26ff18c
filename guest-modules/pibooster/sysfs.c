// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/pibooster: the cache's switch, threshold and shrink, its
 * levels (cached_lN, tables_lN), the module's counters (stats/), and the
 * backend's name and counts (backend/).  docs/pibooster.md describes each
 * file.
 */
#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "pibooster.h"

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
	[PIB_BY_REF] = "by_ref",
	[PIB_LIMITED] = "limited",
	[PIB_EARLY] = "early",
	[PIB_HELD] = "held",
	[PIB_POISONED] = "poisoned",
	[PIB_UNLISTED] = "unlisted",
	[PIB_REFUSED] = "refused",
};

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

	/* pin=roots: no table is pinned that a cached frame could serve */
	if (!ret && on && pib_roots_only)
		ret = -EINVAL;
	if (!ret)
		ret = pib_set_cache(on);
	return ret ?: len;
}

static ssize_t backend_name_show(struct kobject *k, struct kobj_attribute *a,
				 char *buf)
{
	return pib_backend->name(buf);
}

/* Release n frames, from the fullest level first; 0: all of them. */
static ssize_t shrink_store(struct kobject *k, struct kobj_attribute *a,
			    const char *buf, size_t len)
{
	unsigned long val;
	bool percent;
	int ret;

	ret = pib_parse(buf, &val, &percent);
	if (ret)
		return ret;
	pib_cache_shrink(val, percent);
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
	int ret;

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
	pib_cache_set_threshold(val, percent);
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

PIB_LEVEL_ATTR(cached_l1, 1, atomic_long_read(&l->count));
PIB_LEVEL_ATTR(cached_l2, 2, atomic_long_read(&l->count));
PIB_LEVEL_ATTR(cached_l3, 3, atomic_long_read(&l->count));
PIB_LEVEL_ATTR(cached_l4, 4, atomic_long_read(&l->count));
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
	pib_backend->stats(&st);					\
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

/* A backend without counts of its own to give has only its name here. */
static umode_t pib_backend_visible(struct kobject *k, struct attribute *a,
				   int n)
{
	return pib_backend->stats || a == &backend_name_attr.attr ? a->mode : 0;
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

int pib_sysfs_init(void)
{
	int i, ret;

	pib_kobj = kobject_create_and_add("pibooster", kernel_kobj);
	if (!pib_kobj)
		return -ENOMEM;
	for (i = 0; i < PIB_NR_STATS; i++) {
		sysfs_attr_init(&pib_stat_list[i].attr);
		pib_stat_list[i].attr.name = pib_stat_names[i];
		pib_stat_list[i].attr.mode = 0444;
		pib_stat_list[i].show = pib_stat_show;
		pib_stat_attrs[i] = &pib_stat_list[i].attr;
	}
	ret = sysfs_create_groups(pib_kobj, pib_groups);
	if (ret)
		kobject_put(pib_kobj);
	return ret;
}

void pib_sysfs_exit(void)
{
	kobject_put(pib_kobj);
}
