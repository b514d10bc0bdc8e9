/* stub_controller.c — a stand-in for daemon/controller.c in fs/ tests only:
 * keeps an oe_view per cgroup in memory, inherits T and D on add (rule 7),
 * and fires control_changed on every write that changes memory.oom_control.
 * Not part of fs_lib.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "oomd/controller.h"
#include "oomd/parse.h"
#include "stub_controller.h"
#include "../../daemon/ctl_hooks.h"

struct od_controller {
	GMutex lock;
	GHashTable *cgs; /* &stub_cg.id -> stub_cg */
	ctl_hooks hooks; /* the real controller's (daemon/ctl_hooks.c) */
	int adds;
};

typedef struct {
	uint64_t id, parent;
	oe_view v;
} stub_cg;

od_controller *od_controller_new(const oe_config *cfg)
{
	(void)cfg;
	od_controller *c = g_new0(od_controller, 1);
	g_mutex_init(&c->lock);
	c->cgs = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, g_free);
	ctl_hooks_init(&c->hooks);
	return c;
}

void od_controller_free(od_controller *c)
{
	ctl_hooks_clear(&c->hooks);
	g_hash_table_destroy(c->cgs);
	g_mutex_clear(&c->lock);
	g_free(c);
}

od_hooks_reg *od_controller_set_hooks(od_controller *c, const od_hooks *h)
{
	return ctl_hooks_add(&c->hooks, h);
}

void od_controller_remove_hooks(od_controller *c, od_hooks_reg *reg)
{
	ctl_hooks_remove(&c->hooks, reg);
}

int64_t od_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void od_controller_start_deadlines(od_controller *c) { (void)c; }
void od_controller_sample(od_controller *c, uint64_t id) { (void)c; (void)id; }
void od_controller_real_max_changed(od_controller *c, uint64_t id) { (void)c; (void)id; }
void od_controller_release_all(od_controller *c) { (void)c; }

static uint64_t read_mem(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return OE_UNLIMITED;
	char buf[64];
	ssize_t n = read(fd, buf, sizeof buf);
	close(fd);
	uint64_t v = OE_UNLIMITED;
	if (n > 0 && od_parse_memory(buf, (size_t)n, 4096, &v) != 0)
		v = OE_UNLIMITED;
	return v;
}

int od_controller_add(od_controller *c, uint64_t parent_id, int dirfd, uint64_t *id_out)
{
	g_mutex_lock(&c->lock);
	c->adds++;
	g_mutex_unlock(&c->lock);
	struct stat st;
	if (fstat(dirfd, &st) < 0)
		return errno;
	if (!S_ISDIR(st.st_mode))
		return ENOTDIR;
	int probe = parent_id ? openat(dirfd, "memory.max", O_PATH | O_CLOEXEC) : -1;
	if (parent_id && probe < 0)
		return errno;
	if (probe >= 0)
		close(probe);
	uint64_t id = st.st_ino;
	g_mutex_lock(&c->lock);
	if (!g_hash_table_contains(c->cgs, &id)) {
		stub_cg *p = g_hash_table_lookup(c->cgs, &parent_id);
		stub_cg *n = g_new0(stub_cg, 1);
		n->id = id;
		n->parent = parent_id;
		n->v.limit = read_mem(dirfd, "memory.max");
		n->v.user_high = read_mem(dirfd, "memory.high");
		if (p) {
			n->v.delay_ms = p->v.delay_ms;
			n->v.disable = p->v.disable;
		}
		g_hash_table_insert(c->cgs, &n->id, n);
	}
	g_mutex_unlock(&c->lock);
	if (id_out)
		*id_out = id;
	return 0;
}

int od_controller_add_from_loop(od_controller *c, uint64_t parent_id, int dirfd, uint64_t *id_out)
{
	return od_controller_add(c, parent_id, dirfd, id_out);
}

void od_controller_remove(od_controller *c, uint64_t id)
{
	g_mutex_lock(&c->lock);
	g_hash_table_remove(c->cgs, &id);
	g_mutex_unlock(&c->lock);
}

#define WITH_CG(c, id, body)                                          \
	do {                                                          \
		g_mutex_lock(&(c)->lock);                             \
		stub_cg *cg = g_hash_table_lookup((c)->cgs, &(id));   \
		if (!cg) {                                            \
			g_mutex_unlock(&(c)->lock);                   \
			return ENOENT;                                \
		}                                                     \
		body;                                                 \
		g_mutex_unlock(&(c)->lock);                           \
	} while (0)

/* stub_controller_hold_delay_writes: delay writes wait in their handler until released,
 * as a write the kernel makes wait (a memory.max write's reclaim) keeps its worker */
typedef struct {
	bool on;
	int now; /* handlers waiting */
} stub_hold;
static GMutex hold_lock;
static GCond hold_cond;
static stub_hold delay_writes, views;

static void hold_set(stub_hold *h, bool on)
{
	g_mutex_lock(&hold_lock);
	h->on = on;
	g_cond_broadcast(&hold_cond);
	g_mutex_unlock(&hold_lock);
}

static int hold_count(stub_hold *h)
{
	g_mutex_lock(&hold_lock);
	int n = h->now;
	g_mutex_unlock(&hold_lock);
	return n;
}

static void hold_here(stub_hold *h)
{
	g_mutex_lock(&hold_lock);
	h->now++;
	while (h->on)
		g_cond_wait(&hold_cond, &hold_lock);
	h->now--;
	g_mutex_unlock(&hold_lock);
}

void stub_controller_hold_delay_writes(bool on)
{
	hold_set(&delay_writes, on);
}

int stub_controller_delay_writes_held(void)
{
	return hold_count(&delay_writes);
}

void stub_controller_hold_views(bool on)
{
	hold_set(&views, on);
}

int stub_controller_views_held(void)
{
	return hold_count(&views);
}

int od_controller_write_delay(od_controller *c, uint64_t id, uint64_t ms)
{
	hold_here(&delay_writes);
	WITH_CG(c, id, cg->v.delay_ms = ms);
	return 0;
}

int od_controller_write_disable(od_controller *c, uint64_t id, uint64_t v)
{
	WITH_CG(c, id, cg->v.disable = v != 0);
	ctl_hooks_changed(&c->hooks, id);
	return 0;
}

int od_controller_write_limit(od_controller *c, uint64_t id, uint64_t bytes, int fd)
{
	(void)fd;
	WITH_CG(c, id, cg->v.limit = bytes);
	return 0;
}

int od_controller_write_high(od_controller *c, uint64_t id, uint64_t bytes, int fd)
{
	(void)fd;
	WITH_CG(c, id, cg->v.user_high = bytes);
	return 0;
}

bool od_controller_view(od_controller *c, uint64_t id, oe_view *v)
{
	hold_here(&views);
	bool ok = false;
	g_mutex_lock(&c->lock);
	stub_cg *cg = g_hash_table_lookup(c->cgs, &id);
	if (cg) {
		*v = cg->v;
		ok = true;
	}
	g_mutex_unlock(&c->lock);
	return ok;
}

void stub_controller_set_under_oom(od_controller *c, uint64_t id, bool on)
{
	g_mutex_lock(&c->lock);
	stub_cg *cg = g_hash_table_lookup(c->cgs, &id);
	if (cg)
		cg->v.under_oom = on;
	g_mutex_unlock(&c->lock);
	ctl_hooks_changed(&c->hooks, id);
}

int stub_controller_adds(od_controller *c)
{
	g_mutex_lock(&c->lock);
	int n = c->adds;
	g_mutex_unlock(&c->lock);
	return n;
}

void stub_controller_notify(od_controller *c, uint64_t id)
{
	ctl_hooks_notify(&c->hooks, id);
}

void stub_controller_removed(od_controller *c, uint64_t id)
{
	g_mutex_lock(&c->lock);
	g_hash_table_remove(c->cgs, &id);
	g_mutex_unlock(&c->lock);
	ctl_hooks_removed(&c->hooks, &id, 1);
}
