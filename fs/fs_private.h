/* fs_private.h — what the files of fs/ share: the session object, the inode
 * table, open-file handles, the synthetic file table and the two poll engines.
 * Not installed; the public contract is include/oomd/shadowfs.h.
 */
#ifndef OOMD_FS_PRIVATE_H
#define OOMD_FS_PRIVATE_H

#include <errno.h>
#include <fuse_lowlevel.h>
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "oomd/controller.h"
#include "oomd/shadowfs.h"
#include "oomd/zygote.h"

/* Node ids and file handles: ids.h (what a successor decodes). */
#include "ids.h"

/* kernfs' default poll mask; also what a synthetic file reports when idle */
#define FS_POLL_DEFAULT (POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM)

/* Interrupts a wait of the loop's thread or a worker's (its handler does nothing and has no
 * SA_RESTART; installed by od_shadowfs_run, unblocked in the loop thread and the workers it
 * starts). Not used elsewhere in the daemon (ec_signal.c has SIGRTMIN + 7). */
#define FS_WAKE_SIGNAL (SIGRTMIN + 6)

/* ---- synthetic and virtualised files (synthetic.c) ---- */

enum {
	FS_SYN_VIRTUAL = 1 << 0, /* a real kernel file whose content we replace */
	FS_SYN_ROOT = 1 << 1,    /* also present in the root cgroup */
	FS_SYN_NOTIFY = 1 << 2,  /* content changes are announced by poll (oom_control) */
	FS_SYN_AS_CALLER = 1 << 3, /* opened for writing with the caller's credentials
				    * (synthetic: fs_synth_open_as_opener) */
	FS_SYN_PSI = 1 << 4,       /* present only where the real directory has memory.pressure */
};

/* A handler may answer this to have the request served by the real file. */
#define FS_SYN_PASS (-1)

typedef struct {
	od_shadowfs *fs;
	od_controller *ctl;
	uint64_t id;     /* the cgroup: st_ino of its real directory */
	uint64_t parent; /* its parent's id, 0 for the served root */
	int dirfd;       /* O_PATH descriptor of the real cgroup directory */
	bool is_root;    /* the root cgroup of the hierarchy (no memory.max of its own) */
	uint64_t page_size;
	fuse_req_t req;  /* the request being served (caller's pid/uid) */
	int fd;          /* the backing descriptor of this open, -1 for synthetic files */
	int write_err;   /* decided at open (the opener's namespace): every write answers it */
	int fd2;         /* a second one a synthetic file's open hook made (v1 tasks), or -1 */
} fs_synth_ctx;

typedef struct fs_synth {
	const char *name;
	mode_t mode; /* permission bits of a synthetic file (ignored when virtual) */
	unsigned flags;
	unsigned index; /* position in the table, part of the synthetic node id */
	/* Both return 0, a positive errno or FS_SYN_PASS. NULL: not readable/writable. */
	int (*read)(const fs_synth_ctx *c, GString *out);
	int (*write)(const fs_synth_ctx *c, const char *buf, size_t len);
	/* The real file whose owner and mode the synthetic file shows, and whose
	 * write rules its writes follow (the file whose behaviour it changes).
	 * NULL: the directory's owner and the mode above (cgroup.event_control). */
	const char *attr_of;
} fs_synth;

/* For an open with write access of a synthetic file flagged FS_SYN_AS_CALLER
 * (v1 tasks, cgroup.procs): opens the real files its writes go through now, as
 * the opener (fs_caller_open, FS_OPEN_AS_CALLER), into *fd (the open's backing
 * descriptor) and *fd2. 0 or errno. v1tasks.c. */
struct fs_caller;
int fs_synth_open_as_opener(const fs_synth *s, const fs_synth_ctx *c, const struct fs_caller *who,
			    int flags, int *fd, int *fd2);

typedef enum { FS_MEMCG_NONE, FS_MEMCG_CHILD, FS_MEMCG_ROOT } fs_memcg_kind;

const fs_synth *fs_synth_at(unsigned index); /* NULL past the end */
unsigned fs_synth_count(void);
/* Which synthetic names a real directory carries (looked up live, never cached:
 * the memory controller can be enabled or disabled at any time). */
fs_memcg_kind fs_memcg_kind_of(int dirfd, bool is_root);
bool fs_synth_present(const fs_synth *s, fs_memcg_kind kind);
/* The attributes a synthetic file shows (st_ino left to the caller): owner and
 * permission bits of s->attr_of in the directory dirfd, with the read or write
 * bits taken away that the file's own mode lacks; where that file is missing
 * (the root cgroup), the owner of memory.stat and the mode of the table. 0 or errno. */
int fs_synth_attr(int dirfd, const fs_synth *s, struct stat *st);

/* cgroup.event_control (event_control.c): v1 listeners of OOM, usage thresholds and
 * pressure levels. event_fd and control_fd are descriptor numbers in the calling
 * process, args (alen bytes) what followed them. 0 or errno. */
int fs_event_control_register(const fs_synth_ctx *c, int event_fd, int control_fd, const char *args,
			      size_t alen);
typedef struct fs_evctl fs_evctl;
typedef struct fs_carry fs_carry;
fs_evctl *fs_evctl_new(od_controller *ctl, int *err);
void fs_evctl_free(fs_evctl *e);
/* Exposed for tests and callers without hooks: what the controller's hooks do. */
void fs_evctl_notify(fs_evctl *e, uint64_t id);
void fs_evctl_removed(fs_evctl *e, uint64_t id);
/* Returns once the notifier has done everything queued before the call (tests). */
void fs_evctl_sync(fs_evctl *e);
size_t fs_evctl_count(fs_evctl *e, uint64_t id);
/* From now on every listener is recorded in c for a successor (ec_carry.c). With
 * takeover, also starts re-taking the listeners a previous server recorded there, on a
 * thread of its own (never on the start-up path: a holder's descriptor table is the
 * caller's to make long): each eventfd from the process that holds it (checked by pid,
 * start time and eventfd-id; else any process of the registering uid holding that
 * eventfd-id); a listener of a cgroup removed meanwhile is signalled once (the rmdir)
 * and dropped, one whose eventfd is gone is dropped, an OOM listener whose cgroup had an
 * onset while it was being re-taken gets that signal; thresholds and pressure levels join
 * the levels thread, a threshold with the usage at its re-take as its baseline. The
 * records not re-taken yet count in the bounds. Returns the records found. */
struct od_shadowfs;
unsigned fs_evctl_carry(fs_evctl *e, struct od_shadowfs *fs, fs_carry *c, bool takeover);

/* cgroup.procs / cgroup.threads writes (pids.c) */
int fs_procs_write(const fs_synth_ctx *c, const char *buf, size_t len);
int fs_threads_write(const fs_synth_ctx *c, const char *buf, size_t len);
int fs_procs_read(const fs_synth_ctx *c, GString *out);
/* What cgroup_procs_write_start accepts (kstrtoint(strstrip(buf), 0), pid >= 0,
 * the string ending at a NUL): 0 and *pid, or EINVAL. Pure; fuzzed. */
int fs_pid_parse(const char *buf, size_t len, int *pid);
/* The task a write to cgroup.procs (threads: cgroup.threads) names, as the kernel
 * would find it for the request's writer: its global tid in *real; EINVAL for bad
 * syntax, ESRCH when the writer cannot see it or the writer is unknown. Scans
 * /proc for a writer in another pid namespace. */
int fs_pid_resolve(fuse_req_t req, const char *buf, size_t len, bool threads, pid_t *real);
/* Writes the resolved pid to a real cgroup.procs/cgroup.threads: 0 or its errno. */
int fs_pid_write(int fd, pid_t real);

/* ---- the caller (caller.c) ----
 * FUSE workers, at open and on xattr/procs requests. Reads /proc/<tid> of the
 * request's thread (a few small files) through one pinned directory
 * descriptor, never anything on a FUSE mount. Not on the kill path. */

#define FS_MAX_NS_DEPTH 33 /* MAX_PID_NS_LEVEL + 1 */

typedef struct fs_caller {
	pid_t tid;          /* the request's thread in our pid namespace; <= 0: unknown */
	pid_t tgid;         /* its thread-group leader (also for a nobody); <= 0: unknown */
	int procfd;         /* O_PATH of /proc/<tid>, pinning that task; -1 */
	bool known;         /* /proc said who it is, and it is the request's fsuid/fsgid */
	uid_t fsuid;
	gid_t fsgid;
	GArray *groups;     /* gid_t, supplementary */
	uint64_t cap_eff;
	bool init_userns;   /* in the daemon's user namespace (the FUSE superblock's, init's) */
	ino_t userns;       /* its user namespace's inode (also for a nobody); 0: unknown */
	int cgns;           /* its cgroup namespace when not ours, else -1 */
	/* its pid namespace (also for a nobody: it only narrows what it can name) */
	ino_t pidns;        /* 0: unknown */
	bool pidns_ours;
	int pidns_depth;    /* entries of its NSpid: 1 in ours */
} fs_caller;

/* The request's caller. Never NULL; a caller we cannot read, or whose fsuid or
 * fsgid there is not the request's (it changed identity since), is a nobody:
 * the other bits, no capability, no open for writing. */
fs_caller *fs_caller_new(fuse_req_t req);
/* The same without reading /proc/<tid>/status (the heaviest of the reads: each write
 * open paid for it, x-write-strace 2026-12-06): for an open the request's own fsuid
 * decides as the file's owner (fs_access_open), and that is judged by nothing
 * of the opener but its cgroup namespace (not as_caller, not FS_SYN_AS_CALLER). Its
 * identity is the request's; it has no groups, no capabilities, no tgid, no NSpid and
 * no pid or user namespace (0); when its cgroup namespace is ours, no procfd (-1). */
fs_caller *fs_caller_new_owner(fuse_req_t req);
void fs_caller_free(fs_caller *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(fs_caller, fs_caller_free)
/* The content of /proc/<tid>/<name> of the caller (g_free), NULL if unreadable. */
char *fs_caller_read(const fs_caller *c, const char *name);
/* The pids of NSpid in a /proc status text, ours first, up to max; the count. */
int fs_status_nspid(const char *status, pid_t *out, int max);
/* The first number of field "<key>" (with its colon) of a /proc status text, in
 * base 10 or 16; false without one. */
bool fs_status_number(const char *status, const char *key, guint base, guint64 *v);
/* Is the caller's thread still the task its procfd pinned, in thread group tgid?
 * (A live thread keeps its group's leader pid from reuse, zombie or not.) */
bool fs_caller_in_group(const fs_caller *c, pid_t tgid);

/* open(2) on the calling worker thread while it is in the caller's cgroup
 * namespace, so the kernel keeps that namespace in the open cgroup file
 * (cgroup_file_open, ctx->ns) and judges nsdelegate by it at every write.
 * Two flavours, both needed:
 *  - FS_OPEN_AS_DAEMON: the daemon's own credentials. Pass-through writes and
 *    the nsdelegate probe: the daemon has already decided permission
 *    (fs_access_open), exactly, capabilities in the caller's user namespace
 *    included (capable_wrt_inode_uidgid), which no identity switch on our
 *    thread could reproduce (they would count in ours, so they are dropped).
 *  - FS_OPEN_AS_CALLER: also the caller's fsuid, fsgid, groups and effective
 *    capabilities (those in our user namespace). cgroup.procs, cgroup.threads,
 *    v1 tasks and *.pressure: the kernel judges their writes by the opener's
 *    f_cred (__cgroup_procs_write since 5.16, CVE-2021-4197: delegation on the
 *    common ancestor; cgroup_pressure_write: CAP_SYS_RESOURCE), which the
 *    daemon does not re-implement; the kernel then checks every write itself.
 * Blocks only as open(2) and /proc reads do. fd or -errno; -EACCES for a
 * nobody. Aborts the daemon if it cannot restore its own identity or namespace. */
typedef enum { FS_OPEN_AS_DAEMON, FS_OPEN_AS_CALLER } fs_open_as;
int fs_caller_open(const fs_caller *c, const char *path, int flags, fs_open_as as);

/* ---- the caller's rights (access.c) ---- */

/* generic_permission() of a file with attributes st, mask of R_OK/W_OK/X_OK: 0 or EACCES. */
int fs_caller_permission(const fs_caller *c, const struct stat *st, int mask);
/* capable(cap): the capability in the initial user namespace. */
bool fs_caller_capable(const fs_caller *c, int cap);
/* What a write by this caller to the real file name of dirfd would meet beyond
 * permission: EPERM at its cgroup-namespace root under nsdelegate, EACCES for
 * a nobody, else 0. */
int fs_caller_cgns_write_err(const fs_caller *c, int dirfd, const char *name);
/* At an open of node n for writing (flags): 0 or EACCES (the kernel's permission check of
 * the real file the daemon will write for the caller); *write_err is what every write of
 * this open must answer instead (0: none); *who the caller (set unless the real file could
 * not be stat'ed; freed by the caller of this), read whole when full (the write is judged by
 * the opener's credentials) or when the owner bits alone do not decide. */
struct fs_node;
int fs_access_open(fuse_req_t req, const struct fs_node *n, int flags, bool full, fs_caller **who,
		   int *write_err);
/* At a read-only open of node n: 0 or EACCES, judged by the real file's mode now. The kernel
 * judged the open by the attributes it keeps (FS_CACHE_S), and a reopen through
 * /proc/PID/fd/N walks no name that would refresh them: a mode the real tree closed a moment
 * before would still let it read (review of the attribute change, 2026-12-06). The opener's
 * uid and gid from the request decide at once; /proc (groups, capabilities) is read only
 * when they refuse. */
int fs_access_read(fuse_req_t req, const struct fs_node *n);
/* Extended attributes: a name of the daemon's own (<ns>.oomdelayfs.*), whether the
 * kernel's check of an access (mask R_OK or W_OK) depends on who asks (a read of
 * security.* or system.* does not: fs_xattr_permission takes c and st NULL then), the
 * kernel's xattr_permission() for the caller (0, EPERM, ENODATA, EACCES), and
 * whether listxattr shows the name to the caller. */
bool fs_xattr_is_ours(const char *name);
bool fs_xattr_needs_caller(const char *name, int mask);
int fs_xattr_permission(const fs_caller *c, const struct stat *st, const char *name, int mask);
bool fs_xattr_listed(const fs_caller *c, const char *name);

/* ---- inode table (inodes.c) ---- */

typedef struct fs_node {
	uint64_t nodeid;
	dev_t dev;
	ino_t ino;          /* the real object (for a synthetic file: its directory) */
	unsigned tag;       /* 0 for a real object, 1 + synthetic index otherwise */
	int fd;             /* O_PATH of the real object (synthetic: of its directory) */
	uint64_t nlookup;   /* kernel references; guarded by the table lock */
	const fs_synth *syn;/* synthetic or virtualised file, NULL for plain pass-through */
	/* the cgroup the object belongs to (a directory is its own cgroup) */
	uint64_t cg_id, cg_parent;
	bool cg_is_root;
	int cg_dirfd;       /* O_PATH of that cgroup's directory for virtual files, else -1 */
	bool as_caller;     /* opened for writing with the caller's credentials */
	bool is_dir;        /* a real directory (a cgroup) */
	/* a file whose name had a node in its directory before (names_seen): one looked up
	 * again after a sweep, which the sweeper then keeps for a while (sweep.c) */
	bool repeat;
	/* descriptors it holds, counted against the uid whose lookup made it (inodes.c) */
	uid_t owner;
	unsigned nfds;
	/* when the kernel last looked it up (tenths of a second, monotonic), for the sweeper;
	 * table lock */
	uint32_t used_ds;
	union {
		/* a file's directory node (and name below), for the sweeper's
		 * FUSE_NOTIFY_INVAL_ENTRY */
		uint64_t parent;
		/* a directory's: the file names that had a node in it, a bit per name hash
		 * (a set bit only keeps a first-time name as a repeated one); table lock */
		uint64_t names_seen;
	};
	char *name;
} fs_node;

typedef struct fs_inodes fs_inodes;

fs_inodes *fs_inodes_new(int root_fd, int *err);
void fs_inodes_free(fs_inodes *t);
/* The node of a kernel-known id, or NULL (a stale id: answer ESTALE). */
fs_node *fs_inodes_get(fs_inodes *t, fuse_ino_t id);
/* Find or create the node of a real object found in dir; takes fd (closed when
 * the node already exists). Adds one kernel reference. NULL with *err on failure:
 * EMFILE when the descriptors of uid's nodes (uid 0 excepted) reach its share,
 * FS_INODES_UID_SHARE of the request budget (fdguard.h): one uid's lookups pinned by
 * its processes cannot take every descriptor from the others. */
#define FS_INODES_UID_SHARE 8
fs_node *fs_inodes_intern_real(fs_inodes *t, const fs_node *dir, int fd, const struct stat *st,
			       const char *name, uid_t uid, int *err);
/* The node of the real object st describes if it exists (the kernel knows it): one more
 * kernel reference, no descriptor opened; NULL otherwise. A lookup asks this first, so that
 * a walk over names the kernel already knows costs one fstatat each, not an openat, an
 * fstat and a close (bench-walk, 7: `ls -l` of 2,000 cgroups 2.7x the floor). */
fs_node *fs_inodes_ref_known(fs_inodes *t, const struct stat *st);
/* Find or create the synthetic file s of directory dir. Adds one kernel reference. */
fs_node *fs_inodes_intern_synth(fs_inodes *t, const fs_node *dir, const fs_synth *s, uid_t uid,
				int *err);
/* Descriptors the nodes hold, in all, of uid, and of file (not directory) nodes. */
size_t fs_inodes_fds(fs_inodes *t, uid_t uid, size_t *of_uid, size_t *of_files);
/* The sweeper (sweep.c): the kernel keeps a FUSE dentry whose entry timeout ran out in
 * its cache until reclaim (fuse_dentry_settime sets DCACHE_OP_DELETE only for
 * fc->delete_stale, virtiofs'), and sends FORGET only when the inode goes: a name nobody
 * uses any more keeps its node, and its descriptor, indefinitely. The sweeper asks the
 * kernel to drop the entries of files (FUSE_NOTIFY_INVAL_ENTRY): unused ones go, with
 * a FORGET; used ones are looked up again at the next path walk. Started once the loop
 * can serve; any thread may kick it (never blocks). Sweeps when kicked (every unused
 * name), and while file nodes hold many descriptors every 5 s, backing off to 20 s while
 * sweeps free nothing (names in use or looked up within opts.name_keep_s, the most recent
 * opts.name_keep_max of them); never with few. */
typedef struct fs_sweeper fs_sweeper;
fs_sweeper *fs_sweeper_new(od_shadowfs *fs);
void fs_sweeper_kick(fs_sweeper *w);
/* File nodes hold more than FS_SWEEP_IDLE descriptors: the inode table wakes an idle
 * sweeper (fs_sweeper_wake: never blocks, no sweep at once) as they pass it, whoever's
 * lookups they are; the sweeper then sweeps every period while they stay above it. */
#define FS_SWEEP_IDLE 256
void fs_sweeper_wake(fs_sweeper *w);
void fs_sweeper_free(fs_sweeper *w);
/* The files the kernel knows that a sweep asks it to drop (parent node id, name), for the
 * sweeper: every one made for the first time, and of the repeated ones (fs_node.repeat)
 * those not looked up for keep_s seconds or beyond the keep_max most recent (and beyond
 * half a uid's descriptor share); keep_s 0: all of them. (uint64_t, char*) pairs appended
 * to out (names g_strdup'd). */
void fs_inodes_files(fs_inodes *t, unsigned keep_s, unsigned keep_max, GArray *parents,
		     GPtrArray *names);
void fs_inodes_set_sweeper(fs_inodes *t, fs_sweeper *w);
void fs_inodes_forget(fs_inodes *t, fuse_ino_t id, uint64_t n);
/* The node id of the cgroup directory with kernfs id id (the served root: FUSE_ROOT_ID)
 * if the kernel knows it, else 0; and the real tree's device. */
uint64_t fs_inodes_find_dir(fs_inodes *t, uint64_t id);
dev_t fs_inodes_dev(fs_inodes *t);
/* The invalidator (inval.c): one thread sending the notifications od_shadowfs_real_changed
 * queues. NULL (logged) if it cannot start: the time-out is then the only bound. */
typedef struct fs_inval fs_inval;
fs_inval *fs_inval_new(od_shadowfs *fs);
void fs_inval_free(fs_inval *v);
/* The node id of synthetic file s of the directory (dev, ino), or with s NULL of the real
 * object (dev, ino), if the kernel knows it (someone has it open or looked up), else 0. */
uint64_t fs_inodes_find(fs_inodes *t, dev_t dev, ino_t ino, const fs_synth *s);
/* The node id of the real object name in the cgroup directory with kernfs id dir, if the
 * kernel knows both, else 0. One fstatat, outside the table's lock. */
uint64_t fs_inodes_find_child(fs_inodes *t, uint64_t dir, const char *name);
/* The id a synthetic name of dir has (or will have); for readdir's d_ino. */
uint64_t fs_inodes_synth_id(uint64_t dir_nodeid, const fs_synth *s);
/* After a takeover: an id the table does not hold may be one a previous server gave
 * the kernel; fs_inodes_get then opens cgroup directories by their kernfs handle and
 * rebuilds their files (synthetic: by their place in the table; real: by the carried
 * name). Only on kernfs (logged otherwise). */
void fs_inodes_enable_revive(fs_inodes *t, bool v1);
/* The carried name table real files' ids refer to (NULL: counter ids). Before serving. */
struct fs_carry;
void fs_inodes_set_carry(fs_inodes *t, struct fs_carry *c);
/* An O_PATH descriptor of the cgroup directory with kernfs id id, checked to lie under
 * the served root; -1 if it is gone (or elsewhere), -2 if the tree cannot tell (no
 * kernfs handles, or revival not enabled). */
int fs_inodes_open_cgroup(fs_inodes *t, uint64_t id);

/* ---- open files (file.c) ---- */

typedef struct fs_file {
	gint refs;
	int fd;             /* the backing descriptor: one per FUSE open; -1 for synthetic */
	const fs_synth *syn;
	/* ctx.dirfd is owned (a dup), -1 when syn is NULL: not the node's, which the
	 * daemon itself may drop while the file is open (a successor's revived node counts
	 * no kernel lookup; a lookup whose reply failed is forgotten again: review
	 * 2026-12-07, borrowing it let a write reach another cgroup's directory) */
	fs_synth_ctx ctx;
	GMutex lock;        /* guards content/have */
	GString *content;   /* generated at offset 0, like a kernfs seq_file */
	bool have;
	/* guarded by the control-watch lock (ctlwatch.c) */
	uint64_t seen_gen;
	struct fuse_pollhandle *ph;
	uint64_t fh;        /* the kernel's handle of this open (handles.c) */
	uint64_t kh;        /* the kernel's poll handle once it polled (carried, carry.c) */
} fs_file;

fs_file *fs_file_new(void);
fs_file *fs_file_ref(fs_file *f);
void fs_file_unref(fs_file *f);
/* The open a previous server made (handle info i) of node n, opened again from the real
 * tree for this server (handles.c): NULL with *err. */
fs_file *fs_file_revive(od_shadowfs *fs, const fs_node *n, uint64_t fh, const fs_fh_info *i,
			int *err);
/* The same for an open directory (dir.c). Both return the tracked handle. */
void *fs_dir_revive(od_shadowfs *fs, const fs_node *n, uint64_t fh, int *err);

/* ---- poll of passed-through files (poll.c) ---- */

typedef struct fs_poller fs_poller;
fs_poller *fs_poller_new(int *err);
void fs_poller_free(fs_poller *p);
/* Answers at once from a zero-timeout poll of f's backing fd; keeps ph to notify
 * later when nothing is pending. Takes ownership of ph (may be NULL). */
unsigned fs_poller_poll(fs_poller *p, fs_file *f, struct fuse_pollhandle *ph);
void fs_poller_forget(fs_poller *p, fs_file *f);

/* ---- poll of the synthetic memory.oom_control (ctlwatch.c) ---- */

typedef struct fs_ctlwatch fs_ctlwatch;
fs_ctlwatch *fs_ctlwatch_new(od_controller *ctl);
/* Removes its hooks from the controller (waiting for a call in flight), then frees. */
void fs_ctlwatch_free(fs_ctlwatch *w);
void fs_ctlwatch_attach(fs_ctlwatch *w, fs_file *f);
void fs_ctlwatch_detach(fs_ctlwatch *w, fs_file *f);
/* The file is about to generate its content: it has seen everything until now. */
void fs_ctlwatch_seen(fs_ctlwatch *w, fs_file *f);
unsigned fs_ctlwatch_poll(fs_ctlwatch *w, fs_file *f, struct fuse_pollhandle *ph);
/* Exposed for tests and for callers without hooks. */
void fs_ctlwatch_changed(fs_ctlwatch *w, uint64_t id);

/* ---- the session (session.c) and the operations (entry.c, file.c, dir.c, xattr.c) ---- */

struct od_shadowfs {
	struct fuse_session *se;
	od_controller *ctl;
	od_shadowfs_opts opts;
	od_zygote *own_zygote; /* forked by od_shadowfs_new when opts named none */
	fs_inodes *inodes;
	fs_poller *poller;
	fs_ctlwatch *ctlw;
	fs_evctl *evctl;
	od_hooks_reg *v1hooks; /* the v1 layout's removed hook (v1state.c), or NULL */
	dev_t mnt_dev;      /* st_dev of the mount (0: unknown) */
	uint64_t page_size;
	mode_t umask;       /* the daemon's own umask, undone on mkdir */
	char *mountpoint;
	gint running;       /* 1 while od_shadowfs_run's loop runs, 2 once it returned */
	gint exiting;
	pthread_t loop_thread; /* the thread in fuse_session_loop_mt (valid while running is 1) */
	GThread *waker;     /* interrupts that loop until it returns (session.c) */
	gint exiting_done;  /* od_shadowfs_free: the waker stops */
	GMutex wake_lock;   /* running 1 -> 2 vs. the waker's pthread_kill */
	/* fuse_io.c: a stop drains the workers first */
	bool io_installed;
	gint io_stopping;
	gint io_busy;       /* workers holding a request (or about to read one) */
	GMutex io_lock;        /* guards io_readers */
	GPtrArray *io_readers; /* fuse_io.c's io_reader of each worker reading a cloned descriptor */
	/* open files and directories the kernel has not released yet; whatever is
	 * left when the loop ends is closed by od_shadowfs_free() */
	GMutex handles_lock;
	GHashTable *handles; /* handle -> its close function */
	/* survival across servers (takeover.c, carry.c) */
	struct fs_survival *surv;
	struct fs_carry *carry; /* what the next server inherits; NULL without a state memfd */
	fs_sweeper *sweeper;    /* unused entries dropped (sweep.c) */
	struct fs_inval *inval; /* the kernel's copy dropped on real-tree changes (inval.c) */
	uint64_t next_serial;   /* of file handles (handles.c) */
	uint16_t generation;    /* this server's, in every fh */
	bool took_over;      /* serving a connection a previous server initialised */
	bool inited;         /* FUSE_INIT processed (or replayed) */
	gint keep_mount;     /* stopping for a successor: no unmount */
};

/* ---- open handles (handles.c) ----
 * Any FUSE worker. The table maps the kernel's fh to the open file or directory; an fh
 * of a previous server is opened again from the real tree on first use (revive) and
 * kept under the same fh until its release. */
typedef void (*fs_handle_close_fn)(od_shadowfs *fs, gpointer h);
/* Registers an open; returns the fh to give the kernel (ids.h: this server's
 * generation, the open's access mode, write errno, plainness and a serial). */
uint64_t fs_handle_track(od_shadowfs *fs, gpointer h, fs_handle_close_fn close_fn, int acc,
			 int write_err, bool plain);
/* Registers a revived open h under the fh the kernel has, setting h's own fh field
 * (*h_fh, what close_fn untracks by); returns the handle to use: another worker's
 * if it revived the same fh first, and then h is closed here (close_fn, with *h_fh
 * 0: it was never tracked). The one way dir.c and file.c keep a revived open. */
gpointer fs_handle_adopt(od_shadowfs *fs, uint64_t fh, gpointer h, uint64_t *h_fh,
			 fs_handle_close_fn close_fn);
void fs_handle_untrack(od_shadowfs *fs, uint64_t fh);
/* The handle of fh; NULL if it is not (or no longer) open here. */
gpointer fs_handle_get(od_shadowfs *fs, uint64_t fh);
/* Every handle still open (the loop ended with files open): closed. */
void fs_handles_close_all(od_shadowfs *fs);
/* The handle of an operation's fi->fh, revived from node ino when it is a previous
 * server's (dir: readdir/releasedir); 0 and fi->fh set to the pointer, or errno
 * (ENODEV: the object is gone from the real tree, as kernfs answers). */
int fs_handle_resolve(od_shadowfs *fs, fuse_ino_t ino, struct fuse_file_info *fi, bool dir);

extern const struct fuse_lowlevel_ops fs_ops;
/* fs_ops behind request counters (opstats.c): what the session serves. */
const struct fuse_lowlevel_ops *fs_counted_ops(void);

/* ---- survival across servers (takeover.c) ---- */

typedef struct fs_survival fs_survival;
/* fs_ops with the file-handle guards; the table to give fuse_session_new. */
const struct fuse_lowlevel_ops *fs_survival_ops(void);
/* First server, just mounted: reads the kernel's FUSE_INIT, records it in a new state
 * memfd, serves it. Successor: replays the recorded INIT on the kept connection,
 * re-queues unanswered requests (Linux 6.9+), wakes poll() waiters. Both on the
 * creating thread, before the loop; false with *err set. */
bool fs_survival_fresh(od_shadowfs *fs, GError **err);
bool fs_survival_takeover(od_shadowfs *fs, int state_fd, GError **err);
/* Workers on cloned descriptors (a kernel without FUSE_NOTIFY_RESEND)? */
bool fs_survival_clone_fd(const od_shadowfs *fs);
int fs_survival_state_fd(const od_shadowfs *fs);
void fs_survival_free(od_shadowfs *fs);

/* ---- what a successor inherits (carry.c), in the state memfd at FS_CARRY_OFFSET ----
 * Any thread; each call takes a short process-local lock and never blocks otherwise. */
#define FS_CARRY_OFFSET 16384
#define FS_CARRY_LISTENERS 4096 /* FS_EC_MAX_TOTAL: every listener can be carried */
/* Slots: [0, FS_CARRY_LISTENERS) OOM listeners (the table every server reads), then as
 * many thresholds and pressure levels (a table of their own, appended: a server that knows
 * only OOM listeners never takes one of them for an OOM listener). */
#define FS_CARRY_SLOTS (2 * FS_CARRY_LISTENERS)
typedef struct {
	uint64_t cgroup;     /* kernfs id of its cgroup; 0: a free slot (published last) */
	uint64_t eventfd_id; /* fdinfo's eventfd-id of its eventfd */
	uint64_t starttime;  /* /proc/<tgid>/stat field 22 of its holder */
	int32_t tgid;        /* the process holding the eventfd */
	uint32_t uid;        /* the registering request's */
	/* who registered it, for the bounds (ec_bounds.h); who_known false in a record of
	 * a server that did not keep it (before stop 25): then only uid is known */
	bool who_known;
	uint64_t principal;
	bool root, stranger;
	/* what it listens to: ec_kind (ec_private.h), 0 an OOM listener; a threshold's bytes,
	 * a pressure listener's level and mode (od_vmp_level, od_vmp_mode); whether its
	 * cgroup is the hierarchy's root (v1's usage of the root is counted otherwise) */
	uint32_t kind;
	uint64_t threshold;
	uint32_t level, mode;
	bool cg_root;
} fs_carried_listener;
/* The region of state_fd (grown if it is of an older layout; zeroed if it holds none). */
fs_carry *fs_carry_map(int state_fd, GError **err);
void fs_carry_free(fs_carry *c);
/* The index of a real file name in the carried table (added if new), -1 if full. */
int fs_carry_name_index(fs_carry *c, const char *name);
const char *fs_carry_name(fs_carry *c, unsigned k);
/* Kernel poll handles of files waiting for a notification, until their release. */
void fs_carry_poll_add(fs_carry *c, uint64_t kh);
void fs_carry_poll_del(fs_carry *c, uint64_t kh);
/* Successor: wake every carried handle (wake returns whether the write went out), then
 * forget them; the count woken. */
unsigned fs_carry_poll_wake(fs_carry *c, bool (*wake)(void *ud, uint64_t kh), void *ud);
/* Listener records: a slot (in the table of the record's kind), or -1 when none is free.
 * get: false for a free slot; the kind, level and mode are as stored (the reader checks
 * them: a newer server's kind may be unknown here). */
int fs_carry_listener_put(fs_carry *c, const fs_carried_listener *l);
void fs_carry_listener_holder(fs_carry *c, int slot, int32_t tgid, uint64_t starttime);
void fs_carry_listener_clear(fs_carry *c, int slot);
bool fs_carry_listener_get(fs_carry *c, int slot, fs_carried_listener *out);

/* Rate limit for a warning a caller can provoke in a loop: true at most once per 10 s per
 * (lock, last) pair, the caller's statics. Any thread. */
static inline bool fs_warn_due(GMutex *lock, gint64 *last)
{
	gint64 now = g_get_monotonic_time();
	g_mutex_lock(lock);
	bool due = !*last || now - *last >= 10 * G_USEC_PER_SEC;
	if (due)
		*last = now;
	g_mutex_unlock(lock);
	return due;
}

/* Helpers shared by the op files. */
/* The attributes of the object a descriptor (often O_PATH) holds; 0 or errno. Exactly
 * AT_EMPTY_PATH, which glibc's fstat passes: the kernel then stats the descriptor without a
 * path walk (vfs_fstatat's fast path); an added AT_SYMLINK_NOFOLLOW, meaningless with an
 * empty path, took the full lookup (getname, path_init; perf of the all-files read on
 * 6.12, 2026-12-06: fstatat 10% of the daemon's CPU against the floor's 1.5%). */
static inline int fs_stat_fd(int fd, struct stat *st)
{
	return fstat(fd, st) < 0 ? errno : 0;
}

static inline od_shadowfs *fs_of(fuse_req_t req)
{
	return (od_shadowfs *)fuse_req_userdata(req);
}
void fs_proc_path(char buf[64], int fd);
void fs_ctx_init(fs_synth_ctx *c, od_shadowfs *fs, const fs_node *n, fuse_req_t req);

/* err as a FUSE reply may carry it: never ENOSYS. The kernel takes a server's
 * ENOSYS as "not implemented" and, for the xattr calls, remembers it for the
 * mount's life (fc->no_setxattr, no_getxattr, no_listxattr, no_removexattr:
 * fs/fuse/xattr.c), answering EOPNOTSUPP to every caller without asking us: one
 * caller's call that met ENOSYS would take xattrs from everyone. A system call of
 * ours meets ENOSYS only where a seccomp filter refuses it (Docker's profile so
 * refuses clone3) or the kernel lacks it: EPERM, the errno such filters answer
 * by default. */
static inline int fs_reply_errno(int err)
{
	return err == ENOSYS ? EPERM : err;
}

/* Every error reply of the file system: fs_reply_errno's err. */
static inline void fs_reply_err(fuse_req_t req, int err)
{
	fuse_reply_err(req, fs_reply_errno(err));
}

/* Op entry points split across files. */
void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		 struct fuse_file_info *fi);
void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void fs_op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct fuse_pollhandle *ph);
void fs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		  struct fuse_file_info *fi);
void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void fs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi);
void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		    size_t size, int flags);
void fs_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void fs_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fs_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

/* How long the kernel keeps a name (entry) and its attributes, in seconds: the bound
 * on what a caller can see of the real tree that is no longer true (a removed cgroup,
 * a mode or owner changed there). Changes made through the shadow update the kernel's
 * copy at once (setattr, mkdir, rmdir answer with the new state); changes made in the
 * real tree are invalidated sooner by the watcher's inotify (inval.c). File contents
 * are never kept (direct_io). A name that does not exist is never kept either.
 * Attributes are kept for every object, a file's too (issue 23): each open's LOOKUP
 * (below) refreshes them and default_permissions judges the open by that fresh copy; a
 * kept copy can show a stat a stale owner, mode or size between opens, for this long at
 * most and until the watcher's IN_ATTRIB drops it. Keeping them removes the GETATTR of a
 * `stat` after a lookup, of `cat`'s fstat and of an open's permission check
 * (fuse_permission asks once the attributes have timed out): 2 of the 8 requests each
 * file cost a walk reading every cgroup's memory.current (bench-walk, 7, 2026-12-05). */
#define FS_CACHE_S 1.0
/* od_shadowfs_opts' name_keep_s and name_keep_max (sweep.c) */
#define FS_NAME_KEEP_S 30
#define FS_NAME_KEEP_MAX 4096
#define FS_SWEEP_PERIOD_S 5 /* od_shadowfs_opts.sweep_period_s */
/* A name is kept for directories only: a regular file's name is looked up again at every
 * path walk, because that LOOKUP is what sets its size back. Since 6.5 a splice/sendfile
 * read of a direct_io file goes through the page cache (filemap_splice_read, fs/fuse/file.c
 * fuse_splice_read); our short reply makes the kernel trim i_size to the content's length
 * (fuse_short_read) and nothing but a LOOKUP or GETATTR reply sets it back to FS_REG_SIZE;
 * neither open nor the splice asks. With a file's name kept, busybox cat (sendfile) of
 * memory.low printed "10" of "1048576": the length of the previous content (r-cache on
 * 6.12, 2026-12-05). Every open walks the path, so that LOOKUP comes first. */
static inline double fs_entry_cache_of(double cache_s, mode_t mode)
{
	return S_ISDIR(mode) ? cache_s : 0.0;
}

/* Look name up in dir for uid (whose share the node's descriptors take) and fill e
 * (time-outs FS_CACHE_S). 0 or errno. */
int fs_do_lookup(od_shadowfs *fs, fs_node *dir, const char *name, uid_t uid,
		 struct fuse_entry_param *e);

#endif
