/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * filter.h: a Bloom filter of one archived generation's keys, so that a
 * read that misses every local generation asks RADOS only of the archived
 * generations that may hold the key.
 *
 * A key's hash is XXH3-64 of its bytes, the same in every generation (a
 * generation's own hash is salted, so it would have to be computed once
 * per generation). With b bits per key and k = round(b ln 2) probes the
 * chance that a generation without the key says "maybe" is about
 * 0.6185^b: 0.8% at the default 10 bits per key. A miss over n archived
 * generations with filters then costs about 0.008 n RADOS reads instead of
 * n; a generation without a filter in memory costs one bucket read.
 *
 * The object PREFIX.gen-ID.filter holds (big-endian, as NuDB's files):
 *     0   "TIDEBLM1"     magic
 *     8   u64 bits       the bit array's length, a multiple of 64
 *     16  u32 probes     k
 *     20  u32 zero
 *     24  u64 keys       how many keys were added
 *     32  bits/8 bytes   the bit array
 *
 * Thread safety: a filter is built by one thread; once built, any number
 * of threads may ask it.
 */
#ifndef TIDE_ARCHIVE_FILTER_H
#define TIDE_ARCHIVE_FILTER_H

#include <stddef.h>
#include <stdint.h>

#define TIDE_ARCHIVE_FILTER_HEADER 32

typedef struct tide_archive_filter tide_archive_filter;

/* The hash a filter takes for `key`. */
uint64_t tide_archive_filter_hash(const void *key, size_t len);

/* An empty filter sized for `keys` keys at `bits_per_key` (1..32). Its
 * memory (the bytes tide_archive_filter_bytes says) is counted under
 * memory consumer `account` (a tide_mem_account id, or -1: none) until
 * freed. TIDE_ENOMEM; TIDE_EINVAL for bits_per_key out of range. */
int tide_archive_filter_new(tide_archive_filter **out, uint64_t keys, unsigned bits_per_key,
                            int account);

void tide_archive_filter_free(tide_archive_filter *f);

void tide_archive_filter_add(tide_archive_filter *f, uint64_t hash);

/* 0: the key was never added. 1: it may have been. Cost: k bit tests. */
int tide_archive_filter_may_hold(const tide_archive_filter *f, uint64_t hash);

/* The bytes it holds in memory (its bit array and header). */
size_t tide_archive_filter_bytes(const tide_archive_filter *f);

/* The object's bytes: a pointer into the filter (valid while it lives)
 * and their length. The header is written at the call. */
const uint8_t *tide_archive_filter_image(tide_archive_filter *f, size_t *len);

/* A filter from an object's `len` bytes (copied). TIDE_ECORRUPT naming
 * `name` when they are not a filter; TIDE_ENOMEM. */
int tide_archive_filter_load(tide_archive_filter **out, const void *bytes, size_t len,
                             const char *name, int account);

#endif
