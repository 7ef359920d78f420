/*
 * bench_store.c: `tide bench store`, the store's throughput, memory and
 * write benchmark.
 *
 * One run = one fresh store (key size 32, load factor 0.5) in its own
 * directory, and two phases on one thread:
 *
 *   LOAD   N inserts, then tide_store_sync(). The clock starts before the
 *          first insert and stops when the sync returns, so the time covers
 *          every commit that made the data durable.
 *   FETCH  N fetches in a shuffled order (Fisher-Yates over the indexes),
 *          each value compared byte for byte with the one inserted. A
 *          mismatch ends the bench with exit status 1: a benchmark of a store
 *          that returns wrong data is meaningless.
 *
 * Data: item i's key is stream(base + 2i + 1, 32) and its value
 * stream(base + 2i + 2, value_size), where stream(s, n) is the first n bytes
 * of the splitmix64 sequence started at s (little-endian words) and base is
 * seed << 33. With seed 0 this is the formula of tests/fixtures/nudb. Keys
 * and values are generated on the fly (into reusable buffers) both when
 * inserting and when checking, and the FETCH order is a keyed Feistel
 * permutation of the indexes computed per step, so the bench holds O(1)
 * memory whatever N is: the RSS it reports is the store's, not the
 * bench's. Generation costs are measured once and printed, since they are
 * inside the timed loops.
 *
 * Measurements around each phase (none inside the timed loop):
 *   - peak RSS, anonymous and file-backed: a sampler thread reads
 *     /proc/self/status every 10 ms and keeps the maxima (src/mem/proc.c
 *     reads without allocating, so the sampler does not move the figure);
 *     VmHWM is reset before the phase through /proc/self/clear_refs when the
 *     kernel permits, and reported as a second opinion;
 *   - bytes written: /proc/self/io (write_bytes, wchar), the store's own
 *     counter (tide_store_info.bytes_written), and the block device that
 *     holds the bench directory (/sys/dev/block/MAJ:MIN/stat field 7);
 *   - commits and syncs, from tide_store_get_info.
 *
 * Invariants:
 *   1. Nothing is measured that the output does not name with its source.
 *   2. Bench directories are removed unless --keep, except after a failure,
 *      when the path is printed and the store is left for inspection.
 *   3. With --json, stdout carries exactly one JSON document; progress goes
 *      to stderr.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cli/cli.h"
#include "mem/proc.h"
#include "tide/error.h"
#include "tide/store.h"
#include "util/clock.h"
#include "util/size.h"

#define BENCH_KEY_SIZE 32u
#define BENCH_LOAD_FACTOR 0.5
#define SAMPLE_US 10000u

/* ---- data ---- */

static inline uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void stream(uint64_t seed, unsigned char *out, size_t n)
{
    uint64_t s = seed;
    while (n > 0) {
        uint64_t v = splitmix64(&s);
        size_t k = n < 8 ? n : 8;
        for (size_t i = 0; i < k; i++) out[i] = (unsigned char)(v >> (8 * i));
        out += k;
        n -= k;
    }
}

/* ---- settings and results ---- */

typedef struct bench_cfg {
    uint64_t items, value_size, runs, burst, seed;
    unsigned block_size;
    const char *parent;          /* --dir or "/tmp" */
    int keep, json;
} bench_cfg;

typedef struct phase_result {
    double   secs, items_per_s;
    uint64_t anon_start, file_start;
    uint64_t peak_anon, peak_file, peak_rss;  /* sampler maxima */
    uint64_t vm_hwm;
    uint64_t samples;
    int      io_ok, dev_bytes_ok;             /* /proc/self/io, write_bytes present */
    uint64_t write_bytes, wchar;
    int      dev_ok;
    uint64_t dev_written, parent_written;
    uint64_t store_written, commits, syncs;
} phase_result;

typedef struct run_result {
    phase_result load, fetch;
    uint64_t dat_bytes, key_bytes, buckets;
} run_result;

/* ---- the RSS sampler ---- */

typedef struct sampler {
    pthread_t th;
    atomic_int stop;
    uint64_t max_anon, max_file, max_rss, samples;  /* read after join */
} sampler;

static void sample_once(sampler *sm)
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
    sampler *sm = arg;
    while (!atomic_load(&sm->stop)) {
        sample_once(sm);
        tide_clock_sleep_us(SAMPLE_US);
    }
    sample_once(sm);
    return NULL;
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
    sampler sm;
    int sampler_running;
    uint64_t t0;
} frame;

static void frame_begin(frame *f, phase_result *r, tide_store *s, const char *dir, int can_reset)
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
    atomic_init(&f->sm.stop, 0);
    f->sampler_running = pthread_create(&f->sm.th, NULL, sampler_main, &f->sm) == 0;
    f->t0 = tide_clock_mono_us();
}

static void frame_end(frame *f, phase_result *r, tide_store *s, const char *dir, uint64_t items)
{
    uint64_t t1 = tide_clock_mono_us();
    tide_mem_proc_status st;
    probe a;

    if (f->sampler_running) {
        atomic_store(&f->sm.stop, 1);
        pthread_join(f->sm.th, NULL);
    } else {
        sample_once(&f->sm);
    }
    r->secs = (double)(t1 - f->t0) / 1e6;
    if (r->secs <= 0) r->secs = 1e-6;
    r->items_per_s = (double)items / r->secs;
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

/* ---- one run ---- */

static void remove_store(const char *dir)
{
    static const char *const names[] = { "nudb.dat", "nudb.key", "nudb.log" };
    char p[3300];
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

static int store_fail(const char *what, int rc, const char *dir)
{
    cli_fail("bench", rc);
    fprintf(stderr, "tide bench: (during %s; the store is left in %s)\n", what, dir);
    return CLI_FAIL;
}

/*
 * A pseudo-random permutation of [0, n) without a table: a 4-round Feistel
 * network over the smallest even-bit power-of-two domain >= n, walking the
 * cycle until the image falls inside [0, n) (under 4 steps on average).
 */
typedef struct permutation {
    uint64_t n, half_bits, mask, round_keys[4];
} permutation;

static void permutation_init(permutation *p, uint64_t n, uint64_t seed)
{
    p->n = n;
    p->half_bits = 1;
    while (((uint64_t)1 << (2 * p->half_bits)) < n) p->half_bits++;
    p->mask = ((uint64_t)1 << p->half_bits) - 1;
    for (int k = 0; k < 4; k++) p->round_keys[k] = splitmix64(&seed);
}

static uint64_t permutation_at(const permutation *p, uint64_t i)
{
    do {
        uint64_t l = i >> p->half_bits, r = i & p->mask;
        for (int k = 0; k < 4; k++) {
            uint64_t s = r ^ p->round_keys[k], t = r;
            r = l ^ (splitmix64(&s) & p->mask);
            l = t;
        }
        i = (l << p->half_bits) | r;
    } while (i >= p->n);
    return i;
}

static int run_one(const bench_cfg *c, unsigned run, const char *dir, unsigned char *kbuf,
                   unsigned char *vbuf, int can_reset, run_result *out)
{
    tide_store_create_opts co;
    tide_store_opts so;
    tide_store_info info;
    tide_store *s = NULL;
    permutation perm;
    uint64_t base = c->seed << 33, n = c->items, vs = c->value_size;
    frame f;
    int rc, ret = CLI_FAIL;

    memset(out, 0, sizeof *out);
    if (mkdir(dir, 0755) != 0)
        return cli_error("bench", "cannot create %s: %s", dir, strerror(errno));
    tide_store_create_opts_init(&co);
    co.key_size = BENCH_KEY_SIZE;
    co.block_size = c->block_size;
    co.load_factor = BENCH_LOAD_FACTOR;
    rc = tide_store_create(dir, &co);
    if (rc) return store_fail("create", rc, dir);
    tide_store_opts_init(&so);
    so.burst_bytes = (size_t)c->burst;
    rc = tide_store_open(&s, dir, &so);
    if (rc) return store_fail("open", rc, dir);

    /* LOAD */
    frame_begin(&f, &out->load, s, dir, can_reset);
    for (uint64_t i = 0; i < n; i++) {
        stream(base + 2 * i + 1, kbuf, BENCH_KEY_SIZE);
        stream(base + 2 * i + 2, vbuf, vs);
        rc = tide_store_insert(s, kbuf, vbuf, vs);
        if (rc) {
            frame_end(&f, &out->load, s, dir, i);
            ret = store_fail("load: insert", rc, dir);
            fprintf(stderr, "tide bench: run %u: insert of item %llu of %llu failed\n", run,
                    (unsigned long long)i, (unsigned long long)n);
            goto out;
        }
    }
    rc = tide_store_sync(s);
    frame_end(&f, &out->load, s, dir, n);
    if (rc) { ret = store_fail("load: sync", rc, dir); goto out; }
    tide_store_get_info(s, &info);
    out->dat_bytes = info.dat_file_bytes;
    out->key_bytes = info.key_file_bytes;
    out->buckets = info.buckets;

    /* FETCH, in an order drawn outside the timing. */
    permutation_init(&perm, n, c->seed ^ (0x5EEDull << 32) ^ run);
    frame_begin(&f, &out->fetch, s, dir, can_reset);
    for (uint64_t k = 0; k < n; k++) {
        uint64_t i = permutation_at(&perm, k);
        void *got = NULL;
        size_t len = 0;

        stream(base + 2 * i + 1, kbuf, BENCH_KEY_SIZE);
        rc = tide_store_fetch(s, kbuf, &got, &len);
        if (rc) {
            frame_end(&f, &out->fetch, s, dir, k);
            ret = store_fail("fetch", rc, dir);
            fprintf(stderr, "tide bench: run %u: fetch of item %llu (the %llu-th fetched) failed\n",
                    run, (unsigned long long)i, (unsigned long long)k);
            goto out;
        }
        stream(base + 2 * i + 2, vbuf, vs);
        if (len != vs || memcmp(got, vbuf, vs) != 0) {
            size_t at = 0;
            while (at < len && at < vs && ((unsigned char *)got)[at] == vbuf[at]) at++;
            free(got);
            frame_end(&f, &out->fetch, s, dir, k);
            fprintf(stderr, "tide bench: run %u: item %llu: fetched %zu bytes, inserted %llu; "
                    "first difference at byte %zu. The store returned wrong data; it is left "
                    "in %s\n", run, (unsigned long long)i, len, (unsigned long long)vs, at, dir);
            ret = CLI_FAIL;
            goto out;
        }
        free(got);
    }
    frame_end(&f, &out->fetch, s, dir, n);
    ret = CLI_OK;
out:
    if (s) {
        rc = tide_store_close(s);
        if (rc && ret == CLI_OK) ret = store_fail("close", rc, dir);
    }
    if (ret == CLI_OK && !c->keep) remove_store(dir);
    return ret;
}

/* ---- statistics and printing ---- */

typedef struct stat3 { double median, min, max; } stat3;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static stat3 stat_of(const double *v, size_t n)
{
    double tmp[1024];
    stat3 s = { 0, 0, 0 };
    if (n == 0) return s;
    if (n > 1024) n = 1024;
    memcpy(tmp, v, n * sizeof *v);
    qsort(tmp, n, sizeof *tmp, cmp_double);
    s.min = tmp[0];
    s.max = tmp[n - 1];
    s.median = n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
    return s;
}

/* arr[i] = expr for every run i, with r_ pointing at run i's result. */
#define COLLECT(arr, runs, n, expr)                          \
    for (size_t i_ = 0; i_ < (n); i_++) {                    \
        const run_result *r_ = &(runs)[i_];                  \
        (void)r_;                                            \
        (arr)[i_] = (double)(expr);                          \
    }

static const char *hs(double bytes, char *buf, size_t cap)
{
    return tide_size_format(bytes < 0 ? 0 : (uint64_t)(bytes + 0.5), buf, cap);
}

static void print_bytes_row(FILE *o, const char *label, stat3 a, stat3 b, int ok_a, int ok_b)
{
    char m[32], lo[32], hi[32], cell[2][128];
    stat3 v[2] = { a, b };
    int ok[2] = { ok_a, ok_b };
    for (int k = 0; k < 2; k++) {
        if (!ok[k]) { snprintf(cell[k], sizeof cell[k], "n/a"); continue; }
        hs(v[k].median, m, sizeof m);
        hs(v[k].min, lo, sizeof lo);
        hs(v[k].max, hi, sizeof hi);
        snprintf(cell[k], sizeof cell[k], "%s (%s-%s)", m, lo, hi);
    }
    fprintf(o, "  %-28s %-34s %s\n", label, cell[0], cell[1]);
}

static void print_num_row(FILE *o, const char *label, const char *fmt, stat3 a, stat3 b)
{
    char cell[2][96], f3[64];
    stat3 v[2] = { a, b };
    snprintf(f3, sizeof f3, "%s (%s-%s)", fmt, fmt, fmt);
    for (int k = 0; k < 2; k++)
        snprintf(cell[k], sizeof cell[k], f3, v[k].median, v[k].min, v[k].max);
    fprintf(o, "  %-28s %-34s %s\n", label, cell[0], cell[1]);
}

static void print_phase_line(FILE *o, unsigned run, unsigned runs, const char *name,
                             const phase_result *p)
{
    char a[32], fl[32], h[32], d[32], wb[32], wc[32], sw[32];
    fprintf(o, "run %u/%u %-5s %10.0f items/s %8.3f s  commits %llu syncs %llu  peak anon %s "
            "file %s HWM %s  written: device %s write_bytes %s wchar %s store %s\n",
            run, runs, name, p->items_per_s, p->secs, (unsigned long long)p->commits,
            (unsigned long long)p->syncs, hs((double)p->peak_anon, a, sizeof a),
            hs((double)p->peak_file, fl, sizeof fl), hs((double)p->vm_hwm, h, sizeof h),
            p->dev_ok ? hs((double)p->dev_written, d, sizeof d) : "n/a",
            p->dev_bytes_ok ? hs((double)p->write_bytes, wb, sizeof wb) : "n/a",
            p->io_ok ? hs((double)p->wchar, wc, sizeof wc) : "n/a",
            hs((double)p->store_written, sw, sizeof sw));
    fflush(o);
}

static json_t *j_stat(stat3 s)
{
    return json_pack("{s:f, s:f, s:f}", "median", s.median, "min", s.min, "max", s.max);
}

static json_t *j_phase(const phase_result *p)
{
    json_t *o = json_object();
    json_object_set_new(o, "seconds", json_real(p->secs));
    json_object_set_new(o, "items_per_s", json_real(p->items_per_s));
    json_object_set_new(o, "rss_anon_start_bytes", json_integer((json_int_t)p->anon_start));
    json_object_set_new(o, "rss_file_start_bytes", json_integer((json_int_t)p->file_start));
    json_object_set_new(o, "peak_rss_anon_bytes", json_integer((json_int_t)p->peak_anon));
    json_object_set_new(o, "peak_rss_file_bytes", json_integer((json_int_t)p->peak_file));
    json_object_set_new(o, "peak_rss_bytes", json_integer((json_int_t)p->peak_rss));
    json_object_set_new(o, "vm_hwm_bytes", json_integer((json_int_t)p->vm_hwm));
    json_object_set_new(o, "rss_samples", json_integer((json_int_t)p->samples));
    json_object_set_new(o, "io_write_bytes", p->dev_bytes_ok
                        ? json_integer((json_int_t)p->write_bytes) : json_null());
    json_object_set_new(o, "io_wchar", p->io_ok ? json_integer((json_int_t)p->wchar) : json_null());
    json_object_set_new(o, "device_bytes_written", p->dev_ok
                        ? json_integer((json_int_t)p->dev_written) : json_null());
    json_object_set_new(o, "store_bytes_written", json_integer((json_int_t)p->store_written));
    json_object_set_new(o, "commits", json_integer((json_int_t)p->commits));
    json_object_set_new(o, "syncs", json_integer((json_int_t)p->syncs));
    return o;
}

/* ---- the verb ---- */

static int parse_options(int argc, char **argv, bench_cfg *c)
{
    static const struct option opts[] = {
        { "items",      required_argument, NULL, 'n' },
        { "value-size", required_argument, NULL, 'v' },
        { "block-size", required_argument, NULL, 'b' },
        { "runs",       required_argument, NULL, 'r' },
        { "dir",        required_argument, NULL, 'd' },
        { "burst",      required_argument, NULL, 'B' },
        { "seed",       required_argument, NULL, 's' },
        { "keep",       no_argument,       NULL, 'k' },
        { "json",       no_argument,       NULL, 'j' },
        { "help",       no_argument,       NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    char warning[256];
    struct stat st;
    uint64_t v;
    int ch;

    cli_getopt_reset();
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case 'n':
            if (cli_parse_u64(optarg, 1, UINT32_MAX, &c->items) != 0)
                return cli_usage("bench", "--items '%s' is not a whole number from 1 to %u",
                                 optarg, UINT32_MAX);
            break;
        case 'v':
            if (tide_size_parse(optarg, &v) != 0 || v < 1 || v > TIDE_VALUE_MAX)
                return cli_usage("bench", "--value-size '%s' is not a size from 1 byte to %llu "
                                 "bytes", optarg, (unsigned long long)TIDE_VALUE_MAX);
            c->value_size = v;
            break;
        case 'b':
            c->block_size = tide_block_size_parse(optarg, warning, sizeof warning);
            if (warning[0]) fprintf(stderr, "tide bench: warning: %s\n", warning);
            break;
        case 'r':
            if (cli_parse_u64(optarg, 1, 1000, &c->runs) != 0)
                return cli_usage("bench", "--runs '%s' is not a whole number from 1 to 1000", optarg);
            break;
        case 'd':
            if (strlen(optarg) > 3000)
                return cli_usage("bench", "--dir: the path is longer than 3000 bytes");
            if (stat(optarg, &st) != 0 || !S_ISDIR(st.st_mode))
                return cli_usage("bench", "--dir '%s' is not an existing directory", optarg);
            c->parent = optarg;
            break;
        case 'B':
            if (tide_size_parse(optarg, &v) != 0 || v < 1 || v > (uint64_t)SIZE_MAX / 2)
                return cli_usage("bench", "--burst '%s' is not a size such as 16MiB", optarg);
            c->burst = v;
            break;
        case 's':
            if (cli_parse_u64(optarg, 0, (1ull << 31) - 1, &c->seed) != 0)
                return cli_usage("bench", "--seed '%s' is not a whole number from 0 to 2147483647",
                                 optarg);
            break;
        case 'k': c->keep = 1; break;
        case 'j': c->json = 1; break;
        case 'h': cli_help("bench", stdout); return -1;
        default:  return cli_option_error("bench", ch, argv);
        }
    }
    if (optind < argc)
        return cli_usage("bench", "unexpected argument '%s'", argv[optind]);
    return CLI_OK;
}

int cli_cmd_bench(int argc, char **argv)
{
    bench_cfg c = {
        .items = 100000, .value_size = 200, .runs = 3, .burst = TIDE_BURST_DEFAULT,
        .seed = 0, .block_size = TIDE_BLOCK_SIZE_DEFAULT, .parent = "/tmp",
    };
    run_result *runs = NULL;
    unsigned char *keys = NULL, *vbuf = NULL;
    char base[3100], dir[3200], kernel[300], b1[32], b2[32], b3[32];
    char durability[200], devdesc[200];
    tide_mem_proc_blockdev dev;
    struct utsname un;
    FILE *o;
    double gen_ns;
    long nproc;
    int rc, can_reset, dev_ok, base_made = 0, ret = CLI_FAIL;
    uint64_t payload;
    char reset_note[300] = "";

    if (argc < 2)
        return cli_usage("bench", "which bench? 'store' is the only one: tide bench store [OPTIONS]");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        cli_help("bench", stdout);
        return CLI_OK;
    }
    if (strcmp(argv[1], "store") != 0)
        return cli_usage("bench", "'%s' is not a bench; 'store' is the only one", argv[1]);
    rc = parse_options(argc - 1, argv + 1, &c);
    if (rc < 0) return CLI_OK;          /* --help */
    if (rc) return rc;
    o = c.json ? stderr : stdout;

    /* Machine and method. */
    nproc = sysconf(_SC_NPROCESSORS_ONLN);
    if (uname(&un) == 0)
        snprintf(kernel, sizeof kernel, "%s %s %s", un.sysname, un.release, un.machine);
    else
        snprintf(kernel, sizeof kernel, "unknown");
    snprintf(durability, sizeof durability, "commit every %u ms (sooner when the %s insert pool "
             "fills) with fdatasync, sync at end", TIDE_COMMIT_INTERVAL_DEFAULT_MS,
             hs((double)c.burst, b1, sizeof b1));

    snprintf(base, sizeof base, "%s/tide-bench-XXXXXX", c.parent);
    if (mkdtemp(base) == NULL) {
        ret = cli_error("bench", "cannot make a directory under %s: %s", c.parent, strerror(errno));
        goto out;
    }
    base_made = 1;
    dev_ok = tide_mem_proc_blockdev_read(base, &dev) == 0;
    if (dev_ok && dev.is_partition)
        snprintf(devdesc, sizeof devdesc, "%s %u:%u, a partition of %s", dev.name, dev.major,
                 dev.minor, dev.parent_name);
    else if (dev_ok)
        snprintf(devdesc, sizeof devdesc, "%s %u:%u", dev.name, dev.major, dev.minor);
    else
        snprintf(devdesc, sizeof devdesc, "counters unreadable: %s", tide_last_error());
    can_reset = tide_mem_proc_reset_peak() == 0;
    if (!can_reset)
        snprintf(reset_note, sizeof reset_note, " (VmHWM not reset: %s; it is the process's "
                 "lifetime peak)", tide_last_error());

    keys = malloc(BENCH_KEY_SIZE);
    vbuf = malloc(c.value_size);
    runs = calloc(c.runs, sizeof *runs);
    if (keys == NULL || vbuf == NULL || runs == NULL) {
        ret = cli_error("bench", "no memory for a %llu-byte value", (unsigned long long)c.value_size);
        goto out;
    }
    {   /* What making a key and a value costs (inside both timed loops). */
        uint64_t m = c.items < 100000 ? c.items : 100000, t0 = tide_clock_mono_us();
        volatile unsigned char sink = 0;
        for (uint64_t i = 0; i < m; i++) {
            stream((c.seed << 33) + 2 * i + 1, keys, BENCH_KEY_SIZE);
            stream((c.seed << 33) + 2 * i + 2, vbuf, c.value_size);
            sink ^= vbuf[0] ^ keys[0];
        }
        gen_ns = (double)(tide_clock_mono_us() - t0) * 1000.0 / (double)m;
    }
    payload = c.items * (BENCH_KEY_SIZE + c.value_size);

    fprintf(o, "method: per run a fresh store (key size %u, load factor %.1f, block size %u, "
            "burst %s); LOAD = %llu inserts of %u-byte keys and %llu-byte values + "
            "tide_store_sync, timed together; FETCH = %llu fetches in a shuffled order on one "
            "thread, every value compared, warm page cache; value generation (%.0f ns/item) is "
            "inside both timings; %llu run%s, seed %llu\n",
            BENCH_KEY_SIZE, BENCH_LOAD_FACTOR, c.block_size, hs((double)c.burst, b1, sizeof b1),
            (unsigned long long)c.items, BENCH_KEY_SIZE, (unsigned long long)c.value_size,
            (unsigned long long)c.items, gen_ns, (unsigned long long)c.runs,
            c.runs == 1 ? "" : "s", (unsigned long long)c.seed);
    fprintf(o, "machine: %ld CPUs, %s; dir %s on %s\n", nproc, kernel, base, devdesc);
    fprintf(o, "memory: peak RSS from /proc/self/status every %u ms%s; the bench generates "
            "keys, values and the fetch order on the fly and holds O(1) memory of its own\n",
            SAMPLE_US / 1000, reset_note);
    fprintf(o, "durability: %s\n", durability);
    fflush(o);

    for (unsigned r = 0; r < c.runs; r++) {
        snprintf(dir, sizeof dir, "%s/run-%u", base, r + 1);
        rc = run_one(&c, r + 1, dir, keys, vbuf, can_reset, &runs[r]);
        if (rc) {
            base_made = 0;             /* keep it: the failed store is inside */
            ret = rc;
            goto out;
        }
        print_phase_line(o, r + 1, (unsigned)c.runs, "load", &runs[r].load);
        print_phase_line(o, r + 1, (unsigned)c.runs, "fetch", &runs[r].fetch);
    }

    {
        size_t n = c.runs;
        double a[1024], b[1024];
        int io_ok = 1, wb_ok = 1, dv_ok = 1;
        stat3 lips, fips, lsec, fsec, lan, fan, lfi, ffi, lhw, fhw, ldv, fdv, lwb, fwb,
              lwc, fwc, lst, fst, lcm, fcm, lsy, fsy, dat, key, wa_dev, wa_wb, wa_st;

        if (n > 1024) n = 1024;
        for (size_t i = 0; i < n; i++) {
            io_ok &= runs[i].load.io_ok & runs[i].fetch.io_ok;
            wb_ok &= runs[i].load.dev_bytes_ok & runs[i].fetch.dev_bytes_ok;
            dv_ok &= runs[i].load.dev_ok & runs[i].fetch.dev_ok;
        }
        COLLECT(a, runs, n, r_->load.items_per_s);  lips = stat_of(a, n);
        COLLECT(b, runs, n, r_->fetch.items_per_s); fips = stat_of(b, n);
        COLLECT(a, runs, n, r_->load.secs);         lsec = stat_of(a, n);
        COLLECT(b, runs, n, r_->fetch.secs);        fsec = stat_of(b, n);
        COLLECT(a, runs, n, r_->load.peak_anon);    lan = stat_of(a, n);
        COLLECT(b, runs, n, r_->fetch.peak_anon);   fan = stat_of(b, n);
        COLLECT(a, runs, n, r_->load.peak_file);    lfi = stat_of(a, n);
        COLLECT(b, runs, n, r_->fetch.peak_file);   ffi = stat_of(b, n);
        COLLECT(a, runs, n, r_->load.vm_hwm);       lhw = stat_of(a, n);
        COLLECT(b, runs, n, r_->fetch.vm_hwm);      fhw = stat_of(b, n);
        COLLECT(a, runs, n, r_->load.dev_written);  ldv = stat_of(a, n);
        COLLECT(b, runs, n, r_->fetch.dev_written); fdv = stat_of(b, n);
        COLLECT(a, runs, n, r_->load.write_bytes);  lwb = stat_of(a, n);
        COLLECT(b, runs, n, r_->fetch.write_bytes); fwb = stat_of(b, n);
        COLLECT(a, runs, n, r_->load.wchar);        lwc = stat_of(a, n);
        COLLECT(b, runs, n, r_->fetch.wchar);       fwc = stat_of(b, n);
        COLLECT(a, runs, n, r_->load.store_written);  lst = stat_of(a, n);
        COLLECT(b, runs, n, r_->fetch.store_written); fst = stat_of(b, n);
        COLLECT(a, runs, n, r_->load.commits);      lcm = stat_of(a, n);
        COLLECT(b, runs, n, r_->fetch.commits);     fcm = stat_of(b, n);
        COLLECT(a, runs, n, r_->load.syncs);        lsy = stat_of(a, n);
        COLLECT(b, runs, n, r_->fetch.syncs);       fsy = stat_of(b, n);
        COLLECT(a, runs, n, r_->dat_bytes);         dat = stat_of(a, n);
        COLLECT(a, runs, n, r_->key_bytes);         key = stat_of(a, n);
        COLLECT(a, runs, n, (double)r_->load.dev_written / (double)payload);   wa_dev = stat_of(a, n);
        COLLECT(a, runs, n, (double)r_->load.write_bytes / (double)payload);   wa_wb = stat_of(a, n);
        COLLECT(a, runs, n, (double)r_->load.store_written / (double)payload); wa_st = stat_of(a, n);

        if (!c.json) {
            printf("\nsummary over %zu run%s: median (min-max)\n", n, n == 1 ? "" : "s");
            printf("  %-28s %-34s %s\n", "", "LOAD", "FETCH");
            print_num_row(stdout, "items/s", "%.0f", lips, fips);
            print_num_row(stdout, "seconds", "%.3f", lsec, fsec);
            print_bytes_row(stdout, "peak RSS anon (sampled)", lan, fan, 1, 1);
            print_bytes_row(stdout, "peak RSS file (sampled)", lfi, ffi, 1, 1);
            print_bytes_row(stdout, can_reset ? "VmHWM (reset per phase)" : "VmHWM (lifetime)",
                            lhw, fhw, 1, 1);
            print_bytes_row(stdout, "written: device", ldv, fdv, dv_ok, dv_ok);
            print_bytes_row(stdout, "written: io write_bytes", lwb, fwb, wb_ok, wb_ok);
            print_bytes_row(stdout, "written: io wchar", lwc, fwc, io_ok, io_ok);
            print_bytes_row(stdout, "written: store counter", lst, fst, 1, 1);
            print_num_row(stdout, "commits", "%.0f", lcm, fcm);
            print_num_row(stdout, "syncs", "%.0f", lsy, fsy);
            printf("  %-28s %s\n", "durability", durability);
            printf("  %-28s data file %s, key file %s (%llu buckets)\n", "files after LOAD",
                   hs(dat.median, b1, sizeof b1), hs(key.median, b2, sizeof b2),
                   (unsigned long long)runs[0].buckets);
            printf("  %-28s %s (%llu x (32 + %llu))\n", "payload", hs((double)payload, b3, sizeof b3),
                   (unsigned long long)c.items, (unsigned long long)c.value_size);
            if (dv_ok)
                printf("  %-28s %.2f (%.2f-%.2f)  device bytes written / payload\n",
                       "write amplification", wa_dev.median, wa_dev.min, wa_dev.max);
            else
                printf("  %-28s n/a from the device (%s)\n", "write amplification", devdesc);
            if (wb_ok)
                printf("  %-28s %.2f (%.2f-%.2f)  /proc/self/io write_bytes / payload\n", "",
                       wa_wb.median, wa_wb.min, wa_wb.max);
            printf("  %-28s %.2f (%.2f-%.2f)  store bytes written / payload\n", "",
                   wa_st.median, wa_st.min, wa_st.max);
        } else {
            json_t *root = json_object(), *jr = json_array(), *sum = json_object(),
                   *jl = json_object(), *jf = json_object(), *wa = json_object();
            json_object_set_new(root, "bench", json_string("store"));
            json_object_set_new(root, "method", json_pack(
                "{s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:I, s:f, s:s, s:s}",
                "items", (json_int_t)c.items, "value_size", (json_int_t)c.value_size,
                "key_size", (json_int_t)BENCH_KEY_SIZE, "block_size", (json_int_t)c.block_size,
                "load_factor", BENCH_LOAD_FACTOR, "burst_bytes", (json_int_t)c.burst,
                "runs", (json_int_t)c.runs, "seed", (json_int_t)c.seed,
                "value_generation_ns_per_item", gen_ns,
                "load", "N inserts + tide_store_sync, timed together",
                "fetch", "N fetches in a shuffled order, one thread, values compared"));
            json_object_set_new(root, "machine", json_pack("{s:I, s:s}", "nproc",
                                (json_int_t)nproc, "kernel", kernel));
            json_object_set_new(root, "dir", json_string(base));
            json_object_set_new(root, "device", dev_ok
                ? json_pack("{s:s, s:I, s:I, s:b, s:o}", "name", dev.name,
                            "major", (json_int_t)dev.major, "minor", (json_int_t)dev.minor,
                            "is_partition", dev.is_partition, "parent", dev.is_partition
                            ? json_string(dev.parent_name) : json_null())
                : json_null());
            json_object_set_new(root, "durability", json_string(durability));
            json_object_set_new(root, "peak_reset", json_boolean(can_reset));
            for (size_t i = 0; i < n; i++) {
                json_t *x = json_object();
                json_object_set_new(x, "run", json_integer((json_int_t)i + 1));
                json_object_set_new(x, "dat_file_bytes", json_integer((json_int_t)runs[i].dat_bytes));
                json_object_set_new(x, "key_file_bytes", json_integer((json_int_t)runs[i].key_bytes));
                json_object_set_new(x, "buckets", json_integer((json_int_t)runs[i].buckets));
                json_object_set_new(x, "load", j_phase(&runs[i].load));
                json_object_set_new(x, "fetch", j_phase(&runs[i].fetch));
                json_array_append_new(jr, x);
            }
            json_object_set_new(root, "runs", jr);
            json_object_set_new(jl, "items_per_s", j_stat(lips));
            json_object_set_new(jl, "seconds", j_stat(lsec));
            json_object_set_new(jl, "peak_rss_anon_bytes", j_stat(lan));
            json_object_set_new(jl, "peak_rss_file_bytes", j_stat(lfi));
            json_object_set_new(jl, "vm_hwm_bytes", j_stat(lhw));
            json_object_set_new(jl, "device_bytes_written", dv_ok ? j_stat(ldv) : json_null());
            json_object_set_new(jl, "io_write_bytes", wb_ok ? j_stat(lwb) : json_null());
            json_object_set_new(jl, "io_wchar", io_ok ? j_stat(lwc) : json_null());
            json_object_set_new(jl, "store_bytes_written", j_stat(lst));
            json_object_set_new(jl, "commits", j_stat(lcm));
            json_object_set_new(jl, "syncs", j_stat(lsy));
            json_object_set_new(jf, "items_per_s", j_stat(fips));
            json_object_set_new(jf, "seconds", j_stat(fsec));
            json_object_set_new(jf, "peak_rss_anon_bytes", j_stat(fan));
            json_object_set_new(jf, "peak_rss_file_bytes", j_stat(ffi));
            json_object_set_new(jf, "vm_hwm_bytes", j_stat(fhw));
            json_object_set_new(jf, "device_bytes_written", dv_ok ? j_stat(fdv) : json_null());
            json_object_set_new(jf, "io_write_bytes", wb_ok ? j_stat(fwb) : json_null());
            json_object_set_new(jf, "io_wchar", io_ok ? j_stat(fwc) : json_null());
            json_object_set_new(jf, "store_bytes_written", j_stat(fst));
            json_object_set_new(jf, "commits", j_stat(fcm));
            json_object_set_new(jf, "syncs", j_stat(fsy));
            json_object_set_new(wa, "payload_bytes", json_integer((json_int_t)payload));
            json_object_set_new(wa, "device", dv_ok ? j_stat(wa_dev) : json_null());
            json_object_set_new(wa, "io_write_bytes", wb_ok ? j_stat(wa_wb) : json_null());
            json_object_set_new(wa, "store", j_stat(wa_st));
            json_object_set_new(sum, "load", jl);
            json_object_set_new(sum, "fetch", jf);
            json_object_set_new(sum, "dat_file_bytes", j_stat(dat));
            json_object_set_new(sum, "key_file_bytes", j_stat(key));
            json_object_set_new(sum, "write_amplification", wa);
            json_object_set_new(root, "summary", sum);
            rc = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
            json_decref(root);
            putchar('\n');
            if (rc != 0) { ret = cli_error("bench", "cannot write the JSON output"); goto out; }
        }
    }
    if (c.keep)
        fprintf(o, "kept: %s\n", base);
    ret = CLI_OK;
out:
    if (base_made && !c.keep) rmdir(base);
    free(keys);
    free(vbuf);
    free(runs);
    return ret;
}
