/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * holders.c: who else has the store's files open.
 *
 * Tide's writers lock nudb.key (flock), so two Tide handles never write
 * one store at once. NuDB takes no lock at all: an XRP Ledger node writing
 * its store is invisible to flock, and a nudb.log it is in the middle of
 * looks exactly like one a crash left. Recovering that "crash" undoes the
 * live writer's commit under it. So before a read-write open, a recovery
 * or a rekey, Tide asks the file system which other processes have
 * nudb.dat, nudb.key or nudb.log open (io->holders: /proc/PID/fd on Linux,
 * matched by device and inode) and refuses, naming the first, unless told
 * to go ahead.
 *
 * Invariants:
 *   1. The check never blocks and never writes; it only adds a refusal.
 *   2. A refusal names a process (pid and name) and says how many more
 *      there are, so the operator can find and stop it.
 *
 * Never: refuse a read-only open for a holder; a reader changes nothing,
 *   whoever else writes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_impl.h"
#include "util/err.h"

static const char *const file_names[3] = { "nudb.dat", "nudb.key", "nudb.log" };

static int list_holders(tide_io *io, const char *dir, tide_io_holder *out, size_t cap,
                        size_t *count)
{
    char *paths[3] = { NULL, NULL, NULL };
    int rc = 0;

    *count = 0;
    if (io->holders == NULL) return 0;
    for (int i = 0; i < 3; i++)
        if ((paths[i] = ti_path_join(dir, file_names[i])) == NULL)
            rc = tide_err_set(TIDE_ENOMEM, "holders: out of memory");
    if (rc == 0) rc = io->holders(io, (const char *const *)paths, 3, out, cap, count);
    for (int i = 0; i < 3; i++) free(paths[i]);
    return rc;
}

int tide_store_holders(const char *dir, tide_io *io, tide_store_holder *out, size_t cap,
                       size_t *count)
{
    tide_io_holder h[16];
    size_t n = 0;
    int rc;

    tide_err_clear();
    if (io == NULL) io = tide_io_posix();
    *count = 0;
    /* At most 16 are named (out beyond that is left alone); *count is
     * the whole number. */
    rc = list_holders(io, dir, h, sizeof h / sizeof h[0], &n);
    if (rc) return rc;
    for (size_t i = 0; i < n && i < cap && i < sizeof h / sizeof h[0]; i++) {
        out[i].pid = h[i].pid;
        snprintf(out[i].comm, sizeof out[i].comm, "%s", h[i].comm);
        snprintf(out[i].file, sizeof out[i].file, "%s", file_names[h[i].path]);
    }
    *count = n;
    return 0;
}

int ti_store_refuse_holders(tide_io *io, const char *dir, const char *doing)
{
    tide_io_holder h[1];
    size_t n = 0;
    int rc = list_holders(io, dir, h, 1, &n);

    if (rc || n == 0) return rc;
    if (n == 1)
        return tide_err_set(TIDE_EBUSY, "%s: %s is open in process %d (%s): a process with the "
                            "store's files open may be writing them (NuDB takes no lock), so %s now "
                            "could undo its work; stop it, or force this if it only reads; nothing "
                            "was changed", dir, file_names[h[0].path], h[0].pid, h[0].comm, doing);
    return tide_err_set(TIDE_EBUSY, "%s: %s is open in process %d (%s) and %zu more process%s: a "
                        "process with the store's files open may be writing them (NuDB takes no "
                        "lock), so %s now could undo its work; stop them, or force this if they "
                        "only read; nothing was changed", dir, file_names[h[0].path], h[0].pid,
                        h[0].comm, n - 1, n == 2 ? "" : "es", doing);
}
