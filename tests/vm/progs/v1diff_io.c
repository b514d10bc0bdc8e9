/* v1diff_io.c - v1diff's file, listener and hog helpers (contracts in v1diff.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "v1diff.h"
#include "vmprog.h"

int v2;
volatile int *shared;
volatile double *t_31;

const char *map(const char *file)
{
	if (!v2)
		return file;
	if (strcmp(file, "memory.limit_in_bytes") == 0)
		return "memory.max";
	if (strcmp(file, "tasks") == 0)
		return "cgroup.procs";
	return file;
}

double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

const char *ename(int e)
{
	switch (e) {
	case 0: return "OK";
	case EINVAL: return "EINVAL";
	case EBADF: return "EBADF";
	case EBUSY: return "EBUSY";
	case ENOENT: return "ENOENT";
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case ESRCH: return "ESRCH";
	case ENODEV: return "ENODEV";
	case ENOSPC: return "ENOSPC";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case E2BIG: return "E2BIG";
	case ENOMEM: return "ENOMEM";
	case EEXIST: return "EEXIST";
	case ENOTDIR: return "ENOTDIR";
	case EIO: return "EIO";
	default: {
		static char b[32];
		snprintf(b, sizeof b, "E%d", e);
		return b;
	}
	}
}

int readf(const char *path, char *buf, size_t size)
{
	ssize_t r = vp_slurp(path, buf, size);
	return r < 0 ? (int)-r : 0;
}

/* One write(2) of exactly these bytes; 0 or errno (of open or write). */
int writef(const char *path, const char *s, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	int e = write(fd, s, len) < 0 ? errno : 0;
	close(fd);
	return e;
}

static void flat(char *s) /* newlines shown as '|' */
{
	for (; *s; s++)
		if (*s == '\n')
			*s = '|';
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void list(const char *label, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		printf("ls %s: %s\n", label, ename(errno));
		return;
	}
	char *names[256];
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < 256)
		if (de->d_type != DT_DIR)
			names[n++] = strdup(de->d_name);
	closedir(d);
	qsort(names, n, sizeof *names, cmpstr);
	printf("ls %s:", label);
	for (int i = 0; i < n; i++) {
		printf(" %s", names[i]);
		free(names[i]);
	}
	printf("\n");
}

/* The shape of a file's content: exact where v1 is deterministic here. */
void show(const char *label, const char *dir, const char *file)
{
	char path[1024], buf[16384];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	int e = readf(path, buf, sizeof buf);
	if (e) {
		printf("read %s/%s: %s\n", label, file, ename(e));
		return;
	}
	if (strstr(file, "usage_in_bytes")) {
		unsigned long long v = strtoull(buf, NULL, 10);
		printf("read %s/%s: <bytes%s>%s\n", label, file, v % 4096 ? " unaligned" : "",
		       buf[strlen(buf) - 1] == '\n' ? "|" : "");
	} else if (strcmp(file, "memory.stat") == 0) {
		printf("read %s/%s keys:", label, file);
		char *save = NULL;
		for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			char *sp = strchr(l, ' ');
			if (sp) {
				*sp = 0;
				if (strncmp(l, "hierarchical_", 13) == 0)
					printf(" %s=%s", l, sp + 1);
				else
					printf(" %s", l);
			}
		}
		printf("\n");
	} else if (strcmp(file, "tasks") == 0 || strcmp(file, "cgroup.procs") == 0) {
		int lines = 0, sorted = 1;
		long prev = -1;
		for (char *p = buf; *p; p++) {
			if (*p == '\n') {
				lines++;
				continue;
			}
			if (p == buf || p[-1] == '\n') {
				long v = strtol(p, NULL, 10);
				sorted &= v > prev;
				prev = v;
			}
		}
		/* the root's population differs between the runs (the daemon's threads) */
		if (strcmp(label, "root") == 0)
			printf("read %s/%s: %s%s\n", label, file, lines ? "<lines>" : "empty",
			       sorted ? " sorted" : " unsorted");
		else
			printf("read %s/%s: %d lines\n", label, file, lines);
	} else if (strstr(file, "failcnt") && strcmp(label, "after") == 0) {
		printf("read c/%s: %s\n", file, strtoull(buf, NULL, 10) ? "<nonzero>" : "0");
	} else {
		flat(buf);
		printf("read %s/%s: [%s]\n", label, file, buf);
	}
}

/* Write value to dir/file, print the errno and what the file reads after it. */
void tryw(const char *label, const char *dir, const char *file, const char *val, size_t len)
{
	char path[1024], shown[128], after[4096];
	snprintf(path, sizeof path, "%s/%s", dir, map(file));
	size_t j = 0;
	for (size_t i = 0; i < len && j < sizeof shown - 4; i++) {
		if (val[i] == '\n') {
			shown[j++] = '\\';
			shown[j++] = 'n';
		} else if (val[i] == 0) {
			shown[j++] = '\\';
			shown[j++] = '0';
		} else {
			shown[j++] = val[i];
		}
	}
	shown[j] = 0;
	int e = writef(path, val, len);
	int re = readf(path, after, sizeof after);
	if (re)
		snprintf(after, sizeof after, "(%s)", ename(re));
	flat(after);
	printf("write %s/%s '%s': %s -> [%s]\n", label, file, shown, ename(e), after);
}

int open_in(const char *dir, const char *file, int flags)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", dir, map(file));
	return open(path, flags | O_CLOEXEC);
}

int evctl(const char *dir, const char *fmt, ...)
{
	char buf[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	char path[1024];
	snprintf(path, sizeof path, "%s/cgroup.event_control", dir);
	return writef(path, buf, strlen(buf));
}

uint64_t efd_take(int efd)
{
	uint64_t v = 0;
	struct pollfd p = { .fd = efd, .events = POLLIN };
	if (poll(&p, 1, 0) == 1 && read(efd, &v, sizeof v) != sizeof v)
		v = 0;
	return v;
}

/* Wait for the signals of a step to arrive before they are counted: the daemon sends
 * them asynchronously, and a fixed sleep made a late one look like a difference. Up to
 * 2 s for the first of ec/ep to turn readable (a step that signals nothing costs the
 * whole wait), then 200 ms for the other. */
void efd_settle(int ec, int ep)
{
	struct pollfd p[2] = { { .fd = ec, .events = POLLIN }, { .fd = ep, .events = POLLIN } };
	int n = ep >= 0 ? 2 : 1;
	if (poll(p, n, 2000) > 0)
		usleep(200000);
}

int under_oom(const char *dir)
{
	char path[1024], buf[256];
	snprintf(path, sizeof path, "%s/memory.oom_control", dir);
	if (readf(path, buf, sizeof buf))
		return -1;
	char *p = strstr(buf, "under_oom ");
	return p ? atoi(p + 10) : -1;
}

unsigned long oom_kill_of(const char *dir)
{
	char path[1024], buf[256];
	snprintf(path, sizeof path, "%s/memory.oom_control", dir);
	if (readf(path, buf, sizeof buf))
		return (unsigned long)-1;
	char *p = strstr(buf, "oom_kill ");
	return p ? strtoul(p + 9, NULL, 10) : (unsigned long)-1;
}

pid_t hog(const char *dir, int mb)
{
	shared[0] = shared[1] = 0;
	*t_31 = 0;
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	char me[32];
	snprintf(me, sizeof me, "%d\n", (int)getpid());
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", dir, map("tasks"));
	int e = writef(path, me, strlen(me));
	if (e) {
		fprintf(stderr, "hog: cannot join %s: %s\n", path, strerror(e));
		_exit(3);
	}
	size_t len = (size_t)mb << 20;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		_exit(4);
	for (size_t off = 0; off < len; off += 4096) {
		m[off] = 1;
		if ((off & ((1 << 20) - 1)) == 0) {
			shared[0] = (int)(off >> 20);
			if (shared[0] == 31)
				*t_31 = now_ms();
		}
	}
	shared[1] = 1;
	for (;;)
		pause();
}
