/* main.c — oomdelayfs: options, start-up checks, then the threads that serve:
 * the glib main loop (watcher, timers, signals) on the main thread, the FUSE
 * session on its own thread (with its workers), and the controller's deadline
 * thread and actuators (controller.h).
 * Order matters: the real cgroup root is opened before mounting, so that the
 * shadow can be mounted over the real tree itself. A connection kept by the
 * service manager (systemd's fd store, --supervise) is taken over instead of
 * mounting, with the real root it kept beside it (fdstore.h). */
#define G_LOG_DOMAIN "oomdelayfs"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include <glib-unix.h>
#include <fuse_lowlevel.h>

#include "oomd/controller.h"
#include "oomd/kernel_io.h"
#include "oomd/audit.h"
#include "oomd/fdstore.h"
#include "oomd/notify.h"
#include "oomd/options.h"
#include "oomd/sdjob.h"
#include "oomd/shadowfs.h"
#include "oomd/startup.h"
#include "oomd/status.h"
#include "oomd/supervisor.h"
#include "oomd/watcher.h"
#include "oomd/zygote.h"

typedef struct {
	GMainLoop *loop;
	od_controller *ctl;
	od_shadowfs *fs;
	gint released; /* the hand-back ran (once) */
	bool kept;     /* the connection is kept outside the process (fdstore.h) */
	bool handover; /* SIGUSR2: stopped for a successor, nothing handed back */
	int fs_rc;
	int fuse_nice; /* the niceness the daemon was started with */
} daemon_ctx;

static void release_once(daemon_ctx *d)
{
	if (g_atomic_int_compare_and_exchange(&d->released, 0, 1))
		od_controller_release_all(d->ctl);
}

/* Leaves the mount and every hold to a successor: SIGUSR2, or SIGTERM in a restart job. */
static void hand_over(daemon_ctx *d)
{
	d->handover = true;
	od_shadowfs_exit_keep(d->fs);
	g_main_loop_quit(d->loop);
}

/* SIGINT/SIGTERM, on the loop thread. Under systemd, with the connection in its fd
 * store, a SIGTERM may be a restart's (systemd says nothing about why it stops a unit):
 * systemd is asked (sdjob.h, up to 2.1 s of this thread, once) whether a restart job is
 * queued; if so this is the SIGUSR2 hand-over, else (any other job, none, no answer) the
 * orderly stop. The one log line says which and why. */
static void on_stop(int sig, void *ud)
{
	daemon_ctx *d = ud;
	if (d->handover || g_atomic_int_get(&d->released))
		return; /* decided already: the successor owns the holds, or they are handed back */
	const char *name = sig == SIGINT ? "SIGINT" : "SIGTERM";
	const char *stop = "handing every cgroup back to the kernel and unmounting";
	if (sig == SIGTERM && d->kept && od_sdjob_under_systemd()) {
		g_autofree char *why = NULL;
		gint64 t0 = g_get_monotonic_time();
		od_sdjob_decision sd = od_sdjob_query(OD_SDJOB_PRIVATE_ADDRESS, NULL, getpid(),
						      OD_SDJOB_TIMEOUT_MS, &why);
		double ms = (double)(g_get_monotonic_time() - t0) / 1000.0; /* a restart waits for it */
		if (sd == OD_SDJOB_RESTART) {
			g_message("%s in a restart job (systemd: %s, in %.0f ms): stopping for a successor; "
				  "the mount and the holds stay", name, why, ms);
			hand_over(d);
			return;
		}
		if (sd == OD_SDJOB_UNKNOWN)
			g_warning("%s, systemd not asked whether it is a restart (%s, after %.0f ms): %s", name,
				  why, ms, stop);
		else
			g_message("%s, not a restart (systemd: %s, in %.0f ms): %s", name, why, ms, stop);
	} else {
		g_message("%s: %s", name, stop);
	}
	release_once(d);
	if (d->fs)
		od_shadowfs_exit(d->fs);
	g_main_loop_quit(d->loop);
}

/* SIGUSR2, on the loop thread: leave the mount and every hold to a successor. */
static gboolean on_handover(gpointer ud)
{
	daemon_ctx *d = ud;
	if (!d->kept) {
		g_warning("SIGUSR2 ignored: no service manager keeps the FUSE connection "
			  "(FileDescriptorStoreMax= or --supervise); SIGTERM stops");
		return G_SOURCE_CONTINUE;
	}
	if (g_atomic_int_get(&d->released))
		return G_SOURCE_CONTINUE; /* already stopping for good */
	g_message("SIGUSR2: stopping for a successor; the mount and the holds stay");
	hand_over(d);
	return G_SOURCE_CONTINUE; /* removed by main */
}

static uint64_t beats(void *ctl)
{
	return od_controller_beats(ctl);
}

/* STATUS= for `systemctl status`: the managed and held counts, every 5 s. */
typedef struct {
	od_controller *ctl;
	const char *mountpoint;
	size_t managed, held;
} status_ctx;

static void count_one(void *ud, uint64_t id, const char *path, const oe_view *v)
{
	status_ctx *s = ud;
	(void)id, (void)path;
	s->managed += v->managed;
	s->held += v->in_hold;
}

static gboolean update_status(gpointer ud)
{
	status_ctx *s = ud;
	s->managed = s->held = 0;
	od_controller_snapshot(s->ctl, 0, count_one, s);
	size_t managed = s->managed, held = s->held;
	g_autofree char *line = g_strdup_printf("serving %s: %zu cgroups managed, %zu held", s->mountpoint,
						managed, held);
	od_notify_status(line);
	return G_SOURCE_CONTINUE;
}

static gboolean quit_loop(gpointer loop)
{
	g_main_loop_quit(loop);
	return G_SOURCE_REMOVE;
}

static gpointer fuse_main(gpointer ud)
{
	daemon_ctx *d = ud;
	/* The FUSE workers (made by this thread, inheriting it) serve any client that
	 * opens the mount: they must not get the kill path's -20 and crowd out the
	 * workloads. */
	if (setpriority(PRIO_PROCESS, 0, d->fuse_nice) < 0)
		g_warning("setpriority(%d) for the FUSE workers: %s", d->fuse_nice, g_strerror(errno));
	d->fs_rc = od_shadowfs_run(d->fs);
	/* Unmounted from outside (fusermount -u) or failed: stop the loop too. An
	 * idle source, not g_main_loop_quit: the loop may not be running yet. */
	g_idle_add(quit_loop, d->loop);
	return NULL;
}

/* --protect SIZE: the daemon's own cgroup "oomdelayfs.daemon" under the real root, with
 * memory.min = SIZE, so that global reclaim leaves the handler's memory alone (SEMANTICS:
 * "runs in a cgroup of its own with protected memory"). Called before any thread and
 * before mlockall, so that the pages the daemon faults from now on are charged there.
 * Failures are logged, not fatal: an unprotected handler beats none. */
#define OD_DAEMON_CGROUP "oomdelayfs.daemon"
static void protect_self(int root_fd, uint64_t min)
{
	if (mkdirat(root_fd, OD_DAEMON_CGROUP, 0755) < 0 && errno != EEXIST) {
		g_warning("--protect: mkdir %s: %s", OD_DAEMON_CGROUP, g_strerror(errno));
		return;
	}
	int fd = openat(root_fd, OD_DAEMON_CGROUP, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		g_warning("--protect: open %s: %s", OD_DAEMON_CGROUP, g_strerror(errno));
		return;
	}
	int e = od_kio_try_write_u64(fd, "memory.min", min);
	if (e)
		g_warning("--protect: %s/memory.min = %" G_GUINT64_FORMAT ": %s", OD_DAEMON_CGROUP, min,
			  g_strerror(-e));
	e = od_kio_try_write_u64(fd, "cgroup.procs", (uint64_t)getpid());
	if (e)
		g_warning("--protect: moving the daemon into %s: %s", OD_DAEMON_CGROUP, g_strerror(-e));
	else
		g_message("running in cgroup %s (memory.min %" G_GUINT64_FORMAT " bytes)",
			  OD_DAEMON_CGROUP, min);
	close(fd);
}

static int fail(int code, const char *what, GError *err)
{
	g_printerr("oomdelayfs: %s%s%s\n", what ? what : "", what ? ": " : "",
		   err ? err->message : "failed");
	if (err)
		g_error_free(err);
	return code;
}

int main(int argc, char **argv)
{
	od_options o;
	GError *err = NULL;
	setlocale(LC_ALL, ""); /* --help in the user's charset */
	if (argc > 1 && strcmp(argv[1], "status") == 0)
		return od_status_client_main(argc - 1, argv + 1);
	int rc = od_options_parse(&o, argc, argv, &err);
	if (rc != OD_EXIT_OK) {
		g_printerr("oomdelayfs: %s\n", err ? err->message : "bad command line");
		g_clear_error(&err);
		return rc;
	}
	if (o.version) {
		printf("oomdelayfs %s (libfuse %d.%d, glib %u.%u.%u)\n", OOMD_VERSION, FUSE_MAJOR_VERSION,
		       FUSE_MINOR_VERSION, glib_major_version, glib_minor_version, glib_micro_version);
		od_options_clear(&o);
		return OD_EXIT_OK;
	}
	od_log_bridges(o.debug);
	signal(SIGPIPE, SIG_IGN);
	od_kio_kill_once_init();

	if ((rc = od_check_root(&err)) != OD_EXIT_OK)
		return fail(rc, NULL, err);
	if (o.supervise) {
		int wd = o.watchdog_sec;
		od_options_clear(&o);
		return od_supervise(argc, argv, wd);
	}
	/* A previous server's connection, kept by systemd or the supervisor. */
	od_kept_fds kept;
	od_fdstore_take(&kept);
	if (kept.fuse_fd >= 0 && (kept.state_fd < 0 || kept.root_fd < 0 || o.release_all)) {
		g_printerr("oomdelayfs: a kept FUSE connection without its state and root, or with "
			   "--release-all: not taken over\n");
		return OD_EXIT_FAILURE;
	}
	bool takeover = kept.fuse_fd >= 0;
	if (!takeover) { /* left from a connection that died: a fresh mount gets its own */
		if (kept.state_fd >= 0)
			close(kept.state_fd);
		if (kept.root_fd >= 0)
			close(kept.root_fd);
		kept.state_fd = kept.root_fd = -1;
	}
	if (!o.release_all) {
		if ((rc = od_check_fuse(&err)) != OD_EXIT_OK)
			return fail(rc, NULL, err);
		/* Before opening the cgroup root: a stale mount over it must go first. Not
		 * our own kept mount: it is alive, only unserved until we serve it. */
		if (!takeover && ((rc = od_make_mountpoint(o.mountpoint, o.mountpoint_default, &err)) != OD_EXIT_OK ||
				  (rc = od_check_mountpoint(o.mountpoint, &err)) != OD_EXIT_OK))
			return fail(rc, NULL, err);
	}
	int root_fd = -1;
	g_autofree char *root_path = NULL;
	/* Taken over: the path of the real root may lie under our unserved mount. */
	g_autofree char *kept_root = takeover ? g_strdup_printf("/proc/self/fd/%d", kept.root_fd) : NULL;
	rc = od_open_cgroup_root(takeover ? kept_root : o.cgroup_root, &root_fd, &root_path, &err);
	if (takeover && rc == OD_EXIT_OK) {
		g_free(root_path); /* for messages: the path it was opened at, not /proc/self/fd/N */
		root_path = g_file_read_link(kept_root, NULL);
		if (!root_path)
			root_path = g_strdup(kept_root);
	}
	if (takeover)
		close(kept.root_fd);
	if (rc != OD_EXIT_OK)
		return fail(rc, NULL, err);

	if (o.protect_min && !o.release_all)
		protect_self(root_fd, o.protect_min);
	/* The charge zygote (fs/zygote.h): the children of the callers' charged calls are
	 * its, never ours, so that none is born holding /dev/fuse. Forked here, in our
	 * cgroup, before mlockall and any thread, while the copy is small; it closes every
	 * descriptor but its socket (the kept ones, taken over above, included). */
	od_zygote *zygote = o.release_all ? NULL : od_zygote_new();
	int started_nice = od_harden(o.nice);

	od_controller *ctl = od_controller_new(&o.cfg);
	if (!ctl)
		return fail(OD_EXIT_FAILURE, "controller", NULL);
	od_audit *audit = NULL;
	int watchdog_ms = o.release_all ? 0 : od_watchdog_period_ms();
	if (!o.release_all) {
		od_controller_set_rt_priority(ctl, o.rt_priority);
		/* four beats per watchdog period: one late wake-up is not a wedged daemon */
		od_controller_set_heartbeat(ctl, watchdog_ms / 4);
		audit = od_audit_new(ctl, o.cfg.kill_mode); /* before adoption: resumed holds count */
	}
	/* The root only (all of it with --release-all); the tree is adopted once the
	 * shadow is mounted, below. */
	od_watcher *w = od_watcher_new(ctl, root_fd, !o.release_all, &err);
	if (!w) {
		od_audit_free(audit);
		od_controller_free(ctl);
		return fail(OD_EXIT_FAILURE, "watcher", err);
	}

	if (o.release_all) {
		od_controller_release_all(ctl);
		g_message("--release-all: %zu cgroups under %s handed back to the kernel",
			  od_watcher_count(w) - 1, root_path);
		od_watcher_free(w);
		od_controller_free(ctl);
		close(root_fd);
		od_options_clear(&o);
		return OD_EXIT_OK;
	}

	od_shadowfs_opts fo;
	od_shadowfs_opts_defaults(&fo);
	fo.allow_other = o.allow_other;
	if (o.max_threads)
		fo.max_threads = o.max_threads;
	fo.v1_layout = o.v1_layout;
	fo.debug = o.debug;
	fo.fuse_fd = kept.fuse_fd; /* -1, -1 unless taken over; owned by od_shadowfs_new */
	fo.state_fd = kept.state_fd;
	fo.kept_outside = od_notify_available(); /* od_fdstore_keep will try */
	fo.zygote = zygote;

	daemon_ctx d = { .ctl = ctl, .fuse_nice = started_nice };
	d.loop = g_main_loop_new(NULL, FALSE);
	/* Signal sources before the mount: a SIGTERM that arrives from now on is
	 * handled (once the loop runs) instead of killing us with the mount left stale. */
	od_watcher_on_stop(w, on_stop, &d);
	guint src_usr2 = g_unix_signal_add(SIGUSR2, on_handover, &d);
	od_controller_adopting(ctl, true);
	d.fs = od_shadowfs_new(root_fd, o.mountpoint, ctl, &fo, &err);
	if (!d.fs) {
		g_source_remove(src_usr2);
		/* A failed takeover leaves the kept mount and the holds to the next try. */
		if (takeover) {
			od_watcher_free(w);
			od_audit_free(audit);
			od_controller_free(ctl);
			g_main_loop_unref(d.loop);
			od_zygote_free(zygote);
			return fail(OD_EXIT_FAILURE, o.mountpoint, err);
		}
		/* Nothing may stay raised or frozen because we failed to mount. */
		od_watcher_adopt(w);
		od_controller_release_all(ctl);
		od_watcher_free(w);
		od_audit_free(audit);
		od_controller_free(ctl);
		g_main_loop_unref(d.loop);
		od_zygote_free(zygote);
		return fail(OD_EXIT_FUSE, o.mountpoint, err);
	}
	od_audit_set_fs(audit, d.fs);
	od_watcher_on_change(w, od_shadowfs_real_changed, d.fs); /* the kernel's cache of it */
	od_kept_fds keep = { .root_fd = root_fd };
	od_shadowfs_kept_fds(d.fs, &keep.fuse_fd, &keep.state_fd);
	/* The manager already holds what it handed us. */
	d.kept = takeover ? od_notify_available() : od_fdstore_keep(&keep);
	if (!d.kept)
		g_message("no service manager keeps the FUSE connection: a crash leaves a stale mount");

	/* Mounted before the tree is adopted: at 10,000 cgroups the walk takes seconds,
	 * and a crashed daemon's mount answers ENOTCONN until it is served. A cgroup
	 * used through the shadow meanwhile is added on first use (idempotent); a user
	 * write waits for the walk (od_controller_adopting), or a subtree write would
	 * miss the children not yet adopted. Holds resume or finish as they are found:
	 * the deadline thread runs already. "serving" (and READY=1) mean all adopted. */
	GThread *ft = g_thread_new("oomd-fuse", fuse_main, &d);
	/* After a restart this is when the mount answers again; "serving" follows the walk. */
	g_message("answering on %s %.0f ms after the start%s; adopting the tree under %s",
		  o.mountpoint, od_ms_since_start(), takeover ? " (taken over)" : "", root_path);
	/* After the FUSE loop: its socket, its probe of an old one and its thread were 40-90 ms
	 * of a restart at 10,000 cgroups under TCG (bench-restart's strace), and nothing the
	 * mount serves needs it. */
	od_status_opts so = { .socket_path = o.status_socket, .group = o.status_group,
			      .metrics_port = o.metrics_port, .mountpoint = o.mountpoint,
			      .mode = o.cfg.kill_mode };
	od_status *status = od_status_start(audit, &so, &err);
	if (!status && err) { /* the holds matter more than their report */
		g_warning("%s; running without it", err->message);
		g_clear_error(&err);
	}
	od_watcher_adopt(w);
	od_controller_adopting(ctl, false);
	g_message("serving %s on %s (%zu cgroups, kill mode %s, ceiling %" G_GUINT64_FORMAT
		  " bytes, freeze margin %" G_GUINT64_FORMAT " bytes)",
		  root_path, o.mountpoint, od_watcher_count(w),
		  o.cfg.kill_mode == OE_KILL_GROUP ? "group" : "kernel", o.cfg.ceiling_bytes,
		  o.cfg.freeze_margin_bytes);
	g_autofree char *ready = g_strdup_printf("serving %s on %s (%zu cgroups)%s", root_path,
						 o.mountpoint, od_watcher_count(w),
						 takeover ? ", taken over" : "");
	od_notify_ready(ready);
	od_watchdog_start(watchdog_ms, beats, ctl);
	status_ctx sc = { .ctl = ctl, .mountpoint = o.mountpoint };
	guint src_status = d.kept ? g_timeout_add_seconds(5, update_status, &sc) : 0;
	g_main_loop_run(d.loop);

	g_source_remove(src_usr2);
	if (src_status)
		g_source_remove(src_status);
	if (d.handover) {
		od_notify_stopping();
		od_shadowfs_exit_keep(d.fs);
	} else {
		/* Stopped by a signal (already released) or by an unmount from outside:
		 * the connection must die with us, the store forgets it. */
		od_notify_stopping();
		release_once(&d);
		od_fdstore_drop();
		od_shadowfs_exit(d.fs);
	}
	g_thread_join(ft);
	od_status_stop(status);
	od_audit_set_fs(audit, NULL);
	od_watcher_on_change(w, NULL, NULL);
	od_shadowfs_free(d.fs);
	od_zygote_free(zygote); /* after the file system: no charged call is in flight */
	od_watcher_free(w);
	od_audit_free(audit); /* before the controller: it removes its hooks */
	od_controller_free(ctl);
	g_main_loop_unref(d.loop);
	close(root_fd);
	od_options_clear(&o);
	if (d.handover) {
		g_message("stopped; the mount and the holds are left to a successor");
		return OD_EXIT_HANDOVER;
	}
	g_message("stopped");
	return d.fs_rc == 0 ? OD_EXIT_OK : OD_EXIT_FAILURE;
}
