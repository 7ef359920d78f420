/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_malformed_sampled.c: part 1 of test_store_malformed.c's tests,
 * sampled bytes of buckets and records damaged four ways.
 *
 * The test, its helpers and what it checks are in test_store_malformed.c;
 * this binary runs its share of them (PARTS there), so that none of the
 * three runs long on a loaded machine.
 */
#define MALFORMED_PART 1
#include "test_store_malformed.c"
