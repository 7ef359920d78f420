/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * committer.c: a writer's commit thread, which makes inserts durable: when
 * it commits (its schedule), what it commits (the batch it takes), and how
 * each attempt's end moves the store's state; its start at open and its
 * stop at close. One commit's writes are commit.c's (and, deferring,
 * defer.c's); this file decides when, and what comes after.
 *
 * Layout: the files a commit relies on and the thread's start (the open's
 * last step, ti_committer_start); the schedule (commit_due: about once a
 * second, when the pool holds burst_bytes, when a sync or a flush asks,
 * at close); the batch (take_batch swaps `pending` for `committing`); the
 * failure log (a streak of failures said once a minute); the ends of an
 * attempt (end_attempt, end_clean); the thread's loop; ti_store_break
 * (rekey.c's undo) and the stop.
 *
 * States (s->state, read and changed under pool_mu), drawn as SQLite's
 * pager.c draws its own; each arrow names the function that makes it:
 *
 *   (calloc) QUIET --a reader's open (every reader mode): stays QUIET
 *              |   --rekey.c open_for_rebuild--> REBUILDING (REBUILD mode,
 *              |                     no thread; tide_store_close ends it)
 *              | ti_committer_start (a WRITER's open)
 *              v
 *      +-------> IDLE ----------take_batch-----------> COMMITTING
 *      |          ^ ^                                    |  |  |
 *      |          | +------- end_attempt: DONE ----------+  |  |
 *      |          |                                         |  |
 *      |          +- end_clean: ok -- LOG_DIRTY <- APPLIED -+  |
 *      |                              (end_clean: fails, stays)|
 *      +---- end_attempt: DONE ---- RETRYING <---- UNDONE -----+
 *                                   (end_attempt: UNDONE, stays; APPLIED
 *                                    goes to LOG_DIRTY)
 *
 * DONE, UNDONE, APPLIED and BROKEN on the arrows are ti_commit_batch's
 * ends (store_impl.h: ti_commit_end); end_attempt makes the move they name.
 *
 *   COMMITTING, RETRYING --end_attempt: BROKEN (the rollback failed)--> BROKEN
 *   COMMITTING, RETRYING, LOG_DIRTY --attempt_failed (from end_attempt,
 *                  end_clean): any failure while close is asked--> BROKEN
 *   IDLE, REBUILDING --ti_store_break (rekey.c undo)--> BROKEN
 *                  (IDLE: rekey's read-write open, nothing inserted)
 *   IDLE --commit_thread: close asked, nothing pending--> CLOSED
 *   IDLE --ti_committer_start: pthread_create failed--> QUIET (no thread;
 *                  the open fails and frees the handle)
 *   QUIET --ti_committer_start: the tail recovery left could not be indexed
 *                  for want of space--> RETRYING (the empty pending pool
 *                  as the batch, TIDE_ENOSPC, a flush wanted)
 *
 * What holds in each state (tide_store_check asserts it, and the mode's
 * table in store_impl.h, which says which states each mode may be in):
 *   QUIET       no thread; nothing inserted (insert_seq 0), pools empty.
 *   REBUILDING  no thread, no pools; the key file is not the store's yet.
 *   IDLE        committing == NULL; commit_err == 0; durable_seq ==
 *               committing_seq; the thread waits for work.
 *   COMMITTING  committing != NULL (the batch taken at committing_seq),
 *               commit_err == 0; the thread writes it without pool_mu;
 *               inserts go on into pending.
 *   RETRYING    committing != NULL; commit_err != 0 is what inserts and
 *               syncs get; the files are as before the batch; the thread
 *               retries it every second (at once when close is asked),
 *               in this state.
 *   LOG_DIRTY   committing == NULL; commit_err != 0; the batch (up to
 *               applied_seq == committing_seq) is in both files but not
 *               durable: its log could not be emptied; retried every second.
 *   BROKEN      a failure could not be undone, or the final try of a close
 *               failed; nothing commits again; inserts get TIDE_ECLOSED,
 *               close the commit's error (TIDE_EIO when none), and nudb.log
 *               stays for the next open's recovery.
 *   CLOSED      the thread has ended with everything committed: pending
 *               empty, durable_seq == insert_seq.
 * `closing` is not a state but close's request, honoured in every state:
 * the thread stops waiting, and a failure from then on is final (BROKEN).
 *
 * Invariants:
 *   1. Only a WRITER has the thread (thread_started), and only this file
 *      changes `state` once the open has returned (but ti_store_break,
 *      which rekey.c calls with no thread running, or in IDLE with nothing
 *      inserted).
 *   2. Every change of state, commit_err, durable_seq and the pools'
 *      roles is made under pool_mu, and waiters are woken (room_cv) after
 *      it: a sync never sees a failure half reported.
 *   3. The thread writes the files without pool_mu; inserts go on into
 *      pending meanwhile.
 *   4. A batch leaves `committing` (and pool_items) only once the files
 *      hold it (DONE or APPLIED): fetches find every inserted key.
 *
 * Never: acknowledge a batch whose log is not emptied (LOG_DIRTY waits);
 *   wait for anything but work_cv with pool_mu held; commit again once
 *   BROKEN.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "store/store_impl.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

static void take_batch(tide_store *s);
static void *commit_thread(void *arg);

/* The files a commit relies on: nudb.log open under a durable name, empty
 * (or the idle log while a recovered tail is held: never emptied then);
 * deferring, tide.meta open and the idle log (header, W) written before
 * the first phase A. Every step may be run again after a failure: the open
 * runs it, and when the disk was full then, the commit thread runs it
 * again before its next attempt (files_pending). */
static int prepare_files(tide_store *s)
{
    int rc;

    if (s->log == NULL && (rc = s->io->open(s->io, s->log_path, TIDE_IO_CREATE, &s->log)) != 0) return rc;
    if (s->tail.count == 0 && (rc = s->io->truncate(s->log, 0)) != 0) return rc;
    /* The log's name must be durable before a commit relies on it:
     * synced log bytes under a name a crash can lose protect nothing. */
    if ((rc = s->io->sync(s->log)) != 0) return rc;
    if (s->opts.index_lag_bytes && s->meta == NULL && (rc = ti_defer_open_meta(s)) != 0) return rc;
    if ((rc = s->io->sync_dir(s->io, s->dir)) != 0) return rc;
    if (s->opts.index_lag_bytes && (rc = ti_defer_write_idle_log(s)) != 0) return rc;
    return 0;
}

/* A WRITER's open, its last step: the files a commit relies on, and the
 * commit thread (QUIET -> IDLE). A full disk does not keep a store that
 * is `serving` (an ordinary open, not rekey's or verify's, which need the
 * files whole) from serving what it holds: when a recovered tail cannot be
 * indexed, or (when it holds records) the files cannot be prepared, for
 * want of space, the store opens RETRYING (the empty pending pool as the
 * batch, TIDE_ENOSPC:
 * inserts refused) and the thread retries at once and then every second.
 * Only a serving store counts the splits it owes (splits.c). */
int ti_committer_start(tide_store *s, uint64_t log_size, int serving)
{
    int rc, tail_kept = 0, log_existed;

    if (log_size > 0 && log_size < TIDE_LOG_HEADER_SIZE)
        tide_log(TIDE_LOG_INFO, "%s: discarded a %llu-byte nudb.log shorter than its header",
                 s->dir, (unsigned long long)log_size);
    log_existed = s->io->stat(s->io, s->log_path, NULL) == 0;
    /* A recovered tail is indexed under the idle log that recovery kept,
     * before the log may be emptied; on a full disk it stays in memory
     * with that log (and tide.meta's slot) as they are. */
    if (s->dat_indexed < s->dat_committed) {
        if ((rc = s->io->open(s->io, s->log_path, TIDE_IO_CREATE, &s->log)) != 0) goto out;
        if ((rc = ti_defer_recover_tail(s, &tail_kept)) != 0) goto out;
        if (tail_kept && !serving) {
            rc = tide_err_set(TIDE_ENOSPC, "%s: the disk is full: the records past offset %llu cannot "
                              "be indexed; free space first", s->dir, (unsigned long long)s->dat_indexed);
            goto out;
        }
    }
    if (serving) ti_splits_count(s);
    rc = prepare_files(s);
    /* An empty store has nothing to serve: its open fails, and whoever
     * made it (a rotation's new generation) undoes it. */
    if (rc == TIDE_ENOSPC && serving && s->dat_size > TIDE_DAT_HEADER_SIZE) {
        tide_log(TIDE_LOG_WARN, "%s: the disk is full: the store is open for reads; inserts are refused "
                 "until space is freed (retried every second): %s", s->dir, tide_last_error());
        s->files_pending = 1;
        rc = 0;
    }
    if (rc) goto out;
    s->last_commit_start_us = tide_clock_mono_us();
    s->state = TI_STORE_IDLE;
    if (tail_kept || s->files_pending) {
        take_batch(s);
        s->state = TI_STORE_RETRYING;
        s->commit_err = TIDE_ENOSPC;
        s->flush_wanted = tail_kept;
    }
    if (ti_store_checks_on(s)) ti_store_check_locked(s, 1);
    if (pthread_create(&s->thread, NULL, commit_thread, s) != 0) {
        s->state = TI_STORE_QUIET;
        rc = tide_err_set(TIDE_ENOMEM, "open: cannot start the commit thread");
        goto out;
    }
    s->thread_started = 1;
out:
    /* A failed open leaves no file it made: a log it created holds
     * nothing (no commit ran). */
    if (rc && !log_existed && s->log) {
        s->io->close(s->log);
        s->log = NULL;
        s->io->unlink(s->io, s->log_path);
    }
    return rc;
}

static int commit_due(tide_store *s, uint64_t now)
{
    if (s->state == TI_STORE_RETRYING) return 1;     /* a failed batch to retry */
    /* The final flush, or one tide_store_flush asked for (the deferred index). */
    if ((s->closing || s->flush_wanted || s->defer_off) && s->tail.count) return 1;
    if (s->pending->count == 0) return 0;
    if (s->closing) return 1;
    if (s->sync_seq > s->durable_seq) return 1;
    if (s->pending->used >= s->opts.burst_bytes) return 1;
    return now >= s->last_commit_start_us + (uint64_t)s->opts.commit_interval_ms * 1000;
}

static void wait_until_us(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t mono_us)
{
    struct timespec ts;
    uint64_t now = tide_clock_mono_us();
    uint64_t wait = mono_us > now ? mono_us - now : 0;
    /* pthread_cond_timedwait takes a CLOCK_REALTIME deadline. */
    tide_clock_real_timespec(&ts);
    ts.tv_sec += (time_t)(wait / 1000000);
    ts.tv_nsec += (long)(wait % 1000000) * 1000;
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    pthread_cond_timedwait(cv, mu, &ts);
}

/* IDLE -> COMMITTING: pending becomes the batch, the other pool (empty
 * since the last commit reset it) takes new inserts. */
static void take_batch(tide_store *s)
{
    s->committing = s->pending;
    s->pending = s->committing == &s->pools[0] ? &s->pools[1] : &s->pools[0];
    s->committing_seq = s->insert_seq;
    s->state = TI_STORE_COMMITTING;
    pthread_cond_broadcast(&s->room_cv);
}

/* A repeated failure is logged again once a minute, with its count. */
#define FAIL_LOG_EVERY_US (60ull * 1000000)

/* Log a failed attempt (`what` failed with rc and tide_last_error()): the
 * first of a streak, any change of error and a final failure (`final`:
 * close asked, or the store broken) in full; the same error again only
 * once FAIL_LOG_EVERY_US has passed since it was last logged, with the
 * count so far. A disk that stays full for a day writes 1,440
 * lines, not 86,400; the counters (commit_failures) still count every
 * try. Commit thread only. */
static void log_failure(tide_store *s, int rc, const char *what, int final)
{
    const char *next = final ? "final: nothing commits again; nudb.log stays for the next open's recovery"
                             : "retrying every second";
    const char *msg = tide_last_error();
    uint64_t now = tide_clock_mono_us();
    int same = s->fail_log.tries > 0 && s->fail_log.rc == rc &&
               strncmp(s->fail_log.msg, msg, sizeof s->fail_log.msg - 1) == 0;

    if (s->fail_log.tries == 0) s->fail_log.first_us = now;
    s->fail_log.tries++;
    if (same && !final && now - s->fail_log.logged_us < FAIL_LOG_EVERY_US) return;
    if (same)
        tide_log(TIDE_LOG_ERROR, "%s: %s, still, %llu tries in %llu s; %s: %s: %s", s->dir, what,
                 (unsigned long long)s->fail_log.tries, (unsigned long long)((now - s->fail_log.first_us) / 1000000),
                 next, tide_strerror(rc), msg);
    else
        tide_log(TIDE_LOG_ERROR, "%s: %s; %s: %s: %s", s->dir, what, next, tide_strerror(rc), msg);
    s->fail_log.rc = rc;
    snprintf(s->fail_log.msg, sizeof s->fail_log.msg, "%s", msg);
    s->fail_log.logged_us = now;
}

/* The end of a streak of failures: said once. Commit thread only. */
static void log_recovered(tide_store *s)
{
    if (s->fail_log.tries == 0) return;
    tide_log(TIDE_LOG_INFO, "%s: commits succeed again after %llu failed %s in %llu s", s->dir,
             (unsigned long long)s->fail_log.tries, s->fail_log.tries == 1 ? "try" : "tries",
             (unsigned long long)((tide_clock_mono_us() - s->fail_log.first_us) / 1000000));
    memset(&s->fail_log, 0, sizeof s->fail_log);
}

/* A failed attempt, number `me`: its error is what inserts and syncs get;
 * retried in a second, or, with close asked, final. */
static void attempt_failed(tide_store *s, int rc, uint64_t me, uint64_t *retry_at)
{
    s->commit_err = rc;
    s->err_attempt = me;
    *retry_at = tide_clock_mono_us() + 1000000;
    if (s->closing) s->state = TI_STORE_BROKEN;       /* one final try only */
}

/* COMMITTING or RETRYING -> IDLE (DONE), RETRYING (UNDONE), LOG_DIRTY
 * (APPLIED) or BROKEN (the rollback failed, or close asked and it failed). */
static void end_attempt(tide_store *s, int rc, ti_commit_end end, uint64_t took, uint64_t me, uint64_t *retry_at)
{
    s->attempts++;
    __atomic_store_n(&s->last_commit_us, took, __ATOMIC_RELAXED);
    if (end == TI_COMMIT_DONE || end == TI_COMMIT_APPLIED) {
        /* The batch is in the files: fetches find it there. Published
         * after it: a lookup that reads the smaller count finds the batch's
         * buckets (or tail entries), written under key_lock before. */
        __atomic_store_n(&s->pool_items, s->pool_items - s->committing->count, __ATOMIC_RELEASE);
        /* Inserts waiting in pending say the next batch is coming: this
         * pool will take it, so it keeps its chunks and table for it. With
         * none, the load has paused: both pools give their memory back, so
         * an idle store holds no pool memory. */
        if (s->pending->count) {
            ti_pool_recycle(s->committing);
        } else {
            ti_pool_reset(s->committing);
            ti_pool_reset(s->pending);
        }
        s->committing = NULL;
        __atomic_fetch_add(&s->commits, 1, __ATOMIC_RELAXED);
        tide_hist_observe(&s->commit_hist, took * 1000u);
    }
    if (end == TI_COMMIT_DONE) {
        s->durable_seq = s->committing_seq;
        __atomic_store_n(&s->dat_durable, s->dat_size, __ATOMIC_RELEASE);
        s->commit_err = 0;
        s->state = TI_STORE_IDLE;
        log_recovered(s);
    } else if (end == TI_COMMIT_APPLIED) {
        s->applied_seq = s->committing_seq;
        __atomic_fetch_add(&s->commit_failures, 1, __ATOMIC_RELAXED);
        log_failure(s, rc, "a commit reached the files but emptying nudb.log failed", s->closing);
        s->state = TI_STORE_LOG_DIRTY;
        attempt_failed(s, rc, me, retry_at);
    } else {
        __atomic_fetch_add(&s->commit_failures, 1, __ATOMIC_RELAXED);
        log_failure(s, rc, end == TI_COMMIT_BROKEN ? "a commit failed and so did its rollback" : "commit failed",
                    end == TI_COMMIT_BROKEN || s->closing);
        s->state = end == TI_COMMIT_BROKEN ? TI_STORE_BROKEN : TI_STORE_RETRYING;
        attempt_failed(s, rc, me, retry_at);
    }
    if (ti_store_checks_on(s)) ti_store_check_locked(s, 1);
    pthread_cond_broadcast(&s->room_cv);
}

/* LOG_DIRTY -> IDLE when the log is empty at last; else it stays (BROKEN
 * with close asked). */
static void end_clean(tide_store *s, int rc, uint64_t me, uint64_t *retry_at)
{
    s->attempts++;
    if (rc == 0) {
        s->durable_seq = s->applied_seq;
        __atomic_store_n(&s->dat_durable, s->dat_size, __ATOMIC_RELEASE);
        s->commit_err = 0;
        s->state = TI_STORE_IDLE;
        log_recovered(s);
    } else {
        log_failure(s, rc, "emptying nudb.log after a commit failed", s->closing);
        attempt_failed(s, rc, me, retry_at);
    }
    if (ti_store_checks_on(s)) ti_store_check_locked(s, 1);
    pthread_cond_broadcast(&s->room_cv);
}

/* One attempt at the batch taken (without pool_mu): deferring, phase A or
 * a flush; otherwise a commit. The files first, when the open could not
 * prepare them; with nothing to write, a close needs none of them. */
static int attempt_commit(tide_store *s, int flush, ti_commit_end *end)
{
    int rc;

    if (s->files_pending) {
        int nothing = s->committing->count == 0 && s->tail.count == 0;
        *end = TI_COMMIT_UNDONE;
        rc = prepare_files(s);
        if (rc == 0) s->files_pending = 0;
        if (nothing && (rc == 0 || s->closing)) {
            *end = TI_COMMIT_DONE;
            return 0;
        }
        if (rc) return rc;
    }
    return s->opts.index_lag_bytes ? ti_defer_commit(s, s->committing, flush, end)
                                   : ti_commit_batch(s, s->committing, end);
}

static void *commit_thread(void *arg)
{
    tide_store *s = arg;
    uint64_t retry_at = 0;

    pthread_mutex_lock(&s->pool_mu);
    for (;;) {
        uint64_t now = tide_clock_mono_us();
        if (s->state == TI_STORE_BROKEN) break;
        if (s->state == TI_STORE_LOG_DIRTY) {
            /* The last batch is in the files; it is durable once its log
             * is empty. Nothing else commits before that. */
            if (now < retry_at && !s->closing) {
                wait_until_us(&s->work_cv, &s->pool_mu, retry_at);
                continue;
            }
            uint64_t me = ++s->attempts_begun;
            pthread_mutex_unlock(&s->pool_mu);
            int rc = ti_commit_clean_log(s);
            pthread_mutex_lock(&s->pool_mu);
            end_clean(s, rc, me, &retry_at);
            continue;
        }
        if (s->flush_wanted && s->tail.count == 0 && s->state == TI_STORE_IDLE) {
            s->flush_wanted = 0;            /* nothing left to flush */
            pthread_cond_broadcast(&s->room_cv);
        }
        if (s->closing && s->pending->count == 0 && s->tail.count == 0 &&
            s->state == TI_STORE_IDLE) {
            s->state = TI_STORE_CLOSED;
            break;
        }
        int retrying = s->state == TI_STORE_RETRYING;
        if (!commit_due(s, now) || (retrying && now < retry_at && !s->closing)) {
            uint64_t until = retrying ? retry_at
                           : s->last_commit_start_us + (uint64_t)s->opts.commit_interval_ms * 1000;
            if (s->pending->count == 0 && !retrying) until = now + 1000000;
            wait_until_us(&s->work_cv, &s->pool_mu, until);
            continue;
        }
        if (!retrying) take_batch(s);
        s->last_commit_start_us = now;
        int flush = s->closing || s->flush_wanted || s->defer_off;
        uint64_t me = ++s->attempts_begun;
        pthread_mutex_unlock(&s->pool_mu);

        uint64_t t0 = tide_clock_mono_us();
        ti_commit_end end;
        int rc = attempt_commit(s, flush, &end);
        uint64_t took = tide_clock_mono_us() - t0;

        pthread_mutex_lock(&s->pool_mu);
        if (flush && end == TI_COMMIT_DONE) s->flush_wanted = 0;
        end_attempt(s, rc, end, took, me, &retry_at);
    }
    pthread_cond_broadcast(&s->room_cv);
    pthread_mutex_unlock(&s->pool_mu);
    return NULL;
}

void ti_store_break(tide_store *s)
{
    pthread_mutex_lock(&s->pool_mu);
    TIDE_ASSERT(s->state == TI_STORE_IDLE || s->state == TI_STORE_REBUILDING);
    s->state = TI_STORE_BROKEN;
    pthread_mutex_unlock(&s->pool_mu);
}

void ti_committer_stop(tide_store *s)
{
    if (!s->thread_started) return;
    pthread_mutex_lock(&s->pool_mu);
    s->closing = 1;
    pthread_cond_signal(&s->work_cv);
    pthread_mutex_unlock(&s->pool_mu);
    pthread_join(s->thread, NULL);
}
