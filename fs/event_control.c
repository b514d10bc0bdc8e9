/* event_control.c — registration of cgroup-v1 OOM listeners written to
 * cgroup.event_control. The real work (pidfd_open of the caller's thread-group
 * leader, pidfd_getfd of both descriptors, checking the eventfd and the
 * memory.oom_control file, signalling at onset and on rmdir, dropping the
 * listener with its process) is issue 4's deliverable 1 and not done yet.
 */
#include <errno.h>

#include "fs_private.h"

int fs_event_control_register(const fs_synth_ctx *c, int event_fd, int control_fd)
{
	(void)c;
	(void)event_fd;
	(void)control_fd;
	return EOPNOTSUPP; /* issue 4: until registration exists, say so rather than pretend */
}
