/* audit.c — implements audit.h. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "oomd/audit.h"
#include "oomd/fsstats.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pi_mutex.h"

#define KEEP_ENDED 64
#define MAX_PIDS 256
/* The events waiting for the audit thread: a ring filled under the engine's lock,
 * where nothing may allocate or fault, so of a fixed size and touched at the start;
 * past it an event is dropped and counted. Only cgroups ever held send any
 * (audit_observed), so a tenant's loop of knob writes on a cgroup never held fills
 * nothing. 512 events of 112 bytes: 56 KiB. Removals queue apart (rm_q). */
#define RING 512

/* journald MESSAGE_ID per kind of record (journalctl MESSAGE_ID=...) */
#define MSGID_HOLD_START "4f8a1c2e9b3d47e6a0c5d2b8e1f7a903"
#define MSGID_HOLD_END "9d2e7b4c1a8f4e03b6c9d5a2e7f1b864"
#define MSGID_BROKEN "c3b1e8f2a7d94c60b5e2f9a1d8c7e346"

const double od_late_bounds[OD_LATE_BUCKETS] = { 0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
						 0.25,  0.5,   1,    2.5,   5 };
const double od_over_bounds[OD_OVER_BUCKETS] = { 65536,    262144,   1048576, 4194304,
						 16777216, 67108864, 268435456 };

/* EV_CHANGED and EV_NOTIFY carry the view the engine call left (observed hook);
 * EV_KILLED, when a kill's write ended and its errno (0: done); EV_REMOVED, nothing. */
typedef enum { EV_CHANGED, EV_NOTIFY, EV_KILLED, EV_REMOVED } ev_kind;

typedef struct {
	ev_kind kind;
	int err; /* EV_KILLED */
	uint64_t id;
	int64_t t;
	oe_view v;
} ev;

typedef struct {
	od_hold_record r;  /* r.hold_id 0: not held */
	GArray *pids;      /* of pid_t, at the onset */
	uint64_t last_oom_kill;
	bool seen;
	/* An end that looked like an exit or a move waits PENDING_NS for an OOM kill to
	 * show (a delay of 0 written during the hold kills before the deadline we know);
	 * a kill's end waits as long for its write to end (pend_kill: EV_KILLED), which
	 * kill lateness counts to. */
	bool pending, pend_kill;
	od_hold_record pend;
	uint64_t pend_oom_kill;
} cg_state;

#define PENDING_NS (1000 * 1000000LL)
/* A kill's end waits this long for its write to end (EV_KILLED): reclaim inside the
 * memory.max write took hundreds of ms under global pressure (f-pressure). Past it (the
 * event dropped), the record ends when the engine decided the kill. */
#define PENDING_KILL_NS (10 * 1000 * 1000000LL)

/* A removal, and how many ring events had been pushed when it came: it is handled once
 * the audit thread has taken that many (none of its cgroup's events is left behind). */
typedef struct {
	uint64_t id;
	int64_t t;
	uint64_t after;
} removal;

struct od_audit {
	od_controller *ctl;
	od_hooks_reg *hooks;
	od_shadowfs *fs; /* under fs_lock: main frees the session after od_audit_set_fs(NULL) */
	GMutex fs_lock;
	oe_kill_mode mode;
	/* The queue. Priority inheritance: the deadline thread (SCHED_FIFO) pushes while
	 * it holds the engine's lock. */
	pthread_mutex_t q_lock;
	pthread_cond_t q_cond;
	ev *ring;        /* RING */
	unsigned head, count;
	uint64_t pushed, taken; /* ring events ever pushed, ever taken */
	unsigned rm_ready;      /* removals queued in rm_q (counted here to wake the thread) */
	unsigned dropped;     /* since the audit thread last took the count */
	bool stop;
	/* Removals, outside the engine's lock: they may allocate. rm_lock is taken inside
	 * q_lock by the audit thread only, never the other way. */
	GMutex rm_lock;
	GQueue rm_q; /* removal* */
	GThread *thread;
	/* the audit thread's own */
	int64_t caught_up; /* when it last found the ring empty: pending ends wait from here */
	unsigned drop_count;   /* since the last log line */
	gint64 dropped_logged; /* monotonic us of that line */
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

/* ---- hooks: never block ---- */

/* Takes the ring's lock; the caller unlocks. Returns the free slot, or NULL (full). */
static ev *slot_locked(od_audit *a)
{
	pthread_mutex_lock(&a->q_lock);
	if (a->count == RING)
		return NULL;
	pthread_cond_signal(&a->q_cond);
	a->pushed++;
	return &a->ring[(a->head + a->count++) % RING];
}

/* Under the engine's lock: no allocation, no log (a drop is counted, and told by the
 * audit thread). Cgroups never held are left out: nothing of them makes a record. */
static void audit_observed(void *ud, uint64_t id, bool notify, const oe_view *v, int64_t t)
{
	od_audit *a = ud;
	if (!v->in_hold && !v->was_held)
		return;
	ev *e = slot_locked(a);
	if (e)
		*e = (ev){ .kind = notify ? EV_NOTIFY : EV_CHANGED, .id = id, .t = t, .v = *v };
	else
		a->dropped++;
	pthread_mutex_unlock(&a->q_lock);
}

/* On the kill actuator, right after the kill's write. */
static void audit_killed(void *ud, uint64_t id, int64_t t, int err)
{
	od_audit *a = ud;
	ev *e = slot_locked(a);
	if (e)
		*e = (ev){ .kind = EV_KILLED, .id = id, .t = t, .err = err };
	else
		a->dropped++; /* the record keeps the time the engine decided the kill */
	pthread_mutex_unlock(&a->q_lock);
}

/* Outside the engine's lock, after the removal's engine call: every event of the
 * cgroup is in the ring by now. Not in the ring: a subtree of cgroups never held would
 * fill it, and the onsets beside it would be lost. */
static void audit_removed(void *ud, uint64_t id)
{
	od_audit *a = ud;
	removal *r = g_new(removal, 1);
	r->id = id;
	r->t = od_now();
	pthread_mutex_lock(&a->q_lock);
	r->after = a->pushed;
	pthread_mutex_unlock(&a->q_lock);
	g_mutex_lock(&a->rm_lock);
	g_queue_push_tail(&a->rm_q, r);
	g_mutex_unlock(&a->rm_lock);
	pthread_mutex_lock(&a->q_lock);
	a->rm_ready++;
	pthread_cond_signal(&a->q_cond);
	pthread_mutex_unlock(&a->q_lock);
}

/* ---- the audit thread ---- */

/* One line per minute at most: the flood goes on while we log. */
static void note_dropped(od_audit *a, unsigned n)
{
	a->drop_count += n;
	gint64 now = g_get_monotonic_time();
	if (a->dropped_logged && now - a->dropped_logged < 60 * G_USEC_PER_SEC)
		return;
	g_warning("audit: %u events dropped: %d wait for the audit thread (a flood of knob "
		  "writes?); hold records may be incomplete, kills are not affected",
		  a->drop_count, RING);
	a->dropped_logged = now;
	a->drop_count = 0;
}

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
	/* A cgroup removed since (its removal waits behind this event) has no path left. */
	bool gone = od_controller_snapshot(a->ctl, e->id, path_cb, r->path) == 0;
	if (gone)
		snprintf(r->path, sizeof r->path, "cgroup %" PRIu64 " (removed)", e->id);
	/* The onset the deadline counts from (the engine's), not this event's time: the
	 * engine call that emitted it may have come later (a sample's reading first). */
	r->onset_ns = e->v.hold_onset_ns ? e->v.hold_onset_ns : e->t;
	r->onset_wall_us = g_get_real_time() - (od_now() - r->onset_ns) / 1000;
	r->deadline_ns = e->v.deadline_ns;
	r->limit = e->v.limit;
	/* the usage the onset was seen at (the reading in the view, oe_view.usage); read
	 * here, 3-39 ms later, it missed a task that had left (o-audit on 7, CI-like run) */
	r->usage = e->v.usage || gone ? e->v.usage : read_u64_at(r->path, "memory.current");
	if (s->pids)
		g_array_unref(s->pids);
	s->pids = gone ? NULL : read_pids(r->path);
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
	if (killed && !s->pend_kill)
		s->pend.end = OD_END_KILL_EARLY;
	publish(a, &s->pend);
}

/* A kill's write ended at t (0: it failed): its record ends there. */
static void kill_done(od_audit *a, cg_state *s, int64_t t)
{
	if (!s->pending || !s->pend_kill)
		return;
	if (t) {
		s->pend.end_ns = t;
		s->pend.kill_late_ns = t - s->pend.deadline_ns;
	}
	settle(a, s, false);
}

/* v: the view after the end (NULL: removed); prev_kills: oom_kill before it. */
static void finish(od_audit *a, cg_state *s, int64_t t, const oe_view *v, uint64_t prev_kills)
{
	od_hold_record *r = &s->r;
	settle(a, s, false); /* the hold before, if its end still waits */
	r->end_ns = t;
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
	if (v && ((!v->disable && (r->end == OD_END_EXIT || r->end == OD_END_MOVE)) || kill)) {
		s->pending = true;
		s->pend_kill = kill;
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

/* Events come in the engine's order (audit_observed), one cgroup's never overtaking
 * each other: one hold is one record. */
static void handle(od_audit *a, const ev *e)
{
	cg_state *s = g_hash_table_lookup(a->cgs, &e->id);
	switch (e->kind) {
	case EV_REMOVED:
		if (s) {
			settle(a, s, false); /* an earlier hold's end, as it looked */
			if (s->r.hold_id)
				finish(a, s, e->t, NULL, 0);
			g_hash_table_remove(a->cgs, &e->id);
		}
		return;
	case EV_KILLED:
		/* The daemon's kill: of a hold whose deadline passed (its end waits for this),
		 * or before it (a delay of 0 written during the hold: the end looked like an
		 * exit, and is a kill-early). A failed write killed nothing: the end stays as
		 * it looked, and a kill's lateness runs to when the engine decided it. */
		if (s && s->pending && s->pend_kill)
			kill_done(a, s, e->err ? 0 : e->t);
		else if (s)
			settle(a, s, e->err == 0);
		return;
	case EV_CHANGED:
	case EV_NOTIFY:
		break;
	}
	if (s && s->pending && !s->pend_kill)
		settle(a, s, e->v.oom_kill > s->pend_oom_kill);
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
	if (e->v.in_hold && s->r.hold_id && e->v.hold_onset_ns &&
	    e->v.hold_onset_ns != s->r.onset_ns) {
		/* The engine ended that hold and began another with no event between (an
		 * ancestor under OOM leaves the end without a CHANGED, hold.c
		 * under_oom_changed): two holds, two records (never one stretched over both). */
		finish(a, s, e->v.hold_onset_ns, &e->v, prev_kills);
		onset(a, s, e);
	} else if (e->v.in_hold && !s->r.hold_id)
		onset(a, s, e);
	else if (!e->v.in_hold && s->r.hold_id)
		finish(a, s, e->t, &e->v, prev_kills);
	else if (s->r.hold_id && e->v.deadline_ns > s->r.deadline_ns)
		/* A longer delay written during the hold moves the deadline a kill is judged
		 * by; a shorter one (0: at once) does not: that kill is a kill-early. */
		s->r.deadline_ns = e->v.deadline_ns;
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
	/* Not the clock: an event that would settle an end may still wait in the ring. */
	int64_t now = a->caught_up;
	GHashTableIter it;
	gpointer val;
	g_hash_table_iter_init(&it, a->cgs);
	while (g_hash_table_iter_next(&it, NULL, &val)) {
		cg_state *s = val;
		if (s->pending && (all || now - s->pend.end_ns >= (s->pend_kill ? PENDING_KILL_NS : PENDING_NS)))
			settle(a, s, false);
	}
}

/* A removal whose cgroup's ring events have all been taken, into *e; under q_lock. */
static bool take_removal_locked(od_audit *a, ev *e)
{
	if (!a->rm_ready)
		return false;
	g_mutex_lock(&a->rm_lock);
	removal *r = g_queue_peek_head(&a->rm_q);
	bool ready = r && a->taken >= r->after;
	if (ready) {
		g_queue_pop_head(&a->rm_q);
		a->rm_ready--;
	}
	g_mutex_unlock(&a->rm_lock);
	if (!ready)
		return false;
	*e = (ev){ .kind = EV_REMOVED, .id = r->id, .t = r->t };
	g_free(r);
	return true;
}

/* The next event into *e. Waits (up to 250 ms if timed). Returns false on a time-out,
 * or when stopped with nothing left (*stop). */
static bool next_event(od_audit *a, ev *e, bool timed, bool *stop)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += 250 * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	bool got = false;
	pthread_mutex_lock(&a->q_lock);
	for (;;) {
		got = take_removal_locked(a, e);
		if (!got && a->count) {
			*e = a->ring[a->head];
			a->head = (a->head + 1) % RING;
			a->count--;
			a->taken++;
			got = true;
		}
		if (got || (a->stop && !a->rm_ready))
			break;
		if (!a->count)
			a->caught_up = od_now(); /* taken == pushed: every removal is ready too */
		if (a->rm_ready)
			continue;
		if (!timed)
			pthread_cond_wait(&a->q_cond, &a->q_lock);
		else if (pthread_cond_timedwait(&a->q_cond, &a->q_lock, &until) == ETIMEDOUT) {
			if (!a->count)
				a->caught_up = od_now(); /* the wait's own end: nothing came */
			break;
		}
	}
	*stop = !got && a->stop && !a->rm_ready;
	unsigned dropped = a->dropped;
	a->dropped = 0;
	pthread_mutex_unlock(&a->q_lock);
	if (dropped)
		note_dropped(a, dropped);
	return got;
}

static gpointer audit_main(gpointer data)
{
	od_audit *a = data;
	for (;;) {
		ev e;
		bool stop;
		/* Asleep until an event, unless an end waits to be settled. */
		bool got = next_event(a, &e, a->npending > 0, &stop);
		sweep(a, stop);
		if (stop)
			return NULL;
		if (got)
			handle(a, &e);
	}
}

od_audit *od_audit_new(od_controller *c, oe_kill_mode mode)
{
	od_audit *a = g_new0(od_audit, 1);
	a->ctl = c;
	a->mode = mode;
	od_pi_mutex_init(&a->q_lock, "the audit's queue");
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->q_cond, &ca);
	pthread_condattr_destroy(&ca);
	/* Touched now (calloc may leave fresh pages untouched): resident and locked, so
	 * no push under the engine's lock faults. */
	a->ring = g_new(ev, RING);
	memset(a->ring, 0, RING * sizeof(ev));
	g_mutex_init(&a->rm_lock);
	g_queue_init(&a->rm_q);
	a->cgs = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, cg_state_free);
	g_mutex_init(&a->lock);
	g_mutex_init(&a->fs_lock);
	a->open = g_array_new(FALSE, FALSE, sizeof(od_hold_record));
	a->ended = g_array_new(FALSE, FALSE, sizeof(od_hold_record));
	a->st.started_at = od_now();
	a->thread = g_thread_new("oomd-audit", audit_main, a);
	od_hooks h = { .observed = audit_observed, .killed = audit_killed,
		       .removed = audit_removed, .ud = a };
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
	pthread_mutex_lock(&a->q_lock);
	a->stop = true; /* the thread handles what is queued first */
	pthread_cond_signal(&a->q_cond);
	pthread_mutex_unlock(&a->q_lock);
	g_thread_join(a->thread);
	pthread_cond_destroy(&a->q_cond);
	pthread_mutex_destroy(&a->q_lock);
	g_free(a->ring);
	g_queue_clear_full(&a->rm_q, g_free);
	g_mutex_clear(&a->rm_lock);
	g_hash_table_destroy(a->cgs);
	g_array_unref(a->open);
	g_array_unref(a->ended);
	g_mutex_clear(&a->lock);
	g_mutex_clear(&a->fs_lock);
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
