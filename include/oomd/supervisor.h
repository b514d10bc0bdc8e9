/* supervisor.h — `oomdelayfs --supervise`: a parent process that keeps the FUSE
 * connection between servers, as systemd's file descriptor store does, and starts
 * the server (the same binary and arguments, without --supervise) again when it
 * dies. Call from main() before any thread exists; returns the exit status (the
 * server's, after an orderly stop). Contract in supervisor.c's header. */
#ifndef OOMD_SUPERVISOR_H
#define OOMD_SUPERVISOR_H

int od_supervise(int argc, char **argv);

#endif
