/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hist.c: fixed-bucket duration histograms (see hist.h).
 *
 * Invariants:
 *   1. count == sum of bucket[] once no observe is in progress.
 *   2. A snapshot's buckets are cumulative and its count is its +Inf
 *      bucket, even while observes run (Prometheus requires it).
 *
 * Never: take a lock or allocate: an observe is three relaxed atomic adds.
 */
#include "util/hist.h"

const double TIDE_HIST_BOUNDS_S[TIDE_HIST_BUCKETS] = {
    0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10
};

void tide_hist_observe(tide_hist *h, uint64_t ns)
{
    int i = 0;
    double s = (double)ns / 1e9;

    while (i < TIDE_HIST_BUCKETS && s > TIDE_HIST_BOUNDS_S[i]) i++;
    __atomic_fetch_add(&h->bucket[i], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&h->sum_ns, ns, __ATOMIC_RELAXED);
    __atomic_fetch_add(&h->count, 1, __ATOMIC_RELAXED);
}

void tide_hist_snapshot(const tide_hist *h, tide_hist *out)
{
    uint64_t run = 0;

    for (int i = 0; i <= TIDE_HIST_BUCKETS; i++) {
        run += __atomic_load_n(&h->bucket[i], __ATOMIC_RELAXED);
        out->bucket[i] = run;
    }
    out->sum_ns = __atomic_load_n(&h->sum_ns, __ATOMIC_RELAXED);
    /* Prometheus requires the +Inf bucket to equal _count. */
    out->count = run;
}
