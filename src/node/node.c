/*
 * node.c: the store, the node cache and the key cache under one handle, and
 * the sweeper thread that bounds the caches and hands freed memory back.
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
 * The sweeper is one thread. A round is, always in this order: sweep the
 * node cache, sweep the key cache, make at most one release call
 * (tide_mem_trim, when opts.trim is set and opts.trim_policy calls for it:
 * always, every N-th round, after a sweep that freed enough, or when the
 * allocator holds enough free), record the report, log the trim line at
 * debug.
 * The next round is due sweep_interval_ms after the end of the last one,
 * whoever ran it (tide_node_sweep runs a round on its caller's thread). The
 * interval counts from the end so that a slow trim on a big heap cannot make
 * rounds pile up back to back.
 *
 * Invariants:
 *   1. Rounds never overlap (round_lock), and each makes at most one release
 *      call, after both cache sweeps.
 *   2. reports[] holds the last min(seq, TIDE_NODE_REPORTS) rounds;
 *      reports[(seq - 1) % TIDE_NODE_REPORTS] is round seq.
 *   3. totals.sweeps == seq of the last recorded round.
 *   4. next_due_ns is set only at the end of a round (and at open).
 *   5. seq is written only under both round_lock and state_lock, so a
 *      thread holding either may read it.
 *
 * The key count (tide_node_keys): NuDB keeps no count of its keys. At open
 * a thread of its own walks nudb.dat up to the size it had at open, without
 * a lock (that prefix is never rewritten: the file is only appended to),
 * counting data records, one per key; the store's inserts since open are
 * added when asked. Close stops the walk and joins the thread.
 *
 * Never: hold state_lock across a cache sweep or a release (readers of the
 * reports must not wait for a trim); release memory anywhere but in a round.
 */
#include "node/node.h"
#include "node/config.h"            /* TIDE_CONFIG_BYTES_MAX */

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
#include "store/store_impl.h"   /* ti_store_walk */
#include "mem/alloc.h"
#include "mem/proc.h"
#include "util/size.h"   /* tide_size_parse */
#include "util/assert.h"
#include "util/err.h"
#include "util/log.h"

#define MiB (1024u * 1024u)

struct tide_node {
    tide_node_opts  opts;
    char           *dir;
    tide_store     *store;
    tide_cache     *cache;
    tide_keycache  *keycache;
    unsigned        key_size;

    _Atomic uint64_t put_gen;

    /* the key count (tide_node_keys) */
    pthread_t        count_thread;
    int              count_started;
    _Atomic int      count_stop;         /* close asks the count to stop */
    _Atomic int      keys_known;
    uint64_t         count_limit;        /* nudb.dat size at open */
    uint64_t         count_inserts0;     /* the store's inserts at open */
    _Atomic uint64_t keys_at_open;

    /* counters of the read and write paths */
    _Atomic uint64_t puts, puts_existing, gets, gets_cache, gets_keycache, gets_store,
                     gets_missing;

    pthread_mutex_t round_lock;   /* one round at a time */
    pthread_mutex_t state_lock;   /* reports, totals, schedule, stop */
    pthread_cond_t  state_cond;   /* CLOCK_MONOTONIC */
    int             stop;
    int             thread_started;
    pthread_t       thread;
    uint64_t        next_due_ns;  /* monotonic */
    uint64_t        seq;
    tide_node_totals totals;      /* the sweep half; the get/put half is atomic */
    tide_hist       sweep_hist, trim_hist;  /* under state_lock */
    tide_node_sweep_report reports[TIDE_NODE_REPORTS];
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t unix_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

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

static void *sweeper_main(void *arg);

/* ---- the key count ----------------------------------------------------------- */

typedef struct key_count { tide_node *n; uint64_t records; } key_count;

static int count_record(void *arg, uint64_t offset, const void *key, unsigned key_size, const void *value,
                        uint64_t len)
{
    key_count *kc = arg;
    (void)key, (void)key_size, (void)value, (void)len;
    if (atomic_load(&kc->n->count_stop)) return 1;
    if (offset >= kc->n->count_limit) return 2;     /* appended after open: counted as inserts */
    kc->records++;
    return 0;
}

/* Records below the size nudb.dat had at open never change (the file is
 * only appended to), so the walk needs no lock and races with nothing. */
static void *count_main(void *arg)
{
    tide_node *n = arg;
    key_count kc = { n, 0 };
    int rc = ti_store_walk(n->dir, n->opts.io, count_record, NULL, &kc, NULL);

    if (rc == 0 || rc == 2) {
        atomic_store(&n->keys_at_open, kc.records);
        atomic_store(&n->keys_known, 1);
        tide_log(TIDE_LOG_INFO, "%s: %" PRIu64 " keys in the store at open", n->dir, kc.records);
    } else if (rc != 1) {
        tide_log(TIDE_LOG_WARN, "%s: counting the keys failed (%s: %s); tide_store_keys stays unknown",
                 n->dir, tide_strerror(rc), tide_last_error());
    }
    return NULL;
}

int tide_node_keys(tide_node *n, uint64_t *keys)
{
    tide_store_info info;

    if (!atomic_load(&n->keys_known)) return 0;
    tide_store_get_info(n->store, &info);
    *keys = atomic_load(&n->keys_at_open) + (info.inserts - n->count_inserts0);
    return 1;
}

/* Free what open made, the store closed first when it is open. Returns the
 * store's close error. The sweeper must be stopped. */
static int node_free(tide_node *n)
{
    int rc;

    atomic_store(&n->count_stop, 1);
    if (n->count_started) pthread_join(n->count_thread, NULL);
    rc = n->store ? tide_store_close(n->store) : 0;

    tide_keycache_destroy(n->keycache);
    tide_cache_destroy(n->cache);
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

    n->count_limit = info.dat_file_bytes;
    n->count_inserts0 = info.inserts;
    if (n->opts.count_keys_max_bytes && info.dat_file_bytes <= n->opts.count_keys_max_bytes) {
        if (pthread_create(&n->count_thread, NULL, count_main, n) == 0) n->count_started = 1;
    } else if (n->opts.count_keys_max_bytes) {
        tide_log(TIDE_LOG_INFO, "%s: nudb.dat is over %" PRIu64 " bytes: the key count is not made "
                 "(tide_store_keys stays unknown)", n->dir, n->opts.count_keys_max_bytes);
    }

    n->next_due_ns = mono_ns() + n->opts.sweep_interval_ms * 1000000u;
    if (n->opts.sweep_interval_ms > 0) {
        int e = pthread_create(&n->thread, NULL, sweeper_main, n);
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

/* ---- the sweeper ----------------------------------------------------------------- */

static void trace(tide_node *n, const char *step)
{
    if (n->opts.trace) n->opts.trace(n->opts.trace_arg, step);
}

static void refresh_store_accounts(tide_node *n, tide_store_info *info)
{
    tide_store_get_info(n->store, info);
    tide_mem_account_set(TIDE_MEM_STORE_INSERT_POOL, (int64_t)info->pool_bytes);
    tide_mem_account_set(TIDE_MEM_STORE_COMMIT, (int64_t)info->commit_buffer_bytes);
}

int tide_trim_policy_parse(const char *text, int *policy, uint64_t *param)
{
    const char *colon = strchr(text, ':');
    char *end;
    uint64_t v = 0;

    *param = 0;
    if (strcmp(text, "always") == 0) { *policy = TIDE_TRIM_ALWAYS; return 0; }
    if (strcmp(text, "never") == 0) { *policy = TIDE_TRIM_NEVER; return 0; }
    if (colon == NULL || colon[1] == '\0')
        return tide_err_set(TIDE_EINVAL, "not a trim policy (always, never, every:N, freed:SIZE or free-pct:P)");
    if (strncmp(text, "freed:", 6) == 0) {
        if (tide_size_parse(colon + 1, &v) != 0 || v == 0)
            return tide_err_set(TIDE_EINVAL, "freed:SIZE needs a size above 0, e.g. freed:64MiB");
        if (v > TIDE_CONFIG_BYTES_MAX)
            return tide_err_set(TIDE_EINVAL, "freed:%" PRIu64 " is above freed:4PiB (%" PRIu64 " bytes), "
                                "more than any machine's memory", v, TIDE_CONFIG_BYTES_MAX);
        *policy = TIDE_TRIM_FREED;
    } else {
        errno = 0;
        v = strtoull(colon + 1, &end, 10);
        if (errno || *end != '\0' || colon[1] < '0' || colon[1] > '9')
            return tide_err_set(TIDE_EINVAL, "'%s' is not a whole number", colon + 1);
        if (strncmp(text, "every:", 6) == 0) {
            if (v < 1 || v > TIDE_TRIM_EVERY_MAX)
                return tide_err_set(TIDE_EINVAL, "every:N needs N from 1 to %u", TIDE_TRIM_EVERY_MAX);
            *policy = TIDE_TRIM_EVERY;
        } else if (strncmp(text, "free-pct:", 9) == 0) {
            if (v < 1 || v > TIDE_TRIM_FREE_PCT_MAX)
                return tide_err_set(TIDE_EINVAL, "free-pct:P needs P from 1 to %u", TIDE_TRIM_FREE_PCT_MAX);
            *policy = TIDE_TRIM_FREE_PCT;
        } else {
            return tide_err_set(TIDE_EINVAL, "not a trim policy (always, never, every:N, freed:SIZE or free-pct:P)");
        }
    }
    *param = v;
    return 0;
}

void tide_trim_policy_format(int policy, uint64_t param, char *buf, size_t cap)
{
    static const char *const unit[] = { "", "KiB", "MiB", "GiB", "TiB" };
    uint64_t v = param;
    int u = 0;

    while (v != 0 && v % 1024 == 0 && u < 4) v /= 1024, u++;
    switch (policy) {
    case TIDE_TRIM_NEVER:    snprintf(buf, cap, "never"); break;
    case TIDE_TRIM_EVERY:    snprintf(buf, cap, "every:%" PRIu64, param); break;
    case TIDE_TRIM_FREED:    snprintf(buf, cap, "freed:%" PRIu64 "%s", v, unit[u]); break;
    case TIDE_TRIM_FREE_PCT: snprintf(buf, cap, "free-pct:%" PRIu64, param); break;
    default:                 snprintf(buf, cap, "always"); break;
    }
}

/* Whether this round's sweep calls for a release, by the policy. seq is the
 * round's number (1-based); called under round_lock. */
static int policy_wants_trim(tide_node *n, uint64_t seq, uint64_t freed)
{
    tide_mem_alloc_stats st;
    uint64_t rss = 0, free_bytes = 0;
    int family;

    if (!n->opts.trim) return 0;
    switch (n->opts.trim_policy) {
    case TIDE_TRIM_NEVER: return 0;
    case TIDE_TRIM_EVERY: return n->opts.trim_param <= 1 || seq % n->opts.trim_param == 0;
    case TIDE_TRIM_FREED: return freed >= n->opts.trim_param;
    case TIDE_TRIM_FREE_PCT:
        family = tide_mem_alloc_family();
        if (tide_mem_alloc_stats_read(family, &st) != 0 || tide_mem_proc_statm_rss(&rss) != 0 || rss == 0)
            return 1;   /* cannot tell: trim, as the default does */
        if (family == TIDE_MEM_ALLOC_GLIBC) free_bytes = st.glibc.free;
        else if (family == TIDE_MEM_ALLOC_JEMALLOC) free_bytes = st.jemalloc.dirty + st.jemalloc.muzzy;
        else if (family == TIDE_MEM_ALLOC_TCMALLOC) free_bytes = st.tcmalloc.pageheap_free;
        else return 1;
        return free_bytes * 100 > rss * n->opts.trim_param;
    default: return 1;
    }
}

static void run_round(tide_node *n, tide_node_sweep_report *out)
{
    tide_node_sweep_report r;
    tide_store_info info;
    uint64_t t0;

    pthread_mutex_lock(&n->round_lock);
    memset(&r, 0, sizeof r);
    r.started_unix_us = unix_us();
    t0 = mono_ns();
    trace(n, "sweep node_cache");
    tide_cache_sweep(n->cache, &r.node_cache);
    trace(n, "sweep key_cache");
    tide_keycache_sweep(n->keycache, &r.key_cache);
    r.sweep_ns = mono_ns() - t0;
    refresh_store_accounts(n, &info);
    r.freed_bytes = (r.node_cache.bytes_before > r.node_cache.bytes_after
                     ? r.node_cache.bytes_before - r.node_cache.bytes_after : 0)
                  + (r.key_cache.bytes_before > r.key_cache.bytes_after
                     ? r.key_cache.bytes_before - r.key_cache.bytes_after : 0);
    /* seq changes only at the end of a round, under round_lock, which this
     * thread holds: it can be read here without state_lock. */
    if (policy_wants_trim(n, n->seq + 1, r.freed_bytes)) {
        trace(n, "release");
        r.trim_rc = n->opts.release ? n->opts.release(n->opts.release_arg, &r.trim)
                                    : tide_mem_trim(&r.trim);
        r.trimmed = 1;
    }

    pthread_mutex_lock(&n->state_lock);
    r.seq = ++n->seq;
    n->reports[(r.seq - 1) % TIDE_NODE_REPORTS] = r;
    n->totals.sweeps = r.seq;
    n->totals.sweep_ns += r.sweep_ns;
    tide_hist_observe(&n->sweep_hist, r.sweep_ns);
    if (!r.trimmed && n->opts.trim) n->totals.trims_skipped++;
    if (r.trimmed) {
        tide_hist_observe(&n->trim_hist, r.trim.duration_ns);
        n->totals.last_trim_rss_delta = r.trim.rss_delta;
        n->totals.trims++;
        n->totals.trim_ns += r.trim.duration_ns;
        n->totals.trim_minflt += r.trim.minflt;
        n->totals.trim_majflt += r.trim.majflt;
        if (r.trim.rss_delta < 0) {
            n->totals.trims_lowered++;
            n->totals.trim_released_bytes += (uint64_t)-r.trim.rss_delta;
        }
    }
    n->next_due_ns = mono_ns() + n->opts.sweep_interval_ms * 1000000u;
    pthread_cond_broadcast(&n->state_cond);
    pthread_mutex_unlock(&n->state_lock);
    trace(n, "done");
    pthread_mutex_unlock(&n->round_lock);

    if (r.trimmed && tide_log_get_level() <= TIDE_LOG_DEBUG) {
        char line[192];
        tide_mem_trim_format(&r.trim, line, sizeof line);
        tide_log(TIDE_LOG_DEBUG, "%s", line);
    }
    if (r.trimmed && r.trim_rc)
        tide_log(TIDE_LOG_WARN, "sweep %" PRIu64 ": the release call failed: %s", r.seq,
                 tide_strerror(r.trim_rc));
    if (out) *out = r;
}

static void *sweeper_main(void *arg)
{
    tide_node *n = arg;

    pthread_mutex_lock(&n->state_lock);
    while (!n->stop) {
        uint64_t now = mono_ns();
        if (now < n->next_due_ns) {
            struct timespec ts = { (time_t)(n->next_due_ns / 1000000000u),
                                   (long)(n->next_due_ns % 1000000000u) };
            pthread_cond_timedwait(&n->state_cond, &n->state_lock, &ts);
            continue;                     /* re-read stop and the due time */
        }
        pthread_mutex_unlock(&n->state_lock);
        run_round(n, NULL);
        pthread_mutex_lock(&n->state_lock);
    }
    pthread_mutex_unlock(&n->state_lock);
    return NULL;
}

void tide_node_sweep(tide_node *n, tide_node_sweep_report *r)
{
    run_round(n, r);
}

size_t tide_node_reports(tide_node *n, tide_node_sweep_report *out, size_t cap)
{
    size_t k = 0;

    pthread_mutex_lock(&n->state_lock);
    for (uint64_t s = n->seq; s > 0 && k < cap && k < TIDE_NODE_REPORTS; s--, k++)
        out[k] = n->reports[(s - 1) % TIDE_NODE_REPORTS];
    pthread_mutex_unlock(&n->state_lock);
    return k;
}

void tide_node_totals_get(tide_node *n, tide_node_totals *out)
{
    pthread_mutex_lock(&n->state_lock);
    *out = n->totals;
    TIDE_ASSERT(out->sweeps == n->seq);
    tide_hist_snapshot(&n->sweep_hist, &out->sweep_duration);
    tide_hist_snapshot(&n->trim_hist, &out->trim_duration);
    TIDE_ASSERT(out->sweep_duration.count == out->sweeps && out->trim_duration.count == out->trims);
    pthread_mutex_unlock(&n->state_lock);
    out->puts = atomic_load(&n->puts);
    out->puts_existing = atomic_load(&n->puts_existing);
    out->gets = atomic_load(&n->gets);
    out->gets_cache = atomic_load(&n->gets_cache);
    out->gets_keycache = atomic_load(&n->gets_keycache);
    out->gets_store = atomic_load(&n->gets_store);
    out->gets_missing = atomic_load(&n->gets_missing);
}

void tide_node_cache_stats(tide_node *n, tide_cache_stats *out) { tide_cache_stats_get(n->cache, out); }

void tide_node_keycache_stats(tide_node *n, tide_keycache_stats *out)
{
    tide_keycache_stats_get(n->keycache, out);
}

void tide_node_store_info(tide_node *n, tide_store_info *out) { refresh_store_accounts(n, out); }
