/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_commit_bytes.c: a commit writes the same bytes as a commit
 * that decodes and re-encodes every touched bucket whole.
 *
 * The same inserts, in the same batches (one tide_store_sync per batch; the
 * commit timer and the pool bound are set out of reach so that nothing else
 * starts a commit), into a store with a fixed uid and salt give a nudb.key
 * and a nudb.dat whose sizes and XXH64 digests are the ones a build with
 * that whole-bucket commit (c8536e4) gave. The batches cover inserts into
 * buckets with room (in place), into full buckets (spill records), splits
 * of buckets with and without spill chains, and 48-bit hash ties are left
 * to chance. Three shapes: NuDB's b512-k32-spill fixture (512-byte blocks,
 * capacity 28, load factor 0.95, 29 spill chains) with the items inserted
 * on top; fresh 4096-byte stores at load factor 1.0 (spills) and 0.5 (the
 * default shape).
 *
 * Each store lives in a mkdtemp directory (or a fixture's copy) removed
 * in the teardown.
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

#include "store/full.h"
#include "helpers.h"
#include "expect.h"

typedef struct shape {
    const char *name;
    const char *fixture;           /* NULL: a fresh store */
    unsigned block_size;
    double load_factor;
    uint64_t key_bytes, dat_bytes, key_xxh, dat_xxh;   /* as main c8536e4 wrote them */
} shape;

/* Batch sizes, in order: 1 item, a few, hundreds, thousands. */
static const unsigned batches[] = { 1, 2, 5, 50, 300, 1000, 3, 2000, 7, 5000, 1, 4000, 600 };

typedef struct fixture { char dir[4096]; } fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (f == NULL) return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (f->dir[0]) th_rmrf(f->dir);
    free(f);
    return 0;
}

static void digest(const char *dir, const char *name, uint64_t *size, uint64_t *xxh)
{
    char path[4200];
    uint8_t *buf;
    size_t len;

    expect_rc(th_read_file(th_path(path, sizeof path, dir, name), &buf, &len), 0, name);
    *size = len;
    *xxh = XXH64(buf, len, 0);
    free(buf);
}

static void load(fixture *f, const shape *sh)
{
    const char *dir;
    tide_store_create_opts co;
    tide_store_opts o;
    tide_store *s;
    uint8_t key[32], val[400];
    uint64_t item = 1000000;       /* past any fixture's items */

    if (sh->fixture) {
        expect_rc(th_copy_fixture(sh->fixture, f->dir, sizeof f->dir), 0, "copy the fixture");
    } else {
        expect_rc(th_mkdtemp(f->dir, sizeof f->dir), 0, "mkdtemp");
        tide_store_create_opts_init(&co);
        co.key_size = sizeof key;
        co.block_size = sh->block_size;
        co.load_factor = sh->load_factor;
        co.salt = 0x15151515ull;
        co.uid = 0x1515;
        expect_rc(tide_store_create(f->dir, &co), 0, "create");
    }
    dir = f->dir;
    tide_store_opts_init(&o);
    o.commit_interval_ms = 3600u * 1000u;       /* only the syncs commit */
    o.burst_bytes = (size_t)256 << 20;
    expect_rc(tide_store_open(&s, dir, &o), 0, "open");
    for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++) {
        for (unsigned k = 0; k < batches[b]; k++, item++) {
            size_t len = th_len(item, 1, sizeof val);
            th_key(item, sizeof key, key);
            th_value(item, len, val);
            expect_rc(tide_store_insert(s, key, val, len), 0, "insert");
        }
        expect_rc(tide_store_sync(s), 0, "sync");
    }
    expect_rc(tide_store_close(s), 0, "close");
}

static void expect_shape(fixture *f, const shape *sh)
{
    uint64_t ks, kx, ds, dx;

    load(f, sh);
    digest(f->dir, "nudb.key", &ks, &kx);
    digest(f->dir, "nudb.dat", &ds, &dx);
    if (ks != sh->key_bytes || kx != sh->key_xxh || ds != sh->dat_bytes || dx != sh->dat_xxh)
        fail_msg("%s: nudb.key %" PRIu64 " bytes XXH64 0x%016" PRIx64 ", nudb.dat %" PRIu64
                 " bytes XXH64 0x%016" PRIx64 "; main c8536e4 wrote %" PRIu64 " bytes 0x%016"
                 PRIx64 " and %" PRIu64 " bytes 0x%016" PRIx64, sh->name, ks, kx, ds, dx,
                 sh->key_bytes, sh->key_xxh, sh->dat_bytes, sh->dat_xxh);
}

static void inserts_on_the_b512_spill_fixture_give_the_bytes_the_old_commit_wrote(void **state)
{
    static const shape sh = { "b512-k32-spill + inserts", "b512-k32-spill", 0, 0, 308736, 3662236,
                              0xe2ce1f0cc131b6a3ull, 0x8dd50156c8b06604ull };
    expect_shape(*state, &sh);
}

static void blocks_of_4096_at_load_factor_1_give_the_bytes_the_old_commit_wrote(void **state)
{
    static const shape sh = { "b4096 lf1.0", NULL, 4096, 1.0, 241664, 3211510,
                              0x194e0a63e7b7ae1eull, 0x7c4f6b394639050aull };
    expect_shape(*state, &sh);
}

static void default_blocks_at_load_factor_half_give_the_bytes_the_old_commit_wrote(void **state)
{
    static const shape sh = { "b4096 lf0.5", NULL, 4096, 0.5, 475136, 3100756,
                              0x2684ee9be46bb05aull, 0x629acfbb2fd63847ull };
    expect_shape(*state, &sh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(inserts_on_the_b512_spill_fixture_give_the_bytes_the_old_commit_wrote,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(blocks_of_4096_at_load_factor_1_give_the_bytes_the_old_commit_wrote,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(default_blocks_at_load_factor_half_give_the_bytes_the_old_commit_wrote,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
