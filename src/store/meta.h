/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * meta.h: tide.meta, the deferred index's durable mark.
 *
 * Two 512-byte slots at offsets 0 and 512, written alternately (slot =
 * seq & 1), each with one write and a sync; the valid slot with the higher
 * seq wins, so a torn write leaves the other. docs/FORMAT.md has the
 * layout. NuDB ignores the file. A slot of version 1 (without the key
 * file's size) is not read: it cannot be tied to the log it was written
 * under.
 *
 * Thread safety: none; the commit thread writes it, recovery reads it.
 */
#ifndef TIDE_STORE_META_H
#define TIDE_STORE_META_H

#include <stdint.h>

#include "io/io.h"

struct tide_log_header;

#define TI_META_NAME      "tide.meta"
#define TI_META_SLOT      512u
#define TI_META_VERSION   2u

typedef struct ti_meta {
    uint64_t seq;             /* higher wins; 0: none written */
    uint64_t uid;             /* the store's (nudb.dat's and nudb.key's) */
    uint64_t dat_indexed;     /* W when this slot was written */
    uint64_t dat_committed;   /* C: every record below is synced, acknowledged */
    uint64_t key_file_size;   /* nudb.key's size then: the idle log's key_file_size */
} ti_meta;

/* Encode `m` into one slot image (TI_META_SLOT bytes). Pure. */
void ti_meta_encode(uint8_t out[TI_META_SLOT], const ti_meta *m);

/* Decode one slot: 1 valid (magic, version, checksum), 0 not. Pure. */
int ti_meta_decode(const uint8_t in[TI_META_SLOT], ti_meta *m);

/*
 * Read tide.meta at `path`: *m gets the valid slot with the higher seq.
 * *valid is 0 (and *m zeroed but for seq, the highest seq seen, so a writer
 * goes on above it) when the file is missing, both slots fail their
 * checksum, or the winner's uid is not `uid` (another store's file: a
 * warning through tide_log names it). 0, or an I/O error other than a
 * missing file.
 */
int ti_meta_read(tide_io *io, const char *path, uint64_t uid, ti_meta *m, int *valid);

/*
 * Does slot `m` (valid, this store's) speak for the log whose header is
 * `lh`? Only when the log carries the deferred mark (format.h: no other
 * writer makes one; a NuDB commit's log, even at the same W, never
 * matches) and the slot was written under that very idle log: the same W
 * and the same key file size. Pure.
 */
int ti_meta_matches_log(const ti_meta *m, const struct tide_log_header *lh);

/* Write m (with m->seq raised by one first) into its slot of the open file
 * `f`, and sync it. 0 or the I/O error (the other slot is intact). */
int ti_meta_write(tide_io *io, tide_file *f, ti_meta *m);

#endif
