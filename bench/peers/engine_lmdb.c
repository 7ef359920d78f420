/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engine_lmdb.c: LMDB (Debian's liblmdb, its C API lmdb.h) as a bench/peers
 * engine. One environment in the engine's directory, the default database,
 * default flags (so every commit syncs the data and the meta page: fdatasync
 * through LMDB's own writes, MDB_NOSYNC never set). The map is sized to
 * hold the load with room to spare (4 x items x (key + value + 64) + 64 MiB;
 * the file grows only as pages are used).
 *
 * Load: one write transaction per `batch` items, each committed (and so
 * synced) before the next begins; the last, partial batch is committed by
 * finish. mdb_put uses MDB_NOOVERWRITE, since Tide's insert refuses a
 * duplicate too. Fetch: each reader holds one read-only transaction
 * (MDB_NOTLS, so any thread may own it) for its whole pass; get returns a
 * pointer into the map, which LMDB keeps valid until the transaction ends:
 * no copy, unlike Tide's and RocksDB's gets. Opened again for the cold
 * phase, with MDB_NORDAHEAD: LMDB's advice for a database larger than
 * memory, where the kernel's read-around would fill the page cache with
 * pages no fetch asked for.
 *
 * Invariants:
 *   1. A batch is committed before finish returns; commits counts them.
 * Never: MDB_NOSYNC, MDB_WRITEMAP or MDB_NOMETASYNC (a weaker durability
 *   than the others get).
 */
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_store.h"
#include "peers.h"

struct peer_engine {
    MDB_env *env;
    MDB_dbi dbi;
    MDB_txn *txn;          /* the open write transaction, or NULL */
    uint64_t in_txn, batch, commits;
    size_t value_size;
    char err[PEER_ERROR_MAX];
};

struct peer_reader {
    peer_engine *e;
    MDB_txn *txn;
    char err[PEER_ERROR_MAX];
};

static int l_fail(char *err, const char *what, int rc)
{
    snprintf(err, PEER_ERROR_MAX, "lmdb: %s: %s", what, mdb_strerror(rc));
    return -1;
}

static int l_open(peer_engine **out, const char *dir, const peer_cfg *cfg, char *err)
{
    peer_engine *e = calloc(1, sizeof *e);
    size_t map = (size_t)(4 * cfg->items * (TIDE_BENCH_KEY_SIZE + cfg->value_size + 64)) +
                 ((size_t)64 << 20);
    MDB_txn *txn = NULL;
    int rc;

    *out = NULL;
    if (e == NULL) {
        snprintf(err, PEER_ERROR_MAX, "lmdb: no memory");
        return -1;
    }
    e->batch = cfg->batch;
    e->value_size = cfg->value_size;
    rc = mdb_env_create(&e->env);
    if (rc) { free(e); return l_fail(err, "mdb_env_create", rc); }
    rc = mdb_env_set_mapsize(e->env, map);
    if (rc == 0) rc = mdb_env_open(e->env, dir, MDB_NOTLS | (cfg->existing ? MDB_NORDAHEAD : 0), 0644);
    if (rc == 0) rc = mdb_txn_begin(e->env, NULL, 0, &txn);
    if (rc == 0) rc = mdb_dbi_open(txn, NULL, 0, &e->dbi);
    if (rc == 0) {
        rc = mdb_txn_commit(txn);
        txn = NULL;
    }
    if (rc) {
        if (txn) mdb_txn_abort(txn);
        l_fail(err, "open", rc);
        mdb_env_close(e->env);
        free(e);
        return -1;
    }
    *out = e;
    return 0;
}

static int l_commit(peer_engine *e)
{
    int rc;
    if (e->txn == NULL) return 0;
    rc = mdb_txn_commit(e->txn);
    e->txn = NULL;
    e->in_txn = 0;
    if (rc) return l_fail(e->err, "mdb_txn_commit", rc);
    e->commits++;
    return 0;
}

static int l_put(peer_engine *e, const unsigned char *key, const unsigned char *value)
{
    MDB_val k = { TIDE_BENCH_KEY_SIZE, (void *)key }, v = { e->value_size, (void *)value };
    int rc;

    if (e->txn == NULL) {
        rc = mdb_txn_begin(e->env, NULL, 0, &e->txn);
        if (rc) {
            e->txn = NULL;
            return l_fail(e->err, "mdb_txn_begin", rc);
        }
    }
    rc = mdb_put(e->txn, e->dbi, &k, &v, MDB_NOOVERWRITE);
    if (rc) return l_fail(e->err, "mdb_put", rc);
    if (++e->in_txn >= e->batch) return l_commit(e);
    return 0;
}

static int l_finish(peer_engine *e) { return l_commit(e); }

static int l_reader_open(peer_engine *e, peer_reader **out)
{
    peer_reader *r = calloc(1, sizeof *r);
    int rc;

    *out = r;
    if (r == NULL) {
        snprintf(e->err, sizeof e->err, "lmdb: no memory for a reader");
        return -1;
    }
    r->e = e;
    rc = mdb_txn_begin(e->env, NULL, MDB_RDONLY, &r->txn);
    if (rc) {
        r->txn = NULL;
        return l_fail(e->err, "mdb_txn_begin (read-only)", rc);
    }
    return 0;
}

static int l_get(peer_reader *r, const unsigned char *key, const unsigned char **out, size_t *len)
{
    MDB_val k = { TIDE_BENCH_KEY_SIZE, (void *)key }, v;
    int rc = mdb_get(r->txn, r->e->dbi, &k, &v);

    if (rc == MDB_NOTFOUND) return 1;
    if (rc) return l_fail(r->err, "mdb_get", rc);
    *out = v.mv_data;
    *len = v.mv_size;
    return 0;
}

static void l_reader_close(peer_reader *r)
{
    if (r == NULL) return;
    if (r->txn) mdb_txn_abort(r->txn);
    free(r);
}

static const char *l_reader_error(peer_reader *r) { return r->err; }
static uint64_t l_commits(peer_engine *e) { return e->commits; }

static void l_close(peer_engine *e)
{
    if (e == NULL) return;
    if (e->txn) mdb_txn_abort(e->txn);
    mdb_env_close(e->env);
    free(e);
}

static const char *l_error(peer_engine *e) { return e->err; }

const peer_ops peer_lmdb_ops = {
    .name = "lmdb",
    .durability = "one write transaction per batch, committed with sync",
    .open = l_open, .put = l_put, .finish = l_finish,
    .reader_open = l_reader_open, .get = l_get, .reader_close = l_reader_close,
    .reader_error = l_reader_error, .commits = l_commits, .close = l_close, .error = l_error,
};
