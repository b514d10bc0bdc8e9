/* floorfs - the FUSE floor for bench-read and bench-walk: a libfuse3 low-level file system that
 * answers every request from memory, built the way a tuned server is. What a read or a listing
 * through it costs is what the same through the shadow tree must pay before the daemon does any
 * work of its own.
 *
 * usage: floorfs [-n N] [-t SECONDS] [-s] MOUNTPOINT   (foreground; SIGTERM unmounts and exits)
 *   -n N  every directory also lists N subdirectories c0 .. c<N-1> (bench-walk's directory of N
 *         cgroups), each with its own inode, served with READDIRPLUS (names and attributes in
 *         one reply, as a tuned server lists)
 *   -t S  entry and attribute time-out in seconds (default 1: the kernel keeps names and
 *         attributes, as the shadow tree does; 0 makes every path walk LOOKUP each component)
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
#include <unistd.h>

enum { ROOT = 1, CURRENT = 2, STAT = 3, MAX = 4, DIR0 = 100, MAX_DEPTH = 32 }; /* DIR0 + d: depth d */
#define CHILD0 ((fuse_ino_t)1 << 32) /* CHILD0 + i: the listed subdirectory c<i> */
static unsigned long nchildren; /* -n */
static double timeout = 1.0;    /* -t */
static char stat_text[4096];
static const char current_text[] = "8650752\n";

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
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (ino != CURRENT && ino != STAT && ino != MAX)
		return ENOENT;
	st->st_mode = S_IFREG | (ino == MAX ? 0644 : 0444);
	st->st_nlink = 1;
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

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	memset(&e, 0, sizeof e);
	fuse_ino_t depth = parent == ROOT ? 0 : parent >= CHILD0 ? MAX_DEPTH : parent - DIR0;
	if (parent != ROOT && parent < CHILD0 && (parent <= DIR0 || depth > MAX_DEPTH)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (strcmp(name, "memory.current") == 0)
		e.ino = CURRENT;
	else if (strcmp(name, "memory.stat") == 0)
		e.ino = STAT;
	else if (strcmp(name, "memory.max") == 0)
		e.ino = MAX;
	else if (child_index(name) >= 0)
		e.ino = CHILD0 + (fuse_ino_t)child_index(name);
	else if (depth < MAX_DEPTH)
		e.ino = DIR0 + depth + 1;
	else {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_stat(e.ino, &e.attr);
	e.entry_timeout = e.attr_timeout = timeout;
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
	if (k == 2)
		strcpy(name, "memory.current"), e->ino = CURRENT;
	else if (k == 3)
		strcpy(name, "memory.stat"), e->ino = STAT;
	else
		snprintf(name, 32, "c%zu", k - 4), e->ino = CHILD0 + (k - 4);
	fill_stat(e->ino, &e->attr);
	e->entry_timeout = e->attr_timeout = timeout;
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
	if (ino != CURRENT && ino != STAT && ino != MAX)
		fuse_reply_err(req, EISDIR);
	else if ((fi->flags & O_ACCMODE) != O_RDONLY && ino != MAX)
		fuse_reply_err(req, EACCES);
	else {
		fi->direct_io = 1;
		fuse_reply_open(req, fi);
	}
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	size_t len;
	const char *c = content(ino, &len);
	(void)fi;
	if (off < 0 || (size_t)off >= len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, c + off, len - (size_t)off < size ? len - (size_t)off : size);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino, (void)buf, (void)off, (void)fi;
	fuse_reply_write(req, size);
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
	.read = op_read,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
};

int main(int argc, char *argv[])
{
	bool single = false;
	int opt;
	while ((opt = getopt(argc, argv, "n:t:s")) != -1) {
		if (opt == 'n')
			nchildren = strtoul(optarg, NULL, 10);
		else if (opt == 't')
			timeout = strtod(optarg, NULL);
		else if (opt == 's')
			single = true;
		else
			optind = argc + 1;
	}
	if (optind != argc - 1 || nchildren > 10000000) {
		fprintf(stderr, "usage: floorfs [-n N] [-t SECONDS] [-s] MOUNTPOINT\n");
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
