/* ids.h — the two numbers the kernel keeps for us across a restart of the server, and
 * how a successor reads them (pure functions; unit test fs/tests/test_ids.c).
 *
 * The kernel sends back only ids a server of this connection gave it (FUSE node ids in
 * every request, file handles in every request on an open file): a caller cannot forge
 * either. Even so, nothing in them is an address or a descriptor: a node id names an
 * object of the real tree (a cgroup by its kernfs id, a file by its cgroup and its name,
 * a synthetic file by its cgroup and its place in the table), which a successor opens
 * afresh and checks (inodes.c); a file handle carries only what an open decided that
 * the real tree cannot tell again (the access mode, the errno every write answers,
 * whether the opener was anybody special), and a serial.
 *
 * Node ids (64 bits):
 *   1                                the served root
 *   < 2^62                           a directory (a cgroup): its st_ino, the kernfs id
 *   bit 63, bits 61..5 dir, 4..0 k   synthetic file k-1 of the table (v2's or the v1
 *                                    layout's, 31 at most), dir the directory's node id
 *                                    (< 2^57, so bit 62 stays clear)
 *   bits 63+62, 61..12 dir, 11..0 k  real file named by entry k-1 of the carried name
 *                                    table (takeover.c), dir the directory's node id (< 2^50)
 *   2^62 + n                         anything else (another device, a clash): a counter,
 *                                    not revived (ESTALE after a restart)
 * File handles (64 bits):
 *   63..48 the server's generation, 47..46 O_ACCMODE, 45..44 the write errno (0, EPERM,
 *   EACCES), 43 "plain" (the opener's writes need nothing of the opener: it was known,
 *   in our cgroup namespace, and the file is not one the kernel judges by the opener's
 *   credentials), 42..0 a serial (not 0).
 */
#ifndef OOMD_FS_IDS_H
#define OOMD_FS_IDS_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>

#define FS_SYN_TAG (UINT64_C(1) << 63)
#define FS_FILE_TAG (UINT64_C(3) << 62)
#define FS_FALLBACK_BASE (UINT64_C(1) << 62)
#define FS_SYN_SHIFT 5  /* room for 31 synthetic names per directory */
#define FS_FILE_SHIFT 12 /* room for 4095 real file names in the carried table */
#define FS_SYN_DIR_MAX (UINT64_C(1) << (62 - FS_SYN_SHIFT))
#define FS_FILE_DIR_MAX (UINT64_C(1) << 50)

typedef enum { FS_ID_NONE, FS_ID_DIR, FS_ID_SYNTH, FS_ID_FILE } fs_id_kind;

/* The id of entry k (0-based) of a directory's synthetic table, or 0 when dir is too large. */
static inline uint64_t fs_id_synth(uint64_t dir, unsigned k)
{
	if (dir == 0 || dir >= FS_SYN_DIR_MAX || k + 1 >= (1u << FS_SYN_SHIFT))
		return 0;
	return FS_SYN_TAG | (dir << FS_SYN_SHIFT) | (k + 1);
}

/* The id of the real file named by name-table entry k in directory dir, or 0. */
static inline uint64_t fs_id_file(uint64_t dir, unsigned k)
{
	if (dir == 0 || dir >= FS_FILE_DIR_MAX || k + 1 >= (1u << FS_FILE_SHIFT))
		return 0;
	return FS_FILE_TAG | (dir << FS_FILE_SHIFT) | (k + 1);
}

/* What an id names: *dir and *k for synthetic and real files (k 0-based). */
static inline fs_id_kind fs_id_decode(uint64_t id, uint64_t *dir, unsigned *k)
{
	if ((id & FS_FILE_TAG) == FS_FILE_TAG) {
		*dir = (id & ~FS_FILE_TAG) >> FS_FILE_SHIFT;
		*k = (unsigned)(id & ((1u << FS_FILE_SHIFT) - 1));
		if (*dir == 0 || *k == 0)
			return FS_ID_NONE;
		(*k)--;
		return FS_ID_FILE;
	}
	if (id & FS_SYN_TAG) {
		*dir = (id & ~FS_SYN_TAG) >> FS_SYN_SHIFT;
		*k = (unsigned)(id & ((1u << FS_SYN_SHIFT) - 1));
		if (*dir == 0 || *k == 0)
			return FS_ID_NONE;
		(*k)--;
		return FS_ID_SYNTH;
	}
	if (id == 0 || id >= FS_FALLBACK_BASE)
		return FS_ID_NONE;
	*dir = id;
	*k = 0;
	return FS_ID_DIR;
}

#define FS_FH_GEN_SHIFT 48
#define FS_FH_ACC_SHIFT 46
#define FS_FH_WERR_SHIFT 44
#define FS_FH_PLAIN (UINT64_C(1) << 43)
#define FS_FH_SERIAL_MAX ((UINT64_C(1) << 43) - 1)

typedef struct {
	uint16_t gen;
	int acc;       /* O_RDONLY, O_WRONLY or O_RDWR */
	int write_err; /* 0, EPERM or EACCES */
	bool plain;
	uint64_t serial;
} fs_fh_info;

/* 0 when the info cannot be encoded (serial 0 or too large, another errno). */
static inline uint64_t fs_fh_encode(const fs_fh_info *i)
{
	unsigned w = i->write_err == 0 ? 0 : i->write_err == EPERM ? 1 : i->write_err == EACCES ? 2 : 3;
	if (w == 3 || i->serial == 0 || i->serial > FS_FH_SERIAL_MAX || (i->acc & ~O_ACCMODE) ||
	    (i->acc & O_ACCMODE) == O_ACCMODE)
		return 0;
	return ((uint64_t)i->gen << FS_FH_GEN_SHIFT) | ((uint64_t)i->acc << FS_FH_ACC_SHIFT) |
	       ((uint64_t)w << FS_FH_WERR_SHIFT) | (i->plain ? FS_FH_PLAIN : 0) | i->serial;
}

/* False for a value no server of ours makes. */
static inline bool fs_fh_decode(uint64_t fh, fs_fh_info *i)
{
	unsigned acc = (unsigned)(fh >> FS_FH_ACC_SHIFT) & 3;
	unsigned w = (unsigned)(fh >> FS_FH_WERR_SHIFT) & 3;
	i->gen = (uint16_t)(fh >> FS_FH_GEN_SHIFT);
	i->acc = (int)acc;
	i->write_err = w == 0 ? 0 : w == 1 ? EPERM : EACCES;
	i->plain = (fh & FS_FH_PLAIN) != 0;
	i->serial = fh & FS_FH_SERIAL_MAX;
	return acc != 3 && w != 3 && i->serial != 0 && i->gen != 0;
}

#endif
