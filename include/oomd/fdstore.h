/* fdstore.h — the daemon's side of the service manager (sd_notify): where the FUSE
 * connection lives between two servers (systemd's file descriptor store, or the
 * supervisor, which speaks the same protocol), readiness, status and the watchdog.
 * Main thread only; nothing here blocks for long (datagrams to the manager).
 */
#ifndef OOMD_FDSTORE_H
#define OOMD_FDSTORE_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

/* What a previous server left in the store (LISTEN_FDS with LISTEN_FDNAMES);
 * -1 for what is missing. */
typedef struct {
	int fuse_fd;  /* "fuse": the /dev/fuse connection of the mount */
	int state_fd; /* "state": the shadow tree's state memfd (its recorded FUSE_INIT) */
	int root_fd;  /* "root": the real cgroup root directory (the shadow may cover its path) */
} od_kept_fds;

/* Takes the descriptors handed to this process (CLOEXEC; unknown names closed). */
void od_fdstore_take(od_kept_fds *k);
/* Keeps the three in the manager's store (it gets its own copies), after dropping
 * whatever an earlier connection left under the same names. False when no
 * manager listens (no NOTIFY_SOCKET) or it refused them: then a crash loses the
 * mount, and an upgrade that keeps it is impossible. */
bool od_fdstore_keep(const od_kept_fds *k);
/* An orderly stop: the store forgets them, so the connection dies with us. */
void od_fdstore_drop(void);

/* READY=1 with a STATUS= line. */
void od_notify_ready(const char *status);
void od_notify_status(const char *status);
void od_notify_stopping(void);

/* The watchdog (WatchdogSec=): its period in ms, 0 when the manager asks for none. */
int od_watchdog_period_ms(void);
/* A main-loop timer every half period sends WATCHDOG=1, but only when beats(ud)
 * advanced since the last one, that is while the thread that keeps deadlines is
 * alive and not stuck (it must beat more often than that). */
void od_watchdog_start(int period_ms, uint64_t (*beats)(void *ud), void *ud);

#endif
