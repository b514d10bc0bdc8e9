/* floorfs - the FUSE floor for bench-read and bench-walk: a libfuse3 low-level file system that
 * answers every request from memory, built the way a tuned server is. What a read or a listing
 * through it costs is what the same through the shadow tree must pay before the daemon does any
 * work of its own.
 *
 * usage: floorfs [-n N] [-t SECONDS] [-F SECONDS] [-r REALDIR] [-s] MOUNTPOINT
 *        (foreground; SIGTERM unmounts and exits)
 *   -n N  every directory also lists N subdirectories c0 .. c<N-1> (bench-walk's directory of N
 *         cgroups), each with its own inode, served with READDIRPLUS (names and attributes in
 *         one reply, as a tuned server lists)
 *   -t S  entry and attribute time-out in seconds (default 1: the kernel keeps names and
 *         attributes, as the shadow tree does; 0 makes every path walk LOOKUP each component)
 *   -F S  a file's entry time-out (default: -t). 0 is what a server of files whose length
 *         changes needs with sendfile readers (the shadow tree's files; docs/DESIGN.md,
 *         "a file's attributes kept 1 s too, its name never"): every walk looks it up again
 *   -r D  a pass-through floor over the real directory D (bench-walk's real parent of the
 *         N cgroups), doing the kernel work the shadow does: the attributes of c<i> and of
 *         its files are an fstatat of the real one at each lookup, listing and getattr (until
 *         2026-12-06 a file's were made up: fewer system calls than a pass-through can make,
 *         the shadow's were measured against that), and a file of c<i> (of any other
 *         directory: of D) is opened, read, written and closed for real, one descriptor per
 *         open, pread/pwrite at the caller's offset; its extended attributes are read from the
 *         real object (the kernel asks for security.capability before every write)
 *   -s    one thread (fuse_session_loop: faster for one client than the default, the daemon's
 *         own loop settings: fuse_session_loop_mt, 16 workers, one cloned descriptor each)
 * Mount options allow_other, default_permissions; direct_io on every open. Every directory
 * holds two files whose content has the shape of the files the benches compare:
 *   memory.current   "8650752\n"
 *   memory.stat      4 KiB of "key value" lines
 *   memory.max       "max\n", writable (a write is answered with its length, nothing kept)
 * and any other name is a directory (up to MAX_DEPTH deep; one inode per depth), so that a path
 * of the shadow tree's depth, /floor/a/b/memory.current, costs the kernel as many path-walk
 * steps as the shadow's /shadow/a/b/memory.current.
 * Exit status: 0 after an orderly stop, 1 on any failure (with a message on stderr).
 */
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

enum { ROOT = 1, CURRENT = 2, STAT = 3, MAX = 4, DIR0 = 100, MAX_DEPTH = 32 }; /* DIR0 + d: depth d */
#define CHILD0 ((fuse_ino_t)1 << 32) /* CHILD0 + i: the listed subdirectory c<i> */
static unsigned long nchildren; /* -n */
static double timeout = 1.0;    /* -t */
static double file_timeout = -1; /* -F; < 0: -t */
static int realfd = -1;         /* -r */
static const char *realdir;     /* -r */
/* a file of the listed subdirectory c<i> (-r): FILE0 + 8 i + (CURRENT, STAT or MAX) */
#define FILE0 ((fuse_ino_t)2 << 40)
static char stat_text[4096];
static const char current_text[] = "8650752\n";

/* The kind of file ino is (CURRENT, STAT, MAX), or 0 for a directory or nothing. */
static fuse_ino_t file_kind(fuse_ino_t ino)
{
	if (ino >= FILE0) {
		fuse_ino_t k = (ino - FILE0) % 8, i = (ino - FILE0) / 8;
		return i < nchildren && k >= CURRENT && k <= MAX ? k : 0;
	}
	return ino == CURRENT || ino == STAT || ino == MAX ? ino : 0;
}

static const char *const file_names[] = { [CURRENT] = "memory.current", [STAT] = "memory.stat",
					  [MAX] = "memory.max" };

/* The real path of file ino under -r, relative to D. */
static void real_path(fuse_ino_t ino, char path[64])
{
	if (ino >= FILE0)
		snprintf(path, 64, "c%lu/%s", (unsigned long)((ino - FILE0) / 8), file_names[file_kind(ino)]);
	else
		snprintf(path, 64, "%s", file_names[ino]);
}

static const char *content(fuse_ino_t ino, size_t *len)
{
	if (ino == MAX) {
		*len = 4;
		return "max\n";
	}
	if (ino == CURRENT) {
		*len = sizeof current_text - 1;
		return current_text;
	}
	*len = strlen(stat_text);
	return stat_text;
}

static int fill_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof *st);
	st->st_ino = ino;
	if (ino == ROOT || (ino > DIR0 && ino <= DIR0 + MAX_DEPTH) ||
	    (ino >= CHILD0 && ino < CHILD0 + nchildren)) {
		if (realfd >= 0 && ino >= CHILD0) {
			/* a pass-through server asks the real tree */
			char name[32];
			snprintf(name, sizeof name, "c%lu", (unsigned long)(ino - CHILD0));
			if (fstatat(realfd, name, st, AT_SYMLINK_NOFOLLOW) < 0)
				return errno;
			st->st_ino = ino;
			return 0;
		}
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	fuse_ino_t k = file_kind(ino);
	if (!k)
		return ENOENT;
	if (realfd >= 0) {
		/* a pass-through server asks the real tree for a file's attributes too: its owner
		 * and mode change (delegation, chmod) and memory.* vanish with the controller */
		char path[64];
		real_path(ino, path);
		if (fstatat(realfd, path, st, AT_SYMLINK_NOFOLLOW) < 0)
			return errno;
		st->st_ino = ino;
	} else {
		st->st_mode = S_IFREG | (k == MAX ? 0644 : 0444);
		st->st_nlink = 1;
	}
	st->st_size = 4096; /* as the shadow tree reports a cgroup file (see docs/DESIGN.md) */
	return 0;
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	int e = fill_stat(ino, &st);
	(void)fi;
	if (e)
		fuse_reply_err(req, e);
	else
		fuse_reply_attr(req, &st, timeout);
}

/* c<i> with i < nchildren: its index, else -1 */
static long child_index(const char *name)
{
	if (name[0] != 'c' || name[1] < '0' || name[1] > '9')
		return -1;
	char *end;
	unsigned long i = strtoul(name + 1, &end, 10);
	return *end || i >= nchildren ? -1 : (long)i;
}

static void set_timeouts(struct fuse_entry_param *e)
{
	e->attr_timeout = timeout;
	e->entry_timeout = S_ISREG(e->attr.st_mode) && file_timeout >= 0 ? file_timeout : timeout;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	memset(&e, 0, sizeof e);
	fuse_ino_t depth = parent == ROOT ? 0 : parent >= CHILD0 ? MAX_DEPTH : parent - DIR0;
	if (parent != ROOT && parent < CHILD0 && (parent <= DIR0 || depth > MAX_DEPTH)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	fuse_ino_t k = 0;
	for (fuse_ino_t f = CURRENT; f <= MAX; f++)
		if (strcmp(name, file_names[f]) == 0)
			k = f;
	if (k)
		e.ino = realfd >= 0 && parent >= CHILD0 ? FILE0 + 8 * (parent - CHILD0) + k : k;
	else if (child_index(name) >= 0)
		e.ino = CHILD0 + (fuse_ino_t)child_index(name);
	else if (depth < MAX_DEPTH)
		e.ino = DIR0 + depth + 1;
	else {
		fuse_reply_err(req, ENOENT);
		return;
	}
	int err = fill_stat(e.ino, &e.attr);
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	set_timeouts(&e);
	fuse_reply_entry(req, &e);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	if (fill_stat(ino, &st) || !S_ISDIR(st.st_mode))
		fuse_reply_err(req, ENOTDIR);
	else
		fuse_reply_open(req, fi);
}

/* Entry k of every directory: ".", "..", memory.current, memory.stat, c0 .. c<N-1>. The
 * children of a c<i> list nothing more (no directory is its own ancestor's alias). */
static bool dir_entry(fuse_ino_t dir, size_t k, char name[32], struct fuse_entry_param *e)
{
	memset(e, 0, sizeof *e);
	size_t n = 4 + (dir >= CHILD0 ? 0 : nchildren);
	if (k >= n)
		return false;
	if (k < 2) {
		strcpy(name, k ? ".." : ".");
		e->attr.st_ino = dir;
		e->attr.st_mode = S_IFDIR;
		return true;
	}
	if (k < 4) {
		fuse_ino_t f = k == 2 ? CURRENT : STAT;
		strcpy(name, file_names[f]);
		e->ino = realfd >= 0 && dir >= CHILD0 ? FILE0 + 8 * (dir - CHILD0) + f : f;
	} else {
		snprintf(name, 32, "c%zu", k - 4), e->ino = CHILD0 + (k - 4);
	}
	if (fill_stat(e->ino, &e->attr) != 0) {
		/* gone from the real tree: listed without attributes, as the shadow does */
		memset(e, 0, sizeof *e);
		return true;
	}
	set_timeouts(e);
	return true;
}

static void list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	char *buf = malloc(size ? size : 1), name[32];
	size_t used = 0;
	struct fuse_entry_param e;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (size_t k = off < 0 ? 0 : (size_t)off; dir_entry(ino, k, name, &e); k++) {
		/* "." and ".." take no lookup reference (the kernel skips them) */
		size_t need = plus ? fuse_add_direntry_plus(req, buf + used, size - used, name, &e,
							     (off_t)k + 1)
				   : fuse_add_direntry(req, buf + used, size - used, name, &e.attr,
						       (off_t)k + 1);
		if (need > size - used)
			break;
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	list(req, ino, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)fi;
	list(req, ino, size, off, true);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_ino_t k = file_kind(ino);
	if (!k) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY && k != MAX) {
		fuse_reply_err(req, EACCES);
		return;
	}
	fi->direct_io = 1;
	fi->fh = 0;
	if (realfd >= 0) {
		char path[64];
		real_path(ino, path);
		int fd = openat(realfd, path, (fi->flags & ~(O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC)) | O_CLOEXEC);
		if (fd < 0) {
			fuse_reply_err(req, errno);
			return;
		}
		fi->fh = (uint64_t)fd + 1;
	}
	if (fuse_reply_open(req, fi) != 0 && fi->fh)
		close((int)fi->fh - 1);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	if (fi->fh)
		close((int)fi->fh - 1);
	fuse_reply_err(req, 0);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	if (fi->fh) {
		char buf[65536];
		ssize_t n = pread((int)fi->fh - 1, buf, size < sizeof buf ? size : sizeof buf, off);
		if (n < 0)
			fuse_reply_err(req, errno);
		else
			fuse_reply_buf(req, buf, (size_t)n);
		return;
	}
	size_t len;
	const char *c = content(file_kind(ino), &len);
	if (off < 0 || (size_t)off >= len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, c + off, len - (size_t)off < size ? len - (size_t)off : size);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino;
	if (!fi->fh) {
		fuse_reply_write(req, size);
		return;
	}
	ssize_t n = pwrite((int)fi->fh - 1, buf, size, off);
	if (n < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_write(req, (size_t)n);
}

/* -r: the real object's attribute (cgroupfs keeps xattrs; without this handler the
 * kernel would get ENOSYS once and never ask again, which a server of them cannot do) */
static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	if (realfd < 0) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	char rel[64] = ".", path[4200], value[4096];
	if (file_kind(ino))
		real_path(ino, rel);
	else if (ino >= CHILD0 && ino < CHILD0 + nchildren)
		snprintf(rel, sizeof rel, "c%lu", (unsigned long)(ino - CHILD0));
	snprintf(path, sizeof path, "%s/%s", realdir, rel);
	ssize_t n = lgetxattr(path, name, size ? value : NULL, size < sizeof value ? size : sizeof value);
	if (n < 0)
		fuse_reply_err(req, errno);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, value, (size_t)n);
}

/* `echo > memory.max` truncates: O_TRUNC arrives with the open (atomic_o_trunc), as in the
 * daemon; a plain truncate is answered with the attributes unchanged */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid,
		       struct fuse_file_info *fi)
{
	(void)attr, (void)valid, (void)fi;
	op_getattr(req, ino, NULL);
}

static void op_init(void *ud, struct fuse_conn_info *conn)
{
	(void)ud;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.write = op_write,
	.setattr = op_setattr,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.open = op_open,
	.release = op_release,
	.getxattr = op_getxattr,
	.read = op_read,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
};

int main(int argc, char *argv[])
{
	bool single = false;
	int opt;
	while ((opt = getopt(argc, argv, "n:t:F:r:s")) != -1) {
		if (opt == 'n')
			nchildren = strtoul(optarg, NULL, 10);
		else if (opt == 't')
			timeout = strtod(optarg, NULL);
		else if (opt == 'F')
			file_timeout = strtod(optarg, NULL);
		else if (opt == 'r') {
			realdir = optarg;
			realfd = open(optarg, O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (realfd < 0) {
				fprintf(stderr, "floorfs: -r %s: %s\n", optarg, strerror(errno));
				return 1;
			}
		} else if (opt == 's')
			single = true;
		else
			optind = argc + 1;
	}
	if (optind != argc - 1 || nchildren > 10000000) {
		fprintf(stderr, "usage: floorfs [-n N] [-t SECONDS] [-F SECONDS] [-r REALDIR] [-s] MOUNTPOINT\n");
		return 1;
	}
	const char *mnt = argv[optind];
	size_t n = 0;
	for (int i = 0; n + 40 < sizeof stat_text; i++)
		n += (size_t)snprintf(stat_text + n, sizeof stat_text - n, "counter_%d %d\n", i, i * 4096);

	char *fargv[] = { argv[0], "-o", "fsname=floorfs,allow_other,default_permissions", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	struct fuse_session *se = fuse_session_new(&args, &ops, sizeof ops, NULL);
	if (!se) {
		fprintf(stderr, "floorfs: cannot create the session\n");
		return 1;
	}
	int rc = 1;
	if (fuse_set_signal_handlers(se) != 0) {
		fprintf(stderr, "floorfs: cannot set signal handlers\n");
	} else if (fuse_session_mount(se, mnt) != 0) {
		fprintf(stderr, "floorfs: cannot mount on %s\n", mnt);
		fuse_remove_signal_handlers(se);
	} else {
		if (single) {
			rc = fuse_session_loop(se) < 0 ? 1 : 0;
		} else {
			struct fuse_loop_config *cfg = fuse_loop_cfg_create();
			fuse_loop_cfg_set_max_threads(cfg, 16);
			fuse_loop_cfg_set_clone_fd(cfg, 1);
			rc = fuse_session_loop_mt(se, cfg) < 0 ? 1 : 0;
			fuse_loop_cfg_destroy(cfg);
		}
		fuse_session_unmount(se);
		fuse_remove_signal_handlers(se);
	}
	fuse_session_destroy(se);
	fuse_opt_free_args(&args);
	return rc;
}
