/* floorfs - the FUSE floor for bench-read: a libfuse3 low-level file system that answers
 * every request from memory, run with the loop settings of the daemon's own session
 * (fs/session.c: fuse_session_loop_mt, 16 workers at most, one cloned /dev/fuse descriptor per
 * worker; mount options allow_other, default_permissions; entry and attribute timeouts 0;
 * direct_io on every open). What a read through it costs is what any read through the shadow
 * tree must pay before the daemon does any work of its own.
 *
 * usage: floorfs MOUNTPOINT      (stays in the foreground; SIGTERM unmounts and exits)
 * Every directory holds two files whose content has the shape of the files bench-read compares:
 *   memory.current   "8650752\n"
 *   memory.stat      4 KiB of "key value" lines
 * and any other name is a directory (up to MAX_DEPTH deep; one inode per depth), so that a path
 * of the shadow tree's depth, /floor/a/b/memory.current, costs the kernel as many LOOKUPs (entry
 * timeout 0: one per component at every path walk) as the shadow's /shadow/a/b/memory.current.
 * Exit status: 0 after an orderly stop, 1 on any failure (with a message on stderr).
 */
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { ROOT = 1, CURRENT = 2, STAT = 3, DIR0 = 100, MAX_DEPTH = 32 }; /* DIR0 + d: depth d */
static char stat_text[4096];
static const char current_text[] = "8650752\n";

static const char *content(fuse_ino_t ino, size_t *len)
{
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
	if (ino == ROOT || (ino > DIR0 && ino <= DIR0 + MAX_DEPTH)) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (ino != CURRENT && ino != STAT)
		return ENOENT;
	st->st_mode = S_IFREG | 0444;
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
		fuse_reply_attr(req, &st, 0);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	memset(&e, 0, sizeof e);
	fuse_ino_t depth = parent == ROOT ? 0 : parent - DIR0;
	if (parent != ROOT && (parent <= DIR0 || depth > MAX_DEPTH)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (strcmp(name, "memory.current") == 0)
		e.ino = CURRENT;
	else if (strcmp(name, "memory.stat") == 0)
		e.ino = STAT;
	else if (depth < MAX_DEPTH)
		e.ino = DIR0 + depth + 1;
	else {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_stat(e.ino, &e.attr);
	fuse_reply_entry(req, &e);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != CURRENT && ino != STAT)
		fuse_reply_err(req, EISDIR);
	else if ((fi->flags & O_ACCMODE) != O_RDONLY)
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

static const struct fuse_lowlevel_ops ops = {
	.lookup = op_lookup,
	.getattr = op_getattr,
	.open = op_open,
	.read = op_read,
};

int main(int argc, char *argv[])
{
	if (argc != 2) {
		fprintf(stderr, "usage: floorfs MOUNTPOINT\n");
		return 1;
	}
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
	} else if (fuse_session_mount(se, argv[1]) != 0) {
		fprintf(stderr, "floorfs: cannot mount on %s\n", argv[1]);
		fuse_remove_signal_handlers(se);
	} else {
		struct fuse_loop_config *cfg = fuse_loop_cfg_create();
		fuse_loop_cfg_set_max_threads(cfg, 16);
		fuse_loop_cfg_set_clone_fd(cfg, 1);
		rc = fuse_session_loop_mt(se, cfg) < 0 ? 1 : 0;
		fuse_loop_cfg_destroy(cfg);
		fuse_session_unmount(se);
		fuse_remove_signal_handlers(se);
	}
	fuse_session_destroy(se);
	fuse_opt_free_args(&args);
	return rc;
}
