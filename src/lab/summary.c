/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * summary.c: what a lab run comes to: the figures per variant and
 * repetition, the medians over the repetitions, the reductions against the
 * baseline with their spread, each variant's verdict, whether the load
 * generator kept up, the summary document, and the files (the CSVs, the
 * chart's gnuplot script and the chart it draws, the document as
 * summary.json).
 *
 * Layout: the figures; the document (settings, machine, variants, files);
 * the files.
 *
 * Invariants:
 *   1. A variant's reduction in repetition r is measured against the
 *      baseline's plateau in the same repetition, never across
 *      repetitions; NAN (null in the document) without a baseline or with
 *      a baseline plateau of 0.
 *   2. A median over the repetitions leaves out the NAN figures.
 *   3. The document written to summary.json is the one the caller prints.
 *   4. A run without a rotating variant writes the files and the document
 *      it always wrote: the rotation figures, the disk and rotation CSVs
 *      and their names in "files" appear only with one. So with the memory
 *      limit: its figures, the limits CSV and its name appear only when a
 *      node of the run had one.
 *   5. A verdict (a reduction read as a result) only when the run supports
 *      it: the load generator kept up (late shares at most
 *      TIDE_LAB_LATE_PCT per cent in every repetition) and the variant and
 *      the baseline reached a plateau in every repetition (lab.h). The
 *      figures are still computed and written either way; the verdict
 *      says which to read.
 *   6. A missing or failing gnuplot fails nothing: the CSVs and the script
 *      are written first, and the document says how to draw.
 *
 * Never: print; the caller prints the summary.
 */
#include <errno.h>
#include <gnu/libc-version.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "lab/lab_impl.h"
#include "lab/runner.h"
#include "tide/error.h"
#include "util/err.h"

/* ---- the figures ---------------------------------------------------------------- */

/* Invariant 2. */
static double median_of(const double *v, size_t n)
{
    double tmp[256];
    size_t m = 0;
    for (size_t i = 0; i < n && m < 256; i++) if (!isnan(v[i])) tmp[m++] = v[i];
    return ti_lab_quantile(tmp, m, 0.5);
}

/* The baseline's series of repetition rep (0-based), or NULL. */
static const tide_lab_series *base_series(const tide_lab_summary *s, const tide_lab_run *r, unsigned rep)
{
    return s->base == (size_t)-1 ? NULL : &r->series[(size_t)rep * r->plan->nv + s->base];
}

/* Every variant's memory-limit figures and their medians. */
static int limit_compute(tide_lab_summary *s, const tide_lab_run *r)
{
    const tide_lab_plan *o = r->plan;
    double a[128], b[128], c[128], d[128];

    for (size_t i = 0; i < o->nv; i++) {
        tide_lab_vsum *v = &s->v[i];
        if ((v->lim = calloc(o->repeat, sizeof *v->lim)) == NULL) return tide_err_set(TIDE_ENOMEM, "out of memory");
        for (unsigned rep = 0; rep < o->repeat && rep < 128; rep++) {
            (void)ti_lab_limit_figures(&r->series[(size_t)rep * o->nv + i], base_series(s, r, rep), &v->lim[rep]);
            a[rep] = v->lim[rep].peak_per_limit;
            b[rep] = v->lim[rep].shed_pct;
            c[rep] = v->lim[rep].get_rate_ratio;
            d[rep] = v->lim[rep].level_changes;
        }
        v->peak_per_limit_median = median_of(a, o->repeat);
        v->shed_pct_median = median_of(b, o->repeat);
        v->get_rate_ratio_median = median_of(c, o->repeat);
        v->level_changes_median = median_of(d, o->repeat);
    }
    return 0;
}

/* The late ledger shares of every repetition; invalid when one's are
 * over TIDE_LAB_LATE_PCT per cent of its shares. */
static void load_validity(tide_lab_summary *s, const tide_lab_run *r)
{
    const tide_lab_plan *o = r->plan;

    for (unsigned rep = 0; rep < o->repeat && o->nv; rep++) {
        const tide_lab_requests *q = &r->series[(size_t)rep * o->nv].req;
        s->late += q->late;
        s->shares += q->ledger_shares;
        if ((double)q->late > TIDE_LAB_LATE_PCT / 100.0 * (double)q->ledger_shares) s->invalid = 1;
    }
}

/* The load wave's period in seconds, 0 without a wave. */
static double wave_seconds(const tide_lab_plan *o)
{
    return o->w.wave_period && o->w.wave_pct ? o->w.wave_period * o->interval : 0;
}

/* The repetition (1-based) where variant i reached no plateau, or 0. */
static unsigned no_plateau(const tide_lab_vsum *v, unsigned repeat)
{
    for (unsigned rep = 0; rep < repeat; rep++)
        if (v->fig[rep].plateau.state != TIDE_LAB_PLATEAU_REACHED) return rep + 1;
    return 0;
}

/* Variant i's verdict: its reduction with the spread over the
 * repetitions, or why the run cannot give one. */
static void verdict(tide_lab_summary *s, const tide_lab_run *r, size_t i)
{
    const tide_lab_plan *o = r->plan;
    tide_lab_vsum *v = &s->v[i];
    const char *name = o->v[i].name;
    unsigned rv, rb;

    v->reduction_min = v->reduction_max = NAN;
    for (unsigned rep = 0; rep < o->repeat; rep++) {
        if (isnan(v->reduction[rep])) continue;
        if (isnan(v->reduction_min) || v->reduction[rep] < v->reduction_min) v->reduction_min = v->reduction[rep];
        if (isnan(v->reduction_max) || v->reduction[rep] > v->reduction_max) v->reduction_max = v->reduction[rep];
    }
    rv = no_plateau(v, o->repeat);
    rb = s->base == (size_t)-1 ? 0 : no_plateau(&s->v[s->base], o->repeat);
    if (i == s->base) {
        snprintf(v->why, sizeof v->why, "%s: the baseline%s", name, rv ? "; it reached no plateau: run longer" : "");
    } else if (s->invalid) {
        snprintf(v->why, sizeof v->why, "%s: no verdict: the run is invalid (the load generator fell behind)", name);
    } else if (s->base == (size_t)-1) {
        snprintf(v->why, sizeof v->why, "%s: no verdict: no baseline %s in the run", name, o->baseline);
    } else if ((rv || rb) && (rv ? &v->fig[rv - 1].plateau : &s->v[s->base].fig[rb - 1].plateau)->state ==
                                 TIDE_LAB_PLATEAU_UNKNOWN) {
        const tide_lab_plateau *p = rv ? &v->fig[rv - 1].plateau : &s->v[s->base].fig[rb - 1].plateau;
        if (p->span > 0)
            snprintf(v->why, sizeof v->why, "%s: no verdict: too few samples in repetition %u's plateau window (%zu in "
                     "its last %.0f s, fewer than %d) to tell a plateau: run longer", name, rv ? rv : rb, p->samples,
                     p->span, TIDE_LAB_PLATEAU_MIN);
        else
            snprintf(v->why, sizeof v->why, "%s: no verdict: repetition %u ran less than one whole load wave (%.0f s) "
                     "after the warm-up, too short to tell a plateau: run longer", name, rv ? rv : rb, wave_seconds(o));
    } else if (rv || rb) {
        const tide_lab_plateau *p = rv ? &v->fig[rv - 1].plateau : &s->v[s->base].fig[rb - 1].plateau;
        snprintf(v->why, sizeof v->why, "%s: no verdict: %s reached no plateau in repetition %u (%+.1f MiB over the "
                 "last %.0f s, noise %.1f MiB): run longer", name, rv ? name : o->baseline, rv ? rv : rb,
                 p->drift / 1048576.0, p->span, p->noise / 1048576.0);
    } else {
        int len = snprintf(v->why, sizeof v->why, "%s: %+.1f%% against %s", name, -v->reduction_median, o->baseline);
        v->verdict = 1;
        for (unsigned rep = 0; o->repeat > 1 && rep < o->repeat && len > 0 && (size_t)len < sizeof v->why; rep++)
            len += snprintf(v->why + len, sizeof v->why - (size_t)len, "%s%+.1f%s", rep ? ", " : " (runs: ",
                            -v->reduction[rep], rep + 1 == o->repeat ? ")" : "");
    }
}

int tide_lab_summary_compute(tide_lab_summary *s, const tide_lab_run *r)
{
    const tide_lab_plan *o = r->plan;

    memset(s, 0, sizeof *s);
    s->base = (size_t)-1;
    s->v = calloc(o->nv, sizeof *s->v);
    if (s->v == NULL) return tide_err_set(TIDE_ENOMEM, "out of memory");
    s->nv = o->nv;
    for (size_t i = 0; i < o->nv; i++) if (strcmp(o->v[i].name, o->baseline) == 0) s->base = i;
    for (size_t i = 0; i < o->nv; i++) {
        tide_lab_vsum *v = &s->v[i];
        double plate[128];
        v->fig = calloc(o->repeat, sizeof *v->fig);
        v->reduction = calloc(o->repeat, sizeof *v->reduction);
        if (!v->fig || !v->reduction) return tide_err_set(TIDE_ENOMEM, "out of memory");
        if (tide_lab_variant_rotates(&o->v[i], o->node_args) && (v->rot = calloc(o->repeat, sizeof *v->rot)) == NULL)
            return tide_err_set(TIDE_ENOMEM, "out of memory");
        for (unsigned rep = 0; rep < o->repeat; rep++) {
            const tide_lab_series *x = &r->series[(size_t)rep * o->nv + i];
            if (ti_lab_figures_compute(x, o->warmup, wave_seconds(o), &v->fig[rep]) != 0 ||
                (v->rot && ti_lab_rotation_figures(x, o->warmup, &v->rot[rep]) != 0))
                return tide_err_set(TIDE_ENOMEM, "out of memory");
            v->samples += v->fig[rep].samples;
            v->trims += v->fig[rep].trims;
            plate[rep] = v->fig[rep].plateau_mean_rss;
        }
        v->plateau_median = median_of(plate, o->repeat);
    }
    for (size_t i = 0; i < o->nv; i++) {          /* invariant 1 */
        tide_lab_vsum *v = &s->v[i];
        for (unsigned rep = 0; rep < o->repeat; rep++) {
            double b = s->base != (size_t)-1 ? s->v[s->base].fig[rep].plateau_mean_rss : NAN;
            v->reduction[rep] = (isnan(b) || b <= 0) ? NAN : 100.0 * (b - v->fig[rep].plateau_mean_rss) / b;
        }
        v->reduction_median = median_of(v->reduction, o->repeat);
    }
    load_validity(s, r);
    for (size_t i = 0; i < o->nv; i++) verdict(s, r, i);
    return ti_lab_any_limited(r->series, r->nseries) ? limit_compute(s, r) : 0;   /* invariant 4 */
}

void tide_lab_summary_free(tide_lab_summary *s)
{
    for (size_t i = 0; s->v && i < s->nv; i++)
        free(s->v[i].fig), free(s->v[i].reduction), free(s->v[i].rot), free(s->v[i].lim);
    free(s->v);
    json_decref(s->doc);
    memset(s, 0, sizeof *s);
}

/* ---- the document ---------------------------------------------------------------- */

static json_t *jnum(double v) { return isnan(v) ? json_null() : json_real(v); }
static json_t *jbytes(double v) { return isnan(v) ? json_null() : json_integer((json_int_t)llround(v)); }

static json_t *plateau_json(const tide_lab_plateau *p)
{
    return json_pack("{s:o,s:I,s:f,s:o,s:o,s:o}", "reached",
                     p->state == TIDE_LAB_PLATEAU_UNKNOWN ? json_null() : json_boolean(p->state == TIDE_LAB_PLATEAU_REACHED),
                     "samples", (json_int_t)p->samples, "window_s", p->span, "drift_bytes", jbytes(p->drift), "noise_bytes", jbytes(p->noise),
                     "level_bytes", jbytes(p->level));
}

static json_t *figures_json(const tide_lab_figures *f, double reduction)
{
    return json_pack("{s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
        "samples", (json_int_t)f->samples, "plateau_samples", (json_int_t)f->plateau_samples,
        "plateau_mean_rss_bytes", jbytes(f->plateau_mean_rss),
        "plateau_mean_referenced_bytes", f->plateau_mean_referenced > 0 ? jbytes(f->plateau_mean_referenced) : json_null(),
        "peak_rss_bytes", jbytes(f->peak_rss), "reduction_pct", jnum(reduction),
        "last_rss_bytes", jbytes(f->last_rss),
        "sweeps", (json_int_t)f->sweeps, "trims", (json_int_t)f->trims, "trims_lowered", (json_int_t)f->trims_lowered,
        "trims_lowered_pct", jnum(f->lowered_pct), "release_median_bytes", jbytes(f->release_median),
        "release_max_bytes", jbytes(f->release_max), "release_total_bytes", jbytes(f->trims ? f->release_total : NAN),
        "trim_median_ms", jnum(f->trim_median_ms), "trim_p95_ms", jnum(f->trim_p95_ms),
        "trim_max_ms", jnum(f->trim_max_ms), "trim_total_ms", jnum(f->trims ? f->trim_total_ms : NAN),
        "minflt_per_trim", jnum(f->minflt_per_trim), "freed_median_bytes", jbytes(f->freed_median),
        "anon_rss_per_counted_median", jnum(f->anon_per_counted));
}

static json_t *rotation_json(const tide_lab_rotfig *f)
{
    return json_pack("{s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:I,s:o,s:o,s:o,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
        "rotations", (json_int_t)f->rotations, "failures", (json_int_t)f->failures,
        "dropping", (json_int_t)f->dropping, "peak_disk_bytes", jbytes(f->peak_disk),
        "last_disk_bytes", jbytes(f->last_disk), "written_bytes", jbytes(f->written),
        "peak_disk_per_written", jnum(f->written > 0 ? f->peak_disk / f->written : NAN),
        "rss_steps", (json_int_t)f->steps, "rss_step_median_bytes", jbytes(f->step_median),
        "rss_step_min_bytes", jbytes(f->step_min), "rss_step_max_bytes", jbytes(f->step_max),
        "trims", (json_int_t)f->trims, "trim_release_median_bytes", jbytes(f->trim_release_median),
        "trim_median_ms", jnum(f->trim_ms), "create_median_ms", jnum(f->create_ms),
        "manifest_median_ms", jnum(f->manifest_ms), "switch_median_ms", jnum(f->switch_ms),
        "drop_median_ms", jnum(f->drop_ms), "total_median_ms", jnum(f->total_ms),
        "deleted_median_bytes", jbytes(f->deleted_median), "objects_median", jnum(f->objects_median),
        "step_after_s", json_real(TIDE_LAB_STEP_AFTER_S));
}

static json_t *limit_json(const tide_lab_limfig *f, const tide_lab_requests *q)
{
    return json_pack("{s:o,s:o,s:o,s:I,s:I,s:o,s:o,s:o,s:I,s:I,s:I,s:I,s:f,s:o,s:o,s:o,s:o,s:o}",
        "limit_bytes", jbytes(f->limit), "peak_rss_bytes", jbytes(f->peak_rss),
        "peak_per_limit", jnum(f->peak_per_limit), "samples", (json_int_t)f->samples,
        "samples_over_limit", (json_int_t)f->samples_over, "puts_sent", jbytes(f->puts_sent),
        "puts_shed", jbytes(f->puts_shed), "shed_pct", jnum(f->shed_pct),
        "gets", (json_int_t)q->gets, "gets_missing", (json_int_t)q->gets_missing,
        "get_errors", (json_int_t)q->get_errors, "put_errors", (json_int_t)q->put_errors,
        "load_s", q->load_s, "get_rate_per_s", jnum(f->get_rate), "get_rate_ratio", jnum(f->get_rate_ratio),
        "get_mean_ms", jnum(f->get_mean_ms), "level_changes", jbytes(f->level_changes),
        "rejected_writes", jbytes(f->rejected_writes));
}

/* The variant's medians of the memory-limit figures, into x. */
static void limit_medians(json_t *x, const tide_lab_vsum *v)
{
    json_object_set_new(x, "memory_limit", json_pack("{s:o,s:o,s:o,s:o}",
        "peak_per_limit_median", jnum(v->peak_per_limit_median), "shed_pct_median", jnum(v->shed_pct_median),
        "get_rate_ratio_median", jnum(v->get_rate_ratio_median),
        "level_changes_median", jnum(v->level_changes_median)));
}

/* "variants": each with its repetitions. */
static json_t *variants_json(const tide_lab_summary *s, const tide_lab_run *r)
{
    const tide_lab_plan *o = r->plan;
    json_t *vars = json_array();

    for (size_t i = 0; i < o->nv; i++) {
        const tide_lab_vsum *v = &s->v[i];
        json_t *reps = json_array();
        for (unsigned rep = 0; rep < o->repeat; rep++) {
            json_t *x = figures_json(&v->fig[rep], v->reduction[rep]);
            json_object_set_new(x, "rep", json_integer(rep + 1));
            json_object_set_new(x, "port", json_integer(r->series[(size_t)rep * o->nv + i].port));
            json_object_set_new(x, "plateau", plateau_json(&v->fig[rep].plateau));
            json_object_set_new(x, "late_ledger_shares", json_integer((json_int_t)r->series[(size_t)rep * o->nv + i].req.late));
            json_object_set_new(x, "ledger_shares",
                                json_integer((json_int_t)r->series[(size_t)rep * o->nv + i].req.ledger_shares));
            if (v->rot) json_object_set_new(x, "rotation", rotation_json(&v->rot[rep]));     /* invariant 4 */
            if (v->lim)
                json_object_set_new(x, "memory_limit",
                                    limit_json(&v->lim[rep], &r->series[(size_t)rep * o->nv + i].req));
            json_array_append_new(reps, x);
        }
        json_t *var = json_pack("{s:s,s:s,s:I,s:I,s:o,s:o,s:o}",
            "name", o->v[i].name, "spec", o->v[i].spec,
            "samples", (json_int_t)v->samples, "trims", (json_int_t)v->trims,
            "plateau_mean_rss_median_bytes", jbytes(v->plateau_median),
            "reduction_pct_median", jnum(v->reduction_median), "repetitions", reps);
        if (var && v->lim) limit_medians(var, v);
        if (var) {
            json_object_set_new(var, "reduction_pct_min", jnum(v->reduction_min));
            json_object_set_new(var, "reduction_pct_max", jnum(v->reduction_max));
            json_object_set_new(var, "verdict", v->verdict ? json_string(v->why) : json_null());
            json_object_set_new(var, "no_verdict", v->verdict ? json_null() : json_string(v->why));
        }
        json_array_append_new(vars, var);
    }
    return vars;
}

/* OUT/PREFIX-<what> into buf. */
static const char *file_path(char *buf, size_t cap, const tide_lab_plan *o, const char *what)
{
    snprintf(buf, cap, "%s/%s-%s", o->out, o->prefix, what);
    return buf;
}

static json_t *document(const tide_lab_summary *s, const tide_lab_run *r)
{
    const tide_lab_plan *o = r->plan;
    struct utsname un;
    double load[3] = { 0, 0, 0 };
    char p1[PATH_MAX + 64], p2[PATH_MAX + 64], p3[PATH_MAX + 64];
    json_t *doc;

    uname(&un);
    (void)getloadavg(load, 3);
    doc = json_pack("{s:s,s:{s:I,s:s,s:s,s:I,s:[f,f,f]},s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:I,s:I,s:f,s:f,s:I,s:s,s:s,s:b},"
                     "s:s,s:o,s:{s:s,s:s,s:s},s:b}",
        "command", o->command,
        "machine", "cpus", (json_int_t)sysconf(_SC_NPROCESSORS_ONLN), "kernel", un.release,
        "glibc", gnu_get_libc_version(), "page_size", (json_int_t)sysconf(_SC_PAGESIZE),
        "loadavg_at_end", load[0], load[1], load[2],
        "settings", "seed", (json_int_t)o->w.seed, "objects_per_ledger", (json_int_t)o->w.objects,
        "reads_per_ledger", (json_int_t)o->w.reads, "wave_ledgers", (json_int_t)o->w.wave_period,
        "wave_pct", (json_int_t)o->w.wave_pct, "inner_pct", (json_int_t)o->w.inner_pct,
        "recent_pct", (json_int_t)o->w.recent_pct, "ledger_interval_s", o->interval,
        "ledgers", (json_int_t)o->ledgers, "clients", (json_int_t)o->clients,
        "duration_s", o->duration, "warmup_s", o->warmup, "repeat", (json_int_t)o->repeat,
        "node_size", o->node_size, "node_args", o->node_args ? o->node_args : "", "referenced", o->referenced,
        "baseline", o->baseline, "variants", variants_json(s, r),
        "files", "rss_csv", file_path(p1, sizeof p1, o, "rss.csv"),
        "sweeps_csv", file_path(p2, sizeof p2, o, "sweeps.csv"), "svg", file_path(p3, sizeof p3, o, "rss.svg"),
        "interrupted", r->interrupted);
    if (doc) {
        json_t *set = json_object_get(doc, "settings");
        json_object_set_new(set, "object_min_bytes", json_integer(o->w.size_min));
        json_object_set_new(set, "object_max_bytes", json_integer(o->w.size_max));
        json_object_set_new(set, "sample_interval_s", json_real(o->sample_interval));
        json_object_set_new(set, "sweep_interval_s", json_integer(o->sweep_interval));
    }
    if (doc) {
        json_t *files = json_object_get(doc, "files");
        json_object_set_new(files, "png", json_string(file_path(p1, sizeof p1, o, "rss.png")));
        json_object_set_new(files, "gnuplot", json_string(file_path(p1, sizeof p1, o, "rss.gp")));
        json_object_set_new(doc, "chart", json_string(s->chart));
        json_object_set_new(doc, "valid", json_boolean(!s->invalid));
        json_object_set_new(doc, "load", json_pack("{s:I,s:I,s:o,s:f,s:b}", "late_ledger_shares", (json_int_t)s->late,
            "ledger_shares", (json_int_t)s->shares,
            "late_pct", jnum(s->shares ? 100.0 * (double)s->late / (double)s->shares : NAN),
            "late_pct_allowed", TIDE_LAB_LATE_PCT, "valid", !s->invalid));
    }
    if (doc && ti_lab_any_limited(r->series, r->nseries))        /* invariant 4 */
        json_object_set_new(json_object_get(doc, "files"), "limits_csv",
                            json_string(file_path(p1, sizeof p1, o, "limits.csv")));
    if (doc && ti_lab_any_rotating(r->series, r->nseries)) {      /* invariant 4 */
        json_t *files = json_object_get(doc, "files");
        json_object_set_new(files, "disk_csv", json_string(file_path(p1, sizeof p1, o, "disk.csv")));
        json_object_set_new(files, "rotations_csv", json_string(file_path(p2, sizeof p2, o, "rotations.csv")));
    }
    return doc;
}

/* ---- the files -------------------------------------------------------------------- */

typedef int (*writer)(FILE *f, const tide_lab_run *r);

static int write_rss(FILE *f, const tide_lab_run *r) { return ti_lab_write_rss_csv(f, r->series, r->nseries); }
static int write_sweeps(FILE *f, const tide_lab_run *r) { return ti_lab_write_sweeps_csv(f, r->series, r->nseries); }
static int write_disk(FILE *f, const tide_lab_run *r) { return ti_lab_write_disk_csv(f, r->series, r->nseries); }

/* The limits CSV, each series with its repetition's baseline. */
static int write_limits(FILE *f, const tide_lab_run *r)
{
    const tide_lab_plan *o = r->plan;
    const tide_lab_series *base[TIDE_LAB_MAX_VARIANTS * 100];
    size_t b = (size_t)-1;
    int rc;

    for (size_t i = 0; i < o->nv; i++) if (strcmp(o->v[i].name, o->baseline) == 0) b = i;
    for (size_t k = 0; k < r->nseries && k < sizeof base / sizeof *base; k++)
        base[k] = b == (size_t)-1 ? NULL : &r->series[k / o->nv * o->nv + b];
    rc = ti_lab_write_limits_csv(f, r->series, r->nseries, base);
    return rc;
}
static int write_rotations(FILE *f, const tide_lab_run *r)
{
    return ti_lab_write_rotations_csv(f, r->series, r->nseries);
}

static int write_gp(FILE *f, const tide_lab_run *r)
{
    const tide_lab_plan *o = r->plan;
    char title[256];
    tide_lab_chart ch = { title, o->command, o->warmup, wave_seconds(o), o->duration, o->prefix, o->baseline };

    snprintf(title, sizeof title, "tided RSS%s under the same ledger workload, one panel per variant (%u repetition%s, "
             "sweep every %u s)", ti_lab_any_rotating(r->series, r->nseries) ? " and disk" : "",
             o->repeat, o->repeat > 1 ? "s" : "", o->sweep_interval);
    return ti_lab_write_gp(f, r->series, r->nseries, &ch);
}

/* gnuplot on the script; s->chart says how it went (never a failure). */
static void draw(tide_lab_summary *s, const tide_lab_run *r)
{
    const tide_lab_plan *o = r->plan;
    char script[PATH_MAX];
    int rc;

    snprintf(script, sizeof script, "%s-rss.gp", o->prefix);
    rc = ti_lab_gnuplot(o->out, script);
    if (rc == 0)
        snprintf(s->chart, sizeof s->chart, "drawn: %s/%s-rss.png and .svg", o->out, o->prefix);
    else if (rc == 1)
        snprintf(s->chart, sizeof s->chart, "not drawn: gnuplot not found; draw it with `cd %s && gnuplot %s` "
                 "(Debian: apt-get install gnuplot-nox)", o->out, script);
    else
        snprintf(s->chart, sizeof s->chart, "not drawn: %s", tide_last_error());
}

/* Write OUT/PREFIX-<what> with w. 0 or TIDE_EIO naming the file. */
static int write_file(const tide_lab_run *r, const char *what, writer w)
{
    char path[PATH_MAX + 64];
    FILE *f = fopen(file_path(path, sizeof path, r->plan, what), "w");
    int rc = 0;

    if (f == NULL || w(f, r) != 0) rc = tide_err_set(TIDE_EIO, "%s: cannot write: %s", path, strerror(errno));
    if (f) fclose(f);
    return rc;
}

int tide_lab_summary_write(tide_lab_summary *s, const tide_lab_run *r)
{
    char path[PATH_MAX + 64];
    int rc;

    if ((rc = write_file(r, "rss.csv", write_rss)) || (rc = write_file(r, "sweeps.csv", write_sweeps)) ||
        (rc = write_file(r, "rss.gp", write_gp)))
        return rc;
    if (ti_lab_any_rotating(r->series, r->nseries) &&      /* invariant 4 */
        ((rc = write_file(r, "disk.csv", write_disk)) || (rc = write_file(r, "rotations.csv", write_rotations))))
        return rc;
    if (ti_lab_any_limited(r->series, r->nseries) && (rc = write_file(r, "limits.csv", write_limits)))
        return rc;
    draw(s, r);
    s->doc = document(s, r);                      /* invariant 3 */
    if (s->doc == NULL) return tide_err_set(TIDE_ENOMEM, "out of memory for the summary");
    if (json_dump_file(s->doc, file_path(path, sizeof path, r->plan, "summary.json"),
                       JSON_INDENT(1) | JSON_REAL_PRECISION(6)) != 0)
        return tide_err_set(TIDE_EIO, "%s: cannot write", path);
    return 0;
}
