/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_bench.c: the store benchmark's library part (src/bench), called as
 * `tide bench store` calls it: begin, run, summarize, end, in a scratch
 * directory with a few hundred items.
 *
 * Checked: the data a run stores is the fixtures' formula (computed here
 * by tests/helpers.c, not by the bench) for seed 0, and moves with the
 * seed; a run counts what it did (every item stored, commits and syncs,
 * the files' sizes); the stores and the bench directory are removed unless
 * kept, and kept after a failure, which names what failed; the summary's
 * medians, minima, maxima and ok flags over hand-made runs. A FETCH of
 * 200000 items through the key map raises the peak anonymous RSS by less
 * than 8 MiB over the phase's start. No assertion depends on how fast the
 * machine is.
 *
 * The generations bench (bench_gens.c, `tide bench generations`) with
 * 2000 items a span and one run: its counts add up (COPY copies each key
 * once, MISS finds none, NEWEST and AGAIN find all in the newest, one disk
 * point per rotation with the drops where G says), its JSON parses with
 * the same counts, bad options exit 2 naming the option, and the
 * directories go unless kept.
 *
 * The release bench (bench_release.c, `tide bench release`) with 16 MiB:
 * the arena on and off make and erase the same objects, the arena gives
 * segments back and the kernel's floor is measured on as many, a bad option is refused by name; the command's JSON
 * parses with each figure's median, minimum and maximum.
 *
 * The archive bench (bench_archive.c, `tide bench archive`) against a real
 * cluster (tests/support/ceph.h, started for that test alone) with a
 * generation of 1 MiB, two runs: each upload holds the whole generation
 * and its write buffers are inflight x piece, the hits find every key with
 * two RADOS reads or more each, the misses find none, the filter spares
 * most of them a read and no filter spares none, every archive-synced put
 * waited for the archive and no local one did, and the pool holds none of
 * its objects afterwards. Without --conf, or with a bad option, it exits
 * 2 naming what is wrong.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/bench_archive.h"
#include "bench/bench_gens.h"
#include "bench/bench_release.h"
#include "bench/bench_store.h"
#include "expect.h"
#include "helpers.h"
#include "store/full.h"
#include "support/ceph.h"

#define ITEMS 300u
#define VALUE_SIZE 40u

typedef struct fixture {
    char scratch[512];
    tide_bench_store b;
    tide_bench_store_opts o;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (f == NULL || th_mkdtemp(f->scratch, sizeof f->scratch) != 0) return -1;
    tide_bench_store_opts_init(&f->o);
    f->o.items = ITEMS;
    f->o.value_size = VALUE_SIZE;
    f->o.runs = 1;
    f->o.parent = f->scratch;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    th_rmrf(f->scratch);
    free(f);
    return 0;
}

/* Every item i of the kept store at `dir` holds key stream(base + 2i + 1)
 * and value stream(base + 2i + 2), base = seed << 33. */
static void expect_formula(const char *dir, uint64_t seed)
{
    tide_store_opts so;
    tide_store *s = NULL;
    unsigned char key[TIDE_BENCH_KEY_SIZE], want[VALUE_SIZE];
    uint64_t base = seed << 33;

    tide_store_opts_init(&so);
    so.read_only = 1;
    expect_rc(tide_store_open(&s, dir, &so), 0, "opening the kept store");
    for (uint64_t i = 0; i < ITEMS; i++) {
        void *got = NULL;
        size_t len = 0;
        th_stream(base + 2 * i + 1, key, sizeof key);
        th_stream(base + 2 * i + 2, want, sizeof want);
        expect_rc(tide_store_fetch(s, key, &got, &len), 0, "fetching an item by the formula");
        expect_u64(len, VALUE_SIZE, "the item's value size");
        if (memcmp(got, want, VALUE_SIZE) != 0)
            fail_msg("item %" PRIu64 ": the value is not stream(base + 2i + 2)", i);
        free(got);
    }
    expect_rc(tide_store_close(s), 0, "closing the kept store");
}

static void a_run_stores_the_fixture_formula_for_seed_0(void **state)
{
    fixture *f = *state;
    tide_bench_failure why;
    tide_visit_stats st;
    char dat[4200];

    f->o.keep = 1;
    expect_rc(tide_bench_store_begin(&f->b, &f->o), 0, "begin");
    expect_rc(tide_bench_store_run(&f->b, 1, &why), 0, "run 1");
    expect_formula(f->b.run_dir, 0);
    memset(&st, 0, sizeof st);
    expect_rc(tide_store_visit_io(f->b.run_dir, NULL, NULL, NULL, &st), 0, "visiting the store");
    expect_u64(st.data_records, ITEMS, "data records after LOAD");
    expect_u64(f->b.runs[0].dat_bytes, th_file_size(th_path(dat, sizeof dat, f->b.run_dir,
               "nudb.dat")), "the run's nudb.dat size against the file's");
    tide_bench_store_end(&f->b);
}

static void the_seed_moves_every_key(void **state)
{
    fixture *f = *state;
    tide_bench_failure why;

    f->o.keep = 1;
    f->o.seed = 5;
    expect_rc(tide_bench_store_begin(&f->b, &f->o), 0, "begin");
    expect_rc(tide_bench_store_run(&f->b, 1, &why), 0, "run 1");
    expect_formula(f->b.run_dir, 5);
    tide_bench_store_end(&f->b);
}

static void a_run_counts_its_commits_syncs_and_bytes(void **state)
{
    fixture *f = *state;
    tide_bench_failure why;
    const tide_bench_run *r;

    f->o.runs = 2;
    expect_rc(tide_bench_store_begin(&f->b, &f->o), 0, "begin");
    for (unsigned i = 1; i <= 2; i++)
        expect_rc(tide_bench_store_run(&f->b, i, &why), 0, "a run");
    r = &f->b.runs[1];
    if (r->load.commits < 1) fail_msg("LOAD made no commit (expected at least the final sync's)");
    if (r->load.syncs < 1) fail_msg("LOAD made no sync");
    if (r->load.store_written < (uint64_t)ITEMS * (TIDE_BENCH_KEY_SIZE + VALUE_SIZE))
        fail_msg("LOAD wrote %" PRIu64 " bytes, fewer than the payload", r->load.store_written);
    expect_u64(r->fetch.commits, 0, "commits during FETCH");
    expect_u64(r->fetch.store_written, 0, "store bytes written during FETCH");
    if (r->load.secs <= 0 || r->load.items_per_s <= 0) fail_msg("LOAD was not timed");
    if (r->load.samples < 1) fail_msg("the sampler took no sample during LOAD");
    /* getrusage counts every thread's time: LOAD hashes and writes, so it
     * used some; the per-item figure is that time over the items. */
    if (r->load.cpu_secs <= 0) fail_msg("LOAD used no CPU time (%f s)", r->load.cpu_secs);
    if (r->load.cpu_us_per_item != r->load.cpu_secs * 1e6 / ITEMS)
        fail_msg("CPU us/item %f is not %f s over %u items", r->load.cpu_us_per_item,
                 r->load.cpu_secs, (unsigned)ITEMS);
    tide_bench_store_end(&f->b);
}

/* Fetches through the map cost no anonymous memory of their own: on a
 * 200000-item store (a 5 MiB key file, 46 MiB of data), the sampler's peak
 * anonymous RSS during FETCH is within FETCH_ANON_MAX of the anonymous RSS
 * FETCH began with. Not timed: the sampler reads /proc/self/status from
 * the phase's start (at least once) to its end. */
#define ANON_ITEMS 200000u
#define FETCH_ANON_MAX (8ull << 20)

static void fetching_through_the_map_adds_no_anonymous_memory(void **state)
{
    fixture *f = *state;
    tide_bench_failure why;
    const tide_bench_phase *p;

    /* A sanitizer's quarantine and shadow memory are anonymous and grow
     * with every fetch's freed buffer: the figure would be the sanitizer's. */
    if (TH_SANITIZER) th_skip("a sanitizer's own memory is anonymous: the bound would measure it");
    f->o.items = ANON_ITEMS;
    f->o.value_size = 200;
    expect_rc(tide_bench_store_begin(&f->b, &f->o), 0, "begin");
    expect_rc(tide_bench_store_run(&f->b, 1, &why), 0, "run 1");
    p = &f->b.runs[0].fetch;
    print_message("    FETCH of %u items: anonymous RSS %" PRIu64 " KiB at the start, peak %" PRIu64
                  " KiB (%" PRIu64 " samples); file-backed peak %" PRIu64 " KiB\n", ANON_ITEMS,
                  p->anon_start >> 10, p->peak_anon >> 10, p->samples, p->peak_file >> 10);
    if (p->samples < 1 || p->anon_start == 0) fail_msg("FETCH's anonymous RSS was not read");
    if (p->peak_anon > p->anon_start + FETCH_ANON_MAX)
        fail_msg("FETCH grew anonymous RSS by %" PRIu64 " KiB (from %" PRIu64 " to %" PRIu64 " KiB), more "
                 "than %llu KiB", (p->peak_anon - p->anon_start) >> 10, p->anon_start >> 10,
                 p->peak_anon >> 10, FETCH_ANON_MAX >> 10);
    tide_bench_store_end(&f->b);
}

static void stores_and_the_directory_go_unless_kept(void **state)
{
    fixture *f = *state;
    tide_bench_failure why;
    char dir[sizeof f->b.dir];

    expect_rc(tide_bench_store_begin(&f->b, &f->o), 0, "begin");
    snprintf(dir, sizeof dir, "%s", f->b.dir);
    expect_rc(tide_bench_store_run(&f->b, 1, &why), 0, "run 1");
    if (th_exists(f->b.run_dir)) fail_msg("%s is left after a run without keep", f->b.run_dir);
    tide_bench_store_end(&f->b);
    if (th_exists(dir)) fail_msg("%s is left after the bench without keep", dir);
}

static void a_failed_run_says_what_failed_and_keeps_the_directory(void **state)
{
    fixture *f = *state;
    tide_bench_failure why;
    char dir[sizeof f->b.dir], run1[sizeof f->b.run_dir];

    expect_rc(tide_bench_store_begin(&f->b, &f->o), 0, "begin");
    snprintf(dir, sizeof dir, "%s", f->b.dir);
    snprintf(run1, sizeof run1, "%s/run-1", dir);
    if (mkdir(run1, 0755) != 0) fail_msg("cannot make %s", run1);
    expect_rc(tide_bench_store_run(&f->b, 1, &why), TIDE_EEXIST, "a run whose directory exists");
    if (why.during != NULL) fail_msg("no store call failed, yet during is '%s'", why.during);
    expect_contains(tide_last_error(), "cannot create", "the failure's message");
    expect_contains(tide_last_error(), run1, "the failure's message");
    tide_bench_store_end(&f->b);
    if (!th_exists(run1)) fail_msg("%s was removed after the run failed in it", run1);
    if (!th_exists(dir)) fail_msg("the bench directory was removed after a failed run");
}

static void the_summary_takes_medians_minima_and_maxima(void **state)
{
    static tide_bench_run runs[4];
    tide_bench_store b;
    tide_bench_summary s;
    const double ips[4] = { 30, 10, 40, 20 };

    (void)state;
    memset(&b, 0, sizeof b);
    memset(runs, 0, sizeof runs);
    tide_bench_store_opts_init(&b.opts);
    b.opts.items = 1000;
    b.opts.value_size = 68;                   /* payload 1000 x 100 bytes */
    b.opts.runs = 3;
    b.runs = runs;
    for (int i = 0; i < 4; i++) {
        runs[i].load.items_per_s = ips[i];
        runs[i].fetch.items_per_s = 2 * ips[i];
        runs[i].load.io_ok = runs[i].fetch.io_ok = 1;
        runs[i].load.dev_ok = runs[i].fetch.dev_ok = 1;
        runs[i].load.store_written = 100000 * (uint64_t)(i + 1);
        runs[i].buckets = 7 + (uint64_t)i;
    }
    runs[1].fetch.dev_ok = 0;                 /* one phase without device counters */

    tide_bench_store_summarize(&b, &s);
    expect_u64(s.runs, 3, "runs summarized");
    expect_u64(s.load[TIDE_BENCH_ITEMS_PER_S].median, 30, "LOAD items/s median of 30, 10, 40");
    expect_u64(s.load[TIDE_BENCH_ITEMS_PER_S].min, 10, "LOAD items/s min");
    expect_u64(s.load[TIDE_BENCH_ITEMS_PER_S].max, 40, "LOAD items/s max");
    expect_u64(s.fetch[TIDE_BENCH_ITEMS_PER_S].median, 60, "FETCH items/s median");
    expect_u64(s.payload, 100000, "payload bytes");
    expect_u64(s.wa_store.median, 2, "store write amplification median of 1, 2, 3");
    expect_u64(s.buckets, 7, "buckets: run 1's");
    expect_u64(s.ok[TIDE_BENCH_DEV_WRITTEN], 0, "device figures with one phase unread");
    expect_u64(s.ok[TIDE_BENCH_WCHAR], 1, "wchar figures, read in every phase");
    expect_u64(s.ok[TIDE_BENCH_WRITE_BYTES], 0, "write_bytes without has_device_bytes");
    expect_u64(s.ok[TIDE_BENCH_COMMITS], 1, "commits, always counted");

    b.opts.runs = 4;                          /* an even count: the mean of the middle two */
    tide_bench_store_summarize(&b, &s);
    expect_u64(s.load[TIDE_BENCH_ITEMS_PER_S].median, 25, "LOAD items/s median of four runs");
}

/* ---- the generations bench ---- */

#define G_ITEMS 2000u

static void gens_opts(fixture *f, tide_bench_gens_opts *o)
{
    tide_bench_gens_opts_init(o);
    o->items = G_ITEMS;
    o->value_size = VALUE_SIZE;
    o->runs = 1;
    o->parent = f->scratch;
}

static void gens_counts_add_up(void **state)
{
    fixture *f = *state;
    tide_bench_gens_opts o;
    tide_bench_gens b;
    tide_bench_gens_summary s;
    char dir[sizeof b.dir];

    gens_opts(f, &o);
    expect_rc(tide_bench_gens_begin(&b, &o), 0, "begin");
    snprintf(dir, sizeof dir, "%s", b.dir);
    expect_rc(tide_bench_gens_run(&b, 1), 0, "run 1");
    expect_u64(b.plain[0].found, G_ITEMS, "PLAIN found every item");
    for (unsigned v = 0; v < o.ngens; v++) {
        const tide_bench_gens_result *x = tide_bench_gens_at(&b, 1, v);
        const tide_bench_gens_phase *p = x->ph;
        expect_u64(x->g, o.gens[v], "the variant's G");
        for (int id = 0; id < TIDE_BG_PHASES; id++)
            expect_u64(p[id].fetches, G_ITEMS, "fetches per phase");
        expect_u64(p[TIDE_BG_NEWEST].in_newest, G_ITEMS, "NEWEST: all in the newest");
        expect_u64(p[TIDE_BG_NEWEST].copied, 0, "NEWEST copies nothing");
        expect_u64(p[TIDE_BG_COPY].copied, p[TIDE_BG_COPY].fetches, "COPY: one copy per fetch");
        if (p[TIDE_BG_COPY].copied_bytes < (uint64_t)G_ITEMS * VALUE_SIZE)
            fail_msg("COPY copied %" PRIu64 " bytes, fewer than the values",
                     p[TIDE_BG_COPY].copied_bytes);
        expect_u64(p[TIDE_BG_AGAIN].in_newest, G_ITEMS, "AGAIN: all in the newest now");
        expect_u64(p[TIDE_BG_AGAIN].copied, 0, "AGAIN copies nothing");
        expect_u64(p[TIDE_BG_MISS].found, 0, "MISS finds nothing");
        /* A miss looks into every generation's key file: a bucket searched
         * in the map, or read with pread where there is none. */
        if (p[TIDE_BG_MISS].key_lookups < (uint64_t)G_ITEMS * x->g)
            fail_msg("G=%u: %" PRIu64 " key-file lookups for %u misses: fewer than one per "
                     "generation", x->g, p[TIDE_BG_MISS].key_lookups, G_ITEMS);
        expect_u64(x->ndisk, x->g + o.extra_spans - 1, "one disk point per rotation");
        for (size_t i = 0; i < x->ndisk; i++) {
            const tide_bench_gens_disk *d = &x->disk[i];
            expect_u64(d->rotation, i + 1, "the rotation's number");
            expect_u64(d->deleted_bytes > 0, i + 1 >= x->g, "a drop from rotation G on");
            expect_u64(d->generations, i + 2 < x->g ? i + 2 : x->g, "generations held");
            if (d->written_bytes < d->payload_bytes) fail_msg("written below the payload");
            /* a new empty generation adds its files; a drop takes a full one away */
            if ((d->disk_bytes > d->disk_before_bytes) != (i + 1 < x->g))
                fail_msg("rotation %zu: disk %" PRIu64 " before, %" PRIu64 " after", i + 1,
                         d->disk_before_bytes, d->disk_bytes);
        }
    }
    tide_bench_gens_summarize(&b, &s);
    expect_u64(s.runs, 1, "runs summarized");
    if (s.ph[0][TIDE_BG_NEWEST].vs_newest.median != 1.0)
        fail_msg("NEWEST against itself is %f, not 1", s.ph[0][TIDE_BG_NEWEST].vs_newest.median);
    expect_u64(s.miss_slope_ok, 1, "a slope of MISS across G = 2 and 4");
    tide_bench_gens_end(&b);
    if (th_exists(dir)) fail_msg("%s is left after the bench without keep", dir);
}

static void gens_keep_keeps_every_variant(void **state)
{
    fixture *f = *state;
    tide_bench_gens_opts o;
    tide_bench_gens b;
    tide_bench_gens_summary s;
    char p[sizeof b.dir + 64];

    gens_opts(f, &o);
    o.gens[0] = 3;
    o.ngens = 1;
    o.extra_spans = 0;
    o.keep = 1;
    expect_rc(tide_bench_gens_begin(&b, &o), 0, "begin");
    expect_rc(tide_bench_gens_run(&b, 1), 0, "run 1");
    expect_u64(tide_bench_gens_at(&b, 1, 0)->ndisk, 2, "G=3 without extra spans: 2 rotations");
    snprintf(p, sizeof p, "%s/run-1-g3/tide.generations", b.dir);
    if (!th_exists(p)) fail_msg("%s is not kept", p);
    snprintf(p, sizeof p, "%s/run-1-plain/nudb.dat", b.dir);
    if (!th_exists(p)) fail_msg("%s is not kept", p);
    tide_bench_gens_summarize(&b, &s);
    expect_u64(s.miss_slope_ok, 0, "no slope of MISS from one G");
    tide_bench_gens_end(&b);
}

static void gens_bad_options_are_refused(void **state)
{
    fixture *f = *state;
    tide_bench_gens_opts o;
    tide_bench_gens b;

    gens_opts(f, &o);
    o.gens[1] = 1;
    expect_rc(tide_bench_gens_begin(&b, &o), TIDE_EINVAL, "begin with G = 1");
    expect_contains(tide_last_error(), "G 1", "the message names the bad G");
    tide_bench_gens_end(&b);
    gens_opts(f, &o);
    o.items = 0;
    expect_rc(tide_bench_gens_begin(&b, &o), TIDE_EINVAL, "begin with 0 items");
    tide_bench_gens_end(&b);
}

/* Run `args` after "bench `which`" with stderr joined; expect exit 2 and
 * `says` in the output. */
static void expect_usage_of(const char *which, const char *args, const char *says)
{
    char cmd[512], *out = NULL;
    int st;

    snprintf(cmd, sizeof cmd, "bench %s %s", which, args);
    st = th_run_tide(cmd, 1, &out);
    if (st != 2) fail_msg("tide %s: exit %d, not 2; it said: %s", cmd, st, out);
    expect_contains(out, says, cmd);
    free(out);
}

static void expect_usage(const char *args, const char *says)
{
    expect_usage_of("generations", args, says);
}

static void gens_cli_json_parses_and_bad_options_exit_2(void **state)
{
    fixture *f = *state;
    char args[700], *out = NULL;
    json_error_t err;
    json_t *root, *v0, *run0;

    snprintf(args, sizeof args, "bench generations --items 2000 --runs 1 --generations 2,3 "
             "--value-size 40 --json --dir '%s'", f->scratch);
    expect_rc(th_run_tide(args, 0, &out), 0, "tide bench generations --json");
    root = json_loads(out, 0, &err);
    if (root == NULL) fail_msg("the JSON does not parse: %s: %s", err.text, out);
    run0 = json_array_get(json_object_get(root, "runs"), 0);
    v0 = json_array_get(json_object_get(run0, "variants"), 1);
    expect_u64(json_integer_value(json_object_get(v0, "generations")), 3, "variant 2's G");
    expect_u64(json_integer_value(json_object_get(json_object_get(v0, "copy"), "copied")),
               2000, "COPY's copies in the JSON");
    expect_u64(json_integer_value(json_object_get(json_object_get(v0, "miss"), "found")), 0,
               "MISS's finds in the JSON");
    expect_u64(json_array_size(json_object_get(v0, "disk")), 3 + 2 - 1, "disk points of G=3");
    expect_u64(json_array_size(json_object_get(json_object_get(root, "summary"), "variants")), 2,
               "summary variants");
    json_decref(root);
    free(out);
    snprintf(args, sizeof args, "ls -A '%s'", f->scratch);
    expect_rc(th_run(args, &out), 0, "listing the scratch directory");
    if (out[0] != '\0') fail_msg("the bench left %s in its --dir", out);
    free(out);
    expect_usage("--generations 1", "--generations '1'");
    expect_usage("--generations 2,x", "--generations '2,x'");
    expect_usage("--generations 2,3,4,5,6,7,8,9,10", "at most 8");
    expect_usage("--items 0", "--items '0'");
    expect_usage("--extra-spans 17", "--extra-spans '17'");
    expect_usage("--value-size 0", "--value-size '0'");
    expect_usage("--runs x", "--runs 'x'");
    expect_usage("--dir /nonexistent/tide", "is not an existing directory");
    expect_usage("--frob", "frob");
    expect_rc(th_run_tide("bench generations --help", 0, &out), 0, "bench generations --help");
    expect_contains(out, "Default 2,4", "the help gives the defaults");
    free(out);
}

/* ---- the release bench ---- */

/* One measurement each way of 16 MiB, half erased: the same objects are
 * made and the same erased both ways (the seed alone chooses), the arena's
 * release gives segments back, and the RSS figures are in the order of
 * the steps. */
static void release_measures_the_same_objects_both_ways(void **state)
{
    tide_bench_release_opts o;
    tide_bench_release_result on, off;

    (void)state;
    tide_bench_release_opts_init(&o);
    o.bytes = 16u << 20;
    o.free_pct = 50;
    o.seed = 7;
    expect_rc(tide_bench_release_measure(&o, &on), 0, "arena on");
    o.arena = 0;
    expect_rc(tide_bench_release_measure(&o, &off), 0, "arena off");
    expect_u64(on.objects, off.objects, "objects made both ways");
    expect_u64(on.kept, off.kept, "objects kept both ways");
    /* 16 MiB of objects of 64..4096 bytes (2080 on average): about 8000 */
    if (on.objects < 6000 || on.objects > 10000) fail_msg("objects: expected about 8000, got %" PRIu64, on.objects);
    if (on.kept < on.objects * 4 / 10 || on.kept > on.objects * 6 / 10)
        fail_msg("kept: expected about half of %" PRIu64 ", got %" PRIu64, on.objects, on.kept);
    if (on.released_segments == 0 || on.moved_bytes == 0)
        fail_msg("arena on: expected segments released and bytes moved, got %" PRIu64 " and %" PRIu64,
                 on.released_segments, on.moved_bytes);
    if (off.released_segments != 0 || off.moved_bytes != 0 || off.evacuate_ns != 0)
        fail_msg("arena off: expected no arena figures");
    expect_u64(on.floor_bytes, on.released_segments * o.segment_bytes, "the floor maps what the release gave back");
    if (on.floor_ns == 0) fail_msg("arena on: expected the kernel floor's madvise calls timed");
    if (off.floor_bytes != 0 || off.floor_ns != 0) fail_msg("arena off: expected no kernel floor");
    if (on.rss_full == 0 || on.rss_after > on.rss_erased)
        fail_msg("arena on: expected RSS read and not raised by the release: %" PRIu64 " -> %" PRIu64,
                 on.rss_erased, on.rss_after);
    o.free_pct = 100;
    expect_rc(tide_bench_release_measure(&o, &on), TIDE_EINVAL, "free_pct 100");
    expect_contains(tide_last_error(), "free_pct 100", "the error names the option");
}

static void release_cli_json_parses_and_bad_options_exit_2(void **state)
{
    char *out = NULL;
    json_error_t err;
    json_t *root;

    (void)state;
    expect_rc(th_run_tide("bench release --size 4MiB --runs 2 --json", 0, &out), 0, "tide bench release --json");
    root = json_loads(out, 0, &err);
    if (root == NULL) fail_msg("the JSON does not parse: %s: %s", err.text, out);
    expect_u64(json_integer_value(json_object_get(root, "runs")), 2, "runs in the JSON");
    expect_u64(json_integer_value(json_object_get(root, "bytes")), 4u << 20, "bytes in the JSON");
    if (!json_is_real(json_object_get(json_object_get(json_object_get(root, "arena_on"), "release_ms_per_gib"),
                                      "median")) ||
        !json_is_real(json_object_get(json_object_get(json_object_get(root, "arena_off"), "released_gib"), "max")) ||
        !json_is_real(json_object_get(json_object_get(json_object_get(root, "arena_on"), "kernel_floor_ms_per_gib"),
                                      "median")))
        fail_msg("expected each variant's figures with median, min and max: %s", out);
    json_decref(root);
    free(out);
    expect_usage_of("release", "--size 1KiB", "--size '1KiB'");
    expect_usage_of("release", "--object-size 64", "--object-size '64'");
    expect_usage_of("release", "--object-size 4096-64", "--object-size '4096-64'");
    expect_usage_of("release", "--object-size 1-2MiB", "--object-size '1-2MiB'");
    expect_usage_of("release", "--free 0", "--free '0'");
    expect_usage_of("release", "--free 100", "--free '100'");
    expect_usage_of("release", "--runs 0", "--runs '0'");
    expect_usage_of("release", "--seed -1", "--seed '-1'");
    expect_usage_of("release", "--frob", "frob");
    expect_usage_of("frobnicate", "", "'frobnicate' is not a bench");
    expect_rc(th_run_tide("bench release --help", 0, &out), 0, "bench release --help");
    expect_contains(out, "malloc_trim", "the help says what it compares");
    expect_contains(out, "floor", "the help says what the kernel's floor is");
    free(out);
}

/* ---- the archive bench ---- */

static th_ceph cluster;

static int ceph_setup(void **state)
{
    if (setup(state) != 0) return -1;
    return th_ceph_start(&cluster) < 0 ? -1 : 0;
}

static int ceph_teardown(void **state)
{
    th_ceph_stop(&cluster);
    return teardown(state);
}

/* The integer at `path` ("a.b.c", an array index as a number) in `j`;
 * fails the test when it is not there. */
static uint64_t jnum(json_t *j, const char *path)
{
    char buf[256], *save = NULL;

    snprintf(buf, sizeof buf, "%s", path);
    for (char *t = strtok_r(buf, ".", &save); t && j; t = strtok_r(NULL, ".", &save))
        j = json_is_array(j) ? json_array_get(j, strtoull(t, NULL, 10)) : json_object_get(j, t);
    if (!json_is_integer(j)) fail_msg("the JSON has no integer at %s", path);
    return (uint64_t)json_integer_value(j);
}

/* The counts of one run of `tide bench archive --json` (invariant 2 of
 * bench_archive_measure.c, read from outside). */
static void archive_run_adds_up(json_t *root, unsigned r, uint64_t keys, uint64_t puts)
{
    char p[128];
    uint64_t dat = jnum(root, "method.dat_bytes"), piece = jnum(root, "method.piece_bytes");

#define AT(fmt, ...) (snprintf(p, sizeof p, fmt, __VA_ARGS__), jnum(root, p))
    for (unsigned v = 0; v < 2; v++) {
        uint64_t inflight = AT("runs.%u.upload.%u.inflight", r, v);
        expect_u64(AT("runs.%u.upload.%u.dat_bytes", r, v), dat, "an upload's nudb.dat: the whole generation");
        expect_u64(AT("runs.%u.upload.%u.upload_buffers_bytes", r, v), inflight * piece,
                   "an upload's write buffers: inflight x piece");
        if (AT("runs.%u.upload.%u.writes", r, v) < (dat + piece - 1) / piece)
            fail_msg("run %u, inflight %" PRIu64 ": fewer writes than pieces of nudb.dat", r, inflight);
        if (AT("runs.%u.upload.%u.key_bytes", r, v) == 0 || AT("runs.%u.upload.%u.filter_bytes", r, v) == 0 ||
            AT("runs.%u.upload.%u.data_ns", r, v) == 0)
            fail_msg("run %u, inflight %" PRIu64 ": a seal without its key file, filter or time", r, inflight);
    }
    expect_u64(AT("runs.%u.read.local_hit.found", r), keys, "local hits found");
    expect_u64(AT("runs.%u.read.archive_hit.found", r), keys, "archive hits found");
    if (AT("runs.%u.read.archive_hit.reads", r) < 2 * keys)
        fail_msg("run %u: %" PRIu64 " RADOS reads for %" PRIu64 " archive hits, expected two or more each",
                 r, AT("runs.%u.read.archive_hit.reads", r), keys);
    if (AT("runs.%u.read.archive_hit.open_reads", r) < 3)
        fail_msg("run %u: the generation's open read less than its headers", r);
    expect_u64(AT("runs.%u.read.archive_miss_filter.found", r), 0, "misses found, with the filter");
    expect_u64(AT("runs.%u.read.archive_miss_no_filter.found", r), 0, "misses found, without");
    /* 10 bits a key: a filter says "maybe" for about 1% of absent keys */
    if (AT("runs.%u.read.archive_miss_filter.filtered", r) < keys / 2 ||
        AT("runs.%u.read.archive_miss_filter.reads", r) > keys / 2)
        fail_msg("run %u: the filter spared %" PRIu64 " of %" PRIu64 " misses, which read %" PRIu64, r,
                 AT("runs.%u.read.archive_miss_filter.filtered", r), keys,
                 AT("runs.%u.read.archive_miss_filter.reads", r));
    expect_u64(AT("runs.%u.read.archive_miss_no_filter.filtered", r), 0, "misses spared with no filter");
    if (AT("runs.%u.read.archive_miss_no_filter.reads", r) < keys)
        fail_msg("run %u: misses without a filter read %" PRIu64 " buckets for %" PRIu64 " keys", r,
                 AT("runs.%u.read.archive_miss_no_filter.reads", r), keys);
    expect_u64(AT("runs.%u.sync.local.puts", r), puts, "puts synced locally");
    expect_u64(AT("runs.%u.sync.local.archive_waits", r), 0, "archive waits with archive_sync local");
    expect_u64(AT("runs.%u.sync.archive.puts", r), puts, "puts synced to the archive");
    expect_u64(AT("runs.%u.sync.archive.archive_waits", r), puts + 1, "archive waits (the first, untimed, too)");
    expect_u64(AT("runs.%u.sync.archive.archive_failed", r), 0, "archive waits that failed");
#undef AT
}

static void archive_bench_counts_add_up_and_leave_the_pool_clean(void **state)
{
    fixture *f = *state;
    char args[PATH_MAX * 2 + 600], *out = NULL;
    json_error_t err;
    json_t *root;

    th_ceph_require(&cluster);
    snprintf(args, sizeof args, "bench archive --conf '%s' --pool %s --prefix tbench-%d --size 1MiB "
             "--keys 200 --puts 20 --runs 2 --inflight 1,4 --chunk 256KiB --piece 64KiB --json --dir '%s'",
             cluster.conf, cluster.pool, (int)getpid(), f->scratch);
    expect_rc(th_run_tide(args, 0, &out), 0, "tide bench archive --json");
    root = json_loads(out, 0, &err);
    if (root == NULL) fail_msg("the JSON does not parse: %s: %s", err.text, out);
    free(out);
    expect_u64(jnum(root, "method.items") > 200, 1, "a generation with more objects than keys asked");
    expect_u64(json_array_size(json_object_get(root, "runs")), 2, "runs in the JSON");
    expect_u64(jnum(root, "runs.0.upload.0.inflight"), 1, "run 1 measures inflight 1 first in its list");
    for (unsigned r = 0; r < 2; r++) archive_run_adds_up(root, r, 200, 20);
    if (!json_is_real(json_object_get(json_object_get(json_object_get(json_object_get(root, "summary"),
        "read"), "hit_vs_local_p50"), "median")))
        fail_msg("the summary lacks the ratio of the hits' medians");
    json_decref(root);
    snprintf(args, sizeof args, "rados -c '%s' -p %s ls", cluster.conf, cluster.pool);
    expect_rc(th_run(args, &out), 0, "listing the pool");
    if (strstr(out, "tbench-") != NULL) fail_msg("the bench left objects in the pool: %s", out);
    free(out);
    snprintf(args, sizeof args, "ls -A '%s'", f->scratch);
    expect_rc(th_run(args, &out), 0, "listing the scratch directory");
    if (out[0] != '\0') fail_msg("the bench left %s in its --dir", out);
    free(out);
}

static void archive_bench_without_a_cluster_or_with_bad_options_exits_2(void **state)
{
    (void)state;
    expect_usage_of("archive", "--size 1MiB", "--conf FILE is required");
    expect_usage_of("archive", "--conf /nonexistent/ceph.conf", "is not a readable file");
    expect_usage_of("archive", "--size 1KiB", "--size '1KiB'");
    expect_usage_of("archive", "--inflight 0", "--inflight '0'");
    expect_usage_of("archive", "--inflight 1,2,3,4,5,6,7,8,9", "at most 8");
    expect_usage_of("archive", "--chunk 100KiB", "--chunk '100KiB'");
    expect_usage_of("archive", "--keys 0", "--keys '0'");
    expect_usage_of("archive", "--frob", "frob");
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(a_run_stores_the_fixture_formula_for_seed_0),
        T(the_seed_moves_every_key),
        T(a_run_counts_its_commits_syncs_and_bytes),
        T(fetching_through_the_map_adds_no_anonymous_memory),
        T(stores_and_the_directory_go_unless_kept),
        T(a_failed_run_says_what_failed_and_keeps_the_directory),
        cmocka_unit_test(the_summary_takes_medians_minima_and_maxima),
        T(gens_counts_add_up),
        T(gens_keep_keeps_every_variant),
        T(gens_bad_options_are_refused),
        T(gens_cli_json_parses_and_bad_options_exit_2),
        cmocka_unit_test(release_measures_the_same_objects_both_ways),
        cmocka_unit_test(release_cli_json_parses_and_bad_options_exit_2),
        cmocka_unit_test_setup_teardown(archive_bench_counts_add_up_and_leave_the_pool_clean, ceph_setup,
                                        ceph_teardown),
        cmocka_unit_test(archive_bench_without_a_cluster_or_with_bad_options_exits_2),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
