/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * limit.c: the lab's side of the process memory limit
 * (docs/MEMORY-LIMIT.md): what a node told --memory-limit did under the
 * lab's load, beside a node told nothing, and the limits CSV.
 *
 * A node at its memory limit's high level answers new PUTs 503
 * "overloaded" (shed: the object is not stored), serves GETs, and at the
 * critical level stops accepting connections. The figures say how close
 * to the limit it went (its largest RSS sample against the limit, and how
 * many samples were above it: the limit's promise is none), how much it
 * shed (PUTs shed per PUT sent), and what the GETs got: the GETs answered
 * 200 per second of load against the baseline node's in the same
 * repetition (the clients send every op to every node in turn, so a slow
 * node slows the others too: the rate compares what each answered, and
 * the mean GET time shows which one was slow), and the level changes and
 * refusals the node itself counted (its /v1/status).
 *
 * Invariants:
 *   1. A figure with nothing to measure is NAN, never 0: no limit gives no
 *      peak-per-limit, no status gives no level changes, no PUT sent gives
 *      no shed share, a baseline without GETs gives no ratio.
 *   2. A series is its own baseline only when asked (the ratio is then 1).
 *
 * Never: call the node, or print (the runner and the caller do).
 */
#include <math.h>
#include <stdio.h>

#include "lab/lab_impl.h"
#include "tide/error.h"
#include "util/err.h"

/* GETs answered 200 per second of load; NAN without a load time. */
static double get_rate(const tide_lab_series *s)
{
    return s->req.load_s > 0 ? (double)s->req.gets / s->req.load_s : NAN;
}

int ti_lab_limit_figures(const tide_lab_series *s, const tide_lab_series *base, tide_lab_limfig *out)
{
    const tide_lab_requests *q = &s->req;
    tide_lab_limfig f;
    double b;

    f.limit = s->limit_bytes ? (double)s->limit_bytes : NAN;
    f.peak_rss = NAN;
    f.samples = s->nsamples;
    f.samples_over = 0;
    for (size_t i = 0; i < s->nsamples; i++) {
        double rss = (double)s->samples[i].rss;
        if (isnan(f.peak_rss) || rss > f.peak_rss) f.peak_rss = rss;
        if (s->limit_bytes && s->samples[i].rss > s->limit_bytes) f.samples_over++;
    }
    f.peak_per_limit = isnan(f.limit) || isnan(f.peak_rss) ? NAN : f.peak_rss / f.limit;   /* invariant 1 */
    f.puts_sent = (double)(q->puts + q->puts_existing + q->puts_shed + q->put_errors);
    f.puts_shed = (double)q->puts_shed;
    f.shed_pct = f.puts_sent > 0 ? 100.0 * f.puts_shed / f.puts_sent : NAN;
    f.get_rate = get_rate(s);
    b = base ? get_rate(base) : NAN;
    f.get_rate_ratio = isnan(b) || b <= 0 || isnan(f.get_rate) ? NAN : f.get_rate / b;
    f.get_mean_ms = q->gets ? (double)q->get_ns / (double)q->gets / 1e6 : NAN;
    f.level_changes = q->status_read ? (double)q->level_changes : NAN;
    f.rejected_writes = q->status_read ? (double)q->rejected_writes : NAN;
    *out = f;
    return 0;
}

int ti_lab_any_limited(const tide_lab_series *s, size_t n)
{
    for (size_t i = 0; i < n; i++) if (s[i].limit_bytes) return 1;
    return 0;
}

/* A figure, or nothing when NAN (an empty CSV field). */
static void field(FILE *f, const char *fmt, double v)
{
    fputc(',', f);
    if (!isnan(v)) fprintf(f, fmt, v);
}

int ti_lab_write_limits_csv(FILE *f, const tide_lab_series *s, size_t n, const tide_lab_series *const *base)
{
    int rc = 0;

    fputs("rep,variant,limit_bytes,peak_rss_bytes,peak_per_limit,samples,samples_over_limit,puts_sent,puts,"
          "puts_existing,puts_shed,put_errors,shed_pct,gets,gets_missing,get_errors,load_s,get_rate,"
          "get_rate_ratio,get_mean_ms,level_changes,rejected_writes,rejected_requests\n", f);
    for (size_t k = 0; k < n; k++) {
        const tide_lab_requests *q = &s[k].req;
        tide_lab_limfig x;
        (void)ti_lab_limit_figures(&s[k], base ? base[k] : NULL, &x);
        fprintf(f, "%u,%s,%llu", s[k].rep, s[k].variant, (unsigned long long)s[k].limit_bytes);
        field(f, "%.0f", x.peak_rss);
        field(f, "%.4f", x.peak_per_limit);
        fprintf(f, ",%zu,%zu,%.0f,%llu,%llu,%llu,%llu", x.samples, x.samples_over, x.puts_sent,
                (unsigned long long)q->puts, (unsigned long long)q->puts_existing,
                (unsigned long long)q->puts_shed, (unsigned long long)q->put_errors);
        field(f, "%.3f", x.shed_pct);
        fprintf(f, ",%llu,%llu,%llu,%.3f", (unsigned long long)q->gets, (unsigned long long)q->gets_missing,
                (unsigned long long)q->get_errors, q->load_s);
        field(f, "%.2f", x.get_rate);
        field(f, "%.4f", x.get_rate_ratio);
        field(f, "%.3f", x.get_mean_ms);
        field(f, "%.0f", x.level_changes);
        field(f, "%.0f", x.rejected_writes);
        field(f, "%.0f", q->status_read ? (double)q->rejected_requests : NAN);
        fputc('\n', f);
    }
    if (fflush(f) != 0 || ferror(f)) rc = tide_err_set(TIDE_EIO, "lab: writing the limits CSV failed");
    return rc;
}
