/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verify_live.c: `tide verify --live`, a check of a store while its Tide
 * writer runs in another process.
 *
 * The full verify (verify.c) compares one key file with one data file; a
 * running writer changes both under it, so it refuses a live store. This
 * check takes the writer's seqlock (reader.c) for each bucket instead, and
 * checks what stays true while the store moves:
 *   1. Each bucket, read whole under one even seq: count within capacity,
 *      entries in hash order, inside the data file that view knows, each
 *      in the bucket its hash names under that view's bucket count; its
 *      spill chain (spill records never change once written) the same.
 *   2. Every data record of nudb.dat below max(W, C) as the walk began
 *      (complete, and never changed while the writer runs) is found by a
 *      fetch through the reader, with its value byte for byte: no record
 *      the writer acknowledged is missing from the index or its tail.
 * Not checked (the full verify's, when no writer runs): that no two
 * entries share a record, that no spill record is reached twice, that
 * entries and records pair one to one (the writer appends while this
 * walks, so the counts of the two passes differ).
 *
 * Invariants:
 *   1. Nothing is written; no lock the writer takes is held.
 *   2. A bucket is judged only on a read that no write overlapped.
 *
 * Never: report a problem found in a read that overlapped a write.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_impl.h"
#include "util/err.h"

typedef struct live_walk {
    tide_store *s;
    tide_verify_report *r;
} live_walk;

/* The chain from bucket `index` (its image in buf). */
static int check_chain(tide_store *s, uint64_t index, uint8_t *buf, uint64_t dat_end,
                       tide_verify_report *r)
{
    size_t full = ti_fmt_bucket_bytes(s->capacity);
    char where[96];
    uint64_t spill = ti_fmt_bucket_spill(buf), hops = 0;
    int rc;

    while (spill != 0) {
        if (spill < TIDE_DAT_HEADER_SIZE + TIDE_SPILL_HEADER || spill + full > dat_end ||
            ++hops > dat_end / full)
            return tide_err_set(TIDE_ECORRUPT, "%s: bucket %llu: spill pointer %llu is outside "
                                "the data file or loops", s->key_path, (unsigned long long)index,
                                (unsigned long long)spill);
        if ((rc = s->io->read_at(s->dat, buf, full, spill)) != 0) return rc;
        snprintf(where, sizeof where, "bucket %llu's spill record at %llu",
                 (unsigned long long)index, (unsigned long long)spill);
        if ((rc = ti_fmt_check_bucket(buf, s->capacity, dat_end, s->key_size, where)) != 0) return rc;
        r->keys += ti_fmt_bucket_count(buf);
        r->spill_records_reachable++;
        spill = ti_fmt_bucket_spill(buf);
    }
    return 0;
}

static int check_placement(tide_store *s, const uint8_t *buf, uint64_t index, uint64_t buckets)
{
    for (unsigned i = 0, n = ti_fmt_bucket_count(buf); i < n; i++) {
        tide_entry e;
        ti_fmt_bucket_entry(buf, i, &e);
        if (ti_fmt_bucket_index(e.hash, buckets) != index)
            return tide_err_set(TIDE_ECORRUPT, "%s: bucket %llu holds entry %u (hash %012llx), "
                                "which belongs in bucket %llu of %llu", s->key_path,
                                (unsigned long long)index, i, (unsigned long long)e.hash,
                                (unsigned long long)ti_fmt_bucket_index(e.hash, buckets),
                                (unsigned long long)buckets);
    }
    return 0;
}

/* Check 1, every bucket up to the last one the views know. */
static int bucket_pass(tide_store *s, const tide_verify_opts *vo, tide_verify_report *r)
{
    uint8_t *buf = malloc(s->block_size > TIDE_SPILL_HEADER + ti_fmt_bucket_bytes(s->capacity)
                          ? s->block_size : TIDE_SPILL_HEADER + ti_fmt_bucket_bytes(s->capacity));
    uint64_t buckets = 0, dat_end = 0;
    char where[64];
    int rc = 0;

    if (buf == NULL) return tide_err_set(TIDE_ENOMEM, "verify: out of memory");
    for (uint64_t b = 0;; b++) {
        rc = ti_reader_bucket(s, b, buf, &buckets, &dat_end);
        if (rc == TIDE_ENOTFOUND) { rc = 0; break; }
        if (rc) break;
        snprintf(where, sizeof where, "bucket %llu", (unsigned long long)b);
        if ((rc = ti_fmt_check_bucket(buf, s->capacity, dat_end, s->key_size, where)) != 0) break;
        if ((rc = check_placement(s, buf, b, buckets)) != 0) break;
        r->keys += ti_fmt_bucket_count(buf);
        if ((rc = check_chain(s, b, buf, dat_end, r)) != 0) break;
        if (vo->progress && (b % 1024 == 1023))
            vo->progress(vo->progress_arg, TIDE_VERIFY_STEP_BUCKETS, b + 1, buckets);
    }
    if (rc == 0 && vo->progress) vo->progress(vo->progress_arg, TIDE_VERIFY_STEP_BUCKETS, buckets, buckets);
    r->buckets = buckets;
    free(buf);
    return rc;
}

/* Check 2, for one data record. */
static int record_found(void *arg, uint64_t offset, const void *key, unsigned key_size,
                        const void *value, uint64_t len)
{
    live_walk *w = arg;
    void *v = NULL;
    size_t got = 0;
    int rc;

    (void)key_size;
    w->r->data_records++;
    w->r->value_bytes += len;
    rc = tide_store_fetch(w->s, key, &v, &got);
    if (rc == TIDE_ENOTFOUND)
        return tide_err_set(TIDE_ECORRUPT, "%s: offset %llu: the data record (%llu value bytes) "
                            "is not found through nudb.key or the writer's tail", w->s->dat_path,
                            (unsigned long long)offset, (unsigned long long)len);
    if (rc) return rc;
    if (got != len || memcmp(v, value, len) != 0)
        rc = tide_err_set(TIDE_ECORRUPT, "%s: offset %llu: the data record's key fetches %zu "
                          "bytes that differ from its %llu value bytes", w->s->dat_path,
                          (unsigned long long)offset, got, (unsigned long long)len);
    free(v);
    return rc;
}

static void data_progress(void *arg, uint64_t done, uint64_t total)
{
    const tide_verify_opts *vo = arg;
    vo->progress(vo->progress_arg, TIDE_VERIFY_STEP_DATA, done, total);
}

int tide_store_verify_live(const char *dir, const tide_verify_opts *vo, tide_verify_report *r)
{
    static const tide_verify_opts none = { 0 };
    tide_store *s = NULL;
    tide_store_opts o;
    tide_visit_stats st;
    int rc;

    if (vo == NULL) vo = &none;
    memset(r, 0, sizeof *r);
    tide_store_opts_init(&o);
    o.read_only = 1;
    o.io = vo->io;
    if ((rc = tide_store_open(&s, dir, &o)) != 0) return rc;
    if (!ti_store_reads_through_live(s)) {
        /* No writer runs: the whole check applies. */
        tide_store_close(s);
        return tide_store_verify_with(dir, vo, r);
    }
    r->capacity = s->capacity;
    r->block_size = s->block_size;
    if ((rc = bucket_pass(s, vo, r)) != 0) goto out;
    live_walk w = { s, r };
    rc = ti_store_walk(dir, vo->io, record_found, NULL, &w, vo->progress ? data_progress : NULL,
                       (void *)vo, &st);
    r->spill_records_written = st.spill_records;
    r->dat_file_bytes = st.file_bytes;
    r->key_file_bytes = (r->buckets + 1) * (uint64_t)s->block_size;
    if (r->buckets) r->load = (double)r->keys / ((double)r->buckets * s->capacity);
out:
    tide_store_close(s);
    return rc;
}
