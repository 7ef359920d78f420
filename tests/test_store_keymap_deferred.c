/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_keymap_deferred.c: part 2 of test_store_keymap.c's tests,
 * fetches through the data map while failed syncs of the deferred index's
 * appends cut nudb.dat, never below what the map reads.
 *
 * The test, its helpers and what it checks are in test_store_keymap.c;
 * this binary runs its share of them (PARTS there), so that none of the
 * three runs long on a loaded machine.
 */
#define KEYMAP_PART 2
#include "test_store_keymap.c"
