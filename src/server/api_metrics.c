/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * api_metrics.c: GET /metrics, the Prometheus page, for a request carrying
 * TIDE_METRICS_TOKEN ("Authorization: Bearer" or "X-Metrics-Token"), or any
 * request when TIDE_METRICS_PUBLIC=1.
 *
 * The page is rendered on the metrics worker (work.c): /proc reads and the
 * allocator's statistics may take milliseconds, which a loop thread must
 * not spend. node/metrics.c writes the node's families; http_families adds
 * the server's.
 *
 * Invariants:
 *   1. No page is sent to a request without the token unless public.
 *   2. The token is compared in constant time (tided_token_equal).
 *
 * Never: render on a loop thread; echo the token.
 */
#include "server/api_impl.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "node/metrics.h"
#include "tide/error.h"
#include "tide/version.h"

static void http_families(void *arg, struct tide_metrics_writer *w)
{
    tided_server *srv = arg;
    uint64_t b, j;

    tide_metrics_family(w, "tide_http_connections", "gauge", "HTTP connections open now.");
    tide_metrics_sample(w, "tide_http_connections", NULL, 0, (double)atomic_load(&srv->connections));
    tide_metrics_family(w, "tide_http_connections_accepted_total", "counter", "HTTP connections accepted.");
    tide_metrics_sample(w, "tide_http_connections_accepted_total", NULL, 0,
                        (double)atomic_load(&srv->connections_total));
    tide_metrics_family(w, "tide_http_connections_refused_total", "counter",
                        "HTTP connections closed at once because the connection limit was reached.");
    tide_metrics_sample(w, "tide_http_connections_refused_total", NULL, 0,
                        (double)atomic_load(&srv->connections_refused));
    tided_worker_counts(&srv->sync_worker, &b, &j);
    tide_metrics_family(w, "tide_http_sync_requests_total", "counter", "PUT ?sync=1 requests that waited for a commit.");
    tide_metrics_sample(w, "tide_http_sync_requests_total", NULL, 0, (double)j);
    tide_metrics_family(w, "tide_http_syncs_total", "counter",
                        "Commits waited for on behalf of ?sync=1 requests (one serves every request queued before it).");
    tide_metrics_sample(w, "tide_http_syncs_total", NULL, 0, (double)b);
    tided_worker_counts(&srv->metrics_worker, &b, &j);
    tide_metrics_family(w, "tide_http_scrapes_total", "counter", "GET /metrics requests answered with a page.");
    tide_metrics_sample(w, "tide_http_scrapes_total", NULL, 0, (double)j);
    tided_pool_families(&srv->store_pool, w);
    tided_conn_families(srv, w);
    tided_reqstats_families(srv, w);   /* out of memory: the families are left out */
}

int tided_metrics_render(tided_server *srv, char **out, size_t *len)
{
    tide_metrics_opts o;

    tide_metrics_opts_init(&o);
    o.version = TIDE_VERSION;
    o.config = srv->cfg;
    o.smaps = srv->cfg->metrics_smaps;
    o.extra = http_families;
    o.extra_arg = srv;
    return tide_metrics_render(srv->node, &o, out, len);
}

/* The token a scrape carries: "Authorization: Bearer <t>" or
 * "X-Metrics-Token: <t>". NULL when it carries neither. */
static const char *scrape_token(h2o_req_t *req, size_t *len)
{
    ssize_t at = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);

    if (at != -1) {
        h2o_iovec_t v = req->headers.entries[at].value;
        if (v.len >= 7 && strncasecmp(v.base, "Bearer ", 7) == 0) {
            *len = v.len - 7;
            return v.base + 7;
        }
    }
    at = h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-metrics-token"), -1);
    if (at != -1) {
        *len = req->headers.entries[at].value.len;
        return req->headers.entries[at].value.base;
    }
    return NULL;
}

void tided_api_metrics(tided_server *srv, h2o_req_t *req, tided_guard *guard, int get_or_head)
{
    const char *given;
    size_t len = 0;

    if (!get_or_head) {
        tided_send_not_allowed(req, "GET, HEAD");
        return;
    }
    if (tided_parse_query(req, NULL)) return;
    if (!srv->metrics_public) {
        given = scrape_token(req, &len);
        if (srv->metrics_token_len == 0 || given == NULL
            || !tided_token_equal(srv->metrics_token, srv->metrics_token_len, given, len)) {
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_WWW_AUTHENTICATE, NULL,
                           H2O_STRLIT("Bearer realm=\"tide-metrics\""));
            tided_send_error(req, 401, "unauthorized", srv->metrics_token_len == 0
                       ? "scraping is off: start tided with TIDE_METRICS_TOKEN set (then send 'Authorization: "
                         "Bearer <token>' or 'X-Metrics-Token: <token>'), or with TIDE_METRICS_PUBLIC=1"
                       : given == NULL
                       ? "this endpoint needs 'Authorization: Bearer <TIDE_METRICS_TOKEN>' or "
                         "'X-Metrics-Token: <TIDE_METRICS_TOKEN>'"
                       : "the token sent is not TIDE_METRICS_TOKEN");
            return;
        }
    }
    tided_queue_job(&srv->metrics_worker, req, guard, TIDED_JOB_METRICS, "the scrape", 0, NULL, NULL);
}

/* A scrape's page, rendered by the metrics worker, or its failure. */
void tided_answer_metrics(tided_job *job)
{
    h2o_req_t *req = job->req;

    if (job->u.page.text == NULL) {
        tided_send_error(req, 500, "internal", "the metrics page could not be rendered: %s",
                         job->detail[0] ? job->detail : "out of memory");
        return;
    }
    tided_send_malloced(req, 200, TIDE_METRICS_CONTENT_TYPE, &job->u.page.text, job->u.page.text_len);
}
