/* ctl_fixture.h — the controller over a fixture directory laid out like a cgroup
 * (regular files stand in for the kernel's, read and written whole as cgroupfs's
 * are: knob_lock in ctl_fixture.c): a root and one managed cgroup g, with
 * L and a 200 ms delay written. Shared by the controller's unit tests; each test
 * runs in its own process (criterion), so the globals are per test.
 */
#ifndef OOMD_TESTS_CTL_FIXTURE_H
#define OOMD_TESTS_CTL_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include "oomd/controller.h"

#define MiB ((uint64_t)1024 * 1024)
#define L (32 * MiB)

extern char fixture[64];
extern int root_fd, g_fd;
extern od_controller *ctl;
extern uint64_t gid;
extern const char events0[], events1[];

void put(const char *name, const char *content);       /* a file of g, replaced */
void overwrite(const char *name, const char *content); /* in place: kept descriptors see it */
char *get(const char *name);                           /* g_free; stripped */
char *knob_read(const char *path); /* any fixture file, as one read (knob_lock); g_free; stripped */
void setup(oe_kill_mode mode);
int64_t start_hold(void); /* a sample over L from this thread; returns when it began */
bool holds(const char *file, const char *want);
bool wait_for_kill(int64_t limit_ms, const char *file, const char *want);
void teardown(void);

#endif
