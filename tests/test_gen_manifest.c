/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_gen_manifest.c: the generations manifest (src/gen/manifest.c):
 * its names, its rotation in memory, its text form, and its
 * durable replace under failed calls and crashes on the simulated file
 * system.
 *
 *   - Round trips: encode gives the exact text docs/FORMAT.md shows, decode
 *     gives back the same manifest, and encoding that gives the same bytes
 *     (G = 2, and G = 64 with 64 generations and the largest numbers).
 *   - Malformed files: every way the grammar can be broken (truncated at
 *     every length, a bad checksum, an unknown or repeated key, G out of
 *     range, ids out of order or repeated, too many generations, trailing
 *     garbage, another version) is refused with its error code and a
 *     message naming the line and the problem. Each case carries a valid
 *     checksum, so the check that refuses it is the one named.
 *   - Every bit of a small manifest flipped in turn: refused.
 *   - Crash safety (the important one): a replace old -> new (and a first
 *     write, nothing -> new) with the n-th call failing (EIO, ENOSPC; once
 *     or from then on), and with the world stopped before every call and
 *     after the last, every crash state of the pending operations
 *     enumerated (each subset of the pending writes with each subset of
 *     the pending namespace operations, each tear of each write) plus
 *     seeded crashes: the manifest must read back exactly old or exactly
 *     new, never anything else; once write returned 0, exactly new.
 *
 * Each of these breakages of manifest.c fails the crash tests (checked by
 * hand): no directory sync (after a write returned 0, a crash drops the
 * rename: the old manifest), no sync of the .tmp before the rename (the
 * rename kept, the data lost: an empty file), writing tide.generations in
 * place (a crash mid-write: an empty file); no truncate of a leftover .tmp
 * fails the leftover test (trailing garbage), and no checksum comparison
 * fails the checksum and flipped-bit tests.
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
#include <xxhash.h>

#include "gen/manifest.h"
#include "io/io_sim.h"
#include "util/err.h"
#include "helpers.h"
#include "expect.h"

#define DIR "/data"
#define OK(expr) expect_ok((expr), #expr)
#define SEEDS 16   /* seeded crashes at each stop, besides the enumerated states */

/* ---- helpers ---- */

/* A manifest keeping `keep`, with `count` generations newest..newest-count+1. */
static tide_gen_manifest make(uint32_t keep, uint64_t newest, uint32_t count, uint64_t rotations,
                              uint64_t last_us)
{
    tide_gen_manifest m;
    OK(tide_gen_manifest_init(&m, keep, newest));
    m.count = count;
    for (uint32_t i = 0; i < count; i++) {
        m.gens[i].id = newest - i;
        OK(tide_gen_dir_name(m.gens[i].id, m.gens[i].dir, sizeof m.gens[i].dir));
    }
    m.rotations = rotations;
    m.last_rotation_us = last_us;
    OK(tide_gen_manifest_check(&m));
    return m;
}

static int same(const tide_gen_manifest *a, const tide_gen_manifest *b)
{
    if (a->version != b->version || a->keep != b->keep || a->rotations != b->rotations ||
        a->last_rotation_us != b->last_rotation_us || a->count != b->count)
        return 0;
    for (uint32_t i = 0; i < a->count; i++)
        if (a->gens[i].id != b->gens[i].id || strcmp(a->gens[i].dir, b->gens[i].dir) != 0)
            return 0;
    return 1;
}

static void describe(const tide_gen_manifest *m, char *out, size_t cap)
{
    int at = snprintf(out, cap, "keep %u, rotations %" PRIu64 ", last %" PRIu64 ", gens",
                      m->keep, m->rotations, m->last_rotation_us);
    for (uint32_t i = 0; i < m->count && at > 0 && (size_t)at < cap - 24; i++)
        at += snprintf(out + at, cap - (size_t)at, " %" PRIu64, m->gens[i].id);
}

#define expect_same(got, want, what) do { \
        char g_[512], w_[512]; \
        if (!same((got), (want))) { \
            describe((got), g_, sizeof g_); \
            describe((want), w_, sizeof w_); \
            fail_msg("%s: expected the manifest {%s}, got {%s}", what, w_, g_); \
        } \
    } while (0)

/* `body` followed by its correct checksum line, NUL-ended (malloc'd). */
static char *sealed(const char *body)
{
    size_t n = strlen(body);
    char *out = malloc(n + 32);
    if (out == NULL) fail_msg("out of memory");
    snprintf(out, n + 32, "%schecksum %016" PRIx64 "\n", body, (uint64_t)XXH64(body, n, 0));
    return out;
}

/* decode refuses `text` with `want`, its message containing `part`. */
static void expect_refused(const char *text, size_t len, int want, const char *part,
                           const char *what)
{
    tide_gen_manifest m;
    tide_err_clear();
    expect_error(tide_gen_manifest_decode(text, len, &m), want, what);
    expect_contains(tide_last_error(), part, what);
}

/* The body (no checksum line) `body` is refused, sealed with a valid checksum. */
static void expect_body_refused(const char *body, int want, const char *part, const char *what)
{
    char *text = sealed(body);
    expect_refused(text, strlen(text), want, part, what);
    free(text);
}

#define HEAD "tide-generations 1\nkeep 2\nrotations 0\nlast_rotation_us 0\n"

/* ---- names, init, check, rotate ---- */

static void a_directory_name_is_derived_from_the_id_zero_padded(void **state)
{
    char buf[TIDE_GEN_DIR_CAP], small[8];
    (void)state;
    OK(tide_gen_dir_name(7, buf, sizeof buf));
    expect_str(buf, "gen-000000000007", "id 7");
    OK(tide_gen_dir_name(123456789012ull, buf, sizeof buf));
    expect_str(buf, "gen-123456789012", "a 12-digit id");
    OK(tide_gen_dir_name(UINT64_MAX, buf, sizeof buf));
    expect_str(buf, "gen-18446744073709551615", "the largest id");
    expect_error(tide_gen_dir_name(7, small, sizeof small), TIDE_EINVAL, "an 8-byte buffer");
}

static void a_rotation_puts_a_new_id_in_front_and_drops_the_oldest_once_g_are_kept(void **state)
{
    tide_gen_manifest m, want;
    tide_gen dropped = { 0, "" };
    unsigned n = 9;
    (void)state;

    OK(tide_gen_manifest_init(&m, 3, 1));
    OK(tide_gen_manifest_rotate(&m, 1000, &dropped, &n));
    expect_u64(n, 0, "first rotation of G=3: dropped");
    want = make(3, 2, 2, 1, 1000);
    expect_same(&m, &want, "after one rotation");
    OK(tide_gen_manifest_rotate(&m, 2000, &dropped, &n));
    expect_u64(n, 0, "second rotation of G=3: dropped");
    OK(tide_gen_manifest_rotate(&m, 3000, &dropped, &n));
    expect_u64(n, 1, "third rotation of G=3: dropped");
    expect_u64(dropped.id, 1, "third rotation: the dropped id");
    expect_str(dropped.dir, "gen-000000000001", "third rotation: the dropped directory");
    want = make(3, 4, 3, 3, 3000);
    expect_same(&m, &want, "after three rotations");
    m.gens[0].id = UINT64_MAX;
    m.gens[1].id = UINT64_MAX - 1;   /* broken on purpose: names not derived */
    expect_error(tide_gen_manifest_rotate(&m, 4000, NULL, &n), TIDE_EINVAL, "a broken manifest");
    m = make(2, UINT64_MAX, 2, 5, 1);
    want = m;
    expect_error(tide_gen_manifest_rotate(&m, 4000, NULL, &n), TIDE_EINVAL, "the last id");
    expect_same(&m, &want, "a refused rotation leaves the manifest untouched");
}

static void init_and_encode_refuse_a_manifest_that_breaks_an_invariant(void **state)
{
    tide_gen_manifest m;
    char buf[TIDE_GEN_ENCODED_MAX];
    size_t len = 0;
    (void)state;

    expect_error(tide_gen_manifest_init(&m, 1, 0), TIDE_EINVAL, "init keep 1");
    expect_error(tide_gen_manifest_init(&m, 65, 0), TIDE_EINVAL, "init keep 65");
    m = make(2, 5, 2, 0, 0);
    m.count = 0;
    expect_error(tide_gen_manifest_encode(&m, buf, sizeof buf, &len), TIDE_EINVAL, "no generation");
    m = make(2, 5, 2, 0, 0);
    m.count = 3;
    m.gens[2] = m.gens[1];
    m.gens[2].id = 3;
    expect_error(tide_gen_manifest_encode(&m, buf, sizeof buf, &len), TIDE_EINVAL, "count > keep");
    m = make(3, 5, 2, 0, 0);
    m.gens[1].id = 5;
    expect_error(tide_gen_manifest_encode(&m, buf, sizeof buf, &len), TIDE_EINVAL, "equal ids");
    expect_contains(tide_last_error(), "is not below", "equal ids");
    m = make(3, 5, 2, 0, 0);
    strcpy(m.gens[1].dir, "elsewhere");
    expect_error(tide_gen_manifest_encode(&m, buf, sizeof buf, &len), TIDE_EINVAL, "a foreign dir");
    expect_contains(tide_last_error(), "'elsewhere' is not 'gen-000000000004'", "a foreign dir");
    m = make(2, 5, 2, 0, 0);
    expect_error(tide_gen_manifest_encode(&m, buf, 10, &len), TIDE_EINVAL, "a 10-byte buffer");
    OK(tide_gen_manifest_encode(&m, buf, sizeof buf, &len) == 0 && len > 10 ? 0 : -1);
}

/* ---- round trips ---- */

static void round_trip(const tide_gen_manifest *m, const char *what)
{
    char a[TIDE_GEN_ENCODED_MAX], b[TIDE_GEN_ENCODED_MAX];
    size_t alen = 0, blen = 0;
    tide_gen_manifest back;

    OK(tide_gen_manifest_encode(m, a, sizeof a, &alen));
    OK(tide_gen_manifest_decode(a, alen, &back));
    expect_same(&back, m, what);
    OK(tide_gen_manifest_encode(&back, b, sizeof b, &blen));
    if (alen != blen || memcmp(a, b, alen) != 0)
        fail_msg("%s: encoding the decoded manifest gave other bytes (%zu and %zu)", what, alen,
                 blen);
}

static void a_manifest_of_two_generations_encodes_as_the_documented_text(void **state)
{
    tide_gen_manifest m = make(2, 7, 2, 6, 1796083200000000ull);
    const char *body = "tide-generations 1\n"
                       "keep 2\n"
                       "rotations 6\n"
                       "last_rotation_us 1796083200000000\n"
                       "gen 7 gen-000000000007\n"
                       "gen 6 gen-000000000006\n";
    char buf[TIDE_GEN_ENCODED_MAX], *want = sealed(body);
    size_t len = 0;
    (void)state;

    OK(tide_gen_manifest_encode(&m, buf, sizeof buf, &len));
    if (len != strlen(want) || memcmp(buf, want, len) != 0)
        fail_msg("expected the text\n%s\ngot\n%.*s", want, (int)len, buf);
    expect_contains(want, "checksum fb1a7525bbb5c696\n", "the checksum docs/FORMAT.md shows");
    free(want);
    round_trip(&m, "G=2, two generations");
    m = make(2, 0, 1, 0, 0);
    round_trip(&m, "G=2, one generation of id 0, never rotated");
}

static void sixty_four_generations_round_trip_with_the_largest_numbers(void **state)
{
    tide_gen_manifest m = make(64, UINT64_MAX, 64, UINT64_MAX, UINT64_MAX);
    char buf[TIDE_GEN_ENCODED_MAX];
    size_t len = 0;
    (void)state;

    round_trip(&m, "G=64, 64 generations from UINT64_MAX");
    OK(tide_gen_manifest_encode(&m, buf, sizeof buf, &len));
    print_message("  the largest manifest is %zu bytes (TIDE_GEN_ENCODED_MAX %d)\n", len,
                  TIDE_GEN_ENCODED_MAX);
    m = make(64, 1000, 64, 936, 5);
    round_trip(&m, "G=64, 64 generations 1000..937");
    m = make(64, 1000, 1, 0, 0);
    round_trip(&m, "G=64, one generation");
}

/* ---- malformed files ---- */

static void a_truncated_manifest_is_refused_at_every_length(void **state)
{
    tide_gen_manifest m = make(4, 12, 3, 9, 77);
    char buf[TIDE_GEN_ENCODED_MAX], what[80];
    size_t len = 0;
    (void)state;

    OK(tide_gen_manifest_encode(&m, buf, sizeof buf, &len));
    for (size_t cut = 0; cut < len; cut++) {
        snprintf(what, sizeof what, "the first %zu of %zu bytes", cut, len);
        expect_refused(buf, cut, TIDE_ECORRUPT, "truncated", what);
    }
    expect_refused(buf, 0, TIDE_ECORRUPT, "tide.generations:1: truncated: the file is empty",
                   "an empty file");
    expect_refused(buf, 40, TIDE_ECORRUPT, "truncated: the file ends at byte 40 with no checksum",
                   "cut at byte 40");
}

static void a_bad_checksum_is_refused(void **state)
{
    char *text = sealed(HEAD "gen 5 gen-000000000005\n");
    char *at = strstr(text, "rotations 0");
    (void)state;

    at[10] = '1';   /* the body changed, its checksum did not */
    expect_refused(text, strlen(text), TIDE_ECORRUPT, "tide.generations:6: bad checksum",
                   "a changed body under its old checksum");
    at[10] = '0';
    at = strstr(text, "checksum ") + 9;
    for (char *p = at; p < at + 16; p++)
        if (*p >= 'a' && *p <= 'f') *p = (char)(*p - 'a' + 'A');
    if (strpbrk(at, "ABCDEF") == NULL) at[0] = 'X';  /* the digest had no letter */
    expect_refused(text, strlen(text), TIDE_ECORRUPT, "is not 16 lowercase hex digits",
                   "an uppercase (or X'd) checksum");
    free(text);
    expect_refused(HEAD "gen 5 gen-000000000005\nchecksum 00\n",
                   strlen(HEAD "gen 5 gen-000000000005\nchecksum 00\n"), TIDE_ECORRUPT,
                   "tide.generations:6: checksum '00' is not 16", "a short checksum");
}

static void an_unknown_key_is_refused_naming_it_and_its_line(void **state)
{
    (void)state;
    expect_body_refused("tide-generations 1\nkeep 2\ncolour blue\nlast_rotation_us 0\n"
                        "gen 5 gen-000000000005\n", TIDE_ECORRUPT,
                        "tide.generations:3: unknown key 'colour'", "a colour among the fields");
    expect_body_refused(HEAD "gen 5 gen-000000000005\nextra 1\n", TIDE_ECORRUPT,
                        "tide.generations:6: unknown key 'extra'", "a key after the generations");
    expect_body_refused("tide-generations 1\nkeep 2\ngen 5 gen-000000000005\n", TIDE_ECORRUPT,
                        "tide.generations:3: expected 'rotations', got 'gen'",
                        "a generation before the rotation fields");
    expect_body_refused("tide-generations 1\nkeep 2\nrotations 0\n", TIDE_ECORRUPT,
                        "tide.generations:4: expected 'last_rotation_us', got the checksum line",
                        "a missing field");
    expect_body_refused(HEAD, TIDE_ECORRUPT,
                        "tide.generations:5: no generation", "no gen line");
}

static void a_value_out_of_range_or_not_canonical_is_refused(void **state)
{
    (void)state;
    expect_body_refused("tide-generations 1\nkeep 1\nrotations 0\nlast_rotation_us 0\n"
                        "gen 5 gen-000000000005\n", TIDE_ECORRUPT,
                        "tide.generations:2: out of range: keep 1 is outside 2..64", "G = 1");
    expect_body_refused("tide-generations 1\nkeep 65\nrotations 0\nlast_rotation_us 0\n"
                        "gen 5 gen-000000000005\n", TIDE_ECORRUPT,
                        "tide.generations:2: out of range: keep 65 is outside 2..64", "G = 65");
    expect_body_refused("tide-generations 1\nkeep 2\nrotations 007\nlast_rotation_us 0\n"
                        "gen 5 gen-000000000005\n", TIDE_ECORRUPT,
                        "tide.generations:3: rotations '007' is not a decimal number", "007");
    expect_body_refused("tide-generations 1\nkeep 2\nrotations 0\n"
                        "last_rotation_us 18446744073709551616\ngen 5 gen-000000000005\n",
                        TIDE_ECORRUPT, "tide.generations:4: last_rotation_us "
                        "'18446744073709551616' is not a decimal number below 2^64", "2^64");
    expect_body_refused("tide-generations 1\nkeep  2\nrotations 0\nlast_rotation_us 0\n"
                        "gen 5 gen-000000000005\n", TIDE_ECORRUPT,
                        "tide.generations:2: keep ' 2' is not a decimal number", "two spaces");
    expect_body_refused(HEAD "gen -5 gen-000000000005\n", TIDE_ECORRUPT,
                        "tide.generations:5: gen id '-5' is not a decimal number", "gen -5");
    expect_body_refused(HEAD "gen 5 gen-5\n", TIDE_ECORRUPT,
                        "tide.generations:5: gen 5: directory 'gen-5' is not 'gen-000000000005'",
                        "a name not derived from the id");
    expect_body_refused(HEAD "gen 5 gen-000000000005 x\n", TIDE_ECORRUPT,
                        "directory 'gen-000000000005 x' is not", "text after the name");
    expect_body_refused(HEAD "gen 5\n", TIDE_ECORRUPT,
                        "tide.generations:5: gen 5: directory '' is not", "no name");
}

static void ids_out_of_order_or_repeated_are_refused(void **state)
{
    (void)state;
    expect_body_refused(HEAD "gen 5 gen-000000000005\ngen 6 gen-000000000006\n", TIDE_ECORRUPT,
                        "tide.generations:6: ids out of order: gen 6 is not below gen 5 of line 5",
                        "oldest first");
    expect_body_refused(HEAD "gen 5 gen-000000000005\ngen 5 gen-000000000005\n", TIDE_ECORRUPT,
                        "tide.generations:6: duplicate: gen 5 repeats line 5", "gen 5 twice");
    expect_body_refused("tide-generations 1\nkeep 2\nkeep 2\nrotations 0\nlast_rotation_us 0\n"
                        "gen 5 gen-000000000005\n", TIDE_ECORRUPT,
                        "tide.generations:3: duplicate: key 'keep' given twice", "keep twice");
    expect_body_refused(HEAD "gen 5 gen-000000000005\nrotations 1\n", TIDE_ECORRUPT,
                        "tide.generations:6: duplicate: key 'rotations' given twice",
                        "rotations again after the generations");
}

static void too_many_generations_are_refused(void **state)
{
    char body[8192];
    int at;
    (void)state;

    expect_body_refused(HEAD "gen 7 gen-000000000007\ngen 6 gen-000000000006\n"
                        "gen 5 gen-000000000005\n", TIDE_ECORRUPT,
                        "tide.generations:7: too many generations: 3, more than keep 2",
                        "three generations with keep 2");
    at = snprintf(body, sizeof body, "tide-generations 1\nkeep 64\nrotations 0\n"
                  "last_rotation_us 0\n");
    for (int id = 100; id > 35; id--)   /* 65 generations */
        at += snprintf(body + at, sizeof body - (size_t)at, "gen %d gen-%012d\n", id, id);
    expect_body_refused(body, TIDE_ECORRUPT,
                        "tide.generations:69: too many generations: more than 64",
                        "65 generations");
}

static void bytes_after_the_checksum_line_are_refused_as_trailing_garbage(void **state)
{
    char *text = sealed(HEAD "gen 5 gen-000000000005\n");
    size_t n = strlen(text);
    char *two = malloc(2 * n + 2);
    (void)state;

    memcpy(two, text, n);
    two[n] = 'x';
    expect_refused(two, n + 1, TIDE_ECORRUPT,
                   "tide.generations:7: trailing garbage: 1 bytes after the checksum line",
                   "one byte after the checksum");
    memcpy(two + n, text, n);
    expect_refused(two, 2 * n, TIDE_ECORRUPT, "trailing garbage", "the manifest twice over");
    two[n] = '\n';
    expect_refused(two, n + 1, TIDE_ECORRUPT, "trailing garbage", "an empty line after it");
    free(two);
    free(text);
}

static void another_format_version_is_refused_with_TIDE_EVERSION(void **state)
{
    (void)state;
    expect_body_refused("tide-generations 2\nkeep 2\nrotations 0\nlast_rotation_us 0\n"
                        "gen 5 gen-000000000005\n", TIDE_EVERSION,
                        "tide.generations:1: format version 2 is not supported (only 1)",
                        "version 2");
    expect_refused("tide-generations 9\nanything at all", 34, TIDE_EVERSION,
                   "format version 9", "version 9, whatever follows");
    expect_body_refused("nudb.dat\n", TIDE_ECORRUPT,
                        "tide.generations:1: expected 'tide-generations 1', got 'nudb.dat' "
                        "(not a generations manifest)", "another file");
}

static void every_flipped_bit_of_a_manifest_is_refused(void **state)
{
    tide_gen_manifest m = make(3, 42, 2, 41, 123456789);
    char buf[TIDE_GEN_ENCODED_MAX], what[120];
    size_t len = 0, version_at = strlen("tide-generations ");
    uint64_t refused = 0;
    (void)state;

    OK(tide_gen_manifest_encode(&m, buf, sizeof buf, &len));
    for (size_t i = 0; i < len; i++) {
        for (unsigned bit = 0; bit < 8; bit++) {
            tide_gen_manifest back;
            int rc;
            buf[i] ^= (char)(1u << bit);
            tide_err_clear();
            rc = tide_gen_manifest_decode(buf, len, &back);
            snprintf(what, sizeof what, "byte %zu ('%c') bit %u flipped", i,
                     buf[i] ^ (char)(1u << bit), bit);
            /* Only the version digit may read as another version. */
            if (i == version_at && rc == TIDE_EVERSION)
                expect_error(rc, TIDE_EVERSION, what);
            else
                expect_error(rc, TIDE_ECORRUPT, what);
            buf[i] ^= (char)(1u << bit);
            refused++;
        }
    }
    OK(tide_gen_manifest_decode(buf, len, &m));
    print_message("  %llu flipped bits of a %zu-byte manifest refused\n",
                  (unsigned long long)refused, len);
}

/* ---- the file ---- */

static tide_io_sim *sim_with_dir(void)
{
    tide_io_sim *sim = NULL;
    OK(tide_io_sim_create(&sim));
    OK(tide_io_sim_mkdir(sim, DIR));
    return sim;
}

static tide_io_sim *clone_of(tide_io_sim *sim)
{
    tide_io_sim *c = NULL;
    OK(tide_io_sim_clone(sim, &c));
    return c;
}

static void read_says_enoent_without_a_manifest_and_ignores_a_leftover_tmp(void **state)
{
    tide_io_sim *sim = sim_with_dir();
    tide_io *io = tide_io_sim_io(sim);
    tide_gen_manifest m = make(2, 3, 2, 2, 9), back;
    char junk[600];
    (void)state;

    expect_error(tide_gen_manifest_read(io, DIR, &back), TIDE_ENOENT, "an empty directory");
    memset(junk, 'x', sizeof junk);   /* longer than the manifest: write must empty it */
    OK(tide_io_sim_put_file(sim, DIR "/" TIDE_GEN_FILE_TMP, junk, sizeof junk));
    expect_error(tide_gen_manifest_read(io, DIR, &back), TIDE_ENOENT, "only a leftover .tmp");
    OK(tide_gen_manifest_write(io, DIR, &m));
    OK(tide_gen_manifest_read(io, DIR, &back));
    expect_same(&back, &m, "written over a leftover .tmp");
    OK(tide_io_sim_put_file(sim, DIR "/" TIDE_GEN_FILE, "tide-generations 1\nkeep 2\n", 25));
    expect_error(tide_gen_manifest_read(io, DIR, &back), TIDE_ECORRUPT, "a truncated file");
    expect_contains(tide_last_error(), DIR ": tide.generations:", "a truncated file");
    tide_io_sim_destroy(sim);
}

static void read_refuses_a_file_over_the_limit_without_reading_it(void **state)
{
    tide_io_sim *sim = sim_with_dir();
    tide_io *io = tide_io_sim_io(sim);
    tide_io_sim_file_stats st;
    tide_gen_manifest back;
    char *big = calloc(1, TIDE_GEN_ENCODED_MAX + 1);
    (void)state;

    OK(tide_io_sim_put_file(sim, DIR "/" TIDE_GEN_FILE, big, TIDE_GEN_ENCODED_MAX + 1));
    expect_error(tide_gen_manifest_read(io, DIR, &back), TIDE_ECORRUPT, "4097 bytes");
    expect_contains(tide_last_error(), "4097 bytes, more than a manifest's limit of 4096",
                    "4097 bytes");
    OK(tide_io_sim_file_stats_get(sim, DIR "/" TIDE_GEN_FILE, &st));
    expect_u64(st.reads, 0, "reads of the oversized file");
    free(big);
    tide_io_sim_destroy(sim);
}

static void write_and_read_on_the_posix_file_system(void **state)
{
    char dir[2048], path[2100], *text;
    tide_gen_manifest m = make(2, 8, 2, 7, 1), back;
    (void)state;

    if (th_scratch_make(dir, sizeof dir) != 0) fail_msg("no scratch directory");
    expect_error(tide_gen_manifest_read(tide_io_posix(), dir, &back), TIDE_ENOENT, "no file yet");
    OK(tide_gen_manifest_write(tide_io_posix(), dir, &m));
    OK(tide_gen_manifest_read(tide_io_posix(), dir, &back));
    expect_same(&back, &m, "posix round trip");
    text = th_slurp(th_path(path, sizeof path, dir, TIDE_GEN_FILE));
    expect_contains(text, "gen 8 gen-000000000008\ngen 7 gen-000000000007\nchecksum ",
                    "the file as cat shows it");
    free(text);
    if (th_exists(th_path(path, sizeof path, dir, TIDE_GEN_FILE_TMP)))
        fail_msg("expected no %s after a write", TIDE_GEN_FILE_TMP);
}

/* ---- crash safety ---- */

enum { READ_NONE, READ_OLD, READ_NEW };

/* What `sim` holds now: no manifest, the old, the new; anything else fails. */
static int classify(tide_io_sim *sim, const tide_gen_manifest *old, const tide_gen_manifest *new,
                    const char *what)
{
    tide_gen_manifest got;
    char g[512];
    int rc = tide_gen_manifest_read(tide_io_sim_io(sim), DIR, &got);

    if (rc == TIDE_ENOENT && old == NULL) return READ_NONE;
    if (rc != 0)
        fail_msg("%s: expected the %s or the new manifest, got %d (%s): %s", what,
                 old ? "old" : "no", rc, tide_strerror(rc), tide_last_error());
    if (old && same(&got, old)) return READ_OLD;
    if (same(&got, new)) return READ_NEW;
    describe(&got, g, sizeof g);
    fail_msg("%s: expected exactly the old or the new manifest, got {%s}", what, g);
    return -1;
}

/* A sim whose DIR holds `old` durably (none when NULL), put there by the
 * sim itself so that only the write under test can go wrong. */
static tide_io_sim *base_with(const tide_gen_manifest *old)
{
    tide_io_sim *sim = sim_with_dir();
    char buf[TIDE_GEN_ENCODED_MAX];
    size_t len = 0;

    if (old) {
        OK(tide_gen_manifest_encode(old, buf, sizeof buf, &len));
        OK(tide_io_sim_put_file(sim, DIR "/" TIDE_GEN_FILE, buf, len));
    }
    return sim;
}

typedef struct tally { uint64_t states, stops, old_seen, new_seen; } tally;

static void count(tally *t, int got)
{
    t->states++;
    if (got == READ_NEW) t->new_seen++;
    else t->old_seen++;
}

/* Every crash state of stopped `c`: each subset of its pending writes with
 * each subset of its pending namespace operations; each tear of each write
 * (with every namespace operation kept) with all, those before, or only
 * it; and SEEDS seeded crashes. Each must read as old or new; as new alone
 * when `must_be_new`. */
static void every_crash_state(tide_io_sim *c, const tide_gen_manifest *old,
                              const tide_gen_manifest *new, int must_be_new, const char *where,
                              tally *t)
{
    uint64_t k = tide_io_sim_pending_count(c), j = tide_io_sim_pending_ns_count(c);
    char what[600];

    if (k > 8 || j > 8) fail_msg("%s: %llu writes and %llu namespace operations pending, "
                                 "expected a few", where, (unsigned long long)k,
                                 (unsigned long long)j);
    for (uint64_t dm = 0; dm < (1ull << k); dm++)
        for (uint64_t nm = 0; nm < (1ull << j); nm++) {
            tide_io_sim *d = clone_of(c);
            snprintf(what, sizeof what, "%s: crash keeping writes %#llx of %llu, namespace ops "
                     "%#llx of %llu", where, (unsigned long long)dm, (unsigned long long)k,
                     (unsigned long long)nm, (unsigned long long)j);
            OK(tide_io_sim_crash_state_ns(d, dm, nm));
            int got = classify(d, old, new, what);
            if (must_be_new && got != READ_NEW) fail_msg("%s: expected the new manifest", what);
            count(t, got);
            tide_io_sim_destroy(d);
        }
    for (uint64_t i = 0; i < k; i++) {
        tide_io_sim_op_info info;
        uint64_t masks[3] = { (1ull << k) - 1, (2ull << i) - 1, 1ull << i };
        OK(tide_io_sim_pending_op(c, i, &info));
        if (info.is_truncate) continue;
        for (uint64_t at = (info.offset / 512 + 1) * 512 - info.offset; at < info.len; at += 512)
            for (size_t mi = 0; mi < 3; mi++) {
                tide_io_sim *d = clone_of(c);
                snprintf(what, sizeof what, "%s: crash keeping writes %#llx, write #%llu (%llu "
                         "bytes) torn after %llu", where, (unsigned long long)masks[mi],
                         (unsigned long long)i, (unsigned long long)info.len,
                         (unsigned long long)at);
                OK(tide_io_sim_crash_state(d, masks[mi], (int)i, at));
                int got = classify(d, old, new, what);
                if (must_be_new && got != READ_NEW) fail_msg("%s: expected the new manifest", what);
                count(t, got);
                tide_io_sim_destroy(d);
            }
    }
    for (uint64_t s = 1; s <= SEEDS; s++) {
        tide_io_sim *d = clone_of(c);
        snprintf(what, sizeof what, "%s: crash with seed %llu", where, (unsigned long long)s);
        OK(tide_io_sim_crash(d, s));
        int got = classify(d, old, new, what);
        if (must_be_new && got != READ_NEW) fail_msg("%s: expected the new manifest", what);
        count(t, got);
        tide_io_sim_destroy(d);
    }
}

/* The calls a clean write of `new` over `base` makes. */
static uint64_t clean_calls(tide_io_sim *base, const tide_gen_manifest *new)
{
    tide_io_sim *c = clone_of(base);
    uint64_t c0 = tide_io_sim_calls(c), n;
    OK(tide_gen_manifest_write(tide_io_sim_io(c), DIR, new));
    n = tide_io_sim_calls(c) - c0;
    tide_io_sim_destroy(c);
    return n;
}

/* Stop the world before call n (a persistent EIO from it on) for every n,
 * and after the last call; enumerate every crash state at each stop. */
static void crash_at_every_call(const tide_gen_manifest *old, const tide_gen_manifest *new,
                                const char *name, tally *t)
{
    tide_io_sim *base = base_with(old);
    uint64_t calls = clean_calls(base, new);
    char where[200];

    for (uint64_t n = 1; n <= calls + 1; n++) {
        tide_io_sim *c = clone_of(base);
        int rc;
        if (n <= calls) OK(tide_io_sim_fail_at(c, n, TIDE_IO_SIM_EIO, 1));
        rc = tide_gen_manifest_write(tide_io_sim_io(c), DIR, new);
        if (n <= calls)
            snprintf(where, sizeof where, "%s: world stopped before call %llu of %llu", name,
                     (unsigned long long)n, (unsigned long long)calls);
        else
            snprintf(where, sizeof where, "%s: after all %llu calls (write returned 0)", name,
                     (unsigned long long)calls);
        if (n <= calls) expect_rc(rc, TIDE_EIO, where);
        else expect_ok(rc, where);
        OK(tide_io_sim_fail_at(c, 0, TIDE_IO_SIM_NONE, 0));
        every_crash_state(c, old, new, n > calls, where, t);
        tide_io_sim_destroy(c);
        t->stops++;
    }
    tide_io_sim_destroy(base);
}

static void a_crash_at_any_call_of_a_replace_leaves_exactly_the_old_or_the_new_manifest(void **state)
{
    tide_gen_manifest old2 = make(2, 6, 2, 5, 100), new2 = old2;
    tide_gen_manifest old64 = make(64, 200, 64, 150, 100), new64 = old64;
    tide_gen_manifest first = make(3, 0, 1, 0, 0);
    unsigned nd;
    tally t = { 0, 0, 0, 0 };
    double t0 = th_now_ms();
    (void)state;

    OK(tide_gen_manifest_rotate(&new2, 200, NULL, &nd));
    OK(tide_gen_manifest_rotate(&new64, 200, NULL, &nd));
    crash_at_every_call(&old2, &new2, "G=2 replace", &t);
    crash_at_every_call(&old64, &new64, "G=64 replace (torn writes)", &t);
    crash_at_every_call(NULL, &first, "first write", &t);
    if (t.old_seen == 0 || t.new_seen == 0)
        fail_msg("expected crash states giving the old and the new manifest, got %llu old and "
                 "%llu new", (unsigned long long)t.old_seen, (unsigned long long)t.new_seen);
    print_message("  %llu stops, %llu crash states: %llu old (or none), %llu new, %.1f s\n",
                  (unsigned long long)t.stops, (unsigned long long)t.states,
                  (unsigned long long)t.old_seen, (unsigned long long)t.new_seen,
                  (th_now_ms() - t0) / 1000);
}

/* One failure point: call n fails with `kind` (once, or from then on). */
static void fail_one_call(tide_io_sim *base, const tide_gen_manifest *old,
                          const tide_gen_manifest *new, uint64_t n, uint64_t calls,
                          tide_io_sim_fault kind, int persistent, tally *t)
{
    tide_io_sim *c = clone_of(base);
    int want = kind == TIDE_IO_SIM_ENOSPC ? TIDE_ENOSPC : TIDE_EIO, rc, got;
    char where[200];

    snprintf(where, sizeof where, "call %llu of %llu fails with %s%s", (unsigned long long)n,
             (unsigned long long)calls, kind == TIDE_IO_SIM_ENOSPC ? "ENOSPC" : "EIO",
             persistent ? " from then on" : " once");
    OK(tide_io_sim_fail_at(c, n, kind, persistent));
    rc = tide_gen_manifest_write(tide_io_sim_io(c), DIR, new);
    /* ENOSPC acts on the calls that can meet a full disk; the others fail as EIO. */
    if (rc != want && rc != TIDE_EIO) expect_rc(rc, want, where);
    OK(tide_io_sim_fail_at(c, 0, TIDE_IO_SIM_NONE, 0));
    got = classify(c, old, new, where);
    /* Only the last call, the directory sync, comes after the rename. */
    if (got == READ_NEW && n != calls)
        fail_msg("%s: expected the old manifest in place (the failure came before the rename), "
                 "got the new one", where);
    if (got != READ_NEW && n == calls)
        fail_msg("%s: expected the new manifest in place (the rename was made), got the old", where);
    every_crash_state(c, old, new, 0, where, t);
    OK(tide_gen_manifest_write(tide_io_sim_io(c), DIR, new));   /* over whatever it left */
    every_crash_state(c, old, new, 1, "and a retry that returned 0", t);
    tide_io_sim_destroy(c);
    t->stops++;
}

static void a_failure_at_any_call_of_a_replace_leaves_exactly_the_old_or_the_new_manifest(void **state)
{
    tide_gen_manifest old = make(2, 6, 2, 5, 100), new = old;
    tide_io_sim *base;
    const tide_io_sim_fault kinds[2] = { TIDE_IO_SIM_EIO, TIDE_IO_SIM_ENOSPC };
    unsigned nd;
    uint64_t calls;
    tally t = { 0, 0, 0, 0 };
    (void)state;

    OK(tide_gen_manifest_rotate(&new, 200, NULL, &nd));
    base = base_with(&old);
    calls = clean_calls(base, &new);
    expect_u64(calls, 6, "calls of a write (open, truncate, write_at, sync, rename, sync_dir)");
    for (uint64_t n = 1; n <= calls; n++)
        for (size_t k = 0; k < 2; k++)
            for (int persistent = 0; persistent < 2; persistent++)
                fail_one_call(base, &old, &new, n, calls, kinds[k], persistent, &t);
    print_message("  %llu failure points, %llu crash states after them\n",
                  (unsigned long long)t.stops, (unsigned long long)t.states);
    tide_io_sim_destroy(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_directory_name_is_derived_from_the_id_zero_padded),
        cmocka_unit_test(a_rotation_puts_a_new_id_in_front_and_drops_the_oldest_once_g_are_kept),
        cmocka_unit_test(init_and_encode_refuse_a_manifest_that_breaks_an_invariant),
        cmocka_unit_test(a_manifest_of_two_generations_encodes_as_the_documented_text),
        cmocka_unit_test(sixty_four_generations_round_trip_with_the_largest_numbers),
        cmocka_unit_test(a_truncated_manifest_is_refused_at_every_length),
        cmocka_unit_test(a_bad_checksum_is_refused),
        cmocka_unit_test(an_unknown_key_is_refused_naming_it_and_its_line),
        cmocka_unit_test(a_value_out_of_range_or_not_canonical_is_refused),
        cmocka_unit_test(ids_out_of_order_or_repeated_are_refused),
        cmocka_unit_test(too_many_generations_are_refused),
        cmocka_unit_test(bytes_after_the_checksum_line_are_refused_as_trailing_garbage),
        cmocka_unit_test(another_format_version_is_refused_with_TIDE_EVERSION),
        cmocka_unit_test(every_flipped_bit_of_a_manifest_is_refused),
        cmocka_unit_test(read_says_enoent_without_a_manifest_and_ignores_a_leftover_tmp),
        cmocka_unit_test(read_refuses_a_file_over_the_limit_without_reading_it),
        cmocka_unit_test(write_and_read_on_the_posix_file_system),
        cmocka_unit_test(a_crash_at_any_call_of_a_replace_leaves_exactly_the_old_or_the_new_manifest),
        cmocka_unit_test(a_failure_at_any_call_of_a_replace_leaves_exactly_the_old_or_the_new_manifest),
    };
    return th_run_group("test_gen_manifest", tests, NULL, NULL, th_teardown);
}
