/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_http_archive.c: tided with its archive in a real Ceph cluster
 * (tests/support/ceph.h), over HTTP: a primary and two read replicas
 * behind nginx's consistent hash, the OSD stopped and started under
 * writes, archive_sync=archive's answers while the cluster is away, and a
 * node killed with SIGKILL rebuilt by `tide archive restore` on an empty
 * directory with every acknowledged write, and the Grafana dashboard's
 * Archive row run on a real Prometheus scraping a primary.
 *
 * Every process (tided, nginx, the cluster's daemons) is a th_fork child
 * or the fixture's, stopped whatever the outcome. Waits poll a condition
 * (a metric, an answer) with a generous bound; no duration is asserted.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "dashboard.h"
#include "helpers.h"
#include "http_helpers.h"
#include "promcheck.h"
#include "support/ceph.h"

#define WAIT_MS 120000
#define SPAN 120                   /* objects per span (the online_delete trigger) */

static th_ceph cluster;
static unsigned prefixes;
static char *const public_env[] = { "TIDE_METRICS_PUBLIC=1", "TIDE_ADMIN_TOKEN=" ADMIN_TOKEN, NULL };

static int archive_group_setup(void **state)
{
    (void)state;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) return -1;
    return th_ceph_start(&cluster) < 0 ? -1 : 0;
}

static int archive_group_teardown(void **state)
{
    (void)state;
    th_ceph_stop(&cluster);
    curl_global_cleanup();
    return 0;
}

static int teardown(void **state)
{
    th_teardown(state);
    if (cluster.up) th_ceph_osd_start(&cluster, 0);
    return 0;
}

static size_t len_of(uint64_t i) { return th_len(i, 50, 2000); }

static void new_prefix(char *out, size_t cap)
{
    snprintf(out, cap, "h%d-%u", (int)getpid(), ++prefixes);
}

/* tided's archive flags, then `more` (NULL-terminated), into argv. */
static void archive_flags(const char **argv, size_t cap, const char *prefix, const char *const *more)
{
    static char conf[PATH_MAX + 32], pre[128];
    size_t n = 0;

    snprintf(conf, sizeof conf, "--archive-conf=%s", cluster.conf);
    snprintf(pre, sizeof pre, "--archive-prefix=%s", prefix);
    argv[n++] = "--archive=rados";
    argv[n++] = conf;
    argv[n++] = pre;
    argv[n++] = "--archive-chunk=64KiB";
    argv[n++] = "--archive-timeout=3";
    for (size_t i = 0; more && more[i] && n + 1 < cap; i++) argv[n++] = more[i];
    argv[n] = NULL;
}

static void primary_start(tided *t, const char *prefix, const char *const *more)
{
    const char *argv[24];
    const char *const base[] = { "--online-delete=120", "--generations=2", NULL };
    const char *all[24];
    size_t n = 0;

    for (size_t i = 0; base[i]; i++) all[n++] = base[i];
    for (size_t i = 0; more && more[i] && n < 20; i++) all[n++] = more[i];
    all[n] = NULL;
    archive_flags(argv, 24, prefix, all);
    tided_start(t, argv, public_env);
}

static void replica_start(tided *t, const char *prefix)
{
    const char *argv[16];
    const char *const more[] = { "--archive-mode=replica", NULL };

    archive_flags(argv, 16, prefix, more);
    tided_start(t, argv, public_env);
}

/* PUT object i (?sync=1 when sync); the status. */
static long put_obj(const tided *t, uint64_t i, int sync)
{
    uint8_t val[2000];
    resp r;
    long st;

    th_value(i, len_of(i), val);
    r = http(t, "PUT", obj_path(i, sync ? "?sync=1" : NULL), val, len_of(i), 0, NULL);
    st = r.status;
    resp_free(&r);
    return st;
}

/* GET object i: 200 only with its own bytes (fails otherwise); the status. */
static long get_obj(const tided *t, uint64_t i)
{
    uint8_t val[2000];
    resp r = http(t, "GET", obj_path(i, NULL), NULL, 0, 0, NULL);
    long st = r.status;

    th_value(i, len_of(i), val);
    if (st == 200 && (r.len != len_of(i) || memcmp(r.body, val, r.len) != 0))
        fail_msg("GET of object %" PRIu64 ": 200 with %zu other bytes (expected %zu)", i, r.len, len_of(i));
    resp_free(&r);
    return st;
}

/* The value of the sample `sample` ("tide_archive_up", or with its labels)
 * on t's /metrics, or -1 when absent. */
static double metric(tided *t, const char *sample)
{
    char *page = scrape_with(t, NULL, 200), *at = page;
    size_t n = strlen(sample);
    double v = -1;

    while ((at = strstr(at, sample)) != NULL) {
        if ((at == page || at[-1] == '\n') && at[n] == ' ') {
            v = strtod(at + n + 1, NULL);
            break;
        }
        at += n;
    }
    free(page);
    return v;
}

static void wait_metric(tided *t, const char *sample, int (*ok)(double), const char *what)
{
    double t0 = th_now_ms(), v;

    while (!ok(v = metric(t, sample))) {
        if (th_now_ms() - t0 > WAIT_MS)
            fail_msg("%s: %s is %g after %d ms; the log:\n%s", what, sample, v, WAIT_MS, log_tail(t));
        usleep(100000);
    }
}

static int is_zero(double v) { return v == 0; }
static int is_one(double v) { return v == 1; }
static int is_positive(double v) { return v > 0; }

/* POST /v1/admin/rotate until it runs: 503 archive_not_sealed while a
 * generation it would drop is not sealed yet. */
static void rotate(tided *t)
{
    double t0 = th_now_ms();

    for (;;) {
        resp r = http(t, "POST", "/v1/admin/rotate", NULL, 0, 0, AUTH);
        long st = r.status;
        if (st == 200) { resp_free(&r); return; }
        if (st != 503 || strstr(r.body, "archive_not_sealed") == NULL || th_now_ms() - t0 > WAIT_MS)
            fail_msg("rotate: %ld %s", st, r.body);
        resp_free(&r);
        usleep(100000);
    }
}

/* Every object below `count` in sealed generations: the lag gone, then two
 * rotations, so the generation that held the last of them is sealed. */
static void seal_everything(tided *t)
{
    wait_metric(t, "tide_archive_lag_bytes", is_zero, "the archive catching up");
    rotate(t);
    rotate(t);
    wait_metric(t, "tide_archive_lag_bytes", is_zero, "the archive sealing");
}

/* ---- nginx in front of the replicas --------------------------------------- */

typedef struct proxy {
    tided t;                     /* its port and log, for http() and wait_exit() */
} proxy;

static void proxy_start(proxy *p, const tided *a, const tided *b)
{
    char conf[700], text[8192];
    char *argv[] = { "/usr/sbin/nginx", "-p", NULL, "-c", conf, NULL };

    tided_prepare(&p->t);
    snprintf(p->t.host, sizeof p->t.host, "127.0.0.1");
    p->t.port = free_port(AF_INET);
    snprintf(conf, sizeof conf, "%s/nginx.conf", p->t.dir);
    snprintf(text, sizeof text,
             "daemon off;\nworker_processes 1;\nerror_log %s/nginx.err warn;\npid %s/nginx.pid;\n"
             "events { worker_connections 128; }\n"
             "http {\n access_log off;\n client_body_temp_path %s/t1;\n proxy_temp_path %s/t2;\n"
             " fastcgi_temp_path %s/t3;\n uwsgi_temp_path %s/t4;\n scgi_temp_path %s/t5;\n"
             " upstream replicas {\n  hash $uri consistent;\n  server 127.0.0.1:%d;\n  server 127.0.0.1:%d;\n"
             "  keepalive 8;\n }\n"
             " server {\n  listen 127.0.0.1:%d;\n  location / {\n   proxy_pass http://replicas;\n"
             "   proxy_http_version 1.1;\n   proxy_set_header Connection \"\";\n   proxy_buffering off;\n"
             "  }\n }\n}\n",
             p->t.dir, p->t.dir, p->t.dir, p->t.dir, p->t.dir, p->t.dir, p->t.dir, a->port, b->port, p->t.port);
    if (th_write_file(conf, text, strlen(text)) != 0) fail_msg("writing %s", conf);
    chmod(p->t.dir, 0755);
    argv[2] = p->t.dir;
    spawn(&p->t, argv, NULL);
    for (double t0 = th_now_ms();; usleep(50000)) {
        resp r = http(&p->t, "GET", "/healthz", NULL, 0, 0, NULL);
        long st = r.status;
        resp_free(&r);
        if (st == 200) break;
        if (wait_exit(&p->t, 0) || th_now_ms() - t0 > WAIT_MS)
            fail_msg("nginx did not start: %s", log_tail(&p->t));
    }
}

/* ---- tests --------------------------------------------------------------- */

static void two_replicas_behind_nginx_serve_every_sealed_object(void **state)
{
    tided primary = { .host = "127.0.0.1" }, r1 = { .host = "127.0.0.1" }, r2 = { .host = "127.0.0.1" };
    char prefix[64], s1[64];
    proxy px = { { .host = "127.0.0.1" } };
    const uint64_t count = 4 * SPAN;
    resp r;

    (void)state;
    new_prefix(prefix, sizeof prefix);
    primary_start(&primary, prefix, NULL);
    for (uint64_t i = 0; i < count; i++)
        if (put_obj(&primary, i, i % 50 == 49) != 201) fail_msg("PUT %" PRIu64 " refused", i);
    seal_everything(&primary);
    replica_start(&r1, prefix);
    replica_start(&r2, prefix);
    proxy_start(&px, &r1, &r2);
    for (uint64_t i = 0; i < count; i++) {
        long st = get_obj(&px.t, i);
        if (st != 200) fail_msg("GET %" PRIu64 " through nginx: %ld", i, st);
    }
    /* The hash spread the keys: each replica read some from the archive. */
    snprintf(s1, sizeof s1, "tide_archive_reads_total{result=\"found\"}");
    if (metric(&r1, s1) <= 0 || metric(&r2, s1) <= 0)
        fail_msg("a replica served nothing: %g and %g reads found", metric(&r1, s1), metric(&r2, s1));
    assert_true(metric(&r1, s1) + metric(&r2, s1) >= (double)count);
    /* The archive's families pass promtool and Tide's own checks, a
     * primary's page and a replica's. */
    {
        tided *pages[2] = { &primary, &r1 };
        for (int k = 0; k < 2; k++) {
            char *page = scrape_with(pages[k], NULL, 200), msg[4096];
            if (strstr(page, "tide_archive_op_duration_seconds_bucket") == NULL)
                fail_msg("no archive families on the page");
            if (th_prom_check(page, msg, sizeof msg) != 0) fail_msg("%s", msg);
            if (th_promtool_check(page, msg, sizeof msg) != 0) fail_msg("promtool check metrics: %s", msg);
            free(page);
        }
    }
    /* A second pass is the replicas' caches. */
    for (uint64_t i = 0; i < count; i++) assert_int_equal(get_obj(&px.t, i), 200);
    assert_true(metric(&r1, s1) + metric(&r2, s1) < 2.0 * (double)count);
    /* A replica takes no writes. */
    {
        uint8_t v[8] = "x";
        r = http(&px.t, "PUT", obj_path(1u << 30, NULL), v, 1, 0, NULL);
        expect_status(r, 403, "a PUT to a replica");
        expect_error_json(&r, "read_only_replica", "a PUT to a replica");
        resp_free(&r);
    }
    /* New seals reach the replicas: a span written now is served once sealed. */
    for (uint64_t i = count; i < count + SPAN; i++) assert_int_equal(put_obj(&primary, i, 0), 201);
    seal_everything(&primary);
    for (uint64_t i = count; i < count + SPAN; i++) {
        long st;
        double t0 = th_now_ms();
        while ((st = get_obj(&px.t, i)) == 404 && th_now_ms() - t0 < WAIT_MS) usleep(100000);
        if (st != 200) fail_msg("GET %" PRIu64 " of a new seal through nginx: %ld", i, st);
    }
    tided_signal_and_reap(&r1, SIGTERM);
    tided_signal_and_reap(&r2, SIGTERM);
    tided_signal_and_reap(&primary, SIGTERM);
    kill(px.t.pid, SIGQUIT);
    wait_exit(&px.t, STOP_MS);
}

static void the_osd_stopped_and_started_under_writes_loses_nothing(void **state)
{
    tided primary = { .host = "127.0.0.1" };
    char prefix[64];
    const uint64_t count = 3 * SPAN;

    (void)state;
    new_prefix(prefix, sizeof prefix);
    primary_start(&primary, prefix, NULL);
    for (uint64_t i = 0; i < SPAN / 2; i++) assert_int_equal(put_obj(&primary, i, 0), 201);
    assert_int_equal(th_ceph_osd_stop(&cluster, 0), 0);
    /* Writes go on: the disk acknowledges them (archive_sync=local). */
    for (uint64_t i = SPAN / 2; i < count; i++)
        if (put_obj(&primary, i, i % 40 == 39) != 201) fail_msg("PUT %" PRIu64 " with the OSD down", i);
    wait_metric(&primary, "tide_archive_up", is_zero, "the archive noticing the OSD is down");
    wait_metric(&primary, "tide_archive_lag_bytes", is_positive, "the lag with the OSD down");
    /* The first rotation drops nothing; the next would drop generation 1,
     * which the archive has not sealed: it waits. */
    wait_metric(&primary, "tide_rotations_total", is_positive, "the first rotation");
    for (uint64_t i = count; i < count + SPAN + 10; i++) assert_int_equal(put_obj(&primary, i, 0), 201);
    wait_metric(&primary, "tide_archive_rotation_waits_total", is_positive, "rotations waiting for the archive");
    assert_true(metric(&primary, "tide_rotations_total") == 1);
    for (uint64_t i = 0; i < count + SPAN + 10; i++) assert_int_equal(get_obj(&primary, i), 200);
    assert_int_equal(th_ceph_osd_start(&cluster, 0), 0);
    wait_metric(&primary, "tide_archive_up", is_one, "the archive back");
    seal_everything(&primary);
    assert_true(metric(&primary, "tide_archive_sealed_generations") >= 3);
    for (uint64_t i = 0; i < count + SPAN + 10; i++) assert_int_equal(get_obj(&primary, i), 200);
    tided_signal_and_reap(&primary, SIGTERM);
}

static void archive_sync_answers_503_while_the_cluster_is_away(void **state)
{
    tided primary = { .host = "127.0.0.1" };
    const char *const more[] = { "--archive-sync=archive", NULL };
    char prefix[64];
    resp r;
    long st = 0;

    (void)state;
    new_prefix(prefix, sizeof prefix);
    primary_start(&primary, prefix, more);
    for (uint64_t i = 0; i < SPAN; i++) assert_int_equal(put_obj(&primary, i, i == SPAN - 1), 201);
    seal_everything(&primary);          /* span 0 only in the archive now */
    assert_int_equal(th_ceph_osd_stop(&cluster, 0), 0);
    r = http(&primary, "PUT", obj_path(1000000, "?sync=1"), "abc", 3, 0, NULL);
    expect_status(r, 503, "a PUT ?sync=1 with the OSD stopped");
    expect_error_json(&r, "archive_unavailable", "a PUT ?sync=1 with the OSD stopped");
    if (strstr(r.headers, "Retry-After") == NULL && strstr(r.headers, "retry-after") == NULL)
        fail_msg("no Retry-After: %s", r.headers);
    resp_free(&r);
    r = http(&primary, "GET", obj_path(0, NULL), NULL, 0, 0, NULL);
    expect_status(r, 503, "a GET of an archive-only object with the OSD stopped");
    expect_error_json(&r, "archive_unavailable", "a GET of an archive-only object");
    resp_free(&r);
    /* Written locally all the same: it reads back. */
    r = http(&primary, "GET", obj_path(1000000, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "the value a 503 PUT stored locally");
    resp_free(&r);
    assert_int_equal(th_ceph_osd_start(&cluster, 0), 0);
    for (double t0 = th_now_ms(); th_now_ms() - t0 < WAIT_MS; usleep(100000)) {
        r = http(&primary, "PUT", obj_path(1000001, "?sync=1"), "def", 3, 0, NULL);
        st = r.status;
        resp_free(&r);
        if (st != 503) break;
    }
    assert_int_equal(st, 201);
    for (double t0 = th_now_ms(); (st = get_obj(&primary, 0)) == 503 && th_now_ms() - t0 < WAIT_MS;)
        usleep(100000);
    assert_int_equal(st, 200);
    tided_signal_and_reap(&primary, SIGTERM);
}

/* The writer: PUT ?sync=1 objects from `first` on, one at a time, and
 * write each index acknowledged with 201 to fd (8 bytes each); stop at the
 * first failure (tided killed). */
static void acked_writer(const tided *t, uint64_t first, int fd)
{
    for (uint64_t i = first;; i++) {
        if (put_obj(t, i, 1) != 201) _exit(0);
        if (write(fd, &i, sizeof i) != (ssize_t)sizeof i) _exit(1);
    }
}

static void every_acknowledged_write_survives_kill_9_and_a_restore(void **state)
{
    tided primary = { .host = "127.0.0.1" }, restored = { .host = "127.0.0.1" };
    const char *const more[] = { "--archive-sync=archive", NULL };
    char prefix[64], args[8192], *out = NULL;
    uint64_t *acked = NULL, i;
    size_t nacked = 0, cap = 0;
    int fds[2], status = 0;
    pid_t writer;

    (void)state;
    new_prefix(prefix, sizeof prefix);
    primary_start(&primary, prefix, more);
    if (pipe(fds) != 0) fail_msg("pipe");
    writer = th_fork();
    if (writer < 0) fail_msg("fork");
    if (writer == 0) {
        close(fds[0]);
        acked_writer(&primary, 0, fds[1]);
    }
    close(fds[1]);
    /* Let it write through several rotations, then kill tided mid-stream. */
    while (read(fds[0], &i, sizeof i) == (ssize_t)sizeof i) {
        if (nacked == cap) {
            cap = cap ? 2 * cap : 1024;
            acked = realloc(acked, cap * sizeof *acked);
            assert_non_null(acked);
        }
        acked[nacked++] = i;
        if (nacked == 4 * SPAN) kill(primary.pid, SIGKILL);
    }
    close(fds[0]);
    th_waitpid(writer, &status, 0);
    wait_exit(&primary, STOP_MS);
    assert_true(nacked >= 4 * SPAN);
    /* The machine is gone: only the archive is left. */
    tided_prepare(&restored);
    snprintf(args, sizeof args, "archive restore '%s' --conf '%s' --pool %s --prefix %s --no-progress",
             restored.data, cluster.conf, cluster.pool, prefix);
    if (th_run_tide(args, 1, &out) != 0) fail_msg("tide %s:\n%s", args, out);
    free(out);
    {
        const char *argv[16];
        archive_flags(argv, 16, prefix, (const char *const[]){ "--online-delete=120", NULL });
        tided_start(&restored, argv, public_env);
    }
    for (size_t k = 0; k < nacked; k++) {
        long st = get_obj(&restored, acked[k]);
        if (st != 200) fail_msg("acknowledged object %" PRIu64 " (%zu of %zu): %ld after the restore", acked[k],
                                k, nacked, st);
    }
    free(acked);
    tided_signal_and_reap(&restored, SIGTERM);
}

/* 1 when process pid has librados mapped. */
static int maps_librados(pid_t pid)
{
    char path[64], *maps;
    int found;

    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    maps = th_slurp(path);
    if (maps == NULL) fail_msg("%s unreadable", path);
    found = strstr(maps, "librados.so") != NULL;
    free(maps);
    return found;
}

static void librados_is_loaded_only_with_the_archive_on(void **state)
{
    tided plain = { .host = "127.0.0.1" }, primary = { .host = "127.0.0.1" };
    char prefix[64];

    (void)state;
    tided_start(&plain, NULL, public_env);
    assert_int_equal(put_obj(&plain, 1, 1), 201);
    if (maps_librados(plain.pid)) fail_msg("a tided without the archive mapped librados");
    new_prefix(prefix, sizeof prefix);
    primary_start(&primary, prefix, NULL);
    if (!maps_librados(primary.pid)) fail_msg("a tided with the archive on has no librados mapped");
    tided_signal_and_reap(&plain, SIGTERM);
    tided_signal_and_reap(&primary, SIGTERM);
}

/* The Grafana dashboard's Archive row (tests/dashboard.h; test_http_metrics
 * runs the other rows): a primary that has uploaded, sealed two
 * generations and read some objects back from the archive alone (found)
 * and a key never stored (missed), each after Prometheus' first scrape so
 * that the rates have something to show. */
static void a_real_prometheus_scrapes_a_primary_and_runs_the_dashboards_archive_queries(void **state)
{
    tided primary = { .host = "127.0.0.1" }, prom;
    char prefix[64];

    (void)state;
    new_prefix(prefix, sizeof prefix);
    primary_start(&primary, prefix, NULL);
    prom_start(&prom, &primary, "any: the page is public");
    for (uint64_t i = 0; i < 2 * SPAN; i++)
        if (put_obj(&primary, i, i % 50 == 49) != 201) fail_msg("PUT %" PRIu64 " refused", i);
    seal_everything(&primary);
    for (uint64_t i = 0; i < 10; i++) assert_int_equal(get_obj(&primary, i), 200);
    assert_int_equal(get_obj(&primary, 1u << 30), 404);
    prom_wait(&prom, "tide_archive_sealed_generations{job=\"tide\"} >= 2", "the seals");
    prom_wait(&prom, "tide_archive_reads_total{job=\"tide\",result=\"found\"} > 0", "the reads through the archive");
    prom_wait(&prom, "count_over_time(tide_archive_up{job=\"tide\"}[1m]) >= 3", "three scrapes");
    dashboard_check(&prom, DASHBOARD_ARCHIVE);
    prom_stop(&prom);
    tided_signal_and_reap(&primary, SIGTERM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(two_replicas_behind_nginx_serve_every_sealed_object, teardown),
        cmocka_unit_test_teardown(the_osd_stopped_and_started_under_writes_loses_nothing, teardown),
        cmocka_unit_test_teardown(archive_sync_answers_503_while_the_cluster_is_away, teardown),
        cmocka_unit_test_teardown(every_acknowledged_write_survives_kill_9_and_a_restore, teardown),
        cmocka_unit_test_teardown(librados_is_loaded_only_with_the_archive_on, teardown),
        cmocka_unit_test_teardown(a_real_prometheus_scrapes_a_primary_and_runs_the_dashboards_archive_queries, teardown),
    };
    http_filter_from_env();
    return cmocka_run_group_tests(tests, archive_group_setup, archive_group_teardown);
}
