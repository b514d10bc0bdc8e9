/* oomdelayfs-runtime - an OCI runtime shim (in the style of nvidia-container-runtime) for
 * Docker and containerd, which have no hooks.d: on `create` and `run` it reads the bundle's
 * config.json and, if the container asks for oomdelayfs (ocispec.h), adds
 * oomdelayfs-oci-hook to hooks.createRuntime and moves disableOOMKiller: true to the
 * org.oomdelayfs.oom_kill_disable annotation (crun refuses the field on cgroup v2, runc
 * ignores it); then it execs the real runtime with the same arguments. Every other
 * command, a container that asks for nothing and a host whose /sys/fs/cgroup is not
 * cgroup v2 go straight through unchanged.
 *
 * Configuration (docs/CONTAINERS.md): the key file /etc/oomdelayfs/runtime.conf
 * (OOMDELAYFS_CONFIG names another):
 *   [runtime]
 *   path=/usr/sbin/runc                         # or /usr/bin/crun; default: runc in PATH
 *   hook=/usr/libexec/oomdelayfs/oomdelayfs-oci-hook
 *   hook-args=--shadow;/run/oomdelayfs/shadow   # a list: extra arguments of the hook
 * and the environment OOMDELAYFS_RUNTIME (the runtime's path) over the file.
 * Errors in the config.json edit are reported on stderr and fail the create (exit 1): a
 * container that asked to be protected must not start unprotected.
 */
#include "ocispec.h"

#include <errno.h>
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
} ShimConfig;

static void shim_config_clear(ShimConfig *c)
{
	g_free(c->runtime);
	g_free(c->hook);
	g_strfreev(c->hook_args);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(ShimConfig, shim_config_clear)

static gboolean load_config(ShimConfig *c, GError **error)
{
	const char *file = g_getenv("OOMDELAYFS_CONFIG");
	if (file == NULL)
		file = "/etc/oomdelayfs/runtime.conf";
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) e = NULL;
	if (!g_key_file_load_from_file(kf, file, G_KEY_FILE_NONE, &e)) {
		if (!g_error_matches(e, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
			g_propagate_prefixed_error(error, g_steal_pointer(&e), "%s: ", file);
			return FALSE;
		}
	} else {
		c->runtime = g_key_file_get_string(kf, "runtime", "path", NULL);
		c->hook = g_key_file_get_string(kf, "runtime", "hook", NULL);
		c->hook_args = g_key_file_get_string_list(kf, "runtime", "hook-args", NULL, NULL);
	}
	if (g_getenv("OOMDELAYFS_RUNTIME") != NULL) {
		g_free(c->runtime);
		c->runtime = g_strdup(g_getenv("OOMDELAYFS_RUNTIME"));
	}
	if (c->runtime == NULL)
		c->runtime = g_find_program_in_path("runc");
	if (c->runtime == NULL) {
		g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
			    "no runtime: set path= in %s or OOMDELAYFS_RUNTIME", file);
		return FALSE;
	}
	if (c->hook == NULL)
		c->hook = g_build_filename(OOMD_LIBEXECDIR, OCISPEC_HOOK_NAME, NULL);
	return TRUE;
}

/* A cgroup-v2 host: cgroup2 on /sys/fs/cgroup, or oomdelayfs mounted over it (FUSE). */
static gboolean cgroup2_host(void)
{
	struct statfs sf;
	return statfs("/sys/fs/cgroup", &sf) == 0 &&
	       ((unsigned long)sf.f_type == CGROUP2_SUPER_MAGIC || (unsigned long)sf.f_type == FUSE_SUPER_MAGIC);
}

/* TRUE if `path` is this program (a runtime setting that names the shim would exec it forever). */
static gboolean is_self(const char *path)
{
	struct stat a, b;
	return stat(path, &a) == 0 && stat("/proc/self/exe", &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* Edits the bundle's config.json if the container asks; FALSE with a message on failure. */
static gboolean prepare_bundle(const ShimConfig *c, const char *bundle)
{
	g_autofree char *path = g_build_filename(bundle, "config.json", NULL);
	g_autoptr(GError) e = NULL;
	g_autoptr(JsonNode) root = ocispec_load_file(path, &e);
	if (root == NULL) {
		fprintf(stderr, SHIM ": %s\n", e->message);
		return FALSE;
	}
	JsonObject *config = json_node_get_object(root);
	OcispecRequest req;
	if (!ocispec_request(config, NULL, &req, &e)) {
		fprintf(stderr, SHIM ": %s: %s\n", path, e->message);
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
	if (!ocispec_save(root, path, &e)) {
		fprintf(stderr, SHIM ": %s\n", e->message);
		return FALSE;
	}
	return TRUE;
}

int main(int argc, char **argv)
{
	g_auto(ShimConfig) c = { 0 };
	g_autoptr(GError) e = NULL;
	if (!load_config(&c, &e)) {
		fprintf(stderr, SHIM ": %s\n", e->message);
		return 1;
	}
	g_autofree char *bundle = ocispec_bundle_of(argc, argv);
	if (bundle != NULL && cgroup2_host() && !prepare_bundle(&c, bundle))
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
