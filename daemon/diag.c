/* diag.c — implements diag.h: the late tick's figures (built with -Ddiagnostics=true). */
#define G_LOG_DOMAIN "oomdelayfs"
#include "oomd/diag.h"
#include "oomd/controller.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>
#include <glib.h>

typedef struct {
	const char *site, *role;
	int64_t t0;
	struct rusage ru; /* the holder's, at the lock */
} od_lock_hold;

struct od_diag {
	/* Under the engine's lock: the current hold and the longest since the last tick,
	 * with the holder's rusage at its end. */
	od_lock_hold hold, longest;
	int64_t longest_ns;
	struct rusage longest_end;
	/* The deadline thread's own from here on. The longest hold, as the tick took it over. */
	od_lock_hold by;
	int64_t by_ns;
	struct rusage by_end;
	/* The slowest action it ran since the last tick. */
	int64_t slow_ns;
	const char *slow_name;
	uint64_t slow_id;
	/* Its /proc/thread-self/schedstat (-1 if it cannot be opened) and the last reading. */
	int sched_fd;
	uint64_t sched_run, sched_wait;
	int64_t sched_at;
	char line[512];
};

od_diag *od_diag_new(void)
{
	od_diag *d = g_new0(od_diag, 1);
	d->sched_fd = -1;
	return d;
}

void od_diag_free(od_diag *d)
{
	if (!d)
		return;
	if (d->sched_fd >= 0)
		close(d->sched_fd);
	g_free(d);
}

int64_t od_diag_clock(void)
{
	return od_now();
}

void od_diag_lock_taken(od_diag *d, const char *site, const char *role)
{
	d->hold.site = site;
	d->hold.role = role;
	getrusage(RUSAGE_THREAD, &d->hold.ru);
	d->hold.t0 = od_now();
}

void od_diag_lock_released(od_diag *d)
{
	int64_t held = od_now() - d->hold.t0;
	if (held > d->longest_ns) {
		d->longest = d->hold;
		d->longest_ns = held;
		getrusage(RUSAGE_THREAD, &d->longest_end);
	}
}

void od_diag_deadline_thread(od_diag *d)
{
	d->sched_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
}

void od_diag_action(od_diag *d, bool deadline, int64_t t0, const char *name, uint64_t id)
{
	int64_t took = od_now() - t0;
	if (deadline && took > d->slow_ns) {
		d->slow_ns = took;
		d->slow_name = name;
		d->slow_id = id;
	}
}

void od_diag_tick_locked(od_diag *d)
{
	d->by = d->longest;
	d->by_ns = d->longest_ns;
	d->by_end = d->longest_end;
	d->longest_ns = 0;
}

static int64_t ru_cpu_ns(const struct rusage *r)
{
	return ((int64_t)r->ru_utime.tv_sec + r->ru_stime.tv_sec) * 1000000000LL +
	       ((int64_t)r->ru_utime.tv_usec + r->ru_stime.tv_usec) * 1000LL;
}

/* The deadline thread's CPU time and run-queue wait (ns). False if the kernel has none. */
static bool read_schedstat(od_diag *d, uint64_t *run, uint64_t *wait)
{
	if (d->sched_fd < 0)
		return false;
	char buf[96];
	ssize_t n = pread(d->sched_fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return sscanf(buf, "%" SCNu64 " %" SCNu64, run, wait) == 2;
}

const char *od_diag_tick_done(od_diag *d, bool late, int64_t armed, int64_t woke, int64_t locked)
{
	uint64_t run = 0, wait = 0;
	bool have = read_schedstat(d, &run, &wait);
	int64_t at = od_now();
	d->line[0] = '\0';
	if (late) {
		const od_lock_hold *by = &d->by;
		const struct rusage *end = &d->by_end;
		char held_how[96] = "", why[192] = "";
		if (d->by_ns)
			snprintf(held_how, sizeof held_how, "; it ran %.1f ms of it, slept %ld and was "
				 "preempted %ld times", (ru_cpu_ns(end) - ru_cpu_ns(&by->ru)) / 1e6,
				 end->ru_nvcsw - by->ru.ru_nvcsw, end->ru_nivcsw - by->ru.ru_nivcsw);
		if (have && d->sched_at) {
			double span = (at - d->sched_at) / 1e6, ran = (run - d->sched_run) / 1e6,
			       waited = (wait - d->sched_wait) / 1e6;
			snprintf(why, sizeof why, "; in the %.1f ms since the previous tick the deadline "
				 "thread ran %.1f ms, waited %.1f ms for a CPU, slept or was blocked "
				 "%.1f ms", span, ran, waited, span - ran - waited);
		}
		snprintf(d->line, sizeof d->line, " (woken %.1f ms after it was due, then %.1f ms for "
			 "the engine's lock, whose longest hold since the previous tick was %.1f ms, by "
			 "%s on %s%s)%s; its slowest action since then: %s of cgroup %" PRIu64 ", %.1f ms",
			 (woke - armed) / 1e6, (locked - woke) / 1e6, d->by_ns / 1e6,
			 d->by_ns ? by->site : "none", d->by_ns ? by->role : "none", held_how, why,
			 d->slow_ns ? d->slow_name : "none", d->slow_id, d->slow_ns / 1e6);
	}
	d->slow_ns = 0;
	if (have) {
		d->sched_run = run;
		d->sched_wait = wait;
		d->sched_at = at;
	}
	return d->line;
}

static int64_t marks[OD_DIAG_N_MARKS];

void od_diag_mark(od_diag_mark_at at)
{
	__atomic_store_n(&marks[at], od_now(), __ATOMIC_RELAXED);
}

const char *od_diag_kill_timeline(int64_t t0)
{
	static __thread char buf[200];
	int64_t m[OD_DIAG_N_MARKS];
	for (int i = 0; i < OD_DIAG_N_MARKS; i++)
		m[i] = __atomic_load_n(&marks[i], __ATOMIC_RELAXED);
	snprintf(buf, sizeof buf,
		 "; diag: tick locked -> sample read %.1f -> locked %.1f -> handed off %.1f -> "
		 "taken %.1f -> write %.1f ms",
		 (m[OD_DIAG_READ] - m[OD_DIAG_TICK]) / 1e6, (m[OD_DIAG_LOCKED] - m[OD_DIAG_READ]) / 1e6,
		 (m[OD_DIAG_HANDOFF] - m[OD_DIAG_LOCKED]) / 1e6,
		 (m[OD_DIAG_PICKED] - m[OD_DIAG_HANDOFF]) / 1e6, (t0 - m[OD_DIAG_PICKED]) / 1e6);
	return buf;
}

void od_diag_held_past(uint64_t id, int64_t now, const oe_view *v, uint64_t current)
{
	if (!v->in_hold || v->disable || v->deadline_ns <= 0 || now < v->deadline_ns)
		return;
	g_message("diag: cgroup %" PRIu64 " still held %.1f ms after its deadline: the sample read "
		  "%" PRIu64 " bytes against L %" PRIu64, id, (now - v->deadline_ns) / 1e6, current,
		  v->limit);
}
