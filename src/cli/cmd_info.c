/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_info.c: `tide info PATH`, a store's headers and sizes.
 *
 * One call, tide_store_inspect: no writer's lock, no recovery, no writes,
 * so it is safe while a node has the store open (its one lock is the
 * readers' shared one on tide.live, so no rotation cuts what it reads). Prints the headers as aligned text,
 * or with --json one object whose 64-bit identifiers are "0x..." strings
 * (no JSON reader rounds them).
 *
 * Invariants:
 *   1. The exit status is CLI_OK only when the headers were read and
 *      printed (and, with --json, the object written); a failed inspect
 *      prints nothing on stdout.
 *   2. The JSON object's members are always the same, in the same order,
 *      whatever the store: scripts read them by name.
 *
 * A node's directory with generations (tide.generations naming
 * gen-* stores) gets one header per generation, newest first, from
 * tide_gens_inspect (the same), after a line on the manifest; with
 * --json an object whose "generations" array holds each generation's
 * object of invariant 2 under "info". Without a manifest the output is
 * what it always was.
 *
 * Never: open the store (an open would take the lock and recover).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "gen/gens.h"
#include "store/full.h"
#include "util/err.h"

static const char help_info[] =
"NAME\n"
"    tide info - print a store's headers and sizes\n"
"\n"
"SYNOPSIS\n"
"    tide info PATH [--json]\n"
"\n"
"DESCRIPTION\n"
"    Reads the headers of nudb.dat, nudb.key and nudb.log (when present)\n"
"    and the three file sizes. Takes no writer's lock, runs no recovery,\n"
"    writes nothing: it is safe while a node has the store open. While it\n"
"    reads it holds the readers' shared lock on tide.live, so a rotation\n"
"    never cuts a generation under it: one it meets during the cut says\n"
"    'a rotation is deleting it' (exit 1).\n"
"\n"
"    Prints: file type and format version, uid, appnum, key size, salt,\n"
"    pepper, block size, load factor (raw, in 1/65536, and as a fraction),\n"
"    capacity (entries per bucket: (block_size - 8) / 18), the number of\n"
"    buckets, the sizes of nudb.dat, nudb.key and nudb.log, and whether a\n"
"    recovery is pending: nudb.log holds an unfinished commit, a crash's\n"
"    or a live NuDB writer's (NuDB takes no lock, so nothing tells them\n"
"    apart); 'tide recover', when no process writes the store, undoes it.\n"
"    A deferred writer (tided with --store-index-lag, the default) that\n"
"    stopped without closing the store (killed, a power loss) leaves the\n"
"    idle log instead, a log header without bucket pre-images: the line\n"
"    then says 'PENDING, reads work' and how many bytes of committed\n"
"    records wait to be indexed; get, visit and verify read the store as\n"
"    it is, and 'tide recover' or the writer's next start indexes them.\n"
"    --json gives idle_log, and with it dat_indexed and dat_committed (the\n"
"    offsets below which nudb.key indexes and nudb.dat holds committed\n"
"    records), only for the idle log. When the idle log is not read as it\n"
"    is (another process has the files open, or tide.meta claims records\n"
"    past nudb.dat's end), the line says why ('PENDING, reads refused'),\n"
"    and --json gives it as not_idle_why.\n"
"\n"
"    When a Tide writer (a node, a put) has written tide.live beside the\n"
"    store, a 'writer' line says whether it runs, its pid, and the counts\n"
"    it publishes for readers in other processes (generation, buckets,\n"
"    how far nudb.dat is indexed and committed; 'Readers in other\n"
"    processes' in docs/DURABILITY.md). While it runs, a nudb.log is its\n"
"    commit in progress, not a pending recovery; the sizes shown are the\n"
"    files' as info read them, which the writer may change a moment later.\n"
"\n"
"    A node's directory with generations (PATH holds tide.generations:\n"
"    'tide help generations') prints a line on the manifest (keep,\n"
"    generations held, rotations, the last one's time), then the same\n"
"    headers for each generation, newest first, each under a line naming\n"
"    its id and directory and whether it takes the writes. A generation\n"
"    whose headers cannot be read is shown with its problem and makes the\n"
"    exit status 1. The generations shown are those of one manifest: when\n"
"    a node's rotation changes it while info reads them, info reads them\n"
"    again, so a generation a rotation drops meanwhile is not shown as a\n"
"    problem.\n"
"\n"
"OPTIONS\n"
"    --json       print one JSON object instead. 64-bit identifiers (uid,\n"
"                 salt, pepper) are strings of the form \"0x...\" so that\n"
"                 no JSON reader rounds them. With generations: path,\n"
"                 keep, rotations, last_rotation_unix_us, disk_bytes and\n"
"                 generations, newest first, each with id, dir, writable,\n"
"                 problem (null when none) and info, the object above.\n"
"                 \"writer\" is null without tide.live, else running,\n"
"                 pid, writing, generation, buckets, key_file_bytes,\n"
"                 dat_indexed and dat_committed.\n"
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 printed; 1 no store at PATH, not a NuDB file, headers disagree or\n"
"    are corrupt; 2 usage error.\n"
"\n"
"EXAMPLES\n"
"    tide info /var/lib/tide/db\n"
"    tide info --json /var/lib/tide/db | jq .block_size\n";

static const struct option options[] = {
    { "json", no_argument, NULL, 'j' },
    { NULL, 0, NULL, 0 },
};

static json_t *json_hex64(uint64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "0x%016llx", (unsigned long long)v);
    return json_string(buf);
}

/* What tide.live says, or null when there is none. */
static json_t *live_object(const tide_store_live *lv)
{
    json_t *o;

    if (!lv->present) return json_null();
    o = json_object();
    json_object_set_new(o, "running", json_boolean(lv->writer_running));
    json_object_set_new(o, "pid", json_integer(lv->writer_pid));
    json_object_set_new(o, "writing", json_boolean(lv->writing));
    json_object_set_new(o, "generation", json_integer((json_int_t)lv->generation));
    json_object_set_new(o, "buckets", json_integer((json_int_t)lv->buckets));
    json_object_set_new(o, "key_file_bytes", json_integer((json_int_t)lv->key_file_bytes));
    json_object_set_new(o, "dat_indexed", json_integer((json_int_t)lv->dat_indexed));
    json_object_set_new(o, "dat_committed", json_integer((json_int_t)lv->dat_committed));
    return o;
}

static json_t *info_object(const char *path, const tide_store_info *in)
{
    json_t *o = json_object();

    json_object_set_new(o, "path", json_string(path));
    json_object_set_new(o, "type", json_string("nudb"));
    json_object_set_new(o, "version", json_integer(in->version));
    json_object_set_new(o, "uid", json_hex64(in->uid));
    json_object_set_new(o, "appnum", in->appnum <= (uint64_t)INT64_MAX
                        ? json_integer((json_int_t)in->appnum) : json_hex64(in->appnum));
    json_object_set_new(o, "key_size", json_integer(in->key_size));
    json_object_set_new(o, "salt", json_hex64(in->salt));
    json_object_set_new(o, "pepper", json_hex64(in->pepper));
    json_object_set_new(o, "block_size", json_integer(in->block_size));
    json_object_set_new(o, "load_factor_raw", json_integer(in->load_factor_raw));
    json_object_set_new(o, "load_factor", json_real(in->load_factor));
    json_object_set_new(o, "capacity", json_integer(in->capacity));
    json_object_set_new(o, "buckets", json_integer((json_int_t)in->buckets));
    json_object_set_new(o, "dat_file_bytes", json_integer((json_int_t)in->dat_file_bytes));
    json_object_set_new(o, "key_file_bytes", json_integer((json_int_t)in->key_file_bytes));
    json_object_set_new(o, "log_file_bytes", json_integer((json_int_t)in->log_file_bytes));
    tide_store_live lv;
    int running = tide_store_live_info(path, NULL, &lv) == 0 && lv.writer_running;
    /* A running Tide writer's log is its commit in progress, not a crash's. */
    json_object_set_new(o, "needs_recovery", json_boolean(in->needs_recovery && !running));
    /* A stopped deferred writer's idle log: reads work; the
     * records of [dat_indexed, dat_committed) wait to be indexed. */
    json_object_set_new(o, "idle_log", json_boolean(in->idle_log && !running));
    /* W and C of the idle log only: otherwise inspect has nothing but the
     * file's size to give (a running writer's are under "writer"). */
    if (in->idle_log && !running) {
        json_object_set_new(o, "dat_indexed", json_integer((json_int_t)in->dat_indexed));
        json_object_set_new(o, "dat_committed", json_integer((json_int_t)in->dat_committed));
    }
    if (in->not_idle_why[0] && !running)
        json_object_set_new(o, "not_idle_why", json_string(in->not_idle_why));
    json_object_set_new(o, "writer", live_object(&lv));
    return o;
}

/* Print o and free it. */
static int print_json(json_t *o)
{
    int rc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (rc != 0) return cli_error("info", "cannot write the JSON output");
    putchar('\n');
    return CLI_OK;
}

static int info_json(const char *path, const tide_store_info *in)
{
    return print_json(info_object(path, in));
}

static void info_text(const char *path, const tide_store_info *in)
{
    char b1[32], b2[32], b3[32];

    printf("store         %s\n", path);
    printf("type          nudb.dat + nudb.key, format version %u\n", in->version);
    printf("uid           0x%016llx\n", (unsigned long long)in->uid);
    printf("appnum        %llu\n", (unsigned long long)in->appnum);
    printf("key_size      %u bytes\n", in->key_size);
    printf("salt          0x%016llx\n", (unsigned long long)in->salt);
    printf("pepper        0x%016llx\n", (unsigned long long)in->pepper);
    printf("block_size    %u bytes%s\n", in->block_size,
           tide_block_size_valid(in->block_size) ? ""
           : " (outside the 4096..32768 that Tide creates; any NuDB size opens)");
    printf("load_factor   %u/65536 = %.4f\n", in->load_factor_raw, in->load_factor);
    printf("capacity      %u entries per bucket\n", in->capacity);
    printf("buckets       %llu\n", (unsigned long long)in->buckets);
    printf("nudb.dat      %llu bytes (%s)\n", (unsigned long long)in->dat_file_bytes,
           cli_human(in->dat_file_bytes, b1, sizeof b1));
    printf("nudb.key      %llu bytes (%s)\n", (unsigned long long)in->key_file_bytes,
           cli_human(in->key_file_bytes, b2, sizeof b2));
    if (in->log_file_bytes == 0)
        printf("nudb.log      0 bytes (absent or empty)\n");
    else
        printf("nudb.log      %llu bytes (%s)\n", (unsigned long long)in->log_file_bytes,
               cli_human(in->log_file_bytes, b3, sizeof b3));
    tide_store_live lv;
    long long dat_new = -1, key_new = -1;
    int running = tide_store_live_info(path, NULL, &lv) == 0 && lv.writer_running;
    if (running)
        printf("writer        pid %d, running (tide.live: generation %llu, %llu buckets, "
               "nudb.dat indexed to %llu, committed to %llu%s)\n", lv.writer_pid,
               (unsigned long long)lv.generation, (unsigned long long)lv.buckets,
               (unsigned long long)lv.dat_indexed, (unsigned long long)lv.dat_committed,
               lv.writing ? ", writing nudb.key now" : "");
    else if (lv.present && lv.writing)
        printf("writer        none: pid %d stopped in the middle of writing nudb.key\n",
               lv.writer_pid);
    else if (lv.present && in->needs_recovery)
        printf("writer        none: the last, pid %d, stopped without closing the store (killed? "
               "a power loss?)\n", lv.writer_pid);
    else if (lv.present)
        printf("writer        none (the last, pid %d, closed the store)\n", lv.writer_pid);
    if (!running && cli_rekey_leftovers(path, &dat_new, &key_new) && !in->needs_recovery)
        printf("recovery      PENDING, reads work: an interrupted rekey left %s%s%s (the store is "
               "the one before it, or after it once 'tide recover' finishes a switch it began); "
               "'tide recover %s' or the next read-write open removes them\n",
               dat_new >= 0 ? "nudb.dat.new" : "", dat_new >= 0 && key_new >= 0 ? " and " : "",
               key_new >= 0 ? "nudb.key.new" : "", path);
    else if (running && in->needs_recovery)
        printf("recovery      not needed: nudb.log is the running writer's commit in progress\n");
    else if (in->idle_log && in->dat_committed > in->dat_indexed)
        /* A deferred writer's idle log: tided killed with the lag on. */
        printf("recovery      PENDING, reads work: a deferred writer left %llu bytes of committed "
               "records in nudb.dat (from offset %llu to %llu) that nudb.key does not index yet; "
               "get, visit and verify read them as they are; 'tide recover %s' or the writer's "
               "next start indexes them\n",
               (unsigned long long)(in->dat_committed - in->dat_indexed),
               (unsigned long long)in->dat_indexed, (unsigned long long)in->dat_committed, path);
    else if (in->idle_log)
        printf("recovery      PENDING, reads work: nudb.log is a deferred writer's idle log (no "
               "bucket to restore, nothing committed past the index); 'tide recover %s' or the "
               "writer's next start removes it\n", path);
    else if (in->not_idle_why[0])
        printf("recovery      PENDING, reads refused: %s\n", in->not_idle_why);
    else if (in->needs_recovery)
        printf("recovery      PENDING: nudb.log holds an unfinished commit (bucket pre-images: a "
               "crash's, or a live NuDB writer's); run 'tide recover %s' (or start the store's "
               "tided) when no process writes the store; reads are refused until then\n", path);
    else
        printf("recovery      not needed\n");
}

/* ---- a directory with generations ---- */

static int gens_json(const char *path, const tide_gens_listing *l)
{
    const tide_gen_manifest *m = &l->manifest;
    json_t *o = json_object(), *gens = json_array();
    char dir[4200];

    json_object_set_new(o, "path", json_string(path));
    json_object_set_new(o, "keep", json_integer(m->keep));
    json_object_set_new(o, "rotations", json_integer((json_int_t)m->rotations));
    json_object_set_new(o, "last_rotation_unix_us", json_integer((json_int_t)m->last_rotation_us));
    json_object_set_new(o, "disk_bytes", json_integer((json_int_t)l->disk_bytes));
    for (unsigned i = 0; i < m->count; i++) {
        json_t *g = json_object();
        snprintf(dir, sizeof dir, "%s/%s", path, m->gens[i].dir);
        json_object_set_new(g, "id", json_integer((json_int_t)m->gens[i].id));
        json_object_set_new(g, "dir", json_string(m->gens[i].dir));
        json_object_set_new(g, "writable", json_boolean(i == 0));
        json_object_set_new(g, "problem", l->gens[i].problem[0] ? json_string(l->gens[i].problem)
                                                                : json_null());
        json_object_set_new(g, "info", l->gens[i].problem[0] ? json_null()
                                                             : info_object(dir, &l->gens[i].info));
        json_array_append_new(gens, g);
    }
    json_object_set_new(o, "generations", gens);
    return print_json(o);
}

static void gens_text(const char *path, const tide_gens_listing *l)
{
    const tide_gen_manifest *m = &l->manifest;
    char dir[4200], when[40];

    printf("generations   %s: keep %u, %u held, %llu rotations, last %s\n", path, m->keep,
           m->count, (unsigned long long)m->rotations,
           cli_iso8601_us(m->last_rotation_us, when, sizeof when));
    for (unsigned i = 0; i < m->count; i++) {
        snprintf(dir, sizeof dir, "%s/%s", path, m->gens[i].dir);
        printf("\ngeneration    %llu (%s), %s\n", (unsigned long long)m->gens[i].id,
               m->gens[i].dir, i == 0 ? "writable (the newest)" : "read-only");
        if (l->gens[i].problem[0]) printf("PROBLEM       %s\n", l->gens[i].problem);
        else info_text(dir, &l->gens[i].info);
    }
}

static int info_gens(const char *path, int json)
{
    tide_gens_listing *l = calloc(1, sizeof *l);
    int rc, ret;

    if (l == NULL) return cli_error("info", "out of memory");
    rc = tide_gens_inspect(path, NULL, l);
    if (rc) {
        ret = cli_fail("info", rc);
        goto out;
    }
    ret = json ? gens_json(path, l) : (gens_text(path, l), CLI_OK);
    for (unsigned i = 0; i < l->manifest.count; i++)
        if (l->gens[i].problem[0])
            ret = cli_error("info", "%s/%s: %s", path, l->manifest.gens[i].dir, l->gens[i].problem);
out:
    free(l);
    return ret;
}

static int run(int argc, char **argv)
{
    tide_gen_manifest m;
    tide_store_info in;
    cli_args a;
    int rc, json = 0;

    if (cli_parse(&cli_verb_info, argc, argv, &json, &a, &rc)) return rc;
    rc = cli_gens_manifest(a.path, &m);
    if (rc != TIDE_ENOENT) return rc ? cli_fail("info", rc) : info_gens(a.path, json);
    tide_err_clear();
    rc = tide_store_inspect(a.path, NULL, &in);
    if (rc) return cli_fail("info", rc);
    if (json) return info_json(a.path, &in);
    info_text(a.path, &in);
    return CLI_OK;
}

const cli_verb cli_verb_info = {
    .name = "info", .usage = "info PATH", .summary = "print the store's headers and sizes",
    .help = help_info, .run = run,
    .options = options, .option = cli_option_flag, .args = CLI_ARGS_PATH, .store = 1,
};
