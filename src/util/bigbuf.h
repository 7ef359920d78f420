/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bigbuf.h: large short-lived buffers that go back to the kernel when freed.
 *
 * A commit needs megabytes for a moment (the log image, the batch's entry
 * list, write buffers). From malloc, those megabytes would stay resident in
 * the allocator's free lists after the commit (glibc raises its mmap
 * threshold after the first large free, so later large blocks come from the
 * heap): the RSS ghost Tide exists to avoid. These buffers are mappings of
 * their own, unmapped on free, so a store's resident memory between commits
 * is what it holds, not what it once held.
 *
 * Sizes are rounded up to whole pages; callers pass the size they asked for
 * back to free and realloc. Thread-safe. Pages are resident only once
 * touched, except tide_big_alloc_resident's.
 */
#ifndef TIDE_BIGBUF_H
#define TIDE_BIGBUF_H
#include <stddef.h>
#include <stdint.h>

/* A zero-filled mapping of at least n bytes (n > 0), or NULL. */
void *tide_big_alloc(size_t n);
/* As tide_big_alloc, with every page made resident by the map call itself
 * (MAP_POPULATE): for a table whose every page will be written soon (a
 * hash table filled at random), where touching the pages one by one costs
 * a fault each, and two (a zero page mapped, then copied) when the first
 * touch reads. From 64 MiB it asks for huge pages (MADV_HUGEPAGE), and where
 * the kernel cannot populate it (before Linux 5.14) its pages come at their
 * first touch. Cost: the whole size resident at once, and with the
 * kernel's default THP defrag setting ("madvise") the map may compact
 * memory to find huge pages, a pause its caller takes. */
void *tide_big_alloc_resident(size_t n);
/* Grow or shrink (contents kept up to the smaller size); NULL on failure,
 * when `p` is unchanged. p may be NULL (then old must be 0). */
void *tide_big_realloc(void *p, size_t old, size_t n);
/* Unmap; NULL is a no-op. */
void tide_big_free(void *p, size_t n);

/*
 * Sort like qsort(3), stable, with the scratch space in a mapping of its
 * own. glibc's qsort takes a malloc'd buffer as large as the array for its
 * merge sort, and a commit sorting 200 000 entries would leave those
 * megabytes resident in the commit thread's malloc arena for good. Arrays
 * under 64 KiB go to qsort (its scratch is then on the stack or small).
 * Returns 0, or TIDE_ENOMEM (the array unchanged) when the scratch cannot
 * be mapped.
 */
int tide_big_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/*
 * Sort stably by an unsigned key of key_bits bits (1..64) that key(elem,
 * arg) computes from each element: a least-significant-digit radix sort,
 * 11 bits a pass. Where tide_big_sort calls a comparator about n log2(n)
 * times and moves every element log2(n) times (25 times for 30 million),
 * this calls key() and moves every element once a pass: ceil(key_bits / 11)
 * passes, and one more that counts (a pass whose digit is the same for every
 * element is skipped). key() must return the same value for an element
 * every time, with no bit above key_bits set (asserted).
 * Memory: a scratch of n * size bytes and the digit counts (16 KiB a pass,
 * 96 KiB at most), resident (tide_big_alloc_resident) and unmapped before it
 * returns when the elements are 64 KiB or more (malloc'd and freed below).
 * Returns 0, or TIDE_ENOMEM (the array unchanged) when the scratch cannot be
 * had. Below 32 elements, an insertion sort, with one element of scratch.
 */
int tide_big_sort_keyed(void *base, size_t n, size_t size, unsigned key_bits,
                        uint64_t (*key)(const void *elem, const void *arg), const void *arg);
/* The scratch bytes tide_big_sort_keyed takes for these arguments (0 below
 * 32 elements, which need one element's: on the stack up to 64 bytes). No
 * allocation. */
size_t tide_big_sort_keyed_scratch(size_t n, size_t size, unsigned key_bits);

#endif
