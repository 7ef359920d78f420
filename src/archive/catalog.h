/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * catalog.h: the archive's manifest, PREFIX.manifest, as a catalog in
 * memory: which generations of a node the archive holds, whether each is
 * still being uploaded (open) or complete (sealed), and the size and
 * checksum of every object of a sealed one.
 *
 * The objects of a prefix in the pool (docs/ARCHIVE.md, "Objects"):
 *
 *     PREFIX.manifest                      this catalog, as JSON
 *     PREFIX.gen-000000000007.dat.000000   nudb.dat's bytes [0, C) of generation 7,
 *     PREFIX.gen-000000000007.dat.000001   then [C, 2C), ... (C: its chunk_bytes)
 *     PREFIX.gen-000000000007.key.000000   nudb.key, the same way, once sealed
 *     PREFIX.gen-000000000007.filter       a Bloom filter of its keys (filter.h)
 *
 * A generation's data file is cut into chunks of a fixed size so that no
 * object passes RADOS' limit on an object's size (osd_max_object_size,
 * 128 MiB by default) and a read of a record is a ranged read of one
 * object (two when it spans a boundary). Chunk n holds the file's bytes
 * [n C, (n+1) C): the archive's file is the concatenation, byte for byte.
 *
 * The JSON (one object; unknown members are ignored, so a newer writer's
 * additions do not stop an older reader):
 *   {"tide_archive": 1, "prefix": "node1", "keep": 2, "writer": "host pid 123",
 *    "updated_unix_us": ..., "generations": [ newest first:
 *      {"id": 7, "state": "open", "uid": ..., "salt": ..., "key_size": 32,
 *       "block_size": 4096, "chunk_bytes": 67108864},
 *      {"id": 6, "state": "sealed", ..., "dat_bytes": ..., "key_bytes": ...,
 *       "records": ..., "dat_xxh64": ["hex16", ...], "key_xxh64": [...],
 *       "filter_bytes": ..., "filter_xxh64": "hex16", "sealed_unix_us": ...} ]}
 * 64-bit numbers (uid, salt, checksums) are hex strings: JSON's numbers
 * are doubles to most readers.
 *
 * Thread safety: a catalog is a value; the caller serialises access.
 */
#ifndef TIDE_ARCHIVE_CATALOG_H
#define TIDE_ARCHIVE_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#define TIDE_ARCHIVE_PREFIX_MAX 64          /* bytes of a prefix, without the NUL */
#define TIDE_ARCHIVE_OID_CAP    128         /* an object name's buffer */
#define TIDE_ARCHIVE_MANIFEST_CAP (64u << 20) /* the largest manifest read */
#define TIDE_ARCHIVE_CHUNK_MIN  (64u << 10)
#define TIDE_ARCHIVE_CHUNK_MAX  (128u << 20) /* RADOS' default object size limit */
#define TIDE_ARCHIVE_CHUNK_DEFAULT (64u << 20)

typedef enum tide_archive_state {
    TIDE_ARCHIVE_OPEN     = 0,  /* its data file is being uploaded */
    TIDE_ARCHIVE_SEALED   = 1,  /* complete: every object there, sizes and sums known */
    TIDE_ARCHIVE_DELETING = 2,  /* retention is removing its objects; read by nobody */
} tide_archive_state;

typedef struct tide_archive_gen {
    uint64_t id;
    tide_archive_state state;
    uint64_t uid, salt;               /* nudb.key's header: which store this is */
    unsigned key_size, block_size;
    uint64_t chunk_bytes;             /* C, fixed for the generation's life */
    /* Sealed only: */
    uint64_t dat_bytes, key_bytes, records;
    uint64_t *dat_sums;               /* XXH64 (seed 0) of each chunk, malloc'd */
    uint64_t *key_sums;
    unsigned dat_chunks, key_chunks;  /* ceil(bytes / chunk_bytes) */
    uint64_t filter_bytes, filter_sum;/* 0 bytes: no filter object */
    uint64_t sealed_unix_us;
} tide_archive_gen;

typedef struct tide_archive_catalog {
    char     prefix[TIDE_ARCHIVE_PREFIX_MAX + 1];
    unsigned keep;                    /* the writing node's G, for restore (0: unknown) */
    char     writer[128];             /* "HOST pid N" of the last writer, for messages */
    uint64_t updated_unix_us;
    tide_archive_gen *gens;           /* newest first */
    unsigned count, cap;
} tide_archive_catalog;

/* 1 when `p` is a usable prefix: 1 to TIDE_ARCHIVE_PREFIX_MAX bytes of
 * [A-Za-z0-9_-], not starting with '-' (object names stay plain words). */
int tide_archive_prefix_valid(const char *p);

/* The default prefix, tided's and the tools' alike: this machine's host
 * name up to its first dot, each byte outside the prefix's alphabet made
 * '_' (a leading '-' too), cut to TIDE_ARCHIVE_PREFIX_MAX. 0, or
 * TIDE_EINVAL when that gives no valid prefix (the message says to give
 * one). One gethostname call. */
int tide_archive_default_prefix(char *buf, size_t cap);

/* Object names (buffers of TIDE_ARCHIVE_OID_CAP). */
void tide_archive_oid_manifest(char *buf, const char *prefix);
void tide_archive_oid_dat(char *buf, const char *prefix, uint64_t id, unsigned chunk);
void tide_archive_oid_key(char *buf, const char *prefix, uint64_t id, unsigned chunk);
void tide_archive_oid_filter(char *buf, const char *prefix, uint64_t id);

/* The number of chunks of C bytes that hold `bytes`. */
unsigned tide_archive_chunks(uint64_t bytes, uint64_t chunk_bytes);

const char *tide_archive_state_name(tide_archive_state s);

/* An empty catalog for `prefix`. */
void tide_archive_catalog_init(tide_archive_catalog *c, const char *prefix);

/* Free what the catalog owns; it is left empty (init state, prefix kept). */
void tide_archive_catalog_clear(tide_archive_catalog *c);

/* The entry of generation `id`, or NULL. Cost: a scan of count entries. */
tide_archive_gen *tide_archive_catalog_find(const tide_archive_catalog *c, uint64_t id);

/* Add an entry (a copy of *g, owning its arrays from now on: the caller
 * must not free g's sums), keeping newest first. TIDE_EEXIST when the id
 * is there; TIDE_ENOMEM. */
int tide_archive_catalog_add(tide_archive_catalog *c, const tide_archive_gen *g);

/* Remove generation `id`'s entry (freeing its arrays); 0 or TIDE_ENOENT. */
int tide_archive_catalog_remove(tide_archive_catalog *c, uint64_t id);

/* Deep copy src into *dst (which must be cleared or initialised). */
int tide_archive_catalog_copy(tide_archive_catalog *dst, const tide_archive_catalog *src);

/* The JSON text of the catalog: *out malloc'd, NUL-terminated, *len bytes
 * without the NUL. TIDE_ENOMEM. */
int tide_archive_catalog_encode(const tide_archive_catalog *c, char **out, size_t *len);

/* Parse `len` bytes of JSON into *c (initialised here; cleared on error).
 * TIDE_ECORRUPT with "NAME: what is wrong, where" when the text is not a
 * catalog of this format (a member missing or of the wrong type, a
 * sealed generation whose sums do not number its chunks, ids out of
 * order, a prefix that differs from `prefix` when that is not NULL);
 * TIDE_EVERSION for a format newer than 1; TIDE_ENOMEM. */
int tide_archive_catalog_decode(const char *text, size_t len, const char *name,
                                const char *prefix, tide_archive_catalog *c);

#endif
