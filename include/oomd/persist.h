/* persist.h — the engine's per-cgroup state (oe_persisted), kept in the extended
 * attribute trusted.oomdelayfs.state of the real cgroup directory, so it vanishes
 * with the cgroup and survives the daemon (xattrs on cgroupfs: Linux >= 5.7).
 * trusted.*, because only CAP_SYS_ADMIN in the initial user namespace may set it
 * (xattr.c xattr_permission): the owner of a delegated cgroup can set user.* on
 * its directory (kernfs_xattr_set), and state is what the daemon raises
 * memory.max from. The name older daemons used, user.oomdelayfs.state, is never
 * read as state: od_persist_load removes it with a log line.
 * The format is one line of text, versioned:
 *   "oomdelayfs-state 1 limit=<u64|max> high=<u64|max> delay=<u64> disable=<0|1>
 *    hold=<0|1> spent=<0|1> frozen=<0|1> deadline=<i64|none> gkills=<u64>"
 * (single spaces, no newline). The deadline is CLOCK_BOOTTIME ns, which does not
 * jump and keeps counting across daemon restarts (cgroups do not outlive a boot).
 * dirfd must be a real (not O_PATH) descriptor of the directory: fsetxattr and
 * fgetxattr fail with EBADF on O_PATH descriptors. Functions return 0 or -errno.
 */
#ifndef OOMD_PERSIST_H
#define OOMD_PERSIST_H

#include <stddef.h>
#include "oomd/engine.h"

#define OD_PERSIST_XATTR "trusted.oomdelayfs.state"
/* Written by daemons before 2026-12, and settable by a delegated owner. */
#define OD_PERSIST_XATTR_LEGACY "user.oomdelayfs.state"
#define OD_PERSIST_MAX 320 /* bytes of the encoded form, at most */

/* -ENODATA when the cgroup has no state (never managed, or handed back). A legacy
 * user.oomdelayfs.state found on the directory is removed (and logged), whether
 * or not trusted state is there: it may have been forged, and it must not be
 * taken for state by anything reading the tree later. */
int od_persist_load(int dirfd, oe_persisted *out);
int od_persist_store(int dirfd, const oe_persisted *p);
/* Removing state that is not there is not an error. */
int od_persist_forget(int dirfd);

/* Pure encoding, exposed for unit tests and fuzzing. encode returns the length;
 * decode returns 0 or -EINVAL (unknown version or malformed). */
size_t od_persist_encode(const oe_persisted *p, char *buf, size_t size);
int od_persist_decode(const char *buf, size_t len, oe_persisted *out);

/* Whether the state of the cgroup `name` in the directory dirfd (any descriptor,
 * O_PATH too) says a hold was running: 1 or 0, or -errno (-ENODATA: no state).
 * One system call, nothing opened: a hint for the order of adoption only (the
 * state is read again, and checked, when the cgroup is adopted). */
int od_persist_held_at(int dirfd, const char *name);

#endif
