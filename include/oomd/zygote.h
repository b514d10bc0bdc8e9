/* zygote.h — the charge zygote, as the daemon holds it (fs/zygote_link.c; what it
 * is and why: fs/zygote.h). od_zygote_new forks it; the shadow file system
 * (od_shadowfs_opts.zygote) sends it its charged calls and forks it again if it
 * died; od_zygote_free ends it.
 *
 * Start it in the main thread before anything the zygote should not copy is large:
 * before mlockall (od_harden) and before any thread; it closes every descriptor
 * but its socket itself. Not thread-safe against calls in flight: free it after the
 * shadow file system is freed. */
#ifndef OOMD_ZYGOTE_H
#define OOMD_ZYGOTE_H

typedef struct od_zygote od_zygote;

/* Never NULL: a zygote that could not be forked now is forked again at the first
 * charged call (and the failure logged). */
od_zygote *od_zygote_new(void);
/* Closes our end: the zygote kills its children in flight and exits; reaped here
 * (SIGKILLed if it has not exited after 2 s). NULL is fine. */
void od_zygote_free(od_zygote *z);

#endif
