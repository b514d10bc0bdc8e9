/* ctl_post.h — log lines of the real-time threads, written by the main loop.
 *
 * The deadline thread and the kill actuator must never block, and a log write can: under
 * global memory pressure a write to the log file (tmpfs) or to journald's stream socket
 * allocates and stalls in reclaim. 6.1, f-pressure with the diagnostics build (2026-12-06):
 * chains of ticks each "woken" 120-280 ms late, the deadline thread asleep in the previous
 * late tick's own log line. And in CI (6.1, 2026-12-06) a second cgroup's kill began 115 ms
 * after its deadline, its tick 53 ms late: the kill actuator was still writing the first
 * cgroup's kill line, whose memory.max write had returned 68 ms before. So these threads
 * only post their lines (ctl_post_line: a slot claimed with an atomic, a formatted copy, an
 * eventfd write: nothing that allocates or waits), and the loop writes them, in the order
 * they were posted. A line's own figures say when things happened; the log's time stamp is
 * when the loop wrote it.
 *
 * ctl_post_init / ctl_post_free: main's thread, with the controller (free writes what is
 * still posted). ctl_post_line: any thread; never blocks (a line that finds its slot still
 * taken is counted, and the loop's next line says how many were not logged).
 */
#ifndef OOMD_CTL_POST_H
#define OOMD_CTL_POST_H

#include "ctl.h"

/* 0 or a positive errno (eventfd). The loop's source is attached to the default context. */
int ctl_post_init(od_controller *c);
void ctl_post_free(od_controller *c);
/* One line for the loop to log (g_message; warn: g_warning). */
void ctl_post_line(od_controller *c, bool warn, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

#endif
