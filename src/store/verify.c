/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verify.c: a full structural check of a store.
 *
 * Two passes. The key-file pass reads every bucket and its spill chain and
 * checks each entry against the data record it names; it collects the
 * offsets of the records reached and of the spill records reached. The
 * data-file pass walks nudb.dat front to back and matches each record
 * against those sorted lists: a data record no entry reaches is an error
 * (NuDB's verify says the same), a spill record no chain reaches is waste.
 *
 * Invariants checked (docs/FORMAT.md):
 *   1. count <= capacity; entries sorted by hash; offsets inside nudb.dat.
 *   2. bucket_index(entry.hash, buckets) == the bucket the entry was found in.
 *   3. The record at entry.offset has entry.size and a key hashing to
 *      entry.hash; no two entries share a record.
 *   4. Every spill pointer p has a spill record at p - 8 whose n is the
 *      full-bucket size, and that record is one the walk of nudb.dat meets
 *      (not bytes inside a value that look like one); chains end.
 *   5. Every data record of nudb.dat is reached exactly once.
 *   6. Every spill record of nudb.dat, reached or not, has the key file's
 *      full-bucket size, as NuDB's verify demands: a spill record of
 *      another block size (left by a rekey) makes the store one NuDB's
 *      verify rejects, so this one does too.
 *
 * Progress (tide_verify_opts): the key-file pass reports buckets checked
 * of buckets, every VERIFY_BUCKET_STEP buckets and at its end; the
 * data-file pass reports bytes of nudb.dat walked, through the walk's own
 * progress (visit.c's invariant 3). A step that fails is not completed.
 *
 * Never: write anything. Verify opens the store read-only (a shared lock).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_impl.h"
#include "util/bigbuf.h"
#include "util/err.h"

#define VERIFY_BUCKET_STEP 1024u    /* buckets between progress calls */

typedef struct u64vec {
    uint64_t *v;
    size_t n, cap;
} u64vec;

static int vec_push(u64vec *a, uint64_t x)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 4096;
        uint64_t *v = tide_big_realloc(a->v, a->cap * sizeof *v, cap * sizeof *v);
        if (v == NULL) return tide_err_set(TIDE_ENOMEM, "verify: out of memory for %zu offsets", cap);
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* `spills` holds (record offset, bucket) pairs, sorted by offset. */
static int cmp_pair(const void *a, const void *b)
{
    return cmp_u64(a, b);
}

/* Check the entries of one bucket image found at `depth` in bucket i's chain. */
static int check_entries(tide_store *s, const uint8_t *b, uint64_t i, unsigned depth,
                         const char *where, uint8_t *rec, u64vec *offsets, tide_verify_report *r)
{
    unsigned count = ti_fmt_bucket_count(b);
    size_t head = TIDE_DAT_RECORD_HEADER + s->key_size;
    int rc = ti_fmt_check_bucket(b, s->capacity, s->dat_size, s->key_size, where);
    if (rc) return rc;
    for (unsigned k = 0; k < count; k++) {
        tide_entry e;
        ti_fmt_bucket_entry(b, k, &e);
        if (ti_fmt_bucket_index(e.hash, s->buckets) != i)
            return tide_err_set(TIDE_ECORRUPT, "%s: entry %u has hash %012llx, which belongs in "
                                "bucket %llu, not %llu", where, k, (unsigned long long)e.hash,
                                (unsigned long long)ti_fmt_bucket_index(e.hash, s->buckets),
                                (unsigned long long)i);
        if ((rc = s->io->read_at(s->dat, rec, head, e.offset)) != 0) return rc;
        if (ti_get48(rec) != e.size)
            return tide_err_set(TIDE_ECORRUPT, "%s: entry %u: nudb.dat offset %llu holds a record "
                                "of %llu bytes, the entry says %llu", where, k,
                                (unsigned long long)e.offset, (unsigned long long)ti_get48(rec),
                                (unsigned long long)e.size);
        if (ti_fmt_hash48(rec + TIDE_DAT_RECORD_HEADER, s->key_size, s->kh.salt) != e.hash)
            return tide_err_set(TIDE_ECORRUPT, "%s: entry %u: the key at nudb.dat offset %llu does "
                                "not hash to the entry's hash %012llx", where, k,
                                (unsigned long long)e.offset, (unsigned long long)e.hash);
        if ((rc = vec_push(offsets, e.offset)) != 0) return rc;
        r->keys++;
        r->value_bytes += e.size;
        r->avg_fetch_reads += 1 + depth;
    }
    return 0;
}

static int key_pass(tide_store *s, const tide_verify_opts *o, u64vec *offsets, u64vec *spills,
                    tide_verify_report *r)
{
    size_t full = ti_fmt_bucket_bytes(s->capacity);
    uint8_t *block = malloc(s->block_size > full + TIDE_SPILL_HEADER ? s->block_size : full + TIDE_SPILL_HEADER);
    uint8_t *rec = malloc(TIDE_DAT_RECORD_HEADER + s->key_size);
    char where[160];
    int rc = 0;

    if (!block || !rec) { rc = tide_err_set(TIDE_ENOMEM, "verify: out of memory"); goto out; }
    for (uint64_t i = 0; i < s->buckets; i++) {
        uint64_t off = (i + 1) * (uint64_t)s->block_size;
        if (o->progress && i % VERIFY_BUCKET_STEP == 0)
            o->progress(o->progress_arg, TIDE_VERIFY_STEP_BUCKETS, i, s->buckets);
        snprintf(where, sizeof where, "%s: bucket %llu (offset %llu)", s->key_path,
                 (unsigned long long)i, (unsigned long long)off);
        if ((rc = s->io->read_at(s->key, block, s->block_size, off)) != 0) goto out;
        if ((rc = check_entries(s, block, i, 0, where, rec, offsets, r)) != 0) goto out;
        uint64_t spill = ti_fmt_bucket_spill(block);
        for (unsigned depth = 1; spill != 0; depth++) {
            if (depth > s->dat_size / full + 1) {
                rc = tide_err_set(TIDE_ECORRUPT, "%s: the spill chain loops", where);
                goto out;
            }
            if (spill < TIDE_DAT_HEADER_SIZE + TIDE_SPILL_HEADER || spill + full > s->dat_size) {
                rc = tide_err_set(TIDE_ECORRUPT, "%s: spill pointer %llu is outside nudb.dat",
                                  where, (unsigned long long)spill);
                goto out;
            }
            if ((rc = s->io->read_at(s->dat, block, full + TIDE_SPILL_HEADER,
                                     spill - TIDE_SPILL_HEADER)) != 0) goto out;
            if (ti_get48(block) != 0 || ti_get16(block + 6) != full) {
                rc = tide_err_set(TIDE_ECORRUPT, "%s: spill pointer %llu does not point 8 bytes "
                                  "into a spill record of %zu bytes (size field %llu, n %llu)",
                                  where, (unsigned long long)spill, full,
                                  (unsigned long long)ti_get48(block),
                                  (unsigned long long)ti_get16(block + 6));
                goto out;
            }
            snprintf(where, sizeof where, "%s: spill record at offset %llu (chain of bucket %llu)",
                     s->dat_path, (unsigned long long)(spill - TIDE_SPILL_HEADER),
                     (unsigned long long)i);
            if (ti_fmt_bucket_count(block + TIDE_SPILL_HEADER) != s->capacity) {
                rc = tide_err_set(TIDE_ECORRUPT, "%s: holds %u entries; spill records are full "
                                  "buckets of %u", where,
                                  ti_fmt_bucket_count(block + TIDE_SPILL_HEADER), s->capacity);
                goto out;
            }
            if ((rc = vec_push(spills, spill - TIDE_SPILL_HEADER)) != 0) goto out;
            if ((rc = vec_push(spills, i)) != 0) goto out;
            if ((rc = check_entries(s, block + TIDE_SPILL_HEADER, i, depth, where, rec, offsets, r)) != 0)
                goto out;
            spill = ti_fmt_bucket_spill(block + TIDE_SPILL_HEADER);
        }
    }
    if (o->progress) o->progress(o->progress_arg, TIDE_VERIFY_STEP_BUCKETS, s->buckets, s->buckets);
out:
    free(block);
    free(rec);
    return rc;
}

typedef struct dat_walk {
    tide_store *s;
    u64vec *offsets, *spills;
    size_t oi, si;
    tide_verify_report *r;
    uint64_t foreign_first, foreign_n;   /* the first spill record of another size */
} dat_walk;

static int walk_record(void *arg, uint64_t offset, const void *key, unsigned key_size,
                       const void *value, uint64_t len)
{
    dat_walk *w = arg;
    (void)key; (void)key_size; (void)value;
    if (w->s->mode == TI_STORE_IDLE_READER && offset >= w->s->dat_indexed) {
        /* An idle view's record past W: committed, not indexed yet (the tail). */
        w->r->tail_records++;
        w->r->tail_bytes += TIDE_DAT_RECORD_HEADER + key_size + len;
        return 0;
    }
    w->r->data_records++;
    while (w->oi < w->offsets->n && w->offsets->v[w->oi] < offset) w->oi++;
    if (w->oi >= w->offsets->n || w->offsets->v[w->oi] != offset)
        return tide_err_set(TIDE_ECORRUPT, "%s: offset %llu: data record of %llu value bytes is "
                            "not reachable from any bucket", w->s->dat_path,
                            (unsigned long long)offset, (unsigned long long)len);
    w->oi++;
    return 0;
}

static int not_a_spill_record(const dat_walk *w)
{
    const uint64_t *p = w->spills->v + 2 * w->si;
    return tide_err_set(TIDE_ECORRUPT, "%s: bucket %llu (offset %llu): its chain's spill pointer "
                        "%llu does not lead to a spill record of nudb.dat (the bytes there lie "
                        "inside another record)", w->s->key_path, (unsigned long long)p[1],
                        (unsigned long long)((p[1] + 1) * w->s->block_size),
                        (unsigned long long)(p[0] + TIDE_SPILL_HEADER));
}

/* Every spill pointer must name a spill record the walk meets. */
static int walk_spill(void *arg, uint64_t offset, uint64_t n)
{
    dat_walk *w = arg;
    size_t count = w->spills->n / 2;
    /* NuDB's verify checks every spill record it walks, reached or not:
     * a spill is a full bucket, so its size is the key file's. Such a
     * record is counted here and reported after the walk, so that every
     * other figure is complete. */
    if (n != ti_fmt_bucket_bytes(w->s->capacity) && w->r->spill_records_foreign++ == 0) {
        w->foreign_first = offset;
        w->foreign_n = n;
    }
    if (w->si < count && w->spills->v[2 * w->si] < offset) return not_a_spill_record(w);
    if (w->si < count && w->spills->v[2 * w->si] == offset) w->si++;
    return 0;
}

/* The walk's bytes of nudb.dat as the data step of a verify's progress. */
static void data_progress(void *arg, uint64_t done, uint64_t total)
{
    const tide_verify_opts *o = arg;
    o->progress(o->progress_arg, TIDE_VERIFY_STEP_DATA, done, total);
}

void tide_verify_opts_init(tide_verify_opts *o)
{
    memset(o, 0, sizeof *o);
}

int tide_store_verify_io(const char *dir, tide_io *io, tide_verify_report *r)
{
    tide_verify_opts vo = { .io = io };
    return tide_store_verify_with(dir, &vo, r);
}

/* A read-only handle reading through a running writer's
 * tide.live: the two files move apart under this check. verify_live.c
 * checks what holds while they move. */
static int refuse_live(const tide_store *s, const char *dir)
{
    if (!ti_store_reads_through_live(s)) return 0;
    return tide_err_set(TIDE_EBUSY, "%s: a Tide writer (pid %d) has the store open and commits "
                        "to it; 'tide verify --live' checks a running store (this full check "
                        "needs the writer stopped); nothing was read", dir,
                        (int)__atomic_load_n(&s->live->w[TI_LIVE_PID], __ATOMIC_RELAXED));
}

int tide_store_verify_with(const char *dir, const tide_verify_opts *vo, tide_verify_report *r)
{
    static const tide_verify_opts none = { 0 };
    tide_io *io = vo ? vo->io : NULL;
    tide_store *s = NULL;
    tide_store_opts o;
    tide_visit_stats st;
    u64vec offsets = { 0 }, spills = { 0 };
    int rc;

    memset(r, 0, sizeof *r);
    tide_store_opts_init(&o);
    o.read_only = 1;
    o.io = io;
    if ((rc = ti_store_open_checked(&s, dir, &o, 0, NULL)) != 0) goto out;
    if ((rc = refuse_live(s, dir)) != 0) goto out;
    r->buckets = s->buckets;
    r->capacity = s->capacity;
    r->block_size = s->block_size;
    r->dat_file_bytes = s->dat_size;
    r->key_file_bytes = (s->buckets + 1) * (uint64_t)s->block_size;

    if (vo == NULL) vo = &none;
    if ((rc = key_pass(s, vo, &offsets, &spills, r)) != 0) goto out;
    if ((rc = tide_big_sort(offsets.v, offsets.n, sizeof *offsets.v, cmp_u64)) != 0) goto out;
    if ((rc = tide_big_sort(spills.v, spills.n / 2, 2 * sizeof *spills.v, cmp_pair)) != 0) goto out;
    for (size_t k = 1; k < offsets.n; k++)
        if (offsets.v[k] == offsets.v[k - 1]) {
            rc = tide_err_set(TIDE_ECORRUPT, "%s: two entries point at the record at nudb.dat "
                              "offset %llu", s->key_path, (unsigned long long)offsets.v[k]);
            goto out;
        }
    for (size_t k = 1; k < spills.n / 2; k++)
        if (spills.v[2 * k] == spills.v[2 * k - 2]) {
            rc = tide_err_set(TIDE_ECORRUPT, "%s: buckets %llu and %llu share the spill record at "
                              "nudb.dat offset %llu", s->key_path, (unsigned long long)spills.v[2 * k - 1],
                              (unsigned long long)spills.v[2 * k + 1], (unsigned long long)spills.v[2 * k]);
            goto out;
        }
    r->spill_records_reachable = spills.n / 2;

    dat_walk w = { s, &offsets, &spills, 0, 0, r, 0, 0 };
    rc = ti_store_walk(dir, io, walk_record, walk_spill, &w, vo->progress ? data_progress : NULL,
                       (void *)vo, &st);
    r->spill_records_written = st.spill_records;
    if (rc) goto out;
    if (w.si < spills.n / 2) {
        rc = not_a_spill_record(&w);
        goto out;
    }
    if (r->data_records != r->keys) {
        rc = tide_err_set(TIDE_ECORRUPT, "%s: %llu entries reach %llu data records",
                          s->key_path, (unsigned long long)r->keys,
                          (unsigned long long)r->data_records);
        goto out;
    }
    {
        /* Spill records reached must be ones the walk saw; the rest is waste. */
        uint64_t reachable_bytes = r->spill_records_reachable *
                                   (TIDE_SPILL_HEADER + ti_fmt_bucket_bytes(s->capacity));
        r->waste_bytes = st.spill_bytes - (reachable_bytes <= st.spill_bytes ? reachable_bytes : 0);
        if (reachable_bytes > st.spill_bytes || r->spill_records_reachable > st.spill_records) {
            rc = tide_err_set(TIDE_ECORRUPT, "%s: %llu spill records are reachable but the data "
                              "file holds %llu", s->dat_path,
                              (unsigned long long)r->spill_records_reachable,
                              (unsigned long long)st.spill_records);
            goto out;
        }
    }
    if (r->spill_records_foreign) {
        r->foreign_spills_only = 1;
        /* n = 8 + 18 * capacity names the capacity, hence the block size
         * (rounded to the power of two that Tide and rippled use). */
        unsigned cap = w.foreign_n >= 8 ? (unsigned)((w.foreign_n - 8) / 18) : 0;
        rc = tide_err_set(TIDE_ECORRUPT, "%s: offset %llu: spill record of %llu bytes, and %llu in "
                          "all not of the %zu bytes a full bucket has at block size %u; no chain "
                          "reaches them (waste, as from a rekey from a block size with %u-entry "
                          "buckets): harmless to reads and writes, but NuDB's verify rejects the "
                          "store (invalid size in spill)", s->dat_path,
                          (unsigned long long)w.foreign_first, (unsigned long long)w.foreign_n,
                          (unsigned long long)r->spill_records_foreign,
                          ti_fmt_bucket_bytes(s->capacity), s->block_size, cap);
    }
out:
    if (r->keys) r->avg_fetch_reads /= (double)r->keys;
    if (r->buckets && r->capacity) r->load = (double)r->keys / ((double)r->buckets * r->capacity);
    if (r->dat_file_bytes) r->waste = (double)r->waste_bytes / (double)r->dat_file_bytes;
    tide_big_free(offsets.v, offsets.cap * sizeof *offsets.v);
    tide_big_free(spills.v, spills.cap * sizeof *spills.v);
    if (s) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tide_last_error());
        tide_store_close(s);
        if (rc) tide_err_set(rc, "%s", msg);
    }
    return rc;
}
