/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * archive_io.h: the archive's sealed generations as a read-only file
 * system (a tide_io), so that the store's own code opens an archived
 * generation and looks a key up in it exactly as it does on a disk: the
 * bucket read in nudb.key, the record read in nudb.dat, spill records
 * followed, each a ranged read of one RADOS object.
 *
 * Paths: the store's directory is "rados:POOL/PREFIX/gen-%012llu" (the
 * name messages show); its nudb.dat and nudb.key read the generation's
 * chunks (catalog.h); nudb.log and every other file do not exist, so a
 * store opened on it has nothing to recover. It must be opened read-only
 * with tide_store_opts.pread set: nothing is mapped, nothing written.
 *
 * Beyond io.h's contract: a read the cluster does not answer within the
 * connection's timeout is TIDE_EUNAVAIL (the store passes it up), so a
 * caller can answer "try again later" rather than "the store is broken".
 */
#ifndef TIDE_ARCHIVE_IO_H
#define TIDE_ARCHIVE_IO_H

#include <stdint.h>

#include "archive/rados.h"
#include "io/io.h"

typedef struct tide_archive_io tide_archive_io;

/* What the file system needs of one sealed generation, given its id:
 * 0 and the sizes, or TIDE_ENOENT (no such sealed generation). Called at
 * each open of a file, from any thread. */
typedef int (*tide_archive_io_lookup_fn)(void *arg, uint64_t id, uint64_t *dat_bytes,
                                         uint64_t *key_bytes, uint64_t *chunk_bytes);

/* A file system over `prefix`'s sealed generations in r's pool. The
 * connection must outlive it. TIDE_ENOMEM. */
int tide_archive_io_new(tide_archive_io **out, tide_rados *r, const char *prefix,
                        tide_archive_io_lookup_fn lookup, void *arg);

/* Free it; every file opened on it must be closed first. NULL: no-op. */
void tide_archive_io_free(tide_archive_io *a);

/* The tide_io to pass as tide_store_opts.io. */
tide_io *tide_archive_io_io(tide_archive_io *a);

/* The directory name of generation `id` ("rados:POOL/PREFIX/gen-..."). */
void tide_archive_io_dir(const tide_archive_io *a, uint64_t id, char *buf, size_t cap);

#endif
