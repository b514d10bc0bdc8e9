/* controller.c — implements controller.h: the one door to the engine.
 *
 * Threads: FUSE workers (user writes, mkdir), the glib main loop (watcher:
 * inotify), the deadline thread (the timerfd: hold samples and the kill
 * decisions) and the actuators. The engine is pure and guarded by `lock`; every
 * call feeds it under the lock into the preallocated `acts` buffer, copies the
 * actions out (with a reference on each cgroup's directory descriptor, so a
 * concurrent removal cannot close it under us), re-arms the timerfd, unlocks,
 * and only then touches the kernel: a memory.max write may block for as long as
 * the kernel reclaims and kills.
 *
 * Calls from FUSE workers carry their actions out inline (the caller's write
 * blocks as it would natively). The loop and the deadline thread must never
 * block: each runs inline only what cannot (the loop: reads and notifications;
 * the deadline thread: samples through kept descriptors) and hands the rest of a
 * batch, from its first kernel write on, to the actuators. Deadlines have a
 * thread of their own because the loop, under global pressure, was seen blocked
 * in the kernel for 600 ms outside any of its actions (docs/DESIGN.md, "the late
 * tick"); the deadline thread touches no new memory and takes no lock but ours.
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
#include "oomd/controller.h"
#include "oomd/diag.h"
#include "oomd/kernel_io.h"
#include "oomd/order.h"
#include "oomd/persist.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <glib.h>

#define MAX_HOOKS 8
#define STACK_ACTS 64   /* batches up to this size are copied out onto the stack */
#define MAX_NESTING 4   /* SAMPLE -> oe_sample -> SAMPLE ... is bounded anyway */

/* A real cgroup directory, O_RDONLY|O_DIRECTORY (xattrs need a non-O_PATH fd). */
typedef struct {
	uint64_t id;
	int fd;
	gint ref;
	int64_t logged_deadline; /* the last hold deadline logged (atomic: actuators share g) */
	od_kio_hold_files *hold;  /* opened at its first hold, kept until the cgroup goes (atomic) */
	gint unstored;            /* its last PERSIST failed: guarded actions are skipped (atomic) */
} od_cg;

struct od_controller {
	GMutex lock; /* engine, cgs, acts, timer; taken through engine_lock() only */
	int lock_nice; /* the niceness of the controller's own threads */
	gint rt_prio;  /* SCHED_FIFO for the deadline thread and the killer (atomic) */
	od_diag *diag; /* NULL unless built with -Ddiagnostics=true (diag.h) */
	oe_engine *eng;
	int tfd;
	int64_t armed;
	int64_t tick_late; /* how late the last timer tick ran (ns; atomic), for the kill's log line */
	gint beat_ms;      /* the watchdog: wake at least this often (0: only for deadlines) */
	guint64 beats;     /* wake-ups of the deadline thread (atomic) */
	/* The deadline thread: it alone reads the timerfd. Fields below it are its own. */
	GThread *deadlines;
	gint deadlines_stop;
	GHashTable *cgs; /* &id -> od_cg* */
	oe_action *buf;
	oe_actions acts;

	od_hooks hooks[MAX_HOOKS];
	gint nhooks;

#define NACTUATORS 4
	GThread *actuator[NACTUATORS];
	od_order *order;
};

static GPrivate nesting; /* per-thread depth of nested batches (SAMPLE) */
/* This thread is carrying out a batch: what its actions make the engine emit comes
 * after that batch in the order, so it is handed off, never waited for. */
static _Thread_local int in_batch;
/* Which of our threads this is (NULL: a FUSE worker, or main before the loop runs). */
static _Thread_local const char *thread_role;
static const char ROLE_DEADLINE[] = "the deadline thread", ROLE_KILLER[] = "the kill actuator",
		  ROLE_ACTUATOR[] = "an actuator", ROLE_LOOP[] = "the main loop";

/* Pages are locked as they are first touched (MCL_ONFAULT), and a first touch
 * under global pressure allocates and can stall in reclaim: the threads on the
 * deadline -> kill path touch their stack, and the controller its buffers, up
 * front. */
#define PREFAULT_STACK (64 * 1024)
static void __attribute__((noinline)) prefault_stack(void)
{
	volatile char probe[PREFAULT_STACK];
	for (size_t i = 0; i < sizeof probe; i += 4096)
		probe[i] = 0;
}

/* The deadline thread and the kill actuator run at a real-time priority (when set):
 * a thread at niceness -20 was seen waiting 145 ms for a CPU on the 2-vCPU VM while
 * the other actuators spent theirs in the kernel's reclaim (memory.max writes).
 * The kill actuator may already be asleep on its queue when the priority is set:
 * od_controller_set_rt_priority wakes it, and it applies it after every wake-up. */
static _Thread_local int rt_applied; /* what this thread has asked for (0: none) */

static void apply_rt(od_controller *c)
{
	int prio = g_atomic_int_get(&c->rt_prio);
	if (prio == rt_applied)
		return;
	struct sched_param sp = { .sched_priority = prio };
	int r = pthread_setschedparam(pthread_self(), prio ? SCHED_FIFO : SCHED_OTHER, &sp);
	if (r)
		g_warning("%s: SCHED_FIFO priority %d: %s: it keeps its niceness", thread_role, prio,
			  g_strerror(r));
	rt_applied = prio; /* a refusal is not retried */
}

/* ---- the engine's lock ---------------------------------------------- */

/* The niceness boost is a fix, not a diagnostic. Under the lock only pure engine
 * work is done, yet a FUSE worker, which runs at the niceness the daemon was
 * started with, can be preempted while holding it by the workloads it competes
 * with, and the deadline thread then waits: a tick was seen 380 ms late, all of it
 * waiting for the lock, among f-load's 64 clients (docs/DESIGN.md, "the late
 * tick"). So a thread below the controller's priority is raised to it while it
 * holds the lock (two setpriority calls per hold: the GMutex is a plain futex,
 * without priority inheritance). A thread already at the controller's niceness
 * (the controller's own threads; every thread when --nice is the started-with
 * niceness, or could not be set) skips both. Each thread also touches its
 * stack once, so that a first fault under the lock (pages are locked as they are
 * touched) cannot stall in reclaim. site names the call for the diagnostics build
 * only (diag.h); the default build stores nothing. */
static _Thread_local int own_nice = INT_MIN; /* INT_MIN: not yet read */

static void engine_lock(od_controller *c, const char *site)
{
	if (own_nice == INT_MIN) {
		errno = 0;
		int n = getpriority(PRIO_PROCESS, 0); /* this thread's, on Linux */
		own_nice = errno ? c->lock_nice : n;
		prefault_stack();
	}
	if (own_nice > c->lock_nice)
		(void)setpriority(PRIO_PROCESS, 0, c->lock_nice); /* best effort: CAP_SYS_NICE */
	g_mutex_lock(&c->lock);
	od_diag_lock_taken(c->diag, site, thread_role ? thread_role : "a FUSE worker");
}

static void engine_unlock(od_controller *c)
{
	od_diag_lock_released(c->diag);
	g_mutex_unlock(&c->lock);
	if (own_nice > c->lock_nice)
		(void)setpriority(PRIO_PROCESS, 0, own_nice);
}

int64_t od_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static od_cg *cg_ref(od_cg *g)
{
	if (g)
		g_atomic_int_inc(&g->ref);
	return g;
}

static void cg_unref(od_cg *g)
{
	if (g && g_atomic_int_dec_and_test(&g->ref)) {
		if (g->hold) {
			od_kio_hold_close(g->hold);
			g_free(g->hold);
		}
		close(g->fd);
		g_free(g);
	}
}

/* For log lines: the real path of a cgroup (error and kill paths only). */
static const char *cg_path(const od_cg *g, char *buf, size_t size)
{
	char link[32];
	if (!g) {
		snprintf(buf, size, "?");
		return buf;
	}
	snprintf(link, sizeof link, "/proc/self/fd/%d", g->fd);
	ssize_t n = readlink(link, buf, size - 1);
	if (n < 0)
		snprintf(buf, size, "cgroup %" PRIu64, g->id);
	else
		buf[n] = '\0';
	return buf;
}

/* ---- under the lock ---------------------------------------------------- */

/* Room for the largest batch the engine can emit: release_all and subtree
 * writes emit a few actions per cgroup. Grown only when cgroups are added,
 * never on the event -> kill path. */
static void ensure_room_locked(od_controller *c, size_t extra_nodes)
{
	size_t need = 8 * (oe_count(c->eng) + extra_nodes) + 64;
	if (c->acts.cap >= need)
		return;
	/* An eighth more, not twice: 8 actions of 88 bytes per cgroup are locked in
	 * memory, 7 MiB at 10,000 cgroups; doubling could leave half of it unused. */
	size_t old = c->acts.cap, cap = MAX(need, old + old / 8);
	c->buf = g_renew(oe_action, c->buf, cap);
	/* touched now, not on the kill path (the old part is resident already) */
	memset(c->buf + old, 0, (cap - old) * sizeof *c->buf);
	oe_actions_init(&c->acts, c->buf, cap);
}

static void rearm_locked(od_controller *c)
{
	int64_t next = oe_next_wakeup(c->eng);
	if (next == c->armed)
		return;
	struct itimerspec its;
	memset(&its, 0, sizeof its);
	if (next != OE_NO_DEADLINE) {
		if (next <= 0)
			next = 1; /* zero would disarm; 1 ns is "now" */
		its.it_value.tv_sec = next / 1000000000LL;
		its.it_value.tv_nsec = next % 1000000000LL;
	}
	if (timerfd_settime(c->tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		g_critical("timerfd_settime: %s", g_strerror(errno));
	c->armed = next;
}

/* Copies the engine's actions into v/cgs (caller's storage, n entries) and
 * takes a reference on each action's cgroup. */
static void copy_out_locked(od_controller *c, oe_action *v, od_cg **cgs)
{
	if (c->acts.overflow)
		g_critical("engine action buffer overflow (%zu actions): some real knobs may lag "
			   "until the next event", c->acts.cap);
	for (size_t i = 0; i < c->acts.n; i++) {
		v[i] = c->acts.v[i];
		cgs[i] = cg_ref(g_hash_table_lookup(c->cgs, &v[i].id));
	}
}

/* ---- carrying actions out ---------------------------------------------- */

/* Actions that change the real tree; the ones that must keep their order. */
static bool writes_kernel(oe_action_kind k)
{
	return k != OE_ACT_SAMPLE && k != OE_ACT_NOTIFY && k != OE_ACT_CHANGED && k != OE_ACT_LOG;
}

static int carry_out(od_controller *c, oe_action *v, od_cg **g, size_t n);
static void stop_deadlines(od_controller *c);

/* Feeds a finished engine call's actions out: locked on entry, unlocked on return.
 * Returns what carry_out returns. rearm: the call may have moved the next wake-up. */
static int finish_locked_rearm(od_controller *c, bool rearm)
{
	size_t n = c->acts.n;
	if (rearm)
		rearm_locked(c);
	if (n == 0) {
		engine_unlock(c);
		return 0;
	}
	oe_action stack_v[STACK_ACTS];
	od_cg *stack_g[STACK_ACTS];
	oe_action *v = n <= STACK_ACTS ? stack_v : g_new(oe_action, n);
	od_cg **g = n <= STACK_ACTS ? stack_g : g_new(od_cg *, n);
	copy_out_locked(c, v, g);
	oe_actions_clear(&c->acts);
	int r = carry_out(c, v, g, n);
	for (size_t i = 0; i < n; i++)
		cg_unref(g[i]);
	if (v != stack_v) {
		g_free(v);
		g_free(g);
	}
	return r;
}

static int finish_locked(od_controller *c)
{
	return finish_locked_rearm(c, true);
}

/* oe_next_wakeup walks every cgroup, and only holds set wake-ups: an add or a
 * remove that involves no hold leaves the timer as it was, or adding (or removing)
 * N cgroups one by one would cost N^2. Called with the lock held. */
static bool holds_in(od_controller *c, const uint64_t *ids, size_t n)
{
	oe_view v;
	for (size_t i = 0; i < n; i++)
		if (oe_view_get(c->eng, ids[i], &v) && v.in_hold)
			return true;
	return false;
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

static void do_sample(od_controller *c, od_cg *g)
{
	oe_reading r;
	const od_kio_hold_files *h = g_atomic_pointer_get(&g->hold);
	if (od_kio_read_reading(g->fd, h, &r) < 0)
		return; /* logged; the cgroup may be going away */
	int depth = GPOINTER_TO_INT(g_private_get(&nesting));
	if (depth >= MAX_NESTING) {
		g_debug("cgroup %" PRIu64 ": sample nested too deep, left to the next tick", g->id);
		return;
	}
	g_private_set(&nesting, GINT_TO_POINTER(depth + 1));
	engine_lock(c, "sample");
	oe_sample(c->eng, od_now(), g->id, &r, &c->acts);
	oe_view v;
	bool held = !h && oe_view_get(c->eng, g->id, &v) && v.in_hold;
	finish_locked(c);
	g_private_set(&nesting, GINT_TO_POINTER(depth));
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
		  " (boottime ns, %.0f ms from now)%s", cg_path(g, p, sizeof p), st->limit,
		  st->deadline_ns, left / 1e6, st->disable ? ", oom_kill_disable 1: no kill" : "");
}

static int do_kill_group(od_controller *c, od_cg *g)
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
	int r = od_kio_kill(g->fd, h);
	g_message("%s: delay over, the whole cgroup killed (cgroup.kill, %" PRIu64
		  " processes of its own): %s in %.1f ms (write began at boottime %.1f ms; last "
		  "timer tick %.1f ms late)", cg_path(g, p, sizeof p), procs,
		  r < 0 ? g_strerror(-r) : "done", (od_now() - t0) / 1e6, t0 / 1e6,
		  __atomic_load_n(&c->tick_late, __ATOMIC_RELAXED) / 1e6);
	if (r < 0)
		return r;
	engine_lock(c, "group kill");
	oe_group_killed(c->eng, g->id, procs, &c->acts);
	finish_locked(c);
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

/* Returns 0 or the positive errno of the kernel write it made (or skipped). */
static int run_one(od_controller *c, const oe_action *a, od_cg *g)
{
	char p[256];
	int nh = g_atomic_int_get(&c->nhooks);
	switch (a->kind) {
	case OE_ACT_NOTIFY:
		for (int i = 0; i < nh; i++)
			if (c->hooks[i].notify)
				c->hooks[i].notify(c->hooks[i].ud, a->id);
		return 0;
	case OE_ACT_CHANGED:
		for (int i = 0; i < nh; i++)
			if (c->hooks[i].control_changed)
				c->hooks[i].control_changed(c->hooks[i].ud, a->id);
		return 0;
	case OE_ACT_LOG:
		if (a->value)
			g_warning("%s: %s (%" PRIu64 ")", cg_path(g, p, sizeof p),
				  a->msg ? a->msg : "(no message)", a->value);
		else
			g_warning("%s: %s", cg_path(g, p, sizeof p), a->msg ? a->msg : "(no message)");
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
			  cg_path(g, p, sizeof p), act_name(a->kind), a->value);
		return EIO;
	}
	int r = 0;
	switch (a->kind) {
	case OE_ACT_SET_HIGH:
		r = od_kio_write_u64(g->fd, "memory.high", a->value);
		break;
	case OE_ACT_SET_MAX:
		r = od_kio_write_u64(g->fd, "memory.max", a->value);
		break;
	case OE_ACT_KILL_KERNEL: {
		/* Logged after the write: the kill must not wait for the logger. */
		int64_t t0 = od_now();
		r = od_kio_write_max(g->fd, g_atomic_pointer_get(&g->hold), a->value);
		g_message("%s: delay over, memory.max back to %" PRIu64 " (the kernel's OOM killer "
			  "acts): %s in %.1f ms (write began at boottime %.1f ms; last timer tick %.1f ms "
			  "late)", cg_path(g, p, sizeof p), a->value, r < 0 ? g_strerror(-r) : "done",
			  (od_now() - t0) / 1e6, t0 / 1e6,
			  __atomic_load_n(&c->tick_late, __ATOMIC_RELAXED) / 1e6);
		break;
	}
	case OE_ACT_KILL_GROUP:
		r = do_kill_group(c, g);
		break;
	case OE_ACT_FREEZE:
		r = od_kio_write_str(g->fd, "cgroup.freeze", "1");
		g_message("%s: usage past the freeze margin during a hold: %s", cg_path(g, p, sizeof p),
			  r < 0 ? "freezing failed" : "frozen");
		break;
	case OE_ACT_THAW:
		r = od_kio_write_str(g->fd, "cgroup.freeze", "0");
		break;
	case OE_ACT_SAMPLE:
		do_sample(c, g);
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
	engine_lock(c, "unstored");
	oe_state_unstored(c->eng, g->id, max, high, frozen != 0);
	engine_unlock(c);
}

/* Carries out v[0..n) on this thread. Returns the first kernel write's errno. */
static int run_actions(od_controller *c, const oe_action *v, od_cg **g, size_t n)
{
	int err = 0;
	bool skipped = false;
	for (size_t i = 0; i < n; i++) {
		int64_t t0 = od_diag_clock();
		skipped |= v[i].guarded && g[i] && g_atomic_int_get(&g[i]->unstored);
		int r = run_one(c, &v[i], g[i]);
		if (r && !err)
			err = r;
		od_diag_action(c->diag, thread_role == ROLE_DEADLINE, t0, act_name(v[i].kind), v[i].id);
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

/* Locked on entry, unlocked on return. The batch's kernel writes take their place
 * in the order before the unlock. What this thread runs at once: the deadline
 * thread its leading samples (read through kept descriptors), the loop and a
 * thread already inside a batch whatever leads up to the first kernel write; the
 * rest goes to the actuators first. A FUSE worker runs the whole batch itself when its
 * turn comes (its caller's write blocks as it would natively) and returns the
 * first kernel write's errno. */
static int carry_out(od_controller *c, oe_action *v, od_cg **g, size_t n)
{
	bool loop = g_main_context_is_owner(g_main_context_default());
	bool own = !in_batch && thread_role != ROLE_DEADLINE && !loop;
	bool any = false;
	for (size_t i = 0; i < n; i++)
		any |= writes_kernel(v[i].kind);
	size_t k = 0;
	if (own)
		k = any ? 0 : n;
	else if (thread_role == ROLE_DEADLINE)
		while (k < n && v[k].kind == OE_ACT_SAMPLE)
			k++;
	else
		while (k < n && !writes_kernel(v[k].kind))
			k++;
	od_batch hdr;
	if (k < n)
		od_order_reserve(c->order, &hdr, v + k, (void **)(g + k), n - k);
	engine_unlock(c);

	if (k < n && !own) {
		/* Handed off before this thread runs its part: a listener or a sample here
		 * must not hold back the cgroup's later writes (a kill) behind the placeholder. */
		for (size_t i = k; i < n; i++)
			cg_ref(g[i]); /* the batch's own, let go by the actuator */
		od_order_hand_off(c->order, &hdr);
	}
	run_actions(c, v, g, k);
	if (k == n || !own)
		return 0;
	od_order_wait_turn(c->order, &hdr);
	in_batch++;
	int r = run_actions(c, v, g, n);
	in_batch--;
	od_order_done(c->order, &hdr);
	return r;
}

typedef struct {
	od_controller *c;
	bool kills_only;
} od_actuator_arg;

static void actuator_woken(void *ud)
{
	apply_rt(ud);
}

/* Actuator 0 takes only kills, so that persisting and knob writes stalled in
 * reclaim (a setxattr was seen taking 315 ms under load) cannot hold every actuator
 * when a deadline passes. */
static gpointer actuator_main(gpointer data)
{
	od_controller *c = ((od_actuator_arg *)data)->c;
	bool kills_only = ((od_actuator_arg *)data)->kills_only;
	g_free(data);
	thread_role = kills_only ? ROLE_KILLER : ROLE_ACTUATOR;
	prefault_stack();
	if (kills_only)
		apply_rt(c);
	od_batch *b;
	while ((b = od_order_take(c->order, kills_only, kills_only ? actuator_woken : NULL, c))) {
		od_cg **g = (od_cg **)b->refs;
		in_batch++;
		run_actions(c, b->v, g, b->n);
		in_batch--;
		for (size_t i = 0; i < b->n; i++)
			cg_unref(g[i]);
		od_order_done(c->order, b); /* unlinked only now: the order covers it while it runs */
	}
	return NULL;
}

/* ---- the contract ------------------------------------------------------ */

od_controller *od_controller_new(int root_fd G_GNUC_UNUSED, const oe_config *cfg)
{
	od_controller *c = g_new0(od_controller, 1);
	/* Blocking: the deadline thread sleeps in read() until the earliest deadline. */
	c->tfd = timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC);
	if (c->tfd < 0) {
		g_critical("timerfd_create(CLOCK_BOOTTIME): %s", g_strerror(errno));
		g_free(c);
		return NULL;
	}
	g_mutex_init(&c->lock);
	c->order = od_order_new();
	c->diag = od_diag_new();
	c->armed = OE_NO_DEADLINE;
	thread_role = ROLE_LOOP; /* main() makes the controller on the loop's thread */
	/* main() made the controller after setting the niceness its threads inherit. */
	errno = 0;
	c->lock_nice = getpriority(PRIO_PROCESS, 0);
	if (errno)
		c->lock_nice = 0;
	c->eng = oe_new(cfg);
	c->cgs = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, (GDestroyNotify)cg_unref);
	ensure_room_locked(c, 0);
	for (int i = 0; i < NACTUATORS; i++) {
		od_actuator_arg *a = g_new(od_actuator_arg, 1);
		*a = (od_actuator_arg){ .c = c, .kills_only = i == 0 };
		c->actuator[i] = g_thread_new(i == 0 ? "oomd-killer" : "oomd-actuator", actuator_main, a);
	}
	return c;
}

void od_controller_free(od_controller *c)
{
	if (!c)
		return;
	stop_deadlines(c);
	od_order_stop(c->order);
	for (int i = 0; i < NACTUATORS; i++)
		g_thread_join(c->actuator[i]); /* they run what is queued first */
	g_hash_table_destroy(c->cgs);
	oe_free(c->eng);
	g_free(c->buf);
	od_order_free(c->order);
	close(c->tfd);
	od_diag_free(c->diag);
	g_mutex_clear(&c->lock);
	g_free(c);
}

void od_controller_set_hooks(od_controller *c, const od_hooks *h)
{
	engine_lock(c, "hooks");
	int n = g_atomic_int_get(&c->nhooks);
	if (n >= MAX_HOOKS) {
		g_critical("too many hook sets (%d)", MAX_HOOKS);
	} else {
		c->hooks[n] = *h;
		g_atomic_int_set(&c->nhooks, n + 1); /* published after the slot is filled */
	}
	engine_unlock(c);
}

/* A tick later than this is logged (one line, after the tick's actions). */
#define LATE_TICK_NS (100 * 1000000LL)

/* woke: when read() on the timerfd returned (diagnostics build only, else 0). */
static void tick(od_controller *c, int64_t woke)
{
	engine_lock(c, "tick");
	int64_t now = od_now();
	int64_t armed = c->armed;
	int64_t late = armed > 0 && armed != OE_NO_DEADLINE ? now - armed : 0;
	od_diag_tick_locked(c->diag);
	c->armed = INT64_MIN; /* the timer has fired: always re-arm */
	__atomic_store_n(&c->tick_late, late, __ATOMIC_RELAXED);
	oe_tick(c->eng, now, &c->acts);
	finish_locked(c);
	/* Logged after the tick's actions: a kill must not wait for the logger. */
	const char *why = od_diag_tick_done(c->diag, late > LATE_TICK_NS, armed, woke, now);
	if (late > LATE_TICK_NS)
		g_message("timer %.1f ms late%s", late / 1e6, why);
}

static gpointer deadline_main(gpointer data)
{
	od_controller *c = data;
	thread_role = ROLE_DEADLINE;
	prefault_stack();
	apply_rt(c);
	od_diag_deadline_thread(c->diag);
	while (!g_atomic_int_get(&c->deadlines_stop)) {
		uint64_t expirations;
		/* Each wake-up is a beat for the watchdog (fdstore.c), also without deadlines. */
		struct pollfd p = { .fd = c->tfd, .events = POLLIN };
		int beat = g_atomic_int_get(&c->beat_ms);
		int ready = beat > 0 ? poll(&p, 1, beat) : 1;
		__atomic_add_fetch(&c->beats, 1, __ATOMIC_RELAXED);
		if (ready == 0 || (ready < 0 && errno == EINTR))
			continue;
		if (read(c->tfd, &expirations, sizeof expirations) < 0) {
			if (errno != EINTR) {
				/* Cannot happen with a valid timerfd; never spin on it. */
				g_critical("read timerfd: %s", g_strerror(errno));
				g_usleep(1000);
			}
			continue;
		}
		if (!g_atomic_int_get(&c->deadlines_stop))
			tick(c, od_diag_clock());
	}
	return NULL;
}

static void stop_deadlines(od_controller *c)
{
	if (!c->deadlines)
		return;
	/* Woken by a timer that has already passed; it sees the flag first. */
	g_atomic_int_set(&c->deadlines_stop, 1);
	struct itimerspec its = { .it_value = { .tv_nsec = 1 } };
	engine_lock(c, "stop");
	if (timerfd_settime(c->tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		g_critical("timerfd_settime: %s", g_strerror(errno));
	c->armed = 1;
	engine_unlock(c);
	g_thread_join(c->deadlines);
	c->deadlines = NULL;
}

void od_controller_set_heartbeat(od_controller *c, int ms)
{
	g_atomic_int_set(&c->beat_ms, MAX(ms, 0));
}

uint64_t od_controller_beats(od_controller *c)
{
	return __atomic_load_n(&c->beats, __ATOMIC_RELAXED);
}

void od_controller_set_rt_priority(od_controller *c, int prio)
{
	g_atomic_int_set(&c->rt_prio, CLAMP(prio, 0, 99));
	od_order_kick(c->order); /* the kill actuator applies it when it next wakes */
}

void od_controller_start_deadlines(od_controller *c)
{
	if (!c->deadlines)
		c->deadlines = g_thread_new("oomd-deadlines", deadline_main, c);
}

static uint64_t read_knob(int fd, const char *name)
{
	uint64_t v;
	return od_kio_read_u64(fd, name, &v) < 0 ? OE_UNLIMITED : v;
}

/* A removed cgroup's directory still opens through a descriptor held from before
 * the rmdir, but kernfs has taken its files away: cgroup.events is in every
 * non-root cgroup, with or without the memory controller. */
static bool cgroup_gone(int fd)
{
	return faccessat(fd, "cgroup.events", F_OK, 0) < 0 && (errno == ENOENT || errno == ENODEV);
}

static int add_at_depth(od_controller *c, uint64_t parent_id, int dirfd, uint64_t *id_out,
			int depth);

/* A cgroup made directly in the real tree, with its parent, and used through the
 * shadow tree before the watcher saw the parent: add the ancestors first, so the
 * first write is not refused (ENODEV) for a cgroup that exists. Stops at the
 * file system's edge and at MAX_ANCESTRY levels. */
#define MAX_ANCESTRY 64
static int add_parent_of(od_controller *c, int fd, int depth)
{
	if (depth >= MAX_ANCESTRY)
		return ENOENT;
	struct stat self, pst, gst;
	int pfd = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return errno;
	int gfd = openat(pfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int e = gfd < 0 ? errno : 0;
	if (!e && (fstat(fd, &self) < 0 || fstat(pfd, &pst) < 0 || fstat(gfd, &gst) < 0))
		e = errno;
	if (!e && (pst.st_dev != self.st_dev || gst.st_dev != self.st_dev || pst.st_ino == self.st_ino))
		e = ENOENT; /* climbed out of cgroupfs: not under the served root */
	if (!e)
		e = add_at_depth(c, gst.st_ino, pfd, NULL, depth + 1);
	if (gfd >= 0)
		close(gfd);
	close(pfd);
	return e;
}

int od_controller_add(od_controller *c, uint64_t parent_id, int dirfd, uint64_t *id_out)
{
	return add_at_depth(c, parent_id, dirfd, id_out, 0);
}

static int add_at_depth(od_controller *c, uint64_t parent_id, int dirfd, uint64_t *id_out,
			int depth)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e != ENOENT)
			g_warning("open cgroup directory (fd %d): %s", dirfd, g_strerror(e));
		return e;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return e;
	}
	uint64_t id = st.st_ino;
	if (id_out)
		*id_out = id;

	engine_lock(c, "add");
	bool known = g_hash_table_contains(c->cgs, &id);
	engine_unlock(c);
	if (known) {
		close(fd);
		return 0;
	}

	od_cg *g = g_new0(od_cg, 1);
	g->id = id;
	g->fd = fd;
	g->ref = 1;

	if (parent_id == 0) {
		engine_lock(c, "add");
		oe_root(c->eng, id);
		if (!g_hash_table_contains(c->cgs, &id)) {
			g_hash_table_insert(c->cgs, &g->id, g);
			g = NULL;
		}
		engine_unlock(c);
		cg_unref(g);
		return 0;
	}

	/* A late user of a removed cgroup (a file held open across the rmdir) must not
	 * bring it back as a ghost that nothing would ever remove again. */
	if (cgroup_gone(fd)) {
		cg_unref(g);
		return ENOENT;
	}
	uint64_t real_max = read_knob(fd, "memory.max");
	uint64_t real_high = read_knob(fd, "memory.high");
	oe_persisted p;
	bool have = od_persist_load(fd, &p) == 0;

	for (bool parent_tried = false;;) {
		engine_lock(c, "add");
		if (g_hash_table_contains(c->cgs, &id)) { /* a concurrent add won */
			engine_unlock(c);
			cg_unref(g);
			return 0;
		}
		ensure_room_locked(c, 1);
		if (oe_cgroup_add(c->eng, od_now(), id, parent_id, real_max, real_high,
				  have ? &p : NULL, &c->acts))
			break;
		engine_unlock(c);
		int e = parent_tried ? ENOENT : add_parent_of(c, fd, depth);
		if (e) {
			cg_unref(g);
			return e == ENOTDIR || e == ENODEV ? ENOENT : e; /* parent unknown or gone */
		}
		parent_tried = true;
	}
	g_hash_table_insert(c->cgs, &g->id, cg_ref(g)); /* our reference keeps fd open below */
	finish_locked_rearm(c, holds_in(c, &id, 1));
	if (have)
		g_message("cgroup %" PRIu64 ": adopted persisted state%s", id,
			  p.in_hold ? " (a hold was running)" : "");
	/* The watcher may have handled the rmdir between the check above and the
	 * insert, finding nothing to remove: check again now that it is in. */
	bool gone = cgroup_gone(fd);
	cg_unref(g);
	if (gone) {
		od_controller_remove(c, id);
		return ENOENT;
	}
	return 0;
}

static void collect_id(uint64_t id, void *ud)
{
	g_array_append_val((GArray *)ud, id);
}

void od_controller_remove(od_controller *c, uint64_t id)
{
	/* Allocated before the lock, sized for the usual leaf: a malloc under the lock
	 * can wait for the allocator's own lock, held by a preempted thread. */
	GArray *ids = g_array_sized_new(FALSE, FALSE, sizeof(uint64_t), 16);
	GPtrArray *gone = g_ptr_array_new_full(16, (GDestroyNotify)cg_unref);
	engine_lock(c, "remove");
	oe_foreach_subtree(c->eng, id, collect_id, ids); /* pre-order: parents first */
	bool held = holds_in(c, (const uint64_t *)(void *)ids->data, ids->len);
	oe_cgroup_remove(c->eng, id, &c->acts);
	/* Actions were copied out with their references before the table lets go. */
	size_t n = c->acts.n;
	oe_action stack_v[STACK_ACTS];
	od_cg *stack_g[STACK_ACTS];
	oe_action *v = n <= STACK_ACTS ? stack_v : g_new(oe_action, n);
	od_cg **g = n <= STACK_ACTS ? stack_g : g_new(od_cg *, n);
	copy_out_locked(c, v, g);
	oe_actions_clear(&c->acts);
	/* Taken out of the table here, let go after the unlock: the last reference
	 * closes descriptors, and nothing but engine work may hold the lock. */
	for (guint i = 0; i < ids->len; i++) {
		/* Not g_hash_table_steal_extended: the key (&g->id) is the value's address,
		 * so glib keeps the table as a set, and there (2.74) the value it handed
		 * back was not the od_cg: every removed cgroup's descriptors leaked. */
		const uint64_t *id_i = &g_array_index(ids, uint64_t, i);
		od_cg *cg = g_hash_table_lookup(c->cgs, id_i);
		if (cg && g_hash_table_steal(c->cgs, id_i))
			g_ptr_array_add(gone, cg);
	}
	if (held)
		rearm_locked(c);
	carry_out(c, v, g, n); /* unlocks */
	g_ptr_array_unref(gone);
	for (size_t i = 0; i < n; i++)
		cg_unref(g[i]);
	if (v != stack_v) {
		g_free(v);
		g_free(g);
	}
	int nh = g_atomic_int_get(&c->nhooks);
	for (guint i = ids->len; i-- > 0;) /* children first */
		for (int h = 0; h < nh; h++)
			if (c->hooks[h].removed)
				c->hooks[h].removed(c->hooks[h].ud, g_array_index(ids, uint64_t, i));
	g_array_free(ids, TRUE);
}

static od_cg *lookup_ref(od_controller *c, uint64_t id)
{
	engine_lock(c, "lookup");
	od_cg *g = cg_ref(g_hash_table_lookup(c->cgs, &id));
	engine_unlock(c);
	return g;
}

void od_controller_sample(od_controller *c, uint64_t id)
{
	od_cg *g = lookup_ref(c, id);
	if (!g)
		return;
	do_sample(c, g);
	cg_unref(g);
}

void od_controller_real_max_changed(od_controller *c, uint64_t id)
{
	od_cg *g = lookup_ref(c, id);
	if (!g)
		return;
	uint64_t v;
	if (od_kio_read_u64(g->fd, "memory.max", &v) == 0) {
		engine_lock(c, "real max");
		oe_real_max_seen(c->eng, od_now(), id, v, &c->acts);
		finish_locked(c);
	}
	cg_unref(g);
}

typedef int (*write_fn)(oe_engine *, int64_t, uint64_t, uint64_t, oe_actions *);

static int user_write(od_controller *c, write_fn fn, uint64_t id, uint64_t value)
{
	engine_lock(c, "user write");
	int r = fn(c->eng, od_now(), id, value, &c->acts);
	if (r != 0) {
		oe_actions_clear(&c->acts);
		engine_unlock(c);
		return r;
	}
	return finish_locked(c); /* the kernel's errno, if a write of it failed */
}

int od_controller_write_delay(od_controller *c, uint64_t id, uint64_t ms)
{
	return user_write(c, oe_write_delay, id, ms);
}

int od_controller_write_disable(od_controller *c, uint64_t id, uint64_t v)
{
	return user_write(c, oe_write_disable, id, v);
}

int od_controller_write_limit(od_controller *c, uint64_t id, uint64_t bytes)
{
	return user_write(c, oe_write_limit, id, bytes);
}

int od_controller_write_high(od_controller *c, uint64_t id, uint64_t bytes)
{
	return user_write(c, oe_write_high, id, bytes);
}

bool od_controller_view(od_controller *c, uint64_t id, oe_view *v)
{
	engine_lock(c, "view");
	bool ok = oe_view_get(c->eng, id, v);
	engine_unlock(c);
	return ok;
}

size_t od_controller_snapshot(od_controller *c, uint64_t only, od_snapshot_fn fn, void *ud)
{
	/* Allocated outside the lock: a cgroup added meanwhile waits for the next call. */
	engine_lock(c, "snapshot");
	size_t cap = only ? 1 : g_hash_table_size(c->cgs) + 16, n = 0;
	engine_unlock(c);
	od_cg **cgs = g_new(od_cg *, cap);
	oe_view *views = g_new(oe_view, cap);
	engine_lock(c, "snapshot");
	GHashTableIter it;
	gpointer val = only ? g_hash_table_lookup(c->cgs, &only) : NULL;
	if (!only)
		g_hash_table_iter_init(&it, c->cgs);
	while (n < cap && (only ? val != NULL : g_hash_table_iter_next(&it, NULL, &val))) {
		od_cg *g = val;
		if (oe_view_get(c->eng, g->id, &views[n]))
			cgs[n++] = cg_ref(g);
		val = NULL;
	}
	engine_unlock(c);
	char p[PATH_MAX];
	for (size_t i = 0; i < n; i++) {
		fn(ud, cgs[i]->id, cg_path(cgs[i], p, sizeof p), &views[i]);
		cg_unref(cgs[i]);
	}
	g_free(cgs);
	g_free(views);
	return n;
}

void od_controller_release_all(od_controller *c)
{
	/* No tick may queue a kill behind our back once we look, and whatever the
	 * actuators still have (a freeze behind a kill...) must land before the
	 * hand-back, or it could undo it. */
	stop_deadlines(c);
	od_order_drain(c->order);
	engine_lock(c, "release");
	oe_release_all(c->eng, &c->acts);
	size_t n = c->acts.n;
	rearm_locked(c);
	oe_action *v = g_new(oe_action, MAX(n, 1));
	od_cg **g = g_new(od_cg *, MAX(n, 1));
	copy_out_locked(c, v, g);
	oe_actions_clear(&c->acts);
	engine_unlock(c);
	g_message("handing %zu actions back to the kernel (every managed cgroup: memory.max = L, "
		  "the user's memory.high, thawed, state removed)", n);
	/* Inline even on the loop thread: this is the shutdown path and must be done
	 * before the process exits. */
	for (size_t i = 0; i < n; i++) {
		run_one(c, &v[i], g[i]);
		cg_unref(g[i]);
	}
	g_free(v);
	g_free(g);
}
