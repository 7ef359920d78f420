/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_malformed.c: damaged files get an error or a correct answer,
 * never a crash and never wrong bytes from an undamaged record.
 *
 * Mutations (each applied to a fresh restore of a NuDB-written fixture):
 *   - every byte of each header (nudb.dat 92, nudb.key 104, nudb.log 62),
 *     written as 0x00, 0xFF, with one bit flipped, and +1;
 *   - sampled bytes of buckets (nudb.key) and of records (nudb.dat), the
 *     same four ways;
 *   - truncation of each file at every record boundary and boundary +- 1.
 * After each: verify, open (which recovers when a log is there), fetch a
 * sample of the items, close. The rule checked: a call returns an error or
 * a correct answer. When verify says the store is sound, every item whose
 * bytes were not touched must fetch exactly (the format has no checksums,
 * so a changed value byte is invisible: that one item may come back
 * changed). The run is meant for ASan/UBSan (`make asan`), where a stray
 * read past a buffer is a failure.
 *
 * Three binaries share this file, one test each, so that none runs long on
 * a loaded machine: test_store_malformed (MALFORMED_PART 0, the default)
 * the headers, test_store_malformed_sampled (part 1) the sampled bucket
 * and record bytes, test_store_malformed_truncated (part 2) the
 * truncations (PARTS in main).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "store/full.h"

typedef struct original {
    char dir[4096];
    const th_fixture *fx;
    uint8_t *buf[3];
    size_t len[3];
    int exists[3];
    uint64_t *rec_start;       /* the k-th data record of nudb.dat */
    uint64_t *rec_end;
    long long *rec_item;       /* its item index */
    uint64_t *by_key;          /* (first 8 key bytes, item) pairs, sorted */
    size_t nrec;
    uint64_t cases, sound_after_damage, open_failures;
    uint64_t dat_map_views, dat_reads;   /* how the fetches of check() read nudb.dat */
} original;

static const char *names[3] = { "nudb.dat", "nudb.key", "nudb.log" };

static uint64_t key_prefix(const void *key)
{
    uint64_t v;
    memcpy(&v, key, sizeof v);
    return v;
}

static int cmp_pair(const void *a, const void *b)
{
    uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];
    return x < y ? -1 : x > y;
}

/* Records are not in item order (NuDB writes a batch in its own order):
 * find each record's item by its key. */
static int note_record(void *arg, uint64_t offset, const void *key, unsigned key_size,
                       const void *value, uint64_t len)
{
    original *o = arg;
    uint64_t want = key_prefix(key);
    size_t lo = 0, hi = o->fx->items;
    (void)value;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (o->by_key[2 * mid] < want) lo = mid + 1;
        else hi = mid;
    }
    o->rec_item[o->nrec] = lo < o->fx->items && o->by_key[2 * lo] == want
                         ? (long long)o->by_key[2 * lo + 1] : -1;
    o->rec_start[o->nrec] = offset;
    o->rec_end[o->nrec] = offset + 6 + key_size + len;
    o->nrec++;
    return 0;
}

static void load(original *o, const char *fixture)
{
    memset(o, 0, sizeof *o);
    o->fx = th_fixture_find(fixture);
    assert_non_null(o->fx);
    assert_int_equal(th_copy_fixture(fixture, o->dir, sizeof o->dir), 0);
    for (int f = 0; f < 3; f++) {
        char p[4200];
        th_path(p, sizeof p, o->dir, names[f]);
        o->exists[f] = th_exists(p);
        if (o->exists[f]) assert_int_equal(th_read_file(p, &o->buf[f], &o->len[f]), 0);
    }
    o->rec_start = calloc(o->fx->items + 1, sizeof *o->rec_start);
    o->rec_end = calloc(o->fx->items + 1, sizeof *o->rec_end);
    o->rec_item = calloc(o->fx->items + 1, sizeof *o->rec_item);
    o->by_key = calloc(2 * o->fx->items, sizeof *o->by_key);
    for (uint64_t i = 0; i < o->fx->items; i++) {
        uint8_t key[64];
        th_key(i, o->fx->key_size, key);
        o->by_key[2 * i] = key_prefix(key);
        o->by_key[2 * i + 1] = i;
    }
    qsort(o->by_key, o->fx->items, 2 * sizeof *o->by_key, cmp_pair);
    assert_int_equal(tide_store_visit_io(o->dir, NULL, note_record, o, NULL), 0);
    assert_int_equal(o->nrec, o->fx->items);
}

static void restore(original *o)
{
    for (int f = 0; f < 3; f++) {
        char p[4200];
        th_path(p, sizeof p, o->dir, names[f]);
        if (o->exists[f]) assert_int_equal(th_write_file(p, o->buf[f], o->len[f]), 0);
        else remove(p);
    }
    {
        char p[4200];
        th_path(p, sizeof p, o->dir, "nudb.key.new");
        remove(p);
    }
}

static void unload(original *o)
{
    for (int f = 0; f < 3; f++) free(o->buf[f]);
    free(o->rec_start);
    free(o->rec_end);
    free(o->rec_item);
    free(o->by_key);
    th_rmrf(o->dir);
}

/* The item whose data record holds file offset `off` of nudb.dat, or -1. */
static long long item_at(const original *o, uint64_t off)
{
    size_t lo = 0, hi = o->nrec;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (o->rec_end[mid] <= off) lo = mid + 1;
        else hi = mid;
    }
    if (lo < o->nrec && o->rec_start[lo] <= off && off < o->rec_end[lo]) return o->rec_item[lo];
    return -1;
}

/* Verify, open, fetch a sample, close; check the rule. `touched` is the item
 * whose bytes the damage changed (-1 for none). */
static void check(original *o, const char *what, long long touched)
{
    tide_verify_report vr;
    tide_store *s = NULL;
    uint8_t key[64], want[700];
    int vrc, rc;
    uint64_t present = o->fx->present;
    unsigned step = o->fx->items > 600 ? 7 : 1;

    /* Items below `present` were committed; a crash fixture's later items
     * (up to `items`) may be present too when its log was damaged away, since
     * NuDB had written their buckets: then they must be exact. */
    o->cases++;
    vrc = tide_store_verify_io(o->dir, NULL, &vr);
    if (vrc == 0 && (vr.keys < present || vr.keys > o->fx->items))
        fail_msg("%s: verify says sound with %llu keys; the fixture holds %llu..%llu",
                 what, (unsigned long long)vr.keys, (unsigned long long)present,
                 (unsigned long long)o->fx->items);
    if (vrc == 0) o->sound_after_damage++;
    rc = th_store_open(&s, o->dir);
    if (rc) {
        o->open_failures++;
        if (tide_last_error()[0] == '\0')
            fail_msg("%s: open failed with %s but said nothing", what, tide_strerror(rc));
        return;
    }
    for (uint64_t i = 0; i < o->fx->items; i += step) {
        void *v = NULL;
        size_t len = 0, wl = th_len(i, o->fx->vmin, o->fx->vmax);
        th_key(i, o->fx->key_size, key);
        th_value(i, wl, want);
        rc = tide_store_fetch(s, key, &v, &len);
        if (rc == 0) {
            int exact = len == wl && memcmp(v, want, wl) == 0;
            free(v);
            if (!exact && (long long)i != touched)
                fail_msg("%s: item %llu came back with wrong bytes (%zu, expected %zu)", what,
                         (unsigned long long)i, len, wl);
        } else if (vrc == 0 && i < present && (long long)i != touched) {
            fail_msg("%s: verify said sound, yet item %llu fetches as %s: %s", what,
                     (unsigned long long)i, tide_strerror(rc), tide_last_error());
        }
    }
    tide_store_info si;
    tide_store_get_info(s, &si);
    o->dat_map_views += si.dat_map_views;
    o->dat_reads += si.dat_reads;
    rc = tide_store_close(s);
    if (rc && tide_last_error()[0] == '\0')
        fail_msg("%s: close failed with %s but said nothing", what, tide_strerror(rc));
}

static void mutate_byte(original *o, int file, uint64_t off, const char *region)
{
    static const char *how[4] = { "0x00", "0xff", "bit flip", "+1" };
    char p[4200], what[256];
    th_path(p, sizeof p, o->dir, names[file]);
    for (int m = 0; m < 4; m++) {
        uint8_t b = o->buf[file][off], nb = m == 0 ? 0x00 : m == 1 ? 0xff
                                         : m == 2 ? (uint8_t)(b ^ (1u << (off % 8))) : (uint8_t)(b + 1);
        if (nb == b) continue;
        restore(o);
        assert_int_equal(th_pwrite_file(p, &nb, 1, off), 0);
        snprintf(what, sizeof what, "%s %s: byte %llu (%s) %02x -> %s", o->fx->name, names[file],
                 (unsigned long long)off, region, b, how[m]);
        check(o, what, file == 0 ? item_at(o, off) : -1);
    }
}

static void truncate_at(original *o, int file, uint64_t size)
{
    char p[4200], what[256];
    if (size > o->len[file]) return;
    restore(o);
    th_path(p, sizeof p, o->dir, names[file]);
    assert_int_equal(th_write_file(p, o->buf[file], size), 0);
    snprintf(what, sizeof what, "%s %s truncated to %llu of %zu bytes", o->fx->name, names[file],
             (unsigned long long)size, o->len[file]);
    check(o, what, -1);
}

static void summary(original *o, const char *what)
{
    print_message("%s: %llu damaged stores; verify called %llu of them sound, open refused %llu\n",
                  what, (unsigned long long)o->cases, (unsigned long long)o->sound_after_damage,
                  (unsigned long long)o->open_failures);
}

static void every_header_byte_of_each_file_damaged_four_ways_gives_an_error_or_the_truth(void **state)
{
    original o;
    (void)state;
    load(&o, "b4096-k32");
    for (uint64_t off = 0; off < 92; off++) mutate_byte(&o, 0, off, "header");
    for (uint64_t off = 0; off < 104; off++) mutate_byte(&o, 1, off, "header");
    summary(&o, "data and key headers");
    unload(&o);

    load(&o, "crash-b4096");
    for (uint64_t off = 0; off < 62; off++) mutate_byte(&o, 2, off, "log header");
    summary(&o, "log header");
    unload(&o);
}

static void sampled_bucket_and_record_bytes_damaged_give_an_error_or_the_truth(void **state)
{
    original o;
    th_rng r;
    uint64_t seed = th_seed(17);
    unsigned samples = th_small() ? 60 : 250;
    (void)state;

    th_rng_init(&r, seed);
    print_message("seed %llu (TIDE_TEST_SEED repeats it)\n", (unsigned long long)seed);
    load(&o, "b512-k32-spill");
    for (unsigned k = 0; k < samples; k++) {
        uint64_t off = th_rng_range(&r, o.fx->block_size, o.len[1] - 1);
        mutate_byte(&o, 1, off, "bucket");
    }
    for (unsigned k = 0; k < samples; k++) {
        uint64_t off = th_rng_range(&r, 92, o.len[0] - 1);
        mutate_byte(&o, 0, off, item_at(&o, off) >= 0 ? "data record" : "spill record");
    }
    summary(&o, "buckets and records");
    /* The damaged records and spill records were read in the data map
     * (lookup.c, "Reading nudb.dat"), whose checks are the pread path's. */
    print_message("nudb.dat read %llu times in the data map, %llu with pread\n",
                  (unsigned long long)o.dat_map_views, (unsigned long long)o.dat_reads);
    if (o.dat_map_views == 0 && th_scratch_maps())
        fail_msg("no damaged record was read through the data map");
    unload(&o);
}

static void each_file_truncated_at_every_record_boundary_gives_an_error_or_the_truth(void **state)
{
    original o;
    (void)state;

    load(&o, "b4096-k32");
    for (size_t i = 0; i < o.nrec; i++) {
        uint64_t b = o.rec_start[i];
        truncate_at(&o, 0, b - 1);
        truncate_at(&o, 0, b);
        truncate_at(&o, 0, b + 1);
    }
    truncate_at(&o, 0, o.len[0] - 1);
    for (uint64_t b = 0; b <= o.len[1]; b += o.fx->block_size) {
        if (b > 0) truncate_at(&o, 1, b - 1);
        truncate_at(&o, 1, b);
        truncate_at(&o, 1, b + 1);
    }
    summary(&o, "nudb.dat and nudb.key truncations");
    unload(&o);

    /* The log of the crash fixture: at its header and every record edge. */
    load(&o, "crash-b4096");
    {
        uint64_t pos = 62;
        truncate_at(&o, 2, 0);
        truncate_at(&o, 2, 61);
        truncate_at(&o, 2, 62);
        while (pos + 10 <= o.len[2]) {
            unsigned count = (unsigned)((o.buf[2][pos + 8] << 8) | o.buf[2][pos + 9]);
            uint64_t next = pos + 8 + 8 + 18 * (uint64_t)count;
            truncate_at(&o, 2, pos + 1);
            truncate_at(&o, 2, next - 1);
            truncate_at(&o, 2, next);
            truncate_at(&o, 2, next + 1);
            pos = next;
        }
    }
    summary(&o, "nudb.log truncations");
    unload(&o);
}

/* Which binary runs which test: the part of each. */
#ifndef MALFORMED_PART
#define MALFORMED_PART 0
#endif

int main(void)
{
    static const char *const part_names[] = {
        "test_store_malformed", "test_store_malformed_sampled", "test_store_malformed_truncated",
    };
    static const struct { int part; struct CMUnitTest test; } PARTS[] = {
        { 0, cmocka_unit_test(every_header_byte_of_each_file_damaged_four_ways_gives_an_error_or_the_truth) },
        { 1, cmocka_unit_test(sampled_bucket_and_record_bytes_damaged_give_an_error_or_the_truth) },
        { 2, cmocka_unit_test(each_file_truncated_at_every_record_boundary_gives_an_error_or_the_truth) },
    };
    struct CMUnitTest tests[sizeof PARTS / sizeof PARTS[0]];
    size_t n = 0;

    for (size_t i = 0; i < sizeof PARTS / sizeof PARTS[0]; i++)
        if (PARTS[i].part == MALFORMED_PART) tests[n++] = PARTS[i].test;
    return th_run_group_n(part_names[MALFORMED_PART], tests, n, NULL, NULL, NULL);
}
