/* vmprog - small pieces the VM test programs share (tests/vm/progs; linked into each of them).
 * Every function is called from any thread or process of a test program, never blocks longer
 * than the file operation or sleep it names, and keeps errno out of its result (see each line).
 */
#ifndef OOMD_VMPROG_H
#define OOMD_VMPROG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define MiB (1024LL * 1024)

/* the clock c in nanoseconds */
int64_t vp_ns(clockid_t c);
/* sleep ms milliseconds, signals or not */
void vp_msleep(long ms);
/* read a whole file into buf (NUL-terminated, at most size - 1 bytes); bytes read or -errno */
ssize_t vp_slurp(const char *path, char *buf, size_t size);
/* write a string in one write(); 0 or -errno (of open, write or close) */
int vp_put(const char *path, const char *val);
/* the number after "KEY " at the start of a line of buf (a flat-keyed cgroup file); -1 if none */
long long vp_keyval(const char *buf, const char *key);
/* the daemon's deadline of cgroup directory dir (CLOCK_BOOTTIME ns, from the xattr
 * trusted.oomdelayfs.state of the REAL directory); 0 when it holds no deadline */
int64_t vp_deadline(const char *dir);

#endif
