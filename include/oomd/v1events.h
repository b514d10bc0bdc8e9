/* v1events.h — the rules of cgroup v1's usage thresholds and memory pressure levels
 * (core/thresholds.c, core/vmpressure.c). Pure: no I/O, no clock of their own (the
 * caller passes the time), no locking; one owner at a time (fs/ec_levels.c holds
 * them under the listener lock). Never block.
 *
 * Thresholds: memcg v1 (6.1 mm/memcontrol.c: mem_cgroup_usage_register_event,
 * __mem_cgroup_threshold) keeps, per cgroup and per counter (usage, memsw), the
 * thresholds sorted with the index of the highest one at or below the usage. At each
 * check every threshold crossed since the previous check, upwards (threshold <= usage)
 * or downwards (threshold > usage), is signalled once, each eventfd of each crossed
 * entry. A new threshold first lets the existing ones be checked against the usage of
 * that moment, then joins without being signalled itself.
 *
 * Pressure levels: 6.1 mm/vmpressure.c. The argument is "<level>[,<mode>]", levels
 * low/medium/critical, modes default/hierarchy/local; an event of level L reaches a
 * listener asking for L or a lower level. An event starts at the cgroup whose reclaim
 * produced it; its own listeners hear it whatever their mode; then each ancestor's:
 * hierarchy always, local never, default only if no listener below heard it.
 */
#ifndef OOMD_V1EVENTS_H
#define OOMD_V1EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- usage thresholds ---- */

typedef struct od_thresholds od_thresholds;

od_thresholds *od_thr_new(void);
void od_thr_free(od_thresholds *t);
size_t od_thr_count(const od_thresholds *t);
/* The keys (listener serials) of the entries crossed between the usage of the last
 * check and usage, appended to *crossed (grown with g_realloc semantics by the
 * callee: *crossed may be NULL, *n its length). Updates the current index. */
void od_thr_check(od_thresholds *t, uint64_t usage, uint64_t **crossed, size_t *n);
/* mem_cgroup_usage_register_event: checks the existing entries against usage (their
 * crossings appended as by od_thr_check), then adds (key, threshold). */
void od_thr_add(od_thresholds *t, uint64_t key, uint64_t threshold, uint64_t usage,
		uint64_t **crossed, size_t *n);
/* Removes the entry of key (mem_cgroup_usage_unregister_event); false if none. */
bool od_thr_remove(od_thresholds *t, uint64_t key);
/* Calls fn for each key (a snapshot: fn may not change t). */
void od_thr_foreach(const od_thresholds *t, void (*fn)(uint64_t key, void *ud), void *ud);

/* What a sampler misses and memory.peak proves: the cgroup's highest usage (since it was
 * made; 6.12's per-descriptor reset aside) only grows, so a reading above the previous one
 * means the usage reached it between the two samples, however briefly. d-v1notify on 6.1
 * under load: a 48 MiB hog rose to its 32 MiB limit and was OOM-killed between two
 * samples, and the shadow's 16M listener heard neither crossing where native v1 heard both. */
typedef struct {
	uint64_t peak;
	bool known;
} od_thr_peak;
/* The highest usage since the previous reading that this reading of memory.peak proves,
 * or 0 if it proves none (the first reading only records). */
uint64_t od_thr_peak_apex(od_thr_peak *p, uint64_t peak);
/* od_thr_check at apex first when it is above usage (its upward crossings, which v1
 * signalled as the usage rose), then at usage (the downward ones), unless usage is under
 * apex by slack or less: that gap is the charge stock the sample's own reads gave back, not
 * a fall. memory.peak is read first, and reading a kernfs file charges its buffer to the
 * daemon's cgroup, which on the hog's CPU drains the hog's per-CPU stock (up to
 * MEMCG_CHARGE_BATCH pages precharged into its page counter) before memory.current is read:
 * an 8M threshold the rise had just crossed was heard crossed down at once and up again at
 * the next sample (d-v1perm, 6.12, CI 2026-12-06: 4 signals for one 24 MiB hog, native v1 2). */
void od_thr_check_apex(od_thresholds *t, uint64_t apex, uint64_t usage, uint64_t slack,
		       uint64_t **crossed, size_t *n);
/* The slack of a sampled usage: one CPU's charge stock, MEMCG_CHARGE_BATCH (64) pages, on
 * every CPU. Not only the sample's own reads drain a stock: a charge by another
 * cgroup on a CPU that holds this one's does (refill_stock replaces it), so with two hogs on
 * two CPUs the usage fell under the peak by two stocks (d-v1perm, 6.1, CI 2026-12-06: a 16M
 * threshold on c2 heard 4 signals, native v1 2, with one CPU's slack). A larger slack costs
 * only time: a real fall within it in a sample where the peak rose is heard at the next. */
#define OD_THR_STOCK_PAGES 64

/* How often the daemon samples the usage of cgroups that have thresholds (ms); v1
 * checked every THRESHOLDS_EVENTS_TARGET (128) page charges and uncharges. */
#define OD_THR_PERIOD_MS 100
/* A limit event (max, high, oom or oom_kill in memory.events) of a cgroup with thresholds
 * brings the next sample forward to this long after the last (ms): a charge failed at a
 * limit, so the usage is at its highest, and an OOM kill can take it back down within one
 * period (d-v1notify on 6.12: a 48 MiB hog killed at 32 MiB between two samples, both
 * crossings of 16M unheard). No sooner: a cgroup held over its memory.high has an event at
 * each charge, and costs at most 1000 / OD_THR_EVENT_GAP_MS samples a second this way. */
#define OD_THR_EVENT_GAP_MS 5
/* When to sample next: -1 (never: sleep until woken) while no threshold is registered,
 * else last + period, or last + OD_THR_EVENT_GAP_MS if a limit event came since the last
 * sample (now if that passed). Times in ns. */
int64_t od_thr_next_sample(size_t registered, int64_t last, int64_t now, bool limit_event);

/* ---- memory.pressure_level ---- */

typedef enum { OD_VMP_LOW, OD_VMP_MEDIUM, OD_VMP_CRITICAL, OD_VMP_NLEVELS } od_vmp_level;
typedef enum { OD_VMP_DEFAULT, OD_VMP_HIERARCHY, OD_VMP_LOCAL } od_vmp_mode;

/* vmpressure_register_event's parse of the bytes after "<efd> <cfd> " (buf up to
 * len or a NUL): at most MAX_VMPRESSURE_ARGS_LEN (19) bytes are looked at; the first
 * comma-separated token must be a level, the second (if any) a mode, anything after
 * a second comma is ignored. 0 or EINVAL. */
int od_vmp_parse(const char *buf, size_t len, od_vmp_level *level, od_vmp_mode *mode);
const char *od_vmp_level_name(od_vmp_level l);
const char *od_vmp_mode_name(od_vmp_mode m);

/* v1's walk for one event (vmpressure_event over the chain): does a listener (level,
 * mode) at distance `up` (0: the cgroup the event started at) hear an event of level
 * lev, when `heard_below` says whether a listener of a cgroup nearer the start heard it? */
bool od_vmp_hears(od_vmp_level want, od_vmp_mode mode, unsigned up, od_vmp_level lev,
		  bool heard_below);

/* The PSI trigger standing for a level on memory.pressure ("some 10000 1000000"):
 * the mapping of docs/DESIGN.md (v1 levels are reclaim efficiency, PSI is stall time).
 * Written to buf (>= 32 bytes); returns its length. */
size_t od_vmp_psi_trigger(od_vmp_level l, char *buf, size_t size);
/* The PSI window of every trigger (ns): a trigger fires at most once per window. */
#define OD_VMP_WINDOW_NS 1000000000LL

/* The limit events of a cgroup (memory.events.local: max, high, oom, oom_kill, in that
 * order) moved from old to now: the pressure level of the reclaim targeted at that
 * cgroup's own limit, or -1 for none. v1 produced such events (vmpressure with the
 * memcg whose limit was hit as target) at every 512 pages scanned: an OOM (reclaim freed
 * nothing) is critical, a limit hit or memory.high throttling that did not end in one is
 * low (its reclaim efficiency is unknown here). */
#define OD_VMP_NEVENTS 4
int od_vmp_level_of_events(const uint64_t old[OD_VMP_NEVENTS], const uint64_t now[OD_VMP_NEVENTS]);
/* Thresholds: the least the usage of a cgroup reached since the previous sample, known from
 * its own limit events (memory.events.local counters old and now, in the order above) and
 * its memory.max and memory.high now (UINT64_MAX, OE_UNLIMITED: none); 0 if nothing is known. A "max"
 * or "oom" event is a charge that failed at this cgroup's memory.max (try_charge's
 * mem_over_limit, 6.1 and 6.12): the usage stood at it, within that charge. A "high" event
 * is a usage over memory.high. Both limits are read after the event and either may have
 * been raised since (the daemon's own kill writes memory.max = L and gives the ceiling back,
 * docs/SEMANTICS.md): the lower of the two is taken, and a managed cgroup's memory.high is
 * L, never above its memory.max at an event. "oom_kill" proves nothing: it counts in the
 * victim's cgroup, whichever limit (or the whole machine) ran out. The sampler checks the thresholds against
 * this floor before the usage it reads: a rise to a limit that an OOM kill ended before
 * the sample is a crossing up and one down, as v1 signalled them (f-levels-restart on
 * 6.12: the notice of memory.events comes through kernfs_notify's work item, often after
 * the victim's memory was freed). */
uint64_t od_thr_event_floor(const uint64_t old[OD_VMP_NEVENTS], const uint64_t now[OD_VMP_NEVENTS],
			    uint64_t max, uint64_t high);
/* Is child strictly below parent? Paths '/'-separated without a trailing slash. */
bool od_path_below(const char *parent, const char *child);

/* With PSI every cgroup that has listeners has triggers of its own, and a stall
 * below raises the pressure of every ancestor too: where v1 walks one event upwards,
 * here each cgroup's triggers fire. The recent book tells an ancestor's default and
 * local listeners that the event was heard below already (v1's "signalled" of the
 * walk): a firing at cgroup P of level lev counts as heard below when a strict
 * descendant of P had listeners signalled by a firing of level >= lev within the
 * last OD_VMP_WINDOW_NS. Cgroups are named by their path ('/'-separated, no trailing
 * slash; "" is the root). */
typedef struct od_vmp_recent od_vmp_recent;
od_vmp_recent *od_vmp_recent_new(void);
void od_vmp_recent_free(od_vmp_recent *r);
/* A firing at path of level lev signalled someone at time now. */
void od_vmp_recent_note(od_vmp_recent *r, const char *path, od_vmp_level lev, int64_t now);
/* Was a firing of level >= lev heard at a strict descendant of path since now - window? */
bool od_vmp_recent_below(od_vmp_recent *r, const char *path, od_vmp_level lev, int64_t now);

#endif
