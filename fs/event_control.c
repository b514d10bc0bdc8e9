/* event_control.c — cgroup-v1 listeners registered by writing
 * "<event_fd> <control_fd>[ <args>]" to cgroup.event_control: OOM listeners
 * (memory.oom_control), usage thresholds (memory.usage_in_bytes,
 * memory.memsw.usage_in_bytes and a size) and pressure levels (memory.pressure_level and
 * "<level>[,<mode>]"); the last two are followed by ec_levels.c.
 *
 * The numbers name descriptors in the *caller's* process. They are checked in
 * procfs before anything is taken (fdguard.h: readlink and fdinfo never call into
 * the file's filesystem): the event fd must be an eventfd (EINVAL), the control fd
 * one of this cgroup's shadow control files (EINVAL, by fdinfo's mnt_id and ino) that the
 * writer may read (EACCES), the arguments what that file's register_event takes (EINVAL),
 * a bad number EBADF — as memcg_write_event_control answered. Only the eventfd is
 * then taken (pidfd of the caller's thread-group leader, pidfd_getfd) and checked
 * again; the control fd is never taken.
 *
 * Nothing a listener does delays anything: the controller's hooks and the
 * registrations only queue work; one notifier thread writes the eventfds, each
 * write bounded (ec_signal.h). A listener whose counter stays full is skipped, one
 * that fills it under our write is dropped with a log line.
 *
 * An OOM listener is signalled on the controller's notify hook (OOM onset of its
 * cgroup or an ancestor) and at once when it registers during a hold; every listener
 * a last time when its cgroup is removed (ec_notify.c). It is dropped with its cgroup or
 * when its process exits, unless another process holds its eventfd (ec_exit.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include "cgroup.h"
#include "ec_bounds.h"
#include "ec_private.h"
#include "oomd/engine.h"
#include "v1files.h"
#include "v1layout.h"
#include "v1parse.h"

/* Bounds: ec_bounds.h. Every listener holds two descriptors of ours (its eventfd,
 * its process's pidfd) and a few dozen bytes: EC_MAX_TOTAL listeners cost 8192
 * descriptors, well inside the daemon's RLIMIT_NOFILE (1048576 once raised) and
 * below the request budget (fdguard.h). */

static void hook_notify(void *ud, uint64_t id)
{
	fs_evctl_notify(ud, id);
}

static void hook_removed(void *ud, uint64_t id)
{
	fs_evctl_removed(ud, id);
}

/* What both ends of an fs_evctl free once its threads are gone. */
static void ec_release(fs_evctl *e)
{
	g_async_queue_unref(e->jobs);
	g_ptr_array_unref(e->all);
	fs_closer_free(e->closer);
	close(e->wake);
	g_mutex_clear(&e->lock);
	g_free(e);
}

/* Undoes a fs_evctl_new that failed half-way: the threads it started, then the rest. */
static fs_evctl *undo_new(fs_evctl *e)
{
	if (e->notifier) {
		ec_push_job(e, JOB_STOP, 0, NULL);
		g_thread_join(e->notifier);
	}
	if (e->thread) {
		e->stop = true;
		ec_kick(e);
		g_thread_join(e->thread);
	}
	ec_release(e);
	return NULL;
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
	e->all = g_ptr_array_new_with_free_func(ec_listener_unref);
	e->jobs = g_async_queue_new();
	GError *ge = NULL;
	e->thread = g_thread_try_new("oomd-fs-evctl", ec_watch_thread, e, &ge);
	if (e->thread)
		e->notifier = g_thread_try_new("oomd-fs-notify", ec_notify_thread, e, &ge);
	if (!e->notifier) {
		g_warning("cannot start the OOM listener threads: %s", ge->message);
		g_error_free(ge);
		*err = EAGAIN;
		return undo_new(e);
	}
	if (!ec_levels_new(e, err))
		return undo_new(e);
	e->ctl = ctl;
	if (ctl) {
		od_hooks h = { .notify = hook_notify, .removed = hook_removed, .ud = e };
		e->hooks = od_controller_set_hooks(ctl, &h);
	}
	return e;
}

void fs_evctl_free(fs_evctl *e)
{
	if (!e)
		return;
	if (e->ctl)
		od_controller_remove_hooks(e->ctl, e->hooks); /* no hook call after it */
	ec_carry_join(e); /* before the notifier goes: it queues signals */
	ec_levels_free(e); /* likewise */

	/* Bounded: each write the notifier has queued takes at most EC_SIGNAL_TIMEOUT_MS. */
	ec_push_job(e, JOB_STOP, 0, NULL);
	g_thread_join(e->notifier);
	/* Their records stay for a successor (stopping for one, or the memfd goes anyway). */
	g_mutex_lock(&e->lock);
	for (guint i = 0; i < e->all->len; i++)
		((ec_listener *)g_ptr_array_index(e->all, i))->carry = NULL;
	g_mutex_unlock(&e->lock);
	g_mutex_lock(&e->lock);
	e->stop = true;
	g_mutex_unlock(&e->lock);
	ec_kick(e);
	g_thread_join(e->thread);
	ec_job *j;
	while ((j = g_async_queue_try_pop(e->jobs))) {
		if (j->batch)
			g_ptr_array_unref(j->batch);
		g_free(j);
	}
	ec_release(e);
}

/* The control files memcg_write_event_control knows, by name (6.1 mm/memcontrol.c). */
static const struct {
	const char *name;
	ec_kind kind;
} controls[] = {
	{ "memory.usage_in_bytes", EC_USAGE },
	{ "memory.oom_control", EC_OOM },
	{ "memory.pressure_level", EC_PRESSURE },
	{ "memory.memsw.usage_in_bytes", EC_MEMSW },
};

/* Is descriptor control_fd of process tgid one of this cgroup's shadow control files?
 * Which one in *kind and *file. Read from procfs: never fstat a caller's descriptor
 * (fdguard.h). 0, EBADF or EINVAL. */
static int check_control(const fs_synth_ctx *c, pid_t tgid, int control_fd, ec_kind *kind,
			 const fs_synth **file)
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
	for (size_t i = 0; i < G_N_ELEMENTS(controls); i++) {
		const fs_synth *s = fs_layout_find(c->fs->opts.v1_layout, controls[i].name);
		uint64_t want = s ? fs_inodes_find(c->fs->inodes, dst.st_dev, dst.st_ino, s) : 0;
		if (want != 0 && ino == want) {
			*kind = controls[i].kind;
			*file = s;
			return 0;
		}
	}
	return EINVAL;
}

/* The arguments of a threshold or a pressure level, as the register_event functions of
 * 6.1 read them: page_counter_memparse(args, "-1") for a threshold (not stripped: a
 * leading blank is EINVAL), vmpressure_register_event's "<level>[,<mode>]". */
static int parse_args(ec_listener *l, const fs_synth_ctx *c, const char *args, size_t alen)
{
	if (l->kind == EC_OOM)
		return 0; /* mem_cgroup_oom_register_event takes no arguments */
	if (l->kind == EC_PRESSURE)
		return od_vmp_parse(args, alen, &l->level, &l->mode);
	if (alen && g_ascii_isspace(args[0]))
		return EINVAL;
	uint64_t t;
	int r = fs_v1_parse_memory(c->page_size, args, alen, &t);
	if (r)
		return r;
	l->threshold = t == OE_UNLIMITED ? UINT64_MAX : t;
	return 0;
}

/* file_permission(cfile, MAY_READ) of memcg_write_event_control, on the shadow file's
 * attributes (the real file it shows: fs_synth_attr). 0 or EACCES. */
static int control_readable(const fs_synth_ctx *c, fs_caller *who, const fs_synth *file)
{
	if (!c->req)
		return 0;
	struct stat st;
	int r = fs_synth_attr(c->dirfd, file, &st);
	return r ? r : fs_caller_permission(who, &st, R_OK);
}

/* Who asks, for the bounds (ec_bounds.h). */
typedef struct {
	uint64_t id;
	pid_t tgid;
	uid_t uid;
	uint64_t principal;
	bool root, owner;
} ec_asker;

static ec_asker asker_of(const fs_synth_ctx *c, const fs_caller *who, uid_t uid)
{
	ec_asker a = { .id = c->id, .tgid = who->tgid, .uid = uid };
	/* A uid of our user namespace, or the whole namespace it lives in. */
	a.principal = ec_principal(who->init_userns, (uint64_t)who->userns, uid);
	a.root = ec_principal_is_root(a.principal);
	/* The real directory and memory.max: fstat on cgroupfs never reaches FUSE. */
	struct stat st;
	a.owner = (fstat(c->dirfd, &st) == 0 && st.st_uid == uid) ||
		  (fstatat(c->dirfd, "memory.max", &st, 0) == 0 && st.st_uid == uid);
	return a;
}

/* NULL when one more listener of a fits; called with the lock held. */
static const char *refusal_locked(fs_evctl *e, const ec_asker *a)
{
	ec_counts n = { 0 };
	for (guint i = 0; i < e->all->len; i++) {
		ec_listener *o = g_ptr_array_index(e->all, i);
		ec_count_one(&n, a->id, a->tgid, a->principal, o->id, o->tgid, o->principal, o->root, o->stranger);
	}
	ec_carry_count_pending_locked(e, &n, a->id, a->tgid, a->principal);
	return ec_bounds_refusal(&n, a->root, a->owner);
}

/* One line per 10 s at most: a refused caller can retry in a loop. */
static void warn_refused(uint64_t id, pid_t tgid, uid_t uid, const char *why)
{
	static GMutex lock;
	static gint64 last;
	if (!fs_warn_due(&lock, &last))
		return;
	g_warning("cgroup.event_control of cgroup %" G_GUINT64_FORMAT ": refused pid %d (uid %u): %s",
		  id, (int)tgid, (unsigned)uid, why);
}

static bool bounds_ok(fs_evctl *e, const ec_asker *a)
{
	g_mutex_lock(&e->lock);
	const char *why = refusal_locked(e, a);
	g_mutex_unlock(&e->lock);
	if (why)
		warn_refused(a->id, a->tgid, a->uid, why);
	return !why;
}

/* The caller's eventfd as a descriptor of ours, or -errno. Checked in the caller's
 * table first (a non-eventfd is never taken), and again once ours: the caller may
 * have put another file under that number in between. A taken descriptor that is
 * not an eventfd goes to the closer (its close may wait for a FUSE server). */
static int take_eventfd(fs_evctl *e, int pidfd, pid_t tgid, int event_fd, uint64_t owner)
{
	int r = fs_fd_is_eventfd(tgid, event_fd);
	if (r)
		return -r;
	int efd = pidfd_getfd(pidfd, event_fd, 0);
	if (efd < 0)
		return -errno; /* EBADF: closed meanwhile; EPERM: a ptrace policy forbids us */
	if (!fs_fd_within_budget(efd)) {
		fs_closer_give(e->closer, efd, owner);
		return -EMFILE;
	}
	if (fs_fd_is_eventfd(0, efd) != 0) {
		fs_closer_give(e->closer, efd, owner);
		return -EINVAL;
	}
	return efd;
}

int fs_event_control_register(const fs_synth_ctx *c, int event_fd, int control_fd, const char *args,
			      size_t alen)
{
	fs_evctl *e = c->fs ? c->fs->evctl : NULL;
	if (!e || !c->req)
		return EOPNOTSUPP;
	if (event_fd < 0 || control_fd < 0)
		return EBADF;
	const struct fuse_ctx *rc = fuse_req_ctx(c->req);
	/* pidfd_open on 6.1 refuses a thread that is not its group's leader */
	g_autoptr(fs_caller) who = fs_caller_new(c->req);
	pid_t tgid = who->tgid;
	if (tgid <= 0)
		return ESRCH; /* the caller is gone, or lives in a pid namespace we cannot see */
	if (g_atomic_int_get(&e->no_timer)) {
		warn_refused(c->id, tgid, rc->uid, "eventfd writes cannot be bounded (no timer)");
		return ENOMEM;
	}
	ec_asker who_asks = asker_of(c, who, rc->uid);
	if (fs_closer_backed_up(e->closer, who_asks.principal)) {
		warn_refused(c->id, tgid, rc->uid, "descriptors it handed over wait to be closed");
		return ENOMEM;
	}
	if (!bounds_ok(e, &who_asks))
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
	/* tgid was a number: if the caller died since, it may name another process now */
	if (!fs_caller_in_group(who, tgid)) {
		close(pidfd);
		return ESRCH;
	}
	/* memcg_write_event_control's order: the eventfd (EBADF, EINVAL), then the control
	 * file (EBADF), the writer's right to read it (EACCES; v1 asks before it looks at the
	 * file's name: a file not among ours answers EINVAL here, EACCES there if unreadable),
	 * then whether it is a control file of this cgroup (EINVAL), then its arguments. */
	ec_kind kind = EC_OOM;
	const fs_synth *file = NULL;
	ec_listener parsed = { 0 };
	int r = fs_fd_is_eventfd(tgid, event_fd);
	if (!r)
		r = check_control(c, tgid, control_fd, &kind, &file);
	if (!r)
		r = control_readable(c, who, file);
	parsed.kind = kind;
	if (!r)
		r = parse_args(&parsed, c, args, alen);
	uint64_t usage = 0;
	if (!r && (kind == EC_USAGE || kind == EC_MEMSW))
		r = fs_v1_usage_value(c, kind == EC_MEMSW, &usage);
	int efd = r ? -r : take_eventfd(e, pidfd, tgid, event_fd, who_asks.principal);
	if (efd < 0) {
		close(pidfd);
		return -efd;
	}

	/* Asked before taking our lock: the controller calls our hooks, never the reverse under
	 * it. A cgroup new to the controller is added here, so that its OOM reaches the listener. */
	oe_view v;
	bool under_oom = fs_cg_view(c, &v) == 0 && v.under_oom;

	ec_listener *l = ec_listener_new(c->id, tgid, rc->uid, efd, pidfd);
	l->kind = kind;
	l->threshold = parsed.threshold;
	l->level = parsed.level;
	l->mode = parsed.mode;
	l->principal = who_asks.principal;
	l->root = who_asks.root;
	l->stranger = !who_asks.root && !who_asks.owner;
	l->cg_root = c->is_root;

	g_mutex_lock(&e->lock);
	const char *why = refusal_locked(e, &who_asks);
	if (why) {
		g_mutex_unlock(&e->lock);
		warn_refused(c->id, tgid, l->uid, why);
		ec_listener_unref(l);
		return ENOMEM;
	}
	l->serial = ++e->next_serial;
	g_ptr_array_add(e->all, l);
	if (kind != EC_OOM) {
		int err = ec_levels_add_locked(e, l, c->dirfd, c->is_root, usage);
		if (err) {
			g_ptr_array_remove_fast(e->all, l);
			g_mutex_unlock(&e->lock);
			return err;
		}
	}
	ec_carry_record(e, l); /* every kind outlives the server (ec_carry.c) */
	/* v1 signals at once when registered while the cgroup is under OOM */
	if (under_oom && kind == EC_OOM) {
		GPtrArray *one = g_ptr_array_new_with_free_func(ec_listener_unref);
		g_ptr_array_add(one, ec_listener_ref(l));
		ec_push_job(e, JOB_SIGNAL, c->id, one);
	}
	g_mutex_unlock(&e->lock);
	ec_kick(e);
	return 0;
}
