// SPDX-License-Identifier: GPL-2.0
/*
 * debugfs: kvm_pagetype/global, the totals of every VM attached or
 * detached since the module loaded, and kvm_pagetype/vmN, one VM's
 * counters; the same struct kvm_pagetype_stats as GET_STATS, one
 * "name value" line per counter.
 */
#include <linux/debugfs.h>
#include <linux/kernel.h>
#include <linux/seq_file.h>

#include "kpt.h"

static struct dentry *kpt_debugfs;

static void kpt_stats_show(struct seq_file *m,
			   const struct kvm_pagetype_stats *s)
{
	static const char * const ops[KVM_PAGETYPE_NR_OPS] = {
		"null", "pin_l1", "pin_l2", "pin_l3", "pin_l4", "unpin",
		"to_semi", "to_writable", "set_mode", "query",
	};
	int i;

	for (i = 0; i < KVM_PAGETYPE_NR_OPS; i++)
		seq_printf(m, "op_%s %llu\n", ops[i], s->ops[i]);
	seq_printf(m, "op_errors %llu\nbatches %llu\nbatches_cut %llu\n",
		   s->op_errors, s->batches, s->batches_cut);
	seq_printf(m, "doorbells %llu\n", s->doorbells);
	seq_printf(m, "validations %llu\nwrites %llu\nwrite_updates %llu\n",
		   s->validations, s->writes, s->write_updates);
	seq_printf(m, "violations %llu\nkills %llu\nlast_kill %llu\n",
		   s->violations, s->kills, s->last_kill);
	for (i = 0; i < 4; i++)
		seq_printf(m, "pinned_l%d %llu\n", i + 1, s->pinned[i]);
	seq_printf(m, "semi %llu\nvms %llu\n", s->semi, s->vms);
	seq_printf(m, "dma_maps %llu\ndma_unmaps %llu\ndma_flushes %llu\n",
		   s->dma_maps, s->dma_unmaps, s->dma_flushes);
	seq_printf(m, "dma_pinned %llu\ndma_devices %llu\n", s->dma_pinned,
		   s->dma_devices);
	for (i = 0; i < 4; i++)
		seq_printf(m, "tables_l%d %llu\n", i + 1, s->tables[i]);
	seq_printf(m, "ref_validations %llu\ndevalidations %llu\n",
		   s->ref_validations, s->devalidations);
	seq_printf(m, "frames %llu\ngrown %llu\n", s->frames, s->grown);
}

static int kpt_vm_debugfs_show(struct seq_file *m, void *unused)
{
	struct kvm_pagetype_stats s;

	kpt_vm_stats(m->private, &s);
	kpt_stats_show(m, &s);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kpt_vm_debugfs);

static int kpt_global_debugfs_show(struct seq_file *m, void *unused)
{
	struct kvm_pagetype_stats s;

	kpt_global_stats(&s);
	kpt_stats_show(m, &s);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kpt_global_debugfs);

void kpt_debugfs_add_vm(struct kpt_vm *vm)
{
	char name[16];

	snprintf(name, sizeof(name), "vm%u", vm->id);
	vm->debugfs = debugfs_create_file(name, 0400, kpt_debugfs, vm,
					  &kpt_vm_debugfs_fops);
}

void kpt_debugfs_remove_vm(struct kpt_vm *vm)
{
	debugfs_remove_recursive(vm->debugfs);
}

void kpt_debugfs_init(void)
{
	kpt_debugfs = debugfs_create_dir("kvm_pagetype", NULL);
	debugfs_create_file("global", 0400, kpt_debugfs, NULL,
			    &kpt_global_debugfs_fops);
}

void kpt_debugfs_exit(void)
{
	debugfs_remove_recursive(kpt_debugfs);
}
