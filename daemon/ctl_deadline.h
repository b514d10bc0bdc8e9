/* ctl_deadline.h — the deadline thread: it alone reads the timerfd, which follows
 * oe_next_wakeup(); each wake-up is a heartbeat for the watchdog, and a fired timer
 * is a tick (oe_tick: hold samples and kill decisions, handed to the actuators).
 * Also defines controller.h's od_controller_start_deadlines, _set_heartbeat,
 * _beats and _set_rt_priority. ctl_rearm_locked: with the engine's lock held, any
 * thread, never blocks. ctl_deadlines_stop: main's thread (free, the hand-back);
 * blocks until the thread has returned (no tick runs after it).
 */
#ifndef OOMD_CTL_DEADLINE_H
#define OOMD_CTL_DEADLINE_H

#include "ctl.h"

/* 0 or a positive errno (timerfd_create). */
int ctl_deadlines_init(od_controller *c);
void ctl_deadlines_free(od_controller *c); /* after ctl_deadlines_stop */
void ctl_deadlines_stop(od_controller *c);
void ctl_rearm_locked(od_controller *c);

#endif
