/* ocispec - what a container's OCI configuration asks of oomdelayfs, and the small edits
 * the runtime shim makes to it. Shared by oomdelayfs-oci-hook and oomdelayfs-runtime.
 *
 * Contract: single-threaded callers (both programs are); nothing here blocks but the
 * file reads and the one file write of ocispec_save(). Errors come back as GError
 * (domain G_IO_ERROR for files, JSON_PARSER_ERROR for bad JSON, OCISPEC_ERROR for a
 * value of ours that does not parse); nothing here exits.
 *
 * A container asks when its config.json has
 *   linux.resources.memory.disableOOMKiller: true          -> memory.oom_control = 1
 *   annotations["org.oomdelayfs.oom_kill_disable"] = true|1 -> memory.oom_control = 1
 *   annotations["org.oomdelayfs.oom_delay_millisecs"] = T   -> memory.oom_delay_millisecs = T
 * (the kill-disable annotation exists because crun refuses disableOOMKiller on cgroup v2
 * and Docker drops it; the shim moves the field to the annotation), and
 *   annotations["org.oomdelayfs.mount"] = false|0  -> settings only, /sys/fs/cgroup left as
 *                                                     the runtime made it (systemd inside)
 */
#ifndef OOMD_OCISPEC_H
#define OOMD_OCISPEC_H

#include <glib.h>
#include <json-glib/json-glib.h>

#define OCISPEC_ANN_DELAY "org.oomdelayfs.oom_delay_millisecs"
#define OCISPEC_ANN_DISABLE "org.oomdelayfs.oom_kill_disable"
#define OCISPEC_ANN_MOUNT "org.oomdelayfs.mount"
#define OCISPEC_HOOK_NAME "oomdelayfs-oci-hook"

#define OCISPEC_ERROR (ocispec_error_quark())
GQuark ocispec_error_quark(void);
enum { OCISPEC_ERROR_INVALID };

typedef struct {
	gboolean disable;          /* write memory.oom_control = 1 */
	gboolean from_config;      /* ... because of linux.resources.memory.disableOOMKiller */
	char delay[24];            /* memory.oom_delay_millisecs to write ("" = none asked) */
	gboolean mount;            /* mount the shadow over /sys/fs/cgroup (default TRUE) */
} OcispecRequest;

/* Parses a JSON document (a file, or data already read); the root must be an object.
 * Refused before any parsing: more than OCISPEC_MAX_JSON bytes, or nested more than
 * OCISPEC_MAX_DEPTH deep. A file must be a regular file, not reached through a
 * symbolic link (its last component), owned by root or by the caller's euid. */
#define OCISPEC_MAX_JSON (16u << 20)
#define OCISPEC_MAX_DEPTH 256
JsonNode *ocispec_load_file(const char *path, GError **error);
JsonNode *ocispec_load_data(const char *data, gssize len, GError **error);

/* Fills *req from a config.json object. `extra_annotations` (may be NULL) are looked at
 * when the config has none of ours: the hook's state on stdin carries annotations too.
 * Returns FALSE with an error for an annotation of ours with a bad value. */
gboolean ocispec_request(JsonObject *config, JsonObject *extra_annotations, OcispecRequest *req,
			 GError **error);
static inline gboolean ocispec_asks(const OcispecRequest *req)
{
	return req->disable || req->delay[0] != '\0';
}

/* The member at a dotted path of objects ("linux.resources.memory"), or NULL. */
JsonObject *ocispec_object_at(JsonObject *root, const char *dotted);

/* The shim's edits. Moves disableOOMKiller: true to the kill-disable annotation (crun
 * refuses the field on cgroup v2, runc ignores it); adds `hook_path` with `hook_args`
 * (NULL-terminated, argv[0] first) and a timeout to hooks.createRuntime unless a hook
 * whose path ends in "/oomdelayfs-oci-hook" is already there (hooks.d put it in).
 * Returns TRUE if the hook was added. */
gboolean ocispec_add_hook(JsonObject *config, const char *hook_path, const char *const *hook_args,
			  int timeout_s);

/* The shim's edit for a container that asked and wants the view (request.mount): a spec with
 * no mount at /sys/fs/cgroup (ctr's: containerd 1.6's default spec mounts sysfs read-only and
 * no cgroup file system) gets runc's cgroup mount there, read-only as Docker and podman give a
 * container without privileges, so that the hook has a cgroup2 mount to put the shadow over,
 * with a cgroup namespace (added unless the spec has one) so that the container sees its own
 * cgroup at /sys/fs/cgroup and runc's mount leaves the host's mount options alone.
 * Returns TRUE if the mount was added; a spec that has one is left as it is. */
gboolean ocispec_ensure_cgroup_mount(JsonObject *config);

/* The shadow directory of cgroup `cgroup` ("/a/b", from /proc/<pid>/cgroup) when `shadow`
 * serves the cgroup `prefix` ("/" or "/x/y"), or NULL with an error if the cgroup is not
 * under the prefix or the path climbs ("/.." : outside the reader's cgroup namespace). */
char *ocispec_shadow_dir(const char *shadow, const char *prefix, const char *cgroup, GError **error);

/* The bundle directory of a runtime command line (argv[0] is the runtime) if it is a
 * `create` or `run`, after the global options; runc and crun both take --bundle/-b, default
 * the current directory. NULL for every other command. */
char *ocispec_bundle_of(int argc, char **argv);

/* The runtime's own log file among the global options (`--log PATH`, `--log=PATH`) and
 * whether `--log-format json` was asked, or NULL: where runc writes its errors, and where
 * containerd-shim-runc-v2 reads the last one from for Docker's message (its stderr is not
 * shown). Any command. */
char *ocispec_log_of(int argc, char **argv, gboolean *json);

/* The container ID of the same command line (its first argument that is not an option or an
 * option's value; runc and crun take it last), or NULL if there is none or it is another
 * command. */
char *ocispec_container_id_of(int argc, char **argv);

/* MOUNT_ATTR_RDONLY/NOSUID/NODEV/NOEXEC the config asks for its /sys/fs/cgroup: the options
 * of the mounts[] entry with that destination, and linux.readonlyPaths. (crun makes its
 * read-only remounts after the createRuntime hooks: the mount's flags then are not final.) */
guint64 ocispec_cgroup_mount_attrs(JsonObject *config);

/* The root (4th field, unescaped) of the last mount on `mountpoint` in a mountinfo text,
 * and its file-system type in *fstype (may be NULL); NULL if nothing is mounted there. */
char *ocispec_mount_root(const char *mountinfo, const char *mountpoint, char **fstype);

/* Writes the document to `path` through a temporary file in the same directory and a
 * rename, keeping the original file's mode. */
gboolean ocispec_save(JsonNode *root, const char *path, GError **error);

#endif
