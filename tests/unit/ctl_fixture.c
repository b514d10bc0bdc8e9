/* ctl_fixture.c — implements ctl_fixture.h. */
#include "ctl_fixture.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

char fixture[64];
int root_fd = -1, g_fd = -1;
od_controller *ctl;
uint64_t gid;

/* The kernel's cgroup files hold values, not bytes: kernfs hands a write's whole
 * buffer to the controller at once (memory_max_write, mm/memcontrol.c: one xchg of
 * the page counter's max) and a read formats the value held at that moment
 * (memory_max_show: one READ_ONCE), so a read sees the value before a concurrent
 * write or after it, never a mix, and a shorter value leaves no tail. Regular files
 * give neither: a pread racing a pwrite can return the new bytes cut at the old size
 * ("3355" of 33554432 written over "max\n"), which the controller rightly takes for
 * a foreign write of 3355 bytes (ctl_race: L became 3355, and then 771751936 after
 * 77175193 was written over 100663296 without O_TRUNC, 1 run in 3 on a loaded
 * host). So in the binaries built with this fixture the daemon's own pread/pwrite
 * (kio/kernel_io.c; -Wl,--wrap in tests/unit/meson.build) are wrapped: on a file
 * under the fixture a write replaces the content and reads and writes exclude one
 * another, as they would on cgroupfs; any other descriptor is left alone. The
 * tests' own reads and in-place writes (get, overwrite) take the same lock. Not an
 * atomic rename: descriptors a held cgroup keeps open must see every later value. */
static pthread_mutex_t knob_lock = PTHREAD_MUTEX_INITIALIZER;

ssize_t __real_pread64(int fd, void *buf, size_t n, off_t off);
ssize_t __real_pwrite64(int fd, const void *buf, size_t n, off_t off);
ssize_t __wrap_pread64(int fd, void *buf, size_t n, off_t off);
ssize_t __wrap_pwrite64(int fd, const void *buf, size_t n, off_t off);

/* A regular file under the fixture directory (fixture[] is set before the
 * controller exists, and each test is its own process). */
static bool is_knob(int fd)
{
	char link[32], path[sizeof fixture + 256];
	struct stat st;
	if (!fixture[0] || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t len = readlink(link, path, sizeof path - 1);
	size_t fl = strlen(fixture);
	return len > (ssize_t)fl && strncmp(path, fixture, fl) == 0 && path[fl] == '/';
}

ssize_t __wrap_pread64(int fd, void *buf, size_t n, off_t off)
{
	if (!is_knob(fd))
		return __real_pread64(fd, buf, n, off);
	pthread_mutex_lock(&knob_lock);
	ssize_t r = __real_pread64(fd, buf, n, off);
	int e = errno;
	pthread_mutex_unlock(&knob_lock);
	errno = e;
	return r;
}

/* The daemon writes each value whole at offset 0 (write_fd): that write becomes
 * the file's content. */
ssize_t __wrap_pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	if (off != 0 || !is_knob(fd))
		return __real_pwrite64(fd, buf, n, off);
	pthread_mutex_lock(&knob_lock);
	ssize_t r = ftruncate(fd, 0) < 0 ? -1 : __real_pwrite64(fd, buf, n, off);
	int e = errno;
	pthread_mutex_unlock(&knob_lock);
	errno = e;
	return r;
}

char *knob_read(const char *path)
{
	pthread_mutex_lock(&knob_lock);
	char *s = NULL;
	bool ok = g_file_get_contents(path, &s, NULL, NULL);
	pthread_mutex_unlock(&knob_lock);
	cr_assert(ok, "read %s", path);
	return g_strstrip(s);
}

void put(const char *name, const char *content)
{
	g_autofree char *p = g_build_filename(fixture, "g", name, NULL);
	cr_assert(g_file_set_contents(p, content, -1, NULL), "fixture %s", p);
}

/* In place: the descriptors a held cgroup keeps open must see the new content
 * (g_file_set_contents replaces the file). */
void overwrite(const char *name, const char *content)
{
	g_autofree char *p = g_build_filename(fixture, "g", name, NULL);
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "open %s", p);
	cr_assert_eq(__wrap_pwrite64(fd, content, strlen(content), 0), (ssize_t)strlen(content));
	close(fd);
}

char *get(const char *name)
{
	g_autofree char *p = g_build_filename(fixture, "g", name, NULL);
	return knob_read(p);
}

const char events0[] = "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n";
const char events1[] = "low 0\nhigh 3\nmax 1\noom 0\noom_kill 0\noom_group_kill 0\n";

void setup(oe_kill_mode mode)
{
	strcpy(fixture, "/tmp/oomd-ctl-XXXXXX");
	cr_assert_not_null(g_mkdtemp(fixture));
	g_autofree char *g = g_build_filename(fixture, "g", NULL);
	cr_assert_eq(g_mkdir(g, 0755), 0);
	put("memory.max", "max\n");
	put("memory.high", "max\n");
	put("memory.current", "4096\n");
	put("memory.events", events0);
	put("memory.events.local", events0);
	put("cgroup.events", "populated 1\nfrozen 0\n");
	put("cgroup.procs", "101\n102\n");
	put("cgroup.kill", "");
	put("cgroup.freeze", "0\n");
	root_fd = open(fixture, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	g_fd = open(g, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert(root_fd >= 0 && g_fd >= 0);
	/* State lives in trusted.*: without CAP_SYS_ADMIN no raise is ever made. */
	if (fsetxattr(g_fd, "trusted.oomd-test", "1", 1, 0) < 0)
		cr_skip_test("SKIP: trusted.* xattrs on %s: %s (needs root and a file system that "
			     "keeps them)", fixture, g_strerror(errno));
	fremovexattr(g_fd, "trusted.oomd-test");

	oe_config cfg;
	oe_config_defaults(&cfg);
	cfg.kill_mode = mode;
	ctl = od_controller_new(&cfg);
	cr_assert_not_null(ctl);
	uint64_t rid;
	cr_assert_eq(od_controller_add(ctl, 0, root_fd, &rid), 0);
	cr_assert_eq(od_controller_add(ctl, rid, g_fd, &gid), 0);
	cr_assert_eq(od_controller_write_limit(ctl, gid, L, -1), 0);
	cr_assert_eq(od_controller_write_delay(ctl, gid, 200), 0);
	/* Managed: the real memory.max is L plus the ceiling, written inline (this thread). */
	g_autofree char *max = get("memory.max");
	cr_assert_gt(g_ascii_strtoull(max, NULL, 10), L, "memory.max %s", max);
}

/* Usage over L and a max event: the sample from this thread starts a hold. */
int64_t start_hold(void)
{
	char cur[32];
	snprintf(cur, sizeof cur, "%" G_GUINT64_FORMAT "\n", L + MiB);
	put("memory.current", cur);
	put("memory.events", events1);
	put("memory.events.local", events1);
	int64_t t0 = od_now();
	od_controller_sample(ctl, gid);
	oe_view v;
	cr_assert(od_controller_view(ctl, gid, &v));
	cr_assert(v.in_hold, "no hold after a sample over L");
	return t0;
}

/* A knob's value as written last (each write replaces it, as on cgroupfs: see
 * knob_lock). A prefix, so that "" asks for an empty file and a value may carry
 * its newline. */
bool holds(const char *file, const char *want)
{
	g_autofree char *s = get(file);
	return *want ? g_str_has_prefix(s, want) : *s == '\0';
}

bool wait_for_kill(int64_t limit_ms, const char *file, const char *want)
{
	for (int64_t t = 0; t < limit_ms; t += 5) {
		if (holds(file, want))
			return true;
		g_usleep(5000);
	}
	return false;
}

void teardown(void)
{
	od_controller_free(ctl);
	close(g_fd);
	close(root_fd);
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", fixture);
	cr_expect_eq(system(cmd), 0);
}
