/* libFuzzer target: the pid parser of cgroup.procs/cgroup.threads/tasks writes
 * (fs_pid_parse, fs/pids.c) against a transliteration of what the kernel runs
 * on the same bytes: kernfs NUL-terminates the copy, then
 * cgroup_procs_write_start does kstrtoint(strstrip(buf), 0, &pid) || pid < 0
 * -> EINVAL (lib/kstrtox.c, lib/string.c, lib/ctype.c of 6.1 and 6.12).
 * Any difference aborts: a pid read differently would move another process,
 * or "0" (the writer) read as something else and vice versa. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs_private.h"

/* lib/ctype.c: _S for 9..13, 32 and 160 (Latin-1 NBSP) */
static bool k_space(unsigned char c)
{
	return (c >= 9 && c <= 13) || c == 32 || c == 160;
}

static bool k_xdigit(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static char *k_strstrip(char *s)
{
	size_t size = strlen(s);
	if (!size)
		return s;
	char *end = s + size - 1;
	while (end >= s && k_space((unsigned char)*end))
		end--;
	*(end + 1) = '\0';
	while (k_space((unsigned char)*s))
		s++;
	return s;
}

static const char *fixup_radix(const char *s, unsigned *base)
{
	if (*base == 0) {
		if (s[0] == '0') {
			if ((s[1] | 0x20) == 'x' && k_xdigit((unsigned char)s[2]))
				*base = 16;
			else
				*base = 8;
		} else {
			*base = 10;
		}
	}
	if (*base == 16 && s[0] == '0' && (s[1] | 0x20) == 'x')
		s += 2;
	return s;
}

#define KSTRTOX_OVERFLOW (1U << 31)

static unsigned parse_integer(const char *s, unsigned base, unsigned long long *p)
{
	unsigned long long res = 0;
	unsigned rv = 0;
	for (;; s++, rv++) {
		unsigned c = (unsigned char)*s, lc = c | 0x20, val;
		if (c >= '0' && c <= '9')
			val = c - '0';
		else if (lc >= 'a' && lc <= 'f')
			val = lc - 'a' + 10;
		else
			break;
		if (val >= base)
			break;
		if (res & (~0ULL << 60)) {
			if (res > (~0ULL - val) / base)
				rv |= KSTRTOX_OVERFLOW;
		}
		res = res * base + val;
	}
	*p = res;
	return rv;
}

static int k_kstrtoull_(const char *s, unsigned base, unsigned long long *res)
{
	unsigned long long r;
	s = fixup_radix(s, &base);
	unsigned rv = parse_integer(s, base, &r);
	if (rv & KSTRTOX_OVERFLOW)
		return -ERANGE;
	if (rv == 0)
		return -EINVAL;
	s += rv;
	if (*s == '\n')
		s++;
	if (*s)
		return -EINVAL;
	*res = r;
	return 0;
}

static int k_kstrtoint(const char *s, int *res)
{
	unsigned long long tmp;
	long long ll;
	if (s[0] == '-') {
		int rv = k_kstrtoull_(s + 1, 0, &tmp);
		if (rv < 0)
			return rv;
		if ((long long)-tmp > 0)
			return -ERANGE;
		ll = (long long)-tmp;
	} else {
		if (s[0] == '+')
			s++;
		int rv = k_kstrtoull_(s, 0, &tmp);
		if (rv < 0)
			return rv;
		if ((long long)tmp < 0)
			return -ERANGE;
		ll = (long long)tmp;
	}
	if (ll != (int)ll)
		return -ERANGE;
	*res = (int)ll;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0; /* kernfs takes one page per write (atomic_write_len) */
	char *k = malloc(size + 1);
	if (!k)
		return 0;
	memcpy(k, data, size);
	k[size] = 0;
	int kpid = -1;
	int kerr = k_kstrtoint(k_strstrip(k), &kpid) || kpid < 0 ? EINVAL : 0;
	free(k);

	int pid = -1;
	int err = fs_pid_parse((const char *)data, size, &pid);
	if (err != kerr || (err == 0 && pid != kpid))
		abort();
	if (err != 0 && err != EINVAL)
		abort();
	return 0;
}
