/* options.c — the command line and the configuration file. --help is the manual:
 * description, every option, examples and exit codes, so that `oomdelayfs --help` is
 * enough to run it. Every option (one table below) is also a key of the file's
 * [oomdelayfs] group; an option given on the command line wins over the file. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "oomd/options.h"
#include "oomd/parse.h"
#include "conffile.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

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
	"The daemon stays in the foreground (systemd Type=notify; logs go to stderr or the\n"
	"journal). It locks its memory, sets its oom_score_adj to -1000 and the niceness\n"
	"of its watcher and kill path to -20 (the deadlines and the kills also run at\n"
	"SCHED_FIFO priority 1), and keeps the state of every managed cgroup\n"
	"in the trusted.oomdelayfs.state extended attribute of the real cgroup directory, so\n"
	"a restarted daemon resumes or finishes every hold.\n"
	"SIGINT/SIGTERM hand every cgroup back to the kernel (real memory.max = L, the\n"
	"user's memory.high, thawed, state removed) and unmount. SIGHUP is ignored.\n"
	"\n"
	"MOUNTPOINT defaults to " OD_MOUNTPOINT_DEFAULT "; a missing MOUNTPOINT is made\n"
	"(mkdir; its parent must exist, but the default's " OD_RUNTIME_DIR " is made too).\n"
	"Every option may also be set in the configuration file " OD_CONFIG_DEFAULT "\n"
	"(glib key file, group [oomdelayfs], key = the long option's name, e.g.\n"
	"\"kill-mode = group\"; \"mountpoint = PATH\"; flags take true or false, and\n"
	"--no-allow-other is \"allow-other = false\"). The command line wins over the file;\n"
	"the systemd unit passes no option, so every key of the file counts.\n"
	"\n"
	"It runs as root. The unit oomdelayfs.service keeps only the 11 capabilities it\n"
	"uses (CapabilityBoundingSet=; CAP_SYS_ADMIN for the mount and trusted.* attributes)\n"
	"with NoNewPrivileges=, a system-call deny list, /dev/fuse as its only device and\n"
	"127.0.0.1 as its only address; SECURITY.md says why each directive is or is not set.\n"
	"\n"
	"oomdelayfs status [--json | --metrics] [--socket PATH]\n"
	"      asks the running daemon over its status socket: every managed cgroup with\n"
	"      L, T, D, its hold and time left, listeners, kills, the last holds' records\n"
	"      and the daemon's health; --json for scripts, --metrics in OpenMetrics text.\n"
	"      Exit status 0, 1 if the daemon cannot be reached, 2 for a bad command line.\n"
	"\n"
	"Under systemd (FileDescriptorStoreMax=) or --supervise the FUSE connection is kept\n"
	"outside the process: after a crash the next server serves the same mount (bind\n"
	"mounts in containers keep working) and holds continue. SIGUSR2: stop serving,\n"
	"keep the mount and every hold, exit 75, so that a successor (a new binary) takes over.\n"
	"SIGTERM from systemd does the same when systemd, asked over D-Bus, has a restart job\n"
	"queued for the unit (systemctl restart, a package upgrade's try-restart); any other\n"
	"SIGTERM (systemctl stop, shutdown, or no answer within 2 s) and SIGINT hand every\n"
	"cgroup back to the kernel and unmount.";


static const char description[] =
	"Examples:\n"
	"  oomdelayfs /run/oomdelayfs/shadow\n"
	"      serve the host's cgroup-v2 tree on /run/oomdelayfs/shadow\n"
	"  oomdelayfs /sys/fs/cgroup\n"
	"      mount over the real tree itself (containers and cgroup-tools see the shadow)\n"
	"  oomdelayfs --kill-mode group --ceiling 128M /run/oomdelayfs/shadow\n"
	"  echo 1000 > /run/oomdelayfs/shadow/app/memory.oom_delay_millisecs\n"
	"  oomdelayfs status --json\n"
	"      the running daemon's managed cgroups and holds, for scripts\n"
	"  oomdelayfs --release-all\n"
	"      after a crash: hand every managed cgroup back to the kernel, no mount\n"
	"\n"
	"SIZE is a byte count with an optional K, M, G or T suffix (powers of 1024).\n"
	"\n"
	"Exit status:\n"
	"  0  clean stop (SIGINT/SIGTERM or unmounted), or --release-all done\n"
	"  1  failure while running\n"
	"  2  bad command line or configuration file (the message names file, line and key)\n"
	"  3  not running as root\n"
	"  4  mountpoint missing, not a directory, or busy (already served by oomdelayfs)\n"
	"  5  no cgroup2 mount, or the memory controller is not enabled at the cgroup root\n"
	"  6  FUSE unavailable (/dev/fuse) or the mount failed\n"
	"  75 SIGUSR2 (or SIGTERM in a restart job): stopped serving, the mount and the holds\n"
	"     left to a successor\n"
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

/* ---- setters: one per option, shared by the command line and the file ---- */

/* `what` names the option in messages: "--kill-mode" or "FILE:LINE: kill-mode". */
typedef gboolean (*od_setter)(od_options *o, const char *what, const char *value, GError **err);

static gboolean bad_value(GError **err, const char *what, const char *value, const char *expect)
{
	g_set_error(err, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "%s: \"%s\" is not %s", what,
		    value, expect);
	return FALSE;
}

static gboolean set_kill_mode(od_options *o, const char *what, const char *v, GError **err)
{
	if (g_strcmp0(v, "kernel") == 0)
		o->cfg.kill_mode = OE_KILL_KERNEL;
	else if (g_strcmp0(v, "group") == 0)
		o->cfg.kill_mode = OE_KILL_GROUP;
	else
		return bad_value(err, what, v, "\"kernel\" or \"group\"");
	return TRUE;
}

static gboolean set_size(const char *what, const char *v, uint64_t *dst, GError **err)
{
	return od_options_parse_size(v, dst) ? TRUE : bad_value(err, what, v, "a size (e.g. 64M, 1G, 4096)");
}

static gboolean set_ceiling(od_options *o, const char *what, const char *v, GError **err)
{
	return set_size(what, v, &o->cfg.ceiling_bytes, err);
}

static gboolean set_margin(od_options *o, const char *what, const char *v, GError **err)
{
	return set_size(what, v, &o->cfg.freeze_margin_bytes, err);
}

static gboolean set_protect(od_options *o, const char *what, const char *v, GError **err)
{
	return set_size(what, v, &o->protect_min, err);
}

static gboolean set_layout(od_options *o, const char *what, const char *v, GError **err)
{
	if (g_strcmp0(v, "v2") != 0 && g_strcmp0(v, "v1") != 0)
		return bad_value(err, what, v, "a layout (v2 or v1)");
	o->v1_layout = v[1] == '1';
	return TRUE;
}

/* An integer in [lo, hi], the whole value (no blanks, no trailing text): glib's
 * range-checked parser. */
static gboolean set_int(const char *what, const char *v, gint64 lo, gint64 hi, const char *kind,
			int *out, GError **err)
{
	gint64 n;
	if (!g_ascii_string_to_signed(v, 10, lo, hi, &n, NULL)) {
		g_set_error(err, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "%s: \"%s\" is not %s between %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT,
			    what, v, kind, lo, hi);
		return FALSE;
	}
	*out = (int)n;
	return TRUE;
}

static gboolean set_threads(od_options *o, const char *what, const char *v, GError **err)
{
	int n;
	if (!set_int(what, v, 1, 1024, "a number of threads", &n, err))
		return FALSE;
	o->max_threads = (unsigned)n;
	return TRUE;
}

static gboolean set_nice(od_options *o, const char *what, const char *v, GError **err)
{
	return set_int(what, v, -20, 19, "a niceness", &o->nice, err);
}

static gboolean set_rt(od_options *o, const char *what, const char *v, GError **err)
{
	return set_int(what, v, 0, 99, "a SCHED_FIFO priority (0: none)", &o->rt_priority, err);
}

static gboolean set_metrics_port(od_options *o, const char *what, const char *v, GError **err)
{
	return set_int(what, v, 0, 65535, "a TCP port (0: no listener)", &o->metrics_port, err);
}

static gboolean set_path(char **dst, const char *v)
{
	g_free(*dst);
	*dst = g_strdup(v);
	return TRUE;
}

static gboolean set_root(od_options *o, const char *what, const char *v, GError **err)
{
	(void)what, (void)err;
	return set_path(&o->cgroup_root, v);
}

static gboolean set_mountpoint(od_options *o, const char *what, const char *v, GError **err)
{
	(void)what, (void)err;
	return set_path(&o->mountpoint, v);
}

static gboolean set_socket(od_options *o, const char *what, const char *v, GError **err)
{
	if (*v && !g_path_is_absolute(v))
		return bad_value(err, what, v, "an absolute path (or empty: no status socket)");
	return set_path(&o->status_socket, v);
}

static gboolean set_group(od_options *o, const char *what, const char *v, GError **err)
{
	(void)what, (void)err;
	return set_path(&o->status_group, *v ? v : NULL);
}

static gboolean set_config(od_options *o, const char *what, const char *v, GError **err)
{
	(void)what, (void)err;
	o->config_given = true;
	return set_path(&o->config, v);
}

/* Flags: "true" or "false" (the command line passes "true", or "false" for a --no-). */
static gboolean flag(const char *what, const char *v, bool *dst, GError **err)
{
	if (g_strcmp0(v, "true") == 0)
		*dst = true;
	else if (g_strcmp0(v, "false") == 0)
		*dst = false;
	else
		return bad_value(err, what, v, "a boolean (true or false)");
	return TRUE;
}

#define FLAG_SETTER(fn, field) \
	static gboolean fn(od_options *o, const char *what, const char *v, GError **err) \
	{ \
		return flag(what, v, &o->field, err); \
	}
FLAG_SETTER(set_allow_other, allow_other)
FLAG_SETTER(set_debug, debug)
FLAG_SETTER(set_release, release_all)
FLAG_SETTER(set_version, version)
FLAG_SETTER(set_foreground, foreground)
FLAG_SETTER(set_no_config, no_config)
FLAG_SETTER(set_supervise, supervise)

static gboolean set_watchdog(od_options *o, const char *what, const char *v, GError **err)
{
	return set_int(what, v, 0, 3600, "a number of seconds (0: none)", &o->watchdog_sec, err);
}

/* ---- the table ---- */

typedef struct {
	const char *name;    /* long option */
	char short_name;
	const char *key;     /* key in the file, NULL: command line only */
	const char *cli_flag; /* a flag: the value the command line gives ("true"/"false") */
	bool filename;
	od_setter set;
	const char *arg, *help;
} od_opt;

static const od_opt opts[] = {
	{ "config", 0, NULL, NULL, true, set_config, "FILE",
	  "Configuration file. Default " OD_CONFIG_DEFAULT " if it exists (a missing FILE "
	  "given here is an error)." },
	{ "no-config", 0, NULL, "true", false, set_no_config, NULL,
	  "Read no configuration file." },
	{ "cgroup-root", 0, "cgroup-root", NULL, true, set_root, "PATH",
	  "The real cgroup-v2 directory to serve (a cgroup2 mount or a cgroup in it). "
	  "Default: the cgroup2 mount from the mount table (libcgroup, then "
	  "/proc/self/mountinfo)." },
	{ "kill-mode", 0, "kill-mode", NULL, false, set_kill_mode, "kernel|group",
	  "How a hold whose delay is over is resolved: \"kernel\" (default; real memory.max is "
	  "written back to L and the kernel's OOM killer chooses one victim; the write is "
	  "stopped after that kill, and usage still over L meets the kernel's charge path) or "
	  "\"group\" (cgroup.kill: every process of the cgroup and its descendants)." },
	{ "ceiling", 0, "ceiling", NULL, false, set_ceiling, "SIZE",
	  "Safety ceiling: while a cgroup is managed its real memory.max is L + SIZE, the "
	  "kernel's backstop if throttling and freezing are not enough (a kill past it is "
	  "logged as a broken promise). Default 64M." },
	{ "freeze-margin", 0, "freeze-margin", NULL, false, set_margin, "SIZE",
	  "Freeze a held cgroup (cgroup.freeze) whose usage passes L + SIZE; it is thawed when "
	  "the hold ends. Default 8M." },
	{ "max-threads", 0, "max-threads", NULL, false, set_threads, "N",
	  "Bound on FUSE worker threads (a blocking memory.max write pins one). Default 16." },
	{ "layout", 0, "layout", NULL, false, set_layout, "v2|v1",
	  "\"v2\" (default): the real cgroup-v2 files plus the synthetic ones. \"v1\": the "
	  "cgroup-v1 memory layout legacy tools expect (memory.limit_in_bytes, "
	  "memory.usage_in_bytes, tasks, ... mapped to the v2 files; see the README's table)." },
	{ "protect", 0, "protect", NULL, false, set_protect, "SIZE",
	  "Move the daemon into a cgroup of its own (oomdelayfs.daemon under the cgroup root) "
	  "with memory.min = SIZE, so that it keeps its memory under global pressure. "
	  "Default: stay in the cgroup it was started in (systemd's MemoryMin= does the same)." },
	{ "nice", 0, "nice", NULL, false, set_nice, "N",
	  "Scheduling niceness of the watcher and the kill path. Default -20: when the "
	  "deadline comes the kill must not wait for the CPU behind the workloads (under "
	  "global memory pressure they spend it in reclaim). The FUSE workers keep the "
	  "niceness the daemon was started with." },
	{ "rt-priority", 0, "rt-priority", NULL, false, set_rt, "N",
	  "SCHED_FIFO priority of the deadline thread (it samples held cgroups and decides "
	  "each kill) and of the actuator reserved for kills. Default 1, the lowest real-time "
	  "priority: above every normal task, so a deadline does not wait for a CPU behind "
	  "the workloads or the daemon's own knob writes; the kernel's real-time throttle "
	  "still leaves 5% of each CPU to the rest. 0: no real-time, --nice only." },
	{ "no-allow-other", 0, "allow-other", "false", false, set_allow_other, NULL,
	  "Serve only root (no allow_other). By default every user may use the shadow tree "
	  "and the kernel checks them against the real owners and modes (default_permissions). "
	  "In the file: allow-other = false." },
	{ "status-socket", 0, "status-socket", NULL, true, set_socket, "PATH",
	  "The UNIX socket `oomdelayfs status` asks. Default " OD_STATUS_SOCKET_DEFAULT " "
	  "(mode 0600, root only); empty: none." },
	{ "status-group", 0, "status-group", NULL, false, set_group, "GROUP",
	  "Let the members of GROUP ask too (the socket and its directory become group-owned, "
	  "mode 0660 and 0750)." },
	{ "metrics-port", 0, "metrics-port", NULL, false, set_metrics_port, "PORT",
	  "Also serve the metrics (OpenMetrics text, GET /metrics) over HTTP on "
	  "127.0.0.1:PORT for a scraper. Default 0: no listener." },
	{ "foreground", 'f', "foreground", "true", false, set_foreground, NULL,
	  "Stay in the foreground. Always the case: there is no daemonising mode; run it "
	  "under systemd or a supervisor." },
	{ "debug", 'd', "debug", "true", false, set_debug, NULL,
	  "Debug messages from the daemon and libfuse's request trace." },
	{ "release-all", 0, NULL, "true", false, set_release, NULL,
	  "Do not mount: hand every managed cgroup back to the kernel from its persisted "
	  "state (holds whose deadline passed are finished first, per the kill mode), "
	  "thaw, remove the state, and exit. After a crash whose mount is not to be kept." },
	{ "supervise", 0, NULL, "true", false, set_supervise, NULL,
	  "Run as the supervisor of a server started with the same arguments: it keeps the "
	  "FUSE connection between servers (as systemd's file descriptor store does) and "
	  "starts the server again when it dies, so mounts and bind mounts survive a crash. "
	  "SIGUSR2 to it: upgrade (the server exits keeping the mount, the supervisor "
	  "re-executes its binary from the same path and starts the new server). SIGTERM: "
	  "orderly stop. For hosts without systemd." },
	{ "watchdog-sec", 0, "watchdog-sec", NULL, false, set_watchdog, "N",
	  "With --supervise: the server must report itself alive (its deadline thread "
	  "beating) within N seconds, or the supervisor kills it and starts it again with "
	  "the kept connection, as systemd's WatchdogSec= does. Default 0: none." },
	{ "version", 'V', NULL, "true", false, set_version, NULL, "Print the version and exit." },
};
#define NOPTS G_N_ELEMENTS(opts)

typedef struct {
	od_options *o;
	bool seen[NOPTS]; /* given on the command line: the file does not override it */
} parse_ctx;

static int opt_index(const char *name)
{
	while (*name == '-')
		name++;
	for (size_t i = 0; i < NOPTS; i++)
		if (name[1] == '\0' ? opts[i].short_name == name[0] : strcmp(opts[i].name, name) == 0)
			return (int)i;
	return -1;
}

static gboolean opt_cb(const gchar *name, const gchar *value, gpointer data, GError **err)
{
	parse_ctx *p = data;
	int i = opt_index(name);
	if (i < 0) {
		g_set_error(err, G_OPTION_ERROR, G_OPTION_ERROR_UNKNOWN_OPTION, "%s: unknown", name);
		return FALSE;
	}
	p->seen[i] = true;
	return opts[i].set(p->o, name, opts[i].cli_flag ? opts[i].cli_flag : value, err);
}

/* ---- the file ---- */

static int file_fail(GError **err, const char *file, int line, const char *key, const char *msg)
{
	g_clear_error(err);
	g_set_error(err, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_PARSE, "%s:%d: %s%s%s", file, line,
		    key ? key : "", key ? ": " : "", msg);
	return OD_EXIT_USAGE;
}

static const od_opt *key_opt(const char *key, size_t *idx)
{
	for (size_t i = 0; i < NOPTS; i++)
		if (opts[i].key && strcmp(opts[i].key, key) == 0) {
			*idx = i;
			return &opts[i];
		}
	return NULL;
}

/* Applies the file's keys that the command line did not give. */
static int load_config(parse_ctx *p, const char *file, bool must_exist, GError **err)
{
	g_autofree char *text = NULL;
	gsize len;
	GError *e = NULL;
	bool missing;
	if (!od_conf_read(file, &text, &len, &missing, &e)) {
		if (missing && !must_exist) {
			g_error_free(e);
			return OD_EXIT_OK;
		}
		g_propagate_error(err, e);
		return OD_EXIT_USAGE;
	}
	g_autoptr(GKeyFile) kf = g_key_file_new();
	if (!g_key_file_load_from_data(kf, text, len, G_KEY_FILE_NONE, &e)) {
		int line = od_conf_line(text, NULL, NULL);
		g_autofree char *m = g_strdup(e->message);
		g_error_free(e);
		return file_fail(err, file, line, NULL, m);
	}
	g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
	for (char **g = groups; *g; g++) {
		if (strcmp(*g, "oomdelayfs") != 0) {
			g_autofree char *m = g_strdup_printf("[%s]: unknown group (the options are in "
							     "[oomdelayfs])", *g);
			return file_fail(err, file, od_conf_line(text, *g, NULL) ?: 1, NULL, m);
		}
	}
	g_auto(GStrv) keys = g_key_file_get_keys(kf, "oomdelayfs", NULL, NULL);
	for (char **k = keys; k && *k; k++) {
		int line = od_conf_line(text, "oomdelayfs", *k);
		size_t i = 0;
		const od_opt *op = key_opt(*k, &i);
		bool is_mnt = strcmp(*k, "mountpoint") == 0;
		if (!op && !is_mnt)
			return file_fail(err, file, line, *k, "unknown key (see oomdelayfs --help)");
		if (op && p->seen[i])
			continue; /* the command line wins */
		g_autofree char *v = NULL;
		if (op && op->cli_flag) {
			gboolean b = g_key_file_get_boolean(kf, "oomdelayfs", *k, &e);
			if (e) {
				g_error_free(e);
				return file_fail(err, file, line, *k, "is not a boolean (true or false)");
			}
			/* allow-other = false is --no-allow-other: the flag's own sense */
			v = g_strdup(b ? "true" : "false");
		} else {
			v = g_key_file_get_string(kf, "oomdelayfs", *k, &e);
			if (!v) {
				g_autofree char *m = g_strdup(e->message);
				g_error_free(e);
				return file_fail(err, file, line, *k, m);
			}
		}
		g_autofree char *what = g_strdup_printf("%s:%d: %s", file, line, *k);
		if (is_mnt)
			set_mountpoint(p->o, what, v, NULL); /* a MOUNTPOINT argument wins later */
		else if (!op->set(p->o, what, v, &e)) {
			g_propagate_error(err, e);
			return OD_EXIT_USAGE;
		}
	}
	return OD_EXIT_OK;
}

int od_options_parse(od_options *o, int argc, char **argv, GError **err)
{
	memset(o, 0, sizeof *o);
	oe_config_defaults(&o->cfg);
	o->nice = -20;
	o->rt_priority = 1;
	o->allow_other = true;
	o->foreground = true;
	o->status_socket = g_strdup(OD_STATUS_SOCKET_DEFAULT);

	parse_ctx p = { .o = o };
	char **rest = NULL;
	GOptionEntry entries[NOPTS + 2];
	for (size_t i = 0; i < NOPTS; i++) {
		const od_opt *d = &opts[i];
		entries[i] = (GOptionEntry){ d->name, d->short_name,
					     (d->cli_flag ? G_OPTION_FLAG_NO_ARG : 0) |
						     (d->filename ? G_OPTION_FLAG_FILENAME : 0),
					     G_OPTION_ARG_CALLBACK, (gpointer)opt_cb, d->help, d->arg };
	}
	entries[NOPTS] = (GOptionEntry){ G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &rest,
					 NULL, NULL };
	entries[NOPTS + 1] = (GOptionEntry){ NULL, 0, 0, 0, NULL, NULL, NULL };
	GOptionContext *ctx = g_option_context_new("[MOUNTPOINT]");
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
	int rc = ok ? OD_EXIT_OK : OD_EXIT_USAGE;
	if (rc == OD_EXIT_OK && !o->version && !o->no_config)
		rc = load_config(&p, o->config ? o->config : OD_CONFIG_DEFAULT, o->config_given, err);
	guint nrest = rest ? g_strv_length(rest) : 0;
	if (rc == OD_EXIT_OK && nrest == 1)
		set_mountpoint(o, NULL, rest[0], NULL);
	g_strfreev(rest);
	if (rc != OD_EXIT_OK || o->version)
		goto out;
	if (nrest > 1) {
		g_set_error(err, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
			    "one MOUNTPOINT expected, got %u arguments", nrest);
	} else if (o->supervise && o->release_all) {
		g_set_error(err, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
			    "--supervise and --release-all exclude each other");
	} else if (o->release_all) {
		if (nrest == 1)
			g_set_error(err, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
				    "--release-all takes no MOUNTPOINT (it does not mount)");
		g_clear_pointer(&o->mountpoint, g_free); /* the file's mountpoint does not count */
	} else if (!o->mountpoint) {
		/* The unit passes nothing the file can set: the file's keys win there. */
		o->mountpoint = g_strdup(OD_MOUNTPOINT_DEFAULT);
		o->mountpoint_default = true;
	}
	if (err && *err)
		rc = OD_EXIT_USAGE;
out:
	if (rc != OD_EXIT_OK)
		od_options_clear(o);
	return rc;
}

void od_options_clear(od_options *o)
{
	g_clear_pointer(&o->mountpoint, g_free);
	g_clear_pointer(&o->cgroup_root, g_free);
	g_clear_pointer(&o->config, g_free);
	g_clear_pointer(&o->status_socket, g_free);
	g_clear_pointer(&o->status_group, g_free);
}
