/* oomdelayfs-runtime - an OCI runtime shim (in the style of nvidia-container-runtime) for
 * engines without hooks.d (Docker, containerd) and for podman's --oom-kill-disable: on
 * `create` and `run` it reads the bundle's config.json and, if the container asks for
 * oomdelayfs (ocispec.h), adds oomdelayfs-oci-hook to hooks.createRuntime and moves
 * disableOOMKiller: true to the org.oomdelayfs.oom_kill_disable annotation (crun refuses the
 * field on cgroup v2, runc ignores it); then it execs the real runtime with the same
 * arguments. A Docker container asks with labels, which the shim copies from dockerd's
 * config.v2.json into the annotations first (dockerlabels.h). Every other command, a
 * container that asks for nothing and a host whose /sys/fs/cgroup is not cgroup v2 go straight
 * through unchanged.
 *
 * Configuration (docs/CONTAINERS.md): the key file /etc/oomdelayfs/runtime.conf
 * (OOMDELAYFS_CONFIG names another):
 *   [runtime]
 *   path=/usr/sbin/runc             # the runtime of oomdelayfs-runtime; default: runc in PATH
 *   crun=/usr/bin/crun              # the runtime of the shim run under another name, here
 *                                   # crun (/usr/libexec/oomdelayfs/crun); default: that name
 *                                   # in PATH
 *   hook=/usr/libexec/oomdelayfs/oomdelayfs-oci-hook
 *   hook-args=--shadow;/run/oomdelayfs/shadow   # a list: extra arguments of the hook
 *   [docker]
 *   data-root=/var/lib/docker       # dockerd's --data-root (default /var/lib/docker)
 * and the environment OOMDELAYFS_RUNTIME (the runtime's path) over the file. The name lets
 * one binary stand in for each engine's own runtime: Docker and containerd run runc by
 * default on Debian 12, podman crun, and podman knows its runtime's features by its name.
 * Errors in the config.json edit are reported on stderr and fail the create (exit 1): a
 * container that asked to be protected must not start unprotected.
 */
#include "dockerlabels.h"
#include "ocispec.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif
#ifndef OOMD_LIBEXECDIR
#define OOMD_LIBEXECDIR "/usr/libexec/oomdelayfs"
#endif

#define SHIM "oomdelayfs-runtime"

typedef struct {
	char *runtime;
	char *hook;
	char **hook_args; /* without argv[0] */
	char *docker_root;
} ShimConfig;

static void shim_config_clear(ShimConfig *c)
{
	g_free(c->runtime);
	g_free(c->hook);
	g_strfreev(c->hook_args);
	g_free(c->docker_root);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(ShimConfig, shim_config_clear)

/* TRUE if `path` is this program (a runtime setting that names the shim would exec it forever). */
static gboolean is_self(const char *path)
{
	struct stat a, b;
	return stat(path, &a) == 0 && stat("/proc/self/exe", &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* `name` in PATH, skipping this program under that name (/usr/libexec/oomdelayfs/crun is
 * the shim; the runtime is the next crun). */
static char *find_runtime(const char *name)
{
	const char *path = g_getenv("PATH");
	g_auto(GStrv) dirs = g_strsplit(path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", ":", -1);
	for (char **d = dirs; *d != NULL; d++) {
		g_autofree char *p = g_build_filename(**d ? *d : ".", name, NULL);
		if (g_file_test(p, G_FILE_TEST_IS_EXECUTABLE) && !g_file_test(p, G_FILE_TEST_IS_DIR) && !is_self(p))
			return g_steal_pointer(&p);
	}
	return NULL;
}

/* `self`: the name the shim was run under (argv[0]'s last component). */
static gboolean load_config(ShimConfig *c, const char *self, GError **error)
{
	const char *file = g_getenv("OOMDELAYFS_CONFIG");
	if (file == NULL)
		file = "/etc/oomdelayfs/runtime.conf";
	/* run as oomdelayfs-runtime: path= and runc; run as crun (or any other name): that key
	 * and that name */
	gboolean as_shim = g_str_has_prefix(self, SHIM);
	const char *key = as_shim ? "path" : self;
	const char *name = as_shim ? "runc" : self;
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) e = NULL;
	if (!g_key_file_load_from_file(kf, file, G_KEY_FILE_NONE, &e)) {
		if (!g_error_matches(e, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
			g_propagate_prefixed_error(error, g_steal_pointer(&e), "%s: ", file);
			return FALSE;
		}
	} else {
		c->runtime = g_key_file_get_string(kf, "runtime", key, NULL);
		c->hook = g_key_file_get_string(kf, "runtime", "hook", NULL);
		c->hook_args = g_key_file_get_string_list(kf, "runtime", "hook-args", NULL, NULL);
		c->docker_root = g_key_file_get_string(kf, "docker", "data-root", NULL);
	}
	if (g_getenv("OOMDELAYFS_RUNTIME") != NULL) {
		g_free(c->runtime);
		c->runtime = g_strdup(g_getenv("OOMDELAYFS_RUNTIME"));
	}
	if (c->runtime == NULL)
		c->runtime = find_runtime(name);
	if (c->runtime == NULL) {
		g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
			    "no runtime: %s not in PATH; set %s= in [runtime] of %s or OOMDELAYFS_RUNTIME",
			    name, key, file);
		return FALSE;
	}
	if (c->hook == NULL)
		c->hook = g_build_filename(OOMD_LIBEXECDIR, OCISPEC_HOOK_NAME, NULL);
	if (c->docker_root == NULL)
		c->docker_root = g_strdup("/var/lib/docker");
	return TRUE;
}

/* Reads a file of dockerd's: a regular file owned by root that no one else may write, in a
 * directory that no one else may write (docs/SECURITY.md). NULL, without an error if it does
 * not exist. */
static JsonNode *load_root_file(const char *path, GError **error)
{
	g_autofree char *dir = g_path_get_dirname(path);
	struct stat ds, fs;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		if (err != ENOENT)
			g_set_error(error, G_IO_ERROR, g_io_error_from_errno(err), "%s: %s", path, g_strerror(err));
		return NULL;
	}
	gboolean ok = fstat(fd, &fs) == 0 && stat(dir, &ds) == 0 && S_ISREG(fs.st_mode) &&
		      fs.st_uid == 0 && (fs.st_mode & 022) == 0 && ds.st_uid == 0 && (ds.st_mode & 022) == 0;
	g_autoptr(GString) text = g_string_new(NULL);
	char buf[8192];
	ssize_t n;
	while (ok && text->len <= OCISPEC_MAX_JSON && (n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ok = FALSE;
		else
			g_string_append_len(text, buf, n);
	}
	close(fd);
	if (!ok) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
			    "%s: not a file only root writes, in a directory only root writes, or unreadable", path);
		return NULL;
	}
	JsonNode *root = ocispec_load_data(text->str, (gssize)text->len, error);
	if (root == NULL)
		g_prefix_error(error, "%s: ", path);
	return root;
}

/* The labels of ours of Docker's container `id` (dockerlabels.h): a new object, or NULL, with
 * an error on failure, without one if `id` is no container of this dockerd. */
static JsonObject *docker_labels(const ShimConfig *c, const char *id, GError **error)
{
	if (!dockerlabels_is_id(id))
		return NULL;
	g_autofree char *path = dockerlabels_container_path(c->docker_root, id);
	g_autoptr(JsonNode) ctr = load_root_file(path, error);
	if (ctr == NULL)
		return NULL;
	g_autofree char *ipath = dockerlabels_image_path(json_node_get_object(ctr), c->docker_root, error);
	if (ipath == NULL && error != NULL && *error != NULL)
		return NULL;
	g_autoptr(JsonNode) img = NULL;
	if (ipath != NULL) {
		img = load_root_file(ipath, error);
		if (img == NULL && *error == NULL)
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "%s: the container's image is gone", ipath);
		if (img == NULL)
			return NULL;
	}
	return dockerlabels_request(json_node_get_object(ctr), id, img ? json_node_get_object(img) : NULL, error);
}

/* A cgroup-v2 host: cgroup2 on /sys/fs/cgroup, or oomdelayfs mounted over it (FUSE). */
static gboolean cgroup2_host(void)
{
	struct statfs sf;
	return statfs("/sys/fs/cgroup", &sf) == 0 &&
	       ((unsigned long)sf.f_type == CGROUP2_SUPER_MAGIC || (unsigned long)sf.f_type == FUSE_SUPER_MAGIC);
}

/* A refusal, on stderr and, when the engine gave the runtime a log file, there as runc writes
 * its errors: containerd-shim-runc-v2 reads the last error from that file for the message
 * Docker prints, and without it said only "unable to retrieve OCI runtime error (open
 * .../log.json: no such file or directory)" (e-docker, the image's label refused). */
static char *log_path;
static gboolean log_json;

static void G_GNUC_PRINTF(1, 2) refuse(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	fprintf(stderr, SHIM ": %s\n", msg);
	if (log_path == NULL)
		return;
	int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	g_autoptr(GDateTime) now = g_date_time_new_now_utc();
	g_autofree char *when = g_date_time_format_iso8601(now);
	g_autofree char *full = g_strconcat(SHIM ": ", msg, NULL);
	g_autofree char *line = NULL;
	if (log_json) {
		g_autoptr(JsonBuilder) b = json_builder_new();
		json_builder_begin_object(b);
		json_builder_set_member_name(b, "level");
		json_builder_add_string_value(b, "error");
		json_builder_set_member_name(b, "msg");
		json_builder_add_string_value(b, full);
		json_builder_set_member_name(b, "time");
		json_builder_add_string_value(b, when);
		json_builder_end_object(b);
		g_autoptr(JsonNode) n = json_builder_get_root(b);
		g_autofree char *j = json_to_string(n, FALSE);
		line = g_strconcat(j, "\n", NULL);
	} else {
		g_autofree char *q = g_strescape(full, NULL);
		line = g_strdup_printf("time=\"%s\" level=error msg=\"%s\"\n", when, q);
	}
	if (write(fd, line, strlen(line)) < 0) {
		/* stderr has it */
	}
	close(fd);
}

/* Edits the bundle's config.json if the container asks; FALSE with a message on failure. */
static gboolean prepare_bundle(const ShimConfig *c, const char *bundle, const char *id)
{
	g_autofree char *path = g_build_filename(bundle, "config.json", NULL);
	g_autoptr(GError) e = NULL;
	g_autoptr(JsonNode) root = ocispec_load_file(path, &e);
	if (root == NULL) {
		refuse("%s", e->message);
		return FALSE;
	}
	JsonObject *config = json_node_get_object(root);
	g_autoptr(JsonObject) labels = id ? docker_labels(c, id, &e) : NULL;
	if (e != NULL) {
		refuse("Docker container %.12s: %s", id, e->message);
		return FALSE;
	}
	if (labels != NULL)
		dockerlabels_merge(config, labels);
	OcispecRequest req;
	if (!ocispec_request(config, NULL, &req, &e)) {
		refuse("%s: %s", path, e->message);
		return FALSE;
	}
	if (!ocispec_asks(&req))
		return TRUE;
	g_autoptr(GPtrArray) args = g_ptr_array_new();
	g_ptr_array_add(args, (gpointer)OCISPEC_HOOK_NAME);
	for (char **a = c->hook_args; a != NULL && *a != NULL; a++)
		g_ptr_array_add(args, *a);
	g_ptr_array_add(args, NULL);
	ocispec_add_hook(config, c->hook, (const char *const *)args->pdata, 10);
	if (req.mount)
		ocispec_ensure_cgroup_mount(config);
	if (!ocispec_save(root, path, &e)) {
		refuse("%s", e->message);
		return FALSE;
	}
	return TRUE;
}

int main(int argc, char **argv)
{
	g_auto(ShimConfig) c = { 0 };
	g_autoptr(GError) e = NULL;
	g_autofree char *self = g_path_get_basename(argv[0]);
	if (!load_config(&c, self, &e)) {
		fprintf(stderr, SHIM ": %s\n", e->message);
		return 1;
	}
	log_path = ocispec_log_of(argc, argv, &log_json);
	g_autofree char *bundle = ocispec_bundle_of(argc, argv);
	g_autofree char *id = ocispec_container_id_of(argc, argv);
	if (bundle != NULL && cgroup2_host() && !prepare_bundle(&c, bundle, id))
		return 1;
	if (is_self(c.runtime)) {
		fprintf(stderr, SHIM ": the runtime %s is this shim itself; set path= to runc or crun\n", c.runtime);
		return 1;
	}
	argv[0] = c.runtime;
	execv(c.runtime, argv);
	fprintf(stderr, SHIM ": exec %s: %s\n", c.runtime, g_strerror(errno));
	return 127;
}
