/*
 * keycache.c: the key cache, keys recently found absent.
 *
 * A set of fixed-size keys, each with a last-access time, over the same hash
 * table as the tagged cache (core.h), on one list in access order (oldest at
 * the head). A hit moves the key to the tail; a sweep removes keys from the
 * head while they are older than the effective age; the hard limit removes
 * from the head on insert.
 *
 * Invariants (tide_keycache_check walks them):
 *   1. bytes == chunk(sizeof keycache) + chunk(slots * 8) + entries * entry_bytes.
 *   2. t.count == lru.n, and every key on the list is in the table.
 *   3. Along the list, atime never decreases (each access sets it to the
 *      later of the clock and the tail's atime).
 *   4. bytes <= hard_limit (when set) whenever the lock is free.
 *   5. Nothing is freed while the lock is held.
 *   6. *account_bytes changes, under the lock, by exactly what bytes does.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/core.h"
#include "cache/keycache.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/err.h"

typedef struct kentry {
    tc_entry h;
    unsigned char key[];
} kentry;

struct tide_keycache {
    pthread_mutex_t mu;
    tc_table t;
    tc_list lru;
    size_t bytes;
    size_t entry_bytes;
    size_t target_size, hard_limit;
    uint64_t age_us;
    uint64_t (*clock_us)(void *arg);
    void *clock_arg;
    int64_t *account;
    uint64_t hits, misses, inserts, evictions;
};

static uint64_t default_clock(void *arg)
{
    (void)arg;
    return tide_clock_mono_us();
}

void tide_keycache_opts_init(tide_keycache_opts *o)
{
    memset(o, 0, sizeof *o);
    o->key_size = 32;
    o->target_size = 262144;
    o->age_s = 30;
    o->hard_limit_bytes = (size_t)32 << 20;
}

static size_t table_cost(size_t nslots)
{
    return tc_chunk(nslots * sizeof(tc_entry *));
}

static size_t base_cost(const tide_keycache *k)
{
    return tc_chunk(sizeof *k) + table_cost(k->t.nslots);
}

static void account(tide_keycache *k, size_t before)
{
    if (k->account && k->bytes != before)
        __atomic_add_fetch(k->account, (int64_t)k->bytes - (int64_t)before, __ATOMIC_RELAXED);
}

static void push(tide_keycache *k, kentry *e, uint64_t now)
{
    uint64_t floor = k->lru.tail ? k->lru.tail->atime_us : 0;

    e->h.atime_us = now > floor ? now : floor;
    tc_list_push(&k->lru, &e->h);
}

static void remove_entry(tide_keycache *k, kentry *e, tc_entry **victims)
{
    tc_unlink(&k->t, &e->h);
    tc_list_remove(&k->lru, &e->h);
    k->bytes -= k->entry_bytes;
    e->h.next = *victims;
    *victims = &e->h;
}

static void free_victims(tc_entry *v)
{
    while (v) {
        tc_entry *next = v->next;
        free(v);
        v = next;
    }
}

static void check_cheap(const tide_keycache *k)
{
    TIDE_ASSERT(k->t.count == k->lru.n);                            /* 2 */
    TIDE_ASSERT(k->hard_limit == 0 || k->bytes <= k->hard_limit);   /* 4 */
}

int tide_keycache_create(tide_keycache **out, const tide_keycache_opts *opts)
{
    tide_keycache_opts d;
    tide_keycache *k = NULL;
    tc_entry **slots = NULL;
    size_t nslots, entry_bytes;
    uint64_t seed = 0;
    int rc = 0;

    if (opts == NULL) {
        tide_keycache_opts_init(&d);
        opts = &d;
    }
    if (opts->key_size < 1 || opts->key_size > 65535) {
        rc = tide_err_set(TIDE_EINVAL, "tide_keycache_create: key_size %u is outside 1..65535",
                          opts->key_size);
        goto out;
    }
    if (opts->age_s < 1) {
        rc = tide_err_set(TIDE_EINVAL, "tide_keycache_create: age_s 0 is below 1 second");
        goto out;
    }
    nslots = tc_slots_for(opts->target_size);
    if (nslots == 0) nslots = TC_SLOTS_MIN;
    while (opts->hard_limit_bytes && nslots > TC_SLOTS_MIN &&
           table_cost(nslots) > opts->hard_limit_bytes / 8)
        nslots >>= 1;
    entry_bytes = tc_chunk(offsetof(kentry, key) + opts->key_size);
    if (opts->hard_limit_bytes &&
        tc_chunk(sizeof *k) + table_cost(nslots) + entry_bytes > opts->hard_limit_bytes) {
        rc = tide_err_set(TIDE_EINVAL, "tide_keycache_create: hard_limit_bytes %zu is below "
                          "the %zu bytes a key cache of one key takes", opts->hard_limit_bytes,
                          tc_chunk(sizeof *k) + table_cost(nslots) + entry_bytes);
        goto out;
    }
    k = calloc(1, sizeof *k);
    slots = calloc(nslots, sizeof *slots);
    if (k == NULL || slots == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "tide_keycache_create: allocating a key cache of %zu "
                          "slots", nslots);
        goto out;
    }
    if (tide_random_bytes(&seed, sizeof seed) != 0)
        seed = tide_clock_mono_us() ^ (uint64_t)(uintptr_t)k;
    if (pthread_mutex_init(&k->mu, NULL) != 0) {
        rc = tide_err_set(TIDE_ENOMEM, "tide_keycache_create: pthread_mutex_init failed");
        goto out;
    }
    tc_table_init(&k->t, slots, nslots, opts->key_size, offsetof(kentry, key), seed);
    slots = NULL;
    k->entry_bytes = entry_bytes;
    k->target_size = opts->target_size;
    k->hard_limit = opts->hard_limit_bytes;
    k->age_us = (uint64_t)opts->age_s * 1000000u;
    k->clock_us = opts->clock_us ? opts->clock_us : default_clock;
    k->clock_arg = opts->clock_us ? opts->clock_arg : NULL;
    k->account = opts->account_bytes;
    k->bytes = base_cost(k);
    account(k, 0);
    *out = k;
    k = NULL;
out:
    free(slots);
    free(k);
    return rc;
}

void tide_keycache_destroy(tide_keycache *k)
{
    tc_entry *v = NULL;

    if (k == NULL) return;
    if (k->account) __atomic_sub_fetch(k->account, (int64_t)k->bytes, __ATOMIC_RELAXED);
    while (k->lru.head) remove_entry(k, (kentry *)k->lru.head, &v);
    TIDE_ASSERT(k->t.count == 0 && k->bytes == base_cost(k));
    free_victims(v);
    pthread_mutex_destroy(&k->mu);
    free(k->t.slots);
    free(k);
}

static void grow(tide_keycache *k, size_t want)
{
    tc_entry **slots = NULL, **old = NULL;
    size_t before;

    if (want > SIZE_MAX / sizeof *slots) return;
    slots = calloc(want, sizeof *slots);
    if (slots == NULL) return;
    pthread_mutex_lock(&k->mu);
    before = k->bytes;
    if (k->t.nslots < want && k->t.count > k->t.nslots) {
        size_t delta = table_cost(want) - table_cost(k->t.nslots);
        if (k->hard_limit == 0 || k->bytes + delta <= k->hard_limit) {
            old = tc_rehash(&k->t, slots, want);
            slots = NULL;
            k->bytes += delta;
        }
    }
    account(k, before);
    check_cheap(k);
    pthread_mutex_unlock(&k->mu);
    free(slots);
    free(old);
}

int tide_keycache_insert(tide_keycache *k, const void *key)
{
    kentry *e = NULL, *old;
    tc_entry *victims = NULL;
    size_t before, want = 0;
    uint64_t now;
    int rc = 0;

    e = malloc(offsetof(kentry, key) + k->t.key_size);
    if (e == NULL) {
        rc = tide_err_set(TIDE_ENOMEM, "tide_keycache_insert: malloc of a %zu-byte entry "
                          "failed", offsetof(kentry, key) + k->t.key_size);
        goto out;
    }
    memcpy(e->key, key, k->t.key_size);
    e->h.hash = tc_hash(&k->t, key);

    pthread_mutex_lock(&k->mu);
    before = k->bytes;
    now = k->clock_us(k->clock_arg);
    k->inserts++;
    old = (kentry *)tc_find(&k->t, e->h.hash, key);
    if (old) {
        tc_list_remove(&k->lru, &old->h);       /* refresh; `e` is not needed */
        push(k, old, now);
    } else {
        while (k->hard_limit && k->bytes + k->entry_bytes > k->hard_limit) {
            TIDE_ASSERT(k->lru.head != NULL);   /* one key fits: checked at create */
            remove_entry(k, (kentry *)k->lru.head, &victims);
            k->evictions++;
        }
        tc_link(&k->t, &e->h);
        push(k, e, now);
        k->bytes += k->entry_bytes;
        e = NULL;
        if (k->t.count > k->t.nslots && k->t.nslots <= SIZE_MAX / 2) {
            size_t delta = table_cost(k->t.nslots * 2) - table_cost(k->t.nslots);
            if (k->hard_limit == 0 || k->bytes + delta <= k->hard_limit)
                want = k->t.nslots * 2;
        }
    }
    account(k, before);
    check_cheap(k);
    pthread_mutex_unlock(&k->mu);
    free_victims(victims);
    if (want) grow(k, want);
out:
    free(e);
    return rc;
}

int tide_keycache_contains(tide_keycache *k, const void *key)
{
    uint64_t h = tc_hash(&k->t, key);
    kentry *e;

    pthread_mutex_lock(&k->mu);
    e = (kentry *)tc_find(&k->t, h, key);
    if (e) {
        tc_list_remove(&k->lru, &e->h);
        push(k, e, k->clock_us(k->clock_arg));
        k->hits++;
    } else {
        k->misses++;
    }
    pthread_mutex_unlock(&k->mu);
    return e != NULL;
}

int tide_keycache_erase(tide_keycache *k, const void *key)
{
    uint64_t h = tc_hash(&k->t, key);
    tc_entry *victims = NULL;
    kentry *e;
    size_t before;

    pthread_mutex_lock(&k->mu);
    before = k->bytes;
    e = (kentry *)tc_find(&k->t, h, key);
    if (e) remove_entry(k, e, &victims);
    account(k, before);
    check_cheap(k);
    pthread_mutex_unlock(&k->mu);
    free_victims(victims);
    return e != NULL;
}

void tide_keycache_sweep(tide_keycache *k, tide_keycache_sweep_report *report)
{
    tide_keycache_sweep_report r;
    tc_entry *victims = NULL;
    uint64_t now, eff;

    memset(&r, 0, sizeof r);
    pthread_mutex_lock(&k->mu);
    now = k->clock_us(k->clock_arg);
    r.entries_before = k->lru.n;
    r.bytes_before = k->bytes;
    eff = tc_effective_age_us(k->age_us, k->target_size, k->lru.n);
    r.effective_age_us = eff;
    while (k->lru.head && now >= eff && k->lru.head->atime_us <= now - eff) {
        remove_entry(k, (kentry *)k->lru.head, &victims);
        r.evicted++;
    }
    k->evictions += r.evicted;
    r.bytes_after = k->bytes;
    account(k, r.bytes_before);
    check_cheap(k);
    pthread_mutex_unlock(&k->mu);
    free_victims(victims);
    if (report) *report = r;
}

void tide_keycache_stats_get(tide_keycache *k, tide_keycache_stats *out)
{
    pthread_mutex_lock(&k->mu);
    out->hits = k->hits;
    out->misses = k->misses;
    out->inserts = k->inserts;
    out->evictions = k->evictions;
    out->entries = k->lru.n;
    out->bytes = k->bytes;
    out->slots = k->t.nslots;
    out->effective_age_us = tc_effective_age_us(k->age_us, k->target_size, k->lru.n);
    pthread_mutex_unlock(&k->mu);
}

size_t tide_keycache_entry_cost(const tide_keycache *k)
{
    return k->entry_bytes;
}

size_t tide_keycache_fixed_cost(const tide_keycache *k)
{
    return tc_chunk(sizeof *k);
}

void tide_keycache_check(tide_keycache *k)
{
    size_t n = 0, nl = 0;
    uint64_t last = 0;

    pthread_mutex_lock(&k->mu);
    for (tc_entry *x = k->lru.head; x; x = x->next, nl++) {
        TIDE_ASSERT(tc_find(&k->t, x->hash, ((kentry *)x)->key) == x);    /* 2 */
        TIDE_ASSERT(x->atime_us >= last);                                  /* 3 */
        last = x->atime_us;
    }
    for (size_t i = 0; i < k->t.nslots; i++)
        for (tc_entry *x = k->t.slots[i]; x; x = x->hnext) n++;
    TIDE_ASSERT(nl == k->lru.n && n == k->t.count && n == nl);             /* 2 */
    TIDE_ASSERT(k->bytes == base_cost(k) + n * k->entry_bytes);            /* 1 */
    TIDE_ASSERT(k->hard_limit == 0 || k->bytes <= k->hard_limit);          /* 4 */
    pthread_mutex_unlock(&k->mu);
}
