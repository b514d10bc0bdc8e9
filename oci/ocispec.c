/* ocispec - the parts of an OCI config.json oomdelayfs reads and edits (see ocispec.h). */
#include "ocispec.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib/gstdio.h>

G_DEFINE_QUARK(ocispec-error-quark, ocispec_error)

static JsonNode *object_root(JsonParser *parser, const char *what, GError **error)
{
	JsonNode *root = json_parser_get_root(parser);
	if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
		g_set_error(error, OCISPEC_ERROR, OCISPEC_ERROR_INVALID, "%s: not a JSON object", what);
		return NULL;
	}
	return json_node_copy(root);
}

/* What json-glib may be given: its parser recurses once per nesting level (1.6.6 on
 * Debian 12: a state of 200,000 nested arrays crashed the hook with SIGSEGV, issue 21's
 * third round), and reads whatever size it is handed. An OCI config nests about eight
 * deep and weighs kilobytes (Kubernetes bounds a pod's annotations at 256 KiB). */
static gboolean shape_ok(const char *data, gsize len, const char *what, GError **error)
{
	if (len > OCISPEC_MAX_JSON) {
		g_set_error(error, OCISPEC_ERROR, OCISPEC_ERROR_INVALID,
			    "%s: %" G_GSIZE_FORMAT " bytes, more than the %u a configuration may have", what,
			    len, OCISPEC_MAX_JSON);
		return FALSE;
	}
	unsigned depth = 0;
	gboolean in_string = FALSE, escaped = FALSE;
	for (gsize i = 0; i < len; i++) {
		char c = data[i];
		if (in_string) {
			if (escaped)
				escaped = FALSE;
			else if (c == '\\')
				escaped = TRUE;
			else if (c == '"')
				in_string = FALSE;
		} else if (c == '"') {
			in_string = TRUE;
		} else if (c == '[' || c == '{') {
			if (++depth > OCISPEC_MAX_DEPTH) {
				g_set_error(error, OCISPEC_ERROR, OCISPEC_ERROR_INVALID,
					    "%s: nested more than %u deep", what, OCISPEC_MAX_DEPTH);
				return FALSE;
			}
		} else if ((c == ']' || c == '}') && depth > 0) {
			depth--;
		}
	}
	return TRUE;
}

static JsonNode *load(const char *data, gssize len, const char *what, GError **error)
{
	gsize n = len < 0 ? strlen(data) : (gsize)len;
	if (!shape_ok(data, n, what ? what : "the document", error))
		return NULL;
	g_autoptr(JsonParser) parser = json_parser_new();
	if (!json_parser_load_from_data(parser, data, (gssize)n, error)) {
		if (what)
			g_prefix_error(error, "%s: ", what);
		return NULL;
	}
	return object_root(parser, what ? what : "state", error);
}

JsonNode *ocispec_load_file(const char *path, GError **error)
{
	/* not through a symbolic link, a FIFO (O_NONBLOCK: the open does not wait for a
	 * writer) or a device; a regular file owned by root or by us (a rootless runtime) */
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(err), "%s: %s", path,
			    err == ELOOP ? "a symbolic link: refused" : g_strerror(err));
		return NULL;
	}
	struct stat st;
	const char *bad = NULL;
	if (fstat(fd, &st) != 0)
		bad = g_strerror(errno);
	else if (!S_ISREG(st.st_mode))
		bad = "not a regular file: refused";
	else if (st.st_uid != 0 && st.st_uid != geteuid())
		bad = "owned by neither root nor the runtime's user: refused";
	else if (st.st_size > (off_t)OCISPEC_MAX_JSON)
		bad = "larger than a configuration may be: refused";
	if (bad) {
		close(fd);
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s: %s", path, bad);
		return NULL;
	}
	g_autoptr(GString) text = g_string_new(NULL);
	char buf[8192];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			close(fd);
			g_set_error(error, G_IO_ERROR, g_io_error_from_errno(err), "%s: %s", path, g_strerror(err));
			return NULL;
		}
		if (n == 0 || text->len > OCISPEC_MAX_JSON) /* grown since the fstat: shape_ok says */
			break;
		g_string_append_len(text, buf, n);
	}
	close(fd);
	return load(text->str, (gssize)text->len, path, error);
}

JsonNode *ocispec_load_data(const char *data, gssize len, GError **error)
{
	return load(data, len, NULL, error);
}

JsonObject *ocispec_object_at(JsonObject *root, const char *dotted)
{
	g_auto(GStrv) parts = g_strsplit(dotted, ".", -1);
	JsonObject *o = root;
	for (char **p = parts; o != NULL && *p != NULL; p++) {
		JsonNode *n = json_object_get_member(o, *p);
		o = (n != NULL && JSON_NODE_HOLDS_OBJECT(n)) ? json_node_get_object(n) : NULL;
	}
	return o;
}

/* A string annotation of `ann`, or NULL (absent, or not a string). */
static const char *annotation(JsonObject *ann, const char *name)
{
	if (ann == NULL)
		return NULL;
	JsonNode *n = json_object_get_member(ann, name);
	if (n == NULL || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
		return NULL;
	return json_node_get_string(n);
}

/* An annotation's value as a message may show it: its first 64 bytes, C-escaped (a
 * value is the tenant's: it must not write escapes into the runtime's log). */
static char *shown(const char *v)
{
	g_autofree char *head = g_strndup(v, 64);
	g_autofree char *esc = g_strescape(head, NULL);
	return strlen(v) > 64 ? g_strconcat(esc, "...", NULL) : g_steal_pointer(&esc);
}

/* A true/false annotation: *out set if present; FALSE with an error for another value. */
static gboolean bool_annotation(JsonObject *ann, const char *name, gboolean *out, GError **error)
{
	const char *v = annotation(ann, name);
	if (v == NULL)
		return TRUE;
	if (g_strcmp0(v, "true") == 0 || g_strcmp0(v, "1") == 0) {
		*out = TRUE;
	} else if (g_strcmp0(v, "false") == 0 || g_strcmp0(v, "0") == 0) {
		*out = FALSE;
	} else {
		g_autofree char *sv = shown(v);
		g_set_error(error, OCISPEC_ERROR, OCISPEC_ERROR_INVALID,
			    "annotation %s=\"%s\": not true, false, 1 or 0", name, sv);
		return FALSE;
	}
	return TRUE;
}

gboolean ocispec_request(JsonObject *config, JsonObject *extra_annotations, OcispecRequest *req,
			 GError **error)
{
	memset(req, 0, sizeof(*req));
	JsonObject *mem = ocispec_object_at(config, "linux.resources.memory");
	if (mem != NULL && json_object_has_member(mem, "disableOOMKiller")) {
		JsonNode *n = json_object_get_member(mem, "disableOOMKiller");
		if (JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_BOOLEAN &&
		    json_node_get_boolean(n))
			req->disable = req->from_config = TRUE;
	}
	JsonObject *ann = ocispec_object_at(config, "annotations");
	if (annotation(ann, OCISPEC_ANN_DELAY) == NULL && annotation(ann, OCISPEC_ANN_DISABLE) == NULL)
		ann = extra_annotations;

	gboolean yes = FALSE;
	if (!bool_annotation(ann, OCISPEC_ANN_DISABLE, &yes, error))
		return FALSE;
	req->disable |= yes;
	req->mount = TRUE;
	if (!bool_annotation(ann, OCISPEC_ANN_MOUNT, &req->mount, error))
		return FALSE;
	const char *t = annotation(ann, OCISPEC_ANN_DELAY);
	if (t != NULL) {
		guint64 v;
		g_autoptr(GError) e = NULL;
		/* the daemon applies its own range (the kernel's parsing); here only a decimal */
		if (!g_ascii_string_to_unsigned(t, 10, 0, G_MAXUINT64, &v, &e)) {
			g_autofree char *st = shown(t);
			g_set_error(error, OCISPEC_ERROR, OCISPEC_ERROR_INVALID,
				    "annotation %s=\"%s\": not a number of milliseconds", OCISPEC_ANN_DELAY, st);
			return FALSE;
		}
		g_snprintf(req->delay, sizeof(req->delay), "%" G_GUINT64_FORMAT, v);
	}
	return TRUE;
}

static JsonObject *ensure_object(JsonObject *parent, const char *name)
{
	JsonNode *n = json_object_get_member(parent, name);
	if (n != NULL && JSON_NODE_HOLDS_OBJECT(n))
		return json_node_get_object(n);
	JsonObject *o = json_object_new();
	json_object_set_object_member(parent, name, o); /* takes the reference */
	return o;
}

static JsonArray *ensure_array(JsonObject *parent, const char *name)
{
	JsonNode *n = json_object_get_member(parent, name);
	if (n != NULL && JSON_NODE_HOLDS_ARRAY(n))
		return json_node_get_array(n);
	JsonArray *a = json_array_new();
	json_object_set_array_member(parent, name, a);
	return a;
}

static gboolean has_our_hook(JsonArray *hooks)
{
	for (guint i = 0; i < json_array_get_length(hooks); i++) {
		JsonNode *h = json_array_get_element(hooks, i);
		if (!JSON_NODE_HOLDS_OBJECT(h))
			continue;
		const char *p = json_object_get_string_member_with_default(json_node_get_object(h), "path", "");
		if (g_str_has_suffix(p, "/" OCISPEC_HOOK_NAME))
			return TRUE;
	}
	return FALSE;
}

gboolean ocispec_add_hook(JsonObject *config, const char *hook_path, const char *const *hook_args,
			  int timeout_s)
{
	JsonObject *mem = ocispec_object_at(config, "linux.resources.memory");
	if (mem != NULL && json_object_has_member(mem, "disableOOMKiller")) {
		JsonNode *n = json_object_get_member(mem, "disableOOMKiller");
		if (JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_BOOLEAN &&
		    json_node_get_boolean(n))
			json_object_set_string_member(ensure_object(config, "annotations"),
						      OCISPEC_ANN_DISABLE, "true");
		json_object_remove_member(mem, "disableOOMKiller");
	}
	JsonArray *stage = ensure_array(ensure_object(config, "hooks"), "createRuntime");
	if (has_our_hook(stage))
		return FALSE;
	JsonObject *hook = json_object_new();
	json_object_set_string_member(hook, "path", hook_path);
	JsonArray *args = json_array_new();
	for (const char *const *a = hook_args; *a != NULL; a++)
		json_array_add_string_element(args, *a);
	json_object_set_array_member(hook, "args", args);
	json_object_set_int_member(hook, "timeout", timeout_s);
	json_array_add_object_element(stage, hook);
	return TRUE;
}

gboolean ocispec_ensure_cgroup_mount(JsonObject *config)
{
	JsonNode *mounts = json_object_get_member(config, "mounts");
	if (mounts != NULL && !JSON_NODE_HOLDS_ARRAY(mounts))
		return FALSE; /* not a spec a runtime takes: leave it to the runtime's refusal */
	JsonArray *list = ensure_array(config, "mounts");
	for (guint i = 0; i < json_array_get_length(list); i++) {
		JsonNode *m = json_array_get_element(list, i);
		if (JSON_NODE_HOLDS_OBJECT(m) &&
		    g_strcmp0(json_object_get_string_member_with_default(json_node_get_object(m), "destination", ""),
			      "/sys/fs/cgroup") == 0)
			return FALSE;
	}
	JsonObject *m = json_object_new();
	json_object_set_string_member(m, "destination", "/sys/fs/cgroup");
	json_object_set_string_member(m, "type", "cgroup");
	json_object_set_string_member(m, "source", "cgroup");
	JsonArray *o = json_array_new();
	for (const char *const *opt = (const char *const[]){ "nosuid", "noexec", "nodev", "relatime", "ro", NULL };
	     *opt != NULL; opt++)
		json_array_add_string_element(o, *opt);
	json_object_set_array_member(m, "options", o);
	json_array_add_object_element(list, m);
	/* and a cgroup namespace, as Docker and podman give one on cgroup v2: runc's cgroup2 mount
	 * made in the host's cgroup namespace reconfigures the one cgroup2 superblock without
	 * nsdelegate (kernel/cgroup/cgroup.c apply_cgroup_root_flags acts in the init namespace
	 * only): e-containerd measured the host's /sys/fs/cgroup lose nsdelegate that way */
	JsonObject *lnx = ensure_object(config, "linux");
	JsonNode *nsn = json_object_get_member(lnx, "namespaces");
	if (nsn != NULL && !JSON_NODE_HOLDS_ARRAY(nsn))
		return TRUE;
	JsonArray *ns = ensure_array(lnx, "namespaces");
	for (guint i = 0; i < json_array_get_length(ns); i++) {
		JsonNode *n = json_array_get_element(ns, i);
		if (JSON_NODE_HOLDS_OBJECT(n) &&
		    g_strcmp0(json_object_get_string_member_with_default(json_node_get_object(n), "type", ""), "cgroup") == 0)
			return TRUE;
	}
	JsonObject *cns = json_object_new();
	json_object_set_string_member(cns, "type", "cgroup");
	json_array_add_object_element(ns, cns);
	return TRUE;
}

char *ocispec_shadow_dir(const char *shadow, const char *prefix, const char *cgroup, GError **error)
{
	/* the kernel shows a cgroup outside the reader's cgroup namespace as "/../x" */
	g_auto(GStrv) parts = g_strsplit(cgroup, "/", -1);
	gboolean climbs = FALSE;
	for (char **p = parts; *p != NULL; p++)
		climbs |= strcmp(*p, "..") == 0 || strcmp(*p, ".") == 0;
	if (cgroup[0] != '/' || climbs) {
		g_set_error(error, OCISPEC_ERROR, OCISPEC_ERROR_INVALID,
			    "cgroup %s is outside the hook's cgroup namespace", cgroup);
		return NULL;
	}
	g_autofree char *pfx = g_strdup(prefix);
	gsize n = strlen(pfx);
	while (n > 1 && pfx[n - 1] == '/')
		pfx[--n] = '\0';
	const char *rel = cgroup;
	if (strcmp(pfx, "/") != 0) {
		if (!g_str_has_prefix(cgroup, pfx) || (cgroup[n] != '/' && cgroup[n] != '\0')) {
			g_set_error(error, OCISPEC_ERROR, OCISPEC_ERROR_INVALID,
				    "the container's cgroup %s is not under --cgroup-prefix %s", cgroup, pfx);
			return NULL;
		}
		rel = cgroup + n;
	}
	if (rel[0] == '\0' || strcmp(rel, "/") == 0)
		return g_strdup(shadow);
	return g_build_filename(shadow, rel, NULL);
}

/* the runtimes' global options that take a value (runc, crun) */
static const char *const global_with_value[] = { "--root", "--log", "--log-format", "--criu",
						 "--rootless", "--cgroup-manager", NULL };

/* The index of the command (`create`, `run`) after the runtime's global options, or -1 if
 * it is another command. */
static int create_command(int argc, char **argv)
{
	const char *const *with_value = global_with_value;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++)
		if (strchr(argv[i], '=') == NULL && g_strv_contains(with_value, argv[i]))
			i++;
	if (i >= argc || (strcmp(argv[i], "create") != 0 && strcmp(argv[i], "run") != 0))
		return -1;
	return i;
}

char *ocispec_log_of(int argc, char **argv, gboolean *json)
{
	char *log = NULL;
	*json = FALSE;
	for (int i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *v = NULL;
		gboolean is_log = strcmp(argv[i], "--log") == 0, is_fmt = strcmp(argv[i], "--log-format") == 0;
		if ((is_log || is_fmt) && i + 1 < argc)
			v = argv[++i];
		else if (!is_log && !is_fmt && strchr(argv[i], '=') == NULL &&
			 g_strv_contains(global_with_value, argv[i]))
			i++; /* another option's value */
		else if (g_str_has_prefix(argv[i], "--log="))
			v = argv[i] + strlen("--log="), is_log = TRUE;
		else if (g_str_has_prefix(argv[i], "--log-format="))
			v = argv[i] + strlen("--log-format="), is_fmt = TRUE;
		if (is_log && v) {
			g_free(log);
			log = g_strdup(v);
		} else if (is_fmt && v) {
			*json = strcmp(v, "json") == 0;
		}
	}
	return log;
}

char *ocispec_container_id_of(int argc, char **argv)
{
	/* the options of create/run that take a value (runc 1.1, crun 1.8) */
	static const char *const with_value[] = { "--bundle", "-b", "--console-socket", "--pid-file",
						  "--preserve-fds", "--config", "-f", NULL };
	int i = create_command(argc, argv);
	if (i < 0)
		return NULL;
	for (i++; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return i + 1 < argc ? g_strdup(argv[i + 1]) : NULL;
		if (argv[i][0] != '-')
			return g_strdup(argv[i]);
		if (strchr(argv[i], '=') == NULL && g_strv_contains(with_value, argv[i]))
			i++;
	}
	return NULL;
}

char *ocispec_bundle_of(int argc, char **argv)
{
	int i = create_command(argc, argv);
	if (i < 0)
		return NULL;
	for (i++; i < argc; i++) {
		if (strcmp(argv[i], "--bundle") == 0 || strcmp(argv[i], "-b") == 0)
			return i + 1 < argc ? g_strdup(argv[i + 1]) : NULL;
		if (g_str_has_prefix(argv[i], "--bundle="))
			return g_strdup(argv[i] + strlen("--bundle="));
		if (g_str_has_prefix(argv[i], "-b") && argv[i][2] != '\0')
			return g_strdup(argv[i] + 2);
	}
	return g_get_current_dir();
}

guint64 ocispec_cgroup_mount_attrs(JsonObject *config)
{
	static const struct {
		const char *opt;
		guint64 attr;
	} opts[] = { { "ro", MOUNT_ATTR_RDONLY }, { "nosuid", MOUNT_ATTR_NOSUID },
		     { "nodev", MOUNT_ATTR_NODEV }, { "noexec", MOUNT_ATTR_NOEXEC } };
	guint64 attrs = 0;
	JsonNode *mounts = json_object_get_member(config, "mounts");
	for (guint i = 0; mounts != NULL && JSON_NODE_HOLDS_ARRAY(mounts) &&
			  i < json_array_get_length(json_node_get_array(mounts)); i++) {
		JsonNode *m = json_array_get_element(json_node_get_array(mounts), i);
		if (!JSON_NODE_HOLDS_OBJECT(m))
			continue;
		JsonObject *mo = json_node_get_object(m);
		const char *dest = json_object_get_string_member_with_default(mo, "destination", "");
		JsonNode *o = json_object_get_member(mo, "options");
		if (g_strcmp0(dest, "/sys/fs/cgroup") != 0 || o == NULL || !JSON_NODE_HOLDS_ARRAY(o))
			continue;
		guint64 these = 0; /* the last entry for the destination wins, as it is mounted last */
		for (guint j = 0; j < json_array_get_length(json_node_get_array(o)); j++) {
			JsonNode *v = json_array_get_element(json_node_get_array(o), j);
			if (!JSON_NODE_HOLDS_VALUE(v) || json_node_get_value_type(v) != G_TYPE_STRING)
				continue;
			for (gsize k = 0; k < G_N_ELEMENTS(opts); k++)
				if (strcmp(json_node_get_string(v), opts[k].opt) == 0)
					these |= opts[k].attr;
		}
		attrs = these;
	}
	JsonObject *lnx = ocispec_object_at(config, "linux");
	JsonNode *ro = lnx ? json_object_get_member(lnx, "readonlyPaths") : NULL;
	for (guint i = 0; ro != NULL && JSON_NODE_HOLDS_ARRAY(ro) &&
			  i < json_array_get_length(json_node_get_array(ro)); i++) {
		JsonNode *v = json_array_get_element(json_node_get_array(ro), i);
		if (JSON_NODE_HOLDS_VALUE(v) && json_node_get_value_type(v) == G_TYPE_STRING &&
		    strcmp(json_node_get_string(v), "/sys/fs/cgroup") == 0)
			attrs |= MOUNT_ATTR_RDONLY;
	}
	return attrs;
}

char *ocispec_mount_root(const char *mountinfo, const char *mountpoint, char **fstype)
{
	char *root = NULL;
	g_auto(GStrv) lines = g_strsplit(mountinfo, "\n", -1);
	for (char **l = lines; *l != NULL; l++) {
		/* id parent major:minor root mountpoint options [optional...] - fstype source super */
		g_auto(GStrv) f = g_strsplit(*l, " ", -1);
		if (g_strv_length(f) < 5)
			continue;
		g_autofree char *mp = g_strcompress(f[4]); /* \040 and the like */
		if (strcmp(mp, mountpoint) != 0)
			continue;
		const char *type = NULL;
		for (char **x = f + 5; *x != NULL; x++)
			if (strcmp(*x, "-") == 0) {
				type = x[1];
				break;
			}
		g_free(root);
		root = g_strcompress(f[3]);
		if (fstype != NULL) {
			g_free(*fstype);
			*fstype = g_strdup(type ? type : "");
		}
	}
	return root;
}

gboolean ocispec_save(JsonNode *root, const char *path, GError **error)
{
	g_autoptr(JsonGenerator) gen = json_generator_new();
	json_generator_set_root(gen, root);
	gsize len;
	g_autofree char *text = json_generator_to_data(gen, &len);
	struct stat st;
	mode_t mode = g_stat(path, &st) == 0 ? (st.st_mode & 07777) : 0644;
	g_autofree char *tmp = g_strdup_printf("%s.oomdelayfs-XXXXXX", path);
	int fd = g_mkstemp_full(tmp, O_WRONLY | O_CLOEXEC, (int)mode);
	if (fd < 0) {
		int e = errno;
		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e), "%s: %s", tmp, g_strerror(e));
		return FALSE;
	}
	gboolean ok = TRUE;
	for (gsize off = 0; ok && off < len;) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ok = FALSE;
		else
			off += (gsize)n;
	}
	int e = errno;
	if (ok && (fchmod(fd, mode) != 0 || fsync(fd) != 0)) {
		ok = FALSE;
		e = errno;
	}
	if (close(fd) != 0 && ok) {
		ok = FALSE;
		e = errno;
	}
	if (ok && g_rename(tmp, path) != 0) {
		ok = FALSE;
		e = errno;
	}
	if (!ok) {
		g_unlink(tmp);
		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e), "writing %s: %s", path,
			    g_strerror(e));
	}
	return ok;
}
