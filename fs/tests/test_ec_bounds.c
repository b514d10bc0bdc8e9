/* test_ec_bounds.c — the listener bounds (ec_bounds.h) as a rule: strangers never
 * fill what root and a cgroup's owner may register, and the total keeps root's
 * reserve. Pure: no mount. */
#include <criterion/criterion.h>

#include "../ec_bounds.h"

#define STRANGER false, false
#define ROOT true, false
#define OWNER false, true

Test(ec_bounds, an_empty_table_takes_anyone)
{
	ec_counts n = { 0 };
	cr_assert_null(ec_bounds_refusal(&n, STRANGER));
	cr_assert_null(ec_bounds_refusal(&n, ROOT));
	cr_assert_null(ec_bounds_refusal(&n, OWNER));
}

/* Issue 21: uid 1000 registered 255 listeners on a root-owned cgroup, and root's
 * handler was refused. */
Test(ec_bounds, strangers_leave_root_and_the_owner_their_share)
{
	ec_counts one = { .total = 64, .not_root = 64, .cg_strangers = 64, .cg_mine = 64,
			  .process = 64, .principal = 64 };
	cr_assert_not_null(ec_bounds_refusal(&one, STRANGER), "one stranger: 64 per cgroup");
	ec_counts many = { .total = 256, .not_root = 256, .cg_strangers = 256 };
	cr_assert_not_null(ec_bounds_refusal(&many, STRANGER), "strangers together: 256");
	cr_assert_null(ec_bounds_refusal(&many, ROOT), "root registers beside them");
	cr_assert_null(ec_bounds_refusal(&many, OWNER), "the owner registers beside them");
	ec_counts owner = { .total = 511, .not_root = 511, .cg_strangers = 256, .cg_mine = 255 };
	cr_assert_null(ec_bounds_refusal(&owner, OWNER), "the owner: 256 of its own");
	owner.cg_mine = 256;
	cr_assert_not_null(ec_bounds_refusal(&owner, OWNER));
}

Test(ec_bounds, process_and_principal_bounds)
{
	ec_counts p = { .total = 256, .not_root = 256, .process = 256, .principal = 256 };
	cr_assert_not_null(ec_bounds_refusal(&p, OWNER), "256 per process");
	ec_counts u = { .total = 1024, .not_root = 1024, .process = 10, .principal = 1024 };
	cr_assert_not_null(ec_bounds_refusal(&u, OWNER), "1024 per uid or user namespace");
}

Test(ec_bounds, the_total_keeps_roots_reserve)
{
	ec_counts n = { .total = EC_MAX_TOTAL - EC_ROOT_RESERVE,
			.not_root = EC_MAX_TOTAL - EC_ROOT_RESERVE };
	cr_assert_not_null(ec_bounds_refusal(&n, OWNER));
	cr_assert_null(ec_bounds_refusal(&n, ROOT));
	n.total = EC_MAX_TOTAL;
	cr_assert_not_null(ec_bounds_refusal(&n, ROOT), "and the total holds for root too");
}
