/* ctl_act.h — carrying the engine's actions out: kernel writes, samples, hooks.
 * ctl_finish_locked* and ctl_carry_out are entered with the engine's lock held and
 * return with it let go. The caller says what it is (ctx, ctl.h): a CTL_WORKER runs
 * its whole batch itself in its turn, blocking as the native write would, and gets
 * the first failed kernel write's positive errno; the others run at once only what
 * cannot block (the loop and a thread inside a batch: what leads up to the first
 * kernel write; the deadline thread: leading samples), hand the rest to the
 * actuators and get 0. The actuators (NACTUATORS threads, the first for kills only)
 * take batches from the order (order.h); ctl_actuators_stop joins them once they
 * have run what is queued.
 */
#ifndef OOMD_CTL_ACT_H
#define OOMD_CTL_ACT_H

#include "ctl.h"
#include "ctl_table.h"

void ctl_actuators_start(od_controller *c);
void ctl_actuators_stop(od_controller *c);

/* rearm: the engine call may have moved the next wake-up. */
int ctl_finish_locked_rearm(od_controller *c, const ctl_ctx *ctx, bool rearm);
/* The same; after_copy runs under the lock once the batch holds its own references
 * (a removal takes the cgroups out of the table there). */
int ctl_finish_locked_with(od_controller *c, const ctl_ctx *ctx, bool rearm,
			   void (*after_copy)(od_controller *c, void *ud), void *ud);
int ctl_finish_locked(od_controller *c, const ctl_ctx *ctx);
/* v/g: the copied-out batch (caller's storage and references, n entries). */
int ctl_carry_out(od_controller *c, const ctl_ctx *ctx, oe_action *v, od_cg **g, size_t n);
/* One action on this thread, whoever calls; positive errno of its kernel write. */
int ctl_run_one(od_controller *c, const ctl_ctx *ctx, const oe_action *a, od_cg *g);
/* Reads g's memory.current and events and feeds oe_sample (takes the lock). */
void ctl_sample(od_controller *c, const ctl_ctx *ctx, od_cg *g);

#endif
