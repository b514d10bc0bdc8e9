/* ec_private.h — what the three files of the OOM listeners share (fs/ only):
 * event_control.c registers them, ec_notify.c signals them (the notifier thread),
 * ec_exit.c follows their processes (the watch thread).
 */
#ifndef OOMD_FS_EC_PRIVATE_H
#define OOMD_FS_EC_PRIVATE_H

#include "ec_bounds.h"
#include "fdguard.h"
#include "fs_private.h"
#include "oomd/v1events.h"

typedef struct ec_levels ec_levels;
typedef struct ec_pending ec_pending;

/* What a listener listens to: the control file it registered with. */
typedef enum {
	EC_OOM,      /* memory.oom_control */
	EC_USAGE,    /* memory.usage_in_bytes and a threshold (ec_levels.c) */
	EC_MEMSW,    /* memory.memsw.usage_in_bytes and a threshold */
	EC_PRESSURE, /* memory.pressure_level and a level */
} ec_kind;

typedef struct {
	gint refs;      /* the list's and each notifier batch's */
	uint64_t id;
	ec_kind kind;
	uint64_t threshold;  /* EC_USAGE, EC_MEMSW: bytes (page-aligned) */
	od_vmp_level level;  /* EC_PRESSURE */
	od_vmp_mode mode;
	bool cg_root;        /* its cgroup is the hierarchy's root (v1's usage counted otherwise) */
	uint64_t serial; /* unique: finds the listener again after the lock was let go */
	pid_t tgid;
	uid_t uid;      /* the registering request's (log lines) */
	uint64_t principal; /* its uid, or its user namespace (ec_bounds.h) */
	bool root;      /* uid 0 of the initial user namespace */
	bool stranger;  /* neither root nor the cgroup's owner when it registered */
	int efd;   /* our copy of the caller's eventfd (verified one: closing it is safe) */
	int pidfd; /* the caller's process: readable once it has exited */
	bool orphan; /* its process exited; a holder of its eventfd is being looked for */
	/* carried for a successor (ec_carry.c): its record's slot (-1: none) */
	fs_carry *carry;
	int slot;
	uint64_t eventfd_id;
} ec_listener;

/* Work for the notifier thread, the only thread that writes listeners' eventfds. */
typedef enum { JOB_SIGNAL, JOB_SYNC, JOB_STOP } ec_job_kind;
typedef struct {
	ec_job_kind kind;
	uint64_t id;       /* the cgroup (for log lines) */
	GPtrArray *batch;  /* JOB_SIGNAL: ec_listener refs to signal once */
	struct ec_sync *sync;
} ec_job;

struct ec_sync {
	GMutex lock;
	GCond cond;
	bool done;
};

struct fs_evctl {
	GMutex lock;    /* guards all, next_serial, stop; never held across a blocking call */
	GPtrArray *all; /* ec_listener*, one ref each */
	int wake;       /* eventfd: the set of pidfds changed, or stop */
	uint64_t next_serial;
	bool stop;
	GThread *thread;   /* watches the listeners' processes */
	GThread *notifier; /* signals them */
	GAsyncQueue *jobs; /* ec_job*, for the notifier */
	fs_closer *closer;
	od_controller *ctl;
	od_hooks_reg *hooks; /* removed before fs_evctl is freed */
	fs_carry *carry;   /* guarded by lock; NULL until fs_evctl_carry */
	ec_levels *levels; /* thresholds and pressure levels (ec_levels.c) */
	/* a successor re-taking carried listeners (ec_carry.c), off the start-up path: what
	 * happened to cgroups meanwhile is owed to them (guarded by lock) */
	GThread *retaker;
	bool retaking;
	GHashTable *owed_onset;   /* cgroup id set: an onset while retaking */
	GHashTable *owed_removed; /* cgroup id set: removed while retaking */
	GArray *pending;          /* ec_pending: records being re-taken, counted by the bounds */
	/* how a carried cgroup id is opened (tests: a fixture has no kernfs handles); NULL:
	 * fs_inodes_open_cgroup. >= 0, -1 (gone), -2 (unknown). */
	int (*open_cgroup)(void *ud, uint64_t id);
	void *open_cgroup_ud;
	struct od_shadowfs *fs;
	gint no_timer;     /* the notifier could not make its write timer: refuse listeners */
};

/* A listener of cgroup id (one reference), taking efd and pidfd; not carried (slot -1),
 * its eventfd-id read from fdinfo (0 if unreadable: then it cannot be carried). */
ec_listener *ec_listener_new(uint64_t id, pid_t tgid, uid_t uid, int efd, int pidfd);
/* One reference more / less; the last closes its eventfd (a verified eventfd: its
 * close never blocks) and pidfd. Any thread. */
ec_listener *ec_listener_ref(ec_listener *l);
void ec_listener_unref(gpointer l);
/* Wakes the watch thread: the set of pidfds changed. Never blocks. */
void ec_kick(fs_evctl *e);
/* Queues a job for the notifier (takes batch). Never blocks. */
void ec_push_job(fs_evctl *e, ec_job_kind kind, uint64_t id, GPtrArray *batch);
/* ---- carrying listeners across servers (ec_carry.c) ---- */
/* /proc/<pid>/stat's start time (field 22), 0 if unreadable: with the pid, a process's
 * identity across a restart of ours. */
uint64_t ec_proc_starttime(pid_t pid);
/* Records l for a successor if the listeners are carried. Called with e->lock held. */
void ec_carry_record(fs_evctl *e, ec_listener *l);
/* Can this server serve a carried record (a kind, level and mode it knows)? Pure. */
bool ec_carry_valid(const fs_carried_listener *r);
/* Adds the records still being re-taken to n, as seen by the registration of a listener
 * of cgroup id by process tgid and principal (ec_count_one). Called with e->lock held. */
void ec_carry_count_pending_locked(fs_evctl *e, ec_counts *n, uint64_t id, pid_t tgid, uint64_t principal);
/* Who registered a carried record, for the bounds (ec_bounds.h): the principal, root
 * and stranger flags the live registration computed, or, for a record without them
 * (an older server's), its uid, as a stranger unless root's. Pure. */
void ec_carry_who(const fs_carried_listener *r, uint64_t *principal, bool *root, bool *stranger);
/* l's eventfd is now held by process tgid (ec_exit.c). */
void ec_carry_holder(ec_listener *l);
/* The controller's hooks while carried listeners are being re-taken: cgroup id had an
 * onset (removed: was removed); they get it once re-taken. Never blocks. */
void ec_carry_owe(fs_evctl *e, uint64_t id, bool removed);
/* Waits for the re-taking thread (fs_evctl_free). */
void ec_carry_join(fs_evctl *e);

/* ---- thresholds and pressure levels (ec_levels.c) ----
 * One thread of its own ("oomd-fs-levels") samples the usage of the cgroups that have
 * thresholds, every OD_THR_PERIOD_MS while at least one is registered (asleep
 * otherwise), and polls the PSI triggers of the cgroups that have pressure listeners;
 * what it finds it queues for the notifier. Its state is guarded by e->lock; it never
 * holds the lock across a read of a kernel file. */
ec_levels *ec_levels_new(fs_evctl *e, int *err);
void ec_levels_free(fs_evctl *e); /* stops and joins the thread */
/* A FUSE worker registering l (EC_USAGE, EC_MEMSW, EC_PRESSURE) of the cgroup whose
 * real directory is dirfd; called with e->lock held, after l joined e->all. usage: the
 * counter of l's kind read just before (thresholds). Crossings of the cgroup's existing
 * thresholds are queued. 0 or ENOMEM (no descriptor for the cgroup). */
int ec_levels_add_locked(fs_evctl *e, ec_listener *l, int dirfd, bool is_root, uint64_t usage);
/* The set of listeners changed (a listener left): the thread looks again. Never blocks. */
void ec_levels_kick(fs_evctl *e);
/* The limit events of cgroups with pressure listeners (memory.events.local: their own
 * limits) or thresholds (memory.events: theirs and those below), ec_limits.c; the levels
 * thread's. file: which of the two; borrowed, a literal. */
typedef struct ec_limits ec_limits;
ec_limits *ec_limits_new(const char *file);
void ec_limits_free(ec_limits *x);
/* The counters max, high, oom, oom_kill (od_vmp_level_of_events' order) of file
 * (memory.events or memory.events.local) under dirfd, in one read: 0, or -1 with out all 0. */
int ec_limit_counts(int dirfd, const char *file, uint64_t out[OD_VMP_NEVENTS]);
int ec_limits_fd(const ec_limits *x); /* poll for POLLIN; -1 if inotify failed */
/* Watches path/<file> for record key (dirfd: its directory, borrowed until
 * unwatched). 0 or -errno (the root cgroup has none). */
int ec_limits_watch(ec_limits *x, gpointer key, int dirfd, const char *path);
void ec_limits_unwatch(ec_limits *x, gpointer key);
/* The descriptor was readable: fn(key, level) for each record whose events moved. */
void ec_limits_read(ec_limits *x, void (*fn)(gpointer key, od_vmp_level lev, void *ud), void *ud);

/* The threads' bodies; data is the fs_evctl. */
gpointer ec_notify_thread(gpointer data);
gpointer ec_watch_thread(gpointer data);

#endif
