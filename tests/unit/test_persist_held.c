/* od_persist_held_at (persist.h): the hint that orders adoption after a restart (held
 * cgroups first, daemon/held_first.c), over a fixture directory with trusted.* state. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <glib.h>

#include "oomd/persist.h"

static char dir[] = "/tmp/oomd-held-XXXXXX";
static int dfd = -1;

static void sub(const char *name, const oe_persisted *p, const char *raw)
{
	char path[128], buf[OD_PERSIST_MAX];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	cr_assert_eq(mkdir(path, 0755), 0);
	if (!p && !raw)
		return;
	size_t n = p ? od_persist_encode(p, buf, sizeof buf) : strlen(raw);
	if (setxattr(path, OD_PERSIST_XATTR, p ? buf : raw, n, 0) < 0)
		cr_skip_test("SKIP: trusted.* xattrs on %s: %s (needs root and a file system that "
			     "keeps them)", dir, g_strerror(errno));
}

static void setup(void)
{
	cr_assert_not_null(g_mkdtemp(dir));
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC); /* O_PATH: as the walk has them */
	cr_assert_geq(dfd, 0);
}

static void teardown(void)
{
	close(dfd);
	const char *names[] = { "held", "idle", "none", "bad" };
	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		char path[128];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		rmdir(path);
	}
	rmdir(dir);
}

TestSuite(held_at, .init = setup, .fini = teardown);

Test(held_at, tells_held_from_managed_from_unmanaged)
{
	oe_persisted p = { .limit = 16 << 20, .user_high = OE_UNLIMITED, .delay_ms = 5000,
			   .deadline_ns = OE_NO_DEADLINE };
	sub("idle", &p, NULL);
	p.in_hold = true;
	p.deadline_ns = 123456789;
	sub("held", &p, NULL);
	sub("none", NULL, NULL);
	sub("bad", NULL, "oomdelayfs-state 1 limit=nonsense");
	cr_assert_eq(od_persist_held_at(dfd, "held"), 1);
	cr_assert_eq(od_persist_held_at(dfd, "idle"), 0);
	cr_assert_eq(od_persist_held_at(dfd, "none"), -ENODATA);
	cr_assert_eq(od_persist_held_at(dfd, "bad"), -EINVAL);
	cr_assert_eq(od_persist_held_at(dfd, "missing"), -ENOENT);
}
