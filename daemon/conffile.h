/* conffile.h — reading the configuration file's text, and finding a line in it
 * (conffile.c). options.c applies its keys.
 *
 * Why its own reader (issue 21, third round): g_file_get_contents waited for ever on
 * a FIFO put where the file belongs and read /dev/zero (a link to it) until memory
 * ran out; the daemon's start hung or died without a word. The file must be a
 * regular file (a link to one is fine) of at most OD_CONFIG_MAX bytes with no NUL.
 * The start-up thread; blocks for the read of one small file.
 */
#ifndef OOMD_CONFFILE_H
#define OOMD_CONFFILE_H

#include <glib.h>
#include <stdbool.h>

#define OD_CONFIG_MAX (1 << 20)

/* The file's text (g_free) and length. false with *err naming the file and the errno
 * ("FILE: open: No such file or directory (errno 2)", "FILE:LINE: a NUL byte"), and
 * *missing when it does not exist. */
bool od_conf_read(const char *file, char **text, gsize *len, bool *missing, GError **err);

/* GKeyFile keeps no line numbers: the line (1-based) of key in group, of the header
 * of group (key NULL), or of the first line that is neither blank, a comment, a
 * group nor key = value (both NULL). 0 if there is none. */
int od_conf_line(const char *text, const char *group, const char *key);

#endif
