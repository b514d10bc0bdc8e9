/* session.c — the public face of the shadow tree (shadowfs.h): mount (or take a
 * kept connection over, takeover.c), serve on a bounded pool of workers, stop (with
 * or without the unmount). Stopping must make fuse_session_loop_mt()
 * return even when every worker sits in read(2) on /dev/fuse and the mount is
 * busy (a lazy unmount then leaves the connection alive), and must not send the
 * mount a request of its own: when the connection is kept for a successor, a
 * request no worker answers waits (request_wait_answer, uninterruptible) until the
 * successor serves it, and whoever made it (a thread of ours, or a child) keeps our
 * exit, or the unit's cgroup, waiting for a successor that systemd starts only
 * once the cgroup is empty (issue 19). So after setting the exit flag we interrupt
 * the loop's own thread: libfuse 3.14's fuse_session_loop_mt waits for a worker's
 * end in sem_wait(), which a signal handler installed without SA_RESTART
 * interrupts; the loop then sees the flag and cancels every worker (read(2) is a
 * cancellation point; a worker handling a request finishes it first). The workers
 * inherit the signal unblocked (libfuse 3.14's fuse_start_thread blocks only SIGTERM,
 * SIGINT, SIGHUP and SIGQUIT), but only the drain sends it to them, and only while they
 * read (fuse_io.h). The signal is
 * repeated until the loop has returned: one that lands between the loop's check of
 * the flag and its sem_wait() would be lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <signal.h>
#include <unistd.h>

#include "fs_private.h"
#include "fuse_io.h"
#include "v1state.h"

#define FS_DEFAULT_THREADS 16
/* Workers left waiting after a burst; the others end (libfuse keeps every worker it ever
 * started unless told). Each kept worker holds its stack's touched pages (the 64 KiB it
 * prefaults before it first takes the engine lock, ctl_lock.c) and the pages of its 1 MiB
 * receive buffer it wrote, all locked: 1,000 listeners registered at once started all 16
 * (bench-manage, 6.12: 17 "oomd-fuse" threads at 10,000 cgroups). An ended worker's buffer
 * is unmapped; its stack joins glibc's cache of stacks (40 MiB, five 8 MiB stacks) or is
 * unmapped too. A later burst starts workers again. */
#define FS_IDLE_THREADS 4
#define FS_WAKE_EVERY_US 20000

void od_shadowfs_opts_defaults(od_shadowfs_opts *o)
{
	o->allow_other = true;
	o->default_permissions = true;
	o->max_threads = FS_DEFAULT_THREADS;
	o->debug = false;
	o->v1_layout = false;
	o->fuse_fd = -1;
	o->state_fd = -1;
	o->kept_outside = false;
	o->cache_s = FS_CACHE_S;
	o->name_keep_s = FS_NAME_KEEP_S;
	o->name_keep_max = FS_NAME_KEEP_MAX;
	o->sweep_period_s = FS_SWEEP_PERIOD_S;
}

/* The process umask without changing it (umask(2) cannot read without writing,
 * and writing it would race with other threads creating files). */
static mode_t read_umask(void)
{
	g_autofree char *status = NULL;
	guint64 v;
	if (!g_file_get_contents("/proc/self/status", &status, NULL, NULL) ||
	    !fs_status_number(status, "Umask:", 8, &v))
		return 022;
	return (mode_t)v;
}

static void set_err(GError **err, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void set_err(GError **err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error_literal(err, G_FILE_ERROR, g_file_error_from_errno(code), msg);
}

/* The drained stop (fuse_io.h); without it a stop may lose a request it has read, as
 * before, which the log says once. */
static void install_io(od_shadowfs *fs)
{
	int e = fs_io_install(fs);
	if (e)
		g_warning("FUSE custom I/O: %s: a stop for a successor may fail a request under way",
			  g_strerror(e));
}

od_shadowfs *od_shadowfs_new(int root_fd, const char *mountpoint, od_controller *ctl,
			     const od_shadowfs_opts *o, GError **err)
{
	od_shadowfs_opts defaults;
	if (!o) {
		od_shadowfs_opts_defaults(&defaults);
		o = &defaults;
	}
	int kept_fuse = o->fuse_fd, kept_state = o->state_fd;
	g_autofree char *mopts = NULL;
	struct stat st;
	if (fstat(root_fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		set_err(err, ENOTDIR, "the real cgroup root (fd %d) is not an open directory", root_fd);
		goto fail_kept;
	}
	/* A kept connection's mountpoint is our own mount: stat would ask a server that
	 * is not running yet. */
	if (kept_fuse < 0 && stat(mountpoint, &st) < 0) {
		int e = errno;
		set_err(err, e, "mountpoint %s: %s", mountpoint, g_strerror(e));
		goto fail_kept;
	}
	if (kept_fuse < 0 && !S_ISDIR(st.st_mode)) {
		set_err(err, ENOTDIR, "mountpoint %s is not a directory", mountpoint);
		goto fail_kept;
	}
	if (kept_fuse >= 0 && kept_state < 0) {
		set_err(err, EINVAL, "a kept FUSE connection (fd %d) without its state", kept_fuse);
		goto fail_kept;
	}
	int probe = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (probe < 0) {
		int e = errno;
		set_err(err, e, "FUSE unavailable: cannot open /dev/fuse: %s (is the fuse module loaded?)",
			g_strerror(e));
		goto fail_kept;
	}
	close(probe);

	od_shadowfs *fs = g_new0(od_shadowfs, 1);
	fs->ctl = ctl;
	fs->opts = *o;
	if (!fs->opts.zygote) /* the fs tests: the daemon brings its own (main.c) */
		fs->opts.zygote = fs->own_zygote = od_zygote_new();
	if (fs->opts.max_threads == 0)
		fs->opts.max_threads = FS_DEFAULT_THREADS;
	g_mutex_init(&fs->handles_lock);
	g_mutex_init(&fs->wake_lock);
	fs->handles = g_hash_table_new(g_int64_hash, g_int64_equal); /* handles.c */
	long ps = sysconf(_SC_PAGESIZE);
	fs->page_size = ps > 0 ? (uint64_t)ps : 4096;
	fs->umask = read_umask();

	int e = 0;
	fs->inodes = fs_inodes_new(root_fd, &e);
	if (!fs->inodes) {
		set_err(err, e, "cannot hold the real cgroup root: %s", g_strerror(e));
		goto fail;
	}
	fs->poller = fs_poller_new(&e);
	if (!fs->poller) {
		set_err(err, e, "cannot start the poll thread: %s", g_strerror(e));
		goto fail;
	}
	fs->ctlw = fs_ctlwatch_new(ctl);
	fs->evctl = fs_evctl_new(ctl, &e);
	if (!fs->evctl) {
		set_err(err, e, "cannot start the OOM listener thread: %s", g_strerror(e));
		goto fail;
	}
	if (fs->opts.v1_layout)
		fs->v1hooks = fs_v1state_watch(ctl); /* the v1 layout's per-cgroup state goes with the cgroup */

	mopts = g_strdup_printf("fsname=oomdelayfs,subtype=oomdelayfs%s%s",
				o->allow_other ? ",allow_other" : "",
				o->default_permissions ? ",default_permissions" : "");
	char *argv[] = { "oomdelayfs", "-o", mopts, o->debug ? "-d" : NULL, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(o->debug ? 4 : 3, argv);
	fs->se = fuse_session_new(&args, fs_counted_ops(), sizeof fs_ops, fs);
	fuse_opt_free_args(&args);
	if (!fs->se) {
		set_err(err, EINVAL, "cannot create the FUSE session (options: %s)", mopts);
		goto fail;
	}
	fs->mountpoint = g_strdup(mountpoint);
	if (kept_fuse >= 0) {
		/* libfuse 3.14 (fuse_session_mount): "/dev/fd/N" serves N without mounting */
		g_autofree char *dev = g_strdup_printf("/dev/fd/%d", kept_fuse);
		if (fuse_session_mount(fs->se, dev) != 0) {
			set_err(err, EBADF, "the kept FUSE connection (fd %d) is unusable", kept_fuse);
			goto fail;
		}
		kept_fuse = -1; /* the session's now */
		install_io(fs);
		/* Until served: a failed takeover must leave the mount to the next attempt. */
		g_atomic_int_set(&fs->keep_mount, 1);
		int sfd = kept_state;
		kept_state = -1;
		GError *e2 = NULL;
		if (!fs_survival_takeover(fs, sfd, &e2)) {
			if (!fs->surv)
				close(sfd);
			g_propagate_prefixed_error(err, e2, "taking over the mount of %s: ", mountpoint);
			goto fail;
		}
		g_atomic_int_set(&fs->keep_mount, 0);
	} else {
		if (fuse_session_mount(fs->se, mountpoint) != 0) {
			set_err(err, EIO,
				"cannot mount the shadow tree on %s (not root, fuse module missing or "
				"mountpoint unusable; libfuse logged the cause)", mountpoint);
			g_clear_pointer(&fs->mountpoint, g_free);
			goto fail;
		}
		install_io(fs);
		GError *e2 = NULL;
		if (!fs_survival_fresh(fs, &e2)) {
			g_propagate_prefixed_error(err, e2, "starting the mount of %s: ", mountpoint);
			goto fail;
		}
	}
	/* The mount's device, to recognise our own files in descriptors callers pass
	 * to cgroup.event_control. DONT_SYNC: no request, the loop is not running yet. */
	struct statx sx;
	if (statx(AT_FDCWD, mountpoint, AT_STATX_DONT_SYNC, STATX_INO, &sx) == 0)
		fs->mnt_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	else
		g_warning("cannot stat the new mount %s: %s", mountpoint, g_strerror(errno));
	fs->sweeper = fs_sweeper_new(fs); /* NULL (logged): entries wait for reclaim */
	fs->inval = fs_inval_new(fs);     /* NULL (logged): the time-out is the bound */
	return fs;

fail:
	od_shadowfs_free(fs);
fail_kept:
	if (kept_fuse >= 0)
		close(kept_fuse);
	if (kept_state >= 0)
		close(kept_state);
	return NULL;
}

static void on_wake(int sig)
{
	(void)sig; /* its only purpose is to interrupt a wait: the loop's sem_wait(), a worker's read */
}

int od_shadowfs_run(od_shadowfs *fs)
{
	struct sigaction sa = { .sa_handler = on_wake, .sa_flags = 0 }; /* no SA_RESTART */
	sigemptyset(&sa.sa_mask);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, FS_WAKE_SIGNAL);
	if (sigaction(FS_WAKE_SIGNAL, &sa, NULL) < 0 || pthread_sigmask(SIG_UNBLOCK, &set, NULL) != 0)
		return errno ? errno : EINVAL;
	fs->loop_thread = pthread_self();
	g_atomic_int_set(&fs->running, 1);
	int r = 0;
	struct fuse_loop_config *cfg = NULL;
	if (!g_atomic_int_get(&fs->exiting) && (cfg = fuse_loop_cfg_create()) != NULL) {
		fuse_loop_cfg_set_max_threads(cfg, fs->opts.max_threads);
		fuse_loop_cfg_set_idle_threads(cfg, FS_IDLE_THREADS);
		/* One /dev/fuse descriptor per worker (no thundering herd on a single fd) where
		 * the kernel cannot re-queue a dead server's requests (those read on a clone fail
		 * with ECONNABORTED when it dies instead of waiting forever), or where nobody keeps
		 * the connection anyway (takeover.c). */
		fuse_loop_cfg_set_clone_fd(cfg, !fs->opts.kept_outside || fs_survival_clone_fd(fs));
		r = fuse_session_loop_mt(fs->se, cfg);
		fuse_loop_cfg_destroy(cfg);
	} else if (!g_atomic_int_get(&fs->exiting)) {
		r = -ENOMEM;
	}
	g_mutex_lock(&fs->wake_lock); /* no signal to this thread once it may have ended */
	g_atomic_int_set(&fs->running, 2);
	g_mutex_unlock(&fs->wake_lock);
	if (g_atomic_int_get(&fs->exiting))
		return 0; /* ENODEV and the like after our own unmount are the normal end */
	if (r < 0)
		return -r;
	return r > 0 ? EINTR : 0; /* libfuse returns a signal number when one ended the loop */
}

/* Interrupts the loop's thread until od_shadowfs_run has returned (or the session is
 * freed without ever having run). */
static gpointer waker_thread(gpointer data)
{
	od_shadowfs *fs = data;
	int state;
	for (;;) {
		g_mutex_lock(&fs->wake_lock);
		state = g_atomic_int_get(&fs->running);
		if (state == 1)
			pthread_kill(fs->loop_thread, FS_WAKE_SIGNAL);
		g_mutex_unlock(&fs->wake_lock);
		if (state == 2 || g_atomic_int_get(&fs->exiting_done))
			return NULL;
		g_usleep(FS_WAKE_EVERY_US);
	}
	return NULL;
}

/* Our own mount: libfuse knows no mountpoint for a connection it was handed. */
static void unmount(od_shadowfs *fs)
{
	if (g_atomic_int_get(&fs->keep_mount) || !fs->mountpoint)
		return;
	if (!fs->took_over) {
		fuse_session_unmount(fs->se);
	} else if (umount2(fs->mountpoint, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT) {
		g_warning("unmounting %s: %s", fs->mountpoint, g_strerror(errno));
	}
}

static void stop(od_shadowfs *fs)
{
	fs_io_drain(fs); /* before the exit flag: libfuse drops what a worker reads after it */
	fuse_session_exit(fs->se);
	GError *e = NULL;
	fs->waker = g_thread_try_new("oomd-fs-stop", waker_thread, fs, &e);
	if (!fs->waker) {
		g_warning("stopping the shadow tree: cannot start the wake-up thread: %s", e->message);
		g_error_free(e);
		g_mutex_lock(&fs->wake_lock); /* one try; a lost one leaves the loop waiting */
		if (g_atomic_int_get(&fs->running) == 1)
			pthread_kill(fs->loop_thread, FS_WAKE_SIGNAL);
		g_mutex_unlock(&fs->wake_lock);
	}
	/* Lazy unmount: processes with files open keep them until they close them. */
	unmount(fs);
}

void od_shadowfs_exit(od_shadowfs *fs)
{
	if (!fs || !fs->se || !g_atomic_int_compare_and_exchange(&fs->exiting, 0, 1))
		return;
	stop(fs);
}

void od_shadowfs_exit_keep(od_shadowfs *fs)
{
	if (!fs || !fs->se || !g_atomic_int_compare_and_exchange(&fs->exiting, 0, 1))
		return;
	g_atomic_int_set(&fs->keep_mount, 1);
	stop(fs);
}

void od_shadowfs_kept_fds(od_shadowfs *fs, int *fuse_fd, int *state_fd)
{
	*fuse_fd = fs->se ? fuse_session_fd(fs->se) : -1;
	*state_fd = fs_survival_state_fd(fs);
}

void od_shadowfs_free(od_shadowfs *fs)
{
	if (!fs)
		return;
	fs_sweeper_free(fs->sweeper); /* it writes to the session */
	fs_inval_free(fs->inval);     /* so does it */
	if (fs->se)
		unmount(fs);
	/* Handles the kernel never released (the loop ended with files open). */
	fs_handles_close_all(fs);
	g_hash_table_destroy(fs->handles);
	g_mutex_clear(&fs->handles_lock);
	/* Hooks next: no controller callback may reach a session being destroyed. */
	if (fs->v1hooks)
		od_controller_remove_hooks(fs->ctl, fs->v1hooks);
	fs_ctlwatch_free(fs->ctlw);
	fs_evctl_free(fs->evctl);
	fs_poller_free(fs->poller);
	if (fs->waker) {
		g_atomic_int_set(&fs->exiting_done, 1); /* freed without having run: nothing to wake */
		g_thread_join(fs->waker);
	}
	g_mutex_clear(&fs->wake_lock);
	if (fs->se)
		fuse_session_destroy(fs->se);
	fs_io_free(fs);
	fs_inodes_free(fs->inodes);
	fs_survival_free(fs);
	od_zygote_free(fs->own_zygote);
	g_free(fs->mountpoint);
	g_free(fs);
}
