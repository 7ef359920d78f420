/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_http_errors.c: what tided answers a malformed request, over real
 * sockets: a key of the wrong length or not hex (400), an empty body or an
 * unknown query (400), a wrong method (405 with Allow) and an unknown path
 * (404), a body over max_object_size by Content-Length or by chunks and a
 * Content-Length over it before the body (413), a request target over
 * the limit (414), headers over h2o's limit and a broken chunked body
 * (400, and tided keeps serving), two Content-Lengths or Content-Length
 * with Transfer-Encoding (400, nothing after them read as a request),
 * bytes that are not UTF-8 in the path, the query or the method (each its
 * status, and JSON that escapes them), ?sync given twice or as anything
 * but 0 or 1; and the access log, which escapes request bytes to one line
 * of ASCII. Every refusal is checked to have stored nothing.
 *
 * Most tests share one server (http_helpers.h); requests curl will not
 * send go over raw sockets (raw_exchange, raw_json). The access-log test
 * starts its own server at log level debug.
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
#include <sys/socket.h>
#include <unistd.h>

#include "expect.h"
#include "helpers.h"
#include "http_helpers.h"

/* ---- malformed requests on the shared server ----------------------------- */

static void a_key_of_the_wrong_length_or_not_hex_is_400(void **state)
{
    char path[256], k[65];
    resp r;
    (void)state;

    key_hex(4, k);
    snprintf(path, sizeof path, "/v1/objects/%.62s", k);
    r = http(&shared, "GET", path, NULL, 0, 0, NULL);
    expect_status(r, 400, "GET with a 62-digit key");
    expect_error_json(&r, "bad_key", "the 400 body for a short key");
    resp_free(&r);
    snprintf(path, sizeof path, "/v1/objects/%s00", k);
    r = http(&shared, "PUT", path, "x", 1, 0, NULL);
    expect_status(r, 400, "PUT with a 66-digit key");
    resp_free(&r);
    k[10] = 'g';
    snprintf(path, sizeof path, "/v1/objects/%s", k);
    r = http(&shared, "PUT", path, "x", 1, 0, NULL);
    expect_status(r, 400, "PUT with a 'g' in the key");
    expect_contains(r.body, "character 11", "the 400 detail names the position");
    resp_free(&r);
    r = http(&shared, "GET", "/v1/objects/", NULL, 0, 0, NULL);
    expect_status(r, 400, "GET with an empty key");
    resp_free(&r);
}

static void a_put_with_an_empty_body_or_an_unknown_query_is_400(void **state)
{
    resp r;
    (void)state;

    r = http(&shared, "PUT", obj_path(5, NULL), NULL, 0, 0, NULL);
    expect_status(r, 400, "PUT with an empty body");
    expect_error_json(&r, "empty_value", "the 400 body for an empty value");
    resp_free(&r);
    r = http(&shared, "PUT", obj_path(5, "?synch=1"), "v", 1, 0, NULL);
    expect_status(r, 400, "PUT with a misspelt sync parameter");
    expect_error_json(&r, "bad_query", "the 400 body for an unknown parameter");
    resp_free(&r);
    r = http(&shared, "GET", obj_path(5, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "GET of the key the refused PUTs named");
    resp_free(&r);
}

static void a_wrong_method_is_405_with_allow_and_an_unknown_path_404(void **state)
{
    resp r;
    (void)state;

    r = http(&shared, "DELETE", obj_path(1, NULL), NULL, 0, 0, NULL);
    expect_status(r, 405, "DELETE of an object");
    expect_contains(r.headers, "allow: GET, HEAD, PUT", "the Allow header of /v1/objects");
    expect_error_json(&r, "method_not_allowed", "the 405 body");
    resp_free(&r);
    r = http(&shared, "POST", "/healthz", NULL, 0, 0, NULL);
    expect_status(r, 405, "POST /healthz");
    expect_contains(r.headers, "allow: GET, HEAD", "the Allow header of /healthz");
    resp_free(&r);
    r = http(&shared, "GET", "/v1/admin/sweep", NULL, 0, 0, NULL);
    expect_status(r, 405, "GET /v1/admin/sweep");
    expect_contains(r.headers, "allow: POST", "the Allow header of /v1/admin/sweep");
    resp_free(&r);
    r = http(&shared, "GET", "/v2/nothing", NULL, 0, 0, NULL);
    expect_status(r, 404, "GET of an unknown path");
    expect_error_json(&r, "not_found", "the 404 body of an unknown path");
    resp_free(&r);
}

static void a_body_over_max_object_size_is_413_by_content_length_and_by_chunks(void **state)
{
    uint8_t *big = calloc(1, MAX_OBJECT + 1);
    resp r;
    (void)state;

    assert_non_null(big);
    th_value(6, MAX_OBJECT + 1, big);
    r = http(&shared, "PUT", obj_path(6, NULL), big, MAX_OBJECT + 1, 0, NULL);
    expect_status(r, 413, "PUT of max_object_size + 1 bytes with Content-Length");
    expect_error_json(&r, "too_large", "the 413 body (Content-Length)");
    resp_free(&r);
    r = http(&shared, "PUT", obj_path(6, NULL), big, MAX_OBJECT + 1, 1, NULL);
    expect_status(r, 413, "PUT of max_object_size + 1 bytes, chunked");
    expect_error_json(&r, "too_large", "the 413 body (chunked)");
    resp_free(&r);
    r = http(&shared, "GET", obj_path(6, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "GET of the key whose PUTs were too large");
    resp_free(&r);
    /* Exactly max_object_size passes either way. */
    r = http(&shared, "PUT", obj_path(6, NULL), big, MAX_OBJECT, 1, NULL);
    expect_status(r, 201, "PUT of exactly max_object_size bytes, chunked");
    resp_free(&r);
    r = http(&shared, "PUT", obj_path(7, NULL), big, MAX_OBJECT, 0, NULL);
    expect_status(r, 201, "PUT of exactly max_object_size bytes with Content-Length");
    resp_free(&r);
    r = http(&shared, "GET", obj_path(6, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "GET of the chunked maximum");
    expect_u64(r.len, MAX_OBJECT, "bytes of the chunked maximum");
    if (memcmp(r.body, big, MAX_OBJECT) != 0) fail_msg("the chunked value came back different");
    resp_free(&r);
    free(big);
}

static void a_request_target_over_1024_bytes_is_414(void **state)
{
    char path[1100];
    resp r;
    (void)state;

    memset(path, 'a', sizeof path - 1);
    path[sizeof path - 1] = '\0';
    memcpy(path, "/v1/objects/", 12);
    r = http(&shared, "GET", path, NULL, 0, 0, NULL);
    expect_status(r, 414, "GET with a 1099-byte path");
    expect_error_json(&r, "uri_too_long", "the 414 body");
    resp_free(&r);
}

static void headers_over_h2os_limit_are_refused_and_tided_keeps_serving(void **state)
{
    size_t big = 500 * 1024, n = 0;
    char *req = malloc(big + 256), answer[4096];
    resp r;
    (void)state;

    n += (size_t)sprintf(req, "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: ");
    memset(req + n, 'a', big);
    n += big;
    n += (size_t)sprintf(req + n, "\r\n\r\n");
    raw_exchange(&shared, req, n, answer, sizeof answer);
    free(req);
    if (strncmp(answer, "HTTP/1.1 400", 12) != 0)
        fail_msg("a 500 KiB header should get 400 (h2o's H2O_MAX_REQLEN is 417792 bytes), got '%.200s'",
                 answer);
    /* A broken chunked body is 400 too, and the body is JSON. */
    {
        char bad[256];
        int len = snprintf(bad, sizeof bad, "PUT %s HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                           "zz\r\n", obj_path(8, NULL));
        raw_exchange(&shared, bad, (size_t)len, answer, sizeof answer);
        expect_contains(answer, "HTTP/1.1 400", "a broken chunked body");
        expect_contains(answer, "{\"error\":\"bad_request\"", "the JSON body of h2o's own 400");
    }
    r = http(&shared, "GET", "/healthz", NULL, 0, 0, NULL);
    expect_status(r, 200, "GET /healthz after the malformed requests");
    resp_free(&r);
}

static void two_content_lengths_are_400_and_nothing_after_them_is_read(void **state)
{
    char req[1024], out[4096], k[65];
    const char *smuggled = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    int fd;
    resp r;
    (void)state;

    key_hex(900, k);
    /* All at once: h2o frames the body by the first header. */
    snprintf(req, sizeof req, "PUT /v1/objects/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
             "Content-Length: 40\r\n\r\nhello%s", k, smuggled);
    raw_exchange(&shared, req, strlen(req), out, sizeof out);
    expect_contains(out, "HTTP/1.1 400", "two Content-Length headers");
    expect_contains(out, "two Content-Length headers", "the 400's detail");
    if (strstr(out, "200 OK") || strstr(out, "\r\nok\n"))
        fail_msg("the bytes after the first Content-Length must not be served as a second request: '%s'", out);
    /* The head alone: answered before any body byte is sent. */
    key_hex(901, k);
    fd = connect_from(&shared, "127.0.0.5");
    snprintf(req, sizeof req, "PUT /v1/objects/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
             "content-length: 5\r\n\r\n", k);
    send_all(fd, req, strlen(req));
    if (!read_until_closed(fd, out, sizeof out, 30000))
        fail_msg("a head with two Content-Length headers should be answered and closed without its body");
    close(fd);
    expect_contains(out, "HTTP/1.1 400", "two Content-Length headers, head only");
    expect_contains(out, "\"error\":\"bad_request\"", "the 400 is JSON");
    /* Content-Length and Transfer-Encoding together. */
    snprintf(req, sizeof req, "PUT /v1/objects/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
             "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", k);
    raw_exchange(&shared, req, strlen(req), out, sizeof out);
    expect_contains(out, "HTTP/1.1 400", "Content-Length with Transfer-Encoding");
    expect_contains(out, "both Content-Length and Transfer-Encoding", "the 400's detail");
    key_hex(900, k);
    snprintf(req, sizeof req, "/v1/objects/%s", k);
    r = http(&shared, "GET", req, NULL, 0, 0, NULL);
    expect_status(r, 404, "a refused PUT stored nothing");
    resp_free(&r);
    key_hex(901, k);
    snprintf(req, sizeof req, "/v1/objects/%s", k);
    r = http(&shared, "GET", req, NULL, 0, 0, NULL);
    expect_status(r, 404, "a refused PUT stored nothing");
    resp_free(&r);
}

static void a_content_length_over_max_object_size_is_413_before_the_body(void **state)
{
    char req[512], out[4096], k[65];
    int fd;
    (void)state;

    key_hex(902, k);
    fd = connect_from(&shared, "127.0.0.6");
    snprintf(req, sizeof req, "PUT /v1/objects/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", k,
             MAX_OBJECT + 1);
    send_all(fd, req, strlen(req));
    if (!read_until_closed(fd, out, sizeof out, 30000))
        fail_msg("Content-Length max_object_size + 1 should be answered 413 and closed before the body is "
                 "sent; nothing came in 30 s");
    close(fd);
    expect_contains(out, "HTTP/1.1 413", "Content-Length max_object_size + 1, head only");
    expect_contains(out, "\"error\":\"too_large\"", "the 413 is JSON");
    expect_contains(out, "Connection: close", "the 413 closes the connection");
}

/* ---- bytes that are not UTF-8, the query --------------------------------- */

/* One raw request `head` (the request line and headers, ending in CRLF,
 * without the blank line; "Connection: close" is added) with `body`.
 * Returns the status and puts the parsed JSON body in *j (NULL when the
 * body is not JSON: jansson refuses text that is not UTF-8, so a parse is
 * also a check of that). */
static int raw_json(const tided *t, const char *head, size_t head_len, const char *body, json_t **j, char *answer,
                    size_t cap)
{
    char req[4096];
    size_t n = 0, blen = body ? strlen(body) : 0;
    int status = 0;
    const char *b;
    json_error_t e;

    assert_true(head_len + blen + 64 < sizeof req);
    memcpy(req, head, head_len);
    n = head_len;
    n += (size_t)snprintf(req + n, sizeof req - n, "Host: t\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n",
                          blen);
    memcpy(req + n, body ? body : "", blen);
    n += blen;
    raw_exchange(t, req, n, answer, cap);
    if (sscanf(answer, "HTTP/1.%*d %d", &status) != 1) status = -1;
    b = strstr(answer, "\r\n\r\n");
    *j = b ? json_loads(b + 4, 0, &e) : NULL;
    return status;
}

/* The request `head` gets `want` and {"error":code,"detail":...} whose
 * detail contains `part` (NULL: anything). */
static void expect_raw_error(const char *head, size_t head_len, const char *body, int want, const char *code,
                             const char *part, const char *what)
{
    char answer[8192];
    json_t *j = NULL;
    int status = raw_json(&shared, head, head_len, body, &j, answer, sizeof answer);
    const char *got = json_string_value(json_object_get(j, "error"));
    const char *detail = json_string_value(json_object_get(j, "detail"));

    if (status != want || got == NULL || strcmp(got, code) != 0 || detail == NULL
        || (part && strstr(detail, part) == NULL)) {
        json_decref(j);
        fail_msg("%s: expected HTTP %d with a UTF-8 JSON body {\"error\":\"%s\",\"detail\":\"...%s...\"}, got "
                 "HTTP %d: '%.600s'", what, want, code, part ? part : "", status, answer);
    }
    json_decref(j);
}

#define RAW(s) s, sizeof s - 1

static void bytes_that_are_not_utf8_in_path_query_or_method_get_their_status_and_escaped_json(void **state)
{
    char head[512], k[65];
    int n;
    resp r;
    (void)state;

    /* The path: an unknown one is 404, a key with such a byte 400. */
    expect_raw_error(RAW("GET /v2/\xff\xfe/x HTTP/1.1\r\n"), NULL, 404, "not_found", "/v2/\\xff\\xfe/x",
                     "GET of a path holding bytes 0xff 0xfe");
    expect_raw_error(RAW("GET /caf\xc3\xa9\\ HTTP/1.1\r\n"), NULL, 404, "not_found", "/caf\\xc3\\xa9\\x5c",
                     "GET of a path in UTF-8 with a backslash (every byte outside printable ASCII is escaped)");
    key_hex(40, k);
    n = snprintf(head, sizeof head, "GET /v1/objects/%.63s\xe9 HTTP/1.1\r\n", k);
    expect_raw_error(head, (size_t)n, NULL, 400, "bad_key", "'\\xe9'", "GET of a key ending in byte 0xe9");
    n = snprintf(head, sizeof head, "PUT /v1/objects/%.62s\xc3\xa9 HTTP/1.1\r\n", k);
    expect_raw_error(head, (size_t)n, "v", 400, "bad_key", "character 63", "PUT of a key ending in UTF-8 'é'");

    /* The query. */
    n = snprintf(head, sizeof head, "PUT /v1/objects/%s?sync=\xff HTTP/1.1\r\n", k);
    expect_raw_error(head, (size_t)n, "v", 400, "bad_query", "sync=\\xff", "PUT with ?sync=<0xff>");
    n = snprintf(head, sizeof head, "PUT /v1/objects/%s?\xc3\x28=1 HTTP/1.1\r\n", k);
    expect_raw_error(head, (size_t)n, "v", 400, "bad_query", "'\\xc3(", "PUT with a parameter named 0xc3 '('");
    expect_raw_error(RAW("GET /healthz?\x80 HTTP/1.1\r\n"), NULL, 400, "bad_query", "\\x80",
                     "GET /healthz with a query of byte 0x80");
    r = http(&shared, "GET", obj_path(40, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "GET of the key whose PUTs were refused");
    resp_free(&r);

    /* The method: not a token is 400; a token on a known path is 405, on
     * an unknown path 404. */
    expect_raw_error(RAW("G\xc9T /healthz HTTP/1.1\r\n"), NULL, 400, "bad_method", "G\\xc9T",
                     "method G<0xc9>T on /healthz");
    n = snprintf(head, sizeof head, "\xff\xfe /v1/objects/%s HTTP/1.1\r\n", k);
    expect_raw_error(head, (size_t)n, NULL, 400, "bad_method", "\\xff\\xfe", "method <0xff 0xfe> on an object");
    expect_raw_error(RAW("G(T /healthz HTTP/1.1\r\n"), NULL, 400, "bad_method", "G(T", "method G(T on /healthz");
    expect_raw_error(RAW("FETCH /healthz HTTP/1.1\r\n"), NULL, 405, "method_not_allowed", "FETCH",
                     "method FETCH on /healthz");
    expect_raw_error(RAW("FETCH /nothing/here HTTP/1.1\r\n"), NULL, 404, "not_found", "/nothing/here",
                     "method FETCH on an unknown path");
    r = http(&shared, "GET", "/healthz", NULL, 0, 0, NULL);
    expect_status(r, 200, "GET /healthz after the requests with bytes that are not UTF-8");
    resp_free(&r);
}

static void the_query_takes_sync_once_as_0_or_1_and_anything_else_is_400_naming_it(void **state)
{
    static const struct { const char *query, *part; } bad[] = {
        { "?sync=1&sync=0", "'sync' is given twice ('sync=1' and 'sync=0')" },
        { "?sync=0&sync=1", "given twice" },
        { "?sync=1&sync=1", "given twice" },
        { "?sync=", "not 'sync='" },
        { "?sync", "not 'sync'" },
        { "?sync=2", "'sync=2'" },
        { "?sync=11", "'sync=11'" },
        { "?sync=%31", "'sync=%31'" },            /* matched byte for byte: no percent-decoding */
        { "?%73ync=1", "unknown query parameter '%73ync'" },
        { "?SYNC=1", "unknown query parameter 'SYNC'" },
        { "?sync=1&x=1", "unknown query parameter 'x'" },
        { "?sync=1;x=1", "'sync=1;x=1'" },
        { "?=1", "unknown query parameter ''" },
    };
    char what[160];
    resp r;
    (void)state;

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = http(&shared, "PUT", obj_path(41, bad[i].query), "v", 1, 0, NULL);
        snprintf(what, sizeof what, "PUT %s", bad[i].query);
        expect_status(r, 400, what);
        expect_error_json(&r, "bad_query", what);
        expect_contains(r.body, bad[i].part, what);
        resp_free(&r);
    }
    r = http(&shared, "GET", obj_path(41, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "GET of the key every refused PUT named");
    resp_free(&r);

    /* Empty pieces are skipped: '?' alone, "&&", a trailing '&'. */
    r = http(&shared, "PUT", obj_path(41, "?"), "v", 1, 0, NULL);
    expect_status(r, 201, "PUT with '?' alone");
    expect_contains(r.body, "\"durable\":false", "PUT with '?' alone is not synced");
    resp_free(&r);
    r = http(&shared, "PUT", obj_path(42, "?&&sync=1&"), "v", 1, 0, NULL);
    expect_status(r, 201, "PUT ?&&sync=1&");
    expect_contains(r.body, "\"durable\":true", "PUT ?&&sync=1& is synced");
    resp_free(&r);
    r = http(&shared, "GET", obj_path(42, "?sync=1"), NULL, 0, 0, NULL);
    expect_status(r, 200, "GET ?sync=1 (accepted on every method of an object; a read ignores it)");
    resp_free(&r);

    /* The other endpoints take no parameter. */
    static const char *const none[] = { "/healthz?x=1", "/v1/status?sync=1", "/v1/sweeps?&a", "/metrics?q" };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        r = http(&shared, "GET", none[i], NULL, 0, 0, NULL);
        snprintf(what, sizeof what, "GET %s", none[i]);
        expect_status(r, 400, what);
        expect_error_json(&r, "bad_query", what);
        expect_contains(r.body, "this endpoint takes none", what);
        resp_free(&r);
    }
    r = http(&shared, "POST", "/v1/admin/sweep?now=1", NULL, 0, 0, "Authorization: Bearer " ADMIN_TOKEN);
    expect_status(r, 400, "POST /v1/admin/sweep?now=1");
    resp_free(&r);
    r = http(&shared, "GET", "/healthz?", NULL, 0, 0, NULL);
    expect_status(r, 200, "GET /healthz? (an empty query)");
    resp_free(&r);
}

/* ---- the access log, on a server of its own ------------------------------ */

/* The server of a test that starts its own, which the test's teardown
 * (own_srv_teardown) stops whatever the outcome, so a failed assertion
 * never leaves a tided behind. */
static tided own_srv;

static int own_srv_teardown(void **state)
{
    tided_cleanup(&own_srv);
    return th_teardown(state);
}

static void the_access_log_escapes_request_bytes_to_one_line_of_ascii(void **state)
{
    static const char *const flags[] = { "--log-level=debug", NULL };
    char answer[4096];
    uint8_t *all = NULL;
    size_t len = 0;
    json_t *j = NULL;
    int status;
    (void)state;

    memset(&own_srv, 0, sizeof own_srv);
    tided_start(&own_srv, flags, NULL);
    status = raw_json(&own_srv, RAW("GET /x\xff\xc3\xa9[31m\\ HTTP/1.1\r\n"), NULL, &j, answer, sizeof answer);
    if (status != 404 || j == NULL) fail_msg("GET of a path with bytes 0xff, 0xc3 0xa9 and a backslash: expected 404 JSON, got '%s'", answer);
    json_decref(j);
    tided_signal_and_reap(&own_srv, SIGTERM);
    assert_int_equal(th_read_file(own_srv.log, &all, &len), 0);
    all = realloc(all, len + 1);
    all[len] = '\0';
    for (size_t i = 0; i < len; i++)
        if ((all[i] < 0x20 && all[i] != '\n') || all[i] >= 0x7f) {
            size_t from = i > 80 ? i - 80 : 0;
            fail_msg("tided's log holds byte 0x%02x at %zu (request bytes must be escaped): '%.*s'",
                     all[i], i, (int)(i - from), (char *)all + from);
        }
    expect_contains((char *)all, "access: GET /x\\xff\\xc3\\xa9[31m\\x5c -> 404", "the access line");
    free(all);
    tided_cleanup(&own_srv);
}

int main(void)
{
    const struct CMUnitTest shared_tests[] = {
        cmocka_unit_test(a_key_of_the_wrong_length_or_not_hex_is_400),
        cmocka_unit_test(a_put_with_an_empty_body_or_an_unknown_query_is_400),
        cmocka_unit_test(a_wrong_method_is_405_with_allow_and_an_unknown_path_404),
        cmocka_unit_test(a_body_over_max_object_size_is_413_by_content_length_and_by_chunks),
        cmocka_unit_test(a_request_target_over_1024_bytes_is_414),
        cmocka_unit_test(headers_over_h2os_limit_are_refused_and_tided_keeps_serving),
        cmocka_unit_test(two_content_lengths_are_400_and_nothing_after_them_is_read),
        cmocka_unit_test(a_content_length_over_max_object_size_is_413_before_the_body),
        cmocka_unit_test(bytes_that_are_not_utf8_in_path_query_or_method_get_their_status_and_escaped_json),
        cmocka_unit_test(the_query_takes_sync_once_as_0_or_1_and_anything_else_is_400_naming_it),
    };
    const struct CMUnitTest own_tests[] = {
        cmocka_unit_test_teardown(the_access_log_escapes_request_bytes_to_one_line_of_ascii, own_srv_teardown),
    };
    int failed;

    signal(SIGPIPE, SIG_IGN);
    http_filter_from_env();
    failed = th_run_group("tided malformed requests, one shared server", shared_tests, group_setup, group_teardown,
                          th_teardown);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    failed += th_run_group("tided malformed requests, a server of its own", own_tests, NULL, NULL, th_teardown);
    curl_global_cleanup();
    return failed;
}
