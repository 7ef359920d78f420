/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_get.c: `tide get PATH KEYHEX > VALUE`, one value written to stdout.
 *
 * Opens the store read-only (a shared lock) and fetches. It never recovers:
 * when nudb.log holds an unfinished commit (a crash's, or a live NuDB
 * writer's, which no lock reveals) it says so and exits 1 having written
 * nothing. A Tide writer elsewhere is read through its tide.live (the
 * library's read-only open does it). The value goes out
 * with write(2), byte for byte, nothing added.
 *
 * A node's directory with generations (tide.generations naming
 * gen-* stores) is read as the node reads it, newest first: each named
 * generation is opened read-only in turn, fetched from and closed, and the
 * first that holds the key answers (-v names it on stderr). Nothing is
 * copied forward: that is a write, and the CLI reads only. Without a
 * manifest the path is what it always was.
 *
 * Invariants:
 *   1. Nothing is ever written to the store (to no generation either).
 *   2. The store opened here is closed on every path; with generations at
 *      most one generation is open at a time.
 *   3. With generations, a generation that cannot be read (missing, a
 *      rotation deleting it, a failed read) is reported only while the
 *      manifest, read again, still names it. One a rotation dropped since
 *      the manifest was read is no fault: the lookup starts over, newest
 *      first, in the generations named now (at most GET_TRIES times), as
 *      a node's read would answer after that rotation.
 *
 * Never: add a byte to the value (a newline, an escape) or print it
 *   anywhere but stdout; open the store read-write (that would recover).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "gen/manifest.h"
#include "tide/error.h"
#include "store/full.h"
#include "util/err.h"

static const char help_get[] =
"NAME\n"
"    tide get - print the value of a key\n"
"\n"
"SYNOPSIS\n"
"    tide get PATH KEYHEX [-v] > VALUE\n"
"\n"
"DESCRIPTION\n"
"    Fetches the value stored under KEYHEX and writes it, byte for byte,\n"
"    to stdout (no newline is added). Opens the store read-only and never\n"
"    writes anything. Other readers (another get, a verify) may run\n"
"    alongside, and so may a Tide writer:\n"
"\n"
"    - While a Tide process has the store open for writing (a node, a\n"
"      put), get reads through the page that writer shares with readers\n"
"      (tide.live; 'Readers in other processes' in docs/DURABILITY.md):\n"
"      it finds every value the writer has committed (a value still in the\n"
"      writer's memory, before its commit a second later at most, is not\n"
"      seen), and a commit that splits buckets meanwhile never makes a\n"
"      present key look absent. A\n"
"      get that meets a commit in progress waits for it (at most 10 s).\n"
"      If the writer was killed in the middle of writing nudb.key, or\n"
"      its commit failed and could not be undone, get says so ('the\n"
"      store needs recovery: start its writer again') and exits 1: the\n"
"      writer's next open recovers, whoever reads. A committed value is\n"
"      seen a moment before the writer has synced it; a failed sync or a\n"
"      crash in that moment takes it back.\n"
"    - A rekey or a recovery publishes no tide.live (nor does a Tide\n"
"      from before tide.live, nor a writer that could not open tide.live:\n"
"      another user's file; its log says so); while one of them has the\n"
"      store open, get is refused at once with 'store is busy' and the\n"
"      reason. The writer's liveness is read from /proc: a get in another\n"
"      PID namespace, or under hidepid=2, cannot see it and is refused.\n"
"    - With no writer, get takes a shared lock: a writer cannot open the\n"
"      store until get is done (a fraction of a second).\n"
"    - While nudb.log holds an unfinished commit, get is refused with\n"
"      'nudb.log holds an unfinished commit of N bytes; run tide recover\n"
"      when no process writes the store'. The log is a crash's, or a live\n"
"      NuDB writer's (NuDB takes no lock, so nothing tells them apart), so\n"
"      get never recovers it: 'tide recover PATH' (or the start of the\n"
"      store's tided) does, and refuses while any process has the\n"
"      store's files open.\n"
"    - A deferred writer (tided with --store-index-lag, the default)\n"
"      killed without closing the store leaves no pre-image, only the\n"
"      idle log, and committed records nudb.key does not index yet: with\n"
"      no other process holding the store's files (other Tide readers\n"
"      aside), get reads it as it is, finding those records through an\n"
"      in-memory index of them (nothing is written); 'tide recover PATH'\n"
"      or the writer's next start indexes them. Otherwise it refuses,\n"
"      naming the process that holds the files. Only the processes this\n"
"      user may see in /proc are checked: another user's (unless get runs\n"
"      as root) or one hidden by hidepid is not seen. Each get reads all\n"
"      of those records (up to the index lag, 64 MiB by default) before\n"
"      its lookup, holding the store's shared lock: tided cannot start on\n"
"      the store meanwhile.\n"
"\n"
"    A NuDB process writing the store takes no lock, so between its\n"
"    commits get does not know it is there; a read may then meet a commit\n"
"    half written (an error, or the key not found yet). get still changes\n"
"    nothing.\n"
"\n"
"    An absent key prints 'tide get: KEYHEX: not found' on stderr.\n"
"\n"
"    A node's directory with generations (PATH holds tide.generations:\n"
"    'tide help generations') is read as the node reads it: newest\n"
"    generation first, each opened read-only in turn; the first that\n"
"    holds the key answers. Unlike the node, get copies nothing forward\n"
"    into the newest generation (it never writes), so reading an object\n"
"    here does not keep it past its next rotations. While a node runs on\n"
"    PATH each generation is read through its tide.live, as above. A\n"
"    rotation may drop a generation after get read the manifest: when a\n"
"    generation cannot be read (gone, a rotation deleting it), get reads\n"
"    the manifest again, and if it no longer names that generation, looks\n"
"    again, newest first, in those it names now (the answer a node gives\n"
"    after that rotation). Only a generation the manifest still names\n"
"    that is missing or unreadable is an error.\n"
"\n"
"OPTIONS\n"
"    -v, --verbose  say on stderr which generation answered ('tide get:\n"
"                   KEYHEX: found in generation 6 (gen-000000000006): 2\n"
"                   of 2, newest first'); nothing for a plain store\n"
"    -h, --help     print this text\n"
"\n"
"EXIT STATUS\n"
"    0 found; 1 not found, no store, store busy (a rekey or recovery has\n"
"    it open, or its writer died mid-write),\n"
"    an unfinished commit in nudb.log (nothing is read or written),\n"
"    corrupt file, I/O error; 2 bad key (not hex, or the wrong length for\n"
"    this store), usage error.\n"
"\n"
"EXAMPLES\n"
"    tide get db $(printf '%064x' 1)\n"
"    tide get db 00ff...ee > blob.bin || echo absent\n"
"    tide get -v /var/lib/tide/node $(printf '%064x' 1) > value.bin\n";

static const struct option options[] = {
    { "verbose", no_argument, NULL, 'v' },
    { NULL, 0, NULL, 0 },
};

/* Open read-only; name the two kinds of busy. CLI_OK with *s open, or the
 * status with the message in why[] (not printed yet). */
static int open_reader(const char *path, tide_store **s, char *why, size_t cap)
{
    tide_store_opts so;
    tide_store_info in;
    int rc;

    tide_store_opts_init(&so);
    so.read_only = 1;
    rc = tide_store_open(s, path, &so);
    if (rc == 0) return CLI_OK;
    /* The open's own words when an idle log was refused for a cause it
     * names (a holder, one it cannot list, tide.meta past nudb.dat). */
    if (rc == TIDE_EBUSY && tide_store_inspect(path, NULL, &in) == 0 && in.not_idle_why[0])
        snprintf(why, cap, "%s", in.not_idle_why);
    else if (rc == TIDE_EBUSY && !cli_store_is_held(path, 1) && tide_store_inspect(path, NULL, &in) == 0 &&
             in.needs_recovery)
        /* A crash's log, or a live NuDB writer's commit (it takes no lock):
         * a reader cannot tell, so it never recovers. */
        snprintf(why, cap, "%s/nudb.log holds an unfinished commit of %llu bytes (bucket "
                 "pre-images a recovery writes back); run 'tide recover %s' when no process "
                 "writes the store, or start the store's tided (nothing was read or written)",
                 path, (unsigned long long)in.log_file_bytes, path);
    else if (rc == TIDE_EBUSY)
        snprintf(why, cap, "%s: store is busy: %s", path, tide_last_error());
    else
        snprintf(why, cap, "%s: %s", tide_strerror(rc), tide_last_error());
    return rc == TIDE_EINVAL || rc == TIDE_EKEYSIZE ? CLI_USAGE : CLI_FAIL;
}

/* The verb as it was before generations. */
static int get_plain(const cli_args *a)
{
    tide_store_info in;
    tide_store *s = NULL;
    void *value = NULL;
    size_t vlen = 0;
    char why[9000];
    int rc, ret;

    ret = open_reader(a->path, &s, why, sizeof why);
    if (ret) {
        cli_error("get", "%s", why);
        return ret;
    }
    tide_store_get_info(s, &in);
    ret = cli_check_key_size("get", a, in.key_size);
    if (ret) goto out;
    rc = tide_store_fetch(s, a->key, &value, &vlen);
    if (rc == TIDE_ENOTFOUND) {
        fprintf(stderr, "tide get: %s: not found\n", a->key_hex);
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

/* Look in generation `i` of m: CLI_OK with *value set when it holds the
 * key, CLI_OK with *value NULL when it does not; or a status, with why[]
 * saying what failed (not printed yet: invariant 3), or empty when the
 * status is printed already (a key of the wrong size). */
static int get_from(const char *path, const tide_gen_manifest *m, unsigned i, const cli_args *a,
                    void **value, size_t *vlen, char *why, size_t cap)
{
    char dir[4200];
    tide_store_info in;
    tide_store *s = NULL;
    struct stat st;
    int rc, ret;

    *value = NULL;
    why[0] = '\0';
    ret = cli_gen_path("get", path, m->gens[i].dir, dir, sizeof dir);
    if (ret) return ret;
    if (stat(dir, &st) != 0) {
        snprintf(why, cap, "%s: generation %llu (%s) named by %s is missing (%s); nothing was "
                 "read", path, (unsigned long long)m->gens[i].id, m->gens[i].dir, TIDE_GEN_FILE,
                 strerror(errno));
        return CLI_FAIL;
    }
    ret = open_reader(dir, &s, why, cap);
    if (ret) return ret;
    tide_store_get_info(s, &in);
    ret = cli_check_key_size("get", a, in.key_size);
    if (ret) goto out;
    rc = tide_store_fetch(s, a->key, value, vlen);
    if (rc && rc != TIDE_ENOTFOUND) {
        snprintf(why, cap, "%s: generation %llu (%s): %s", tide_strerror(rc),
                 (unsigned long long)m->gens[i].id, dir, tide_last_error());
        ret = CLI_FAIL;
    }
out:
    rc = tide_store_close(s);
    if (rc && ret == CLI_OK) {
        snprintf(why, cap, "%s: %s", tide_strerror(rc), tide_last_error());
        ret = CLI_FAIL;
    }
    if (ret) {
        free(*value);
        *value = NULL;
    }
    return ret;
}

/* Newest first, one generation open at a time (invariant 2). CLI_OK with
 * *value set (*at the generation that answered) or NULL; or get_from's
 * failure of generation *at. */
static int look_in_all(const cli_args *a, const tide_gen_manifest *m, void **value, size_t *vlen,
                       unsigned *at, char *why, size_t cap)
{
    int ret = CLI_OK;

    *value = NULL;
    for (*at = 0; *at < m->count; (*at)++) {
        ret = get_from(a->path, m, *at, a, value, vlen, why, cap);
        if (ret || *value) break;
    }
    return ret;
}

#define GET_TRIES 8

/* Invariant 3: a generation that fails and that a rotation has dropped
 * since the manifest was read is no fault: the lookup starts over with the
 * generations the manifest names now. */
static int get_gens(const cli_args *a, tide_gen_manifest *m, int verbose)
{
    void *value = NULL;
    size_t vlen = 0;
    unsigned i = 0;
    char why[9000];
    int ret;

    for (unsigned tries = 1;; tries++) {
        ret = look_in_all(a, m, &value, &vlen, &i, why, sizeof why);
        if (ret == CLI_OK || why[0] == '\0') break;
        if (tries == GET_TRIES || !cli_gens_dropped(a->path, m->gens[i].id, m)) {
            cli_error("get", "%s", why);
            return ret;
        }
    }
    if (ret) return ret;
    if (value == NULL) {
        fprintf(stderr, "tide get: %s: not found (in none of the %u generations of %s)\n",
                a->key_hex, m->count, a->path);
        return CLI_FAIL;
    }
    if (verbose)
        fprintf(stderr, "tide get: %s: found in generation %llu (%s): %u of %u, newest first\n",
                a->key_hex, (unsigned long long)m->gens[i].id, m->gens[i].dir, i + 1, m->count);
    if (cli_write_all(1, value, vlen) != 0)
        ret = cli_error("get", "writing %zu bytes to stdout: %s", vlen, strerror(errno));
    free(value);
    return ret;
}

static int run(int argc, char **argv)
{
    static cli_args a;
    tide_gen_manifest m;
    int rc, ret, verbose = 0;

    if (cli_parse(&cli_verb_get, argc, argv, &verbose, &a, &ret)) return ret;
    rc = cli_gens_manifest(a.path, &m);
    if (rc == TIDE_ENOENT) {
        tide_err_clear();
        return get_plain(&a);
    }
    if (rc) return cli_fail_store("get", rc);
    return get_gens(&a, &m, verbose);
}

const cli_verb cli_verb_get = {
    .name = "get", .usage = "get PATH KEYHEX", .summary = "print a key's value on stdout",
    .help = help_get, .run = run,
    .options = options, .option = cli_option_flag, .args = CLI_ARGS_PATH_KEY, .store = 1, .args_text = "PATH KEYHEX",
    .short_options = "v",
};
