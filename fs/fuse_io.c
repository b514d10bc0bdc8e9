/* fuse_io.c — implements fuse_io.h. */
#include "fuse_io.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs_private.h"

/* Set (to the session) while this worker holds a request it read: cleared when it comes
 * back for the next one, or by the destructor when libfuse ends the worker after the
 * request (an idle worker beyond FS_IDLE_THREADS ends without reading again). */
static void holder_gone(gpointer data);
static GPrivate holding = G_PRIVATE_INIT(holder_gone);
/* The cloned descriptor this worker made non-blocking (libfuse gives each worker one). */
static __thread int nonblocking_fd = -1;

static void holder_gone(gpointer data)
{
	od_shadowfs *fs = data;
	g_atomic_int_add(&fs->io_busy, -1);
}

static void come_back(void)
{
	od_shadowfs *fs = g_private_get(&holding);
	if (fs) {
		g_private_set(&holding, NULL); /* NULL: the destructor is not called */
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
	come_back();
	if (fd == fuse_session_fd(fs->se))
		return read(fd, buf, len); /* shared with a successor: see fuse_io.h */
	if (fd != nonblocking_fd) {
		int fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
			return read(fd, buf, len); /* served as before, undrained, not ended */
		nonblocking_fd = fd;
	}
	for (;;) {
		/* counted before the look at the flag: the drain sets the flag, then counts */
		g_atomic_int_inc(&fs->io_busy);
		if (g_atomic_int_get(&fs->io_stopping)) {
			g_atomic_int_add(&fs->io_busy, -1);
			park();
		}
		/* a request waiting is read at once (one system call, as a blocking read);
		 * only an empty queue costs the poll */
		ssize_t n = read(fd, buf, len);
		if (n > 0) {
			g_private_set(&holding, fs);
			return n;
		}
		int e = errno;
		g_atomic_int_add(&fs->io_busy, -1);
		if (n == 0 || (e != EAGAIN && e != EINTR)) {
			errno = e;
			return n; /* ENODEV (unmounted) and the like: libfuse ends the session */
		}
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = fs->io_stop_efd, .events = POLLIN } };
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return -1;
	}
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	return writev(fd, iov, count);
}

int fs_io_install(od_shadowfs *fs)
{
	fs->io_stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fs->io_stop_efd < 0)
		return errno;
	static const struct fuse_custom_io io = { .read = io_read, .writev = io_writev };
	int r = fuse_session_custom_io(fs->se, &io, fuse_session_fd(fs->se));
	if (r < 0) {
		close(fs->io_stop_efd);
		fs->io_stop_efd = -1;
		return -r;
	}
	return 0;
}

bool fs_io_drain(od_shadowfs *fs)
{
	if (fs->io_stop_efd < 0)
		return true;
	g_atomic_int_set(&fs->io_stopping, 1);
	uint64_t one = 1;
	if (write(fs->io_stop_efd, &one, sizeof one) < 0) {
		/* cannot fail on a fresh eventfd; the workers still see the flag at their next poll */
	}
	gint64 until = g_get_monotonic_time() + FS_IO_DRAIN_MS * G_TIME_SPAN_MILLISECOND;
	while (g_atomic_int_get(&fs->io_busy) > 0) {
		if (g_get_monotonic_time() > until) {
			g_warning("stopping: %d FUSE requests still being answered after %d ms; a request "
				  "taken but not answered fails for its caller",
				  g_atomic_int_get(&fs->io_busy), FS_IO_DRAIN_MS);
			return false;
		}
		g_usleep(1000);
	}
	return true;
}

void fs_io_free(od_shadowfs *fs)
{
	if (fs->io_stop_efd >= 0)
		close(fs->io_stop_efd);
	fs->io_stop_efd = -1;
}
