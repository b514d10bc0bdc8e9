/* engine.c — the OOM-delay rules of SEMANTICS.md as a pure state machine: its
 * lifecycle, the action buffer, the tree of cgroups and the queries.
 *
 * Contract (include/oomd/engine.h): pure, no I/O, no clocks, no threads; every input
 * carries `now`, and answers with the actions the shell must carry out, in order. The
 * parts of the engine and what each keeps are listed in engine_impl.h.
 *
 * Rule index: where each rule of docs/SEMANTICS.md ("Rules") is decided. Each place
 * named here carries a comment "RULE n: ..." in its function (upper case: a lower-case
 * "rule n" is only a reference), and each rule has a criterion suite rule<n> (or
 * rule<n>_<variant>) in tests/unit/test_engine_*.c. The unit test unit-rules checks the
 * index against both (tests/unit/rulecheck.c); keep one entry per line.
 *   rule 1  native               knobs.c eng_managed()
 *   rule 2  delay, onset         hold.c start_hold()
 *   rule 3  kill after the delay hold.c eng_kill_due()
 *   rule 4  disable              hold.c eng_kill_due()
 *   rule 5  recovery             hold.c recovered()
 *   rule 6  re-arm               hold.c eng_rearm()
 *   rule 7  inheritance          adopt.c oe_cgroup_add()
 *   rule 8  precedence           hold.c eng_kill_due()
 *   rule 9  guarantee            knobs.c eng_desired_knobs(), hold.c check_promise()
 *   rule 10 oom_kill counter     engine.c oe_view_get()
 *   rule 11 notification         hold.c notify_subtree(), hold.c notify_native_oom()
 *   rule 12 under_oom            engine.c eng_under_oom()
 * The shell carries the actions out and keeps what is not the engine's to decide:
 * rule 11's signal to a listener that registers during a hold (fs/event_control.c, on
 * the view's under_oom) and at rmdir (fs/ec_notify.c), and poll() on real files.
 */
#include "engine_impl.h"

#include <string.h>

void oe_config_defaults(oe_config *cfg)
{
	cfg->ceiling_bytes = 64ull << 20;
	cfg->freeze_margin_bytes = 8ull << 20;
	cfg->sample_interval_ns = 10 * NS_PER_MS;
	cfg->kill_mode = OE_KILL_KERNEL;
}

oe_engine *oe_new(const oe_config *cfg)
{
	oe_engine *e = g_new0(oe_engine, 1);
	e->cfg = *cfg;
	e->nodes = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, g_free);
	return e;
}

void oe_free(oe_engine *e)
{
	if (!e)
		return;
	g_hash_table_destroy(e->nodes);
	g_free(e);
}

void oe_actions_init(oe_actions *a, oe_action *storage, size_t cap)
{
	a->v = storage;
	a->cap = cap;
	a->n = 0;
	a->overflow = false;
}

void oe_actions_clear(oe_actions *a)
{
	a->n = 0;
	a->overflow = false;
}

oe_action *eng_emit(oe_actions *out, oe_action_kind kind, uint64_t id, uint64_t value)
{
	if (out->n >= out->cap) {
		out->overflow = true;
		return NULL;
	}
	oe_action *a = &out->v[out->n++];
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->id = id;
	a->value = value;
	return a;
}

void eng_emit_log(oe_actions *out, uint64_t id, const char *msg)
{
	oe_action *a = eng_emit(out, OE_ACT_LOG, id, 0);
	if (a)
		a->msg = msg;
}

node *eng_find(const oe_engine *e, uint64_t id)
{
	return g_hash_table_lookup(e->nodes, &id);
}

void eng_walk(oe_engine *e, node *n, node_fn fn, void *ud)
{
	fn(e, n, ud);
	for (node *c = n->child; c; c = c->sibling)
		eng_walk(e, c, fn, ud);
}

node *eng_new_node(oe_engine *e, uint64_t id, node *parent)
{
	node *n = g_new0(node, 1);
	n->id = id;
	n->parent = parent;
	n->limit = OE_UNLIMITED;
	n->user_high = OE_UNLIMITED;
	n->applied_high = OE_UNLIMITED;
	n->applied_max = OE_UNLIMITED;
	n->deadline = OE_NO_DEADLINE;
	n->next_sample = OE_NO_DEADLINE;
	n->calm_since = OE_NO_DEADLINE;
	n->quiet_until = INT64_MIN;
	if (parent) {
		n->sibling = parent->child;
		parent->child = n;
	}
	g_hash_table_insert(e->nodes, &n->id, n);
	return n;
}

void oe_root(oe_engine *e, uint64_t id)
{
	if (e->root)
		return;
	e->root = eng_new_node(e, id, NULL);
	e->root->is_root = true;
}

void oe_cgroup_remove(oe_engine *e, uint64_t id, oe_actions *out)
{
	node *n = eng_find(e, id);
	if (!n || n->is_root)
		return;
	while (n->child)
		oe_cgroup_remove(e, n->child->id, out);
	node **pp = &n->parent->child;
	while (*pp != n)
		pp = &(*pp)->sibling;
	*pp = n->sibling;
	eng_set_hold(e, n, false); /* the count follows the node out */
	g_hash_table_remove(e->nodes, &id);
}

/* RULE 12: under_oom is 1 on the cgroup under OOM and on all its descendants. */
bool eng_under_oom(const node *n)
{
	for (; n; n = n->parent)
		if (n->in_hold)
			return true;
	return false;
}

bool oe_view_get(const oe_engine *e, uint64_t id, oe_view *v)
{
	const node *n = eng_find(e, id);
	if (!n)
		return false;
	memset(v, 0, sizeof(*v));
	v->limit = n->limit;
	v->user_high = n->user_high;
	v->delay_ms = n->delay_ms;
	v->disable = n->disable;
	v->under_oom = eng_under_oom(n);
	v->in_hold = n->in_hold;
	v->was_held = n->was_held;
	/* RULE 10: the kernel's local count, and the processes a group kill took. */
	v->oom_kill = n->last.local_oom_kill + n->group_kills;
	eng_desired_knobs(e, n, &v->real_high, &v->real_max);
	v->frozen = n->frozen;
	v->managed = eng_managed(n);
	v->deadline_ns = n->in_hold ? n->deadline : OE_NO_DEADLINE;
	v->hold_onset_ns = n->in_hold ? n->hold_onset : 0;
	v->usage = n->last.current;
	return true;
}

size_t oe_count(const oe_engine *e)
{
	return g_hash_table_size(e->nodes);
}

struct foreach_ctx {
	void (*fn)(uint64_t id, void *ud);
	void *ud;
};

static void foreach_one(oe_engine *e, node *n, void *ud)
{
	(void)e;
	struct foreach_ctx *c = ud;
	c->fn(n->id, c->ud);
}

void oe_foreach_subtree(const oe_engine *e, uint64_t id, void (*fn)(uint64_t id, void *ud), void *ud)
{
	node *n = eng_find(e, id);
	struct foreach_ctx c = { fn, ud };
	if (n)
		eng_walk((oe_engine *)e, n, foreach_one, &c);
}
