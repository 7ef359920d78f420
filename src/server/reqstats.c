/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reqstats.c: tided's request metrics: how many requests were answered (by
 * method and status), how long they took (a histogram by route), and the
 * body bytes that came in and went out.
 *
 * Layout. Each event loop owns one tided_reqstats (loop.c allocates it on
 * its own cache lines), written only by that loop's thread with plain
 * relaxed loads and stores: no lock prefix, no cache line shared with
 * another loop, so a request costs a few stores to memory the loop already
 * owns (a shared `lock add` per request is what stops a server scaling
 * with its threads). A scrape (the metrics worker) reads every
 * loop's figures with relaxed loads and sums them.
 *
 * Where requests are counted. Every request an h2o request exists for is
 * counted once, when h2o disposes it, i.e. after the last byte of the
 * response was written to the socket (or the client went away):
 *   - a request that reached tided's handler through its guard (api.c's
 *     guard_dispose calls tided_reqstats_done with the time the handler
 *     started);
 *   - an answer h2o made itself before any handler (a body over the limit,
 *     a broken chunked body, a request no path matches) through a logger
 *     on the host's fallback path (tided_reqstats_register);
 *   - a refusal conn.c's scan writes on the socket itself, before h2o read
 *     the request (400 framing, 413, 503 overloaded): tided_reqstats_raw.
 * The last two have no start time tided measured, so they are counted in
 * tide_http_requests_total and the byte totals but not in the duration
 * histogram. A request line h2o cannot parse at all is answered by h2o
 * without a request and is not counted.
 *
 * The duration. From the handler's start (h2o has then read the whole
 * request, head and body) to h2o's disposal of the request, which for
 * HTTP/1 follows the write completion of the response's last byte: the
 * time tided spent on the request including a worker's queue (a ?sync=1
 * commit, a scrape) and the write into the kernel's socket buffer, not the
 * client's upload time. h2o 2.2's own request timestamps come from a
 * wall clock cached per millisecond of the event loop, too coarse for a
 * cached GET (tens of microseconds), so tided reads the monotonic clock.
 *
 * The buckets (TIDED_LAT_BOUNDS_S): 50 us to 10 s. A GET served from the
 * node cache over loopback takes tens of microseconds, one from the files
 * hundreds of microseconds to a few milliseconds, a scrape about 1 to 40 ms,
 * a PUT ?sync=1 waits for a commit (milliseconds to seconds on a slow disk);
 * 10 s is the longest any answer should take.
 * Steps of about 2 to 2.5x keep p50 and p99 interpolation within a factor of
 * two across the whole range with 16 buckets per route.
 *
 * Invariants:
 *   1. Only the owning loop's thread writes a loop's tided_reqstats.
 *   2. A request is counted once: by its guard when it reached the handler,
 *      else by the fallback logger, else (no h2o request) by conn.c.
 *   3. A snapshot's buckets are cumulative and its +Inf bucket is its count.
 *   4. Labels come from bounded sets: method_names (with "other"), the
 *      status codes 100..599 plus "none" (no response: the client went
 *      away first), route_names.
 *
 * Never: use an atomic read-modify-write on a per-request path; put a
 * request's own bytes (its method or path) in a label.
 */
#include "server/server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node/metrics.h"
#include "util/assert.h"
#include "util/clock.h"

const double TIDED_LAT_BOUNDS_S[TIDED_LAT_BUCKETS] = {
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
    0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10
};

static const char *const method_names[TIDED_METHODS] = {
    "GET", "HEAD", "PUT", "POST", "DELETE", "OPTIONS", "PATCH", "CONNECT", "TRACE", "other"
};

static const char *const route_names[TIDED_ROUTES] = {
    "object", "healthz", "metrics", "status", "admin", "other"
};

/* Single writer (invariant 1): a relaxed load and store, no lock prefix. */
static inline void bump(uint64_t *p, uint64_t by)
{
    __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + by, __ATOMIC_RELAXED);
}

int tided_reqstats_method(const char *m, size_t n)
{
    for (int i = 0; i < TIDED_METHODS - 1; i++)
        if (n == strlen(method_names[i]) && memcmp(m, method_names[i], n) == 0) return i;
    return TIDED_METHODS - 1;
}

static int has_prefix(const char *p, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    return n >= k && memcmp(p, lit, k) == 0;
}

static int is(const char *p, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(p, lit, n) == 0;
}

int tided_reqstats_route(const char *path, size_t n)
{
    const char *q = memchr(path, '?', n);

    if (q) n = (size_t)(q - path);
    if (has_prefix(path, n, TIDED_OBJECTS_PREFIX)) return TIDED_ROUTE_OBJECT;
    if (is(path, n, "/healthz")) return TIDED_ROUTE_HEALTHZ;
    if (is(path, n, "/metrics")) return TIDED_ROUTE_METRICS;
    if (is(path, n, "/v1/status") || is(path, n, "/v1/sweeps") || is(path, n, "/v1/rotations"))
        return TIDED_ROUTE_STATUS;
    if (has_prefix(path, n, "/v1/admin/")) return TIDED_ROUTE_ADMIN;
    return TIDED_ROUTE_OTHER;
}

static unsigned code_slot(int status)
{
    /* 0: "none": no response was sent (the client went away first; tided
     * itself never sends a status outside 100..599). */
    return status >= 100 && status < TIDED_CODES ? (unsigned)status : 0;
}

static void count(tided_reqstats *s, int method, int status, uint64_t in, uint64_t out)
{
    bump(&s->requests[method][code_slot(status)], 1);
    if (in) bump(&s->bytes_in, in);
    if (out) bump(&s->bytes_out, out);
}

void tided_reqstats_done(tided_loop *l, h2o_req_t *req, uint64_t start_ns)
{
    tided_reqstats *s = l->stats;
    int route, b = 0;
    uint64_t ns;
    double sec;

    if (s == NULL) return;
    count(s, tided_reqstats_method(req->method.base, req->method.len), req->res.status,
          req->entity.base ? req->entity.len : 0, req->bytes_sent);
    if (start_ns == 0) return;
    route = tided_reqstats_route(req->path.base, req->path.len);
    ns = tide_clock_mono_ns() - start_ns;
    sec = (double)ns / 1e9;
    while (b < TIDED_LAT_BUCKETS && sec > TIDED_LAT_BOUNDS_S[b]) b++;
    bump(&s->bucket[route][b], 1);
    bump(&s->sum_ns[route], ns);
}

void tided_reqstats_raw(tided_loop *l, const char *head, size_t len, int status, uint64_t body_out)
{
    const char *sp = head ? memchr(head, ' ', len) : NULL;

    if (l->stats == NULL) return;
    /* A head whose method is not complete yet counts as "other". */
    count(l->stats, sp ? tided_reqstats_method(head, (size_t)(sp - head)) : TIDED_METHODS - 1, status, 0, body_out);
}

/* ---- h2o's own answers ----------------------------------------------------- */

static void on_fallback_done(h2o_logger_t *self, h2o_req_t *req)
{
    (void)self;
    tided_reqstats_done(H2O_STRUCT_FROM_MEMBER(tided_loop, ctx, req->conn->ctx), req, 0);
}

void tided_reqstats_register(h2o_hostconf_t *hostconf)
{
    h2o_logger_t *lg = h2o_create_logger(&hostconf->fallback_path, sizeof *lg);
    lg->log_access = on_fallback_done;
}

int tided_reqstats_alloc(tided_loop *l)
{
    size_t size = (sizeof(tided_reqstats) + 63) / 64 * 64;

    l->stats = aligned_alloc(64, size);
    if (l->stats == NULL) return -1;
    memset(l->stats, 0, size);
    return 0;
}

/* ---- the scrape ------------------------------------------------------------ */

/* Every loop's figures summed (relaxed loads: each may be a request behind).
 * The buckets come back cumulative with count = +Inf (invariant 3). */
static void sum_loops(tided_server *srv, tided_reqstats *t)
{
    memset(t, 0, sizeof *t);
    for (unsigned i = 0; srv->loops && i < srv->nloops; i++) {
        const tided_reqstats *s = srv->loops[i].stats;
        if (s == NULL) continue;
        for (int m = 0; m < TIDED_METHODS; m++)
            for (int c = 0; c < TIDED_CODES; c++) t->requests[m][c] += __atomic_load_n(&s->requests[m][c], __ATOMIC_RELAXED);
        for (int r = 0; r < TIDED_ROUTES; r++) {
            for (int b = 0; b <= TIDED_LAT_BUCKETS; b++)
                t->bucket[r][b] += __atomic_load_n(&s->bucket[r][b], __ATOMIC_RELAXED);
            t->sum_ns[r] += __atomic_load_n(&s->sum_ns[r], __ATOMIC_RELAXED);
        }
        t->bytes_in += __atomic_load_n(&s->bytes_in, __ATOMIC_RELAXED);
        t->bytes_out += __atomic_load_n(&s->bytes_out, __ATOMIC_RELAXED);
    }
    for (int r = 0; r < TIDED_ROUTES; r++)
        for (int b = 1; b <= TIDED_LAT_BUCKETS; b++) t->bucket[r][b] += t->bucket[r][b - 1];
}

static void write_requests(tide_metrics_writer *w, const tided_reqstats *t)
{
    char code[16];
    const char *lab[4] = { "method", NULL, "code", code };

    tide_metrics_family(w, "tide_http_requests_total", "counter",
                        "HTTP requests answered, by method (GET, HEAD, PUT, POST, DELETE, OPTIONS, PATCH, CONNECT, "
                        "TRACE, else other) and status code, errors included (4xx, 5xx, 503 overloaded, refusals "
                        "before the body was read); counted once the response was sent. code=\"none\": the "
                        "client went away before any response.");
    for (int m = 0; m < TIDED_METHODS; m++)
        for (int c = 0; c < TIDED_CODES; c++) {
            if (t->requests[m][c] == 0) continue;
            lab[1] = method_names[m];
            if (c == 0) snprintf(code, sizeof code, "none");
            else snprintf(code, sizeof code, "%d", c);
            tide_metrics_sample(w, "tide_http_requests_total", lab, 2, (double)t->requests[m][c]);
        }
}

static void write_durations(tide_metrics_writer *w, const tided_reqstats *t)
{
    char le[32];
    const char *lab[4] = { "route", NULL, "le", le };

    tide_metrics_family(w, "tide_http_request_duration_seconds", "histogram",
                        "Time from tided's handler taking a request (head and body read) to its response's last "
                        "byte written to the socket, by route (object: /v1/objects/, healthz, metrics, status: "
                        "/v1/status, /v1/sweeps, /v1/rotations, admin: /v1/admin/, other). Requests answered "
                        "before a handler ran are in tide_http_requests_total only.");
    for (int r = 0; r < TIDED_ROUTES; r++) {
        lab[1] = route_names[r];
        for (int b = 0; b < TIDED_LAT_BUCKETS; b++) {
            snprintf(le, sizeof le, "%g", TIDED_LAT_BOUNDS_S[b]);
            tide_metrics_sample(w, "tide_http_request_duration_seconds_bucket", lab, 2, (double)t->bucket[r][b]);
        }
        snprintf(le, sizeof le, "+Inf");
        tide_metrics_sample(w, "tide_http_request_duration_seconds_bucket", lab, 2,
                            (double)t->bucket[r][TIDED_LAT_BUCKETS]);
        tide_metrics_sample(w, "tide_http_request_duration_seconds_sum", lab, 1, (double)t->sum_ns[r] / 1e9);
        tide_metrics_sample(w, "tide_http_request_duration_seconds_count", lab, 1,
                            (double)t->bucket[r][TIDED_LAT_BUCKETS]);
    }
}

int tided_reqstats_families(tided_server *srv, tide_metrics_writer *w)
{
    tided_reqstats *t = malloc(sizeof *t);

    if (t == NULL) return -1;
    sum_loops(srv, t);
    write_requests(w, t);
    write_durations(w, t);
    tide_metrics_family(w, "tide_http_request_bytes_total", "counter",
                        "Request body bytes tided's handlers received (a PUT's value, an admin request's body); "
                        "heads not included.");
    tide_metrics_sample(w, "tide_http_request_bytes_total", NULL, 0, (double)t->bytes_in);
    tide_metrics_family(w, "tide_http_response_bytes_total", "counter",
                        "Response body bytes tided sent (values, JSON, pages, error bodies); heads not included.");
    tide_metrics_sample(w, "tide_http_response_bytes_total", NULL, 0, (double)t->bytes_out);
    free(t);
    return 0;
}
