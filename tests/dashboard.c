/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dashboard.c: a real Prometheus scraping a tided, and the Grafana
 * dashboard's queries run on it (dashboard.h says what is checked and
 * why the Archive row is run apart).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dashboard.h"
#include "expect.h"
#include "helpers.h"
#include "http_helpers.h"

#define DS_UID     "${datasource}"
#define PROM_WAIT  60000
#define ARCHIVE_ROW "Archive"

/* ---- Prometheus -------------------------------------------------------------- */

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

void prom_start(tided *prom, const tided *node, const char *token)
{
    char cfg_path[600], token_path[600], tsdb[600], log_path[600], target[64], listen[64], q[1024], out[65536];
    char cfg_arg[800], tsdb_arg[800];

    memset(prom, 0, sizeof *prom);
    tided_prepare(prom);
    th_path(cfg_path, sizeof cfg_path, prom->dir, "prometheus.yml");
    th_path(token_path, sizeof token_path, prom->dir, "metrics.token");
    th_path(tsdb, sizeof tsdb, prom->dir, "tsdb");
    th_path(log_path, sizeof log_path, prom->dir, "prometheus.log");
    assert_int_equal(th_write_file(token_path, token, strlen(token)), 0);
    /* The shipped file, with only the token file, the target and the
     * interval changed. */
    char *cfg0 = th_slurp("contrib/prometheus/prometheus.yml");
    char *cfg1 = replace_once(cfg0, "/etc/tide/metrics.token", token_path);
    snprintf(target, sizeof target, "127.0.0.1:%d", node->port);
    char *cfg2 = replace_once(cfg1, "127.0.0.1:8080", target);
    char *cfg3 = replace_once(cfg2, "scrape_interval: 15s", "scrape_interval: 1s");
    char *cfg4 = replace_once(cfg3, "scrape_timeout: 10s", "scrape_timeout: 1s");
    assert_int_equal(th_write_file(cfg_path, cfg4, strlen(cfg4)), 0);
    free(cfg0); free(cfg1); free(cfg2); free(cfg3); free(cfg4);
    snprintf(q, sizeof q, "promtool check config %s 2>&1", cfg_path);
    if (run_capture(q, out, sizeof out) != 0) fail_msg("promtool check config: %s", out);

    prom->port = free_port(AF_INET);
    snprintf(prom->host, sizeof prom->host, "127.0.0.1");
    snprintf(prom->log, sizeof prom->log, "%s", log_path);
    snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%d", prom->port);
    snprintf(cfg_arg, sizeof cfg_arg, "--config.file=%s", cfg_path);
    snprintf(tsdb_arg, sizeof tsdb_arg, "--storage.tsdb.path=%s", tsdb);
    char *argv[] = { "prometheus", cfg_arg, tsdb_arg, listen, NULL };
    spawn(prom, argv, NULL);
    /* The first scrape comes within a second or two of the start. */
    prom_wait(prom, "tide_build_info{job=\"tide\"}", "a first scrape of tided");
    resp r = http(prom, "GET", "/api/v1/targets", NULL, 0, 0, NULL);
    expect_status(r, 200, "GET /api/v1/targets");
    expect_contains(r.body, target, "the tided target");
    expect_contains(r.body, "\"health\":\"up\"", "the target is up");
    resp_free(&r);
}

void prom_stop(tided *prom)
{
    kill(prom->pid, SIGTERM);
    if (!wait_exit(prom, STOP_MS)) { kill(prom->pid, SIGKILL); wait_exit(prom, STOP_MS); }
    tided_cleanup(prom);
}

int prom_has(const tided *prom, const char *query)
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

void prom_wait(tided *prom, const char *query, const char *what)
{
    double end = th_now_ms() + PROM_WAIT;

    while (!prom_has(prom, query)) {
        if (wait_exit(prom, 0)) fail_msg("prometheus exited early; its log:\n%s", log_tail(prom));
        if (th_now_ms() > end) {
            kill(prom->pid, SIGKILL);
            wait_exit(prom, STOP_MS);
            fail_msg("%s: Prometheus should return series for '%s' within %d s; its log:\n%s", what, query,
                     PROM_WAIT / 1000, log_tail(prom));
        }
        poll(NULL, 0, 250);
    }
}

/* ---- the dashboard ------------------------------------------------------------- */

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
static void check_variables(const tided *prom, json_t *d)
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
static void check_rows(json_t *d)
{
    static const char *const want[] = { "Requests", "Store", "Caches", "Memory", "Memory limit", "Online delete",
                                        ARCHIVE_ROW };
    const size_t nwant = sizeof want / sizeof want[0];
    json_t *p;
    size_t i, rows = 0, since_row = 1;

    json_array_foreach(json_object_get(d, "panels"), i, p) {
        if (strcmp(json_string_value(json_object_get(p, "type")), "row") != 0) { since_row++; continue; }
        const char *title = json_string_value(json_object_get(p, "title"));
        if (since_row == 0) fail_msg("the row before '%s' has no panel", title);
        if (rows >= nwant || strcmp(title, want[rows]) != 0)
            fail_msg("row %zu is '%s'; expected the rows Requests, Store, Caches, Memory, Memory limit, "
                     "Online delete, Archive in that order", rows + 1, title);
        rows++;
        since_row = 0;
    }
    if (rows != nwant || since_row == 0) fail_msg("expected %zu rows each with panels; found %zu rows", nwant, rows);
}

/* One query of a panel: its shape, whatever `part`; run on Prometheus when
 * its row is in `part`. Returns 1 when run. */
static int check_target(const tided *prom, json_t *target, const char *title, int in_archive,
                        enum dashboard_part part)
{
    const char *expr = json_string_value(json_object_get(target, "expr"));
    const char *legend = json_string_value(json_object_get(target, "legendFormat"));
    char what[300];

    snprintf(what, sizeof what, "the panel '%s', query %s", title, json_string_value(json_object_get(target, "refId")));
    expect_datasource_variable(target, what);
    if (expr == NULL) fail_msg("%s has no expr", what);
    if (legend == NULL || strstr(legend, "{{instance}}") == NULL)
        fail_msg("%s: its legendFormat '%s' lacks {{instance}}", what, legend ? legend : "(none)");
    if (strstr(expr, "instance=~\"$instance\"") == NULL) fail_msg("%s does not use $instance: %s", what, expr);
    if (in_archive != (strstr(expr, "tide_archive_") != NULL))
        fail_msg("%s: %s; only the Archive row's queries, and each of them, read tide_archive_ families (it is "
                 "run against a tided with the archive on): %s", what,
                 in_archive ? "in the Archive row without one" : "outside the Archive row with one", expr);
    if (in_archive != (part == DASHBOARD_ARCHIVE)) return 0;
    json_decref(prom_query_nonempty(prom, expr, what));
    return 1;
}

void dashboard_check(const tided *prom, enum dashboard_part part)
{
    json_error_t e;
    json_t *d = json_load_file(DASHBOARD, 0, &e);
    json_t *panel, *target, *ann;
    size_t i, k, checked = 0;
    int in_archive = 0;
    char what[300];

    if (d == NULL) fail_msg(DASHBOARD " does not parse: %s (line %d)", e.text, e.line);
    check_variables(prom, d);
    check_rows(d);
    json_array_foreach(json_object_get(d, "panels"), i, panel) {
        const char *title = json_string_value(json_object_get(panel, "title"));
        if (strcmp(json_string_value(json_object_get(panel, "type")), "row") == 0) {
            in_archive = strcmp(title, ARCHIVE_ROW) == 0;
            continue;
        }
        snprintf(what, sizeof what, "the panel '%s'", title);
        expect_datasource_variable(panel, what);
        if (json_array_size(json_object_get(panel, "targets")) == 0) fail_msg("%s has no query", what);
        json_array_foreach(json_object_get(panel, "targets"), k, target)
            checked += (size_t)check_target(prom, target, title, in_archive, part);
    }
    json_array_foreach(json_object_get(json_object_get(d, "annotations"), "list"), i, ann) {
        const char *expr = json_string_value(json_object_get(ann, "expr"));
        snprintf(what, sizeof what, "the annotation '%s'", json_string_value(json_object_get(ann, "name")));
        expect_datasource_variable(ann, what);
        if (expr == NULL || strstr(expr, "tide_archive_") != NULL)
            fail_msg("%s should have an expr reading no tide_archive_ family: %s", what, expr ? expr : "(none)");
        if (part == DASHBOARD_ALL_BUT_ARCHIVE) {
            json_decref(prom_query_nonempty(prom, expr, what));
            checked++;
        }
    }
    if (part == DASHBOARD_ALL_BUT_ARCHIVE && checked < 45)
        fail_msg("expected at least 45 dashboard queries outside the Archive row, found %zu", checked);
    if (part == DASHBOARD_ARCHIVE && checked < 15)
        fail_msg("expected at least 15 queries in the Archive row, found %zu", checked);
    json_decref(d);
}
