/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_doctor.c: `tide doctor`'s analysis of a metrics page, and of the
 * disk side from /v1/status's "online_delete" object and the disk families
 * of the page (hand-written, with every figure checkable by hand; and an
 * older node's status without the object, and no status at all), and of
 * the archive from its tide_archive_* families and the status's "archive"
 * object (each finding, its absence, and a page without an archive).
 *
 * Pages come from a real node (rendered by node/metrics.c with settings
 * that leave a known consumer unbounded) and from hand-written text whose
 * figures make every number of the report checkable by hand. The pages that
 * are not a node's (Prometheus' own /metrics, HTML, an empty page, garbage)
 * are served to bin/tide doctor by a canned HTTP server on 127.0.0.1: a
 * thread of this test, stopped by the group's teardown whatever the outcome.
 * It answers /v1/status with a body of its own, or 404 when it has none.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "expect.h"
#include "helpers.h"
#include "client/doctor.h"
#include "node/metrics.h"
#include "node/node.h"
#include "promcheck.h"
#include "tide/error.h"

static const char page[] =
    "# HELP tide_allocator_info x\n# TYPE tide_allocator_info gauge\n"
    "tide_allocator_info{name=\"glibc\",version=\"2.36\"} 1\n"
    "# HELP process_resident_memory_bytes x\n# TYPE process_resident_memory_bytes gauge\n"
    "process_resident_memory_bytes 1073741824\n"
    "# HELP tide_glibc_in_use_bytes x\n# TYPE tide_glibc_in_use_bytes gauge\ntide_glibc_in_use_bytes 268435456\n"
    "# HELP tide_glibc_mmap_bytes x\n# TYPE tide_glibc_mmap_bytes gauge\ntide_glibc_mmap_bytes 268435456\n"
    "# HELP tide_allocator_free_bytes x\n# TYPE tide_allocator_free_bytes gauge\n"
    "tide_allocator_free_bytes 402653184\n"
    "# HELP tide_memory_consumer_bytes x\n# TYPE tide_memory_consumer_bytes gauge\n"
    "tide_memory_consumer_bytes{consumer=\"key_cache\"} 1048576\n"
    "tide_memory_consumer_bytes{consumer=\"node_cache\"} 402653184\n"
    "tide_memory_consumer_bytes{consumer=\"odd}\\\"name\"} 2097152\n"
    "# HELP tide_memory_consumer_budget_bytes x\n# TYPE tide_memory_consumer_budget_bytes gauge\n"
    "tide_memory_consumer_budget_bytes{consumer=\"node_cache\"} 536870912\n"
    "tide_memory_consumer_budget_bytes{consumer=\"key_cache\"} 0\n"
    "# HELP tide_unbounded_consumer x\n# TYPE tide_unbounded_consumer gauge\n"
    "tide_unbounded_consumer{consumer=\"key_cache\",setting=\"set --key-cache-size\"} 1\n"
    "# HELP tide_sweeps_total x\n# TYPE tide_sweeps_total counter\ntide_sweeps_total 12\n"
    "# HELP tide_trims_total x\n# TYPE tide_trims_total counter\ntide_trims_total 10\n"
    "# HELP tide_trims_lowered_rss_total x\n# TYPE tide_trims_lowered_rss_total counter\n"
    "tide_trims_lowered_rss_total 9\n"
    "# HELP tide_trim_released_bytes_total x\n# TYPE tide_trim_released_bytes_total counter\n"
    "tide_trim_released_bytes_total 104857600\n"
    "# HELP tide_trim_duration_seconds x\n# TYPE tide_trim_duration_seconds histogram\n"
    "tide_trim_duration_seconds_bucket{le=\"0.01\"} 5\n"
    "tide_trim_duration_seconds_bucket{le=\"0.1\"} 10\n"
    "tide_trim_duration_seconds_bucket{le=\"+Inf\"} 10\n"
    "tide_trim_duration_seconds_sum 0.4\ntide_trim_duration_seconds_count 10\n"
    "# HELP tide_trim_minor_faults_total x\n# TYPE tide_trim_minor_faults_total counter\n"
    "tide_trim_minor_faults_total 250\n";

static void a_hand_written_page_gives_every_figure_exactly(void **state)
{
    (void)state;
    tide_doctor_report r;
    expect_rc(tide_doctor_analyze(page, &r), 0, "analyze");
    expect_str(r.allocator, "glibc", "allocator");
    expect_str(r.allocator_version, "2.36", "version");
    expect_u64((uint64_t)r.rss, 1u << 30, "rss");
    expect_u64((uint64_t)r.live, 512u << 20, "live: in use plus mmapped chunks");
    expect_u64((uint64_t)r.allocator_free, 384u << 20, "allocator free");
    expect_u64(r.nconsumers, 3, "consumers");
    expect_str(r.consumers[0].name, "node_cache", "largest first");
    expect_str(r.consumers[1].name, "odd}\"name", "a label value holding } and an escaped quote");
    expect_str(r.consumers[2].name, "key_cache", "smallest last");
    expect_u64((uint64_t)r.consumers[0].budget, 512u << 20, "node cache budget");
    assert_true(r.consumers[1].budget < 0);
    expect_u64(r.nunbounded, 1, "unbounded");
    expect_str(r.unbounded[0].setting, "set --key-cache-size", "setting");
    /* p50: rank 5 of 10 ends the first bucket: 0.01. p95: rank 9.5 is 4.5
     * of the 5 in (0.01, 0.1]: 0.01 + 0.09 * 0.9 = 0.091. */
    assert_true(fabs(r.trim_p50_s - 0.01) < 1e-9);
    assert_true(fabs(r.trim_p95_s - 0.091) < 1e-9);

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tide_doctor_format(&r, f);
    fclose(f);
    expect_contains(text, "RSS is 1024.0 MiB; the allocator says 512.0 MiB of it is live (50%)", "RSS line");
    expect_contains(text, "holds 384.0 MiB free (38% of RSS)", "free line");
    expect_contains(text, "node_cache            384.0 MiB of a 512.0 MiB budget (75%)", "consumer line");
    expect_contains(text, "90% lowered RSS", "trims lowering RSS");
    expect_contains(text, "10.0 MiB per trim", "mean release");
    expect_contains(text, "median 10.0 ms, p95 91.0 ms", "durations");
    expect_contains(text, "25 minor faults per trim", "faults");
    expect_contains(text, "Unbounded: key_cache. To bound it: set --key-cache-size.", "unbounded line");
    free(text);

    char *json = NULL;
    json_error_t err;
    expect_rc(tide_doctor_json(&r, &json), 0, "json");
    json_t *o = json_loads(json, 0, &err);
    if (o == NULL) fail_msg("doctor JSON does not parse: %s: %s", err.text, json);
    expect_u64((uint64_t)json_number_value(json_object_get(o, "allocator_free_bytes")), 384u << 20, "json free");
    expect_u64(json_array_size(json_object_get(o, "consumers")), 3, "json consumers");
    expect_str(json_string_value(json_object_get(json_array_get(json_object_get(o, "unbounded"), 0), "consumer")),
               "key_cache", "json unbounded");
    json_decref(o);
    free(json);
}

/* Prometheus' own /metrics, in its style: Go runtime and process families,
 * prometheus_* and promhttp_*; process_resident_memory_bytes among them,
 * as on every exporter's page. Written for this test. */
static const char prometheus_page[] =
    "# HELP go_gc_duration_seconds Pause times of the garbage collector.\n"
    "# TYPE go_gc_duration_seconds summary\n"
    "go_gc_duration_seconds{quantile=\"0\"} 2.4e-05\n"
    "go_gc_duration_seconds{quantile=\"0.5\"} 6.1e-05\n"
    "go_gc_duration_seconds{quantile=\"1\"} 0.00197\n"
    "go_gc_duration_seconds_sum 0.0391\n"
    "go_gc_duration_seconds_count 88\n"
    "# HELP go_goroutines Goroutines running now.\n"
    "# TYPE go_goroutines gauge\n"
    "go_goroutines 43\n"
    "# HELP process_resident_memory_bytes Resident set size, bytes.\n"
    "# TYPE process_resident_memory_bytes gauge\n"
    "process_resident_memory_bytes 1.17440512e+08\n"
    "# HELP process_start_time_seconds Start time, seconds since the epoch.\n"
    "# TYPE process_start_time_seconds gauge\n"
    "process_start_time_seconds 1.70001234512e+09\n"
    "# HELP prometheus_build_info The build this server runs.\n"
    "# TYPE prometheus_build_info gauge\n"
    "prometheus_build_info{branch=\"debian/sid\",goversion=\"go1.19.8\",revision=\"\",version=\"2.42.0\"} 1\n"
    "# HELP prometheus_tsdb_head_series Series in the head block.\n"
    "# TYPE prometheus_tsdb_head_series gauge\n"
    "prometheus_tsdb_head_series 2417\n"
    "# HELP promhttp_metric_handler_requests_total Scrapes of this page by status.\n"
    "# TYPE promhttp_metric_handler_requests_total counter\n"
    "promhttp_metric_handler_requests_total{code=\"200\"} 311\n"
    "promhttp_metric_handler_requests_total{code=\"500\"} 0\n";

static void a_page_that_is_not_a_nodes_is_refused_by_name(void **state)
{
    (void)state;
    tide_doctor_report r;
    expect_rc(tide_doctor_analyze("# HELP up x\n# TYPE up gauge\nup 1\n", &r), TIDE_EINVAL, "not a node");
    expect_contains(tide_last_error(), "does not look like a tide node's /metrics: no tide_* families", "message");
    expect_rc(tide_doctor_analyze(prometheus_page, &r), TIDE_EINVAL, "Prometheus' own page");
    expect_contains(tide_last_error(), "does not look like a tide node's /metrics: no tide_* families "
                    "(its 12 samples are other families', go_gc_duration_seconds the first)", "message");
    expect_rc(tide_doctor_analyze("", &r), TIDE_EINVAL, "an empty page");
    expect_contains(tide_last_error(), "no tide_* families (no metric samples at all)", "message");
    expect_rc(tide_doctor_analyze("\n<!DOCTYPE html>\n<html><body>tide_x 1</body></html>\n", &r), TIDE_EINVAL, "HTML");
    expect_contains(tide_last_error(), "no metric samples at all; it looks like HTML", "message");
    expect_rc(tide_doctor_analyze("tide_ garbage\ntide_x{a=\"1\" 5\n%%tide_y 3\ntide_z 1 2 3x\n", &r), TIDE_EINVAL,
              "lines that only look like tide samples");
    expect_contains(tide_last_error(), "no tide_* families", "message");
    expect_rc(tide_doctor_analyze("# TYPE tide_build_info gauge\ntide_build_info{version=\"1\"} 1\n", &r),
              TIDE_EINVAL, "a tide family but no memory figures");
    expect_contains(tide_last_error(), "neither process_resident_memory_bytes nor tide_memory_consumer_bytes", "message");
}

/* ---- the disk side ------------------------------------------------------------------ */

/* The disk families a node with online delete puts on /metrics. */
static const char disk_families[] =
    "# HELP tide_disk_bytes x\n# TYPE tide_disk_bytes gauge\ntide_disk_bytes 3145728\n"
    "# HELP tide_generations x\n# TYPE tide_generations gauge\ntide_generations 2\n"
    "# HELP tide_rotations_total x\n# TYPE tide_rotations_total counter\ntide_rotations_total 7\n"
    "# HELP tide_rotation_failures_total x\n# TYPE tide_rotation_failures_total counter\n"
    "tide_rotation_failures_total 2\n"
    "# HELP tide_rotations_abandoned_total x\n# TYPE tide_rotations_abandoned_total counter\n"
    "tide_rotations_abandoned_total 1\n";

/* Two generations of 1 MiB and 2 MiB, the last rotation 2 h 5 min 30 s
 * before NOW_US, advisory_delete on with can_delete never. */
#define LAST_US 1796000000000000ull
#define NOW_US  (LAST_US + 7530000000ull)
static const char status_on[] =
    "{\"version\":\"x\",\"online_delete\":{\"enabled\":true,\"advisory_delete\":true,"
    "\"generations\":[{\"id\":8,\"dir\":\"gen-000000000008\",\"bytes\":1048576},"
    "{\"id\":7,\"dir\":\"gen-000000000007\",\"bytes\":2097152}],"
    "\"disk_bytes\":3145728,\"rotations\":7,\"last_rotation_unix_us\":1796000000000000,"
    "\"newest_objects\":4321,\"can_delete\":0}}";

static char *page_with(const char *extra)
{
    size_t a = strlen(page), b = strlen(extra);
    char *p = malloc(a + b + 1);
    assert_non_null(p);
    memcpy(p, page, a);
    memcpy(p + a, extra, b + 1);
    return p;
}

static char *format_text(const tide_doctor_report *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tide_doctor_format(r, f);
    fclose(f);
    return text;
}

static void the_disk_side_gives_each_generation_the_age_and_every_finding(void **state)
{
    (void)state;
    tide_doctor_report r;
    char *p = page_with(disk_families), *text, *json = NULL;
    json_error_t err;

    expect_rc(tide_doctor_analyze(p, &r), 0, "analyze");
    expect_u64((uint64_t)r.disk.m_failures, 2, "failures from the page");
    expect_u64((uint64_t)r.disk.m_abandoned, 1, "abandoned from the page");
    expect_rc(tide_doctor_analyze_status(&r, status_on, NULL, NOW_US), 0, "status");
    expect_u64(r.disk.ngens, 2, "generations");
    expect_u64(r.disk.gens[0].id, 8, "newest first");
    expect_str(r.disk.gens[1].dir, "gen-000000000007", "dir");
    expect_u64((uint64_t)r.disk.disk_bytes, 3u << 20, "disk bytes");
    expect_u64((uint64_t)r.disk.last_rotation_age_s, 7530, "age in seconds");
    expect_u64(r.disk.nfindings, 3, "failures, abandoned, can_delete never");

    text = format_text(&r);
    expect_contains(text, "Disk: 3 MiB in 2 generations, newest first: 8 (gen-000000000008) 1 MiB, "
                    "7 (gen-000000000007) 2 MiB.", "the generations line");
    expect_contains(text, "7 rotations, the last 2 h 5 min ago; the newest generation holds 4321 objects",
                    "the age line");
    expect_contains(text, "2 rotation attempts failed since start (tide_rotation_failures_total); whether a "
                    "later one succeeded is not known here", "failures, the newest's result not in the status");
    expect_contains(text, "1 rotation attempt was abandoned", "abandoned");
    expect_contains(text, "advisory_delete is on and can_delete is never: nothing will be deleted until "
                    "POST /v1/admin/can_delete", "the advisory finding");
    if (strstr(text, "grows without bound")) fail_msg("online delete is on, got: %s", text);
    free(text);

    expect_rc(tide_doctor_json(&r, &json), 0, "json");
    json_t *o = json_loads(json, 0, &err);
    if (o == NULL) fail_msg("doctor JSON does not parse: %s: %s", err.text, json);
    json_t *d = json_object_get(o, "disk");
    if (!json_is_integer(json_object_get(d, "disk_bytes")))
        fail_msg("disk_bytes should be a JSON integer: %s", json);
    expect_u64((uint64_t)json_integer_value(json_object_get(d, "disk_bytes")), 3u << 20, "json disk bytes");
    expect_u64(json_array_size(json_object_get(d, "generations")), 2, "json generations");
    expect_u64((uint64_t)json_integer_value(json_object_get(json_array_get(json_object_get(d, "generations"), 1),
                                                            "id")), 7, "json second id");
    expect_u64(json_array_size(json_object_get(d, "findings")), 3, "json findings");
    expect_u64((uint64_t)json_integer_value(json_object_get(d, "can_delete")), 0, "json can_delete");
    json_decref(o);
    free(json);

    /* can_delete "now" after 7 rotations is 8: nothing blocks; always, neither. */
    expect_rc(tide_doctor_analyze(page, &r), 0, "analyze without the disk families");
    expect_rc(tide_doctor_analyze_status(&r, "{\"online_delete\":{\"enabled\":true,\"advisory_delete\":true,"
                                         "\"rotations\":7,\"can_delete\":8,\"generations\":[]}}", NULL, NOW_US),
              0, "status");
    expect_u64(r.disk.nfindings, 0, "can_delete 8 after 7 rotations lets the next run");
    expect_rc(tide_doctor_analyze_status(&r, "{\"online_delete\":{\"enabled\":true,\"advisory_delete\":true,"
                                         "\"rotations\":7,\"can_delete\":7}}", NULL, NOW_US), 0, "status");
    expect_u64(r.disk.nfindings, 1, "can_delete 7 after 7 rotations blocks");
    expect_contains(r.disk.findings[0], "can_delete is 7, which 7 rotations have reached", "the count finding");
    expect_rc(tide_doctor_analyze_status(&r, "{\"online_delete\":{\"enabled\":true,\"advisory_delete\":true,"
                                         "\"rotations\":7,\"can_delete\":-1}}", NULL, NOW_US), 0, "status");
    expect_u64(r.disk.nfindings, 0, "can_delete always (UINT64_MAX through a signed integer)");

    /* The node's own spelling: can_delete as words, last_rotation_us, and
     * the failure counters in the status when the page has none. */
    expect_rc(tide_doctor_analyze(page, &r), 0, "analyze");
    expect_rc(tide_doctor_analyze_status(&r, "{\"online_delete\":{\"enabled\":true,\"advisory_delete\":true,"
                                         "\"rotations\":3,\"can_delete\":\"never\",\"failures\":4,"
                                         "\"abandoned\":0,\"last_rotation_us\":1796000000000000}}", NULL, NOW_US),
              0, "status");
    expect_u64(r.disk.nfindings, 2, "failures from the status, can_delete never");
    expect_contains(r.disk.findings[0], "4 rotation attempts failed", "the status's failures");
    expect_contains(r.disk.findings[1], "can_delete is never", "never as a word");
    expect_u64((uint64_t)r.disk.last_rotation_age_s, 7530, "last_rotation_us read");
    expect_rc(tide_doctor_analyze_status(&r, "{\"online_delete\":{\"enabled\":true,\"advisory_delete\":true,"
                                         "\"rotations\":3,\"can_delete\":\"always\"}}", NULL, NOW_US), 0, "status");
    expect_u64(r.disk.nfindings, 0, "always as a word");
    free(p);
}

/* Failures since start with the newest attempt a success: deletes run,
 * and the finding must not say nothing is deleted; with the newest a
 * failure too, it says so. */
static void failures_are_weighed_against_the_newest_attempts_result(void **state)
{
    (void)state;
    tide_doctor_report r;

    expect_rc(tide_doctor_analyze(page, &r), 0, "analyze");
    expect_rc(tide_doctor_analyze_status(&r, "{\"online_delete\":{\"enabled\":true,\"rotations\":5,"
                                         "\"failures\":2,\"abandoned\":0,\"last_rotation\":{\"seq\":9,"
                                         "\"rc\":0,\"trigger\":\"objects\"}}}", NULL, NOW_US), 0, "status");
    expect_u64(r.disk.nfindings, 1, "one finding");
    expect_contains(r.disk.findings[0], "2 rotation attempts failed since start", "the count");
    expect_contains(r.disk.findings[0], "the newest attempt (9) succeeded: rotations and deletes run again",
                    "the newest succeeded");
    if (strstr(r.disk.findings[0], "nothing is deleted"))
        fail_msg("a later success must not be told as nothing deleted: %s", r.disk.findings[0]);

    expect_rc(tide_doctor_analyze(page, &r), 0, "analyze");
    expect_rc(tide_doctor_analyze_status(&r, "{\"online_delete\":{\"enabled\":true,\"rotations\":5,"
                                         "\"failures\":1,\"last_rotation\":{\"seq\":6,\"rc\":-3}}}", NULL,
                                         NOW_US), 0, "status");
    expect_u64(r.disk.nfindings, 1, "one finding");
    expect_contains(r.disk.findings[0], "1 rotation attempt failed (tide_rotation_failures_total), the newest "
                    "(6) too", "the newest failed");
    expect_contains(r.disk.findings[0], "until one succeeds nothing is deleted", "so nothing is deleted");
}

static void an_older_node_or_no_status_is_told_not_guessed(void **state)
{
    (void)state;
    tide_doctor_report r;
    char *text;

    /* An older node: /v1/status without the object, no disk families. */
    expect_rc(tide_doctor_analyze(page, &r), 0, "analyze");
    expect_rc(tide_doctor_analyze_status(&r, "{\"version\":\"0.9\",\"store\":{}}", NULL, NOW_US), 0, "status");
    expect_u64(r.disk.nfindings, 1, "one finding");
    expect_contains(r.disk.findings[0], "online delete is off: the store grows without bound", "off");
    expect_contains(r.disk.findings[0], "--online-delete N", "the knob");
    text = format_text(&r);
    expect_contains(text, "Disk: the node does not say how big its store is.", "no figure invented");
    free(text);

    /* A node with the object and online delete off. */
    expect_rc(tide_doctor_analyze(page, &r), 0, "analyze");
    expect_rc(tide_doctor_analyze_status(&r, "{\"online_delete\":{\"enabled\":false,\"disk_bytes\":5242880}}",
                                         NULL, NOW_US), 0, "status");
    expect_contains(r.disk.findings[0], "online delete is off: the store grows without bound", "off");
    text = format_text(&r);
    expect_contains(text, "Disk: 5 MiB.", "the size it gave");
    free(text);

    /* No status at all and no disk families: unknown, with the reason. */
    expect_rc(tide_doctor_analyze(page, &r), 0, "analyze");
    expect_rc(tide_doctor_analyze_status(&r, NULL, "http://x/v1/status: HTTP 404", NOW_US), 0, "no status");
    expect_contains(r.disk.findings[0], "the disk side is unknown: /v1/status was not read "
                    "(http://x/v1/status: HTTP 404)", "unknown, and why");
    /* Not JSON: recorded, not an error. */
    expect_rc(tide_doctor_analyze_status(&r, "<html>", NULL, NOW_US), 0, "not JSON");
    expect_contains(r.disk.status_error, "/v1/status is not a JSON object", "recorded");
    /* A page alone (no analyze_status) prints no disk section. */
    expect_rc(tide_doctor_analyze(page, &r), 0, "analyze");
    text = format_text(&r);
    if (strstr(text, "Disk")) fail_msg("a page alone should print no disk section: %s", text);
    free(text);
}

/* ---- the rules, from recorded pages (tests/fixtures/doctor/README.md) ------------ */

#define MIB_ (1024.0 * 1024.0)

static char *fixture(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "tests/fixtures/doctor/%s", name);
    return th_slurp(path);
}

/* A copy of `text` with the sample written exactly as `series` set to
 * `value`; fails the test when the page has no such sample. */
static char *page_set(char *text, const char *series, const char *value)
{
    size_t sl = strlen(series);
    const char *p = text;

    for (; (p = strstr(p, series)) != NULL; p += sl)
        if ((p == text || p[-1] == '\n') && p[sl] == ' ') break;
    if (p == NULL) fail_msg("the page has no sample %s", series);
    const char *end = strchr(p, '\n');
    size_t head = (size_t)(p - text) + sl + 1, tail = strlen(end), vl = strlen(value);
    char *out = malloc(head + vl + tail + 1);
    assert_non_null(out);
    memcpy(out, text, head);
    memcpy(out + head, value, vl);
    memcpy(out + head + vl, end, tail + 1);
    free(text);
    return out;
}

/* The finding of `rule` in r, or NULL. */
static const tide_doctor_finding *finding_of(const tide_doctor_report *r, const char *rule)
{
    for (size_t i = 0; i < r->nfindings; i++)
        if (strcmp(r->findings[i].rule, rule) == 0) return &r->findings[i];
    return NULL;
}

static double figure_of(const tide_doctor_finding *f, const char *name)
{
    for (size_t i = 0; i < f->nfigures; i++)
        if (strcmp(f->figures[i].name, name) == 0) return f->figures[i].value;
    fail_msg("finding %s has no figure %s", f->rule, name);
    return NAN;
}

static int passed(const tide_doctor_report *r, const char *rule)
{
    for (size_t i = 0; i < r->npassed; i++)
        if (strcmp(r->passed[i], rule) == 0) return 1;
    return 0;
}

static void every_recorded_page_passes_promtool_and_tides_own_checks(void **state)
{
    (void)state;
    static const char *const pages[] = { "real-bounded.prom", "real-unbounded.prom", "healthy.prom", "sick.prom",
                                         "real-limit64.prom" };
    char msg[4096];

    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
        char *t = fixture(pages[i]);
        if (th_prom_check(t, msg, sizeof msg) != 0) fail_msg("%s: %s", pages[i], msg);
        int st = th_promtool_check(t, msg, sizeof msg);
        if (st != 0) fail_msg("%s: promtool check metrics exited %d: %s", pages[i], st, msg);
        free(t);
    }
}

/* A real tided held to --memory-limit 64MiB, scraped during 400 PUTs of
 * 256 KiB (tests/fixtures/doctor/record-limit64.sh): every figure read as
 * the node wrote it, the limit rule judged against its own marks. */
static void a_real_page_of_a_node_held_to_64_mib_under_load_is_read_exactly(void **state)
{
    (void)state;
    char *t = fixture("real-limit64.prom"), *words;
    tide_doctor_report r;

    expect_rc(tide_doctor_analyze(t, &r), 0, "analyze");
    expect_u64((uint64_t)r.limit, 67108864, "limit");
    expect_u64((uint64_t)r.counted, 36708352, "counted");
    expect_u64((uint64_t)r.level, 0, "level normal");
    expect_u64((uint64_t)r.mark_soft, 53687091, "soft enter mark (80%)");
    expect_u64((uint64_t)r.mark_high, 60397977, "high enter mark (90%)");
    expect_u64(r.nconsumers, 5, "consumers");
    expect_str(r.consumers[0].name, "node_cache", "the largest");
    expect_u64((uint64_t)r.consumers[0].bytes, 26761872, "node_cache bytes");
    expect_u64((uint64_t)r.consumers_total, 32838422, "consumers in all");
    assert_true(r.consumers_total <= r.rss);
    assert_true(passed(&r, "limit"));      /* 55% of 64 MiB, under the 80% soft mark */
    assert_true(passed(&r, "overload"));   /* all 400 answered 201 */
    if (finding_of(&r, "cgroup_events")) fail_msg("a node in no memory cgroup has no cgroup finding");
    words = format_text(&r);
    expect_contains(words, "node_cache ", "the consumers listed");
    free(words);
    free(t);
}

static void a_healthy_recorded_page_triggers_no_rule(void **state)
{
    (void)state;
    char *t = fixture("healthy.prom"), *words;
    tide_doctor_report r;

    expect_rc(tide_doctor_analyze(t, &r), 0, "analyze");
    if (r.nfindings) fail_msg("a healthy page gave %zu findings, the first %s: %s", r.nfindings,
                              r.findings[0].rule, r.findings[0].summary);
    assert_int_equal(r.severity, TIDE_DOCTOR_OK);
    expect_u64(r.npassed, 9, "every rule but growth passed");
    expect_u64(r.nunknown, 1, "growth cannot tell from one page");
    expect_str(r.unknown[0].rule, "growth", "growth");
    expect_u64((uint64_t)r.limit, 512u << 20, "the limit read");
    expect_u64((uint64_t)r.cg_max, 0, "the cgroup's max events read");
    words = format_text(&r);
    if (strncmp(words, "verdict: ok: nothing needs you (9 rules passed; 1 could not tell)\n", 66) != 0)
        fail_msg("expected the ok verdict first, got: %.200s", words);
    free(words);
    free(t);
}

static void the_sick_page_gives_a_bad_verdict_with_its_worst_finding_first(void **state)
{
    (void)state;
    char *t = fixture("sick.prom"), *words;
    tide_doctor_report r;
    static const char *const want[] = { "limit", "rss_vs_live", "allocator_free", "cgroup_events", "pressure",
                                        "overload", "arena", "peak" };

    expect_rc(tide_doctor_analyze(t, &r), 0, "analyze");
    /* Its consumers are a busy node's: 124 MiB of the 144 MiB live, beside 476 MiB of RSS. */
    expect_u64((uint64_t)r.consumers_total, 130023424, "the consumers in all");
    assert_true(r.consumers_total <= r.live && r.live <= r.rss);
    expect_u64(r.nfindings, 8, "eight rules fire");
    for (size_t i = 0; i < 8; i++) {
        expect_str(r.findings[i].rule, want[i], "worst first, the table's order within a severity");
        if (i > 0 && r.findings[i].severity > r.findings[i - 1].severity) fail_msg("finding %zu is worse than %zu", i, i - 1);
    }
    assert_int_equal(r.severity, TIDE_DOCTOR_BAD);
    words = format_text(&r);
    expect_contains(words, "verdict: bad: memory at 93% of its 512 MiB limit (high level: writes refused); "
                    "7 more findings\n", "the verdict");
    if (strncmp(words, "verdict: bad:", 13) != 0) fail_msg("the verdict is not first: %.100s", words);
    expect_contains(words, "  bad  limit: memory at 93%", "the worst finding next");
    expect_contains(words, "figures: counted_bytes=499122176 limit_bytes=536870912 ratio=0.93 level=2", "its figures");
    expect_contains(words, "advice: raise --memory-limit", "its advice");
    if (strstr(words, "verdict: ") != words || th_count(words, "verdict: ") != 1)
        fail_msg("one verdict line, the first: %.200s", words);
    expect_contains(words, "Allocator: glibc 2.36.", "the sections after");
    free(words);
    free(t);
}

/* One rule fires: its severity and a part of its summary. */
static void expect_only(const char *what, char *page, const char *rule, tide_doctor_severity sev, const char *part)
{
    tide_doctor_report r;
    expect_rc(tide_doctor_analyze(page, &r), 0, what);
    const tide_doctor_finding *f = finding_of(&r, rule);
    if (f == NULL) fail_msg("%s: expected a %s finding, got %zu findings (%s)", what, rule, r.nfindings,
                            r.nfindings ? r.findings[0].rule : "none");
    if (r.nfindings != 1) fail_msg("%s: expected %s alone, got %zu findings, the other %s", what, rule, r.nfindings,
                                   r.findings[f == &r.findings[0] ? 1 : 0].rule);
    if (f->severity != sev) fail_msg("%s: expected %s, got %s: %s", what, tide_doctor_severity_name(sev),
                                     tide_doctor_severity_name(f->severity), f->summary);
    expect_contains(f->summary, part, what);
    if (f->advice[0] == '\0') fail_msg("%s: no advice", what);
    assert_int_equal(r.severity, sev);
    free(page);
}

/* No rule fires. */
static void expect_none(const char *what, char *page)
{
    tide_doctor_report r;
    expect_rc(tide_doctor_analyze(page, &r), 0, what);
    if (r.nfindings) fail_msg("%s: expected no finding, got %s: %s", what, r.findings[0].rule, r.findings[0].summary);
    free(page);
}

#define HEALTHY fixture("healthy.prom")

/* healthy.prom with the arena's live and resident bytes set. */
static char *with_arena(const char *live, const char *resident)
{
    return page_set(page_set(HEALTHY, "tide_cache_arena_live_bytes{cache=\"node_cache\"}", live),
                    "tide_cache_arena_resident_bytes{cache=\"node_cache\"}", resident);
}

/* The arena rule: resident against live from 1.5 and 3 times, judged only
 * from 64 MiB resident and 8 MiB above live; resident with nothing live is
 * bad; a page without the arena's families cannot tell. */
static void the_arena_rule_judges_resident_against_live(void **state)
{
    (void)state;
    tide_doctor_report r;

    /* 100 MiB for 90: 1.11 times, what a sweep leaves */
    expect_none("100 MiB resident for 90 live", with_arena("94371840", "104857600"));
    /* 100 MiB for 62 MiB: 1.6 times */
    expect_only("100 MiB resident for 62 live", with_arena("65011712", "104857600"), "arena", TIDE_DOCTOR_WARN,
                "the caches' arenas keep 100 MiB resident for 62 MiB live, 1.6 times");
    /* 300 MiB for 96 MiB: 3.1 times */
    expect_only("300 MiB resident for 96 live", with_arena("100663296", "314572800"), "arena", TIDE_DOCTOR_BAD,
                "3.1 times");
    expect_only("80 MiB resident, nothing live", with_arena("0", "83886080"), "arena", TIDE_DOCTOR_BAD,
                "80 MiB resident with nothing live");
    /* under 64 MiB resident: not judged, whatever the ratio */
    expect_none("60 MiB resident for 10 live", with_arena("10485760", "62914560"));
    /* 8 MiB or less above live: the open and reserve segments */
    expect_none("70 MiB resident for 62 live", with_arena("65011712", "73400320"));
    char *p = with_arena("65011712", "104857600");
    expect_rc(tide_doctor_analyze(p, &r), 0, "analyze");
    const tide_doctor_finding *f = finding_of(&r, "arena");
    assert_non_null(f);
    expect_contains(f->detail, "warn from 1.5, bad from 3.0, judged from 64 MiB resident", "the thresholds");
    expect_contains(f->advice, "--cache-arena-evacuate", "the knob");
    assert_true(fabs(figure_of(f, "ratio") - 1.6) < 0.05);
    free(p);
    /* a page from before the arena */
    p = fixture("real-bounded.prom");
    expect_rc(tide_doctor_analyze(p, &r), 0, "the recorded page");
    if (finding_of(&r, "arena")) fail_msg("a page without the arena's families gave an arena finding");
    int told = 0;
    for (size_t i = 0; i < r.nunknown; i++)
        if (strcmp(r.unknown[i].rule, "arena") == 0) told = 1;
    if (!told) fail_msg("a page without the arena's families: expected the arena rule among those that cannot tell");
    free(p);
}

/* healthy.prom with a tide_overload_rejected_requests_total{reason=
 * "store_queue"} sample of `n` added. */
static char *with_queue_refusals(const char *n)
{
    char *h = HEALTHY, *out = page_set(h, "tide_overload_rejected_requests_total{reason=\"body\"}",
                                       "0\ntide_overload_rejected_requests_total{reason=\"store_queue\"} X");
    return page_set(out, "tide_overload_rejected_requests_total{reason=\"store_queue\"}", n);
}

/* A full store queue is an overload refusal, but not the
 * memory's: its finding says so and advises the store workers, not
 * --memory-limit; with memory refusals too, the memory's advice stays. */
static void a_full_store_queue_gets_the_store_workers_advice_not_the_memorys(void **state)
{
    tide_doctor_report r;
    const tide_doctor_finding *f;
    char *page = with_queue_refusals("7");
    (void)state;

    expect_rc(tide_doctor_analyze(page, &r), 0, "a page with store queue refusals");
    f = finding_of(&r, "overload");
    if (f == NULL) fail_msg("store queue refusals: expected an overload finding");
    expect_contains(f->summary, "7 requests refused for a full store queue since start (503)", "its summary");
    expect_contains(f->advice, "--store-workers", "its advice");
    expect_contains(f->advice, "--store-queue", "its advice");
    if (strstr(f->advice, "--memory-limit")) fail_msg("a full store queue is not the memory's: %s", f->advice);
    free(page);
    page = page_set(with_queue_refusals("7"), "tide_overload_rejected_requests_total{reason=\"write\"}", "2");
    expect_rc(tide_doctor_analyze(page, &r), 0, "a page with store queue and memory refusals");
    f = finding_of(&r, "overload");
    if (f == NULL) fail_msg("memory refusals: expected an overload finding");
    expect_contains(f->summary, "2 requests refused for memory since start", "the memory's count, not the queue's");
    expect_contains(f->advice, "--memory-limit", "the memory's advice");
    free(page);
}

static void each_rule_fires_past_its_threshold_and_not_before(void **state)
{
    (void)state;
    /* limit: 512 MiB; 75% is 402653184, 90% 483183821. */
    expect_only("at 80%", page_set(HEALTHY, "tide_memory_counted_bytes", "429496730"), "limit", TIDE_DOCTOR_WARN,
                "memory at 80% of its 512 MiB limit (normal level: nothing shed)");
    expect_none("at 74%", page_set(HEALTHY, "tide_memory_counted_bytes", "397284474"));
    expect_only("the soft level", page_set(HEALTHY, "tide_overload_level", "1"), "limit", TIDE_DOCTOR_WARN,
                "(soft level: sweeping now, cache targets shrunk)");
    expect_only("at 90%", page_set(HEALTHY, "tide_memory_counted_bytes", "483183821"), "limit", TIDE_DOCTOR_BAD,
                "memory at 90%");
    expect_only("the critical level", page_set(HEALTHY, "tide_overload_level", "3"), "limit", TIDE_DOCTOR_BAD,
                "(critical level: new connections refused, writes refused)");
    expect_only("no limit", page_set(HEALTHY, "tide_memory_limit_bytes", "0"), "limit", TIDE_DOCTOR_WARN,
                "unbounded process: no memory limit");
    /* cgroup_events */
    expect_only("oom_kill", page_set(HEALTHY, "tide_cgroup_memory_events_total{event=\"oom_kill\"}", "1"),
                "cgroup_events", TIDE_DOCTOR_BAD, "1 processes OOM-killed");
    /* oom alone, from one scrape, is since the cgroup was made: warn (only oom_kill stays bad). */
    expect_only("oom", page_set(HEALTHY, "tide_cgroup_memory_events_total{event=\"oom\"}", "2"),
                "cgroup_events", TIDE_DOCTOR_WARN, "2 OOM events");
    expect_only("max", page_set(HEALTHY, "tide_cgroup_memory_events_total{event=\"max\"}", "3"),
                "cgroup_events", TIDE_DOCTOR_WARN, "reached its limit 3 times");
    /* pressure: either scope */
    expect_only("avg10 0.10", page_set(HEALTHY, "tide_memory_pressure_ratio{scope=\"cgroup\",kind=\"some\","
                                       "window=\"10s\"}", "0.1"), "pressure", TIDE_DOCTOR_WARN, "10% of the last 10 s");
    expect_none("avg10 0.09", page_set(HEALTHY, "tide_memory_pressure_ratio{scope=\"cgroup\",kind=\"some\","
                                       "window=\"10s\"}", "0.09"));
    expect_none("full is not some", page_set(HEALTHY, "tide_memory_pressure_ratio{scope=\"cgroup\",kind=\"full\","
                                             "window=\"10s\"}", "0.5"));
    expect_only("avg60 0.20", page_set(HEALTHY, "tide_memory_pressure_ratio{scope=\"system\",kind=\"some\","
                                       "window=\"60s\"}", "0.2"), "pressure", TIDE_DOCTOR_BAD, "20% of the last minute");
    /* overload */
    expect_only("one 503", page_set(HEALTHY, "tide_overload_rejected_requests_total{reason=\"body\"}", "1"),
                "overload", TIDE_DOCTOR_WARN, "1 requests refused for memory since start");
    expect_only("20 changes", page_set(HEALTHY, "tide_overload_level_changes_total", "20"), "overload",
                TIDE_DOCTOR_WARN, "changed 20 times since start");
    expect_none("19 changes", page_set(HEALTHY, "tide_overload_level_changes_total", "19"));
    expect_only("a body refused at http_body_budget", page_set(HEALTHY, "tide_http_requests_refused_total"
                "{reason=\"body_budget\"}", "151"), "overload", TIDE_DOCTOR_WARN,
                "151 requests refused at http_body_budget since start (503)");
    expect_none("framing is not memory", page_set(HEALTHY, "tide_http_requests_refused_total{reason=\"framing\"}", "3"));
    /* peak: counted 3149824 */
    expect_only("a spike given back", page_set(HEALTHY, "tide_memory_peak_bytes{since=\"start\"}", "6299648"), "peak",
                TIDE_DOCTOR_WARN, "peaked at 6.0 MiB, 2.0 times the 3.0 MiB now");
    expect_none("1.9 times", page_set(HEALTHY, "tide_memory_peak_bytes{since=\"start\"}", "5984665"));
    expect_only("the spike since the sweep", page_set(page_set(HEALTHY, "tide_memory_peak_bytes{since=\"start\"}",
                "6299648"), "tide_memory_peak_bytes{since=\"sweep\"}", "6299648"), "peak", TIDE_DOCTOR_WARN,
                "2.0 times");
    {   /* When the spike came: before the last sweep (given back since) or after it. */
        tide_doctor_report pr;
        char *p = page_set(HEALTHY, "tide_memory_peak_bytes{since=\"start\"}", "6299648");
        expect_rc(tide_doctor_analyze(p, &pr), 0, "analyze");
        expect_contains(finding_of(&pr, "peak")->detail, "it came before the last sweep, and the memory was "
                        "given back since", "before the sweep");
        p = page_set(p, "tide_memory_peak_bytes{since=\"sweep\"}", "6299648");
        expect_rc(tide_doctor_analyze(p, &pr), 0, "analyze");
        expect_contains(finding_of(&pr, "peak")->detail, "it came since the last sweep, whose trim has not run "
                        "on it yet", "after the sweep");
        free(p);
    }
    /* 90% of 512 MiB is 483183820.8: a peak at it warns, one byte under does
     * not (with 300 MiB counted now: no spike, and the limit at 59%). */
    char *at300 = "314572800";
    expect_only("a peak at 90% of the limit", page_set(page_set(HEALTHY, "tide_memory_counted_bytes", at300),
                "tide_memory_peak_bytes{since=\"start\"}", "483183821"), "peak", TIDE_DOCTOR_WARN,
                "memory peaked at 90% of its 512 MiB limit");
    expect_none("a peak under 90%", page_set(page_set(HEALTHY, "tide_memory_counted_bytes", at300),
                "tide_memory_peak_bytes{since=\"start\"}", "483183820"));
    {   /* The process unbounded (config's "process" entry) is the limit rule's alone. */
        static const char type[] = "# TYPE tide_unbounded_consumer gauge\n";
        static const char line[] = "tide_unbounded_consumer{consumer=\"process\",setting=\"set --memory-limit\"} 1\n";
        char *h = page_set(HEALTHY, "tide_memory_limit_bytes", "0"), *at = strstr(h, type);
        assert_non_null(at);
        size_t head = (size_t)(at - h) + strlen(type);
        char *p = malloc(strlen(h) + sizeof line);
        assert_non_null(p);
        memcpy(p, h, head);
        memcpy(p + head, line, sizeof line - 1);
        strcpy(p + head + sizeof line - 1, h + head);
        free(h);
        expect_only("the process unbounded", p, "limit", TIDE_DOCTOR_WARN, "unbounded process: no memory limit");
    }
    /* unbounded_consumers, on the real page of a node with the cache unbounded */
    char *real = fixture("real-unbounded.prom");
    tide_doctor_report r;
    expect_rc(tide_doctor_analyze(real, &r), 0, "analyze");
    const tide_doctor_finding *f = finding_of(&r, "unbounded_consumers");
    assert_non_null(f);
    expect_contains(f->summary, "2 consumers unbounded: node_cache, malloc_arenas", "named");
    expect_contains(f->advice, "node_cache: set --cache-budget", "the knob");
    free(real);
}

/* RSS against live and the allocator's free share need a process of at
 * least TIDE_DOCTOR_SMALL_RSS_MIB: the recorded page's RSS is made larger. */
static char *big(const char *rss, const char *in_use, const char *free_bytes)
{
    char *p = page_set(HEALTHY, "process_resident_memory_bytes", rss);
    /* All of it anonymous (the rule leaves file-backed pages out). */
    p = page_set(p, "tide_process_rss_anon_bytes", rss);
    p = page_set(p, "tide_process_rss_file_bytes", "0");
    p = page_set(p, "tide_glibc_in_use_bytes", in_use);
    return page_set(p, "tide_allocator_free_bytes", free_bytes);
}

/* A node started with --memory-levels 90,95,99 (512 MiB): its page's enter
 * marks, not doctor's 75% and 90%, are where the limit rule warns and is bad. */
static char *levels_90_95_99(const char *counted)
{
    char *p = page_set(HEALTHY, "tide_overload_mark_bytes{level=\"soft\",edge=\"enter\"}", "483183820");
    p = page_set(p, "tide_overload_mark_bytes{level=\"high\",edge=\"enter\"}", "510027366");
    p = page_set(p, "tide_overload_mark_bytes{level=\"critical\",edge=\"enter\"}", "531502202");
    return page_set(p, "tide_memory_counted_bytes", counted);
}

static void the_limit_rule_uses_the_pages_enter_marks(void **state)
{
    (void)state;
    tide_doctor_report r;
    expect_none("85% is under a 90% soft mark", levels_90_95_99("456340275"));
    expect_only("92%: past soft, under high", levels_90_95_99("493921239"), "limit", TIDE_DOCTOR_WARN,
                "memory at 92% of its 512 MiB limit");
    expect_only("96%: past high", levels_90_95_99("515396075"), "limit", TIDE_DOCTOR_BAD, "memory at 96%");
    char *p = levels_90_95_99("493921239");
    expect_rc(tide_doctor_analyze(p, &r), 0, "analyze");
    expect_contains(finding_of(&r, "limit")->detail, "warn from 90% or the soft level, bad from 95% or the high "
                    "level (the node's soft and high enter marks", "the marks named");
    free(p);
}

/* `page` with nudb.key's map resident at `resident` bytes (appended). */
static char *with_key_map(char *page, const char *resident)
{
    static const char fam[] = "# HELP tide_store_key_map_bytes x\n# TYPE tide_store_key_map_bytes gauge\n"
                              "tide_store_key_map_bytes{state=\"mapped\"} 209715200\n"
                              "tide_store_key_map_bytes{state=\"resident\"} ";
    size_t n = strlen(page);
    char *out = malloc(n + sizeof fam + strlen(resident) + 2);
    assert_non_null(out);
    memcpy(out, page, n);
    snprintf(out + n, sizeof fam + strlen(resident) + 2, "%s%s\n", fam, resident);
    free(page);
    return out;
}

/* File-backed pages (nudb.key's map among them) are page cache: RSS
 * against live counts the RSS less RssFile, never less a key-map figure
 * larger than RssFile (a page-cache count of the file, mincore's, can be
 * the whole file), and the summary names the map as file-backed. */
static void the_key_map_counts_as_file_backed_not_unfreed(void **state)
{
    (void)state;
    tide_doctor_report r;
    char *text = NULL;
    size_t len = 0;
    /* 1.5 times with 100 MiB of RSS, all anonymous; 40 MiB of it
     * file-backed (the map): 0.9 times. */
    expect_only("1.5 times, all anonymous", big("104857600", "69905066", "1048576"), "rss_vs_live",
                TIDE_DOCTOR_WARN, "RSS is 1.5 times");
    char *q = page_set(big("104857600", "69905066", "1048576"), "tide_process_rss_anon_bytes", "62914560");
    expect_none("1.5 times, 40 MiB of it file-backed", page_set(q, "tide_process_rss_file_bytes", "41943040"));
    /* 3 times with 100 MiB; 10 MiB file-backed; the key map said to be
     * 90 MiB "resident" (more than RssFile): 2.7 times, warned. */
    q = page_set(big("104857600", "34952533", "1048576"), "tide_process_rss_anon_bytes", "94371840");
    char *p = with_key_map(page_set(q, "tide_process_rss_file_bytes", "10485760"), "94371840");
    expect_rc(tide_doctor_analyze(p, &r), 0, "analyze");
    const tide_doctor_finding *f = finding_of(&r, "rss_vs_live");
    assert_non_null(f);
    expect_contains(f->summary, "2.7 times", "RssFile left out, no more");
    /* The words say what was divided: anonymous RSS, not RSS. */
    expect_contains(f->summary, "anonymous RSS (RSS less file-backed) is 2.7 times", "what the ratio is of");
    expect_contains(f->detail, "judged from 64 MiB of anonymous RSS or a quarter", "what is judged");
    FILE *m = open_memstream(&text, &len);
    assert_non_null(m);
    tide_doctor_format(&r, m);
    fclose(m);
    expect_contains(text, "and 90.0 MiB of nudb.key's read-only map", "the map named file-backed");
    free(text);
    free(p);
}

/* `page` with `lines` (a family's HELP, TYPE and samples) appended. */
static char *with_lines(char *page, const char *lines)
{
    size_t n = strlen(page), l = strlen(lines);
    char *out = malloc(n + l + 1);
    assert_non_null(out);
    memcpy(out, page, n);
    memcpy(out + n, lines, l + 1);
    free(page);
    return out;
}

/* The doctor's words and JSON for `page` (freed). */
static void report_of(char *page, tide_doctor_report *r, char **text, json_t **o)
{
    size_t len = 0;
    char *json = NULL;
    json_error_t err;

    expect_rc(tide_doctor_analyze(page, r), 0, "analyze");
    FILE *m = open_memstream(text, &len);
    assert_non_null(m);
    tide_doctor_format(r, m);
    fclose(m);
    expect_rc(tide_doctor_json(r, &json), 0, "json");
    *o = json_loads(json, 0, &err);
    if (*o == NULL) fail_msg("the JSON does not parse: %s", err.text);
    free(json);
    free(page);
}

/* ps and top show RSS; the report says in one line what of it the node
 * counts. A node under a limit with RSS 647.5 MiB, of which 69 MiB
 * anonymous, 2 MiB of nudb.key's map and 576 MiB of nudb.dat's resident,
 * 0.5 MiB code. From the node's own split, and from RssAnon, RssFile and
 * the maps on a page without it (the same line). */
static void the_report_splits_rss_into_process_memory_and_the_store_maps(void **state)
{
    static const char maps[] =
        "# HELP tide_store_dat_map_bytes x\n# TYPE tide_store_dat_map_bytes gauge\n"
        "tide_store_dat_map_bytes{state=\"mapped\"} 622972928\n"
        "tide_store_dat_map_bytes{state=\"resident\"} 603979776\n";
    static const char parts[] =
        "# HELP tide_process_resident_memory_part_bytes x\n# TYPE tide_process_resident_memory_part_bytes gauge\n"
        "tide_process_resident_memory_part_bytes{part=\"anonymous\"} 72351744\n"
        "tide_process_resident_memory_part_bytes{part=\"store_maps\"} 606076928\n"
        "tide_process_resident_memory_part_bytes{part=\"other_files\"} 524288\n";
    static const char line[] = "RSS 647.5 MiB = 69.0 MiB process memory (anonymous, counted against "
        "memory_limit) + 578.0 MiB of nudb.dat/nudb.key mapped read-only (page cache the kernel reclaims; not "
        "counted) + 0.5 MiB code and libraries.\n";
    tide_doctor_report r;
    char *text = NULL;
    json_t *o;
    (void)state;

    for (int own = 0; own < 2; own++) {
        char *p = page_set(big("678952960", "62914560", "1048576"), "tide_process_rss_anon_bytes", "72351744");
        p = with_key_map(page_set(p, "tide_process_rss_file_bytes", "606601216"), "2097152");
        p = with_lines(p, own ? parts : maps);
        report_of(p, &r, &text, &o);
        expect_contains(text, line, own ? "the node's own split, in one line" : "the split from RssFile and the maps");
        json_t *j = json_object_get(o, "rss_parts");
        if (!json_is_object(j)) fail_msg("JSON: expected an rss_parts object");
        expect_u64((uint64_t)json_integer_value(json_object_get(j, "anonymous_bytes")), 72351744, "JSON anonymous");
        expect_u64((uint64_t)json_integer_value(json_object_get(j, "store_maps_bytes")), 606076928, "JSON maps");
        expect_u64((uint64_t)json_integer_value(json_object_get(j, "other_files_bytes")), 524288, "JSON code");
        json_decref(o);
        free(text);
    }
    /* Without a limit the anonymous part is what one would count. */
    char *p = page_set(big("678952960", "62914560", "1048576"), "tide_process_rss_anon_bytes", "72351744");
    p = page_set(page_set(p, "tide_process_rss_file_bytes", "606601216"), "tide_memory_limit_bytes", "0");
    report_of(with_lines(with_key_map(p, "2097152"), maps), &r, &text, &o);
    expect_contains(text, "69.0 MiB process memory (anonymous, what a memory_limit would count)", "no limit");
    json_decref(o);
    free(text);
}

/* Free heap is anonymous memory: with nudb.key's map filling RssFile, the
 * allocator's free share is of the RSS less RssFile, small processes are
 * told by that part, and the report's rest leaves the file-backed part out
 * (its own line). 1 GiB of RSS, 900 MiB file-backed (892 MiB of it the
 * map), 124 MiB anonymous, 60 MiB free, 60 MiB live: 48% free. */
static void a_large_key_map_leaves_the_allocators_share_of_anonymous_memory(void **state)
{
    (void)state;
    tide_doctor_report r;
    char *p = page_set(big("1073741824", "62914560", "62914560"), "tide_process_rss_anon_bytes", "130023424");
    p = with_key_map(page_set(p, "tide_process_rss_file_bytes", "943718400"), "935329792");
    expect_rc(tide_doctor_analyze(p, &r), 0, "analyze");
    const tide_doctor_finding *f = finding_of(&r, "allocator_free");
    if (f == NULL) fail_msg("60 MiB free of 124 MiB anonymous passed");
    assert_int_equal(f->severity, TIDE_DOCTOR_WARN);
    expect_contains(f->summary, "60 MiB free, 48% of anonymous RSS (RSS less file-backed)",
                    "the share of anonymous memory");
    expect_contains(f->detail, "judged from 64 MiB of anonymous RSS", "what is judged");
    char *text = format_text(&r);
    expect_contains(text, "60.0 MiB free, 48% of anonymous RSS (RSS less file-backed): a trim", "the free line");
    expect_contains(text, "the rest               64.0 MiB (stacks", "the rest, of the anonymous part");
    expect_contains(text, "file-backed           900.0 MiB (code, libraries, nudb.key's map", "its own line");
    if (strstr(text, "964.0 MiB") != NULL) fail_msg("the rest counts file pages:\n%s", text);
    free(text);
    free(p);
    /* 70 MiB of RSS, 30 MiB of it file-backed, 20 MiB free: 40 MiB of the
     * process's own is under the 64 MiB a judgement needs. */
    p = page_set(big("73400320", "10485760", "20971520"), "tide_process_rss_anon_bytes", "41943040");
    expect_none("40 MiB not file-backed is too small to judge", page_set(p, "tide_process_rss_file_bytes", "31457280"));
}

static void the_allocator_rules_fire_past_their_thresholds_on_a_large_process(void **state)
{
    (void)state;
    /* 100 MiB of RSS: 104857600. */
    expect_only("1.5 times", big("104857600", "69905066", "1048576"), "rss_vs_live", TIDE_DOCTOR_WARN,
                "RSS is 1.5 times what the allocator says is live");
    expect_none("1.49 times", big("104857600", "70373558", "1048576"));
    expect_only("3 times", big("104857600", "34952533", "1048576"), "rss_vs_live", TIDE_DOCTOR_BAD, "3.0 times");
    expect_none("10 times, but 60 MiB", big("62914560", "6291456", "1048576"));
    expect_only("25% free", big("104857600", "78643200", "26214400"), "allocator_free", TIDE_DOCTOR_WARN,
                "holds 25 MiB free, 25% of RSS");
    expect_none("24% free", big("104857600", "78643200", "25165824"));
    expect_only("50% free", big("104857600", "78643200", "52428800"), "allocator_free", TIDE_DOCTOR_BAD, "50% of RSS");
    /* Under a 64 MiB limit a process is judged from 16 MiB: 40 MiB, 60% free. */
    char *p = page_set(big("41943040", "16777216", "25165824"), "tide_memory_limit_bytes", "67108864");
    tide_doctor_report r;
    expect_rc(tide_doctor_analyze(p, &r), 0, "analyze");
    if (!finding_of(&r, "allocator_free") || !finding_of(&r, "rss_vs_live"))
        fail_msg("40 MiB under a 64 MiB limit is judged: %zu findings", r.nfindings);
    assert_int_equal(finding_of(&r, "allocator_free")->severity, TIDE_DOCTOR_BAD);
    free(p);
    expect_none("40 MiB under 512 MiB is not", big("41943040", "16777216", "25165824"));
}

static void the_json_has_the_verdict_and_findings_with_integers_as_integers(void **state)
{
    (void)state;
    char *t = fixture("sick.prom"), *json = NULL;
    tide_doctor_report r;
    json_error_t err;

    expect_rc(tide_doctor_analyze(t, &r), 0, "analyze");
    expect_rc(tide_doctor_json(&r, &json), 0, "json");
    json_t *o = json_loads(json, 0, &err);
    if (o == NULL) fail_msg("doctor JSON does not parse: %s: %s", err.text, json);
    json_t *v = json_object_get(o, "verdict"), *fs = json_object_get(o, "findings");
    expect_str(json_string_value(json_object_get(v, "severity")), "bad", "verdict severity");
    expect_str(json_string_value(json_object_get(v, "summary")), r.summary, "verdict summary");
    expect_u64(json_array_size(fs), 8, "findings");
    json_t *f0 = json_array_get(fs, 0), *figs = json_object_get(f0, "figures");
    expect_str(json_string_value(json_object_get(f0, "rule")), "limit", "worst first");
    expect_str(json_string_value(json_object_get(f0, "severity")), "bad", "its severity");
    assert_true(json_is_string(json_object_get(f0, "advice")));
    if (!json_is_integer(json_object_get(figs, "counted_bytes")) || !json_is_integer(json_object_get(figs, "level")))
        fail_msg("byte counts and the level must be JSON integers: %s", json);
    expect_u64((uint64_t)json_integer_value(json_object_get(figs, "counted_bytes")), 499122176, "counted");
    assert_true(json_is_real(json_object_get(figs, "ratio")));
    /* Every figure named as bytes or a count is an integer, in every finding. */
    for (size_t i = 0; i < json_array_size(fs); i++) {
        const char *k;
        json_t *x;
        json_object_foreach(json_object_get(json_array_get(fs, i), "figures"), k, x)
            if ((strstr(k, "bytes") && !strstr(k, "per_second")) || strstr(k, "rejected") || strstr(k, "oom"))
                if (!json_is_integer(x)) fail_msg("figure %s is not a JSON integer", k);
    }
    static const char *const ints[] = { "rss_bytes", "live_bytes", "allocator_free_bytes", "consumers_total_bytes" };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (!json_is_integer(json_object_get(o, ints[i]))) fail_msg("%s is not a JSON integer", ints[i]);
    json_t *c0 = json_array_get(json_object_get(o, "consumers"), 0);
    if (!json_is_integer(json_object_get(c0, "bytes")) || !json_is_integer(json_object_get(c0, "allocations")))
        fail_msg("a consumer's bytes and allocations are integers");
    json_t *tr = json_object_get(o, "trims");
    if (!json_is_integer(json_object_get(tr, "trims")) || !json_is_integer(json_object_get(tr, "last_rss_delta_bytes")))
        fail_msg("the trims' counts are integers");
    json_t *m = json_object_get(o, "memory_limit");
    if (!json_is_integer(json_object_get(m, "limit_bytes")) || !json_is_integer(json_object_get(m, "cgroup_max")))
        fail_msg("memory_limit's figures are integers");
    assert_true(json_is_real(json_object_get(m, "pressure_some_avg10")));
    expect_str(json_string_value(json_object_get(json_array_get(json_object_get(o, "unknown"), 0), "rule")),
               "growth", "unknown");
    json_decref(o);
    free(json);
    free(t);
}

/* node_cache on two pages 20 s apart: +10 MiB, 1000 allocations more. */
static void two_pages_budget(tide_doctor_report *r1, tide_doctor_report *r2, const char *grown,
                             const char *limit, const char *budget)
{
    char *p1 = HEALTHY, *p2 = HEALTHY;
    if (budget) {
        p1 = page_set(p1, "tide_memory_consumer_budget_bytes{consumer=\"node_cache\"}", budget);
        p2 = page_set(p2, "tide_memory_consumer_budget_bytes{consumer=\"node_cache\"}", budget);
    }
    if (limit) p1 = page_set(p1, "tide_memory_limit_bytes", limit), p2 = page_set(p2, "tide_memory_limit_bytes", limit);
    p2 = page_set(p2, "tide_memory_consumer_bytes{consumer=\"node_cache\"}", grown);
    p2 = page_set(p2, "tide_memory_allocations_total{consumer=\"node_cache\"}", "1200");
    p2 = page_set(p2, "tide_memory_allocated_bytes_total{consumer=\"node_cache\"}", "22020096");
    expect_rc(tide_doctor_analyze(p1, r1), 0, "page 1");
    expect_rc(tide_doctor_analyze(p2, r2), 0, "page 2");
    free(p1);
    free(p2);
}

static void two_pages(tide_doctor_report *r1, tide_doctor_report *r2, const char *grown, const char *limit)
{
    two_pages_budget(r1, r2, grown, limit, NULL);
}

static void two_pages_with_a_consumer_growing_give_the_growth_finding_with_its_rate(void **state)
{
    (void)state;
    tide_doctor_report *r1 = malloc(sizeof *r1), *r2 = malloc(sizeof *r2);
    assert_true(r1 && r2);

    /* 8480 + 10 MiB; at 512 KiB/s the 512 MiB limit, 533721088 bytes away, is 1018 s off: bad
     * (with a node cache budget of 1 GiB, whose hard limit is past the limit). */
    two_pages_budget(r1, r2, "10494240", NULL, "1073741824");
    expect_u64(r2->nfindings, 0, "one page alone: no growth finding");
    expect_rc(tide_doctor_analyze_growth(r2, r1, 20), 0, "growth");
    const tide_doctor_finding *f = finding_of(r2, "growth");
    if (f == NULL) fail_msg("expected the growth finding, got %zu findings", r2->nfindings);
    assert_int_equal(f->severity, TIDE_DOCTOR_BAD);
    expect_contains(f->summary, "node_cache grew 10 MiB in 20 s (512 KiB/s)", "the rate");
    expect_contains(f->detail, "at that rate it reaches the 512 MiB limit in 1018 s", "time to the limit");
    assert_true(fabs(figure_of(f, "bytes_per_second") - 524288) < 1e-6);
    assert_true(fabs(figure_of(f, "allocations_per_second") - 50) < 1e-6);
    assert_true(fabs(figure_of(f, "allocated_bytes_per_second") - 1048576) < 1e-6);
    expect_u64(r2->nunknown, 0, "the one-page result replaced");
    assert_int_equal(r2->severity, TIDE_DOCTOR_BAD);
    expect_contains(r2->summary, "node_cache grew 10 MiB", "the verdict");

    /* The page's own budget, 64 MiB: the node cache stops at its 128 MiB hard
     * limit, nearer than the 512 MiB limit, so no time is projected: warn. */
    two_pages(r1, r2, "10494240", NULL);
    expect_rc(tide_doctor_analyze_growth(r2, r1, 20), 0, "growth");
    f = finding_of(r2, "growth");
    assert_non_null(f);
    assert_int_equal(f->severity, TIDE_DOCTOR_WARN);
    if (strstr(f->detail, "reaches")) fail_msg("a capped consumer's time to the limit: %s", f->detail);
    expect_contains(f->detail, "(to 128 MiB, its hard limit, twice its budget)", "the cap");
    expect_contains(f->detail, "so it alone cannot reach the limit", "the reason");

    /* With 8 GiB of limit the same growth is hours away: warn. */
    two_pages(r1, r2, "10494240", "8589934592");
    expect_rc(tide_doctor_analyze_growth(r2, r1, 20), 0, "growth");
    f = finding_of(r2, "growth");
    assert_non_null(f);
    assert_int_equal(f->severity, TIDE_DOCTOR_WARN);
    /* The commit's buffers, 10 MiB more: transient, warn, and no time to
     * the limit projected from them, over 20 s or 600 s alike. */
    {
        char *q1 = HEALTHY, *q2 = page_set(HEALTHY, "tide_memory_consumer_bytes{consumer=\"store_commit\"}", "10485760");
        static const double spans[] = { 20, 600 };
        for (size_t i = 0; i < 2; i++) {
            expect_rc(tide_doctor_analyze(q1, r1), 0, "page 1");
            expect_rc(tide_doctor_analyze(q2, r2), 0, "page 2");
            expect_rc(tide_doctor_analyze_growth(r2, r1, spans[i]), 0, "growth");
            f = finding_of(r2, "growth");
            assert_non_null(f);
            assert_int_equal(f->severity, TIDE_DOCTOR_WARN);
            expect_contains(f->summary, ", transient", "the summary");
            expect_contains(f->detail, "store_commit is transient", "the detail");
            if (strstr(f->detail, "reaches")) fail_msg("a transient consumer's time to the limit: %s", f->detail);
            for (size_t k = 0; k < f->nfigures; k++)
                if (strcmp(f->figures[k].name, "seconds_to_limit") == 0) fail_msg("seconds_to_limit for store_commit");
            expect_contains(f->advice, "two moments, not a trend", "the advice");
        }
        free(q1);
        free(q2);
    }
    /* Below 1 MiB: no finding, and growth passes. */
    two_pages(r1, r2, "1056000", NULL);
    expect_rc(tide_doctor_analyze_growth(r2, r1, 20), 0, "growth");
    if (finding_of(r2, "growth")) fail_msg("1 MiB less 1056 bytes of growth is under the threshold");
    assert_true(passed(r2, "growth"));
    /* The pages the other way round: counters that went down, the node
     * restarted between them; said, not read. */
    two_pages(r1, r2, "10494240", NULL);
    expect_rc(tide_doctor_analyze_growth(r1, r2, 20), 0, "growth");
    if (finding_of(r1, "growth")) fail_msg("a restart is no growth");
    expect_contains(r1->unknown[r1->nunknown - 1].why, "went down between the scrapes: the node restarted", "reset");
    expect_rc(tide_doctor_analyze_growth(r1, r2, 0), TIDE_EINVAL, "no interval");
    free(r1);
    free(r2);
}

/* Two pages 20 s apart, the second with `series` set to `v2` (and the
 * first to `v1`): the later report after tide_doctor_analyze_growth. */
static void two_counters(tide_doctor_report *r1, tide_doctor_report *r2, const char *series, const char *v1,
                         const char *v2)
{
    char *p1 = page_set(HEALTHY, series, v1), *p2 = page_set(HEALTHY, series, v2);
    expect_rc(tide_doctor_analyze(p1, r1), 0, "page 1");
    expect_rc(tide_doctor_analyze(p2, r2), 0, "page 2");
    expect_rc(tide_doctor_analyze_growth(r2, r1, 20), 0, "two scrapes");
    free(p1);
    free(p2);
}

/* Since-start counters are judged by their increase when there are two
 * scrapes: a refusal of last week, the same on both pages, is not news. */
static void with_two_scrapes_overload_and_cgroup_events_judge_the_increase(void **state)
{
    (void)state;
    tide_doctor_report *r1 = malloc(sizeof *r1), *r2 = malloc(sizeof *r2);
    const tide_doctor_finding *f;
    assert_true(r1 && r2);

    two_counters(r1, r2, "tide_overload_rejected_requests_total{reason=\"write\"}", "5", "5");
    if (finding_of(r2, "overload")) fail_msg("no refusal between the scrapes, yet: %s", finding_of(r2, "overload")->summary);
    assert_true(passed(r2, "overload"));
    assert_int_equal(r2->severity, TIDE_DOCTOR_OK);
    two_counters(r1, r2, "tide_overload_rejected_requests_total{reason=\"write\"}", "5", "8");
    f = finding_of(r2, "overload");
    assert_non_null(f);
    assert_int_equal(f->severity, TIDE_DOCTOR_WARN);
    expect_contains(f->summary, "3 requests refused for memory in the last 20 s (503)", "the increase");
    /* A counter that went down: the node restarted; the later page's since start. */
    two_counters(r1, r2, "tide_overload_rejected_requests_total{reason=\"write\"}", "9", "2");
    expect_contains(finding_of(r2, "overload")->summary, "2 requests refused for memory since start (the node "
                    "restarted between the scrapes)", "a restart");
    /* Flapping: 30 changes since start but 2 in the window passes; 25 more warns with cache advice first. */
    two_counters(r1, r2, "tide_overload_level_changes_total", "30", "32");
    assert_true(passed(r2, "overload"));
    two_counters(r1, r2, "tide_overload_level_changes_total", "30", "55");
    f = finding_of(r2, "overload");
    assert_non_null(f);
    expect_contains(f->summary, "changed 25 times in the last 20 s", "the flap");
    const char *cache = strstr(f->advice, "lower --cache-budget"), *hyst = strstr(f->advice, "--memory-hysteresis");
    if (cache == NULL || hyst == NULL || hyst < cache) fail_msg("the flap advice: cache first, hysteresis second: %s",
                                                                f->advice);
    /* cgroup events */
    two_counters(r1, r2, "tide_cgroup_memory_events_total{event=\"max\"}", "17", "17");
    assert_true(passed(r2, "cgroup_events"));
    two_counters(r1, r2, "tide_cgroup_memory_events_total{event=\"max\"}", "17", "20");
    f = finding_of(r2, "cgroup_events");
    assert_non_null(f);
    assert_int_equal(f->severity, TIDE_DOCTOR_WARN);
    expect_contains(f->summary, "reached its limit 3 times in the last 20 s", "max up");
    two_counters(r1, r2, "tide_cgroup_memory_events_total{event=\"oom\"}", "1", "2");
    assert_int_equal(finding_of(r2, "cgroup_events")->severity, TIDE_DOCTOR_BAD);
    two_counters(r1, r2, "tide_cgroup_memory_events_total{event=\"oom_kill\"}", "1", "1");
    f = finding_of(r2, "cgroup_events");
    assert_non_null(f);
    assert_int_equal(f->severity, TIDE_DOCTOR_WARN);
    expect_contains(f->summary, "1 processes OOM-killed since the cgroup was made, none in the last 20 s", "old kill");
    free(r1);
    free(r2);
}

static void pages_of_an_older_node_grow_without_churn_figures_and_no_crash(void **state)
{
    (void)state;
    char *p1 = fixture("real-unbounded.prom"), *p2 = fixture("real-unbounded.prom");
    tide_doctor_report *r1 = malloc(sizeof *r1), *r2 = malloc(sizeof *r2);
    assert_true(r1 && r2);

    p2 = page_set(p2, "tide_memory_consumer_bytes{consumer=\"node_cache\"}", "104857600");
    expect_rc(tide_doctor_analyze(p1, r1), 0, "page 1");
    expect_rc(tide_doctor_analyze(p2, r2), 0, "page 2");
    expect_rc(tide_doctor_analyze_growth(r2, r1, 10), 0, "growth");
    const tide_doctor_finding *f = finding_of(r2, "growth");
    assert_non_null(f);
    assert_int_equal(f->severity, TIDE_DOCTOR_BAD);   /* node_cache is unbounded there */
    expect_contains(f->advice, "it is unbounded", "the advice");
    for (size_t i = 0; i < f->nfigures; i++)
        if (strstr(f->figures[i].name, "per_second") && strcmp(f->figures[i].name, "bytes_per_second") != 0)
            fail_msg("an older page has no churn counters, yet figure %s", f->figures[i].name);
    free(p1);
    free(p2);
    free(r1);
    free(r2);
}

/* ---- the archive ------------------------------------------------------------------ */

static const char *const archive_rules[] = { "archive_conflict", "archive_up", "archive_lag",
                                             "archive_rotation_waits", "archive_sync_failures" };

/* healthy.prom with the archive's families of a node with archive=rados
 * in `mode`, every figure checkable by hand: the cluster answers, no
 * conflict, 1 MiB behind, 3 of 4 generations sealed, 40 syncs waited. */
static char *with_archive_mode(const char *mode)
{
    char *h = HEALTHY, *out = NULL;
    int n = asprintf(&out, "%s"
        "# HELP tide_archive_info x\n# TYPE tide_archive_info gauge\n"
        "tide_archive_info{pool=\"tide\",prefix=\"node1\",mode=\"%s\"} 1\n"
        "# HELP tide_archive_up x\n# TYPE tide_archive_up gauge\ntide_archive_up 1\n"
        "# HELP tide_archive_conflict x\n# TYPE tide_archive_conflict gauge\ntide_archive_conflict 0\n"
        "# HELP tide_archive_lag_bytes x\n# TYPE tide_archive_lag_bytes gauge\ntide_archive_lag_bytes 1048576\n"
        "# HELP tide_archive_uploaded_bytes_total x\n# TYPE tide_archive_uploaded_bytes_total counter\n"
        "tide_archive_uploaded_bytes_total 5368709120\n"
        "# HELP tide_archive_sealed_generations x\n# TYPE tide_archive_sealed_generations gauge\n"
        "tide_archive_sealed_generations 3\n"
        "# HELP tide_archive_generations x\n# TYPE tide_archive_generations gauge\ntide_archive_generations 4\n"
        "# HELP tide_archive_bytes x\n# TYPE tide_archive_bytes gauge\ntide_archive_bytes 4294967296\n"
        "# HELP tide_archive_reads_total x\n# TYPE tide_archive_reads_total counter\n"
        "tide_archive_reads_total{result=\"found\"} 12\ntide_archive_reads_total{result=\"missed\"} 5\n"
        "tide_archive_reads_total{result=\"failed\"} 0\n"
        "# HELP tide_archive_errors_total x\n# TYPE tide_archive_errors_total counter\n"
        "tide_archive_errors_total{op=\"write\"} 2\ntide_archive_errors_total{op=\"read\"} 0\n"
        "tide_archive_errors_total{op=\"manifest\"} 0\ntide_archive_errors_total{op=\"delete\"} 0\n"
        "tide_archive_errors_total{op=\"connect\"} 1\n"
        "# HELP tide_archive_rotation_waits_total x\n# TYPE tide_archive_rotation_waits_total counter\n"
        "tide_archive_rotation_waits_total 0\n"
        "# HELP tide_archive_sync_waits_total x\n# TYPE tide_archive_sync_waits_total counter\n"
        "tide_archive_sync_waits_total 40\n"
        "# HELP tide_archive_sync_failures_total x\n# TYPE tide_archive_sync_failures_total counter\n"
        "tide_archive_sync_failures_total 0\n", h, mode);
    assert_true(n > 0);
    free(h);
    return out;
}

#define WITH_ARCHIVE with_archive_mode("primary")

/* A status with the archive's object: archive_sync, the last failure,
 * and two local generations. */
static const char status_archive[] =
    "{\"online_delete\":{\"enabled\":true,\"generations\":[{\"id\":8,\"dir\":\"gen-000000000008\",\"bytes\":1048576},"
    "{\"id\":7,\"dir\":\"gen-000000000007\",\"bytes\":2097152}],\"rotations\":7},"
    "\"archive\":{\"pool\":\"tide\",\"prefix\":\"node1\",\"mode\":\"primary\",\"sync\":\"archive\",\"up\":true,"
    "\"conflict\":false,\"problem\":\"rados tide/node1.manifest: write: Connection timed out\","
    "\"lag_bytes\":1048576,\"sealed_generations\":3,\"generations\":[{\"id\":8,\"state\":\"uploading\","
    "\"uploaded_bytes\":524288},{\"id\":7,\"state\":\"sealed\",\"uploaded_bytes\":2097152}]}}";

static int among_results(const tide_doctor_report *r, const char *rule)
{
    if (finding_of(r, rule) || passed(r, rule)) return 1;
    for (size_t i = 0; i < r->nunknown; i++)
        if (strcmp(r->unknown[i].rule, rule) == 0) return 1;
    return 0;
}

/* A node without an archive (or from before it): the report says nothing
 * of one, not even from a status that has the object. */
static void a_page_without_the_archives_families_says_nothing_of_an_archive(void **state)
{
    (void)state;
    tide_doctor_report r;
    char *p = HEALTHY, *text, *json = NULL;
    json_error_t err;

    expect_rc(tide_doctor_analyze(p, &r), 0, "analyze");
    expect_rc(tide_doctor_analyze_status(&r, status_archive, NULL, NOW_US), 0, "status");
    assert_int_equal(r.archive.present, 0);
    for (size_t i = 0; i < 5; i++)
        if (among_results(&r, archive_rules[i])) fail_msg("a page without the archive gave %s a result", archive_rules[i]);
    expect_u64(r.npassed, 9, "the other rules as before");
    text = format_text(&r);
    if (strstr(text, "Archive") || strstr(text, "archive")) fail_msg("no archive, yet the words say: %s", text);
    free(text);
    expect_rc(tide_doctor_json(&r, &json), 0, "json");
    json_t *o = json_loads(json, 0, &err);
    if (o == NULL) fail_msg("doctor JSON does not parse: %s", err.text);
    if (!json_is_null(json_object_get(o, "archive"))) fail_msg("\"archive\" should be null without one: %s", json);
    json_decref(o);
    free(json);
    free(p);
}

/* A healthy archive: every archive rule passes, and the words and the JSON
 * give every figure, with the status's archive_sync, generations and
 * last failure. */
static void a_healthy_archive_passes_its_rules_and_shows_every_figure(void **state)
{
    (void)state;
    tide_doctor_report r;
    char *p = WITH_ARCHIVE, *text, *json = NULL;
    json_error_t err;

    expect_rc(tide_doctor_analyze(p, &r), 0, "analyze");
    assert_int_equal(r.archive.present, 1);
    expect_str(r.archive.prefix, "node1", "the prefix label");
    if (r.nfindings) fail_msg("a healthy archive gave %s: %s", r.findings[0].rule, r.findings[0].summary);
    for (size_t i = 0; i < 5; i++)
        if (!passed(&r, archive_rules[i])) fail_msg("%s should pass on a healthy archive", archive_rules[i]);
    expect_u64(r.npassed, 14, "nine rules and the archive's five");
    text = format_text(&r);
    expect_contains(text, "Archive: pool tide, prefix node1 (primary): the cluster answers; no conflict.\n",
                    "where it is, without the status");
    expect_contains(text, "  3 generations sealed of 4 listed (4 GiB); lag 1 MiB; 5 GiB uploaded since start.\n",
                    "what it holds");
    expect_contains(text, "12 found, 5 missed, 0 failed", "the reads");
    expect_contains(text, "Rotations waited for it 0 times; syncs that waited for it 40, 0 of them failed.",
                    "the waits");
    expect_contains(text, "connect 1, write 2, read 0, manifest 0, delete 0", "the failed calls");
    if (strstr(text, "Local generations")) fail_msg("no status, no generations: %s", text);
    free(text);

    expect_rc(tide_doctor_analyze_status(&r, status_archive, NULL, NOW_US), 0, "status");
    text = format_text(&r);
    expect_contains(text, "Archive: pool tide, prefix node1 (primary), archive_sync=archive: the cluster answers",
                    "archive_sync from the status");
    expect_contains(text, "  Local generations in the archive, newest first: 8 uploading (512 KiB there), 7 "
                    "sealed.\n", "each local generation's state");
    expect_contains(text, "  The node's last failure: rados tide/node1.manifest: write: Connection timed out\n",
                    "the node's own words");
    free(text);

    expect_rc(tide_doctor_json(&r, &json), 0, "json");
    json_t *o = json_loads(json, 0, &err);
    if (o == NULL) fail_msg("doctor JSON does not parse: %s", err.text);
    json_t *a = json_object_get(o, "archive");
    if (!json_is_object(a)) fail_msg("\"archive\" should be an object: %s", json);
    expect_str(json_string_value(json_object_get(a, "pool")), "tide", "json pool");
    expect_str(json_string_value(json_object_get(a, "mode")), "primary", "json mode");
    expect_str(json_string_value(json_object_get(a, "sync")), "archive", "json sync");
    if (!json_is_true(json_object_get(a, "up")) || !json_is_false(json_object_get(a, "conflict")))
        fail_msg("up true and conflict false as booleans: %s", json);
    static const char *const ints[] = { "lag_bytes", "sealed_generations", "generations", "archive_bytes",
                                        "uploaded_bytes", "rotation_waits", "sync_waits", "sync_failures" };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (!json_is_integer(json_object_get(a, ints[i]))) fail_msg("archive.%s should be an integer: %s", ints[i], json);
    expect_u64((uint64_t)json_integer_value(json_object_get(a, "archive_bytes")), 4ull << 30, "json archive bytes");
    expect_u64((uint64_t)json_integer_value(json_object_get(json_object_get(a, "reads"), "found")), 12, "json reads");
    expect_u64((uint64_t)json_integer_value(json_object_get(json_object_get(a, "errors"), "write")), 2, "json errors");
    json_t *g = json_array_get(json_object_get(a, "local_generations"), 0);
    expect_str(json_string_value(json_object_get(g, "state")), "uploading", "json generation state");
    expect_u64((uint64_t)json_integer_value(json_object_get(g, "uploaded_bytes")), 512u << 10, "json uploaded");
    json_decref(o);
    free(json);
    free(p);
}

/* Each of the archive's findings, with its severity, and its absence
 * short of the threshold. */
static void each_archive_rule_fires_on_its_figure_and_not_before(void **state)
{
    (void)state;
    tide_doctor_report r;
    const tide_doctor_finding *f;
    char *p;

    /* The cluster away: bad, the consequences and the knobs in the advice. */
    p = page_set(WITH_ARCHIVE, "tide_archive_up", "0");
    expect_rc(tide_doctor_analyze(p, &r), 0, "analyze");
    f = finding_of(&r, "archive_up");
    assert_non_null(f);
    expect_contains(f->advice, "writes commit locally and tide_archive_lag_bytes grows", "writes go on");
    expect_contains(f->advice, "waits, so the disk grows", "rotations wait");
    expect_contains(f->advice, "with archive_sync=archive every PUT ?sync=1, answer 503 archive_unavailable",
                    "what answers 503");
    expect_contains(f->advice, "--archive-conf", "the knobs");
    expect_contains(f->detail, "connect 1, write 2", "the failed calls");
    assert_true(figure_of(f, "up") == 0);
    free(p);
    expect_only("the cluster away", page_set(WITH_ARCHIVE, "tide_archive_up", "0"), "archive_up", TIDE_DOCTOR_BAD,
                "the archive's cluster does not answer (pool tide, prefix node1 (primary))");
    p = page_set(with_archive_mode("replica"), "tide_archive_up", "0");
    expect_rc(tide_doctor_analyze(p, &r), 0, "analyze");
    f = finding_of(&r, "archive_up");
    assert_non_null(f);
    expect_contains(f->advice, "a replica takes no writes", "a replica's advice");
    free(p);

    /* A conflict: bad, with the prefix to change and the restore. */
    expect_only("a conflict", page_set(WITH_ARCHIVE, "tide_archive_conflict", "1"), "archive_conflict",
                TIDE_DOCTOR_BAD, "the archive's prefix node1 is another writer's: this node has stopped uploading");
    p = page_set(WITH_ARCHIVE, "tide_archive_conflict", "1");
    expect_rc(tide_doctor_analyze(p, &r), 0, "analyze");
    f = finding_of(&r, "archive_conflict");
    assert_non_null(f);
    expect_contains(f->advice, "its own --archive-prefix", "the prefix");
    expect_contains(f->advice, "tide archive restore", "the restore");
    free(p);

    /* The lag: warn from 256 MiB. */
    expect_none("255 MiB behind", page_set(WITH_ARCHIVE, "tide_archive_lag_bytes", "267386880"));
    expect_only("256 MiB behind", page_set(WITH_ARCHIVE, "tide_archive_lag_bytes", "268435456"), "archive_lag",
                TIDE_DOCTOR_WARN, "the archive is 256 MiB behind this node");

    /* Rotations that waited, syncs that failed: warn from one, since start. */
    expect_only("a rotation waited", page_set(WITH_ARCHIVE, "tide_archive_rotation_waits_total", "3"),
                "archive_rotation_waits", TIDE_DOCTOR_WARN, "rotations waited for the archive since start (3 looks");
    expect_only("syncs failed", page_set(WITH_ARCHIVE, "tide_archive_sync_failures_total", "2"),
                "archive_sync_failures", TIDE_DOCTOR_WARN,
                "2 syncs the archive did not take within archive_timeout since start (503 archive_unavailable)");
    p = page_set(WITH_ARCHIVE, "tide_archive_sync_failures_total", "2");
    expect_rc(tide_doctor_analyze(p, &r), 0, "analyze");
    f = finding_of(&r, "archive_sync_failures");
    assert_non_null(f);
    expect_contains(f->detail, "tide_archive_sync_failures_total 2 of tide_archive_sync_waits_total 40", "of the waits");
    expect_contains(f->advice, "--archive-timeout", "the knob");
    free(p);

    /* A figure the page lacks: that rule cannot tell, the others judge. */
    p = page_set(WITH_ARCHIVE, "tide_archive_lag_bytes", "1");
    char *cut = strstr(p, "\ntide_archive_lag_bytes 1\n");
    assert_non_null(cut);
    cut[22] = 'z';                               /* tide_archive_lag_bytez: another family's */
    expect_rc(tide_doctor_analyze(p, &r), 0, "analyze");
    assert_false(passed(&r, "archive_lag"));
    assert_false(finding_of(&r, "archive_lag") != NULL);
    assert_true(among_results(&r, "archive_lag"));
    assert_true(passed(&r, "archive_up"));
    free(p);
}

/* Two scrapes: the archive's counters by their increase. */
static void with_two_scrapes_the_archives_counters_judge_the_increase(void **state)
{
    (void)state;
    tide_doctor_report *r1 = malloc(sizeof *r1), *r2 = malloc(sizeof *r2);
    const tide_doctor_finding *f;
    assert_true(r1 && r2);
    char *p1, *p2;

    p1 = page_set(WITH_ARCHIVE, "tide_archive_rotation_waits_total", "4");
    p2 = page_set(WITH_ARCHIVE, "tide_archive_rotation_waits_total", "4");
    expect_rc(tide_doctor_analyze(p1, r1), 0, "page 1");
    expect_rc(tide_doctor_analyze(p2, r2), 0, "page 2");
    assert_non_null(finding_of(r2, "archive_rotation_waits"));    /* one page: since start */
    expect_rc(tide_doctor_analyze_growth(r2, r1, 20), 0, "two scrapes");
    if (finding_of(r2, "archive_rotation_waits")) fail_msg("no wait between the scrapes, yet a finding");
    assert_true(passed(r2, "archive_rotation_waits"));
    free(p2);
    p2 = page_set(WITH_ARCHIVE, "tide_archive_rotation_waits_total", "6");
    expect_rc(tide_doctor_analyze(p2, r2), 0, "page 2");
    expect_rc(tide_doctor_analyze_growth(r2, r1, 20), 0, "two scrapes");
    f = finding_of(r2, "archive_rotation_waits");
    assert_non_null(f);
    expect_contains(f->summary, "rotations waited for the archive in the last 20 s (2 looks", "the increase");
    free(p1);
    free(p2);

    p1 = page_set(WITH_ARCHIVE, "tide_archive_sync_failures_total", "5");
    p2 = page_set(page_set(WITH_ARCHIVE, "tide_archive_sync_failures_total", "7"), "tide_archive_sync_waits_total",
                  "50");
    expect_rc(tide_doctor_analyze(p1, r1), 0, "page 1");
    expect_rc(tide_doctor_analyze(p2, r2), 0, "page 2");
    expect_rc(tide_doctor_analyze_growth(r2, r1, 20), 0, "two scrapes");
    f = finding_of(r2, "archive_sync_failures");
    assert_non_null(f);
    expect_contains(f->detail, "tide_archive_sync_failures_total 2 of tide_archive_sync_waits_total 10 in the "
                    "last 20 s", "the increases");
    free(p2);
    p2 = page_set(WITH_ARCHIVE, "tide_archive_sync_failures_total", "5");
    expect_rc(tide_doctor_analyze(p2, r2), 0, "page 2");
    expect_rc(tide_doctor_analyze_growth(r2, r1, 20), 0, "two scrapes");
    assert_true(passed(r2, "archive_sync_failures"));
    free(p1);
    free(p2);
    free(r1);
    free(r2);
}

/* --help has each rule of the table, and each number of its thresholds. */
static void tide_doctor_help_documents_every_rule_with_its_thresholds(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(th_run_tide("doctor --help", 0, &out), 0);
    const tide_doctor_rule *d;
    for (size_t i = 0; (d = tide_doctor_rule_at(i)) != NULL; i++) {
        char head[64];
        snprintf(head, sizeof head, "\n    %s\n", d->name);
        const char *at = strstr(out, head);
        if (at == NULL) fail_msg("--help lacks rule %s", d->name);
        const char *next = strstr(at + strlen(head), "\n    ") , *end = at + strlen(head);
        while (next && next[5] == ' ') next = strstr(next + 1, "\n    ");   /* the paragraph's own lines */
        end = next ? next : out + strlen(out);
        for (const char *p = d->thresholds; *p; p++) {
            if (!isdigit((unsigned char)*p)) continue;
            size_t n = strspn(p, "0123456789.");
            char num[32];
            snprintf(num, sizeof num, "%.*s", (int)n, p);
            char *hit = strstr(at, num);
            if (hit == NULL || hit >= end) fail_msg("--help's %s paragraph lacks its threshold %s", d->name, num);
            p += n - 1;
        }
    }
    expect_contains(out, "--interval S", "the option");
    free(out);
}

/* The table's RSS rules say which RSS they judge: the anonymous part only
 * when the page says RssFile, not "anonymous RSS (RSS less file-backed)"
 * unconditionally. */
static void the_rules_table_says_plain_rss_without_rss_file(void **state)
{
    static const char *const names[] = { "rss_vs_live", "allocator_free" };
    (void)state;
    for (size_t k = 0; k < 2; k++) {
        const tide_doctor_rule *d = NULL;
        for (size_t i = 0; (d = tide_doctor_rule_at(i)) != NULL && strcmp(d->name, names[k]) != 0; i++) {}
        if (d == NULL) fail_msg("no rule %s", names[k]);
        expect_contains(d->thresholds, "anonymous RSS (RSS less file-backed; the whole RSS when the page has no "
                        "tide_process_rss_file_bytes)", names[k]);
    }
}

/* ---- bin/tide doctor against a canned HTTP server ------------------------------- */

typedef struct canned {
    int fd;                    /* listening on 127.0.0.1:port */
    unsigned port;
    pthread_t thread;
    atomic_int stop;
    pthread_mutex_t mu;        /* guards what is served */
    const char *body;
    size_t body_len;
    const char *ctype;
    const char *next;          /* served from the second /metrics on; NULL: body again */
    size_t next_len;
    const char *status_body;   /* GET /v1/status; NULL: 404 */
    atomic_int status_gets;    /* requests of /v1/status served */
} canned;

static canned server;

static void canned_serve(canned *c, const char *ctype, const char *body, size_t len)
{
    pthread_mutex_lock(&c->mu);
    c->ctype = ctype, c->body = body, c->body_len = len;
    pthread_mutex_unlock(&c->mu);
}

static void canned_serve_status(canned *c, const char *body)
{
    pthread_mutex_lock(&c->mu);
    c->status_body = body;
    pthread_mutex_unlock(&c->mu);
}

static void *canned_main(void *arg)
{
    canned *c = arg;
    while (!atomic_load(&c->stop)) {
        struct pollfd pfd = { c->fd, POLLIN, 0 };
        char req[4096], head[256];
        size_t got = 0;
        if (poll(&pfd, 1, 100) <= 0) continue;
        int s = accept4(c->fd, NULL, NULL, SOCK_CLOEXEC);
        if (s < 0) continue;
        struct timeval tv = { 5, 0 };
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        while (got < sizeof req - 1) {           /* the request's head, then answer */
            ssize_t n = read(s, req + got, sizeof req - 1 - got);
            if (n <= 0) break;
            got += (size_t)n;
            req[got] = '\0';
            if (strstr(req, "\r\n\r\n")) break;
        }
        pthread_mutex_lock(&c->mu);
        int is_status = strncmp(req, "GET /v1/status ", 15) == 0;
        const char *body = is_status ? c->status_body : c->body;
        size_t blen = is_status ? (body ? strlen(body) : 0) : c->body_len;
        if (is_status) atomic_fetch_add(&c->status_gets, 1);
        int hl = snprintf(head, sizeof head, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                          "Connection: close\r\n\r\n", is_status && !body ? "404 Not Found" : "200 OK",
                          is_status ? "application/json" : c->ctype, blen);
        ssize_t w = write(s, head, (size_t)hl);
        if (w == hl && blen) w = write(s, body, blen);
        if (!is_status && c->next) c->body = c->next, c->body_len = c->next_len, c->next = NULL;
        pthread_mutex_unlock(&c->mu);
        (void)w;
        close(s);
    }
    return NULL;
}

static int canned_start(void **state)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = 0 };
    socklen_t al = sizeof a;

    (void)state;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    pthread_mutex_init(&server.mu, NULL);
    server.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (server.fd < 0 || bind(server.fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(server.fd, 16) != 0
        || getsockname(server.fd, (struct sockaddr *)&a, &al) != 0) {
        perror("canned server");
        return -1;
    }
    server.port = ntohs(a.sin_port);
    canned_serve(&server, "text/plain", "", 0);
    if (pthread_create(&server.thread, NULL, canned_main, &server) != 0) return -1;
    return 0;
}

static int canned_stop(void **state)
{
    (void)state;
    atomic_store(&server.stop, 1);
    pthread_join(server.thread, NULL);
    close(server.fd);
    pthread_mutex_destroy(&server.mu);
    return 0;
}

/* Run bin/tide doctor against the canned server; its exit status, and
 * stdout and stderr in *out (malloc'd). */
static int run_doctor(char **out)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s/tide' doctor --timeout 20 http://127.0.0.1:%u/metrics 2>&1",
             th_bin_dir(), server.port);
    return th_run(cmd, out);
}

static void tide_doctor_exits_1_on_a_page_that_is_not_a_nodes_and_says_so(void **state)
{
    (void)state;
    static const char html[] = "<!DOCTYPE html>\n<html><head><title>Grafana</title></head>\n"
                               "<body>process_resident_memory_bytes 5</body></html>\n";
    static const char garbage[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR tide_x 1\n";
    static const char prose[] = "It works!\nThis is the default page of this server 42\n";
    static const struct { const char *what, *ctype, *body; size_t len; const char *part; } cases[] = {
        { "Prometheus' own /metrics", "text/plain; version=0.0.4; charset=utf-8", prometheus_page,
          sizeof prometheus_page - 1, "does not look like a tide node's /metrics: no tide_* families" },
        { "an HTML page", "text/html", html, sizeof html - 1,
          "does not look like a tide node's /metrics: no tide_* families (no metric samples at all; it looks like HTML)" },
        { "an empty page", "text/plain", "", 0, "does not look like a tide node's /metrics: an empty page" },
        { "a 200 of binary garbage", "application/octet-stream", garbage, sizeof garbage - 1,
          "does not look like a tide node's /metrics: a NUL byte at offset 8" },
        { "a 200 of prose", "text/plain", prose, sizeof prose - 1, "no tide_* families (no metric samples at all)" },
    };
    char url_part[96], *out = NULL;

    snprintf(url_part, sizeof url_part, "tide doctor: http://127.0.0.1:%u/metrics does not look", server.port);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        canned_serve(&server, cases[i].ctype, cases[i].body, cases[i].len);
        int st = run_doctor(&out);
        if (st != 1) fail_msg("%s: expected tide doctor to exit 1, got %d: %s", cases[i].what, st, out);
        expect_contains(out, url_part, cases[i].what);
        expect_contains(out, cases[i].part, cases[i].what);
        if (strstr(out, "Allocator:") != NULL) fail_msg("%s: expected no report, got '%s'", cases[i].what, out);
        free(out);
    }

    /* The same server with a node's page: the report, exit 0; /v1/status
     * is 404 (an older node): said, not an error. */
    canned_serve(&server, "text/plain; version=0.0.4", page, sizeof page - 1);
    canned_serve_status(&server, NULL);
    int st = run_doctor(&out);
    if (st != 0) fail_msg("a node's page: expected tide doctor to exit 0, got %d: %s", st, out);
    expect_contains(out, "Allocator: glibc 2.36.", "the report");
    expect_contains(out, "the disk side is unknown: /v1/status was not read", "the 404 told");
    expect_contains(out, "/v1/status: HTTP 404", "the 404's reason");
    free(out);
}

static void tide_doctor_reads_the_disk_side_from_the_nodes_status(void **state)
{
    (void)state;
    char *p = page_with(disk_families), *out = NULL;
    int before = atomic_load(&server.status_gets);

    canned_serve(&server, "text/plain; version=0.0.4", p, strlen(p));
    canned_serve_status(&server, status_on);
    int st = run_doctor(&out);
    if (st != 0) fail_msg("expected tide doctor to exit 0, got %d: %s", st, out);
    if (atomic_load(&server.status_gets) != before + 1)
        fail_msg("expected one GET /v1/status, got %d", atomic_load(&server.status_gets) - before);
    expect_contains(out, "Disk: 3 MiB in 2 generations, newest first: 8 (gen-000000000008)", "generations");
    expect_contains(out, "Disk finding: advisory_delete is on and can_delete is never", "the finding");
    expect_contains(out, "Disk finding: 2 rotation attempts failed", "failures");
    free(out);
    canned_serve_status(&server, NULL);
    canned_serve(&server, "text/plain", "", 0);
    free(p);
}

/* How tests/fixtures/doctor/real-*.prom were made: with the variable set
 * to a file name, the real node's page is written there (the recorded
 * pages then got the memory limit's families by hand). */
static void record_page(const char *var, const char *text)
{
    const char *path = getenv(var);
    if (path == NULL || !*path) return;
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* --interval: two scrapes, the second page different, the growth finding
 * with the seconds measured (at least the ones asked). */
static void tide_doctor_interval_scrapes_twice_and_finds_the_growth(void **state)
{
    (void)state;
    char *p1 = HEALTHY, *p2 = page_set(HEALTHY, "tide_memory_consumer_bytes{consumer=\"node_cache\"}", "10494240");
    char cmd[1200], *out = NULL;
    json_error_t err;

    pthread_mutex_lock(&server.mu);
    server.ctype = "text/plain; version=0.0.4", server.body = p1, server.body_len = strlen(p1);
    server.next = p2, server.next_len = strlen(p2);
    pthread_mutex_unlock(&server.mu);
    snprintf(cmd, sizeof cmd, "'%s/tide' doctor --json --interval 1 http://127.0.0.1:%u/metrics", th_bin_dir(),
             server.port);
    int st = th_run(cmd, &out);
    if (st != 0) fail_msg("tide doctor --interval 1 exited %d: %s", st, out);
    json_t *o = json_loads(out, 0, &err);
    if (o == NULL) fail_msg("--json does not parse: %s: %s", err.text, out);
    double s = json_real_value(json_object_get(o, "interval_seconds"));
    if (!(s >= 1.0)) fail_msg("expected at least 1 s between the scrapes, got %g", s);
    json_t *f0 = json_array_get(json_object_get(o, "findings"), 0);
    expect_str(json_string_value(json_object_get(f0, "rule")), "growth", "the growth finding");
    expect_contains(json_string_value(json_object_get(f0, "summary")), "node_cache grew 10 MiB", "its summary");
    assert_true(json_is_integer(json_object_get(json_object_get(f0, "figures"), "grown_bytes")));
    json_decref(o);
    free(out);

    /* One scrape in words: the verdict is the first line. */
    canned_serve(&server, "text/plain; version=0.0.4", p1, strlen(p1));
    st = run_doctor(&out);
    if (st != 0) fail_msg("tide doctor exited %d: %s", st, out);
    if (strncmp(out, "verdict: ok: nothing needs you", 30) != 0) fail_msg("the verdict is not first: %.200s", out);
    expect_contains(out, "cannot tell growth: needs two scrapes: run with --interval SECONDS", "one scrape");
    free(out);
    st = th_run_tide("doctor --interval 5000 http://127.0.0.1:1/", 1, &out);
    if (st != 2) fail_msg("an interval past 3600 is a usage error (2), got %d: %s", st, out);
    expect_contains(out, "--interval 5000: expected whole seconds from 0 to 3600", "the message");
    free(out);
    canned_serve(&server, "text/plain", "", 0);
    free(p1);
    free(p2);
}

static void on_a_real_node_with_an_unbounded_cache_the_doctor_names_the_knob(void **state)
{
    (void)state;
    char base[3000], dir[3100];
    tide_node_opts no;
    tide_node *n = NULL;
    tide_config c;
    tide_metrics_opts mo;
    tide_doctor_report r;
    char *argv[] = { "tided", "--cache-budget", "0", NULL };
    char *page_text = NULL, *words = NULL;
    size_t len = 0, wlen = 0;

    assert_int_equal(th_mkdtemp(base, sizeof base), 0);
    snprintf(dir, sizeof dir, "%s/data", base);
    tide_config_defaults(&c);
    expect_rc(tide_config_apply_args(&c, 3, argv), 0, "flags");
    expect_rc(tide_config_finish(&c), 0, "finish");
    tide_node_opts_init(&no);
    no.dir = dir;
    no.sweep_interval_ms = 0;
    no.cache_budget = 0;
    expect_rc(tide_node_open(&n, &no), 0, "open");
    tide_node_sweep(n, NULL);
    tide_metrics_opts_init(&mo);
    mo.config = &c;
    expect_rc(tide_metrics_render(n, &mo, &page_text, &len), 0, "render");
    record_page("TIDE_DOCTOR_RECORD", page_text);
    expect_rc(tide_doctor_analyze(page_text, &r), 0, "analyze");
    FILE *f = open_memstream(&words, &wlen);
    tide_doctor_format(&r, f);
    fclose(f);
    expect_contains(words, "Unbounded: node_cache. To bound it: set --cache-budget", "the knob named");
    expect_contains(words, "node_cache", "consumer listed");
    expect_contains(words, "Trims: 1 after 1 sweeps", "the one trim");
    assert_true(r.rss > 0);
    free(words);
    free(page_text);
    expect_rc(tide_node_close(n), 0, "close");
    th_rmrf(base);
}

/* A real node's page (node/metrics.c), rendered with the settings of
 * argv after one sweep; malloc'd. The node is closed and its directory
 * removed before it returns. memory_limit 0: none. */
static char *render_real_page(int argc, char **argv, size_t cache_budget, uint64_t memory_limit)
{
    char base[3000], dir[3100], *text = NULL;
    tide_node_opts no;
    tide_node *n = NULL;
    tide_config c;
    tide_metrics_opts mo;
    size_t len = 0;

    assert_int_equal(th_mkdtemp(base, sizeof base), 0);
    snprintf(dir, sizeof dir, "%s/data", base);
    tide_config_defaults(&c);
    expect_rc(tide_config_apply_args(&c, argc, argv), 0, "flags");
    expect_rc(tide_config_finish(&c), 0, "finish");
    tide_node_opts_init(&no);
    no.dir = dir;
    no.sweep_interval_ms = 0;
    no.cache_budget = cache_budget;
    no.memory_limit = memory_limit;
    no.memory_poll_ms = 0;                       /* one reading, below */
    expect_rc(tide_node_open(&n, &no), 0, "open");
    tide_node_sweep(n, NULL);
    expect_rc(tide_node_memory_check(n), 0, "a memory reading");
    tide_metrics_opts_init(&mo);
    mo.config = &c;
    expect_rc(tide_metrics_render(n, &mo, &text, &len), 0, "render");
    expect_rc(tide_node_close(n), 0, "close");
    th_rmrf(base);
    return text;
}

/* The page of a node from before memory_limit with every consumer bounded,
 * recorded (real-bounded.prom) before the node had the new families: the
 * rules that need them say so, and none crashes. */
static void on_an_older_nodes_recorded_page_the_new_rules_say_what_they_cannot_tell(void **state)
{
    (void)state;
    char *text = fixture("real-bounded.prom"), *words;
    tide_doctor_report r;

    expect_rc(tide_doctor_analyze(text, &r), 0, "analyze");
    expect_u64(r.nunbounded, 0, "every consumer bounded");
    expect_u64(r.nfindings, 1, "one finding: no limit");
    expect_str(r.findings[0].rule, "limit", "the limit rule");
    expect_contains(r.findings[0].summary, "unbounded process: no memory limit on the page (no "
                    "tide_memory_limit_bytes: a node from before memory_limit?)", "an older node is unbounded");
    expect_contains(r.findings[0].advice, "--memory-limit SIZE", "the flag");
    words = format_text(&r);
    expect_contains(words, "verdict: warn: unbounded process", "the verdict first");
    if (strncmp(words, "verdict: ", 9) != 0) fail_msg("the verdict is not the first line: %.200s", words);
    expect_contains(words, "cannot tell pressure: the page has no tide_memory_pressure_ratio", "pressure unknown");
    expect_contains(words, "cannot tell peak: the page has no tide_memory_peak_bytes", "peak unknown");
    expect_contains(words, "cannot tell overload: the page has no tide_overload_rejected_requests_total",
                    "overload unknown");
    expect_contains(words, "cannot tell cgroup_events: the page has no tide_cgroup_memory_events_total",
                    "events unknown");
    expect_contains(words, "cannot tell growth: needs two scrapes: run with --interval SECONDS", "growth");
    free(words);
    free(text);
}

/* A real node's page today (node/metrics.c with the limit's families),
 * every consumer bounded and a limit of 256 MiB after one reading: the
 * rules read the figures the node writes. With the variable set, the page
 * is recorded (how real-bounded.prom was made, before the families). */
static void on_a_real_nodes_page_the_rules_read_the_limits_families(void **state)
{
    (void)state;
    char *argv[] = { "tided", "--cache-budget", "64MiB", "--arena-max", "2", "--memory-limit", "256MiB", NULL };
    char *text = render_real_page(7, argv, 64u << 20, 256u << 20);
    tide_doctor_report r;

    record_page("TIDE_DOCTOR_RECORD_BOUNDED", text);
    expect_rc(tide_doctor_analyze(text, &r), 0, "analyze");
    expect_u64((uint64_t)r.limit, 256u << 20, "tide_memory_limit_bytes read");
    assert_true(r.counted > 0);
    expect_u64((uint64_t)r.level, 0, "normal");
    assert_true(r.peak_start >= r.counted * 0.5);   /* the peak is a reading of the same figure */
    expect_u64(r.nunbounded, 0, "every consumer bounded, the process too");
    for (size_t i = 0; i < r.nunknown; i++)   /* no PSI or no cgroup may be unknown here, never the node's own */
        if (strcmp(r.unknown[i].rule, "limit") == 0 || strcmp(r.unknown[i].rule, "peak") == 0 ||
            strcmp(r.unknown[i].rule, "overload") == 0)
            fail_msg("rule %s cannot tell on a real node's page: %s", r.unknown[i].rule, r.unknown[i].why);
    if (finding_of(&r, "limit")) fail_msg("a small node under 256 MiB: %s", finding_of(&r, "limit")->summary);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_hand_written_page_gives_every_figure_exactly),
        cmocka_unit_test(a_full_store_queue_gets_the_store_workers_advice_not_the_memorys),
        cmocka_unit_test(a_page_that_is_not_a_nodes_is_refused_by_name),
        cmocka_unit_test(on_a_real_node_with_an_unbounded_cache_the_doctor_names_the_knob),
        cmocka_unit_test(on_an_older_nodes_recorded_page_the_new_rules_say_what_they_cannot_tell),
        cmocka_unit_test(on_a_real_nodes_page_the_rules_read_the_limits_families),
        cmocka_unit_test(every_recorded_page_passes_promtool_and_tides_own_checks),
        cmocka_unit_test(a_real_page_of_a_node_held_to_64_mib_under_load_is_read_exactly),
        cmocka_unit_test(a_healthy_recorded_page_triggers_no_rule),
        cmocka_unit_test(the_sick_page_gives_a_bad_verdict_with_its_worst_finding_first),
        cmocka_unit_test(the_arena_rule_judges_resident_against_live),
        cmocka_unit_test(each_rule_fires_past_its_threshold_and_not_before),
        cmocka_unit_test(the_limit_rule_uses_the_pages_enter_marks),
        cmocka_unit_test(the_allocator_rules_fire_past_their_thresholds_on_a_large_process),
        cmocka_unit_test(the_key_map_counts_as_file_backed_not_unfreed),
        cmocka_unit_test(the_report_splits_rss_into_process_memory_and_the_store_maps),
        cmocka_unit_test(a_large_key_map_leaves_the_allocators_share_of_anonymous_memory),
        cmocka_unit_test(the_json_has_the_verdict_and_findings_with_integers_as_integers),
        cmocka_unit_test(two_pages_with_a_consumer_growing_give_the_growth_finding_with_its_rate),
        cmocka_unit_test(with_two_scrapes_overload_and_cgroup_events_judge_the_increase),
        cmocka_unit_test(pages_of_an_older_node_grow_without_churn_figures_and_no_crash),
        cmocka_unit_test(a_page_without_the_archives_families_says_nothing_of_an_archive),
        cmocka_unit_test(a_healthy_archive_passes_its_rules_and_shows_every_figure),
        cmocka_unit_test(each_archive_rule_fires_on_its_figure_and_not_before),
        cmocka_unit_test(with_two_scrapes_the_archives_counters_judge_the_increase),
        cmocka_unit_test(tide_doctor_help_documents_every_rule_with_its_thresholds),
        cmocka_unit_test(the_rules_table_says_plain_rss_without_rss_file),
        cmocka_unit_test(tide_doctor_interval_scrapes_twice_and_finds_the_growth),
        cmocka_unit_test(tide_doctor_exits_1_on_a_page_that_is_not_a_nodes_and_says_so),
        cmocka_unit_test(the_disk_side_gives_each_generation_the_age_and_every_finding),
        cmocka_unit_test(failures_are_weighed_against_the_newest_attempts_result),
        cmocka_unit_test(an_older_node_or_no_status_is_told_not_guessed),
        cmocka_unit_test(tide_doctor_reads_the_disk_side_from_the_nodes_status),
    };
    return cmocka_run_group_tests(tests, canned_start, canned_stop);
}
