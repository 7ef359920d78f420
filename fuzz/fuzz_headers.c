/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_headers.c: the three file headers, decoded from arbitrary bytes.
 *
 * What it feeds. The input's first bytes, copied into a heap buffer of
 * exactly the header's size (zero-filled when the input is shorter), are
 * decoded as a nudb.dat header (92 bytes), a nudb.key header (104) and a
 * nudb.log header (62) by ti_fmt_decode_*. One input serves all three:
 * the type string selects which decoder can accept it, and the seeds hold
 * the headers of every fixture file. The buffers are exactly sized so
 * AddressSanitizer reports a decoder that reads one byte past its header.
 *
 * What it asserts.
 *   1. A decoder returns 0 or one of the codes format.h lists for it
 *      (ENOTSTORE, EVERSION, ECORRUPT, and EHASH for the key header), and a
 *      rejection leaves a message in tide_last_error() that names the file
 *      and the field's offset.
 *   2. What a decoder accepts is in range: version 2, key size >= 1, block
 *      size >= 104, a load factor above 0, a pepper that is XXH64 of the
 *      salt (format.c's invariant 2).
 *   3. encode(decode(x)) gives back x's meaningful bytes exactly (type,
 *      version, ids, sizes: every field the decoder read) and zeros for the
 *      reserved rest, and decoding that image again succeeds with the same
 *      struct, field by field (format.c's invariant 1).
 * No crash, no sanitizer report, on any input.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "store/format.h"
#include "tide/error.h"
#include "util/err.h"

static const char *DAT_NAME = "fuzz/nudb.dat";
static const char *KEY_NAME = "fuzz/nudb.key";
static const char *LOG_NAME = "fuzz/nudb.log";

/* The bytes of each header that carry fields; the rest is reserved. */
#define DAT_MEANINGFUL 28
#define KEY_MEANINGFUL 48
#define LOG_MEANINGFUL 62

/* A heap copy of the input's first `n` bytes, zero-filled to `n`. */
static uint8_t *exact_copy(const uint8_t *data, size_t size, size_t n)
{
    uint8_t *b = malloc(n);
    if (b == NULL) return NULL;
    memset(b, 0, n);
    memcpy(b, data, size < n ? size : n);
    return b;
}

/* Property 1 for a rejection. */
static int check_rejection(int rc, int allow_hash, const char *name, fuzz_result *res)
{
    const char *msg = tide_last_error();

    FUZZ_CHECK(rc == TIDE_ENOTSTORE || rc == TIDE_EVERSION || rc == TIDE_ECORRUPT ||
               (allow_hash && rc == TIDE_EHASH),
               "%s: decode returned %d (%s), not a header rejection code", name, rc,
               tide_strerror(rc));
    FUZZ_CHECK(msg[0] != '\0', "%s: decode returned %d with an empty tide_last_error()", name, rc);
    FUZZ_CHECK(strstr(msg, name) != NULL && strstr(msg, "offset ") != NULL,
               "%s: rejection message '%s' does not name the file and the offset", name, msg);
    return 0;
out:
    return -1;
}

/* Property 3's byte half: the image equals the input on the meaningful
 * bytes, and is zero after them. */
static int check_image(const uint8_t *in, const uint8_t *img, size_t meaningful, size_t total,
                       const char *name, fuzz_result *res)
{
    for (size_t i = 0; i < total; i++) {
        uint8_t want = i < meaningful ? in[i] : 0;
        FUZZ_CHECK(img[i] == want, "%s: encode(decode(x)) byte %zu is 0x%02x, expected 0x%02x",
                   name, i, img[i], want);
    }
    return 0;
out:
    return -1;
}

static int dat_header(const uint8_t *data, size_t size, fuzz_result *res)
{
    uint8_t *in = exact_copy(data, size, TIDE_DAT_HEADER_SIZE);
    uint8_t *img = malloc(TIDE_DAT_HEADER_SIZE);
    tide_dat_header h, h2;
    int rc, ret = -1;

    FUZZ_CHECK(in && img, "out of memory");
    tide_err_clear();
    rc = ti_fmt_decode_dat_header(in, &h, DAT_NAME);
    if (rc != 0) {
        ret = check_rejection(rc, 0, DAT_NAME, res);
        goto out;
    }
    FUZZ_CHECK(h.version == TIDE_FMT_VERSION && h.key_size >= 1,
               "%s: accepted version %u, key size %u", DAT_NAME, h.version, h.key_size);
    ti_fmt_encode_dat_header(img, &h);
    if (check_image(in, img, DAT_MEANINGFUL, TIDE_DAT_HEADER_SIZE, DAT_NAME, res)) goto out;
    rc = ti_fmt_decode_dat_header(img, &h2, DAT_NAME);
    FUZZ_CHECK(rc == 0, "%s: re-decoding the encoded header failed: %d %s", DAT_NAME, rc,
               tide_last_error());
    FUZZ_CHECK(h2.version == h.version && h2.uid == h.uid && h2.appnum == h.appnum &&
               h2.key_size == h.key_size, "%s: decode(encode(h)) differs from h", DAT_NAME);
    ret = 0;
out:
    free(in);
    free(img);
    return ret;
}

static int key_header(const uint8_t *data, size_t size, fuzz_result *res)
{
    uint8_t *in = exact_copy(data, size, TIDE_KEY_HEADER_SIZE);
    uint8_t *img = malloc(TIDE_KEY_HEADER_SIZE);
    tide_key_header h, h2;
    int rc, ret = -1;

    FUZZ_CHECK(in && img, "out of memory");
    tide_err_clear();
    rc = ti_fmt_decode_key_header(in, &h, KEY_NAME);
    if (rc != 0) {
        ret = check_rejection(rc, 1, KEY_NAME, res);
        goto out;
    }
    FUZZ_CHECK(h.version == TIDE_FMT_VERSION && h.key_size >= 1 &&
               h.block_size >= TIDE_KEY_HEADER_SIZE && h.load_factor > 0,
               "%s: accepted version %u, key size %u, block size %u, load factor %u", KEY_NAME,
               h.version, h.key_size, h.block_size, h.load_factor);
    FUZZ_CHECK(h.pepper == ti_fmt_pepper(h.salt),
               "%s: accepted pepper %016llx for salt %016llx", KEY_NAME,
               (unsigned long long)h.pepper, (unsigned long long)h.salt);
    ti_fmt_encode_key_header(img, &h);
    if (check_image(in, img, KEY_MEANINGFUL, TIDE_KEY_HEADER_SIZE, KEY_NAME, res)) goto out;
    rc = ti_fmt_decode_key_header(img, &h2, KEY_NAME);
    FUZZ_CHECK(rc == 0, "%s: re-decoding the encoded header failed: %d %s", KEY_NAME, rc,
               tide_last_error());
    FUZZ_CHECK(h2.version == h.version && h2.uid == h.uid && h2.appnum == h.appnum &&
               h2.key_size == h.key_size && h2.salt == h.salt && h2.pepper == h.pepper &&
               h2.block_size == h.block_size && h2.load_factor == h.load_factor,
               "%s: decode(encode(h)) differs from h", KEY_NAME);
    ret = 0;
out:
    free(in);
    free(img);
    return ret;
}

static int log_header(const uint8_t *data, size_t size, fuzz_result *res)
{
    uint8_t *in = exact_copy(data, size, TIDE_LOG_HEADER_SIZE);
    uint8_t *img = malloc(TIDE_LOG_HEADER_SIZE);
    tide_log_header h, h2;
    int rc, ret = -1;

    FUZZ_CHECK(in && img, "out of memory");
    tide_err_clear();
    rc = ti_fmt_decode_log_header(in, &h, LOG_NAME);
    if (rc != 0) {
        ret = check_rejection(rc, 0, LOG_NAME, res);
        goto out;
    }
    FUZZ_CHECK(h.version == TIDE_FMT_VERSION && h.key_size >= 1 &&
               h.block_size >= TIDE_KEY_HEADER_SIZE,
               "%s: accepted version %u, key size %u, block size %u", LOG_NAME, h.version,
               h.key_size, h.block_size);
    ti_fmt_encode_log_header(img, &h);
    if (check_image(in, img, LOG_MEANINGFUL, TIDE_LOG_HEADER_SIZE, LOG_NAME, res)) goto out;
    rc = ti_fmt_decode_log_header(img, &h2, LOG_NAME);
    FUZZ_CHECK(rc == 0, "%s: re-decoding the encoded header failed: %d %s", LOG_NAME, rc,
               tide_last_error());
    FUZZ_CHECK(h2.version == h.version && h2.uid == h.uid && h2.appnum == h.appnum &&
               h2.key_size == h.key_size && h2.salt == h.salt && h2.pepper == h.pepper &&
               h2.block_size == h.block_size && h2.key_file_size == h.key_file_size &&
               h2.dat_file_size == h.dat_file_size && h2.deferred == h.deferred,
               "%s: decode(encode(h)) differs from h", LOG_NAME);
    ret = 0;
out:
    free(in);
    free(img);
    return ret;
}

int fuzz_headers_one(const uint8_t *data, size_t size, fuzz_result *res)
{
    if (dat_header(data, size, res)) return -1;
    if (key_header(data, size, res)) return -1;
    if (log_header(data, size, res)) return -1;
    return 0;
}
