/* fixture.h — the shadow tree mounted over a fixture directory shaped like a
 * cgroup tree (a, a/b: memory cgroups; nomem: none), with the stub controller,
 * for the criterion suites of fs/. Root and /dev/fuse, or every test skips.
 * fx_setup()/fx_teardown() are a suite's .init/.fini (a private mount namespace
 * each); set fx_no_default_permissions in an .init of your own before
 * fx_setup() to mount without default_permissions (the daemon's checks alone),
 * or set fx_v1_layout there to serve the v1 layout, or fx_cache_s to let the kernel
 * keep names and attributes. */
#ifndef OOMD_FS_TESTS_FIXTURE_H
#define OOMD_FS_TESTS_FIXTURE_H

#include <criterion/criterion.h>
#include <glib.h>
#include <stdbool.h>

#include "oomd/shadowfs.h"
#include "../fs_private.h"

extern char fixture[64], mnt[64];
extern int root_fd;
extern od_controller *ctl;
extern od_shadowfs *fs;
extern GThread *server;
extern bool skipped;
extern bool fx_no_default_permissions;
extern bool fx_v1_layout;
/* the kernel's entry and attribute time-out (opts.cache_s); 0 unless an .init sets it */
extern double fx_cache_s;
extern unsigned fx_sweep_period_s; /* 0: the default */

void fx_setup(void);
void fx_teardown(void);
gpointer serve(gpointer d);
/* writes a file of the fixture (rel to its root) */
void put(const char *rel, const char *content);
/* the path of rel in the mount (g_free it) */
char *in_mnt(const char *rel);
/* reads the whole file through the mount; NULL and errno on failure */
char *slurp(const char *rel);
/* one write(2) through the mount (O_WRONLY|O_TRUNC); 0 or errno */
int poke(const char *rel, const char *s);
/* writes "<efd> <cfd>[ args]" to cg's cgroup.event_control through the mount; 0 or errno */
int fx_register(const char *cg, int efd, int cfd, const char *args);
/* one non-blocking read of an eventfd: its counter, 0 when nothing came */
uint64_t fx_drain(int efd);
/* the signals heard on efd within ms: from the first one on, until 50 ms pass without
 * another (the notifier writes a batch one eventfd write at a time) */
uint64_t fx_wait_signal(int efd, int ms);
/* writes a fixture file in place (put() replaces it: a watch on the old inode would not see it) */
void fx_rewrite(const char *rel, const char *content);
/* st_ino of rel in the fixture: the id the controller knows the cgroup by */
uint64_t real_ino(const char *rel);
/* open(2) of rel through the mount, asserted to succeed */
int open_in_mnt(const char *rel, int flags);

#define SKIP_UNLESS_READY()                                            \
	do {                                                           \
		if (skipped)                                           \
			cr_skip_test("needs root and /dev/fuse");      \
	} while (0)

#endif
