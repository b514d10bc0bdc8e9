/* fsstats.h — what the status socket reads from the shadow tree: FUSE requests
 * counted by operation (one relaxed atomic increment per request, nothing else on
 * the request path) and the cgroup.event_control listeners of a cgroup.
 * Any thread; none blocks (od_shadowfs_listeners takes the listeners' lock). */
#ifndef OOMD_FSSTATS_H
#define OOMD_FSSTATS_H

#include <stddef.h>
#include <stdint.h>
#include "oomd/shadowfs.h"

typedef struct {
	const char *op; /* "lookup", "read", ... */
	uint64_t n;     /* requests since the daemon started */
} od_fs_opcount;

/* Fills out (up to max) with every operation the shadow tree serves; returns the count. */
size_t od_fs_opcounts(od_fs_opcount *out, size_t max);

/* Listeners registered on cgroup id (cgroup.event_control); 0 if fs is NULL. */
size_t od_shadowfs_listeners(od_shadowfs *fs, uint64_t id);

#endif
