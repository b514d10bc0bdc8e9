/* v1tasks.c — v1's tasks and cgroup.procs in the v1 layout: lists sorted and
 * without duplicates, pids in the caller's namespace; writes through the real
 * files opened as the opener. Contract: v1files.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oomd/kernel_io.h"
#include "v1files.h"

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

static int pids_read(const fs_synth_ctx *c, const char *real, GString *out)
{
	int fd = od_kio_open(c->dirfd, real, O_RDONLY);
	if (fd < 0)
		return -fd;
	fs_synth_ctx cc = *c;
	cc.fd = fd;
	GString *raw = g_string_new(NULL);
	int r = fs_procs_read(&cc, raw); /* pids in the caller's namespace */
	if (r == FS_SYN_PASS) {
		g_string_truncate(raw, 0);
		r = -od_kio_read_all(c->dirfd, real, raw);
	}
	close(fd);
	if (r) {
		g_string_free(raw, TRUE);
		return r;
	}
	GArray *a = g_array_new(FALSE, FALSE, sizeof(long));
	char *save = NULL;
	for (char *l = strtok_r(raw->str, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		long v = strtol(l, NULL, 10);
		/* v2 lists a task outside the reader's pid namespace as 0; v1's pidlist
		 * (pidlist_array_load) leaves it out */
		if (v > 0)
			g_array_append_val(a, v);
	}
	qsort(a->data, a->len, sizeof(long), cmp_long);
	for (guint i = 0; i < a->len; i++) {
		long v = g_array_index(a, long, i);
		if (i == 0 || v != g_array_index(a, long, i - 1))
			g_string_append_printf(out, "%ld\n", v);
	}
	g_array_unref(a);
	g_string_free(raw, TRUE);
	return 0;
}

int fs_v1_tasks_read(const fs_synth_ctx *c, GString *out)
{
	return pids_read(c, "cgroup.threads", out);
}

int fs_v1_procs_read(const fs_synth_ctx *c, GString *out)
{
	return pids_read(c, "cgroup.procs", out);
}

/* Writes go through the real files opened at open time as the opener (the
 * kernel checks delegation and the cgroup-namespace boundary against the
 * opener, as it does for the real v1 tasks and cgroup.procs since 5.16), with
 * pids translated from the writer's pid namespace (pids.c). */
static int pids_open(const fs_synth_ctx *c, const fs_caller *who, int flags, int *fd, int *fd2,
		     bool threads)
{
	char path[96];
	int acc = flags & O_ACCMODE;
	snprintf(path, sizeof path, "/proc/self/fd/%d/cgroup.procs", c->dirfd);
	*fd = fs_caller_open(who, path, acc | O_CLOEXEC, FS_OPEN_AS_CALLER);
	if (*fd < 0) {
		int err = -*fd;
		*fd = -1;
		return err;
	}
	if (threads) {
		snprintf(path, sizeof path, "/proc/self/fd/%d/cgroup.threads", c->dirfd);
		*fd2 = fs_caller_open(who, path, acc | O_CLOEXEC, FS_OPEN_AS_CALLER);
		if (*fd2 < 0)
			*fd2 = -1; /* no thread moves through this open (EACCES at write) */
	}
	return 0;
}

int fs_synth_open_as_opener(const fs_synth *s, const fs_synth_ctx *c, const fs_caller *who,
			    int flags, int *fd, int *fd2)
{
	return pids_open(c, who, flags, fd, fd2, s->write == fs_v1_tasks_write);
}

/* How many threads the process of global tid has; 0 if unknown. */
static long threads_of(long tid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/status", tid);
	g_autofree char *status = NULL;
	guint64 tgid, n;
	if (!g_file_get_contents(path, &status, NULL, NULL) || !fs_status_number(status, "Tgid:", 10, &tgid) ||
	    !fs_status_number(status, "Threads:", 10, &n))
		return 0;
	return (long)tgid == tid ? (long)n : 0;
}

/* v1 `echo TID > tasks` moves one thread. v2 moves a single thread only between
 * cgroups of one threaded domain (EOPNOTSUPP otherwise), so the thread of a
 * single-threaded process moves its process through cgroup.procs, which is the
 * same thing; any other thread goes to cgroup.threads and gets v2's answer. */
int fs_v1_tasks_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	if (!c->req || c->fd < 0)
		return EIO;
	pid_t g;
	int err = fs_pid_resolve(c->req, buf, len, true, &g);
	if (err)
		return err;
	if (threads_of(g) == 1)
		return fs_pid_write(c->fd, g);
	return c->fd2 < 0 ? EACCES : fs_pid_write(c->fd2, g);
}

int fs_v1_procs_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	return fs_procs_write(c, buf, len);
}
