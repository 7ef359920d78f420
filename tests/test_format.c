/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_format.c: the NuDB byte format as src/store/format.h encodes it.
 *
 * Checks the spec's test vectors (XXH64, pepper), the bucket index formula
 * on hand-computed cases, bucket capacity, the three headers (round trips,
 * byte positions, rejections with the offset named), bucket images
 * (round trip, check, lower bound), and finally the real headers and
 * buckets of the files NuDB wrote in tests/fixtures/nudb. Fixtures are only
 * read here, never written.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include "tide/error.h"
#include "store/format.h"
#include "helpers.h"
#include "expect.h"

/* ---- hashing ---- */

static void xxh64_of_the_empty_string_with_salt_0_is_0xef46db3751d8e999(void **state)
{
    uint64_t h;

    (void)state;
    h = ti_fmt_hash64("", 0, 0);
    if (h != 0xef46db3751d8e999ull)
        fail_msg("XXH64(\"\", 0, seed 0): expected 0xef46db3751d8e999, got 0x%016llx",
                 (unsigned long long)h);
}

static void hash64_agrees_with_libxxhash_and_hash48_keeps_the_top_48_bits(void **state)
{
    static const uint64_t salts[] = { 0, 1, 7, 42, 1234, 0x0123456789abcdefull, UINT64_MAX };
    uint8_t key[64];

    (void)state;
    for (size_t s = 0; s < sizeof salts / sizeof salts[0]; s++) {
        for (uint64_t i = 0; i < 200; i++) {
            unsigned ks = 1 + (unsigned)(i % 64);
            uint64_t want, got, h48;

            th_key(i, ks, key);
            want = XXH64(key, ks, salts[s]);
            got = ti_fmt_hash64(key, ks, salts[s]);
            if (got != want)
                fail_msg("key(%llu) of %u bytes, salt 0x%llx: expected XXH64 0x%016llx, got 0x%016llx",
                         (unsigned long long)i, ks, (unsigned long long)salts[s],
                         (unsigned long long)want, (unsigned long long)got);
            h48 = ti_fmt_hash48(key, ks, salts[s]);
            if (h48 != want >> 16)
                fail_msg("key(%llu), salt 0x%llx: expected 48-bit hash 0x%012llx, got 0x%llx",
                         (unsigned long long)i, (unsigned long long)salts[s],
                         (unsigned long long)(want >> 16), (unsigned long long)h48);
        }
    }
}

static void pepper_matches_the_spec_vectors_for_salts_0_42_and_0x0123456789abcdef(void **state)
{
    static const struct { uint64_t salt, pepper; } v[] = {
        { 0, 0x34c96acdcadb1bbbull },
        { 42, 0xa092f330c19ff2deull },
        { 0x0123456789abcdefull, 0x14f56b11fa95e5bcull },
    };

    (void)state;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint64_t got = ti_fmt_pepper(v[i].salt);
        if (got != v[i].pepper)
            fail_msg("pepper(salt 0x%llx): expected 0x%016llx, got 0x%016llx",
                     (unsigned long long)v[i].salt, (unsigned long long)v[i].pepper,
                     (unsigned long long)got);
    }
}

static void pepper_is_xxh64_of_the_salt_as_little_endian_bytes_seeded_with_the_salt(void **state)
{
    th_rng r;

    (void)state;
    th_rng_init(&r, 99);
    for (int i = 0; i < 1000; i++) {
        uint64_t salt = th_rng_next(&r), want, got;
        uint8_t le[8];

        for (int b = 0; b < 8; b++) le[b] = (uint8_t)(salt >> (8 * b));
        want = XXH64(le, 8, salt);
        got = ti_fmt_pepper(salt);
        if (got != want)
            fail_msg("pepper(salt 0x%016llx): expected 0x%016llx, got 0x%016llx",
                     (unsigned long long)salt, (unsigned long long)want,
                     (unsigned long long)got);
    }
}

/* ---- bucket index ---- */

struct index_case { uint64_t h, buckets, want; };

static void check_index_cases(const struct index_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t got = ti_fmt_bucket_index(c[i].h, c[i].buckets);
        if (got != c[i].want)
            fail_msg("bucket_index(h=%llu, buckets=%llu): expected %llu, got %llu",
                     (unsigned long long)c[i].h, (unsigned long long)c[i].buckets,
                     (unsigned long long)c[i].want, (unsigned long long)got);
    }
}

static void bucket_index_folds_a_hash_past_the_bucket_count_into_the_lower_half(void **state)
{
    /* buckets 10: modulus 16; n = h % 16; n >= 10 -> n - 8. */
    static const struct index_case c[] = {
        { 0, 10, 0 }, { 5, 10, 5 }, { 9, 10, 9 },
        { 10, 10, 2 }, { 12, 10, 4 }, { 15, 10, 7 },
        { 16, 10, 0 }, { 19, 10, 3 }, { 26, 10, 2 }, { 31, 10, 7 },
        { 0xffffffffffffull, 10, 7 },          /* % 16 = 15 -> 7 */
        /* buckets 3: modulus 4; n = 3 -> 1 */
        { 3, 3, 1 }, { 2, 3, 2 }, { 7, 3, 1 }, { 4, 3, 0 },
        /* buckets 5: modulus 8; 5,6,7 -> 1,2,3 */
        { 5, 5, 1 }, { 6, 5, 2 }, { 7, 5, 3 }, { 4, 5, 4 }, { 13, 5, 1 },
        /* buckets 114 (the spill fixture): modulus 128; 120 -> 56 */
        { 120, 114, 56 }, { 113, 114, 113 }, { 114, 114, 50 }, { 128 + 127, 114, 63 },
        /* buckets 71 (the crash fixture after recovery): modulus 128 */
        { 70, 71, 70 }, { 71, 71, 7 }, { 127, 71, 63 },
    };

    (void)state;
    check_index_cases(c, sizeof c / sizeof c[0]);
}

static void bucket_index_of_a_one_bucket_table_is_always_zero(void **state)
{
    static const struct index_case c[] = {
        { 0, 1, 0 }, { 1, 1, 0 }, { 2, 1, 0 }, { 12345, 1, 0 }, { 0xffffffffffffull, 1, 0 },
    };

    (void)state;
    check_index_cases(c, sizeof c / sizeof c[0]);
}

static void bucket_index_in_a_power_of_two_table_is_the_hash_modulo_the_count(void **state)
{
    static const struct index_case c[] = {
        { 3, 2, 1 }, { 4, 2, 0 }, { 13, 8, 5 }, { 8, 8, 0 }, { 1023, 1024, 1023 },
        { 1025, 1024, 1 }, { 0xffffffffffffull, 4096, 4095 }, { 0x123456789abcull, 65536, 0x9abc },
    };
    th_rng r;

    (void)state;
    check_index_cases(c, sizeof c / sizeof c[0]);
    th_rng_init(&r, 5);
    for (int i = 0; i < 10000; i++) {
        uint64_t h = th_rng_next(&r) >> 16;
        uint64_t buckets = 1ull << th_rng_below(&r, 40);
        uint64_t got = ti_fmt_bucket_index(h, buckets);
        if (got != h % buckets)
            fail_msg("bucket_index(h=0x%llx, buckets=%llu): expected h %% buckets = %llu, got %llu",
                     (unsigned long long)h, (unsigned long long)buckets,
                     (unsigned long long)(h % buckets), (unsigned long long)got);
    }
}

static void bucket_index_is_below_the_bucket_count_and_stable_when_the_table_grows_elsewhere(void **state)
{
    /* Linear hashing: growing from b to b + 1 buckets moves a key only from
     * bucket (b - modulus/2) [the split bucket] to bucket b. */
    th_rng r;

    (void)state;
    th_rng_init(&r, 6);
    for (int i = 0; i < 20000; i++) {
        uint64_t h = th_rng_next(&r) >> 16;
        uint64_t b = 1 + th_rng_below(&r, 5000);
        uint64_t before = ti_fmt_bucket_index(h, b);
        uint64_t after = ti_fmt_bucket_index(h, b + 1);
        uint64_t split = b - ti_fmt_ceil_pow2(b + 1) / 2;

        if (before >= b)
            fail_msg("bucket_index(h=0x%llx, buckets=%llu): expected < %llu, got %llu",
                     (unsigned long long)h, (unsigned long long)b,
                     (unsigned long long)b, (unsigned long long)before);
        if (after != before && !(before == split && after == b))
            fail_msg("growing %llu -> %llu buckets moved h=0x%llx from %llu to %llu; "
                     "expected it to stay or move from split bucket %llu to %llu",
                     (unsigned long long)b, (unsigned long long)(b + 1), (unsigned long long)h,
                     (unsigned long long)before, (unsigned long long)after,
                     (unsigned long long)split, (unsigned long long)b);
    }
}

static void ceil_pow2_rounds_up_to_the_next_power_of_two(void **state)
{
    static const uint64_t c[][2] = {
        { 1, 1 }, { 2, 2 }, { 3, 4 }, { 4, 4 }, { 5, 8 }, { 7, 8 }, { 9, 16 },
        { 10, 16 }, { 71, 128 }, { 114, 128 }, { 1000, 1024 }, { 1024, 1024 },
        { 1025, 2048 }, { (1ull << 40) + 1, 1ull << 41 }, { 1ull << 63, 1ull << 63 },
    };

    (void)state;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        uint64_t got = ti_fmt_ceil_pow2(c[i][0]);
        if (got != c[i][1])
            fail_msg("ceil_pow2(%llu): expected %llu, got %llu", (unsigned long long)c[i][0],
                     (unsigned long long)c[i][1], (unsigned long long)got);
    }
}

static void capacity_of_4096_8192_16384_32768_byte_blocks_is_227_454_909_1820(void **state)
{
    static const unsigned c[][2] = {
        { 4096, 227 }, { 8192, 454 }, { 16384, 909 }, { 32768, 1820 },
        { 512, 28 }, { 104, 5 }, { 65535, 3640 },
    };

    (void)state;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        unsigned got = ti_fmt_capacity(c[i][0]);
        if (got != c[i][1])
            fail_msg("capacity(block %u): expected %u entries, got %u", c[i][0], c[i][1], got);
    }
    assert_int_equal(ti_fmt_bucket_bytes(0), 8);
    assert_int_equal(ti_fmt_bucket_bytes(227), 8 + 18 * 227);
}

static void load_factor_raw_is_65536_times_the_fraction_capped_at_65535(void **state)
{
    static const struct { double lf; unsigned raw; } c[] = {
        { 0.5, 0x8000 }, { 0.95, 0xf333 }, { 1.0, 65535 }, { 0.25, 0x4000 },
    };

    (void)state;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        unsigned got = ti_fmt_load_factor_raw(c[i].lf);
        if (got != c[i].raw)
            fail_msg("load_factor_raw(%g): expected 0x%x, got 0x%x", c[i].lf, c[i].raw, got);
    }
}

/* ---- headers ---- */

static void dat_header_round_trips_and_puts_each_field_where_the_spec_says(void **state)
{
    tide_dat_header h = { .version = 2, .uid = 0x0102030405060708ull,
                          .appnum = 0x1112131415161718ull, .key_size = 0x2122 }, d;
    uint8_t buf[TIDE_DAT_HEADER_SIZE];
    int rc;

    (void)state;
    memset(buf, 0xAA, sizeof buf);
    ti_fmt_encode_dat_header(buf, &h);
    assert_memory_equal(buf, "nudb.dat", 8);
    assert_int_equal(ti_get16(buf + 8), 2);
    assert_int_equal(ti_get64(buf + 10), h.uid);
    assert_int_equal(ti_get64(buf + 18), h.appnum);
    assert_int_equal(ti_get16(buf + 26), h.key_size);
    for (int i = 28; i < TIDE_DAT_HEADER_SIZE; i++)
        if (buf[i] != 0) fail_msg("dat header byte %d (reserved): expected 0, got 0x%02x", i, buf[i]);
    memset(&d, 0, sizeof d);
    rc = ti_fmt_decode_dat_header(buf, &d, "nudb.dat");
    if (rc != 0) fail_msg("decode of an encoded dat header: expected 0, got %d (%s)", rc, tide_last_error());
    assert_int_equal(d.version, 2);
    assert_int_equal(d.uid, h.uid);
    assert_int_equal(d.appnum, h.appnum);
    assert_int_equal(d.key_size, h.key_size);
}

static void key_header_round_trips_and_puts_each_field_where_the_spec_says(void **state)
{
    tide_key_header h = { .version = 2, .uid = 0x7469646566697865ull, .appnum = 1,
                          .key_size = 32, .salt = 42, .pepper = 0xa092f330c19ff2deull,
                          .block_size = 4096, .load_factor = 0x8000 }, d;
    uint8_t buf[TIDE_KEY_HEADER_SIZE];
    int rc;

    (void)state;
    memset(buf, 0xAA, sizeof buf);
    ti_fmt_encode_key_header(buf, &h);
    assert_memory_equal(buf, "nudb.key", 8);
    assert_int_equal(ti_get16(buf + 8), 2);
    assert_int_equal(ti_get64(buf + 10), h.uid);
    assert_int_equal(ti_get64(buf + 18), h.appnum);
    assert_int_equal(ti_get16(buf + 26), 32);
    assert_int_equal(ti_get64(buf + 28), 42);
    assert_int_equal(ti_get64(buf + 36), h.pepper);
    assert_int_equal(ti_get16(buf + 44), 4096);
    assert_int_equal(ti_get16(buf + 46), 0x8000);
    for (int i = 48; i < TIDE_KEY_HEADER_SIZE; i++)
        if (buf[i] != 0) fail_msg("key header byte %d (reserved): expected 0, got 0x%02x", i, buf[i]);
    memset(&d, 0, sizeof d);
    rc = ti_fmt_decode_key_header(buf, &d, "nudb.key");
    if (rc != 0) fail_msg("decode of an encoded key header: expected 0, got %d (%s)", rc, tide_last_error());
    assert_int_equal(d.version, 2);
    assert_int_equal(d.uid, h.uid);
    assert_int_equal(d.appnum, h.appnum);
    assert_int_equal(d.key_size, h.key_size);
    assert_int_equal(d.salt, h.salt);
    assert_int_equal(d.pepper, h.pepper);
    assert_int_equal(d.block_size, h.block_size);
    assert_int_equal(d.load_factor, h.load_factor);
}

static void log_header_round_trips_and_puts_each_field_where_the_spec_says(void **state)
{
    tide_log_header h = { .version = 2, .uid = 0x7469646566697865ull, .appnum = 1,
                          .key_size = 32, .salt = 1234, .pepper = 0xb0fda3451f877ae7ull,
                          .block_size = 4096, .key_file_size = 294912,
                          .dat_file_size = 0x0000123456789abcull }, d;
    uint8_t buf[TIDE_LOG_HEADER_SIZE];
    int rc;

    (void)state;
    memset(buf, 0xAA, sizeof buf);
    ti_fmt_encode_log_header(buf, &h);
    assert_memory_equal(buf, "nudb.log", 8);
    assert_int_equal(ti_get16(buf + 8), 2);
    assert_int_equal(ti_get64(buf + 10), h.uid);
    assert_int_equal(ti_get64(buf + 18), 1);
    assert_int_equal(ti_get16(buf + 26), 32);
    assert_int_equal(ti_get64(buf + 28), 1234);
    assert_int_equal(ti_get64(buf + 36), h.pepper);
    assert_int_equal(ti_get16(buf + 44), 4096);
    assert_int_equal(ti_get64(buf + 46), 294912);
    assert_int_equal(ti_get64(buf + 54), h.dat_file_size);
    memset(&d, 0, sizeof d);
    rc = ti_fmt_decode_log_header(buf, &d, "nudb.log");
    if (rc != 0) fail_msg("decode of an encoded log header: expected 0, got %d (%s)", rc, tide_last_error());
    assert_int_equal(d.version, 2);
    assert_int_equal(d.uid, h.uid);
    assert_int_equal(d.appnum, h.appnum);
    assert_int_equal(d.key_size, h.key_size);
    assert_int_equal(d.salt, h.salt);
    assert_int_equal(d.pepper, h.pepper);
    assert_int_equal(d.block_size, h.block_size);
    assert_int_equal(d.key_file_size, h.key_file_size);
    assert_int_equal(d.dat_file_size, h.dat_file_size);
}

/* A deferred-index log: the pepper field holds the pepper XOR "TIDEIDLE",
 * which NuDB's check of the pepper against the salt refuses; decode takes
 * the mark off again. A NuDB header (true pepper) decodes unmarked. */
static void a_deferred_log_header_carries_the_mark_in_its_pepper_field(void **state)
{
    uint64_t salt = 42, pepper = ti_fmt_pepper(42);
    tide_log_header h = { .version = 2, .uid = 7, .appnum = 1, .key_size = 32, .salt = salt,
                          .pepper = pepper, .block_size = 4096, .key_file_size = 8192,
                          .dat_file_size = 92, .deferred = 1 }, d;
    uint8_t buf[TIDE_LOG_HEADER_SIZE];

    (void)state;
    ti_fmt_encode_log_header(buf, &h);
    assert_int_equal(ti_get64(buf + 36), pepper ^ 0x5449444549444c45ull);
    for (int b = 0; b < 8; b++)
        if (buf[36 + b] != (uint8_t)("TIDEIDLE"[b] ^ (uint8_t)(pepper >> (56 - 8 * b))))
            fail_msg("pepper byte %d: 0x%02x, expected the pepper's XOR '%c'", b, buf[36 + b],
                     "TIDEIDLE"[b]);
    assert_int_equal(ti_fmt_decode_log_header(buf, &d, "nudb.log"), 0);
    assert_int_equal(d.deferred, 1);
    assert_int_equal(d.pepper, pepper);
    h.deferred = 0;
    ti_fmt_encode_log_header(buf, &h);
    assert_int_equal(ti_get64(buf + 36), pepper);
    assert_int_equal(ti_fmt_decode_log_header(buf, &d, "nudb.log"), 0);
    assert_int_equal(d.deferred, 0);
    assert_int_equal(d.pepper, pepper);
}

/* Valid encoded headers of each kind, for the rejection tests. */
static void good_headers(uint8_t dat[TIDE_DAT_HEADER_SIZE], uint8_t key[TIDE_KEY_HEADER_SIZE],
                         uint8_t log[TIDE_LOG_HEADER_SIZE])
{
    tide_dat_header dh = { 2, 77, 1, 32 };
    tide_key_header kh = { 2, 77, 1, 32, 42, 0xa092f330c19ff2deull, 4096, 0x8000 };
    tide_log_header lh = { 2, 77, 1, 32, 42, 0xa092f330c19ff2deull, 4096, 8192, 92, 0 };

    ti_fmt_encode_dat_header(dat, &dh);
    ti_fmt_encode_key_header(key, &kh);
    ti_fmt_encode_log_header(log, &lh);
}

/* Decode buf as `kind` (0 dat, 1 key, 2 log) with file name `name`. */
static int decode_as(int kind, const uint8_t *buf, const char *name)
{
    tide_dat_header dh;
    tide_key_header kh;
    tide_log_header lh;

    switch (kind) {
    case 0: return ti_fmt_decode_dat_header(buf, &dh, name);
    case 1: return ti_fmt_decode_key_header(buf, &kh, name);
    default: return ti_fmt_decode_log_header(buf, &lh, name);
    }
}

static const char *const kind_name[] = { "nudb.dat", "nudb.key", "nudb.log" };

static void expect_decode_error(int kind, const uint8_t *buf, int want, const char *why,
                                const char *offset_text)
{
    int rc = decode_as(kind, buf, kind_name[kind]);
    const char *msg = tide_last_error();

    if (rc != want)
        fail_msg("%s header with %s: expected %d (%s), got %d (%s); message '%s'",
                 kind_name[kind], why, want, tide_strerror(want), rc, tide_strerror(rc), msg);
    if (msg == NULL || *msg == '\0')
        fail_msg("%s header with %s: expected a message in tide_last_error(), got an empty one",
                 kind_name[kind], why);
    if (strstr(msg, kind_name[kind]) == NULL)
        fail_msg("%s header with %s: expected the message to name '%s', got '%s'",
                 kind_name[kind], why, kind_name[kind], msg);
    if (offset_text != NULL && strstr(msg, offset_text) == NULL)
        fail_msg("%s header with %s: expected the message to name offset %s, got '%s'",
                 kind_name[kind], why, offset_text, msg);
}

static void header_decoders_reject_a_wrong_type_string_as_not_a_store(void **state)
{
    uint8_t b[3][TIDE_KEY_HEADER_SIZE];

    (void)state;
    for (int k = 0; k < 3; k++) {
        good_headers(b[0], b[1], b[2]);
        memcpy(b[k], "nudb.xyz", 8);
        expect_decode_error(k, b[k], TIDE_ENOTSTORE, "type 'nudb.xyz'", NULL);
    }
    /* A valid header of another kind is not this kind. */
    good_headers(b[0], b[1], b[2]);
    expect_decode_error(1, b[0], TIDE_ENOTSTORE, "type 'nudb.dat' (a data header)", NULL);
    good_headers(b[0], b[1], b[2]);
    expect_decode_error(0, b[1], TIDE_ENOTSTORE, "type 'nudb.key' (a key header)", NULL);
    good_headers(b[0], b[1], b[2]);
    expect_decode_error(2, b[1], TIDE_ENOTSTORE, "type 'nudb.key' (a key header)", NULL);
    /* Text. */
    for (int k = 0; k < 3; k++) {
        memset(b[k], 0, sizeof b[k]);
        memcpy(b[k], "hello, world\n", 13);
        expect_decode_error(k, b[k], TIDE_ENOTSTORE, "text 'hello, world'", NULL);
    }
}

static void header_decoders_reject_version_3_as_unsupported(void **state)
{
    uint8_t b[3][TIDE_KEY_HEADER_SIZE];

    (void)state;
    for (int k = 0; k < 3; k++) {
        good_headers(b[0], b[1], b[2]);
        ti_put16(b[k] + 8, 3);
        expect_decode_error(k, b[k], TIDE_EVERSION, "version 3", NULL);
        good_headers(b[0], b[1], b[2]);
        ti_put16(b[k] + 8, 1);
        expect_decode_error(k, b[k], TIDE_EVERSION, "version 1", NULL);
    }
}

static void header_decoders_reject_key_size_0_naming_offset_26(void **state)
{
    uint8_t b[3][TIDE_KEY_HEADER_SIZE];

    (void)state;
    for (int k = 0; k < 3; k++) {
        good_headers(b[0], b[1], b[2]);
        ti_put16(b[k] + 26, 0);
        expect_decode_error(k, b[k], TIDE_ECORRUPT, "key_size 0", "26");
    }
}

static void key_and_log_header_decoders_reject_block_size_100_naming_offset_44(void **state)
{
    uint8_t b[3][TIDE_KEY_HEADER_SIZE];

    (void)state;
    for (int k = 1; k < 3; k++) {
        good_headers(b[0], b[1], b[2]);
        ti_put16(b[k] + 44, 100);
        expect_decode_error(k, b[k], TIDE_ECORRUPT, "block_size 100", "44");
        good_headers(b[0], b[1], b[2]);
        ti_put16(b[k] + 44, 0);
        expect_decode_error(k, b[k], TIDE_ECORRUPT, "block_size 0", "44");
    }
    /* 104 is NuDB's minimum and is accepted. */
    good_headers(b[0], b[1], b[2]);
    ti_put16(b[1] + 44, 104);
    if (decode_as(1, b[1], "nudb.key") != 0)
        fail_msg("key header with block_size 104: expected 0, got an error (%s)", tide_last_error());
}

/* ---- buckets ---- */

static void bucket_encode_then_accessors_give_back_the_entries_and_spill(void **state)
{
    enum { BS = 4096 };
    unsigned cap = ti_fmt_capacity(BS);
    tide_entry *e = calloc(cap, sizeof *e);
    uint8_t *buf = malloc(BS);
    th_rng r;

    (void)state;
    assert_non_null(e);
    assert_non_null(buf);
    th_rng_init(&r, 11);
    for (unsigned count = 0; count <= cap; count += (count < 5 ? 1 : 37)) {
        uint64_t spill = count % 2 ? th_rng_next(&r) & TIDE_FIELD48_MAX : 0;
        uint64_t h = 0;
        size_t n;

        for (unsigned i = 0; i < count; i++) {
            h += th_rng_below(&r, 1000);         /* sorted, with some ties */
            e[i].offset = 92 + th_rng_next(&r) % (TIDE_FIELD48_MAX - 92);
            e[i].size = 1 + th_rng_next(&r) % TIDE_FIELD48_MAX;
            e[i].hash = h & TIDE_FIELD48_MAX;
        }
        if (count == cap) {                     /* extremes in the last bucket */
            e[0].offset = TIDE_FIELD48_MAX;
            e[0].size = TIDE_FIELD48_MAX;
        }
        memset(buf, 0xAA, BS);
        n = ti_fmt_encode_bucket(buf, BS, e, count, spill);
        if (n != 8 + 18 * (size_t)count)
            fail_msg("encode_bucket of %u entries: expected %zu bytes, got %zu",
                     count, 8 + 18 * (size_t)count, n);
        if (ti_fmt_bucket_count(buf) != count)
            fail_msg("bucket count: expected %u, got %u", count, ti_fmt_bucket_count(buf));
        if (ti_fmt_bucket_spill(buf) != spill)
            fail_msg("bucket of %u entries: expected spill 0x%llx, got 0x%llx", count,
                     (unsigned long long)spill, (unsigned long long)ti_fmt_bucket_spill(buf));
        for (unsigned i = 0; i < count; i++) {
            tide_entry d;
            ti_fmt_bucket_entry(buf, i, &d);
            if (d.offset != e[i].offset || d.size != e[i].size || d.hash != e[i].hash)
                fail_msg("bucket of %u entries, entry %u: expected (%llu, %llu, 0x%llx), got (%llu, %llu, 0x%llx)",
                         count, i, (unsigned long long)e[i].offset, (unsigned long long)e[i].size,
                         (unsigned long long)e[i].hash, (unsigned long long)d.offset,
                         (unsigned long long)d.size, (unsigned long long)d.hash);
        }
        for (size_t i = n; i < BS; i++)
            if (buf[i] != 0)
                fail_msg("bucket of %u entries: expected zero after the entries, byte %zu is 0x%02x",
                         count, i, buf[i]);
    }
    /* Byte layout of one entry: offset at 8, size at 14, hash at 20. */
    e[0] = (tide_entry){ 0x010203040506ull, 0x111213141516ull, 0x212223242526ull };
    ti_fmt_encode_bucket(buf, BS, e, 1, 0x313233343536ull);
    assert_int_equal(ti_get16(buf), 1);
    assert_int_equal(ti_get48(buf + 2), 0x313233343536ull);
    assert_int_equal(ti_get48(buf + 8), 0x010203040506ull);
    assert_int_equal(ti_get48(buf + 14), 0x111213141516ull);
    assert_int_equal(ti_get48(buf + 20), 0x212223242526ull);
    free(e);
    free(buf);
}

/* A valid bucket of three records in a data file of 10000 bytes with
 * 32-byte keys: records at 92, 200 and 400 of 50, 100 and 60 bytes. */
static void valid_bucket(uint8_t *buf, size_t cap, tide_entry e[3])
{
    e[0] = (tide_entry){ 92, 50, 100 };
    e[1] = (tide_entry){ 200, 100, 100 };
    e[2] = (tide_entry){ 400, 60, 5000 };
    ti_fmt_encode_bucket(buf, cap, e, 3, 0);
}

static void expect_check_rejects(const uint8_t *b, unsigned capacity, uint64_t dat_size,
                                 const char *why)
{
    int rc = ti_fmt_check_bucket(b, capacity, dat_size, 32, "bucket 7");
    const char *msg = tide_last_error();

    if (rc != TIDE_ECORRUPT)
        fail_msg("check_bucket of a bucket with %s: expected TIDE_ECORRUPT (%d), got %d", why,
                 TIDE_ECORRUPT, rc);
    if (strstr(msg, "bucket 7") == NULL)
        fail_msg("check_bucket of a bucket with %s: expected the message to name 'bucket 7', got '%s'",
                 why, msg);
}

static void check_bucket_accepts_sorted_entries_inside_the_data_file(void **state)
{
    uint8_t buf[1024];
    tide_entry e[3];
    int rc;

    (void)state;
    valid_bucket(buf, sizeof buf, e);
    rc = ti_fmt_check_bucket(buf, 28, 10000, 32, "bucket 7");
    if (rc != 0) fail_msg("check of a valid bucket: expected 0, got %d (%s)", rc, tide_last_error());
    ti_fmt_encode_bucket(buf, sizeof buf, e, 0, 0);
    rc = ti_fmt_check_bucket(buf, 28, 92, 32, "bucket 0");
    if (rc != 0) fail_msg("check of an empty bucket: expected 0, got %d (%s)", rc, tide_last_error());
    ti_fmt_encode_bucket(buf, sizeof buf, e, 3, 5000);
    rc = ti_fmt_check_bucket(buf, 28, 10000, 32, "bucket 7");
    if (rc != 0) fail_msg("check of a bucket spilling to 5000: expected 0, got %d (%s)", rc, tide_last_error());
}

static void check_bucket_rejects_entries_out_of_hash_order(void **state)
{
    uint8_t buf[1024];
    tide_entry e[3];

    (void)state;
    valid_bucket(buf, sizeof buf, e);
    e[2].hash = 99;
    ti_fmt_encode_bucket(buf, sizeof buf, e, 3, 0);
    expect_check_rejects(buf, 28, 10000, "hashes 100, 100, 99");
}

static void check_bucket_rejects_a_count_above_capacity(void **state)
{
    uint8_t buf[1024];
    tide_entry e[3];

    (void)state;
    valid_bucket(buf, sizeof buf, e);
    expect_check_rejects(buf, 2, 10000, "3 entries and capacity 2");
    ti_put16(buf, 29);
    expect_check_rejects(buf, 28, 10000, "count 29 and capacity 28");
}

static void check_bucket_rejects_a_record_or_spill_outside_the_data_file(void **state)
{
    uint8_t buf[1024];
    tide_entry e[3];

    (void)state;
    valid_bucket(buf, sizeof buf, e);
    e[2].offset = 20000;
    ti_fmt_encode_bucket(buf, sizeof buf, e, 3, 0);
    expect_check_rejects(buf, 28, 10000, "an offset of 20000 in a 10000-byte data file");

    valid_bucket(buf, sizeof buf, e);
    e[1].offset = 10000;
    ti_fmt_encode_bucket(buf, sizeof buf, e, 3, 0);
    expect_check_rejects(buf, 28, 10000, "an offset equal to the data file size");

    valid_bucket(buf, sizeof buf, e);
    e[0].offset = 50;
    ti_fmt_encode_bucket(buf, sizeof buf, e, 3, 0);
    expect_check_rejects(buf, 28, 10000, "an offset of 50, inside the 92-byte data header");

    valid_bucket(buf, sizeof buf, e);
    e[2].size = 9600;   /* 400 + 6 + 32 + 9600 > 10000 */
    ti_fmt_encode_bucket(buf, sizeof buf, e, 3, 0);
    expect_check_rejects(buf, 28, 10000, "a record at 400 of 9600 bytes running past 10000");

    valid_bucket(buf, sizeof buf, e);
    ti_fmt_encode_bucket(buf, sizeof buf, e, 3, 12000);
    expect_check_rejects(buf, 28, 10000, "a spill pointer of 12000 in a 10000-byte data file");
}

static void lower_bound_finds_the_first_entry_with_a_hash_not_below_h(void **state)
{
    static const uint64_t hashes[] = { 10, 20, 20, 20, 30, 40 };
    static const uint64_t c[][2] = {
        { 0, 0 }, { 9, 0 }, { 10, 0 }, { 11, 1 }, { 20, 1 }, { 21, 4 },
        { 30, 4 }, { 35, 5 }, { 40, 5 }, { 41, 6 }, { TIDE_FIELD48_MAX, 6 },
    };
    tide_entry e[6];
    uint8_t buf[512];
    unsigned got;

    (void)state;
    for (int i = 0; i < 6; i++) e[i] = (tide_entry){ 92 + 100 * (uint64_t)i, 10, hashes[i] };
    ti_fmt_encode_bucket(buf, sizeof buf, e, 6, 0);
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        got = ti_fmt_bucket_lower_bound(buf, 6, c[i][0]);
        if (got != c[i][1])
            fail_msg("lower_bound(h=%llu) over hashes 10,20,20,20,30,40: expected %llu, got %u",
                     (unsigned long long)c[i][0], (unsigned long long)c[i][1], got);
    }
    got = ti_fmt_bucket_lower_bound(buf, 0, 5);
    if (got != 0) fail_msg("lower_bound over an empty bucket: expected 0, got %u", got);
}

/* ---- the word codec against the byte-at-a-time one it replaced ---- */

static void ref_put(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--) { p[i] = (uint8_t)v; v >>= 8; }
}

static uint64_t ref_get(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v = (v << 8) | p[i];
    return v;
}

static const uint64_t edge_values[] = {
    0, 1, 0xff, 0x100, 0xffff, 0x10000, 0xffffffffull, 0x100000000ull,
    0x7fffffffffffull, 0x800000000000ull, TIDE_FIELD48_MAX - 1, TIDE_FIELD48_MAX,
    TIDE_FIELD48_MAX + 1, 0x0102030405060708ull, 0x8000000000000000ull, UINT64_MAX,
};

/* One value through put16/48/64 and get16/48/64 at an odd offset in a
 * canary-filled buffer: the bytes equal the reference's and nothing
 * around the field changes. */
static void expect_field_codec(uint64_t v)
{
    static const int widths[] = { 2, 6, 8 };
    uint8_t got[24], want[24];

    for (int w = 0; w < 3; w++) {
        int n = widths[w];
        memset(got, 0xA5, sizeof got);
        memset(want, 0xA5, sizeof want);
        ref_put(want + 3, v, n);
        if (n == 2) ti_put16(got + 3, v);
        else if (n == 6) ti_put48(got + 3, v);
        else ti_put64(got + 3, v);
        if (memcmp(got, want, sizeof got) != 0)
            fail_msg("put of %d bytes of 0x%016llx differs from the byte-at-a-time encoding", n,
                     (unsigned long long)v);
        uint64_t back = n == 2 ? ti_get16(got + 3) : n == 6 ? ti_get48(got + 3) : ti_get64(got + 3);
        if (back != ref_get(want + 3, n))
            fail_msg("get of %d bytes: expected 0x%llx, got 0x%llx", n,
                     (unsigned long long)ref_get(want + 3, n), (unsigned long long)back);
    }
}

static void ref_entry_encode(uint8_t *p, const tide_entry *e)
{
    ref_put(p, e->offset, 6);
    ref_put(p + 6, e->size, 6);
    ref_put(p + 12, e->hash, 6);
}

static void expect_entry_codec(const tide_entry *e)
{
    uint8_t got[18 + 6], want[18 + 6];
    tide_entry d;

    memset(got, 0x5A, sizeof got);
    memset(want, 0x5A, sizeof want);
    ref_entry_encode(want + 3, e);
    ti_fmt_entry_encode(got + 3, e);
    if (memcmp(got, want, sizeof got) != 0)
        fail_msg("entry (0x%llx, 0x%llx, 0x%llx) encodes differently from the byte-at-a-time "
                 "encoding", (unsigned long long)e->offset, (unsigned long long)e->size,
                 (unsigned long long)e->hash);
    ti_fmt_entry_decode(want + 3, &d);
    if (d.offset != ref_get(want + 3, 6) || d.size != ref_get(want + 9, 6) ||
        d.hash != ref_get(want + 15, 6))
        fail_msg("entry decode of (0x%llx, 0x%llx, 0x%llx) gave (0x%llx, 0x%llx, 0x%llx)",
                 (unsigned long long)ref_get(want + 3, 6), (unsigned long long)ref_get(want + 9, 6),
                 (unsigned long long)ref_get(want + 15, 6), (unsigned long long)d.offset,
                 (unsigned long long)d.size, (unsigned long long)d.hash);
}

static void word_codec_equals_the_byte_at_a_time_one_on_edge_and_random_values(void **state)
{
    size_t ne = sizeof edge_values / sizeof edge_values[0];
    th_rng r;

    (void)state;
    th_rng_init(&r, 15);
    for (size_t i = 0; i < ne; i++) {
        expect_field_codec(edge_values[i]);
        for (size_t j = 0; j < ne; j++)
            for (size_t k = 0; k < ne; k++)
                expect_entry_codec(&(tide_entry){ edge_values[i], edge_values[j], edge_values[k] });
    }
    for (int i = 0; i < 200000; i++) {
        uint64_t v = th_rng_next(&r) >> th_rng_below(&r, 64);
        expect_field_codec(v);
        expect_entry_codec(&(tide_entry){ v, th_rng_next(&r), th_rng_next(&r) >> 16 });
    }
}

/* Fields and entries that end at the last byte before a PROT_NONE page
 * decode without touching it (a read past the end would be a SIGSEGV). */
static void decoders_read_nothing_past_a_field_at_the_end_of_the_buffer(void **state)
{
    long pg = sysconf(_SC_PAGESIZE);
    uint8_t *map, *end;
    tide_entry e = { 0x0a0b0c0d0e0full, 0x111213141516ull, TIDE_FIELD48_MAX }, d;

    (void)state;
    map = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(map != MAP_FAILED);
    assert_int_equal(mprotect(map + pg, (size_t)pg, PROT_NONE), 0);
    end = map + pg;
    ti_put16(end - 2, 0xbeef);
    assert_int_equal(ti_get16(end - 2), 0xbeef);
    ti_put48(end - 6, 0x123456789abcull);
    assert_int_equal(ti_get48(end - 6), 0x123456789abcull);
    ti_put64(end - 8, 0x0102030405060708ull);
    assert_int_equal(ti_get64(end - 8), 0x0102030405060708ull);
    ti_fmt_entry_encode(end - 18, &e);
    ti_fmt_entry_decode(end - 18, &d);
    assert_true(d.offset == e.offset && d.size == e.size && d.hash == e.hash);
    /* A bucket of 3 entries whose last byte is the buffer's last byte. */
    uint8_t *b = end - ti_fmt_bucket_bytes(3);
    tide_entry three[3] = { { 92, 1, 5 }, { 200, 2, 7 }, { 300, 3, TIDE_FIELD48_MAX } };
    ti_fmt_encode_bucket(b, ti_fmt_bucket_bytes(3), three, 3, 0);
    ti_fmt_bucket_entry(b, 2, &d);
    assert_true(d.offset == 300 && d.size == 3 && d.hash == TIDE_FIELD48_MAX);
    assert_int_equal(ti_fmt_bucket_lower_bound(b, 3, TIDE_FIELD48_MAX), 2);
    assert_int_equal(ti_fmt_bucket_hash(b, 2), TIDE_FIELD48_MAX);
    munmap(map, 2 * (size_t)pg);
}

/* ---- in-place insertion ---- */

/* The reference: decode, merge each new entry after the equal hashes,
 * encode: the whole-bucket rebuild that in-place insertion must match. */
static void ref_insert(uint8_t *out, size_t cap_bytes, const uint8_t *b, const tide_entry *e,
                       unsigned m, tide_entry *tmp)
{
    unsigned count = ti_fmt_bucket_count(b), a = count, k = m, w = count + m;
    for (unsigned i = 0; i < count; i++) ti_fmt_bucket_entry(b, i, &tmp[i]);
    while (k > 0) {
        if (a > 0 && tmp[a - 1].hash > e[k - 1].hash) tmp[--w] = tmp[--a];
        else tmp[--w] = e[--k];
    }
    ti_fmt_encode_bucket(out, cap_bytes, tmp, count + m, ti_fmt_bucket_spill(b));
}

static int cmp_hash(const void *x, const void *y)
{
    uint64_t a = ((const tide_entry *)x)->hash, b = ((const tide_entry *)y)->hash;
    return a < b ? -1 : a > b;
}

/* A random hash from a small range (many ties) or anywhere, with the ends. */
static uint64_t some_hash(th_rng *r, int narrow)
{
    uint64_t x = th_rng_below(r, 20);
    if (x == 0) return 0;
    if (x == 1) return TIDE_FIELD48_MAX;
    return narrow ? 1000 + th_rng_below(r, 40) : th_rng_next(r) >> 16;
}

static void bucket_insert_equals_decode_merge_encode_on_random_buckets(void **state)
{
    enum { BS = 4096 };
    unsigned cap = ti_fmt_capacity(BS);
    tide_entry *old = calloc(cap, sizeof *old), *add = calloc(cap, sizeof *add);
    tide_entry *tmp = calloc(cap, sizeof *tmp);
    uint8_t *got = malloc(BS), *want = malloc(BS);
    th_rng r;

    (void)state;
    assert_true(old && add && tmp && got && want);
    th_rng_init(&r, 1515);
    for (int round = 0; round < 20000; round++) {
        int narrow = round % 3 == 0;
        unsigned total = round < 2 ? cap * (unsigned)round : (unsigned)th_rng_below(&r, cap + 1);
        unsigned m = total ? (unsigned)th_rng_below(&r, total + 1) : 0, count = total - m;
        uint64_t spill = round % 2 ? th_rng_next(&r) >> 16 : 0;

        for (unsigned i = 0; i < count; i++)
            old[i] = (tide_entry){ 92 + th_rng_below(&r, TIDE_FIELD48_MAX - 92),
                                   1 + th_rng_below(&r, TIDE_FIELD48_MAX), some_hash(&r, narrow) };
        for (unsigned i = 0; i < m; i++)
            add[i] = (tide_entry){ TIDE_FIELD48_MAX - i, 1 + i, some_hash(&r, narrow) };
        qsort(old, count, sizeof *old, cmp_hash);
        qsort(add, m, sizeof *add, cmp_hash);
        memset(got, 0xAA, BS);
        ti_fmt_encode_bucket(got, ti_fmt_bucket_bytes(count), old, count, spill);
        ref_insert(want, BS, got, add, m, tmp);
        ti_fmt_bucket_insert(got, add, m);
        size_t used = ti_fmt_bucket_bytes(total);
        if (memcmp(got, want, used) != 0)
            fail_msg("round %d: %u entries inserted into a bucket of %u: the image differs from "
                     "decode, merge and encode", round, m, count);
        for (size_t i = used; i < BS; i++)
            if (got[i] != 0xAA)
                fail_msg("round %d: byte %zu past the %zu bytes of the bucket was written", round,
                         i, used);
    }
    free(old);
    free(add);
    free(tmp);
    free(got);
    free(want);
}

/* ---- the fixtures' real bytes ---- */

static void every_fixture_header_decodes_to_the_values_in_the_fixture_readme(void **state)
{
    char dir[4096], path[4200];

    (void)state;
    for (size_t i = 0; i < th_fixture_count; i++) {
        const th_fixture *f = &th_fixtures[i];
        uint8_t kb[TIDE_KEY_HEADER_SIZE], db[TIDE_DAT_HEADER_SIZE];
        tide_key_header kh;
        tide_dat_header dh;
        int rc;

        th_path(dir, sizeof dir, th_fixture_root(), f->name);
        th_path(path, sizeof path, dir, "nudb.key");
        if (th_pread_file(path, kb, sizeof kb, 0) != 0) fail_msg("%s: cannot read 104 bytes", path);
        th_path(path, sizeof path, dir, "nudb.dat");
        if (th_pread_file(path, db, sizeof db, 0) != 0) fail_msg("%s: cannot read 92 bytes", path);

        rc = ti_fmt_decode_key_header(kb, &kh, "nudb.key");
        if (rc != 0) fail_msg("%s/nudb.key: expected a valid header, got %d (%s)", f->name, rc, tide_last_error());
        rc = ti_fmt_decode_dat_header(db, &dh, "nudb.dat");
        if (rc != 0) fail_msg("%s/nudb.dat: expected a valid header, got %d (%s)", f->name, rc, tide_last_error());

#define EXPECT(field, got, want) do { \
            char what_[160]; \
            snprintf(what_, sizeof what_, "%s: %s", f->name, field); \
            expect_u64((got), (want), what_); \
        } while (0)
        EXPECT("key version", kh.version, 2);
        EXPECT("key uid", kh.uid, TH_FIXTURE_UID);
        EXPECT("key appnum", kh.appnum, f->appnum);
        EXPECT("key key_size", kh.key_size, f->key_size);
        EXPECT("key salt", kh.salt, f->salt);
        EXPECT("key pepper", kh.pepper, ti_fmt_pepper(f->salt));
        EXPECT("key block_size", kh.block_size, f->block_size);
        EXPECT("key load_factor", kh.load_factor, f->load_factor_raw);
        EXPECT("dat version", dh.version, 2);
        EXPECT("dat uid", dh.uid, TH_FIXTURE_UID);
        EXPECT("dat appnum", dh.appnum, f->appnum);
        EXPECT("dat key_size", dh.key_size, f->key_size);
        if (!f->has_log) {
            th_path(path, sizeof path, dir, "nudb.key");
            EXPECT("key file size", th_file_size(path), f->key_file_bytes);
            EXPECT("buckets from the key file size",
                   (uint64_t)th_file_size(path) / f->block_size - 1, f->buckets);
            th_path(path, sizeof path, dir, "nudb.dat");
            EXPECT("dat file size", th_file_size(path), f->dat_file_bytes);
        }
    }
}

static void crash_fixture_log_header_records_the_sizes_before_the_commit(void **state)
{
    char path[4200];
    uint8_t lb[TIDE_LOG_HEADER_SIZE];
    tide_log_header lh;
    const th_fixture *f = th_fixture_find("crash-b4096");
    int rc;

    (void)state;
    snprintf(path, sizeof path, "%s/crash-b4096/nudb.log", th_fixture_root());
    if (th_pread_file(path, lb, sizeof lb, 0) != 0) fail_msg("%s: cannot read 62 bytes", path);
    rc = ti_fmt_decode_log_header(lb, &lh, "nudb.log");
    if (rc != 0) fail_msg("crash-b4096/nudb.log: expected a valid header, got %d (%s)", rc, tide_last_error());
    EXPECT("log uid", lh.uid, TH_FIXTURE_UID);
    EXPECT("log appnum", lh.appnum, 1);
    EXPECT("log key_size", lh.key_size, 32);
    EXPECT("log salt", lh.salt, 1234);
    EXPECT("log pepper", lh.pepper, ti_fmt_pepper(1234));
    EXPECT("log block_size", lh.block_size, 4096);
    EXPECT("log key_file_size", lh.key_file_size, 294912);
    EXPECT("log dat_file_size", lh.dat_file_size, 1298541);
}

/* Every bucket of the clean fixtures passes ti_fmt_check_bucket, and every
 * entry names a record whose key hashes to the entry's hash and belongs to
 * this bucket by the index formula. The same holds along spill chains. */
static void every_bucket_of_the_clean_fixtures_checks_and_holds_only_its_own_keys(void **state)
{
    char dir[4096], path[4200];

    (void)state;
    for (size_t fi = 0; fi < th_fixture_count; fi++) {
        const th_fixture *f = &th_fixtures[fi];
        uint8_t *key = NULL, *dat = NULL;
        size_t klen, dlen;
        uint64_t entries = 0, spills = 0;
        unsigned cap = ti_fmt_capacity(f->block_size);

        if (f->has_log) continue;
        th_path(dir, sizeof dir, th_fixture_root(), f->name);
        th_path(path, sizeof path, dir, "nudb.key");
        if (th_read_file(path, &key, &klen) != 0) fail_msg("%s: cannot read", path);
        th_path(path, sizeof path, dir, "nudb.dat");
        if (th_read_file(path, &dat, &dlen) != 0) fail_msg("%s: cannot read", path);

        for (uint64_t b = 0; b < f->buckets; b++) {
            const uint8_t *img = key + (b + 1) * f->block_size;
            char where[64];
            int depth = 0;

            for (;;) {
                unsigned count = ti_fmt_bucket_count(img);
                uint64_t spill;
                int rc;

                snprintf(where, sizeof where, "bucket %llu depth %d", (unsigned long long)b, depth);
                rc = ti_fmt_check_bucket(img, cap, dlen, f->key_size, where);
                if (rc != 0)
                    fail_msg("%s %s: expected check_bucket 0, got %d (%s)", f->name, where, rc,
                             tide_last_error());
                for (unsigned i = 0; i < count; i++) {
                    tide_entry e;
                    uint64_t h;

                    ti_fmt_bucket_entry(img, i, &e);
                    if (e.offset < 92 || e.offset + 6 + f->key_size + e.size > dlen)
                        fail_msg("%s %s entry %u: record at %llu of %llu bytes is outside the %zu-byte data file",
                                 f->name, where, i, (unsigned long long)e.offset,
                                 (unsigned long long)e.size, dlen);
                    if (ti_get48(dat + e.offset) != e.size)
                        fail_msg("%s %s entry %u: record at %llu has size %llu, entry says %llu",
                                 f->name, where, i, (unsigned long long)e.offset,
                                 (unsigned long long)ti_get48(dat + e.offset),
                                 (unsigned long long)e.size);
                    h = ti_fmt_hash48(dat + e.offset + 6, f->key_size, f->salt);
                    if (h != e.hash)
                        fail_msg("%s %s entry %u: key hashes to 0x%llx, entry says 0x%llx",
                                 f->name, where, i, (unsigned long long)h, (unsigned long long)e.hash);
                    if (ti_fmt_bucket_index(h, f->buckets) != b)
                        fail_msg("%s %s entry %u: hash 0x%llx belongs in bucket %llu of %llu",
                                 f->name, where, i, (unsigned long long)h,
                                 (unsigned long long)ti_fmt_bucket_index(h, f->buckets),
                                 (unsigned long long)f->buckets);
                    entries++;
                }
                spill = ti_fmt_bucket_spill(img);
                if (spill == 0) break;
                /* The spill pointer names the bucket bytes, 8 past the record start. */
                if (spill < 92 + 8 || spill >= dlen || ti_get48(dat + spill - 8) != 0)
                    fail_msg("%s %s: spill pointer %llu does not point 8 bytes past a spill record",
                             f->name, where, (unsigned long long)spill);
                if (ti_get16(dat + spill - 2) != ti_fmt_bucket_bytes(cap))
                    fail_msg("%s %s: spill record at %llu: expected n = %zu, got %llu", f->name,
                             where, (unsigned long long)(spill - 8), ti_fmt_bucket_bytes(cap),
                             (unsigned long long)ti_get16(dat + spill - 2));
                img = dat + spill;
                spills++;
                depth++;
            }
        }
        if (entries != f->items)
            fail_msg("%s: expected %llu entries over all buckets and chains, got %llu", f->name,
                     (unsigned long long)f->items, (unsigned long long)entries);
        if (strcmp(f->name, "b512-k32-spill") == 0 && spills != 29)
            fail_msg("%s: expected 29 reachable spill records (README), got %llu", f->name,
                     (unsigned long long)spills);
        free(key);
        free(dat);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(xxh64_of_the_empty_string_with_salt_0_is_0xef46db3751d8e999),
        cmocka_unit_test(hash64_agrees_with_libxxhash_and_hash48_keeps_the_top_48_bits),
        cmocka_unit_test(pepper_matches_the_spec_vectors_for_salts_0_42_and_0x0123456789abcdef),
        cmocka_unit_test(pepper_is_xxh64_of_the_salt_as_little_endian_bytes_seeded_with_the_salt),
        cmocka_unit_test(bucket_index_folds_a_hash_past_the_bucket_count_into_the_lower_half),
        cmocka_unit_test(bucket_index_of_a_one_bucket_table_is_always_zero),
        cmocka_unit_test(bucket_index_in_a_power_of_two_table_is_the_hash_modulo_the_count),
        cmocka_unit_test(bucket_index_is_below_the_bucket_count_and_stable_when_the_table_grows_elsewhere),
        cmocka_unit_test(ceil_pow2_rounds_up_to_the_next_power_of_two),
        cmocka_unit_test(capacity_of_4096_8192_16384_32768_byte_blocks_is_227_454_909_1820),
        cmocka_unit_test(load_factor_raw_is_65536_times_the_fraction_capped_at_65535),
        cmocka_unit_test(dat_header_round_trips_and_puts_each_field_where_the_spec_says),
        cmocka_unit_test(key_header_round_trips_and_puts_each_field_where_the_spec_says),
        cmocka_unit_test(log_header_round_trips_and_puts_each_field_where_the_spec_says),
        cmocka_unit_test(a_deferred_log_header_carries_the_mark_in_its_pepper_field),
        cmocka_unit_test(header_decoders_reject_a_wrong_type_string_as_not_a_store),
        cmocka_unit_test(header_decoders_reject_version_3_as_unsupported),
        cmocka_unit_test(header_decoders_reject_key_size_0_naming_offset_26),
        cmocka_unit_test(key_and_log_header_decoders_reject_block_size_100_naming_offset_44),
        cmocka_unit_test(bucket_encode_then_accessors_give_back_the_entries_and_spill),
        cmocka_unit_test(check_bucket_accepts_sorted_entries_inside_the_data_file),
        cmocka_unit_test(check_bucket_rejects_entries_out_of_hash_order),
        cmocka_unit_test(check_bucket_rejects_a_count_above_capacity),
        cmocka_unit_test(check_bucket_rejects_a_record_or_spill_outside_the_data_file),
        cmocka_unit_test(lower_bound_finds_the_first_entry_with_a_hash_not_below_h),
        cmocka_unit_test(word_codec_equals_the_byte_at_a_time_one_on_edge_and_random_values),
        cmocka_unit_test(decoders_read_nothing_past_a_field_at_the_end_of_the_buffer),
        cmocka_unit_test(bucket_insert_equals_decode_merge_encode_on_random_buckets),
        cmocka_unit_test(every_fixture_header_decodes_to_the_values_in_the_fixture_readme),
        cmocka_unit_test(crash_fixture_log_header_records_the_sizes_before_the_commit),
        cmocka_unit_test(every_bucket_of_the_clean_fixtures_checks_and_holds_only_its_own_keys),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
