/* controller.h — the one door to the engine for both shells (FUSE workers and the
 * watcher's main loop). It owns the engine, a mutex around it, the timerfd that
 * follows oe_next_wakeup() with the deadline thread that sleeps on it, the
 * actuator threads, and the table id -> real cgroup directory fd they need. Each
 * call: lock, feed the engine, unlock, then carry out the actions (kernel writes,
 * notifications) without holding the lock, because a memory.max write can block
 * for as long as the kernel reclaims. Each function says which thread calls it:
 * calls for a FUSE worker make their kernel writes themselves and wait for them;
 * calls for the loop hand them to the actuators and never wait for the kernel.
 * Functions returning int return 0 or a positive errno.
 */
#ifndef OOMD_CONTROLLER_H
#define OOMD_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "oomd/engine.h"

typedef struct od_controller od_controller;

/* Hooks the shells register. control_changed, notify and removed are called from
 * whichever thread carries the action out (an actuator, the loop, a FUSE worker; never
 * the deadline thread), without the engine's lock. No hook may take the engine's lock:
 * observed runs under it inside the hooks' read lock, so a hook waiting for it inside
 * that read lock would deadlock as soon as a writer (a set added or removed) queued
 * between them, on any rwlock that holds new readers back for a waiting writer.
 * Any member may be NULL. */
typedef struct {
	void (*control_changed)(void *ud, uint64_t id); /* poll wake of shadow memory.oom_control */
	void (*notify)(void *ud, uint64_t id);          /* cgroup.event_control listeners of id */
	void (*removed)(void *ud, uint64_t id);          /* cgroup gone: last signal, drop listeners */
	/* For each NOTIFY (notify true) and CHANGED an engine call emitted, under the
	 * engine's lock on that call's thread (the deadline thread too) before its batch is
	 * carried out: id's view as the call left it, and when it was taken. The one hook
	 * whose calls come in the engine's order: a view taken by a later hook may show
	 * the next change already (o-audit and o-metrics, 6.1 under CI load: a hold ended
	 * before the actuator ran its onset's hooks, and no record of it was ever made).
	 * Must not block, allocate or log. */
	void (*observed)(void *ud, uint64_t id, bool notify, const oe_view *v, int64_t t);
	/* When the write of a kill the engine ordered (KILL_KERNEL, KILL_GROUP) ended, on
	 * the thread that made it (the kill actuator, at its priority). Must not block. */
	void (*killed)(void *ud, uint64_t id, int64_t t, int err); /* err: 0 or the errno */
	void *ud;
} od_hooks;

/* On main's thread, after the niceness the controller's threads inherit is set.
 * Starts the actuators; NULL if no timerfd could be made. */
od_controller *od_controller_new(const oe_config *cfg);
/* Stops the deadline thread, runs what the actuators have queued, frees. */
void od_controller_free(od_controller *c);

/* Adds a set of hooks (any number of sets; any thread) and returns its handle. */
typedef struct od_hooks_reg od_hooks_reg;
od_hooks_reg *od_controller_set_hooks(od_controller *c, const od_hooks *h);
/* Removes a set: when it returns, no call of its hooks is running and none will
 * start, so their ud may be freed. Blocks for the calls in flight: never call it
 * from a hook, nor holding a lock a hook takes. NULL is fine. */
void od_controller_remove_hooks(od_controller *c, od_hooks_reg *reg);

/* Clock used for every engine input (CLOCK_BOOTTIME, ns). */
int64_t od_now(void);

/* SCHED_FIFO priority (1-99; 0 = normal scheduling) for the deadline thread and the
 * actuator reserved for kills. Set before od_controller_start_deadlines; a refusal
 * (no CAP_SYS_NICE) is logged once per thread and the thread keeps its niceness. */
void od_controller_set_rt_priority(od_controller *c, int prio);

/* The watchdog's heartbeat: the deadline thread wakes at least every ms (0: only for
 * deadlines) and counts its wake-ups; od_controller_beats reads the count (any thread). */
void od_controller_set_heartbeat(od_controller *c, int ms);
uint64_t od_controller_beats(od_controller *c);

/* Starts the deadline thread: it sleeps on the timerfd that follows
 * oe_next_wakeup(), samples held cgroups and decides their kills, off the main
 * loop (which may block in the kernel under pressure). Not started, no deadline
 * passes (--release-all, tests). Stopped by od_controller_free. */
void od_controller_start_deadlines(od_controller *c);

/* A cgroup directory exists: dirfd is any fd of it (O_PATH is fine; the controller
 * opens its own), parent_id the st_ino of its parent directory (0 for the root).
 * For a FUSE worker (mkdir, a cgroup's first use) or main before the loop runs: its
 * kernel writes are made on this thread, which waits for them.
 * Reads its real knobs and persisted state, feeds oe_cgroup_add (rule 7
 * inheritance happens there). Idempotent: the FUSE mkdir and the watcher's
 * IN_CREATE both call it. *id_out (may be NULL) gets the cgroup's id (st_ino).
 * Adds unknown ancestors first (a tree made directly in the real tree and used
 * before the watcher saw it). ENOENT for a removed cgroup: a file held open across
 * an rmdir must not bring it back. */
int od_controller_add(od_controller *c, uint64_t parent_id, int dirfd, uint64_t *id_out);
/* The same from the main loop (the watcher's events): the kernel writes go to the
 * actuators; the reads of the knobs and state are still made here. */
int od_controller_add_from_loop(od_controller *c, uint64_t parent_id, int dirfd, uint64_t *id_out);
/* Any thread: how many cgroups were added with a persisted state outside a hold so far
 * (each one that resumed a hold is logged instead). */
size_t od_controller_states_adopted(od_controller *c);

/* From the main loop (the watcher) — these never wait for a kernel write: */
/* A cgroup and its subtree are gone: the hooks' removed runs for each, children first. */
void od_controller_remove(od_controller *c, uint64_t id);
/* Reads memory.current / memory.events(.local) of id and feeds oe_sample. */
void od_controller_sample(od_controller *c, uint64_t id);
/* The real memory.max of id changed (inotify): read it and feed oe_real_max_seen. */
void od_controller_real_max_changed(od_controller *c, uint64_t id);

/* Writes through the shadow tree (values already parsed), from a FUSE worker: the
 * caller's thread carries the kernel writes out itself, in the cgroup's order (after
 * every write emitted before it), and gets the first failed one's errno (ENODEV for
 * a cgroup removed meanwhile; the errno of a failed state write, whose raise or
 * freeze was then not done). The engine keeps the value written either way. */
int od_controller_write_delay(od_controller *c, uint64_t id, uint64_t ms);
/* While on (the tree is being adopted after a start, the shadow already served),
 * the writes above wait until it is turned off: a subtree write must reach every
 * descendant, and one not adopted yet would later adopt its older persisted state.
 * Reads do not wait: a cgroup read first is added on that use. Any thread. */
void od_controller_adopting(od_controller *c, bool on);
int od_controller_write_disable(od_controller *c, uint64_t id, uint64_t v);
/* fd: the caller's descriptor of the cgroup's real memory.max (memory.high), open for
 * writing, or -1: the rules' write of that knob goes through it (no open of its own). */
int od_controller_write_limit(od_controller *c, uint64_t id, uint64_t bytes, int fd);
int od_controller_write_high(od_controller *c, uint64_t id, uint64_t bytes, int fd);

/* Any thread: the engine's view of id (false: not known). */
bool od_controller_view(od_controller *c, uint64_t id, oe_view *v);

/* Read-only snapshot for the status socket: calls fn for every known cgroup (or only
 * `only`, if not 0) with its view and the real directory's path, after the engine's
 * lock is let go (the lock is held only to copy the views). Any thread; returns the
 * number of calls. */
typedef void (*od_snapshot_fn)(void *ud, uint64_t id, const char *path, const oe_view *v);
size_t od_controller_snapshot(od_controller *c, uint64_t only, od_snapshot_fn fn, void *ud);

/* Hand every managed cgroup back to the kernel (SIGTERM, --release-all): main's
 * thread, the loop's or not; stops the deadline thread, waits for the actuators'
 * queue, and makes every kernel write itself. */
void od_controller_release_all(od_controller *c);

#endif
