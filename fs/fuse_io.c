/* fuse_io.c — implements fuse_io.h. */
#include "fuse_io.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs_private.h"

/* A worker reading a cloned descriptor, as the drain sees it. */
typedef struct {
	pthread_t tid;
	GMutex lock;
	/* under lock: IO_BUSY, IO_READING (in or about to enter read(2)), IO_SIGNALLED (the
	 * drain's signal sent while reading: it is pending or taken) */
	int state;
} io_reader;
enum { IO_BUSY, IO_READING, IO_SIGNALLED };

/* Whether this worker counts in io_busy: from just before its read (a request it may
 * take) while it holds the request it read; cleared when it comes back for the next one, or
 * by reader_gone when libfuse ends the worker (an idle worker beyond FS_IDLE_THREADS ends
 * without reading again; the loop's end cancels workers inside their read). */
static __thread bool t_counted;
/* The session and this worker's entry in its io_readers, once there; the GPrivate only
 * carries reader_gone to the worker's end (libfuse ends idle ones, and cancels all at the
 * loop's end). Plain thread-locals on the request path: GPrivate's get and set around every
 * read cost 2.3 M of the 41 M instructions the daemon spent on 2,000 files (callgrind,
 * 2026-12-06). */
static __thread od_shadowfs *t_reading;
static __thread io_reader *t_me;
static void reader_gone(gpointer data);
static GPrivate reading = G_PRIVATE_INIT(reader_gone);

/* a pthread key's destructor runs on the ending thread, its thread-locals still in place */
static void reader_gone(gpointer data)
{
	od_shadowfs *fs = data;
	g_mutex_lock(&fs->io_lock); /* the drain signals under it: t_me is not in use after */
	g_ptr_array_remove_fast(fs->io_readers, t_me);
	g_mutex_unlock(&fs->io_lock);
	g_mutex_clear(&t_me->lock);
	g_free(t_me);
	t_me = NULL;
	/* last: a drain that sees the count reach 0 may let the session, fs, be freed */
	if (t_counted) {
		t_counted = false;
		g_atomic_int_add(&fs->io_busy, -1);
	}
}

static void come_back(od_shadowfs *fs)
{
	if (t_counted) {
		t_counted = false;
		g_atomic_int_add(&fs->io_busy, -1);
	}
}

/* A stopping session's worker waits here to be cancelled (poll is a cancellation point;
 * libfuse cancels every worker once the session exits). */
static void park(void)
{
	for (;;)
		poll(NULL, 0, -1);
}

/* Returns the state the drain left (IO_READING or IO_SIGNALLED). */
static int set_state(io_reader *me, int state)
{
	g_mutex_lock(&me->lock);
	int was = me->state;
	me->state = state;
	g_mutex_unlock(&me->lock);
	return was;
}

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
	od_shadowfs *fs = userdata;
	come_back(fs);
	if (fd == fuse_session_fd(fs->se))
		return read(fd, buf, len); /* shared with a successor: see fuse_io.h */
	if (!t_reading) {
		/* Workers inherit the loop thread's mask, which lets the signal in
		 * (od_shadowfs_run; libfuse 3.14's fuse_start_thread blocks only SIGTERM, SIGINT,
		 * SIGHUP and SIGQUIT around the creation): unblocked here too, in case a
		 * version blocks more. set_state keeps it from the handlers. */
		sigset_t wake;
		sigemptyset(&wake);
		sigaddset(&wake, FS_WAKE_SIGNAL);
		pthread_sigmask(SIG_UNBLOCK, &wake, NULL);
		t_me = g_new0(io_reader, 1);
		t_me->tid = pthread_self();
		g_mutex_init(&t_me->lock);
		g_mutex_lock(&fs->io_lock);
		g_ptr_array_add(fs->io_readers, t_me);
		g_mutex_unlock(&fs->io_lock);
		g_private_set(&reading, fs);
		t_reading = fs;
	}
	for (;;) {
		/* counted before the look at the flag: the drain sets the flag, then counts */
		g_atomic_int_inc(&fs->io_busy);
		t_counted = true;
		if (g_atomic_int_get(&fs->io_stopping)) {
			t_counted = false;
			g_atomic_int_add(&fs->io_busy, -1);
			park();
		}
		/* a signal the drain sends between this and the read is taken before the read,
		 * and the drain's next round interrupts the read itself */
		set_state(t_me, IO_READING);
		ssize_t n = read(fd, buf, len);
		int e = errno;
		if (set_state(t_me, IO_BUSY) == IO_SIGNALLED && n > 0)
			sched_yield(); /* the signal, pending since the drain let go of our lock, is
					* taken on this call's way back: not in the handler's calls */
		if (n > 0)
			return n; /* counted while it holds the request */
		t_counted = false;
		g_atomic_int_add(&fs->io_busy, -1);
		if (n == 0 || e != EINTR) {
			errno = e;
			return n; /* ENODEV (unmounted) and the like: libfuse ends the session */
		}
		/* EINTR: the drain's FS_WAKE_SIGNAL: look at the flag */
	}
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	return writev(fd, iov, count);
}

int fs_io_install(od_shadowfs *fs)
{
	static const struct fuse_custom_io io = { .read = io_read, .writev = io_writev };
	g_mutex_init(&fs->io_lock);
	fs->io_readers = g_ptr_array_new();
	int r = fuse_session_custom_io(fs->se, &io, fuse_session_fd(fs->se));
	if (r < 0) {
		g_ptr_array_unref(fs->io_readers);
		fs->io_readers = NULL;
		g_mutex_clear(&fs->io_lock);
		return -r;
	}
	fs->io_installed = true;
	return 0;
}

/* Interrupts the read of every worker waiting in one (a worker about to read sees the flag
 * first, or is interrupted by the next round); never a worker handling a request. */
static void wake_readers(od_shadowfs *fs)
{
	g_mutex_lock(&fs->io_lock);
	for (guint i = 0; i < fs->io_readers->len; i++) {
		io_reader *r = g_ptr_array_index(fs->io_readers, i);
		g_mutex_lock(&r->lock);
		if (r->state != IO_BUSY) {
			r->state = IO_SIGNALLED;
			pthread_kill(r->tid, FS_WAKE_SIGNAL); /* pending before the unlock */
		}
		g_mutex_unlock(&r->lock);
	}
	g_mutex_unlock(&fs->io_lock);
}

bool fs_io_drain(od_shadowfs *fs)
{
	if (!fs->io_installed)
		return true;
	g_atomic_int_set(&fs->io_stopping, 1);
	gint64 start = g_get_monotonic_time();
	gint64 until = start + FS_IO_DRAIN_MS * G_TIME_SPAN_MILLISECOND;
	for (unsigned round = 0; g_atomic_int_get(&fs->io_busy) > 0; round++) {
		if (g_get_monotonic_time() > until) {
			g_warning("stopping: %d FUSE requests still being answered after %d ms; a request "
				  "taken but not answered fails for its caller",
				  g_atomic_int_get(&fs->io_busy), FS_IO_DRAIN_MS);
			return false;
		}
		/* every 10 ms: a signal sent just before a worker entered read(2) woke nothing */
		if (round % 10 == 0)
			wake_readers(fs);
		g_usleep(1000);
	}
	return true;
}

void fs_io_free(od_shadowfs *fs)
{
	if (!fs->io_installed)
		return;
	fs->io_installed = false;
	g_ptr_array_unref(fs->io_readers);
	fs->io_readers = NULL;
	g_mutex_clear(&fs->io_lock);
}
