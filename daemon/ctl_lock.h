/* ctl_lock.h — the engine's lock. Any thread (FUSE workers, the loop, the deadline
 * thread, the actuators) calls ctl_lock/ctl_unlock around pure engine work only;
 * ctl_lock blocks until the lock is free. A thread below the controller's niceness
 * is raised to it while it holds the lock. ctl_apply_rt puts the calling thread at
 * the controller's real-time priority (the deadline thread, the kill actuator, an
 * actuator while it runs a kill); it never blocks and returns nothing (a refusal
 * is logged once per thread).
 */
#ifndef OOMD_CTL_LOCK_H
#define OOMD_CTL_LOCK_H

#include "ctl.h"

/* Names the calling thread in the diagnostics build's late-tick line (unnamed: "a
 * FUSE worker"). name: a static string. Nothing but that line reads it. */
void ctl_lock_name_thread(const char *name);

/* init reads lock_nice from the calling thread's niceness: call it on main's thread. */
void ctl_lock_init(od_controller *c);
void ctl_lock_clear(od_controller *c);

/* site names the call for the diagnostics build only (diag.h). */
void ctl_lock(od_controller *c, const char *site);
void ctl_unlock(od_controller *c);

void ctl_apply_rt(od_controller *c, const char *who); /* who: for the refusal's log line */
/* Back from ctl_apply_rt to SCHED_OTHER at the thread's niceness (an actuator that
 * ran a kill for the busy kill actuator). Never blocks. */
void ctl_drop_rt(void);
/* Touches this thread's stack up front (pages are locked as they are first touched). */
void ctl_prefault_stack(void);

#endif
