/* kernel_io.c — see kernel_io.h. Stack buffers only on the daemon's paths; no
 * stdio (stdio buffers and locks are not wanted on the kill path, and cgroup files
 * must be read in one read(2) to get a consistent snapshot from kernfs). Only
 * od_kio_read_all (and od_kio_read_key on it) allocates: fs/ reads files of any
 * size with it (memory.stat, cgroup.procs). */
#define G_LOG_DOMAIN "oomdelayfs"
#include "oomd/kernel_io.h"
#include "kio_private.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib.h>

/* For error messages only: the real path behind dirfd (readlink of
 * /proc/self/fd/N into the caller's buffer; no allocation), with a slash after a
 * directory, whose file's name follows in the message. The od_kio_fd_* functions
 * log through the file's own descriptor, with an empty name. */
static const char *dir_path(int dirfd, char *buf, size_t size)
{
	char link[32];
	struct stat st;
	snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
	ssize_t n = readlink(link, buf, size - 2);
	if (n < 0)
		n = snprintf(buf, size - 1, "<fd %d>", dirfd);
	if (fstat(dirfd, &st) == 0 && S_ISDIR(st.st_mode))
		buf[n++] = '/';
	buf[n] = '\0';
	return buf;
}

#define LOGW(dirfd, fmt, ...)                                                 \
	do {                                                                  \
		char p_[256];                                                 \
		g_warning("%s" fmt, dir_path(dirfd, p_, sizeof p_), __VA_ARGS__); \
	} while (0)

static int open_file(int dirfd, const char *name, int flags)
{
	int fd;
	do
		fd = openat(dirfd, name, flags | O_CLOEXEC | O_NOFOLLOW);
	while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : fd;
}

/* The whole (small) content of an open cgroup file, read from offset 0 (so a kept
 * descriptor re-reads it), NUL-terminated; one read(2) is one kernfs snapshot, and a
 * short read is the end. Returns the length or -errno. */
static ssize_t read_fd(int dirfd, int fd, const char *name, char *buf, size_t size)
{
	size_t len = 0;
	while (len < size - 1) {
		ssize_t r = pread(fd, buf + len, size - 1 - len, (off_t)len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			/* ENODEV: the cgroup went away under us; that is routine. */
			if (e != ENODEV && e != ENOENT)
				LOGW(dirfd, "%s: read: %s", name, g_strerror(e));
			return -e;
		}
		size_t want = size - 1 - len;
		len += (size_t)r;
		if ((size_t)r < want)
			break;
	}
	buf[len] = '\0';
	return (ssize_t)len;
}

static int open_read(int dirfd, const char *name, bool quiet_enoent)
{
	int fd = open_file(dirfd, name, O_RDONLY);
	if (fd < 0 && !(quiet_enoent && fd == -ENOENT))
		LOGW(dirfd, "%s: open: %s", name, g_strerror(-fd));
	return fd;
}

/* Reads the whole (small) file into buf, NUL-terminated. Returns the length or -errno. */
static ssize_t read_small(int dirfd, const char *name, char *buf, size_t size, bool quiet_enoent)
{
	int fd = open_read(dirfd, name, quiet_enoent);
	if (fd < 0)
		return fd;
	ssize_t n = read_fd(dirfd, fd, name, buf, size);
	close(fd);
	return n;
}

static int parse_u64_token(const char *s, size_t len, uint64_t *out)
{
	if (len == 3 && memcmp(s, "max", 3) == 0) {
		*out = OE_UNLIMITED;
		return 0;
	}
	if (len == 0)
		return -EINVAL;
	uint64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		uint64_t d = (uint64_t)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* A one-value file's content ("max" or a number, then a newline). */
static int u64_content(int dirfd, const char *name, const char *buf, size_t len, uint64_t *out)
{
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	int r = parse_u64_token(buf, len, out);
	if (r < 0)
		LOGW(dirfd, "%s: unexpected content \"%.*s\"", name, (int)len, buf);
	return r;
}

int od_kio_read_u64(int dirfd, const char *name, uint64_t *out)
{
	char buf[64];
	ssize_t n = read_small(dirfd, name, buf, sizeof buf, true);
	return n < 0 ? (int)n : u64_content(dirfd, name, buf, (size_t)n, out);
}

/* One write at offset 0 of an open cgroup file (cgroupfs ignores the offset).
 * quiet: the errno goes back to a user who asked for the write (fs/), not to the log. */
static int write_fd(int dirfd, int fd, const char *name, const char *s, bool quiet)
{
	size_t len = strlen(s);
	ssize_t w;
	do
		w = pwrite(fd, s, len, 0);
	while (w < 0 && errno == EINTR);
	int e = w < 0 ? errno : 0;
	if (w < 0) {
		/* The kernel's errno is the useful part (EBUSY, EINVAL, ENODEV...). */
		if (e != ENODEV && e != ENOENT && !quiet)
			LOGW(dirfd, "%s: write \"%s\": %s", name, s, g_strerror(e));
		return -e;
	}
	if ((size_t)w != len) {
		LOGW(dirfd, "%s: short write \"%s\": %zd of %zu bytes", name, s, w, len);
		return -EIO;
	}
	return 0;
}

static int write_at(int dirfd, const char *name, const char *s, bool quiet)
{
	int fd = open_file(dirfd, name, O_WRONLY);
	if (fd < 0) {
		if (fd != -ENOENT && !quiet)
			LOGW(dirfd, "%s: open for writing: %s", name, g_strerror(-fd));
		return fd;
	}
	int r = write_fd(dirfd, fd, name, s, quiet);
	close(fd);
	return r;
}

int od_kio_write_str(int dirfd, const char *name, const char *s)
{
	return write_at(dirfd, name, s, false);
}

int od_kio_try_write_str(int dirfd, const char *name, const char *s)
{
	return write_at(dirfd, name, s, true);
}

static void format_u64(char buf[32], uint64_t v)
{
	if (v == OE_UNLIMITED)
		memcpy(buf, "max", 4);
	else
		snprintf(buf, 32, "%" PRIu64, v);
}

int od_kio_write_u64(int dirfd, const char *name, uint64_t v)
{
	char buf[32];
	format_u64(buf, v);
	return write_at(dirfd, name, buf, false);
}

int od_kio_write_u64_via(int dirfd, int fd, const char *name, uint64_t v)
{
	if (fd < 0)
		return od_kio_write_u64(dirfd, name, v);
	char buf[32];
	format_u64(buf, v);
	return write_fd(dirfd, fd, name, buf, false);
}

int od_kio_try_write_u64(int dirfd, const char *name, uint64_t v)
{
	char buf[32];
	format_u64(buf, v);
	return write_at(dirfd, name, buf, true);
}

int od_kio_parse_kv(const char *buf, size_t len, od_kio_kv_fn fn, void *ud)
{
	size_t i = 0;
	while (i < len) {
		size_t eol = i;
		while (eol < len && buf[eol] != '\n')
			eol++;
		size_t sp = i;
		while (sp < eol && buf[sp] != ' ')
			sp++;
		if (sp == eol) {
			if (eol > i)
				return -EINVAL; /* a key without a value */
			i = eol + 1;
			continue;
		}
		uint64_t v;
		if (parse_u64_token(buf + sp + 1, eol - sp - 1, &v) < 0)
			return -EINVAL;
		fn(ud, buf + i, sp - i, v);
		i = eol + 1;
	}
	return 0;
}

static void events_key(void *ud, const char *k, size_t kl, uint64_t v)
{
	od_kio_events *ev = ud;
#define KEY(s, field) \
	if (kl == sizeof(s) - 1 && memcmp(k, s, kl) == 0) \
		ev->field = v;
	KEY("high", high)
	KEY("max", max)
	KEY("oom", oom)
	KEY("oom_kill", oom_kill)
	KEY("populated", populated)
#undef KEY
}

int od_kio_parse_events(const char *buf, size_t len, od_kio_events *ev)
{
	memset(ev, 0, sizeof *ev);
	ev->populated = UINT64_MAX;
	return od_kio_parse_kv(buf, len, events_key, ev);
}

/* A flat-keyed file (memory.events, cgroup.events) read through an open fd. */
static int events_from(int dirfd, int fd, const char *name, od_kio_events *ev)
{
	char buf[512];
	ssize_t n = read_fd(dirfd, fd, name, buf, sizeof buf);
	if (n < 0)
		return (int)n;
	int r = od_kio_parse_events(buf, (size_t)n, ev);
	if (r < 0)
		LOGW(dirfd, "%s: unexpected content", name);
	return r;
}

/* ---- the files of a reading and of the kills, kept open or opened per use ---- */

static const struct {
	const char *name;
	int flags;
} hold_file[OD_KIO_NHOLD] = {
	[OD_KIO_CURRENT] = { "memory.current", O_RDONLY },
	[OD_KIO_EVENTS] = { "memory.events", O_RDONLY },
	[OD_KIO_EVENTS_LOCAL] = { "memory.events.local", O_RDONLY },
	[OD_KIO_CGROUP_EVENTS] = { "cgroup.events", O_RDONLY },
	[OD_KIO_MAX] = { "memory.max", O_WRONLY },
	[OD_KIO_PROCS] = { "cgroup.procs", O_RDONLY },
	[OD_KIO_KILL] = { "cgroup.kill", O_WRONLY },
	[OD_KIO_GUARD] = { "memory.events", O_RDONLY },
};
#define NREADING (OD_KIO_CGROUP_EVENTS + 1) /* a reading's files come first */

/* kept's descriptor of file i, or, without kept, one opened for this use alone
 * (give it back with put_fd). */
static int get_fd(int dirfd, const od_kio_hold_files *kept, int i)
{
	if (kept)
		return kept->fd[i];
	int fd = open_file(dirfd, hold_file[i].name, hold_file[i].flags);
	/* a reading's file gone: the cgroup went away under us, which is routine */
	if (fd < 0 && !(fd == -ENOENT && i < NREADING))
		LOGW(dirfd, "%s: open: %s", hold_file[i].name, g_strerror(-fd));
	return fd;
}

static void put_fd(const od_kio_hold_files *kept, int fd)
{
	if (!kept && fd >= 0)
		close(fd);
}

int od_kio_hold_open(int dirfd, od_kio_hold_files *h)
{
	int e = 0;
	for (int i = 0; i < OD_KIO_NHOLD; i++)
		h->fd[i] = -1;
	for (int i = 0; i < OD_KIO_NHOLD && !e; i++)
		if ((h->fd[i] = open_file(dirfd, hold_file[i].name, hold_file[i].flags)) < 0)
			e = h->fd[i];
	/* A seq_file allocates its buffer at the first read and keeps it (seq_read_iter):
	 * read each once now, so that the group kill's count of cgroup.procs and the kill
	 * guard's first look at memory.events allocate nothing when the kill is due (f-pressure-
	 * group on 6.1: a kill began 67 ms after its deadline, its tick on time). */
	char buf[4096];
	for (int i = 0; i < OD_KIO_NHOLD && !e; i++)
		if (hold_file[i].flags == O_RDONLY && pread(h->fd[i], buf, sizeof buf, 0) < 0)
			g_debug("%s: first read: %s (the next reading says why)", hold_file[i].name,
				g_strerror(errno));
	if (e) {
		if (e != -ENOENT)
			LOGW(dirfd, "open the files of a hold: %s", g_strerror(-e));
		od_kio_hold_close(h);
	}
	return e;
}

void od_kio_hold_close(od_kio_hold_files *h)
{
	for (int i = 0; i < OD_KIO_NHOLD; i++) {
		if (h->fd[i] >= 0)
			close(h->fd[i]);
		h->fd[i] = -1;
	}
}

/* The reading from open descriptors of a reading's files, in hold_file's order. */
static int reading_from(int dirfd, const int fd[NREADING], oe_reading *r)
{
	char buf[64];
	od_kio_events ev, loc, cev;
	ssize_t n;
	int e;
	memset(r, 0, sizeof *r);
	if ((n = read_fd(dirfd, fd[OD_KIO_CURRENT], "memory.current", buf, sizeof buf)) < 0)
		return (int)n;
	if ((e = u64_content(dirfd, "memory.current", buf, (size_t)n, &r->current)) < 0 ||
	    (e = events_from(dirfd, fd[OD_KIO_EVENTS], "memory.events", &ev)) < 0 ||
	    (e = events_from(dirfd, fd[OD_KIO_EVENTS_LOCAL], "memory.events.local", &loc)) < 0 ||
	    (e = events_from(dirfd, fd[OD_KIO_CGROUP_EVENTS], "cgroup.events", &cev)) < 0)
		return e;
	r->ev_high = ev.high;
	r->ev_max = ev.max;
	r->ev_oom = ev.oom;
	r->ev_oom_kill = ev.oom_kill;
	r->local_oom = loc.oom;
	r->local_oom_kill = loc.oom_kill;
	r->no_tasks = cev.populated == 0; /* an unreadable key never ends a hold */
	return 0;
}

int od_kio_read_reading(int dirfd, const od_kio_hold_files *kept, oe_reading *r)
{
	int fd[NREADING], e = 0, got = 0;
	for (; got < NREADING && !e; got++)
		if ((fd[got] = get_fd(dirfd, kept, got)) < 0)
			e = fd[got];
	if (!e)
		e = reading_from(dirfd, fd, r);
	for (int i = 0; i < got; i++)
		put_fd(kept, fd[i]);
	return e;
}

int od_kio_guard_fd(int dirfd, const od_kio_hold_files *kept, uint64_t *oom, uint64_t *oom_kill)
{
	int fd = get_fd(dirfd, kept, OD_KIO_GUARD);
	if (fd < 0)
		return fd;
	od_kio_events ev;
	int e = events_from(dirfd, fd, "memory.events", &ev);
	if (e < 0) {
		put_fd(kept, fd);
		return e;
	}
	*oom = ev.oom;
	*oom_kill = ev.oom_kill;
	return fd;
}

void od_kio_guard_put(const od_kio_hold_files *kept, int fd)
{
	put_fd(kept, fd);
}

int od_kio_guard_read(int dirfd, int fd, uint64_t *oom, uint64_t *oom_kill)
{
	od_kio_events ev;
	int e = events_from(dirfd, fd, "memory.events", &ev);
	if (e == 0) {
		*oom = ev.oom;
		*oom_kill = ev.oom_kill;
	}
	return e;
}

int od_kio_write_max(int dirfd, const od_kio_hold_files *kept, uint64_t v)
{
	char buf[32];
	format_u64(buf, v);
	int fd = get_fd(dirfd, kept, OD_KIO_MAX);
	if (fd < 0)
		return fd;
	int r = write_fd(dirfd, fd, "memory.max", buf, false);
	put_fd(kept, fd);
	return r;
}

/* The whole content of an open file of any size, in 4 KiB chunks from offset 0 (a
 * kept descriptor re-reads it: for cgroup.procs the kernel restarts its task
 * iterator at offset 0) to the end, handed to fn. Stack buffer only. 0 or -errno
 * (logged unless quiet). */
static int each_chunk(int dirfd, int fd, const char *name, bool quiet,
		      void (*fn)(void *ud, const char *buf, size_t n), void *ud)
{
	char buf[4096];
	for (off_t off = 0;;) {
		ssize_t r = pread(fd, buf, sizeof buf, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			if (!quiet)
				LOGW(dirfd, "%s: read: %s", name, g_strerror(e));
			return -e;
		}
		if (r == 0)
			return 0;
		fn(ud, buf, (size_t)r);
		off += r;
	}
}

static void count_lines(void *ud, const char *buf, size_t n)
{
	uint64_t *count = ud;
	for (size_t i = 0; i < n; i++)
		*count += buf[i] == '\n';
}

int od_kio_count_procs(int dirfd, const od_kio_hold_files *kept, uint64_t *n)
{
	int fd = get_fd(dirfd, kept, OD_KIO_PROCS);
	if (fd < 0)
		return fd;
	uint64_t count = 0;
	int e = each_chunk(dirfd, fd, "cgroup.procs", false, count_lines, &count);
	put_fd(kept, fd);
	if (!e)
		*n = count;
	return e;
}

int od_kio_kill(int dirfd, const od_kio_hold_files *kept)
{
	int fd = get_fd(dirfd, kept, OD_KIO_KILL);
	if (fd < 0)
		return fd;
	int r = write_fd(dirfd, fd, "cgroup.kill", "1", false);
	put_fd(kept, fd);
	return r;
}

/* ---- for fs/: files of any size, descriptors kept by the caller ---- */

bool od_kio_exists(int dirfd, const char *name)
{
	struct stat st;
	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

int od_kio_open(int dirfd, const char *name, int flags)
{
	return open_file(dirfd, name, flags);
}

int od_kio_fd_read_u64(int fd, uint64_t *out)
{
	char buf[64];
	ssize_t n = read_fd(fd, fd, "", buf, sizeof buf);
	return n < 0 ? (int)n : u64_content(fd, "", buf, (size_t)n, out);
}

int od_kio_fd_write_str(int fd, const char *s)
{
	return write_fd(fd, fd, "", s, true);
}

static void append(void *ud, const char *buf, size_t n)
{
	g_string_append_len(ud, buf, (gssize)n);
}

int od_kio_fd_read_all(int fd, GString *out)
{
	return each_chunk(fd, fd, "", true, append, out);
}

int od_kio_read_all(int dirfd, const char *name, GString *out)
{
	int fd = open_file(dirfd, name, O_RDONLY);
	if (fd < 0)
		return fd;
	int e = each_chunk(dirfd, fd, name, true, append, out);
	close(fd);
	return e;
}

struct key_find {
	const char *key;
	size_t kl;
	uint64_t *v;
};

static void key_found(void *ud, const char *k, size_t kl, uint64_t v)
{
	struct key_find *f = ud;
	if (kl == f->kl && memcmp(k, f->key, kl) == 0)
		*f->v = v;
}

int od_kio_read_key(int dirfd, const char *name, const char *key, uint64_t *v)
{
	g_autoptr(GString) s = g_string_new(NULL);
	*v = 0;
	int r = od_kio_read_all(dirfd, name, s);
	if (r < 0)
		return r;
	uint64_t found = 0;
	struct key_find f = { key, strlen(key), &found };
	r = od_kio_parse_kv(s->str, s->len, key_found, &f);
	if (r < 0)
		LOGW(dirfd, "%s: unexpected content", name);
	else
		*v = found;
	return r;
}
