/* ec_exit.c — the watch thread: a listener is dropped when its process exits (its
 * pidfd turns readable) unless another process still holds the same eventfd: v1 kept
 * a registration for as long as its eventfd lived, so a handler that registers and
 * then daemonizes (fork, the parent exits) keeps hearing. At such an exit the thread
 * looks for a holder (/proc/PID/fd, fdinfo eventfd-id, kcmp KCMP_FILE) and follows it.
 * Never on the kill path; it only reads procfs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ec_private.h"

/* A listener whose process exited, looked up outside the lock. */
typedef struct {
	uint64_t serial;
	int efd;   /* a dup of the listener's eventfd */
	pid_t holder;
	int pidfd;
} ec_orphan;

/* Marks the listeners of processes that have exited as orphans (still signalled,
 * out of the poll set) and queues them for the holder search. Called with the lock held. */
static void reap_locked(fs_evctl *e, pid_t tgid, GArray *orphans)
{
	for (guint i = e->all->len; i-- > 0;) {
		ec_listener *l = g_ptr_array_index(e->all, i);
		if (l->tgid != tgid || l->orphan)
			continue;
		struct pollfd pf = { .fd = l->pidfd, .events = POLLIN };
		if (poll(&pf, 1, 0) != 1)
			continue;
		ec_orphan o = { .serial = l->serial, .efd = fcntl(l->efd, F_DUPFD_CLOEXEC, 0),
				.holder = -1, .pidfd = -1 };
		if (o.efd < 0) {
			g_ptr_array_remove_index_fast(e->all, i);
			continue;
		}
		l->orphan = true;
		g_array_append_val(orphans, o);
	}
}

/* Does process pid's fd hold o's eventfd? Then it becomes o's holder: 1, else 0. */
static guint adopt_if_same(ec_orphan *o, pid_t self, pid_t pid, int fd)
{
	if (o->holder > 0 || syscall(SYS_kcmp, self, pid, KCMP_FILE, o->efd, fd) != 0)
		return 0;
	int pfd = pidfd_open(pid, 0);
	if (pfd < 0)
		return 0; /* exited meanwhile */
	o->holder = pid;
	o->pidfd = pfd;
	return 1;
}

/* For each orphan: another live process holding the same eventfd (not us). One pass
 * over /proc; only eventfd descriptors are looked at. fdinfo's eventfd-id (every
 * eventfd's own number: eventfd_show_fdinfo, 6.1 and 6.12) picks the candidate
 * orphans, kcmp KCMP_FILE confirms: a caller that exits with 1024 listeners while
 * others hold thousands of eventfds costs one read per eventfd, not one kcmp per
 * pair. An orphan without an id (fdinfo unreadable) is compared with every eventfd. */
static void find_holders(GArray *orphans)
{
	pid_t self = getpid();
	DIR *proc = opendir("/proc");
	if (!proc)
		return;
	/* eventfd-id -> indices of the orphans with that eventfd */
	g_autoptr(GHashTable) by_id = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
							     (GDestroyNotify)g_array_unref);
	GArray *unknown = g_array_new(FALSE, FALSE, sizeof(guint)); /* orphans without an id */
	for (guint i = 0; i < orphans->len; i++) {
		uint64_t id;
		GArray *into = unknown;
		if (fs_eventfd_id(0, g_array_index(orphans, ec_orphan, i).efd, &id) == 0) {
			into = g_hash_table_lookup(by_id, &id);
			if (!into) {
				into = g_array_new(FALSE, FALSE, sizeof(guint));
				g_hash_table_insert(by_id, g_memdup2(&id, sizeof id), into);
			}
		}
		g_array_append_val(into, i);
	}
	guint left = orphans->len;
	struct dirent *d;
	while (left && (d = readdir(proc))) {
		char *end;
		long pid = strtol(d->d_name, &end, 10);
		if (*end || pid <= 0 || pid == self)
			continue;
		char path[64];
		snprintf(path, sizeof path, "/proc/%ld/fd", pid);
		int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			continue;
		DIR *fds = fdopendir(dfd);
		if (!fds) {
			close(dfd);
			continue;
		}
		struct dirent *f;
		while (left && (f = readdir(fds))) {
			long fd = strtol(f->d_name, &end, 10);
			if (*end || f->d_name[0] == '.')
				continue;
			if (fs_fd_is_eventfd((pid_t)pid, (int)fd) != 0)
				continue;
			uint64_t id;
			if (fs_eventfd_id((pid_t)pid, (int)fd, &id) != 0)
				continue; /* closed meanwhile */
			GArray *sets[2] = { g_hash_table_lookup(by_id, &id), unknown };
			for (int k = 0; k < 2; k++)
				for (guint j = 0; sets[k] && j < sets[k]->len; j++) {
					guint i = g_array_index(sets[k], guint, j);
					left -= adopt_if_same(&g_array_index(orphans, ec_orphan, i), self,
							      (pid_t)pid, (int)fd);
				}
		}
		closedir(fds);
	}
	closedir(proc);
	g_array_unref(unknown);
}

/* Follows the holders found; drops the orphans without one. */
static void settle_orphans(fs_evctl *e, GArray *orphans)
{
	find_holders(orphans);
	g_mutex_lock(&e->lock);
	for (guint k = 0; k < orphans->len; k++) {
		ec_orphan *o = &g_array_index(orphans, ec_orphan, k);
		bool found = false;
		for (guint i = 0; i < e->all->len; i++) {
			ec_listener *l = g_ptr_array_index(e->all, i);
			if (l->serial != o->serial)
				continue;
			found = true;
			if (o->holder > 0) {
				close(l->pidfd);
				l->pidfd = o->pidfd;
				l->tgid = o->holder;
				l->orphan = false;
				o->pidfd = -1;
				ec_carry_holder(l);
			} else {
				g_ptr_array_remove_index_fast(e->all, i);
			}
			break;
		}
		(void)found; /* gone with its cgroup meanwhile */
		if (o->pidfd >= 0)
			close(o->pidfd);
		close(o->efd);
	}
	g_mutex_unlock(&e->lock);
	g_array_set_size(orphans, 0);
}

gpointer ec_watch_thread(gpointer data)
{
	fs_evctl *e = data;
	GArray *pfds = g_array_new(FALSE, FALSE, sizeof(struct pollfd));
	GArray *tgids = g_array_new(FALSE, FALSE, sizeof(pid_t));
	GArray *orphans = g_array_new(FALSE, FALSE, sizeof(ec_orphan));
	for (;;) {
		g_array_set_size(pfds, 0);
		g_array_set_size(tgids, 0);
		g_mutex_lock(&e->lock);
		if (e->stop) {
			g_mutex_unlock(&e->lock);
			break;
		}
		struct pollfd w = { .fd = e->wake, .events = POLLIN };
		g_array_append_val(pfds, w);
		for (guint i = 0; i < e->all->len; i++) {
			ec_listener *l = g_ptr_array_index(e->all, i);
			if (l->orphan)
				continue;
			struct pollfd pf = { .fd = l->pidfd, .events = POLLIN };
			g_array_append_val(pfds, pf);
			g_array_append_val(tgids, l->tgid);
		}
		g_mutex_unlock(&e->lock);

		if (poll((struct pollfd *)pfds->data, pfds->len, -1) < 0) {
			if (errno != EINTR)
				g_warning("event_control: poll failed: %s", g_strerror(errno));
			continue;
		}
		struct pollfd *v = (struct pollfd *)pfds->data;
		if (v[0].revents & POLLIN) {
			uint64_t cnt;
			if (read(e->wake, &cnt, sizeof cnt) < 0 && errno != EAGAIN)
				g_warning("event_control: wake read failed: %s", g_strerror(errno));
		}
		/* Descriptor numbers may be stale by now; tgids are checked afresh under the lock. */
		g_mutex_lock(&e->lock);
		for (guint i = 1; i < pfds->len; i++)
			if (v[i].revents)
				reap_locked(e, g_array_index(tgids, pid_t, i - 1), orphans);
		g_mutex_unlock(&e->lock);
		if (orphans->len)
			settle_orphans(e, orphans);
	}
	g_array_unref(orphans);
	g_array_unref(tgids);
	g_array_unref(pfds);
	return NULL;
}
