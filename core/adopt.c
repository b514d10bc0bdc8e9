/* adopt.c — a cgroup found (the scan at start, a shadow mkdir, a real mkdir seen by
 * inotify) and the persisted state a restart finds with it. Pure (engine_impl.h).
 */
#include "engine_impl.h"

/* Adoption never loosens what the real tree held when the daemon found the cgroup:
 * state says what the daemon had done, and a daemon that raised memory.max to
 * L + ceiling left it at L + ceiling, never below L; memory.high it lowered to
 * min(L, the user's high). A limit or high above that came from somewhere else (a
 * hand-edited or forged attribute, or a crash between storing a larger L and
 * raising to it): the real tree wins, and the discarded value is logged. For state
 * that had the knobs held, the real memory.max is taken as the daemon's raise, so
 * that the ceiling is not added a second time. */
static void clamp_to_real(const oe_engine *e, node *n, const oe_persisted *p, uint64_t real_max,
			  uint64_t real_high, oe_actions *out)
{
	if (n->limit > real_max) {
		oe_action *a = eng_emit(out, OE_ACT_LOG, n->id, n->limit);
		if (a)
			a->msg = "persisted limit above the real memory.max found at adoption: discarded "
				 "for the real tree's (the state's limit in brackets)";
		bool held = p->delay_ms > 0 || p->disable || p->in_hold;
		uint64_t c = e->cfg.ceiling_bytes;
		n->limit = held && real_max != OE_UNLIMITED && real_max > c ? real_max - c : real_max;
	}
	/* What the daemon that stored this state wrote to memory.high: min(its L, high). */
	uint64_t own_high = p->limit < p->user_high ? p->limit : p->user_high;
	if (n->user_high > real_high && real_high != own_high) {
		oe_action *a = eng_emit(out, OE_ACT_LOG, n->id, n->user_high);
		if (a)
			a->msg = "persisted memory.high above the real one found at adoption: discarded "
				 "(the state's value in brackets)";
		n->user_high = real_high;
	}
}

static void restore(oe_engine *e, node *n, int64_t now, uint64_t real_max, uint64_t real_high,
		    const oe_persisted *p, oe_actions *out)
{
	n->limit = p->limit;
	n->user_high = p->user_high;
	clamp_to_real(e, n, p, real_max, real_high, out);
	n->delay_ms = p->delay_ms;
	n->disable = p->disable;
	n->group_kills = p->group_kills;
	n->frozen = p->frozen;
	n->has_persisted = true;
	n->persisted = *p;
	n->persisted_stale = n->limit != p->limit || n->user_high != p->user_high;
	/* A real memory.max that is neither L nor the daemon's ceiling was written by
	 * someone else while we were away: adopt it, as we would have. */
	uint64_t high, max;
	eng_desired_knobs(e, n, &high, &max);
	if (real_max != max && real_max != n->limit && !p->in_hold)
		n->limit = real_max;
	if (p->in_hold) {
		eng_set_hold(e, n, true);
		n->hold_onset = now; /* the onset is not stored: the hold counts as seen from here */
		n->deadline = p->deadline_ns;
		n->delay_spent = p->delay_spent || p->deadline_ns <= now;
		n->next_sample = now;
		/* The hold is finished or resumed by a reading, asked for by the caller
		 * after eng_reconcile(): the sample may kill and forget the state, and must
		 * not be followed by the restore's own persist and knob writes. */
	} else if (n->frozen) {
		eng_emit(out, OE_ACT_THAW, n->id, 0); /* frozen outside a hold: a crash in between */
		n->frozen = false;
	}
}

bool oe_cgroup_add(oe_engine *e, int64_t now, uint64_t id, uint64_t parent, uint64_t real_max,
		   uint64_t real_high, const oe_persisted *persisted, oe_actions *out)
{
	saw_time(e, now);
	if (eng_find(e, id))
		return true;
	node *p = eng_find(e, parent);
	if (!p)
		return false;
	node *n = eng_new_node(e, id, p);
	n->applied_max = real_max;
	n->applied_high = real_high;
	if (persisted) {
		restore(e, n, now, real_max, real_high, persisted, out);
	} else {
		n->limit = real_max;
		n->user_high = real_high;
		/* RULE 7: a new cgroup starts with its parent's T and D. */
		n->delay_ms = p->delay_ms;
		n->disable = p->is_root ? false : p->disable;
	}
	eng_reconcile(e, n, out);
	if (eng_under_oom(n))
		eng_emit(out, OE_ACT_CHANGED, n->id, 0);
	if (n->in_hold)
		eng_emit(out, OE_ACT_SAMPLE, n->id, 0); /* a restored hold: finish or resume it now */
	return true;
}
