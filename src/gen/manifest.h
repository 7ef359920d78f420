/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * manifest.h: the generations manifest, `tide.generations`.
 *
 * With online delete on, a node's data directory holds an
 * ordered list of complete NuDB stores, one directory each ("generations"),
 * and this small text file naming them, newest first, with the rotation
 * state. manifest.c's essay states the invariants; docs/FORMAT.md
 * ("The generations manifest") gives the grammar byte for byte.
 *
 * A directory with no tide.generations is a plain store (nudb.dat,
 * nudb.key, nudb.log directly in it) or empty: online delete has never been
 * turned on there.
 *
 * Thread safety: every function is reentrant and touches only its
 * arguments (and the thread's tide_last_error message); a manifest is a
 * plain value that one thread at a time may change. Two processes writing
 * the same directory's manifest at once is the caller's to prevent (the
 * node holds its store's lock).
 */
#ifndef TIDE_GEN_MANIFEST_H
#define TIDE_GEN_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "io/io.h"

#define TIDE_GEN_FORMAT_VERSION 1       /* the only version this code reads */
#define TIDE_GEN_MIN            2       /* the fewest generations kept (G) */
#define TIDE_GEN_MAX            64      /* the most */
#define TIDE_GEN_FILE           "tide.generations"
#define TIDE_GEN_FILE_TMP       "tide.generations.tmp"
#define TIDE_GEN_DIR_CAP        32      /* "gen-" + up to 20 digits + NUL fits */
#define TIDE_GEN_ENCODED_MAX    4096    /* every valid manifest encodes below this, so read
                                           refuses a bigger file unread */

/* One generation: a complete store in directory `dir` of the data
 * directory. `dir` is always tide_gen_dir_name(id). */
typedef struct tide_gen {
    uint64_t id;
    char     dir[TIDE_GEN_DIR_CAP];
} tide_gen;

/*
 * The manifest (manifest.c's essay numbers its invariants):
 *   version           TIDE_GEN_FORMAT_VERSION;
 *   keep              G, the generations kept, TIDE_GEN_MIN..TIDE_GEN_MAX;
 *   rotations         rotations made since online delete was turned on;
 *   last_rotation_us  wall time of the last rotation, microseconds since
 *                     the Unix epoch (tide_clock_real_us); 0 for never;
 *   count, gens       the generations, newest first: 1 <= count <= keep,
 *                     ids strictly decreasing, gens[0] the writable one.
 */
typedef struct tide_gen_manifest {
    uint32_t version;
    uint32_t keep;
    uint64_t rotations;
    uint64_t last_rotation_us;
    uint32_t count;
    tide_gen gens[TIDE_GEN_MAX];
} tide_gen_manifest;

/*
 * Write generation `id`'s directory name, "gen-" and the id in decimal,
 * zero-padded to 12 digits ("gen-000000000007"; longer ids take more
 * digits, so the name is unique to the id), into `buf` (cap bytes, NUL
 * ended). Returns 0, or TIDE_EINVAL when cap is too small (buf then holds
 * a cut name). TIDE_GEN_DIR_CAP is always enough. No I/O, no allocation.
 */
int tide_gen_dir_name(uint64_t id, char *buf, size_t cap);

/*
 * Make *m a manifest keeping `keep` generations with one generation,
 * `first_id`, no rotation yet. Returns 0 or TIDE_EINVAL (keep out of
 * range; *m untouched). No I/O, no allocation.
 */
int tide_gen_manifest_init(tide_gen_manifest *m, uint32_t keep, uint64_t first_id);

/*
 * Check every invariant of *m. Returns 0, or TIDE_EINVAL with a message
 * naming the first broken one ("generation 2: id 9 is not below id 8 of
 * the one before"). No I/O, no allocation.
 */
int tide_gen_manifest_check(const tide_gen_manifest *m);

/*
 * The rotation's change to the manifest, in memory only: a new newest
 * generation, id one above the present newest, goes in front; when the
 * manifest already held `keep` generations the oldest leaves it and is
 * copied to *dropped (when `dropped` is not NULL) with *ndropped = 1, else
 * *ndropped = 0 and *dropped is not written. rotations grows by one and
 * last_rotation_us becomes `now_us`. Returns 0, or TIDE_EINVAL (*m broken,
 * or the newest id is UINT64_MAX) with *m untouched. No I/O.
 */
int tide_gen_manifest_rotate(tide_gen_manifest *m, uint64_t now_us, tide_gen *dropped,
                             unsigned *ndropped);

/*
 * Encode *m as the bytes of tide.generations into `buf` (cap bytes); *len
 * gets their number. Returns 0; TIDE_EINVAL when *m breaks an invariant,
 * or when cap is too small (then *len gets the size needed). A cap of
 * TIDE_GEN_ENCODED_MAX always suffices. No I/O, no allocation.
 */
int tide_gen_manifest_encode(const tide_gen_manifest *m, void *buf, size_t cap, size_t *len);

/*
 * Decode the `len` bytes of a tide.generations file into *m. Accepts
 * exactly what encode writes (decode(encode(m)) == m, and encode(decode(b))
 * == b for every accepted b). Returns 0; TIDE_EVERSION when the first line
 * names another format version; TIDE_ECORRUPT for anything else, the
 * message naming the line and what was wrong ("tide.generations:6: gen 5
 * is not below gen 4 of line 5 (ids decrease, newest first)"): truncated,
 * a bad or missing checksum, bytes after the checksum line, an unknown or
 * repeated key, a value out of range, ids out of order or repeated, too
 * many generations. On error *m is unspecified. No I/O, no allocation;
 * O(len).
 */
int tide_gen_manifest_decode(const void *buf, size_t len, tide_gen_manifest *m);

/*
 * Replace DIR/tide.generations with *m durably, through `io` only: write
 * DIR/tide.generations.tmp (created or emptied), sync it, rename it over
 * tide.generations, sync the directory. Returns 0 only when all of that is
 * durable: a crash afterwards reads back *m. On error (TIDE_EINVAL for a
 * broken *m or a path too long, nothing done; TIDE_EIO, TIDE_ENOSPC or
 * TIDE_ENOMEM from io, with io's message) the old manifest stays in place
 * when the failure came before the rename; a failed directory sync after
 * the rename leaves the new one in place, not yet durable, so a crash may
 * give either. Whatever failed, the directory holds the old manifest or
 * the new one, whole, never anything else: the caller must not act on the
 * new one (switch stores, remove a generation) until a write returned 0.
 * A tide.generations.tmp left behind is harmless: read ignores it and the
 * next write replaces it.
 *
 * DIR must exist. Cost: six io calls (open, truncate, write_at, sync,
 * rename, sync_dir) and a close: one write of under TIDE_GEN_ENCODED_MAX
 * bytes (encoded on the stack), two syncs; no allocation but the io's own.
 */
int tide_gen_manifest_write(tide_io *io, const char *dir, const tide_gen_manifest *m);

/*
 * Read DIR/tide.generations into *m. Returns 0; TIDE_ENOENT when there is
 * none (DIR is then a plain store, or empty: see the top of this file);
 * TIDE_ECORRUPT for a file over TIDE_GEN_ENCODED_MAX bytes (refused unread)
 * or one decode refuses, the message starting with DIR ("/data:
 * tide.generations:6: bad checksum: ..."); TIDE_EVERSION
 * as decode; TIDE_ENOTSTORE when it is not a regular file; TIDE_EIO from
 * io. *m is
 * unspecified on error. Cost: open, size, one read_at of the whole file,
 * close, into a TIDE_GEN_ENCODED_MAX buffer on the stack; no allocation.
 */
int tide_gen_manifest_read(tide_io *io, const char *dir, tide_gen_manifest *m);

#endif
