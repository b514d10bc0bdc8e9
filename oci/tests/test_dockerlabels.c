/* Unit tests of oci/dockerlabels.c: a Docker 20.10 container's request from its labels in
 * config.v2.json (the shapes dockerd 20.10.24 writes), the image's labels refused, and the
 * container ID of the runtime command line containerd's runc shim builds. */
#include <criterion/criterion.h>
#include "dockerlabels.h"

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define IMG "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

static JsonNode *parse(const char *json)
{
	GError *e = NULL;
	JsonNode *n = ocispec_load_data(json, -1, &e);
	cr_assert_not_null(n, "%s", e ? e->message : "?");
	return n;
}

/* A config.v2.json as dockerd 20.10 saves it (the fields read here, among others). */
static char *container_json(const char *id, const char *labels)
{
	return g_strdup_printf("{\"StreamConfig\":{},\"State\":{\"Running\":false},\"ID\":\"%s\","
			       "\"Image\":\"sha256:" IMG "\",\"Driver\":\"overlay2\","
			       "\"Config\":{\"Hostname\":\"0123456789ab\",\"Image\":\"busybox\","
			       "\"Labels\":%s},\"HostConfig\":null}", id, labels);
}

static JsonObject *request(const char *labels, const char *image_labels, GError **e)
{
	g_autofree char *c = container_json(ID, labels);
	g_autoptr(JsonNode) cn = parse(c);
	g_autofree char *i = image_labels ? g_strdup_printf("{\"architecture\":\"amd64\","
			"\"config\":{\"Cmd\":[\"sh\"],\"Labels\":%s},\"rootfs\":{}}", image_labels) : NULL;
	g_autoptr(JsonNode) in = i ? parse(i) : NULL;
	return dockerlabels_request(json_node_get_object(cn), ID, in ? json_node_get_object(in) : NULL, e);
}

Test(dockerlabels, id_shape)
{
	cr_assert(dockerlabels_is_id(ID));
	cr_assert_not(dockerlabels_is_id(NULL));
	cr_assert_not(dockerlabels_is_id("0123456789ab"), "a short ID is the CLI's, not the runtime's");
	cr_assert_not(dockerlabels_is_id("0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"));
	cr_assert_not(dockerlabels_is_id("../../../../etc/x/0123456789abcdef0123456789abcdef0123456789ab"));
	cr_assert_not(dockerlabels_is_id("mycontainer"), "a ctr container name is not Docker's");
	g_autofree char *p = dockerlabels_container_path("/var/lib/docker", ID);
	cr_assert_str_eq(p, "/var/lib/docker/containers/" ID "/config.v2.json");
}

Test(dockerlabels, labels_given_on_run)
{
	GError *e = NULL;
	g_autoptr(JsonObject) o = request("{\"org.oomdelayfs.oom_kill_disable\":\"true\","
					  "\"org.oomdelayfs.oom_delay_millisecs\":\"2000\","
					  "\"org.oomdelayfs.mount\":\"false\",\"com.example.team\":\"a\","
					  "\"org.oomdelayfs.other\":\"x\"}", "null", &e);
	cr_assert_not_null(o, "%s", e ? e->message : "?");
	cr_assert_eq(json_object_get_size(o), 3, "ours only, the unknown name of ours too is left out");
	cr_assert_str_eq(json_object_get_string_member(o, "org.oomdelayfs.oom_kill_disable"), "true");
	cr_assert_str_eq(json_object_get_string_member(o, "org.oomdelayfs.oom_delay_millisecs"), "2000");
	cr_assert_str_eq(json_object_get_string_member(o, "org.oomdelayfs.mount"), "false");
}

Test(dockerlabels, nothing_asked)
{
	GError *e = NULL;
	g_autoptr(JsonObject) a = request("null", NULL, &e);
	cr_assert_not_null(a);
	cr_assert_eq(json_object_get_size(a), 0);
	g_autoptr(JsonObject) b = request("{\"x\":\"y\"}", "{\"maintainer\":\"z\"}", &e);
	cr_assert_not_null(b);
	cr_assert_eq(json_object_get_size(b), 0);
	/* a non-string value is not a label dockerd wrote */
	g_autoptr(JsonObject) c = request("{\"org.oomdelayfs.oom_kill_disable\":true}", NULL, &e);
	cr_assert_eq(json_object_get_size(c), 0);
}

/* An image built with LABEL org.oomdelayfs.oom_kill_disable=true: dockerd merges the label into
 * the container's, and the container must not start held because of it. */
Test(dockerlabels, image_label_refused)
{
	GError *e = NULL;
	JsonObject *o = request("{\"org.oomdelayfs.oom_kill_disable\":\"true\"}",
				"{\"org.oomdelayfs.oom_kill_disable\":\"true\"}", &e);
	cr_assert_null(o);
	cr_assert_not_null(e);
	cr_assert(strstr(e->message, "comes from the image") != NULL, "%s", e->message);
	g_clear_error(&e);
	o = request("{\"org.oomdelayfs.oom_delay_millisecs\":\"2000\"}",
		    "{\"org.oomdelayfs.oom_delay_millisecs\":\"2000\"}", &e);
	cr_assert_null(o);
	g_clear_error(&e);
	/* the legitimate action beside it: the user's value differs from the image's */
	g_autoptr(JsonObject) u = request("{\"org.oomdelayfs.oom_kill_disable\":\"1\","
					  "\"org.oomdelayfs.oom_delay_millisecs\":\"02000\"}",
					  "{\"org.oomdelayfs.oom_kill_disable\":\"true\","
					  "\"org.oomdelayfs.oom_delay_millisecs\":\"2000\"}", &e);
	cr_assert_not_null(u, "%s", e ? e->message : "?");
	cr_assert_eq(json_object_get_size(u), 2);
	/* and the image's other labels do not matter */
	g_autoptr(JsonObject) v = request("{\"org.oomdelayfs.oom_kill_disable\":\"true\",\"a\":\"b\"}",
					  "{\"a\":\"b\"}", &e);
	cr_assert_not_null(v);
	cr_assert_eq(json_object_get_size(v), 1);
}

Test(dockerlabels, another_containers_file)
{
	GError *e = NULL;
	g_autofree char *c = container_json("ffff456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
					    "{\"org.oomdelayfs.oom_kill_disable\":\"true\"}");
	g_autoptr(JsonNode) cn = parse(c);
	cr_assert_null(dockerlabels_request(json_node_get_object(cn), ID, NULL, &e));
	cr_assert_not_null(e);
	g_clear_error(&e);
	g_autoptr(JsonNode) none = parse("{\"Config\":{\"Labels\":{\"org.oomdelayfs.oom_kill_disable\":\"true\"}}}");
	cr_assert_null(dockerlabels_request(json_node_get_object(none), ID, NULL, &e), "no ID: not dockerd's");
	g_clear_error(&e);
}

Test(dockerlabels, image_path)
{
	GError *e = NULL;
	g_autofree char *c = container_json(ID, "null");
	g_autoptr(JsonNode) cn = parse(c);
	g_autofree char *p = dockerlabels_image_path(json_node_get_object(cn), "/d", &e);
	cr_assert_str_eq(p, "/d/image/overlay2/imagedb/content/sha256/" IMG);
	g_autoptr(JsonNode) none = parse("{\"ID\":\"" ID "\",\"Image\":\"\"}");
	cr_assert_null(dockerlabels_image_path(json_node_get_object(none), "/d", &e));
	cr_assert_null(e, "no image is no error");
	g_autoptr(JsonNode) bad = parse("{\"Image\":\"sha256:" IMG "\",\"Driver\":\"../../etc\"}");
	cr_assert_null(dockerlabels_image_path(json_node_get_object(bad), "/d", &e));
	cr_assert_not_null(e);
	g_clear_error(&e);
	g_autoptr(JsonNode) bad2 = parse("{\"Image\":\"sha256:../x\",\"Driver\":\"overlay2\"}");
	cr_assert_null(dockerlabels_image_path(json_node_get_object(bad2), "/d", &e));
	cr_assert_not_null(e);
	g_clear_error(&e);
}

Test(dockerlabels, merge_into_config)
{
	g_autoptr(JsonNode) cfg = parse("{\"ociVersion\":\"1.0.2-dev\",\"linux\":{\"resources\":{\"memory\":{\"limit\":67108864}}}}");
	JsonObject *config = json_node_get_object(cfg);
	g_autoptr(JsonNode) l = parse("{\"org.oomdelayfs.oom_kill_disable\":\"true\",\"org.oomdelayfs.oom_delay_millisecs\":\"2000\"}");
	cr_assert_eq(dockerlabels_merge(config, json_node_get_object(l)), 2);
	OcispecRequest r;
	cr_assert(ocispec_request(config, NULL, &r, NULL));
	cr_assert(r.disable && !r.from_config);
	cr_assert_str_eq(r.delay, "2000");
	/* an annotation already there wins */
	g_autoptr(JsonNode) cfg2 = parse("{\"annotations\":{\"org.oomdelayfs.oom_delay_millisecs\":\"10\"}}");
	cr_assert_eq(dockerlabels_merge(json_node_get_object(cfg2), json_node_get_object(l)), 1);
	cr_assert(ocispec_request(json_node_get_object(cfg2), NULL, &r, NULL));
	cr_assert_str_eq(r.delay, "10");
	/* a bad value is refused where every request is parsed */
	g_autoptr(JsonNode) cfg3 = parse("{}");
	g_autoptr(JsonNode) badl = parse("{\"org.oomdelayfs.oom_delay_millisecs\":\"soon\"}");
	dockerlabels_merge(json_node_get_object(cfg3), json_node_get_object(badl));
	GError *e = NULL;
	cr_assert_not(ocispec_request(json_node_get_object(cfg3), NULL, &r, &e));
	g_clear_error(&e);
}

/* The command line containerd 1.6's runc shim (go-runc) builds for Docker 20.10, and crun's. */
Test(dockerlabels, container_id_of_command_line)
{
	char *docker[] = { "oomdelayfs-runtime", "--root", "/var/run/docker/runtime-runc/moby", "--log",
			   "/run/containerd/io.containerd.runtime.v2.task/moby/" ID "/log.json",
			   "--log-format", "json", "--systemd-cgroup", "create", "--bundle",
			   "/run/containerd/io.containerd.runtime.v2.task/moby/" ID, "--pid-file",
			   "/run/containerd/io.containerd.runtime.v2.task/moby/" ID "/init.pid", ID, NULL };
	g_autofree char *a = ocispec_container_id_of(G_N_ELEMENTS(docker) - 1, docker);
	cr_assert_str_eq(a, ID);
	char *tty[] = { "runc", "create", "--bundle", "/b", "--console-socket", "/s.sock", "--pid-file=/p",
			"--no-pivot", "c1", NULL };
	g_autofree char *b = ocispec_container_id_of(G_N_ELEMENTS(tty) - 1, tty);
	cr_assert_str_eq(b, "c1");
	char *crun[] = { "crun", "--cgroup-manager", "systemd", "run", "-f", "/x.json", "-b", "/b", "c2", NULL };
	g_autofree char *c = ocispec_container_id_of(G_N_ELEMENTS(crun) - 1, crun);
	cr_assert_str_eq(c, "c2");
	char *update[] = { "runc", "update", "--resources", "-", ID, NULL };
	cr_assert_null(ocispec_container_id_of(G_N_ELEMENTS(update) - 1, update));
	char *noid[] = { "runc", "create", "--bundle", "/b", NULL };
	cr_assert_null(ocispec_container_id_of(G_N_ELEMENTS(noid) - 1, noid));
}
