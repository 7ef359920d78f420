/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * promcheck.h: Tide's own checks of a Prometheus text exposition, the ones
 * promtool 2.42 misses: no series twice, no family split in two, no second
 * HELP or TYPE line, every sample under a declared family, histogram buckets
 * cumulative and ending at le="+Inf" equal to _count.
 */
#ifndef TIDE_TEST_PROMCHECK_H
#define TIDE_TEST_PROMCHECK_H

#include <stddef.h>

/* 0 when `text` passes; otherwise -1 with the first problem (naming the
 * line) in msg. */
int th_prom_check(const char *text, char *msg, size_t cap);

/* The value of the sample whose name and labels are written exactly as
 * `series` ("tide_cache_bytes{cache=\"node_cache\"}"), or NaN when absent. */
double th_prom_value(const char *text, const char *series);

/* Run `promtool check metrics` on `text`. Returns its exit status, -1 when
 * it could not be run; its output goes to out (cap bytes). */
int th_promtool_check(const char *text, char *out, size_t cap);

#endif
