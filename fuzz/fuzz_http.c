/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_http.c: tided's request handling (src/server/api.c: routing, key and
 * query parsing, the error JSON) behind a real h2o HTTP/1 connection.
 *
 * What it feeds. The input is
 *
 *     u8   server      (mod 3) which of the three servers below answers
 *     ...  the bytes a client sends on one connection
 *
 * The bytes go into one end of a socketpair; the other end is an h2o socket
 * on the server's own event loop, handed to h2o_accept with an accept
 * context whose host has tided_api_register's handler on "/" and its error
 * filter on the fallback path: what tided's loop.c does with an accepted
 * TCP connection. So a request reaches the handler exactly as h2o parses it
 * (pipelined requests, bodies by Content-Length or chunks, h2o's own 400,
 * 413 and 417 included). The client's end is shut for writing after the
 * last byte, so h2o sees the end of the stream once it has answered what it
 * could parse, and closes; the loop runs until it has. Every PUT and GET
 * miss (the store pool: two threads, 64 queued), ?sync=1, the admin sweep
 * and /metrics go to tided's real worker threads (work.c) and come back
 * through the loop's queue, as in tided.
 *
 * The servers are made once per process, each with its own node, event
 * loop and workers, over a store in a tide_io_sim (nothing touches the
 * disk). max_object_size is 2048 bytes for all; the store keeps what
 * earlier inputs stored, so a PUT may be a 201 or a 409, until its files
 * pass 4 MiB, when it starts over empty:
 *
 *     0  32-byte keys; TIDE_ADMIN_TOKEN "fuzz-admin-token", TIDE_METRICS_TOKEN
 *        "fuzz-metrics-token"
 *     1  1-byte keys; no admin token (403), /metrics public
 *     2  300-byte keys (600 hex digits: the request target limit is 1468,
 *        above the 1024 floor); admin token, no metrics token (401)
 *
 * What it asserts on the bytes that come back:
 *   1. They are a sequence of responses and nothing else: each a status line
 *      "HTTP/1.1 NNN reason", header lines "name: value", a blank line, and
 *      a body of exactly its Content-Length bytes (none for HEAD and 1xx).
 *      A final response without Content-Length must close the connection
 *      and be the last (h2o's fixed answer to an oversized request head).
 *   2. Each final response is, in order, one that tided or h2o set up (a
 *      filter on both paths records the method and status of each), with
 *      that status; every one set up was written.
 *   3. Every error (status >= 400) with a JSON Content-Type has a body that
 *      is a JSON object, so valid UTF-8, with string "error" and "detail",
 *      and the code is one docs/HTTP.md lists for that status.
 *   4. No 500, 503 or 507: the store lives in memory and never fails, so
 *      any of those is tided's bug (out of memory aside).
 *   5. A 405 carries Allow, a 401 WWW-Authenticate.
 *   6. The connection is answered and closed within 10 s, and no request
 *      is left in flight once it closed.
 * And no crash, no sanitizer report, no leak.
 *
 * The globalconf and host are tided's own (tided_api_setup), the loop is
 * loop.c's (tided_loop_context_init), and connections are handed to h2o
 * directly (conn.c's admission and scan answer outside h2o, which the
 * recording filters cannot see: its head check is run on every input
 * instead).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "fuzz.h"
#include "io/io_sim.h"
#include "node/config.h"
#include "server/server.h"
#include "tide/error.h"
#include "util/clock.h"

#define FUZZ_HTTP_SERVERS 3
#define FUZZ_HTTP_MAX_OBJECT 2048
#define FUZZ_HTTP_RECORDS 512
#define FUZZ_HTTP_OUT_MAX (8u << 20)
#define FUZZ_HTTP_WAIT_US (10u * 1000 * 1000)
#ifndef FUZZ_HTTP_STORE_MAX
#define FUZZ_HTTP_STORE_MAX (4u << 20)
#endif

typedef struct fuzz_record {
    int head;                 /* the request was HEAD */
    int status;
} fuzz_record;

typedef struct fuzz_server {
    tided_server srv;
    tided_loop   loop;
    tide_config  cfg;
    tide_io_sim *sim;
    int          ready;       /* 1 set up, -1 setup failed */
} fuzz_server;

static fuzz_server servers[FUZZ_HTTP_SERVERS];

/* What the recording filters saw on the connection being run. */
static fuzz_record records[FUZZ_HTTP_RECORDS];
static size_t nrecords;

static void on_setup_record(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    (void)self;
    if (nrecords < FUZZ_HTTP_RECORDS) {
        records[nrecords].head = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
        records[nrecords].status = req->res.status;
    }
    nrecords++;
    h2o_setup_next_ostream(req, slot);
}

/* The store of `fs` and the workers that use it: a fresh sim, an empty
 * store of `key_size`-byte keys, the workers and the store pool. 0 or -1. */
static int store_open(fuzz_server *fs, unsigned key_size)
{
    tided_server *srv = &fs->srv;
    tide_node_opts o;

    if (tide_io_sim_create(&fs->sim) != 0 || tide_io_sim_mkdir(fs->sim, fs->cfg.data_dir) != 0) return -1;
    tide_node_opts_init(&o);
    o.dir = fs->cfg.data_dir;
    o.create_if_missing = 1;
    o.key_size = key_size;
    o.hooks.io = tide_io_sim_io(fs->sim);
    o.sweep_interval_ms = 0;          /* sweeps only when asked (POST /v1/admin/sweep) */
    o.cache_budget = 1u << 20;
    if (tide_node_open(&srv->node, &o) != 0) return -1;
    if (tided_worker_start(&srv->sync_worker, srv, "sync", TIDED_WORKER_SYNC) != 0
        || tided_worker_start(&srv->sweep_worker, srv, "sweep", TIDED_WORKER_SWEEP) != 0
        || tided_worker_start(&srv->metrics_worker, srv, "metrics", TIDED_WORKER_METRICS) != 0
        || tided_worker_start(&srv->rotate_worker, srv, "rotate", TIDED_WORKER_ROTATE) != 0
        || tided_worker_start(&srv->heap_worker, srv, "heap", TIDED_WORKER_HEAP) != 0
        || tided_pool_start(&srv->store_pool, srv, 2, 64) != 0)
        return -1;
    return 0;
}

/* Stop the workers (each finishes its queue first, so no job is left
 * holding the node), close the node and drop the sim. */
static void store_close(fuzz_server *fs)
{
    tided_worker_stop(&fs->srv.store_pool);
    tided_worker_stop(&fs->srv.sync_worker);
    tided_worker_stop(&fs->srv.sweep_worker);
    tided_worker_stop(&fs->srv.metrics_worker);
    tided_worker_stop(&fs->srv.rotate_worker);
    tided_worker_stop(&fs->srv.heap_worker);
    if (fs->srv.node) tide_node_close(fs->srv.node);
    fs->srv.node = NULL;
    if (fs->sim) tide_io_sim_destroy(fs->sim);
    fs->sim = NULL;
}

static void fuzz_http_atexit(void)
{
    for (int i = 0; i < FUZZ_HTTP_SERVERS; i++)
        if (servers[i].ready == 1) {
            store_close(&servers[i]);
            servers[i].ready = 0;
        }
}

static int server_setup(fuzz_server *fs, unsigned key_size, const char *admin, const char *metrics,
                        int metrics_public)
{
    tided_server *srv = &fs->srv;
    tided_loop *l = &fs->loop;
    h2o_hostconf_t *host;
    h2o_filter_t *f;

    fs->ready = -1;
    tide_config_defaults(&fs->cfg);
    snprintf(fs->cfg.data_dir, sizeof fs->cfg.data_dir, "fuzz/k%u", key_size);
    fs->cfg.max_object_size = FUZZ_HTTP_MAX_OBJECT;
    if (store_open(fs, key_size) != 0) return -1;

    /* As tided.c's main; the globalconf is tided's own. */
    srv->cfg = &fs->cfg;
    srv->key_size = tide_node_key_size(srv->node);
    srv->max_object_size = FUZZ_HTTP_MAX_OBJECT;
    srv->admin_token = admin;
    srv->admin_token_len = strlen(admin);
    srv->metrics_token = metrics;
    srv->metrics_token_len = strlen(metrics);
    srv->metrics_public = metrics_public;
    srv->nloops = 1;
    srv->loops = l;
    srv->signal_fd = srv->listen_fd = -1;
    srv->max_connections = 4096;
    tided_clients_init(srv);
    pthread_mutex_init(&srv->memory_mu, NULL);
    srv->started_mono_us = tide_clock_mono_us();
    snprintf(srv->listen_text, sizeof srv->listen_text, "socketpair");
    host = tided_api_setup(srv);
    /* The recorders: the handler's responses go through the filters of
     * "/", h2o's own errors through those of the fallback path. */
    if (host->paths.size != 1) return -1;
    f = h2o_create_filter(&host->paths.entries[0], sizeof *f);
    f->on_setup_ostream = on_setup_record;
    f = h2o_create_filter(&host->fallback_path, sizeof *f);
    f->on_setup_ostream = on_setup_record;

    /* A loop as loop.c makes one, on this thread, without a listener. */
    l->srv = srv;
    tided_loop_context_init(l);
    atomic_store(&l->ready, 1);
    fs->ready = 1;
    return 0;
}

static int servers_setup(void)
{
    static int done = 0, rc = 0;

    if (done) return rc;
    done = 1;
    signal(SIGPIPE, SIG_IGN);
    if (server_setup(&servers[0], 32, "fuzz-admin-token", "fuzz-metrics-token", 0) != 0
        || server_setup(&servers[1], 1, "", "", 1) != 0
        || server_setup(&servers[2], 300, "fuzz-admin-token", "", 0) != 0)
        rc = -1;
    atexit(fuzz_http_atexit);
    return rc;
}

/* ---- the response checker ----------------------------------------------- */

/* The error codes of docs/HTTP.md and the status each goes with. */
static int code_fits(const char *code, int status)
{
    static const struct { const char *code; int status; } codes[] = {
        { "bad_key", 400 }, { "empty_value", 400 }, { "bad_query", 400 }, { "bad_method", 400 },
        { "bad_request", 400 }, { "unauthorized", 401 }, { "forbidden", 403 }, { "not_found", 404 },
        { "method_not_allowed", 405 }, { "exists", 409 }, { "too_large", 413 }, { "uri_too_long", 414 },
        { "expectation_failed", 417 }, { "internal", 500 }, { "unavailable", 503 }, { "no_space", 507 },
        { "not_supported", 501 }, { "profiling_off", 409 }, { "overloaded", 503 }, { "bad_body", 400 },
        { "bad_value", 400 }, { "online_delete_off", 409 }, { "rotated_meanwhile", 409 },
    };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (strcmp(code, codes[i].code) == 0) return codes[i].status == status;
    /* h2o's own errors of other statuses get the filter's generic codes */
    if (strcmp(code, "bad_request") == 0) return status >= 400 && status < 500;
    if (strcmp(code, "internal") == 0) return status >= 500;
    return 0;
}

static const char *find_crlf(const char *p, const char *end)
{
    for (; p + 1 < end; p++)
        if (p[0] == '\r' && p[1] == '\n') return p;
    return NULL;
}

static int header_is(const char *line, size_t name_len, const char *name)
{
    return name_len == strlen(name) && strncasecmp(line, name, name_len) == 0;
}

static int check_responses(const char *out, size_t len, fuzz_result *res)
{
    const char *p = out, *end = out + len;
    size_t used = 0, n = 0;

    while (p < end) {
        const char *eol = find_crlf(p, end), *h, *body;
        long long content_length = -1;
        int status, head = 0, has_allow = 0, has_auth = 0, closes = 0, json = 0;
        size_t body_len;

        n++;
        FUZZ_CHECK(eol != NULL, "response %zu: no CRLF after the status line: '%.60s'", n, p);
        FUZZ_CHECK(eol - p >= 13 && memcmp(p, "HTTP/1.1 ", 9) == 0 && p[9] >= '1' && p[9] <= '5'
                   && p[10] >= '0' && p[10] <= '9' && p[11] >= '0' && p[11] <= '9' && p[12] == ' ',
                   "response %zu: not an HTTP/1.1 status line: '%.*s'", n, (int)(eol - p > 80 ? 80 : eol - p), p);
        status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
        for (const char *c = p + 13; c < eol; c++)
            FUZZ_CHECK(*c >= 0x20 && *c < 0x7f, "response %zu: a reason phrase byte 0x%02x", n,
                       (unsigned char)*c);
        /* headers */
        for (h = eol + 2;;) {
            const char *hl = find_crlf(h, end), *colon;
            FUZZ_CHECK(hl != NULL, "response %zu (%d): the headers do not end", n, status);
            if (hl == h) {
                body = hl + 2;
                break;
            }
            colon = memchr(h, ':', (size_t)(hl - h));
            FUZZ_CHECK(colon != NULL && colon > h, "response %zu (%d): a header line without a name: '%.*s'",
                       n, status, (int)(hl - h > 80 ? 80 : hl - h), h);
            size_t nl = (size_t)(colon - h);
            const char *v = colon + 1;
            while (v < hl && *v == ' ') v++;
            if (header_is(h, nl, "content-length")) {
                char num[24];
                size_t vl = (size_t)(hl - v);
                FUZZ_CHECK(content_length == -1, "response %zu (%d): two Content-Length headers", n, status);
                FUZZ_CHECK(vl > 0 && vl < sizeof num, "response %zu (%d): Content-Length '%.*s'", n, status,
                           (int)vl, v);
                memcpy(num, v, vl);
                num[vl] = '\0';
                content_length = 0;
                for (size_t i = 0; i < vl; i++) {
                    FUZZ_CHECK(num[i] >= '0' && num[i] <= '9', "response %zu (%d): Content-Length '%s'", n,
                               status, num);
                    content_length = content_length * 10 + (num[i] - '0');
                }
            } else if (header_is(h, nl, "allow")) {
                has_allow = 1;
            } else if (header_is(h, nl, "www-authenticate")) {
                has_auth = 1;
            } else if (header_is(h, nl, "connection")) {
                closes = (size_t)(hl - v) >= 5 && strncasecmp(v, "close", 5) == 0;
            } else if (header_is(h, nl, "content-type")) {
                json = (size_t)(hl - v) >= 16 && strncasecmp(v, "application/json", 16) == 0;
            } else if (header_is(h, nl, "transfer-encoding")) {
                FUZZ_CHECK(0, "response %zu (%d): Transfer-Encoding; tided always sends Content-Length", n,
                           status);
            }
            h = hl + 2;
        }
        if (status < 200) {           /* 100 Continue: no body, no record */
            p = body;
            continue;
        }
        if (used < nrecords && used < FUZZ_HTTP_RECORDS) {
            head = records[used].head;
            FUZZ_CHECK(records[used].status == status, "response %zu: HTTP %d on the wire, %d set up", n,
                       status, records[used].status);
            used++;
            FUZZ_CHECK(content_length >= 0, "response %zu (%d): no Content-Length", n, status);
            body_len = head ? 0 : (size_t)content_length;
            FUZZ_CHECK((size_t)(end - body) >= body_len, "response %zu (%d): %zu body bytes of %lld", n, status,
                       (size_t)(end - body), content_length);
        } else {
            /* Not set up through the filters: h2o's fixed answer to a head
             * over H2O_MAX_REQLEN, which closes the connection. */
            FUZZ_CHECK(closes && status == 400, "response %zu: HTTP %d that no filter saw set up", n, status);
            body_len = content_length >= 0 ? (size_t)content_length : (size_t)(end - body);
            FUZZ_CHECK((size_t)(end - body) == body_len, "response %zu: bytes after h2o's closing answer", n);
        }
        FUZZ_CHECK(status != 500 && status != 503 && status != 507, "response %zu: HTTP %d: '%.*s'", n, status,
                   (int)(end - p > 600 ? 600 : end - p), p);
        if (status == 405) FUZZ_CHECK(has_allow, "response %zu: a 405 without Allow", n);
        if (status == 401) FUZZ_CHECK(has_auth, "response %zu: a 401 without WWW-Authenticate", n);
        if (status >= 400 && json && !head) {
            json_error_t e;
            json_t *j = json_loadb(body, body_len, 0, &e);
            const char *code = json_string_value(json_object_get(j, "error"));
            int ok = j != NULL && json_is_object(j) && code != NULL && json_is_string(json_object_get(j, "detail"))
                     && code_fits(code, status);
            if (!ok) {
                fuzz_fail(res, "response %zu: HTTP %d with a body that is not {\"error\":<its code>,"
                          "\"detail\":...} in UTF-8 JSON (%s): '%.*s'", n, status, j ? "fields" : e.text,
                          (int)(body_len > 400 ? 400 : body_len), body);
                json_decref(j);
                goto out;
            }
            json_decref(j);
        }
        p = body + body_len;
    }
    FUZZ_CHECK(used == nrecords, "%zu responses set up, %zu written", nrecords, used);
    return 0;
out:
    return -1;
}

/* ---- one connection ------------------------------------------------------ */

int fuzz_http_one(const uint8_t *data, size_t size, fuzz_result *res)
{
    fuzz_in in = { data, size };
    fuzz_server *fs;
    const uint8_t *send_p;
    size_t send_len, sent = 0, got = 0, cap = 0;
    char *out = NULL;
    int fds[2] = { -1, -1 }, shut = 0, eof = 0;
    uint64_t deadline;
    h2o_socket_t *sock;

    FUZZ_CHECK(servers_setup() == 0, "the servers could not be set up: %s", tide_last_error());
    fs = &servers[fuzz_u8(&in) % FUZZ_HTTP_SERVERS];
    send_len = fuzz_take(&in, in.left, &send_p);
    /* conn.c's head check reads the same bytes before h2o does (here
     * directly: its refusals are written outside h2o, which the recording
     * filters below would not see). */
    {
        tided_head h;
        int hrc = tided_head_check((const char *)send_p, send_len, &h);
        FUZZ_CHECK(hrc == TIDED_HEAD_OK || hrc == TIDED_HEAD_INCOMPLETE || hrc == TIDED_HEAD_BAD,
                   "tided_head_check returned %d", hrc);
        FUZZ_CHECK(hrc != TIDED_HEAD_OK || (h.head_len > 0 && h.head_len <= send_len),
                   "tided_head_check: a head of %zu bytes in %zu", h.head_len, send_len);
        FUZZ_CHECK(hrc != TIDED_HEAD_BAD || h.reason != NULL, "tided_head_check: BAD without a reason");
    }
    nrecords = 0;
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0, "socketpair: %s",
               strerror(errno));
    sock = h2o_evloop_socket_create(fs->loop.evloop, fds[0], H2O_SOCKET_FLAG_IS_ACCEPTED_CONNECTION);
    fds[0] = -1;                      /* h2o's now */
    h2o_accept(&fs->loop.accept_ctx, sock);

    deadline = tide_clock_mono_us() + FUZZ_HTTP_WAIT_US;
    while (!eof) {
        while (sent < send_len) {
            ssize_t w = write(fds[1], send_p + sent, send_len - sent);
            if (w <= 0) break;        /* full (EAGAIN), or h2o closed its end */
            sent += (size_t)w;
        }
        if (!shut && sent == send_len) {
            shutdown(fds[1], SHUT_WR);
            shut = 1;
        }
        h2o_evloop_run(fs->loop.evloop, shut ? 10 : 0);
        for (;;) {
            /* Read into a fixed chunk and append to `out`, which doubles
             * from 4 KiB: a 64 KiB buffer grown by 64 KiB made every input
             * with an answer allocate 128 KiB, past the sanitizer's size
             * classes (a fresh mapping each time). */
            char chunk[16384];
            ssize_t r = read(fds[1], chunk, sizeof chunk);
            if (r > 0) {
                if (got + (size_t)r + 1 > cap) {
                    size_t ncap = cap ? cap : 4096;
                    char *grown;
                    while (ncap < got + (size_t)r + 1) ncap *= 2;
                    FUZZ_CHECK(ncap <= FUZZ_HTTP_OUT_MAX, "more than %u bytes of answers", FUZZ_HTTP_OUT_MAX);
                    grown = realloc(out, ncap);
                    FUZZ_CHECK(grown != NULL, "out of memory");
                    out = grown;
                    cap = ncap;
                }
                memcpy(out + got, chunk, (size_t)r);
                got += (size_t)r;
                continue;
            }
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) eof = 1;
            break;
        }
        FUZZ_CHECK(eof || tide_clock_mono_us() < deadline,
                   "the connection was neither answered nor closed within %u s (%zu of %zu bytes sent, %zu "
                   "answered)", FUZZ_HTTP_WAIT_US / 1000000, sent, send_len, got);
    }
    /* Let h2o finish disposing of the connection (its requests' guards). */
    for (int i = 0; i < 100 && fs->loop.inflight != 0; i++) h2o_evloop_run(fs->loop.evloop, 10);
    FUZZ_CHECK(fs->loop.inflight == 0, "%zu requests still in flight after the connection closed",
               fs->loop.inflight);
    if (out) out[got] = '\0';
    if (getenv("TIDE_FUZZ_TRACE"))
        fprintf(stderr, "fuzz_http: server %d (%u-byte keys): %zu bytes sent, %zu answered, %zu responses set "
                "up:\n%.*s\n", (int)(fs - servers), fs->srv.key_size, send_len, got, nrecords, (int)got,
                out ? out : "");
    if (check_responses(out ? out : "", got, res) != 0) goto out;
    /* A store that has grown past FUZZ_HTTP_STORE_MAX starts over empty,
     * so a long run neither slows down nor grows without bound. */
    if (tide_io_sim_usage(fs->sim) > FUZZ_HTTP_STORE_MAX) {
        store_close(fs);
        FUZZ_CHECK(store_open(fs, fs->srv.key_size) == 0, "reopening the store: %s", tide_last_error());
    }
out:
    if (fds[1] >= 0) close(fds[1]);
    free(out);
    return res->failed ? -1 : 0;
}
