/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_put.c: `tide put PATH KEYHEX < VALUE`, one value stored durably.
 *
 * tide_store_inspect first (the key size, a pending recovery), so that a
 * wrong key fails before the value is read; then all of stdin is read with
 * read(2) (binary: nothing added or stripped), and the store opened
 * read-write (which recovers an interrupted commit), the value inserted,
 * synced, and the store closed. The library's lock refuses the open
 * (TIDE_EBUSY) while another Tide process, a node say, has the store open;
 * the holders check refuses while any other process (NuDB, which locks
 * nothing) has one of the files open, unless --force.
 *
 * Invariants:
 *   1. Status 2 means nothing was written: the key, its size and the value's
 *      are checked before the open.
 *   2. The store opened here is closed on every path, and a failing close
 *      is reported (it is the final commit).
 *
 * Never: replace a stored value (an existing key is refused, the value
 *   unchanged), or exit 0 before tide_store_sync and the close returned 0.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tide/error.h"
#include "store/full.h"

static const char help_put[] =
"NAME\n"
"    tide put - store a value under a key\n"
"\n"
"SYNOPSIS\n"
"    tide put PATH KEYHEX [--force] < VALUE\n"
"\n"
"DESCRIPTION\n"
"    Reads all of stdin as the value (binary-safe; 1 byte to 4 GiB - 1),\n"
"    opens the store read-write (running recovery if nudb.log holds an\n"
"    interrupted commit), inserts, waits for the commit that makes the\n"
"    value durable (tide_store_sync), and closes. KEYHEX is the key in hex,\n"
"    upper or lower case, exactly 2 x key_size digits.\n"
"\n"
"    The store is locked while open: put fails at once with 'store is\n"
"    busy' when a node or another put holds it, and writes nothing. It\n"
"    also refuses while any other process has one of the store's files\n"
"    open (NuDB, which takes no lock; a reader), naming the process.\n"
"\n"
"OPTIONS\n"
"    --force      write even though another process has the store's files\n"
"                 open (never while a Tide process holds its lock)\n"
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 stored and durable; 1 the key already exists (the stored value is\n"
"    unchanged), no store, store busy, I/O error; 2 bad key (not hex, or\n"
"    the wrong length for this store), empty stdin, usage error.\n"
"\n"
"EXAMPLES\n"
"    printf 'hello' | tide put db $(printf '%064x' 1)\n"
"    tide put db 00ff...ee < blob.bin\n";

static const struct option options[] = {
    { "force", no_argument, NULL, 'f' },
    { NULL, 0, NULL, 0 },
};

/* Read all of fd 0, up to TIDE_VALUE_MAX + 1 bytes. */
static int read_stdin(unsigned char **out, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);

    if (buf == NULL) return -1;
    for (;;) {
        ssize_t r;
        if (n == cap) {
            unsigned char *nb;
            if (cap > TIDE_VALUE_MAX) break;     /* over the limit: stop */
            cap *= 2;
            nb = realloc(buf, cap);
            if (nb == NULL) { free(buf); errno = ENOMEM; return -1; }
            buf = nb;
        }
        r = read(0, buf + n, cap - n);
        if (r < 0) {
            if (errno == EINTR) continue;
            free(buf);
            return -1;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    *out = buf;
    *len = n;
    return 0;
}

/* The value from stdin, checked for size. CLI_OK or the status (printed). */
static int read_value(unsigned char **value, size_t *vlen)
{
    if (isatty(0))
        fprintf(stderr, "tide put: reading the value from the terminal; end it with Ctrl-D\n");
    if (read_stdin(value, vlen) != 0)
        return cli_error("put", "reading the value from stdin: %s", strerror(errno));
    if (*vlen == 0)
        return cli_usage("put", "the value is empty (stdin gave 0 bytes); values are 1 byte to "
                         "4 GiB - 1");
    if (*vlen > TIDE_VALUE_MAX)
        return cli_error("put", "the value on stdin is larger than %llu bytes, the most a value "
                         "can hold", (unsigned long long)TIDE_VALUE_MAX);
    return CLI_OK;
}

/* Open, insert, sync, close. */
static int store_value(const cli_args *a, int force, const unsigned char *value, size_t vlen)
{
    tide_store_opts so;
    tide_store *s = NULL;
    int rc, ret;

    tide_store_opts_init(&so);
    so.ignore_holders = force;
    rc = tide_store_open(&s, a->path, &so);
    if (rc == TIDE_EBUSY)
        return cli_error("put", "%s: store is busy: another process (a node?) has it open; "
                         "nothing was written (%s)", a->path, tide_last_error());
    if (rc) return cli_fail("put", rc);
    rc = tide_store_insert(s, a->key, value, vlen);
    if (rc == TIDE_EEXIST) {
        ret = cli_error("put", "%s: key already exists (the stored value is unchanged)", a->key_hex);
        goto out;
    }
    if (rc == 0) rc = tide_store_sync(s);
    ret = rc ? cli_fail("put", rc) : CLI_OK;
out:
    rc = tide_store_close(s);
    if (rc && ret == CLI_OK) ret = cli_fail("put", rc);
    return ret;
}

static int run(int argc, char **argv)
{
    static cli_args a;
    tide_store_info in;
    unsigned char *value = NULL;
    size_t vlen = 0;
    int rc, ret, force = 0;

    if (cli_parse(&cli_verb_put, argc, argv, &force, &a, &ret)) return ret;
    rc = tide_store_inspect(a.path, NULL, &in);
    if (rc) return cli_fail("put", rc);
    ret = cli_check_key_size("put", &a, in.key_size);
    if (ret) return ret;
    ret = cli_refuse_holders("put", a.path, force, "a write");
    if (ret) return ret;
    ret = read_value(&value, &vlen);
    if (ret == CLI_OK) {
        if (in.needs_recovery)
            fprintf(stderr, "tide put: note: %s/nudb.log holds an interrupted commit; opening "
                            "read-write recovers it first\n", a.path);
        ret = store_value(&a, force, value, vlen);
    }
    free(value);
    return ret;
}

const cli_verb cli_verb_put = {
    .name = "put", .usage = "put PATH KEYHEX", .summary = "store stdin under a key",
    .help = help_put, .run = run,
    .options = options, .option = cli_option_flag, .args = CLI_ARGS_PATH_KEY, .store = 1,
    .args_text = "PATH KEYHEX (and the value on stdin)",
};
