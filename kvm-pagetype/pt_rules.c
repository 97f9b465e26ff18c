// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The page-type rule engine (see pt_rules.h and docs/pagetype.md).
 *
 * Every guest frame has a type word.  A frame starts writable with type
 * count 0.  It becomes a level-n table by reference, as in Xen's
 * get_page_type(): when a pin, or an entry of a validated table, needs it
 * as level n while it is writable with count 0, its 512 entries are
 * validated, each taking a reference on what it points at, and it takes
 * that reference.  Pinning is one more reference (MMUEXT_PIN); removing
 * an entry or unpinning drops one, and the last one devalidates the table:
 * its entries' references go (which can cascade down the tree), tracking
 * stops, and the frame is writable again.
 *
 * Validation recurses at most three levels down, and one op or trapped
 * write validates at most KVM_PAGETYPE_VALIDATE_MAX tables (validate_left);
 * a devalidation undoes what validations did before it, no more.
 */
#include "pt_rules.h"

#define SHIFT_2M	9
#define PT_REGION_MAX	((u32)~0U)
#define SHIFT_1G	18

static u64 entry_gfn(u64 entry)
{
	return (entry & PT_ADDR_MASK) >> 12;
}

static bool entry_is_leaf(int level, u64 entry)
{
	return level == 1 || ((level == 2 || level == 3) && (entry & PT_PS));
}

static u32 word_make(u32 type, u32 flags, u32 count)
{
	return (type << KVM_PAGETYPE_TYPE_SHIFT) | flags | count;
}

/* A writable reference: the frame is mapped writable by a table. */
static u16 writable_get(struct pt_engine *e, u64 gfn)
{
	u32 w = e->word[gfn];

	if (pt_type(w) != KVM_PAGETYPE_WRITABLE)
		return KVM_PAGETYPE_R_TYPE;
	if (pt_count(w) == KVM_PAGETYPE_COUNT_MASK)
		return KVM_PAGETYPE_R_OVERFLOW;
	e->word[gfn] = w + 1;
	return KVM_PAGETYPE_R_OK;
}

static void writable_put(struct pt_engine *e, u64 gfn)
{
	/* Only references writable_get took come back here: never below 0. */
	if (pt_count(e->word[gfn]))
		e->word[gfn]--;
}

static u16 table_get(struct pt_engine *e, u64 gfn, int level, bool pin);
static void table_put(struct pt_engine *e, u64 gfn);
static bool engine_covers(struct pt_engine *e, u64 gfn);

/* A superpage leaf: the shift of its span in frames, or 0 if misaligned. */
static unsigned int superpage_shift(int level, u64 entry)
{
	unsigned int shift = level == 2 ? SHIFT_2M : SHIFT_1G;
	/* Bit 12 is PAT; the bits between it and the base are reserved. */
	u64 reserved = GENMASK_ULL(11 + shift, 13);

	return (entry & reserved) ? 0 : shift;
}

/*
 * Validate one present entry of a level-n table and take the references
 * it needs.  index is its slot, for the kernel-half exception.
 */
static u16 entry_get(struct pt_engine *e, int level, unsigned int index,
		     u64 entry)
{
	u64 gfn = entry_gfn(entry);
	u32 *tables, *writable;
	unsigned int shift;
	u64 base;

	if (!(entry & PT_P))
		return KVM_PAGETYPE_R_OK;
	if (level == 4 && (entry & PT_PS))
		return KVM_PAGETYPE_R_BADENTRY;

	if (level == 1) {
		/* Not guest RAM: the guest's own I/O space (docs/pagetype.md). */
		if (!engine_covers(e, gfn))
			return KVM_PAGETYPE_R_OK;
		if (!(entry & PT_RW))
			return KVM_PAGETYPE_R_OK;
		return writable_get(e, gfn);
	}

	if (entry_is_leaf(level, entry)) {
		shift = superpage_shift(level, entry);
		if (!shift)
			return KVM_PAGETYPE_R_BADENTRY;
		base = gfn >> shift;
		if (!engine_covers(e, base << shift))
			return KVM_PAGETYPE_R_OK;	/* I/O space, as above */
		/* Part RAM, part not: no such mapping is legitimate. */
		if (!engine_covers(e, ((base + 1) << shift) - 1))
			return KVM_PAGETYPE_R_RANGE;
		if (!(entry & PT_RW))
			return KVM_PAGETYPE_R_OK;
		tables = shift == SHIFT_2M ? e->tables_2m : e->tables_1g;
		writable = shift == SHIFT_2M ? e->writable_2m : e->writable_1g;
		if (tables[base])
			return KVM_PAGETYPE_R_TYPE;
		/* Wrapped to 0, it would let a table appear under the leaf. */
		if (writable[base] == PT_REGION_MAX)
			return KVM_PAGETYPE_R_OVERFLOW;
		writable[base]++;
		return KVM_PAGETYPE_R_OK;
	}

	if (!engine_covers(e, gfn))
		return KVM_PAGETYPE_R_RANGE;
	if (level == 4 && index >= PT_ENTRIES / 2 &&
	    (e->flags & KVM_PAGETYPE_ATTACH_KERNEL_HALF) &&
	    pt_type(e->word[gfn]) == KVM_PAGETYPE_WRITABLE)
		return writable_get(e, gfn);
	return table_get(e, gfn, level - 1, false);
}

/* Drop what entry_get took for an entry it accepted. */
static void entry_put(struct pt_engine *e, int level, u64 entry)
{
	u64 gfn = entry_gfn(entry);
	unsigned int shift;

	if (!(entry & PT_P))
		return;
	/* An I/O mapping (beyond the frames covered) took nothing. */
	if (level == 1) {
		if ((entry & PT_RW) && gfn < e->nr_frames)
			writable_put(e, gfn);
		return;
	}
	if (entry_is_leaf(level, entry)) {
		shift = superpage_shift(level, entry);
		if (!(entry & PT_RW) || (gfn >> shift) << shift >= e->nr_frames)
			return;
		if (shift == SHIFT_2M)
			e->writable_2m[gfn >> shift]--;
		else
			e->writable_1g[gfn >> shift]--;
		return;
	}
	/* A kernel-half entry holds a writable reference, others a table's. */
	if (pt_type(e->word[gfn]) == KVM_PAGETYPE_WRITABLE)
		writable_put(e, gfn);
	else
		table_put(e, gfn);
}

/*
 * DMA rights follow the type, in every mode: a device may reach a frame
 * only while it is writable and not semi-writable.  So writable -> table
 * and writable -> semi-writable revoke them, the way back grants them, and
 * semi-writable <-> table changes nothing.  A revoke comes before the
 * change takes effect (before the frame is even read for validation: a
 * DMA write after the read would not be seen by any check), a grant after.
 *
 * writable -> table (a coarse pin) revokes at once: one IOTLB flush per
 * frame, Xen's cost.  writable -> semi-writable revokes lazily: the
 * batch's conversions share one flush, made before the batch returns or
 * before a pin validates anything, whichever comes first.  Until then
 * the frame is semi-writable for the rules but nothing may rely on it
 * being unreachable, and nothing does: only a pin does, and it syncs.
 */
static bool word_dma_ok(u32 w)
{
	return pt_type(w) == KVM_PAGETYPE_WRITABLE && !(w & KVM_PAGETYPE_SEMI);
}

bool pt_engine_dma_ok_locked(struct pt_engine *e, u64 gfn)
{
	return gfn < e->nr_frames && word_dma_ok(e->word[gfn]);
}

static int dma_set(struct pt_engine *e, u64 gfn, int how)
{
	int ret;

	if (!e->env->dma)
		return 0;
	ret = e->env->dma(e->env->priv, gfn, how);
	if (!ret && how == PT_DMA_REVOKE_LAZY)
		e->dma_pending = true;
	return ret;
}

static void dma_sync(struct pt_engine *e)
{
	if (!e->dma_pending)
		return;
	e->dma_pending = false;
	if (e->env->dma_sync)
		e->env->dma_sync(e->env->priv);
}

static void region_tables_add(struct pt_engine *e, u64 gfn, int delta)
{
	e->tables_2m[gfn >> SHIFT_2M] += delta;
	e->tables_1g[gfn >> SHIFT_1G] += delta;
}

/*
 * Whether the tables are at their bound (pt_engine_set_table_bound()):
 * a table's shadow is a page of kernel memory the guest makes the host
 * hold.
 */
static bool engine_full(struct pt_engine *e)
{
	u64 tables = 0;
	int i;

	if (!e->table_pct)
		return false;
	for (i = 0; i < 4; i++)
		tables += e->stats.tables[i];
	return tables >= e->nr_frames * e->table_pct / 100;
}

/*
 * Make the writable frame gfn, count 0, a validated level-n table with
 * count 0: Xen's alloc_lN_table().  Fails taking nothing, leaving nothing
 * tracked.  The caller takes the first reference.
 */
static u16 table_validate(struct pt_engine *e, int level, u64 gfn)
{
	u32 w = e->word[gfn];
	u32 semi = w & KVM_PAGETYPE_SEMI;
	unsigned int i;
	u64 *buf;
	u16 r;

	if (e->writable_2m[gfn >> SHIFT_2M] || e->writable_1g[gfn >> SHIFT_1G])
		return KVM_PAGETYPE_R_BUSY;
	/* Tracked already, or written by the host unseen: never a table. */
	if (gfn == e->doorbell || gfn == e->home)
		return KVM_PAGETYPE_R_BUSY;
	if (!e->validate_left)
		return KVM_PAGETYPE_R_LIMIT;
	if (engine_full(e))
		return KVM_PAGETYPE_R_FULL;
	e->validate_left--;
	/* Up to KVM_PAGETYPE_VALIDATE_MAX tables in one go: let others run. */
	pt_cond_resched();

	buf = pt_page_alloc();
	if (!buf)
		return KVM_PAGETYPE_R_IO;
	/*
	 * No device reaches the frame from here on (word_dma_ok): a lazy
	 * revoke of a semi-writable frame is synced now at the latest.
	 */
	dma_sync(e);
	if (!semi && dma_set(e, gfn, PT_DMA_REVOKE)) {
		r = KVM_PAGETYPE_R_IO;
		goto err_free;
	}
	/*
	 * Track first, then read: a write that lands after the read is
	 * validated by the notifier against what was validated here.
	 */
	if (e->env->track(e->env->priv, gfn, true)) {
		r = KVM_PAGETYPE_R_IO;
		goto err_dma;
	}
	if (e->env->read_table(e->env->priv, gfn, buf)) {
		r = KVM_PAGETYPE_R_IO;
		goto err_untrack;
	}

	/*
	 * Typed, not validated, while its entries are checked: an entry
	 * that leads back to it (a cycle, itself mapped writable) is refused.
	 */
	e->word[gfn] = word_make(level, semi, 0);
	region_tables_add(e, gfn, 1);
	for (i = 0; i < PT_ENTRIES; i++) {
		e->stats.validations++;
		r = entry_get(e, level, i, buf[i]);
		if (r)
			goto err_unwind;
	}
	e->word[gfn] = word_make(level, semi | KVM_PAGETYPE_F_VALIDATED, 0);
	e->shadow[gfn] = buf;
	e->stats.tables[level - 1]++;
	return KVM_PAGETYPE_R_OK;

err_unwind:
	while (i--)
		entry_put(e, level, buf[i]);
	region_tables_add(e, gfn, -1);
	e->word[gfn] = w;
err_untrack:
	e->env->track(e->env->priv, gfn, false);
err_dma:
	if (!semi)
		dma_set(e, gfn, PT_DMA_GRANT);
err_free:
	pt_page_free(buf);
	return r;
}

/* The last reference went: Xen's free_lN_table(), then writable again. */
static void table_devalidate(struct pt_engine *e, u64 gfn)
{
	u32 w = e->word[gfn];
	int level = pt_type(w);
	u64 *buf = e->shadow[gfn];
	unsigned int i;

	for (i = 0; i < PT_ENTRIES; i++)
		entry_put(e, level, buf[i]);
	e->env->track(e->env->priv, gfn, false);
	e->shadow[gfn] = NULL;
	pt_page_free(buf);
	region_tables_add(e, gfn, -1);
	e->word[gfn] = word_make(KVM_PAGETYPE_WRITABLE,
				 w & KVM_PAGETYPE_SEMI, 0);
	e->stats.tables[level - 1]--;
	e->stats.devalidations++;
	if (word_dma_ok(e->word[gfn]))
		dma_set(e, gfn, PT_DMA_GRANT);
	/* A cascade frees what many earlier ops validated. */
	pt_cond_resched();
}

/*
 * Take a type reference on gfn as a level-n table, validating it first if
 * it is writable and unreferenced: Xen's get_page_type().  pin: for a pin,
 * else for an entry.
 */
static u16 table_get(struct pt_engine *e, u64 gfn, int level, bool pin)
{
	u32 w = e->word[gfn];
	u16 r;

	if (pt_type(w) == KVM_PAGETYPE_WRITABLE) {
		/* Mapped writable somewhere: in use as data. */
		if (pt_count(w))
			return KVM_PAGETYPE_R_BUSY;
		r = table_validate(e, level, gfn);
		if (r)
			return r;
		if (!pin)
			e->stats.ref_validations++;
		e->word[gfn]++;
		return KVM_PAGETYPE_R_OK;
	}
	if (pt_type(w) != (u32)level || !(w & KVM_PAGETYPE_F_VALIDATED))
		return KVM_PAGETYPE_R_TYPE;
	if (pt_count(w) == KVM_PAGETYPE_COUNT_MASK)
		return KVM_PAGETYPE_R_OVERFLOW;
	e->word[gfn] = w + 1;
	return KVM_PAGETYPE_R_OK;
}

static void table_put(struct pt_engine *e, u64 gfn)
{
	u32 w = e->word[gfn];

	if (!pt_count(w))
		return;		/* only references table_get took come here */
	e->word[gfn] = --w;
	if (!pt_count(w))
		table_devalidate(e, gfn);
}

static u16 op_pin(struct pt_engine *e, int level, u64 gfn)
{
	u32 w = e->word[gfn];
	u16 r;

	if (w & KVM_PAGETYPE_F_PINNED)
		return pt_type(w) == (u32)level ? KVM_PAGETYPE_R_EXIST :
						  KVM_PAGETYPE_R_TYPE;
	/* Fine-grained mode: a pin never costs an IOTLB flush. */
	if (e->mode == KVM_PAGETYPE_MODE_FINE &&
	    pt_type(w) == KVM_PAGETYPE_WRITABLE && !pt_count(w) &&
	    !(w & KVM_PAGETYPE_SEMI))
		return KVM_PAGETYPE_R_MODE;
	r = table_get(e, gfn, level, true);
	if (r)
		return r;
	e->word[gfn] |= KVM_PAGETYPE_F_PINNED;
	e->stats.pinned[level - 1]++;
	return KVM_PAGETYPE_R_OK;
}

/* Drop the pin's reference; out is the type word after. */
static u16 op_unpin(struct pt_engine *e, u64 gfn, u32 *out)
{
	u32 w = e->word[gfn];

	if (!(w & KVM_PAGETYPE_F_PINNED))
		return KVM_PAGETYPE_R_NOENT;
	e->word[gfn] = w & ~KVM_PAGETYPE_F_PINNED;
	e->stats.pinned[pt_type(w) - 1]--;
	table_put(e, gfn);
	*out = e->word[gfn];
	return KVM_PAGETYPE_R_OK;
}

static u16 op_to_semi(struct pt_engine *e, u64 gfn)
{
	u32 w = e->word[gfn];

	if (pt_type(w) != KVM_PAGETYPE_WRITABLE)
		return KVM_PAGETYPE_R_TYPE;
	if (w & KVM_PAGETYPE_SEMI)
		return KVM_PAGETYPE_R_EXIST;
	if (dma_set(e, gfn, PT_DMA_REVOKE_LAZY))
		return KVM_PAGETYPE_R_IO;
	e->word[gfn] = w | KVM_PAGETYPE_SEMI;
	e->stats.semi++;
	return KVM_PAGETYPE_R_OK;
}

static u16 op_to_writable(struct pt_engine *e, u64 gfn)
{
	u32 w = e->word[gfn];

	if (pt_type(w) != KVM_PAGETYPE_WRITABLE)
		return KVM_PAGETYPE_R_TYPE;
	if (!(w & KVM_PAGETYPE_SEMI))
		return KVM_PAGETYPE_R_NOENT;
	e->word[gfn] = w & ~KVM_PAGETYPE_SEMI;
	e->stats.semi--;
	dma_set(e, gfn, PT_DMA_GRANT);
	return KVM_PAGETYPE_R_OK;
}

static bool op_takes_frame(u16 code)
{
	return code >= KVM_PAGETYPE_OP_PIN_L1 && code != KVM_PAGETYPE_OP_SET_MODE;
}

static u16 op_run(struct pt_engine *e, struct kvm_pagetype_op *op)
{
	u16 code = op->code;
	u64 gfn = op->arg;

	op->out = 0;
	if (code >= KVM_PAGETYPE_NR_OPS)
		return KVM_PAGETYPE_R_INVAL;
	e->stats.ops[code]++;
	if (op_takes_frame(code) && !engine_covers(e, gfn))
		return KVM_PAGETYPE_R_RANGE;

	switch (code) {
	case KVM_PAGETYPE_OP_NULL:
		return KVM_PAGETYPE_R_OK;
	case KVM_PAGETYPE_OP_PIN_L1:
	case KVM_PAGETYPE_OP_PIN_L2:
	case KVM_PAGETYPE_OP_PIN_L3:
	case KVM_PAGETYPE_OP_PIN_L4:
		return op_pin(e, code - KVM_PAGETYPE_OP_PIN_L1 + 1, gfn);
	case KVM_PAGETYPE_OP_UNPIN:
		return op_unpin(e, gfn, &op->out);
	case KVM_PAGETYPE_OP_TO_SEMI:
		return op_to_semi(e, gfn);
	case KVM_PAGETYPE_OP_TO_WRITABLE:
		return op_to_writable(e, gfn);
	case KVM_PAGETYPE_OP_SET_MODE:
		if (op->arg != KVM_PAGETYPE_MODE_COARSE &&
		    op->arg != KVM_PAGETYPE_MODE_FINE)
			return KVM_PAGETYPE_R_INVAL;
		e->mode = op->arg;
		return KVM_PAGETYPE_R_OK;
	case KVM_PAGETYPE_OP_QUERY:
		op->out = e->word[gfn];
		return KVM_PAGETYPE_R_OK;
	}
	return KVM_PAGETYPE_R_INVAL;
}

/*
 * The work an op may start with (a pin validates one table at least), and
 * what it did: a unit, or 512 per table it validated.
 */
static u32 op_cost(const struct kvm_pagetype_op *op)
{
	return op->code >= KVM_PAGETYPE_OP_PIN_L1 &&
	       op->code <= KVM_PAGETYPE_OP_PIN_L4 ? PT_ENTRIES : 1;
}

static u32 engine_op_locked(struct pt_engine *e, struct kvm_pagetype_op *op)
{
	u32 tables;

	e->validate_left = KVM_PAGETYPE_VALIDATE_MAX;
	op->result = op_run(e, op);
	if (op->result)
		e->stats.op_errors++;
	tables = KVM_PAGETYPE_VALIDATE_MAX - e->validate_left;
	return tables ? tables * PT_ENTRIES : 1;
}

void pt_engine_lock(struct pt_engine *e)
{
	pt_mutex_lock(&e->lock);
}

void pt_engine_unlock(struct pt_engine *e)
{
	pt_mutex_unlock(&e->lock);
}

u32 pt_engine_batch_locked(struct pt_engine *e, u64 home,
			   struct kvm_pagetype_op *ops, u32 count)
{
	u32 work = 0, done, i;

	e->stats.batches++;
	/* The batch's own frame: results land there, it is never a table. */
	e->home = home;
	for (done = 0; done < count; done++) {
		if (work + op_cost(&ops[done]) > KVM_PAGETYPE_WORK_BUDGET)
			break;
		work += engine_op_locked(e, &ops[done]);
	}
	e->home = PT_NO_HOME;
	/* No op of the batch is complete before its revokes are synced. */
	dma_sync(e);
	if (done < count)
		e->stats.batches_cut++;
	for (i = done; i < count; i++) {
		ops[i].result = KVM_PAGETYPE_R_SKIPPED;
		ops[i].out = 0;
	}
	return done;
}

u32 pt_engine_batch(struct pt_engine *e, struct kvm_pagetype_op *ops,
		    u32 count)
{
	u32 done;

	pt_mutex_lock(&e->lock);
	done = pt_engine_batch_locked(e, PT_NO_HOME, ops, count);
	pt_mutex_unlock(&e->lock);
	return done;
}

u16 pt_engine_write(struct pt_engine *e, u64 gpa)
{
	u64 gfn = gpa >> 12, *shadow, *now = e->scratch, old;
	u16 r = KVM_PAGETYPE_R_OK;
	unsigned int i;
	int level;

	pt_mutex_lock(&e->lock);
	/* Tables lie in the frames covered, which only grow under the lock. */
	shadow = gfn < e->nr_frames ? e->shadow[gfn] : NULL;
	if (!shadow) {
		/* decided here, so that a table's write is never taken for it */
		if (gfn == e->doorbell)
			r = PT_DOORBELL;
		goto out;	/* not a table (any more): not ours */
	}
	level = pt_type(e->word[gfn]);
	e->stats.writes++;
	e->validate_left = KVM_PAGETYPE_VALIDATE_MAX;
	/*
	 * What memory holds now, not the bytes of the store that trapped:
	 * notifiers of two vCPUs' stores may run in either order, and a
	 * write no notifier saw is caught here at the latest.
	 */
	if (e->env->read_table(e->env->priv, gfn, now)) {
		r = KVM_PAGETYPE_R_IO;
		e->stats.violations++;
		goto out;
	}
	for (i = 0; i < PT_ENTRIES; i++) {
		old = shadow[i];
		if (!((old | now[i]) & PT_P) ||
		    !((old ^ now[i]) & PT_GRANT_MASK)) {
			shadow[i] = now[i];
			continue;
		}
		e->stats.write_updates++;
		e->stats.validations++;
		r = entry_get(e, level, i, now[i]);
		if (r) {
			e->stats.violations++;
			goto out;
		}
		entry_put(e, level, old);
		shadow[i] = now[i];
	}
out:
	pt_mutex_unlock(&e->lock);
	return r;
}

bool pt_engine_is_table_locked(struct pt_engine *e, u64 gfn)
{
	return gfn < e->nr_frames && e->shadow[gfn];
}

bool pt_engine_has_table(struct pt_engine *e, u64 gfn, u64 n)
{
	bool ret = false;
	u64 end;

	pt_mutex_lock(&e->lock);
	end = gfn < e->nr_frames && n < e->nr_frames - gfn ? gfn + n :
							     e->nr_frames;
	for (; gfn < end && !ret; gfn++)
		ret = e->shadow[gfn];
	pt_mutex_unlock(&e->lock);
	return ret;
}

void pt_engine_stats(struct pt_engine *e, struct kvm_pagetype_stats *out)
{
	pt_mutex_lock(&e->lock);
	*out = e->stats;
	pt_mutex_unlock(&e->lock);
}

void pt_engine_stats_peek(struct pt_engine *e, struct kvm_pagetype_stats *out)
{
	const u64 *from = (const u64 *)&e->stats;
	u64 *to = (u64 *)out;
	size_t i;

	for (i = 0; i < sizeof(*out) / sizeof(u64); i++)
		to[i] = pt_read_racy(from[i]);
}

void pt_engine_set_table_bound(struct pt_engine *e, u32 pct)
{
	e->table_pct = pct;
}

/*
 * Growing the frames covered.  A leaf beyond them was accepted as an I/O
 * mapping and holds nothing; once the frames it maps are guest RAM it
 * must hold what any leaf holds, or its removal would drop a reference
 * never taken.  So every writable leaf into the new frames takes its
 * references, in the new arrays, before they replace the old ones; if
 * one would overflow, the engine keeps its old size (and a frame beyond
 * it can never be a table, so nothing relies on the new frames yet).
 */
struct pt_arrays {
	u32 *word;
	u64 **shadow;
	u32 *tables_2m, *writable_2m, *tables_1g, *writable_1g;
};

static void arrays_free(struct pt_arrays *a)
{
	pt_cfree(a->word);
	pt_cfree(a->shadow);
	pt_cfree(a->tables_2m);
	pt_cfree(a->writable_2m);
	pt_cfree(a->tables_1g);
	pt_cfree(a->writable_1g);
}

static int arrays_alloc(struct pt_arrays *a, u64 nr_frames)
{
	u64 n2m = (nr_frames >> SHIFT_2M) + 1, n1g = (nr_frames >> SHIFT_1G) + 1;

	a->word = pt_calloc(nr_frames, sizeof(*a->word));
	a->shadow = pt_calloc(nr_frames, sizeof(*a->shadow));
	a->tables_2m = pt_calloc(n2m, sizeof(u32));
	a->writable_2m = pt_calloc(n2m, sizeof(u32));
	a->tables_1g = pt_calloc(n1g, sizeof(u32));
	a->writable_1g = pt_calloc(n1g, sizeof(u32));
	if (a->word && a->shadow && a->tables_2m && a->writable_2m &&
	    a->tables_1g && a->writable_1g)
		return 0;
	arrays_free(a);
	return -ENOMEM;
}

static void engine_swap_arrays(struct pt_engine *e, struct pt_arrays *a)
{
	swap(a->word, e->word);
	swap(a->shadow, e->shadow);
	swap(a->tables_2m, e->tables_2m);
	swap(a->writable_2m, e->writable_2m);
	swap(a->tables_1g, e->tables_1g);
	swap(a->writable_1g, e->writable_1g);
}

/* Take, in a, the references of the leaves into frames old .. n - 1. */
static bool grow_account(struct pt_engine *e, struct pt_arrays *a, u64 old,
			 u64 n)
{
	unsigned int i, shift;
	u64 gfn, to, first;
	u32 *region;
	int level;

	for (gfn = 0; gfn < old; gfn++) {
		const u64 *t = e->shadow[gfn];

		if (!t)
			continue;
		level = pt_type(e->word[gfn]);
		for (i = 0; i < PT_ENTRIES; i++) {
			if ((t[i] & (PT_P | PT_RW)) != (PT_P | PT_RW) ||
			    !entry_is_leaf(level, t[i]))
				continue;
			to = entry_gfn(t[i]);
			if (level == 1) {
				if (to < old || to >= n)
					continue;
				if (pt_count(a->word[to]) == KVM_PAGETYPE_COUNT_MASK)
					return false;
				a->word[to]++;
				continue;
			}
			shift = superpage_shift(level, t[i]);
			first = (to >> shift) << shift;
			if (first < old || first >= n)
				continue;
			region = shift == SHIFT_2M ? a->writable_2m :
						     a->writable_1g;
			if (region[to >> shift] == PT_REGION_MAX)
				return false;
			region[to >> shift]++;
		}
		pt_cond_resched();
	}
	return true;
}

static void engine_grow(struct pt_engine *e)
{
	u64 old = e->nr_frames, n;
	struct pt_arrays a;

	n = e->env->frames(e->env->priv);
	if (n <= old || arrays_alloc(&a, n))
		return;
	memcpy(a.word, e->word, old * sizeof(*a.word));
	memcpy(a.shadow, e->shadow, old * sizeof(*a.shadow));
	memcpy(a.tables_2m, e->tables_2m,
	       ((old >> SHIFT_2M) + 1) * sizeof(u32));
	memcpy(a.writable_2m, e->writable_2m,
	       ((old >> SHIFT_2M) + 1) * sizeof(u32));
	memcpy(a.tables_1g, e->tables_1g,
	       ((old >> SHIFT_1G) + 1) * sizeof(u32));
	memcpy(a.writable_1g, e->writable_1g,
	       ((old >> SHIFT_1G) + 1) * sizeof(u32));
	if (grow_account(e, &a, old, n)) {
		engine_swap_arrays(e, &a);
		e->nr_frames = n;
		e->stats.frames = n;
		e->stats.grown++;
	}
	arrays_free(&a);
}

/* Whether gfn is guest RAM the words cover, growing them to it first. */
static bool engine_covers(struct pt_engine *e, u64 gfn)
{
	if (gfn < e->nr_frames)
		return true;
	if (e->env->frames)
		engine_grow(e);
	return gfn < e->nr_frames;
}

int pt_engine_init(struct pt_engine *e, u64 nr_frames, u32 flags,
		   const struct pt_env *env)
{
	struct pt_arrays a;

	memset(e, 0, sizeof(*e));
	e->scratch = pt_page_alloc();
	if (!e->scratch)
		return -ENOMEM;
	if (arrays_alloc(&a, nr_frames)) {
		pt_page_free(e->scratch);
		e->scratch = NULL;
		return -ENOMEM;
	}
	pt_mutex_init(&e->lock);
	engine_swap_arrays(e, &a);
	e->env = env;
	e->nr_frames = nr_frames;
	e->flags = flags;
	e->mode = KVM_PAGETYPE_MODE_COARSE;
	e->doorbell = PT_NO_HOME;
	e->home = PT_NO_HOME;
	e->stats.vms = 1;
	e->stats.frames = nr_frames;
	return 0;
}

/* Untrack and free every table; the caller clears the words. */
static void engine_drop_tables(struct pt_engine *e)
{
	u64 gfn;

	for (gfn = 0; gfn < e->nr_frames; gfn++) {
		if (!e->shadow[gfn])
			continue;
		e->env->track(e->env->priv, gfn, false);
		pt_page_free(e->shadow[gfn]);
		e->shadow[gfn] = NULL;
	}
	if (e->doorbell != PT_NO_HOME)
		e->env->track(e->env->priv, e->doorbell, false);
	e->doorbell = PT_NO_HOME;
}

u16 pt_engine_set_doorbell(struct pt_engine *e, u64 gfn)
{
	u16 r = KVM_PAGETYPE_R_OK;

	pt_mutex_lock(&e->lock);
	if (gfn != PT_NO_HOME && !engine_covers(e, gfn)) {
		r = KVM_PAGETYPE_R_RANGE;
	} else if (gfn != PT_NO_HOME && e->shadow[gfn]) {
		r = KVM_PAGETYPE_R_TYPE;
	} else if (gfn != e->doorbell) {
		if (gfn != PT_NO_HOME && e->env->track(e->env->priv, gfn, true)) {
			r = KVM_PAGETYPE_R_IO;
		} else {
			if (e->doorbell != PT_NO_HOME)
				e->env->track(e->env->priv, e->doorbell, false);
			e->doorbell = gfn;
		}
	}
	pt_mutex_unlock(&e->lock);
	return r;
}

bool pt_engine_forget_doorbell(struct pt_engine *e, u64 gfn, u64 n)
{
	bool inside;

	pt_mutex_lock(&e->lock);
	inside = e->doorbell != PT_NO_HOME && e->doorbell >= gfn &&
		 e->doorbell - gfn < n;
	if (inside)
		e->doorbell = PT_NO_HOME;
	pt_mutex_unlock(&e->lock);
	return inside;
}

void pt_engine_reset(struct pt_engine *e)
{
	u64 n2m, n1g, gfn;

	pt_mutex_lock(&e->lock);
	n2m = (e->nr_frames >> SHIFT_2M) + 1;
	n1g = (e->nr_frames >> SHIFT_1G) + 1;
	dma_sync(e);
	engine_drop_tables(e);
	/* Writable again, then reachable again. */
	for (gfn = 0; gfn < e->nr_frames; gfn++) {
		if (word_dma_ok(e->word[gfn]))
			continue;
		e->word[gfn] = 0;
		dma_set(e, gfn, PT_DMA_GRANT);
	}
	memset(e->word, 0, e->nr_frames * sizeof(*e->word));
	memset(e->tables_2m, 0, n2m * sizeof(u32));
	memset(e->writable_2m, 0, n2m * sizeof(u32));
	memset(e->tables_1g, 0, n1g * sizeof(u32));
	memset(e->writable_1g, 0, n1g * sizeof(u32));
	memset(e->stats.pinned, 0, sizeof(e->stats.pinned));
	memset(e->stats.tables, 0, sizeof(e->stats.tables));
	e->stats.semi = 0;
	e->mode = KVM_PAGETYPE_MODE_COARSE;
	pt_mutex_unlock(&e->lock);
}

void pt_engine_destroy(struct pt_engine *e)
{
	struct pt_arrays a = { 0 };

	if (!e->shadow)
		return;		/* never initialized */
	engine_drop_tables(e);
	pt_mutex_destroy(&e->lock);
	engine_swap_arrays(e, &a);
	arrays_free(&a);
	pt_page_free(e->scratch);
	memset(e, 0, sizeof(*e));
}
