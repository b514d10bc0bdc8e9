/* ctl_act.c — implements ctl_act.h.
 *
 * Calls from FUSE workers carry their actions out inline (the caller's write
 * blocks as it would natively). The loop and the deadline thread must never
 * block: each runs inline only what cannot (the loop: reads and notifications;
 * the deadline thread: samples through kept descriptors) and hands the rest of a
 * batch, from its first kernel write on, to the actuators.
 *
 * There are NACTUATORS actuator threads, so that a kill the kernel is slow to carry
 * out (its reclaim retries inside the memory.max write: up to hundreds of ms under
 * global pressure) does not delay another cgroup's kill. Every batch that writes
 * the kernel takes its place in one order (order.h) before the engine's lock is
 * let go, and starts only when no batch before it names any of its cgroups: a FUSE
 * worker's inline THAW cannot overtake a FREEZE still queued.
 *
 * A failed state write (PERSIST) marks the cgroup unstored: its guarded actions
 * (raises, FREEZE: what a restart could not undo without the state) are skipped
 * until a PERSIST succeeds, and the engine is told what the kernel still has.
 */
#define G_LOG_DOMAIN "oomdelayfs"
#include "ctl_act.h"
#include "ctl_deadline.h"
#include "ctl_hooks.h"
#include "ctl_lock.h"
#include "ctl_post.h"
#include "oomd/kernel_io.h"
#include "oomd/persist.h"

#include <errno.h>
#include <inttypes.h>

#define MAX_NESTING 4   /* SAMPLE -> oe_sample -> SAMPLE ... is bounded anyway */

/* Actions that change the real tree; the ones that must keep their order. */
static bool writes_kernel(oe_action_kind k)
{
	return k != OE_ACT_SAMPLE && k != OE_ACT_NOTIFY && k != OE_ACT_CHANGED && k != OE_ACT_LOG;
}

/* Feeds a finished engine call's actions out: locked on entry, unlocked on return.
 * Returns what ctl_carry_out returns. rearm: the call may have moved the next
 * wake-up. after_copy (may be NULL) runs under the lock once the actions hold their
 * own references, before anything is carried out. */
int ctl_finish_locked_with(od_controller *c, const ctl_ctx *ctx, bool rearm,
			   void (*after_copy)(od_controller *c, void *ud), void *ud)
{
	size_t n = c->acts.n;
	if (rearm)
		ctl_rearm_locked(c);
	oe_action stack_v[STACK_ACTS];
	od_cg *stack_g[STACK_ACTS];
	oe_action *v = n <= STACK_ACTS ? stack_v : g_new(oe_action, n);
	od_cg **g = n <= STACK_ACTS ? stack_g : g_new(od_cg *, n);
	ctl_copy_out_locked(c, v, g);
	oe_actions_clear(&c->acts);
	if (after_copy)
		after_copy(c, ud);
	oe_action *wide = ctl_unwiden_locked(c);
	int r = 0;
	if (n > 0)
		r = ctl_carry_out(c, ctx, v, g, n); /* unlocks */
	else
		ctl_unlock(c);
	g_free(wide);
	for (size_t i = 0; i < n; i++)
		ctl_cg_unref(g[i]);
	if (v != stack_v) {
		g_free(v);
		g_free(g);
	}
	return r;
}

int ctl_finish_locked_rearm(od_controller *c, const ctl_ctx *ctx, bool rearm)
{
	return ctl_finish_locked_with(c, ctx, rearm, NULL, NULL);
}

int ctl_finish_locked(od_controller *c, const ctl_ctx *ctx)
{
	return ctl_finish_locked_rearm(c, ctx, true);
}

/* Keeps the hold's files of g open from the sample that finds it held (well before
 * any deadline) until the cgroup goes: closing them at the hold's end could race
 * with a kill still writing through them. Cgroups never held (ancestors whose
 * memory.events move with their children's) get none. If they cannot be opened,
 * the callers open per use. */
static void keep_hold_files(od_cg *g)
{
	if (g_atomic_pointer_get(&g->hold))
		return;
	od_kio_hold_files *h = g_new(od_kio_hold_files, 1);
	if (od_kio_hold_open(g->fd, h) < 0) {
		g_free(h);
		return;
	}
	if (!g_atomic_pointer_compare_and_exchange(&g->hold, NULL, h)) { /* another thread won */
		od_kio_hold_close(h);
		g_free(h);
	}
}

void ctl_sample(od_controller *c, const ctl_ctx *ctx, od_cg *g)
{
	oe_reading r;
	const od_kio_hold_files *h = g_atomic_pointer_get(&g->hold);
	if (od_kio_read_reading(g->fd, h, &r) < 0)
		return; /* logged; the cgroup may be going away */
	if (ctx->who == CTL_DEADLINE)
		od_diag_mark(OD_DIAG_READ);
	if (ctx->depth >= MAX_NESTING) {
		g_debug("cgroup %" PRIu64 ": sample nested too deep, left to the next tick", g->id);
		return;
	}
	ctl_ctx nested = { .who = ctx->who, .depth = ctx->depth + 1 };
	ctl_lock(c, "sample");
	if (ctx->who == CTL_DEADLINE)
		od_diag_mark(OD_DIAG_LOCKED);
	/* A sample moves no wake-up but its own cgroup's, and only a hold has one: the
	 * timer (oe_next_wakeup walks every cgroup) is re-armed only if it was or is
	 * held, or each memory event would cost a walk of the whole tree. */
	bool was_held = ctl_holds_in_locked(c, &g->id, 1);
	int64_t now = od_now();
	oe_sample(c->eng, now, g->id, &r, &c->acts);
	oe_view v;
	bool in_hold = oe_view_get(c->eng, g->id, &v) && v.in_hold;
	bool held = !h && in_hold;
	ctl_finish_locked_rearm(c, &nested, was_held || in_hold);
	if (in_hold)
		od_diag_held_past(g->id, now, &v, r.current);
	if (held)
		keep_hold_files(g);
}

/* Operators (and the VM tests, when a short hold has already ended and its state is
 * gone) read when a hold began and when it will end from this one line per hold. */
static void log_new_deadline(od_cg *g, const oe_persisted *st)
{
	char p[256];
	if (!st->in_hold || st->delay_spent || st->deadline_ns == OE_NO_DEADLINE)
		return; /* a re-arm with 0 is logged by the kill it causes */
	if (__atomic_exchange_n(&g->logged_deadline, st->deadline_ns, __ATOMIC_RELAXED) == st->deadline_ns)
		return;
	int64_t left = st->deadline_ns - od_now();
	g_message("%s: over its limit (%" PRIu64 " bytes): held, deadline=%" PRId64
		  " (boottime ns, %.0f ms from now)%s", ctl_cg_path(g, p, sizeof p), st->limit,
		  st->deadline_ns, left / 1e6, st->disable ? ", oom_kill_disable 1: no kill" : "");
}

static int do_kill_group(od_controller *c, const ctl_ctx *ctx, od_cg *g)
{
	char p[256];
	uint64_t procs = 0;
	/* Through the hold's kept descriptors: an open allocates, and under global
	 * pressure stalls in reclaim just when the kill is due. */
	const od_kio_hold_files *h = g_atomic_pointer_get(&g->hold);
	od_kio_count_procs(g->fd, h, &procs);
	/* Logged after the write, as the kernel-mode kill: same timing fields (when the
	 * write began and how long it took: the kill's record, which the VM tests check
	 * against the deadline). */
	int64_t t0 = od_now();
	const char *diag = od_diag_kill_timeline(t0);
	int r = od_kio_kill(g->fd, h);
	int64_t t1 = od_now();
	ctl_hooks_killed(&c->hooks, g->id, t1, r < 0 ? -r : 0);
	ctl_post_line(c, false, "%s: delay over, the whole cgroup killed (cgroup.kill, %" PRIu64
		  " processes of its own): %s in %.1f ms (write began at boottime %.1f ms; last "
		  "timer tick %.1f ms late)%s", ctl_cg_path(g, p, sizeof p), procs,
		  r < 0 ? g_strerror(-r) : "done", (t1 - t0) / 1e6, t0 / 1e6,
		  __atomic_load_n(&c->tick_late, __ATOMIC_RELAXED) / 1e6, diag);
	if (r < 0)
		return r;
	ctl_lock(c, "group kill");
	oe_group_killed(c->eng, g->id, procs, &c->acts);
	ctl_finish_locked(c, ctx);
	return 0;
}

static const char *act_name(oe_action_kind k)
{
	static const char *const names[] = {
		[OE_ACT_SET_HIGH] = "SET_HIGH", [OE_ACT_SET_MAX] = "SET_MAX",
		[OE_ACT_KILL_KERNEL] = "KILL_KERNEL", [OE_ACT_KILL_GROUP] = "KILL_GROUP",
		[OE_ACT_FREEZE] = "FREEZE", [OE_ACT_THAW] = "THAW", [OE_ACT_NOTIFY] = "NOTIFY",
		[OE_ACT_CHANGED] = "CHANGED", [OE_ACT_SAMPLE] = "SAMPLE", [OE_ACT_PERSIST] = "PERSIST",
		[OE_ACT_FORGET] = "FORGET", [OE_ACT_LOG] = "LOG",
	};
	return (size_t)k < G_N_ELEMENTS(names) && names[k] ? names[k] : "?";
}

/* A kernel write's errno as the writer should see it: a file missing under a held
 * directory is the cgroup removed, which kernfs answers with ENODEV (ENOENT is the
 * controller's "unknown cgroup"). */
static int write_errno(int r)
{
	return r >= 0 ? 0 : r == -ENOENT ? ENODEV : -r;
}

/* The caller's open file for a's write, or -1 (ctl_via). */
static int via_fd(const ctl_ctx *ctx, const oe_action *a)
{
	return ctx->via && ctx->via->id == a->id && ctx->via->kind == a->kind ? ctx->via->fd : -1;
}

/* Returns 0 or the positive errno of the kernel write it made (or skipped). */
int ctl_run_one(od_controller *c, const ctl_ctx *ctx, const oe_action *a, od_cg *g)
{
	char p[256];
	switch (a->kind) {
	case OE_ACT_NOTIFY:
		ctl_hooks_notify(&c->hooks, a->id);
		return 0;
	case OE_ACT_CHANGED:
		ctl_hooks_changed(&c->hooks, a->id);
		return 0;
	case OE_ACT_LOG:
		if (a->value)
			g_warning("%s: %s (%" PRIu64 ")", ctl_cg_path(g, p, sizeof p),
				  a->msg ? a->msg : "(no message)", a->value);
		else
			g_warning("%s: %s", ctl_cg_path(g, p, sizeof p), a->msg ? a->msg : "(no message)");
		return 0;
	default:
		break;
	}
	if (!g) {
		g_debug("cgroup %" PRIu64 ": action %d for a cgroup no longer known", a->id, a->kind);
		return writes_kernel(a->kind) ? ENODEV : 0;
	}
	if (a->guarded && g_atomic_int_get(&g->unstored)) {
		g_warning("%s: %s %" PRIu64 " not done: the state it needs could not be stored",
			  ctl_cg_path(g, p, sizeof p), act_name(a->kind), a->value);
		return EIO;
	}
	int r = 0;
	switch (a->kind) {
	case OE_ACT_SET_HIGH:
		r = od_kio_write_u64_via(g->fd, via_fd(ctx, a), "memory.high", a->value);
		break;
	case OE_ACT_SET_MAX:
		r = od_kio_write_u64_via(g->fd, via_fd(ctx, a), "memory.max", a->value);
		break;
	case OE_ACT_KILL_KERNEL: {
		/* Logged after the write, and by the loop (ctl_post.h): neither this kill nor
		 * the next one may wait for the logger. */
		int64_t t0 = od_now();
		const char *diag = od_diag_kill_timeline(t0);
		unsigned kills = 0;
		r = od_kio_kill_once(g->fd, g_atomic_pointer_get(&g->hold), a->value,
				      g_atomic_int_get(&c->rt_prio), &kills);
		int64_t t1 = od_now();
		ctl_hooks_killed(&c->hooks, g->id, t1, r < 0 ? -r : 0);
		ctl_post_line(c, false, "%s: delay over, memory.max back to %" PRIu64 " (the kernel's OOM killer "
			  "acts): %s in %.1f ms (write began at boottime %.1f ms; last timer tick %.1f ms "
			  "late; OOM kills in it: %u)%s",
			  ctl_cg_path(g, p, sizeof p), a->value, r < 0 ? g_strerror(-r) : "done",
			  (t1 - t0) / 1e6, t0 / 1e6,
			  __atomic_load_n(&c->tick_late, __ATOMIC_RELAXED) / 1e6, kills, diag);
		break;
	}
	case OE_ACT_KILL_GROUP:
		r = do_kill_group(c, ctx, g);
		break;
	case OE_ACT_FREEZE:
		r = od_kio_write_str(g->fd, "cgroup.freeze", "1");
		g_message("%s: usage past the freeze margin during a hold: %s", ctl_cg_path(g, p, sizeof p),
			  r < 0 ? "freezing failed" : "frozen");
		break;
	case OE_ACT_THAW:
		r = od_kio_write_str(g->fd, "cgroup.freeze", "0");
		break;
	case OE_ACT_SAMPLE:
		ctl_sample(c, ctx, g);
		break;
	case OE_ACT_PERSIST:
		r = od_persist_store(g->fd, &a->persisted);
		g_atomic_int_set(&g->unstored, r < 0);
		if (r == 0)
			log_new_deadline(g, &a->persisted);
		break;
	case OE_ACT_FORGET:
		/* Logged on failure; what is left is clamped at adoption. Nothing stored and
		 * nothing to store: raises need no state any more. */
		if (od_persist_forget(g->fd) == 0)
			g_atomic_int_set(&g->unstored, 0);
		break;
	default:
		break;
	}
	return write_errno(r);
}

/* After a batch that skipped guarded actions: the engine learns what the kernel
 * still has, and persists again before it raises or freezes again. Runs inside
 * the batch, so no later write of the cgroup can land between the reads. */
static void resync_unstored(od_controller *c, od_cg *g)
{
	uint64_t max = OE_UNLIMITED, high = OE_UNLIMITED, frozen = 0;
	od_kio_read_u64(g->fd, "memory.max", &max);
	od_kio_read_u64(g->fd, "memory.high", &high);
	od_kio_read_u64(g->fd, "cgroup.freeze", &frozen);
	ctl_lock(c, "unstored");
	oe_state_unstored(c->eng, g->id, max, high, frozen != 0);
	ctl_unlock(c);
}

/* Carries out v[0..n) on this thread. Returns the first kernel write's errno. */
static int run_actions(od_controller *c, const ctl_ctx *ctx, const oe_action *v, od_cg **g,
		       size_t n)
{
	int err = 0;
	bool skipped = false;
	for (size_t i = 0; i < n; i++) {
		int64_t t0 = od_diag_clock();
		skipped |= v[i].guarded && g[i] && g_atomic_int_get(&g[i]->unstored);
		int r = ctl_run_one(c, ctx, &v[i], g[i]);
		if (r && !err)
			err = r;
		od_diag_action(c->diag, ctx->who == CTL_DEADLINE, t0, act_name(v[i].kind), v[i].id);
	}
	for (size_t i = 0; skipped && i < n; i++) {
		bool first = true;
		for (size_t j = 0; j < i && first; j++)
			first = !(g[j] == g[i] && v[j].guarded);
		if (first && v[i].guarded && g[i] && g_atomic_int_get(&g[i]->unstored))
			resync_unstored(c, g[i]);
	}
	return err;
}

/* How many of v[0..n) the caller runs at once, before the rest is handed off
 * (CTL_WORKER: all, or none if any writes the kernel: then it waits for its turn). */
static size_t leading_inline(ctl_caller who, const oe_action *v, size_t n)
{
	size_t k = 0;
	switch (who) {
	case CTL_WORKER:
		while (k < n && !writes_kernel(v[k].kind))
			k++;
		return k == n ? n : 0;
	case CTL_DEADLINE:
		while (k < n && v[k].kind == OE_ACT_SAMPLE)
			k++;
		return k;
	case CTL_LOOP:
	case CTL_IN_BATCH:
		break;
	}
	while (k < n && !writes_kernel(v[k].kind))
		k++;
	return k;
}

/* Locked on entry, unlocked on return. The batch's kernel writes take their place
 * in the order before the unlock. What runs on this thread at once is
 * leading_inline's part; the rest goes to the actuators first, except for a
 * worker, which runs the whole batch itself when its turn comes (its caller's
 * write blocks as it would natively) and returns the first kernel write's errno. */
int ctl_carry_out(od_controller *c, const ctl_ctx *ctx, oe_action *v, od_cg **g, size_t n)
{
	bool own = ctx->who == CTL_WORKER;
	size_t k = leading_inline(ctx->who, v, n);
	od_batch hdr;
	if (k < n)
		od_order_reserve(c->order, &hdr, v + k, (void **)(g + k), n - k);
	ctl_unlock(c);

	if (k < n && !own) {
		/* Handed off before this thread runs its part: a listener or a sample here
		 * must not hold back the cgroup's later writes (a kill) behind the placeholder. */
		for (size_t i = k; i < n; i++)
			ctl_cg_ref(g[i]); /* the batch's own, let go by the actuator */
		od_order_hand_off(c->order, &hdr);
		if (ctx->who == CTL_DEADLINE)
			od_diag_mark(OD_DIAG_HANDOFF);
	}
	run_actions(c, ctx, v, g, k);
	if (k == n || !own)
		return 0;
	od_order_wait_turn(c->order, &hdr);
	ctl_ctx in_batch = { .who = CTL_IN_BATCH, .depth = ctx->depth, .via = ctx->via };
	int r = run_actions(c, &in_batch, v, g, n);
	od_order_done(c->order, &hdr);
	return r;
}

typedef struct {
	od_controller *c;
	bool kills_only;
} od_actuator_arg;

static const char KILLER[] = "the kill actuator";

static void actuator_woken(void *ud)
{
	ctl_apply_rt(ud, KILLER);
}

/* Actuator 0 takes only kills, so that persisting and knob writes stalled in
 * reclaim (a setxattr was seen taking 315 ms under load) cannot hold every actuator
 * when a deadline passes; the others take a kill only while it is busy (order.c). */
static gpointer actuator_main(gpointer data)
{
	od_controller *c = ((od_actuator_arg *)data)->c;
	bool kills_only = ((od_actuator_arg *)data)->kills_only;
	g_free(data);
	const ctl_ctx ctx = { .who = CTL_IN_BATCH };
	ctl_lock_name_thread(kills_only ? KILLER : "an actuator");
	ctl_prefault_stack();
	if (kills_only)
		ctl_apply_rt(c, KILLER);
	od_batch *b;
	while ((b = od_order_take(c->order, kills_only, kills_only ? actuator_woken : NULL, c))) {
		od_cg **g = (od_cg **)b->refs;
		/* A kill taken while the kill actuator was busy runs at its priority too, and
		 * what the engine emitted after the kill (the hold's end: thaw, limits, the
		 * persisted state, whose setxattr took 315 ms under load) goes to the others. */
		if (b->urgent)
			od_diag_mark(OD_DIAG_PICKED);
		bool borrowed = !kills_only && b->urgent;
		size_t n = b->urgent ? od_order_kill_prefix(b) : b->n;
		if (borrowed)
			ctl_apply_rt(c, "an actuator running a kill");
		run_actions(c, &ctx, b->v, g, n);
		if (borrowed)
			ctl_drop_rt();
		od_order_split(c->order, b, n);
		for (size_t i = 0; i < n; i++)
			ctl_cg_unref(g[i]);
		od_order_done(c->order, b); /* unlinked only now: the order covers it while it runs */
	}
	return NULL;
}

void ctl_actuators_start(od_controller *c)
{
	for (int i = 0; i < NACTUATORS; i++) {
		od_actuator_arg *a = g_new(od_actuator_arg, 1);
		*a = (od_actuator_arg){ .c = c, .kills_only = i == 0 };
		c->actuator[i] = g_thread_new(i == 0 ? "oomd-killer" : "oomd-actuator", actuator_main, a);
	}
}

void ctl_actuators_stop(od_controller *c)
{
	od_order_stop(c->order);
	for (int i = 0; i < NACTUATORS; i++)
		g_thread_join(c->actuator[i]); /* they run what is queued first */
}
