/* knobs.c — what the daemon keeps for a cgroup: whether it is managed, the real
 * memory.high and memory.max it wants ("How a managed cgroup is held" in
 * SEMANTICS.md), the state persisted before the actions it describes, the echoes of
 * its own memory.max writes, and the hand-back. Pure (engine_impl.h).
 */
#include "engine_impl.h"

/* The watcher reads memory.max some time after our write and feeds it in later still
 * (outside the engine lock, behind a loaded loop): an echo can be this old. A foreign
 * writer picking a value we wrote longer ago than this is heard again. */
#define OWN_ECHO_MS 10000u

/* RULE 1: only a managed cgroup (finite L; T > 0 or D = 1) is ever held; every other
 * one keeps L and the user's own memory.high, and the kernel's OOM killer acts at once. */
bool eng_managed(const node *n)
{
	return !n->is_root && n->limit != OE_UNLIMITED && (n->delay_ms > 0 || n->disable);
}

/* The daemon holds the real knobs while a hold may be needed or is running. */
bool eng_held_by_daemon(const node *n)
{
	return eng_managed(n) || n->in_hold;
}

/* Worth persisting: anything a restart could not recover from the real files. */
static bool has_state(const node *n)
{
	return !n->is_root && (n->delay_ms > 0 || n->disable || n->in_hold || n->frozen);
}

static oe_persisted snapshot(const node *n)
{
	oe_persisted p = {
		.limit = n->limit,
		.user_high = n->user_high,
		.delay_ms = n->delay_ms,
		.disable = n->disable,
		.in_hold = n->in_hold,
		.delay_spent = n->delay_spent,
		.frozen = n->frozen,
		.deadline_ns = n->in_hold ? n->deadline : OE_NO_DEADLINE,
		.group_kills = n->group_kills,
	};
	return p;
}

static bool same_persisted(const oe_persisted *a, const oe_persisted *b)
{
	return a->limit == b->limit && a->user_high == b->user_high &&
	       a->delay_ms == b->delay_ms && a->disable == b->disable &&
	       a->in_hold == b->in_hold && a->delay_spent == b->delay_spent &&
	       a->frozen == b->frozen && a->deadline_ns == b->deadline_ns &&
	       a->group_kills == b->group_kills;
}

/* State is written before the actions it describes, so a crash in between
 * leaves a restart enough to finish them. */
void eng_persist(oe_engine *e, node *n, oe_actions *out)
{
	if (e->released || !has_state(n))
		return;
	oe_persisted p = snapshot(n);
	if (n->has_persisted && !n->persisted_stale && same_persisted(&p, &n->persisted))
		return;
	oe_action *a = eng_emit(out, OE_ACT_PERSIST, n->id, 0);
	if (!a)
		return;
	a->persisted = p;
	n->persisted = p;
	n->has_persisted = true;
	n->persisted_stale = false;
}

/* "How a managed cgroup is held": the real knobs the daemon wants.
 * RULE 9: while it holds a cgroup the kernel's limit is a ceiling above L, so that
 * the kernel kills no task before the daemon decides to (memory.high throttles at L). */
void eng_desired_knobs(const oe_engine *e, const node *n, uint64_t *high, uint64_t *max)
{
	if (eng_held_by_daemon(n)) {
		*high = n->limit < n->user_high ? n->limit : n->user_high;
		*max = sat_add(n->limit, e->cfg.ceiling_bytes);
	} else {
		*high = n->user_high;
		*max = n->limit;
	}
}

/* v, which the kernel held or may still come to hold by our doing, is no longer the
 * value we want: its echo is ours for OWN_ECHO_MS. */
static void remember_own(const oe_engine *e, node *n, uint64_t v)
{
	n->own_val[n->own_next] = v;
	n->own_at_ms[n->own_next] = (uint32_t)(e->now / NS_PER_MS);
	n->own_used |= (uint8_t)(1u << n->own_next);
	n->own_next = (n->own_next + 1) % OWN_SLOTS;
}

void eng_set_max(oe_engine *e, node *n, uint64_t v, oe_actions *out, oe_action_kind kind)
{
	oe_action *a = eng_emit(out, kind, n->id, v);
	/* A raise the state explains: without it, a restart would take the raised value for L. */
	if (a && kind == OE_ACT_SET_MAX)
		a->guarded = v > n->applied_max && has_state(n);
	/* Two slots were not enough: one user write can make two writes (a raise that ends
	 * a hold), so an echo read just before it named a value three writes old, which was
	 * then taken for a foreign write and became L. */
	remember_own(e, n, n->applied_max);
	n->applied_max = v;
}

static bool own_recent_max(const oe_engine *e, const node *n, uint64_t v)
{
	uint32_t now_ms = (uint32_t)(e->now / NS_PER_MS);
	for (unsigned i = 0; i < OWN_SLOTS; i++) {
		/* modulo 2^32 ms: right for any age under 49 days, and we ask for 10 s */
		if ((n->own_used & (1u << i)) && n->own_val[i] == v &&
		    (uint32_t)(now_ms - n->own_at_ms[i]) <= OWN_ECHO_MS)
			return true;
	}
	return false;
}

/* Bring the real knobs and the persisted state in line with the node. Entering
 * the daemon's care persists first; leaving it forgets last, so that a crash
 * never leaves real knobs the next start would mistake for the user's. */
void eng_reconcile(oe_engine *e, node *n, oe_actions *out)
{
	if (n->is_root || e->released)
		return;
	eng_persist(e, n, out);
	uint64_t high, max;
	eng_desired_knobs(e, n, &high, &max);
	/* Lower memory.high before memory.max goes up, so that a cgroup entering the
	 * daemon's care is never without its throttle. */
	if (high != n->applied_high) {
		/* Never guarded: a restart lowers memory.high again from whatever it finds. */
		eng_emit(out, OE_ACT_SET_HIGH, n->id, high);
		n->applied_high = high;
	}
	if (max != n->applied_max)
		eng_set_max(e, n, max, out, OE_ACT_SET_MAX);
	if (!has_state(n) && n->has_persisted) {
		eng_emit(out, OE_ACT_FORGET, n->id, 0);
		n->has_persisted = false;
	}
}

/* The kernel's knobs may differ from what the engine last asked for: ask again. */
static void reassert(oe_engine *e, node *n, oe_actions *out)
{
	uint64_t high, max;
	eng_desired_knobs(e, n, &high, &max);
	eng_emit(out, OE_ACT_SET_HIGH, n->id, high);
	n->applied_high = high;
	if (max != n->applied_max)
		eng_set_max(e, n, max, out, OE_ACT_SET_MAX);
	else
		eng_emit(out, OE_ACT_SET_MAX, n->id, max);
}

void oe_real_max_seen(oe_engine *e, int64_t now, uint64_t id, uint64_t value, oe_actions *out)
{
	saw_time(e, now);
	node *n = eng_find(e, id);
	if (!n || n->is_root || e->released)
		return;
	if (value == n->applied_max)
		return;
	if (own_recent_max(e, n, value)) {
		/* Our own earlier write: either the latest is still on its way, or it landed
		 * first and this one overtook it (the shell carries batches out on several
		 * threads). The wanted knobs again are harmless in the first case and the only
		 * repair in the second; memory.high, written with it, has no echo of its own. */
		reassert(e, n, out);
		return;
	}
	/* Our last write may not have landed yet (the shell carries actions out after the
	 * engine's lock, on several threads): landing after the foreign one, its echo
	 * would otherwise name a value in no slot and become L, and the repair's echo
	 * the next L (seen in ctl_race as L = 3355, then 100663296, then 167772160). */
	remember_own(e, n, n->applied_max);
	n->applied_max = value;
	oe_write_limit(e, now, id, value, out);
}

void oe_state_unstored(oe_engine *e, uint64_t id, uint64_t real_max, uint64_t real_high,
			bool real_frozen)
{
	node *n = eng_find(e, id);
	if (!n || n->is_root)
		return;
	n->persisted_stale = true;
	n->applied_max = real_max;
	n->applied_high = real_high;
	/* A freeze left undone is tried again, with its state, by the next reading over
	 * the margin; one done before stays the engine's to thaw. */
	if (n->frozen && !real_frozen)
		n->frozen = false;
}

static void release_one(oe_engine *e, node *n, void *ud)
{
	oe_actions *out = ud;
	(void)e;
	if (n->is_root)
		return;
	if (n->frozen)
		eng_emit(out, OE_ACT_THAW, n->id, 0);
	if (n->applied_max != n->limit)
		eng_emit(out, OE_ACT_SET_MAX, n->id, n->limit);
	if (n->applied_high != n->user_high)
		eng_emit(out, OE_ACT_SET_HIGH, n->id, n->user_high);
	if (n->has_persisted)
		eng_emit(out, OE_ACT_FORGET, n->id, 0);
	n->frozen = false;
	n->applied_max = n->limit;
	n->applied_high = n->user_high;
	n->has_persisted = false;
}

void oe_release_all(oe_engine *e, oe_actions *out)
{
	if (!e->root)
		return;
	eng_walk(e, e->root, release_one, out);
	e->released = true;
}
