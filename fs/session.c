/* session.c — the public face of the shadow tree (shadowfs.h): mount (or take a
 * kept connection over, takeover.c), serve on a bounded pool of workers, stop (with
 * or without the unmount). Stopping must make fuse_session_loop_mt()
 * return even when every worker sits in read(2) on /dev/fuse and the mount is
 * busy (a lazy unmount then leaves the connection alive): after setting the
 * exit flag we send the mount one request of our own, which wakes a worker
 * that then sees the flag; libfuse cancels the others.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fs_private.h"
#include "v1state.h"

#define FS_DEFAULT_THREADS 16

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
	if (fs->opts.max_threads == 0)
		fs->opts.max_threads = FS_DEFAULT_THREADS;
	g_mutex_init(&fs->handles_lock);
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

int od_shadowfs_run(od_shadowfs *fs)
{
	if (g_atomic_int_get(&fs->exiting))
		return 0;
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	if (!cfg)
		return ENOMEM;
	fuse_loop_cfg_set_max_threads(cfg, fs->opts.max_threads);
	/* One /dev/fuse descriptor per worker (no thundering herd on a single fd) where
	 * the kernel cannot re-queue a dead server's requests (those read on a clone fail
	 * with ECONNABORTED when it dies instead of waiting forever), or where nobody keeps
	 * the connection anyway (takeover.c). */
	fuse_loop_cfg_set_clone_fd(cfg, !fs->opts.kept_outside || fs_survival_clone_fd(fs));
	g_atomic_int_set(&fs->running, 1);
	int r = fuse_session_loop_mt(fs->se, cfg);
	g_atomic_int_set(&fs->running, 0);
	fuse_loop_cfg_destroy(cfg);
	if (g_atomic_int_get(&fs->exiting))
		return 0; /* ENODEV and the like after our own unmount are the normal end */
	if (r < 0)
		return -r;
	return r > 0 ? EINTR : 0; /* libfuse returns a signal number when one ended the loop */
}

static gpointer nudge_thread(gpointer data)
{
	int fd = GPOINTER_TO_INT(data);
	struct stat st;
	/* attr timeout 0: this fstat is a GETATTR round trip through the mount */
	(void)fstat(fd, &st);
	close(fd);
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
	fuse_session_exit(fs->se);
	/* Opening the root with O_PATH sends nothing; only the fstat in the helper
	 * thread does, and that one may wait until a worker is free, so it must not
	 * be this thread (which may be one libfuse needs). */
	int fd = fs->mountpoint ? open(fs->mountpoint, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if (fd >= 0 && g_atomic_int_get(&fs->keep_mount)) {
		/* The connection outlives us: if a worker reads the GETATTR after libfuse's
		 * loop has decided to end, it drops it unanswered, and the caller then waits
		 * uninterruptibly (request_wait_answer) for the successor, which would keep a
		 * thread of ours, and so our exit, hanging. A child process asks instead. */
		pid_t pid = fork();
		if (pid == 0) {
			/* Nothing but the mount: a copy of our /dev/fuse descriptors would keep
			 * the connection (and the request it waits on) alive. */
			if (fd > 0)
				close_range(0, (unsigned)fd - 1, 0);
			close_range((unsigned)fd + 1, ~0U, 0);
			struct stat st;
			(void)fstat(fd, &st);
			_exit(0);
		}
		if (pid < 0)
			g_warning("stopping the shadow tree: fork for the wake-up: %s", g_strerror(errno));
		close(fd);
	} else if (fd >= 0) {
		GError *e = NULL;
		fs->nudge = g_thread_try_new("oomd-fs-stop", nudge_thread, GINT_TO_POINTER(fd), &e);
		if (!fs->nudge) {
			g_warning("stopping the shadow tree: cannot start the wake-up thread: %s", e->message);
			g_error_free(e);
			close(fd);
		}
	} else if (fs->mountpoint) {
		g_warning("stopping the shadow tree: cannot open %s to wake the workers: %s",
			  fs->mountpoint, g_strerror(errno));
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
	if (fs->se)
		fuse_session_destroy(fs->se); /* closes /dev/fuse: a pending nudge fails and returns */
	if (fs->nudge)
		g_thread_join(fs->nudge);
	fs_inodes_free(fs->inodes);
	fs_survival_free(fs);
	g_free(fs->mountpoint);
	g_free(fs);
}
