/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_gens.c: the generations handle (src/gen/gens.h): plain mode, the
 * creation and adoption of generation 1, write-once and copy-forward
 * across generations, the retention timeline, rotation and its report,
 * reconcile at open, crash safety on the simulated file system, and
 * inserts and fetches alongside rotations.
 *
 * Real files in scratch directories for the behaviour; io_sim (src/io/
 * io_sim.h) for the crashes: a clean rotation's calls are counted, then for
 * every k the world stops before call k (a persistent EIO from it on), the
 * handle is closed (every call fails, so nothing changes), the sim crashes
 * (seeded: each pending operation kept or lost) and the directory is
 * opened again and checked.
 *
 * Each of these breakages of src/gen was seen to fail a test here (checked
 * by hand): no sync of gen-000000000001 and DIR after adoption's renames
 * (the crash loop of an adoption: a store file left in DIR beside the
 * manifest); no sync of DIR after a rotation's create (the crash loop of a
 * rotation: the manifest names a generation a crash lost); a manifest
 * write's failure ignored (the fault loop: the reopen finds a named
 * generation deleted); no existence check of the older generations on
 * insert (write-once, fetch and keep tests); tide_store_contains always 0
 * (keep's test, and test_store_model); no hide-and-sync before a dropping
 * rotation's manifest (the copy crash loop: item 5, fetched in span 2,
 * missing after a crash in span 3); a sync of the newest alone (the same
 * loop with G=3: a copy still pending in generation 2); no rewrite of a
 * manifest whose undo failed (the double fault loop); no refusal of gen-*
 * directories without a manifest (they were deleted); opts_init's keep 2,
 * and no warning of a lowered keep; the drop deaf to an interrupt (95 of 95
 * steps taken); a failed rotation that leaves its generation hidden. For
 * the deferred index across generations, with no index flush at a rotation
 * and every generation opened with the lag: generation 1 keeps its
 * 500-entry tail after the rotation; the tails hold 73728 bytes in all over
 * a 65536-byte budget; the dropped generation's close writes its nudb.key
 * once more (2 writes, not 1). The crash loop with a tail passes on that
 * code (it lost nothing: its fault was memory); it fails when the flush at
 * the rotation forgets the tail instead of indexing it (W raised to C in
 * the idle log: generation 2 refuses to open, its key file not indexing
 * nudb.dat). And: without the three tide_store_set_deferring(..., 1) of a
 * failed rotation (and with only the manifest's undo's removed) the newest
 * says an index_lag_bytes of 0 after a rotation failed at its flush or its
 * manifest; with a broken newest's flush not skipped the rotation off it
 * fails (EIO, the flush's sync); without hold_fresh_deferring generation 2
 * defers 300 entries beside the broken 1's tail.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <pthread.h>

#include "gen/gens.h"
#include "io/io_sim.h"
#include "store/full.h"
#include "util/log.h"
#include "helpers.h"
#include "expect.h"

#define OK(expr) expect_ok((expr), #expr)
#define KS 32
#define VMIN 10
#define VMAX 300

/* ---- helpers ---- */

static void gopts(tide_gens_opts *o, int online_delete, unsigned keep, tide_io *io)
{
    tide_gens_opts_init(o);
    o->online_delete = online_delete;
    o->keep = keep;
    o->io = io;
    o->store.check_invariants = 1;
    o->store.ignore_holders = io != NULL;
    o->delete_chunk = 4096;
    o->back_off_ms = 0;
}

static tide_gens *open_ok(const char *dir, const tide_gens_opts *o, const char *what)
{
    tide_gens *g = NULL;
    int rc = tide_gens_open(&g, dir, o);
    if (rc) fail_msg("%s: open %s: %d %s: %s", what, dir, rc, tide_strerror(rc), tide_last_error());
    return g;
}

static void put(tide_gens *g, uint64_t i, int want, uint64_t *gen)
{
    uint8_t k[KS], v[VMAX];
    size_t len = th_len(i, VMIN, VMAX);
    char what[64];
    th_key(i, KS, k);
    th_value(i, len, v);
    snprintf(what, sizeof what, "insert of item %" PRIu64, i);
    expect_rc(tide_gens_insert(g, k, v, len, gen), want, what);
}

/* Fetch item i: 1 when it reads back exactly (its generation in *gen), 0
 * when absent and `must` is 0; anything else fails. */
static int get(tide_gens *g, uint64_t i, int must, uint64_t *gen, const char *what)
{
    uint8_t k[KS], v[VMAX];
    size_t want = th_len(i, VMIN, VMAX), len = 0;
    void *out = NULL;
    th_key(i, KS, k);
    th_value(i, want, v);
    int rc = tide_gens_fetch(g, k, &out, &len, gen);
    if (rc == TIDE_ENOTFOUND && !must) return 0;
    if (rc) fail_msg("%s: item %" PRIu64 ": fetch %d %s: %s", what, i, rc, tide_strerror(rc),
                     tide_last_error());
    int same = len == want && memcmp(out, v, len) == 0;
    free(out);
    if (!same) fail_msg("%s: item %" PRIu64 ": %zu bytes differ from the %zu written", what, i, len,
                        want);
    return 1;
}

static void put_range(tide_gens *g, uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++) put(g, i, 0, NULL);
}

static void get_range(tide_gens *g, uint64_t from, uint64_t to, const char *what)
{
    for (uint64_t i = from; i < to; i++) get(g, i, 1, NULL, what);
}

static char *join(char *out, const char *a, const char *b) { return th_path(out, 4200, a, b); }

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static tide_gen_manifest manifest_of(const char *dir)
{
    tide_gen_manifest m;
    OK(tide_gen_manifest_read(tide_io_posix(), dir, &m));
    return m;
}

static void rotate_ok(tide_gens *g, tide_gens_rotate_report *r, const char *what)
{
    tide_gens_rotate_report tmp;
    int rc = tide_gens_rotate(g, r ? r : &tmp);
    if (rc) fail_msg("%s: rotate: %d %s: %s", what, rc, tide_strerror(rc), tide_last_error());
}

/* A plain store in dir with items [0, n). */
static void make_plain(const char *dir, uint64_t n)
{
    tide_store_create_opts co;
    tide_store *s = NULL;
    tide_store_create_opts_init(&co);
    co.key_size = KS;
    OK(tide_store_create(dir, &co));
    OK(th_store_open(&s, dir));
    expect_inserted(s, 0, n, KS, VMIN, VMAX, "plain store");
    expect_closed(&s, "plain store");
}

/* ---- plain mode, creation, adoption ---- */

static void without_online_delete_the_handle_is_one_plain_store(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    tide_gens_info in;
    tide_gens_rotate_report r;
    char p[4200];
    uint64_t gen = 99;

    gopts(&o, 0, 2, NULL);
    tide_gens *g = open_ok(t->dir, &o, "plain");
    expect_i64(tide_gens_enabled(g), 0, "enabled");
    expect_u64(tide_gens_newest_id(g), 0, "newest id");
    expect_u64(tide_gens_oldest_id(g), 0, "oldest id");
    expect_u64(tide_gens_key_size(g), 32, "key size");
    put_range(g, 0, 50);
    put(g, 7, TIDE_EEXIST, &gen);
    expect_u64(gen, 0, "generation of a plain store's key");
    get(g, 7, 1, &gen, "plain");
    expect_u64(gen, 0, "fetch's generation");
    expect_error(tide_gens_rotate(g, &r), TIDE_EINVAL, "rotate of a plain store");
    expect_contains(tide_last_error(), "online delete is off", "rotate's message");
    tide_gens_get_info(g, &in);
    expect_i64(in.enabled, 0, "info.enabled");
    OK(tide_gens_sync(g));
    OK(tide_gens_close(g));
    expect_i64(th_exists(join(p, t->dir, "nudb.dat")), 1, "nudb.dat in DIR itself");
    expect_i64(th_exists(join(p, t->dir, TIDE_GEN_FILE)), 0, "no manifest");
    g = open_ok(t->dir, &o, "plain reopen");
    get_range(g, 0, 50, "plain reopen");
    OK(tide_gens_close(g));
}

static void online_delete_on_an_empty_directory_makes_generation_one(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    tide_gens_info in;
    char p[4200], q[4200];
    uint64_t gen = 0;

    gopts(&o, 1, 3, NULL);
    tide_gens *g = open_ok(t->dir, &o, "new");
    expect_i64(tide_gens_enabled(g), 1, "enabled");
    expect_u64(tide_gens_newest_id(g), 1, "newest");
    expect_u64(tide_gens_oldest_id(g), 1, "oldest");
    put(g, 1, 0, &gen);
    expect_u64(gen, 1, "insert's generation");
    get(g, 1, 1, &gen, "new");
    expect_u64(gen, 1, "fetch's generation");
    tide_gens_get_info(g, &in);
    expect_u64(in.count, 1, "count");
    expect_u64(in.keep, 3, "keep");
    expect_u64(in.newest_objects, 1, "newest objects");
    expect_str(in.gens[0].dir, "gen-000000000001", "dir");
    OK(tide_gens_close(g));
    tide_gen_manifest m = manifest_of(t->dir);
    expect_u64(m.count, 1, "manifest count");
    expect_u64(m.gens[0].id, 1, "manifest gen");
    expect_u64(m.keep, 3, "manifest keep");
    join(q, t->dir, "gen-000000000001");
    expect_i64(th_exists(join(p, q, "nudb.dat")), 1, "gen-1/nudb.dat");
    expect_i64(th_exists(join(p, t->dir, "nudb.dat")), 0, "no root nudb.dat");
}

static void adopting_a_plain_store_moves_its_files_and_keeps_every_key(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    tide_verify_report vr;
    char p[4200], q[4200];
    tide_store *s = NULL;
    uint64_t gen = 0;

    OK(mkdir(t->dir, 0755) == 0 ? 0 : TIDE_EIO);
    make_plain(t->dir, 400);
    join(q, t->dir, "gen-000000000001");
    long long dat = th_file_size(join(p, t->dir, "nudb.dat"));

    gopts(&o, 1, 2, NULL);
    tide_gens *g = open_ok(t->dir, &o, "adopt");
    expect_u64(tide_gens_newest_id(g), 1, "adopted as generation 1");
    get_range(g, 0, 400, "adopted");
    get(g, 5, 1, &gen, "adopted");
    expect_u64(gen, 1, "generation of an adopted key");
    tide_gens_info in;
    tide_gens_get_info(g, &in);
    expect_u64(in.newest_objects, 400, "newest objects counted at open");
    OK(tide_gens_close(g));
    for (unsigned i = 0; i < 3; i++) {
        static const char *const f[3] = { "nudb.dat", "nudb.key", "nudb.log" };
        expect_i64(th_exists(join(p, t->dir, f[i])), 0, f[i]);
    }
    expect_i64(th_file_size(join(p, q, "nudb.dat")), dat, "moved, not copied: same size");
    /* The generation directory is a store on its own. */
    OK(tide_store_verify_io(q, NULL, &vr));
    OK(th_store_open(&s, q));
    expect_items(s, 0, 400, KS, VMIN, VMAX, "generation 1 opened alone");
    expect_closed(&s, "generation 1 alone");
    g = open_ok(t->dir, &o, "reopen");
    get_range(g, 0, 400, "reopened");
    OK(tide_gens_close(g));
}

static void every_nudb_fixture_is_adopted_and_every_key_reads(void **state)
{
    tide_gens_opts o;
    (void)state;
    for (size_t n = 0; n < th_fixture_count; n++) {
        const th_fixture *f = &th_fixtures[n];
        char dir[4096], p[4200];
        if (th_copy_fixture(f->name, dir, sizeof dir) != 0) fail_msg("copy fixture %s", f->name);
        gopts(&o, 1, 2, NULL);
        tide_gens *g = open_ok(dir, &o, f->name);
        expect_u64(tide_gens_key_size(g), f->key_size, f->name);
        uint8_t *v = malloc(f->vmax + 1);
        assert_non_null(v);
        for (uint64_t i = 0; i < f->present; i++) {
            uint8_t k[64];
            size_t want = th_len(i, f->vmin, f->vmax), len = 0;
            void *out = NULL;
            uint64_t gen = 0;
            th_key(i, f->key_size, k);
            th_value(i, want, v);
            expect_ok(tide_gens_fetch(g, k, &out, &len, &gen), f->name);
            if (len != want || memcmp(out, v, len) != 0 || gen != 1)
                fail_msg("%s: item %" PRIu64 ": wrong bytes or generation %" PRIu64, f->name, i, gen);
            free(out);
        }
        free(v);
        /* A rotation makes generation 2 in the adopted store's shape. */
        rotate_ok(g, NULL, f->name);
        tide_gens_info in;
        tide_gens_get_info(g, &in);
        expect_u64(in.count, 2, f->name);
        OK(tide_gens_close(g));
        expect_i64(th_exists(join(p, dir, "nudb.log")), 0, "no log left in DIR");
        th_rmrf(dir);
    }
}

/* ---- semantics ---- */

static void a_put_of_a_key_an_older_generation_holds_is_refused_and_copies_it_forward(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    tide_gens_info in;
    uint64_t gen = 0;

    gopts(&o, 1, 3, NULL);
    tide_gens *g = open_ok(t->dir, &o, "write-once");
    put(g, 1, 0, NULL);
    rotate_ok(g, NULL, "1");
    rotate_ok(g, NULL, "2");
    put(g, 1, TIDE_EEXIST, &gen);
    expect_u64(gen, 3, "re-PUT: copied forward into the newest");
    tide_gens_get_info(g, &in);
    expect_u64(in.copied_forward, 1, "copied once");
    expect_u64(in.copied_forward_bytes, th_len(1, VMIN, VMAX), "bytes copied");
    expect_u64(in.newest_objects, 1, "the copy is a record of the newest");
    put(g, 1, TIDE_EEXIST, &gen);
    expect_u64(gen, 3, "second re-PUT");
    tide_gens_get_info(g, &in);
    expect_u64(in.copied_forward, 1, "not copied again");
    get(g, 1, 1, &gen, "after re-PUT");
    expect_u64(gen, 3, "found in the newest");
    /* the newest refuses too */
    put(g, 2, 0, &gen);
    expect_u64(gen, 3, "new key into the newest");
    put(g, 2, TIDE_EEXIST, &gen);
    expect_u64(gen, 3, "the newest's own EEXIST");
    OK(tide_gens_close(g));
}

static void a_fetch_looks_newest_first_and_copies_an_older_hit_forward(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    tide_gens_info in;
    uint64_t gen = 0;

    gopts(&o, 1, 2, NULL);
    tide_gens *g = open_ok(t->dir, &o, "fetch");
    put(g, 1, 0, NULL);
    rotate_ok(g, NULL, "1");
    put(g, 2, 0, NULL);
    tide_gens_get_info(g, &in);
    expect_u64(in.older_lookups, 1, "the insert asked the older generation");
    get(g, 2, 1, &gen, "newest");
    expect_u64(gen, 2, "a key of the newest");
    tide_gens_get_info(g, &in);
    expect_u64(in.older_lookups, 1, "a hit in the newest looks no further");
    get(g, 1, 1, &gen, "older");
    expect_u64(gen, 2, "copied forward by the read");
    tide_gens_get_info(g, &in);
    expect_u64(in.older_lookups, 2, "the miss looked in the older one");
    expect_u64(in.copied_forward, 1, "one copy");
    get(g, 1, 1, &gen, "again");
    tide_gens_get_info(g, &in);
    expect_u64(in.copied_forward, 1, "the second read finds it in the newest");
    expect_u64(in.older_lookups, 2, "without an older lookup");
    expect_i64(get(g, 999, 0, NULL, "absent"), 0, "an absent key");
    OK(tide_gens_close(g));
}

/* G generations, spans 1..G+3: in span t, object (s, t) written in span s
 * is fetched (once: the fetch touches it) and must read iff t <= s+G-1. */
static void timeline(const char *dir, unsigned G)
{
    tide_gens_opts o;
    unsigned spans = G + 3;
    char what[96];

    gopts(&o, 1, G, NULL);
    tide_gens *g = open_ok(dir, &o, "timeline");
    for (unsigned t = 1; t <= spans; t++) {
        for (unsigned c = t; c <= spans; c++) put(g, 1000 * t + c, 0, NULL);   /* object (t, c) */
        for (unsigned s = 1; s <= t; s++) {
            int want = t <= s + G - 1;
            snprintf(what, sizeof what, "G=%u: object written in span %u, read in span %u", G, s,
                     t);
            int got = get(g, 1000 * s + t, 0, NULL, what);
            if (got != want) fail_msg("%s: expected %s, got %s", what, want ? "present" : "gone",
                                      got ? "present" : "gone");
        }
        rotate_ok(g, NULL, "timeline");
    }
    OK(tide_gens_close(g));
}

static void with_g_generations_an_object_of_span_s_reads_through_span_s_plus_g_minus_1(void **state)
{
    th_scratch *t = *state;
    char d2[4200], d3[4200];
    OK(mkdir(t->dir, 0755) == 0 ? 0 : TIDE_EIO);
    timeline(join(d2, t->dir, "g2"), 2);
    timeline(join(d3, t->dir, "g3"), 3);
}

static void touched_objects_live_on_and_a_dropped_generation_cannot_be_touched(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    uint64_t now = 0, gen = 0;
    uint8_t k[KS], v[VMAX];
    size_t len = th_len(3, VMIN, VMAX);

    gopts(&o, 1, 2, NULL);
    tide_gens *g = open_ok(t->dir, &o, "touch");
    th_key(3, KS, k);
    th_value(3, len, v);
    put(g, 1, 0, NULL);                                   /* span 1: 1, 3 and 5 written */
    put(g, 3, 0, NULL);
    put(g, 5, 0, NULL);
    rotate_ok(g, NULL, "end of span 1");
    get(g, 1, 1, &gen, "span 2: item 1 read");
    expect_u64(gen, 2, "copied into generation 2");
    OK(tide_gens_touch(g, k, v, len, 1, &now));           /* the cache's copy-forward of 3 */
    expect_u64(now, 2, "touch: now in the newest");
    OK(tide_gens_touch(g, k, v, len, 2, &now));
    expect_u64(now, 2, "touch of an object of the newest: nothing to do");
    rotate_ok(g, NULL, "end of span 2");
    get(g, 1, 1, &gen, "span 3: item 1, read in span 2");
    expect_u64(gen, 3, "copied again");
    expect_i64(get(g, 5, 0, NULL, "span 3: item 5"), 0, "item 5 of span 1, never read: gone");
    rotate_ok(g, NULL, "end of span 3");
    expect_i64(get(g, 3, 0, NULL, "span 4: item 3"), 0,
               "item 3, touched in span 2: gone after the rotation ending span 3");
    expect_error(tide_gens_touch(g, k, v, len, 1, &now), TIDE_ENOTFOUND,
                 "touch of generation 1, dropped");
    expect_contains(tide_last_error(), "dropped", "touch's message");
    expect_error(tide_gens_touch(g, k, v, len, 2, &now), TIDE_ENOTFOUND,
                 "touch of generation 2, dropped");
    rotate_ok(g, NULL, "end of span 4");
    expect_i64(get(g, 1, 0, NULL, "span 5: item 1"), 0,
               "item 1, last read in span 3: gone after the rotation ending span 4");
    OK(tide_gens_close(g));
}

static void keep_copies_an_older_object_forward_once(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    uint8_t k[KS];
    int copied = -1;

    gopts(&o, 1, 2, NULL);
    tide_gens *g = open_ok(t->dir, &o, "keep");
    put(g, 1, 0, NULL);
    rotate_ok(g, NULL, "1");
    th_key(1, KS, k);
    OK(tide_gens_keep(g, k, &copied));
    expect_i64(copied, 1, "copied");
    OK(tide_gens_keep(g, k, &copied));
    expect_i64(copied, 0, "already in the newest");
    th_key(77, KS, k);
    expect_error(tide_gens_keep(g, k, &copied), TIDE_ENOTFOUND, "keep of an absent key");
    rotate_ok(g, NULL, "2");
    get(g, 1, 1, NULL, "kept through the drop of generation 1");
    OK(tide_gens_close(g));
}

/* ---- rotation ---- */

typedef struct trace_log { char text[1024]; unsigned delete_steps; } trace_log;

static void trace_step(void *arg, const char *step)
{
    trace_log *l = arg;
    size_t n = strlen(l->text);
    if (strcmp(step, "delete-step") == 0) { l->delete_steps++; return; }
    snprintf(l->text + n, sizeof l->text - n, "%s%s", n ? "," : "", step);
}

static void a_rotation_reports_what_it_made_dropped_and_deleted(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    tide_gens_rotate_report r;
    tide_store_info si0, si1;
    trace_log tl = { "", 0 };
    char p[4200], g1[4200];

    gopts(&o, 1, 2, NULL);
    o.trace = trace_step;
    o.trace_arg = &tl;
    tide_gens *g = open_ok(t->dir, &o, "report");
    put_range(g, 0, 300);
    OK(tide_gens_sync(g));
    rotate_ok(g, &r, "first");
    expect_u64(r.new_id, 2, "new id");
    expect_u64(r.dropped, 0, "nothing dropped while fewer than keep are held");
    expect_u64(r.deleted_bytes, 0, "nothing deleted");
    expect_u64(r.objects_in_previous, 300, "objects of the previous newest");
    expect_u64(r.rotations, 1, "rotations");
    if (r.started_unix_us == 0) fail_msg("started_unix_us not set");
    expect_str(tl.text, "adopt,reconcile,create,manifest,switch,done", "steps of the first");
    expect_u64(r.sync_ns, 0, "no sync when nothing is dropped");
    put_range(g, 300, 350);
    OK(tide_gens_sync(g));
    tide_gens_store_info(g, &si0);
    join(g1, t->dir, "gen-000000000001");
    uint64_t bytes = (uint64_t)th_file_size(join(p, g1, "nudb.dat")) +
                     (uint64_t)th_file_size(join(p, g1, "nudb.key"));
    /* The page a writer shares with readers (tide.live) is one
     * of the generation's files too, on the real file system. */
    if (th_exists(join(p, g1, "tide.live"))) bytes += (uint64_t)th_file_size(p);
    uint64_t dat = (uint64_t)th_file_size(join(p, g1, "nudb.dat"));
    tl.text[0] = '\0';
    rotate_ok(g, &r, "second");
    expect_u64(r.new_id, 3, "new id");
    expect_u64(r.dropped, 1, "one dropped");
    expect_u64(r.dropped_ids[0], 1, "generation 1 dropped");
    expect_u64(r.deleted_bytes, bytes, "bytes deleted: generation 1's files");
    expect_u64(r.delete_steps, (dat + 4095) / 4096, "one cut per 4096 bytes of nudb.dat");
    expect_u64(tl.delete_steps, r.delete_steps, "one delete-step trace per cut");
    if (r.delete_steps < 2) fail_msg("expected several cuts, got %u", r.delete_steps);
    expect_u64(r.objects_in_previous, 50, "objects of generation 2");
    expect_str(tl.text, "create,sync,hide,sync,manifest,switch,drop,done", "steps of a dropping rotation: "
               "sync, hide, sync again");
    expect_i64(th_exists(g1), 0, "generation 1's directory is gone");
    tide_gens_store_info(g, &si1);
    if (si1.inserts < si0.inserts || si1.commits < si0.commits)
        fail_msg("store_info's counters went down at the drop: inserts %" PRIu64 " -> %" PRIu64,
                 si0.inserts, si1.inserts);
    expect_u64(si1.inserts, 350, "inserts over every generation, the dropped one included");
    tide_gen_manifest m = manifest_of(t->dir);
    expect_u64(m.count, 2, "manifest count");
    expect_u64(m.gens[0].id, 3, "newest");
    expect_u64(m.gens[1].id, 2, "older");
    expect_u64(m.rotations, 2, "rotations");
    tide_gens_info in;
    tide_gens_get_info(g, &in);
    expect_u64(in.count, 2, "info count");
    expect_u64(in.gens[0].id, 3, "info newest");
    expect_i64(in.gens[0].writable, 1, "newest writable");
    expect_i64(in.gens[1].writable, 0, "older read-only");
    expect_u64(in.newest_objects, 0, "the new newest is empty");
    expect_u64(in.rotations, 2, "info rotations");
    get_range(g, 300, 350, "generation 2's objects");
    expect_i64(get(g, 0, 0, NULL, "generation 1's"), 0, "dropped");
    OK(tide_gens_close(g));
}

static void a_lowered_keep_drops_every_generation_beyond_it_at_the_next_rotation(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    tide_gens_rotate_report r;
    char p[4200];

    gopts(&o, 1, 4, NULL);
    tide_gens *g = open_ok(t->dir, &o, "keep 4");
    for (uint64_t i = 0; i < 3; i++) {
        put(g, i, 0, NULL);
        rotate_ok(g, NULL, "keep 4");
    }
    put(g, 3, 0, NULL);
    OK(tide_gens_close(g));               /* generations 4, 3, 2, 1: four held */
    o.keep = 2;
    g = open_ok(t->dir, &o, "keep 2");
    rotate_ok(g, &r, "keep lowered to 2");
    expect_u64(r.dropped, 3, "5 is made, 4 kept: 3, 2 and 1 go");
    expect_u64(r.dropped_ids[0], 1, "oldest first");
    expect_u64(r.dropped_ids[1], 2, "then 2");
    expect_u64(r.dropped_ids[2], 3, "then 3");
    tide_gen_manifest m = manifest_of(t->dir);
    expect_u64(m.keep, 2, "manifest keep");
    expect_u64(m.count, 2, "manifest count");
    expect_i64(th_exists(join(p, t->dir, "gen-000000000003")), 0, "gen 3 gone");
    get(g, 3, 1, NULL, "generation 4's object");
    expect_i64(get(g, 2, 0, NULL, "generation 3's"), 0, "dropped");
    OK(tide_gens_close(g));

    /* Held 3 of 4 with keep lowered to 2: the rotation drops two. */
    char d2[4200];
    join(d2, t->dir, "b");
    o.keep = 4;
    OK(mkdir(d2, 0755) == 0 ? 0 : TIDE_EIO);
    g = open_ok(d2, &o, "b keep 4");
    rotate_ok(g, NULL, "b1");
    rotate_ok(g, NULL, "b2");
    OK(tide_gens_close(g));
    o.keep = 2;
    g = open_ok(d2, &o, "b keep 2");
    rotate_ok(g, &r, "b keep lowered");
    expect_u64(r.dropped, 2, "held 3 with keep lowered to 2: two dropped");
    OK(tide_gens_close(g));
}

/* ---- reconcile ---- */

static void an_unnamed_generation_directory_is_removed_at_open(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    tide_gens_info in;
    th_log_capture cap;
    char p[4200], q[4200];

    gopts(&o, 1, 2, NULL);
    tide_gens *g = open_ok(t->dir, &o, "unnamed");
    put(g, 1, 0, NULL);
    OK(tide_gens_close(g));
    join(q, t->dir, "gen-000000000009");
    OK(mkdir(q, 0755) == 0 ? 0 : TIDE_EIO);
    OK(th_write_file(join(p, q, "nudb.dat"), "0123456789", 10));
    OK(th_write_file(join(p, t->dir, TIDE_GEN_FILE_TMP), "junk", 4));
    join(p, t->dir, "gen-7");            /* not a generation name: left alone */
    OK(mkdir(p, 0755) == 0 ? 0 : TIDE_EIO);
    memset(&cap, 0, sizeof cap);
    tide_log_set_sink(th_log_capture_sink, &cap);
    g = open_ok(t->dir, &o, "reopen");
    tide_log_set_sink(NULL, NULL);
    tide_gens_get_info(g, &in);
    expect_u64(in.removed_at_open, 1, "removed at open");
    expect_i64(th_exists(q), 0, "gen-000000000009 removed");
    expect_i64(th_exists(join(p, t->dir, TIDE_GEN_FILE_TMP)), 0, "tmp removed");
    expect_i64(is_dir(join(p, t->dir, "gen-7")), 1, "a non-canonical name is kept");
    expect_contains(cap.text, "gen-000000000009 (10 bytes)", "the warning names it and its size");
    if (cap.warnings < 1) fail_msg("expected a warning");
    get(g, 1, 1, NULL, "named generation intact");
    OK(tide_gens_close(g));
}

static void a_named_generation_missing_or_damaged_refuses_the_open_changing_nothing(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    tide_gens *g2 = NULL;
    char p[4200], q[4200], away[4200], un[4200];
    th_snapshot sn;

    gopts(&o, 1, 3, NULL);
    tide_gens *g = open_ok(t->dir, &o, "named");
    put(g, 1, 0, NULL);
    rotate_ok(g, NULL, "1");
    put(g, 2, 0, NULL);
    OK(tide_gens_close(g));
    char *man0 = th_slurp(join(p, t->dir, TIDE_GEN_FILE));
    join(q, t->dir, "gen-000000000002");
    OK(th_snapshot_take(q, &sn));
    join(un, t->dir, "gen-000000000005");
    OK(mkdir(un, 0755) == 0 ? 0 : TIDE_EIO);
    join(p, t->dir, "gen-000000000001");
    join(away, t->base, "away");
    OK(rename(p, away) == 0 ? 0 : TIDE_EIO);
    expect_error(tide_gens_open(&g2, t->dir, &o), TIDE_ECORRUPT, "a named generation missing");
    expect_contains(tide_last_error(), "generation 1 (gen-000000000001)", "names it");
    expect_contains(tide_last_error(), "missing", "says missing");
    expect_unchanged(q, &sn, "generation 2 after the refused open");
    expect_i64(is_dir(un), 1, "the unnamed one is not removed by a refused open");
    char *man1 = th_slurp(join(p, t->dir, TIDE_GEN_FILE));
    expect_str(man1, man0, "manifest unchanged");
    free(man1);

    /* Back, but damaged: nudb.key cut. */
    OK(rename(away, join(p, t->dir, "gen-000000000001")) == 0 ? 0 : TIDE_EIO);
    join(p, t->dir, "gen-000000000001/nudb.key");
    OK(truncate(p, 100) == 0 ? 0 : TIDE_EIO);
    expect_error(tide_gens_open(&g2, t->dir, &o), TIDE_ECORRUPT, "a named generation damaged");
    expect_contains(tide_last_error(), "generation 1 (gen-000000000001)", "names it");
    expect_contains(tide_last_error(), "fails to open", "says why");
    expect_contains(tide_last_error(), "nudb.key", "the store's own message follows");
    expect_unchanged(q, &sn, "generation 2 after the second refused open");
    th_snapshot_free(&sn);
    free(man0);
}

static void a_manifest_beside_a_plain_stores_files_is_refused_with_what_to_do(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    tide_gens *g2 = NULL;
    char p[4200];

    gopts(&o, 1, 2, NULL);
    tide_gens *g = open_ok(t->dir, &o, "mixed");
    OK(tide_gens_close(g));
    OK(th_write_file(join(p, t->dir, "nudb.dat"), "x", 1));
    expect_error(tide_gens_open(&g2, t->dir, &o), TIDE_EINVAL, "manifest and root files");
    expect_contains(tide_last_error(), "move the nudb.* files", "what to do");
    o.online_delete = 0;
    expect_error(tide_gens_open(&g2, t->dir, &o), TIDE_EINVAL, "the same with online delete off");
    expect_i64(th_file_size(p), 1, "root file untouched");
}

static void a_manifest_is_opened_as_generations_even_with_online_delete_off(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    th_log_capture cap;

    gopts(&o, 1, 2, NULL);
    tide_gens *g = open_ok(t->dir, &o, "on");
    put(g, 1, 0, NULL);
    rotate_ok(g, NULL, "1");
    OK(tide_gens_close(g));
    o.online_delete = 0;
    memset(&cap, 0, sizeof cap);
    tide_log_set_sink(th_log_capture_sink, &cap);
    g = open_ok(t->dir, &o, "off");
    tide_log_set_sink(NULL, NULL);
    expect_i64(tide_gens_enabled(g), 1, "still generations");
    expect_contains(cap.text, "online delete is off", "warned");
    get(g, 1, 1, NULL, "readable");
    OK(tide_gens_close(g));
}

static void a_read_only_handle_reads_every_generation_and_changes_nothing(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    tide_gens_info in;
    th_snapshot s1, s2;
    char p[4200], q1[4200], q2[4200], un[4200];
    uint64_t gen = 0;
    uint8_t k[KS];
    int copied;

    gopts(&o, 1, 2, NULL);
    tide_gens *g = open_ok(t->dir, &o, "writer");
    put_range(g, 0, 10);
    rotate_ok(g, NULL, "1");
    put_range(g, 10, 20);
    OK(tide_gens_close(g));
    join(q1, t->dir, "gen-000000000001");
    join(q2, t->dir, "gen-000000000002");
    join(un, t->dir, "gen-000000000004");
    OK(mkdir(un, 0755) == 0 ? 0 : TIDE_EIO);
    OK(th_snapshot_take(q1, &s1));
    OK(th_snapshot_take(q2, &s2));
    o.store.read_only = 1;
    g = open_ok(t->dir, &o, "read-only");
    get(g, 3, 1, &gen, "read-only");
    expect_u64(gen, 1, "found in generation 1, not copied");
    get_range(g, 0, 20, "read-only");
    tide_gens_get_info(g, &in);
    expect_u64(in.copied_forward, 0, "no copy");
    expect_u64(in.copy_failures, 0, "no copy tried");
    put(g, 100, TIDE_EINVAL, NULL);
    expect_error(tide_gens_rotate(g, NULL), TIDE_EINVAL, "rotate read-only");
    th_key(3, KS, k);
    expect_error(tide_gens_keep(g, k, &copied), TIDE_EINVAL, "keep read-only");
    OK(tide_gens_close(g));
    expect_unchanged(q1, &s1, "generation 1 after a read-only handle");
    expect_unchanged(q2, &s2, "generation 2 after a read-only handle");
    expect_i64(is_dir(un), 1, "a read-only open removes nothing");
    expect_i64(th_exists(join(p, t->dir, TIDE_GEN_FILE)), 1, "manifest");
    th_snapshot_free(&s1);
    th_snapshot_free(&s2);
}

static void a_second_handle_on_the_same_directory_is_refused_as_busy(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    tide_gens *g2 = NULL;

    gopts(&o, 1, 2, NULL);
    tide_gens *g = open_ok(t->dir, &o, "first");
    put(g, 1, 0, NULL);
    expect_error(tide_gens_open(&g2, t->dir, &o), TIDE_EBUSY, "a second handle");
    expect_contains(tide_last_error(), "generation 1 (gen-000000000001)", "names the generation");
    get(g, 1, 1, NULL, "the first handle goes on");
    OK(tide_gens_close(g));
}

/* ---- inspect ---- */

static void inspect_lists_generations_and_unnamed_directories_without_changing_anything(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    tide_gens_listing *l = calloc(1, sizeof *l);
    char p[4200];

    assert_non_null(l);
    expect_rc(tide_gens_inspect(t->base, NULL, l), TIDE_ENOENT, "no manifest");
    gopts(&o, 1, 3, NULL);
    tide_gens *g = open_ok(t->dir, &o, "inspect");
    put_range(g, 0, 20);
    rotate_ok(g, NULL, "1");
    OK(tide_gens_close(g));
    OK(mkdir(join(p, t->dir, "gen-000000000008"), 0755) == 0 ? 0 : TIDE_EIO);
    OK(tide_gens_inspect(t->dir, NULL, l));
    expect_u64(l->manifest.count, 2, "count");
    expect_u64(l->manifest.gens[0].id, 2, "newest");
    expect_str(l->gens[0].problem, "", "newest fine");
    expect_str(l->gens[1].problem, "", "older fine");
    expect_u64(l->gens[1].info.key_size, 32, "older key size");
    expect_u64(l->unnamed, 1, "one unnamed");
    expect_str(l->unnamed_dirs[0], "gen-000000000008", "its name");
    if (l->disk_bytes == 0) fail_msg("disk bytes 0");
    expect_i64(is_dir(p), 1, "inspect removed nothing");
    OK(th_write_file(join(p, t->dir, "gen-000000000001/nudb.key"), "x", 1));
    OK(tide_gens_inspect(t->dir, NULL, l));
    if (l->gens[1].problem[0] == '\0') fail_msg("a damaged generation should have a problem");
    free(l);
}

/* ---- crash safety (io_sim) ---- */

#define SD "/data"
#define SEEDS 16  /* seeded crashes at each stop, besides the keep-all and lose-all states */

static tide_io_sim *sim_new(void)
{
    tide_io_sim *sim = NULL;
    OK(tide_io_sim_create(&sim));
    OK(tide_io_sim_mkdir(sim, SD));
    return sim;
}

static tide_io_sim *clone_of(tide_io_sim *sim)
{
    tide_io_sim *c = NULL;
    OK(tide_io_sim_clone(sim, &c));
    return c;
}

static void sim_opts(tide_gens_opts *o, tide_io_sim *sim, unsigned keep)
{
    gopts(o, 1, keep, tide_io_sim_io(sim));
    o->store.commit_interval_ms = 600000;   /* commits only when synced: calls are counted */
}

typedef struct dir_check { const tide_gens_info *in; const char *bad; int tmp; char name[64]; } dir_check;

static int check_entry(void *arg, const char *name, int isdir)
{
    dir_check *d = arg;
    if (strcmp(name, TIDE_GEN_FILE_TMP) == 0) d->tmp = 1;
    if (!isdir && strncmp(name, "nudb.", 5) == 0 && d->bad == NULL) {
        d->bad = "a store file in the directory itself";
        snprintf(d->name, sizeof d->name, "%s", name);
    }
    if (!isdir || strncmp(name, "gen-", 4) != 0) return 0;
    for (unsigned i = 0; i < d->in->count; i++)
        if (strcmp(d->in->gens[i].dir, name) == 0) return 0;
    if (d->bad == NULL) {
        d->bad = "a generation directory the manifest does not name";
        snprintf(d->name, sizeof d->name, "%s", name);
    }
    return 0;
}

/* After open: the directory holds the manifest's generations and nothing
 * else of ours (no unnamed gen-*, no tmp, no root store file). */
static void expect_reconciled(tide_gens *g, tide_io *io, const char *what)
{
    tide_gens_info in;
    dir_check d;
    memset(&d, 0, sizeof d);
    tide_gens_get_info(g, &in);
    d.in = &in;
    OK(io->list(io, SD, check_entry, &d));
    if (d.bad) fail_msg("%s: after open: %s: %s", what, d.bad, d.name);
    if (d.tmp) fail_msg("%s: after open: " TIDE_GEN_FILE_TMP " left", what);
}

/* Generations 2 (items 30..60) and 1 (0..30), all synced, closed, crashed. */
static tide_io_sim *rotation_base(unsigned keep)
{
    tide_io_sim *sim = sim_new();
    tide_gens_opts o;
    sim_opts(&o, sim, keep);
    tide_gens *g = open_ok(SD, &o, "rotation base");
    put_range(g, 0, 30);
    OK(tide_gens_sync(g));
    rotate_ok(g, NULL, "rotation base");
    put_range(g, 30, 60);
    OK(tide_gens_sync(g));
    OK(tide_gens_close(g));
    OK(tide_io_sim_crash(sim, 1));
    return sim;
}

/* Open the image (with index lag `lag`); every object inside its
 * retention reads back (generation 1: 0..30; 2: 30..end); the directory
 * is reconciled; the handle takes a write. Returns the open handle. */
static tide_gens *open_image(tide_io_sim *sim, unsigned keep, const char *what, uint64_t lag, uint64_t end,
                             char *w, size_t wcap)
{
    tide_gens_opts o;
    sim_opts(&o, sim, keep);
    o.store.index_lag_bytes = lag;
    tide_gens *g = open_ok(SD, &o, what);
    uint64_t newest = tide_gens_newest_id(g);
    expect_reconciled(g, tide_io_sim_io(sim), what);
    snprintf(w, wcap, "%s (newest %" PRIu64 ")", what, newest);
    if (newest == 2) {
        get_range(g, 0, end, w);
    } else if (newest == 3) {
        get_range(g, 30, end, w);
        for (uint64_t i = 0; i < 30; i++)
            if (get(g, i, 0, NULL, w) != (keep > 2))
                fail_msg("%s: item %" PRIu64 " of generation 1: expected %s", w, i,
                         keep > 2 ? "present (G=3 keeps it)" : "gone (dropped)");
    } else {
        fail_msg("%s: newest generation %" PRIu64 ", expected 2 or 3", what, newest);
    }
    put(g, 5000, 0, NULL);
    OK(tide_gens_sync(g));
    return g;
}

static void check_rotation_image(tide_io_sim *sim, unsigned keep, const char *what)
{
    char w[400];
    OK(tide_gens_close(open_image(sim, keep, what, 0, 60, w, sizeof w)));
}

/* Crash images of stopped sim `c`: keep-all, lose-all (when the pending
 * operations can be chosen: 64 at most of each kind), and SEEDS seeds. */
static void each_crash_image(tide_io_sim *c, void (*check)(tide_io_sim *, unsigned, const char *),
                             unsigned keep, const char *where, uint64_t *images)
{
    uint64_t nd = tide_io_sim_pending_count(c), nn = tide_io_sim_pending_ns_count(c);
    char what[300];
    for (int all = 0; all < 2 && nd <= 64 && nn <= 64; all++) {
        tide_io_sim *d = clone_of(c);
        uint64_t dm = all ? (nd == 64 ? ~0ull : (1ull << nd) - 1) : 0;
        uint64_t nm = all ? (nn == 64 ? ~0ull : (1ull << nn) - 1) : 0;
        OK(tide_io_sim_crash_state_ns(d, dm, nm));
        snprintf(what, sizeof what, "%s: crash %s %" PRIu64 " writes and %" PRIu64 " namespace ops",
                 where, all ? "keeping all" : "losing all", nd, nn);
        check(d, keep, what);
        tide_io_sim_destroy(d);
        (*images)++;
    }
    for (uint64_t s = 0; s < SEEDS; s++) {
        tide_io_sim *d = clone_of(c);
        OK(tide_io_sim_crash(d, th_seed(12) * 1000 + s));
        snprintf(what, sizeof what, "%s: crash seed %" PRIu64, where, th_seed(12) * 1000 + s);
        check(d, keep, what);
        tide_io_sim_destroy(d);
        (*images)++;
    }
}

/* A workload on sim `c`: stops the world before its call k (0: never) from
 * the moment it starts counting, runs, and closes what it opened (calls
 * that fail change nothing); *calls gets the calls it counted. */
typedef int workload_fn(tide_io_sim *c, unsigned arg, uint64_t k, uint64_t *calls);

static void quiet_close(tide_gens *g)
{
    tide_log_set_sink(th_log_discard_sink, NULL);
    tide_gens_close(g);
    tide_log_set_sink(NULL, NULL);
}

/* The counted part of a rotation workload: the world stopped before call
 * k of the rotation of `g` (0: never), *calls its calls; closes g. */
static int counted_rotation(tide_io_sim *c, tide_gens *g, uint64_t k, uint64_t *calls)
{
    uint64_t c0 = tide_io_sim_calls(c);
    if (k) OK(tide_io_sim_fail_at(c, k, TIDE_IO_SIM_EIO, 1));
    int rc = tide_gens_rotate(g, NULL);
    *calls = tide_io_sim_calls(c) - c0;
    quiet_close(g);
    return rc;
}

/* A rotation of the handle opened on `c` (the open is not counted). */
static int rotation_workload(tide_io_sim *c, unsigned keep, uint64_t k, uint64_t *calls)
{
    tide_gens_opts o;
    sim_opts(&o, c, keep);
    tide_gens *g = open_ok(SD, &o, "rotation workload");
    return counted_rotation(c, g, k, calls);
}

/* An open with online delete on: adoption, or creation of generation 1. */
static int adoption_workload(tide_io_sim *c, unsigned items, uint64_t k, uint64_t *calls)
{
    tide_gens_opts o;
    tide_gens *g = NULL;
    (void)items;
    sim_opts(&o, c, 2);
    uint64_t c0 = tide_io_sim_calls(c);
    if (k) OK(tide_io_sim_fail_at(c, k, TIDE_IO_SIM_EIO, 1));
    int rc = tide_gens_open(&g, SD, &o);
    *calls = tide_io_sim_calls(c) - c0;
    if (rc == 0) quiet_close(g);
    return rc;
}

static uint64_t workload_calls(tide_io_sim *base, workload_fn *run, unsigned arg)
{
    tide_io_sim *c = clone_of(base);
    uint64_t n = 0;
    expect_ok(run(c, arg, 0, &n), "the workload with no fault");
    tide_io_sim_destroy(c);
    return n;
}

/* For k = 1 .. calls + 1: stop the world before call k of `run` (k past
 * the last: none), then check every crash image of what it left. */
static void crash_every_call(tide_io_sim *base, workload_fn *run,
                             void (*check)(tide_io_sim *, unsigned, const char *), unsigned arg,
                             const char *name, uint64_t *stops, uint64_t *images)
{
    uint64_t n = workload_calls(base, run, arg), ignored;
    char where[200];

    for (uint64_t k = 1; k <= n + 1; k++) {
        tide_io_sim *c = clone_of(base);
        int rc = run(c, arg, k <= n ? k : 0, &ignored);
        if (k > n) expect_ok(rc, name);
        OK(tide_io_sim_fail_at(c, 0, TIDE_IO_SIM_NONE, 0));
        snprintf(where, sizeof where, "%s of %" PRIu64 " calls, world stopped before call %"
                 PRIu64 " (returned %d)", name, n, k, rc);
        each_crash_image(c, check, arg, where, images);
        tide_io_sim_destroy(c);
        (*stops)++;
    }
}

static void crash_every_call_of_a_rotation(unsigned keep, uint64_t *stops, uint64_t *images)
{
    tide_io_sim *base = rotation_base(keep);
    crash_every_call(base, rotation_workload, check_rotation_image, keep,
                     keep == 2 ? "G=2 rotation" : "G=3 rotation", stops, images);
    tide_io_sim_destroy(base);
}

static void a_crash_at_any_call_of_a_rotation_opens_with_every_object_in_retention(void **state)
{
    uint64_t stops = 0, images = 0;
    double t0 = th_now_ms();
    (void)state;
    tide_log_set_level(TIDE_LOG_ERROR);
    crash_every_call_of_a_rotation(2, &stops, &images);
    crash_every_call_of_a_rotation(3, &stops, &images);
    tide_log_set_level(TIDE_LOG_INFO);
    print_message("  %" PRIu64 " stops, %" PRIu64 " crash images reopened, %.1f s\n", stops, images,
                  (th_now_ms() - t0) / 1000);
}

static void a_fault_at_any_call_of_a_rotation_leaves_a_working_handle(void **state)
{
    static const int kinds[2] = { TIDE_IO_SIM_EIO, TIDE_IO_SIM_ENOSPC };
    tide_io_sim *base = rotation_base(2);
    uint64_t n = workload_calls(base, rotation_workload, 2), failed = 0;
    tide_gens_opts o;
    char what[200];
    (void)state;

    tide_log_set_level(TIDE_LOG_ERROR);
    for (uint64_t k = 1; k <= n; k++)
        for (unsigned f = 0; f < 2; f++) {
            tide_io_sim *c = clone_of(base);
            sim_opts(&o, c, 2);
            tide_gens *g = open_ok(SD, &o, "fault loop");
            OK(tide_io_sim_fail_at(c, k, kinds[f], 0));
            int rc = tide_gens_rotate(g, NULL);
            if (rc) failed++;
            snprintf(what, sizeof what, "call %" PRIu64 " of %" PRIu64 " fails (%s), rotate "
                     "returned %d, newest %" PRIu64, k, n, f ? "ENOSPC" : "EIO", rc,
                     tide_gens_newest_id(g));
            if (rc == 0 && tide_gens_newest_id(g) != 3) fail_msg("%s: 0 without switching", what);
            if (rc != 0 && tide_gens_newest_id(g) != 2) fail_msg("%s: switched on an error", what);
            if (rc != 0 && tide_io_sim_io(c)->stat(tide_io_sim_io(c), SD "/gen-000000000003",
                                                   NULL) != TIDE_ENOENT)
                fail_msg("%s: the failed rotation left its new directory behind", what);
            if (rc != 0) {
                tide_gen_manifest m;
                OK(tide_gen_manifest_read(tide_io_sim_io(c), SD, &m));
                expect_u64(m.gens[0].id, 2, "a failed rotation leaves the old manifest");
            }
            if (tide_gens_newest_id(g) == 2) get_range(g, 0, 60, what);
            else get_range(g, 30, 60, what);
            put(g, 4000, 0, NULL);
            expect_ok(tide_gens_sync(g), what);
            expect_ok(tide_gens_close(g), what);
            check_rotation_image(c, 2, what);
            tide_io_sim_destroy(c);
        }
    tide_log_set_level(TIDE_LOG_INFO);
    if (failed == 0) fail_msg("no fault made a rotation fail: the loop tested nothing");
    print_message("  %" PRIu64 " calls, %" PRIu64 " rotations failed of %" PRIu64 "\n", n, failed,
                  2 * n);
    tide_io_sim_destroy(base);
}

/* A plain store of items 0..50 in SD (or nothing when n is 0). */
static tide_io_sim *adoption_base(uint64_t n)
{
    tide_io_sim *sim = sim_new();
    if (n) {
        tide_store_create_opts co;
        tide_store_opts so;
        tide_store *s = NULL;
        tide_store_create_opts_init(&co);
        co.key_size = KS;
        co.io = tide_io_sim_io(sim);
        OK(tide_store_create(SD, &co));
        th_store_opts(&so);
        so.io = co.io;
        OK(tide_store_open(&s, SD, &so));
        expect_inserted(s, 0, n, KS, VMIN, VMAX, "adoption base");
        expect_closed(&s, "adoption base");
        OK(tide_io_sim_crash(sim, 1));
    }
    return sim;
}

static void check_adoption_image(tide_io_sim *sim, unsigned items, const char *what)
{
    tide_gens_opts o;
    tide_store *s = NULL;
    tide_store_opts so;
    char w[400];
    sim_opts(&o, sim, 2);
    tide_gens *g = open_ok(SD, &o, what);
    expect_u64(tide_gens_newest_id(g), 1, what);
    expect_reconciled(g, tide_io_sim_io(sim), what);
    snprintf(w, sizeof w, "%s: adopted", what);
    get_range(g, 0, items, w);
    put(g, 5000, 0, NULL);
    OK(tide_gens_sync(g));
    OK(tide_gens_close(g));
    th_store_opts(&so);
    so.io = tide_io_sim_io(sim);
    OK(tide_store_open(&s, SD "/gen-000000000001", &so));   /* alone, as NuDB would */
    expect_items(s, 0, items, KS, VMIN, VMAX, w);
    expect_closed(&s, w);
}

static void crash_every_call_of_an_adoption(unsigned items, uint64_t *stops, uint64_t *images)
{
    tide_io_sim *base = adoption_base(items);
    crash_every_call(base, adoption_workload, check_adoption_image, items,
                     items ? "adoption" : "creation", stops, images);
    tide_io_sim_destroy(base);
}

static void a_crash_at_any_call_of_an_adoption_or_creation_resumes_to_a_working_store(void **state)
{
    uint64_t stops = 0, images = 0;
    double t0 = th_now_ms();
    (void)state;
    tide_log_set_level(TIDE_LOG_ERROR);
    crash_every_call_of_an_adoption(50, &stops, &images);
    crash_every_call_of_an_adoption(0, &stops, &images);
    tide_log_set_level(TIDE_LOG_INFO);
    print_message("  %" PRIu64 " stops, %" PRIu64 " crash images reopened, %.1f s\n", stops, images,
                  (th_now_ms() - t0) / 1000);
}

static void a_file_in_both_places_after_an_interrupted_adoption_is_resolved_or_refused(void **state)
{
    tide_io_sim *sim = adoption_base(20);
    tide_io *io = tide_io_sim_io(sim);
    tide_gens_opts o;
    tide_gens *g = NULL;
    void *dat = NULL;
    size_t len = 0;
    (void)state;

    /* The same bytes under both names (a rename durable half by half). */
    OK(tide_io_sim_mkdir(sim, SD "/gen-000000000001"));
    OK(tide_io_sim_get_file(sim, SD "/nudb.dat", &dat, &len));
    OK(tide_io_sim_put_file(sim, SD "/gen-000000000001/nudb.dat", dat, len));
    tide_io_sim *other = clone_of(sim);
    sim_opts(&o, sim, 2);
    g = open_ok(SD, &o, "both, same bytes");
    get_range(g, 0, 20, "both, same bytes");
    OK(tide_gens_close(g));
    expect_rc(io->stat(io, SD "/nudb.dat", NULL), TIDE_ENOENT, "the root copy is removed");

    /* Different bytes: refused, naming the file, nothing removed. */
    ((uint8_t *)dat)[len - 1] ^= 1;
    OK(tide_io_sim_put_file(other, SD "/gen-000000000001/nudb.dat", dat, len));
    sim_opts(&o, other, 2);
    expect_error(tide_gens_open(&g, SD, &o), TIDE_ECORRUPT, "both, different bytes");
    expect_contains(tide_last_error(), "nudb.dat is both", "names the file");
    io = tide_io_sim_io(other);
    OK(io->stat(io, SD "/nudb.dat", NULL));
    OK(io->stat(io, SD "/gen-000000000001/nudb.dat", NULL));
    free(dat);
    tide_io_sim_destroy(other);
    tide_io_sim_destroy(sim);
}

static void a_failed_copy_forward_is_counted_and_the_fetch_still_succeeds(void **state)
{
    tide_io_sim *base = rotation_base(2);
    tide_gens_opts o;
    int seen = 0;
    (void)state;

    /* Fail each call of the fetch of an older object in turn: where the
     * fault hits the copy's insert, the fetch returns the older copy. */
    tide_log_set_level(TIDE_LOG_ERROR);
    for (uint64_t n = 1; n <= 12; n++) {
        tide_io_sim *c = clone_of(base);
        tide_gens_info in;
        uint8_t k[KS];
        void *out = NULL;
        size_t len = 0;
        uint64_t gen = 0;
        sim_opts(&o, c, 2);
        /* The copy's insert fails where its duplicate check reads a bucket:
         * a pread, a call the sim can fail; through the key map (which the
         * sim has too) it is no call at all. */
        o.store.pread = 1;
        tide_gens *g = open_ok(SD, &o, "copy failure");
        th_key(3, KS, k);
        OK(tide_io_sim_fail_at(c, n, TIDE_IO_SIM_EIO, 0));
        int rc = tide_gens_fetch(g, k, &out, &len, &gen);
        free(out);
        OK(tide_io_sim_fail_at(c, 0, TIDE_IO_SIM_NONE, 0));   /* not into close's commit */
        tide_gens_get_info(g, &in);
        if (rc == 0 && gen == 1) {
            expect_u64(in.copy_failures, 1, "a failed copy is counted");
            expect_u64(in.copied_forward, 0, "and not counted as copied");
            seen++;
        } else if (rc == 0) {
            expect_u64(gen, 2, "a fetch that copied");
            expect_u64(in.copy_failures, 0, "no copy failure");
        }
        OK(tide_gens_close(g));
        tide_io_sim_destroy(c);
    }
    tide_log_set_level(TIDE_LOG_INFO);
    if (seen == 0) fail_msg("no fault point hit the copy's insert");
    tide_io_sim_destroy(base);
}

static void a_rename_across_directories_on_io_sim_never_loses_the_file(void **state)
{
    /* What adoption relies on: a rename from DIR into DIR/gen, then sync of
     * gen, then of DIR. After any crash the file is in gen, or in DIR, or
     * (between the two syncs) under both names; never under neither. */
    int both = 0, moved = 0, stayed = 0;
    (void)state;
    for (int stop = 0; stop < 3; stop++)
        for (uint64_t seed = 0; seed < 40; seed++) {
            tide_io_sim *sim = sim_new();
            tide_io *io = tide_io_sim_io(sim);
            OK(tide_io_sim_put_file(sim, SD "/f", "abc", 3));
            OK(io->mkdir(io, SD "/gen"));
            OK(io->sync_dir(io, SD));
            OK(io->rename(io, SD "/f", SD "/gen/f"));
            if (stop >= 1) OK(io->sync_dir(io, SD "/gen"));
            if (stop >= 2) OK(io->sync_dir(io, SD));
            OK(tide_io_sim_crash(sim, seed));
            int a = io->stat(io, SD "/f", NULL) == 0, b = io->stat(io, SD "/gen/f", NULL) == 0;
            if (!a && !b) fail_msg("stop %d seed %" PRIu64 ": the file is lost", stop, seed);
            if (stop == 2 && (a || !b)) fail_msg("after both syncs: expected gen/f alone");
            both += a && b;
            moved += !a && b;
            stayed += a && !b;
            tide_io_sim_destroy(sim);
        }
    if (both == 0 || moved == 0 || stayed == 0)
        fail_msg("expected all three outcomes, got both %d, moved %d, stayed %d", both, moved,
                 stayed);
}

/* ---- copies forward across a dropping rotation ---- */

/* Copy items b..b+3 (all in generation 1) forward into the newest, one by
 * each path: a fetch, a re-PUT, a touch (with its bytes, from generation
 * 1), a keep. Nothing is synced: each copy is an insert in the pool. */
static void copy_four(tide_gens *g, uint64_t b)
{
    uint8_t k[KS], v[VMAX];
    uint64_t gen = 0, now = 0;
    size_t len = th_len(b + 2, VMIN, VMAX);
    int copied = 0;

    get(g, b, 1, &gen, "copy by fetch");
    expect_u64(gen, tide_gens_newest_id(g), "a fetch of generation 1's item copied it");
    put(g, b + 1, TIDE_EEXIST, &gen);
    expect_u64(gen, tide_gens_newest_id(g), "a re-PUT copied it");
    th_key(b + 2, KS, k);
    th_value(b + 2, len, v);
    OK(tide_gens_touch(g, k, v, len, 1, &now));
    expect_u64(now, tide_gens_newest_id(g), "a touch copied it");
    th_key(b + 3, KS, k);
    OK(tide_gens_keep(g, k, &copied));
    expect_i64(copied, 1, "a keep copied it");
}

/* On rotation_base(keep): G=2, items 5..8 copied in span 2, then the
 * counted rotation drops generation 1. G=3: items 5..8 copied in span 2
 * (into generation 2), a rotation (drops nothing), items 9..12 copied in
 * span 3 (into 3), then the counted rotation drops generation 1: the
 * copies in 2 are still pending then, so the rotation must sync more than
 * the newest. */
static int copy_rotation_workload(tide_io_sim *c, unsigned keep, uint64_t k, uint64_t *calls)
{
    tide_gens_opts o;
    sim_opts(&o, c, keep);
    tide_gens *g = open_ok(SD, &o, "copy workload");
    copy_four(g, 5);
    if (keep == 3) {
        rotate_ok(g, NULL, "copy workload: the rotation to 3");
        copy_four(g, 9);
    }
    return counted_rotation(c, g, k, calls);
}

/* Every object of generations 2 (30..60) and, before the drop, 1 (0..30)
 * reads; after the drop exactly the copied ones of 1 do. */
static void check_copy_image(tide_io_sim *sim, unsigned keep, const char *what)
{
    tide_gens_opts o;
    char w[400];
    uint64_t copied_to = keep == 2 ? 9 : 13, dropped_at = keep + 1;
    sim_opts(&o, sim, keep);
    tide_gens *g = open_ok(SD, &o, what);
    uint64_t newest = tide_gens_newest_id(g);
    expect_reconciled(g, tide_io_sim_io(sim), what);
    snprintf(w, sizeof w, "%s (newest %" PRIu64 ")", what, newest);
    if (newest == dropped_at - 1) {
        get_range(g, 0, 60, w);
    } else if (newest == dropped_at) {
        get_range(g, 30, 60, w);
        for (uint64_t i = 0; i < 30; i++) {
            int want = i >= 5 && i < copied_to;
            if (get(g, i, want, NULL, w) != want)
                fail_msg("%s: item %" PRIu64 " of generation 1: expected %s", w, i,
                         want ? "present (copied forward inside its retention)" : "gone");
        }
    } else {
        fail_msg("%s: newest generation %" PRIu64, w, newest);
    }
    put(g, 5000, 0, NULL);
    OK(tide_gens_sync(g));
    OK(tide_gens_close(g));
}

static void a_crash_at_any_call_of_a_dropping_rotation_keeps_every_copy_made_before_it(void **state)
{
    uint64_t stops = 0, images = 0;
    (void)state;
    tide_log_set_level(TIDE_LOG_ERROR);
    for (unsigned keep = 2; keep <= 3; keep++) {
        tide_io_sim *base = rotation_base(keep);
        crash_every_call(base, copy_rotation_workload, check_copy_image, keep,
                         keep == 2 ? "G=2 dropping rotation after copies"
                                   : "G=3 dropping rotation after copies in two spans",
                         &stops, &images);
        tide_io_sim_destroy(base);
    }
    tide_log_set_level(TIDE_LOG_INFO);
    print_message("  %" PRIu64 " stops, %" PRIu64 " crash images reopened\n", stops, images);
}

/* While a dropping rotation writes its manifest (between its hide and its
 * switch), looked at from its trace hook (the rotating thread holds no
 * lock then): the dropped generation's objects read as absent, a touch
 * from it is refused, the oldest id is the first kept one. */
typedef struct window_probe { tide_gens *g; int seen; } window_probe;

static void window_trace(void *arg, const char *step)
{
    window_probe *w = arg;
    uint8_t k[KS], v[VMAX];
    uint64_t now = 0;
    if (w->g == NULL || strcmp(step, "manifest") != 0) return;
    w->seen = 1;
    expect_u64(tide_gens_oldest_id(w->g), 2, "oldest id once generation 1 is hidden");
    expect_i64(get(w->g, 0, 0, NULL, "window"), 0, "generation 1's item 0 in the window");
    get(w->g, 40, 1, NULL, "generation 2's item in the window");
    th_key(1, KS, k);
    th_value(1, th_len(1, VMIN, VMAX), v);
    expect_error(tide_gens_touch(w->g, k, v, th_len(1, VMIN, VMAX), 1, &now), TIDE_ENOTFOUND,
                 "a touch from the hidden generation");
}

static void a_failed_dropping_rotation_shows_the_hidden_generation_again(void **state)
{
    tide_io_sim *base = rotation_base(2);
    uint64_t n = workload_calls(base, copy_rotation_workload, 2), in_sync = 0, failed = 0;
    tide_gens_opts o;
    window_probe w = { NULL, 0 };
    char what[200];
    (void)state;

    tide_log_set_level(TIDE_LOG_ERROR);
    for (uint64_t k = 0; k <= n; k++) {
        tide_io_sim *c = clone_of(base);
        sim_opts(&o, c, 2);
        o.trace = window_trace;
        o.trace_arg = &w;
        tide_gens *g = open_ok(SD, &o, "hide fault loop");
        copy_four(g, 5);
        w.g = k == 0 ? g : NULL;     /* the window, looked at once, with no fault */
        if (k) OK(tide_io_sim_fail_at(c, k, TIDE_IO_SIM_EIO, 0));
        int rc = tide_gens_rotate(g, NULL);
        OK(tide_io_sim_fail_at(c, 0, TIDE_IO_SIM_NONE, 0));
        w.g = NULL;
        snprintf(what, sizeof what, "call %" PRIu64 " of %" PRIu64 " fails, rotate returned %d",
                 k, n, rc);
        if (rc) {
            failed++;
            in_sync += strstr(tide_last_error(), "syncing generation") != NULL;
            expect_u64(tide_gens_newest_id(g), 2, what);
            expect_u64(tide_gens_oldest_id(g), 1, "generation 1 shown again");
            get_range(g, 0, 60, what);
        } else {
            expect_u64(tide_gens_newest_id(g), 3, what);
            get_range(g, 5, 9, what);
            get_range(g, 30, 60, what);
        }
        quiet_close(g);
        tide_io_sim_destroy(c);
    }
    tide_log_set_level(TIDE_LOG_INFO);
    if (w.seen == 0) fail_msg("the window was never looked at");
    if (in_sync == 0) fail_msg("no fault hit the sync of the kept stores");
    print_message("  %" PRIu64 " calls, %" PRIu64 " rotations failed, %" PRIu64 " in the sync\n", n,
                  failed, in_sync);
    tide_io_sim_destroy(base);
}

/* ---- a failed manifest write whose undo fails too ---- */

typedef struct arm_at { tide_io_sim *sim; const char *step; uint64_t n; int persistent; } arm_at;

static void arm_on_step(void *arg, const char *step)
{
    arm_at *a = arg;
    if (a->n && strcmp(step, a->step) == 0) {
        OK(tide_io_sim_fail_at(a->sim, a->n, TIDE_IO_SIM_EIO, a->persistent));
        a->n = 0;
    }
}

static void a_manifest_whose_undo_failed_is_written_again_before_any_directory_goes(void **state)
{
    tide_io_sim *base = rotation_base(2);
    uint64_t images = 0, refused = 0;
    tide_gens_opts o;
    char what[200];
    (void)state;

    tide_log_set_level(TIDE_LOG_ERROR);
    for (uint64_t j = 1;; j++) {
        tide_io_sim *c = clone_of(base);
        tide_io *io = tide_io_sim_io(c);
        tide_gen_manifest m;
        /* Call 6 of the manifest write is its directory sync, after the
         * rename (manifest.h): it and everything after fail, the write-back
         * of the old manifest included. */
        arm_at a = { c, "manifest", 6, 1 };
        sim_opts(&o, c, 2);
        o.trace = arm_on_step;
        o.trace_arg = &a;
        tide_gens *g = open_ok(SD, &o, "double fault");
        expect_error(tide_gens_rotate(g, NULL), TIDE_EIO, "the first rotation");
        OK(tide_io_sim_fail_at(c, 0, TIDE_IO_SIM_NONE, 0));
        OK(tide_gen_manifest_read(io, SD, &m));
        expect_u64(m.gens[0].id, 3, "the disk names generation 3 (the double fault)");
        expect_u64(tide_gens_newest_id(g), 2, "the handle still writes into 2");
        /* The disk may not name generation 1 any more: it stays hidden, so
         * nothing is copied from it into 2 that a crash could lose. */
        expect_i64(tide_gens_disk_unknown(g), 1, "the disk is unknown");
        expect_u64(tide_gens_oldest_id(g), 2, "generation 1 stays hidden");
        expect_i64(get(g, 0, 0, NULL, "double fault"), 0, "an object only 1 holds reads as absent");
        tide_gens_info gi;
        tide_gens_get_info(g, &gi);
        expect_u64(gi.copied_forward, 0, "no copy from the hidden generation");
        expect_u64(tide_gens_read_epoch(g), 0, "the readable set did not grow");
        uint64_t f0 = tide_io_sim_faults(c);
        OK(tide_io_sim_fail_at(c, j, TIDE_IO_SIM_EIO, 0));
        int rc = tide_gens_rotate(g, NULL);
        int hit = tide_io_sim_faults(c) > f0;
        OK(tide_io_sim_fail_at(c, 0, TIDE_IO_SIM_NONE, 0));
        if (j <= 6 && rc == 0) fail_msg("j %" PRIu64 ": the rewrite failed but rotate went on", j);
        if (j <= 6) {
            expect_contains(tide_last_error(), "rotation refused", "the refusal");
            OK(io->stat(io, SD "/gen-000000000003", NULL));
            refused++;
        }
        quiet_close(g);
        snprintf(what, sizeof what, "double fault, then call %" PRIu64 " of the next rotation "
                 "fails (returned %d)", j, rc);
        tide_io_sim *d = clone_of(c);
        check_rotation_image(d, 2, what);
        tide_io_sim_destroy(d);
        each_crash_image(c, check_rotation_image, 2, what, &images);
        tide_io_sim_destroy(c);
        if (!hit) break;
    }
    tide_log_set_level(TIDE_LOG_INFO);
    expect_u64(refused, 6, "refusals while the rewrite failed");
    print_message("  %" PRIu64 " crash images reopened\n", images);
    tide_io_sim_destroy(base);
}

/* After a double fault the manifest can be written again outside a
 * rotation (the rotator's look); generation 1 stays hidden until the next
 * rotation drops it. */
static void a_rewrite_after_a_double_fault_keeps_the_dropped_one_hidden_until_a_rotation(void **state)
{
    tide_io_sim *c = rotation_base(2);
    tide_io *io = tide_io_sim_io(c);
    tide_gens_rotate_report r;
    tide_gen_manifest m;
    tide_gens_opts o;
    arm_at a = { c, "manifest", 6, 1 };
    (void)state;

    sim_opts(&o, c, 2);
    o.trace = arm_on_step;
    o.trace_arg = &a;
    tide_gens *g = open_ok(SD, &o, "double fault");
    tide_log_set_level(TIDE_LOG_ERROR);
    expect_error(tide_gens_rotate(g, NULL), TIDE_EIO, "the double fault");
    expect_error(tide_gens_rewrite_manifest(g), TIDE_EIO, "the rewrite while the disk still fails");
    expect_i64(tide_gens_disk_unknown(g), 1, "still unknown");
    OK(tide_io_sim_fail_at(c, 0, TIDE_IO_SIM_NONE, 0));
    OK(tide_gens_rewrite_manifest(g));
    tide_log_set_level(TIDE_LOG_INFO);
    expect_i64(tide_gens_disk_unknown(g), 0, "known again");
    OK(tide_gen_manifest_read(io, SD, &m));
    expect_u64(m.gens[0].id, 2, "the disk names the handle's list again");
    expect_u64(m.count, 2, "with generation 1");
    expect_i64(get(g, 0, 0, NULL, "after the rewrite"), 0, "generation 1 stays hidden");
    expect_u64(tide_gens_read_epoch(g), 0, "not shown again");
    OK(tide_gens_rewrite_manifest(g));              /* nothing to do */
    rotate_ok(g, &r, "the next rotation");
    expect_u64(r.dropped, 1, "it drops generation 1");
    expect_u64(r.dropped_ids[0], 1, "generation 1");
    get_range(g, 30, 60, "generation 2's objects");
    OK(tide_gens_close(g));
    tide_io_sim_destroy(c);
}

/* The readable epoch moves when, and only when, a failed rotation shows
 * its hidden generation again; the objects read then are copied forward
 * and outlive the next rotation. */
static void the_readable_epoch_moves_when_a_failed_rotation_shows_a_generation_again(void **state)
{
    tide_io_sim *c = rotation_base(2);
    tide_gens_rotate_report r;
    tide_gens_opts o;
    arm_at a = { c, "manifest", 1, 0 };            /* the write fails, the write-back works */
    (void)state;

    sim_opts(&o, c, 2);
    o.trace = arm_on_step;
    o.trace_arg = &a;
    tide_gens *g = open_ok(SD, &o, "epoch");
    expect_u64(tide_gens_read_epoch(g), 0, "at open");
    tide_log_set_level(TIDE_LOG_ERROR);
    expect_error(tide_gens_rotate(g, NULL), TIDE_EIO, "the manifest write fails after the hide");
    expect_u64(tide_gens_read_epoch(g), 1, "shown again: the epoch moved");
    expect_i64(tide_gens_disk_unknown(g), 0, "the old manifest was written back");
    expect_u64(tide_gens_oldest_id(g), 1, "generation 1 readable again");
    get(g, 0, 1, NULL, "read after the failure");   /* copied forward into 2 */
    a.step = "create";
    a.n = 1;
    expect_error(tide_gens_rotate(g, NULL), TIDE_EIO, "a failure before any hide");
    tide_log_set_level(TIDE_LOG_INFO);
    expect_u64(tide_gens_read_epoch(g), 1, "no hide, no move");
    rotate_ok(g, &r, "a working rotation");
    expect_u64(r.dropped, 1, "drops generation 1");
    expect_u64(tide_gens_read_epoch(g), 1, "a rotation that works only removes: no move");
    get(g, 0, 1, NULL, "the object read after the failure lives on");
    expect_i64(get(g, 1, 0, NULL, "untouched"), 0, "an untouched object of 1 is gone");
    OK(tide_gens_close(g));
    tide_io_sim_destroy(c);
}

typedef struct hide_copy { tide_gens *g; int done; } hide_copy;

/* At "hide" (after the first sync, before the hide): read item 0, which
 * only generation 1 holds, so it is copied into 2's pool. */
static void copy_at_hide(void *arg, const char *step)
{
    hide_copy *h = arg;
    if (h->g && !h->done && strcmp(step, "hide") == 0) {
        h->done = 1;
        get(h->g, 0, 1, NULL, "a read between the two syncs");
    }
}

/* The second sync: a copy taken from the dropped generation after the
 * first sync is durable before the manifest forgets it (a crash right
 * after the rotation keeps it). */
static void a_copy_between_the_two_syncs_is_durable_before_the_manifest(void **state)
{
    tide_io_sim *c = rotation_base(2);
    tide_gens_rotate_report r;
    tide_gens_opts o;
    hide_copy h = { NULL, 0 };
    (void)state;

    sim_opts(&o, c, 2);
    o.trace = copy_at_hide;
    o.trace_arg = &h;
    tide_gens *g = open_ok(SD, &o, "two syncs");
    h.g = g;
    rotate_ok(g, &r, "the rotation");
    expect_i64(h.done, 1, "the read ran between the syncs");
    expect_u64(r.dropped, 1, "generation 1 dropped");
    tide_io_sim *d = clone_of(c);                 /* the disk right after the rotation */
    quiet_close(g);
    for (uint64_t seed = 1; seed <= 4; seed++) {
        tide_io_sim *e = clone_of(d);
        OK(tide_io_sim_crash(e, seed));
        sim_opts(&o, e, 2);
        tide_gens *g2 = open_ok(SD, &o, "after the crash");
        get(g2, 0, 1, NULL, "the copy made between the two syncs, after a crash");
        quiet_close(g2);
        tide_io_sim_destroy(e);
    }
    tide_io_sim_destroy(d);
    tide_io_sim_destroy(c);
}

/* ---- generation directories without a manifest ---- */

static void generation_directories_without_a_manifest_are_refused_changing_nothing(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    tide_gens *g = NULL;
    char p[4200], q[4200], d4[4200];
    uint8_t *man = NULL;
    size_t man_len = 0;

    gopts(&o, 1, 2, NULL);
    g = open_ok(t->dir, &o, "setup");
    for (uint64_t r = 0; r < 3; r++) {
        put_range(g, r * 100, r * 100 + 10);
        rotate_ok(g, NULL, "setup");
    }
    put_range(g, 900, 910);
    OK(tide_gens_close(g));                                    /* generations 4 and 3 */
    join(p, t->dir, TIDE_GEN_FILE);
    OK(th_read_file(p, &man, &man_len));
    expect_i64(unlink(p), 0, "the manifest lost");
    join(d4, t->dir, "gen-000000000004");
    long long dat4 = th_file_size(join(q, d4, "nudb.dat"));
    for (int od = 1; od >= 0; od--) {
        g = NULL;
        gopts(&o, od, 2, NULL);
        expect_error(tide_gens_open(&g, t->dir, &o), TIDE_ECORRUPT, "open without a manifest");
        expect_contains(tide_last_error(), "gen-000000000003, gen-000000000004", "names them");
        expect_contains(tide_last_error(), "restore tide.generations, or move these directories "
                        "away", "says what to do");
        expect_i64(th_exists(p), 0, "no manifest written");
        expect_i64(th_exists(join(q, t->dir, "gen-000000000001")), 0, "no generation 1 made");
        expect_i64(th_exists(join(q, t->dir, "nudb.dat")), 0, "no plain store made");
        expect_i64(th_file_size(join(q, d4, "nudb.dat")), dat4, "generation 4 untouched");
        expect_i64(is_dir(join(q, t->dir, "gen-000000000003")), 1, "generation 3 kept");
    }
    /* A resumable gen-000000000001 beside them changes nothing. */
    expect_i64(mkdir(join(q, t->dir, "gen-000000000001"), 0755), 0, "mkdir gen 1");
    gopts(&o, 1, 2, NULL);
    expect_error(tide_gens_open(&g, t->dir, &o), TIDE_ECORRUPT, "with a gen 1 beside them");
    expect_contains(tide_last_error(), ": gen-000000000003, gen-000000000004:", "gen 1 not named");
    expect_i64(rmdir(q), 0, "rmdir gen 1");
    /* The way out the message gives: the manifest restored, all is there. */
    OK(th_write_file(p, man, man_len));
    g = open_ok(t->dir, &o, "manifest restored");
    get_range(g, 900, 910, "generation 4");
    get_range(g, 200, 210, "generation 3");
    OK(tide_gens_close(g));
    free(man);
}

/* ---- keep 0: the manifest's ---- */

static void keep_zero_is_the_manifests_and_a_lower_keep_is_warned_at_open(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    tide_gens_rotate_report r;
    th_log_capture cap = { .text = "" };

    tide_gens_opts_init(&o);
    expect_u64(o.keep, 0, "opts_init's keep");
    gopts(&o, 1, 0, NULL);
    tide_gens *g = open_ok(t->dir, &o, "keep 0, new");
    expect_u64(manifest_of(t->dir).keep, TIDE_GEN_MIN, "a new manifest's keep");
    OK(tide_gens_close(g));
    o.keep = 3;
    g = open_ok(t->dir, &o, "keep 3");
    rotate_ok(g, NULL, "keep 3");
    rotate_ok(g, NULL, "keep 3");
    OK(tide_gens_close(g));                                   /* 3, 2, 1 with keep 3 */
    o.keep = 0;
    g = open_ok(t->dir, &o, "keep 0");
    rotate_ok(g, &r, "keep 0 on a keep-3 manifest");
    expect_u64(r.dropped, 1, "keep 3 kept: one dropped");
    expect_u64(manifest_of(t->dir).keep, 3, "the manifest's keep stays");
    expect_u64(manifest_of(t->dir).count, 3, "three held");
    OK(tide_gens_close(g));                                   /* 4, 3, 2 */
    o.keep = 2;
    tide_log_set_level(TIDE_LOG_INFO);
    tide_log_set_sink(th_log_capture_sink, &cap);
    g = open_ok(t->dir, &o, "keep 2");
    tide_log_set_sink(NULL, NULL);
    expect_contains(cap.text, "keep 2 is below tide.generations's 3", "the warning");
    expect_contains(cap.text, "drops generations 3, 2", "names what goes");
    rotate_ok(g, &r, "keep lowered");
    expect_u64(r.dropped, 2, "the lowered keep is honoured");
    expect_u64(manifest_of(t->dir).keep, 2, "manifest keep 2");
    OK(tide_gens_close(g));
}

/* ---- interrupt ---- */

typedef struct intr_state {
    tide_gens *g;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned steps;     /* delete-step traces seen */
    int stop;
} intr_state;

static void intr_trace(void *arg, const char *step)
{
    intr_state *s = arg;
    if (strcmp(step, "delete-step") != 0) return;
    pthread_mutex_lock(&s->mu);
    s->steps++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Another thread: interrupt once the first delete step was taken. */
static void *interrupter(void *arg)
{
    intr_state *s = arg;
    pthread_mutex_lock(&s->mu);
    while (s->steps == 0 && !s->stop) pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    tide_gens_interrupt(s->g);
    return NULL;
}

static void an_interrupt_stops_a_long_drop_and_open_removes_the_rest(void **state)
{
    tide_io_sim *sim = sim_new();
    tide_io *io = tide_io_sim_io(sim);
    tide_gens_opts o;
    tide_gens_rotate_report r;
    tide_io_sim_file_stats fs;
    intr_state s;
    pthread_t th;
    (void)state;

    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    sim_opts(&o, sim, 2);
    o.back_off_ms = 600000;                /* ten minutes a step: only an interrupt ends it */
    o.trace = intr_trace;
    o.trace_arg = &s;
    tide_gens *g = open_ok(SD, &o, "interrupt");
    s.g = g;
    put_range(g, 0, 2000);
    rotate_ok(g, NULL, "to 2");
    put_range(g, 2000, 2010);
    OK(tide_gens_sync(g));
    OK(tide_io_sim_file_stats_get(sim, SD "/gen-000000000001/nudb.dat", &fs));
    uint64_t total = (fs.size + o.delete_chunk - 1) / o.delete_chunk;
    if (total < 50) fail_msg("generation 1 too small: %" PRIu64 " steps", total);
    if (pthread_create(&th, NULL, interrupter, &s) != 0) fail_msg("pthread_create");
    double t0 = th_now_ms();
    int rc = tide_gens_rotate(g, &r);
    double took = th_now_ms() - t0;
    pthread_mutex_lock(&s.mu);
    s.stop = 1;
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    pthread_join(th, NULL);
    expect_ok(rc, "the interrupted rotation is done");
    expect_u64(tide_gens_newest_id(g), 3, "switched");
    expect_u64(r.delete_steps, 1, "one step taken, then the interrupt cut the pause short");
    if (r.delete_steps >= total) fail_msg("all %" PRIu64 " steps taken", total);
    if (took > 300000) fail_msg("rotate took %.0f ms: the pause was not cut short", took);
    print_message("  %u of %" PRIu64 " delete steps taken before the interrupt stopped the drop\n",
                  r.delete_steps, total);
    OK(io->stat(io, SD "/gen-000000000001", NULL));   /* the rest left for open */
    expect_error(tide_gens_rotate(g, NULL), TIDE_ECLOSED, "rotate after an interrupt");
    get_range(g, 2000, 2010, "reads go on after an interrupt");
    OK(tide_gens_close(g));
    o.trace = NULL;
    o.back_off_ms = 0;
    g = open_ok(SD, &o, "reopen");
    expect_error(io->stat(io, SD "/gen-000000000001", NULL), TIDE_ENOENT, "open removed the rest");
    tide_gens_info in;
    tide_gens_get_info(g, &in);
    expect_u64(in.removed_at_open, 1, "removed at open");
    get_range(g, 2000, 2010, "reopen");
    OK(tide_gens_close(g));
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
    tide_io_sim_destroy(sim);
}

/* ---- the deferred index across generations ---- */

#define LAG (64u * 1024u)   /* 4096 slots of 16 bytes: at most 3072 entries */

/* ---- a drop under a reader in another process ---- */

/* A reader of generation 1, opened read-only as `tide get` would be, at
 * the "drop" step (after the rotation closed the generation, before its
 * delete) or before the rotation (then it attaches through tide.live). */
typedef struct drop_reader {
    char dir[4200];
    int at_drop;            /* open at the "drop" step */
    tide_store *s;
    unsigned unlink_only;   /* "delete-unlink-only" traces seen */
    uint64_t dat_map_bytes; /* the reader's data map when it opened */
} drop_reader;

static void reader_open(drop_reader *d)
{
    tide_store_opts so;
    tide_store_info si;
    tide_store_opts_init(&so);
    so.read_only = 1;
    int rc = tide_store_open(&d->s, d->dir, &so);
    if (rc) fail_msg("reader open %s: %d %s: %s", d->dir, rc, tide_strerror(rc), tide_last_error());
    tide_store_get_info(d->s, &si);
    d->dat_map_bytes = si.dat_map_bytes;
}

static void drop_reader_trace(void *arg, const char *step)
{
    drop_reader *d = arg;
    if (strcmp(step, "drop") == 0 && d->at_drop) reader_open(d);
    if (strcmp(step, "delete-unlink-only") == 0) d->unlink_only++;
}

static void reader_get_range(tide_store *s, uint64_t from, uint64_t to, const char *what)
{
    for (uint64_t i = from; i < to; i++) {
        uint8_t k[KS], v[VMAX];
        size_t want = th_len(i, VMIN, VMAX), len = 0;
        void *out = NULL;
        th_key(i, KS, k);
        th_value(i, want, v);
        int rc = tide_store_fetch(s, k, &out, &len);
        if (rc) fail_msg("%s: item %" PRIu64 ": fetch %d %s: %s", what, i, rc, tide_strerror(rc),
                         tide_last_error());
        int same = len == want && memcmp(out, v, len) == 0;
        free(out);
        if (!same) fail_msg("%s: item %" PRIu64 ": %zu bytes differ from the %zu written", what, i,
                            len, want);
    }
}

/* Items 0..300 synced into generation 1, then a rotation and 300..350
 * synced into generation 2: the next rotation drops generation 1. */
static void fill_two_generations(tide_gens *g)
{
    put_range(g, 0, 300);
    OK(tide_gens_sync(g));
    rotate_ok(g, NULL, "first");
    put_range(g, 300, 350);
    OK(tide_gens_sync(g));
}

/* The drop unlinks and never cuts: a plain reader maps nudb.dat, where a
 * cut is a SIGBUS; an attached reader would read short. Either way it
 * reads every object of the dropped generation after the rotation. */
static void drop_under_reader(const char *root, int at_drop)
{
    tide_gens_opts o;
    tide_gens_rotate_report r;
    drop_reader d;
    char p[4200];

    memset(&d, 0, sizeof d);
    d.at_drop = at_drop;
    join(d.dir, root, "gen-000000000001");
    gopts(&o, 1, 2, NULL);
    o.trace = drop_reader_trace;
    o.trace_arg = &d;
    tide_gens *g = open_ok(root, &o, "drop under a reader");
    fill_two_generations(g);
    if (!at_drop) reader_open(&d);   /* gen 1 is still open for writing: attached */
    uint64_t dat = (uint64_t)th_file_size(join(p, d.dir, "nudb.dat"));
    if (dat < 3 * 4096) fail_msg("generation 1 too small to cut in steps: %" PRIu64 " bytes", dat);
    rotate_ok(g, &r, "the drop");
    if (d.s == NULL) fail_msg("the reader never opened");
    expect_u64(r.dropped, 1, "generation 1 dropped");
    expect_u64(r.delete_steps, 0, "no cut while a reader holds the generation");
    expect_u64(d.unlink_only, 1, "one unlink-only delete traced");
    expect_u64(r.deleted_bytes, 0, "nothing counted as deleted: the reader holds the files");
    if (r.held_bytes < dat) fail_msg("held_bytes %" PRIu64 " is under nudb.dat's %" PRIu64, r.held_bytes, dat);
    expect_i64(th_exists(d.dir), 0, "generation 1's directory is gone all the same");
    if (at_drop && d.dat_map_bytes == 0 && th_scratch_maps())   /* tmpfs: nothing is mapped */
        fail_msg("the plain reader did not map nudb.dat");
    if (!at_drop) expect_u64(d.dat_map_bytes, 0, "an attached reader preads (no data map)");
    reader_get_range(d.s, 0, 300, "the reader after the drop");
    OK(tide_store_close(d.s));
    get_range(g, 300, 350, "the node after the drop");
    OK(tide_gens_close(g));
}

/* A reader that opens the generation while the drop cuts it (the rotation
 * holds its locks) is refused, told that a rotation is deleting it. */
typedef struct cut_opener { char dir[4200]; int tried, rc; char err[1024]; } cut_opener;

static void open_at_first_cut(void *arg, const char *step)
{
    cut_opener *c = arg;
    tide_store_opts so;
    tide_store *s = NULL;

    if (strcmp(step, "delete-step") != 0 || c->tried) return;
    c->tried = 1;
    tide_store_opts_init(&so);
    so.read_only = 1;
    c->rc = tide_store_open(&s, c->dir, &so);
    snprintf(c->err, sizeof c->err, "%s", tide_last_error());
    if (c->rc == 0) tide_store_close(s);
}

static void a_reader_opening_a_generation_under_its_cut_is_told_a_rotation_deletes_it(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    tide_gens_rotate_report r;
    cut_opener c;

    memset(&c, 0, sizeof c);
    join(c.dir, t->dir, "gen-000000000001");
    gopts(&o, 1, 2, NULL);
    o.trace = open_at_first_cut;
    o.trace_arg = &c;
    tide_gens *g = open_ok(t->dir, &o, "a reader under the cut");
    fill_two_generations(g);
    rotate_ok(g, &r, "the drop");
    if (!c.tried) fail_msg("no delete step was traced");
    expect_rc(c.rc, TIDE_EBUSY, "a read-only open during the cut");
    if (strstr(c.err, "a rotation is deleting it") == NULL)
        fail_msg("the refusal does not say a rotation is deleting the generation: %s", c.err);
    if (r.delete_steps < 2) fail_msg("expected the drop to go on cutting, got %u steps", r.delete_steps);
    print_message("    refused with: %s\n", c.err);
    OK(tide_gens_close(g));
}

static void a_drop_under_a_plain_reader_only_unlinks_and_the_reader_still_fetches(void **state)
{
    th_scratch *t = *state;
    drop_under_reader(t->dir, 1);
}

static void a_drop_under_an_attached_reader_only_unlinks_and_the_reader_still_fetches(void **state)
{
    th_scratch *t = *state;
    drop_under_reader(t->dir, 0);
}

static void lag_opts(tide_gens_opts *o, unsigned keep, tide_io *io)
{
    gopts(o, 1, keep, io);
    o->store.index_lag_bytes = LAG;
    o->store.commit_interval_ms = 600000;   /* commits only when synced */
}

/* Every generation but the newest holds an empty tail; returns the tails'
 * bytes summed over the generations, which must equal store_info's. */
static uint64_t tails_of(tide_gens *g, const char *what)
{
    tide_gens_info in;
    tide_store_info si;
    uint64_t items = 0, bytes = 0;

    tide_gens_get_info(g, &in);
    tide_gens_store_info(g, &si);
    for (unsigned i = 0; i < in.count; i++) {
        if (i > 0 && (in.gens[i].tail_items || in.gens[i].tail_bytes))
            fail_msg("%s: generation %" PRIu64 " (not the newest) holds a tail of %" PRIu64 " entries, %"
                     PRIu64 " bytes", what, in.gens[i].id, in.gens[i].tail_items, in.gens[i].tail_bytes);
        items += in.gens[i].tail_items;
        bytes += in.gens[i].tail_bytes;
    }
    expect_u64(si.tail_items, items, what);
    expect_u64(si.tail_bytes, bytes, what);
    return bytes;
}

static void after_a_rotation_only_the_newest_generation_holds_a_tail(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    tide_gens_info in;
    tide_store_info si;

    lag_opts(&o, 3, NULL);
    tide_gens *g = open_ok(t->dir, &o, "lag");
    put_range(g, 0, 500);
    OK(tide_gens_sync(g));
    tide_gens_get_info(g, &in);
    expect_u64(in.gens[0].tail_items, 500, "the synced inserts wait in the newest's tail");
    rotate_ok(g, NULL, "first");
    tide_gens_get_info(g, &in);
    expect_u64(in.count, 2, "two generations");
    expect_u64(in.gens[1].tail_items, 0, "generation 1's tail was indexed at the rotation");
    expect_u64(in.gens[1].tail_bytes, 0, "and holds no table");
    put_range(g, 500, 800);
    OK(tide_gens_sync(g));
    tails_of(g, "after 300 inserts into generation 2");
    tide_gens_get_info(g, &in);
    expect_u64(in.gens[0].tail_items, 300, "the newest defers");
    rotate_ok(g, NULL, "second");
    tails_of(g, "after the second rotation");
    tide_gens_store_info(g, &si);
    expect_u64(si.tail_items, 0, "no tail anywhere right after a rotation");
    expect_u64(si.index_lag_bytes, LAG, "the newest's budget");
    get_range(g, 0, 800, "every object");
    OK(tide_gens_close(g));
    /* Reopened: the older ones with no lag, the newest with it. */
    g = open_ok(t->dir, &o, "reopen");
    put_range(g, 800, 900);
    OK(tide_gens_sync(g));
    tails_of(g, "reopened");
    tide_gens_get_info(g, &in);
    expect_u64(in.gens[0].tail_items, 100, "the newest defers after a reopen");
    get_range(g, 0, 900, "every object after a reopen");
    OK(tide_gens_close(g));
}

static void the_tails_of_all_generations_never_pass_one_budget_across_rotations(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    uint64_t most = 0, next = 0;

    lag_opts(&o, 3, NULL);
    tide_gens *g = open_ok(t->dir, &o, "budget");
    for (unsigned round = 0; round < 5; round++) {
        for (unsigned b = 0; b < 10; b++) {   /* 2500 entries: a 4096-slot table, the whole budget */
            put_range(g, next, next + 250);
            next += 250;
            OK(tide_gens_sync(g));
            char what[80];
            tide_store_info si;
            snprintf(what, sizeof what, "round %u, batch %u", round, b);
            tide_gens_store_info(g, &si);   /* /metrics' store_tail_index: the sum */
            if (si.tail_bytes > LAG)
                fail_msg("%s: the tails hold %" PRIu64 " bytes in all, over the one budget of %u", what,
                         si.tail_bytes, LAG);
            if (si.tail_bytes > most) most = si.tail_bytes;
            tails_of(g, what);
        }
        rotate_ok(g, NULL, "budget");
    }
    expect_u64(most, LAG, "the newest's tail reached the whole budget (so two would pass it)");
    get_range(g, next - 750, next, "the newest objects");
    OK(tide_gens_close(g));
}

/* At "switch" and "drop" (after the dropped store's close) of an armed
 * rotation: the writes io_sim counted on generation 1's key file. */
typedef struct key_writes { tide_io_sim *sim; int armed; uint64_t at_switch, at_drop, bytes_switch, bytes_drop; } key_writes;

static void count_key_writes(void *arg, const char *step)
{
    key_writes *k = arg;
    tide_io_sim_file_stats st;
    if (!k->armed || (strcmp(step, "switch") != 0 && strcmp(step, "drop") != 0)) return;
    OK(tide_io_sim_file_stats_get(k->sim, SD "/gen-000000000001/nudb.key", &st));
    if (strcmp(step, "switch") == 0) { k->at_switch = st.writes; k->bytes_switch = st.bytes_written; }
    else { k->at_drop = st.writes; k->bytes_drop = st.bytes_written; }
}

static void dropping_a_generation_writes_nothing_to_its_key_file(void **state)
{
    tide_io_sim *sim = sim_new();
    key_writes k = { sim, 0, 0, ~0ull, 0, ~0ull };
    tide_gens_opts o;
    tide_gens_info in;
    (void)state;

    lag_opts(&o, 2, tide_io_sim_io(sim));
    o.trace = count_key_writes;
    o.trace_arg = &k;
    tide_gens *g = open_ok(SD, &o, "drop");
    put_range(g, 0, 200);
    OK(tide_gens_sync(g));
    tide_gens_get_info(g, &in);
    expect_u64(in.gens[0].tail_items, 200, "generation 1's tail before its rotation");
    rotate_ok(g, NULL, "to 2");
    put_range(g, 200, 260);
    OK(tide_gens_sync(g));
    k.armed = 1;
    rotate_ok(g, NULL, "to 3, dropping 1");
    if (k.at_drop == ~0ull) fail_msg("the drop's trace did not come");
    expect_u64(k.at_drop, k.at_switch, "writes to the dropped generation's nudb.key from the switch to its close");
    expect_u64(k.bytes_drop, k.bytes_switch, "bytes written to it in that time");
    get_range(g, 200, 260, "generation 2's objects");
    expect_i64(get(g, 0, 0, NULL, "generation 1's"), 0, "dropped");
    OK(tide_gens_close(g));
    tide_io_sim_destroy(sim);
}

/* On rotation_base(keep) (generations 2: 30..60, 1: 0..30): opened with
 * the lag, items 60..90 inserted and synced (acknowledged, in the newest's
 * tail), then the counted rotation: G=2 drops generation 1, G=3 nothing;
 * both index generation 2's tail first. */
static int defer_rotation_workload(tide_io_sim *c, unsigned keep, uint64_t k, uint64_t *calls)
{
    tide_gens_opts o;
    tide_gens_info in;
    lag_opts(&o, keep, tide_io_sim_io(c));
    tide_gens *g = open_ok(SD, &o, "deferred rotation workload");
    put_range(g, 60, 90);
    OK(tide_gens_sync(g));
    tide_gens_get_info(g, &in);
    expect_u64(in.gens[0].tail_items, 30, "the acknowledged inserts wait in the tail");
    return counted_rotation(c, g, k, calls);
}

/* Every acknowledged object inside its retention reads back; only the
 * newest holds a tail; the handle takes a write. */
static void check_defer_image(tide_io_sim *sim, unsigned keep, const char *what)
{
    char w[400];
    tide_gens *g = open_image(sim, keep, what, LAG, 90, w, sizeof w);
    tails_of(g, w);
    OK(tide_gens_close(g));
}

static void a_crash_at_any_call_of_a_rotation_with_a_tail_recovers_every_acknowledged_key(void **state)
{
    uint64_t stops = 0, images = 0;
    (void)state;
    tide_log_set_level(TIDE_LOG_ERROR);
    for (unsigned keep = 2; keep <= 3; keep++) {
        tide_io_sim *base = rotation_base(keep);
        crash_every_call(base, defer_rotation_workload, check_defer_image, keep,
                         keep == 2 ? "G=2 dropping rotation with a tail" : "G=3 rotation with a tail",
                         &stops, &images);
        tide_io_sim_destroy(base);
    }
    tide_log_set_level(TIDE_LOG_INFO);
    print_message("  %" PRIu64 " stops, %" PRIu64 " crash images reopened\n", stops, images);
}

/* A rotation that fails at its flush (a') or at its manifest (e) leaves
 * generation 1 the newest, deferring again: its budget in store_info, the
 * next synced inserts waiting in its tail (not indexed commit by commit),
 * every object found, and the next rotation works. */
static void a_failed_rotation_leaves_the_newest_deferring_again(void **state)
{
    static const char *const steps[] = { "flush", "manifest" };
    (void)state;

    tide_log_set_level(TIDE_LOG_ERROR);
    for (unsigned f = 0; f < 2; f++) {
        tide_io_sim *sim = sim_new();
        arm_at a = { sim, steps[f], 0, f == 0 };   /* the flush's: every call (its retries) */
        tide_gens_opts o;
        tide_gens_info in;
        tide_store_info si;
        char what[120];

        lag_opts(&o, 2, tide_io_sim_io(sim));
        o.trace = arm_on_step;
        o.trace_arg = &a;
        tide_gens *g = open_ok(SD, &o, steps[f]);
        put_range(g, 0, 100);
        OK(tide_gens_sync(g));
        uint64_t f0 = tide_io_sim_faults(sim);
        a.n = 1;   /* from the first call after the step's trace */
        snprintf(what, sizeof what, "a rotation failing at its %s", steps[f]);
        if (tide_gens_rotate(g, NULL) == 0) fail_msg("%s: rotate returned 0", what);
        if (tide_io_sim_faults(sim) == f0) fail_msg("%s: the fault did not hit", what);
        OK(tide_io_sim_fail_at(sim, 0, TIDE_IO_SIM_NONE, 0));
        expect_u64(tide_gens_newest_id(g), 1, what);
        tide_gens_store_info(g, &si);
        expect_u64(si.index_lag_bytes, LAG, "the newest's budget after the failed rotation");
        /* The failed flush is retried every second (inserts are refused
         * until then): wait for it, at most 10 s. */
        uint8_t k100[KS], v100[VMAX];
        size_t len100 = th_len(100, VMIN, VMAX);
        th_key(100, KS, k100);
        th_value(100, len100, v100);
        int rc = TIDE_EIO;
        for (unsigned tries = 0; tries < 500 && rc == TIDE_EIO; tries++) {
            rc = tide_gens_insert(g, k100, v100, len100, NULL);
            if (rc == TIDE_EIO) usleep(20000);
        }
        OK(rc);
        put_range(g, 101, 200);
        OK(tide_gens_sync(g));
        tide_gens_get_info(g, &in);
        if (in.gens[0].tail_items < 100)
            fail_msg("%s: %" PRIu64 " entries in the tail after 100 synced inserts: the newest "
                     "does not defer", what, in.gens[0].tail_items);
        get_range(g, 0, 200, what);
        rotate_ok(g, NULL, what);
        get_range(g, 0, 200, what);
        OK(tide_gens_close(g));
        tide_io_sim_destroy(sim);
    }
    tide_log_set_level(TIDE_LOG_INFO);
}

/* A fault in a phase A of generation 1 leaves it BROKEN, with items 0..50
 * acknowledged in its tail. A rotation dropping nothing (G=3) still moves
 * writes to generation 2; 1's tail stays readable, and 2 starts with its
 * index off, so the tails together hold one budget at most; the rotation
 * that drops 1 makes a newest that defers again. */
static tide_gens *broken_newest(tide_io_sim **out, uint64_t *k_used)
{
    tide_log_set_sink(th_log_discard_sink, NULL);
    for (uint64_t k = 1; k <= 12; k++) {
        tide_io_sim *sim = sim_new();
        tide_gens_opts o;
        lag_opts(&o, 3, tide_io_sim_io(sim));
        tide_gens *g = open_ok(SD, &o, "broken newest");
        put_range(g, 0, 50);
        OK(tide_gens_sync(g));
        put_range(g, 50, 100);
        OK(tide_io_sim_fail_at(sim, k, TIDE_IO_SIM_EIO, 0));
        int rc = tide_gens_sync(g);
        OK(tide_io_sim_fail_at(sim, 0, TIDE_IO_SIM_NONE, 0));
        if (rc && tide_gens_sync(g) != 0) {   /* no retry commits it: broken */
            tide_log_set_sink(NULL, NULL);
            *out = sim;
            *k_used = k;
            return g;
        }
        quiet_close(g);
        tide_io_sim_destroy(sim);
    }
    tide_log_set_sink(NULL, NULL);
    fail_msg("no fault in the first 12 calls of a phase A left the store broken");
    return NULL;
}

static void a_broken_newest_with_a_tail_does_not_block_a_rotation_dropping_nothing(void **state)
{
    tide_io_sim *sim = NULL;
    tide_gens_info in;
    tide_store_info si;
    uint64_t k = 0, gen = 0;
    (void)state;

    tide_gens *g = broken_newest(&sim, &k);
    print_message("  a fault at call %" PRIu64 " of the phase A broke generation 1\n", k);
    tide_gens_get_info(g, &in);
    uint64_t tail1 = in.gens[0].tail_items;
    if (tail1 == 0) fail_msg("the broken generation holds no tail: nothing to test");
    tide_log_set_level(TIDE_LOG_ERROR);
    rotate_ok(g, NULL, "rotation off a broken newest");
    expect_u64(tide_gens_newest_id(g), 2, "writes move to generation 2");
    tide_gens_get_info(g, &in);
    uint64_t dat2 = in.gens[0].dat_file_bytes;
    for (uint64_t i = 100; i < 400; i++) {
        put(g, i, 0, &gen);
        expect_u64(gen, 2, "the insert's generation");
    }
    /* tide_gens_sync syncs every open generation: generation 2's commit
     * is made, and the broken 1's failed batch (50..100) still says EIO,
     * as before the rotation. */
    expect_error(tide_gens_sync(g), TIDE_EIO, "the sync (generation 1 broken)");
    tide_gens_get_info(g, &in);
    if (in.gens[0].dat_file_bytes <= dat2) fail_msg("generation 2 committed nothing");
    get_range(g, 0, 50, "acknowledged in the broken generation's tail");
    get_range(g, 100, 400, "committed in generation 2");
    expect_u64(in.gens[1].tail_items, tail1, "the broken generation's tail stays in memory");
    expect_u64(in.gens[0].tail_items, 0, "generation 2 does not defer while 1 holds a tail");
    tide_gens_store_info(g, &si);
    if (si.tail_bytes > LAG) fail_msg("the tails hold %" PRIu64 " bytes, over the one budget %u", si.tail_bytes, LAG);
    rotate_ok(g, NULL, "to 3, 1 still kept");
    put_range(g, 400, 450);
    expect_error(tide_gens_sync(g), TIDE_EIO, "the sync (generation 1 broken, still kept)");
    tide_gens_get_info(g, &in);
    expect_u64(in.gens[0].tail_items, 0, "generation 3 does not defer while 1 holds a tail");
    rotate_ok(g, NULL, "to 4, dropping the broken 1");
    tide_log_set_level(TIDE_LOG_INFO);
    put_range(g, 450, 500);
    OK(tide_gens_sync(g));
    tide_gens_get_info(g, &in);
    expect_u64(in.gens[0].tail_items, 50, "generation 4 defers again");
    tails_of(g, "after the broken one is dropped");
    get_range(g, 100, 500, "every acknowledged object in retention");
    OK(tide_gens_close(g));
    tide_io_sim_destroy(sim);
}

#define T(f) cmocka_unit_test_setup_teardown(f, th_scratch_setup, th_scratch_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(without_online_delete_the_handle_is_one_plain_store),
        T(online_delete_on_an_empty_directory_makes_generation_one),
        T(adopting_a_plain_store_moves_its_files_and_keeps_every_key),
        T(every_nudb_fixture_is_adopted_and_every_key_reads),
        T(a_put_of_a_key_an_older_generation_holds_is_refused_and_copies_it_forward),
        T(a_fetch_looks_newest_first_and_copies_an_older_hit_forward),
        T(with_g_generations_an_object_of_span_s_reads_through_span_s_plus_g_minus_1),
        T(touched_objects_live_on_and_a_dropped_generation_cannot_be_touched),
        T(keep_copies_an_older_object_forward_once),
        T(a_rotation_reports_what_it_made_dropped_and_deleted),
        T(a_lowered_keep_drops_every_generation_beyond_it_at_the_next_rotation),
        T(an_unnamed_generation_directory_is_removed_at_open),
        T(a_named_generation_missing_or_damaged_refuses_the_open_changing_nothing),
        T(a_manifest_beside_a_plain_stores_files_is_refused_with_what_to_do),
        T(a_manifest_is_opened_as_generations_even_with_online_delete_off),
        T(inspect_lists_generations_and_unnamed_directories_without_changing_anything),
        T(a_read_only_handle_reads_every_generation_and_changes_nothing),
        T(a_second_handle_on_the_same_directory_is_refused_as_busy),
        cmocka_unit_test(a_crash_at_any_call_of_a_rotation_opens_with_every_object_in_retention),
        cmocka_unit_test(a_rewrite_after_a_double_fault_keeps_the_dropped_one_hidden_until_a_rotation),
        cmocka_unit_test(the_readable_epoch_moves_when_a_failed_rotation_shows_a_generation_again),
        cmocka_unit_test(a_copy_between_the_two_syncs_is_durable_before_the_manifest),
        cmocka_unit_test(a_fault_at_any_call_of_a_rotation_leaves_a_working_handle),
        cmocka_unit_test(a_crash_at_any_call_of_an_adoption_or_creation_resumes_to_a_working_store),
        cmocka_unit_test(a_file_in_both_places_after_an_interrupted_adoption_is_resolved_or_refused),
        cmocka_unit_test(a_failed_copy_forward_is_counted_and_the_fetch_still_succeeds),
        cmocka_unit_test(a_rename_across_directories_on_io_sim_never_loses_the_file),
        cmocka_unit_test(a_crash_at_any_call_of_a_dropping_rotation_keeps_every_copy_made_before_it),
        cmocka_unit_test(a_failed_dropping_rotation_shows_the_hidden_generation_again),
        cmocka_unit_test(a_manifest_whose_undo_failed_is_written_again_before_any_directory_goes),
        T(generation_directories_without_a_manifest_are_refused_changing_nothing),
        T(keep_zero_is_the_manifests_and_a_lower_keep_is_warned_at_open),
        cmocka_unit_test(an_interrupt_stops_a_long_drop_and_open_removes_the_rest),
        T(a_drop_under_a_plain_reader_only_unlinks_and_the_reader_still_fetches),
        T(a_drop_under_an_attached_reader_only_unlinks_and_the_reader_still_fetches),
        T(a_reader_opening_a_generation_under_its_cut_is_told_a_rotation_deletes_it),
        T(after_a_rotation_only_the_newest_generation_holds_a_tail),
        T(the_tails_of_all_generations_never_pass_one_budget_across_rotations),
        cmocka_unit_test(dropping_a_generation_writes_nothing_to_its_key_file),
        cmocka_unit_test(a_crash_at_any_call_of_a_rotation_with_a_tail_recovers_every_acknowledged_key),
        cmocka_unit_test(a_failed_rotation_leaves_the_newest_deferring_again),
        cmocka_unit_test(a_broken_newest_with_a_tail_does_not_block_a_rotation_dropping_nothing),
    };
    return th_run_group("test_gens", tests, NULL, NULL, NULL);
}
