/*
 * cmd_get.c: `tide get PATH KEYHEX > VALUE`, one value written to stdout.
 *
 * Opens the store read-only (a shared lock) and fetches. It never recovers:
 * when nudb.log holds an unfinished commit (a crash's, or a live NuDB
 * writer's, which no lock reveals) it says so and exits 1 having written
 * nothing. A Tide writer elsewhere gives TIDE_EBUSY. The value goes out
 * with write(2), byte for byte, nothing added.
 *
 * Invariants:
 *   1. Nothing is ever written to the store.
 *   2. The store opened here is closed on every path.
 *
 * Never: add a byte to the value (a newline, an escape) or print it
 *   anywhere but stdout; open the store read-write (that would recover).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tide/error.h"
#include "tide/store.h"

static const char help_get[] =
"NAME\n"
"    tide get - print the value of a key\n"
"\n"
"SYNOPSIS\n"
"    tide get PATH KEYHEX > VALUE\n"
"\n"
"DESCRIPTION\n"
"    Fetches the value stored under KEYHEX and writes it, byte for byte,\n"
"    to stdout (no newline is added). Opens the store read-only with a\n"
"    shared lock and never writes anything. Other readers (another get, a\n"
"    verify) may run alongside; a writer may not:\n"
"\n"
"    - While a Tide process has the store open for writing (a node, a\n"
"      put, a rekey) get is refused at once with 'store is busy': read\n"
"      through that process instead (the node's GET /v1/objects/KEYHEX).\n"
"    - While nudb.log holds an unfinished commit, get is refused with\n"
"      'nudb.log holds an unfinished commit of N bytes; run tide recover\n"
"      when no process writes the store'. The log is a crash's, or a live\n"
"      NuDB writer's (NuDB takes no lock, so nothing tells them apart), so\n"
"      get never recovers it: 'tide recover PATH' does, and refuses while\n"
"      any process has the store's files open.\n"
"\n"
"    A NuDB process writing the store takes no lock, so between its\n"
"    commits get does not know it is there; a read may then meet a commit\n"
"    half written (an error, or the key not found yet). get still changes\n"
"    nothing.\n"
"\n"
"    An absent key prints 'tide get: KEYHEX: not found' on stderr.\n"
"\n"
"OPTIONS\n"
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 found; 1 not found, no store, store busy (a writer has it open),\n"
"    an unfinished commit in nudb.log (nothing is read or written),\n"
"    corrupt file, I/O error; 2 bad key (not hex, or the wrong length for\n"
"    this store), usage error.\n"
"\n"
"EXAMPLES\n"
"    tide get db $(printf '%064x' 1)\n"
"    tide get db 00ff...ee > blob.bin || echo absent\n";

static const struct option options[] = {
    { NULL, 0, NULL, 0 },
};

/* Open read-only; name the two kinds of busy. CLI_OK with *s open, or the
 * status (printed). */
static int open_reader(const char *path, tide_store **s)
{
    tide_store_opts so;
    tide_store_info in;
    int rc;

    tide_store_opts_init(&so);
    so.read_only = 1;
    rc = tide_store_open(s, path, &so);
    if (rc == TIDE_EBUSY && !cli_store_is_held(path, 1) && tide_store_inspect(path, NULL, &in) == 0 &&
        in.needs_recovery)
        /* A crash's log, or a live NuDB writer's commit (it takes no lock):
         * a reader cannot tell, so it never recovers. */
        return cli_error("get", "%s/nudb.log holds an unfinished commit of %llu bytes; run "
                         "'tide recover %s' when no process writes the store (nothing was read "
                         "or written)", path, (unsigned long long)in.log_file_bytes, path);
    if (rc == TIDE_EBUSY)
        return cli_error("get", "%s: store is busy: another process (a node?) has it open for "
                         "writing; read through it instead", path);
    if (rc) return cli_fail("get", rc);
    return CLI_OK;
}

static int run(int argc, char **argv)
{
    static cli_args a;
    tide_store_info in;
    tide_store *s = NULL;
    void *value = NULL;
    size_t vlen = 0;
    int rc, ret;

    if (cli_parse(&cli_verb_get, argc, argv, NULL, &a, &ret)) return ret;
    ret = open_reader(a.path, &s);
    if (ret) return ret;
    tide_store_get_info(s, &in);
    ret = cli_check_key_size("get", &a, in.key_size);
    if (ret) goto out;
    rc = tide_store_fetch(s, a.key, &value, &vlen);
    if (rc == TIDE_ENOTFOUND) {
        fprintf(stderr, "tide get: %s: not found\n", a.key_hex);
        ret = CLI_FAIL;
        goto out;
    }
    if (rc) { ret = cli_fail("get", rc); goto out; }
    if (cli_write_all(1, value, vlen) != 0)
        ret = cli_error("get", "writing %zu bytes to stdout: %s", vlen, strerror(errno));
out:
    free(value);
    rc = tide_store_close(s);
    if (rc && ret == CLI_OK) ret = cli_fail("get", rc);
    return ret;
}

const cli_verb cli_verb_get = {
    .name = "get", .usage = "get PATH KEYHEX", .summary = "print a key's value on stdout",
    .help = help_get, .run = run,
    .options = options, .args = CLI_ARGS_PATH_KEY, .store = 1, .args_text = "PATH KEYHEX",
};
