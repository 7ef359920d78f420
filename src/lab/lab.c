/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lab.c: the trim lab's workload, series, figures and CSV writers.
 *
 * The workload stands in for a ledger node's: every ledger writes a few
 * thousand new objects (most of them about 525 bytes, like SHAMap inner
 * nodes, the rest from 100 bytes to 2 KiB, like leaves) and reads some
 * recent and some older ones. Everything about an op is drawn from a
 * counter-based generator, mix(seed, ledger, index, stream), so that any
 * client thread computes any op on its own and every node sees the same.
 *
 * Layout: the generator, the workload ops, the series arrays, the figures
 * (the plateau test among them), the CSV writers. The chart's gnuplot
 * script is in lab_plot.c.
 *
 * The plateau test asks whether a run may be read as a steady state at
 * all: a mean over a ramp is a number about the run's length, not about
 * the variant. The last third of the plateau window is fitted with a
 * straight line; what that line climbs over the third (the drift) is
 * compared with the scatter around it (the noise) and with the level.
 * Noise leaves the fitted drift small against the scatter; a ramp does
 * not. A waved load moves RSS with it, and a line fitted to a wave
 * alone climbs or falls with the part of the wave it sees: so with a
 * wave the window is whole waves, and the wave's first harmonic is
 * fitted beside the line, which then measures only what moves from one
 * wave to the next.
 *
 * Invariants:
 *   1. tide_lab_ledger_op is a pure function of (w, ledger, i): the same
 *      arguments give the same kind, key and length on every call.
 *   2. A ledger holds exactly tide_lab_ledger_objects() PUTs and w->reads
 *      GETs, the GETs
 *      spread evenly (op i is a GET when floor((i+1)r/n) > floor(ir/n)).
 *   3. The PUT of object (L, j) and every GET of it agree on key and len,
 *      so a reader can check the length a node returns.
 *   4. A series' sweeps are sorted by seq with no duplicates, whatever
 *      order and overlap the node's reports arrive in.
 *
 * Never: use rand() or any global state (the clients are threads), or
 * print from here.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab_impl.h"
#include "tide/error.h"
#include "util/err.h"
#include "util/random.h"

/* ---- the generator ---------------------------------------------------------- */

/* A well-mixed 64-bit value of four inputs; different streams are
 * independent. */
static uint64_t mix(uint64_t seed, uint64_t ledger, uint64_t index, uint64_t stream)
{
    uint64_t h = tide_random_mix64(seed ^ 0x7469646531ull);
    h = tide_random_mix64(h ^ ledger);
    h = tide_random_mix64(h ^ (index * 0x2545f4914f6cdd1dull));
    return tide_random_mix64(h ^ (stream * 0xd6e8feb86659fd93ull));
}

enum { S_SIZE_KIND = 1, S_SIZE, S_KEY0, S_READ_KIND = 8, S_READ_LEDGER, S_READ_INDEX, S_FILL };

/* ---- the workload ----------------------------------------------------------------- */

void tide_lab_workload_init(tide_lab_workload *w)
{
    memset(w, 0, sizeof *w);
    w->seed = 1;
    w->objects = 2000;
    w->reads = 1000;
    w->inner_pct = 60;
    w->recent_pct = 50;
    w->wave_period = 120;
    w->wave_pct = 75;
    w->size_min = 100;
    w->size_max = 2048;
}

unsigned tide_lab_ledger_objects(const tide_lab_workload *w, uint64_t ledger)
{
    double f, v;

    if (w->wave_period == 0 || w->wave_pct == 0) return w->objects;
    f = (double)(ledger % w->wave_period) / (double)w->wave_period;
    v = (double)w->objects * (1.0 + (double)w->wave_pct / 100.0 * sin(2 * M_PI * f));
    return v < 1 ? 1 : (unsigned)lround(v);
}

size_t tide_lab_ledger_ops(const tide_lab_workload *w, uint64_t ledger)
{
    return (size_t)tide_lab_ledger_objects(w, ledger) + w->reads;
}

void tide_lab_object(const tide_lab_workload *w, uint64_t ledger, uint64_t index, tide_lab_op *op)
{
    uint64_t kind = mix(w->seed, ledger, index, S_SIZE_KIND) % 100;
    uint64_t r = mix(w->seed, ledger, index, S_SIZE);

    op->kind = TIDE_LAB_PUT;
    op->ledger = ledger;
    op->index = index;
    if (kind < w->inner_pct) op->len = (uint32_t)(500 + r % 51);       /* about 525 */
    else op->len = (uint32_t)(w->size_min + r % (w->size_max - w->size_min + 1));  /* size_min..size_max */
    for (unsigned k = 0; k < TIDE_LAB_KEY_SIZE / 8; k++) {
        uint64_t v = mix(w->seed, ledger, index, S_KEY0 + k);
        memcpy(op->key + 8 * k, &v, 8);
    }
}

void tide_lab_ledger_op(const tide_lab_workload *w, uint64_t ledger, size_t i, tide_lab_op *op)
{
    uint64_t n = tide_lab_ledger_ops(w, ledger), r = w->reads;
    uint64_t gets_before = (uint64_t)i * r / n, gets_after = ((uint64_t)i + 1) * r / n;
    uint64_t src_ledger, src_index;

    if (gets_after == gets_before) {                      /* a PUT (invariant 2) */
        tide_lab_object(w, ledger, (uint64_t)i - gets_before, op);
        return;
    }
    /* The GET number gets_before of this ledger. */
    if (ledger == 0) {
        src_ledger = 0;
    } else if (mix(w->seed, ledger, gets_before, S_READ_KIND) % 100 < w->recent_pct) {
        src_ledger = ledger - 1 - (ledger >= 2 ? mix(w->seed, ledger, gets_before, S_READ_LEDGER) % 2 : 0);
    } else {
        src_ledger = mix(w->seed, ledger, gets_before, S_READ_LEDGER) % ledger;
    }
    src_index = mix(w->seed, ledger, gets_before, S_READ_INDEX) % tide_lab_ledger_objects(w, src_ledger);
    tide_lab_object(w, src_ledger, src_index, op);
    op->kind = TIDE_LAB_GET;
}

void tide_lab_value_fill(const tide_lab_workload *w, const tide_lab_op *op, uint8_t *buf)
{
    uint64_t x = mix(w->seed, op->ledger, op->index, S_FILL);

    for (uint32_t i = 0; i < op->len; i += 8) {
        x = tide_random_mix64(x);
        memcpy(buf + i, &x, op->len - i < 8 ? op->len - i : 8);
    }
}

/* ---- series ---------------------------------------------------------------------- */

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    size_t ncap;
    void *p;

    if (need <= *cap) return 0;
    ncap = *cap ? *cap * 2 : 256;
    while (ncap < need) ncap *= 2;
    p = realloc(*arr, ncap * elem);
    if (p == NULL) return tide_err_set(TIDE_ENOMEM, "lab: %zu series entries", ncap);
    *arr = p;
    *cap = ncap;
    return 0;
}

int ti_lab_series_add_sample(tide_lab_series *s, const tide_lab_sample *x)
{
    int rc = grow((void **)&s->samples, &s->capsamples, s->nsamples + 1, sizeof *s->samples);
    if (rc) goto out;
    s->samples[s->nsamples++] = *x;
out:
    return rc;
}

int ti_lab_series_add_sweep(tide_lab_series *s, const tide_lab_sweep *x)
{
    size_t at = s->nsweeps;
    int rc = 0;

    while (at > 0 && s->sweeps[at - 1].seq >= x->seq) {
        if (s->sweeps[at - 1].seq == x->seq) goto out;      /* seen (invariant 4) */
        at--;
    }
    rc = grow((void **)&s->sweeps, &s->capsweeps, s->nsweeps + 1, sizeof *s->sweeps);
    if (rc) goto out;
    memmove(s->sweeps + at + 1, s->sweeps + at, (s->nsweeps - at) * sizeof *s->sweeps);
    s->sweeps[at] = *x;
    s->nsweeps++;
out:
    return rc;
}

void ti_lab_series_free(tide_lab_series *s)
{
    free(s->samples);
    free(s->sweeps);
    free(s->rotations);
    s->samples = NULL;
    s->sweeps = NULL;
    s->rotations = NULL;
    s->nsamples = s->capsamples = s->nsweeps = s->capsweeps = 0;
    s->nrotations = s->caprotations = 0;
}

/* ---- figures ---------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double ti_lab_quantile(double *v, size_t n, double q)
{
    double pos, frac;
    size_t lo;

    if (n == 0) return NAN;
    qsort(v, n, sizeof *v, cmp_double);
    if (q <= 0) return v[0];
    if (q >= 1) return v[n - 1];
    pos = q * (double)(n - 1);
    lo = (size_t)pos;
    frac = pos - (double)lo;
    return lo + 1 < n ? v[lo] + frac * (v[lo + 1] - v[lo]) : v[lo];
}

/* Solve the n x n system a x = b (a row-major, both overwritten) by
 * Gaussian elimination with partial pivoting. -1 when a is singular. */
static int solve_small(double *a, double *b, int n)
{
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(a[r * n + c]) > fabs(a[p * n + c])) p = r;
        if (!(fabs(a[p * n + c]) > 1e-12 * (fabs(a[c * n + c]) + 1e-300))) return -1;
        if (p != c) {
            for (int k = 0; k < n; k++) { double t = a[c * n + k]; a[c * n + k] = a[p * n + k]; a[p * n + k] = t; }
            double t = b[c]; b[c] = b[p]; b[p] = t;
        }
        for (int r = c + 1; r < n; r++) {
            double f = a[r * n + c] / a[c * n + c];
            for (int k = c; k < n; k++) a[r * n + k] -= f * a[c * n + k];
            b[r] -= f * b[c];
        }
    }
    for (int c = n - 1; c >= 0; c--) {
        for (int k = c + 1; k < n; k++) b[c] -= a[c * n + k] * b[k];
        b[c] /= a[c * n + c];
    }
    return 0;
}

/* The regressors of one sample at time t (centred on the window's middle
 * tc): 1, t, and with a wave its first harmonic. */
static int plateau_row(double t, double tc, double wave_s, double *row)
{
    row[0] = 1, row[1] = t - tc;
    if (!(wave_s > 0)) return 2;
    row[2] = sin(2 * M_PI * t / wave_s), row[3] = cos(2 * M_PI * t / wave_s);
    return 4;
}

void ti_lab_plateau_test(const tide_lab_series *s, double warmup_s, double wave_s, tide_lab_plateau *out)
{
    double t_end, from, span, tc, ata[16] = { 0 }, atb[4] = { 0 }, row[4], res = 0, sy = 0;
    size_t n = 0;
    int k = 2;

    out->state = TIDE_LAB_PLATEAU_UNKNOWN;
    out->samples = 0;
    out->span = 0;
    out->drift = out->noise = out->level = NAN;
    if (s->nsamples == 0) return;
    t_end = s->samples[s->nsamples - 1].t;
    if (t_end <= warmup_s) return;
    span = (t_end - warmup_s) / 3.0;
    if (wave_s > 0) {
        /* Whole waves only: a part of one would weigh its rising or its
         * falling half, and read as a drift. */
        double whole = floor((t_end - warmup_s) / wave_s);
        if (whole < 1) return;
        span = fmin(ceil(span / wave_s), whole) * wave_s;
    }
    out->span = span;
    from = t_end - span;
    tc = t_end - span / 2;
    for (size_t i = 0; i < s->nsamples; i++) {
        double t = s->samples[i].t, y = (double)s->samples[i].rss;
        if (t < from) continue;
        k = plateau_row(t, tc, wave_s, row);
        for (int r = 0; r < k; r++) {
            for (int c = 0; c < k; c++) ata[r * k + c] += row[r] * row[c];
            atb[r] += row[r] * y;
        }
        n++, sy += y;
    }
    out->samples = n;
    if (n < TIDE_LAB_PLATEAU_MIN || solve_small(ata, atb, k) != 0) return;
    for (size_t i = 0; i < s->nsamples; i++) {
        double t = s->samples[i].t, e = (double)s->samples[i].rss;
        if (t < from) continue;
        plateau_row(t, tc, wave_s, row);
        for (int c = 0; c < k; c++) e -= atb[c] * row[c];
        res += e * e;
    }
    out->noise = sqrt(res / (double)(n - (size_t)k));
    out->level = sy / (double)n;
    out->drift = atb[1] * span;
    out->state = fabs(out->drift) <= fmax(TIDE_LAB_PLATEAU_NOISES * out->noise, TIDE_LAB_PLATEAU_LEVEL * out->level)
                     ? TIDE_LAB_PLATEAU_REACHED : TIDE_LAB_PLATEAU_NONE;
}

int ti_lab_figures_compute(const tide_lab_series *s, double warmup_s, double wave_s, tide_lab_figures *out)
{
    tide_lab_figures f;
    double *dur = NULL, *rel = NULL, *freed = NULL, *ratio = NULL, sum = 0, sumref = 0, minflt = 0;
    size_t ndur = 0, nrel = 0, nfreed = 0, nratio = 0;
    int rc = 0;

    memset(&f, 0, sizeof f);
    f.plateau_mean_rss = f.plateau_mean_referenced = f.peak_rss = f.last_rss = NAN;
    f.lowered_pct = f.release_median = f.release_max = NAN;
    f.trim_median_ms = f.trim_p95_ms = f.trim_max_ms = f.minflt_per_trim = f.freed_median = NAN;
    f.anon_per_counted = NAN;
    f.samples = s->nsamples;
    f.sweeps = s->nsweeps;
    for (size_t i = 0; i < s->nsamples; i++) {
        const tide_lab_sample *x = &s->samples[i];
        if (isnan(f.peak_rss) || (double)x->rss > f.peak_rss) f.peak_rss = (double)x->rss;
        f.last_rss = (double)x->rss;
        if (x->t < warmup_s) continue;
        f.plateau_samples++;
        sum += (double)x->rss;
        sumref += (double)x->referenced;
    }
    ti_lab_plateau_test(s, warmup_s, wave_s, &f.plateau);
    if (f.plateau_samples) {
        f.plateau_mean_rss = sum / (double)f.plateau_samples;
        f.plateau_mean_referenced = sumref / (double)f.plateau_samples;
    }
    if (s->nsweeps) {
        dur = malloc(s->nsweeps * sizeof *dur);
        rel = malloc(s->nsweeps * sizeof *rel);
        freed = malloc(s->nsweeps * sizeof *freed);
        ratio = malloc(s->nsweeps * sizeof *ratio);
        if (!dur || !rel || !freed || !ratio) { rc = tide_err_set(TIDE_ENOMEM, "lab: figures"); goto out; }
    }
    for (size_t i = 0; i < s->nsweeps; i++) {
        const tide_lab_sweep *w = &s->sweeps[i];
        freed[nfreed++] = (double)w->freed_bytes;
        if (w->t >= warmup_s && w->anon_rss && w->consumer_bytes)
            ratio[nratio++] = (double)w->anon_rss / (double)w->consumer_bytes;
        if (!w->trimmed) continue;
        f.trims++;
        dur[ndur++] = (double)w->duration_ns / 1e6;
        f.trim_total_ms += (double)w->duration_ns / 1e6;
        minflt += (double)w->minflt;
        if (w->rss_delta < 0) {
            f.trims_lowered++;
            rel[nrel++] = (double)-w->rss_delta;
            f.release_total += (double)-w->rss_delta;
        }
    }
    if (f.trims) {
        f.lowered_pct = 100.0 * (double)f.trims_lowered / (double)f.trims;
        f.minflt_per_trim = minflt / (double)f.trims;
        f.trim_median_ms = ti_lab_quantile(dur, ndur, 0.5);
        f.trim_p95_ms = ti_lab_quantile(dur, ndur, 0.95);
        f.trim_max_ms = ti_lab_quantile(dur, ndur, 1.0);
    }
    if (nrel) {
        f.release_median = ti_lab_quantile(rel, nrel, 0.5);
        f.release_max = ti_lab_quantile(rel, nrel, 1.0);
    }
    f.freed_median = ti_lab_quantile(freed, nfreed, 0.5);
    if (nratio) f.anon_per_counted = ti_lab_quantile(ratio, nratio, 0.5);
    *out = f;
out:
    free(ratio);
    free(dur);
    free(rel);
    free(freed);
    return rc;
}

/* ---- CSV ------------------------------------------------------------------------- */

int ti_lab_write_rss_csv(FILE *f, const tide_lab_series *s, size_t n)
{
    int rc = 0;

    fputs("rep,variant,port,t_s,rss_bytes,referenced_bytes\n", f);
    for (size_t k = 0; k < n; k++) {
        for (size_t i = 0; i < s[k].nsamples; i++) {
            const tide_lab_sample *x = &s[k].samples[i];
            fprintf(f, "%u,%s,%d,%.3f,%llu,", s[k].rep, s[k].variant, s[k].port, x->t,
                    (unsigned long long)x->rss);
            if (x->referenced) fprintf(f, "%llu", (unsigned long long)x->referenced);
            fputc('\n', f);
        }
    }
    if (fflush(f) != 0 || ferror(f)) rc = tide_err_set(TIDE_EIO, "lab: writing the RSS CSV failed");
    return rc;
}

int ti_lab_write_sweeps_csv(FILE *f, const tide_lab_series *s, size_t n)
{
    int rc = 0;

    fputs("rep,variant,seq,t_s,sweep_ms,freed_bytes,trimmed,trim_rc,rss_before,rss_after,"
          "rss_delta,duration_ms,minflt,majflt,consumer_bytes,anon_rss\n", f);
    for (size_t k = 0; k < n; k++) {
        for (size_t i = 0; i < s[k].nsweeps; i++) {
            const tide_lab_sweep *w = &s[k].sweeps[i];
            fprintf(f, "%u,%s,%llu,%.3f,%.3f,%llu,%d,", s[k].rep, s[k].variant,
                    (unsigned long long)w->seq, w->t, (double)w->sweep_ns / 1e6,
                    (unsigned long long)w->freed_bytes, w->trimmed);
            if (w->trimmed)
                fprintf(f, "%d,%llu,%llu,%lld,%.3f,%llu,%llu,", w->trim_rc,
                        (unsigned long long)w->rss_before, (unsigned long long)w->rss_after,
                        (long long)w->rss_delta, (double)w->duration_ns / 1e6,
                        (unsigned long long)w->minflt, (unsigned long long)w->majflt);
            else
                fputs(",,,,,,,", f);
            if (w->anon_rss)
                fprintf(f, "%llu,%llu\n", (unsigned long long)w->consumer_bytes, (unsigned long long)w->anon_rss);
            else
                fputs(",\n", f);
        }
    }
    if (fflush(f) != 0 || ferror(f)) rc = tide_err_set(TIDE_EIO, "lab: writing the sweeps CSV failed");
    return rc;
}
