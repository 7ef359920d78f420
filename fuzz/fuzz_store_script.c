/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_store_script.c: whole store images, then a script that writes.
 *
 * What it feeds. A store's three files in a tide_io_sim, then a script of
 * up to 50 of all thirteen operations: open, open read-only, fetch, insert,
 * sync, close, verify, recover, visit, inspect, info, rekey, reopen (the
 * input's format is in store_run.c's opening comment, STORE_RUN_SCRIPT).
 * Flags bit 3 runs commits in the background; every open maps nudb.key.
 * Each read-write open starts the commit thread, and rekey rebuilds the key
 * file, so an input costs several milliseconds: fuzz_store_image covers the
 * read paths many times faster.
 *
 * What it asserts (store_run.c, properties 1 to 3): no crash, leak or hang;
 * every error a TIDE_E* code with a message; once verify passes, the store
 * is held to a model: fetches return the exact values, inserts of present
 * keys are TIDE_EEXIST and of new keys succeed, no commit fails, later
 * verifies count the model's keys, and every insert survives close and
 * reopen.
 *
 * Seeds: stores under 64 KiB grown by Tide from the fixtures, rekeyed, cut
 * short and crashed half way through a commit (make-seeds.c).
 */
#include "fuzz.h"
#include "store_run.h"

int fuzz_store_script_one(const uint8_t *data, size_t size, fuzz_result *res)
{
    return store_run_one(data, size, res, STORE_RUN_SCRIPT);
}
