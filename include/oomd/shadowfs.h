/* shadowfs.h — the FUSE shadow of the real cgroup-v2 tree (libfuse low-level API).
 *
 * Every real directory and file passes through (one backing descriptor per open,
 * direct I/O, the caller's offsets, the kernel's errno unchanged); each memory
 * cgroup gains the synthetic files of SEMANTICS.md, and memory.max / memory.high
 * show the user's values (L and the user's high) kept by the controller.
 * All access to the real tree is relative to root_fd, opened before mounting, so
 * the shadow may be mounted over the real mount itself.
 */
#ifndef OOMD_SHADOWFS_H
#define OOMD_SHADOWFS_H

#include <stdbool.h>
#include <glib.h>
#include "oomd/controller.h"

typedef struct {
	bool allow_other;          /* default true */
	bool default_permissions;  /* default true: the kernel checks callers against real modes */
	unsigned max_threads;      /* worker bound (default 16) */
	bool debug;                /* libfuse debug output */
	bool v1_layout;            /* serve the cgroup-v1 memory layout instead of v2 */
	/* Takeover (default -1, -1: mount afresh): a /dev/fuse connection a previous
	 * server of this mountpoint initialised, and the state memfd it left; both kept
	 * outside the process (systemd's fd store, the supervisor). Served again, not
	 * mounted. od_shadowfs_new owns both from then on, also on failure. */
	int fuse_fd;
	int state_fd;
	/* A service manager will keep the connection (default false): on a kernel that can
	 * re-queue a dead server's requests, workers then read the kept descriptor itself. */
	bool kept_outside;
	/* Seconds the kernel keeps names and attributes (default 1: the bound on a change made
	 * in the real tree, which od_shadowfs_real_changed makes sooner); 0: every path walk
	 * asks. A tree no watcher reports on (the unit tests' plain directories) needs 0. */
	double cache_s;
	/* Seconds an unused file name the kernel was given again after a sweep stays known
	 * after its last lookup (default 30, past a monitor's 10-15 s rounds: each round would
	 * otherwise make every name's node, descriptor and kernel inode afresh), for at most
	 * name_keep_max names, the most recently looked up (default 4096); 0: the sweeper takes
	 * every unused file name at its next turn. A name looked up for the first time in its
	 * directory goes at the next sweep (as far as 64 bits a directory can tell); a uid near
	 * its descriptor share has every unused name taken. Read at each sweep (fs/sweep.c). */
	unsigned name_keep_s;
	unsigned name_keep_max;
	/* Seconds between the sweeps while file names hold many descriptors (default 5),
	 * growing to 4 times that while sweeps free nothing (fs/sweep.c). */
	unsigned sweep_period_s;
	/* The charge zygote (oomd/zygote.h) that makes the charged calls' children; the
	 * caller's, freed after the file system. NULL: od_shadowfs_new forks one of its own
	 * (the fs tests; a daemon forks it at start, while it is small). */
	struct od_zygote *zygote;
} od_shadowfs_opts;

typedef struct od_shadowfs od_shadowfs;

void od_shadowfs_opts_defaults(od_shadowfs_opts *o);

/* Creates the session and mounts it on mountpoint. On failure returns NULL and
 * sets *err with the cause (mountpoint missing/busy, FUSE unavailable, ...). */
od_shadowfs *od_shadowfs_new(int root_fd, const char *mountpoint, od_controller *ctl,
			     const od_shadowfs_opts *o, GError **err);
/* Serves requests on worker threads until od_shadowfs_exit() or unmount. */
int od_shadowfs_run(od_shadowfs *fs);
/* Safe from another thread: stop the loop and unmount. */
void od_shadowfs_exit(od_shadowfs *fs);
/* Safe from another thread: stop the loop and leave the mount to a successor (the
 * connection lives on in the descriptors kept outside the process). */
void od_shadowfs_exit_keep(od_shadowfs *fs);
/* The descriptors a successor needs (owned by fs; dup them to keep them). */
void od_shadowfs_kept_fds(od_shadowfs *fs, int *fuse_fd, int *state_fd);
void od_shadowfs_free(od_shadowfs *fs);
/* The real tree changed in the cgroup directory with kernfs id dir (the watcher's
 * inotify): name in it made, removed or renamed (attr false), name's attributes changed
 * (attr true), or, with name NULL, the directory's own attributes. The kernel's cached
 * names and attributes of it are dropped (fs/inval.c). fs is an od_shadowfs * (void *
 * to serve as the watcher's hook). Any thread; never blocks (queued). */
void od_shadowfs_real_changed(void *fs, uint64_t dir, const char *name, bool attr);

#endif
