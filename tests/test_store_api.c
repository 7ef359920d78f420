/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_api.c: the public interface of tide/store.h as a program
 * linked against libtide uses it, through its opaque options, setters and
 * sized results (src/store/api.c).
 *
 *   1. Each setter takes a value in its range and refuses one outside it
 *      with TIDE_EINVAL naming the value, keeping the option as it was.
 *   2. A store is created, opened, written and read through the public
 *      calls alone; its statistics say what was created.
 *   3. A result is filled as far as its caller's `size` says and no
 *      further, and `size` says how far: a program built against a smaller
 *      (older) structure gets its fields and nothing past them; one built
 *      against a larger (newer) one gets the library's size back.
 *   4. The tools (visit, verify, recover, rekey) give their small results,
 *      and refuse flags they do not know.
 *
 * Each test works in a scratch directory th_teardown removes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "store/full.h"
#include "helpers.h"
#include "expect.h"

#define NKEYS 200u

static void make_store(const char *dir, unsigned block_size)
{
    tide_store_create_opts *c = NULL;

    expect_ok(tide_store_create_opts_new(&c), "create options");
    expect_ok(tide_store_create_opts_set_key_size(c, 32), "key size 32");
    expect_ok(tide_store_create_opts_set_block_size(c, block_size), "block size");
    expect_ok(tide_store_create(dir, c), "create");
    tide_store_create_opts_free(c);
}

static void fill(const char *dir, unsigned n)
{
    tide_store_opts *o = NULL;
    tide_store *s = NULL;
    uint8_t key[32], val[100];

    expect_ok(tide_store_opts_new(&o), "open options");
    expect_ok(tide_store_opts_set_commit_interval(o, 20), "commit interval");
    expect_ok(tide_store_open(&s, dir, o), "open");
    tide_store_opts_free(o);
    for (unsigned i = 0; i < n; i++) {
        th_key(i, 32, key);
        th_value(i, sizeof val, val);
        expect_ok(tide_store_insert(s, key, val, sizeof val), "insert");
    }
    expect_ok(tide_store_close(s), "close");
}

/* 1. */
static void setters_refuse_values_out_of_range_and_keep_the_option(void **state)
{
    tide_store_create_opts *c = NULL;
    tide_store_opts *o = NULL;

    (void)state;
    expect_ok(tide_store_create_opts_new(&c), "create options");
    expect_rc(tide_store_create_opts_set_key_size(c, 0), TIDE_EINVAL, "key size 0");
    expect_contains(tide_last_error(), "key size 0", "the error names the value");
    expect_rc(tide_store_create_opts_set_key_size(c, 65536), TIDE_EINVAL, "key size 65536");
    expect_ok(tide_store_create_opts_set_key_size(c, 65535), "key size 65535");
    expect_rc(tide_store_create_opts_set_block_size(c, 5000), TIDE_EINVAL, "block size 5000");
    expect_contains(tide_last_error(), "5000", "the error names the value");
    expect_rc(tide_store_create_opts_set_block_size(c, 65536), TIDE_EINVAL, "block size 65536");
    expect_rc(tide_store_create_opts_set_load_factor(c, 0.0), TIDE_EINVAL, "load factor 0");
    expect_rc(tide_store_create_opts_set_load_factor(c, 1.5), TIDE_EINVAL, "load factor 1.5");
    expect_u64(c->key_size, 65535, "the key size kept through the refusals");
    expect_u64(c->block_size, TIDE_BLOCK_SIZE_DEFAULT, "the block size kept");
    if (c->load_factor != TIDE_LOAD_FACTOR_DEFAULT) fail_msg("the load factor changed: %g", c->load_factor);
    tide_store_create_opts_free(c);

    expect_ok(tide_store_opts_new(&o), "open options");
    expect_rc(tide_store_opts_set_burst(o, 1024), TIDE_EINVAL, "burst 1 KiB");
    expect_contains(tide_last_error(), "1024", "the error names the value");
    expect_rc(tide_store_opts_set_commit_interval(o, 0), TIDE_EINVAL, "commit interval 0");
    expect_rc(tide_store_opts_set_index_lag(o, (2ull << 40)), TIDE_EINVAL, "index lag 2 TiB");
    expect_rc(tide_store_opts_set_read_only(o, 2), TIDE_EINVAL, "read_only 2");
    expect_rc(tide_store_opts_set_page_memory(o, 4096), TIDE_EINVAL, "page memory 4 KiB");
    expect_contains(tide_last_error(), "4096", "the error names the value");
    expect_u64(o->page_memory, 0, "the page memory kept (the machine's)");
    expect_u64(o->burst_bytes, TIDE_BURST_DEFAULT, "the burst kept");
    expect_u64(o->commit_interval_ms, TIDE_COMMIT_INTERVAL_DEFAULT_MS, "the interval kept");
    expect_ok(tide_store_opts_set_index_lag(o, 1u << 20), "index lag 1 MiB");
    expect_ok(tide_store_opts_set_force(o, 1), "force");
    expect_ok(tide_store_opts_set_pread(o, 1), "pread");
    expect_ok(tide_store_opts_set_page_memory(o, 2ull << 30), "page memory 2 GiB");
    expect_u64(o->page_memory, 2ull << 30, "page memory set");
    expect_u64(o->index_lag_bytes, 1u << 20, "index lag set");
    expect_u64((uint64_t)o->ignore_holders, 1, "force is the holders check skipped");
    expect_u64((uint64_t)o->pread, 1, "pread is the maps left out");
    tide_store_opts_free(o);
    tide_store_opts_free(NULL);
    tide_store_create_opts_free(NULL);
}

/* 2 and 3. */
static void a_store_made_and_read_through_the_public_calls_states_itself(void **state)
{
    char dir[256];
    tide_store_create_opts *c = NULL;
    tide_store *s = NULL;
    tide_store_stats st;
    uint8_t key[32], want[100];
    void *got = NULL;
    size_t len = 0;

    (void)state;
    if (th_scratch_make(dir, sizeof dir) != 0) fail_msg("scratch");
    expect_ok(tide_store_create_opts_new(&c), "create options");
    expect_rc(tide_store_create(dir, c), TIDE_EINVAL, "create without a key size");
    tide_store_create_opts_free(c);
    make_store(dir, 8192);
    fill(dir, NKEYS);
    expect_ok(tide_store_open(&s, dir, NULL), "open with the defaults");
    th_key(7, 32, key);
    th_value(7, sizeof want, want);
    expect_ok(tide_store_fetch(s, key, &got, &len), "fetch");
    if (len != sizeof want || memcmp(got, want, len) != 0) fail_msg("fetched the wrong bytes");
    free(got);
    expect_rc(tide_store_contains(s, key), 1, "contains");

    memset(&st, 0xab, sizeof st);
    st.size = sizeof st;
    expect_ok(tide_store_stat(s, &st), "stat");
    expect_u64(st.size, sizeof st, "the whole structure filled");
    expect_u64(st.key_size, 32, "key size");
    expect_u64(st.block_size, 8192, "block size");
    expect_u64(st.appnum, 1, "appnum");
    expect_u64(st.fetches, 1, "fetches by this handle");
    if (st.dat_file_bytes < NKEYS * 100u) fail_msg("nudb.dat holds %llu bytes", (unsigned long long)st.dat_file_bytes);

    /* A program whose structure ends after key_size. */
    memset(&st, 0xab, sizeof st);
    st.size = offsetof(tide_store_stats, key_size) + sizeof st.key_size;
    expect_ok(tide_store_stat(s, &st), "stat of an older, smaller structure");
    expect_u64(st.size, offsetof(tide_store_stats, key_size) + sizeof st.key_size, "size: what was filled");
    expect_u64(st.key_size, 32, "its one field");
    expect_u64(st.block_size, 0xababababu, "nothing written past it");
    /* A program whose structure is larger (a newer header). */
    {
        struct { tide_store_stats known; uint64_t later; } big;
        big.known.size = sizeof big;
        big.later = 42;
        expect_ok(tide_store_stat(s, &big.known), "stat of a newer, larger structure");
        expect_u64(big.known.size, sizeof(tide_store_stats), "size: the library's own");
        expect_u64(big.later, 42, "the field the library does not know is left alone");
    }
    st.size = 0;
    expect_rc(tide_store_stat(s, &st), TIDE_EINVAL, "a result without its size");
    expect_ok(tide_store_close(s), "close");
}

/* 4. */
static int count_record(void *arg, uint64_t offset, const void *key, unsigned key_size, const void *value,
                        uint64_t len)
{
    (void)offset, (void)key, (void)key_size, (void)value, (void)len;
    ++*(unsigned *)arg;
    return 0;
}

static void the_tools_give_their_small_results(void **state)
{
    char dir[256];
    unsigned seen = 0;
    tide_store_visit_result vr = { .size = sizeof vr };
    tide_store_verify_result ver = { .size = sizeof ver };
    tide_store_recover_result rr = { .size = sizeof rr };
    tide_store_rekey_result kr = { .size = sizeof kr };
    tide_store *s = NULL;
    tide_store_stats st = { .size = sizeof st };

    (void)state;
    if (th_scratch_make(dir, sizeof dir) != 0) fail_msg("scratch");
    make_store(dir, 4096);
    fill(dir, NKEYS);
    expect_ok(tide_store_visit(dir, count_record, &seen, &vr), "visit");
    expect_u64(seen, NKEYS, "records the callback saw");
    expect_u64(vr.records, NKEYS, "records in the result");
    expect_u64(vr.value_bytes, NKEYS * 100u, "value bytes");
    expect_ok(tide_store_verify(dir, &ver), "verify");
    expect_u64(ver.keys, NKEYS, "keys the key file reaches");
    expect_u64(ver.data_records, NKEYS, "records in nudb.dat");
    expect_u64(ver.block_size, 4096, "block size");
    expect_ok(tide_store_recover(dir, 0, &rr), "recover a clean store");
    expect_u64((uint64_t)rr.had_log, 0, "no log to apply");
    expect_rc(tide_store_recover(dir, 0x80, NULL), TIDE_EINVAL, "recover with an unknown flag");
    expect_rc(tide_store_rekey(dir, 5000, 0, NULL), TIDE_EINVAL, "rekey to block size 5000");
    expect_rc(tide_store_rekey(dir, 16384, 0x80, NULL), TIDE_EINVAL, "rekey with an unknown flag");
    expect_ok(tide_store_rekey(dir, 16384, 0, &kr), "rekey to 16384");
    expect_u64(kr.records, NKEYS, "records indexed");
    expect_u64(kr.old_block_size, 4096, "old block size");
    expect_u64(kr.new_block_size, 16384, "new block size");
    expect_ok(tide_store_open(&s, dir, NULL), "open after the rekey");
    expect_ok(tide_store_stat(s, &st), "stat");
    expect_u64(st.block_size, 16384, "the store's block size now");
    expect_ok(tide_store_close(s), "close");
    seen = 0;
    expect_rc(tide_store_visit("/nonexistent/tide-store", count_record, &seen, NULL), TIDE_ENOENT,
              "visit where there is no store");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(setters_refuse_values_out_of_range_and_keep_the_option, th_teardown),
        cmocka_unit_test_teardown(a_store_made_and_read_through_the_public_calls_states_itself, th_teardown),
        cmocka_unit_test_teardown(the_tools_give_their_small_results, th_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
