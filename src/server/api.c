/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * api.c: tided's HTTP endpoints (docs/HTTP.md is the reference): routing,
 * the request's guard, jobs coming back, h2o's own errors as JSON.
 *
 *   PUT  /v1/objects/{key}[?sync=1]   201, 409, 400, 413, 503, 507, 500
 *   GET  /v1/objects/{key}            200 with the value, 404, 400
 *   HEAD /v1/objects/{key}            as GET, without the body
 *   GET  /healthz                     200 "ok\n"
 *   GET  /v1/status                   JSON: store, caches, memory, sweeps
 *   GET  /v1/sweeps                   JSON: the last 64 sweep rounds
 *   POST /v1/admin/sweep              Bearer TIDE_ADMIN_TOKEN: sweep now
 *   POST /v1/admin/rotate             Bearer TIDE_ADMIN_TOKEN: keep-list, rotate
 *                                     (?expect=R: only while the count is R)
 *   POST /v1/admin/keep               Bearer TIDE_ADMIN_TOKEN: a keep-list piece
 *   GET|POST /v1/admin/can_delete     Bearer TIDE_ADMIN_TOKEN: advisory_delete
 *   GET  /v1/admin/heap               Bearer TIDE_ADMIN_TOKEN: the allocator's
 *                                     heap report (jemalloc prof.dump, glibc
 *                                     malloc_info XML; 409, 501 otherwise)
 *   GET  /v1/rotations                JSON: the last 32 rotation attempts
 *   GET  /metrics                     TIDE_METRICS_TOKEN (Bearer or
 *                                     X-Metrics-Token) or public: Prometheus text
 *
 * The endpoints live beside it (api_impl.h): api_objects.c, api_status.c,
 * api_admin.c, api_rotate.c, api_metrics.c; api_reply.c holds the request text and the
 * answers they all send.
 *
 * One h2o handler on "/" routes by the raw request path (h2o's normalized
 * path would turn "/v1/objects/../healthz" into another resource; a key is
 * hex and needs no decoding). In order: a head that frames its body twice
 * (conn.c's head check) is 400 bad_request and closes the connection; a
 * request target over
 * tided_max_url(key_size) bytes is 414; a method that is not an RFC 9110
 * token is 400 (h2o lets any byte above 0x20 but DEL through); a known path
 * with another method is 405 with Allow; anything else is 404. The query
 * has one parser for every endpoint (tided_parse_query: sync=0|1 on
 * objects, nothing elsewhere; unknown, repeated or malformed is 400).
 *
 * Every error body is {"error":"<code>","detail":"<sentence>"}, also
 * for the errors h2o sends by itself before a handler runs (413 for a body
 * over the limit, 400 for a broken chunked body, 404 for a request that no
 * path matches): a filter on the host's fallback path, where h2o binds
 * those, replaces h2o's plain-text body with the JSON one.
 *
 * The guard. Every request the handler takes gets a guard allocated in
 * its pool with h2o_mem_alloc_shared, whose dispose callback runs when h2o
 * disposes the request: after the response's last byte was written, or
 * when the client went away. The guard
 *   - counts the request in its loop's inflight (the drain waits for it);
 *   - holds the reference to the cached object a GET sends, so the bytes
 *     are written straight from the node cache, never copied, and stay
 *     alive until h2o is done with them;
 *   - counts the request body and the object in flight in the "http"
 *     memory account, and the body in srv->body_in_handlers (the body
 *     budget);
 *   - marks its connection busy in conn.c (tided_conn_request_begin and
 *     _end), which hands the connection's admitted bytes to the guard;
 *   - tells a job still at a worker that its request is gone (job->req =
 *     NULL), so the answer is dropped instead of written to freed memory.
 *
 * Invariants:
 *   1. Every request on_req takes is answered once: by its endpoint, or by
 *      the job's answer when it comes back; no handler writes a second
 *      response (every one goes through tided_send_body).
 *   2. A guard's loop->inflight count is taken in guard_new and given back
 *      in guard_dispose, once each.
 *   3. An error body never contains a header's value (so never a token).
 *   4. A request's bytes reach a body or a log line through tided_req_text
 *      only; every body is valid UTF-8 JSON, and a 500 means a store error
 *      or out of memory, never a request's content.
 *   5. A job whose request is gone (job->req == NULL) is freed unanswered.
 *
 * Never: call tide_node_sync or tide_node_sweep on a loop thread; echo the
 * Authorization header; compare tokens with memcmp/strcmp.
 */
#include "server/api_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem/account.h"
#include "tide/error.h"
#include "util/clock.h"
#include "util/log.h"

typedef struct api_handler {
    h2o_handler_t super;
    tided_server *srv;
} api_handler;

typedef struct error_filter {
    h2o_filter_t super;
    tided_server *srv;
} error_filter;

/* ---- the guard ------------------------------------------------------- */

static void guard_dispose(void *p)
{
    tided_guard *g = p;

    g->loop->inflight--;
    tided_reqstats_done(g->loop, g->req, g->start_ns);
    if (g->body) atomic_fetch_sub(&g->loop->srv->body_in_handlers, g->body);
    tided_conn_request_end(g->conn);
    if (g->job) {
        g->job->req = NULL;
        g->job->guard = NULL;
    }
    tide_cache_obj_release(g->obj);
    if (g->account) tide_mem_account_sub(TIDE_MEM_HTTP, g->account);
}

/* The guard of `req`, and conn.c's head check of it into *head_rc. */
static tided_guard *guard_new(h2o_req_t *req, tided_head *head, int *head_rc)
{
    tided_loop *l = H2O_STRUCT_FROM_MEMBER(tided_loop, ctx, req->conn->ctx);
    tided_guard *g = h2o_mem_alloc_shared(&req->pool, sizeof *g, guard_dispose);

    memset(g, 0, sizeof *g);
    g->loop = l;
    g->req = req;
    g->start_ns = tide_clock_mono_ns();
    l->inflight++;
    *head_rc = tided_conn_request_begin(req, &g->conn, head);
    if (req->entity.base != NULL && req->entity.len > 0) {
        g->account = (int64_t)req->entity.len;
        tide_mem_account_alloc(TIDE_MEM_HTTP, g->account);
        g->body = req->entity.len;
        atomic_fetch_add(&l->srv->body_in_handlers, g->body);
    }
    return g;
}

void tided_guard_account(tided_guard *g, size_t bytes)
{
    g->account += (int64_t)bytes;
    tide_mem_account_add(TIDE_MEM_HTTP, (int64_t)bytes);
}

/* ---- routing --------------------------------------------------------- */

/* RFC 9110's token: what a method must be. h2o's parser lets any byte but
 * a control character, a space and DEL through. */
static int is_token(const char *s, size_t n)
{
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c && strchr("!#$%&'*+-.^_`|~", c))))
            return 0;
    }
    return 1;
}

static int path_is(const char *p, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(p, lit, n) == 0;
}

/* A test hook (tests/test_http_systemd.c, the watchdog test): with
 * TIDE_TEST_STALL_MS=N set, a GET /healthz carrying the header
 * x-tide-test-stall holds its loop's thread for N ms, as a handler stuck
 * on a lock would, when it landed on a loop other than loop 0 (the one
 * that pings the watchdog); on loop 0 it answers 409 at once, so the test
 * can try another connection. Unset (every real run), it costs one
 * comparison. Returns 1 when it answered. */
static long test_stall_ms = -1;

static int test_stall(h2o_req_t *req)
{
    tided_loop *l = H2O_STRUCT_FROM_MEMBER(tided_loop, ctx, req->conn->ctx);

    if (test_stall_ms <= 0 || h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-tide-test-stall"), -1) < 0)
        return 0;
    if (l->index == 0) {
        tided_send_body(req, 409, "text/plain; charset=utf-8", "loop 0\n", 7);
        return 1;
    }
    tide_log(TIDE_LOG_WARN, "test hook: loop %u stalls for %ld ms", l->index, test_stall_ms);
    tide_clock_sleep_us((uint64_t)test_stall_ms * 1000);
    tide_log(TIDE_LOG_WARN, "test hook: loop %u resumes", l->index);
    tided_send_body(req, 200, "text/plain; charset=utf-8", "stalled\n", 8);
    return 1;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    tided_server *srv = ((api_handler *)self)->srv;
    const char *p = req->path.base;
    size_t n = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
    int get_or_head = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) || tided_is_head(req);
    static const char objects_prefix[] = TIDED_OBJECTS_PREFIX;
    size_t max_url = tided_max_url(srv->key_size);
    tided_head head;
    int head_rc;
    tided_guard *guard = guard_new(req, &head, &head_rc);

    if (head_rc == TIDED_HEAD_BAD) {
        /* Smuggling: h2o framed the body by one header; a proxy in front
         * may have framed it by the other. Nothing after it is read. */
        req->http1_is_persistent = 0;
        atomic_fetch_add(&srv->requests_refused_framing, 1);
        tided_send_error(req, 400, "bad_request", TIDED_DETAIL_FRAMING,
                   head.reason);
    } else if (req->path.len > max_url) {
        tided_send_error(req, 414, "uri_too_long", "the request target is %zu bytes; the most is %zu (for %u-byte "
                   "keys)", req->path.len, max_url, srv->key_size);
    } else if (!is_token(req->method.base, req->method.len)) {
        tided_send_error(req, 400, "bad_method", "the method '%s' is not an HTTP token (letters, digits and "
                   "!#$%%&'*+-.^_`|~)", tided_req_text(req, req->method.base, req->method.len, 32));
    } else if (n >= sizeof objects_prefix - 1 && memcmp(p, objects_prefix, sizeof objects_prefix - 1) == 0) {
        tided_api_objects(srv, req, guard, p + sizeof objects_prefix - 1, n - (sizeof objects_prefix - 1));
    } else if (path_is(p, n, "/healthz")) {
        if (test_stall(req)) {}
        else if (!get_or_head) tided_send_not_allowed(req, "GET, HEAD");
        else if (tided_parse_query(req, NULL) == 0) tided_send_body(req, 200, "text/plain; charset=utf-8", "ok\n", 3);
    } else if (path_is(p, n, "/v1/status")) {
        if (!get_or_head) tided_send_not_allowed(req, "GET, HEAD");
        else if (tided_parse_query(req, NULL) == 0) tided_send_json(req, 200, tided_status_json(srv));
    } else if (path_is(p, n, "/v1/sweeps")) {
        if (!get_or_head) tided_send_not_allowed(req, "GET, HEAD");
        else if (tided_parse_query(req, NULL) == 0) tided_send_json(req, 200, tided_sweep_list_json(srv->node));
    } else if (path_is(p, n, "/metrics")) {
        tided_api_metrics(srv, req, guard, get_or_head);
    } else if (path_is(p, n, "/v1/admin/sweep")) {
        tided_api_admin_sweep(srv, req, guard);
    } else if (path_is(p, n, "/v1/admin/rotate")) {
        tided_api_admin_rotate(srv, req, guard);
    } else if (path_is(p, n, "/v1/admin/keep")) {
        tided_api_admin_keep(srv, req, guard);
    } else if (path_is(p, n, "/v1/admin/heap")) {
        tided_api_admin_heap(srv, req, guard, get_or_head);
    } else if (path_is(p, n, "/v1/admin/can_delete")) {
        tided_api_admin_can_delete(srv, req);
    } else if (path_is(p, n, "/v1/rotations")) {
        if (!get_or_head) tided_send_not_allowed(req, "GET, HEAD");
        else if (tided_parse_query(req, NULL) == 0) tided_send_json(req, 200, tided_rotation_list_json(srv->node));
    } else {
        tided_send_error(req, 404, "not_found", "no such endpoint: %s (see docs/HTTP.md)", tided_req_text(req, p, n, 128));
    }
    return 0;
}

/* ---- jobs coming back ------------------------------------------------ */

/* The answer of a job its worker finished, by kind (each endpoint's file
 * writes its own). */
static void answer_job(tided_job *job)
{
    switch (job->kind) {
    case TIDED_JOB_METRICS: tided_answer_metrics(job); break;
    case TIDED_JOB_SWEEP:   tided_answer_sweep(job); break;
    case TIDED_JOB_ROTATE:  tided_answer_rotate(job); break;
    case TIDED_JOB_HEAP:    tided_answer_heap(job); break;
    case TIDED_JOB_GET:
    case TIDED_JOB_PUT:     tided_answer_store(job); break;
    }
}

void tided_api_on_jobs_done(h2o_multithread_receiver_t *rx, h2o_linklist_t *messages)
{
    (void)rx;
    while (!h2o_linklist_is_empty(messages)) {
        h2o_multithread_message_t *m = H2O_STRUCT_FROM_MEMBER(h2o_multithread_message_t, link, messages->next);
        tided_job *job = H2O_STRUCT_FROM_MEMBER(tided_job, msg, m);

        h2o_linklist_unlink(&m->link);
        if (job->req != NULL) {
            job->guard->job = NULL;
            answer_job(job);
        }
        tided_job_free(job);
    }
}

/* ---- h2o's own errors as JSON ---------------------------------------- */

typedef struct json_ostream {
    h2o_ostream_t super;
    h2o_iovec_t   body;
} json_ostream;

static void json_ostream_send(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs, size_t n,
                              h2o_send_state_t state)
{
    json_ostream *o = (json_ostream *)self;

    (void)bufs;
    (void)n;
    if (h2o_send_state_is_in_progress(state)) {
        h2o_ostream_send_next(self, req, NULL, 0, state);
        return;
    }
    h2o_ostream_send_next(self, req, &o->body, tided_is_head(req) ? 0 : 1, state);
}

static void on_setup_error_ostream(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    tided_server *srv = ((error_filter *)self)->srv;
    const char *code = "bad_request";
    char detail[256];
    json_ostream *o;
    json_t *j;
    char *text;

    if (req->res.status < 400) goto next;
    switch (req->res.status) {
    case 413:
        code = "too_large";
        snprintf(detail, sizeof detail, TIDED_DETAIL_TOO_LARGE,
                 srv->max_object_size);
        break;
    case 404:
        code = "not_found";
        snprintf(detail, sizeof detail, "no such endpoint (see docs/HTTP.md)");
        break;
    case 417:
        code = "expectation_failed";
        snprintf(detail, sizeof detail, "the only Expect value served is 100-continue");
        break;
    default:
        if (req->res.status >= 500) code = "internal";
        snprintf(detail, sizeof detail, "the request could not be read: %s",
                 req->res.reason ? req->res.reason : "malformed");
        break;
    }
    j = tided_error_json(code, detail);
    text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (text == NULL) goto next;
    o = (json_ostream *)h2o_add_ostream(req, sizeof *o, slot);
    o->super.do_send = json_ostream_send;
    o->body.len = strlen(text) + 1;
    o->body.base = h2o_mem_alloc_pool(&req->pool, o->body.len);
    memcpy(o->body.base, text, o->body.len - 1);
    o->body.base[o->body.len - 1] = '\n';
    free(text);
    req->res.content_length = o->body.len;
    h2o_set_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, H2O_STRLIT("application/json"), 1);
    slot = &o->super.next;
next:
    h2o_setup_next_ostream(req, slot);
}

h2o_hostconf_t *tided_api_setup(tided_server *srv)
{
    h2o_hostconf_t *host;

    h2o_config_init(&srv->globalconf);
    srv->globalconf_ready = 1;
    if (test_stall_ms < 0) {
        const char *stall = getenv("TIDE_TEST_STALL_MS");
        long ms = stall && *stall ? strtol(stall, NULL, 10) : 0;
        test_stall_ms = ms > 0 && ms <= 600000 ? ms : 0;
    }
    /* h2o refuses a body of more than this before any handler runs: one
     * byte over max_object_size, so that its chunked check (>=) and its
     * Content-Length check (>) both let exactly max_object_size through;
     * a Content-Length of exactly one byte over is refused by conn.c's
     * head check (or, for a client faster than its scan, the handler). */
    srv->globalconf.max_request_entity_size = srv->max_object_size + 1;
    srv->globalconf.http1.upgrade_to_http2 = 0;     /* HTTP/1.x only */
    srv->globalconf.http1.req_timeout = (uint64_t)srv->cfg->http_request_timeout * 1000;
    srv->globalconf.server_name = h2o_iovec_init(H2O_STRLIT("tided"));
    host = h2o_config_register_host(&srv->globalconf, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    tided_api_register(srv, host);
    return host;
}

void tided_api_register(tided_server *srv, h2o_hostconf_t *hostconf)
{
    h2o_pathconf_t *root = h2o_config_register_path(hostconf, "/", 0);
    api_handler *h = (api_handler *)h2o_create_handler(root, sizeof *h);
    error_filter *f = (error_filter *)h2o_create_filter(&hostconf->fallback_path, sizeof *f);

    h->super.on_req = on_req;
    h->srv = srv;
    f->super.on_setup_ostream = on_setup_error_ostream;
    f->srv = srv;
    tided_reqstats_register(hostconf);
}
