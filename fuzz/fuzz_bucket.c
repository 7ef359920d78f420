/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_bucket.c: bucket images from arbitrary bytes, checked and searched.
 *
 * What it feeds. The input is a small parameter block followed by a bucket
 * image:
 *
 *     u16 block_size   capacity = (block_size - 8) / 18 (0 below 26 bytes)
 *     u64 dat_size     the data file size the bucket is checked against
 *     u16 key_size
 *     u48 probe        a hash to search for
 *     u48 buckets      (+1) a table size for ti_fmt_bucket_index
 *     ...              the image: count, spill, entries
 *
 * The image is copied into a heap buffer of exactly 8 + 18 * capacity bytes
 * (a full bucket: the least a caller hands over, as for a spill record),
 * zero-filled when the input is shorter, so AddressSanitizer reports a
 * read past the last entry the capacity allows.
 *
 * What it asserts.
 *   1. ti_fmt_check_bucket returns 0 or TIDE_ECORRUPT, and a rejection's
 *      message starts with the `where` it was given. It never reads past
 *      the buffer, whatever count the image claims.
 *   2. Sound: a bucket it accepts has count <= capacity, entries sorted by
 *      hash, every entry of at least one value byte inside [92, dat_size),
 *      and a spill pointer that is 0 or past the first possible spill
 *      record and inside the file.
 *   3. Complete: a bucket NuDB could have written (the conditions above,
 *      with the whole spill record inside the file) is accepted.
 *   4. ti_fmt_bucket_lower_bound on an accepted bucket returns the first
 *      entry whose hash is >= h, for the probe and for every entry's hash
 *      and its successor; on any image with the count cut to the capacity
 *      it returns an index <= count without reading past the buffer.
 *   5. Re-encoding an accepted bucket's entries (ti_fmt_encode_bucket into
 *      a block-sized buffer) gives the image's bytes back, zeros after.
 *   6. ti_fmt_bucket_index(h, buckets) < buckets and agrees with the
 *      linear-hashing rule (h mod 2^k, or mod 2^(k-1) when that is past
 *      the end).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "store/format.h"
#include "tide/error.h"

/* As many zeros as the largest block (block_size is a u16). */
static const uint8_t zeros[65536];
#include "util/err.h"

static const char *WHERE = "fuzz/nudb.key: bucket 7 (offset 4096)";

/* Property 4 for one hash on an accepted bucket. */
static int check_lower_bound(const uint8_t *b, unsigned count, uint64_t h, fuzz_result *res)
{
    unsigned r = ti_fmt_bucket_lower_bound(b, count, h);
    tide_entry e;

    FUZZ_CHECK(r <= count, "lower_bound(%012llx) = %u past count %u", (unsigned long long)h, r,
               count);
    if (r > 0) {
        ti_fmt_bucket_entry(b, r - 1, &e);
        FUZZ_CHECK(e.hash < h, "lower_bound(%012llx) = %u, but entry %u has hash %012llx >= it",
                   (unsigned long long)h, r, r - 1, (unsigned long long)e.hash);
    }
    if (r < count) {
        ti_fmt_bucket_entry(b, r, &e);
        FUZZ_CHECK(e.hash >= h, "lower_bound(%012llx) = %u, but that entry's hash %012llx is below it",
                   (unsigned long long)h, r, (unsigned long long)e.hash);
    }
    return 0;
out:
    return -1;
}

/* Property 6. */
static int check_bucket_index(uint64_t h, uint64_t buckets, fuzz_result *res)
{
    uint64_t n = ti_fmt_bucket_index(h, buckets);
    uint64_t m = ti_fmt_ceil_pow2(buckets);
    uint64_t want = h % m;

    if (want >= buckets) want = h % (m / 2);
    FUZZ_CHECK(n < buckets, "bucket_index(%012llx, %llu) = %llu, not below the bucket count",
               (unsigned long long)h, (unsigned long long)buckets, (unsigned long long)n);
    FUZZ_CHECK(n == want, "bucket_index(%012llx, %llu) = %llu, linear hashing says %llu",
               (unsigned long long)h, (unsigned long long)buckets, (unsigned long long)n,
               (unsigned long long)want);
    return 0;
out:
    return -1;
}

int fuzz_bucket_one(const uint8_t *data, size_t size, fuzz_result *res)
{
    fuzz_in in = { data, size };
    unsigned block_size = (unsigned)fuzz_be(&in, 2);
    uint64_t dat_size = fuzz_be(&in, 8);
    unsigned key_size = (unsigned)fuzz_be(&in, 2);
    uint64_t probe = fuzz_be(&in, 6);
    uint64_t buckets = fuzz_be(&in, 6) + 1;
    unsigned cap = ti_fmt_capacity(block_size);
    size_t full = ti_fmt_bucket_bytes(cap);
    const uint8_t *img;
    size_t img_len = fuzz_take(&in, full, &img);
    uint8_t *b = malloc(full), *re = NULL;
    tide_entry *es = NULL;
    unsigned count;
    uint64_t spill;
    int rc, sorted = 1, inside = 1, ret = -1;

    FUZZ_CHECK(b != NULL, "out of memory");
    memset(b, 0, full);
    memcpy(b, img, img_len);
    count = ti_fmt_bucket_count(b);
    spill = ti_fmt_bucket_spill(b);

    if (check_bucket_index(probe, buckets, res)) goto out;

    /* The facts, from the image itself (entries only up to the capacity). */
    {
        uint64_t prev = 0;
        unsigned n = count <= cap ? count : cap;
        for (unsigned i = 0; i < n; i++) {
            tide_entry e;
            ti_fmt_bucket_entry(b, i, &e);
            if (e.hash < prev) sorted = 0;
            prev = e.hash;
            if (e.size == 0 || e.offset < TIDE_DAT_HEADER_SIZE ||
                e.offset + TIDE_DAT_RECORD_HEADER + key_size + e.size > dat_size)
                inside = 0;
        }
        /* Property 4, second half: any image, count cut to the capacity. */
        FUZZ_CHECK(ti_fmt_bucket_lower_bound(b, n, probe) <= n,
                   "lower_bound on an unchecked bucket of %u entries went past them", n);
    }

    tide_err_clear();
    rc = ti_fmt_check_bucket(b, cap, dat_size, key_size, WHERE);
    FUZZ_CHECK(rc == 0 || rc == TIDE_ECORRUPT, "check_bucket returned %d (%s)", rc,
               tide_strerror(rc));
    if (rc != 0) {
        const char *msg = tide_last_error();
        FUZZ_CHECK(strncmp(msg, WHERE, strlen(WHERE)) == 0,
                   "check_bucket's message '%s' does not start with '%s'", msg, WHERE);
        /* Property 3: what NuDB could have written is never refused. */
        FUZZ_CHECK(!(count <= cap && sorted && inside &&
                     (spill == 0 || (spill >= TIDE_DAT_HEADER_SIZE + TIDE_SPILL_HEADER &&
                                     spill + full <= dat_size))),
                   "check_bucket refused a well-formed bucket (count %u of %u, spill %llu, "
                   "nudb.dat %llu bytes, key size %u): %s", count, cap,
                   (unsigned long long)spill, (unsigned long long)dat_size, key_size, msg);
        ret = 0;
        goto out;
    }

    /* Property 2. */
    FUZZ_CHECK(count <= cap, "check_bucket accepted count %u over capacity %u", count, cap);
    FUZZ_CHECK(sorted, "check_bucket accepted entries out of hash order");
    FUZZ_CHECK(inside, "check_bucket accepted an entry outside nudb.dat (%llu bytes, key size %u)",
               (unsigned long long)dat_size, key_size);
    FUZZ_CHECK(spill == 0 || (spill >= TIDE_DAT_HEADER_SIZE + TIDE_SPILL_HEADER && spill < dat_size),
               "check_bucket accepted spill pointer %llu for a %llu-byte nudb.dat",
               (unsigned long long)spill, (unsigned long long)dat_size);

    /* Property 4. */
    if (check_lower_bound(b, count, probe, res)) goto out;
    for (unsigned i = 0; i < count; i++) {
        tide_entry e;
        ti_fmt_bucket_entry(b, i, &e);
        if (check_lower_bound(b, count, e.hash, res)) goto out;
        if (check_lower_bound(b, count, e.hash + 1, res)) goto out;
    }

    /* Property 5: a block-sized buffer, as the key file holds. */
    {
        size_t bs = block_size > full ? block_size : full;
        es = malloc((count ? count : 1) * sizeof *es);
        re = malloc(bs);
        FUZZ_CHECK(es && re, "out of memory");
        for (unsigned i = 0; i < count; i++) ti_fmt_bucket_entry(b, i, &es[i]);
        memset(re, 0xA5, bs);
        size_t used = ti_fmt_encode_bucket(re, bs, es, count, spill);
        FUZZ_CHECK(used == ti_fmt_bucket_bytes(count), "encode_bucket returned %zu for %u entries",
                   used, count);
        /* Compared with memcmp, and byte by byte only to name the first
         * difference: a loop over every byte of a block made most of an
         * execution (each comparison is a coverage callback). */
        if (memcmp(re, b, used) != 0 || memcmp(re + used, zeros, bs - used) != 0) {
            size_t i = 0;
            while (i < bs && re[i] == (i < used ? b[i] : 0)) i++;
            FUZZ_CHECK(0, "encode(decode(bucket)) byte %zu is 0x%02x, expected 0x%02x", i, re[i],
                       i < used ? b[i] : 0);
        }
    }
    ret = 0;
out:
    free(b);
    free(re);
    free(es);
    return ret;
}
