/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * commit.c: one commit of the insert pool to the three files.
 *
 * A commit is NuDB's undo-log protocol with its steps batched:
 *
 *   1. Plan in memory: give every pending record its offset at the end of
 *      nudb.dat; grow the table from B0 to B1 buckets (linear hashing, one
 *      split every capacity * load_factor inserts); list the old buckets the
 *      commit changes (those that receive entries, and the sources of the
 *      splits) in ascending order.
 *   2. Read those buckets' pre-images and write nudb.log in one write: the
 *      header (with the key and data file sizes before the commit) and one
 *      record per changed old bucket. Sync the log.
 *   3. Append the records to nudb.dat.
 *   4. Under key_lock (write), build every changed bucket from its pre-image,
 *      the entries it receives and (for a split source) its spill chain,
 *      spilling full buckets to nudb.dat; write the blocks in ascending
 *      order, coalescing neighbours into large writes; publish B1.
 *      A bucket that is no split source and keeps its new entries in its
 *      block (the common case) is built in the write buffer itself: its
 *      pre-image is copied there and the entries are inserted in place
 *      (ti_fmt_bucket_insert: a binary search and one memmove per gap), so
 *      a commit's cost per bucket is a copy of its bytes, not a decode and
 *      re-encode of every entry. Buckets that overflow and split sources
 *      are decoded, merged or sorted, and encoded as before; the bytes
 *      written are the same either way (tests/test_store_commit_bytes.c).
 *   5. Sync nudb.dat, then nudb.key. Truncate nudb.log to 0 and sync it.
 *
 * With the deferred index (issue 15, defer.c) the same commit is the
 * flush: the tail's entries (records already in nudb.dat below C) are
 * indexed with the batch's, the log header's dat_file_size is W (the end of
 * the indexed records, not the file's end, so that any rollback keeps the
 * tail), an undone flush cuts the log back to that header (the idle log)
 * instead of emptying it, and a completed one empties the tail and raises
 * W to the data file's end (commit_indexed) before the idle log is written.
 *
 * The log is written with a single write so that a crash leaves a prefix
 * of it (header first), never a hole that would read as a record for
 * bucket 0. Pre-images are taken from memory in step 4, so each changed
 * bucket is read once per commit.
 *
 * Invariants:
 *   1. No key-file block is written before the log that holds its
 *      pre-image is synced (step 2 before step 4).
 *   2. Every entry sits in the bucket bucket_index(hash, buckets) names, or
 *      in that bucket's spill chain; spill records hold exactly `capacity`
 *      entries; every bucket is sorted by hash.
 *   3. The key file is (buckets + 1) * block_size bytes after every commit.
 *   4. On failure after step 2 and before both files are synced, the files
 *      are rolled back from the in-memory pre-images before the error is
 *      returned; if that fails the store is marked broken (TI_COMMIT_BROKEN)
 *      and the synced log remains for recovery. A failure to empty the log
 *      after both syncs is not rolled back (TI_COMMIT_APPLIED): the batch
 *      is in the files, and it is acknowledged only once the log is empty
 *      (the commit thread retries ti_commit_clean_log); a crash before that
 *      undoes it.
 *
 * Every buffer a commit allocates (or grows) goes to the store's
 * note_alloc with the bytes asked for (note(): churn totals, issue 13).
 *
 * Never: overwrite a bucket before its pre-image is synced; rewrite a
 *   spill record (they are immutable; a split leaves the old chain as waste).
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

typedef struct placed {
    uint64_t bucket;
    tide_entry e;
} placed;

/* A write-combining buffer over one file: bytes for [base, base + len). */
typedef struct wbuf {
    tide_store *s;
    tide_file *f;
    uint64_t base;
    uint8_t *data;
    size_t len, cap;
} wbuf;

typedef struct commit {
    tide_store *s;
    ti_pool *batch;
    uint64_t B0, B1, dat0, dat_end;
    uint64_t W0, C0;             /* dat_indexed, dat_committed before it */
    uint64_t n;                  /* items: the tail's entries and the batch's */
    uint64_t tail0;              /* entries the tail held (a flush when > 0) */
    placed *items;               /* the tail's and batch's entries, by (bucket, hash) */
    uint64_t *touched;           /* changed old buckets, ascending */
    uint8_t *split;              /* touched[i] is a split source */
    size_t *pre;                 /* offset of touched[i]'s pre-image in log */
    size_t ntouched, touched_cap;
    uint8_t *log;
    size_t log_len, log_cap;
    placed *moved;               /* entries leaving split sources */
    size_t nmoved, moved_cap;
    tide_entry *vec;             /* the bucket being built */
    size_t vec_cap;
    uint8_t *block;              /* a spill record or chain read */
    wbuf dat, key;
} commit;

static int cmp_placed(const void *a, const void *b)
{
    const placed *x = a, *y = b;
    if (x->bucket != y->bucket) return x->bucket < y->bucket ? -1 : 1;
    if (x->e.hash != y->e.hash) return x->e.hash < y->e.hash ? -1 : 1;
    return 0;
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

/* Churn totals (issue 13): one commit buffer of `bytes`, for the store's
 * note_alloc (tide_store_opts). */
static void note(const tide_store *s, size_t bytes)
{
    if (s->opts.note_alloc && s->opts.commit_account_id >= 0)
        s->opts.note_alloc(s->opts.commit_account_id, (int64_t)bytes);
}

/* tide_big_alloc, noted. */
static void *buf_alloc(const tide_store *s, size_t n)
{
    void *p = tide_big_alloc(n);
    if (p) note(s, n);
    return p;
}

static int grow(const tide_store *s, void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 256;
    while (n < need) n *= 2;
    void *p = tide_big_realloc(*arr, *cap * elem, n * elem);
    if (p == NULL) return tide_err_set(TIDE_ENOMEM, "commit: out of memory (%zu bytes)", n * elem);
    note(s, n * elem);
    *arr = p;
    *cap = n;
    return 0;
}

/* The old bucket a new bucket's entries come from, following splits of
 * buckets that are themselves new in this commit. */
static uint64_t split_root(uint64_t i, uint64_t B0)
{
    while (i >= B0) i -= ti_fmt_ceil_pow2(i + 1) / 2;
    return i;
}

/* Step 1: offsets, placement, the list of changed old buckets. */
static int plan(commit *c)
{
    tide_store *s = c->s;
    uint64_t credit, n, off = s->dat_size, k = 0;
    uint64_t *roots = NULL;
    size_t nroots = 0, nt = 0;
    int rc = 0;

    /* Issue 15 (D): a flush indexes the tail's entries with the batch's. */
    c->tail0 = s->tail.count;
    n = c->n = c->tail0 + c->batch->count;
    credit = s->split_credit + n * 65536;
    c->B0 = s->buckets;
    c->B1 = c->B0 + credit / s->split_units;
    c->dat0 = s->dat_size;
    c->W0 = s->dat_indexed;
    c->C0 = s->dat_committed;

    c->items = buf_alloc(s, (n ? n : 1) * sizeof *c->items);
    if (c->items == NULL) return tide_err_set(TIDE_ENOMEM, "commit: out of memory for %llu entries",
                                              (unsigned long long)n);
    for (uint64_t i = 0; i < s->tail.nslots && k < c->tail0; i++) {
        if (!ti_tail_slot(&s->tail, i, &c->items[k].e)) continue;
        c->items[k].bucket = ti_fmt_bucket_index(c->items[k].e.hash, c->B1);
        k++;
    }
    TIDE_ASSERT(k == c->tail0);
    for (ti_pool_item *it = c->batch->first; it; it = it->after, k++) {
        it->offset = off;
        c->items[k].bucket = ti_fmt_bucket_index(it->hash, c->B1);
        c->items[k].e.offset = off;
        c->items[k].e.size = it->len;
        c->items[k].e.hash = it->hash;
        off += TIDE_DAT_RECORD_HEADER + s->key_size + (uint64_t)it->len;
    }
    c->dat_end = off;
    if ((rc = tide_big_sort(c->items, n, sizeof *c->items, cmp_placed)) != 0) return rc;

    if (c->B1 > c->B0) {
        roots = malloc((c->B1 - c->B0) * sizeof *roots);
        if (roots == NULL) { rc = tide_err_set(TIDE_ENOMEM, "commit: out of memory"); goto out; }
        note(s, (c->B1 - c->B0) * sizeof *roots);
        for (uint64_t i = c->B0; i < c->B1; i++) roots[nroots++] = split_root(i, c->B0);
        if ((rc = tide_big_sort(roots, nroots, sizeof *roots, cmp_u64)) != 0) goto out;
    }
    c->touched_cap = n + nroots + 1;
    c->touched = buf_alloc(s, c->touched_cap * sizeof *c->touched);
    c->split = buf_alloc(s, c->touched_cap);
    c->pre = buf_alloc(s, c->touched_cap * sizeof *c->pre);
    if (!c->touched || !c->split || !c->pre) { rc = tide_err_set(TIDE_ENOMEM, "commit: out of memory"); goto out; }
    /* Merge the batch's old buckets with the split roots, ascending, unique. */
    size_t a = 0, r = 0;
    while (a < n || r < nroots) {
        uint64_t next;
        int is_root = 0;
        while (a < n && c->items[a].bucket >= c->B0) a++;   /* new buckets: not pre-imaged */
        if (a >= n && r >= nroots) break;
        if (r < nroots && (a >= n || roots[r] <= c->items[a].bucket)) { next = roots[r]; is_root = 1; }
        else next = c->items[a].bucket;
        if (nt > 0 && c->touched[nt - 1] == next) c->split[nt - 1] |= (uint8_t)is_root;
        else { c->touched[nt] = next; c->split[nt] = (uint8_t)is_root; nt++; }
        if (is_root) r++;
        else a++;
    }
    c->ntouched = nt;
out:
    free(roots);
    return rc;
}

/* Step 2: pre-images into the log buffer, read in runs of adjacent blocks. */
static int read_preimages(commit *c)
{
    tide_store *s = c->s;
    size_t bs = s->block_size, run_max = WBUF_SIZE / bs ? WBUF_SIZE / bs : 1;
    size_t cap = TIDE_LOG_HEADER_SIZE, i = 0;
    uint8_t *run = NULL;
    int rc = 0;

    for (size_t t = 0; t < c->ntouched; t++) cap += 8 + ti_fmt_bucket_bytes(s->capacity);
    c->log = buf_alloc(s, cap);
    c->log_cap = cap;
    run = buf_alloc(s, run_max * bs);
    if (c->log == NULL || run == NULL) { rc = tide_err_set(TIDE_ENOMEM, "commit: out of memory for the log (%zu bytes)", cap); goto out; }
    c->log_len = TIDE_LOG_HEADER_SIZE;
    while (i < c->ntouched) {
        size_t n = 1;
        while (i + n < c->ntouched && n < run_max && c->touched[i + n] == c->touched[i] + n) n++;
        rc = s->io->read_at(s->key, run, n * bs, (c->touched[i] + 1) * bs);
        if (rc) goto out;
        for (size_t k = 0; k < n; k++) {
            const uint8_t *b = run + k * bs;
            unsigned count = ti_fmt_bucket_count(b);
            if (count > s->capacity) {
                rc = tide_err_set(TIDE_ECORRUPT, "%s: bucket %llu: count %u exceeds capacity %u",
                                  s->key_path, (unsigned long long)c->touched[i + k], count, s->capacity);
                goto out;
            }
            ti_put64(c->log + c->log_len, c->touched[i + k]);
            c->pre[i + k] = c->log_len + 8;
            memcpy(c->log + c->log_len + 8, b, ti_fmt_bucket_bytes(count));
            c->log_len += 8 + ti_fmt_bucket_bytes(count);
        }
        i += n;
    }
out:
    tide_big_free(run, run_max * bs);
    return rc;
}

static int write_log(commit *c)
{
    tide_store *s = c->s;
    tide_log_header lh;
    int rc;

    /* dat_file_size is W, not the data file's end: while the index lags,
     * a rollback (NuDB's or Tide's) must cut nudb.dat back no further
     * than the indexed records, and Tide's recovery keeps [W, C) (issue
     * 15, D). Without a tail W is dat0. */
    ti_commit_log_header(s, &lh, (c->B0 + 1) * s->block_size, s->dat_indexed);
    ti_fmt_encode_log_header(c->log, &lh);
    rc = s->io->write_at(s->log, c->log, c->log_len, 0);
    if (rc) return rc;
    counted_write(s, c->log_len);
    return synced(s, s->log);
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
    int rc = grow(c->s, (void **)&c->vec, &c->vec_cap, n + 1, sizeof *c->vec);
    if (rc == 0) c->vec[n] = *e;
    return rc;
}

static int push_moved(commit *c, uint64_t bucket, const tide_entry *e)
{
    int rc = grow(c->s, (void **)&c->moved, &c->moved_cap, c->nmoved + 1, sizeof *c->moved);
    if (rc) return rc;
    c->moved[c->nmoved].bucket = bucket;
    c->moved[c->nmoved].e = *e;
    c->nmoved++;
    return 0;
}

/* Entries of a split source: keep those that stay, move the rest. */
static int redistribute(commit *c, uint64_t j, const tide_entry *e, size_t *n)
{
    uint64_t to = ti_fmt_bucket_index(e->hash, c->B1);
    if (to == j) {
        int rc = push_vec(c, *n, e);
        if (rc == 0) (*n)++;
        return rc;
    }
    TIDE_ASSERT(to >= c->B0);
    return push_moved(c, to, e);
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
    while (end < c->n && c->items[end].bucket == j) end++;
    *bi = end;
    if (end == start) return 0;
    total = *n + (end - start);
    if ((rc = grow(c->s, (void **)&c->vec, &c->vec_cap, total, sizeof *c->vec)) != 0) return rc;
    if (!merge) {
        for (size_t k = start; k < end; k++) c->vec[(*n)++] = c->items[k].e;
        return 0;
    }
    /* vec[0..n) and items[start..end) are both sorted: merge from the back. */
    size_t a = *n, b = end, w = total;
    while (b > start) {
        if (a > 0 && c->vec[a - 1].hash > c->items[b - 1].e.hash) c->vec[--w] = c->vec[--a];
        else c->vec[--w] = c->items[--b].e;
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

    if ((rc = grow(s, (void **)&c->vec, &c->vec_cap, m, sizeof *c->vec)) != 0) return rc;
    for (size_t k = 0; k < m; k++) c->vec[k] = c->items[*bi + k].e;
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
    return tide_big_sort(c->vec, *n, sizeof *c->vec, cmp_entry);
}

/* Step 4: build and write every changed bucket, ascending. */
static int write_buckets(commit *c)
{
    tide_store *s = c->s;
    size_t bi = 0, mi = 0;
    int rc = 0;

    for (size_t t = 0; t < c->ntouched; t++) {
        uint64_t j = c->touched[t];
        const uint8_t *pre = c->log + c->pre[t];
        unsigned count = ti_fmt_bucket_count(pre);
        size_t n = 0, m = 0;

        while (bi < c->n && c->items[bi].bucket < j) bi++;  /* (new buckets come later) */
        if (c->split[t]) {
            if ((rc = gather_split(c, j, pre, &bi, &n)) != 0) return rc;
            if ((rc = emit_bucket(c, j, n, 0)) != 0) return rc;
            continue;
        }
        while (bi + m < c->n && c->items[bi + m].bucket == j) m++;
        if (count + m <= s->capacity) {
            if ((rc = insert_in_place(c, j, pre, &bi, m)) != 0) return rc;
            continue;
        }
        /* The bucket overflows: decode, merge and spill (emit_bucket). */
        if ((rc = grow(c->s, (void **)&c->vec, &c->vec_cap, count + 1, sizeof *c->vec)) != 0) return rc;
        for (unsigned k = 0; k < count; k++) ti_fmt_bucket_entry(pre, k, &c->vec[k]);
        n = count;
        if ((rc = take_batch(c, j, &bi, &n, 1)) != 0) return rc;
        if ((rc = emit_bucket(c, j, n, ti_fmt_bucket_spill(pre))) != 0) return rc;
    }

    if ((rc = tide_big_sort(c->moved, c->nmoved, sizeof *c->moved, cmp_placed)) != 0) return rc;
    while (bi < c->n && c->items[bi].bucket < c->B0) bi++;
    for (uint64_t j = c->B0; j < c->B1; j++) {
        size_t n = 0;
        while (mi < c->nmoved && c->moved[mi].bucket == j) {
            if ((rc = push_vec(c, n, &c->moved[mi].e)) != 0) return rc;
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

/* Issue 15 (D): the batch and the tail are in both files, synced: the key
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
        s->tail.count = 0;
        __atomic_fetch_add(&s->index_flushes, 1, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&s->dat_indexed, s->dat_size, __ATOMIC_RELEASE);
    __atomic_store_n(&s->dat_committed, s->dat_size, __ATOMIC_RELEASE);
    ti_live_publish(s);       /* issue 15 (R): readers elsewhere see W = C */
    pthread_rwlock_unlock(&s->key_lock);
    ti_tail_free_table(old, old_slots);
}

/* The log after an undone commit. Without a lag, empty. With one (or a
 * tail recovered at open), the idle log must never go away while records
 * lie unindexed past W: the commit's log began with a header equal to the
 * idle log's (the key file's size then, and W), so cutting the log to its
 * header gives the idle log back, and a crash that loses the cut leaves
 * pre-images equal to the buckets rollback wrote (issue 15, D). */
static int undo_log(tide_store *s)
{
    int keep = s->opts.index_lag_bytes || s->tail.count;
    int rc = s->io->truncate(s->log, keep ? TIDE_LOG_HEADER_SIZE : 0);
    if (rc == 0) rc = synced(s, s->log);
    return rc;
}

/* Undo a commit whose log is synced: write the pre-images back, cut both
 * files to their old sizes, sync, empty the log. Caller holds key_lock. */
static int rollback(commit *c)
{
    tide_store *s = c->s;
    int rc = 0;

    for (size_t t = 0; t < c->ntouched && rc == 0; t++) {
        const uint8_t *pre = c->log + c->pre[t];
        memset(c->block, 0, s->block_size);
        memcpy(c->block, pre, ti_fmt_bucket_bytes(ti_fmt_bucket_count(pre)));
        rc = s->io->write_at(s->key, c->block, s->block_size, (c->touched[t] + 1) * (uint64_t)s->block_size);
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
}

int ti_commit_clean_log(tide_store *s)
{
    int rc = s->io->truncate(s->log, 0);
    if (rc == 0) rc = synced(s, s->log);
    /* Issue 15 (D): everything below the data file's end is indexed now,
     * so the moment of an empty log between these syncs is safe. */
    if (rc == 0 && s->opts.index_lag_bytes) rc = ti_defer_write_idle_log(s);
    return rc;
}

int ti_commit_batch(tide_store *s, ti_pool *batch, ti_commit_end *end)
{
    commit c;
    int rc, locked = 0, logged = 0;

    *end = TI_COMMIT_UNDONE;
    memset(&c, 0, sizeof c);
    c.s = s;
    c.batch = batch;
    c.block = malloc(TIDE_SPILL_HEADER + (size_t)s->block_size);
    if (c.block) note(s, TIDE_SPILL_HEADER + (size_t)s->block_size);
    c.dat.data = buf_alloc(s, WBUF_SIZE);
    c.key.data = buf_alloc(s, WBUF_SIZE > s->block_size ? WBUF_SIZE : s->block_size);
    if (!c.block || !c.dat.data || !c.key.data) { rc = tide_err_set(TIDE_ENOMEM, "commit: out of memory"); goto out; }
    c.dat = (wbuf){ s, s->dat, s->dat_size, c.dat.data, 0, WBUF_SIZE };
    c.key = (wbuf){ s, s->key, 0, c.key.data, 0, WBUF_SIZE > s->block_size ? WBUF_SIZE : s->block_size };

    if ((rc = plan(&c)) != 0) goto out;
    if ((rc = read_preimages(&c)) != 0) goto out;
    __atomic_store_n(&s->commit_buffer_bytes,
                     c.log_cap + c.n * sizeof(placed) + c.touched_cap * 17 + 2 * WBUF_SIZE,
                     __ATOMIC_RELAXED);
    rc = write_log(&c);
    if (rc) {
        /* The key and data files are untouched; an unsynced or partial log
         * only holds pre-images equal to the buckets on disk. */
        undo_log(s);
        goto out;
    }
    logged = 1;
    if ((rc = write_records(&c)) != 0) goto out;
    /* write_records leaves the tail of the records in the buffer; spill
     * records follow them, so the buffer carries on. */
    pthread_rwlock_wrlock(&s->key_lock);
    locked = 1;
    ti_live_begin(s);           /* issue 15 (R): readers elsewhere wait (live.c) */
    if ((rc = write_buckets(&c)) != 0) goto out;
    s->buckets = c.B1;
    __atomic_store_n(&s->dat_size, c.dat.base + c.dat.len, __ATOMIC_RELEASE);
    /* Every record and spill record is in the buckets just written:
     * W = C = the data file's end, which the page publishes (a reader's
     * bound on the spill records it may follow). A rollback puts back the
     * W and C before the commit; commit_indexed sets them again once both
     * files are synced (issue 15, R and D). */
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
    ti_store_dat_stable(s, s->dat_size);    /* no rollback cuts it now (store.c) */
    s->split_credit = (s->split_credit + c.n * 65536) % s->split_units;
    commit_indexed(&c);
    rc = ti_commit_clean_log(s);
    if (rc == 0) *end = TI_COMMIT_DONE;
out:
    if (rc && logged) {
        int rb;
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tide_last_error());
        if (!locked) pthread_rwlock_wrlock(&s->key_lock);
        locked = 1;
        ti_live_rollback(s);    /* issue 15 (R): odd (already, if the write phase failed), GEN bumped */
        s->buckets = c.B0;
        __atomic_store_n(&s->dat_size, c.dat0, __ATOMIC_RELEASE);
        __atomic_store_n(&s->dat_indexed, c.W0, __ATOMIC_RELEASE);
        __atomic_store_n(&s->dat_committed, c.C0, __ATOMIC_RELEASE);
        rb = rollback(&c);
        /* A failed rollback leaves seq odd: readers report the store as
         * needing recovery (the handle is broken; live.c). */
        if (rb == 0) ti_live_end(s);
        else ti_live_broken(s);  /* issue 15 (R): readers say "restart the writer" at once */
        if (rb) {
            *end = TI_COMMIT_BROKEN;
            tide_log(TIDE_LOG_ERROR, "%s: rolling back a failed commit failed too (%s); the store "
                     "is closed for writes and recovers from nudb.log at the next open",
                     s->dir, tide_last_error());
        }
        tide_err_set(rc, "%s", msg);
    }
    if (locked) pthread_rwlock_unlock(&s->key_lock);
    __atomic_store_n(&s->commit_buffer_bytes, 0, __ATOMIC_RELAXED);
    tide_big_free(c.items, (c.n ? c.n : 1) * sizeof *c.items);
    tide_big_free(c.touched, c.touched_cap * sizeof *c.touched);
    tide_big_free(c.split, c.touched_cap);
    tide_big_free(c.pre, c.touched_cap * sizeof *c.pre);
    tide_big_free(c.log, c.log_cap);
    tide_big_free(c.moved, c.moved_cap * sizeof *c.moved);
    tide_big_free(c.vec, c.vec_cap * sizeof *c.vec);
    free(c.block);
    tide_big_free(c.dat.data, WBUF_SIZE);
    tide_big_free(c.key.data, WBUF_SIZE > s->block_size ? WBUF_SIZE : s->block_size);
    return rc;
}
