/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_verify.c: `tide verify PATH`, every bucket and record checked.
 *
 * tide_store_verify_io does the work: a read-only open (a shared lock: readers
 * may run alongside, a writer may not), one pass over nudb.key and one over
 * nudb.dat. This prints the figures when the store is sound, the first
 * problem with its file and offset when it is not, and for the one
 * unsound verdict that still has figures (spill records of another block
 * size only) both. With --json the verdict is one object either way.
 *
 * A node's directory with generations (a tide.generations
 * manifest naming gen-* stores) is verified whole: the manifest (read,
 * decoded, its invariants checked, no plain store's files beside it), then
 * every generation it names with the same tide_store_verify_io, one summary
 * line each prefixed with the generation's directory, then a warning for
 * each gen-* directory it does not name (tided removes those at its next
 * start; they fail nothing). Without a manifest nothing of that runs and
 * the output is what it always was, byte for byte.
 *
 * Invariants:
 *   1. The exit status is CLI_OK only when tide_store_verify_io returned 0
 *      (sound); an unsound store exits CLI_FAIL even when its figures are
 *      printed.
 *   2. Figures are printed only for a verdict: a store that could not be
 *      checked (missing, busy, recovery pending) prints nothing on stdout.
 *   3. With generations the exit status is CLI_OK only when the manifest
 *      and every named generation are sound; each failure is printed on
 *      stderr naming its generation.
 *   4. A generation is named when the manifest, read again after the
 *      checks, still names it: one whose check failed (missing, a rotation
 *      deleting it) while a rotation dropped it is shown as dropped, with
 *      no verdict and no failure. The listing itself is of one manifest
 *      (tide_gens_inspect reads it again when a rotation moved it).
 *
 * Never: write to the store, or recover it (the log may be a live NuDB
 * writer's); remove an unnamed generation directory (that is tided's).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "gen/gens.h"
#include "tide/error.h"
#include "store/full.h"
#include "util/clock.h"
#include "util/err.h"

static const char help_verify[] =
"NAME\n"
"    tide verify - check a store's files and print its figures\n"
"\n"
"SYNOPSIS\n"
"    tide verify PATH [--live] [--json] [--progress | --no-progress]\n"
"\n"
"DESCRIPTION\n"
"    Checks the store as NuDB's verify does, and more, and never changes\n"
"    anything. It opens the store read-only (a shared lock: readers may\n"
"    run alongside, a writer may not), reads every bucket of nudb.key and\n"
"    its spill chain, and checks that each bucket is well formed (count\n"
"    within capacity, entries in hash order, every entry inside nudb.dat),\n"
"    that every entry sits in the bucket its hash names and points at a\n"
"    data record of the entry's size whose key hashes to the entry's\n"
"    hash, that no two entries point at one record, and that every spill\n"
"    pointer points at a spill record of a full bucket. Then it walks\n"
"    nudb.dat and checks that every data record is reached by exactly one\n"
"    entry, and that every spill record, reached or not, has the size of\n"
"    a full bucket at this block size, as NuDB's verify does: spill\n"
"    records of another block size (left by a rekey from it) make the\n"
"    store one NuDB's verify rejects ('invalid size in spill'), so verify\n"
"    prints the figures with the verdict 'NOT SOUND for NuDB's verify'\n"
"    and exits 1, though reads and writes are not affected.\n"
"\n"
"    When the store is sound it prints: the number of keys, their value\n"
"    bytes, the data records in nudb.dat, the buckets and their capacity\n"
"    (entries per bucket), the load (keys / (buckets x capacity)), the\n"
"    spill records reachable from a bucket and those written to nudb.dat,\n"
"    the waste (bytes of spill records no chain reaches any more, and\n"
"    their share of nudb.dat), the average number of bucket reads a fetch\n"
"    of a present key makes (1 + the depth in the spill chain), and the\n"
"    sizes of nudb.dat and nudb.key.\n"
"\n"
"    When it is not, it prints the first problem found, naming the file\n"
"    and the offset (and the bucket), e.g.\n"
"        tide verify: file is corrupt: db/nudb.key: bucket 3 (offset\n"
"        16384): entry 7 is out of hash order\n"
"\n"
"    On a terminal, progress is shown on stderr as one line, redrawn at\n"
"    most ten times a second, in two steps, each with its own measure\n"
"    named on the line: the buckets of nudb.key checked (with their spill\n"
"    chains and the records they point at), then the bytes of nudb.dat\n"
"    walked:\n"
"        tide verify: step 1/2, nudb.key   40%  705 of 1763 buckets\n"
"        tide verify: step 2/2, nudb.dat   62%  28.1 MiB of 45.4 MiB\n"
"    (the bytes followed by their rate after a quarter of a second). When\n"
"    the check is done the last state stays as a line of its own\n"
"    (100% when it got through), before the figures. When stderr is not a\n"
"    terminal nothing is printed there (see --progress), so the output is\n"
"    the same as without it.\n"
"\n"
"  A running store (--live)\n"
"    While a Tide process (a node, a put) has the store open for writing,\n"
"    the check above is refused ('a Tide writer (pid N) has the store\n"
"    open'): it compares nudb.key with nudb.dat, and the writer changes\n"
"    both under it. --live checks the running store instead, through the\n"
"    page its writer shares with readers (tide.live; 'Readers in other\n"
"    processes' in docs/DURABILITY.md): every bucket is read whole between\n"
"    two of the writer's commits and checked as above (count, hash order,\n"
"    bounds, every entry in the bucket its hash names, the spill chain),\n"
"    and every data record of nudb.dat that the writer says is complete is\n"
"    fetched by its key and must come back with its exact value. It does\n"
"    not check that entries and records pair one to one (the writer adds\n"
"    both while it runs), so 'keys' (entries met bucket by bucket) and\n"
"    'data records' (records walked) may differ, and waste is not\n"
"    reported. With no writer running, --live is the full check. Nothing\n"
"    is written and the writer is never held up for more than one bucket\n"
"    read.\n"
"\n"
"    A store whose nudb.log holds an unfinished commit (bucket pre-images)\n"
"    is not checked, and verify writes nothing to it (a read-only tool\n"
"    never recovers: the log may be a live NuDB writer's): run 'tide\n"
"    recover PATH' first (or start the store's tided), when no process\n"
"    writes the store. A store whose deferred writer (tided with\n"
"    --store-index-lag, the default) stopped without closing it (killed,\n"
"    a power loss) leaves a log without pre-images, the idle log: it is\n"
"    checked as it is, the indexed part as above, and the records\n"
"    committed past it and not yet in nudb.key are walked, counted and\n"
"    printed as 'not indexed' (tail_records and tail_bytes in --json);\n"
"    'tide recover PATH' or the node's next start indexes them.\n"
"\n"
"  A node's directory with generations\n"
"    When PATH holds tide.generations (online delete is on: see 'tide help\n"
"    generations'), verify checks the manifest (it reads, its checksum and\n"
"    grammar hold, its ids decrease, and no plain store's nudb.dat or\n"
"    nudb.key sits beside it), then verifies every generation it names as\n"
"    above, newest first, printing one summary line per generation\n"
"    prefixed with its directory, e.g.\n"
"        gen-000000000007  sound: 120 keys, 61440 value bytes, ...\n"
"        gen-000000000006  NOT SOUND: file is corrupt: ...\n"
"    (each problem is printed on stderr too, naming the generation; one a\n"
"    running node holds is 'NOT CHECKED: store is in use', no verdict), and\n"
"    warns about each gen-* directory the manifest does not name: a crashed\n"
"    rotation's leftover, which tided removes at its next start and which\n"
"    fails nothing. On a terminal each generation has its own progress\n"
"    line, named by its directory. 'tide verify PATH/gen-000000000007'\n"
"    prints one generation's full figures. The exit status is 0 only\n"
"    when the manifest and every named generation are sound.\n"
"\n"
"    On a running node (--live) a rotation may drop a generation while\n"
"    verify reads it. The generations checked are those of one manifest\n"
"    (read again when a rotation moved it during the listing), and a\n"
"    generation whose check fails is judged only if the manifest, read\n"
"    again, still names it: one a rotation dropped meanwhile is shown as\n"
"        gen-000000000006  dropped: a rotation (7 in all now) deleted it ...\n"
"    with no verdict, and fails nothing. A generation the manifest still\n"
"    names that is missing or damaged is NOT SOUND.\n"
"\n"
"OPTIONS\n"
"    --live       check a store a running Tide writer has open (above);\n"
"                 without a writer, the full check\n"
"    --json       print one JSON object on stdout: \"sound\" (true or\n"
"                 false), \"error\" and \"problem\" (null when sound), and\n"
"                 the figures as numbers: keys, value_bytes, data_records,\n"
"                 buckets, capacity, block_size, load,\n"
"                 spill_records_reachable, spill_records_written,\n"
"                 spill_records_foreign (of another block size),\n"
"                 waste_bytes, waste (a fraction of nudb.dat),\n"
"                 avg_fetch_reads, dat_file_bytes, key_file_bytes. For\n"
"                 an unsound store the figures are those counted before\n"
"                 the problem; the exit status is still 1 and the\n"
"                 problem is printed on stderr too. When the store cannot\n"
"                 be checked at all (missing, busy, recovery pending)\n"
"                 nothing is printed on stdout. With generations the\n"
"                 object is path, sound, manifest (sound, problem, keep,\n"
"                 rotations, count), generations (newest first: id, dir,\n"
"                 writable, sound, dropped, error, problem and the figures\n"
"                 above; a dropped generation has sound null, dropped\n"
"                 true, its note in problem) and unnamed (the directory\n"
"                 names).\n"
CLI_PROGRESS_HELP
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 sound (with generations: the manifest and every generation); 1 not\n"
"    sound (the problem is printed), no store, store busy (a writer has it\n"
"    open), recovery pending, I/O error; 2 usage error.\n"
"\n"
"COST\n"
"    One pass over nudb.key, one data-file read per key, one sequential\n"
"    pass over nudb.dat; memory about 8 bytes per key.\n"
"\n"
"EXAMPLES\n"
"    tide verify /var/lib/tide/db\n"
"    tide verify --json db | jq '.sound, .waste'\n"
"    tide verify db || echo 'db is damaged'\n"
"    tide verify --live /var/lib/tide/db      # while tided runs on it\n"
"    tide verify --json /var/lib/tide/node | jq '.generations[].sound'\n";

static const struct option options[] = {
    { "json",        no_argument, NULL, 'j' },
    { "live",        no_argument, NULL, 'l' },
    { "progress",    no_argument, NULL, CLI_OPT_PROGRESS },
    { "no-progress", no_argument, NULL, CLI_OPT_NO_PROGRESS },
    { NULL, 0, NULL, 0 },
};

/* --live: tide_store_verify_live for every store this run checks. */
static int verify_live;

typedef struct verify_flags {
    cli_flag_progress fp;       /* flag: --json */
    int live;
} verify_flags;

static int verify_option(void *opts, int id, const char *arg)
{
    verify_flags *f = opts;
    if (id == 'l') {
        f->live = 1;
        return CLI_OK;
    }
    return cli_option_flag_progress(&f->fp, id, arg);
}

/* ---- progress: one line per store verified ---- */

typedef struct verify_progress {
    cli_progress line;
    const char *name;           /* "" for a plain store, else the generation */
    unsigned step;              /* the step last drawn; 0 before the first */
} verify_progress;

/* The library's tide_verify_progress_fn: each step has its own measure,
 * named on the line (buckets of nudb.key, then bytes of nudb.dat), and
 * its own clock for the rate (cli_progress_restart). */
static void progress_cb(void *arg, unsigned step, uint64_t done, uint64_t total)
{
    verify_progress *p = arg;
    char what[96];

    if (step != p->step) {      /* another measure: its rate from its own start */
        if (p->step != 0) cli_progress_restart(&p->line, tide_clock_mono_us());
        p->step = step;
    }

    snprintf(what, sizeof what, "%s%sstep %u/2, %s", p->name, *p->name ? ": " : "", step,
             step == TIDE_VERIFY_STEP_BUCKETS ? "nudb.key" : "nudb.dat");
    cli_progress_draw(&p->line, what, done, total,
                      step == TIDE_VERIFY_STEP_BUCKETS ? "buckets" : NULL);
}

/* tide_store_verify_with with the progress line of `mode`, ended before it
 * returns (so the caller's output starts on a line of its own). */
static int verify_one(const char *dir, const char *name, int mode, tide_verify_report *r)
{
    verify_progress p;
    tide_verify_opts o = { 0 };
    int rc;

    p.name = name;
    p.step = 0;
    cli_progress_start(&p.line, "verify", mode);
    if (p.line.on) {
        o.progress = progress_cb;
        o.progress_arg = &p;
    }
    rc = verify_live ? tide_store_verify_live(dir, &o, r) : tide_store_verify_with(dir, &o, r);
    cli_progress_end(&p.line);
    return rc;
}

static int verify_json(const char *path, const tide_verify_report *r, int rc)
{
    json_t *o = json_object();
    int wrc;

    json_object_set_new(o, "path", json_string(path));
    json_object_set_new(o, "sound", json_boolean(rc == 0));
    json_object_set_new(o, "error", rc == 0 ? json_null() : json_string(tide_strerror(rc)));
    json_object_set_new(o, "problem", rc == 0 ? json_null() : json_string(tide_last_error()));
    json_object_set_new(o, "keys", json_integer((json_int_t)r->keys));
    json_object_set_new(o, "value_bytes", json_integer((json_int_t)r->value_bytes));
    json_object_set_new(o, "data_records", json_integer((json_int_t)r->data_records));
    json_object_set_new(o, "buckets", json_integer((json_int_t)r->buckets));
    json_object_set_new(o, "capacity", json_integer(r->capacity));
    json_object_set_new(o, "block_size", json_integer(r->block_size));
    json_object_set_new(o, "load", json_real(r->load));
    json_object_set_new(o, "spill_records_reachable",
                        json_integer((json_int_t)r->spill_records_reachable));
    json_object_set_new(o, "spill_records_written",
                        json_integer((json_int_t)r->spill_records_written));
    json_object_set_new(o, "spill_records_foreign",
                        json_integer((json_int_t)r->spill_records_foreign));
    json_object_set_new(o, "waste_bytes", json_integer((json_int_t)r->waste_bytes));
    json_object_set_new(o, "waste", json_real(r->waste));
    json_object_set_new(o, "avg_fetch_reads", json_real(r->avg_fetch_reads));
    json_object_set_new(o, "dat_file_bytes", json_integer((json_int_t)r->dat_file_bytes));
    json_object_set_new(o, "key_file_bytes", json_integer((json_int_t)r->key_file_bytes));
    json_object_set_new(o, "tail_records", json_integer((json_int_t)r->tail_records));
    json_object_set_new(o, "tail_bytes", json_integer((json_int_t)r->tail_bytes));
    wrc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(o);
    if (wrc != 0) return cli_error("verify", "cannot write the JSON output");
    putchar('\n');
    return CLI_OK;
}

static void verify_text(const char *path, const tide_verify_report *r, int foreign)
{
    char b1[32], b2[32], b3[32];

    printf("store            %s\n", path);
    if (foreign)
        printf("verdict          NOT SOUND for NuDB's verify: %llu spill records of another block "
               "size (unreachable waste; every entry reaches its record, every record is reached "
               "once)\n", (unsigned long long)r->spill_records_foreign);
    else
        printf(verify_live ? "verdict          sound while it runs: every bucket read whole is well "
                             "formed, every complete record is found with its value\n"
                           : "verdict          sound: every entry reaches its record, every record "
                             "is reached once\n");
    printf("keys             %llu\n", (unsigned long long)r->keys);
    printf("value bytes      %llu (%s)\n", (unsigned long long)r->value_bytes,
           cli_human(r->value_bytes, b1, sizeof b1));
    printf("data records     %llu\n", (unsigned long long)r->data_records);
    if (r->tail_records)
        /* A stopped deferred writer's tail, read through its idle log. */
        printf("not indexed      %llu records (%llu bytes of nudb.dat past the indexed part), "
               "committed and not yet in nudb.key (a deferred writer stopped: killed?): readers "
               "find them; 'tide recover %s' or the writer's next start indexes them\n",
               (unsigned long long)r->tail_records, (unsigned long long)r->tail_bytes, path);
    printf("buckets          %llu of %u bytes\n", (unsigned long long)r->buckets, r->block_size);
    printf("capacity         %u entries per bucket\n", r->capacity);
    printf("load             %.4f (keys / (buckets x capacity))\n", r->load);
    printf("spill records    %llu reachable, %llu written\n",
           (unsigned long long)r->spill_records_reachable,
           (unsigned long long)r->spill_records_written);
    printf("waste            %llu bytes, %.2f%% of nudb.dat (spill records no chain reaches)\n",
           (unsigned long long)r->waste_bytes, 100.0 * r->waste);
    printf("avg fetch reads  %.3f bucket reads per fetch of a present key\n", r->avg_fetch_reads);
    printf("nudb.dat         %llu bytes (%s)\n", (unsigned long long)r->dat_file_bytes,
           cli_human(r->dat_file_bytes, b2, sizeof b2));
    printf("nudb.key         %llu bytes (%s)\n", (unsigned long long)r->key_file_bytes,
           cli_human(r->key_file_bytes, b3, sizeof b3));
}

/* The verb as it was before generations (invariant 3 does not apply). */
static int verify_plain(const cli_args *a, int json, int progress)
{
    tide_verify_report r;
    int rc;

    memset(&r, 0, sizeof r);
    rc = verify_one(a->path, "", progress, &r);
    if (rc == 0) {
        if (json) return verify_json(a->path, &r, 0);
        verify_text(a->path, &r, 0);
        return CLI_OK;
    }
    /* A verdict of unsound is still a result: --json prints it. A store
     * that could not be checked at all (missing, busy, needing recovery)
     * gives no verdict, only the error. */
    if (json && rc == TIDE_ECORRUPT) verify_json(a->path, &r, rc);
    else if (rc == TIDE_ECORRUPT && r.foreign_spills_only) verify_text(a->path, &r, 1);
    /* Busy with no process holding the store: the log needs a recovery
     * (the message says so); "in use by another process" would mislead. */
    if (rc == TIDE_EBUSY && !cli_store_is_held(a->path, 1)) {
        cli_error("verify", "%s", tide_last_error());
        return CLI_FAIL;
    }
    return cli_fail_store("verify", rc);
}

/* ---- a directory with generations ---- */

/* Everything the manifest check found: 0 and an empty problem when sound. */
typedef struct gens_verdict {
    int manifest_rc;
    char manifest_problem[512];
    tide_gens_listing listing;
    int rc[TIDE_GEN_MAX];
    int dropped[TIDE_GEN_MAX];  /* failed, and a rotation dropped it meanwhile */
    char problem[TIDE_GEN_MAX][512];
    tide_verify_report r[TIDE_GEN_MAX];
} gens_verdict;

/* The manifest beyond what read and decode check: its invariants, and no
 * plain store's files beside it (tide_gens_open refuses that layout). */
static int check_manifest(const char *path, const tide_gen_manifest *m, char *problem, size_t cap)
{
    static const char *const plain[] = { "nudb.dat", "nudb.key" };
    char p[4096];
    struct stat st;
    int rc = tide_gen_manifest_check(m);

    if (rc) {
        snprintf(problem, cap, "%s/%s: %s", path, TIDE_GEN_FILE, tide_last_error());
        return rc;
    }
    for (size_t i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", path, plain[i]);
        if (stat(p, &st) == 0) {
            snprintf(problem, cap, "%s holds both %s and a plain store's %s: a node refuses to "
                     "open it; move one of them away", path, TIDE_GEN_FILE, plain[i]);
            return TIDE_EINVAL;
        }
    }
    return 0;
}

static void verify_gens_all(const char *path, gens_verdict *v, int progress)
{
    const tide_gen_manifest *m = &v->listing.manifest;
    char dir[4200];

    v->manifest_rc = check_manifest(path, m, v->manifest_problem, sizeof v->manifest_problem);
    for (unsigned i = 0; i < m->count; i++) {
        snprintf(dir, sizeof dir, "%s/%s", path, m->gens[i].dir);
        tide_err_clear();
        v->rc[i] = verify_one(dir, m->gens[i].dir, progress, &v->r[i]);
        if (v->rc[i] == TIDE_ENOENT)
            snprintf(v->problem[i], sizeof v->problem[i], "missing: %s names it but %.300s holds "
                     "no store; a node refuses to start until it is back", TIDE_GEN_FILE, dir);
        else if (v->rc[i])
            snprintf(v->problem[i], sizeof v->problem[i], "%s: %s", tide_strerror(v->rc[i]),
                     tide_last_error());
    }
}

/* Invariant 4: a generation whose check failed while a rotation dropped
 * it (the manifest, read again, names it no more) gets no verdict. */
static void forget_dropped(const char *path, gens_verdict *v)
{
    const tide_gen_manifest *m = &v->listing.manifest;
    tide_gen_manifest now = *m;

    for (unsigned i = 0; i < m->count; i++) {
        if (v->rc[i] == 0 || !cli_gens_dropped(path, m->gens[i].id, &now)) continue;
        v->rc[i] = 0;
        v->dropped[i] = 1;
        snprintf(v->problem[i], sizeof v->problem[i], "a rotation (%llu in all now) deleted it "
                 "while verify ran, and %s no longer names it: not checked, and no fault (its "
                 "objects left with it)", (unsigned long long)now.rotations, TIDE_GEN_FILE);
    }
}

static int gens_sound(const gens_verdict *v)
{
    if (v->manifest_rc) return 0;
    for (unsigned i = 0; i < v->listing.manifest.count; i++)
        if (v->rc[i]) return 0;
    return 1;
}

/* 1 when every failure is a busy generation: nothing was found wrong. */
static int gens_busy_only(const gens_verdict *v)
{
    if (v->manifest_rc) return 0;
    for (unsigned i = 0; i < v->listing.manifest.count; i++)
        if (v->rc[i] && v->rc[i] != TIDE_EBUSY) return 0;
    return 1;
}

static void gens_text(const char *path, const gens_verdict *v)
{
    const tide_gen_manifest *m = &v->listing.manifest;
    char b[32];

    printf("directory         %s (generations)\n", path);
    if (v->manifest_rc)
        printf("%-17s NOT SOUND: %s\n", TIDE_GEN_FILE, v->manifest_problem);
    else
        printf("%-17s sound: keep %u, %u generation%s, %llu rotations\n", TIDE_GEN_FILE, m->keep,
               m->count, m->count == 1 ? "" : "s", (unsigned long long)m->rotations);
    for (unsigned i = 0; i < m->count; i++) {
        const tide_verify_report *r = &v->r[i];
        if (v->dropped[i]) {
            printf("%-17s dropped: %s\n", m->gens[i].dir, v->problem[i]);
            continue;
        }
        if (v->rc[i]) {
            /* Busy is no verdict: the generation was not read at all. */
            printf("%-17s %s: %s\n", m->gens[i].dir,
                   v->rc[i] == TIDE_EBUSY ? "NOT CHECKED" : "NOT SOUND", v->problem[i]);
            continue;
        }
        printf("%-17s sound: %llu keys, %llu value bytes, %llu data records, nudb.dat %llu "
               "+ nudb.key %llu bytes (%s)%s\n", m->gens[i].dir, (unsigned long long)r->keys,
               (unsigned long long)r->value_bytes, (unsigned long long)r->data_records,
               (unsigned long long)r->dat_file_bytes, (unsigned long long)r->key_file_bytes,
               cli_human(r->dat_file_bytes + r->key_file_bytes, b, sizeof b),
               i == 0 ? ", writable" : "");
    }
    for (unsigned i = 0; i < v->listing.unnamed && i < 8; i++)
        printf("%-17s warning: not named by the manifest: a rotation's leftover that tided "
               "removes at its next start\n", v->listing.unnamed_dirs[i]);
    if (v->listing.unnamed > 8)
        printf("%-17s warning: and %u more gen-* directories the manifest does not name\n", "",
               v->listing.unnamed - 8);
    printf("verdict           %s\n", gens_sound(v) ? "sound: the manifest and every generation"
                                 : gens_busy_only(v) ? "NOT CHECKED: a process (a node?) has "
                                   "generations open for writing; stop it first"
                                 : "NOT SOUND");
}

static json_t *gen_json(const tide_gen *g, int writable, int rc, int dropped, const char *problem,
                        const tide_verify_report *r)
{
    json_t *o = json_object();

    json_object_set_new(o, "id", json_integer((json_int_t)g->id));
    json_object_set_new(o, "dir", json_string(g->dir));
    json_object_set_new(o, "writable", json_boolean(writable));
    json_object_set_new(o, "sound", dropped ? json_null() : json_boolean(rc == 0));
    json_object_set_new(o, "dropped", json_boolean(dropped));
    json_object_set_new(o, "error", rc == 0 ? json_null() : json_string(tide_strerror(rc)));
    json_object_set_new(o, "problem", rc == 0 && !dropped ? json_null() : json_string(problem));
    json_object_set_new(o, "keys", json_integer((json_int_t)r->keys));
    json_object_set_new(o, "value_bytes", json_integer((json_int_t)r->value_bytes));
    json_object_set_new(o, "data_records", json_integer((json_int_t)r->data_records));
    json_object_set_new(o, "waste_bytes", json_integer((json_int_t)r->waste_bytes));
    json_object_set_new(o, "avg_fetch_reads", json_real(r->avg_fetch_reads));
    json_object_set_new(o, "dat_file_bytes", json_integer((json_int_t)r->dat_file_bytes));
    json_object_set_new(o, "key_file_bytes", json_integer((json_int_t)r->key_file_bytes));
    return o;
}

static int gens_json(const char *path, const gens_verdict *v)
{
    const tide_gen_manifest *m = &v->listing.manifest;
    json_t *o = json_object(), *man = json_object(), *gens = json_array(), *un = json_array();

    json_object_set_new(o, "path", json_string(path));
    json_object_set_new(o, "sound", json_boolean(gens_sound(v)));
    json_object_set_new(man, "sound", json_boolean(v->manifest_rc == 0));
    json_object_set_new(man, "problem", v->manifest_rc ? json_string(v->manifest_problem)
                                                       : json_null());
    json_object_set_new(man, "keep", json_integer(m->keep));
    json_object_set_new(man, "rotations", json_integer((json_int_t)m->rotations));
    json_object_set_new(man, "count", json_integer(m->count));
    json_object_set_new(o, "manifest", man);
    for (unsigned i = 0; i < m->count; i++)
        json_array_append_new(gens, gen_json(&m->gens[i], i == 0, v->rc[i], v->dropped[i],
                                             v->problem[i], &v->r[i]));
    json_object_set_new(o, "generations", gens);
    for (unsigned i = 0; i < v->listing.unnamed && i < 8; i++)
        json_array_append_new(un, json_string(v->listing.unnamed_dirs[i]));
    json_object_set_new(o, "unnamed", un);
    return cli_json_print("verify", o);
}

/* Invariant 3: the verdict on stdout, each failure on stderr by name. */
static int verify_gens(const char *path, int json, int progress)
{
    gens_verdict *v = calloc(1, sizeof *v);
    int rc, ret;

    if (v == NULL) return cli_error("verify", "out of memory");
    rc = tide_gens_inspect(path, NULL, &v->listing);
    if (rc) {
        ret = cli_fail_store("verify", rc);
        goto out;
    }
    verify_gens_all(path, v, progress);
    forget_dropped(path, v);
    ret = json ? gens_json(path, v) : (gens_text(path, v), CLI_OK);
    if (v->manifest_rc) ret = cli_error("verify", "%s", v->manifest_problem);
    for (unsigned i = 0; i < v->listing.manifest.count; i++)
        if (v->rc[i])
            ret = cli_error("verify", "generation %llu (%s/%s): %s",
                            (unsigned long long)v->listing.manifest.gens[i].id, path,
                            v->listing.manifest.gens[i].dir, v->problem[i]);
    for (unsigned i = 0; i < v->listing.unnamed && i < 8; i++)
        fprintf(stderr, "tide verify: warning: %s/%s is not named by %s (tided removes it at "
                "its next start)\n", path, v->listing.unnamed_dirs[i], TIDE_GEN_FILE);
out:
    free(v);
    return ret;
}

static int run(int argc, char **argv)
{
    tide_gen_manifest m;
    cli_args a;
    verify_flags vf = { { 0, CLI_PROGRESS_AUTO }, 0 };
    int rc, json;

    if (cli_parse(&cli_verb_verify, argc, argv, &vf, &a, &rc)) return rc;
    json = vf.fp.flag;
    verify_live = vf.live;
    rc = cli_gens_manifest(a.path, &m);
    if (rc == TIDE_ENOENT) {
        tide_err_clear();
        return verify_plain(&a, json, vf.fp.progress);
    }
    if (rc) {
        /* A manifest that does not read is a verdict on the directory. */
        if (json) {
            json_t *o = json_object();
            json_object_set_new(o, "path", json_string(a.path));
            json_object_set_new(o, "sound", json_false());
            json_object_set_new(o, "error", json_string(tide_strerror(rc)));
            json_object_set_new(o, "problem", json_string(tide_last_error()));
            cli_json_print("verify", o);
        }
        return cli_fail_store("verify", rc);
    }
    return verify_gens(a.path, json, vf.fp.progress);
}

const cli_verb cli_verb_verify = {
    .name = "verify", .usage = "verify PATH",
    .summary = "check every bucket and record; print the figures",
    .help = help_verify, .run = run,
    .options = options, .option = verify_option, .args = CLI_ARGS_PATH, .store = 1,
};
