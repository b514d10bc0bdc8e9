/* dockerlabels - a Docker 20.10 container's request, from its labels (see dockerlabels.h). */
#include "dockerlabels.h"

#include <string.h>

gboolean dockerlabels_is_id(const char *id)
{
	if (id == NULL || strlen(id) != 64)
		return FALSE;
	for (const char *p = id; *p != '\0'; p++)
		if (!g_ascii_isdigit(*p) && !(*p >= 'a' && *p <= 'f'))
			return FALSE;
	return TRUE;
}

char *dockerlabels_container_path(const char *data_root, const char *id)
{
	g_return_val_if_fail(dockerlabels_is_id(id), NULL);
	return g_build_filename(data_root, "containers", id, "config.v2.json", NULL);
}

/* A string member of `o`, or NULL. */
static const char *string_member(JsonObject *o, const char *name)
{
	JsonNode *n = o ? json_object_get_member(o, name) : NULL;
	if (n == NULL || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
		return NULL;
	return json_node_get_string(n);
}

/* A storage driver's name as dockerd spells them (overlay2, btrfs, zfs, vfs, ...). */
static gboolean is_driver_name(const char *d)
{
	if (d == NULL || *d == '\0' || strlen(d) > 32)
		return FALSE;
	for (const char *p = d; *p != '\0'; p++)
		if (!g_ascii_isalnum(*p) && *p != '-' && *p != '_')
			return FALSE;
	return TRUE;
}

char *dockerlabels_image_path(JsonObject *container, const char *data_root, GError **error)
{
	const char *image = string_member(container, "Image");
	if (image == NULL || *image == '\0')
		return NULL;
	const char *driver = string_member(container, "Driver");
	if (!g_str_has_prefix(image, "sha256:") || !dockerlabels_is_id(image + strlen("sha256:")) ||
	    !is_driver_name(driver)) {
		g_set_error(error, OCISPEC_ERROR, OCISPEC_ERROR_INVALID,
			    "config.v2.json: Image \"%s\" / Driver \"%s\" is not an image of this dockerd",
			    image, driver ? driver : "");
		return NULL;
	}
	return g_build_filename(data_root, "image", driver, "imagedb", "content", "sha256",
				image + strlen("sha256:"), NULL);
}

JsonObject *dockerlabels_request(JsonObject *container, const char *id, JsonObject *image,
				 GError **error)
{
	if (g_strcmp0(string_member(container, "ID"), id) != 0) {
		g_set_error(error, OCISPEC_ERROR, OCISPEC_ERROR_INVALID,
			    "config.v2.json of container %.12s names another ID", id);
		return NULL;
	}
	JsonObject *mine = ocispec_object_at(container, "Config.Labels");
	JsonObject *theirs = image ? ocispec_object_at(image, "config.Labels") : NULL;
	g_autoptr(JsonObject) out = json_object_new();
	g_autoptr(GList) names = mine ? json_object_get_members(mine) : NULL;
	for (GList *l = names; l != NULL; l = l->next) {
		const char *k = l->data;
		const char *v = string_member(mine, k);
		if (v == NULL || (strcmp(k, OCISPEC_ANN_DISABLE) != 0 && strcmp(k, OCISPEC_ANN_DELAY) != 0 &&
				  strcmp(k, OCISPEC_ANN_MOUNT) != 0))
			continue;
		if (g_strcmp0(string_member(theirs, k), v) == 0) {
			g_set_error(error, OCISPEC_ERROR, OCISPEC_ERROR_INVALID,
				    "label %s=\"%s\" comes from the image (LABEL), and an image does not "
				    "choose how its container is killed: remove it from the image, or "
				    "give the request on docker run in another spelling (true/1, 2000/02000)",
				    k, v);
			return NULL;
		}
		json_object_set_string_member(out, k, v);
	}
	return g_steal_pointer(&out);
}

guint dockerlabels_merge(JsonObject *config, JsonObject *labels)
{
	guint n = 0;
	g_autoptr(GList) names = json_object_get_members(labels);
	if (names == NULL)
		return 0;
	JsonObject *ann = ocispec_object_at(config, "annotations");
	if (ann == NULL) {
		ann = json_object_new();
		json_object_set_object_member(config, "annotations", ann); /* takes the reference */
	}
	for (GList *l = names; l != NULL; l = l->next) {
		if (json_object_has_member(ann, l->data))
			continue;
		json_object_set_string_member(ann, l->data, json_object_get_string_member(labels, l->data));
		n++;
	}
	return n;
}
