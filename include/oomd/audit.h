/* audit.h — one record per hold, and the counters the status socket reports.
 *
 * It follows the controller through its hooks (od_controller_set_hooks): the observed
 * hook queues each view an engine call left with a NOTIFY or CHANGED (under the
 * engine's lock, so in the engine's order: a view taken later, by a hook on an actuator
 * the host starved, could miss a whole hold), killed the end of each kill's write,
 * removed each removal. The audit thread then works out holds starting and ending,
 * reads what it needs from the real cgroup (cgroup.procs at an onset; where the
 * onset's processes went at an end), writes the journal records and counts. A hook
 * only copies an event into a fixed ring (dropped and counted when it is full); nothing
 * else of it runs on the deadline thread.
 *
 * How a hold ended, as the audit thread tells it apart:
 *   kill-kernel / kill-group  it ended at or after its deadline with oom_kill_disable 0
 *   raise                     L (memory.max) was raised above its value at the onset
 *   move                      a process of the onset lives on in another cgroup
 *   exit                      otherwise: the processes exited or gave memory back
 *   kill-early                an end that looked like exit or move, followed within 1 s
 *                             by an OOM kill in the cgroup or the daemon's kill: a delay
 *                             of 0 written during the hold (rule 6), or the kernel's own
 *   removed                   the cgroup was removed during the hold
 * (exit and move are therefore reported up to 1 s after the end.)
 * Detection is measured as overshoot: how far usage was over L in the reading that
 * began the hold (oe_view.usage). Kill lateness: from the deadline to the end of
 * the kill's write (the killed hook; if it never comes, within 1 s, to when the engine
 * decided the kill). A record's onset is the engine's (oe_view.hold_onset_ns: the
 * instant the deadline counts from); a record is one engine hold (one onset).
 */
#ifndef OOMD_AUDIT_H
#define OOMD_AUDIT_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "oomd/controller.h"
#include "oomd/shadowfs.h"

typedef enum {
	OD_END_NONE = 0, /* still held */
	OD_END_RAISE, OD_END_EXIT, OD_END_MOVE, OD_END_KILL_KERNEL, OD_END_KILL_GROUP,
	OD_END_KILL_EARLY, OD_END_REMOVED, OD_END_N
} od_end;

const char *od_end_name(od_end e);

typedef struct {
	uint64_t hold_id;      /* 1, 2, ... per daemon run */
	uint64_t cgroup_id;
	char path[256];        /* the real cgroup directory */
	gint64 onset_wall_us;  /* g_get_real_time() at the onset */
	int64_t onset_ns, deadline_ns, end_ns; /* CLOCK_BOOTTIME ns: the engine's onset; end 0 while held */
	uint64_t limit, usage; /* L and memory.current at the onset */
	unsigned listeners;    /* listeners of the cgroup signalled during the hold */
	od_end end;
	int64_t kill_late_ns;  /* kills only */
} od_hold_record;

#define OD_LATE_BUCKETS 11
#define OD_OVER_BUCKETS 7
extern const double od_late_bounds[OD_LATE_BUCKETS];   /* seconds */
extern const double od_over_bounds[OD_OVER_BUCKETS];   /* bytes */

typedef struct {
	uint64_t started, ended[OD_END_N], broken_promises, notifications;
	uint64_t late_n[OD_LATE_BUCKETS + 1]; /* per bucket, the last is +Inf */
	double late_sum;
	uint64_t over_n[OD_OVER_BUCKETS + 1];
	double over_sum;
	int64_t started_at; /* od_now() when the audit began */
} od_audit_stats;

typedef struct od_audit od_audit;

/* Registers the hooks and starts the audit thread. */
od_audit *od_audit_new(od_controller *c, oe_kill_mode mode);
/* The session whose listeners are counted; NULL before the session is freed. */
void od_audit_set_fs(od_audit *a, od_shadowfs *fs);
/* Removes the hooks, then stops the thread: before the controller is freed. NULL
 * is fine. */
void od_audit_free(od_audit *a);

/* Copies of the counters, and of the records: the holds in progress, then up to
 * the last 64 ended ones (oldest first). Any thread. */
void od_audit_stats_get(od_audit *a, od_audit_stats *s);
GArray *od_audit_records(od_audit *a); /* of od_hold_record; g_array_unref */
od_controller *od_audit_controller(od_audit *a);
size_t od_audit_listeners(od_audit *a, uint64_t id); /* of the session set, or 0 */

#endif
