/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * api_reply.c: request bytes as text, and every answer tided's endpoints
 * send.
 *
 * Request text. The method, path and query are bytes, not UTF-8, and
 * jansson refuses a string that is not UTF-8 (json_pack returns NULL,
 * which would read as out of memory). So request bytes reach an error
 * body or a log line only through tided_req_text (printable ASCII as it
 * is, every other byte \xNN), and every other string that goes into JSON
 * from outside the code (a store's message, data_dir) through
 * tided_json_text.
 *
 * Every error body is {"error":"<code>","detail":"<sentence>"}
 * (tided_error_json; api.c's filter uses it for h2o's own errors too).
 * The query has one parser for every endpoint (tided_parse_query), and a
 * job for a worker one constructor (tided_queue_job).
 *
 * Invariants:
 *   1. Every response goes through tided_send_body, which logs the access
 *      line at debug level.
 *   2. An error body never contains a header's value (so never a token).
 *   3. Every body is valid UTF-8 JSON (or the value, or the metrics text).
 *
 * Never: compare tokens with memcmp/strcmp (tided_token_equal); size a
 * detail by a constant (a key may be 131070 hex digits).
 */
#include "server/api_impl.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tide/error.h"
#include "util/hex.h"
#include "util/log.h"
#include "util/utf8.h"

static h2o_generator_t no_generator = { NULL, NULL };

/* Request bytes (its method, path or query) as they appear in an error
 * body or a log line: printable ASCII stays as it is; every other byte,
 * and the backslash itself, is written \xNN (two lower-case hex digits).
 * The result is ASCII, so always a valid JSON string, one line in the log,
 * and it says exactly which bytes were sent. At most `max` bytes of the
 * input are shown, then "...". Allocated in the request's pool. */
const char *tided_req_text(h2o_req_t *req, const void *bytes, size_t n, size_t max)
{
    const unsigned char *s = bytes;
    size_t show = n > max ? max : n, o = 0;
    char *out = h2o_mem_alloc_pool(&req->pool, 4 * show + 4);

    for (size_t i = 0; i < show; i++) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out[o++] = (char)c;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            tide_hex_encode(&c, 1, out + o);     /* its NUL is overwritten next */
            o += 2;
        }
    }
    if (show < n) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
    return out;
}

/* `s` as a JSON string: as it is when it is UTF-8, else with each byte
 * that is not part of a well-formed sequence written \xNN. jansson
 * refuses a string that is not UTF-8, and the text here may come from
 * outside: a store message naming a file, the data directory. NULL only
 * when out of memory. */
json_t *tided_json_text(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t len = strlen(s), i = 0, o = 0, k;
    char *clean;
    json_t *j;

    while (i < len && (k = tide_utf8_seq(u + i, len - i)) != 0) i += k;
    if (i == len) return json_string_nocheck(s);     /* just checked */
    clean = malloc(4 * len + 1);
    if (clean == NULL) return NULL;
    for (i = 0; i < len; i += k) {
        k = tide_utf8_seq(u + i, len - i);
        if (k != 0) {
            memcpy(clean + o, s + i, k);
            o += k;
        } else {
            k = 1;
            clean[o++] = '\\';
            clean[o++] = 'x';
            tide_hex_encode(u + i, 1, clean + o);
            o += 2;
        }
    }
    clean[o] = '\0';
    j = json_string_nocheck(clean);                   /* UTF-8 by construction */
    free(clean);
    return j;
}

int tided_is_head(const h2o_req_t *req)
{
    return h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
}

static const char *reason_of(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 417: return "Expectation Failed";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 507: return "Insufficient Storage";
    default:  return status < 400 ? "OK" : "Error";
    }
}

/* Send `len` bytes at `body` (which must live until the request is
 * disposed) with `status`. HEAD gets the headers and Content-Length only. */
void tided_send_body(h2o_req_t *req, int status, const char *type, const void *body, size_t len)
{
    h2o_iovec_t buf = h2o_iovec_init(body, len);

    req->res.status = status;
    req->res.reason = reason_of(status);
    req->res.content_length = len;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, type, strlen(type));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL, H2O_STRLIT("no-store"));
    if (tide_log_get_level() <= TIDE_LOG_DEBUG)
        tide_log(TIDE_LOG_DEBUG, "access: %s %s -> %d, %zu bytes",
                 tided_req_text(req, req->method.base, req->method.len, 32),
                 tided_req_text(req, req->path.base, req->path.len, 200), status, len);
    h2o_start_response(req, &no_generator);
    h2o_send(req, &buf, tided_is_head(req) || len == 0 ? 0 : 1, H2O_SEND_STATE_FINAL);
}

static void free_held_text(void *slot)
{
    free(*(char **)slot);
}

void tided_send_malloced(h2o_req_t *req, int status, const char *type, char **text, size_t len)
{
    /* The pool frees the text when the request is done with it: h2o
     * writes the body from it, no copy into the pool. */
    char **slot = h2o_mem_alloc_shared(&req->pool, sizeof *slot, free_held_text);

    *slot = *text;
    *text = NULL;
    tided_send_body(req, status, type, *slot, len);
}

/* Dump `j` (a reference the call takes) into the request's pool and send it. */
void tided_send_json(h2o_req_t *req, int status, json_t *j)
{
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    h2o_iovec_t body;

    json_decref(j);
    if (text == NULL) {
        static const char oom[] = "{\"error\":\"internal\",\"detail\":\"out of memory\"}\n";
        tided_send_body(req, 500, "application/json", oom, sizeof oom - 1);
        return;
    }
    body.len = strlen(text) + 1;
    body.base = h2o_mem_alloc_pool(&req->pool, body.len);
    memcpy(body.base, text, body.len - 1);
    body.base[body.len - 1] = '\n';
    free(text);
    tided_send_body(req, status, "application/json", body.base, body.len);
}

json_t *tided_error_json(const char *code, const char *detail)
{
    return json_pack("{s:s,s:o}", "error", code, "detail", tided_json_text(detail));
}

/* The detail is formatted into the request's pool at its full length: it
 * may name a key of up to 65535 bytes (131070 hex digits). */
void tided_send_error(h2o_req_t *req, int status, const char *code, const char *fmt, ...)
{
    char small[256], *detail = small;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof small) {
        detail = h2o_mem_alloc_pool(&req->pool, (size_t)n + 1);
        va_start(ap, fmt);
        vsnprintf(detail, (size_t)n + 1, fmt, ap);
        va_end(ap);
    } else if (n < 0) {
        snprintf(small, sizeof small, "(the detail could not be formatted)");
    }
    tided_send_json(req, status, tided_error_json(code, detail));
}

void tided_send_not_allowed(h2o_req_t *req, const char *allow)
{
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, allow, strlen(allow));
    tided_send_error(req, 405, "method_not_allowed", "%s is not allowed here; allowed: %s",
               tided_req_text(req, req->method.base, req->method.len, 32), allow);
}

/* The answer to a failed put or sync, by code. */
void tided_send_store_error(h2o_req_t *req, int rc, const char *detail, const char *what)
{
    switch (rc) {
    case TIDE_ENOSPC:
        tided_send_error(req, 507, "no_space", "%s: the disk is full: %s", what, detail);
        break;
    case TIDE_ECLOSED:
        tided_send_error(req, 503, "unavailable", "%s: the store is closing or has failed: %s", what, detail);
        break;
    case TIDE_ETOOBIG:
        tided_send_error(req, 413, "too_large", "%s: %s: %s", what, tide_strerror(rc), detail);
        break;
    case TIDE_EUNAVAIL:     /* the archive's cluster: the client retries */
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("5"));
        tided_send_error(req, 503, "archive_unavailable", "%s: the archive does not answer: %s", what, detail);
        break;
    case TIDE_EROFS:        /* an archive replica */
        tided_send_error(req, 403, "read_only_replica", "%s: %s", what, detail);
        break;
    case TIDE_EOVERLOAD:    /* the memory level: the client retries */
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("1"));
        tided_send_error(req, 503, "overloaded", "%s: %s", what, detail);
        break;
    default:
        tided_send_error(req, 500, "internal", "%s: %s: %s", what, tide_strerror(rc), detail);
        break;
    }
}

/* ---- the query, jobs, tokens ---------------------------------------- */

/*
 * The query, by one rule on every endpoint (docs/HTTP.md, "Query
 * parameters"): the pieces between '&' are name=value, matched byte for
 * byte (no percent-decoding, no '+' for a space); empty pieces ('?' alone,
 * "&&", a trailing '&') are skipped. The one parameter is sync, 0 or 1, on
 * /v1/objects/{key} (the callers that pass `sync`); the other endpoints
 * take none. Anything else, a parameter given twice, or another value is
 * 400 bad_query naming it, so a misspelt or contradictory ?sync=1 never
 * gives a write that is not durable. Returns 0, or -1 after sending it.
 */
int tided_query_next(const h2o_req_t *req, const char **at, const char **piece, size_t *n)
{
    const char *end = req->path.base + req->path.len, *q;

    if (req->query_at == SIZE_MAX) return 0;
    q = *at ? *at : req->path.base + req->query_at + 1;
    while (q < end) {
        const char *amp = memchr(q, '&', (size_t)(end - q));
        size_t len = (size_t)((amp ? amp : end) - q);

        *at = amp ? amp + 1 : end;
        if (len > 0) {
            *piece = q;
            *n = len;
            return 1;
        }
        q = *at;          /* an empty piece */
    }
    *at = end;
    return 0;
}

int tided_parse_query(h2o_req_t *req, int *sync)
{
    const char *at = NULL, *q, *first = NULL;
    size_t n, first_len = 0;

    if (sync) *sync = 0;
    while (tided_query_next(req, &at, &q, &n)) {
        const char *eq = memchr(q, '=', n);
        size_t name_len = eq ? (size_t)(eq - q) : n;

        if (sync == NULL || name_len != 4 || memcmp(q, "sync", 4) != 0) {
            tided_send_error(req, 400, "bad_query", "unknown query parameter '%s' (%s)", tided_req_text(req, q, name_len, 64),
                       sync ? "the only one is sync=0 or sync=1" : "this endpoint takes none");
            return -1;
        } else if (first != NULL) {
            tided_send_error(req, 400, "bad_query", "the query parameter 'sync' is given twice ('%s' and '%s'); "
                       "give it once", tided_req_text(req, first, first_len, 64), tided_req_text(req, q, n, 64));
            return -1;
        } else if (n != 6 || eq != q + 4 || (q[5] != '0' && q[5] != '1')) {
            tided_send_error(req, 400, "bad_query", "sync must be written sync=0 or sync=1, not '%s'",
                       tided_req_text(req, q, n, 64));
            return -1;
        }
        *sync = q[5] == '1';
        first = q;
        first_len = n;
    }
    return 0;
}

/* Make a job of `kind` for `req`, with `key_hex_bytes` of room for its
 * key_hex (0 but for a sync), let `prepare` (may be NULL) fill its
 * fields, and queue it on `w`. NULL, after answering 500 naming `what`,
 * when it cannot be allocated, or 503 unavailable when `w` never started
 * (a queued job would never be answered: fuzz_http starts only some
 * workers). The job must be complete before it is queued: from then on it
 * belongs to the worker. */
tided_job *tided_queue_job(tided_worker *w, h2o_req_t *req, tided_guard *guard, enum tided_job_kind kind,
                           const char *what,
                            size_t key_hex_bytes, void (*prepare)(tided_job *, void *), void *arg)
{
    tided_job *job;

    if (!w->started) {
        tided_send_error(req, 503, "unavailable", "no worker thread runs %s here", what);
        return NULL;
    }
    job = calloc(1, sizeof *job + key_hex_bytes);
    if (job == NULL) {
        tided_send_error(req, 500, "internal", "out of memory queueing %s", what);
        return NULL;
    }
    job->loop = guard->loop;
    job->req = req;
    job->guard = guard;
    job->kind = kind;
    if (prepare) prepare(job, arg);
    guard->job = job;
    tided_worker_push(w, job);
    return job;
}

/* 1 when the `len` bytes at `given` equal the `n` bytes of `want`. The
 * time taken depends on the token's length only, not on where they differ. */
int tided_token_equal(const char *want, size_t n, const char *given, size_t len)
{
    unsigned char diff = (unsigned char)(len != n);

    for (size_t i = 0; i < n; i++) diff |= (unsigned char)(want[i] ^ (i < len ? given[i] : 0));
    return diff == 0;
}
