/* conffile.c — conffile.h. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conffile.h"

static bool read_fail(GError **err, const char *file, const char *what, int errnum)
{
	g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(errnum), "%s: %s: %s (errno %d)", file,
		    what, g_strerror(errnum), errnum);
	return false;
}

bool od_conf_read(const char *file, char **text, gsize *len, bool *missing, GError **err)
{
	*missing = false;
	int fd = open(file, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		*missing = errno == ENOENT;
		return read_fail(err, file, "open", errno);
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > OD_CONFIG_MAX) {
		int e = errno;
		close(fd);
		if (!S_ISREG(st.st_mode))
			return read_fail(err, file, "not a regular file", S_ISDIR(st.st_mode) ? EISDIR : EINVAL);
		if (st.st_size > OD_CONFIG_MAX)
			return read_fail(err, file, "larger than 1 MiB", EFBIG);
		return read_fail(err, file, "fstat", e);
	}
	GString *s = g_string_sized_new((gsize)st.st_size + 1);
	char buf[4096];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			g_string_free(s, TRUE);
			return read_fail(err, file, "read", e);
		}
		if (n == 0)
			break;
		g_string_append_len(s, buf, n);
		if (s->len > OD_CONFIG_MAX) {
			close(fd);
			g_string_free(s, TRUE);
			return read_fail(err, file, "larger than 1 MiB", EFBIG);
		}
	}
	close(fd);
	const char *nul = memchr(s->str, '\0', s->len);
	if (nul) {
		int line = 1;
		for (const char *c = s->str; c < nul; c++)
			line += *c == '\n';
		g_set_error(err, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_PARSE, "%s:%d: a NUL byte (not a text file)",
			    file, line);
		g_string_free(s, TRUE);
		return false;
	}
	*len = s->len;
	*text = g_string_free(s, FALSE);
	return true;
}

int od_conf_line(const char *text, const char *group, const char *key)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	g_autofree char *cur = NULL;
	bool grouped = false; /* a group header came before */
	for (int i = 0; lines[i]; i++) {
		const char *l = lines[i];
		while (g_ascii_isspace(*l))
			l++;
		if (*l == '\0' || *l == '#')
			continue;
		if (*l == '[') {
			const char *end = strchr(l, ']');
			grouped = true;
			g_free(cur);
			cur = end ? g_strndup(l + 1, (gsize)(end - l - 1)) : NULL;
			if ((!end && !key && !group) || (!key && group && g_strcmp0(cur, group) == 0))
				return i + 1;
			continue;
		}
		const char *eq = strchr(l, '=');
		if (!eq || !grouped) { /* not key = value, or a key before any group */
			if (!key && !group)
				return i + 1;
			continue;
		}
		if (!key || g_strcmp0(cur, group) != 0)
			continue;
		g_autofree char *k = g_strstrip(g_strndup(l, (gsize)(eq - l)));
		if (strcmp(k, key) == 0)
			return i + 1;
	}
	return 0;
}

