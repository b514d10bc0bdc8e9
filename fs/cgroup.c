/* cgroup.c — see cgroup.h: the controller's calls for one cgroup, with the add
 * and the one retry that a cgroup new to the controller needs. */
#include <errno.h>

#include "cgroup.h"

typedef struct {
	oe_view *view; /* a view, or else a write of knob: */
	fs_cg_knob knob;
	uint64_t value;
	int fd;
} cg_call;

static int call_once(const fs_synth_ctx *c, const cg_call *a)
{
	if (a->view)
		return od_controller_view(c->ctl, c->id, a->view) ? 0 : ENOENT;
	switch (a->knob) {
	case FS_CG_DELAY:
		return od_controller_write_delay(c->ctl, c->id, a->value);
	case FS_CG_DISABLE:
		return od_controller_write_disable(c->ctl, c->id, a->value);
	case FS_CG_LIMIT:
		return od_controller_write_limit(c->ctl, c->id, a->value, a->fd);
	case FS_CG_HIGH:
		return od_controller_write_high(c->ctl, c->id, a->value, a->fd);
	}
	return EINVAL;
}

static int reach(const fs_synth_ctx *c, const cg_call *a)
{
	if (!c->ctl)
		return ENODEV;
	int r = call_once(c, a);
	if (r == ENOENT) {
		int added = od_controller_add(c->ctl, c->parent, c->dirfd, NULL);
		r = added ? added : call_once(c, a);
	}
	return r == ENOENT ? ENODEV : r;
}

int fs_cg_view(const fs_synth_ctx *c, oe_view *v)
{
	cg_call a = { .view = v };
	return reach(c, &a);
}

int fs_cg_write(const fs_synth_ctx *c, fs_cg_knob knob, uint64_t value, int fd)
{
	cg_call a = { .knob = knob, .value = value, .fd = fd };
	return reach(c, &a);
}
