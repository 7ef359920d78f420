/*
 * bigbuf.c: page mappings for large short-lived buffers (see bigbuf.h).
 *
 * Invariant: a buffer of n bytes is exactly the mapping of round_up(n, page)
 * bytes at the returned address; nothing else is kept.
 */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/bigbuf.h"

static size_t page_round(size_t n)
{
    static size_t page;
    if (page == 0) {
        long p = sysconf(_SC_PAGESIZE);
        page = p > 0 ? (size_t)p : 4096;
    }
    return (n + page - 1) & ~(page - 1);
}

void *tide_big_alloc(size_t n)
{
    void *p;
    if (n == 0) n = 1;
    p = mmap(NULL, page_round(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
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
