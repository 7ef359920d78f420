/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * commit.c: one commit of the insert pool to the three files.
 *
 * A commit is NuDB's undo-log protocol with its steps batched:
 *
 *   1. Plan in memory: give every pending record its offset at the end of
 *      nudb.dat; grow the table from B0 to B1 buckets (linear hashing, one
 *      split every capacity * load_factor inserts); sort the entries by
 *      (bucket, hash) and list the split sources' roots. The old buckets
 *      the commit changes (those that receive entries, and the roots of
 *      the splits), ascending, are walked from these two sorted arrays
 *      (next_touched); they are counted here, never listed.
 *   2. Log the pre-images, range by range (log_preimages): read the
 *      changed buckets of one range (at most TI_COMMIT_RANGE_BYTES of log
 *      records, each its real size: ranges end at a bucket, never inside
 *      one), append its
 *      records to nudb.log in one write (the first range's write begins
 *      with the header, with the key and data file sizes before the
 *      commit) and sync the log before the next range's write. A commit
 *      of one range writes the log as before: one write, one sync.
 *   3. Append the records to nudb.dat.
 *   4. Under key_lock (write), build every changed bucket from its pre-image,
 *      the entries it receives and (for a split source) its spill chain,
 *      spilling full buckets to nudb.dat; write the blocks in ascending
 *      order, coalescing neighbours into large writes; publish B1. With
 *      more than one range each range's pre-images are read from nudb.key
 *      again (unchanged: nothing has been written to it) into the same
 *      buffer; with one, the buffer of step 2 is used as it is. The new
 *      buckets (past B0, no pre-image) come last, ascending, from the
 *      entries that left the split sources (`moved`) and their own.
 *      A bucket that is no split source and keeps its new entries in its
 *      block (the common case) is built in the write buffer itself: its
 *      pre-image is copied there and the entries are inserted in place
 *      (ti_fmt_bucket_insert: a binary search and one memmove per gap), so
 *      a commit's cost per bucket is a copy of its bytes, not a decode and
 *      re-encode of every entry. Buckets that overflow and split sources
 *      are decoded, merged or sorted, and encoded as before; the bytes
 *      written are the same either way (tests/test_store_commit_bytes.c),
 *      and the same however the buckets fall into ranges: the buckets are
 *      built in the same order, so the spill records land at the same
 *      offsets (test_store_flush: a flush of tiny ranges).
 *   5. Sync nudb.dat, then nudb.key. Truncate nudb.log to 0 and sync it.
 *
 * With the deferred index (defer.c) the same commit is the
 * flush: the tail's entries (records already in nudb.dat below C) are
 * indexed with the batch's, the log header's dat_file_size is W (the end of
 * the indexed records, not the file's end, so that any rollback keeps the
 * tail), an undone flush cuts the log back to that header (the idle log)
 * instead of emptying it, and a completed one empties the tail and raises
 * W to the data file's end (commit_indexed) before the idle log is written.
 *
 * Why every range is logged before any bucket is written (rather than
 * each range logged and then written in turn): once a split source is
 * rewritten, the entries that leave it are in no bucket until the new
 * buckets are written at the end, so key_lock must be held from the first
 * split source to the last new bucket; logging in step 2 keeps the log's
 * syncs outside key_lock, as they always were, at the cost of reading each
 * pre-image twice (the second time from the page cache, as a rule).
 *
 * Memory: the range buffer, a read buffer and the two write buffers are
 * bounded by constants (TI_COMMIT_RANGE_BYTES, WBUF_SIZE); what grows with
 * the commit is 16 bytes per entry placed (`items`; 16 more for its sort's
 * scratch while planning), 24-48 per entry leaving a split source (`moved`,
 * grown by doubling; 24 more for its sort's scratch) and 8 per split (8
 * more to sort them); nothing grows with the key file (docs/MEMORY-LIMIT.md).
 * commit_buffer_bytes is the bytes of the buffers allocated at the moment,
 * every sort's scratch included (counted_sort).
 *
 * Each log write is synced before the next is issued, so a crash leaves a
 * prefix of the log (header first), never a hole that would read as a
 * record for bucket 0.
 *
 * Invariants:
 *   1. No key-file block is written before the log that holds its
 *      pre-image is synced (step 2, every range, before step 4).
 *   2. Every entry sits in the bucket bucket_index(hash, buckets) names, or
 *      in that bucket's spill chain; spill records hold exactly `capacity`
 *      entries; every bucket is sorted by hash.
 *   3. The key file is (buckets + 1) * block_size bytes after every commit.
 *   4. On failure after step 2 and before both files are synced, the files
 *      are rolled back before the error is returned: the range in memory
 *      from its buffer, the ranges before it read back from nudb.log (it
 *      is synced; as recovery reads it); if that fails the store is marked
 *      broken (TI_COMMIT_BROKEN) and the synced log remains for recovery.
 *      A failure in step 2 leaves nudb.key untouched: the log is cut back.
 *      A failure to empty the log
 *      after both syncs is not rolled back (TI_COMMIT_APPLIED): the batch
 *      is in the files, and it is acknowledged only once the log is empty
 *      (the commit thread retries ti_commit_clean_log); a crash before that
 *      undoes it.
 *   5. The range buffer's records are exactly nudb.log's bytes
 *      [mem_off, mem_off + mem_hi - mem_lo), and every record before
 *      mem_off is synced in nudb.log.
 *
 * Every buffer a commit allocates (or grows) goes to the store's
 * note_alloc with the bytes asked for (note(): churn totals).
 *
 * Never: overwrite a bucket before its pre-image is synced; rewrite a
 *   spill record (they are immutable; a split leaves the old chain as waste);
 *   issue a log write before the previous one is synced.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_impl.h"
#include "util/err.h"
#include "util/assert.h"
#include "util/bigbuf.h"
#include "util/log.h"

#define WBUF_SIZE (1u << 20)

/* The test knob (ti_commit_set_range_bytes): 0 for TI_COMMIT_RANGE_BYTES. */
static size_t range_bytes_knob;

/* An entry to place, packed in 16 bytes as the tail's slots are (tail.c):
 * offset (48 bits) | hash's low 16 bits << 48; hash's high 32 bits | value
 * size (32 bits) << 32. Its bucket is not stored but computed from the
 * hash (table_bucket): half the 32 bytes a (bucket, entry) pair took. */
typedef struct placed {
    uint64_t w0, w1;
} placed;

/* The bucket of a hash in a table of `buckets`, ti_fmt_bucket_index with
 * its modulus (a power of two) as a mask. `shift`: the low bits every hash
 * of one bucket shares (bucket_order). */
typedef struct table {
    uint64_t buckets, mask, half;
    unsigned shift;
} table;

/* A write-combining buffer over one file: bytes for [base, base + len). */
typedef struct wbuf {
    tide_store *s;
    tide_file *f;
    uint64_t base;
    uint8_t *data;
    size_t len, cap;
} wbuf;

/* Where the walk of the changed old buckets stands (next_touched). */
typedef struct cursor {
    uint64_t a;                  /* the next of items */
    size_t r;                    /* the next of roots */
} cursor;

typedef struct commit {
    tide_store *s;
    ti_pool *batch;
    uint64_t B0, B1, dat0, dat_end;
    uint64_t paid;               /* splits owed (splits.c) this commit makes */
    uint64_t W0, C0;             /* dat_indexed, dat_committed before it */
    uint64_t n;                  /* items: the tail's entries and the batch's */
    uint64_t tail0;              /* entries the tail held (a flush when > 0) */
    table tb;                    /* B1's */
    placed *items;               /* the tail's and batch's entries, by (bucket, hash) */
    uint64_t *roots;             /* split roots, ascending (with repeats) */
    size_t nroots;
    uint64_t ntouched;           /* changed old buckets */
    unsigned nranges;            /* ranges logged (step 2) */
    int log_begun;               /* a log write was issued */
    uint8_t *range;              /* one range's log records (the first's after the header) */
    size_t range_cap, rlen;
    size_t mem_lo, mem_hi;       /* range[mem_lo, mem_hi): records held (invariant 5) */
    uint64_t mem_off;            /* their offset in nudb.log */
    uint8_t *run;                /* adjacent blocks read at once */
    size_t run_blocks;
    tide_entry *moved;           /* entries leaving split sources */
    size_t nmoved, moved_cap;
    tide_entry *vec;             /* the bucket being built */
    size_t vec_cap;
    uint8_t *block;              /* a spill record or chain read */
    size_t block_bytes;
    wbuf dat, key;
    size_t live;                 /* bytes of the buffers allocated now */
} commit;

static uint64_t table_bucket(const table *t, uint64_t h48)
{
    uint64_t n = h48 & t->mask;
    return n >= t->buckets ? n - t->half : n;
}

static table table_of(uint64_t buckets)
{
    uint64_t mod = ti_fmt_ceil_pow2(buckets);
    unsigned shift = mod >= 2 ? (unsigned)__builtin_ctzll(mod) - 1 : 0;
    TIDE_ASSERT(shift < 48);
    return (table){ buckets, mod - 1, mod / 2, shift };
}

/* A 49-bit key that orders hashes by bucket, then by hash. Every hash of a
 * bucket j has the same low `shift` bits (j is the hash modulo 2^(shift+1),
 * or modulo 2^shift for a bucket whose split image is not made yet), so
 * within a bucket the hash without them orders as the whole hash does, and
 * j < 2^(shift+1) fits above it. */
static uint64_t bucket_order(const table *t, uint64_t h48)
{
    return table_bucket(t, h48) << (48 - t->shift) | h48 >> t->shift;
}
#define BUCKET_ORDER_BITS 49

static placed pack(const tide_entry *e)
{
    TIDE_ASSERT(e->offset <= TIDE_FIELD48_MAX && e->size <= 0xffffffffull);
    return (placed){ e->offset | (e->hash & 0xffff) << 48, (e->hash >> 16 & 0xffffffffull) | e->size << 32 };
}

static uint64_t placed_hash(const placed *p)
{
    return (p->w0 >> 48) | (p->w1 & 0xffffffffull) << 16;
}

static tide_entry unpack(const placed *p)
{
    return (tide_entry){ p->w0 & TIDE_FIELD48_MAX, p->w1 >> 32, placed_hash(p) };
}

static uint64_t item_bucket(const commit *c, uint64_t k)
{
    return table_bucket(&c->tb, placed_hash(&c->items[k]));
}

/* The sort keys of the entries placed and moved (bucket_order; `arg` is
 * the commit's table). */
static uint64_t placed_order(const void *e, const void *arg)
{
    return bucket_order(arg, placed_hash(e));
}

static uint64_t moved_order(const void *e, const void *arg)
{
    return bucket_order(arg, ((const tide_entry *)e)->hash);
}

static int cmp_entry(const void *a, const void *b)
{
    const tide_entry *x = a, *y = b;
    if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void counted_write(tide_store *s, size_t n)
{
    __atomic_fetch_add(&s->bytes_written, n, __ATOMIC_RELAXED);
}

static int synced(tide_store *s, tide_file *f)
{
    int rc = s->io->sync(f);
    if (rc == 0) __atomic_fetch_add(&s->syncs, 1, __ATOMIC_RELAXED);
    return rc;
}

static int wbuf_flush(wbuf *w)
{
    int rc = 0;
    if (w->len) {
        rc = w->s->io->write_at(w->f, w->data, w->len, w->base);
        if (rc == 0) counted_write(w->s, w->len);
        w->base += w->len;
        w->len = 0;
    }
    return rc;
}

/* Append (or place, for the key file) `n` bytes at file offset `off`. */
static int wbuf_put(wbuf *w, uint64_t off, const void *p, size_t n)
{
    int rc;
    if (w->len && off != w->base + w->len) {
        if ((rc = wbuf_flush(w)) != 0) return rc;
    }
    if (w->len == 0) w->base = off;
    while (n > 0) {
        size_t room = w->cap - w->len;
        size_t take = n < room ? n : room;
        memcpy(w->data + w->len, p, take);
        w->len += take;
        p = (const uint8_t *)p + take;
        n -= take;
        if (w->len == w->cap && (rc = wbuf_flush(w)) != 0) return rc;
    }
    return 0;
}

/* Room for `n` bytes at file offset `off` in the buffer, to be filled by
 * the caller (n <= cap): a bucket built where it will be written from. */
static int wbuf_slot(wbuf *w, uint64_t off, size_t n, uint8_t **out)
{
    int rc;
    TIDE_ASSERT(n <= w->cap);
    if (w->len && (off != w->base + w->len || w->len + n > w->cap)) {
        if ((rc = wbuf_flush(w)) != 0) return rc;
    }
    if (w->len == 0) w->base = off;
    *out = w->data + w->len;
    w->len += n;
    return 0;
}

/* Churn totals: one commit buffer of `bytes`, for the store's
 * note_alloc (tide_store_opts). */
static void note(const tide_store *s, size_t bytes)
{
    if (s->opts.note_alloc && s->opts.commit_account_id >= 0)
        s->opts.note_alloc(s->opts.commit_account_id, (int64_t)bytes);
}

/* The commit's buffers changed by `delta` bytes: commit_buffer_bytes is
 * what is allocated now. */
static void account(commit *c, int64_t delta)
{
    TIDE_ASSERT(delta >= 0 || (size_t)-delta <= c->live);
    c->live = (size_t)((int64_t)c->live + delta);
    __atomic_store_n(&c->s->commit_buffer_bytes, (uint64_t)c->live, __ATOMIC_RELAXED);
}

/* tide_big_alloc, noted and accounted. */
static void *buf_alloc(commit *c, size_t n)
{
    void *p = tide_big_alloc(n);
    if (p) {
        note(c->s, n);
        account(c, (int64_t)n);
    }
    return p;
}

static void buf_free(commit *c, void *p, size_t n)
{
    if (p == NULL) return;
    tide_big_free(p, n);
    account(c, -(int64_t)n);
}

static int grow(commit *c, void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 256;
    while (n < need) n *= 2;
    void *p = tide_big_realloc(*arr, *cap * elem, n * elem);
    if (p == NULL) return tide_err_set(TIDE_ENOMEM, "commit: out of memory (%zu bytes)", n * elem);
    note(c->s, n * elem);
    account(c, (int64_t)((n - *cap) * elem));
    *arr = p;
    *cap = n;
    return 0;
}

/* tide_big_sort, or with `order` tide_big_sort_keyed by bucket_order at
 * the commit's table (the radix sort: a pass over the entries for every 11
 * bits of the key, where a merge sort's comparisons grow as n log n);
 * its scratch (n * size bytes, and the radix sort's 80 KiB of digit counts,
 * from 64 KiB of elements on: bigbuf.c) noted and accounted while it lives:
 * every sort a commit makes. */
static int counted_sort(commit *c, void *base, size_t n, size_t size,
                        int (*cmp)(const void *, const void *),
                        uint64_t (*order)(const void *, const void *))
{
    size_t scratch = n * size < (64u << 10) ? 0
                   : order ? tide_big_sort_keyed_scratch(n, size, BUCKET_ORDER_BITS) : n * size;
    int rc;

    if (scratch) {
        note(c->s, scratch);
        account(c, (int64_t)scratch);
    }
    rc = order ? tide_big_sort_keyed(base, n, size, BUCKET_ORDER_BITS, order, &c->tb)
               : tide_big_sort(base, n, size, cmp);
    if (scratch) account(c, -(int64_t)scratch);
    return rc;
}

tide_entry ti_commit_pack_round_trip(const tide_entry *e, uint64_t *hash)
{
    placed p = pack(e);
    *hash = placed_hash(&p);
    return unpack(&p);
}

void ti_commit_set_range_bytes(size_t bytes)
{
    __atomic_store_n(&range_bytes_knob, bytes, __ATOMIC_RELAXED);
}

/* The old bucket a new bucket's entries come from, following splits of
 * buckets that are themselves new in this commit. */
static uint64_t split_root(uint64_t i, uint64_t B0)
{
    while (i >= B0) i -= ti_fmt_ceil_pow2(i + 1) / 2;
    return i;
}

/* The next changed old bucket at or after *cur, ascending: one that
 * receives entries (items below B0 come first in their order) or a split
 * root. 0 when there is none. */
static int next_touched(const commit *c, cursor *cur, uint64_t *j)
{
    uint64_t ja = UINT64_MAX, jr = UINT64_MAX;

    if (cur->a < c->n) {
        ja = item_bucket(c, cur->a);
        if (ja >= c->B0) ja = UINT64_MAX;     /* new buckets: not pre-imaged */
    }
    if (cur->r < c->nroots) jr = c->roots[cur->r];
    if (ja == UINT64_MAX && jr == UINT64_MAX) return 0;
    *j = ja < jr ? ja : jr;
    while (cur->a < c->n && item_bucket(c, cur->a) == *j) cur->a++;
    while (cur->r < c->nroots && c->roots[cur->r] == *j) cur->r++;
    return 1;
}

/* Step 1: offsets, placement, the split roots; the changed old buckets
 * counted. */
static int plan(commit *c)
{
    tide_store *s = c->s;
    uint64_t credit, n, off = s->dat_size, k = 0, j;
    cursor cur = { 0, 0 };
    int rc = 0;

    /* The deferred index: a flush indexes the tail's entries with the batch's. */
    c->tail0 = s->tail.count;
    n = c->n = c->tail0 + c->batch->count;
    credit = s->split_credit + n * 65536;
    c->B0 = s->buckets;
    c->paid = ti_splits_to_pay(s);
    c->B1 = c->B0 + credit / s->split_units + c->paid;
    c->tb = table_of(c->B1);
    c->dat0 = s->dat_size;
    c->W0 = s->dat_indexed;
    c->C0 = s->dat_committed;

    c->items = buf_alloc(c, (n ? n : 1) * sizeof *c->items);
    if (c->items == NULL) return tide_err_set(TIDE_ENOMEM, "commit: out of memory for %llu entries",
                                              (unsigned long long)n);
    for (uint64_t i = 0; i < s->tail.nslots && k < c->tail0; i++) {
        tide_entry e;
        if (!ti_tail_slot(&s->tail, i, &e)) continue;
        c->items[k++] = pack(&e);
    }
    TIDE_ASSERT(k == c->tail0);
    for (ti_pool_item *it = c->batch->first; it; it = it->after, k++) {
        tide_entry e = { off, it->len, it->hash };
        it->offset = off;
        c->items[k] = pack(&e);
        off += TIDE_DAT_RECORD_HEADER + s->key_size + (uint64_t)it->len;
    }
    c->dat_end = off;
    if ((rc = counted_sort(c, c->items, n, sizeof *c->items, NULL, placed_order)) != 0) return rc;

    if (c->B1 > c->B0) {
        c->roots = buf_alloc(c, (c->B1 - c->B0) * sizeof *c->roots);
        if (c->roots == NULL) return tide_err_set(TIDE_ENOMEM, "commit: out of memory");
        for (uint64_t i = c->B0; i < c->B1; i++) c->roots[c->nroots++] = split_root(i, c->B0);
        if ((rc = counted_sort(c, c->roots, c->nroots, sizeof *c->roots, cmp_u64, NULL)) != 0) return rc;
    }
    while (next_touched(c, &cur, &j)) c->ntouched++;
    return 0;
}

/* One range's pre-images into c->range, from *cur on: as many changed
 * buckets as fit, whole, each record taking its real size (8 + the used
 * bytes of its count, not a whole block), read from nudb.key
 * in runs of adjacent blocks; a bucket of a run that does not fit is read
 * again by the next range. The first range's records follow room for the
 * log header. Sets the records held (invariant 5) once they are all read. */
static int read_range(commit *c, cursor *cur, int first)
{
    tide_store *s = c->s;
    size_t bs = s->block_size, least = 8 + ti_fmt_bucket_bytes(0);
    uint64_t j0, j;
    int rc, full = 0;

    c->rlen = first ? TIDE_LOG_HEADER_SIZE : 0;
    c->mem_lo = c->mem_hi = c->rlen;
    while (!full) {
        size_t room = (c->range_cap - c->rlen) / least, n = 1;
        cursor p = *cur;
        if (room == 0 || !next_touched(c, &p, &j0)) break;
        if (room > c->run_blocks) room = c->run_blocks;
        for (cursor q = p; n < room && next_touched(c, &q, &j) && j == j0 + n; p = q) n++;
        if ((rc = s->io->read_at(s->key, c->run, n * bs, (j0 + 1) * bs)) != 0) return rc;
        for (size_t k = 0; k < n && !full; k++) {
            const uint8_t *b = c->run + k * bs;
            unsigned count = ti_fmt_bucket_count(b);
            if (count > s->capacity)
                return tide_err_set(TIDE_ECORRUPT, "%s: bucket %llu: count %u exceeds capacity %u",
                                    s->key_path, (unsigned long long)(j0 + k), count, s->capacity);
            size_t rec = 8 + ti_fmt_bucket_bytes(count);
            if (rec > c->range_cap - c->rlen) {
                full = 1;
                break;
            }
            ti_put64(c->range + c->rlen, j0 + k);
            memcpy(c->range + c->rlen + 8, b, rec - 8);
            c->rlen += rec;
            int more = next_touched(c, cur, &j);
            TIDE_ASSERT(more && j == j0 + k);
        }
    }
    TIDE_ASSERT(c->rlen > c->mem_lo || !next_touched(c, &(cursor){ cur->a, cur->r }, &j));
    c->mem_hi = c->rlen;
    return 0;
}

/* Step 2: the log, range by range, each write synced before the next. */
static int log_preimages(commit *c)
{
    tide_store *s = c->s;
    cursor cur = { 0, 0 };
    uint64_t at = 0, j;
    int rc;

    do {
        int first = c->nranges == 0;
        if ((rc = read_range(c, &cur, first)) != 0) return rc;
        if (first) {
            tide_log_header lh;
            /* dat_file_size is W, not the data file's end: while the index
             * lags, a rollback (NuDB's or Tide's) must cut nudb.dat back no
             * further than the indexed records, and Tide's recovery keeps
             * [W, C) (the deferred index's tail). Without a tail W is dat0. */
            ti_commit_log_header(s, &lh, (c->B0 + 1) * s->block_size, s->dat_indexed);
            ti_fmt_encode_log_header(c->range, &lh);
        }
        c->mem_off = at + c->mem_lo;
        c->log_begun = 1;
        if ((rc = s->io->write_at(s->log, c->range, c->rlen, at)) != 0) return rc;
        counted_write(s, c->rlen);
        if ((rc = synced(s, s->log)) != 0) return rc;
        at += c->rlen;
        c->nranges++;
    } while (next_touched(c, &(cursor){ cur.a, cur.r }, &j));
    return 0;
}

static int write_records(commit *c)
{
    tide_store *s = c->s;
    uint8_t hdr[TIDE_DAT_RECORD_HEADER];
    int rc = 0;

    for (ti_pool_item *it = c->batch->first; it; it = it->after) {
        ti_put48(hdr, it->len);
        if ((rc = wbuf_put(&c->dat, it->offset, hdr, sizeof hdr)) != 0) break;
        if ((rc = wbuf_put(&c->dat, it->offset + sizeof hdr, it->data, s->key_size + (size_t)it->len)) != 0) break;
    }
    return rc;
}

static int push_vec(commit *c, size_t n, const tide_entry *e)
{
    int rc = grow(c, (void **)&c->vec, &c->vec_cap, n + 1, sizeof *c->vec);
    if (rc == 0) c->vec[n] = *e;
    return rc;
}

static int push_moved(commit *c, const tide_entry *e)
{
    int rc = grow(c, (void **)&c->moved, &c->moved_cap, c->nmoved + 1, sizeof *c->moved);
    if (rc) return rc;
    c->moved[c->nmoved++] = *e;
    return 0;
}

/* Entries of a split source: keep those that stay, move the rest. */
static int redistribute(commit *c, uint64_t j, const tide_entry *e, size_t *n)
{
    uint64_t to = table_bucket(&c->tb, e->hash);
    if (to == j) {
        int rc = push_vec(c, *n, e);
        if (rc == 0) (*n)++;
        return rc;
    }
    TIDE_ASSERT(to >= c->B0);
    return push_moved(c, e);
}
/* Write bucket j with vec[0..n) sorted and `spill` as its chain, spilling
 * full buckets to nudb.dat while there are more than `capacity` entries. */
static int emit_bucket(commit *c, uint64_t j, size_t n, uint64_t spill)
{
    tide_store *s = c->s;
    size_t full = ti_fmt_bucket_bytes(s->capacity);
    size_t at = 0;
    int rc;

    while (n - at > s->capacity) {
        uint64_t rec = c->dat.base + c->dat.len;
        ti_put48(c->block, 0);
        ti_put16(c->block + 6, full);
        ti_fmt_encode_bucket(c->block + TIDE_SPILL_HEADER, full, c->vec + at, s->capacity, spill);
        if ((rc = wbuf_put(&c->dat, rec, c->block, TIDE_SPILL_HEADER + full)) != 0) return rc;
        spill = rec + TIDE_SPILL_HEADER;
        at += s->capacity;
    }
    /* vec is NULL when no entry ever reached a bucket (an empty split). */
    ti_fmt_encode_bucket(c->block, s->block_size, n > at ? c->vec + at : NULL,
                           (unsigned)(n - at), spill);
    return wbuf_put(&c->key, (j + 1) * (uint64_t)s->block_size, c->block, s->block_size);
}

/* Append batch entries for bucket j (cursor *bi) to vec[0..n), keeping order. */
static int take_batch(commit *c, uint64_t j, size_t *bi, size_t *n, int merge)
{
    size_t start = *bi, end = *bi, total;
    int rc;
    while (end < c->n && item_bucket(c, end) == j) end++;
    *bi = end;
    if (end == start) return 0;
    total = *n + (end - start);
    if ((rc = grow(c, (void **)&c->vec, &c->vec_cap, total, sizeof *c->vec)) != 0) return rc;
    if (!merge) {
        for (size_t k = start; k < end; k++) c->vec[(*n)++] = unpack(&c->items[k]);
        return 0;
    }
    /* vec[0..n) and items[start..end) are both sorted: merge from the back. */
    size_t a = *n, b = end, w = total;
    while (b > start) {
        if (a > 0 && c->vec[a - 1].hash > placed_hash(&c->items[b - 1])) c->vec[--w] = c->vec[--a];
        else c->vec[--w] = unpack(&c->items[--b]);
    }
    *n = total;
    return 0;
}

/* A bucket that is no split source and keeps its new entries in its own
 * block (count + m <= capacity): its pre-image is copied where the block
 * will be written from and the m entries items[*bi..) are inserted in
 * place; entries below the first insertion point are not even decoded. */
static int insert_in_place(commit *c, uint64_t j, const uint8_t *pre, size_t *bi, size_t m)
{
    tide_store *s = c->s;
    size_t used = ti_fmt_bucket_bytes(ti_fmt_bucket_count(pre));
    uint8_t *out;
    int rc;

    if ((rc = grow(c, (void **)&c->vec, &c->vec_cap, m, sizeof *c->vec)) != 0) return rc;
    for (size_t k = 0; k < m; k++) c->vec[k] = unpack(&c->items[*bi + k]);
    *bi += m;
    if ((rc = wbuf_slot(&c->key, (j + 1) * (uint64_t)s->block_size, s->block_size, &out)) != 0)
        return rc;
    memcpy(out, pre, used);
    memset(out + used, 0, s->block_size - used);
    ti_fmt_bucket_insert(out, c->vec, (unsigned)m);
    return 0;
}

/* A split source's entries, its chain's and its batch entries: those that
 * stay, sorted, in vec[0..*n); the others to `moved`. */
static int gather_split(commit *c, uint64_t j, const uint8_t *pre, size_t *bi, size_t *n)
{
    tide_store *s = c->s;
    size_t full = ti_fmt_bucket_bytes(s->capacity);
    unsigned count = ti_fmt_bucket_count(pre);
    uint64_t spill = ti_fmt_bucket_spill(pre);
    tide_entry e;
    int rc;

    for (unsigned k = 0; k < count; k++) {
        ti_fmt_bucket_entry(pre, k, &e);
        if ((rc = redistribute(c, j, &e, n)) != 0) return rc;
    }
    for (uint64_t hops = 0; spill != 0; hops++) {
        if (spill < TIDE_DAT_HEADER_SIZE + TIDE_SPILL_HEADER || spill + full > c->dat0 ||
            hops > c->dat0 / full)
            return tide_err_set(TIDE_ECORRUPT, "%s: bucket %llu: spill pointer %llu is "
                                "outside the data file or loops", s->key_path,
                                (unsigned long long)j, (unsigned long long)spill);
        if ((rc = s->io->read_at(s->dat, c->block, full, spill)) != 0) return rc;
        unsigned sc = ti_fmt_bucket_count(c->block);
        if (sc > s->capacity)
            return tide_err_set(TIDE_ECORRUPT, "%s: offset %llu: spill count %u exceeds "
                                "capacity %u", s->dat_path, (unsigned long long)spill,
                                sc, s->capacity);
        for (unsigned k = 0; k < sc; k++) {
            ti_fmt_bucket_entry(c->block, k, &e);
            if ((rc = redistribute(c, j, &e, n)) != 0) return rc;
        }
        spill = ti_fmt_bucket_spill(c->block);
    }
    if ((rc = take_batch(c, j, bi, n, 0)) != 0) return rc;
    return counted_sort(c, c->vec, *n, sizeof *c->vec, cmp_entry, NULL);
}

/* One changed old bucket j, from its pre-image: a split source's entries
 * redistributed, the others' merged with what it receives (*bi: the
 * cursor in items; *ri: in roots). */
static int build_old(commit *c, uint64_t j, const uint8_t *pre, size_t *bi, size_t *ri)
{
    tide_store *s = c->s;
    unsigned count = ti_fmt_bucket_count(pre);
    size_t n = 0, m = 0;
    int rc;

    while (*bi < c->n && item_bucket(c, *bi) < j) (*bi)++;  /* (new buckets come later) */
    while (*ri < c->nroots && c->roots[*ri] < j) (*ri)++;
    if (*ri < c->nroots && c->roots[*ri] == j) {
        if ((rc = gather_split(c, j, pre, bi, &n)) != 0) return rc;
        return emit_bucket(c, j, n, 0);
    }
    while (*bi + m < c->n && item_bucket(c, *bi + m) == j) m++;
    if (count + m <= s->capacity) return insert_in_place(c, j, pre, bi, m);
    /* The bucket overflows: decode, merge and spill (emit_bucket). */
    if ((rc = grow(c, (void **)&c->vec, &c->vec_cap, count + 1, sizeof *c->vec)) != 0) return rc;
    for (unsigned k = 0; k < count; k++) ti_fmt_bucket_entry(pre, k, &c->vec[k]);
    n = count;
    if ((rc = take_batch(c, j, bi, &n, 1)) != 0) return rc;
    return emit_bucket(c, j, n, ti_fmt_bucket_spill(pre));
}

/* Step 4: build and write every changed bucket, ascending: the old ones
 * range by range (read again unless there was one range), then the new. */
static int write_buckets(commit *c)
{
    size_t bi = 0, mi = 0, ri = 0;
    uint64_t built = 0, j0;
    cursor cur = { 0, 0 };
    int rc = 0;

    /* The ranges of step 2 again: the same buckets, the same sizes. */
    for (unsigned r = 0; r == 0 || (c->nranges > 1 && next_touched(c, &(cursor){ cur.a, cur.r }, &j0));
         r++) {
        if (c->nranges > 1) {
            /* The records held now are synced in the log (invariant 5):
             * a rollback reads them back from there. */
            c->mem_off = r == 0 ? TIDE_LOG_HEADER_SIZE : c->mem_off + (c->mem_hi - c->mem_lo);
            c->mem_hi = c->mem_lo;
            if ((rc = read_range(c, &cur, r == 0)) != 0) return rc;
        }
        for (size_t at = c->mem_lo; at < c->mem_hi;) {
            uint64_t j = ti_get64(c->range + at);
            const uint8_t *pre = c->range + at + 8;
            at += 8 + ti_fmt_bucket_bytes(ti_fmt_bucket_count(pre));
            if ((rc = build_old(c, j, pre, &bi, &ri)) != 0) return rc;
            built++;
        }
    }
    TIDE_ASSERT(built == c->ntouched);

    if ((rc = counted_sort(c, c->moved, c->nmoved, sizeof *c->moved, NULL, moved_order)) != 0) return rc;
    while (bi < c->n && item_bucket(c, bi) < c->B0) bi++;
    for (uint64_t j = c->B0; j < c->B1; j++) {
        size_t n = 0;
        while (mi < c->nmoved && table_bucket(&c->tb, c->moved[mi].hash) == j) {
            if ((rc = push_vec(c, n, &c->moved[mi])) != 0) return rc;
            n++;
            mi++;
        }
        if ((rc = take_batch(c, j, &bi, &n, 1)) != 0) return rc;
        if ((rc = emit_bucket(c, j, n, 0)) != 0) return rc;
    }
    TIDE_ASSERT(mi == c->nmoved);
    TIDE_ASSERT(bi == c->n);
    if ((rc = wbuf_flush(&c->dat)) != 0) return rc;
    return wbuf_flush(&c->key);
}

/* The deferred index: the batch and the tail are in both files, synced: the key
 * file indexes everything below the data file's end (W = C = its end), and
 * the tail's entries, found there now, leave the tail. Its table is freed
 * after key_lock, so fetches never wait for an unmap. */
static void commit_indexed(commit *c)
{
    tide_store *s = c->s;
    uint64_t *old = NULL, old_slots = 0;

    pthread_rwlock_wrlock(&s->key_lock);
    if (c->tail0) {
        old = ti_tail_swap(&s->tail, NULL, 0, &old_slots);
        /* Empty, and bound by the lag's budget again (a tail recovered at
         * open was read whole, whatever its size). */
        ti_tail_init(&s->tail, s->opts.index_lag_bytes);
        __atomic_store_n(&s->tail_kept, 0, __ATOMIC_RELAXED);
        __atomic_fetch_add(&s->index_flushes, 1, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&s->dat_indexed, s->dat_size, __ATOMIC_RELEASE);
    __atomic_store_n(&s->dat_committed, s->dat_size, __ATOMIC_RELEASE);
    ti_live_publish(s);       /* tide.live: readers elsewhere see W = C */
    pthread_rwlock_unlock(&s->key_lock);
    ti_tail_free_table(old, old_slots);
}

/* The log after an undone commit. Without a lag, empty. With one (or a
 * tail recovered at open), the idle log must never go away while records
 * lie unindexed past W: the commit's log began with a header equal to the
 * idle log's (the key file's size then, and W), so cutting the log to its
 * header gives the idle log back, and a crash that loses the cut leaves
 * pre-images equal to the buckets rollback wrote. */
static int undo_log(tide_store *s)
{
    int keep = s->opts.index_lag_bytes || s->tail.count;
    int rc = s->io->truncate(s->log, keep ? TIDE_LOG_HEADER_SIZE : 0);
    if (rc == 0) rc = synced(s, s->log);
    return rc;
}

/* Write one pre-image (bucket bytes `pre`) back to bucket j as a block. */
static int put_back(commit *c, uint64_t j, const uint8_t *pre, size_t bytes)
{
    tide_store *s = c->s;
    if (c->block != pre) memcpy(c->block, pre, bytes);
    memset(c->block + bytes, 0, s->block_size - bytes);
    return s->io->write_at(s->key, c->block, s->block_size, (j + 1) * (uint64_t)s->block_size);
}

/* The pre-images of the ranges no longer in memory, read back from the
 * synced log [header, mem_off), record by record, as recovery reads them. */
static int put_back_from_log(commit *c)
{
    tide_store *s = c->s;
    uint8_t head[8 + 2];
    uint64_t at = TIDE_LOG_HEADER_SIZE;
    int rc = 0;

    while (at < c->mem_off && rc == 0) {
        if ((rc = s->io->read_at(s->log, head, sizeof head, at)) != 0) break;
        uint64_t j = ti_get64(head);
        unsigned count = ti_fmt_bucket_count(head + 8);
        size_t bytes = ti_fmt_bucket_bytes(count);
        if (j >= c->B0 || count > s->capacity || at + 8 + bytes > c->mem_off)
            return tide_err_set(TIDE_ECORRUPT, "%s: offset %llu: the commit's own record for "
                                "bucket %llu reads back wrong", s->log_path,
                                (unsigned long long)at, (unsigned long long)j);
        if ((rc = s->io->read_at(s->log, c->block, bytes, at + 8)) != 0) break;
        rc = put_back(c, j, c->block, bytes);
        at += 8 + bytes;
    }
    return rc;
}

/* Undo a commit whose log is synced: write the pre-images back (those of
 * earlier ranges from the log, the range held from memory), cut both files
 * to their old sizes, sync, empty the log. Caller holds key_lock. */
static int rollback(commit *c)
{
    tide_store *s = c->s;
    int rc = put_back_from_log(c);

    for (size_t at = c->mem_lo; at < c->mem_hi && rc == 0;) {
        const uint8_t *pre = c->range + at + 8;
        size_t bytes = ti_fmt_bucket_bytes(ti_fmt_bucket_count(pre));
        rc = put_back(c, ti_get64(c->range + at), pre, bytes);
        at += 8 + bytes;
    }
    if (rc == 0) rc = s->io->truncate(s->key, (c->B0 + 1) * (uint64_t)s->block_size);
    if (rc == 0) rc = s->io->truncate(s->dat, c->dat0);
    if (rc == 0) rc = synced(s, s->dat);
    if (rc == 0) rc = synced(s, s->key);
    if (rc == 0) rc = undo_log(s);
    return rc;
}

void ti_commit_log_header(const tide_store *s, tide_log_header *lh, uint64_t key_file_size,
                          uint64_t dat_file_size)
{
    lh->version = TIDE_FMT_VERSION;
    lh->uid = s->kh.uid;
    lh->appnum = s->kh.appnum;
    lh->key_size = s->kh.key_size;
    lh->salt = s->kh.salt;
    lh->pepper = s->kh.pepper;
    lh->block_size = s->kh.block_size;
    lh->key_file_size = key_file_size;
    lh->dat_file_size = dat_file_size;
    /* While records past W may be unindexed (a lag, or a tail recovered at
     * open), the log is one NuDB refuses (format.h): its rule would cut
     * them off. Exactly when undo_log keeps the header as the idle log. */
    lh->deferred = s->opts.index_lag_bytes || s->tail.count;
}

int ti_commit_clean_log(tide_store *s)
{
    int rc = s->io->truncate(s->log, 0);
    if (rc == 0) rc = synced(s, s->log);
    /* The deferred index: everything below the data file's end is indexed now,
     * so the moment of an empty log between these syncs is safe. */
    if (rc == 0 && s->opts.index_lag_bytes) rc = ti_defer_write_idle_log(s);
    return rc;
}

/* The buffers of steps 2 and 4, sized for what the commit changes: a
 * range of at most TI_COMMIT_RANGE_BYTES (ti_commit_set_range_bytes in
 * tests), never less than the header and one whole bucket. */
static int range_buffers(commit *c)
{
    tide_store *s = c->s;
    size_t most = 8 + ti_fmt_bucket_bytes(s->capacity), bs = s->block_size;
    size_t least = 8 + ti_fmt_bucket_bytes(0);
    size_t knob = __atomic_load_n(&range_bytes_knob, __ATOMIC_RELAXED);
    uint64_t need = TIDE_LOG_HEADER_SIZE + c->ntouched * (uint64_t)most;

    c->range_cap = knob ? knob : TI_COMMIT_RANGE_BYTES;
    if (need < c->range_cap) c->range_cap = (size_t)need;
    if (c->range_cap < TIDE_LOG_HEADER_SIZE + most) c->range_cap = TIDE_LOG_HEADER_SIZE + most;
    c->run_blocks = WBUF_SIZE / bs ? WBUF_SIZE / bs : 1;
    if (c->run_blocks > c->range_cap / least) c->run_blocks = c->range_cap / least;
    if (c->ntouched && c->run_blocks > c->ntouched) c->run_blocks = (size_t)c->ntouched;
    c->range = buf_alloc(c, c->range_cap);
    c->run = buf_alloc(c, c->run_blocks * bs);
    if (c->range == NULL || c->run == NULL)
        return tide_err_set(TIDE_ENOMEM, "commit: out of memory for the log (%zu bytes)", c->range_cap);
    return 0;
}

/* The failed commit's rollback, under key_lock (taken here if the caller
 * does not hold it): *end TI_COMMIT_BROKEN when it fails too. */
static void undo(commit *c, int rc, int locked, ti_commit_end *end)
{
    tide_store *s = c->s;
    char msg[512];
    int rb;

    snprintf(msg, sizeof msg, "%s", tide_last_error());
    if (!locked) pthread_rwlock_wrlock(&s->key_lock);
    ti_live_rollback(s);    /* tide.live: odd (already, if the write phase failed), GEN bumped */
    s->buckets = c->B0;
    __atomic_store_n(&s->dat_size, c->dat0, __ATOMIC_RELEASE);
    __atomic_store_n(&s->dat_indexed, c->W0, __ATOMIC_RELEASE);
    __atomic_store_n(&s->dat_committed, c->C0, __ATOMIC_RELEASE);
    rb = rollback(c);
    /* A failed rollback leaves seq odd: readers report the store as
     * needing recovery (the handle is broken; live.c). */
    if (rb == 0) ti_live_end(s);
    else ti_live_broken(s);  /* tide.live: readers say "restart the writer" at once */
    if (rb) {
        *end = TI_COMMIT_BROKEN;
        tide_log(TIDE_LOG_ERROR, "%s: rolling back a failed commit failed too (%s); the store "
                 "is closed for writes and recovers from nudb.log at the next open",
                 s->dir, tide_last_error());
    }
    pthread_rwlock_unlock(&s->key_lock);
    tide_err_set(rc, "%s", msg);
}

static void free_buffers(commit *c)
{
    tide_store *s = c->s;
    size_t kcap = WBUF_SIZE > s->block_size ? WBUF_SIZE : s->block_size;

    buf_free(c, c->items, (c->n ? c->n : 1) * sizeof *c->items);
    buf_free(c, c->roots, (c->B1 - c->B0) * sizeof *c->roots);
    buf_free(c, c->range, c->range_cap);
    buf_free(c, c->run, c->run_blocks * s->block_size);
    buf_free(c, c->moved, c->moved_cap * sizeof *c->moved);
    buf_free(c, c->vec, c->vec_cap * sizeof *c->vec);
    if (c->block) account(c, -(int64_t)c->block_bytes);
    free(c->block);
    buf_free(c, c->dat.data, WBUF_SIZE);
    buf_free(c, c->key.data, kcap);
    TIDE_ASSERT(c->live == 0);
    __atomic_store_n(&s->commit_buffer_bytes, 0, __ATOMIC_RELAXED);
}

int ti_commit_batch(tide_store *s, ti_pool *batch, ti_commit_end *end)
{
    size_t kcap = WBUF_SIZE > s->block_size ? WBUF_SIZE : s->block_size;
    commit c;
    int rc, locked = 0, logged = 0;

    *end = TI_COMMIT_UNDONE;
    memset(&c, 0, sizeof c);
    c.s = s;
    c.batch = batch;
    c.block_bytes = TIDE_SPILL_HEADER + (size_t)s->block_size;
    c.block = malloc(c.block_bytes);
    if (c.block) {
        note(s, c.block_bytes);
        account(&c, (int64_t)c.block_bytes);
    }
    c.dat.data = buf_alloc(&c, WBUF_SIZE);
    c.key.data = buf_alloc(&c, kcap);
    if (!c.block || !c.dat.data || !c.key.data) { rc = tide_err_set(TIDE_ENOMEM, "commit: out of memory"); goto out; }
    c.dat = (wbuf){ s, s->dat, s->dat_size, c.dat.data, 0, WBUF_SIZE };
    c.key = (wbuf){ s, s->key, 0, c.key.data, 0, kcap };

    if ((rc = plan(&c)) != 0) goto out;
    if ((rc = range_buffers(&c)) != 0) goto out;
    rc = log_preimages(&c);
    if (rc) {
        /* The key and data files are untouched; the log holds pre-images
         * equal to the buckets on disk (synced or not). */
        if (c.log_begun) undo_log(s);
        goto out;
    }
    logged = 1;
    if ((rc = write_records(&c)) != 0) goto out;
    /* write_records leaves the tail of the records in the buffer; spill
     * records follow them, so the buffer carries on. */
    pthread_rwlock_wrlock(&s->key_lock);
    locked = 1;
    ti_live_begin(s);           /* tide.live: readers elsewhere wait (live.c) */
    if ((rc = write_buckets(&c)) != 0) goto out;
    s->buckets = c.B1;
    __atomic_store_n(&s->dat_size, c.dat.base + c.dat.len, __ATOMIC_RELEASE);
    /* Every record and spill record is in the buckets just written:
     * W = C = the data file's end, which the page publishes (a reader's
     * bound on the spill records it may follow). A rollback puts back the
     * W and C before the commit; commit_indexed sets them again once both
     * files are synced. */
    __atomic_store_n(&s->dat_indexed, s->dat_size, __ATOMIC_RELEASE);
    __atomic_store_n(&s->dat_committed, s->dat_size, __ATOMIC_RELEASE);
    ti_live_end(s);
    pthread_rwlock_unlock(&s->key_lock);
    locked = 0;

    if ((rc = synced(s, s->dat)) != 0) goto out;
    if ((rc = synced(s, s->key)) != 0) goto out;
    /* The batch is in both files. From here a failure must not roll back:
     * the log's truncation may already be on its way to the disk, and
     * pre-images written under a log that may be gone are not undoable. */
    *end = TI_COMMIT_APPLIED;
    logged = 0;
    ti_store_dat_stable(s, s->dat_size);    /* no rollback cuts it now (lookup.c) */
    s->split_credit = (s->split_credit + c.n * 65536) % s->split_units;
    s->split_owed -= c.paid;
    commit_indexed(&c);
    rc = ti_commit_clean_log(s);
    if (rc == 0) *end = TI_COMMIT_DONE;
out:
    if (rc && logged) undo(&c, rc, locked, end);
    else if (locked) pthread_rwlock_unlock(&s->key_lock);
    free_buffers(&c);
    return rc;
}
