// SPDX-License-Identifier: BSD-2-Clause
// The commit's sort by bucket, alone: tide_big_sort with a comparator that
// computes two buckets (the merge sort the commit used) against
// tide_big_sort_keyed with the 49-bit bucket order (the radix sort), on N
// 16-byte entries of random 48-bit hashes in a table of B buckets. CPU
// seconds of each, three rounds alternating.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util/bigbuf.h"
typedef struct { uint64_t w0, w1; } placed;
typedef struct { uint64_t buckets, mask, half; unsigned shift; } table;
static table T;
static uint64_t hash_of(const placed *p) { return (p->w0 >> 48) | (p->w1 & 0xffffffffull) << 16; }
static uint64_t bucket(const table *t, uint64_t h) { uint64_t n = h & t->mask; return n >= t->buckets ? n - t->half : n; }
static int cmp(const void *a, const void *b) {
    uint64_t ha = hash_of(a), hb = hash_of(b), x = bucket(&T, ha), y = bucket(&T, hb);
    if (x != y) return x < y ? -1 : 1;
    if (ha != hb) return ha < hb ? -1 : 1;
    return 0;
}
static uint64_t order(const void *e, const void *arg) {
    const table *t = arg; uint64_t h = hash_of(e);
    return bucket(t, h) << (48 - t->shift) | h >> t->shift;
}
static double cpu(void) { struct timespec ts; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); return ts.tv_sec + ts.tv_nsec / 1e9; }
int main(int argc, char **argv) {
    size_t n = argc > 1 ? strtoull(argv[1], 0, 10) : 30000000;
    uint64_t B = argc > 2 ? strtoull(argv[2], 0, 10) : 900000, mod = 1;
    while (mod < B) mod <<= 1;
    T = (table){ B, mod - 1, mod / 2, (unsigned)__builtin_ctzll(mod) - 1 };
    placed *src = malloc(n * sizeof *src), *v = malloc(n * sizeof *v), *w = malloc(n * sizeof *w);
    uint64_t s = 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t h = s >> 16;
        src[i] = (placed){ i | (h & 0xffff) << 48, (h >> 16) | 200ull << 32 };
    }
    for (int r = 1; r <= 3; r++) {
        memcpy(v, src, n * sizeof *v); double t0 = cpu();
        tide_big_sort(v, n, sizeof *v, cmp); double t1 = cpu();
        memcpy(w, src, n * sizeof *w); double t2 = cpu();
        tide_big_sort_keyed(w, n, sizeof *w, 49, order, &T); double t3 = cpu();
        printf("round %d n %zu buckets %llu: merge %.3f s (%.1f ns/entry), radix %.3f s (%.1f ns/entry), same order: %s\n",
               r, n, (unsigned long long)B, t1 - t0, (t1 - t0) * 1e9 / n, t3 - t2, (t3 - t2) * 1e9 / n,
               memcmp(v, w, n * sizeof *v) == 0 ? "yes" : "NO");
    }
    return 0;
}
