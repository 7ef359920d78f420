/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * filter.c: the Bloom filter of an archived generation's keys (filter.h).
 *
 * Layout: one allocation per filter, the object's header followed by the
 * bit array, so the object's bytes are the filter's memory and an upload
 * or a load copies nothing else.
 *
 * Probes: double hashing over the 64-bit hash, h1 + i h2 mod bits with h2
 * the hash rotated by 32 and made odd, the usual way to get k positions
 * from one hash at no loss that matters (Kirsch and Mitzenmacher).
 *
 * Invariants:
 *   1. bits is a non-zero multiple of 64, and 1 <= probes <= 32.
 *   2. The bytes counted under the account are exactly those allocated,
 *      added at creation and taken away at free.
 *
 * Never: say "absent" for a key that was added.
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "archive/filter.h"
#include "mem/account.h"
#include "store/format.h"
#include "util/assert.h"
#include "util/err.h"

struct tide_archive_filter {
    uint64_t bits;
    unsigned probes;
    uint64_t keys;
    int      account;
    size_t   bytes;          /* header + bit array */
    uint8_t *image;          /* the object's bytes; the bit array at +32 */
};

uint64_t tide_archive_filter_hash(const void *key, size_t len)
{
    return XXH3_64bits(key, len);
}

static int make(tide_archive_filter **out, uint64_t bits, unsigned probes, int account)
{
    tide_archive_filter *f = calloc(1, sizeof *f);

    *out = NULL;
    if (f == NULL) return tide_err_set(TIDE_ENOMEM, "archive filter: out of memory");
    f->bits = bits;
    f->probes = probes;
    f->account = account;
    f->bytes = TIDE_ARCHIVE_FILTER_HEADER + bits / 8;
    if ((f->image = calloc(1, f->bytes)) == NULL) {
        size_t bytes = f->bytes;
        free(f);
        return tide_err_set(TIDE_ENOMEM, "archive filter: out of memory for %zu bytes", bytes);
    }
    if (account >= 0) tide_mem_account_alloc(account, (int64_t)(f->bytes + sizeof *f));
    *out = f;
    return 0;
}

int tide_archive_filter_new(tide_archive_filter **out, uint64_t keys, unsigned bits_per_key,
                            int account)
{
    uint64_t bits;
    unsigned probes;

    if (bits_per_key < 1 || bits_per_key > 32)
        return tide_err_set(TIDE_EINVAL, "archive filter: %u bits per key: expected 1 to 32",
                            bits_per_key);
    bits = (keys ? keys : 1) * bits_per_key;
    bits = (bits + 63) / 64 * 64;                       /* invariant 1 */
    probes = (unsigned)(bits_per_key * 0.693 + 0.5);
    if (probes < 1) probes = 1;
    return make(out, bits, probes, account);
}

void tide_archive_filter_free(tide_archive_filter *f)
{
    if (f == NULL) return;
    if (f->account >= 0) tide_mem_account_free(f->account, (int64_t)(f->bytes + sizeof *f));
    free(f->image);
    free(f);
}

void tide_archive_filter_add(tide_archive_filter *f, uint64_t hash)
{
    uint8_t *bits = f->image + TIDE_ARCHIVE_FILTER_HEADER;
    uint64_t h2 = ((hash << 32) | (hash >> 32)) | 1;

    for (unsigned i = 0; i < f->probes; i++) {
        uint64_t bit = (hash + i * h2) % f->bits;
        bits[bit >> 3] |= (uint8_t)(1u << (bit & 7));
    }
    f->keys++;
}

int tide_archive_filter_may_hold(const tide_archive_filter *f, uint64_t hash)
{
    const uint8_t *bits = f->image + TIDE_ARCHIVE_FILTER_HEADER;
    uint64_t h2 = ((hash << 32) | (hash >> 32)) | 1;

    for (unsigned i = 0; i < f->probes; i++) {
        uint64_t bit = (hash + i * h2) % f->bits;
        if (!(bits[bit >> 3] & (1u << (bit & 7)))) return 0;
    }
    return 1;
}

size_t tide_archive_filter_bytes(const tide_archive_filter *f)
{
    return f->bytes + sizeof *f;
}

const uint8_t *tide_archive_filter_image(tide_archive_filter *f, size_t *len)
{
    memcpy(f->image, "TIDEBLM1", 8);
    ti_put64(f->image + 8, f->bits);
    ti_store32(f->image + 16, f->probes);
    ti_store32(f->image + 20, 0);
    ti_put64(f->image + 24, f->keys);
    *len = f->bytes;
    return f->image;
}

int tide_archive_filter_load(tide_archive_filter **out, const void *bytes, size_t len,
                             const char *name, int account)
{
    const uint8_t *p = bytes;
    uint64_t bits;
    unsigned probes;
    int rc;

    *out = NULL;
    if (len < TIDE_ARCHIVE_FILTER_HEADER || memcmp(p, "TIDEBLM1", 8) != 0)
        return tide_err_set(TIDE_ECORRUPT, "%s: not a Tide filter (no TIDEBLM1 header)", name);
    bits = ti_get64(p + 8);
    probes = ti_load32(p + 16);
    if (bits == 0 || bits % 64 || probes < 1 || probes > 32 ||
        len != TIDE_ARCHIVE_FILTER_HEADER + bits / 8)
        return tide_err_set(TIDE_ECORRUPT, "%s: a filter header of %llu bits and %u probes does not "
                            "fit its %zu bytes", name, (unsigned long long)bits, probes, len);
    if ((rc = make(out, bits, probes, account)) != 0) return rc;
    memcpy((*out)->image, p, len);
    (*out)->keys = ti_get64(p + 24);
    TIDE_ASSERT((*out)->bytes == len);
    return 0;
}
