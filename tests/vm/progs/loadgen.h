/* loadgen - what the parts of the load test share (loadgen.c: options, the run, the daemon's
 * figures; loadgen_client.c: the client processes; loadgen_hog.c: the hog managers).
 * Every client and hog manager is a forked process: the counters live in S, a shared anonymous
 * mapping, and are only ever added to atomically; the options are set before the fork and only
 * read after it. Nothing here blocks beyond the file operation it names.
 */
#ifndef OOMD_LOADGEN_H
#define OOMD_LOADGEN_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "vmprog.h"

struct stats {
	atomic_long files_read, dirs_read, expected_errs;
	atomic_long writes, readbacks, lost;
	atomic_long mkdirs, rmdirs, inherit_checks;
	atomic_long listeners, notified;
	atomic_long errors;
	atomic_long holds, killed, resolved_raise, resolved_exit, early, seen_late, acted_late, dl_unseen;
	atomic_long notified_after_kill; /* a hold known only by a notification that came after the hog's kill */
	atomic_long logged;
	atomic_int stop;
};

extern struct stats *S;
extern const char *sbase, *rbase;
extern int nclients, nhogs, hog_mb, limit_mb;
extern char who[64]; /* this process's name in the messages: "client 3", "hog 1", "main" */

static inline int64_t mono(void) { return vp_ns(CLOCK_MONOTONIC); }
/* the run is over (its duration has passed, or the main process stopped it) */
int over(void);
/* count an unexpected error and log it on stderr (the first 40 of the run) */
void unexpected(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "loadgen: MESSAGE" on stderr, exit 1 */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* write val to path, read it back: a read-back not starting with expect is a lost write */
void write_check(const char *path, const char *val, const char *expect);
/* waitpid, again after a signal */
void reap(pid_t pid, int *st);

/* a client process's loop until over() (loadgen_client.c) */
void client(int id);
/* a hog manager's loop until over() (loadgen_hog.c) */
void hog_manager(int id);

/* the daemon's figures (loadgen.c): all its descriptors and how many are /dev/fuse, its
 * threads, the targets of its descriptors one a line into buf, its VmRSS; -1 when it is gone */
long count_fds(int pid, long *fuse);
long count_threads(int pid);
void fd_targets(int pid, char *buf, size_t size);
long rss_kb(int pid);

#endif
