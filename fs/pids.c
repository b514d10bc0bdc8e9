/* pids.c — writes to cgroup.procs and cgroup.threads on behalf of a caller.
 *
 * The daemon, not the caller, performs the kernel write, so three things the
 * kernel would have taken from the caller must be carried over:
 *  - "0" means the writer itself: the calling thread, not a daemon worker;
 *  - a pid is read in the writer's pid namespace: a caller in a container
 *    names its processes in its own namespace, so the pid is translated;
 *  - the delegation check (write access to the common ancestor's cgroup.procs)
 *    uses the credentials the file was opened with (kernel >= 5.16), so the
 *    backing file is opened with the caller's fsuid, fsgid and groups.
 * Anything we cannot parse goes to the kernel unchanged, for its own errno.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/nsfs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs_private.h"

#define FS_MAX_NS_DEPTH 33 /* MAX_PID_NS_LEVEL + 1 */

/* NSpid of /proc/<path>/status: pids from our namespace inwards. Returns the count. */
static int read_nspid(const char *status_path, pid_t *out, int max)
{
	FILE *f = fopen(status_path, "re");
	if (!f)
		return 0;
	char line[512];
	int n = 0;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "NSpid:", 6) != 0)
			continue;
		char *p = line + 6, *end;
		while (n < max) {
			long v = strtol(p, &end, 10);
			if (end == p)
				break;
			out[n++] = (pid_t)v;
			p = end;
		}
		break;
	}
	fclose(f);
	return n;
}

static bool same_ns_at(const char *ns_path, int up, ino_t want)
{
	int fd = open(ns_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	for (int i = 0; i < up; i++) {
		int p = ioctl(fd, NS_GET_PARENT);
		close(fd);
		if (p < 0)
			return false;
		fd = p;
	}
	struct stat st;
	bool ok = fstat(fd, &st) == 0 && st.st_ino == want;
	close(fd);
	return ok;
}

/* The pid in our namespace of task `pid` as seen from the caller's namespace
 * (ns inode caller_ns at depth `depth`, 1 = ours); 0 when there is none. */
static pid_t translate(pid_t pid, ino_t caller_ns, int depth, bool threads)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	pid_t found = 0;
	struct dirent *de;
	while (!found && (de = readdir(d))) {
		char *end;
		long p = strtol(de->d_name, &end, 10);
		if (*end || p <= 0)
			continue;
		char path[96];
		GPtrArray *tasks = g_ptr_array_new_with_free_func(g_free);
		if (threads) {
			snprintf(path, sizeof path, "/proc/%ld/task", p);
			DIR *td = opendir(path);
			struct dirent *te;
			while (td && (te = readdir(td)))
				if (te->d_name[0] != '.')
					g_ptr_array_add(tasks, g_strdup_printf("/proc/%ld/task/%s", p, te->d_name));
			if (td)
				closedir(td);
		} else {
			g_ptr_array_add(tasks, g_strdup_printf("/proc/%ld", p));
		}
		for (guint i = 0; i < tasks->len && !found; i++) {
			const char *t = g_ptr_array_index(tasks, i);
			pid_t ns[FS_MAX_NS_DEPTH];
			snprintf(path, sizeof path, "%s/status", t);
			int n = read_nspid(path, ns, FS_MAX_NS_DEPTH);
			if (n < depth || ns[depth - 1] != pid)
				continue;
			/* the same number in a sibling namespace is someone else */
			snprintf(path, sizeof path, "%s/ns/pid", t);
			if (same_ns_at(path, n - depth, caller_ns))
				found = ns[0];
		}
		g_ptr_array_unref(tasks);
	}
	closedir(d);
	return found;
}

static ino_t ns_ino(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_ino : 0;
}

/* kstrtoint(strstrip(buf), 0): false when the kernel would refuse it anyway. */
static bool parse_pid(const char *buf, size_t len, long *out)
{
	char tmp[64];
	while (len && g_ascii_isspace(buf[len - 1]))
		len--;
	while (len && g_ascii_isspace(*buf)) {
		buf++;
		len--;
	}
	if (len == 0 || len >= sizeof tmp || memchr(buf, 0, len))
		return false;
	memcpy(tmp, buf, len);
	tmp[len] = 0;
	char *end;
	errno = 0;
	long v = strtol(tmp, &end, 0);
	if (errno || *end || v < INT_MIN || v > INT_MAX || tmp[0] == '-' || tmp[0] == ' ')
		return false;
	*out = v;
	return true;
}

static int pids_write(const fs_synth_ctx *c, const char *buf, size_t len, bool threads)
{
	long pid;
	if (c->fd < 0 || !c->req || !parse_pid(buf, len, &pid))
		return FS_SYN_PASS;
	pid_t tid = fuse_req_ctx(c->req)->pid; /* the calling thread, in our namespace */
	pid_t real;
	if (pid == 0) {
		if (tid <= 0)
			return FS_SYN_PASS;
		real = tid; /* for cgroup.procs the kernel moves the thread's whole process */
	} else {
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)tid);
		ino_t theirs = ns_ino(path);
		if (tid <= 0 || theirs == 0 || theirs == ns_ino("/proc/self/ns/pid"))
			return FS_SYN_PASS; /* same namespace: the bytes mean what they say */
		snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
		pid_t chain[FS_MAX_NS_DEPTH];
		int depth = read_nspid(path, chain, FS_MAX_NS_DEPTH);
		if (depth <= 0)
			return ESRCH;
		real = translate((pid_t)pid, theirs, depth, threads);
		if (real <= 0)
			return ESRCH; /* what find_task_by_vpid() gives the caller */
	}
	char out[24];
	int n = snprintf(out, sizeof out, "%d\n", (int)real);
	ssize_t w = pwrite(c->fd, out, (size_t)n, 0);
	if (w < 0)
		return errno;
	return 0;
}

/* Our namespace and the caller's: 0 when they are the same (or unknown: then
 * the kernel's own answer is the best there is). */
static ino_t foreign_ns(fuse_req_t req, int *depth)
{
	pid_t tid = fuse_req_ctx(req)->pid;
	if (tid <= 0)
		return 0;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)tid);
	ino_t theirs = ns_ino(path);
	if (theirs == 0 || theirs == ns_ino("/proc/self/ns/pid"))
		return 0;
	pid_t chain[FS_MAX_NS_DEPTH];
	snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
	*depth = read_nspid(path, chain, FS_MAX_NS_DEPTH);
	return *depth > 0 ? theirs : 0;
}

/* The pid of global pid g in the caller's namespace; 0 when the caller cannot
 * see it, which is what the kernel prints for such a task (task_pid_vnr). */
static pid_t pid_for_caller(pid_t g, ino_t theirs, int depth)
{
	char path[64];
	pid_t chain[FS_MAX_NS_DEPTH];
	snprintf(path, sizeof path, "/proc/%d/status", (int)g);
	int n = read_nspid(path, chain, FS_MAX_NS_DEPTH);
	if (n < depth)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)g);
	return same_ns_at(path, n - depth, theirs) ? chain[depth - 1] : 0;
}

/* A reader in another pid namespace sees its own numbers, as it would on the
 * real file (the kernel formats pids for the reading task, which is us). */
int fs_procs_read(const fs_synth_ctx *c, GString *out)
{
	int depth = 0;
	ino_t theirs = c->req && c->fd >= 0 ? foreign_ns(c->req, &depth) : 0;
	if (!theirs)
		return FS_SYN_PASS;
	GString *raw = g_string_sized_new(4096);
	char buf[8192];
	off_t off = 0;
	for (;;) {
		ssize_t n = pread(c->fd, buf, sizeof buf, off);
		if (n < 0) {
			int err = errno;
			g_string_free(raw, TRUE);
			return err;
		}
		if (n == 0)
			break;
		g_string_append_len(raw, buf, n);
		off += n;
	}
	char *save = NULL;
	for (char *line = strtok_r(raw->str, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		long g = strtol(line, NULL, 10);
		g_string_append_printf(out, "%d\n", g > 0 ? (int)pid_for_caller((pid_t)g, theirs, depth) : 0);
	}
	g_string_free(raw, TRUE);
	return 0;
}

int fs_procs_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	return pids_write(c, buf, len, false);
}

int fs_threads_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	return pids_write(c, buf, len, true);
}

/* Per-thread credential switch: raw system calls, because glibc's wrappers
 * change every thread of the process. The kernel records these credentials
 * with the open file (f_cred) and checks later writes against them. */
int fs_open_as_caller(fuse_req_t req, const char *path, int flags)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	if (ctx->uid == 0)
		return open(path, flags);

	gid_t groups[64];
	int ng = fuse_req_getgroups(req, G_N_ELEMENTS(groups), groups);
	if (ng < 0)
		ng = 0; /* unknown: fewer rights, never more */
	if (ng > (int)G_N_ELEMENTS(groups))
		ng = G_N_ELEMENTS(groups);
	gid_t saved_groups[64];
	int nsaved = getgroups(G_N_ELEMENTS(saved_groups), saved_groups);
	if (nsaved < 0)
		return -errno;
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct caps[2], none[2];
	if (syscall(SYS_capget, &hdr, caps) < 0)
		return -errno;

	uid_t saved_fsuid = (uid_t)setfsuid((uid_t)-1);
	gid_t saved_fsgid = (gid_t)setfsgid((gid_t)-1);
	int fd = -1, err = EPERM;
	if (syscall(SYS_setgroups, (size_t)ng, groups) < 0) {
		err = errno;
		goto restore;
	}
	setfsgid(ctx->gid);
	setfsuid(ctx->uid);
	/* setfsuid cannot report failure; read it back */
	if ((uid_t)setfsuid((uid_t)-1) != ctx->uid || (gid_t)setfsgid((gid_t)-1) != ctx->gid)
		goto restore;
	/* no capability either: e.g. CAP_SYS_RESOURCE decides what a PSI trigger may be */
	memcpy(none, caps, sizeof none);
	none[0].effective = none[1].effective = 0;
	if (syscall(SYS_capset, &hdr, none) < 0) {
		err = errno;
		goto restore;
	}
	fd = open(path, flags);
	err = errno;
restore:
	/* capabilities first: changing fsuid back needs CAP_SETUID */
	if (syscall(SYS_capset, &hdr, caps) < 0)
		g_error("cannot restore the daemon's capabilities after an open as uid %u: %s",
			(unsigned)ctx->uid, g_strerror(errno));
	setfsuid(saved_fsuid);
	setfsgid(saved_fsgid);
	if (syscall(SYS_setgroups, (size_t)nsaved, saved_groups) < 0 ||
	    (uid_t)setfsuid((uid_t)-1) != saved_fsuid)
		g_error("cannot restore the daemon's identity after an open as uid %u: %s",
			(unsigned)ctx->uid, g_strerror(errno)); /* never serve on with a caller's rights */
	return fd < 0 ? -err : fd;
}
