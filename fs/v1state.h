/* v1state.h — what the v1 layout remembers per cgroup (v1state.c): the failcnt
 * baselines and the soft limit written (resets and values v2 cannot hold), and the
 * memory.peak / memory.swap.peak descriptors a max_usage reset opened (since 6.12
 * a reset is per open file, so the reset file is kept and read through).
 * The state is the process's, keyed by cgroup id (kernfs ids are not reused), and
 * created only by a v1 reset or soft-limit write. It goes when the cgroup goes:
 * fs_v1state_watch registers the controller's removed hook, which drops the
 * cgroup's entry and closes its descriptors.
 * Any thread; one mutex, never held across a call into the controller. A read
 * through a kept descriptor is one pread of a kernfs file under that mutex.
 */
#ifndef OOMD_FS_V1STATE_H
#define OOMD_FS_V1STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "oomd/controller.h"

/* From od_shadowfs_new of a v1 session; the hook needs no context of its own. The
 * session removes it (od_controller_remove_hooks) when it is freed; NULL without
 * a controller. */
od_hooks_reg *fs_v1state_watch(od_controller *ctl);
/* The cgroup is gone: its entry dropped, its descriptors closed (the hook). */
void fs_v1state_forget(uint64_t id);

/* memory.events' max (memory.swap.events' for swap) at the last failcnt reset; 0. */
uint64_t fs_v1state_failcnt_base(uint64_t id, bool swap);
void fs_v1state_set_failcnt_base(uint64_t id, bool swap, uint64_t base);

/* The soft limit last written, if memory.low is still the low that write made. */
bool fs_v1state_soft(uint64_t id, uint64_t low, uint64_t *soft);
void fs_v1state_set_soft(uint64_t id, uint64_t soft, uint64_t low);

/* Kept descriptors are counted against whoever reset (an ec_bounds.h principal): a
 * tenant that makes cgroups could otherwise have the daemon hold one or two
 * descriptors for each of them, outside every other bound (round three: s-v1peak).
 * Root (principal 0) is not counted; the request budget (fdguard.h) still applies. */
#define FS_V1_PEAKS_PER_PRINCIPAL 128
#define FS_V1_PEAKS_NOT_ROOT 1024
/* Keeps fd (a memory.peak or memory.swap.peak just reset), charged to owner, the
 * previous one of the slot closed (and uncharged from its owner): 0. Past a bound
 * ENOMEM: fd is closed, the slot keeps what it had. Never blocks but on a close. */
int fs_v1state_keep_peak(uint64_t id, bool swap, int fd, uint64_t owner);
/* The watermark through the kept descriptor: 0, -errno, or -ENOENT without one. */
int fs_v1state_read_peak(uint64_t id, bool swap, uint64_t *v);

/* Tests: entries held and descriptors open. */
size_t fs_v1state_entries(void);
size_t fs_v1state_fds(void);

#endif
