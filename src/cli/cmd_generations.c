/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_generations.c: `tide generations DIR`, a node's generations on disk.
 *
 * With online delete on a node's directory holds a manifest,
 * tide.generations, naming complete stores in gen-NNNNNNNNNNNN/ newest
 * first (gen/gens.h has the layout). This lists what tide_gens_inspect
 * reads: the manifest's figures (keep, rotations, the last rotation's time
 * in ISO-8601 UTC and in microseconds), each generation newest first with
 * its directory, whether it takes the writes, its three file sizes, the
 * disk bytes of them all, and the gen-* directories the manifest does not
 * name: what tided removes at its next start. It takes no writer's lock
 * and opens nothing for writing, so it is safe on a live node (its one
 * lock, the readers' shared one on each generation's tide.live, keeps a
 * rotation from cutting a generation it reads).
 *
 * A plain store (no manifest) is not an error: the answer is that online
 * delete has never been turned on there. A directory with neither is.
 *
 * Invariants:
 *   1. The JSON object has the same members in the same order whatever
 *      DIR holds (null where there is nothing: "generations" is null for a
 *      plain store); its counts and sizes are JSON integers.
 *   2. Exit CLI_OK only with the listing (or the plain-store answer)
 *      printed; a generation that cannot be inspected is listed with its
 *      problem and makes the exit status CLI_FAIL.
 *
 * Never: open a generation (that would take a writer's lock and could
 * recover it) or remove an unnamed directory (that is tided's, at its
 * start).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "gen/gens.h"
#include "tide/error.h"
#include "store/full.h"

static const char help_generations[] =
"NAME\n"
"    tide generations - list a node's generations (online delete)\n"
"\n"
"SYNOPSIS\n"
"    tide generations DIR [--json]\n"
"\n"
"DESCRIPTION\n"
"    With online delete on, a node's data directory DIR holds a manifest,\n"
"    tide.generations, and one complete store per generation in\n"
"    gen-NNNNNNNNNNNN/ (the id, zero-padded to 12 digits). The newest\n"
"    generation takes the writes; reads look newest first; each rotation\n"
"    puts a new empty generation in front and, once the manifest holds\n"
"    'keep' of them, drops the oldest whole (docs/ROTATION.md).\n"
"\n"
"    This prints the manifest (keep, the rotations made since online\n"
"    delete was turned on, the last rotation's time as ISO-8601 UTC and in\n"
"    microseconds since the Unix epoch), then each generation newest first:\n"
"    its id, its directory, writable (the newest) or read-only, and the\n"
"    sizes of its nudb.dat, nudb.key and nudb.log; then the disk bytes of\n"
"    all of them, and every gen-* directory the manifest does not name:\n"
"    a rotation's leftover that tided removes at its next start.\n"
"\n"
"    The generations listed are those of one manifest: when a node's\n"
"    rotation changes it while they are read, they are read again, so a\n"
"    generation a rotation drops meanwhile is never listed as missing.\n"
"    (A rotation under way may show its new directory, or the one it is\n"
"    deleting, among those the manifest does not name.)\n"
"\n"
"    It reads the manifest and the store headers only: no writer's lock,\n"
"    no recovery, nothing written, so it is safe while a node runs on DIR.\n"
"    While it reads a generation's headers it holds the readers' shared\n"
"    lock on its tide.live, so a rotation never cuts them under it.\n"
"\n"
"    A plain store (nudb.dat and nudb.key in DIR itself, no manifest) is\n"
"    answered 'DIR is a plain store: online delete has never been turned\n"
"    on here', exit 0.\n"
"\n"
"OPTIONS\n"
"    --json       print one JSON object: path, plain_store (true or false),\n"
"                 keep, rotations, last_rotation_unix_us, last_rotation\n"
"                 (ISO-8601, null for never), generations (newest first,\n"
"                 each with id, dir, writable, dat_file_bytes,\n"
"                 key_file_bytes, log_file_bytes, bytes, problem; null for\n"
"                 a plain store), disk_bytes, unnamed (the directory names)\n"
"                 and unnamed_count. Sizes and counts are integers; the\n"
"                 members are the same for every DIR.\n"
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 listed (or DIR is a plain store); 1 the manifest is damaged or a\n"
"    generation cannot be read (it is listed with its problem); 2 no\n"
"    store at DIR (neither a manifest nor a plain store), usage error.\n"
"\n"
"EXAMPLES\n"
"    tide generations /var/lib/tide/db\n"
"    tide generations --json db | jq '.generations[0].dir, .disk_bytes'\n";

static const struct option options[] = {
    { "json", no_argument, NULL, 'j' },
    { NULL, 0, NULL, 0 },
};

static uint64_t gen_bytes(const tide_store_info *in)
{
    return in->dat_file_bytes + in->key_file_bytes + in->log_file_bytes;
}

static json_t *json_u64(uint64_t v) { return json_integer((json_int_t)v); }

/* The object of invariant 1; l NULL for a plain store. */
static json_t *listing_json(const char *path, const tide_gens_listing *l)
{
    const tide_gen_manifest *m = l ? &l->manifest : NULL;
    json_t *o = json_object(), *gens = l ? json_array() : json_null(), *unnamed = json_array();
    char when[40];

    json_object_set_new(o, "path", json_string(path));
    json_object_set_new(o, "plain_store", json_boolean(l == NULL));
    json_object_set_new(o, "keep", m ? json_integer(m->keep) : json_null());
    json_object_set_new(o, "rotations", m ? json_u64(m->rotations) : json_null());
    json_object_set_new(o, "last_rotation_unix_us", m ? json_u64(m->last_rotation_us) : json_null());
    json_object_set_new(o, "last_rotation", m && m->last_rotation_us
                        ? json_string(cli_iso8601_us(m->last_rotation_us, when, sizeof when))
                        : json_null());
    for (unsigned i = 0; m && i < m->count; i++) {
        const tide_store_info *in = &l->gens[i].info;
        json_t *g = json_object();
        json_object_set_new(g, "id", json_u64(m->gens[i].id));
        json_object_set_new(g, "dir", json_string(m->gens[i].dir));
        json_object_set_new(g, "writable", json_boolean(i == 0));
        json_object_set_new(g, "dat_file_bytes", json_u64(in->dat_file_bytes));
        json_object_set_new(g, "key_file_bytes", json_u64(in->key_file_bytes));
        json_object_set_new(g, "log_file_bytes", json_u64(in->log_file_bytes));
        json_object_set_new(g, "bytes", json_u64(gen_bytes(in)));
        json_object_set_new(g, "problem", l->gens[i].problem[0] ? json_string(l->gens[i].problem)
                                                                : json_null());
        json_array_append_new(gens, g);
    }
    json_object_set_new(o, "generations", gens);
    json_object_set_new(o, "disk_bytes", l ? json_u64(l->disk_bytes) : json_null());
    for (unsigned i = 0; l && i < l->unnamed && i < 8; i++)
        json_array_append_new(unnamed, json_string(l->unnamed_dirs[i]));
    json_object_set_new(o, "unnamed", unnamed);
    json_object_set_new(o, "unnamed_count", json_integer(l ? l->unnamed : 0));
    return o;
}

static void listing_text(const char *path, const tide_gens_listing *l)
{
    const tide_gen_manifest *m = &l->manifest;
    char when[40], b[32];

    printf("directory     %s\n", path);
    printf("manifest      %s/%s: keep %u generations\n", path, TIDE_GEN_FILE, m->keep);
    printf("rotations     %llu\n", (unsigned long long)m->rotations);
    if (m->last_rotation_us)
        printf("last rotation %s (%llu us since the Unix epoch)\n",
               cli_iso8601_us(m->last_rotation_us, when, sizeof when),
               (unsigned long long)m->last_rotation_us);
    else
        printf("last rotation never\n");
    printf("generations   %u, newest first:\n", m->count);
    for (unsigned i = 0; i < m->count; i++) {
        const tide_store_info *in = &l->gens[i].info;
        printf("  %-6llu %s  %-9s  nudb.dat %llu  nudb.key %llu  nudb.log %llu  (%s)\n",
               (unsigned long long)m->gens[i].id, m->gens[i].dir, i == 0 ? "writable" : "read-only",
               (unsigned long long)in->dat_file_bytes, (unsigned long long)in->key_file_bytes,
               (unsigned long long)in->log_file_bytes, cli_human(gen_bytes(in), b, sizeof b));
        if (l->gens[i].problem[0]) printf("         PROBLEM: %s\n", l->gens[i].problem);
    }
    printf("disk          %llu bytes (%s) in the named generations\n",
           (unsigned long long)l->disk_bytes, cli_human(l->disk_bytes, b, sizeof b));
    if (l->unnamed == 0) {
        printf("unnamed       none\n");
        return;
    }
    printf("unnamed       %u gen-* director%s the manifest does not name (tided removes %s at "
           "its next start):\n", l->unnamed, l->unnamed == 1 ? "y" : "ies",
           l->unnamed == 1 ? "it" : "them");
    for (unsigned i = 0; i < l->unnamed && i < 8; i++) printf("  %s\n", l->unnamed_dirs[i]);
    if (l->unnamed > 8) printf("  and %u more\n", l->unnamed - 8);
}

/* No manifest: a plain store, or nothing at all. */
static int plain_or_nothing(const char *path, int json)
{
    tide_store_info in;
    int rc = tide_store_inspect(path, NULL, &in);

    if (rc == TIDE_ENOENT) {
        cli_error("generations", "%s: no store here: neither %s nor a plain store's nudb.dat "
                  "and nudb.key", path, TIDE_GEN_FILE);
        return CLI_USAGE;
    }
    if (rc) return cli_fail_store("generations", rc);
    if (json) return cli_json_print("generations", listing_json(path, NULL));
    printf("%s is a plain store: online delete has never been turned on here\n", path);
    return CLI_OK;
}

static int run(int argc, char **argv)
{
    tide_gens_listing *l = NULL;
    cli_args a;
    int rc, json = 0, ret;

    if (cli_parse(&cli_verb_generations, argc, argv, &json, &a, &rc))
        return rc == CLI_FAIL ? CLI_USAGE : rc;     /* no directory: no store (EXIT STATUS) */
    l = calloc(1, sizeof *l);
    if (l == NULL) return cli_error("generations", "out of memory");
    rc = tide_gens_inspect(a.path, NULL, l);
    if (rc == TIDE_ENOENT) {
        ret = plain_or_nothing(a.path, json);
        goto out;
    }
    if (rc) {
        ret = cli_fail_store("generations", rc);
        goto out;
    }
    ret = json ? cli_json_print("generations", listing_json(a.path, l)) : (listing_text(a.path, l), CLI_OK);
    for (unsigned i = 0; ret == CLI_OK && i < l->manifest.count; i++)
        if (l->gens[i].problem[0])
            ret = cli_error("generations", "%s/%s: %s", a.path, l->manifest.gens[i].dir,
                            l->gens[i].problem);
out:
    free(l);
    return ret;
}

const cli_verb cli_verb_generations = {
    .name = "generations", .usage = "generations DIR",
    .summary = "list a node's generations (online delete)",
    .help = help_generations, .run = run,
    .options = options, .option = cli_option_flag, .args = CLI_ARGS_PATH, .store = 1,
};
