/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_archive_measure.c: the archive benchmark's measurements, one call
 * each (bench_archive.h says what each section is for; bench_archive.c
 * runs them in their order):
 *
 *   upload  A primary tide_archive opened on the bench's generations (the
 *           sealed one and the empty newest) under a fresh prefix: its
 *           thread's first pass lists both in the manifest, finds nothing
 *           archived, uploads the sealed generation's nudb.dat (`inflight`
 *           writes of piece_bytes in flight) and seals it: nudb.key
 *           uploaded the same way, a filter of its keys built from the
 *           local store and written, the manifest entry made sealed. Timed
 *           with the monotonic clock: tide_archive_open; from its return to
 *           tide_archive_wait's return for every byte of nudb.dat (the
 *           data); then the archive's trace points "key", "filter" and
 *           "sealed", recorded on its thread as they happen.
 *   read    opts.keys fetches, each timed alone (the clock read right
 *           before and after the call), after one untimed fetch that opens
 *           what the phase reads (timed as the open): the local copy with
 *           tide_store_fetch (read-only, nudb.key and nudb.dat mapped, as
 *           a node opens them), or the read copy with tide_archive_fetch
 *           through a replica of its prefix (a replica serves every sealed
 *           generation: the path a primary's read takes once its local
 *           copy is gone), with the filters held or with a budget of 0.
 *           Every value found is compared with the one written.
 *   sync    a tide_node (online delete on, the archive on under a fresh
 *           prefix; no sweeper, governor or rotator thread), one untimed
 *           put and sync (the archive's first pass), then opts.puts of
 *           (tide_node_put, tide_node_sync), each pair timed, with
 *           archive_sync off (local) or on (archive).
 *
 * Invariants:
 *   1. Whatever a measurement wrote to the pool is removed before it
 *      returns, failed or not (the read copy excepted: bench_archive.c
 *      removes it at the end), and every handle it opened is closed.
 *   2. A phase whose counts do not add up fails (TIDE_ECORRUPT): a hit
 *      phase finds every key with its value, a miss phase none, a write
 *      variant's syncs all waited for the archive (or none did).
 *   3. Nothing is generated inside a timed interval: keys are ready before
 *      the phase, and a value is checked after its fetch's clock stopped.
 *
 * Never: print.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "archive/archive.h"
#include "bench/bench_archive_impl.h"
#include "gen/gens.h"
#include "io/io.h"
#include "mem/account.h"
#include "node/node.h"
#include "store/full.h"
#include "tide/error.h"
#include "util/clock.h"
#include "util/err.h"

/* How long an upload or a seal may take before the bench gives up: two
 * minutes, and a second per MiB of the generation. */
static unsigned wait_ms(const tide_bench_archive *b)
{
    return 120000u + (unsigned)(b->opts.size >> 20) * 1000u;
}

static void archive_opts(const tide_bench_archive *b, tide_archive_opts *ao, const char *prefix)
{
    tide_archive_opts_init(ao);
    ao->conf = b->opts.conf;
    ao->pool = b->opts.pool;
    ao->prefix = prefix;
    ao->timeout_s = b->opts.timeout_s;
    ao->chunk_bytes = b->opts.chunk_bytes;
    ao->piece_bytes = (size_t)b->opts.piece_bytes;
    ao->upload_account = b->upload_account;
    ao->filter_account = b->filter_account;
}

/* ---- upload ---- */

/* The trace points of one generation's seal, as the archiver reaches them. */
typedef struct seal_clock {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t id;
    uint64_t key_ns, filter_ns, sealed_ns, key_bytes, filter_bytes;
} seal_clock;

static void seal_trace(void *arg, const char *step, uint64_t id, uint64_t bytes)
{
    seal_clock *c = arg;
    uint64_t now = tide_clock_mono_ns();

    if (id != c->id) return;
    pthread_mutex_lock(&c->mu);
    if (strcmp(step, "key") == 0) {
        c->key_ns = now;
        c->key_bytes = bytes;
    } else if (strcmp(step, "filter") == 0) {
        c->filter_ns = now;
        c->filter_bytes = bytes;
    } else if (strcmp(step, "sealed") == 0) {
        c->sealed_ns = now;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
}

/* Wait for the "sealed" trace, at most ms. 0 or TIDE_EUNAVAIL naming what
 * the archive said. */
static int wait_sealed(tide_archive *a, seal_clock *c, unsigned ms)
{
    uint64_t until = tide_clock_real_us() + (uint64_t)ms * 1000;
    struct timespec ts = { (time_t)(until / 1000000), (long)(until % 1000000) * 1000 };
    tide_archive_info ai;
    int sealed;

    pthread_mutex_lock(&c->mu);
    while (c->sealed_ns == 0 && pthread_cond_timedwait(&c->cv, &c->mu, &ts) == 0)
        ;
    sealed = c->sealed_ns != 0;
    pthread_mutex_unlock(&c->mu);
    if (sealed) return 0;
    tide_archive_get_info(a, &ai);
    return tide_err_set(TIDE_EUNAVAIL, "generation %" PRIu64 " not sealed after %u ms (%s)", c->id,
                        ms, ai.problem[0] ? ai.problem : "no failure reported");
}

/* The sealed generation's durable size, from the generations' information. */
static uint64_t durable_of(tide_gens *g, uint64_t id)
{
    tide_gens_info gi;

    tide_gens_get_info(g, &gi);
    for (unsigned i = 0; i < gi.count; i++)
        if (gi.gens[i].id == id) return gi.gens[i].dat_durable;
    return 0;
}

/* Open the archive on `g`, wait for the data and the seal, read the figures. */
static int upload_timed(tide_bench_archive *b, tide_gens *g, unsigned inflight, const char *prefix,
                        seal_clock *c, tide_bench_archive_upload *out)
{
    tide_archive_opts ao;
    tide_archive_info ai;
    tide_archive *a = NULL;
    uint64_t t0, t1, t2;
    int rc;

    archive_opts(b, &ao, prefix);
    ao.gens = g;
    ao.data_dir = b->data_dir;
    ao.inflight = inflight;
    ao.trace = seal_trace;
    ao.trace_arg = c;
    out->dat_bytes = durable_of(g, b->gen_id);
    t0 = tide_clock_mono_ns();
    if ((rc = tide_archive_open(&a, &ao)) != 0) goto out;
    t1 = tide_clock_mono_ns();
    rc = tide_archive_wait(a, b->gen_id, out->dat_bytes, wait_ms(b));
    t2 = tide_clock_mono_ns();
    out->upload_buffers = tide_mem_account_get(b->upload_account);
    if (rc == 0) rc = wait_sealed(a, c, wait_ms(b));
    if (rc) goto out;
    tide_archive_get_info(a, &ai);
    out->open_ns = t1 - t0;
    out->data_ns = t2 - t1;
    pthread_mutex_lock(&c->mu);
    out->key_ns = c->key_ns - t2;
    out->filter_ns = c->filter_ns - c->key_ns;
    out->manifest_ns = c->sealed_ns - c->filter_ns;
    out->key_bytes = c->key_bytes;
    out->filter_bytes = c->filter_bytes;
    pthread_mutex_unlock(&c->mu);
    out->writes = ai.op[TIDE_ARCHIVE_OP_WRITE].count;
    if (c->key_ns < t2 || ai.seals < 1)
        rc = tide_err_set(TIDE_ECORRUPT, "the key file's upload began before the data's end, "
                          "or no seal was counted (%" PRIu64 ")", ai.seals);
out:
    tide_archive_close(a);
    return rc;
}

int ti_bench_archive_upload(tide_bench_archive *b, unsigned inflight, const char *prefix,
                            int keep_objects, tide_bench_archive_upload *out)
{
    seal_clock c = { .id = b->gen_id };
    tide_gens_opts go;
    tide_gens *g = NULL;
    int rc, rrc;

    memset(out, 0, sizeof *out);
    out->inflight = inflight;
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    tide_gens_opts_init(&go);
    go.online_delete = 1;
    go.keep = 2;
    go.create_if_missing = 0;
    go.back_off_ms = 0;
    if ((rc = tide_gens_open(&g, b->data_dir, &go)) != 0) goto out;
    rc = upload_timed(b, g, inflight, prefix, &c, out);
out:
    if (g && (rrc = tide_gens_close(g)) != 0 && rc == 0) rc = rrc;
    if ((rc || !keep_objects) && (rrc = ti_bench_archive_remove(b, prefix)) != 0 && rc == 0)
        rc = rrc;                                            /* invariant 1 */
    pthread_cond_destroy(&c.cv);
    pthread_mutex_destroy(&c.mu);
    if (rc) tide_err_prefix(rc, "upload at inflight %u, prefix %s", inflight, prefix);
    return rc;
}

/* ---- read ---- */

/* A fetch of the phase's kind: 0, TIDE_ENOTFOUND or the call's error. */
typedef struct reader {
    tide_store *s;          /* the local copy, or */
    tide_archive *a;        /* the archive */
} reader;

static int fetch(const reader *rd, const unsigned char *key, void **out, size_t *len)
{
    uint64_t gen = 0;

    if (rd->s) return tide_store_fetch(rd->s, key, out, len);
    return tide_archive_fetch(rd->a, 0, key, TIDE_BENCH_KEY_SIZE, out, len, &gen);
}

/* The reads the phase's source counts: RADOS' or the local files'. */
static void reads_of(const reader *rd, uint64_t *reads, uint64_t *bytes, uint64_t *filtered)
{
    tide_archive_info ai;
    tide_io *io = tide_io_posix();

    *filtered = 0;
    if (rd->s) {
        *reads = __atomic_load_n(&io->reads, __ATOMIC_RELAXED);
        *bytes = __atomic_load_n(&io->bytes_read, __ATOMIC_RELAXED);
        return;
    }
    tide_archive_get_info(rd->a, &ai);
    *reads = ai.rados_reads;
    *bytes = ai.rados_read_bytes;
    *filtered = ai.reads_filtered;
}

/* 0 when `got` is item i's value, else TIDE_ECORRUPT naming the fetch. */
static int check_value(tide_bench_archive *b, uint64_t k, const void *got, size_t len)
{
    size_t vs = (size_t)b->opts.value_size;

    tide_bench_value(b->opts.seed, b->item[k], b->value, vs);
    if (len == vs && memcmp(got, b->value, vs) == 0) return 0;
    return tide_err_set(TIDE_ECORRUPT, "fetch %" PRIu64 " (item %" PRIu64 ") returned %zu bytes that "
                        "are not the value written", k + 1, b->item[k], len);
}

/* The open's fetch (the key past the phase's, present), then the timed ones. */
static int fetch_all(tide_bench_archive *b, const reader *rd, int expect_found,
                     tide_bench_archive_read *out)
{
    uint64_t r0, r1, rb0, rb1, f0, f1, t0;
    void *got = NULL;
    size_t len = 0;
    int rc;

    reads_of(rd, &r0, &rb0, &f0);
    t0 = tide_clock_mono_ns();
    rc = fetch(rd, b->open_key, &got, &len);
    out->open_ns += tide_clock_mono_ns() - t0;
    free(got);
    if (rc) return tide_err_prefix(rc, "the first fetch");
    reads_of(rd, &r1, &rb1, &f1);
    out->open_reads = r1 - r0;
    out->filter_memory = tide_mem_account_get(b->filter_account);
    for (uint64_t k = 0; k < b->opts.keys; k++) {
        got = NULL;
        t0 = tide_clock_mono_ns();
        rc = fetch(rd, b->keys + k * TIDE_BENCH_KEY_SIZE, &got, &len);
        b->lat[k] = tide_clock_mono_ns() - t0;
        out->fetches++;
        if (rc == 0) {
            out->found++;
            rc = check_value(b, k, got, len);
            free(got);
        } else if (rc == TIDE_ENOTFOUND) {
            rc = 0;
        }
        if (rc) return tide_err_prefix(rc, "fetch %" PRIu64, k + 1);
    }
    reads_of(rd, &r0, &rb0, &f0);
    out->reads = r0 - r1;
    out->read_bytes = rb0 - rb1;
    out->filtered = f0 - f1;
    if (out->found != (expect_found ? out->fetches : 0))      /* invariant 2 */
        return tide_err_set(TIDE_ECORRUPT, "found %" PRIu64 " of %" PRIu64 " keys %s", out->found,
                            out->fetches, expect_found ? "written" : "never written");
    return 0;
}

int ti_bench_archive_read(tide_bench_archive *b, int id, tide_bench_archive_read *out)
{
    static const char *const names[TIDE_BA_READS] = { "local", "archive hit",
                                                      "archive miss with filters",
                                                      "archive miss without filters" };
    reader rd = { NULL, NULL };
    tide_archive_opts ao;
    tide_store_opts so;
    char prefix[80];
    uint64_t t0 = tide_clock_mono_ns();
    int rc;

    memset(out, 0, sizeof *out);
    if (id == TIDE_BA_LOCAL) {
        tide_store_opts_init(&so);
        so.read_only = 1;
        rc = tide_store_open(&rd.s, b->gen_dir, &so);
    } else {
        snprintf(prefix, sizeof prefix, "%s-read", b->prefix);
        archive_opts(b, &ao, prefix);
        ao.replica = 1;
        ao.filter_budget = id == TIDE_BA_MISS_NOFILTER ? 0 : b->opts.filter_budget;
        rc = tide_archive_open(&rd.a, &ao);
    }
    out->open_ns = tide_clock_mono_ns() - t0;
    if (rc == 0) rc = fetch_all(b, &rd, id <= TIDE_BA_HIT, out);
    if (rc == 0)
        ti_bench_archive_percentiles(b->lat, out->fetches, &out->p50_ns, &out->p90_ns,
                                     &out->p99_ns, &out->max_ns, &out->total_ns);
    if (rd.s) {
        int crc = tide_store_close(rd.s);
        if (rc == 0) rc = crc;
    }
    tide_archive_close(rd.a);
    if (rc) tide_err_prefix(rc, "read phase \"%s\"", names[id]);
    return rc;
}

/* ---- sync ---- */

static void node_opts(const tide_bench_archive *b, int which, const char *dir, const char *prefix,
                      tide_node_opts *o)
{
    tide_node_opts_init(o);
    o->dir = dir;
    o->key_size = TIDE_BENCH_KEY_SIZE;
    o->sweep_interval_ms = 0;
    o->memory_poll_ms = 0;
    o->rotate_check_ms = 0;
    o->online_delete_on = 1;
    o->generations = 2;
    o->archive_on = 1;
    o->archive_sync = which == TIDE_BA_SYNC_ARCHIVE;
    archive_opts(b, &o->archive, prefix);       /* the node counts under its own consumers */
}

/* One put of item i and a sync; *ns the pair's time. */
static int put_synced(tide_bench_archive *b, tide_node *n, uint64_t i, uint64_t *ns)
{
    uint64_t t0;
    int rc;

    tide_bench_key(b->opts.seed, i, b->key);
    tide_bench_value(b->opts.seed, i, b->value, (size_t)b->opts.value_size);
    t0 = tide_clock_mono_ns();
    rc = tide_node_put(n, b->key, b->value, (size_t)b->opts.value_size);
    if (rc == 0) rc = tide_node_sync(n);
    *ns = tide_clock_mono_ns() - t0;
    return rc ? tide_err_prefix(rc, "put and sync of item %" PRIu64, i) : 0;
}

static int puts_timed(tide_bench_archive *b, tide_node *n, int which, tide_bench_archive_sync *out)
{
    uint64_t first = b->items + (1ull << 32), ns = 0, want;
    int rc = put_synced(b, n, first, &ns);                   /* the first pass's, untimed */

    for (uint64_t k = 0; rc == 0 && k < b->opts.puts; k++) {
        rc = put_synced(b, n, first + 1 + k, &b->lat[k]);
        out->puts += rc == 0;
    }
    if (rc) return rc;
    out->archive_waits = tide_node_archive_sync_waits(n, 0);
    out->archive_failed = tide_node_archive_sync_waits(n, 1);
    want = which == TIDE_BA_SYNC_ARCHIVE ? b->opts.puts + 1 : 0;
    if (out->archive_waits != want || out->archive_failed != 0)        /* invariant 2 */
        return tide_err_set(TIDE_ECORRUPT, "%" PRIu64 " syncs waited for the archive (%" PRIu64
                            " failed), expected %" PRIu64, out->archive_waits,
                            out->archive_failed, want);
    ti_bench_archive_percentiles(b->lat, out->puts, &out->p50_ns, &out->p90_ns, &out->p99_ns,
                                 &out->max_ns, &out->total_ns);
    return 0;
}

int ti_bench_archive_sync(tide_bench_archive *b, unsigned run, int which,
                          tide_bench_archive_sync *out)
{
    const char *name = which == TIDE_BA_SYNC_ARCHIVE ? "archive" : "local";
    char dir[TIDE_BENCH_PATH_MAX + 200], prefix[80];
    tide_node_opts o;
    tide_node *n = NULL;
    int rc, rrc;

    memset(out, 0, sizeof *out);
    snprintf(dir, sizeof dir, "%s/node-%u-%s", b->dir, run, name);
    snprintf(prefix, sizeof prefix, "%s-%u-sync-%s", b->prefix, run, name);
    node_opts(b, which, dir, prefix, &o);
    if ((rc = tide_node_open(&n, &o)) != 0) goto out;
    rc = puts_timed(b, n, which, out);
out:
    if (n && (rrc = tide_node_close(n)) != 0 && rc == 0) rc = rrc;
    if ((rrc = ti_bench_archive_remove(b, prefix)) != 0 && rc == 0) rc = rrc;   /* invariant 1 */
    if (rc == 0 && !b->opts.keep && (rc = ti_bench_archive_remove_tree(dir)) != 0)
        tide_err_prefix(rc, "removing %s", dir);
    if (rc) tide_err_prefix(rc, "acknowledged writes, archive_sync=%s, prefix %s", name, prefix);
    return rc;
}
