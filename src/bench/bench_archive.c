/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_archive.c: the archive benchmark, the engine of `tide bench
 * archive`: its options, the generation it measures, the order of a run,
 * the statistics, and what it removes. The measurements themselves are
 * bench_archive_measure.c's.
 *
 * Begin writes one generation of opts.size bytes (item i's key and value
 * are the store bench's, bench_store.h, so the same seed gives the same
 * objects) with tide_gens in PARENT/tide-bench-XXXXXX/data (online delete,
 * keep 2), syncs it and rotates, so generation 1 is read-only and complete
 * and generation 2 the empty newest: what a node's archive seals. It then
 * uploads it once under PREFIX-read and waits for the seal: the copy every
 * run's archive reads ask.
 *
 * A run has three sections, each variant's order starting one later each
 * run (run 1: 1, 4, 16; run 2: 4, 16, 1; ...) so that a slow spell of a
 * shared machine falls on each in turn:
 *
 *   upload  each value of inflight: the generation uploaded and sealed
 *           under PREFIX-RUN-upINFLIGHT, then that prefix's objects removed;
 *   read    LOCAL, HIT, MISS_FILTER, MISS_NOFILTER: opts.keys keys each,
 *           the present ones (LOCAL and HIT ask the same, in the same order)
 *           drawn by a keyed permutation of the generation's items from the
 *           seed and the run, the absent ones items past the generation,
 *           new each run;
 *   sync    archive_sync local and archive, a fresh node and prefix each.
 *
 * The memory it holds for long is counted as the node counts its own: the
 * archives' write buffers and filters under "archive_upload" and
 * "archive_filters" (the node's consumers, registered by the same names),
 * the bench's keys, items and latencies under "bench".
 *
 * Invariants:
 *   1. Every object the bench writes is under its prefix and is removed:
 *      each measurement's by the measurement, the read copy's by end, so
 *      a bench leaves the pool as it found it (bench_archive_measure.c,
 *      invariant 1).
 *   2. The local directory is removed unless opts.keep, except after a
 *      failure: then it stays, and the message names it.
 *   3. Nothing timed generates data (bench_archive_measure.c, invariant 3).
 *
 * Never: print. The CLI says what happened.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "archive/catalog.h"
#include "bench/bench_archive_impl.h"
#include "gen/gens.h"
#include "io/io.h"
#include "mem/account.h"
#include "store/format.h"
#include "tide/error.h"
#include "util/assert.h"
#include "util/clock.h"
#include "util/err.h"

/* ---- removals ---- */

typedef struct name_list {
    char **v;
    size_t n, cap;
} name_list;

static int collect(void *arg, const char *oid)
{
    name_list *l = arg;

    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        char **v = realloc(l->v, cap * sizeof *v);
        if (v == NULL) return tide_err_set(TIDE_ENOMEM, "out of memory listing the pool");
        l->v = v;
        l->cap = cap;
    }
    if ((l->v[l->n] = strdup(oid)) == NULL)
        return tide_err_set(TIDE_ENOMEM, "out of memory listing the pool");
    l->n++;
    return 0;
}

int ti_bench_archive_remove(tide_bench_archive *b, const char *prefix)
{
    char dot[TIDE_ARCHIVE_PREFIX_MAX + 2];
    name_list l = { NULL, 0, 0 };
    int rc;

    if (b->r == NULL) return 0;
    snprintf(dot, sizeof dot, "%s.", prefix);        /* "p-1" is not "p-10"'s */
    rc = tide_rados_list(b->r, dot, collect, &l);
    for (size_t i = 0; i < l.n; i++) {
        if (rc == 0) rc = tide_rados_remove(b->r, l.v[i]);
        free(l.v[i]);
    }
    free(l.v);
    return rc ? tide_err_prefix(rc, "removing the objects of prefix %s", prefix) : 0;
}

static int remove_entry(void *arg, const char *name, int is_dir)
{
    tide_io *io = tide_io_posix();
    char p[TIDE_BENCH_PATH_MAX + 400];

    snprintf(p, sizeof p, "%s/%s", (const char *)arg, name);
    return is_dir ? ti_bench_archive_remove_tree(p) : io->unlink(io, p);
}

int ti_bench_archive_remove_tree(const char *dir)
{
    tide_io *io = tide_io_posix();
    int rc = io->list(io, dir, remove_entry, (void *)dir);

    if (rc == 0) rc = io->rmdir(io, dir);
    return rc == TIDE_ENOENT ? 0 : rc;
}

/* ---- statistics ---- */

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, c = *(const uint64_t *)y;
    return a < c ? -1 : a > c;
}

/* The nearest-rank percentile pct/1000 of sorted v[0..n). */
static uint64_t rank(const uint64_t *v, uint64_t n, uint64_t per_mille)
{
    uint64_t k = (per_mille * n + 999) / 1000;
    return v[k ? k - 1 : 0];
}

void ti_bench_archive_percentiles(uint64_t *lat, uint64_t n, uint64_t *p50, uint64_t *p90,
                                  uint64_t *p99, uint64_t *max, uint64_t *total)
{
    *p50 = *p90 = *p99 = *max = *total = 0;
    if (n == 0) return;
    qsort(lat, (size_t)n, sizeof *lat, cmp_u64);
    *p50 = rank(lat, n, 500);
    *p90 = rank(lat, n, 900);
    *p99 = rank(lat, n, 990);
    *max = lat[n - 1];
    for (uint64_t i = 0; i < n; i++) *total += lat[i];
}

static tide_bench_stat stats(double *v, size_t n)
{
    return ti_bench_stat_sorted(v, n);
}

static double ratio(double a, double b)
{
    return b > 0 ? a / b : 0;
}

/* The figures of upload v in run r, in the summary's order. */
static void upload_figures(const tide_bench_archive *b, size_t r, unsigned v, double f[8])
{
    const tide_bench_archive_upload *u = &b->runs[r].up[v], *first = &b->runs[r].up[0];
    double mb_s = ratio((double)u->dat_bytes / 1e6, (double)u->data_ns / 1e9);

    f[0] = mb_s;
    f[1] = ratio(mb_s, ratio((double)first->dat_bytes / 1e6, (double)first->data_ns / 1e9));
    f[2] = (double)u->open_ns / 1e6;
    f[3] = (double)u->data_ns / 1e9;
    f[4] = (double)(u->key_ns + u->filter_ns + u->manifest_ns) / 1e9;
    f[5] = (double)u->key_ns / 1e9;
    f[6] = (double)u->filter_ns / 1e9;
    f[7] = (double)u->manifest_ns / 1e9;
}

static void summarize_uploads(const tide_bench_archive *b, size_t n, tide_bench_archive_summary *s)
{
    double a[8][TIDE_BENCH_RUNS_MAX], f[8];

    for (unsigned v = 0; v < b->opts.ninflight; v++) {
        for (size_t r = 0; r < n; r++) {
            upload_figures(b, r, v, f);
            for (int k = 0; k < 8; k++) a[k][r] = f[k];
        }
        s->up[v].mb_s = stats(a[0], n);
        s->up[v].vs_first = stats(a[1], n);
        s->up[v].open_ms = stats(a[2], n);
        s->up[v].data_s = stats(a[3], n);
        s->up[v].seal_s = stats(a[4], n);
        s->up[v].key_s = stats(a[5], n);
        s->up[v].filter_s = stats(a[6], n);
        s->up[v].manifest_s = stats(a[7], n);
    }
}

static void summarize_reads(const tide_bench_archive *b, size_t n, tide_bench_archive_summary *s)
{
    double a[6][TIDE_BENCH_RUNS_MAX], h50[TIDE_BENCH_RUNS_MAX], h99[TIDE_BENCH_RUNS_MAX];

    for (int id = 0; id < TIDE_BA_READS; id++) {
        for (size_t r = 0; r < n; r++) {
            const tide_bench_archive_read *p = &b->runs[r].rd[id];
            a[0][r] = (double)p->p50_ns / 1e3;
            a[1][r] = (double)p->p90_ns / 1e3;
            a[2][r] = (double)p->p99_ns / 1e3;
            a[3][r] = (double)p->max_ns / 1e3;
            a[4][r] = ratio((double)p->reads, (double)p->fetches);
            a[5][r] = (double)p->open_ns / 1e6;
        }
        s->rd[id].p50_us = stats(a[0], n);
        s->rd[id].p90_us = stats(a[1], n);
        s->rd[id].p99_us = stats(a[2], n);
        s->rd[id].max_us = stats(a[3], n);
        s->rd[id].reads = stats(a[4], n);
        s->rd[id].open_ms = stats(a[5], n);
    }
    for (size_t r = 0; r < n; r++) {
        const tide_bench_archive_read *hit = &b->runs[r].rd[TIDE_BA_HIT];
        const tide_bench_archive_read *local = &b->runs[r].rd[TIDE_BA_LOCAL];
        h50[r] = ratio((double)hit->p50_ns, (double)local->p50_ns);
        h99[r] = ratio((double)hit->p99_ns, (double)local->p99_ns);
    }
    s->hit_vs_local_p50 = stats(h50, n);
    s->hit_vs_local_p99 = stats(h99, n);
}

static void summarize_syncs(const tide_bench_archive *b, size_t n, tide_bench_archive_summary *s)
{
    double a[4][TIDE_BENCH_RUNS_MAX], r50[TIDE_BENCH_RUNS_MAX], r99[TIDE_BENCH_RUNS_MAX];

    for (int w = 0; w < TIDE_BA_SYNCS; w++) {
        for (size_t r = 0; r < n; r++) {
            const tide_bench_archive_sync *p = &b->runs[r].sy[w];
            a[0][r] = (double)p->p50_ns / 1e6;
            a[1][r] = (double)p->p90_ns / 1e6;
            a[2][r] = (double)p->p99_ns / 1e6;
            a[3][r] = (double)p->max_ns / 1e6;
        }
        s->sy[w].p50_ms = stats(a[0], n);
        s->sy[w].p90_ms = stats(a[1], n);
        s->sy[w].p99_ms = stats(a[2], n);
        s->sy[w].max_ms = stats(a[3], n);
    }
    for (size_t r = 0; r < n; r++) {
        const tide_bench_archive_sync *ar = &b->runs[r].sy[TIDE_BA_SYNC_ARCHIVE];
        const tide_bench_archive_sync *lo = &b->runs[r].sy[TIDE_BA_SYNC_LOCAL];
        r50[r] = ratio((double)ar->p50_ns, (double)lo->p50_ns);
        r99[r] = ratio((double)ar->p99_ns, (double)lo->p99_ns);
    }
    s->sync_vs_local_p50 = stats(r50, n);
    s->sync_vs_local_p99 = stats(r99, n);
}

void tide_bench_archive_summarize(const tide_bench_archive *b, tide_bench_archive_summary *s)
{
    size_t n = b->opts.runs > TIDE_BENCH_RUNS_MAX ? TIDE_BENCH_RUNS_MAX : (size_t)b->opts.runs;
    double load[TIDE_BENCH_RUNS_MAX];

    memset(s, 0, sizeof *s);
    s->runs = n;
    summarize_uploads(b, n, s);
    summarize_reads(b, n, s);
    summarize_syncs(b, n, s);
    for (size_t r = 0; r < n; r++) load[r] = b->runs[r].load1;
    s->load1 = stats(load, n);
}

/* ---- a run ---- */

/* The keys of read phase `id` of run `run` into b->keys and b->item; the
 * first fetch's key (present, beyond the phase's) into b->open_key. */
static void prepare(tide_bench_archive *b, unsigned run, int id)
{
    uint64_t n = b->opts.keys;
    tide_bench_perm perm;

    tide_bench_perm_init(&perm, b->items, tide_bench_fetch_seed(b->opts.seed, run));
    for (uint64_t k = 0; k < n; k++) {
        uint64_t i = id <= TIDE_BA_HIT ? tide_bench_perm_at(&perm, k)
                                       : b->items + (uint64_t)(run - 1) * n + k;
        b->item[k] = i;
        tide_bench_key(b->opts.seed, i, b->keys + k * TIDE_BENCH_KEY_SIZE);
    }
    tide_bench_key(b->opts.seed, tide_bench_perm_at(&perm, n), b->open_key);
}

static int run_sections(tide_bench_archive *b, unsigned run, tide_bench_archive_result *out)
{
    unsigned nv = b->opts.ninflight;
    char prefix[80];
    int rc = 0;

    for (unsigned k = 0; k < nv && rc == 0; k++) {
        unsigned v = (k + run - 1) % nv;
        snprintf(b->where, sizeof b->where, "upload at inflight %u", b->opts.inflight[v]);
        snprintf(prefix, sizeof prefix, "%s-%u-up%u", b->prefix, run, b->opts.inflight[v]);
        rc = ti_bench_archive_upload(b, b->opts.inflight[v], prefix, 0, &out->up[v]);
    }
    for (unsigned k = 0; k < TIDE_BA_READS && rc == 0; k++) {
        int id = (int)((k + run - 1) % TIDE_BA_READS);
        snprintf(b->where, sizeof b->where, "read phase %d", id);
        prepare(b, run, id);
        rc = ti_bench_archive_read(b, id, &out->rd[id]);
    }
    for (unsigned k = 0; k < TIDE_BA_SYNCS && rc == 0; k++) {
        int w = (int)((k + run - 1) % TIDE_BA_SYNCS);
        snprintf(b->where, sizeof b->where, "acknowledged writes %d", w);
        rc = ti_bench_archive_sync(b, run, w, &out->sy[w]);
    }
    return rc;
}

int tide_bench_archive_run(tide_bench_archive *b, unsigned run)
{
    tide_bench_archive_result *out = &b->runs[run - 1];
    tide_bench_sampler sm;
    double load[3] = { 0, 0, 0 };
    int rc;

    TIDE_ASSERT(run >= 1 && run <= b->opts.runs);
    memset(out, 0, sizeof *out);
    tide_bench_sampler_start(&sm);
    rc = run_sections(b, run, out);
    tide_bench_sampler_stop(&sm);
    out->peak_anon = sm.max_anon;
    out->peak_file = sm.max_file;
    if (getloadavg(load, 3) > 0) out->load1 = load[0];
    if (rc) {
        b->dir_made = 0;                 /* invariant 2: kept for a look */
        tide_err_prefix(rc, "run %u (the local files are left in %s)", run, b->dir);
    }
    return rc;
}

/* ---- the bench ---- */

void tide_bench_archive_opts_init(tide_bench_archive_opts *o)
{
    memset(o, 0, sizeof *o);
    o->pool = "tide";
    o->size = 256ull << 20;
    o->value_size = 200;
    o->runs = 3;
    o->keys = 10000;
    o->puts = 1000;
    o->inflight[0] = 1;
    o->inflight[1] = 4;
    o->inflight[2] = 16;
    o->ninflight = 3;
    o->chunk_bytes = TIDE_ARCHIVE_CHUNK_DEFAULT;
    o->piece_bytes = 1u << 20;
    o->filter_budget = 64u << 20;
    o->timeout_s = 10;
    o->parent = "/tmp";
}

static int prefix_ok(const char *p)
{
    size_t n = p ? strlen(p) : 0;

    if (n < 1 || n > TIDE_BENCH_ARCHIVE_PREFIX_MAX || p[0] == '-') return 0;
    for (size_t i = 0; i < n; i++)
        if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
              (p[i] >= '0' && p[i] <= '9') || p[i] == '_' || p[i] == '-'))
            return 0;
    return 1;
}

static int check_sizes(const tide_bench_archive_opts *o)
{
    if (o->size < TIDE_BENCH_ARCHIVE_SIZE_MIN || o->size > TIDE_BENCH_ARCHIVE_SIZE_MAX)
        return tide_err_set(TIDE_EINVAL, "size %llu: not from 1 MiB to 2 GiB",
                            (unsigned long long)o->size);
    if (o->value_size < 1 || o->value_size > 65536)
        return tide_err_set(TIDE_EINVAL, "value size %llu: not from 1 to 65536",
                            (unsigned long long)o->value_size);
    if (o->chunk_bytes < TIDE_ARCHIVE_CHUNK_MIN || o->chunk_bytes > TIDE_ARCHIVE_CHUNK_MAX ||
        o->chunk_bytes % 32768)
        return tide_err_set(TIDE_EINVAL, "chunk %llu: not a multiple of 32 KiB from 64 KiB to "
                            "128 MiB", (unsigned long long)o->chunk_bytes);
    if (o->piece_bytes < 32768 || o->piece_bytes > o->chunk_bytes || o->piece_bytes % 32768)
        return tide_err_set(TIDE_EINVAL, "piece %llu: not a multiple of 32 KiB from 32 KiB to "
                            "the chunk", (unsigned long long)o->piece_bytes);
    return 0;
}

static int check_opts(const tide_bench_archive_opts *o)
{
    if (o->conf == NULL || o->conf[0] == '\0')
        return tide_err_set(TIDE_EINVAL, "no cluster: the ceph.conf of a running cluster is "
                            "needed (scripts/ceph-up DIR prints CEPH_CONF=DIR/ceph.conf)");
    if (o->prefix && !prefix_ok(o->prefix))
        return tide_err_set(TIDE_EINVAL, "prefix \"%s\": expected 1 to %u characters of A-Z a-z "
                            "0-9 _ -, not starting with -", o->prefix, TIDE_BENCH_ARCHIVE_PREFIX_MAX);
    if (o->runs < 1 || o->runs > TIDE_BENCH_RUNS_MAX)
        return tide_err_set(TIDE_EINVAL, "runs %llu: not from 1 to %u",
                            (unsigned long long)o->runs, TIDE_BENCH_RUNS_MAX);
    if (o->keys < 1 || o->keys > TIDE_BENCH_ARCHIVE_KEYS_MAX)
        return tide_err_set(TIDE_EINVAL, "keys %llu: not from 1 to %u",
                            (unsigned long long)o->keys, TIDE_BENCH_ARCHIVE_KEYS_MAX);
    if (o->puts < 1 || o->puts > TIDE_BENCH_ARCHIVE_PUTS_MAX)
        return tide_err_set(TIDE_EINVAL, "puts %llu: not from 1 to %u",
                            (unsigned long long)o->puts, TIDE_BENCH_ARCHIVE_PUTS_MAX);
    if (o->ninflight < 1 || o->ninflight > TIDE_BENCH_ARCHIVE_INFLIGHT_MAX)
        return tide_err_set(TIDE_EINVAL, "%u values of inflight: from 1 to %u", o->ninflight,
                            TIDE_BENCH_ARCHIVE_INFLIGHT_MAX);
    for (unsigned i = 0; i < o->ninflight; i++)
        if (o->inflight[i] < 1 || o->inflight[i] > 256)
            return tide_err_set(TIDE_EINVAL, "inflight %u: not from 1 to 256", o->inflight[i]);
    if (o->timeout_s < 1 || o->timeout_s > 300)
        return tide_err_set(TIDE_EINVAL, "timeout %u s: not from 1 to 300", o->timeout_s);
    return check_sizes(o);
}

/* The generation: opts.size of records, synced and rotated (read-only). */
static int fill(tide_bench_archive *b)
{
    size_t vs = (size_t)b->opts.value_size;
    uint64_t t0 = tide_clock_mono_ns();
    tide_gens_rotate_report rep;
    tide_gens_info gi;
    tide_gens_opts go;
    tide_gens *g = NULL;
    int rc, crc;

    tide_gens_opts_init(&go);
    go.online_delete = 1;
    go.keep = 2;
    go.key_size = TIDE_BENCH_KEY_SIZE;
    go.back_off_ms = 0;
    if ((rc = tide_gens_open(&g, b->data_dir, &go)) != 0) goto out;
    for (uint64_t i = 0; i < b->items && rc == 0; i++) {
        tide_bench_key(b->opts.seed, i, b->key);
        tide_bench_value(b->opts.seed, i, b->value, vs);
        rc = tide_gens_insert(g, b->key, b->value, vs, NULL);
    }
    if (rc == 0) rc = tide_gens_sync(g);
    if (rc == 0) rc = tide_gens_rotate(g, &rep);
    if (rc) goto out;
    tide_gens_get_info(g, &gi);
    TIDE_ASSERT(gi.count == 2 && !gi.gens[1].writable);
    b->gen_id = gi.gens[1].id;
    b->dat_bytes = gi.gens[1].dat_file_bytes;
    b->key_bytes = gi.gens[1].key_file_bytes;
    snprintf(b->gen_dir, sizeof b->gen_dir, "%s/%s", b->data_dir, gi.gens[1].dir);
out:
    if (g && (crc = tide_gens_close(g)) != 0 && rc == 0) rc = crc;
    b->fill_ns = tide_clock_mono_ns() - t0;
    return rc ? tide_err_prefix(rc, "writing the generation in %s", b->data_dir) : 0;
}

/* The bench's buffers, counted under "bench". */
static int buffers(tide_bench_archive *b)
{
    uint64_t k = b->opts.keys, l = b->opts.keys > b->opts.puts ? b->opts.keys : b->opts.puts;
    int rc;

    if ((rc = tide_mem_account_register("archive_upload", &b->upload_account)) != 0 ||
        (rc = tide_mem_account_register("archive_filters", &b->filter_account)) != 0 ||
        (rc = tide_mem_account_register("bench", &b->bench_account)) != 0)
        return rc;
    b->keys = malloc((size_t)k * TIDE_BENCH_KEY_SIZE);
    b->item = malloc((size_t)k * sizeof *b->item);
    b->lat = malloc((size_t)l * sizeof *b->lat);
    b->value = malloc((size_t)b->opts.value_size);
    b->runs = calloc((size_t)b->opts.runs, sizeof *b->runs);
    if (!b->keys || !b->item || !b->lat || !b->value || !b->runs)
        return tide_err_set(TIDE_ENOMEM, "no memory for %llu keys", (unsigned long long)k);
    b->held = (size_t)k * (TIDE_BENCH_KEY_SIZE + sizeof *b->item) + (size_t)l * sizeof *b->lat +
              (size_t)b->opts.value_size + (size_t)b->opts.runs * sizeof *b->runs;
    tide_mem_account_alloc(b->bench_account, (int64_t)b->held);
    return 0;
}

static void read_machine(tide_bench_archive *b)
{
    ti_bench_machine(&b->nproc, b->kernel, sizeof b->kernel);
    if (getloadavg(b->load_begin, 3) < 0) memset(b->load_begin, 0, sizeof b->load_begin);
}

/* The cluster's connection, and the generation's size in objects. */
static int connect_and_size(tide_bench_archive *b)
{
    tide_rados_opts ro = { b->opts.conf, NULL, b->opts.pool, b->opts.timeout_s };
    uint64_t record = TIDE_DAT_RECORD_HEADER + TIDE_BENCH_KEY_SIZE + b->opts.value_size;
    int rc;

    b->items = (b->opts.size - TIDE_DAT_HEADER_SIZE) / record;
    if (b->opts.keys >= b->items)
        return tide_err_set(TIDE_EINVAL, "keys %llu: the generation of %llu bytes holds %llu "
                            "objects; ask fewer keys or a larger size",
                            (unsigned long long)b->opts.keys, (unsigned long long)b->opts.size,
                            (unsigned long long)b->items);
    if ((rc = tide_rados_connect(&b->r, &ro)) != 0)
        return tide_err_prefix(rc, "the cluster of %s", b->opts.conf);
    return 0;
}

int tide_bench_archive_begin(tide_bench_archive *b, const tide_bench_archive_opts *o)
{
    tide_bench_archive_upload first;
    char prefix[80];
    int rc;

    memset(b, 0, sizeof *b);
    b->opts = *o;
    b->upload_account = b->filter_account = b->bench_account = -1;
    if ((rc = check_opts(o)) != 0) return rc;
    if (o->prefix) snprintf(b->prefix, sizeof b->prefix, "%s", o->prefix);
    else snprintf(b->prefix, sizeof b->prefix, "tide-bench-%d", (int)getpid());
    snprintf(b->dir, sizeof b->dir, "%s/tide-bench-XXXXXX", o->parent);
    if (mkdtemp(b->dir) == NULL) return tide_err_sys(errno, "cannot make a directory under %s", o->parent);
    b->dir_made = 1;
    snprintf(b->data_dir, sizeof b->data_dir, "%s/data", b->dir);
    read_machine(b);
    if ((rc = buffers(b)) != 0 || (rc = connect_and_size(b)) != 0) return rc;
    snprintf(b->where, sizeof b->where, "writing the generation");
    if ((rc = fill(b)) != 0) return rc;
    snprintf(b->where, sizeof b->where, "uploading the read copy");
    snprintf(prefix, sizeof prefix, "%s-read", b->prefix);
    if ((rc = ti_bench_archive_upload(b, 4, prefix, 1, &first)) != 0) return rc;
    b->read_copy = 1;
    return 0;
}

void tide_bench_archive_end(tide_bench_archive *b)
{
    char prefix[80];

    if (b->read_copy) {
        snprintf(prefix, sizeof prefix, "%s-read", b->prefix);
        if (ti_bench_archive_remove(b, prefix) != 0) tide_err_clear();  /* the cluster may be gone */
        b->read_copy = 0;
    }
    tide_rados_close(b->r);
    b->r = NULL;
    if (b->dir_made && !b->opts.keep) (void)ti_bench_archive_remove_tree(b->dir);
    b->dir_made = 0;
    if (b->held) tide_mem_account_free(b->bench_account, (int64_t)b->held);
    b->held = 0;
    free(b->keys);
    free(b->item);
    free(b->lat);
    free(b->value);
    free(b->runs);
    b->keys = b->value = NULL;
    b->item = b->lat = NULL;
    b->runs = NULL;
}
