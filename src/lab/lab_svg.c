/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lab_svg.c: the trim lab's chart, RSS over time per variant, as SVG.
 *
 * Layout of the picture (960 x 560 user units): a title and a subtitle at
 * the top; the plot area below with the warm-up shaded grey; one polyline
 * per series in its variant's colour (repetitions after the first dashed
 * and lighter); a dashed horizontal line at each series' plateau mean
 * from the warm-up's end; each trim as a short vertical tick from RSS
 * before to RSS after (green when it lowered RSS, red when not); the y
 * axis in MiB from 0, the x axis in seconds (minutes past 10 minutes); the
 * legend bottom right (where the lines run high once warm), one line per
 * variant with its first repetition's
 * plateau mean.
 *
 * With a rotating series (online delete) the picture is DH units taller: a
 * second panel under the first shows each series' data directory in MiB
 * over the same time axis, and each rotation of a series is a dashed
 * vertical line in its colour across both panels (class "rotation"), so a
 * step in RSS or disk lines up with the rotation that made it. Without
 * one the picture is what it always was.
 *
 * Layout: the scales (chart_scale), the frame (titles, warm-up, grid and
 * axes: chart_frame, the disk panel's: disk_frame), each series
 * (chart_series, its disk line and rotations: disk_series), the legend's
 * footnote.
 *
 * Invariants:
 *   1. Exactly one <polyline> per series with samples (tests count them).
 *   2. Every text from outside (title, variant names) is XML-escaped.
 *   3. The y axis starts at 0, so that a difference looks as large as it is.
 *   4. Without a rotating series the output is byte for byte the chart
 *      the lab drew before online delete existed.
 *
 * Never: emit scripts, external references or fonts that must be fetched.
 */
#include <math.h>
#include <string.h>

#include "lab/lab_impl.h"
#include "tide/error.h"
#include "util/err.h"

enum { W = 960, H = 560, ML = 78, MR = 24, MT = 74, MB = 56, DH = 300, DT = 24 };

static const char *const palette[] = {
    "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
};

static void put_escaped(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* A "nice" tick step (1, 2 or 5 x 10^k) giving about `want` ticks. */
static double nice_step(double span, int want)
{
    double raw = span / want, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/* The colour index of a variant: its first appearance among the series. */
static size_t colour_of(const tide_lab_series *s, size_t n, size_t k)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        int seen = 0;
        for (size_t j = 0; j < i; j++) seen |= strcmp(s[j].variant, s[i].variant) == 0;
        if (strcmp(s[i].variant, s[k].variant) == 0) return c % (sizeof palette / sizeof *palette);
        if (!seen) c++;
    }
    return 0;
}

/* The chart's scales, worked out from the series before anything is drawn. */
typedef struct chart {
    double tmax, ymax;            /* x axis end in seconds, y axis end in MiB */
    double xstep, ystep, tscale;  /* tick steps; seconds per x unit (1 or 60) */
    double pw, ph;                /* the plot area */
    const char *tunit;
    size_t nvar, lx, ly, legend;  /* variants; the legend's corner; lines so far */
    int    multi;                 /* repetitions after the first are shown */
    int    rot, h;                /* a series rotates: the disk panel; the height */
    double dtop, dph, dmax, dstep;/* the disk panel: top, height, y end (MiB), step */
} chart;

static double x_of(const chart *g, double t) { return ML + t / g->tmax * g->pw; }
static double y_of(const chart *g, double bytes) { return MT + g->ph - (bytes / 1048576.0) / g->ymax * g->ph; }
static double yd_of(const chart *g, double bytes) { return g->dtop + g->dph - (bytes / 1048576.0) / g->dmax * g->dph; }

/* The disk panel's scale (invariant 3), when a series rotates. */
static void disk_scale(chart *g, const tide_lab_series *s, size_t n)
{
    g->rot = ti_lab_any_rotating(s, n);
    g->h = g->rot ? H + DH : H;
    if (!g->rot) return;
    g->dtop = H + DT;
    g->dph = DH - DT - MB;
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < s[k].nsamples; i++)
            if ((double)s[k].samples[i].disk > g->dmax) g->dmax = (double)s[k].samples[i].disk;
    g->dmax /= 1048576.0;
    if (g->dmax <= 0) g->dmax = 1;
    g->dstep = nice_step(g->dmax, 5);
    g->dmax = ceil(g->dmax * 1.05 / g->dstep) * g->dstep;
}

/* The axes' ends and steps (invariant 3), the variants, the legend's place. */
static void chart_scale(chart *g, const tide_lab_series *s, size_t n, const tide_lab_chart *c)
{
    memset(g, 0, sizeof *g);
    g->tmax = c->duration_s;
    g->pw = W - ML - MR;
    g->ph = H - MT - MB;
    for (size_t k = 0; k < n; k++) {
        int seen = 0;
        for (size_t j = 0; j < k; j++) seen |= strcmp(s[j].variant, s[k].variant) == 0;
        g->nvar += !seen;
        g->multi |= s[k].rep > 1;
        for (size_t i = 0; i < s[k].nsamples; i++) {
            if (c->duration_s <= 0 && s[k].samples[i].t > g->tmax) g->tmax = s[k].samples[i].t;
            if ((double)s[k].samples[i].rss > g->ymax) g->ymax = (double)s[k].samples[i].rss;
        }
        for (size_t i = 0; i < s[k].nsweeps; i++)
            if (s[k].sweeps[i].trimmed && (double)s[k].sweeps[i].rss_before > g->ymax)
                g->ymax = (double)s[k].sweeps[i].rss_before;
    }
    if (g->tmax <= 0) g->tmax = 1;
    g->ymax = g->ymax / 1048576.0;
    if (g->ymax <= 0) g->ymax = 1;
    g->ystep = nice_step(g->ymax, 6);
    g->ymax = ceil(g->ymax * 1.05 / g->ystep) * g->ystep;
    g->tscale = g->tmax > 600 ? 60 : 1;
    g->tunit = g->tmax > 600 ? "min" : "s";
    g->xstep = nice_step(g->tmax / g->tscale, 8);
    /* The legend sits bottom right, where the lines are high after the warm-up. */
    g->lx = W - MR - 430;
    g->ly = (size_t)(MT + g->ph) - 20 - 16 * (g->nvar + 1);
    disk_scale(g, s, n);
}

/* A panel's horizontal grid lines with their values (ymax in the axis'
 * unit, from 0 at `bottom` up `height` units) and the time ticks under it. */
static void panel_grid(FILE *f, const chart *g, double bottom, double height, double ymax, double ystep)
{
    for (double y = 0; y <= ymax + 1e-9; y += ystep) {
        double py = bottom - y / ymax * height;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#dddddd\"/>"
                   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                ML, py, W - MR, py, ML - 6, py + 4, y);
    }
    for (double t = 0; t <= g->tmax / g->tscale + 1e-9; t += g->xstep) {
        double px = ML + t * g->tscale / g->tmax * g->pw;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                px, bottom, px, bottom + 5, px, bottom + 18, t);
    }
}

/* The picture, the titles, the warm-up shaded, the grid and the axes. */
static void chart_frame(FILE *f, const chart *g, const tide_lab_chart *c)
{
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, g->h, W, g->h);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", W, g->h);
    fputs("<text x=\"12\" y=\"22\" font-size=\"15\" font-weight=\"bold\">", f);
    put_escaped(f, c->title);
    fputs("</text>\n", f);
    if (c->subtitle) {
        fputs("<text x=\"12\" y=\"42\" font-size=\"11\" font-family=\"monospace\" fill=\"#444\">", f);
        put_escaped(f, c->subtitle);
        fputs("</text>\n", f);
    }
    if (c->warmup_s > 0)
        fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%.1f\" fill=\"#eeeeee\"/>\n"
                   "<text x=\"%.1f\" y=\"%d\" fill=\"#888\" font-size=\"11\">warm-up</text>\n",
                (double)ML, MT, fmin(c->warmup_s, g->tmax) / g->tmax * g->pw, g->ph, ML + 4.0, MT + 14);
    panel_grid(f, g, MT + g->ph, g->ph, g->ymax, g->ystep);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000\"/>"
               "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000\"/>\n",
            ML, MT, ML, MT + g->ph, ML, MT + g->ph, W - MR, MT + g->ph);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">time since the workload started (%s)</text>\n",
            ML + g->pw / 2, H - 12, g->tunit);
    fprintf(f, "<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 18 %.1f)\">"
               "RSS (MiB)</text>\n", MT + g->ph / 2, MT + g->ph / 2);
}

/* The disk panel's grid, axes and labels. */
static void disk_frame(FILE *f, const chart *g)
{
    double bottom = g->dtop + g->dph;

    panel_grid(f, g, bottom, g->dph, g->dmax, g->dstep);
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000\"/>"
               "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000\"/>\n",
            ML, g->dtop, ML, bottom, ML, bottom, W - MR, bottom);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">time since the workload started (%s)</text>\n",
            ML + g->pw / 2, g->h - 12, g->tunit);
    fprintf(f, "<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 18 %.1f)\">"
               "data directory (MiB)</text>\n", g->dtop + g->dph / 2, g->dtop + g->dph / 2);
}

/* Series x's disk line and its rotations across both panels. */
static void disk_series(FILE *f, const chart *g, const tide_lab_series *x, const char *col, const char *dash)
{
    size_t drawn = 0;

    for (size_t i = 0; i < x->nsamples; i++) {
        if (x->samples[i].disk == 0) continue;
        if (drawn++ == 0) {
            fputs("<polyline class=\"disk\" data-variant=\"", f);
            put_escaped(f, x->variant);
            fprintf(f, "\" data-rep=\"%u\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"",
                    x->rep, col, dash);
        }
        fprintf(f, "%s%.1f,%.1f", drawn > 1 ? " " : "", x_of(g, x->samples[i].t), yd_of(g, (double)x->samples[i].disk));
    }
    if (drawn) fputs("\"/>\n", f);
    for (size_t i = 0; i < x->nrotations; i++) {
        const tide_lab_rotation *r = &x->rotations[i];
        if (r->rc != 0 || r->t < 0 || r->t > g->tmax) continue;
        fprintf(f, "<line class=\"rotation\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-dasharray=\"5 4\" stroke-width=\"1\"/>\n"
                   "<line class=\"rotation\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-dasharray=\"5 4\" stroke-width=\"1\"/>\n",
                x_of(g, r->t), MT, x_of(g, r->t), MT + g->ph, col,
                x_of(g, r->t), g->dtop, x_of(g, r->t), g->dtop + g->dph, col);
    }
}

/* Series k: its line (invariant 1), its plateau, its trims, and its
 * variant's legend line when it is the variant's first series. */
static int chart_series(FILE *f, chart *g, const tide_lab_series *s, size_t n, size_t k, const tide_lab_chart *c)
{
    const tide_lab_series *x = &s[k];
    const char *col = palette[colour_of(s, n, k)];
    const char *dash = x->rep > 1 ? " stroke-dasharray=\"6 3\" stroke-opacity=\"0.6\"" : "";
    tide_lab_figures fig;
    size_t col_used = 0;
    int rc;

    if (x->nsamples == 0) return 0;
    fprintf(f, "<polyline class=\"rss\" data-variant=\"");
    put_escaped(f, x->variant);
    fprintf(f, "\" data-rep=\"%u\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"",
            x->rep, col, dash);
    for (size_t i = 0; i < x->nsamples; i++)
        fprintf(f, "%s%.1f,%.1f", i ? " " : "", x_of(g, x->samples[i].t), y_of(g, (double)x->samples[i].rss));
    fputs("\"/>\n", f);
    rc = ti_lab_figures_compute(x, c->warmup_s, &fig);
    if (rc) return rc;
    if (!isnan(fig.plateau_mean_rss))
        fprintf(f, "<line class=\"plateau\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                   "stroke=\"%s\" stroke-dasharray=\"2 3\" stroke-width=\"1\"/>\n",
                x_of(g, fmin(c->warmup_s, g->tmax)), y_of(g, fig.plateau_mean_rss), x_of(g, g->tmax),
                y_of(g, fig.plateau_mean_rss), col);
    for (size_t i = 0; i < x->nsweeps; i++) {
        const tide_lab_sweep *w = &x->sweeps[i];
        if (!w->trimmed || w->t < 0 || w->t > g->tmax) continue;
        fprintf(f, "<line class=\"trim\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                   "stroke=\"%s\" stroke-width=\"2\"/>\n",
                x_of(g, w->t), y_of(g, (double)w->rss_before) - (w->rss_delta == 0 ? 2 : 0), x_of(g, w->t),
                y_of(g, (double)w->rss_after), w->rss_delta < 0 ? "#1a9641" : "#d7191c");
    }
    if (g->rot) disk_series(f, g, x, col, dash);
    for (size_t j = 0; j < k; j++) col_used |= strcmp(s[j].variant, x->variant) == 0;
    if (col_used) return 0;
    fprintf(f, "<line x1=\"%zu\" y1=\"%zu\" x2=\"%zu\" y2=\"%zu\" stroke=\"%s\" stroke-width=\"3\"/>"
               "<text x=\"%zu\" y=\"%zu\">", g->lx, g->ly + g->legend * 16, g->lx + 22, g->ly + g->legend * 16,
            col, g->lx + 28, g->ly + 4 + g->legend * 16);
    put_escaped(f, x->variant);
    if (!isnan(fig.plateau_mean_rss))
        fprintf(f, " (plateau %.1f MiB%s)", fig.plateau_mean_rss / 1048576.0, g->multi ? ", rep 1" : "");
    fputs("</text>\n", f);
    g->legend++;
    return 0;
}

int ti_lab_write_svg(FILE *f, const tide_lab_series *s, size_t n, const tide_lab_chart *c)
{
    chart g;
    int rc = 0;

    chart_scale(&g, s, n, c);
    chart_frame(f, &g, c);
    if (g.rot) disk_frame(f, &g);
    for (size_t k = 0; k < n && rc == 0; k++) rc = chart_series(f, &g, s, n, k, c);
    if (rc) return rc;
    fprintf(f, "<text x=\"%zu\" y=\"%zu\" fill=\"#444\" font-size=\"11\">"
               "ticks: a trim, RSS before to after (green: lowered, red: not); dotted: plateau mean%s"
               "</text>\n", g.lx, g.ly + 4 + g.legend * 16, g.rot ? "; dashed: rotations" : "");
    fputs("</svg>\n", f);
    if (fflush(f) != 0 || ferror(f)) rc = tide_err_set(TIDE_EIO, "lab: writing the SVG failed");
    return rc;
}
