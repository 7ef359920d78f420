/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * index_check.c: the open's cheap check of the key file against the data
 * file (ti_store_check_index), which catches a key file grown or cut by
 * whole blocks before any fetch is answered from it. Its essay is below,
 * beside the checks.
 *
 * Layout: the placement of one bucket (placed_right); both checks under a
 * given bucket count (index_sound); the check, and when it fails, the
 * search for the count the file would have without its trailing zero
 * blocks, so the message can say what happened.
 *
 * Invariants:
 *   1. Reads only, and needs no lock: the open calls it before a writer's
 *      commit thread starts, or in a READER or IDLE_READER, whose files
 *      nothing changes (never in a LIVE_READER: its writer's files move).
 *   2. A check that passes costs a fixed number of reads (below), however
 *      large the files.
 *
 * Never: call a sound store unsound for a key stored twice in nudb.dat
 *   (a damaged or hand-made file that rekey and verify accept).
 */
#include <stdio.h>
#include <stdlib.h>

#include "store/store_impl.h"
#include "util/err.h"

/*
 * The bucket count is not stored: it is the key file's size. So a key file
 * grown by whole zero blocks, or cut by whole blocks, passes every header
 * check, and then fetches look in the wrong buckets: stored keys read as
 * absent and a second value for them is accepted. ti_store_check_index catches that
 * at open with a few reads, each of a fact every sound store has:
 *
 *   1. Placement. Bucket 0, the last bucket and the bucket the last one was
 *      split from hold only entries whose hash names them under the present
 *      bucket count. A table grown past a power of two misplaces about half
 *      of bucket 0 (its modulus doubled); one grown within it misplaces the
 *      entries of the last bucket's parent that moved to the (zero) child.
 *   2. Reachability. The keys of the first INDEX_SAMPLE data records of
 *      nudb.dat are found through the bucket their hash names (or its spill
 *      chain), as a fetch finds them. This also catches a cut key file,
 *      whose lost buckets held some of them. The entry found may point at
 *      another record of the same key: a nudb.dat holding a key twice (a
 *      damaged or hand-made file; rekey indexes it once, and verify accepts
 *      that) is not a misplaced table, so only a key not found fails.
 *
 * Cost: 3 bucket reads, one read of at most INDEX_WINDOW bytes of nudb.dat,
 * and one bucket read (plus its chain) per sampled record. A store whose
 * key file passes both may still be damaged elsewhere; `tide verify` checks
 * every entry and record.
 */
#define INDEX_SAMPLE 32
#define INDEX_WINDOW (64u << 10)
#define INDEX_ZERO_SCAN 4096       /* trailing blocks examined for "appended zeros" */

/* The placement check of one bucket under `buckets`. 1 sound, 0 not (with
 * *why filled), <0 an I/O error. */
static int placed_right(tide_store *s, uint64_t index, uint64_t buckets, uint8_t *buf,
                        char *why, size_t cap)
{
    char where[96];
    int rc = ti_lookup_read_bucket(s, index, buf);
    if (rc == TIDE_ECORRUPT) {
        snprintf(why, cap, "%s", tide_last_error());
        return 0;
    }
    if (rc) return rc;
    snprintf(where, sizeof where, "bucket %llu", (unsigned long long)index);
    if (ti_fmt_check_bucket(buf, s->capacity, s->dat_size, s->key_size, where) != 0) {
        snprintf(why, cap, "%s", tide_last_error());
        return 0;
    }
    for (unsigned i = 0, n = ti_fmt_bucket_count(buf); i < n; i++) {
        tide_entry e;
        ti_fmt_bucket_entry(buf, i, &e);
        uint64_t home = ti_fmt_bucket_index(e.hash, buckets);
        if (home != index) {
            snprintf(why, cap, "bucket %llu holds entry %u (hash %012llx), which belongs in bucket "
                     "%llu", (unsigned long long)index, i, (unsigned long long)e.hash,
                     (unsigned long long)home);
            return 0;
        }
    }
    return 1;
}

/* Both checks of ti_store_check_index with the table taken to have `buckets`
 * buckets. 1, 0 (why filled), <0. */
static int index_sound(tide_store *s, uint64_t buckets, const uint8_t *win, size_t win_len,
                       uint8_t *buf, char *why, size_t cap)
{
    uint64_t modulus = ti_fmt_ceil_pow2(buckets);
    uint64_t probe[3] = { 0, buckets - 1, buckets >= 2 ? buckets - 1 - modulus / 2 : 0 };
    size_t head = TIDE_DAT_RECORD_HEADER + s->key_size, pos = 0;
    int rc = 1;

    for (int k = 0; k < 3 && rc == 1; k++) {
        if (k > 0 && (probe[k] == probe[0] || probe[k] == probe[k - 1])) continue;
        rc = placed_right(s, probe[k], buckets, buf, why, cap);
    }
    for (unsigned seen = 0; rc == 1 && seen < INDEX_SAMPLE && pos + TIDE_SPILL_HEADER <= win_len; ) {
        uint64_t size = ti_get48(win + pos), off = TIDE_DAT_HEADER_SIZE + pos;
        tide_entry e;
        if (size == 0) {                        /* a spill record: step over it */
            pos += TIDE_SPILL_HEADER + ti_get16(win + pos + 6);
            continue;
        }
        if (pos + head > win_len) break;
        const uint8_t *key = win + pos + TIDE_DAT_RECORD_HEADER;
        uint64_t h = ti_fmt_hash48(key, s->key_size, s->kh.salt);
        uint64_t b = ti_fmt_bucket_index(h, buckets);
        rc = ti_lookup_read_bucket(s, b, buf);
        if (rc == 0) rc = ti_lookup_search_key(s, buf, h, key, &e, NULL);
        if (rc == 0) {
            rc = 1;     /* found: at `off`, or at another record of the same key */
        } else if (rc == 0 || rc == TIDE_ENOTFOUND || rc == TIDE_ECORRUPT) {
            snprintf(why, cap, "the record at nudb.dat offset %llu is not found through bucket %llu, "
                     "where its hash belongs", (unsigned long long)off, (unsigned long long)b);
            rc = 0;
        }
        pos += head + size;
        seen++;
    }
    return rc;
}

static int block_is_zero(tide_store *s, uint64_t index, uint8_t *buf, int *zero)
{
    int rc = s->io->read_at(s->key, buf, s->block_size, (index + 1) * (uint64_t)s->block_size);
    if (rc) return rc;
    *zero = 1;
    for (unsigned i = 0; i < s->block_size && *zero; i++) *zero = buf[i] == 0;
    return 0;
}

int ti_store_check_index(tide_store *s)
{
    uint8_t *buf = malloc(s->block_size), *win = NULL;
    size_t win_len = 0;
    char why[256], found_what[160];
    uint64_t expected = 0, zeros = 0;
    int rc;

    if (buf == NULL) return tide_err_set(TIDE_ENOMEM, "open: out of memory");
    /* Only records below W are indexed (the deferred index). */
    if (s->dat_indexed > TIDE_DAT_HEADER_SIZE) {
        uint64_t rest = s->dat_indexed - TIDE_DAT_HEADER_SIZE;
        win_len = rest < INDEX_WINDOW ? (size_t)rest : INDEX_WINDOW;
        if ((win = malloc(win_len)) == NULL) { rc = tide_err_set(TIDE_ENOMEM, "open: out of memory"); goto out; }
        if ((rc = s->io->read_at(s->dat, win, win_len, TIDE_DAT_HEADER_SIZE)) != 0) goto out;
    }
    rc = index_sound(s, s->buckets, win, win_len, buf, why, sizeof why);
    if (rc < 0) goto out;
    if (rc == 1) { rc = 0; goto out; }

    /* Unsound. If the file ends in zero blocks, find the bucket count that
     * indexes nudb.dat once they are dropped: that is the size expected. */
    for (uint64_t i = s->buckets; i > 1 && zeros < INDEX_ZERO_SCAN; i--) {
        int zero = 0;
        if ((rc = block_is_zero(s, i - 1, buf, &zero)) != 0) goto out;
        if (!zero) break;
        zeros++;
    }
    for (uint64_t j = 1; j <= zeros && expected == 0; j++) {
        char scratch[256];
        rc = index_sound(s, s->buckets - j, win, win_len, buf, scratch, sizeof scratch);
        if (rc < 0) goto out;
        if (rc == 1) expected = s->buckets - j;
    }
    snprintf(found_what, sizeof found_what, "%llu bytes (%llu buckets of %u)",
             (unsigned long long)((s->buckets + 1) * s->block_size),
             (unsigned long long)s->buckets, s->block_size);
    if (expected)
        rc = tide_err_set(TIDE_ECORRUPT, "%s: %s do not index nudb.dat: %s. Expected %llu bytes "
                          "(%llu buckets): the last %llu block%s zero, as if appended. Run 'tide "
                          "verify' to see the damage, 'tide rekey' to rebuild nudb.key from nudb.dat",
                          s->key_path, found_what, why,
                          (unsigned long long)((expected + 1) * s->block_size),
                          (unsigned long long)expected, (unsigned long long)(s->buckets - expected),
                          s->buckets - expected == 1 ? " is" : "s are");
    else
        rc = tide_err_set(TIDE_ECORRUPT, "%s: %s do not index nudb.dat: %s; the key file was grown, "
                          "cut or damaged, and the size that would index it cannot be told from "
                          "the files. Run 'tide verify' to see the damage, 'tide rekey' to rebuild "
                          "nudb.key from nudb.dat", s->key_path, found_what, why);
out:
    free(buf);
    free(win);
    return rc;
}
