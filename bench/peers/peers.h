/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * peers.h: the engines bench/peers drives (Tide's store, LMDB, RocksDB with
 * and without sync), behind one small table of functions, so that the
 * driver (peers.c) times and measures every engine the same way.
 *
 * An engine is used as: open (an empty directory of its own), put N times
 * (it groups the puts into its own commits of `batch` items), finish (the
 * last commit, made durable as its mode says, and whatever else must end
 * before the load counts as done), then any number of readers (one per
 * fetching thread) calling get, then close. The driver never calls put and
 * get at the same time. For the cold phase it is opened again on the
 * directory it left (cfg.existing), read, and closed.
 *
 * Errors: 0, or -1 with a sentence in the engine's error buffer (peer_error)
 * naming the call that failed and the library's message. get: 0 found (the
 * value in *out, valid until the reader's next get), 1 not found, -1 error.
 *
 * Thread safety: open, put, finish, close on one thread; each reader on its
 * own thread, concurrently with other readers.
 */
#ifndef TIDE_BENCH_PEERS_H
#define TIDE_BENCH_PEERS_H

#include <stddef.h>
#include <stdint.h>

#define PEER_ERROR_MAX 512

typedef struct peer_cfg {
    uint64_t items;          /* how many puts will come (LMDB sizes its map by it) */
    size_t value_size;
    uint64_t batch;          /* items per commit, for the engines that batch */
    uint64_t burst;          /* Tide's burst_bytes */
    uint64_t index_lag;      /* tide-defer's index_lag_bytes */
    int sync;                /* rocksdb: sync the WAL on each batch */
    int existing;            /* open what a load left (the cold phase): create
                                nothing, and read as a store larger than memory
                                is read (LMDB: MDB_NORDAHEAD) */
} peer_cfg;

typedef struct peer_engine peer_engine;
typedef struct peer_reader peer_reader;

typedef struct peer_ops {
    const char *name;        /* "tide", "lmdb", "rocksdb-sync", "rocksdb-sync-checked",
                                "rocksdb" */
    const char *durability;  /* one line, for --help and the JSON */
    int (*open)(peer_engine **e, const char *dir, const peer_cfg *cfg, char *err);
    int (*put)(peer_engine *e, const unsigned char *key, const unsigned char *value);
    int (*finish)(peer_engine *e);
    int (*reader_open)(peer_engine *e, peer_reader **r);
    int (*get)(peer_reader *r, const unsigned char *key, const unsigned char **out,
               size_t *len);
    void (*reader_close)(peer_reader *r);
    const char *(*reader_error)(peer_reader *r);
    /* Commits made during the load (Tide's counter; the others count their
     * own batches). */
    uint64_t (*commits)(peer_engine *e);
    /* The bytes the engine itself counts as written to its files during the
     * load, for a cross-check of wchar: Tide's tide_store_info.bytes_written.
     * NULL for an engine with no such counter. */
    uint64_t (*own_bytes_written)(peer_engine *e);
    void (*close)(peer_engine *e);
    const char *(*error)(peer_engine *e);
} peer_ops;

extern const peer_ops peer_tide_ops;
extern const peer_ops peer_tide_defer_ops;
extern const peer_ops peer_tide_16k_ops;
extern const peer_ops peer_tide_defer_16k_ops;
extern const peer_ops peer_lmdb_ops;
extern const peer_ops peer_rocksdb_sync_ops;
extern const peer_ops peer_rocksdb_sync_checked_ops;
extern const peer_ops peer_rocksdb_ops;

#endif
