/* ec_limits.c — the limit events of the cgroups that have memory.pressure_level listeners:
 * inotify on each one's memory.events.local (kernfs notifies it at every max, high, oom and
 * oom_kill event of that cgroup's own limits: memcg_memory_event, 6.1 and later), the counters
 * read again at each notification and turned into a level (od_vmp_level_of_events). This is
 * the part of v1's vmpressure that PSI cannot give: which cgroup's limit the reclaim was for
 * (v1's target memcg), and an OOM whose reclaim found nothing to free so fast that hardly any
 * stall was measured (d-v1notify on 6.1: 4.5 ms of "some" over a whole OOM episode).
 * A second set watches memory.events (the hierarchical file, notified on every ancestor
 * too) of the cgroups with usage thresholds: an event there is when to sample (v1events.h,
 * OD_THR_EVENT_GAP_MS). The levels thread's alone (ec_private.h); reads kernel files only, never blocks longer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "ec_private.h"
#include "oomd/kernel_io.h"

static const char *const keys[OD_VMP_NEVENTS] = { "max", "high", "oom", "oom_kill" };

struct ec_limits {
	const char *file; /* memory.events.local or memory.events */
	int fd;
	GHashTable *by_wd; /* wd -> ec_limit_watch* */
};

typedef struct {
	int wd;
	gpointer key;
	int dirfd; /* the record's, borrowed */
	uint64_t last[OD_VMP_NEVENTS];
} ec_limit_watch;

ec_limits *ec_limits_new(const char *file)
{
	ec_limits *x = g_new0(ec_limits, 1);
	x->file = file;
	x->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	x->by_wd = g_hash_table_new_full(g_int_hash, g_int_equal, NULL, g_free);
	return x;
}

void ec_limits_free(ec_limits *x)
{
	if (!x)
		return;
	if (x->fd >= 0)
		close(x->fd);
	g_hash_table_unref(x->by_wd);
	g_free(x);
}

int ec_limits_fd(const ec_limits *x)
{
	return x->fd;
}

static void count_event(void *ud, const char *key, size_t len, uint64_t v)
{
	for (int i = 0; i < OD_VMP_NEVENTS; i++)
		if (strlen(keys[i]) == len && memcmp(keys[i], key, len) == 0)
			((uint64_t *)ud)[i] = v;
}

int ec_limit_counts(int dirfd, const char *file, uint64_t out[OD_VMP_NEVENTS])
{
	g_autoptr(GString) s = g_string_new(NULL);
	memset(out, 0, OD_VMP_NEVENTS * sizeof out[0]);
	if (od_kio_read_all(dirfd, file, s) == 0 && od_kio_parse_kv(s->str, s->len, count_event, out) == 0)
		return 0;
	memset(out, 0, OD_VMP_NEVENTS * sizeof out[0]); /* a parse that failed half-way */
	return -1;
}

static ec_limit_watch *find_key(ec_limits *x, gpointer key)
{
	GHashTableIter it;
	gpointer v;
	g_hash_table_iter_init(&it, x->by_wd);
	while (g_hash_table_iter_next(&it, NULL, &v))
		if (((ec_limit_watch *)v)->key == key)
			return v;
	return NULL;
}

int ec_limits_watch(ec_limits *x, gpointer key, int dirfd, const char *path)
{
	if (x->fd < 0)
		return -EMFILE;
	if (find_key(x, key))
		return 0;
	g_autofree char *file = g_strconcat(path, "/", x->file, NULL);
	int wd = inotify_add_watch(x->fd, file, IN_MODIFY);
	if (wd < 0)
		return -errno; /* the root cgroup has none: PSI alone there */
	ec_limit_watch *w = g_hash_table_lookup(x->by_wd, &wd);
	if (w) /* the same file under another record (a cgroup re-made with its id?) */
		return 0;
	w = g_new0(ec_limit_watch, 1);
	w->wd = wd;
	w->key = key;
	w->dirfd = dirfd;
	ec_limit_counts(dirfd, x->file, w->last); /* zeros if unreadable */
	g_hash_table_insert(x->by_wd, &w->wd, w);
	return 0;
}

void ec_limits_unwatch(ec_limits *x, gpointer key)
{
	ec_limit_watch *w = find_key(x, key);
	if (!w)
		return;
	inotify_rm_watch(x->fd, w->wd); /* fails harmlessly once the cgroup is gone */
	g_hash_table_remove(x->by_wd, &w->wd);
}

void ec_limits_read(ec_limits *x, void (*fn)(gpointer key, od_vmp_level lev, void *ud), void *ud)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	GHashTable *seen = g_hash_table_new(g_direct_hash, g_direct_equal);
	ssize_t n;
	while ((n = read(x->fd, buf, sizeof buf)) > 0) {
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;
			p += sizeof *ev + ev->len;
			ec_limit_watch *w = g_hash_table_lookup(x->by_wd, &ev->wd);
			if (w && !(ev->mask & IN_IGNORED))
				g_hash_table_add(seen, GINT_TO_POINTER(ev->wd));
			else if (w) /* the cgroup went: its watch is gone */
				g_hash_table_remove(x->by_wd, &ev->wd);
		}
	}
	GHashTableIter it;
	gpointer v;
	g_hash_table_iter_init(&it, seen);
	while (g_hash_table_iter_next(&it, &v, NULL)) {
		int wd = GPOINTER_TO_INT(v);
		ec_limit_watch *w = g_hash_table_lookup(x->by_wd, &wd);
		if (!w)
			continue;
		uint64_t now[OD_VMP_NEVENTS];
		ec_limit_counts(w->dirfd, x->file, now); /* zeros if unreadable */
		int lev = od_vmp_level_of_events(w->last, now);
		memcpy(w->last, now, sizeof now);
		if (lev >= 0)
			fn(w->key, (od_vmp_level)lev, ud);
	}
	g_hash_table_unref(seen);
}
