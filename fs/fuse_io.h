/* fuse_io.h — the FUSE session's reads from /dev/fuse (libfuse's custom I/O), so that a
 * server that stops for a successor loses no request it has taken from the kernel.
 *
 * libfuse 3.14 drops a request its worker has just read once the session is exiting
 * (_fuse_session_receive_buf returns 0 when fuse_session_exited(); fuse_do_work returns
 * when the loop's exit flag is set) and never answers it; on a kernel without
 * FUSE_NOTIFY_RESEND (before 6.9) such a request, read on a worker's cloned descriptor,
 * fails with ECONNABORTED when that descriptor is closed. 6.1, f-levels-restart in a
 * CI-like run (2026-12-06): a listener's access(2) of cgroup.event_control, made every
 * 100 ms, failed so during an upgrade; the listener took its cgroup for removed and exited,
 * and the successor found its eventfd held by nobody. So a stop first drains: every worker
 * waiting for a request is woken and parked, every worker holding one finishes it, and only
 * then is the session told to exit (session.c).
 *
 * Workers read their cloned descriptors blocking, as libfuse does: the kernel wakes one
 * waiting reader a request (fuse_dev_do_read waits exclusively). The drain wakes the
 * waiting ones with FS_WAKE_SIGNAL (their read returns EINTR, no request taken) and
 * parks them. The signal must interrupt nothing a request's handler waits for (a
 * memory.max write's reclaim stops at a pending signal, mm/memcontrol.c
 * memory_max_write): the drain signals only a worker that says, under its own lock, it is
 * reading, and a worker that comes back from its read with a request after being
 * signalled takes the signal (one system call) before it handles the request. Blocking
 * the signal outside the read, as before, cost two rt_sigprocmask calls a request: 13 a
 * file of an all-files read, a third of the daemon's system calls (x-stat-walk, 7).
 * A poll of the descriptor beside an eventfd (the first form of the drain,
 * 2026-12-06) woke every idle worker at every request, since poll waits are not exclusive:
 * each request cost the idle workers a wake-up, a failed read and a poll more. The
 * session's own descriptor, shared with the service manager's fd store and a successor, is
 * read as before and not drained; it is used only where the kernel resends unanswered
 * requests to a successor anyway (takeover.c, fs_survival_clone_fd).
 *
 * fs_io_install: main thread, after the mount or the takeover of the connection, before
 * the loop; 0 or a positive errno. fs_io_drain: main thread, once, before
 * fuse_session_exit(); blocks until no worker holds a request or FS_IO_DRAIN_MS have
 * passed (a handler stuck that long is left as before, with a log line); true if drained.
 * fs_io_free: with the session.
 */
#ifndef OOMD_FS_FUSE_IO_H
#define OOMD_FS_FUSE_IO_H

#include <stdbool.h>

#include "oomd/shadowfs.h"

#define FS_IO_DRAIN_MS 3000

int fs_io_install(od_shadowfs *fs);
bool fs_io_drain(od_shadowfs *fs);
void fs_io_free(od_shadowfs *fs);

#endif
