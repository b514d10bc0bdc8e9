/* notify.h — sends one sd_notify datagram to the service manager without ever
 * waiting for it (notify.c). The manager is the supervisor (`--supervise`), reached
 * through the socketpair end it handed us (OOMDELAYFS_NOTIFY_FD: nobody else can
 * reach it), or systemd, through the address in NOTIFY_SOCKET.
 *
 * Any thread (serialised inside); never blocks: a manager that does not read (a
 * full receive queue) costs the message, not the caller (MSG_DONTWAIT). Before
 * this, libsystemd's blocking sendmsg on the main loop stopped the watcher for as
 * long as the receiver did not read (issue 21, item 1).
 */
#ifndef OOMD_NOTIFY_H
#define OOMD_NOTIFY_H

#include <stdbool.h>

/* The environment variable naming the supervisor's socketpair end in the server. */
#define OD_NOTIFY_FD_ENV "OOMDELAYFS_NOTIFY_FD"

/* Is there a manager to talk to? The first call takes the descriptor the
 * supervisor passed (close-on-exec from then on, the variable removed, so that
 * nothing we start inherits it); the main thread calls it before starting any. */
bool od_notify_available(void);
/* 0, or -errno: -EAGAIN when the manager's queue is full (nothing sent), -ENOENT
 * when there is no manager. fd < 0: no descriptor. */
int od_notify_send(const char *msg, int fd);
/* As od_notify_send, but a full queue is tried again for up to wait_ms (the
 * descriptor store at start-up: losing it would lose the mount at a crash). */
int od_notify_send_patient(const char *msg, int fd, int wait_ms);

#endif
