/* ec_bounds.c — the listener bounds (ec_bounds.h). */
#include "ec_bounds.h"

const char *ec_bounds_refusal(const ec_counts *n, bool root, bool owner)
{
	bool stranger = !root && !owner;
	if (n->cg_mine >= (stranger ? EC_MAX_STRANGER_PER_CGROUP : EC_MAX_OWNER_PER_CGROUP))
		return "listener limit reached: its listeners on this cgroup";
	if (stranger && n->cg_strangers >= EC_MAX_STRANGERS_PER_CGROUP)
		return "listener limit reached: the strangers' share of this cgroup";
	if (n->process >= EC_MAX_PER_PROCESS)
		return "listener limit reached: its process's listeners";
	if (n->principal >= EC_MAX_PER_PRINCIPAL)
		return root ? "listener limit reached: root's listeners"
			    : "listener limit reached: its uid's (or user namespace's) listeners";
	if (n->total >= EC_MAX_TOTAL)
		return "listener limit reached: all listeners";
	if (!root && n->not_root >= EC_MAX_TOTAL - EC_ROOT_RESERVE)
		return "listener limit reached: all listeners but root's reserve";
	return NULL;
}
