/* libFuzzer target of oci/ocispec.c: the input as a config.json (what it asks, its mount
 * flags, the shim's edit), as a mount table, as a cgroup path and as a runtime command line.
 * Built with -Dfuzz=true (clang); run: build-fuzz/oci/fuzz_ocispec -runs=N */
#include <stdint.h>
#include <string.h>
#include "dockerlabels.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autofree char *text = g_strndup((const char *)data, size);
	g_autoptr(JsonNode) cfg = ocispec_load_data(text, -1, NULL);
	if (cfg != NULL) {
		OcispecRequest req;
		JsonObject *o = json_node_get_object(cfg);
		if (ocispec_request(o, ocispec_object_at(o, "annotations"), &req, NULL))
			g_assert(strlen(req.delay) < sizeof(req.delay));
		(void)ocispec_cgroup_mount_attrs(o);
		const char *args[] = { "oomdelayfs-oci-hook", NULL };
		ocispec_add_hook(o, "/h/oomdelayfs-oci-hook", args, 10);
		/* the edit is idempotent */
		g_assert(!ocispec_add_hook(o, "/h/oomdelayfs-oci-hook", args, 10));
		/* the input as a Docker config.v2.json and as its image's config */
		g_autoptr(JsonObject) labels = dockerlabels_request(o, json_object_get_string_member_with_default(o, "ID", ""), o, NULL);
		if (labels != NULL)
			dockerlabels_merge(o, labels);
		g_autofree char *img = dockerlabels_image_path(o, "/d", NULL);
		g_assert(img == NULL || (g_str_has_prefix(img, "/d/image/") && strstr(img, "..") == NULL));
	}
	char *type = NULL;
	g_free(ocispec_mount_root(text, "/r/sys/fs/cgroup", &type));
	g_free(type);
	g_autofree char *dir = ocispec_shadow_dir("/s", "/k", text, NULL);
	if (dir != NULL)
		g_assert(g_str_has_prefix(dir, "/s") && strstr(dir, "/../") == NULL);
	g_auto(GStrv) argv = g_strsplit(text, " ", 64);
	g_free(ocispec_bundle_of((int)g_strv_length(argv), argv));
	g_free(ocispec_container_id_of((int)g_strv_length(argv), argv));
	return 0;
}
