/* synthetic.c — the table of files that are not plain pass-through: the
 * synthetic files of SEMANTICS.md and the virtualised memory.max/memory.high,
 * each with its read and write handler. Parsing and formats come from parse.h
 * so that every client sees the errno cgroup v1 gave for the same bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>

#include "cgroup.h"
#include "v1files.h"
#include "fs_private.h"
#include "oomd/kernel_io.h"
#include "oomd/engine.h"
#include "oomd/parse.h"

static int delay_read(const fs_synth_ctx *c, GString *out)
{
	oe_view v;
	int r = fs_cg_view(c, &v);
	if (r)
		return r;
	g_string_append_printf(out, "%" PRIu64 "\n", v.delay_ms);
	return 0;
}

static int delay_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	uint64_t ms;
	int r = od_parse_u64(buf, len, OE_MAX_DELAY_MS, &ms);
	if (r)
		return r;
	return fs_cg_write(c, FS_CG_DELAY, ms, -1);
}

static int control_read(const fs_synth_ctx *c, GString *out)
{
	oe_view v;
	int r = fs_cg_view(c, &v);
	if (r)
		return r;
	char buf[128];
	size_t len = od_format_oom_control(v.disable, v.under_oom, v.oom_kill, buf, sizeof buf);
	g_string_append_len(out, buf, (gssize)MIN(len, sizeof buf));
	return 0;
}

static int control_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	uint64_t v;
	int r = od_parse_u64(buf, len, UINT64_MAX, &v);
	if (r)
		return r;
	/* cgroup v1 parses first, then refuses the root and values other than 0/1. */
	if (c->is_root || v > 1)
		return EINVAL;
	return fs_cg_write(c, FS_CG_DISABLE, v, -1);
}

static int event_control_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	int efd, cfd;
	size_t off, alen;
	int r = od_parse_event_control_args(buf, len, &efd, &cfd, &off, &alen);
	if (r)
		return r;
	/* the writer's right to read the control file (v1's file_permission(cfile,
	 * MAY_READ)) is checked once the file is known (event_control.c) */
	return fs_event_control_register(c, efd, cfd, buf + off, alen);
}

static int memory_read(const fs_synth_ctx *c, bool high, GString *out)
{
	oe_view v;
	int r = fs_cg_view(c, &v);
	if (r)
		return r;
	char buf[32];
	size_t len = od_format_memory(high ? v.user_high : v.limit, buf, sizeof buf);
	g_string_append_len(out, buf, (gssize)MIN(len, sizeof buf));
	return 0;
}

static int max_read(const fs_synth_ctx *c, GString *out)
{
	return memory_read(c, false, out);
}

static int high_read(const fs_synth_ctx *c, GString *out)
{
	return memory_read(c, true, out);
}

static int memory_write(const fs_synth_ctx *c, bool high, const char *buf, size_t len)
{
	uint64_t bytes;
	int r = od_parse_memory(buf, len, c->page_size, &bytes);
	if (r)
		return r;
	/* c->fd: the real file of this name, opened for the caller's write (file.c) */
	return fs_cg_write(c, high ? FS_CG_HIGH : FS_CG_LIMIT, bytes, c->fd);
}

static int max_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	return memory_write(c, false, buf, len);
}

static int high_write(const fs_synth_ctx *c, const char *buf, size_t len)
{
	return memory_write(c, true, buf, len);
}

static const fs_synth table[] = {
	/* both change what memory.max does: whoever may write memory.max may write them */
	{ "memory.oom_delay_millisecs", 0644, FS_SYN_ROOT, 0, delay_read, delay_write, "memory.max" },
	{ "memory.oom_control", 0644, FS_SYN_ROOT | FS_SYN_NOTIFY, 1, control_read, control_write,
	  "memory.max" },
	/* v1 had it in the root too; a listener there is legal, it just never fires.
	 * Mode 0222 for everyone, as v1's cftype (S_IWUGO); v1 checks at the write that
	 * the writer may read the control file (memcg_write_event_control) */
	{ "cgroup.event_control", 0222, FS_SYN_ROOT, 2, NULL, event_control_write, NULL },
	{ "memory.max", 0, FS_SYN_VIRTUAL, 3, max_read, max_write, NULL },
	{ "memory.high", 0, FS_SYN_VIRTUAL, 4, high_read, high_write, NULL },
	/* pids are shown and taken in the caller's pid namespace (pids.c) */
	{ "cgroup.procs", 0, FS_SYN_VIRTUAL | FS_SYN_AS_CALLER, 5, fs_procs_read, fs_procs_write, NULL },
	{ "cgroup.threads", 0, FS_SYN_VIRTUAL | FS_SYN_AS_CALLER, 6, fs_procs_read, fs_threads_write, NULL },
	/* v1's control files of thresholds and pressure levels (event_control.c), where a
	 * v1 client looks for them; no v2 file has these names. usage_in_bytes shows what
	 * the v1 layout's does (memory.current; the root's anon + file). pressure_level has
	 * no handler and mode 0, as v1's cftype; present where the kernel has PSI. */
	{ "memory.usage_in_bytes", 0444, FS_SYN_ROOT, 7, fs_v1_usage_read, NULL, "memory.current" },
	{ "memory.pressure_level", 0, FS_SYN_ROOT | FS_SYN_PSI, 8, NULL, NULL, "memory.pressure" },
};

G_STATIC_ASSERT(G_N_ELEMENTS(table) < (1u << FS_SYN_SHIFT));

const fs_synth *fs_synth_at(unsigned index)
{
	return index < G_N_ELEMENTS(table) ? &table[index] : NULL;
}

unsigned fs_synth_count(void)
{
	return G_N_ELEMENTS(table);
}

fs_memcg_kind fs_memcg_kind_of(int dirfd, bool is_root)
{
	if (od_kio_exists(dirfd, "memory.max"))
		return FS_MEMCG_CHILD;
	/* The root cgroup has no memory.max; memory.stat says the controller is on this hierarchy. */
	if (is_root && od_kio_exists(dirfd, "memory.stat"))
		return FS_MEMCG_ROOT;
	return FS_MEMCG_NONE;
}

/* Keeps of the real file's mode the permission bits, less the directions the
 * synthetic file does not have at all (its table mode has no read or no write). */
static mode_t perm_bits(mode_t real, mode_t table)
{
	mode_t m = real & 0777;
	if (!(table & 0444))
		m &= ~(mode_t)0444;
	if (!(table & 0222))
		m &= ~(mode_t)0222;
	return m;
}

int fs_synth_attr(int dirfd, const fs_synth *s, struct stat *st)
{
	struct stat real;
	if (fstat(dirfd, st) < 0)
		return errno;
	mode_t mode = s->mode;
	if (s->attr_of) {
		/* the root cgroup has no memory.max: its files are root's, like memory.stat */
		if (fstatat(dirfd, s->attr_of, &real, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(real.st_mode))
			mode = perm_bits(real.st_mode, s->mode);
		else if (fstatat(dirfd, "memory.stat", &real, AT_SYMLINK_NOFOLLOW) < 0)
			return errno;
		st->st_uid = real.st_uid;
		st->st_gid = real.st_gid;
		st->st_atim = real.st_atim;
		st->st_mtim = real.st_mtim;
		st->st_ctim = real.st_ctim;
	}
	st->st_mode = S_IFREG | mode;
	st->st_nlink = 1;
	st->st_size = 0;
	st->st_blocks = 0;
	st->st_rdev = 0;
	return 0;
}

bool fs_synth_present(const fs_synth *s, fs_memcg_kind kind)
{
	if (s->flags & FS_SYN_VIRTUAL)
		return false; /* real files: present when the kernel says so */
	switch (kind) {
	case FS_MEMCG_CHILD:
		return true;
	case FS_MEMCG_ROOT:
		return (s->flags & FS_SYN_ROOT) != 0;
	default:
		return false;
	}
}
