/* inodes.c — the inode table: one O_PATH descriptor per real object the kernel
 * knows, keyed by (st_dev, st_ino), counted by the kernel's lookups and dropped
 * on forget. Descriptors rather than paths because cgroups vanish and get
 * renamed underneath us, and because the shadow may sit over the real mount.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "fdguard.h"
#include "fs_private.h"
#include "v1layout.h"

/* kernfs' file handle (fs/kernfs/mount.c, kernfs_encode_fh): type FILEID_KERNFS,
 * the node's 64-bit id, which is also st_ino on 64-bit kernels. */
#define FS_FILEID_KERNFS 0xfe

struct fs_inodes {
	GMutex lock;
	GHashTable *by_id;  /* &node->nodeid -> node */
	/* the nodes themselves, a set keyed by their (dev, ino, tag): no key of its own to
	 * allocate, one array for keys and values (glib's set mode) */
	GHashTable *by_key;
	uint64_t next_fallback;
	fs_node *root;
	bool revive; /* ids may come from a previous server (fs_inodes_enable_revive) */
	bool v1;
	fs_carry *carry; /* the name table of real files' ids, or NULL */
	/* descriptors held by nodes: in all, by file nodes, and per uid (uid -> count) */
	size_t fds, file_fds;
	GHashTable *per_uid;
	fs_sweeper *sweeper;
};

/* A uid's share of the descriptors requests may take (fdguard.h's budget, whose limit is
 * read once a second: a getrlimit of its own here ran at every node made, under the
 * table's lock, one of the five system calls a new file name cost; x-stat-walk, 7,
 * 2026-12-06). */
static size_t uid_share(void)
{
	size_t budget = fs_fd_budget();
	return budget == SIZE_MAX ? SIZE_MAX : budget / FS_INODES_UID_SHARE;
}

/* May uid's lookups hold n more descriptors? Charged if so. Called with the lock held. */
static bool charge_locked(fs_inodes *t, fs_node *node, uid_t uid, unsigned n)
{
	gpointer k = GUINT_TO_POINTER(uid);
	size_t had = GPOINTER_TO_SIZE(g_hash_table_lookup(t->per_uid, k));
	size_t share = uid_share();
	if (uid != 0 && had + n > share)
		return false;
	if (uid != 0 && t->sweeper && had + n > share / 2)
		fs_sweeper_kick(t->sweeper); /* before the share runs out: drop what is unused */
	g_hash_table_insert(t->per_uid, k, GSIZE_TO_POINTER(had + n));
	t->fds += n;
	if (!node->is_dir) {
		/* root's lookups never kick: without this wake-up an idle sweeper slept through
		 * 2,000 limit writes' memory.max nodes (bench-manage, 6.1: 2,000 file O_PATHs and
		 * their directory dups still held 5 s after the last write) */
		if (t->sweeper && t->file_fds <= FS_SWEEP_IDLE && t->file_fds + n > FS_SWEEP_IDLE)
			fs_sweeper_wake(t->sweeper);
		t->file_fds += n;
	}
	node->owner = uid;
	node->nfds = n;
	return true;
}

static void uncharge_locked(fs_inodes *t, const fs_node *node)
{
	if (!node->nfds)
		return;
	gpointer k = GUINT_TO_POINTER(node->owner);
	size_t had = GPOINTER_TO_SIZE(g_hash_table_lookup(t->per_uid, k));
	if (had <= node->nfds)
		g_hash_table_remove(t->per_uid, k);
	else
		g_hash_table_insert(t->per_uid, k, GSIZE_TO_POINTER(had - node->nfds));
	t->fds -= node->nfds;
	if (!node->is_dir)
		t->file_fds -= node->nfds;
}

size_t fs_inodes_fds(fs_inodes *t, uid_t uid, size_t *of_uid, size_t *of_files)
{
	g_mutex_lock(&t->lock);
	size_t all = t->fds;
	if (of_files)
		*of_files = t->file_fds;
	if (of_uid)
		*of_uid = GPOINTER_TO_SIZE(g_hash_table_lookup(t->per_uid, GUINT_TO_POINTER(uid)));
	g_mutex_unlock(&t->lock);
	return all;
}

void fs_inodes_set_sweeper(fs_inodes *t, fs_sweeper *w)
{
	g_mutex_lock(&t->lock);
	t->sweeper = w;
	g_mutex_unlock(&t->lock);
}

static bool is_file(const fs_node *n)
{
	return !n->is_dir && n->name && n->parent;
}

/* The monotonic clock in tenths of a second: when a node was last looked up. */
static uint32_t now_ds(void)
{
	return (uint32_t)(g_get_monotonic_time() / (G_USEC_PER_SEC / 10));
}

static gint newest_first(gconstpointer a, gconstpointer b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* The stamp below which repeated names go: those looked up since since_ds stay, at most
 * keep_max of them (the most recent; names sharing the stamp at the limit go too). The
 * stamps are sorted outside the lock, so names looked up meanwhile may pass the bound by
 * a few until the next sweep. */
static uint32_t keep_cutoff(fs_inodes *t, uint32_t since_ds, unsigned keep_max)
{
	GArray *recent = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	g_mutex_lock(&t->lock);
	GHashTableIter it;
	gpointer v;
	g_hash_table_iter_init(&it, t->by_id);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		const fs_node *n = v;
		if (is_file(n) && n->repeat && n->used_ds >= since_ds)
			g_array_append_val(recent, n->used_ds);
	}
	g_mutex_unlock(&t->lock);
	uint32_t cutoff = since_ds;
	if (recent->len > keep_max) {
		g_array_sort(recent, newest_first);
		cutoff = g_array_index(recent, uint32_t, keep_max) + 1;
	}
	g_array_unref(recent);
	return cutoff;
}

void fs_inodes_files(fs_inodes *t, unsigned keep_s, unsigned keep_max, GArray *parents,
		     GPtrArray *names)
{
	uint32_t before = UINT32_MAX;
	if (keep_s) {
		/* kept names (two descriptors at most each) hold no more than a uid's share of
		 * the budget: root's lookups never kick, and a low limit must not fill with them */
		keep_max = (unsigned)MIN((size_t)keep_max, uid_share() / 2);
		uint32_t now = now_ds(), keep = MIN(keep_s, 86400u) * 10;
		before = keep_cutoff(t, now > keep ? now - keep : 0, keep_max);
	}
	g_mutex_lock(&t->lock);
	GHashTableIter it;
	gpointer v;
	g_hash_table_iter_init(&it, t->by_id);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		fs_node *n = v;
		if (!is_file(n) || (n->repeat && n->used_ds >= before))
			continue;
		g_array_append_val(parents, n->parent);
		g_ptr_array_add(names, g_strdup(n->name));
	}
	g_mutex_unlock(&t->lock);
}

static guint key_hash(gconstpointer p)
{
	const fs_node *k = p;
	uint64_t h = (uint64_t)k->ino * UINT64_C(0x9E3779B97F4A7C15);
	h ^= (uint64_t)k->dev + ((uint64_t)k->tag << 32);
	return (guint)(h ^ (h >> 32));
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
	const fs_node *x = a, *y = b;
	return x->dev == y->dev && x->ino == y->ino && x->tag == y->tag;
}

static void node_close(fs_node *n)
{
	if (n->fd >= 0)
		close(n->fd);
	if (n->cg_dirfd >= 0)
		close(n->cg_dirfd);
	g_free(n->name);
	g_free(n);
}

fs_inodes *fs_inodes_new(int root_fd, int *err)
{
	struct stat st;
	if (fstat(root_fd, &st) < 0) {
		*err = errno;
		return NULL;
	}
	if (!S_ISDIR(st.st_mode)) {
		*err = ENOTDIR;
		return NULL;
	}
	int fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		*err = errno;
		return NULL;
	}
	fs_inodes *t = g_new0(fs_inodes, 1);
	g_mutex_init(&t->lock);
	t->by_id = g_hash_table_new(g_int64_hash, g_int64_equal);
	t->by_key = g_hash_table_new(key_hash, key_equal);
	t->per_uid = g_hash_table_new(g_direct_hash, g_direct_equal);
	t->next_fallback = FS_FALLBACK_BASE;

	fs_node *r = g_new0(fs_node, 1);
	r->nodeid = FUSE_ROOT_ID;
	r->dev = st.st_dev;
	r->ino = st.st_ino;
	r->fd = fd;
	r->nlookup = 1; /* the kernel holds the root for the life of the mount */
	r->cg_id = st.st_ino;
	r->cg_parent = 0;
	r->cg_is_root = true;
	r->cg_dirfd = -1;
	r->is_dir = true;
	t->root = r;
	g_hash_table_add(t->by_key, r);
	g_hash_table_insert(t->by_id, &r->nodeid, r);
	return t;
}

void fs_inodes_free(fs_inodes *t)
{
	if (!t)
		return;
	GHashTableIter it;
	gpointer v;
	g_hash_table_iter_init(&it, t->by_id);
	while (g_hash_table_iter_next(&it, NULL, &v))
		node_close(v);
	g_hash_table_destroy(t->by_id);
	g_hash_table_destroy(t->by_key);
	g_hash_table_destroy(t->per_uid);
	g_mutex_clear(&t->lock);
	g_free(t);
}

static fs_node *revive(fs_inodes *t, uint64_t id);

fs_node *fs_inodes_get(fs_inodes *t, fuse_ino_t id)
{
	uint64_t k = id;
	g_mutex_lock(&t->lock);
	fs_node *n = g_hash_table_lookup(t->by_id, &k);
	g_mutex_unlock(&t->lock);
	if (!n && t->revive)
		n = revive(t, id);
	return n;
}

void fs_inodes_enable_revive(fs_inodes *t, bool v1)
{
	/* Only kernfs ids can be turned back into objects: probe the root's handle. */
	union {
		struct file_handle fh;
		unsigned char bytes[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	} h;
	h.fh.handle_bytes = MAX_HANDLE_SZ;
	int mnt;
	if (name_to_handle_at(t->root->fd, "", &h.fh, &mnt, AT_EMPTY_PATH) < 0 ||
	    h.fh.handle_type != FS_FILEID_KERNFS || h.fh.handle_bytes != sizeof(uint64_t)) {
		g_warning("inode table: the real tree has no kernfs file handles; ids a previous "
			  "server gave the kernel will answer ESTALE");
		return;
	}
	t->v1 = v1;
	t->revive = true;
}

void fs_inodes_set_carry(fs_inodes *t, fs_carry *c)
{
	t->carry = c;
}

uint64_t fs_inodes_synth_id(uint64_t dir_nodeid, const fs_synth *s)
{
	return fs_id_synth(dir_nodeid, s->index);
}

/* Called with the lock held: the preferred id when it is free, else a counter id. */
static uint64_t pick_id(fs_inodes *t, uint64_t preferred)
{
	if (preferred != 0 && preferred != FUSE_ROOT_ID &&
	    !g_hash_table_contains(t->by_id, &preferred))
		return preferred;
	return t->next_fallback++;
}

/* Called with the lock held. Returns the existing node (one more reference) or inserts n,
 * its descriptors charged to uid; NULL when uid's share is spent. */
static fs_node *insert_locked(fs_inodes *t, fs_node *n, uint64_t preferred, uid_t uid)
{
	fs_node *old = g_hash_table_lookup(t->by_key, n);
	if (old) {
		old->nlookup++;
		old->used_ds = now_ds();
		return old;
	}
	if (!charge_locked(t, n, uid, (n->fd >= 0) + (n->cg_dirfd >= 0)))
		return NULL;
	n->nodeid = pick_id(t, preferred);
	n->nlookup = 1;
	n->used_ds = now_ds();
	if (is_file(n)) {
		fs_node *dir = g_hash_table_lookup(t->by_id, &n->parent);
		/* the top 6 bits of a multiplicative mix: djb2's low bits (g_str_hash) set 40
		 * bits for the 300 names k000-k299 */
		uint64_t h = (uint64_t)g_str_hash(n->name) * UINT64_C(0x9E3779B97F4A7C15);
		uint64_t bit = UINT64_C(1) << (h >> 58);
		if (dir && dir->is_dir) {
			n->repeat = (dir->names_seen & bit) != 0;
			dir->names_seen |= bit;
		}
	}
	g_hash_table_add(t->by_key, n);
	g_hash_table_insert(t->by_id, &n->nodeid, n);
	return n;
}

fs_node *fs_inodes_ref_known(fs_inodes *t, const struct stat *st)
{
	fs_node k = { .dev = st->st_dev, .ino = st->st_ino, .tag = 0 }; /* a key */
	g_mutex_lock(&t->lock);
	fs_node *n = g_hash_table_lookup(t->by_key, &k);
	if (n) {
		n->nlookup++;
		n->used_ds = now_ds();
	}
	g_mutex_unlock(&t->lock);
	return n;
}

fs_node *fs_inodes_intern_real(fs_inodes *t, const fs_node *dir, int fd, const struct stat *st,
			       const char *name, uid_t uid, int *err)
{
	fs_node k = { .dev = st->st_dev, .ino = st->st_ino, .tag = 0 }; /* a key */

	/* Fast path: known object, no allocation. */
	g_mutex_lock(&t->lock);
	fs_node *old = g_hash_table_lookup(t->by_key, &k);
	if (old) {
		old->nlookup++;
		old->used_ds = now_ds();
		g_mutex_unlock(&t->lock);
		close(fd);
		return old;
	}
	g_mutex_unlock(&t->lock);

	fs_node *n = g_new0(fs_node, 1);
	n->dev = st->st_dev;
	n->ino = st->st_ino;
	n->fd = fd;
	n->cg_dirfd = -1;
	uint64_t preferred = 0;
	if (S_ISDIR(st->st_mode)) {
		n->cg_id = st->st_ino;
		n->cg_parent = dir->cg_id;
		n->cg_is_root = false;
		n->is_dir = true;
		if (st->st_dev == t->root->dev && st->st_ino < FS_FALLBACK_BASE)
			preferred = st->st_ino; /* the kernfs id: a successor opens it by handle */
	} else {
		n->cg_id = dir->cg_id;
		n->cg_parent = dir->cg_parent;
		n->cg_is_root = dir->cg_is_root;
		/* v2's table says which real files are virtualised, whatever the layout */
		const fs_synth *s = fs_layout_find(false, name);
		if (s && (s->flags & FS_SYN_VIRTUAL) && S_ISREG(st->st_mode)) {
			n->cg_dirfd = fcntl(dir->fd, F_DUPFD_CLOEXEC, 3);
			if (n->cg_dirfd < 0) {
				*err = errno;
				g_warning("inode table: cannot dup the directory of %s: %s", name,
					  g_strerror(errno));
				close(fd);
				g_free(n);
				return NULL;
			}
			n->syn = s;
		}
		/* the kernel judges what a PSI trigger may be by the opener's capabilities */
		n->as_caller = (s && (s->flags & FS_SYN_AS_CALLER)) || g_str_has_suffix(name, ".pressure");
		/* its directory and its name: a successor opens it again from those (ids.h) */
		int k = t->carry && st->st_dev == t->root->dev ? fs_carry_name_index(t->carry, name) : -1;
		preferred = k >= 0 ? fs_id_file(dir->nodeid, (unsigned)k) : 0;
		n->parent = dir->nodeid;
		n->name = g_strdup(name);
	}

	g_mutex_lock(&t->lock);
	fs_node *got = insert_locked(t, n, preferred, uid);
	g_mutex_unlock(&t->lock);
	if (got != n)
		node_close(n); /* another worker interned it first, or uid's share is spent */
	if (!got)
		*err = EMFILE;
	return got;
}

fs_node *fs_inodes_intern_synth(fs_inodes *t, const fs_node *dir, const fs_synth *s, uid_t uid,
				int *err)
{
	fs_node k = { .dev = dir->dev, .ino = dir->ino, .tag = s->index + 1 }; /* a key */
	g_mutex_lock(&t->lock);
	fs_node *old = g_hash_table_lookup(t->by_key, &k);
	if (old) {
		old->nlookup++;
		old->used_ds = now_ds();
		g_mutex_unlock(&t->lock);
		return old;
	}
	g_mutex_unlock(&t->lock);

	fs_node *n = g_new0(fs_node, 1);
	n->dev = dir->dev;
	n->ino = dir->ino;
	n->tag = s->index + 1;
	n->syn = s;
	n->cg_id = dir->cg_id;
	n->cg_parent = dir->cg_parent;
	n->cg_is_root = dir->cg_is_root;
	n->cg_dirfd = -1;
	/* Its own descriptor of the directory: the directory's node may be forgotten first. */
	n->fd = fcntl(dir->fd, F_DUPFD_CLOEXEC, 3);
	if (n->fd < 0) {
		*err = errno;
		g_warning("inode table: cannot dup a cgroup directory for %s: %s", s->name,
			  g_strerror(errno));
		g_free(n);
		return NULL;
	}
	n->parent = dir->nodeid;
	n->name = g_strdup(s->name);
	g_mutex_lock(&t->lock);
	fs_node *got = insert_locked(t, n, fs_inodes_synth_id(dir->nodeid, s), uid);
	g_mutex_unlock(&t->lock);
	if (got != n)
		node_close(n);
	if (!got)
		*err = EMFILE;
	return got;
}

void fs_inodes_forget(fs_inodes *t, fuse_ino_t id, uint64_t n)
{
	uint64_t k = id;
	g_mutex_lock(&t->lock);
	fs_node *node = g_hash_table_lookup(t->by_id, &k);
	if (!node || node == t->root) {
		g_mutex_unlock(&t->lock);
		return;
	}
	if (node->nlookup > n) {
		node->nlookup -= n;
		g_mutex_unlock(&t->lock);
		return;
	}
	g_hash_table_remove(t->by_key, node);
	g_hash_table_remove(t->by_id, &node->nodeid);
	uncharge_locked(t, node);
	g_mutex_unlock(&t->lock);
	node_close(node);
}

uint64_t fs_inodes_find(fs_inodes *t, dev_t dev, ino_t ino, const fs_synth *s)
{
	fs_node k = { .dev = dev, .ino = ino, .tag = s ? s->index + 1 : 0 }; /* a key */
	g_mutex_lock(&t->lock);
	fs_node *n = g_hash_table_lookup(t->by_key, &k);
	uint64_t id = n ? n->nodeid : 0;
	g_mutex_unlock(&t->lock);
	return id;
}

uint64_t fs_inodes_find_dir(fs_inodes *t, uint64_t id)
{
	if (id == t->root->ino)
		return FUSE_ROOT_ID;
	fs_node k = { .dev = t->root->dev, .ino = (ino_t)id, .tag = 0 }; /* a key */
	g_mutex_lock(&t->lock);
	fs_node *n = g_hash_table_lookup(t->by_key, &k);
	uint64_t got = n && n->is_dir ? n->nodeid : 0;
	g_mutex_unlock(&t->lock);
	return got;
}

uint64_t fs_inodes_find_child(fs_inodes *t, uint64_t dir, const char *name)
{
	fs_node k = { .dev = t->root->dev, .ino = (ino_t)dir, .tag = 0 }; /* a key */
	g_mutex_lock(&t->lock);
	fs_node *d = dir == t->root->ino ? t->root : g_hash_table_lookup(t->by_key, &k);
	/* a copy: the node may be forgotten, and its descriptor closed, once the lock is let go */
	int fd = d && d->is_dir ? fcntl(d->fd, F_DUPFD_CLOEXEC, 3) : -1;
	g_mutex_unlock(&t->lock);
	if (fd < 0)
		return 0;
	struct stat st;
	int r = fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW);
	close(fd);
	return r == 0 ? fs_inodes_find(t, st.st_dev, st.st_ino, NULL) : 0;
}

dev_t fs_inodes_dev(fs_inodes *t)
{
	return t->root->dev;
}

/* A node with no reference of ours: the kernel's count for the id stays with the
 * kernel, and its FORGET (sent with that count) drops the node as usual. */
static fs_node *insert_revived(fs_inodes *t, fs_node *n, uint64_t id)
{
	g_mutex_lock(&t->lock);
	fs_node *got = insert_locked(t, n, id, 0); /* the kernel's, not a caller's */
	got->nlookup--;
	g_mutex_unlock(&t->lock);
	if (got != n)
		node_close(n);
	if (got->nodeid != id) /* the id is taken by another object now: stale */
		return NULL;
	return got;
}

/* The directory id (st_ino) if it lies under our root: its parent's id in *parent. */
static int open_cgroup_dir(fs_inodes *t, uint64_t id, uint64_t *parent)
{
	union {
		struct file_handle fh;
		unsigned char bytes[sizeof(struct file_handle) + sizeof(uint64_t)];
	} h;
	h.fh.handle_bytes = sizeof id;
	h.fh.handle_type = FS_FILEID_KERNFS;
	memcpy(h.fh.f_handle, &id, sizeof id);
	int fd = open_by_handle_at(t->root->fd, &h.fh, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_dev != t->root->dev || st.st_ino != id) {
		close(fd);
		return -1;
	}
	/* Walk up to our root: an id outside the served subtree is refused. Leaving the
	 * cgroup file system (".." of its mount root) means it was not under it. */
	int cur = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	for (int up = 0; cur >= 0 && up < 256; up++) {
		int p = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(cur);
		cur = p;
		if (p < 0 || fstat(p, &st) < 0 || st.st_dev != t->root->dev)
			break;
		if (up == 0)
			*parent = st.st_ino;
		if (st.st_ino == t->root->ino) {
			close(p);
			return fd;
		}
	}
	if (cur >= 0)
		close(cur);
	close(fd);
	return -1;
}

int fs_inodes_open_cgroup(fs_inodes *t, uint64_t id)
{
	uint64_t parent = 0;
	if (!t->revive)
		return -2;
	if (id == t->root->ino)
		return fcntl(t->root->fd, F_DUPFD_CLOEXEC, 3);
	return open_cgroup_dir(t, id, &parent);
}

/* Called on a revived node (no reference of ours): the node if it got exactly id. */
static fs_node *unref_revived(fs_inodes *t, fs_node *n, uint64_t id)
{
	g_mutex_lock(&t->lock);
	n->nlookup--;
	g_mutex_unlock(&t->lock);
	return n->nodeid == id ? n : NULL;
}

/* A real file: the name its id points to in the carried table, in its directory
 * (itself revived if need be), opened again and checked to be a regular file. */
static fs_node *revive_file(fs_inodes *t, uint64_t id, uint64_t dir_id, unsigned k)
{
	const char *name = t->carry ? fs_carry_name(t->carry, k) : NULL;
	fs_node *dir = name ? fs_inodes_get(t, dir_id) : NULL;
	if (!dir || !dir->is_dir || dir->nodeid != dir_id || strchr(name, '/'))
		return NULL;
	int fd = openat(dir->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_dev != t->root->dev) {
		close(fd);
		return NULL;
	}
	int err = 0;
	fs_node *n = fs_inodes_intern_real(t, dir, fd, &st, name, 0, &err);
	return n ? unref_revived(t, n, id) : NULL;
}

/* An id the kernel learnt from a previous server of this connection (a takeover,
 * session.c). Directories (cgroups) come back through their kernfs handle, synthetic
 * files through their directory; other files answer ESTALE (a path walk looks them
 * up again, since entry timeouts are 0). */
static fs_node *revive(fs_inodes *t, uint64_t id)
{
	uint64_t dir_id;
	unsigned k;
	fs_id_kind kind = fs_id_decode(id, &dir_id, &k);
	if (kind == FS_ID_FILE)
		return revive_file(t, id, dir_id, k);
	if (kind == FS_ID_SYNTH) {
		const fs_synth *s = fs_layout_at(t->v1, k);
		fs_node *dir = s ? fs_inodes_get(t, dir_id) : NULL;
		if (!dir || !dir->is_dir || fs_inodes_synth_id(dir->nodeid, s) != id)
			return NULL;
		int err = 0;
		fs_node *n = fs_inodes_intern_synth(t, dir, s, 0, &err);
		return n ? unref_revived(t, n, id) : NULL;
	}
	if (kind != FS_ID_DIR || id == FUSE_ROOT_ID)
		return NULL;
	uint64_t parent = 0;
	int fd = open_cgroup_dir(t, id, &parent);
	if (fd < 0)
		return NULL;
	fs_node *n = g_new0(fs_node, 1);
	n->dev = t->root->dev;
	n->ino = id;
	n->fd = fd;
	n->cg_dirfd = -1;
	n->cg_id = id;
	n->cg_parent = parent;
	n->is_dir = true;
	return insert_revived(t, n, id);
}
