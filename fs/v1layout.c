/* v1layout.c — the cgroup-v1 memory layout of the shadow tree (--layout v1): its
 * table of files and the layout-aware lookups (v1layout.h). Every file of the v1
 * view is synthetic: a v1 name served from the v2 files of the real cgroup (and
 * the user's L kept by the controller), in v1's formats and with v1's errno for
 * bad writes, by the handlers of v1memory.c, v1stat.c and v1tasks.c (v1files.h).
 * The real v2 files are hidden; directories (cgroups) pass through.
 * docs/V1-LAYOUT.md has the table.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>

#include "oomd/kernel_io.h"
#include "v1files.h"
#include "v1layout.h"

uint64_t fs_v1_unlimited(uint64_t page_size)
{
	uint64_t ps = page_size ? page_size : 4096;
	return ((uint64_t)LONG_MAX / ps) * ps; /* PAGE_COUNTER_MAX * PAGE_SIZE */
}

/* v1 prints page counts times PAGE_SIZE: "max" and anything at or above
 * PAGE_COUNTER_MAX pages is the unlimited value. */
void fs_v1_put(const fs_synth_ctx *c, GString *out, uint64_t bytes)
{
	uint64_t u = fs_v1_unlimited(c->page_size);
	g_string_append_printf(out, "%" PRIu64 "\n", bytes >= u ? u : bytes);
}

/* Indices 0..2 are the v2 table's synthetic files (synthetic.c), reused as they
 * are; ours start at 3. Modes are v1's (0444 for read-only files); each file shows
 * the owner and permission bits of the v2 file it writes (fs_synth_attr), and a
 * write follows that file's rules. Resets of counters the daemon keeps (failcnt,
 * max_usage: what every reader of the shadow sees) and use_hierarchy follow
 * memory.max, as v1 gave them the owner of the limit (root's 0644 unless
 * delegated); memory.peak would not do: 0444 on 6.1. */
#define R FS_SYN_ROOT
static const fs_synth v1_table[] = {
	{ "memory.limit_in_bytes", 0644, R, 3, fs_v1_limit_read, fs_v1_limit_write, "memory.max" },
	{ "memory.usage_in_bytes", 0444, R, 4, fs_v1_usage_read, NULL, "memory.current" },
	{ "memory.max_usage_in_bytes", 0644, R, 5, fs_v1_max_usage_read, fs_v1_max_usage_write, "memory.max" },
	{ "memory.failcnt", 0644, R, 6, fs_v1_failcnt_read, fs_v1_failcnt_write, "memory.max" },
	{ "memory.soft_limit_in_bytes", 0644, R, 7, fs_v1_soft_read, fs_v1_soft_write, "memory.low" },
	{ "memory.stat", 0444, R, 8, fs_v1_stat_read, NULL, "memory.stat" },
	{ "memory.use_hierarchy", 0644, R, 9, fs_v1_use_hierarchy_read, fs_v1_use_hierarchy_write, "memory.max" },
	{ "tasks", 0644, R | FS_SYN_AS_CALLER, 10, fs_v1_tasks_read, fs_v1_tasks_write, "cgroup.threads" },
	{ "cgroup.procs", 0644, R | FS_SYN_AS_CALLER, 11, fs_v1_procs_read, fs_v1_procs_write, "cgroup.procs" },
	{ "memory.memsw.limit_in_bytes", 0644, R | FS_V1_SWAP, 12, fs_v1_memsw_limit_read, fs_v1_memsw_limit_write,
	  "memory.swap.max" },
	{ "memory.memsw.usage_in_bytes", 0444, R | FS_V1_SWAP, 13, fs_v1_memsw_usage_read, NULL,
	  "memory.swap.current" },
	{ "memory.memsw.max_usage_in_bytes", 0644, R | FS_V1_SWAP, 14, fs_v1_memsw_max_usage_read,
	  fs_v1_memsw_max_usage_write, "memory.max" },
	{ "memory.memsw.failcnt", 0644, R | FS_V1_SWAP, 15, fs_v1_memsw_failcnt_read, fs_v1_memsw_failcnt_write,
	  "memory.max" },
	/* v1 has it in every cgroup but refuses it in the root */
	{ "memory.force_empty", 0200, R, 16, NULL, fs_v1_force_empty_write, "memory.reclaim" },
	/* no read or write handler in v1 (cgroup_file_mode: mode 0); a control file of
	 * cgroup.event_control only (event_control.c). Where the kernel has PSI. */
	{ "memory.pressure_level", 0, R | FS_SYN_PSI, 17, NULL, NULL, "memory.pressure" },
};
#undef R
#define N_SHARED 3u
/* every index has its synthetic node id (ids.h) */
G_STATIC_ASSERT(N_SHARED + G_N_ELEMENTS(v1_table) < (1u << FS_SYN_SHIFT));

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

/* A lookup of every name a walk meets (memory.current, memory.stat, ...) asks here, and most
 * miss: one hash lookup per layout in place of a strcmp per entry (nine to fifteen; callgrind
 * of the all-files read, 2026-12-06: 350 instructions a lookup, 5% of the daemon's). Built
 * once, read-only after, so workers look up without a lock. */
static GHashTable *by_name(bool v1)
{
	static gsize done[2];
	static GHashTable *tables[2];
	if (g_once_init_enter(&done[v1])) {
		GHashTable *t = g_hash_table_new(g_str_hash, g_str_equal);
		for (unsigned i = 0; i < fs_layout_count(v1); i++) {
			const fs_synth *s = fs_layout_at(v1, i);
			if (!g_hash_table_contains(t, s->name)) /* the first of a name, as a scan found */
				g_hash_table_insert(t, (gpointer)s->name, (gpointer)s);
		}
		tables[v1] = t;
		g_once_init_leave(&done[v1], 1);
	}
	return tables[v1];
}

const fs_synth *fs_layout_find(bool v1, const char *name)
{
	return g_hash_table_lookup(by_name(v1), name);
}

bool fs_layout_present(bool v1, const fs_synth *s, fs_memcg_kind kind, int dirfd)
{
	if (!fs_synth_present(s, kind))
		return false;
	if (v1 && (s->flags & FS_V1_SWAP))
		return kind == FS_MEMCG_ROOT || od_kio_exists(dirfd, "memory.swap.current");
	if (s->flags & FS_SYN_PSI)
		return od_kio_exists(dirfd, "memory.pressure");
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
	g_autoptr(GString) s = g_string_new(NULL);
	if (od_kio_read_all(parent_dirfd, "cgroup.subtree_control", s) == 0 && !strstr(s->str, "memory")) {
		int r = od_kio_try_write_str(parent_dirfd, "cgroup.subtree_control", "+memory");
		if (r < 0)
			g_message("v1 layout: cannot enable +memory for a new cgroup: %s", g_strerror(-r));
	}
}
