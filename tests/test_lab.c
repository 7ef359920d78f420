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
 * SVG's shape (one polyline per variant), the workload's own determinism
 * (library calls), and that bad options exit 2 naming what was wrong. No
 * assertion depends on how fast the machine is.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "expect.h"
#include "helpers.h"
#include "lab/lab.h"

typedef struct run {
    char *out;
    int   status;
} run;

static void run_tide(run *r, const char *args, int merge_stderr)
{
    char cmd[2048];

    snprintf(cmd, sizeof cmd, "'%s/tide' %s %s", th_bin_dir(), args,
             merge_stderr ? "2>&1" : "2>/dev/null");
    r->status = th_run(cmd, &r->out);
}

static char *slurp(const char *path)
{
    char *s = th_read_text(path);
    if (s == NULL) fail_msg("expected the file %s to exist", path);
    return s;
}

static size_t count(const char *text, const char *part)
{
    size_t n = 0;
    for (const char *p = strstr(text, part); p; p = strstr(p + 1, part)) n++;
    return n;
}

static json_t *variant_named(json_t *doc, const char *name)
{
    json_t *vars = json_object_get(doc, "variants"), *v;
    size_t i;
    json_array_foreach(vars, i, v)
        if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0) return v;
    fail_msg("expected a variant '%s' in the summary", name);
    return NULL;
}

static void a_short_run_measures_both_variants_and_writes_its_files(void **state)
{
    char dir[] = "/tmp/tide-test-lab-XXXXXX", args[512], path[600];
    json_error_t err;
    json_t *doc, *trim, *notrim;
    char *csv, *svg, *sweeps;
    run r;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(args, sizeof args, "lab --duration 22 --objects 200 --reads 100 --clients 2 "
             "--out %s --prefix smoke --json", dir);
    run_tide(&r, args, 0);
    if (r.status != 0) fail_msg("tide %s: expected exit status 0, got %d; output: %.400s", args, r.status, r.out);
    doc = json_loads(r.out, 0, &err);
    if (doc == NULL) fail_msg("expected one JSON object, got a parse error at line %d: %s", err.line, err.text);
    free(r.out);

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

    snprintf(path, sizeof path, "%s/smoke-rss.csv", dir);
    csv = slurp(path);
    if (strncmp(csv, "rep,variant,port,t_s,rss_bytes,referenced_bytes\n", 48) != 0)
        fail_msg("expected the RSS CSV's header, got '%.60s'", csv);
    if (count(csv, "\n1,trim,") < 5 || count(csv, "\n1,notrim,") < 5)
        fail_msg("expected at least 5 CSV rows of each variant, got %zu trim and %zu notrim",
                 count(csv, "\n1,trim,"), count(csv, "\n1,notrim,"));
    snprintf(path, sizeof path, "%s/smoke-sweeps.csv", dir);
    sweeps = slurp(path);
    expect_contains(sweeps, "rep,variant,seq,t_s,sweep_ms,freed_bytes,trimmed,", "the sweeps CSV's header");
    if (count(sweeps, ",trim,") < 1) fail_msg("expected a sweep row of trim in %s", path);
    snprintf(path, sizeof path, "%s/smoke-rss.svg", dir);
    svg = slurp(path);
    if (strncmp(svg, "<svg", 4) != 0) fail_msg("expected the chart to start with <svg, got '%.20s'", svg);
    expect_u64(count(svg, "<polyline"), 2, "polylines in the chart (one per variant)");
    expect_contains(svg, "data-variant=\"trim\"", "the chart's trim line");
    expect_contains(svg, "data-variant=\"notrim\"", "the chart's notrim line");
    expect_contains(svg, "</svg>", "the chart's end");

    free(csv);
    free(sweeps);
    free(svg);
    json_decref(doc);
    snprintf(args, sizeof args, "rm -rf '%s'", dir);
    if (system(args) != 0) fail_msg("removing %s failed", dir);
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
        run r;
        run_tide(&r, cases[i].args, 1);
        if (r.status != 2) fail_msg("tide %s: expected exit status 2, got %d: %s", cases[i].args, r.status, r.out);
        expect_contains(r.out, cases[i].said, cases[i].args);
        free(r.out);
    }
}

static void a_missing_tided_is_an_error_that_says_so(void **state)
{
    run r;
    (void)state;
    run_tide(&r, "lab --tided /nonexistent/tided --duration 5", 1);
    if (r.status != 1) fail_msg("expected exit status 1 for a missing tided, got %d: %s", r.status, r.out);
    expect_contains(r.out, "tided not found at /nonexistent/tided", "the missing tided's message");
    free(r.out);
}

static void the_workload_is_the_same_for_the_same_seed(void **state)
{
    tide_lab_workload w;
    tide_lab_op a, b;
    size_t puts = 0, gets = 0, inner = 0;

    (void)state;
    tide_lab_workload_init(&w);
    w.seed = 42;
    for (size_t i = 0; i < tide_lab_ledger_ops(&w, 7); i++) {
        memset(&a, 0, sizeof a);      /* the padding too, for memcmp */
        memset(&b, 0, sizeof b);
        tide_lab_ledger_op(&w, 7, i, &a);
        tide_lab_ledger_op(&w, 7, i, &b);
        if (memcmp(&a, &b, sizeof a) != 0) fail_msg("op %zu of ledger 7 differs between two calls", i);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_workload_is_the_same_for_the_same_seed),
        cmocka_unit_test(bad_options_exit_2_and_name_what_was_wrong),
        cmocka_unit_test(a_missing_tided_is_an_error_that_says_so),
        cmocka_unit_test(a_short_run_measures_both_variants_and_writes_its_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
