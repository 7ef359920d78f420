/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_archive_tools.c: the operator's tools over an archive
 * (src/archive/tools.h, `tide archive ls|verify|get|restore`) against a
 * real Ceph cluster (tests/support/ceph.h).
 *
 * The group's setup builds one node the way a node runs: a data directory
 * of generations (tide_gens, online delete, keep 3) filled with 7500
 * objects over five generations, four rotations, each generation sealed
 * in the archive (tide_archive, 64 KiB chunks, so each generation is many
 * objects) before the next rotation, and the newest one's data uploaded
 * up to its durable size. Every test works on that archive. Those that
 * damage it (a changed byte, a removed object, a partial record after the
 * open generation's data, stray objects) first keep each object they
 * touch, and the teardown of every test puts it back, whatever the
 * outcome, so each test sees the archive as built; the last test (a node
 * started on a restored directory) goes on writing the archive, as a node
 * would, and comes last for that reason.
 *
 * Each of these breakages of src/archive/tools*.c was seen to fail a test
 * here (checked by hand): verify comparing no sums (the changed byte
 * passes); no contiguity check of an open generation (its removed chunk
 * passes); restore without its walk to the last whole record (the key
 * file's rebuild meets the partial record and the restore fails); restore
 * without the archive's cut (the open generation's last chunk keeps the
 * partial record's bytes); a restored open generation made anew, with
 * another uid (the node's uploader stops at the archive's generation of
 * another store, and nothing more is uploaded).
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "archive/archive.h"
#include "archive/rados.h"
#include "archive/tools.h"
#include "gen/gens.h"
#include "store/full.h"
#include "util/clock.h"
#include "util/log.h"
#include "helpers.h"
#include "expect.h"
#include "support/ceph.h"

#define OK(expr) expect_ok((expr), #expr)
#define KS       32
#define VMIN     50
#define VMAX     400
#define PER_GEN  1500
#define GENS     5
#define ITEMS    (PER_GEN * GENS)
#define KEEP     3
#define CHUNK    (64u << 10)

static th_ceph cluster;

/* The node the group's setup builds. */
static struct node {
    char     prefix[64];
    char     base[2048];          /* the group's scratch directory */
    char     dir[2100];           /* base/node: the node's data directory */
    uint64_t gen_of[ITEMS + 600]; /* the generation each item went into */
    uint64_t open_id;             /* the newest, open in the archive */
    uint64_t open_bytes;          /* its nudb.dat bytes the archive holds */
} node;

/* ---- helpers ---- */

static void tool_opts(tide_archive_tool_opts *o)
{
    memset(o, 0, sizeof *o);
    o->conf = cluster.conf;
    o->pool = cluster.pool;
    o->prefix = node.prefix;
    o->timeout_s = 20;
}

static tide_archive_tool *tool_open(void)
{
    tide_archive_tool_opts o;
    tide_archive_tool *t = NULL;

    tool_opts(&o);
    expect_ok(tide_archive_tool_open(&t, &o), "connecting the tools to the archive");
    return t;
}

static tide_rados *rados_open(void)
{
    tide_rados_opts ro = { cluster.conf, NULL, cluster.pool, 20 };
    tide_rados *r = NULL;

    expect_ok(tide_rados_connect(&r, &ro), "connecting to the pool");
    return r;
}

static void archive_opts(tide_archive_opts *ao, tide_gens *g, const char *dir)
{
    tide_archive_opts_init(ao);
    ao->conf = cluster.conf;
    ao->pool = cluster.pool;
    ao->prefix = node.prefix;
    ao->timeout_s = 20;
    ao->gens = g;
    ao->data_dir = dir;
    ao->chunk_bytes = CHUNK;
    ao->poll_ms = 20;
}

static void gens_opts(tide_gens_opts *o, int read_only)
{
    tide_gens_opts_init(o);
    o->online_delete = 1;
    o->keep = read_only ? 0 : KEEP;
    o->create_if_missing = !read_only;
    o->key_size = KS;
    o->store.read_only = read_only;
}

/* Until the archive says generation `id` is sealed (at most a minute). */
static void wait_sealed(tide_archive *a, uint64_t id)
{
    tide_archive_info in;

    for (int i = 0; i < 6000 && !tide_archive_sealed(a, id); i++) {
        tide_archive_kick(a);
        usleep(10000);
    }
    if (!tide_archive_sealed(a, id)) {
        tide_archive_get_info(a, &in);
        fail_msg("generation %" PRIu64 " not sealed in the archive after a minute: up %d, "
                 "problem '%s'", id, in.up, in.problem);
    }
}

/* Insert items [from, to) into the newest generation, noting where each went. */
static void put_items(tide_gens *g, uint64_t from, uint64_t to)
{
    uint8_t key[KS], val[VMAX];

    for (uint64_t i = from; i < to; i++) {
        size_t len = th_len(i, VMIN, VMAX);
        th_key(i, KS, key);
        th_value(i, len, val);
        expect_ok(tide_gens_insert(g, key, val, len, &node.gen_of[i]), "inserting an item");
    }
    expect_ok(tide_gens_sync(g), "syncing the generations");
}

/* The newest generation's data uploaded up to its durable size. */
static uint64_t wait_uploaded(tide_archive *a, tide_gens *g)
{
    tide_gens_info gi;

    tide_gens_get_info(g, &gi);
    tide_archive_kick(a);
    expect_ok(tide_archive_wait(a, gi.gens[0].id, gi.gens[0].dat_durable, 60000),
              "waiting for the newest generation's upload");
    return gi.gens[0].dat_durable;
}

static int group_setup(void **state)
{
    tide_gens_opts go;
    tide_archive_opts ao;
    tide_gens *g = NULL;
    tide_archive *a = NULL;

    (void)state;
    tide_log_set_level(TIDE_LOG_WARN);
    if (th_ceph_start(&cluster) != 0) return 0;     /* each test says why */
    snprintf(node.prefix, sizeof node.prefix, "tools-%d-%" PRIx64, (int)getpid(),
             tide_clock_real_us() & 0xffffff);
    if (th_scratch_make(node.base, sizeof node.base) != 0) return -1;
    th_scratch_keep(node.base);
    snprintf(node.dir, sizeof node.dir, "%s/node", node.base);
    gens_opts(&go, 0);
    if (tide_gens_open(&g, node.dir, &go) != 0) return -1;
    archive_opts(&ao, g, node.dir);
    if (tide_archive_open(&a, &ao) != 0) {
        fprintf(stderr, "test_archive_tools: the archive does not open: %s\n", tide_last_error());
        return -1;
    }
    for (unsigned r = 0; r < GENS; r++) {
        put_items(g, (uint64_t)r * PER_GEN, (uint64_t)(r + 1) * PER_GEN);
        if (r + 1 == GENS) break;
        uint64_t was = tide_gens_newest_id(g);
        if (tide_gens_rotate(g, NULL) != 0) return -1;
        wait_sealed(a, was);
    }
    node.open_id = tide_gens_newest_id(g);
    node.open_bytes = wait_uploaded(a, g);
    tide_archive_close(a);
    return tide_gens_close(g) == 0 ? 0 : -1;
}

static int remove_object(void *arg, const char *oid)
{
    return tide_rados_remove(arg, oid);
}

static int group_teardown(void **state)
{
    char want[80];

    (void)state;
    if (cluster.up && node.prefix[0]) {
        tide_rados_opts ro = { cluster.conf, NULL, cluster.pool, 20 };
        tide_rados *r = NULL;
        snprintf(want, sizeof want, "%s.", node.prefix);
        if (tide_rados_connect(&r, &ro) == 0) tide_rados_list(r, want, remove_object, r);
        tide_rados_close(r);
    }
    if (node.base[0]) th_scratch_remove(node.base);
    th_ceph_stop(&cluster);
    return 0;
}

static unsigned items_in(uint64_t id)
{
    unsigned n = 0;
    for (unsigned i = 0; i < ITEMS; i++) n += node.gen_of[i] == id;
    return n;
}

static void oid_dat(char *buf, uint64_t id, unsigned chunk) { tide_archive_oid_dat(buf, node.prefix, id, chunk); }

/* Every item of the generations in [lo, hi] reads its exact value from
 * the data directory `dir` (read-only: nothing copied forward), and every
 * other of the first `items` reads as absent. */
static void expect_dir_holds(const char *dir, uint64_t lo, uint64_t hi, unsigned items)
{
    tide_gens_opts go;
    tide_gens *g = NULL;
    uint8_t key[KS], want[VMAX];

    gens_opts(&go, 1);
    expect_ok(tide_gens_open(&g, dir, &go), "opening the restored directory read-only");
    for (unsigned i = 0; i < items; i++) {
        void *got = NULL;
        size_t len = 0, wlen = th_len(i, VMIN, VMAX);
        int held = node.gen_of[i] >= lo && node.gen_of[i] <= hi;
        int rc;

        th_key(i, KS, key);
        rc = tide_gens_fetch(g, key, &got, &len, NULL);
        if (!held) {
            free(got);
            if (rc != TIDE_ENOTFOUND)
                fail_msg("item %u of generation %" PRIu64 " (not restored): expected not found, "
                         "got %d (%s)", i, node.gen_of[i], rc, tide_strerror(rc));
            continue;
        }
        if (rc != 0)
            fail_msg("item %u of generation %" PRIu64 ": expected its value, got %d (%s): %s", i,
                     node.gen_of[i], rc, tide_strerror(rc), tide_last_error());
        th_value(i, wlen, want);
        if (len != wlen || memcmp(got, want, wlen) != 0)
            fail_msg("item %u: expected its %zu bytes, got %zu different ones", i, wlen, len);
        free(got);
    }
    expect_ok(tide_gens_close(g), "closing the restored directory");
}

/* ---- damage, mended whatever the outcome ----
 *
 * A test that damages the archive first keeps each object it will touch
 * (its bytes and its sum attribute, or that it was not there); the
 * teardown of every test puts them back, so a test that fails half-way
 * leaves the archive as the group built it for the next. */

typedef struct kept {
    char   oid[TIDE_ARCHIVE_OID_CAP];
    int    existed;
    char  *bytes;
    size_t len;
    char   sum[32];
} kept;

static kept mends[8];
static unsigned nmends;

static void keep_object(tide_rados *r, const char *oid)
{
    kept *k = &mends[nmends];
    int rc;

    if (nmends == sizeof mends / sizeof mends[0]) fail_msg("too many objects kept");
    memset(k, 0, sizeof *k);
    snprintf(k->oid, sizeof k->oid, "%s", oid);
    rc = tide_rados_read_full(r, oid, 1u << 30, &k->bytes, &k->len, NULL);
    if (rc != TIDE_ENOENT) OK(rc);
    k->existed = rc == 0;
    if (k->existed && tide_rados_getxattr(r, oid, "tide.xxh64", k->sum, sizeof k->sum) != 0)
        k->sum[0] = '\0';
    nmends++;
}

/* Put every kept object back as it was. 0, or -1 when one could not be. */
static int mend_all(void)
{
    tide_rados_opts ro = { cluster.conf, NULL, cluster.pool, 20 };
    tide_rados *r = NULL;
    int bad = 0;

    if (nmends && tide_rados_connect(&r, &ro) != 0) bad = 1;
    for (unsigned i = 0; i < nmends; i++) {
        kept *k = &mends[i];
        if (r && k->existed) {
            bad |= tide_rados_write_full(r, k->oid, k->bytes, k->len, NULL) != 0;
            if (k->sum[0]) bad |= tide_rados_setxattr(r, k->oid, "tide.xxh64", k->sum) != 0;
        } else if (r) {
            bad |= tide_rados_remove(r, k->oid) != 0;
        }
        free(k->bytes);
    }
    if (bad) fprintf(stderr, "test_archive_tools: an object could not be put back: %s\n", tide_last_error());
    nmends = 0;
    tide_rados_close(r);
    return bad ? -1 : 0;
}

static int test_teardown(void **state)
{
    int rc = mend_all();
    th_teardown(state);
    return rc;
}

/* ---- ls ---- */

static void ls_lists_every_generation_and_the_objects_the_manifest_does_not_name(void **state)
{
    tide_archive_tool *t;
    tide_archive_ls l;
    tide_rados *r;
    char stray1[TIDE_ARCHIVE_OID_CAP], stray2[TIDE_ARCHIVE_OID_CAP];

    (void)state;
    th_ceph_require(&cluster);
    t = tool_open();
    expect_ok(tide_archive_tool_ls(t, &l), "ls");
    expect_u64(l.has_manifest, 1, "a manifest");
    expect_u64(l.count, GENS, "every generation listed");
    expect_u64(l.sealed, GENS - 1, "sealed generations");
    expect_u64(l.open, 1, "open generations");
    expect_u64(l.keep, KEEP, "the node's keep");
    expect_u64(l.gens[0].id, node.open_id, "the open one first");
    expect_u64(l.gens[0].state, TIDE_ARCHIVE_OPEN, "the newest is open");
    expect_u64(l.gens[0].dat_bytes, node.open_bytes, "the open one's uploaded bytes");
    expect_u64(l.gens[0].objects, tide_archive_chunks(node.open_bytes, CHUNK), "its data chunks");
    for (unsigned i = 1; i < l.count; i++) {
        const tide_archive_ls_gen *e = &l.gens[i];
        expect_u64(e->state, TIDE_ARCHIVE_SEALED, "an older generation is sealed");
        expect_u64(e->records, items_in(e->id), "a sealed generation's records are its items");
        expect_u64(e->objects, tide_archive_chunks(e->dat_bytes, CHUNK) +
                   tide_archive_chunks(e->key_bytes, CHUNK) + 1, "its chunks and its filter");
        expect_u64(e->missing, 0, "none missing");
        if (tide_archive_chunks(e->dat_bytes, CHUNK) < 3) fail_msg("generation %" PRIu64 ": "
            "expected several data chunks, got %" PRIu64 " bytes", e->id, e->dat_bytes);
    }
    expect_u64(l.unnamed, 0, "no unnamed object");
    tide_archive_ls_free(&l);

    r = rados_open();
    oid_dat(stray1, 99, 0);
    snprintf(stray2, sizeof stray2, "%s.leftover", node.prefix);
    keep_object(r, stray1);
    keep_object(r, stray2);
    OK(tide_rados_write_full(r, stray1, "abc", 3, NULL));
    OK(tide_rados_write_full(r, stray2, "abcdefgh", 8, NULL));
    expect_ok(tide_archive_tool_ls(t, &l), "ls with two strays");
    expect_u64(l.unnamed, 2, "the two strays are unnamed");
    expect_u64(l.unnamed_listed, 2, "and listed");
    expect_str(l.unnamed_list[0].oid, stray1, "sorted by name: the generation's first");
    expect_u64(l.unnamed_list[0].bytes, 3, "with its size");
    expect_str(l.unnamed_list[1].oid, stray2, "then the other");
    expect_u64(l.unnamed_bytes, 11, "their bytes");
    tide_archive_ls_free(&l);
    expect_ok(mend_all(), "removing the strays");
    tide_rados_close(r);
    tide_archive_tool_close(t);
}

/* ---- verify ---- */

static void verify_passes_on_a_sound_archive_and_deep_proves_each_sealed_store(void **state)
{
    tide_archive_verify_opts vo = { .deep = 1 };
    tide_archive_tool *t;
    tide_archive_verify v;

    (void)state;
    th_ceph_require(&cluster);
    t = tool_open();
    expect_ok(tide_archive_tool_verify(t, &vo, &v), "verify --deep of the archive as built");
    expect_u64(v.problems, 0, "no problem");
    expect_u64(v.count, GENS, "every generation looked at");
    for (unsigned i = 0; i < v.count; i++) {
        const tide_archive_verify_gen *e = &v.gens[i];
        if (e->state != TIDE_ARCHIVE_SEALED) {
            expect_u64(e->deep, 0, "an open generation is not opened as a store");
            expect_u64(e->bytes, node.open_bytes, "an open generation's chunks are read");
            continue;
        }
        expect_u64(e->deep, 1, "the store's verify ran on a sealed generation");
        expect_ok(e->deep_rc, "the store's verify of a sealed generation");
        expect_u64(e->report.keys, items_in(e->id), "it found every item as a key");
    }
    tide_archive_verify_free(&v);
    tide_archive_tool_close(t);
}

static void verify_names_a_chunk_with_a_changed_byte_and_passes_once_it_is_mended(void **state)
{
    tide_archive_tool *t;
    tide_archive_verify v;
    tide_rados *r;
    char oid[TIDE_ARCHIVE_OID_CAP];
    uint8_t byte, changed;
    size_t got = 0;

    (void)state;
    th_ceph_require(&cluster);
    r = rados_open();
    oid_dat(oid, node.open_id - 2, 1);
    keep_object(r, oid);
    OK(tide_rados_read(r, oid, 1000, &byte, 1, &got));
    changed = byte ^ 0x5a;
    OK(tide_rados_write(r, oid, 1000, &changed, 1));
    t = tool_open();
    expect_error(tide_archive_tool_verify(t, NULL, &v), TIDE_ECORRUPT, "verify of a changed byte");
    expect_u64(v.problems, 1, "one problem");
    expect_str(v.problem[0].object, oid, "named by its object");
    expect_contains(v.problem[0].what, "XXH64", "a sum that differs");
    expect_contains(tide_last_error(), oid, "the message names it too");
    tide_archive_verify_free(&v);
    expect_ok(mend_all(), "mending the byte");
    expect_ok(tide_archive_tool_verify(t, NULL, &v), "verify once mended");
    tide_archive_verify_free(&v);
    tide_archive_tool_close(t);
    tide_rados_close(r);
}

static void verify_names_a_missing_object_of_a_sealed_and_of_an_open_generation(void **state)
{
    tide_archive_tool *t;
    tide_archive_verify v;
    tide_rados *r;
    char key[TIDE_ARCHIVE_OID_CAP], dat[TIDE_ARCHIVE_OID_CAP];
    int seen_key = 0, seen_dat = 0;

    (void)state;
    th_ceph_require(&cluster);
    if (tide_archive_chunks(node.open_bytes, CHUNK) < 3) fail_msg("the open generation has too few chunks");
    r = rados_open();
    tide_archive_oid_key(key, node.prefix, node.open_id - 3, 0);
    oid_dat(dat, node.open_id, 1);
    keep_object(r, key);
    keep_object(r, dat);
    OK(tide_rados_remove(r, key));
    OK(tide_rados_remove(r, dat));
    t = tool_open();
    expect_error(tide_archive_tool_verify(t, NULL, &v), TIDE_ECORRUPT, "verify with two objects gone");
    for (unsigned i = 0; i < v.problems && i < TIDE_ARCHIVE_PROBLEMS_MAX; i++) {
        if (strcmp(v.problem[i].object, key) == 0) {
            seen_key = 1;
            expect_contains(v.problem[i].what, "missing", "the sealed generation's key chunk");
        }
        if (strcmp(v.problem[i].object, dat) == 0) {
            seen_dat = 1;
            expect_contains(v.problem[i].what, "not contiguous", "the open generation's chunk");
        }
    }
    if (!seen_key || !seen_dat)
        fail_msg("expected problems naming %s and %s; got %u, the first '%s: %s'", key, dat,
                 v.problems, v.problem[0].object, v.problem[0].what);
    tide_archive_verify_free(&v);
    expect_ok(mend_all(), "putting both back");
    expect_ok(tide_archive_tool_verify(t, NULL, &v), "verify once both are back");
    tide_archive_verify_free(&v);
    tide_archive_tool_close(t);
    tide_rados_close(r);
}

/* ---- get ---- */

static void get_finds_a_sealed_generations_values_and_says_not_found_otherwise(void **state)
{
    tide_archive_tool *t;
    uint8_t key[KS], want[VMAX];
    unsigned checked = 0, looked = 0;

    (void)state;
    th_ceph_require(&cluster);
    t = tool_open();
    for (unsigned i = 0; i < ITEMS; i += 41) {
        void *got = NULL;
        size_t len = 0, wlen = th_len(i, VMIN, VMAX);
        uint64_t gen = 0;
        int rc;

        th_key(i, KS, key);
        rc = tide_archive_tool_get(t, key, KS, &got, &len, &gen, &looked);
        if (node.gen_of[i] == node.open_id) {
            expect_error(rc, TIDE_ENOTFOUND, "an item of the open generation");
            continue;
        }
        expect_ok(rc, "get of an item of a sealed generation");
        expect_u64(gen, node.gen_of[i], "found in its generation");
        th_value(i, wlen, want);
        if (len != wlen || memcmp(got, want, wlen) != 0)
            fail_msg("item %u: expected its %zu bytes, got %zu different ones", i, wlen, len);
        free(got);
        checked++;
    }
    if (checked < 100) fail_msg("expected over 100 items checked, got %u", checked);
    {
        void *got = NULL;
        size_t len = 0;
        th_key(ITEMS + 12345, KS, key);
        expect_error(tide_archive_tool_get(t, key, KS, &got, &len, NULL, &looked), TIDE_ENOTFOUND,
                     "a key never written");
        expect_u64(looked, GENS - 1, "every sealed generation asked");
        expect_error(tide_archive_tool_get(t, key, KS - 1, &got, &len, NULL, NULL), TIDE_EKEYSIZE,
                     "a key of the wrong size");
    }
    tide_archive_tool_close(t);
}

/* ---- restore ---- */

static void restore_refuses_a_directory_that_is_not_empty_and_changes_nothing(void **state)
{
    tide_archive_restore rep;
    tide_archive_tool *t;
    char dir[2200], file[2300];
    struct stat st;

    (void)state;
    th_ceph_require(&cluster);
    snprintf(dir, sizeof dir, "%s/not-empty", node.base);
    mkdir(dir, 0755);
    th_path(file, sizeof file, dir, "notes.txt");
    th_write_file(file, "mine", 4);
    t = tool_open();
    expect_error(tide_archive_tool_restore(t, dir, NULL, &rep), TIDE_EEXIST, "restore into a directory with a file");
    expect_contains(tide_last_error(), "notes.txt", "the message names what is there");
    expect_u64(rep.count, 0, "nothing restored");
    expect_u64(th_file_size(file), 4, "the file is as it was");
    char *text = th_slurp(file);
    expect_str(text, "mine", "with its bytes");
    free(text);
    th_path(file, sizeof file, dir, "tide.generations");
    expect_u64(th_exists(file), 0, "no manifest written");
    {
        char gen[TIDE_GEN_DIR_CAP];
        tide_gen_dir_name(node.open_id, gen, sizeof gen);
        th_path(file, sizeof file, dir, gen);
        expect_u64(stat(file, &st) == 0, 0, "no generation made");
    }
    th_path(file, sizeof file, dir, "notes.txt");
    expect_error(tide_archive_tool_restore(t, file, NULL, &rep), TIDE_ENOTSTORE, "restore onto a file");
    tide_archive_tool_close(t);
}

static void restore_fails_with_eunavail_when_the_cluster_does_not_answer(void **state)
{
    tide_archive_tool_opts o;
    tide_archive_tool *t = NULL;
    char conf[2200], text[512];
    uint64_t t0;

    (void)state;
    th_ceph_require(&cluster);
    snprintf(conf, sizeof conf, "%s/away.conf", node.base);
    snprintf(text, sizeof text, "[global]\nmon_host = v2:127.0.0.1:1\nauth_cluster_required = none\n"
             "auth_service_required = none\nauth_client_required = none\n");
    th_write_file(conf, text, strlen(text));
    tool_opts(&o);
    o.conf = conf;
    o.timeout_s = 2;
    t0 = tide_clock_mono_ns();
    expect_error(tide_archive_tool_open(&t, &o), TIDE_EUNAVAIL, "connecting to a cluster that is away");
    expect_contains(tide_last_error(), "no answer within 2 s", "the message says how long it waited");
    if (tide_clock_mono_ns() - t0 > 30ull * 1000000000)
        fail_msg("expected the refusal within 30 s of a 2 s timeout, took %.1f s",
                 (double)(tide_clock_mono_ns() - t0) / 1e9);
}

static void restore_rebuilds_the_newest_generations_that_verify_and_open_with_every_value(void **state)
{
    tide_archive_restore rep;
    tide_archive_tool *t;
    tide_gen_manifest m;
    tide_gens_opts go;
    tide_gens *g = NULL;
    char dir[2200], gdir[2300];

    (void)state;
    th_ceph_require(&cluster);
    snprintf(dir, sizeof dir, "%s/restored", node.base);
    t = tool_open();
    expect_ok(tide_archive_tool_restore(t, dir, NULL, &rep), "restore into a missing directory");
    tide_archive_tool_close(t);
    expect_u64(rep.keep, KEEP, "the manifest's keep");
    expect_u64(rep.count, KEEP, "keep generations, the open one counted");
    expect_u64(rep.gens[0].id, node.open_id, "the open generation is the newest");
    expect_u64(rep.gens[0].kind, TIDE_ARCHIVE_RESTORED_OPEN, "restored from its data chunks");
    expect_u64(rep.gens[0].archived_bytes, node.open_bytes, "every byte the archive held");
    expect_u64(rep.gens[0].cut_bytes, 0, "nothing cut: it ends at a commit");
    expect_u64(rep.archive_cut, 0, "the archive left as it was");
    expect_u64(rep.left_sealed, GENS - KEEP, "the older sealed ones left in the archive");
    for (unsigned i = 1; i < rep.count; i++) {
        expect_u64(rep.gens[i].id, node.open_id - i, "then the sealed ones, newest first");
        expect_u64(rep.gens[i].kind, TIDE_ARCHIVE_RESTORED_SEALED, "downloaded whole");
    }
    for (unsigned i = 0; i < rep.count; i++) {
        tide_verify_report vr;
        th_path(gdir, sizeof gdir, dir, rep.gens[i].dir);
        expect_ok(tide_store_verify_io(gdir, NULL, &vr), "the store's verify of a restored generation");
        expect_u64(vr.keys, items_in(rep.gens[i].id), "its keys are its items");
    }
    OK(tide_gen_manifest_read(tide_io_posix(), dir, &m));
    expect_u64(m.keep, KEEP, "tide.generations keeps the node's G");
    expect_u64(m.count, KEEP, "and names the restored generations");
    expect_u64(m.rotations, node.open_id - 1, "rotations: the newest id - 1");
    expect_dir_holds(dir, node.open_id - KEEP + 1, node.open_id, ITEMS);
    gens_opts(&go, 0);
    go.store.check_invariants = 1;
    expect_ok(tide_gens_open(&g, dir, &go), "a node opens the restored directory read-write");
    expect_u64(tide_gens_newest_id(g), node.open_id, "with the open generation the newest");
    expect_ok(tide_gens_close(g), "and closes it");
    th_rmrf(dir);
}

static void restore_with_a_larger_keep_holds_every_object_and_cuts_a_partial_record(void **state)
{
    tide_archive_restore_opts ro = { .keep = GENS + 2 };
    tide_archive_restore rep;
    tide_archive_tool *t;
    tide_rados *r;
    char dir[2200], oid[TIDE_ARCHIVE_OID_CAP];
    /* A data record's head claiming 1000 value bytes, and 3 of its key's. */
    const uint8_t partial[9] = { 0, 0, 0, 0, 0x03, 0xe8, 1, 2, 3 };
    uint64_t size = 0;

    (void)state;
    th_ceph_require(&cluster);
    r = rados_open();
    oid_dat(oid, node.open_id, (unsigned)(node.open_bytes / CHUNK));
    keep_object(r, oid);
    OK(tide_rados_write(r, oid, node.open_bytes % CHUNK, partial, sizeof partial));
    snprintf(dir, sizeof dir, "%s/restored-all", node.base);
    t = tool_open();
    expect_ok(tide_archive_tool_restore(t, dir, &ro, &rep), "restore with keep 7");
    tide_archive_tool_close(t);
    expect_u64(rep.count, GENS, "every generation the archive holds");
    expect_u64(rep.gens[0].archived_bytes, node.open_bytes + sizeof partial, "the partial record downloaded");
    expect_u64(rep.gens[0].cut_bytes, sizeof partial, "and cut off");
    if (node.open_bytes % CHUNK == 0) {
        expect_error(tide_rados_stat(r, oid, &size), TIDE_ENOENT, "the chunk past the records is gone");
    } else {
        OK(tide_rados_stat(r, oid, &size));
        expect_u64(size, node.open_bytes % CHUNK, "the archive's last chunk ends where the records do");
    }
    expect_u64(rep.archive_cut, 1, "the archive's copy cut, said");
    expect_u64(rep.archive_cut_to, node.open_bytes, "back to the last whole record");
    tide_rados_close(r);
    expect_dir_holds(dir, 1, node.open_id, ITEMS);
    th_rmrf(dir);
}

/* ---- the command line ---- */

/* Run `tide archive ARGS` with the group's connection options after them
 * (a timeout of 20 s unless ARGS has one); stdout to *out, stderr too when
 * `merge`. The exit status. */
static int run_archive(const char *args, const char *conf, int merge, char **out)
{
    char cmd[12288];

    snprintf(cmd, sizeof cmd, "archive %s --conf '%s' --pool %s --prefix %s%s", args,
             conf ? conf : cluster.conf, cluster.pool, node.prefix,
             strstr(args, "--timeout") ? "" : " --timeout 20");
    return th_run_tide(cmd, merge, out);
}

static void the_command_line_lists_verifies_gets_and_restores_with_the_verbs_exit_statuses(void **state)
{
    char args[2600], dir[2200], file[2300], key_hex[2 * KS + 1];
    uint8_t key[KS], want[VMAX], *got = NULL;
    size_t len = 0, wlen;
    unsigned item = 0;
    char *out = NULL;

    (void)state;
    th_ceph_require(&cluster);
    expect_u64(run_archive("ls", NULL, 0, &out), 0, "tide archive ls");
    expect_contains(out, "generations   5 (4 sealed, 1 open, 0 deleting)", "the listing");
    expect_contains(out, "unnamed       none", "no leftover");
    free(out);
    expect_u64(run_archive("ls --json", NULL, 0, &out), 0, "tide archive ls --json");
    expect_contains(out, "\"state\": \"open\"", "the JSON listing");
    free(out);
    expect_u64(run_archive("verify --deep", NULL, 0, &out), 0, "tide archive verify --deep");
    expect_contains(out, "verdict       sound", "the verdict");
    expect_contains(out, "a sound NuDB store", "the store's verify of each sealed one");
    free(out);

    while (node.gen_of[item] == node.open_id) item++;
    th_key(item, KS, key);
    for (unsigned i = 0; i < KS; i++) snprintf(key_hex + 2 * i, 3, "%02x", key[i]);
    snprintf(file, sizeof file, "%s/value.bin", node.base);
    snprintf(args, sizeof args, "get %s > '%s'", key_hex, file);
    expect_u64(run_archive(args, NULL, 0, &out), 0, "tide archive get of a sealed item");
    free(out);
    OK(th_read_file(file, &got, &len));
    wlen = th_len(item, VMIN, VMAX);
    th_value(item, wlen, want);
    if (len != wlen || memcmp(got, want, wlen) != 0)
        fail_msg("tide archive get: expected the item's %zu bytes on stdout, got %zu", wlen, len);
    free(got);
    memset(key_hex, 'e', 2 * KS);
    snprintf(args, sizeof args, "get %s", key_hex);
    expect_u64(run_archive(args, NULL, 1, &out), 1, "tide archive get of a key never written");
    expect_contains(out, "not found", "said on stderr");
    free(out);
    expect_u64(run_archive("get 0011", NULL, 1, &out), 2, "tide archive get of a key of 2 bytes");
    free(out);

    snprintf(dir, sizeof dir, "%s/cli-restored", node.base);
    snprintf(args, sizeof args, "restore '%s'", node.dir);
    expect_u64(run_archive(args, NULL, 1, &out), 1, "tide archive restore into the node's own directory");
    expect_contains(out, "is not empty", "refused");
    free(out);
    snprintf(file, sizeof file, "%s/away.conf", node.base);
    th_write_file(file, "[global]\nmon_host = v2:127.0.0.1:1\n", 35);
    snprintf(args, sizeof args, "restore '%s' --timeout 2", dir);
    expect_u64(run_archive(args, file, 1, &out), 1, "tide archive restore with the cluster away");
    expect_contains(out, "service unavailable", "the error's name");
    expect_contains(out, "no answer within", "and what to check");
    free(out);
    expect_u64(th_exists(dir), 0, "DIR not made");
    snprintf(args, sizeof args, "restore '%s' --json", dir);
    expect_u64(run_archive(args, NULL, 0, &out), 0, "tide archive restore --json");
    expect_contains(out, "\"kind\": \"open\"", "the open generation restored");
    free(out);
    th_rmrf(dir);

    expect_u64(th_run_tide("archive", 0, &out), 2, "tide archive alone");
    free(out);
    expect_u64(run_archive("frob", NULL, 0, &out), 2, "tide archive frob");
    free(out);
    expect_u64(run_archive("ls --timeout 0", NULL, 0, &out), 2, "a timeout of 0");
    free(out);
    expect_u64(th_run_tide("archive ls --prefix 'no.dots'", 1, &out), 2, "a prefix with a dot");
    free(out);
}

static void a_node_started_on_a_restored_directory_archives_on_where_the_archive_left_off(void **state)
{
    tide_archive_verify_opts vo = { .deep = 1 };
    tide_archive_restore rep;
    tide_archive_verify v;
    tide_archive_info in;
    tide_archive_tool *t;
    tide_archive_opts ao;
    tide_gens_opts go;
    tide_gens *g = NULL;
    tide_archive *a = NULL;
    uint8_t key[KS], want[VMAX];
    void *got = NULL;
    size_t len = 0;
    uint64_t gen = 0;
    char dir[2200];

    (void)state;
    th_ceph_require(&cluster);
    snprintf(dir, sizeof dir, "%s/resumed", node.base);
    t = tool_open();
    expect_ok(tide_archive_tool_restore(t, dir, NULL, &rep), "restore");
    tide_archive_tool_close(t);
    gens_opts(&go, 0);
    expect_ok(tide_gens_open(&g, dir, &go), "the node opens the restored directory");
    archive_opts(&ao, g, dir);
    expect_ok(tide_archive_open(&a, &ao), "and its archive");
    put_items(g, ITEMS, ITEMS + 500);
    wait_uploaded(a, g);
    expect_ok(tide_gens_rotate(g, NULL), "a rotation");
    wait_sealed(a, node.open_id);
    tide_archive_get_info(a, &in);
    expect_u64(in.conflict, 0, "no conflict with the archive's generation");
    tide_archive_close(a);
    expect_ok(tide_gens_close(g), "closing the node");
    t = tool_open();
    expect_ok(tide_archive_tool_verify(t, &vo, &v), "verify --deep after the node sealed it");
    tide_archive_verify_free(&v);
    th_key(ITEMS + 7, KS, key);
    expect_ok(tide_archive_tool_get(t, key, KS, &got, &len, &gen, NULL), "get of an item put after the restore");
    expect_u64(gen, node.open_id, "from the generation restored open, now sealed");
    th_value(ITEMS + 7, th_len(ITEMS + 7, VMIN, VMAX), want);
    if (len != th_len(ITEMS + 7, VMIN, VMAX) || memcmp(got, want, len) != 0)
        fail_msg("item %u: expected its value back", ITEMS + 7);
    free(got);
    tide_archive_tool_close(t);
    th_rmrf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(ls_lists_every_generation_and_the_objects_the_manifest_does_not_name, test_teardown),
        cmocka_unit_test_teardown(verify_passes_on_a_sound_archive_and_deep_proves_each_sealed_store, test_teardown),
        cmocka_unit_test_teardown(verify_names_a_chunk_with_a_changed_byte_and_passes_once_it_is_mended, test_teardown),
        cmocka_unit_test_teardown(verify_names_a_missing_object_of_a_sealed_and_of_an_open_generation, test_teardown),
        cmocka_unit_test_teardown(get_finds_a_sealed_generations_values_and_says_not_found_otherwise, test_teardown),
        cmocka_unit_test_teardown(restore_refuses_a_directory_that_is_not_empty_and_changes_nothing, test_teardown),
        cmocka_unit_test_teardown(restore_fails_with_eunavail_when_the_cluster_does_not_answer, test_teardown),
        cmocka_unit_test_teardown(restore_rebuilds_the_newest_generations_that_verify_and_open_with_every_value, test_teardown),
        cmocka_unit_test_teardown(restore_with_a_larger_keep_holds_every_object_and_cuts_a_partial_record, test_teardown),
        cmocka_unit_test_teardown(the_command_line_lists_verifies_gets_and_restores_with_the_verbs_exit_statuses,
                                  test_teardown),
        cmocka_unit_test_teardown(a_node_started_on_a_restored_directory_archives_on_where_the_archive_left_off, test_teardown),
    };
    return th_run_group("archive_tools", tests, group_setup, group_teardown, th_teardown);
}
