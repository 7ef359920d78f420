/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_durability_deferred.c: part 1 of test_store_durability.c's tests,
 * the failure points on the deferred spill fixture.
 *
 * The tests, their helpers and what each checks are in
 * test_store_durability.c; this binary runs its share of them (PARTS
 * there), so that none of the three runs long on a loaded machine.
 */
#define DURABILITY_PART 1
#include "test_store_durability.c"
