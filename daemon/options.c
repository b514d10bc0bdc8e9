/* options.c — the command line. --help is the manual: description, every option,
 * examples and exit codes, so that `oomdelayfs --help` is enough to run it. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "oomd/options.h"
#include "oomd/parse.h"

#include <errno.h>
#include <string.h>

static const char summary[] =
	"Mounts a shadow of the cgroup-v2 tree on MOUNTPOINT. Every real file and directory\n"
	"passes through; each memory cgroup gains the cgroup-v1 OOM files\n"
	"  memory.oom_delay_millisecs  T: hold an OOM-ing cgroup for T ms before any kill\n"
	"                              (one-shot; a write sets the cgroup and all descendants)\n"
	"  memory.oom_control          oom_kill_disable D / under_oom / oom_kill; write 0 or 1\n"
	"  cgroup.event_control        v1 eventfd notification of OOM onsets\n"
	"and memory.max / memory.high show the user's values. A watcher inside the daemon\n"
	"keeps the rules on an unpatched kernel: while a hold may be needed, the real\n"
	"memory.high is the limit L (the kernel throttles), the real memory.max is L plus a\n"
	"safety ceiling, and a cgroup still growing past L plus the freeze margin is frozen;\n"
	"when the delay is over the kill comes from the kernel's OOM killer (real memory.max\n"
	"written back to L) or, in group mode, from cgroup.kill.\n"
	"\n"
	"The daemon stays in the foreground (systemd Type=simple; logs go to stderr or the\n"
	"journal). It locks its memory, sets its oom_score_adj to -1000 and the niceness\n"
	"of its watcher and kill path to -20 (the deadlines and the kills also run at\n"
	"SCHED_FIFO priority 1), and keeps the state of every managed cgroup\n"
	"in the user.oomdelayfs.state extended attribute of the real cgroup directory, so\n"
	"a restarted daemon resumes or finishes every hold.\n"
	"SIGINT/SIGTERM hand every cgroup back to the kernel (real memory.max = L, the\n"
	"user's memory.high, thawed, state removed) and unmount. SIGHUP is ignored.\n"
	"Under systemd (FileDescriptorStoreMax=) or --supervise the FUSE connection is kept\n"
	"outside the process: after a crash the next server serves the same mount (bind\n"
	"mounts in containers keep working) and holds continue. SIGUSR2: stop serving,\n"
	"keep the mount and every hold, exit 75, so that a successor (a new binary) takes over.";

static const char description[] =
	"Examples:\n"
	"  oomdelayfs /run/oomdelayfs/shadow\n"
	"      serve the host's cgroup-v2 tree on /run/oomdelayfs/shadow\n"
	"  oomdelayfs /sys/fs/cgroup\n"
	"      mount over the real tree itself (containers and cgroup-tools see the shadow)\n"
	"  oomdelayfs --kill-mode group --ceiling 128M /run/oomdelayfs/shadow\n"
	"  echo 1000 > /run/oomdelayfs/shadow/app/memory.oom_delay_millisecs\n"
	"  oomdelayfs --release-all\n"
	"      after a crash: hand every managed cgroup back to the kernel, no mount\n"
	"\n"
	"SIZE is a byte count with an optional K, M, G or T suffix (powers of 1024).\n"
	"\n"
	"Exit status:\n"
	"  0  clean stop (SIGINT/SIGTERM or unmounted), or --release-all done\n"
	"  1  failure while running\n"
	"  2  bad command line\n"
	"  3  not running as root\n"
	"  4  mountpoint missing, not a directory, or busy (already served by oomdelayfs)\n"
	"  5  no cgroup2 mount, or the memory controller is not enabled at the cgroup root\n"
	"  6  FUSE unavailable (/dev/fuse) or the mount failed\n"
	"  75 SIGUSR2: stopped serving, the mount and the holds left to a successor\n"
	"\n"
	"A stale mount of a dead daemon on MOUNTPOINT (\"Transport endpoint is not\n"
	"connected\") is detached lazily and mounted over again.\n"
	"See also: SEMANTICS.md (the contract), the systemd unit oomdelayfs.service.";

bool od_options_parse_size(const char *s, uint64_t *out)
{
	if (!s || !*s)
		return false;
	/* The kernel's memparse syntax, as memory.max takes it; "max" is not a size here. */
	if (od_parse_memory(s, strlen(s), 1, out) != 0 || *out == OE_UNLIMITED)
		return false;
	return true;
}

typedef struct {
	od_options *o;
	gboolean no_allow_other;
} parse_ctx;

static gboolean opt_kill_mode(const gchar *name, const gchar *value, gpointer data, GError **err)
{
	parse_ctx *p = data;
	if (g_strcmp0(value, "kernel") == 0)
		p->o->cfg.kill_mode = OE_KILL_KERNEL;
	else if (g_strcmp0(value, "group") == 0)
		p->o->cfg.kill_mode = OE_KILL_GROUP;
	else {
		g_set_error(err, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "%s: \"%s\" is neither \"kernel\" nor \"group\"", name, value);
		return FALSE;
	}
	return TRUE;
}

static gboolean opt_size(const gchar *name, const gchar *value, uint64_t *dst, GError **err)
{
	if (!od_options_parse_size(value, dst)) {
		g_set_error(err, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "%s: \"%s\" is not a size (e.g. 64M, 1G, 4096)", name, value);
		return FALSE;
	}
	return TRUE;
}

static gboolean opt_ceiling(const gchar *name, const gchar *value, gpointer data, GError **err)
{
	parse_ctx *p = data;
	return opt_size(name, value, &p->o->cfg.ceiling_bytes, err);
}

static gboolean opt_margin(const gchar *name, const gchar *value, gpointer data, GError **err)
{
	parse_ctx *p = data;
	return opt_size(name, value, &p->o->cfg.freeze_margin_bytes, err);
}

static gboolean opt_layout(const gchar *name, const gchar *value, gpointer data, GError **err)
{
	parse_ctx *p = data;
	if (strcmp(value, "v2") == 0 || strcmp(value, "v1") == 0) {
		p->o->v1_layout = value[1] == '1';
		return TRUE;
	}
	g_set_error(err, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
		    "%s: \"%s\" is not a layout (v2 or v1)", name, value);
	return FALSE;
}

static gboolean opt_protect(const gchar *name, const gchar *value, gpointer data, GError **err)
{
	parse_ctx *p = data;
	return opt_size(name, value, &p->o->protect_min, err);
}

/* An integer option in [lo, hi], the whole value (no sign on an unsigned range, no
 * blanks, no trailing text): glib's range-checked parser. */
static gboolean opt_int(const gchar *name, const gchar *value, gint64 lo, gint64 hi,
			const char *what, gint64 *out, GError **err)
{
	if (g_ascii_string_to_signed(value, 10, lo, hi, out, NULL))
		return TRUE;
	g_set_error(err, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
		    "%s: \"%s\" is not %s between %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT, name,
		    value, what, lo, hi);
	return FALSE;
}

static gboolean opt_threads(const gchar *name, const gchar *value, gpointer data, GError **err)
{
	gint64 v;
	if (!opt_int(name, value, 1, 1024, "a number of threads", &v, err))
		return FALSE;
	((parse_ctx *)data)->o->max_threads = (unsigned)v;
	return TRUE;
}

static gboolean opt_nice(const gchar *name, const gchar *value, gpointer data, GError **err)
{
	gint64 v;
	if (!opt_int(name, value, -20, 19, "a niceness", &v, err))
		return FALSE;
	((parse_ctx *)data)->o->nice = (int)v;
	return TRUE;
}

static gboolean opt_rt(const gchar *name, const gchar *value, gpointer data, GError **err)
{
	gint64 v;
	if (!opt_int(name, value, 0, 99, "a SCHED_FIFO priority (0: none)", &v, err))
		return FALSE;
	((parse_ctx *)data)->o->rt_priority = (int)v;
	return TRUE;
}

static gboolean opt_watchdog(const gchar *name, const gchar *value, gpointer data, GError **err)
{
	gint64 v;
	if (!opt_int(name, value, 0, 3600, "a number of seconds (0: none)", &v, err))
		return FALSE;
	((parse_ctx *)data)->o->watchdog_sec = (int)v;
	return TRUE;
}

int od_options_parse(od_options *o, int argc, char **argv, GError **err)
{
	memset(o, 0, sizeof *o);
	oe_config_defaults(&o->cfg);
	o->nice = -20;
	o->rt_priority = 1;
	o->allow_other = true;
	o->foreground = true;

	parse_ctx p = { .o = o };
	gboolean fg = FALSE, debug = FALSE, release = FALSE, version = FALSE, supervise = FALSE;
	char **rest = NULL;
	GOptionEntry entries[] = {
		{ "cgroup-root", 0, 0, G_OPTION_ARG_FILENAME, &o->cgroup_root,
		  "The real cgroup-v2 directory to serve (a cgroup2 mount or a cgroup in it). "
		  "Default: the cgroup2 mount from the mount table (libcgroup, then "
		  "/proc/self/mountinfo).", "PATH" },
		{ "kill-mode", 0, 0, G_OPTION_ARG_CALLBACK, (gpointer)opt_kill_mode,
		  "How a hold whose delay is over is resolved: \"kernel\" (default; real memory.max is "
		  "written back to L and the kernel's OOM killer chooses the victim) or \"group\" "
		  "(cgroup.kill: every process of the cgroup and its descendants).", "kernel|group" },
		{ "ceiling", 0, 0, G_OPTION_ARG_CALLBACK, (gpointer)opt_ceiling,
		  "Safety ceiling: while a cgroup is managed its real memory.max is L + SIZE, the "
		  "kernel's backstop if throttling and freezing are not enough (a kill past it is "
		  "logged as a broken promise). Default 64M.", "SIZE" },
		{ "freeze-margin", 0, 0, G_OPTION_ARG_CALLBACK, (gpointer)opt_margin,
		  "Freeze a held cgroup (cgroup.freeze) whose usage passes L + SIZE; it is thawed when "
		  "the hold ends. Default 8M.", "SIZE" },
		{ "max-threads", 0, 0, G_OPTION_ARG_CALLBACK, (gpointer)opt_threads,
		  "Bound on FUSE worker threads (a blocking memory.max write pins one). Default 16.", "N" },
		{ "layout", 0, 0, G_OPTION_ARG_CALLBACK, (gpointer)opt_layout,
		  "\"v2\" (default): the real cgroup-v2 files plus the synthetic ones. \"v1\": the "
		  "cgroup-v1 memory layout legacy tools expect (memory.limit_in_bytes, "
		  "memory.usage_in_bytes, tasks, ... mapped to the v2 files; see the README's table).",
		  "v2|v1" },
		{ "protect", 0, 0, G_OPTION_ARG_CALLBACK, (gpointer)opt_protect,
		  "Move the daemon into a cgroup of its own (oomdelayfs.daemon under the cgroup root) "
		  "with memory.min = SIZE, so that it keeps its memory under global pressure. "
		  "Default: stay in the cgroup it was started in (systemd's MemoryMin= does the same).",
		  "SIZE" },
		{ "nice", 0, 0, G_OPTION_ARG_CALLBACK, (gpointer)opt_nice,
		  "Scheduling niceness of the watcher and the kill path. Default -20: when the "
		  "deadline comes the kill must not wait for the CPU behind the workloads (under "
		  "global memory pressure they spend it in reclaim). The FUSE workers keep the "
		  "niceness the daemon was started with.", "N" },
		{ "rt-priority", 0, 0, G_OPTION_ARG_CALLBACK, (gpointer)opt_rt,
		  "SCHED_FIFO priority of the deadline thread (it samples held cgroups and decides "
		  "each kill) and of the actuator reserved for kills. Default 1, the lowest real-time "
		  "priority: above every normal task, so a deadline does not wait for a CPU behind "
		  "the workloads or the daemon's own knob writes; the kernel's real-time throttle "
		  "still leaves 5% of each CPU to the rest. 0: no real-time, --nice only.", "N" },
		{ "no-allow-other", 0, 0, G_OPTION_ARG_NONE, &p.no_allow_other,
		  "Serve only root (no allow_other). By default every user may use the shadow tree "
		  "and the kernel checks them against the real owners and modes (default_permissions).",
		  NULL },
		{ "foreground", 'f', 0, G_OPTION_ARG_NONE, &fg,
		  "Stay in the foreground. Always the case: there is no daemonising mode; run it "
		  "under systemd (Type=simple) or a supervisor.", NULL },
		{ "debug", 'd', 0, G_OPTION_ARG_NONE, &debug,
		  "Debug messages from the daemon and libfuse's request trace.", NULL },
		{ "release-all", 0, 0, G_OPTION_ARG_NONE, &release,
		  "Do not mount: hand every managed cgroup back to the kernel from its persisted "
		  "state (holds whose deadline passed are finished first, per the kill mode), "
		  "thaw, remove the state, and exit. For ExecStopPost after a crash.", NULL },
		{ "supervise", 0, 0, G_OPTION_ARG_NONE, &supervise,
		  "Run as the supervisor of a server started with the same arguments: it keeps the "
		  "FUSE connection between servers (as systemd's file descriptor store does) and "
		  "starts the server again when it dies, so mounts and bind mounts survive a crash. "
		  "SIGUSR2 to it: upgrade (the server exits keeping the mount, the supervisor "
		  "re-executes its binary from the same path and starts the new server). SIGTERM: "
		  "orderly stop. For hosts without systemd.", NULL },
		{ "watchdog-sec", 0, 0, G_OPTION_ARG_CALLBACK, (gpointer)opt_watchdog,
		  "With --supervise: the server must report itself alive (its deadline thread "
		  "beating) within N seconds, or the supervisor kills it and starts it again with "
		  "the kept connection, as systemd's WatchdogSec= does. Default 0: none.", "N" },
		{ "version", 'V', 0, G_OPTION_ARG_NONE, &version, "Print the version and exit.", NULL },
		{ G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &rest, NULL, NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	GOptionContext *ctx = g_option_context_new("MOUNTPOINT");
	GOptionGroup *grp = g_option_group_new("oomdelayfs", "oomdelayfs options", "Options", &p, NULL);
	g_option_group_add_entries(grp, entries);
	g_option_context_set_main_group(ctx, grp);
	g_option_context_set_summary(ctx, summary);
	g_option_context_set_description(ctx, description);
	g_option_context_set_strict_posix(ctx, FALSE);

	char **args = g_new0(char *, argc + 1);
	for (int i = 0; i < argc; i++)
		args[i] = argv[i];
	int n = argc;
	char **a = args;
	gboolean ok = g_option_context_parse(ctx, &n, &a, err);
	g_free(args);
	g_option_context_free(ctx);
	if (!ok) {
		g_strfreev(rest);
		return OD_EXIT_USAGE;
	}
	o->debug = debug;
	o->release_all = release;
	o->version = version;
	o->supervise = supervise;
	o->allow_other = !p.no_allow_other;

	guint nrest = rest ? g_strv_length(rest) : 0;
	if (!version) {
		if (nrest > 1) {
			g_set_error(err, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
				    "one MOUNTPOINT expected, got %u arguments", nrest);
		} else if (nrest == 0 && !release) {
			g_set_error(err, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
				    "MOUNTPOINT missing (see --help)");
		} else if (supervise && release) {
			g_set_error(err, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
				    "--supervise and --release-all exclude each other");
		} else if (nrest == 1 && release) {
			g_set_error(err, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
				    "--release-all takes no MOUNTPOINT (it does not mount)");
		}
	}
	if (nrest == 1 && !release)
		o->mountpoint = g_strdup(rest[0]);
	g_strfreev(rest);
	if (err && *err) {
		od_options_clear(o);
		return OD_EXIT_USAGE;
	}
	return OD_EXIT_OK;
}

void od_options_clear(od_options *o)
{
	g_clear_pointer(&o->mountpoint, g_free);
	g_clear_pointer(&o->cgroup_root, g_free);
}
