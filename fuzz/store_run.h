/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store_run.h: one store-image input run, shared by the two store targets.
 *
 * fuzz_store_image and fuzz_store_script take the same input (a flags byte,
 * three lengths, the store's files, then a script of operations; the format
 * and the properties are in store_run.c's opening comment). They differ in
 * the operations a script may name: the read ones only, or all thirteen.
 */
#ifndef TIDE_FUZZ_STORE_RUN_H
#define TIDE_FUZZ_STORE_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "fuzz.h"

typedef enum store_run_mode {
    /* Open read-only, fetch, close, verify, visit, inspect, info: nothing
     * writes the files, no commit thread starts. Flags bit 4 maps nudb.key
     * (without it every open reads it with pread, opts.pread). */
    STORE_RUN_READ,
    /* All thirteen operations, writes, recovery and rekey included; every
     * open maps nudb.key (flags bit 4 is ignored). */
    STORE_RUN_SCRIPT,
} store_run_mode;

/* Run one input in `mode`. Returns 0, or -1 with res->msg saying which
 * property broke (fuzz.h). Leaves nothing behind. */
int store_run_one(const uint8_t *data, size_t size, fuzz_result *res, store_run_mode mode);

#endif
