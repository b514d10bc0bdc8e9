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
 * The child is the charge zygote's, not ours (zygote.h): made by the daemon, it was
 * born with a copy of the daemon's descriptor table, /dev/fuse included, and a
 * child born frozen kept that copy past the daemon's death (s-charge-orphan). The
 * worker sends the call (its descriptors by SCM_RIGHTS, its bytes copied) and
 * waits for the answer (zygote_link.h); the zygote's child shares the zygote's
 * memory (CLONE_VM, its own small stack; on other architectures than x86_64 a
 * fork). It is a few instructions of assembly: the one system call, its result
 * stored where the zygote reads it once the child is reaped, exit. Exit signal 0
 * (no SIGCHLD); reaped through its pidfd.
 *
 * The zygote kills the child after FS_CHARGE_TIMEOUT_MS, reaps it and answers the
 * time-out; the worker answers the operation's "not now" errno (below); a zygote
 * that does not answer costs the worker FS_ZYGOTE_GRACE_MS more, never a wait for
 * a thaw. Why not CLONE_VFORK (the first version): a tenant that owns its
 * cgroup's cgroup.freeze can freeze it between its request and the clone; the
 * child is frozen before it runs (cgroup_post_fork sets the freeze trap of a frozen
 * cgroup's new task), and vfork's wait (wait_for_vfork_done) ends only on the
 * child's exit or a fatal signal to the worker itself: the worker was the
 * tenant's until the thaw (s-charge-freeze; the review of stop 24). A frozen task
 * dies on SIGKILL in cgroup v2 (the freezer lets fatal signals through), so the
 * reap after the kill is immediate. A kill that lands while the child is inside the
 * call (a long reclaim at the caller's limit) may leave the call done and the
 * caller told "not now", as a retried mkdir then says EEXIST; the time-out is far
 * above what a call takes (0.07-0.35 ms measured; tens of ms under TCG at load).
 *
 * "Not now" (the time-out, or too many of the uid's calls in flight, or the
 * caller's pids.max: clone3's EAGAIN) is the caller's to choose, per operation:
 * EAGAIN for mkdir, cgroup_mkdir's own errno for a hierarchy that takes no more
 * now (and the kernel's for a fork the caller's cgroup cannot take); EBUSY for
 * setxattr, because the VFS turns a file system's EAGAIN into EOPNOTSUPP
 * (__vfs_setxattr_noperm, fs/xattr.c, which uses EAGAIN to mean "no handler"):
 * s-charge-freeze on 6.12 saw four timed-out calls answered EAGAIN by us reach
 * the tenant as "Operation not supported". cgroup v1, where the caller made the
 * call itself, has no errno for "frozen" (it would simply have waited, frozen).
 * No answer of ours is ENOSYS (fs_reply_errno: the kernel would stop sending
 * setxattr for the whole mount).
 *
 * One caller cannot take the workers: charged calls in flight are bounded per uid
 * (FS_CHARGE_PER_UID) and for all non-root uids together (half the workers); past
 * either, "not now" at once. uid 0 of our user namespace is not bounded. Calls on
 * one node reach us one at a time whatever the bounds: the VFS holds the node's
 * inode lock across the whole request (vfs_setxattr; the parent's for mkdir), so a
 * tenant's calls queued on its own frozen cgroup cost FS_CHARGE_TIMEOUT_MS each, in
 * turn, to anyone else's call on that node behind them (s-charge-freeze measures
 * root's).
 *
 * The child counts in the caller's pids.max ("not now", as the caller's own fork
 * would fail) and dies with the caller's cgroup (cgroup.kill, a kill by the OOM
 * killer: ENOMEM, the charge's own failure). It inherits the zygote's
 * oom_score_adj (-1000): the OOM killer never picks it, which matters, as a victim that shares
 * its mm takes every process sharing it along (__oom_kill_process).
 *
 * A served tree that is not cgroup2 (the fs tests' stand-in) has no cgroup to
 * charge: the call runs on the calling thread.
 * FUSE workers only; blocks for the call, at most the time-out and the grace.
 * Not on the kill path.
 */
#ifndef OOMD_FS_CHARGE_H
#define OOMD_FS_CHARGE_H

#include "fs_private.h"
#include "zygote.h"

#define FS_CHARGE_TIMEOUT_MS 2000
#define FS_CHARGE_PER_UID 2

/* fs_charged_syscall (zygote.h): the call's number and its arguments, each an
 * integer, a descriptor of ours, bytes (copied: input only) or the /proc/self/fd
 * path of a descriptor of ours. */

/* sc in the caller's cgroup (as /proc/<tid>/cgroup names it, under the cgroup2
 * mount that holds the served tree); a thread in a threaded cgroup, or a cgroup
 * that takes no process, is charged to the nearest ancestor that does. 0 or the
 * errno to answer: the call's, or why it could not run there (EACCES for a
 * caller we cannot see: it could be charged to no one; busy, the operation's
 * "not now", for any EAGAIN: the time-out, too many of this uid's in flight, the
 * caller's pids.max). Never ENOSYS (fs_reply_errno). */
int fs_charged_call(od_shadowfs *fs, const fs_caller *c, const fs_charged_syscall *sc, int busy);

#endif
