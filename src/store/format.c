/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * format.c: NuDB version 2 headers, hashes and buckets, to and from bytes.
 *
 * This file is the only place that knows the byte layout of the three files
 * (docs/FORMAT.md). Everything here is a pure function of its arguments:
 * no I/O, no allocation, no global state.
 *
 * Invariants:
 *   1. decode(encode(h)) == h for every header whose fields are in range.
 *   2. A decoder accepts only what NuDB itself would write: the right type,
 *      version 2, key_size >= 1, block_size >= 104 (the key header must fit
 *      in block 0). Every rejection names the file and the field's offset.
 *   3. Encoded buckets are zero after their last entry, so a key-file block
 *      and a spill/log payload differ only in how many bytes are written.
 *   4. Every field is read and written with word loads and stores of its
 *      own bytes only (format.h): no accessor touches a byte outside the
 *      field, so a field that ends a buffer is safe to read.
 *   5. ti_fmt_bucket_insert gives the image that decoding, merging (new
 *      entries after equal hashes) and encode_bucket would give.
 *   6. The one field Tide writes otherwise than NuDB: a log header with
 *      `deferred` set carries pepper ^ TIDE_LOG_DEFERRED_MARK (format.h),
 *      which NuDB refuses; decode gives back the true pepper and the flag.
 *
 * Never: trust a count or offset read from disk before check_bucket (or the
 *   caller) has bounded it.
 */
#include <string.h>
#include <xxhash.h>

#include "store/format.h"
#include "util/assert.h"
#include "util/err.h"

static const char dat_type[8] = { 'n', 'u', 'd', 'b', '.', 'd', 'a', 't' };
static const char key_type[8] = { 'n', 'u', 'd', 'b', '.', 'k', 'e', 'y' };
static const char log_type[8] = { 'n', 'u', 'd', 'b', '.', 'l', 'o', 'g' };

/* The fields every header starts with: type, version, uid, appnum, key_size. */
static void encode_common(uint8_t *out, const char type[8], uint16_t version,
                          uint64_t uid, uint64_t appnum, uint16_t key_size)
{
    memcpy(out, type, 8);
    ti_put16(out + 8, version);
    ti_put64(out + 10, uid);
    ti_put64(out + 18, appnum);
    ti_put16(out + 26, key_size);
}

static int decode_common(const uint8_t *in, const char type[8], const char *name,
                         uint16_t *version, uint64_t *uid, uint64_t *appnum,
                         uint16_t *key_size)
{
    if (memcmp(in, type, 8) != 0)
        return tide_err_set(TIDE_ENOTSTORE, "%s: offset 0: type is not '%.8s' (not a NuDB file)",
                            name, type);
    *version = (uint16_t)ti_get16(in + 8);
    if (*version != TIDE_FMT_VERSION)
        return tide_err_set(TIDE_EVERSION, "%s: offset 8: version %u is not supported (only %d)",
                            name, *version, TIDE_FMT_VERSION);
    *uid = ti_get64(in + 10);
    *appnum = ti_get64(in + 18);
    *key_size = (uint16_t)ti_get16(in + 26);
    if (*key_size == 0)
        return tide_err_set(TIDE_ECORRUPT, "%s: offset 26: key size 0", name);
    return 0;
}

/* Salt, pepper and block size: offsets 28, 36 and 44 of the key and log
 * headers alike. */
static void encode_salted(uint8_t *out, uint64_t salt, uint64_t pepper, uint16_t block_size)
{
    ti_put64(out + 28, salt);
    ti_put64(out + 36, pepper);
    ti_put16(out + 44, block_size);
}

static int decode_salted(const uint8_t *in, const char *name, uint64_t *salt, uint64_t *pepper,
                         uint16_t *block_size)
{
    *salt = ti_get64(in + 28);
    *pepper = ti_get64(in + 36);
    *block_size = (uint16_t)ti_get16(in + 44);
    if (*block_size < TIDE_KEY_HEADER_SIZE)
        return tide_err_set(TIDE_ECORRUPT, "%s: offset 44: block size %u is below %d",
                            name, *block_size, TIDE_KEY_HEADER_SIZE);
    return 0;
}

void ti_fmt_encode_dat_header(uint8_t out[TIDE_DAT_HEADER_SIZE], const tide_dat_header *h)
{
    memset(out, 0, TIDE_DAT_HEADER_SIZE);
    encode_common(out, dat_type, h->version, h->uid, h->appnum, h->key_size);
}

int ti_fmt_decode_dat_header(const uint8_t in[TIDE_DAT_HEADER_SIZE], tide_dat_header *h,
                               const char *name)
{
    return decode_common(in, dat_type, name, &h->version, &h->uid, &h->appnum, &h->key_size);
}

void ti_fmt_encode_key_header(uint8_t out[TIDE_KEY_HEADER_SIZE], const tide_key_header *h)
{
    memset(out, 0, TIDE_KEY_HEADER_SIZE);
    encode_common(out, key_type, h->version, h->uid, h->appnum, h->key_size);
    encode_salted(out, h->salt, h->pepper, h->block_size);
    ti_put16(out + 46, h->load_factor);
}

int ti_fmt_decode_key_header(const uint8_t in[TIDE_KEY_HEADER_SIZE], tide_key_header *h,
                               const char *name)
{
    int rc = decode_common(in, key_type, name, &h->version, &h->uid, &h->appnum, &h->key_size);
    if (rc) return rc;
    h->load_factor = (uint16_t)ti_get16(in + 46);
    if ((rc = decode_salted(in, name, &h->salt, &h->pepper, &h->block_size)) != 0) return rc;
    if (h->load_factor == 0)
        return tide_err_set(TIDE_ECORRUPT, "%s: offset 46: load factor 0", name);
    if (h->pepper != ti_fmt_pepper(h->salt))
        return tide_err_set(TIDE_EHASH,
                            "%s: offset 36: pepper %016llx does not match XXH64 of salt %016llx "
                            "(written with another hash function)",
                            name, (unsigned long long)h->pepper, (unsigned long long)h->salt);
    return 0;
}

int ti_fmt_check_key_dat(const tide_key_header *kh, const tide_dat_header *dh,
                         const char *key_name)
{
    if (dh->uid != kh->uid)
        return tide_err_set(TIDE_EMISMATCH, "%s: offset 10: uid %016llx differs from nudb.dat's %016llx",
                            key_name, (unsigned long long)kh->uid, (unsigned long long)dh->uid);
    if (dh->appnum != kh->appnum)
        return tide_err_set(TIDE_EMISMATCH, "%s: offset 18: appnum %llu differs from nudb.dat's %llu",
                            key_name, (unsigned long long)kh->appnum, (unsigned long long)dh->appnum);
    if (dh->key_size != kh->key_size)
        return tide_err_set(TIDE_EMISMATCH, "%s: offset 26: key size %u differs from nudb.dat's %u",
                            key_name, kh->key_size, dh->key_size);
    return 0;
}

void ti_fmt_encode_log_header(uint8_t out[TIDE_LOG_HEADER_SIZE], const tide_log_header *h)
{
    memset(out, 0, TIDE_LOG_HEADER_SIZE);
    encode_common(out, log_type, h->version, h->uid, h->appnum, h->key_size);
    encode_salted(out, h->salt, h->deferred ? h->pepper ^ TIDE_LOG_DEFERRED_MARK : h->pepper,
                  h->block_size);
    ti_put64(out + 46, h->key_file_size);
    ti_put64(out + 54, h->dat_file_size);
}

int ti_fmt_decode_log_header(const uint8_t in[TIDE_LOG_HEADER_SIZE], tide_log_header *h,
                               const char *name)
{
    int rc = decode_common(in, log_type, name, &h->version, &h->uid, &h->appnum, &h->key_size);
    if (rc) return rc;
    h->key_file_size = ti_get64(in + 46);
    h->dat_file_size = ti_get64(in + 54);
    h->deferred = 0;
    if ((rc = decode_salted(in, name, &h->salt, &h->pepper, &h->block_size)) != 0) return rc;
    if (h->pepper != ti_fmt_pepper(h->salt) &&
        (h->pepper ^ TIDE_LOG_DEFERRED_MARK) == ti_fmt_pepper(h->salt)) {
        h->deferred = 1;
        h->pepper ^= TIDE_LOG_DEFERRED_MARK;
    }
    return 0;
}

uint64_t ti_fmt_hash64(const void *key, size_t key_size, uint64_t salt)
{
    return XXH64(key, key_size, salt);
}

uint64_t ti_fmt_pepper(uint64_t salt)
{
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(salt >> (8 * i));
    return XXH64(le, sizeof le, salt);
}

size_t ti_fmt_encode_bucket(uint8_t *out, size_t cap_bytes, const tide_entry *e,
                              unsigned count, uint64_t spill)
{
    size_t used = ti_fmt_bucket_bytes(count);
    ti_put16(out, count);
    ti_put48(out + 2, spill);
    for (unsigned i = 0; i < count; i++) ti_fmt_entry_encode(ti_fmt_entry_at(out, i), &e[i]);
    if (cap_bytes > used) memset(out + used, 0, cap_bytes - used);
    return used;
}

void ti_fmt_bucket_insert(uint8_t *b, const tide_entry *e, unsigned m)
{
    unsigned count = ti_fmt_bucket_count(b), top = count;

    TIDE_ASSERT(m <= 0xffffu - count);
    /* From the largest new entry down: entries [pos, top) of the old image
     * shift up by k + 1 slots, then e[k] lands just below them. The image
     * below pos is still the old one, so the next search runs on it. */
    for (unsigned k = m; k-- > 0;) {
        unsigned pos = e[k].hash < TIDE_FIELD48_MAX
                       ? ti_fmt_bucket_lower_bound(b, top, e[k].hash + 1) : top;
        if (pos < top)
            memmove(ti_fmt_entry_at(b, pos + k + 1), ti_fmt_entry_at(b, pos),
                    (size_t)TIDE_ENTRY_SIZE * (top - pos));
        ti_fmt_entry_encode(ti_fmt_entry_at(b, pos + k), &e[k]);
        top = pos;
    }
    ti_put16(b, count + m);
}

int ti_fmt_check_bucket(const uint8_t *b, unsigned capacity, uint64_t dat_size,
                          unsigned key_size, const char *where)
{
    unsigned count = ti_fmt_bucket_count(b);
    uint64_t spill = ti_fmt_bucket_spill(b);
    uint64_t prev = 0;

    if (count > capacity)
        return tide_err_set(TIDE_ECORRUPT, "%s: count %u exceeds capacity %u", where, count, capacity);
    if (spill != 0 && (spill < TIDE_DAT_HEADER_SIZE + TIDE_SPILL_HEADER ||
                       spill + TIDE_BUCKET_HEADER_SIZE > dat_size))
        return tide_err_set(TIDE_ECORRUPT, "%s: spill pointer %llu is outside nudb.dat (%llu bytes)",
                            where, (unsigned long long)spill, (unsigned long long)dat_size);
    for (unsigned i = 0; i < count; i++) {
        tide_entry e;
        ti_fmt_bucket_entry(b, i, &e);
        if (e.hash < prev)
            return tide_err_set(TIDE_ECORRUPT, "%s: entry %u is out of hash order", where, i);
        prev = e.hash;
        if (e.size == 0 || e.offset < TIDE_DAT_HEADER_SIZE ||
            e.offset + TIDE_DAT_RECORD_HEADER + key_size + e.size > dat_size)
            return tide_err_set(TIDE_ECORRUPT,
                                "%s: entry %u (offset %llu, size %llu) is outside nudb.dat (%llu bytes)",
                                where, i, (unsigned long long)e.offset,
                                (unsigned long long)e.size, (unsigned long long)dat_size);
    }
    return 0;
}

static uint64_t entry_hash(const uint8_t *b, unsigned i)
{
    return ti_get48(b + TIDE_BUCKET_HEADER_SIZE + (size_t)TIDE_ENTRY_SIZE * i + 12);
}

unsigned ti_fmt_bucket_seek(const uint8_t *b, unsigned count, uint64_t h)
{
    unsigned guess, lo, hi, step = 1;

    if (count == 0) return 0;
    /* h < 2^48 and count < 2^16: the product fits in 64 bits. */
    guess = (unsigned)(((h & TIDE_FIELD48_MAX) * count) >> 48);
    if (guess >= count) guess = count - 1;
    if (entry_hash(b, guess) < h) {
        /* The answer is in (guess, count]: gallop up. */
        lo = guess + 1;
        hi = lo;
        while (hi < count && entry_hash(b, hi) < h) {
            lo = hi + 1;
            hi = count - hi > step ? hi + step : count;
            step *= 2;
        }
    } else {
        /* The answer is in [0, guess]: gallop down. */
        hi = guess;
        lo = hi;
        while (lo > 0 && entry_hash(b, lo - 1) >= h) {
            hi = lo - 1;
            lo = lo - 1 > step ? lo - 1 - step : 0;
            step *= 2;
        }
    }
    /* entries [0, lo) are < h and [hi, count) >= h: binary search between. */
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (entry_hash(b, mid) < h) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

unsigned ti_fmt_bucket_lower_bound(const uint8_t *b, unsigned count, uint64_t h)
{
    unsigned lo = 0, hi = count;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (ti_fmt_bucket_hash(b, mid) < h) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}
