/* audit.c — implements audit.h. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "oomd/audit.h"
#include "oomd/fsstats.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define KEEP_ENDED 64
#define MAX_PIDS 256
/* Events waiting for the audit thread past which changes and notifications are
 * dropped (a removal never is: its cgroup's state would stay). A tenant's loop of
 * knob writes emits one change each; were the thread slower (an onset reads
 * cgroup.procs and /proc), the queue grew without bound (SECURITY.md, known
 * limits before issue 21). Each event is ~100 bytes: 4 MiB at most. */
#define MAX_QUEUED 40000

/* journald MESSAGE_ID per kind of record (journalctl MESSAGE_ID=...) */
#define MSGID_HOLD_START "4f8a1c2e9b3d47e6a0c5d2b8e1f7a903"
#define MSGID_HOLD_END "9d2e7b4c1a8f4e03b6c9d5a2e7f1b864"
#define MSGID_BROKEN "c3b1e8f2a7d94c60b5e2f9a1d8c7e346"

const double od_late_bounds[OD_LATE_BUCKETS] = { 0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
						 0.25,  0.5,   1,    2.5,   5 };
const double od_over_bounds[OD_OVER_BUCKETS] = { 65536,    262144,   1048576, 4194304,
						 16777216, 67108864, 268435456 };

typedef enum { EV_HOOK, EV_REMOVED, EV_NOTIFY, EV_STOP } ev_kind;

typedef struct {
	ev_kind kind;
	uint64_t id;
	int64_t t;
	bool have_view;
	oe_view v;
} ev;

typedef struct {
	od_hold_record r;  /* r.hold_id 0: not held */
	int64_t ended_onset; /* the engine's onset of the last hold recorded as ended */
	GArray *pids;      /* of pid_t, at the onset */
	uint64_t last_oom_kill;
	bool seen;
	/* An end that looked like an exit or a move waits PENDING_NS for an OOM kill to
	 * show (a delay of 0 written during the hold kills before the deadline we know). */
	bool pending;
	od_hold_record pend;
	uint64_t pend_oom_kill;
} cg_state;

#define PENDING_NS (1000 * 1000000LL)

struct od_audit {
	od_controller *ctl;
	od_hooks_reg *hooks;
	od_shadowfs *fs; /* under fs_lock: main frees the session after od_audit_set_fs(NULL) */
	GMutex fs_lock;
	oe_kill_mode mode;
	GAsyncQueue *q;
	gint queued;   /* events in q (STOP aside) */
	GMutex drop_lock;
	unsigned dropped;      /* since the last log line */
	gint64 dropped_logged; /* monotonic us of that line */
	GThread *thread;
	/* the audit thread's own */
	GHashTable *cgs; /* &id -> cg_state* */
	unsigned npending; /* cgroups with a pending end: only then does the thread wake by itself */
	uint64_t next_hold;
	/* shared with readers */
	GMutex lock;
	od_audit_stats st;
	GArray *open;  /* od_hold_record of the holds in progress */
	GArray *ended; /* the last KEEP_ENDED, oldest first */
};

const char *od_end_name(od_end e)
{
	static const char *const n[OD_END_N] = { "held", "raise", "exit", "move", "kill-kernel",
						 "kill-group", "kill-early", "removed" };
	return (unsigned)e < OD_END_N ? n[e] : "?";
}

/* ---- hooks: any thread but the deadline thread; must not block ---- */

/* One line per minute at most: the flood goes on while we log. */
static void note_dropped(od_audit *a)
{
	g_mutex_lock(&a->drop_lock);
	a->dropped++;
	gint64 now = g_get_monotonic_time();
	bool say = !a->dropped_logged || now - a->dropped_logged >= 60 * G_USEC_PER_SEC;
	unsigned n = a->dropped;
	if (say) {
		a->dropped_logged = now;
		a->dropped = 0;
	}
	g_mutex_unlock(&a->drop_lock);
	if (say)
		g_warning("audit: %u events dropped: %d wait for the audit thread (a flood of knob "
			  "writes?); hold records may be incomplete, kills are not affected",
			  n, MAX_QUEUED);
}

static void push(od_audit *a, ev_kind k, uint64_t id)
{
	if (k != EV_REMOVED && g_atomic_int_get(&a->queued) >= MAX_QUEUED) {
		note_dropped(a);
		return;
	}
	g_atomic_int_inc(&a->queued);
	ev *e = g_new0(ev, 1);
	e->kind = k;
	e->id = id;
	if (k != EV_REMOVED)
		e->have_view = od_controller_view(a->ctl, id, &e->v);
	/* After the view: a view that says "no hold" with t before a record's onset was
	 * taken before that onset (hooks run on several threads, and queue out of order). */
	e->t = od_now();
	g_async_queue_push(a->q, e);
}

static void hook_changed(void *ud, uint64_t id)
{
	push(ud, EV_HOOK, id);
}

static void hook_notify(void *ud, uint64_t id)
{
	push(ud, EV_NOTIFY, id);
}

static void hook_removed(void *ud, uint64_t id)
{
	push(ud, EV_REMOVED, id);
}

/* ---- the audit thread ---- */

static void cg_state_free(gpointer p)
{
	cg_state *s = p;
	if (s->pids)
		g_array_unref(s->pids);
	g_free(s);
}

static void path_cb(void *ud, uint64_t id, const char *path, const oe_view *v)
{
	(void)id, (void)v;
	g_strlcpy(ud, path, sizeof(((od_hold_record *)0)->path));
}

static uint64_t read_u64_at(const char *dir, const char *file)
{
	g_autofree char *p = g_build_filename(dir, file, NULL);
	g_autofree char *t = NULL;
	if (!g_file_get_contents(p, &t, NULL, NULL))
		return 0;
	return g_ascii_strtoull(t, NULL, 10);
}

static GArray *read_pids(const char *dir)
{
	GArray *pids = g_array_new(FALSE, FALSE, sizeof(pid_t));
	g_autofree char *p = g_build_filename(dir, "cgroup.procs", NULL);
	g_autofree char *t = NULL;
	if (!g_file_get_contents(p, &t, NULL, NULL))
		return pids;
	for (char *s = t; *s && pids->len < MAX_PIDS;) {
		char *end;
		pid_t pid = (pid_t)strtol(s, &end, 10);
		if (end == s)
			break;
		g_array_append_val(pids, pid);
		s = end + (*end != '\0');
	}
	return pids;
}

/* A process of the onset that lives on in another cgroup was moved out. */
static bool any_moved(const GArray *pids, const char *cg_path)
{
	for (guint i = 0; pids && i < pids->len; i++) {
		char p[64];
		snprintf(p, sizeof p, "/proc/%d/cgroup", (int)g_array_index(pids, pid_t, i));
		g_autofree char *t = NULL;
		if (!g_file_get_contents(p, &t, NULL, NULL))
			continue; /* exited */
		/* "0::/path" relative to the cgroup namespace: our path must end with it */
		const char *rel = strstr(t, "0::");
		if (!rel)
			continue;
		rel += 3;
		g_strchomp((char *)rel);
		if (!g_str_has_suffix(cg_path, rel))
			return true;
	}
	return false;
}

static void bucket(uint64_t *n, const double *bounds, int nb, double v)
{
	int i = 0;
	while (i < nb && v > bounds[i])
		i++;
	n[i]++;
}

static void publish_open_locked(od_audit *a)
{
	g_array_set_size(a->open, 0);
	GHashTableIter it;
	gpointer val;
	g_hash_table_iter_init(&it, a->cgs);
	while (g_hash_table_iter_next(&it, NULL, &val)) {
		cg_state *s = val;
		if (s->r.hold_id)
			g_array_append_val(a->open, s->r);
	}
}

static void onset(od_audit *a, cg_state *s, const ev *e)
{
	od_hold_record *r = &s->r;
	memset(r, 0, sizeof *r);
	r->hold_id = ++a->next_hold;
	r->cgroup_id = e->id;
	od_controller_snapshot(a->ctl, e->id, path_cb, r->path);
	/* The onset the deadline counts from (the engine's), not this event's time: the
	 * hook runs after the onset's batch and the queue, 3-39 ms later under systemd. */
	r->onset_ns = e->v.hold_onset_ns ? e->v.hold_onset_ns : e->t;
	r->onset_wall_us = g_get_real_time() - (e->t - r->onset_ns) / 1000;
	r->deadline_ns = e->v.deadline_ns;
	r->limit = e->v.limit;
	/* the usage the onset was seen at (the view taken with the hook, oe_view.usage);
	 * read here, 3-39 ms later, it missed a task that had left (o-audit on 7, CI-like run) */
	r->usage = e->have_view && e->v.usage ? e->v.usage : read_u64_at(r->path, "memory.current");
	if (s->pids)
		g_array_unref(s->pids);
	s->pids = read_pids(r->path);
	double over = r->usage > r->limit ? (double)(r->usage - r->limit) : 0;
	g_mutex_lock(&a->lock);
	a->st.started++;
	bucket(a->st.over_n, od_over_bounds, OD_OVER_BUCKETS, over);
	a->st.over_sum += over;
	publish_open_locked(a);
	g_mutex_unlock(&a->lock);
	char left[32] = "none";
	if (r->deadline_ns != OE_NO_DEADLINE)
		snprintf(left, sizeof left, "%.0f", (r->deadline_ns - r->onset_ns) / 1e6);
	char id[24], lim[24], use[24];
	snprintf(id, sizeof id, "%" PRIu64, r->hold_id);
	snprintf(lim, sizeof lim, "%" PRIu64, r->limit);
	snprintf(use, sizeof use, "%" PRIu64, r->usage);
	/* The fields before MESSAGE are plain strings; only MESSAGE is a format. */
	g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE, "MESSAGE_ID", MSGID_HOLD_START, "CGROUP",
			 r->path, "OOMD_HOLD_ID", id, "OOMD_LIMIT", lim, "OOMD_USAGE", use,
			 "OOMD_DEADLINE_IN_MS", left, "OOMD_DISABLE", e->v.disable ? "1" : "0",
			 "MESSAGE",
			 "hold %" PRIu64 " started: %s, usage %" PRIu64 " over L %" PRIu64
			 " bytes, deadline in %s ms%s",
			 r->hold_id, r->path, r->usage, r->limit, left,
			 e->v.disable ? " (oom_kill_disable 1: no kill)" : "");
}

static void publish(od_audit *a, const od_hold_record *r);

/* A pending end becomes final: as it looked, or a kill if oom_kill has moved since. */
static void settle(od_audit *a, cg_state *s, bool killed)
{
	if (!s->pending)
		return;
	s->pending = false;
	a->npending--;
	if (killed)
		s->pend.end = OD_END_KILL_EARLY;
	publish(a, &s->pend);
}

/* v: the view after the end (NULL: removed); prev_kills: oom_kill before it. */
static void finish(od_audit *a, cg_state *s, int64_t t, const oe_view *v, uint64_t prev_kills)
{
	od_hold_record *r = &s->r;
	r->end_ns = t;
	s->ended_onset = r->onset_ns;
	bool due = r->deadline_ns != OE_NO_DEADLINE && t >= r->deadline_ns - 1000000;
	if (!v)
		r->end = OD_END_REMOVED;
	else if (due && !v->disable)
		r->end = a->mode == OE_KILL_GROUP ? OD_END_KILL_GROUP : OD_END_KILL_KERNEL;
	else if (v->limit > r->limit)
		r->end = OD_END_RAISE;
	else if (v->oom_kill > prev_kills)
		r->end = OD_END_KILL_EARLY; /* the kill is seen with the end */
	else if (any_moved(s->pids, r->path))
		r->end = OD_END_MOVE;
	else
		r->end = OD_END_EXIT;
	bool kill = r->end == OD_END_KILL_GROUP || r->end == OD_END_KILL_KERNEL;
	if (kill)
		r->kill_late_ns = t - r->deadline_ns;
	if (v && !v->disable && (r->end == OD_END_EXIT || r->end == OD_END_MOVE)) {
		s->pending = true;
		a->npending++;
		s->pend = *r;
		s->pend_oom_kill = v->oom_kill;
		r->hold_id = 0;
		g_mutex_lock(&a->lock);
		publish_open_locked(a);
		g_mutex_unlock(&a->lock);
		return;
	}
	od_hold_record done = *r;
	r->hold_id = 0;
	publish(a, &done);
}

static void publish(od_audit *a, const od_hold_record *r)
{
	bool kill = r->end == OD_END_KILL_GROUP || r->end == OD_END_KILL_KERNEL;
	g_mutex_lock(&a->lock);
	a->st.ended[r->end]++;
	if (kill) {
		double late = r->kill_late_ns > 0 ? r->kill_late_ns / 1e9 : 0;
		bucket(a->st.late_n, od_late_bounds, OD_LATE_BUCKETS, late);
		a->st.late_sum += late;
	}
	if (a->ended->len >= KEEP_ENDED)
		g_array_remove_index(a->ended, 0);
	g_array_append_val(a->ended, *r);
	const od_hold_record done = *r;
	publish_open_locked(a);
	g_mutex_unlock(&a->lock);
	char late[32] = "";
	if (kill)
		snprintf(late, sizeof late, "%.1f", done.kill_late_ns / 1e6);
	char id[24], held[32], lis[16];
	snprintf(id, sizeof id, "%" PRIu64, done.hold_id);
	snprintf(held, sizeof held, "%.1f", (done.end_ns - done.onset_ns) / 1e6);
	snprintf(lis, sizeof lis, "%u", done.listeners);
	g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE, "MESSAGE_ID", MSGID_HOLD_END, "CGROUP",
			 done.path, "OOMD_HOLD_ID", id, "OOMD_END", od_end_name(done.end),
			 "OOMD_HELD_MS", held, "OOMD_LISTENERS", lis, "OOMD_KILL_LATENESS_MS", late,
			 "MESSAGE",
			 "hold %" PRIu64 " ended: %s, %s after %.1f ms, %u listener signals%s%s%s",
			 done.hold_id, done.path, od_end_name(done.end),
			 (done.end_ns - done.onset_ns) / 1e6, done.listeners,
			 kill ? ", kill " : "", late, kill ? " ms after the deadline" : "");
}

static void broken(od_audit *a, cg_state *s)
{
	g_mutex_lock(&a->lock);
	a->st.broken_promises++;
	g_mutex_unlock(&a->lock);
	char id[24];
	snprintf(id, sizeof id, "%" PRIu64, s->r.hold_id);
	g_log_structured(G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, "MESSAGE_ID", MSGID_BROKEN, "CGROUP",
			 s->r.path, "OOMD_HOLD_ID", id, "MESSAGE",
			 "hold %" PRIu64 ": broken promise, a process of %s was OOM-killed "
			 "before the deadline", s->r.hold_id, s->r.path);
}

/* One hold, one record: the engine names each hold by its onset. A view of a hold
 * already recorded as ended, or one without a hold taken before the running hold's
 * onset, came through another thread's hook late: it tells nothing new. */
static bool stale(const cg_state *s, const ev *e)
{
	if (e->v.in_hold)
		return e->v.hold_onset_ns && e->v.hold_onset_ns == s->ended_onset && !s->r.hold_id;
	return s->r.hold_id && e->t < s->r.onset_ns;
}

static void handle(od_audit *a, const ev *e)
{
	cg_state *s = g_hash_table_lookup(a->cgs, &e->id);
	if (s && s->pending)
		settle(a, s, e->have_view && e->v.oom_kill > s->pend_oom_kill);
	if (e->kind == EV_REMOVED) {
		if (s && s->r.hold_id)
			finish(a, s, e->t, NULL, 0);
		if (s)
			g_hash_table_remove(a->cgs, &e->id);
		return;
	}
	if (!e->have_view)
		return;
	if (!s) {
		s = g_new0(cg_state, 1);
		s->r.cgroup_id = e->id;
		g_hash_table_insert(a->cgs, &s->r.cgroup_id, s);
	}
	/* A kill the hold did not order: OOM kills counted while held, before the
	 * deadline or under oom_kill_disable (rule 9). */
	if (s->seen && e->v.oom_kill > s->last_oom_kill && s->r.hold_id && e->v.in_hold &&
	    (e->t < s->r.deadline_ns - 1000000 || e->v.disable))
		broken(a, s);
	uint64_t prev_kills = s->last_oom_kill;
	s->last_oom_kill = e->v.oom_kill;
	s->seen = true;
	if (stale(s, e))
		; /* a view from before what the records already say */
	else if (e->v.in_hold && s->r.hold_id && e->v.hold_onset_ns &&
		 e->v.hold_onset_ns != s->r.onset_ns) {
		/* The engine ended that hold and began another between two of our events:
		 * two holds, two records (never one stretched over both). */
		finish(a, s, e->v.hold_onset_ns, &e->v, prev_kills);
		onset(a, s, e);
	} else if (e->v.in_hold && !s->r.hold_id)
		onset(a, s, e);
	else if (!e->v.in_hold && s->r.hold_id)
		finish(a, s, e->t, &e->v, prev_kills);
	else if (s->r.hold_id)
		s->r.deadline_ns = e->v.deadline_ns; /* a new delay written during the hold */
	if (e->kind == EV_NOTIFY && s->r.hold_id) {
		g_mutex_lock(&a->fs_lock);
		s->r.listeners += (unsigned)od_shadowfs_listeners(a->fs, e->id);
		g_mutex_unlock(&a->fs_lock);
		g_mutex_lock(&a->lock);
		a->st.notifications++;
		publish_open_locked(a);
		g_mutex_unlock(&a->lock);
	}
}

/* Pending ends that waited long enough for a kill are final as they looked. */
static void sweep(od_audit *a, bool all)
{
	int64_t now = od_now();
	GHashTableIter it;
	gpointer val;
	g_hash_table_iter_init(&it, a->cgs);
	while (g_hash_table_iter_next(&it, NULL, &val)) {
		cg_state *s = val;
		if (s->pending && (all || now - s->pend.end_ns >= PENDING_NS))
			settle(a, s, false);
	}
}

static gpointer audit_main(gpointer data)
{
	od_audit *a = data;
	for (;;) {
		/* Asleep until an event, unless an end waits to be settled. */
		ev *e = a->npending ? g_async_queue_timeout_pop(a->q, 250 * 1000) : g_async_queue_pop(a->q);
		sweep(a, e && e->kind == EV_STOP);
		if (!e)
			continue;
		bool stop = e->kind == EV_STOP;
		if (!stop)
			g_atomic_int_add(&a->queued, -1);
		if (!stop)
			handle(a, e);
		g_free(e);
		if (stop)
			return NULL;
	}
}

od_audit *od_audit_new(od_controller *c, oe_kill_mode mode)
{
	od_audit *a = g_new0(od_audit, 1);
	a->ctl = c;
	a->mode = mode;
	a->q = g_async_queue_new_full(g_free);
	a->cgs = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, cg_state_free);
	g_mutex_init(&a->lock);
	g_mutex_init(&a->fs_lock);
	g_mutex_init(&a->drop_lock);
	a->open = g_array_new(FALSE, FALSE, sizeof(od_hold_record));
	a->ended = g_array_new(FALSE, FALSE, sizeof(od_hold_record));
	a->st.started_at = od_now();
	a->thread = g_thread_new("oomd-audit", audit_main, a);
	od_hooks h = { .control_changed = hook_changed, .notify = hook_notify,
		       .removed = hook_removed, .ud = a };
	a->hooks = od_controller_set_hooks(c, &h);
	return a;
}

void od_audit_set_fs(od_audit *a, od_shadowfs *fs)
{
	g_mutex_lock(&a->fs_lock);
	a->fs = fs;
	g_mutex_unlock(&a->fs_lock);
}

void od_audit_free(od_audit *a)
{
	if (!a)
		return;
	od_controller_remove_hooks(a->ctl, a->hooks); /* no push after it */
	ev *e = g_new0(ev, 1);
	e->kind = EV_STOP;
	g_async_queue_push(a->q, e);
	g_thread_join(a->thread);
	g_async_queue_unref(a->q);
	g_hash_table_destroy(a->cgs);
	g_array_unref(a->open);
	g_array_unref(a->ended);
	g_mutex_clear(&a->lock);
	g_mutex_clear(&a->fs_lock);
	g_mutex_clear(&a->drop_lock);
	g_free(a);
}

void od_audit_stats_get(od_audit *a, od_audit_stats *s)
{
	g_mutex_lock(&a->lock);
	*s = a->st;
	g_mutex_unlock(&a->lock);
}

GArray *od_audit_records(od_audit *a)
{
	GArray *out = g_array_new(FALSE, FALSE, sizeof(od_hold_record));
	g_mutex_lock(&a->lock);
	g_array_append_vals(out, a->open->data, a->open->len);
	g_array_append_vals(out, a->ended->data, a->ended->len);
	g_mutex_unlock(&a->lock);
	return out;
}

od_controller *od_audit_controller(od_audit *a)
{
	return a->ctl;
}

size_t od_audit_listeners(od_audit *a, uint64_t id)
{
	g_mutex_lock(&a->fs_lock);
	size_t n = od_shadowfs_listeners(a->fs, id);
	g_mutex_unlock(&a->fs_lock);
	return n;
}
