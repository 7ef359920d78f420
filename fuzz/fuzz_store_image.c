/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_store_image.c: whole store images, read.
 *
 * What it feeds. A store's three files in a tide_io_sim, then a script of
 * up to 50 read operations: open read-only, fetch, close, verify, visit,
 * inspect, info (the input's format is in store_run.c's opening comment,
 * STORE_RUN_READ). Flags bit 4 maps nudb.key; without it each open reads
 * it with pread (opts.pread), so both of the store's lookup paths see the
 * fuzzed bytes. Nothing writes, and no open starts a commit thread: an
 * input costs a visit, a few opens and verifies of a small image, so this
 * target makes many more executions than fuzz_store_script, which runs the
 * same images through the write paths.
 *
 * What it asserts (store_run.c, properties 1 to 3): no crash, leak or hang;
 * every error a TIDE_E* code with a message; once verify passes, visit's
 * counts equal verify's, every fetch of a key of the image returns exactly
 * its value and every other key TIDE_ENOTFOUND, and later verifies, visits,
 * opens and inspects succeed with the same counts.
 *
 * Seeds: small sound and damaged images (make-seeds.c), a few KiB each, so
 * that the corpus stays small and each execution short.
 */
#include "fuzz.h"
#include "store_run.h"

int fuzz_store_image_one(const uint8_t *data, size_t size, fuzz_result *res)
{
    return store_run_one(data, size, res, STORE_RUN_READ);
}
