/* engine.c — every OOM-delay rule of SEMANTICS.md, as a pure state machine.
 *
 * The shell tells the engine what happened (writes, readings, time passing) and
 * the engine answers with actions. Where a rule lives:
 *   rule 1 (native)            desired_knobs(), notify_native_oom()
 *   rule 2 (delay, onset)      start_hold()
 *   rule 3 (kill after delay)  decide_held()
 *   rule 4, 8 (disable wins)   decide_held(), oe_write_disable()
 *   rule 5 (recovery)          recovered()
 *   rule 6 (re-arm)            rearm()
 *   rule 7 (inheritance)       oe_cgroup_add()
 *   rule 9 (guarantee)         check_promise()
 *   rule 10 (oom_kill counter) view_of()
 *   rule 11 (notification)     notify_subtree()
 *   rule 12 (under_oom)        under_oom()
 */
#include "oomd/engine.h"

#include <errno.h>
#include <glib.h>
#include <string.h>

typedef struct node node;
struct node {
	uint64_t id;
	node *parent, *child, *sibling;
	bool is_root;

	uint64_t limit, user_high, delay_ms;
	bool disable;

	bool in_hold, delay_spent, frozen;
	int64_t deadline, next_sample;
	int64_t calm_since; /* first quiet reading under L in a row, or OE_NO_DEADLINE */

	uint64_t group_kills;
	bool have_reading;
	oe_reading last;
	/* Our own kill makes the kernel count OOM events; those are not a new onset. */
	int64_t quiet_until;

	uint64_t applied_high, applied_max;
	/* Earlier real memory.max writes of the daemon, whose inotify echoes may still come. */
	struct own_write {
		uint64_t value;
		int64_t at; /* INT64_MIN: empty */
	} own_max[8];
	unsigned own_next;
	bool has_persisted;
	bool persisted_stale; /* a store failed: what is stored is not `persisted` */
	oe_persisted persisted;
};

struct oe_engine {
	oe_config cfg;
	GHashTable *nodes; /* id -> node */
	node *root;
	bool released;
	int64_t now; /* the latest `now` an input carried (for calls that carry none) */
};

#define NS_PER_MS 1000000LL
/* A kernel kill may take this long to show all its OOM events. */
#define QUIET_AFTER_KILL_NS (2000 * NS_PER_MS)
/* The watcher reads memory.max some time after our write and feeds it in later still
 * (outside the engine lock, behind a loaded loop): an echo can be this old. A foreign
 * writer picking a value we wrote longer ago than this is heard again. */
#define OWN_ECHO_NS (10000 * NS_PER_MS)

void oe_config_defaults(oe_config *cfg)
{
	cfg->ceiling_bytes = 64ull << 20;
	cfg->freeze_margin_bytes = 8ull << 20;
	cfg->sample_interval_ns = 10 * NS_PER_MS;
	cfg->kill_mode = OE_KILL_KERNEL;
}

/* ---- action buffer ---------------------------------------------------- */

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

static oe_action *emit(oe_actions *out, oe_action_kind kind, uint64_t id, uint64_t value)
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

static void emit_log(oe_actions *out, uint64_t id, const char *msg)
{
	oe_action *a = emit(out, OE_ACT_LOG, id, 0);
	if (a)
		a->msg = msg;
}

/* ---- tree ------------------------------------------------------------- */

static node *find(const oe_engine *e, uint64_t id)
{
	return g_hash_table_lookup(e->nodes, &id);
}

typedef void (*node_fn)(oe_engine *e, node *n, void *ud);

static void walk(oe_engine *e, node *n, node_fn fn, void *ud)
{
	fn(e, n, ud);
	for (node *c = n->child; c; c = c->sibling)
		walk(e, c, fn, ud);
}

/* rule 12: under_oom is 1 on the cgroup under OOM and on all its descendants. */
static bool under_oom(const node *n)
{
	for (; n; n = n->parent)
		if (n->in_hold)
			return true;
	return false;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > OE_UNLIMITED - b ? OE_UNLIMITED : a + b;
}

static int64_t deadline_after(int64_t now, uint64_t ms)
{
	if (ms >= (uint64_t)(INT64_MAX - now) / NS_PER_MS)
		return OE_NO_DEADLINE - 1;
	return now + (int64_t)ms * NS_PER_MS;
}

/* ---- what the daemon keeps for a cgroup --------------------------------- */

static bool managed(const node *n)
{
	return !n->is_root && n->limit != OE_UNLIMITED && (n->delay_ms > 0 || n->disable);
}

/* The daemon holds the real knobs while a hold may be needed or is running. */
static bool held_by_daemon(const node *n)
{
	return managed(n) || n->in_hold;
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
static void persist(oe_engine *e, node *n, oe_actions *out)
{
	if (e->released || !has_state(n))
		return;
	oe_persisted p = snapshot(n);
	if (n->has_persisted && !n->persisted_stale && same_persisted(&p, &n->persisted))
		return;
	oe_action *a = emit(out, OE_ACT_PERSIST, n->id, 0);
	if (!a)
		return;
	a->persisted = p;
	n->persisted = p;
	n->has_persisted = true;
	n->persisted_stale = false;
}

/* rule 1 and "How a managed cgroup is held": the real knobs the daemon wants. */
static void desired_knobs(const oe_engine *e, const node *n, uint64_t *high, uint64_t *max)
{
	if (held_by_daemon(n)) {
		*high = n->limit < n->user_high ? n->limit : n->user_high;
		*max = sat_add(n->limit, e->cfg.ceiling_bytes);
	} else {
		*high = n->user_high;
		*max = n->limit;
	}
}

static void set_max(oe_engine *e, node *n, uint64_t v, oe_actions *out, oe_action_kind kind)
{
	oe_action *a = emit(out, kind, n->id, v);
	/* A raise the state explains: without it, a restart would take the raised value for L. */
	if (a && kind == OE_ACT_SET_MAX)
		a->guarded = v > n->applied_max && has_state(n);
	/* Two slots were not enough: one user write can make two writes (a raise that ends
	 * a hold), so an echo read just before it named a value three writes old, which was
	 * then taken for a foreign write and became L. */
	n->own_max[n->own_next] = (struct own_write){ n->applied_max, e->now };
	n->own_next = (n->own_next + 1) % G_N_ELEMENTS(n->own_max);
	n->applied_max = v;
}

static bool own_recent_max(const oe_engine *e, const node *n, uint64_t v)
{
	for (size_t i = 0; i < G_N_ELEMENTS(n->own_max); i++) {
		const struct own_write *w = &n->own_max[i];
		if (w->at != INT64_MIN && w->value == v && e->now - w->at <= OWN_ECHO_NS)
			return true;
	}
	return false;
}

static void saw_time(oe_engine *e, int64_t now)
{
	if (now > e->now)
		e->now = now;
}

/* Bring the real knobs and the persisted state in line with the node. Entering
 * the daemon's care persists first; leaving it forgets last, so that a crash
 * never leaves real knobs the next start would mistake for the user's. */
static void reconcile(oe_engine *e, node *n, oe_actions *out)
{
	if (n->is_root || e->released)
		return;
	persist(e, n, out);
	uint64_t high, max;
	desired_knobs(e, n, &high, &max);
	/* Lower memory.high before memory.max goes up, so that a cgroup entering the
	 * daemon's care is never without its throttle. */
	if (high != n->applied_high) {
		/* Never guarded: a restart lowers memory.high again from whatever it finds. */
		emit(out, OE_ACT_SET_HIGH, n->id, high);
		n->applied_high = high;
	}
	if (max != n->applied_max)
		set_max(e, n, max, out, OE_ACT_SET_MAX);
	if (!has_state(n) && n->has_persisted) {
		emit(out, OE_ACT_FORGET, n->id, 0);
		n->has_persisted = false;
	}
}

/* The kernel's knobs may differ from what the engine last asked for: ask again. */
static void reassert(oe_engine *e, node *n, oe_actions *out)
{
	uint64_t high, max;
	desired_knobs(e, n, &high, &max);
	emit(out, OE_ACT_SET_HIGH, n->id, high);
	n->applied_high = high;
	if (max != n->applied_max)
		set_max(e, n, max, out, OE_ACT_SET_MAX);
	else
		emit(out, OE_ACT_SET_MAX, n->id, max);
}

/* ---- notifications ---------------------------------------------------- */

static void notify_one(oe_engine *e, node *n, void *ud)
{
	(void)e;
	emit(ud, OE_ACT_NOTIFY, n->id, 0);
}

/* rule 11: listeners of the cgroup under OOM and of every descendant hear it. */
static void notify_subtree(oe_engine *e, node *n, oe_actions *out)
{
	walk(e, n, notify_one, out);
}

/* memory.oom_control of every cgroup whose under_oom follows this one changes. */
static void changed_one(oe_engine *e, node *n, void *ud)
{
	(void)e;
	emit(ud, OE_ACT_CHANGED, n->id, 0);
}

static void under_oom_changed(oe_engine *e, node *n, oe_actions *out)
{
	/* Only the subtree's view changes, and only if no ancestor already held it. */
	if (n->parent && under_oom(n->parent))
		return;
	walk(e, n, changed_one, out);
}

/* ---- holds ------------------------------------------------------------ */

/* rule 2: the OOM condition starts on a managed cgroup. */
static void start_hold(oe_engine *e, node *n, int64_t now, oe_actions *out)
{
	n->in_hold = true;
	n->deadline = deadline_after(now, n->delay_ms);
	n->delay_spent = n->delay_ms == 0;
	n->delay_ms = 0; /* one-shot, as in the patch: it reads 0 from now on */
	n->next_sample = now + e->cfg.sample_interval_ns;
	n->calm_since = OE_NO_DEADLINE;
	reconcile(e, n, out);
	notify_subtree(e, n, out);
	under_oom_changed(e, n, out);
}

static void end_hold(oe_engine *e, node *n, oe_actions *out)
{
	n->in_hold = false;
	n->delay_spent = false;
	n->deadline = OE_NO_DEADLINE;
	if (n->frozen) {
		emit(out, OE_ACT_THAW, n->id, 0);
		n->frozen = false;
	}
	under_oom_changed(e, n, out);
	reconcile(e, n, out);
	/* A memory.max written under the usage (the kernel-mode kill, or a hand-back over
	 * charges left by tasks moved out) makes the kernel count an OOM, killing only if
	 * it finds a task: that one is ours, not news (rules 9, 11). */
	if (n->have_reading && n->applied_max < n->last.current)
		n->quiet_until = e->now + QUIET_AFTER_KILL_NS;
}

/* rule 3: the kill that resolves a hold whose wait is over. */
static void kill_now(oe_engine *e, node *n, int64_t now, oe_actions *out)
{
	if (e->cfg.kill_mode == OE_KILL_GROUP) {
		emit(out, OE_ACT_KILL_GROUP, n->id, 0);
	} else {
		/* Writing L makes the kernel reclaim, then OOM-kill until usage fits. */
		set_max(e, n, n->limit, out, OE_ACT_KILL_KERNEL);
	}
	n->quiet_until = now + QUIET_AFTER_KILL_NS;
	end_hold(e, n, out);
}

/* Throttling is not holding it: stop it before it reaches the ceiling. */
static void freeze_if_escaping(oe_engine *e, node *n, const oe_reading *r, oe_actions *out)
{
	if (n->frozen || r->current <= sat_add(n->limit, e->cfg.freeze_margin_bytes))
		return;
	n->frozen = true;
	persist(e, n, out);
	oe_action *a = emit(out, OE_ACT_FREEZE, n->id, 0);
	if (a)
		a->guarded = true;
}

/* A throttled task sleeps up to 2 s per charge in the kernel's memory.high penalty
 * (MEMCG_MAX_HIGH_DELAY_JIFFIES), making no high events meanwhile: quiet readings
 * at L prove nothing until that long has passed. */
#define CALM_NS (2100 * NS_PER_MS)
/* Reclaim at memory.high leaves usage a few pages under L; a drop further than
 * this is memory really given back (a task exited, was killed, L was raised). */
#define RECLAIM_DIP_BYTES (256u << 10)

/* rule 5: has the OOM condition of a held cgroup really gone? */
static bool recovered(node *n, int64_t now, const oe_reading *r, bool pressed)
{
	/* Every task exited, was killed or was moved out: nobody is held any more. Usage
	 * may stay over L (cgroup v2 leaves a moved task's charges behind), so it alone
	 * would keep the hold, and the cgroup's listeners waiting, until the deadline. */
	if (r->no_tasks)
		return true;
	if (r->current > n->limit || pressed) {
		n->calm_since = OE_NO_DEADLINE;
		return false;
	}
	if (n->limit - r->current >= RECLAIM_DIP_BYTES)
		return true;
	/* Just under L: a reclaim dip, or tasks moved out whose charges stay behind
	 * (cgroup v2 does not move charges). Recovered once nothing pushed for a while. */
	if (n->calm_since == OE_NO_DEADLINE)
		n->calm_since = now;
	return now - n->calm_since >= CALM_NS;
}

/* rules 3, 4, 5, 8: what a held cgroup's latest reading means. `pressed` says the
 * kernel throttled it again since the previous reading. */
static void decide_held(oe_engine *e, node *n, int64_t now, const oe_reading *r, bool pressed,
			oe_actions *out)
{
	if (recovered(n, now, r, pressed)) {
		end_hold(e, n, out); /* held tasks run on */
		return;
	}
	if (r->current <= n->limit)
		return; /* not over L at this instant: neither a kill nor a freeze is due */
	if (n->delay_spent && !n->disable) {
		kill_now(e, n, now, out); /* rule 3; rule 4/8: never while D = 1 */
		return;
	}
	freeze_if_escaping(e, n, r, out);
}

/* rule 6: a new delay written during a hold restarts its wait. */
static void rearm(node *n, int64_t now)
{
	n->deadline = deadline_after(now, n->delay_ms);
	n->delay_spent = n->delay_ms == 0;
	n->delay_ms = 0;
}

/* rule 9: while the daemon holds a cgroup, only its own kill may take a task. */
static void check_promise(node *n, const oe_reading *r, int64_t now, oe_actions *out)
{
	if (!n->have_reading || now < n->quiet_until || !held_by_daemon(n))
		return;
	bool killed = r->local_oom_kill > n->last.local_oom_kill || r->ev_oom_kill > n->last.ev_oom_kill;
	bool kill_due = n->in_hold && n->delay_spent && !n->disable;
	if (killed && !kill_due)
		emit_log(out, n->id,
			 "broken promise: the kernel OOM-killed in a held cgroup (usage passed the safety ceiling)");
}

/* rule 1 and 11: an OOM the kernel handled itself still reaches v1 listeners. */
static void notify_native_oom(oe_engine *e, node *n, const oe_reading *r, int64_t now, oe_actions *out)
{
	if (n->have_reading && r->local_oom > n->last.local_oom && now >= n->quiet_until)
		notify_subtree(e, n, out);
}

/* ---- inputs ----------------------------------------------------------- */

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

static node *new_node(oe_engine *e, uint64_t id, node *parent)
{
	node *n = g_new0(node, 1);
	n->id = id;
	n->parent = parent;
	n->limit = OE_UNLIMITED;
	n->user_high = OE_UNLIMITED;
	n->applied_high = OE_UNLIMITED;
	n->applied_max = OE_UNLIMITED;
	for (size_t i = 0; i < G_N_ELEMENTS(n->own_max); i++)
		n->own_max[i].at = INT64_MIN;
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
	e->root = new_node(e, id, NULL);
	e->root->is_root = true;
}

/* Adoption never loosens what the real tree held when the daemon found the cgroup:
 * state says what the daemon had done, and a daemon that raised memory.max to
 * L + ceiling left it at L + ceiling, never below L; memory.high it lowered to
 * min(L, the user's high). A limit or high above that came from somewhere else (a
 * hand-edited or forged attribute, or a crash between storing a larger L and
 * raising to it): the real tree wins, and the discarded value is logged. For state
 * that had the knobs held, the real memory.max is taken as the daemon's raise, so
 * that the ceiling is not added a second time. */
static void clamp_to_real(const oe_engine *e, node *n, const oe_persisted *p, uint64_t real_max,
			  uint64_t real_high, oe_actions *out)
{
	if (n->limit > real_max) {
		oe_action *a = emit(out, OE_ACT_LOG, n->id, n->limit);
		if (a)
			a->msg = "persisted limit above the real memory.max found at adoption: discarded "
				 "for the real tree's (the state's limit in brackets)";
		bool held = p->delay_ms > 0 || p->disable || p->in_hold;
		uint64_t c = e->cfg.ceiling_bytes;
		n->limit = held && real_max != OE_UNLIMITED && real_max > c ? real_max - c : real_max;
	}
	/* What the daemon that stored this state wrote to memory.high: min(its L, high). */
	uint64_t own_high = p->limit < p->user_high ? p->limit : p->user_high;
	if (n->user_high > real_high && real_high != own_high) {
		oe_action *a = emit(out, OE_ACT_LOG, n->id, n->user_high);
		if (a)
			a->msg = "persisted memory.high above the real one found at adoption: discarded "
				 "(the state's value in brackets)";
		n->user_high = real_high;
	}
}

static void restore(oe_engine *e, node *n, int64_t now, uint64_t real_max, uint64_t real_high,
		    const oe_persisted *p, oe_actions *out)
{
	n->limit = p->limit;
	n->user_high = p->user_high;
	clamp_to_real(e, n, p, real_max, real_high, out);
	n->delay_ms = p->delay_ms;
	n->disable = p->disable;
	n->group_kills = p->group_kills;
	n->frozen = p->frozen;
	n->has_persisted = true;
	n->persisted = *p;
	n->persisted_stale = n->limit != p->limit || n->user_high != p->user_high;
	/* A real memory.max that is neither L nor the daemon's ceiling was written by
	 * someone else while we were away: adopt it, as we would have. */
	uint64_t high, max;
	desired_knobs(e, n, &high, &max);
	if (real_max != max && real_max != n->limit && !p->in_hold)
		n->limit = real_max;
	if (p->in_hold) {
		n->in_hold = true;
		n->deadline = p->deadline_ns;
		n->delay_spent = p->delay_spent || p->deadline_ns <= now;
		n->next_sample = now;
		/* The hold is finished or resumed by a reading, asked for by the caller
		 * after reconcile(): the sample may kill and forget the state, and must
		 * not be followed by the restore's own persist and knob writes. */
	} else if (n->frozen) {
		emit(out, OE_ACT_THAW, n->id, 0); /* frozen outside a hold: a crash in between */
		n->frozen = false;
	}
}

bool oe_cgroup_add(oe_engine *e, int64_t now, uint64_t id, uint64_t parent, uint64_t real_max,
		   uint64_t real_high, const oe_persisted *persisted, oe_actions *out)
{
	saw_time(e, now);
	if (find(e, id))
		return true;
	node *p = find(e, parent);
	if (!p)
		return false;
	node *n = new_node(e, id, p);
	n->applied_max = real_max;
	n->applied_high = real_high;
	if (persisted) {
		restore(e, n, now, real_max, real_high, persisted, out);
	} else {
		n->limit = real_max;
		n->user_high = real_high;
		/* rule 7: a new cgroup starts with its parent's T and D. */
		n->delay_ms = p->delay_ms;
		n->disable = p->is_root ? false : p->disable;
	}
	reconcile(e, n, out);
	if (under_oom(n))
		emit(out, OE_ACT_CHANGED, n->id, 0);
	if (n->in_hold)
		emit(out, OE_ACT_SAMPLE, n->id, 0); /* a restored hold: finish or resume it now */
	return true;
}

void oe_cgroup_remove(oe_engine *e, uint64_t id, oe_actions *out)
{
	node *n = find(e, id);
	if (!n || n->is_root)
		return;
	while (n->child)
		oe_cgroup_remove(e, n->child->id, out);
	node **pp = &n->parent->child;
	while (*pp != n)
		pp = &(*pp)->sibling;
	*pp = n->sibling;
	g_hash_table_remove(e->nodes, &id);
}

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
		rearm(n, w->now);
	reconcile(e, n, w->out);
	/* 0 kills now, through decide_held. The shell answers a SAMPLE on the spot, so it
	 * goes last: a PERSIST after it stored the hold over the kill's FORGET. */
	if (n->in_hold && n->delay_spent && w->ms == 0)
		emit(w->out, OE_ACT_SAMPLE, n->id, 0);
}

int oe_write_delay(oe_engine *e, int64_t now, uint64_t id, uint64_t ms, oe_actions *out)
{
	saw_time(e, now);
	node *n = find(e, id);
	if (!n)
		return ENOENT;
	if (ms > OE_MAX_DELAY_MS)
		return EINVAL;
	/* The patch sets the delay on the cgroup and every descendant. */
	struct delay_write w = { .ms = ms, .now = now, .out = out };
	walk(e, n, set_delay_one, &w);
	return 0;
}

/* A cgroup whose own knobs a user may write: the root has none (v1 refused them too). */
static int knob_node(oe_engine *e, uint64_t id, node **n)
{
	*n = find(e, id);
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
	reconcile(e, n, out);
	if (was != n->disable)
		emit(out, OE_ACT_CHANGED, n->id, 0);
	/* rule 4: D = 0 in a hold whose wait is over kills at once (decided on a fresh reading). */
	if (n->in_hold && n->delay_spent && !n->disable)
		emit(out, OE_ACT_SAMPLE, n->id, 0);
	return 0;
}

int oe_write_limit(oe_engine *e, int64_t now, uint64_t id, uint64_t bytes, oe_actions *out)
{
	saw_time(e, now);
	node *n;
	int err = knob_node(e, id, &n);
	if (err)
		return err;
	n->limit = bytes;
	reconcile(e, n, out);
	/* rule 5: a raised limit may end a hold; a lowered one may start one. */
	if (held_by_daemon(n))
		emit(out, OE_ACT_SAMPLE, n->id, 0);
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
	reconcile(e, n, out);
	return 0;
}

void oe_real_max_seen(oe_engine *e, int64_t now, uint64_t id, uint64_t value, oe_actions *out)
{
	saw_time(e, now);
	node *n = find(e, id);
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
	n->applied_max = value;
	oe_write_limit(e, now, id, value, out);
}

/* The kernel's counters only grow: a reading behind the last one was taken before it
 * (two threads read, the later reader took the lock first). Using it would move the
 * counters back, and the next reading would count the same events a second time. */
static bool older_than_last(const node *n, const oe_reading *r)
{
	const oe_reading *l = &n->last;
	return n->have_reading &&
	       (r->ev_high < l->ev_high || r->ev_max < l->ev_max || r->ev_oom < l->ev_oom ||
		r->ev_oom_kill < l->ev_oom_kill || r->local_oom < l->local_oom ||
		r->local_oom_kill < l->local_oom_kill);
}

void oe_sample(oe_engine *e, int64_t now, uint64_t id, const oe_reading *r, oe_actions *out)
{
	saw_time(e, now);
	node *n = find(e, id);
	if (!n || n->is_root || e->released || older_than_last(n, r))
		return;
	check_promise(n, r, now, out);
	/* Charges left over L by tasks gone or moved out hold nobody: no onset. */
	bool onset = !n->in_hold && managed(n) && r->current > n->limit && !r->no_tasks;
	/* An onset notifies on its own: the kernel's count of the same OOM must not add a second. */
	if (!onset)
		notify_native_oom(e, n, r, now, out);
	if (n->have_reading && r->local_oom_kill != n->last.local_oom_kill)
		emit(out, OE_ACT_CHANGED, n->id, 0); /* rule 10: oom_kill moved */
	bool pressed = n->have_reading && r->ev_high > n->last.ev_high;
	n->last = *r;
	n->have_reading = true;

	if (onset) {
		start_hold(e, n, now, out);
		freeze_if_escaping(e, n, r, out);
	} else if (n->in_hold) {
		decide_held(e, n, now, r, pressed, out);
	}
}

static void tick_one(oe_engine *e, node *n, void *ud)
{
	struct delay_write *w = ud;
	if (!n->in_hold)
		return;
	bool sample = false;
	if (!n->delay_spent && w->now >= n->deadline) {
		/* Persisted here only when no kill can follow (D = 1): nothing may stand
		 * between the deadline and the kill (a setxattr allocates, and stalls under
		 * global pressure); a restart takes a passed deadline as spent anyway, and
		 * the kill's own batch persists the end of the hold. */
		n->delay_spent = true;
		if (n->disable)
			persist(e, n, w->out);
		sample = true; /* the kill is decided on a reading taken now */
	}
	if (w->now >= n->next_sample)
		sample = true;
	if (sample) {
		n->next_sample = w->now + e->cfg.sample_interval_ns;
		emit(w->out, OE_ACT_SAMPLE, n->id, 0);
	}
}

void oe_tick(oe_engine *e, int64_t now, oe_actions *out)
{
	saw_time(e, now);
	if (!e->root || e->released)
		return;
	struct delay_write w = { .now = now, .out = out };
	walk(e, e->root, tick_one, &w);
}

int64_t oe_next_wakeup(const oe_engine *e)
{
	int64_t next = OE_NO_DEADLINE;
	GHashTableIter it;
	gpointer v;
	if (e->released)
		return next;
	g_hash_table_iter_init(&it, e->nodes);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		const node *n = v;
		if (!n->in_hold)
			continue;
		if (!n->delay_spent && n->deadline < next)
			next = n->deadline;
		if (n->next_sample < next)
			next = n->next_sample;
	}
	return next;
}

void oe_group_killed(oe_engine *e, uint64_t id, uint64_t killed, oe_actions *out)
{
	node *n = find(e, id);
	if (!n || killed == 0)
		return;
	n->group_kills += killed; /* rule 10: group-mode kills count as this cgroup's */
	persist(e, n, out);
	emit(out, OE_ACT_CHANGED, n->id, 0);
}

void oe_state_unstored(oe_engine *e, uint64_t id, uint64_t real_max, uint64_t real_high,
			bool real_frozen)
{
	node *n = find(e, id);
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
		emit(out, OE_ACT_THAW, n->id, 0);
	if (n->applied_max != n->limit)
		emit(out, OE_ACT_SET_MAX, n->id, n->limit);
	if (n->applied_high != n->user_high)
		emit(out, OE_ACT_SET_HIGH, n->id, n->user_high);
	if (n->has_persisted)
		emit(out, OE_ACT_FORGET, n->id, 0);
	n->frozen = false;
	n->applied_max = n->limit;
	n->applied_high = n->user_high;
	n->has_persisted = false;
}

void oe_release_all(oe_engine *e, oe_actions *out)
{
	if (!e->root)
		return;
	walk(e, e->root, release_one, out);
	e->released = true;
}

/* ---- queries ---------------------------------------------------------- */

bool oe_view_get(const oe_engine *e, uint64_t id, oe_view *v)
{
	const node *n = find(e, id);
	if (!n)
		return false;
	memset(v, 0, sizeof(*v));
	v->limit = n->limit;
	v->user_high = n->user_high;
	v->delay_ms = n->delay_ms;
	v->disable = n->disable;
	v->under_oom = under_oom(n);
	v->in_hold = n->in_hold;
	v->oom_kill = n->last.local_oom_kill + n->group_kills;
	desired_knobs(e, n, &v->real_high, &v->real_max);
	v->frozen = n->frozen;
	v->managed = managed(n);
	v->deadline_ns = n->in_hold ? n->deadline : OE_NO_DEADLINE;
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
	node *n = find(e, id);
	struct foreach_ctx c = { fn, ud };
	if (n)
		walk((oe_engine *)e, n, foreach_one, &c);
}
