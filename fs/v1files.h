/* v1files.h — the handlers of the v1 layout's files, for its table (v1layout.c).
 * Private to the v1 layout. Each is an fs_synth read or write handler: FUSE
 * worker threads, 0 or a positive errno, blocking as the kernel files they go
 * through do (a limit write waits for the controller's write of memory.max, a
 * lowered limit first for memory.reclaim, whose rounds stop 2 s after the first: EBUSY).
 * A max_usage reset keeps a descriptor counted against the writer (v1state.h: ENOMEM,
 * EMFILE past the bounds). Values in v1's formats: page-aligned
 * bytes, unlimited = PAGE_COUNTER_MAX pages (fs_v1_unlimited); writes parsed
 * by fs_v1_parse_memory (v1parse.c), with v1's errno.
 */
#ifndef OOMD_FS_V1FILES_H
#define OOMD_FS_V1FILES_H

#include "fs_private.h"

/* v1layout.c: v1's unlimited value for the page size, and a value printed as v1
 * does (anything at or above it, "max" included, prints as it). */
uint64_t fs_v1_unlimited(uint64_t page_size);
void fs_v1_put(const fs_synth_ctx *c, GString *out, uint64_t bytes);

/* v1memory.c: memory.* from the v2 files and the controller's L (fs_cg_view), the
 * state v2 cannot hold in v1state.c. Writes of the root answer EINVAL, as v1. */
int fs_v1_limit_read(const fs_synth_ctx *c, GString *out);
int fs_v1_limit_write(const fs_synth_ctx *c, const char *buf, size_t len);
int fs_v1_usage_read(const fs_synth_ctx *c, GString *out);
/* What memory.usage_in_bytes (memsw: memory.memsw.usage_in_bytes) shows, in bytes; only
 * c->dirfd and c->is_root are used (the thresholds' sampler, ec_levels.c). 0 or errno. */
int fs_v1_usage_value(const fs_synth_ctx *c, bool memsw, uint64_t *v);
int fs_v1_max_usage_read(const fs_synth_ctx *c, GString *out);
int fs_v1_max_usage_write(const fs_synth_ctx *c, const char *buf, size_t len);
int fs_v1_failcnt_read(const fs_synth_ctx *c, GString *out);
int fs_v1_failcnt_write(const fs_synth_ctx *c, const char *buf, size_t len);
int fs_v1_soft_read(const fs_synth_ctx *c, GString *out);
int fs_v1_soft_write(const fs_synth_ctx *c, const char *buf, size_t len);
int fs_v1_use_hierarchy_read(const fs_synth_ctx *c, GString *out);
int fs_v1_use_hierarchy_write(const fs_synth_ctx *c, const char *buf, size_t len);
int fs_v1_memsw_limit_read(const fs_synth_ctx *c, GString *out);
int fs_v1_memsw_limit_write(const fs_synth_ctx *c, const char *buf, size_t len);
int fs_v1_memsw_usage_read(const fs_synth_ctx *c, GString *out);
int fs_v1_memsw_max_usage_read(const fs_synth_ctx *c, GString *out);
int fs_v1_memsw_max_usage_write(const fs_synth_ctx *c, const char *buf, size_t len);
int fs_v1_memsw_failcnt_read(const fs_synth_ctx *c, GString *out);
int fs_v1_memsw_failcnt_write(const fs_synth_ctx *c, const char *buf, size_t len);
int fs_v1_force_empty_write(const fs_synth_ctx *c, const char *buf, size_t len);

/* v1stat.c: memory.stat, reading the children's memory.stat too. */
int fs_v1_stat_read(const fs_synth_ctx *c, GString *out);

/* v1tasks.c: tasks (cgroup.threads) and cgroup.procs, sorted and unique, pids in
 * the caller's pid namespace; writes through the files fs_synth_open_as_opener
 * opened as the opener (pids.c resolves the pid). */
int fs_v1_tasks_read(const fs_synth_ctx *c, GString *out);
int fs_v1_tasks_write(const fs_synth_ctx *c, const char *buf, size_t len);
int fs_v1_procs_read(const fs_synth_ctx *c, GString *out);
int fs_v1_procs_write(const fs_synth_ctx *c, const char *buf, size_t len);

#endif
