/* kernel_io.h — reading and writing the real cgroup files of one cgroup, always
 * relative to a directory descriptor of it (never by path: the shadow tree may be
 * mounted over the real one). Plain openat/read/write with stack buffers: this is
 * the event -> kill path, so nothing here allocates.
 * Every function returns 0 or -errno and logs the file name and strerror on
 * failure (except where noted). A write of memory.max may block for as long as
 * the kernel reclaims and OOM-kills: never call these with a lock held.
 */
#ifndef OOMD_KERNEL_IO_H
#define OOMD_KERNEL_IO_H

#include <stdint.h>
#include "oomd/engine.h"

/* memory.max, memory.high, memory.current, ...: "max" reads as OE_UNLIMITED.
 * A missing file (-ENOENT, e.g. the root has no memory.max) is not logged. */
int od_kio_read_u64(int dirfd, const char *name, uint64_t *out);

/* Writes "max" for OE_UNLIMITED, else the decimal value. */
int od_kio_write_u64(int dirfd, const char *name, uint64_t v);
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
/* Processes in cgroup.procs (this cgroup only, as the kernel lists it). */
int od_kio_count_procs(int dirfd, const od_kio_hold_files *kept, uint64_t *n);
int od_kio_kill(int dirfd, const od_kio_hold_files *kept); /* "1" to cgroup.kill */

/* Parses "key value\n" lines (the memory.events and cgroup.events format). Pure; exposed for tests.
 * Returns 0 or -EINVAL on a malformed line. */
int od_kio_parse_events(const char *buf, size_t len, od_kio_events *ev);

#endif
