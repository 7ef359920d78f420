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
 *   1. The count only reads, 8 bytes a bucket or spill record: nudb.key's
 *      buckets through the key map (or tide_io) and the spill records'
 *      headers through tide_io. Its cost is bounded: at most 8 MiB of key
 *      file whole, or 512 buckets and their chains.
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
#include <string.h>

#include "store/keymap.h"
#include "store/store_impl.h"
#include "util/err.h"
#include "util/log.h"

#define TI_SPLITS_SCAN_ALL ((uint64_t)8 << 20)   /* bytes of key file counted whole */
#define TI_SPLITS_SAMPLE   512u

/* Entries in bucket `index` and its spill chain into *n: the bucket's
 * header (u16 count, u48 spill) through the key map, or read; each spill
 * record's header read. */
static int bucket_entries(tide_store *s, uint64_t index, uint8_t *buf, uint64_t *n)
{
    uint64_t spill, hops = 0;
    uint8_t hdr[8];
    uint64_t known = (s->buckets + 1) * (uint64_t)s->block_size;
    const uint8_t *b;
    int rc = 0;

    pthread_rwlock_rdlock(&s->key_lock);
    b = ti_keymap_view(&s->keymap, (index + 1) * (uint64_t)s->block_size, 8, known);
    if (b) memcpy(buf, b, 8);
    pthread_rwlock_unlock(&s->key_lock);
    if (b == NULL && (rc = s->io->read_at(s->key, buf, 8, (index + 1) * (uint64_t)s->block_size)) != 0)
        return rc;
    *n += ti_fmt_bucket_count(buf);
    spill = ti_fmt_bucket_spill(buf);
    while (spill != 0) {
        /* The bucket of a spill record (u16 count, u48 next spill). */
        if (++hops > 1000000 || spill < TIDE_DAT_HEADER_SIZE + TIDE_SPILL_HEADER ||
            spill + sizeof hdr > s->dat_size)
            return tide_err_set(TIDE_ECORRUPT, "%s: spill pointer %llu is outside the data file or "
                                "loops", s->dat_path, (unsigned long long)spill);
        if ((rc = s->io->read_at(s->dat, hdr, sizeof hdr, spill)) != 0) return rc;
        *n += ti_fmt_bucket_count(hdr);
        spill = ti_fmt_bucket_spill(hdr);
    }
    return 0;
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
    uint8_t buf[8];
    int rc = 0;

    s->split_owed = 0;
    for (uint64_t i = 0; rc == 0 && i < B; i += step, seen++)
        rc = bucket_entries(s, i, buf, &entries);
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
