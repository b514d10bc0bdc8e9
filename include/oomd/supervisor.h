/* supervisor.h — `oomdelayfs --supervise`: a parent process that keeps the FUSE
 * connection between servers, as systemd's file descriptor store does, and starts
 * the server (the same binary and arguments, without --supervise) again when it
 * dies. Call from main() before any thread exists; returns the exit status (the
 * server's, after an orderly stop). Contract in supervisor.c's header. */
#ifndef OOMD_SUPERVISOR_H
#define OOMD_SUPERVISOR_H

/* watchdog_sec > 0: the server gets WATCHDOG_USEC/WATCHDOG_PID and is killed (then
 * started again) when no WATCHDOG=1 came for that long. */
int od_supervise(int argc, char **argv, int watchdog_sec);

#endif
