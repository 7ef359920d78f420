/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_rotate.c: `tide rotate DIR`, one rotation of an idle node's
 * generations, offline.
 *
 * The same rotation a node makes (gen/gens.h's tide_gens_rotate): a new
 * empty generation in front, the manifest replaced durably before anything
 * else changes, and the oldest generation dropped once `keep` are held.
 * Offline there is nothing to copy forward but what the rotation itself
 * does. The handle is opened read-write, which takes every generation's
 * lock and refuses while any process has one of their files open: a node
 * running on DIR makes this fail with the store's TIDE_EBUSY message and
 * nothing changed (POST /v1/admin/rotate is the way on a live node).
 *
 * A plain store is refused unless --adopt: adopting moves its three files
 * into gen-000000000001/ (no copy) and writes a manifest, which a tided
 * without --online-delete still opens as generations; that is a change of
 * the directory's layout the operator must ask for by name.
 *
 * Invariants:
 *   1. Status 2 means nothing was opened: options, the manifest probe and
 *      the plain-store refusal all come before tide_gens_open.
 *   2. `keep` is the manifest's own unless --generations says otherwise
 *      (tide_gens_open's default of 2 would otherwise shrink a ring of 4
 *      and drop two generations unasked).
 *   3. The handle is closed on every path after a successful open.
 *
 * Never: rotate a plain store without --adopt, or create a store where
 * there is none (create_if_missing is 0).
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "gen/gens.h"
#include "tide/error.h"
#include "store/full.h"
#include "util/err.h"

static const char help_rotate[] =
"NAME\n"
"    tide rotate - rotate an idle node's generations, offline\n"
"\n"
"SYNOPSIS\n"
"    tide rotate DIR [--generations N] [--adopt] [--json]\n"
"\n"
"DESCRIPTION\n"
"    Makes the rotation a node with online delete makes: creates the next\n"
"    generation (an empty store in its own directory, synced), writes the\n"
"    manifest naming it first (a temporary file, synced, renamed over\n"
"    tide.generations, the directory synced) and only then, when the\n"
"    manifest already held N generations, deletes the oldest one whole.\n"
"    A crash at any point leaves a manifest whose generations are all\n"
"    there; what it does not name is removed at the next open.\n"
"\n"
"    Objects last written or read in the generation dropped are gone.\n"
"    With N generations an object last written (or read through the\n"
"    node: 'tide get' copies nothing forward) before a rotation survives\n"
"    N-1 rotations, that one included, and is gone after the Nth: with\n"
"    N = 2, one rotation keeps it and the second drops it\n"
"    (docs/ROTATION.md has the timeline).\n"
"\n"
"    DIR must be idle: the rotation opens every generation for writing,\n"
"    and is refused with 'store is busy' while a node (or any process)\n"
"    has one open; nothing is changed then. On a live node use its\n"
"    POST /v1/admin/rotate instead. Like a node's start, the open first\n"
"    removes the gen-* directories the manifest does not name (a crashed\n"
"    rotation's leftovers; 'tide generations DIR' lists them).\n"
"\n"
"    A plain store (no tide.generations in DIR) is refused unless --adopt\n"
"    is given: then its nudb.dat, nudb.key and nudb.log are moved (not\n"
"    copied) into gen-000000000001/, the manifest is written, and the\n"
"    rotation follows. From then on DIR opens as generations, also in a\n"
"    tided started without --online-delete.\n"
"\n"
"    Prints the new generation's id, the ids dropped, the bytes deleted\n"
"    from disk and the time of each phase (create, sync, manifest,\n"
"    switch, drop).\n"
"\n"
"OPTIONS\n"
"    --generations N  keep N generations (2 to 64). Default: the\n"
"                     manifest's own (2 when adopting). A value below the\n"
"                     manifest's drops every generation beyond N at once.\n"
"    --adopt          turn online delete on for a plain store (see above).\n"
"                     Without a plain store it changes nothing.\n"
"    --json           print the report as one JSON object: path, adopted,\n"
"                     new_id, new_dir, dropped_ids, deleted_bytes,\n"
"                     held_bytes (unlinked, not cut: a reader had the\n"
"                     files open; freed when it closes), delete_steps,\n"
"                     objects_in_previous, rotations, keep,\n"
"                     create_ns, sync_ns, manifest_ns, switch_ns, drop_ns\n"
"                     (integers; sync_ns is 0 when nothing was dropped).\n"
"    -h, --help       print this text\n"
"\n"
"EXIT STATUS\n"
"    0 rotated; 1 no store, a plain store without --adopt, store busy\n"
"    (a node has it open), a damaged manifest or generation, I/O error\n"
"    (nothing named by the manifest is changed); 2 usage error.\n"
"\n"
"EXAMPLES\n"
"    systemctl stop tided && tide rotate /var/lib/tide/db\n"
"    tide rotate db --adopt --generations 4\n"
"    tide rotate --json db | jq .deleted_bytes\n";

typedef struct rotate_opts {
    unsigned keep;              /* 0: the manifest's */
    int adopt, json;
} rotate_opts;

static const struct option options[] = {
    { "generations", required_argument, NULL, 'g' },
    { "adopt",       no_argument,       NULL, 'a' },
    { "json",        no_argument,       NULL, 'j' },
    { NULL, 0, NULL, 0 },
};

static int option(void *arg, int id, const char *val)
{
    rotate_opts *o = arg;
    uint64_t v;

    if (id == 'a') o->adopt = 1;
    else if (id == 'j') o->json = 1;
    else if (cli_parse_u64(val, TIDE_GEN_MIN, TIDE_GEN_MAX, &v) != 0)
        return cli_usage("rotate", "--generations '%s' is not a whole number from %u to %u", val,
                         TIDE_GEN_MIN, TIDE_GEN_MAX);
    else o->keep = (unsigned)v;
    return CLI_OK;
}

static double ms(uint64_t ns) { return (double)ns / 1e6; }

static void report_text(const char *path, const tide_gens_rotate_report *r, unsigned keep,
                        int adopted)
{
    char dir[TIDE_GEN_DIR_CAP], b[32];

    tide_gen_dir_name(r->new_id, dir, sizeof dir);
    if (adopted)
        printf("adopted       %s: the plain store is generation 1 (gen-000000000001)\n", path);
    printf("rotated       %s: generation %llu (%s) takes the writes\n", path,
           (unsigned long long)r->new_id, dir);
    printf("dropped       ");
    if (r->dropped == 0) printf("none (fewer than %u generations were held)", keep);
    for (unsigned i = 0; i < r->dropped; i++) {
        tide_gen_dir_name(r->dropped_ids[i], dir, sizeof dir);
        printf("%sgeneration %llu (%s)", i ? ", " : "", (unsigned long long)r->dropped_ids[i], dir);
    }
    printf("\n");
    printf("deleted       %llu bytes (%s) in %u truncate step%s\n",
           (unsigned long long)r->deleted_bytes, cli_human(r->deleted_bytes, b, sizeof b),
           r->delete_steps, r->delete_steps == 1 ? "" : "s");
    if (r->held_bytes)
        printf("held          %llu bytes (%s) unlinked, not cut: a reader has them open; the "
               "disk frees them when it closes\n", (unsigned long long)r->held_bytes,
               cli_human(r->held_bytes, b, sizeof b));
    printf("objects       %llu written into the generation that was newest\n",
           (unsigned long long)r->objects_in_previous);
    printf("rotations     %llu (keep %u)\n", (unsigned long long)r->rotations, keep);
    printf("phases        create %.3f ms, sync %.3f ms, manifest %.3f ms, switch %.3f ms, drop %.3f ms\n",
           ms(r->create_ns), ms(r->sync_ns), ms(r->manifest_ns), ms(r->switch_ns), ms(r->drop_ns));
}

static int report_json(const char *path, const tide_gens_rotate_report *r, unsigned keep,
                       int adopted)
{
    json_t *o = json_object(), *dropped = json_array();
    char dir[TIDE_GEN_DIR_CAP];

    tide_gen_dir_name(r->new_id, dir, sizeof dir);
    json_object_set_new(o, "path", json_string(path));
    json_object_set_new(o, "adopted", json_boolean(adopted));
    json_object_set_new(o, "new_id", json_integer((json_int_t)r->new_id));
    json_object_set_new(o, "new_dir", json_string(dir));
    for (unsigned i = 0; i < r->dropped; i++)
        json_array_append_new(dropped, json_integer((json_int_t)r->dropped_ids[i]));
    json_object_set_new(o, "dropped_ids", dropped);
    json_object_set_new(o, "deleted_bytes", json_integer((json_int_t)r->deleted_bytes));
    json_object_set_new(o, "held_bytes", json_integer((json_int_t)r->held_bytes));
    json_object_set_new(o, "delete_steps", json_integer(r->delete_steps));
    json_object_set_new(o, "objects_in_previous", json_integer((json_int_t)r->objects_in_previous));
    json_object_set_new(o, "rotations", json_integer((json_int_t)r->rotations));
    json_object_set_new(o, "keep", json_integer(keep));
    json_object_set_new(o, "create_ns", json_integer((json_int_t)r->create_ns));
    json_object_set_new(o, "sync_ns", json_integer((json_int_t)r->sync_ns));
    json_object_set_new(o, "manifest_ns", json_integer((json_int_t)r->manifest_ns));
    json_object_set_new(o, "switch_ns", json_integer((json_int_t)r->switch_ns));
    json_object_set_new(o, "drop_ns", json_integer((json_int_t)r->drop_ns));
    return cli_json_print("rotate", o);
}

/* What DIR holds, before anything is opened (invariant 1): fills o->keep
 * and *adopting. CLI_OK, or the status of a refusal (printed). */
static int probe(const char *path, rotate_opts *o, int *adopting)
{
    tide_gen_manifest m;
    tide_store_info in;
    int rc = cli_gens_manifest(path, &m);

    *adopting = 0;
    if (rc == 0) {
        if (o->keep == 0) o->keep = m.keep;
        return CLI_OK;
    }
    if (rc != TIDE_ENOENT) return cli_fail_store("rotate", rc);
    rc = tide_store_inspect(path, NULL, &in);
    if (rc == TIDE_ENOENT)
        return cli_error("rotate", "%s: no store here: neither %s nor a plain store's nudb.dat and "
                         "nudb.key (nothing was changed)", path, TIDE_GEN_FILE);
    if (rc) return cli_fail_store("rotate", rc);
    if (!o->adopt)
        return cli_error("rotate", "%s is a plain store: online delete has never been turned on "
                         "here, so there are no generations to rotate; nothing was changed. Pass "
                         "--adopt to make this store generation 1 (its files move into "
                         "gen-000000000001/, no copy) and rotate; from then on it opens as "
                         "generations", path);
    if (o->keep == 0) o->keep = 2;
    *adopting = 1;
    return CLI_OK;
}

/* One store directory: its lock held (a node), or its files open in
 * another process (a NuDB writer takes no lock). CLI_OK, or the refusal. */
static int refuse_held(const char *path, const char *dir, const char *what)
{
    tide_store_holder h;
    size_t n = 0;

    if (cli_store_is_held(dir, 0))
        return cli_error("rotate", "%s: store is busy: %s is open in another process (a node?); "
                         "nothing was changed; stop the node first, or rotate it live with POST "
                         "/v1/admin/rotate", path, what);
    if (tide_store_holders(dir, NULL, &h, 1, &n) == 0 && n > 0)
        return cli_error("rotate", "%s: store is busy: %s: %s is open in process %d (%s)%s; "
                         "nothing was changed; stop it first", path, what, h.file, h.pid, h.comm,
                         n > 1 ? " and others" : "");
    return CLI_OK;
}

/* The probe before the open: a generation another process holds (a node
 * running on DIR) makes the open fail; say so by name, as the store's
 * busy message does, before anything is touched. */
static int refuse_busy(const char *path)
{
    tide_gen_manifest m;
    char dir[4200], what[96];
    int ret;

    if (cli_gens_manifest(path, &m) != 0)         /* adopting: the plain store itself */
        return refuse_held(path, path, "the plain store");
    for (unsigned i = 0; i < m.count; i++) {
        if (cli_gen_path("rotate", path, m.gens[i].dir, dir, sizeof dir)) return CLI_FAIL;
        snprintf(what, sizeof what, "generation %llu (%s)", (unsigned long long)m.gens[i].id,
                 m.gens[i].dir);
        ret = refuse_held(path, dir, what);
        if (ret) return ret;
    }
    return CLI_OK;
}

static int run(int argc, char **argv)
{
    rotate_opts o = { 0, 0, 0 };
    tide_gens_rotate_report r;
    tide_gens_opts go;
    tide_gens *g = NULL;
    cli_args a;
    int rc, ret, adopting;

    if (cli_parse(&cli_verb_rotate, argc, argv, &o, &a, &ret)) return ret;
    ret = probe(a.path, &o, &adopting);
    if (ret == CLI_OK) ret = refuse_busy(a.path);
    if (ret) return ret;
    tide_gens_opts_init(&go);
    go.online_delete = 1;        /* probe refused a plain store without --adopt; with a
                                    manifest, 0 would only add open's warning */
    go.keep = o.keep;
    go.create_if_missing = 0;
    rc = tide_gens_open(&g, a.path, &go);
    if (rc == TIDE_EBUSY) {
        cli_fail_store("rotate", rc);
        fprintf(stderr, "tide rotate: %s: nothing was changed; stop the node first, or rotate "
                "it live with POST /v1/admin/rotate\n", a.path);
        return CLI_FAIL;
    }
    if (rc) return cli_fail_store("rotate", rc);
    memset(&r, 0, sizeof r);
    rc = tide_gens_rotate(g, &r);
    if (rc) {
        ret = cli_fail_store("rotate", rc);
        tide_gens_close(g);
        return ret;
    }
    rc = tide_gens_close(g);
    if (rc) {
        /* The rotation is on disk (its manifest was written first); only the
         * close of a generation failed. */
        tide_err_prefix(rc, "%s: rotated to generation %llu, then closing failed", a.path,
                        (unsigned long long)r.new_id);
        return cli_fail_store("rotate", rc);
    }
    if (o.json) return report_json(a.path, &r, o.keep, adopting);
    report_text(a.path, &r, o.keep, adopting);
    return CLI_OK;
}

const cli_verb cli_verb_rotate = {
    .name = "rotate", .usage = "rotate DIR", .summary = "rotate an idle node's generations offline",
    .help = help_rotate, .run = run,
    .options = options, .option = option, .args = CLI_ARGS_PATH, .store = 1,
};
