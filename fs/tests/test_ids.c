/* The encodings a successor decodes (ids.h) and the carried tables (carry.c): what
 * one server writes, the next reads back; what no server of ours makes is refused. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ec_bounds.h"
#include "ec_private.h"
#include "fs_private.h"

Test(ids, node_ids_round_trip_and_never_collide)
{
	uint64_t dir;
	unsigned k;
	uint64_t cg = (UINT64_C(1) << 32) | 4242; /* a kernfs id: generation 1, ino 4242 */
	cr_assert_eq(fs_id_decode(cg, &dir, &k), FS_ID_DIR);
	cr_assert_eq(dir, cg);
	uint64_t s = fs_id_synth(cg, 3);
	cr_assert_eq(fs_id_decode(s, &dir, &k), FS_ID_SYNTH);
	cr_assert(dir == cg && k == 3);
	uint64_t f = fs_id_file(cg, 4094);
	cr_assert_eq(fs_id_decode(f, &dir, &k), FS_ID_FILE);
	cr_assert(dir == cg && k == 4094);
	cr_assert_eq(fs_id_file(1, 0) & FS_FILE_TAG, FS_FILE_TAG, "the root's files");
	/* out of range: no id rather than a wrong one */
	cr_assert_eq(fs_id_file(cg, 4095), 0);
	cr_assert_eq(fs_id_file(FS_FILE_DIR_MAX, 0), 0);
	cr_assert_eq(fs_id_synth(FS_SYN_DIR_MAX, 0), 0);
	cr_assert_eq(fs_id_synth(cg, 31), 0);
	cr_assert_neq(fs_id_synth(cg, 16), 0, "the v1 layout's memory.force_empty (index 16)");
	cr_assert_eq(fs_id_synth(0, 1), 0);
	/* a synthetic id never reads as a file id, nor a counter id as anything */
	cr_assert_eq(fs_id_decode(fs_id_synth(FS_SYN_DIR_MAX - 1, 30), &dir, &k), FS_ID_SYNTH);
	cr_assert_eq(fs_id_decode(FS_FALLBACK_BASE + 7, &dir, &k), FS_ID_NONE);
	cr_assert_eq(fs_id_decode(FS_SYN_TAG, &dir, &k), FS_ID_NONE, "tag without dir or index");
	cr_assert_eq(fs_id_decode(FS_FILE_TAG | (cg << FS_FILE_SHIFT), &dir, &k), FS_ID_NONE);
	cr_assert_eq(fs_id_decode(0, &dir, &k), FS_ID_NONE);
}

Test(ids, file_handles_round_trip)
{
	int accs[] = { O_RDONLY, O_WRONLY, O_RDWR };
	int errs[] = { 0, EPERM, EACCES };
	for (int a = 0; a < 3; a++)
		for (int e = 0; e < 3; e++)
			for (int p = 0; p < 2; p++) {
				fs_fh_info in = { .gen = 0xfffe, .acc = accs[a], .write_err = errs[e],
						  .plain = p, .serial = FS_FH_SERIAL_MAX - 1 };
				uint64_t fh = fs_fh_encode(&in);
				fs_fh_info out;
				cr_assert(fs_fh_decode(fh, &out));
				cr_assert(out.gen == in.gen && out.acc == in.acc &&
					  out.write_err == in.write_err && out.plain == in.plain &&
					  out.serial == in.serial);
			}
	fs_fh_info bad = { .gen = 1, .acc = O_RDONLY, .serial = 0 };
	cr_assert_eq(fs_fh_encode(&bad), 0, "serial 0");
	bad.serial = FS_FH_SERIAL_MAX + 1;
	cr_assert_eq(fs_fh_encode(&bad), 0, "serial too large");
	bad.serial = 1;
	bad.write_err = EIO;
	cr_assert_eq(fs_fh_encode(&bad), 0, "an errno the handle cannot carry");
	bad.write_err = 0;
	bad.acc = O_ACCMODE;
	cr_assert_eq(fs_fh_encode(&bad), 0);
	fs_fh_info out;
	cr_assert_not(fs_fh_decode(0, &out));
	cr_assert_not(fs_fh_decode((UINT64_C(1) << 48) | (UINT64_C(3) << FS_FH_ACC_SHIFT) | 1, &out));
	cr_assert_not(fs_fh_decode((UINT64_C(1) << 48) | (UINT64_C(3) << FS_FH_WERR_SHIFT) | 1, &out));
	cr_assert_not(fs_fh_decode(1, &out), "generation 0 is no server's");
	/* an address of the old layout (pointer | generation << 48) is no valid handle of
	 * this one unless its bits happen to read as one: then it is an unknown serial */
}

static int memfd(void)
{
	int fd = memfd_create("test", MFD_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 8472), 0, "the previous layout's size");
	return fd;
}

Test(carry, a_successor_reads_what_the_server_wrote)
{
	int fd = memfd();
	GError *err = NULL;
	fs_carry *c = fs_carry_map(fd, &err);
	cr_assert_not_null(c, "%s", err ? err->message : "?");
	cr_assert_eq(fs_carry_name_index(c, "memory.current"), 0);
	cr_assert_eq(fs_carry_name_index(c, "memory.stat"), 1);
	cr_assert_eq(fs_carry_name_index(c, "memory.current"), 0, "the same name, the same index");
	char longname[64];
	memset(longname, 'x', sizeof longname - 1);
	longname[63] = 0;
	cr_assert_eq(fs_carry_name_index(c, longname), -1, "too long to carry");
	fs_carried_listener l = { .cgroup = 77, .eventfd_id = 5, .starttime = 123, .tgid = 42, .uid = 1000 };
	int s1 = fs_carry_listener_put(c, &l);
	l.cgroup = 78;
	int s2 = fs_carry_listener_put(c, &l);
	cr_assert(s1 >= 0 && s2 >= 0 && s1 != s2);
	fs_carry_listener_holder(c, s2, 43, 456);
	fs_carry_poll_add(c, 9);
	fs_carry_poll_add(c, 10);
	fs_carry_poll_del(c, 9);
	fs_carry_free(c); /* the server dies */

	c = fs_carry_map(fd, &err);
	cr_assert_not_null(c);
	cr_assert_str_eq(fs_carry_name(c, 1), "memory.stat");
	cr_assert_null(fs_carry_name(c, 2));
	cr_assert_eq(fs_carry_name_index(c, "memory.stat"), 1, "the table is carried, not rebuilt");
	fs_carried_listener r;
	cr_assert(fs_carry_listener_get(c, s1, &r));
	cr_assert(r.cgroup == 77 && r.eventfd_id == 5 && r.tgid == 42 && r.uid == 1000);
	cr_assert(fs_carry_listener_get(c, s2, &r));
	cr_assert(r.cgroup == 78 && r.tgid == 43 && r.starttime == 456);
	cr_assert_not(r.who_known, "a record put without its principal has none");
	fs_carry_listener_clear(c, s1);
	cr_assert_not(fs_carry_listener_get(c, s1, &r), "a dropped listener is not carried");
	/* with its principal: kept across servers */
	fs_carried_listener w = { .cgroup = 79, .eventfd_id = 6, .tgid = 44, .uid = 0, .who_known = true,
				  .principal = (UINT64_C(1) << 32) | 4026532001u, .stranger = true };
	int s3 = fs_carry_listener_put(c, &w);
	fs_carry_free(c);
	c = fs_carry_map(fd, &err);
	cr_assert(fs_carry_listener_get(c, s3, &r));
	cr_assert(r.who_known && r.principal == w.principal && !r.root && r.stranger);
	cr_assert_not(fs_carry_listener_get(c, FS_CARRY_LISTENERS, &r));
	fs_carry_free(c);
	close(fd);
}

static bool collect(void *ud, uint64_t kh)
{
	g_array_append_val((GArray *)ud, kh);
	return true;
}

Test(carry, every_poll_waiter_is_woken_even_past_the_set)
{
	int fd = memfd();
	fs_carry *c = fs_carry_map(fd, NULL);
	cr_assert_not_null(c);
	/* more waiters than the set holds: the rest is woken as a range */
	for (uint64_t kh = 1; kh <= 20000; kh++)
		fs_carry_poll_add(c, kh);
	fs_carry_poll_del(c, 5); /* released: not woken unless in the range */
	GArray *got = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	fs_carry_poll_wake(c, collect, got);
	GHashTable *seen = g_hash_table_new(g_int64_hash, g_int64_equal);
	for (guint i = 0; i < got->len; i++)
		g_hash_table_add(seen, &g_array_index(got, uint64_t, i));
	for (uint64_t kh = 1; kh <= 20000; kh++)
		cr_assert(kh == 5 || g_hash_table_contains(seen, &kh), "kh %lu not woken", (unsigned long)kh);
	g_array_set_size(got, 0);
	fs_carry_poll_wake(c, collect, got);
	cr_assert_eq(got->len, 0, "woken once, then forgotten");
	g_hash_table_destroy(seen);
	g_array_unref(got);
	fs_carry_free(c);
	close(fd);
}

/* ec_carry.c: a successor re-takes a recorded listener's eventfd from the process that
 * holds it (this one), signals it at the next onset, and drops a record whose eventfd
 * nobody holds (its slot freed). No controller, no mount: the lists and the carry. */

static bool count_is(fs_evctl *e, uint64_t id, size_t n)
{
	for (int i = 0; i < 500; i++) {
		if (fs_evctl_count(e, id) == n)
			return true;
		g_usleep(10000);
	}
	return false;
}

Test(carry, a_successor_retakes_listeners_from_their_holders)
{
	int fd = memfd();
	fs_carry *c = fs_carry_map(fd, NULL);
	cr_assert_not_null(c);
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	cr_assert_geq(efd, 0);
	char p[64], *info = NULL;
	snprintf(p, sizeof p, "/proc/self/fdinfo/%d", efd);
	cr_assert(g_file_get_contents(p, &info, NULL, NULL));
	const char *at = strstr(info, "eventfd-id:");
	cr_assert_not_null(at, "fdinfo without eventfd-id: %s", info);
	uint64_t id = g_ascii_strtoull(at + 11, NULL, 10);
	g_free(info);
	/* registered from a container: its principal is the user namespace, not the uid */
	fs_carried_listener held = { .cgroup = 77, .eventfd_id = id, .starttime = ec_proc_starttime(getpid()),
				     .tgid = getpid(), .uid = getuid(), .who_known = true,
				     .principal = (UINT64_C(1) << 32) | 4026532001u, .stranger = true };
	fs_carried_listener lost = held;
	lost.cgroup = 78;
	lost.eventfd_id = id + 1000000; /* no such eventfd */
	int s1 = fs_carry_listener_put(c, &held), s2 = fs_carry_listener_put(c, &lost);
	cr_assert(s1 >= 0 && s2 >= 0);

	int err = 0;
	fs_evctl *e = fs_evctl_new(NULL, &err);
	cr_assert_not_null(e, "%s", strerror(err));
	cr_assert_eq(fs_evctl_carry(e, NULL, c, true), 2, "two records to re-take");
	cr_assert(count_is(e, 77, 1), "the held eventfd was not re-taken");
	/* the bounds count it for the principal it was registered by (review of stop 24:
	 * it counted for its uid, as root when the uid was 0) */
	g_mutex_lock(&e->lock);
	const ec_listener *got = NULL;
	for (guint i = 0; i < e->all->len; i++) {
		const ec_listener *o = g_ptr_array_index(e->all, i);
		if (o->id == 77)
			got = o;
	}
	cr_assert_not_null(got);
	uint64_t principal = got->principal;
	bool root = got->root, stranger = got->stranger;
	g_mutex_unlock(&e->lock);
	cr_assert_eq(principal, held.principal, "carried principal %" G_GUINT64_FORMAT, principal);
	cr_assert(!root && stranger);
	fs_carried_listener r;
	cr_assert(fs_carry_listener_get(c, s1, &r), "a re-taken listener stays recorded");
	for (int i = 0; i < 500 && fs_carry_listener_get(c, s2, &r); i++)
		g_usleep(10000);
	cr_assert_not(fs_carry_listener_get(c, s2, &r), "a listener whose eventfd is gone is dropped");
	cr_assert_eq(fs_evctl_count(e, 78), 0);
	fs_evctl_notify(e, 77);
	fs_evctl_sync(e);
	uint64_t v = 0;
	cr_assert_eq(read(efd, &v, sizeof v), (ssize_t)sizeof v);
	cr_assert_eq(v, 1, "the onset after the takeover reached the listener's eventfd");
	fs_evctl_free(e); /* stopping keeps the record for the next server */
	cr_assert(fs_carry_listener_get(c, s1, &r));
	close(efd);
	fs_carry_free(c);
	close(fd);
}

/* A container's root (uid 0 in its own user namespace, mapped to a host uid) is
 * one principal with the rest of its namespace, and never root; a record of an
 * older server (no principal) counts for its uid, a stranger unless root's. */
Test(carry, a_carried_listener_counts_for_the_principal_it_registered_as)
{
	uint64_t p;
	bool root, stranger;
	fs_carried_listener ns = { .cgroup = 1, .uid = 100000, .who_known = true,
				   .principal = ec_principal(false, 4026532001u, 100000) };
	ec_carry_who(&ns, &p, &root, &stranger);
	cr_assert_eq(p, ec_principal(false, 4026532001u, 0), "one principal per user namespace");
	cr_assert(!root && !stranger, "the owner of its cgroup stays an owner");
	fs_carried_listener host_root = { .cgroup = 1, .uid = 0, .who_known = true,
					  .principal = ec_principal(true, 4026531837u, 0), .root = true };
	ec_carry_who(&host_root, &p, &root, &stranger);
	cr_assert(root && p == 0);
	fs_carried_listener old = { .cgroup = 1, .uid = 1000 };
	ec_carry_who(&old, &p, &root, &stranger);
	cr_assert(p == 1000 && !root && stranger);
	old.uid = 0;
	ec_carry_who(&old, &p, &root, &stranger);
	cr_assert(p == 0 && root && !stranger);
}

/* Every kind round-trips: an OOM listener in the table every server reads, a threshold
 * (usage, memsw) and a pressure listener in their own, with what they listen to. */
Test(carry, every_kind_round_trips)
{
	int fd = memfd();
	fs_carry *c = fs_carry_map(fd, NULL);
	cr_assert_not_null(c);
	fs_carried_listener in[4] = {
		{ .cgroup = 70, .eventfd_id = 1, .starttime = 11, .tgid = 40, .uid = 1000, .who_known = true,
		  .principal = 1000, .stranger = true },
		{ .cgroup = 71, .eventfd_id = 2, .starttime = 12, .tgid = 41, .uid = 1000, .who_known = true,
		  .principal = 1000, .kind = EC_USAGE, .threshold = 16u << 20 },
		{ .cgroup = 72, .eventfd_id = 3, .starttime = 13, .tgid = 42, .uid = 0, .who_known = true,
		  .principal = 0, .root = true, .kind = EC_MEMSW, .threshold = UINT64_MAX, .cg_root = true },
		{ .cgroup = 73, .eventfd_id = 4, .starttime = 14, .tgid = 43, .uid = 1001, .who_known = true,
		  .principal = (UINT64_C(1) << 32) | 4026532001u, .stranger = true, .kind = EC_PRESSURE,
		  .level = OD_VMP_MEDIUM, .mode = OD_VMP_LOCAL },
	};
	int slot[4];
	for (int i = 0; i < 4; i++)
		slot[i] = fs_carry_listener_put(c, &in[i]);
	cr_assert(slot[0] >= 0 && slot[0] < FS_CARRY_LISTENERS, "an OOM listener where every server reads");
	for (int i = 1; i < 4; i++)
		cr_assert(slot[i] >= FS_CARRY_LISTENERS && slot[i] < FS_CARRY_SLOTS, "kind %u in its own table",
			  in[i].kind);
	fs_carry_listener_holder(c, slot[3], 44, 15); /* a forked handler holds it now */
	in[3].tgid = 44;
	in[3].starttime = 15;
	fs_carry_free(c); /* the server dies */

	c = fs_carry_map(fd, NULL);
	cr_assert_not_null(c);
	for (int i = 0; i < 4; i++) {
		fs_carried_listener r;
		cr_assert(fs_carry_listener_get(c, slot[i], &r), "record %d", i);
		cr_assert(r.cgroup == in[i].cgroup && r.eventfd_id == in[i].eventfd_id &&
			  r.starttime == in[i].starttime && r.tgid == in[i].tgid && r.uid == in[i].uid, "record %d", i);
		cr_assert(r.who_known && r.principal == in[i].principal && r.root == in[i].root &&
			  r.stranger == in[i].stranger, "record %d: who", i);
		cr_assert(r.kind == in[i].kind && r.threshold == in[i].threshold && r.level == in[i].level &&
			  r.mode == in[i].mode && r.cg_root == in[i].cg_root, "record %d: what it listens to", i);
		cr_assert(ec_carry_valid(&r));
	}
	fs_carry_listener_clear(c, slot[2]);
	fs_carried_listener r;
	cr_assert_not(fs_carry_listener_get(c, slot[2], &r));
	cr_assert_eq(fs_carry_listener_put(c, &in[2]), slot[2], "a freed slot of its table is used again");
	cr_assert_not(fs_carry_listener_get(c, FS_CARRY_SLOTS, &r));
	/* a kind, level or mode no server of this one knows is not served */
	fs_carried_listener odd = in[3];
	odd.level = OD_VMP_NLEVELS;
	cr_assert_not(ec_carry_valid(&odd));
	odd = in[3];
	odd.kind = EC_PRESSURE + 1;
	cr_assert_not(ec_carry_valid(&odd));
	fs_carry_free(c);
	close(fd);
}

/* The carried area as the server before thresholds and pressure levels were carried wrote
 * it (stop 25, commit e428b5e): frozen here, never to follow carry.c. */
typedef struct {
	uint64_t cgroup, eventfd_id, starttime;
	int32_t tgid;
	uint32_t uid;
} old_rec;
typedef struct {
	uint64_t eventfd_id, principal;
	uint32_t flags, pad;
} old_who;
typedef struct {
	uint64_t magic;
	uint32_t version, names;
	uint64_t poll_lo, poll_hi;
	char name[4095][48];
	uint64_t poll[16384];
	old_rec listener[4096];
	old_who who[4096];
} old_area;

Test(carry, an_older_servers_memfd_reads_as_it_wrote_it)
{
	int fd = memfd_create("old", MFD_CLOEXEC);
	cr_assert_geq(fd, 0);
	size_t old_size = FS_CARRY_OFFSET + sizeof(old_area);
	cr_assert_eq(ftruncate(fd, (off_t)old_size), 0);
	old_area *o = mmap(NULL, sizeof *o, PROT_READ | PROT_WRITE, MAP_SHARED, fd, FS_CARRY_OFFSET);
	cr_assert_neq(o, MAP_FAILED);
	o->magic = UINT64_C(0x6f6f6d6463617279);
	o->version = 1;
	o->names = 1;
	strcpy(o->name[0], "memory.current");
	o->listener[5] = (old_rec){ .cgroup = 90, .eventfd_id = 7, .starttime = 99, .tgid = 50, .uid = 1000 };
	o->who[5] = (old_who){ .eventfd_id = 7, .principal = 1000, .flags = 1 | 4 }; /* recorded, stranger */
	o->listener[6] = (old_rec){ .cgroup = 91, .eventfd_id = 8, .tgid = 51, .uid = 0 }; /* no who */
	munmap(o, sizeof *o);

	fs_carry *c = fs_carry_map(fd, NULL);
	cr_assert_not_null(c);
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_gt((size_t)st.st_size, old_size, "the memfd grew for the new table");
	cr_assert_str_eq(fs_carry_name(c, 0), "memory.current");
	fs_carried_listener r;
	cr_assert(fs_carry_listener_get(c, 5, &r));
	cr_assert(r.cgroup == 90 && r.eventfd_id == 7 && r.starttime == 99 && r.tgid == 50 && r.uid == 1000);
	cr_assert(r.who_known && r.principal == 1000 && r.stranger && !r.root);
	cr_assert(r.kind == EC_OOM && ec_carry_valid(&r), "an older server's record is an OOM listener");
	cr_assert(fs_carry_listener_get(c, 6, &r));
	cr_assert(r.cgroup == 91 && !r.who_known && r.kind == EC_OOM);
	unsigned n = 0;
	for (int s = 0; s < FS_CARRY_SLOTS; s++)
		n += fs_carry_listener_get(c, s, &r);
	cr_assert_eq(n, 2, "the appended table reads empty");
	/* and a threshold recorded now goes to the new table, not over the old records */
	fs_carried_listener t = { .cgroup = 92, .eventfd_id = 9, .tgid = 52, .kind = EC_USAGE, .threshold = 4096 };
	cr_assert_geq(fs_carry_listener_put(c, &t), FS_CARRY_LISTENERS);
	fs_carry_free(c);
	close(fd);
}

/* While a successor re-takes, every held record is counted by the bounds at every moment:
 * as pending until it joins the list, then in the list (never neither: a registration in
 * between could take its room). */
Test(carry, records_count_in_the_bounds_while_being_retaken)
{
	int fd = memfd();
	fs_carry *c = fs_carry_map(fd, NULL);
	cr_assert_not_null(c);
	enum { N = 64 };
	int efd[N];
	for (int i = 0; i < N; i++) {
		efd[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		char p[64], *info = NULL;
		snprintf(p, sizeof p, "/proc/self/fdinfo/%d", efd[i]);
		cr_assert(g_file_get_contents(p, &info, NULL, NULL));
		fs_carried_listener r = { .cgroup = 77, .eventfd_id = g_ascii_strtoull(strstr(info, "eventfd-id:") + 11, NULL, 10),
					  .starttime = ec_proc_starttime(getpid()), .tgid = getpid(), .uid = getuid(),
					  .who_known = true, .principal = 1000, .stranger = true };
		g_free(info);
		cr_assert_geq(fs_carry_listener_put(c, &r), 0);
	}
	int err = 0;
	fs_evctl *e = fs_evctl_new(NULL, &err);
	cr_assert_not_null(e);
	cr_assert_eq(fs_evctl_carry(e, NULL, c, true), N);
	bool retaking = true;
	unsigned looks = 0;
	while (retaking) {
		ec_counts n = { 0 };
		g_mutex_lock(&e->lock);
		retaking = e->retaking;
		for (guint i = 0; i < e->all->len; i++) {
			const ec_listener *o = g_ptr_array_index(e->all, i);
			ec_count_one(&n, 77, getpid(), 1000, o->id, o->tgid, o->principal, o->root, o->stranger);
		}
		ec_carry_count_pending_locked(e, &n, 77, getpid(), 1000);
		g_mutex_unlock(&e->lock);
		cr_assert_eq(n.total, N, "look %u: %zu counted", looks, n.total);
		cr_assert(n.principal == N && n.cg_mine == N && n.cg_strangers == N && n.process == N);
		looks++;
	}
	cr_assert_eq(fs_evctl_count(e, 77), N, "all re-taken");
	fs_evctl_free(e);
	for (int i = 0; i < N; i++)
		close(efd[i]);
	fs_carry_free(c);
	close(fd);
}
