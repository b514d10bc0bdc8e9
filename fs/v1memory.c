/* v1memory.c — the v1 layout's memory files (limit, usage, max_usage, failcnt,
 * soft limit, use_hierarchy, force_empty and the memsw ones) served from the
 * cgroup's v2 files and the user's L the controller keeps. Contracts: v1files.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <unistd.h>

#include "cgroup.h"
#include "ec_bounds.h"
#include "fdguard.h"
#include "oomd/engine.h"
#include "oomd/kernel_io.h"
#include "oomd/parse.h"
#include "v1files.h"
#include "v1parse.h"
#include "v1state.h"

/* The user's limit L, as the controller keeps it (the real memory.max is the
 * kernel's, raised during a hold). */
static int limit_of(const fs_synth_ctx *c, uint64_t *l)
{
	oe_view v;
	int r = fs_cg_view(c, &v);
	if (!r)
		*l = v.limit;
	return r;
}

int fs_v1_limit_read(const fs_synth_ctx *c, GString *out)
{
	uint64_t l = OE_UNLIMITED;
	if (!c->is_root) {
		int r = limit_of(c, &l);
		if (r)
			return r;
	}
	fs_v1_put(c, out, l);
	return 0;
}

static int swap_max_of(const fs_synth_ctx *c, uint64_t *sm)
{
	*sm = OE_UNLIMITED;
	if (!od_kio_exists(c->dirfd, "memory.swap.max"))
		return 0;
	return -od_kio_read_u64(c->dirfd, "memory.swap.max", sm);
}

/* How long a limit write may keep reclaiming after its first round (fit_under), and
 * the most one memory.reclaim write asks for: the kernel's memory_reclaim() loops until
 * it has reclaimed what was asked, refaulted pages counted again, and stops early only
 * at the writer's signal, which a FUSE worker never gets; one write of 188 MiB under a
 * workload faulting it back ran past 20 s on 7 (s-v1fit). v1 reclaims in batches of 32
 * pages and looks again between them. */
#define FS_V1_FIT_MS 2000
#define FS_V1_RECLAIM_CHUNK (16ULL << 20)

/* Reclaims c's usage down to target through memory.reclaim, in chunks of
 * FS_V1_RECLAIM_CHUNK, looking at the usage between them, as v1 did in batches with
 * MAX_RECLAIM_RETRIES (16) rounds without progress allowed. 0 once the usage is at or
 * under target; EBUSY at the stalls-th round without progress (the usage did not
 * fall, or the write failed other than EAGAIN); ETIMEDOUT when FS_V1_FIT_MS have passed since the first round; EINTR at
 * the writer's signal (FUSE_INTERRUPT); or the errno of reading memory.current. The
 * time bound is why this loop exists at all: a workload that faults its pages back as
 * fast as they are reclaimed makes progress every round, and without it a write never
 * ended and held a FUSE worker (round three, s-v1fit). Blocks the calling FUSE worker. */
static int reclaim_to(const fs_synth_ctx *c, uint64_t target, int stalls)
{
	gint64 until = g_get_monotonic_time() + FS_V1_FIT_MS * G_TIME_SPAN_MILLISECOND;
	uint64_t u;
	int r = -od_kio_read_u64(c->dirfd, "memory.current", &u);
	for (int round = 0; !r && u > target; round++) {
		if (round > 0 && c->req && fuse_req_interrupted(c->req))
			return EINTR;
		if (round > 0 && g_get_monotonic_time() > until)
			return ETIMEDOUT;
		int w = od_kio_try_write_u64(c->dirfd, "memory.reclaim", MIN(u - target, FS_V1_RECLAIM_CHUNK));
		uint64_t before = u;
		r = -od_kio_read_u64(c->dirfd, "memory.current", &u);
		/* EAGAIN is memory_reclaim()'s "less than asked": progress if the usage fell */
		if (((w < 0 && w != -EAGAIN) || (!r && u >= before)) && --stalls <= 0)
			return EBUSY;
	}
	return r;
}

/* v1's mem_cgroup_resize_max(): a limit is never set below the usage. It reclaims
 * towards the new limit and gives up with EBUSY after MAX_RECLAIM_RETRIES rounds
 * without progress, leaving the old limit; v2 would OOM-kill instead. v1 also stops
 * when the writer takes a signal (EINTR); past FS_V1_FIT_MS this gives up as v1 does
 * when it runs out of retries (EBUSY, the old limit kept). */
static int fit_under(const fs_synth_ctx *c, uint64_t bytes)
{
	if (bytes == OE_UNLIMITED || !od_kio_exists(c->dirfd, "memory.reclaim"))
		return 0;
	int r = reclaim_to(c, bytes, 16);
	return r == ETIMEDOUT ? EBUSY : r;
}

int fs_v1_limit_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	uint64_t bytes, old, sm;
	int r = fs_v1_parse_memory(c->page_size, buf, len, &bytes);
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
		r = fs_cg_write(c, FS_CG_LIMIT, bytes, -1);
		if (r)
			return r;
		r = od_kio_try_write_u64(c->dirfd, "memory.swap.max", memsw - bytes);
		return r < 0 ? -r : 0;
	}
	return fs_cg_write(c, FS_CG_LIMIT, bytes, -1);
}

/* v1's mem_cgroup_usage(): the page counter, and for the root (never charged)
 * file + anon pages of its statistics. */
static int usage_of(const fs_synth_ctx *c, uint64_t *u)
{
	if (!c->is_root)
		return -od_kio_read_u64(c->dirfd, "memory.current", u);
	uint64_t file, anon;
	int r = -od_kio_read_key(c->dirfd, "memory.stat", "file", &file);
	if (!r)
		r = -od_kio_read_key(c->dirfd, "memory.stat", "anon", &anon);
	*u = file + anon;
	return r;
}

static int memsw_usage_of(const fs_synth_ctx *c, bool peak, uint64_t *v);

int fs_v1_usage_value(const fs_synth_ctx *c, bool memsw, uint64_t *v)
{
	return memsw ? memsw_usage_of(c, false, v) : usage_of(c, v);
}

int fs_v1_usage_read(const fs_synth_ctx *c, GString *out)
{
	uint64_t u;
	int r = usage_of(c, &u);
	if (r)
		return r;
	fs_v1_put(c, out, u);
	return 0;
}

/* memory.peak (or memory.swap.peak): through the descriptor that a v1 reset left,
 * else the file; a kernel without it gives the current usage. */
static int peak_of(const fs_synth_ctx *c, bool swap, uint64_t *v)
{
	const char *peak = swap ? "memory.swap.peak" : "memory.peak";
	int r = fs_v1state_read_peak(c->id, swap, v);
	if (r != -ENOENT)
		return -r;
	if (od_kio_exists(c->dirfd, peak))
		return -od_kio_read_u64(c->dirfd, peak, v);
	return swap ? -od_kio_read_u64(c->dirfd, "memory.swap.current", v) : usage_of(c, v);
}

int fs_v1_max_usage_read(const fs_synth_ctx *c, GString *out)
{
	uint64_t v;
	int r = c->is_root ? usage_of(c, &v) : peak_of(c, false, &v);
	if (r)
		return r;
	fs_v1_put(c, out, v);
	return 0;
}

/* Who a kept descriptor is counted against (v1state.h): the writer's principal. */
static uint64_t resetter(const fs_synth_ctx *c)
{
	if (!c->req)
		return 0; /* the daemon's own call (tests, adoption): root's */
	g_autoptr(fs_caller) who = fs_caller_new(c->req);
	return ec_principal(who->init_userns, (uint64_t)who->userns, fuse_req_ctx(c->req)->uid);
}

/* v1 resets the watermark whatever was written. Since 6.12 a write to
 * memory.peak resets it for that open file only: we keep that file open and read
 * through it. Older kernels cannot reset: the write is accepted, nothing changes.
 * A kept file is a descriptor of the daemon's for as long as the cgroup lives, so
 * it is counted against the writer (v1state.h: ENOMEM past its share) and never
 * takes a number of the kill path's reserve (EMFILE, as any request there). */
static int reset_peak(const fs_synth_ctx *c, bool swap)
{
	if (c->is_root)
		return 0;
	const char *peak = swap ? "memory.swap.peak" : "memory.peak";
	int fd = od_kio_open(c->dirfd, peak, O_RDWR);
	if (fd < 0)
		return 0;
	if (!fs_fd_within_budget(fd)) {
		close(fd);
		return EMFILE;
	}
	if (od_kio_fd_write_str(fd, "reset\n") < 0) {
		close(fd);
		return 0;
	}
	return fs_v1state_keep_peak(c->id, swap, fd, resetter(c));
}

int fs_v1_max_usage_write(const fs_synth_ctx *c, const char *buf, size_t len)
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
	return -od_kio_read_key(c->dirfd, swap ? "memory.swap.events" : "memory.events", "max", v);
}

static int failcnt_show(const fs_synth_ctx *c, bool swap, GString *out)
{
	uint64_t v;
	int r = events_max(c, swap, &v);
	if (r)
		return r;
	uint64_t base = fs_v1state_failcnt_base(c->id, swap);
	g_string_append_printf(out, "%" PRIu64 "\n", v >= base ? v - base : 0);
	return 0;
}

static int failcnt_reset(const fs_synth_ctx *c, bool swap)
{
	uint64_t v;
	int r = events_max(c, swap, &v);
	if (r)
		return r;
	fs_v1state_set_failcnt_base(c->id, swap, v);
	return 0;
}

int fs_v1_failcnt_read(const fs_synth_ctx *c, GString *out)
{
	return failcnt_show(c, false, out);
}

int fs_v1_failcnt_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	(void)buf;
	(void)len;
	return failcnt_reset(c, false);
}

/* soft limit <-> memory.low: both defaults mean "no preference" (v1: unlimited,
 * v2: 0), so unlimited is written as 0 and 0 reads as unlimited, unless the
 * user wrote 0 and memory.low is still what that write made it. */
int fs_v1_soft_read(const fs_synth_ctx *c, GString *out)
{
	uint64_t v = OE_UNLIMITED;
	if (!c->is_root) {
		int r = -od_kio_read_u64(c->dirfd, "memory.low", &v);
		if (r)
			return r;
		uint64_t soft;
		if (fs_v1state_soft(c->id, v, &soft))
			v = soft;
		else if (v == 0)
			v = OE_UNLIMITED;
	}
	fs_v1_put(c, out, v);
	return 0;
}

int fs_v1_soft_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	uint64_t v;
	int r = fs_v1_parse_memory(c->page_size, buf, len, &v);
	if (r)
		return r;
	if (c->is_root)
		return EINVAL; /* v2's root has no memory.low */
	uint64_t low = v == OE_UNLIMITED ? 0 : v;
	r = od_kio_try_write_u64(c->dirfd, "memory.low", low);
	if (r < 0)
		return -r;
	fs_v1state_set_soft(c->id, v, low);
	return 0;
}

int fs_v1_use_hierarchy_read(const fs_synth_ctx *c, GString *out)
{
	(void)c;
	g_string_append(out, "1\n");
	return 0;
}

int fs_v1_use_hierarchy_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	(void)c;
	uint64_t v;
	int r = od_parse_u64(buf, len, UINT64_MAX, &v);
	if (r)
		return r;
	return v == 1 ? 0 : EINVAL; /* non-hierarchical mode is gone since 5.11 */
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

int fs_v1_memsw_limit_read(const fs_synth_ctx *c, GString *out)
{
	uint64_t v;
	int r = memsw_limit_of(c, &v);
	if (r)
		return r;
	fs_v1_put(c, out, v);
	return 0;
}

int fs_v1_memsw_limit_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	uint64_t v, l;
	int r = fs_v1_parse_memory(c->page_size, buf, len, &v);
	if (r)
		return r;
	if (c->is_root)
		return EINVAL;
	if ((r = limit_of(c, &l)))
		return r;
	/* v1: memsw.limit below limit is EINVAL */
	if (v != OE_UNLIMITED && (l == OE_UNLIMITED || v < l))
		return EINVAL;
	r = od_kio_try_write_u64(c->dirfd, "memory.swap.max", v == OE_UNLIMITED ? OE_UNLIMITED : v - l);
	return r < 0 ? -r : 0;
}

static int memsw_usage_of(const fs_synth_ctx *c, bool peak, uint64_t *v)
{
	uint64_t m, s = 0;
	if (c->is_root)
		return usage_of(c, v); /* v2 has no swap counter at the root */
	int r = peak ? peak_of(c, false, &m) : -od_kio_read_u64(c->dirfd, "memory.current", &m);
	if (!r)
		r = peak ? peak_of(c, true, &s) : -od_kio_read_u64(c->dirfd, "memory.swap.current", &s);
	*v = m + s;
	return r;
}

int fs_v1_memsw_usage_read(const fs_synth_ctx *c, GString *out)
{
	uint64_t v;
	int r = memsw_usage_of(c, false, &v);
	if (r)
		return r;
	fs_v1_put(c, out, v);
	return 0;
}

int fs_v1_memsw_max_usage_read(const fs_synth_ctx *c, GString *out)
{
	uint64_t v;
	int r = memsw_usage_of(c, true, &v);
	if (r)
		return r;
	fs_v1_put(c, out, v);
	return 0;
}

int fs_v1_memsw_max_usage_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	(void)buf;
	(void)len;
	int r = reset_peak(c, false);
	return r ? r : reset_peak(c, true);
}

int fs_v1_memsw_failcnt_read(const fs_synth_ctx *c, GString *out)
{
	return failcnt_show(c, true, out);
}

int fs_v1_memsw_failcnt_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	(void)buf;
	(void)len;
	return failcnt_reset(c, true);
}

/* v1's mem_cgroup_force_empty() reclaims everything it can, giving up after 16 rounds
 * without progress, and answers 0 then too (EINVAL in the root; EINTR at the writer's
 * signal). Through memory.reclaim (5.19+), within FS_V1_FIT_MS. */
int fs_v1_force_empty_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	(void)buf;
	(void)len;
	if (c->is_root)
		return EINVAL;
	int r = reclaim_to(c, 0, 16);
	return r == EBUSY || r == ETIMEDOUT ? 0 : r;
}
