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
 * Tide's readers (live.c, reader.c) are told apart from other
 * holders by their tide.live: a reader opens tide.live before any of the
 * three files and keeps it open (with LOCK_SH) while it reads, and nothing
 * but a Tide reader opens tide.live. A process that has both one of the
 * three files and tide.live open is a Tide reader: it writes nothing and
 * follows the writer's seqlock, so a writer's open (which recovers under
 * an odd seq) need not refuse it. Recovery alone, a rekey and a verify's
 * open still do (ti_store_refuse_holders: they change the files without
 * the seqlock, or rename nudb.key under the reader).
 *
 * What is seen: the processes whose /proc/PID/fd this user may read. A
 * process of another user (the caller not root) or one hidden by hidepid
 * is skipped, not counted: "no holder" means none of those seen. A Tide
 * writer cannot hide so from a reader (the reader's shared lock on
 * nudb.key keeps it out); a NuDB writer of another user can.
 *
 * Never: refuse a read-only open for a holder; a reader changes nothing,
 *   whoever else writes (the idle view, recover.c, is the exception: it
 *   reads a log as a stopped writer's only when none is seen).
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

#define HOLDERS_SEEN 64

/* Drop from h[0..*n) the processes that have tide.live open too (Tide's
 * readers); *n_all, the count list_holders gave, drops by as many. A
 * reader beyond the first HOLDERS_SEEN holders is not seen: it counts as
 * a holder (a refusal too many, never one too few). */
static int drop_readers(tide_io *io, const char *dir, tide_io_holder *h, size_t *n, size_t *n_all)
{
    tide_io_holder r[HOLDERS_SEEN];
    size_t nr = 0, kept = 0;
    char *live = ti_path_join(dir, "tide.live");
    const char *paths[1] = { live };
    int rc;

    if (live == NULL) return tide_err_set(TIDE_ENOMEM, "holders: out of memory");
    rc = io->holders(io, paths, 1, r, HOLDERS_SEEN, &nr);
    free(live);
    if (rc) return rc;
    for (size_t i = 0; i < *n; i++) {
        int reader = 0;
        for (size_t j = 0; j < nr && j < HOLDERS_SEEN && !reader; j++) reader = r[j].pid == h[i].pid;
        if (!reader) h[kept++] = h[i];
    }
    *n_all -= *n - kept;
    *n = kept;
    return 0;
}

int ti_store_refuse_holders(tide_io *io, const char *dir, const char *doing)
{
    return ti_store_refuse_holders_ex(io, dir, doing, 0);
}

int ti_store_other_holders(tide_io *io, const char *dir, int readers_ok, ti_store_holder_seen *out)
{
    tide_io_holder h[HOLDERS_SEEN];
    size_t n = 0, seen;
    int rc = list_holders(io, dir, h, HOLDERS_SEEN, &n);

    memset(out, 0, sizeof *out);
    if (rc || n == 0) return rc;
    seen = n < HOLDERS_SEEN ? n : HOLDERS_SEEN;
    if (readers_ok && io->holders && (rc = drop_readers(io, dir, h, &seen, &n)) != 0) return rc;
    out->count = n;
    if (n == 0) return 0;
    out->pid = h[0].pid;
    snprintf(out->comm, sizeof out->comm, "%s", h[0].comm);
    out->file = file_names[h[0].path];
    return 0;
}

int ti_store_refuse_holders_ex(tide_io *io, const char *dir, const char *doing, int readers_ok)
{
    ti_store_holder_seen h;
    char why[512];
    int rc = ti_store_other_holders(io, dir, readers_ok, &h);

    if (rc) {
        /* Unseen holders are not no holders: refuse, and say how to go on. */
        snprintf(why, sizeof why, "%s", tide_last_error());
        return tide_err_set(rc, "%s: the processes that have the store's files open cannot be "
                            "listed (%s), and one of them may be writing them (NuDB takes no "
                            "lock), so %s is refused; run this as root or as the node's user "
                            "with /proc readable, or force it if no other process can be writing "
                            "the store; nothing was changed", dir, why, doing);
    }
    if (h.count == 0) return 0;
    if (h.count == 1)
        return tide_err_set(TIDE_EBUSY, "%s: %s is open in process %d (%s): a process with the "
                            "store's files open may be writing them (NuDB takes no lock), so %s now "
                            "could undo its work; stop it, or force this if it only reads; nothing "
                            "was changed", dir, h.file, h.pid, h.comm, doing);
    return tide_err_set(TIDE_EBUSY, "%s: %s is open in process %d (%s) and %zu more process%s: a "
                        "process with the store's files open may be writing them (NuDB takes no "
                        "lock), so %s now could undo its work; stop them, or force this if they "
                        "only read; nothing was changed", dir, h.file, h.pid, h.comm, h.count - 1,
                        h.count == 2 ? "" : "es", doing);
}
