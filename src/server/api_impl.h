/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * api_impl.h: what the files of tided's HTTP endpoints share. api.c routes
 * a request and owns its guard; api_reply.c turns request bytes into text
 * and sends every answer; api_objects.c, api_status.c, api_admin.c and
 * api_metrics.c are the endpoints. server.h is the server part's contract
 * with the rest of tided; nothing outside src/server includes this.
 *
 * Each function here runs on the loop thread that owns the request, and
 * answers it at most once (api.c, invariant 1). A function that sends the
 * answer says so; after it the request must not be touched but through its
 * guard.
 */
#ifndef TIDE_SERVER_API_IMPL_H
#define TIDE_SERVER_API_IMPL_H

#include "server/server.h"

#include <jansson.h>

/* A request's guard (api.c's essay): allocated in its pool, disposed by h2o
 * after the last byte or when the client went away. */
struct tided_guard {
    tided_loop     *loop;
    tided_conn     *conn;     /* conn.c's record of its connection */
    size_t          body;     /* bytes in srv->body_in_handlers */
    tide_cache_obj *obj;      /* a GET's value, released at dispose */
    tided_job      *job;      /* a job at a worker, or NULL */
    int64_t         account;  /* bytes added to TIDE_MEM_HTTP */
    h2o_req_t      *req;      /* counted in reqstats.c at dispose */
    uint64_t        start_ns; /* tide_clock_mono_ns when the handler took it */
};
typedef struct tided_guard tided_guard;

/* Count `bytes` more in the guard's "http" account (given back at dispose). */
void tided_guard_account(tided_guard *g, size_t bytes);

/* ---- api_reply.c: text from the request, and the answers ---- */

/* Request bytes as an error body or log line shows them: printable ASCII
 * as it is, every other byte (and '\\') \xNN; at most `max` bytes, then
 * "...". In the request's pool. */
const char *tided_req_text(h2o_req_t *req, const void *bytes, size_t n, size_t max);

/* `s` as a JSON string, bytes that are not well-formed UTF-8 as \xNN.
 * NULL only when out of memory. */
json_t *tided_json_text(const char *s);

int  tided_is_head(const h2o_req_t *req);

/* Send `len` bytes at `body` (alive until the request is disposed) with
 * `status`, and log the access line at debug. HEAD gets the headers only. */
void tided_send_body(h2o_req_t *req, int status, const char *type, const void *body, size_t len);
/* Send the malloc'd `*text` (`len` bytes) as the body without copying it:
 * the request's pool takes it (frees it when the request is done) and
 * *text is set to NULL. One response per text. */
void tided_send_malloced(h2o_req_t *req, int status, const char *type, char **text, size_t len);

/* Send `j` (the call takes the reference) as the body; 500 when NULL. */
void tided_send_json(h2o_req_t *req, int status, json_t *j);

/* {"error":code,"detail":detail}; NULL when out of memory. */
json_t *tided_error_json(const char *code, const char *detail);

/* Send the error body, the detail printf-formatted at its full length. */
void tided_send_error(h2o_req_t *req, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* 405 with Allow: `allow`. */
void tided_send_not_allowed(h2o_req_t *req, const char *allow);

/* The answer to a failed put or sync, by its code (507, 503, 413, 500;
 * TIDE_EOVERLOAD: 503 overloaded with Retry-After: 1). */
void tided_send_store_error(h2o_req_t *req, int rc, const char *detail, const char *what);

/* The query's pieces between '&', one per call, empty ones skipped: 1
 * with *piece (n bytes, in the request target), 0 at the end. *at is the
 * cursor: NULL before the first call. */
int  tided_query_next(const h2o_req_t *req, const char **at, const char **piece, size_t *n);

/* The query by the one rule of every endpoint: sync=0|1 where `sync` is
 * not NULL, nothing elsewhere. 0, or -1 after sending 400 bad_query. */
int  tided_parse_query(h2o_req_t *req, int *sync);

/* Make a job of `kind` for `req` with `key_hex_bytes` of room, let
 * `prepare` (may be NULL) fill it, and queue it on `w`. NULL after
 * answering 500 naming `what` when it cannot be allocated, or 503
 * unavailable when `w` never started. */
tided_job *tided_queue_job(tided_worker *w, h2o_req_t *req, tided_guard *guard, enum tided_job_kind kind,
                           const char *what,
                           size_t key_hex_bytes, void (*prepare)(tided_job *, void *), void *arg);

/* 1 when the `len` bytes at `given` equal the `n` bytes of `want`, in a
 * time that depends on n only. */
int  tided_token_equal(const char *want, size_t n, const char *given, size_t len);

/* ---- the endpoints: each sends the answer, or queues a job ---- */

/* /v1/objects/{key}: `rest` is the URL after the prefix (api_objects.c). */
void tided_api_objects(tided_server *srv, h2o_req_t *req, tided_guard *guard, const char *rest, size_t rest_len);
void tided_answer_store(tided_job *job);

/* /v1/status and /v1/sweeps' bodies, and one round's report (api_status.c). */
json_t *tided_status_json(tided_server *srv);
/* /v1/status' "memory_limit": the governor's figures (tide_node_memory_get)
 * and the server's overload counters (api_status.c). */
json_t *tided_memory_limit_json(tided_server *srv);
json_t *tided_sweep_list_json(tide_node *node);
json_t *tided_sweep_report_json(const tide_node_sweep_report *r);

/* POST /v1/admin/sweep, and the admin token check of every /v1/admin
 * endpoint: 1 when the request carries the token, else 0 after answering
 * 403 (none configured) or 401 (api_admin.c). */
void tided_api_admin_sweep(tided_server *srv, h2o_req_t *req, tided_guard *guard);
int  tided_admin_authorized(tided_server *srv, h2o_req_t *req);

/* A release call's report as JSON ("trim" of a sweep's and a rotation's
 * report; api_status.c). */
json_t *tided_trim_json(const tide_mem_trim_report *t);

/* Online delete (api_rotate.c): POST /v1/admin/rotate (a rotate job),
 * GET|POST /v1/admin/can_delete, GET /v1/rotations, /v1/status'
 * "online_delete", one rotation report as JSON. */
void tided_api_admin_rotate(tided_server *srv, h2o_req_t *req, tided_guard *guard);
void tided_api_admin_keep(tided_server *srv, h2o_req_t *req, tided_guard *guard);
void tided_answer_rotate(tided_job *job);
void tided_api_admin_can_delete(tided_server *srv, h2o_req_t *req);
json_t *tided_rotation_list_json(tide_node *node);
json_t *tided_online_delete_json(tide_node *node);
json_t *tided_rotation_report_json(const tide_node_rotation_report *r);
void tided_answer_sweep(tided_job *job);

/* GET /v1/admin/heap: the allocator's heap report on the heap worker, and
 * its answer (api_admin.c). */
void tided_api_admin_heap(tided_server *srv, h2o_req_t *req, tided_guard *guard, int get_or_head);
void tided_answer_heap(tided_job *job);

/* GET /metrics (api_metrics.c). */
void tided_api_metrics(tided_server *srv, h2o_req_t *req, tided_guard *guard, int get_or_head);
void tided_answer_metrics(tided_job *job);

#endif
