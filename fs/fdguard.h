/* fdguard.h — descriptors that callers can influence: recognising what a caller's
 * descriptor is without touching its file, closing the ones we took on a thread
 * that may block, and keeping descriptors in reserve for the kill path.
 *
 * Nothing here calls into a file's filesystem: identity comes from procfs
 * (readlink of /proc/PID/fd/N is d_path or an anon inode's d_dname; fdinfo prints
 * pos, flags, mnt_id and ino — ino since 5.14, so present on 6.1 — and calls a
 * show_fdinfo only for the file types that have one, FUSE has none; mountinfo
 * prints the mount table). An fstat on a FUSE file the caller serves would send
 * FUSE_GETATTR to the caller and wait; a close sends FUSE_FLUSH (fuse_flush, no
 * timeout): those are left to the closer.
 */
#ifndef OOMD_FS_FDGUARD_H
#define OOMD_FS_FDGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- identity (any thread; reads procfs only; pid 0 means ourselves) ---- */

/* Is descriptor fd of process pid an eventfd? 0 yes, EINVAL no, EBADF no such fd or an
 * O_PATH one (v1's fdget() does not see those). */
int fs_fd_is_eventfd(pid_t pid, int fd);
/* The eventfd-id fdinfo shows for an eventfd (eventfd_show_fdinfo: unique per
 * eventfd, shared by its duplicates). 0, EBADF or EINVAL. */
int fs_eventfd_id(pid_t pid, int fd, uint64_t *id);
/* The device (of its mount) and inode number of descriptor fd of process pid:
 * fdinfo's mnt_id looked up in pid's mountinfo, read a line at a time (a caller's mount
 * namespace may hold 100,000 mounts: fs.mount-max). 0, EBADF (no such fd, or O_PATH)
 * or EINVAL. */
int fs_fd_identity(pid_t pid, int fd, dev_t *dev, uint64_t *ino);

/* ---- descriptor reserve (any thread, never blocks) ---- */

/* Descriptors that requests may never take: the top slots below RLIMIT_NOFILE stay
 * for the daemon's own threads. The kill path opens the 7 files of a hold
 * (od_kio_hold_open) per held cgroup, the watcher one O_PATH per new cgroup: 1024
 * covers 140 cgroups held at once; with the daemon's usual limit (fs.nr_open,
 * 1048576) a sixteenth of it is kept. */
#define FS_FD_RESERVE_MIN 1024
#define FS_FD_RESERVE_SHARE 16
/* May a request keep descriptor fd (just allocated, lowest free number)? Caller
 * descriptors never get a number in the reserve, so its slots stay free for the
 * daemon: false means give it back and answer EMFILE. The limit is read again at most
 * once a second (a change by prlimit(1) counts within the second). */
bool fs_fd_within_budget(int fd);
/* The descriptors requests may take in all: RLIMIT_NOFILE's soft limit less the reserve,
 * read as fs_fd_within_budget reads it (SIZE_MAX without a limit). */
size_t fs_fd_budget(void);

/* ---- the closer: closes descriptors taken from callers ----
 * Each close runs on a thread of its own (a small detached stack), so one that
 * waits for a caller's FUSE server delays no other caller's (before issue 21 one
 * thread closed them all, in order: 64 stuck descriptors of one caller refused
 * everyone's registrations). Pending closes are counted per owner (the caller's
 * uid or user namespace, as ec_bounds.h names principals). */

/* Pending closes one owner may have before its registrations are refused. */
#define FS_CLOSER_MAX_PER_OWNER 16
/* Pending closes of all owners but root (uid 0 of the initial namespace, owner 0)
 * before anyone else is refused: the threads waiting meanwhile. */
#define FS_CLOSER_MAX_PENDING 256

typedef struct fs_closer fs_closer;
fs_closer *fs_closer_new(int *err);
/* Never waits: closes still running end on their own (a close stuck on a
 * caller's server must not hang the daemon's shutdown). */
void fs_closer_free(fs_closer *c);
/* Takes fd, owner's (never blocks). */
void fs_closer_give(fs_closer *c, int fd, uint64_t owner);
/* Would owner's next descriptor be past a bound? */
bool fs_closer_backed_up(fs_closer *c, uint64_t owner);

#endif
