/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_keymap.c: lookups through the mapped key file
 * (src/store/keymap.c) against lookups with pread (opts.pread).
 *
 *   - Every fixture of tests/fixtures/nudb, opened twice read-only (one
 *     handle mapped, one with pread): every item, 2000 keys past the
 *     fixture's count and 2000 random keys give the same code, length and
 *     bytes both ways, fetch and contains alike; the items present are
 *     found with value(i). The counters say each handle took its path: the
 *     mapped one searched every bucket in place (no bucket pread), the
 *     other read every bucket with pread.
 *   - The simulated file system maps (io_sim_map.c): a store on it with
 *     the map asked for views every bucket (no bucket pread) and gives
 *     what a pread handle gives, key for key.
 *   - Hash ties written by hand into a store's files: key 0's bucket
 *     given 2 and 10 entries of its 48-bit hash (the others point at other
 *     records; 10 is past the mapped probe's 8, so it copies the bucket),
 *     and key 0's own entry moved into a spill record behind more ties:
 *     mapped and pread give the same for every key, key 0 its value.
 *   - One thread inserts (commits every 5 ms in a 64 KiB pool, so the key
 *     file grows and buckets split hundreds of times) while two threads
 *     fetch every key inserted so far, sweep after sweep: no false miss,
 *     no wrong value (both counted, both 0), the map followed the file to
 *     its end, and the readers went through it.
 *
 *   - The same while every 4th sync of nudb.dat fails (12 times): each
 *     rollback cuts nudb.key under the map; the readers see no false miss,
 *     wrong value or error, and do not fault (a SIGBUS would end the test).
 *
 *   - 40 threads (more than the counters' 32 slots) fetch 500 keys each:
 *     the fetch counter and the map's lookup counter add up exactly.
 *
 *   - ti_fmt_bucket_seek (the search from the guessed place, which the
 *     mapped lookups use) gives ti_fmt_bucket_lower_bound's index on
 *     buckets of 0 to 300 entries, even, skewed and repeated hashes.
 *
 *   - The map itself (keymap.c), on a file of the test's own: past a map
 *     that can grow no more (its reservation reached, or an mmap refused)
 *     a view returns NULL without taking the growth mutex, however many
 *     views ask; the bytes below it are still viewed, and the map grew up
 *     to the reservation first. The mapped figure is never more than the
 *     file's size now (a rollback's truncate). The resident figure is the
 *     pages this process mapped in: a 64 MiB file written with pwrite (all
 *     of it in the page cache) and mapped, two pages touched, gives two
 *     pages to a few, not 64 MiB, and the scan runs outside the growth
 *     mutex. A MAP_FIXED that fails (a procfs file) gives the reservation
 *     past it back at once. The sim's map shows a write at once, zeroes
 *     what a truncate cut from its last page, makes the pages wholly past
 *     the end unreadable, and readable again when the file grows back.
 *
 * The data map (nudb.dat's records and spill records read in place,
 * lookup.c "Reading nudb.dat"):
 *   - On every fixture and on the sim, the mapped handle reads every record
 *     in the data map (no pread) and the pread handle with pread only, and
 *     both give the same answers (the fixture test above).
 *   - The rollback test, and its twin with the deferred index (a failed
 *     sync of an append cuts nudb.dat too), count the cuts of nudb.dat and
 *     check each against dat_stable at the moment of the cut: never below
 *     it (a cut below is what would SIGBUS a reader of the map).
 *   - Every map refused at open: the lookups read nudb.dat with pread and
 *     give every value; a map that can grow no more (later mmaps refused):
 *     the records past it are read with pread, those below in the map.
 *   - Values of up to three pages, over many commits with a reader fetching
 *     between them (records span the map's pages and its growth): the map
 *     and pread give the same bytes.
 *
 * Threads never call cmocka; they count, and the main thread fails.
 *
 * Three binaries share this file, so that none runs long on a loaded
 * machine: the two rollback tests, whose twelve failed syncs each wait a
 * second for the commit's retry, run in test_store_keymap_rollbacks
 * (KEYMAP_PART 1, nudb.key cut) and test_store_keymap_deferred (part 2,
 * nudb.dat cut under the deferred index), and test_store_keymap (part 0,
 * the default) runs every other test. Each test is in exactly one part
 * (PARTS in main).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <unistd.h>
#include <errno.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <cmocka.h>

#include "store/full.h"
#include "io/io_sim.h"
#include "store/format.h"
#include "store/keymap.h"
#include "store/store_impl.h"
#include "tide/log.h"
#include "util/clock.h"
#include "util/err.h"
#include "expect.h"
#include "helpers.h"

#define MAX_VALUE (3 * 4096 + 100)   /* the large-value test's */
#define EXTRA_KEYS 2000

typedef th_store_env tstate;

/* What one lookup gave: code, length, a hash of the bytes, contains. */
typedef struct outcome {
    int rc, contains;
    size_t len;
    uint64_t sum;
} outcome;

static uint64_t sum_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static outcome look(tide_store *s, const uint8_t *key)
{
    outcome o = { 0, 0, 0, 0 };
    void *got = NULL;

    o.rc = tide_store_fetch(s, key, &got, &o.len);
    if (o.rc == 0) o.sum = sum_bytes(got, o.len);
    free(got);
    o.contains = tide_store_contains(s, key);
    return o;
}

/* The same key through both handles: identical outcomes, or fail. */
static outcome same_both(tide_store *mapped, tide_store *plain, const uint8_t *key,
                         const char *name, const char *what, uint64_t n)
{
    outcome a = look(mapped, key), b = look(plain, key);

    if (a.rc != b.rc || a.len != b.len || a.sum != b.sum || a.contains != b.contains)
        fail_msg("%s: %s %llu: mapped gave rc %d, %zu bytes (sum %016llx), contains %d; pread "
                 "gave rc %d, %zu bytes (sum %016llx), contains %d", name, what,
                 (unsigned long long)n, a.rc, a.len, (unsigned long long)a.sum, a.contains, b.rc,
                 b.len, (unsigned long long)b.sum, b.contains);
    return a;
}

static void open_ro(tide_store **out, const char *dir, int pread, const char *name)
{
    tide_store_opts o;
    int rc;

    th_store_opts(&o);
    o.read_only = 1;
    o.pread = pread;
    rc = tide_store_open(out, dir, &o);
    if (rc != 0) {
        *out = NULL;
        fail_msg("%s: read-only open (pread %d): expected 0, got %d %s: %s", name, pread, rc,
                 tide_strerror(rc), tide_last_error());
    }
}

/* Items 0..count+EXTRA_KEYS and EXTRA_KEYS random keys, both ways. */
static void compare_all(tide_store *mapped, tide_store *plain, const th_fixture *f)
{
    uint8_t key[64], want[MAX_VALUE];
    uint64_t total = f->items + EXTRA_KEYS, found = 0;
    th_rng r;

    for (uint64_t i = 0; i < total; i++) {
        th_key(i, f->key_size, key);
        outcome o = same_both(mapped, plain, key, f->name, "item", i);
        if (i < f->present) {
            size_t wlen = th_len(i, f->vmin, f->vmax);
            th_value(i, wlen, want);
            if (o.rc != 0 || o.len != wlen || o.sum != sum_bytes(want, wlen))
                fail_msg("%s: item %llu: expected its %zu-byte value, got rc %d, %zu bytes",
                         f->name, (unsigned long long)i, wlen, o.rc, o.len);
            found++;
        } else if (o.rc != TIDE_ENOTFOUND) {
            fail_msg("%s: item %llu (absent): expected TIDE_ENOTFOUND, got %d", f->name,
                     (unsigned long long)i, o.rc);
        }
    }
    th_rng_init(&r, 0x6b65796d6170ull);
    for (uint64_t k = 0; k < EXTRA_KEYS; k++) {
        th_rng_bytes(&r, key, f->key_size);
        same_both(mapped, plain, key, f->name, "random key", k);
    }
    print_message("    %s: %llu keys both ways, %llu found\n", f->name,
                  (unsigned long long)(total + EXTRA_KEYS), (unsigned long long)found);
}

/* The mapped handle read every `what` in the map of all `file_bytes` of
 * the `file` file (views, no pread); the pread handle as many with pread
 * and no map. */
static void expect_reads(const char *name, const char *what, const char *file, const uint64_t *views,
                         const uint64_t *preads, uint64_t mapped, uint64_t file_bytes,
                         const uint64_t *p_views, const uint64_t *p_preads, uint64_t p_mapped)
{
    if (*views == 0 || *preads != 0 || mapped != file_bytes)
        fail_msg("%s: the mapped handle: expected every %s read in the map of all %llu %s-file bytes, "
                 "got %llu views, %llu preads, %llu bytes mapped", name, what,
                 (unsigned long long)file_bytes, file, (unsigned long long)*views,
                 (unsigned long long)*preads, (unsigned long long)mapped);
    if (*p_views != 0 || *p_preads != *views || p_mapped != 0)
        fail_msg("%s: the pread handle: expected %llu %s preads and no %s map, got %llu preads, "
                 "%llu views, %llu bytes mapped", name, (unsigned long long)*views, what, file,
                 (unsigned long long)*p_preads, (unsigned long long)*p_views, (unsigned long long)p_mapped);
}

static void fixtures_mapped_and_pread_agree(void **state)
{
    th_skip_unless_maps();
    tstate *t = *state;

    for (size_t fi = 0; fi < th_fixture_count; fi++) {
        const th_fixture *f = &th_fixtures[fi];
        tide_store_info mi, pi;
        tide_store *mapped = NULL, *plain = NULL;
        int rc;

        if (th_store_env_fixture(t, f->name) != 0) fail_msg("cannot copy fixture %s", f->name);
        if (f->has_log) {            /* recover first: a read-only open refuses to */
            if ((rc = th_store_open(&t->s, t->dir)) != 0)
                fail_msg("%s: recovering open: got %d %s", f->name, rc, tide_last_error());
            if ((rc = tide_store_close(t->s)) != 0) fail_msg("%s: close: got %d", f->name, rc);
            t->s = NULL;
        }
        open_ro(&mapped, t->dir, 0, f->name);
        t->s = mapped;
        open_ro(&plain, t->dir, 1, f->name);
        t->s2 = plain;
        compare_all(mapped, plain, f);
        tide_store_get_info(mapped, &mi);
        tide_store_get_info(plain, &pi);
        expect_reads(f->name, "bucket", "key", &mi.key_map_views, &mi.key_bucket_reads,
                     mi.key_map_bytes, mi.key_file_bytes, &pi.key_map_views, &pi.key_bucket_reads,
                     pi.key_map_bytes);
        if (f->present > 0)
            expect_reads(f->name, "record", "data", &mi.dat_map_views, &mi.dat_reads, mi.dat_map_bytes,
                         mi.dat_file_bytes, &pi.dat_map_views, &pi.dat_reads, pi.dat_map_bytes);
        tide_store_close(t->s2);
        t->s2 = NULL;
        tide_store_close(t->s);
        t->s = NULL;
        th_rmrf(t->dir);
        t->dir[0] = '\0';
    }
}

/* ---- the simulated file system ---- */

#define SIM_ITEMS 3000

static tide_store *sim_open(tide_io_sim *sim, int pread, int read_only)
{
    tide_store_opts o;
    tide_store *s = NULL;
    int rc;

    th_store_opts(&o);
    o.io = tide_io_sim_io(sim);
    o.pread = pread;
    o.read_only = read_only;
    o.burst_bytes = 64 << 10;
    rc = tide_store_open(&s, "/db", &o);
    if (rc != 0) fail_msg("sim: open (pread %d): got %d %s: %s", pread, rc, tide_strerror(rc),
                          tide_last_error());
    return s;
}

/* Two read-only handles on the sim, the map asked for and not. */
static void sim_compare(tide_io_sim *sim)
{
    th_fixture f = { .name = "sim", .key_size = 32, .items = SIM_ITEMS, .present = SIM_ITEMS,
                     .vmin = 1, .vmax = 300 };
    tide_store *a = sim_open(sim, 0, 1), *b = sim_open(sim, 1, 1);
    tide_store_info ai, bi;

    compare_all(a, b, &f);
    tide_store_get_info(a, &ai);
    tide_store_get_info(b, &bi);
    tide_store_close(a);
    tide_store_close(b);
    if (ai.key_map_bytes == 0 || ai.key_map_views == 0 || ai.key_bucket_reads != 0 || bi.key_bucket_reads == 0)
        fail_msg("sim: expected the mapped handle to view every bucket (no pread) and pread's to pread, got "
                 "%llu views, %llu preads, %llu bytes mapped; pread: %llu preads",
                 (unsigned long long)ai.key_map_views, (unsigned long long)ai.key_bucket_reads,
                 (unsigned long long)ai.key_map_bytes, (unsigned long long)bi.key_bucket_reads);
    if (ai.dat_map_bytes != ai.dat_file_bytes || ai.dat_map_views == 0 || ai.dat_reads != 0 ||
        bi.dat_map_views != 0 || bi.dat_reads != ai.dat_map_views)
        fail_msg("sim: expected the mapped handle to read every record in the data map of all %llu "
                 "bytes and pread's with pread, got %llu views, %llu preads, %llu bytes mapped; "
                 "pread: %llu preads, %llu views", (unsigned long long)ai.dat_file_bytes,
                 (unsigned long long)ai.dat_map_views, (unsigned long long)ai.dat_reads,
                 (unsigned long long)ai.dat_map_bytes, (unsigned long long)bi.dat_reads,
                 (unsigned long long)bi.dat_map_views);
}

static void sim_maps_like_posix(void **state)
{
    tide_io_sim *sim = NULL;
    tide_store_create_opts co;
    tide_store *s;
    int rc;

    (void)state;
    if (tide_io_sim_create(&sim) != 0 || tide_io_sim_mkdir(sim, "/db") != 0) fail_msg("sim: create");
    tide_store_create_opts_init(&co);
    co.key_size = 32;
    co.io = tide_io_sim_io(sim);
    if ((rc = tide_store_create("/db", &co)) != 0) fail_msg("sim: store create: got %d", rc);
    s = sim_open(sim, 0, 0);
    if ((rc = th_store_insert_items(s, 0, SIM_ITEMS, 32, 1, 300, NULL)) != 0)
        fail_msg("sim: insert: got %d %s", rc, tide_last_error());
    if ((rc = tide_store_close(s)) != 0) fail_msg("sim: close: got %d", rc);
    sim_compare(sim);
    tide_io_sim_destroy(sim);
}

/* ---- hash ties, written by hand ---- */

#define TIE_ITEMS 300

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *b;
    long n = -1;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0) fail_msg("cannot read %s", path);
    rewind(f);
    if ((b = malloc((size_t)n + 1)) == NULL || fread(b, 1, (size_t)n, f) != (size_t)n) fail_msg("read %s", path);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void spit(const char *path, const uint8_t *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(b, 1, len, f) != len || fclose(f) != 0) fail_msg("cannot write %s", path);
}

static int by_hash(const void *a, const void *b)
{
    const tide_entry *x = a, *y = b;
    return x->hash < y->hash ? -1 : x->hash > y->hash;
}

/* Rewrite key 0's bucket: `main_ties` entries of other records given key
 * 0's 48-bit hash ahead of its own (qsort of equal hashes keeps no order,
 * so the ties are laid out by hand after the sort), and with `spill_ties`
 * > 0 key 0's own entry moved, behind that many more ties, into a spill
 * record appended to nudb.dat. */
static void write_ties(const char *dir, const uint8_t *key0, size_t klen, const uint8_t *dat0, size_t dlen,
                       unsigned main_ties, unsigned spill_ties)
{
    char kp[sizeof ((tstate *)0)->dir + 16], dp[sizeof ((tstate *)0)->dir + 16];
    uint8_t *key = malloc(klen), *dat = malloc(dlen + 8 + 4096 * 4);
    tide_key_header kh;
    tide_entry e[512], own = { 0 }, other[32];
    uint8_t k0[32];
    unsigned n = 0, nother = 0, count, cap;

    snprintf(kp, sizeof kp, "%s/nudb.key", dir);
    snprintf(dp, sizeof dp, "%s/nudb.dat", dir);
    memcpy(key, key0, klen);
    memcpy(dat, dat0, dlen);
    if (ti_fmt_decode_key_header(key, &kh, "nudb.key") != 0) fail_msg("key header: %s", tide_last_error());
    cap = ti_fmt_capacity(kh.block_size);
    th_key(0, 32, k0);
    uint64_t h = ti_fmt_hash48(k0, 32, kh.salt), buckets = klen / kh.block_size - 1;
    uint64_t index = ti_fmt_bucket_index(h, buckets);
    uint8_t *b = key + (index + 1) * kh.block_size;
    /* Other records to point the ties at: entries of other buckets. */
    for (uint64_t j = 0; j < buckets && nother < 32; j++) {
        const uint8_t *o = key + (j + 1) * kh.block_size;
        for (unsigned i = 0; j != index && i < ti_fmt_bucket_count(o) && nother < 32; i++)
            ti_fmt_bucket_entry(o, i, &other[nother++]);
    }
    if (nother < main_ties + spill_ties) fail_msg("only %u other records", nother);
    count = ti_fmt_bucket_count(b);
    if (ti_fmt_bucket_spill(b) != 0) fail_msg("key 0's bucket spills already");
    for (unsigned i = 0; i < count; i++) {
        tide_entry x;
        ti_fmt_bucket_entry(b, i, &x);
        if (x.hash == h) own = x;
        else e[n++] = x;
    }
    if (own.offset == 0) fail_msg("key 0's entry not in its bucket");
    qsort(e, n, sizeof e[0], by_hash);
    unsigned at = 0;
    while (at < n && e[at].hash < h) at++;
    unsigned extra = main_ties + (spill_ties ? 0 : 1);
    if (n + extra > cap) fail_msg("bucket too full for the ties");
    memmove(e + at + extra, e + at, (n - at) * sizeof e[0]);
    for (unsigned i = 0; i < main_ties; i++) e[at + i] = (tide_entry){ other[i].offset, other[i].size, h };
    if (!spill_ties) e[at + main_ties] = own;
    n += extra;
    uint64_t spill = 0;
    if (spill_ties) {
        tide_entry se[32];
        size_t full = ti_fmt_bucket_bytes(cap);
        for (unsigned i = 0; i < spill_ties; i++)
            se[i] = (tide_entry){ other[main_ties + i].offset, other[main_ties + i].size, h };
        se[spill_ties] = own;
        ti_put48(dat + dlen, 0);
        ti_put16(dat + dlen + 6, full);
        ti_fmt_encode_bucket(dat + dlen + TIDE_SPILL_HEADER, full, se, spill_ties + 1, 0);
        spill = dlen + TIDE_SPILL_HEADER;
        dlen += TIDE_SPILL_HEADER + full;
    }
    ti_fmt_encode_bucket(b, kh.block_size, e, n, spill);
    spit(kp, key, klen);
    spit(dp, dat, dlen);
    free(key);
    free(dat);
}

/* Several entries share key 0's 48-bit hash, the first ones other
 * records': 2 in the bucket; 9 (past PROBE_MAX, so the mapped lookup copies
 * the bucket); 3 in the bucket with key 0's own entry in a spill record
 * behind 2 more; 9 with it in the spill. Mapped and pread handles give
 * the same answer for every key and find value(0) for key 0. */
static void hash_ties_are_searched_alike_mapped_and_not(void **state)
{
    tstate *t = *state;
    static const unsigned cases[][2] = { { 1, 0 }, { 9, 0 }, { 3, 2 }, { 9, 2 } };
    char kp[sizeof ((tstate *)0)->dir + 16], dp[sizeof ((tstate *)0)->dir + 16];
    size_t klen, dlen;
    tide_store_create_opts co;
    int rc;

    if (th_mkdtemp(t->dir, sizeof t->dir) != 0) fail_msg("cannot make a temporary directory");
    tide_store_create_opts_init(&co);
    co.key_size = 32;
    if ((rc = tide_store_create(t->dir, &co)) != 0) fail_msg("create: got %d", rc);
    if ((rc = tide_store_open(&t->s, t->dir, NULL)) != 0) fail_msg("open: got %d", rc);
    if ((rc = th_store_insert_items(t->s, 0, TIE_ITEMS, 32, 1, 300, NULL)) != 0) fail_msg("insert: got %d", rc);
    if ((rc = tide_store_close(t->s)) != 0) fail_msg("close: got %d", rc);
    t->s = NULL;
    snprintf(kp, sizeof kp, "%s/nudb.key", t->dir);
    snprintf(dp, sizeof dp, "%s/nudb.dat", t->dir);
    uint8_t *key0 = slurp(kp, &klen), *dat0 = slurp(dp, &dlen);
    th_fixture f = { .name = "ties", .key_size = 32, .items = TIE_ITEMS, .present = TIE_ITEMS,
                     .vmin = 1, .vmax = 300 };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tide_store *a, *b;
        uint8_t k0[32];
        write_ties(t->dir, key0, klen, dat0, dlen, cases[c][0], cases[c][1]);
        open_ro(&a, t->dir, 0, "ties mapped");
        open_ro(&b, t->dir, 1, "ties pread");
        th_key(0, 32, k0);
        outcome o = same_both(a, b, k0, "ties", "key", 0);
        if (o.rc != 0 || o.len != th_len(0, 1, 300))
            fail_msg("case %zu (%u ties, %u in the spill): key 0 got %d, %zu bytes", c, cases[c][0] + cases[c][1],
                     cases[c][1], o.rc, o.len);
        compare_all(a, b, &f);
        tide_store_close(a);
        tide_store_close(b);
    }
    free(key0);
    free(dat0);
}

/* Fetch items [0, to) of the formula (values of 1..vmax bytes); fails naming
 * `what` at the first one wrong. */
static void read_items(tide_store *s, uint64_t to, unsigned vmax, const char *what)
{
    char why[256];
    if (th_store_expect_items(s, 0, to, 32, 1, vmax, why, sizeof why) != 0)
        fail_msg("%s: %s", what, why);
}

/* ---- fetches of every key inserted so far, while the file grows ---- */

#define GROW_ITEMS 40000
#define GROW_READERS 2

typedef struct grow_shared {
    tide_store *s;
    atomic_ullong acked;
    atomic_int done;
    atomic_ullong misses, wrong, errors, fetches, sweeps;
    atomic_int first_error;         /* the first fetch error's code, and its text */
    char first_error_text[512];
    int insert_rc;
    int retry;                  /* a refused insert is tried again (rollbacks under way) */
} grow_shared;

static uint64_t g_grow_lag;            /* grow_run's index_lag_bytes */
static tide_store *_Atomic g_grow_store; /* grow_run's store, for the wrapped io */

static void *grow_writer(void *arg)
{
    grow_shared *g = arg;
    uint8_t key[32], val[200];

    for (uint64_t i = 0; i < GROW_ITEMS; i++) {
        size_t len = th_len(i, 1, 200);
        th_key(i, 32, key);
        th_value(i, len, val);
        if ((g->insert_rc = tide_store_insert(g->s, key, val, len)) != 0 && g->retry
            && g->insert_rc != TIDE_EEXIST) {
            tide_clock_sleep_us(2000);
            i--;
            continue;
        }
        if (g->insert_rc == TIDE_EEXIST && g->retry) g->insert_rc = 0;   /* in before the refusal */
        if (g->insert_rc != 0) break;
        atomic_store_explicit(&g->acked, i + 1, memory_order_release);
    }
    atomic_store_explicit(&g->done, 1, memory_order_release);
    return NULL;
}

static void *grow_reader(void *arg)
{
    grow_shared *g = arg;
    uint8_t key[32], want[200];

    for (;;) {
        int last = atomic_load_explicit(&g->done, memory_order_acquire);
        uint64_t n = atomic_load_explicit(&g->acked, memory_order_acquire);
        if (n == 0 && !last) {
            tide_clock_sleep_us(100);
            continue;
        }
        for (uint64_t i = 0; i < n; i++) {
            size_t wlen = th_len(i, 1, 200), len = 0;
            void *got = NULL;
            int rc;
            th_key(i, 32, key);
            rc = tide_store_fetch(g->s, key, &got, &len);
            atomic_fetch_add(&g->fetches, 1);
            if (rc == TIDE_ENOTFOUND) atomic_fetch_add(&g->misses, 1);
            else if (rc != 0) {
                int none = 0;
                if (atomic_compare_exchange_strong(&g->first_error, &none, rc))
                    snprintf(g->first_error_text, sizeof g->first_error_text, "%s", tide_last_error());
                atomic_fetch_add(&g->errors, 1);
            }
            else {
                th_value(i, wlen, want);
                if (len != wlen || memcmp(got, want, wlen) != 0) atomic_fetch_add(&g->wrong, 1);
            }
            free(got);
        }
        atomic_fetch_add(&g->sweeps, 1);
        if (last) break;
    }
    return NULL;
}

/* A store in t->dir on `io` (NULL: POSIX), a writer of GROW_ITEMS (trying
 * a refused insert again when `retry`) and GROW_READERS readers of every
 * acknowledged key; then synced, its figures in *info. Fails unless every
 * item went in and the readers saw no false miss, wrong value or error. */
static void grow_run(tstate *t, tide_io *io, size_t burst, int retry, tide_store_info *info)
{
    tide_store_create_opts co;
    tide_store_opts o;
    grow_shared g;
    pthread_t w, rd[GROW_READERS];
    int rc;

    if (th_mkdtemp(t->dir, sizeof t->dir) != 0) fail_msg("cannot make a temporary directory");
    tide_store_create_opts_init(&co);
    co.key_size = 32;
    if ((rc = tide_store_create(t->dir, &co)) != 0) fail_msg("create: got %d", rc);
    th_store_opts(&o);
    if (io) o.io = io;
    o.commit_interval_ms = 5;
    o.burst_bytes = burst;
    o.index_lag_bytes = g_grow_lag;
    if ((rc = tide_store_open(&t->s, t->dir, &o)) != 0) fail_msg("open: got %d %s", rc, tide_last_error());
    g_grow_store = t->s;
    memset(&g, 0, sizeof g);
    g.s = t->s;
    g.retry = retry;
    for (int k = 0; k < GROW_READERS; k++)
        if (pthread_create(&rd[k], NULL, grow_reader, &g) != 0) fail_msg("pthread_create failed");
    if (pthread_create(&w, NULL, grow_writer, &g) != 0) fail_msg("pthread_create failed");
    pthread_join(w, NULL);
    for (int k = 0; k < GROW_READERS; k++) pthread_join(rd[k], NULL);
    if ((rc = tide_store_sync(t->s)) != 0) fail_msg("sync: got %d %s", rc, tide_last_error());
    g_grow_store = NULL;
    tide_store_get_info(t->s, info);
    print_message("    %llu inserts, %llu commits, %llu buckets; %llu fetches in %llu sweeps: "
                  "%llu false misses, %llu wrong values, %llu errors; %llu map views, %llu "
                  "bucket preads\n", (unsigned long long)atomic_load(&g.acked),
                  (unsigned long long)info->commits, (unsigned long long)info->buckets,
                  (unsigned long long)atomic_load(&g.fetches), (unsigned long long)atomic_load(&g.sweeps),
                  (unsigned long long)atomic_load(&g.misses), (unsigned long long)atomic_load(&g.wrong),
                  (unsigned long long)atomic_load(&g.errors), (unsigned long long)info->key_map_views,
                  (unsigned long long)info->key_bucket_reads);
    if (g.insert_rc != 0 || atomic_load(&g.acked) != GROW_ITEMS)
        fail_msg("writer: insert failed with %d after %llu items", g.insert_rc,
                 (unsigned long long)atomic_load(&g.acked));
    if (atomic_load(&g.misses) || atomic_load(&g.wrong) || atomic_load(&g.errors))
        fail_msg("expected no false miss, wrong value or error, got %llu, %llu, %llu (first error: %s: %s)",
                 (unsigned long long)atomic_load(&g.misses), (unsigned long long)atomic_load(&g.wrong),
                 (unsigned long long)atomic_load(&g.errors),
                 atomic_load(&g.first_error) ? tide_strerror(atomic_load(&g.first_error)) : "none",
                 g.first_error_text);
}

static void fetch_while_the_file_grows(void **state)
{
    th_skip_unless_maps();
    tstate *t = *state;
    tide_store_info info;

    grow_run(t, NULL, 64 << 10, 0, &info);
    if (info.commits < 10 || info.buckets < 100)
        fail_msg("expected the file to grow over many commits, got %llu commits, %llu buckets",
                 (unsigned long long)info.commits, (unsigned long long)info.buckets);
    /* The readers' last sweep may end before the final sync's commit
     * grows the file again; the map follows the file only as lookups find
     * it grown, so it is checked after one more sweep of every key. */
    read_items(t->s, GROW_ITEMS, 200, "every item after the last growth");
    tide_store_get_info(t->s, &info);
    if (info.key_map_views == 0 || info.key_bucket_reads != 0 || info.key_map_bytes != info.key_file_bytes)
        fail_msg("expected every lookup in the map, grown to all %llu bytes; got %llu views, %llu "
                 "preads, %llu bytes mapped", (unsigned long long)info.key_file_bytes,
                 (unsigned long long)info.key_map_views, (unsigned long long)info.key_bucket_reads,
                 (unsigned long long)info.key_map_bytes);
}

/* ---- fetches through the map while rollbacks cut nudb.key ---- */

#define RB_FAIL_MAX 12

static tide_io g_rb_io;               /* the POSIX io, nudb.dat's sync and nudb.key's truncate wrapped */
static tide_file *g_rb_dat, *g_rb_key;
static atomic_int g_rb_syncs, g_rb_fails, g_rb_shrinks, g_rb_dat_cuts, g_rb_below_stable;

static int rb_open(tide_io *io, const char *path, int flags, tide_file **out)
{
    size_t n = strlen(path);
    int rc = tide_io_posix()->open(tide_io_posix(), path, flags, out);

    (void)io;
    if (rc == 0 && (flags & TIDE_IO_WRITE) && n >= 8) {
        if (strcmp(path + n - 8, "nudb.dat") == 0) g_rb_dat = *out;
        if (strcmp(path + n - 8, "nudb.key") == 0) g_rb_key = *out;
    }
    return rc;
}

/* Every 4th sync of nudb.dat fails (the commit's step 5, after its buckets
 * are written and published), up to RB_FAIL_MAX times: each forces a
 * rollback that truncates nudb.key under the map. */
static int rb_sync(tide_file *f)
{
    if (f == g_rb_dat && atomic_fetch_add(&g_rb_syncs, 1) % 4 == 3 && atomic_load(&g_rb_fails) < RB_FAIL_MAX) {
        atomic_fetch_add(&g_rb_fails, 1);
        return tide_err_set(TIDE_EIO, "the test fails this sync of nudb.dat");
    }
    return tide_io_posix()->sync(f);
}

static int rb_truncate(tide_file *f, uint64_t size)
{
    uint64_t was = 0;
    tide_store *s = g_grow_store;

    if (f == g_rb_key && tide_io_posix()->size(f, &was) == 0 && size < was) atomic_fetch_add(&g_rb_shrinks, 1);
    if (f == g_rb_dat && tide_io_posix()->size(f, &was) == 0 && size < was) {
        atomic_fetch_add(&g_rb_dat_cuts, 1);
        /* The data map shows nudb.dat below dat_stable: a cut below it
         * could SIGBUS a reader (lookup.c "Reading nudb.dat", 1 and 2). */
        if (s && size < __atomic_load_n(&s->dat_stable, __ATOMIC_ACQUIRE)) atomic_fetch_add(&g_rb_below_stable, 1);
    }
    return tide_io_posix()->truncate(f, size);
}

/* A rollback cuts nudb.key (the buckets a failed commit added) while two
 * readers fetch every acknowledged key through the map: no false miss, no
 * wrong value, no error, and no fault (the process would die of SIGBUS had
 * a reader touched a page cut off). The shrinks are counted, so the test
 * knows the file was cut. */
static void rb_run(tstate *t, uint64_t lag, tide_store_info *info)
{
    g_rb_io = *tide_io_posix();
    g_rb_io.open = rb_open;
    g_rb_io.sync = rb_sync;
    g_rb_io.truncate = rb_truncate;
    g_rb_dat = g_rb_key = NULL;
    atomic_store(&g_rb_syncs, 0);
    atomic_store(&g_rb_fails, 0);
    atomic_store(&g_rb_shrinks, 0);
    atomic_store(&g_rb_dat_cuts, 0);
    atomic_store(&g_rb_below_stable, 0);
    g_grow_lag = lag;
    grow_run(t, &g_rb_io, 32 << 10, 1, info);
    g_grow_lag = 0;
    print_message("    %d failed syncs, %d cuts of nudb.key, %d of nudb.dat (%d below dat_stable); "
                  "%llu records read in the data map, %llu with pread\n", atomic_load(&g_rb_fails),
                  atomic_load(&g_rb_shrinks), atomic_load(&g_rb_dat_cuts), atomic_load(&g_rb_below_stable),
                  (unsigned long long)info->dat_map_views, (unsigned long long)info->dat_reads);
    if (atomic_load(&g_rb_fails) == 0 || atomic_load(&g_rb_dat_cuts) == 0)
        fail_msg("expected failed syncs and cuts of nudb.dat, got %d and %d", atomic_load(&g_rb_fails),
                 atomic_load(&g_rb_dat_cuts));
    if (atomic_load(&g_rb_below_stable) != 0)
        fail_msg("%d cuts of nudb.dat went below dat_stable (the data map's bound)",
                 atomic_load(&g_rb_below_stable));
    if (info->dat_map_views == 0) fail_msg("expected the readers to read records in the data map");
}

static void fetches_through_the_map_survive_rollbacks_that_cut_the_key_file(void **state)
{
    th_skip_unless_maps();
    tstate *t = *state;
    tide_store_info info;

    rb_run(t, 0, &info);
    if (atomic_load(&g_rb_fails) == 0 || atomic_load(&g_rb_shrinks) == 0)
        fail_msg("expected failed syncs and cuts of nudb.key, got %d and %d", atomic_load(&g_rb_fails),
                 atomic_load(&g_rb_shrinks));
    if (info.key_map_views == 0) fail_msg("expected the readers to go through the map");
}

/* The same with the deferred index: a failed sync of an append cuts
 * nudb.dat back (defer.c), a flush's rollback too. */
static void deferred_appends_that_fail_never_cut_below_the_data_map(void **state)
{
    th_skip_unless_maps();
    tstate *t = *state;
    tide_store_info info;

    rb_run(t, 1 << 20, &info);
    if (info.index_lag_bytes == 0) fail_msg("expected the store to defer its index");
}

/* ---- the per-thread counters add up ---- */

#define COUNT_THREADS 40      /* more than TI_TALLY_SLOTS: some threads share a slot */
#define COUNT_FETCHES 500

static void *count_main(void *arg)
{
    tide_store *s = arg;
    uint8_t key[32];

    for (unsigned k = 0; k < COUNT_FETCHES; k++) {
        void *got = NULL;
        size_t len = 0;
        th_key(k % 50, 32, key);
        if (tide_store_fetch(s, key, &got, &len) == 0) free(got);
    }
    return NULL;
}

static void counters_sum_every_threads_fetches(void **state)
{
    th_skip_unless_maps();
    tstate *t = *state;
    tide_store_create_opts co;
    tide_store_info before, after;
    pthread_t th[COUNT_THREADS];
    int rc;

    if (th_mkdtemp(t->dir, sizeof t->dir) != 0) fail_msg("cannot make a temporary directory");
    tide_store_create_opts_init(&co);
    co.key_size = 32;
    if ((rc = tide_store_create(t->dir, &co)) != 0) fail_msg("create: got %d", rc);
    if ((rc = th_store_open(&t->s, t->dir)) != 0) fail_msg("open: got %d", rc);
    if ((rc = th_store_insert_items(t->s, 0, 25, 32, 1, 100, NULL)) != 0) fail_msg("insert: got %d", rc);
    if ((rc = tide_store_sync(t->s)) != 0) fail_msg("sync: got %d", rc);
    tide_store_get_info(t->s, &before);
    for (int k = 0; k < COUNT_THREADS; k++)
        if (pthread_create(&th[k], NULL, count_main, t->s) != 0) fail_msg("pthread_create failed");
    for (int k = 0; k < COUNT_THREADS; k++) pthread_join(th[k], NULL);
    tide_store_get_info(t->s, &after);
    /* Each fetch is counted once; each found in no pool looks at one bucket. */
    if (after.fetches - before.fetches != (uint64_t)COUNT_THREADS * COUNT_FETCHES)
        fail_msg("expected %d fetches counted, got %llu", COUNT_THREADS * COUNT_FETCHES,
                 (unsigned long long)(after.fetches - before.fetches));
    if (after.key_map_views - before.key_map_views != (uint64_t)COUNT_THREADS * COUNT_FETCHES)
        fail_msg("expected %d bucket lookups in the map, got %llu", COUNT_THREADS * COUNT_FETCHES,
                 (unsigned long long)(after.key_map_views - before.key_map_views));
}

/* ---- the bucket search from the guess (format.c) ---- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* ti_fmt_bucket_seek against ti_fmt_bucket_lower_bound on buckets of every
 * count to 300, hashes even, skewed to a corner, or few and repeated, for
 * the hashes present, their neighbours and random ones. */
static void seek_finds_what_the_binary_search_finds(void **state)
{
    static uint8_t b[8 + 18 * 300];
    uint64_t hs[300];
    th_rng r;
    uint64_t checked = 0;

    (void)state;
    th_rng_init(&r, 0x7365656bull);
    for (unsigned count = 0; count <= 300; count++)
        for (int shape = 0; shape < 3; shape++) {
            for (unsigned i = 0; i < count; i++) {
                uint64_t v = th_rng_next(&r) & 0xffffffffffffull;
                if (shape == 1) v >>= 30;                 /* all near 0 */
                if (shape == 2) v = (v % 5) << 45;        /* five values, repeated */
                hs[i] = v;
            }
            qsort(hs, count, sizeof *hs, cmp_u64);
            memset(b, 0, sizeof b);
            for (unsigned i = 0; i < count; i++) {
                uint8_t *e = b + 8 + 18 * i;
                for (int k = 0; k < 6; k++) e[12 + k] = (uint8_t)(hs[i] >> (8 * (5 - k)));
            }
            for (unsigned q = 0; q < 3 * count + 20; q++) {
                uint64_t h = q < count ? hs[q] : q < 2 * count ? hs[q - count] + 1
                           : q < 3 * count ? hs[q - 2 * count] - (hs[q - 2 * count] > 0)
                           : th_rng_next(&r) & 0xffffffffffffull;
                h &= 0xffffffffffffull;
                unsigned want = ti_fmt_bucket_lower_bound(b, count, h);
                unsigned got = ti_fmt_bucket_seek(b, count, h);
                if (got != want)
                    fail_msg("count %u, shape %d, hash %012llx: seek gave %u, the binary search %u",
                             count, shape, (unsigned long long)h, got, want);
                checked++;
            }
        }
    print_message("    %llu searches agree\n", (unsigned long long)checked);
}

/* ---- the map itself (keymap.c) ---- */

static int g_refuse_maps;            /* the next map calls fail */
static tide_io g_refusing_io;        /* the POSIX io, with map wrapped */

static int refusing_map(tide_file *f, tide_io_map *m, uint64_t len)
{
    if (g_refuse_maps) return tide_err_set(TIDE_EIO, "the test refuses this mmap");
    return tide_io_posix()->map(f, m, len);
}

/* A file of `bytes` in t->dir written with pwrite (so in the page cache),
 * byte i = i * 7, opened read-only through g_refusing_io. */
static tide_file *test_file(tstate *t, uint64_t bytes)
{
    char path[sizeof t->dir + 16];
    static uint8_t chunk[1 << 20];
    tide_file *f = NULL;
    int fd;

    if (th_mkdtemp(t->dir, sizeof t->dir) != 0) fail_msg("cannot make a temporary directory");
    snprintf(path, sizeof path, "%s/nudb.key", t->dir);
    if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600)) < 0) fail_msg("open %s failed", path);
    for (uint64_t at = 0; at < bytes; at += sizeof chunk) {
        size_t n = bytes - at < sizeof chunk ? (size_t)(bytes - at) : sizeof chunk;
        for (size_t i = 0; i < n; i++) chunk[i] = (uint8_t)((at + i) * 7);
        if (pwrite(fd, chunk, n, (off_t)at) != (ssize_t)n) { close(fd); fail_msg("pwrite %s failed", path); }
    }
    close(fd);
    g_refusing_io = *tide_io_posix();
    g_refusing_io.map = refusing_map;
    g_refuse_maps = 0;
    if (g_refusing_io.open(&g_refusing_io, path, TIDE_IO_READ, &f) != 0) fail_msg("io open: %s", tide_last_error());
    return f;
}

#define PAGE 4096u
#define PAST_VIEWS 1000

static void views_past_a_full_map_take_no_lock(void **state)
{
    th_skip_unless_maps();
    tstate *t = *state;
    tide_file *f = test_file(t, 4 * PAGE);
    uint64_t known = 4 * PAGE, locks, saved;
    const uint8_t *v;
    ti_keymap k;

    ti_keymap_init(&k);
    if (ti_keymap_open(&k, &g_refusing_io, f, PAGE, 0) != 0) fail_msg("keymap open: %s", tide_last_error());
    /* An mmap refused: the map stops at one page. */
    g_refuse_maps = 1;
    if (ti_keymap_view(&k, 2 * PAGE, 64, known) != NULL) fail_msg("a view past a refused mmap should be NULL");
    locks = k.grow_locks;
    expect_u64(locks, 1, "the growth mutex taken for the one mmap tried");
    for (int i = 0; i < PAST_VIEWS; i++)
        if (ti_keymap_view(&k, 3 * PAGE, 64, known) != NULL) fail_msg("view %d past the map was not NULL", i);
    expect_u64(k.grow_locks, locks, "views past a map that cannot grow take no lock");
    if ((v = ti_keymap_view(&k, 100, 8, known)) == NULL || v[0] != (uint8_t)(100 * 7))
        fail_msg("the bytes below the map are still viewed, and right");
    ti_keymap_close(&k);

    /* The reservation reached: the map grows to it, then stops. */
    ti_keymap_init(&k);
    g_refuse_maps = 0;
    if (ti_keymap_open(&k, &g_refusing_io, f, PAGE, 0) != 0) fail_msg("keymap open: %s", tide_last_error());
    saved = k.m.reserved;
    k.m.reserved = 2 * PAGE;          /* the test's own, smaller reservation (restored to unmap) */
    if (ti_keymap_view(&k, 3 * PAGE, 64, known) != NULL) fail_msg("a view past the reservation should be NULL");
    if ((v = ti_keymap_view(&k, PAGE + 5, 8, known)) == NULL || v[0] != (uint8_t)((PAGE + 5) * 7))
        fail_msg("the map should have grown up to the reservation (2 pages)");
    locks = k.grow_locks;
    for (int i = 0; i < PAST_VIEWS; i++)
        if (ti_keymap_view(&k, 2 * PAGE, 64, known) != NULL) fail_msg("view %d past the reservation was not NULL", i);
    expect_u64(k.grow_locks, locks, "views past the reservation take no lock");
    k.m.reserved = saved;
    ti_keymap_close(&k);
    g_refusing_io.close(f);
}

static void the_mapped_figure_follows_a_shrunk_file(void **state)
{
    th_skip_unless_maps();
    tstate *t = *state;
    tide_file *f = test_file(t, 4 * PAGE);
    uint64_t mapped = 0;
    ti_keymap k;

    ti_keymap_init(&k);
    if (ti_keymap_open(&k, &g_refusing_io, f, 4 * PAGE, 0) != 0) fail_msg("keymap open: %s", tide_last_error());
    expect_ok(ti_keymap_stats(&k, 4 * PAGE, &mapped, NULL), "stats");
    expect_u64(mapped, 4 * PAGE, "mapped: the whole file");
    /* A rollback sets the bucket count back: the file is 2 pages now. */
    expect_ok(ti_keymap_stats(&k, 2 * PAGE, &mapped, NULL), "stats after a shrink");
    expect_u64(mapped, 2 * PAGE, "mapped: no more than the file holds now");
    ti_keymap_close(&k);
    g_refusing_io.close(f);
}

/* Any mapping of this process overlapping [lo, hi) (/proc/self/maps). */
static int mapped_in(uintptr_t lo, uintptr_t hi)
{
    FILE *m = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;

    if (m == NULL) fail_msg("cannot read /proc/self/maps");
    while (!found && fgets(line, sizeof line, m)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a < hi && b > lo) found = 1;
    }
    fclose(m);
    return found;
}

/* A MAP_FIXED that fails (a file that cannot be mapped: procfs's) stops
 * the map and gives its reservation back past the failed range: nothing of
 * the 1 GiB reserved stays mapped past the first page, after the failure
 * and after unmap. */
static void a_failed_mmap_gives_its_reservation_back(void **state)
{
    tide_io *io = tide_io_posix();
    tide_io_map m = { 0 };
    tide_file *f = NULL;
    uintptr_t base;
    uint64_t reserved;

    (void)state;
    if (io->open(io, "/proc/self/status", TIDE_IO_READ, &f) != 0) skip();
    m.reserved = 1ull << 30;
    if (io->map(f, &m, 1) == 0) fail_msg("mmap of a procfs file succeeded");
    tide_err_clear();
    base = (uintptr_t)m.base;
    reserved = 1ull << 30;
    expect_u64(m.reserved, m.mapped, "the map grows no further");
    if (base != 0 && mapped_in(base + PAGE, base + reserved))
        fail_msg("the reservation past the failed page is still mapped");
    io->unmap(&m);
    io->close(f);
}

static ti_keymap *g_scanned;          /* the map whose scan checks grow_mu */
static int g_scan_mu_free = -1;      /* 1: grow_mu was free during the scan */

static int mu_checking_resident(const tide_io_map *m, uint64_t *bytes)
{
    int rc = pthread_mutex_trylock(&g_scanned->grow_mu);
    g_scan_mu_free = rc == 0;
    if (rc == 0) pthread_mutex_unlock(&g_scanned->grow_mu);
    return tide_io_posix()->map_resident(m, bytes);
}

/* The resident scan (a pagemap read per 4 MiB: tens of ms at gigabytes)
 * runs outside grow_mu, so a reader that finds the file grown never waits
 * for it: the scan itself finds the mutex free. */
static void the_resident_scan_holds_no_growth_mutex(void **state)
{
    th_skip_unless_maps();
    tstate *t = *state;
    tide_file *f = test_file(t, 4 * PAGE);
    uint64_t resident = 0;
    ti_keymap k;

    g_refusing_io.map_resident = mu_checking_resident;
    ti_keymap_init(&k);
    g_scanned = &k;
    g_scan_mu_free = -1;
    if (ti_keymap_open(&k, &g_refusing_io, f, 4 * PAGE, 0) != 0) fail_msg("keymap open: %s", tide_last_error());
    expect_ok(ti_keymap_stats(&k, 4 * PAGE, NULL, &resident), "stats");
    if (g_scan_mu_free != 1) fail_msg("the scan ran %s", g_scan_mu_free < 0 ? "not at all" : "holding grow_mu");
    ti_keymap_close(&k);
    g_refusing_io.close(f);
}

/* The permissions /proc/self/maps gives the page at `at` ("r" readable,
 * "-" not, "?" not mapped). */
static char page_perm(uintptr_t at)
{
    FILE *m = fopen("/proc/self/maps", "r");
    char line[512], perm[8], r = '?';

    if (m == NULL) fail_msg("cannot read /proc/self/maps");
    while (r == '?' && fgets(line, sizeof line, m)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx %7s", &a, &b, perm) == 3 && a <= at && at < b) r = perm[0];
    }
    fclose(m);
    return r;
}

/* The sim's map (io_sim_map.c) follows the file: a write shows at once; a
 * truncate zeroes the cut part of its last page and makes the pages wholly
 * past the end unreadable (a touch faults, as a POSIX map's SIGBUS); a
 * write that grows the file back makes them readable with its bytes. */
static void the_sims_map_follows_writes_and_truncates(void **state)
{
    tide_io_sim *sim = NULL;
    tide_io *io;
    tide_file *f = NULL;
    tide_io_map m = { 0 };
    static uint8_t data[3 * PAGE + 100];

    (void)state;
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7 + 1);
    if (tide_io_sim_create(&sim) != 0 || tide_io_sim_put_file(sim, "/f", data, sizeof data) != 0)
        fail_msg("sim: create");
    io = tide_io_sim_io(sim);
    expect_ok(io->open(io, "/f", TIDE_IO_READ | TIDE_IO_WRITE, &f), "open");
    m.reserved = 16 * PAGE;
    expect_ok(io->map(f, &m, sizeof data), "map");
    expect_u64(m.mapped, 4 * PAGE, "mapped: a page multiple");
    if (memcmp(m.base, data, sizeof data) != 0) fail_msg("the map does not show the file");
    if (m.base[sizeof data] != 0) fail_msg("the last page past the end reads as zeros");
    expect_ok(io->write_at(f, "XY", 2, 10), "write");
    if (m.base[10] != 'X' || m.base[11] != 'Y') fail_msg("a write does not show in the map");
    expect_ok(io->truncate(f, PAGE + 10), "truncate");
    if (m.base[PAGE + 9] != data[PAGE + 9] || m.base[PAGE + 10] != 0 || m.base[2 * PAGE - 1] != 0)
        fail_msg("the cut part of the last page does not read as zeros");
    if (page_perm((uintptr_t)m.base + PAGE) != 'r' || page_perm((uintptr_t)m.base + 2 * PAGE) != '-' ||
        page_perm((uintptr_t)m.base + 3 * PAGE) != '-')
        fail_msg("pages past the end: expected r, -, -, got %c, %c, %c", page_perm((uintptr_t)m.base + PAGE),
                 page_perm((uintptr_t)m.base + 2 * PAGE), page_perm((uintptr_t)m.base + 3 * PAGE));
    expect_ok(io->write_at(f, "Z", 1, 3 * PAGE), "a write that grows the file back");
    if (page_perm((uintptr_t)m.base + 2 * PAGE) != 'r' || m.base[3 * PAGE] != 'Z' || m.base[2 * PAGE] != 0)
        fail_msg("the pages grown back over are not readable with the file's bytes (zeros in the gap)");
    io->unmap(&m);
    io->close(f);
    tide_io_sim_destroy(sim);
}

/* The sim keeps an unmapped reservation for the next map of the same size
 * (io_sim_map.c invariant 5): that map shows its own file only, with
 * zeros past its end in its last page and the pages past that unreadable,
 * though the reservation's last user had them readable with its bytes. */
static void a_reused_sim_reservation_shows_only_the_new_file(void **state)
{
    tide_io_sim *sim = NULL;
    tide_io *io;
    tide_file *fa = NULL, *fb = NULL;
    tide_io_map ma = { 0 }, mb = { 0 };
    static uint8_t a[3 * PAGE + 100], b[PAGE + 10];
    const uint8_t *old;

    (void)state;
    memset(a, 'a', sizeof a);
    for (size_t i = 0; i < sizeof b; i++) b[i] = (uint8_t)(i * 5 + 3);
    if (tide_io_sim_create(&sim) != 0 || tide_io_sim_put_file(sim, "/a", a, sizeof a) != 0 ||
        tide_io_sim_put_file(sim, "/b", b, sizeof b) != 0)
        fail_msg("sim: create");
    io = tide_io_sim_io(sim);
    expect_ok(io->open(io, "/a", TIDE_IO_READ, &fa), "open /a");
    expect_ok(io->open(io, "/b", TIDE_IO_READ, &fb), "open /b");
    /* A size no other test reserves: the kept reservations are the process's. */
    ma.reserved = mb.reserved = 13 * PAGE;
    expect_ok(io->map(fa, &ma, 13 * PAGE), "map /a");
    old = ma.base;
    io->unmap(&ma);
    if (page_perm((uintptr_t)old - PAGE) != 'r' || page_perm((uintptr_t)old) != 'r')
        fail_msg("an unmapped reservation was given back to the kernel (record page %c, view %c), "
                 "expected it kept for the next map", page_perm((uintptr_t)old - PAGE),
                 page_perm((uintptr_t)old));
    expect_ok(io->map(fb, &mb, 13 * PAGE), "map /b");
    if (mb.base != old) fail_msg("the map of /b did not take the kept reservation (%p, kept %p)",
                                 (const void *)mb.base, (const void *)old);
    expect_u64(mb.mapped, 13 * PAGE, "mapped");
    if (memcmp(mb.base, b, sizeof b) != 0) fail_msg("the reused view does not show /b");
    for (size_t i = sizeof b; i < 2 * PAGE; i++)
        if (mb.base[i] != 0) fail_msg("byte %zu, past /b's end in its last page, reads %#x, not 0", i,
                                      mb.base[i]);
    if (page_perm((uintptr_t)mb.base + 2 * PAGE) != '-' || page_perm((uintptr_t)mb.base + 3 * PAGE) != '-')
        fail_msg("pages past /b's end that /a had readable: expected -, -, got %c, %c",
                 page_perm((uintptr_t)mb.base + 2 * PAGE), page_perm((uintptr_t)mb.base + 3 * PAGE));
    io->unmap(&mb);
    io->close(fa);
    io->close(fb);
    tide_io_sim_destroy(sim);
}

#define BIG_FILE (64ull << 20)

static void resident_is_this_process_s_pages_not_the_page_cache(void **state)
{
    th_skip_unless_maps();
    tstate *t = *state;
    tide_file *f = test_file(t, BIG_FILE);
    uint64_t resident = 0;
    volatile uint8_t sink = 0;
    const uint8_t *v;
    ti_keymap k;

    ti_keymap_init(&k);
    if (ti_keymap_open(&k, &g_refusing_io, f, BIG_FILE, 0) != 0) fail_msg("keymap open: %s", tide_last_error());
    for (uint64_t off = 0; off < 2 * PAGE; off += PAGE) {
        if ((v = ti_keymap_view(&k, off, 1, BIG_FILE)) == NULL) fail_msg("no view at %llu", (unsigned long long)off);
        sink = (uint8_t)(sink + *v);
    }
    (void)sink;
    expect_ok(ti_keymap_stats(&k, BIG_FILE, NULL, &resident), "stats");
    /* Two pages touched; the kernel may map a few around them (fault-around,
     * at most 64 KiB per fault here): never the 64 MiB the page cache holds. */
    if (resident < 2 * PAGE || resident > 1024 * 1024)
        fail_msg("resident: expected the 2 touched pages (up to 1 MiB with fault-around), got %llu bytes",
                 (unsigned long long)resident);
    ti_keymap_close(&k);
    g_refusing_io.close(f);
}

/* ---- the data map's fallbacks, and values of several pages ---- */

#define FB_ITEMS 3000
#define BIG_VMAX MAX_VALUE

static void new_store(tstate *t)
{
    tide_store_create_opts co;
    int rc;

    if (th_mkdtemp(t->dir, sizeof t->dir) != 0) fail_msg("cannot make a temporary directory");
    tide_store_create_opts_init(&co);
    co.key_size = 32;
    if ((rc = tide_store_create(t->dir, &co)) != 0) fail_msg("create: got %d %s", rc, tide_last_error());
}

/* The store in t->dir through g_refusing_io (the POSIX io whose maps fail
 * while g_refuse_maps is set). */
static tide_store *refusing_open(tstate *t)
{
    tide_store_opts o;
    tide_store *s = NULL;
    int rc;

    th_store_opts(&o);
    o.io = &g_refusing_io;
    o.burst_bytes = 64 << 10;
    if ((rc = tide_store_open(&s, t->dir, &o)) != 0) fail_msg("open: got %d %s", rc, tide_last_error());
    return s;
}

static void insert_synced(tide_store *s, uint64_t from, uint64_t to, unsigned vmax)
{
    int rc = th_store_insert_items(s, from, to, 32, 1, vmax, NULL);
    if (rc == 0) rc = tide_store_sync(s);
    if (rc != 0) fail_msg("insert %llu..%llu: got %d %s", (unsigned long long)from,
                          (unsigned long long)to, rc, tide_last_error());
}

/* Maps that fail: past a data map that can grow no more (the mmaps after
 * the open refused), the newer records are read with pread and the older
 * ones still in the map; with every map refused at open, every record is
 * read with pread. Every value is right each time. */
static void a_refused_data_map_falls_back_to_pread(void **state)
{
    th_skip_unless_maps();
    tstate *t = *state;
    tide_store_info a, b, c;
    int rc;

    new_store(t);
    g_refusing_io = *tide_io_posix();
    g_refusing_io.map = refusing_map;
    g_refuse_maps = 0;
    t->s = refusing_open(t);
    insert_synced(t->s, 0, FB_ITEMS, 300);
    read_items(t->s, FB_ITEMS, 300, "mapped");
    tide_store_get_info(t->s, &a);
    g_refuse_maps = 1;                  /* the map cannot follow the file now */
    insert_synced(t->s, FB_ITEMS, 2 * FB_ITEMS, 300);
    read_items(t->s, 2 * FB_ITEMS, 300, "past a map that grows no more");
    tide_store_get_info(t->s, &b);
    if ((rc = tide_store_close(t->s)) != 0) fail_msg("close: got %d", rc);
    t->s = refusing_open(t);            /* every map refused */
    read_items(t->s, 2 * FB_ITEMS, 300, "no map at all");
    tide_store_get_info(t->s, &c);
    g_refuse_maps = 0;
    print_message("    mapped: %llu views, %llu preads; grown no more: %llu, %llu; refused: %llu, %llu\n",
                  (unsigned long long)a.dat_map_views, (unsigned long long)a.dat_reads,
                  (unsigned long long)b.dat_map_views, (unsigned long long)b.dat_reads,
                  (unsigned long long)c.dat_map_views, (unsigned long long)c.dat_reads);
    if (a.dat_map_views < FB_ITEMS || a.dat_reads != 0)
        fail_msg("mapped: expected at least %u records read in the data map and no pread, got %llu "
                 "and %llu", FB_ITEMS, (unsigned long long)a.dat_map_views, (unsigned long long)a.dat_reads);
    if (b.dat_map_views - a.dat_map_views < FB_ITEMS || b.dat_reads < FB_ITEMS)
        fail_msg("grown no more: expected the older records in the map and the newer with pread, "
                 "got %llu more views and %llu preads", (unsigned long long)(b.dat_map_views - a.dat_map_views),
                 (unsigned long long)b.dat_reads);
    if (c.dat_map_views != 0 || c.dat_map_bytes != 0 || c.key_map_bytes != 0 || c.dat_reads < 2 * FB_ITEMS)
        fail_msg("refused: expected no map and every record read with pread, got %llu views, %llu "
                 "bytes mapped (key map %llu), %llu preads", (unsigned long long)c.dat_map_views,
                 (unsigned long long)c.dat_map_bytes, (unsigned long long)c.key_map_bytes,
                 (unsigned long long)c.dat_reads);
}

/* On tmpfs neither file is mapped (io_posix.c, invariant 6: a map's pages
 * would be RssShmem, which the memory limit counts): every lookup preads,
 * and reads right. The same store copied to the scratch disk maps both. */
static void a_store_on_tmpfs_is_read_with_pread_not_mapped(void **state)
{
    tstate *t = *state;
    tide_store_create_opts co;
    tide_store_info a, b;
    struct statfs fs;
    char disk[4096];
    int rc;

    if (statfs("/dev/shm", &fs) != 0 || fs.f_type != TMPFS_MAGIC) {
        print_message("    /dev/shm is not tmpfs here: skipped\n");
        skip();
    }
    snprintf(t->dir, sizeof t->dir, "/dev/shm/tide-test-XXXXXX");
    if (mkdtemp(t->dir) == NULL) fail_msg("mkdtemp %s: %s", t->dir, strerror(errno));
    tide_store_create_opts_init(&co);
    co.key_size = 32;
    if ((rc = tide_store_create(t->dir, &co)) != 0) fail_msg("create: got %d %s", rc, tide_last_error());
    if ((rc = th_store_open(&t->s, t->dir)) != 0) fail_msg("open: got %d %s", rc, tide_last_error());
    insert_synced(t->s, 0, FB_ITEMS, 300);
    read_items(t->s, FB_ITEMS, 300, "on tmpfs");
    tide_store_get_info(t->s, &a);
    if ((rc = tide_store_close(t->s)) != 0) fail_msg("close: got %d", rc);
    t->s = NULL;
    if (a.key_map_bytes != 0 || a.dat_map_bytes != 0 || a.key_map_views != 0 || a.dat_map_views != 0)
        fail_msg("tmpfs: expected no map, got %llu + %llu bytes mapped and %llu + %llu views",
                 (unsigned long long)a.key_map_bytes, (unsigned long long)a.dat_map_bytes,
                 (unsigned long long)a.key_map_views, (unsigned long long)a.dat_map_views);
    if (a.dat_reads < FB_ITEMS || a.key_bucket_reads < FB_ITEMS)
        fail_msg("tmpfs: expected every lookup to pread, got %llu record and %llu bucket reads",
                 (unsigned long long)a.dat_reads, (unsigned long long)a.key_bucket_reads);
    /* The control: the same files on the scratch disk are mapped. */
    th_skip_unless_maps();
    if (th_mkdtemp(disk, sizeof disk) != 0) fail_msg("cannot make a temporary directory");
    char cmd[3 * 4096 + 64];
    snprintf(cmd, sizeof cmd, "cp '%s'/nudb.dat '%s'/nudb.key '%s'/", t->dir, t->dir, disk);
    if (system(cmd) != 0) fail_msg("%s failed", cmd);
    tide_store *s = NULL;
    if ((rc = th_store_open(&s, disk)) != 0) fail_msg("open the copy: got %d %s", rc, tide_last_error());
    read_items(s, FB_ITEMS, 300, "the copy on disk");
    tide_store_get_info(s, &b);
    tide_store_close(s);
    th_rmrf(disk);
    if (b.key_map_bytes == 0 || b.dat_map_bytes == 0 || b.dat_map_views < FB_ITEMS)
        fail_msg("disk: expected both maps, got %llu + %llu bytes mapped, %llu record views",
                 (unsigned long long)b.key_map_bytes, (unsigned long long)b.dat_map_bytes,
                 (unsigned long long)b.dat_map_views);
}

/* Values of 1 byte to three pages, eight commits, every value fetched
 * after each (records that span the map's pages, and its growth at each
 * commit); then a mapped and a pread handle agree on every key. */
static void values_of_several_pages_read_alike_mapped_and_not(void **state)
{
    th_skip_unless_maps();
    tstate *t = *state;
    th_fixture f = { .name = "large", .key_size = 32, .items = 8 * 100, .present = 8 * 100,
                     .vmin = 1, .vmax = BIG_VMAX };
    tide_store *plain = NULL;
    tide_store_info info;
    int rc;

    new_store(t);
    if ((rc = th_store_open(&t->s, t->dir)) != 0) fail_msg("open: got %d %s", rc, tide_last_error());
    for (uint64_t r = 0; r < 8; r++) {
        insert_synced(t->s, r * 100, (r + 1) * 100, BIG_VMAX);
        read_items(t->s, (r + 1) * 100, BIG_VMAX, "large values");
    }
    tide_store_get_info(t->s, &info);
    if (info.dat_map_views == 0 || info.dat_map_bytes != info.dat_file_bytes)
        fail_msg("expected the records read in a data map grown to all %llu bytes, got %llu views, "
                 "%llu bytes mapped", (unsigned long long)info.dat_file_bytes,
                 (unsigned long long)info.dat_map_views, (unsigned long long)info.dat_map_bytes);
    if ((rc = tide_store_close(t->s)) != 0) fail_msg("close: got %d", rc);
    t->s = NULL;
    open_ro(&t->s, t->dir, 0, f.name);
    open_ro(&plain, t->dir, 1, f.name);
    t->s2 = plain;
    compare_all(t->s, plain, &f);
}

/* Of this process' mappings of `path` (/proc/self/smaps), how many there
 * are and how many carry VmFlags `flag` ("rr": MADV_RANDOM). */
static void map_flags(const char *path, const char *flag, int *maps, int *flagged)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[4096], want[8];
    int in = 0;

    *maps = *flagged = 0;
    if (f == NULL) fail_msg("cannot read /proc/self/smaps");
    snprintf(want, sizeof want, " %s", flag);
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line), p = strlen(path);
        if (n && line[n - 1] == '\n') line[--n] = '\0';
        if (strchr(line, '-') == line + strspn(line, "0123456789abcdef") && strchr(line, ' ')) {
            in = n >= p && strcmp(line + n - p, path) == 0;     /* a mapping's first line */
            *maps += in;
        } else if (in && strncmp(line, "VmFlags:", 8) == 0) {
            char *at = strstr(line, want);
            *flagged += at != NULL && (at[strlen(want)] == ' ' || at[strlen(want)] == '\0');
        }
    }
    fclose(f);
}

/* Fetches read records scattered over nudb.dat: a page of it not in memory
 * is read alone (MADV_RANDOM, "rr" in smaps), not with the read-around that
 * on a machine with an 8 MiB read_ahead_kb read megabytes per record. The
 * key map keeps the kernel's read-around while the key file fits in 3/4 of
 * the machine's memory: a bucket of 16 KiB is four pages, which one read
 * brings in together. */
static void the_data_map_reads_a_page_alone_and_the_key_map_reads_around(void **state)
{
    th_skip_unless_maps();
    tstate *t = *state;
    char path[sizeof t->dir + 16];
    int maps, flagged;

    new_store(t);
    {
        tide_store_opts o;
        int rc;
        th_store_opts(&o);
        o.burst_bytes = 64 << 10;
        if ((rc = tide_store_open(&t->s, t->dir, &o)) != 0) fail_msg("open: got %d %s", rc, tide_last_error());
    }
    insert_synced(t->s, 0, FB_ITEMS, 300);
    read_items(t->s, FB_ITEMS, 300, "mapped");
    snprintf(path, sizeof path, "%s/nudb.dat", t->dir);
    map_flags(path, "rr", &maps, &flagged);
    if (maps == 0 || flagged != maps)
        fail_msg("expected every map of nudb.dat advised random, got %d of %d", flagged, maps);
    snprintf(path, sizeof path, "%s/nudb.key", t->dir);
    map_flags(path, "rr", &maps, &flagged);
    if (maps == 0 || flagged != 0)
        fail_msg("expected the maps of nudb.key with the kernel's read-around, got %d of %d advised random",
                 flagged, maps);
}

/* A key file larger than 3/4 of the memory for the store's pages
 * (opts.page_memory) stops reading around: the map of a store opened
 * small reads around until the inserts grow nudb.key past 768 KiB of a
 * 1 MiB page memory, and then every piece of it is advised random, the
 * earlier ones too; opened again at that size, it reads pages alone from
 * the start, and with the machine's memory it reads around. */
#define PM_ITEMS 30000
static void the_key_map_reads_pages_alone_once_the_key_file_outgrows_its_memory(void **state)
{
    th_skip_unless_maps();
    tstate *t = *state;
    char path[sizeof t->dir + 16];
    tide_store_opts o;
    tide_store_info info;
    th_log_capture cap;
    int rc, maps, flagged, level;

    new_store(t);
    th_store_opts(&o);
    o.burst_bytes = 1 << 20;
    o.page_memory = 1 << 20;
    if ((rc = tide_store_open(&t->s, t->dir, &o)) != 0) fail_msg("open: got %d %s", rc, tide_last_error());
    snprintf(path, sizeof path, "%s/nudb.key", t->dir);
    read_items(t->s, 0, 64, "empty");
    map_flags(path, "rr", &maps, &flagged);
    if (maps == 0 || flagged != 0)
        fail_msg("expected a small key file's map to read around, got %d of %d maps advised random", flagged, maps);
    insert_synced(t->s, 0, PM_ITEMS, 64);
    read_items(t->s, PM_ITEMS, 64, "grown");
    tide_store_get_info(t->s, &info);
    if (info.key_file_bytes <= (3u << 20) / 4 || info.key_map_bytes != info.key_file_bytes)
        fail_msg("expected a key file past 768 KiB, all of it mapped, got %llu bytes, %llu mapped",
                 (unsigned long long)info.key_file_bytes, (unsigned long long)info.key_map_bytes);
    map_flags(path, "rr", &maps, &flagged);
    if (maps == 0 || flagged != maps)
        fail_msg("expected every map of a key file past 3/4 of its memory advised random, got %d of %d",
                 flagged, maps);
    if ((rc = tide_store_close(t->s)) != 0) fail_msg("close: got %d", rc);
    t->s = NULL;

    memset(&cap, 0, sizeof cap);
    level = tide_log_get_level();
    tide_log_set_level(TIDE_LOG_INFO);
    tide_log_set_sink(th_log_capture_sink, &cap);
    rc = tide_store_open(&t->s, t->dir, &o);
    tide_log_set_sink(NULL, NULL);
    tide_log_set_level(level);
    if (rc != 0) fail_msg("reopen: got %d %s", rc, tide_last_error());
    expect_contains(cap.text, "is over 768 KiB, 3/4 of the memory for the store's pages: a bucket not in "
                    "memory is read alone", "the open says why it reads pages alone");
    read_items(t->s, PM_ITEMS, 64, "reopened");
    map_flags(path, "rr", &maps, &flagged);
    if (maps == 0 || flagged != maps)
        fail_msg("expected the reopened key map advised random from the start, got %d of %d", flagged, maps);
    if ((rc = tide_store_close(t->s)) != 0) fail_msg("close: got %d", rc);
    t->s = NULL;

    o.page_memory = 0;
    if ((rc = tide_store_open(&t->s, t->dir, &o)) != 0) fail_msg("reopen: got %d %s", rc, tide_last_error());
    read_items(t->s, PM_ITEMS, 64, "the machine's memory");
    map_flags(path, "rr", &maps, &flagged);
    if (maps == 0 || flagged != 0)
        fail_msg("expected the key map to read around within the machine's memory, got %d of %d advised random",
                 flagged, maps);
}

#define T(f, setup) cmocka_unit_test_setup_teardown(f, setup, th_store_teardown)

/* Which binary runs which test: the part of each, in the order they run. */
#ifndef KEYMAP_PART
#define KEYMAP_PART 0
#endif

int main(void)
{
    static const struct { int part; struct CMUnitTest test; } PARTS[] = {
        { 0, T(fixtures_mapped_and_pread_agree, th_store_setup_bare) },
        { 0, T(sim_maps_like_posix, th_store_setup_bare) },
        { 0, T(hash_ties_are_searched_alike_mapped_and_not, th_store_setup_bare) },
        { 0, T(fetch_while_the_file_grows, th_store_setup_bare) },
        { 1, T(fetches_through_the_map_survive_rollbacks_that_cut_the_key_file, th_store_setup_bare) },
        { 2, T(deferred_appends_that_fail_never_cut_below_the_data_map, th_store_setup_bare) },
        { 0, T(a_store_on_tmpfs_is_read_with_pread_not_mapped, th_store_setup_bare) },
        { 0, T(a_refused_data_map_falls_back_to_pread, th_store_setup_bare) },
        { 0, T(the_data_map_reads_a_page_alone_and_the_key_map_reads_around, th_store_setup_bare) },
        { 0, T(the_key_map_reads_pages_alone_once_the_key_file_outgrows_its_memory, th_store_setup_bare) },
        { 0, T(values_of_several_pages_read_alike_mapped_and_not, th_store_setup_bare) },
        { 0, T(counters_sum_every_threads_fetches, th_store_setup_bare) },
        { 0, T(views_past_a_full_map_take_no_lock, th_store_setup_bare) },
        { 0, T(the_mapped_figure_follows_a_shrunk_file, th_store_setup_bare) },
        { 0, T(resident_is_this_process_s_pages_not_the_page_cache, th_store_setup_bare) },
        { 0, cmocka_unit_test(a_failed_mmap_gives_its_reservation_back) },
        { 0, cmocka_unit_test(the_sims_map_follows_writes_and_truncates) },
        { 0, cmocka_unit_test(a_reused_sim_reservation_shows_only_the_new_file) },
        { 0, T(the_resident_scan_holds_no_growth_mutex, th_store_setup_bare) },
        { 0, cmocka_unit_test(seek_finds_what_the_binary_search_finds) },
    };
    struct CMUnitTest tests[sizeof PARTS / sizeof PARTS[0]];
    size_t n = 0;

    for (size_t i = 0; i < sizeof PARTS / sizeof PARTS[0]; i++)
        if (PARTS[i].part == KEYMAP_PART) tests[n++] = PARTS[i].test;
    static const char *const part_names[] = {
        "test_store_keymap", "test_store_keymap_rollbacks", "test_store_keymap_deferred",
    };
    return th_run_group_n(part_names[KEYMAP_PART], tests, n, NULL, NULL, NULL);
}
