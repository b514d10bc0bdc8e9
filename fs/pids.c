/* pids.c — writes to cgroup.procs and cgroup.threads on behalf of a caller.
 *
 * The backing file was opened as the opener (caller.c), so the kernel itself
 * checks delegation, the opener's cgroup-namespace boundary and threaded
 * subtrees at each write, with its own errno. What the kernel would take from
 * the *writer* (current) must be carried over here, because the daemon writes:
 *  - "0" means the writer itself: its calling thread, not a daemon worker;
 *  - a pid is read in the writer's pid namespace: a caller in a container
 *    names its processes in its own namespace, so the pid is translated, and
 *    a pid it cannot see moves nothing (ESRCH, as find_task_by_vpid gives);
 *  - an unknown writer (FUSE pid 0) moves nothing (ESRCH).
 * The caller's bytes never reach the kernel: they are parsed here exactly as
 * cgroup_procs_write_start parses them (kstrtoint(strstrip(buf), 0), EINVAL)
 * and the kernel gets our own decimal number, read in our namespace.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/nsfs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_private.h"
#include "oomd/kernel_io.h"

/* NSpid of /proc/<path>/status of another task: pids from our namespace
 * inwards. Returns the count. */
static int read_nspid(const char *status_path, pid_t *out, int max)
{
	g_autofree char *status = NULL;
	if (!g_file_get_contents(status_path, &status, NULL, NULL))
		return 0;
	return fs_status_nspid(status, out, max);
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
	/* Tasks of our own pid namespace, the host's processes (issue 21 measured
	 * 3.2 s a walk under TCG at 1,078 of them), are never visible from the
	 * caller's, which lies below ours: a stat of their ns/pid rules each out,
	 * and only tasks in other namespaces have their status read. */
	struct stat self;
	ino_t ours = stat("/proc/thread-self/ns/pid", &self) == 0 ? self.st_ino : 0;
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
		struct stat ns;
		snprintf(path, sizeof path, "/proc/%ld/ns/pid", p);
		if (ours && stat(path, &ns) == 0 && ns.st_ino == ours)
			continue; /* threads share their process's pid namespace */
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

/* The kernel's isspace (lib/ctype.c): ASCII white space and Latin-1 NBSP. */
static bool k_isspace(unsigned char ch)
{
	return (ch >= 9 && ch <= 13) || ch == ' ' || ch == 0xa0;
}

int fs_pid_parse(const char *buf, size_t len, int *pid)
{
	/* kernfs hands the handler a NUL-terminated copy: a NUL ends the string */
	len = strnlen(buf, len);
	while (len && k_isspace((unsigned char)buf[len - 1]))
		len--;
	while (len && k_isspace((unsigned char)*buf)) {
		buf++;
		len--;
	}
	/* kstrtoint -> kstrtoll: '-' then an unsigned number; kstrtoull takes one '+' */
	bool neg = false;
	if (len && *buf == '-') {
		neg = true;
		buf++;
		len--;
	} else if (len && *buf == '+') {
		buf++;
		len--;
	}
	/* strtoull would take white space and a sign of its own: the kernel takes neither */
	if (len == 0 || !g_ascii_isdigit(*buf))
		return EINVAL;
	g_autofree char *num = g_strndup(buf, len);
	char *end;
	errno = 0;
	unsigned long long v = strtoull(num, &end, 0);
	if (errno || *end)
		return EINVAL;
	/* cgroup_procs_write_start: kstrtoint fails or pid < 0 -> EINVAL; "-0" is 0 */
	if (neg ? v != 0 : v > INT_MAX)
		return EINVAL;
	*pid = (int)v;
	return 0;
}

/* The writer's pid is the FUSE request's: its calling thread, in the pid
 * namespace of the mount (ours). 0: a thread we cannot see. */
int fs_pid_resolve(fuse_req_t req, const char *buf, size_t len, bool threads, pid_t *real)
{
	int pid;
	int err = fs_pid_parse(buf, len, &pid);
	if (err)
		return err;
	if (!req)
		return ESRCH;
	g_autoptr(fs_caller) who = fs_caller_new(req);
	/* An unknown writer has no "itself" and no namespace to read a pid in:
	 * nothing it writes may reach the kernel, least of all "0" (which the
	 * kernel would read as the daemon's own thread). */
	if (who->tid <= 0 || who->pidns == 0 || who->pidns_depth <= 0)
		return ESRCH; /* unknown, or gone */
	if (pid == 0) {
		*real = who->tid; /* for cgroup.procs the kernel moves the thread's whole process */
	} else if (who->pidns_ours) {
		*real = pid; /* same namespace: the number means what it says */
	} else {
		*real = translate((pid_t)pid, who->pidns, who->pidns_depth, threads);
		if (*real <= 0)
			return ESRCH; /* what find_task_by_vpid() gives the caller */
	}
	return 0;
}

int fs_pid_write(int fd, pid_t real)
{
	/* Our own bytes, never the caller's: the kernel reads them in our namespace. */
	char out[24];
	snprintf(out, sizeof out, "%d\n", (int)real);
	return -od_kio_fd_write_str(fd, out);
}

static int pids_write(const fs_synth_ctx *c, const char *buf, size_t len, bool threads)
{
	if (c->fd < 0 || !c->req)
		return EBADF;
	pid_t real;
	int err = fs_pid_resolve(c->req, buf, len, threads, &real);
	return err ? err : fs_pid_write(c->fd, real);
}

/* The caller's pid namespace when it is not ours: 0 when they are the same
 * (or unknown: then the kernel's own answer is the best there is). */
static ino_t foreign_ns(fuse_req_t req, int *depth)
{
	g_autoptr(fs_caller) who = fs_caller_new(req);
	if (who->pidns_ours || who->pidns_depth <= 0)
		return 0;
	*depth = who->pidns_depth;
	return who->pidns;
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
	int err = od_kio_fd_read_all(c->fd, raw);
	if (err) {
		g_string_free(raw, TRUE);
		return -err;
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
