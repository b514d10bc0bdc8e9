/* test_kernel_io.c — the parsers of kernel_io.c and the fs/ side of the library
 * (whole-file reads, keys, kept descriptors, quiet writes) on a temporary
 * directory standing in for a cgroup. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "oomd/kernel_io.h"

static char dir[64];
static int dfd = -1;

static void setup(void)
{
	strcpy(dir, "/tmp/oomd-kio-XXXXXX");
	cr_assert_not_null(g_mkdtemp(dir));
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dfd, 0);
}

static void teardown(void)
{
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
	close(dfd);
}

static void put(const char *name, const char *content)
{
	g_autofree char *p = g_build_filename(dir, name, NULL);
	cr_assert(g_file_set_contents(p, content, -1, NULL));
}

static char *content(const char *name)
{
	g_autofree char *p = g_build_filename(dir, name, NULL);
	char *s = NULL;
	cr_assert(g_file_get_contents(p, &s, NULL, NULL));
	return s;
}

TestSuite(kio, .init = setup, .fini = teardown);

Test(kio, events_keys_and_malformed_lines)
{
	od_kio_events ev;
	const char *ok = "low 1\nhigh 2\nmax 3\noom 4\noom_kill 5\n\npopulated 0\n";
	cr_assert_eq(od_kio_parse_events(ok, strlen(ok), &ev), 0);
	cr_assert_eq(ev.high, 2);
	cr_assert_eq(ev.max, 3);
	cr_assert_eq(ev.oom, 4);
	cr_assert_eq(ev.oom_kill, 5);
	cr_assert_eq(ev.populated, 0);
	cr_assert_eq(od_kio_parse_events("oom 1\n", 6, &ev), 0);
	cr_assert_eq(ev.populated, UINT64_MAX, "no populated key: unknown, not 0");
	cr_assert_eq(od_kio_parse_events("oom\n", 4, &ev), -EINVAL);
	cr_assert_eq(od_kio_parse_events("oom x\n", 6, &ev), -EINVAL);
	cr_assert_eq(od_kio_parse_events("oom 99999999999999999999\n", 25, &ev), -EINVAL);
}

static void count(void *ud, const char *k, size_t kl, uint64_t v)
{
	GString *s = ud;
	g_string_append_printf(s, "%.*s=%" G_GUINT64_FORMAT ";", (int)kl, k, v);
}

Test(kio, kv_lines_in_order_max_is_unlimited)
{
	g_autoptr(GString) s = g_string_new(NULL);
	const char *buf = "anon 10\nfile max\nshmem 0";
	cr_assert_eq(od_kio_parse_kv(buf, strlen(buf), count, s), 0);
	g_autofree char *want = g_strdup_printf("anon=10;file=%" G_GUINT64_FORMAT ";shmem=0;", OE_UNLIMITED);
	cr_assert_str_eq(s->str, want);
}

Test(kio, read_key_whole_file_beyond_a_page)
{
	GString *big = g_string_new(NULL);
	for (int i = 0; i < 400; i++)
		g_string_append_printf(big, "key_%03d %d\n", i, i * 7);
	put("memory.stat", big->str);
	uint64_t v = 1;
	cr_assert_eq(od_kio_read_key(dfd, "memory.stat", "key_399", &v), 0);
	cr_assert_eq(v, 399 * 7, "a key past the first 4 KiB is found");
	cr_assert_eq(od_kio_read_key(dfd, "memory.stat", "key", &v), 0);
	cr_assert_eq(v, 0, "a key is matched whole, a missing one reads 0");
	g_autoptr(GString) all = g_string_new(NULL);
	cr_assert_eq(od_kio_read_all(dfd, "memory.stat", all), 0);
	cr_assert_str_eq(all->str, big->str);
	g_string_free(big, TRUE);
	cr_assert_eq(od_kio_read_key(dfd, "nothere", "x", &v), -ENOENT);
	put("bad", "oom\n");
	cr_assert_eq(od_kio_read_key(dfd, "bad", "oom", &v), -EINVAL);
}

Test(kio, u64_files_writes_and_kept_descriptors)
{
	put("memory.max", "max\n");
	put("memory.low", "4096\n");
	uint64_t v = 0;
	cr_assert_eq(od_kio_read_u64(dfd, "memory.max", &v), 0);
	cr_assert_eq(v, OE_UNLIMITED);
	cr_assert_eq(od_kio_try_write_u64(dfd, "memory.low", 8192), 0);
	g_autofree char *low = content("memory.low");
	cr_assert_str_eq(low, "8192\n", "one write at offset 0 (a plain file keeps the rest)");
	cr_assert_eq(od_kio_try_write_u64(dfd, "memory.high", 1), -ENOENT, "writes never create");
	cr_assert(od_kio_exists(dfd, "memory.max"));
	cr_assert_not(od_kio_exists(dfd, "memory.high"));
	cr_assert_not(od_kio_exists(dfd, "."), "a directory is no knob");

	int fd = od_kio_open(dfd, "memory.low", O_RDWR);
	cr_assert_geq(fd, 0);
	cr_assert_eq(od_kio_fd_read_u64(fd, &v), 0);
	cr_assert_eq(v, 8192);
	cr_assert_eq(od_kio_fd_write_str(fd, "7\n\n\n\n"), 0);
	cr_assert_eq(od_kio_fd_read_u64(fd, &v), 0, "a kept descriptor re-reads from 0");
	cr_assert_eq(v, 7);
	close(fd);
	cr_assert_eq(od_kio_open(dfd, "nothere", O_RDONLY), -ENOENT);
	g_autofree char *link = g_build_filename(dir, "link", NULL);
	cr_assert_eq(symlink("memory.low", link), 0);
	cr_assert_eq(od_kio_open(dfd, "link", O_RDONLY), -ELOOP, "never through a symlink");
}
