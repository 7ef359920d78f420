/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_gens.c: the generations benchmark, the engine of `tide bench
 * generations`: the extra cost of a fetch that misses the newest
 * generation, the copy-forward rate, and the disk against bytes written.
 *
 * A run runs every variant once on a fresh directory each:
 *
 *   plain  tide_gens with online_delete 0 (one plain store): N inserts, a
 *          sync, then (e) N fetches of them: the baseline.
 *   G      tide_gens with online_delete 1, keep G: G + extra_spans spans of
 *          N inserts each, with tide_gens_sync and tide_gens_rotate between
 *          two spans (the disk point of each rotation is recorded), a sync
 *          at the end; the last G spans' generations are held, N objects
 *          each. Then, each over N fetches:
 *            (a) NEWEST  keys of the newest span;
 *            (b) COPY    keys of the oldest kept span: each read copies the
 *                        object into the newest; a tide_gens_sync ends the
 *                        phase inside its timing (the copies made durable);
 *            (c) AGAIN   the same keys again (now in the newest);
 *            (d) MISS    keys never inserted (every generation looked in).
 *
 * Data: item i's key is stream(base + 2i + 1, 32) and its value
 * stream(base + 2i + 2, value_size), base = seed << 33 (bench_store.c's
 * formula, so item i is the same object in both benches); span s holds
 * items [sN, (s+1)N); the misses are items past the last span. A phase's
 * keys, in a shuffled order (Fisher-Yates from the seed, the run and the
 * phase), and the first word of each expected value are computed into
 * arrays before its clocks start: the timed loop does the fetch, a
 * compare of the length and the first 8 bytes, and a free.
 *
 * Clocks: CLOCK_PROCESS_CPUTIME_ID (every thread of the process: the
 * stores' commit threads included, so (b)'s commits are counted) and
 * CLOCK_MONOTONIC, read right before the first fetch and after the last
 * (after the sync for (b)); the file reads are tide_io_posix()'s counters,
 * process-wide (nothing else in the process reads while a phase runs).
 *
 * Invariants:
 *   1. A phase whose counts do not add up fails the run (TIDE_ECORRUPT):
 *      NEWEST and AGAIN find every key in the newest and copy nothing,
 *      COPY copies each key exactly once, MISS finds nothing; a wrong
 *      value fails it too. A benchmark of wrong behaviour is meaningless.
 *   2. A variant's directory is removed (through tide_io) unless opts.keep,
 *      except after a failure: then it stays in run_dir, and the bench
 *      directory with it.
 *   3. Nothing timed generates data: keys and expected words are ready
 *      in memory before the clocks start.
 *
 * Never: print. The CLI says what happened.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_gens.h"
#include "gen/gens.h"
#include "io/io.h"
#include "tide/error.h"
#include "store/full.h"
#include "util/assert.h"
#include "util/err.h"
#include "util/random.h"

/* ---- data ---- */

/* The first n bytes of the splitmix64 sequence from s, little-endian. */
static void fill_stream(uint64_t s, unsigned char *out, size_t n)
{
    for (size_t at = 0; at < n; at += 8) {
        uint64_t w = tide_random_next64(&s);
        for (size_t j = 0; j < 8 && at + j < n; j++) out[at + j] = (unsigned char)(w >> (8 * j));
    }
}

static uint64_t item_seed(const tide_bench_gens *b, uint64_t i, unsigned which)
{
    return (b->opts.seed << 33) + 2 * i + which;
}

/* The first min(8, value_size) bytes of item i's value, as a word. */
static uint64_t first_word(const tide_bench_gens *b, uint64_t i)
{
    unsigned char w[8] = { 0 };
    uint64_t v = 0;
    size_t n = b->opts.value_size < 8 ? (size_t)b->opts.value_size : 8;
    fill_stream(item_seed(b, i, 2), w, n);
    memcpy(&v, w, sizeof v);
    return v;
}

/* Keys and expected words of items [from, from + N) in a shuffled order,
 * into b->keys and b->want. */
static void prepare(tide_bench_gens *b, uint64_t from, uint64_t shuffle_seed)
{
    uint64_t n = b->opts.items, s = shuffle_seed;

    for (uint64_t k = 0; k < n; k++) b->want[k] = k;
    for (uint64_t k = n - 1; k > 0; k--) {
        uint64_t j = tide_random_next64(&s) % (k + 1), t = b->want[k];
        b->want[k] = b->want[j];
        b->want[j] = t;
    }
    for (uint64_t k = 0; k < n; k++) {
        uint64_t i = from + b->want[k];
        fill_stream(item_seed(b, i, 1), b->keys + k * TIDE_BENCH_KEY_SIZE, TIDE_BENCH_KEY_SIZE);
        b->want[k] = first_word(b, i);
    }
}

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- a directory removed through tide_io ---- */

static int remove_entry(void *arg, const char *name, int is_dir);

static int remove_tree(const char *dir)
{
    tide_io *io = tide_io_posix();
    int rc = io->list(io, dir, remove_entry, (void *)dir);
    if (rc == 0) rc = io->rmdir(io, dir);
    return rc == TIDE_ENOENT ? 0 : rc;
}

static int remove_entry(void *arg, const char *name, int is_dir)
{
    tide_io *io = tide_io_posix();
    char p[TIDE_BENCH_PATH_MAX + 400];

    snprintf(p, sizeof p, "%s/%s", (const char *)arg, name);
    return is_dir ? remove_tree(p) : io->unlink(io, p);
}

/* ---- one variant ---- */

typedef struct variant {
    tide_bench_gens *b;
    tide_gens *g;
    unsigned run, gkeep;         /* gkeep 0: the plain store */
    tide_bench_gens_result *out;
    const char *step;
} variant;

/* A failed call: the message says the variant, the step and where the
 * directory is left. */
static int failed(variant *v, int rc)
{
    char msg[600];
    snprintf(msg, sizeof msg, "%s", tide_last_error());
    if (v->gkeep)
        return tide_err_set(rc, "G=%u, %s: %s (left in %s)", v->gkeep, v->step, msg, v->b->run_dir);
    return tide_err_set(rc, "plain store, %s: %s (left in %s)", v->step, msg, v->b->run_dir);
}

static int open_variant(variant *v)
{
    tide_gens_opts o;

    tide_gens_opts_init(&o);
    o.online_delete = v->gkeep != 0;
    o.keep = v->gkeep;
    o.key_size = TIDE_BENCH_KEY_SIZE;
    o.back_off_ms = 0;           /* the drop's pauses are for a serving node */
    v->step = "open";
    return tide_gens_open(&v->g, v->b->run_dir, &o);
}

/* Insert the N items of span s, then sync. */
static int fill_span(variant *v, uint64_t s)
{
    tide_bench_gens *b = v->b;
    unsigned char key[TIDE_BENCH_KEY_SIZE];
    int rc;

    v->step = "fill: insert";
    for (uint64_t i = s * b->opts.items; i < (s + 1) * b->opts.items; i++) {
        fill_stream(item_seed(b, i, 1), key, sizeof key);
        fill_stream(item_seed(b, i, 2), b->value, (size_t)b->opts.value_size);
        rc = tide_gens_insert(v->g, key, b->value, (size_t)b->opts.value_size, NULL);
        if (rc) return rc;
    }
    v->step = "fill: sync";
    return tide_gens_sync(v->g);
}

/* Every span, a rotation between two, a disk point after each rotation. */
static int fill(variant *v)
{
    uint64_t spans = v->gkeep ? v->gkeep + v->b->opts.extra_spans : 1, t0 = wall_ns();
    uint64_t per = v->b->opts.items * (TIDE_BENCH_KEY_SIZE + v->b->opts.value_size);
    int rc = 0;

    for (uint64_t s = 0; s < spans; s++) {
        rc = fill_span(v, s);
        if (rc || s + 1 == spans) break;
        {
            tide_gens_rotate_report rep;
            tide_gens_info info;
            tide_store_info si;
            tide_bench_gens_disk *d = &v->out->disk[v->out->ndisk];

            v->step = "fill: rotate";
            tide_gens_get_info(v->g, &info);
            d->disk_before_bytes = info.disk_bytes;
            rc = tide_gens_rotate(v->g, &rep);
            if (rc) break;
            tide_gens_get_info(v->g, &info);
            tide_gens_store_info(v->g, &si);
            d->rotation = v->out->ndisk + 1;
            d->generations = info.count;
            d->disk_bytes = info.disk_bytes;
            d->written_bytes = si.bytes_written;
            d->payload_bytes = (s + 1) * per;
            d->deleted_bytes = rep.deleted_bytes;
            v->out->ndisk++;
        }
    }
    if (v->out) v->out->setup_ns = wall_ns() - t0;
    return rc;
}

typedef struct snapshot {
    uint64_t cpu, wall, reads, bytes_read, copied, copied_bytes, older, lookups;
} snapshot;

static void snap(variant *v, snapshot *s)
{
    tide_io *io = tide_io_posix();
    tide_gens_info info;
    tide_store_info si;

    tide_gens_get_info(v->g, &info);
    tide_gens_store_info(v->g, &si);
    s->lookups = si.key_map_views + si.key_bucket_reads;
    s->copied = info.copied_forward;
    s->copied_bytes = info.copied_forward_bytes;
    s->older = info.older_lookups;
    s->reads = __atomic_load_n(&io->reads, __ATOMIC_RELAXED);
    s->bytes_read = __atomic_load_n(&io->bytes_read, __ATOMIC_RELAXED);
    s->wall = wall_ns();
    s->cpu = cpu_ns();           /* last: nothing above is timed */
}

static void snap_diff(const snapshot *a, const snapshot *z, tide_bench_gens_phase *p)
{
    p->cpu_ns = z->cpu - a->cpu;
    p->wall_ns = z->wall - a->wall;
    p->reads = z->reads - a->reads;
    p->key_lookups = z->lookups - a->lookups;
    p->bytes_read = z->bytes_read - a->bytes_read;
    p->copied = z->copied - a->copied;
    p->copied_bytes = z->copied_bytes - a->copied_bytes;
    p->older_lookups = z->older - a->older;
}

/* The timed loop over b->keys: fetch, check, free. */
static int fetch_all(variant *v, tide_bench_gens_phase *p, int expect_found)
{
    tide_bench_gens *b = v->b;
    size_t vs = (size_t)b->opts.value_size, n8 = vs < 8 ? vs : 8;
    uint64_t newest = tide_gens_newest_id(v->g);

    for (uint64_t k = 0; k < b->opts.items; k++) {
        void *got = NULL;
        size_t len = 0;
        uint64_t gid = 0, w = 0;
        int rc = tide_gens_fetch(v->g, b->keys + k * TIDE_BENCH_KEY_SIZE, &got, &len, &gid);

        p->fetches++;
        if (rc == TIDE_ENOTFOUND && !expect_found) continue;
        if (rc) return rc;
        p->found++;
        p->in_newest += gid == newest;
        memcpy(&w, got, n8);
        free(got);
        if (len != vs || w != b->want[k])
            return tide_err_set(TIDE_ECORRUPT, "the %llu-th fetch returned %zu bytes that are "
                                "not the value inserted", (unsigned long long)k + 1, len);
    }
    return 0;
}

/* One phase over the items of span `from_span` (shuffled per run and
 * phase), timed; COPY ends with a sync inside the timing. */
static int phase(variant *v, int id, uint64_t from_span, const char *name)
{
    tide_bench_gens_phase *p = v->gkeep ? &v->out->ph[id] : &v->b->plain[v->run - 1];
    snapshot a, z;
    int rc;

    memset(p, 0, sizeof *p);
    prepare(v->b, from_span * v->b->opts.items,
            (v->b->opts.seed << 20) ^ ((uint64_t)v->run << 8) ^ (uint64_t)id);
    v->step = name;
    snap(v, &a);
    rc = fetch_all(v, p, id != TIDE_BG_MISS);
    if (rc == 0 && id == TIDE_BG_COPY) rc = tide_gens_sync(v->g);
    snap(v, &z);
    snap_diff(&a, &z, p);
    return rc;
}

/* Invariant 1: the counts of a G variant's phases. */
static int check_counts(variant *v)
{
    const tide_bench_gens_phase *ph = v->out->ph;
    uint64_t n = v->b->opts.items;

    v->step = "counts";
    if (ph[TIDE_BG_NEWEST].in_newest != n || ph[TIDE_BG_NEWEST].copied != 0)
        return tide_err_set(TIDE_ECORRUPT, "NEWEST found %llu of %llu in the newest and copied "
                            "%llu", (unsigned long long)ph[TIDE_BG_NEWEST].in_newest,
                            (unsigned long long)n, (unsigned long long)ph[TIDE_BG_NEWEST].copied);
    if (ph[TIDE_BG_COPY].copied != n || ph[TIDE_BG_COPY].in_newest != n)
        return tide_err_set(TIDE_ECORRUPT, "COPY copied %llu of %llu forward",
                            (unsigned long long)ph[TIDE_BG_COPY].copied, (unsigned long long)n);
    if (ph[TIDE_BG_AGAIN].in_newest != n || ph[TIDE_BG_AGAIN].copied != 0)
        return tide_err_set(TIDE_ECORRUPT, "AGAIN found %llu of %llu in the newest",
                            (unsigned long long)ph[TIDE_BG_AGAIN].in_newest, (unsigned long long)n);
    if (ph[TIDE_BG_MISS].found != 0)
        return tide_err_set(TIDE_ECORRUPT, "MISS found %llu keys never inserted",
                            (unsigned long long)ph[TIDE_BG_MISS].found);
    return 0;
}

static int run_g(variant *v)
{
    uint64_t spans = v->gkeep + v->b->opts.extra_spans;
    int rc;

    rc = fill(v);
    if (rc == 0) rc = phase(v, TIDE_BG_NEWEST, spans - 1, "NEWEST");
    if (rc == 0) rc = phase(v, TIDE_BG_COPY, spans - v->gkeep, "COPY");
    if (rc == 0) rc = phase(v, TIDE_BG_AGAIN, spans - v->gkeep, "AGAIN");
    if (rc == 0) rc = phase(v, TIDE_BG_MISS, spans, "MISS");
    if (rc == 0) rc = check_counts(v);
    return rc;
}

static int run_plain(variant *v)
{
    tide_bench_gens_phase *p = &v->b->plain[v->run - 1];
    int rc = fill(v);

    if (rc == 0) rc = phase(v, TIDE_BG_NEWEST, 0, "PLAIN");
    if (rc == 0 && p->found != v->b->opts.items)
        rc = tide_err_set(TIDE_ECORRUPT, "PLAIN found %llu of %llu",
                          (unsigned long long)p->found, (unsigned long long)v->b->opts.items);
    return rc;
}

/* Variant `gkeep` (0: plain) of run `run`, in its own directory. */
static int run_variant(tide_bench_gens *b, unsigned run, unsigned gkeep,
                       tide_bench_gens_result *out)
{
    variant v = { .b = b, .run = run, .gkeep = gkeep, .out = out, .step = "mkdir" };
    tide_io *io = tide_io_posix();
    int rc, crc;

    if (gkeep) snprintf(b->run_dir, sizeof b->run_dir, "%s/run-%u-g%u", b->dir, run, gkeep);
    else snprintf(b->run_dir, sizeof b->run_dir, "%s/run-%u-plain", b->dir, run);
    rc = io->mkdir(io, b->run_dir);
    if (rc == 0) rc = open_variant(&v);
    if (rc == 0) rc = gkeep ? run_g(&v) : run_plain(&v);
    if (v.g) {
        crc = tide_gens_close(v.g);
        if (crc && rc == 0) {
            v.step = "close";
            rc = crc;
        }
    }
    if (rc) {
        b->dir_made = 0;             /* keep it: the failed variant is inside */
        return failed(&v, rc);
    }
    if (!b->opts.keep && (rc = remove_tree(b->run_dir)) != 0) {
        v.step = "removing the directory";
        return failed(&v, rc);
    }
    return 0;
}

int tide_bench_gens_run(tide_bench_gens *b, unsigned run)
{
    unsigned nv = b->opts.ngens + 1;     /* variant 0: plain */
    int rc = 0;

    TIDE_ASSERT(run >= 1 && run <= b->opts.runs);
    for (unsigned k = 0; k < nv && rc == 0; k++) {
        unsigned vi = (k + run - 1) % nv;
        tide_bench_gens_result *out = vi ? &b->res[(size_t)(run - 1) * b->opts.ngens + vi - 1]
                                         : NULL;
        if (out) {
            tide_bench_gens_disk *disk = out->disk;
            memset(out, 0, sizeof *out);
            out->disk = disk;
            out->g = b->opts.gens[vi - 1];
        }
        rc = run_variant(b, run, vi ? b->opts.gens[vi - 1] : 0, out);
    }
    return rc;
}

/* ---- statistics ---- */

static tide_bench_stat stats(double *v, size_t n)
{
    return ti_bench_stat_sorted(v, n);
}

static double us_per(const tide_bench_gens_phase *p)
{
    return p->fetches ? (double)p->cpu_ns / 1e3 / (double)p->fetches : 0;
}

static double per_s(uint64_t count, uint64_t ns)
{
    return ns ? (double)count * 1e9 / (double)ns : 0;
}

/* The figures of phase p[r] (r over the runs) against the plain store's
 * and `newest`'s of the same run (NULL: ratios left 0). */
static void figures(const tide_bench_gens_phase *const *p, const tide_bench_gens_phase *plain,
                    const tide_bench_gens_phase *const *newest, size_t n,
                    tide_bench_gens_figures *f)
{
    double a[6][TIDE_BENCH_RUNS_MAX];

    for (size_t r = 0; r < n; r++) {
        a[0][r] = us_per(p[r]);
        a[1][r] = per_s(p[r]->fetches, p[r]->cpu_ns);
        a[2][r] = per_s(p[r]->fetches, p[r]->wall_ns);
        a[3][r] = p[r]->fetches ? (double)p[r]->reads / (double)p[r]->fetches : 0;
        a[4][r] = us_per(&plain[r]) > 0 ? a[0][r] / us_per(&plain[r]) : 0;
        a[5][r] = newest && us_per(newest[r]) > 0 ? a[0][r] / us_per(newest[r]) : 0;
    }
    f->cpu_us = stats(a[0], n);
    f->cpu_per_s = stats(a[1], n);
    f->wall_per_s = stats(a[2], n);
    f->reads = stats(a[3], n);
    f->vs_plain = stats(a[4], n);
    f->vs_newest = stats(a[5], n);
}

/* Variant v's COPY rates and MISS's cost per older generation. */
static void copy_and_miss(const tide_bench_gens *b, unsigned v, size_t n,
                          tide_bench_gens_summary *s)
{
    double objs[TIDE_BENCH_RUNS_MAX], bytes[TIDE_BENCH_RUNS_MAX], miss[TIDE_BENCH_RUNS_MAX];

    for (size_t r = 0; r < n; r++) {
        const tide_bench_gens_result *x = tide_bench_gens_at(b, (unsigned)r + 1, v);
        const tide_bench_gens_phase *c = &x->ph[TIDE_BG_COPY];
        objs[r] = per_s(c->copied, c->cpu_ns);
        bytes[r] = per_s(c->copied_bytes, c->cpu_ns);
        miss[r] = (us_per(&x->ph[TIDE_BG_MISS]) - us_per(&x->ph[TIDE_BG_NEWEST])) /
                  (double)(x->g - 1);
    }
    s->copy_objects_per_s[v] = stats(objs, n);
    s->copy_bytes_per_s[v] = stats(bytes, n);
    s->miss_us_per_older[v] = stats(miss, n);
}

/* s->miss_slope_us: from the smallest G to the largest, per run. */
static void miss_slope(const tide_bench_gens *b, size_t n, tide_bench_gens_summary *s)
{
    double d[TIDE_BENCH_RUNS_MAX];
    unsigned lo = 0, hi = 0;

    for (unsigned v = 1; v < b->opts.ngens; v++) {
        if (b->opts.gens[v] < b->opts.gens[lo]) lo = v;
        if (b->opts.gens[v] > b->opts.gens[hi]) hi = v;
    }
    s->miss_slope_ok = b->opts.gens[hi] > b->opts.gens[lo];
    if (!s->miss_slope_ok) return;
    for (size_t r = 0; r < n; r++)
        d[r] = (us_per(&tide_bench_gens_at(b, (unsigned)r + 1, hi)->ph[TIDE_BG_MISS]) -
                us_per(&tide_bench_gens_at(b, (unsigned)r + 1, lo)->ph[TIDE_BG_MISS])) /
               (double)(b->opts.gens[hi] - b->opts.gens[lo]);
    s->miss_slope_us = stats(d, n);
}

void tide_bench_gens_summarize(const tide_bench_gens *b, tide_bench_gens_summary *s)
{
    const tide_bench_gens_phase *p[TIDE_BENCH_RUNS_MAX], *nw[TIDE_BENCH_RUNS_MAX];
    size_t n = b->opts.runs > TIDE_BENCH_RUNS_MAX ? TIDE_BENCH_RUNS_MAX : b->opts.runs;

    memset(s, 0, sizeof *s);
    s->runs = n;
    for (size_t r = 0; r < n; r++) p[r] = &b->plain[r];
    figures(p, b->plain, NULL, n, &s->plain);
    for (unsigned v = 0; v < b->opts.ngens; v++) {
        for (size_t r = 0; r < n; r++)
            nw[r] = &tide_bench_gens_at(b, (unsigned)r + 1, v)->ph[TIDE_BG_NEWEST];
        for (int id = 0; id < TIDE_BG_PHASES; id++) {
            for (size_t r = 0; r < n; r++) p[r] = &tide_bench_gens_at(b, (unsigned)r + 1, v)->ph[id];
            figures(p, b->plain, nw, n, &s->ph[v][id]);
        }
        copy_and_miss(b, v, n, s);
    }
    miss_slope(b, n, s);
}

/* ---- the bench ---- */

void tide_bench_gens_opts_init(tide_bench_gens_opts *o)
{
    memset(o, 0, sizeof *o);
    o->items = 100000;
    o->value_size = 200;
    o->runs = 3;
    o->gens[0] = 2;
    o->gens[1] = 4;
    o->ngens = 2;
    o->extra_spans = 2;
    o->parent = "/tmp";
}

static int check_opts(const tide_bench_gens_opts *o)
{
    if (o->items < 1 || o->items > TIDE_BENCH_GENS_ITEMS_MAX)
        return tide_err_set(TIDE_EINVAL, "items %llu: not from 1 to %u",
                            (unsigned long long)o->items, TIDE_BENCH_GENS_ITEMS_MAX);
    if (o->value_size < 1 || o->value_size > TIDE_VALUE_MAX)
        return tide_err_set(TIDE_EINVAL, "value size %llu: not from 1 to %llu",
                            (unsigned long long)o->value_size, (unsigned long long)TIDE_VALUE_MAX);
    if (o->runs < 1 || o->runs > TIDE_BENCH_RUNS_MAX)
        return tide_err_set(TIDE_EINVAL, "runs %llu: not from 1 to %u",
                            (unsigned long long)o->runs, TIDE_BENCH_RUNS_MAX);
    if (o->ngens < 1 || o->ngens > TIDE_BENCH_GENS_VARIANTS_MAX)
        return tide_err_set(TIDE_EINVAL, "%u values of G: from 1 to %u", o->ngens,
                            TIDE_BENCH_GENS_VARIANTS_MAX);
    for (unsigned i = 0; i < o->ngens; i++)
        if (o->gens[i] < TIDE_GEN_MIN || o->gens[i] > TIDE_GEN_MAX)
            return tide_err_set(TIDE_EINVAL, "G %u: not from %u to %u", o->gens[i],
                                TIDE_GEN_MIN, TIDE_GEN_MAX);
    if (o->extra_spans > TIDE_BENCH_GENS_EXTRA_MAX)
        return tide_err_set(TIDE_EINVAL, "extra spans %u: more than %u", o->extra_spans,
                            TIDE_BENCH_GENS_EXTRA_MAX);
    return 0;
}

/* The machine line's facts (the store bench's, read the same way). */
static void read_machine(tide_bench_gens *b)
{
    ti_bench_machine(&b->nproc, b->kernel, sizeof b->kernel);
}

int tide_bench_gens_begin(tide_bench_gens *b, const tide_bench_gens_opts *o)
{
    size_t nres;
    int rc;

    memset(b, 0, sizeof *b);
    b->opts = *o;
    if ((rc = check_opts(o)) != 0) return rc;
    snprintf(b->dir, sizeof b->dir, "%s/tide-bench-XXXXXX", o->parent);
    if (mkdtemp(b->dir) == NULL)
        return tide_err_sys(errno, "cannot make a directory under %s", o->parent);
    b->dir_made = 1;
    read_machine(b);
    nres = (size_t)o->runs * o->ngens;
    b->keys = malloc((size_t)o->items * TIDE_BENCH_KEY_SIZE);
    b->want = malloc((size_t)o->items * sizeof *b->want);
    b->value = malloc((size_t)o->value_size);
    b->plain = calloc((size_t)o->runs, sizeof *b->plain);
    b->res = calloc(nres, sizeof *b->res);
    if (!b->keys || !b->want || !b->value || !b->plain || !b->res)
        return tide_err_set(TIDE_ENOMEM, "no memory for %llu items",
                            (unsigned long long)o->items);
    for (size_t i = 0; i < nres; i++) {
        unsigned g = o->gens[i % o->ngens];
        b->res[i].disk = calloc(g + o->extra_spans, sizeof *b->res[i].disk);
        if (b->res[i].disk == NULL) return tide_err_set(TIDE_ENOMEM, "no memory");
    }
    return 0;
}

void tide_bench_gens_end(tide_bench_gens *b)
{
    tide_io *io = tide_io_posix();

    if (b->dir_made && !b->opts.keep) io->rmdir(io, b->dir);
    b->dir_made = 0;
    if (b->res)
        for (size_t i = 0; i < (size_t)b->opts.runs * b->opts.ngens; i++) free(b->res[i].disk);
    free(b->res);
    free(b->plain);
    free(b->keys);
    free(b->want);
    free(b->value);
    b->res = NULL;
    b->plain = NULL;
    b->keys = b->value = NULL;
    b->want = NULL;
}
