/* v1layout.c — the cgroup-v1 memory layout of the shadow tree (--layout v1).
 * Every file of the v1 view is synthetic: a v1 name served from the v2 files of
 * the real cgroup (and the user's L kept by the controller), in v1's formats
 * (unlimited = PAGE_COUNTER_MAX pages = 9223372036854771712 with 4 KiB pages,
 * values page-aligned) and with v1's errno for bad writes. The real v2 files are
 * hidden; directories (cgroups) pass through. docs/V1-LAYOUT.md has the table.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "v1layout.h"
#include "v1parse.h"
#include "oomd/engine.h"
#include "oomd/parse.h"

/* ---- helpers ---- */

static uint64_t v1_unlimited(const fs_synth_ctx *c)
{
	uint64_t ps = c->page_size ? c->page_size : 4096;
	return ((uint64_t)LONG_MAX / ps) * ps; /* PAGE_COUNTER_MAX * PAGE_SIZE */
}

/* v1 prints page counts times PAGE_SIZE: "max" and anything at or above
 * PAGE_COUNTER_MAX pages is the unlimited value. */
static void put_v1(const fs_synth_ctx *c, GString *out, uint64_t bytes)
{
	uint64_t u = v1_unlimited(c);
	g_string_append_printf(out, "%" PRIu64 "\n", bytes >= u ? u : bytes);
}

static int ensure_known(const fs_synth_ctx *c)
{
	int r = od_controller_add(c->ctl, c->parent, c->dirfd, NULL);
	return r == ENOENT ? ENODEV : r;
}

static bool view_of(const fs_synth_ctx *c, oe_view *v)
{
	if (!c->ctl)
		return false;
	if (od_controller_view(c->ctl, c->id, v))
		return true;
	return ensure_known(c) == 0 && od_controller_view(c->ctl, c->id, v);
}

/* A single-value cgroup file: "max" reads as OE_UNLIMITED. 0 or errno. */
static int rd(int dirfd, const char *name, uint64_t *v)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	char buf[32];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return e;
	buf[n] = 0;
	*v = strncmp(buf, "max", 3) == 0 ? OE_UNLIMITED : g_ascii_strtoull(buf, NULL, 10);
	return 0;
}

/* Writes "max" for OE_UNLIMITED, else the decimal value; -errno or 0 (kernel_io style). */
static int kwrite_str(int dirfd, const char *name, const char *s)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, s, strlen(s));
	int e = errno;
	close(fd);
	return n < 0 ? -e : 0;
}

static int kwrite_u64(int dirfd, const char *name, uint64_t v)
{
	char buf[24];
	if (v == OE_UNLIMITED)
		snprintf(buf, sizeof buf, "max");
	else
		snprintf(buf, sizeof buf, "%" PRIu64, v);
	return kwrite_str(dirfd, name, buf);
}

static bool has_file(int dirfd, const char *name)
{
	struct stat st;
	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

static int slurp(int dirfd, const char *name, GString *out)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	char buf[4096];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0) {
			int e = errno;
			close(fd);
			return e;
		}
		if (n == 0)
			break;
		g_string_append_len(out, buf, n);
	}
	close(fd);
	return 0;
}

/* The value of key in a flat-keyed file ("key value" lines); 0 when missing. */
static int key_of(int dirfd, const char *file, const char *key, uint64_t *v)
{
	GString *s = g_string_new(NULL);
	int r = slurp(dirfd, file, s);
	*v = 0;
	if (r == 0) {
		size_t kl = strlen(key);
		for (char *p = s->str; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
			if (strncmp(p, key, kl) == 0 && p[kl] == ' ') {
				*v = g_ascii_strtoull(p + kl + 1, NULL, 10);
				break;
			}
		}
	}
	g_string_free(s, TRUE);
	return r;
}

/* The user's limit L: the controller's view, else the real memory.max. */
static int limit_of(const fs_synth_ctx *c, uint64_t *l)
{
	oe_view v;
	if (view_of(c, &v)) {
		*l = v.limit;
		return 0;
	}
	return rd(c->dirfd, "memory.max", l);
}

/* v1's page_counter_memparse (v1parse.c). */
static int parse_v1_memory(const fs_synth_ctx *c, const char *buf, size_t len, uint64_t *out)
{
	return fs_v1_parse_memory(c->page_size, buf, len, out);
}

/* ---- per-cgroup state v1 resets need: failcnt baselines, max_usage fds ---- */

typedef struct {
	uint64_t failcnt_base, memsw_failcnt_base;
	bool have_soft;
	uint64_t soft, soft_low; /* last v1 soft limit written and the memory.low it became */
	int peak_fd, swap_peak_fd; /* memory.peak opened and reset (6.12+), -1 if none */
} v1_state;

static GMutex state_lock;
static GHashTable *states; /* cgroup id -> v1_state; entries are few (reset cgroups) */

static v1_state *state_get_locked(uint64_t id, bool create)
{
	if (!states)
		states = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	v1_state *s = g_hash_table_lookup(states, &id);
	if (!s && create) {
		s = g_new0(v1_state, 1);
		s->peak_fd = s->swap_peak_fd = -1;
		uint64_t *k = g_new(uint64_t, 1);
		*k = id;
		g_hash_table_insert(states, k, s);
	}
	return s;
}

/* ---- handlers ---- */

static int limit_read(const fs_synth_ctx *c, GString *out)
{
	uint64_t l = OE_UNLIMITED;
	if (!c->is_root) {
		int r = limit_of(c, &l);
		if (r)
			return r;
	}
	put_v1(c, out, l);
	return 0;
}

static int swap_max_of(const fs_synth_ctx *c, uint64_t *sm)
{
	*sm = OE_UNLIMITED;
	if (!has_file(c->dirfd, "memory.swap.max"))
		return 0;
	return rd(c->dirfd, "memory.swap.max", sm);
}

static int write_limit(const fs_synth_ctx *c, uint64_t bytes)
{
	if (!c->ctl) {
		int w = kwrite_u64(c->dirfd, "memory.max", bytes);
		return w < 0 ? -w : 0;
	}
	int r = od_controller_write_limit(c->ctl, c->id, bytes);
	if (r == ENOENT && ensure_known(c) == 0)
		r = od_controller_write_limit(c->ctl, c->id, bytes);
	return r == ENOENT ? ENODEV : r;
}

/* v1's mem_cgroup_resize_max(): a limit is never set below the usage. It
 * reclaims towards the new limit (here through memory.reclaim) and gives up
 * with EBUSY after MAX_RECLAIM_RETRIES rounds without progress, leaving the old
 * limit; v2 would OOM-kill instead. */
static int fit_under(const fs_synth_ctx *c, uint64_t bytes)
{
	if (bytes == OE_UNLIMITED || !has_file(c->dirfd, "memory.reclaim"))
		return 0;
	for (int retries = 16; retries > 0;) {
		uint64_t u;
		int r = rd(c->dirfd, "memory.current", &u);
		if (r)
			return r;
		if (u <= bytes)
			return 0;
		r = kwrite_u64(c->dirfd, "memory.reclaim", u - bytes);
		uint64_t after = u;
		if (rd(c->dirfd, "memory.current", &after) != 0 || after >= u || (r < 0 && r != -EAGAIN))
			retries--;
	}
	return EBUSY;
}

static int limit_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	uint64_t bytes, old, sm;
	int r = parse_v1_memory(c, buf, len, &bytes);
	if (r)
		return r;
	if (c->is_root)
		return EINVAL; /* v1: "Can't set limit on root" */
	if ((r = limit_of(c, &old)) || (r = swap_max_of(c, &sm)))
		return r;
	if (bytes < old && (r = fit_under(c, bytes)))
		return r;
	/* v1 keeps memsw.limit >= limit and leaves memsw.limit alone: v2 has the
	 * swap part only, so swap.max follows to keep L + swap.max unchanged. */
	if (sm != OE_UNLIMITED && old != OE_UNLIMITED) {
		uint64_t memsw = old + sm;
		if (bytes == OE_UNLIMITED || bytes > memsw)
			return EINVAL;
		r = write_limit(c, bytes);
		if (r)
			return r;
		r = kwrite_u64(c->dirfd, "memory.swap.max", memsw - bytes);
		return r < 0 ? -r : 0;
	}
	return write_limit(c, bytes);
}

/* v1's mem_cgroup_usage(): the page counter, and for the root (never charged)
 * file + anon pages of its statistics. */
static int usage_of(const fs_synth_ctx *c, uint64_t *u)
{
	if (!c->is_root)
		return rd(c->dirfd, "memory.current", u);
	uint64_t file, anon;
	int r = key_of(c->dirfd, "memory.stat", "file", &file);
	if (!r)
		r = key_of(c->dirfd, "memory.stat", "anon", &anon);
	*u = file + anon;
	return r;
}

static int usage_read(const fs_synth_ctx *c, GString *out)
{
	uint64_t u;
	int r = usage_of(c, &u);
	if (r)
		return r;
	put_v1(c, out, u);
	return 0;
}

static int read_fd_u64(int fd, uint64_t *v)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	if (n < 0)
		return errno;
	buf[n] = 0;
	*v = g_ascii_strtoull(buf, NULL, 10);
	return 0;
}

/* memory.peak (or memory.swap.peak): through the descriptor that a v1 reset left,
 * else the file; a kernel without it gives the current usage. */
static int peak_of(const fs_synth_ctx *c, bool swap, uint64_t *v)
{
	const char *peak = swap ? "memory.swap.peak" : "memory.peak";
	g_mutex_lock(&state_lock);
	v1_state *s = state_get_locked(c->id, false);
	int fd = s ? (swap ? s->swap_peak_fd : s->peak_fd) : -1;
	if (fd >= 0) {
		int r = read_fd_u64(fd, v);
		g_mutex_unlock(&state_lock);
		return r;
	}
	g_mutex_unlock(&state_lock);
	if (has_file(c->dirfd, peak))
		return rd(c->dirfd, peak, v);
	return swap ? rd(c->dirfd, "memory.swap.current", v) : usage_of(c, v);
}

static int max_usage_read(const fs_synth_ctx *c, GString *out)
{
	uint64_t v;
	int r = c->is_root ? usage_of(c, &v) : peak_of(c, false, &v);
	if (r)
		return r;
	put_v1(c, out, v);
	return 0;
}

/* v1 resets the watermark whatever was written. Since 6.12 a write to
 * memory.peak resets it for that open file only: we keep that file open and read
 * through it. Older kernels cannot reset: the write is accepted, nothing changes. */
static int reset_peak(const fs_synth_ctx *c, bool swap)
{
	if (c->is_root)
		return 0;
	const char *peak = swap ? "memory.swap.peak" : "memory.peak";
	int fd = openat(c->dirfd, peak, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, "reset\n", 6) < 0) {
		close(fd);
		return 0;
	}
	g_mutex_lock(&state_lock);
	v1_state *s = state_get_locked(c->id, true);
	int *slot = swap ? &s->swap_peak_fd : &s->peak_fd;
	if (*slot >= 0)
		close(*slot);
	*slot = fd;
	g_mutex_unlock(&state_lock);
	return 0;
}

static int max_usage_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	(void)buf;
	(void)len;
	return reset_peak(c, false);
}

static int events_max(const fs_synth_ctx *c, bool swap, uint64_t *v)
{
	*v = 0;
	if (c->is_root)
		return 0;
	return key_of(c->dirfd, swap ? "memory.swap.events" : "memory.events", "max", v);
}

static int failcnt_show(const fs_synth_ctx *c, bool swap, GString *out)
{
	uint64_t v;
	int r = events_max(c, swap, &v);
	if (r)
		return r;
	g_mutex_lock(&state_lock);
	v1_state *s = state_get_locked(c->id, false);
	uint64_t base = s ? (swap ? s->memsw_failcnt_base : s->failcnt_base) : 0;
	g_mutex_unlock(&state_lock);
	g_string_append_printf(out, "%" PRIu64 "\n", v >= base ? v - base : 0);
	return 0;
}

static int failcnt_reset(const fs_synth_ctx *c, bool swap)
{
	uint64_t v;
	int r = events_max(c, swap, &v);
	if (r)
		return r;
	g_mutex_lock(&state_lock);
	v1_state *s = state_get_locked(c->id, true);
	*(swap ? &s->memsw_failcnt_base : &s->failcnt_base) = v;
	g_mutex_unlock(&state_lock);
	return 0;
}

static int failcnt_read(const fs_synth_ctx *c, GString *out)
{
	return failcnt_show(c, false, out);
}

static int failcnt_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	(void)buf;
	(void)len;
	return failcnt_reset(c, false);
}

/* soft limit <-> memory.low: both defaults mean "no preference" (v1: unlimited,
 * v2: 0), so unlimited is written as 0 and 0 reads as unlimited, unless the
 * user wrote 0 and memory.low is still what that write made it. */
static int soft_read(const fs_synth_ctx *c, GString *out)
{
	uint64_t v = OE_UNLIMITED;
	if (!c->is_root) {
		int r = rd(c->dirfd, "memory.low", &v);
		if (r)
			return r;
		g_mutex_lock(&state_lock);
		v1_state *s = state_get_locked(c->id, false);
		bool remembered = s && s->have_soft && s->soft_low == v;
		uint64_t soft = remembered ? s->soft : 0;
		g_mutex_unlock(&state_lock);
		if (remembered)
			v = soft;
		else if (v == 0)
			v = OE_UNLIMITED;
	}
	put_v1(c, out, v);
	return 0;
}

static int soft_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	uint64_t v;
	int r = parse_v1_memory(c, buf, len, &v);
	if (r)
		return r;
	if (c->is_root)
		return EINVAL; /* v2's root has no memory.low */
	uint64_t low = v == OE_UNLIMITED ? 0 : v;
	r = kwrite_u64(c->dirfd, "memory.low", low);
	if (r < 0)
		return -r;
	g_mutex_lock(&state_lock);
	v1_state *s = state_get_locked(c->id, true);
	s->have_soft = true;
	s->soft = v;
	s->soft_low = low;
	g_mutex_unlock(&state_lock);
	return 0;
}

static int use_hierarchy_read(const fs_synth_ctx *c, GString *out)
{
	(void)c;
	g_string_append(out, "1\n");
	return 0;
}

static int use_hierarchy_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	(void)c;
	uint64_t v;
	int r = od_parse_u64(buf, len, UINT64_MAX, &v);
	if (r)
		return r;
	return v == 1 ? 0 : EINVAL; /* non-hierarchical mode is gone since 5.11 */
}

/* ---- memory.stat with v1 names ---- */

enum { ST_PAGES, ST_EVENT, ST_SWAP };
static const struct {
	const char *v1, *v2;
	int kind;
} stat_map[] = {
	{ "cache", "file", ST_PAGES },
	{ "rss", "anon", ST_PAGES },
	{ "rss_huge", "anon_thp", ST_PAGES },
	{ "shmem", "shmem", ST_PAGES },
	{ "mapped_file", "file_mapped", ST_PAGES },
	{ "dirty", "file_dirty", ST_PAGES },
	{ "writeback", "file_writeback", ST_PAGES },
	{ "workingset_refault_anon", "workingset_refault_anon", ST_EVENT },
	{ "workingset_refault_file", "workingset_refault_file", ST_EVENT },
	{ "swap", NULL, ST_SWAP },
	/* pgpgin, pgpgout: not counted by v2 (see docs/V1-LAYOUT.md) */
	{ "pgfault", "pgfault", ST_EVENT },
	{ "pgmajfault", "pgmajfault", ST_EVENT },
	{ "inactive_anon", "inactive_anon", ST_PAGES },
	{ "active_anon", "active_anon", ST_PAGES },
	{ "inactive_file", "inactive_file", ST_PAGES },
	{ "active_file", "active_file", ST_PAGES },
	{ "unevictable", "unevictable", ST_PAGES },
};
#define N_STAT G_N_ELEMENTS(stat_map)

typedef struct {
	uint64_t v[N_STAT];
	bool have[N_STAT];
} v1_stat;

/* The hierarchical counters of one real cgroup directory. */
static int stat_of(int dirfd, bool swap_acct, v1_stat *st)
{
	memset(st, 0, sizeof *st);
	GString *s = g_string_new(NULL);
	int r = slurp(dirfd, "memory.stat", s);
	if (r) {
		g_string_free(s, TRUE);
		return r;
	}
	char *save = NULL;
	for (char *line = strtok_r(s->str, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');
		if (!sp)
			continue;
		*sp = 0;
		for (size_t i = 0; i < N_STAT; i++) {
			if (stat_map[i].v2 && strcmp(stat_map[i].v2, line) == 0) {
				st->v[i] = g_ascii_strtoull(sp + 1, NULL, 10);
				st->have[i] = true;
			}
		}
	}
	g_string_free(s, TRUE);
	for (size_t i = 0; i < N_STAT; i++) {
		if (stat_map[i].kind == ST_SWAP && swap_acct) {
			uint64_t v = 0;
			if (has_file(dirfd, "memory.swap.current"))
				(void)rd(dirfd, "memory.swap.current", &v);
			st->v[i] = v;
			st->have[i] = true;
		}
	}
	return 0;
}

/* min over this cgroup and its ancestors of L (or L + swap.max) */
static void hier_limits(const fs_synth_ctx *c, uint64_t *mem, uint64_t *memsw)
{
	*mem = *memsw = OE_UNLIMITED;
	int fd = fcntl(c->dirfd, F_DUPFD_CLOEXEC, 3);
	for (int depth = 0; fd >= 0 && depth < 64 && has_file(fd, "memory.max"); depth++) {
		struct stat st;
		uint64_t l = OE_UNLIMITED, sm = OE_UNLIMITED;
		oe_view v;
		if (fstat(fd, &st) == 0 && c->ctl && od_controller_view(c->ctl, st.st_ino, &v))
			l = v.limit;
		else
			(void)rd(fd, "memory.max", &l);
		if (has_file(fd, "memory.swap.max"))
			(void)rd(fd, "memory.swap.max", &sm);
		*mem = MIN(*mem, l);
		if (l != OE_UNLIMITED && sm != OE_UNLIMITED)
			*memsw = MIN(*memsw, l + sm);
		int up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = up;
	}
	if (fd >= 0)
		close(fd);
}

static int stat_read(const fs_synth_ctx *c, GString *out)
{
	/* v1 shows swap where it accounts swap; v2 has memory.swap.* then (not in its root) */
	bool swap_acct = !c->is_root && has_file(c->dirfd, "memory.swap.current");
	v1_stat total, local;
	int r = stat_of(c->dirfd, swap_acct, &total);
	if (r)
		return r;
	local = total;
	/* v2 counts hierarchically; v1's plain keys are this cgroup's own: subtract the children */
	int dfd = openat(c->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dp = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!dp && dfd >= 0)
		close(dfd);
	struct dirent *de;
	while (dp && (de = readdir(dp)) != NULL) {
		if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		int cfd = openat(dirfd(dp), de->d_name, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (cfd < 0)
			continue;
		v1_stat ch;
		if (has_file(cfd, "memory.stat") && stat_of(cfd, swap_acct, &ch) == 0)
			for (size_t i = 0; i < N_STAT; i++)
				local.v[i] = local.v[i] >= ch.v[i] ? local.v[i] - ch.v[i] : 0;
		close(cfd);
	}
	if (dp)
		closedir(dp);

	uint64_t mem, memsw;
	hier_limits(c, &mem, &memsw);
	uint64_t u = v1_unlimited(c);
	for (size_t i = 0; i < N_STAT; i++)
		if (total.have[i])
			g_string_append_printf(out, "%s %" PRIu64 "\n", stat_map[i].v1, local.v[i]);
	g_string_append_printf(out, "hierarchical_memory_limit %" PRIu64 "\n", MIN(mem, u));
	if (swap_acct)
		g_string_append_printf(out, "hierarchical_memsw_limit %" PRIu64 "\n", MIN(memsw, u));
	for (size_t i = 0; i < N_STAT; i++)
		if (total.have[i])
			g_string_append_printf(out, "total_%s %" PRIu64 "\n", stat_map[i].v1, total.v[i]);
	return 0;
}

/* ---- tasks and cgroup.procs: v1 lists sorted, without duplicates ---- */

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

static int pids_read(const fs_synth_ctx *c, const char *real, GString *out)
{
	int fd = openat(c->dirfd, real, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	fs_synth_ctx cc = *c;
	cc.fd = fd;
	GString *raw = g_string_new(NULL);
	int r = fs_procs_read(&cc, raw); /* pids in the caller's namespace */
	if (r == FS_SYN_PASS) {
		g_string_truncate(raw, 0);
		r = slurp(c->dirfd, real, raw);
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

static int tasks_read(const fs_synth_ctx *c, GString *out)
{
	return pids_read(c, "cgroup.threads", out);
}

static int procs_read(const fs_synth_ctx *c, GString *out)
{
	return pids_read(c, "cgroup.procs", out);
}

/* Writes go through the real files opened at open time as the opener (the
 * kernel checks delegation and the cgroup-namespace boundary against the
 * opener, as it does for the real v1 tasks and cgroup.procs since 5.16), with
 * pids translated from the writer's pid namespace (pids.c). */
static int tasks_write(const fs_synth_ctx *c, const char *buf, size_t len);

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
	return pids_open(c, who, flags, fd, fd2, s->write == tasks_write);
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
static int tasks_write(const fs_synth_ctx *c, const char *buf, size_t len)
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

static int procs_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	return fs_procs_write(c, buf, len);
}

/* ---- memsw: memory + swap ---- */

static int memsw_limit_of(const fs_synth_ctx *c, uint64_t *v)
{
	uint64_t l, sm;
	int r;
	*v = OE_UNLIMITED;
	if (c->is_root)
		return 0;
	if ((r = limit_of(c, &l)) || (r = swap_max_of(c, &sm)))
		return r;
	*v = (l == OE_UNLIMITED || sm == OE_UNLIMITED) ? OE_UNLIMITED : l + sm;
	return 0;
}

static int memsw_limit_read(const fs_synth_ctx *c, GString *out)
{
	uint64_t v;
	int r = memsw_limit_of(c, &v);
	if (r)
		return r;
	put_v1(c, out, v);
	return 0;
}

static int memsw_limit_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	uint64_t v, l;
	int r = parse_v1_memory(c, buf, len, &v);
	if (r)
		return r;
	if (c->is_root)
		return EINVAL;
	if ((r = limit_of(c, &l)))
		return r;
	/* v1: memsw.limit below limit is EINVAL */
	if (v != OE_UNLIMITED && (l == OE_UNLIMITED || v < l))
		return EINVAL;
	r = kwrite_u64(c->dirfd, "memory.swap.max", v == OE_UNLIMITED ? OE_UNLIMITED : v - l);
	return r < 0 ? -r : 0;
}

static int memsw_usage_of(const fs_synth_ctx *c, bool peak, uint64_t *v)
{
	uint64_t m, s = 0;
	if (c->is_root)
		return usage_of(c, v); /* v2 has no swap counter at the root */
	int r = peak ? peak_of(c, false, &m) : rd(c->dirfd, "memory.current", &m);
	if (!r)
		r = peak ? peak_of(c, true, &s) : rd(c->dirfd, "memory.swap.current", &s);
	*v = m + s;
	return r;
}

static int memsw_usage_read(const fs_synth_ctx *c, GString *out)
{
	uint64_t v;
	int r = memsw_usage_of(c, false, &v);
	if (r)
		return r;
	put_v1(c, out, v);
	return 0;
}

static int memsw_max_usage_read(const fs_synth_ctx *c, GString *out)
{
	uint64_t v;
	int r = memsw_usage_of(c, true, &v);
	if (r)
		return r;
	put_v1(c, out, v);
	return 0;
}

static int memsw_max_usage_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	(void)buf;
	(void)len;
	reset_peak(c, false);
	return reset_peak(c, true);
}

static int memsw_failcnt_read(const fs_synth_ctx *c, GString *out)
{
	return failcnt_show(c, true, out);
}

static int memsw_failcnt_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	(void)buf;
	(void)len;
	return failcnt_reset(c, true);
}

/* v1 reclaims everything it can and answers 0 (EINVAL in the root); v2's
 * memory.reclaim (5.19+) does the reclaim and says EAGAIN when it fell short. */
static int force_empty_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	(void)buf;
	(void)len;
	if (c->is_root)
		return EINVAL;
	uint64_t u;
	int r = rd(c->dirfd, "memory.current", &u);
	if (r)
		return r;
	if (u == 0)
		return 0;
	r = kwrite_u64(c->dirfd, "memory.reclaim", u);
	return r == -EAGAIN || r == 0 ? 0 : -r;
}

/* ---- the table ---- */

/* Indices 0..2 are the v2 table's synthetic files (synthetic.c), reused as they
 * are; ours start at 3. Modes are v1's (0444 for read-only files); each file shows
 * the owner and permission bits of the v2 file it writes (fs_synth_attr), and a
 * write follows that file's rules. Resets of counters the daemon keeps (failcnt,
 * max_usage: what every reader of the shadow sees) and use_hierarchy follow
 * memory.max, as v1 gave them the owner of the limit (root's 0644 unless
 * delegated); memory.peak would not do: 0444 on 6.1. */
#define R FS_SYN_ROOT
static const fs_synth v1_table[] = {
	{ "memory.limit_in_bytes", 0644, R, 3, limit_read, limit_write, "memory.max" },
	{ "memory.usage_in_bytes", 0444, R, 4, usage_read, NULL, "memory.current" },
	{ "memory.max_usage_in_bytes", 0644, R, 5, max_usage_read, max_usage_write, "memory.max" },
	{ "memory.failcnt", 0644, R, 6, failcnt_read, failcnt_write, "memory.max" },
	{ "memory.soft_limit_in_bytes", 0644, R, 7, soft_read, soft_write, "memory.low" },
	{ "memory.stat", 0444, R, 8, stat_read, NULL, "memory.stat" },
	{ "memory.use_hierarchy", 0644, R, 9, use_hierarchy_read, use_hierarchy_write, "memory.max" },
	{ "tasks", 0644, R | FS_SYN_AS_CALLER, 10, tasks_read, tasks_write, "cgroup.threads" },
	{ "cgroup.procs", 0644, R | FS_SYN_AS_CALLER, 11, procs_read, procs_write, "cgroup.procs" },
	{ "memory.memsw.limit_in_bytes", 0644, R | FS_V1_SWAP, 12, memsw_limit_read, memsw_limit_write,
	  "memory.swap.max" },
	{ "memory.memsw.usage_in_bytes", 0444, R | FS_V1_SWAP, 13, memsw_usage_read, NULL,
	  "memory.swap.current" },
	{ "memory.memsw.max_usage_in_bytes", 0644, R | FS_V1_SWAP, 14, memsw_max_usage_read,
	  memsw_max_usage_write, "memory.max" },
	/* index 15 and up: the preferred node id spills into the next directory's
	 * slots; inodes.c falls back to a counter id when such an id is taken */
	{ "memory.memsw.failcnt", 0644, R | FS_V1_SWAP, 15, memsw_failcnt_read, memsw_failcnt_write,
	  "memory.max" },
	/* v1 has it in every cgroup but refuses it in the root */
	{ "memory.force_empty", 0200, R, 16, NULL, force_empty_write, "memory.reclaim" },
};
#undef R
#define N_SHARED 3u

const fs_synth *fs_layout_at(bool v1, unsigned index)
{
	if (!v1)
		return fs_synth_at(index);
	if (index < N_SHARED)
		return fs_synth_at(index);
	index -= N_SHARED;
	return index < G_N_ELEMENTS(v1_table) ? &v1_table[index] : NULL;
}

unsigned fs_layout_count(bool v1)
{
	return v1 ? N_SHARED + G_N_ELEMENTS(v1_table) : fs_synth_count();
}

const fs_synth *fs_layout_find(bool v1, const char *name)
{
	if (!v1)
		return fs_synth_find(name);
	for (unsigned i = 0; i < fs_layout_count(true); i++) {
		const fs_synth *s = fs_layout_at(true, i);
		if (strcmp(s->name, name) == 0)
			return s;
	}
	return NULL;
}

bool fs_layout_present(bool v1, const fs_synth *s, fs_memcg_kind kind, int dirfd)
{
	if (!fs_synth_present(s, kind))
		return false;
	if (v1 && (s->flags & FS_V1_SWAP))
		return kind == FS_MEMCG_ROOT || has_file(dirfd, "memory.swap.current");
	return true;
}

void fs_v1_before_mkdir(fuse_req_t req, int parent_dirfd)
{
	if (fs_memcg_kind_of(parent_dirfd, true) == FS_MEMCG_NONE)
		return; /* no memory controller here: nothing to pass on */
	/* the daemon writes as root: only for a caller who may write it (the
	 * owner of a delegated cgroup may, one who can only make directories not) */
	struct stat st;
	g_autoptr(fs_caller) who = fs_caller_new(req);
	if (fstatat(parent_dirfd, "cgroup.subtree_control", &st, 0) < 0 ||
	    fs_caller_permission(who, &st, W_OK) != 0)
		return;
	GString *s = g_string_new(NULL);
	if (slurp(parent_dirfd, "cgroup.subtree_control", s) == 0 && !strstr(s->str, "memory")) {
		int r = kwrite_str(parent_dirfd, "cgroup.subtree_control", "+memory");
		if (r < 0)
			g_message("v1 layout: cannot enable +memory for a new cgroup: %s", g_strerror(-r));
	}
	g_string_free(s, TRUE);
}
