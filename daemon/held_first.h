/* held_first.h — adoption order after a restart: the cgroups whose persisted state says a
 * hold was running are added to the controller before the watcher's walk of the whole tree
 * (od_watcher_adopt), so that a resumed hold's deadline is never late because 10,000 other
 * cgroups were adopted first (SEMANTICS, "What the daemon must survive"). The walk finds
 * them known later and adds their watches.
 * Called on the loop's thread before the walk, with the deadline thread running. Blocks for
 * a pass over the tree: per cgroup one getxattr and one fstatat, per directory with
 * subdirectories a readdir; a cgroup is opened only when held. Returns how many it added.
 */
#ifndef OOMD_HELD_FIRST_H
#define OOMD_HELD_FIRST_H

#include <stddef.h>
#include "oomd/controller.h"

size_t od_adopt_held_first(od_controller *c, int root_fd);

#endif
