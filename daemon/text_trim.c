/* text_trim.c — see text_trim.h. */
#define G_LOG_DOMAIN "oomdelayfs"
#include "text_trim.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <glib.h>

typedef struct {
	unsigned long start, end;
	char perms[5];
	const char *path; /* into the smaps text; NULL for an anonymous mapping */
	unsigned long rss_kb, anon_kb;
	bool have;
} mapping;

/* Only shared libraries that none of the paths that must not fault under pressure calls
 * (the deadline thread, the kill actuators, the FUSE request path) are trimmed. Kept: the
 * executable (the daemon's own code), libc and ld.so (the system calls' wrappers, malloc,
 * printf, thread creation, the lazy binder), glib (GMutex and GCond on every path, the kill
 * line's g_message and its log writer, GAsyncQueue in audit.c and inval.c) and libfuse (every
 * request: receive, process, reply, notify). A page of these given back here would be read
 * again from the page cache, or from disk under global pressure, on the first kill after
 * start-up that needs it. Kept too: any mapping that is not a lib*.so (locale data: the kill
 * line's %f reads LC_NUMERIC from it after setlocale). What is trimmed is start-up only or
 * off those paths: gio (the stop's D-Bus query), gobject and json-glib (the status socket),
 * libcgroup and libsystemd (start-up), and their dependencies. */
static bool kept(const char *path, const char *exe)
{
	if (exe && strcmp(path, exe) == 0)
		return true;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (!g_str_has_prefix(base, "lib") || !strstr(base, ".so"))
		return true;
	static const char *const keep[] = { "libc.so", "libc-", "libglib-2.0.so", "libfuse3.so" };
	for (size_t i = 0; i < G_N_ELEMENTS(keep); i++)
		if (g_str_has_prefix(base, keep[i]))
			return true;
	return false;
}

static long release(const mapping *m, const char *exe)
{
	if (!m->have || !m->path || m->path[0] != '/' || m->perms[1] == 'w' || m->anon_kb ||
	    !m->rss_kb || kept(m->path, exe))
		return 0;
	if (madvise((void *)m->start, m->end - m->start, MADV_DONTNEED) < 0)
		return 0;
	return (long)m->rss_kb;
}

long od_trim_startup_pages(void)
{
	g_autofree char *text = NULL;
	if (!g_file_get_contents("/proc/self/smaps", &text, NULL, NULL))
		return -1;
	g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
	long freed = 0;
	mapping m = { 0 };
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		unsigned long a, b;
		char perms[5];
		int path_at = 0;
		/* "start-end perms offset dev inode [path]" starts each mapping; fields follow */
		if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &a, &b, perms, &path_at) >= 3 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			freed += release(&m, exe);
			m = (mapping){ .start = a, .end = b, .have = true };
			memcpy(m.perms, perms, sizeof m.perms);
			m.path = path_at > 0 && line[path_at] ? line + path_at : NULL;
		} else if (g_str_has_prefix(line, "Rss:")) {
			m.rss_kb = strtoul(line + 4, NULL, 10);
		} else if (g_str_has_prefix(line, "Anonymous:")) {
			m.anon_kb = strtoul(line + 10, NULL, 10);
		}
	}
	freed += release(&m, exe);
	return freed;
}
