/* kio_private.h — what kill_once.c borrows from kernel_io.c: the guard's own descriptor
 * of memory.events (OD_KIO_GUARD: kept with a hold's files, so the kill opens nothing
 * under memory pressure). Any thread; never block beyond the read. */
#ifndef OOMD_KIO_PRIVATE_H
#define OOMD_KIO_PRIVATE_H

#include <stdint.h>
#include "oomd/kernel_io.h"

/* The guard's descriptor (kept's, or opened for this use) and the oom and oom_kill
 * counts read through it. The descriptor, or -errno. Give it back with od_kio_guard_put. */
int od_kio_guard_fd(int dirfd, const od_kio_hold_files *kept, uint64_t *oom, uint64_t *oom_kill);
/* The descriptor back (closed unless kept's). */
void od_kio_guard_put(const od_kio_hold_files *kept, int fd);
/* memory.events' oom and oom_kill read again through fd (dirfd: for the message). 0 or -errno. */
int od_kio_guard_read(int dirfd, int fd, uint64_t *oom, uint64_t *oom_kill);

#endif
