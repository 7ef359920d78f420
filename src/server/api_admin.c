/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * api_admin.c: POST /v1/admin/sweep, a sweep round now, and GET
 * /v1/admin/heap, the allocator's heap report, for a request that carries
 * the admin token (TIDE_ADMIN_TOKEN) as "Authorization: Bearer"; and that
 * token check, which every /v1/admin endpoint makes
 * (tided_admin_authorized; api_rotate.c's too).
 *
 * The round runs on the sweep worker (work.c), never on a loop thread;
 * its report is the answer. The heap report runs on the heap worker
 * (mem/alloc.h's tide_mem_alloc_heap_report): under jemalloc started with
 * MALLOC_CONF=prof:true a prof.dump (application/octet-stream, for jeprof),
 * under jemalloc without it 409 profiling_off, under glibc malloc_info's
 * XML (application/xml), under any other allocator 501 not_supported
 * naming it.
 *
 * Invariants:
 *   1. Without a configured token the endpoint answers 403, whatever the
 *      request carries; with one, a request without the token gets 401.
 *   2. The token is compared in constant time (tided_token_equal).
 *
 * Never: call tide_node_sweep on a loop thread; echo the Authorization
 * header.
 */
#include "server/api_impl.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mem/alloc.h"
#include "tide/error.h"

static int token_matches(const tided_server *srv, const char *given, size_t len)
{
    return tided_token_equal(srv->admin_token, srv->admin_token_len, given, len);
}

/* The admin token check of every /v1/admin endpoint: 1 when the request
 * carries it; else 0 after answering 403 (none configured) or 401. */
int tided_admin_authorized(tided_server *srv, h2o_req_t *req)
{
    ssize_t at;

    if (srv->admin_token_len == 0) {
        tided_send_error(req, 403, "forbidden", "no admin token is configured; set TIDE_ADMIN_TOKEN in tided's "
                   "environment to enable /v1/admin endpoints");
        return 0;
    }
    at = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
    if (at == -1 || req->headers.entries[at].value.len < 7
        || strncasecmp(req->headers.entries[at].value.base, "Bearer ", 7) != 0
        || !token_matches(srv, req->headers.entries[at].value.base + 7, req->headers.entries[at].value.len - 7)) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_WWW_AUTHENTICATE, NULL,
                       H2O_STRLIT("Bearer realm=\"tide-admin\""));
        tided_send_error(req, 401, "unauthorized", at == -1
                   ? "this endpoint needs 'Authorization: Bearer <TIDE_ADMIN_TOKEN>'"
                   : "the Authorization header does not carry the admin token (Bearer TIDE_ADMIN_TOKEN)");
        return 0;
    }
    return 1;
}

/* An admin endpoint answered by a worker's job: the method (405 with
 * `allow` unless method_ok), the query (none), the token, then the job. */
static void admin_job(tided_server *srv, h2o_req_t *req, tided_guard *guard, int method_ok, const char *allow,
                      tided_worker *w, int kind, const char *what)
{
    if (!method_ok) {
        tided_send_not_allowed(req, allow);
        return;
    }
    if (tided_parse_query(req, NULL)) return;
    if (!tided_admin_authorized(srv, req)) return;
    tided_queue_job(w, req, guard, kind, what, 0, NULL, NULL);
}

void tided_api_admin_sweep(tided_server *srv, h2o_req_t *req, tided_guard *guard)
{
    admin_job(srv, req, guard, h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST")), "POST",
              &srv->sweep_worker, TIDED_JOB_SWEEP, "the sweep");
}

/* The report of the round the sweep worker ran. */
void tided_answer_sweep(tided_job *job)
{
    json_t *j = tided_sweep_report_json(&job->u.sweep.report);

    json_object_set_new(j, "requests_served", json_integer((json_int_t)job->batch_size));
    tided_send_json(job->req, 200, j);
}

void tided_api_admin_heap(tided_server *srv, h2o_req_t *req, tided_guard *guard, int get_or_head)
{
    admin_job(srv, req, guard, get_or_head && !tided_is_head(req), "GET", &srv->heap_worker, TIDED_JOB_HEAP,
              "the heap report");
}

/* The report the heap worker made, or why there is none. */
void tided_answer_heap(tided_job *job)
{
    h2o_req_t *req = job->req;
    const char *name = tide_mem_alloc_family_name(job->u.page.family);

    if (job->rc != 0) {
        tided_send_error(req, 500, "internal", "the heap report failed: %s", job->detail);
    } else if (job->u.page.heap_kind == TIDE_MEM_HEAP_PROF_OFF) {
        tided_send_error(req, 409, "profiling_off", "jemalloc serves malloc but its heap profiling is off: start "
                         "tided with MALLOC_CONF=prof:true for a prof.dump here (read it with jeprof)");
    } else if (job->u.page.heap_kind == TIDE_MEM_HEAP_NONE) {
        tided_send_error(req, 501, "not_supported", "malloc is served by %s, which has no heap report tided "
                         "can ask for (jemalloc with MALLOC_CONF=prof:true, or glibc, have one)", name);
    } else if (job->u.page.text == NULL) {
        tided_send_error(req, 500, "internal", "the heap report could not be copied: out of memory");
    } else {
        tided_send_malloced(req, 200, job->u.page.heap_kind == TIDE_MEM_HEAP_GLIBC_INFO ? "application/xml"
                            : "application/octet-stream", &job->u.page.text, job->u.page.text_len);
    }
}
