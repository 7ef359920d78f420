/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz.h: what Tide's fuzz targets share with the two programs that run them.
 *
 * A target is a function of one input that either returns 0 or reports the
 * first property it saw broken:
 *
 *     int fuzz_X_one(const uint8_t *data, size_t size, fuzz_result *res);
 *
 * Two programs call it. Under `make fuzz`, fuzz/libfuzzer_shim.c (built by
 * clang with -fsanitize=fuzzer,address,undefined and -DFUZZ_ONE=fuzz_X_one)
 * defines LLVMFuzzerTestOneInput: it calls the target and abort()s with the
 * message when a property fails, so libFuzzer saves the input as a crasher.
 * Under `make test`, tests/test_fuzz_regress.c (built by gcc, no libFuzzer)
 * calls every target on every file of fuzz/corpus/<target>/ and
 * fuzz/crashers/<target>/ and names the files whose run failed.
 *
 * So a target never aborts on its own and never leaves state behind: it
 * frees what it allocated, closes every store and destroys its sim on every
 * path (one way out), and reports a broken property through FUZZ_CHECK,
 * which records the message and jumps to that way out. A sanitizer report
 * or a signal is the other kind of failure; neither program can continue
 * after one, so the regression test names the file it was running first.
 *
 * Nothing here touches the disk: store images live in a tide_io_sim.
 */
#ifndef TIDE_FUZZ_H
#define TIDE_FUZZ_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FUZZ_MSG_MAX 1024

typedef struct fuzz_result {
    char msg[FUZZ_MSG_MAX];   /* the first broken property; "" when none */
    int  failed;
} fuzz_result;

/* Record the first failure (later ones would only repeat its cause). */
static inline int fuzz_fail(fuzz_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline int fuzz_fail(fuzz_result *res, const char *fmt, ...)
{
    if (!res->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(res->msg, sizeof res->msg, fmt, ap);
        va_end(ap);
        res->failed = 1;
    }
    return -1;
}

/* In a function with a `fuzz_result *res` and an `out:` label. */
#define FUZZ_CHECK(cond, ...)                                   \
    do {                                                        \
        if (!(cond)) {                                          \
            fuzz_fail(res, __VA_ARGS__);                        \
            goto out;                                           \
        }                                                       \
    } while (0)

/* The targets. Each returns 0, or -1 with res->msg saying what broke. */
int fuzz_headers_one(const uint8_t *data, size_t size, fuzz_result *res);
int fuzz_bucket_one(const uint8_t *data, size_t size, fuzz_result *res);
int fuzz_store_image_one(const uint8_t *data, size_t size, fuzz_result *res);
int fuzz_store_script_one(const uint8_t *data, size_t size, fuzz_result *res);
int fuzz_http_one(const uint8_t *data, size_t size, fuzz_result *res);

/* A tiny reader over the input, for targets that decode parameters from
 * it. Reading past the end gives zeros, so every input is a valid one. */
typedef struct fuzz_in {
    const uint8_t *p;
    size_t left;
} fuzz_in;

static inline uint8_t fuzz_u8(fuzz_in *in)
{
    if (in->left == 0) return 0;
    in->left--;
    return *in->p++;
}

/* `n` (<= 8) bytes, big-endian. */
static inline uint64_t fuzz_be(fuzz_in *in, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) v = (v << 8) | fuzz_u8(in);
    return v;
}

/* Take up to `n` bytes: *p points at them, the count is returned. */
static inline size_t fuzz_take(fuzz_in *in, size_t n, const uint8_t **p)
{
    if (n > in->left) n = in->left;
    *p = in->p;
    in->p += n;
    in->left -= n;
    return n;
}

#endif
