/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store.c: a store handle's calls: fetch, contains, insert, sync, flush,
 * the deferred index's switch, close and the information calls; and the
 * options' defaults and the block size's parsing. The essay of the store
 * as a whole (its invariants) is here.
 *
 * Layout of the work: an insert goes into the `pending` pool, where fetches
 * see it at once. About once a second (or when the pool holds burst_bytes,
 * or a sync asks) the commit thread (committer.c) swaps `pending` for
 * `committing` and commits it (commit.c). Items stay visible in
 * `committing` until their buckets are in the key file; then the pool is
 * reset. The other parts: open.c (the open, and the handle's mode),
 * files.c (create, inspect, the headers), index_check.c (the open's check
 * of the key file), lookup.c (one lookup path for every handle), reader.c
 * (a LIVE_READER's seqlock), defer.c and tail.c (the deferred index).
 *
 * The handle's mode (store_impl.h) says which kind of handle this is, and
 * so which calls do what: a reader's insert is refused and its sync and
 * flush do nothing; a LIVE_READER's lookups go through reader.c; only a
 * WRITER has a commit thread to wait for or stop. A WRITER's states are
 * committer.c's diagram.
 *
 * Invariants:
 *   1. A key is in at most one of: pending, committing, the files.
 *   2. Every bucket visible to a reader under key_lock is a complete bucket
 *      of the current `buckets` count: readers never see a half-written
 *      commit, because the whole key-file write phase holds key_lock. So
 *      under key_lock the key file is (buckets + 1) * block_size bytes
 *      (but in BROKEN, when a rollback failed half way).
 *   3. Lookups check the pools before the files. Together with (2) and the
 *      commit clearing `committing` only after its buckets are written, a
 *      key that was inserted is always found. With the deferred index
 *      (defer.c), "the files" is the tail, then the key file, under one
 *      hold of key_lock: a phase A fills the tail before `committing` is
 *      cleared, and a flush empties it only after the buckets are written.
 *   4. durable_seq <= committing_seq <= insert_seq; pending holds the
 *      inserts after committing_seq (insert_seq - committing_seq items),
 *      committing those after durable_seq; pending and committing are the
 *      two pools[], never the same one; sync_seq <= insert_seq; every
 *      commit counted was an attempt (commits <= attempts), and every
 *      attempt finished or failed was one begun (attempts <= attempts_begun,
 *      err_attempt <= attempts_begun): a sync or flush takes the error of
 *      an attempt begun after its call only.
 *   5. An insert is admitted only while pending's `used` (its items and
 *      table) is below burst_bytes, so every pool was below burst_bytes
 *      just before its newest item came in, and takes no item after one
 *      that took it over. Hence the pools hold less than 2 * burst_bytes
 *      plus, for each pool, its newest item (and the table growth that
 *      item caused): a value larger than the burst is admitted, not
 *      refused or split, and the inserts after it wait for its commit.
 *      A pool's spare chunks (pool.c) are ones it held in its last batch
 *      and takes back before mapping more, so the bound holds for the
 *      chunks in use and the spares together.
 * tide_store_check (store_check.c) asserts the state table, 1 between the two pools
 * (against the files it would cost a lookup per item), 2 as the key file's
 * size, 4 and 5; the pools' own invariants are pool.c's (ti_pool_check).
 *
 * Never: let an insert be acknowledged while a failed commit is unresolved;
 *   it returns the commit's error instead, so nothing is silently dropped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_impl.h"
#include "util/err.h"

/* ---- block size validation ---- */

int tide_block_size_valid(long long v)
{
    return v >= TIDE_BLOCK_SIZE_MIN && v <= TIDE_BLOCK_SIZE_MAX && (v & (v - 1)) == 0;
}

unsigned tide_block_size_parse(const char *text, char *warning, size_t cap)
{
    const char *why = NULL;
    long long v = 0;

    if (warning && cap) warning[0] = '\0';
    if (text == NULL || *text == '\0') {
        why = "is empty";
    } else {
        char *end = NULL;
        errno = 0;
        v = strtoll(text, &end, 10);
        if (errno != 0 || end == text || *end != '\0') why = "is not a number";
        else if (!tide_block_size_valid(v)) why = "is not a power of two from 4096 to 32768";
    }
    if (why == NULL) return (unsigned)v;
    if (warning && cap)
        snprintf(warning, cap, "block size '%s' %s; using %u", text ? text : "", why,
                 TIDE_BLOCK_SIZE_DEFAULT);
    return TIDE_BLOCK_SIZE_DEFAULT;
}

/* ---- options ---- */

void tide_store_create_opts_init(tide_store_create_opts *o)
{
    memset(o, 0, sizeof *o);
    o->block_size = TIDE_BLOCK_SIZE_DEFAULT;
    o->load_factor = TIDE_LOAD_FACTOR_DEFAULT;
    o->appnum = 1;
}

void tide_store_opts_init(tide_store_opts *o)
{
    memset(o, 0, sizeof *o);
    o->burst_bytes = TIDE_BURST_DEFAULT;
    o->commit_interval_ms = TIDE_COMMIT_INTERVAL_DEFAULT_MS;
    o->pool_account_id = -1;
    o->commit_account_id = -1;
    o->tail_account_id = -1;
}

/* A reader of another process's live store looks up through
 * tide.live's seqlock (reader.c); every other handle as before. */
static int files_lookup(tide_store *s, uint64_t h, const void *key, void **value, size_t *len)
{
    if (ti_store_reads_through_live(s)) return ti_reader_lookup(s, h, key, value, len);
    return ti_lookup_files(s, h, key, value, len);
}

int tide_store_fetch(tide_store *s, const void *key, void **out, size_t *len)
{
    uint64_t h = ti_fmt_hash48(key, s->key_size, s->kh.salt);
    int rc;

    *out = NULL;
    *len = 0;
    ti_tally_add(s->tally, TI_TALLY_FETCHES, 1);
    rc = ti_lookup_pools(s, h, key, out, len);
    if (rc == TIDE_ENOTFOUND) rc = files_lookup(s, h, key, out, len);
    return rc;
}

int tide_store_contains(tide_store *s, const void *key)
{
    uint64_t h = ti_fmt_hash48(key, s->key_size, s->kh.salt);
    int rc = ti_lookup_pools(s, h, key, NULL, NULL);
    if (rc == TIDE_ENOTFOUND) rc = files_lookup(s, h, key, NULL, NULL);
    if (rc == 0) return 1;
    return rc == TIDE_ENOTFOUND ? 0 : rc;
}

/* ---- insert and sync ---- */

int tide_store_insert(tide_store *s, const void *key, const void *value, size_t len)
{
    uint64_t h;
    int rc;

    if (len == 0) return tide_err_set(TIDE_EINVAL, "insert: empty value (values are 1 byte or more)");
    if (len > TIDE_VALUE_MAX)
        return tide_err_set(TIDE_ETOOBIG, "insert: value of %zu bytes is over the 2^32 - 1 limit", len);
    if (ti_store_is_reader(s)) return tide_err_set(TIDE_EINVAL, "%s: insert: the store is open read-only", s->dir);
    h = ti_fmt_hash48(key, s->key_size, s->kh.salt);

    pthread_mutex_lock(&s->write_mu);
    ti_lookup_prefetch(s, h);
    rc = ti_lookup_pools(s, h, key, NULL, NULL);
    if (rc == 0) { rc = tide_err_set(TIDE_EEXIST, "insert: the key exists (pending commit)"); goto out; }
    rc = ti_lookup_files(s, h, key, NULL, NULL);
    if (rc == 0) { rc = tide_err_set(TIDE_EEXIST, "insert: the key exists"); goto out; }
    if (rc != TIDE_ENOTFOUND) goto out;

    pthread_mutex_lock(&s->pool_mu);
    for (;;) {
        if (s->closing || s->state == TI_STORE_BROKEN) {
            rc = tide_err_set(TIDE_ECLOSED, "%s: insert: the store is %s", s->dir,
                              s->state == TI_STORE_BROKEN ? "failed (reopen it to recover)"
                                                          : "closing");
            break;
        }
        if (s->state == TI_STORE_RETRYING || s->state == TI_STORE_LOG_DIRTY) {
            rc = tide_err_set(s->commit_err, "%s: insert refused: the last commit failed (%s); "
                              "it is retried every second", s->dir, tide_strerror(s->commit_err));
            break;
        }
        if (s->pending->used < s->opts.burst_bytes) {
            rc = ti_pool_add(s->pending, h, key, value, (uint32_t)len);
            if (rc == 0) {
                __atomic_store_n(&s->pool_items, s->pool_items + 1, __ATOMIC_RELEASE);
                s->insert_seq++;
                __atomic_fetch_add(&s->inserts, 1, __ATOMIC_RELAXED);
                /* The first insert into an idle store wakes the thread from
                 * its idle wait; a full pool asks for a commit now. */
                if (s->pending->count == 1 || s->pending->used >= s->opts.burst_bytes)
                    pthread_cond_signal(&s->work_cv);
            }
            break;
        }
        pthread_cond_signal(&s->work_cv);
        pthread_cond_wait(&s->room_cv, &s->pool_mu);
    }
    pthread_mutex_unlock(&s->pool_mu);
out:
    pthread_mutex_unlock(&s->write_mu);
    return rc;
}

int tide_store_sync(tide_store *s)
{
    int rc = 0;
    if (ti_store_is_reader(s)) return 0;
    pthread_mutex_lock(&s->pool_mu);
    uint64_t target = s->insert_seq;
    uint64_t begun0 = s->attempts_begun;
    if (s->sync_seq < target) s->sync_seq = target;
    pthread_cond_signal(&s->work_cv);
    while (s->durable_seq < target) {
        /* The commit thread sets commit_err and its attempt's number
         * together under pool_mu, so a waiter never sees a failure half
         * reported. Only an attempt that began after this call answers
         * it: one already running when the call came (a retry on a disk
         * the caller has just freed) may fail for what is now fixed. */
        if (s->commit_err && s->err_attempt > begun0) { rc = s->commit_err; break; }
        if (s->state == TI_STORE_BROKEN || s->state == TI_STORE_CLOSED) {
            rc = s->commit_err ? s->commit_err : TIDE_ECLOSED;   /* nothing commits again */
            break;
        }
        pthread_cond_wait(&s->room_cv, &s->pool_mu);
    }
    if (rc) tide_err_set(rc, "%s: sync: the commit failed: %s", s->dir, tide_strerror(rc));
    pthread_mutex_unlock(&s->pool_mu);
    return rc;
}

int tide_store_flush(tide_store *s)
{
    int rc = tide_store_sync(s);
    if (rc || s->opts.index_lag_bytes == 0) return rc;
    pthread_mutex_lock(&s->pool_mu);
    uint64_t begun0 = s->attempts_begun;
    s->flush_wanted = 1;
    pthread_cond_signal(&s->work_cv);
    while (s->flush_wanted) {
        if (s->commit_err && s->err_attempt > begun0) { rc = s->commit_err; break; }
        if (s->state == TI_STORE_BROKEN || s->state == TI_STORE_CLOSED) {
            rc = s->commit_err ? s->commit_err : TIDE_ECLOSED;
            break;
        }
        pthread_cond_wait(&s->room_cv, &s->pool_mu);
    }
    if (rc) tide_err_set(rc, "%s: flush: the commit failed: %s", s->dir, tide_strerror(rc));
    pthread_mutex_unlock(&s->pool_mu);
    return rc;
}

int tide_store_set_deferring(tide_store *s, int on)
{
    if (ti_store_is_reader(s) || s->opts.index_lag_bytes == 0) return 0;
    pthread_mutex_lock(&s->pool_mu);
    __atomic_store_n(&s->defer_off, !on, __ATOMIC_RELAXED);
    pthread_cond_signal(&s->work_cv);
    pthread_mutex_unlock(&s->pool_mu);
    /* Off: from here every commit is a flush (commit_thread), so once this
     * one is done the tail is empty and nothing refills it. */
    return on ? 0 : tide_store_flush(s);
}

/* ---- close ---- */

/* The end of a clean handle: nudb.log closed, removed, its removal made
 * durable. */
static int drop_log(tide_store *s)
{
    int rc;

    s->io->close(s->log);
    s->log = NULL;
    rc = s->io->unlink(s->io, s->log_path);
    if (rc == 0) rc = s->io->sync_dir(s->io, s->dir);
    return rc;
}

int tide_store_close(tide_store *s)
{
    int rc = 0;
    if (s == NULL) return 0;
    ti_committer_stop(s);
    /* The thread ends CLOSED (all committed) or BROKEN; a rebuild's handle
     * (no thread) is BROKEN when rekey.c could not undo its work. */
    if (s->state == TI_STORE_BROKEN) rc = s->commit_err ? s->commit_err : TIDE_EIO;
    if (ti_store_checks_on(s)) ti_store_check_locked(s, 1);
    if (rc == 0 && s->log) {
        rc = drop_log(s);
    } else if (rc) {
        tide_err_set(rc, "%s: close: the final commit failed (%s); nudb.log is kept and the "
                     "next open recovers", s->dir, tide_strerror(rc));
    }
    if (rc == 0) ti_live_closed(s);     /* tide.live: readers go on with the files as left */
    ti_store_free(s);
    return rc;
}

/* ---- information ---- */

void tide_store_get_info(tide_store *s, tide_store_info *o)
{
    memset(o, 0, sizeof *o);
    ti_store_info_from_header(&s->kh, o);
    pthread_rwlock_rdlock(&s->key_lock);
    o->buckets = s->buckets;
    o->dat_file_bytes = s->dat_size;
    pthread_rwlock_unlock(&s->key_lock);
    o->key_file_bytes = (o->buckets + 1) * s->block_size;
    pthread_mutex_lock(&s->pool_mu);
    o->pool_bytes = s->pools[0].bytes + s->pools[1].bytes;
    o->pool_spare_bytes = s->pools[0].spare_bytes + s->pools[1].spare_bytes;
    o->broken = s->state == TI_STORE_BROKEN;
    pthread_mutex_unlock(&s->pool_mu);
    o->commit_buffer_bytes = __atomic_load_n(&s->commit_buffer_bytes, __ATOMIC_RELAXED);
    o->inserts = __atomic_load_n(&s->inserts, __ATOMIC_RELAXED);
    o->fetches = ti_tally_sum(s->tally, TI_TALLY_FETCHES);
    o->key_map_views = ti_tally_sum(s->tally, TI_TALLY_MAP_VIEWS);
    o->key_bucket_reads = ti_tally_sum(s->tally, TI_TALLY_BUCKET_READS);
    ti_keymap_stats(&s->keymap, o->key_file_bytes, &o->key_map_bytes, NULL);
    o->dat_map_views = ti_tally_sum(s->tally, TI_TALLY_DAT_VIEWS);
    o->dat_reads = ti_tally_sum(s->tally, TI_TALLY_DAT_READS);
    ti_keymap_stats(&s->datmap, __atomic_load_n(&s->dat_stable, __ATOMIC_ACQUIRE),
                    &o->dat_map_bytes, NULL);
    o->commits = __atomic_load_n(&s->commits, __ATOMIC_RELAXED);
    o->commit_failures = __atomic_load_n(&s->commit_failures, __ATOMIC_RELAXED);
    o->bytes_written = __atomic_load_n(&s->bytes_written, __ATOMIC_RELAXED);
    o->syncs = __atomic_load_n(&s->syncs, __ATOMIC_RELAXED);
    o->last_commit_us = __atomic_load_n(&s->last_commit_us, __ATOMIC_RELAXED);
    tide_hist h;
    _Static_assert(TIDE_STORE_HIST_BUCKETS == TIDE_HIST_BUCKETS, "one bucket layout");
    tide_hist_snapshot(&s->commit_hist, &h);
    memcpy(o->commit_duration.bucket, h.bucket, sizeof h.bucket);
    o->commit_duration.sum_ns = h.sum_ns;
    o->commit_duration.count = h.count;
    o->commit_interval_ms = s->opts.commit_interval_ms;
    o->burst_bytes = s->opts.burst_bytes;
    o->index_lag_bytes = __atomic_load_n(&s->defer_off, __ATOMIC_RELAXED) ? 0 : s->opts.index_lag_bytes;
    pthread_rwlock_rdlock(&s->key_lock);
    o->tail_items = s->tail.count;
    o->tail_bytes = ti_tail_bytes(&s->tail);
    o->dat_indexed = s->dat_indexed;
    o->dat_committed = s->dat_committed;
    pthread_rwlock_unlock(&s->key_lock);
    o->dat_durable = __atomic_load_n(&s->dat_durable, __ATOMIC_ACQUIRE);
    o->index_flushes = __atomic_load_n(&s->index_flushes, __ATOMIC_RELAXED);
}

int tide_store_key_map_resident(tide_store *s, uint64_t *bytes)
{
    return ti_keymap_stats(&s->keymap, 0, NULL, bytes);
}

int tide_store_dat_map_resident(tide_store *s, uint64_t *bytes)
{
    return ti_keymap_stats(&s->datmap, 0, NULL, bytes);
}
