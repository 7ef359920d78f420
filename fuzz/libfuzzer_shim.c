/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libfuzzer_shim.c: libFuzzer's entry point for one target.
 *
 * Built once per target by `make fuzz-build` with -DFUZZ_ONE=fuzz_X_one.
 * The target reports a broken property by returning -1 with a message; here
 * that becomes a printed message and abort(), the crash libFuzzer saves as
 * fuzz/crashers/<target>/crash-<sha1>. Sanitizer reports need nothing from
 * us: they abort by themselves (-fno-sanitize-recover=all).
 *
 * The store's own log goes quiet (TIDE_LOG_OFF): a fuzzed image makes it
 * warn on almost every input, and libFuzzer's output is what matters here.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "util/log.h"

#ifndef FUZZ_ONE
#error "build with -DFUZZ_ONE=fuzz_<target>_one"
#endif

#define FUZZ_STR2(x) #x
#define FUZZ_STR(x) FUZZ_STR2(x)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tide_log_set_level(TIDE_LOG_OFF);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_result res = { .msg = "", .failed = 0 };

    if (FUZZ_ONE(data, size, &res) != 0 || res.failed) {
        fprintf(stderr, "%s: property broken: %s\n", FUZZ_STR(FUZZ_ONE),
                res.msg[0] ? res.msg : "(no message)");
        abort();
    }
    return 0;
}
