/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_http_admin.c: tided's admin endpoints and the reports they leave,
 * over real sockets: POST /v1/admin/sweep and GET /v1/sweeps, GET
 * /v1/status, the online-delete endpoints (/v1/admin/rotate,
 * /v1/admin/keep, /v1/admin/can_delete, /v1/rotations) on a node without
 * generations and on one with them, and GET /v1/admin/heap under glibc
 * and under jemalloc. Every /v1/admin endpoint needs the bearer token
 * (TIDE_ADMIN_TOKEN): without it 401, with none configured 403, and the
 * token is never echoed or logged.
 *
 * The first group shares one server (http_helpers.h: TIDE_ADMIN_TOKEN
 * set, no online delete); the tests of a node with generations, of one
 * without a token and of jemalloc's heap dump start their own. The last
 * group starts a real one-machine Ceph cluster (tests/support/ceph.h) and
 * one node archiving into it, for /v1/status' "archive" object, and for
 * tide doctor and tide generations --archive-prefix against what a node
 * really writes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <limits.h>

#include "expect.h"
#include "helpers.h"
#include "http_helpers.h"
#include "support/ceph.h"

/* ---- the admin endpoints and the reports, on the shared server ----------- */

static json_t *body_json(const resp *r, const char *what)
{
    json_error_t e;
    json_t *j = json_loads(r->body, 0, &e);
    if (j == NULL) fail_msg("%s: expected a JSON body, got '%s'", what, r->body);
    return j;
}

static void admin_sweep_needs_the_bearer_token_and_returns_the_report(void **state)
{
    resp r;
    json_t *j;
    json_error_t e;
    (void)state;

    r = http(&shared, "POST", "/v1/admin/sweep", NULL, 0, 0, NULL);
    expect_status(r, 401, "POST /v1/admin/sweep without a token");
    expect_contains(r.headers, "www-authenticate: Bearer", "the 401 challenge");
    expect_error_json(&r, "unauthorized", "the 401 body");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/sweep", NULL, 0, 0, "Authorization: Bearer wrong-token-xyz");
    expect_status(r, 401, "POST /v1/admin/sweep with a wrong token");
    if (strstr(r.body, "wrong-token-xyz") || strstr(r.headers, "wrong-token-xyz"))
        fail_msg("the 401 answer echoes the token sent: '%s'", r.body);
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/sweep", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN "x");
    expect_status(r, 401, "POST /v1/admin/sweep with the token plus one character");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/sweep", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    expect_status(r, 200, "POST /v1/admin/sweep with the admin token");
    if (strstr(r.body, ADMIN_TOKEN)) fail_msg("the sweep report contains the admin token: %s", r.body);
    j = json_loads(r.body, 0, &e);
    if (j == NULL) fail_msg("the sweep report should be JSON, got '%s'", r.body);
    if (json_integer_value(json_object_get(j, "seq")) < 1)
        fail_msg("the sweep report should have seq >= 1, got '%s'", r.body);
    if (!json_is_integer(json_object_get(json_object_get(j, "trim"), "rss_before")))
        fail_msg("the sweep report should have trim.rss_before, got '%s'", r.body);
    json_decref(j);
    resp_free(&r);
    if (log_contains(&shared, ADMIN_TOKEN)) fail_msg("tided's log contains the admin token");
    /* The round is on the list of recent rounds, newest first. */
    r = http(&shared, "GET", "/v1/sweeps", NULL, 0, 0, NULL);
    expect_status(r, 200, "GET /v1/sweeps");
    j = json_loads(r.body, 0, &e);
    if (j == NULL || !json_is_array(json_object_get(j, "reports")) ||
        json_array_size(json_object_get(j, "reports")) < 1)
        fail_msg("/v1/sweeps should list at least the sweep just made, got '%s'", r.body);
    json_t *first = json_array_get(json_object_get(j, "reports"), 0);
    if (!json_is_integer(json_object_get(first, "freed_bytes")) ||
        !json_is_integer(json_object_get(json_object_get(first, "trim"), "duration_ns")))
        fail_msg("a report should carry freed_bytes and trim.duration_ns, got '%s'", r.body);
    /* The node cache's arena (on by default): its evacuation and release. */
    static const char *const arena_keys[] = { "rc", "segments", "moved_objects", "moved_entries", "moved_bytes",
                                              "released",
                                              "evacuate_ns", "release_ns" };
    for (size_t i = 0; i < sizeof arena_keys / sizeof arena_keys[0]; i++) {
        if (!json_is_integer(json_object_get(json_object_get(first, "arena"), arena_keys[i])))
            fail_msg("a report should carry arena.%s, got '%s'", arena_keys[i], r.body);
        if (!json_is_integer(json_object_get(json_object_get(first, "key_cache_arena"), arena_keys[i])))
            fail_msg("a report should carry key_cache_arena.%s, got '%s'", arena_keys[i], r.body);
    }
    json_decref(j);
    resp_free(&r);
}

static void status_reports_the_store_caches_memory_and_sweeps_as_json(void **state)
{
    static const char *const paths[][2] = {
        { "store", "block_size" }, { "store", "inserts" }, { "store", "fetches" }, { "store", "commits" },
        { "store", "dat_file_bytes" }, { "store", "key_file_bytes" }, { "node_cache", "hits" },
        { "node_cache", "bytes" }, { "key_cache", "entries" }, { "memory", "rss_bytes" },
        { "sweeps", "sweeps" }, { "http", "threads" }, { "requests", "puts" },
    };
    static const char *const accounts[] = { "node_cache", "key_cache", "store_insert_pool", "store_commit",
                                            "http" };
    json_error_t e;
    json_t *j, *acct;
    resp r;
    (void)state;

    r = http(&shared, "GET", "/v1/status", NULL, 0, 0, NULL);
    expect_status(r, 200, "GET /v1/status");
    j = json_loads(r.body, 0, &e);
    if (j == NULL) fail_msg("/v1/status should be JSON, got '%s'", r.body);
    if (!json_is_string(json_object_get(j, "version"))) fail_msg("/v1/status has no version: %s", r.body);
    if (!json_is_number(json_object_get(j, "uptime_seconds"))) fail_msg("/v1/status has no uptime: %s", r.body);
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (!json_is_integer(json_object_get(json_object_get(j, paths[i][0]), paths[i][1])))
            fail_msg("/v1/status should have the integer %s.%s, got '%s'", paths[i][0], paths[i][1], r.body);
    acct = json_object_get(json_object_get(j, "memory"), "accounts");
    for (size_t i = 0; i < sizeof accounts / sizeof accounts[0]; i++)
        if (!json_is_integer(json_object_get(acct, accounts[i])))
            fail_msg("/v1/status memory.accounts should have %s, got '%s'", accounts[i], r.body);
    expect_u64(json_integer_value(json_object_get(json_object_get(j, "http"), "threads")), 2,
               "http.threads with --http-threads=2");
    /* archive=off, the default: the member is there, and null. */
    if (json_object_get(j, "archive") == NULL || !json_is_null(json_object_get(j, "archive")))
        fail_msg("/v1/status archive should be null with archive=off, got '%s'", r.body);
    json_decref(j);
    resp_free(&r);
    /* store.keys: null until the count made at open is done (an empty store's
     * takes milliseconds), then the keys put so far. */
    double end = th_now_ms() + 10000;
    json_t *keys = NULL;
    do {
        r = http(&shared, "GET", "/v1/status", NULL, 0, 0, NULL);
        j = json_loads(r.body, 0, &e);
        keys = j ? json_object_get(json_object_get(j, "store"), "keys") : NULL;
        if (keys && json_is_integer(keys)) break;
        json_decref(j);
        j = NULL;
        resp_free(&r);
        poll(NULL, 0, 20);
    } while (th_now_ms() < end);
    if (j == NULL) fail_msg("/v1/status store.keys should become a number within 10 s");
    if (json_integer_value(keys) != json_integer_value(json_object_get(json_object_get(j, "requests"), "puts")))
        fail_msg("store.keys should equal the puts that stored on a fresh store: %s", r.body);
    json_decref(j);
    resp_free(&r);
}

static void rotate_needs_the_token_refuses_a_bad_body_and_is_409_without_generations(void **state)
{
    char body[300], k1[65], k2[65];
    resp r;
    (void)state;

    r = http(&shared, "GET", "/v1/admin/rotate", NULL, 0, 0, AUTH);
    expect_status(r, 405, "GET /v1/admin/rotate");
    expect_contains(r.headers, "allow: POST", "the Allow header");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/rotate", NULL, 0, 0, NULL);
    expect_status(r, 401, "POST /v1/admin/rotate without the token");
    expect_error_json(&r, "unauthorized", "the 401 body");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/rotate", NULL, 0, 0, "Authorization: Bearer nope");
    expect_status(r, 401, "POST /v1/admin/rotate with a wrong token");
    resp_free(&r);
    /* The token is checked before the query: a stranger's bad query is
     * not echoed back in a 400. */
    r = http(&shared, "POST", "/v1/admin/rotate?expect=x", NULL, 0, 0, NULL);
    expect_status(r, 401, "a bad ?expect= without the token");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/keep?bogus=1", NULL, 0, 0, NULL);
    expect_status(r, 401, "a bad keep query without the token");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/can_delete?value=bogus", NULL, 0, 0, NULL);
    expect_status(r, 401, "a bad can_delete value without the token");
    resp_free(&r);

    key_hex(1, k1);
    key_hex(2, k2);
    snprintf(body, sizeof body, "%s\n%sz\n", k1, k2);
    r = http(&shared, "POST", "/v1/admin/rotate", body, strlen(body), 0, AUTH "\nContent-Type: text/plain");
    expect_status(r, 400, "a keep-list with a bad second line");
    expect_error_json(&r, "bad_body", "the 400 body");
    expect_contains(r.body, "line 2 of the keep-list", "the bad line is named");
    expect_contains(r.body, "nothing was rotated", "and nothing was done");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/rotate", "0123\n", 5, 0, AUTH "\nContent-Type: text/plain; charset=utf-8");
    expect_status(r, 400, "a key of 4 hex digits");
    expect_contains(r.body, "line 1 of the keep-list, '0123', is not a key of 64 hex digits", "line 1");
    resp_free(&r);
    memset(body, 7, 33);
    r = http(&shared, "POST", "/v1/admin/rotate", body, 33, 0, AUTH "\nContent-Type: application/octet-stream");
    expect_status(r, 400, "33 raw bytes");
    expect_contains(r.body, "33 bytes is 1 keys and 1 bytes more", "the length is named");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/rotate", k1, 64, 0, AUTH "\nContent-Type: image/png");
    expect_status(r, 400, "another content type");
    expect_contains(r.body, "text/plain (hex keys, one per line) or application/octet-stream", "the types");
    resp_free(&r);

    /* Well formed, but this node has no generations. */
    snprintf(body, sizeof body, "\r\n  %s  \r\n\n", k1);
    r = http(&shared, "POST", "/v1/admin/rotate", body, strlen(body), 0, AUTH "\nContent-Type: text/plain");
    expect_status(r, 409, "POST /v1/admin/rotate on a plain store");
    expect_error_json(&r, "online_delete_off", "the 409 body");
    expect_contains(r.body, "--online-delete", "the 409 says how to turn it on");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/rotate", NULL, 0, 0, AUTH);
    expect_status(r, 409, "POST /v1/admin/rotate without a body on a plain store");
    resp_free(&r);
}

static void can_delete_reads_and_sets_the_allowance_and_refuses_bad_text(void **state)
{
    static const struct { const char *query; const char *want; json_int_t n; } set[] = {
        { "?value=5", NULL, 5 }, { "?value=always", "always", 0 }, { "?value=now", NULL, 1 },
        { "?value=never", "never", 0 },
    };
    char path[128];
    json_t *j;
    resp r;
    (void)state;

    r = http(&shared, "GET", "/v1/admin/can_delete", NULL, 0, 0, NULL);
    expect_status(r, 401, "GET /v1/admin/can_delete without the token");
    resp_free(&r);
    r = http(&shared, "GET", "/v1/admin/can_delete", NULL, 0, 0, AUTH);
    expect_status(r, 200, "GET /v1/admin/can_delete");
    j = body_json(&r, "can_delete");
    expect_str(json_string_value(json_object_get(j, "can_delete")), "never", "never after a start");
    expect_u64((uint64_t)json_integer_value(json_object_get(j, "rotations")), 0, "rotations");
    if (!json_is_false(json_object_get(j, "enabled"))) fail_msg("enabled should be false: %s", r.body);
    json_decref(j);
    resp_free(&r);
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++) {
        snprintf(path, sizeof path, "/v1/admin/can_delete%s", set[i].query);
        r = http(&shared, "POST", path, NULL, 0, 0, AUTH);
        expect_status(r, 200, path);
        j = body_json(&r, path);
        if (set[i].want) expect_str(json_string_value(json_object_get(j, "can_delete")), set[i].want, path);
        else expect_u64((uint64_t)json_integer_value(json_object_get(j, "can_delete")), (uint64_t)set[i].n, path);
        json_decref(j);
        resp_free(&r);
    }
    r = http(&shared, "POST", "/v1/admin/can_delete?value=soon", NULL, 0, 0, AUTH);
    expect_status(r, 400, "value=soon");
    expect_error_json(&r, "bad_value", "the 400 body");
    expect_contains(r.body, "'soon' is not a rotation count (0 to 2^53), never, always or now", "what is accepted");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/can_delete", NULL, 0, 0, AUTH);
    expect_status(r, 400, "POST without a value");
    resp_free(&r);
    r = http(&shared, "GET", "/v1/admin/can_delete?value=3", NULL, 0, 0, AUTH);
    expect_status(r, 400, "GET with a value");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/can_delete?value=1&value=2", NULL, 0, 0, AUTH);
    expect_status(r, 400, "value twice");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/can_delete?val=1", NULL, 0, 0, AUTH);
    expect_status(r, 400, "an unknown parameter");
    expect_error_json(&r, "bad_query", "bad_query");
    resp_free(&r);
    r = http(&shared, "GET", "/v1/admin/can_delete", NULL, 0, 0, AUTH);
    j = body_json(&r, "can_delete after the refusals");
    expect_str(json_string_value(json_object_get(j, "can_delete")), "never", "a refused value changed nothing");
    json_decref(j);
    resp_free(&r);
}

static void rotations_and_status_say_online_delete_is_off(void **state)
{
    json_t *j, *od;
    resp r;
    (void)state;

    r = http(&shared, "GET", "/v1/rotations", NULL, 0, 0, NULL);
    expect_status(r, 200, "GET /v1/rotations");
    j = body_json(&r, "/v1/rotations");
    if (!json_is_array(json_object_get(j, "reports")) || json_array_size(json_object_get(j, "reports")) != 0)
        fail_msg("/v1/rotations on a plain store should list no report: %s", r.body);
    if (!json_is_false(json_object_get(j, "enabled"))) fail_msg("enabled should be false: %s", r.body);
    json_decref(j);
    resp_free(&r);
    r = http(&shared, "POST", "/v1/rotations", NULL, 0, 0, NULL);
    expect_status(r, 405, "POST /v1/rotations");
    resp_free(&r);

    r = http(&shared, "GET", "/v1/status", NULL, 0, 0, NULL);
    j = body_json(&r, "/v1/status");
    od = json_object_get(j, "online_delete");
    if (!json_is_object(od) || !json_is_false(json_object_get(od, "enabled")))
        fail_msg("/v1/status should say online_delete.enabled false: %s", r.body);
    static const char *const ints[] = { "disk_bytes", "rotations", "newest_objects", "newest_bytes",
                                        "copied_forward", "older_lookups", "failures", "abandoned" };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (!json_is_integer(json_object_get(od, ints[i])))
            fail_msg("/v1/status online_delete.%s should be an integer: %s", ints[i], r.body);
    if (json_array_size(json_object_get(od, "generations")) != 1)
        fail_msg("a plain store is listed as one generation: %s", r.body);
    if (json_integer_value(json_object_get(od, "disk_bytes"))
        != json_integer_value(json_object_get(json_array_get(json_object_get(od, "generations"), 0), "bytes")))
        fail_msg("disk_bytes is the plain store's files: %s", r.body);
    if (!json_is_null(json_object_get(od, "last_rotation"))) fail_msg("no rotation yet: %s", r.body);
    json_decref(j);
    resp_free(&r);
}

static void admin_heap_needs_the_token_and_is_malloc_info_xml_under_glibc(void **state)
{
    resp r;
    (void)state;

    r = http(&shared, "GET", "/v1/admin/heap", NULL, 0, 0, NULL);
    expect_status(r, 401, "GET /v1/admin/heap without the token");
    expect_error_json(&r, "unauthorized", "the 401 body");
    resp_free(&r);
    r = http(&shared, "POST", "/v1/admin/heap", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    expect_status(r, 405, "POST /v1/admin/heap");
    expect_contains(r.headers, "allow: GET", "the 405's Allow");
    resp_free(&r);
    r = http(&shared, "GET", "/v1/admin/heap", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    if (tided_is_sanitized()) {
        expect_status(r, 501, "GET /v1/admin/heap under a sanitizer's allocator");
        expect_error_json(&r, "not_supported", "the 501 body");
        expect_contains(r.body, "sanitizer", "the 501 names the allocator");
    } else {
        expect_status(r, 200, "GET /v1/admin/heap under glibc");
        expect_contains(r.headers, "content-type: application/xml", "malloc_info's XML");
        if (strncmp(r.body, "<malloc", 7) != 0) fail_msg("malloc_info's XML starts with <malloc, got '%.80s'", r.body);
        expect_contains(r.body, "</malloc>", "the whole report");
    }
    resp_free(&r);
}

/* ---- tests with their own server: no admin token, online delete, jemalloc ---- */

static void admin_sweep_is_403_when_no_admin_token_is_configured(void **state)
{
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, NULL, NULL);
    r = http(&t, "POST", "/v1/admin/sweep", NULL, 0, 0, "Authorization: Bearer anything");
    expect_status(r, 403, "POST /v1/admin/sweep with no TIDE_ADMIN_TOKEN configured");
    expect_error_json(&r, "forbidden", "the 403 body");
    expect_contains(r.body, "TIDE_ADMIN_TOKEN", "the 403 detail says what to set");
    resp_free(&r);
    r = http(&t, "POST", "/v1/admin/rotate", NULL, 0, 0, "Authorization: Bearer anything");
    expect_status(r, 403, "POST /v1/admin/rotate with no TIDE_ADMIN_TOKEN configured");
    expect_error_json(&r, "forbidden", "the 403 body of rotate");
    resp_free(&r);
    r = http(&t, "GET", "/v1/admin/can_delete", NULL, 0, 0, "Authorization: Bearer anything");
    expect_status(r, 403, "GET /v1/admin/can_delete with no TIDE_ADMIN_TOKEN configured");
    resp_free(&r);
    r = http(&t, "GET", "/v1/admin/heap", NULL, 0, 0, "Authorization: Bearer anything");
    expect_status(r, 403, "GET /v1/admin/heap with no TIDE_ADMIN_TOKEN configured");
    expect_error_json(&r, "forbidden", "the 403 body of heap");
    resp_free(&r);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

static json_t *rotate_ok(const tided *t, const void *body, size_t len, const char *type, const char *what)
{
    char hdr[200];
    resp r;
    json_t *j;

    snprintf(hdr, sizeof hdr, AUTH "%s%s", type ? "\nContent-Type: " : "", type ? type : "");
    r = http(t, "POST", "/v1/admin/rotate", body, len, 0, hdr);
    expect_status(r, 200, what);
    j = body_json(&r, what);
    resp_free(&r);
    return j;
}

static json_int_t jint(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    if (b) v = json_object_get(v, b);
    if (!json_is_integer(v)) fail_msg("expected an integer at %s%s%s", a, b ? "." : "", b ? b : "");
    return json_integer_value(v);
}

static void admin_rotate_with_keep_lists_answers_every_field_and_deletes_the_rest(void **state)
{
    static char token_env[] = "TIDE_ADMIN_TOKEN=" ADMIN_TOKEN;
    static const char *flags[] = { "--online-delete=manual", "--back-off-milliseconds=0", "--delete-chunk=4096",
                                   NULL };
    static const char *const report_fields[] = { "seq", "started_unix_us", "trigger", "rc", "rc_name", "abandoned",
        "error", "gate_wait_ns", "keep_ns", "keep_keys", "keep_copied", "keep_missing", "keep_copied_bytes",
        "trim_ns", "trimmed", "trim_rc", "trim", "gens", "total_ns" };
    static const char *const gens_fields[] = { "started_unix_us", "new_id", "dropped_ids", "dropped",
        "deleted_bytes", "held_bytes", "delete_steps", "create_ns", "sync_ns", "flush_ns", "manifest_ns", "switch_ns",
        "drop_ns", "objects_in_previous", "rotations" };
    char *env[] = { token_env, NULL };
    uint8_t value[100], raw[32];
    char body[200], k1[65];
    json_t *j, *od;
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, flags, env);
    if (!log_contains(&t, "online delete: 2 generations, rotated only by"))
        fail_msg("the startup log should state the disk bound; it says:\n%s", log_tail(&t));
    for (uint64_t i = 1; i <= 3; i++) {
        th_value(i, sizeof value, value);
        r = http(&t, "PUT", obj_path(i, "?sync=1"), value, sizeof value, 0, NULL);
        expect_status(r, 201, "PUT in span 1");
        resp_free(&r);
    }
    key_hex(1, k1);
    snprintf(body, sizeof body, "%s\n", k1);
    j = rotate_ok(&t, body, strlen(body), "text/plain", "rotation 1 with key 1 to keep");
    for (size_t i = 0; i < sizeof report_fields / sizeof report_fields[0]; i++)
        if (json_object_get(j, report_fields[i]) == NULL) fail_msg("the report has no field %s", report_fields[i]);
    for (size_t i = 0; i < sizeof gens_fields / sizeof gens_fields[0]; i++)
        if (json_object_get(json_object_get(j, "gens"), gens_fields[i]) == NULL)
            fail_msg("the report's gens has no field %s", gens_fields[i]);
    expect_str(json_string_value(json_object_get(j, "trigger")), "admin", "trigger");
    expect_u64((uint64_t)jint(j, "keep_keys", NULL), 1, "one key handed over");
    expect_u64((uint64_t)jint(j, "keep_copied", NULL), 0, "key 1 was in the newest already");
    expect_u64((uint64_t)jint(j, "gens", "new_id"), 2, "generation 2 created");
    expect_u64((uint64_t)jint(j, "gens", "dropped"), 0, "nothing dropped yet");
    expect_u64((uint64_t)jint(j, "gens", "objects_in_previous"), 3, "three objects in generation 1");
    /* The node defers its index (store_index_lag's derived default): the
     * rotation indexed generation 1's tail, and that time is in sync_ns
     * even though nothing was dropped. */
    if (jint(j, "gens", "flush_ns") <= 0) fail_msg("flush_ns %lld: no flush timed", (long long)jint(j, "gens", "flush_ns"));
    if (jint(j, "gens", "sync_ns") < jint(j, "gens", "flush_ns"))
        fail_msg("sync_ns %lld < flush_ns %lld: the flush is part of sync_ns", (long long)jint(j, "gens", "sync_ns"),
                 (long long)jint(j, "gens", "flush_ns"));
    json_decref(j);

    /* A malformed keep-list rotates nothing. */
    r = http(&t, "POST", "/v1/admin/rotate", "zz\n", 3, 0, AUTH "\nContent-Type: text/plain");
    expect_status(r, 400, "a bad keep-list on a node with generations");
    resp_free(&r);

    th_key(2, 32, raw);
    j = rotate_ok(&t, raw, sizeof raw, "application/octet-stream", "rotation 2 keeping key 2 (raw)");
    expect_u64((uint64_t)jint(j, "seq", NULL), 2, "the second attempt: the bad body made none");
    expect_u64((uint64_t)jint(j, "keep_copied", NULL), 1, "key 2 copied forward");
    expect_u64((uint64_t)jint(j, "keep_copied_bytes", NULL), sizeof value, "its bytes");
    expect_u64((uint64_t)jint(j, "gens", "dropped"), 1, "generation 1 dropped");
    expect_u64((uint64_t)json_integer_value(json_array_get(json_object_get(json_object_get(j, "gens"), "dropped_ids"), 0)),
               1, "dropped_ids");
    if (!json_is_true(json_object_get(j, "trimmed"))) fail_msg("a drop is followed by a trim: %s", json_dumps(j, 0));
    if (jint(j, "gens", "deleted_bytes") <= 0) fail_msg("the drop deleted no bytes");
    expect_u64((uint64_t)jint(j, "gens", "held_bytes"), 0, "no reader held the dropped generation");
    json_decref(j);

    r = http(&t, "GET", obj_path(2, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "key 2, kept");
    resp_free(&r);
    r = http(&t, "GET", obj_path(3, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "key 3: written in span 1, untouched in span 2, cached by its PUT");
    resp_free(&r);
    r = http(&t, "GET", obj_path(1, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "key 1: kept at rotation 1 (already newest), untouched in span 2");
    resp_free(&r);

    r = http(&t, "GET", "/v1/rotations", NULL, 0, 0, NULL);
    j = body_json(&r, "/v1/rotations");
    expect_u64(json_array_size(json_object_get(j, "reports")), 2, "two reports");
    expect_u64((uint64_t)json_integer_value(json_object_get(json_array_get(json_object_get(j, "reports"), 0), "seq")),
               2, "newest first");
    if (!json_is_true(json_object_get(j, "enabled"))) fail_msg("enabled: %s", r.body);
    json_decref(j);
    resp_free(&r);

    r = http(&t, "GET", "/v1/status", NULL, 0, 0, NULL);
    j = body_json(&r, "/v1/status");
    od = json_object_get(j, "online_delete");
    if (!json_is_true(json_object_get(od, "enabled"))) fail_msg("online_delete.enabled: %s", r.body);
    expect_u64(json_array_size(json_object_get(od, "generations")), 2, "two generations");
    json_t *g0 = json_array_get(json_object_get(od, "generations"), 0), *g1 =
        json_array_get(json_object_get(od, "generations"), 1);
    expect_u64((uint64_t)jint(g0, "id", NULL), 3, "newest id");
    expect_u64((uint64_t)jint(g1, "id", NULL), 2, "older id");
    expect_str(json_string_value(json_object_get(g0, "dir")), "gen-000000000003", "its directory");
    expect_u64((uint64_t)jint(od, "disk_bytes", NULL), (uint64_t)(jint(g0, "bytes", NULL) + jint(g1, "bytes", NULL)),
               "disk_bytes is the generations' bytes");
    expect_u64((uint64_t)jint(od, "rotations", NULL), 2, "rotations");
    expect_u64((uint64_t)jint(od, "last_rotation", "seq"), 2, "last_rotation");
    expect_str(json_string_value(json_object_get(od, "can_delete")), "never", "can_delete");
    json_decref(j);
    resp_free(&r);
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* A keep-list in pieces: POST /v1/admin/keep twice (hex, then raw), each
 * answering the count it copied at; a stale rotate?expect is 409 and
 * rotates nothing; rotate?expect=R rotates; the kept keys survive the drop
 * and the untouched ones are gone. */
static void a_keep_list_in_pieces_then_rotate_expect_keeps_exactly_those_keys(void **state)
{
    static char token_env[] = "TIDE_ADMIN_TOKEN=" ADMIN_TOKEN;
    static const char *flags[] = { "--online-delete=manual", "--back-off-milliseconds=0", "--delete-chunk=4096",
                                   "--delete-batch=1", NULL };
    char *env[] = { token_env, NULL };
    uint8_t value[100], raw[32];
    char body[300], k1[65], k2[65];
    json_t *j;
    tided t;
    resp r;
    (void)state;

    memset(&t, 0, sizeof t);
    tided_start(&t, flags, env);
    for (uint64_t i = 1; i <= 6; i++) {
        th_value(i, sizeof value, value);
        r = http(&t, "PUT", obj_path(i, "?sync=1"), value, sizeof value, 0, NULL);
        expect_status(r, 201, "PUT in span 1");
        resp_free(&r);
    }
    json_decref(rotate_ok(&t, NULL, 0, NULL, "rotation 1: keys 1..6 now in the older generation"));

    r = http(&t, "POST", "/v1/admin/keep", NULL, 0, 0, NULL);
    expect_status(r, 401, "POST /v1/admin/keep without the token");
    resp_free(&r);
    r = http(&t, "GET", "/v1/admin/keep", NULL, 0, 0, AUTH);
    expect_status(r, 405, "GET /v1/admin/keep");
    resp_free(&r);
    r = http(&t, "POST", "/v1/admin/keep", "zz\n", 3, 0, AUTH "\nContent-Type: text/plain");
    expect_status(r, 400, "a bad piece");
    expect_contains(r.body, "nothing was copied", "a bad piece copies nothing");
    resp_free(&r);

    key_hex(1, k1);
    key_hex(2, k2);
    snprintf(body, sizeof body, "%s\n\n  %s\r\n", k1, k2);
    r = http(&t, "POST", "/v1/admin/keep", body, strlen(body), 0, AUTH "\nContent-Type: text/plain");
    expect_status(r, 200, "piece 1: keys 1 and 2 in hex");
    j = body_json(&r, "piece 1");
    expect_u64((uint64_t)jint(j, "keys", NULL), 2, "piece 1: two keys");
    expect_u64((uint64_t)jint(j, "copied", NULL), 2, "piece 1: both copied forward");
    expect_u64((uint64_t)jint(j, "missing", NULL), 0, "piece 1: none missing");
    expect_u64((uint64_t)jint(j, "copied_bytes", NULL), 2 * sizeof value, "piece 1: their bytes");
    expect_u64((uint64_t)jint(j, "rotations", NULL), 1, "piece 1: copied at rotation count 1");
    json_decref(j);
    resp_free(&r);

    uint8_t two[64];
    th_key(3, 32, two);
    th_key(99, 32, two + 32);                        /* in no generation */
    r = http(&t, "POST", "/v1/admin/keep", two, sizeof two, 0, AUTH "\nContent-Type: application/octet-stream");
    expect_status(r, 200, "piece 2: key 3 and a missing key, raw");
    j = body_json(&r, "piece 2");
    expect_u64((uint64_t)jint(j, "keys", NULL), 2, "piece 2: two keys");
    expect_u64((uint64_t)jint(j, "copied", NULL), 1, "piece 2: key 3 copied");
    expect_u64((uint64_t)jint(j, "missing", NULL), 1, "piece 2: key 99 missing");
    expect_u64((uint64_t)jint(j, "rotations", NULL), 1, "piece 2: the same count");
    json_decref(j);
    resp_free(&r);

    r = http(&t, "POST", "/v1/admin/rotate?expect=one", NULL, 0, 0, AUTH);
    expect_status(r, 400, "expect must be a count");
    resp_free(&r);
    (void)raw;
    r = http(&t, "POST", "/v1/admin/rotate?expect=1", k1, 64, 0, AUTH "\nContent-Type: text/plain");
    expect_status(r, 400, "rotate?expect takes no body");
    resp_free(&r);
    r = http(&t, "POST", "/v1/admin/rotate?expect=0", NULL, 0, 0, AUTH);
    expect_status(r, 409, "a stale expect");
    expect_error_json(&r, "rotated_meanwhile", "the stale expect's body");
    j = body_json(&r, "the 409");
    expect_u64((uint64_t)jint(j, "rotations", NULL), 1, "the 409 says the present count");
    expect_u64((uint64_t)jint(j, "expected", NULL), 0, "and the expected one");
    json_decref(j);
    resp_free(&r);
    r = http(&t, "GET", "/v1/status", NULL, 0, 0, NULL);
    j = body_json(&r, "/v1/status");
    expect_u64((uint64_t)jint(json_object_get(j, "online_delete"), "rotations", NULL), 1,
               "the stale expect rotated nothing");
    json_decref(j);
    resp_free(&r);

    r = http(&t, "POST", "/v1/admin/rotate?expect=1", NULL, 0, 0, AUTH);
    expect_status(r, 200, "rotate?expect=1");
    j = body_json(&r, "rotate?expect=1");
    expect_u64((uint64_t)jint(j, "gens", "dropped"), 1, "generation 1 dropped");
    expect_u64((uint64_t)jint(j, "gens", "rotations"), 2, "the count is 2");
    json_decref(j);
    resp_free(&r);
    for (uint64_t i = 1; i <= 6; i++) {
        r = http(&t, "GET", obj_path(i, NULL), NULL, 0, 0, NULL);
        expect_status(r, i <= 3 ? 200 : 404, i <= 3 ? "a kept key survives" : "an untouched key is gone");
        resp_free(&r);
    }
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* The scratch directory `dir` holds no entry (the dump file was removed). */
static void expect_empty_dir(const char *dir, const char *what)
{
    char cmd[700], out[4096];
    snprintf(cmd, sizeof cmd, "ls -A %s", dir);
    if (run_capture(cmd, out, sizeof out) != 0 || out[0] != '\0')
        fail_msg("%s: %s should be empty, holds: %s", what, dir, out);
}

static void admin_heap_under_jemalloc_is_a_prof_dump_with_profiling_and_409_without(void **state)
{
    static char preload[] = "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
    static char prof[] = "MALLOC_CONF=prof:true", admin[] = "TIDE_ADMIN_TOKEN=" ADMIN_TOKEN;
    char tmp[600], tmpdir[720];
    char *env_prof[] = { preload, prof, admin, tmpdir, NULL }, *env_off[] = { preload, admin, tmpdir, NULL };
    tided t;
    resp r;
    (void)state;

    if (access(preload + strlen("LD_PRELOAD="), R_OK) != 0)
        fail_msg("%s is missing: scripts/install-deps installs libjemalloc2", preload + strlen("LD_PRELOAD="));
    if (tided_is_sanitized()) th_skip("%s/tided is a sanitizer build", th_bin_dir());
    memset(&t, 0, sizeof t);
    tided_prepare(&t);
    th_path(tmp, sizeof tmp, t.dir, "tmp");
    assert_int_equal(mkdir(tmp, 0700), 0);
    snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", tmp);
    tided_start(&t, NULL, env_prof);
    r = http(&t, "GET", "/v1/admin/heap", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    expect_status(r, 200, "GET /v1/admin/heap under jemalloc with prof:true");
    expect_contains(r.headers, "content-type: application/octet-stream", "a prof.dump");
    if (strncmp(r.body, "heap_v2/", 8) != 0) fail_msg("a jemalloc heap profile starts with heap_v2/, got '%.80s'",
                                                      r.body);
    resp_free(&r);
    expect_empty_dir(tmp, "after the dump");
    tided_signal_and_reap(&t, SIGTERM);
    /* The dump goes under TMPDIR (so the empty-folder checks look where
     * it was): a missing TMPDIR is a 500 naming that folder. */
    {
        char missing[700];
        th_path(missing, sizeof missing, tmp, "missing");
        snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", missing);
        tided_start(&t, NULL, env_prof);
        r = http(&t, "GET", "/v1/admin/heap", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
        expect_status(r, 500, "GET /v1/admin/heap with TMPDIR a missing folder");
        expect_error_json(&r, "internal", "the 500 body");
        expect_contains(r.body, missing, "the 500 names the TMPDIR it could not write in");
        resp_free(&r);
        tided_signal_and_reap(&t, SIGTERM);
        snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", tmp);
    }
    tided_start(&t, NULL, env_off);
    r = http(&t, "GET", "/v1/admin/heap", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    expect_status(r, 409, "GET /v1/admin/heap under jemalloc without profiling");
    expect_error_json(&r, "profiling_off", "the 409 body");
    expect_contains(r.body, "MALLOC_CONF=prof:true", "the 409 says how to turn profiling on");
    resp_free(&r);
    expect_empty_dir(tmp, "after the 409");
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

/* ---- with an archive in a real Ceph cluster (tests/support/ceph.h) ----------- */

/* One cluster for the group, and one node on it with archive=rados,
 * started by the first test that needs it: two generations, the older
 * sealed in the archive. */
static th_ceph cluster;
static tided anode;
static char anode_conf[PATH_MAX + 32], anode_pool[96];

#define APREFIX "status1"

static int archive_group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    memset(&anode, 0, sizeof anode);
    return th_ceph_start(&cluster) < 0 ? -1 : 0;
}

static int archive_group_teardown(void **state)
{
    (void)state;
    if (anode.pid > 0 && !anode.reaped) {
        kill(anode.pid, SIGTERM);
        if (!wait_exit(&anode, STOP_MS)) kill(anode.pid, SIGKILL);
        wait_exit(&anode, STOP_MS);
    }
    tided_cleanup(&anode);
    th_children_stop(1);
    th_ceph_stop(&cluster);
    curl_global_cleanup();
    return 0;
}

/* generations[i] of /v1/status' archive, and its state ("" when absent). */
static const char *archive_gen_state(json_t *status, size_t i)
{
    const char *v = json_string_value(json_object_get(json_array_get(
        json_object_get(json_object_get(status, "archive"), "generations"), i), "state"));
    return v ? v : "";
}

/* The group's node, started once: 20 objects, a rotation (admin), and
 * PUT ?sync=1 until the archive has sealed generation 1 (a seal waits for
 * a sync after the generation's last day as the newest). */
static tided *archive_node(void)
{
    static char token_env[] = "TIDE_ADMIN_TOKEN=" ADMIN_TOKEN, public_env[] = "TIDE_METRICS_PUBLIC=1";
    const char *flags[] = { "--online-delete=manual", "--archive=rados", anode_conf, anode_pool,
                            "--archive-prefix=" APREFIX, "--archive-chunk=64KiB", NULL };
    char *env[] = { token_env, public_env, NULL };
    uint8_t value[300];
    json_t *j = NULL;
    resp r;

    th_ceph_require(&cluster);
    if (anode.pid > 0) return &anode;
    snprintf(anode_conf, sizeof anode_conf, "--archive-conf=%s", cluster.conf);
    snprintf(anode_pool, sizeof anode_pool, "--archive-pool=%s", cluster.pool);
    tided_start(&anode, flags, env);
    th_child_keep(anode.pid);
    th_scratch_keep(anode.dir);
    memset(value, 'a', sizeof value);
    for (uint64_t i = 1; i <= 20; i++) {
        r = http(&anode, "PUT", obj_path(i, i == 20 ? "?sync=1" : NULL), value, sizeof value, 0, NULL);
        expect_status(r, 201, "PUT into generation 1");
        resp_free(&r);
    }
    r = http(&anode, "POST", "/v1/admin/rotate", NULL, 0, 0, AUTH);
    expect_status(r, 200, "the rotation that makes generation 1 read-only");
    resp_free(&r);
    double end = th_now_ms() + 60000;
    for (uint64_t i = 100; th_now_ms() < end; i++) {
        r = http(&anode, "PUT", obj_path(i, "?sync=1"), value, sizeof value, 0, NULL);
        expect_status(r, 201, "PUT ?sync=1 into generation 2");
        resp_free(&r);
        r = http(&anode, "GET", "/v1/status", NULL, 0, 0, NULL);
        j = body_json(&r, "/v1/status");
        resp_free(&r);
        if (strcmp(archive_gen_state(j, 1), "sealed") == 0) break;
        json_decref(j);
        j = NULL;
        poll(NULL, 0, 200);
    }
    if (j == NULL) fail_msg("the archive did not seal generation 1 within 60 s. The log:\n%s", log_tail(&anode));
    json_decref(j);
    return &anode;
}

/* /v1/status' archive: where it is, how a sync answers, that the cluster
 * answers, and each local generation's state, the sealed one with every
 * byte of its two files there. */
static void status_with_the_archive_says_where_it_is_and_each_generations_state(void **state)
{
    tided *t;
    json_t *j, *a, *od, *g;
    resp r;
    (void)state;

    t = archive_node();
    if (!log_contains(t, "archive: rados pool tide, prefix " APREFIX " (primary), conf "))
        fail_msg("the startup log should say where the archive is:\n%s", log_tail(t));
    r = http(t, "GET", "/v1/status", NULL, 0, 0, NULL);
    j = body_json(&r, "/v1/status");
    a = json_object_get(j, "archive");
    if (!json_is_object(a)) fail_msg("/v1/status archive should be an object with archive=rados: %s", r.body);
    expect_str(json_string_value(json_object_get(a, "pool")), cluster.pool, "archive.pool");
    expect_str(json_string_value(json_object_get(a, "prefix")), APREFIX, "archive.prefix");
    expect_str(json_string_value(json_object_get(a, "mode")), "primary", "archive.mode");
    expect_str(json_string_value(json_object_get(a, "sync")), "local", "archive.sync");
    if (!json_is_true(json_object_get(a, "up")) || !json_is_false(json_object_get(a, "conflict")))
        fail_msg("the cluster answers and no one else writes the prefix: %s", r.body);
    if (!json_is_null(json_object_get(a, "problem"))) fail_msg("archive.problem should be null: %s", r.body);
    static const char *const ints[] = { "lag_bytes", "sealed_generations", "archived_generations", "archive_bytes" };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (!json_is_integer(json_object_get(a, ints[i])))
            fail_msg("/v1/status archive.%s should be an integer: %s", ints[i], r.body);
    expect_u64((uint64_t)json_integer_value(json_object_get(a, "sealed_generations")), 1, "one generation sealed");
    expect_u64((uint64_t)json_integer_value(json_object_get(a, "archived_generations")), 2, "two listed");
    if (json_array_size(json_object_get(a, "generations")) != 2) fail_msg("two local generations: %s", r.body);
    g = json_array_get(json_object_get(a, "generations"), 0);
    expect_u64((uint64_t)json_integer_value(json_object_get(g, "id")), 2, "the newest first");
    if (strcmp(archive_gen_state(j, 0), "uploading") != 0 && strcmp(archive_gen_state(j, 0), "waiting") != 0)
        fail_msg("the writable generation is uploading or waiting, not %s: %s", archive_gen_state(j, 0), r.body);
    /* The sealed one: its nudb.dat and nudb.key whole in the archive. */
    g = json_array_get(json_object_get(a, "generations"), 1);
    od = json_array_get(json_object_get(json_object_get(j, "online_delete"), "generations"), 1);
    expect_u64((uint64_t)json_integer_value(json_object_get(g, "id")), 1, "the older");
    expect_u64((uint64_t)json_integer_value(json_object_get(g, "uploaded_bytes")),
               (uint64_t)(json_integer_value(json_object_get(od, "dat_file_bytes")) +
                          json_integer_value(json_object_get(od, "key_file_bytes"))),
               "a sealed generation's bytes in the archive are its two files'");
    expect_u64((uint64_t)json_integer_value(json_object_get(a, "archive_bytes")),
               (uint64_t)json_integer_value(json_object_get(g, "uploaded_bytes")), "archive_bytes: the sealed one's");
    json_decref(j);
    resp_free(&r);
}

/* The doctor on the node's real page: the family names it reads are the
 * node's, the archive's rules pass, and its section says where it is. */
static void tide_doctor_on_a_node_with_an_archive_judges_it_from_the_real_page(void **state)
{
    tided *t = archive_node();
    char cmd[200], *out = NULL;
    (void)state;

    snprintf(cmd, sizeof cmd, "doctor http://127.0.0.1:%d", t->port);
    if (th_run_tide(cmd, 0, &out) != 0) fail_msg("tide %s failed: %s", cmd, out ? out : "");
    expect_contains(out, "Archive: pool tide, prefix " APREFIX " (primary), archive_sync=local: the cluster answers; "
                    "no conflict.\n", "the archive's section");
    expect_contains(out, "1 generation sealed of 2 listed", "what it holds");
    expect_contains(out, "archive_conflict, archive_up, archive_lag, archive_rotation_waits, archive_sync_failures.",
                    "every archive rule passed");
    if (strstr(out, "cannot tell archive_")) fail_msg("an archive family the doctor reads is not on the page:\n%s", out);
    free(out);
}

/* tide generations with the prefix reads the archive's manifest itself:
 * the older generation sealed, the newest open or absent. */
static void tide_generations_with_the_prefix_says_what_the_archive_holds(void **state)
{
    tided *t = archive_node();
    char cmd[2 * PATH_MAX], *out = NULL;
    json_error_t e;
    json_t *j, *g;
    (void)state;

    snprintf(cmd, sizeof cmd, "generations --json %s --archive-prefix " APREFIX " --archive-conf %s "
             "--archive-pool %s", t->data, cluster.conf, cluster.pool);
    if (th_run_tide(cmd, 0, &out) != 0) fail_msg("tide %s failed: %s", cmd, out ? out : "");
    if ((j = json_loads(out, 0, &e)) == NULL) fail_msg("tide generations --json: not JSON: %s", out);
    if (!json_is_null(json_object_get(json_object_get(j, "archive"), "error")))
        fail_msg("the archive should have been read: %s", out);
    expect_u64((uint64_t)json_integer_value(json_object_get(json_object_get(j, "archive"), "sealed")), 1, "sealed");
    g = json_object_get(json_array_get(json_object_get(j, "generations"), 1), "archive");
    expect_str(json_string_value(json_object_get(g, "state")), "sealed", "the older generation");
    if (!json_is_true(json_object_get(g, "same_store"))) fail_msg("the node's own generation: %s", out);
    g = json_object_get(json_array_get(json_object_get(j, "generations"), 0), "archive");
    if (strcmp(json_string_value(json_object_get(g, "state")), "open") != 0 &&
        strcmp(json_string_value(json_object_get(g, "state")), "absent") != 0)
        fail_msg("the writable generation is open or absent: %s", out);
    if (json_array_size(json_object_get(json_object_get(j, "archive"), "not_held")) != 0)
        fail_msg("the directory holds every archived generation: %s", out);
    json_decref(j);
    free(out);
}

int main(void)
{
    const struct CMUnitTest shared_tests[] = {
        cmocka_unit_test(admin_sweep_needs_the_bearer_token_and_returns_the_report),
        cmocka_unit_test(rotate_needs_the_token_refuses_a_bad_body_and_is_409_without_generations),
        cmocka_unit_test(can_delete_reads_and_sets_the_allowance_and_refuses_bad_text),
        cmocka_unit_test(rotations_and_status_say_online_delete_is_off),
        cmocka_unit_test(status_reports_the_store_caches_memory_and_sweeps_as_json),
        cmocka_unit_test(admin_heap_needs_the_token_and_is_malloc_info_xml_under_glibc),
    };
    const struct CMUnitTest own_tests[] = {
        cmocka_unit_test(admin_sweep_is_403_when_no_admin_token_is_configured),
        cmocka_unit_test(admin_rotate_with_keep_lists_answers_every_field_and_deletes_the_rest),
        cmocka_unit_test(a_keep_list_in_pieces_then_rotate_expect_keeps_exactly_those_keys),
        cmocka_unit_test(admin_heap_under_jemalloc_is_a_prof_dump_with_profiling_and_409_without),
    };
    const struct CMUnitTest archive_tests[] = {
        cmocka_unit_test(status_with_the_archive_says_where_it_is_and_each_generations_state),
        cmocka_unit_test(tide_doctor_on_a_node_with_an_archive_judges_it_from_the_real_page),
        cmocka_unit_test(tide_generations_with_the_prefix_says_what_the_archive_holds),
    };
    int failed;

    signal(SIGPIPE, SIG_IGN);
    http_filter_from_env();
    failed = th_run_group("tided admin, one shared server", shared_tests, group_setup, group_teardown, th_teardown);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    failed += th_run_group("tided admin, a server per test", own_tests, NULL, NULL, th_teardown);
    curl_global_cleanup();
    failed += th_run_group("tided admin, with an archive in a real Ceph cluster", archive_tests, archive_group_setup,
                           archive_group_teardown, th_teardown);
    return failed;
}
