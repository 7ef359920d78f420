/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_create.c: `tide create PATH`, an empty store.
 *
 * Makes the last component of PATH when it is missing (never its parents),
 * calls tide_store_create, then tide_store_inspect to print what was made.
 *
 * Invariants:
 *   1. Status 2 means nothing was created: every option is checked first.
 *   2. A directory made here is removed again when the create fails.
 *
 * Never: write into a directory that already holds nudb.dat or nudb.key
 * (the library refuses with TIDE_EEXIST, and this says so).
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tide/error.h"
#include "store/full.h"

static const char help_create[] =
"NAME\n"
"    tide create - make an empty store\n"
"\n"
"SYNOPSIS\n"
"    tide create PATH [--key-size N] [--block-size N] [--load-factor F]\n"
"                     [--appnum N]\n"
"\n"
"DESCRIPTION\n"
"    Creates the directory PATH when it is missing (only PATH itself: its\n"
"    parent must exist) and writes an empty store into it: nudb.dat and\n"
"    nudb.key with their headers and one empty bucket, both synced, then\n"
"    the directory. The uid and the hash salt are random. Prints the new\n"
"    store's settings on stdout.\n"
"\n"
"    Nothing is changed when PATH already holds a nudb.dat or nudb.key, or\n"
"    when an option is bad (a directory made by this command is removed\n"
"    again when the create fails).\n"
"\n"
"OPTIONS\n"
"    --key-size N     bytes per key, 1 to 65535. Default 32.\n"
"    --block-size N   key-file block size: a power of two from 4096 to\n"
"                     32768. Default 4096. An invalid value (5000, abc)\n"
"                     is not an error: it prints a warning that names the\n"
"                     value and uses 4096, as the node's config does for\n"
"                     [node_db] nudb_block_size.\n"
"    --load-factor F  target bucket fullness, greater than 0 and at most\n"
"                     1. Default 0.5. Stored in 1/65536 units.\n"
"    --appnum N       application number stored in the headers (any\n"
"                     64-bit unsigned value, decimal or 0x hex). Default 1.\n"
"    -h, --help       print this text\n"
"\n"
"EXIT STATUS\n"
"    0 created; 1 PATH's parent is missing, a store is already there, or\n"
"    a write failed; 2 bad option or argument (nothing is created).\n"
"\n"
"EXAMPLES\n"
"    tide create /var/lib/tide/db\n"
"    tide create db8 --key-size 8 --block-size 16384 --load-factor 0.75\n";

static const struct option options[] = {
    { "key-size",    required_argument, NULL, 'k' },
    { "block-size",  required_argument, NULL, 'b' },
    { "load-factor", required_argument, NULL, 'f' },
    { "appnum",      required_argument, NULL, 'a' },
    { NULL, 0, NULL, 0 },
};

static int option(void *arg, int id, const char *val)
{
    tide_store_create_opts *o = arg;
    char warning[256];
    uint64_t v;

    switch (id) {
    case 'k':
        if (cli_parse_u64(val, 1, CLI_KEY_MAX, &v) != 0)
            return cli_usage("create", "--key-size '%s' is not a whole number from 1 to %u",
                             val, CLI_KEY_MAX);
        o->key_size = (unsigned)v;
        break;
    case 'b':
        o->block_size = tide_block_size_parse(val, warning, sizeof warning);
        if (warning[0]) fprintf(stderr, "tide create: warning: %s\n", warning);
        break;
    case 'f':
        if (cli_parse_double(val, &o->load_factor) != 0 ||
            !(o->load_factor > 0.0 && o->load_factor <= 1.0))
            return cli_usage("create", "--load-factor '%s' is not a number greater than 0 "
                             "and at most 1", val);
        break;
    default:
        if (cli_parse_u64(val, 0, UINT64_MAX, &v) != 0)
            return cli_usage("create", "--appnum '%s' is not a whole number from 0 to "
                             "18446744073709551615 (decimal or 0x hex)", val);
        o->appnum = v;
        break;
    }
    return CLI_OK;
}

/* The directory: make only its last component. *made = 1 when this did. */
static int make_dir(const char *path, int *made)
{
    struct stat st;
    int e;

    *made = 0;
    if (stat(path, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return cli_error("create", "%s: exists and is not a directory", path);
        return CLI_OK;
    }
    if (errno != ENOENT) return cli_error("create", "%s: %s", path, strerror(errno));
    if (mkdir(path, 0755) == 0) {
        *made = 1;
        return CLI_OK;
    }
    e = errno;
    if (e == ENOENT) {
        char copy[4096];
        snprintf(copy, sizeof copy, "%s", path);
        return cli_error("create", "cannot create directory '%s': its parent '%s' does not exist "
                         "(tide create makes only the last component)", path, dirname(copy));
    }
    return cli_error("create", "cannot create directory '%s': %s", path, strerror(e));
}

static int run(int argc, char **argv)
{
    tide_store_create_opts o;
    tide_store_info info;
    cli_args a;
    int rc, made_dir;

    tide_store_create_opts_init(&o);
    o.key_size = 32;
    if (cli_parse(&cli_verb_create, argc, argv, &o, &a, &rc)) return rc;
    if (a.path[0] == '\0') return cli_usage("create", "PATH is empty");
    rc = make_dir(a.path, &made_dir);
    if (rc) return rc;

    rc = tide_store_create(a.path, &o);
    if (rc) {
        if (made_dir) rmdir(a.path);
        if (rc == TIDE_EEXIST)
            return cli_error("create", "%s: a store is already there (nudb.dat or nudb.key exists); "
                             "nothing was changed", a.path);
        return cli_fail("create", rc);
    }
    rc = tide_store_inspect(a.path, NULL, &info);
    if (rc) return cli_fail("create", rc);
    printf("created %s: key size %u, block size %u, load factor %.4g (%u/65536), appnum %llu, "
           "uid 0x%016llx, salt 0x%016llx\n",
           a.path, info.key_size, info.block_size, info.load_factor, info.load_factor_raw,
           (unsigned long long)info.appnum, (unsigned long long)info.uid,
           (unsigned long long)info.salt);
    return CLI_OK;
}

const cli_verb cli_verb_create = {
    .name = "create", .usage = "create PATH", .summary = "make an empty store",
    .help = help_create, .run = run,
    .options = options, .option = option, .args = CLI_ARGS_PATH,
};
