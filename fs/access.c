/* access.c — what the kernel would let a FUSE caller (caller.c) do to a real
 * cgroup file, for the requests the daemon then carries out as root (synthetic
 * files whose writes change memory.max, virtualised memory.max/memory.high,
 * pass-through writes, extended attributes).
 *
 * A caller we cannot read is a nobody: it gets fewer rights, never more.
 *
 * Why a check of our own rather than an open of the real file as the caller:
 * capabilities a caller holds in its own user namespace count on files whose
 * owner and group are mapped there (capable_wrt_inode_uidgid), and no identity
 * our worker thread can take reproduces that; the extended-attribute rules and
 * the checks on files we never open (v1 event_control's control file, v1
 * mkdir's cgroup.subtree_control) need this check anyway.
 *
 * Called by FUSE workers at open and on xattr requests; reads /proc (a few
 * small files), never anything on a FUSE mount. Not on the kill path.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fs_private.h"

/* Is id inside one of the extents of /proc/<tid>/{uid,gid}_map? The "outside"
 * column is relative to the reader's user namespace, ours. */
static bool id_mapped(const fs_caller *c, const char *map, unsigned id)
{
	g_autofree char *text = fs_caller_read(c, map);
	if (!text)
		return false;
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++) {
		unsigned long in, out, count;
		if (sscanf(*l, "%lu %lu %lu", &in, &out, &count) == 3 && id >= out && id - out < count)
			return true;
	}
	return false;
}

bool fs_caller_capable(const fs_caller *c, int cap)
{
	return c->known && c->init_userns && (c->cap_eff & (UINT64_C(1) << cap));
}

/* capable_wrt_inode_uidgid(): the capability in the caller's own user namespace,
 * and the file's owner and group mapped into it. */
static bool capable_wrt(const fs_caller *c, const struct stat *st, int cap)
{
	if (!c->known || !(c->cap_eff & (UINT64_C(1) << cap)))
		return false;
	if (c->init_userns)
		return true;
	return id_mapped(c, "uid_map", st->st_uid) && id_mapped(c, "gid_map", st->st_gid);
}

static bool in_group(const fs_caller *c, gid_t gid)
{
	if (c->fsgid == gid)
		return true;
	for (guint i = 0; i < c->groups->len; i++)
		if (g_array_index(c->groups, gid_t, i) == gid)
			return true;
	return false;
}

int fs_caller_permission(const fs_caller *c, const struct stat *st, int mask)
{
	mask &= R_OK | W_OK | X_OK;
	/* acl_permission_check(): owner, else group, else other bits (cgroupfs has no
	 * ACLs); a caller we do not know gets the other bits */
	mode_t bits = st->st_mode;
	if (c->known && c->fsuid == st->st_uid)
		bits >>= 6;
	else if (c->known && in_group(c, st->st_gid))
		bits >>= 3;
	if ((mask & ~bits & 7) == 0)
		return 0;
	/* generic_permission(): read/write of a file are always overridable, exec
	 * when some exec bit is set; a read alone with CAP_DAC_READ_SEARCH too */
	if ((!(mask & X_OK) || (st->st_mode & 0111)) && capable_wrt(c, st, CAP_DAC_OVERRIDE))
		return 0;
	if (mask == R_OK && capable_wrt(c, st, CAP_DAC_READ_SEARCH))
		return 0;
	return EACCES;
}

/* ---- the cgroup namespace of the opener (cgroup_file_open keeps it) ---- */

/* The page-counter files whose write rejects "-" (page_counter_memparse) before
 * changing anything: a probe of the namespace rule costs no change. */
static bool probe_safe(const char *name)
{
	static const char *const names[] = { "memory.max", "memory.high", "memory.low",
					     "memory.min", "memory.swap.max" };
	for (size_t i = 0; i < G_N_ELEMENTS(names); i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

int fs_caller_cgns_write_err(const fs_caller *c, int dirfd, const char *name)
{
	if (!c->known)
		return EACCES;
	if (c->cgns < 0 || !probe_safe(name))
		return 0; /* ours: the daemon's own write is judged the same */
	/* cgroup_file_write() (6.1, 6.12) refuses a write to a file of the opener's
	 * namespace root that is not delegatable (EPERM) under nsdelegate, judging
	 * by the namespace kept at open: ask the kernel with a write it rejects */
	char path[96];
	snprintf(path, sizeof path, "/proc/self/fd/%d/%s", dirfd, name);
	int fd = fs_caller_open(c, path, O_WRONLY | O_CLOEXEC, FS_OPEN_AS_DAEMON);
	if (fd < 0)
		return fd == -ENOENT ? 0 : -fd;
	int err = write(fd, "-", 1) < 0 ? errno : 0;
	close(fd);
	return err == EPERM ? EPERM : 0;
}

/* ---- open ---- */

/* The attributes the kernel shows for n now: a synthetic file's are those of the real file it
 * stands for (fs_synth_attr), anything else's its real file's. 0 or errno. */
static int shown_attr(const fs_node *n, struct stat *st)
{
	if (n->syn && !(n->syn->flags & FS_SYN_VIRTUAL))
		return fs_synth_attr(n->fd, n->syn, st);
	return fs_stat_fd(n->fd, st);
}

int fs_access_read(fuse_req_t req, const fs_node *n)
{
	if (n->as_caller)
		return 0; /* opened as the opener: the kernel checks it */
	struct stat st;
	int r = shown_attr(n, &st);
	if (r)
		return r;
	/* the opener's own ids decide most opens without /proc (acl_permission_check's
	 * owner, else group, else other class); a refusal by them may still be overridden
	 * by groups or capabilities, which only the full check knows */
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	mode_t bits = st.st_mode;
	if (ctx->uid == st.st_uid)
		bits >>= 6;
	else if (ctx->gid == st.st_gid)
		bits >>= 3;
	if (bits & S_IROTH)
		return 0;
	g_autoptr(fs_caller) who = fs_caller_new(req);
	return fs_caller_permission(who, &st, R_OK);
}

int fs_access_open(fuse_req_t req, const fs_node *n, int flags, bool full, fs_caller **who,
		   int *write_err)
{
	*write_err = 0;
	*who = NULL;
	struct stat st;
	int r = n->as_caller ? 0 : shown_attr(n, &st);
	if (r)
		return r;
	/* acl_permission_check() decides by the owner bits alone when the fsuid owns the
	 * file: then neither groups nor capabilities can change the answer, and /proc status
	 * (the heaviest read of the caller) is not needed */
	mode_t need = (flags & O_ACCMODE) == O_RDWR ? S_IRUSR | S_IWUSR : S_IWUSR;
	bool owner = !full && !n->as_caller && fuse_req_ctx(req)->uid == st.st_uid &&
		     (st.st_mode & need) == need;
	*who = owner ? fs_caller_new_owner(req) : fs_caller_new(req);
	if (n->as_caller)
		return 0; /* the kernel checks the opener */
	const char *real = NULL; /* the real file whose write rules apply */
	int dirfd = n->fd;
	if (n->syn && !(n->syn->flags & FS_SYN_VIRTUAL)) {
		real = n->syn->attr_of;
	} else if (n->syn) {
		real = n->syn->name;
		dirfd = n->cg_dirfd;
	}
	r = fs_caller_permission(*who, &st, (flags & O_ACCMODE) == O_RDWR ? R_OK | W_OK : W_OK);
	if (r)
		return r;
	if (real)
		*write_err = fs_caller_cgns_write_err(*who, dirfd, real);
	return 0;
}

/* ---- extended attributes ---- */

/* The daemon keeps its state in <namespace>.oomdelayfs.* of the real cgroup
 * directory: no caller reads, writes, removes or lists such a name. */
bool fs_xattr_is_ours(const char *name)
{
	const char *dot = strchr(name, '.');
	return dot && g_str_has_prefix(dot + 1, "oomdelayfs.");
}

bool fs_xattr_needs_caller(const char *name, int mask)
{
	return (mask & W_OK) ||
	       !(g_str_has_prefix(name, "security.") || g_str_has_prefix(name, "system."));
}

int fs_xattr_permission(const fs_caller *c, const struct stat *st, const char *name, int mask)
{
	if (fs_xattr_is_ours(name))
		return (mask & W_OK) ? EPERM : ENODATA;
	/* xattr_permission(): trusted.* only with CAP_SYS_ADMIN in the initial user namespace */
	if (g_str_has_prefix(name, "trusted.")) {
		if (!fs_caller_capable(c, CAP_SYS_ADMIN))
			return (mask & W_OK) ? EPERM : ENODATA;
		return 0;
	}
	/* security.*: no VFS check; commoncap wants CAP_SYS_ADMIN in the superblock's
	 * user namespace (init's for cgroupfs) to set or remove one */
	if (g_str_has_prefix(name, "security.") || g_str_has_prefix(name, "system."))
		return (mask & W_OK) && !fs_caller_capable(c, CAP_SYS_ADMIN) ? EPERM : 0;
	if (g_str_has_prefix(name, "user.")) {
		if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
			return (mask & W_OK) ? EPERM : ENODATA;
		if (S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX) && (mask & W_OK) &&
		    (!c->known || c->fsuid != st->st_uid) && !capable_wrt(c, st, CAP_FOWNER))
			return EPERM;
	}
	return fs_caller_permission(c, st, mask);
}

bool fs_xattr_listed(const fs_caller *c, const char *name)
{
	if (fs_xattr_is_ours(name))
		return false;
	/* simple_xattr_list(): trusted.* names only for CAP_SYS_ADMIN in init_user_ns */
	return !g_str_has_prefix(name, "trusted.") || fs_caller_capable(c, CAP_SYS_ADMIN);
}
