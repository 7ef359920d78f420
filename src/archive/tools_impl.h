/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tools_impl.h: what the tools' three files share (tools.c: the session,
 * names, object reads, ls and get; tools_verify.c; tools_restore.c).
 */
#ifndef TIDE_ARCHIVE_TOOLS_IMPL_H
#define TIDE_ARCHIVE_TOOLS_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "archive/archive_io.h"
#include "archive/catalog.h"
#include "archive/rados.h"
#include "archive/tools.h"

#define TI_TOOL_PIECE (4u << 20)      /* the largest read of one object at a time */

struct tide_archive_tool {
    tide_rados      *r;
    tide_archive_io *aio;             /* the sealed generations of `cat` as files */
    char             pool[128], prefix[TIDE_ARCHIVE_PREFIX_MAX + 1];
    tide_archive_catalog cat;         /* the manifest as read at open */
    int              has_manifest;
    uint64_t         manifest_bytes;
};

/* What an object's name says: TI_OBJ_* and, for a generation's object,
 * its id and (data and key) its chunk. */
enum { TI_OBJ_OTHER, TI_OBJ_MANIFEST, TI_OBJ_DAT, TI_OBJ_KEY, TI_OBJ_FILTER };
int ti_tool_parse_oid(const char *prefix, const char *oid, uint64_t *id, unsigned *chunk);

/* Bytes of chunk `c` of a file of `bytes` in chunks of `chunk_bytes`. */
uint64_t ti_tool_chunk_len(uint64_t bytes, uint64_t chunk_bytes, unsigned c);

/* Called with each piece of an object as it is read, in order. */
typedef int (*ti_tool_sink)(void *arg, uint64_t off, const uint8_t *p, size_t n);

/*
 * Read object `oid` whole: a stat, then reads of at most `cap` bytes into
 * buf, each handed to sink (may be NULL). `expect` is the size it must
 * have (UINT64_MAX: any). *size and *sum (XXH64, seed 0) get what was
 * read. TIDE_ENOENT when it is missing; TIDE_ECORRUPT when its size is not
 * `expect`, or it changed while read ("OID: N bytes, M expected"); the
 * sink's error; rados.h's.
 */
int ti_tool_read_object(tide_archive_tool *t, const char *oid, uint64_t expect, uint8_t *buf,
                        size_t cap, ti_tool_sink sink, void *arg, uint64_t *size, uint64_t *sum);

/* A generation's data chunks as they are in the pool, from chunk 0 on,
 * while each is chunk_bytes long: *chunks of them (the last may be short)
 * holding *bytes. One stat per chunk. */
int ti_tool_extent(tide_archive_tool *t, uint64_t id, uint64_t chunk_bytes, unsigned *chunks,
                   uint64_t *bytes);

/* Every data chunk of generation `id` in the pool, by a walk of the
 * pool's object list: their numbers, ascending, in *chunks (malloc'd; the
 * caller frees it), *n of them. rados.h's errors; TIDE_ENOMEM. */
int ti_tool_list_chunks(tide_archive_tool *t, uint64_t id, unsigned **chunks, unsigned *n);

/* The start of a nudb.dat or nudb.key, decoded by hand (the store's own
 * decoder is its part's): NuDB's type and version 2, then the fields. */
typedef struct ti_tool_header {
    uint64_t uid, appnum, salt;
    unsigned key_size, block_size, load_factor;   /* the last two: nudb.key only */
} ti_tool_header;

#define TI_TOOL_DAT_HEADER 92
#define TI_TOOL_KEY_HEADER 104

/* Decode `len` bytes at the start of `name` (is_key: nudb.key, else
 * nudb.dat). TIDE_ECORRUPT or TIDE_ENOTSTORE naming `name` and the
 * offset. */
int ti_tool_header_decode(const uint8_t *p, size_t len, int is_key, const char *name,
                          ti_tool_header *h);

/* The sealed generation `id` of the session's catalog, or NULL. */
const tide_archive_gen *ti_tool_sealed(const tide_archive_tool *t, uint64_t id);

#endif
