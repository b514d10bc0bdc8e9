/* watcher.h — the daemon's one event loop (the default glib main context):
 * inotify on every real cgroup directory (subdirectories created and removed
 * directly in the real tree, rule 7), on each memory.events (IN_MODIFY: a
 * memory event -> od_controller_sample), on each memory.max (a direct write by
 * another program -> od_controller_real_max_changed, adopted as the new L) and
 * on each cgroup.subtree_control (the memory controller enabled later makes
 * memory.* files appear, which kernfs does not report); and SIGINT/SIGTERM/SIGHUP.
 * With watch, it starts the controller's deadline thread (od_controller_start_deadlines).
 * Nothing wakes up periodically: without a hold the timerfd is disarmed and both
 * the loop and the deadline thread sleep.
 * The real tree is only ever reached relative to root_fd (openat/fdopendir).
 */
#ifndef OOMD_WATCHER_H
#define OOMD_WATCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <glib.h>
#include "oomd/controller.h"

typedef struct od_watcher od_watcher;

/* Adds the root of the real tree below root_fd to the controller. With watch =
 * true sets up inotify, attaches the sources to the default main context and
 * starts the deadline thread; the tree is adopted by od_watcher_adopt. With
 * watch = false it only adopts the whole tree at once (--release-all).
 * NULL with *err set on failure (inotify unavailable, root unreadable). */
od_watcher *od_watcher_new(od_controller *c, int root_fd, bool watch, GError **err);

/* Walks the real tree, parents before children, adding every cgroup to the
 * controller (its persisted state is adopted there); logs "N cgroups found in
 * T ms". Called once, on the loop's thread before the loop runs; the shadow tree
 * may be served meanwhile: a cgroup used through it first is added there
 * (od_controller_add is idempotent) and its readings taken again here once it
 * is watched. Held cgroups first (held_first.h). Blocks for the walk (about 1 ms
 * per cgroup under TCG). */
void od_watcher_adopt(od_watcher *w);

/* Installs SIGINT/SIGTERM handlers that call stop(signal, ud) on the loop thread,
 * which decides and logs what the signal means (SIGHUP is logged and ignored). */
void od_watcher_on_stop(od_watcher *w, void (*stop)(int sig, void *ud), void *ud);

/* Calls changed(ud, dir, name, attr) on the loop thread for what inotify reports in the
 * watched cgroup directory with kernfs id dir: name made, removed or renamed (attr false),
 * name's attributes (attr true; a subdirectory's own come from its own watch), the
 * directory's own attributes (name NULL, attr true). changed must not block. */
typedef void (*od_watcher_change_fn)(void *ud, uint64_t dir, const char *name, bool attr);
void od_watcher_on_change(od_watcher *w, od_watcher_change_fn changed, void *ud);

size_t od_watcher_count(od_watcher *w); /* cgroups known */
void od_watcher_free(od_watcher *w);

#endif
