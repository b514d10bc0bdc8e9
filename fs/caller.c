/* caller.c — who the FUSE caller is, and opening a real file as it would.
 *
 * fs_caller_new() is the one reader of the caller: the thread of the request
 * (fuse_req_ctx: its fsuid/fsgid and tid in our pid namespace), read through one
 * O_PATH descriptor of /proc/<tid>. That descriptor pins the task's struct pid:
 * a reused number cannot answer the reads for someone else (they fail, ESRCH).
 * One read of status gives fsuid/fsgid (checked against the request's: a thread
 * that changed identity since is a nobody), groups, CapEff and NSpid; the
 * namespaces are compared with the worker thread's own.
 *
 * fs_caller_open() opens on the calling worker thread while it is in the
 * caller's cgroup namespace (setns(CLONE_NEWCGROUP) swaps current->nsproxy,
 * per thread), with the caller's identity or with the daemon's own. Identity
 * switches are raw system calls: glibc's setgroups and setuid family broadcast
 * to every thread.
 *
 * Where we cannot reproduce the caller exactly we give fewer rights, never
 * more: an unknown or unreadable caller opens nothing for writing (EACCES);
 * capabilities held in a user namespace other than ours are dropped from an
 * identity open (they would count in ours).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs_private.h"

/* The device and inode of <dir>ns/<name> at dirfd (dir "" and dirfd a /proc/<tid>
 * directory, or dir "/proc/<tid>/" and AT_FDCWD); false when unreadable. */
static bool ns_id_at(int dirfd, const char *dir, const char *name, dev_t *dev, ino_t *ino)
{
	char path[64];
	snprintf(path, sizeof path, "%sns/%s", dir, name);
	struct stat st;
	if (fstatat(dirfd, path, &st, 0) < 0)
		return false;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return true;
}

/* The daemon's own namespaces, read once: its workers leave them only for the span of
 * one fs_caller_open (cgns_enter/cgns_leave on that thread, never meanwhile here), and the
 * daemon never unshares. Reading them per caller was 3 more procfs lookups per open for
 * writing (x-write-strace, 2026-12-06). Kept only once all three were read: a failure
 * (ENOMEM, EMFILE under pressure) kept for good would have made every caller a stranger
 * to our namespaces (no capability, every write judged in another cgroup namespace). */
enum { NS_PID, NS_USER, NS_CGROUP, NS_COUNT };
static const char *const ns_names[NS_COUNT] = { "pid", "user", "cgroup" };
typedef struct {
	bool ok;
	dev_t dev;
	ino_t ino;
} ns_id;
static ns_id own[NS_COUNT];
static gint own_ready; /* own[] is complete */
static GMutex own_lock;

/* The daemon's namespace i into *out; false when it cannot be read now. */
static bool own_ns(int i, ns_id *out)
{
	if (g_atomic_int_get(&own_ready)) {
		*out = own[i];
		return true;
	}
	ns_id fresh[NS_COUNT] = { 0 };
	bool all = true;
	int self = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (int k = 0; k < NS_COUNT; k++) {
		fresh[k].ok = self >= 0 && ns_id_at(self, "", ns_names[k], &fresh[k].dev, &fresh[k].ino);
		all = all && fresh[k].ok;
	}
	if (self >= 0)
		close(self);
	if (all) {
		g_mutex_lock(&own_lock);
		if (!g_atomic_int_get(&own_ready)) {
			memcpy(own, fresh, sizeof own);
			g_atomic_int_set(&own_ready, 1);
		}
		g_mutex_unlock(&own_lock);
	}
	*out = fresh[i];
	return fresh[i].ok;
}

/* The caller's namespace i at dirfd and dir (ns_id_at): its inode (0 when unreadable),
 * and whether it is the daemon's own (false when either is unknown). */
static ino_t caller_ns_at(int dirfd, const char *dir, int i, bool *ours)
{
	dev_t dev;
	ino_t ino;
	ns_id mine;
	if (!ns_id_at(dirfd, dir, ns_names[i], &dev, &ino)) {
		*ours = false;
		return 0;
	}
	*ours = own_ns(i, &mine) && mine.dev == dev && mine.ino == ino;
	return ino;
}

static ino_t caller_ns(int procfd, int i, bool *ours)
{
	return caller_ns_at(procfd, "", i, ours);
}

/* Is tid's cgroup namespace ours? Read by path, nothing kept open: for an owner's
 * open (status not needed), which nothing of the caller but that namespace judges,
 * the common case (a tool of the host) costs one fstatat instead of an open of
 * /proc/<tid>, an fstatat and a close (x-write-strace). No pin of the task is needed:
 * a thread whose request the daemon has read waits for the answer even through a fatal
 * signal (request_wait_answer's last wait_event, fs/fuse/dev.c), so the tid still names
 * it. */
static bool cgns_ours_at_tid(pid_t tid)
{
	char dir[32];
	snprintf(dir, sizeof dir, "/proc/%d/", (int)tid);
	bool ours;
	caller_ns_at(AT_FDCWD, dir, NS_CGROUP, &ours);
	return ours;
}

/* Where the value of "<key>" starts in a /proc status text; NULL without one. */
static const char *status_field(const char *status, const char *key)
{
	size_t klen = strlen(key);
	for (const char *p = status; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, klen) == 0)
			return p + klen;
	return NULL;
}

/* The next number of a status value at *p, moving *p past it; false at its end. */
static bool next_number(const char **p, guint base, guint64 *v)
{
	while (**p == ' ' || **p == '\t')
		(*p)++;
	if (!g_ascii_isxdigit(**p))
		return false; /* strtoull would skip the newline into the next field */
	char *end;
	*v = g_ascii_strtoull(*p, &end, base);
	if (end == *p)
		return false;
	*p = end;
	return true;
}

bool fs_status_number(const char *status, const char *key, guint base, guint64 *v)
{
	const char *p = status_field(status, key);
	return p && next_number(&p, base, v);
}

int fs_status_nspid(const char *status, pid_t *out, int max)
{
	const char *p = status_field(status, "NSpid:");
	int n = 0;
	guint64 v;
	while (p && n < max && next_number(&p, 10, &v))
		out[n++] = (pid_t)v;
	return n;
}

/* The fourth id of "Uid:"/"Gid:" (real, effective, saved, file system). */
static bool status_fsid(const char *status, const char *key, guint64 *id)
{
	const char *p = status_field(status, key);
	for (int i = 0; i < 4; i++)
		if (!p || !next_number(&p, 10, id))
			return false;
	return true;
}

/* The content of name at dirfd. one_record: a seq_file of one record (status,
 * proc_single_show), which the first read hands out whole when it fits: a short read
 * is then its end, without the read of 0 (a file of many records, uid_map, can end a
 * read short before its end). */
static char *read_at(int dirfd, const char *name, bool one_record)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	GString *s = g_string_sized_new(4096);
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0) {
		g_string_append_len(s, buf, n);
		if (one_record && (size_t)n < sizeof buf)
			break;
	}
	close(fd);
	if (n < 0 || s->len == 0) {
		g_string_free(s, TRUE);
		return NULL;
	}
	return g_string_free(s, FALSE);
}

static void make_nobody(fs_caller *c)
{
	c->known = false;
	g_array_set_size(c->groups, 0);
	c->cap_eff = 0;
	c->init_userns = false;
	if (c->cgns >= 0)
		close(c->cgns);
	c->cgns = -1;
}

static fs_caller *caller_new(fuse_req_t req, bool status_needed)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	fs_caller *c = g_new0(fs_caller, 1);
	c->groups = g_array_new(FALSE, FALSE, sizeof(gid_t));
	c->tid = ctx->pid;
	c->procfd = -1;
	c->cgns = -1;
	c->fsuid = ctx->uid;
	c->fsgid = ctx->gid;
	if (ctx->pid <= 0)
		return c; /* a thread in a pid namespace the mount cannot see: nobody */
	if (!status_needed && cgns_ours_at_tid(ctx->pid)) {
		c->known = true; /* the request's own fsuid and fsgid, which the kernel gave */
		return c;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/%d", (int)ctx->pid);
	c->procfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (c->procfd < 0)
		return c;
	g_autofree char *status = status_needed ? read_at(c->procfd, "status", true) : NULL;
	if (status_needed && !status)
		return c;
	/* the pid namespace says only what the caller can see: kept for a nobody too.
	 * An owner's open needs neither (two fstatat fewer a limit write: x-write-strace) */
	if (status_needed) {
		c->pidns = caller_ns(c->procfd, NS_PID, &c->pidns_ours);
		c->userns = caller_ns(c->procfd, NS_USER, &c->init_userns);
	}
	if (status) {
		pid_t chain[FS_MAX_NS_DEPTH];
		c->pidns_depth = fs_status_nspid(status, chain, FS_MAX_NS_DEPTH);
		guint64 v;
		if (fs_status_number(status, "Tgid:", 10, &v))
			c->tgid = (pid_t)v;
		bool uid_ok = status_fsid(status, "Uid:", &v) && v == ctx->uid;
		bool gid_ok = status_fsid(status, "Gid:", &v) && v == ctx->gid;
		const char *p = status_field(status, "Groups:");
		while (p && next_number(&p, 10, &v)) {
			gid_t g = (gid_t)v;
			g_array_append_val(c->groups, g);
		}
		if (fs_status_number(status, "CapEff:", 16, &v))
			c->cap_eff = v;
		c->known = uid_ok && gid_ok;
	} else {
		c->known = true; /* the request's own fsuid and fsgid, which the kernel gave */
	}
	bool cgns_ours = false;
	if (c->known)
		caller_ns(c->procfd, NS_CGROUP, &cgns_ours);
	if (c->known && !cgns_ours) {
		c->cgns = openat(c->procfd, "ns/cgroup", O_RDONLY | O_CLOEXEC);
		c->known = c->cgns >= 0; /* its namespace unknown: where would it write? */
	}
	if (!c->known)
		make_nobody(c);
	return c;
}

fs_caller *fs_caller_new(fuse_req_t req)
{
	return caller_new(req, true);
}

fs_caller *fs_caller_new_owner(fuse_req_t req)
{
	return caller_new(req, false);
}

void fs_caller_free(fs_caller *c)
{
	if (!c)
		return;
	g_array_unref(c->groups);
	if (c->cgns >= 0)
		close(c->cgns);
	if (c->procfd >= 0)
		close(c->procfd);
	g_free(c);
}

char *fs_caller_read(const fs_caller *c, const char *name)
{
	return c->procfd >= 0 ? read_at(c->procfd, name, false) : NULL;
}

bool fs_caller_in_group(const fs_caller *c, pid_t tgid)
{
	g_autofree char *status = fs_caller_read(c, "status"); /* ESRCH once the task is gone */
	guint64 v;
	return tgid > 0 && status && fs_status_number(status, "Tgid:", 10, &v) && (pid_t)v == tgid;
}

/* ---- the cgroup namespace ---- */

/* Puts this thread into c's cgroup namespace: 0 and *back (our namespace to
 * return to; -1 when c's is ours and nothing was entered), or errno. */
static int cgns_enter(const fs_caller *c, int *back)
{
	*back = -1;
	if (c->cgns < 0)
		return 0;
	*back = open("/proc/thread-self/ns/cgroup", O_RDONLY | O_CLOEXEC);
	if (*back < 0)
		return errno;
	if (setns(c->cgns, CLONE_NEWCGROUP) < 0) {
		int err = errno;
		g_message("cannot enter the cgroup namespace of pid %d: %s", (int)c->tid, g_strerror(err));
		close(*back);
		*back = -1;
		return err;
	}
	return 0;
}

static void cgns_leave(int back)
{
	if (back < 0)
		return;
	/* never serve on in a caller's namespace */
	if (setns(back, CLONE_NEWCGROUP) < 0)
		g_error("cannot return to the daemon's cgroup namespace: %s", g_strerror(errno));
	close(back);
}

/* ---- the caller's identity ---- */

static int capget_self(struct __user_cap_data_struct caps[2])
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	return (int)syscall(SYS_capget, &hdr, caps);
}

static int capset_self(const struct __user_cap_data_struct caps[2])
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	return (int)syscall(SYS_capset, &hdr, caps);
}

/* open(2) with c's fsuid, fsgid, groups and effective capabilities (those in
 * our user namespace), then the daemon's own again. fd or -errno. */
static int open_with_identity(const fs_caller *c, const char *path, int flags)
{
	gid_t saved_groups[256]; /* the daemon's own: root has a handful */
	int nsaved = getgroups(G_N_ELEMENTS(saved_groups), saved_groups);
	struct __user_cap_data_struct saved[2], as[2];
	if (nsaved < 0 || capget_self(saved) < 0)
		return -errno;
	uid_t saved_fsuid = (uid_t)setfsuid((uid_t)-1);
	gid_t saved_fsgid = (gid_t)setfsgid((gid_t)-1);
	uint64_t caps = c->init_userns ? c->cap_eff : 0;

	int fd = -1, err = EPERM;
	if (syscall(SYS_setgroups, (size_t)c->groups->len, (gid_t *)c->groups->data) < 0) {
		err = errno;
		goto restore;
	}
	setfsgid(c->fsgid);
	setfsuid(c->fsuid);
	/* setfsuid cannot report failure; read it back */
	if ((uid_t)setfsuid((uid_t)-1) != c->fsuid || (gid_t)setfsgid((gid_t)-1) != c->fsgid)
		goto restore;
	/* The caller's effective set, within what we hold (setfsuid cleared the
	 * file-system capabilities when fsuid left 0; capset sets them exactly). */
	memcpy(as, saved, sizeof as);
	as[0].effective = (uint32_t)caps & saved[0].permitted;
	as[1].effective = (uint32_t)(caps >> 32) & saved[1].permitted;
	if (capset_self(as) < 0) {
		err = errno;
		goto restore;
	}
	fd = open(path, flags);
	err = errno;
restore:
	/* capabilities first: the way back needs CAP_SETUID and CAP_SETGID */
	if (capset_self(saved) < 0)
		g_error("cannot restore the daemon's capabilities after an open as uid %u: %s",
			(unsigned)c->fsuid, g_strerror(errno));
	setfsuid(saved_fsuid);
	setfsgid(saved_fsgid);
	struct __user_cap_data_struct now[2];
	/* back at fsuid 0 the kernel re-raised the file-system capabilities: set all exactly */
	if (syscall(SYS_setgroups, (size_t)nsaved, saved_groups) < 0 ||
	    (uid_t)setfsuid((uid_t)-1) != saved_fsuid || capset_self(saved) < 0 ||
	    capget_self(now) < 0 || memcmp(now, saved, sizeof now) != 0)
		g_error("cannot restore the daemon's identity after an open as uid %u: %s",
			(unsigned)c->fsuid, g_strerror(errno)); /* never serve on with a caller's rights */
	return fd < 0 ? -err : fd;
}

int fs_caller_open(const fs_caller *c, const char *path, int flags, fs_open_as as)
{
	if (!c->known)
		return -EACCES; /* a caller we cannot see gets no descriptor that could act for it */
	int back;
	/* the namespace first: setns needs CAP_SYS_ADMIN, which the caller may lack */
	int err = cgns_enter(c, &back);
	if (err)
		return -err;
	int fd;
	if (as == FS_OPEN_AS_CALLER) {
		fd = open_with_identity(c, path, flags);
	} else {
		fd = open(path, flags);
		if (fd < 0)
			fd = -errno;
	}
	cgns_leave(back);
	return fd;
}
