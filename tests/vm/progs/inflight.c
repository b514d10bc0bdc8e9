/* inflight — readers in tight loops across a server crash (f-inflight):
 *   inflight FILE THREADS RUN_MS GRACE_MS
 * THREADS threads each open, read and close FILE in a loop for RUN_MS; then no
 * new operation starts, and whatever has not returned GRACE_MS later is hung.
 * Prints one line:
 *   ops=N ok=N failed=N hung=N slowest_ms=X last_failed_start=T errors=open:ESTALE=2,...
 * (T: CLOCK_MONOTONIC ms when the last failed operation began, 0 if none) and exits
 * without waiting for hung threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXT 64
#define MAXERR 32

static const char *path;
static atomic_int stop;
static atomic_long ops, oks, fails;
static atomic_llong last_failed_start, slowest_ns;
static atomic_int busy[MAXT];
static pthread_mutex_t elock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	const char *call;
	int err;
	int n;
} errs[MAXERR];

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void failed(const char *call, int err, long long t0)
{
	atomic_fetch_add(&fails, 1);
	long long prev = atomic_load(&last_failed_start);
	while (t0 > prev && !atomic_compare_exchange_weak(&last_failed_start, &prev, t0))
		;
	pthread_mutex_lock(&elock);
	for (int i = 0; i < MAXERR; i++) {
		if (!errs[i].call) {
			errs[i].call = call;
			errs[i].err = err;
		}
		if (errs[i].call == call && errs[i].err == err) {
			errs[i].n++;
			break;
		}
	}
	pthread_mutex_unlock(&elock);
}

static void *reader(void *arg)
{
	int me = (int)(long)arg;
	char buf[4096];
	while (!atomic_load(&stop)) {
		long long t0 = now_ns();
		atomic_store(&busy[me], 1);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			failed("open", errno, t0);
		} else {
			if (read(fd, buf, sizeof buf) < 0)
				failed("read", errno, t0);
			else
				atomic_fetch_add(&oks, 1);
			close(fd);
		}
		atomic_store(&busy[me], 0);
		atomic_fetch_add(&ops, 1);
		long long d = now_ns() - t0, s = atomic_load(&slowest_ns);
		while (d > s && !atomic_compare_exchange_weak(&slowest_ns, &s, d))
			;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: inflight FILE THREADS RUN_MS GRACE_MS\n");
		return 2;
	}
	path = argv[1];
	int n = atoi(argv[2]);
	long run = atol(argv[3]), grace = atol(argv[4]);
	if (n < 1 || n > MAXT)
		return 2;
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, reader, (void *)(long)i) != 0) {
			perror("pthread_create");
			return 1;
		}
		pthread_detach(t);
	}
	usleep((useconds_t)run * 1000);
	atomic_store(&stop, 1);
	long long end = now_ns() + grace * 1000000LL;
	int hung;
	do {
		usleep(10000);
		hung = 0;
		for (int i = 0; i < n; i++)
			hung += atomic_load(&busy[i]);
	} while (hung && now_ns() < end);
	printf("ops=%ld ok=%ld failed=%ld hung=%d slowest_ms=%.0f last_failed_start=%lld errors=",
	       atomic_load(&ops), atomic_load(&oks), atomic_load(&fails), hung,
	       atomic_load(&slowest_ns) / 1e6, atomic_load(&last_failed_start) / 1000000);
	pthread_mutex_lock(&elock);
	for (int i = 0; i < MAXERR && errs[i].call; i++)
		printf("%s%s:%s=%d", i ? "," : "", errs[i].call, strerrorname_np(errs[i].err), errs[i].n);
	pthread_mutex_unlock(&elock);
	printf("\n");
	fflush(stdout);
	_exit(hung ? 3 : 0);
}
