/* startup.h — the checks and set-up main() runs before it mounts, each failing
 * with a one-line cause (errno and path included) and an OD_EXIT_* code. */
#ifndef OOMD_STARTUP_H
#define OOMD_STARTUP_H

#include <stdbool.h>
#include <glib.h>

/* Each returns OD_EXIT_OK or an OD_EXIT_* code with *err set. */
int od_check_root(GError **err);
int od_check_fuse(GError **err);
/* Missing, not a directory, or busy (a live oomdelayfs already serves it). A
 * stale FUSE mount ("Transport endpoint is not connected") is detached with
 * umount2(MNT_DETACH) and the check goes on. */
int od_check_mountpoint(const char *mountpoint, GError **err);
/* A fresh start's mount point: mkdir(2) it (and OD_RUNTIME_DIR first when it is the
 * default), EEXIST counting as done. Never stat(2)s it: the path may be our own kept
 * mount, whose server is not running yet (issue 19: `mkdir -p` in ExecStartPre hung
 * there, request_wait_answer <- fuse_do_getattr). Its parent must exist. */
int od_make_mountpoint(const char *mountpoint, bool is_default, GError **err);

/* Finds the cgroup2 mount (libcgroup, then /proc/self/mountinfo) unless path is
 * given, opens it O_RDONLY|O_DIRECTORY, checks it is cgroup2 (statfs) and that
 * the memory controller is available and enabled for its children.
 * *root_fd and *root_path (g_free) on success. Main only, before any thread is
 * made: it forks (libcgroup is asked in a child). */
int od_open_cgroup_root(const char *path, int *root_fd, char **root_path, GError **err);

/* Niceness (every thread made afterwards inherits it), mlockall and oom_score_adj
 * -1000; failures are logged, not fatal. Returns the niceness it was started with
 * (the FUSE thread goes back to it). */
int od_harden(int nice);

/* Milliseconds since this process started (its start time in /proc/self/stat: clock
 * ticks of 10 ms since boot, against CLOCK_BOOTTIME), for the start-up's log lines;
 * -1 if unknown. Any thread. */
double od_ms_since_start(void);

/* Routes libfuse's and libcgroup's messages into glib's structured log. */
void od_log_bridges(bool debug);

#endif
