/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_archive_impl.h: what the archive benchmark's two files share:
 * bench_archive.c (the bench's life: options, the generation, the runs'
 * order, the statistics, the removals) and bench_archive_measure.c (one
 * measurement each: an upload, a read phase, a write variant).
 */
#ifndef TIDE_BENCH_ARCHIVE_IMPL_H
#define TIDE_BENCH_ARCHIVE_IMPL_H

#include <stdint.h>

#include "bench/bench_archive.h"

/* Upload the generation under `prefix` at `inflight` writes in flight
 * and wait for its seal (tide_bench_archive_upload says what is timed).
 * The prefix's objects are removed after unless keep_objects (the read
 * copy), and after a failure whatever it says. */
int ti_bench_archive_upload(tide_bench_archive *b, unsigned inflight, const char *prefix,
                            int keep_objects, tide_bench_archive_upload *out);

/* Read phase `id` (TIDE_BA_*) over the opts.keys keys the caller put in
 * b->keys (and their items in b->item), present or absent as the phase
 * wants, after a first fetch of b->open_key. */
int ti_bench_archive_read(tide_bench_archive *b, int id, tide_bench_archive_read *out);

/* Write variant `which` (TIDE_BA_SYNC_*) of run `run`: a fresh node in
 * its own directory and prefix, both removed after. */
int ti_bench_archive_sync(tide_bench_archive *b, unsigned run, int which,
                          tide_bench_archive_sync *out);

/* Remove every object whose name starts with "PREFIX." from the pool.
 * rados.h's errors. Cost: a walk of the pool's object list, a remove each. */
int ti_bench_archive_remove(tide_bench_archive *b, const char *prefix);

/* Remove a directory and all it holds (through tide_io); absent is 0. */
int ti_bench_archive_remove_tree(const char *dir);

/* Sort lat[0..n) and fill p50, p90, p99 (nearest rank), max and total. */
void ti_bench_archive_percentiles(uint64_t *lat, uint64_t n, uint64_t *p50, uint64_t *p90,
                                  uint64_t *p99, uint64_t *max, uint64_t *total);

#endif
