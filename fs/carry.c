/* carry.c — what a successor inherits beyond the connection, in the state memfd
 * that systemd's fd store or the supervisor keeps (takeover.c maps the first part,
 * the recorded FUSE_INIT). The region here starts at FS_CARRY_OFFSET, so a server of
 * the previous layout (which checks only that the memfd is at least its own size)
 * still takes a connection over from this one, and this one from it.
 *
 * Three tables, each written by this server as things change (a SIGKILL leaves them
 * as they were at the last change: every record is filled before its key is
 * published, with a release store) and read by the next:
 * - real file names: entry k names the file of every node id FS_FILE_TAG|dir|k+1
 *   (ids.h). Append-only; cgroupfs directories hold only the kernel's file names
 *   (a few hundred at most), so 4095 entries do not run out; past them a file gets a
 *   counter id (ESTALE after a restart), with a log line.
 * - pending poll() handles: the kernel's kh of every file that asked to be notified
 *   and has not been released. Open addressing; what does not fit widens a range that
 *   the successor wakes whole. So every waiter is woken (not "the ones whose slot was
 *   not overwritten").
 * - OOM listeners (cgroup.event_control registrations): their cgroup, the eventfd's
 *   eventfd-id, the process holding it (pid and start time) and the registering uid;
 *   the successor re-takes each eventfd from that process (ec_carry.c).
 * - usage thresholds and pressure levels: the same and what they listen to (kind,
 *   threshold, level, mode), in a table of their own appended after the others: a server
 *   of an older layout neither reads them (it would take each for an OOM listener) nor
 *   frees their slots. What it leaves there when it hands over to a newer one again is
 *   re-taken only if the recorded process still holds the eventfd (docs/DESIGN.md).
 * Process-local locks guard the writers; only this process writes while it serves.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_private.h"
#include "ids.h"

#define FS_CARRY_MAGIC UINT64_C(0x6f6f6d6463617279) /* "oomdcary" */
#define FS_CARRY_VERSION 1
#define FS_NAME_SLOTS ((1u << FS_FILE_SHIFT) - 1)
#define FS_NAME_LEN 48
#define FS_POLL_SET 16384
#define FS_POLL_PROBE 64
#define FS_KH_TOMB UINT64_MAX

/* A listener's record as the area keeps it (the layout of version 1, unchanged). */
typedef struct {
	uint64_t cgroup;
	uint64_t eventfd_id;
	uint64_t starttime;
	int32_t tgid;
	uint32_t uid;
} carry_rec;
_Static_assert(sizeof(carry_rec) == 32, "the carried record's layout of version 1");

/* Who registered it (ec_bounds.h), beside the record: appended to the area after
 * stop 24, so the memfd of an older server grows and these read as zeros (not
 * recorded). eventfd_id repeats the record's: a slot an older server reused after
 * a newer one wrote here does not pass for the new record's. */
#define CARRY_WHO_RECORDED 1u
#define CARRY_WHO_ROOT 2u
#define CARRY_WHO_STRANGER 4u
typedef struct {
	uint64_t eventfd_id;
	uint64_t principal;
	uint32_t flags;
	uint32_t pad;
} carry_who;

/* A threshold's or a pressure listener's record, whole (appended after stop 26: an older
 * server's memfd grows and this table reads as zeros, free slots). cgroup is published last. */
#define CARRY_LV_CG_ROOT 8u
typedef struct {
	uint64_t cgroup;
	uint64_t eventfd_id;
	uint64_t starttime;
	uint64_t principal;
	uint64_t threshold;
	int32_t tgid;
	uint32_t uid;
	uint32_t flags; /* CARRY_WHO_*, CARRY_LV_CG_ROOT */
	uint8_t kind, level, mode, pad;
} carry_lv;
_Static_assert(sizeof(carry_lv) == 56, "the level record's layout");

typedef struct {
	uint64_t magic;
	uint32_t version;
	uint32_t names; /* published entries */
	uint64_t poll_lo, poll_hi; /* khs that did not fit in the set: woken as a range (0, 0: none) */
	char name[FS_NAME_SLOTS][FS_NAME_LEN];
	uint64_t poll[FS_POLL_SET];
	carry_rec listener[FS_CARRY_LISTENERS];
	carry_who who[FS_CARRY_LISTENERS];
	carry_lv lv[FS_CARRY_LISTENERS]; /* slots FS_CARRY_LISTENERS + i */
} fs_carry_area;

struct fs_carry {
	fs_carry_area *a;
	GMutex lock;        /* names, poll set, listener slots */
	GHashTable *by_name; /* name (points into the area) -> k + 1 */
	bool names_full_warned;
	guint next_free[2]; /* hints for the slot search: OOM listeners, the others */
};

fs_carry *fs_carry_map(int state_fd, GError **err)
{
	size_t want = FS_CARRY_OFFSET + sizeof(fs_carry_area);
	struct stat st;
	if (fstat(state_fd, &st) < 0) {
		g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(errno), "state memfd: fstat: %s",
			    g_strerror(errno));
		return NULL;
	}
	/* a memfd of the previous layout (an upgrade) grows: the new part reads as zeros */
	bool zeros = (size_t)st.st_size <= FS_CARRY_OFFSET;
	if ((size_t)st.st_size < want && ftruncate(state_fd, (off_t)want) < 0) {
		g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(errno), "state memfd: ftruncate: %s",
			    g_strerror(errno));
		return NULL;
	}
	void *m = mmap(NULL, sizeof(fs_carry_area), PROT_READ | PROT_WRITE, MAP_SHARED, state_fd,
		       FS_CARRY_OFFSET);
	if (m == MAP_FAILED) {
		g_set_error(err, G_FILE_ERROR, g_file_error_from_errno(errno), "state memfd: mmap: %s",
			    g_strerror(errno));
		return NULL;
	}
	fs_carry *c = g_new0(fs_carry, 1);
	c->a = m;
	g_mutex_init(&c->lock);
	c->by_name = g_hash_table_new(g_str_hash, g_str_equal);
	if (c->a->magic != FS_CARRY_MAGIC || c->a->version != FS_CARRY_VERSION) {
		/* nothing carried (a fresh mount, an older server). An area ftruncate just made
		 * is zeros already: clearing it wrote every page, 772 kB resident and locked
		 * (bench-manage, 6.1, 10,000 cgroups); only what was there before is cleared */
		if (!zeros)
			memset(c->a, 0, sizeof *c->a);
		c->a->version = FS_CARRY_VERSION;
		__atomic_store_n(&c->a->magic, FS_CARRY_MAGIC, __ATOMIC_RELEASE);
	}
	uint32_t n = MIN(__atomic_load_n(&c->a->names, __ATOMIC_ACQUIRE), FS_NAME_SLOTS);
	for (uint32_t k = 0; k < n; k++) {
		c->a->name[k][FS_NAME_LEN - 1] = '\0';
		g_hash_table_insert(c->by_name, c->a->name[k], GUINT_TO_POINTER(k + 1));
	}
	return c;
}

void fs_carry_free(fs_carry *c)
{
	if (!c)
		return;
	g_hash_table_destroy(c->by_name);
	g_mutex_clear(&c->lock);
	munmap(c->a, sizeof *c->a);
	g_free(c);
}

/* ---- names ---- */

int fs_carry_name_index(fs_carry *c, const char *name)
{
	size_t len = strlen(name);
	if (len == 0 || len >= FS_NAME_LEN)
		return -1;
	g_mutex_lock(&c->lock);
	guint k1 = GPOINTER_TO_UINT(g_hash_table_lookup(c->by_name, name));
	if (!k1) {
		uint32_t n = c->a->names;
		if (n >= FS_NAME_SLOTS) {
			bool warn = !c->names_full_warned;
			c->names_full_warned = true;
			g_mutex_unlock(&c->lock);
			if (warn)
				g_warning("the carried name table is full (%u names): files with new names "
					  "answer ESTALE after a restart", FS_NAME_SLOTS);
			return -1;
		}
		memcpy(c->a->name[n], name, len + 1);
		__atomic_store_n(&c->a->names, n + 1, __ATOMIC_RELEASE);
		g_hash_table_insert(c->by_name, c->a->name[n], GUINT_TO_POINTER(n + 1));
		k1 = n + 1;
	}
	g_mutex_unlock(&c->lock);
	return (int)k1 - 1;
}

const char *fs_carry_name(fs_carry *c, unsigned k)
{
	uint32_t n = __atomic_load_n(&c->a->names, __ATOMIC_ACQUIRE);
	return k < n && k < FS_NAME_SLOTS ? c->a->name[k] : NULL;
}

/* ---- pending poll handles ---- */

static guint kh_slot(uint64_t kh)
{
	return (guint)((kh * UINT64_C(0x9E3779B97F4A7C15)) >> 32) % FS_POLL_SET;
}

void fs_carry_poll_add(fs_carry *c, uint64_t kh)
{
	if (!kh || kh == FS_KH_TOMB)
		return;
	g_mutex_lock(&c->lock);
	guint s = kh_slot(kh);
	int free_at = -1;
	for (guint i = 0; i < FS_POLL_PROBE; i++) {
		guint j = (s + i) % FS_POLL_SET;
		uint64_t v = c->a->poll[j];
		if (v == kh)
			goto out;
		if ((v == 0 || v == FS_KH_TOMB) && free_at < 0)
			free_at = (int)j;
		if (v == 0)
			break;
	}
	if (free_at >= 0) {
		__atomic_store_n(&c->a->poll[free_at], kh, __ATOMIC_RELEASE);
	} else {
		/* no room near its slot: the successor wakes the whole range */
		if (!c->a->poll_lo || kh < c->a->poll_lo)
			c->a->poll_lo = kh;
		if (kh > c->a->poll_hi)
			c->a->poll_hi = kh;
	}
out:
	g_mutex_unlock(&c->lock);
}

void fs_carry_poll_del(fs_carry *c, uint64_t kh)
{
	if (!kh || kh == FS_KH_TOMB)
		return;
	g_mutex_lock(&c->lock);
	guint s = kh_slot(kh);
	for (guint i = 0; i < FS_POLL_PROBE; i++) {
		guint j = (s + i) % FS_POLL_SET;
		uint64_t v = c->a->poll[j];
		if (v == 0)
			break;
		if (v == kh) {
			__atomic_store_n(&c->a->poll[j], FS_KH_TOMB, __ATOMIC_RELEASE);
			break;
		}
	}
	g_mutex_unlock(&c->lock);
}

/* The range is woken whole only up to this many handles beyond the set (a kh is a
 * per-connection counter, fuse_file_alloc: the range spans files opened meanwhile). */
#define FS_POLL_RANGE_MAX 1000000

unsigned fs_carry_poll_wake(fs_carry *c, bool (*wake)(void *ud, uint64_t kh), void *ud)
{
	unsigned n = 0;
	g_mutex_lock(&c->lock);
	for (guint j = 0; j < FS_POLL_SET; j++) {
		uint64_t v = c->a->poll[j];
		if (v && v != FS_KH_TOMB && wake(ud, v))
			n++;
		c->a->poll[j] = 0;
	}
	uint64_t lo = c->a->poll_lo, hi = c->a->poll_hi;
	if (lo && hi >= lo) {
		if (hi - lo > FS_POLL_RANGE_MAX) {
			g_warning("takeover: %" G_GUINT64_FORMAT " poll handles beyond the carried set; "
				  "waking the last %d", hi - lo + 1, FS_POLL_RANGE_MAX);
			lo = hi - FS_POLL_RANGE_MAX;
		}
		for (uint64_t kh = lo; kh <= hi; kh++)
			n += wake(ud, kh);
	}
	c->a->poll_lo = c->a->poll_hi = 0;
	g_mutex_unlock(&c->lock);
	return n;
}

/* ---- listeners ---- */

static uint32_t who_flags(const fs_carried_listener *l)
{
	return l->who_known ? CARRY_WHO_RECORDED | (l->root ? CARRY_WHO_ROOT : 0) |
				      (l->stranger ? CARRY_WHO_STRANGER : 0)
			    : 0;
}

/* The cgroup word of a slot (published last), NULL past the end. */
static uint64_t *slot_cgroup(fs_carry *c, int slot)
{
	if (slot < 0 || slot >= FS_CARRY_SLOTS)
		return NULL;
	return slot < FS_CARRY_LISTENERS ? &c->a->listener[slot].cgroup
					 : &c->a->lv[slot - FS_CARRY_LISTENERS].cgroup;
}

int fs_carry_listener_put(fs_carry *c, const fs_carried_listener *l)
{
	int t = l->kind != 0; /* the table */
	g_mutex_lock(&c->lock);
	int slot = -1;
	for (guint i = 0; i < FS_CARRY_LISTENERS; i++) {
		guint j = (c->next_free[t] + i) % FS_CARRY_LISTENERS;
		if (__atomic_load_n(slot_cgroup(c, (int)j + t * FS_CARRY_LISTENERS), __ATOMIC_ACQUIRE) == 0) {
			slot = (int)j + t * FS_CARRY_LISTENERS;
			c->next_free[t] = j + 1;
			break;
		}
	}
	if (slot >= FS_CARRY_LISTENERS) {
		carry_lv *d = &c->a->lv[slot - FS_CARRY_LISTENERS];
		d->eventfd_id = l->eventfd_id;
		d->starttime = l->starttime;
		d->principal = l->principal;
		d->threshold = l->threshold;
		d->tgid = l->tgid;
		d->uid = l->uid;
		d->flags = who_flags(l) | (l->cg_root ? CARRY_LV_CG_ROOT : 0);
		d->kind = (uint8_t)l->kind;
		d->level = (uint8_t)l->level;
		d->mode = (uint8_t)l->mode;
		d->pad = 0;
		__atomic_store_n(&d->cgroup, l->cgroup, __ATOMIC_RELEASE); /* published last */
	} else if (slot >= 0) {
		carry_who *w = &c->a->who[slot];
		w->eventfd_id = l->eventfd_id;
		w->principal = l->principal;
		w->flags = who_flags(l);
		carry_rec *d = &c->a->listener[slot];
		d->eventfd_id = l->eventfd_id;
		d->starttime = l->starttime;
		d->tgid = l->tgid;
		d->uid = l->uid;
		__atomic_store_n(&d->cgroup, l->cgroup, __ATOMIC_RELEASE); /* published last */
	}
	g_mutex_unlock(&c->lock);
	return slot;
}

void fs_carry_listener_holder(fs_carry *c, int slot, int32_t tgid, uint64_t starttime)
{
	if (!slot_cgroup(c, slot))
		return;
	g_mutex_lock(&c->lock);
	/* a torn pair could name a live process with another's start time: the successor then
	 * finds no holder there and searches by uid, which finds the same eventfd */
	if (slot < FS_CARRY_LISTENERS) {
		c->a->listener[slot].tgid = tgid;
		c->a->listener[slot].starttime = starttime;
	} else {
		c->a->lv[slot - FS_CARRY_LISTENERS].tgid = tgid;
		c->a->lv[slot - FS_CARRY_LISTENERS].starttime = starttime;
	}
	g_mutex_unlock(&c->lock);
}

void fs_carry_listener_clear(fs_carry *c, int slot)
{
	uint64_t *cg = slot_cgroup(c, slot);
	if (!cg)
		return;
	g_mutex_lock(&c->lock);
	__atomic_store_n(cg, 0, __ATOMIC_RELEASE);
	g_mutex_unlock(&c->lock);
}

bool fs_carry_listener_get(fs_carry *c, int slot, fs_carried_listener *out)
{
	if (!slot_cgroup(c, slot))
		return false;
	g_mutex_lock(&c->lock);
	uint32_t flags;
	if (slot >= FS_CARRY_LISTENERS) {
		const carry_lv *d = &c->a->lv[slot - FS_CARRY_LISTENERS];
		*out = (fs_carried_listener){ .cgroup = d->cgroup, .eventfd_id = d->eventfd_id,
					      .starttime = d->starttime, .tgid = d->tgid, .uid = d->uid,
					      .principal = d->principal, .kind = d->kind,
					      .threshold = d->threshold, .level = d->level, .mode = d->mode,
					      .cg_root = d->flags & CARRY_LV_CG_ROOT };
		flags = d->flags;
	} else {
		const carry_rec *r = &c->a->listener[slot];
		const carry_who *w = &c->a->who[slot];
		*out = (fs_carried_listener){ .cgroup = r->cgroup, .eventfd_id = r->eventfd_id,
					      .starttime = r->starttime, .tgid = r->tgid, .uid = r->uid };
		/* a slot an older server reused after a newer one wrote here: not its who */
		flags = w->eventfd_id == r->eventfd_id ? w->flags : 0;
		out->principal = w->principal;
	}
	if (flags & CARRY_WHO_RECORDED) {
		out->who_known = true;
		out->root = flags & CARRY_WHO_ROOT;
		out->stranger = flags & CARRY_WHO_STRANGER;
	} else {
		out->principal = 0;
	}
	g_mutex_unlock(&c->lock);
	return out->cgroup != 0;
}
