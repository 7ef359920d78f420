/*
 * cmd_verify.c: `tide verify PATH`, every bucket and record checked.
 *
 * tide_store_verify does the work: a read-only open (a shared lock: readers
 * may run alongside, a writer may not), one pass over nudb.key and one over
 * nudb.dat. This prints the figures when the store is sound, the first
 * problem with its file and offset when it is not, and for the one
 * unsound verdict that still has figures (spill records of another block
 * size only) both. With --json the verdict is one object either way.
 *
 * Invariants:
 *   1. The exit status is CLI_OK only when tide_store_verify returned 0
 *      (sound); an unsound store exits CLI_FAIL even when its figures are
 *      printed.
 *   2. Figures are printed only for a verdict: a store that could not be
 *      checked (missing, busy, recovery pending) prints nothing on stdout.
 *
 * Never: write to the store, or recover it (the log may be a live NuDB
 * writer's).
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "tide/error.h"
#include "tide/store.h"

static const char help_verify[] =
"NAME\n"
"    tide verify - check a store's files and print its figures\n"
"\n"
"SYNOPSIS\n"
"    tide verify PATH [--json]\n"
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
"    A store whose nudb.log holds an unfinished commit is not checked, and\n"
"    verify writes nothing to it (a read-only tool never recovers: the log\n"
"    may be a live NuDB writer's): run 'tide recover PATH' first, when no\n"
"    process writes the store.\n"
"\n"
"OPTIONS\n"
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
"                 nothing is printed on stdout.\n"
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 sound; 1 not sound (the problem is printed), no store, store busy\n"
"    (a writer has it open), recovery pending, I/O error; 2 usage error.\n"
"\n"
"COST\n"
"    One pass over nudb.key, one data-file read per key, one sequential\n"
"    pass over nudb.dat; memory about 8 bytes per key.\n"
"\n"
"EXAMPLES\n"
"    tide verify /var/lib/tide/db\n"
"    tide verify --json db | jq '.sound, .waste'\n"
"    tide verify db || echo 'db is damaged'\n";

static const struct option options[] = {
    { "json", no_argument, NULL, 'j' },
    { NULL, 0, NULL, 0 },
};

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
        printf("verdict          sound: every entry reaches its record, every record is reached "
               "once\n");
    printf("keys             %llu\n", (unsigned long long)r->keys);
    printf("value bytes      %llu (%s)\n", (unsigned long long)r->value_bytes,
           cli_human(r->value_bytes, b1, sizeof b1));
    printf("data records     %llu\n", (unsigned long long)r->data_records);
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

static int run(int argc, char **argv)
{
    tide_verify_report r;
    cli_args a;
    int rc, json = 0;

    if (cli_parse(&cli_verb_verify, argc, argv, &json, &a, &rc)) return rc;
    memset(&r, 0, sizeof r);
    rc = tide_store_verify(a.path, NULL, &r);
    if (rc == 0) {
        if (json) return verify_json(a.path, &r, 0);
        verify_text(a.path, &r, 0);
        return CLI_OK;
    }
    /* A verdict of unsound is still a result: --json prints it. A store
     * that could not be checked at all (missing, busy, needing recovery)
     * gives no verdict, only the error. */
    if (json && rc == TIDE_ECORRUPT) verify_json(a.path, &r, rc);
    else if (rc == TIDE_ECORRUPT && r.foreign_spills_only) verify_text(a.path, &r, 1);
    return cli_fail_store("verify", rc);
}

const cli_verb cli_verb_verify = {
    .name = "verify", .usage = "verify PATH",
    .summary = "check every bucket and record; print the figures",
    .help = help_verify, .run = run,
    .options = options, .option = cli_option_flag, .args = CLI_ARGS_PATH, .store = 1,
};
