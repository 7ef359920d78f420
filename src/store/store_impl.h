/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store_impl.h: the inside of a tide_store, shared by the store's files:
 * store.c (the handle's calls), open.c (the open, which sets the mode),
 * files.c and index_check.c (the files and their checks), lookup.c (every
 * handle's lookups), reader.c and live.c (tide.live), committer.c (the
 * commit thread), commit.c and defer.c (one commit), recover.c, rekey.c,
 * verify.c, visit.c and store_check.c (the invariants).
 *
 * Locks of one process, always taken in this order (a later one may be
 * taken while an earlier one is held, never the reverse):
 *   write_mu  serialises inserts (the single writer): held across an
 *             insert's duplicate lookup (pool_mu, then key_lock, each
 *             released) and its add to the pool (pool_mu).
 *   pool_mu   guards pending/committing pools, sequence numbers, the
 *             state and the flags the commit thread reads.
 *   key_lock  a rwlock, writers preferred. Read: any lookup's tail and
 *             bucket (lookup.c), a LIVE_READER's view (reader.c, which
 *             replaces it under the write lock); write: the commit's
 *             key-file write phase, a deferred append's tail update, a
 *             flush (buckets, bucket count, W, C and the tail change
 *             together). tide_store_check takes pool_mu, then key_lock.
 * The commit thread holds none of them while it writes nudb.dat and
 * nudb.log, and releases pool_mu before it takes key_lock. Between
 * processes, nudb.key's flock (exclusive for a writer, shared for a
 * reader with no writer) and tide.live's seqlock and flock (live.c).
 */
#ifndef TIDE_STORE_IMPL_H
#define TIDE_STORE_IMPL_H

#include <pthread.h>
#include <stdint.h>

#include "store/full.h"
#include "io/io.h"
#include "store/format.h"
#include "store/live.h"
#include "store/keymap.h"
#include "store/pool.h"
#include "store/tail.h"
#include "store/tally.h"
#include "util/hist.h"

/*
 * The handle's mode: which kind of handle this is. Set by the open and
 * never changed once it returns (so read without a lock by any thread):
 * ti_store_alloc takes it (WRITER or READER from opts.read_only, REBUILD
 * from rekey.c), and a read-only open narrows READER at most once, before
 * any thread or caller sees the handle: to LIVE_READER when a writer holds
 * nudb.key (lock_files), to IDLE_READER when nudb.log is a stopped
 * deferred writer's idle log (read_only_view).
 *
 * Mode, not state: what the handle is, and so which code paths it may take.
 * The rest of the struct is state that moves while the handle is open:
 * `state` (the commit thread's diagram), flush_wanted and defer_off (the
 * deferred index asked to flush, or switched off, at run time), tail_kept
 * and files_pending (a full disk at open, until the thread catches up),
 * thread_started (close joins the thread), closing (close's request), and
 * `live` (a writer's page may be absent: an io that shares no pages, a
 * tide.live that could not be made).
 *
 * What each mode holds (ti_store_check_locked asserts it):
 *   WRITER       read-write: pools, nudb.log, the commit thread (once the
 *                open's start returns); state never QUIET or REBUILDING;
 *                `live` is its own page or NULL; no live_mark.
 *   READER       read-only, no writer: state QUIET, no thread, nothing
 *                inserted, no log; the files as they are (W == C ==
 *                dat_size, no tail); live_mark may hold tide.live open.
 *   LIVE_READER  read-only beside a writer in another process: as READER,
 *                but `live` is that writer's page (mapped) and every
 *                lookup goes through its seqlock (reader.c); the files
 *                move under it, so no map and no size check of nudb.key.
 *   IDLE_READER  read-only, the idle log of a stopped deferred writer
 *                (ti_recover_idle_view): as READER, but [W, C) are read
 *                through the tail, nothing written, dat_size == C.
 *   REBUILD      rekey.c's handle made from nudb.dat alone: no pools, no
 *                thread; state REBUILDING, or BROKEN when rekey.c could
 *                not undo its work; the key file is not the store's yet.
 */
typedef enum ti_store_mode {
    TI_STORE_WRITER = 1,
    TI_STORE_READER,
    TI_STORE_LIVE_READER,
    TI_STORE_IDLE_READER,
    TI_STORE_REBUILD
} ti_store_mode;

/*
 * The store's state (committer.c's essay draws the diagram and names the
 * function that makes each transition). Read and changed under pool_mu.
 */
typedef enum ti_store_state {
    TI_STORE_QUIET = 0,     /* no commit thread: a reader, or a writer not yet started */
    TI_STORE_REBUILDING,    /* a REBUILD handle (rekey.c), until it breaks */
    TI_STORE_IDLE,          /* the thread waits; no batch taken */
    TI_STORE_COMMITTING,    /* a batch taken, being written */
    TI_STORE_RETRYING,      /* the taken batch failed, rolled back; retried */
    TI_STORE_LOG_DIRTY,     /* a batch in the files, its log not emptied */
    TI_STORE_BROKEN,        /* a failure could not be undone: nothing commits */
    TI_STORE_CLOSED         /* the thread has committed everything and ended */
} ti_store_state;

struct tide_store {
    ti_store_mode mode;           /* fixed by the open (above) */
    tide_io   *io;
    tide_store_opts opts;
    char      *dir, *dat_path, *key_path, *log_path;
    tide_file *dat, *key, *log;
    tide_key_header kh;
    unsigned   key_size, block_size, capacity;
    uint64_t   split_units;       /* inserts per split, in 1/65536: lf_raw * capacity */

    /* Changed only by the commit thread, under key_lock (write). */
    pthread_rwlock_t key_lock;
    uint64_t   buckets;
    uint64_t   dat_size;          /* end of nudb.dat */
    uint64_t   split_credit;      /* in 1/65536 inserts, below split_units */
    uint64_t   split_owed;        /* buckets the entries call for beyond these (splits.c) */
    /* nudb.key indexes every record below
     * dat_indexed (W); every record below dat_committed (C) is complete.
     * Without the deferred index both are dat_size after each commit. */
    uint64_t   dat_indexed, dat_committed;

    /* tide.live (live.h). A WRITER's own page (NULL when it has none), a
     * LIVE_READER's view of its writer's page; NULL in every other mode. */
    ti_live   *live;
    /* A READER or IDLE_READER: tide.live kept open (not mapped), so that
     * other readers' holders checks count it as a Tide reader. */
    tide_file *live_mark;

    pthread_mutex_t pool_mu;
    pthread_cond_t  room_cv;      /* pool has room, a commit ended */
    pthread_cond_t  work_cv;      /* wakes the commit thread */
    ti_pool  pools[2];
    ti_pool *pending, *committing;
    uint64_t   pool_items;        /* pending->count + committing->count:
                                     written under pool_mu, read without it
                                     (acquire) by a lookup that skips empty
                                     pools (lookup.c, ti_lookup_pools) */
    uint64_t   insert_seq;        /* inserts accepted */
    uint64_t   durable_seq;       /* inserts durable */
    uint64_t   committing_seq;    /* insert_seq when `committing` was taken */
    uint64_t   sync_seq;          /* a sync waits for this insert_seq */
    uint64_t   attempts;          /* commit attempts finished */
    uint64_t   attempts_begun;    /* commit attempts started: the number of
                                     the one running, or of the last */
    uint64_t   err_attempt;       /* attempts_begun of the attempt whose
                                     error commit_err holds (0: the open's,
                                     before any attempt); a sync or flush
                                     fails only for an attempt that began
                                     after its call */
    ti_store_state state;         /* committer.c's diagram */
    int        commit_err;        /* the failed attempt's error: nonzero
                                     exactly in RETRYING and LOG_DIRTY (and
                                     kept in BROKEN) */
    int        closing;           /* close asked: a request the thread
                                     honours in every state (no waits; a
                                     failure is final), not a state */
    uint64_t   applied_seq;       /* LOG_DIRTY: insert_seq of the batch in
                                     the files whose log is not emptied */
    int        thread_started;    /* a fact, not a state: close joins it */
    uint64_t   last_commit_start_us;
    pthread_t  thread;

    pthread_mutex_t write_mu;

    /* The deferred index (tail.c, defer.c). W (dat_indexed,
     * above): the key file indexes every record below it; C
     * (dat_committed): every record below it is synced and acknowledged.
     * W == C == dat_size after every commit unless opts.index_lag_bytes;
     * then [W, C) are the tail's records. Changed by the commit thread
     * under key_lock (write), read atomically; `tail` read under key_lock
     * (read). */
    ti_tail    tail;
    char      *meta_path;
    tide_file *meta;              /* tide.meta, open while deferring */
    uint64_t   meta_seq;          /* the last slot's seq written or read */
    uint64_t   index_flushes;     /* flushes of a non-empty tail (atomic) */
    int        lag_advised;       /* the tail's advice is logged (defer.c,
                                     advise_lag; the commit thread's) */
    int        flush_wanted;      /* tide_store_flush asked (pool_mu) */
    /* 1 from an open whose recovered tail could not be indexed for want
     * of space (it is then held whole, past the lag's budget) until a
     * flush indexes it (atomic; written by the open and the commit
     * thread). */
    int        tail_kept;
    /* 1 from an open that could not prepare nudb.log or tide.meta for want
     * of space until the commit thread has (committer.c prepare_files); read
     * and written by the open, then by the commit thread only. */
    int        files_pending;
    /* tide_store_set_deferring(s, 0): every commit indexes its batch and
     * the tail at once (a flush), so the tail stays empty (generations: a
     * generation that stops being the newest, so that only the newest holds
     * a tail and all the tails stay within one index_lag_bytes). Written
     * under pool_mu, read there and atomically by get_info. */
    int        defer_off;
    /* nudb.key mapped for lookups (keymap.h); read under key_lock. */
    ti_keymap  keymap;
    /* nudb.dat mapped for the records and spill records lookups read
     * (keymap.h's machinery on the data file; lookup.c "Reading nudb.dat").
     * dat_stable (atomic): no path truncates nudb.dat below it while the
     * store is open; the map shows bytes below it only. Raised (never
     * lowered) by the commit thread once a commit can no longer be rolled
     * back: ti_store_dat_stable. */
    ti_keymap  datmap;
    uint64_t   dat_stable;
    /* dat_durable (atomic): nudb.dat's size as of the last commit that is
     * done (its log emptied, or its tide.meta slot synced): no recovery
     * cuts below it, whatever crash comes, and the bytes below it never
     * change. What a copy of the file elsewhere (the archive) may take.
     * dat_stable may lie above it for a moment: a commit applied to both
     * files whose log is not yet emptied is undone by a crash's recovery.
     * Set at open and by the commit thread at each commit's end. */
    uint64_t   dat_durable;
    /* The fetch path's counters, one cache line per thread (tally.h). */
    ti_tally  *tally;

    /* The streak of failed attempts the log tells of (committer.c
     * log_failure): commit thread only. */
    struct {
        uint64_t tries, first_us, logged_us;
        int      rc;
        char     msg[256];
    } fail_log;

    /* Counters (atomic). */
    uint64_t   inserts, commits, commit_failures, bytes_written, syncs;
    uint64_t   last_commit_us, commit_buffer_bytes;
    tide_hist  commit_hist;      /* durations of commits that reached the files */
};

/*
 * Commit the pool `batch` (the committing pool): append its records, grow
 * and rewrite the buckets under the undo-log protocol, sync. On failure the
 * files are rolled back to their state before the commit (from the in-memory
 * pre-images) and the error is returned (*end TI_COMMIT_UNDONE); if the
 * rollback fails too, *end is TI_COMMIT_BROKEN (the caller marks the store
 * broken) and nudb.log is left for recovery at the next open. *end is
 * TI_COMMIT_APPLIED when the batch reached both files and only emptying the
 * log failed: then nothing is rolled back, and the caller must retry
 * ti_commit_clean_log before it acknowledges the batch.
 * Called by the commit thread only.
 */
typedef enum ti_commit_end {
    TI_COMMIT_DONE = 0,     /* in the files, durable, log emptied */
    TI_COMMIT_UNDONE,       /* failed, the files rolled back */
    TI_COMMIT_APPLIED,      /* in the files; emptying the log failed */
    TI_COMMIT_BROKEN        /* failed, and the rollback failed too */
} ti_commit_end;
int ti_commit_batch(struct tide_store *s, ti_pool *batch, ti_commit_end *end);

/* The most bytes of log records (pre-images) one range of a commit holds
 * in memory (commit.c, step 2): a commit that changes more old buckets
 * than fit logs and rebuilds them range by range, so its buffers stay
 * within this plus the fixed read and write buffers (3 MiB) and what grows
 * with its entries (docs/MEMORY-LIMIT.md), however large the key file. */
#define TI_COMMIT_RANGE_BYTES ((size_t)4 << 20)

/* For tests only: ranges of at most `bytes` (0: TI_COMMIT_RANGE_BYTES)
 * for every commit in the process from now on; a range always holds one
 * whole bucket at least. The files a commit writes are the same for any
 * value; only its log writes and syncs, and its memory, differ. */
void ti_commit_set_range_bytes(size_t bytes);

/* For tests only: entry `e` packed as a commit places it (16 bytes:
 * offset 48 bits, size 32, hash 48) and unpacked again; *hash is the hash
 * the packed form sorts by. Asserts offset <= 2^48 - 1, size <= 2^32 - 1. */
tide_entry ti_commit_pack_round_trip(const tide_entry *e, uint64_t *hash);

/* Truncate nudb.log to 0 and sync it: what makes a commit final. While
 * deferring (opts.index_lag_bytes), then write the idle log: a header
 * alone, with the key file's size and dat_file_size = W (defer.c), and
 * sync it again. */
int ti_commit_clean_log(struct tide_store *s);

/* The deferred index (defer.c). One commit attempt of `batch` with the
 * index deferred: phase A (append, sync, tide.meta) when the tail has room
 * and `flush` is 0, else ti_commit_batch, which indexes the tail too (the
 * flush). Ends as ti_commit_batch's; a failed tide.meta write is BROKEN. */
int ti_defer_commit(struct tide_store *s, ti_pool *batch, int flush, ti_commit_end *end);
/* The splits a writable open finds owed (splits.c): counts the entries of
 * nudb.key (every bucket, or a sample of a large table) and sets
 * split_owed to the buckets they call for beyond the present ones. Reads
 * only; never fails (a failed read owes nothing). Before the commit
 * thread starts. */
void ti_splits_count(struct tide_store *s);
/* Owed splits the next commit makes: at most TI_SPLITS_PER_COMMIT. */
#define TI_SPLITS_PER_COMMIT 4096u
uint64_t ti_splits_to_pay(const struct tide_store *s);
/* Open, after recovery left a tail [W, C) (idle log kept): read and check
 * its records into the tail (TIDE_ECORRUPT naming the first that fails),
 * then flush it; the log is left empty or idle. Before the thread starts.
 * When the flush fails for want of space (TIDE_ENOSPC, rolled back), the
 * tail stays in memory, unbounded by the lag's budget until a flush
 * empties it, the idle log stays, *kept is 1 and 0 is returned: the
 * caller opens the store with the flush pending. */
int ti_defer_recover_tail(struct tide_store *s, int *kept);
/* A read-only handle's idle view: the records
 * of [W, C) into the tail (as recovery reads them), nothing written. */
int ti_defer_read_tail(struct tide_store *s);
/* What a walk of the unindexed records [W, C) needs of the store. */
typedef struct ti_tail_files {
    tide_io *io;
    tide_file *dat;
    const char *dat_path;
    unsigned key_size, capacity;
    uint64_t salt, W;
} ti_tail_files;
/* Walk the records of nudb.dat from t->W to C: each must be a complete
 * data record, or a spill record of the key file's size, ending at or
 * before C; `fn` (may be NULL: the check alone) gets each data record's
 * entry, hashed. 0, TIDE_ECORRUPT naming the first record that is not
 * (and saying nothing was changed: recovery walks before it writes), or
 * an I/O error. Reads through one 1 MiB window. */
int ti_defer_walk_tail(const ti_tail_files *t, uint64_t C,
                       int (*fn)(void *arg, const tide_entry *e), void *arg);
/* Open, deferring: tide.meta opened (created) and its seq read; called
 * before the directory sync that makes its name durable. */
int ti_defer_open_meta(struct tide_store *s);
/* Write the idle log (header only, dat_file_size W) at offset 0 and sync:
 * the log being empty already. */
int ti_defer_write_idle_log(struct tide_store *s);
/* Fill a log header for this store with the given sizes, with the deferred
 * mark (format.h) while records past W may be unindexed: a lag, or a tail. */
void ti_commit_log_header(const struct tide_store *s, tide_log_header *lh,
                          uint64_t key_file_size, uint64_t dat_file_size);

/* The mode's questions that several modes share. Every "which kind of
 * handle is this" asks the mode, through these or s->mode itself. */
/* Opened read-only (opts.read_only): READER, LIVE_READER or IDLE_READER.
 * Never inserts, syncs, commits or writes a file. */
static inline int ti_store_is_reader(const tide_store *s)
{
    return s->mode == TI_STORE_READER || s->mode == TI_STORE_LIVE_READER ||
           s->mode == TI_STORE_IDLE_READER;
}
/* A reader beside a writer in another process: lookups through tide.live's
 * seqlock (reader.c); the files move under it, so it never maps them,
 * checks the index, recovers, or compares nudb.key's size with its view. */
static inline int ti_store_reads_through_live(const tide_store *s)
{
    return s->mode == TI_STORE_LIVE_READER;
}
/* A writer with a tide.live page to publish to (live.c's writer half). */
static inline int ti_store_writes_live(const tide_store *s)
{
    return s->mode == TI_STORE_WRITER && s->live != NULL;
}

/* A store handle of mode `mode` (WRITER, READER or REBUILD; READER is
 * narrowed by the open) with its options, paths, locks and conditions set
 * up and no file open (open and rekey's rebuild fill in the rest); free it
 * with ti_store_free, which closes whatever files were opened, or, once its
 * commit thread runs, with tide_store_close. */
int ti_store_alloc(tide_store **out, const char *dir, const tide_store_opts *opts,
                   ti_store_mode mode);
void ti_store_free(tide_store *s);
/* A WRITER's commit thread (committer.c). Start, the open's last step:
 * nudb.log (and, deferring, tide.meta and the idle log) prepared, a
 * recovered tail indexed, the thread started (QUIET -> IDLE, or RETRYING
 * on a full disk when `serving`: an ordinary open, not rekey's). Stop,
 * close's first step: close asked, the thread joined (it ends CLOSED or
 * BROKEN); nothing when no thread was started. */
int ti_committer_start(tide_store *s, uint64_t log_size, int serving);
void ti_committer_stop(tide_store *s);
/* IDLE or REBUILDING -> BROKEN (committer.c's diagram; asserted): rekey.c's
 * undo, when it could not undo its work, so the handle's close keeps
 * nudb.log for recovery. Takes pool_mu. */
void ti_store_break(tide_store *s);
/* The commit thread: nudb.dat is never cut below `end` again while the
 * store is open (a commit past its rollback point, a deferred append
 * published): lookups may read the records below it through the data map
 * (store_impl.h: dat_stable). Raises dat_stable to `end`, never lowers it. */
void ti_store_dat_stable(tide_store *s, uint64_t end);

/* 1 when the invariants are checked: opts.check_invariants, or always
 * under TIDE_DEBUG_CHECKS (store_check.c). */
int ti_store_checks_on(const tide_store *s);
/* The whole check (store_check.c); aborts on a broken invariant. The
 * caller holds pool_mu (or runs alone), and key_lock or is the only
 * writer of the key file. `writer`: the caller is the commit thread or no
 * thread runs, so split_credit is stable too. */
void ti_store_check_locked(const tide_store *s, int writer);
/* A random 64-bit value that is not 0 (a uid, a salt). 0 or TIDE_EIO. */
int ti_store_random_u64(uint64_t *v);

/* After an interrupted rekey (rekey.c): with nudb.rekey present and
 * nudb.key.new not yet renamed, cut nudb.dat back to its size before the
 * rekey (when it still ends where the rekey left it; *cut_bytes gets the
 * bytes cut) and remove both files; a nudb.key.new without a mark is just
 * removed. A rekey that rewrote nudb.dat (a new uid) and stopped between
 * its renames is finished instead: nudb.dat.new still there, the switch
 * never began (both .new files removed); nudb.dat renamed already and
 * nudb.key.new of its uid, that file is renamed over nudb.key (*completed
 * set, when non-NULL: the caller's nudb.key handle is the old file). Called
 * with the store's exclusive lock held (open, recovery). */
int ti_rekey_repair(tide_io *io, const char *dir, const char *dat_path, uint64_t *cut_bytes,
                    int *completed);

/* A store's files without a handle (files.c). Their paths, owned. */
typedef struct ti_store_paths {
    char *dat, *key, *log;
} ti_store_paths;
int ti_store_paths_make(const char *dir, ti_store_paths *p);
void ti_store_paths_free(ti_store_paths *p);
/* Is there a store in `dir`: a directory, no symbolic link of the store's
 * out of it or dangling, nudb.dat and nudb.key there? 0, or TIDE_ENOENT
 * (TIDE_EINVAL for a link out) naming what is wrong. */
int ti_store_check_files(tide_io *io, const char *dir, const ti_store_paths *p);
/* Both headers read, decoded and checked against each other, with the
 * files' sizes; the key file a whole number of blocks, one bucket at least. */
int ti_store_read_headers(tide_io *io, tide_file *dat, tide_file *key, const char *dat_path,
                          const char *key_path, tide_key_header *kh, uint64_t *dat_size,
                          uint64_t *key_size);
/* *needed = 1 when nudb.log exists with at least a header's worth of
 * bytes (*size its size). Only a missing log is "no log". */
int ti_store_log_needs_recovery(tide_io *io, const char *log_path, uint64_t *size, int *needed);
/* The header's part of tide_store_info. */
void ti_store_info_from_header(const tide_key_header *kh, tide_store_info *o);
/* The open's cheap check of the key file against the data file
 * (index_check.c): 0, TIDE_ECORRUPT saying what is wrong, or an I/O error. */
int ti_store_check_index(tide_store *s);

/* tide_store_open, with the cheap check of the key file against the data
 * file (index_check.c: ti_store_check_index) when `check` is set. Verify opens without it:
 * it checks every entry and record itself, and reports the first problem
 * with its own words. *holders_checked (may be NULL) is set when the
 * holders scan ran and found none, so a caller that goes on after a failed
 * open (rekey's rebuild) need not scan /proc again. */
int ti_store_open_checked(tide_store **out, const char *dir, const tide_store_opts *opts,
                          int check, int *holders_checked);

/* TIDE_EBUSY naming the first other process that has one of the store's
 * files open (holders.c), or 0. `doing` completes "so ... now could undo
 * its work" ("a recovery", "a write"). */
int ti_store_refuse_holders(tide_io *io, const char *dir, const char *doing);
/* The same; with `readers_ok`, Tide's readers in other processes (they
 * have tide.live open: holders.c) are not counted (a writer's open). */
int ti_store_refuse_holders_ex(tide_io *io, const char *dir, const char *doing, int readers_ok);
/* The other processes that have one of the store's files open (those this
 * user's /proc shows: holders.c), Tide's readers dropped with readers_ok:
 * how many, and the first (pid, comm, which file). 0 (count 0: none seen),
 * or the listing's error (TIDE_EIO: /proc unreadable; TIDE_ENOMEM). */
typedef struct ti_store_holder_seen {
    size_t      count;
    int         pid;
    char        comm[32];
    const char *file;            /* static: "nudb.dat", "nudb.key" or "nudb.log" */
} ti_store_holder_seen;
int ti_store_other_holders(tide_io *io, const char *dir, int readers_ok, ti_store_holder_seen *out);

/* Recovery on paths (recover.c); used by open and tide_store_recover_io. A
 * caller that holds the lock has done the holders check too (`force` is
 * then not looked at), and is left the bucketless key file and the rekey
 * mark (open does that repair); otherwise recovery takes the lock, checks
 * holders unless `force`, and does both. */
/* What a read-only handle may see of a store
 * that needs recovery and that no writer holds, when nudb.log is the
 * deferred index's idle log (its header alone: no bucket was changed since,
 * of this store, key_file_size the key file's size): nudb.key indexes
 * [header, W) (W the log's dat_file_size) and [W, C) (C tide.meta's, as
 * recovery takes it; C == W without one) are committed records to read
 * through an in-memory tail. idle 0: the log is anything else (pre-images:
 * an unfinished commit or flush; another store's; a tide.meta past
 * nudb.dat's end), or (check_holders) another process has the files open
 * (a live NuDB writer's commit starts with a header alone). Reads only.
 * why_rc and why (idle 0): the refusal for a tide.meta past nudb.dat's end
 * (TIDE_ECORRUPT, recovery's words) or a holder, or holders that cannot
 * be listed (TIDE_EBUSY, naming them); 0 and "" when the log is not the
 * idle log (the caller's "unfinished commit"). 0; TIDE_ENOMEM; tide.meta's
 * read error (a message naming it: never C = W for a meta not read); a
 * log, key or data file that cannot be read is idle 0. */
typedef struct ti_idle_view {
    int      idle;
    uint64_t W, C;
    int      why_rc;
    char     why[768];
} ti_idle_view;
int ti_recover_idle_view(tide_io *io, const char *dir, int check_holders, ti_idle_view *v);

int ti_recover_paths(tide_io *io, const char *dat_path, const char *key_path,
                       const char *log_path, const char *dir, int caller_holds_lock,
                       int force, tide_recover_report *rep);

/* tide_store_visit_io with a second callback for each spill record: its
 * offset (the record's first byte) and n, its bucket bytes; and progress
 * (NULL: none) in bytes of nudb.dat, as tide_visit_opts says. */
typedef int (*tide_spill_fn)(void *arg, uint64_t offset, uint64_t n);
int ti_store_walk(const char *dir, tide_io *io, tide_visit_fn fn, tide_spill_fn spill_fn,
                  void *arg, tide_progress_fn progress, void *progress_arg,
                  tide_visit_stats *stats);

/* Lookups (lookup.c), one path for every mode. Each returns 0 found (the
 * value, when `value`, in a malloc'd buffer of *len bytes), TIDE_ENOTFOUND,
 * or an error. */
/* The pools (pending, then committing); skipped without pool_mu when
 * they hold nothing. */
int ti_lookup_pools(tide_store *s, uint64_t h, const void *key, void **value, size_t *len);
/* The files: the handle's tail (a LIVE_READER's view's), then the key
 * file's bucket and its chain. A LIVE_READER calls it only inside a
 * seqlock attempt (reader.c). */
int ti_lookup_files(tide_store *s, uint64_t h, const void *key, void **value, size_t *len);
/* Ask the CPU for the memory a lookup of hash `h` touches first (the tail
 * slot it starts at, the key map's bucket header and the entries near the
 * hash's place), so that those misses overlap the pool lookup the insert
 * makes first. A hint: reads nothing, faults nothing (pages not in memory
 * are left alone). Takes key_lock (shared) for the bucket count. */
void ti_lookup_prefetch(tide_store *s, uint64_t h);
/* Bucket `index` (a whole block) read into `buf`, its count checked
 * against the capacity; the caller holds key_lock or runs alone. */
int ti_lookup_read_bucket(tide_store *s, uint64_t index, uint8_t *buf);
/* Search a bucket image and its spill chain for `key` (hash `h`). On a hit,
 * *entry is set and 0 returned; TIDE_ENOTFOUND when absent. `buf` is a
 * scratch of block_size bytes holding the bucket; it is overwritten by spill
 * records. When `value` is non-NULL the value is read into a malloc'd buffer. */
int ti_lookup_search_key(tide_store *s, uint8_t *buf, uint64_t h, const void *key,
                         tide_entry *entry, void **value);

/* "dir/name" in a malloc'd string, or NULL. */
char *ti_path_join(const char *dir, const char *name);

#endif
