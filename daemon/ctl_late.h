/* ctl_late.h — the late tick's log line, written by the main loop for the deadline thread.
 *
 * The deadline thread must never block, and a log write can: under global memory pressure
 * a write to the log file (tmpfs) or to journald's stream socket allocates and stalls in
 * reclaim. 6.1, f-pressure with the diagnostics build (2026-12-06): chains of ticks each
 * "woken" 120-280 ms late with no run-queue wait and no lock wait, the thread asleep in the
 * previous late tick's own log line, and one such tick at a deadline made a kill 118 ms
 * late. So the deadline thread only posts the line (ctl_late_post: a trylock'd slot and an
 * eventfd write, nothing that allocates or waits), and the loop writes it.
 *
 * ctl_late_init / ctl_late_free: main's thread, with the controller. ctl_late_post: the
 * deadline thread; never blocks (a line that finds the slot busy or full is counted, and
 * the loop's next line says how many were not logged one by one).
 */
#ifndef OOMD_CTL_LATE_H
#define OOMD_CTL_LATE_H

#include <stdint.h>

#include "ctl.h"

/* 0 or a positive errno (eventfd). The loop's source is attached to the default context. */
int ctl_late_init(od_controller *c);
void ctl_late_free(od_controller *c);
/* "timer <late> ms late<why>" to be logged by the loop. */
void ctl_late_post(od_controller *c, int64_t late_ns, const char *why);

#endif
