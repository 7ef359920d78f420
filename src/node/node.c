/*
 * node.c: the store, the node cache and the key cache under one handle.
 *
 * Reads go cache -> key cache -> store. The node cache holds objects that
 * were fetched or put; the key cache holds keys the store recently did not
 * have, so a client asking again and again for a missing key costs no I/O.
 * Writes go store -> node cache -> key-cache erase.
 *
 * The race a key cache invites: a get misses in the store, a put of the same
 * key completes (store insert, key-cache erase), and only then does the get
 * remember the miss, so the key would read as missing for up to
 * key_cache_age. put_gen closes it: a put bumps it between its store insert
 * and its key-cache erase; a get reads it before its store fetch and, after
 * remembering a miss, forgets the miss again when the count has moved. With
 * sequentially consistent atomics either the put's erase follows the get's
 * insert, or the get sees the new count.
 *
 * The handle's other jobs live beside it, on the struct of node_impl.h:
 * sweeper.c runs the sweep rounds (its essay has their order and
 * invariants), keycount.c counts the keys at open, trim_policy.c reads and
 * writes a trim policy's text.
 *
 * Invariants:
 *   1. A put that returned 0 has bumped put_gen after its store insert and
 *      before its key-cache erase.
 *   2. Open starts the key count and the sweeper only after the store and
 *      both caches exist; close stops the sweeper, then the count, then
 *      closes the store (node_free), so no thread sees a freed part.
 *
 * Never: let a get remember a miss that a put's erase may have overtaken
 * (put_gen); close the store while the sweeper or the count may run.
 */
#include "node/node_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "mem/account.h"
#include "tide/error.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

#define MiB (1024u * 1024u)

void tide_node_opts_init(tide_node_opts *o)
{
    memset(o, 0, sizeof *o);
    o->create_if_missing = 1;
    o->key_size = 32;
    o->block_size = 4096;
    o->cache_target = 262144;
    o->cache_age_s = 30;
    o->cache_budget = 64 * (size_t)MiB;
    o->key_cache_size = 65536;
    o->key_cache_age_s = 30;
    o->insert_burst = 4 * (size_t)MiB;
    o->commit_interval_ms = 1000;
    o->sweep_interval_ms = 10000;
    o->trim = 1;
    o->count_keys_max_bytes = 4ull << 30;
    o->generations = 2;
    o->delete_batch = 100;
    o->back_off_ms = 100;
    o->delete_chunk_bytes = 64ull * MiB;
    o->recovery_wait_s = 5;
    o->rotation_wait_max_s = 300;
    o->rotate_check_ms = 1000;
    o->trim_after_rotation = 1;
}

/* ---- opening ------------------------------------------------------------------ */

static int ensure_store(const tide_node_opts *o)
{
    tide_store_info info;
    tide_store_create_opts co;
    int rc = tide_store_inspect(o->dir, o->io, &info);

    if (rc != TIDE_ENOENT) return rc;           /* there is one, or it is broken */
    if (!o->create_if_missing)
        return tide_err_set(TIDE_ENOENT, "%s: no store here (nudb.dat, nudb.key)", o->dir);
    if (o->io == NULL && mkdir(o->dir, 0755) != 0 && errno != EEXIST)
        return tide_err_sys(errno, "mkdir %s", o->dir);
    tide_store_create_opts_init(&co);
    co.key_size = o->key_size;
    co.block_size = o->block_size;
    co.io = o->io;
    rc = tide_store_create(o->dir, &co);
    if (rc == 0) tide_log(TIDE_LOG_INFO, "created an empty store in %s (key size %u, block size %u)",
                          o->dir, o->key_size, o->block_size);
    return rc;
}

static int check_opts(const tide_node_opts *o)
{
    if (o == NULL || o->dir == NULL || o->dir[0] == '\0')
        return tide_err_set(TIDE_EINVAL, "node: no store directory given");
    if (o->cache_age_s == 0) return tide_err_set(TIDE_EINVAL, "node: cache_age_s must be at least 1");
    if (o->key_cache_age_s == 0) return tide_err_set(TIDE_EINVAL, "node: key_cache_age_s must be at least 1");
    if (o->cache_hard_limit && o->cache_budget && o->cache_hard_limit < o->cache_budget)
        return tide_err_set(TIDE_EINVAL, "node: cache_hard_limit %zu is below cache_budget %zu",
                            o->cache_hard_limit, o->cache_budget);
    return 0;
}

/* Free what open made, the store closed first when it is open. Returns the
 * store's close error. The sweeper must be stopped. */
static int node_free(tide_node *n)
{
    int rc;

    ti_node_rotator_stop(n);
    ti_node_count_stop(n);
    rc = n->store ? tide_store_close(n->store) : 0;

    tide_keycache_destroy(n->keycache);
    tide_cache_destroy(n->cache);
    ti_node_rotator_destroy(n);
    pthread_cond_destroy(&n->state_cond);
    pthread_mutex_destroy(&n->state_lock);
    pthread_mutex_destroy(&n->round_lock);
    free(n->dir);
    free(n);
    return rc;
}

int tide_node_open(tide_node **out, const tide_node_opts *opts)
{
    tide_node *n = NULL;
    tide_store_opts so;
    tide_store_info info;
    tide_cache_opts co;
    tide_keycache_opts ko;
    pthread_condattr_t ca;
    int rc;

    *out = NULL;
    rc = check_opts(opts);
    if (rc) goto out;
    n = calloc(1, sizeof *n);
    if (n == NULL) { rc = TIDE_ENOMEM; goto out; }
    n->opts = *opts;
    n->dir = strdup(opts->dir);
    if (n->dir == NULL) { rc = TIDE_ENOMEM; goto out; }
    n->opts.dir = n->dir;
    pthread_mutex_init(&n->round_lock, NULL);
    pthread_mutex_init(&n->state_lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&n->state_cond, &ca);
    pthread_condattr_destroy(&ca);
    ti_node_rotator_init(n);

    rc = ensure_store(&n->opts);
    if (rc) goto out;
    tide_store_opts_init(&so);
    if (n->opts.insert_burst) so.burst_bytes = n->opts.insert_burst;
    so.commit_interval_ms = n->opts.commit_interval_ms;
    so.io = n->opts.io;
    rc = tide_store_open(&n->store, n->dir, &so);
    if (rc) goto out;
    tide_store_get_info(n->store, &info);
    n->key_size = info.key_size;

    tide_cache_opts_init(&co);
    co.key_size = n->key_size;
    co.target_size = n->opts.cache_target;
    co.age_s = n->opts.cache_age_s;
    co.budget_bytes = n->opts.cache_budget;
    /* Twice the budget, saturated: config.c bounds cache_budget well below
     * SIZE_MAX / 2, but a library caller may pass more, and 2 * 2^63 wraps
     * to 0, which the cache reads as no limit at all. */
    co.hard_limit_bytes = n->opts.cache_hard_limit ? n->opts.cache_hard_limit
                        : n->opts.cache_budget > SIZE_MAX / 2 ? SIZE_MAX
                        : 2 * n->opts.cache_budget;
    co.clock_us = n->opts.clock_us;
    co.clock_arg = n->opts.clock_arg;
    co.account_bytes = tide_mem_account_counter(TIDE_MEM_NODE_CACHE);
    rc = tide_cache_create(&n->cache, &co);
    if (rc) goto out;

    tide_keycache_opts_init(&ko);
    ko.key_size = n->key_size;
    ko.target_size = n->opts.key_cache_size;
    ko.age_s = n->opts.key_cache_age_s;
    ko.hard_limit_bytes = n->opts.key_cache_hard_limit ? n->opts.key_cache_hard_limit
                        : n->opts.key_cache_size ? 32 * (size_t)MiB : 0;
    ko.clock_us = n->opts.clock_us;
    ko.clock_arg = n->opts.clock_arg;
    ko.account_bytes = tide_mem_account_counter(TIDE_MEM_KEY_CACHE);
    rc = tide_keycache_create(&n->keycache, &ko);
    if (rc) goto out;

    ti_node_count_start(n, info.dat_file_bytes, info.inserts);

    n->next_due_ns = tide_clock_mono_ns() + n->opts.sweep_interval_ms * 1000000u;
    if (n->opts.sweep_interval_ms > 0) {
        int e = ti_node_sweeper_start(n);
        if (e) { rc = tide_err_sys(e, "node: starting the sweeper thread"); goto out; }
        n->thread_started = 1;
    }
    *out = n;
    n = NULL;
out:
    if (n) node_free(n);
    return rc;
}

int tide_node_close(tide_node *n)
{
    if (n == NULL) return 0;
    pthread_mutex_lock(&n->state_lock);
    n->stop = 1;
    pthread_cond_broadcast(&n->state_cond);
    pthread_mutex_unlock(&n->state_lock);
    if (n->thread_started) pthread_join(n->thread, NULL);
    return node_free(n);
}

unsigned tide_node_key_size(const tide_node *n) { return n->key_size; }

const tide_node_opts *tide_node_options(const tide_node *n) { return &n->opts; }

/* ---- reads and writes -------------------------------------------------------------- */

int tide_node_put(tide_node *n, const void *key, const void *value, size_t len)
{
    tide_cache_obj *obj = NULL, *have;
    int rc;

    have = tide_cache_lookup(n->cache, key);
    if (have) {
        tide_cache_obj_release(have);
        atomic_fetch_add(&n->puts_existing, 1);
        rc = TIDE_EEXIST;
        goto out;
    }
    rc = tide_store_insert(n->store, key, value, len);
    if (rc == TIDE_EEXIST) atomic_fetch_add(&n->puts_existing, 1);
    if (rc) goto out;
    atomic_fetch_add(&n->put_gen, 1);
    tide_keycache_erase(n->keycache, key);
    atomic_fetch_add(&n->puts, 1);
    /* The value is stored; failing to cache it only costs a later read. */
    if (tide_cache_obj_new(&obj, value, len, NULL) == 0) (void)tide_cache_insert(n->cache, key, obj);
out:
    tide_cache_obj_release(obj);
    return rc;
}

int tide_node_get(tide_node *n, const void *key, tide_cache_obj **out)
{
    tide_cache_obj *obj;
    void *buf = NULL;
    size_t len = 0;
    uint64_t gen;
    int rc = 0;

    *out = NULL;
    atomic_fetch_add(&n->gets, 1);
    obj = tide_cache_lookup(n->cache, key);
    if (obj) {
        atomic_fetch_add(&n->gets_cache, 1);
        goto out;
    }
    if (tide_keycache_contains(n->keycache, key)) {
        atomic_fetch_add(&n->gets_keycache, 1);
        atomic_fetch_add(&n->gets_missing, 1);
        rc = TIDE_ENOTFOUND;
        goto out;
    }
    gen = atomic_load(&n->put_gen);
    rc = tide_store_fetch(n->store, key, &buf, &len);
    if (rc == TIDE_ENOTFOUND) {
        atomic_fetch_add(&n->gets_missing, 1);
        (void)tide_keycache_insert(n->keycache, key);
        if (atomic_load(&n->put_gen) != gen) tide_keycache_erase(n->keycache, key);
        goto out;
    }
    if (rc) goto out;
    atomic_fetch_add(&n->gets_store, 1);
    rc = tide_cache_obj_new(&obj, buf, len, NULL);
    if (rc) goto out;
    (void)tide_cache_insert(n->cache, key, obj);
out:
    free(buf);
    *out = obj;
    return rc;
}

int tide_node_sync(tide_node *n) { return tide_store_sync(n->store); }

void tide_node_cache_stats(tide_node *n, tide_cache_stats *out) { tide_cache_stats_get(n->cache, out); }

void tide_node_keycache_stats(tide_node *n, tide_keycache_stats *out)
{
    tide_keycache_stats_get(n->keycache, out);
}

void tide_node_store_info(tide_node *n, tide_store_info *out) { ti_node_refresh_store_accounts(n, out); }
