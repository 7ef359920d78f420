/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * splits.c: the splits a store owes, found at a writable open.
 *
 * The key file is a linear-hashing table: a commit adds one bucket for
 * every capacity * load_factor entries it indexes (split_units, counted
 * in 1/65536 of an entry in split_credit). The format keeps no entry
 * count, so that credit lives in memory only, and an open starts it half
 * way. A store that receives a few entries per open (one `tide put` at a
 * time, a node restarted often) never gathers a whole split's credit: 400
 * single puts left one 4096-byte bucket holding 1.76 times its capacity,
 * read through spill records on most fetches.
 *
 * So a writable open counts the entries (every bucket and its spill chain
 * when the key file is at most TI_SPLITS_SCAN_ALL bytes; else a sample of
 * TI_SPLITS_SAMPLE evenly spaced buckets, scaled, and taken at 7/8 so
 * that a sample's error never splits a store past its load factor), and
 * the buckets that count calls for beyond the present ones become
 * split_owed, which the commits pay (at most TI_SPLITS_PER_COMMIT each,
 * so no one commit rewrites a large table). This stays within the format:
 * a split is the ordinary one, only earlier.
 *
 * Invariants:
 *   1. The count only reads: nudb.key's buckets through the key map, or
 *      read in runs of at most 1 MiB (one call each), and the spill
 *      records' headers through the data map only (without one a chain
 *      counts 1, a lower bound). Its cost is bounded: at most 8 MiB of key
 *      file whole (8 calls), or 512 buckets sampled (512 calls).
 *   2. split_owed is set here, before the commit thread starts, and then
 *      changed only by the commit thread, after a commit that paid it
 *      reached both files.
 *   3. Owing never moves the table past what one session inserting the
 *      counted entries into an empty store would have built.
 *
 * Never: fail an open for the count; a read that fails leaves nothing
 * owed (the store works as before, with its buckets as they are).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "store/keymap.h"
#include "store/store_impl.h"
#include "util/err.h"
#include "util/log.h"

#define TI_SPLITS_SCAN_ALL ((uint64_t)8 << 20)   /* bytes of key file counted whole */
#define TI_SPLITS_SAMPLE   512u
#define TI_SPLITS_RUN_BYTES ((uint64_t)1 << 20)  /* blocks read in one call */

/* Entries of the spill chain from `spill` into *n: each spill record's
 * header read through the data map. Without a map (the simulated file
 * system, store_key_map=off, tmpfs) the chain counts 1, a lower bound
 * that costs no read: the splits it owes are then fewer, never more, and
 * the next open counts again. */
static int chain_entries(tide_store *s, uint64_t spill, uint64_t *n)
{
    uint64_t stable = __atomic_load_n(&s->dat_stable, __ATOMIC_ACQUIRE), hops = 0;
    const uint8_t *h;

    while (spill != 0) {
        if (++hops > 1000000 || spill < TIDE_DAT_HEADER_SIZE + TIDE_SPILL_HEADER || spill + 8 > s->dat_size)
            return tide_err_set(TIDE_ECORRUPT, "%s: spill pointer %llu is outside the data file or "
                                "loops", s->dat_path, (unsigned long long)spill);
        if (spill + 8 > stable || (h = ti_keymap_view(&s->datmap, spill, 8, stable)) == NULL) {
            *n += 1;
            return 0;
        }
        /* The bucket of a spill record: u16 count, u48 next spill. */
        *n += ti_fmt_bucket_count(h);
        spill = ti_fmt_bucket_spill(h);
    }
    return 0;
}

/* Entries of buckets [first, first + count) and their chains into *n:
 * their blocks through the key map, or read whole in one call. */
static int run_entries(tide_store *s, uint64_t first, uint64_t count, uint8_t *buf, uint64_t *n)
{
    uint64_t known = (s->buckets + 1) * (uint64_t)s->block_size, off = (first + 1) * (uint64_t)s->block_size;
    size_t len = (size_t)count * s->block_size;
    const uint8_t *b;
    int rc = 0;

    b = ti_keymap_view(&s->keymap, off, len, known);
    if (b == NULL && (rc = s->io->read_at(s->key, buf, len, off)) != 0) return rc;
    if (b == NULL) b = buf;
    for (uint64_t i = 0; i < count && rc == 0; i++) {
        const uint8_t *bucket = b + i * s->block_size;
        *n += ti_fmt_bucket_count(bucket);
        rc = chain_entries(s, ti_fmt_bucket_spill(bucket), n);
    }
    return rc;
}

/* The buckets one session inserting n entries into an empty store builds
 * (its credit starts half way, as an open's does). */
static uint64_t buckets_for(const tide_store *s, uint64_t n)
{
    return 1 + (n * 65536 + s->split_units / 2) / s->split_units;
}

void ti_splits_count(tide_store *s)
{
    uint64_t B = s->buckets, seen = 0, entries = 0, est, want;
    uint64_t step = B * s->block_size <= TI_SPLITS_SCAN_ALL ? 1 : B / TI_SPLITS_SAMPLE;
    uint64_t run = step == 1 ? TI_SPLITS_RUN_BYTES / s->block_size : 1;
    uint8_t *buf = malloc((size_t)run * s->block_size);
    int rc = buf ? 0 : tide_err_set(TIDE_ENOMEM, "%s: out of memory", s->dir);

    s->split_owed = 0;
    /* No commit runs yet; key_lock is taken for the key map's contract. */
    pthread_rwlock_rdlock(&s->key_lock);
    for (uint64_t i = 0; rc == 0 && i < B; i += step * run) {
        uint64_t count = step == 1 && B - i < run ? B - i : run;
        rc = run_entries(s, i, count, buf, &entries);
        seen += count;
    }
    pthread_rwlock_unlock(&s->key_lock);
    free(buf);
    if (rc) {
        tide_log(TIDE_LOG_DEBUG, "%s: the entry count for the splits owed failed; none owed: %s",
                 s->dir, tide_last_error());
        tide_err_clear();
        return;
    }
    est = step == 1 ? entries : entries * B / seen / 8 * 7;
    want = buckets_for(s, est);
    if (want <= B) return;
    s->split_owed = want - B;
    tide_log(TIDE_LOG_INFO, "%s: %llu buckets hold %s%llu entries, past the load factor: the next "
             "commits add %llu buckets (as one session inserting them would have)", s->dir,
             (unsigned long long)B, step == 1 ? "" : "about ", (unsigned long long)est,
             (unsigned long long)s->split_owed);
}

uint64_t ti_splits_to_pay(const tide_store *s)
{
    return s->split_owed < TI_SPLITS_PER_COMMIT ? s->split_owed : TI_SPLITS_PER_COMMIT;
}
