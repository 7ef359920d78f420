/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bigbuf.c: page mappings for large short-lived buffers (see bigbuf.h).
 *
 * Invariants:
 *   1. A buffer of n bytes is exactly the mapping of round_up(n, page)
 *      bytes at the returned address (a page for n = 0); nothing else is
 *      kept.
 *   2. tide_big_sort sorts below 64 KiB with qsort; above, it maps one
 *      scratch of n * size bytes, unmapped before it returns, and when
 *      that map fails it returns TIDE_ENOMEM with base unchanged.
 *   3. tide_big_sort_keyed's passes are stable counting sorts, each by the
 *      next 11 bits of the key from the lowest, so after the last the array
 *      is ordered by the whole key and, within a key, as it came in. Its
 *      scratch (the elements' copy and the digit counts) is mapped when the
 *      elements are 64 KiB or more and malloc'd below, and freed before it
 *      returns; below 32 elements there is none but one element's.
 *
 * Never: keep a freed mapping for reuse: tide_big_free gives it back to
 *   the kernel at once, which is what these buffers are for.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/assert.h"
#include "util/bigbuf.h"
#include "util/err.h"

static size_t page_round(size_t n)
{
    static size_t page;
    if (page == 0) {
        long p = sysconf(_SC_PAGESIZE);
        page = p > 0 ? (size_t)p : 4096;
    }
    return (n + page - 1) & ~(page - 1);
}

/* A private anonymous mapping of n bytes (a page for 0), with `flags`. */
static void *map_anonymous(size_t n, int flags)
{
    void *p = mmap(NULL, page_round(n ? n : 1), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void *tide_big_alloc(size_t n)
{
    return map_anonymous(n, 0);
}

/* From this size a resident buffer asks for huge pages (MADV_HUGEPAGE: the
 * kernel's default THP setting, "madvise", gives them only when asked). A
 * table filled and searched at random misses the TLB on nearly every
 * access once it is larger than the TLB's reach with 4 KiB pages (a few
 * MiB), and each such miss is a page walk, which costs the most in a
 * virtual machine; with 2 MiB pages a table of 1 GiB is 512 entries. Below
 * 64 MiB the memory compaction a huge page may need costs more than the
 * walks it saves (measured with the deferred index's tail: from 2 MiB, a
 * load of 1M items took 11% more CPU, one of 100M 4% less). */
#define HUGE_FROM (64u << 20)

void *tide_big_alloc_resident(size_t n)
{
    void *p;

    if (n < HUGE_FROM) return map_anonymous(n, MAP_POPULATE);
    /* MAP_POPULATE would fill it with small pages before the advice. */
    if ((p = map_anonymous(n, 0)) == NULL) return NULL;
    (void)madvise(p, page_round(n), MADV_HUGEPAGE);
    /* Before Linux 5.14 (EINVAL), or short of memory, the pages come at
     * their first touch instead, as tide_big_alloc's do. */
    (void)madvise(p, page_round(n), MADV_POPULATE_WRITE);
    return p;
}

void *tide_big_realloc(void *p, size_t old, size_t n)
{
    void *q;
    if (p == NULL) return tide_big_alloc(n);
    if (n == 0) n = 1;
    if (page_round(old) == page_round(n)) return p;
    q = mremap(p, page_round(old), page_round(n), MREMAP_MAYMOVE);
    return q == MAP_FAILED ? NULL : q;
}

void tide_big_free(void *p, size_t n)
{
    if (p) munmap(p, page_round(n ? n : 1));
}

/* Copy one element: the sizes the store sorts (8, 16 and 24 bytes) as
 * fixed-size copies the compiler inlines. */
static inline void copy_elem(uint8_t *to, const uint8_t *from, size_t size)
{
    switch (size) {
    case 8: memcpy(to, from, 8); break;
    case 16: memcpy(to, from, 16); break;
    case 24: memcpy(to, from, 24); break;
    default: memcpy(to, from, size); break;
    }
}

#define RADIX_BITS 11
#define RADIX (1u << RADIX_BITS)
#define INSERTION_BELOW 32

/* Stable: an element moves left only past larger keys. `tmp` holds one. */
static void insertion_sort_keyed(uint8_t *a, size_t n, size_t size, uint8_t *tmp,
                                 uint64_t (*key)(const void *, const void *), const void *arg)
{
    for (size_t i = 1; i < n; i++) {
        uint64_t k = key(a + i * size, arg);
        size_t j = i;
        while (j > 0 && key(a + (j - 1) * size, arg) > k) j--;
        if (j == i) continue;
        memcpy(tmp, a + i * size, size);
        memmove(a + (j + 1) * size, a + j * size, (i - j) * size);
        memcpy(a + j * size, tmp, size);
    }
}

/* The elements' copy rounded up to 8 bytes, so that the counts after it are
 * aligned, then a row of RADIX counts for each pass. */
size_t tide_big_sort_keyed_scratch(size_t n, size_t size, unsigned key_bits)
{
    size_t passes = (key_bits + RADIX_BITS - 1) / RADIX_BITS;
    if (n < INSERTION_BELOW) return 0;
    return ((n * size + 7) & ~(size_t)7) + passes * RADIX * sizeof(size_t);
}

int tide_big_sort_keyed(void *base, size_t n, size_t size, unsigned key_bits,
                        uint64_t (*key)(const void *elem, const void *arg), const void *arg)
{
    size_t bytes = n * size, (*count)[RADIX];
    unsigned passes = (key_bits + RADIX_BITS - 1) / RADIX_BITS;
    size_t count_bytes = passes * sizeof *count, scratch_bytes = tide_big_sort_keyed_scratch(n, size, key_bits);
    /* The scratch is the elements' copy, then the digit counts. */
    uint8_t *a = base, *scratch = NULL, *from, *to;
    int mapped = bytes >= (64u << 10);

    TIDE_ASSERT(key_bits >= 1 && key_bits <= 64);
    if (n < 2) return 0;
    if (n < INSERTION_BELOW) {
        uint8_t one[64], *tmp = size <= sizeof one ? one : malloc(size);
        if (tmp == NULL) return tide_err_set(TIDE_ENOMEM, "sort: cannot have %zu bytes of scratch", size);
        insertion_sort_keyed(a, n, size, tmp, key, arg);
        if (tmp != one) free(tmp);
        return 0;
    }
    scratch = mapped ? tide_big_alloc_resident(scratch_bytes) : malloc(scratch_bytes);
    if (scratch == NULL) return tide_err_set(TIDE_ENOMEM, "sort: cannot have %zu bytes of scratch", scratch_bytes);
    count = (size_t (*)[RADIX])(scratch + scratch_bytes - count_bytes);
    memset(count, 0, count_bytes);
    for (size_t i = 0; i < n; i++) {
        uint64_t k = key(a + i * size, arg);
        TIDE_ASSERT(key_bits == 64 || k >> key_bits == 0);
        for (unsigned p = 0; p < passes; p++) count[p][(k >> (p * RADIX_BITS)) & (RADIX - 1)]++;
    }
    from = a;
    to = scratch;
    for (unsigned p = 0; p < passes; p++) {
        size_t *c = count[p], sum = 0;
        unsigned shift = p * RADIX_BITS;
        int one_digit = 0;
        for (unsigned d = 0; d < RADIX; d++) {
            size_t here = c[d];
            if (here == n) one_digit = 1;
            c[d] = sum;           /* where the first element of digit d goes */
            sum += here;
        }
        if (one_digit) continue;  /* every element has this digit: already in order */
        for (size_t i = 0; i < n; i++) {
            const uint8_t *e = from + i * size;
            copy_elem(to + c[(key(e, arg) >> shift) & (RADIX - 1)]++ * size, e, size);
        }
        uint8_t *t = from; from = to; to = t;
    }
    if (from != a) memcpy(a, from, bytes);
    if (mapped) tide_big_free(scratch, scratch_bytes);
    else free(scratch);
    return 0;
}

int tide_big_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    size_t bytes = n * size;
    uint8_t *a = base, *b, *from, *to;

    if (n < 2) return 0;
    if (bytes < (64u << 10)) {
        qsort(base, n, size, cmp);
        return 0;
    }
    b = tide_big_alloc(bytes);
    if (b == NULL) return tide_err_set(TIDE_ENOMEM, "sort: cannot map %zu bytes of scratch", bytes);
    /* Bottom-up merge sort, runs of `width` elements, ping-ponging a <-> b. */
    from = a;
    to = b;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                if (cmp(from + j * size, from + i * size) < 0) {
                    memcpy(to + k * size, from + j * size, size); j++;
                } else {
                    memcpy(to + k * size, from + i * size, size); i++;
                }
                k++;
            }
            if (i < mid) memcpy(to + k * size, from + i * size, (mid - i) * size), k += mid - i;
            if (j < hi) memcpy(to + k * size, from + j * size, (hi - j) * size);
        }
        uint8_t *t = from; from = to; to = t;
    }
    if (from != a) memcpy(a, from, bytes);
    tide_big_free(b, bytes);
    return 0;
}
