/* engine.h — the OOM-delay rules of SEMANTICS.md as a pure state machine.
 *
 * Contract: no I/O, no clocks, no threads. Every input carries the time `now`
 * (nanoseconds on a clock that never jumps and keeps counting across daemon
 * restarts: the shell uses CLOCK_BOOTTIME). Every input appends the actions the
 * shell must carry out to an oe_actions buffer, in the order they must happen.
 * The caller serialises calls (one mutex around the engine). Cgroups are named by
 * their id (the st_ino of the real cgroup directory, which is the kernfs id).
 * Where each rule of SEMANTICS.md is decided: the rule index at the top of
 * core/engine.c (checked by the unit test unit-rules).
 */
#ifndef OOMD_ENGINE_H
#define OOMD_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OE_UNLIMITED UINT64_MAX /* "max" in memory.max / memory.high */
#define OE_NO_DEADLINE INT64_MAX
#define OE_MAX_DELAY_MS ((uint64_t)INT64_MAX) /* LONG_MAX, as the patch's bound */

typedef enum { OE_KILL_KERNEL = 0, OE_KILL_GROUP = 1 } oe_kill_mode;

typedef struct {
	uint64_t ceiling_bytes;      /* real memory.max = L + ceiling while managed */
	uint64_t freeze_margin_bytes;/* freeze a held cgroup whose usage passes L + margin */
	int64_t sample_interval_ns;  /* how often a held cgroup is re-read (only during holds) */
	oe_kill_mode kill_mode;
} oe_config;

void oe_config_defaults(oe_config *cfg);

/* What survives the daemon (persisted by the shell on OE_ACT_PERSIST). */
typedef struct {
	uint64_t limit;      /* L */
	uint64_t user_high;  /* the user's memory.high */
	uint64_t delay_ms;   /* T */
	bool disable;        /* D */
	bool in_hold;
	bool delay_spent;    /* the hold's wait is over (kill comes when D = 0) */
	bool frozen;         /* the daemon froze it */
	int64_t deadline_ns; /* absolute; OE_NO_DEADLINE when none */
	uint64_t group_kills;/* processes killed by cgroup.kill (counts toward oom_kill) */
} oe_persisted;

/* One reading of the real files of a cgroup. */
typedef struct {
	uint64_t current;        /* memory.current */
	uint64_t ev_high;        /* memory.events high */
	uint64_t ev_max;         /* memory.events max */
	uint64_t ev_oom;         /* memory.events oom */
	uint64_t ev_oom_kill;    /* memory.events oom_kill (hierarchical) */
	uint64_t local_oom;      /* memory.events.local oom: OOMs at this cgroup's own limit */
	uint64_t local_oom_kill; /* memory.events.local oom_kill */
	bool no_tasks;           /* cgroup.events populated 0: no task in it or below */
} oe_reading;

typedef enum {
	OE_ACT_SET_HIGH,    /* write real memory.high = value */
	OE_ACT_SET_MAX,     /* write real memory.max = value (may block while the kernel reclaims) */
	OE_ACT_KILL_KERNEL, /* write real memory.max = value (= L): the kernel's OOM killer acts; blocks */
	OE_ACT_KILL_GROUP,  /* write cgroup.kill = 1; report the count with oe_group_killed() */
	OE_ACT_FREEZE,      /* write cgroup.freeze = 1 */
	OE_ACT_THAW,        /* write cgroup.freeze = 0 */
	OE_ACT_NOTIFY,      /* signal the cgroup.event_control listeners registered on this cgroup */
	OE_ACT_CHANGED,     /* memory.oom_control content changed: wake poll() waiters */
	OE_ACT_SAMPLE,      /* read this cgroup's files soon and call oe_sample() */
	OE_ACT_PERSIST,     /* store `persisted` with the cgroup before doing the actions after it */
	OE_ACT_FORGET,      /* remove persisted state: the cgroup is back to the kernel */
	OE_ACT_LOG,         /* log `msg` (e.g. a broken promise, rule 9) */
} oe_action_kind;

typedef struct {
	oe_action_kind kind;
	/* A raise of memory.max while the cgroup has state, or a FREEZE: what a restart
	 * could not undo without the state persisted before it (it would take the raised
	 * memory.max for L; it would not know to thaw). The shell skips it while the
	 * cgroup's last PERSIST failed, and tells oe_state_unstored(). */
	bool guarded;
	uint64_t id;
	/* PERSIST carries the state and nothing else; every other kind value (and LOG its
	 * message): one or the other, 64 bytes an action instead of 88. The shell keeps a
	 * resident buffer of 2 actions per cgroup (ctl_act.h): 0.5 MiB less at 10,000. */
	union {
		struct {
			uint64_t value;
			const char *msg; /* OE_ACT_LOG: static string (value, if not 0, goes with it) */
		};
		oe_persisted persisted; /* OE_ACT_PERSIST */
	};
} oe_action;

typedef struct {
	oe_action *v;
	size_t n, cap; /* appending past cap sets overflow instead of allocating */
	bool overflow;
} oe_actions;

/* Snapshot of what the shadow tree shows for a cgroup. */
typedef struct {
	uint64_t limit, user_high, delay_ms;
	bool disable;
	bool under_oom;     /* rule 12: a hold on this cgroup or an ancestor */
	bool in_hold;       /* a hold on this cgroup itself */
	bool was_held;      /* a hold has begun on it since it was added (or one resumed) */
	uint64_t oom_kill;  /* rule 10 */
	uint64_t real_max, real_high; /* what the daemon wants the real knobs to be */
	bool frozen;
	bool managed;
	int64_t deadline_ns;
	/* in_hold: when the hold began, the `now` its deadline counts from (a re-arm moves
	 * the deadline, not this; a hold resumed after a restart: its adoption); else 0 */
	int64_t hold_onset_ns;
	/* memory.current of the last reading given (oe_sample); 0 before any. Taken with the
	 * view right after an onset, it is the usage the onset was seen at: the audit's record
	 * read it itself, later, and a task that left meanwhile made it a figure under L. */
	uint64_t usage;
} oe_view;

typedef struct oe_engine oe_engine;

oe_engine *oe_new(const oe_config *cfg);
void oe_free(oe_engine *e);

/* The root cgroup (no memory.max of its own; never managed). Call once, first. */
void oe_root(oe_engine *e, uint64_t id);

/* A cgroup appeared (scan at start, shadow mkdir, or real mkdir seen by inotify).
 * real_max/real_high: the values read from the real files (OE_UNLIMITED for "max").
 * persisted: state found with the cgroup, or NULL. Without it the cgroup inherits
 * T and D from its parent (rule 7) and L/user_high are the real values. With it,
 * a limit above real_max is discarded, with an OE_ACT_LOG, for real_max (less the
 * ceiling when the state had the knobs held: real_max is then the daemon's raise),
 * and a high above real_high (unless the daemon's own min(L, high)) for real_high:
 * adoption never loosens the real tree as found.
 * With it a running hold resumes or, if its deadline passed, is finished now.
 * Adding an id twice is a no-op. Returns false if the parent is unknown. */
bool oe_cgroup_add(oe_engine *e, int64_t now, uint64_t id, uint64_t parent,
		   uint64_t real_max, uint64_t real_high, const oe_persisted *persisted,
		   oe_actions *out);
/* The cgroup is gone (its descendants must be removed first). */
void oe_cgroup_remove(oe_engine *e, uint64_t id, oe_actions *out);

/* User writes through the shadow tree. Return 0 or a positive errno (EINVAL,
 * ENOENT); on error nothing changed and nothing was appended. */
int oe_write_delay(oe_engine *e, int64_t now, uint64_t id, uint64_t ms, oe_actions *out);
int oe_write_disable(oe_engine *e, int64_t now, uint64_t id, uint64_t v, oe_actions *out);
int oe_write_limit(oe_engine *e, int64_t now, uint64_t id, uint64_t bytes, oe_actions *out);
int oe_write_high(oe_engine *e, int64_t now, uint64_t id, uint64_t bytes, oe_actions *out);

/* Someone wrote the real memory.max directly (value read after the inotify event).
 * A value the daemon itself wrote in the last 10 s (its last eight writes) is an echo:
 * it changes nothing, but the wanted knobs are emitted again, because an echo of an older
 * write may mean the writes landed out of order. Any other value becomes L. */
void oe_real_max_seen(oe_engine *e, int64_t now, uint64_t id, uint64_t value, oe_actions *out);

/* A reading of the real files (after a memory.events change or an OE_ACT_SAMPLE).
 * A reading whose event counters are behind the last one was taken before it, and is
 * ignored. */
void oe_sample(oe_engine *e, int64_t now, uint64_t id, const oe_reading *r, oe_actions *out);

/* The shell's timer fired (or any time): handle every deadline <= now. */
void oe_tick(oe_engine *e, int64_t now, oe_actions *out);
/* When oe_tick must run next: the earliest deadline or sample time; OE_NO_DEADLINE if none.
 * Nothing is due while no cgroup is in a hold. */
int64_t oe_next_wakeup(const oe_engine *e);

/* The shell could not store id's state and skipped the guarded actions that needed
 * it: the real knobs and freezer are as read (real_max, real_high, real_frozen), and
 * the next reconcile or reading persists again before raising or freezing again. */
void oe_state_unstored(oe_engine *e, uint64_t id, uint64_t real_max, uint64_t real_high,
		       bool real_frozen);

/* A group kill (OE_ACT_KILL_GROUP) took `killed` processes away. */
void oe_group_killed(oe_engine *e, uint64_t id, uint64_t killed, oe_actions *out);

/* Hand-back: every managed cgroup back to the kernel (knobs = L and the user's high,
 * thawed, state forgotten). Used on SIGTERM and --release-all. */
void oe_release_all(oe_engine *e, oe_actions *out);

bool oe_view_get(const oe_engine *e, uint64_t id, oe_view *v);
size_t oe_count(const oe_engine *e);

/* Calls fn for id and each descendant (pre-order). */
void oe_foreach_subtree(const oe_engine *e, uint64_t id, void (*fn)(uint64_t id, void *ud), void *ud);

/* Action buffer helpers. */
void oe_actions_init(oe_actions *a, oe_action *storage, size_t cap);
void oe_actions_clear(oe_actions *a);

#endif
