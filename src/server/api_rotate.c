/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * api_rotate.c: online delete over HTTP (docs/HTTP.md, "Online delete").
 *
 *   POST /v1/admin/rotate            copy the body's keys forward, rotate
 *                                    now, answer the report
 *   POST /v1/admin/rotate?expect=R   rotate only while the count is R
 *   POST /v1/admin/keep              copy the body's keys forward only
 *   GET  /v1/admin/can_delete        advisory_delete's allowance
 *   POST /v1/admin/can_delete?value=N|never|always|now   set it
 *   GET  /v1/rotations               the last TIDE_NODE_ROTATIONS attempts
 *   /v1/status' "online_delete"      generations, disk, rotations
 *
 * The rotate body is the keep-list: keys the client knows are live, in hex
 * one per line (Content-Type text/plain; blank lines and blanks around a
 * key are skipped, '\r' before '\n' too) or raw, key after key
 * (application/octet-stream). h2o reads the body whole before a handler
 * runs; the handler parses it on the loop, so a malformed body is a 400
 * naming the line (or the length) and nothing is copied or rotated. The
 * keys go to the rotate worker with the job (work.c), which copies them
 * forward and rotates under one hold of the node's rotation lock
 * (tide_node_rotate_keep: batches of delete_batch with back_off_ms
 * pauses, then the rotation): never on a loop thread. A body is at most
 * max_object_size bytes (h2o refuses more before a handler runs): at the
 * default 1 MiB, 32768 raw 32-byte keys or 16131 in hex lines (65 bytes
 * a line).
 *
 * A longer keep-list goes in pieces, each its own request (h2o 2.2.5
 * buffers a request body, so one request cannot stream): POST
 * /v1/admin/keep copies a piece forward at once (tide_node_keep_at, on
 * the rotate worker) and answers the manifest's rotation count R it
 * copied at; POST /v1/admin/rotate?expect=R then rotates only while the
 * count is still R (tide_node_rotate_expect), else 409 rotated_meanwhile
 * with the count now: the client sends its pieces again and retries.
 *
 * Without generations (online delete off and no tide.generations in the
 * data directory) a rotate is 409 "online_delete_off": the request is
 * well formed, the node's state refuses it.
 *
 * Invariants:
 *   1. Every /v1/admin endpoint here checks the admin token first
 *      (tided_admin_authorized); GET /v1/rotations is open like
 *      /v1/sweeps.
 *   2. A rotate answers only after its rotation returned; its body is
 *      the report with every field (tided_rotation_report_json).
 *   3. A malformed keep-list or query rotates nothing and copies nothing.
 *   4. rotate?expect=R rotates only when the manifest's count is R at the
 *      rotation itself (checked under the node's rotation lock).
 *
 * Never: call tide_node_rotate or tide_node_keep_keys on a loop thread;
 * echo a body's bytes but through tided_req_text.
 */
#include "server/api_impl.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tide/error.h"
#include "util/hex.h"
#include "util/log.h"

/* ---- JSON ----------------------------------------------------------- */

static json_t *gens_report_json(const tide_gens_rotate_report *g)
{
    json_t *dropped = json_array();

    for (unsigned i = 0; i < g->dropped && i < TIDE_GEN_MAX; i++)
        json_array_append_new(dropped, json_integer((json_int_t)g->dropped_ids[i]));
    return json_pack("{s:I,s:I,s:o,s:i,s:I,s:I,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
                     "started_unix_us", (json_int_t)g->started_unix_us, "new_id", (json_int_t)g->new_id,
                     "dropped_ids", dropped, "dropped", (int)g->dropped,
                     "deleted_bytes", (json_int_t)g->deleted_bytes,
                     "held_bytes", (json_int_t)g->held_bytes, "delete_steps", (int)g->delete_steps,
                     "create_ns", (json_int_t)g->create_ns, "sync_ns", (json_int_t)g->sync_ns,
                     "flush_ns", (json_int_t)g->flush_ns, "manifest_ns", (json_int_t)g->manifest_ns,
                     "switch_ns", (json_int_t)g->switch_ns, "drop_ns", (json_int_t)g->drop_ns,
                     "objects_in_previous", (json_int_t)g->objects_in_previous,
                     "rotations", (json_int_t)g->rotations);
}

json_t *tided_rotation_report_json(const tide_node_rotation_report *r)
{
    json_t *j = json_pack("{s:I,s:I,s:o,s:i,s:s,s:b,s:o,s:I,s:I,s:I,s:I,s:I,s:I}",
                          "seq", (json_int_t)r->seq, "started_unix_us", (json_int_t)r->started_unix_us,
                          "trigger", tided_json_text(r->trigger), "rc", r->rc,
                          "rc_name", r->rc ? tide_strerror(r->rc) : "ok", "abandoned", r->abandoned,
                          "error", tided_json_text(r->error), "gate_wait_ns", (json_int_t)r->gate_wait_ns,
                          "keep_ns", (json_int_t)r->keep_ns, "keep_keys", (json_int_t)r->keep_keys,
                          "keep_copied", (json_int_t)r->keep_copied, "keep_missing", (json_int_t)r->keep_missing,
                          "keep_copied_bytes", (json_int_t)r->keep_copied_bytes);

    if (j == NULL) return NULL;
    json_object_set_new(j, "trim_ns", json_integer((json_int_t)r->trim_ns));
    json_object_set_new(j, "trimmed", json_boolean(r->trimmed));
    json_object_set_new(j, "trim_rc", json_integer(r->trim_rc));
    json_object_set_new(j, "trim", tided_trim_json(&r->trim));
    json_object_set_new(j, "gens", gens_report_json(&r->gens));
    json_object_set_new(j, "total_ns", json_integer((json_int_t)r->total_ns));
    return j;
}

/* N, or "never" / "always" for the two ends. */
static json_t *can_delete_json(uint64_t v)
{
    if (v == 0) return json_string("never");
    if (v == UINT64_MAX) return json_string("always");
    return json_integer((json_int_t)v);
}

json_t *tided_rotation_list_json(tide_node *node)
{
    tide_node_rotation_report *r = calloc(TIDE_NODE_ROTATIONS, sizeof *r);
    json_t *list = json_array();
    size_t n = r ? tide_node_rotations(node, r, TIDE_NODE_ROTATIONS) : 0;
    tide_gens_info gi;

    for (size_t i = 0; i < n; i++) json_array_append_new(list, tided_rotation_report_json(&r[i]));
    free(r);
    tide_node_gens_info(node, &gi);
    return json_pack("{s:o,s:b}", "reports", list, "enabled", gi.enabled);
}

json_t *tided_online_delete_json(tide_node *node)
{
    tide_gens_info gi;
    tide_node_rotation_totals t;
    tide_node_rotation_report last;
    json_t *gens = json_array(), *j;

    tide_node_gens_info(node, &gi);
    tide_node_rotation_totals_get(node, &t);
    for (unsigned i = 0; i < gi.count && i < TIDE_GEN_MAX; i++) {
        const tide_gens_gen_info *g = &gi.gens[i];
        json_array_append_new(gens, json_pack("{s:I,s:o,s:I,s:I,s:I,s:I,s:b}", "id", (json_int_t)g->id,
                              "dir", tided_json_text(g->dir),
                              "bytes", (json_int_t)(g->dat_file_bytes + g->key_file_bytes + g->log_file_bytes),
                              "dat_file_bytes", (json_int_t)g->dat_file_bytes,
                              "key_file_bytes", (json_int_t)g->key_file_bytes,
                              "log_file_bytes", (json_int_t)g->log_file_bytes, "writable", g->writable));
    }
    j = json_pack("{s:b,s:i,s:o,s:I,s:I,s:I,s:I,s:I,s:o,s:b}",
                  "enabled", gi.enabled, "keep", (int)gi.keep, "generations", gens,
                  "disk_bytes", (json_int_t)gi.disk_bytes, "rotations", (json_int_t)gi.rotations,
                  "last_rotation_us", (json_int_t)gi.last_rotation_us,
                  "newest_objects", (json_int_t)gi.newest_objects, "newest_bytes", (json_int_t)gi.newest_bytes,
                  "can_delete", can_delete_json(t.can_delete),
                  "advisory_delete", tide_node_options(node)->advisory_delete);
    if (j == NULL) return NULL;
    json_object_set_new(j, "copied_forward", json_integer((json_int_t)gi.copied_forward));
    json_object_set_new(j, "copied_forward_bytes", json_integer((json_int_t)gi.copied_forward_bytes));
    json_object_set_new(j, "older_lookups", json_integer((json_int_t)gi.older_lookups));
    json_object_set_new(j, "failures", json_integer((json_int_t)t.failures));
    json_object_set_new(j, "abandoned", json_integer((json_int_t)t.abandoned));
    json_object_set_new(j, "last_rotation", tide_node_rotations(node, &last, 1) == 1
                        ? tided_rotation_report_json(&last) : json_null());
    return j;
}

/* ---- POST /v1/admin/rotate ------------------------------------------ */

/* The content type without parameters, lower case compared: 1 text/plain,
 * 2 application/octet-stream, 0 none given, -1 another. */
static int body_type(h2o_req_t *req)
{
    ssize_t at = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1);
    const char *v;
    size_t n;

    if (at == -1) return 0;
    v = req->headers.entries[at].value.base;
    n = req->headers.entries[at].value.len;
    for (size_t i = 0; i < n; i++)
        if (v[i] == ';' || v[i] == ' ') { n = i; break; }
    if (n == 10 && strncasecmp(v, "text/plain", 10) == 0) return 1;
    if (n == 24 && strncasecmp(v, "application/octet-stream", 24) == 0) return 2;
    return -1;
}

/* n hex digits (n even) at h into out; -1 at the first that is not one. */
static int decode_hex(const char *h, size_t n, uint8_t *out)
{
    for (size_t i = 0; i < n; i += 2) {
        int hi = tide_hex_digit((unsigned char)h[i]), lo = tide_hex_digit((unsigned char)h[i + 1]);
        if (hi < 0 || lo < 0) return -1;
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

/* Hex keys, one per line, into keys (room for every line): 0 with
 * *nkeys, or -1 after a 400 naming the first bad line. */
static int parse_hex_lines(tided_server *srv, h2o_req_t *req, const char *b, size_t len, uint8_t *keys,
                           size_t *nkeys, const char *nothing)
{
    size_t want = 2 * (size_t)srv->key_size, line = 0, k = 0, i = 0;

    while (i < len) {
        const char *nl = memchr(b + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - b) : len, s = i, e = end;

        line++;
        while (s < e && (b[s] == ' ' || b[s] == '\t')) s++;
        while (e > s && (b[e - 1] == ' ' || b[e - 1] == '\t' || b[e - 1] == '\r')) e--;
        i = end + 1;
        if (s == e) continue;
        if (e - s != want || decode_hex(b + s, e - s, keys + k * srv->key_size) != 0) {
            tided_send_error(req, 400, "bad_body", "line %zu of the keep-list, '%s', is not a key of %zu hex "
                             "digits (%u bytes); nothing was %s", line,
                             tided_req_text(req, b + s, e - s, 80), want, srv->key_size, nothing);
            return -1;
        }
        k++;
    }
    *nkeys = k;
    return 0;
}

typedef struct rotate_fill {
    void    *keys;
    size_t   nkeys;
    int      keep_only, has_expect;
    uint64_t expect;
} rotate_fill;

static void fill_rotate(tided_job *job, void *arg)
{
    const rotate_fill *f = arg;
    job->u.rotate.keys = f->keys;
    job->u.rotate.nkeys = f->nkeys;
    job->u.rotate.keep_only = f->keep_only;
    job->u.rotate.has_expect = f->has_expect;
    job->u.rotate.expect = f->expect;
}

/* The body as keys (malloc'd into *keys), or -1 after a 400 saying
 * "nothing was <nothing>". */
static int read_keep_list(tided_server *srv, h2o_req_t *req, void **keys, size_t *nkeys, const char *nothing)
{
    size_t len = req->entity.base ? req->entity.len : 0;
    int type = body_type(req);
    uint8_t *k;

    *keys = NULL;
    *nkeys = 0;
    if (len == 0) return 0;
    if (type <= 0) {
        tided_send_error(req, 400, "bad_body", "a keep-list is text/plain (hex keys, one per line) or "
                         "application/octet-stream (raw keys); this body's Content-Type is %s; nothing was "
                         "%s", type == 0 ? "missing" : "another", nothing);
        return -1;
    }
    if (type == 2 && len % srv->key_size != 0) {
        tided_send_error(req, 400, "bad_body", "an application/octet-stream keep-list is whole %u-byte keys; "
                         "%zu bytes is %zu keys and %zu bytes more; nothing was %s", srv->key_size, len,
                         len / srv->key_size, len % srv->key_size, nothing);
        return -1;
    }
    k = malloc(len);    /* raw: exactly the body; hex: at least twice what the keys need */
    if (k == NULL) {
        tided_send_error(req, 500, "internal", "out of memory reading a %zu-byte keep-list", len);
        return -1;
    }
    if (type == 2) {
        memcpy(k, req->entity.base, len);
        *nkeys = len / srv->key_size;
    } else if (parse_hex_lines(srv, req, req->entity.base, len, k, nkeys, nothing) != 0) {
        free(k);
        return -1;
    }
    *keys = k;
    return 0;
}

/* rotate's query: nothing, or expect=R once (a decimal count). 0, or -1
 * after a 400. */
static int parse_expect_query(h2o_req_t *req, int *has, uint64_t *expect)
{
    const char *at = NULL, *q;
    size_t n;

    *has = 0;
    *expect = 0;
    while (tided_query_next(req, &at, &q, &n)) {
        uint64_t v = 0;
        size_t i;

        if (n < 7 || memcmp(q, "expect=", 7) != 0) {
            tided_send_error(req, 400, "bad_query", "unknown query parameter '%s' (the only one is expect=R, "
                             "a rotation count)", tided_req_text(req, q, n, 64));
            return -1;
        }
        if (*has) {
            tided_send_error(req, 400, "bad_query", "the query parameter 'expect' is given twice; give it once");
            return -1;
        }
        for (i = 7; i < n && q[i] >= '0' && q[i] <= '9' && v <= (UINT64_MAX - 9) / 10; i++)
            v = v * 10 + (uint64_t)(q[i] - '0');
        if (n == 7 || i != n) {
            tided_send_error(req, 400, "bad_query", "expect='%s' is not a rotation count (decimal digits, as "
                             "POST /v1/admin/keep answers it)", tided_req_text(req, q + 7, n - 7, 64));
            return -1;
        }
        *has = 1;
        *expect = v;
    }
    return 0;
}

void tided_api_admin_rotate(tided_server *srv, h2o_req_t *req, tided_guard *guard)
{
    rotate_fill f = { 0 };

    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"))) {
        tided_send_not_allowed(req, "POST");
        return;
    }
    if (!tided_admin_authorized(srv, req)) return;
    if (parse_expect_query(req, &f.has_expect, &f.expect)) return;
    if (f.has_expect && req->entity.base && req->entity.len > 0) {
        tided_send_error(req, 400, "bad_body", "rotate?expect=R takes no body: send the keep-list first by "
                         "POST /v1/admin/keep; nothing was rotated");
        return;
    }
    if (read_keep_list(srv, req, &f.keys, &f.nkeys, "rotated") != 0) return;
    if (tided_queue_job(&srv->rotate_worker, req, guard, TIDED_JOB_ROTATE, "the rotation", 0, fill_rotate, &f)
        == NULL)
        free(f.keys);
}

void tided_api_admin_keep(tided_server *srv, h2o_req_t *req, tided_guard *guard)
{
    rotate_fill f = { 0 };

    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"))) {
        tided_send_not_allowed(req, "POST");
        return;
    }
    if (!tided_admin_authorized(srv, req)) return;
    if (tided_parse_query(req, NULL)) return;
    if (read_keep_list(srv, req, &f.keys, &f.nkeys, "copied") != 0) return;
    f.keep_only = 1;
    if (tided_queue_job(&srv->rotate_worker, req, guard, TIDED_JOB_ROTATE, "the keep-list", 0, fill_rotate, &f)
        == NULL)
        free(f.keys);
}

/* A keep piece's answer: what it copied and the count it copied at. */
static void answer_keep(tided_job *job)
{
    const tide_node_rotation_report *r = &job->u.rotate.rotation;
    json_t *j;

    if (job->rc == 0) {
        tided_send_json(job->req, 200, json_pack("{s:I,s:I,s:I,s:I,s:I}", "keys", (json_int_t)r->keep_keys,
                                                 "copied", (json_int_t)r->keep_copied,
                                                 "missing", (json_int_t)r->keep_missing,
                                                 "copied_bytes", (json_int_t)r->keep_copied_bytes,
                                                 "rotations", (json_int_t)job->u.rotate.rotations));
        return;
    }
    if (!job->u.rotate.gens_enabled) {
        tided_send_error(job->req, 409, "online_delete_off", "online delete is off: the data directory is one "
                         "plain store, with no generations to keep keys in: %s", job->detail);
        return;
    }
    j = tided_error_json("keep_failed", job->detail);
    if (j) {
        json_object_set_new(j, "keys", json_integer((json_int_t)r->keep_keys));
        json_object_set_new(j, "copied", json_integer((json_int_t)r->keep_copied));
    }
    tided_send_json(job->req, 500, j);
}

void tided_answer_rotate(tided_job *job)
{
    json_t *j;

    if (job->u.rotate.keep_only) {
        answer_keep(job);
        return;
    }
    if (job->rc == 0 && job->u.rotate.stale) {
        char d[256];
        snprintf(d, sizeof d, "the manifest's rotation count is %" PRIu64 ", not the expected %" PRIu64 ": a "
                 "rotation came since the keep-list was copied (its keys are in an older generation now); "
                 "send the keep-list again by POST /v1/admin/keep and retry with expect=%" PRIu64 "; nothing "
                 "was rotated", job->u.rotate.rotations, job->u.rotate.expect, job->u.rotate.rotations);
        j = tided_error_json("rotated_meanwhile", d);
        if (j) {
            json_object_set_new(j, "rotations", json_integer((json_int_t)job->u.rotate.rotations));
            json_object_set_new(j, "expected", json_integer((json_int_t)job->u.rotate.expect));
        }
        tided_send_json(job->req, 409, j);
        return;
    }
    if (job->rc == 0) {
        tided_send_json(job->req, 200, tided_rotation_report_json(&job->u.rotate.rotation));
        return;
    }
    if (!job->u.rotate.gens_enabled) {
        tided_send_error(job->req, 409, "online_delete_off", "online delete is off: the data directory is one "
                         "plain store, with no generations to rotate (start tided with --online-delete N or "
                         "manual): %s", job->detail);
        return;
    }
    if (job->rc == TIDE_EUNAVAIL) {
        /* A generation it would drop is not sealed in the archive yet. */
        j = tided_error_json("archive_not_sealed", job->detail);
        if (j) json_object_set_new(j, "report", tided_rotation_report_json(&job->u.rotate.rotation));
        h2o_add_header(&job->req->pool, &job->req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("5"));
        tided_send_json(job->req, 503, j);
        return;
    }
    j = tided_error_json("rotation_failed", job->detail);
    if (j) json_object_set_new(j, "report", tided_rotation_report_json(&job->u.rotate.rotation));
    tided_send_json(job->req, 500, j);
}

/* ---- /v1/admin/can_delete ------------------------------------------- */

/* The query of can_delete: nothing, or value=TEXT once. *value gets the
 * text (in the request's pool) or NULL. 0, or -1 after a 400. */
static int parse_value_query(h2o_req_t *req, const char **value)
{
    const char *at = NULL, *q;
    size_t n;

    *value = NULL;
    while (tided_query_next(req, &at, &q, &n)) {
        char *v;

        if (n < 6 || memcmp(q, "value=", 6) != 0) {
            tided_send_error(req, 400, "bad_query", "unknown query parameter '%s' (the only one is "
                             "value=N|never|always|now)", tided_req_text(req, q, n, 64));
            return -1;
        }
        if (*value != NULL) {
            tided_send_error(req, 400, "bad_query", "the query parameter 'value' is given twice; give it once");
            return -1;
        }
        v = h2o_mem_alloc_pool(&req->pool, n - 6 + 1);
        memcpy(v, q + 6, n - 6);
        v[n - 6] = '\0';
        *value = v;
    }
    return 0;
}

void tided_api_admin_can_delete(tided_server *srv, h2o_req_t *req)
{
    int post = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"));
    int get = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) || tided_is_head(req);
    const char *value;
    tide_gens_info gi;
    uint64_t now;

    if (!post && !get) {
        tided_send_not_allowed(req, "GET, HEAD, POST");
        return;
    }
    if (!tided_admin_authorized(srv, req)) return;
    if (parse_value_query(req, &value)) return;
    if (get && value) {
        tided_send_error(req, 400, "bad_query", "GET only reads can_delete; POST ?value=N|never|always|now sets it");
        return;
    }
    if (post && value == NULL) {
        tided_send_error(req, 400, "bad_query", "POST /v1/admin/can_delete needs ?value=N|never|always|now");
        return;
    }
    if (tide_node_can_delete(srv->node, value, &now) != 0) {
        tided_send_error(req, 400, "bad_value", "%s", tided_req_text(req, tide_last_error(),
                                                                      strlen(tide_last_error()), 256));
        return;
    }
    if (post) tide_log(TIDE_LOG_INFO, "can_delete set to %s (POST /v1/admin/can_delete)", value);
    tide_node_gens_info(srv->node, &gi);
    tided_send_json(req, 200, json_pack("{s:o,s:I,s:b,s:b}", "can_delete", can_delete_json(now),
                                        "rotations", (json_int_t)gi.rotations,
                                        "advisory_delete", tide_node_options(srv->node)->advisory_delete,
                                        "enabled", gi.enabled));
}
