/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_fixtures.c: Tide opens, fetches, grows and recovers databases that
 * NuDB 2.0.9 wrote (tests/fixtures/nudb; README.md there gives the formula
 * for every item and the numbers NuDB's verify printed).
 *
 * Every test copies its fixture into a fresh mkdtemp directory first and
 * removes that directory in the teardown, whether the test passed or not;
 * the fixtures themselves are only ever read.
 *
 * What is checked, per fixture:
 *   - open with default options; every item i fetches exactly value(i);
 *   - 2000+ keys that are not there (key(i) past the fixture's count, and
 *     random keys) fetch TIDE_ENOTFOUND;
 *   - tide_store_get_info agrees with the README (buckets, block size, key
 *     size, salt, appnum, uid, load factor);
 *   - 500 new items inserted on top (splits, and spills at block 512) are
 *     visible at once and, with every old item, after close and reopen;
 *   - tide_store_visit_io counts the README's records and value bytes;
 *   - tide_store_verify_io gives exactly the figures NuDB's verify printed
 *     (keys, value bytes, buckets, capacity, spill records reachable and
 *     written, waste, average fetch reads, file sizes) and changes no byte;
 *   - after the 500 new items, verify still passes with the new key count:
 *     what Tide writes on top of NuDB's files, splits and spills included,
 *     obeys NuDB's rules.
 * And for crash-b4096 (killed during a commit): open recovers to exactly
 * items 0..7999 with the README's file sizes; tide_store_recover_io reports
 * what it restored and truncated; a read-only open refuses to recover, and
 * so does verify, which passes once a read-write open has recovered.
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
#include "store/format.h"
#include "helpers.h"

#define NEW_ITEMS 500
#define MAX_VALUE 4096

typedef th_store_env tstate;   /* dir and s (helpers.h) */



static void copy_fixture(tstate *t, const char *name)
{
    if (th_copy_fixture(name, t->dir, sizeof t->dir) != 0)
        fail_msg("could not copy fixture %s from %s into a temporary directory", name,
                 th_fixture_root());
}

static void open_store(tstate *t, const th_fixture *f, const char *when)
{
    int rc = th_store_open(&t->s, t->dir);

    if (rc != 0) {
        t->s = NULL;
        fail_msg("%s: open %s (%s): expected 0, got %d %s: %s", f->name, t->dir, when, rc,
                 tide_strerror(rc), tide_last_error());
    }
}

static void close_store(tstate *t, const th_fixture *f, const char *when)
{
    int rc = tide_store_close(t->s);

    t->s = NULL;
    if (rc != 0)
        fail_msg("%s: close (%s): expected 0, got %d %s: %s", f->name, when, rc,
                 tide_strerror(rc), tide_last_error());
}

static char *file_in(const tstate *t, const char *name, char *buf, size_t cap)
{
    return th_path(buf, cap, t->dir, name);
}

/* Fetch item i of fixture f and compare with value(i) byte for byte. */
static void expect_item(tide_store *s, const th_fixture *f, uint64_t i, const char *when)
{
    uint8_t key[64], want[MAX_VALUE];
    size_t wlen = th_len(i, f->vmin, f->vmax), glen = 0;
    void *got = NULL;
    int rc;

    th_key(i, f->key_size, key);
    th_value(i, wlen, want);
    rc = tide_store_fetch(s, key, &got, &glen);
    if (rc != 0)
        fail_msg("%s (%s): fetch of item %llu: expected its %zu-byte value, got %d %s: %s",
                 f->name, when, (unsigned long long)i, wlen, rc, tide_strerror(rc),
                 tide_last_error());
    if (glen != wlen) {
        free(got);
        fail_msg("%s (%s): fetch of item %llu: expected %zu bytes, got %zu", f->name, when,
                 (unsigned long long)i, wlen, glen);
    }
    if (memcmp(got, want, wlen) != 0) {
        size_t at = 0;
        uint8_t g;
        while (((uint8_t *)got)[at] == want[at]) at++;
        g = ((uint8_t *)got)[at];
        free(got);
        fail_msg("%s (%s): fetch of item %llu: %zu bytes as expected, but byte %zu differs "
                 "(expected 0x%02x, got 0x%02x)", f->name, when, (unsigned long long)i, wlen,
                 at, want[at], g);
    }
    free(got);
}

static void expect_absent_key(tide_store *s, const th_fixture *f, const uint8_t *key,
                              const char *what, uint64_t n, const char *when)
{
    void *got = NULL;
    size_t glen = 0;
    int rc = tide_store_fetch(s, key, &got, &glen);

    if (rc != TIDE_ENOTFOUND) {
        if (rc == 0) free(got);
        fail_msg("%s (%s): fetch of %s %llu (not in the store): expected TIDE_ENOTFOUND (%d), "
                 "got %d %s%s%s", f->name, when, what, (unsigned long long)n, TIDE_ENOTFOUND,
                 rc, rc == 0 ? "and a value" : tide_strerror(rc), rc == 0 ? "" : ": ",
                 rc == 0 ? "" : tide_last_error());
    }
}

static void expect_absent_item(tide_store *s, const th_fixture *f, uint64_t i, const char *when)
{
    uint8_t key[64];

    th_key(i, f->key_size, key);
    expect_absent_key(s, f, key, "item", i, when);
}

/* 1000 items past the last one ever inserted and 1000 random keys. */
static void expect_2000_absent_keys(tide_store *s, const th_fixture *f, uint64_t from,
                                    const char *when)
{
    uint8_t key[64];
    th_rng r;

    for (uint64_t i = from; i < from + 1000; i++) expect_absent_item(s, f, i, when);
    th_rng_init(&r, 0xab5e47 + f->key_size);
    for (uint64_t n = 0; n < 1000; n++) {
        th_rng_bytes(&r, key, f->key_size);
        expect_absent_key(s, f, key, "random key", n, when);
    }
}

static void expect_info_matches_readme(tide_store *s, const th_fixture *f, const char *when)
{
    tide_store_info info;

    memset(&info, 0xEE, sizeof info);
    tide_store_get_info(s, &info);
#define EXPECT_INFO(field, want) \
    if ((uint64_t)info.field != (uint64_t)(want)) \
        fail_msg("%s (%s): info." #field ": expected %llu (0x%llx), got %llu (0x%llx)", \
                 f->name, when, (unsigned long long)(want), (unsigned long long)(want), \
                 (unsigned long long)info.field, (unsigned long long)info.field)
    EXPECT_INFO(buckets, f->buckets);
    EXPECT_INFO(block_size, f->block_size);
    EXPECT_INFO(key_size, f->key_size);
    EXPECT_INFO(capacity, ti_fmt_capacity(f->block_size));
    EXPECT_INFO(salt, f->salt);
    EXPECT_INFO(pepper, ti_fmt_pepper(f->salt));
    EXPECT_INFO(appnum, f->appnum);
    EXPECT_INFO(uid, TH_FIXTURE_UID);
    EXPECT_INFO(version, 2);
    EXPECT_INFO(load_factor_raw, f->load_factor_raw);
    EXPECT_INFO(key_file_bytes, f->key_file_bytes);
    EXPECT_INFO(dat_file_bytes, f->dat_file_bytes);
    EXPECT_INFO(needs_recovery, 0);
}

/* Open a copy of fixture `name`, check every item, 2000+ absent keys and
 * the info, close. */
static void fetch_whole_fixture(void **state, const char *name)
{
    tstate *t = *state;
    const th_fixture *f = th_fixture_find(name);
    double t0 = th_now_ms();

    assert_non_null(f);
    copy_fixture(t, name);
    open_store(t, f, "first open");
    expect_info_matches_readme(t->s, f, "after open");
    for (uint64_t i = 0; i < f->present; i++) expect_item(t->s, f, i, "after open");
    for (uint64_t i = f->present; i < f->items; i++) expect_absent_item(t->s, f, i, "after open");
    expect_2000_absent_keys(t->s, f, f->items, "after open");
    close_store(t, f, "after fetching");
    print_message("    %s: %llu items fetched, %llu+2000 absent keys refused in %.0f ms\n",
                  name, (unsigned long long)f->present,
                  (unsigned long long)(f->items - f->present), th_now_ms() - t0);
}

static void fixture_b4096_k32_opens_and_fetches_every_item_byte_for_byte(void **state)
{
    fetch_whole_fixture(state, "b4096-k32");
}

static void fixture_b16384_k8_opens_and_fetches_every_item_byte_for_byte(void **state)
{
    fetch_whole_fixture(state, "b16384-k8");
}

/* Count, by reading nudb.key and nudb.dat directly, the buckets with a
 * spill chain and the entries that live only in spill records. */
static void count_spills(const tstate *t, const th_fixture *f, uint64_t *chained_buckets,
                         uint64_t *spilled_entries, uint64_t *buckets_out)
{
    char kpath[4200], dpath[4200];
    uint8_t *key = NULL, *dat = NULL;
    size_t klen, dlen;
    uint64_t buckets;

    *chained_buckets = *spilled_entries = 0;
    file_in(t, "nudb.key", kpath, sizeof kpath);
    file_in(t, "nudb.dat", dpath, sizeof dpath);
    if (th_read_file(kpath, &key, &klen) != 0 || th_read_file(dpath, &dat, &dlen) != 0) {
        free(key);
        fail_msg("%s: cannot read %s or %s", f->name, kpath, dpath);
    }
    if (klen % f->block_size != 0 || klen < 2 * (size_t)f->block_size) {
        free(key);
        free(dat);
        fail_msg("%s: key file of %zu bytes is not (buckets + 1) * %u", f->name, klen, f->block_size);
    }
    buckets = klen / f->block_size - 1;
    for (uint64_t b = 0; b < buckets; b++) {
        uint64_t spill = ti_fmt_bucket_spill(key + (b + 1) * f->block_size);
        if (spill != 0) (*chained_buckets)++;
        while (spill != 0) {
            if (spill < 100 || spill + 8 > dlen) {
                free(key);
                free(dat);
                fail_msg("%s: bucket %llu: spill pointer %llu is outside the %zu-byte data file",
                         f->name, (unsigned long long)b, (unsigned long long)spill, dlen);
            }
            *spilled_entries += ti_fmt_bucket_count(dat + spill);
            spill = ti_fmt_bucket_spill(dat + spill);
        }
    }
    *buckets_out = buckets;
    free(key);
    free(dat);
}

static void fixture_b512_spill_fetches_every_item_through_its_spill_chains(void **state)
{
    tstate *t = *state;
    const th_fixture *f = th_fixture_find("b512-k32-spill");
    uint64_t chained, spilled, buckets;

    copy_fixture(t, f->name);
    count_spills(t, f, &chained, &spilled, &buckets);
    if (chained == 0 || spilled == 0)
        fail_msg("%s: expected buckets with spill chains in the key file NuDB wrote, got %llu "
                 "chained buckets holding %llu spilled entries", f->name,
                 (unsigned long long)chained, (unsigned long long)spilled);
    print_message("    %s: %llu of %llu buckets have spill chains, %llu items live in spill records\n",
                  f->name, (unsigned long long)chained, (unsigned long long)buckets,
                  (unsigned long long)spilled);
    th_rmrf(t->dir);
    t->dir[0] = '\0';
    fetch_whole_fixture(state, f->name);
}

/* ---- verify ---- */

/* The sum of len(i) over items [0, n). */
static uint64_t formula_value_bytes(const th_fixture *f, uint64_t n)
{
    uint64_t sum = 0;

    for (uint64_t i = 0; i < n; i++) sum += th_len(i, f->vmin, f->vmax);
    return sum;
}

/* Verify the store in t->dir: it must pass, change no byte, and count
 * `keys` keys and data records of `value_bytes`. The report goes to *r. */
static void expect_verify_passes(const tstate *t, const th_fixture *f, uint64_t keys,
                                 uint64_t value_bytes, tide_verify_report *r, const char *when)
{
    th_snapshot sn;
    char diff[256];
    int rc;

    if (th_snapshot_take(t->dir, &sn) != 0) fail_msg("%s: cannot snapshot %s", f->name, t->dir);
    memset(r, 0xEE, sizeof *r);
    rc = tide_store_verify_io(t->dir, NULL, r);
    if (rc != 0) {
        th_snapshot_free(&sn);
        fail_msg("%s (%s): verify: expected 0 (sound), got %d %s: %s", f->name, when, rc,
                 tide_strerror(rc), tide_last_error());
    }
    if (th_snapshot_diff(t->dir, &sn, diff, sizeof diff) != 0) {
        th_snapshot_free(&sn);
        fail_msg("%s (%s): verify changed the store: expected every file byte-identical, but %s",
                 f->name, when, diff);
    }
    th_snapshot_free(&sn);
    if (r->keys != keys || r->data_records != keys || r->value_bytes != value_bytes)
        fail_msg("%s (%s): verify: expected %llu keys and data records of %llu value bytes; got "
                 "%llu keys, %llu data records, %llu value bytes", f->name, when,
                 (unsigned long long)keys, (unsigned long long)value_bytes,
                 (unsigned long long)r->keys, (unsigned long long)r->data_records,
                 (unsigned long long)r->value_bytes);
    if (r->capacity != ti_fmt_capacity(f->block_size) || r->block_size != f->block_size)
        fail_msg("%s (%s): verify: expected capacity %u and block size %u, got %u and %u",
                 f->name, when, ti_fmt_capacity(f->block_size), f->block_size, r->capacity,
                 r->block_size);
    if (r->spill_records_reachable > r->spill_records_written)
        fail_msg("%s (%s): verify: expected at most the %llu spill records written to be "
                 "reachable, got %llu", f->name, when,
                 (unsigned long long)r->spill_records_written,
                 (unsigned long long)r->spill_records_reachable);
}

#define EXPECT_FIGURE(f, r, field, want) \
    if ((uint64_t)(r).field != (uint64_t)(want)) \
        fail_msg("%s: verify: " #field ": expected %llu (NuDB's figure), got %llu", (f)->name, \
                 (unsigned long long)(want), (unsigned long long)(r).field)

static void expect_no_spills(const th_fixture *f, const tide_verify_report *r)
{
    if (r->spill_records_reachable != 0 || r->spill_records_written != 0 || r->waste_bytes != 0 ||
        r->waste != 0.0 || r->avg_fetch_reads != 1.0)
        fail_msg("%s: verify: expected no spills (0 reachable, 0 written, no waste, 1 read per "
                 "fetch), got %llu reachable, %llu written, %llu waste bytes (%f), %f reads per "
                 "fetch", f->name, (unsigned long long)r->spill_records_reachable,
                 (unsigned long long)r->spill_records_written,
                 (unsigned long long)r->waste_bytes, r->waste, r->avg_fetch_reads);
}

/* Copy fixture `name`, verify it, and check the README's figures that every
 * clean fixture has. */
static void verify_clean_fixture(tstate *t, const char *name, tide_verify_report *r)
{
    const th_fixture *f = th_fixture_find(name);

    assert_non_null(f);
    copy_fixture(t, name);
    expect_verify_passes(t, f, f->items, f->value_bytes, r, "fixture as NuDB wrote it");
    EXPECT_FIGURE(f, *r, buckets, f->buckets);
    EXPECT_FIGURE(f, *r, key_file_bytes, f->key_file_bytes);
    EXPECT_FIGURE(f, *r, dat_file_bytes, f->dat_file_bytes);
    if (r->load != (double)f->items / ((double)f->buckets * ti_fmt_capacity(f->block_size)))
        fail_msg("%s: verify: expected load %llu / (%llu x %u), got %f", f->name,
                 (unsigned long long)f->items, (unsigned long long)f->buckets,
                 ti_fmt_capacity(f->block_size), r->load);
    print_message("    %s: %llu keys, %llu value bytes, %llu buckets of capacity %u, load %.4f, "
                  "spill records %llu reachable / %llu written, waste %llu B (%.4f%%), "
                  "%.4f reads per fetch\n", name, (unsigned long long)r->keys,
                  (unsigned long long)r->value_bytes, (unsigned long long)r->buckets, r->capacity,
                  r->load, (unsigned long long)r->spill_records_reachable,
                  (unsigned long long)r->spill_records_written,
                  (unsigned long long)r->waste_bytes, 100.0 * r->waste, r->avg_fetch_reads);
}

static void verify_of_fixture_b4096_k32_gives_nudbs_figures(void **state)
{
    tide_verify_report r;

    verify_clean_fixture(*state, "b4096-k32", &r);
    EXPECT_FIGURE(th_fixture_find("b4096-k32"), r, capacity, 227);
    expect_no_spills(th_fixture_find("b4096-k32"), &r);
}

static void verify_of_fixture_b512_spill_gives_nudbs_spills_waste_and_fetch_reads(void **state)
{
    const th_fixture *f = th_fixture_find("b512-k32-spill");
    tide_verify_report r;

    verify_clean_fixture(*state, f->name, &r);
    EXPECT_FIGURE(f, r, capacity, 28);
    EXPECT_FIGURE(f, r, spill_records_reachable, 29);
    EXPECT_FIGURE(f, r, spill_records_written, 126);
    EXPECT_FIGURE(f, r, waste_bytes, 50440);
    if (!(r.waste >= 0.1679 - 0.00005 && r.waste <= 0.1679 + 0.00005))
        fail_msg("%s: verify: waste: expected 0.1679 (NuDB's 16.79%%) within 0.00005, got %.6f",
                 f->name, r.waste);
    if (!(r.avg_fetch_reads >= 1.271 - 0.0005 && r.avg_fetch_reads <= 1.271 + 0.0005))
        fail_msg("%s: verify: avg_fetch_reads: expected 1.271 (NuDB's avg_fetch) within 0.0005, "
                 "got %.6f", f->name, r.avg_fetch_reads);
}

static void verify_of_fixture_b16384_k8_gives_nudbs_figures(void **state)
{
    tide_verify_report r;

    verify_clean_fixture(*state, "b16384-k8", &r);
    EXPECT_FIGURE(th_fixture_find("b16384-k8"), r, capacity, 909);
    expect_no_spills(th_fixture_find("b16384-k8"), &r);
}

static void fixture_crash_is_refused_by_verify_until_recovered_then_verifies_8000_keys(void **state)
{
    tstate *t = *state;
    const th_fixture *f = th_fixture_find("crash-b4096");
    tide_verify_report r;
    th_snapshot sn;
    char diff[256];
    int rc;

    copy_fixture(t, f->name);
    if (th_snapshot_take(t->dir, &sn) != 0) fail_msg("%s: cannot snapshot %s", f->name, t->dir);
    rc = tide_store_verify_io(t->dir, NULL, &r);
    if (rc != TIDE_EBUSY || strstr(tide_last_error(), "tide recover") == NULL) {
        th_snapshot_free(&sn);
        fail_msg("%s: verify before recovery: expected TIDE_EBUSY (%d) with a message that says "
                 "to run 'tide recover', got %d %s: '%s'", f->name, TIDE_EBUSY, rc,
                 tide_strerror(rc), tide_last_error());
    }
    if (th_snapshot_diff(t->dir, &sn, diff, sizeof diff) != 0) {
        th_snapshot_free(&sn);
        fail_msg("%s: verify before recovery changed the store (it must not recover): %s",
                 f->name, diff);
    }
    th_snapshot_free(&sn);

    open_store(t, f, "recovering open");
    close_store(t, f, "after recovery");
    expect_verify_passes(t, f, f->present, formula_value_bytes(f, f->present), &r,
                         "after recovery");
    EXPECT_FIGURE(f, r, keys, 8000);
    EXPECT_FIGURE(f, r, buckets, f->buckets);
    EXPECT_FIGURE(f, r, key_file_bytes, 294912);
    EXPECT_FIGURE(f, r, dat_file_bytes, 1298541);
    print_message("    %s after recovery: %llu keys, %llu buckets, load %.4f, %llu spill records\n",
                  f->name, (unsigned long long)r.keys, (unsigned long long)r.buckets, r.load,
                  (unsigned long long)r.spill_records_written);
}

/* ---- inserting on top of a NuDB-written store ---- */

static void insert_item(tide_store *s, const th_fixture *f, uint64_t i)
{
    uint8_t key[64], val[MAX_VALUE];
    size_t len = th_len(i, f->vmin, f->vmax);
    int rc;

    th_key(i, f->key_size, key);
    th_value(i, len, val);
    rc = tide_store_insert(s, key, val, len);
    if (rc != 0)
        fail_msg("%s: insert of new item %llu (%zu bytes): expected 0, got %d %s: %s", f->name,
                 (unsigned long long)i, len, rc, tide_strerror(rc), tide_last_error());
}

static void grow_fixture(void **state, const char *name)
{
    tstate *t = *state;
    const th_fixture *f = th_fixture_find(name);
    uint64_t first = f->present, end = f->present + NEW_ITEMS;
    tide_store_info info;
    tide_visit_stats vs;
    char path[4200];
    uint8_t key[64], val[8] = { 1 };
    long long ksize;
    int rc;

    assert_non_null(f);
    copy_fixture(t, name);
    open_store(t, f, "before inserting");
    for (uint64_t i = first; i < end; i++) {
        insert_item(t->s, f, i);
        expect_item(t->s, f, i, "right after its insert");
    }
    /* An old key is refused and keeps its value. */
    th_key(0, f->key_size, key);
    rc = tide_store_insert(t->s, key, val, sizeof val);
    if (rc != TIDE_EEXIST)
        fail_msg("%s: insert of fixture item 0 again: expected TIDE_EEXIST (%d), got %d %s",
                 f->name, TIDE_EEXIST, rc, tide_strerror(rc));
    for (uint64_t i = 0; i < end; i++) expect_item(t->s, f, i, "after inserting, before close");
    close_store(t, f, "after inserting");

    file_in(t, "nudb.log", path, sizeof path);
    if (th_exists(path)) fail_msg("%s: expected no nudb.log after a clean close, found one", f->name);

    open_store(t, f, "reopen after inserting");
    tide_store_get_info(t->s, &info);
    if (info.buckets < f->buckets)
        fail_msg("%s: expected at least the fixture's %llu buckets after inserting, got %llu",
                 f->name, (unsigned long long)f->buckets, (unsigned long long)info.buckets);
    file_in(t, "nudb.key", path, sizeof path);
    ksize = th_file_size(path);
    if (ksize != (long long)((info.buckets + 1) * f->block_size))
        fail_msg("%s: expected a key file of (%llu + 1) * %u bytes, got %lld", f->name,
                 (unsigned long long)info.buckets, f->block_size, ksize);
    for (uint64_t i = 0; i < end; i++) expect_item(t->s, f, i, "after reopen");
    for (uint64_t i = end; i < f->items; i++) expect_absent_item(t->s, f, i, "after reopen");
    expect_2000_absent_keys(t->s, f, f->items > end ? f->items : end, "after reopen");
    close_store(t, f, "after checking");

    memset(&vs, 0, sizeof vs);
    rc = tide_store_visit_io(t->dir, NULL, NULL, NULL, &vs);
    if (rc != 0)
        fail_msg("%s: visit after inserting: expected 0, got %d %s: %s", f->name, rc,
                 tide_strerror(rc), tide_last_error());
    if (vs.data_records != end)
        fail_msg("%s: visit after inserting %d items: expected %llu data records, got %llu",
                 f->name, NEW_ITEMS, (unsigned long long)end, (unsigned long long)vs.data_records);
    /* What Tide wrote on top obeys NuDB's rules. */
    {
        tide_verify_report r;
        expect_verify_passes(t, f, end, formula_value_bytes(f, end), &r, "after inserting");
        if (r.buckets != info.buckets)
            fail_msg("%s: verify after inserting: expected the %llu buckets the store reports, "
                     "got %llu", f->name, (unsigned long long)info.buckets,
                     (unsigned long long)r.buckets);
        print_message("    %s: %d items added, %llu -> %llu buckets; verify: %llu keys, spill "
                      "records %llu reachable / %llu written, %.4f reads per fetch\n", f->name,
                      NEW_ITEMS, (unsigned long long)f->buckets, (unsigned long long)info.buckets,
                      (unsigned long long)r.keys, (unsigned long long)r.spill_records_reachable,
                      (unsigned long long)r.spill_records_written, r.avg_fetch_reads);
    }
}

static void fixture_b4096_k32_takes_500_new_items_and_keeps_them_all_after_reopen(void **state)
{
    grow_fixture(state, "b4096-k32");
}

static void fixture_b512_spill_takes_500_new_items_and_keeps_them_all_after_reopen(void **state)
{
    grow_fixture(state, "b512-k32-spill");
}

static void fixture_b16384_k8_takes_500_new_items_and_keeps_them_all_after_reopen(void **state)
{
    grow_fixture(state, "b16384-k8");
}

static void fixture_crash_takes_500_new_items_after_recovery_and_keeps_them_all(void **state)
{
    grow_fixture(state, "crash-b4096");
}

/* ---- visit ---- */

static void visit_of_each_clean_fixture_counts_the_readme_records_and_value_bytes(void **state)
{
    tstate *t = *state;

    for (size_t fi = 0; fi < th_fixture_count; fi++) {
        const th_fixture *f = &th_fixtures[fi];
        tide_visit_stats vs;
        int rc;

        if (f->has_log) continue;
        copy_fixture(t, f->name);
        memset(&vs, 0, sizeof vs);
        rc = tide_store_visit_io(t->dir, NULL, NULL, NULL, &vs);
        if (rc != 0)
            fail_msg("%s: visit: expected 0, got %d %s: %s", f->name, rc, tide_strerror(rc),
                     tide_last_error());
        if (vs.data_records != f->items || vs.value_bytes != f->value_bytes ||
            vs.file_bytes != f->dat_file_bytes)
            fail_msg("%s: visit: expected %llu records, %llu value bytes, %llu file bytes; "
                     "got %llu, %llu, %llu", f->name, (unsigned long long)f->items,
                     (unsigned long long)f->value_bytes, (unsigned long long)f->dat_file_bytes,
                     (unsigned long long)vs.data_records, (unsigned long long)vs.value_bytes,
                     (unsigned long long)vs.file_bytes);
        if (strcmp(f->name, "b512-k32-spill") == 0 && vs.spill_records != 126)
            fail_msg("%s: visit: expected 126 spill records written (README), got %llu",
                     f->name, (unsigned long long)vs.spill_records);
        if (strcmp(f->name, "b512-k32-spill") != 0 && vs.spill_records != 0)
            fail_msg("%s: visit: expected no spill records, got %llu", f->name,
                     (unsigned long long)vs.spill_records);
        th_rmrf(t->dir);
        t->dir[0] = '\0';
    }
}

/* ---- the crash fixture ---- */

/* Number of complete records in the crash fixture's log, and (when `key`
 * is non-NULL) a check that each recorded bucket is now in the key file. */
static uint64_t log_records(const tstate *t, const th_fixture *f, const uint8_t *key, size_t klen)
{
    char path[4200];
    uint8_t *log = NULL;
    size_t len, off = TIDE_LOG_HEADER_SIZE;
    uint64_t n = 0;

    snprintf(path, sizeof path, "%s/%s/nudb.log", th_fixture_root(), f->name);
    if (th_read_file(path, &log, &len) != 0) fail_msg("cannot read %s", path);
    while (off + 8 + TIDE_BUCKET_HEADER_SIZE <= len) {
        uint64_t index = ti_get64(log + off);
        unsigned count = ti_fmt_bucket_count(log + off + 8);
        size_t bytes = ti_fmt_bucket_bytes(count);

        if (off + 8 + bytes > len) break;   /* a partial last record ends the list */
        if (key != NULL) {
            const uint8_t *blk = key + (index + 1) * f->block_size;
            if ((index + 2) * f->block_size > klen) {
                free(log);
                fail_msg("%s: log record %llu names bucket %llu, past the recovered key file",
                         f->name, (unsigned long long)n, (unsigned long long)index);
            }
            if (memcmp(blk, log + off + 8, bytes) != 0) {
                free(log);
                fail_msg("%s: after recovery, bucket %llu differs from its pre-image in log record %llu",
                         f->name, (unsigned long long)index, (unsigned long long)n);
            }
            for (size_t i = bytes; i < f->block_size; i++)
                if (blk[i] != 0) {
                    free(log);
                    fail_msg("%s: after recovery, bucket %llu has non-zero byte %zu past its entries",
                             f->name, (unsigned long long)index, i);
                }
        }
        off += 8 + bytes;
        n++;
    }
    (void)t;
    free(log);
    return n;
}

static void expect_size(const tstate *t, const th_fixture *f, const char *file, long long want,
                        const char *when)
{
    char path[4200];
    long long got = th_file_size(file_in(t, file, path, sizeof path));

    if (got != want)
        fail_msg("%s (%s): %s: expected %lld bytes, got %lld%s", f->name, when, file, want, got,
                 got < 0 ? " (missing)" : "");
}

static void fixture_crash_is_reported_as_needing_recovery_and_refused_read_only(void **state)
{
    tstate *t = *state;
    const th_fixture *f = th_fixture_find("crash-b4096");
    tide_store_opts o;
    tide_store_info info;
    tide_store *ro = NULL;
    int rc;

    copy_fixture(t, f->name);
    memset(&info, 0, sizeof info);
    rc = tide_store_inspect(t->dir, NULL, &info);
    if (rc != 0)
        fail_msg("%s: inspect before recovery: expected 0, got %d %s: %s", f->name, rc,
                 tide_strerror(rc), tide_last_error());
    if (!info.needs_recovery || info.log_file_bytes != 145198 || info.key_file_bytes != 438272 ||
        info.dat_file_bytes != 1953908)
        fail_msg("%s: inspect before recovery: expected needs_recovery 1, log 145198 B, key 438272 B, "
                 "dat 1953908 B; got %d, %llu, %llu, %llu", f->name, info.needs_recovery,
                 (unsigned long long)info.log_file_bytes, (unsigned long long)info.key_file_bytes,
                 (unsigned long long)info.dat_file_bytes);

    th_store_opts(&o);
    o.read_only = 1;
    rc = tide_store_open(&ro, t->dir, &o);
    if (rc != TIDE_EBUSY) {
        if (rc == 0) tide_store_close(ro);
        fail_msg("%s: read-only open of a store that needs recovery: expected TIDE_EBUSY (%d), "
                 "got %d %s", f->name, TIDE_EBUSY, rc, tide_strerror(rc));
    }
    expect_size(t, f, "nudb.log", 145198, "after inspect and a read-only open");
    expect_size(t, f, "nudb.key", 438272, "after inspect and a read-only open");
    expect_size(t, f, "nudb.dat", 1953908, "after inspect and a read-only open");
}

static void fixture_crash_opens_through_recovery_to_exactly_items_0_to_7999(void **state)
{
    tstate *t = *state;
    const th_fixture *f = th_fixture_find("crash-b4096");
    tide_visit_stats vs;
    uint64_t value_bytes = 0;
    int rc;

    /* Open recovers; then the info (71 buckets, key 294912 B, dat 1298541 B,
     * no recovery needed), items 0..7999, the absence of 8000..11999 and of
     * 2000 more keys; close deletes the log. */
    copy_fixture(t, f->name);
    open_store(t, f, "recovering open");
    expect_size(t, f, "nudb.key", 294912, "right after recovery");
    expect_size(t, f, "nudb.dat", 1298541, "right after recovery");
    expect_info_matches_readme(t->s, f, "right after recovery");
    for (uint64_t i = 0; i < f->present; i++) expect_item(t->s, f, i, "after recovery");
    for (uint64_t i = f->present; i < f->items; i++) expect_absent_item(t->s, f, i, "after recovery");
    expect_2000_absent_keys(t->s, f, f->items, "after recovery");
    close_store(t, f, "after recovery");
    {
        char path[4200];
        if (th_exists(file_in(t, "nudb.log", path, sizeof path)))
            fail_msg("%s: expected nudb.log to be gone after recovery and close, it is still there",
                     f->name);
    }
    expect_size(t, f, "nudb.key", 294912, "after close");
    expect_size(t, f, "nudb.dat", 1298541, "after close");

    for (uint64_t i = 0; i < f->present; i++) value_bytes += th_len(i, f->vmin, f->vmax);
    memset(&vs, 0, sizeof vs);
    rc = tide_store_visit_io(t->dir, NULL, NULL, NULL, &vs);
    if (rc != 0 || vs.data_records != f->present || vs.value_bytes != value_bytes)
        fail_msg("%s: visit after recovery: expected 0, %llu records, %llu value bytes; got %d, %llu, %llu",
                 f->name, (unsigned long long)f->present, (unsigned long long)value_bytes, rc,
                 (unsigned long long)vs.data_records, (unsigned long long)vs.value_bytes);
}

static void fixture_crash_recover_reports_the_buckets_restored_and_the_truncations(void **state)
{
    tstate *t = *state;
    const th_fixture *f = th_fixture_find("crash-b4096");
    tide_recover_report rep;
    uint64_t want_restored;
    uint8_t *key = NULL;
    size_t klen;
    char path[4200];
    int rc;

    copy_fixture(t, f->name);
    want_restored = log_records(t, f, NULL, 0);
    memset(&rep, 0xEE, sizeof rep);
    rc = tide_store_recover_io(t->dir, NULL, &rep);
    if (rc != 0)
        fail_msg("%s: recover: expected 0, got %d %s: %s", f->name, rc, tide_strerror(rc),
                 tide_last_error());
    print_message("    %s: recover restored %llu buckets, dat %llu -> %llu, key %llu -> %llu\n",
                  f->name, (unsigned long long)rep.buckets_restored,
                  (unsigned long long)rep.dat_truncated_from, (unsigned long long)rep.dat_truncated_to,
                  (unsigned long long)rep.key_truncated_from, (unsigned long long)rep.key_truncated_to);
    if (rep.had_log != 1 || rep.log_was_partial != 0 || rep.rebuild_interrupted != 0)
        fail_msg("%s: recover report: expected had_log 1, log_was_partial 0, rebuild_interrupted 0; "
                 "got %d, %d, %d", f->name, rep.had_log, rep.log_was_partial, rep.rebuild_interrupted);
    if (rep.buckets_restored == 0 || rep.buckets_restored != want_restored)
        fail_msg("%s: recover report: expected %llu buckets restored (the log's complete records), got %llu",
                 f->name, (unsigned long long)want_restored, (unsigned long long)rep.buckets_restored);
    if (rep.dat_truncated_from != 1953908 || rep.dat_truncated_to != 1298541)
        fail_msg("%s: recover report: expected nudb.dat truncated 1953908 -> 1298541, got %llu -> %llu",
                 f->name, (unsigned long long)rep.dat_truncated_from,
                 (unsigned long long)rep.dat_truncated_to);
    if (rep.key_truncated_from != 438272 || rep.key_truncated_to != 294912)
        fail_msg("%s: recover report: expected nudb.key truncated 438272 -> 294912, got %llu -> %llu",
                 f->name, (unsigned long long)rep.key_truncated_from,
                 (unsigned long long)rep.key_truncated_to);
    if (th_exists(file_in(t, "nudb.log", path, sizeof path)))
        fail_msg("%s: expected recover to delete nudb.log, it is still there", f->name);
    expect_size(t, f, "nudb.key", 294912, "after recover");
    expect_size(t, f, "nudb.dat", 1298541, "after recover");

    /* Every pre-image in the log is back in the key file, zero-padded. */
    if (th_read_file(file_in(t, "nudb.key", path, sizeof path), &key, &klen) != 0)
        fail_msg("%s: cannot read %s", f->name, path);
    log_records(t, f, key, klen);
    free(key);

    /* A second recover has nothing to do. */
    memset(&rep, 0xEE, sizeof rep);
    rc = tide_store_recover_io(t->dir, NULL, &rep);
    if (rc != 0 || rep.had_log != 0 || rep.buckets_restored != 0)
        fail_msg("%s: second recover: expected 0 with had_log 0 and 0 buckets restored; got %d, %d, %llu",
                 f->name, rc, rep.had_log, (unsigned long long)rep.buckets_restored);

    open_store(t, f, "after recover");
    expect_info_matches_readme(t->s, f, "after recover");
    for (uint64_t i = 0; i < f->present; i++) expect_item(t->s, f, i, "after recover");
    for (uint64_t i = f->present; i < f->items; i++) expect_absent_item(t->s, f, i, "after recover");
    close_store(t, f, "after recover");
}

static void recover_deletes_a_log_shorter_than_its_header_and_changes_nothing_else(void **state)
{
    tstate *t = *state;
    const th_fixture *f = th_fixture_find("b4096-k32");
    tide_recover_report rep;
    uint8_t junk[30];
    char path[4200];
    int rc;

    copy_fixture(t, f->name);
    memset(junk, 0x5A, sizeof junk);
    memcpy(junk, "nudb.log", 8);
    if (th_write_file(file_in(t, "nudb.log", path, sizeof path), junk, sizeof junk) != 0)
        fail_msg("cannot write %s", path);
    memset(&rep, 0, sizeof rep);
    rc = tide_store_recover_io(t->dir, NULL, &rep);
    if (rc != 0 || rep.log_was_partial != 1)
        fail_msg("%s with a 30-byte nudb.log: recover: expected 0 and log_was_partial 1, got %d (%s) and %d",
                 f->name, rc, rc ? tide_last_error() : "ok", rep.log_was_partial);
    if (th_exists(path)) fail_msg("%s: expected the 30-byte nudb.log to be deleted, it is still there", f->name);
    expect_size(t, f, "nudb.key", (long long)f->key_file_bytes, "after a partial-log recover");
    expect_size(t, f, "nudb.dat", (long long)f->dat_file_bytes, "after a partial-log recover");

    /* An empty log is a no-op too, and open goes through it. */
    if (th_write_file(path, junk, 0) != 0) fail_msg("cannot write %s", path);
    rc = tide_store_recover_io(t->dir, NULL, NULL);
    if (rc != 0) fail_msg("%s with an empty nudb.log: recover: expected 0, got %d (%s)", f->name,
                          rc, tide_last_error());
    if (th_write_file(path, junk, 0) != 0) fail_msg("cannot write %s", path);
    open_store(t, f, "with an empty nudb.log");
    expect_info_matches_readme(t->s, f, "opened with an empty nudb.log");
    for (uint64_t i = 0; i < f->items; i++) expect_item(t->s, f, i, "opened with an empty nudb.log");
    close_store(t, f, "opened with an empty nudb.log");
}

#define T(f) cmocka_unit_test_setup_teardown(f, th_store_setup_bare, th_store_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(fixture_b4096_k32_opens_and_fetches_every_item_byte_for_byte),
        T(fixture_b512_spill_fetches_every_item_through_its_spill_chains),
        T(fixture_b16384_k8_opens_and_fetches_every_item_byte_for_byte),
        T(visit_of_each_clean_fixture_counts_the_readme_records_and_value_bytes),
        T(verify_of_fixture_b4096_k32_gives_nudbs_figures),
        T(verify_of_fixture_b512_spill_gives_nudbs_spills_waste_and_fetch_reads),
        T(verify_of_fixture_b16384_k8_gives_nudbs_figures),
        T(fixture_crash_is_reported_as_needing_recovery_and_refused_read_only),
        T(fixture_crash_is_refused_by_verify_until_recovered_then_verifies_8000_keys),
        T(fixture_crash_opens_through_recovery_to_exactly_items_0_to_7999),
        T(fixture_crash_recover_reports_the_buckets_restored_and_the_truncations),
        T(recover_deletes_a_log_shorter_than_its_header_and_changes_nothing_else),
        T(fixture_b4096_k32_takes_500_new_items_and_keeps_them_all_after_reopen),
        T(fixture_b512_spill_takes_500_new_items_and_keeps_them_all_after_reopen),
        T(fixture_b16384_k8_takes_500_new_items_and_keeps_them_all_after_reopen),
        T(fixture_crash_takes_500_new_items_after_recovery_and_keeps_them_all),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
