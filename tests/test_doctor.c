/*
 * test_doctor.c: `tide doctor`'s analysis of a metrics page.
 *
 * Pages come from a real node (rendered by node/metrics.c with settings
 * that leave a known consumer unbounded) and from hand-written text whose
 * figures make every number of the report checkable by hand.
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "expect.h"
#include "helpers.h"
#include "node/doctor.h"
#include "node/metrics.h"
#include "node/node.h"
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

static void a_page_that_is_not_a_nodes_is_refused_by_name(void **state)
{
    (void)state;
    tide_doctor_report r;
    expect_rc(tide_doctor_analyze("# HELP up x\n# TYPE up gauge\nup 1\n", &r), TIDE_EINVAL, "not a node");
    expect_contains(tide_last_error(), "not a Tide node's metrics page", "message");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_hand_written_page_gives_every_figure_exactly),
        cmocka_unit_test(a_page_that_is_not_a_nodes_is_refused_by_name),
        cmocka_unit_test(on_a_real_node_with_an_unbounded_cache_the_doctor_names_the_knob),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
