/* ctl_adopt.h — adding and removing cgroups (controller.h's od_controller_add*
 * and od_controller_remove). Called by FUSE workers (mkdir, a first use of a cgroup
 * made in the real tree) and the loop (the watcher); ctx says which (ctl_act.h: what
 * runs inline).
 * ctl_adopt blocks on reads of the cgroup's knobs and persisted state, outside the
 * lock; it returns 0 or a positive errno (ENOENT: a removed cgroup, or one not under
 * the served root). ctl_remove_subtree carries out the engine's actions for the
 * subtree, then calls the hooks' removed for each cgroup, children first.
 */
#ifndef OOMD_CTL_ADOPT_H
#define OOMD_CTL_ADOPT_H

#include "ctl.h"

int ctl_adopt(od_controller *c, const ctl_ctx *ctx, uint64_t parent_id, int dirfd,
	      uint64_t *id_out);
void ctl_remove_subtree(od_controller *c, const ctl_ctx *ctx, uint64_t id);

#endif
