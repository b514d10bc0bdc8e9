/* zygote_link.h — the daemon's side of the charge zygote (zygote_link.c): one
 * charged call sent to it and its answer awaited; the zygote forked again when it
 * died. What the zygote is: zygote.h; the public handle: include/oomd/zygote.h.
 *
 * Any thread (FUSE workers). A call blocks for at most timeout_ms plus
 * FS_ZYGOTE_GRACE_MS: the zygote kills the call's child at timeout_ms and answers;
 * a zygote that does not answer (stopped, gone with a frozen child holding its
 * socket) costs the grace on top, never more. The send never waits on the zygote
 * past the same deadline (a full queue: "not now"). A dead zygote is found at the
 * next call (its pidfd), reaped and forked again by that call's worker: one fork
 * of the daemon (tens of ms) and one log line per 10 s at most; if the fork fails
 * the call is "not now" with the same rate-limited line.
 */
#ifndef OOMD_FS_ZYGOTE_LINK_H
#define OOMD_FS_ZYGOTE_LINK_H

#include <stdbool.h>
#include <sys/types.h>

#include "oomd/zygote.h"
#include "zygote.h"

#define FS_ZYGOTE_GRACE_MS 1000

/* sc in a child the zygote places in cgroup cg (-1: in the zygote's own), waited
 * for at most timeout_ms. 0 or errno: the call's; EAGAIN for "not now" (the
 * time-out, the child killed: *killed; no zygote; a full queue; the zygote's
 * table of calls full) or clone3's own; *placed false when the cgroup takes no
 * process (threaded: EOPNOTSUPP; internal-process rule: EBUSY). */
int fs_zygote_call(od_zygote *z, int cg, const fs_charged_syscall *sc, int timeout_ms, bool *placed,
		   bool *killed);

/* The zygote's pid now (0: none), for tests. */
pid_t fs_zygote_pid(od_zygote *z);

#endif
