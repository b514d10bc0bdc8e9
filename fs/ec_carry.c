/* ec_carry.c — v1 listeners outlive the server: OOM listeners, usage thresholds and
 * pressure levels. A v1 registration lives as long as its eventfd: a handler registers
 * once and blocks in read(2) for good, so a listener lost at a crash, a watchdog kill or
 * an upgrade would never hear again, silently.
 *
 * Each listener is recorded in the state memfd that the service manager keeps with
 * the connection (carry.c): its cgroup's kernfs id, its eventfd's eventfd-id, the
 * process holding that eventfd (pid and start time), the registering uid and its
 * principal for the bounds (ec_bounds.h: a uid, or a whole user namespace), and what it
 * listens to (a threshold's bytes; a pressure level and mode). The
 * eventfd itself is not carried: it is re-taken by the successor from the process
 * that holds it, as the holder search of ec_exit.c follows a daemonizing handler.
 * So nothing beyond the one memfd is kept outside, the fd store's bound is untouched,
 * and a listener whose eventfd nobody holds any more is dropped, as v1 dropped it.
 *
 * What is believed: the memfd is the daemon's own (only the service manager and the
 * server hold it). The eventfd found is checked in the holder's table through procfs
 * only (it is an eventfd, with that eventfd-id), and again once ours. eventfd-ids are
 * unique among live eventfds but reused once one is freed, so an id alone could name
 * a stranger's new eventfd: the recorded process (pid and start time) is asked first,
 * and only when it is gone (a handler that forked and exited during the restart) any
 * process of the registering uid: no other uid's eventfd is ever taken, and a uid
 * signalled on its own new eventfd learns nothing it could not register for.
 * The re-taken listeners are in the list like any other: every bound counts them (and
 * counts the records not re-taken yet: a registration during the re-take cannot take
 * their room), the watch thread follows their processes, the notifier alone writes them.
 * Thresholds and pressure levels join ec_levels.c through ec_levels_add_locked, as a FUSE
 * worker's registration does, with what the record says in place of the parsed arguments.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include "ec_private.h"
#include "v1files.h"

uint64_t ec_proc_starttime(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	g_autofree char *stat = NULL;
	if (!g_file_get_contents(path, &stat, NULL, NULL))
		return 0;
	const char *p = strrchr(stat, ')'); /* comm may hold spaces and parentheses */
	if (!p)
		return 0;
	/* after ") ": field 3 (state) onwards; the start time is field 22 */
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	return p ? g_ascii_strtoull(p + 1, NULL, 10) : 0;
}

_Static_assert(EC_OOM == 0, "a record without a kind (an older server's) is an OOM listener");

static const char *kind_name(uint32_t kind)
{
	switch (kind) {
	case EC_OOM:
		return "OOM listener";
	case EC_USAGE:
	case EC_MEMSW:
		return "usage threshold";
	case EC_PRESSURE:
		return "memory.pressure_level listener";
	}
	return "listener of an unknown kind";
}

void ec_carry_record(fs_evctl *e, ec_listener *l)
{
	if (!e->carry || !l->eventfd_id)
		return;
	fs_carried_listener r = { .cgroup = l->id, .eventfd_id = l->eventfd_id,
				  .starttime = ec_proc_starttime(l->tgid), .tgid = l->tgid,
				  .uid = l->uid, .who_known = true, .principal = l->principal,
				  .root = l->root, .stranger = l->stranger, .kind = l->kind,
				  .threshold = l->threshold, .level = l->level, .mode = l->mode,
				  .cg_root = l->cg_root };
	l->slot = fs_carry_listener_put(e->carry, &r);
	if (l->slot >= 0)
		l->carry = e->carry;
	else
		g_warning("cgroup %" G_GUINT64_FORMAT ": no room to carry the %s of pid %d "
			  "across a restart", l->id, kind_name(l->kind), (int)l->tgid);
}

bool ec_carry_valid(const fs_carried_listener *r)
{
	switch (r->kind) {
	case EC_OOM:
	case EC_USAGE: /* any size v1 took, 0 and "-1" (UINT64_MAX) included */
	case EC_MEMSW:
		return true;
	case EC_PRESSURE:
		return r->level < OD_VMP_NLEVELS && r->mode <= OD_VMP_LOCAL;
	}
	return false;
}

void ec_carry_who(const fs_carried_listener *r, uint64_t *principal, bool *root, bool *stranger)
{
	if (r->who_known) { /* as the live registration computed it (event_control.c) */
		*principal = r->principal;
		*root = r->root;
		*stranger = r->stranger;
		return;
	}
	/* A record of a server that kept no principal (before stop 25): its uid, and a
	 * stranger unless root's: never more than it had, and root keeps its reserve. A
	 * container's listeners then count per uid until they register again. */
	*principal = r->uid;
	*root = r->uid == 0;
	*stranger = !*root;
}

void ec_carry_holder(ec_listener *l)
{
	if (l->carry)
		fs_carry_listener_holder(l->carry, l->slot, l->tgid, ec_proc_starttime(l->tgid));
}

/* fsuid of process pid (the fourth Uid: field), or -1. */
static int64_t proc_fsuid(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	g_autofree char *st = NULL;
	if (!g_file_get_contents(path, &st, NULL, NULL))
		return -1;
	const char *p = strstr(st, "\nUid:");
	if (!p)
		return -1;
	unsigned long v[4];
	if (sscanf(p + 5, "%lu %lu %lu %lu", &v[0], &v[1], &v[2], &v[3]) != 4)
		return -1;
	return (int64_t)v[3];
}

/* A carried record on its way back (e->pending). r, slot and who are set before the
 * thread starts and read by the bounds under e->lock; done is set under e->lock; efd,
 * holder and pidfd are the re-taking thread's. */
struct ec_pending {
	fs_carried_listener r;
	int slot;
	uint64_t principal; /* who registered it (ec_carry_who) */
	bool root, stranger;
	bool done;   /* in e->all now, or dropped: no longer counted as pending */
	int efd;     /* ours once found, else -1 */
	pid_t holder;
	int pidfd;
};

void ec_carry_count_pending_locked(fs_evctl *e, ec_counts *n, uint64_t id, pid_t tgid, uint64_t principal)
{
	for (guint i = 0; e->pending && i < e->pending->len; i++) {
		const ec_pending *q = &g_array_index(e->pending, ec_pending, i);
		if (!q->done)
			ec_count_one(n, id, tgid, principal, q->r.cgroup, q->r.tgid, q->principal, q->root,
				     q->stranger);
	}
}

/* One walk of process pid's descriptors (pinned by pidfd): every pending record in want
 * (eventfd-id -> GArray of indices into p) not found yet whose eventfd it holds is taken.
 * Only descriptors procfs shows to be eventfds with that id are taken; ours is checked
 * again (the process may have put another file under that number meanwhile: that one
 * goes to the closer, whose close may block). uid >= 0: only records of that uid. */
static void take_from(fs_evctl *e, int pidfd, pid_t pid, int64_t uid, GHashTable *want, GArray *p)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		uint64_t id, x;
		if (*end || de->d_name[0] == '.' || fs_fd_is_eventfd(pid, (int)fd) != 0 ||
		    fs_eventfd_id(pid, (int)fd, &id) != 0)
			continue;
		GArray *idx = g_hash_table_lookup(want, &id);
		for (guint j = 0; idx && j < idx->len; j++) {
			ec_pending *q = &g_array_index(p, ec_pending, g_array_index(idx, guint, j));
			if (q->efd >= 0 || (uid >= 0 && (int64_t)q->r.uid != uid))
				continue;
			int efd = pidfd_getfd(pidfd, (int)fd, 0);
			if (efd < 0)
				break;
			if (!fs_fd_within_budget(efd) || fs_fd_is_eventfd(0, efd) != 0 ||
			    fs_eventfd_id(0, efd, &x) != 0 || x != id) {
				/* pending closes count for the registrant's principal, as live ones do */
				fs_closer_give(e->closer, efd, q->r.who_known ? q->r.principal : q->r.uid);
				break;
			}
			q->efd = efd;
			q->holder = pid;
			q->pidfd = fcntl(pidfd, F_DUPFD_CLOEXEC, 3);
		}
	}
	closedir(d);
}

/* The eventfds of the pending records: first from each recorded holder that is the
 * same process (pid and start time), one walk per process; then, in one pass over
 * /proc, from any process of a record's uid. Bounded like ec_exit.c's holder search:
 * one read per descriptor of the processes looked at, not one per pair. */
static void find_eventfds(fs_evctl *e, GArray *p)
{
	g_autoptr(GHashTable) want = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
							    (GDestroyNotify)g_array_unref);
	g_autoptr(GHashTable) by_tgid = g_hash_table_new(g_direct_hash, g_direct_equal);
	g_autoptr(GHashTable) uids = g_hash_table_new(g_direct_hash, g_direct_equal);
	for (guint i = 0; i < p->len; i++) {
		ec_pending *q = &g_array_index(p, ec_pending, i);
		GArray *idx = g_hash_table_lookup(want, &q->r.eventfd_id);
		if (!idx) {
			idx = g_array_new(FALSE, FALSE, sizeof(guint));
			g_hash_table_insert(want, g_memdup2(&q->r.eventfd_id, sizeof(uint64_t)), idx);
		}
		g_array_append_val(idx, i);
		if (q->r.tgid > 0)
			g_hash_table_add(by_tgid, GINT_TO_POINTER(q->r.tgid));
	}
	GHashTableIter it;
	gpointer k;
	g_hash_table_iter_init(&it, by_tgid);
	while (g_hash_table_iter_next(&it, &k, NULL)) {
		pid_t tgid = GPOINTER_TO_INT(k);
		int pfd = pidfd_open(tgid, 0);
		if (pfd < 0)
			continue;
		uint64_t start = ec_proc_starttime(tgid);
		/* only the records that name this process with this start time */
		g_autoptr(GHashTable) mine = g_hash_table_new(g_int64_hash, g_int64_equal);
		for (guint i = 0; i < p->len; i++) {
			ec_pending *q = &g_array_index(p, ec_pending, i);
			if (q->r.tgid == tgid && q->r.starttime && q->r.starttime == start)
				g_hash_table_add(mine, &q->r.eventfd_id);
		}
		if (g_hash_table_size(mine)) {
			g_autoptr(GHashTable) w = g_hash_table_new(g_int64_hash, g_int64_equal);
			GHashTableIter i2;
			gpointer id;
			g_hash_table_iter_init(&i2, mine);
			while (g_hash_table_iter_next(&i2, &id, NULL))
				g_hash_table_insert(w, id, g_hash_table_lookup(want, id));
			take_from(e, pfd, tgid, -1, w, p);
		}
		close(pfd);
	}
	bool left = false;
	for (guint i = 0; i < p->len; i++) {
		ec_pending *q = &g_array_index(p, ec_pending, i);
		if (q->efd < 0) {
			left = true;
			g_hash_table_add(uids, GUINT_TO_POINTER(q->r.uid));
		}
	}
	DIR *proc = left ? opendir("/proc") : NULL;
	if (!proc)
		return;
	pid_t self = getpid();
	struct dirent *de;
	while ((de = readdir(proc))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0 || pid == self)
			continue;
		int64_t uid = proc_fsuid((pid_t)pid);
		if (uid < 0 || !g_hash_table_contains(uids, GUINT_TO_POINTER((uid_t)uid)))
			continue;
		int pfd = pidfd_open((pid_t)pid, 0);
		if (pfd < 0)
			continue;
		if (proc_fsuid((pid_t)pid) == uid) /* the pid is pinned now: still that uid's? */
			take_from(e, pfd, (pid_t)pid, uid, want, p);
		close(pfd);
	}
	closedir(proc);
}

static void drop_record(const ec_pending *q, fs_carry *c, const char *why)
{
	g_message("cgroup %" G_GUINT64_FORMAT ": the %s of pid %d (uid %u) was not carried over: %s",
		  q->r.cgroup, kind_name(q->r.kind), (int)q->r.tgid, (unsigned)q->r.uid, why);
	fs_carry_listener_clear(c, q->slot);
}

static void pending_done(fs_evctl *e, ec_pending *q)
{
	g_mutex_lock(&e->lock);
	q->done = true;
	g_mutex_unlock(&e->lock);
}

/* The real directory of carried cgroup id: >= 0, -1 (removed, or not under our root), -2
 * (not known: no mount to ask, a test's evctl). */
static int open_cgroup(fs_evctl *e, uint64_t id)
{
	if (e->open_cgroup)
		return e->open_cgroup(e->open_cgroup_ud, id);
	return e->fs ? fs_inodes_open_cgroup(e->fs->inodes, id) : -2;
}

/* A threshold's baseline: the usage of its counter now, as the v1 file shows it. v1
 * signals a threshold when the usage crosses it between two checks; a restart is no
 * crossing, and the successor knows no usage from before it. So the usage read here is
 * the one the next sample is compared with (od_thr_add counts the new entry's position
 * from it and never signals the entry it adds): a listener hears the first crossing
 * after its re-take, never one made up of the gap. A crossing and its return inside the
 * gap (about a second, docs/DESIGN.md) go unheard, as two inside one sampling period do.
 * 0 or errno (the cgroup lost its memory controller, or is being removed). */
static int baseline(const ec_pending *q, int dfd, uint64_t *usage)
{
	*usage = 0;
	if (q->r.kind != EC_USAGE && q->r.kind != EC_MEMSW)
		return 0;
	fs_synth_ctx c = { .id = q->r.cgroup, .dirfd = dfd, .is_root = q->r.cg_root, .fd = -1, .fd2 = -1 };
	return fs_v1_usage_value(&c, q->r.kind == EC_MEMSW, usage);
}

/* Re-takes one record whose eventfd was found: into the list (and ec_levels.c), or its
 * rmdir signal if the cgroup is gone. Counts into kept[kind], gone, dropped. */
static void retake_one(fs_evctl *e, fs_carry *c, ec_pending *q, unsigned *kept, unsigned *gone,
		       unsigned *dropped)
{
	bool lv = q->r.kind != EC_OOM;
	int dfd = open_cgroup(e, q->r.cgroup);
	uint64_t usage = 0;
	int err = lv && dfd >= 0 ? baseline(q, dfd, &usage) : 0;
	if (lv && (dfd == -2 || err)) {
		/* served by ec_levels.c, which needs the directory and the counter */
		close(q->efd);
		close(q->pidfd);
		if (dfd >= 0)
			close(dfd);
		drop_record(q, c, err ? "its usage cannot be read" : "its cgroup cannot be opened");
		pending_done(e, q);
		(*dropped)++;
		return;
	}
	ec_listener *l = ec_listener_new(q->r.cgroup, q->holder, q->r.uid, q->efd, q->pidfd);
	l->eventfd_id = q->r.eventfd_id; /* checked equal in take_from */
	l->kind = (ec_kind)q->r.kind;
	l->threshold = q->r.threshold;
	l->level = (od_vmp_level)q->r.level;
	l->mode = (od_vmp_mode)q->r.mode;
	l->cg_root = q->r.cg_root;
	l->principal = q->principal;
	l->root = q->root;
	l->stranger = q->stranger;
	l->carry = c;
	l->slot = q->slot;
	if (q->holder != q->r.tgid || !q->r.starttime)
		ec_carry_holder(l);
	g_mutex_lock(&e->lock);
	l->serial = ++e->next_serial;
	q->done = true;
	bool removed = dfd == -1 || g_hash_table_contains(e->owed_removed, &l->id);
	/* an onset is the OOM listeners' only; the rmdir signal is everyone's */
	bool onset = !lv && g_hash_table_contains(e->owed_onset, &l->id);
	if (removed || onset) {
		GPtrArray *one = g_ptr_array_new_with_free_func(ec_listener_unref);
		g_ptr_array_add(one, removed ? l : ec_listener_ref(l));
		ec_push_job(e, JOB_SIGNAL, l->id, one);
	}
	if (!removed) {
		g_ptr_array_add(e->all, l);
		err = lv ? ec_levels_add_locked(e, l, dfd, q->r.cg_root, usage) : 0;
		if (err)
			g_ptr_array_remove_fast(e->all, l); /* its last reference: the slot is freed */
	}
	g_mutex_unlock(&e->lock);
	if (dfd >= 0)
		close(dfd);
	if (removed)
		(*gone)++;
	else if (err)
		(*dropped)++;
	else
		kept[q->r.kind]++;
	if (err)
		g_message("cgroup %" G_GUINT64_FORMAT ": the %s of pid %d was not carried over: %s",
			  q->r.cgroup, kind_name(q->r.kind), (int)q->holder, g_strerror(err));
}

/* The re-taking thread: the records of the previous server, back in the list. A
 * listener of a cgroup removed meanwhile (gone from the tree, or removed while this
 * ran) gets its last signal and goes; an OOM listener whose cgroup had an onset while
 * this ran gets that signal. */
static gpointer retake_thread(gpointer data)
{
	fs_evctl *e = data;
	fs_carry *c = e->carry;
	GArray *p = e->pending; /* not resized while this runs */
	find_eventfds(e, p);
	unsigned kept[EC_PRESSURE + 1] = { 0 }, dropped = 0, gone = 0;
	for (guint i = 0; i < p->len; i++) {
		ec_pending *q = &g_array_index(p, ec_pending, i);
		if (q->efd < 0 || q->pidfd < 0) {
			if (q->efd >= 0)
				close(q->efd); /* a verified eventfd: its close never blocks */
			drop_record(q, c, "no process holds its eventfd any more");
			pending_done(e, q);
			dropped++;
			continue;
		}
		retake_one(e, c, q, kept, &gone, &dropped);
	}
	g_mutex_lock(&e->lock);
	e->retaking = false;
	e->pending = NULL;
	g_hash_table_remove_all(e->owed_onset);
	g_hash_table_remove_all(e->owed_removed);
	g_mutex_unlock(&e->lock);
	g_array_unref(p);
	ec_kick(e); /* the watch thread follows their processes */
	g_message("takeover: %u OOM listeners carried over, %u usage thresholds, %u pressure level "
		  "listeners (%u dropped; %u signalled for the removal of their cgroup)",
		  kept[EC_OOM], kept[EC_USAGE] + kept[EC_MEMSW], kept[EC_PRESSURE], dropped, gone);
	return NULL;
}

void ec_carry_owe(fs_evctl *e, uint64_t id, bool removed)
{
	g_mutex_lock(&e->lock);
	if (e->retaking)
		g_hash_table_add(removed ? e->owed_removed : e->owed_onset, g_memdup2(&id, sizeof id));
	g_mutex_unlock(&e->lock);
}

void ec_carry_join(fs_evctl *e)
{
	if (e->retaker)
		g_thread_join(e->retaker);
	e->retaker = NULL;
	if (e->owed_onset)
		g_hash_table_destroy(e->owed_onset);
	if (e->owed_removed)
		g_hash_table_destroy(e->owed_removed);
	e->owed_onset = e->owed_removed = NULL;
}

unsigned fs_evctl_carry(fs_evctl *e, od_shadowfs *fs, fs_carry *c, bool takeover)
{
	GArray *p = g_array_new(FALSE, FALSE, sizeof(ec_pending));
	for (int slot = 0; takeover && slot < FS_CARRY_SLOTS; slot++) {
		ec_pending q = { .slot = slot, .efd = -1, .pidfd = -1 };
		if (!fs_carry_listener_get(c, slot, &q.r))
			continue;
		if (!ec_carry_valid(&q.r)) { /* a newer server's kind: nothing here serves it */
			g_message("cgroup %" G_GUINT64_FORMAT ": a carried listener of kind %u, level %u, "
				  "mode %u is not known here: dropped", q.r.cgroup, q.r.kind, q.r.level, q.r.mode);
			fs_carry_listener_clear(c, slot);
			continue;
		}
		ec_carry_who(&q.r, &q.principal, &q.root, &q.stranger);
		g_array_append_val(p, q);
	}
	unsigned n = p->len;
	g_mutex_lock(&e->lock);
	e->carry = c;
	e->fs = fs;
	e->owed_onset = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	e->owed_removed = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	e->retaking = n > 0;
	e->pending = n ? p : NULL; /* counted by the bounds from now on */
	g_mutex_unlock(&e->lock);
	if (!n) {
		g_array_unref(p);
		return 0;
	}
	GError *err = NULL;
	e->retaker = g_thread_try_new("oomd-fs-retake", retake_thread, e, &err);
	if (!e->retaker) {
		g_warning("cannot start the thread that re-takes carried listeners: %s; they are dropped",
			  err->message);
		g_error_free(err);
		g_mutex_lock(&e->lock);
		e->retaking = false;
		e->pending = NULL;
		g_mutex_unlock(&e->lock);
		g_array_unref(p);
		for (int slot = 0; slot < FS_CARRY_SLOTS; slot++)
			fs_carry_listener_clear(c, slot);
		return 0;
	}
	return n;
}
