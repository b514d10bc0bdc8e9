/* watcher.c — see watcher.h.
 *
 * Each known cgroup is a node: its id, its name in its parent, its watches. Only
 * the root holds a descriptor; another node's directory is opened when needed
 * (adding a child, a rescan), by name from its parent's, and must still have its
 * id: a descriptor per cgroup would cost 10,000 of them at 10,000 cgroups for
 * the rare event that needs one. inotify watches need a path, so they are added
 * through /proc/self/fd/<fd>[/file]: the magic link resolves to the directory
 * opened, never to whatever is mounted at its path now (the shadow may sit on top).
 */
#define G_LOG_DOMAIN "oomdelayfs"
#include "oomd/watcher.h"
#include "held_first.h"
#include "wnode.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib-unix.h>

static const char *const wfile[W_KINDS] = { NULL, "memory.events", "memory.max",
					    "cgroup.subtree_control" };
static const uint32_t wmask[W_KINDS] = {
	IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_ONLYDIR,
	IN_MODIFY, IN_MODIFY, IN_MODIFY,
};

struct od_watcher {
	od_controller *ctl;
	int root_fd;
	int ifd; /* inotify; -1 when only scanning */
	wnode *root;
	GHashTable *by_id;  /* &id -> wnode* (owning) */
	GHashTable *by_wd;  /* wd -> wref_of(node, kind) */
	guint src_inotify, src_int, src_term, src_hup;
	void (*stop)(int sig, void *ud);
	void *stop_ud;
	od_watcher_change_fn changed;
	void *changed_ud;
	/* A rename (cgroupfs allows it within one parent) in flight: IN_MOVED_FROM
	 * seen, IN_MOVED_TO with the same cookie expected next. */
	wnode *moving;
	uint32_t moving_cookie;
	bool walking; /* od_watcher_adopt's walk, on main before the loop runs */
	uint64_t pending[64]; /* cgroups to sample after this read of the inotify queue */
	size_t npending;
};

/* What a watch is for, in by_wd's value: the node's address with the kind in its
 * low bits (a node is 8-aligned), not a struct of 16 bytes per watch. */
G_STATIC_ASSERT(W_KINDS <= 4 && G_ALIGNOF(wnode) >= 4);
static gpointer wref_of(wnode *n, wkind k)
{
	return (gpointer)((uintptr_t)n | (uintptr_t)k);
}

static wnode *wref_node(gpointer r)
{
	return (wnode *)((uintptr_t)r & ~(uintptr_t)3);
}

static wkind wref_kind(gpointer r)
{
	return (wkind)((uintptr_t)r & 3);
}

/* ---- inotify watches --------------------------------------------------- */

/* fd: n's directory */
static void watch_one(od_watcher *w, wnode *n, int fd, wkind k)
{
	if (w->ifd < 0 || n->wd[k] >= 0)
		return;
	char path[64 + 32];
	if (wfile[k])
		snprintf(path, sizeof path, "/proc/self/fd/%d/%s", fd, wfile[k]);
	else
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	int wd = inotify_add_watch(w->ifd, path, wmask[k]);
	if (wd < 0) {
		/* ENOENT: no memory controller in this cgroup (yet). */
		if (errno != ENOENT)
			g_warning("cgroup %" PRIu64 ": inotify watch on %s: %s%s", n->id,
				  wfile[k] ? wfile[k] : "directory", g_strerror(errno),
				  errno == ENOSPC ? " (raise fs.inotify.max_user_watches)" : "");
		return;
	}
	n->wd[k] = wd;
	g_hash_table_insert(w->by_wd, GINT_TO_POINTER(wd), wref_of(n, k));
}

/* cgroup.subtree_control matters for the children's memory.* files only: it is
 * watched once n has a child (add_child), a watch less for every leaf. */
static void watch_all(od_watcher *w, wnode *n, int fd)
{
	for (int k = 0; k < W_KINDS; k++)
		if (k != W_SUBTREE || (n->children && g_hash_table_size(n->children)))
			watch_one(w, n, fd, (wkind)k);
}

static void unwatch_all(od_watcher *w, wnode *n)
{
	for (int k = 0; k < W_KINDS; k++) {
		if (n->wd[k] < 0)
			continue;
		g_hash_table_remove(w->by_wd, GINT_TO_POINTER(n->wd[k]));
		inotify_rm_watch(w->ifd, n->wd[k]); /* EINVAL if the kernel dropped it already */
		n->wd[k] = -1;
	}
}

/* ---- the tree ---------------------------------------------------------- */

static void remove_subtree(od_watcher *w, wnode *n)
{
	/* Children first: the controller wants descendants removed before their parent. */
	GList *kids = children_of(n);
	for (GList *l = kids; l; l = l->next)
		remove_subtree(w, l->data);
	g_list_free(kids);
	g_debug("cgroup %" PRIu64 " (%s) removed", n->id, n->name ? n->name : "/");
	od_controller_remove(w->ctl, n->id);
	unwatch_all(w, n);
	if (n->parent)
		child_drop(n->parent, n->name);
	if (n == w->root)
		w->root = NULL;
	if (n == w->moving)
		w->moving = NULL;
	g_hash_table_remove(w->by_id, &n->id); /* frees n */
}

static void scan_dir(od_watcher *w, wnode *n, int fd, bool prune);

/* A directory `name` of parent (its directory: pfd) exists (scan, IN_CREATE, rescan). */
static wnode *add_child(od_watcher *w, wnode *parent, int pfd, const char *name)
{
	wnode *old = child_get(parent, name);
	int fd = openat(pfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			g_warning("cgroup %" PRIu64 ": open %s: %s", parent->id, name, g_strerror(errno));
		return NULL; /* gone already: its IN_DELETE follows */
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return NULL;
	}
	if (old && old->id == (uint64_t)st.st_ino) {
		close(fd);
		return old;
	}
	if (old) /* removed and re-created under the same name while we were not looking */
		remove_subtree(w, old);

	wnode *n = g_new0(wnode, 1);
	n->fd = -1;
	n->parent = parent;
	n->name = g_strdup(name);
	for (int k = 0; k < W_KINDS; k++)
		n->wd[k] = -1;
	/* Watch before reading: a change between the two is then not lost. */
	n->id = st.st_ino;
	/* Before the child's own watches: a controller enabled from now on is seen. */
	watch_one(w, parent, pfd, W_SUBTREE);
	watch_all(w, n, fd);
	/* Known already: added through the shadow (a mkdir, or a first use during the
	 * walk) before these watches existed. The walk (od_watcher_adopt) runs on main
	 * before the loop and may wait for its writes; an event on the loop may not. */
	oe_view v;
	bool known = od_controller_view(w->ctl, n->id, &v);
	int e = w->walking ? od_controller_add(w->ctl, parent->id, fd, &n->id)
			   : od_controller_add_from_loop(w->ctl, parent->id, fd, &n->id);
	if (e) {
		if (e != ENOENT)
			g_warning("cgroup %s: cannot add: %s", name, g_strerror(e));
		unwatch_all(w, n);
		free_node(n);
		close(fd);
		return NULL;
	}
	g_hash_table_insert(w->by_id, &n->id, n);
	child_put(parent, n);
	if (known) { /* what changed before the watches were added is read now */
		od_controller_real_max_changed(w->ctl, n->id);
		od_controller_sample(w->ctl, n->id);
	}
	/* kernfs gives a directory 2 + its subdirectories as st_nlink
	 * (kernfs_refresh_inode): a leaf, most of a large tree, needs no readdir.
	 * Taken after the directory watch, so a child made since is seen either way. */
	if (fstat(fd, &st) < 0 || st.st_nlink != 2)
		scan_dir(w, n, fd, false); /* it may have children already */
	close(fd);
	return n;
}

/* add_child for an event: n's directory opened for it */
static void add_child_of(od_watcher *w, wnode *n, const char *name)
{
	int fd = open_node(n);
	if (fd < 0)
		return; /* n is gone: its own removal follows */
	add_child(w, n, fd, name);
	close(fd);
}

/* Adds the subdirectories of n (its directory: fd) not known yet; with prune, also
 * removes known children that no longer exist (after an inotify queue overflow). */
static void scan_dir(od_watcher *w, wnode *n, int fd, bool prune)
{
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		if (errno != ENOENT)
			g_warning("cgroup %" PRIu64 ": open directory: %s", n->id, g_strerror(errno));
		return;
	}
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	GHashTable *seen = prune ? g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL) : NULL;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		wnode *c = add_child(w, n, fd, de->d_name);
		if (c && seen)
			g_hash_table_add(seen, g_strdup(c->name));
	}
	closedir(d);
	if (!prune)
		return;
	GList *kids = children_of(n);
	for (GList *l = kids; l; l = l->next) {
		wnode *c = l->data;
		int cfd = g_hash_table_contains(seen, c->name) ? open_at(fd, c) : -1;
		if (cfd < 0) {
			remove_subtree(w, c);
			continue;
		}
		scan_dir(w, c, cfd, true);
		close(cfd);
	}
	g_list_free(kids);
	g_hash_table_destroy(seen);
}

static void resync_node(gpointer key, gpointer value, gpointer ud)
{
	od_watcher *w = ud;
	wnode *n = value;
	(void)key;
	if (n == w->root)
		return;
	od_controller_real_max_changed(w->ctl, n->id);
	od_controller_sample(w->ctl, n->id);
}

/* Events were lost: make the tree and every reading true again. */
static void rescan(od_watcher *w)
{
	g_warning("inotify queue overflowed: rescanning the real tree");
	scan_dir(w, w->root, w->root->fd, true);
	GList *nodes = g_hash_table_get_values(w->by_id);
	for (GList *l = nodes; l; l = l->next) {
		int fd = open_node(l->data);
		if (fd >= 0) {
			watch_all(w, l->data, fd);
			close(fd);
		}
	}
	g_list_free(nodes);
	g_hash_table_foreach(w->by_id, resync_node, w);
}

/* ---- event sources ----------------------------------------------------- */

/* memory.events of a throttled cgroup changes with every allocation over memory.high:
 * one read of the inotify queue may name the same cgroup many times. Each is sampled
 * once per read, after the read's other events. */
static void defer_sample(od_watcher *w, uint64_t id)
{
	for (size_t i = 0; i < w->npending; i++)
		if (w->pending[i] == id)
			return;
	if (w->npending == G_N_ELEMENTS(w->pending)) {
		od_controller_sample(w->ctl, id);
		return;
	}
	w->pending[w->npending++] = id;
}

static void run_deferred(od_watcher *w)
{
	for (size_t i = 0; i < w->npending; i++)
		od_controller_sample(w->ctl, w->pending[i]);
	w->npending = 0;
}

static void handle_event(od_watcher *w, const struct inotify_event *ev)
{
	if (ev->mask & IN_Q_OVERFLOW) {
		rescan(w);
		return;
	}
	gpointer r = g_hash_table_lookup(w->by_wd, GINT_TO_POINTER(ev->wd));
	if (!r)
		return; /* a watch we dropped; its last events may still arrive */
	wnode *n = wref_node(r);
	if (ev->mask & IN_IGNORED) {
		n->wd[wref_kind(r)] = -1;
		g_hash_table_remove(w->by_wd, GINT_TO_POINTER(ev->wd));
		return;
	}
	switch (wref_kind(r)) {
	case W_DIR:
		/* A subdirectory's own attributes come from its own watch; a new name has no
		 * entry to drop (no negative entries), only the directory's link count. */
		if (w->changed && (ev->mask & IN_CREATE))
			w->changed(w->changed_ud, n->id, NULL, true);
		else if (w->changed && (ev->mask & (IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB)) &&
			 !((ev->mask & IN_ATTRIB) && (ev->mask & IN_ISDIR) && ev->len))
			w->changed(w->changed_ud, n->id, ev->len ? ev->name : NULL, ev->mask & IN_ATTRIB);
		if ((ev->mask & IN_CREATE) && (ev->mask & IN_ISDIR) && ev->len) {
			add_child_of(w, n, ev->name);
		} else if ((ev->mask & IN_MOVED_FROM) && (ev->mask & IN_ISDIR) && ev->len) {
			w->moving = child_get(n, ev->name);
			w->moving_cookie = ev->cookie;
		} else if ((ev->mask & IN_MOVED_TO) && (ev->mask & IN_ISDIR) && ev->len) {
			wnode *m = w->moving;
			w->moving = NULL;
			if (m && w->moving_cookie == ev->cookie && m->parent == n) {
				/* Same cgroup (same id), new name: re-key it. */
				child_drop(n, m->name);
				g_free(m->name);
				m->name = g_strdup(ev->name);
				wnode *old = child_get(n, m->name);
				if (old)
					remove_subtree(w, old);
				child_put(n, m);
				/* Events inside it met its old name (open_node failed): catch up. */
				int fd = open_node(m);
				if (fd >= 0) {
					scan_dir(w, m, fd, true);
					close(fd);
				}
			} else {
				if (m) /* moved elsewhere: cgroupfs forbids it, but be safe */
					remove_subtree(w, m);
				add_child_of(w, n, ev->name);
			}
		} else if ((ev->mask & IN_DELETE) && (ev->mask & IN_ISDIR) && ev->len) {
			wnode *c = child_get(n, ev->name);
			if (c)
				remove_subtree(w, c);
		} else if (ev->mask & IN_DELETE_SELF) {
			if (n != w->root)
				remove_subtree(w, n);
			else
				g_critical("the real cgroup root was removed");
		}
		break;
	case W_EVENTS:
		defer_sample(w, n->id);
		break;
	case W_MAX:
		od_controller_real_max_changed(w->ctl, n->id);
		break;
	case W_SUBTREE: {
		/* Controllers enabled or disabled for the children: memory.* files may
		 * have appeared; kernfs creates them without an inotify event. */
		int fd = n->children ? open_node(n) : -1;
		GHashTableIter it;
		gpointer v;
		if (fd >= 0)
			g_hash_table_iter_init(&it, n->children);
		while (fd >= 0 && g_hash_table_iter_next(&it, NULL, &v)) {
			wnode *c = v;
			bool had = c->wd[W_MAX] >= 0;
			int cfd = open_at(fd, c);
			if (cfd < 0)
				continue; /* gone: its IN_DELETE follows */
			watch_all(w, c, cfd);
			close(cfd);
			if (!had && c->wd[W_MAX] >= 0)
				od_controller_real_max_changed(w->ctl, c->id);
		}
		if (fd >= 0)
			close(fd);
		break;
	}
	default:
		break;
	}
}

static gboolean on_inotify(gint fd, GIOCondition cond, gpointer ud)
{
	od_watcher *w = ud;
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	(void)cond;
	/* One read per dispatch: under a stream of events (a throttled cgroup) the loop
	 * must come back to its other sources. */
	ssize_t len;
	while ((len = read(fd, buf, sizeof buf)) < 0 && errno == EINTR)
		;
	if (len < 0) {
		if (errno != EAGAIN)
			g_warning("read inotify: %s", g_strerror(errno));
		return G_SOURCE_CONTINUE;
	}
	for (char *p = buf; p < buf + len;) {
		const struct inotify_event *ev = (const struct inotify_event *)(void *)p;
		handle_event(w, ev);
		p += sizeof *ev + ev->len;
	}
	run_deferred(w);
	return G_SOURCE_CONTINUE;
}

/* What a stop signal means (a restart job or a stop) is the owner's to decide and log. */
static gboolean stop_on(od_watcher *w, int sig)
{
	if (w->stop)
		w->stop(sig, w->stop_ud);
	return G_SOURCE_CONTINUE; /* a second signal during the stop is harmless */
}
static gboolean on_int(gpointer ud) { return stop_on(ud, SIGINT); }
static gboolean on_term(gpointer ud) { return stop_on(ud, SIGTERM); }

static gboolean on_hup(gpointer ud)
{
	(void)ud;
	g_message("SIGHUP ignored (no configuration to reload)");
	return G_SOURCE_CONTINUE;
}

/* ---- the contract ------------------------------------------------------ */

od_watcher *od_watcher_new(od_controller *c, int root_fd, bool watch, GError **err)
{
	od_watcher *w = g_new0(od_watcher, 1);
	w->ctl = c;
	w->root_fd = root_fd;
	w->ifd = -1;
	w->by_id = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, (GDestroyNotify)free_node);
	w->by_wd = g_hash_table_new(g_direct_hash, g_direct_equal);
	if (watch) {
		w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (w->ifd < 0) {
			g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(errno), "inotify_init1: %s",
				    g_strerror(errno));
			od_watcher_free(w);
			return NULL;
		}
	}
	wnode *r = g_new0(wnode, 1);
	r->fd = openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (int k = 0; k < W_KINDS; k++)
		r->wd[k] = -1;
	int e = r->fd < 0 ? errno : od_controller_add(c, 0, r->fd, &r->id);
	if (e) {
		g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(e), "cgroup root: %s", g_strerror(e));
		free_node(r);
		od_watcher_free(w);
		return NULL;
	}
	w->root = r;
	g_hash_table_insert(w->by_id, &r->id, r);
	/* The root is never managed: only its directory and subtree_control matter. */
	watch_one(w, r, r->fd, W_DIR);
	watch_one(w, r, r->fd, W_SUBTREE);
	if (!watch) {
		od_watcher_adopt(w);
		return w;
	}
	w->src_inotify = g_unix_fd_add(w->ifd, G_IO_IN, on_inotify, w);
	/* A kill waits neither for inotify events, nor a loop blocked in the kernel,
	 * nor the walk (a hold adopted early resumes while the rest is read). */
	od_controller_start_deadlines(c);
	return w;
}

void od_watcher_adopt(od_watcher *w)
{
	if (w->ifd >= 0) /* a resumed hold's deadline must not wait for the walk */
		od_adopt_held_first(w->ctl, w->root->fd);
	gint64 t0 = g_get_monotonic_time();
	w->walking = true;
	scan_dir(w, w->root, w->root->fd, false);
	w->walking = false;
	g_message("%u cgroups found in %.1f ms (%zu took their persisted state)",
		  g_hash_table_size(w->by_id), (g_get_monotonic_time() - t0) / 1000.0,
		  od_controller_states_adopted(w->ctl));
}

void od_watcher_on_stop(od_watcher *w, void (*stop)(int sig, void *ud), void *ud)
{
	w->stop = stop;
	w->stop_ud = ud;
	if (!w->src_int) {
		w->src_int = g_unix_signal_add(SIGINT, on_int, w);
		w->src_term = g_unix_signal_add(SIGTERM, on_term, w);
		w->src_hup = g_unix_signal_add(SIGHUP, on_hup, w);
	}
}

void od_watcher_on_change(od_watcher *w, od_watcher_change_fn changed, void *ud)
{
	w->changed = changed;
	w->changed_ud = ud;
}

size_t od_watcher_count(od_watcher *w)
{
	return g_hash_table_size(w->by_id);
}

void od_watcher_free(od_watcher *w)
{
	if (!w)
		return;
	guint *srcs[] = { &w->src_inotify, &w->src_int, &w->src_term, &w->src_hup };
	for (size_t i = 0; i < G_N_ELEMENTS(srcs); i++)
		if (*srcs[i])
			g_source_remove(*srcs[i]);
	g_hash_table_destroy(w->by_wd);
	g_hash_table_destroy(w->by_id);
	if (w->ifd >= 0)
		close(w->ifd);
	g_free(w);
}
