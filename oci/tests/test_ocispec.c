/* Unit tests of oci/ocispec.c: what a config.json asks, the shim's edit of it, the shadow
 * directory of a cgroup and the bundle of a runtime command line. */
#include <criterion/criterion.h>
#include <glib/gstdio.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ocispec.h"

static JsonNode *parse(const char *json)
{
	GError *e = NULL;
	JsonNode *n = ocispec_load_data(json, -1, &e);
	cr_assert_not_null(n, "%s", e ? e->message : "?");
	return n;
}

static gboolean request(const char *json, OcispecRequest *req, GError **e)
{
	g_autoptr(JsonNode) n = parse(json);
	return ocispec_request(json_node_get_object(n), NULL, req, e);
}

Test(request, nothing_asked)
{
	OcispecRequest r;
	cr_assert(request("{\"linux\":{\"resources\":{\"memory\":{\"limit\":1}}},\"annotations\":{\"a\":\"b\"}}", &r, NULL));
	cr_assert_not(ocispec_asks(&r));
	cr_assert(request("{\"linux\":{\"resources\":{\"memory\":{\"disableOOMKiller\":false}}}}", &r, NULL));
	cr_assert_not(ocispec_asks(&r));
	cr_assert(request("{}", &r, NULL));
	cr_assert_not(ocispec_asks(&r));
}

Test(request, disable_from_config_and_annotation)
{
	OcispecRequest r;
	cr_assert(request("{\"linux\":{\"resources\":{\"memory\":{\"disableOOMKiller\":true}}}}", &r, NULL));
	cr_assert(r.disable && r.from_config && r.delay[0] == '\0');
	cr_assert(request("{\"annotations\":{\"org.oomdelayfs.oom_kill_disable\":\"1\"}}", &r, NULL));
	cr_assert(r.disable && !r.from_config);
	cr_assert(request("{\"annotations\":{\"org.oomdelayfs.oom_kill_disable\":\"false\"}}", &r, NULL));
	cr_assert_not(ocispec_asks(&r));
	/* a non-string value is not ours to interpret */
	cr_assert(request("{\"annotations\":{\"org.oomdelayfs.oom_kill_disable\":true}}", &r, NULL));
	cr_assert_not(ocispec_asks(&r));
}

Test(request, delay)
{
	OcispecRequest r;
	cr_assert(request("{\"annotations\":{\"org.oomdelayfs.oom_delay_millisecs\":\"1500\"}}", &r, NULL));
	cr_assert_str_eq(r.delay, "1500");
	cr_assert_not(r.disable);
	cr_assert(r.mount, "the mount is the default");
}

Test(request, mount_opt_out)
{
	OcispecRequest r;
	cr_assert(request("{\"annotations\":{\"org.oomdelayfs.oom_delay_millisecs\":\"5\","
			  "\"org.oomdelayfs.mount\":\"false\"}}", &r, NULL));
	cr_assert_not(r.mount);
	cr_assert_str_eq(r.delay, "5");
	cr_assert(request("{\"annotations\":{\"org.oomdelayfs.oom_kill_disable\":\"true\","
			  "\"org.oomdelayfs.mount\":\"1\"}}", &r, NULL));
	cr_assert(r.mount && r.disable);
	/* the opt-out alone asks for nothing */
	cr_assert(request("{\"annotations\":{\"org.oomdelayfs.mount\":\"0\"}}", &r, NULL));
	cr_assert_not(ocispec_asks(&r));
}

Test(request, bad_values_refused)
{
	static const char *const bad[] = {
		"{\"annotations\":{\"org.oomdelayfs.oom_delay_millisecs\":\"abc\"}}",
		"{\"annotations\":{\"org.oomdelayfs.oom_delay_millisecs\":\"-1\"}}",
		"{\"annotations\":{\"org.oomdelayfs.oom_delay_millisecs\":\"\"}}",
		"{\"annotations\":{\"org.oomdelayfs.oom_delay_millisecs\":\"1 2\"}}",
		"{\"annotations\":{\"org.oomdelayfs.oom_delay_millisecs\":\"99999999999999999999999\"}}",
		"{\"annotations\":{\"org.oomdelayfs.oom_kill_disable\":\"yes\"}}",
		"{\"annotations\":{\"org.oomdelayfs.oom_delay_millisecs\":\"5\",\"org.oomdelayfs.mount\":\"no\"}}",
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		OcispecRequest r;
		g_autoptr(GError) e = NULL;
		cr_assert_not(request(bad[i], &r, &e), "%s accepted", bad[i]);
		cr_assert(g_error_matches(e, OCISPEC_ERROR, OCISPEC_ERROR_INVALID));
	}
}

Test(request, state_annotations_when_the_config_has_none)
{
	g_autoptr(JsonNode) cfg = parse("{\"annotations\":{\"x\":\"y\"}}");
	g_autoptr(JsonNode) st = parse("{\"annotations\":{\"org.oomdelayfs.oom_delay_millisecs\":\"7\"}}");
	OcispecRequest r;
	cr_assert(ocispec_request(json_node_get_object(cfg), json_node_get_object(json_object_get_member(
		json_node_get_object(st), "annotations")), &r, NULL));
	cr_assert_str_eq(r.delay, "7");
}

static char *to_string(JsonNode *n)
{
	g_autoptr(JsonGenerator) g = json_generator_new();
	json_generator_set_root(g, n);
	return json_generator_to_data(g, NULL);
}

Test(add_hook, moves_disable_and_adds_once)
{
	g_autoptr(JsonNode) n = parse("{\"process\":{\"args\":[\"sh\"]},\"linux\":{\"resources\":{\"memory\":"
				      "{\"limit\":33554432,\"disableOOMKiller\":true}}},"
				      "\"hooks\":{\"poststop\":[{\"path\":\"/x\"}]}}");
	JsonObject *cfg = json_node_get_object(n);
	const char *args[] = { "oomdelayfs-oci-hook", "--shadow", "/s", NULL };
	cr_assert(ocispec_add_hook(cfg, "/usr/libexec/oomdelayfs/oomdelayfs-oci-hook", args, 10));
	g_autofree char *s1 = to_string(n);
	cr_assert_not_null(strstr(s1, "\"org.oomdelayfs.oom_kill_disable\":\"true\""), "%s", s1);
	cr_assert_null(strstr(s1, "disableOOMKiller"), "%s", s1);
	cr_assert_not_null(strstr(s1, "\"limit\":33554432"), "%s", s1);
	cr_assert_not_null(strstr(s1, "\"poststop\":[{\"path\":\"/x\"}]"), "other hooks kept: %s", s1);
	cr_assert_not_null(strstr(s1, "\"createRuntime\":[{\"path\":\"/usr/libexec/oomdelayfs/oomdelayfs-oci-hook\","
				      "\"args\":[\"oomdelayfs-oci-hook\",\"--shadow\",\"/s\"],\"timeout\":10}]"), "%s", s1);
	/* the request still reads the same after the edit */
	OcispecRequest r;
	cr_assert(ocispec_request(cfg, NULL, &r, NULL));
	cr_assert(r.disable && !r.from_config);
	/* a second pass (or hooks.d having put it there) adds nothing */
	cr_assert_not(ocispec_add_hook(cfg, "/other/dir/oomdelayfs-oci-hook", args, 10));
	g_autofree char *s2 = to_string(n);
	cr_assert_str_eq(s1, s2);
}

Test(shadow_dir, mapping)
{
	g_autoptr(GError) e = NULL;
	g_autofree char *a = ocispec_shadow_dir("/run/s", "/", "/kubepods/pod1/c", &e);
	cr_assert_str_eq(a, "/run/s/kubepods/pod1/c");
	g_autofree char *b = ocispec_shadow_dir("/run/s", "/kubepods/", "/kubepods/pod1/c", &e);
	cr_assert_str_eq(b, "/run/s/pod1/c");
	g_autofree char *r = ocispec_shadow_dir("/run/s", "/", "/", &e);
	cr_assert_str_eq(r, "/run/s");
	/* systemd driver: the path is whatever /proc/<pid>/cgroup says */
	g_autofree char *sd = ocispec_shadow_dir("/run/s", "/", "/system.slice/docker-abc.scope", &e);
	cr_assert_str_eq(sd, "/run/s/system.slice/docker-abc.scope");
}

Test(shadow_dir, refused)
{
	static const char *const bad[][2] = {
		{ "/kube", "/kubepods/c" }, /* a prefix of a name is not a parent */
		{ "/a", "/b/c" },
		{ "/", "/../x" },           /* outside the hook's cgroup namespace */
		{ "/", "/a/../../b" },
		{ "/", "a/b" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) e = NULL;
		g_autofree char *d = ocispec_shadow_dir("/run/s", bad[i][0], bad[i][1], &e);
		cr_assert_null(d, "%s under %s gave %s", bad[i][1], bad[i][0], d);
		cr_assert_not_null(e);
	}
	g_autoptr(GError) e = NULL;
	g_autofree char *ok = ocispec_shadow_dir("/run/s", "/", "/a/..b", &e);
	cr_assert_str_eq(ok, "/run/s/a/..b");
}

Test(bundle_of, command_lines)
{
	char *containerd[] = { "shim", "--root", "/run/containerd/runc/k8s.io", "--log", "/l", "--log-format",
			       "json", "--systemd-cgroup", "create", "--bundle", "/b1", "--pid-file", "/p", "id", NULL };
	g_autofree char *b1 = ocispec_bundle_of(13 + 1, containerd);
	cr_assert_str_eq(b1, "/b1");
	char *podman[] = { "shim", "--cgroup-manager", "systemd", "create", "--bundle=/b2", "id", NULL };
	g_autofree char *b2 = ocispec_bundle_of(6, podman);
	cr_assert_str_eq(b2, "/b2");
	char *shortb[] = { "shim", "run", "-b", "/b3", "id", NULL };
	g_autofree char *b3 = ocispec_bundle_of(5, shortb);
	cr_assert_str_eq(b3, "/b3");
	char *cwd[] = { "shim", "run", "--no-pivot", "id", NULL };
	g_autofree char *b4 = ocispec_bundle_of(4, cwd);
	g_autofree char *here = g_get_current_dir();
	cr_assert_str_eq(b4, here);
	char *start[] = { "shim", "--root", "/r", "start", "--bundle", "/x", "id", NULL };
	cr_assert_null(ocispec_bundle_of(7, start));
	char *update[] = { "shim", "update", "--memory", "1", "id", NULL };
	cr_assert_null(ocispec_bundle_of(5, update));
	char *none[] = { "shim", NULL };
	cr_assert_null(ocispec_bundle_of(1, none));
}

/* Where a refusal goes besides stderr: containerd-shim-runc-v2 shows Docker the runtime's last
 * error from its --log file (json); podman passes --log=PATH with text. */
Test(log_of, command_lines)
{
	gboolean json;
	char *containerd[] = { "shim", "--root", "/r", "--log", "/l.json", "--log-format", "json",
			       "create", "--bundle", "/b", "--log", "/not-global", "id", NULL };
	g_autofree char *l1 = ocispec_log_of(13, containerd, &json);
	cr_assert_str_eq(l1, "/l.json", "the global option, not an argument of create");
	cr_assert(json);
	char *text[] = { "shim", "--log=/l.txt", "--log-format=text", "create", "id", NULL };
	g_autofree char *l2 = ocispec_log_of(5, text, &json);
	cr_assert_str_eq(l2, "/l.txt");
	cr_assert_not(json);
	char *none[] = { "shim", "--root", "/r", "create", "id", NULL };
	cr_assert_null(ocispec_log_of(5, none, &json));
	char *dangling[] = { "shim", "--log", NULL };
	cr_assert_null(ocispec_log_of(2, dangling, &json), "--log without its value");
}

Test(save, keeps_mode_and_replaces)
{
	g_autofree char *dir = g_dir_make_tmp("ocispec-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "config.json", NULL);
	cr_assert(g_file_set_contents(path, "{\"a\":1}", -1, NULL));
	cr_assert_eq(g_chmod(path, 0600), 0);
	g_autoptr(JsonNode) n = parse("{\"a\":2}");
	g_autoptr(GError) e = NULL;
	cr_assert(ocispec_save(n, path, &e), "%s", e ? e->message : "");
	g_autofree char *text = NULL;
	cr_assert(g_file_get_contents(path, &text, NULL, NULL));
	cr_assert_str_eq(text, "{\"a\":2}");
	GStatBuf st;
	cr_assert_eq(g_stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	/* nothing left behind */
	g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
	int count = 0;
	while (g_dir_read_name(d) != NULL)
		count++;
	cr_assert_eq(count, 1);
	g_unlink(path);
	g_rmdir(dir);
}

Test(cgroup_mount, added_only_where_none)
{
	/* ctr's spec: sysfs, no cgroup mount -> runc's read-only cgroup mount added, once */
	g_autoptr(JsonNode) a = parse("{\"mounts\":[{\"destination\":\"/sys\",\"type\":\"sysfs\",\"options\":[\"ro\"]}]}");
	cr_assert(ocispec_ensure_cgroup_mount(json_node_get_object(a)));
	g_autofree char *s1 = to_string(a);
	cr_assert_not_null(strstr(s1, "{\"destination\":\"/sys/fs/cgroup\",\"type\":\"cgroup\",\"source\":\"cgroup\","
				      "\"options\":[\"nosuid\",\"noexec\",\"nodev\",\"relatime\",\"ro\"]}"), "%s", s1);
	cr_assert_eq(ocispec_cgroup_mount_attrs(json_node_get_object(a)),
		     MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	cr_assert_not_null(strstr(s1, "\"linux\":{\"namespaces\":[{\"type\":\"cgroup\"}]}"), "%s", s1);
	cr_assert_not(ocispec_ensure_cgroup_mount(json_node_get_object(a)));
	g_autofree char *s2 = to_string(a);
	cr_assert_str_eq(s1, s2);
	/* Docker's and podman's specs have one, rw or ro as the container was given: kept */
	g_autoptr(JsonNode) b = parse("{\"mounts\":[{\"destination\":\"/sys/fs/cgroup\",\"type\":\"cgroup\",\"options\":[\"rw\"]}]}");
	cr_assert_not(ocispec_ensure_cgroup_mount(json_node_get_object(b)));
	cr_assert_eq(ocispec_cgroup_mount_attrs(json_node_get_object(b)), 0);
	/* no mounts at all: the list is made; a cgroup namespace already there is not doubled */
	g_autoptr(JsonNode) c = parse("{\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"cgroup\",\"path\":\"/proc/1/ns/cgroup\"}]}}");
	cr_assert(ocispec_ensure_cgroup_mount(json_node_get_object(c)));
	g_autofree char *s3 = to_string(c);
	cr_assert_not_null(strstr(s3, "\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"cgroup\",\"path\":\"/proc/1/ns/cgroup\"}]"), "%s", s3);
	/* mounts that are not a list: left to the runtime to refuse */
	g_autoptr(JsonNode) d = parse("{\"mounts\":7}");
	cr_assert_not(ocispec_ensure_cgroup_mount(json_node_get_object(d)));
}

Test(mount_attrs, from_the_config)
{
	g_autoptr(JsonNode) a = parse("{\"mounts\":[{\"destination\":\"/sys\",\"options\":[\"ro\"]},"
				      "{\"destination\":\"/sys/fs/cgroup\",\"type\":\"cgroup\",\"options\":"
				      "[\"nosuid\",\"noexec\",\"nodev\",\"relatime\",\"ro\"]}]}");
	cr_assert_eq(ocispec_cgroup_mount_attrs(json_node_get_object(a)),
		     MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	g_autoptr(JsonNode) b = parse("{\"mounts\":[{\"destination\":\"/sys/fs/cgroup\",\"options\":[\"rw\",\"nosuid\"]}]}");
	cr_assert_eq(ocispec_cgroup_mount_attrs(json_node_get_object(b)), MOUNT_ATTR_NOSUID);
	/* /sys read-only alone does not make the cgroup mount read-only */
	g_autoptr(JsonNode) c = parse("{\"mounts\":[{\"destination\":\"/sys\",\"options\":[\"ro\"]}],"
				      "\"linux\":{\"readonlyPaths\":[\"/proc/sys\"]}}");
	cr_assert_eq(ocispec_cgroup_mount_attrs(json_node_get_object(c)), 0);
	g_autoptr(JsonNode) d = parse("{\"linux\":{\"readonlyPaths\":[\"/sys/fs/cgroup\"]}}");
	cr_assert_eq(ocispec_cgroup_mount_attrs(json_node_get_object(d)), MOUNT_ATTR_RDONLY);
	g_autoptr(JsonNode) e = parse("{\"mounts\":\"bogus\",\"linux\":{\"readonlyPaths\":7}}");
	cr_assert_eq(ocispec_cgroup_mount_attrs(json_node_get_object(e)), 0);
}

Test(mount_root, last_mount_wins_and_escapes)
{
	const char *mi =
		"30 30 0:2 / / rw - rootfs rootfs rw\n"
		"43 42 0:23 /ctr-runc /tmp/b\\040x/rootfs/sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw,nsdelegate\n"
		"44 39 0:2 /bin /tmp/b\\040x/rootfs/bin ro - rootfs rootfs rw\n";
	g_autofree char *type = NULL;
	g_autofree char *r = ocispec_mount_root(mi, "/tmp/b x/rootfs/sys/fs/cgroup", &type);
	cr_assert_str_eq(r, "/ctr-runc");
	cr_assert_str_eq(type, "cgroup2");
	const char *stacked =
		"43 42 0:23 / /r/sys/fs/cgroup rw shared:5 master:1 - cgroup2 cgroup2 rw\n"
		"50 43 0:40 / /r/sys/fs/cgroup rw - fuse.oomdelayfs oomdelayfs rw\n";
	g_autofree char *type2 = NULL;
	g_autofree char *r2 = ocispec_mount_root(stacked, "/r/sys/fs/cgroup", &type2);
	cr_assert_str_eq(r2, "/");
	cr_assert_str_eq(type2, "fuse.oomdelayfs");
	cr_assert_null(ocispec_mount_root(stacked, "/r/sys", NULL));
	cr_assert_null(ocispec_mount_root("garbage\n\n", "/r", NULL));
}

/* ---- a hostile bundle (issue 21, third round) ---- */

static char *bundle_dir(void)
{
	char *d = g_strdup("/tmp/oomd-bundle-XXXXXX");
	cr_assert_not_null(g_mkdtemp(d));
	return d;
}

static const char legit[] = "{\"annotations\":{\"org.oomdelayfs.oom_delay_millisecs\":\"250\"}}";

/* json-glib recurses per level: 200,000 nested arrays crashed the hook (SIGSEGV) */
Test(hostile, deep_nesting_is_refused_not_a_crash)
{
	GString *s = g_string_new("{\"a\":");
	for (int i = 0; i < 200000; i++)
		g_string_append_c(s, '[');
	for (int i = 0; i < 200000; i++)
		g_string_append_c(s, ']');
	g_string_append_c(s, '}');
	g_autoptr(GError) e = NULL;
	cr_assert_null(ocispec_load_data(s->str, (gssize)s->len, &e));
	cr_assert(strstr(e->message, "nested more than"), "%s", e->message);
	/* brackets inside strings are text, not nesting; 256 levels are fine */
	GString *ok = g_string_new("{\"a\":\"");
	for (int i = 0; i < 1000; i++)
		g_string_append(ok, "[{");
	g_string_append(ok, "\",\"b\":");
	for (int i = 0; i < OCISPEC_MAX_DEPTH - 1; i++)
		g_string_append_c(ok, '[');
	for (int i = 0; i < OCISPEC_MAX_DEPTH - 1; i++)
		g_string_append_c(ok, ']');
	g_string_append_c(ok, '}');
	g_autoptr(GError) e2 = NULL;
	g_autoptr(JsonNode) n = ocispec_load_data(ok->str, (gssize)ok->len, &e2);
	cr_assert_not_null(n, "%s", e2 ? e2->message : "?");
	g_string_free(s, TRUE);
	g_string_free(ok, TRUE);
}

Test(hostile, a_huge_config_is_refused_before_it_is_read)
{
	g_autofree char *d = bundle_dir();
	g_autofree char *p = g_build_filename(d, "config.json", NULL);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)4 << 30), 0); /* 4 GiB, sparse */
	close(fd);
	g_autoptr(GError) e = NULL;
	gint64 t0 = g_get_monotonic_time();
	cr_assert_null(ocispec_load_file(p, &e));
	cr_assert_lt(g_get_monotonic_time() - t0, G_USEC_PER_SEC, "it read the file");
	cr_assert(strstr(e->message, "larger than"), "%s", e->message);
	char *big = g_malloc0(OCISPEC_MAX_JSON + 2);
	big[0] = '{';
	g_autoptr(GError) e2 = NULL;
	cr_assert_null(ocispec_load_data(big, OCISPEC_MAX_JSON + 1, &e2));
	cr_assert(strstr(e2->message, "more than the"), "%s", e2->message);
	g_free(big);
	/* the legitimate config beside it loads */
	cr_assert(g_file_set_contents(p, legit, -1, NULL));
	g_autoptr(GError) e3 = NULL;
	g_autoptr(JsonNode) n = ocispec_load_file(p, &e3);
	cr_assert_not_null(n, "%s", e3 ? e3->message : "?");
	g_unlink(p);
	g_rmdir(d);
}

Test(hostile, a_symlinked_fifo_or_foreign_config_is_refused)
{
	g_autofree char *d = bundle_dir();
	g_autofree char *p = g_build_filename(d, "config.json", NULL);
	g_autofree char *real = g_build_filename(d, "real.json", NULL);
	cr_assert(g_file_set_contents(real, legit, -1, NULL));
	/* a link (to a file of ours, or one the caller may not read, /etc/shadow) */
	cr_assert_eq(symlink(real, p), 0);
	g_autoptr(GError) e = NULL;
	cr_assert_null(ocispec_load_file(p, &e));
	cr_assert(strstr(e->message, "symbolic link"), "%s", e->message);
	g_unlink(p);
	/* a FIFO: the open must not wait for a writer */
	cr_assert_eq(mkfifo(p, 0644), 0);
	g_autoptr(GError) e2 = NULL;
	cr_assert_null(ocispec_load_file(p, &e2));
	cr_assert(strstr(e2->message, "not a regular file"), "%s", e2->message);
	g_unlink(p);
	/* another user's file, when we are root */
	if (geteuid() == 0) {
		cr_assert(g_file_set_contents(p, legit, -1, NULL));
		cr_assert_eq(chown(p, 4321, 4321), 0);
		g_autoptr(GError) e3 = NULL;
		cr_assert_null(ocispec_load_file(p, &e3));
		cr_assert(strstr(e3->message, "owned by"), "%s", e3->message);
		g_unlink(p);
	}
	/* the legitimate one */
	g_autoptr(GError) e4 = NULL;
	g_autoptr(JsonNode) n = ocispec_load_file(real, &e4);
	cr_assert_not_null(n, "%s", e4 ? e4->message : "?");
	g_unlink(real);
	g_rmdir(d);
}

/* a tenant's annotation (a Kubernetes pod's, through CRI-O) reaches the runtime's log */
Test(hostile, absurd_annotation_values_are_refused_and_not_echoed_raw)
{
	GString *huge = g_string_new(NULL);
	for (int i = 0; i < 100000; i++)
		g_string_append_c(huge, '9');
	const char *values[] = { "\x1b]0;pwned\x07\x1b[2J", huge->str, "-1", "1e3", " 5", "0x10",
				 "18446744073709551616" };
	for (size_t i = 0; i < G_N_ELEMENTS(values); i++) {
		g_autoptr(JsonObject) cfg = json_object_new();
		JsonObject *ann = json_object_new();
		json_object_set_string_member(ann, OCISPEC_ANN_DELAY, values[i]);
		json_object_set_object_member(cfg, "annotations", ann);
		OcispecRequest r;
		g_autoptr(GError) e = NULL;
		cr_assert_not(ocispec_request(cfg, NULL, &r, &e), "value %zu accepted", i);
		cr_assert_lt(strlen(e->message), 200, "a long message: %zu bytes", strlen(e->message));
		cr_assert_null(strchr(e->message, '\x1b'), "an escape reached the message");
	}
	g_autoptr(JsonObject) cfg = json_object_new();
	JsonObject *ann = json_object_new();
	json_object_set_string_member(ann, OCISPEC_ANN_DISABLE, "\x1b[2Jyes");
	json_object_set_object_member(cfg, "annotations", ann);
	OcispecRequest r;
	g_autoptr(GError) e = NULL;
	cr_assert_not(ocispec_request(cfg, NULL, &r, &e));
	cr_assert_null(strchr(e->message, '\x1b'));
	/* the largest delay that parses is passed on for the daemon to judge */
	json_object_set_string_member(ann, OCISPEC_ANN_DISABLE, "true");
	json_object_set_string_member(ann, OCISPEC_ANN_DELAY, "18446744073709551615");
	cr_assert(ocispec_request(cfg, NULL, &r, NULL));
	cr_assert_str_eq(r.delay, "18446744073709551615");
	g_string_free(huge, TRUE);
}
