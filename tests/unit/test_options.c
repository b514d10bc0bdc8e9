/* Unit tests of the command line and the configuration file (options.h): the file's
 * keys apply, the command line wins, and a bad file names FILE:LINE: KEY. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oomd/options.h"

static char conf[] = "/tmp/oomd-test-conf.XXXXXX";

static void write_conf(const char *text)
{
	if (!g_str_has_suffix(conf, "XXXXXX")) { /* a second file in the same test */
		unlink(conf);
		strcpy(conf + strlen(conf) - 6, "XXXXXX");
	}
	int fd = mkstemp(conf);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void fini(void)
{
	unlink(conf);
}

/* parse "oomdelayfs --config CONF ARGS..." */
static int parse(od_options *o, GError **err, const char *a1, const char *a2, const char *a3)
{
	char *argv[8] = { "oomdelayfs", "--config", conf };
	int argc = 3;
	const char *more[] = { a1, a2, a3 };
	for (int i = 0; i < 3 && more[i]; i++)
		argv[argc++] = (char *)more[i];
	return od_options_parse(o, argc, argv, err);
}

Test(config, file_applies, .fini = fini)
{
	write_conf("# comment\n[oomdelayfs]\nmountpoint = /mnt/x\nkill-mode = group\nceiling = 16M\n"
		   "allow-other = false\nrt-priority = 0\nstatus-group = adm\nmetrics-port = 9464\n");
	od_options o;
	GError *err = NULL;
	cr_assert_eq(parse(&o, &err, NULL, NULL, NULL), OD_EXIT_OK, "%s", err ? err->message : "");
	cr_expect_str_eq(o.mountpoint, "/mnt/x");
	cr_expect_eq(o.cfg.kill_mode, OE_KILL_GROUP);
	cr_expect_eq(o.cfg.ceiling_bytes, 16u << 20);
	cr_expect_not(o.allow_other);
	cr_expect_eq(o.rt_priority, 0);
	cr_expect_str_eq(o.status_group, "adm");
	cr_expect_eq(o.metrics_port, 9464);
	cr_expect_str_eq(o.status_socket, OD_STATUS_SOCKET_DEFAULT);
	od_options_clear(&o);
}

Test(config, command_line_wins, .fini = fini)
{
	write_conf("[oomdelayfs]\nmountpoint = /mnt/x\nkill-mode = group\nceiling = 16M\n"
		   "allow-other = false\n");
	od_options o;
	GError *err = NULL;
	cr_assert_eq(parse(&o, &err, "--ceiling=32M", "--kill-mode=kernel", "/mnt/y"), OD_EXIT_OK);
	cr_expect_str_eq(o.mountpoint, "/mnt/y");
	cr_expect_eq(o.cfg.kill_mode, OE_KILL_KERNEL);
	cr_expect_eq(o.cfg.ceiling_bytes, 32u << 20);
	cr_expect_not(o.allow_other, "the file's value stays where the command line says nothing");
	od_options_clear(&o);
}

/* A bad file: exit 2, and the message starts with FILE:LINE: and names the key. */
static void expect_bad(const char *text, int line, const char *rest)
{
	write_conf(text);
	od_options o;
	GError *err = NULL;
	cr_assert_eq(parse(&o, &err, "/mnt/x", NULL, NULL), OD_EXIT_USAGE, "accepted: %s", text);
	cr_assert_not_null(err);
	char *want = g_strdup_printf("%s:%d: %s", conf, line, rest);
	cr_expect(g_str_has_prefix(err->message, want), "message '%s', want it to begin '%s'",
		  err->message, want);
	g_free(want);
	g_error_free(err);
}

Test(config, unknown_key, .fini = fini)
{
	expect_bad("[oomdelayfs]\n\n# x\nkill-mood = group\n", 4, "kill-mood: unknown key");
}

Test(config, bad_values, .fini = fini)
{
	expect_bad("[oomdelayfs]\nceiling = lots\n", 2, "ceiling: \"lots\" is not a size");
	expect_bad("[oomdelayfs]\nkill-mode=kernel\n  nice = 20\n", 3, "nice: \"20\" is not a niceness");
	expect_bad("[oomdelayfs]\ndebug = yes\n", 2, "debug: is not a boolean");
	expect_bad("[oomdelayfs]\nlayout = v3\n", 2, "layout: \"v3\" is not a layout");
	expect_bad("[oomdelayfs]\nstatus-socket = relative.sock\n", 2, "status-socket: \"relative.sock\"");
}

Test(config, syntax_and_groups, .fini = fini)
{
	expect_bad("[oomdelayfs]\nceiling = 1M\nno equals sign\n", 3, "");
	expect_bad("[oomdelayfs]\nceiling = 1M\n[status]\nx = 1\n", 3, "[status]: unknown group");
	/* release-all and version are command-line only */
	expect_bad("[oomdelayfs]\nrelease-all = true\n", 2, "release-all: unknown key");
}

Test(config, missing_file, .fini = fini)
{
	od_options o;
	GError *err = NULL;
	char *argv[] = { "oomdelayfs", "--config", "/nonexistent/oomd.conf", "/mnt/x" };
	cr_expect_eq(od_options_parse(&o, 4, argv, &err), OD_EXIT_USAGE);
	g_clear_error(&err);
	char *argv2[] = { "oomdelayfs", "--no-config", "/mnt/x" };
	cr_expect_eq(od_options_parse(&o, 3, argv2, &err), OD_EXIT_OK);
	od_options_clear(&o);
}

Test(config, release_all_ignores_the_files_mountpoint, .fini = fini)
{
	write_conf("[oomdelayfs]\nmountpoint = /mnt/x\n");
	od_options o;
	GError *err = NULL;
	cr_assert_eq(parse(&o, &err, "--release-all", NULL, NULL), OD_EXIT_OK);
	cr_expect_null(o.mountpoint);
	od_options_clear(&o);
	cr_expect_eq(parse(&o, &err, "--release-all", "/mnt/y", NULL), OD_EXIT_USAGE);
	g_clear_error(&err);
}

/* The unit passes no option (issue 19): the file's mountpoint and cgroup-root are used, and
 * without them the defaults are what the unit used to pass. */
Test(config, no_arguments_the_files_keys_or_the_defaults, .fini = fini)
{
	write_conf("[oomdelayfs]\nmountpoint = /mnt/x\ncgroup-root = /sys/fs/cgroup/sub\n");
	od_options o;
	GError *err = NULL;
	cr_assert_eq(parse(&o, &err, NULL, NULL, NULL), OD_EXIT_OK, "%s", err ? err->message : "");
	cr_expect_str_eq(o.mountpoint, "/mnt/x");
	cr_expect_not(o.mountpoint_default);
	cr_expect_str_eq(o.cgroup_root, "/sys/fs/cgroup/sub");
	od_options_clear(&o);
	write_conf("[oomdelayfs]\nkill-mode = group\n");
	cr_assert_eq(parse(&o, &err, NULL, NULL, NULL), OD_EXIT_OK, "%s", err ? err->message : "");
	cr_expect_str_eq(o.mountpoint, OD_MOUNTPOINT_DEFAULT);
	cr_expect(o.mountpoint_default);
	cr_expect_null(o.cgroup_root, "found from the mount table at start");
	od_options_clear(&o);
}

/* ---- a bad configuration file (issue 21, third round): a clear error naming the file
 * and the errno, never a hang or a crash; the good file beside works ---- */

static void expect_refused(const char *file, const char *want)
{
	od_options o;
	GError *err = NULL;
	char *argv[] = { "oomdelayfs", "--config", (char *)file, "/mnt/x" };
	gint64 t0 = g_get_monotonic_time();
	cr_assert_eq(od_options_parse(&o, 4, argv, &err), OD_EXIT_USAGE, "%s accepted", file);
	cr_assert_lt(g_get_monotonic_time() - t0, 2 * G_USEC_PER_SEC, "%s: the parse took long", file);
	cr_assert_not_null(err);
	cr_assert(strstr(err->message, file), "the message does not name %s: %s", file, err->message);
	cr_assert(strstr(err->message, want), "wanted '%s': %s", want, err->message);
	g_clear_error(&err);
	od_options_clear(&o);
}

Test(config, a_fifo_a_device_a_directory_are_refused_at_once, .fini = fini)
{
	char d[] = "/tmp/oomd-conf-XXXXXX";
	cr_assert_not_null(g_mkdtemp(d));
	g_autofree char *fifo = g_build_filename(d, "fifo.conf", NULL);
	cr_assert_eq(mkfifo(fifo, 0644), 0);
	expect_refused(fifo, "not a regular file"); /* g_file_get_contents waited for a writer */
	g_autofree char *zero = g_build_filename(d, "zero.conf", NULL);
	cr_assert_eq(symlink("/dev/zero", zero), 0);
	expect_refused(zero, "not a regular file"); /* and read /dev/zero until memory ran out */
	expect_refused(d, "errno 21");
	expect_refused("/nonexistent/oomd.conf", "errno 2");
	unlink(fifo);
	unlink(zero);
	rmdir(d);
	/* beside them, a good file applies */
	write_conf("[oomdelayfs]\nceiling = 1M\n");
	od_options o;
	GError *err = NULL;
	cr_assert_eq(parse(&o, &err, "/mnt/x", NULL, NULL), OD_EXIT_OK, "%s", err ? err->message : "");
	od_options_clear(&o);
}

Test(config, huge_binary_and_broken_files, .fini = fini)
{
	/* 2 MiB of keys */
	GString *big = g_string_new("[oomdelayfs]\n");
	while (big->len < (2u << 20))
		g_string_append(big, "# padding padding padding padding padding padding padding\n");
	write_conf(big->str);
	expect_refused(conf, "larger than 1 MiB");
	g_string_free(big, TRUE);
	/* a NUL byte: written by hand, write_conf takes a C string */
	unlink(conf);
	strcpy(conf + strlen(conf) - 6, "XXXXXX");
	int fd = mkstemp(conf);
	cr_assert_geq(fd, 0);
	static const char nul[] = "[oomdelayfs]\nceiling = 1M\nnice = \0 5\n";
	cr_assert_eq(write(fd, nul, sizeof nul - 1), (ssize_t)(sizeof nul - 1));
	close(fd);
	expect_refused(conf, ":3: a NUL byte");
	/* not UTF-8, a key without a group, a value with control characters */
	expect_bad("[oomdelayfs]\nceiling = \xff\xfe\n", 2, "");
	expect_bad("ceiling = 1M\n[oomdelayfs]\n", 1, "");
	expect_bad("[oomdelayfs]\nlayout = \x1b[2Jv1\n", 2, "layout:");
	expect_bad("[oomdelayfs]\nceiling = 99999999999999999999999999G\n", 2, "ceiling:");
	expect_bad("[oomdelayfs\nceiling = 1M\n", 1, "");
}
