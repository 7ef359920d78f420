/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_http_metrics.c: tided's /metrics page end to end: who may scrape
 * it (the metrics token in either header form, 401 without one unless
 * TIDE_METRICS_PUBLIC), what it counts (every request by method, code and
 * route, the http consumer's allocations, the build and the allocator),
 * that a real scrape passes promtool and Tide's own checks under glibc
 * and under jemalloc, that the memory on the page adds up to the
 * anonymous RSS, what tide doctor reads from a running node, and a real
 * Prometheus scraping tided with the shipped config while every query of
 * the Grafana dashboard (contrib/grafana/tide-node.json) but the Archive
 * row's returns series (tests/dashboard.h; test_http_archive.c runs those).
 *
 * Every test starts its own server. Needs promtool, the Prometheus
 * server and libjemalloc2 (scripts/install-deps --test), and the jemalloc
 * build of tided (`make check` builds it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>

#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dashboard.h"
#include "expect.h"
#include "helpers.h"
#include "http_helpers.h"
#include "promcheck.h"
#include "tide/version.h"

#define METRICS_TOKEN "m3trics-t0ken-91ab"

/* ---- who may scrape /metrics --------------------------------------------- */

static void metrics_answers_only_the_token_in_either_header_form(void **state)
{
    static char tok[] = "TIDE_METRICS_TOKEN=" METRICS_TOKEN;
    char *env[] = { tok, NULL };
    tided t;
    char *b;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, env);
    b = scrape_with(&t, NULL, 401);
    expect_contains(b, "\"error\":\"unauthorized\"", "401 body without a token");
    free(b);
    resp r = http(&t, "GET", "/metrics", NULL, 0, 0, NULL);
    expect_contains(r.headers, "www-authenticate: Bearer", "the 401 challenge");
    resp_free(&r);
    free(scrape_with(&t, "Authorization: Bearer " METRICS_TOKEN "x", 401));
    free(scrape_with(&t, "Authorization: Bearer " "m3trics-t0ken-91a", 401));
    free(scrape_with(&t, "Authorization: Bearer", 401));
    free(scrape_with(&t, "Authorization: Bearer ", 401));
    free(scrape_with(&t, "X-Metrics-Token: wrong", 401));
    free(scrape_with(&t, "X-Metrics-Token:", 401));
    free(scrape_with(&t, "Authorization: Basic " METRICS_TOKEN, 401));
    b = scrape_with(&t, "Authorization: Bearer " METRICS_TOKEN, 200);
    expect_contains(b, "# TYPE tide_memory_consumer_bytes gauge", "a page by Bearer");
    free(b);
    b = scrape_with(&t, "X-Metrics-Token: " METRICS_TOKEN, 200);
    expect_contains(b, "# TYPE process_resident_memory_bytes gauge", "a page by X-Metrics-Token");
    free(b);
    r = http(&t, "GET", "/metrics", NULL, 0, 0, "Authorization: Bearer " METRICS_TOKEN);
    expect_contains(r.headers, "content-type: text/plain; version=0.0.4; charset=utf-8", "the content type");
    resp_free(&r);
    r = http(&t, "POST", "/metrics", NULL, 0, 0, "Authorization: Bearer " METRICS_TOKEN);
    expect_status(r, 405, "POST /metrics");
    resp_free(&r);
    if (log_contains(&t, METRICS_TOKEN)) fail_msg("tided's log contains the metrics token");
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static void without_a_token_metrics_is_always_401_unless_public(void **state)
{
    static char pub[] = "TIDE_METRICS_PUBLIC=1";
    static char tok[] = "TIDE_METRICS_TOKEN=" METRICS_TOKEN;
    char *env_pub[] = { pub, NULL }, *env_both[] = { pub, tok, NULL };
    tided t;
    char *b;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, NULL);
    b = scrape_with(&t, NULL, 401);
    expect_contains(b, "TIDE_METRICS_TOKEN", "the 401 says what to set");
    free(b);
    free(scrape_with(&t, "Authorization: Bearer ", 401));
    free(scrape_with(&t, "Authorization: Bearer anything", 401));
    free(scrape_with(&t, "X-Metrics-Token: ", 401));
    if (!log_contains(&t, "/metrics answers 401 to every scrape"))
        fail_msg("the startup log should say how to enable scraping:\n%s", log_tail(&t));
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, env_pub);
    free(scrape_with(&t, NULL, 200));
    free(scrape_with(&t, "Authorization: Bearer whatever", 200));
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, env_both);
    free(scrape_with(&t, NULL, 200));
    if (!log_contains(&t, "TIDE_METRICS_PUBLIC=1")) fail_msg("public with a token set should warn:\n%s", log_tail(&t));
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* ---- what the page counts ------------------------------------------------ */

/* Churn totals: between two scrapes, tided accepted at least two
 * connections (the PUT's, the second scrape's) and buffered one body; each
 * is an allocation of the "http" consumer, and the body's bytes are in the
 * allocated bytes. A server of its own, scraped without a token. */
static void http_allocation_totals_grow_by_the_connections_and_bodies_it_took(void **state)
{
    static char pub[] = "TIDE_METRICS_PUBLIC=1";
    char *env[] = { pub, NULL };
    char body[4000];
    char *page;
    double a0, b0, a1, b1;
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, env);
    page = scrape_with(&t, NULL, 200);
    a0 = th_prom_value(page, "tide_memory_allocations_total{consumer=\"http\"}");
    b0 = th_prom_value(page, "tide_memory_allocated_bytes_total{consumer=\"http\"}");
    free(page);
    if (isnan(a0) || isnan(b0)) fail_msg("the http churn series are missing from /metrics");
    memset(body, 'b', sizeof body);
    r = http(&t, "PUT", obj_path(0x13c0, NULL), body, sizeof body, 0, NULL);
    expect_status(r, 201, "PUT of a 4000-byte body");
    resp_free(&r);
    page = scrape_with(&t, NULL, 200);
    a1 = th_prom_value(page, "tide_memory_allocations_total{consumer=\"http\"}");
    b1 = th_prom_value(page, "tide_memory_allocated_bytes_total{consumer=\"http\"}");
    free(page);
    if (a1 - a0 < 3)
        fail_msg("http allocations grew by %.0f over a PUT and a scrape, expected at least 3 (two "
                 "connections and a body)", a1 - a0);
    if (b1 - b0 < (double)sizeof body)
        fail_msg("http allocated bytes grew by %.0f, below the %zu-byte body buffered", b1 - b0, sizeof body);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* The value of `series` on `page`, 0 when absent (a counter not yet seen). */
static double prom_or_0(const char *page, const char *series)
{
    double v = th_prom_value(page, series);
    return isnan(v) ? 0 : v;
}

/* The known requests of the request-metrics test, and what each must add. */
typedef struct req_case {
    const char *method, *path, *header;
    int         body;            /* send REQ_BODY bytes */
    int         chunked_big;     /* send MAX_OBJECT + 1 bytes chunked */
    long        want;
} req_case;

#define REQ_BODY 100

/* Route `route`'s histogram on `page`: 16 cumulative buckets and +Inf,
 * which is _count, and a positive _sum once it counted `at_least`. */
static void expect_route_histogram(const char *page, const char *route, double at_least)
{
    char prefix[160], series[200];
    double prev = 0, count;
    int buckets = 0;

    snprintf(series, sizeof series, "tide_http_request_duration_seconds_count{route=\"%s\"}", route);
    count = th_prom_value(page, series);
    snprintf(prefix, sizeof prefix, "tide_http_request_duration_seconds_bucket{route=\"%s\",le=\"", route);
    for (const char *p = strstr(page, prefix); p; p = strstr(p + 1, prefix)) {
        double v = strtod(strchr(p, ' ') + 1, NULL);
        if (v < prev) fail_msg("the %s histogram's buckets are not cumulative at %.100s", route, p);
        prev = v;
        buckets++;
    }
    if (buckets != 17) fail_msg("the %s histogram has %d buckets, expected 16 and +Inf", route, buckets);
    snprintf(series, sizeof series, "%s+Inf\"}", prefix);
    if (th_prom_value(page, series) != count) fail_msg("the %s histogram's +Inf bucket is not _count (%.0f)", route, count);
    if (count < at_least) fail_msg("the %s histogram counted %.0f, expected at least %.0f", route, count, at_least);
    snprintf(series, sizeof series, "tide_http_request_duration_seconds_sum{route=\"%s\"}", route);
    if (!(th_prom_value(page, series) > 0)) fail_msg("the %s route's _sum should be above 0", route);
}

/* Every answered request is counted once by {method,code}, the histogram
 * counts the handled ones by route with cumulative buckets, and the body
 * bytes in and out are exactly those the client sent and received. A
 * baseline scrape first, then known requests, then scrapes until the page
 * has counted them (a count is made when h2o disposes the request, just
 * after its last byte was written, so the next request may be answered by
 * the other loop first): every further scrape is one more GET 200 metrics. */
static void request_metrics_count_every_answer_by_method_code_and_route(void **state)
{
    static char tok[] = "TIDE_METRICS_TOKEN=" METRICS_TOKEN;
    static const char *flags[] = { "--max-object-size=65536", NULL };
    char *env[] = { tok, NULL };
    static const req_case cases[] = {
        { "PUT", "/v1/objects/", NULL, 1, 0, 201 },
        { "PUT", "/v1/objects/", NULL, 1, 0, 201 },            /* another key */
        { "GET", "/v1/objects/", NULL, 0, 0, 200 },
        { "GET", "/v1/objects/", NULL, 0, 0, 200 },
        { "GET", "/v1/objects/", NULL, 0, 0, 200 },
        { "GET", "/v1/objects/ffff", NULL, 0, 0, 400 },         /* a malformed key */
        { "GET", "/v1/objects/", NULL, 0, 0, 404 },             /* never stored */
        { "GET", "/metrics", NULL, 0, 0, 401 },                 /* no token */
        { "BREW", "/healthz", NULL, 0, 0, 405 },                /* an unknown method */
        { "GET", "/no/such/endpoint", NULL, 0, 0, 404 },
        { "PUT", "/v1/objects/", NULL, 0, 1, 413 },             /* h2o's own answer */
    };
    const char *auth = "Authorization: Bearer " METRICS_TOKEN;
    uint8_t value[REQ_BODY];
    double out_bytes = 0, end;
    char *base, *page = NULL, msg[8192];
    uint8_t *big = calloc(1, MAX_OBJECT + 1);
    int scrapes = 1, done = 0;
    tided t;
    (void)state;

    assert_non_null(big);
    memset(value, 'q', sizeof value);
    memset(&t, 0, sizeof t);
    tided_start(&t, flags, env);
    /* The baseline: a page that has counted every request before it (the
     * startup's HEAD /healthz probe, and each earlier baseline scrape). */
    base = NULL;
    end = th_now_ms() + 10000;
    for (int prior = 0; !done && th_now_ms() < end; prior++) {
        free(base);
        base = scrape_with(&t, auth, 200);
        done = prom_or_0(base, "tide_http_requests_total{method=\"GET\",code=\"200\"}") == prior
            && prom_or_0(base, "tide_http_requests_total{method=\"HEAD\",code=\"200\"}") >= 1;
        if (!done) poll(NULL, 0, 20);
    }
    if (!done) fail_msg("no baseline page counted the startup's probe and the scrapes before it:\n%.2000s", base);
    done = 0;
    out_bytes += (double)strlen(base);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const req_case *c = &cases[i];
        char path[256];
        /* objects: keys 0x1400 and 0x1401 stored; 0x1402 never */
        uint64_t key = 0x1400 + (i == 1) + 2 * (c->want == 404);
        if (strcmp(c->path, "/v1/objects/") == 0) snprintf(path, sizeof path, "%s", obj_path(key, NULL));
        else snprintf(path, sizeof path, "%s", c->path);
        resp r = c->chunked_big ? http(&t, c->method, path, big, MAX_OBJECT + 1, 1, NULL)
                                : http(&t, c->method, path, c->body ? value : NULL, c->body ? sizeof value : 0, 0,
                                       c->header);
        char what[300];
        snprintf(what, sizeof what, "%s %s", c->method, path);
        expect_status(r, c->want, what);
        out_bytes += (double)r.len;
        resp_free(&r);
    }
    end = th_now_ms() + 10000;
    double got = 0, all = 0;
    while (!done && th_now_ms() < end) {
        free(page);
        page = scrape_with(&t, auth, 200);
        got = prom_or_0(page, "tide_http_requests_total{method=\"GET\",code=\"200\"}")
                   - prom_or_0(base, "tide_http_requests_total{method=\"GET\",code=\"200\"}");
        /* the last requests made: the unknown path's 404 and h2o's 413 */
        all = prom_or_0(page, "tide_http_requests_total{method=\"GET\",code=\"404\"}")
                   - prom_or_0(base, "tide_http_requests_total{method=\"GET\",code=\"404\"}");
        done = got == 3 + scrapes && all == 2
            && prom_or_0(page, "tide_http_requests_total{method=\"PUT\",code=\"413\"}") == 1;
        if (!done) { out_bytes += (double)strlen(page); scrapes++; poll(NULL, 0, 20); }
    }
    if (!done)
        fail_msg("the page never counted the %zu known requests within 10 s: GET 200 grew by %.0f (want %d: 3 "
                 "GETs, %d scrapes), GET 404 by %.0f (want 2), PUT 413 is %.0f (want 1)", sizeof cases / sizeof cases[0],
                 got, 3 + scrapes, scrapes, all, prom_or_0(page, "tide_http_requests_total{method=\"PUT\",code=\"413\"}"));
    /* {method,code}: exactly the requests made since the baseline. */
    static const struct { const char *series; double want; } counts[] = {
        { "tide_http_requests_total{method=\"PUT\",code=\"201\"}", 2 },
        { "tide_http_requests_total{method=\"GET\",code=\"400\"}", 1 },
        { "tide_http_requests_total{method=\"GET\",code=\"401\"}", 1 },
        { "tide_http_requests_total{method=\"GET\",code=\"404\"}", 2 },
        { "tide_http_requests_total{method=\"other\",code=\"405\"}", 1 },
        { "tide_http_requests_total{method=\"PUT\",code=\"413\"}", 1 },
        { "tide_http_request_duration_seconds_count{route=\"object\"}", 7 },
        { "tide_http_request_duration_seconds_count{route=\"healthz\"}", 1 },
        { "tide_http_request_duration_seconds_count{route=\"other\"}", 1 },
        { "tide_http_request_duration_seconds_count{route=\"status\"}", 0 },
        { "tide_http_request_duration_seconds_count{route=\"admin\"}", 0 },
        { "tide_http_request_bytes_total", 2 * REQ_BODY },
    };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        double d = prom_or_0(page, counts[i].series) - prom_or_0(base, counts[i].series);
        if (d != counts[i].want)
            fail_msg("%s grew by %.0f over the known requests; expected %.0f. Page:\n%s", counts[i].series, d,
                     counts[i].want, page);
    }
    double m = prom_or_0(page, "tide_http_request_duration_seconds_count{route=\"metrics\"}")
             - prom_or_0(base, "tide_http_request_duration_seconds_count{route=\"metrics\"}");
    if (m != 1 + scrapes)
        fail_msg("route metrics counted %.0f; expected the 401 and %d scrapes", m, scrapes);
    double o = prom_or_0(page, "tide_http_response_bytes_total") - prom_or_0(base, "tide_http_response_bytes_total");
    if (o != out_bytes)
        fail_msg("tide_http_response_bytes_total grew by %.0f; the client received %.0f body bytes", o, out_bytes);
    /* Nothing but the listed methods and codes appeared. */
    for (const char *p = strstr(page, "\ntide_http_requests_total{"); p; p = strstr(p + 1, "\ntide_http_requests_total{")) {
        char series[200];
        size_t n = strcspn(p + 1, " ");
        snprintf(series, sizeof series, "%.*s", (int)n, p + 1);
        int known = strstr(series, "code=\"200\"") != NULL;
        for (size_t i = 0; i < 6; i++) known |= strcmp(series, counts[i].series) == 0;
        if (!known && prom_or_0(page, series) != prom_or_0(base, series))
            fail_msg("%s grew, but no request of that kind was made", series);
    }
    expect_route_histogram(page, "object", 7);
    if (th_promtool_check(page, msg, sizeof msg) != 0) fail_msg("promtool check metrics: %s", msg);
    if (th_prom_check(page, msg, sizeof msg) != 0) fail_msg("Tide's checks: %s", msg);
    free(base);
    free(page);
    free(big);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* tide_build_info carries the version this test was built with, a revision
 * and the allocator the page names in tide_allocator_info. */
static void build_info_names_the_version_revision_and_allocator(void **state)
{
    static char pub[] = "TIDE_METRICS_PUBLIC=1";
    char *env[] = { pub, NULL };
    char want[200], alloc[64];
    const char *a;
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, env);
    char *page = scrape_with(&t, NULL, 200);
    a = strstr(page, "tide_allocator_info{name=\"");
    if (a == NULL) fail_msg("tide_allocator_info is missing:\n%s", page);
    a += strlen("tide_allocator_info{name=\"");
    snprintf(alloc, sizeof alloc, "%.*s", (int)strcspn(a, "\""), a);
    const char *b = strstr(page, "\ntide_build_info{");
    if (b == NULL) fail_msg("tide_build_info is missing:\n%s", page);
    snprintf(want, sizeof want, "tide_build_info{version=\"%s\",revision=\"", TIDE_VERSION);
    if (strncmp(b + 1, want, strlen(want)) != 0) fail_msg("tide_build_info should begin %s: %.200s", want, b + 1);
    const char *rev = b + 1 + strlen(want);
    size_t rl = strcspn(rev, "\"");
    if (rl == 0) fail_msg("tide_build_info's revision is empty: %.200s", b + 1);
    snprintf(want, sizeof want, "\",allocator=\"%s\"} 1\n", alloc);
    if (strncmp(rev + rl, want, strlen(want)) != 0)
        fail_msg("tide_build_info should name the allocator %s: %.200s", alloc, b + 1);
    free(page);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* ---- promtool, the allocators, the memory on the page, tide doctor ------- */

/* Scrape after some traffic and a sweep; check the page with promtool and
 * Tide's own checks. `env` chooses the allocator (LD_PRELOAD). */
static void scrape_is_clean(char *const env[], const char *allocator)
{
    static char tok[] = "TIDE_METRICS_TOKEN=" METRICS_TOKEN;
    static char admin[] = "TIDE_ADMIN_TOKEN=" ADMIN_TOKEN;
    char *envs[8];
    int n = 0;
    char msg[8192], want[128], *page;
    tided t;
    uint8_t value[300];

    for (size_t i = 0; env && env[i] && n < 5; i++) envs[n++] = env[i];
    envs[n++] = tok;
    envs[n++] = admin;
    envs[n] = NULL;
    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, envs);
    memset(value, 'v', sizeof value);
    for (uint64_t i = 0; i < 200; i++) {
        resp r = http(&t, "PUT", obj_path(i, NULL), value, sizeof value, 0, NULL);
        expect_status(r, 201, "PUT before the scrape");
        resp_free(&r);
    }
    resp r = http(&t, "POST", "/v1/admin/sweep", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    expect_status(r, 200, "a sweep before the scrape");
    resp_free(&r);
    page = scrape_with(&t, "Authorization: Bearer " METRICS_TOKEN, 200);
    if (th_prom_check(page, msg, sizeof msg) != 0) fail_msg("Tide's checks of a real scrape: %s", msg);
    int st = th_promtool_check(page, msg, sizeof msg);
    if (st != 0) fail_msg("promtool check metrics on a real scrape (%s): expected exit 0, got %d: %s", allocator, st,
                          msg);
    snprintf(want, sizeof want, "tide_allocator_info{name=\"%s\"", allocator);
    expect_contains(page, want, "the allocator serving malloc");
    if (strcmp(allocator, "jemalloc") == 0) {
        expect_contains(page, "# TYPE tide_jemalloc_allocated_bytes gauge", "jemalloc's own figures");
        expect_contains(page, "# TYPE tide_jemalloc_dirty_bytes gauge", "jemalloc's dirty pages");
    } else if (strcmp(allocator, "glibc") == 0) {
        expect_contains(page, "# TYPE tide_glibc_arenas gauge", "glibc's arena count");
    }
    expect_u64((uint64_t)th_prom_value(page, "tide_sweeps_total"), 1, "sweeps on the page");
    expect_u64((uint64_t)th_prom_value(page, "tide_http_connections_accepted_total") >= 1, 1, "connections");
    free(page);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static void a_real_scrape_passes_promtool_under_glibc(void **state)
{
    (void)state;
    scrape_is_clean(NULL, tided_is_sanitized() ? "sanitizer" : "glibc");
}

static void a_real_scrape_passes_promtool_under_jemalloc(void **state)
{
    static char preload[] = "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
    char *env[] = { preload, NULL };
    (void)state;
    if (access(preload + strlen("LD_PRELOAD="), R_OK) != 0)
        fail_msg("%s is missing: scripts/install-deps installs libjemalloc2", preload + strlen("LD_PRELOAD="));
    /* A sanitizer build of tided must keep its own allocator first: there
     * jemalloc cannot serve malloc, and this test has nothing to check. */
    if (tided_is_sanitized()) th_skip("%s/tided is a sanitizer build", th_bin_dir());
    scrape_is_clean(env, "jemalloc");
}

/* tided's startup log (it exits 2 at once on a bad flag, after logging
 * nothing; so start it for real and stop it). */
static void startup_log_of(const char *bin, char *const env[], tided *t)
{
    char listen_arg[64];
    memset(t, 0, sizeof *t);
    tided_prepare(t);
    t->port = free_port(AF_INET);
    snprintf(listen_arg, sizeof listen_arg, "--listen=127.0.0.1:%d", t->port);
    char *argv[] = { (char *)bin, "--data-dir", t->data, listen_arg, NULL };
    spawn(t, argv, env);
    if (wait_healthy(t) != 0) fail_msg("%s should start; its log:\n%s", bin, log_tail(t));
    tided_signal_and_reap(t, SIGTERM);
}

static void the_jemalloc_build_proves_its_background_thread_is_on(void **state)
{
    char bin[700];
    tided t;
    (void)state;

    snprintf(bin, sizeof bin, "%s/jemalloc/tided", th_bin_dir());
    if (access(bin, X_OK) != 0) {
        if (tided_is_sanitized()) th_skip("a sanitizer build has no jemalloc variant");
        fail_msg("%s is missing: `make check` builds it (make ALLOC=jemalloc)", bin);
    }
    startup_log_of(bin, NULL, &t);
    if (!log_contains(&t, "allocator: jemalloc ") || !log_contains(&t, "background_thread=true"))
        fail_msg("the jemalloc build's startup log should say 'allocator: jemalloc ... background_thread=true':\n%s",
                 log_tail(&t));
    if (log_contains(&t, "without its background thread"))
        fail_msg("the jemalloc build should not warn about the background thread:\n%s", log_tail(&t));
    tided_cleanup(&t);

    /* The same library preloaded under the glibc build, without Tide's
     * malloc_conf: the thread is off and the log says so. */
    static char preload[] = "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
    char *env[] = { preload, NULL };
    snprintf(bin, sizeof bin, "%s/tided", th_bin_dir());
    startup_log_of(bin, env, &t);
    if (!log_contains(&t, "background_thread=false") || !log_contains(&t, "without its background thread"))
        fail_msg("preloaded jemalloc without malloc_conf should log background_thread=false and warn:\n%s",
                 log_tail(&t));
    tided_cleanup(&t);
}

/* The sum of the consumers' series on a page. */
static double consumers_total(const char *page)
{
    double sum = 0;
    const char *p = page;
    while ((p = strstr(p, "\ntide_memory_consumer_bytes{")) != NULL) {
        p = strchr(p, '}');
        sum += strtod(p + 1, NULL);
    }
    return sum;
}

/* docs/OPERATIONS.md states it: after a load, anonymous RSS is explained by
 * what the consumers count plus what the allocator holds free, within 10%
 * plus 4 MiB (thread stacks, h2o's buffers, libraries' heaps, the partly
 * used pages around free chunks).
 *
 * The page is one moment, but the store's insert pool (mmap'd chunks of
 * 1 MiB) changes under it while a commit runs: on a loaded machine the
 * commit thread lags the PUTs by seconds, and a pool emptied or filled
 * between reading the consumers and reading RssAnon was a gap of several
 * MiB that was no defect. So the last PUT is ?sync=1: when it is answered
 * every insert is committed, the pool is empty and no commit runs, and
 * nothing changes the store's memory until the scrape. What is left is
 * what the bound is about; an uncounted consumer or a wrong allocator-free
 * figure still shows, whatever the load. */
static void memory_on_the_page_adds_up_to_the_anonymous_rss(void **state)
{
    static char tok[] = "TIDE_METRICS_TOKEN=" METRICS_TOKEN;
    char *env[] = { tok, NULL };
    uint8_t value[1000];
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, env);
    memset(value, 'x', sizeof value);
    for (uint64_t i = 0; i < 20000; i++) {
        resp r = http(&t, "PUT", obj_path(i, i == 19999 ? "?sync=1" : NULL), value, sizeof value, 0, NULL);
        expect_status(r, 201, "PUT of the load");
        resp_free(&r);
    }
    char *page = scrape_with(&t, "Authorization: Bearer " METRICS_TOKEN, 200);
    double pool = th_prom_value(page, "tide_memory_consumer_bytes{consumer=\"store_insert_pool\"}");
    if (pool != 0)
        fail_msg("after a PUT ?sync=1 the insert pool should be empty on the page, it holds %.0f bytes", pool);
    if (strstr(page, "tide_allocator_info{name=\"sanitizer\"")) {
        /* A sanitizer's shadow memory and quarantine are in RssAnon and in no
         * consumer: there is nothing to add up. */
        free(page);
        tided_signal_and_reap(&t, SIGTERM);
        tided_cleanup(&t);
        th_skip("tided runs on a sanitizer's allocator");
    }
    double anon = th_prom_value(page, "tide_process_rss_anon_bytes");
    double cons = consumers_total(page);
    double cache = th_prom_value(page, "tide_memory_consumer_bytes{consumer=\"node_cache\"}");
    double free_b = th_prom_value(page, "tide_allocator_free_bytes");
    if (isnan(anon) || isnan(free_b)) fail_msg("the page should have RssAnon and allocator-free: %s", page);
    if (cache < 20000.0 * sizeof value)
        fail_msg("node_cache counts %.0f bytes for 20000 values of %zu bytes", cache, sizeof value);
    double explained = cons + free_b, gap = fabs(anon - explained);
    print_message("    RssAnon %.1f MiB, consumers %.1f MiB + allocator-free %.1f MiB: gap %.1f MiB (bound %.1f MiB)\n",
                  anon / 1048576, cons / 1048576, free_b / 1048576, gap / 1048576,
                  (0.10 * anon + 4.0 * 1048576) / 1048576);
    if (gap > 0.10 * anon + 4.0 * 1048576)
        fail_msg("RssAnon %.1f MiB vs consumers %.1f MiB + allocator-free %.1f MiB = %.1f MiB: the gap %.1f MiB is "
                 "over 10%% + 4 MiB", anon / 1048576, cons / 1048576, free_b / 1048576, explained / 1048576,
                 gap / 1048576);
    free(page);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static void tide_doctor_names_the_unbounded_knob_of_a_running_node(void **state)
{
    static char tok[] = "TIDE_METRICS_TOKEN=" METRICS_TOKEN;
    static const char *flags[] = { "--cache-budget=0", NULL };
    char *env[] = { tok, NULL };
    char cmd[1024], out[16384];
    tided t;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, flags, env);
    snprintf(cmd, sizeof cmd, "TIDE_METRICS_TOKEN=%s %s/tide doctor http://127.0.0.1:%d 2>&1", METRICS_TOKEN,
             th_bin_dir(), t.port);
    int st = run_capture(cmd, out, sizeof out);
    if (st != 0) fail_msg("tide doctor: expected exit 0, got %d: %s", st, out);
    expect_contains(out, "Unbounded: node_cache. To bound it: set --cache-budget", "the knob named");
    expect_contains(out, "RSS is ", "the RSS line");
    expect_contains(out, "node_cache", "the consumers");
    if (strstr(out, METRICS_TOKEN)) fail_msg("tide doctor printed the token: %s", out);
    snprintf(cmd, sizeof cmd, "TIDE_METRICS_TOKEN=%s %s/tide doctor --json 127.0.0.1:%d 2>&1", METRICS_TOKEN,
             th_bin_dir(), t.port);
    st = run_capture(cmd, out, sizeof out);
    if (st != 0) fail_msg("tide doctor --json: expected exit 0, got %d: %s", st, out);
    json_error_t e;
    json_t *j = json_loads(out, 0, &e);
    if (j == NULL) fail_msg("tide doctor --json: not JSON (%s): %s", e.text, out);
    expect_str(json_string_value(json_object_get(json_array_get(json_object_get(j, "unbounded"), 0), "consumer")),
               "node_cache", "first unbounded consumer in the JSON");
    json_decref(j);
    snprintf(cmd, sizeof cmd, "env -u TIDE_METRICS_TOKEN %s/tide doctor http://127.0.0.1:%d 2>&1", th_bin_dir(), t.port);
    st = run_capture(cmd, out, sizeof out);
    expect_u64((uint64_t)st, 1, "tide doctor without the token exits 1");
    expect_contains(out, "401 Unauthorized: set TIDE_METRICS_TOKEN", "the doctor says what to set");
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* ---- a real Prometheus and the Grafana dashboard ------------------------- */

/* What the dashboard's store and request panels show: PUTs (one ?sync=1,
 * so a commit is made), GETs that hit and miss, a 404, body bytes. Keys
 * from 0x1600 on, new each call. */
static void dashboard_traffic(tided *t)
{
    static uint64_t next = 0x1600;
    uint8_t value[500];
    resp r;

    memset(value, 'd', sizeof value);
    for (int i = 0; i < 10; i++, next++) {
        r = http(t, "PUT", obj_path(next, i == 9 ? "?sync=1" : NULL), value, sizeof value, 0, NULL);
        expect_status(r, 201, "a PUT for the dashboard");
        resp_free(&r);
        r = http(t, "GET", obj_path(next, NULL), NULL, 0, 0, NULL);
        expect_status(r, 200, "a GET for the dashboard");
        resp_free(&r);
    }
    r = http(t, "GET", obj_path(0x15ff, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "a GET of a key never stored");
    resp_free(&r);
}

/* POST /v1/admin/rotate: a new generation in front, and with two held the
 * oldest dropped. */
static void rotate_now(tided *t)
{
    resp r = http(t, "POST", "/v1/admin/rotate", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    expect_status(r, 200, "a rotation for the online delete row");
    resp_free(&r);
}

/* Every row but the Archive (test_http_archive.c runs that one against a
 * node with the archive on): a node with a memory limit and online delete,
 * traffic, a sweep (its trim marks the annotation) and two rotations (the
 * second drops a generation), scraped three times at least so that every
 * rate has samples. */
static void a_real_prometheus_scrapes_tided_and_runs_every_dashboard_query_but_the_archive_row(void **state)
{
    static char tok[] = "TIDE_METRICS_TOKEN=" METRICS_TOKEN;
    static char admin[] = "TIDE_ADMIN_TOKEN=" ADMIN_TOKEN;
    static const char *flags[] = { "--memory-limit=2GiB", "--online-delete=100000", "--generations=2", NULL };
    char *env[] = { tok, admin, NULL };
    tided t, prom;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, flags, env);
    dashboard_traffic(&t);
    prom_start(&prom, &t, METRICS_TOKEN);
    dashboard_traffic(&t);
    resp r = http(&t, "POST", "/v1/admin/sweep", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    expect_status(r, 200, "a sweep for the trim annotation");
    resp_free(&r);
    rotate_now(&t);
    dashboard_traffic(&t);
    rotate_now(&t);
    prom_wait(&prom, "changes(tide_trims_total{job=\"tide\"}[1m]) > 0", "the sweep's trim");
    prom_wait(&prom, "tide_rotation_deleted_bytes_total{job=\"tide\"} > 0", "a rotation that dropped a generation");
    prom_wait(&prom, "tide_overload_mark_bytes{job=\"tide\",level=\"high\",edge=\"enter\"} > 0",
              "the memory limit's marks");
    prom_wait(&prom, "count_over_time(tide_http_requests_total{job=\"tide\",code=\"201\"}[1m]) >= 3",
              "three scrapes of the traffic");
    dashboard_check(&prom, DASHBOARD_ALL_BUT_ARCHIVE);
    prom_stop(&prom);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(metrics_answers_only_the_token_in_either_header_form),
        cmocka_unit_test(http_allocation_totals_grow_by_the_connections_and_bodies_it_took),
        cmocka_unit_test(without_a_token_metrics_is_always_401_unless_public),
        cmocka_unit_test(request_metrics_count_every_answer_by_method_code_and_route),
        cmocka_unit_test(build_info_names_the_version_revision_and_allocator),
        cmocka_unit_test(a_real_scrape_passes_promtool_under_glibc),
        cmocka_unit_test(a_real_scrape_passes_promtool_under_jemalloc),
        cmocka_unit_test(memory_on_the_page_adds_up_to_the_anonymous_rss),
        cmocka_unit_test(the_jemalloc_build_proves_its_background_thread_is_on),
        cmocka_unit_test(tide_doctor_names_the_unbounded_knob_of_a_running_node),
        cmocka_unit_test(a_real_prometheus_scrapes_tided_and_runs_every_dashboard_query_but_the_archive_row),
    };
    int failed;

    signal(SIGPIPE, SIG_IGN);
    http_filter_from_env();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    failed = th_run_group("tided, /metrics", tests, NULL, NULL, th_teardown);
    curl_global_cleanup();
    return failed;
}
