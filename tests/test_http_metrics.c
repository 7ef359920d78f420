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
 * the Grafana dashboard (contrib/grafana/tide-node.json) returns series.
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

static char *replace_once(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    if (at == NULL) fail_msg("contrib/prometheus/prometheus.yml should contain '%s'", from);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

/* Replace every `from` in `text` with `to` (malloc'd). */
static char *replace_all(const char *text, const char *from, const char *to)
{
    size_t n = 0, fl = strlen(from), tl = strlen(to);
    for (const char *p = strstr(text, from); p; p = strstr(p + fl, from)) n++;
    char *out = malloc(strlen(text) + n * (tl > fl ? tl - fl : 0) + 1), *o = out;
    for (const char *p = text;;) {
        const char *at = strstr(p, from);
        if (at == NULL) { strcpy(o, p); break; }
        memcpy(o, p, (size_t)(at - p)); o += at - p;
        memcpy(o, to, tl); o += tl;
        p = at + fl;
    }
    return out;
}

#define DASHBOARD "contrib/grafana/tide-node.json"
#define DS_UID    "${datasource}"

/* 1 when every tide_* family `expr` names is an allocator's own
 * (tide_glibc_*, tide_jemalloc_*, tide_tcmalloc_*, and the free bytes
 * tided reads from one of them). */
static int only_allocator_families(const char *expr)
{
    static const char *const mine[] = { "tide_glibc_", "tide_jemalloc_", "tide_tcmalloc_",
                                        "tide_allocator_free_bytes" };
    const char *p = expr;
    int seen = 0;

    while ((p = strstr(p, "tide_")) != NULL) {
        int ok = 0;
        for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++)
            if (strncmp(p, mine[i], strlen(mine[i])) == 0) ok = 1;
        if (!ok) return 0;
        seen = 1;
        p += 5;
    }
    return seen;
}

/* Run `expr` (the dashboard's, variables filled in) on Prometheus: it must
 * succeed and return at least one series (a misspelt family returns an
 * empty result with HTTP 200). Returns the result array (new reference). */
static json_t *prom_query_nonempty(const tided *prom, const char *expr, const char *what)
{
    char *a = replace_all(expr, "$__rate_interval", "1m");
    char *b = replace_all(a, "$instance", ".*");
    char *c = replace_all(b, "$job", "tide");
    CURL *h = curl_easy_init();
    char *q = curl_easy_escape(h, c, 0), path[4096];
    json_error_t e;
    json_t *j, *res;

    snprintf(path, sizeof path, "/api/v1/query?query=%s", q);
    resp r = http(prom, "GET", path, NULL, 0, 0, NULL);
    if (r.status != 200 || strstr(r.body, "\"status\":\"success\"") == NULL)
        fail_msg("%s '%s' should run on Prometheus; got HTTP %ld: %s", what, c, r.status, r.body);
    j = json_loads(r.body, 0, &e);
    res = json_object_get(json_object_get(j, "data"), "result");
    /* A sanitizer build's malloc is the sanitizer's: tided then exports no
     * glibc, jemalloc or tcmalloc family (nor the free bytes read from
     * one), so only there may a query made of
     * allocator families alone come back empty. */
    if (json_array_size(res) == 0 && !(tided_is_sanitized() && only_allocator_families(c)))
        fail_msg("%s '%s' returned no series from the scraped tided (a family that does not exist?): %s", what, c,
                 r.body);
    json_incref(res);
    json_decref(j);
    resp_free(&r);
    curl_free(q);
    curl_easy_cleanup(h);
    free(a); free(b); free(c);
    return res;
}

static void expect_datasource_variable(json_t *o, const char *what)
{
    const char *uid = json_string_value(json_object_get(json_object_get(o, "datasource"), "uid"));
    if (uid == NULL || strcmp(uid, DS_UID) != 0)
        fail_msg("%s should use the data source variable (datasource.uid \"" DS_UID "\"), not '%s'", what,
                 uid ? uid : "(none)");
}

/* The templating: a datasource variable of type prometheus, and the job and
 * instance variables, queried through it; label_values(...) runs as its
 * selector and every series must carry the label. */
static void check_dashboard_variables(const tided *prom, json_t *d)
{
    json_t *v, *res, *s;
    size_t i, k;
    int ds = 0, inst = 0;

    json_array_foreach(json_object_get(json_object_get(d, "templating"), "list"), i, v) {
        const char *name = json_string_value(json_object_get(v, "name"));
        const char *type = json_string_value(json_object_get(v, "type"));
        const char *query = json_string_value(json_object_get(v, "query"));
        char sel[512], label[64], what[128];
        if (name == NULL || type == NULL || query == NULL) fail_msg("a template variable lacks name, type or query");
        if (strcmp(type, "datasource") == 0) {
            if (strcmp(query, "prometheus") != 0) fail_msg("the datasource variable should query 'prometheus'");
            ds += strcmp(name, "datasource") == 0;
            continue;
        }
        snprintf(what, sizeof what, "the variable %s", name);
        expect_datasource_variable(v, what);
        if (sscanf(query, "label_values(%511[^,], %63[^)])", sel, label) != 2)
            fail_msg("%s: expected label_values(selector, label), got '%s'", what, query);
        if (strcmp(name, "instance") == 0) {
            inst = 1;
            if (strncmp(sel, "tide_build_info", 15) != 0 || strcmp(label, "instance") != 0)
                fail_msg("the instance variable should be label_values(tide_build_info..., instance): %s", query);
        }
        res = prom_query_nonempty(prom, sel, what);
        json_array_foreach(res, k, s)
            if (json_object_get(json_object_get(s, "metric"), label) == NULL)
                fail_msg("%s: a series of '%s' has no label %s", what, sel, label);
        json_decref(res);
    }
    if (!ds) fail_msg("the dashboard needs a template variable 'datasource' of type datasource");
    if (!inst) fail_msg("the dashboard needs an 'instance' template variable");
}

/* The rows, in order, each followed by at least one panel before the next. */
static void check_dashboard_rows(json_t *d)
{
    static const char *const want[] = { "Requests", "Store", "Caches", "Memory" };
    json_t *p;
    size_t i, rows = 0, since_row = 1;

    json_array_foreach(json_object_get(d, "panels"), i, p) {
        if (strcmp(json_string_value(json_object_get(p, "type")), "row") != 0) { since_row++; continue; }
        const char *title = json_string_value(json_object_get(p, "title"));
        if (since_row == 0) fail_msg("the row before '%s' has no panel", title);
        if (rows >= 4 || strcmp(title, want[rows]) != 0)
            fail_msg("row %zu is '%s'; expected the rows Requests, Store, Caches, Memory in that order", rows + 1, title);
        rows++;
        since_row = 0;
    }
    if (rows != 4 || since_row == 0) fail_msg("expected 4 rows each with panels; found %zu rows", rows);
}

/* Every panel and query of the Grafana dashboard: the data source variable
 * everywhere, {{instance}} in every legend, `instance=~"$instance"` in every
 * query, and every query returning series from the scraped tided. */
static void check_dashboard_queries(const tided *prom)
{
    json_error_t e;
    json_t *d = json_load_file(DASHBOARD, 0, &e);
    json_t *panel, *target, *ann;
    size_t i, k, checked = 0;
    char what[300];

    if (d == NULL) fail_msg(DASHBOARD " does not parse: %s (line %d)", e.text, e.line);
    check_dashboard_variables(prom, d);
    check_dashboard_rows(d);
    json_array_foreach(json_object_get(d, "panels"), i, panel) {
        const char *title = json_string_value(json_object_get(panel, "title"));
        if (strcmp(json_string_value(json_object_get(panel, "type")), "row") == 0) continue;
        snprintf(what, sizeof what, "the panel '%s'", title);
        expect_datasource_variable(panel, what);
        if (json_array_size(json_object_get(panel, "targets")) == 0) fail_msg("%s has no query", what);
        json_array_foreach(json_object_get(panel, "targets"), k, target) {
            const char *expr = json_string_value(json_object_get(target, "expr"));
            const char *legend = json_string_value(json_object_get(target, "legendFormat"));
            snprintf(what, sizeof what, "the panel '%s', query %s", title,
                     json_string_value(json_object_get(target, "refId")));
            expect_datasource_variable(target, what);
            if (expr == NULL) fail_msg("%s has no expr", what);
            if (legend == NULL || strstr(legend, "{{instance}}") == NULL)
                fail_msg("%s: its legendFormat '%s' lacks {{instance}}", what, legend ? legend : "(none)");
            if (strstr(expr, "instance=~\"$instance\"") == NULL) fail_msg("%s does not use $instance: %s", what, expr);
            json_decref(prom_query_nonempty(prom, expr, what));
            checked++;
        }
    }
    json_array_foreach(json_object_get(json_object_get(d, "annotations"), "list"), i, ann) {
        snprintf(what, sizeof what, "the annotation '%s'", json_string_value(json_object_get(ann, "name")));
        expect_datasource_variable(ann, what);
        json_decref(prom_query_nonempty(prom, json_string_value(json_object_get(ann, "expr")), what));
        checked++;
    }
    if (checked < 20) fail_msg("expected at least 20 dashboard queries, found %zu", checked);
    json_decref(d);
}

/* 1 when `query` returns at least one series on Prometheus. */
static int prom_has(const tided *prom, const char *query)
{
    CURL *h = curl_easy_init();
    char *q = curl_easy_escape(h, query, 0), path[2048];
    int has;

    snprintf(path, sizeof path, "/api/v1/query?query=%s", q);
    resp r = http(prom, "GET", path, NULL, 0, 0, NULL);
    has = r.status == 200 && strstr(r.body, "\"result\":[{") != NULL;
    resp_free(&r);
    curl_free(q);
    curl_easy_cleanup(h);
    return has;
}

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

static void a_real_prometheus_scrapes_tided_and_runs_every_dashboard_query(void **state)
{
    static char tok[] = "TIDE_METRICS_TOKEN=" METRICS_TOKEN;
    static char admin[] = "TIDE_ADMIN_TOKEN=" ADMIN_TOKEN;
    char *env[] = { tok, admin, NULL };
    char cfg_path[600], token_path[600], tsdb[600], log_path[600], target[64], listen[64], q[1024], out[65536];
    tided t, prom;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, env);
    dashboard_traffic(&t);
    memset(&prom, 0, sizeof prom);
    tided_prepare(&prom);
    th_path(cfg_path, sizeof cfg_path, prom.dir, "prometheus.yml");
    th_path(token_path, sizeof token_path, prom.dir, "metrics.token");
    th_path(tsdb, sizeof tsdb, prom.dir, "tsdb");
    th_path(log_path, sizeof log_path, prom.dir, "prometheus.log");
    assert_int_equal(th_write_file(token_path, METRICS_TOKEN, strlen(METRICS_TOKEN)), 0);
    /* The shipped file, with only the token file, the target and the
     * interval changed. */
    char *cfg0 = th_slurp("contrib/prometheus/prometheus.yml");
    char *cfg1 = replace_once(cfg0, "/etc/tide/metrics.token", token_path);
    snprintf(target, sizeof target, "127.0.0.1:%d", t.port);
    char *cfg2 = replace_once(cfg1, "127.0.0.1:8080", target);
    char *cfg3 = replace_once(cfg2, "scrape_interval: 15s", "scrape_interval: 1s");
    char *cfg4 = replace_once(cfg3, "scrape_timeout: 10s", "scrape_timeout: 1s");
    assert_int_equal(th_write_file(cfg_path, cfg4, strlen(cfg4)), 0);
    free(cfg0); free(cfg1); free(cfg2); free(cfg3); free(cfg4);
    snprintf(q, sizeof q, "promtool check config %s 2>&1", cfg_path);
    if (run_capture(q, out, sizeof out) != 0) fail_msg("promtool check config: %s", out);

    prom.port = free_port(AF_INET);
    snprintf(prom.host, sizeof prom.host, "127.0.0.1");
    snprintf(prom.log, sizeof prom.log, "%s", log_path);
    snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%d", prom.port);
    char cfg_arg[800], tsdb_arg[800];
    snprintf(cfg_arg, sizeof cfg_arg, "--config.file=%s", cfg_path);
    snprintf(tsdb_arg, sizeof tsdb_arg, "--storage.tsdb.path=%s", tsdb);
    char *argv[] = { "prometheus", cfg_arg, tsdb_arg, listen, NULL };
    spawn(&prom, argv, NULL);

    /* Poll the query API until the node-cache series is there (the first
     * scrape comes within a second or two of the start). */
    double end = th_now_ms() + 60000;
    int found = 0;
    while (!found && th_now_ms() < end) {
        resp r = http(&prom, "GET", "/api/v1/query?query=tide_memory_consumer_bytes%7Bconsumer%3D%22node_cache%22%7D",
                      NULL, 0, 0, NULL);
        if (r.status == 200 && strstr(r.body, "\"consumer\":\"node_cache\"") && strstr(r.body, "\"value\""))
            found = 1;
        resp_free(&r);
        if (wait_exit(&prom, 0)) fail_msg("prometheus exited early; its log:\n%s", log_tail(&prom));
        if (!found) poll(NULL, 0, 250);
    }
    if (!found) {
        kill(prom.pid, SIGKILL);
        wait_exit(&prom, STOP_MS);
        fail_msg("Prometheus should return tide_memory_consumer_bytes{consumer=\"node_cache\"} within 60 s; "
                 "its log:\n%s", log_tail(&prom));
    }
    /* A sweep (its trim marks the annotation), more traffic, and three
     * scrapes of it all, so every rate has samples to work on. */
    dashboard_traffic(&t);
    resp r = http(&t, "POST", "/v1/admin/sweep", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    expect_status(r, 200, "a sweep for the trim annotation");
    resp_free(&r);
    end = th_now_ms() + 60000;
    while (!(prom_has(&prom, "changes(tide_trims_total{job=\"tide\"}[1m]) > 0")
             && prom_has(&prom, "count_over_time(tide_http_requests_total{job=\"tide\",code=\"201\"}[1m]) >= 3"))) {
        if (th_now_ms() > end) {
            kill(prom.pid, SIGKILL);
            wait_exit(&prom, STOP_MS);
            fail_msg("Prometheus should have three scrapes of the traffic and the trim within 60 s; its log:\n%s",
                     log_tail(&prom));
        }
        poll(NULL, 0, 250);
    }
    r = http(&prom, "GET", "/api/v1/targets", NULL, 0, 0, NULL);
    expect_status(r, 200, "GET /api/v1/targets");
    expect_contains(r.body, target, "the tided target");
    resp_free(&r);
    check_dashboard_queries(&prom);
    r = http(&prom, "GET", "/api/v1/targets", NULL, 0, 0, NULL);
    expect_contains(r.body, target, "the tided target");
    expect_contains(r.body, "\"health\":\"up\"", "the target is up");
    resp_free(&r);
    kill(prom.pid, SIGTERM);
    if (!wait_exit(&prom, STOP_MS)) { kill(prom.pid, SIGKILL); wait_exit(&prom, STOP_MS); }
    tided_cleanup(&prom);
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
        cmocka_unit_test(a_real_prometheus_scrapes_tided_and_runs_every_dashboard_query),
    };
    int failed;

    signal(SIGPIPE, SIG_IGN);
    http_filter_from_env();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    failed = th_run_group("tided, /metrics", tests, NULL, NULL, th_teardown);
    curl_global_cleanup();
    return failed;
}
