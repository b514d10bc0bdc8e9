/* takeover.c — a FUSE connection that outlives its server. The /dev/fuse
 * descriptor and a small state memfd are kept outside the process (systemd's fd
 * store or the supervisor, daemon/fdstore.c); a successor serves the same
 * connection, so every mount and bind mount of it keeps working.
 *
 * What a successor must make up for, and how:
 * - FUSE_INIT happened with the dead server: the kernel never sends it again and
 *   libfuse 3.14 answers every request with EIO until it has seen one. The first
 *   server records the kernel's INIT request byte for byte in the memfd; a
 *   successor feeds that record to fuse_session_process_buf(), which negotiates
 *   exactly as the first time (same kernel offer, same op_init) and sets the
 *   session up; its reply carries the old request's unique, which the kernel no
 *   longer knows (ENOENT, which libfuse ignores by design).
 * - Node ids and file handles (ids.h): nothing in either is an address of the dead
 *   process. A node id names an object of the real tree (a cgroup by its kernfs id, a
 *   file by its cgroup and name, a synthetic file by its cgroup and table place); an fh
 *   names an open by a serial plus what the open decided. A successor opens both
 *   again from the real tree on first use (inodes.c, handles.c): a descriptor opened
 *   before the restart goes on working.
 * - Requests the dead server had read but not answered: Linux 6.9 (FUSE_HAS_RESEND
 *   in INIT's flags2) puts them back in the queue on FUSE_NOTIFY_RESEND, which we
 *   send; every worker then reads the kept descriptor itself (no clone_fd), so
 *   that those requests wait on it. Older kernels cannot resend: workers read cloned
 *   descriptors, and the kernel fails the requests read on a clone with
 *   ECONNABORTED when the dying process closes it (fuse_dev_release), rather than
 *   leaving them in the kept descriptor's queue forever.
 * - poll() callers waiting for a wake-up the dead server owed: every kernel poll
 *   handle (kh) of a file not yet released is carried in the memfd (carry.c); a
 *   successor wakes them all, and their next FUSE_POLL revives the file.
 * - v1 listeners (OOM, thresholds, pressure levels): carried in the memfd and re-taken
 *   by the successor (ec_carry.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs_private.h"

/* Linux 6.9 (uapi fuse.h 7.40); Debian 12's headers are 7.38. */
#define FS_HAS_RESEND_FLAGS2 (1u << (39 - 32))
#define FS_NOTIFY_RESEND 7

#define FS_STATE_MAGIC UINT64_C(0x6f6f6d6466757365) /* "oomdfuse" */
#define FS_STATE_VERSION 1
#define FS_POLL_SLOTS 1024

/* The memfd's layout; shared (MAP_SHARED) by every server of the connection. */
typedef struct {
	uint64_t magic;
	uint32_t version;
	uint32_t generation; /* of the server that last took the connection */
	uint32_t init_len;
	uint32_t pad;
	unsigned char init[256]; /* the kernel's FUSE_INIT request as read */
	uint64_t poll_kh[FS_POLL_SLOTS]; /* kernel poll handles given out lately (kh % N) */
} fs_state;

struct fs_survival {
	int state_fd;
	fs_state *st;
	uint32_t generation;
	bool resend;      /* the kernel re-queues unanswered requests on FUSE_NOTIFY_RESEND */
};

/* libfuse 3.14's struct fuse_pollhandle (lib/fuse_lowlevel.c): its first member is
 * the kernel's handle; the type is private and the header offers no accessor. */
typedef struct {
	uint64_t kh;
} fs_llph;

/* ---- the operations with a file handle: the fh resolved (handles.c) ---- */

#define WITH_HANDLE(dir, call, ...)                                          \
	do {                                                                 \
		int e_ = fs_handle_resolve(fs_of(req), ino, fi, dir);        \
		if (e_) {                                                    \
			fs_reply_err(req, e_);                             \
			return;                                              \
		}                                                            \
		call(__VA_ARGS__);                                           \
	} while (0)

/* setattr uses an open's descriptor when it has one (ftruncate, futimens); a previous
 * server's open not revived yet is not needed for that: the node's path does. */
static void w_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		      struct fuse_file_info *fi)
{
	gpointer h = fi ? fs_handle_get(fs_of(req), fi->fh) : NULL;
	if (h)
		fi->fh = (uint64_t)(uintptr_t)h;
	fs_ops.setattr(req, ino, attr, to_set, h ? fi : NULL);
}
static void w_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	WITH_HANDLE(false, fs_ops.read, req, ino, size, off, fi);
}
static void w_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	WITH_HANDLE(false, fs_ops.write, req, ino, buf, size, off, fi);
}
static void w_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	WITH_HANDLE(true, fs_ops.readdir, req, ino, size, off, fi);
}
static void w_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			  struct fuse_file_info *fi)
{
	WITH_HANDLE(true, fs_ops.readdirplus, req, ino, size, off, fi);
}
/* A previous server's open never used since has nothing to release. */
static void w_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	gpointer h = fs_handle_get(fs_of(req), fi->fh);
	if (!h) {
		fuse_reply_err(req, 0);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	fs_ops.release(req, ino, fi);
}
static void w_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	gpointer h = fs_handle_get(fs_of(req), fi->fh);
	if (!h) {
		fuse_reply_err(req, 0);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	fs_ops.releasedir(req, ino, fi);
}
/* Every poll handle the kernel gives us is carried (carry.c) until its file's release,
 * so that a successor wakes every waiter; the woken caller polls again, on the same fh,
 * which the successor revives. */
static void w_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct fuse_pollhandle *ph)
{
	od_shadowfs *fs = fs_of(req);
	uint64_t kh = ph ? ((const fs_llph *)ph)->kh : 0;
	if (kh) /* the slot table a server of the previous layout wakes from */
		__atomic_store_n(&fs->surv->st->poll_kh[kh % FS_POLL_SLOTS], kh, __ATOMIC_RELAXED);
	int e = fs_handle_resolve(fs, ino, fi, false);
	if (e) {
		if (ph)
			fuse_pollhandle_destroy(ph);
		fs_reply_err(req, e); /* the kernel reports POLLERR (fuse_file_poll) */
		return;
	}
	if (kh) {
		((fs_file *)(uintptr_t)fi->fh)->kh = kh;
		if (fs->carry)
			fs_carry_poll_add(fs->carry, kh);
	}
	fs_ops.poll(req, ino, fi, ph);
}
static void w_init(void *ud, struct fuse_conn_info *conn)
{
	od_shadowfs *fs = ud;
	fs_ops.init(ud, conn);
	fs->inited = true;
}

static struct fuse_lowlevel_ops ops;
static gsize ops_once;

const struct fuse_lowlevel_ops *fs_survival_ops(void)
{
	if (g_once_init_enter(&ops_once)) {
		ops = fs_ops;
		ops.init = w_init;
		ops.setattr = w_setattr; /* getattr and fsync use no handle */
		ops.read = w_read;
		ops.write = w_write;
		ops.readdir = w_readdir;
		ops.readdirplus = w_readdirplus;
		ops.release = w_release;
		ops.releasedir = w_releasedir;
		ops.poll = w_poll;
		g_once_init_leave(&ops_once, 1);
	}
	return &ops;
}

/* ---- start: first server or successor ---- */

static fs_survival *survival_map(int state_fd, bool create, GError **err)
{
	if (create && ftruncate(state_fd, sizeof(fs_state)) < 0) {
		g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(errno),
			    "state memfd: ftruncate: %s", g_strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(state_fd, &st) < 0 || (size_t)st.st_size < sizeof(fs_state)) {
		g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_INVAL,
			    "the kept state (fd %d) is not this version's (size %jd)", state_fd,
			    (intmax_t)st.st_size);
		return NULL;
	}
	void *m = mmap(NULL, sizeof(fs_state), PROT_READ | PROT_WRITE, MAP_SHARED, state_fd, 0);
	if (m == MAP_FAILED) {
		g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(errno), "state memfd: mmap: %s",
			    g_strerror(errno));
		return NULL;
	}
	fs_survival *s = g_new0(fs_survival, 1);
	s->state_fd = state_fd;
	s->st = m;
	return s;
}

static void note_resend(fs_survival *s)
{
	const struct fuse_in_header *h = (const void *)s->st->init;
	const struct fuse_init_in *in = (const void *)(s->st->init + sizeof *h);
	s->resend = s->st->init_len >= sizeof *h + sizeof *in && (in->flags & FUSE_INIT_EXT) &&
		    (in->flags2 & FS_HAS_RESEND_FLAGS2);
}

/* The carried tables (carry.c) for the node ids, the poll handles and, on a fresh
 * mount, the listeners (a successor's are attached once re-taken). */
static bool attach_carry(od_shadowfs *fs, bool takeover, GError **err)
{
	fs->carry = fs_carry_map(fs->surv->state_fd, err);
	if (!fs->carry)
		return false;
	fs_inodes_set_carry(fs->inodes, fs->carry);
	if (!takeover && fs->evctl)
		fs_evctl_carry(fs->evctl, fs, fs->carry, false);
	return true;
}

bool fs_survival_fresh(od_shadowfs *fs, GError **err)
{
	int fd = memfd_create("oomdelayfs-state", MFD_CLOEXEC);
	if (fd < 0) {
		g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(errno), "memfd_create: %s",
			    g_strerror(errno));
		return false;
	}
	fs_survival *s = survival_map(fd, true, err);
	if (!s) {
		close(fd);
		return false;
	}
	fs->surv = s;
	s->st->magic = FS_STATE_MAGIC;
	s->st->version = FS_STATE_VERSION;
	s->generation = s->st->generation = 1;
	/* The kernel queued FUSE_INIT when it mounted: read it here, keep it, serve it. */
	struct fuse_buf buf = { .mem = NULL };
	int r = fuse_session_receive_buf(fs->se, &buf);
	const struct fuse_in_header *h = buf.mem;
	if (r < (int)sizeof *h || h->opcode != FUSE_INIT || (size_t)r > sizeof s->st->init) {
		g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_IO,
			    "the first request on the new mount is not FUSE_INIT (%d bytes)", r);
		free(buf.mem);
		return false;
	}
	memcpy(s->st->init, buf.mem, (size_t)r);
	s->st->init_len = (uint32_t)r;
	fuse_session_process_buf(fs->se, &buf);
	free(buf.mem);
	note_resend(s);
	fs->generation = (uint16_t)s->generation;
	if (!attach_carry(fs, false, err))
		return false;
	return fs->inited;
}

/* FUSE_NOTIFY_POLL for kernel poll handle kh: true if the kernel took it (it answers
 * 0 also for a handle nobody polls any more: fuse_notify_poll_wakeup). */
static bool wake_one(void *ud, uint64_t kh)
{
	od_shadowfs *fs = ud;
	struct fuse_out_header out = { .len = sizeof out + sizeof(struct fuse_notify_poll_wakeup_out),
				       .error = FUSE_NOTIFY_POLL };
	struct fuse_notify_poll_wakeup_out arg = { .kh = kh };
	struct iovec iov[2] = { { &out, sizeof out }, { &arg, sizeof arg } };
	return writev(fuse_session_fd(fs->se), iov, 2) > 0;
}

/* Every carried handle, and the slot table a server of the previous layout left. */
static void wake_pollers(od_shadowfs *fs)
{
	unsigned n = fs->carry ? fs_carry_poll_wake(fs->carry, wake_one, fs) : 0;
	for (unsigned i = 0; i < FS_POLL_SLOTS; i++) {
		uint64_t kh = fs->surv->st->poll_kh[i];
		if (kh && wake_one(fs, kh))
			n++;
		fs->surv->st->poll_kh[i] = 0;
	}
	if (n)
		g_message("takeover: woke %u poll() waiters of the previous server", n);
}

bool fs_survival_takeover(od_shadowfs *fs, int state_fd, GError **err)
{
	fs_survival *s = survival_map(state_fd, false, err);
	if (!s)
		return false;
	fs->surv = s;
	fs->took_over = true;
	if (s->st->magic != FS_STATE_MAGIC || s->st->version != FS_STATE_VERSION ||
	    s->st->init_len < sizeof(struct fuse_in_header) || s->st->init_len > sizeof s->st->init) {
		g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_INVAL,
			    "the kept state is not a recorded FUSE_INIT of this version");
		return false;
	}
	s->generation = s->st->generation % 0xffff + 1;
	s->st->generation = s->generation;
	/* Replayed: libfuse negotiates as with the kernel's own INIT. */
	size_t len = s->st->init_len;
	struct fuse_buf buf = { .size = len, .mem = g_memdup2(s->st->init, len) };
	fuse_session_process_buf(fs->se, &buf);
	g_free(buf.mem);
	if (!fs->inited) {
		g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_IO, "replaying the recorded FUSE_INIT failed");
		return false;
	}
	note_resend(s);
	fs->generation = (uint16_t)s->generation;
	if (!attach_carry(fs, true, err))
		return false;
	fs_inodes_enable_revive(fs->inodes, fs->opts.v1_layout);
	if (s->resend) {
		struct fuse_out_header out = { .len = sizeof out, .error = FS_NOTIFY_RESEND };
		if (write(fuse_session_fd(fs->se), &out, sizeof out) != sizeof out)
			g_warning("takeover: FUSE_NOTIFY_RESEND: %s", g_strerror(errno));
	}
	wake_pollers(fs);
	unsigned nl = fs->evctl ? fs_evctl_carry(fs->evctl, fs, fs->carry, true) : 0;
	g_message("took over the FUSE connection (server generation %u; unanswered requests: %s; "
		  "%u OOM listeners to re-take)",
		  s->generation, s->resend ? "re-queued by FUSE_NOTIFY_RESEND" :
					     "failed by the kernel (no FUSE_NOTIFY_RESEND before Linux 6.9)", nl);
	return true;
}

bool fs_survival_clone_fd(const od_shadowfs *fs)
{
	return !fs->surv->resend;
}

int fs_survival_state_fd(const od_shadowfs *fs)
{
	return fs->surv ? fs->surv->state_fd : -1;
}

void fs_survival_free(od_shadowfs *fs)
{
	if (!fs->surv)
		return;
	fs_carry_free(fs->carry);
	fs->carry = NULL;
	munmap(fs->surv->st, sizeof(fs_state));
	close(fs->surv->state_fd);
	g_free(fs->surv);
	fs->surv = NULL;
}
