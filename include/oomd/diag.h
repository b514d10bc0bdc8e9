/* diag.h — the controller's late-tick diagnostics, built only with
 * `meson setup -Ddiagnostics=true` (OOMD_DIAGNOSTICS). Off by default: then every
 * function here is an empty inline, and the request and kill paths carry none of
 * it (no getrusage, no clock reads, no lock-site strings stored).
 *
 * What it adds to the controller's one line for a late tick ("timer N ms late"):
 * the wake-up split from the wait for the engine's lock; the longest hold of that
 * lock since the previous tick (where it was taken, by which thread, and whether
 * the holder ran, slept or was preempted: getrusage(RUSAGE_THREAD) at both ends);
 * the deadline thread's run time and run-queue wait (/proc/thread-self/schedstat);
 * and the slowest action it ran. docs/DESIGN.md ("the late tick") tells what these
 * figures found.
 *
 * Threads: od_diag_lock_taken and od_diag_lock_released are called with the engine's
 * lock held, by whichever thread holds it, and so is od_diag_tick_locked; every other
 * call but new/free comes from the deadline thread only. Nothing blocks; nothing
 * allocates after od_diag_new.
 */
#ifndef OOMD_DIAG_H
#define OOMD_DIAG_H

#include <stdbool.h>
#include <stdint.h>
#include "oomd/engine.h"

typedef struct od_diag od_diag;

/* The marks of a deadline's way to its kill (CI's f-pressure on 6.12: a kill began 58 ms
 * after a tick that was 2 ms late, with a SCHED_FIFO 99 probe never more than 8.6 ms late):
 * the tick has the lock, the deadline thread's sample is read, it has the lock again,
 * the kill is handed off, an actuator took it. */
typedef enum {
	OD_DIAG_TICK,
	OD_DIAG_READ,
	OD_DIAG_LOCKED,
	OD_DIAG_HANDOFF,
	OD_DIAG_PICKED,
	OD_DIAG_N_MARKS
} od_diag_mark_at;

#if OOMD_DIAGNOSTICS
/* Any thread: stores the time of mark `at` (the last of each wins). */
void od_diag_mark(od_diag_mark_at at);
/* The thread running a kill, at t0, before its write: the marks' steps in ms as
 * "; diag: ..." (a thread-local buffer: taken before the write, for a write of the
 * kernel-mode kill may last while the next kill's marks are made). */
const char *od_diag_kill_timeline(int64_t t0);
/* After a sample of a cgroup still held at `now`: logs a line if its deadline has passed
 * (rule 5: a deadline that passes while usage is under L kills at the next reading over
 * L), with the reading's usage and L. */
void od_diag_held_past(uint64_t id, int64_t now, const oe_view *v, uint64_t current);
od_diag *od_diag_new(void);
void od_diag_free(od_diag *d);
/* site: where the lock was taken; role: which thread (static strings). */
void od_diag_lock_taken(od_diag *d, const char *site, const char *role);
void od_diag_lock_released(od_diag *d);
/* The deadline thread, at its start: opens its own schedstat. */
void od_diag_deadline_thread(od_diag *d);
/* CLOCK_BOOTTIME ns (od_now), for the arguments below. */
int64_t od_diag_clock(void);
/* An action the deadline thread ran (when `deadline`), begun at t0. */
void od_diag_action(od_diag *d, bool deadline, int64_t t0, const char *name, uint64_t id);
/* In the tick, under the lock: the longest hold since the previous tick is taken over. */
void od_diag_tick_locked(od_diag *d);
/* After the tick's actions (armed: when it was due, woke: when read() on the timerfd
 * returned, locked: when the tick had the lock). Returns the text that follows the
 * late line's "timer N ms late" when `late` ("" otherwise), valid until the next call. */
const char *od_diag_tick_done(od_diag *d, bool late, int64_t armed, int64_t woke, int64_t locked);
#else
static inline void od_diag_mark(od_diag_mark_at at) { (void)at; }
static inline const char *od_diag_kill_timeline(int64_t t0)
{
	(void)t0;
	return "";
}
static inline void od_diag_held_past(uint64_t id, int64_t now, const oe_view *v, uint64_t current)
{
	(void)id, (void)now, (void)v, (void)current;
}
static inline od_diag *od_diag_new(void) { return NULL; }
static inline void od_diag_free(od_diag *d) { (void)d; }
static inline void od_diag_lock_taken(od_diag *d, const char *site, const char *role)
{
	(void)d, (void)site, (void)role;
}
static inline void od_diag_lock_released(od_diag *d) { (void)d; }
static inline void od_diag_deadline_thread(od_diag *d) { (void)d; }
static inline int64_t od_diag_clock(void) { return 0; }
static inline void od_diag_action(od_diag *d, bool deadline, int64_t t0, const char *name,
				  uint64_t id)
{
	(void)d, (void)deadline, (void)t0, (void)name, (void)id;
}
static inline void od_diag_tick_locked(od_diag *d) { (void)d; }
static inline const char *od_diag_tick_done(od_diag *d, bool late, int64_t armed, int64_t woke,
					    int64_t locked)
{
	(void)d, (void)late, (void)armed, (void)woke, (void)locked;
	return "";
}
#endif

#endif
