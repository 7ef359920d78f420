/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_pool.c: the insert pool's memory (src/store/pool.c) and when
 * the store keeps it (src/store/committer.c).
 *
 * A recycled pool takes its chunks and table back before it maps anything,
 * and every item of its next batch is found; a chunk made for one large
 * item is unmapped, not kept; a reset gives back everything. In a store, a
 * commit that finds inserts waiting keeps its pool's memory for the next
 * batch, which maps nothing new; a commit that finds none gives both pools'
 * memory back, so an idle store holds no pool memory. The commit is held
 * in flight by a sync that waits on the test, so each of those moments is
 * made, not hoped for.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "helpers.h"
#include "expect.h"
#include "io/io.h"
#include "mem/account.h"
#include "store/pool.h"
#include "store/full.h"

#define KEY 32

/* ---- the pool alone ---- */

static uint64_t g_maps, g_mapped;

static void count_alloc(int id, int64_t bytes)
{
    (void)id;
    g_maps++;
    g_mapped += (uint64_t)bytes;
}

static uint64_t hash_of(uint64_t i)
{
    return (i * 0x9E3779B97F4A7C15ull) >> 16;
}

static void add_items(ti_pool *p, uint64_t from, uint64_t to, uint32_t len)
{
    uint8_t key[KEY], *val = malloc(len);

    assert_non_null(val);
    for (uint64_t i = from; i < to; i++) {
        th_key(i, KEY, key);
        th_value(i, len, val);
        expect_rc(ti_pool_add(p, hash_of(i), key, val, len), 0, "ti_pool_add");
    }
    free(val);
}

static void check_items(const ti_pool *p, uint64_t from, uint64_t to, uint32_t len, int present)
{
    uint8_t key[KEY], *val = malloc(len);

    assert_non_null(val);
    for (uint64_t i = from; i < to; i++) {
        th_key(i, KEY, key);
        const ti_pool_item *it = ti_pool_find(p, hash_of(i), key);
        if (!present) {
            if (it) fail_msg("item %" PRIu64 " is still found after its pool was emptied", i);
            continue;
        }
        if (it == NULL) fail_msg("item %" PRIu64 " of %" PRIu64 "..%" PRIu64 " is not found", i, from, to);
        th_value(i, len, val);
        if (it->len != len || memcmp(it->data + KEY, val, len) != 0)
            fail_msg("item %" PRIu64 ": its value is not the one added", i);
    }
    free(val);
}

static void a_recycled_pool_takes_its_chunks_and_table_back_before_it_maps_anything(void **state)
{
    ti_pool p;
    const size_t burst = 16u << 20;      /* chunks of 1 MiB */
    const uint32_t len = 500;

    (void)state;
    ti_pool_init(&p, KEY, burst);
    p.note_alloc = count_alloc;
    g_maps = g_mapped = 0;
    add_items(&p, 0, 5000, len);       /* 5000 x 576 bytes: three chunks */
    ti_pool_check(&p, burst);
    uint64_t maps = g_maps, table = (p.mask + 1) * sizeof *p.table, chunks = p.bytes - table;
    expect_u64(chunks, 3u << 20, "5000 items of 576 bytes in 1 MiB chunks");

    ti_pool_recycle(&p);
    ti_pool_check(&p, burst);
    expect_u64(p.count, 0, "a recycled pool's items");
    expect_u64(p.record_bytes, 0, "a recycled pool's record bytes");
    expect_u64(p.spare_bytes, chunks, "its chunks kept as spares");
    expect_u64(p.bytes, table, "in use: its table only, kept at its size");
    expect_u64(p.used, table, "counted against the burst: the table");
    check_items(&p, 0, 5000, len, 0);

    /* The next batch: other keys, more of them. The spares and the table
     * come first; only what is beyond them is mapped. */
    add_items(&p, 10000, 15000, len);
    ti_pool_check(&p, burst);
    expect_u64(g_maps, maps, "a batch as large as the last maps no chunk and no table");
    expect_u64(p.spare_bytes, 0, "every spare taken");
    add_items(&p, 15000, 20000, len);
    ti_pool_check(&p, burst);
    if (g_maps <= maps) fail_msg("a batch twice the last must map more: %" PRIu64 " maps", g_maps - maps);
    check_items(&p, 10000, 20000, len, 1);
    check_items(&p, 0, 5000, len, 0);

    ti_pool_reset(&p);
    ti_pool_check(&p, burst);
    expect_u64(p.bytes, 0, "a reset pool's bytes");
    expect_u64(p.spare_bytes, 0, "a reset pool's spares");
    if (p.table != NULL || p.spare != NULL || p.chunks != NULL) fail_msg("a reset pool keeps a table or a chunk");
    p.note_alloc = count_alloc;
    maps = g_maps;
    add_items(&p, 0, 10, len);
    expect_u64(g_maps - maps, 2, "after a reset the first add maps a table and a chunk");
    ti_pool_reset(&p);
}

static void a_chunk_made_for_one_large_item_is_unmapped_not_kept(void **state)
{
    ti_pool p;
    const size_t burst = 16u << 20;

    (void)state;
    ti_pool_init(&p, KEY, burst);
    p.note_alloc = count_alloc;
    g_maps = g_mapped = 0;
    add_items(&p, 0, 1, 100);
    add_items(&p, 1, 2, 3u << 20);      /* larger than a chunk: one of its own */
    add_items(&p, 2, 3, 100);
    ti_pool_check(&p, burst);
    uint64_t table = (p.mask + 1) * sizeof *p.table;
    if (p.bytes - table <= (4u << 20)) fail_msg("the large item's chunk is missing: %" PRIu64 " bytes", p.bytes);

    ti_pool_recycle(&p);
    ti_pool_check(&p, burst);
    expect_u64(p.spare_bytes, 1u << 20, "spares: the small items' chunk only");
    expect_u64(p.bytes, table, "in use: the table");

    uint64_t maps = g_maps, mapped = g_mapped;
    add_items(&p, 1, 2, 3u << 20);
    expect_u64(g_maps - maps, 1, "the large item again: a chunk of its own, mapped anew");
    if (g_mapped - mapped < (3u << 20)) fail_msg("mapped %" PRIu64 " bytes for a 3 MiB item", g_mapped - mapped);
    expect_u64(p.spare_bytes, 1u << 20, "the spare is left for items that fit it");
    check_items(&p, 1, 2, 3u << 20, 1);
    ti_pool_reset(&p);
}

/* ---- the store: when a commit keeps its pool's memory ---- */

/* A sync of any file that waits, while the gate is armed, until the test
 * opens it: the commit stays in flight, its pool `committing`, while the
 * test inserts into the other. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int armed, waiting, open;
} g_gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0 };
static tide_io g_gate_io;

static int gate_sync(tide_file *f)
{
    pthread_mutex_lock(&g_gate.mu);
    if (g_gate.armed) {
        g_gate.waiting = 1;
        pthread_cond_broadcast(&g_gate.cv);
        while (!g_gate.open) pthread_cond_wait(&g_gate.cv, &g_gate.mu);
        g_gate.armed = g_gate.waiting = g_gate.open = 0;
    }
    pthread_mutex_unlock(&g_gate.mu);
    return tide_io_posix()->sync(f);
}

typedef struct syncer {
    tide_store *s;
    pthread_t th;
    int rc;
} syncer;

static void *sync_main(void *arg)
{
    syncer *y = arg;
    y->rc = tide_store_sync(y->s);
    return NULL;
}

/* Arm the gate, start a sync on its own thread and wait (up to a minute:
 * an event, not a timing) until its commit is held at the gate. */
static void start_held_commit(syncer *y, tide_store *s)
{
    struct timespec until;

    pthread_mutex_lock(&g_gate.mu);
    g_gate.armed = 1;
    pthread_mutex_unlock(&g_gate.mu);
    y->s = s;
    y->rc = -1;
    if (pthread_create(&y->th, NULL, sync_main, y) != 0) fail_msg("pthread_create");
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    pthread_mutex_lock(&g_gate.mu);
    while (!g_gate.waiting)
        if (pthread_cond_timedwait(&g_gate.cv, &g_gate.mu, &until) != 0) break;
    int held = g_gate.waiting;
    pthread_mutex_unlock(&g_gate.mu);
    if (!held) fail_msg("the sync's commit did not reach a file sync in 60 s");
}

static void finish_held_commit(syncer *y)
{
    pthread_mutex_lock(&g_gate.mu);
    g_gate.open = 1;
    pthread_cond_broadcast(&g_gate.cv);
    pthread_mutex_unlock(&g_gate.mu);
    pthread_join(y->th, NULL);
    expect_rc(y->rc, 0, "the held sync");
}

static void insert_range(tide_store *s, uint64_t from, uint64_t to)
{
    uint64_t failed = 0;
    expect_rc(th_store_insert_items(s, from, to, KEY, 100, 100, &failed), 0, "insert");
}

static uint64_t pool_maps(int id)
{
    uint64_t n = 0, bytes = 0;
    tide_mem_account_totals(id, &n, &bytes);
    return n;
}

static void a_steady_load_keeps_the_pools_memory_and_an_idle_store_gives_it_back(void **state)
{
    th_scratch *sc = *state;
    tide_store_create_opts co;
    tide_store_opts so;
    tide_store *s = NULL;
    tide_store_info info;
    syncer y;
    int pool = -1;

    expect_rc(tide_mem_account_register("test_pool_churn", &pool), 0, "register a churn consumer");
    tide_store_create_opts_init(&co);
    co.key_size = KEY;
    expect_rc(tide_store_create(sc->base, &co), 0, "create");
    g_gate_io = *tide_io_posix();
    g_gate_io.sync = gate_sync;
    th_store_opts(&so);
    so.io = &g_gate_io;
    so.commit_interval_ms = 3600 * 1000;      /* commits only when the test syncs */
    so.note_alloc = tide_mem_account_note_alloc;
    so.pool_account_id = pool;
    expect_rc(tide_store_open(&s, sc->base, &so), 0, "open");

    insert_range(s, 0, 10);                     /* pool A: a table and a chunk */
    uint64_t maps = pool_maps(pool);
    expect_u64(maps, 2, "ten inserts: the first pool's table and chunk");

    /* A's commit held; ten inserts meanwhile go to B. */
    start_held_commit(&y, s);
    insert_range(s, 10, 20);
    expect_u64(pool_maps(pool) - maps, 2, "the second pool's table and chunk");
    maps = pool_maps(pool);
    finish_held_commit(&y);
    tide_store_get_info(s, &info);
    expect_u64(info.pool_spare_bytes, 1u << 20, "A's commit found B's inserts waiting: A keeps its chunk");
    expect_u64(info.pool_bytes, 2 * 1024 * 8 + (1u << 20), "in use: both tables and B's chunk");

    /* B's commit held; A takes the next ten into what it kept. */
    start_held_commit(&y, s);
    insert_range(s, 20, 30);
    expect_u64(pool_maps(pool), maps, "the batch after a kept pool's maps nothing");
    finish_held_commit(&y);
    tide_store_get_info(s, &info);
    expect_u64(info.pool_spare_bytes, 1u << 20, "B's commit found A's inserts waiting: B keeps its chunk");

    /* A's commit, and nothing waits: both pools give their memory back. */
    expect_rc(tide_store_sync(s), 0, "the last sync");
    tide_store_get_info(s, &info);
    expect_u64(info.pool_bytes, 0, "an idle store's pools in use");
    expect_u64(info.pool_spare_bytes, 0, "an idle store's spare chunks");
    for (uint64_t i = 0; i < 30; i++) {
        uint8_t key[KEY], want[100];
        void *v = NULL;
        size_t n = 0;
        th_key(i, KEY, key);
        th_value(i, sizeof want, want);
        expect_rc(tide_store_fetch(s, key, &v, &n), 0, "fetch after the commits");
        if (n != sizeof want || memcmp(v, want, n) != 0) fail_msg("item %" PRIu64 ": another value", i);
        free(v);
    }
    expect_rc(tide_store_close(s), 0, "close");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_recycled_pool_takes_its_chunks_and_table_back_before_it_maps_anything),
        cmocka_unit_test(a_chunk_made_for_one_large_item_is_unmapped_not_kept),
        cmocka_unit_test_setup_teardown(a_steady_load_keeps_the_pools_memory_and_an_idle_store_gives_it_back,
                                        th_scratch_setup, th_scratch_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
