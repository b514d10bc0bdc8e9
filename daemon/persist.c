/* persist.c — see persist.h. Text, not a struct dump: it stays readable with
 * getfattr(1) when someone debugs a held cgroup, and survives a change of the
 * struct's layout between daemon versions. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "oomd/persist.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <glib.h>

#define MAGIC "oomdelayfs-state 1 "

static void fmt_mem(char *b, size_t n, uint64_t v)
{
	if (v == OE_UNLIMITED)
		snprintf(b, n, "max");
	else
		snprintf(b, n, "%" PRIu64, v);
}

size_t od_persist_encode(const oe_persisted *p, char *buf, size_t size)
{
	char lim[24], high[24], dl[24];
	fmt_mem(lim, sizeof lim, p->limit);
	fmt_mem(high, sizeof high, p->user_high);
	if (p->deadline_ns == OE_NO_DEADLINE)
		snprintf(dl, sizeof dl, "none");
	else
		snprintf(dl, sizeof dl, "%" PRId64, p->deadline_ns);
	int n = snprintf(buf, size,
			 MAGIC "limit=%s high=%s delay=%" PRIu64 " disable=%d hold=%d spent=%d "
			       "frozen=%d deadline=%s gkills=%" PRIu64,
			 lim, high, p->delay_ms, p->disable, p->in_hold, p->delay_spent, p->frozen, dl,
			 p->group_kills);
	return n < 0 ? 0 : (size_t)n >= size ? size - 1 : (size_t)n;
}

/* Parses "<key>=<value>" at *s (value up to the next space or the end). */
static bool field(const char **s, const char *end, const char *key, char *val, size_t vsize)
{
	size_t kl = strlen(key);
	if ((size_t)(end - *s) < kl + 1 || memcmp(*s, key, kl) != 0 || (*s)[kl] != '=')
		return false;
	const char *v = *s + kl + 1, *e = v;
	while (e < end && *e != ' ')
		e++;
	if (e == v || (size_t)(e - v) >= vsize)
		return false;
	memcpy(val, v, (size_t)(e - v));
	val[e - v] = '\0';
	*s = e < end ? e + 1 : e;
	return true;
}

static bool to_u64(const char *v, uint64_t *out)
{
	if (strcmp(v, "max") == 0) {
		*out = OE_UNLIMITED;
		return true;
	}
	if (*v < '0' || *v > '9')
		return false;
	char *e;
	errno = 0;
	unsigned long long x = strtoull(v, &e, 10);
	if (errno || *e)
		return false;
	*out = x;
	return true;
}

static bool to_bool(const char *v, bool *out)
{
	if (strcmp(v, "0") && strcmp(v, "1"))
		return false;
	*out = v[0] == '1';
	return true;
}

int od_persist_decode(const char *buf, size_t len, oe_persisted *out)
{
	const char *s = buf, *end = buf + len;
	char v[32];
	oe_persisted p;
	memset(&p, 0, sizeof p);
	size_t ml = strlen(MAGIC);
	if (len < ml || memcmp(buf, MAGIC, ml) != 0)
		return -EINVAL;
	s += ml;
	if (!field(&s, end, "limit", v, sizeof v) || !to_u64(v, &p.limit))
		return -EINVAL;
	if (!field(&s, end, "high", v, sizeof v) || !to_u64(v, &p.user_high))
		return -EINVAL;
	if (!field(&s, end, "delay", v, sizeof v) || !to_u64(v, &p.delay_ms) || p.delay_ms == OE_UNLIMITED)
		return -EINVAL;
	if (!field(&s, end, "disable", v, sizeof v) || !to_bool(v, &p.disable))
		return -EINVAL;
	if (!field(&s, end, "hold", v, sizeof v) || !to_bool(v, &p.in_hold))
		return -EINVAL;
	if (!field(&s, end, "spent", v, sizeof v) || !to_bool(v, &p.delay_spent))
		return -EINVAL;
	if (!field(&s, end, "frozen", v, sizeof v) || !to_bool(v, &p.frozen))
		return -EINVAL;
	if (!field(&s, end, "deadline", v, sizeof v))
		return -EINVAL;
	if (strcmp(v, "none") == 0) {
		p.deadline_ns = OE_NO_DEADLINE;
	} else {
		char *e;
		errno = 0;
		long long d = strtoll(v, &e, 10);
		if (errno || *e || e == v)
			return -EINVAL;
		p.deadline_ns = d;
	}
	if (!field(&s, end, "gkills", v, sizeof v) || !to_u64(v, &p.group_kills) ||
	    p.group_kills == OE_UNLIMITED)
		return -EINVAL;
	if (s != end)
		return -EINVAL; /* trailing fields: a newer format we do not know */
	*out = p;
	return 0;
}

/* A user.* attribute can be set by the directory's owner, who in a delegated cgroup
 * is the user being limited: its content is logged (an operator wants to see a
 * forgery) and never parsed. */
static void drop_legacy(int dirfd)
{
	char buf[OD_PERSIST_MAX + 1];
	ssize_t n = fgetxattr(dirfd, OD_PERSIST_XATTR_LEGACY, buf, OD_PERSIST_MAX);
	if (n < 0 && errno != ERANGE) { /* ERANGE: longer than any state; removed all the same */
		if (errno != ENODATA && errno != ENOTSUP)
			g_warning("fgetxattr %s (fd %d): %s", OD_PERSIST_XATTR_LEGACY, dirfd,
				  g_strerror(errno));
		return;
	}
	buf[n < 0 ? 0 : n] = '\0';
	g_autofree char *shown = g_strescape(buf, NULL);
	char path[256], link[32];
	snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
	ssize_t pl = readlink(link, path, sizeof path - 1);
	path[pl < 0 ? 0 : pl] = '\0';
	int r = fremovexattr(dirfd, OD_PERSIST_XATTR_LEGACY) < 0 ? errno : 0;
	g_warning("%s: ignoring %s \"%s\" (the directory's owner can set user.* attributes; "
		  "state is read from %s only): %s", pl < 0 ? "?" : path, OD_PERSIST_XATTR_LEGACY,
		  shown, OD_PERSIST_XATTR, r ? g_strerror(r) : "removed");
}

int od_persist_load(int dirfd, oe_persisted *out)
{
	drop_legacy(dirfd);
	char buf[OD_PERSIST_MAX + 1];
	ssize_t n = fgetxattr(dirfd, OD_PERSIST_XATTR, buf, OD_PERSIST_MAX);
	if (n < 0) {
		int e = errno;
		if (e != ENODATA)
			g_warning("fgetxattr %s (fd %d): %s", OD_PERSIST_XATTR, dirfd, g_strerror(e));
		return -e;
	}
	if (od_persist_decode(buf, (size_t)n, out) < 0) {
		g_warning("ignoring unreadable %s (fd %d): \"%.*s\"", OD_PERSIST_XATTR, dirfd,
			  (int)n, buf);
		return -EINVAL;
	}
	return 0;
}

int od_persist_store(int dirfd, const oe_persisted *p)
{
	char buf[OD_PERSIST_MAX];
	size_t n = od_persist_encode(p, buf, sizeof buf);
	if (fsetxattr(dirfd, OD_PERSIST_XATTR, buf, n, 0) < 0) {
		int e = errno;
		/* ENOENT/ENODEV: the cgroup is being removed; its state goes with it. */
		if (e != ENOENT && e != ENODEV)
			g_warning("fsetxattr %s (fd %d): %s", OD_PERSIST_XATTR, dirfd, g_strerror(e));
		return -e;
	}
	return 0;
}

int od_persist_forget(int dirfd)
{
	if (fremovexattr(dirfd, OD_PERSIST_XATTR) < 0) {
		int e = errno;
		if (e == ENODATA || e == ENOENT || e == ENODEV)
			return 0;
		g_warning("fremovexattr %s (fd %d): %s", OD_PERSIST_XATTR, dirfd, g_strerror(e));
		return -e;
	}
	return 0;
}

int od_persist_held_at(int dirfd, const char *name)
{
	/* getxattr has no *at form before Linux 6.13: the directory's magic link. */
	char path[64 + 256], buf[OD_PERSIST_MAX + 1];
	if (snprintf(path, sizeof path, "/proc/self/fd/%d/%s", dirfd, name) >= (int)sizeof path)
		return -ENAMETOOLONG;
	ssize_t n = lgetxattr(path, OD_PERSIST_XATTR, buf, OD_PERSIST_MAX);
	if (n < 0)
		return -errno;
	oe_persisted p;
	if (od_persist_decode(buf, (size_t)n, &p) < 0)
		return -EINVAL; /* logged when it is adopted */
	return p.in_hold;
}
