/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_util.c: the util module: error names and messages, hex, sizes, the
 * log, the clock.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "expect.h"
#include "helpers.h"
#include "tide/error.h"
#include "util/bigbuf.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/hex.h"
#include "util/log.h"
#include "util/random.h"
#include "util/size.h"

/* ---- error codes and messages --------------------------------------------- */

static void strerror_names_every_code_with_its_own_text(void **state)
{
    (void)state;
    for (int c = TIDE_ERROR_MIN; c <= 0; c = c == TIDE_ERROR_MAX ? 0 : c + 1) {
        const char *t = tide_strerror(c);
        if (t == NULL || t[0] == '\0')
            fail_msg("tide_strerror(%d): expected a name, got %s", c, t ? "\"\"" : "NULL");
        if (strcmp(t, "unknown error") == 0)
            fail_msg("tide_strerror(%d): expected a name of its own, got 'unknown error'", c);
        for (int d = TIDE_ERROR_MIN; d < c && d <= TIDE_ERROR_MAX; d++)
            if (strcmp(t, tide_strerror(d)) == 0)
                fail_msg("tide_strerror(%d) and tide_strerror(%d): expected different texts, "
                         "both are '%s'", d, c, t);
    }
}

static void strerror_calls_codes_outside_the_range_unknown(void **state)
{
    (void)state;
    expect_str(tide_strerror(TIDE_ERROR_MIN - 1), "unknown error", "tide_strerror(MIN - 1)");
    expect_str(tide_strerror(1), "unknown error", "tide_strerror(1)");
    expect_str(tide_strerror(-1000), "unknown error", "tide_strerror(-1000)");
    expect_str(tide_strerror(TIDE_ERROR_MAX + 1), "unknown error", "tide_strerror(MAX + 1)");
    expect_str(tide_strerror(-EIO), "unknown error", "tide_strerror(-EIO): a negative errno is no code");
    if (TIDE_ERROR_MAX >= -4096 || TIDE_ERROR_MIN > TIDE_ERROR_MAX)
        fail_msg("the codes %d..%d should lie below every negative errno (-4095 at most)", TIDE_ERROR_MIN,
                 TIDE_ERROR_MAX);
    expect_str(tide_strerror(INT32_MIN), "unknown error", "tide_strerror(INT_MIN)");
    expect_str(tide_strerror(TIDE_ENOTFOUND), "key not found", "tide_strerror(TIDE_ENOTFOUND)");
}

static void err_set_records_the_message_and_returns_the_code(void **state)
{
    (void)state;
    tide_err_clear();
    expect_str(tide_last_error(), "", "message after tide_err_clear");
    expect_rc(tide_err_set(TIDE_ECORRUPT, "nudb.key: offset %d: block size %d is below %d",
                           44, 0, 104), TIDE_ECORRUPT, "tide_err_set");
    expect_str(tide_last_error(), "nudb.key: offset 44: block size 0 is below 104",
               "message after tide_err_set");
}

static void err_prefix_puts_context_in_front_of_the_first_message(void **state)
{
    (void)state;
    tide_err_set(TIDE_EIO, "pread at offset 4096: short read");
    expect_rc(tide_err_prefix(TIDE_EIO, "%s", "nudb.dat"), TIDE_EIO, "tide_err_prefix");
    expect_str(tide_last_error(), "nudb.dat: pread at offset 4096: short read",
               "message after one prefix");
    tide_err_prefix(TIDE_EIO, "open %s", "./data");
    expect_str(tide_last_error(), "open ./data: nudb.dat: pread at offset 4096: short read",
               "message after two prefixes");
    tide_err_clear();
    tide_err_prefix(TIDE_EIO, "only context");
    expect_str(tide_last_error(), "only context", "prefix of an empty message");
}

static void err_set_may_quote_the_current_message(void **state)
{
    (void)state;
    tide_err_set(TIDE_EIO, "inner");
    tide_err_set(TIDE_EIO, "outer (%s)", tide_last_error());
    expect_str(tide_last_error(), "outer (inner)", "message that quotes itself");
}

static void err_cuts_a_long_message_and_marks_the_cut(void **state)
{
    char big[2000];

    (void)state;
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    tide_err_set(TIDE_EINVAL, "%s", big);
    size_t n = strlen(tide_last_error());
    if (n != 511)
        fail_msg("long message: expected 511 bytes kept, got %zu", n);
    expect_str(tide_last_error() + n - 3, "...", "end of a cut message");
    tide_err_prefix(TIDE_EINVAL, "ctx");
    n = strlen(tide_last_error());
    if (n != 511)
        fail_msg("long prefixed message: expected 511 bytes kept, got %zu", n);
    expect_contains(tide_last_error(), "ctx: xxx", "long prefixed message");
}

static void err_sys_appends_the_system_text_and_maps_errno(void **state)
{
    (void)state;
    expect_rc(tide_err_sys(ENOENT, "%s: open", "nudb.key"), TIDE_ENOENT, "tide_err_sys(ENOENT)");
    expect_str(tide_last_error(), "nudb.key: open: No such file or directory",
               "message from tide_err_sys");
    expect_rc(tide_err_sys(ENOSPC, "write"), TIDE_ENOSPC, "tide_err_sys(ENOSPC)");
}

static void err_from_errno_maps_the_listed_values(void **state)
{
    (void)state;
    expect_rc(tide_err_from_errno(ENOSPC), TIDE_ENOSPC, "ENOSPC");
    expect_rc(tide_err_from_errno(EDQUOT), TIDE_ENOSPC, "EDQUOT");
    expect_rc(tide_err_from_errno(ENOENT), TIDE_ENOENT, "ENOENT");
    expect_rc(tide_err_from_errno(ENOMEM), TIDE_ENOMEM, "ENOMEM");
    expect_rc(tide_err_from_errno(EEXIST), TIDE_EEXIST, "EEXIST");
    expect_rc(tide_err_from_errno(EWOULDBLOCK), TIDE_EBUSY, "EWOULDBLOCK");
    expect_rc(tide_err_from_errno(EACCES), TIDE_EACCES, "EACCES");
    expect_rc(tide_err_from_errno(EPERM), TIDE_EACCES, "EPERM");
    expect_rc(tide_err_from_errno(EROFS), TIDE_EROFS, "EROFS");
    expect_rc(tide_err_from_errno(EBADF), TIDE_EIO, "EBADF (any errno not listed)");
    expect_rc(tide_err_from_errno(0), TIDE_EIO, "0 (a failure whose errno was lost)");
}

/* ---- hex ------------------------------------------------------------------- */

static void hex_decode_reads_upper_and_lower_case(void **state)
{
    unsigned char out[8];
    size_t len = 99;

    (void)state;
    expect_rc(tide_hex_decode("00ffA5b7", out, sizeof out, &len), 0, "decode 00ffA5b7");
    expect_u64(len, 4, "decoded length of 00ffA5b7");
    if (out[0] != 0x00 || out[1] != 0xff || out[2] != 0xa5 || out[3] != 0xb7)
        fail_msg("decode 00ffA5b7: expected 00 ff a5 b7, got %02x %02x %02x %02x",
                 out[0], out[1], out[2], out[3]);
    expect_rc(tide_hex_decode("", out, sizeof out, &len), 0, "decode of empty text");
    expect_u64(len, 0, "decoded length of empty text");
}

static void hex_decode_fills_exactly_the_capacity(void **state)
{
    unsigned char out[4];
    size_t len = 0;

    (void)state;
    expect_rc(tide_hex_decode("01020304", out, sizeof out, &len), 0, "decode of 4 bytes into 4");
    expect_u64(len, 4, "decoded length");
}

static void hex_decode_rejects_an_odd_length_and_names_it(void **state)
{
    unsigned char out[8] = { 0xee };
    size_t len = 99;

    (void)state;
    tide_err_clear();
    expect_rc(tide_hex_decode("abc", out, sizeof out, &len), TIDE_EINVAL, "decode of abc");
    expect_contains(tide_last_error(), "odd length 3", "message for abc");
    expect_contains(tide_last_error(), "position 2", "message for abc");
    expect_u64(len, 99, "*len after a failed decode (expected untouched)");
    if (out[0] != 0xee)
        fail_msg("out after a failed decode: expected untouched 0xee, got 0x%02x", out[0]);
}

static void hex_decode_rejects_a_bad_digit_and_names_its_position(void **state)
{
    unsigned char out[8];
    size_t len;

    (void)state;
    expect_rc(tide_hex_decode("00g1", out, sizeof out, &len), TIDE_EINVAL, "decode of 00g1");
    expect_contains(tide_last_error(), "position 2", "message for 00g1");
    expect_contains(tide_last_error(), "'g'", "message for 00g1");
    expect_rc(tide_hex_decode("0 01", out, sizeof out, &len), TIDE_EINVAL, "decode of '0 01'");
    expect_contains(tide_last_error(), "position 1", "message for '0 01'");
    expect_rc(tide_hex_decode("0x01", out, sizeof out, &len), TIDE_EINVAL, "decode of 0x01");
    expect_contains(tide_last_error(), "position 1", "message for 0x01");
}

static void hex_decode_rejects_text_longer_than_the_capacity(void **state)
{
    unsigned char out[2];
    size_t len;

    (void)state;
    expect_rc(tide_hex_decode("010203", out, sizeof out, &len), TIDE_EINVAL,
              "decode of 3 bytes into 2");
    expect_contains(tide_last_error(), "too long", "message for 3 bytes into 2");
    expect_contains(tide_last_error(), "position 4", "message for 3 bytes into 2");
}

static void hex_encode_writes_lower_case_and_terminates(void **state)
{
    const unsigned char in[] = { 0x00, 0xff, 0xa5, 0x0b };
    char out[2 * sizeof in + 1];

    (void)state;
    memset(out, '#', sizeof out);
    tide_hex_encode(in, sizeof in, out);
    expect_str(out, "00ffa50b", "encode of 00 ff a5 0b");
    tide_hex_encode(in, 0, out);
    expect_str(out, "", "encode of nothing");
}

static void hex_round_trips_every_byte_value(void **state)
{
    unsigned char in[256], back[256];
    char text[513];
    size_t len;

    (void)state;
    for (int i = 0; i < 256; i++) in[i] = (unsigned char)i;
    tide_hex_encode(in, sizeof in, text);
    expect_rc(tide_hex_decode(text, back, sizeof back, &len), 0, "decode of encoded 0..255");
    expect_u64(len, 256, "round-trip length");
    if (memcmp(in, back, sizeof in) != 0)
        fail_msg("round trip of bytes 0..255: expected the same bytes back");
}

/* ---- sizes ----------------------------------------------------------------- */

static uint64_t parse_ok(const char *text)
{
    uint64_t v = 0;
    int rc = tide_size_parse(text, &v);
    if (rc != 0)
        fail_msg("tide_size_parse('%s'): expected success, got %d (%s): %s",
                 text, rc, tide_strerror(rc), tide_last_error());
    return v;
}

static void parse_fails(const char *text, const char *part)
{
    uint64_t v = 12345;
    int rc = tide_size_parse(text, &v);
    if (rc != TIDE_EINVAL)
        fail_msg("tide_size_parse('%s'): expected TIDE_EINVAL, got %d (value %" PRIu64 ")",
                 text, rc, v);
    if (v != 12345)
        fail_msg("tide_size_parse('%s'): expected *out untouched, got %" PRIu64, text, v);
    if (strstr(tide_last_error(), part) == NULL)
        fail_msg("tide_size_parse('%s'): expected a message containing '%s', got '%s'",
                 text, part, tide_last_error());
}

static void size_parse_reads_plain_bytes(void **state)
{
    (void)state;
    expect_u64(parse_ok("4096"), 4096, "4096");
    expect_u64(parse_ok("0"), 0, "0");
    expect_u64(parse_ok("  4096  "), 4096, "'  4096  '");
    expect_u64(parse_ok("12B"), 12, "12B");
    expect_u64(parse_ok("18446744073709551615"), UINT64_MAX, "UINT64_MAX");
}

static void size_parse_reads_decimal_units_as_powers_of_1000(void **state)
{
    (void)state;
    expect_u64(parse_ok("512MB"), 512000000ULL, "512MB");
    expect_u64(parse_ok("1KB"), 1000, "1KB");
    expect_u64(parse_ok("2GB"), 2000000000ULL, "2GB");
    expect_u64(parse_ok("3TB"), 3000000000000ULL, "3TB");
    expect_u64(parse_ok("512mb"), 512000000ULL, "512mb");
}

static void size_parse_reads_binary_units_and_bare_letters_as_powers_of_1024(void **state)
{
    (void)state;
    expect_u64(parse_ok("1GiB"), 1073741824ULL, "1GiB");
    expect_u64(parse_ok("1gib"), 1073741824ULL, "1gib");
    expect_u64(parse_ok("1G"), 1073741824ULL, "1G");
    expect_u64(parse_ok("64KiB"), 65536, "64KiB");
    expect_u64(parse_ok("64k"), 65536, "64k");
    expect_u64(parse_ok("512 MiB"), 512ULL << 20, "'512 MiB'");
    expect_u64(parse_ok("2T"), 2ULL << 40, "2T");
    expect_u64(parse_ok("16777215TiB"), 16777215ULL << 40, "16777215TiB");
}

static void size_parse_rejects_a_fraction(void **state)
{
    (void)state;
    parse_fails("1.5GiB", "fraction");
    parse_fails("0.5", "fraction");
}

static void size_parse_rejects_a_negative_number(void **state)
{
    (void)state;
    parse_fails("-1", "negative");
    parse_fails(" -512MB", "negative");
}

static void size_parse_rejects_more_than_uint64_bytes(void **state)
{
    (void)state;
    parse_fails("18446744073709551616", "more than 18446744073709551615 bytes");
    parse_fails("99999999999999999999999", "more than");
    parse_fails("16777216TiB", "more than");
    parse_fails("18446744073709552KB", "more than");
}

static void size_parse_rejects_garbage_and_names_it(void **state)
{
    (void)state;
    parse_fails("", "empty");
    parse_fails("   ", "empty");
    parse_fails("MB", "expected a digit");
    parse_fails("+5", "expected a digit");
    parse_fails("512XB", "unknown unit 'XB'");
    parse_fails("512 M B", "unexpected 'B'");
    parse_fails("512MB!", "unexpected '!'");
    parse_fails("1e6", "unknown unit 'e'");
    parse_fails("0x10", "unknown unit 'x'");
}

static void size_format_uses_the_largest_whole_binary_unit(void **state)
{
    char buf[32];

    (void)state;
    expect_str(tide_size_format(0, buf, sizeof buf), "0 B", "format 0");
    expect_str(tide_size_format(12, buf, sizeof buf), "12 B", "format 12");
    expect_str(tide_size_format(1023, buf, sizeof buf), "1023 B", "format 1023");
    expect_str(tide_size_format(1024, buf, sizeof buf), "1 KiB", "format 1024");
    expect_str(tide_size_format(512 * 1024, buf, sizeof buf), "512 KiB", "format 512 KiB");
    expect_str(tide_size_format(3ULL << 29, buf, sizeof buf), "1.5 GiB", "format 1.5 GiB");
    expect_str(tide_size_format(512000000ULL, buf, sizeof buf), "488.3 MiB", "format 512MB");
    expect_str(tide_size_format((1ULL << 20) - 1, buf, sizeof buf), "1.0 MiB",
               "format 1 MiB - 1 (rounds up into the next unit)");
    expect_str(tide_size_format(UINT64_MAX, buf, sizeof buf), "16.0 EiB", "format UINT64_MAX");
}

static void size_format_cuts_to_the_capacity(void **state)
{
    char buf[4];

    (void)state;
    expect_str(tide_size_format(512 * 1024, buf, sizeof buf), "512", "format into 4 bytes");
}

/* ---- log ------------------------------------------------------------------- */

static void log_level_parse_knows_the_five_names(void **state)
{
    (void)state;
    expect_rc(tide_log_level_parse("debug"), TIDE_LOG_DEBUG, "parse debug");
    expect_rc(tide_log_level_parse("info"), TIDE_LOG_INFO, "parse info");
    expect_rc(tide_log_level_parse("warn"), TIDE_LOG_WARN, "parse warn");
    expect_rc(tide_log_level_parse("error"), TIDE_LOG_ERROR, "parse error");
    expect_rc(tide_log_level_parse("off"), TIDE_LOG_OFF, "parse off");
    expect_rc(tide_log_level_parse("WARN"), TIDE_LOG_WARN, "parse WARN (any case)");
    expect_rc(tide_log_level_parse("verbose"), -1, "parse verbose");
    expect_rc(tide_log_level_parse(""), -1, "parse of empty text");
    expect_rc(tide_log_level_parse(NULL), -1, "parse of NULL");
    for (int l = TIDE_LOG_DEBUG; l <= TIDE_LOG_OFF; l++)
        expect_rc(tide_log_level_parse(tide_log_level_name(l)), l, "name then parse");
    expect_str(tide_log_level_name(42), "unknown", "name of level 42");
}

static void log_sends_one_line_per_call_at_or_above_the_level(void **state)
{
    th_log_capture c = { .calls = 0 };
    int saved = tide_log_get_level();

    (void)state;
    tide_log_set_sink(th_log_capture_sink, &c);
    tide_log_set_level(TIDE_LOG_WARN);
    tide_log(TIDE_LOG_INFO, "quiet %d", 1);
    if (c.calls != 0)
        fail_msg("info below warn: expected no line, got '%s'", c.line);
    errno = EAGAIN;
    tide_log(TIDE_LOG_WARN, "block size %d is not a power of two", 5000);
    if (errno != EAGAIN)
        fail_msg("errno after tide_log: expected EAGAIN kept, got %d", errno);
    if (c.calls != 1)
        fail_msg("warn at warn: expected 1 line, got %d", c.calls);
    expect_rc(c.level, TIDE_LOG_WARN, "level given to the sink");
    expect_contains(c.line, "Z WARN block size 5000 is not a power of two", "warn line");
    if (strlen(c.line) < 24 || c.line[4] != '-' || c.line[10] != 'T' || c.line[19] != '.')
        fail_msg("line: expected it to start with 2026-11-30T03:40:00.123Z, got '%s'", c.line);
    tide_log_set_level(TIDE_LOG_OFF);
    tide_log(TIDE_LOG_ERROR, "silenced");
    if (c.calls != 1)
        fail_msg("error at off: expected no new line, got '%s'", c.line);
    tide_log_set_sink(NULL, NULL);
    tide_log_set_level(saved);
}

/* ---- clock ----------------------------------------------------------------- */

static void sleep_waits_at_least_the_time_asked_and_the_clock_sees_it(void **state)
{
    (void)state;
    uint64_t t0 = tide_clock_mono_us();
    tide_clock_sleep_us(20000);
    uint64_t t1 = tide_clock_mono_us();
    if (t1 < t0 + 20000)
        fail_msg("sleep of 20000 us: expected at least 20000 us to pass, saw %" PRIu64,
                 t1 - t0);
}

static void random_bytes_fill_the_whole_buffer(void **state)
{
    unsigned char a[1000], b[1000];
    int zeros = 0;

    (void)state;
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    expect_rc(tide_random_bytes(a, sizeof a), 0, "tide_random_bytes(1000)");
    expect_rc(tide_random_bytes(b, sizeof b), 0, "tide_random_bytes(1000)");
    expect_rc(tide_random_bytes(a, 0), 0, "tide_random_bytes(0)");
    if (memcmp(a, b, sizeof a) == 0)
        fail_msg("two draws of 1000 random bytes: expected them to differ");
    for (size_t i = 900; i < sizeof a; i++) zeros += a[i] == 0;
    if (zeros > 20)
        fail_msg("last 100 random bytes: expected few zeros, got %d", zeros);
}

/* ---- bigbuf ---- */

typedef struct sort_item { uint64_t key, order; } sort_item;

static int cmp_sort_item(const void *a, const void *b)
{
    const sort_item *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

static void big_sort_orders_a_large_array_stably_like_a_merge_sort(void **state)
{
    size_t n = 200001;                 /* 3.2 MB: the mapped-scratch path */
    sort_item *v = malloc(n * sizeof *v);
    uint64_t s = 12345;
    (void)state;
    assert_non_null(v);
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        v[i].key = (s >> 33) % 5000;   /* many equal keys, to see stability */
        v[i].order = i;
    }
    assert_int_equal(tide_big_sort(v, n, sizeof *v, cmp_sort_item), 0);
    for (size_t i = 1; i < n; i++) {
        if (v[i - 1].key > v[i].key)
            fail_msg("element %zu: key %llu after %llu: expected ascending keys", i,
                     (unsigned long long)v[i].key, (unsigned long long)v[i - 1].key);
        if (v[i - 1].key == v[i].key && v[i - 1].order > v[i].order)
            fail_msg("element %zu: equal keys out of their original order (%llu after %llu): "
                     "expected a stable sort", i, (unsigned long long)v[i].order,
                     (unsigned long long)v[i - 1].order);
    }
    free(v);
}

static int cmp_u64_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void big_sort_of_a_small_array_sorts_it_in_place(void **state)
{
    uint64_t v[100];
    (void)state;
    for (int i = 0; i < 100; i++) v[i] = (uint64_t)((i * 7919) % 101);
    assert_int_equal(tide_big_sort(v, 100, sizeof *v, cmp_u64_value), 0);
    for (int i = 1; i < 100; i++)
        if (v[i - 1] > v[i]) fail_msg("element %d: %llu after %llu: expected ascending", i,
                                      (unsigned long long)v[i], (unsigned long long)v[i - 1]);
}

typedef struct wide_item { uint64_t key, order, pad; } wide_item;

static uint64_t key_of_sort_item(const void *e, const void *arg)
{
    (void)arg;
    return ((const sort_item *)e)->key;
}

static uint64_t key_of_wide_item(const void *e, const void *arg)
{
    (void)arg;
    return ((const wide_item *)e)->key;
}

/* v[0..n) (elements of `size` bytes, a key then an order) is ascending by
 * key, equal keys in their first order, and each order 0..n-1 once. */
static void expect_sorted_stably(const void *v, size_t n, size_t size, const char *what)
{
    uint8_t *seen = calloc(n ? n : 1, 1);
    const uint8_t *b = v;
    assert_non_null(seen);
    for (size_t i = 0; i < n; i++) {
        const uint64_t *e = (const uint64_t *)(b + i * size), *prev;
        if (e[1] >= n || seen[e[1]]++) fail_msg("%s: element %zu: order %llu twice or out of range", what, i,
                                                (unsigned long long)e[1]);
        if (i == 0) continue;
        prev = (const uint64_t *)(b + (i - 1) * size);
        if (prev[0] > e[0])
            fail_msg("%s: element %zu: key %llu after %llu: expected ascending keys", what, i,
                     (unsigned long long)e[0], (unsigned long long)prev[0]);
        if (prev[0] == e[0] && prev[1] > e[1])
            fail_msg("%s: element %zu: equal keys out of their first order (%llu after %llu)", what, i,
                     (unsigned long long)e[1], (unsigned long long)prev[1]);
    }
    free(seen);
}

/* Sizes around the insertion sort's bound and the mapped scratch's; keys
 * of 49 bits drawn from 5000 values (many equal: stability), of 64 bits,
 * and of 40 bits whose high digits are all the same (passes skipped). */
static void keyed_sort_orders_by_the_key_stably_at_every_size(void **state)
{
    static const size_t sizes[] = { 0, 1, 2, 5, 31, 32, 33, 1000, 4095, 200001 };
    static const unsigned bits[] = { 49, 64, 40 };
    uint64_t s = 777, pool[5000];
    char what[96];

    (void)state;
    for (size_t i = 0; i < 5000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        pool[i] = s >> 15;                  /* 49 bits */
    }
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
        for (size_t b = 0; b < sizeof bits / sizeof bits[0]; b++) {
            size_t n = sizes[z];
            sort_item *v = malloc((n ? n : 1) * sizeof *v);
            wide_item *w = malloc((n ? n : 1) * sizeof *w);
            assert_true(v && w);
            for (size_t i = 0; i < n; i++) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                uint64_t k = bits[b] == 49 ? pool[(s >> 33) % 5000]
                           : bits[b] == 64 ? s ^ (s << 7)
                           : (0x5Aull << 32) | ((s >> 40) & 0xfff);
                v[i] = (sort_item){ k, i };
                w[i] = (wide_item){ k, i, ~k };
            }
            snprintf(what, sizeof what, "%zu elements of 16 bytes, %u-bit keys", n, bits[b]);
            expect_rc(tide_big_sort_keyed(v, n, sizeof *v, bits[b], key_of_sort_item, NULL), 0, what);
            expect_sorted_stably(v, n, sizeof *v, what);
            snprintf(what, sizeof what, "%zu elements of 24 bytes, %u-bit keys", n, bits[b]);
            expect_rc(tide_big_sort_keyed(w, n, sizeof *w, bits[b], key_of_wide_item, NULL), 0, what);
            expect_sorted_stably(w, n, sizeof *w, what);
            for (size_t i = 0; i < n; i++)
                if (w[i].pad != ~w[i].key) fail_msg("%s: element %zu lost its third word", what, i);
            free(v);
            free(w);
        }
}

/* Pages of [p, p + n) in memory (mincore), of the pages there are. */
static size_t resident_pages(void *p, size_t n, size_t *pages)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), in = 0;
    unsigned char *vec;

    *pages = (n + page - 1) / page;
    vec = malloc(*pages);
    assert_non_null(vec);
    assert_int_equal(mincore(p, n, vec), 0);
    for (size_t i = 0; i < *pages; i++) in += vec[i] & 1;
    free(vec);
    return in;
}

/* Below 64 MiB (populated by the map) and above it (huge pages asked for,
 * then populated by madvise). */
static void a_resident_big_buffer_is_in_memory_before_its_first_touch_and_zeroed(void **state)
{
    static const size_t sizes[] = { 40 * 4096 + 100, (64u << 20) + 4096 };
    (void)state;

    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k], pages, in;
        uint8_t *lazy = tide_big_alloc(n), *now = tide_big_alloc_resident(n);

        assert_non_null(lazy);
        assert_non_null(now);
        in = resident_pages(lazy, n, &pages);
        if (in != 0)
            fail_msg("a plain big buffer of %zu bytes: expected no page in memory before a touch, got %zu of %zu",
                     n, in, pages);
        in = resident_pages(now, n, &pages);
        if (in != pages)
            fail_msg("a resident big buffer of %zu bytes: expected all %zu pages in memory at once, got %zu",
                     n, pages, in);
        for (size_t i = 0; i < n; i++)
            if (now[i] != 0) fail_msg("a resident big buffer: byte %zu is %u, expected zero", i, now[i]);
        memset(now, 0xab, n);
        tide_big_free(now, n);
        tide_big_free(lazy, n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_resident_big_buffer_is_in_memory_before_its_first_touch_and_zeroed),
        cmocka_unit_test(big_sort_orders_a_large_array_stably_like_a_merge_sort),
        cmocka_unit_test(big_sort_of_a_small_array_sorts_it_in_place),
        cmocka_unit_test(keyed_sort_orders_by_the_key_stably_at_every_size),
        cmocka_unit_test(strerror_names_every_code_with_its_own_text),
        cmocka_unit_test(strerror_calls_codes_outside_the_range_unknown),
        cmocka_unit_test(err_set_records_the_message_and_returns_the_code),
        cmocka_unit_test(err_prefix_puts_context_in_front_of_the_first_message),
        cmocka_unit_test(err_set_may_quote_the_current_message),
        cmocka_unit_test(err_cuts_a_long_message_and_marks_the_cut),
        cmocka_unit_test(err_sys_appends_the_system_text_and_maps_errno),
        cmocka_unit_test(err_from_errno_maps_the_listed_values),
        cmocka_unit_test(hex_decode_reads_upper_and_lower_case),
        cmocka_unit_test(hex_decode_fills_exactly_the_capacity),
        cmocka_unit_test(hex_decode_rejects_an_odd_length_and_names_it),
        cmocka_unit_test(hex_decode_rejects_a_bad_digit_and_names_its_position),
        cmocka_unit_test(hex_decode_rejects_text_longer_than_the_capacity),
        cmocka_unit_test(hex_encode_writes_lower_case_and_terminates),
        cmocka_unit_test(hex_round_trips_every_byte_value),
        cmocka_unit_test(size_parse_reads_plain_bytes),
        cmocka_unit_test(size_parse_reads_decimal_units_as_powers_of_1000),
        cmocka_unit_test(size_parse_reads_binary_units_and_bare_letters_as_powers_of_1024),
        cmocka_unit_test(size_parse_rejects_a_fraction),
        cmocka_unit_test(size_parse_rejects_a_negative_number),
        cmocka_unit_test(size_parse_rejects_more_than_uint64_bytes),
        cmocka_unit_test(size_parse_rejects_garbage_and_names_it),
        cmocka_unit_test(size_format_uses_the_largest_whole_binary_unit),
        cmocka_unit_test(size_format_cuts_to_the_capacity),
        cmocka_unit_test(log_level_parse_knows_the_five_names),
        cmocka_unit_test(log_sends_one_line_per_call_at_or_above_the_level),
        cmocka_unit_test(sleep_waits_at_least_the_time_asked_and_the_clock_sees_it),
        cmocka_unit_test(random_bytes_fill_the_whole_buffer),
    };
    return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
