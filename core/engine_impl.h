/* engine_impl.h — what the files of the engine share; never included outside core/.
 *
 * Contract: as include/oomd/engine.h. Pure: no I/O, no clocks, no threads, no
 * allocation but the node table; `now` comes with every input. Functions here take
 * the engine already serialised by the caller of the public API. One file per part:
 *   engine.c  lifecycle, action buffer, the cgroup tree, queries, the rule index
 *   knobs.c   what the daemon keeps for a cgroup: managed or not, the real knobs it
 *             wants, persisted state, echoes of its own memory.max writes, hand-back
 *   hold.c    the hold: onset, readings, deadlines, kill, freeze, recovery, notification
 *   writes.c  the user's writes through the shadow tree
 *   adopt.c   a cgroup found (scan, mkdir) and the state a restart finds with it
 */
#ifndef OOMD_ENGINE_IMPL_H
#define OOMD_ENGINE_IMPL_H

#include <glib.h>

#include "oomd/engine.h"

typedef struct node node;
#define OWN_SLOTS 8 /* bits of node.own_used */
/* One per cgroup (10,000 and more, all locked in memory): the flags are bits
 * at the end, after the 8-byte fields, and the echo ring keeps 4-byte times, so
 * that the node takes 336 bytes and malloc's chunk 352 (it was 360 and 368 before
 * the hold's onset was kept; 384 and 400 with a bool padded out after each group). */
struct node {
	uint64_t id;
	node *parent, *child, *sibling;

	uint64_t limit, user_high, delay_ms;

	int64_t deadline, next_sample;
	int64_t calm_since; /* first quiet reading under L in a row, or OE_NO_DEADLINE */
	int64_t hold_onset; /* when the running hold began (the deadline counts from it); 0 */

	uint64_t group_kills;
	oe_reading last;
	/* Our own kill makes the kernel count OOM events; those are not a new onset. */
	int64_t quiet_until;

	uint64_t applied_high, applied_max;
	/* Earlier real memory.max writes of the daemon, whose inotify echoes may still come:
	 * the values, and when each was replaced (the low 32 bits of `now` in ms: only ages
	 * under 10 s are asked; 4 bytes a slot less made room for hold_onset). */
	uint64_t own_val[OWN_SLOTS];
	uint32_t own_at_ms[OWN_SLOTS];
	oe_persisted persisted;
	uint8_t own_next; /* index into own_val/own_at_ms */
	uint8_t own_used; /* bit i: slot i holds a write */

	bool is_root : 1;
	bool disable : 1;
	bool in_hold : 1, delay_spent : 1, frozen : 1;
	bool have_reading : 1;
	bool has_persisted : 1;
	bool persisted_stale : 1; /* a store failed: what is stored is not `persisted` */
	bool raised : 1;          /* L was raised during the running hold */
	bool was_held : 1;        /* a hold has begun on it (oe_view.was_held) */
};
G_STATIC_ASSERT(sizeof(node) <= 344); /* malloc chunk 352 */


struct oe_engine {
	oe_config cfg;
	GHashTable *nodes; /* id -> node */
	node *root;
	size_t n_held; /* nodes in_hold: none means no wake-up, without a walk (eng_set_hold) */
	bool released;
	int64_t now; /* the latest `now` an input carried (for calls that carry none) */
};

/* The one writer of node.in_hold, so that n_held stays its count. */
static inline void eng_set_hold(oe_engine *e, node *n, bool on)
{
	if (n->in_hold == on)
		return;
	n->in_hold = on;
	n->was_held |= on;
	if (on)
		e->n_held++;
	else
		e->n_held--;
}

#define NS_PER_MS 1000000LL

static inline void saw_time(oe_engine *e, int64_t now)
{
	if (now > e->now)
		e->now = now;
}

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > OE_UNLIMITED - b ? OE_UNLIMITED : a + b;
}

static inline int64_t deadline_after(int64_t now, uint64_t ms)
{
	if (ms >= (uint64_t)(INT64_MAX - now) / NS_PER_MS)
		return OE_NO_DEADLINE - 1;
	return now + (int64_t)ms * NS_PER_MS;
}

/* engine.c */
G_GNUC_INTERNAL oe_action *eng_emit(oe_actions *out, oe_action_kind kind, uint64_t id, uint64_t value);
G_GNUC_INTERNAL void eng_emit_log(oe_actions *out, uint64_t id, const char *msg);
G_GNUC_INTERNAL node *eng_find(const oe_engine *e, uint64_t id);
typedef void (*node_fn)(oe_engine *e, node *n, void *ud);
/* fn on n and every descendant, pre-order. */
G_GNUC_INTERNAL void eng_walk(oe_engine *e, node *n, node_fn fn, void *ud);
G_GNUC_INTERNAL node *eng_new_node(oe_engine *e, uint64_t id, node *parent);
G_GNUC_INTERNAL bool eng_under_oom(const node *n);

/* knobs.c */
G_GNUC_INTERNAL bool eng_managed(const node *n);
G_GNUC_INTERNAL bool eng_held_by_daemon(const node *n);
G_GNUC_INTERNAL void eng_persist(oe_engine *e, node *n, oe_actions *out);
G_GNUC_INTERNAL void eng_desired_knobs(const oe_engine *e, const node *n, uint64_t *high, uint64_t *max);
G_GNUC_INTERNAL void eng_set_max(oe_engine *e, node *n, uint64_t v, oe_actions *out, oe_action_kind kind);
G_GNUC_INTERNAL void eng_reconcile(oe_engine *e, node *n, oe_actions *out);

/* hold.c */
G_GNUC_INTERNAL bool eng_kill_due(const node *n);
G_GNUC_INTERNAL void eng_rearm(node *n, int64_t now);

#endif
