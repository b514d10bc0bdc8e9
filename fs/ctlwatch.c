/* ctlwatch.c — poll() on the synthetic memory.oom_control, kernfs-style: each
 * open remembers the generation of the content it last read (set at open and
 * on every read from offset 0), and poll reports POLLPRI|POLLERR while the
 * cgroup's generation is newer. The controller's control_changed hook bumps the
 * generation and wakes every stored poll handle of that cgroup.
 */
#include <errno.h>

#include "fs_private.h"

typedef struct {
	uint64_t id;
	uint64_t gen;
	GPtrArray *files; /* fs_file* opened on this cgroup's memory.oom_control */
} cg_watch;

struct fs_ctlwatch {
	GMutex lock;
	GHashTable *cgs; /* &cg_watch.id -> cg_watch */
	od_controller *ctl;
	od_hooks_reg *hooks; /* removed before the watch is freed */
};

static void cg_watch_free(gpointer p)
{
	cg_watch *c = p;
	g_ptr_array_unref(c->files);
	g_free(c);
}

static void hook_changed(void *ud, uint64_t id)
{
	fs_ctlwatch_changed(ud, id);
}

fs_ctlwatch *fs_ctlwatch_new(od_controller *ctl)
{
	fs_ctlwatch *w = g_new0(fs_ctlwatch, 1);
	g_mutex_init(&w->lock);
	w->cgs = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, cg_watch_free);
	w->ctl = ctl;
	if (ctl) {
		/* A removed cgroup also wakes its pollers: their next read gets ENODEV. */
		od_hooks h = { .control_changed = hook_changed, .removed = hook_changed, .ud = w };
		w->hooks = od_controller_set_hooks(ctl, &h);
	}
	return w;
}

void fs_ctlwatch_free(fs_ctlwatch *w)
{
	if (!w)
		return;
	if (w->ctl)
		od_controller_remove_hooks(w->ctl, w->hooks); /* no hook call after it */
	g_hash_table_destroy(w->cgs);
	g_mutex_clear(&w->lock);
	g_free(w);
}

static cg_watch *get_locked(fs_ctlwatch *w, uint64_t id, bool create)
{
	cg_watch *c = g_hash_table_lookup(w->cgs, &id);
	if (!c && create) {
		c = g_new0(cg_watch, 1);
		c->id = id;
		c->files = g_ptr_array_new();
		g_hash_table_insert(w->cgs, &c->id, c);
	}
	return c;
}

void fs_ctlwatch_attach(fs_ctlwatch *w, fs_file *f)
{
	g_mutex_lock(&w->lock);
	cg_watch *c = get_locked(w, f->ctx.id, true);
	g_ptr_array_add(c->files, f);
	f->seen_gen = c->gen;
	f->ph = NULL;
	g_mutex_unlock(&w->lock);
}

void fs_ctlwatch_detach(fs_ctlwatch *w, fs_file *f)
{
	g_mutex_lock(&w->lock);
	struct fuse_pollhandle *ph = f->ph;
	f->ph = NULL;
	cg_watch *c = get_locked(w, f->ctx.id, false);
	if (c) {
		g_ptr_array_remove_fast(c->files, f);
		if (c->files->len == 0)
			g_hash_table_remove(w->cgs, &c->id);
	}
	g_mutex_unlock(&w->lock);
	if (ph)
		fuse_pollhandle_destroy(ph);
}

void fs_ctlwatch_seen(fs_ctlwatch *w, fs_file *f)
{
	g_mutex_lock(&w->lock);
	cg_watch *c = get_locked(w, f->ctx.id, false);
	if (c)
		f->seen_gen = c->gen;
	g_mutex_unlock(&w->lock);
}

unsigned fs_ctlwatch_poll(fs_ctlwatch *w, fs_file *f, struct fuse_pollhandle *ph)
{
	unsigned mask = FS_POLL_DEFAULT;
	struct fuse_pollhandle *drop = NULL;

	g_mutex_lock(&w->lock);
	cg_watch *c = get_locked(w, f->ctx.id, false);
	if (c && c->gen != f->seen_gen) {
		mask |= POLLPRI | POLLERR;
		drop = ph; /* already ready: nothing to wake later */
	} else if (ph) {
		drop = f->ph; /* the kernel's newest handle replaces the older one */
		f->ph = ph;
	}
	g_mutex_unlock(&w->lock);
	if (drop)
		fuse_pollhandle_destroy(drop);
	return mask;
}

void fs_ctlwatch_changed(fs_ctlwatch *w, uint64_t id)
{
	GPtrArray *wake = NULL;

	g_mutex_lock(&w->lock);
	cg_watch *c = get_locked(w, id, false);
	if (c) {
		c->gen++;
		for (guint i = 0; i < c->files->len; i++) {
			fs_file *f = g_ptr_array_index(c->files, i);
			if (!f->ph)
				continue;
			if (!wake)
				wake = g_ptr_array_new();
			g_ptr_array_add(wake, f->ph);
			f->ph = NULL;
		}
	}
	g_mutex_unlock(&w->lock);

	if (!wake)
		return;
	for (guint i = 0; i < wake->len; i++) {
		struct fuse_pollhandle *ph = g_ptr_array_index(wake, i);
		int r = fuse_lowlevel_notify_poll(ph);
		/* ENOENT: nobody waits any more; EBADF/ENODEV: the mount is going away */
		if (r < 0 && r != -ENOENT && r != -EBADF && r != -ENODEV)
			g_warning("memory.oom_control of cgroup %" G_GUINT64_FORMAT
				  ": poll notification failed: %s", id, g_strerror(-r));
		fuse_pollhandle_destroy(ph);
	}
	g_ptr_array_unref(wake);
}
