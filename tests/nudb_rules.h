/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nudb_rules.h: what NuDB 2.0.9 does with a store's files, emulated from
 * its documented rules (no NuDB code), so that tests can ask whether a
 * state Tide leaves is one NuDB opens, refuses or would damage.
 *
 * NuDB's open (basic_store::open) runs its recovery first and stops at the
 * first error; its recovery (recover.ipp) reads and checks, in this order,
 * before it writes anything:
 *   1. nudb.dat's header: type "nudb.dat", version 2, key size >= 1;
 *   2. nudb.key opens (read-write);
 *   3. nudb.log: missing, nothing to do; shorter than its 62-byte header,
 *      it is removed; else its header: type "nudb.log", version 2, pepper
 *      equal to XXH64 of the salt, key size >= 1;
 *   4. key_file_size 0: nudb.dat cut to dat_file_size, nudb.key REMOVED
 *      (no check against nudb.key at all);
 *   5. nudb.key's header (type, version, key size, pepper, load factor,
 *      capacity, at least one bucket), then nudb.dat's against it (uid,
 *      appnum, key size) and the log's against it (uid, appnum, key size,
 *      salt, pepper, block size);
 *   6. then it writes each complete log record back (index <= buckets),
 *      cuts nudb.dat and nudb.key to the log's sizes and removes the log.
 * After a recovery, open checks nudb.dat's and nudb.key's headers and that
 * they agree (uid, appnum, key size); it creates an empty nudb.log before
 * those checks, so a refused open can leave one.
 *
 * Every function works through a tide_io, so the simulated file system's
 * crash states can be asked too.
 */
#ifndef TIDE_TEST_NUDB_RULES_H
#define TIDE_TEST_NUDB_RULES_H

#include <stddef.h>
#include <stdint.h>

struct tide_io;

typedef enum th_nudb_verdict {
    TH_NUDB_CLEAN = 0,        /* no log (or a short one, which it removes) */
    TH_NUDB_RECOVERS,         /* it rolls the log back (steps 4 or 6) */
    TH_NUDB_REFUSES           /* an error before any write: nothing changes */
} th_nudb_verdict;

typedef struct th_nudb_result {
    th_nudb_verdict verdict;
    uint64_t dat_to, key_to;  /* RECOVERS: the sizes it cuts the files to */
    int removes_key;          /* RECOVERS with key_file_size 0 */
    char why[256];            /* REFUSES: the check, as NuDB names it */
} th_nudb_result;

/* NuDB's recovery of the store in `dir`, steps 1-6. With `apply`, a
 * recovery it would make is made (records written back, files cut, log
 * removed). 0, or -1 when a file could not be read or written. */
int th_nudb_recover(struct tide_io *io, const char *dir, int apply, th_nudb_result *res);

/* NuDB's open (after its recovery found nothing to do): nudb.dat's and
 * nudb.key's headers, each sound, and agreeing. 1 it opens, 0 it refuses
 * (`why` names the check), -1 a file could not be read. */
int th_nudb_opens(struct tide_io *io, const char *dir, char *why, size_t cap);

#endif
