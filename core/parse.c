/* parse.c — the kernel's own parsing rules for the bytes users write, so that a
 * client of the shadow tree gets the errno cgroup v1 would have given. */
#include "oomd/parse.h"
#include "oomd/engine.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* cgroupfs hands handlers a NUL-terminated copy of the write, so the kernel sees
 * the bytes only up to the first NUL: "5\0" and "5\0junk" both read as "5". */
static size_t c_strlen(const char *buf, size_t len)
{
	const char *nul = memchr(buf, '\0', len);
	return nul ? (size_t)(nul - buf) : len;
}

static int digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return 99;
}

/* The radix rule of the kernel's _parse_integer_fixup_radix for base 0. */
static unsigned radix_of(const char **s, const char *end)
{
	const char *p = *s;
	if (p < end && p[0] == '0') {
		if (end - p >= 3 && tolower((unsigned char)p[1]) == 'x' &&
		    isxdigit((unsigned char)p[2])) {
			*s = p + 2;
			return 16;
		}
		return 8;
	}
	return 10;
}

/* Unsigned digits in `radix` from *s; sets *overflow instead of wrapping. */
static uint64_t digits(const char **s, const char *end, unsigned radix, bool *overflow)
{
	uint64_t v = 0;
	const char *p = *s;
	for (; p < end; p++) {
		int d = digit_value(*p);
		if (d >= (int)radix)
			break;
		if (v > (UINT64_MAX - (uint64_t)d) / radix)
			*overflow = true;
		v = v * radix + (uint64_t)d;
	}
	*s = p;
	return v;
}

int od_parse_u64(const char *buf, size_t len, uint64_t max, uint64_t *out)
{
	const char *s = buf, *end = buf + c_strlen(buf, len);
	bool overflow = false;

	if (s < end && *s == '+')
		s++;
	unsigned radix = radix_of(&s, end);
	const char *start = s;
	uint64_t v = digits(&s, end, radix, &overflow);
	if (s == start)
		return EINVAL;
	if (s < end && *s == '\n')
		s++;
	if (s != end)
		return EINVAL;
	/* kstrtoull would say ERANGE on u64 overflow; SEMANTICS.md promises EINVAL for
	 * every value above the bound, which is what the v1 handlers report for values
	 * above their own limit. */
	if (overflow || v > max)
		return EINVAL;
	*out = v;
	return 0;
}

static void strip(const char **s, const char **end)
{
	while (*s < *end && isspace((unsigned char)**s))
		(*s)++;
	while (*end > *s && isspace((unsigned char)(*end)[-1]))
		(*end)--;
}

int od_parse_memory(const char *buf, size_t len, uint64_t page_size, uint64_t *out)
{
	const char *s = buf, *end = buf + c_strlen(buf, len);
	bool overflow = false;

	strip(&s, &end);
	if (end - s == 3 && memcmp(s, "max", 3) == 0) {
		*out = OE_UNLIMITED;
		return 0;
	}
	/* memparse(): simple_strtoull (which wraps silently) then one size suffix.
	 * An empty string parses as 0, as in the kernel. */
	unsigned radix = radix_of(&s, end);
	uint64_t v = digits(&s, end, radix, &overflow);
	if (s < end) {
		unsigned shift = 0;
		switch (*s) {
		case 'E': case 'e': shift += 10; /* fall through */
		case 'P': case 'p': shift += 10; /* fall through */
		case 'T': case 't': shift += 10; /* fall through */
		case 'G': case 'g': shift += 10; /* fall through */
		case 'M': case 'm': shift += 10; /* fall through */
		case 'K': case 'k': shift += 10; s++; break;
		default: break;
		}
		if (shift && shift < 64)
			v <<= shift;
	}
	if (s != end)
		return EINVAL;
	/* PAGE_COUNTER_MAX is LONG_MAX / PAGE_SIZE pages, which the kernel shows as "max". */
	uint64_t pages = v / page_size;
	uint64_t page_counter_max = (uint64_t)INT64_MAX / page_size;
	*out = pages >= page_counter_max ? OE_UNLIMITED : pages * page_size;
	return 0;
}

size_t od_format_memory(uint64_t v, char *buf, size_t size)
{
	int n = v == OE_UNLIMITED ? snprintf(buf, size, "max\n")
				  : snprintf(buf, size, "%llu\n", (unsigned long long)v);
	return n < 0 ? 0 : (size_t)n >= size ? size - 1 : (size_t)n;
}

size_t od_format_oom_control(int disable, int under_oom, uint64_t oom_kill, char *buf, size_t size)
{
	int n = snprintf(buf, size, "oom_kill_disable %d\nunder_oom %d\noom_kill %llu\n",
			 disable ? 1 : 0, under_oom ? 1 : 0, (unsigned long long)oom_kill);
	return n < 0 ? 0 : (size_t)n >= size ? size - 1 : (size_t)n;
}

/* simple_strtoul(s, &end, 10): no sign, no whitespace skipping, 0 when no digits. */
static unsigned long decimal(const char **s, const char *end)
{
	bool overflow = false;
	return (unsigned long)digits(s, end, 10, &overflow);
}

int od_parse_event_control_args(const char *buf, size_t len, int *event_fd, int *control_fd,
				size_t *args_off, size_t *args_len)
{
	const char *s = buf, *end = buf + c_strlen(buf, len);

	strip(&s, &end);
	unsigned long efd = decimal(&s, end);
	if (s == end || *s != ' ')
		return EINVAL;
	s++;
	unsigned long cfd = decimal(&s, end);
	if (s != end && *s != ' ')
		return EINVAL;
	/* memcg_write_event_control keeps simple_strtoul's result in an unsigned int: a
	 * number of 2^32 and more names the descriptor of its low 32 bits (4294967299 is
	 * 3); one of 2^31 and more is past any table, fdget() fails: EBADF (-1 here). */
	unsigned int e32 = (unsigned int)efd, c32 = (unsigned int)cfd;
	*event_fd = e32 > (unsigned int)INT32_MAX ? -1 : (int)e32;
	*control_fd = c32 > (unsigned int)INT32_MAX ? -1 : (int)c32;
	/* buf = endp + 1: the arguments run to the stripped end. With nothing after the
	 * control fd v1 reads past the string's NUL; after a stripped newline that is the
	 * NUL of the buffer, an empty string, which is what is given here. */
	const char *a = s == end ? end : s + 1;
	*args_off = (size_t)(a - buf);
	*args_len = (size_t)(end - a);
	return 0;
}

int od_parse_event_control(const char *buf, size_t len, int *event_fd, int *control_fd)
{
	size_t off, alen;
	return od_parse_event_control_args(buf, len, event_fd, control_fd, &off, &alen);
}
