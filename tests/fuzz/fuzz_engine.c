/* libFuzzer target: random sequences of engine inputs (writes, readings, time,
 * cgroups appearing and vanishing). The engine must never crash and must keep
 * its invariants: a managed cgroup always has a finite real memory.max ceiling,
 * and nothing is due when no cgroup is in a hold. */
#include "oomd/engine.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define IDS 8

static uint64_t take(const uint8_t **p, const uint8_t *end, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes && *p < end; i++, (*p)++)
		v = v << 8 | **p;
	return v;
}

static uint64_t mem_value(uint64_t raw)
{
	switch (raw & 3) {
	case 0: return OE_UNLIMITED;
	case 1: return (raw >> 2) % 64 << 20;
	default: return (raw >> 2) << 12;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	oe_config cfg;
	oe_config_defaults(&cfg);
	cfg.kill_mode = size & 1 ? OE_KILL_GROUP : OE_KILL_KERNEL;
	oe_engine *e = oe_new(&cfg);
	static oe_action store[4096];
	oe_actions out;
	oe_actions_init(&out, store, 4096);
	int64_t now = 1000000000;
	oe_root(e, 1);

	while (p < end) {
		unsigned op = (unsigned)take(&p, end, 1) % 11;
		uint64_t id = 1 + take(&p, end, 1) % IDS;
		uint64_t arg = take(&p, end, 4);
		oe_actions_clear(&out);
		switch (op) {
		case 0: oe_cgroup_add(e, now, id, 1 + arg % IDS, mem_value(arg >> 3), mem_value(arg >> 9), NULL, &out); break;
		case 1: oe_cgroup_remove(e, id, &out); break;
		case 2: oe_write_delay(e, now, id, arg % 5000, &out); break;
		case 3: oe_write_disable(e, now, id, arg % 3, &out); break;
		case 4: oe_write_limit(e, now, id, mem_value(arg), &out); break;
		case 5: oe_write_high(e, now, id, mem_value(arg), &out); break;
		case 6: {
			oe_reading r = { .current = (arg % 128) << 20, .local_oom = arg >> 28,
					 .local_oom_kill = arg >> 30, .ev_oom_kill = arg >> 30,
					 .no_tasks = (arg & 0x80) != 0 };
			oe_sample(e, now, id, &r, &out);
			break;
		}
		case 7: now += (int64_t)(arg % 3000) * 1000000; oe_tick(e, now, &out); break;
		case 8: oe_real_max_seen(e, now, id, mem_value(arg), &out); break;
		case 9: oe_group_killed(e, id, arg % 4, &out); break;
		default: oe_release_all(e, &out); break;
		}
		for (uint64_t i = 1; i <= IDS; i++) {
			oe_view v;
			if (oe_view_get(e, i, &v) && v.managed && v.real_max == OE_UNLIMITED)
				abort();
		}
		int64_t next = oe_next_wakeup(e);
		bool any_hold = false;
		for (uint64_t i = 1; i <= IDS; i++) {
			oe_view v;
			if (oe_view_get(e, i, &v) && v.in_hold)
				any_hold = true;
		}
		if (!any_hold && next != OE_NO_DEADLINE)
			abort();
	}
	oe_free(e);
	return 0;
}
