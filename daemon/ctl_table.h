/* ctl_table.h — the engine and the cgroup table: id -> od_cg (a real cgroup
 * directory's descriptor, counted references), and the room for the engine's
 * actions.
 * Functions named *_locked are called with the engine's lock held (any thread) and
 * never block; the others take no lock. ctl_cg_unref may close descriptors: never
 * under the lock. ctl_lookup_ref takes the lock itself and returns a reference
 * (NULL: unknown id).
 */
#ifndef OOMD_CTL_TABLE_H
#define OOMD_CTL_TABLE_H

#include <stddef.h>
#include "ctl.h"
#include "oomd/kernel_io.h"

/* A real cgroup directory, O_RDONLY|O_DIRECTORY (xattrs need a non-O_PATH fd). */
typedef struct {
	uint64_t id;
	int fd;
	gint ref;
	int64_t logged_deadline; /* the last hold deadline logged (atomic: actuators share g) */
	od_kio_hold_files *hold;  /* opened at its first hold, kept until the cgroup goes (atomic) */
	gint unstored;            /* its last PERSIST failed: guarded actions are skipped (atomic) */
} od_cg;

/* Makes the engine (cfg: oe_new's) and the table; free closes every cgroup's
 * descriptors once no reference is left (after the actuators are stopped). */
void ctl_table_init(od_controller *c, const oe_config *cfg);
void ctl_table_free(od_controller *c);

od_cg *ctl_cg_ref(od_cg *g); /* g may be NULL; returns g */
void ctl_cg_unref(od_cg *g);
/* For log lines: the real path of a cgroup (error and kill paths only). */
const char *ctl_cg_path(const od_cg *g, char *buf, size_t size);
od_cg *ctl_lookup_ref(od_controller *c, uint64_t id);

/* Room in the resident buffer for the largest batch of a call that may not
 * allocate, with extra_nodes more cgroups (ctl_table.c: the bounds). */
void ctl_ensure_room_locked(od_controller *c, size_t extra_nodes);
/* Takes the lock (ctl_lock) for a call that may emit up to 8 actions per cgroup of
 * id's subtree (id 0: of the whole tree), with c->acts pointing at a buffer that
 * large: the resident one if it is, else one of the call's own, allocated without
 * the lock (so the caller's thread must be one that may allocate and wait). */
void ctl_lock_wide(od_controller *c, const char *site, uint64_t id);
/* After a wide call's actions were copied out and cleared: c->acts points at the
 * resident buffer again. Returns the call's own buffer (NULL if none), for the
 * caller to free once the lock is let go. */
oe_action *ctl_unwiden_locked(od_controller *c);
/* Copies the engine's actions into v/cgs (caller's storage, acts.n entries) and
 * takes a reference on each action's cgroup; gives each NOTIFY and CHANGED, with its
 * cgroup's view, to the observed hooks (controller.h) while the lock still holds. */
void ctl_copy_out_locked(od_controller *c, oe_action *v, od_cg **cgs);
/* Whether any of ids[0..n) is in a hold (only holds set wake-ups). */
bool ctl_holds_in_locked(od_controller *c, const uint64_t *ids, size_t n);

#endif
