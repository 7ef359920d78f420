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
 *
 * Never: keep a freed mapping for reuse: tide_big_free gives it back to
 *   the kernel at once, which is what these buffers are for.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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
