/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * defer.c: the deferred index: the key file lags behind the
 * data file, so that each bucket is written once for many items.
 *
 * nudb.dat is a redo log of every record already; the key file is only its
 * index. With tide_store_opts.index_lag_bytes > 0 a commit is two phases:
 *
 *   Phase A (every commit, append_batch): the batch's records are appended
 *     at the data file's end and synced; tide.meta's dat_committed (C) is
 *     raised to the new end and synced (meta.c). The batch is durable, and
 *     its entries go to the in-memory tail (tail.c), which fetch and the
 *     duplicate check consult between the pools and the key file.
 *   Phase B (the flush: when the tail cannot take the next batch, and at
 *     close): ti_commit_batch indexes the tail's entries and the batch's
 *     together under the undo-log protocol (log header and pre-images,
 *     records, spills, buckets, sync dat, sync key), and then writes the
 *     idle log instead of an empty one.
 *
 * Layout of the files while deferring:
 *
 *   nudb.dat  [header | indexed records and spills ... W | tail ... C | junk]
 *   nudb.log  the idle log: a header alone, key_file_size the key file's
 *             size, dat_file_size W (never empty between commits), its
 *             pepper field marked (format.h) so that NuDB refuses it
 *   tide.meta (seq, uid, W, C, key file size), two slots
 *
 * Recovery (recover.c) reads W from the log and C from tide.meta, keeps
 * nudb.dat up to max(W, C), and the open reads [W, C) back into the tail
 * (recover_tail) and flushes it; on a full disk the tail stays in memory
 * under the idle log and the commit thread retries the flush. NuDB, opening the same files, refuses the
 * marked log before it changes anything.
 *
 * Invariants:
 *   1. tide.meta is written only after the records below its C are
 *      synced, and says W and the key file's size as the idle log says
 *      them: a slot that differs from the log is stale (a flush has moved
 *      W past its C since), and so is any slot under a log without the
 *      deferred mark (another writer's: format.h); recovery ignores both.
 *      Recovery reads every record of [W, C) (ti_defer_walk_tail) before
 *      it writes anything.
 *   2. While a record past W is unindexed, nudb.log holds a header with
 *      dat_file_size W: the idle log exists before the first phase A
 *      (committer.c prepare_files), a flush's log starts with the same header, and an
 *      undone flush cuts the log back to it (commit.c undo_log).
 *   3. The tail holds exactly the entries of the data records in [W, C),
 *      at most ti_tail_limit of them; its table is changed under key_lock
 *      (write), grown outside it (ti_tail_prepare) and swapped in.
 *   4. A phase A that fails before tide.meta is written leaves the files
 *      as before (nudb.dat cut back); one that fails writing tide.meta is
 *      BROKEN: which slot the disk holds cannot be told, and either is
 *      sound (the records are synced), so the next open recovers.
 *
 * Never: empty nudb.log while the tail is not empty; raise C before the
 *   records are synced; acknowledge a batch whose entries are not findable.
 */
#include <stdlib.h>
#include <string.h>

#include "store/meta.h"
#include "store/store_impl.h"
#include "util/assert.h"
#include "util/bigbuf.h"
#include "util/err.h"
#include "util/log.h"
#include "util/size.h"

#define APPEND_BUF (1u << 20)

static int synced(tide_store *s, tide_file *f)
{
    int rc = s->io->sync(f);
    if (rc == 0) __atomic_fetch_add(&s->syncs, 1, __ATOMIC_RELAXED);
    return rc;
}

static int write_counted(tide_store *s, tide_file *f, const void *p, size_t n, uint64_t off)
{
    int rc = s->io->write_at(f, p, n, off);
    if (rc == 0) __atomic_fetch_add(&s->bytes_written, n, __ATOMIC_RELAXED);
    return rc;
}

int ti_defer_write_idle_log(tide_store *s)
{
    uint8_t buf[TIDE_LOG_HEADER_SIZE];
    tide_log_header lh;
    int rc;

    ti_commit_log_header(s, &lh, (s->buckets + 1) * (uint64_t)s->block_size, s->dat_indexed);
    ti_fmt_encode_log_header(buf, &lh);
    rc = write_counted(s, s->log, buf, sizeof buf, 0);
    if (rc == 0) rc = synced(s, s->log);
    return rc;
}

int ti_defer_open_meta(tide_store *s)
{
    ti_meta m;
    int valid = 0, existed, rc;

    if (s->meta_path == NULL && (s->meta_path = ti_path_join(s->dir, TI_META_NAME)) == NULL)
        return tide_err_set(TIDE_ENOMEM, "open: out of memory");
    if ((rc = ti_meta_read(s->io, s->meta_path, s->kh.uid, &m, &valid)) != 0) return rc;
    s->meta_seq = m.seq;
    existed = s->io->stat(s->io, s->meta_path, NULL) == 0;
    if ((rc = s->io->open(s->io, s->meta_path, TIDE_IO_CREATE, &s->meta)) != 0) return rc;
    /* A slot for the files as they are now, before the first idle log: a
     * slot left from before NuDB recovered the store (it cut nudb.dat to
     * W and removed the log) would otherwise match a later idle log's W and
     * claim records that are gone. */
    m = (ti_meta){ s->meta_seq, s->kh.uid, s->dat_indexed, s->dat_committed,
                   (s->buckets + 1) * (uint64_t)s->block_size };
    rc = ti_meta_write(s->io, s->meta, &m);
    s->meta_seq = m.seq;
    if (rc) {
        /* Closed, to be opened again by the next try; a file this call
         * made holds no slot anyone needs (no phase A has run). */
        s->io->close(s->meta);
        s->meta = NULL;
        if (!existed) s->io->unlink(s->io, s->meta_path);
    }
    return rc;
}

/* The batch's records, appended at the data file's end in writes of up to
 * `cap` bytes through `buf`; each item's offset is set. */
static int append_records(tide_store *s, ti_pool *batch, uint8_t *buf, size_t cap)
{
    uint64_t off = s->dat_size, base = off;
    size_t len = 0;
    int rc = 0;

    for (ti_pool_item *it = batch->first; it && rc == 0; it = it->after) {
        size_t rec = TIDE_DAT_RECORD_HEADER + s->key_size + (size_t)it->len;
        it->offset = off;
        off += rec;
        if (len + rec > cap && len) {
            rc = write_counted(s, s->dat, buf, len, base);
            base += len;
            len = 0;
        }
        if (rc) break;
        if (rec > cap) {                /* a value larger than the buffer */
            uint8_t hdr[TIDE_DAT_RECORD_HEADER];
            ti_put48(hdr, it->len);
            rc = write_counted(s, s->dat, hdr, sizeof hdr, base);
            if (rc == 0) rc = write_counted(s, s->dat, it->data, rec - sizeof hdr, base + sizeof hdr);
            base += rec;
            continue;
        }
        ti_put48(buf + len, it->len);
        memcpy(buf + len + TIDE_DAT_RECORD_HEADER, it->data, rec - TIDE_DAT_RECORD_HEADER);
        len += rec;
    }
    if (rc == 0 && len) rc = write_counted(s, s->dat, buf, len, base);
    return rc;
}

/* Phase A: records appended and synced, C raised in tide.meta, entries
 * into the tail. */
static int append_batch(tide_store *s, ti_pool *batch, ti_commit_end *end)
{
    uint64_t dat0 = s->dat_size, *fresh = NULL, fresh_slots = 0, *old = NULL, old_slots = 0;
    uint64_t dat1 = dat0 + batch->record_bytes;
    size_t cap = batch->record_bytes < APPEND_BUF ? (size_t)batch->record_bytes : APPEND_BUF;
    uint8_t *buf = NULL;
    ti_pool_item *ahead;
    ti_meta m;
    int rc;

    *end = TI_COMMIT_UNDONE;
    /* Room first: once C is raised, the entries must go in. */
    if ((rc = ti_tail_prepare(&s->tail, batch->count, &fresh, &fresh_slots)) != 0) return rc;
    if (fresh && s->opts.note_alloc && s->opts.tail_account_id >= 0)
        s->opts.note_alloc(s->opts.tail_account_id, (int64_t)(fresh_slots * TI_TAIL_SLOT_BYTES));
    /* As large as the batch's records, up to APPEND_BUF, and every page of
     * it written (but for a batch of one record larger than the buffer,
     * which goes to the file directly): resident at once. */
    if ((buf = tide_big_alloc_resident(cap)) == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "commit: out of memory");
        goto out;
    }
    rc = append_records(s, batch, buf, cap);
    if (rc == 0) rc = synced(s, s->dat);
    if (rc) {
        /* Nothing past C counts; cut it anyway, so the file ends where the
         * next attempt writes. */
        if (s->io->truncate(s->dat, dat0) == 0) synced(s, s->dat);
        goto out;
    }
    m = (ti_meta){ s->meta_seq, s->kh.uid, s->dat_indexed, dat1,
                   (s->buckets + 1) * (uint64_t)s->block_size };
    rc = ti_meta_write(s->io, s->meta, &m);
    s->meta_seq = m.seq;
    if (rc) {
        *end = TI_COMMIT_BROKEN;
        tide_log(TIDE_LOG_ERROR, "%s: writing %s failed (%s); which of its slots the disk holds "
                 "cannot be told, so the store is closed for writes and recovers at the next open "
                 "(the records are synced)", s->dir, TI_META_NAME, tide_last_error());
        goto out;
    }
    __atomic_fetch_add(&s->bytes_written, TI_META_SLOT, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->syncs, 1, __ATOMIC_RELAXED);
    pthread_rwlock_wrlock(&s->key_lock);
    if (fresh) old = ti_tail_swap(&s->tail, fresh, fresh_slots, &old_slots);
    fresh = NULL;
    /* Readers wait while the entries go in: their slots are asked for
     * TI_TAIL_AHEAD entries early, so the misses overlap. */
    ahead = batch->first;
    for (unsigned k = 0; k < TI_TAIL_AHEAD && ahead; k++, ahead = ahead->after)
        ti_tail_prefetch(&s->tail, ahead->hash);
    for (ti_pool_item *it = batch->first; it; it = it->after) {
        tide_entry e = { it->offset, it->len, it->hash };
        if (ahead) {
            ti_tail_prefetch(&s->tail, ahead->hash);
            ahead = ahead->after;
        }
        ti_tail_add(&s->tail, &e);
    }
    __atomic_store_n(&s->dat_size, dat1, __ATOMIC_RELEASE);
    __atomic_store_n(&s->dat_committed, dat1, __ATOMIC_RELEASE);
    ti_live_publish(s);       /* tide.live: readers elsewhere see the new C */
    pthread_rwlock_unlock(&s->key_lock);
    ti_store_dat_stable(s, dat1);   /* published: nothing cuts below C (lookup.c) */
    *end = TI_COMMIT_DONE;
out:
    ti_tail_free_table(old, old_slots);
    ti_tail_free_table(fresh, fresh_slots);
    tide_big_free(buf, cap);
    return rc;
}

/*
 * A flush writes the changed part of every bucket it touches, and its
 * pre-image; once the store holds many times the tail's entries, a flush
 * touches nearly every bucket, so each flush rewrites about the whole key
 * file for one tail's items, and the bytes written per item grow with the
 * store. Measured with 232-byte items, 100M of them (PERFORMANCE.md, "At
 * a node's size"), a tail of 1/32 of the items wrote 4.77 times the data,
 * 1/8 of them 2.01 times, 1/4 1.54 times. Said once per handle, at the
 * first flush of a full tail under 1/LAG_WARN_RATIO of the items, with
 * the budget that holds 1/LAG_ADVICE_RATIO of them (room to grow).
 */
#define LAG_WARN_RATIO   8
#define LAG_ADVICE_RATIO 4

static void advise_lag(tide_store *s)
{
    uint64_t items = (uint64_t)((double)s->buckets * s->capacity * s->kh.load_factor / 65536.0);
    uint64_t limit = ti_tail_limit(&s->tail);
    char key[32], lag[32], now[32];

    if (s->lag_advised || limit * LAG_WARN_RATIO >= items) return;
    s->lag_advised = 1;
    tide_size_format(ti_tail_budget_for(items / LAG_ADVICE_RATIO), lag, sizeof lag);
    tide_size_format(s->buckets * (uint64_t)s->block_size, key, sizeof key);
    tide_size_format(s->opts.index_lag_bytes, now, sizeof now);
    tide_log(TIDE_LOG_WARN, "%s: the deferred index's tail is full at %llu entries, %.1f%% of the "
             "%llu items nudb.key indexes: each flush now rewrites most of nudb.key (%s) for one "
             "tail's items, so the store writes more than twice its data, and more as it grows. An "
             "index lag of %s (now %s; tided: store_index_lag) holds 1/%u of them; a flush holds "
             "three to four times the lag in memory at its peak",
             s->dir, (unsigned long long)limit, 100.0 * (double)limit / (double)items,
             (unsigned long long)items, key, lag, now, LAG_ADVICE_RATIO);
}

int ti_defer_commit(tide_store *s, ti_pool *batch, int flush, ti_commit_end *end)
{
    TIDE_ASSERT(s->opts.index_lag_bytes > 0);
    if (flush || batch->count == 0 || s->tail.count + batch->count > ti_tail_limit(&s->tail)) {
        if (!flush && batch->count) advise_lag(s);
        return ti_commit_batch(s, batch, end);
    }
    return append_batch(s, batch, end);
}

/* The record at `off` (avail bytes of it at p, up to C): *rec gets its
 * size, and *e a data record's entry (e->offset 0 for a spill record, which
 * is stepped over; e->hash only when `hash`). TIDE_ECORRUPT when it cannot
 * be a complete record. */
static int scan_record(const ti_tail_files *t, const uint8_t *p, size_t avail, uint64_t off,
                       uint64_t C, int hash, uint64_t *rec, tide_entry *e)
{
    uint64_t size;

    e->offset = 0;
    if (avail < TIDE_DAT_RECORD_HEADER) goto bad;
    size = ti_get48(p);
    if (size == 0) {
        if (avail < TIDE_SPILL_HEADER || ti_get16(p + 6) != ti_fmt_bucket_bytes(t->capacity)) goto bad;
        *rec = TIDE_SPILL_HEADER + ti_get16(p + 6);
    } else {
        *rec = TIDE_DAT_RECORD_HEADER + t->key_size + size;
        if (avail < TIDE_DAT_RECORD_HEADER + (size_t)t->key_size || size > 0xffffffffull) goto bad;
    }
    if (off + *rec > C) goto bad;
    if (size)
        *e = (tide_entry){ off, size,
                           hash ? ti_fmt_hash48(p + TIDE_DAT_RECORD_HEADER, t->key_size, t->salt) : 0 };
    return 0;
bad:
    return tide_err_set(TIDE_ECORRUPT, "%s: offset %llu: not a complete record below the committed "
                        "mark %llu (tide.meta): the records from %llu were acknowledged and the "
                        "key file does not index them yet. Nothing was changed; keep a copy of the "
                        "store and see docs/DURABILITY.md", t->dat_path, (unsigned long long)off,
                        (unsigned long long)C, (unsigned long long)t->W);
}

int ti_defer_walk_tail(const ti_tail_files *t, uint64_t C,
                       int (*fn)(void *arg, const tide_entry *e), void *arg)
{
    uint64_t at = t->W, wbase = 0, rec = 0;
    size_t wlen = 0, need = TIDE_DAT_RECORD_HEADER + (size_t)t->key_size;
    uint8_t *win = NULL;
    tide_entry e;
    int rc = 0;

    if (need < TIDE_SPILL_HEADER) need = TIDE_SPILL_HEADER;
    if ((win = tide_big_alloc(APPEND_BUF)) == NULL) return tide_err_set(TIDE_ENOMEM, "open: out of memory");
    while (at < C && rc == 0) {
        uint64_t want = C - at < need ? C - at : need;
        if (at < wbase || at + want > wbase + wlen) {
            wbase = at;
            wlen = C - at < APPEND_BUF ? (size_t)(C - at) : APPEND_BUF;
            if ((rc = t->io->read_at(t->dat, win, wlen, wbase)) != 0) break;
        }
        rc = scan_record(t, win + (at - wbase), (size_t)(wbase + wlen - at), at, C, fn != NULL, &rec, &e);
        if (rc == 0 && e.offset && fn) rc = fn(arg, &e);
        at += rec;
    }
    tide_big_free(win, APPEND_BUF);
    return rc;
}

/* Add e to the tail, doubling its table first when it is full (sized for
 * the records the range holds, not for the most it could hold). Each table
 * is counted (note_alloc, the tail's id). */
static int tail_grow_add(void *arg, const tide_entry *e)
{
    tide_store *s = arg;
    uint64_t grown = 0;
    int rc = ti_tail_add_growing(&s->tail, e, &grown);

    if (grown && s->opts.note_alloc && s->opts.tail_account_id >= 0)
        s->opts.note_alloc(s->opts.tail_account_id, (int64_t)grown);
    return rc;
}

/* Read the records of [W, C) into the tail, whose table grows by doubling
 * as they come: it ends at the smallest power of two that holds them (the
 * last doubling holds 1.5 x that while it rehashes). */
static int scan_tail(tide_store *s, uint64_t W, uint64_t C)
{
    ti_tail_files t = { s->io, s->dat, s->dat_path, s->key_size, s->capacity, s->kh.salt, W };

    s->tail.max_slots = 1ull << 62;        /* recovery is not bounded by the budget */
    return ti_defer_walk_tail(&t, C, tail_grow_add, s);
}

int ti_defer_read_tail(tide_store *s)
{
    TIDE_ASSERT(s->mode == TI_STORE_IDLE_READER && s->dat_indexed < s->dat_committed);
    return scan_tail(s, s->dat_indexed, s->dat_committed);
}

int ti_defer_recover_tail(tide_store *s, int *kept)
{
    uint64_t W = s->dat_indexed, C = s->dat_committed;
    ti_commit_end end;
    int rc;

    TIDE_ASSERT(W < C && C == s->dat_size);
    *kept = 0;
    if ((rc = scan_tail(s, W, C)) != 0) return rc;
    tide_log(TIDE_LOG_INFO, "%s: %llu records (%llu bytes of nudb.dat from offset %llu) were "
             "committed and not yet indexed; indexing them", s->dir,
             (unsigned long long)s->tail.count, (unsigned long long)(C - W), (unsigned long long)W);
    rc = ti_commit_batch(s, s->pending, &end);
    if (rc == TIDE_ENOSPC && end == TI_COMMIT_UNDONE) {
        /* The files are as recovery left them (the idle log, W, C), and
         * every acknowledged record is findable through the tail: a full
         * disk must not keep the store from serving what it holds. */
        tide_log(TIDE_LOG_WARN, "%s: the disk is full: the %llu records past offset %llu stay "
                 "indexed in memory (%llu bytes) until space is freed; reads are served, inserts "
                 "are refused, and indexing them is retried every second: %s", s->dir,
                 (unsigned long long)s->tail.count, (unsigned long long)W,
                 (unsigned long long)ti_tail_bytes(&s->tail), tide_last_error());
        *kept = 1;
        __atomic_store_n(&s->tail_kept, 1, __ATOMIC_RELAXED);
        return 0;
    }
    if (rc == 0 && end != TI_COMMIT_DONE) rc = tide_err_set(TIDE_EIO, "open: indexing the tail failed");
    if (rc == 0) TIDE_ASSERT(s->tail.count == 0 && s->dat_indexed >= C && s->dat_indexed == s->dat_size);
    return rc;
}
