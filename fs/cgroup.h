/* cgroup.h — the one way fs/ reaches the controller's state of a cgroup (cgroup.c).
 * FUSE worker threads; each call may block as the controller's calls do (a limit
 * write waits for the kernel's reclaim). Returns 0 or a positive errno.
 *
 * A cgroup made a moment ago in the real tree may not be known to the controller
 * yet (the watcher has not seen it): when the controller answers ENOENT, the
 * cgroup is added (od_controller_add: idempotent, unknown ancestors too) and the
 * call made once more. The one fallback: a cgroup the controller still cannot
 * serve — removed (the controller refuses to add a removed cgroup, so a file held
 * open across an rmdir cannot bring it back), or no controller — answers ENODEV,
 * what kernfs answers on a file of a removed cgroup; an add that fails otherwise
 * answers its own errno. No handler reads or writes the real memory.max in the
 * controller's place (only v1's memory.stat reads it for ancestors above the
 * served tree, which no controller manages).
 */
#ifndef OOMD_FS_CGROUP_H
#define OOMD_FS_CGROUP_H

#include "fs_private.h"

/* The knobs a user writes through the controller (the engine keeps them). */
typedef enum { FS_CG_DELAY, FS_CG_DISABLE, FS_CG_LIMIT, FS_CG_HIGH } fs_cg_knob;

int fs_cg_view(const fs_synth_ctx *c, oe_view *v);
/* fd: the caller's open real file of a LIMIT or HIGH knob (the FUSE open's), which
 * the controller writes through, or -1 */
int fs_cg_write(const fs_synth_ctx *c, fs_cg_knob knob, uint64_t value, int fd);

#endif
