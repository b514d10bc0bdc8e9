/* fuse_io.c — implements fuse_io.h. */
#include "fuse_io.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs_private.h"

/* Whether this worker holds a request it read: cleared when it comes back for the next one,
 * or by reader_gone when libfuse ends the worker after the request (an idle worker beyond
 * FS_IDLE_THREADS ends without reading again). */
static __thread bool t_holding;
/* The session, once this worker is in io_readers; the GPrivate only carries reader_gone to
 * the worker's end (libfuse ends idle ones, and cancels all at the loop's end). Plain
 * thread-locals on the request path: GPrivate's get and set around every read cost 2.3 M of
 * the 41 M instructions the daemon spent on 2,000 files (callgrind, 2026-12-06). */
static __thread od_shadowfs *t_reading;
static void reader_gone(gpointer data);
static GPrivate reading = G_PRIVATE_INIT(reader_gone);

/* a pthread key's destructor runs on the ending thread, its thread-locals still in place */
static void reader_gone(gpointer data)
{
	od_shadowfs *fs = data;
	if (t_holding) {
		t_holding = false;
		g_atomic_int_add(&fs->io_busy, -1);
	}
	pthread_t self = pthread_self();
	g_mutex_lock(&fs->io_lock);
	for (guint i = 0; i < fs->io_readers->len; i++) {
		if (pthread_equal(g_array_index(fs->io_readers, pthread_t, i), self)) {
			g_array_remove_index_fast(fs->io_readers, i);
			break;
		}
	}
	g_mutex_unlock(&fs->io_lock);
}

static void come_back(od_shadowfs *fs)
{
	if (t_holding) {
		t_holding = false;
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

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
	od_shadowfs *fs = userdata;
	come_back(fs);
	if (fd == fuse_session_fd(fs->se))
		return read(fd, buf, len); /* shared with a successor: see fuse_io.h */
	const sigset_t *wake = &fs->io_wake;
	if (!t_reading) {
		/* the drain's signal may interrupt this worker's read(2) and nothing else: a
		 * handler's own waits (a memory.max write's reclaim stops at a pending signal,
		 * mm/memcontrol.c memory_max_write) never see it */
		pthread_sigmask(SIG_BLOCK, wake, NULL);
		pthread_t self = pthread_self();
		g_mutex_lock(&fs->io_lock);
		g_array_append_val(fs->io_readers, self);
		g_mutex_unlock(&fs->io_lock);
		g_private_set(&reading, fs);
		t_reading = fs;
	}
	for (;;) {
		/* counted before the look at the flag: the drain sets the flag, then counts */
		g_atomic_int_inc(&fs->io_busy);
		if (g_atomic_int_get(&fs->io_stopping)) {
			g_atomic_int_add(&fs->io_busy, -1);
			park();
		}
		/* a signal the drain sent meanwhile is taken here, before the read: the drain's
		 * next round interrupts the read itself */
		pthread_sigmask(SIG_UNBLOCK, wake, NULL);
		ssize_t n = read(fd, buf, len);
		int e = errno;
		pthread_sigmask(SIG_BLOCK, wake, NULL);
		if (n > 0) {
			t_holding = true;
			return n;
		}
		g_atomic_int_add(&fs->io_busy, -1);
		if (n == 0 || e != EINTR) {
			errno = e;
			return n; /* ENODEV (unmounted) and the like: libfuse ends the session */
		}
		/* EINTR: the drain's FS_WAKE_SIGNAL (or the loop's waker): look at the flag */
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
	sigemptyset(&fs->io_wake);
	sigaddset(&fs->io_wake, FS_WAKE_SIGNAL);
	fs->io_readers = g_array_new(FALSE, FALSE, sizeof(pthread_t));
	int r = fuse_session_custom_io(fs->se, &io, fuse_session_fd(fs->se));
	if (r < 0) {
		g_array_unref(fs->io_readers);
		fs->io_readers = NULL;
		g_mutex_clear(&fs->io_lock);
		return -r;
	}
	fs->io_installed = true;
	return 0;
}

/* Interrupts the read of every worker waiting in one (a worker about to read sees the flag
 * first, or is interrupted by the next round). */
static void wake_readers(od_shadowfs *fs)
{
	g_mutex_lock(&fs->io_lock);
	for (guint i = 0; i < fs->io_readers->len; i++)
		pthread_kill(g_array_index(fs->io_readers, pthread_t, i), FS_WAKE_SIGNAL);
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
	g_array_unref(fs->io_readers);
	fs->io_readers = NULL;
	g_mutex_clear(&fs->io_lock);
}
