/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_store.c: the store's throughput, memory and write benchmark, the
 * engine of `tide bench store`.
 *
 * One run = one fresh store (key size 32, load factor 0.5) in its own
 * directory, and two phases on one thread:
 *
 *   LOAD   N inserts, then tide_store_sync(). The clock starts before the
 *          first insert and stops when the sync returns, so the time covers
 *          every commit that made the data durable.
 *   FETCH  N fetches in a shuffled order, each value compared byte for byte
 *          with the one inserted. A mismatch fails the run: a benchmark of
 *          a store that returns wrong data is meaningless.
 *
 * Data: item i's key is stream(base + 2i + 1, 32) and its value
 * stream(base + 2i + 2, value_size), where stream(s, n) is the first n bytes
 * of the splitmix64 sequence started at s (little-endian words,
 * util/random.h) and base is seed << 33. With seed 0 this is the formula of
 * tests/fixtures/nudb. Keys and values are generated on the fly (into
 * reusable buffers) both when inserting and when checking, and the FETCH
 * order is a keyed Feistel permutation of the indexes computed per step, so
 * the bench holds O(1) memory whatever N is: the RSS it reports is the
 * store's, not the bench's. Generation costs are measured once (begin),
 * since they are inside the timed loops.
 *
 * Measurements around each phase (none inside the timed loop), a "frame":
 *   - peak RSS, anonymous and file-backed: a sampler thread reads
 *     /proc/self/status every 10 ms and keeps the maxima (src/mem/proc.c
 *     reads without allocating, so the sampler does not move the figure);
 *     VmHWM is reset before the phase through /proc/self/clear_refs when the
 *     kernel permits, and reported as a second opinion;
 *   - bytes written: /proc/self/io (write_bytes, wchar), the store's own
 *     counter (tide_store_info.bytes_written), and the block device that
 *     holds the bench directory (/sys/dev/block/MAJ:MIN/stat field 7);
 *   - commits and syncs, from tide_store_get_info;
 *   - CPU time of the process (getrusage RUSAGE_SELF, user + system, every
 *     thread: the store's commit thread and the sampler too), per item.
 * FETCH runs on opts.fetch_threads threads, each fetching its slice of the
 * one shuffled order with buffers of its own.
 *
 * Invariants:
 *   1. Every figure in a tide_bench_phase comes from the source its field
 *      names; a figure that could not be read is flagged (io_ok, dev_ok),
 *      never guessed.
 *   2. A run's store is removed unless opts.keep, except after a failure,
 *      when it stays in run_dir for inspection (and the bench directory
 *      with it).
 *   3. The same seed gives the same keys, values and fetch order on every
 *      machine (the fixtures' formula for seed 0).
 *
 * Never: print. The CLI says what happened, from the results and the
 * tide_bench_failure.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bench/bench_store.h"
#include "tide/error.h"
#include "store/full.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/random.h"

#define GEN_SAMPLE_ITEMS 100000u    /* items the generation cost is timed over */

/* ---- data ---- */

static void stream(uint64_t seed, unsigned char *out, size_t n)
{
    uint64_t s = seed;
    while (n > 0) {
        uint64_t v = tide_random_next64(&s);
        size_t k = n < 8 ? n : 8;
        for (size_t i = 0; i < k; i++) out[i] = (unsigned char)(v >> (8 * i));
        out += k;
        n -= k;
    }
}

void tide_bench_key(uint64_t seed, uint64_t i, unsigned char *key)
{
    stream((seed << 33) + 2 * i + 1, key, TIDE_BENCH_KEY_SIZE);
}

void tide_bench_value(uint64_t seed, uint64_t i, unsigned char *value, size_t n)
{
    stream((seed << 33) + 2 * i + 2, value, n);
}

static void make_key(const tide_bench_store *b, uint64_t i)
{
    tide_bench_key(b->opts.seed, i, b->key);
}

static void make_value(const tide_bench_store *b, uint64_t i)
{
    tide_bench_value(b->opts.seed, i, b->value, b->opts.value_size);
}

/*
 * A pseudo-random permutation of [0, n) without a table: a 4-round Feistel
 * network over the smallest even-bit power-of-two domain >= n, walking the
 * cycle until the image falls inside [0, n) (under 4 steps on average).
 */
void tide_bench_perm_init(tide_bench_perm *p, uint64_t n, uint64_t seed)
{
    p->n = n;
    p->half_bits = 1;
    while (((uint64_t)1 << (2 * p->half_bits)) < n) p->half_bits++;
    p->mask = ((uint64_t)1 << p->half_bits) - 1;
    for (int k = 0; k < 4; k++) p->round_keys[k] = tide_random_next64(&seed);
}

uint64_t tide_bench_perm_at(const tide_bench_perm *p, uint64_t i)
{
    do {
        uint64_t l = i >> p->half_bits, r = i & p->mask;
        for (int k = 0; k < 4; k++) {
            uint64_t t = r;
            r = l ^ (tide_random_mix64(r ^ p->round_keys[k]) & p->mask);
            l = t;
        }
        i = (l << p->half_bits) | r;
    } while (i >= p->n);
    return i;
}

uint64_t tide_bench_fetch_seed(uint64_t seed, unsigned run)
{
    return seed ^ (0x5EEDull << 32) ^ run;
}

/* ---- the RSS sampler ---- */

static void sample_once(tide_bench_sampler *sm)
{
    tide_mem_proc_status st;
    if (tide_mem_proc_status_read(&st) != 0) return;
    if (st.rss_anon > sm->max_anon) sm->max_anon = st.rss_anon;
    if (st.rss_file > sm->max_file) sm->max_file = st.rss_file;
    if (st.vm_rss > sm->max_rss) sm->max_rss = st.vm_rss;
    sm->samples++;
}

static void *sampler_main(void *arg)
{
    tide_bench_sampler *sm = arg;
    while (!atomic_load(&sm->stop)) {
        sample_once(sm);
        tide_clock_sleep_us(TIDE_BENCH_SAMPLE_US);
    }
    sample_once(sm);
    return NULL;
}

void tide_bench_sampler_start(tide_bench_sampler *sm)
{
    memset(sm, 0, sizeof *sm);
    atomic_init(&sm->stop, 0);
    sm->running = pthread_create(&sm->th, NULL, sampler_main, sm) == 0;
}

void tide_bench_sampler_stop(tide_bench_sampler *sm)
{
    if (sm->running) {
        atomic_store(&sm->stop, 1);
        pthread_join(sm->th, NULL);
        sm->running = 0;
    } else {
        sample_once(sm);
    }
}

/* ---- one phase's measurement frame ---- */

typedef struct probe {
    tide_mem_proc_io io;
    int io_ok;
    tide_mem_proc_blockdev dev;
    int dev_ok;
    tide_store_info info;
} probe;

static void probe_take(probe *p, tide_store *s, const char *dir)
{
    p->io_ok = tide_mem_proc_io_read(&p->io) == 0;
    p->dev_ok = tide_mem_proc_blockdev_read(dir, &p->dev) == 0;
    tide_store_get_info(s, &p->info);
}

typedef struct frame {
    probe before;
    tide_bench_sampler sm;
    uint64_t t0;
    double cpu0;
} frame;

/* Seconds of CPU the process has used, user + system, all its threads. */
double tide_bench_cpu_seconds(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void frame_begin(frame *f, tide_bench_phase *r, tide_store *s, const char *dir,
                        int can_reset)
{
    tide_mem_proc_status st;

    memset(f, 0, sizeof *f);
    memset(r, 0, sizeof *r);
    if (can_reset) tide_mem_proc_reset_peak();
    if (tide_mem_proc_status_read(&st) == 0) {
        r->anon_start = st.rss_anon;
        r->file_start = st.rss_file;
    }
    probe_take(&f->before, s, dir);
    tide_bench_sampler_start(&f->sm);
    f->cpu0 = tide_bench_cpu_seconds();
    f->t0 = tide_clock_mono_us();
}

static void frame_end(frame *f, tide_bench_phase *r, tide_store *s, const char *dir,
                      uint64_t items)
{
    uint64_t t1 = tide_clock_mono_us();
    double cpu1 = tide_bench_cpu_seconds();
    tide_mem_proc_status st;
    probe a;

    tide_bench_sampler_stop(&f->sm);
    r->secs = (double)(t1 - f->t0) / 1e6;
    if (r->secs <= 0) r->secs = 1e-6;
    r->items_per_s = (double)items / r->secs;
    r->cpu_secs = cpu1 - f->cpu0;
    r->cpu_us_per_item = items ? r->cpu_secs * 1e6 / (double)items : 0;
    r->peak_anon = f->sm.max_anon;
    r->peak_file = f->sm.max_file;
    r->peak_rss = f->sm.max_rss;
    r->samples = f->sm.samples;
    if (tide_mem_proc_status_read(&st) == 0) r->vm_hwm = st.vm_hwm;
    probe_take(&a, s, dir);
    r->io_ok = f->before.io_ok && a.io_ok;
    r->dev_bytes_ok = r->io_ok && a.io.has_device_bytes;
    if (r->io_ok) {
        r->wchar = a.io.wchar - f->before.io.wchar;
        r->write_bytes = a.io.write_bytes - f->before.io.write_bytes;
    }
    r->dev_ok = f->before.dev_ok && a.dev_ok;
    if (r->dev_ok) {
        r->dev_written = a.dev.bytes_written - f->before.dev.bytes_written;
        r->parent_written = a.dev.parent_bytes_written - f->before.dev.parent_bytes_written;
    }
    r->store_written = a.info.bytes_written - f->before.info.bytes_written;
    r->commits = a.info.commits - f->before.info.commits;
    r->syncs = a.info.syncs - f->before.info.syncs;
}

/* ---- one run: open, load, fetch, close ---- */

/* A failed store call: `why` says which, and the message it left is kept
 * for the caller (the frame's readers may overwrite tide_last_error()). */
typedef struct run_state {
    tide_bench_store *b;
    unsigned run;
    tide_store *s;
    tide_bench_run *out;
    tide_bench_failure *why;
    char error[512];
} run_state;

static int store_failed(run_state *st, const char *during, int rc)
{
    st->why->during = during;
    snprintf(st->error, sizeof st->error, "%s", tide_last_error());
    return rc;
}

static int run_open(run_state *st)
{
    const tide_bench_store *b = st->b;
    tide_store_create_opts co;
    tide_store_opts so;
    int rc;

    if (mkdir(b->run_dir, 0755) != 0) {
        rc = tide_err_sys(errno, "cannot create %s", b->run_dir);
        snprintf(st->error, sizeof st->error, "%s", tide_last_error());
        return rc;
    }
    tide_store_create_opts_init(&co);
    co.key_size = TIDE_BENCH_KEY_SIZE;
    co.block_size = b->opts.block_size;
    co.load_factor = TIDE_BENCH_LOAD_FACTOR;
    rc = tide_store_create(b->run_dir, &co);
    if (rc) return store_failed(st, "create", rc);
    tide_store_opts_init(&so);
    so.burst_bytes = (size_t)b->opts.burst;
    so.pread = b->opts.pread;
    rc = tide_store_open(&st->s, b->run_dir, &so);
    if (rc) return store_failed(st, "open", rc);
    return 0;
}

/* LOAD: the inserts and the sync, in one frame. */
static int run_load(run_state *st)
{
    const tide_bench_store *b = st->b;
    uint64_t n = b->opts.items;
    tide_store_info info;
    frame f;
    int rc;

    frame_begin(&f, &st->out->load, st->s, b->run_dir, b->can_reset);
    for (uint64_t i = 0; i < n; i++) {
        make_key(b, i);
        make_value(b, i);
        rc = tide_store_insert(st->s, b->key, b->value, b->opts.value_size);
        if (rc) {
            store_failed(st, "load: insert", rc);
            st->why->item = i;
            frame_end(&f, &st->out->load, st->s, b->run_dir, i);
            return rc;
        }
    }
    rc = tide_store_sync(st->s);
    if (rc) store_failed(st, "load: sync", rc);
    frame_end(&f, &st->out->load, st->s, b->run_dir, n);
    if (rc) return rc;
    tide_store_get_info(st->s, &info);
    st->out->dat_bytes = info.dat_file_bytes;
    st->out->key_bytes = info.key_file_bytes;
    st->out->buckets = info.buckets;
    return 0;
}

/* One FETCH thread's slice [from, to) of the order, with its own key and
 * value buffers; the first failure is kept in `why` (and `error`). */
typedef struct fetcher {
    run_state *st;
    const tide_bench_perm *perm;
    uint64_t from, to, done;
    unsigned char *key, *value;
    int rc;
    tide_bench_failure why;
    char error[512];
    pthread_t th;
} fetcher;

/* Fetch item i, the k-th in the order, and compare it with what was
 * inserted. 0, the fetch's code, or TIDE_ECORRUPT for a wrong value. */
static int fetch_one(fetcher *fe, uint64_t i, uint64_t k)
{
    const tide_bench_store *b = fe->st->b;
    size_t vs = (size_t)b->opts.value_size, len = 0, at = 0;
    unsigned char *got = NULL;
    int rc;

    tide_bench_key(b->opts.seed, i, fe->key);
    rc = tide_store_fetch(fe->st->s, fe->key, (void **)&got, &len);
    if (rc) {
        fe->why.during = "fetch";
        snprintf(fe->error, sizeof fe->error, "%s", tide_last_error());
        fe->why.item = i;
        fe->why.nth = k;
        return rc;
    }
    tide_bench_value(b->opts.seed, i, fe->value, vs);
    if (len == vs && memcmp(got, fe->value, vs) == 0) {
        free(got);
        return 0;
    }
    while (at < len && at < vs && got[at] == fe->value[at]) at++;
    free(got);
    fe->why.wrong_value = 1;
    fe->why.item = i;
    fe->why.got_len = len;
    fe->why.first_diff = at;
    return TIDE_ECORRUPT;
}

static void *fetcher_main(void *arg)
{
    fetcher *fe = arg;
    for (uint64_t k = fe->from; k < fe->to && fe->rc == 0; k++) {
        fe->rc = fetch_one(fe, tide_bench_perm_at(fe->perm, k), k);
        if (fe->rc == 0) fe->done++;
    }
    return NULL;
}

/* FETCH, in an order drawn outside the timing, on fetch_threads threads
 * (the first on this one). */
static int run_fetch(run_state *st)
{
    const tide_bench_store *b = st->b;
    unsigned nt = b->opts.fetch_threads ? b->opts.fetch_threads : 1;
    uint64_t n = b->opts.items, done = 0;
    fetcher *fe = calloc(nt, sizeof *fe);
    tide_bench_perm perm;
    frame f;
    int rc = 0;

    if (fe == NULL) return tide_err_set(TIDE_ENOMEM, "fetch: out of memory");
    for (unsigned t = 0; t < nt; t++) {
        fe[t] = (fetcher){ .st = st, .perm = &perm, .from = n * t / nt, .to = n * (t + 1) / nt };
        fe[t].key = malloc(TIDE_BENCH_KEY_SIZE);
        fe[t].value = malloc(b->opts.value_size);
        if (!fe[t].key || !fe[t].value) rc = tide_err_set(TIDE_ENOMEM, "fetch: out of memory");
    }
    tide_bench_perm_init(&perm, n, tide_bench_fetch_seed(b->opts.seed, st->run));
    frame_begin(&f, &st->out->fetch, st->s, b->run_dir, b->can_reset);
    for (unsigned t = 1; rc == 0 && t < nt; t++)
        if (pthread_create(&fe[t].th, NULL, fetcher_main, &fe[t]) != 0) {
            rc = tide_err_set(TIDE_ENOMEM, "fetch: cannot start thread %u", t);
            nt = t;
        }
    if (rc == 0) fetcher_main(&fe[0]);
    for (unsigned t = 1; t < nt; t++) pthread_join(fe[t].th, NULL);
    for (unsigned t = 0; t < nt; t++) {
        done += fe[t].done;
        if (rc == 0 && fe[t].rc) {
            rc = fe[t].rc;
            *st->why = fe[t].why;
            snprintf(st->error, sizeof st->error, "%s", fe[t].error);
        }
    }
    frame_end(&f, &st->out->fetch, st->s, b->run_dir, done);
    for (unsigned t = 0; t < (b->opts.fetch_threads ? b->opts.fetch_threads : 1); t++) {
        free(fe[t].key);
        free(fe[t].value);
    }
    free(fe);
    return rc;
}

static void remove_store(const char *dir)
{
    static const char *const names[] = { "nudb.dat", "nudb.key", "nudb.log", "tide.live" };
    char p[TIDE_BENCH_PATH_MAX + 300];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

int tide_bench_store_run(tide_bench_store *b, unsigned run, tide_bench_failure *why)
{
    run_state st = { .b = b, .run = run, .out = &b->runs[run - 1], .why = why };
    int rc, crc;

    memset(why, 0, sizeof *why);
    memset(st.out, 0, sizeof *st.out);
    snprintf(b->run_dir, sizeof b->run_dir, "%s/run-%u", b->dir, run);
    rc = run_open(&st);
    if (rc == 0) rc = run_load(&st);
    if (rc == 0) rc = run_fetch(&st);
    if (st.s) {
        crc = tide_store_close(st.s);
        if (crc && rc == 0) rc = store_failed(&st, "close", crc);
    }
    if (rc == 0) {
        if (!b->opts.keep) remove_store(b->run_dir);
        return 0;
    }
    b->dir_made = 0;                /* keep it: the failed store is inside */
    if (!why->wrong_value) tide_err_set(rc, "%s", st.error);
    return rc;
}

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

tide_bench_stat ti_bench_stat_sorted(double *v, size_t n)
{
    tide_bench_stat s = { 0, 0, 0 };

    if (n == 0) return s;
    qsort(v, n, sizeof *v, cmp_double);
    s.min = v[0];
    s.max = v[n - 1];
    s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return s;
}

static tide_bench_stat stat_of(const double *v, size_t n)
{
    double tmp[TIDE_BENCH_RUNS_MAX];

    if (n > TIDE_BENCH_RUNS_MAX) n = TIDE_BENCH_RUNS_MAX;
    memcpy(tmp, v, n * sizeof *v);
    return ti_bench_stat_sorted(tmp, n);
}

static double metric_of(const tide_bench_phase *p, int m)
{
    switch (m) {
    case TIDE_BENCH_ITEMS_PER_S:   return p->items_per_s;
    case TIDE_BENCH_SECONDS:       return p->secs;
    case TIDE_BENCH_PEAK_ANON:     return (double)p->peak_anon;
    case TIDE_BENCH_PEAK_FILE:     return (double)p->peak_file;
    case TIDE_BENCH_VM_HWM:        return (double)p->vm_hwm;
    case TIDE_BENCH_DEV_WRITTEN:   return (double)p->dev_written;
    case TIDE_BENCH_WRITE_BYTES:   return (double)p->write_bytes;
    case TIDE_BENCH_WCHAR:         return (double)p->wchar;
    case TIDE_BENCH_STORE_WRITTEN: return (double)p->store_written;
    case TIDE_BENCH_COMMITS:       return (double)p->commits;
    case TIDE_BENCH_CPU_US:        return p->cpu_us_per_item;
    default:                       return (double)p->syncs;
    }
}

/* Whether phase p has metric m: only the device's and /proc/self/io's
 * figures can be missing. */
static int metric_ok(const tide_bench_phase *p, int m)
{
    switch (m) {
    case TIDE_BENCH_DEV_WRITTEN: return p->dev_ok;
    case TIDE_BENCH_WRITE_BYTES: return p->dev_bytes_ok;
    case TIDE_BENCH_WCHAR:       return p->io_ok;
    default:                     return 1;
    }
}

/* Which of a run's figures: per phase (metric), or of the run. */
enum { RUN_DAT, RUN_KEY, RUN_WA_DEVICE, RUN_WA_WRITE_BYTES, RUN_WA_STORE };

static double run_figure(const tide_bench_run *r, int which, uint64_t payload)
{
    switch (which) {
    case RUN_DAT:            return (double)r->dat_bytes;
    case RUN_KEY:            return (double)r->key_bytes;
    case RUN_WA_DEVICE:      return (double)r->load.dev_written / (double)payload;
    case RUN_WA_WRITE_BYTES: return (double)r->load.write_bytes / (double)payload;
    default:                 return (double)r->load.store_written / (double)payload;
    }
}

void tide_bench_store_summarize(const tide_bench_store *b, tide_bench_summary *s)
{
    double a[TIDE_BENCH_RUNS_MAX], f[TIDE_BENCH_RUNS_MAX];
    size_t n = b->opts.runs;

    memset(s, 0, sizeof *s);
    if (n > TIDE_BENCH_RUNS_MAX) n = TIDE_BENCH_RUNS_MAX;
    s->runs = n;
    s->payload = b->opts.items * (TIDE_BENCH_KEY_SIZE + b->opts.value_size);
    s->buckets = n ? b->runs[0].buckets : 0;
    for (int m = 0; m < TIDE_BENCH_METRICS; m++) {
        s->ok[m] = 1;
        for (size_t i = 0; i < n; i++) {
            s->ok[m] &= metric_ok(&b->runs[i].load, m) & metric_ok(&b->runs[i].fetch, m);
            a[i] = metric_of(&b->runs[i].load, m);
            f[i] = metric_of(&b->runs[i].fetch, m);
        }
        s->load[m] = stat_of(a, n);
        s->fetch[m] = stat_of(f, n);
    }
    {
        tide_bench_stat *dst[] = { &s->dat_bytes, &s->key_bytes, &s->wa_device,
                                   &s->wa_write_bytes, &s->wa_store };
        for (int w = RUN_DAT; w <= RUN_WA_STORE; w++) {
            for (size_t i = 0; i < n; i++) a[i] = run_figure(&b->runs[i], w, s->payload);
            *dst[w] = stat_of(a, n);
        }
    }
}

/* ---- the bench ---- */

void tide_bench_store_opts_init(tide_bench_store_opts *o)
{
    memset(o, 0, sizeof *o);
    o->items = 100000;
    o->value_size = 200;
    o->runs = 3;
    o->burst = TIDE_BURST_DEFAULT;
    o->seed = 0;
    o->block_size = TIDE_BLOCK_SIZE_DEFAULT;
    o->parent = "/tmp";
    o->fetch_threads = 1;
}

void ti_bench_machine(long *nproc, char *kernel, size_t cap)
{
    struct utsname un;

    *nproc = sysconf(_SC_NPROCESSORS_ONLN);
    if (uname(&un) == 0) snprintf(kernel, cap, "%s %s %s", un.sysname, un.release, un.machine);
    else snprintf(kernel, cap, "unknown");
}

/* The machine and the device the bench directory is on. */
static void read_machine(tide_bench_store *b)
{
    ti_bench_machine(&b->nproc, b->kernel, sizeof b->kernel);
    b->dev_ok = tide_mem_proc_blockdev_read(b->dir, &b->dev) == 0;
    if (!b->dev_ok) snprintf(b->dev_error, sizeof b->dev_error, "%s", tide_last_error());
    b->can_reset = tide_mem_proc_reset_peak() == 0;
    if (!b->can_reset) snprintf(b->reset_error, sizeof b->reset_error, "%s", tide_last_error());
}

/* What making a key and a value costs (inside both timed loops). */
static void time_generation(tide_bench_store *b)
{
    uint64_t m = b->opts.items < GEN_SAMPLE_ITEMS ? b->opts.items : GEN_SAMPLE_ITEMS;
    uint64_t t0 = tide_clock_mono_us();
    volatile unsigned char sink = 0;

    for (uint64_t i = 0; i < m; i++) {
        make_key(b, i);
        make_value(b, i);
        sink ^= b->value[0] ^ b->key[0];
    }
    (void)sink;     /* read once: the loop's work is kept, and used */
    b->gen_ns = (double)(tide_clock_mono_us() - t0) * 1000.0 / (double)m;
}

int tide_bench_store_begin(tide_bench_store *b, const tide_bench_store_opts *o)
{
    memset(b, 0, sizeof *b);
    b->opts = *o;
    snprintf(b->dir, sizeof b->dir, "%s/tide-bench-XXXXXX", o->parent);
    if (mkdtemp(b->dir) == NULL)
        return tide_err_sys(errno, "cannot make a directory under %s", o->parent);
    b->dir_made = 1;
    read_machine(b);
    b->key = malloc(TIDE_BENCH_KEY_SIZE);
    b->value = malloc(o->value_size);
    b->runs = calloc(o->runs, sizeof *b->runs);
    if (b->key == NULL || b->value == NULL || b->runs == NULL)
        return tide_err_set(TIDE_ENOMEM, "no memory for a %llu-byte value",
                            (unsigned long long)o->value_size);
    time_generation(b);
    return 0;
}

void tide_bench_store_end(tide_bench_store *b)
{
    if (b->dir_made && !b->opts.keep) rmdir(b->dir);
    b->dir_made = 0;
    free(b->key);
    free(b->value);
    free(b->runs);
    b->key = b->value = NULL;
    b->runs = NULL;
}
