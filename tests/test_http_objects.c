/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_http_objects.c: tided's object endpoint, /v1/objects/KEY, end to
 * end over real sockets: a PUT answered 201 and a second one 409, GET with
 * the value and its length, HEAD without a body, keys in either case of
 * hex, 404 for a key never stored, /healthz; every key size a store may
 * have (1 to 1000 bytes, each on a store `tide create` made) served by
 * PUT, GET and HEAD; and the same over the IPv6 loopback.
 *
 * The first group shares one server (http_helpers.h: a small
 * max_object_size and TIDE_ADMIN_TOKEN set); the key-size and IPv6 tests
 * start their own. What a malformed request gets is in test_http_errors.c.
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
#include <sys/wait.h>

#include "expect.h"
#include "helpers.h"
#include "http_helpers.h"

/* ---- the object endpoint on the shared server ---------------------------- */

static void healthz_answers_ok(void **state)
{
    resp r;
    (void)state;

    r = http(&shared, "GET", "/healthz", NULL, 0, 0, NULL);
    expect_status(r, 200, "GET /healthz");
    expect_str(r.body, "ok\n", "the /healthz body");
    resp_free(&r);
}

static void a_put_answers_201_and_a_second_put_of_the_same_key_409(void **state)
{
    resp r;
    (void)state;

    r = http(&shared, "PUT", obj_path(1, NULL), "first", 5, 0, NULL);
    expect_status(r, 201, "PUT of a new key");
    expect_contains(r.body, "\"bytes\":5", "the 201 body");
    resp_free(&r);
    r = http(&shared, "PUT", obj_path(1, NULL), "second", 6, 0, NULL);
    expect_status(r, 409, "PUT of a key already stored");
    expect_error_json(&r, "exists", "the 409 body");
    resp_free(&r);
    r = http(&shared, "GET", obj_path(1, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "GET after the refused second PUT");
    expect_str(r.body, "first", "the value kept after a 409");
    resp_free(&r);
}

static void a_get_returns_the_value_with_its_length_and_head_returns_no_body(void **state)
{
    uint8_t value[3000];
    resp r;
    (void)state;

    th_value(2, sizeof value, value);
    r = http(&shared, "PUT", obj_path(2, "?sync=0"), value, sizeof value, 0, NULL);
    expect_status(r, 201, "PUT of 3000 bytes");
    resp_free(&r);
    r = http(&shared, "GET", obj_path(2, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "GET of a stored key");
    expect_u64(r.len, sizeof value, "bytes of the GET body");
    if (memcmp(r.body, value, sizeof value) != 0) fail_msg("GET: the body differs from the value PUT");
    expect_contains(r.headers, "Content-Length: 3000", "GET headers");
    expect_contains(r.headers, "application/octet-stream", "GET content type");
    resp_free(&r);
    r = http(&shared, "HEAD", obj_path(2, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "HEAD of a stored key");
    expect_u64(r.len, 0, "bytes of a HEAD body");
    expect_contains(r.headers, "Content-Length: 3000", "HEAD headers");
    resp_free(&r);
}

static void keys_in_upper_case_hex_name_the_same_object(void **state)
{
    char k[65], path[128];
    resp r;
    (void)state;

    r = http(&shared, "PUT", obj_path(3, NULL), "case", 4, 0, NULL);
    expect_status(r, 201, "PUT in lower case");
    resp_free(&r);
    key_hex(3, k);
    for (char *p = k; *p; p++) if (*p >= 'a' && *p <= 'f') *p = (char)(*p - 'a' + 'A');
    snprintf(path, sizeof path, "/v1/objects/%s", k);
    r = http(&shared, "GET", path, NULL, 0, 0, NULL);
    expect_status(r, 200, "GET of the same key in upper case");
    expect_str(r.body, "case", "value by the upper-case key");
    resp_free(&r);
}

static void a_key_never_stored_is_404(void **state)
{
    resp r;
    (void)state;

    r = http(&shared, "GET", obj_path(999999, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "GET of a key never stored");
    expect_error_json(&r, "not_found", "the 404 body");
    resp_free(&r);
    r = http(&shared, "HEAD", obj_path(999999, NULL), NULL, 0, 0, NULL);
    expect_status(r, 404, "HEAD of a key never stored");
    resp_free(&r);
}

/* ---- tests with their own server: key sizes, IPv6 ------------------------ */

/* The server of a test that starts its own, which the test's teardown
 * (own_srv_teardown) stops whatever the outcome, so a failed assertion
 * never leaves a tided behind. */
static tided own_srv;

static int own_srv_teardown(void **state)
{
    tided_cleanup(&own_srv);
    return th_teardown(state);
}

/* `n` bytes of key(i) in lower-case hex, malloc'd. */
static char *key_hex_n(uint64_t i, unsigned n)
{
    static const char digits[] = "0123456789abcdef";
    uint8_t *k = malloc(n);
    char *hex = malloc(2 * (size_t)n + 1);

    assert_non_null(k);
    assert_non_null(hex);
    th_key(i, n, k);
    for (unsigned b = 0; b < n; b++) {
        hex[2 * b] = digits[k[b] >> 4];
        hex[2 * b + 1] = digits[k[b] & 15];
    }
    hex[2 * (size_t)n] = '\0';
    free(k);
    return hex;
}

/* "/v1/objects/" + the first `digits` characters of `hex` padded with
 * 'a' to `digits`, + `query`; malloc'd. */
static char *key_path(const char *hex, size_t digits, const char *query)
{
    size_t have = strlen(hex), q = query ? strlen(query) : 0;
    char *p = malloc(12 + digits + q + 1);

    assert_non_null(p);
    memcpy(p, "/v1/objects/", 12);
    for (size_t i = 0; i < digits; i++) p[12 + i] = i < have ? hex[i] : 'a';
    memcpy(p + 12 + digits, query ? query : "", q);
    p[12 + digits + q] = '\0';
    return p;
}

/* One store of `key_size`-byte keys made by `tide create`, served by tided. */
static void one_key_size_is_served(unsigned key_size)
{
    char cmd[1400], what[160], *out = NULL, *hex = key_hex_n(7, key_size), *hex2 = key_hex_n(8, key_size);
    size_t digits = 2 * (size_t)key_size;
    uint8_t value[1500];
    char *path;
    resp r;

    memset(&own_srv, 0, sizeof own_srv);
    tided_prepare(&own_srv);
    snprintf(cmd, sizeof cmd, "create '%s' --key-size %u", own_srv.data, key_size);
    if (th_run_tide(cmd, 1, &out) != 0)
        fail_msg("tide create --key-size %u should exit 0; it said: %s", key_size, out);
    free(out);
    tided_start(&own_srv, NULL, NULL);
    th_value(key_size, sizeof value, value);

    path = key_path(hex, digits, NULL);
    r = http(&own_srv, "PUT", path, value, sizeof value, 0, NULL);
    snprintf(what, sizeof what, "PUT of a %u-byte key (%zu hex digits)", key_size, digits);
    expect_status(r, 201, what);
    expect_contains(r.body, hex, what);   /* the 201 body names the whole key */
    resp_free(&r);
    r = http(&own_srv, "GET", path, NULL, 0, 0, NULL);
    snprintf(what, sizeof what, "GET of a %u-byte key", key_size);
    expect_status(r, 200, what);
    expect_u64(r.len, sizeof value, "bytes of the GET body");
    if (memcmp(r.body, value, sizeof value) != 0) fail_msg("%s: the body differs from the value PUT", what);
    resp_free(&r);
    r = http(&own_srv, "HEAD", path, NULL, 0, 0, NULL);
    snprintf(what, sizeof what, "HEAD of a %u-byte key", key_size);
    expect_status(r, 200, what);
    expect_contains(r.headers, "Content-Length: 1500", what);
    resp_free(&r);
    r = http(&own_srv, "PUT", path, value, 1, 0, NULL);
    snprintf(what, sizeof what, "a second PUT of a %u-byte key", key_size);
    expect_status(r, 409, what);
    expect_contains(r.body, hex, what);   /* so does the 409 detail */
    resp_free(&r);
    free(path);

    /* ?sync=1 hands the key to the sync worker and back. */
    path = key_path(hex2, digits, "?sync=1");
    r = http(&own_srv, "PUT", path, value, 10, 0, NULL);
    snprintf(what, sizeof what, "PUT ?sync=1 of a %u-byte key", key_size);
    expect_status(r, 201, what);
    expect_contains(r.body, "\"durable\":true", what);
    expect_contains(r.body, hex2, what);
    resp_free(&r);
    free(path);

    /* One digit short, one long, and a whole byte (two digits) long. */
    static const char *const methods[] = { "GET", "PUT", "HEAD" };
    for (int d = 0; d < 3; d++) {
        size_t len = d == 0 ? digits - 1 : d == 1 ? digits + 1 : digits + 2;
        if (len == 0) continue;
        path = key_path(hex, len, NULL);
        for (int m = 0; m < 3; m++) {
            r = http(&own_srv, methods[m], path, m == 1 ? "v" : NULL, m == 1 ? 1 : 0, 0, NULL);
            snprintf(what, sizeof what, "%s of a %zu-digit key on a store of %u-byte keys", methods[m], len,
                     key_size);
            expect_status(r, 400, what);
            if (m != 2) expect_error_json(&r, "bad_key", what);
            resp_free(&r);
        }
        free(path);
    }
    /* The request target limit grows with the key: a whole key and 256
     * bytes of query fit; one byte over the limit is 414. */
    {
        size_t limit = 12 + digits + 256 > 1024 ? 12 + digits + 256 : 1024;
        char *q = malloc(limit + 2);
        assert_non_null(q);
        memset(q, 'x', limit + 1);
        q[0] = '?';
        q[limit + 1 - 12 - digits] = '\0';           /* the target is limit + 1 bytes */
        path = key_path(hex, digits, q);
        r = http(&own_srv, "GET", path, NULL, 0, 0, NULL);
        snprintf(what, sizeof what, "GET of a %zu-byte target on a store of %u-byte keys", strlen(path), key_size);
        expect_status(r, 414, what);
        snprintf(q, limit + 2, "the most is %zu", limit);
        expect_contains(r.body, q, what);
        resp_free(&r);
        free(path);
        free(q);
    }
    r = http(&own_srv, "GET", "/healthz", NULL, 0, 0, NULL);
    snprintf(what, sizeof what, "GET /healthz after the bad keys (%u-byte store)", key_size);
    expect_status(r, 200, what);
    resp_free(&r);
    /* The value is still there, and nothing else was stored. */
    path = key_path(hex, digits, NULL);
    r = http(&own_srv, "GET", path, NULL, 0, 0, NULL);
    expect_status(r, 200, "GET of the key after the refused requests");
    expect_u64(r.len, sizeof value, "bytes after the refused requests");
    resp_free(&r);
    free(path);
    tided_signal_and_reap(&own_srv, SIGTERM);
    if (!WIFEXITED(own_srv.status) || WEXITSTATUS(own_srv.status) != 0)
        fail_msg("tided on a store of %u-byte keys should exit 0 on SIGTERM; log:\n%s", key_size,
                 log_tail(&own_srv));
    tided_cleanup(&own_srv);
    free(hex);
    free(hex2);
}

static void every_key_size_from_1_to_1000_bytes_is_served_by_put_get_and_head(void **state)
{
    static const unsigned sizes[] = { 1, 32, 255, 256, 257, 300, 506, 1000 };
    (void)state;

    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) one_key_size_is_served(sizes[i]);
}

static void tided_serves_ipv6_loopback(void **state)
{
    tided t;
    resp r;
    (void)state;

    if (free_port(AF_INET6) < 0) th_skip("this machine has no IPv6 loopback (::1)");
    memset(&t, 0, sizeof t);
    snprintf(t.host, sizeof t.host, "[::1]");
    tided_start(&t, NULL, NULL);
    r = http(&t, "PUT", obj_path(20, NULL), "six", 3, 0, NULL);
    expect_status(r, 201, "PUT over [::1]");
    resp_free(&r);
    r = http(&t, "GET", obj_path(20, NULL), NULL, 0, 0, NULL);
    expect_status(r, 200, "GET over [::1]");
    expect_str(r.body, "six", "the value over IPv6");
    resp_free(&r);
    if (!log_contains(&t, "listening on [::1]:")) fail_msg("the log should say 'listening on [::1]:PORT':\n%s",
                                                           log_tail(&t));
    tided_signal_and_reap(&t, SIGTERM);
    tided_cleanup(&t);
}

int main(void)
{
    const struct CMUnitTest shared_tests[] = {
        cmocka_unit_test(healthz_answers_ok),
        cmocka_unit_test(a_put_answers_201_and_a_second_put_of_the_same_key_409),
        cmocka_unit_test(a_get_returns_the_value_with_its_length_and_head_returns_no_body),
        cmocka_unit_test(keys_in_upper_case_hex_name_the_same_object),
        cmocka_unit_test(a_key_never_stored_is_404),
    };
    const struct CMUnitTest own_tests[] = {
        cmocka_unit_test(tided_serves_ipv6_loopback),
        cmocka_unit_test_teardown(every_key_size_from_1_to_1000_bytes_is_served_by_put_get_and_head,
                                  own_srv_teardown),
    };
    int failed;

    signal(SIGPIPE, SIG_IGN);
    http_filter_from_env();
    failed = th_run_group("tided objects, one shared server", shared_tests, group_setup, group_teardown, th_teardown);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    failed += th_run_group("tided objects, a server per test", own_tests, NULL, NULL, th_teardown);
    curl_global_cleanup();
    return failed;
}
