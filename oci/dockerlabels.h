/* dockerlabels - what a Docker 20.10 container asks of oomdelayfs, from its labels.
 *
 * Docker before 24 has no --annotation and, on cgroup v2, discards --oom-kill-disable
 * before the container is saved (daemon/daemon_unix.go, verifyPlatformContainerResources:
 * "OomKillDisable discarded", resources.OomKillDisable = nil). Nothing of either reaches the
 * OCI config.json containerd hands the runtime. What does reach the runtime is the container
 * ID (`create --bundle B ID`: dockerd uses its container ID as containerd's), and dockerd has
 * saved the container, labels included, in <data-root>/containers/<ID>/config.v2.json (mode
 * 0600, root, written at `docker create` and again before each start: daemon/create.go,
 * container.toDisk). The shim reads the labels there:
 *   docker run --label org.oomdelayfs.oom_kill_disable=true ...
 *   docker run --label org.oomdelayfs.oom_delay_millisecs=2000 ...
 *   docker run --label org.oomdelayfs.mount=false ...
 * (the names and values of the annotations, ocispec.h) and copies them into config.json's
 * annotations, where the hook reads them.
 *
 * An image's labels are merged into the container's (daemon/commit.go, merge: an image label
 * is added unless the container has the same key), so config.v2.json alone cannot tell
 * `docker run --label K=V` from an image built with `LABEL K=V`. An image's author must not
 * decide how its container is killed (docs/SECURITY.md): a label of ours that the image's
 * config carries with the same value is refused (the container does not start), one whose value
 * differs from the image's, or that the image lacks, is the user's.
 *
 * Contract: pure functions (no I/O), for the single-threaded shim; errors as GError
 * (OCISPEC_ERROR_INVALID); nothing exits.
 */
#ifndef OOMD_DOCKERLABELS_H
#define OOMD_DOCKERLABELS_H

#include "ocispec.h"

/* TRUE if `id` has the shape of a Docker container ID (64 lower-case hex digits): only then
 * is it joined to a path. */
gboolean dockerlabels_is_id(const char *id);

/* <data_root>/containers/<id>/config.v2.json; `id` must pass dockerlabels_is_id. */
char *dockerlabels_container_path(const char *data_root, const char *id);

/* The image config of a saved container (config.v2.json's "Image": "sha256:<hex>", in
 * <data_root>/image/<"Driver">/imagedb/content/sha256/<hex>), or NULL: with an error if the
 * fields are there but malformed, without one if the container names no image. */
char *dockerlabels_image_path(JsonObject *container, const char *data_root, GError **error);

/* The labels of ours (org.oomdelayfs.*) the user gave the container `id`: a new object,
 * empty if none. `container` is its config.v2.json, `image` its image's config (NULL: none).
 * NULL with an error if config.v2.json is another container's, or a label of ours comes from
 * the image. */
JsonObject *dockerlabels_request(JsonObject *container, const char *id, JsonObject *image,
				 GError **error);

/* Copies the members of `labels` into config.json's annotations, keeping any annotation
 * already there (an engine that passes annotations has the last word). Returns the number
 * copied. */
guint dockerlabels_merge(JsonObject *config, JsonObject *labels);

#endif
