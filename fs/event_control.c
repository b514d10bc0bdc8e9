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
 * process exits (its pidfd turns readable; one thread watches them all).
 */
#include <errno.h>
#include <fcntl.h>
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
	pid_t tgid;
	int efd;   /* our copy of the caller's eventfd */
	int pidfd; /* the caller's process: readable once it has exited */
} ec_listener;

/* Outlives fs_evctl, like ctlwatch's: controller.h cannot unregister hooks. */
struct ec_hook {
	GMutex lock;
	fs_evctl *e;
};

struct fs_evctl {
	GMutex lock;
	GPtrArray *all; /* ec_listener*, owned */
	int wake;       /* eventfd: the set of pidfds changed, or stop */
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

/* Drops the listeners of processes that have exited. Called with the lock held. */
static void reap_locked(fs_evctl *e, pid_t tgid)
{
	for (guint i = e->all->len; i-- > 0;) {
		ec_listener *l = g_ptr_array_index(e->all, i);
		if (l->tgid != tgid)
			continue;
		struct pollfd pf = { .fd = l->pidfd, .events = POLLIN };
		if (poll(&pf, 1, 0) == 1)
			g_ptr_array_remove_index_fast(e->all, i);
	}
}

static gpointer watch_thread(gpointer data)
{
	fs_evctl *e = data;
	GArray *pfds = g_array_new(FALSE, FALSE, sizeof(struct pollfd));
	GArray *tgids = g_array_new(FALSE, FALSE, sizeof(pid_t));
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
				reap_locked(e, g_array_index(tgids, pid_t, i - 1));
		g_mutex_unlock(&e->lock);
	}
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
