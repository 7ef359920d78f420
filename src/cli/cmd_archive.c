/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_archive.c: `tide archive ls|verify|get|restore`, the operator's
 * tools over a node's archive in a Ceph RADOS pool (src/archive/tools.h
 * does the work; this parses, prints and picks the exit status).
 *
 * Each sub-verb has its own descriptor (options, manual, arguments) and
 * shares the connection's options: --conf, --pool, --prefix (when not
 * given, tided's own default of archive_prefix: the host name up to its
 * first dot, so that on a node's machine the tools find its archive),
 * --user and --timeout. Every failure to reach the cluster is the library's
 * TIDE_EUNAVAIL message, which says what to check; no sub-verb waits
 * longer than --timeout for any one call.
 *
 * Invariants:
 *   1. The exit status is CLI_OK only when the sub-verb did all it was
 *      asked: ls listed a manifest, verify found no problem, get wrote
 *      the value, restore wrote tide.generations.
 *   2. restore looks at DIR before it connects: a DIR that is not empty
 *      (or not a directory) is refused with nothing changed, in the pool
 *      or on disk.
 *   3. stdout holds the result alone (the value, the listing, the JSON);
 *      problems and errors go to stderr.
 *
 * Never: write to the pool, except restore's cut of the open generation
 * (tools_restore.c says why).
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive/tools.h"
#include "cli/cli.h"
#include "gen/manifest.h"
#include "tide/error.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/hex.h"

#define ARCHIVE_COMMON_HELP \
"    --conf FILE  the Ceph configuration (ceph.conf: the monitors, the\n" \
"                 client's keyring). Default: librados' own search\n" \
"                 ($CEPH_CONF, /etc/ceph/ceph.conf)\n" \
"    --pool NAME  the pool the node archives to. Default: tide\n" \
"    --prefix NAME\n" \
"                 the node's archive prefix: every object of its archive\n" \
"                 is named PREFIX.something. Default: tided's default of\n" \
"                 archive_prefix, this machine's host name up to its first\n" \
"                 dot (node1 on node1.example.org); give it on any other\n" \
"                 machine, or for a node that sets archive_prefix\n" \
"    --user NAME  the Ceph client's id, without 'client.'. Default: admin\n" \
"    --timeout SECONDS\n" \
"                 the longest any one call waits for the cluster, 1 to\n" \
"                 3600. Default: 10. A cluster that does not answer in\n" \
"                 time is 'service unavailable' (exit 1), never a hang\n"

#define ARCHIVE_OBJECTS_HELP \
"    The archive of a node (docs/ARCHIVE.md) is a set of objects in a\n" \
"    pool, named after the node's prefix: PREFIX.manifest (JSON: which\n" \
"    generations there are, open or sealed, with the size and XXH64 of\n" \
"    every object of a sealed one), and per generation ID its nudb.dat in\n" \
"    chunks PREFIX.gen-ID.dat.N, and once sealed its nudb.key in chunks\n" \
"    PREFIX.gen-ID.key.N and a Bloom filter PREFIX.gen-ID.filter. An open\n" \
"    generation is the node's newest, whose data is uploaded as it grows;\n" \
"    a sealed one is complete and never changes.\n"

static const char help_archive[] =
"NAME\n"
"    tide archive - list, check, read and restore a node's archive\n"
"\n"
"SYNOPSIS\n"
"    tide archive ls [--json] [OPTIONS]\n"
"    tide archive verify [--deep] [--json] [OPTIONS]\n"
"    tide archive get KEYHEX [-v] [OPTIONS] > VALUE\n"
"    tide archive restore DIR [--keep N] [--json] [OPTIONS]\n"
"\n"
"DESCRIPTION\n"
ARCHIVE_OBJECTS_HELP
"\n"
"    ls lists what the prefix holds; verify checks every object against\n"
"    the manifest; get reads a key's value from the sealed generations;\n"
"    restore rebuilds a node's data directory from the archive. Each has\n"
"    its own manual: 'tide archive ls --help' and so on.\n"
"\n"
"OPTIONS\n"
ARCHIVE_COMMON_HELP
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 done; 1 the archive said no (nothing archived, a problem found, a\n"
"    key not found, the cluster did not answer); 2 usage error.\n"
"\n"
"EXAMPLES\n"
"    tide archive ls --conf /etc/ceph/ceph.conf --prefix node1\n"
"    tide archive verify --prefix node1 --deep\n"
"    tide archive restore /var/lib/tide/db --prefix node1\n";

static const char help_ls[] =
"NAME\n"
"    tide archive ls - list a node's archive\n"
"\n"
"SYNOPSIS\n"
"    tide archive ls [--json] [--conf FILE] [--pool NAME] [--prefix NAME]\n"
"                    [--user NAME] [--timeout SECONDS]\n"
"\n"
"DESCRIPTION\n"
ARCHIVE_OBJECTS_HELP
"\n"
"    ls prints the manifest (its last writer and when it wrote it, and\n"
"    the node's keep), then each generation newest first: its id, open,\n"
"    sealed or deleting, and its figures: for a sealed one its nudb.dat,\n"
"    nudb.key and filter bytes, its records, its objects and when it was\n"
"    sealed; for an open one the bytes of its data chunks there,\n"
"    contiguous from the first. Then the objects and bytes of them all,\n"
"    and every object of the prefix the manifest does not name (an\n"
"    upload's leftover, what a deletion left, another writer's), with its\n"
"    size (the first 256 by name). A sealed generation that lacks some of\n"
"    its objects is marked MISSING; 'tide archive verify' names them.\n"
"\n"
"    It reads the manifest, lists the pool's objects (librados lists no\n"
"    names by prefix: the whole pool's list is walked) and looks at the\n"
"    size of each open chunk and unnamed object. It changes nothing.\n"
"\n"
"OPTIONS\n"
"    --json       print one JSON object: pool, prefix, manifest (true or\n"
"                 false), keep, writer, updated_unix_us, updated,\n"
"                 generations (newest first, each with id, state, uid,\n"
"                 key_size, block_size, chunk_bytes, dat_bytes, key_bytes,\n"
"                 filter_bytes, records, objects, missing, sealed_unix_us,\n"
"                 sealed), objects, named_bytes, unnamed_count, unnamed\n"
"                 (oid and bytes of each listed) and unnamed_bytes\n"
ARCHIVE_COMMON_HELP
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 listed; 1 no manifest under the prefix (what objects there are is\n"
"    still listed), the cluster did not answer, the manifest is damaged;\n"
"    2 usage error.\n"
"\n"
"EXAMPLES\n"
"    tide archive ls --prefix node1\n"
"    tide archive ls --json --prefix node1 | jq '.generations[].state'\n";

static const char help_verify[] =
"NAME\n"
"    tide archive verify - check a node's archive against its manifest\n"
"\n"
"SYNOPSIS\n"
"    tide archive verify [--deep] [--json] [--progress | --no-progress]\n"
"                        [--conf FILE] [--pool NAME] [--prefix NAME]\n"
"                        [--user NAME] [--timeout SECONDS]\n"
"\n"
"DESCRIPTION\n"
"    Reads every object of every sealed generation whole (a piece of at\n"
"    most 4 MiB at a time) and checks that it is there, of the size the\n"
"    manifest says, with the XXH64 the manifest recorded when the node\n"
"    sealed it: each chunk of nudb.dat and nudb.key, and the filter. The\n"
"    headers at the start of nudb.dat and nudb.key must be NuDB's, of the\n"
"    generation's uid and key size, and nudb.key's block size the\n"
"    manifest's. For an open generation (the node's newest, still being\n"
"    uploaded) it checks that its data chunks are contiguous from the\n"
"    first (each but the last a whole chunk, none after a short or\n"
"    missing one), that each whole chunk holds the XXH64 the node's\n"
"    uploader set on it (attribute tide.xxh64), and that the first starts\n"
"    with nudb.dat's header. A generation being deleted is not checked.\n"
"\n"
"    Every problem is named by its object and the check goes on, so one\n"
"    run names every damaged object, e.g.\n"
"        tide archive: node1.gen-000000000006.dat.000003: XXH64\n"
"        0b2a... differs from the manifest's 77f1...\n"
"\n"
"    --deep then opens each sealed generation whose objects all passed as\n"
"    a read-only store on the archive and runs the store's verify on it\n"
"    ('tide help verify': every bucket, every record), which proves it a\n"
"    sound NuDB store; that reads it once more, a bucket or a record at\n"
"    a time.\n"
"\n"
"    On a terminal, progress is shown on stderr as one line (the bytes of\n"
"    the sealed generations read of all of them). Nothing is written.\n"
"\n"
"OPTIONS\n"
"    --deep       also run the store's verify on each sealed generation\n"
"    --json       print one JSON object: pool, prefix, sound, objects,\n"
"                 bytes, problems_count, problems (object and what, the\n"
"                 first 64), generations (newest first: id, state,\n"
"                 objects, bytes, problems, and deep: null, or sound,\n"
"                 error, keys, data_records, spill_records_written,\n"
"                 waste_bytes of the store's verify)\n"
CLI_PROGRESS_HELP
ARCHIVE_COMMON_HELP
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 sound; 1 a problem found (each printed on stderr), no manifest,\n"
"    the cluster did not answer (the check stopped: nothing is judged);\n"
"    2 usage error.\n"
"\n"
"COST\n"
"    Every byte of the sealed generations read once (with --deep, their\n"
"    buckets and records once more), the open one's chunks once; memory\n"
"    one 4 MiB buffer.\n"
"\n"
"EXAMPLES\n"
"    tide archive verify --prefix node1\n"
"    tide archive verify --prefix node1 --deep --json | jq .sound\n";

static const char help_get[] =
"NAME\n"
"    tide archive get - print a key's value from a node's archive\n"
"\n"
"SYNOPSIS\n"
"    tide archive get KEYHEX [-v] [--conf FILE] [--pool NAME] [--prefix NAME]\n"
"                     [--user NAME] [--timeout SECONDS] > VALUE\n"
"\n"
"DESCRIPTION\n"
"    Looks KEYHEX up in the archive's sealed generations, newest first, as\n"
"    a node does for a key it no longer holds: each generation is opened\n"
"    as a read-only store on the archive and the store's own lookup reads\n"
"    the bucket and the record, each a ranged read of one object. The\n"
"    first generation that holds the key answers, and its value is\n"
"    written to stdout byte for byte, as 'tide get' writes it (no newline\n"
"    is added). The open generation is not read: its key file is not in\n"
"    the archive until it is sealed ('tide get' on the node's directory\n"
"    reads it).\n"
"\n"
"    An absent key prints 'tide archive: KEYHEX: not found' on stderr.\n"
"    Nothing is written anywhere.\n"
"\n"
"OPTIONS\n"
"    -v, --verbose\n"
"                 say on stderr which generation answered\n"
ARCHIVE_COMMON_HELP
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 found; 1 not found, no manifest, the cluster did not answer, a\n"
"    generation's objects are damaged; 2 bad key (not hex, or not the\n"
"    archived generations' key size), usage error.\n"
"\n"
"EXAMPLES\n"
"    tide archive get --prefix node1 $(printf '%064x' 1) > value.bin\n";

static const char help_restore[] =
"NAME\n"
"    tide archive restore - rebuild a node's data directory from its archive\n"
"\n"
"SYNOPSIS\n"
"    tide archive restore DIR [--keep N] [--json]\n"
"                         [--progress | --no-progress]\n"
"                         [--conf FILE] [--pool NAME] [--prefix NAME]\n"
"                         [--user NAME] [--timeout SECONDS]\n"
"\n"
"DESCRIPTION\n"
"    Makes DIR a node's data directory with generations (online delete:\n"
"    'tide help generations') from the archive: the newest open\n"
"    generation and the newest sealed ones, N in all (N: the node's keep,\n"
"    recorded in the manifest, or --keep). DIR must be empty, or missing\n"
"    with its parent there: anything else is refused, and nothing is\n"
"    changed, before the cluster is asked.\n"
"\n"
"    The steps, each synced before the next:\n"
"    1. each sealed generation into DIR/gen-NNNNNNNNNNNN/: its nudb.dat\n"
"       and nudb.key downloaded chunk by chunk, each chunk checked\n"
"       against the manifest's XXH64 as it is written;\n"
"    2. the open generation (the node's newest, when it is newer than\n"
"       every sealed one): its data chunks, contiguous from the first,\n"
"       into nudb.dat, cut at the end of its last whole record; the\n"
"       archive's copy is cut back to the same size (the node's uploads\n"
"       go on from there, and the next step adds bytes the archive must\n"
"       not hold otherwise); then its nudb.key is built from nudb.dat\n"
"       ('tide help rekey') with the generation's block size. When the\n"
"       archive has no such open generation, the newest is a new empty\n"
"       one instead, so that the node never appends to a sealed one;\n"
"    3. each restored generation checked by the store's verify ('tide\n"
"       help verify': every bucket, every record);\n"
"    4. DIR/tide.generations written last: keep N, the generations\n"
"       newest first, rotations the newest id - 1.\n"
"\n"
"    A failure or a crash before step 4 leaves DIR with generation\n"
"    directories and no tide.generations: tided refuses to start on it\n"
"    ('no tide.generations but N generation directories'), and so does\n"
"    restore (DIR is not empty). Remove DIR and run restore again.\n"
"\n"
"    Restore is for a node that is gone: one still writing the prefix\n"
"    would upload past the cut of step 2. The manifest's last writer and\n"
"    time are printed; start the restored node with the same pool and\n"
"    prefix, and it archives on where the archive left off.\n"
"\n"
"OPTIONS\n"
"    --keep N     the generations to restore, the open one counted, 2 to\n"
"                 64. Default: the node's keep from the manifest (2 when\n"
"                 it has none). A restored DIR keeps N generations\n"
"    --json       print one JSON object: dir, pool, prefix, keep,\n"
"                 rotations, generations (newest first: id, dir, kind\n"
"                 (open, sealed or fresh), archived_bytes, cut_bytes,\n"
"                 dat_bytes, key_bytes, keys), left_sealed, left_open\n"
"                 (an open generation older than a sealed one, not\n"
"                 restored, or null), archive_cut (null, or from and\n"
"                 to), strays_removed, downloaded_bytes\n"
CLI_PROGRESS_HELP
ARCHIVE_COMMON_HELP
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 restored; 1 DIR not empty, nothing archived, an object damaged\n"
"    (named), a restored generation not sound, the cluster did not\n"
"    answer, a local write failed; 2 usage error.\n"
"\n"
"EXAMPLES\n"
"    tide archive restore /var/lib/tide/db --prefix node1\n"
"    tide archive restore /srv/node1 --prefix node1 --keep 4 --json\n";

/* ---- options ---- */

enum {
    OPT_CONF = 0x2001, OPT_POOL, OPT_PREFIX, OPT_USER, OPT_TIMEOUT, OPT_JSON, OPT_DEEP, OPT_KEEP,
};

#define COMMON_OPTIONS \
    { "conf",    required_argument, NULL, OPT_CONF }, \
    { "pool",    required_argument, NULL, OPT_POOL }, \
    { "prefix",  required_argument, NULL, OPT_PREFIX }, \
    { "user",    required_argument, NULL, OPT_USER }, \
    { "timeout", required_argument, NULL, OPT_TIMEOUT }

static const struct option ls_options[] = {
    COMMON_OPTIONS, { "json", no_argument, NULL, OPT_JSON }, { NULL, 0, NULL, 0 },
};
static const struct option verify_options[] = {
    COMMON_OPTIONS, { "json", no_argument, NULL, OPT_JSON },
    { "deep", no_argument, NULL, OPT_DEEP },
    { "progress", no_argument, NULL, CLI_OPT_PROGRESS },
    { "no-progress", no_argument, NULL, CLI_OPT_NO_PROGRESS }, { NULL, 0, NULL, 0 },
};
static const struct option get_options[] = {
    COMMON_OPTIONS, { "verbose", no_argument, NULL, 'v' }, { NULL, 0, NULL, 0 },
};
static const struct option restore_options[] = {
    COMMON_OPTIONS, { "json", no_argument, NULL, OPT_JSON },
    { "keep", required_argument, NULL, OPT_KEEP },
    { "progress", no_argument, NULL, CLI_OPT_PROGRESS },
    { "no-progress", no_argument, NULL, CLI_OPT_NO_PROGRESS }, { NULL, 0, NULL, 0 },
};

typedef struct archive_args {
    tide_archive_tool_opts o;
    char prefix[TIDE_ARCHIVE_PREFIX_MAX + 1];
    int json, deep, verbose, progress;
    unsigned keep;
} archive_args;

static int option(void *opts, int id, const char *arg)
{
    archive_args *x = opts;
    uint64_t v;

    switch (id) {
    case OPT_CONF:   x->o.conf = arg; return CLI_OK;
    case OPT_POOL:   x->o.pool = arg; return CLI_OK;
    case OPT_PREFIX: x->o.prefix = arg; return CLI_OK;
    case OPT_USER:   x->o.user = arg; return CLI_OK;
    case OPT_JSON:   x->json = 1; return CLI_OK;
    case OPT_DEEP:   x->deep = 1; return CLI_OK;
    case 'v':        x->verbose = 1; return CLI_OK;
    case OPT_TIMEOUT:
        if (cli_parse_u64(arg, 1, 3600, &v) != 0)
            return cli_usage("archive", "--timeout '%s' is not a number of seconds from 1 to 3600",
                             arg);
        x->o.timeout_s = (unsigned)v;
        return CLI_OK;
    case OPT_KEEP:
        if (cli_parse_u64(arg, TIDE_GEN_MIN, TIDE_GEN_MAX, &v) != 0)
            return cli_usage("archive", "--keep '%s' is not a number of generations from %d to %d",
                             arg, TIDE_GEN_MIN, TIDE_GEN_MAX);
        x->keep = (unsigned)v;
        return CLI_OK;
    default:
        cli_progress_option(&x->progress, id);
        return CLI_OK;
    }
}

static const cli_verb verb_ls = {
    .name = "archive", .usage = "archive ls", .summary = "list a node's archive",
    .help = help_ls, .options = ls_options, .option = option, .args = CLI_ARGS_NONE,
};
static const cli_verb verb_verify = {
    .name = "archive", .usage = "archive verify", .summary = "check a node's archive",
    .help = help_verify, .options = verify_options, .option = option, .args = CLI_ARGS_NONE,
};
static const cli_verb verb_get = {
    .name = "archive", .usage = "archive get KEYHEX", .summary = "a key's value from the archive",
    .help = help_get, .options = get_options, .option = option, .args = CLI_ARGS_KEY,
    .args_text = "KEYHEX", .short_options = "v",
};
static const cli_verb verb_restore = {
    .name = "archive", .usage = "archive restore DIR", .summary = "rebuild a data directory",
    .help = help_restore, .options = restore_options, .option = option, .args = CLI_ARGS_PATH,
};

/* The prologue of every sub-verb: options, arguments, the prefix. 0 to
 * go on; 1 with *status set. */
static int parse(const cli_verb *v, int argc, char **argv, archive_args *x, cli_args *a,
                 int *status)
{
    memset(x, 0, sizeof *x);
    if (cli_parse(v, argc, argv, x, a, status)) return 1;
    if (x->o.prefix == NULL) {
        if (tide_archive_default_prefix(x->prefix, sizeof x->prefix) != 0) {
            *status = cli_usage("archive", "%s", tide_last_error());
            return 1;
        }
        x->o.prefix = x->prefix;
    }
    if (!tide_archive_prefix_valid(x->o.prefix)) {
        *status = cli_usage("archive", "--prefix '%s': expected 1 to %d characters of A-Z a-z "
                            "0-9 _ -, not starting with -", x->o.prefix, TIDE_ARCHIVE_PREFIX_MAX);
        return 1;
    }
    return 0;
}

static int connect_tool(const archive_args *x, tide_archive_tool **t)
{
    int rc = tide_archive_tool_open(t, &x->o);
    return rc ? cli_fail_store("archive", rc) : CLI_OK;
}

static json_t *json_u64(uint64_t v) { return json_integer((json_int_t)v); }

static json_t *json_time(uint64_t us)
{
    char when[40];
    return us ? json_string(cli_iso8601_us(us, when, sizeof when)) : json_null();
}

static json_t *json_hex64(uint64_t v)
{
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, v);
    return json_string(hex);
}

/* The progress line's callback: bytes of `total`. */
static void progress_cb(void *arg, uint64_t done, uint64_t total)
{
    cli_progress_draw(arg, "bytes read", done, total, NULL);
}

/* ---- ls ---- */

static json_t *ls_json(const tide_archive_tool *t, const tide_archive_ls *l)
{
    json_t *o = json_object(), *gens = json_array(), *unnamed = json_array();

    json_object_set_new(o, "pool", json_string(tide_archive_tool_pool(t)));
    json_object_set_new(o, "prefix", json_string(tide_archive_tool_prefix(t)));
    json_object_set_new(o, "manifest", json_boolean(l->has_manifest));
    json_object_set_new(o, "keep", json_integer(l->keep));
    json_object_set_new(o, "writer", json_string(l->writer));
    json_object_set_new(o, "updated_unix_us", json_u64(l->updated_unix_us));
    json_object_set_new(o, "updated", json_time(l->updated_unix_us));
    for (unsigned i = 0; i < l->count; i++) {
        const tide_archive_ls_gen *e = &l->gens[i];
        json_t *g = json_object();
        json_object_set_new(g, "id", json_u64(e->id));
        json_object_set_new(g, "state", json_string(tide_archive_state_name(e->state)));
        json_object_set_new(g, "uid", json_hex64(e->uid));
        json_object_set_new(g, "key_size", json_integer(e->key_size));
        json_object_set_new(g, "block_size", json_integer(e->block_size));
        json_object_set_new(g, "chunk_bytes", json_u64(e->chunk_bytes));
        json_object_set_new(g, "dat_bytes", json_u64(e->dat_bytes));
        json_object_set_new(g, "key_bytes", json_u64(e->key_bytes));
        json_object_set_new(g, "filter_bytes", json_u64(e->filter_bytes));
        json_object_set_new(g, "records", json_u64(e->records));
        json_object_set_new(g, "objects", json_integer(e->objects));
        json_object_set_new(g, "missing", json_integer(e->missing));
        json_object_set_new(g, "sealed_unix_us", json_u64(e->sealed_unix_us));
        json_object_set_new(g, "sealed", json_time(e->sealed_unix_us));
        json_array_append_new(gens, g);
    }
    json_object_set_new(o, "generations", gens);
    json_object_set_new(o, "objects", json_u64(l->objects));
    json_object_set_new(o, "named_bytes", json_u64(l->named_bytes));
    json_object_set_new(o, "unnamed_count", json_u64(l->unnamed));
    for (unsigned i = 0; i < l->unnamed_listed; i++) {
        json_t *u = json_object();
        json_object_set_new(u, "oid", json_string(l->unnamed_list[i].oid));
        json_object_set_new(u, "bytes", json_u64(l->unnamed_list[i].bytes));
        json_array_append_new(unnamed, u);
    }
    json_object_set_new(o, "unnamed", unnamed);
    json_object_set_new(o, "unnamed_bytes", json_u64(l->unnamed_bytes));
    return o;
}

static void ls_gen_text(const tide_archive_ls_gen *e)
{
    char when[40], b[32];

    if (e->state == TIDE_ARCHIVE_OPEN) {
        printf("  %-6" PRIu64 " open      nudb.dat %" PRIu64 " bytes uploaded (%s) in %u objects\n",
               e->id, e->dat_bytes, cli_human(e->dat_bytes, b, sizeof b), e->objects);
        return;
    }
    if (e->state != TIDE_ARCHIVE_SEALED) {
        printf("  %-6" PRIu64 " deleting  %u objects left\n", e->id, e->objects);
        return;
    }
    printf("  %-6" PRIu64 " sealed    nudb.dat %" PRIu64 "  nudb.key %" PRIu64 "  filter %" PRIu64
           "  %" PRIu64 " records  %u objects  sealed %s\n", e->id, e->dat_bytes, e->key_bytes,
           e->filter_bytes, e->records, e->objects,
           cli_iso8601_us(e->sealed_unix_us, when, sizeof when));
    if (e->missing)
        printf("         MISSING %u of its objects ('tide archive verify' names them)\n",
               e->missing);
}

static void ls_text(const tide_archive_tool *t, const tide_archive_ls *l)
{
    char when[40], b[32];

    printf("archive       pool %s, prefix %s\n", tide_archive_tool_pool(t),
           tide_archive_tool_prefix(t));
    if (!l->has_manifest) {
        printf("manifest      none: nothing is archived under this prefix\n");
    } else {
        printf("manifest      %s.manifest, written by %s at %s; keep %u\n",
               tide_archive_tool_prefix(t), l->writer[0] ? l->writer : "?",
               cli_iso8601_us(l->updated_unix_us, when, sizeof when), l->keep);
        printf("generations   %u (%u sealed, %u open, %u deleting), newest first:\n", l->count,
               l->sealed, l->open, l->deleting);
        for (unsigned i = 0; i < l->count; i++) ls_gen_text(&l->gens[i]);
    }
    printf("objects       %" PRIu64 " under the prefix; the manifest's hold %" PRIu64
           " bytes (%s)\n", l->objects, l->named_bytes, cli_human(l->named_bytes, b, sizeof b));
    if (l->unnamed == 0) {
        printf("unnamed       none\n");
        return;
    }
    printf("unnamed       %" PRIu64 " object%s the manifest does not name:\n", l->unnamed,
           l->unnamed == 1 ? "" : "s");
    for (unsigned i = 0; i < l->unnamed_listed; i++)
        printf("  %s  %" PRIu64 " bytes\n", l->unnamed_list[i].oid, l->unnamed_list[i].bytes);
    if (l->unnamed > l->unnamed_listed)
        printf("  and %" PRIu64 " more\n", l->unnamed - l->unnamed_listed);
}

static int run_ls(int argc, char **argv)
{
    tide_archive_tool *t = NULL;
    tide_archive_ls l;
    archive_args x;
    cli_args a;
    int rc, ret;

    if (parse(&verb_ls, argc, argv, &x, &a, &ret)) return ret;
    if ((ret = connect_tool(&x, &t)) != CLI_OK) return ret;
    rc = tide_archive_tool_ls(t, &l);
    if (rc) ret = cli_fail_store("archive", rc);
    else if (x.json) ret = cli_json_print("archive", ls_json(t, &l));
    else ls_text(t, &l);
    if (rc == 0 && !l.has_manifest && ret == CLI_OK)
        ret = cli_error("archive", "pool %s: no %s.manifest: nothing is archived under prefix %s",
                        tide_archive_tool_pool(t), tide_archive_tool_prefix(t),
                        tide_archive_tool_prefix(t));
    tide_archive_ls_free(&l);
    tide_archive_tool_close(t);
    return ret;
}

/* ---- verify ---- */

static json_t *verify_json(const tide_archive_tool *t, const tide_archive_verify *v)
{
    json_t *o = json_object(), *gens = json_array(), *problems = json_array();

    json_object_set_new(o, "pool", json_string(tide_archive_tool_pool(t)));
    json_object_set_new(o, "prefix", json_string(tide_archive_tool_prefix(t)));
    json_object_set_new(o, "sound", json_boolean(v->problems == 0));
    json_object_set_new(o, "objects", json_u64(v->objects));
    json_object_set_new(o, "bytes", json_u64(v->bytes));
    json_object_set_new(o, "problems_count", json_integer(v->problems));
    for (unsigned i = 0; i < v->problems && i < TIDE_ARCHIVE_PROBLEMS_MAX; i++) {
        json_t *p = json_object();
        json_object_set_new(p, "object", json_string(v->problem[i].object));
        json_object_set_new(p, "what", json_string(v->problem[i].what));
        json_array_append_new(problems, p);
    }
    json_object_set_new(o, "problems", problems);
    for (unsigned i = 0; i < v->count; i++) {
        const tide_archive_verify_gen *e = &v->gens[i];
        json_t *g = json_object(), *d = json_null();
        json_object_set_new(g, "id", json_u64(e->id));
        json_object_set_new(g, "state", json_string(tide_archive_state_name(e->state)));
        json_object_set_new(g, "objects", json_integer(e->objects));
        json_object_set_new(g, "bytes", json_u64(e->bytes));
        json_object_set_new(g, "problems", json_integer(e->problems));
        if (e->deep) {
            d = json_object();
            json_object_set_new(d, "sound", json_boolean(e->deep_rc == 0));
            json_object_set_new(d, "error", e->deep_rc ? json_string(tide_strerror(e->deep_rc))
                                                       : json_null());
            json_object_set_new(d, "keys", json_u64(e->report.keys));
            json_object_set_new(d, "data_records", json_u64(e->report.data_records));
            json_object_set_new(d, "spill_records_written",
                                json_u64(e->report.spill_records_written));
            json_object_set_new(d, "waste_bytes", json_u64(e->report.waste_bytes));
        }
        json_object_set_new(g, "deep", d);
        json_array_append_new(gens, g);
    }
    json_object_set_new(o, "generations", gens);
    return o;
}

static void verify_text(const tide_archive_tool *t, const tide_archive_verify *v)
{
    char b[32];

    printf("archive       pool %s, prefix %s: %u generations, newest first:\n",
           tide_archive_tool_pool(t), tide_archive_tool_prefix(t), v->count);
    for (unsigned i = 0; i < v->count; i++) {
        const tide_archive_verify_gen *e = &v->gens[i];
        printf("  %-6" PRIu64 " %-9s %u objects, %" PRIu64 " bytes read: ", e->id,
               tide_archive_state_name(e->state), e->objects, e->bytes);
        if (e->state == TIDE_ARCHIVE_DELETING) printf("not checked (being deleted)\n");
        else if (e->problems) printf("%u PROBLEM%s\n", e->problems, e->problems == 1 ? "" : "S");
        else if (e->state == TIDE_ARCHIVE_OPEN) printf("contiguous\n");
        else if (!e->deep) printf("as the manifest says\n");
        else printf("as the manifest says; a sound NuDB store (%" PRIu64 " keys)\n",
                    e->report.keys);
    }
    printf("read          %" PRIu64 " objects, %" PRIu64 " bytes (%s)\n", v->objects, v->bytes,
           cli_human(v->bytes, b, sizeof b));
    if (v->problems == 0) printf("verdict       sound\n");
    else printf("verdict       NOT SOUND: %u problem%s\n", v->problems,
                v->problems == 1 ? "" : "s");
}

static int run_verify(int argc, char **argv)
{
    tide_archive_verify_opts vo = { 0 };
    tide_archive_tool *t = NULL;
    tide_archive_verify v;
    cli_progress line;
    archive_args x;
    cli_args a;
    int rc, ret;

    if (parse(&verb_verify, argc, argv, &x, &a, &ret)) return ret;
    if ((ret = connect_tool(&x, &t)) != CLI_OK) return ret;
    vo.deep = x.deep;
    cli_progress_start(&line, "archive", x.progress);
    if (line.on) {
        vo.progress = progress_cb;
        vo.progress_arg = &line;
    }
    rc = tide_archive_tool_verify(t, &vo, &v);
    cli_progress_end(&line);
    if (rc && rc != TIDE_ECORRUPT) {
        ret = cli_fail_store("archive", rc);
    } else {
        if (x.json) ret = cli_json_print("archive", verify_json(t, &v));
        else verify_text(t, &v);
        for (unsigned i = 0; i < v.problems && i < TIDE_ARCHIVE_PROBLEMS_MAX; i++)
            cli_error("archive", "%s: %s", v.problem[i].object, v.problem[i].what);
        if (v.problems > TIDE_ARCHIVE_PROBLEMS_MAX)
            cli_error("archive", "and %u problems more", v.problems - TIDE_ARCHIVE_PROBLEMS_MAX);
        if (v.problems) ret = CLI_FAIL;
    }
    tide_archive_verify_free(&v);
    tide_archive_tool_close(t);
    return ret;
}

/* ---- get ---- */

static int run_get(int argc, char **argv)
{
    static cli_args a;
    tide_archive_tool *t = NULL;
    archive_args x;
    void *value = NULL;
    size_t len = 0;
    uint64_t gen = 0;
    unsigned looked = 0;
    int rc, ret;

    if (parse(&verb_get, argc, argv, &x, &a, &ret)) return ret;
    if ((ret = connect_tool(&x, &t)) != CLI_OK) return ret;
    rc = tide_archive_tool_get(t, a.key, a.key_len, &value, &len, &gen, &looked);
    if (rc == TIDE_ENOTFOUND) {
        ret = cli_error("archive", "%s: not found (%s)", a.key_hex, tide_last_error());
    } else if (rc) {
        ret = cli_fail("archive", rc);
    } else {
        if (x.verbose)
            fprintf(stderr, "tide archive: %s: found in generation %" PRIu64 " (%u of the sealed "
                    "generations asked, newest first)\n", a.key_hex, gen, looked);
        if (cli_write_all(1, value, len) != 0)
            ret = cli_error("archive", "writing %zu bytes to stdout: %s", len, strerror(errno));
    }
    free(value);
    tide_archive_tool_close(t);
    return ret;
}

/* ---- restore ---- */

static const char *kind_name(int kind)
{
    if (kind == TIDE_ARCHIVE_RESTORED_OPEN) return "open";
    return kind == TIDE_ARCHIVE_RESTORED_FRESH ? "fresh" : "sealed";
}

static json_t *restore_json(const tide_archive_tool *t, const char *dir,
                            const tide_archive_restore *r)
{
    json_t *o = json_object(), *gens = json_array(), *cut = json_null();

    json_object_set_new(o, "dir", json_string(dir));
    json_object_set_new(o, "pool", json_string(tide_archive_tool_pool(t)));
    json_object_set_new(o, "prefix", json_string(tide_archive_tool_prefix(t)));
    json_object_set_new(o, "keep", json_integer(r->keep));
    json_object_set_new(o, "rotations", json_u64(r->rotations));
    for (unsigned i = 0; i < r->count; i++) {
        const tide_archive_restore_gen *e = &r->gens[i];
        json_t *g = json_object();
        json_object_set_new(g, "id", json_u64(e->id));
        json_object_set_new(g, "dir", json_string(e->dir));
        json_object_set_new(g, "kind", json_string(kind_name(e->kind)));
        json_object_set_new(g, "archived_bytes", json_u64(e->archived_bytes));
        json_object_set_new(g, "cut_bytes", json_u64(e->cut_bytes));
        json_object_set_new(g, "dat_bytes", json_u64(e->dat_bytes));
        json_object_set_new(g, "key_bytes", json_u64(e->key_bytes));
        json_object_set_new(g, "keys", json_u64(e->report.keys));
        json_array_append_new(gens, g);
    }
    json_object_set_new(o, "generations", gens);
    json_object_set_new(o, "left_sealed", json_integer(r->left_sealed));
    json_object_set_new(o, "left_open", r->left_open ? json_u64(r->left_open) : json_null());
    if (r->archive_cut) {
        cut = json_object();
        json_object_set_new(cut, "from", json_u64(r->archive_cut_from));
        json_object_set_new(cut, "to", json_u64(r->archive_cut_to));
    }
    json_object_set_new(o, "archive_cut", cut);
    json_object_set_new(o, "strays_removed", json_integer(r->strays_removed));
    json_object_set_new(o, "downloaded_bytes", json_u64(r->downloaded_bytes));
    return o;
}

static void restore_text(const tide_archive_tool *t, const char *dir, const tide_archive_restore *r)
{
    char when[40], b[32];

    printf("restored      %s from pool %s, prefix %s (its manifest written by %s at %s)\n", dir,
           tide_archive_tool_pool(t), tide_archive_tool_prefix(t), r->writer[0] ? r->writer : "?",
           cli_iso8601_us(r->updated_unix_us, when, sizeof when));
    printf("generations   %u of keep %u, newest first, each sound (the store's verify):\n",
           r->count, r->keep);
    for (unsigned i = 0; i < r->count; i++) {
        const tide_archive_restore_gen *e = &r->gens[i];
        printf("  %s  %-6s  %" PRIu64 " keys  nudb.dat %" PRIu64 "  nudb.key %" PRIu64, e->dir,
               kind_name(e->kind), e->report.keys, e->dat_bytes, e->key_bytes);
        if (e->kind == TIDE_ARCHIVE_RESTORED_OPEN)
            printf("  (%" PRIu64 " bytes of data from the archive, %" PRIu64 " cut; nudb.key "
                   "built)", e->archived_bytes, e->cut_bytes);
        if (e->kind == TIDE_ARCHIVE_RESTORED_FRESH)
            printf("  (new and empty: the archive has no open generation)");
        putchar('\n');
    }
    if (r->left_sealed)
        printf("left          %u older sealed generation%s, in the archive only\n", r->left_sealed,
               r->left_sealed == 1 ? "" : "s");
    if (r->left_open)
        printf("left          open generation %" PRIu64 ", older than a sealed one: not restored\n",
               r->left_open);
    if (r->archive_cut || r->strays_removed)
        printf("archive       the open generation's data cut from %" PRIu64 " to %" PRIu64
               " bytes, %u chunk%s past it removed\n", r->archive_cut ? r->archive_cut_from : 0,
               r->archive_cut ? r->archive_cut_to : 0, r->strays_removed,
               r->strays_removed == 1 ? "" : "s");
    printf("manifest      %s/%s: keep %u, rotations %" PRIu64 "\n", dir, TIDE_GEN_FILE, r->keep,
           r->rotations);
    printf("downloaded    %" PRIu64 " bytes (%s)\n", r->downloaded_bytes,
           cli_human(r->downloaded_bytes, b, sizeof b));
}

static int run_restore(int argc, char **argv)
{
    tide_archive_restore_opts ro = { 0 };
    tide_archive_restore *r = NULL;
    tide_archive_tool *t = NULL;
    cli_progress line;
    archive_args x;
    cli_args a;
    int rc, ret;

    if (parse(&verb_restore, argc, argv, &x, &a, &ret)) return ret;
    if ((rc = tide_archive_restore_check_dir(NULL, a.path)) != 0)      /* invariant 2 */
        return cli_fail_store("archive", rc);
    if ((ret = connect_tool(&x, &t)) != CLI_OK) return ret;
    if ((r = calloc(1, sizeof *r)) == NULL) {
        tide_archive_tool_close(t);
        return cli_error("archive", "out of memory");
    }
    ro.keep = x.keep;
    cli_progress_start(&line, "archive", x.progress);
    if (line.on) {
        ro.progress = progress_cb;
        ro.progress_arg = &line;
    }
    rc = tide_archive_tool_restore(t, a.path, &ro, r);
    cli_progress_end(&line);
    if (rc) {
        ret = cli_fail_store("archive", rc);
        if (rc != TIDE_EEXIST && rc != TIDE_ENOTSTORE && r->count)
            cli_error("archive", "%s is incomplete (no %s): remove it and run restore again",
                      a.path, TIDE_GEN_FILE);
    } else if (x.json) {
        ret = cli_json_print("archive", restore_json(t, a.path, r));
    } else {
        restore_text(t, a.path, r);
    }
    free(r);
    tide_archive_tool_close(t);
    return ret;
}

/* ---- the verb ---- */

static int run(int argc, char **argv)
{
    static const struct { const char *name; int (*run)(int, char **); } subs[] = {
        { "ls", run_ls }, { "verify", run_verify }, { "get", run_get }, { "restore", run_restore },
    };

    if (argc < 2)
        return cli_usage("archive", "which? 'ls', 'verify', 'get' or 'restore': tide archive ls "
                         "[OPTIONS]");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        cli_verb_help(&cli_verb_archive, stdout);
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (strcmp(argv[1], subs[i].name) == 0) return subs[i].run(argc - 1, argv + 1);
    return cli_usage("archive", "'%s' is not one of 'ls', 'verify', 'get' and 'restore'", argv[1]);
}

const cli_verb cli_verb_archive = {
    .name = "archive", .usage = "archive ls|verify|get|restore",
    .summary = "list, check, read or restore a node's archive in a Ceph pool",
    .help = help_archive, .run = run,
};
