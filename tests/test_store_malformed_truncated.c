/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_store_malformed_truncated.c: part 2 of test_store_malformed.c's tests,
 * each file truncated at every record boundary and one byte either side.
 *
 * The test, its helpers and what it checks are in test_store_malformed.c;
 * this binary runs its share of them (PARTS there), so that none of the
 * three runs long on a loaded machine.
 */
#define MALFORMED_PART 2
#include "test_store_malformed.c"
