/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tide/store.h: the Tide store, an append-only hashed key/value store whose
 * three files (nudb.dat, nudb.key, nudb.log) are NuDB version 2 files: a
 * database NuDB wrote opens here, and one written here opens in NuDB.
 *
 * Life of a store:
 *
 *     tide_store_create_opts *c;  tide_store_create_opts_new(&c);
 *     tide_store_create_opts_set_key_size(c, 32);
 *     tide_store_create("db", c);             -- the directory must exist
 *     tide_store_create_opts_free(c);
 *     tide_store *s;              tide_store_open(&s, "db", NULL);
 *     tide_store_insert(s, key, val, len);    -- visible to fetch at once
 *     tide_store_sync(s);                     -- durable once this returns
 *     tide_store_close(s);
 *
 * Semantics: keys have the fixed size chosen at create; values are 1 byte
 * to 2^32 - 1 bytes; a key is inserted once and never changed or removed.
 * One thread inserts at a time (concurrent inserts are serialised), any
 * number fetch. A background thread commits pending inserts about once a
 * second (tide_store_opts_set_commit_interval) or sooner when the insert
 * pool fills; an insert is durable when the commit that wrote it has
 * completed. A crash loses no insert that tide_store_sync returned for: the
 * next open (or tide_store_recover) undoes a commit cut short.
 *
 * The conventions, as in every Tide header:
 *   - Handles and options are opaque; options are set with setters, so a
 *     new option never changes a structure a program compiled against.
 *   - Calls return 0 or a negative TIDE_E* code (tide/error.h), whose
 *     name tide_strerror gives; tide_last_error() says what and where, in
 *     the calling thread. Results come back through out-parameters.
 *   - A result structure begins with `size`, which the caller sets to
 *     sizeof the structure it has; the library fills what both know and
 *     sets `size` to that, so a program built against an older header
 *     still works with a newer library, and the reverse.
 *   - The library writes a line to stderr when it recovers a commit or
 *     replaces a bad value by its default; tide/log.h redirects or
 *     silences it.
 */
#ifndef TIDE_STORE_H
#define TIDE_STORE_H

#include <stddef.h>
#include <stdint.h>
#include "tide/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TIDE_BLOCK_SIZE_DEFAULT 4096u
#define TIDE_BLOCK_SIZE_MIN     4096u   /* what Tide creates; any NuDB size opens */
#define TIDE_BLOCK_SIZE_MAX     32768u
#define TIDE_LOAD_FACTOR_DEFAULT 0.5
#define TIDE_BURST_DEFAULT      (16u << 20)
#define TIDE_COMMIT_INTERVAL_DEFAULT_MS 1000u
#define TIDE_VALUE_MAX          0xffffffffull

typedef struct tide_store tide_store;
typedef struct tide_store_opts tide_store_opts;
typedef struct tide_store_create_opts tide_store_create_opts;

/* ---- block sizes ---- */

/* 1 when `v` is a block size Tide creates: a power of two from 4096 to
 * 32768. Pure; thread-safe. */
int tide_block_size_valid(long long v);

/*
 * Parse a configured block size. Returns the size to use: the value itself
 * when it is valid, TIDE_BLOCK_SIZE_DEFAULT otherwise (including empty or
 * non-numeric text, and NULL). When it falls back it writes a warning that
 * names the bad value to `warning` (at most `cap` bytes, NUL-terminated),
 * e.g. "block size '5000' is not a power of two from 4096 to 32768; using
 * 4096"; on success it writes an empty string. `warning` may be NULL.
 */
unsigned tide_block_size_parse(const char *text, char *warning, size_t cap);

/* ---- create ---- */

/*
 * Options of tide_store_create, with the defaults: no key size (it must be
 * set), block size 4096, load factor 0.5, application number 1, salt and
 * uid random. _new allocates them (TIDE_ENOMEM); _free frees them (NULL is
 * a no-op). A setter returns 0, or TIDE_EINVAL naming the value and the
 * range when it is out of range (the option keeps its value):
 *   key_size     bytes per key, 1 to 65535;
 *   block_size   the key file's block, a power of two from 4096 to 32768;
 *   load_factor  the share of a bucket filled before it splits, in (0, 1];
 *   appnum       any number: NuDB's application number, checked at open.
 */
int  tide_store_create_opts_new(tide_store_create_opts **out);
void tide_store_create_opts_free(tide_store_create_opts *o);
int  tide_store_create_opts_set_key_size(tide_store_create_opts *o, unsigned bytes);
int  tide_store_create_opts_set_block_size(tide_store_create_opts *o, unsigned bytes);
int  tide_store_create_opts_set_load_factor(tide_store_create_opts *o, double load_factor);
int  tide_store_create_opts_set_appnum(tide_store_create_opts *o, uint64_t appnum);

/*
 * Create an empty store in directory `dir` (which must exist): nudb.dat with
 * its header, nudb.key with its header and one empty bucket. Both are
 * synced, then the directory. Errors: TIDE_EEXIST when a nudb.dat or
 * nudb.key is already there (nothing is changed), TIDE_ENOENT when `dir`
 * is missing, TIDE_EINVAL when no key size was set, TIDE_EIO / TIDE_ENOSPC
 * (partial files are removed). Cost: two small files, three syncs.
 */
int tide_store_create(const char *dir, const tide_store_create_opts *opts);

/* ---- open and close ---- */

/*
 * Options of tide_store_open, with the defaults. _new, _free and the
 * setters as for the create options:
 *   burst          bytes of pending inserts before one waits for a commit,
 *                  64 KiB to 1 TiB; 16 MiB;
 *   commit_interval  milliseconds between commits of pending inserts, 1 to
 *                  3,600,000; 1000;
 *   index_lag      0 (the default: every commit indexes its batch, and the
 *                  files are NuDB's after each), or up to 1 TiB of memory
 *                  for a tail index: a commit then appends to nudb.dat
 *                  only and is durable there; the key file is written for
 *                  many commits at once when the tail fills and at close.
 *                  The files are NuDB's after tide_store_flush or close;
 *                  a crash is recovered from nudb.dat at the next open;
 *   read_only      1: never write or recover; a writer in another process
 *                  is read through (every fetch sees one commit's state);
 *                  TIDE_EBUSY when a crash left a commit to undo;
 *   force          1: open for writing while another process has the files
 *                  open (a reader; NuDB takes no lock, so by default Tide
 *                  refuses with TIDE_EBUSY naming the process: recovering
 *                  beside a live NuDB writer would destroy its commits);
 *   pread          1: read with pread instead of read-only maps of the two
 *                  files (on a disk that returns read errors: under a map
 *                  one is a SIGBUS);
 *   page_memory    bytes of memory that hold the files' pages in the page
 *                  cache: the cgroup's memory limit when the store runs in
 *                  one; 0 (the default): the machine's physical memory.
 *                  While nudb.key is at most 3/4 of it, a fault in the key
 *                  map reads the pages around it too, so a key file that
 *                  fits warms in few large reads; past that, each page is
 *                  read alone (neighbours that memory cannot keep would
 *                  push out the buckets the next fetches want). nudb.dat's
 *                  pages are always read alone.
 */
int  tide_store_opts_new(tide_store_opts **out);
void tide_store_opts_free(tide_store_opts *o);
int  tide_store_opts_set_burst(tide_store_opts *o, size_t bytes);
int  tide_store_opts_set_commit_interval(tide_store_opts *o, unsigned ms);
int  tide_store_opts_set_index_lag(tide_store_opts *o, uint64_t bytes);
int  tide_store_opts_set_read_only(tide_store_opts *o, int on);
int  tide_store_opts_set_force(tide_store_opts *o, int on);
int  tide_store_opts_set_pread(tide_store_opts *o, int on);
int  tide_store_opts_set_page_memory(tide_store_opts *o, uint64_t bytes);

/*
 * Open the store in `dir`, with `opts` (NULL: the defaults; the options
 * are copied: free them when this returns). Validates every header and
 * that the key file indexes the data file at its size; when nudb.log holds
 * an interrupted commit, recovers first. Opens any valid NuDB version 2
 * store, whatever its block size, key size or load factor. A writer holds
 * an exclusive lock on nudb.key (another writer gets TIDE_EBUSY); readers
 * share it.
 *
 * On success *out owns the store until tide_store_close(). Errors:
 * TIDE_ENOENT (no store there), TIDE_ENOTSTORE, TIDE_EVERSION,
 * TIDE_EMISMATCH, TIDE_EHASH, TIDE_ECORRUPT (the message says what does
 * not hold), TIDE_EBUSY (naming the process that holds the store when it
 * can be seen), TIDE_EACCES, TIDE_EROFS (a writable open on a read-only
 * mount), TIDE_EIO, TIDE_ENOMEM. A full disk is no error: the store opens
 * for reads and refuses inserts with TIDE_ENOSPC until space returns.
 * Cost: three header reads, up to 32 bucket and record reads to check the
 * index, a recovery when needed; a writer also starts one thread.
 */
int tide_store_open(tide_store **out, const char *dir, const tide_store_opts *opts);

/*
 * Commit everything pending, stop the commit thread, delete nudb.log, close
 * the files and free the store. Returns 0, or the error of the final commit
 * (the store is freed either way; a failed final commit leaves the log for
 * recovery at the next open). NULL is a no-op.
 */
int tide_store_close(tide_store *s);

/* ---- insert, fetch, sync ---- */

/*
 * Insert `len` bytes under `key` (key_size bytes). The value is copied; it
 * is visible to fetches when this returns and durable after the next commit.
 * Errors: TIDE_EEXIST (the key is present, durable or pending), TIDE_EINVAL
 * (len 0), TIDE_ETOOBIG (len >= 2^32), TIDE_ECLOSED (a read-only handle),
 * or the error of the last failed commit (TIDE_EIO, TIDE_ENOSPC) until a
 * commit succeeds again; a refused insert changes nothing.
 * Thread safety: inserts are serialised; fetches run alongside.
 * Cost: a hash and one key-file bucket lookup (plus its spill chain) to
 * refuse duplicates; copies the value into the insert pool. Blocks while
 * the pool holds `burst` bytes and a commit is running.
 */
int tide_store_insert(tide_store *s, const void *key, const void *value, size_t len);

/*
 * Fetch the value of `key`. On success *out is a malloc'd buffer of *len
 * bytes that the caller frees with free(). Errors: TIDE_ENOTFOUND, TIDE_EIO,
 * TIDE_ECORRUPT (the store is not changed).
 * Thread safety: any number of threads. Cost: one key-file bucket search
 * (in place in a read-only map of nudb.key, or one read of a block), one
 * record read per entry with the same 48-bit hash (almost always one);
 * allocates the value only. Under the maps, a read error of a bad disk
 * sector is a SIGBUS rather than TIDE_EIO (the `pread` option avoids it).
 */
int tide_store_fetch(tide_store *s, const void *key, void **out, size_t *len);

/*
 * 1 when `key` is present (durable or pending), 0 when absent; TIDE_EIO,
 * TIDE_ECORRUPT on a read error. Thread safety and cost: as fetch, without
 * reading the value.
 */
int tide_store_contains(tide_store *s, const void *key);

/*
 * Wait until every insert that returned before this call is durable: starts
 * a commit at once and waits for it. Returns 0, or the error of a commit
 * attempt that began after the call (one already running when it came is
 * not its answer: it may fail on what has changed since).
 */
int tide_store_sync(tide_store *s);

/*
 * tide_store_sync, and then, with an index lag, a flush of the tail index:
 * when this returns 0 the key file indexes every insert that returned
 * before the call and the files are NuDB's. Without a lag it is
 * tide_store_sync. Returns 0 or, as sync, the error of a commit attempt
 * begun after the call. Cost: every bucket
 * that receives a tail entry is written once.
 */
int tide_store_flush(tide_store *s);

/* ---- statistics ---- */

typedef struct tide_store_stats {
    size_t   size;              /* in: sizeof(tide_store_stats); out: what
                                   was filled */
    unsigned key_size, block_size;
    double   load_factor;
    uint64_t appnum, uid;
    uint64_t buckets;           /* in the key file */
    uint64_t dat_file_bytes, key_file_bytes;
    uint64_t inserts, fetches;  /* by this handle */
    uint64_t commits, commit_failures;
} tide_store_stats;

/* The store's figures into *out (its `size` set by the caller: at least
 * sizeof(size_t) + the first field, else TIDE_EINVAL). Any thread. Cost:
 * a few counter reads, one size query of each file; no allocation. */
int tide_store_stat(tide_store *s, tide_store_stats *out);

/* ---- tools on a closed store ---- */

/* tide_store_recover and tide_store_rekey: go on while another process
 * has the store's files open (never while one holds Tide's lock). */
#define TIDE_STORE_FORCE 1u

/*
 * Called by tide_store_visit for each record of nudb.dat in file order:
 * its offset, key and value (`len` bytes). Returns 0 to go on; anything
 * else stops the walk, and tide_store_visit returns it.
 */
typedef int (*tide_visit_fn)(void *arg, uint64_t offset, const void *key, unsigned key_size,
                             const void *value, uint64_t len);

typedef struct tide_store_visit_result {
    size_t   size;              /* in/out, as tide_store_stats' */
    uint64_t records;           /* data records visited */
    uint64_t value_bytes;
    uint64_t file_bytes;        /* nudb.dat's size */
} tide_store_visit_result;

/* Walk nudb.dat of the store in `dir` from its header to its end, calling
 * `fn` (may be NULL) for each record; reads nudb.dat only and changes
 * nothing. `result` may be NULL. Errors: TIDE_ECORRUPT, with the offset,
 * when a record runs past the end of the file; the callback's non-zero
 * return; TIDE_ENOENT when there is no store. Cost: one sequential pass
 * through a 1 MiB buffer, plus the largest value. */
int tide_store_visit(const char *dir, tide_visit_fn fn, void *arg, tide_store_visit_result *result);

typedef struct tide_store_recover_result {
    size_t   size;              /* in/out, as tide_store_stats' */
    int      had_log;           /* a nudb.log was found and applied */
    uint64_t buckets_restored;  /* key-file buckets put back */
    uint64_t dat_bytes_cut;     /* data-file bytes of the undone commit */
} tide_store_recover_result;

/* Undo the commit a crash cut short, as open does, without opening:
 * restores the buckets nudb.log saved, cuts both files to their sizes
 * before the commit, deletes the log. Nothing to do is 0. `flags`: 0 or
 * TIDE_STORE_FORCE. `result` may be NULL. Errors: TIDE_EBUSY (another
 * handle or process has the store), TIDE_EMISMATCH (the log is another
 * store's), TIDE_EIO, TIDE_ENOSPC (the log is kept: recovery can run
 * again). */
int tide_store_recover(const char *dir, unsigned flags, tide_store_recover_result *result);

typedef struct tide_store_verify_result {
    size_t   size;              /* in/out, as tide_store_stats' */
    uint64_t keys;              /* entries the key file reaches */
    uint64_t data_records;      /* records in nudb.dat */
    uint64_t value_bytes;
    uint64_t buckets;
    unsigned block_size;
    double   load;              /* keys / (buckets x entries a bucket) */
    double   avg_fetch_reads;   /* bucket reads per fetch of a present key */
    uint64_t waste_bytes;       /* spill records no chain reaches */
} tide_store_verify_result;

/* Check the store in `dir` as NuDB's verify does, and more, changing
 * nothing: every bucket is well formed, every entry sits where its hash
 * says and points at a record of its key, and every record of nudb.dat is
 * reached by exactly one entry. `result` (may be NULL) is filled as far as
 * the walk got. Errors: TIDE_ECORRUPT with the first problem in
 * tide_last_error(); TIDE_EBUSY when a writer has the store open or a
 * crash left a commit to recover; open's errors. Cost: one pass over each
 * file, one data-file read per entry; 8 bytes of memory per key. */
int tide_store_verify(const char *dir, tide_store_verify_result *result);

typedef struct tide_store_rekey_result {
    size_t   size;              /* in/out, as tide_store_stats' */
    uint64_t records;           /* data records indexed */
    unsigned old_block_size, new_block_size;
    uint64_t old_buckets, new_buckets;
} tide_store_rekey_result;

/* Rebuild nudb.key of the store in `dir` from nudb.dat with `block_size`
 * (a power of two from 4096 to 32768), keeping its load factor: how an
 * operator changes the block size of an existing store. A key file that is
 * missing or unusable is built from nudb.dat alone. Safe to interrupt
 * anywhere: until the new key file's rename is durable a crash leaves the
 * old store (the next open or recover cuts what the rebuild appended),
 * after it the new one; never a mixture. `flags`: 0 or TIDE_STORE_FORCE.
 * `result` may be NULL. Errors: TIDE_EINVAL (the block size, found before
 * anything is opened), open's errors (TIDE_EBUSY while another handle has
 * the store), TIDE_EIO, TIDE_ENOSPC. Cost: a sequential read of nudb.dat
 * per pass (each pass indexes the buckets a 64 MiB buffer holds), one
 * write of the new key file. */
int tide_store_rekey(const char *dir, unsigned block_size, unsigned flags, tide_store_rekey_result *result);

#ifdef __cplusplus
}
#endif
#endif
