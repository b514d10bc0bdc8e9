/* hold.c — a managed cgroup's hold: the onset, readings and deadlines, the kill,
 * the freeze, recovery, and who is notified. Pure (engine_impl.h): readings and
 * `now` come in, actions go out.
 */
#include "engine_impl.h"

/* A kernel kill may take this long to show all its OOM events. */
#define QUIET_AFTER_KILL_NS (2000 * NS_PER_MS)

static void notify_one(oe_engine *e, node *n, void *ud)
{
	(void)e;
	eng_emit(ud, OE_ACT_NOTIFY, n->id, 0);
}

/* RULE 11: the listeners of the cgroup under OOM and of every descendant hear each
 * onset, as v1 walked the subtree of the memcg under OOM. */
static void notify_subtree(oe_engine *e, node *n, oe_actions *out)
{
	eng_walk(e, n, notify_one, out);
}

/* memory.oom_control of every cgroup whose under_oom follows this one changes. */
static void changed_one(oe_engine *e, node *n, void *ud)
{
	(void)e;
	eng_emit(ud, OE_ACT_CHANGED, n->id, 0);
}

static void under_oom_changed(oe_engine *e, node *n, oe_actions *out)
{
	/* Only the subtree's view changes, and only if no ancestor already held it. */
	if (n->parent && eng_under_oom(n->parent))
		return;
	eng_walk(e, n, changed_one, out);
}

/* RULE 2: the OOM condition starts on a managed cgroup: under_oom, the listeners
 * notified, no kill before T ms, and T reset to 0. */
static void start_hold(oe_engine *e, node *n, int64_t now, oe_actions *out)
{
	eng_set_hold(e, n, true);
	n->hold_onset = now;
	n->raised = false;
	n->deadline = deadline_after(now, n->delay_ms);
	n->delay_spent = n->delay_ms == 0;
	n->delay_ms = 0; /* one-shot, as in the patch: it reads 0 from now on */
	n->next_sample = now + e->cfg.sample_interval_ns;
	n->calm_since = OE_NO_DEADLINE;
	eng_reconcile(e, n, out);
	notify_subtree(e, n, out);
	under_oom_changed(e, n, out);
}

static void end_hold(oe_engine *e, node *n, oe_actions *out)
{
	eng_set_hold(e, n, false);
	n->delay_spent = false;
	n->raised = false;
	n->hold_onset = 0;
	n->deadline = OE_NO_DEADLINE;
	if (n->frozen) {
		eng_emit(out, OE_ACT_THAW, n->id, 0);
		n->frozen = false;
	}
	under_oom_changed(e, n, out);
	eng_reconcile(e, n, out);
	/* A memory.max written under the usage (the kernel-mode kill, or a hand-back over
	 * charges left by tasks moved out) makes the kernel count an OOM, killing only if
	 * it finds a task: that one is ours, not news (rules 9, 11). */
	if (n->have_reading && n->applied_max < n->last.current)
		n->quiet_until = e->now + QUIET_AFTER_KILL_NS;
}

/* The kill that resolves a hold whose wait is over (rule 3): the kernel's OOM killer
 * by default, cgroup.kill in group mode. */
static void kill_now(oe_engine *e, node *n, int64_t now, oe_actions *out)
{
	if (e->cfg.kill_mode == OE_KILL_GROUP) {
		eng_emit(out, OE_ACT_KILL_GROUP, n->id, 0);
	} else {
		/* Writing L makes the kernel reclaim, then OOM-kill one task (kio/kill_once.c:
		 * its loop would go on killing while the victim's pages are freed). */
		eng_set_max(e, n, n->limit, out, OE_ACT_KILL_KERNEL);
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
	eng_persist(e, n, out);
	oe_action *a = eng_emit(out, OE_ACT_FREEZE, n->id, 0);
	if (a)
		a->guarded = true;
}

/* A throttled task sleeps up to 2 s per charge in the kernel's memory.high penalty
 * (MEMCG_MAX_HIGH_DELAY_JIFFIES), making no high events meanwhile: quiet readings
 * at L prove nothing until that long has passed. */
#define CALM_NS (2100 * NS_PER_MS)

/* Reclaim at memory.high leaves usage a few pages under L: a raise of L that leaves
 * less room than this is filled at once by the task that was held. */
#define RECLAIM_DIP_BYTES (256u << 10)

/* RULE 5: has the OOM condition of a held cgroup really gone? At once when nobody is
 * left or L was raised above the usage; otherwise only after usage has stayed under
 * L with nothing pushing for CALM_NS. One reading under L, however deep, proves
 * nothing while a task still pushes: the kernel gives a per-CPU charge stock back
 * (64 pages: 256 KiB) whenever another cgroup charges on that CPU, reclaims page cache
 * at memory.high, and a bystander may exit, each a moment before the held task takes
 * the room again. Issue 19 (real systemd, 6.12): such a dip 10 ms after the onset
 * ended a hold, spent T, wrote memory.max back to L and the kernel killed the task at
 * once; under oom_kill_disable the hold ended and started again. */
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
	/* The user (or a writer of the real memory.max) raised L with room to spare. */
	if (n->raised && n->limit - r->current >= RECLAIM_DIP_BYTES)
		return true;
	/* Under L: memory given back (a task freed or exited, charges of tasks moved out
	 * stay behind), or a dip while the task pushes on (see above). Recovered once
	 * nothing pushed for longer than the penalty sleep can hide a push. */
	if (n->calm_since == OE_NO_DEADLINE)
		n->calm_since = now;
	return now - n->calm_since >= CALM_NS;
}

/* RULE 3: a hold whose wait is over ends in a kill if the OOM condition still holds.
 * RULE 4: never while D = 1; D = 0 written after the wait is over makes it due at once.
 * RULE 8: so D = 1 wins over T. */
bool eng_kill_due(const node *n)
{
	return n->in_hold && n->delay_spent && !n->disable;
}

/* Rules 3, 4, 5, 8: what a held cgroup's latest reading means. `pressed` says the
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
	if (eng_kill_due(n)) {
		kill_now(e, n, now, out);
		return;
	}
	freeze_if_escaping(e, n, r, out);
}

/* RULE 6: a new delay written during a hold restarts its wait (0: the wait is over). */
void eng_rearm(node *n, int64_t now)
{
	n->deadline = deadline_after(now, n->delay_ms);
	n->delay_spent = n->delay_ms == 0;
	n->delay_ms = 0;
}

/* RULE 9: while the daemon holds a cgroup, only its own kill may take a task; a kill
 * by the kernel before then is a broken promise, logged. */
static void check_promise(node *n, const oe_reading *r, int64_t now, oe_actions *out)
{
	if (!n->have_reading || now < n->quiet_until || !eng_held_by_daemon(n))
		return;
	bool killed = r->local_oom_kill > n->last.local_oom_kill || r->ev_oom_kill > n->last.ev_oom_kill;
	if (killed && !eng_kill_due(n))
		eng_emit_log(out, n->id,
			 "broken promise: the kernel OOM-killed in a held cgroup (usage passed the safety ceiling)");
}

/* RULE 11: an OOM the kernel handled itself (rule 1) is an onset too, and reaches v1
 * listeners. */
static void notify_native_oom(oe_engine *e, node *n, const oe_reading *r, int64_t now, oe_actions *out)
{
	if (n->have_reading && r->local_oom > n->last.local_oom && now >= n->quiet_until)
		notify_subtree(e, n, out);
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
	node *n = eng_find(e, id);
	if (!n || n->is_root || e->released || older_than_last(n, r))
		return;
	check_promise(n, r, now, out);
	/* Charges left over L by tasks gone or moved out hold nobody: no onset. */
	bool onset = !n->in_hold && eng_managed(n) && r->current > n->limit && !r->no_tasks;
	/* An onset notifies on its own: the kernel's count of the same OOM must not add a second. */
	if (!onset)
		notify_native_oom(e, n, r, now, out);
	if (n->have_reading && r->local_oom_kill != n->last.local_oom_kill)
		eng_emit(out, OE_ACT_CHANGED, n->id, 0); /* rule 10: oom_kill moved */
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

struct tick_ctx {
	int64_t now;
	oe_actions *out;
};

static void tick_one(oe_engine *e, node *n, void *ud)
{
	struct tick_ctx *w = ud;
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
			eng_persist(e, n, w->out);
		sample = true; /* the kill is decided on a reading taken now */
	}
	if (w->now >= n->next_sample)
		sample = true;
	if (sample) {
		n->next_sample = w->now + e->cfg.sample_interval_ns;
		eng_emit(w->out, OE_ACT_SAMPLE, n->id, 0);
	}
}

void oe_tick(oe_engine *e, int64_t now, oe_actions *out)
{
	saw_time(e, now);
	if (!e->root || e->released)
		return;
	struct tick_ctx w = { .now = now, .out = out };
	eng_walk(e, e->root, tick_one, &w);
}

int64_t oe_next_wakeup(const oe_engine *e)
{
	int64_t next = OE_NO_DEADLINE;
	GHashTableIter it;
	gpointer v;
	/* a user write or an adoption asks after each change: at 10,000 cgroups the walk
	 * was most of a limit write's time (bench-walk, 6.12: 6.3 ms a write against 2.1 ms
	 * at 2,000), and with no hold nothing can wake */
	if (e->released || e->n_held == 0)
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
	node *n = eng_find(e, id);
	if (!n || killed == 0)
		return;
	n->group_kills += killed; /* rule 10: group-mode kills count as this cgroup's */
	eng_persist(e, n, out);
	eng_emit(out, OE_ACT_CHANGED, n->id, 0);
}
