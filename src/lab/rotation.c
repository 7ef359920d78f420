/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rotation.c: the lab's side of online delete: a series' rotations, what
 * they did to the node's memory and disk, their figures, and the disk and
 * rotation CSVs.
 *
 * A node run with online delete (docs/ROTATION.md) rotates every few
 * minutes under the lab's load. The sampler records its data directory's
 * size once a second beside its RSS, and the poller every rotation report
 * of GET /v1/rotations. What a rotation does to memory is read from the
 * samples around it, not from the node's own trim report alone: the RSS
 * step is the first sample TIDE_LAB_STEP_AFTER_S after the rotation ended
 * minus the last one at or before its start, so that a variant without the
 * trim after rotation has a step too, and the two compare.
 *
 * Layout: the series' rotations; the samples around a rotation; the
 * figures; the CSV writers.
 *
 * Invariants:
 *   1. A series' rotations are sorted by seq with no duplicates, however
 *      the polls overlap (as its sweeps: lab.c's invariant 4).
 *   2. Only rotations that succeeded (rc 0) count in the figures; a failed
 *      one is counted as a failure and nothing else.
 *   3. An RSS step needs both samples; a rotation too close to the run's
 *      end for the later one has no step (counted out, never as 0), and
 *      so has one in the warm-up, when RSS climbs whatever happens.
 *
 * Never: call the node, or print (the runner and the caller do).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab_impl.h"
#include "tide/error.h"
#include "util/err.h"

/* ---- the series' rotations ---------------------------------------------------- */

int ti_lab_series_add_rotation(tide_lab_series *s, const tide_lab_rotation *x)
{
    size_t at = s->nrotations;

    while (at > 0 && s->rotations[at - 1].seq >= x->seq) {
        if (s->rotations[at - 1].seq == x->seq) return 0;     /* seen (invariant 1) */
        at--;
    }
    if (s->nrotations == s->caprotations) {
        size_t ncap = s->caprotations ? s->caprotations * 2 : 32;
        tide_lab_rotation *p = realloc(s->rotations, ncap * sizeof *p);
        if (p == NULL) return tide_err_set(TIDE_ENOMEM, "lab: %zu rotations", ncap);
        s->rotations = p;
        s->caprotations = ncap;
    }
    memmove(s->rotations + at + 1, s->rotations + at, (s->nrotations - at) * sizeof *s->rotations);
    s->rotations[at] = *x;
    s->nrotations++;
    return 0;
}

int ti_lab_any_rotating(const tide_lab_series *s, size_t n)
{
    for (size_t k = 0; k < n; k++) if (s[k].rotating) return 1;
    return 0;
}

/* ---- the samples around a rotation ---------------------------------------------- */

int ti_lab_rotation_rss(const tide_lab_series *s, const tide_lab_rotation *x, uint64_t *before,
                        uint64_t *after)
{
    double end = x->t + (double)x->total_ns / 1e9 + TIDE_LAB_STEP_AFTER_S;
    int have_before = 0;

    for (size_t i = 0; i < s->nsamples; i++) {
        const tide_lab_sample *p = &s->samples[i];
        if (p->t <= x->t) { *before = p->rss; have_before = 1; continue; }
        if (p->t >= end) {
            if (!have_before) return -1;
            *after = p->rss;
            return 0;
        }
    }
    return -1;                                  /* invariant 3 */
}

uint64_t ti_lab_disk_at(const tide_lab_series *s, double t)
{
    uint64_t d = 0;

    for (size_t i = 0; i < s->nsamples && s->samples[i].t <= t; i++)
        if (s->samples[i].disk) d = s->samples[i].disk;
    return d;
}

/* ---- the figures --------------------------------------------------------------------- */

/* The median of the n values v gets from each dropping rotation. */
typedef double (*rot_value)(const tide_lab_rotation *x);

static double v_create(const tide_lab_rotation *x) { return (double)x->create_ns / 1e6; }
static double v_manifest(const tide_lab_rotation *x) { return (double)x->manifest_ns / 1e6; }
static double v_switch(const tide_lab_rotation *x) { return (double)x->switch_ns / 1e6; }
static double v_drop(const tide_lab_rotation *x) { return (double)x->drop_ns / 1e6; }
static double v_total(const tide_lab_rotation *x) { return (double)x->total_ns / 1e6; }
static double v_deleted(const tide_lab_rotation *x) { return (double)x->deleted_bytes; }
static double v_objects(const tide_lab_rotation *x) { return (double)x->objects_in_previous; }

static double median_over(const tide_lab_series *s, double *tmp, rot_value f)
{
    size_t m = 0;

    for (size_t i = 0; i < s->nrotations; i++)
        if (s->rotations[i].rc == 0 && s->rotations[i].dropped > 0) tmp[m++] = f(&s->rotations[i]);
    return ti_lab_quantile(tmp, m, 0.5);
}

/* The RSS steps (after the warm-up) and the trims' releases of the
 * dropping rotations. */
static void steps_and_trims(const tide_lab_series *s, double warmup_s, double *tmp, tide_lab_rotfig *f)
{
    size_t m = 0;

    for (size_t i = 0; i < s->nrotations; i++) {
        const tide_lab_rotation *x = &s->rotations[i];
        uint64_t b, a;
        if (x->rc != 0 || x->dropped == 0 || x->t < warmup_s || ti_lab_rotation_rss(s, x, &b, &a) != 0) continue;
        tmp[m++] = (double)a - (double)b;
    }
    f->steps = m;
    f->step_median = ti_lab_quantile(tmp, m, 0.5);
    f->step_min = ti_lab_quantile(tmp, m, 0.0);
    f->step_max = ti_lab_quantile(tmp, m, 1.0);
    m = 0;
    for (size_t i = 0; i < s->nrotations; i++) {
        const tide_lab_rotation *x = &s->rotations[i];
        if (x->rc == 0 && x->trimmed) tmp[m++] = (double)-x->trim_rss_delta;
    }
    f->trims = m;
    f->trim_release_median = ti_lab_quantile(tmp, m, 0.5);
    m = 0;
    for (size_t i = 0; i < s->nrotations; i++)
        if (s->rotations[i].rc == 0 && s->rotations[i].trimmed) tmp[m++] = (double)s->rotations[i].trim_ns / 1e6;
    f->trim_ms = ti_lab_quantile(tmp, m, 0.5);
}

int ti_lab_rotation_figures(const tide_lab_series *s, double warmup_s, tide_lab_rotfig *out)
{
    tide_lab_rotfig f;
    double *tmp = NULL;

    memset(&f, 0, sizeof f);
    f.peak_disk = f.last_disk = NAN;
    f.written = (double)s->written_bytes;
    for (size_t i = 0; i < s->nsamples; i++) {
        double d = (double)s->samples[i].disk;
        if (s->samples[i].disk == 0) continue;
        if (isnan(f.peak_disk) || d > f.peak_disk) f.peak_disk = d;
        f.last_disk = d;
    }
    for (size_t i = 0; i < s->nrotations; i++) {      /* invariant 2 */
        if (s->rotations[i].rc != 0) { f.failures++; continue; }
        f.rotations++;
        f.dropping += s->rotations[i].dropped > 0;
    }
    tmp = malloc((s->nrotations + 1) * sizeof *tmp);
    if (tmp == NULL) return tide_err_set(TIDE_ENOMEM, "lab: rotation figures");
    steps_and_trims(s, warmup_s, tmp, &f);
    f.create_ms = median_over(s, tmp, v_create);
    f.manifest_ms = median_over(s, tmp, v_manifest);
    f.switch_ms = median_over(s, tmp, v_switch);
    f.drop_ms = median_over(s, tmp, v_drop);
    f.total_ms = median_over(s, tmp, v_total);
    f.deleted_median = median_over(s, tmp, v_deleted);
    f.objects_median = median_over(s, tmp, v_objects);
    free(tmp);
    *out = f;
    return 0;
}

/* ---- CSV ------------------------------------------------------------------------------ */

int ti_lab_write_disk_csv(FILE *f, const tide_lab_series *s, size_t n)
{
    fputs("rep,variant,t_s,disk_bytes,rotations\n", f);
    for (size_t k = 0; k < n; k++) {
        size_t done = 0, r = 0;
        for (size_t i = 0; i < s[k].nsamples; i++) {
            const tide_lab_sample *x = &s[k].samples[i];
            for (; r < s[k].nrotations && s[k].rotations[r].t <= x->t; r++) done += s[k].rotations[r].rc == 0;
            if (x->disk == 0) continue;
            fprintf(f, "%u,%s,%.3f,%llu,%zu\n", s[k].rep, s[k].variant, x->t, (unsigned long long)x->disk, done);
        }
    }
    if (fflush(f) != 0 || ferror(f)) return tide_err_set(TIDE_EIO, "lab: writing the disk CSV failed");
    return 0;
}

static void rotation_row(FILE *f, const tide_lab_series *s, const tide_lab_rotation *x)
{
    uint64_t b = 0, a = 0;
    double end = x->t + (double)x->total_ns / 1e9 + TIDE_LAB_STEP_AFTER_S;

    fprintf(f, "%u,%s,%llu,%.3f,%s,%d,%u,%llu,%llu,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%d,%.3f,%llu,%llu,",
            s->rep, s->variant, (unsigned long long)x->seq, x->t, x->trigger, x->rc, x->dropped,
            (unsigned long long)x->deleted_bytes, (unsigned long long)x->objects_in_previous,
            (double)x->gate_ns / 1e6, (double)x->create_ns / 1e6, (double)x->manifest_ns / 1e6,
            (double)x->switch_ns / 1e6, (double)x->drop_ns / 1e6, (double)x->total_ns / 1e6, x->trimmed,
            (double)x->trim_ns / 1e6, (unsigned long long)x->trim_rss_before, (unsigned long long)x->trim_rss_after);
    if (ti_lab_rotation_rss(s, x, &b, &a) == 0)
        fprintf(f, "%llu,%llu,%lld,", (unsigned long long)b, (unsigned long long)a, (long long)a - (long long)b);
    else
        fputs(",,,", f);
    fprintf(f, "%llu,%llu\n", (unsigned long long)ti_lab_disk_at(s, x->t), (unsigned long long)ti_lab_disk_at(s, end));
}

int ti_lab_write_rotations_csv(FILE *f, const tide_lab_series *s, size_t n)
{
    fputs("rep,variant,seq,t_s,trigger,rc,dropped,deleted_bytes,objects_in_previous,gate_ms,create_ms,"
          "manifest_ms,switch_ms,drop_ms,total_ms,trimmed,trim_ms,trim_rss_before,trim_rss_after,"
          "rss_before,rss_after,rss_step,disk_before,disk_after\n", f);
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < s[k].nrotations; i++) rotation_row(f, &s[k], &s[k].rotations[i]);
    if (fflush(f) != 0 || ferror(f)) return tide_err_set(TIDE_EIO, "lab: writing the rotations CSV failed");
    return 0;
}
