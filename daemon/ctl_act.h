/* ctl_act.h — carrying the engine's actions out: kernel writes, samples, hooks.
 * ctl_finish_locked* and ctl_carry_out are entered with the engine's lock held and
 * return with it let go; what runs on the calling thread and what goes to the
 * actuator threads depends on the caller (a FUSE worker runs its whole batch
 * itself, blocking as the native write would, and gets the first failed kernel
 * write's positive errno; the loop and the deadline thread hand every kernel write
 * to the actuators and get 0). The actuators (NACTUATORS threads, the first one
 * for kills only) take batches from the order (order.h), started by
 * ctl_actuators_start and joined, once their queue is run, by ctl_actuators_stop.
 */
#ifndef OOMD_CTL_ACT_H
#define OOMD_CTL_ACT_H

#include "ctl.h"
#include "ctl_table.h"

void ctl_actuators_start(od_controller *c);
void ctl_actuators_stop(od_controller *c);

/* rearm: the engine call may have moved the next wake-up. */
int ctl_finish_locked_rearm(od_controller *c, bool rearm);
int ctl_finish_locked(od_controller *c);
/* v/g: the copied-out batch (caller's storage and references, n entries). */
int ctl_carry_out(od_controller *c, oe_action *v, od_cg **g, size_t n);
/* One action on this thread, whatever the thread; positive errno of its kernel write. */
int ctl_run_one(od_controller *c, const oe_action *a, od_cg *g);
/* Reads g's memory.current and events and feeds oe_sample (takes the lock). */
void ctl_sample(od_controller *c, od_cg *g);

#endif
