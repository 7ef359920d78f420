/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store/full.h: the store's whole interface for the programs of this tree
 * (tide, tided, the tests, the benchmarks): tide/store.h, the public one,
 * and what the node and the tools need that a program embedding the store
 * does not: the option and report structures in the open (filled on the
 * stack, with every field: the public header keeps them opaque so they can
 * grow), the file interface for tests (struct tide_io, io/io.h), the
 * memory accounting hooks, the invariant check, the deferred index's
 * switch for the generations handle, the full statistics, the other
 * processes that hold a store, a writer's tide.live, and each offline
 * tool with all its options (recover, rekey, verify, visit).
 *
 * libtide.so exports none of this (scripts/libtide.map lists the public
 * functions only); the programs link the part archives and call it
 * directly.
 */
#ifndef TIDE_STORE_FULL_H
#define TIDE_STORE_FULL_H

#include <stddef.h>
#include <stdint.h>
#include "tide/store.h"

struct tide_io;

/* ---- create ---- */

struct tide_store_create_opts {
    unsigned key_size;     /* bytes per key, 1..65535; no default (0 is an error) */
    unsigned block_size;   /* default 4096; invalid values fall back to 4096
                              with a warning through tide_log (see <tide/log.h>) */
    double   load_factor;  /* default 0.5; must be in (0, 1] */
    uint64_t appnum;       /* default 1 */
    uint64_t salt;         /* 0 (default): random from getrandom() */
    uint64_t uid;          /* 0 (default): random from getrandom() */
    struct tide_io *io;    /* NULL (default): the POSIX file system */
};

/* Fill `o` with the defaults above. */
void tide_store_create_opts_init(tide_store_create_opts *o);



/* ---- open and close ---- */

struct tide_store_opts {
    size_t   burst_bytes;        /* insert pool bound in bytes; default 16 MiB.
                                    An insert that finds the pool at this size
                                    triggers a commit and waits for room. */
    unsigned commit_interval_ms; /* default 1000 */
    int      read_only;          /* default 0. A read-only handle never
                                    recovers or writes. With no writer it
                                    takes a shared lock, and fails with
                                    TIDE_EBUSY when nudb.log holds an
                                    unfinished commit (a crash's, or a live
                                    NuDB writer's: it cannot tell, so it
                                    leaves it alone). While a Tide writer in
                                    any process has the store open it reads
                                    through the writer's tide.live
                                    (docs/DURABILITY.md, "Readers in
                                    other processes"): every fetch sees the
                                    files as one commit left them, and
                                    TIDE_EBUSY comes only from a writer
                                    without tide.live (a rekey, a
                                    recovery), one killed in the middle of
                                    writing nudb.key, or one writing for
                                    10 s without a pause. Every read-only
                                    handle holds tide.live's shared lock,
                                    so a rotation dropping the store only
                                    unlinks it under the handle; an open
                                    during the drop's cut is TIDE_EBUSY,
                                    after it TIDE_ENOENT, each saying a
                                    rotation is deleting (has deleted) it. */
    int      ignore_holders;     /* default 0: a read-write open refuses
                                    with TIDE_EBUSY while another process
                                    has nudb.dat, nudb.key or nudb.log open
                                    (tide_store_holders), naming it: NuDB
                                    takes no lock, and recovering or
                                    committing beside a live NuDB writer
                                    destroys its commits. 1: skip that
                                    check (the operator's --force, when the
                                    holder only reads). The flock of Tide's
                                    own handles is never skipped. */
    int      check_invariants;   /* default 0. 1: run tide_store_check at
                                    open, after every commit attempt (in
                                    the commit thread, under the pool lock)
                                    and at close; a broken invariant aborts
                                    the process (TIDE_ASSERT). The tests set
                                    it; builds with TIDE_DEBUG_CHECKS (make
                                    asan/tsan, OPT=-O0) check always. Cost:
                                    store_check.c's tide_store_check, per commit. */
    struct tide_io *io;          /* NULL (default): the POSIX file system */
    /* Churn totals. NULL (default), or a function called after
     * each allocation the store makes for an insert pool (an arena chunk,
     * a table: with pool_account_id) and for a commit (each buffer: with
     * commit_account_id), with the bytes asked for. It runs on the thread
     * that allocated, perhaps under the store's pool lock: it must be cheap
     * and must not call into the store. An id of -1 (the default) skips
     * that kind. The node passes tide_mem_account_note_alloc and the
     * TIDE_MEM_STORE_* ids (the store cannot include mem/account.h). */
    void   (*note_alloc)(int id, int64_t bytes);
    int      pool_account_id;
    int      commit_account_id;
    /* The deferred index (docs/DURABILITY.md). 0 (default):
     * every commit indexes its batch, and the files are NuDB's after every
     * commit. N > 0: a commit appends its records to nudb.dat, syncs it and
     * raises the committed mark in tide.meta (synced): then the batch is
     * durable. Its entries wait in an in-memory tail index of at most N
     * bytes (16 per slot, up to 3/4 full), which fetch and the duplicate
     * check consult; when the tail is full, and at close, a flush writes
     * them into nudb.key with the undo-log protocol, so each bucket is
     * written once for many items. tide_store_sync does not flush. Cost:
     * the tail's memory, and a longer recovery after a crash (the tail is
     * read back from nudb.dat). */
    uint64_t index_lag_bytes;
    int      tail_account_id;    /* note_alloc id for the tail's tables */
    int      pread;              /* default 0: fetches and the insert's
                                    duplicate check search nudb.key's
                                    buckets in place, through a read-only
                                    map of the file (src/store/keymap.c),
                                    and read nudb.dat's records and spill
                                    records through another (below the size
                                    no failed commit cuts), and read with
                                    pread only where a file cannot be
                                    mapped.
                                    Never on tmpfs (there a map's pages are
                                    shared memory, which the memory limit
                                    counts). Another process that cuts a
                                    mapped file (NuDB's recovery, which
                                    takes no lock) is a SIGBUS here, where
                                    pread reads short (DURABILITY.md).
                                    1: always pread: on a disk that returns
                                    read errors (under the map one is a
                                    SIGBUS; tided: store_key_map=off), and
                                    to compare (`tide bench store
                                    --pread`). */
    uint64_t page_memory;        /* the memory that holds the files' pages
                                    in the page cache: the cgroup's limit
                                    when the store runs in one (the page
                                    cache counts there), 0 (default): the
                                    machine's. While nudb.key is at most
                                    3/4 of it the key map reads around a
                                    faulted page, so a key file that fits
                                    comes in with few large reads; past
                                    that each page is read alone, since
                                    neighbours that memory cannot keep
                                    push out the buckets the next fetches
                                    want (keymap.c invariant 8). */
};

void tide_store_opts_init(tide_store_opts *o);

/*
 * Open the store in `dir`. Validates every header (type, version, uid,
 * appnum and key size agreement, pepper, block size, file sizes) and that
 * the key file indexes the data file at its size (a few buckets' entries
 * sit where their hashes say, and nudb.dat's first records are found: a
 * key file grown or cut by whole blocks is TIDE_ECORRUPT, the message
 * naming the size found and, when it can be told, the size expected; see
 * docs/FORMAT.md); when nudb.log holds an interrupted commit, runs
 * recovery first (and checks after it). Opens any valid
 * NuDB version 2 store, whatever its block size, key size or load factor.
 * Locks nudb.key (flock) before it looks at the log: exclusive for a
 * read-write handle, shared for a read-only one, so a writer excludes every
 * other writer, and readers without a writer exclude writers. A read-only
 * open that finds a writer's lock reads through its tide.live instead
 * (opts.read_only); a conflicting writer gives TIDE_EBUSY. A read-write
 * open creates tide.live for such readers. A read-write open also refuses, with
 * TIDE_EBUSY naming the process, while any other process has one of the
 * store's files open, locked or not (unless opts.ignore_holders); this is
 * checked after the lock and before nudb.log is looked at, so a live NuDB
 * writer's commit is never "recovered"; a Tide reader (it has tide.live
 * open too) is not counted. A read-only open never recovers:
 * it fails with TIDE_EBUSY when nudb.log holds an unfinished commit.
 *
 * On success *out owns the store until tide_store_close(). `opts` may be
 * NULL for the defaults. Errors: TIDE_ENOENT (no store there; nudb.dat
 * missing beside its key file; a store file that is a symbolic link to
 * nothing), TIDE_EINVAL (a store file linked out of `dir`: a writer would
 * change files elsewhere through it), TIDE_ENOTSTORE, TIDE_EVERSION,
 * TIDE_EMISMATCH, TIDE_EHASH, TIDE_ECORRUPT, TIDE_EBUSY (naming the
 * process that holds the store when it can be seen), TIDE_EACCES (the
 * files' permissions refuse this user), TIDE_EROFS (a writable open on a
 * read-only mount), TIDE_EIO, TIDE_ENOMEM. A full disk is no error: the
 * store opens for reads and refuses inserts with TIDE_ENOSPC until space
 * returns. Cost: three header reads, the index check (3 + up
 * to 32 bucket reads, one read of at most 64 KiB of nudb.dat and up to 32
 * record reads of it), a recovery when needed; read-write only: the
 * entry count for the splits owed (at most 8 MiB of nudb.key's bucket
 * headers, or 512 buckets sampled, and their spill records' headers), the
 * holders scan of /proc (tide_store_holders) and one thread started.
 */
/* (tide_store_open: tide/store.h declares it; the above is the rest of its
 * contract.) */



/*
 * Assert, with TIDE_ASSERT (which aborts the process), the invariants of
 * src/store/store.c's essay and store_impl.h's table of the handle's modes:
 * what holds in the handle's mode and state (committer.c's diagram),
 * the sequence order (durable <= committing <= insert, each pool holding
 * exactly the inserts between two of them, the two pools never swapped
 * onto one), the pools (disjoint; each one's count, record bytes and memory
 * equal to the sum over its items; each below burst_bytes before its newest
 * item), and the key file's size: the header block plus `buckets` blocks.
 * Returns 0; it never returns otherwise. Tests call it between steps, and
 * the store itself when opts.check_invariants is set or the build defines
 * TIDE_DEBUG_CHECKS.
 *
 * Thread safety: any thread, while other threads insert and fetch; takes
 * the pool lock, then the key lock shared (inserts wait, a commit's write
 * phase too). Cost: O(items in the pools), a table lookup each; one
 * size query of nudb.key through the store's tide_io (an I/O error there
 * skips that comparison and leaves tide_last_error() as it was). No file
 * is read; nothing is allocated.
 */
int tide_store_check(const tide_store *s);

/* ---- the deferred index ---- */

/*
 * Turn the deferred index off (on 0) or on again (on 1) for this handle.
 * Off: every later commit indexes its batch with the tail's entries (as a
 * flush does), and the call then flushes as tide_store_flush does, so when
 * it returns 0 the tail is empty and stays empty, holding no memory; the
 * files keep the deferred layout (tide.meta, the idle log), so a crash
 * recovers as before. tide_store_get_info's index_lag_bytes says 0 while
 * off. On: commits defer again within opts.index_lag_bytes. For the
 * generations handle (src/gen): a generation that stops being the newest
 * takes no more inserts, and a tail it kept would be memory outside the
 * one budget. Without opts.index_lag_bytes (or read-only): 0, nothing
 * done. Returns 0 or the flush's error (the index stays off: call again
 * with on 1 to undo). Thread safety: any thread. Cost (off): the flush.
 */
int tide_store_set_deferring(tide_store *s, int on);

/* ---- information ---- */

/* The commit histogram's buckets: 14 bounds in seconds, 0.0001 .. 10
 * (the same as every Tide histogram; src/util/hist.h). */
#define TIDE_STORE_HIST_BUCKETS 14

typedef struct tide_store_info {
    uint64_t uid, appnum, salt, pepper;
    unsigned version, key_size, block_size;
    unsigned load_factor_raw;    /* in 1/65536 */
    double   load_factor;
    unsigned capacity;           /* entries per bucket: (block_size - 8) / 18 */
    uint64_t buckets;            /* (key file size - block_size) / block_size */
    uint64_t dat_file_bytes, key_file_bytes, log_file_bytes;
    int      needs_recovery;     /* nudb.log holds an interrupted commit */
    int      broken;             /* a failed commit could not be undone: the
                                    handle takes no insert or sync again
                                    (reopen to recover); its tail, if any,
                                    stays readable until close */
    int      idle_log;           /* tide_store_inspect: that log is
                                    a stopped deferred writer's idle log (no
                                    pre-image) and no process holds the
                                    files: read-only opens read the store
                                    as it is, the records of [dat_indexed,
                                    dat_committed) through an in-memory
                                    tail; a recovery indexes them */
    char     not_idle_why[768];  /* tide_store_inspect: why an idle log is
                                    not read as it is (a process holds the
                                    files, naming it; tide.meta past
                                    nudb.dat's end); "" otherwise */
    /* Counters of this handle (zero for tide_store_inspect): */
    uint64_t inserts, fetches, commits, commit_failures;
    uint64_t pool_bytes;         /* insert pools: what their items and
                                    tables use (pending plus committing,
                                    and a pool emptied for its next batch:
                                    its table) */
    uint64_t pool_spare_bytes;   /* insert pools: chunks a committed pool
                                    keeps for its next batch while inserts
                                    keep coming; 0 once they stop and a
                                    commit finds no insert waiting */
    uint64_t commit_buffer_bytes;/* the running commit's buffers (0 between
                                    commits) */
    uint64_t bytes_written;      /* written to the three files by commits */
    uint64_t syncs;              /* file syncs by commits: 3 + r per commit,
                                    r its log ranges of at most 4 MiB of
                                    pre-images (one sync each; then data,
                                    key, emptied log): 4 for one range */
    unsigned commit_interval_ms; /* this handle's options */
    uint64_t burst_bytes;
    uint64_t last_commit_us;
    /* How lookups read nudb.key: buckets searched in place in the map,
     * buckets read with pread (no map, or past it), and the key file's
     * bytes the map shows (0: not mapped). Page cache, not anonymous
     * memory: what of the map is resident is tide_store_key_map_resident. */
    uint64_t key_map_views, key_bucket_reads, key_map_bytes;
    /* How lookups read nudb.dat's records and spill records: in the data
     * map (below the size no rollback cuts), with pread (the newest
     * commit's before its syncs, no map, past it), and the data file's
     * bytes the map shows (0: not mapped). Page cache, not anonymous
     * memory, as the key map's: tide_store_dat_map_resident. */
    uint64_t dat_map_views, dat_reads, dat_map_bytes;
    /* Durations of the commits that reached the files (cumulative buckets
     * with the bounds of TIDE_STORE_HIST_BOUNDS_S, then +Inf). */
    struct {
        uint64_t bucket[TIDE_STORE_HIST_BUCKETS + 1];
        uint64_t sum_ns, count;
    } commit_duration;
    /* The deferred index (tide_store_opts.index_lag_bytes): */
    uint64_t index_lag_bytes;    /* the tail's budget; 0: not deferring */
    uint64_t tail_items;         /* entries waiting in the tail index */
    uint64_t tail_bytes;         /* its table's memory */
    uint64_t index_flushes;      /* flushes that indexed a non-empty tail */
    uint64_t dat_indexed;        /* W: nudb.key indexes nudb.dat below it */
    uint64_t dat_committed;      /* C: nudb.dat is synced below it */
    uint64_t dat_durable;        /* nudb.dat's size at the last commit that is
                                    done: no crash's recovery cuts below it,
                                    and the bytes below it never change (the
                                    archive uploads up to it) */
} tide_store_info;

/* The open store's headers, sizes and counters. Thread-safe; no I/O. */
void tide_store_get_info(tide_store *s, tide_store_info *out);

/* Bytes of the key file's map that this process has mapped in now (pages
 * present in its page tables, from /proc/self/pagemap): file-backed page
 * cache the kernel reclaims under pressure, counted in the process's
 * RssFile, never in RssAnon. Not how much of nudb.key the page cache holds
 * (the commits' writes put the whole file there). 0 when not mapped. 0 or
 * TIDE_EIO (pagemap unreadable). Thread-safe; no I/O on the store's files.
 * Cost: one 8 KiB read of /proc/self/pagemap per 4 MiB of key file. */
int tide_store_key_map_resident(tide_store *s, uint64_t *bytes);
/* The same for the data file's map (the records lookups read in place). */
int tide_store_dat_map_resident(tide_store *s, uint64_t *bytes);

/* Read the headers and file sizes of the store in `dir` without opening it
 * for writing, taking a writer's lock or recovering. `io` may be NULL.
 * Like every reader it holds tide.live's shared lock while it reads (no
 * writer takes it; a rotation deleting the store does): TIDE_EBUSY "a
 * rotation is deleting it", TIDE_ENOENT "a rotation has deleted it", else
 * errors as for tide_store_open. */
int tide_store_inspect(const char *dir, struct tide_io *io, tide_store_info *out);

/* ---- visit ---- */


typedef struct tide_visit_stats {
    uint64_t data_records, data_bytes, value_bytes;
    uint64_t spill_records, spill_bytes;
    uint64_t file_bytes;
} tide_visit_stats;

/*
 * Walk nudb.dat of the store in `dir` from the header to the end, calling
 * `fn` (may be NULL) for each data record. Reads the data file only and never
 * changes anything. `stats` (may be NULL) gets the counts. It holds the
 * readers' shared lock on tide.live to the end of the walk, so a rotation
 * that drops the store meanwhile only unlinks it (the walk reads on) and
 * never cuts it short. Errors: TIDE_ECORRUPT with the offset in
 * tide_last_error() when a record runs past the end of the file; the
 * callback's non-zero return; TIDE_EBUSY "a rotation is deleting it" and
 * TIDE_ENOENT "a rotation has deleted it" at the start.
 * Cost: one sequential pass through a 1 MiB buffer, plus the largest value.
 */
int tide_store_visit_io(const char *dir, struct tide_io *io, tide_visit_fn fn,
                     void *arg, tide_visit_stats *stats);

/*
 * Progress of a long walk (visit, verify, rekey): `done` of `total` units
 * (what a unit is, each caller of it says). The contract, the same for
 * every walk that takes one:
 *   - it is called on the thread that called the walk, from inside the
 *     walk, never after the walk has returned;
 *   - `done` never decreases and never exceeds `total`; `total` is fixed
 *     for a step, except in rekey's counting walk, whose total is an
 *     estimate that may change at every call (tide_rekey_opts says how)
 *     and is fixed from the first pass on;
 *   - it is called at least once per step, with done == total when the
 *     step completes (not when the walk stops on an error);
 *   - the walk pays one call per unit step (a MiB of nudb.dat, or 1024
 *     buckets) and nothing else: no allocation, no I/O, no lock;
 *   - it must not call into the store it reports on; it should return
 *     quickly (drawing is rate-limited by the callee, not the walk).
 */
typedef void (*tide_progress_fn)(void *arg, uint64_t done, uint64_t total);

typedef struct tide_visit_opts {
    struct tide_io  *io;            /* NULL: the POSIX file system */
    tide_progress_fn progress;      /* NULL, or: done/total are bytes of
                                       nudb.dat walked of its size at the
                                       walk's start; called after each MiB
                                       (each refill of the read window) and
                                       once at the end with done == total */
    void            *progress_arg;
} tide_visit_opts;

/* All fields zero: the POSIX file system, no progress. Call it before
 * setting any, so that a field a later version adds gets its default.
 * The structs of options have no reserved space: one grows only with a
 * new SONAME (an ABI change; every caller allocates it), and _init keeps
 * the source working across that. */
void tide_visit_opts_init(tide_visit_opts *o);

/* tide_store_visit_io with options; `o` may be NULL (no progress, POSIX). */
int tide_store_visit_with(const char *dir, const tide_visit_opts *o, tide_visit_fn fn, void *arg,
                        tide_visit_stats *stats);

/* ---- other processes ---- */

typedef struct tide_store_holder {
    int  pid;
    char comm[32];       /* the process's name (Linux: /proc/PID/comm), or "?" */
    char file[16];       /* "nudb.dat", "nudb.key" or "nudb.log": one it has open */
} tide_store_holder;

/*
 * The other processes (not the caller's) that have nudb.dat, nudb.key or
 * nudb.log of the store in `dir` open, by any name (matched by device and
 * inode): up to min(cap, 16) of them into `out`, their number in *count.
 * Locks play no part: this sees NuDB, which takes none, and any reader
 * (a backup, a `tide get`) as well as a writer. Processes the caller may
 * not look into are not seen: as a user other than root, only that user's
 * own. With an `io` that cannot tell (a test's), none.
 * Returns 0, or TIDE_EIO when /proc cannot be read, TIDE_ENOMEM.
 * Thread safety: any thread. Cost: one stat per open descriptor of every
 * visible process (/proc/PID/fd/N); about 1 ms per 1000 descriptors.
 *
 * tide_store_open (read-write), tide_store_recover_io and tide_store_rekey_with
 * call it themselves and refuse with TIDE_EBUSY naming the first holder;
 * a node needs nothing more than tide_store_open's default.
 */
int tide_store_holders(const char *dir, struct tide_io *io, tide_store_holder *out, size_t cap,
                       size_t *count);

/* ---- a writer in another process ---- */

/* What tide.live says: the page a Tide writer shares with readers in
 * other processes (docs/DURABILITY.md: "Readers in other processes"). */
typedef struct tide_store_live {
    int      present;          /* tide.live holds a version-1 page */
    int      writer_running;   /* the process it names runs and has the store open */
    int      writer_pid;       /* that process (0 after a failed open) */
    int      writing;          /* seq is odd: nudb.key is being written (or its
                                  writer died doing so, when not running) */
    uint64_t seq, generation, uid;
    uint64_t buckets, key_file_bytes;
    uint64_t dat_indexed;      /* W: nudb.key indexes every record below */
    uint64_t dat_committed;    /* C: every record below is complete */
} tide_store_live;

/*
 * Read tide.live of the store in `dir` without opening the store: no lock,
 * nothing written. No tide.live (or an `io` that cannot share a map, a
 * test's) leaves *out zero, present 0: there is no Tide writer to read
 * through. The counts are one consistent copy (the page's seqlock); when
 * its writer died in the middle of a write they are its last ones.
 * Errors: TIDE_EIO, TIDE_ENOMEM. Cost: one open, one map of a page, a
 * read of /proc/PID/stat.
 */
int tide_store_live_info(const char *dir, struct tide_io *io, tide_store_live *out);

/* ---- recovery ---- */

typedef struct tide_recover_report {
    int      had_log;            /* a nudb.log was present */
    int      log_was_partial;    /* shorter than its header: deleted */
    int      rebuild_interrupted;/* key_file_size was 0 */
    uint64_t buckets_restored;
    uint64_t dat_truncated_from, dat_truncated_to;
    uint64_t key_truncated_from, key_truncated_to;
    int      key_removed;        /* no commit to undo, but nudb.key held no
                                    complete bucket (a rebuild killed after
                                    writing its header): removed, so that
                                    tide_store_rekey_with builds it again */
    uint64_t key_removed_bytes;  /* its size */
    uint64_t rekey_cut_bytes;    /* spill records a rekey stopped before its
                                    switch had left in nudb.dat (nudb.rekey
                                    says where), cut off: 0 when none */
    int      rekey_completed;    /* a rekey that rewrote nudb.dat stopped
                                    between its two renames: nudb.key.new
                                    (of the new nudb.dat's uid) was renamed
                                    over nudb.key */
    uint64_t tail_from, tail_to; /* deferred index: records [W, C) that
                                    tide.meta says were committed and the
                                    key file does not index (kept, and
                                    indexed again); equal when none */
} tide_recover_report;

/*
 * Undo an interrupted commit of the store in `dir`, as NuDB does: write back
 * every complete pre-image in nudb.log, truncate nudb.dat and nudb.key to the
 * sizes the log recorded, sync both, delete the log. A no-op (returning 0)
 * when there is no log or it is empty. `report` may be NULL. Takes the
 * store's exclusive lock first: TIDE_EBUSY (and nothing touched) while any
 * other handle has the store open; then TIDE_EBUSY, naming the process,
 * while any other process has one of the store's files open
 * (tide_store_holders): a log is a crash's only when nobody is writing, and
 * NuDB takes no lock to say so. With no commit to undo, a nudb.key of this
 * store that holds no complete bucket (shorter than a header block and one
 * bucket: what a rebuild killed early leaves; no committed store is that
 * small) is removed, as the log of an interrupted rebuild would have it
 * (report->key_removed). With no log to apply, or after applying it, it
 * also undoes a rekey stopped before its rename (cuts the spill records
 * nudb.rekey points to: report->rekey_cut_bytes) and removes nudb.key.new.
 * Errors: TIDE_EMISMATCH when the log
 * belongs to another store, TIDE_EIO, TIDE_ENOSPC (the log is kept so that
 * recovery can run again).
 */
int tide_store_recover_io(const char *dir, struct tide_io *io, tide_recover_report *report);

/* tide_store_recover_io with flags: TIDE_RECOVER_FORCE skips the check of
 * other processes (never the lock). */
#define TIDE_RECOVER_FORCE 1u
int tide_store_recover_with(const char *dir, struct tide_io *io, unsigned flags,
                          tide_recover_report *report);

/* ---- rekey ---- */

typedef struct tide_rekey_opts {
    unsigned block_size;      /* the new block size: a power of two from 4096
                                 to 32768 (default 4096). Anything else is
                                 TIDE_EINVAL with nothing changed: unlike
                                 create, rekey does not fall back, so a typo
                                 cannot rewrite a store */
    double   load_factor;     /* 0 (default): keep the store's */
    size_t   buffer_bytes;    /* memory for buckets in one pass; default
                                 64 MiB, at least one block's worth */
    struct tide_io *io;       /* NULL: the POSIX file system */
    int      ignore_holders;  /* 1: do not refuse while another process has
                                 the store's files open (see tide_store_opts) */
    tide_progress_fn progress;/* NULL, or (the contract above): done/total
                                 are bytes of nudb.dat read over the whole
                                 run, the counting walk and every pass
                                 (total = size x (1 + passes)), called
                                 after each MiB and with done == total at
                                 the end. During the counting walk the
                                 passes are not known yet: total is then
                                 re-estimated at every call (the records
                                 counted so far taken as typical of the
                                 file), so it may grow or shrink from one
                                 call to the next; from the first pass on
                                 it is exact and fixed */
    void    *progress_arg;
} tide_rekey_opts;

void tide_rekey_opts_init(tide_rekey_opts *o);

typedef struct tide_rekey_report {
    uint64_t records;                  /* data records indexed */
    unsigned old_block_size, new_block_size;
    uint64_t old_buckets, new_buckets;
    unsigned passes;                   /* walks of nudb.dat */
    uint64_t spill_records;            /* written for the new key file */
    uint64_t foreign_spill_records;    /* already in nudb.dat and not of the new
                                          block size's full-bucket size (from
                                          an older block size); 0 when nudb.dat
                                          was rewritten without them */
    int      dat_rewritten;            /* nudb.dat was rewritten (a new block
                                          size, or foreign spill records): its
                                          data records in their order, then the
                                          new spill records; a new uid */
    uint64_t spill_records_dropped;    /* the old spill records the rewrite left out */
    uint64_t old_key_file_bytes, new_key_file_bytes;
    uint64_t dat_file_bytes_before, dat_file_bytes_after;
    int      key_rebuilt;              /* nudb.key was missing or unusable and
                                          was built from nudb.dat alone */
    char     key_problem[256];         /* then: why open refused it */
} tide_rekey_report;

/*
 * Rebuild nudb.key from nudb.dat with a new block size (and load factor),
 * the way an operator changes nudb_block_size on an existing node. Opens
 * the store read-write (recovering it first if needed; TIDE_EBUSY if another
 * handle has it), builds the new key file as nudb.key.new in passes over
 * nudb.dat that each index the buckets `buffer_bytes` can hold, appends the
 * spill records it needs to nudb.dat, syncs, and renames it over nudb.key.
 *
 * A key file that is missing, or that open refuses for its contents
 * (TIDE_ECORRUPT, TIDE_ENOTSTORE, TIDE_EVERSION, TIDE_EHASH,
 * TIDE_EMISMATCH: grown, cut, no complete bucket, another store's), is
 * built from nudb.dat alone (report->key_rebuilt, and key_problem says why):
 * after the recovery an open would run, uid, appnum and key size come from
 * nudb.dat's header; the salt and load factor from the old header when it
 * is this store's, else a new salt and 0.5; the block size from opts (4096
 * by default). Its log carries key_file_size 0, so a crash during it cuts
 * nudb.dat back and removes the unusable key file. A nudb.dat that is not
 * sound, a non-regular nudb.key, a busy store are errors as for open.
 *
 * Safe to interrupt anywhere: until the rename is durable, a crash leaves
 * the old store (recovery at the next open truncates the spill records
 * appended so far, through the log or, once the log is emptied, through
 * nudb.rekey, and removes a stale nudb.key.new); after it, the new one.
 * Spill records of the old block size stay in nudb.dat
 * (report->foreign_spill_records): Tide and NuDB read and write the store
 * as before, but NuDB's verify, and tide_store_verify_io, reject it for them. `report` may be NULL. Errors: those of open, TIDE_EINVAL (a bad
 * block size or load factor, found before anything is opened),
 * TIDE_EIO, TIDE_ENOSPC: the store is then the old one, or, when the error
 * came after the rename (syncing the directory, closing), already the new
 * one; never a mixture.
 * Cost: 1 + ceil(key file size / buffer) sequential reads of nudb.dat; one
 * write of the new key file; memory about buffer_bytes.
 */
int tide_store_rekey_with(const char *dir, const tide_rekey_opts *opts, tide_rekey_report *report);

/* ---- verify ---- */

typedef struct tide_verify_report {
    uint64_t keys;                   /* entries reachable from the key file */
    uint64_t value_bytes;
    uint64_t data_records;           /* in nudb.dat */
    uint64_t buckets;
    unsigned capacity, block_size;
    double   load;                   /* keys / (buckets * capacity) */
    uint64_t spill_records_reachable;
    uint64_t spill_records_written;  /* in nudb.dat, reachable or not */
    uint64_t spill_records_foreign;  /* not of this block size's full-bucket
                                        size (all unreachable waste): NuDB's
                                        verify rejects a store with any */
    int      foreign_spills_only;    /* TIDE_ECORRUPT for those alone: every
                                        other check passed and every figure
                                        is complete */
    uint64_t waste_bytes;            /* spill records no chain reaches */
    double   waste;                  /* waste_bytes / nudb.dat size */
    double   avg_fetch_reads;        /* bucket reads per fetch of a present key */
    uint64_t dat_file_bytes, key_file_bytes;
    /* A store a deferred writer left with its idle log (killed
     * with the index lag on): the committed records past W, found through
     * an in-memory tail and not yet in nudb.key. Checked as records (whole,
     * below C); the figures above are the indexed part's. They are indexed
     * by `tide recover` or the next writer's open. 0 otherwise. */
    uint64_t tail_records, tail_bytes;
} tide_verify_report;

/*
 * Check the store in `dir` as NuDB's verify does, and more: every bucket is
 * well formed (count within capacity, sorted, entries inside nudb.dat),
 * every entry sits in the bucket its hash names (or that bucket's chain),
 * points at a data record of the entry's size whose key hashes to the
 * entry's hash, and no two entries point at one record; every spill pointer
 * points at a spill record of the full-bucket size; every data record in
 * nudb.dat is reached by exactly one entry; every spill record in nudb.dat,
 * reached or not, has the full-bucket size of this block size, as NuDB's
 * verify demands (a rekey to another block size leaves the old ones, which
 * then fail this: TIDE_ECORRUPT after a walk that is otherwise complete,
 * with r->spill_records_foreign counting them). `r` gets the figures
 * (filled as far as the walk got when it fails).
 *
 * Returns 0 when the store is sound; TIDE_ECORRUPT with the first problem in
 * tide_last_error() ("nudb.key: bucket 12 (offset 53248): entry 3 ...");
 * TIDE_EBUSY when a writer has the store open or a log needs recovery; the
 * errors of tide_store_open. Changes nothing.
 * Cost: one pass over nudb.key and one over nudb.dat, one data-file read per
 * entry; memory 8 bytes per key plus 8 per reachable spill record (page
 * mappings, returned at the end).
 */
int tide_store_verify_io(const char *dir, struct tide_io *io, tide_verify_report *r);

/* The steps of a verify, as its progress names them. */
enum { TIDE_VERIFY_STEP_BUCKETS = 1, TIDE_VERIFY_STEP_DATA = 2 };

/* A verify's progress (tide_progress_fn's contract, per step): in step
 * TIDE_VERIFY_STEP_BUCKETS done/total are buckets of nudb.key checked (with
 * their spill chains) of its buckets, called after each 1024; in step
 * TIDE_VERIFY_STEP_DATA bytes of nudb.dat walked of its size, after each
 * MiB. Each step ends with a call with done == total. */
typedef void (*tide_verify_progress_fn)(void *arg, unsigned step, uint64_t done, uint64_t total);

typedef struct tide_verify_opts {
    struct tide_io         *io;         /* NULL: the POSIX file system */
    tide_verify_progress_fn progress;   /* NULL: none */
    void                   *progress_arg;
} tide_verify_opts;

/* All fields zero: the POSIX file system, no progress. Call it before
 * setting any (as tide_visit_opts_init says). */
void tide_verify_opts_init(tide_verify_opts *o);

/* tide_store_verify_io with options; `o` may be NULL. A store whose Tide
 * writer runs in another process (tide.live) is TIDE_EBUSY: its files
 * move under a check of one against the other; tide_store_verify_live
 * checks it. */
int tide_store_verify_with(const char *dir, const tide_verify_opts *o, tide_verify_report *r);

/*
 * Check a store while its Tide writer runs in another process
 * (src/store/verify_live.c says what is and is not checked): every bucket
 * read whole under the writer's seqlock (count, order, bounds, every
 * entry in the bucket its hash names, the spill chain), and every data
 * record of nudb.dat below what tide.live says is complete found by a
 * fetch with its exact value. r->keys counts the entries met bucket by
 * bucket, r->data_records the records walked: with the writer appending,
 * the two differ. With no writer running, this is tide_store_verify_with.
 * Errors: TIDE_ECORRUPT naming the bucket or offset; TIDE_EBUSY when the
 * writer died in the middle of a write or wrote without a pause for 10 s;
 * those of a read-only open. Cost: one read of every bucket and spill
 * record, a walk of nudb.dat, and a fetch per record (a bucket read each).
 */
int tide_store_verify_live(const char *dir, const tide_verify_opts *o, tide_verify_report *r);


#endif
