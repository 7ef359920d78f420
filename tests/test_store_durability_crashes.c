/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_durability_crashes.c: part 2 of test_store_durability.c's tests,
 * the crash loop, the exhaustive crashes (at every sync and during
 * rollbacks, with and without the deferred index), the failure points on a
 * fresh deferred store and the full disk.
 *
 * The tests, their helpers and what each checks are in
 * test_store_durability.c; this binary runs its share of them (PARTS
 * there), so that none of the three runs long on a loaded machine.
 */
#define DURABILITY_PART 2
#include "test_store_durability.c"
