/* charge.h — one system call made for a caller, charged to the caller's memory
 * cgroup (charge.c).
 *
 * Why: the kernel charges kernel memory to the memcg of the task that allocates
 * it (GFP_KERNEL_ACCOUNT: get_mem_cgroup_from_current). When the daemon itself set
 * a user.* value or made a cgroup for a caller, the kernfs xattr (simple_xattr_alloc,
 * accounted on 6.12) and the new cgroup's structures (mem_cgroup_alloc, percpu
 * stats) were the daemon's: issue 21 measured 59.4 MiB on the daemon's cgroup and
 * 0.4 MiB on a tenant limited to 24 MiB. Such calls now run in a short-lived child
 * made by clone3(CLONE_INTO_CGROUP) straight into the caller's cgroup: the caller's
 * limit applies as if it had made the call on the real tree.
 *
 * The child shares our memory (CLONE_VM | CLONE_VFORK, its own small stack; on
 * other architectures than x86_64 a fork), makes only system calls and exits with
 * the call's errno; it is reaped through its pidfd (exit signal 0: no SIGCHLD,
 * invisible to any waitpid(-1)). It counts in the caller's pids.max (EAGAIN, as the caller's own
 * fork would), is frozen with the caller's cgroup (the request then waits for
 * the thaw, as the caller would) and dies with it (SIGKILL: ENOMEM, the charge's
 * own failure being an OOM kill).
 *
 * A served tree that is not cgroup2 (the fs tests' stand-in) has no cgroup to
 * charge: fn runs on the calling thread.
 * FUSE workers only; blocks for one fork and the call. Not on the kill path.
 */
#ifndef OOMD_FS_CHARGE_H
#define OOMD_FS_CHARGE_H

#include "fs_private.h"

/* Runs in the child: system calls only (no malloc, no locks: it shares our
 * memory, or is a fork of a threaded process); 0 or an errno. */
typedef int (*fs_charged_fn)(void *arg);

/* fn(arg) in the caller's cgroup (as /proc/<tid>/cgroup names it, under the
 * cgroup2 mount that holds the served tree); a thread in a threaded cgroup, or a
 * cgroup that takes no process, is charged to the nearest ancestor that does.
 * 0 or the errno to answer: fn's, or why no child could be made there (EACCES
 * for a caller we cannot see: it could be charged to no one). */
int fs_charged_call(od_shadowfs *fs, const fs_caller *c, fs_charged_fn fn, void *arg);

#endif
