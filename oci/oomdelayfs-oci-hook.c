/* oomdelayfs-oci-hook - the OCI createRuntime hook that connects a container to the
 * oomdelayfs shadow tree (docs/CONTAINERS.md).
 *
 * usage: oomdelayfs-oci-hook [--shadow DIR] [--cgroup-prefix PATH] [--no-mount]
 *   reads the container's state (OCI runtime-spec "State") on stdin
 *
 * For a container whose config.json asks (ocispec.h), before its first process runs:
 *   1. finds its cgroup from its init process: /proc/<state.pid>/cgroup, read in the hook's
 *      own cgroup namespace (the runtime's), so the same under the cgroupfs and the systemd
 *      drivers, whatever cgroupsPath said;
 *   2. checks that DIR/<cgroup> (DIR: the daemon's mount point, default /run/oomdelayfs/shadow;
 *      PATH: the cgroup DIR serves, default /) is an oomdelayfs mount that lists that pid;
 *   3. writes memory.oom_delay_millisecs and memory.oom_control = 1 there;
 *   4. mounts the shadow of what the runtime's cgroup2 mount at /sys/fs/cgroup shows (that
 *      directory with a cgroup namespace; the whole tree without one, as runc does) over it,
 *      on top (the cgroup2 mount stays underneath, visible in /proc/self/mountinfo), with
 *      the read-only/nosuid/nodev/noexec flags the runtime gives it; not done if the
 *      container has no cgroup2 mount at /sys/fs/cgroup, with --no-mount, or for a container
 *      annotated org.oomdelayfs.mount=false (systemd inside needs statfs to say cgroup2).
 * A container that asks for nothing is left alone (exit 0 at once). Any failure exits 1
 * with the reason on stderr, which the runtime reports; the container does not start.
 *
 * Why createRuntime (measured with runc 1.1.5 and crun 1.8.1, tests/vm/experiments/x-hook-stages.sh):
 * both run it in the runtime's namespaces after the init process joined its cgroup, after
 * the limits were written, and after the container's mounts (its cgroup2 at
 * <rootfs>/sys/fs/cgroup) were made in its mount namespace, before pivot_root and before
 * the user's process. createContainer runs inside the container's namespaces (crun passes
 * pid 0); startContainer needs the hook binary inside the container's root.
 */
#include "ocispec.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <linux/openat2.h>
#include <unistd.h>

#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

static char *opt_shadow = NULL;
static char *opt_prefix = NULL;
static gboolean opt_no_mount = FALSE;
static gboolean opt_version = FALSE;

static GOptionEntry entries[] = {
	{ "shadow", 0, 0, G_OPTION_ARG_FILENAME, &opt_shadow,
	  "The oomdelayfs mount point. Default /run/oomdelayfs/shadow.", "DIR" },
	{ "cgroup-prefix", 0, 0, G_OPTION_ARG_STRING, &opt_prefix,
	  "The cgroup the shadow's root is (the daemon's --cgroup-root, as a cgroup path). Default /.",
	  "PATH" },
	{ "no-mount", 0, 0, G_OPTION_ARG_NONE, &opt_no_mount,
	  "Apply the settings only; leave the container's /sys/fs/cgroup as the runtime made it.", NULL },
	{ "version", 'V', 0, G_OPTION_ARG_NONE, &opt_version, "Print the version and exit.", NULL },
	{ NULL, 0, 0, 0, NULL, NULL, NULL }
};

static int die(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static int die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs(OCISPEC_HOOK_NAME ": ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static char *read_stdin(gsize *len)
{
	GString *s = g_string_new(NULL);
	char buf[4096];
	for (;;) {
		ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || s->len > OCISPEC_MAX_JSON) /* too large: ocispec_load_data says so */
			break;
		g_string_append_len(s, buf, n);
	}
	*len = s->len;
	return g_string_free(s, FALSE);
}

/* The cgroup-v2 path of `pid` ("0::/a/b" in /proc/<pid>/cgroup), or NULL with a message. */
static char *cgroup_of(gint64 pid)
{
	g_autofree char *path = g_strdup_printf("/proc/%" G_GINT64_FORMAT "/cgroup", pid);
	g_autofree char *text = NULL;
	g_autoptr(GError) e = NULL;
	if (!g_file_get_contents(path, &text, NULL, &e)) {
		die("%s", e->message);
		return NULL;
	}
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l != NULL; l++)
		if (g_str_has_prefix(*l, "0::/"))
			return g_strdup(*l + 3); /* checked by ocispec_shadow_dir */
	die("%s has no cgroup-v2 line (a cgroup-v1 or hybrid host?)", path);
	return NULL;
}

/* TRUE if `dir`/cgroup.procs (read through the shadow: pids of our namespace) lists pid. */
static gboolean lists_pid(const char *dir, gint64 pid)
{
	g_autofree char *procs = g_build_filename(dir, "cgroup.procs", NULL);
	g_autofree char *text = NULL;
	if (!g_file_get_contents(procs, &text, NULL, NULL))
		return FALSE;
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l != NULL; l++)
		if (**l != '\0' && g_ascii_strtoll(*l, NULL, 10) == pid)
			return TRUE;
	return FALSE;
}

static int write_knob(const char *dir, const char *name, const char *value)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return die("open %s: %s", path, g_strerror(errno));
	ssize_t n = write(fd, value, strlen(value));
	int e = errno;
	close(fd);
	if (n < 0)
		return die("write %s to %s: %s", value, path, g_strerror(e));
	if ((size_t)n != strlen(value))
		return die("write %s to %s: %zd bytes taken", value, path, n);
	return 0;
}

/* The container's root as seen in its mount namespace before pivot_root: root.path,
 * relative to the bundle unless absolute. */
static char *rootfs_of(JsonObject *config, const char *bundle)
{
	JsonObject *root = ocispec_object_at(config, "root");
	const char *p = root ? json_object_get_string_member_with_default(root, "path", NULL) : NULL;
	if (p == NULL)
		return NULL;
	return g_path_is_absolute(p) ? g_strdup(p) : g_build_filename(bundle, p, NULL);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}
#define AUTOFD __attribute__((cleanup(close_fd)))

/* The shadow directory that shows what the runtime's cgroup2 mount at <rootfs>/sys/fs/cgroup
 * shows: the root of that mount in the init's mount table (its cgroup with a cgroup namespace;
 * "/", the whole tree, without one under runc), mapped like the container's cgroup. NULL
 * (with the reason on stderr) when there is nothing to cover. */
static char *view_of(gint64 pid, const char *rootfs, const char *shadow, const char *prefix)
{
	g_autofree char *path = g_strdup_printf("/proc/%" G_GINT64_FORMAT "/mountinfo", pid);
	g_autofree char *text = NULL;
	g_autoptr(GError) e = NULL;
	if (!g_file_get_contents(path, &text, NULL, &e)) {
		fprintf(stderr, OCISPEC_HOOK_NAME ": %s; /sys/fs/cgroup left as it is\n", e->message);
		return NULL;
	}
	char real[PATH_MAX];
	g_autofree char *mp = g_build_filename(realpath(rootfs, real) ? real : rootfs, "sys/fs/cgroup", NULL);
	g_autofree char *type = NULL;
	g_autofree char *root = ocispec_mount_root(text, mp, &type);
	if (root == NULL || g_strcmp0(type, "cgroup2") != 0) {
		fprintf(stderr, OCISPEC_HOOK_NAME ": %s is not a cgroup2 mount in the container; "
			"settings applied, /sys/fs/cgroup left as it is\n", mp);
		return NULL;
	}
	char *view = ocispec_shadow_dir(shadow, prefix, root, &e);
	if (view == NULL)
		fprintf(stderr, OCISPEC_HOOK_NAME ": the container's cgroup2 mount shows %s: %s; "
			"settings applied, /sys/fs/cgroup left as it is\n", root, e->message);
	return view;
}

/* Bind `view` (resolved here, in the runtime's mount namespace) over <rootfs>/sys/fs/cgroup in
 * the mount namespace of `pid`, with `attrs` (MOUNT_ATTR_*) and the flags the runtime's mount
 * has now. A detached clone (open_tree) is made first and moved in after setns: the shadow need
 * not be visible from the container's namespace. The target is resolved below <rootfs>
 * without following symlinks (openat2): before pivot_root the container's namespace still
 * holds the host's tree, and an image's symlink must not lead the mount there. */
static int mount_over(const char *view, gint64 pid, const char *rootfs, guint64 attrs)
{
	AUTOFD int tree = open_tree(AT_FDCWD, view, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0)
		return die("open_tree %s: %s", view, g_strerror(errno));
	g_autofree char *ns = g_strdup_printf("/proc/%" G_GINT64_FORMAT "/ns/mnt", pid);
	AUTOFD int nsfd = open(ns, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0)
		return die("open %s: %s", ns, g_strerror(errno));
	if (setns(nsfd, CLONE_NEWNS) != 0)
		return die("setns %s: %s", ns, g_strerror(errno));

	AUTOFD int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return die("open %s in the container's mount namespace: %s", rootfs, g_strerror(errno));
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH };
	AUTOFD int target = (int)syscall(SYS_openat2, root, "sys/fs/cgroup", &how, sizeof(how));
	if (target < 0)
		return die("%s/sys/fs/cgroup in the container: %s", rootfs, g_strerror(errno));
	struct statfs sf;
	if (fstatfs(target, &sf) != 0)
		return die("statfs %s/sys/fs/cgroup: %s", rootfs, g_strerror(errno));
	if ((unsigned long)sf.f_type == FUSE_SUPER_MAGIC)
		return 0; /* already done: the hook is in the config twice */
	if ((unsigned long)sf.f_type != CGROUP2_SUPER_MAGIC)
		return die("%s/sys/fs/cgroup is no longer the cgroup2 mount", rootfs);
	/* the runtime's flags: those it has set by now, and those the config asks for, which
	 * crun applies only after the createRuntime hooks (Docker and CRI mount it read-only) */
	struct statvfs sv;
	if (fstatvfs(target, &sv) != 0)
		return die("statvfs %s/sys/fs/cgroup: %s", rootfs, g_strerror(errno));
	struct mount_attr attr = { .attr_set = attrs };
	if (sv.f_flag & ST_RDONLY)
		attr.attr_set |= MOUNT_ATTR_RDONLY;
	if (sv.f_flag & ST_NOSUID)
		attr.attr_set |= MOUNT_ATTR_NOSUID;
	if (sv.f_flag & ST_NODEV)
		attr.attr_set |= MOUNT_ATTR_NODEV;
	if (sv.f_flag & ST_NOEXEC)
		attr.attr_set |= MOUNT_ATTR_NOEXEC;
	if (attr.attr_set != 0 && mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof(attr)) != 0)
		return die("mount_setattr on the clone of %s: %s", view, g_strerror(errno));
	if (move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
		return die("move_mount %s onto %s/sys/fs/cgroup: %s", view, rootfs, g_strerror(errno));
	return 0;
}

int main(int argc, char **argv)
{
	g_autoptr(GOptionContext) ctx = g_option_context_new("< STATE");
	g_option_context_set_summary(ctx,
		"OCI createRuntime hook: applies a container's disableOOMKiller and the annotations\n"
		OCISPEC_ANN_DELAY " / " OCISPEC_ANN_DISABLE " through the oomdelayfs\n"
		"shadow tree and mounts the container's shadow cgroup over its /sys/fs/cgroup.");
	g_option_context_add_main_entries(ctx, entries, NULL);
	g_option_context_set_description(ctx,
		"A container asks with linux.resources.memory.disableOOMKiller: true or the\n"
		"annotations " OCISPEC_ANN_DISABLE "=true and " OCISPEC_ANN_DELAY "=T;\n"
		OCISPEC_ANN_MOUNT "=false keeps /sys/fs/cgroup as the runtime made it.\n"
		"Install it as a createRuntime hook: packaging/oci/oomdelayfs.json for podman and\n"
		"CRI-O (hooks.d), or through oomdelayfs-runtime for Docker and containerd.\n"
		"The container does not start if the hook fails (exit 1, the reason on stderr).\n"
		"See docs/CONTAINERS.md.");
	g_autoptr(GError) e = NULL;
	if (!g_option_context_parse(ctx, &argc, &argv, &e)) {
		die("%s", e->message);
		return 2;
	}
	if (opt_version) {
		printf(OCISPEC_HOOK_NAME " " OOMD_VERSION "\n");
		return 0;
	}
	const char *shadow = opt_shadow ? opt_shadow : "/run/oomdelayfs/shadow";
	const char *prefix = opt_prefix ? opt_prefix : "/";

	gsize len;
	g_autofree char *text = read_stdin(&len);
	g_autoptr(JsonNode) state = ocispec_load_data(text, (gssize)len, &e);
	if (state == NULL)
		return die("the state on stdin: %s", e->message);
	JsonObject *st = json_node_get_object(state);
	gint64 pid = json_object_get_int_member_with_default(st, "pid", 0);
	const char *bundle = json_object_get_string_member_with_default(st, "bundle", NULL);
	if (pid <= 0 || bundle == NULL)
		return die("the state has no pid or bundle (run as a createRuntime or prestart hook)");

	g_autofree char *cfgpath = g_build_filename(bundle, "config.json", NULL);
	g_autoptr(JsonNode) config = ocispec_load_file(cfgpath, &e);
	if (config == NULL)
		return die("%s", e->message);
	OcispecRequest req;
	if (!ocispec_request(json_node_get_object(config), ocispec_object_at(st, "annotations"), &req, &e))
		return die("%s", e->message);
	if (!ocispec_asks(&req))
		return 0;

	g_autofree char *cg = cgroup_of(pid);
	if (cg == NULL)
		return 1;
	g_autofree char *dir = ocispec_shadow_dir(shadow, prefix, cg, &e);
	if (dir == NULL)
		return die("%s", e->message);
	struct statfs sf;
	if (statfs(dir, &sf) != 0)
		return die("%s: %s (is oomdelayfs serving %s?)", dir, g_strerror(errno), shadow);
	if ((unsigned long)sf.f_type != FUSE_SUPER_MAGIC)
		return die("%s is not on a FUSE mount (is oomdelayfs serving %s?)", dir, shadow);
	if (!lists_pid(dir, pid))
		return die("%s/cgroup.procs does not list the container's pid %" G_GINT64_FORMAT
			   " (wrong --shadow or --cgroup-prefix?)", dir, pid);

	if (req.delay[0] != '\0' && write_knob(dir, "memory.oom_delay_millisecs", req.delay) != 0)
		return 1;
	if (req.disable && write_knob(dir, "memory.oom_control", "1") != 0)
		return 1;
	if (opt_no_mount || !req.mount)
		return 0;
	g_autofree char *rootfs = rootfs_of(json_node_get_object(config), bundle);
	if (rootfs == NULL)
		return die("%s has no root.path", cfgpath);
	g_autofree char *view = view_of(pid, rootfs, shadow, prefix);
	if (view == NULL)
		return 0;
	return mount_over(view, pid, rootfs, ocispec_cgroup_mount_attrs(json_node_get_object(config)));
}
