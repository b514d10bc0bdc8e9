/* writes.c — the user's writes through the shadow tree: the delay (this cgroup and
 * every descendant), the disable flag, memory.max and memory.high. Pure
 * (engine_impl.h): each returns 0 or a positive errno, and on an error changes nothing.
 */
#include "engine_impl.h"

#include <errno.h>

struct delay_write {
	uint64_t ms;
	int64_t now;
	oe_actions *out;
};

static void set_delay_one(oe_engine *e, node *n, void *ud)
{
	struct delay_write *w = ud;
	n->delay_ms = w->ms;
	if (n->in_hold)
		eng_rearm(n, w->now);
	eng_reconcile(e, n, w->out);
	/* 0 kills now, through decide_held. The shell answers a SAMPLE on the spot, so it
	 * goes last: a PERSIST after it stored the hold over the kill's FORGET. */
	if (n->in_hold && n->delay_spent && w->ms == 0)
		eng_emit(w->out, OE_ACT_SAMPLE, n->id, 0);
}

int oe_write_delay(oe_engine *e, int64_t now, uint64_t id, uint64_t ms, oe_actions *out)
{
	saw_time(e, now);
	node *n = eng_find(e, id);
	if (!n)
		return ENOENT;
	if (ms > OE_MAX_DELAY_MS)
		return EINVAL;
	/* The patch sets the delay on the cgroup and every descendant. */
	struct delay_write w = { .ms = ms, .now = now, .out = out };
	eng_walk(e, n, set_delay_one, &w);
	return 0;
}

/* A cgroup whose own knobs a user may write: the root has none (v1 refused them too). */
static int knob_node(oe_engine *e, uint64_t id, node **n)
{
	*n = eng_find(e, id);
	if (!*n)
		return ENOENT;
	return (*n)->is_root ? EINVAL : 0;
}

int oe_write_disable(oe_engine *e, int64_t now, uint64_t id, uint64_t v, oe_actions *out)
{
	saw_time(e, now);
	node *n;
	int err = knob_node(e, id, &n);
	if (err)
		return err;
	if (v > 1)
		return EINVAL;
	bool was = n->disable;
	n->disable = v == 1;
	eng_reconcile(e, n, out);
	if (was != n->disable)
		eng_emit(out, OE_ACT_CHANGED, n->id, 0);
	/* D = 0 in a hold whose wait is over kills at once (rule 4), decided on a fresh reading. */
	if (eng_kill_due(n))
		eng_emit(out, OE_ACT_SAMPLE, n->id, 0);
	return 0;
}

int oe_write_limit(oe_engine *e, int64_t now, uint64_t id, uint64_t bytes, oe_actions *out)
{
	saw_time(e, now);
	node *n;
	int err = knob_node(e, id, &n);
	if (err)
		return err;
	if (n->in_hold && bytes > n->limit)
		n->raised = true; /* the user's answer to the hold: it may end at once (rule 5) */
	n->limit = bytes;
	eng_reconcile(e, n, out);
	/* rule 5: a raised limit may end a hold; a lowered one may start one. */
	if (eng_held_by_daemon(n))
		eng_emit(out, OE_ACT_SAMPLE, n->id, 0);
	return 0;
}

int oe_write_high(oe_engine *e, int64_t now, uint64_t id, uint64_t bytes, oe_actions *out)
{
	saw_time(e, now);
	node *n;
	int err = knob_node(e, id, &n);
	if (err)
		return err;
	n->user_high = bytes;
	eng_reconcile(e, n, out);
	return 0;
}
