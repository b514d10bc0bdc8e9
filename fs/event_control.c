/* event_control.c — cgroup-v1 OOM listeners registered by writing
 * "<event_fd> <control_fd>" to cgroup.event_control (issue 4, deliverable 1).
 *
 * The numbers name descriptors in the *caller's* process: we reach them through
 * a pidfd of the caller's thread-group leader (the FUSE request carries a thread
 * id, and pidfd_open on 6.1 wants the leader) and pidfd_getfd. The event fd must
 * be an eventfd (EINVAL), the control fd this cgroup's shadow memory.oom_control
 * (EINVAL), a bad number EBADF — as memcg_write_event_control answered.
 * A listener is signalled on the controller's notify hook (OOM onset of its
 * cgroup or an ancestor), at once when it registers during a hold, and a last
 * time when its cgroup is removed. It is dropped with its cgroup or when its
 * process exits (its pidfd turns readable; one thread watches them all) —
 * unless another process still holds the same eventfd: v1 kept a registration
 * for as long as its eventfd lived, so a handler that registers and then
 * daemonizes (fork, the parent exits) keeps hearing. At such an exit the
 * thread looks for a holder (/proc/PID/fd, kcmp KCMP_FILE) and follows it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include "fs_private.h"

/* Bounds: every listener holds two descriptors of ours. */
#define FS_EC_MAX_PER_CGROUP 256
#define FS_EC_MAX_PER_PROCESS 256

typedef struct {
	uint64_t id;
	uint64_t serial; /* unique: finds the listener again after the lock was let go */
	pid_t tgid;
	int efd;   /* our copy of the caller's eventfd */
	int pidfd; /* the caller's process: readable once it has exited */
	bool orphan; /* its process exited; a holder of its eventfd is being looked for */
} ec_listener;

/* A listener whose process exited, looked up outside the lock. */
typedef struct {
	uint64_t serial;
	int efd;   /* a dup of the listener's eventfd */
	pid_t holder;
	int pidfd;
} ec_orphan;

/* Outlives fs_evctl, like ctlwatch's: controller.h cannot unregister hooks. */
struct ec_hook {
	GMutex lock;
	fs_evctl *e;
};

struct fs_evctl {
	GMutex lock;
	GPtrArray *all; /* ec_listener*, owned */
	int wake;       /* eventfd: the set of pidfds changed, or stop */
	uint64_t next_serial;
	bool stop;
	GThread *thread;
	struct ec_hook *hook;
};

static GMutex retired_lock;
static GPtrArray *retired; /* keeps retired hooks reachable */

static void signal_efd(int efd, uint64_t id)
{
	uint64_t one = 1;
	/* eventfd writes only block when the counter would pass 2^64-2 */
	if (write(efd, &one, sizeof one) < 0 && errno != EAGAIN)
		g_warning("cgroup %" G_GUINT64_FORMAT ": cannot signal an OOM listener: %s", id,
			  g_strerror(errno));
}

static void listener_free(gpointer p)
{
	ec_listener *l = p;
	close(l->efd);
	close(l->pidfd);
	g_free(l);
}

static void kick(fs_evctl *e)
{
	uint64_t one = 1;
	if (write(e->wake, &one, sizeof one) < 0 && errno != EAGAIN)
		g_warning("event_control: cannot wake the listener thread: %s", g_strerror(errno));
}

void fs_evctl_notify(fs_evctl *e, uint64_t id)
{
	g_mutex_lock(&e->lock);
	for (guint i = 0; i < e->all->len; i++) {
		ec_listener *l = g_ptr_array_index(e->all, i);
		if (l->id == id)
			signal_efd(l->efd, id);
	}
	g_mutex_unlock(&e->lock);
}

void fs_evctl_removed(fs_evctl *e, uint64_t id)
{
	bool dropped = false;
	g_mutex_lock(&e->lock);
	for (guint i = e->all->len; i-- > 0;) {
		ec_listener *l = g_ptr_array_index(e->all, i);
		if (l->id != id)
			continue;
		signal_efd(l->efd, id); /* v1 listeners learn of an rmdir this way */
		g_ptr_array_remove_index_fast(e->all, i);
		dropped = true;
	}
	g_mutex_unlock(&e->lock);
	if (dropped)
		kick(e);
}

size_t fs_evctl_count(fs_evctl *e, uint64_t id)
{
	size_t n = 0;
	g_mutex_lock(&e->lock);
	for (guint i = 0; i < e->all->len; i++)
		if (((ec_listener *)g_ptr_array_index(e->all, i))->id == id)
			n++;
	g_mutex_unlock(&e->lock);
	return n;
}

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

/* For each orphan: another live process holding the same eventfd (not us). One pass
 * over /proc; only eventfd descriptors are compared (kcmp). */
static void find_holders(GArray *orphans)
{
	pid_t self = getpid();
	DIR *proc = opendir("/proc");
	if (!proc)
		return;
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
			char target[32];
			ssize_t n = readlinkat(dfd, f->d_name, target, sizeof target - 1);
			if (n < 0)
				continue;
			target[n] = 0;
			if (strcmp(target, "anon_inode:[eventfd]") != 0)
				continue;
			for (guint i = 0; i < orphans->len; i++) {
				ec_orphan *o = &g_array_index(orphans, ec_orphan, i);
				if (o->holder > 0)
					continue;
				if (syscall(SYS_kcmp, self, (pid_t)pid, KCMP_FILE, o->efd, (int)fd) != 0)
					continue;
				int pfd = pidfd_open((pid_t)pid, 0);
				if (pfd < 0)
					continue; /* exited meanwhile */
				o->holder = (pid_t)pid;
				o->pidfd = pfd;
				left--;
			}
		}
		closedir(fds);
	}
	closedir(proc);
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

static gpointer watch_thread(gpointer data)
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

static void hook_notify(void *ud, uint64_t id)
{
	struct ec_hook *h = ud;
	g_mutex_lock(&h->lock);
	if (h->e)
		fs_evctl_notify(h->e, id);
	g_mutex_unlock(&h->lock);
}

static void hook_removed(void *ud, uint64_t id)
{
	struct ec_hook *h = ud;
	g_mutex_lock(&h->lock);
	if (h->e)
		fs_evctl_removed(h->e, id);
	g_mutex_unlock(&h->lock);
}

fs_evctl *fs_evctl_new(od_controller *ctl, int *err)
{
	fs_evctl *e = g_new0(fs_evctl, 1);
	e->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (e->wake < 0) {
		*err = errno;
		g_free(e);
		return NULL;
	}
	g_mutex_init(&e->lock);
	e->all = g_ptr_array_new_with_free_func(listener_free);
	GError *ge = NULL;
	e->thread = g_thread_try_new("oomd-fs-evctl", watch_thread, e, &ge);
	if (!e->thread) {
		g_warning("cannot start the OOM listener thread: %s", ge->message);
		g_error_free(ge);
		*err = EAGAIN;
		g_ptr_array_unref(e->all);
		close(e->wake);
		g_mutex_clear(&e->lock);
		g_free(e);
		return NULL;
	}
	e->hook = g_new0(struct ec_hook, 1);
	g_mutex_init(&e->hook->lock);
	e->hook->e = e;
	if (ctl) {
		od_hooks h = { .notify = hook_notify, .removed = hook_removed, .ud = e->hook };
		od_controller_set_hooks(ctl, &h);
	}
	return e;
}

void fs_evctl_free(fs_evctl *e)
{
	if (!e)
		return;
	g_mutex_lock(&e->hook->lock);
	e->hook->e = NULL;
	g_mutex_unlock(&e->hook->lock);
	g_mutex_lock(&retired_lock);
	if (!retired)
		retired = g_ptr_array_new();
	g_ptr_array_add(retired, e->hook);
	g_mutex_unlock(&retired_lock);

	g_mutex_lock(&e->lock);
	e->stop = true;
	g_mutex_unlock(&e->lock);
	kick(e);
	g_thread_join(e->thread);
	g_ptr_array_unref(e->all);
	close(e->wake);
	g_mutex_clear(&e->lock);
	g_free(e);
}

/* The thread-group leader of a thread id (pidfd_open on 6.1 refuses other threads). */
static pid_t tgid_of(pid_t tid)
{
	char path[64], line[128];
	snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	pid_t tgid = -1;
	while (fgets(line, sizeof line, f)) {
		int v;
		if (sscanf(line, "Tgid: %d", &v) == 1) {
			tgid = v;
			break;
		}
	}
	fclose(f);
	return tgid;
}

static bool is_eventfd(int fd)
{
	char path[64], target[64];
	fs_proc_path(path, fd);
	ssize_t n = readlink(path, target, sizeof target - 1);
	if (n < 0)
		return false;
	target[n] = 0;
	return strcmp(target, "anon_inode:[eventfd]") == 0;
}

/* Is fd this cgroup's shadow memory.oom_control? */
static bool is_our_control(const fs_synth_ctx *c, int fd)
{
	struct stat fst, dst;
	if (fstat(fd, &fst) < 0 || fstat(c->dirfd, &dst) < 0)
		return false;
	if (c->fs->mnt_dev && fst.st_dev != c->fs->mnt_dev)
		return false;
	const fs_synth *ctl = fs_synth_find("memory.oom_control");
	uint64_t want = fs_inodes_find_synth(c->fs->inodes, dst.st_dev, dst.st_ino, ctl);
	return want != 0 && fst.st_ino == want;
}

int fs_event_control_register(const fs_synth_ctx *c, int event_fd, int control_fd)
{
	fs_evctl *e = c->fs ? c->fs->evctl : NULL;
	if (!e || !c->req)
		return EOPNOTSUPP;
	if (event_fd < 0 || control_fd < 0)
		return EBADF;
	const struct fuse_ctx *rc = fuse_req_ctx(c->req);
	pid_t tgid = rc->pid > 0 ? tgid_of(rc->pid) : -1;
	if (tgid <= 0)
		return ESRCH; /* the caller is gone, or lives in a pid namespace we cannot see */

	int pidfd = pidfd_open(tgid, 0);
	if (pidfd < 0) {
		int err = errno;
		g_warning("cgroup.event_control: pidfd_open(%d): %s", (int)tgid, g_strerror(err));
		return err;
	}
	int efd = pidfd_getfd(pidfd, event_fd, 0);
	if (efd < 0) {
		int err = errno;
		close(pidfd);
		return err == EBADF ? EBADF : err; /* EPERM: a ptrace policy forbids us */
	}
	if (!is_eventfd(efd)) {
		close(efd);
		close(pidfd);
		return EINVAL;
	}
	int cfd = pidfd_getfd(pidfd, control_fd, 0);
	if (cfd < 0) {
		int err = errno;
		close(efd);
		close(pidfd);
		return err;
	}
	bool ok = is_our_control(c, cfd);
	close(cfd);
	if (!ok) {
		close(efd);
		close(pidfd);
		return EINVAL;
	}

	/* Asked before taking our lock: the controller calls our hooks, never the reverse under it. */
	oe_view v;
	bool under_oom = c->ctl && od_controller_view(c->ctl, c->id, &v) && v.under_oom;

	ec_listener *l = g_new0(ec_listener, 1);
	l->id = c->id;
	l->tgid = tgid;
	l->efd = efd;
	l->pidfd = pidfd;

	g_mutex_lock(&e->lock);
	l->serial = ++e->next_serial;
	size_t per_cg = 0, per_proc = 0;
	for (guint i = 0; i < e->all->len; i++) {
		ec_listener *o = g_ptr_array_index(e->all, i);
		per_cg += o->id == l->id;
		per_proc += o->tgid == l->tgid;
	}
	if (per_cg >= FS_EC_MAX_PER_CGROUP || per_proc >= FS_EC_MAX_PER_PROCESS) {
		g_mutex_unlock(&e->lock);
		g_warning("cgroup.event_control of cgroup %" G_GUINT64_FORMAT ": listener limit reached"
			  " (pid %d)", c->id, (int)tgid);
		listener_free(l);
		return ENOSPC;
	}
	g_ptr_array_add(e->all, l);
	/* v1 signals at once when registered while the cgroup is under OOM */
	if (under_oom)
		signal_efd(l->efd, c->id);
	g_mutex_unlock(&e->lock);
	kick(e);
	return 0;
}
