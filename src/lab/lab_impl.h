/*
 * lab_impl.h: what lab.c and lab_svg.c give the rest of the lab part (the
 * runner's sampler and summary): the series' arrays, their figures and the
 * CSV and SVG writers. Not for other parts: the types are in lab.h.
 *
 * Errors: 0 or a negative TIDE_E* code with the reason in tide_last_error().
 */
#ifndef TIDE_LAB_LAB_IMPL_H
#define TIDE_LAB_LAB_IMPL_H

#include <stddef.h>
#include <stdio.h>

#include "lab/lab.h"

/* ---- series ---- */

/* Append a sample (t must not go backwards). 0 or TIDE_ENOMEM. Amortised
 * O(1). */
int ti_lab_series_add_sample(tide_lab_series *s, const tide_lab_sample *x);

/* Record a sweep unless one with its seq is already there. 0 or
 * TIDE_ENOMEM. O(n) in the worst case (an insertion keeps seq order). */
int ti_lab_series_add_sweep(tide_lab_series *s, const tide_lab_sweep *x);

/* Free the arrays (the struct itself is the caller's). */
void ti_lab_series_free(tide_lab_series *s);


/* ---- figures ---- */

/* Compute the figures of `s`; warmup_s is where the plateau starts. Every
 * trim of the run counts (the study counted every call). 0 or TIDE_ENOMEM.
 * O(n log n). */
int ti_lab_figures_compute(const tide_lab_series *s, double warmup_s, tide_lab_figures *out);

/* The q-quantile (0..1, linear between order statistics) of v[0..n), which
 * it sorts in place. NAN when n == 0. O(n log n). */
double ti_lab_quantile(double *v, size_t n, double q);


/* ---- writers ---- */

/* "rep,variant,port,t_s,rss_bytes,referenced_bytes" and one line per
 * sample of every series (referenced empty when 0). 0 or TIDE_EIO. */
int ti_lab_write_rss_csv(FILE *f, const tide_lab_series *s, size_t n);

/* "rep,variant,seq,t_s,sweep_ms,freed_bytes,trimmed,trim_rc,rss_before,
 * rss_after,rss_delta,duration_ms,minflt,majflt" and one line per sweep
 * round (trim fields empty for a round without a trim). 0 or TIDE_EIO. */
int ti_lab_write_sweeps_csv(FILE *f, const tide_lab_series *s, size_t n);


/* An SVG chart of RSS over time: one <polyline> per series (colour per
 * variant, dashed for repetitions after the first), a dashed plateau-mean
 * line per series, each trim marked by a short vertical tick from RSS
 * before to RSS after (green when it lowered RSS, red otherwise), axes in
 * seconds or minutes and MiB, a legend. Hand-written SVG 1.1, no scripts.
 * 0, TIDE_EIO or TIDE_ENOMEM. O(total samples). */
int ti_lab_write_svg(FILE *f, const tide_lab_series *s, size_t n, const tide_lab_chart *c);


#endif
