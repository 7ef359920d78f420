/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lab_impl.h: what lab.c and lab_plot.c give the rest of the lab part (the
 * runner's sampler and summary, ghost's chart): the series' arrays, their
 * figures, the CSV writers, the chart's gnuplot script, gnuplot's strings
 * and gnuplot's run.
 * Not for other parts: the types are in lab.h.
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

/* Compute the figures of `s`; warmup_s is where the plateau starts, wave_s
 * the load wave's period in seconds (0: no wave). Every trim of the run
 * counts (the study counted every call). 0 or TIDE_ENOMEM. O(n log n). */
int ti_lab_figures_compute(const tide_lab_series *s, double warmup_s, double wave_s, tide_lab_figures *out);

/* The plateau test of lab.h (TIDE_LAB_PLATEAU_*) on s's RSS samples after
 * warmup_s, into *out; wave_s is the load wave's period in seconds, 0 for
 * none. Pure. O(samples). */
void ti_lab_plateau_test(const tide_lab_series *s, double warmup_s, double wave_s, tide_lab_plateau *out);

/* The q-quantile (0..1, linear between order statistics) of v[0..n), which
 * it sorts in place. NAN when n == 0. O(n log n). */
double ti_lab_quantile(double *v, size_t n, double q);


/* ---- rotations (rotation.c) ---- */

/* Record a rotation unless one with its seq is already there. 0 or
 * TIDE_ENOMEM. O(n) in the worst case. */
int ti_lab_series_add_rotation(tide_lab_series *s, const tide_lab_rotation *x);

/* 1 when any of the n series runs with online delete (the disk and
 * rotation files, the chart's disk panel and the summary's rotation
 * figures appear only then, so a run without one writes what it always
 * wrote). */
int ti_lab_any_rotating(const tide_lab_series *s, size_t n);

/* RSS across rotation x of s (TIDE_LAB_STEP_AFTER_S): *before the last
 * sample at or before its start, *after the first at least that long after
 * its end. 0, or -1 when either sample is missing. */
int ti_lab_rotation_rss(const tide_lab_series *s, const tide_lab_rotation *x, uint64_t *before,
                        uint64_t *after);

/* The disk bytes sampled last at or before t (0 when none). */
uint64_t ti_lab_disk_at(const tide_lab_series *s, double t);

/* The rotation figures of s; the RSS steps only of the rotations that
 * started at or after warmup_s (before it the cache is still filling and
 * RSS climbs whatever a rotation does). 0 or TIDE_ENOMEM. O(r log r +
 * samples). */
int ti_lab_rotation_figures(const tide_lab_series *s, double warmup_s, tide_lab_rotfig *out);

/* "rep,variant,t_s,disk_bytes,rotations" and one line per sample with a
 * disk size (rotations: those done that started at or before it). 0 or
 * TIDE_EIO. */
int ti_lab_write_disk_csv(FILE *f, const tide_lab_series *s, size_t n);

/* "rep,variant,seq,t_s,trigger,rc,dropped,deleted_bytes,objects_in_previous,
 * gate_ms,create_ms,manifest_ms,switch_ms,drop_ms,total_ms,trimmed,trim_ms,
 * trim_rss_before,trim_rss_after,rss_before,rss_after,rss_step,disk_before,
 * disk_after" and one line per rotation (rss_* empty without both samples).
 * 0 or TIDE_EIO. */
int ti_lab_write_rotations_csv(FILE *f, const tide_lab_series *s, size_t n);

/* ---- the memory limit (limit.c) ---- */

/* The memory-limit figures of s against `base` (the baseline's series of
 * the same repetition; NULL: no ratio). Always 0. O(samples). */
int ti_lab_limit_figures(const tide_lab_series *s, const tide_lab_series *base, tide_lab_limfig *out);

/* 1 when any of the n series has a memory limit (the limits CSV, the
 * document's "memory_limit" figures and the table appear only then). */
int ti_lab_any_limited(const tide_lab_series *s, size_t n);

/* "rep,variant,limit_bytes,peak_rss_bytes,peak_per_limit,samples,
 * samples_over_limit,puts_sent,puts,puts_existing,puts_shed,put_errors,
 * shed_pct,gets,gets_missing,get_errors,load_s,get_rate,get_rate_ratio,
 * get_mean_ms,level_changes,rejected_writes,rejected_requests" and one line
 * per series (base[k]: series k's baseline, or base NULL; empty fields for
 * the NAN figures). 0 or TIDE_EIO. */
int ti_lab_write_limits_csv(FILE *f, const tide_lab_series *s, size_t n, const tide_lab_series *const *base);

/* ---- writers ---- */

/* "rep,variant,port,t_s,rss_bytes,referenced_bytes" and one line per
 * sample of every series (referenced empty when 0). 0 or TIDE_EIO. */
int ti_lab_write_rss_csv(FILE *f, const tide_lab_series *s, size_t n);

/* "rep,variant,seq,t_s,sweep_ms,freed_bytes,trimmed,trim_rc,rss_before,
 * rss_after,rss_delta,duration_ms,minflt,majflt" and one line per sweep
 * round (trim fields empty for a round without a trim). 0 or TIDE_EIO. */
int ti_lab_write_sweeps_csv(FILE *f, const tide_lab_series *s, size_t n);


/* The chart's gnuplot script (lab_plot.c): one panel per variant on
 * shared axes, the key outside them; RSS per repetition, the live bytes
 * (the sweeps' consumer_bytes, when a sweep has them), the memory limit
 * (when a series has one), each trim a candle from RSS before to after
 * (green: lowered; red: not), the plateau mean when reached (lab.h), and
 * for a rotating series its disk (right axis) and rotations. The script
 * reads c->prefix's CSVs and writes c->prefix-rss.png and -rss.svg in its
 * own directory. 0 or TIDE_EIO. O(series x samples) for the figures. */
int ti_lab_write_gp(FILE *f, const tide_lab_series *s, size_t n, const tide_lab_chart *c);

/* `s` as a gnuplot double-quoted string (quotes and backslashes escaped,
 * a newline as \n) on f. */
void ti_lab_gp_string(FILE *f, const char *s);

/* title, then sub wrapped at blanks into lines of at most `width`
 * characters (a longer word is a line of its own), as one gnuplot string
 * on f. At most 4 KiB of text. */
void ti_lab_gp_wrapped(FILE *f, const char *title, const char *sub, size_t width);

/* Run gnuplot (or $TIDE_GNUPLOT) on `script` in directory `dir`. 0 when it
 * drew; 1 when no gnuplot could be run (not installed: the caller says how
 * to draw later, and carries on); TIDE_EIO when it failed, with its first
 * error line. Cost: gnuplot's, about a second for a long run. */
int ti_lab_gnuplot(const char *dir, const char *script);


#endif
