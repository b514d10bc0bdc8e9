/* od_trim_startup_pages (daemon/text_trim.h): the clean read-only pages of the libraries off
 * the kill and request paths (here json-glib and gobject) are given back before mlockall; the
 * process goes on working (every call into such a library after it faults its pages in again,
 * and the linker's private copies, RELRO and GOT, are kept), and libc and glib (on the kill
 * path) keep every page they had. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include <json-glib/json-glib.h>

#include "text_trim.h"

/* Resident kB of the mappings whose path contains what (read with libc alone, so that
 * reading it touches no glib page). */
static long rss_of(const char *what)
{
	static char buf[1 << 20];
	int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	size_t len = 0;
	ssize_t n;
	while (len < sizeof buf - 1 && (n = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	long kb = 0;
	int in = 0;
	for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n")) {
		unsigned long a, b;
		char c;
		if (sscanf(l, "%lx-%lx %c", &a, &b, &c) == 3)
			in = strstr(l, what) != NULL;
		else if (in && strncmp(l, "Rss:", 4) == 0)
			kb += strtol(l + 4, NULL, 10);
	}
	return kb;
}

static char *work(void)
{
	/* calls into glib and json-glib (and through them gobject and libc) */
	g_autoptr(GHashTable) t = g_hash_table_new(g_str_hash, g_str_equal);
	g_hash_table_insert(t, "a", "1");
	g_autoptr(JsonNode) node = json_from_string("{\"k\": [1, 2, 3]}", NULL);
	g_autofree char *s = json_to_string(node, FALSE);
	return g_strdup_printf("%s %u %s", (char *)g_hash_table_lookup(t, "a"), g_str_hash("abc"), s);
}

Test(text_trim, releases_start_up_pages_keeps_the_kill_paths_and_the_process_keeps_working)
{
	g_autofree char *before = work();
	long glib0 = rss_of("libglib"), libc0 = rss_of("libc.so"), json0 = rss_of("libjson-glib"),
	     gobj0 = rss_of("libgobject");
	cr_assert_gt(glib0, 0);
	cr_assert_gt(json0, 0);
	long freed = od_trim_startup_pages();
	cr_assert_gt(freed, 0, "nothing released");
	long json1 = rss_of("libjson-glib"), gobj1 = rss_of("libgobject");
	cr_assert_lt(json1, json0, "json-glib's resident pages %ld kB -> %ld kB", json0, json1);
	cr_assert_lt(gobj1, gobj0, "gobject's resident pages %ld kB -> %ld kB", gobj0, gobj1);
	cr_assert_geq(rss_of("libglib"), glib0, "glib is kept (GMutex, g_message: the kill path)");
	cr_assert_geq(rss_of("libc.so"), libc0, "libc is kept");
	g_autofree char *after = work();
	cr_assert_str_eq(after, before);
}
