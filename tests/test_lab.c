/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_lab.c: `tide lab`, run as an operator runs it: bin/tide from
 * $TIDE_BIN_DIR starting two real tided processes (trim and notrim) for
 * about 22 seconds of a tiny workload, its --json summary parsed with
 * jansson and its files read back.
 *
 * The sweep interval cannot go below 10 s, so the run lasts 22 s: each node
 * makes two sweep rounds, and the trim variant must report at least one
 * trim while notrim reports none. Checked as well: both variants sampled,
 * the RSS CSV's header and rows for both, the sweeps CSV's header, the
 * chart (its gnuplot script: the key outside, a panel per variant, the
 * live line; the PNG and SVG gnuplot drew), the workload's own determinism
 * (two workloads of one seed agree, another seed differs), the variant
 * table behind the parser, the message and the help, and that bad options
 * exit 2 naming what was wrong. A second run puts trim beside a custom
 * variant with online delete (a rotation every 1200 objects): its rotations
 * are polled, its disk ends below what it was sent, and the disk and
 * rotation CSVs and the chart's disk axis hold both nodes. The rotation
 * figures and the chart are checked on series made by hand as well (the
 * limit and live lines only with their data, gnuplot missing said and not
 * failed), and so are the plateau test (a ramp, a flat noisy line, a wave,
 * a short run) and the verdicts (none on an invalid run, whose client
 * threads fell behind, nor against a ramp). The
 * first run's stderr holds one heartbeat line every 5 s of its workload
 * (--heartbeat 5: four in 22 s), each with both variants' RSS above 0; the
 * second, with --quiet, none. Each run is drawn again by `tide lab
 * --redraw` from its files alone, to the same script; a redraw of a bad
 * row, of a missing summary, or with a run's option, says what and draws
 * nothing. No assertion depends on how fast
 * the machine is.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "expect.h"
#include "helpers.h"
#include "lab/lab.h"
#include "lab/lab_impl.h"
#include "lab/runner_impl.h"
#include "lab/runner.h"
#include "tide/error.h"

static json_t *variant_named(json_t *doc, const char *name)
{
    json_t *vars = json_object_get(doc, "variants"), *v;
    size_t i;
    json_array_foreach(vars, i, v)
        if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0) return v;
    fail_msg("expected a variant '%s' in the summary", name);
    return NULL;
}

/* Run tide ARGS (a lab run with --json) to exit status 0; its document.
 * Its stderr goes to the file `err` (NULL: /dev/null). */
static json_t *lab_json(const char *args, const char *err_path)
{
    json_error_t err;
    json_t *doc;
    char *out, cmd[4096];
    int status;

    snprintf(cmd, sizeof cmd, "'%s/tide' %s 2>'%s'", th_bin_dir(), args, err_path ? err_path : "/dev/null");
    status = th_run(cmd, &out);
    if (status != 0) fail_msg("tide %s: expected exit status 0, got %d; output: %.400s", args, status, out);
    doc = json_loads(out, 0, &err);
    if (doc == NULL) fail_msg("expected one JSON object, got a parse error at line %d: %s", err.line, err.text);
    free(out);
    return doc;
}

/* The RSS in MiB a heartbeat line gives `variant` ("... RSS: trim 5.8 MiB
 * notrim 5.9 MiB"); -1 when the line does not name it with a figure. */
static double heartbeat_rss(const char *line, const char *variant)
{
    char pat[64];
    const char *p = strstr(line, " RSS:");
    double mib;

    snprintf(pat, sizeof pat, " %s ", variant);
    while (p && (p = strstr(p, pat)) != NULL) {
        if (sscanf(p + strlen(pat), "%lf MiB", &mib) == 1) return mib;
        p++;
    }
    return -1;
}

/* The heartbeat lines of a run of `duration` s with --heartbeat
 * `period` (period 0: --quiet): one per period, at k x period of the
 * workload's clock for k = 1 .. floor(duration / period), in order, each
 * naming every variant with an RSS above 0. */
static void expect_heartbeats(const char *err_path, unsigned duration, unsigned period,
                              const char *const *variants, size_t nv)
{
    char *err = th_slurp(err_path), *line, *save = NULL;
    unsigned want = period ? duration / period : 0, got = 0;

    for (line = strtok_r(err, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        double elapsed, planned;
        if (strstr(line, ", repetition ") == NULL || strstr(line, " RSS:") == NULL) continue;
        if (sscanf(line, "tide lab: %lf/%lf s", &elapsed, &planned) != 2)
            fail_msg("expected a heartbeat to begin 'tide lab: T/D s', got '%s'", line);
        got++;
        if (period == 0) fail_msg("expected no heartbeat with --quiet, got '%s'", line);
        if (planned != duration) fail_msg("expected the planned %u s in '%s'", duration, line);
        if (elapsed + 0.5 < (double)(got * period))
            fail_msg("expected heartbeat %u at %u s of the workload or later, got '%s'", got, got * period, line);
        for (size_t i = 0; i < nv; i++)
            if (!(heartbeat_rss(line, variants[i]) > 0))
                fail_msg("expected %s's RSS above 0 in heartbeat '%s'", variants[i], line);
    }
    if (got != want)
        fail_msg("expected %u heartbeat lines (%u s, one every %u s), got %u in: %.800s", want, duration,
                 period, got, th_slurp(err_path));
    free(err);
}

/* The heartbeat lines by the workload's clock (runner.c invariant 5): a
 * loop that comes late writes every beat it missed, each at its own
 * k x period, none twice and none past the end; with --duration 0 the
 * planned time is the ledgers' (before: "30/0 s", and three lines at
 * the late loop's one time, "31/.."). */
static void heartbeats_are_at_k_times_the_period_and_a_late_loop_catches_up(void **state)
{
    tide_lab_plan o;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    unsigned done = 0;

    (void)state;
    assert_non_null(f);
    memset(&o, 0, sizeof o);
    o.heartbeat = 10, o.duration = 0, o.ledgers = 50, o.interval = 1, o.repeat = 2;
    done = ti_lab_heartbeats(f, &o, 2, 9.9, done, " a 1.0 MiB");    /* none due yet */
    assert_int_equal(done, 0);
    done = ti_lab_heartbeats(f, &o, 2, 31.7, done, " a 1.0 MiB");   /* late: three due */
    assert_int_equal(done, 3);
    done = ti_lab_heartbeats(f, &o, 2, 39.99, done, " a 2.0 MiB");  /* none new */
    assert_int_equal(done, 3);
    done = ti_lab_heartbeats(f, &o, 2, 40.0, done, " a 2.0 MiB");
    assert_int_equal(done, 4);
    o.duration = 45;                                                /* a planned end: no beat past it */
    done = ti_lab_heartbeats(f, &o, 2, 61.0, done, " a 3.0 MiB");
    assert_int_equal(done, 4);
    o.heartbeat = 0;                                                /* --quiet */
    assert_int_equal(ti_lab_heartbeats(f, &o, 2, 100.0, 0, ""), 0);
    fclose(f);
    expect_str(text, "tide lab: 10/50 s, repetition 2/2, RSS: a 1.0 MiB\n"
               "tide lab: 20/50 s, repetition 2/2, RSS: a 1.0 MiB\n"
               "tide lab: 30/50 s, repetition 2/2, RSS: a 1.0 MiB\n"
               "tide lab: 40/50 s, repetition 2/2, RSS: a 2.0 MiB\n", "the heartbeat lines");
    free(text);
}

/* DIR/NAME-rss.png and -rss.svg exist and are not empty. */
static void expect_chart(const char *dir, const char *name)
{
    static const char *const ext[] = { "png", "svg" };
    char path[2200];

    for (size_t i = 0; i < 2; i++) {
        char *data;
        snprintf(path, sizeof path, "%s/%s-rss.%s", dir, name, ext[i]);
        if (!th_exists(path)) fail_msg("expected gnuplot to draw %s", path);
        data = th_slurp(path);
        if (strlen(data) < 4) fail_msg("expected %s not to be empty", path);
        if (i == 1) expect_contains(data, "<svg", "the SVG chart's element");
        free(data);
    }
}

/* The panels' lines of a gnuplot script: its titles, variants and what
 * each plots, without the header comment. */
static char *gp_body(const char *gp)
{
    const char *p = strstr(gp, "set datafile");
    if (p == NULL) fail_msg("expected a gnuplot script, got '%.200s'", gp);
    return strdup(p);
}

/* `tide lab --redraw` of DIR/NAME draws the chart again from the files
 * alone: the charts removed first come back, and the script is the run's
 * (`run_gp`), title for title and plot for plot. */
static void expect_redrawn_alike(const char *dir, const char *name, const char *run_gp)
{
    char args[2400], path[2200], *out, *gp, *a, *b;
    int status;

    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s-rss.%s", dir, name, (const char *[]){ "png", "svg", "gp" }[i]);
        if (unlink(path) != 0) fail_msg("expected to remove %s", path);
    }
    snprintf(args, sizeof args, "lab --redraw --out %s --prefix %s", dir, name);
    status = th_run_tide(args, 1, &out);
    if (status != 0) fail_msg("tide %s: expected exit status 0, got %d: %s", args, status, out);
    expect_contains(out, "drawn: ", "the redraw's line");
    expect_chart(dir, name);
    snprintf(path, sizeof path, "%s/%s-rss.gp", dir, name);
    gp = th_slurp(path);
    a = gp_body(run_gp), b = gp_body(gp);
    if (strcmp(a, b) != 0) {
        size_t k = 0;
        while (a[k] && a[k] == b[k]) k++;
        fail_msg("expected the redrawn script to be the run's; they part at '%.120s' against '%.120s'",
                 a + (k > 40 ? k - 40 : 0), b + (k > 40 ? k - 40 : 0));
    }
    free(a), free(b), free(gp), free(out);
}

static void a_short_run_measures_both_variants_and_writes_its_files(void **state)
{
    static const char *const both[] = { "trim", "notrim" };
    char dir[2048], args[2400], path[2100];
    json_t *doc, *trim, *notrim;
    char *csv, *svg, *sweeps;

    (void)state;
    if (th_scratch_make(dir, sizeof dir) != 0) fail_msg("expected a scratch directory");
    snprintf(args, sizeof args, "lab --duration 22 --objects 200 --reads 100 --clients 2 "
             "--out %s --prefix smoke --heartbeat 5 --json", dir);
    snprintf(path, sizeof path, "%s/stderr", dir);
    doc = lab_json(args, path);
    expect_heartbeats(path, 22, 5, both, 2);

    trim = variant_named(doc, "trim");
    notrim = variant_named(doc, "notrim");
    if (json_integer_value(json_object_get(trim, "samples")) < 5)
        fail_msg("expected at least 5 RSS samples of trim in 22 s, got %" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(trim, "samples")));
    if (json_integer_value(json_object_get(notrim, "samples")) < 5)
        fail_msg("expected at least 5 RSS samples of notrim, got %" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(notrim, "samples")));
    if (json_integer_value(json_object_get(trim, "trims")) < 1)
        fail_msg("expected trim to record at least one trim in two sweep rounds, got %" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(trim, "trims")));
    expect_u64(json_integer_value(json_object_get(notrim, "trims")), 0, "notrim's trims");
    if (!json_is_integer(json_object_get(trim, "plateau_mean_rss_median_bytes")))
        fail_msg("expected trim's plateau_mean_rss_median_bytes to be a number");
    if (json_array_size(json_object_get(trim, "repetitions")) != 1)
        fail_msg("expected one repetition of trim");
    {   /* RSS against what the consumers count, after the plateau's sweeps */
        json_t *rep1 = json_array_get(json_object_get(trim, "repetitions"), 0);
        json_t *ratio = json_object_get(rep1, "anon_rss_per_counted_median");
        if (!json_is_real(ratio) && !json_is_null(ratio))
            fail_msg("expected anon_rss_per_counted_median to be a number or null");
    }

    snprintf(path, sizeof path, "%s/smoke-rss.csv", dir);
    csv = th_slurp(path);
    if (strncmp(csv, "rep,variant,port,t_s,rss_bytes,referenced_bytes\n", 48) != 0)
        fail_msg("expected the RSS CSV's header, got '%.60s'", csv);
    if (th_count(csv, "\n1,trim,") < 5 || th_count(csv, "\n1,notrim,") < 5)
        fail_msg("expected at least 5 CSV rows of each variant, got %zu trim and %zu notrim",
                 th_count(csv, "\n1,trim,"), th_count(csv, "\n1,notrim,"));
    snprintf(path, sizeof path, "%s/smoke-sweeps.csv", dir);
    sweeps = th_slurp(path);
    expect_contains(sweeps, "rep,variant,seq,t_s,sweep_ms,freed_bytes,trimmed,", "the sweeps CSV's header");
    expect_contains(sweeps, ",minflt,majflt,consumer_bytes,anon_rss\n", "the sweeps CSV's last columns");
    {   /* every sweep row ends with the two figures the node reported */
        const char *row = strstr(sweeps, "\n1,trim,");
        const char *end = row ? strchr(row + 1, '\n') : NULL;
        if (row == NULL || end == NULL || end[-1] == ',' || end[-2] == ',')
            fail_msg("expected trim's first sweep row to end with consumer_bytes and anon_rss: %.200s",
                     row ? row + 1 : sweeps);
    }
    if (th_count(sweeps, ",trim,") < 1) fail_msg("expected a sweep row of trim in %s", path);
    snprintf(path, sizeof path, "%s/smoke-rss.gp", dir);
    svg = th_slurp(path);
    expect_contains(svg, "rss = \"smoke-rss.csv\"", "the script reading the RSS CSV beside it");
    expect_contains(svg, "set key outside", "the key outside the panels");
    expect_contains(svg, "V = \"trim\"", "trim's panel");
    expect_contains(svg, "V = \"notrim\"", "notrim's panel");
    expect_contains(svg, "live: bytes the consumers count", "the live line (the sweeps report consumer_bytes)");
    expect_contains(svg, "anonymous RSS, at each sweep", "the anonymous RSS line (the sweeps report anon_rss)");
    if (strstr(svg, "memory limit") != NULL) fail_msg("expected no limit line in a run without a limit");
    expect_contains(json_string_value(json_object_get(doc, "chart")), "drawn", "the document's chart note");
    if (!json_is_true(json_object_get(doc, "valid"))) fail_msg("expected a valid run: no client thread ran late");
    expect_chart(dir, "smoke");

    expect_redrawn_alike(dir, "smoke", svg);

    snprintf(path, sizeof path, "%s/smoke-disk.csv", dir);     /* no rotating variant: the files of old */
    if (th_exists(path)) fail_msg("expected no %s without a rotating variant", path);
    if (json_object_get(json_object_get(doc, "files"), "disk_csv") != NULL)
        fail_msg("expected no files.disk_csv without a rotating variant");
    if (json_object_get(json_array_get(json_object_get(trim, "repetitions"), 0), "rotation") != NULL)
        fail_msg("expected no rotation figures for trim");
    if (strstr(svg, "disk.csv") != NULL) fail_msg("expected no disk axis in the chart without rotation");

    free(csv);
    free(sweeps);
    free(svg);
    json_decref(doc);
    th_scratch_remove(dir);
    if (th_exists(dir)) fail_msg("removing %s failed", dir);
}

static json_int_t rep_int(json_t *variant, const char *obj, const char *key)
{
    json_t *rep = json_array_get(json_object_get(variant, "repetitions"), 0);
    json_t *v = json_object_get(obj ? json_object_get(rep, obj) : rep, key);
    if (!json_is_integer(v)) fail_msg("expected an integer %s%s%s in the repetition", obj ? obj : "", obj ? "." : "", key);
    return json_integer_value(v);
}

/* A variant with online delete beside a plain one: its rotations are
 * polled, its disk stays below the plain node's, and the files show both. */
static void a_rotating_variant_is_measured_beside_a_plain_one(void **state)
{
    char dir[2048], args[2600], path[2100];
    json_t *doc, *trim, *rot;
    char *disk, *rots, *svg;

    (void)state;
    if (th_scratch_make(dir, sizeof dir) != 0) fail_msg("expected a scratch directory");
    snprintf(args, sizeof args, "lab --duration 22 --objects 200 --reads 100 --clients 2 --variant trim "
             "--custom 'rot=--online-delete 1200 --generations 2 --trim-policy never' "
             "--out %s --prefix rot --heartbeat 5 --quiet --json", dir);
    snprintf(path, sizeof path, "%s/stderr", dir);
    doc = lab_json(args, path);
    expect_heartbeats(path, 22, 0, NULL, 0);    /* --quiet after --heartbeat: none */
    trim = variant_named(doc, "trim");
    rot = variant_named(doc, "rot");
    if (json_object_get(json_array_get(json_object_get(trim, "repetitions"), 0), "rotation") != NULL)
        fail_msg("expected no rotation figures for trim (no online delete)");
    if (rep_int(rot, "rotation", "rotations") < 2)
        fail_msg("expected rot to rotate at least twice (5000 objects or more against a trigger of 1200), got %"
                 JSON_INTEGER_FORMAT, rep_int(rot, "rotation", "rotations"));
    if (rep_int(rot, "rotation", "dropping") < 1) fail_msg("expected a rotation of rot to drop a generation");
    if (rep_int(rot, "rotation", "written_bytes") <= 0) fail_msg("expected rot's written bytes to be counted");
    if (rep_int(rot, "rotation", "last_disk_bytes") >= rep_int(rot, "rotation", "written_bytes"))
        fail_msg("expected rot's disk at the end (%" JSON_INTEGER_FORMAT ") below what it was sent (%"
                 JSON_INTEGER_FORMAT ")", rep_int(rot, "rotation", "last_disk_bytes"),
                 rep_int(rot, "rotation", "written_bytes"));
    snprintf(path, sizeof path, "%s/rot-disk.csv", dir);
    disk = th_slurp(path);
    expect_contains(disk, "rep,variant,t_s,disk_bytes,rotations\n", "the disk CSV's header");
    if (th_count(disk, "\n1,trim,") < 5 || th_count(disk, "\n1,rot,") < 5)
        fail_msg("expected disk samples of both nodes, got %zu trim and %zu rot",
                 th_count(disk, "\n1,trim,"), th_count(disk, "\n1,rot,"));
    snprintf(path, sizeof path, "%s/rot-rotations.csv", dir);
    rots = th_slurp(path);
    if (th_count(rots, "\n1,rot,") < 2) fail_msg("expected at least 2 rotation rows of rot in %s", path);
    if (th_count(rots, "\n1,trim,") != 0) fail_msg("expected no rotation rows of trim in %s", path);
    snprintf(path, sizeof path, "%s/rot-rss.gp", dir);
    svg = th_slurp(path);
    expect_contains(svg, "disk = \"rot-disk.csv\"", "the disk CSV read by the chart");
    expect_contains(svg, "rotations using", "the rotations drawn");
    expect_chart(dir, "rot");
    expect_redrawn_alike(dir, "rot", svg);
    free(disk);
    free(rots);
    free(svg);
    json_decref(doc);
    th_scratch_remove(dir);
}

static void bad_options_exit_2_and_name_what_was_wrong(void **state)
{
    static const struct { const char *args, *said; } cases[] = {
        { "lab --duration abc", "--duration 'abc'" },
        { "lab --variant trim,bogus", "'bogus' is not a variant" },
        { "lab --repeat 0", "--repeat '0'" },
        { "lab --sweep-interval 5", "--sweep-interval '5'" },
        { "lab --frobnicate", "unknown option '--frobnicate'" },
        { "lab --warmup 50 --duration 40", "--warmup" },
        { "lab --custom nonsense", "--custom 'nonsense'" },
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out;
        int status = th_run_tide(cases[i].args, 1, &out);

        if (status != 2) fail_msg("tide %s: expected exit status 2, got %d: %s", cases[i].args, status, out);
        expect_contains(out, cases[i].said, cases[i].args);
        free(out);
    }
}

/* A redraw reads a run's files and nothing else: a row that does not
 * parse names its file and line, a missing summary names its path, and
 * an option of a run beside --redraw is refused; none writes a chart. */
static void a_redraw_of_bad_files_says_which_and_draws_nothing(void **state)
{
    static const char summary[] = "{\"command\": \"tide lab\", \"baseline\": \"notrim\", \"settings\": "
                                  "{\"warmup_s\": 2, \"duration_s\": 10, \"repeat\": 1}}";
    static const char sweeps[] = "rep,variant,seq,t_s,sweep_ms,freed_bytes,trimmed,trim_rc,rss_before,rss_after,"
                                 "rss_delta,duration_ms,minflt,majflt\n";
    static const char rss[] = "rep,variant,port,t_s,rss_bytes,referenced_bytes\n"
                              "1,trim,1,0.5,1048576,\n"
                              "1,trim,1,1.5,lots,\n";
    char dir[2048], path[2200], args[2400], *out;
    int status;

    (void)state;
    if (th_scratch_make(dir, sizeof dir) != 0) fail_msg("expected a scratch directory");
    snprintf(args, sizeof args, "lab --redraw --out %s --prefix bad", dir);
    status = th_run_tide(args, 1, &out);
    if (status != 1) fail_msg("expected exit status 1 with no summary, got %d: %s", status, out);
    expect_contains(out, "bad-summary.json", "the missing summary named");
    free(out);

    snprintf(path, sizeof path, "%s/bad-summary.json", dir);
    assert_int_equal(th_write_file(path, summary, strlen(summary)), 0);
    snprintf(path, sizeof path, "%s/bad-sweeps.csv", dir);
    assert_int_equal(th_write_file(path, sweeps, strlen(sweeps)), 0);
    snprintf(path, sizeof path, "%s/bad-rss.csv", dir);
    assert_int_equal(th_write_file(path, rss, strlen(rss)), 0);
    status = th_run_tide(args, 1, &out);
    if (status != 1) fail_msg("expected exit status 1 for a bad row, got %d: %s", status, out);
    expect_contains(out, "bad-rss.csv:3: rss_bytes", "the bad row's file, line and column");
    free(out);
    snprintf(path, sizeof path, "%s/bad-rss.gp", dir);
    if (th_exists(path)) fail_msg("expected no chart script from a file that does not parse");

    snprintf(args, sizeof args, "lab --redraw --out %s --prefix bad --duration 5", dir);
    status = th_run_tide(args, 1, &out);
    if (status != 2) fail_msg("expected exit status 2 for --duration beside --redraw, got %d: %s", status, out);
    expect_contains(out, "--redraw takes only --out and --prefix", "why --duration was refused");
    expect_contains(out, "not --duration", "the option named");
    free(out);
    th_scratch_remove(dir);
}

static void a_missing_tided_is_an_error_that_says_so(void **state)
{
    char *out;
    int status;
    (void)state;
    status = th_run_tide("lab --tided /nonexistent/tided --duration 5", 1, &out);
    if (status != 1) fail_msg("expected exit status 1 for a missing tided, got %d: %s", status, out);
    expect_contains(out, "tided not found at /nonexistent/tided", "the missing tided's message");
    free(out);
}

/* Every op of ledgers 0..9 of a and b, and their values, compared; the
 * number of ops that differ. */
static size_t ops_that_differ(const tide_lab_workload *a, const tide_lab_workload *b)
{
    static uint8_t va[4096], vb[4096];
    size_t differ = 0;

    for (uint64_t L = 0; L < 10; L++) {
        size_t n = tide_lab_ledger_ops(a, L);
        if (tide_lab_ledger_ops(b, L) != n) { differ += n; continue; }
        for (size_t i = 0; i < n; i++) {
            tide_lab_op x, y;
            memset(&x, 0, sizeof x);      /* the padding too, for memcmp */
            memset(&y, 0, sizeof y);
            tide_lab_ledger_op(a, L, i, &x);
            tide_lab_ledger_op(b, L, i, &y);
            if (memcmp(&x, &y, sizeof x) != 0) { differ++; continue; }
            if (x.kind != TIDE_LAB_PUT) continue;
            tide_lab_value_fill(a, &x, va);
            tide_lab_value_fill(b, &y, vb);
            differ += memcmp(va, vb, x.len) != 0;
        }
    }
    return differ;
}

static void the_workload_is_the_same_for_the_same_seed(void **state)
{
    tide_lab_workload one, two, other;
    size_t differ;

    (void)state;
    tide_lab_workload_init(&one);          /* two workloads made apart */
    one.seed = 42;
    tide_lab_workload_init(&two);
    two.seed = 42;
    tide_lab_workload_init(&other);
    other.seed = 43;
    differ = ops_that_differ(&one, &two);
    if (differ != 0) fail_msg("expected two workloads of seed 42 to send the same ops, %zu differ", differ);
    differ = ops_that_differ(&one, &other);
    if (differ == 0) fail_msg("expected seeds 42 and 43 to give different ops, every op of 10 ledgers is the same");
}

static void a_ledger_holds_its_puts_and_gets_of_earlier_objects(void **state)
{
    tide_lab_workload w;
    tide_lab_op a, b;
    size_t puts = 0, gets = 0, inner = 0;

    (void)state;
    tide_lab_workload_init(&w);
    w.seed = 42;
    for (size_t i = 0; i < tide_lab_ledger_ops(&w, 7); i++) {
        tide_lab_ledger_op(&w, 7, i, &a);
        if (a.kind == TIDE_LAB_PUT) {
            puts++;
            inner += a.len >= 500 && a.len <= 550;
            if (a.len < 100 || a.len > 2048) fail_msg("expected a size from 100 to 2048, got %u", a.len);
        } else {
            gets++;
            tide_lab_object(&w, a.ledger, a.index, &b);
            if (a.ledger >= 7 || b.len != a.len || memcmp(a.key, b.key, sizeof a.key) != 0)
                fail_msg("GET %zu of ledger 7 must name an earlier object with its own key and size", i);
        }
    }
    expect_u64(puts, tide_lab_ledger_objects(&w, 7), "PUTs in a ledger");
    expect_u64(gets, w.reads, "GETs in a ledger");
    if (inner < puts / 2) fail_msg("expected most objects to be about 525 bytes, got %zu of %zu", inner, puts);
}

/* The variant table (src/lab/variant.c) is the one the parser, the
 * message and the help read: each built-in parses, an unknown name is
 * answered with the table's names, and `tide help lab` lists the table. */
static void the_built_in_variants_come_from_one_table(void **state)
{
    static const char *const names[] = { "trim", "notrim", "every2", "every4", "freed8m", "freed64m",
                                         "freepct10", "mmap16k", "jemalloc", "noarena", "jemalloc-noarena",
                                         "tcmalloc", "tcmalloc-noarena", "mimalloc", "mimalloc-noarena", "rot2",
                                         "rot2-notrim", "rot4", "limit64", "limit128", "limit256", "unlimited",
                                         NULL };
    char list[512], *help = NULL;
    size_t helplen = 0;
    FILE *f;
    char *out;

    (void)state;
    for (const char *const *n = names; *n; n++) {
        tide_lab_variant v;
        const char *spec = tide_lab_builtin_spec(*n);
        if (spec == NULL) fail_msg("expected '%s' to be a built-in variant", *n);
        if (tide_lab_variant_parse(&v, *n, spec, "/x/libjemalloc.so.2") != 0)
            fail_msg("built-in '%s': its spec '%s' does not parse: %s", *n, spec, tide_last_error());
        if (v.nargs + v.nenv == 0) fail_msg("built-in '%s' sets nothing", *n);
        tide_lab_variant_free(&v);
    }
    if (tide_lab_builtin_spec("bogus") != NULL) fail_msg("expected 'bogus' not to be a built-in");
    assert_int_equal(tide_lab_variant_names(list, sizeof list), 0);
    expect_str(list, "trim, notrim, every2, every4, freed8m, freed64m, freepct10, mmap16k, jemalloc, noarena, "
               "jemalloc-noarena, tcmalloc, tcmalloc-noarena, mimalloc, mimalloc-noarena, rot2, "
               "rot2-notrim, rot4, limit64, limit128, limit256, unlimited",
               "the built-in names in the table's order");

    th_run_tide("lab --variant bogus", 1, &out);
    expect_contains(out, list, "the message for an unknown variant");
    free(out);

    f = open_memstream(&help, &helplen);
    assert_non_null(f);
    assert_int_equal(tide_lab_variant_help(f), 0);
    fclose(f);
    th_run_tide("lab --help", 0, &out);
    expect_contains(out, help, "tide help lab's VARIANTS lines");
    free(out);
    free(help);
}

/* A series of 31 s by hand: RSS 100 MiB, 80 MiB from 12 s; disk growing
 * 1 MiB a second to 10 MiB, 5 MiB at 11 s and a quarter MiB a second on; rotations 1 (at 10 s, 1 s long,
 * dropping, trimmed), 2 (at 29 s: too late for a step), 3 (failed). */
static void rotation_series(tide_lab_series *x, int rotating)
{
    const double MiB = 1048576.0;
    tide_lab_rotation r;

    memset(x, 0, sizeof *x);
    snprintf(x->variant, sizeof x->variant, "rot<2>");
    x->rep = 1;
    x->rotating = rotating;
    x->written_bytes = (uint64_t)(200 * MiB);
    for (int t = 0; t <= 30; t++) {
        tide_lab_sample p = { .t = t, .rss = (uint64_t)((t >= 12 ? 80 : 100) * MiB),
                              .disk = (uint64_t)((t >= 11 ? (t - 11) * 0.25 + 5 : t) * MiB + 4096) };
        assert_int_equal(ti_lab_series_add_sample(x, &p), 0);
    }
    memset(&r, 0, sizeof r);
    r.seq = 3; r.t = 20; r.rc = TIDE_EIO;                    /* out of order, failed */
    assert_int_equal(ti_lab_series_add_rotation(x, &r), 0);
    memset(&r, 0, sizeof r);
    r.seq = 1; r.t = 10; r.total_ns = 1000000000; r.dropped = 1; r.trimmed = 1; r.trim_rss_delta = (int64_t)(-20 * MiB);
    r.create_ns = 2000000; r.drop_ns = 50000000;
    assert_int_equal(ti_lab_series_add_rotation(x, &r), 0);
    assert_int_equal(ti_lab_series_add_rotation(x, &r), 0);  /* seen twice, kept once */
    r.seq = 2; r.t = 29; r.create_ns = 4000000; r.drop_ns = 70000000; r.trimmed = 0;
    assert_int_equal(ti_lab_series_add_rotation(x, &r), 0);
}

static void the_rotation_figures_read_rss_and_disk_around_each_rotation(void **state)
{
    const double MiB = 1048576.0;
    tide_lab_series x;
    tide_lab_rotfig f;
    uint64_t before, after;

    (void)state;
    rotation_series(&x, 1);
    expect_u64(x.nrotations, 3, "rotations kept (one seen twice)");
    expect_u64(x.rotations[0].seq, 1, "the first by seq");
    expect_u64(x.rotations[2].seq, 3, "the last by seq");
    assert_int_equal(ti_lab_rotation_rss(&x, &x.rotations[0], &before, &after), 0);
    expect_u64(before, (uint64_t)(100 * MiB), "RSS at the rotation's start");
    expect_u64(after, (uint64_t)(80 * MiB), "RSS 3 s after its end (14 s)");
    if (ti_lab_rotation_rss(&x, &x.rotations[1], &before, &after) == 0)
        fail_msg("a rotation at 29 s of a 30 s series has no sample 3 s after its end, yet got a step");
    assert_int_equal(ti_lab_rotation_figures(&x, 15, &f), 0);
    expect_u64(f.steps, 0, "RSS steps of rotations after a warm-up of 15 s (none)");
    expect_u64(f.dropping, 2, "rotations that dropped a generation, the warm-up's too");
    assert_int_equal(ti_lab_rotation_figures(&x, 0, &f), 0);
    expect_u64(f.rotations, 2, "rotations done");
    expect_u64(f.failures, 1, "failed rotations");
    expect_u64(f.dropping, 2, "rotations that dropped a generation");
    expect_u64(f.steps, 1, "RSS steps measured (one too late)");
    if (f.step_median != -20 * MiB) fail_msg("expected an RSS step of -20 MiB, got %.0f bytes", f.step_median);
    if (f.trim_release_median != 20 * MiB) fail_msg("expected a trim release of 20 MiB, got %.0f", f.trim_release_median);
    if (f.peak_disk != 10 * MiB + 4096) fail_msg("expected a peak disk of 10 MiB + 4096, got %.0f", f.peak_disk);
    if (f.last_disk != 9.75 * MiB + 4096) fail_msg("expected the last disk sample, 9.75 MiB + 4096, got %.0f", f.last_disk);
    if (f.create_ms != 3.0 || f.drop_ms != 60.0)
        fail_msg("expected medians of 3 ms (create) and 60 ms (drop), got %g and %g", f.create_ms, f.drop_ms);
    ti_lab_series_free(&x);
}

static void limit_series(tide_lab_series *x, const char *name, uint64_t limit, uint64_t gets, int status);

/* Write the series' CSVs and chart script into dir as NAME; the script. */
static char *chart_files(const char *dir, const char *name, tide_lab_series *x, size_t n, const char *base)
{
    tide_lab_chart ch = { "a title", "tide lab --a-long-subtitle that wraps", 5, 0, 0, name, base };
    static const char *const what[] = { "rss.csv", "sweeps.csv", "disk.csv", "rotations.csv", "rss.gp" };
    char path[2200];

    for (size_t i = 0; i < 5; i++) {
        FILE *f;
        snprintf(path, sizeof path, "%s/%s-%s", dir, name, what[i]);
        assert_non_null(f = fopen(path, "w"));
        assert_int_equal(i == 0 ? ti_lab_write_rss_csv(f, x, n) : i == 1 ? ti_lab_write_sweeps_csv(f, x, n)
                         : i == 2 ? ti_lab_write_disk_csv(f, x, n) : i == 3 ? ti_lab_write_rotations_csv(f, x, n)
                         : ti_lab_write_gp(f, x, n, &ch), 0);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/%s-rss.gp", dir, name);
    return th_slurp(path);
}

/* The chart's script draws through gnuplot, with the disk axis only for a
 * rotating series, the limit and live lines only when the data has them,
 * and says so when gnuplot is missing. */
static void the_chart_script_draws_what_the_data_holds(void **state)
{
    tide_lab_series x[2];
    tide_lab_sweep w;
    char dir[2048], *gp;

    (void)state;
    if (th_scratch_make(dir, sizeof dir) != 0) fail_msg("expected a scratch directory");
    rotation_series(&x[0], 1);
    gp = chart_files(dir, "rot", x, 1, NULL);
    expect_contains(gp, "set key outside", "the key outside the panels");
    expect_contains(gp, "axes x1y2", "the disk on the right axis");
    expect_contains(gp, "rotations using", "the rotations drawn");
    if (strstr(gp, "memory limit") || strstr(gp, "live: ") || strstr(gp, "anonymous RSS"))
        fail_msg("expected no limit, live or anonymous line without their data");
    assert_int_equal(ti_lab_gnuplot(dir, "rot-rss.gp"), 0);
    expect_chart(dir, "rot");
    free(gp);
    {
        char path[2200], *csv;
        snprintf(path, sizeof path, "%s/rot-disk.csv", dir);
        csv = th_slurp(path);
        expect_contains(csv, "rep,variant,t_s,disk_bytes,rotations\n1,rot<2>,0.000,4096,0\n", "the disk CSV's start");
        expect_contains(csv, "\n1,rot<2>,10.000,10489856,1\n", "a rotation counted from its start");
        expect_contains(csv, "\n1,rot<2>,30.000,10227712,2\n", "the failed one not counted");
        free(csv);
    }
    ti_lab_series_free(&x[0]);

    limit_series(&x[0], "limit64", 64 * 1048576ull, 3000, 1);
    limit_series(&x[1], "unlimited", 0, 4000, 0);
    memset(&w, 0, sizeof w);
    w.seq = 1, w.t = 0.5, w.trimmed = 1, w.rss_before = 60u << 20, w.rss_after = 52u << 20;
    w.rss_delta = -(8 << 20), w.consumer_bytes = 30u << 20, w.anon_rss = 50u << 20;
    assert_int_equal(ti_lab_series_add_sweep(&x[0], &w), 0);
    gp = chart_files(dir, "lim", x, 2, "unlimited");
    expect_contains(gp, "limit 64 MiB", "the limit line's label");
    expect_contains(gp, "live: bytes the consumers count", "the live line");
    expect_contains(gp, "anonymous RSS, at each sweep", "the anonymous RSS line beside it");
    expect_contains(gp, "with candlesticks lc rgb \"#1a9641\"", "the lowering trims' green candles");
    expect_contains(gp, "--a-long-subtitle", "the subtitle");
    if (strstr(gp, "axes x1y2")) fail_msg("expected no disk axis without a rotating series");
    assert_int_equal(ti_lab_gnuplot(dir, "lim-rss.gp"), 0);
    expect_chart(dir, "lim");
    setenv("TIDE_GNUPLOT", "/nonexistent/gnuplot", 1);
    assert_int_equal(ti_lab_gnuplot(dir, "lim-rss.gp"), 1);      /* missing: said, not failed */
    unsetenv("TIDE_GNUPLOT");
    free(gp);
    ti_lab_series_free(&x[0]);
    ti_lab_series_free(&x[1]);
    th_scratch_remove(dir);
}

/* n samples a second from 0: base + slope x t + noise (a fixed pattern of
 * +-amp). */
static void plateau_series(tide_lab_series *x, int n, double base, double slope, double amp)
{
    static const double pattern[] = { 0.9, -0.3, -1.0, 0.4, 0.7, -0.8, 0.1, -0.5, 1.0, -0.2, 0.6 };

    memset(x, 0, sizeof *x);
    snprintf(x->variant, sizeof x->variant, "v");
    x->rep = 1;
    for (int t = 0; t < n; t++) {
        tide_lab_sample p = { .t = t, .rss = (uint64_t)(base + slope * t + amp * pattern[t % 11]) };
        assert_int_equal(ti_lab_series_add_sample(x, &p), 0);
    }
}

/* n samples a second from 0 of the lab's default wave (a period of 120 s,
 * 57 to 100 MiB) on a ramp of `slope` bytes a second. */
static void wave_series(tide_lab_series *x, int n, double slope)
{
    const double MiB = 1048576.0;

    memset(x, 0, sizeof *x);
    snprintf(x->variant, sizeof x->variant, "v");
    x->rep = 1;
    for (int t = 0; t < n; t++) {
        tide_lab_sample p = { .t = t, .rss = (uint64_t)((78.5 + 21.5 * sin(2 * M_PI * t / 120.0)) * MiB + slope * t) };
        assert_int_equal(ti_lab_series_add_sample(x, &p), 0);
    }
}

/* The plateau test: a ramp is no plateau, a flat noisy line is one, a wave
 * is one when its window holds whole waves (part of one reads as a drift),
 * a wave on a ramp is none, a short run cannot tell. */
static void a_ramp_is_no_plateau_and_a_flat_noisy_line_is_one(void **state)
{
    const double MiB = 1048576.0;
    tide_lab_series x;
    tide_lab_plateau p;

    (void)state;
    plateau_series(&x, 120, 27 * MiB, 1.65 * MiB, 0.5 * MiB);     /* 27 -> 225 MiB in 120 s */
    ti_lab_plateau_test(&x, 24, 0, &p);
    if (p.state != TIDE_LAB_PLATEAU_NONE) fail_msg("expected a ramp to be no plateau, got %d (drift %.1f MiB, noise %.1f)",
                                                 p.state, p.drift / MiB, p.noise / MiB);
    if (p.drift < 40 * MiB) fail_msg("expected a drift of about 50 MiB over the last third, got %.1f", p.drift / MiB);
    ti_lab_series_free(&x);
    plateau_series(&x, 300, 100 * MiB, 0, 3 * MiB);                 /* flat, +-3 MiB */
    ti_lab_plateau_test(&x, 60, 0, &p);
    if (p.state != TIDE_LAB_PLATEAU_REACHED) fail_msg("expected a flat noisy line to be a plateau, got %d (drift %.2f MiB, noise %.2f)",
                                                    p.state, p.drift / MiB, p.noise / MiB);
    ti_lab_series_free(&x);
    plateau_series(&x, 300, 100 * MiB, 0.004 * MiB, 0);               /* a slow creep, 0.3 MiB over the third */
    ti_lab_plateau_test(&x, 60, 0, &p);
    if (p.state != TIDE_LAB_PLATEAU_REACHED) fail_msg("expected a creep under 2%% of the level to be a plateau");
    ti_lab_series_free(&x);
    memset(&x, 0, sizeof x);
    for (int t = 0; t < 600; t++) {                                  /* the waved load: 57 to 100 MiB */
        tide_lab_sample s = { .t = t, .rss = (uint64_t)((78.5 + 21.5 * sin(2 * M_PI * t / 120.0)) * MiB) };
        assert_int_equal(ti_lab_series_add_sample(&x, &s), 0);
    }
    ti_lab_plateau_test(&x, 120, 120, &p);
    if (p.state != TIDE_LAB_PLATEAU_REACHED) fail_msg("expected a steady wave to be a plateau (drift %.1f, noise %.1f MiB)",
                                                    p.drift / MiB, p.noise / MiB);
    if (p.span != 240) fail_msg("expected the window to be the last two whole waves (240 s), got %.0f s", p.span);
    ti_lab_series_free(&x);
    wave_series(&x, 400, 0);                      /* a third of 93 s: the falling part of a wave */
    ti_lab_plateau_test(&x, 120, 0, &p);
    if (p.state != TIDE_LAB_PLATEAU_NONE)
        fail_msg("expected a line fitted to part of a wave to read a drift (drift %.1f, noise %.1f MiB)",
                 p.drift / MiB, p.noise / MiB);
    ti_lab_plateau_test(&x, 120, 120, &p);
    if (p.state != TIDE_LAB_PLATEAU_REACHED || p.span != 120)
        fail_msg("expected one whole wave, fitted with its harmonic, to be a plateau (state %d, %.0f s, drift %.1f, "
                 "noise %.1f MiB)", p.state, p.span, p.drift / MiB, p.noise / MiB);
    ti_lab_series_free(&x);
    wave_series(&x, 600, 0.2 * MiB);              /* the same wave on a ramp of 0.2 MiB/s */
    ti_lab_plateau_test(&x, 120, 120, &p);
    if (p.state != TIDE_LAB_PLATEAU_NONE || fabs(p.drift - 48 * MiB) > 2 * MiB)
        fail_msg("expected a wave on a ramp to be no plateau with a drift of 48 MiB over 240 s (state %d, %.1f MiB)",
                 p.state, p.drift / MiB);
    ti_lab_series_free(&x);
    wave_series(&x, 200, 0);                      /* 80 s after the warm-up: less than one wave */
    ti_lab_plateau_test(&x, 120, 120, &p);
    if (p.state != TIDE_LAB_PLATEAU_UNKNOWN || p.span != 0)
        fail_msg("expected less than one whole wave to be too short to tell (state %d, %.0f s)", p.state, p.span);
    ti_lab_series_free(&x);
    plateau_series(&x, 20, 10 * MiB, 0, 0);
    ti_lab_plateau_test(&x, 4, 0, &p);
    if (p.state != TIDE_LAB_PLATEAU_UNKNOWN) fail_msg("expected 20 s to be too short to tell (%zu samples in the third)",
                                                    p.samples);
    ti_lab_series_free(&x);
}

/* A run of two variants by hand: flat lines 100 and 80 MiB, then the
 * same with the client threads late on 145 of 480 shares. */
static void a_run_whose_load_fell_behind_is_invalid_and_gives_no_verdict(void **state)
{
    const double MiB = 1048576.0;
    static tide_lab_plan plan;
    tide_lab_run run;
    tide_lab_series x[2];
    tide_lab_summary sum;

    (void)state;
    tide_lab_plan_init(&plan);
    plan.warmup = 60;
    assert_int_equal(tide_lab_plan_variants(&plan, "trim,notrim", NULL, 0), 0);
    plateau_series(&x[0], 300, 80 * MiB, 0, 1 * MiB);
    plateau_series(&x[1], 300, 100 * MiB, 0, 1 * MiB);
    snprintf(x[0].variant, sizeof x[0].variant, "trim");
    snprintf(x[1].variant, sizeof x[1].variant, "notrim");
    x[0].req.ledger_shares = x[1].req.ledger_shares = 480;
    x[0].req.late = x[1].req.late = 4;           /* under 1% */
    memset(&run, 0, sizeof run);
    run.plan = &plan;
    run.series = x;
    run.nseries = 2;
    assert_int_equal(tide_lab_summary_compute(&sum, &run), 0);
    expect_u64((uint64_t)sum.invalid, 0, "invalid with 4 of 480 late");
    expect_u64((uint64_t)sum.v[0].verdict, 1, "trim's verdict on two plateaus");
    expect_contains(sum.v[0].why, "trim: -20.0% against notrim", "trim's verdict");
    tide_lab_summary_free(&sum);

    x[0].req.late = x[1].req.late = 145;
    assert_int_equal(tide_lab_summary_compute(&sum, &run), 0);
    expect_u64((uint64_t)sum.invalid, 1, "invalid with 145 of 480 late");
    expect_u64(sum.late, 145, "late shares counted once a repetition");
    expect_u64((uint64_t)sum.v[0].verdict, 0, "a verdict on an invalid run");
    expect_contains(sum.v[0].why, "the run is invalid", "why trim has no verdict");
    tide_lab_summary_free(&sum);

    x[0].req.late = x[1].req.late = 0;
    ti_lab_series_free(&x[1]);
    plateau_series(&x[1], 300, 27 * MiB, 0.66 * MiB, 0.2 * MiB);      /* the baseline still rising */
    snprintf(x[1].variant, sizeof x[1].variant, "notrim");
    assert_int_equal(tide_lab_summary_compute(&sum, &run), 0);
    expect_u64((uint64_t)sum.v[0].verdict, 0, "a verdict against a ramp");
    expect_contains(sum.v[0].why, "notrim reached no plateau", "why trim has no verdict");
    expect_contains(sum.v[0].why, "run longer", "what to do");
    tide_lab_summary_free(&sum);
    ti_lab_series_free(&x[0]);
    ti_lab_series_free(&x[1]);
    tide_lab_plan_free(&plan);
}

/* What `ask` answers of a variant parsed from `spec`, with --node-args
 * `node_args`, must be `want` (named `what` in the failure). */
static void expect_variant_answer(const char *spec, const char *node_args,
                                  uint64_t (*ask)(const tide_lab_variant *, const char *), uint64_t want,
                                  const char *what)
{
    tide_lab_variant v;
    uint64_t got;

    assert_int_equal(tide_lab_variant_parse(&v, "x", spec, "/j.so"), 0);
    got = ask(&v, node_args);
    tide_lab_variant_free(&v);
    if (got != want)
        fail_msg("spec '%s' with --node-args '%s': %s %llu, expected %llu", spec, node_args ? node_args : "", what,
                 (unsigned long long)got, (unsigned long long)want);
}

static uint64_t ask_rotates(const tide_lab_variant *v, const char *node_args)
{
    return (uint64_t)tide_lab_variant_rotates(v, node_args);
}

/* Which variants the lab treats as rotating. */
static void a_variant_rotates_when_its_flags_turn_online_delete_on(void **state)
{
    static const struct { const char *spec, *node_args; int rotates; } cases[] = {
        { "--online-delete 5000", NULL, 1 }, { "--online-delete=manual", NULL, 1 },
        { "--online-delete 0", NULL, 0 }, { "TIDE_ONLINE_DELETE=100", NULL, 1 },
        { "TIDE_ONLINE_DELETE=0", NULL, 0 }, { "--trim-policy never", "--online-delete 10", 1 },
        { "--trim-policy never", "--generations 4", 0 }, { "--online-delete", NULL, 0 },
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_variant_answer(cases[i].spec, cases[i].node_args, ask_rotates, (uint64_t)cases[i].rotates, "rotates");
    for (const char *const *n = (const char *const[]){ "rot2", "rot2-notrim", "rot4", NULL }; *n; n++) {
        tide_lab_variant v;
        assert_int_equal(tide_lab_variant_parse(&v, *n, tide_lab_builtin_spec(*n), "/j.so"), 0);
        if (!tide_lab_variant_rotates(&v, NULL)) fail_msg("expected the built-in '%s' to rotate", *n);
        tide_lab_variant_free(&v);
    }
}

/* --object-size: every object not of the inner kind is within the range,
 * and the range is used, its ends included in what can come. */
static void the_object_sizes_follow_the_range_asked_for(void **state)
{
    tide_lab_workload w;
    tide_lab_op a;
    uint32_t lo = UINT32_MAX, hi = 0;

    (void)state;
    tide_lab_workload_init(&w);
    w.inner_pct = 0;
    w.size_min = 64 * 1024;
    w.size_max = 64 * 1024 + 7;
    for (uint64_t L = 0; L < 4; L++)
        for (size_t i = 0; i < tide_lab_ledger_ops(&w, L); i++) {
            tide_lab_ledger_op(&w, L, i, &a);
            if (a.len < w.size_min || a.len > w.size_max)
                fail_msg("ledger %llu op %zu: size %u, expected %u to %u", (unsigned long long)L, i, a.len,
                         w.size_min, w.size_max);
            if (a.len < lo) lo = a.len;
            if (a.len > hi) hi = a.len;
        }
    expect_u64(lo, w.size_min, "the smallest size drawn");
    expect_u64(hi, w.size_max, "the largest size drawn");
}

/* A series by hand for the memory-limit figures: 10 samples of RSS, two of
 * them above a 64 MiB limit, and the client threads' counts. */
static void limit_series(tide_lab_series *x, const char *name, uint64_t limit, uint64_t gets, int status)
{
    const uint64_t MiB = 1048576;

    memset(x, 0, sizeof *x);
    snprintf(x->variant, sizeof x->variant, "%s", name);
    x->rep = 1;
    x->limit_bytes = limit;
    for (int t = 0; t < 10; t++) {
        tide_lab_sample p = { .t = t * 0.1, .rss = (t == 4 || t == 7 ? 66 : 50 + t) * MiB };
        assert_int_equal(ti_lab_series_add_sample(x, &p), 0);
    }
    x->req = (tide_lab_requests){ .puts = 700, .puts_existing = 50, .puts_shed = 240, .put_errors = 10,
                                  .gets = gets, .gets_missing = 30, .get_ns = gets * 2000000,
                                  .load_s = 20, .status_read = status, .level_changes = 6,
                                  .rejected_writes = 240, .rejected_requests = 241, .status_limit = limit };
}

static void the_limit_figures_compare_rss_with_the_limit_and_gets_with_the_baseline(void **state)
{
    const double MiB = 1048576.0;
    tide_lab_series x, base;
    tide_lab_limfig f;
    const tide_lab_series *bases[2];
    tide_lab_series both[2];
    char *csv = NULL;
    size_t len = 0;
    FILE *out;

    (void)state;
    limit_series(&x, "limit64", 64 * 1048576ull, 3000, 1);
    limit_series(&base, "unlimited", 0, 4000, 0);
    assert_int_equal(ti_lab_limit_figures(&x, &base, &f), 0);
    if (f.limit != 64 * MiB || f.peak_rss != 66 * MiB) fail_msg("limit %g, peak %g: expected 64 and 66 MiB", f.limit, f.peak_rss);
    if (fabs(f.peak_per_limit - 66.0 / 64.0) > 1e-9) fail_msg("peak per limit %g, expected 66/64", f.peak_per_limit);
    expect_u64(f.samples, 10, "samples");
    expect_u64(f.samples_over, 2, "samples above the limit");
    if (f.puts_sent != 1000 || fabs(f.shed_pct - 24.0) > 1e-9) fail_msg("%g PUTs sent, %g%% shed: expected 1000, 24%%", f.puts_sent, f.shed_pct);
    if (fabs(f.get_rate - 150.0) > 1e-9 || fabs(f.get_rate_ratio - 0.75) > 1e-9)
        fail_msg("GET rate %g/s, ratio %g: expected 150/s and 0.75 (3000 against 4000 in 20 s)", f.get_rate, f.get_rate_ratio);
    if (fabs(f.get_mean_ms - 2.0) > 1e-9) fail_msg("GET mean %g ms, expected 2", f.get_mean_ms);
    if (f.level_changes != 6 || f.rejected_writes != 240) fail_msg("level changes %g, rejected %g: expected 6, 240", f.level_changes, f.rejected_writes);

    /* Nothing to measure is NAN, never 0 (limit.c invariant 1). */
    assert_int_equal(ti_lab_limit_figures(&base, NULL, &f), 0);
    if (!isnan(f.limit) || !isnan(f.peak_per_limit) || !isnan(f.get_rate_ratio) || !isnan(f.level_changes))
        fail_msg("without a limit, a baseline or a status: limit %g, peak/limit %g, ratio %g, changes %g; expected NAN",
                 f.limit, f.peak_per_limit, f.get_rate_ratio, f.level_changes);
    expect_u64(f.samples_over, 0, "samples over no limit");
    expect_u64(ti_lab_any_limited(&base, 1), 0, "a run without a limit");
    expect_u64(ti_lab_any_limited(&x, 1), 1, "a run with one");

    both[0] = x;
    both[1] = base;
    bases[0] = bases[1] = &base;
    assert_non_null(out = open_memstream(&csv, &len));
    assert_int_equal(ti_lab_write_limits_csv(out, both, 2, bases), 0);
    fclose(out);
    expect_contains(csv, "rep,variant,limit_bytes,peak_rss_bytes,peak_per_limit,samples,samples_over_limit,puts_sent,",
                    "the limits CSV's header");
    expect_contains(csv, "\n1,limit64,67108864,69206016,1.0312,10,2,1000,700,50,240,10,24.000,3000,30,0,20.000,150.00,"
                    "0.7500,2.000,6,240,241\n", "the limited node's line");
    expect_contains(csv, "\n1,unlimited,0,69206016,,10,0,1000,700,50,240,10,24.000,4000,30,0,20.000,200.00,1.0000,"
                    "2.000,,,\n", "the baseline's line: empty fields for what it has not");
    free(csv);
    ti_lab_series_free(&x);
    ti_lab_series_free(&base);
}

/* The limit a variant's node is told: its flags over its environment over
 * --node-args; an unparsable size is none. */
static void a_variant_has_the_memory_limit_its_flags_give(void **state)
{
    static const struct { const char *spec, *node_args; uint64_t limit; } cases[] = {
        { "--memory-limit 64MiB", NULL, 64ull << 20 }, { "--memory-limit=1GiB", NULL, 1ull << 30 },
        { "TIDE_MEMORY_LIMIT=256MiB", NULL, 256ull << 20 }, { "--trim-policy never", "--memory-limit 32MiB", 32ull << 20 },
        { "--memory-limit 128MiB", "--memory-limit 32MiB", 128ull << 20 }, { "--memory-limit lots", NULL, 0 },
        { "--memory-limit", NULL, 0 }, { "--trim-policy never", NULL, 0 },
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_variant_answer(cases[i].spec, cases[i].node_args, tide_lab_variant_limit, cases[i].limit, "limit");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_workload_is_the_same_for_the_same_seed),
        cmocka_unit_test(heartbeats_are_at_k_times_the_period_and_a_late_loop_catches_up),
        cmocka_unit_test(a_ledger_holds_its_puts_and_gets_of_earlier_objects),
        cmocka_unit_test(the_built_in_variants_come_from_one_table),
        cmocka_unit_test(the_rotation_figures_read_rss_and_disk_around_each_rotation),
        cmocka_unit_test(a_ramp_is_no_plateau_and_a_flat_noisy_line_is_one),
        cmocka_unit_test(a_redraw_of_bad_files_says_which_and_draws_nothing),
        cmocka_unit_test(a_run_whose_load_fell_behind_is_invalid_and_gives_no_verdict),
        cmocka_unit_test(the_chart_script_draws_what_the_data_holds),
        cmocka_unit_test(a_variant_rotates_when_its_flags_turn_online_delete_on),
        cmocka_unit_test(the_object_sizes_follow_the_range_asked_for),
        cmocka_unit_test(the_limit_figures_compare_rss_with_the_limit_and_gets_with_the_baseline),
        cmocka_unit_test(a_variant_has_the_memory_limit_its_flags_give),
        cmocka_unit_test(bad_options_exit_2_and_name_what_was_wrong),
        cmocka_unit_test(a_missing_tided_is_an_error_that_says_so),
        cmocka_unit_test(a_short_run_measures_both_variants_and_writes_its_files),
        cmocka_unit_test(a_rotating_variant_is_measured_beside_a_plain_one),
    };
    return th_run_group("tests", tests, NULL, NULL, th_teardown);
}
