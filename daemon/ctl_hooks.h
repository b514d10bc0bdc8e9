/* ctl_hooks.h — a set of the shells' hook sets (controller.h's od_hooks): added,
 * called, removed. Any thread. ctl_hooks_notify/_changed/_removed call every set's
 * hook on the calling thread (whoever carries the action out; the controller calls
 * them without the engine's lock; ctl_hooks_observed under it) and wait only while
 * a removal is taking a set away. ctl_hooks_remove blocks until no call of that set is running; none starts
 * after it returns. Also used by fs/tests' stub controller.
 */
#ifndef OOMD_CTL_HOOKS_H
#define OOMD_CTL_HOOKS_H

#include <glib.h>
#include "oomd/controller.h"

typedef struct {
	GRWLock lock; /* read around each round of calls, written to add or remove */
	GPtrArray *sets; /* od_hooks_reg* */
} ctl_hooks;

void ctl_hooks_init(ctl_hooks *hs);
void ctl_hooks_clear(ctl_hooks *hs); /* frees the sets never removed */
od_hooks_reg *ctl_hooks_add(ctl_hooks *hs, const od_hooks *h);
void ctl_hooks_remove(ctl_hooks *hs, od_hooks_reg *reg); /* NULL is fine */

/* Under the engine's lock: every set's observed hook (controller.h). */
void ctl_hooks_observed(ctl_hooks *hs, uint64_t id, bool notify, const oe_view *v, int64_t t);
void ctl_hooks_killed(ctl_hooks *hs, uint64_t id, int64_t t, int err);
void ctl_hooks_notify(ctl_hooks *hs, uint64_t id);
void ctl_hooks_changed(ctl_hooks *hs, uint64_t id);
/* ids[0..n) in pre-order (parents first): called for each, children first. */
void ctl_hooks_removed(ctl_hooks *hs, const uint64_t *ids, size_t n);

#endif
