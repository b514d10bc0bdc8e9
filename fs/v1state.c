/* v1state.c — see v1state.h. */
#include <errno.h>
#include <unistd.h>

#include <glib.h>

#include "oomd/kernel_io.h"
#include "v1state.h"

typedef struct {
	uint64_t failcnt_base, memsw_failcnt_base;
	bool have_soft;
	uint64_t soft, soft_low; /* last v1 soft limit written and the memory.low it became */
	int peak_fd, swap_peak_fd; /* memory.peak opened and reset (6.12+), -1 if none */
	uint64_t peak_owner, swap_peak_owner; /* who reset it (principal; 0: root) */
} v1_state;

static GMutex lock;
static GHashTable *states; /* &id -> v1_state; entries are few (reset cgroups) */
static GHashTable *kept;   /* principal -> kept descriptors (not root's) */
static size_t kept_not_root;

static void uncount_locked(uint64_t owner)
{
	if (owner == 0 || !kept)
		return;
	size_t n = GPOINTER_TO_SIZE(g_hash_table_lookup(kept, &owner));
	if (n <= 1)
		g_hash_table_remove(kept, &owner);
	else
		g_hash_table_insert(kept, g_memdup2(&owner, sizeof owner), GSIZE_TO_POINTER(n - 1));
	kept_not_root--;
}

static v1_state *get_locked(uint64_t id, bool create)
{
	if (!states)
		states = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	v1_state *s = g_hash_table_lookup(states, &id);
	if (!s && create) {
		s = g_new0(v1_state, 1);
		s->peak_fd = s->swap_peak_fd = -1;
		g_hash_table_insert(states, g_memdup2(&id, sizeof id), s);
	}
	return s;
}

static void hook_removed(void *ud, uint64_t id)
{
	(void)ud;
	fs_v1state_forget(id);
}

od_hooks_reg *fs_v1state_watch(od_controller *ctl)
{
	if (!ctl)
		return NULL;
	od_hooks h = { .removed = hook_removed };
	return od_controller_set_hooks(ctl, &h);
}

void fs_v1state_forget(uint64_t id)
{
	g_mutex_lock(&lock);
	gpointer key = NULL, val = NULL;
	if (states && g_hash_table_steal_extended(states, &id, &key, &val)) {
		v1_state *s = val;
		if (s->peak_fd >= 0)
			uncount_locked(s->peak_owner);
		if (s->swap_peak_fd >= 0)
			uncount_locked(s->swap_peak_owner);
		g_mutex_unlock(&lock);
		/* closed outside the lock: the kernel's release of a kernfs file */
		if (s->peak_fd >= 0)
			close(s->peak_fd);
		if (s->swap_peak_fd >= 0)
			close(s->swap_peak_fd);
		g_free(key);
		g_free(s);
		return;
	}
	g_mutex_unlock(&lock);
}

uint64_t fs_v1state_failcnt_base(uint64_t id, bool swap)
{
	g_mutex_lock(&lock);
	v1_state *s = get_locked(id, false);
	uint64_t base = s ? (swap ? s->memsw_failcnt_base : s->failcnt_base) : 0;
	g_mutex_unlock(&lock);
	return base;
}

void fs_v1state_set_failcnt_base(uint64_t id, bool swap, uint64_t base)
{
	g_mutex_lock(&lock);
	v1_state *s = get_locked(id, true);
	*(swap ? &s->memsw_failcnt_base : &s->failcnt_base) = base;
	g_mutex_unlock(&lock);
}

bool fs_v1state_soft(uint64_t id, uint64_t low, uint64_t *soft)
{
	g_mutex_lock(&lock);
	v1_state *s = get_locked(id, false);
	bool remembered = s && s->have_soft && s->soft_low == low;
	if (remembered)
		*soft = s->soft;
	g_mutex_unlock(&lock);
	return remembered;
}

void fs_v1state_set_soft(uint64_t id, uint64_t soft, uint64_t low)
{
	g_mutex_lock(&lock);
	v1_state *s = get_locked(id, true);
	s->have_soft = true;
	s->soft = soft;
	s->soft_low = low;
	g_mutex_unlock(&lock);
}

int fs_v1state_keep_peak(uint64_t id, bool swap, int fd, uint64_t owner)
{
	g_mutex_lock(&lock);
	if (!kept)
		kept = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	v1_state *s = get_locked(id, true);
	int *slot = swap ? &s->swap_peak_fd : &s->peak_fd;
	uint64_t *slot_owner = swap ? &s->swap_peak_owner : &s->peak_owner;
	if (owner != 0) {
		size_t mine = GPOINTER_TO_SIZE(g_hash_table_lookup(kept, &owner));
		size_t others = kept_not_root;
		if (*slot >= 0 && *slot_owner == owner) { /* a reset again replaces its own */
			mine--;
			others--;
		} else if (*slot >= 0 && *slot_owner != 0) {
			others--;
		}
		if (mine >= FS_V1_PEAKS_PER_PRINCIPAL || others >= FS_V1_PEAKS_NOT_ROOT) {
			g_mutex_unlock(&lock);
			close(fd);
			return ENOMEM;
		}
	}
	int old = *slot;
	if (old >= 0)
		uncount_locked(*slot_owner);
	*slot = fd;
	*slot_owner = owner;
	if (owner != 0) {
		size_t n = GPOINTER_TO_SIZE(g_hash_table_lookup(kept, &owner));
		g_hash_table_insert(kept, g_memdup2(&owner, sizeof owner), GSIZE_TO_POINTER(n + 1));
		kept_not_root++;
	}
	g_mutex_unlock(&lock);
	if (old >= 0)
		close(old);
	return 0;
}

int fs_v1state_read_peak(uint64_t id, bool swap, uint64_t *v)
{
	g_mutex_lock(&lock);
	v1_state *s = get_locked(id, false);
	int fd = s ? (swap ? s->swap_peak_fd : s->peak_fd) : -1;
	/* read under the lock: a concurrent reset or forget must not close fd meanwhile */
	int r = fd >= 0 ? od_kio_fd_read_u64(fd, v) : -ENOENT;
	g_mutex_unlock(&lock);
	return r;
}

size_t fs_v1state_entries(void)
{
	g_mutex_lock(&lock);
	size_t n = states ? g_hash_table_size(states) : 0;
	g_mutex_unlock(&lock);
	return n;
}

size_t fs_v1state_fds(void)
{
	size_t n = 0;
	g_mutex_lock(&lock);
	if (states) {
		GHashTableIter it;
		gpointer val;
		g_hash_table_iter_init(&it, states);
		while (g_hash_table_iter_next(&it, NULL, &val))
			n += (((v1_state *)val)->peak_fd >= 0) + (((v1_state *)val)->swap_peak_fd >= 0);
	}
	g_mutex_unlock(&lock);
	return n;
}
