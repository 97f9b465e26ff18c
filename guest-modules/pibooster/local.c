// SPDX-License-Identifier: GPL-2.0
/*
 * pibooster's local backend, without the pagetype device: the host's rule
 * engine (kvm-pagetype/pt_rules.c) runs here on the guest's own frames,
 * so that every transition the cache makes is checked against the same
 * rules without a host.
 */
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/sysfs.h>

#include "pt_rules.h"
#include "pibooster.h"

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

static void pib_local_lock(void)
{
	pt_engine_lock(&pib_engine);
}

static bool pib_local_trylock(void)
{
	return mutex_trylock(&pib_engine.lock);
}

static void pib_local_unlock(void)
{
	pt_engine_unlock(&pib_engine);
}

static u32 pib_local_batch(struct kvm_pagetype_op *ops, u32 n)
{
	return pt_engine_batch_locked(&pib_engine, PT_NO_HOME, ops, n);
}

static ssize_t pib_local_name(char *buf)
{
	return sysfs_emit(buf, "local\n");
}

static void pib_local_stats(struct kvm_pagetype_stats *st)
{
	pt_engine_stats(&pib_engine, st);
}

static void pib_local_destroy(void)
{
	pt_engine_destroy(&pib_engine);
}

/* The load message's first part (docs/pibooster.md quotes it). */
static const char pib_local_kept[] =
	"no pagetype device: page types kept in the guest only (the host's rule engine runs here)";

static const struct pib_backend_ops pib_local_ops = {
	.lock = pib_local_lock,
	.trylock = pib_local_trylock,
	.unlock = pib_local_unlock,
	.batch = pib_local_batch,
	.name = pib_local_name,
	.stats = pib_local_stats,
	.kept = pib_local_kept,
	.destroy = pib_local_destroy,
};

int pib_local_init(void)
{
	/* as the QEMU device attaches: roots hold the kernel half */
	int ret = pt_engine_init(&pib_engine, pib_nr_frames,
				 KVM_PAGETYPE_ATTACH_KERNEL_HALF,
				 &pib_local_env);

	if (!ret)
		pib_backend = &pib_local_ops;
	return ret;
}
