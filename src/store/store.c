/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store.c: open, create, insert, fetch, sync and close of a Tide store, and
 * the commit thread that makes inserts durable.
 *
 * Layout of the work: an insert goes into the `pending` pool, where fetches
 * see it at once. About once a second (or when the pool holds burst_bytes,
 * or a sync asks) the commit thread swaps `pending` for `committing` and
 * commits it (commit.c). Items stay visible in `committing` until their
 * buckets are in the key file; then the pool is reset.
 *
 * Open is three steps: the files (lock_files: the lock, then the holders
 * check), recovery (recover_if_needed: an interrupted commit's log, an
 * interrupted rekey's leftovers), and the start (load_files reads the
 * headers and checks the index; start_commits empties the log and starts
 * the thread).
 *
 * The handle's mode (store_impl.h) says which kind of handle this is; a
 * writer's states are committer.c's diagram.
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
 *      commit counted was an attempt (commits <= attempts).
 *   5. An insert is admitted only while pending's `used` (its items and
 *      table) is below burst_bytes, so every pool was below burst_bytes
 *      just before its newest item came in, and takes no item after one
 *      that took it over. Hence the pools hold less than 2 * burst_bytes
 *      plus, for each pool, its newest item (and the table growth that
 *      item caused): a value larger than the burst is admitted, not
 *      refused or split, and the inserts after it wait for its commit.
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
#include "util/assert.h"
#include "util/err.h"
#include "util/log.h"

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

void ti_store_free(tide_store *s)
{
    if (s == NULL) return;
    ti_live_free(s);                    /* tide.live's page, if any */
    if (s->live_mark) s->io->close(s->live_mark);
    if (s->dat) s->io->close(s->dat);
    if (s->key) s->io->close(s->key);
    if (s->log) s->io->close(s->log);
    if (s->meta) s->io->close(s->meta);
    ti_tail_clear(&s->tail);
    ti_keymap_close(&s->keymap);
    ti_keymap_close(&s->datmap);
    free(s->tally);
    ti_pool_reset(&s->pools[0]);
    ti_pool_reset(&s->pools[1]);
    pthread_rwlock_destroy(&s->key_lock);
    pthread_mutex_destroy(&s->pool_mu);
    pthread_mutex_destroy(&s->write_mu);
    pthread_cond_destroy(&s->room_cv);
    pthread_cond_destroy(&s->work_cv);
    free(s->dir);
    free(s->dat_path);
    free(s->key_path);
    free(s->log_path);
    free(s->meta_path);
    free(s);
}

int ti_store_alloc(tide_store **out, const char *dir, const tide_store_opts *opts,
                   ti_store_mode mode)
{
    tide_store *s = calloc(1, sizeof *s);
    ti_store_paths p = { 0 };
    int rc;

    *out = NULL;
    if (s == NULL) return tide_err_set(TIDE_ENOMEM, "open: out of memory");
    s->mode = mode;
    ti_keymap_init(&s->keymap);
    ti_keymap_init(&s->datmap);
    if (opts) s->opts = *opts;
    else tide_store_opts_init(&s->opts);
    if (s->opts.burst_bytes == 0) s->opts.burst_bytes = TIDE_BURST_DEFAULT;
    if (s->opts.commit_interval_ms == 0) s->opts.commit_interval_ms = TIDE_COMMIT_INTERVAL_DEFAULT_MS;
    s->io = s->opts.io ? s->opts.io : tide_io_posix();
    if (ti_store_is_reader(s)) s->opts.index_lag_bytes = 0;     /* a reader never defers */
    ti_tail_init(&s->tail, s->opts.index_lag_bytes);      /* the deferred index's tail */
    {
        /* Writer preference: with glibc's default, a steady stream of
         * fetches keeps the commit's write phase waiting for ever. */
        pthread_rwlockattr_t attr;
        pthread_rwlockattr_init(&attr);
        pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
        pthread_rwlock_init(&s->key_lock, &attr);
        pthread_rwlockattr_destroy(&attr);
    }
    pthread_mutex_init(&s->pool_mu, NULL);
    pthread_mutex_init(&s->write_mu, NULL);
    pthread_cond_init(&s->room_cv, NULL);
    pthread_cond_init(&s->work_cv, NULL);
    s->dir = strdup(dir);
    s->tally = aligned_alloc(TI_TALLY_LINE, sizeof *s->tally);
    if (s->tally) memset(s->tally, 0, sizeof *s->tally);
    if (s->dir == NULL || s->tally == NULL) { rc = tide_err_set(TIDE_ENOMEM, "open: out of memory"); goto out; }
    if ((rc = ti_store_paths_make(dir, &p)) != 0) goto out;
    s->dat_path = p.dat; s->key_path = p.key; s->log_path = p.log;
    p.dat = p.key = p.log = NULL;
    *out = s;
    s = NULL;
out:
    ti_store_paths_free(&p);
    ti_store_free(s);
    return rc;
}

static int open_store(tide_store **out, const char *dir, const tide_store_opts *opts, int check,
                      int *holders_checked, int live);

int tide_store_open(tide_store **out, const char *dir, const tide_store_opts *opts)
{
    return open_store(out, dir, opts, 1, NULL, 1);
}

static ti_store_paths paths_of(const tide_store *s)
{
    return (ti_store_paths){ s->dat_path, s->key_path, s->log_path };
}

/* A writable open refused nudb.key's lock: name who holds the store (the
 * lock itself does not say), as the holders check would. */
static int name_lock_holder(tide_store *s)
{
    ti_store_holder_seen h;
    char why[512];

    snprintf(why, sizeof why, "%s", tide_last_error());
    if (ti_store_other_holders(s->io, s->dir, 0, &h) != 0 || h.count == 0) {
        tide_err_clear();
        return tide_err_set(TIDE_EBUSY, "%s (another handle of this process, or a process this "
                            "user cannot see); nothing was changed", why);
    }
    return tide_err_set(TIDE_EBUSY, "%s: the store is open in process %d (%s), which holds "
                        "nudb.key's lock%s; stop it first; nothing was changed", s->dir, h.pid,
                        h.comm, h.count > 1 ? " (with others)" : "");
}

/* A read-only open learns which reader it is: READER becomes `mode`, once,
 * before the handle is returned (store_impl.h: the mode). */
static void narrow_reader(tide_store *s, ti_store_mode mode)
{
    TIDE_ASSERT(s->mode == TI_STORE_READER);
    s->mode = mode;
}

/* Open step 1, the files: nudb.key opened and locked, then (read-write)
 * the holders check. Lock before looking at the log: a non-empty log is a
 * crash only when no other handle has the store open; otherwise it is a
 * live commit. */
static int lock_files(tide_store *s, int flags, int *holders_checked, int live)
{
    ti_store_paths p = paths_of(s);
    int rc;

    if ((rc = ti_store_check_files(s->io, s->dir, &p)) != 0) return rc;
    /* A reader opens tide.live before nudb.key, so that a
     * writer's holders scan never meets it without its mark, and holds it
     * (live.c: the readers' hold), so that no rotation cuts it under. */
    if (ti_store_is_reader(s) && (rc = ti_live_preopen(s)) != 0) return rc;
    if ((rc = s->io->open(s->io, s->key_path, flags, &s->key)) != 0) return rc;
    rc = s->io->lock(s->key, !ti_store_is_reader(s));
    if (ti_store_is_reader(s)) {
        /* Refused: a writer holds nudb.key; read through its tide.live. */
        if (rc == TIDE_EBUSY) {
            rc = ti_live_attach(s);
            if (rc == 0) {
                narrow_reader(s, TI_STORE_LIVE_READER);
                tide_err_clear();       /* the lock's refusal is not an error here */
            }
            return rc;
        }
        /* No writer: the page is not read, but tide.live stays open, the
         * mark by which other readers' holders checks (holders.c) know
         * this handle for a Tide reader. */
        if (s->live && s->live->f) {
            s->live_mark = s->live->f;
            s->live->f = NULL;
        }
        ti_live_free(s);
    }
    if (rc == TIDE_EBUSY) return name_lock_holder(s);
    if (rc) return rc;
    /* Our lock keeps Tide's handles out; NuDB's writers take none, and
     * recovering or committing beside one destroys its work. Tide's
     * readers (live.c) change nothing and follow the seqlock. */
    if (!ti_store_is_reader(s) && !s->opts.ignore_holders) {
        rc = ti_store_refuse_holders_ex(s->io, s->dir, "opening it for writing", live);
        if (rc == 0 && holders_checked) *holders_checked = 1;
    }
    /* tide.live's page, its seq odd through recovery and loading. */
    if (rc == 0 && !ti_store_is_reader(s) && live) rc = ti_live_create(s);
    return rc;
}

/* A read-only open of a store whose nudb.log needs recovery. The idle log
 * of a stopped deferred writer (tided killed with the lag on) changed no
 * bucket: the store is read as it is, [W, C)
 * through the tail (IDLE_READER). Anything else is refused: the log holds
 * pre-images, which only a recovery may write back. */
static int read_only_view(tide_store *s, uint64_t log_size)
{
    ti_idle_view v;
    int rc = ti_recover_idle_view(s->io, s->dir, !s->opts.ignore_holders, &v);

    if (rc) return rc;
    if (v.idle) {
        narrow_reader(s, TI_STORE_IDLE_READER);
        s->dat_indexed = v.W;
        s->dat_committed = v.C;
        return 0;
    }
    if (v.why[0]) return tide_err_set(v.why_rc, "%s", v.why);
    return tide_err_set(TIDE_EBUSY, "%s: nudb.log holds an unfinished commit of %llu bytes "
                        "(bucket pre-images: a crash's, or a live NuDB writer's, which takes no "
                        "lock); a read-only open never recovers: run 'tide recover' (or start the "
                        "store's tided) when no process writes the store; nothing was read or "
                        "written", s->dir, (unsigned long long)log_size);
}

/* Open step 2, recovery: undo a commit nudb.log holds (a read-only handle
 * refuses instead, or reads a stopped deferred writer's idle log as is), and repair what an interrupted rekey left. *log_size
 * gets the log's size before. */
static int recover_if_needed(tide_store *s, uint64_t *log_size)
{
    ti_store_paths p = paths_of(s);
    tide_recover_report rep;
    int rc, needed = 0;

    if (ti_store_reads_through_live(s)) return 0;   /* the log is the live writer's (tide.live) */
    if ((rc = ti_store_log_needs_recovery(s->io, s->log_path, log_size, &needed)) != 0) return rc;
    if (needed && ti_store_is_reader(s)) return read_only_view(s, *log_size);
    if (needed) {
        rc = ti_recover_paths(s->io, s->dat_path, s->key_path, s->log_path, s->dir, 1, 1, &rep);
        if (rc) return rc;
        tide_log(TIDE_LOG_INFO, "%s: recovered an interrupted commit: %llu buckets restored, "
                 "nudb.dat truncated to %llu bytes", s->dir,
                 (unsigned long long)rep.buckets_restored, (unsigned long long)rep.dat_truncated_to);
        /* The deferred index: committed records the key file does not index yet
         * (start_commits indexes them). */
        s->dat_indexed = rep.tail_from;
        s->dat_committed = rep.tail_to;
        if ((rc = ti_store_check_files(s->io, s->dir, &p)) != 0) return rc;
    }
    /* A rekey interrupted before its rename leaves nudb.key.new (garbage:
     * the store is the old one) and perhaps, past the log's reach, its
     * spill records, which nudb.rekey says how to cut off. */
    if (!ti_store_is_reader(s)) {
        int completed = 0;
        rc = ti_rekey_repair(s->io, s->dir, s->dat_path, NULL, &completed);
        if (rc == 0 && completed) {
            /* nudb.key is another file now: lock that one. */
            s->io->close(s->key);
            s->key = NULL;
            rc = s->io->open(s->io, s->key_path, TIDE_IO_WRITE, &s->key);
            if (rc == 0) rc = s->io->lock(s->key, 1);
        }
    }
    return rc;
}

/* Open step 3: nudb.dat opened, both headers read, the geometry set, the
 * index checked (when `check`), the pools made. */
static int load_files(tide_store *s, int flags, int check)
{
    uint64_t dat_size = 0, key_size = 0;
    int rc;

    if ((rc = s->io->open(s->io, s->dat_path, flags, &s->dat)) != 0) return rc;
    rc = ti_store_read_headers(s->io, s->dat, s->key, s->dat_path, s->key_path, &s->kh, &dat_size, &key_size);
    if (rc) return rc;
    s->key_size = s->kh.key_size;
    s->block_size = s->kh.block_size;
    s->capacity = ti_fmt_capacity(s->block_size);
    s->split_units = (uint64_t)s->kh.load_factor * s->capacity;
    if (s->split_units < 65536) s->split_units = 65536;
    s->buckets = key_size / s->block_size - 1;
    /* The key count is not stored, so a session cannot know how far the
     * last one got toward its next split; start half way, as NuDB does, so
     * a store reopened after every few inserts still grows. */
    s->split_credit = s->split_units / 2;
    s->dat_size = dat_size;
    /* W and C (the deferred index): a recovered tail [W, C) ends at the data
     * file's end; otherwise every record is indexed. */
    if (s->mode == TI_STORE_IDLE_READER) {
        /* Past C lies what a recovery cuts off; C <= dat_size was checked. */
        TIDE_ASSERT(s->dat_committed <= dat_size);
        s->dat_size = s->dat_committed;
    } else if (s->dat_committed > s->dat_indexed) {
        TIDE_ASSERT(s->dat_committed == dat_size);
    } else {
        s->dat_indexed = s->dat_committed = dat_size;
    }
    /* nudb.dat likewise ("Reading nudb.dat" below): recovery and rekey's
     * repair have cut what they cut; nothing cuts below this size now.
     * Made before the index check, whose lookups read through it too. */
    s->dat_stable = dat_size;
    if (!s->opts.no_map && !ti_store_reads_through_live(s) &&
        ti_keymap_open(&s->datmap, s->io, s->dat, dat_size) != 0) {
        tide_log(TIDE_LOG_DEBUG, "%s: lookups read nudb.dat with pread: %s", s->dir, tide_last_error());
        tide_err_clear();
    }
    /* A live reader's view comes from tide.live (the writer checked the
     * index at its open; the files move under this one). */
    if (check && !ti_store_reads_through_live(s) && (rc = ti_store_check_index(s)) != 0) return rc;
    /* The map is a speed-up: without it lookups pread as before. A live
     * reader never maps: the writer's rollback may cut nudb.key under it,
     * and a touched page past the end is SIGBUS; its preads see the cut. */
    if (!s->opts.no_map && !ti_store_reads_through_live(s) &&
        ti_keymap_open(&s->keymap, s->io, s->key, key_size) != 0) {
        tide_log(TIDE_LOG_DEBUG, "%s: lookups read nudb.key with pread: %s", s->dir, tide_last_error());
        tide_err_clear();
    }
    ti_pool_init(&s->pools[0], s->key_size, s->opts.burst_bytes);
    ti_pool_init(&s->pools[1], s->key_size, s->opts.burst_bytes);
    for (int i = 0; i < 2; i++) {
        s->pools[i].note_alloc = s->opts.pool_account_id >= 0 ? s->opts.note_alloc : NULL;
        s->pools[i].note_id = s->opts.pool_account_id;
    }
    s->pending = &s->pools[0];
    s->committing = NULL;
    return 0;
}

int ti_store_open_checked(tide_store **out, const char *dir, const tide_store_opts *opts,
                          int check, int *holders_checked)
{
    /* Rekey and verify: no tide.live is made (a rekey renames nudb.key,
     * which a reader holding the old one would never see), and Tide's
     * readers count as holders. */
    return open_store(out, dir, opts, check, holders_checked, 0);
}

static int open_store(tide_store **out, const char *dir, const tide_store_opts *opts, int check,
                      int *holders_checked, int live)
{
    tide_store *s = NULL;
    uint64_t log_size = 0;
    int rc, flags;

    tide_err_clear();
    *out = NULL;
    if ((rc = ti_store_alloc(&s, dir, opts, opts && opts->read_only ? TI_STORE_READER
                                                                     : TI_STORE_WRITER)) != 0)
        return rc;
    flags = ti_store_is_reader(s) ? TIDE_IO_READ : TIDE_IO_WRITE;
    if (holders_checked) *holders_checked = 0;
    if ((rc = lock_files(s, flags, holders_checked, live)) != 0) goto out;
    if ((rc = recover_if_needed(s, &log_size)) != 0) goto out;
    if ((rc = load_files(s, flags, check)) != 0) goto out;
    if (ti_store_is_reader(s)) {
        if (ti_store_reads_through_live(s) && (rc = ti_live_start_reader(s)) != 0) goto out;
        if (s->mode == TI_STORE_IDLE_READER && s->dat_indexed < s->dat_committed &&
            (rc = ti_defer_read_tail(s)) != 0)
            goto out;
        if (ti_store_checks_on(s)) ti_store_check_locked(s, 1);
    } else {
        ti_live_end(s);             /* tide.live: the counts; readers may look */
        if ((rc = ti_committer_start(s, log_size, live)) != 0) goto out;
    }
    *out = s;
    s = NULL;
    rc = 0;
out:
    /* A file gone under a reader's hold: a rotation deleted the store. */
    if (rc == TIDE_ENOENT && s && ti_store_is_reader(s) && (s->live_mark || (s->live && s->live->f)))
        rc = ti_live_lost(s->io, s->dir, rc);
    ti_store_free(s);
    return rc;
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
    uint64_t attempts0 = s->attempts;
    if (s->sync_seq < target) s->sync_seq = target;
    pthread_cond_signal(&s->work_cv);
    while (s->durable_seq < target) {
        /* The commit thread sets commit_err and counts the attempt together
         * under pool_mu, so a waiter never sees a failure half reported. */
        if (s->commit_err && s->attempts > attempts0) { rc = s->commit_err; break; }
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
    uint64_t attempts0 = s->attempts;
    s->flush_wanted = 1;
    pthread_cond_signal(&s->work_cv);
    while (s->flush_wanted) {
        if (s->commit_err && s->attempts > attempts0) { rc = s->commit_err; break; }
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
    o->pool_bytes = s->pending->bytes + (s->committing ? s->committing->bytes : 0);
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
