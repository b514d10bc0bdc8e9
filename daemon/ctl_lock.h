/* ctl_lock.h — the engine's lock. Any thread (FUSE workers, the loop, the deadline
 * thread, the actuators) calls ctl_lock/ctl_unlock around pure engine work only;
 * ctl_lock blocks until the lock is free. A thread below the controller's niceness
 * is raised to it while it holds the lock. ctl_apply_rt puts the calling thread at
 * the controller's real-time priority (the deadline thread, the kill actuator);
 * it never blocks and returns nothing (a refusal is logged once per thread).
 */
#ifndef OOMD_CTL_LOCK_H
#define OOMD_CTL_LOCK_H

#include "ctl.h"

/* Which of our threads this is (NULL: a FUSE worker, or main before the loop runs). */
extern _Thread_local const char *thread_role;
extern const char ROLE_DEADLINE[], ROLE_KILLER[], ROLE_ACTUATOR[], ROLE_LOOP[];

/* Both set lock_nice from the calling thread's niceness: call on main's thread. */
void ctl_lock_init(od_controller *c);
void ctl_lock_clear(od_controller *c);

/* site names the call for the diagnostics build only (diag.h). */
void ctl_lock(od_controller *c, const char *site);
void ctl_unlock(od_controller *c);

void ctl_apply_rt(od_controller *c);
/* Touches this thread's stack up front (pages are locked as they are first touched). */
void ctl_prefault_stack(void);

#endif
