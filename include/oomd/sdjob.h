/* sdjob.h — why systemd stops us: is a restart job queued for the daemon's unit?
 * systemd tells a stopping service nothing about why (252 sends the same SIGTERM for
 * `systemctl stop`, a shutdown and `systemctl restart`), yet the two need opposite
 * answers: a restart (or a package upgrade's try-restart, which systemd collapses into
 * a restart job on an active unit) leaves the mount and every hold to the successor the
 * fd store hands them to; any other stop hands every cgroup back and unmounts. So on
 * SIGTERM the daemon asks systemd, over D-Bus (GDBus), the way systemctl asks it:
 *   Manager.GetUnitByPID(pid) -> unit; Unit.Job -> (id, job); Job.JobType.
 * Before this, ExecStop= ran a shell script that asked `systemctl list-jobs` and sent
 * SIGUSR2 or SIGTERM, then polled until the daemon was gone: 1.3 s of a 5.5 s restart
 * on kernel 7 under load (sd-restart).
 *
 * Contract: od_sdjob_query is called on the loop thread (any thread will do: it runs
 * a GMainContext of its own, pushed as the thread's default for the duration), blocks
 * at most timeout_ms + 100 ms (connection, authentication and the three calls together;
 * a systemd that does not answer costs that, not the stop time-out), and returns a
 * decision with a reason for the log line. Any failure is OD_SDJOB_UNKNOWN, which the
 * caller treats as a stop: when in doubt, hand back (a successor that finds no kept
 * connection mounts afresh; a stop that kept one would leave holds nobody serves).
 */
#ifndef OOMD_SDJOB_H
#define OOMD_SDJOB_H

#include <stdbool.h>
#include <sys/types.h>

/* systemd's own bus, peer to peer, what systemctl uses as root (no dbus-daemon needed) */
#define OD_SDJOB_PRIVATE_ADDRESS "unix:path=/run/systemd/private"
/* long enough for a loaded systemd (TCG under load answered list-jobs in ~1 s), short
 * against TimeoutStopSec=60s */
#define OD_SDJOB_TIMEOUT_MS 2000

typedef enum {
	OD_SDJOB_STOP,    /* no job, or one that is not a restart: orderly stop */
	OD_SDJOB_RESTART, /* restart or try-restart queued: hand over */
	OD_SDJOB_UNKNOWN, /* systemd not reached or no answer: orderly stop, warn */
} od_sdjob_decision;

/* Pure: the decision for a job's JobType property (NULL: no job). "restart" and
 * "try-restart" (a try-restart stays one only on an inactive unit, where we would not
 * run; mapped all the same) are restarts; "stop", "reload-or-start", ... are not. */
od_sdjob_decision od_sdjob_decide(const char *job_type);

/* Is systemd itself our service manager, keeping our descriptors? INVOCATION_ID (set by
 * systemd for every service process) and NOTIFY_SOCKET (the supervisor removes it from
 * its server's environment: under `--supervise` the supervisor, not systemd, decides). */
bool od_sdjob_under_systemd(void);

/* Asks systemd about the unit of pid: first at private_address (peer to peer, no
 * destination), then, if that cannot be connected to, at bus_address (a message bus,
 * destination org.freedesktop.systemd1; NULL: the system bus's address; "": none). *why (g_free)
 * gets a short reason: "job 42 (restart)", "no job queued", or the failure with GLib's
 * message. */
od_sdjob_decision od_sdjob_query(const char *private_address, const char *bus_address, pid_t pid,
				 int timeout_ms, char **why);

#endif
