/* ctl_adopt.c — implements ctl_adopt.h. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "ctl_adopt.h"
#include "ctl_act.h"
#include "ctl_deadline.h"
#include "ctl_hooks.h"
#include "ctl_lock.h"
#include "ctl_table.h"
#include "oomd/kernel_io.h"
#include "oomd/persist.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t read_knob(int fd, const char *name)
{
	uint64_t v;
	return od_kio_read_u64(fd, name, &v) < 0 ? OE_UNLIMITED : v;
}

/* A removed cgroup's directory still opens through a descriptor held from before
 * the rmdir, but kernfs has taken its files away: cgroup.events is in every
 * non-root cgroup, with or without the memory controller. */
static bool cgroup_gone(int fd)
{
	return faccessat(fd, "cgroup.events", F_OK, 0) < 0 && (errno == ENOENT || errno == ENODEV);
}

static int add_at_depth(od_controller *c, const ctl_ctx *ctx, uint64_t parent_id, int dirfd,
			uint64_t *id_out,
			int depth);

/* A cgroup made directly in the real tree, with its parent, and used through the
 * shadow tree before the watcher saw the parent: add the ancestors first, so the
 * first write is not refused (ENODEV) for a cgroup that exists. Stops at the
 * file system's edge and at MAX_ANCESTRY levels. */
#define MAX_ANCESTRY 64
static int add_parent_of(od_controller *c, const ctl_ctx *ctx, int fd, int depth)
{
	if (depth >= MAX_ANCESTRY)
		return ENOENT;
	struct stat self, pst, gst;
	int pfd = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return errno;
	int gfd = openat(pfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int e = gfd < 0 ? errno : 0;
	if (!e && (fstat(fd, &self) < 0 || fstat(pfd, &pst) < 0 || fstat(gfd, &gst) < 0))
		e = errno;
	if (!e && (pst.st_dev != self.st_dev || gst.st_dev != self.st_dev || pst.st_ino == self.st_ino))
		e = ENOENT; /* climbed out of cgroupfs: not under the served root */
	if (!e)
		e = add_at_depth(c, ctx, gst.st_ino, pfd, NULL, depth + 1);
	if (gfd >= 0)
		close(gfd);
	close(pfd);
	return e;
}

int ctl_adopt(od_controller *c, const ctl_ctx *ctx, uint64_t parent_id, int dirfd,
	      uint64_t *id_out)
{
	return add_at_depth(c, ctx, parent_id, dirfd, id_out, 0);
}

static int add_at_depth(od_controller *c, const ctl_ctx *ctx, uint64_t parent_id, int dirfd,
			uint64_t *id_out,
			int depth)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e != ENOENT)
			g_warning("open cgroup directory (fd %d): %s", dirfd, g_strerror(e));
		return e;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return e;
	}
	uint64_t id = st.st_ino;
	if (id_out)
		*id_out = id;

	ctl_lock(c, "add");
	bool known = g_hash_table_contains(c->cgs, &id);
	ctl_unlock(c);
	if (known) {
		close(fd);
		return 0;
	}

	od_cg *g = g_new0(od_cg, 1);
	g->id = id;
	g->fd = fd;
	g->ref = 1;

	if (parent_id == 0) {
		ctl_lock(c, "add");
		oe_root(c->eng, id);
		if (!g_hash_table_contains(c->cgs, &id)) {
			g_hash_table_insert(c->cgs, &g->id, g);
			g = NULL;
		}
		ctl_unlock(c);
		ctl_cg_unref(g);
		return 0;
	}

	/* A late user of a removed cgroup (a file held open across the rmdir) must not
	 * bring it back as a ghost that nothing would ever remove again. */
	if (cgroup_gone(fd)) {
		ctl_cg_unref(g);
		return ENOENT;
	}
	uint64_t real_max = read_knob(fd, "memory.max");
	uint64_t real_high = read_knob(fd, "memory.high");
	oe_persisted p;
	bool have = od_persist_load(fd, &p) == 0;

	for (bool parent_tried = false;;) {
		ctl_lock(c, "add");
		if (g_hash_table_contains(c->cgs, &id)) { /* a concurrent add won */
			ctl_unlock(c);
			ctl_cg_unref(g);
			return 0;
		}
		ctl_ensure_room_locked(c, 1);
		if (oe_cgroup_add(c->eng, od_now(), id, parent_id, real_max, real_high,
				  have ? &p : NULL, &c->acts))
			break;
		ctl_unlock(c);
		int e = parent_tried ? ENOENT : add_parent_of(c, ctx, fd, depth);
		if (e) {
			ctl_cg_unref(g);
			return e == ENOTDIR || e == ENODEV ? ENOENT : e; /* parent unknown or gone */
		}
		parent_tried = true;
	}
	g_hash_table_insert(c->cgs, &g->id, ctl_cg_ref(g)); /* our reference keeps fd open below */
	ctl_finish_locked_rearm(c, ctx, ctl_holds_in_locked(c, &id, 1));
	/* A resumed hold is worth a line; the rest are counted (the walk's summary): at
	 * 10,000 managed cgroups a line each was 10,000 lines a restart, past journald's
	 * default burst (10,000 in 30 s), which would drop the lines that matter. */
	if (have && p.in_hold)
		g_message("cgroup %" PRIu64 ": adopted persisted state (a hold was running)", id);
	else if (have)
		g_atomic_int_inc(&c->states_adopted);
	/* The watcher may have handled the rmdir between the check above and the
	 * insert, finding nothing to remove: check again now that it is in. */
	bool gone = cgroup_gone(fd);
	ctl_cg_unref(g);
	if (gone) {
		ctl_remove_subtree(c, ctx, id);
		return ENOENT;
	}
	return 0;
}

static void collect_id(uint64_t id, void *ud)
{
	g_array_append_val((GArray *)ud, id);
}

typedef struct {
	GArray *ids;    /* the subtree, parents first */
	GPtrArray *gone; /* what the table let go, unreferenced after the unlock */
} removal;

/* Under the lock, after the batch holds its own references: taken out of the table
 * here, let go after the unlock (the last reference closes descriptors, and nothing
 * but engine work may hold the lock). */
static void take_out_locked(od_controller *c, void *ud)
{
	removal *r = ud;
	for (guint i = 0; i < r->ids->len; i++) {
		/* Not g_hash_table_steal_extended: the key (&g->id) is the value's address,
		 * so glib keeps the table as a set, and there (2.74) the value it handed
		 * back was not the od_cg: every removed cgroup's descriptors leaked. */
		const uint64_t *id_i = &g_array_index(r->ids, uint64_t, i);
		od_cg *cg = g_hash_table_lookup(c->cgs, id_i);
		if (cg && g_hash_table_steal(c->cgs, id_i))
			g_ptr_array_add(r->gone, cg);
	}
}

void ctl_remove_subtree(od_controller *c, const ctl_ctx *ctx, uint64_t id)
{
	/* Allocated before the lock, sized for the usual leaf: a malloc under the lock
	 * can wait for the allocator's own lock, held by a preempted thread. */
	GArray *ids = g_array_sized_new(FALSE, FALSE, sizeof(uint64_t), 16);
	removal r = { ids, g_ptr_array_new_full(16, (GDestroyNotify)ctl_cg_unref) };
	ctl_lock(c, "remove");
	oe_foreach_subtree(c->eng, id, collect_id, ids); /* pre-order: parents first */
	bool held = ctl_holds_in_locked(c, (const uint64_t *)(void *)ids->data, ids->len);
	oe_cgroup_remove(c->eng, id, &c->acts);
	ctl_finish_locked_with(c, ctx, held, take_out_locked, &r); /* unlocks */
	g_ptr_array_unref(r.gone);
	ctl_hooks_removed(&c->hooks, (const uint64_t *)(void *)ids->data, ids->len); /* children first */
	g_array_free(ids, TRUE);
}
