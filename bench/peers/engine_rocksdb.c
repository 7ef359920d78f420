/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engine_rocksdb.c: RocksDB (Debian's librocksdb, its C API rocksdb/c.h) as
 * three bench/peers engines:
 *
 *   rocksdb-sync  each batch of `batch` items is one rocksdb_write with
 *                 WriteOptions.sync, so the WAL is fdatasync'd per batch,
 *                 as Tide syncs per commit;
 *   rocksdb-sync-checked  the same, with a rocksdb_get of each key before
 *                 its put, failing on a key that exists: the lookup Tide's
 *                 insert (which refuses a duplicate) and LMDB's
 *                 MDB_NOOVERWRITE put make, and a plain RocksDB put (a blind
 *                 overwrite) does not. The get sees the batches written, not
 *                 the one being filled; the bench's keys are distinct, so
 *                 every get is a miss, as every duplicate check of Tide's is;
 *   rocksdb       the batches of rocksdb-sync with sync off (the WAL is
 *                 written, not synced): RocksDB's default, a bound on what
 *                 sync costs.
 *
 * Options: the library's defaults (memtable 64 MiB, level compaction, two
 * background jobs, an 8 MiB block cache, snappy when built in) plus
 * create_if_missing and a 10-bit-per-key Bloom filter, which any point
 * lookup deployment sets. finish writes the last batch, flushes the
 * memtable (waiting for it) and then waits until no flush or compaction is
 * pending or running, polling the properties every 10 ms: the load is done
 * when the store has settled, so the bytes the compactions write are
 * counted in the load's write amplification and their time in its rate,
 * rather than leaking into the fetch phase. get is rocksdb_get (a malloc'd
 * copy, freed at the reader's next get), like Tide's fetch. The wait is
 * bounded (R_SETTLE_LIMIT_S): a store still busy after it fails the load
 * with an error naming the busy properties, rather than hanging the bench.
 *
 * Invariants:
 *   1. Every put reaches a write batch that is written before finish
 *      returns; commits counts the rocksdb_write calls.
 * Never: disable the WAL (rocksdb keeps it; only its sync differs).
 */
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_store.h"
#include "peers.h"
#include "util/clock.h"

/* How long finish waits for the flushes and compactions to end. */
#define R_SETTLE_LIMIT_S 1800

struct peer_engine {
    rocksdb_t *db;
    rocksdb_options_t *opts;
    rocksdb_block_based_table_options_t *table;
    rocksdb_writeoptions_t *wo;
    rocksdb_readoptions_t *ro;
    rocksdb_writebatch_t *wb;
    uint64_t in_batch, batch, commits;
    size_t value_size;
    char err[PEER_ERROR_MAX];
};

struct peer_reader {
    peer_engine *e;
    char *last;
    char err[PEER_ERROR_MAX];
};

static int r_fail(char *err, const char *what, char *msg)
{
    snprintf(err, PEER_ERROR_MAX, "rocksdb: %s: %s", what, msg ? msg : "failed");
    rocksdb_free(msg);
    return -1;
}

static void r_close(peer_engine *e)
{
    if (e == NULL) return;
    if (e->db) rocksdb_close(e->db);
    if (e->wb) rocksdb_writebatch_destroy(e->wb);
    if (e->ro) rocksdb_readoptions_destroy(e->ro);
    if (e->wo) rocksdb_writeoptions_destroy(e->wo);
    if (e->opts) rocksdb_options_destroy(e->opts);
    if (e->table) rocksdb_block_based_options_destroy(e->table);
    free(e);
}

static int r_open(peer_engine **out, const char *dir, const peer_cfg *cfg, char *err)
{
    peer_engine *e = calloc(1, sizeof *e);
    char *msg = NULL;

    *out = NULL;
    if (e == NULL) {
        snprintf(err, PEER_ERROR_MAX, "rocksdb: no memory");
        return -1;
    }
    e->batch = cfg->batch;
    e->value_size = cfg->value_size;
    e->opts = rocksdb_options_create();
    e->table = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_filter_policy(e->table,
                                                  rocksdb_filterpolicy_create_bloom(10));
    rocksdb_options_set_block_based_table_factory(e->opts, e->table);
    rocksdb_options_set_create_if_missing(e->opts, 1);
    e->wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(e->wo, cfg->sync ? 1 : 0);
    e->ro = rocksdb_readoptions_create();
    e->wb = rocksdb_writebatch_create();
    e->db = rocksdb_open(e->opts, dir, &msg);
    if (msg != NULL || e->db == NULL) {
        r_fail(err, "rocksdb_open", msg);
        r_close(e);
        return -1;
    }
    *out = e;
    return 0;
}

static int r_write(peer_engine *e)
{
    char *msg = NULL;
    if (e->in_batch == 0) return 0;
    rocksdb_write(e->db, e->wo, e->wb, &msg);
    rocksdb_writebatch_clear(e->wb);
    e->in_batch = 0;
    if (msg) return r_fail(e->err, "rocksdb_write", msg);
    e->commits++;
    return 0;
}

static int r_put(peer_engine *e, const unsigned char *key, const unsigned char *value)
{
    rocksdb_writebatch_put(e->wb, (const char *)key, TIDE_BENCH_KEY_SIZE, (const char *)value,
                           e->value_size);
    if (++e->in_batch >= e->batch) return r_write(e);
    return 0;
}

/* rocksdb-sync-checked: the duplicate check Tide's insert makes, then put. */
static int r_put_checked(peer_engine *e, const unsigned char *key, const unsigned char *value)
{
    char *msg = NULL, *old;
    size_t len = 0;

    old = rocksdb_get(e->db, e->ro, (const char *)key, TIDE_BENCH_KEY_SIZE, &len, &msg);
    if (msg) return r_fail(e->err, "rocksdb_get (the duplicate check)", msg);
    if (old) {
        rocksdb_free(old);
        snprintf(e->err, sizeof e->err, "rocksdb: put: the key exists (a duplicate)");
        return -1;
    }
    return r_put(e, key, value);
}

/* A numeric property, or -1 when RocksDB does not know it. */
static long r_property(peer_engine *e, const char *name)
{
    char *v = rocksdb_property_value(e->db, name);
    long n = v ? strtol(v, NULL, 10) : -1;
    rocksdb_free(v);
    return n;
}

static int r_finish(peer_engine *e)
{
    static const char *const busy[] = { "rocksdb.compaction-pending",
                                        "rocksdb.num-running-compactions",
                                        "rocksdb.num-running-flushes",
                                        "rocksdb.mem-table-flush-pending" };
    struct timespec tick = { 0, 10 * 1000 * 1000 };
    rocksdb_flushoptions_t *fo;
    char *msg = NULL, still[200] = "";
    int settled = 0;
    uint64_t t0;

    if (r_write(e) != 0) return -1;
    fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    rocksdb_flush(e->db, fo, &msg);
    rocksdb_flushoptions_destroy(fo);
    if (msg) return r_fail(e->err, "rocksdb_flush", msg);
    t0 = tide_clock_mono_us();
    while (!settled) {
        settled = 1;
        still[0] = '\0';
        for (size_t i = 0; i < sizeof busy / sizeof *busy; i++) {
            if (r_property(e, busy[i]) <= 0) continue;
            settled = 0;
            snprintf(still + strlen(still), sizeof still - strlen(still), " %s", busy[i]);
        }
        if (settled) break;
        if (tide_clock_mono_us() - t0 > (uint64_t)R_SETTLE_LIMIT_S * 1000000) {
            snprintf(e->err, sizeof e->err, "rocksdb: the flushes and compactions did not end "
                     "within %d s of the last write (still nonzero:%s)", R_SETTLE_LIMIT_S, still);
            return -1;
        }
        nanosleep(&tick, NULL);
    }
    return 0;
}

static int r_reader_open(peer_engine *e, peer_reader **out)
{
    peer_reader *r = calloc(1, sizeof *r);
    *out = r;
    if (r == NULL) {
        snprintf(e->err, sizeof e->err, "rocksdb: no memory for a reader");
        return -1;
    }
    r->e = e;
    return 0;
}

static int r_get(peer_reader *r, const unsigned char *key, const unsigned char **out, size_t *len)
{
    char *msg = NULL;

    rocksdb_free(r->last);
    r->last = rocksdb_get(r->e->db, r->e->ro, (const char *)key, TIDE_BENCH_KEY_SIZE, len, &msg);
    if (msg) {
        r->last = NULL;
        return r_fail(r->err, "rocksdb_get", msg);
    }
    if (r->last == NULL) return 1;
    *out = (const unsigned char *)r->last;
    return 0;
}

static void r_reader_close(peer_reader *r)
{
    if (r == NULL) return;
    rocksdb_free(r->last);
    free(r);
}

static const char *r_reader_error(peer_reader *r) { return r->err; }
static uint64_t r_commits(peer_engine *e) { return e->commits; }
static const char *r_error(peer_engine *e) { return e->err; }

static int r_open_sync(peer_engine **out, const char *dir, const peer_cfg *cfg, char *err)
{
    peer_cfg c = *cfg;
    c.sync = 1;
    return r_open(out, dir, &c, err);
}

static int r_open_nosync(peer_engine **out, const char *dir, const peer_cfg *cfg, char *err)
{
    peer_cfg c = *cfg;
    c.sync = 0;
    return r_open(out, dir, &c, err);
}

const peer_ops peer_rocksdb_sync_ops = {
    .name = "rocksdb-sync",
    .durability = "one write batch per batch, WAL synced on each",
    .open = r_open_sync, .put = r_put, .finish = r_finish,
    .reader_open = r_reader_open, .get = r_get, .reader_close = r_reader_close,
    .reader_error = r_reader_error, .commits = r_commits, .close = r_close, .error = r_error,
};

const peer_ops peer_rocksdb_sync_checked_ops = {
    .name = "rocksdb-sync-checked",
    .durability = "as rocksdb-sync, with a get (duplicate check) before each put",
    .open = r_open_sync, .put = r_put_checked, .finish = r_finish,
    .reader_open = r_reader_open, .get = r_get, .reader_close = r_reader_close,
    .reader_error = r_reader_error, .commits = r_commits, .close = r_close, .error = r_error,
};

const peer_ops peer_rocksdb_ops = {
    .name = "rocksdb",
    .durability = "the same write batches, WAL not synced",
    .open = r_open_nosync, .put = r_put, .finish = r_finish,
    .reader_open = r_reader_open, .get = r_get, .reader_close = r_reader_close,
    .reader_error = r_reader_error, .commits = r_commits, .close = r_close, .error = r_error,
};
