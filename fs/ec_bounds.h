/* ec_bounds.h — how many OOM listeners one more registration may find (the
 * rule, pure: ec_bounds.c; event_control.c counts under its lock and asks).
 *
 * Who counts as whom. A *principal* is a uid of the initial user namespace, or a
 * whole user namespace other than that: a container that maps 65,536 uids is one
 * principal, not 65,536 (issue 21: four uids filled the total). *Root* is uid 0 of
 * the initial user namespace. The *owner* of a cgroup is the uid owning its real
 * directory or its memory.max (a delegated cgroup's tenant, or whoever the admin
 * gave the knob). Everyone else is a *stranger* to that cgroup; memory.oom_control
 * is readable by all, so strangers may listen, as in v1.
 *
 * The bounds (issue 21, item 4: uid 1000's 255 listeners on a root-owned cgroup
 * left root's own handler ENOMEM):
 *  - per principal and cgroup: EC_MAX_STRANGER_PER_CGROUP for a stranger,
 *    EC_MAX_OWNER_PER_CGROUP for root and the owner;
 *  - strangers together on one cgroup: EC_MAX_STRANGERS_PER_CGROUP, so that no
 *    set of strangers fills what root and the owner register (they are not
 *    counted in it);
 *  - per process EC_MAX_PER_PROCESS, per principal EC_MAX_PER_PRINCIPAL;
 *  - EC_MAX_TOTAL in all, of which EC_ROOT_RESERVE only root may take.
 * Past any of them: ENOMEM (memcg_write_event_control's only exhaustion).
 * Any thread; never blocks.
 */
#ifndef OOMD_FS_EC_BOUNDS_H
#define OOMD_FS_EC_BOUNDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EC_MAX_STRANGER_PER_CGROUP 64
#define EC_MAX_OWNER_PER_CGROUP 256
#define EC_MAX_STRANGERS_PER_CGROUP 256
#define EC_MAX_PER_PROCESS 256
#define EC_MAX_PER_PRINCIPAL 1024
#define EC_MAX_TOTAL 4096
#define EC_ROOT_RESERVE 512

/* What is registered now, as seen by the one who asks. */
typedef struct {
	size_t total;         /* every listener */
	size_t not_root;      /* those of principals other than root */
	size_t cg_strangers;  /* on the cgroup, registered by strangers to it */
	size_t cg_mine;       /* on the cgroup, by this principal */
	size_t process;       /* of this process, anywhere */
	size_t principal;     /* of this principal, anywhere */
} ec_counts;

/* The principal of a caller: its uid when it is in the initial user namespace (or
 * its namespace is unknown: userns 0), else its user namespace's inode. */
static inline uint64_t ec_principal(bool init_userns, uint64_t userns, unsigned uid)
{
	return init_userns || !userns ? (uint64_t)uid : (UINT64_C(1) << 32) | userns;
}

/* Is the principal root (uid 0 of the initial user namespace)? */
static inline bool ec_principal_is_root(uint64_t principal)
{
	return principal == 0;
}

/* Counts one registration (of cgroup id, process tgid, principal, root, stranger) into n,
 * as seen by one who asks for a listener of cgroup a_id from process a_tgid as a_principal.
 * Live listeners and carried ones not re-taken yet alike. */
static inline void ec_count_one(ec_counts *n, uint64_t a_id, int a_tgid, uint64_t a_principal, uint64_t id,
				int tgid, uint64_t principal, bool root, bool stranger)
{
	n->total++;
	n->not_root += !root;
	n->cg_strangers += id == a_id && stranger;
	n->cg_mine += id == a_id && principal == a_principal;
	n->process += tgid == a_tgid;
	n->principal += principal == a_principal;
}

/* NULL when one more fits, else which bound it hits (for the log line). */
const char *ec_bounds_refusal(const ec_counts *n, bool root, bool owner);

#endif
