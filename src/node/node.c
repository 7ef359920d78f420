/* SPDX-License-Identifier: BSD-2-Clause */
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
 * Online delete (docs/ROTATION.md). The node runs on a tide_gens handle:
 * one plain store, exactly as before, or generations. A node-cache object
 * carries the id of the generation it is known in (its tag). A rotation
 * leaves the caches alone; the rule is applied on each hit instead, in
 * O(1) and without a lock across the cache: a tag below the oldest kept
 * id means the object's generation was dropped, so the copy is erased and
 * the read falls through to the store (which answers ENOTFOUND, or finds
 * the key in a newer generation); a tag below the newest id means the
 * object was last seen in an older span, so the hit copies it forward
 * (tide_gens_touch) and moves the tag up: a read in the current span
 * keeps the object, as a read through the store does. A PUT whose key is
 * in the cache applies the same rule before it answers EEXIST. The key
 * cache: a successful rotation only removes keys, so a miss remembered
 * across it stays a miss; but between a dropping rotation's hide and its
 * switch an object only the hidden generation holds reads as absent, and
 * if the rotation then fails the generation is shown again, so a miss
 * remembered in that window is false. Three things close it: the gens
 * handle's readable epoch (tide_gens_read_epoch) moves at that unhide; a
 * get reads it before its store fetch, as put_gen, and forgets the miss it
 * remembered when it moved; the rotator clears the key cache after a
 * rotation during which it moved (a miss remembered before the unhide);
 * and a put answered EEXIST by the store erases the key from the key
 * cache (the store holds it: any miss remembered for it is false).
 *
 * The handle's other jobs live beside it, on the struct of node_impl.h:
 * sweeper.c runs the sweep rounds (its essay has their order and
 * invariants), keycount.c counts the keys at open, trim_policy.c reads and
 * writes a trim policy's text, governor.c holds the memory limit.
 *
 * Invariants:
 *   1. A put that returned 0 has bumped put_gen after its store insert and
 *      before its key-cache erase.
 *   2. Open starts the key count, the rotator, the memory governor and the
 *      sweeper only after the generations and both caches exist; close
 *      stops the governor (its looks run sweep rounds), then the sweeper,
 *      then the rotator, then the count, then closes the generations
 *      (node_free), so no thread sees a freed part.
 *   5. A put at the memory level HIGH or above (governor.c) touches
 *      nothing: refused with TIDE_EOVERLOAD before the existence check.
 *   3. A cache hit never serves an object whose tag is below the oldest
 *      kept generation id (read at the hit).
 *   4. A miss stays in the key cache only if the readable epoch read
 *      before its fetch still held after its insert, or a key-cache clear
 *      followed the epoch's move (rotator.c, after any rotation that moved
 *      it); a put answered EEXIST leaves no miss for its key. With an
 *      archive the same holds of its seal epoch (tide_archive_seal_epoch):
 *      a miss raced by a new seal is forgotten, and the first read that
 *      sees the epoch moved clears the key cache.
 *
 * Never: let a get remember a miss that a put's erase may have overtaken
 * (put_gen), or that a failed rotation's unhide may have made false
 * (the readable epoch); close the store while the sweeper, the rotator or the count
 * may run; serve a cached object of a dropped generation.
 */
#include "node/node_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>

#include "io/io.h"
#include "mem/account.h"
#include "tide/error.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/log.h"

#define MiB (1024u * 1024u)

/* The key cache's arena segment: its entries are small and few beside the
 * node cache's objects (a 32 MiB hard limit by default), and the segment
 * allocations go to is never evacuated, so a 2 MiB one could hold most of
 * a small key cache's memory for a handful of keys. 64 KiB, the smallest
 * the arena takes, bounds that to 64 KiB (and is no huge page). */
#define KEY_ARENA_SEGMENT ((size_t)64 * 1024)

void tide_node_opts_init(tide_node_opts *o)
{
    memset(o, 0, sizeof *o);
    o->create_if_missing = 1;
    o->key_size = 32;
    o->block_size = 4096;
    o->store_key_map = 1;
    o->cache_target = 262144;
    o->cache_age_s = 30;
    o->cache_budget = 64 * (size_t)MiB;
    o->cache_arena = 1;
    o->cache_arena_segment = 2 * (size_t)MiB;
    o->cache_arena_reserve = 1;
    o->cache_arena_evacuate = 64 * (size_t)MiB;
    o->key_cache_size = 65536;
    o->key_cache_age_s = 30;
    o->insert_burst = 4 * (size_t)MiB;
    o->commit_interval_ms = 1000;
    o->sweep_interval_ms = 10000;
    o->trim = 1;
    o->count_keys_max_bytes = 4ull << 30;
    o->generations = 0;           /* the manifest's keep; 2 for a new directory */
    o->delete_batch = 100;
    o->back_off_ms = 100;
    o->delete_chunk = 64ull * MiB;
    o->recovery_wait_s = 5;
    o->rotation_wait_max_s = 300;
    o->rotate_check_ms = 1000;
    o->trim_after_rotation = 1;
    o->memory_pct[TIDE_OVERLOAD_SOFT] = TIDE_OVERLOAD_SOFT_PCT_DEFAULT;
    o->memory_pct[TIDE_OVERLOAD_HIGH] = TIDE_OVERLOAD_HIGH_PCT_DEFAULT;
    o->memory_pct[TIDE_OVERLOAD_CRITICAL] = TIDE_OVERLOAD_CRITICAL_PCT_DEFAULT;
    o->memory_hysteresis_pct = TIDE_OVERLOAD_HYSTERESIS_DEFAULT;
    o->memory_poll_ms = 100;
    o->memory_pressure_pct = 10;
}

/* ---- opening ------------------------------------------------------------------ */

static int ensure_store(const tide_node_opts *o)
{
    tide_store_info info;
    tide_store_create_opts co;
    int made = 0, rc = tide_store_inspect(o->dir, o->hooks.io, &info);

    if (rc != TIDE_ENOENT) return rc;           /* there is one, or it is broken */
    if (!o->create_if_missing)
        return tide_err_set(TIDE_ENOENT, "%s: no store here (nudb.dat, nudb.key)", o->dir);
    if (o->hooks.io == NULL) {
        if (mkdir(o->dir, 0755) == 0) made = 1;
        else if (errno != EEXIST) return tide_err_sys(errno, "mkdir %s", o->dir);
    }
    tide_store_create_opts_init(&co);
    co.key_size = o->key_size;
    co.block_size = o->block_size;
    co.io = o->hooks.io;
    rc = tide_store_create(o->dir, &co);
    if (rc == 0) tide_log(TIDE_LOG_INFO, "created an empty store in %s (key size %u, block size %u)",
                          o->dir, o->key_size, o->block_size);
    /* A failed create removes its files; the directory made for it goes
     * too, so a failed first start leaves nothing behind. */
    if (rc && made) rmdir(o->dir);
    return rc;
}

/* 1 when DIR holds a manifest (generations on disk). */
static int has_manifest(const tide_node_opts *o)
{
    tide_io *io = o->hooks.io ? o->hooks.io : tide_io_posix();
    char p[4200];

    if ((size_t)snprintf(p, sizeof p, "%s/%s", o->dir, TIDE_GEN_FILE) >= sizeof p) return 0;
    return io->stat(io, p, NULL) == 0;
}

/* Say which keep G is in force and where it came from. opts.generations
 * 0 is passed on as 0, which tide_gens_open reads as the manifest's own
 * keep (2 for a new directory), so a restart that does not say G never
 * shrinks the ring; an explicit value is honoured, and tide_gens_open
 * warns, naming them, when it is below the manifest's and the next
 * rotation will drop generations. */
static void log_keep(tide_node *n, int manifest)
{
    tide_gens_info gi;

    if (!tide_gens_enabled(n->gens)) return;
    tide_gens_get_info(n->gens, &gi);
    if (n->opts.generations == 0)
        tide_log(TIDE_LOG_INFO, "online delete: keeping %u generations (%s: generations not set)", gi.keep,
                 manifest ? "the manifest's keep" : "the default for a new directory");
    else if (n->opts.generations != gi.keep)
        tide_log(TIDE_LOG_INFO, "online delete: keeping %u generations (configured: generations; the manifest "
                 "has %u until the next rotation)", n->opts.generations, gi.keep);
    else
        tide_log(TIDE_LOG_INFO, "online delete: keeping %u generations (configured: generations)", gi.keep);
}

/* The store or the generations in DIR. With online delete off and no
 * manifest this is what it always was (ensure_store, then one plain
 * store); otherwise tide_gens_open makes, adopts or opens generations. */
static int open_gens(tide_node *n)
{
    tide_gens_opts go;
    int manifest = has_manifest(&n->opts);
    int rc = 0;

    tide_gens_opts_init(&go);
    go.online_delete = n->opts.online_delete_on ? 1 : 0;
    go.keep = n->opts.generations;      /* 0: the manifest's (log_keep) */
    go.create_if_missing = n->opts.create_if_missing;
    go.key_size = n->opts.key_size;
    go.block_size = n->opts.block_size;
    if (n->opts.insert_burst) go.store.burst_bytes = n->opts.insert_burst;
    go.store.commit_interval_ms = n->opts.commit_interval_ms;
    go.store.pread = !n->opts.store_key_map;   /* no key map: the store reads with pread */
    go.store.note_alloc = tide_mem_account_note_alloc;   /* churn totals */
    go.store.pool_account_id = TIDE_MEM_STORE_INSERT_POOL;
    go.store.commit_account_id = TIDE_MEM_STORE_COMMIT;
    go.store.index_lag_bytes = n->opts.index_lag_bytes;
    go.store.page_memory = n->opts.store_page_memory;
    go.store.tail_account_id = TIDE_MEM_STORE_TAIL_INDEX;
    go.io = n->opts.hooks.io;
    go.delete_chunk = n->opts.delete_chunk;
    go.back_off_ms = n->opts.back_off_ms;
    go.trace = n->opts.hooks.gens_trace;
    go.trace_arg = n->opts.hooks.gens_trace_arg;
    if (!go.online_delete && !manifest) rc = ensure_store(&n->opts);
    if (rc == 0) rc = tide_gens_open(&n->gens, n->dir, &go);
    if (rc == 0) log_keep(n, manifest);
    return rc;
}

/* The archive (docs/ARCHIVE.md): a primary's over the generations, a
 * replica's alone; their memory counted under two consumers of their own. */
static int open_archive(tide_node *n)
{
    tide_archive_opts ao = n->opts.archive;
    int upload_id = -1, filter_id = -1, rc;

    if ((rc = tide_mem_account_register("archive_upload", &upload_id)) != 0 ||
        (rc = tide_mem_account_register("archive_filters", &filter_id)) != 0)
        return rc;
    n->replica = ao.replica;
    ao.gens = ao.replica ? NULL : n->gens;
    ao.data_dir = n->dir;
    ao.upload_account = upload_id;
    ao.filter_account = filter_id;
    if (ao.poll_ms == 0) ao.poll_ms = ao.replica ? 2000 : 250;
    if ((rc = tide_archive_open(&n->archive, &ao)) != 0)
        return tide_err_prefix(rc, "node: the archive (pool %s, prefix %s)", ao.pool ? ao.pool : "tide",
                               ao.prefix ? ao.prefix : "?");
    return 0;
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
    if (o->generations != 0 && (o->generations < TIDE_GEN_MIN || o->generations > TIDE_GEN_MAX))
        return tide_err_set(TIDE_EINVAL, "node: generations %u is outside %d..%d (0: the manifest's)", o->generations,
                            TIDE_GEN_MIN, TIDE_GEN_MAX);
    if (o->delete_batch == 0) return tide_err_set(TIDE_EINVAL, "node: delete_batch must be at least 1");
    return 0;
}

/* Free what open made, the store closed first when it is open. Returns the
 * store's close error. The sweeper must be stopped. */
static int node_free(tide_node *n)
{
    int rc;

    ti_node_governor_stop(n);
    ti_node_rotator_stop(n);
    ti_node_count_stop(n);
    tide_archive_close(n->archive);     /* its thread reads the generations */
    rc = n->gens ? tide_gens_close(n->gens) : 0;

    ti_node_governor_destroy(n);
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

    rc = open_gens(n);
    if (rc) goto out;
    tide_gens_store_info(n->gens, &info);
    n->key_size = tide_gens_key_size(n->gens);
    n->rot_failures_seen = info.commit_failures;

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
    co.clock_us = n->opts.hooks.clock_us;
    co.clock_arg = n->opts.hooks.clock_arg;
    co.account_bytes = tide_mem_account_counter(TIDE_MEM_NODE_CACHE);
    co.account_id = TIDE_MEM_NODE_CACHE;
    co.arena = n->opts.cache_arena;
    co.arena_segment_bytes = n->opts.cache_arena_segment;
    co.arena_reserve = n->opts.cache_arena_reserve;
    co.arena_hugepages = n->opts.cache_arena_hugepages;
    rc = tide_cache_create(&n->cache, &co);
    if (rc) goto out;

    tide_keycache_opts_init(&ko);
    ko.key_size = n->key_size;
    ko.target_size = n->opts.key_cache_size;
    ko.age_s = n->opts.key_cache_age_s;
    ko.hard_limit_bytes = n->opts.key_cache_hard_limit ? n->opts.key_cache_hard_limit
                        : n->opts.key_cache_size ? 32 * (size_t)MiB : 0;
    ko.clock_us = n->opts.hooks.clock_us;
    ko.clock_arg = n->opts.hooks.clock_arg;
    ko.account_bytes = tide_mem_account_counter(TIDE_MEM_KEY_CACHE);
    ko.account_id = TIDE_MEM_KEY_CACHE;
    ko.arena = n->opts.cache_arena;
    ko.arena_segment_bytes = KEY_ARENA_SEGMENT;
    rc = tide_keycache_create(&n->keycache, &ko);
    if (rc) goto out;
    rc = ti_node_governor_init(n);
    if (rc) goto out;
    if (n->opts.archive_on && (rc = open_archive(n)) != 0) goto out;

    ti_node_count_start(n, info.dat_file_bytes, info.inserts);

    if (n->opts.online_delete_on && n->opts.rotate_check_ms > 0 && tide_gens_enabled(n->gens)) {
        int e = ti_node_rotator_start(n);
        if (e) { rc = tide_err_sys(e, "node: starting the rotator thread"); goto out; }
    }
    /* The governor before the sweeper: node_free stops the governor (its
     * looks run rounds) but not the sweeper, so nothing may fail after
     * the sweeper starts. */
    /* next_due_ns before the governor starts: its rounds read and write it
     * under state_lock, and this assignment takes none. */
    n->next_due_ns = tide_clock_mono_ns() + n->opts.sweep_interval_ms * 1000000u;
    {
        int e = ti_node_governor_start(n);
        if (e) { rc = tide_err_sys(e, "node: starting the memory governor thread"); goto out; }
    }
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
    ti_node_governor_stop(n);     /* first: its looks run sweep rounds */
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

/* What a cache hit on `obj` may serve, by its generation tag (node.h,
 * online delete): 0, serve it (copied forward first when its generation
 * is older than the newest, so it lives on); 1, its generation was
 * dropped: the object is gone and the copy must be forgotten. A plain
 * store has every id 0, so every hit serves. A failed copy-forward serves
 * the object anyway (it is still in a kept generation; the store logged
 * and counted the failure). */
static int cached_state(tide_node *n, const void *key, tide_cache_obj *obj)
{
    uint64_t tag = tide_cache_obj_gen(obj), now = 0;
    int rc;

    if (tag < tide_gens_oldest_id(n->gens)) return 1;
    if (tag >= tide_gens_newest_id(n->gens)) return 0;
    rc = tide_gens_touch(n->gens, key, tide_cache_obj_data(obj), tide_cache_obj_len(obj), tag, &now);
    if (rc == TIDE_ENOTFOUND) return 1;
    if (rc == 0) tide_cache_obj_set_gen(obj, now);
    return 0;
}

/* 1 when the cached `obj` of `key` may be served (cached_state); else 0,
 * with its reference released and the copy of a dropped generation
 * forgotten. */
static int servable(tide_node *n, const void *key, tide_cache_obj *obj)
{
    if (cached_state(n, key, obj) == 0) return 1;
    tide_cache_obj_release(obj);
    (void)tide_cache_erase(n->cache, key);
    atomic_fetch_add(&n->cache_dropped, 1);
    return 0;
}

/* A cache hit on `key`: 1 with *out the object to serve, 0 when the cache
 * has nothing servable. */
static int cache_hit(tide_node *n, const void *key, tide_cache_obj **out)
{
    tide_cache_obj *obj = tide_cache_lookup(n->cache, key);

    *out = NULL;
    if (obj == NULL || !servable(n, key, obj)) return 0;
    *out = obj;
    return 1;
}

int tide_node_put_admit(tide_node *n)
{
    if (tide_node_overload_level(n) < TIDE_OVERLOAD_HIGH) return 0;
    atomic_fetch_add(&n->mem_rejected, 1);
    return tide_err_set(TIDE_EOVERLOAD, "node: the memory level is %s: writes are refused until it falls "
                        "below high's leave mark", tide_mem_overload_level_name(tide_node_overload_level(n)));
}

int tide_node_put(tide_node *n, const void *key, const void *value, size_t len)
{
    tide_cache_obj *obj = NULL, *have;
    uint64_t gen = 0;
    int rc;

    /* At HIGH and above new writes are refused before they touch
     * anything (governor.c); what is stored stays stored. */
    rc = tide_node_put_admit(n);
    if (rc) goto out;
    if (n->replica) {
        rc = tide_err_set(TIDE_EROFS, "this node is an archive replica (archive_mode=replica): it "
                          "takes no writes; send them to the prefix's primary");
        goto out;
    }
    if (cache_hit(n, key, &have)) {
        tide_cache_obj_release(have);
        atomic_fetch_add(&n->puts_existing, 1);
        rc = TIDE_EEXIST;
        goto out;
    }
    rc = tide_gens_insert(n->gens, key, value, len, &gen);
    if (rc == TIDE_EEXIST) {
        /* Invariant 4: the store holds the key, so a remembered miss of it
         * (one a failed rotation's hide window left) is false. */
        atomic_fetch_add(&n->puts_existing, 1);
        tide_keycache_erase(n->keycache, key);
    }
    if (rc) goto out;
    atomic_fetch_add(&n->put_gen, 1);
    tide_keycache_erase(n->keycache, key);
    atomic_fetch_add(&n->puts, 1);
    /* The value is stored; failing to cache it only costs a later read. */
    if (tide_cache_obj_make(n->cache, &obj, value, len) == 0) {
        tide_cache_obj_set_gen(obj, gen);
        (void)tide_cache_insert(n->cache, key, obj);
    }
out:
    tide_cache_obj_release(obj);
    return rc;
}

int tide_node_get_cached(tide_node *n, const void *key, tide_cache_obj **out)
{
    tide_cache_obj *obj = tide_cache_lookup(n->cache, key);

    *out = NULL;
    if (obj != NULL) {
        /* Only a copy in the newest generation is served without I/O: an
         * older one is copied forward (a store insert) or dropped by
         * cached_state, which is tide_node_get_miss's to do. */
        if (tide_cache_obj_gen(obj) >= tide_gens_newest_id(n->gens)) {
            atomic_fetch_add(&n->gets, 1);
            atomic_fetch_add(&n->gets_cache, 1);
            *out = obj;
            return 0;
        }
        *out = obj;
        return TIDE_NODE_GET_STALE;
    }
    /* A generation the archive sealed since may hold a key remembered as
     * missing (a replica learns of new objects only so). */
    if (n->archive) {
        uint64_t sealed = tide_archive_seal_epoch(n->archive);
        if (atomic_exchange(&n->keycache_seal_epoch, sealed) != sealed) tide_keycache_clear(n->keycache);
    }
    if (tide_keycache_contains(n->keycache, key)) {
        atomic_fetch_add(&n->gets, 1);
        atomic_fetch_add(&n->gets_keycache, 1);
        atomic_fetch_add(&n->gets_missing, 1);
        return TIDE_ENOTFOUND;
    }
    return TIDE_NODE_GET_MISS;
}

/*
 * A miss of every local generation, asked of the archive: the sealed
 * generations the node no longer holds (a replica: all of them), newest
 * first. A primary copies what it finds into the newest generation, as a
 * read of an older local one does, so the object lives on locally; a
 * replica writes nothing. TIDE_EUNAVAIL is passed up (the caller answers
 * "try again"), never remembered as a miss.
 */
static int get_from_archive(tide_node *n, const void *key, void **buf, size_t *len, uint64_t *where)
{
    uint64_t below = n->replica ? 0 : tide_gens_oldest_id(n->gens), found = 0;
    int rc = tide_archive_fetch(n->archive, below, key, n->key_size, buf, len, &found);

    if (rc == TIDE_EUNAVAIL) atomic_fetch_add(&n->gets_unavailable, 1);
    if (rc) return rc;
    atomic_fetch_add(&n->gets_archive, 1);
    *where = tide_gens_newest_id(n->gens);
    if (!n->replica) {
        int irc = tide_gens_insert(n->gens, key, *buf, *len, where);
        if (irc && irc != TIDE_EEXIST)
            tide_log(TIDE_LOG_WARN, "a value read from the archive's generation %" PRIu64 " was not "
                     "copied into the newest: %s", found, tide_last_error());
    }
    return 0;
}

/* The store's half of a get: fetch, then remember a miss in the key cache
 * (forgotten again when a put, a rotation or a new seal in the archive
 * raced it) or the value in the node cache. */
static int get_from_store(tide_node *n, const void *key, tide_cache_obj **out)
{
    tide_cache_obj *obj = NULL;
    void *buf = NULL;
    size_t len = 0;
    uint64_t gen, epoch, sealed, where = 0;
    int rc;

    gen = atomic_load(&n->put_gen);
    epoch = tide_gens_read_epoch(n->gens);
    sealed = n->archive ? tide_archive_seal_epoch(n->archive) : 0;
    rc = tide_gens_fetch(n->gens, key, &buf, &len, &where);
    if (rc == TIDE_ENOTFOUND && n->archive) rc = get_from_archive(n, key, &buf, &len, &where);
    if (rc == TIDE_ENOTFOUND) {
        atomic_fetch_add(&n->gets_missing, 1);
        (void)tide_keycache_insert(n->keycache, key);
        if (atomic_load(&n->put_gen) != gen || tide_gens_read_epoch(n->gens) != epoch ||
            (n->archive && tide_archive_seal_epoch(n->archive) != sealed))
            tide_keycache_erase(n->keycache, key);
        goto out;
    }
    if (rc) goto out;
    atomic_fetch_add(&n->gets_store, 1);
    rc = tide_cache_obj_make(n->cache, &obj, buf, len);
    if (rc) goto out;
    tide_cache_obj_set_gen(obj, where);
    (void)tide_cache_insert(n->cache, key, obj);
out:
    free(buf);
    *out = obj;
    return rc;
}

int tide_node_get_miss(tide_node *n, const void *key, tide_cache_obj *stale, tide_cache_obj **out)
{
    *out = NULL;
    atomic_fetch_add(&n->gets, 1);
    if (stale != NULL && servable(n, key, stale)) {
        atomic_fetch_add(&n->gets_cache, 1);
        *out = stale;
        return 0;
    }
    return get_from_store(n, key, out);
}

int tide_node_get(tide_node *n, const void *key, tide_cache_obj **out)
{
    tide_cache_obj *obj = NULL;
    int rc = tide_node_get_cached(n, key, &obj);

    if (rc == 0 || rc == TIDE_ENOTFOUND) {
        *out = obj;
        return rc;
    }
    return tide_node_get_miss(n, key, rc == TIDE_NODE_GET_STALE ? obj : NULL, out);
}

int tide_node_sync(tide_node *n)
{
    tide_gens_info gi;
    int rc = tide_gens_sync(n->gens);

    if (rc || !n->archive || !n->opts.archive_sync || n->replica) return rc;
    /* Everything durable now must be in the archive too: every local
     * generation up to its durable size (sealed ones hold all of theirs). */
    atomic_fetch_add(&n->archive_sync_waits, 1);
    tide_archive_kick(n->archive);
    tide_gens_get_info(n->gens, &gi);
    for (unsigned i = 0; i < gi.count && rc == 0; i++)
        rc = tide_archive_wait(n->archive, gi.gens[i].id, gi.gens[i].dat_durable,
                               (n->opts.archive.timeout_s ? n->opts.archive.timeout_s : 10) * 1000u);
    if (rc) atomic_fetch_add(&n->archive_sync_failures, 1);
    return rc;
}

tide_archive *tide_node_archive(tide_node *n) { return n->archive; }

uint64_t tide_node_archive_sync_waits(tide_node *n, int failed)
{
    return failed ? atomic_load(&n->archive_sync_failures) : atomic_load(&n->archive_sync_waits);
}

void tide_node_cache_stats(tide_node *n, tide_cache_stats *out) { tide_cache_stats_get(n->cache, out); }

int tide_node_key_cache_arena_stats(tide_node *n, tide_arena_stats *out)
{
    return tide_keycache_arena_stats(n->keycache, out);
}

int tide_node_cache_arena_stats(tide_node *n, tide_arena_stats *out)
{
    return tide_cache_arena_stats(n->cache, out);
}

void tide_node_keycache_stats(tide_node *n, tide_keycache_stats *out)
{
    tide_keycache_stats_get(n->keycache, out);
}

void tide_node_store_info(tide_node *n, tide_store_info *out) { ti_node_refresh_store_accounts(n, out); }

int tide_node_key_map_resident(tide_node *n, uint64_t *bytes)
{
    *bytes = 0;
    return n->gens ? tide_gens_key_map_resident(n->gens, bytes) : 0;
}

int tide_node_dat_map_resident(tide_node *n, uint64_t *bytes)
{
    *bytes = 0;
    return n->gens ? tide_gens_dat_map_resident(n->gens, bytes) : 0;
}
