/* access.c — what the kernel would let a FUSE caller do to a real cgroup file,
 * for the requests the daemon then carries out as root (synthetic files whose
 * writes change memory.max, virtualised memory.max/memory.high, pass-through
 * writes, extended attributes).
 *
 * The caller is the thread of the request (fuse_req_ctx: its fsuid/fsgid and
 * tid in our pid namespace); its groups, effective capabilities and user
 * namespace are read from /proc/<tid>. A caller we cannot read, or whose fsuid
 * there is not the request's (it changed identity, or the tid was reused), gets
 * fewer rights, never more: it is treated as an unprivileged nobody.
 *
 * Called by FUSE workers at open and on xattr requests; reads /proc (a few
 * small files), never anything on a FUSE mount. Not on the kill path.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fs_private.h"

/* Who is calling, as far as a permission check needs to know. */
struct fs_caller {
	pid_t tid;
	bool known;         /* /proc said who it is and it matched the request */
	uid_t fsuid;
	gid_t fsgid;
	GArray *groups;     /* gid_t, supplementary */
	uint64_t cap_eff;
	bool init_userns;   /* in the daemon's user namespace (the FUSE superblock's, init's) */
};

static void parse_status(fs_caller *c, FILE *f)
{
	char line[4096];
	bool have_uid = false, have_gid = false;
	while (fgets(line, sizeof line, f)) {
		unsigned r, e, s, fs;
		if (sscanf(line, "Uid: %u %u %u %u", &r, &e, &s, &fs) == 4) {
			c->fsuid = fs;
			have_uid = true;
		} else if (sscanf(line, "Gid: %u %u %u %u", &r, &e, &s, &fs) == 4) {
			c->fsgid = fs;
			have_gid = true;
		} else if (g_str_has_prefix(line, "Groups:")) {
			/* a long list does not fit in one line buffer: fewer groups, never more */
			char *p = line + 7, *end;
			for (;;) {
				guint64 g = g_ascii_strtoull(p, &end, 10);
				if (end == p)
					break;
				gid_t gid = (gid_t)g;
				g_array_append_val(c->groups, gid);
				p = end;
			}
		} else if (g_str_has_prefix(line, "CapEff:")) {
			c->cap_eff = g_ascii_strtoull(line + 7, NULL, 16);
		}
	}
	c->known = have_uid && have_gid;
}

static bool same_ns(const char *a, const char *b)
{
	struct stat x, y;
	return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_ino == y.st_ino && x.st_dev == y.st_dev;
}

fs_caller *fs_caller_new(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	fs_caller *c = g_new0(fs_caller, 1);
	c->groups = g_array_new(FALSE, FALSE, sizeof(gid_t));
	c->tid = ctx->pid;
	if (ctx->pid <= 0)
		return c; /* not in our pid namespace: nobody */
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/status", (int)ctx->pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return c;
	parse_status(c, f);
	fclose(f);
	if (c->known && (c->fsuid != ctx->uid || c->fsgid != ctx->gid))
		c->known = false;
	snprintf(path, sizeof path, "/proc/%d/ns/user", (int)ctx->pid);
	c->init_userns = same_ns(path, "/proc/self/ns/user");
	if (!c->known) {
		g_array_set_size(c->groups, 0);
		c->cap_eff = 0;
		c->init_userns = false;
	}
	return c;
}

void fs_caller_free(fs_caller *c)
{
	if (!c)
		return;
	g_array_unref(c->groups);
	g_free(c);
}

/* Is id inside one of the extents of /proc/<tid>/{uid,gid}_map? The "outside"
 * column is relative to the reader's user namespace, ours. */
static bool id_mapped(pid_t tid, const char *map, unsigned id)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)tid, map);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	char line[128];
	bool found = false;
	while (!found && fgets(line, sizeof line, f)) {
		unsigned long in, out, count;
		if (sscanf(line, "%lu %lu %lu", &in, &out, &count) == 3 && id >= out && id - out < count)
			found = true;
	}
	fclose(f);
	return found;
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
	return id_mapped(c->tid, "uid_map", st->st_uid) && id_mapped(c->tid, "gid_map", st->st_gid);
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

/* fs_open_in_caller_cgns() runs open(path, flags) on this thread while it is in
 * the caller's cgroup namespace: cgroup_file_write() (6.1, 6.12) refuses a write to a file of the
 * opener's namespace root that is not delegatable (EPERM) when the hierarchy
 * is mounted with nsdelegate, judging by the namespace kept at open. A caller in
 * our own namespace needs nothing: the daemon's opens are then judged the same.
 * fd or -errno. */
/* The caller's cgroup namespace when it is not ours: 1 with *fd, 0 when it is
 * ours (nothing to do), -errno when it cannot be known. */
static int caller_cgns(fuse_req_t req, int *fd)
{
	pid_t tid = fuse_req_ctx(req)->pid;
	char nspath[64];
	snprintf(nspath, sizeof nspath, "/proc/%d/ns/cgroup", (int)tid);
	if (tid <= 0)
		return -EACCES;
	*fd = open(nspath, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -EACCES; /* gone, or not ours to know: fewer rights */
	struct stat a, b;
	if (fstat(*fd, &a) == 0 && stat("/proc/thread-self/ns/cgroup", &b) == 0 &&
	    a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
		close(*fd);
		*fd = -1;
		return 0;
	}
	return 1;
}

int fs_open_in_caller_cgns(fuse_req_t req, const char *path, int flags)
{
	int theirs = -1;
	int r = caller_cgns(req, &theirs);
	if (r < 0)
		return r;
	if (r == 0) {
		int fd = open(path, flags);
		return fd < 0 ? -errno : fd;
	}
	int ours = open("/proc/thread-self/ns/cgroup", O_RDONLY | O_CLOEXEC);
	if (ours < 0) {
		int e = errno;
		close(theirs);
		return -e;
	}
	int fd = -1, err = 0;
	if (setns(theirs, CLONE_NEWCGROUP) < 0) {
		err = errno;
	} else {
		fd = open(path, flags);
		err = errno;
		/* never serve on in a caller's namespace */
		if (setns(ours, CLONE_NEWCGROUP) < 0)
			g_error("cannot return to the daemon's cgroup namespace: %s", g_strerror(errno));
	}
	close(theirs);
	close(ours);
	return fd < 0 ? -err : fd;
}

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

int fs_caller_cgns_write_err(fuse_req_t req, int dirfd, const char *name)
{
	int theirs = -1;
	int r = caller_cgns(req, &theirs);
	if (r <= 0)
		return r < 0 ? -r : 0; /* ours: the daemon's own write is judged the same */
	close(theirs);
	if (!probe_safe(name))
		return 0;
	char path[96];
	snprintf(path, sizeof path, "/proc/self/fd/%d/%s", dirfd, name);
	int fd = fs_open_in_caller_cgns(req, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return fd == -ENOENT ? 0 : -fd;
	int err = write(fd, "-", 1) < 0 ? errno : 0;
	close(fd);
	return err == EPERM ? EPERM : 0;
}

/* ---- open ---- */

int fs_access_open(fuse_req_t req, const fs_node *n, int flags, int *write_err)
{
	*write_err = 0;
	int acc = flags & O_ACCMODE;
	if (acc == O_RDONLY || n->as_caller)
		return 0; /* reads: the kernel checked the same attributes; as_caller: the kernel checks the opener */
	struct stat st;
	const char *real = NULL; /* the real file whose write rules apply */
	int dirfd = n->fd;
	if (n->syn && !(n->syn->flags & FS_SYN_VIRTUAL)) {
		int r = fs_synth_attr(n->fd, n->syn, &st);
		if (r)
			return r;
		real = n->syn->attr_of;
	} else {
		if (fstatat(n->fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			return errno;
		if (n->syn) {
			real = n->syn->name;
			dirfd = n->cg_dirfd;
		}
	}
	g_autoptr(fs_caller) c = fs_caller_new(req);
	int r = fs_caller_permission(c, &st, acc == O_RDWR ? R_OK | W_OK : W_OK);
	if (r)
		return r;
	if (real)
		*write_err = fs_caller_cgns_write_err(req, dirfd, real);
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
		    c->fsuid != st->st_uid && !capable_wrt(c, st, CAP_FOWNER))
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
