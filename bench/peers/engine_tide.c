/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engine_tide.c: Tide's store as a bench/peers engine, configured as
 * `tide bench store` configures it: key size 32, block size 4096,
 * load factor 0.5, burst_bytes from the options (16 MiB by default), and
 * the store's own commit policy: a commit about every second or when the
 * pool holds a burst, each made durable with fdatasync. put is
 * tide_store_insert (which refuses a duplicate key, so it looks the key up
 * first); finish is tide_store_sync; get is tide_store_fetch, whose value
 * is a malloc'd copy that the reader frees at its next get.
 *
 * tide-16k and tide-defer-16k are tide and tide-defer with a key-file
 * block of 16384 bytes (four pages a bucket instead of one).
 *
 * tide-defer is the same store with the deferred index:
 * index_lag_bytes from --index-lag (64 MiB by default), so commits append
 * and sync records and the key file is written by flushes of the tail;
 * its load ends with tide_store_flush, the indexing it owes.
 *
 * Invariants:
 *   1. The commits and the bytes written reported are the store's own
 *      counters' (tide_store_info), not a guess.
 * Never: batch for the store; its commit thread decides, as in production.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_store.h"
#include "peers.h"
#include "mem/cgroup.h"
#include "store/full.h"
#include "tide/error.h"
#include "util/err.h"

struct peer_engine {
    tide_store *s;
    size_t value_size;
    char err[PEER_ERROR_MAX];
};

struct peer_reader {
    peer_engine *e;
    void *last;
    char err[PEER_ERROR_MAX];
};

/* The memory for the store's pages, as tided finds it: the limit of the
 * cgroup this process runs in (the cold phase's), else 0, the machine's. */
static uint64_t page_memory(void)
{
    tide_mem_cgroup_limit_info ci;
    int rc = tide_mem_cgroup_limit(NULL, &ci);

    tide_err_clear();
    return rc == 0 && ci.limited ? ci.limit_bytes : 0;
}

static int t_open_lag(peer_engine **out, const char *dir, const peer_cfg *cfg, uint64_t lag,
                      unsigned block_size, char *err)
{
    tide_store_create_opts co;
    tide_store_opts so;
    peer_engine *e = calloc(1, sizeof *e);
    int rc;

    *out = NULL;
    if (e == NULL) {
        snprintf(err, PEER_ERROR_MAX, "tide: no memory");
        return -1;
    }
    e->value_size = cfg->value_size;
    tide_store_create_opts_init(&co);
    co.key_size = TIDE_BENCH_KEY_SIZE;
    co.load_factor = TIDE_BENCH_LOAD_FACTOR;
    rc = tide_store_create_opts_set_block_size(&co, block_size);
    if (rc == 0 && !cfg->existing) rc = tide_store_create(dir, &co);
    if (rc == 0) {
        tide_store_opts_init(&so);
        so.burst_bytes = (size_t)cfg->burst;
        so.index_lag_bytes = lag;
        so.page_memory = page_memory();
        rc = tide_store_open(&e->s, dir, &so);
    }
    if (rc) {
        snprintf(err, PEER_ERROR_MAX, "tide: create/open %s: %s", dir, tide_last_error());
        free(e);
        return -1;
    }
    *out = e;
    return 0;
}

static int t_open(peer_engine **out, const char *dir, const peer_cfg *cfg, char *err)
{
    return t_open_lag(out, dir, cfg, 0, 4096, err);
}

static int t_open_16k(peer_engine **out, const char *dir, const peer_cfg *cfg, char *err)
{
    return t_open_lag(out, dir, cfg, 0, 16384, err);
}

static int t_open_defer(peer_engine **out, const char *dir, const peer_cfg *cfg, char *err)
{
    return t_open_lag(out, dir, cfg, cfg->index_lag, 4096, err);
}

static int t_open_defer_16k(peer_engine **out, const char *dir, const peer_cfg *cfg, char *err)
{
    return t_open_lag(out, dir, cfg, cfg->index_lag, 16384, err);
}

static int t_put(peer_engine *e, const unsigned char *key, const unsigned char *value)
{
    int rc = tide_store_insert(e->s, key, value, e->value_size);
    if (rc == 0) return 0;
    snprintf(e->err, sizeof e->err, "tide: insert: %s", tide_last_error());
    return -1;
}

/* The load's end: `fn` (sync, or flush), its failure said as `what`. */
static int t_end_load(peer_engine *e, int (*fn)(tide_store *), const char *what)
{
    if (fn(e->s) == 0) return 0;
    snprintf(e->err, sizeof e->err, "tide: %s: %s", what, tide_last_error());
    return -1;
}

static int t_finish(peer_engine *e) { return t_end_load(e, tide_store_sync, "sync"); }

/* tide-defer's load ends with the flush it owes, so that its write
 * amplification counts the key file's writes too. */
static int t_finish_defer(peer_engine *e) { return t_end_load(e, tide_store_flush, "flush"); }

static int t_reader_open(peer_engine *e, peer_reader **out)
{
    peer_reader *r = calloc(1, sizeof *r);
    *out = r;
    if (r == NULL) {
        snprintf(e->err, sizeof e->err, "tide: no memory for a reader");
        return -1;
    }
    r->e = e;
    return 0;
}

static int t_get(peer_reader *r, const unsigned char *key, const unsigned char **out, size_t *len)
{
    int rc;

    free(r->last);
    r->last = NULL;
    rc = tide_store_fetch(r->e->s, key, &r->last, len);
    if (rc == TIDE_ENOTFOUND) return 1;
    if (rc) {
        snprintf(r->err, sizeof r->err, "tide: fetch: %s", tide_last_error());
        return -1;
    }
    *out = r->last;
    return 0;
}

static void t_reader_close(peer_reader *r)
{
    if (r == NULL) return;
    free(r->last);
    free(r);
}

static const char *t_reader_error(peer_reader *r) { return r->err; }

static uint64_t t_commits(peer_engine *e)
{
    tide_store_info info;
    tide_store_get_info(e->s, &info);
    return info.commits;
}

static uint64_t t_bytes_written(peer_engine *e)
{
    tide_store_info info;
    tide_store_get_info(e->s, &info);
    return info.bytes_written;
}

static void t_close(peer_engine *e)
{
    if (e == NULL) return;
    if (e->s) tide_store_close(e->s);
    free(e);
}

static const char *t_error(peer_engine *e) { return e->err; }

const peer_ops peer_tide_ops = {
    .name = "tide",
    .durability = "the store's commits (a burst or a second), fdatasync each",
    .open = t_open, .put = t_put, .finish = t_finish,
    .reader_open = t_reader_open, .get = t_get, .reader_close = t_reader_close,
    .reader_error = t_reader_error, .commits = t_commits,
    .own_bytes_written = t_bytes_written, .close = t_close, .error = t_error,
};

const peer_ops peer_tide_defer_ops = {
    .name = "tide-defer",
    .durability = "fdatasync of nudb.dat and tide.meta per commit; the key file by flushes",
    .open = t_open_defer, .put = t_put, .finish = t_finish_defer,
    .reader_open = t_reader_open, .get = t_get, .reader_close = t_reader_close,
    .reader_error = t_reader_error, .commits = t_commits, .close = t_close, .error = t_error,
};

const peer_ops peer_tide_16k_ops = {
    .name = "tide-16k",
    .durability = "as tide, with a key-file block of 16384 bytes",
    .open = t_open_16k, .put = t_put, .finish = t_finish,
    .reader_open = t_reader_open, .get = t_get, .reader_close = t_reader_close,
    .reader_error = t_reader_error, .commits = t_commits,
    .own_bytes_written = t_bytes_written, .close = t_close, .error = t_error,
};

const peer_ops peer_tide_defer_16k_ops = {
    .name = "tide-defer-16k",
    .durability = "as tide-defer, with a key-file block of 16384 bytes",
    .open = t_open_defer_16k, .put = t_put, .finish = t_finish_defer,
    .reader_open = t_reader_open, .get = t_get, .reader_close = t_reader_close,
    .reader_error = t_reader_error, .commits = t_commits, .close = t_close, .error = t_error,
};
