/* ec_levels.c — v1's usage thresholds and memory.pressure_level listeners on a
 * cgroup-v2 kernel (ec_private.h; the rules: include/oomd/v1events.h).
 *
 * Thresholds. v2 has no notification at an arbitrary usage (inotify on memory.current
 * never fires: kernfs notifies only files that call cgroup_file_notify). This thread
 * samples, every OD_THR_PERIOD_MS, the usage of the cgroups that have thresholds and
 * only those, and sleeps without a timeout while none is registered: no wake-up at all
 * then. Latency: a crossing is heard within one period plus the reads (docs/DESIGN.md);
 * v1 checked at every 128th page charged or uncharged. A limit event of such a cgroup
 * (its memory.events, ec_limits.c) brings the sample forward: a rise to a limit and the
 * OOM kill that ends it can both fall inside one period. That notice comes through
 * kernfs_notify's work item, often after the victim's memory was freed (f-levels-restart on
 * 6.12 missed the crossing up in 1 run of 6), so such a sample also reads the cgroup's own
 * counters (memory.events.local): a max or oom event since says the usage stood at
 * memory.max, a high event above memory.high (the lower of the two, as read then), and the
 * thresholds are checked against that floor before the usage read (od_thr_event_floor): up, then down, as v1 signalled them.
 *
 * Pressure levels. Each cgroup with pressure listeners gets one PSI trigger per level
 * from its lowest listener's up to critical (memory.pressure, POLLPRI; the mapping in
 * core/vmpressure.c), opened and written here. A poll round takes the highest level
 * fired per cgroup as that cgroup's event, deepest cgroups first, and applies v1's walk
 * (od_vmp_hears) with the recent book standing for "heard below" (v1events.h).
 *
 * The limit events of each such cgroup (memory.events.local, ec_limits.c) are events of
 * their own, with the cgroup as the origin of v1's walk: its listeners, then its ancestors'
 * (hierarchy always, local never, default if nobody below heard), as vmpressure_work_fn.
 *
 * Threads: this one ("oomd-fs-levels") owns the cgroup records' descriptors and frees
 * the records; FUSE workers add records and thresholds under e->lock
 * (ec_levels_add_locked). Nothing here is on the kill path: signals go to the notifier
 * (ec_notify.c), the only writer of eventfds. No kernel file is read under the lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ec_private.h"
#include "oomd/kernel_io.h"
#include "v1files.h"

typedef struct {
	uint64_t id;
	int dirfd;     /* O_PATH of the real directory (ours) */
	bool is_root;
	char *path;    /* its real path: who is below whom */
	od_thresholds *thr[2]; /* memory.usage_in_bytes, memory.memsw.usage_in_bytes */
	od_thr_peak peak;      /* memory.peak at the last sample (the thread's alone) */
	int trig[OD_VMP_NLEVELS]; /* PSI triggers; the thread's alone */
	uint64_t ev[OD_VMP_NEVENTS]; /* memory.events.local at the last look (the thread's) */
	bool ev_stale; /* under e->lock: a threshold was added since (re-base, no floor) */
	bool psi_failed;          /* logged once */
} lv_cg;

struct ec_levels {
	GHashTable *cgs; /* id -> lv_cg*, under e->lock; records freed by the thread only */
	int wake;
	GThread *thread;
	bool stop;       /* under e->lock */
	ec_limits *limits; /* the thread's: pressure listeners' cgroups */
	ec_limits *thr_events; /* the thread's: thresholds' cgroups */
	uint64_t slack;  /* of a sampled usage (od_thr_check_apex), set once at the start */
};

static void cg_free(lv_cg *g)
{
	for (int l = 0; l < OD_VMP_NLEVELS; l++)
		if (g->trig[l] >= 0)
			close(g->trig[l]);
	od_thr_free(g->thr[0]);
	od_thr_free(g->thr[1]);
	close(g->dirfd);
	g_free(g->path);
	g_free(g);
}

void ec_levels_kick(fs_evctl *e)
{
	uint64_t one = 1;
	if (e->levels && write(e->levels->wake, &one, sizeof one) < 0 && errno != EAGAIN)
		g_warning("event_control: cannot wake the levels thread: %s", g_strerror(errno));
}

static ec_listener *by_serial_locked(fs_evctl *e, uint64_t serial)
{
	for (guint i = 0; i < e->all->len; i++) {
		ec_listener *l = g_ptr_array_index(e->all, i);
		if (l->serial == serial)
			return l;
	}
	return NULL;
}

/* Queues one signal to each listener whose serial is in keys (under e->lock). */
static void queue_keys_locked(fs_evctl *e, uint64_t id, const uint64_t *keys, size_t n)
{
	if (!n)
		return;
	GPtrArray *batch = g_ptr_array_new_with_free_func(ec_listener_unref);
	for (size_t i = 0; i < n; i++) {
		ec_listener *l = by_serial_locked(e, keys[i]);
		if (l)
			g_ptr_array_add(batch, ec_listener_ref(l));
	}
	if (batch->len)
		ec_push_job(e, JOB_SIGNAL, id, batch);
	else
		g_ptr_array_unref(batch);
}

int ec_levels_add_locked(fs_evctl *e, ec_listener *l, int dirfd, bool is_root, uint64_t usage)
{
	ec_levels *lv = e->levels;
	lv_cg *g = g_hash_table_lookup(lv->cgs, &l->id);
	if (!g) {
		int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			return ENOMEM;
		g = g_new0(lv_cg, 1);
		g->id = l->id;
		g->dirfd = fd;
		g->is_root = is_root;
		char link[64];
		fs_proc_path(link, fd);
		g->path = g_file_read_link(link, NULL);
		if (!g->path)
			g->path = g_strdup_printf("?%" G_GUINT64_FORMAT, l->id); /* below nothing */
		for (int i = 0; i < OD_VMP_NLEVELS; i++)
			g->trig[i] = -1;
		g_hash_table_insert(lv->cgs, &g->id, g);
	}
	if (l->kind == EC_USAGE || l->kind == EC_MEMSW) {
		od_thresholds **t = &g->thr[l->kind == EC_MEMSW];
		if (!*t)
			*t = od_thr_new();
		uint64_t *crossed = NULL;
		size_t n = 0;
		od_thr_add(*t, l->serial, l->threshold, usage, &crossed, &n);
		g->ev_stale = true; /* its baseline is newer than the counters the thread has */
		queue_keys_locked(e, l->id, crossed, n);
		g_free(crossed);
	}
	ec_levels_kick(e);
	return 0;
}

/* What one look at the listeners found (under e->lock). */
typedef struct {
	GPtrArray *sample; /* lv_cg* with thresholds */
	GPtrArray *gone;   /* lv_cg* without listeners, out of the table: the thread frees them */
	GPtrArray *all;    /* lv_cg* still in the table */
	size_t thresholds;
} lv_look;

static void drop_dead_key(uint64_t key, void *ud)
{
	GArray *dead = ud;
	g_array_append_val(dead, key);
}

/* Brings the records in line with e->all: thresholds of listeners that left are removed,
 * records without listeners leave the table; want[] is each record's lowest level. */
static void look_locked(fs_evctl *e, lv_look *k, GHashTable *want)
{
	GHashTable *live = g_hash_table_new(g_int64_hash, g_int64_equal);
	for (guint i = 0; i < e->all->len; i++) {
		ec_listener *l = g_ptr_array_index(e->all, i);
		if (l->kind == EC_OOM)
			continue;
		g_hash_table_add(live, &l->serial);
		if (l->kind == EC_PRESSURE) {
			gpointer old = g_hash_table_lookup(want, &l->id);
			int lowest = old ? GPOINTER_TO_INT(old) - 1 : OD_VMP_NLEVELS;
			if ((int)l->level < lowest) /* a key of its own: l may go once the lock is let go */
				g_hash_table_insert(want, g_memdup2(&l->id, sizeof l->id),
						    GINT_TO_POINTER((int)l->level + 1));
		}
	}
	GHashTableIter it;
	gpointer v;
	g_hash_table_iter_init(&it, e->levels->cgs);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		lv_cg *g = v;
		size_t n = 0;
		for (int s = 0; s < 2; s++) {
			if (!g->thr[s])
				continue;
			GArray *dead = g_array_new(FALSE, FALSE, sizeof(uint64_t));
			od_thr_foreach(g->thr[s], drop_dead_key, dead);
			for (guint j = 0; j < dead->len; j++) {
				uint64_t key = g_array_index(dead, uint64_t, j);
				if (!g_hash_table_contains(live, &key))
					od_thr_remove(g->thr[s], key);
			}
			g_array_unref(dead);
			n += od_thr_count(g->thr[s]);
		}
		if (!n && !g_hash_table_contains(want, &g->id)) {
			g_hash_table_iter_steal(&it);
			g_ptr_array_add(k->gone, g);
			continue;
		}
		k->thresholds += n;
		if (n)
			g_ptr_array_add(k->sample, g);
		g_ptr_array_add(k->all, g);
	}
	g_hash_table_unref(live);
}

/* Arms the triggers a record wants (levels from lowest up), closes the others. */
static void arm(lv_cg *g, int lowest)
{
	for (int l = 0; l < OD_VMP_NLEVELS; l++) {
		bool need = lowest >= 0 && l >= lowest;
		if (!need && g->trig[l] >= 0) {
			close(g->trig[l]);
			g->trig[l] = -1;
		}
		if (!need || g->trig[l] >= 0 || g->psi_failed)
			continue;
		char spec[48];
		size_t n = od_vmp_psi_trigger((od_vmp_level)l, spec, sizeof spec);
		int fd = openat(g->dirfd, "memory.pressure", O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0 && write(fd, spec, n + 1) < 0) {
			int err = errno;
			close(fd);
			fd = -1;
			errno = err;
		}
		if (fd < 0) {
			g->psi_failed = true;
			g_warning("cgroup %" G_GUINT64_FORMAT ": cannot set the PSI trigger \"%s\" on memory.pressure"
				  " (%s): its memory.pressure_level listeners hear nothing", g->id, spec,
				  g_strerror(errno));
			continue;
		}
		g->trig[l] = fd;
	}
}

/* The counter of a record's thresholds, as the v1 file shows it (v1memory.c). */
static int usage_of(const lv_cg *g, bool memsw, uint64_t *u)
{
	fs_synth_ctx c = { .dirfd = g->dirfd, .is_root = g->is_root, .fd = -1, .fd2 = -1 };
	return fs_v1_usage_value(&c, memsw, u);
}

/* The usage the cgroup's own limit events since the last look say it reached
 * (od_thr_event_floor), 0 if none; rebase: only take the counters in. */
static uint64_t event_floor(lv_cg *g, bool rebase)
{
	uint64_t old[OD_VMP_NEVENTS], now[OD_VMP_NEVENTS], max, high;
	if (g->is_root || ec_limit_counts(g->dirfd, "memory.events.local", now) < 0)
		return 0;
	memcpy(old, g->ev, sizeof old);
	memcpy(g->ev, now, sizeof now);
	if (rebase || memcmp(old, now, sizeof old) == 0) /* nothing moved: no limit to read */
		return 0;
	if (od_kio_read_u64(g->dirfd, "memory.max", &max) < 0)
		max = OE_UNLIMITED;
	if (od_kio_read_u64(g->dirfd, "memory.high", &high) < 0)
		high = OE_UNLIMITED;
	return od_thr_event_floor(old, now, max, high);
}

/* events: memory.events moved since the last sample (the cgroups' own counters are read
 * then, and after a threshold was added, only then). */
static void sample(fs_evctl *e, GPtrArray *cgs, bool events)
{
	const uint64_t slack = e->levels->slack;
	for (guint i = 0; i < cgs->len; i++) {
		lv_cg *g = g_ptr_array_index(cgs, i);
		uint64_t u[2], floor = 0;
		bool ok[2] = { false, false };
		/* the counts are read without the lock; a FUSE worker may add a threshold
		 * meanwhile (it checks with its own reading, and marks the record stale) */
		g_mutex_lock(&e->lock);
		bool has[2] = { g->thr[0] && od_thr_count(g->thr[0]), g->thr[1] && od_thr_count(g->thr[1]) };
		bool stale = g->ev_stale;
		g->ev_stale = false;
		g_mutex_unlock(&e->lock);
		if ((has[0] || has[1]) && (events || stale))
			floor = event_floor(g, stale);
		/* memory.usage_in_bytes only: memory.peak proves what the usage reached between
		 * two samples (v1events.h). The root has none; nor has memsw (swap.peak is
		 * swap's alone), whose thresholds stay sampled. Read before the usage: the
		 * apex is checked first, so it must be a value reached before the usage read.
		 * Read after it, a usage still growing gave a rise above the usage just read:
		 * a crossing up and a false one down, then up again at the next sample (6.12,
		 * d-v1perm in CI: an 8M threshold heard 4 signals for one 24 MiB hog). Read
		 * before it, the peak may still be above the usage by the charge stock this very
		 * read drained: the slack (od_thr_check_apex). */
		uint64_t pk, apex = 0;
		bool pk_ok = has[0] && !g->is_root && od_kio_read_u64(g->dirfd, "memory.peak", &pk) == 0;
		for (int s = 0; s < 2; s++)
			ok[s] = has[s] && usage_of(g, s == 1, &u[s]) == 0;
		if (ok[0] && pk_ok)
			apex = od_thr_peak_apex(&g->peak, pk);
		if (stale)
			apex = 0; /* a rise before the threshold's own baseline: recorded only */
		g_mutex_lock(&e->lock);
		for (int s = 0; s < 2; s++) {
			if (!ok[s] || !g->thr[s])
				continue;
			uint64_t *crossed = NULL;
			size_t n = 0;
			/* up to what the usage is known to have reached since the last sample (a
			 * limit event's floor, memory.peak's rise), then down to the usage read: v1
			 * signalled both. Not for a threshold added since the counters were read. */
			uint64_t up = MAX(floor, s == 0 ? apex : 0);
			od_thr_check_apex(g->thr[s], g->ev_stale ? 0 : up, u[s], slack, &crossed, &n);
			queue_keys_locked(e, g->id, crossed, n);
			g_free(crossed);
		}
		g_mutex_unlock(&e->lock);
	}
}

static gint deeper_first(gconstpointer a, gconstpointer b)
{
	const lv_cg *x = *(lv_cg *const *)a, *y = *(lv_cg *const *)b;
	size_t lx = strlen(x->path), ly = strlen(y->path);
	return lx > ly ? -1 : lx < ly;
}

/* One event per cgroup (its highest level fired), deepest first. */
static void deliver(fs_evctl *e, od_vmp_recent *recent, GPtrArray *fired, const int *level)
{
	int64_t now = g_get_monotonic_time() * 1000;
	for (guint i = 0; i < fired->len; i++) {
		lv_cg *g = g_ptr_array_index(fired, i);
		od_vmp_level lev = (od_vmp_level)level[i];
		GPtrArray *batch = g_ptr_array_new_with_free_func(ec_listener_unref);
		g_mutex_lock(&e->lock);
		bool below = od_vmp_recent_below(recent, g->path, lev, now);
		for (guint j = 0; j < e->all->len; j++) {
			ec_listener *l = g_ptr_array_index(e->all, j);
			if (l->kind == EC_PRESSURE && l->id == g->id &&
			    od_vmp_hears(l->level, l->mode, below ? 1 : 0, lev, below))
				g_ptr_array_add(batch, ec_listener_ref(l));
		}
		if (batch->len) {
			od_vmp_recent_note(recent, g->path, lev, now);
			ec_push_job(e, JOB_SIGNAL, g->id, batch);
		} else {
			g_ptr_array_unref(batch);
		}
		g_mutex_unlock(&e->lock);
	}
}

/* A limit event of record g: v1's walk from g up through the records above it. */
static void deliver_walk(fs_evctl *e, od_vmp_recent *recent, GPtrArray *all, lv_cg *g, od_vmp_level lev)
{
	GPtrArray *chain = g_ptr_array_new();
	g_ptr_array_add(chain, g);
	for (guint i = 0; i < all->len; i++) {
		lv_cg *a = g_ptr_array_index(all, i);
		if (od_path_below(a->path, g->path))
			g_ptr_array_add(chain, a);
	}
	g_ptr_array_sort(chain, deeper_first);
	int64_t now = g_get_monotonic_time() * 1000;
	bool signalled = false;
	g_mutex_lock(&e->lock);
	for (guint up = 0; up < chain->len; up++) {
		lv_cg *r = g_ptr_array_index(chain, up);
		GPtrArray *batch = g_ptr_array_new_with_free_func(ec_listener_unref);
		for (guint j = 0; j < e->all->len; j++) {
			ec_listener *l = g_ptr_array_index(e->all, j);
			if (l->kind == EC_PRESSURE && l->id == r->id && od_vmp_hears(l->level, l->mode, up, lev, signalled))
				g_ptr_array_add(batch, ec_listener_ref(l));
		}
		if (batch->len) {
			signalled = true;
			od_vmp_recent_note(recent, r->path, lev, now);
			ec_push_job(e, JOB_SIGNAL, r->id, batch);
		} else {
			g_ptr_array_unref(batch);
		}
	}
	g_mutex_unlock(&e->lock);
	g_ptr_array_unref(chain);
}

typedef struct {
	GPtrArray *origin;
	GArray *level;
} lv_limit_events;

static void on_limit(gpointer key, od_vmp_level lev, void *ud)
{
	lv_limit_events *x = ud;
	int l = (int)lev;
	g_ptr_array_add(x->origin, key);
	g_array_append_val(x->level, l);
}

static void on_thr_event(gpointer key, od_vmp_level lev, void *ud)
{
	(void)key;
	(void)lev;
	*(bool *)ud = true;
}

/* pfds[0]: the wake eventfd, [1]: pressure cgroups' limit events, [2]: thresholds' cgroups'
 * limit events, [PFD_TRIGGERS...]: the PSI triggers (owner[i - PFD_TRIGGERS]). */
#define PFD_TRIGGERS 3

static gpointer levels_thread(gpointer data)
{
	fs_evctl *e = data;
	ec_levels *lv = e->levels;
	od_vmp_recent *recent = od_vmp_recent_new();
	int64_t last = 0;
	bool thr_event = false; /* a thresholds' cgroup's limit event since the last sample */
	GArray *pfds = g_array_new(FALSE, FALSE, sizeof(struct pollfd));
	GArray *owner = g_array_new(FALSE, FALSE, sizeof(gpointer)); /* lv_cg* of pfds[i + PFD_TRIGGERS] */
	GArray *lvl = g_array_new(FALSE, FALSE, sizeof(int));
	for (;;) {
		GHashTable *want = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
		lv_look k = { g_ptr_array_new(), g_ptr_array_new_with_free_func((GDestroyNotify)cg_free),
			      g_ptr_array_new(), 0 };
		g_mutex_lock(&e->lock);
		bool stop = lv->stop;
		if (!stop)
			look_locked(e, &k, want);
		g_mutex_unlock(&e->lock);
		if (stop) {
			g_hash_table_unref(want);
			g_ptr_array_unref(k.sample);
			g_ptr_array_unref(k.gone);
			g_ptr_array_unref(k.all);
			break;
		}
		for (guint i = 0; i < k.gone->len; i++) {
			ec_limits_unwatch(lv->limits, g_ptr_array_index(k.gone, i));
			ec_limits_unwatch(lv->thr_events, g_ptr_array_index(k.gone, i));
		}
		g_ptr_array_unref(k.gone); /* closes their descriptors, outside the lock */

		g_array_set_size(pfds, 0);
		g_array_set_size(owner, 0);
		struct pollfd w = { .fd = lv->wake, .events = POLLIN };
		g_array_append_val(pfds, w);
		struct pollfd lim = { .fd = ec_limits_fd(lv->limits), .events = POLLIN };
		g_array_append_val(pfds, lim);
		/* not looked at while a sample is already brought forward: one wake-up per gap */
		struct pollfd tev = { .fd = thr_event ? -1 : ec_limits_fd(lv->thr_events), .events = POLLIN };
		g_array_append_val(pfds, tev);
		for (guint i = 0; i < k.all->len; i++) {
			lv_cg *g = g_ptr_array_index(k.all, i);
			gpointer lo = g_hash_table_lookup(want, &g->id);
			arm(g, lo ? GPOINTER_TO_INT(lo) - 1 : -1);
			if (lo)
				ec_limits_watch(lv->limits, g, g->dirfd, g->path);
			else
				ec_limits_unwatch(lv->limits, g);
			if (g_ptr_array_find(k.sample, g, NULL))
				ec_limits_watch(lv->thr_events, g, g->dirfd, g->path);
			else
				ec_limits_unwatch(lv->thr_events, g);
			for (int l = 0; l < OD_VMP_NLEVELS; l++) {
				if (g->trig[l] < 0)
					continue;
				struct pollfd p = { .fd = g->trig[l], .events = POLLPRI };
				g_array_append_val(pfds, p);
				g_array_append_val(owner, g);
			}
		}
		g_hash_table_unref(want);

		int64_t now = g_get_monotonic_time() * 1000;
		int64_t next = od_thr_next_sample(k.thresholds, last, now, thr_event);
		int timeout = next < 0 ? -1 : (int)((next - now + 999999) / 1000000);
		int r = poll((struct pollfd *)pfds->data, pfds->len, timeout);
		if (r < 0 && errno != EINTR)
			g_warning("event_control: levels poll failed: %s", g_strerror(errno));
		struct pollfd *v = (struct pollfd *)pfds->data;
		if (r > 0 && (v[0].revents & POLLIN)) {
			uint64_t cnt;
			if (read(lv->wake, &cnt, sizeof cnt) < 0 && errno != EAGAIN)
				g_warning("event_control: levels wake read failed: %s", g_strerror(errno));
		}
		if (r > 0 && (v[1].revents & POLLIN)) {
			lv_limit_events le = { g_ptr_array_new(), g_array_new(FALSE, FALSE, sizeof(int)) };
			ec_limits_read(lv->limits, on_limit, &le);
			for (guint i = 0; i < le.origin->len; i++)
				deliver_walk(e, recent, k.all, g_ptr_array_index(le.origin, i),
					     (od_vmp_level)g_array_index(le.level, int, i));
			g_ptr_array_unref(le.origin);
			g_array_unref(le.level);
		}
		if (r > 0 && (v[2].revents & POLLIN)) {
			ec_limits_read(lv->thr_events, on_thr_event, &thr_event);
			if (thr_event) /* the sample comes forward: poll again with the new timeout */
				next = od_thr_next_sample(k.thresholds, last, g_get_monotonic_time() * 1000, true);
		}
		/* the highest level fired per cgroup: one event each. A removed cgroup's file
		 * polls POLLERR | POLLPRI for ever (kernfs_fop_poll once the node is
		 * deactivated): no event, its triggers go (the removed hook drops the listeners). */
		GPtrArray *fired = g_ptr_array_new();
		for (guint i = PFD_TRIGGERS; r > 0 && i < pfds->len; i++) {
			lv_cg *g = g_array_index(owner, gpointer, i - PFD_TRIGGERS);
			if (v[i].revents & (POLLERR | POLLNVAL)) {
				for (int l = 0; l < OD_VMP_NLEVELS; l++)
					if (g->trig[l] == v[i].fd) {
						close(g->trig[l]);
						g->trig[l] = -1;
					}
				g->psi_failed = true;
				v[i].revents = 0;
				continue;
			}
			if ((v[i].revents & POLLPRI) && !g_ptr_array_find(fired, g, NULL))
				g_ptr_array_add(fired, g);
		}
		g_ptr_array_sort(fired, deeper_first);
		g_array_set_size(lvl, fired->len);
		for (guint f = 0; f < fired->len; f++) {
			lv_cg *g = g_ptr_array_index(fired, f);
			int top = -1;
			for (guint i = PFD_TRIGGERS; i < pfds->len; i++)
				if (g_array_index(owner, gpointer, i - PFD_TRIGGERS) == g && (v[i].revents & POLLPRI))
					for (int l = 0; l < OD_VMP_NLEVELS; l++)
						if (g->trig[l] == v[i].fd && l > top)
							top = l;
			g_array_index(lvl, int, f) = top;
		}
		if (fired->len)
			deliver(e, recent, fired, (int *)lvl->data);
		g_ptr_array_unref(fired);

		now = g_get_monotonic_time() * 1000;
		if (next >= 0 && now >= next) {
			sample(e, k.sample, thr_event);
			last = now;
			thr_event = false;
		}
		g_ptr_array_unref(k.sample);
		g_ptr_array_unref(k.all);
	}
	g_array_unref(lvl);
	g_array_unref(owner);
	g_array_unref(pfds);
	od_vmp_recent_free(recent);
	return NULL;
}

ec_levels *ec_levels_new(fs_evctl *e, int *err)
{
	ec_levels *lv = g_new0(ec_levels, 1);
	/* a stock on every CPU that may hold one: any charge there by another cgroup drains it
	 * (refill_stock), not only this thread's reads (v1events.h). Configured CPUs, read once
	 * (glibc reads sysfs for it): a CPU taken offline has its stocks drained, so they bound
	 * the online ones whatever hotplug does later. */
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	lv->slack = OD_THR_STOCK_PAGES * (uint64_t)sysconf(_SC_PAGESIZE) * (uint64_t)(ncpu > 0 ? ncpu : 1);
	lv->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (lv->wake < 0) {
		*err = errno;
		g_free(lv);
		return NULL;
	}
	lv->cgs = g_hash_table_new(g_int64_hash, g_int64_equal);
	lv->limits = ec_limits_new("memory.events.local");
	lv->thr_events = ec_limits_new("memory.events");
	e->levels = lv;
	GError *ge = NULL;
	lv->thread = g_thread_try_new("oomd-fs-levels", levels_thread, e, &ge);
	if (!lv->thread) {
		g_warning("cannot start the thresholds thread: %s", ge->message);
		g_error_free(ge);
		e->levels = NULL;
		ec_limits_free(lv->limits);
		ec_limits_free(lv->thr_events);
		g_hash_table_unref(lv->cgs);
		close(lv->wake);
		g_free(lv);
		*err = EAGAIN;
		return NULL;
	}
	return lv;
}

void ec_levels_free(fs_evctl *e)
{
	ec_levels *lv = e->levels;
	if (!lv)
		return;
	g_mutex_lock(&e->lock);
	lv->stop = true;
	g_mutex_unlock(&e->lock);
	ec_levels_kick(e);
	g_thread_join(lv->thread);
	GHashTableIter it;
	gpointer v;
	g_hash_table_iter_init(&it, lv->cgs);
	while (g_hash_table_iter_next(&it, NULL, &v))
		cg_free(v);
	g_hash_table_unref(lv->cgs);
	ec_limits_free(lv->limits);
	ec_limits_free(lv->thr_events);
	e->levels = NULL;
	close(lv->wake);
	g_free(lv);
}
