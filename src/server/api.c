/*
 * api.c: tided's HTTP endpoints (docs/HTTP.md is the reference).
 *
 *   PUT  /v1/objects/{key}[?sync=1]   201, 409, 400, 413, 503, 507, 500
 *   GET  /v1/objects/{key}            200 with the value, 404, 400
 *   HEAD /v1/objects/{key}            as GET, without the body
 *   GET  /healthz                     200 "ok\n"
 *   GET  /v1/status                   JSON: store, caches, memory, sweeps
 *   GET  /v1/sweeps                   JSON: the last 64 sweep rounds
 *   POST /v1/admin/sweep              Bearer TIDE_ADMIN_TOKEN: sweep now
 *   GET  /metrics                     TIDE_METRICS_TOKEN (Bearer or
 *                                     X-Metrics-Token) or public: Prometheus text
 *
 * One h2o handler on "/" routes by the raw request path (h2o's normalized
 * path would turn "/v1/objects/../healthz" into another resource; a key is
 * hex and needs no decoding). In order: a head that frames its body twice
 * (conn.c's head check) is 400 bad_request and closes the connection; a
 * request target over
 * tided_max_url(key_size) bytes is 414; a method that is not an RFC 9110
 * token is 400 (h2o lets any byte above 0x20 but DEL through); a known path
 * with another method is 405 with Allow; anything else is 404. The query
 * has one parser for every endpoint (parse_query: sync=0|1 on objects,
 * nothing elsewhere; unknown, repeated or malformed is 400).
 *
 * Keys. A store's key is 1 to 65535 bytes; the key and its hex live in the
 * request's pool (a sync job carries its hex at its end), sized from the
 * store's key size, and the URL's key is length-checked before a byte of
 * it is decoded.
 *
 * Request text. The method, path and query are bytes, not UTF-8, and
 * jansson refuses a string that is not UTF-8 (json_pack returns NULL,
 * which would read as out of memory). So request bytes reach an error
 * body or a log line only through req_text (printable ASCII as it is,
 * every other byte \xNN), and every other string that goes into JSON from
 * outside the code (a store's message, data_dir) through json_text.
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
 * Sync. PUT ?sync=1 stores the value on the loop (tide_node_put: memory,
 * plus a read of the key file to refuse a duplicate), then queues a job
 * to the sync worker (work.c) and answers when it comes back: 201 only
 * after tide_node_sync returned 0. A 409 with ?sync=1 also waits, so it
 * says the value under the key is durable too.
 *
 * Invariants:
 *   1. Every response goes through send_body, which logs the access line
 *      at debug level; no handler writes a second response.
 *   2. A guard's loop->inflight count is taken in guard_new and given back
 *      in guard_dispose, once each.
 *   3. An error body never contains a header's value (so never a token).
 *   4. A request's bytes reach a body or a log line through req_text only;
 *      every body is valid UTF-8 JSON, and a 500 means a store error or
 *      out of memory, never a request's content.
 *   5. No buffer holding a key is sized by a constant.
 *
 * Never: call tide_node_sync or tide_node_sweep on a loop thread; echo the
 * Authorization header; compare tokens with memcmp/strcmp.
 */
#include "server/server.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "node/metrics.h"
#include "mem/account.h"
#include "mem/alloc.h"
#include "mem/proc.h"
#include "tide/error.h"
#include "tide/version.h"
#include "util/clock.h"
#include "util/hex.h"
#include "util/log.h"

typedef struct api_handler {
    h2o_handler_t super;
    tided_server *srv;
} api_handler;

typedef struct error_filter {
    h2o_filter_t super;
    tided_server *srv;
} error_filter;

struct tided_guard {
    tided_loop     *loop;
    tided_conn     *conn;     /* conn.c's record of its connection */
    size_t          body;     /* bytes in srv->body_in_handlers */
    tide_cache_obj *obj;      /* a GET's value, released at dispose */
    tided_job      *job;      /* a job at a worker, or NULL */
    int64_t         account;  /* bytes added to TIDE_MEM_HTTP */
};
typedef struct tided_guard tided_guard;

static h2o_generator_t no_generator = { NULL, NULL };

/* ---- the guard ------------------------------------------------------- */

static void guard_dispose(void *p)
{
    tided_guard *g = p;

    g->loop->inflight--;
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
    l->inflight++;
    *head_rc = tided_conn_request_begin(req, &g->conn, head);
    if (req->entity.base != NULL && req->entity.len > 0) {
        g->account = (int64_t)req->entity.len;
        tide_mem_account_add(TIDE_MEM_HTTP, g->account);
        g->body = req->entity.len;
        atomic_fetch_add(&l->srv->body_in_handlers, g->body);
    }
    return g;
}

static void guard_account(tided_guard *g, size_t bytes)
{
    g->account += (int64_t)bytes;
    tide_mem_account_add(TIDE_MEM_HTTP, (int64_t)bytes);
}

/* ---- text from the request ------------------------------------------ */

/* Request bytes (its method, path or query) as they appear in an error
 * body or a log line: printable ASCII stays as it is; every other byte,
 * and the backslash itself, is written \xNN (two lower-case hex digits).
 * The result is ASCII, so always a valid JSON string, one line in the log,
 * and it says exactly which bytes were sent. At most `max` bytes of the
 * input are shown, then "...". Allocated in the request's pool. */
static const char *req_text(h2o_req_t *req, const void *bytes, size_t n, size_t max)
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

/* The length of the well-formed UTF-8 sequence at `s` (`left` bytes), or
 * 0: RFC 3629, so no overlong form, no surrogate, nothing above U+10FFFF
 * (what jansson accepts). */
static size_t utf8_seq(const unsigned char *s, size_t left)
{
    unsigned char c = s[0];
    uint32_t cp;
    size_t n;

    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) n = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef) n = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4) n = 4, cp = c & 0x07;
    else return 0;
    if (left < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* `s` as a JSON string: as it is when it is UTF-8, else with each byte
 * that is not part of a well-formed sequence written \xNN. jansson
 * refuses a string that is not UTF-8, and the text here may come from
 * outside: a store message naming a file, the data directory. NULL only
 * when out of memory. */
static json_t *json_text(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t len = strlen(s), i = 0, o = 0, k;
    char *clean;
    json_t *j;

    while (i < len && (k = utf8_seq(u + i, len - i)) != 0) i += k;
    if (i == len) return json_string_nocheck(s);     /* just checked */
    clean = malloc(4 * len + 1);
    if (clean == NULL) return NULL;
    for (i = 0; i < len; i += k) {
        k = utf8_seq(u + i, len - i);
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

/* ---- responses ------------------------------------------------------- */

static int is_head(const h2o_req_t *req)
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
    case 503: return "Service Unavailable";
    case 507: return "Insufficient Storage";
    default:  return status < 400 ? "OK" : "Error";
    }
}

/* Send `len` bytes at `body` (which must live until the request is
 * disposed) with `status`. HEAD gets the headers and Content-Length only. */
static void send_body(h2o_req_t *req, int status, const char *type, const void *body, size_t len)
{
    h2o_iovec_t buf = h2o_iovec_init(body, len);

    req->res.status = status;
    req->res.reason = reason_of(status);
    req->res.content_length = len;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, type, strlen(type));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL, H2O_STRLIT("no-store"));
    if (tide_log_get_level() <= TIDE_LOG_DEBUG)
        tide_log(TIDE_LOG_DEBUG, "access: %s %s -> %d, %zu bytes",
                 req_text(req, req->method.base, req->method.len, 32),
                 req_text(req, req->path.base, req->path.len, 200), status, len);
    h2o_start_response(req, &no_generator);
    h2o_send(req, &buf, is_head(req) || len == 0 ? 0 : 1, H2O_SEND_STATE_FINAL);
}

/* Dump `j` (a reference the call takes) into the request's pool and send it. */
static void send_json(h2o_req_t *req, int status, json_t *j)
{
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    h2o_iovec_t body;

    json_decref(j);
    if (text == NULL) {
        static const char oom[] = "{\"error\":\"internal\",\"detail\":\"out of memory\"}\n";
        send_body(req, 500, "application/json", oom, sizeof oom - 1);
        return;
    }
    body.len = strlen(text) + 1;
    body.base = h2o_mem_alloc_pool(&req->pool, body.len);
    memcpy(body.base, text, body.len - 1);
    body.base[body.len - 1] = '\n';
    free(text);
    send_body(req, status, "application/json", body.base, body.len);
}

static json_t *error_json(const char *code, const char *detail)
{
    return json_pack("{s:s,s:o}", "error", code, "detail", json_text(detail));
}

static void send_error(h2o_req_t *req, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The detail is formatted into the request's pool at its full length: it
 * may name a key of up to 65535 bytes (131070 hex digits). */
static void send_error(h2o_req_t *req, int status, const char *code, const char *fmt, ...)
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
    send_json(req, status, error_json(code, detail));
}

static void send_not_allowed(h2o_req_t *req, const char *allow)
{
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, allow, strlen(allow));
    send_error(req, 405, "method_not_allowed", "%s is not allowed here; allowed: %s",
               req_text(req, req->method.base, req->method.len, 32), allow);
}

/* The answer to a failed put or sync, by code. */
static void send_store_error(h2o_req_t *req, int rc, const char *detail, const char *what)
{
    switch (rc) {
    case TIDE_ENOSPC:
        send_error(req, 507, "no_space", "%s: the disk is full: %s", what, detail);
        break;
    case TIDE_ECLOSED:
        send_error(req, 503, "unavailable", "%s: the store is closing or has failed: %s", what, detail);
        break;
    case TIDE_ETOOBIG:
        send_error(req, 413, "too_large", "%s: %s: %s", what, tide_strerror(rc), detail);
        break;
    default:
        send_error(req, 500, "internal", "%s: %s: %s", what, tide_strerror(rc), detail);
        break;
    }
}

/* ---- JSON of the node's figures ------------------------------------- */

static json_t *cache_sweep_json(const tide_cache_sweep_report *r)
{
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
                     "effective_age_us", (json_int_t)r->effective_age_us,
                     "entries_before", (json_int_t)r->entries_before, "demoted", (json_int_t)r->demoted,
                     "evicted", (json_int_t)r->evicted, "reaped", (json_int_t)r->reaped,
                     "bytes_before", (json_int_t)r->bytes_before, "bytes_after", (json_int_t)r->bytes_after);
}

static json_t *keycache_sweep_json(const tide_keycache_sweep_report *r)
{
    return json_pack("{s:I,s:I,s:I,s:I,s:I}",
                     "effective_age_us", (json_int_t)r->effective_age_us,
                     "entries_before", (json_int_t)r->entries_before, "evicted", (json_int_t)r->evicted,
                     "bytes_before", (json_int_t)r->bytes_before, "bytes_after", (json_int_t)r->bytes_after);
}

static json_t *sweep_report_json(const tide_node_sweep_report *r)
{
    json_t *trim = json_pack("{s:s,s:i,s:I,s:I,s:I,s:I,s:I,s:I}",
                             "allocator", tide_mem_alloc_family_name(r->trim.family),
                             "result", r->trim.result,
                             "rss_before", (json_int_t)r->trim.rss_before,
                             "rss_after", (json_int_t)r->trim.rss_after,
                             "rss_delta", (json_int_t)r->trim.rss_delta,
                             "duration_ns", (json_int_t)r->trim.duration_ns,
                             "minflt", (json_int_t)r->trim.minflt, "majflt", (json_int_t)r->trim.majflt);
    return json_pack("{s:I,s:I,s:I,s:I,s:b,s:i,s:o,s:o,s:o}",
                     "seq", (json_int_t)r->seq, "started_unix_us", (json_int_t)r->started_unix_us,
                     "sweep_ns", (json_int_t)r->sweep_ns, "freed_bytes", (json_int_t)r->freed_bytes,
                     "trimmed", r->trimmed, "trim_rc", r->trim_rc,
                     "trim", trim, "node_cache", cache_sweep_json(&r->node_cache),
                     "key_cache", keycache_sweep_json(&r->key_cache));
}

static json_t *store_json(tide_node *node)
{
    tide_store_info s;
    uint64_t keys;
    json_t *j;

    tide_node_store_info(node, &s);
    j = json_pack("{s:i,s:i,s:i,s:f,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:i,s:I}",
                     "version", (int)s.version, "key_size", (int)s.key_size, "block_size", (int)s.block_size,
                     "load_factor", s.load_factor, "bucket_capacity", (int)s.capacity,
                     "buckets", (json_int_t)s.buckets,
                     "dat_file_bytes", (json_int_t)s.dat_file_bytes,
                     "key_file_bytes", (json_int_t)s.key_file_bytes,
                     "log_file_bytes", (json_int_t)s.log_file_bytes,
                     "inserts", (json_int_t)s.inserts, "fetches", (json_int_t)s.fetches,
                     "commits", (json_int_t)s.commits, "commit_failures", (json_int_t)s.commit_failures,
                     "pool_bytes", (json_int_t)s.pool_bytes,
                     "commit_buffer_bytes", (json_int_t)s.commit_buffer_bytes,
                     "bytes_written", (json_int_t)s.bytes_written, "syncs", (json_int_t)s.syncs,
                     "commit_interval_ms", (int)s.commit_interval_ms, "burst_bytes", (json_int_t)s.burst_bytes);
    /* null until the count made at open is done (tide_node_keys) */
    json_object_set_new(j, "keys", tide_node_keys(node, &keys) ? json_integer((json_int_t)keys) : json_null());
    return j;
}

static json_t *caches_json(tide_node *node, json_t **keycache)
{
    const tide_node_opts *o = tide_node_options(node);
    tide_cache_stats c;
    tide_keycache_stats k;

    tide_node_cache_stats(node, &c);
    tide_node_keycache_stats(node, &k);
    *keycache = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
                          "hits", (json_int_t)k.hits, "misses", (json_int_t)k.misses,
                          "inserts", (json_int_t)k.inserts, "evictions", (json_int_t)k.evictions,
                          "entries", (json_int_t)k.entries, "bytes", (json_int_t)k.bytes,
                          "slots", (json_int_t)k.slots, "effective_age_us", (json_int_t)k.effective_age_us,
                          "target_entries", (json_int_t)o->key_cache_size,
                          "age_s", (json_int_t)o->key_cache_age_s);
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
                     "hits", (json_int_t)c.hits, "misses", (json_int_t)c.misses,
                     "inserts", (json_int_t)c.inserts, "evictions", (json_int_t)c.evictions,
                     "demotions", (json_int_t)c.demotions, "revivals", (json_int_t)c.revivals,
                     "reaped", (json_int_t)c.reaped, "strong", (json_int_t)c.strong,
                     "weak", (json_int_t)c.weak, "bytes", (json_int_t)c.bytes, "slots", (json_int_t)c.slots,
                     "effective_age_us", (json_int_t)c.effective_age_us,
                     "target_entries", (json_int_t)o->cache_target, "age_s", (json_int_t)o->cache_age_s,
                     "budget_bytes", (json_int_t)o->cache_budget,
                     "hard_limit_bytes", (json_int_t)o->cache_hard_limit);
}

static json_t *memory_json(void)
{
    tide_mem_account_entry acct[TIDE_MEM_ACCOUNT_MAX];
    tide_mem_proc_status st;
    size_t n = tide_mem_account_snapshot(acct, TIDE_MEM_ACCOUNT_MAX);
    json_t *accounts = json_object(), *m;

    if (n > TIDE_MEM_ACCOUNT_MAX) n = TIDE_MEM_ACCOUNT_MAX;
    for (size_t i = 0; i < n; i++) json_object_set_new(accounts, acct[i].name, json_integer(acct[i].bytes));
    m = json_pack("{s:o,s:s}", "accounts", accounts,
                  "allocator", tide_mem_alloc_family_name(tide_mem_alloc_family()));
    if (tide_mem_proc_status_read(&st) == 0) {
        json_object_set_new(m, "rss_bytes", json_integer((json_int_t)st.vm_rss));
        json_object_set_new(m, "rss_peak_bytes", json_integer((json_int_t)st.vm_hwm));
        if (st.has_split) {
            json_object_set_new(m, "rss_anon_bytes", json_integer((json_int_t)st.rss_anon));
            json_object_set_new(m, "rss_file_bytes", json_integer((json_int_t)st.rss_file));
            json_object_set_new(m, "rss_shmem_bytes", json_integer((json_int_t)st.rss_shmem));
        }
    } else {
        json_object_set_new(m, "rss_error", json_text(tide_last_error()));
    }
    return m;
}

static json_t *sweeps_json(tide_node *node)
{
    tide_node_totals t;
    tide_node_sweep_report last;
    json_t *j;

    tide_node_totals_get(node, &t);
    j = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
                  "sweeps", (json_int_t)t.sweeps, "sweep_ns", (json_int_t)t.sweep_ns,
                  "trims", (json_int_t)t.trims, "trims_lowered", (json_int_t)t.trims_lowered,
                  "trim_ns", (json_int_t)t.trim_ns, "trim_released_bytes", (json_int_t)t.trim_released_bytes,
                  "trim_minflt", (json_int_t)t.trim_minflt, "trim_majflt", (json_int_t)t.trim_majflt,
                  "interval_ms", (json_int_t)tide_node_options(node)->sweep_interval_ms);
    if (tide_node_reports(node, &last, 1) == 1) json_object_set_new(j, "last", sweep_report_json(&last));
    else json_object_set_new(j, "last", json_null());
    return j;
}

/* GET /v1/sweeps: the last TIDE_NODE_REPORTS rounds, newest first. */
static json_t *sweep_list_json(tide_node *node)
{
    tide_node_sweep_report *r = calloc(TIDE_NODE_REPORTS, sizeof *r);
    json_t *list = json_array();
    size_t n = r ? tide_node_reports(node, r, TIDE_NODE_REPORTS) : 0;

    for (size_t i = 0; i < n; i++) json_array_append_new(list, sweep_report_json(&r[i]));
    free(r);
    return json_pack("{s:o,s:I}", "reports", list, "interval_ms",
                     (json_int_t)tide_node_options(node)->sweep_interval_ms);
}

static json_t *requests_json(tide_node *node)
{
    tide_node_totals t;

    tide_node_totals_get(node, &t);
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
                     "puts", (json_int_t)t.puts, "puts_existing", (json_int_t)t.puts_existing,
                     "gets", (json_int_t)t.gets, "gets_cache", (json_int_t)t.gets_cache,
                     "gets_keycache", (json_int_t)t.gets_keycache, "gets_store", (json_int_t)t.gets_store,
                     "gets_missing", (json_int_t)t.gets_missing);
}

static json_t *http_json(tided_server *srv)
{
    uint64_t sb, sj, wb, wj;

    json_t *j;

    tided_worker_counts(&srv->sync_worker, &sb, &sj);
    tided_worker_counts(&srv->sweep_worker, &wb, &wj);
    j = json_pack("{s:o,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
                     "listen", json_text(srv->listen_text), "threads", (int)srv->nloops,
                     "connections", (json_int_t)atomic_load(&srv->connections),
                     "connections_total", (json_int_t)atomic_load(&srv->connections_total),
                     "connections_refused", (json_int_t)atomic_load(&srv->connections_refused),
                     "max_connections", (json_int_t)srv->max_connections,
                     "max_object_size", (json_int_t)srv->max_object_size,
                     "sync_requests", (json_int_t)sj, "syncs", (json_int_t)sb,
                     "sweep_requests", (json_int_t)wj, "admin_sweeps", (json_int_t)wb);
    if (j && json_object_update_new(j, tided_conn_json(srv)) != 0) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

static json_t *status_json(tided_server *srv)
{
    json_t *keycache = NULL, *cache = caches_json(srv->node, &keycache);
    uint64_t up_us = tide_clock_mono_us() - srv->started_mono_us;

    return json_pack("{s:s,s:f,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
                     "version", TIDE_VERSION, "uptime_seconds", (double)up_us / 1e6,
                     "started_unix", (json_int_t)srv->started_unix_s, "data_dir", json_text(srv->cfg->data_dir),
                     "store", store_json(srv->node), "node_cache", cache, "key_cache", keycache,
                     "memory", memory_json(), "sweeps", sweeps_json(srv->node),
                     "requests", requests_json(srv->node), "http", http_json(srv));
}

/* ---- objects --------------------------------------------------------- */

/* Decode `text` (len chars, not NUL-terminated: it is the URL's) as a key
 * of key_size bytes into `out` (key_size bytes), or send 400 and return
 * -1. The length is checked first, so nothing is written past `out`
 * whatever the URL holds. */
static int parse_key(tided_server *srv, h2o_req_t *req, const char *text, size_t len, uint8_t *out)
{
    size_t want = 2 * (size_t)srv->key_size;

    if (len != want) {
        send_error(req, 400, "bad_key", "a key is %zu hex digits (%u bytes); this one has %zu characters",
                   want, srv->key_size, len);
        return -1;
    }
    for (size_t i = 0; i < len; i += 2) {
        int hi = tide_hex_digit((unsigned char)text[i]), lo = tide_hex_digit((unsigned char)text[i + 1]);
        if (hi < 0 || lo < 0) {
            size_t at = hi < 0 ? i : i + 1;
            send_error(req, 400, "bad_key", "character %zu of the key, '%s', is not a hex digit (0-9, a-f, A-F)",
                       at + 1, req_text(req, text + at, 1, 1));
            return -1;
        }
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

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
static int parse_query(h2o_req_t *req, int *sync)
{
    const char *q, *end, *first = NULL;
    size_t first_len = 0;

    if (sync) *sync = 0;
    if (req->query_at == SIZE_MAX) return 0;
    q = req->path.base + req->query_at + 1;
    end = req->path.base + req->path.len;
    while (q < end) {
        const char *amp = memchr(q, '&', (size_t)(end - q));
        size_t n = (size_t)((amp ? amp : end) - q);
        const char *eq = memchr(q, '=', n);
        size_t name_len = eq ? (size_t)(eq - q) : n;

        if (n == 0) {
            /* an empty piece */
        } else if (sync == NULL || name_len != 4 || memcmp(q, "sync", 4) != 0) {
            send_error(req, 400, "bad_query", "unknown query parameter '%s' (%s)", req_text(req, q, name_len, 64),
                       sync ? "the only one is sync=0 or sync=1" : "this endpoint takes none");
            return -1;
        } else if (first != NULL) {
            send_error(req, 400, "bad_query", "the query parameter 'sync' is given twice ('%s' and '%s'); "
                       "give it once", req_text(req, first, first_len, 64), req_text(req, q, n, 64));
            return -1;
        } else if (n != 6 || eq != q + 4 || (q[5] != '0' && q[5] != '1')) {
            send_error(req, 400, "bad_query", "sync must be written sync=0 or sync=1, not '%s'",
                       req_text(req, q, n, 64));
            return -1;
        } else {
            *sync = q[5] == '1';
            first = q;
            first_len = n;
        }
        q += n + 1;
    }
    return 0;
}

static void send_stored(h2o_req_t *req, int status, const char *key_hex, size_t len, int synced)
{
    send_json(req, status, json_pack("{s:s,s:I,s:b}", "key", key_hex, "bytes", (json_int_t)len,
                                     "durable", synced));
}

static void send_exists(h2o_req_t *req, const char *key_hex, int synced)
{
    send_error(req, 409, "exists", "key %s is already stored (values are written once)%s", key_hex,
               synced ? "; it is durable" : "");
}

/* Make a job of `kind` for `req`, with `key_hex_bytes` of room for its
 * key_hex (0 but for a sync), let `prepare` (may be NULL) fill its
 * fields, and queue it on `w`. NULL, after answering 500 naming `what`,
 * when it cannot be allocated. The job must be complete before it is
 * queued: from then on it belongs to the worker. */
static tided_job *queue_job(tided_worker *w, h2o_req_t *req, tided_guard *guard, int kind, const char *what,
                            size_t key_hex_bytes, void (*prepare)(tided_job *, void *), void *arg)
{
    tided_job *job = calloc(1, sizeof *job + key_hex_bytes);

    if (job == NULL) {
        send_error(req, 500, "internal", "out of memory queueing %s", what);
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

typedef struct sync_fill { int rc; size_t len; const char *key_hex; } sync_fill;

static void fill_sync(tided_job *job, void *arg)
{
    const sync_fill *f = arg;
    job->put_rc = f->rc;
    job->len = f->len;
    memcpy(job->key_hex, f->key_hex, strlen(f->key_hex) + 1);
}

static void put_object(tided_server *srv, h2o_req_t *req, tided_guard *guard, const uint8_t *key,
                       const char *key_hex)
{
    int sync, rc;
    size_t len = req->entity.base ? req->entity.len : 0;

    if (parse_query(req, &sync)) return;
    if (len > srv->max_object_size) {
        send_error(req, 413, "too_large", "the value is %zu bytes; the most is max_object_size = %zu bytes",
                   len, srv->max_object_size);
        return;
    }
    if (len == 0) {
        send_error(req, 400, "empty_value", "the body is empty; a value is 1 to %zu bytes",
                   srv->max_object_size);
        return;
    }
    rc = tide_node_put(srv->node, key, req->entity.base, len);
    if (rc != 0 && rc != TIDE_EEXIST) {
        tide_log(TIDE_LOG_WARN, "PUT %s (%zu bytes): %s: %s", key_hex, len, tide_strerror(rc),
                 tide_last_error());
        send_store_error(req, rc, tide_last_error(), "the value was not stored");
        return;
    }
    if (!sync) {
        if (rc == TIDE_EEXIST) send_exists(req, key_hex, 0);
        else send_stored(req, 201, key_hex, len, 0);
        return;
    }
    sync_fill f = { rc, len, key_hex };
    queue_job(&srv->sync_worker, req, guard, TIDED_JOB_SYNC,
              "the sync; the value is stored but not known to be durable", strlen(key_hex) + 1, fill_sync, &f);
}

static void get_object(tided_server *srv, h2o_req_t *req, tided_guard *guard, const uint8_t *key,
                       const char *key_hex)
{
    tide_cache_obj *obj = NULL;
    int sync, rc;

    if (parse_query(req, &sync)) return;
    rc = tide_node_get(srv->node, key, &obj);
    if (rc == TIDE_ENOTFOUND) {
        send_error(req, 404, "not_found", "no value is stored under key %s", key_hex);
        return;
    }
    if (rc != 0) {
        tide_log(TIDE_LOG_WARN, "GET %s: %s: %s", key_hex, tide_strerror(rc), tide_last_error());
        send_error(req, 500, "internal", "reading key %s: %s: %s", key_hex, tide_strerror(rc),
                   tide_last_error());
        return;
    }
    /* The guard keeps the reference until h2o has written the bytes. */
    guard->obj = obj;
    guard_account(guard, tide_cache_obj_len(obj));
    send_body(req, 200, "application/octet-stream", tide_cache_obj_data(obj), tide_cache_obj_len(obj));
}

/* The key and its hex live in the request's pool, sized by the store's
 * key size (1 to 65535 bytes), never on the stack. */
static void objects(tided_server *srv, h2o_req_t *req, tided_guard *guard, const char *rest, size_t rest_len)
{
    uint8_t *key;
    char *key_hex;
    int put = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("PUT"));
    int get = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) || is_head(req);

    if (!put && !get) {
        send_not_allowed(req, "GET, HEAD, PUT");
        return;
    }
    key = h2o_mem_alloc_pool(&req->pool, srv->key_size);
    key_hex = h2o_mem_alloc_pool(&req->pool, 2 * (size_t)srv->key_size + 1);
    if (parse_key(srv, req, rest, rest_len, key)) return;
    tide_hex_encode(key, srv->key_size, key_hex);
    if (put) put_object(srv, req, guard, key, key_hex);
    else get_object(srv, req, guard, key, key_hex);
}

/* ---- admin ----------------------------------------------------------- */

/* 1 when the `len` bytes at `given` equal the `n` bytes of `want`. The
 * time taken depends on the token's length only, not on where they differ. */
static int token_equal(const char *want, size_t n, const char *given, size_t len)
{
    unsigned char diff = (unsigned char)(len != n);

    for (size_t i = 0; i < n; i++) diff |= (unsigned char)(want[i] ^ (i < len ? given[i] : 0));
    return diff == 0;
}

static int token_matches(const tided_server *srv, const char *given, size_t len)
{
    return token_equal(srv->admin_token, srv->admin_token_len, given, len);
}

static void admin_sweep(tided_server *srv, h2o_req_t *req, tided_guard *guard)
{
    ssize_t at;

    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"))) {
        send_not_allowed(req, "POST");
        return;
    }
    if (parse_query(req, NULL)) return;
    if (srv->admin_token_len == 0) {
        send_error(req, 403, "forbidden", "no admin token is configured; set TIDE_ADMIN_TOKEN in tided's "
                   "environment to enable /v1/admin endpoints");
        return;
    }
    at = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
    if (at == -1 || req->headers.entries[at].value.len < 7
        || strncasecmp(req->headers.entries[at].value.base, "Bearer ", 7) != 0
        || !token_matches(srv, req->headers.entries[at].value.base + 7, req->headers.entries[at].value.len - 7)) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_WWW_AUTHENTICATE, NULL,
                       H2O_STRLIT("Bearer realm=\"tide-admin\""));
        send_error(req, 401, "unauthorized", at == -1
                   ? "this endpoint needs 'Authorization: Bearer <TIDE_ADMIN_TOKEN>'"
                   : "the Authorization header does not carry the admin token (Bearer TIDE_ADMIN_TOKEN)");
        return;
    }
    queue_job(&srv->sweep_worker, req, guard, TIDED_JOB_SWEEP, "the sweep", 0, NULL, NULL);
}

/* ---- metrics ---------------------------------------------------------- */

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
    tided_conn_families(srv, w);
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

static void metrics(tided_server *srv, h2o_req_t *req, tided_guard *guard, int get_or_head)
{
    const char *given;
    size_t len = 0;

    if (!get_or_head) {
        send_not_allowed(req, "GET, HEAD");
        return;
    }
    if (parse_query(req, NULL)) return;
    if (!srv->metrics_public) {
        given = scrape_token(req, &len);
        if (srv->metrics_token_len == 0 || given == NULL
            || !token_equal(srv->metrics_token, srv->metrics_token_len, given, len)) {
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_WWW_AUTHENTICATE, NULL,
                           H2O_STRLIT("Bearer realm=\"tide-metrics\""));
            send_error(req, 401, "unauthorized", srv->metrics_token_len == 0
                       ? "scraping is off: start tided with TIDE_METRICS_TOKEN set (then send 'Authorization: "
                         "Bearer <token>' or 'X-Metrics-Token: <token>'), or with TIDE_METRICS_PUBLIC=1"
                       : given == NULL
                       ? "this endpoint needs 'Authorization: Bearer <TIDE_METRICS_TOKEN>' or "
                         "'X-Metrics-Token: <TIDE_METRICS_TOKEN>'"
                       : "the token sent is not TIDE_METRICS_TOKEN");
            return;
        }
    }
    queue_job(&srv->metrics_worker, req, guard, TIDED_JOB_METRICS, "the scrape", 0, NULL, NULL);
}

/* ---- jobs coming back ------------------------------------------------ */

static void answer_job(tided_job *job)
{
    h2o_req_t *req = job->req;

    if (job->kind == TIDED_JOB_METRICS) {
        if (job->text == NULL) {
            send_error(req, 500, "internal", "the metrics page could not be rendered: %s",
                       job->detail[0] ? job->detail : "out of memory");
            return;
        }
        char *body = h2o_mem_alloc_pool(&req->pool, job->text_len);
        memcpy(body, job->text, job->text_len);
        send_body(req, 200, TIDE_METRICS_CONTENT_TYPE, body, job->text_len);
        return;
    }
    if (job->kind == TIDED_JOB_SWEEP) {
        json_t *j = sweep_report_json(&job->report);
        json_object_set_new(j, "requests_served", json_integer((json_int_t)job->batch_size));
        send_json(req, 200, j);
        return;
    }
    if (job->rc != 0) {
        send_store_error(req, job->rc, job->detail, job->put_rc == 0
                         ? "the value is stored but the commit that makes it durable failed"
                         : "the key exists but the commit that makes it durable failed");
        return;
    }
    if (job->put_rc == TIDE_EEXIST) send_exists(req, job->key_hex, 1);
    else send_stored(req, 201, job->key_hex, job->len, 1);
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
        free(job->text);
        free(job);
    }
}

/* ---- routing --------------------------------------------------------- */

static int path_is(const char *p, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(p, lit, n) == 0;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    tided_server *srv = ((api_handler *)self)->srv;
    const char *p = req->path.base;
    size_t n = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
    int get_or_head = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) || is_head(req);
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
        send_error(req, 400, "bad_request", TIDED_DETAIL_FRAMING,
                   head.reason);
    } else if (req->path.len > max_url) {
        send_error(req, 414, "uri_too_long", "the request target is %zu bytes; the most is %zu (for %u-byte "
                   "keys)", req->path.len, max_url, srv->key_size);
    } else if (!is_token(req->method.base, req->method.len)) {
        send_error(req, 400, "bad_method", "the method '%s' is not an HTTP token (letters, digits and "
                   "!#$%%&'*+-.^_`|~)", req_text(req, req->method.base, req->method.len, 32));
    } else if (n >= sizeof objects_prefix - 1 && memcmp(p, objects_prefix, sizeof objects_prefix - 1) == 0) {
        objects(srv, req, guard, p + sizeof objects_prefix - 1, n - (sizeof objects_prefix - 1));
    } else if (path_is(p, n, "/healthz")) {
        if (!get_or_head) send_not_allowed(req, "GET, HEAD");
        else if (parse_query(req, NULL) == 0) send_body(req, 200, "text/plain; charset=utf-8", "ok\n", 3);
    } else if (path_is(p, n, "/v1/status")) {
        if (!get_or_head) send_not_allowed(req, "GET, HEAD");
        else if (parse_query(req, NULL) == 0) send_json(req, 200, status_json(srv));
    } else if (path_is(p, n, "/v1/sweeps")) {
        if (!get_or_head) send_not_allowed(req, "GET, HEAD");
        else if (parse_query(req, NULL) == 0) send_json(req, 200, sweep_list_json(srv->node));
    } else if (path_is(p, n, "/metrics")) {
        metrics(srv, req, guard, get_or_head);
    } else if (path_is(p, n, "/v1/admin/sweep")) {
        admin_sweep(srv, req, guard);
    } else {
        send_error(req, 404, "not_found", "no such endpoint: %s (see docs/HTTP.md)", req_text(req, p, n, 128));
    }
    return 0;
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
    h2o_ostream_send_next(self, req, &o->body, is_head(req) ? 0 : 1, state);
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
    j = error_json(code, detail);
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
}
