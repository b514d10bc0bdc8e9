/* v1stat.c — the v1 layout's memory.stat: v2's counters under v1's names, this
 * cgroup's own (v2 counts hierarchically: the children are subtracted) and the
 * total_ ones, with the hierarchical limits. Contract: v1files.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "oomd/engine.h"
#include "cgroup.h"
#include "oomd/kernel_io.h"
#include "v1files.h"

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

static void stat_key(void *ud, const char *key, size_t kl, uint64_t v)
{
	v1_stat *st = ud;
	for (size_t i = 0; i < N_STAT; i++) {
		if (stat_map[i].v2 && strlen(stat_map[i].v2) == kl && memcmp(stat_map[i].v2, key, kl) == 0) {
			st->v[i] = v;
			st->have[i] = true;
		}
	}
}

/* The hierarchical counters of one real cgroup directory. 0 or errno. */
static int stat_of(int dirfd, bool swap_acct, v1_stat *st)
{
	memset(st, 0, sizeof *st);
	g_autoptr(GString) s = g_string_new(NULL);
	int r = od_kio_read_all(dirfd, "memory.stat", s);
	if (r == 0)
		r = od_kio_parse_kv(s->str, s->len, stat_key, st);
	if (r)
		return -r;
	for (size_t i = 0; i < N_STAT; i++) {
		if (stat_map[i].kind == ST_SWAP && swap_acct) {
			uint64_t v = 0;
			if (od_kio_exists(dirfd, "memory.swap.current"))
				(void)od_kio_read_u64(dirfd, "memory.swap.current", &v);
			st->v[i] = v;
			st->have[i] = true;
		}
	}
	return 0;
}

/* min over this cgroup and its ancestors of L (or L + swap.max). The cgroup is
 * reached as every handler reaches it (fs_cg_view), which adds its unknown
 * ancestors too; an ancestor the controller does not manage (above the served
 * tree) has the kernel's memory.max as its limit. */
static void hier_limits(const fs_synth_ctx *c, uint64_t *mem, uint64_t *memsw)
{
	oe_view self;
	bool have_self = fs_cg_view(c, &self) == 0;
	*mem = *memsw = OE_UNLIMITED;
	int fd = fcntl(c->dirfd, F_DUPFD_CLOEXEC, 3);
	for (int depth = 0; fd >= 0 && depth < 64 && od_kio_exists(fd, "memory.max"); depth++) {
		struct stat st;
		uint64_t l = OE_UNLIMITED, sm = OE_UNLIMITED;
		oe_view v;
		if (depth == 0 && have_self)
			l = self.limit;
		else if (depth > 0 && fstat(fd, &st) == 0 && c->ctl && od_controller_view(c->ctl, st.st_ino, &v))
			l = v.limit;
		else
			(void)od_kio_read_u64(fd, "memory.max", &l);
		if (od_kio_exists(fd, "memory.swap.max"))
			(void)od_kio_read_u64(fd, "memory.swap.max", &sm);
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

int fs_v1_stat_read(const fs_synth_ctx *c, GString *out)
{
	/* v1 shows swap where it accounts swap; v2 has memory.swap.* then (not in its root) */
	bool swap_acct = !c->is_root && od_kio_exists(c->dirfd, "memory.swap.current");
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
		if (od_kio_exists(cfd, "memory.stat") && stat_of(cfd, swap_acct, &ch) == 0)
			for (size_t i = 0; i < N_STAT; i++)
				local.v[i] = local.v[i] >= ch.v[i] ? local.v[i] - ch.v[i] : 0;
		close(cfd);
	}
	if (dp)
		closedir(dp);

	uint64_t mem, memsw;
	hier_limits(c, &mem, &memsw);
	uint64_t u = fs_v1_unlimited(c->page_size);
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
