/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * open.c: a store handle made and unmade (ti_store_alloc, ti_store_free),
 * and the open that fills it in: tide_store_open and ti_store_open_checked
 * (rekey's and verify's, with no tide.live and Tide's readers counted as
 * holders).
 *
 * The open decides the handle's mode (store_impl.h) and then follows it.
 * Its steps, in open_store:
 *   1. The files (lock_files): nudb.dat and nudb.key there, no link out
 *      of the directory; a reader takes the readers' hold on tide.live
 *      first; then nudb.key's flock: exclusive for a WRITER (refused:
 *      name_lock_holder says who), shared for a reader. A reader refused
 *      it is beside a writer in another process: it attaches to tide.live
 *      and becomes a LIVE_READER. A WRITER then refuses other holders of
 *      the files (holders.c; Tide's readers are welcome when tide.live is
 *      made) and makes tide.live's page, its seq odd.
 *   2. Recovery (recover_if_needed): a WRITER undoes the commit nudb.log
 *      holds and repairs what an interrupted rekey left; a reader never
 *      writes: the idle log of a stopped deferred writer makes it an
 *      IDLE_READER (read_only_view), any other log refuses the open; a
 *      LIVE_READER's log is its writer's and not looked at.
 *   3. Loading (load_files): the headers read and checked, the geometry, W
 *      and C, the maps (not a LIVE_READER's), the cheap index check
 *      (index_check.c; not a LIVE_READER's), the pools.
 *   4. The start: a LIVE_READER's first view (reader.c), an IDLE_READER's
 *      tail read; a WRITER publishes tide.live and starts its commit
 *      thread (committer.c: ti_committer_start).
 *
 * `live` (tide_store_open's 1, ti_store_open_checked's 0) is a parameter
 * of the open, not a mode: a tool's writer (rekey) makes no tide.live,
 * counts Tide's readers as holders, and does not serve on a full disk;
 * once open it is a WRITER like any other.
 *
 * Invariants:
 *   1. The lock before the log: a non-empty nudb.log is a crash only when
 *      no other handle has the store; otherwise it is a live commit.
 *   2. The mode is set at alloc and narrowed at most once (READER to
 *      LIVE_READER or IDLE_READER: narrow_reader), all before the handle
 *      is returned; it never changes after.
 *   3. A failed open frees everything it made and leaves no file it
 *      created (committer.c removes a log it made); a file gone under a
 *      reader's hold is reported as the rotation that deleted the store.
 *   4. A reader writes nothing, ever: no recovery, no log, no repair.
 *
 * Never: recover a log while another process holds the files; map a
 *   LIVE_READER's files; return a handle whose mode is still to be decided.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store_impl.h"
#include "util/assert.h"
#include "util/err.h"
#include "util/log.h"
#include "util/size.h"

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
         * (ti_committer_start indexes them). */
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

/* The key file's size up to which its map reads around a faulted page:
 * 3/4 of the memory for the store's pages (opts.page_memory, else the
 * machine's), leaving a quarter for the records fetches read. */
static uint64_t key_read_around_limit(const tide_store_opts *o)
{
    uint64_t memory = o->page_memory;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

    if (memory == 0 && pages > 0 && page > 0) memory = (uint64_t)pages * (uint64_t)page;
    if (memory == 0) return UINT64_MAX;    /* unknown: the kernel's default */
    return memory / 4 * 3;
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
    /* Recovery is over: what the file holds below C stays (store_impl.h). */
    s->dat_durable = s->dat_committed;
    /* Lookups read records scattered over nudb.dat: a page not in memory is
     * read alone, without the read-around that would bring the record's
     * neighbours (as much as read_ahead_kb, 8 MiB on some machines) into a
     * page cache too small for the store. */
    if (!s->opts.pread && !ti_store_reads_through_live(s) &&
        ti_keymap_open(&s->datmap, s->io, s->dat, dat_size, 0) != 0) {
        tide_log(TIDE_LOG_DEBUG, "%s: lookups read nudb.dat with pread: %s", s->dir, tide_last_error());
        tide_err_clear();
    }
    /* A live reader's view comes from tide.live (the writer checked the
     * index at its open; the files move under this one). */
    if (check && !ti_store_reads_through_live(s) && (rc = ti_store_check_index(s)) != 0) return rc;
    /* The map is a speed-up: without it lookups pread as before. A live
     * reader never maps: the writer's rollback may cut nudb.key under it,
     * and a touched page past the end is SIGBUS; its preads see the cut. */
    if (!s->opts.pread && !ti_store_reads_through_live(s)) {
        uint64_t around = key_read_around_limit(&s->opts);
        if (ti_keymap_open(&s->keymap, s->io, s->key, key_size, around) != 0) {
            tide_log(TIDE_LOG_DEBUG, "%s: lookups read nudb.key with pread: %s", s->dir, tide_last_error());
            tide_err_clear();
        } else if (ti_keymap_reads_alone(&s->keymap)) {
            char file[32], limit[32];
            tide_size_format(key_size, file, sizeof file);
            tide_size_format(around, limit, sizeof limit);
            tide_log(TIDE_LOG_INFO, "%s: nudb.key (%s) is over %s, 3/4 of the memory for the store's "
                     "pages: a bucket not in memory is read alone, without read-around",
                     s->dir, file, limit);
        }
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
