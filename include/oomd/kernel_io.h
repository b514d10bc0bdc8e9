/* kernel_io.h — reading and writing the real cgroup files of one cgroup, always
 * relative to a directory descriptor of it (never by path: the shadow tree may be
 * mounted over the real one). The library oomd_kio (kio/), used by daemon/ and fs/
 * alike, so that reading a knob, writing one and parsing a "key value" file are
 * written once. Any thread. Plain openat/read/write with stack buffers: the
 * daemon's part is the event -> kill path, so nothing there allocates (only
 * od_kio_read_all and od_kio_read_key, fs/'s, do).
 * Every function returns 0 or -errno and logs the file name and strerror on
 * failure (except where noted). A write of memory.max may block for as long as
 * the kernel reclaims and OOM-kills: never call these with a lock held.
 */
#ifndef OOMD_KERNEL_IO_H
#define OOMD_KERNEL_IO_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include "oomd/engine.h"

/* memory.max, memory.high, memory.current, ...: "max" reads as OE_UNLIMITED.
 * A missing file (-ENOENT, e.g. the root has no memory.max) is not logged. */
int od_kio_read_u64(int dirfd, const char *name, uint64_t *out);

/* Writes "max" for OE_UNLIMITED, else the decimal value. */
int od_kio_write_u64(int dirfd, const char *name, uint64_t v);
/* The same through fd, the caller's open descriptor of that file (logged as the
 * directory's name); fd < 0: as od_kio_write_u64. */
int od_kio_write_u64_via(int dirfd, int fd, const char *name, uint64_t v);
int od_kio_write_str(int dirfd, const char *name, const char *s);

/* The counters of memory.events / memory.events.local (and cgroup.events' populated)
 * that the engine reads. Unknown keys are skipped; missing keys read as 0. */
typedef struct {
	uint64_t high, max, oom, oom_kill;
	uint64_t populated; /* cgroup.events' key; UINT64_MAX when the content has none */
} od_kio_events;

/* The files a reading and the kills go through. A held cgroup keeps them open
 * (od_kio_hold_open, from the sample that finds it held until the cgroup goes):
 * under global memory pressure every open allocates in the kernel (a struct file,
 * a seq_file's page-sized buffer at its first read) and may stall in direct
 * reclaim just when the kill is due. Reads are preads at offset 0. hold_open
 * returns 0 or -errno and leaves every fd -1 on failure. */
enum {
	OD_KIO_CURRENT, OD_KIO_EVENTS, OD_KIO_EVENTS_LOCAL, OD_KIO_CGROUP_EVENTS, /* a reading */
	OD_KIO_MAX,   /* memory.max, written by the kernel-mode kill */
	OD_KIO_PROCS, /* cgroup.procs, counted by the group kill */
	OD_KIO_KILL,  /* cgroup.kill, written by the group kill */
	OD_KIO_GUARD, /* memory.events again, the kill guard's alone (od_kio_kill_once) */
	OD_KIO_NHOLD
};
typedef struct {
	int fd[OD_KIO_NHOLD];
} od_kio_hold_files;
int od_kio_hold_open(int dirfd, od_kio_hold_files *h);
void od_kio_hold_close(od_kio_hold_files *h);

/* Each of these goes through kept's descriptors, or, when kept is NULL, through
 * files opened for that one call. */
/* memory.current + memory.events + memory.events.local + cgroup.events in one oe_reading. */
int od_kio_read_reading(int dirfd, const od_kio_hold_files *kept, oe_reading *r);
int od_kio_write_max(int dirfd, const od_kio_hold_files *kept, uint64_t v);
/* The kernel-mode kill (kio/kill_once.c): memory.max = v written so that the kernel's OOM
 * killer kills one task in the write, not one per pass of its loop. memory_max_write
 * (mm/memcontrol.c, 6.1 to 7.x) OOM-kills again and again while usage > max, and the
 * first victim's pages are not all uncharged when the next pass looks: r-one-kill on 7
 * measured tail, its parent sh, an idle bystander and head killed for one deadline, the
 * passes 0.4 to 1.6 ms apart; e-docker on 6.12 the container's PID 1. So a guard thread
 * (started per write; SCHED_FIFO at rt_prio + 1 when rt_prio > 0 and allowed, else
 * the caller's policy) reads memory.events every 100 us and, at the "oom" event that comes
 * just before the OOM killer runs, signals the writer: the
 * loop ends on signal_pending(current), after this kill. Usage may still be over v when
 * the write returns, until the victim's pages are freed: a task that charges meanwhile
 * meets the kernel's own charge path, as at any limit. The caller's thread; blocks as the
 * write does. 0 or -errno of the write; *kills (NULL: not wanted): how far oom_kill of
 * memory.events moved in it (a descendant's own OOM counts too). Without a guard (no
 * thread, no descriptor): a plain write, logged. */
int od_kio_kill_once(int dirfd, const od_kio_hold_files *kept, uint64_t v, int rt_prio, unsigned *kills);
/* Installs the guard's signal handler (SIGRTMIN + 5, no SA_RESTART). Main thread, once,
 * before any kill. */
void od_kio_kill_once_init(void);
/* Processes in cgroup.procs (this cgroup only, as the kernel lists it). */
int od_kio_count_procs(int dirfd, const od_kio_hold_files *kept, uint64_t *n);
int od_kio_kill(int dirfd, const od_kio_hold_files *kept); /* "1" to cgroup.kill */

/* Parses "key value\n" lines (the memory.events and cgroup.events format). Pure; exposed for tests.
 * Returns 0 or -EINVAL on a malformed line. */
int od_kio_parse_events(const char *buf, size_t len, od_kio_events *ev);

/* Every "key value\n" line of a flat-keyed file (memory.events, memory.stat, ...),
 * value as od_kio_read_u64 reads it ("max" is OE_UNLIMITED), in order; empty lines
 * are skipped. Pure. 0, or -EINVAL at the first malformed line (fn has seen the
 * lines before it). (Pure parsing belongs in core/parse.c; it stays here until
 * core/ takes it.) */
typedef void (*od_kio_kv_fn)(void *ud, const char *key, size_t key_len, uint64_t value);
int od_kio_parse_kv(const char *buf, size_t len, od_kio_kv_fn fn, void *ud);

/* ---- what fs/ needs beyond that: its errors go back to the user who asked ---- */

/* Is name a regular file of the directory? (fstatat, nothing opened) */
bool od_kio_exists(int dirfd, const char *name);
/* The writes above, not logged: for a write a user asked for, whose errno is the
 * user's answer (EINVAL, EBUSY, EAGAIN from memory.reclaim...). */
int od_kio_try_write_u64(int dirfd, const char *name, uint64_t v);
int od_kio_try_write_str(int dirfd, const char *name, const char *s);
/* A file of the cgroup kept open by the caller (memory.peak, whose reset is per
 * open file since 6.12): openat with O_CLOEXEC | O_NOFOLLOW, EINTR retried. The
 * fd or -errno, not logged. */
int od_kio_open(int dirfd, const char *name, int flags);
/* A one-value file through such a descriptor, read from offset 0 (re-reads). */
int od_kio_fd_read_u64(int fd, uint64_t *out);
/* One write at offset 0 through such a descriptor; not logged (as try_write). */
int od_kio_fd_write_str(int fd, const char *s);
/* The whole content of a file of any size (memory.stat, cgroup.procs), appended
 * to out. Allocates: not for the kill path. Not logged. */
int od_kio_read_all(int dirfd, const char *name, GString *out);
/* The same through a descriptor the caller opened (from offset 0). */
int od_kio_fd_read_all(int fd, GString *out);
/* The value of key in a flat-keyed file; a missing key reads 0. -EINVAL (logged)
 * for a malformed file. */
int od_kio_read_key(int dirfd, const char *name, const char *key, uint64_t *v);

#endif
