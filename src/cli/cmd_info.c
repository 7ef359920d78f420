/*
 * cmd_info.c: `tide info PATH`, a store's headers and sizes.
 *
 * One call, tide_store_inspect: no lock, no recovery, no writes, so it is
 * safe while a node has the store open. Prints the headers as aligned text,
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
 * Never: open the store (an open would take the lock and recover).
 */
#include <jansson.h>
#include <stdio.h>

#include "cli/cli.h"
#include "tide/store.h"

static const char help_info[] =
"NAME\n"
"    tide info - print a store's headers and sizes\n"
"\n"
"SYNOPSIS\n"
"    tide info PATH [--json]\n"
"\n"
"DESCRIPTION\n"
"    Reads the headers of nudb.dat, nudb.key and nudb.log (when present)\n"
"    and the three file sizes. Takes no lock, runs no recovery, writes\n"
"    nothing: it is safe while a node has the store open.\n"
"\n"
"    Prints: file type and format version, uid, appnum, key size, salt,\n"
"    pepper, block size, load factor (raw, in 1/65536, and as a fraction),\n"
"    capacity (entries per bucket: (block_size - 8) / 18), the number of\n"
"    buckets, the sizes of nudb.dat, nudb.key and nudb.log, and whether a\n"
"    recovery is pending: nudb.log holds an unfinished commit, a crash's\n"
"    or a live writer's (NuDB takes no lock, so nothing tells them apart);\n"
"    'tide recover', when no process writes the store, undoes it.\n"
"\n"
"OPTIONS\n"
"    --json       print one JSON object instead. 64-bit identifiers (uid,\n"
"                 salt, pepper) are strings of the form \"0x...\" so that\n"
"                 no JSON reader rounds them.\n"
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

static int info_json(const char *path, const tide_store_info *in)
{
    json_t *o = json_object();
    int rc;

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
    json_object_set_new(o, "needs_recovery", json_boolean(in->needs_recovery));
    rc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (rc != 0) return cli_error("info", "cannot write the JSON output");
    putchar('\n');
    return CLI_OK;
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
    if (in->needs_recovery)
        printf("recovery      PENDING: nudb.log holds an unfinished commit (a crash's, or a live "
               "writer's); run 'tide recover' when no process writes the store\n");
    else
        printf("recovery      not needed\n");
}

static int run(int argc, char **argv)
{
    tide_store_info in;
    cli_args a;
    int rc, json = 0;

    if (cli_parse(&cli_verb_info, argc, argv, &json, &a, &rc)) return rc;
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
