/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ghost_chart.h: what the RSS-ghost matrix comes to once its rows are in
 * (ghost_run.h makes them): the CSV that records them, the gnuplot script
 * beside it that draws the matrix as a chart, and one line of conclusion
 * per variant, derived from the figures.
 *
 * The files are DIR/PREFIX-matrix.csv, DIR/PREFIX-matrix.gp, and, drawn by
 * gnuplot from those two, DIR/PREFIX-matrix.png and DIR/PREFIX-matrix.svg
 * (docs/GHOST.md, "The chart"). The CSV has the columns of `tide ghost
 * --csv`, which prints the same lines.
 *
 * Errors: 0 or a negative TIDE_E* code with the reason in
 * tide_last_error(). A missing or failing gnuplot is not an error: the
 * CSV and the script are written first, and the chart's note says how to
 * draw. Nothing here prints but on the FILE it is given.
 */
#ifndef TIDE_LAB_GHOST_CHART_H
#define TIDE_LAB_GHOST_CHART_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* The CSV's header line, and one row (a ghost_run.h row) as a line: the
 * figures in bytes, empty fields where the row has none. 0 or TIDE_EIO. */
int tide_lab_ghost_csv_header(FILE *f);
int tide_lab_ghost_csv_row(FILE *f, json_t *row);

/* Write dir/prefix-matrix.csv (the rows) and dir/prefix-matrix.gp (the
 * chart: one group of bars per variant that ran, one bar per scenario,
 * the ghost filled and what the frees could give back, peak - start -
 * live, as an outline; the key outside, on the right), then run gnuplot
 * on the script in dir. `machine` (tide_lab_ghost_machine) and `size` go
 * into the chart's title. dir must exist. *note (cap bytes) says how the
 * drawing went: drawn, or not and how to draw it. 0, or TIDE_EIO when the
 * CSV or the script could not be written. Cost: gnuplot's, about a
 * second. */
int tide_lab_ghost_files(const char *dir, const char *prefix, json_t *machine, json_t *rows, double size,
                         char *note, size_t cap);

/* One line per variant that has a row, in the rows' order, as a JSON
 * array of strings: where its ghost is largest and how much of what the
 * frees could give back (peak - start - live) stayed resident; in how
 * many scenarios the memory came back (ghost under a tenth of the
 * growth); for a variant with a base (ghost.h), how much of the base's
 * ghost it removes where it removes the most, among the scenarios both
 * ran. A variant whose rows were all skipped or failed says why. Only
 * "ok" rows count as figures. NULL when out of memory. */
json_t *tide_lab_ghost_conclusions(json_t *rows);

#endif
