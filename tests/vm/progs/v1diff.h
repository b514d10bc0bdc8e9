/* v1diff - what its two parts share: v1diff_io.c (reading, writing and printing the files of a
 * cgroup, listeners' eventfds, the hog) and v1diff.c (the steps of the transcript).
 * One process with one thread of its own (plus the hog it forks and a sleeper thread that only
 * pauses); every call blocks at most for the file operation or the wait it names.
 */
#ifndef OOMD_V1DIFF_H
#define OOMD_V1DIFF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

extern int v2; /* --v2: the v2 layout of the shadow tree (map() renames the v1 files) */
extern volatile int *shared; /* with the hog: [0] MiB touched, [1] done */
extern volatile double *t_31; /* when the hog touched its 31st MiB (CLOCK_MONOTONIC ms) */

/* the file that stands for the v1 file in this run's layout */
const char *map(const char *file);
double now_ms(void); /* CLOCK_MONOTONIC */
/* the errno's name ("OK" for 0) */
const char *ename(int e);
/* read a whole file into buf (NUL-terminated); 0 or errno */
int readf(const char *path, char *buf, size_t size);
/* one write(2) of exactly these bytes; 0 or errno (of open or write) */
int writef(const char *path, const char *s, size_t len);
/* print "ls LABEL: NAMES" (the files of dir, sorted) */
void list(const char *label, const char *dir);
/* print the shape of dir/file's content: exact where v1 is deterministic here */
void show(const char *label, const char *dir, const char *file);
/* write val to dir/file, print the errno and what the file reads after it */
void tryw(const char *label, const char *dir, const char *file, const char *val, size_t len);
#define TRYW(l, d, f, v) tryw(l, d, f, v, strlen(v))
/* open dir/file (its name in this layout) */
int open_in(const char *dir, const char *file, int flags);
/* write the formatted line to dir/cgroup.event_control; 0 or errno */
int evctl(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* the count of eventfd efd, 0 when it has none (never blocks) */
uint64_t efd_take(int efd);
/* wait (up to 2 s, then 200 ms) for the signals of a step; ep < 0: ec alone */
void efd_settle(int ec, int ep);
/* under_oom and oom_kill of dir/memory.oom_control; -1 when unreadable */
int under_oom(const char *dir);
unsigned long oom_kill_of(const char *dir);
/* fork a hog that joins dir and touches mb MiB (progress in shared and t_31); its pid */
pid_t hog(const char *dir, int mb);

#endif
