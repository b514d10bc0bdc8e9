/* caller.c — open a real file as the FUSE caller would have opened it.
 *
 * The kernel judges a write to cgroup.procs/cgroup.threads by the open file,
 * not by the writer: since 5.16 (CVE-2021-4197, cgroup_file_open storing
 * ctx->ns, __cgroup_procs_write overriding creds with of->file->f_cred) the
 * delegation check uses the opener's credentials and the namespace boundary
 * (nsdelegate) uses the opener's cgroup namespace. PSI triggers are judged by
 * the opener's CAP_SYS_RESOURCE (cgroup_pressure_write, 6.5+). So the daemon
 * opens the real file on the FUSE worker thread while that thread carries the
 * caller's fsuid, fsgid, supplementary groups, effective capabilities and
 * cgroup namespace: the kernel then records exactly the caller in f_cred and
 * ctx->ns, and every later write through that descriptor is checked by the
 * kernel itself, whoever writes.
 *
 * Every switch is a raw system call: glibc's setgroups (and setuid family)
 * broadcast to all threads, and credentials and the cgroup namespace
 * (setns(CLONE_NEWCGROUP) swaps current->nsproxy) are per thread.
 *
 * Where we cannot reproduce the caller exactly we give fewer rights, never
 * more: an unknown caller (pid 0: a thread in a pid namespace the mount
 * cannot see) cannot open for writing at all; capabilities held in a user
 * namespace other than ours are dropped (they would count in ours).
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

typedef struct {
	uid_t uid;
	gid_t gid;
	GArray *groups;   /* gid_t */
	uint64_t cap_eff; /* in our user namespace; 0 when the caller is in another */
	int cgns;         /* the caller's cgroup namespace, -1 when it is ours */
} caller_id;

static bool same_ns(int dirfd, const char *name)
{
	struct stat a, b;
	char self[64];
	snprintf(self, sizeof self, "/proc/thread-self/ns/%s", name);
	char theirs[32];
	snprintf(theirs, sizeof theirs, "ns/%s", name);
	return fstatat(dirfd, theirs, &a, 0) == 0 && stat(self, &b) == 0 && a.st_ino == b.st_ino &&
	       a.st_dev == b.st_dev;
}

/* Fills id from /proc/<tid> of the caller; 0 or errno (ESRCH: gone or unknown). */
static int caller_read(const struct fuse_ctx *ctx, caller_id *id)
{
	id->uid = ctx->uid;
	id->gid = ctx->gid;
	id->groups = g_array_new(FALSE, FALSE, sizeof(gid_t));
	id->cap_eff = 0;
	id->cgns = -1;
	if (ctx->pid <= 0)
		return ESRCH;
	/* One descriptor pins the caller's struct pid: a reused number cannot
	 * answer the reads below for someone else (they fail with ESRCH). */
	char path[64];
	snprintf(path, sizeof path, "/proc/%d", (int)ctx->pid);
	int dirfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return ESRCH;
	int err = 0;
	g_autoptr(GString) status = g_string_new(NULL);
	int sfd = openat(dirfd, "status", O_RDONLY | O_CLOEXEC);
	if (sfd >= 0) {
		char buf[4096];
		ssize_t n;
		while ((n = read(sfd, buf, sizeof buf)) > 0)
			g_string_append_len(status, buf, n);
		close(sfd);
	}
	if (status->len == 0) {
		err = ESRCH;
		goto out;
	}
	const char *g = strstr(status->str, "\nGroups:");
	if (g) {
		const char *p = g + 8;
		char *end;
		for (;;) {
			while (*p == ' ' || *p == '\t')
				p++;
			guint64 v = g_ascii_strtoull(p, &end, 10);
			if (end == p)
				break;
			gid_t gid = (gid_t)v;
			g_array_append_val(id->groups, gid);
			p = end;
		}
	}
	const char *c = strstr(status->str, "\nCapEff:");
	uint64_t caps = c ? g_ascii_strtoull(c + 8, NULL, 16) : 0;
	if (same_ns(dirfd, "user"))
		id->cap_eff = caps;
	if (!same_ns(dirfd, "cgroup")) {
		id->cgns = openat(dirfd, "ns/cgroup", O_RDONLY | O_CLOEXEC);
		if (id->cgns < 0)
			err = errno == ENOENT ? ESRCH : errno;
	}
out:
	close(dirfd);
	return err;
}

static void caller_clear(caller_id *id)
{
	g_array_unref(id->groups);
	if (id->cgns >= 0)
		close(id->cgns);
}

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

int fs_open_as_caller(fuse_req_t req, const char *path, int flags)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	caller_id id;
	int err = caller_read(ctx, &id);
	if (err) {
		caller_clear(&id);
		/* a caller we cannot see gets no descriptor that could act for it */
		return -(err == ESRCH ? EACCES : err);
	}

	gid_t saved_groups[256]; /* the daemon's own: root has a handful */
	int nsaved = getgroups(G_N_ELEMENTS(saved_groups), saved_groups);
	struct __user_cap_data_struct saved[2], as[2];
	int self_cgns = id.cgns >= 0 ? open("/proc/thread-self/ns/cgroup", O_RDONLY | O_CLOEXEC) : -1;
	if (nsaved < 0 || capget_self(saved) < 0 || (id.cgns >= 0 && self_cgns < 0)) {
		err = errno;
		caller_clear(&id);
		if (self_cgns >= 0)
			close(self_cgns);
		return -err;
	}
	uid_t saved_fsuid = (uid_t)setfsuid((uid_t)-1);
	gid_t saved_fsgid = (gid_t)setfsgid((gid_t)-1);

	int fd = -1;
	bool entered = false;
	err = EPERM;
	/* the namespace first: setns needs CAP_SYS_ADMIN, which the caller may lack */
	if (id.cgns >= 0) {
		if (syscall(SYS_setns, id.cgns, CLONE_NEWCGROUP) < 0) {
			err = errno;
			g_message("cannot enter the cgroup namespace of pid %d: %s", (int)ctx->pid,
				  g_strerror(errno));
			goto restore;
		}
		entered = true;
	}
	if (syscall(SYS_setgroups, (size_t)id.groups->len, (gid_t *)id.groups->data) < 0) {
		err = errno;
		goto restore;
	}
	setfsgid(id.gid);
	setfsuid(id.uid);
	/* setfsuid cannot report failure; read it back */
	if ((uid_t)setfsuid((uid_t)-1) != id.uid || (gid_t)setfsgid((gid_t)-1) != id.gid)
		goto restore;
	/* The caller's effective set, within what we hold (setfsuid cleared the
	 * file-system capabilities when fsuid left 0; capset sets them exactly). */
	memcpy(as, saved, sizeof as);
	as[0].effective = (uint32_t)id.cap_eff & saved[0].permitted;
	as[1].effective = (uint32_t)(id.cap_eff >> 32) & saved[1].permitted;
	if (capset_self(as) < 0) {
		err = errno;
		goto restore;
	}
	fd = open(path, flags);
	err = errno;
restore:
	/* capabilities first: the way back needs CAP_SYS_ADMIN and CAP_SETUID */
	if (capset_self(saved) < 0)
		g_error("cannot restore the daemon's capabilities after an open as uid %u: %s",
			(unsigned)id.uid, g_strerror(errno));
	if (entered && syscall(SYS_setns, self_cgns, CLONE_NEWCGROUP) < 0)
		g_error("cannot return to the daemon's cgroup namespace: %s", g_strerror(errno));
	setfsuid(saved_fsuid);
	setfsgid(saved_fsgid);
	struct __user_cap_data_struct now[2];
	/* back at fsuid 0 the kernel re-raised the file-system capabilities: set all exactly */
	if (syscall(SYS_setgroups, (size_t)nsaved, saved_groups) < 0 ||
	    (uid_t)setfsuid((uid_t)-1) != saved_fsuid || capset_self(saved) < 0 ||
	    capget_self(now) < 0 || memcmp(now, saved, sizeof now) != 0)
		g_error("cannot restore the daemon's identity after an open as uid %u: %s",
			(unsigned)id.uid, g_strerror(errno)); /* never serve on with a caller's rights */
	if (self_cgns >= 0)
		close(self_cgns);
	caller_clear(&id);
	return fd < 0 ? -err : fd;
}
