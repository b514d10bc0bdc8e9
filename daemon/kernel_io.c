/* kernel_io.c — see kernel_io.h. Stack buffers only; no stdio (stdio buffers and
 * locks are not wanted on the kill path, and cgroup files must be read in one
 * read(2) to get a consistent snapshot from kernfs). */
#define G_LOG_DOMAIN "oomdelayfs"
#include "oomd/kernel_io.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>

/* For error messages only: the real path of the cgroup directory behind dirfd
 * (readlink of /proc/self/fd/N into the caller's buffer; no allocation). */
static const char *dir_path(int dirfd, char *buf, size_t size)
{
	char link[32];
	snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
	ssize_t n = readlink(link, buf, size - 1);
	if (n < 0)
		snprintf(buf, size, "<fd %d>", dirfd);
	else
		buf[n] = '\0';
	return buf;
}

#define LOGW(dirfd, fmt, ...)                                                 \
	do {                                                                  \
		char p_[256];                                                 \
		g_warning("%s/" fmt, dir_path(dirfd, p_, sizeof p_), __VA_ARGS__); \
	} while (0)

static int open_file(int dirfd, const char *name, int flags)
{
	int fd;
	do
		fd = openat(dirfd, name, flags | O_CLOEXEC | O_NOFOLLOW);
	while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : fd;
}

/* Reads the whole (small) file into buf, NUL-terminated. Returns the length or -errno. */
static ssize_t read_small(int dirfd, const char *name, char *buf, size_t size, bool quiet_enoent)
{
	int fd = open_file(dirfd, name, O_RDONLY);
	if (fd < 0) {
		if (!(quiet_enoent && fd == -ENOENT))
			LOGW(dirfd, "%s: open: %s", name, g_strerror(-fd));
		return fd;
	}
	size_t len = 0;
	while (len < size - 1) {
		ssize_t r = read(fd, buf + len, size - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			/* ENODEV: the cgroup went away under us; that is routine. */
			if (e != ENODEV && e != ENOENT)
				LOGW(dirfd, "%s: read: %s", name, g_strerror(e));
			close(fd);
			return -e;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	return (ssize_t)len;
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

int od_kio_read_u64(int dirfd, const char *name, uint64_t *out)
{
	char buf[64];
	ssize_t n = read_small(dirfd, name, buf, sizeof buf, true);
	if (n < 0)
		return (int)n;
	size_t len = (size_t)n;
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	int r = parse_u64_token(buf, len, out);
	if (r < 0)
		LOGW(dirfd, "%s: unexpected content \"%.*s\"", name, (int)len, buf);
	return r;
}

int od_kio_write_str(int dirfd, const char *name, const char *s)
{
	int fd = open_file(dirfd, name, O_WRONLY);
	if (fd < 0) {
		if (fd != -ENOENT)
			LOGW(dirfd, "%s: open for writing: %s", name, g_strerror(-fd));
		return fd;
	}
	size_t len = strlen(s);
	ssize_t w;
	do
		w = write(fd, s, len);
	while (w < 0 && errno == EINTR);
	int e = w < 0 ? errno : 0;
	close(fd);
	if (w < 0) {
		/* The kernel's errno is the useful part (EBUSY, EINVAL, ENODEV...). */
		if (e != ENODEV && e != ENOENT)
			LOGW(dirfd, "%s: write \"%s\": %s", name, s, g_strerror(e));
		return -e;
	}
	if ((size_t)w != len) {
		LOGW(dirfd, "%s: short write \"%s\": %zd of %zu bytes", name, s, w, len);
		return -EIO;
	}
	return 0;
}

int od_kio_write_u64(int dirfd, const char *name, uint64_t v)
{
	char buf[32];
	if (v == OE_UNLIMITED)
		memcpy(buf, "max", 4);
	else
		snprintf(buf, sizeof buf, "%" PRIu64, v);
	return od_kio_write_str(dirfd, name, buf);
}

int od_kio_parse_events(const char *buf, size_t len, od_kio_events *ev)
{
	memset(ev, 0, sizeof *ev);
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
		const char *k = buf + i;
		size_t kl = sp - i;
#define KEY(s, field) \
	if (kl == sizeof(s) - 1 && memcmp(k, s, kl) == 0) \
		ev->field = v;
		KEY("low", low)
		KEY("high", high)
		KEY("max", max)
		KEY("oom", oom)
		KEY("oom_kill", oom_kill)
		KEY("oom_group_kill", oom_group_kill)
#undef KEY
		i = eol + 1;
	}
	return 0;
}

int od_kio_read_events(int dirfd, const char *name, od_kio_events *ev)
{
	char buf[512];
	ssize_t n = read_small(dirfd, name, buf, sizeof buf, false);
	if (n < 0)
		return (int)n;
	int r = od_kio_parse_events(buf, (size_t)n, ev);
	if (r < 0)
		LOGW(dirfd, "%s: unexpected content", name);
	return r;
}

int od_kio_read_reading(int dirfd, oe_reading *r)
{
	od_kio_events ev, loc;
	int e;
	memset(r, 0, sizeof *r);
	if ((e = od_kio_read_u64(dirfd, "memory.current", &r->current)) < 0)
		return e;
	if ((e = od_kio_read_events(dirfd, "memory.events", &ev)) < 0)
		return e;
	if ((e = od_kio_read_events(dirfd, "memory.events.local", &loc)) < 0)
		return e;
	r->ev_high = ev.high;
	r->ev_max = ev.max;
	r->ev_oom = ev.oom;
	r->ev_oom_kill = ev.oom_kill;
	r->local_oom = loc.oom;
	r->local_oom_kill = loc.oom_kill;
	return 0;
}

int od_kio_count_procs(int dirfd, uint64_t *n)
{
	int fd = open_file(dirfd, "cgroup.procs", O_RDONLY);
	if (fd < 0) {
		LOGW(dirfd, "%s: open: %s", "cgroup.procs", g_strerror(-fd));
		return fd;
	}
	char buf[4096];
	uint64_t count = 0;
	for (;;) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			LOGW(dirfd, "%s: read: %s", "cgroup.procs", g_strerror(e));
			close(fd);
			return -e;
		}
		if (r == 0)
			break;
		for (ssize_t i = 0; i < r; i++)
			count += buf[i] == '\n';
	}
	close(fd);
	*n = count;
	return 0;
}
