/* event_control.c — cgroup-v1 OOM listeners registered by writing
 * "<event_fd> <control_fd>" to cgroup.event_control (issue 4, deliverable 1;
 * issue 10, deliverables 1 and 5).
 *
 * The numbers name descriptors in the *caller's* process. They are checked in
 * procfs before anything is taken (fdguard.h: readlink and fdinfo never call into
 * the file's filesystem): the event fd must be an eventfd (EINVAL), the control fd
 * this cgroup's shadow memory.oom_control (EINVAL, by fdinfo's mnt_id and ino), a
 * bad number EBADF — as memcg_write_event_control answered. Only the eventfd is
 * then taken (pidfd of the caller's thread-group leader, pidfd_getfd) and checked
 * again; the control fd is never taken.
 *
 * Nothing a listener does delays anything: the controller's hooks and the
 * registrations only queue work; one notifier thread writes the eventfds, each
 * write bounded (ec_signal.h). A listener whose counter stays full is skipped, one
 * that fills it under our write is dropped with a log line.
 *
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

#include "ec_signal.h"
#include "fdguard.h"
#include "fs_private.h"

/* Bounds. Every listener holds two descriptors of ours (its eventfd, its
 * process's pidfd) and a few dozen bytes: FS_EC_MAX_TOTAL listeners cost 8192
 * descriptors, well inside the daemon's RLIMIT_NOFILE (1048576 once raised) and
 * below the request budget (fdguard.h). A process may register what a handler
 * plausibly needs per cgroup; a uid four processes' worth; the total lets four
 * uids exhaust theirs. Past a bound the write fails with ENOMEM: the only
 * exhaustion memcg_write_event_control (6.1) reports is its kzalloc of the event
 * (and mem_cgroup_oom_register_event's kmalloc), both -ENOMEM. */
#define FS_EC_MAX_PER_CGROUP 256
#define FS_EC_MAX_PER_PROCESS 256
#define FS_EC_MAX_PER_UID 1024
#define FS_EC_MAX_TOTAL 4096

typedef struct {
	gint refs;      /* the list's and each notifier batch's */
	uint64_t id;
	uint64_t serial; /* unique: finds the listener again after the lock was let go */
	pid_t tgid;
	uid_t uid;      /* the registering request's: the per-uid bound */
	int efd;   /* our copy of the caller's eventfd (verified one: closing it is safe) */
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

/* Work for the notifier thread, the only thread that writes listeners' eventfds. */
typedef enum { JOB_NOTIFY, JOB_SIGNAL, JOB_SYNC, JOB_STOP } ec_job_kind;
typedef struct {
	ec_job_kind kind;
	uint64_t id;       /* JOB_NOTIFY: the cgroup whose listeners to signal */
	GPtrArray *batch;  /* JOB_SIGNAL: ec_listener refs to signal once */
	struct ec_sync *sync;
} ec_job;

struct ec_sync {
	GMutex lock;
	GCond cond;
	bool done;
};

struct fs_evctl {
	GMutex lock;    /* guards all, next_serial, stop; never held across a blocking call */
	GPtrArray *all; /* ec_listener*, one ref each */
	int wake;       /* eventfd: the set of pidfds changed, or stop */
	uint64_t next_serial;
	bool stop;
	GThread *thread;   /* watches the listeners' processes */
	GThread *notifier; /* signals them */
	GAsyncQueue *jobs; /* ec_job*, for the notifier */
	fs_closer *closer;
	struct ec_hook *hook;
};

static GMutex retired_lock;
static GPtrArray *retired; /* keeps retired hooks reachable */

static void listener_unref(gpointer p)
{
	ec_listener *l = p;
	if (!g_atomic_int_dec_and_test(&l->refs))
		return;
	close(l->efd);
	close(l->pidfd);
	g_free(l);
}

static ec_listener *listener_ref(ec_listener *l)
{
	g_atomic_int_inc(&l->refs);
	return l;
}

static void kick(fs_evctl *e)
{
	uint64_t one = 1;
	if (write(e->wake, &one, sizeof one) < 0 && errno != EAGAIN)
		g_warning("event_control: cannot wake the listener thread: %s", g_strerror(errno));
}

static void push_job(fs_evctl *e, ec_job_kind kind, uint64_t id, GPtrArray *batch)
{
	ec_job *j = g_new0(ec_job, 1);
	j->kind = kind;
	j->id = id;
	j->batch = batch;
	g_async_queue_push(e->jobs, j);
}

/* Removes the listener with this serial, if it is still there. */
static void drop_serial(fs_evctl *e, uint64_t serial)
{
	g_mutex_lock(&e->lock);
	for (guint i = 0; i < e->all->len; i++)
		if (((ec_listener *)g_ptr_array_index(e->all, i))->serial == serial) {
			g_ptr_array_remove_index_fast(e->all, i);
			break;
		}
	g_mutex_unlock(&e->lock);
}

static void signal_batch(fs_evctl *e, ec_signal *sig, GPtrArray *batch)
{
	bool dropped = false;
	for (guint i = 0; i < batch->len; i++) {
		ec_listener *l = g_ptr_array_index(batch, i);
		switch (ec_signal_post(sig, l->efd)) {
		case EC_SIGNAL_SENT:
		case EC_SIGNAL_SATURATED:
			break;
		case EC_SIGNAL_WEDGED:
			g_warning("cgroup %" G_GUINT64_FORMAT ": dropped the OOM listener of pid %d (uid %u):"
				  " its eventfd stayed full for %d ms while we wrote to it", l->id,
				  (int)l->tgid, (unsigned)l->uid, EC_SIGNAL_TIMEOUT_MS);
			drop_serial(e, l->serial);
			dropped = true;
			break;
		case EC_SIGNAL_FAILED:
			g_warning("cgroup %" G_GUINT64_FORMAT ": cannot signal an OOM listener: %s", l->id,
				  g_strerror(errno));
			break;
		}
	}
	if (dropped)
		kick(e);
}

/* The notifier: hooks and registrations only queue; this thread alone writes the
 * callers' eventfds, each write bounded by ec_signal (a full counter is skipped, a
 * counter filled under our write interrupts it and drops the listener). */
static gpointer notify_thread(gpointer data)
{
	fs_evctl *e = data;
	ec_signal *sig = ec_signal_new();
	if (!sig)
		g_warning("event_control: no timer for eventfd writes (%s): a listener that fills its"
			  " counter at the wrong moment could stall this thread", g_strerror(errno));
	for (;;) {
		ec_job *j = g_async_queue_pop(e->jobs);
		ec_job_kind kind = j->kind;
		if (kind == JOB_NOTIFY) {
			GPtrArray *batch = g_ptr_array_new_with_free_func(listener_unref);
			g_mutex_lock(&e->lock);
			for (guint i = 0; i < e->all->len; i++) {
				ec_listener *l = g_ptr_array_index(e->all, i);
				if (l->id == j->id)
					g_ptr_array_add(batch, listener_ref(l));
			}
			g_mutex_unlock(&e->lock);
			signal_batch(e, sig, batch);
			g_ptr_array_unref(batch);
		} else if (kind == JOB_SIGNAL) {
			signal_batch(e, sig, j->batch);
			g_ptr_array_unref(j->batch);
		} else if (kind == JOB_SYNC) {
			g_mutex_lock(&j->sync->lock);
			j->sync->done = true;
			g_cond_signal(&j->sync->cond);
			g_mutex_unlock(&j->sync->lock);
		}
		g_free(j);
		if (kind == JOB_STOP)
			break;
	}
	ec_signal_free(sig);
	return NULL;
}

void fs_evctl_notify(fs_evctl *e, uint64_t id)
{
	push_job(e, JOB_NOTIFY, id, NULL);
}

void fs_evctl_removed(fs_evctl *e, uint64_t id)
{
	/* Out of the list now (counts are exact at once); signalled once, later, by the
	 * notifier: v1 listeners learn of an rmdir this way. */
	GPtrArray *batch = g_ptr_array_new_with_free_func(listener_unref);
	g_mutex_lock(&e->lock);
	for (guint i = e->all->len; i-- > 0;) {
		ec_listener *l = g_ptr_array_index(e->all, i);
		if (l->id != id)
			continue;
		g_ptr_array_add(batch, listener_ref(l));
		g_ptr_array_remove_index_fast(e->all, i);
	}
	g_mutex_unlock(&e->lock);
	if (!batch->len) {
		g_ptr_array_unref(batch);
		return;
	}
	push_job(e, JOB_SIGNAL, id, batch);
	kick(e);
}

void fs_evctl_sync(fs_evctl *e)
{
	struct ec_sync s = { .done = false };
	g_mutex_init(&s.lock);
	g_cond_init(&s.cond);
	ec_job *j = g_new0(ec_job, 1);
	j->kind = JOB_SYNC;
	j->sync = &s;
	g_async_queue_push(e->jobs, j);
	g_mutex_lock(&s.lock);
	while (!s.done)
		g_cond_wait(&s.cond, &s.lock);
	g_mutex_unlock(&s.lock);
	g_mutex_clear(&s.lock);
	g_cond_clear(&s.cond);
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
	e->closer = fs_closer_new(err);
	if (!e->closer) {
		close(e->wake);
		g_free(e);
		return NULL;
	}
	g_mutex_init(&e->lock);
	e->all = g_ptr_array_new_with_free_func(listener_unref);
	e->jobs = g_async_queue_new();
	GError *ge = NULL;
	e->thread = g_thread_try_new("oomd-fs-evctl", watch_thread, e, &ge);
	if (e->thread)
		e->notifier = g_thread_try_new("oomd-fs-notify", notify_thread, e, &ge);
	if (!e->notifier) {
		g_warning("cannot start the OOM listener threads: %s", ge->message);
		g_error_free(ge);
		*err = EAGAIN;
		if (e->thread) {
			e->stop = true;
			kick(e);
			g_thread_join(e->thread);
		}
		g_async_queue_unref(e->jobs);
		g_ptr_array_unref(e->all);
		fs_closer_free(e->closer);
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

	/* Bounded: each write the notifier has queued takes at most EC_SIGNAL_TIMEOUT_MS. */
	push_job(e, JOB_STOP, 0, NULL);
	g_thread_join(e->notifier);
	g_mutex_lock(&e->lock);
	e->stop = true;
	g_mutex_unlock(&e->lock);
	kick(e);
	g_thread_join(e->thread);
	ec_job *j;
	while ((j = g_async_queue_try_pop(e->jobs))) {
		if (j->batch)
			g_ptr_array_unref(j->batch);
		g_free(j);
	}
	g_async_queue_unref(e->jobs);
	g_ptr_array_unref(e->all);
	fs_closer_free(e->closer);
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

/* Is descriptor control_fd of process tgid this cgroup's shadow memory.oom_control?
 * Read from procfs: never fstat a caller's descriptor (fdguard.h). 0, EBADF or EINVAL. */
static int check_control(const fs_synth_ctx *c, pid_t tgid, int control_fd)
{
	dev_t dev;
	uint64_t ino;
	int r = fs_fd_identity(tgid, control_fd, &dev, &ino);
	if (r)
		return r;
	if (!c->fs->mnt_dev || dev != c->fs->mnt_dev)
		return EINVAL;
	/* The directory is the real cgroupfs one: fstat on it never reaches FUSE. */
	struct stat dst;
	if (fstat(c->dirfd, &dst) < 0)
		return EINVAL;
	const fs_synth *ctl = fs_synth_find("memory.oom_control");
	uint64_t want = fs_inodes_find_synth(c->fs->inodes, dst.st_dev, dst.st_ino, ctl);
	return want != 0 && ino == want ? 0 : EINVAL;
}

/* May one more listener of (cgroup, process, uid) be added? Called with the lock held. */
static bool within_bounds_locked(fs_evctl *e, uint64_t id, pid_t tgid, uid_t uid)
{
	size_t per_cg = 0, per_proc = 0, per_uid = 0;
	for (guint i = 0; i < e->all->len; i++) {
		ec_listener *o = g_ptr_array_index(e->all, i);
		per_cg += o->id == id;
		per_proc += o->tgid == tgid;
		per_uid += o->uid == uid;
	}
	return per_cg < FS_EC_MAX_PER_CGROUP && per_proc < FS_EC_MAX_PER_PROCESS &&
	       per_uid < FS_EC_MAX_PER_UID && e->all->len < FS_EC_MAX_TOTAL;
}

/* One line per 10 s at most: a refused caller can retry in a loop. */
static void warn_refused(uint64_t id, pid_t tgid, uid_t uid, const char *why)
{
	static GMutex lock;
	static gint64 last;
	gint64 now = g_get_monotonic_time();
	g_mutex_lock(&lock);
	bool quiet = last && now - last < 10 * G_USEC_PER_SEC;
	if (!quiet)
		last = now;
	g_mutex_unlock(&lock);
	if (quiet)
		return;
	g_warning("cgroup.event_control of cgroup %" G_GUINT64_FORMAT ": refused pid %d (uid %u): %s",
		  id, (int)tgid, (unsigned)uid, why);
}

static bool bounds_ok(fs_evctl *e, uint64_t id, pid_t tgid, uid_t uid)
{
	g_mutex_lock(&e->lock);
	bool ok = within_bounds_locked(e, id, tgid, uid);
	g_mutex_unlock(&e->lock);
	if (!ok)
		warn_refused(id, tgid, uid, "listener limit reached");
	return ok;
}

/* The caller's eventfd as a descriptor of ours, or -errno. Checked in the caller's
 * table first (a non-eventfd is never taken), and again once ours: the caller may
 * have put another file under that number in between. A taken descriptor that is
 * not an eventfd goes to the closer (its close may wait for a FUSE server). */
static int take_eventfd(fs_evctl *e, int pidfd, pid_t tgid, int event_fd)
{
	int r = fs_fd_is_eventfd(tgid, event_fd);
	if (r)
		return -r;
	int efd = pidfd_getfd(pidfd, event_fd, 0);
	if (efd < 0)
		return -errno; /* EBADF: closed meanwhile; EPERM: a ptrace policy forbids us */
	if (!fs_fd_within_budget(efd)) {
		fs_closer_give(e->closer, efd);
		return -EMFILE;
	}
	if (fs_fd_is_eventfd(0, efd) != 0) {
		fs_closer_give(e->closer, efd);
		return -EINVAL;
	}
	return efd;
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
	if (fs_closer_backed_up(e->closer)) {
		warn_refused(c->id, tgid, rc->uid, "descriptors wait to be closed");
		return ENOMEM;
	}
	if (!bounds_ok(e, c->id, tgid, rc->uid))
		return ENOMEM;

	int pidfd = pidfd_open(tgid, 0);
	if (pidfd < 0) {
		int err = errno;
		g_warning("cgroup.event_control: pidfd_open(%d): %s", (int)tgid, g_strerror(err));
		return err;
	}
	if (!fs_fd_within_budget(pidfd)) {
		close(pidfd);
		return EMFILE;
	}
	/* memcg_write_event_control's order: the eventfd (EBADF, EINVAL), then the control
	 * file (EBADF), then whether it is memory.oom_control of this cgroup (EINVAL). */
	int r = fs_fd_is_eventfd(tgid, event_fd);
	if (!r)
		r = check_control(c, tgid, control_fd);
	int efd = r ? -r : take_eventfd(e, pidfd, tgid, event_fd);
	if (efd < 0) {
		close(pidfd);
		return -efd;
	}

	/* Asked before taking our lock: the controller calls our hooks, never the reverse under it. */
	oe_view v;
	bool under_oom = c->ctl && od_controller_view(c->ctl, c->id, &v) && v.under_oom;

	ec_listener *l = g_new0(ec_listener, 1);
	l->refs = 1;
	l->id = c->id;
	l->tgid = tgid;
	l->uid = rc->uid;
	l->efd = efd;
	l->pidfd = pidfd;

	g_mutex_lock(&e->lock);
	if (!within_bounds_locked(e, l->id, tgid, l->uid)) {
		g_mutex_unlock(&e->lock);
		warn_refused(c->id, tgid, l->uid, "listener limit reached");
		listener_unref(l);
		return ENOMEM;
	}
	l->serial = ++e->next_serial;
	g_ptr_array_add(e->all, l);
	/* v1 signals at once when registered while the cgroup is under OOM */
	if (under_oom) {
		GPtrArray *one = g_ptr_array_new_with_free_func(listener_unref);
		g_ptr_array_add(one, listener_ref(l));
		push_job(e, JOB_SIGNAL, c->id, one);
	}
	g_mutex_unlock(&e->lock);
	kick(e);
	return 0;
}
