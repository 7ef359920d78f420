/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store_check.c: the store's invariants, asserted (tide_store_check, and
 * after every commit attempt, at open and at close when
 * tide_store_opts.check_invariants is set or TIDE_DEBUG_CHECKS is defined,
 * as it is in the sanitizer and -O0 builds).
 *
 * What it asserts is store.c's essay: the mode table (store_impl.h: what
 * each kind of handle holds), the state table (what holds in each
 * state), invariant 1 between the two pools (a key in both is a bug; one
 * also in the files would cost a lookup an item, so that is not checked),
 * invariant 2 as the key file's size, the sequence order of invariant 4,
 * and invariant 5's bound through pool.c's own check (ti_pool_check).
 *
 * Invariants:
 *   1. Checking changes nothing but tide_last_error(), which it restores:
 *      a check between two calls cannot change what the second returns.
 *   2. Cost: O(items in the two pools) and one io->size call on nudb.key;
 *      no read of either file, no allocation.
 *
 * Never: take key_lock before pool_mu (the commit thread takes them in
 * that order too); return an error for a broken invariant (it aborts).
 */
#include <pthread.h>
#include <stdio.h>

#include "store/store_impl.h"
#include "util/assert.h"
#include "util/err.h"

int ti_store_checks_on(const tide_store *s)
{
#ifdef TIDE_DEBUG_CHECKS
    (void)s;
    return 1;
#else
    return s->opts.check_invariants;
#endif
}

/* What the readers share: never a thread, an insert, a pool in use, a log
 * or tide.meta; no lag. */
static void check_reader(const tide_store *s)
{
    TIDE_ASSERT(s->state == TI_STORE_QUIET && !s->thread_started);
    TIDE_ASSERT(s->insert_seq == 0 && s->pool_items == 0 && s->committing == NULL);
    TIDE_ASSERT(s->pending != NULL && s->pending->count == 0 && s->pending->used == 0);
    TIDE_ASSERT(s->log == NULL && s->meta == NULL && s->opts.index_lag_bytes == 0);
}

/* What holds in the mode (store_impl.h's table). A rebuild's handle is
 * the whole check: it has no pools, and its key file is not the store's. */
static void check_mode(const tide_store *s)
{
    TIDE_ASSERT(s->mode >= TI_STORE_WRITER && s->mode <= TI_STORE_REBUILD);
    TIDE_ASSERT(!s->thread_started || s->mode == TI_STORE_WRITER);
    TIDE_ASSERT((s->state == TI_STORE_REBUILDING) <= (s->mode == TI_STORE_REBUILD));
    switch (s->mode) {
    case TI_STORE_WRITER:
        /* The open's start leaves IDLE (or RETRYING) before its check. */
        TIDE_ASSERT(s->state != TI_STORE_QUIET && s->pending != NULL);
        TIDE_ASSERT(s->live == NULL || s->live->w != NULL);        /* its own page, mapped */
        TIDE_ASSERT(s->live_mark == NULL);
        break;
    case TI_STORE_READER:
        check_reader(s);
        TIDE_ASSERT(s->live == NULL && s->tail.count == 0);
        TIDE_ASSERT(s->dat_indexed == s->dat_size && s->dat_committed == s->dat_size);
        break;
    case TI_STORE_LIVE_READER:
        check_reader(s);
        /* Its writer's page, mapped; its view's tail is the page's
         * (reader.c), and the files move under it: never mapped. */
        TIDE_ASSERT(s->live != NULL && s->live->w != NULL && s->live_mark == NULL);
        TIDE_ASSERT(s->tail.count == 0 && s->keymap.io == NULL && s->datmap.io == NULL);
        break;
    case TI_STORE_IDLE_READER:
        check_reader(s);
        TIDE_ASSERT(s->live == NULL && s->dat_committed == s->dat_size);
        break;
    case TI_STORE_REBUILD:
        TIDE_ASSERT(s->state == TI_STORE_REBUILDING || s->state == TI_STORE_BROKEN);
        TIDE_ASSERT(s->pending == NULL && s->committing == NULL && s->insert_seq == 0);
        TIDE_ASSERT(!s->thread_started && s->live == NULL);
        break;
    }
}

/* What holds in the state (the essay's table). */
static void check_state(const tide_store *s)
{
    ti_store_state st = s->state;
    int batch = st == TI_STORE_COMMITTING || st == TI_STORE_RETRYING;
    int failed = st == TI_STORE_RETRYING || st == TI_STORE_LOG_DIRTY;

    TIDE_ASSERT(st >= TI_STORE_QUIET && st <= TI_STORE_CLOSED);
    if (st != TI_STORE_BROKEN) {
        TIDE_ASSERT((s->committing != NULL) == batch);
        TIDE_ASSERT((s->commit_err != 0) == failed);
    }
    if (st == TI_STORE_QUIET) TIDE_ASSERT(s->insert_seq == 0 && !s->thread_started);
    if (st == TI_STORE_IDLE) TIDE_ASSERT(s->durable_seq == s->committing_seq);
    /* A flush of the deferred index with no batch (tide_store_flush with
     * nothing pending, or a rotation's tide_store_set_deferring after a
     * sync) applies only the tail's entries, which were durable already:
     * then applied_seq == durable_seq, and it may reach the files with its
     * log left dirty. Only a store configured to defer has a tail. */
    if (st == TI_STORE_LOG_DIRTY)
        TIDE_ASSERT(s->applied_seq == s->committing_seq &&
                    (s->durable_seq < s->applied_seq ||
                     (s->opts.index_lag_bytes && s->durable_seq == s->applied_seq)));
    if (st == TI_STORE_CLOSED) TIDE_ASSERT(s->closing && s->durable_seq == s->insert_seq);
}

/* Invariants 1 (within the pools), 4 and 5. */
static void check_pools(const tide_store *s)
{
    const ti_pool *p = s->pending, *c = s->committing;
    const ti_pool *other = p == &s->pools[0] ? &s->pools[1] : &s->pools[0];

    TIDE_ASSERT(s->durable_seq <= s->committing_seq && s->committing_seq <= s->insert_seq);
    TIDE_ASSERT(s->sync_seq <= s->insert_seq);
    TIDE_ASSERT(__atomic_load_n(&s->commits, __ATOMIC_RELAXED) <= s->attempts);
    TIDE_ASSERT(s->attempts <= s->attempts_begun && s->err_attempt <= s->attempts_begun);
    TIDE_ASSERT(p == &s->pools[0] || p == &s->pools[1]);
    TIDE_ASSERT(c == NULL || c == other);
    TIDE_ASSERT(p->count == s->insert_seq - s->committing_seq);
    TIDE_ASSERT(s->pool_items == p->count + (c ? c->count : 0));
    ti_pool_check(p, s->opts.burst_bytes);
    if (c == NULL) {
        /* Empty; a recycled one keeps its table and spare chunks. */
        TIDE_ASSERT(other->count == 0 && other->chunks == NULL);
        TIDE_ASSERT(other->used == (other->table ? (other->mask + 1) * sizeof *other->table : 0));
        ti_pool_check(other, s->opts.burst_bytes);
        return;
    }
    TIDE_ASSERT(c->count == s->committing_seq - s->durable_seq);
    ti_pool_check(c, s->opts.burst_bytes);
    for (const ti_pool_item *it = c->first; it; it = it->after)
        TIDE_ASSERT(ti_pool_find(p, it->hash, it->data) == NULL);
}

/* Invariant 2: the key file is the header block and `buckets` buckets. One
 * io->size call; an I/O error there is not the store's to assert, so it
 * only skips the comparison (and leaves the caller's message alone). */
static void check_files(const tide_store *s, int writer)
{
    char msg[512];
    uint64_t size = 0;

    TIDE_ASSERT(s->buckets >= 1 && s->dat_size >= TIDE_DAT_HEADER_SIZE);
    TIDE_ASSERT(s->block_size == s->kh.block_size && s->capacity == ti_fmt_capacity(s->block_size));
    if (writer) TIDE_ASSERT(s->split_credit < s->split_units);
    snprintf(msg, sizeof msg, "%s", tide_last_error());
    /* A live reader's view (reader.c) is of a key file that a
     * writer in another process changes under it: nothing to compare. */
    if (ti_store_reads_through_live(s)) {
        /* skip */
    } else if (s->io->size(s->key, &size) == 0)
        TIDE_ASSERT(size == (s->buckets + 1) * (uint64_t)s->block_size);
    if (msg[0]) tide_err_set(0, "%s", msg);
    else tide_err_clear();
}

/* W <= C <= the data file's end; without a lag (outside an open's
 * recovery, which has no thread yet, and a recovered tail kept for want of
 * space) no tail and W == C == end;
 * the tail's own invariants (tail.c), and never more than its limit. */
static void check_tail(const tide_store *s)
{
    TIDE_ASSERT(s->dat_indexed <= s->dat_committed && s->dat_committed <= s->dat_size);
    if (s->state == TI_STORE_BROKEN) return;
    if (s->opts.index_lag_bytes == 0 && s->thread_started && s->state != TI_STORE_COMMITTING &&
        !__atomic_load_n(&s->tail_kept, __ATOMIC_RELAXED)) {
        TIDE_ASSERT(s->tail.count == 0);
        TIDE_ASSERT(s->dat_indexed == s->dat_size);
    }
    if (s->thread_started) TIDE_ASSERT(s->tail.count <= ti_tail_limit(&s->tail));
    ti_tail_check(&s->tail);
}

void ti_store_check_locked(const tide_store *s, int writer)
{
    check_mode(s);
    check_state(s);
    if (s->mode == TI_STORE_REBUILD) return;
    check_pools(s);
    if (s->state != TI_STORE_BROKEN) check_files(s, writer);
    check_tail(s);
}

int tide_store_check(const tide_store *s)
{
    tide_store *w = (tide_store *)s;    /* the locks only: nothing is changed */

    pthread_mutex_lock(&w->pool_mu);
    pthread_rwlock_rdlock(&w->key_lock);
    ti_store_check_locked(s, !s->thread_started || s->state == TI_STORE_CLOSED);
    pthread_rwlock_unlock(&w->key_lock);
    pthread_mutex_unlock(&w->pool_mu);
    return 0;
}
