/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_model.c: the store against a model, under random operations.
 *
 * A seeded PRNG drives 20000 operations over five runs with different
 * block sizes (4096 to 32768), key sizes, load factors, commit intervals
 * and insert-pool bounds: insert of a new key, insert of a present key
 * (must be TIDE_EEXIST and change nothing), fetch of a present key (exact
 * value; tide_store_contains 1), fetch of an absent key (TIDE_ENOTFOUND;
 * contains 0), sync, a pause of one
 * commit interval, and close + reopen. Every
 * answer is checked against an in-memory model: a hash map from key to
 * (length, seed), the value being stream(seed, length) from helpers.h.
 *
 * At the end of each run every model key is fetched once more, the store
 * is closed, and tide_store_visit_io must find in nudb.dat exactly the model's
 * records: each key once, with its exact value, and nothing else. Then
 * tide_store_verify_io must pass (every bucket well formed, every entry
 * reaching its record, every record reached once) and count the model's
 * keys and value bytes.
 *
 * The seed comes from TIDE_TEST_SEED (decimal or 0x hex) or a fixed
 * default; it is printed at the start and in every failure message, so
 * `TIDE_TEST_SEED=<seed> build/tests/test_store_model` repeats a failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "store/full.h"
#include "util/clock.h"
#include "helpers.h"

#define DEFAULT_SEED 0x5eed7 /* TIDE_TEST_SEED overrides */
#define MAX_KEY      32
#define MAX_VALUE    3000
#define SLOTS        (1u << 16)   /* model hash table; load stays below 1/8 */
#define MAX_ENTRIES  (SLOTS / 8)

static uint64_t g_seed;

/* ---- the model ---- */

typedef struct mentry {
    uint8_t  key[MAX_KEY];
    uint32_t len;
    uint64_t vseed;
    int      seen;          /* by the final visit */
} mentry;

typedef struct model {
    unsigned key_size;
    mentry  *e;             /* MAX_ENTRIES */
    uint32_t n;
    uint32_t *slot;         /* SLOTS; 0 empty, else index + 1 */
    uint64_t value_bytes;
} model;

static uint64_t key_hash(const uint8_t *k, unsigned ks)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (unsigned i = 0; i < ks; i++) h = (h ^ k[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static mentry *model_find(const model *m, const uint8_t *k)
{
    uint32_t i = (uint32_t)key_hash(k, m->key_size) & (SLOTS - 1);

    for (;; i = (i + 1) & (SLOTS - 1)) {
        uint32_t s = m->slot[i];
        if (s == 0) return NULL;
        if (memcmp(m->e[s - 1].key, k, m->key_size) == 0) return &m->e[s - 1];
    }
}

static void model_add(model *m, const uint8_t *k, uint32_t len, uint64_t vseed)
{
    uint32_t i = (uint32_t)key_hash(k, m->key_size) & (SLOTS - 1);
    mentry *e = &m->e[m->n];

    while (m->slot[i] != 0) i = (i + 1) & (SLOTS - 1);
    memcpy(e->key, k, m->key_size);
    e->len = len;
    e->vseed = vseed;
    e->seen = 0;
    m->slot[i] = ++m->n;
    m->value_bytes += len;
}

/* ---- one run ---- */

typedef struct config {
    unsigned block_size, key_size;
    double   load_factor;
    unsigned commit_interval_ms;
    size_t   burst_bytes;      /* 0: the default */
    int      ops;
} config;

typedef struct run {
    const config *c;
    int      iter;
    char     dir[4096];
    tide_store *s;
    model    m;
    th_rng   r;
    uint8_t  val[MAX_VALUE], got_scratch[MAX_VALUE];
    int      op;
    uint64_t n_insert, n_dup, n_hit, n_miss, n_sync, n_reopen;
    char     visit_err[512];
} run;

#define FAIL(R, fmt, ...) \
    fail_msg("seed %llu run %d (block %u, key %u) op %d: " fmt, (unsigned long long)g_seed, \
             (R)->iter, (R)->c->block_size, (R)->c->key_size, (R)->op, ##__VA_ARGS__)

static int setup(void **state)
{
    run *r = calloc(1, sizeof *r);

    if (r == NULL) return -1;
    r->m.e = calloc(MAX_ENTRIES, sizeof *r->m.e);
    r->m.slot = calloc(SLOTS, sizeof *r->m.slot);
    if (r->m.e == NULL || r->m.slot == NULL) return -1;
    *state = r;
    return 0;
}

static int teardown(void **state)
{
    run *r = *state;

    if (r == NULL) return 0;
    if (r->s) tide_store_close(r->s);
    if (r->dir[0]) th_rmrf(r->dir);
    free(r->m.e);
    free(r->m.slot);
    free(r);
    return 0;
}

static void open_run(run *r)
{
    tide_store_opts o;
    tide_store_info info;
    int rc;

    th_store_opts(&o);
    o.commit_interval_ms = r->c->commit_interval_ms;
    /* The configured pool bound, or now and then a small one. */
    if (r->c->burst_bytes) o.burst_bytes = r->c->burst_bytes;
    else if (th_rng_below(&r->r, 4) == 0) o.burst_bytes = 64 << 10;
    rc = tide_store_open(&r->s, r->dir, &o);
    if (rc != 0) {
        r->s = NULL;
        FAIL(r, "open of %s: expected 0, got %d %s: %s", r->dir, rc, tide_strerror(rc),
             tide_last_error());
    }
    tide_store_get_info(r->s, &info);
    if (info.block_size != r->c->block_size || info.key_size != r->c->key_size)
        FAIL(r, "after open: expected block %u key %u, got block %u key %u", r->c->block_size,
             r->c->key_size, info.block_size, info.key_size);
}

static void close_run(run *r)
{
    int rc = tide_store_close(r->s);

    r->s = NULL;
    if (rc != 0)
        FAIL(r, "close: expected 0, got %d %s: %s", rc, tide_strerror(rc), tide_last_error());
}

static void check_value(run *r, const mentry *e, const char *what)
{
    void *got = NULL;
    size_t glen = 0;
    int rc;

    th_stream(e->vseed, r->val, e->len);
    rc = tide_store_fetch(r->s, e->key, &got, &glen);
    if (rc != 0)
        FAIL(r, "%s: fetch of model key #%ld: expected its %u-byte value, got %d %s: %s", what,
             (long)(e - r->m.e), e->len, rc, tide_strerror(rc), tide_last_error());
    if (glen != e->len || memcmp(got, r->val, e->len) != 0) {
        size_t at = 0;
        while (at < glen && at < e->len && ((uint8_t *)got)[at] == r->val[at]) at++;
        free(got);
        FAIL(r, "%s: fetch of model key #%ld: expected %u bytes, got %zu bytes differing from byte %zu",
             what, (long)(e - r->m.e), e->len, glen, at);
    }
    free(got);
}

static void random_absent_key(run *r, uint8_t *k)
{
    do th_rng_bytes(&r->r, k, r->c->key_size); while (model_find(&r->m, k) != NULL);
}

static uint32_t random_len(run *r)
{
    uint64_t p = th_rng_below(&r->r, 100);

    if (p < 5) return 1;
    if (p < 10) return MAX_VALUE;
    if (p < 60) return (uint32_t)th_rng_range(&r->r, 1, 200);
    return (uint32_t)th_rng_range(&r->r, 1, MAX_VALUE);
}

static void op_insert_new(run *r)
{
    uint8_t k[MAX_KEY];
    uint32_t len = random_len(r);
    uint64_t vseed = th_rng_next(&r->r);
    int rc;

    if (r->m.n >= MAX_ENTRIES) return;
    random_absent_key(r, k);
    th_stream(vseed, r->val, len);
    rc = tide_store_insert(r->s, k, r->val, len);
    if (rc != 0)
        FAIL(r, "insert of new key #%u (%u bytes): expected 0, got %d %s: %s", r->m.n, len, rc,
             tide_strerror(rc), tide_last_error());
    model_add(&r->m, k, len, vseed);
    r->n_insert++;
    /* Visible at once. */
    if (th_rng_below(&r->r, 4) == 0) check_value(r, &r->m.e[r->m.n - 1], "right after insert");
}

static void op_insert_duplicate(run *r)
{
    mentry *e;
    uint32_t len = random_len(r);
    int rc;

    if (r->m.n == 0) return;
    e = &r->m.e[th_rng_below(&r->r, r->m.n)];
    th_stream(th_rng_next(&r->r), r->val, len);
    rc = tide_store_insert(r->s, e->key, r->val, len);
    if (rc != TIDE_EEXIST)
        FAIL(r, "insert of present model key #%ld with another value: expected TIDE_EEXIST (%d), "
             "got %d %s", (long)(e - r->m.e), TIDE_EEXIST, rc, tide_strerror(rc));
    check_value(r, e, "after a refused duplicate insert");
    r->n_dup++;
}

static void op_fetch_present(run *r)
{
    if (r->m.n == 0) return;
    const mentry *e = &r->m.e[th_rng_below(&r->r, r->m.n)];
    check_value(r, e, "fetch of a present key");
    int rc = tide_store_contains(r->s, e->key);
    if (rc != 1)
        FAIL(r, "contains of model key #%ld (pending or durable): expected 1, got %d %s",
             (long)(e - r->m.e), rc, rc < 0 ? tide_strerror(rc) : "");
    r->n_hit++;
}

static void op_fetch_absent(run *r)
{
    uint8_t k[MAX_KEY];
    void *got = NULL;
    size_t glen = 0;
    int rc;

    random_absent_key(r, k);
    rc = tide_store_fetch(r->s, k, &got, &glen);
    if (rc != TIDE_ENOTFOUND) {
        if (rc == 0) free(got);
        FAIL(r, "fetch of an absent key: expected TIDE_ENOTFOUND (%d), got %d %s", TIDE_ENOTFOUND,
             rc, rc == 0 ? "with a value" : tide_strerror(rc));
    }
    rc = tide_store_contains(r->s, k);
    if (rc != 0)
        FAIL(r, "contains of an absent key: expected 0, got %d %s", rc, rc < 0 ? tide_strerror(rc) : "");
    r->n_miss++;
}

static void op_sync(run *r)
{
    int rc = tide_store_sync(r->s);

    if (rc != 0)
        FAIL(r, "sync: expected 0, got %d %s: %s", rc, tide_strerror(rc), tide_last_error());
    r->n_sync++;
}

/* Let the commit thread's interval pass, so pending inserts move to the
 * files between two operations rather than only at syncs and reopens. */
static void op_pause(run *r)
{
    tide_clock_sleep_us((uint64_t)r->c->commit_interval_ms * 1000 + 5000);
}

static void op_reopen(run *r)
{
    close_run(r);
    open_run(r);
    r->n_reopen++;
}

/* The final visit: every data record is a model key with its value, once. */
static int visit_check(void *arg, uint64_t offset, const void *key, unsigned key_size,
                       const void *value, uint64_t len)
{
    run *r = arg;
    (void)key_size;
    mentry *e = model_find(&r->m, key);

    if (e == NULL) {
        snprintf(r->visit_err, sizeof r->visit_err,
                 "record at offset %llu holds a key the model never inserted",
                 (unsigned long long)offset);
        return 1;
    }
    if (e->seen) {
        snprintf(r->visit_err, sizeof r->visit_err,
                 "record at offset %llu repeats model key #%ld", (unsigned long long)offset,
                 (long)(e - r->m.e));
        return 1;
    }
    e->seen = 1;
    th_stream(e->vseed, r->got_scratch, e->len);
    if (len != e->len || memcmp(value, r->got_scratch, e->len) != 0) {
        snprintf(r->visit_err, sizeof r->visit_err,
                 "record at offset %llu for model key #%ld: expected %u value bytes, got %llu %s",
                 (unsigned long long)offset, (long)(e - r->m.e), e->len, (unsigned long long)len,
                 len == e->len ? "that differ" : "");
        return 1;
    }
    return 0;
}

static void run_model(void **state, int iter, const config *c)
{
    run *r = *state;
    tide_store_create_opts co;
    tide_visit_stats vs;
    tide_verify_report vr;
    double t0 = th_now_ms();
    int rc;

    r->c = c;
    r->iter = iter;
    r->m.key_size = c->key_size;
    th_rng_init(&r->r, g_seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(iter + 1)));
    if (th_mkdtemp(r->dir, sizeof r->dir) != 0) fail_msg("cannot make a temporary directory");

    tide_store_create_opts_init(&co);
    co.key_size = c->key_size;
    co.block_size = c->block_size;
    co.load_factor = c->load_factor;
    rc = tide_store_create(r->dir, &co);
    if (rc != 0)
        FAIL(r, "create: expected 0, got %d %s: %s", rc, tide_strerror(rc), tide_last_error());
    open_run(r);

    for (r->op = 0; r->op < c->ops; r->op++) {
        uint64_t p = th_rng_below(&r->r, 1000);

        if (p < 480) op_insert_new(r);
        else if (p < 540) op_insert_duplicate(r);
        else if (p < 790) op_fetch_present(r);
        else if (p < 988) op_fetch_absent(r);
        else if (p < 994) op_sync(r);
        else if (p < 996) op_pause(r);
        else op_reopen(r);
    }

    /* Every model key once more, then the data file against the model. */
    for (uint32_t i = 0; i < r->m.n; i++) check_value(r, &r->m.e[i], "final walk");
    close_run(r);
    memset(&vs, 0, sizeof vs);
    r->visit_err[0] = '\0';
    rc = tide_store_visit_io(r->dir, NULL, visit_check, r, &vs);
    if (r->visit_err[0]) FAIL(r, "final visit: %s", r->visit_err);
    if (rc != 0)
        FAIL(r, "final visit: expected 0, got %d %s: %s", rc, tide_strerror(rc), tide_last_error());
    if (vs.data_records != r->m.n || vs.value_bytes != r->m.value_bytes)
        FAIL(r, "final visit: expected %u records of %llu value bytes (the model), got %llu of %llu",
             r->m.n, (unsigned long long)r->m.value_bytes, (unsigned long long)vs.data_records,
             (unsigned long long)vs.value_bytes);
    for (uint32_t i = 0; i < r->m.n; i++)
        if (!r->m.e[i].seen) FAIL(r, "final visit: model key #%u is not in nudb.dat", i);

    memset(&vr, 0xEE, sizeof vr);
    rc = tide_store_verify_io(r->dir, NULL, &vr);
    if (rc != 0)
        FAIL(r, "final verify: expected 0 (sound), got %d %s: %s", rc, tide_strerror(rc),
             tide_last_error());
    if (vr.keys != r->m.n || vr.data_records != r->m.n || vr.value_bytes != r->m.value_bytes)
        FAIL(r, "final verify: expected %u keys and data records of %llu value bytes (the model), "
             "got %llu keys, %llu data records, %llu value bytes", r->m.n,
             (unsigned long long)r->m.value_bytes, (unsigned long long)vr.keys,
             (unsigned long long)vr.data_records, (unsigned long long)vr.value_bytes);

    print_message("    seed %llu run %d: %llu inserts, %llu duplicates, %llu hits, %llu misses, "
                  "%llu syncs, %llu reopens, %llu spill records (%llu reachable), %.3f reads "
                  "per fetch, %llu buckets, load %.3f; %.0f ms\n",
                  (unsigned long long)g_seed, iter, (unsigned long long)r->n_insert,
                  (unsigned long long)r->n_dup, (unsigned long long)r->n_hit,
                  (unsigned long long)r->n_miss, (unsigned long long)r->n_sync,
                  (unsigned long long)r->n_reopen, (unsigned long long)vs.spill_records,
                  (unsigned long long)vr.spill_records_reachable, vr.avg_fetch_reads,
                  (unsigned long long)vr.buckets, vr.load,
                  th_now_ms() - t0);
}

static const config configs[] = {
    { 4096, 32, 0.5, 20, 0, 4000 },
    { 8192, 8, 0.5, 20, 64 << 10, 4000 },
    { 4096, 20, 0.9, 20, 64 << 10, 4000 },
    { 16384, 32, 0.75, 50, 0, 4000 },
    { 32768, 4, 1.0, 20, 64 << 10, 4000 },
};

static void model_agrees_with_the_store_at_block_4096_key_32_over_4000_random_operations(void **state)
{
    run_model(state, 0, &configs[0]);
}

static void model_agrees_with_the_store_at_block_8192_key_8_with_a_64k_insert_pool(void **state)
{
    run_model(state, 1, &configs[1]);
}

static void model_agrees_with_the_store_at_load_factor_0_9_where_buckets_spill(void **state)
{
    run_model(state, 2, &configs[2]);
}

static void model_agrees_with_the_store_at_block_16384_with_commits_every_50_ms(void **state)
{
    run_model(state, 3, &configs[3]);
}

static void model_agrees_with_the_store_at_block_32768_key_4_and_load_factor_1(void **state)
{
    run_model(state, 4, &configs[4]);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(model_agrees_with_the_store_at_block_4096_key_32_over_4000_random_operations),
        T(model_agrees_with_the_store_at_block_8192_key_8_with_a_64k_insert_pool),
        T(model_agrees_with_the_store_at_load_factor_0_9_where_buckets_spill),
        T(model_agrees_with_the_store_at_block_16384_with_commits_every_50_ms),
        T(model_agrees_with_the_store_at_block_32768_key_4_and_load_factor_1),
    };

    g_seed = th_seed(DEFAULT_SEED);
    print_message("test_store_model: seed %llu (repeat with TIDE_TEST_SEED=%llu)\n",
                  (unsigned long long)g_seed, (unsigned long long)g_seed);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
