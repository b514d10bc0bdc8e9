/* hellofs - a minimal libfuse3 low-level file system with one file, /hello,
 * used by the k-fuse scenario to show that FUSE mounting works in the VM.
 * usage: hellofs MOUNTPOINT [-f] [other fuse options]
 * With HELLOFS_HANG=1 in the environment it never answers FLUSH (sent at each
 * close of /hello) nor GETATTR of /hello (sent by fstat once the cached attributes
 * expire, 1 s): whoever closes or fstats a descriptor of /hello waits until this
 * server dies (s-listener-fusefd: the hostile caller's own server). */
#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *hello_str = "hello from fuse\n";
static const char *hello_name = "hello";

static int hello_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof *st);
	st->st_ino = ino;
	if (ino == 1) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else if (ino == 2) {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)strlen(hello_str);
	} else {
		return -1;
	}
	return 0;
}

static int hang; /* HELLOFS_HANG: leave FLUSH and GETATTR of /hello unanswered */

static void hello_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	(void)fi;
	if (hang && ino == 2) {
		fprintf(stderr, "hellofs: GETATTR of /hello left unanswered\n");
		return; /* no reply: the kernel keeps the caller waiting */
	}
	if (hello_stat(ino, &st) < 0)
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_attr(req, &st, 1.0);
}

static void hello_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	if (parent != 1 || strcmp(name, hello_name) != 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof e);
	e.ino = 2;
	e.attr_timeout = 1.0;
	e.entry_timeout = 1.0;
	hello_stat(e.ino, &e.attr);
	fuse_reply_entry(req, &e);
}

static void hello_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			  struct fuse_file_info *fi)
{
	(void)fi;
	if (ino != 1) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	char buf[512];
	size_t len = 0;
	struct stat st = { 0 };
	const char *names[] = { ".", "..", hello_name };
	fuse_ino_t inos[] = { 1, 1, 2 };
	for (off_t i = off; i < 3; i++) {
		st.st_ino = inos[i];
		size_t n = fuse_add_direntry(req, buf + len, sizeof buf - len, names[i], &st, i + 1);
		if (n > sizeof buf - len)
			break;
		len += n;
	}
	fuse_reply_buf(req, buf, len < size ? len : size);
}

static void hello_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != 2)
		fuse_reply_err(req, EISDIR);
	else if ((fi->flags & O_ACCMODE) != O_RDONLY)
		fuse_reply_err(req, EACCES);
	else
		fuse_reply_open(req, fi);
}

static void hello_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	(void)ino;
	size_t len = strlen(hello_str);
	if ((size_t)off >= len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, hello_str + off, len - (size_t)off < size ? len - (size_t)off : size);
}

static void hello_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	if (hang) {
		fprintf(stderr, "hellofs: FLUSH left unanswered\n");
		return;
	}
	fuse_reply_err(req, 0);
}

static const struct fuse_lowlevel_ops hello_ops = {
	.flush = hello_flush,
	.lookup = hello_lookup,
	.getattr = hello_getattr,
	.readdir = hello_readdir,
	.open = hello_open,
	.read = hello_read,
};

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts;
	int ret = 1;

	const char *h = getenv("HELLOFS_HANG");
	hang = h && strcmp(h, "1") == 0;
	if (fuse_parse_cmdline(&args, &opts) != 0)
		return 1;
	if (!opts.mountpoint) {
		fprintf(stderr, "usage: %s MOUNTPOINT [-f]\n", argv[0]);
		goto out;
	}
	struct fuse_session *se = fuse_session_new(&args, &hello_ops, sizeof hello_ops, NULL);
	if (!se)
		goto out;
	if (fuse_set_signal_handlers(se) == 0) {
		if (fuse_session_mount(se, opts.mountpoint) == 0) {
			fuse_daemonize(opts.foreground);
			ret = fuse_session_loop(se);
			fuse_session_unmount(se);
		}
		fuse_remove_signal_handlers(se);
	}
	fuse_session_destroy(se);
out:
	free(opts.mountpoint);
	fuse_opt_free_args(&args);
	return ret ? 1 : 0;
}
