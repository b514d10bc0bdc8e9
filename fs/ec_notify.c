/* ec_notify.c — the notifier: the only thread that writes listeners' eventfds.
 * The controller's hooks (its threads, the kill path among them) and registrations
 * (FUSE workers) only take references under the list lock and queue them; each write
 * here is bounded by ec_signal (a full counter is skipped, a counter filled under our
 * write interrupts it after EC_SIGNAL_TIMEOUT_MS and drops that listener with a log
 * line). So no kill, knob write, other listener or FUSE request waits for a listener.
 */
#include <errno.h>
#include <unistd.h>

#include "ec_private.h"
#include "ec_signal.h"

void ec_listener_unref(gpointer p)
{
	ec_listener *l = p;
	if (!g_atomic_int_dec_and_test(&l->refs))
		return;
	if (l->carry) /* gone: a successor must not take it again */
		fs_carry_listener_clear(l->carry, l->slot);
	close(l->efd);
	close(l->pidfd);
	g_free(l);
}

ec_listener *ec_listener_new(uint64_t id, pid_t tgid, uid_t uid, int efd, int pidfd)
{
	ec_listener *l = g_new0(ec_listener, 1);
	l->refs = 1;
	l->id = id;
	l->tgid = tgid;
	l->uid = uid;
	l->efd = efd;
	l->pidfd = pidfd;
	l->slot = -1;
	if (fs_eventfd_id(0, efd, &l->eventfd_id) != 0)
		l->eventfd_id = 0;
	return l;
}

ec_listener *ec_listener_ref(ec_listener *l)
{
	g_atomic_int_inc(&l->refs);
	return l;
}

void ec_kick(fs_evctl *e)
{
	uint64_t one = 1;
	if (write(e->wake, &one, sizeof one) < 0 && errno != EAGAIN)
		g_warning("event_control: cannot wake the listener thread: %s", g_strerror(errno));
}

void ec_push_job(fs_evctl *e, ec_job_kind kind, uint64_t id, GPtrArray *batch)
{
	ec_job *j = g_new0(ec_job, 1);
	j->kind = kind;
	j->id = id;
	j->batch = batch;
	g_async_queue_push(e->jobs, j);
}

/* Removes the listener with this serial, if it is still there. */
static void drop_serial(fs_evctl *e, uint64_t serial)
{
	g_mutex_lock(&e->lock);
	for (guint i = 0; i < e->all->len; i++)
		if (((ec_listener *)g_ptr_array_index(e->all, i))->serial == serial) {
			g_ptr_array_remove_index_fast(e->all, i);
			break;
		}
	g_mutex_unlock(&e->lock);
}

static void signal_batch(fs_evctl *e, ec_signal *sig, GPtrArray *batch)
{
	bool dropped = false;
	for (guint i = 0; i < batch->len; i++) {
		ec_listener *l = g_ptr_array_index(batch, i);
		switch (ec_signal_post(sig, l->efd)) {
		case EC_SIGNAL_SENT:
		case EC_SIGNAL_SATURATED:
			break;
		case EC_SIGNAL_WEDGED:
			g_warning("cgroup %" G_GUINT64_FORMAT ": dropped the OOM listener of pid %d (uid %u):"
				  " its eventfd stayed full for %d ms while we wrote to it", l->id,
				  (int)l->tgid, (unsigned)l->uid, EC_SIGNAL_TIMEOUT_MS);
			drop_serial(e, l->serial);
			dropped = true;
			break;
		case EC_SIGNAL_FAILED:
			g_warning("cgroup %" G_GUINT64_FORMAT ": cannot signal an OOM listener: %s", l->id,
				  g_strerror(errno));
			break;
		}
	}
	if (dropped)
		ec_kick(e);
}

/* The notifier: hooks and registrations only queue; this thread alone writes the
 * callers' eventfds, each write bounded by ec_signal (a full counter is skipped, a
 * counter filled under our write interrupts it and drops the listener). */
gpointer ec_notify_thread(gpointer data)
{
	fs_evctl *e = data;
	ec_signal *sig = ec_signal_new();
	if (!sig) {
		g_warning("event_control: no timer for eventfd writes (%s): OOM listeners are refused"
			  " (ENOMEM), as an unbounded write could stall this thread", g_strerror(errno));
		g_atomic_int_set(&e->no_timer, 1);
	}
	for (;;) {
		ec_job *j = g_async_queue_pop(e->jobs);
		ec_job_kind kind = j->kind;
		if (kind == JOB_SIGNAL) {
			signal_batch(e, sig, j->batch);
			g_ptr_array_unref(j->batch);
		} else if (kind == JOB_SYNC) {
			g_mutex_lock(&j->sync->lock);
			j->sync->done = true;
			g_cond_signal(&j->sync->cond);
			g_mutex_unlock(&j->sync->lock);
		}
		g_free(j);
		if (kind == JOB_STOP)
			break;
	}
	ec_signal_free(sig);
	return NULL;
}

/* References to the listeners of cgroup id now (only its OOM listeners if oom), taken
 * out of the list if remove. */
static GPtrArray *batch_of(fs_evctl *e, uint64_t id, bool remove, bool oom)
{
	GPtrArray *batch = g_ptr_array_new_with_free_func(ec_listener_unref);
	g_mutex_lock(&e->lock);
	for (guint i = e->all->len; i-- > 0;) {
		ec_listener *l = g_ptr_array_index(e->all, i);
		if (l->id != id || (oom && l->kind != EC_OOM))
			continue;
		g_ptr_array_add(batch, ec_listener_ref(l));
		if (remove)
			g_ptr_array_remove_index_fast(e->all, i);
	}
	g_mutex_unlock(&e->lock);
	return batch;
}

/* Queues one signal to each listener of batch (takes it); false if it was empty. */
static bool queue_batch(fs_evctl *e, uint64_t id, GPtrArray *batch)
{
	if (!batch->len) {
		g_ptr_array_unref(batch);
		return false;
	}
	ec_push_job(e, JOB_SIGNAL, id, batch);
	return true;
}

void fs_evctl_notify(fs_evctl *e, uint64_t id)
{
	/* The listeners of this moment, so that an rmdir right after the onset cannot
	 * take them away before the notifier signals the onset (v1 signals both). */
	ec_carry_owe(e, id, false);
	queue_batch(e, id, batch_of(e, id, false, true));
}

void fs_evctl_removed(fs_evctl *e, uint64_t id)
{
	/* Out of the list now (counts are exact at once); signalled once, later, by the
	 * notifier: v1 listeners learn of an rmdir this way. */
	ec_carry_owe(e, id, true);
	if (queue_batch(e, id, batch_of(e, id, true, false))) {
		ec_kick(e);
		ec_levels_kick(e); /* thresholds and triggers of the cgroup go */
	}
}

void fs_evctl_sync(fs_evctl *e)
{
	struct ec_sync s = { .done = false };
	g_mutex_init(&s.lock);
	g_cond_init(&s.cond);
	ec_job *j = g_new0(ec_job, 1);
	j->kind = JOB_SYNC;
	j->sync = &s;
	g_async_queue_push(e->jobs, j);
	g_mutex_lock(&s.lock);
	while (!s.done)
		g_cond_wait(&s.cond, &s.lock);
	g_mutex_unlock(&s.lock);
	g_mutex_clear(&s.lock);
	g_cond_clear(&s.cond);
}

size_t fs_evctl_count(fs_evctl *e, uint64_t id)
{
	size_t n = 0;
	g_mutex_lock(&e->lock);
	for (guint i = 0; i < e->all->len; i++)
		if (((ec_listener *)g_ptr_array_index(e->all, i))->id == id)
			n++;
	g_mutex_unlock(&e->lock);
	return n;
}
