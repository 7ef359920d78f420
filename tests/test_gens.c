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

#include "gen/gens.h"
#include "io/io_sim.h"
#include "tide/store.h"
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
    o->delete_chunk_bytes = 4096;
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
    OK(tide_store_verify(q, NULL, &vr));
    OK(th_store_open(&s, q));
    expect_items(s, 0, 400, KS, VMIN, VMAX, "generation 1 opened alone");
    expect_closed(&s, "generation 1 alone");
    g = open_ok(t->dir, &o, "reopen");
    get_range(g, 0, 400, "reopened");
    OK(tide_gens_close(g));
}

static void a_nudb_fixture_is_adopted_and_every_key_reads(void **state)
{
    th_scratch *t = *state;
    const th_fixture *f = th_fixture_find("b4096-k32");
    char dir[4096];
    tide_gens_opts o;
    assert_non_null(f);
    (void)t;
    if (th_copy_fixture(f->name, dir, sizeof dir) != 0) fail_msg("copy fixture %s", f->name);
    gopts(&o, 1, 2, NULL);
    tide_gens *g = open_ok(dir, &o, "fixture adopt");
    for (uint64_t i = 0; i < f->present; i++) {
        uint8_t k[64], v[70000];
        size_t want = th_len(i, f->vmin, f->vmax), len = 0;
        void *out = NULL;
        uint64_t gen = 0;
        th_key(i, f->key_size, k);
        th_value(i, want, v);
        OK(tide_gens_fetch(g, k, &out, &len, &gen));
        if (len != want || memcmp(out, v, len) != 0 || gen != 1)
            fail_msg("fixture item %" PRIu64 ": wrong bytes or generation %" PRIu64, i, gen);
        free(out);
    }
    OK(tide_gens_close(g));
    th_rmrf(dir);
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

typedef struct trace_log { char text[1024]; } trace_log;

static void trace_step(void *arg, const char *step)
{
    trace_log *l = arg;
    size_t n = strlen(l->text);
    if (strcmp(step, "delete-step") == 0) return;
    snprintf(l->text + n, sizeof l->text - n, "%s%s", n ? "," : "", step);
}

static void a_rotation_reports_what_it_made_dropped_and_deleted(void **state)
{
    th_scratch *t = *state;
    tide_gens_opts o;
    tide_gens_rotate_report r;
    tide_store_info si0, si1;
    trace_log tl = { "" };
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
    put_range(g, 300, 350);
    OK(tide_gens_sync(g));
    tide_gens_store_info(g, &si0);
    join(g1, t->dir, "gen-000000000001");
    uint64_t bytes = (uint64_t)th_file_size(join(p, g1, "nudb.dat")) +
                     (uint64_t)th_file_size(join(p, g1, "nudb.key"));
    uint64_t dat = (uint64_t)th_file_size(join(p, g1, "nudb.dat"));
    tl.text[0] = '\0';
    rotate_ok(g, &r, "second");
    expect_u64(r.new_id, 3, "new id");
    expect_u64(r.dropped, 1, "one dropped");
    expect_u64(r.dropped_ids[0], 1, "generation 1 dropped");
    expect_u64(r.deleted_bytes, bytes, "bytes deleted: generation 1's files");
    expect_u64(r.delete_steps, (dat + 4095) / 4096, "one cut per 4096 bytes of nudb.dat");
    expect_u64(r.objects_in_previous, 50, "objects of generation 2");
    expect_str(tl.text, "create,manifest,switch,drop,done", "steps of a dropping rotation");
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

#define T(f) cmocka_unit_test_setup_teardown(f, th_scratch_setup, th_scratch_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(without_online_delete_the_handle_is_one_plain_store),
        T(online_delete_on_an_empty_directory_makes_generation_one),
        T(adopting_a_plain_store_moves_its_files_and_keeps_every_key),
        T(a_nudb_fixture_is_adopted_and_every_key_reads),
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
    };
    return th_run_group("test_gens", tests, NULL, NULL, NULL);
}
