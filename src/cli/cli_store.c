/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli_store.c: the checks the store verbs share before they touch a store:
 * the key's size against the store's (put, get), the refusal while another
 * process has the files open (put, recover, rekey), the probe of the
 * store's lock (get, recover), and the size format of their output; and
 * for a node's directory with generations (the commands generations,
 * rotate, verify, get, info) the manifest probe, the second look that tells a
 * generation a rotation dropped under a reader from a damaged one, the
 * generation paths and the ISO-8601 time of the manifest's last rotation;
 * and the JSON writer of their --json.
 *
 * The library checks again at its own open (closing the window between);
 * these copies are for the messages, which name the processes and the way
 * out.
 *
 * Invariants:
 *   1. A check returns CLI_OK when the verb may go on; any other value is
 *      the status of a message already printed on stderr (cli_usage,
 *      cli_error, cli_fail): a refusal is never silent.
 *   2. cli_store_is_held holds its probe's lock only until it returns (the
 *      close releases it); a nudb.key it cannot open counts as not held,
 *      and the library's open then says what is wrong with it.
 *   3. The busy message names at most three holders (then "and N more")
 *      and says that nothing was changed, which is true: it is printed
 *      before the verb touches the store.
 *
 * Never: write to a store, or keep one of its files open after returning.
 */
#include <errno.h>
#include <jansson.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "gen/manifest.h"
#include "io/io.h"
#include "store/full.h"
#include "util/err.h"
#include "util/size.h"

int cli_json_print(const char *verb, json_t *o)
{
    int rc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(o);
    if (rc != 0) return cli_error(verb, "cannot write the JSON output");
    putchar('\n');
    return CLI_OK;
}

const char *cli_human(uint64_t bytes, char *buf, size_t cap)
{
    return tide_size_format(bytes, buf, cap);
}

int cli_check_key_size(const char *verb, const cli_args *a, unsigned key_size)
{
    const char *hex = a->key_hex;
    size_t len = a->key_len;

    if (len == key_size) return CLI_OK;
    return cli_usage(verb, "key '%.80s%s' is %zu bytes (%zu hex digits); this store's keys are "
                     "%u bytes (%u hex digits)", hex, strlen(hex) > 80 ? "..." : "",
                     len, 2 * len, key_size, 2 * key_size);
}

int cli_refuse_holders(const char *verb, const char *path, int force, const char *doing)
{
    tide_store_holder h[3];
    size_t n = 0;
    char list[400] = "";
    int rc;

    if (force) return CLI_OK;
    rc = tide_store_holders(path, NULL, h, 3, &n);
    if (rc) return cli_fail(verb, rc);
    if (n == 0) return CLI_OK;
    for (size_t i = 0; i < n && i < 3; i++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s is open in process %d (%s)",
                 i ? ", " : "", h[i].file, h[i].pid, h[i].comm);
    }
    if (n > 3) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, " and %zu more", n - 3);
    }
    return cli_error(verb, "%s: store is busy: %s. A process that has the store's files open may "
                     "be writing them (NuDB takes no lock), and %s now could undo its commits; "
                     "nothing was changed. Stop it first, or pass --force if it only reads the "
                     "store.", path, list, doing);
}

static long long size_of(const char *path, const char *name)
{
    char p[4200];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", path, name);
    return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

int cli_rekey_leftovers(const char *path, long long *dat_new, long long *key_new)
{
    *dat_new = size_of(path, "nudb.dat.new");
    *key_new = size_of(path, "nudb.key.new");
    return *dat_new >= 0 || *key_new >= 0;
}

int cli_store_is_held(const char *path, int writer_only)
{
    char key[4096];
    int fd, held = 0;

    snprintf(key, sizeof key, "%s/nudb.key", path);
    /* Non-blocking: a FIFO there must not hang the probe (the library
     * then refuses it by name). */
    fd = open(key, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return 0;
    if (flock(fd, (writer_only ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) held = errno == EWOULDBLOCK;
    close(fd);                  /* releases the probe's lock */
    return held;
}

int cli_gens_manifest(const char *path, tide_gen_manifest *m)
{
    return tide_gen_manifest_read(tide_io_posix(), path, m);
}

int cli_gens_dropped(const char *path, uint64_t id, tide_gen_manifest *m)
{
    tide_gen_manifest now;

    if (cli_gens_manifest(path, &now) != 0) {
        tide_err_clear();
        return 0;
    }
    for (unsigned i = 0; i < now.count; i++)
        if (now.gens[i].id == id) return 0;
    *m = now;
    return 1;
}

int cli_gen_path(const char *verb, const char *path, const char *dir, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%s/%s", path, dir);
    if (n < 0 || (size_t)n >= cap)
        return cli_error(verb, "%s/%s: the path is longer than %zu bytes", path, dir, cap - 1);
    return CLI_OK;
}

const char *cli_iso8601_us(uint64_t unix_us, char *buf, size_t cap)
{
    time_t secs = (time_t)(unix_us / 1000000u);
    struct tm tm;

    if (unix_us == 0 || gmtime_r(&secs, &tm) == NULL) {
        snprintf(buf, cap, "never");
        return buf;
    }
    snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(unix_us % 1000000u));
    return buf;
}
