/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lab_plot.c: the trim lab's chart, as a gnuplot script beside the CSVs,
 * and the call of gnuplot that draws it.
 *
 * The CSVs are the record; the chart is a view of them. The script reads
 * PREFIX-rss.csv and PREFIX-sweeps.csv (and, for a rotating run,
 * PREFIX-disk.csv and PREFIX-rotations.csv) from its own directory and
 * writes PREFIX-rss.png and PREFIX-rss.svg there, so anyone redraws it with
 * `gnuplot PREFIX-rss.gp`, or edits it. What the script holds besides the
 * files' names is what the CSVs do not: the variants' order, the warm-up,
 * the memory limits, and the panels' titles with the verdict of each
 * variant (lab.h, the plateau test).
 *
 * Layout of the picture: one panel per variant (small multiples, two
 * columns from three variants on), all on the same axes, so that no line
 * hides another and a difference reads as a difference of height; the
 * repetitions in each panel in the same colours from panel to panel; the
 * warm-up shaded; RSS; what the node's consumers counted (the live bytes,
 * from the sweeps) as a grey line, and the node's anonymous RSS at each
 * sweep as a black one, so that the ghost (anonymous RSS above the live
 * bytes) is seen apart from the file pages RSS also counts (the store's
 * mapped files); the memory limit as a black dash-dot line; each trim a candle
 * from RSS before to after, green when it lowered RSS, red when not; the
 * plateau mean dotted when a plateau was reached; the disk of a rotating
 * node on the right axis with its rotations as dashed verticals. The
 * legend is outside the panels, in a strip of its own on the right.
 *
 * Invariants:
 *   1. The legend is never drawn over data: the panels' margins are fixed
 *      and leave the right strip to it (`set key outside`).
 *   2. Text is never cut: the canvas grows with the rows, the subtitle is
 *      wrapped at word boundaries, and the terminals are noenhanced (an
 *      underscore in a command is not a subscript).
 *   3. The live and anonymous lines and the limit line appear exactly when
 *      the data has them: live bytes and anonymous RSS in a sweep, a limit
 *      on a series.
 *   4. The y axis starts at 0.
 *
 * Never: run gnuplot from the script's writer, or fail a run because
 * gnuplot is missing (ti_lab_gnuplot says so and the caller carries on).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab/lab_impl.h"
#include "tide/error.h"
#include "util/err.h"

#define MAXV 16          /* variants drawn; more share the last panel's fate: not drawn */
#define WIDE 1360        /* the canvas' width */
#define ROW_H 300        /* one row of panels */
#define HEAD_H 150       /* titles above the panels, and the x label below */
#define WRAP 150         /* subtitle characters per line at this width */

/* What the script needs, worked out from the series. */
typedef struct plot {
    const char *var[MAXV];
    size_t      nvar, rows, cols;
    unsigned    reps;
    double      tmax, ymax, dmax, tscale;
    int         live, rot;
} plot;

void ti_lab_gp_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if (*s == '\n') { fputs("\\n", f); continue; }
        fputc(*s, f);
    }
    fputc('"', f);
}

void ti_lab_gp_wrapped(FILE *f, const char *title, const char *sub, size_t width)
{
    char buf[4096];
    size_t len = (size_t)snprintf(buf, sizeof buf, "%s", title), line = 0;

    for (const char *p = sub; p && *p && len + 4 < sizeof buf;) {
        size_t w = strcspn(p, " ");
        if (line == 0 || line + 1 + w > width) {
            buf[len++] = '\n';
            line = 0;
        } else {
            buf[len++] = ' ';
            line++;
        }
        if (len + w + 2 >= sizeof buf) break;
        memcpy(buf + len, p, w);
        len += w, line += w;
        p += w;
        while (*p == ' ') p++;
    }
    buf[len] = '\0';
    ti_lab_gp_string(f, buf);
}

static int seen_before(const tide_lab_series *s, size_t k)
{
    for (size_t j = 0; j < k; j++) if (strcmp(s[j].variant, s[k].variant) == 0) return 1;
    return 0;
}

/* The variants, the axes' ends (invariant 4), what is there to draw. */
static void plot_scale(plot *g, const tide_lab_series *s, size_t n, const tide_lab_chart *c)
{
    memset(g, 0, sizeof *g);
    g->tmax = c->duration_s;
    for (size_t k = 0; k < n; k++) {
        const tide_lab_series *x = &s[k];
        if (!seen_before(s, k) && g->nvar < MAXV) g->var[g->nvar++] = x->variant;
        if (x->rep > g->reps) g->reps = x->rep;
        g->rot |= x->rotating;
        if ((double)x->limit_bytes > g->ymax) g->ymax = (double)x->limit_bytes;
        for (size_t i = 0; i < x->nsamples; i++) {
            if (c->duration_s <= 0 && x->samples[i].t > g->tmax) g->tmax = x->samples[i].t;
            g->ymax = fmax(g->ymax, (double)x->samples[i].rss);
            g->dmax = fmax(g->dmax, (double)x->samples[i].disk);
        }
        for (size_t i = 0; i < x->nsweeps; i++) {
            const tide_lab_sweep *w = &x->sweeps[i];
            if (w->trimmed) g->ymax = fmax(g->ymax, (double)w->rss_before);
            if (w->anon_rss && w->consumer_bytes) g->live = 1, g->ymax = fmax(g->ymax, (double)w->consumer_bytes);
        }
    }
    if (g->tmax <= 0) g->tmax = 1;
    g->ymax = g->ymax > 0 ? g->ymax / 1048576.0 * 1.08 : 1;
    g->dmax = g->dmax > 0 ? g->dmax / 1048576.0 * 1.08 : 1;
    g->tscale = g->tmax > 600 ? 60 : 1;
    g->cols = g->nvar >= 3 ? 2 : 1;
    g->rows = (g->nvar + g->cols - 1) / g->cols;
    if (g->rows == 0) g->rows = 1;
    if (g->reps == 0) g->reps = 1;
}

/* The series of variant v in repetition rep, or NULL. */
static const tide_lab_series *series_of(const tide_lab_series *s, size_t n, const char *v, unsigned rep)
{
    for (size_t k = 0; k < n; k++) if (s[k].rep == rep && strcmp(s[k].variant, v) == 0) return &s[k];
    return NULL;
}

/* The panel's title into buf: the variant, its plateau (the median over
 * the repetitions that reached one) or why there is none, and its
 * difference from the baseline's with its spread. */
static void panel_title(char *buf, size_t cap, const plot *g, const tide_lab_series *s, size_t n, const char *v,
                        const tide_lab_chart *c)
{
    double plate[128], red[128], lo = INFINITY, hi = -INFINITY, drift = 0, span = 0;
    size_t np = 0, nr = 0, none = 0;
    int len;

    for (unsigned r = 1; r <= g->reps && r <= 128; r++) {
        const tide_lab_series *x = series_of(s, n, v, r), *b = c->baseline ? series_of(s, n, c->baseline, r) : NULL;
        tide_lab_figures f, fb;
        if (x == NULL || ti_lab_figures_compute(x, c->warmup_s, c->wave_s, &f) != 0) continue;
        if (f.plateau.state != TIDE_LAB_PLATEAU_REACHED) { none++, drift = f.plateau.drift, span = f.plateau.span; continue; }
        plate[np++] = f.plateau_mean_rss;
        if (b == NULL || b == x || ti_lab_figures_compute(b, c->warmup_s, c->wave_s, &fb) != 0 ||
            fb.plateau.state != TIDE_LAB_PLATEAU_REACHED || !(fb.plateau_mean_rss > 0))
            continue;
        red[nr] = 100.0 * (f.plateau_mean_rss - fb.plateau_mean_rss) / fb.plateau_mean_rss;
        lo = fmin(lo, red[nr]), hi = fmax(hi, red[nr]), nr++;
    }
    if (none && !isnan(drift))
        len = snprintf(buf, cap, "%s: no plateau (%+.1f MiB over the last %.0f s): run longer", v, drift / 1048576.0,
                       span);
    else if (none)
        len = snprintf(buf, cap, "%s: too short to tell a plateau: run longer", v);
    else if (np)
        len = snprintf(buf, cap, "%s: plateau %.1f MiB", v, ti_lab_quantile(plate, np, 0.5) / 1048576.0);
    else
        len = snprintf(buf, cap, "%s: too short to tell a plateau", v);
    if (nr && len > 0 && (size_t)len < cap)
        snprintf(buf + len, cap - (size_t)len, nr > 1 ? ", %+.1f%% vs %s (%+.1f to %+.1f)" : ", %+.1f%% vs %s",
                 ti_lab_quantile(red, nr, 0.5), c->baseline, lo, hi);
}

/* The script's head: the data, the helpers, the loop over the two
 * terminals, the multiplot with its fixed margins (invariants 1, 2). */
static void gp_head(FILE *f, const plot *g, const tide_lab_chart *c)
{
    unsigned h = HEAD_H + (unsigned)g->rows * ROW_H;

    fprintf(f, "# %s-rss.gp: written by tide lab (docs/LAB.md, \"The chart\"). Redraw in this directory\n"
               "# with `gnuplot %s-rss.gp`: it reads the CSVs beside it and writes %s-rss.png and\n"
               "# %s-rss.svg. One panel per variant on shared axes; the key outside, on the right.\n\n",
            c->prefix, c->prefix, c->prefix, c->prefix);
    fputs("set datafile separator \",\"\nMiB = 1048576.0\n", f);
    fprintf(f, "T = %g    # seconds per unit of the x axis\n", g->tscale);
    fprintf(f, "rss = \"%s-rss.csv\"\nsweeps = \"%s-sweeps.csv\"\n", c->prefix, c->prefix);
    if (g->rot) fprintf(f, "disk = \"%s-disk.csv\"\nrotations = \"%s-rotations.csv\"\n", c->prefix, c->prefix);
    fputs("is(v, r) = strcol(2) eq v && column(1) == r\n"
          "rep_colour(r) = word(\"#1f77b4 #9467bd #ff7f0e #8c564b #17becf #e377c2 #7f7f7f #bcbd22\", (r - 1) % 8 + 1)\n"
          "rep_dash(r) = r == 1 ? 1 : 2\n\n", f);
    fprintf(f, "do for [out in \"png svg\"] {\n"
               "if (out eq \"png\") {\n"
               "    set terminal pngcairo size %d,%u font \"sans,10\" noenhanced\n"
               "    set output \"%s-rss.png\"\n"
               "} else {\n"
               "    set terminal svg size %d,%u font \"sans,10\" noenhanced background rgb \"white\"\n"
               "    set output \"%s-rss.svg\"\n"
               "}\n",
            WIDE, h, c->prefix, WIDE, h, c->prefix);
    /* A rotating run's panels carry a right axis with its label: wider gaps
     * between the columns, so that it never runs into the next panel's
     * left axis, and the key's strip starts further left (invariant 2). */
    fprintf(f, "set multiplot layout %zu,%zu margins 0.06,%.2f,%.3f,%.3f spacing %.2f,%.3f title ",
            g->rows, g->cols, g->rot ? 0.71 : 0.77, 60.0 / h, 1.0 - 110.0 / h, g->rot ? 0.13 : 0.08, 60.0 / h);
    ti_lab_gp_wrapped(f, c->title, c->subtitle, WRAP);
    fputs(" font \",11\"\n", f);
    fprintf(f, "set xrange [0:%g]\nset yrange [0:%g]\nset grid ytics lc rgb \"#dddddd\"\n"
               "set ylabel \"MiB\"\n"
               "set boxwidth %g absolute\nset style fill solid 1.0 noborder\n",
            g->tmax / g->tscale, g->ymax, g->tmax / g->tscale / 250.0);
    if (g->rot)
        fprintf(f, "set y2range [0:%g]\nset y2tics\nset y2label \"data directory (MiB), dashed\"\n", g->dmax);
}

/* The key's entries: titled plots of nothing, so that the legend says
 * what every kind of line is, once, whatever panel holds it. */
static void gp_key_entries(FILE *f, const plot *g, const tide_lab_series *s, size_t n)
{
    int limit = 0;

    for (size_t k = 0; k < n; k++) limit |= s[k].limit_bytes > 0;
    fprintf(f, "     for [r=1:%u] NaN with lines lw 2 lc rgb rep_colour(r) dt rep_dash(r) "
               "title sprintf(\"RSS, repetition %%d\", r), \\\n", g->reps);
    if (g->live)
        fputs("     NaN with linespoints lw 1 pt 6 ps 0.5 lc rgb \"black\" title \"anonymous RSS, at each sweep\", \\\n"
              "     NaN with linespoints lw 1.5 pt 7 ps 0.4 lc rgb \"#555555\" title \"live: bytes the consumers count\", \\\n", f);
    if (limit) fputs("     NaN with lines lw 2 lc rgb \"black\" dt 4 title \"memory limit\", \\\n", f);
    fputs("     NaN with lines lw 1 lc rgb \"#333333\" dt 3 title \"plateau mean, when reached\", \\\n"
          "     NaN with boxes lc rgb \"#1a9641\" title \"trim (RSS before to after): lowered\", \\\n"
          "     NaN with boxes lc rgb \"#d7191c\" title \"trim: not lowered\", \\\n", f);
    if (g->rot) fputs("     NaN with lines lc rgb \"#555555\" dt 2 title \"disk (right axis); rotation\", \\\n", f);
    fputs("     NaN notitle\n", f);
}

/* One variant's panel: warm-up, limit, plateau, then the plot. */
static void gp_panel(FILE *f, const plot *g, const tide_lab_series *s, size_t n, size_t vi, const tide_lab_chart *c)
{
    const char *v = g->var[vi];
    char title[256];
    uint64_t limit = 0;
    tide_lab_figures fig;
    const tide_lab_series *x1 = series_of(s, n, v, 1);

    panel_title(title, sizeof title, g, s, n, v, c);
    fputs("\nunset object\nunset arrow\nunset label\nset title ", f);
    ti_lab_gp_string(f, title);
    fputc('\n', f);
    if (c->warmup_s > 0)
        fprintf(f, "set object 1 rect from 0, graph 0 to %g, graph 1 behind fc rgb \"#eeeeee\" fs solid noborder\n"
                   "set label 1 \"warm-up\" at graph 0.01, graph 0.95 tc rgb \"#888888\"\n",
                fmin(c->warmup_s, g->tmax) / g->tscale);
    for (size_t k = 0; k < n; k++) if (strcmp(s[k].variant, v) == 0 && s[k].limit_bytes > limit) limit = s[k].limit_bytes;
    if (limit)      /* invariant 3 */
        fprintf(f, "set arrow 1 from graph 0, first %g to graph 1, first %g nohead lw 2 lc rgb \"black\" dt 4 front\n"
                   "set label 2 \"limit %.0f MiB\" at graph 0.99, first %g right offset 0,0.6 front\n",
                limit / 1048576.0, limit / 1048576.0, limit / 1048576.0, limit / 1048576.0);
    if (x1 && ti_lab_figures_compute(x1, c->warmup_s, c->wave_s, &fig) == 0 && fig.plateau.state == TIDE_LAB_PLATEAU_REACHED)
        fprintf(f, "set arrow 2 from %g, first %g to graph 1, first %g nohead lw 1 lc rgb \"#333333\" dt 3\n",
                fmin(c->warmup_s, g->tmax) / g->tscale, fig.plateau_mean_rss / 1048576.0,
                fig.plateau_mean_rss / 1048576.0);
    if (vi + 1 == g->cols)      /* invariant 1: in the strip right of the panels */
        fprintf(f, "set key outside at screen %.2f, screen 0.%03u left top vertical Left reverse\n",
                g->rot ? 0.775 : 0.785, (unsigned)(1000.0 * (1.0 - 110.0 / (HEAD_H + (double)g->rows * ROW_H))));
    else
        fputs("unset key\n", f);
    if (vi + g->cols >= g->nvar) fprintf(f, "set xlabel \"time since the workload started (%s)\"\n", g->tscale > 1 ? "min" : "s");
    else fputs("unset xlabel\n", f);
    fprintf(f, "V = ");
    ti_lab_gp_string(f, v);
    fprintf(f, "\nplot for [r=1:%u] rss using (is(V, r) ? $4/T : NaN):($5/MiB) with lines lw 1.5 "
               "lc rgb rep_colour(r) dt rep_dash(r) notitle, \\\n", g->reps);
    if (g->live)
        fprintf(f, "     for [r=1:%u] sweeps using (is(V, r) && valid(16) && $16 > 0 ? $4/T : NaN):($16/MiB) with "
                   "linespoints lw 1 pt 6 ps 0.5 lc rgb \"black\" notitle, \\\n"
                   "     for [r=1:%u] sweeps using (is(V, r) && valid(15) ? $4/T : NaN):($15/MiB) with linespoints "
                   "lw 1.5 pt 7 ps 0.4 lc rgb \"#555555\" notitle, \\\n", g->reps, g->reps);
    fprintf(f, "     for [r=1:%u] sweeps using (is(V, r) && $7 == 1 && $11 < 0 ? $4/T : NaN):($10/MiB):($10/MiB):"
               "($9/MiB):($9/MiB) with candlesticks lc rgb \"#1a9641\" notitle, \\\n"
               "     for [r=1:%u] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($9/MiB):($9/MiB):"
               "($10/MiB):($10/MiB) with candlesticks lc rgb \"#d7191c\" notitle, \\\n"
               "     for [r=1:%u] sweeps using (is(V, r) && $7 == 1 && $11 >= 0 ? $4/T : NaN):($10/MiB) with points "
               "pt 7 ps 0.4 lc rgb \"#d7191c\" notitle, \\\n", g->reps, g->reps, g->reps);
    if (g->rot)
        fprintf(f, "     for [r=1:%u] disk using (is(V, r) && $4 > 0 ? $3/T : NaN):($4/MiB) axes x1y2 with lines "
                   "lw 1 lc rgb rep_colour(r) dt 2 notitle, \\\n"
                   "     for [r=1:%u] rotations using (is(V, r) && $6 == 0 ? $4/T : NaN):(0):(0):(%g) with vectors "
                   "nohead lc rgb rep_colour(r) dt 2 notitle, \\\n", g->reps, g->reps, g->ymax);
    if (vi + 1 == g->cols) gp_key_entries(f, g, s, n);
    else fputs("     NaN notitle\n", f);
}

int ti_lab_write_gp(FILE *f, const tide_lab_series *s, size_t n, const tide_lab_chart *c)
{
    plot g;
    int rc = 0;

    plot_scale(&g, s, n, c);
    gp_head(f, &g, c);
    for (size_t v = 0; v < g.nvar; v++) gp_panel(f, &g, s, n, v, c);
    fputs("\nunset multiplot\nset output\n}\n", f);
    if (fflush(f) != 0 || ferror(f)) rc = tide_err_set(TIDE_EIO, "lab: writing the gnuplot script failed");
    return rc;
}

/* ---- running gnuplot ------------------------------------------------------- */

/* In the child: into dir, stdout to /dev/null, stderr to fd, exec. */
static void gnuplot_child(const char *prog, const char *dir, const char *script, int fd)
{
    int null = open("/dev/null", O_WRONLY);

    if (null >= 0) dup2(null, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    if (chdir(dir) != 0) _exit(126);
    execlp(prog, prog, script, (char *)NULL);
    _exit(127);
}

int ti_lab_gnuplot(const char *dir, const char *script)
{
    const char *prog = getenv("TIDE_GNUPLOT") ? getenv("TIDE_GNUPLOT") : "gnuplot";
    char err[512] = "";
    size_t got = 0;
    ssize_t r;
    int p[2], status = 0, rc = 0;
    pid_t pid;

    if (pipe(p) != 0) return tide_err_set(TIDE_EIO, "%s/%s: gnuplot: pipe: %s", dir, script, strerror(errno));
    pid = fork();
    if (pid == 0) { close(p[0]); gnuplot_child(prog, dir, script, p[1]); }
    close(p[1]);
    if (pid < 0) {
        rc = tide_err_set(TIDE_EIO, "%s/%s: gnuplot: fork: %s", dir, script, strerror(errno));
        goto out;
    }
    for (char buf[512]; (r = read(p[0], buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR);) {
        size_t take = r > 0 && (size_t)r < sizeof err - 1 - got ? (size_t)r : sizeof err - 1 - got;
        if (r > 0) memcpy(err + got, buf, take), got += take;      /* the rest is read and dropped */
    }
    err[got] = '\0';
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) rc = 1;          /* not installed */
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        rc = tide_err_set(TIDE_EIO, "%s/%s: %s failed (status %d): %.300s", dir, script, prog, status,
                          got ? err : "no message");
out:
    close(p[0]);
    return rc;
}
