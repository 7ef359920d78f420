/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * redraw.c: a lab run's chart drawn again from its files, with no node.
 *
 * A run leaves its data as CSV (PREFIX-rss.csv, -sweeps.csv, and when it
 * had them -disk.csv and -limits.csv) beside PREFIX-summary.json, which
 * holds the settings the chart is drawn with: the command, the warm-up,
 * the duration, the load wave, the baseline, the sweep interval. The
 * CSVs are the source of truth; redrawing reads them back into series,
 * writes PREFIX-rss.gp as the run wrote it and runs gnuplot on it. So a
 * chart follows the chart writer and the plateau test as they are now,
 * and a run drawn elsewhere is drawn here the same.
 *
 * Layout: the CSV reader (a header names the columns, so files written
 * before a column existed still read), one loader per file, the summary's
 * settings, then tide_lab_redraw.
 *
 * Invariants:
 *   1. A series is keyed by (rep, variant); its samples keep the file's
 *      order, which the run wrote in time order.
 *   2. The disk rows of a series come in its samples' order, each the disk
 *      of the next sample at its time: the run wrote both from one array,
 *      skipping the samples whose disk it could not walk. So one cursor a
 *      series walks its samples once.
 *   3. A row that does not parse stops the redraw with its file and line:
 *      a chart of half a file would pass for the run's.
 *
 * Never: rewrite the CSVs or the summary (they are the run's record), or
 * start a node.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab_impl.h"
#include "lab/runner.h"
#include "tide/error.h"
#include "util/err.h"

#define MAX_COLS 32

typedef struct csv {
    const char *path;
    unsigned    line;
    char       *head[MAX_COLS];   /* the header's names, into hbuf */
    size_t      nhead;
    char       *cell[MAX_COLS];   /* this row's cells, into the line */
    size_t      ncell;
    char        hbuf[1024];
} csv;

typedef struct series_set {
    tide_lab_series *s;
    size_t          *disk_next;   /* per series: the sample the next disk row may fill */
    size_t           n, cap;
} series_set;

/* Split line (modified) at commas into out; the number of cells. */
static size_t split(char *line, char **out)
{
    size_t n = 0;
    char *p = line;

    line[strcspn(line, "\r\n")] = '\0';
    for (;;) {
        char *c = strchr(p, ',');
        if (n < MAX_COLS) out[n++] = p;
        if (c == NULL) break;
        *c = '\0', p = c + 1;
    }
    return n;
}

/* Column `name`'s cell in the current row, or NULL when the file has no
 * such column or the row no such cell. */
static const char *col(const csv *c, const char *name)
{
    for (size_t i = 0; i < c->nhead; i++)
        if (strcmp(c->head[i], name) == 0) return i < c->ncell ? c->cell[i] : NULL;
    return NULL;
}

static int bad_row(const csv *c, const char *what)
{
    return tide_err_set(TIDE_EINVAL, "%s:%u: %s", c->path, c->line, what);
}

/* Column `name` as an unsigned integer into *v; an empty or absent cell is
 * 0. TIDE_EINVAL naming the row otherwise. */
static int col_u64(const csv *c, const char *name, uint64_t *v)
{
    const char *s = col(c, name);
    char *end;

    *v = 0;
    if (s == NULL || *s == '\0') return 0;
    errno = 0;
    *v = strtoull(s, &end, 10);
    if (errno || *end || *s == '-') return bad_row(c, name);
    return 0;
}

static int col_i64(const csv *c, const char *name, int64_t *v)
{
    const char *s = col(c, name);
    char *end;

    *v = 0;
    if (s == NULL || *s == '\0') return 0;
    errno = 0;
    *v = strtoll(s, &end, 10);
    if (errno || *end) return bad_row(c, name);
    return 0;
}

/* Column `name` as seconds or milliseconds (a decimal); absent is 0. */
static int col_real(const csv *c, const char *name, double *v)
{
    const char *s = col(c, name);
    char *end;

    *v = 0;
    if (s == NULL || *s == '\0') return 0;
    *v = strtod(s, &end);
    if (*end || !isfinite(*v)) return bad_row(c, name);
    return 0;
}

/* The series of (rep, variant) in set, made when absent (invariant 1). */
static int series_for(series_set *set, const csv *c, tide_lab_series **out)
{
    uint64_t rep;
    const char *v = col(c, "variant");
    int rc;

    if ((rc = col_u64(c, "rep", &rep)) != 0) return rc;
    if (v == NULL || *v == '\0' || strlen(v) >= sizeof set->s->variant || rep == 0 || rep > 1000)
        return bad_row(c, "a row needs a repetition and a variant");
    for (size_t k = 0; k < set->n; k++)
        if (set->s[k].rep == rep && strcmp(set->s[k].variant, v) == 0) return *out = &set->s[k], 0;
    if (set->n == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 16;
        tide_lab_series *p = realloc(set->s, cap * sizeof *p);
        size_t *q;
        if (p == NULL) return tide_err_set(TIDE_ENOMEM, "lab: redraw: out of memory");
        set->s = p;
        if ((q = realloc(set->disk_next, cap * sizeof *q)) == NULL)
            return tide_err_set(TIDE_ENOMEM, "lab: redraw: out of memory");
        set->disk_next = q, set->cap = cap;
    }
    set->disk_next[set->n] = 0;
    *out = &set->s[set->n++];
    memset(*out, 0, sizeof **out);
    snprintf((*out)->variant, sizeof (*out)->variant, "%s", v);
    (*out)->rep = (unsigned)rep;
    return 0;
}

typedef int (*row_fn)(series_set *set, const csv *c);

/* Read dir/prefix-what row by row. A missing file is 1 when optional,
 * TIDE_ENOENT otherwise. */
static int read_csv(series_set *set, const char *dir, const char *prefix, const char *what, int optional, row_fn fn)
{
    char path[PATH_MAX], *line = NULL;
    size_t cap = 0;
    csv c;
    FILE *f;
    int rc = 0;

    memset(&c, 0, sizeof c);
    snprintf(path, sizeof path, "%s/%s-%s", dir, prefix, what);
    c.path = path;
    if ((f = fopen(path, "r")) == NULL) {
        if (errno == ENOENT && optional) return 1;
        return tide_err_set(errno == ENOENT ? TIDE_ENOENT : TIDE_EIO, "%s: cannot read: %s", path, strerror(errno));
    }
    if (getline(&line, &cap, f) < 0 || strlen(line) >= sizeof c.hbuf) {
        rc = tide_err_set(TIDE_EINVAL, "%s: no header line", path);
        goto out;
    }
    memcpy(c.hbuf, line, strlen(line) + 1);
    c.nhead = split(c.hbuf, c.head);
    c.line = 1;
    while (getline(&line, &cap, f) >= 0) {
        c.line++;
        if (line[strspn(line, "\r\n")] == '\0') continue;
        c.ncell = split(line, c.cell);
        if ((rc = fn(set, &c)) != 0) goto out;
    }
    if (ferror(f)) rc = tide_err_set(TIDE_EIO, "%s: read failed", path);
out:
    free(line);
    fclose(f);
    return rc;
}

static int rss_row(series_set *set, const csv *c)
{
    tide_lab_series *s;
    tide_lab_sample x;
    int64_t port;
    int rc;

    memset(&x, 0, sizeof x);
    if ((rc = series_for(set, c, &s)) || (rc = col_real(c, "t_s", &x.t)) || (rc = col_u64(c, "rss_bytes", &x.rss)) ||
        (rc = col_u64(c, "referenced_bytes", &x.referenced)) || (rc = col_i64(c, "port", &port)))
        return rc;
    if (s->nsamples && x.t < s->samples[s->nsamples - 1].t) return bad_row(c, "t_s goes backwards");
    s->port = (int)port;
    return ti_lab_series_add_sample(s, &x);
}

static int sweep_row(series_set *set, const csv *c)
{
    tide_lab_series *s;
    tide_lab_sweep w;
    uint64_t trimmed;
    int64_t trim_rc;
    double sweep_ms, duration_ms;
    int rc;

    memset(&w, 0, sizeof w);
    if ((rc = series_for(set, c, &s)) || (rc = col_u64(c, "seq", &w.seq)) || (rc = col_real(c, "t_s", &w.t)) ||
        (rc = col_real(c, "sweep_ms", &sweep_ms)) || (rc = col_u64(c, "freed_bytes", &w.freed_bytes)) ||
        (rc = col_u64(c, "trimmed", &trimmed)) || (rc = col_i64(c, "trim_rc", &trim_rc)) ||
        (rc = col_u64(c, "rss_before", &w.rss_before)) || (rc = col_u64(c, "rss_after", &w.rss_after)) ||
        (rc = col_i64(c, "rss_delta", &w.rss_delta)) || (rc = col_real(c, "duration_ms", &duration_ms)) ||
        (rc = col_u64(c, "minflt", &w.minflt)) || (rc = col_u64(c, "majflt", &w.majflt)) ||
        (rc = col_u64(c, "consumer_bytes", &w.consumer_bytes)) || (rc = col_u64(c, "anon_rss", &w.anon_rss)))
        return rc;
    w.trimmed = trimmed != 0;
    w.trim_rc = (int)trim_rc;
    w.sweep_ns = (uint64_t)llround(sweep_ms * 1e6);
    w.duration_ns = (uint64_t)llround(duration_ms * 1e6);
    return ti_lab_series_add_sweep(s, &w);
}

static int disk_row(series_set *set, const csv *c)
{
    tide_lab_series *s;
    uint64_t disk;
    double t;
    size_t *k;
    int rc;

    if ((rc = series_for(set, c, &s)) || (rc = col_real(c, "t_s", &t)) || (rc = col_u64(c, "disk_bytes", &disk)))
        return rc;
    if (disk == 0) return bad_row(c, "a disk reading of 0 (the run writes only the readings it made)");
    s->rotating = 1;
    k = &set->disk_next[s - set->s];
    while (*k < s->nsamples && fabs(s->samples[*k].t - t) > 0.0005) (*k)++;   /* invariant 2 */
    if (*k == s->nsamples) return bad_row(c, "a disk reading at a time the RSS CSV has no sample of after the last");
    s->samples[(*k)++].disk = disk;
    return 0;
}

static int limit_row(series_set *set, const csv *c)
{
    tide_lab_series *s;
    int rc;

    if ((rc = series_for(set, c, &s)) != 0) return rc;
    return col_u64(c, "limit_bytes", &s->limit_bytes);
}

/* The summary's settings the chart needs. */
typedef struct redraw_settings {
    json_t     *doc;
    const char *command, *baseline;
    double      warmup, duration, wave_s;
    unsigned    repeat, sweep;
} redraw_settings;

static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static int read_settings(const char *dir, const char *prefix, redraw_settings *st)
{
    char path[PATH_MAX];
    json_error_t e;
    json_t *set;
    double wave, pct, interval;

    snprintf(path, sizeof path, "%s/%s-summary.json", dir, prefix);
    if ((st->doc = json_load_file(path, 0, &e)) == NULL)
        return tide_err_set(errno == ENOENT ? TIDE_ENOENT : TIDE_EINVAL, "%s: %s", path, e.text);
    set = json_object_get(st->doc, "settings");
    st->command = json_string_value(json_object_get(st->doc, "command"));
    st->baseline = json_string_value(json_object_get(st->doc, "baseline"));
    st->warmup = num(set, "warmup_s");
    st->duration = num(set, "duration_s");
    if (!json_is_object(set) || isnan(st->warmup) || isnan(st->duration))
        return tide_err_set(TIDE_EINVAL, "%s: no settings.warmup_s and settings.duration_s: not a lab summary", path);
    st->repeat = isnan(num(set, "repeat")) ? 1 : (unsigned)num(set, "repeat");
    st->sweep = isnan(num(set, "sweep_interval_s")) ? 0 : (unsigned)num(set, "sweep_interval_s");
    wave = num(set, "wave_ledgers"), pct = num(set, "wave_pct"), interval = num(set, "ledger_interval_s");
    st->wave_s = wave > 0 && pct > 0 && interval > 0 ? wave * interval : 0;
    return 0;
}

int tide_lab_redraw(const char *dir, const char *prefix, char *said, size_t cap)
{
    series_set set = { NULL, NULL, 0, 0 };
    redraw_settings st;
    char title[256], script[PATH_MAX], gp[PATH_MAX + 16];
    int rc, drawn, any_rot = 0;
    FILE *f = NULL;

    memset(&st, 0, sizeof st);
    said[0] = '\0';
    if ((rc = read_settings(dir, prefix, &st)) != 0) goto out;
    if ((rc = read_csv(&set, dir, prefix, "rss.csv", 0, rss_row)) != 0) goto out;
    if ((rc = read_csv(&set, dir, prefix, "sweeps.csv", 0, sweep_row)) != 0) goto out;
    if ((rc = read_csv(&set, dir, prefix, "disk.csv", 1, disk_row)) < 0) goto out;
    if ((rc = read_csv(&set, dir, prefix, "limits.csv", 1, limit_row)) < 0) goto out;
    rc = 0;
    if (set.n == 0) {
        rc = tide_err_set(TIDE_EINVAL, "%s/%s-rss.csv: no samples to draw", dir, prefix);
        goto out;
    }
    for (size_t k = 0; k < set.n; k++) any_rot |= set.s[k].rotating;
    {
        int len = snprintf(title, sizeof title, "tided RSS%s under the same ledger workload, one panel per variant "
                           "(%u repetition%s", any_rot ? " and disk" : "", st.repeat, st.repeat > 1 ? "s" : "");
        if (st.sweep && len > 0 && (size_t)len < sizeof title)
            len += snprintf(title + len, sizeof title - (size_t)len, ", sweep every %u s", st.sweep);
        if (len > 0 && (size_t)len < sizeof title) snprintf(title + len, sizeof title - (size_t)len, ")");
    }
    {
        tide_lab_chart ch = { title, st.command, st.warmup, st.wave_s, st.duration, prefix, st.baseline };
        snprintf(script, sizeof script, "%s-rss.gp", prefix);
        snprintf(gp, sizeof gp, "%s/%s", dir, script);
        if ((f = fopen(gp, "w")) == NULL) {
            rc = tide_err_set(TIDE_EIO, "%s: cannot write: %s", gp, strerror(errno));
            goto out;
        }
        if ((rc = ti_lab_write_gp(f, set.s, set.n, &ch)) != 0) goto out;
        if (fclose(f) != 0) {
            f = NULL;
            rc = tide_err_set(TIDE_EIO, "%s: cannot write: %s", gp, strerror(errno));
            goto out;
        }
        f = NULL;
    }
    drawn = ti_lab_gnuplot(dir, script);
    if (drawn == 0)
        snprintf(said, cap, "drawn: %s/%s-rss.png and .svg from %zu series", dir, prefix, set.n);
    else if (drawn == 1)
        snprintf(said, cap, "not drawn: gnuplot not found; %s written: draw it with `cd %s && gnuplot %s` "
                 "(Debian: apt-get install gnuplot-nox)", gp, dir, script);
    else
        rc = drawn;
out:
    if (f) fclose(f);
    for (size_t k = 0; k < set.n; k++) ti_lab_series_free(&set.s[k]);
    free(set.s);
    free(set.disk_next);
    json_decref(st.doc);
    return rc;
}
