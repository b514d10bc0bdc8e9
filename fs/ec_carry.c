/* ec_carry.c — OOM listeners outlive the server. A v1 registration lives as long as
 * its eventfd: a handler registers once and blocks in read(2) for good, so a listener
 * lost at a crash, a watchdog kill or an upgrade would never hear again, silently.
 *
 * Each listener is recorded in the state memfd that the service manager keeps with
 * the connection (carry.c): its cgroup's kernfs id, its eventfd's eventfd-id, the
 * process holding that eventfd (pid and start time) and the registering uid. The
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
				  .uid = l->uid };
	l->slot = fs_carry_listener_put(e->carry, &r);
	if (l->slot >= 0)
		l->carry = e->carry;
	else
		g_warning("cgroup %" G_GUINT64_FORMAT ": no room to carry the OOM listener of pid %d "
			  "across a restart", l->id, (int)l->tgid);
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

/* The eventfd with eventfd-id id from process pid (pinned by pidfd), as a descriptor of
 * ours, or -1. Only descriptors procfs shows to be eventfds are taken; ours is checked
 * again (the process may have put another file under that number meanwhile: that one
 * goes to the closer, whose close may block). */
static int take_from(fs_evctl *e, int pidfd, pid_t pid, uint64_t id)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int got = -1;
	struct dirent *de;
	while (got < 0 && (de = readdir(d))) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		uint64_t x;
		if (*end || de->d_name[0] == '.' || fs_fd_is_eventfd(pid, (int)fd) != 0 ||
		    fs_eventfd_id(pid, (int)fd, &x) != 0 || x != id)
			continue;
		int efd = pidfd_getfd(pidfd, (int)fd, 0);
		if (efd < 0)
			continue;
		if (!fs_fd_within_budget(efd) || fs_fd_is_eventfd(0, efd) != 0 ||
		    fs_eventfd_id(0, efd, &x) != 0 || x != id) {
			fs_closer_give(e->closer, efd);
			continue;
		}
		got = efd;
	}
	closedir(d);
	return got;
}

/* The recorded holder if it is the same process (pid and start time) and still holds
 * the eventfd; else a process of the registering uid that holds it. */
static int find_eventfd(fs_evctl *e, const fs_carried_listener *r, pid_t *holder, int *pidfd)
{
	if (r->tgid > 0) {
		int p = pidfd_open(r->tgid, 0);
		if (p >= 0 && r->starttime && ec_proc_starttime(r->tgid) == r->starttime) {
			int efd = take_from(e, p, r->tgid, r->eventfd_id);
			if (efd >= 0) {
				*holder = r->tgid;
				*pidfd = p;
				return efd;
			}
		}
		if (p >= 0)
			close(p);
	}
	DIR *proc = opendir("/proc");
	if (!proc)
		return -1;
	pid_t self = getpid();
	int efd = -1;
	struct dirent *de;
	while (efd < 0 && (de = readdir(proc))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0 || pid == self || proc_fsuid((pid_t)pid) != (int64_t)r->uid)
			continue;
		int p = pidfd_open((pid_t)pid, 0);
		if (p < 0)
			continue;
		/* the pid is pinned now: is it still the uid's? */
		if (proc_fsuid((pid_t)pid) == (int64_t)r->uid)
			efd = take_from(e, p, (pid_t)pid, r->eventfd_id);
		if (efd >= 0) {
			*holder = (pid_t)pid;
			*pidfd = p;
		} else {
			close(p);
		}
	}
	closedir(proc);
	return efd;
}

/* One carried record: 1 if it is a listener again, 0 if dropped (signalled first
 * when its cgroup went meanwhile: the rmdir v1 announces). */
static unsigned retake(fs_evctl *e, od_shadowfs *fs, fs_carry *c, int slot,
		       const fs_carried_listener *r)
{
	pid_t holder = 0;
	int pidfd = -1;
	int efd = find_eventfd(e, r, &holder, &pidfd);
	if (efd < 0) {
		g_message("cgroup %" G_GUINT64_FORMAT ": the OOM listener of pid %d (uid %u) was not "
			  "carried over: no process holds its eventfd any more", r->cgroup, (int)r->tgid,
			  (unsigned)r->uid);
		fs_carry_listener_clear(c, slot);
		return 0;
	}
	int dfd = fs_inodes_open_cgroup(fs->inodes, r->cgroup);
	bool gone = dfd == -1;
	if (dfd >= 0)
		close(dfd);
	ec_listener *l = ec_listener_new(r->cgroup, holder, r->uid, efd, pidfd);
	l->eventfd_id = r->eventfd_id; /* checked equal in take_from */
	l->carry = c;
	l->slot = slot;
	if (holder != r->tgid || !r->starttime)
		ec_carry_holder(l);
	g_mutex_lock(&e->lock);
	l->serial = ++e->next_serial;
	if (gone) {
		/* removed while no server ran: its last signal, then it goes (and its record) */
		GPtrArray *one = g_ptr_array_new_with_free_func(ec_listener_unref);
		g_ptr_array_add(one, l);
		ec_push_job(e, JOB_SIGNAL, l->id, one);
	} else {
		g_ptr_array_add(e->all, l);
	}
	g_mutex_unlock(&e->lock);
	return gone ? 0 : 1;
}

unsigned fs_evctl_carry(fs_evctl *e, od_shadowfs *fs, fs_carry *c, bool takeover)
{
	unsigned n = 0;
	for (int slot = 0; takeover && slot < FS_CARRY_LISTENERS; slot++) {
		fs_carried_listener r;
		if (fs_carry_listener_get(c, slot, &r))
			n += retake(e, fs, c, slot, &r);
	}
	g_mutex_lock(&e->lock);
	e->carry = c;
	g_mutex_unlock(&e->lock);
	if (n)
		ec_kick(e); /* the watch thread follows their processes */
	return n;
}
