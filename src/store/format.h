/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * format.h: NuDB version 2 on-disk structures, encoded and decoded.
 *
 * Pure functions over byte buffers: no I/O, no allocation, thread-safe.
 * All integers on disk are big-endian; u48 is six bytes. The layouts are
 * those of ../shared/spec/nudb-format.md (docs/FORMAT.md in this tree).
 */
#ifndef TIDE_FORMAT_H
#define TIDE_FORMAT_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TIDE_FMT_VERSION        2
#define TIDE_DAT_HEADER_SIZE    92
#define TIDE_KEY_HEADER_SIZE    104
#define TIDE_LOG_HEADER_SIZE    62
#define TIDE_BUCKET_HEADER_SIZE 8
#define TIDE_ENTRY_SIZE         18
#define TIDE_FIELD48_MAX        0xffffffffffffull
#define TIDE_DAT_RECORD_HEADER  6   /* u48 size */
#define TIDE_SPILL_HEADER       8   /* u48 0 + u16 n */

/* ---- big-endian fields ----
 *
 * Word loads and stores: memcpy of 2, 4 or 8 bytes (the compiler makes one
 * unaligned move of each) and a byte swap. Every accessor touches exactly
 * the field's own bytes, so none reads or writes past a buffer's end: a
 * u48 is a u32 and a u16, never an 8-byte load that runs two bytes over.
 * Values wider than the field are cut to its low bits, as a byte-at-a-time
 * store would. */
static inline uint16_t ti_load16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return be16toh(v); }
static inline uint32_t ti_load32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return be32toh(v); }
static inline uint64_t ti_load64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return be64toh(v); }
static inline void ti_store16(uint8_t *p, uint16_t v) { v = htobe16(v); memcpy(p, &v, 2); }
static inline void ti_store32(uint8_t *p, uint32_t v) { v = htobe32(v); memcpy(p, &v, 4); }
static inline void ti_store64(uint8_t *p, uint64_t v) { v = htobe64(v); memcpy(p, &v, 8); }

static inline void ti_put16(uint8_t *p, uint64_t v) { ti_store16(p, (uint16_t)v); }
static inline void ti_put48(uint8_t *p, uint64_t v)
{
    ti_store32(p, (uint32_t)(v >> 16));
    ti_store16(p + 4, (uint16_t)v);
}
static inline void ti_put64(uint8_t *p, uint64_t v) { ti_store64(p, v); }
static inline uint64_t ti_get16(const uint8_t *p) { return ti_load16(p); }
static inline uint64_t ti_get48(const uint8_t *p)
{
    return ((uint64_t)ti_load32(p) << 16) | ti_load16(p + 4);
}
static inline uint64_t ti_get64(const uint8_t *p) { return ti_load64(p); }

/* ---- headers ---- */

typedef struct tide_dat_header {
    uint16_t version;
    uint64_t uid, appnum;
    uint16_t key_size;
} tide_dat_header;

typedef struct tide_key_header {
    uint16_t version;
    uint64_t uid, appnum;
    uint16_t key_size;
    uint64_t salt, pepper;
    uint16_t block_size;
    uint16_t load_factor;   /* in 1/65536 */
} tide_key_header;

typedef struct tide_log_header {
    uint16_t version;
    uint64_t uid, appnum;
    uint16_t key_size;
    uint64_t salt, pepper;
    uint16_t block_size;
    uint64_t key_file_size, dat_file_size;
    int deferred;           /* Tide's deferred index wrote it (below) */
} tide_log_header;

/*
 * The mark of a log the deferred index writes (its idle log, and a flush's
 * log, which begins with the same header): the pepper field (offset 36)
 * holds the pepper XOR this constant ("TIDEIDLE"). NuDB's recovery checks
 * a log's pepper against XXH64 of its salt before it reads or writes
 * anything else, so it refuses such a log ("hash mismatch") and changes no
 * file, where a true pepper would have let it cut nudb.dat to W, losing
 * the acknowledged records [W, C). NuDB never writes the mark: its logs
 * carry the true pepper. Encode applies it when `deferred`; decode sets
 * `deferred` and restores the true pepper when it finds it.
 */
#define TIDE_LOG_DEFERRED_MARK 0x5449444549444c45ull

/* Encoders write exactly the header size (reserved bytes zeroed). */
void ti_fmt_encode_dat_header(uint8_t out[TIDE_DAT_HEADER_SIZE], const tide_dat_header *h);
void ti_fmt_encode_key_header(uint8_t out[TIDE_KEY_HEADER_SIZE], const tide_key_header *h);
void ti_fmt_encode_log_header(uint8_t out[TIDE_LOG_HEADER_SIZE], const tide_log_header *h);

/* Decoders check the type string and version and fill *h. They return 0,
 * TIDE_ENOTSTORE (wrong type), TIDE_EVERSION, or TIDE_ECORRUPT (a field out
 * of range: key_size 0, block_size < 104, ...) with tide_last_error() naming
 * `name` (the file's name for messages) and the field's offset. */
int ti_fmt_decode_dat_header(const uint8_t in[TIDE_DAT_HEADER_SIZE], tide_dat_header *h, const char *name);
int ti_fmt_decode_key_header(const uint8_t in[TIDE_KEY_HEADER_SIZE], tide_key_header *h, const char *name);
int ti_fmt_decode_log_header(const uint8_t in[TIDE_LOG_HEADER_SIZE], tide_log_header *h, const char *name);

/* Do a key file's header and its data file's belong to one store (uid,
 * appnum and key size agree)? 0, or TIDE_EMISMATCH naming `key_name`, the
 * offset of the first field that differs and both values. Pure but for
 * the error message. */
int ti_fmt_check_key_dat(const tide_key_header *kh, const tide_dat_header *dh,
                         const char *key_name);

/* ---- hashing ---- */

/* XXH64(key, key_size, seed = salt). */
uint64_t ti_fmt_hash64(const void *key, size_t key_size, uint64_t salt);
/* The 48-bit hash stored in buckets: hash64 >> 16. */
static inline uint64_t ti_fmt_hash48(const void *key, size_t key_size, uint64_t salt)
{
    return ti_fmt_hash64(key, key_size, salt) >> 16;
}
/* XXH64 of the salt as 8 little-endian bytes, seeded with the salt. */
uint64_t ti_fmt_pepper(uint64_t salt);

/* ---- buckets ---- */

/* Entries per bucket of `block_size` bytes: (block_size - 8) / 18. */
static inline unsigned ti_fmt_capacity(unsigned block_size)
{
    return block_size < 8 + TIDE_ENTRY_SIZE ? 0 : (block_size - 8) / TIDE_ENTRY_SIZE;
}
/* Bytes a bucket of `count` entries occupies in a spill or log record. */
static inline size_t ti_fmt_bucket_bytes(unsigned count)
{
    return TIDE_BUCKET_HEADER_SIZE + (size_t)TIDE_ENTRY_SIZE * count;
}
/* Smallest power of two >= x (x >= 1); 2^63 for any x above it (no
 * loop, so a wild count cannot hang a caller: reader.c checks counts). */
static inline uint64_t ti_fmt_ceil_pow2(uint64_t x)
{
    if (x <= 1) return 1;
    if (x > (1ull << 63)) return 1ull << 63;
    return 1ull << (64 - __builtin_clzll(x - 1));
}
/* The bucket of a 48-bit hash in a table of `buckets` (>= 1) buckets. */
static inline uint64_t ti_fmt_bucket_index(uint64_t h48, uint64_t buckets)
{
    uint64_t modulus = ti_fmt_ceil_pow2(buckets);
    uint64_t n = h48 % modulus;
    if (n >= buckets) n -= modulus / 2;
    return n;
}
/* The load factor field for a fraction: min(65536 * lf, 65535). */
static inline uint16_t ti_fmt_load_factor_raw(double lf)
{
    double v = 65536.0 * lf;
    return v >= 65535.0 ? 65535 : (v <= 0 ? 0 : (uint16_t)v);
}

typedef struct tide_entry {
    uint64_t offset;   /* of the data record (its size field) in nudb.dat */
    uint64_t size;     /* value bytes */
    uint64_t hash;     /* 48 bits */
} tide_entry;

/* Bucket accessors over a buffer of at least 8 + 18 * count bytes. */
static inline unsigned ti_fmt_bucket_count(const uint8_t *b) { return (unsigned)ti_get16(b); }
static inline uint64_t ti_fmt_bucket_spill(const uint8_t *b) { return ti_get48(b + 2); }
/* An entry's 18 bytes are offset, size, hash (u48 each): read as two u64
 * words and a u16, ending exactly at the entry's last byte. */
static inline void ti_fmt_entry_decode(const uint8_t *p, tide_entry *e)
{
    uint64_t a = ti_load64(p), b = ti_load64(p + 8);
    e->offset = a >> 16;
    e->size = ((a & 0xffffu) << 32) | (b >> 32);
    e->hash = ((b & 0xffffffffu) << 16) | ti_load16(p + 16);
}
/* The inverse; each field is cut to its low 48 bits. */
static inline void ti_fmt_entry_encode(uint8_t *p, const tide_entry *e)
{
    uint64_t size = e->size & TIDE_FIELD48_MAX, hash = e->hash & TIDE_FIELD48_MAX;
    ti_store64(p, ((e->offset & TIDE_FIELD48_MAX) << 16) | (size >> 32));
    ti_store64(p + 8, (size << 32) | (hash >> 16));
    ti_store16(p + 16, (uint16_t)hash);
}
static inline uint8_t *ti_fmt_entry_at(uint8_t *b, unsigned i)
{
    return b + TIDE_BUCKET_HEADER_SIZE + (size_t)TIDE_ENTRY_SIZE * i;
}
static inline void ti_fmt_bucket_entry(const uint8_t *b, unsigned i, tide_entry *e)
{
    ti_fmt_entry_decode(b + TIDE_BUCKET_HEADER_SIZE + (size_t)TIDE_ENTRY_SIZE * i, e);
}
/* The 48-bit hash of entry i, without decoding the rest. */
static inline uint64_t ti_fmt_bucket_hash(const uint8_t *b, unsigned i)
{
    return ti_get48(b + TIDE_BUCKET_HEADER_SIZE + (size_t)TIDE_ENTRY_SIZE * i + 12);
}

/* Encode `count` entries (already sorted by hash) and the spill pointer
 * into `out`, which has room for `cap_bytes`; zero-fills the rest of
 * `cap_bytes`. Returns the meaningful size, 8 + 18 * count. */
size_t ti_fmt_encode_bucket(uint8_t *out, size_t cap_bytes, const tide_entry *e,
                              unsigned count, uint64_t spill);

/*
 * Insert entries e[0..m) (sorted by hash) into the bucket image b, in
 * place: each goes after the entries already there with a hash <= its own,
 * and the header's count grows by m; the spill pointer stays. Only the
 * entries above the first insertion point move (one memmove per gap, from
 * the top down), nothing else is decoded. The result is byte for byte what
 * decoding b, merging e after equal hashes and encode_bucket would give.
 * The caller guarantees room for 8 + 18 * (count + m) bytes; bytes past
 * them are untouched. Cost: m binary searches, at most count entries
 * moved once each; pure.
 */
void ti_fmt_bucket_insert(uint8_t *b, const tide_entry *e, unsigned m);

/*
 * Check a bucket image: count <= capacity, entries sorted by hash, every
 * offset and size inside [92, dat_size), spill pointer 0 or inside the data
 * file. Returns 0 or TIDE_ECORRUPT with a message naming `where`.
 */
int ti_fmt_check_bucket(const uint8_t *b, unsigned capacity, uint64_t dat_size,
                          unsigned key_size, const char *where);

/* Index of the first entry with hash >= h in a bucket image (binary search). */
unsigned ti_fmt_bucket_lower_bound(const uint8_t *b, unsigned count, uint64_t h);

/* The same index, found from where h should lie: a bucket's hashes are
 * spread evenly over [0, 2^48) (its index takes only the low bits), so
 * entry h x count / 2^48 is within a few entries of the answer; the search
 * gallops out from there (1, 2, 4, ... entries) and ends with a binary
 * search of the last step. Reads about two cache lines of the bucket where
 * the binary search reads one per probe (log2(count) of them): for a
 * bucket searched in place (a mapped key file), not copied first. Any
 * order of hashes (even, or crafted) gives the right index: O(log count)
 * probes at worst. */
unsigned ti_fmt_bucket_seek(const uint8_t *b, unsigned count, uint64_t h);

#endif
