/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ghost_chart.c: the RSS-ghost matrix's record, its chart and its
 * conclusions (see ghost_chart.h).
 *
 * The CSV is the record; the chart is a view of it. The gnuplot script
 * reads PREFIX-matrix.csv from its own directory and writes
 * PREFIX-matrix.png and PREFIX-matrix.svg there, so anyone redraws it with
 * `gnuplot PREFIX-matrix.gp`, or edits it. What the script holds besides
 * the file's name is what the CSV does not: the order of the scenarios and
 * variants, which variants did not run and why, the axis' ends, and the
 * machine in the title.
 *
 * Layout of the picture: one group of bars per variant, in the matrix's
 * order, one bar per scenario in the same colour in every group; the bar
 * filled up to the ghost (signed, as measured: a negative ghost goes
 * below 0) and outlined up to what the frees could give back, peak -
 * start - live, so that a filled outline reads "all of it stayed" and an
 * empty one "it came back". A variant that did not run keeps its place,
 * labelled with why. The key (the scenarios, and the outline) is outside
 * the plot, on the right.
 *
 * The conclusions are sentences about the rows and nothing else: the
 * largest ghost, the count of scenarios where the memory came back (the
 * rows' `returned`), and against the variant's base the largest
 * reduction among the scenarios both ran.
 *
 * Invariants:
 *   1. The key is never drawn over data (`set key outside`), and text is
 *      never cut: the terminals are noenhanced (a '_' in a setting is not
 *      a subscript), the title is wrapped, the margins are set for the
 *      two-line tick labels.
 *   2. Only rows with status "ok" are drawn or concluded from; a column
 *      of the CSV is empty where its row has no figure.
 *   3. The y axis holds 0, every ghost and every outline.
 *
 * Never: fail because gnuplot is missing or fails (the note says so).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "lab/ghost.h"
#include "lab/ghost_chart.h"
#include "lab/lab_impl.h"
#include "tide/error.h"
#include "util/err.h"

#define MIB      1048576.0
#define MAXNAMES 32      /* scenarios or variants drawn; more are left out */
#define WIDE     1360    /* the canvas */
#define HIGH     680
#define WRAP     150     /* title characters per line at this width */

/* ---- the CSV ---------------------------------------------------------------------- */

static const char *const csv_columns[] = {
    "scenario", "variant", "skipped", "status", "allocator", "allocator_version",
    "rss_start_bytes", "rss_peak_bytes", "rss_after_free_bytes", "live_bytes", "ghost_bytes",
    "peak_growth_bytes", "returned", "allocated_bytes", "objects", "threads", "arenas",
    "trim_result", "wait_ms", "elapsed_ms", "package", "reason", NULL
};

static void csv_text(FILE *f, const char *s)
{
    if (strpbrk(s, ",\"\n") == NULL) { fputs(s, f); return; }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
    fputc('"', f);
}

int tide_lab_ghost_csv_header(FILE *f)
{
    for (size_t i = 0; csv_columns[i]; i++) fprintf(f, "%s%s", i ? "," : "", csv_columns[i]);
    fputc('\n', f);
    return ferror(f) ? tide_err_set(TIDE_EIO, "ghost: writing the CSV header failed") : 0;
}

int tide_lab_ghost_csv_row(FILE *f, json_t *r)
{
    for (size_t i = 0; csv_columns[i]; i++) {
        json_t *v = json_object_get(r, csv_columns[i]);
        if (i) fputc(',', f);
        if (json_is_string(v)) csv_text(f, json_string_value(v));
        else if (json_is_boolean(v)) fputs(json_is_true(v) ? "true" : "false", f);
        else if (json_is_integer(v)) fprintf(f, "%" PRId64, (int64_t)json_integer_value(v));
        else if (json_is_real(v)) fprintf(f, "%.3f", json_real_value(v));
    }
    fputc('\n', f);
    return ferror(f) ? tide_err_set(TIDE_EIO, "ghost: writing a CSV row failed") : 0;
}

/* ---- reading the rows ----------------------------------------------------------- */

static const char *str_of(json_t *r, const char *key)
{
    const char *s = json_string_value(json_object_get(r, key));
    return s ? s : "";
}

static int is_ok(json_t *r)
{
    return strcmp(str_of(r, "status"), "ok") == 0;
}

static double mib_of(json_t *r, const char *key)
{
    return (double)json_integer_value(json_object_get(r, key)) / MIB;
}

/* What the frees could give back: peak - start - live, in MiB. */
static double freed_mib(json_t *r)
{
    return mib_of(r, "rss_peak_bytes") - mib_of(r, "rss_start_bytes") - mib_of(r, "live_bytes");
}

/* The names of `key` in the rows, each once, in first-seen order. */
static size_t names_of(json_t *rows, const char *key, const char **out)
{
    size_t n = 0, i, k;
    json_t *r;

    json_array_foreach(rows, i, r) {
        const char *s = str_of(r, key);
        for (k = 0; k < n && strcmp(out[k], s) != 0; k++) {}
        if (k == n && n < MAXNAMES) out[n++] = s;
    }
    return n;
}

/* The row of scenario s under variant v, or NULL. */
static json_t *row_at(json_t *rows, const char *s, const char *v)
{
    size_t i;
    json_t *r;

    json_array_foreach(rows, i, r)
        if (strcmp(str_of(r, "scenario"), s) == 0 && strcmp(str_of(r, "variant"), v) == 0) return r;
    return NULL;
}

/* ---- the chart's script ----------------------------------------------------------- */

/* The variant's tick label: its name, and on a second line why it did not
 * run when none of its rows is ok. */
static void tick_label(char *buf, size_t cap, json_t *rows, const char *v)
{
    size_t i, ok = 0, skipped = 0;
    const char *pkg = "";
    json_t *r;

    json_array_foreach(rows, i, r) {
        if (strcmp(str_of(r, "variant"), v) != 0) continue;
        ok += is_ok(r);
        if (strcmp(str_of(r, "status"), "skipped") == 0) skipped++, pkg = str_of(r, "package");
    }
    if (ok) snprintf(buf, cap, "%s", v);
    else if (skipped && pkg[0]) snprintf(buf, cap, "%s\nnot run: no %s", v, pkg);
    else snprintf(buf, cap, "%s\n%s", v, skipped ? "skipped" : "failed");
}

/* The y axis' ends (invariant 3), with a margin. */
static void y_range(json_t *rows, double *lo, double *hi)
{
    size_t i;
    json_t *r;

    *lo = 0, *hi = 0;
    json_array_foreach(rows, i, r) {
        if (!is_ok(r)) continue;
        *lo = fmin(*lo, fmin(mib_of(r, "ghost_bytes"), freed_mib(r)));
        *hi = fmax(*hi, fmax(mib_of(r, "ghost_bytes"), freed_mib(r)));
    }
    *hi = *hi > 0 ? *hi * 1.08 : 1;
    *lo = *lo < -0.01 * *hi ? *lo * 1.08 - 0.05 * *hi : 0;     /* a rounding's -0.00 needs no room */
}

/* The title's second line: the machine and the size. */
static void machine_line(char *buf, size_t cap, json_t *m, double size)
{
    json_t *a = json_object_get(m, "allocators"), *v;
    const char *name;
    int len = snprintf(buf, cap, "page %" PRId64 " B, kernel %s, glibc %s",
                       (int64_t)json_integer_value(json_object_get(m, "page_size")),
                       str_of(m, "kernel"), str_of(m, "glibc"));

    json_object_foreach(a, name, v) {
        if (strcmp(name, "glibc") == 0 || !json_is_string(v) || len < 0 || (size_t)len >= cap) continue;
        /* jemalloc's version ends in a long git hash: the release is enough */
        len += snprintf(buf + len, cap - (size_t)len, ", %s %.*s", name,
                        (int)strcspn(json_string_value(v), "-"), json_string_value(v));
    }
    if (len >= 0 && (size_t)len < cap)
        snprintf(buf + len, cap - (size_t)len, "; size %g. Filled: the ghost, RSS after the frees - start - "
                 "live. Outline: what the frees could give back, peak - start - live.", size);
}

/* The head: the data, the helpers, the terminals, the axes (invariant 1). */
static void gp_head(FILE *f, const char *prefix, const char **sc, size_t ns, const char **va, size_t nv)
{
    fprintf(f, "# %s-matrix.gp: written by tide ghost (docs/GHOST.md, \"The chart\"). Redraw in this\n"
               "# directory with `gnuplot %s-matrix.gp`: it reads %s-matrix.csv beside it and writes\n"
               "# %s-matrix.png and %s-matrix.svg. One group of bars per variant, one bar per scenario;\n"
               "# the key outside, on the right.\n\n",
            prefix, prefix, prefix, prefix, prefix);
    fprintf(f, "set datafile separator \",\"\nMiB = 1048576.0\ncsv = \"%s-matrix.csv\"\nscenarios = \"", prefix);
    for (size_t i = 0; i < ns; i++) fprintf(f, "%s%s", i ? " " : "", sc[i]);
    fputs("\"\nvariants = \"", f);
    for (size_t i = 0; i < nv; i++) fprintf(f, "%s%s", i ? " " : "", va[i]);
    fputs("\"\nNS = words(scenarios)\nNV = words(variants)\nW = 0.84 / NS\n"
          "# columns: 1 scenario, 2 variant, 4 status, 7 rss_start, 8 rss_peak, 10 live, 11 ghost (bytes)\n"
          "vi(v) = sum [i=1:NV] (word(variants, i) eq v ? i : 0)\n"
          "x(s) = vi(strcol(2)) + (s - (NS + 1) / 2.0) * W\n"
          "ok(s) = strcol(1) eq word(scenarios, s) && strcol(4) eq \"ok\"\n"
          "colour(s) = word(\"#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b #e377c2 #7f7f7f #bcbd22 #17becf\", "
          "(s - 1) % 10 + 1)\n\n", f);
    fprintf(f, "do for [out in \"png svg\"] {\n"
               "if (out eq \"png\") {\n"
               "    set terminal pngcairo size %d,%d font \"sans,10\" noenhanced\n"
               "    set output \"%s-matrix.png\"\n"
               "} else {\n"
               "    set terminal svg size %d,%d font \"sans,10\" noenhanced background rgb \"white\"\n"
               "    set output \"%s-matrix.svg\"\n"
               "}\n",
            WIDE, HIGH, prefix, WIDE, HIGH, prefix);
}

/* The axes, the ticks, the key and the plot. */
static void gp_body(FILE *f, json_t *rows, const char **va, size_t nv, double lo, double hi)
{
    char label[256];

    fprintf(f, "set xrange [0.5:%zu.5]\nset yrange [%g:%g]\nset ylabel \"MiB\"\n"
               "set grid ytics lc rgb \"#dddddd\"\nset xzeroaxis lt -1\nset bmargin 5\nset tmargin 5\n"
               "set xtics nomirror scale 0 (", nv, lo, hi);
    for (size_t i = 0; i < nv; i++) {
        tick_label(label, sizeof label, rows, va[i]);
        fputs(i ? ", " : "", f);
        ti_lab_gp_string(f, label);
        fprintf(f, " %zu", i + 1);
    }
    fputs(")\nset xlabel \"allocator variant\"\n"
          "set key outside right top vertical Left reverse title \"scenario\"\n"
          "set boxwidth W * 0.9 absolute\n"
          "plot for [s=1:NS] csv skip 1 using (ok(s) ? x(s) : NaN):($11/MiB) with boxes fs solid 0.85 noborder "
          "lc rgb colour(s) title word(scenarios, s), \\\n"
          "     for [s=1:NS] csv skip 1 using (ok(s) ? x(s) : NaN):(($8 - $7 - $10)/MiB) with boxes fs empty "
          "lw 1.2 lc rgb \"#333333\" notitle, \\\n"
          "     NaN with boxes fs empty lw 1.2 lc rgb \"#333333\" title \"outline: peak - start - live\"\n"
          "set output\n}\n", f);
}

static int write_gp(FILE *f, const char *prefix, json_t *machine, json_t *rows, double size)
{
    const char *sc[MAXNAMES], *va[MAXNAMES];
    size_t ns = names_of(rows, "scenario", sc), nv = names_of(rows, "variant", va);
    char sub[1024];
    double lo, hi;

    y_range(rows, &lo, &hi);
    machine_line(sub, sizeof sub, machine, size);
    gp_head(f, prefix, sc, ns, va, nv);
    fputs("set title ", f);
    ti_lab_gp_wrapped(f, "tide ghost: the RSS that stays after the frees, per allocator variant and scenario",
                      sub, WRAP);
    fputs(" font \",11\"\n", f);
    gp_body(f, rows, va, nv, lo, hi);
    return fflush(f) != 0 || ferror(f) ? tide_err_set(TIDE_EIO, "ghost: writing the gnuplot script failed") : 0;
}

/* ---- the files ------------------------------------------------------------------- */

static int write_csv(FILE *f, json_t *rows)
{
    size_t i;
    json_t *r;
    int rc = tide_lab_ghost_csv_header(f);

    json_array_foreach(rows, i, r) if (rc == 0) rc = tide_lab_ghost_csv_row(f, r);
    if (rc == 0 && fflush(f) != 0) rc = tide_err_set(TIDE_EIO, "ghost: writing the CSV failed");
    return rc;
}

/* Write dir/prefix-what with the CSV (gp 0) or the script (gp 1). */
static int write_one(const char *dir, const char *prefix, const char *what, int gp, json_t *machine,
                     json_t *rows, double size)
{
    char path[4096];
    FILE *f;
    int rc;

    snprintf(path, sizeof path, "%s/%s-%s", dir, prefix, what);
    f = fopen(path, "w");
    if (f == NULL) return tide_err_set(TIDE_EIO, "%s: cannot write: %s", path, strerror(errno));
    rc = gp ? write_gp(f, prefix, machine, rows, size) : write_csv(f, rows);
    if (fclose(f) != 0 || rc) rc = tide_err_set(TIDE_EIO, "%s: cannot write: %s", path, strerror(errno));
    return rc;
}

int tide_lab_ghost_files(const char *dir, const char *prefix, json_t *machine, json_t *rows, double size,
                         char *note, size_t cap)
{
    char script[1024];
    int rc;

    rc = write_one(dir, prefix, "matrix.csv", 0, machine, rows, size);
    if (rc) goto out;
    rc = write_one(dir, prefix, "matrix.gp", 1, machine, rows, size);
    if (rc) goto out;
    snprintf(script, sizeof script, "%s-matrix.gp", prefix);
    switch (ti_lab_gnuplot(dir, script)) {
    case 0: snprintf(note, cap, "drawn: %s/%s-matrix.png and .svg", dir, prefix); break;
    case 1:
        snprintf(note, cap, "not drawn: gnuplot not found; draw it with `cd %s && gnuplot %s` "
                 "(Debian: apt-get install gnuplot-nox)", dir, script);
        break;
    default: snprintf(note, cap, "not drawn: %s", tide_last_error()); break;
    }
out:
    return rc;
}

/* ---- the conclusions --------------------------------------------------------------- */

/* What v's rows come to. */
typedef struct tally {
    size_t  ok, back, skipped, failed;
    json_t *worst;              /* the ok row with the largest ghost */
    const char *why;            /* a skipped or failed row's package or reason */
    int     pkg;                /* 1: why is the package to install */
} tally;

static void tally_of(json_t *rows, const char *v, tally *t)
{
    size_t i;
    json_t *r;

    memset(t, 0, sizeof *t);
    json_array_foreach(rows, i, r) {
        if (strcmp(str_of(r, "variant"), v) != 0) continue;
        if (!is_ok(r)) {
            int skipped = strcmp(str_of(r, "status"), "skipped") == 0;
            t->skipped += skipped, t->failed += !skipped;
            if (t->why == NULL) t->pkg = str_of(r, "package")[0] != 0;
            if (t->why == NULL) t->why = str_of(r, t->pkg ? "package" : "reason");
            continue;
        }
        t->ok++;
        t->back += json_is_true(json_object_get(r, "returned"));
        if (t->worst == NULL || mib_of(r, "ghost_bytes") > mib_of(t->worst, "ghost_bytes")) t->worst = r;
    }
}

/* "; against BASE it removes X of its Y MiB in S", where it removes the
 * most among the scenarios both ran, or that it removes none. */
static int against_base(char *buf, size_t cap, json_t *rows, const char *v, const char *base)
{
    json_t *best = NULL, *best_b = NULL, *r;
    double most = -INFINITY;
    size_t i;

    json_array_foreach(rows, i, r) {
        json_t *b;
        if (strcmp(str_of(r, "variant"), v) != 0 || !is_ok(r)) continue;
        b = row_at(rows, str_of(r, "scenario"), base);
        if (b == NULL || !is_ok(b)) continue;
        if (mib_of(b, "ghost_bytes") - mib_of(r, "ghost_bytes") > most)
            most = mib_of(b, "ghost_bytes") - mib_of(r, "ghost_bytes"), best = r, best_b = b;
    }
    if (best == NULL) return 0;
    if (most < 0.05)
        return snprintf(buf, cap, "; against %s it removes no ghost in any scenario both ran (at best %+.1f MiB)",
                        base, -most);
    return snprintf(buf, cap, "; against %s it removes %.1f of its %.1f MiB in %s", base, most,
                    mib_of(best_b, "ghost_bytes"), str_of(best, "scenario"));
}

/* One variant's line into buf. */
static void conclude(char *buf, size_t cap, json_t *rows, const tide_lab_ghost_variant *var, const char *v)
{
    tally t;
    int len;

    tally_of(rows, v, &t);
    if (t.ok == 0) {
        if (t.failed) snprintf(buf, cap, "%s: no figures: %zu row%s failed (%s)", v, t.failed,
                               t.failed > 1 ? "s" : "", t.why);
        else snprintf(buf, cap, "%s: not run (%s%s)", v, t.pkg ? "install " : "", t.why);
        return;
    }
    if (t.back == t.ok)
        len = snprintf(buf, cap, "%s: the memory came back in all %zu scenario%s (ghost under a tenth of the "
                       "growth); the largest ghost left is %.1f MiB, in %s", v, t.ok, t.ok > 1 ? "s" : "",
                       mib_of(t.worst, "ghost_bytes"), str_of(t.worst, "scenario"));
    else
        len = snprintf(buf, cap, "%s: the ghost is largest in %s, %.1f MiB of the %.1f MiB freed stays resident; "
                       "the memory came back in %zu of %zu scenario%s", v, str_of(t.worst, "scenario"),
                       mib_of(t.worst, "ghost_bytes"), freed_mib(t.worst), t.back, t.ok, t.ok > 1 ? "s" : "");
    if (len > 0 && (size_t)len < cap && var && var->base)
        len += against_base(buf + len, cap - (size_t)len, rows, v, var->base);
    if (len > 0 && (size_t)len < cap && (t.skipped || t.failed))
        snprintf(buf + len, cap - (size_t)len, " (%zu row%s not run)", t.skipped + t.failed,
                 t.skipped + t.failed > 1 ? "s" : "");
}

json_t *tide_lab_ghost_conclusions(json_t *rows)
{
    const char *va[MAXNAMES];
    size_t nv = names_of(rows, "variant", va);
    json_t *out = json_array();
    char line[1024];

    for (size_t i = 0; out && i < nv; i++) {
        const tide_lab_ghost_variant *var = NULL;
        for (size_t k = 0; k < tide_lab_ghost_variant_count(); k++)
            if (strcmp(tide_lab_ghost_variant_at(k)->name, va[i]) == 0) var = tide_lab_ghost_variant_at(k);
        conclude(line, sizeof line, rows, var, va[i]);
        if (json_array_append_new(out, json_string(line)) != 0) json_decref(out), out = NULL;
    }
    return out;
}
