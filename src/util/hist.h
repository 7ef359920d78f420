/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hist.h: a fixed-bucket histogram of durations, for Prometheus.
 *
 * Every histogram in Tide has the same bucket bounds (TIDE_HIST_BOUNDS_S),
 * chosen to cover what Tide times: a cache sweep (microseconds), a trim
 * (milliseconds to a second on a large heap) and a commit (milliseconds to
 * seconds). One layout means one exposition routine and dashboards whose
 * buckets line up.
 *
 * Thread safety: observe may race with itself and with snapshot: each
 * counter is a relaxed atomic. A snapshot taken during an observe may count
 * it in the sum but not yet in a bucket (or the reverse); that is the
 * tolerance Prometheus histograms have anyway.
 * Cost: observe is a short loop over 14 bounds and two atomic adds.
 */
#ifndef TIDE_UTIL_HIST_H
#define TIDE_UTIL_HIST_H

#include <stdint.h>

#define TIDE_HIST_BUCKETS 14

/* The upper bounds in seconds, ascending; the +Inf bucket follows. */
extern const double TIDE_HIST_BOUNDS_S[TIDE_HIST_BUCKETS];

typedef struct tide_hist {
    uint64_t bucket[TIDE_HIST_BUCKETS + 1];   /* not cumulative; last is +Inf */
    uint64_t sum_ns;
    uint64_t count;
} tide_hist;

/* Zero-initialised memory is an empty histogram. */
void tide_hist_observe(tide_hist *h, uint64_t ns);

/* A copy with cumulative buckets (bucket[i] = observations <= bound i;
 * bucket[TIDE_HIST_BUCKETS] == count), as the exposition wants them. */
void tide_hist_snapshot(const tide_hist *h, tide_hist *cumulative);

#endif
