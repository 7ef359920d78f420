/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_keymap_rollbacks.c: part 1 of test_store_keymap.c's tests,
 * fetches through the key file's map while rollbacks cut nudb.key under
 * it.
 *
 * The test, its helpers and what it checks are in test_store_keymap.c;
 * this binary runs its share of them (PARTS there), so that none of the
 * three runs long on a loaded machine.
 */
#define KEYMAP_PART 1
#include "test_store_keymap.c"
