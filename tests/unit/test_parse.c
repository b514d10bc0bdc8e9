/* Unit tests of the parsers (include/oomd/parse.h): what the kernel would do with
 * the same bytes (SEMANTICS.md, synthetic files table). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "oomd/engine.h"
#include "oomd/parse.h"

#define LONG_MAX_U ((uint64_t)INT64_MAX)

static int u64(const char *s, uint64_t max, uint64_t *out) { return od_parse_u64(s, strlen(s), max, out); }
static int u64n(const char *s, size_t n, uint64_t max, uint64_t *out) { return od_parse_u64(s, n, max, out); }

#define U64_OK(str, want)                                                                   \
	do {                                                                                \
		uint64_t v_ = 12345;                                                        \
		int rc_ = u64(str, UINT64_MAX, &v_);                                        \
		cr_expect_eq(rc_, 0, "od_parse_u64(\"%s\") = %d, want 0", #str, rc_);      \
		cr_expect_eq(v_, (uint64_t)(want), "od_parse_u64(%s) -> %llu, want %llu", #str, \
			     (unsigned long long)v_, (unsigned long long)(want));           \
	} while (0)
#define U64_BAD(str)                                                                        \
	do {                                                                                \
		uint64_t v_ = 0;                                                            \
		int rc_ = u64(str, UINT64_MAX, &v_);                                        \
		cr_expect_eq(rc_, EINVAL, "od_parse_u64(%s) = %d, want EINVAL", #str, rc_); \
	} while (0)

Test(parse_u64, decimal)
{
	U64_OK("10", 10);
	U64_OK("0", 0);
	U64_OK("1000\n", 1000);
	U64_OK("18446744073709551615", UINT64_MAX);
}

Test(parse_u64, hex_octal_plus)
{
	U64_OK("0x1f", 31);
	U64_OK("0X1F", 31);
	U64_OK("010", 8);
	U64_OK("+5", 5);
	U64_OK("0x10\n", 16);
	U64_OK("00", 0);
}

Test(parse_u64, trailing_nul_accepted)
{
	uint64_t v = 0;
	cr_assert_eq(u64n("42\0", 3, UINT64_MAX, &v), 0);
	cr_assert_eq(v, 42);
}

Test(parse_u64, not_nul_terminated)
{
	uint64_t v = 0;
	/* only the first len bytes count */
	cr_assert_eq(u64n("123456", 2, UINT64_MAX, &v), 0);
	cr_assert_eq(v, 12);
}

Test(parse_u64, garbage)
{
	U64_BAD("");
	U64_BAD("\n");
	U64_BAD("-1");
	U64_BAD("abc");
	U64_BAD("1 2");
	U64_BAD("12abc");
	U64_BAD(" 12");
	U64_BAD("12 ");
	U64_BAD("12\n\n");
	U64_BAD("0x");
	U64_BAD("08");
	U64_BAD("+");
	U64_BAD("++1");
	U64_BAD("1.5");
}

Test(parse_u64, overflow)
{
	U64_BAD("18446744073709551616");
	U64_BAD("99999999999999999999999");
	U64_BAD("0x10000000000000000");
}

Test(parse_u64, above_max)
{
	uint64_t v = 7;
	cr_assert_eq(u64("9223372036854775807", LONG_MAX_U, &v), 0);
	cr_assert_eq(v, LONG_MAX_U);
	cr_assert_eq(u64("9223372036854775808", LONG_MAX_U, &v), EINVAL);
	cr_assert_eq(u64("2", 1, &v), EINVAL, "oom_control accepts 0 or 1 only");
	cr_assert_eq(u64("1", 1, &v), 0);
	cr_assert_eq(v, 1);
}

/* ---------------------------------------------------------------- memory */

static int mem(const char *s, uint64_t *out) { return od_parse_memory(s, strlen(s), 4096, out); }

#define MEM_OK(str, want)                                                                     \
	do {                                                                                  \
		uint64_t v_ = 1;                                                              \
		int rc_ = mem(str, &v_);                                                      \
		cr_expect_eq(rc_, 0, "od_parse_memory(%s) = %d", #str, rc_);                 \
		cr_expect_eq(v_, (uint64_t)(want), "od_parse_memory(%s) -> %llu, want %llu", #str, \
			     (unsigned long long)v_, (unsigned long long)(want));             \
	} while (0)

Test(parse_memory, max)
{
	MEM_OK("max", OE_UNLIMITED);
	MEM_OK("max\n", OE_UNLIMITED);
	MEM_OK("  max \n", OE_UNLIMITED);
}

Test(parse_memory, numbers_and_suffixes)
{
	MEM_OK("1048576", 1048576);
	MEM_OK("1048576\n", 1048576);
	MEM_OK("1M", 1048576);
	MEM_OK("1m", 1048576);
	MEM_OK("64K", 65536);
	MEM_OK("1G", 1073741824ULL);
	MEM_OK("2T", 2ULL << 40);
	MEM_OK("0", 0);
	MEM_OK(" 1M\n", 1048576);
}

Test(parse_memory, page_rounding)
{
	MEM_OK("4097", 4096);
	MEM_OK("4095", 0);
	MEM_OK("8191", 4096);
	uint64_t v = 0;
	cr_assert_eq(od_parse_memory("100000", 6, 65536, &v), 0);
	cr_assert_eq(v, 65536);
}

Test(parse_memory, garbage)
{
	uint64_t v;
	cr_expect_eq(mem("abc", &v), EINVAL);
	cr_expect_eq(mem("1X", &v), EINVAL);
	cr_expect_eq(mem("1M2", &v), EINVAL);
	cr_expect_eq(mem("-1", &v), EINVAL);
	cr_expect_eq(mem("maxx", &v), EINVAL);
	cr_expect_eq(mem("1 2", &v), EINVAL);
}

Test(parse_memory, format)
{
	char buf[32];
	size_t n = od_format_memory(OE_UNLIMITED, buf, sizeof buf);
	cr_assert_eq(n, 4);
	cr_assert(memcmp(buf, "max\n", 4) == 0);
	n = od_format_memory(1048576, buf, sizeof buf);
	cr_assert_eq(n, 8);
	cr_assert(memcmp(buf, "1048576\n", 8) == 0);
	n = od_format_memory(0, buf, sizeof buf);
	cr_assert_eq(n, 2);
	cr_assert(memcmp(buf, "0\n", 2) == 0);
}

/* ---------------------------------------------------------------- oom_control */

Test(oom_control, exact_format)
{
	char buf[128];
	size_t n = od_format_oom_control(0, 1, 3, buf, sizeof buf);
	const char *want = "oom_kill_disable 0\nunder_oom 1\noom_kill 3\n";
	cr_assert_eq(n, strlen(want));
	cr_assert(memcmp(buf, want, n) == 0, "got \"%.*s\"", (int)n, buf);
	n = od_format_oom_control(1, 0, UINT64_MAX, buf, sizeof buf);
	want = "oom_kill_disable 1\nunder_oom 0\noom_kill 18446744073709551615\n";
	cr_assert_eq(n, strlen(want));
	cr_assert(memcmp(buf, want, n) == 0, "got \"%.*s\"", (int)n, buf);
}

/* ---------------------------------------------------------------- event_control */

static int ev(const char *s, size_t n, int *a, int *b) { return od_parse_event_control(s, n, a, b); }
#define EV_OK(lit, wa, wb)                                                                    \
	do {                                                                                  \
		int a_ = -1, b_ = -1;                                                         \
		int rc_ = ev(lit, sizeof(lit) - 1, &a_, &b_);                                 \
		cr_expect_eq(rc_, 0, "event_control %s = %d", #lit, rc_);                    \
		cr_expect_eq(a_, wa, "event_control %s: event_fd %d", #lit, a_);             \
		cr_expect_eq(b_, wb, "event_control %s: control_fd %d", #lit, b_);           \
	} while (0)
#define EV_BAD(lit)                                                                           \
	do {                                                                                  \
		int a_, b_;                                                                   \
		cr_expect_eq(ev(lit, sizeof(lit) - 1, &a_, &b_), EINVAL, "event_control %s", #lit); \
	} while (0)

Test(event_control, accepted)
{
	EV_OK("3 4", 3, 4);
	EV_OK("3 4 args", 3, 4);
	EV_OK("3 4\n", 3, 4);
	EV_OK("3 4\0", 3, 4);
	EV_OK("10 11", 10, 11);
	/* v1 keeps the numbers in unsigned ints (memcg_write_event_control): 2^32 + 3 is 3 */
	EV_OK("4294967299 4294967300", 3, 4);
	EV_OK("18446744073709551619 4", 3, 4); /* simple_strtoul wraps at 2^64 too */
	EV_OK("2147483648 4", -1, 4);          /* past any table: fdget's EBADF */
	EV_OK("4294967295 4", -1, 4);
}

Test(event_control, rejected)
{
	EV_BAD("");
	EV_BAD("3");
	EV_BAD("3 ");
	EV_BAD("a 4");
	EV_BAD("3 b");
	EV_BAD("3 4x");
	EV_BAD("3,4");
	EV_BAD("-1 4");
}


Test(event_control, v1_strips_whitespace)
{
	/* memcg_write_event_control() starts with buf = strstrip(buf) */
	EV_OK("3 4 ", 3, 4);
	EV_OK(" 3 4", 3, 4);
	EV_OK("3 4\n\n", 3, 4);
}

Test(parse_u64, plus_then_hex_and_bounds)
{
	U64_OK("+0x10", 16);
	U64_OK("0x0", 0);
	U64_OK("0xffffffffffffffff", UINT64_MAX);
	U64_OK("01777777777777777777777", UINT64_MAX);
	U64_BAD("0xg");
	U64_BAD("0 ");
	uint64_t v;
	cr_assert_eq(u64("0x8000000000000000", LONG_MAX_U, &v), EINVAL);
	cr_assert_eq(u64("0\n", 1, &v), 0);
	cr_assert_eq(v, 0);
}

Test(parse_memory, memparse_bases_and_suffixes)
{
	MEM_OK("0x1000", 4096);
	MEM_OK("1k", 0); /* 1024 bytes round down to 0 pages */
	MEM_OK("8k", 8192);
	MEM_OK("1g", 1073741824ULL);
	MEM_OK("1P", 1ULL << 50);
	MEM_OK("\tmax\n", OE_UNLIMITED);
}

static void args_of(const char *s, size_t n, const char *want)
{
	int a, b;
	size_t off = 99, len = 99;
	cr_assert_eq(od_parse_event_control_args(s, n, &a, &b, &off, &len), 0);
	cr_expect(len == strlen(want) && memcmp(s + off, want, len) == 0, "args of \"%.*s\": \"%.*s\"",
		  (int)n, s, (int)len, s + off);
}

Test(event_control, arguments_run_to_the_stripped_end)
{
	args_of("3 4 16M", 7, "16M");
	args_of("3 4 16M\n", 8, "16M");
	args_of("3 4  low", 8, " low"); /* v1 strips the whole line only */
	args_of("3 4 low,hierarchy ", 18, "low,hierarchy");
	args_of("3 4", 3, "");
	args_of("3 4\n", 4, "");
	args_of("3 4 ", 4, ""); /* stripped: as "3 4" */
}
