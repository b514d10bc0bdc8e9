/* vmprog - small pieces the VM test programs share (contract in vmprog.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "vmprog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

int64_t vp_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void vp_msleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

ssize_t vp_slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t tot = 0;
	for (;;) {
		ssize_t r = read(fd, buf + tot, size - 1 - tot);
		if (r < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		if (r == 0 || tot + (size_t)r >= size - 1) {
			tot += (size_t)r;
			break;
		}
		tot += (size_t)r;
	}
	close(fd);
	buf[tot] = 0;
	return (ssize_t)tot;
}

int vp_put(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t r = write(fd, val, strlen(val));
	int e = r < 0 ? errno : 0;
	if (close(fd) < 0 && !e)
		e = errno;
	return -e;
}

long long vp_keyval(const char *buf, const char *key)
{
	size_t kl = strlen(key);
	for (const char *l = buf; l && *l;) {
		if (!strncmp(l, key, kl) && l[kl] == ' ')
			return strtoll(l + kl + 1, NULL, 10);
		l = strchr(l, '\n');
		if (l)
			l++;
	}
	return -1;
}

int64_t vp_deadline(const char *dir)
{
	char b[512];
	ssize_t r = getxattr(dir, "trusted.oomdelayfs.state", b, sizeof b - 1);
	if (r <= 0)
		return 0;
	b[r] = 0;
	char *d = strstr(b, "deadline=");
	return d ? strtoll(d + 9, NULL, 10) : 0;
}
