/* v1layout.h — the cgroup-v1 memory layout (--layout v1, od_shadowfs_opts.v1_layout):
 * its own table of synthetic files (v1layout.c) and the layout-aware lookups the
 * op files use instead of fs_synth_at/count. Private to fs/.
 * The mapping of every file is documented in docs/V1-LAYOUT.md.
 */
#ifndef OOMD_FS_V1LAYOUT_H
#define OOMD_FS_V1LAYOUT_H

#include "fs_private.h"

/* An extra flag of v1 entries: present only where the kernel accounts swap
 * (the real directory has memory.swap.current). */
#define FS_V1_SWAP (1u << 8)

/* The table of the layout: v1 or the default v2 table of synthetic.c. The v1 table
 * reuses the v2 entries of memory.oom_delay_millisecs, memory.oom_control and
 * cgroup.event_control (same indices, same handlers, same node ids). */
const fs_synth *fs_layout_find(bool v1, const char *name);
const fs_synth *fs_layout_at(bool v1, unsigned index);
unsigned fs_layout_count(bool v1);
/* Is s shown in a directory of that kind (dirfd: the real directory)? */
bool fs_layout_present(bool v1, const fs_synth *s, fs_memcg_kind kind, int dirfd);
/* Does the v1 view show a real entry of this type? Only directories (cgroups):
 * every file of the v1 view is one of the table. */
static inline bool fs_v1_shows_real(bool v1, bool is_dir)
{
	return !v1 || is_dir;
}
/* Before a mkdir in the v1 view: every v1 cgroup has the memory files, so the
 * parent's cgroup.subtree_control gets +memory (best effort, logged) when the
 * caller of req may write that file itself. */
void fs_v1_before_mkdir(fuse_req_t req, int parent_dirfd);

#endif
