/* ec_carry.c — OOM listeners outlive the server. A v1 registration lives as long as
 * its eventfd: a handler registers once and blocks in read(2) for good, so a listener
 * lost at a crash, a watchdog kill or an upgrade would never hear again, silently.
 *
 * Each listener is recorded in the state memfd that the service manager keeps with
 * the connection (carry.c): its cgroup's kernfs id, its eventfd's eventfd-id, the
 * process holding that eventfd (pid and start time), the registering uid and its
 * principal for the bounds (ec_bounds.h: a uid, or a whole user namespace). The
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
 * The re-taken listeners are in the list like any other: every bound counts them, the
 * watch thread follows their processes, the notifier alone writes them.
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

void ec_carry_record(fs_evctl *e, ec_listener *l)
{
	if (!e->carry || !l->eventfd_id)
		return;
	fs_carried_listener r = { .cgroup = l->id, .eventfd_id = l->eventfd_id,
				  .starttime = ec_proc_starttime(l->tgid), .tgid = l->tgid,
				  .uid = l->uid, .who_known = true, .principal = l->principal,
				  .root = l->root, .stranger = l->stranger };
	l->slot = fs_carry_listener_put(e->carry, &r);
	if (l->slot >= 0)
		l->carry = e->carry;
	else
		g_warning("cgroup %" G_GUINT64_FORMAT ": no room to carry the OOM listener of pid %d "
			  "across a restart", l->id, (int)l->tgid);
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

/* A carried record on its way back. */
typedef struct {
	fs_carried_listener r;
	int slot;
	int efd;     /* ours once found, else -1 */
	pid_t holder;
	int pidfd;
} ec_pending;

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

static void drop_record(const ec_pending *q, fs_carry *c)
{
	g_message("cgroup %" G_GUINT64_FORMAT ": the OOM listener of pid %d (uid %u) was not carried "
		  "over: no process holds its eventfd any more", q->r.cgroup, (int)q->r.tgid,
		  (unsigned)q->r.uid);
	fs_carry_listener_clear(c, q->slot);
}

/* The re-taking thread: the records of the previous server, back in the list. A
 * listener of a cgroup removed meanwhile (gone from the tree, or removed while this
 * ran) gets its last signal and goes; one whose cgroup had an onset while this ran gets
 * that signal. */
static gpointer retake_thread(gpointer data)
{
	fs_evctl *e = data;
	fs_carry *c = e->carry;
	GArray *p = g_array_new(FALSE, FALSE, sizeof(ec_pending));
	for (int slot = 0; slot < FS_CARRY_LISTENERS; slot++) {
		ec_pending q = { .slot = slot, .efd = -1, .pidfd = -1 };
		if (fs_carry_listener_get(c, slot, &q.r))
			g_array_append_val(p, q);
	}
	find_eventfds(e, p);
	unsigned kept = 0, dropped = 0, gone = 0;
	for (guint i = 0; i < p->len; i++) {
		ec_pending *q = &g_array_index(p, ec_pending, i);
		if (q->efd < 0 || q->pidfd < 0) {
			if (q->efd >= 0)
				close(q->efd); /* a verified eventfd: its close never blocks */
			drop_record(q, c);
			dropped++;
			continue;
		}
		int dfd = e->fs ? fs_inodes_open_cgroup(e->fs->inodes, q->r.cgroup) : -2;
		if (dfd >= 0)
			close(dfd);
		ec_listener *l = ec_listener_new(q->r.cgroup, q->holder, q->r.uid, q->efd, q->pidfd);
		l->eventfd_id = q->r.eventfd_id; /* checked equal in take_from */
		ec_carry_who(&q->r, &l->principal, &l->root, &l->stranger);
		l->carry = c;
		l->slot = q->slot;
		if (q->holder != q->r.tgid || !q->r.starttime)
			ec_carry_holder(l);
		g_mutex_lock(&e->lock);
		l->serial = ++e->next_serial;
		bool removed = dfd == -1 || g_hash_table_contains(e->owed_removed, &l->id);
		if (removed || g_hash_table_contains(e->owed_onset, &l->id)) {
			GPtrArray *one = g_ptr_array_new_with_free_func(ec_listener_unref);
			g_ptr_array_add(one, removed ? l : ec_listener_ref(l));
			ec_push_job(e, JOB_SIGNAL, l->id, one);
		}
		if (!removed)
			g_ptr_array_add(e->all, l);
		g_mutex_unlock(&e->lock);
		removed ? gone++ : kept++;
	}
	g_mutex_lock(&e->lock);
	e->retaking = false;
	g_hash_table_remove_all(e->owed_onset);
	g_hash_table_remove_all(e->owed_removed);
	g_mutex_unlock(&e->lock);
	g_array_unref(p);
	ec_kick(e); /* the watch thread follows their processes */
	g_message("takeover: %u OOM listeners carried over (%u dropped: eventfd gone; %u signalled "
		  "for the removal of their cgroup)", kept, dropped, gone);
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
	unsigned n = 0;
	for (int slot = 0; takeover && slot < FS_CARRY_LISTENERS; slot++) {
		fs_carried_listener r;
		n += fs_carry_listener_get(c, slot, &r);
	}
	g_mutex_lock(&e->lock);
	e->carry = c;
	e->fs = fs;
	e->owed_onset = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	e->owed_removed = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	e->retaking = n > 0;
	g_mutex_unlock(&e->lock);
	if (!n)
		return 0;
	GError *err = NULL;
	e->retaker = g_thread_try_new("oomd-fs-retake", retake_thread, e, &err);
	if (!e->retaker) {
		g_warning("cannot start the thread that re-takes OOM listeners: %s; they are dropped",
			  err->message);
		g_error_free(err);
		g_mutex_lock(&e->lock);
		e->retaking = false;
		g_mutex_unlock(&e->lock);
		for (int slot = 0; slot < FS_CARRY_LISTENERS; slot++)
			fs_carry_listener_clear(c, slot);
		return 0;
	}
	return n;
}
