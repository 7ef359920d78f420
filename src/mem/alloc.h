/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * alloc.h: which allocator serves malloc, what it holds, how it is tuned,
 * and how to make it give memory back.
 *
 * Tide runs on whichever allocator the process got: glibc's (the default),
 * or jemalloc, tcmalloc or mimalloc, either linked into the binary or put in
 * front of libc with LD_PRELOAD. Under AddressSanitizer or ThreadSanitizer
 * the sanitizer's allocator serves malloc, and this module says so rather
 * than pretend it is glibc.
 *
 * Nothing here links against an allocator library: every allocator-specific
 * symbol is looked up at run time with dlsym(RTLD_DEFAULT, ...), so one
 * binary reports correctly whatever is preloaded. glibc's own calls
 * (malloc_trim, mallinfo2, mallopt, malloc_info, gnu_get_libc_version) are
 * called directly: Tide requires glibc 2.33 or later.
 *
 * Errors: functions return 0 or a negative TIDE_E* code, with the reason in
 * tide_last_error().
 *
 * Thread safety: every function may be called from any thread at any time.
 * The first call of any of them resolves the symbols once (under
 * pthread_once); dlsym failures make glibc allocate a message, which is why
 * it happens once and not on every stats or release call.
 */
#ifndef TIDE_MEM_ALLOC_H
#define TIDE_MEM_ALLOC_H

#include <stddef.h>
#include <stdint.h>

enum {
    TIDE_MEM_ALLOC_UNKNOWN   = 0,
    TIDE_MEM_ALLOC_GLIBC     = 1,
    TIDE_MEM_ALLOC_JEMALLOC  = 2,
    TIDE_MEM_ALLOC_TCMALLOC  = 3,
    TIDE_MEM_ALLOC_MIMALLOC  = 4,
    TIDE_MEM_ALLOC_SANITIZER = 5   /* ASan/TSan/MSan/LSan's own allocator */
};

/* How the allocator got in front of the program's calls to malloc. */
enum {
    TIDE_MEM_ALLOC_VIA_UNKNOWN = 0,
    TIDE_MEM_ALLOC_VIA_LIBC    = 1,  /* it is libc's own malloc */
    TIDE_MEM_ALLOC_VIA_PRELOAD = 2,  /* its library is named in LD_PRELOAD
                                        or /etc/ld.so.preload */
    TIDE_MEM_ALLOC_VIA_LINKED  = 3,  /* a shared library the program links
                                        (DT_NEEDED), loaded before libc */
    TIDE_MEM_ALLOC_VIA_STATIC  = 4   /* defined inside the executable */
};

/* "glibc", "jemalloc", "tcmalloc", "mimalloc", "sanitizer" or "unknown".
 * Never NULL; a fixed string. */
const char *tide_mem_alloc_family_name(int family);

/* "libc", "preload", "linked", "static" or "unknown". Never NULL. */
const char *tide_mem_alloc_via_name(int via);

typedef struct tide_mem_alloc_info {
    int  family;          /* TIDE_MEM_ALLOC_* */
    int  via;             /* TIDE_MEM_ALLOC_VIA_* */
    int  owner_checked;   /* 1 when a live block was shown to belong to this
                             allocator (its ownership call, or its own
                             byte counter); 0 when the verdict rests on
                             which object defines malloc (glibc) or on
                             nothing (unknown) */
    char version[64];     /* "2.36", "5.3.0-0-g54eaed1d...", "gperftools
                             2.10", "2.0.9"; "" when the allocator has no
                             way to say */
    char library[256];    /* the file that defines the malloc the process
                             calls (dladdr), e.g. /lib/x86_64-linux-gnu/libc.so.6 */
    char evidence[192];   /* one line saying how the verdict was reached */
} tide_mem_alloc_info;

/*
 * Find which allocator serves malloc, now.
 *
 * The malloc the process calls is the one dlsym(RTLD_DEFAULT, "malloc")
 * returns (the definition the dynamic linker binds every call to), named
 * with dladdr. &malloc is the same address in PIE code, but in a non-PIE
 * executable it is the executable's PLT stub, which dladdr would name as
 * the executable; it is used only when it lies in the executable and is not
 * such a stub (an allocator linked in statically without exporting malloc).
 * Then
 * one live probe block of a few KiB is allocated with malloc and each
 * family whose control symbol is present is asked whether it owns it:
 *   sanitizer  __sanitizer_get_ownership(p)
 *   jemalloc   mallctl "thread.allocated" grows by the probe's size across
 *              the malloc, and sallocx(p) == malloc_usable_size(p); when the
 *              counter is unavailable, mallctl and malloc must be defined
 *              by the same object before sallocx is trusted
 *   tcmalloc   MallocExtension_GetOwnership(p) == owned
 *   mimalloc   mi_is_in_heap_region(p)
 *   glibc      malloc is defined by the object that defines
 *              gnu_get_libc_version, and no family above owns the block
 * So a library that is loaded (dlopen, or linked with a prefix) but does not
 * serve malloc is not mistaken for the allocator.
 *
 * Writes *out (always, on success). Errors: TIDE_ENOMEM when the probe
 * cannot be allocated. An allocator it cannot name is not an error: family
 * is TIDE_MEM_ALLOC_UNKNOWN and library says where malloc lives.
 * Cost: one malloc/free of the probe, a few dladdr/dlsym lookups (cached
 * after the first call), one dl_iterate_phdr, a stat(2) per LD_PRELOAD entry
 * and an open/read of /etc/ld.so.preload when it exists. For startup and
 * status pages, not hot paths; use tide_mem_alloc_family() there.
 */
int tide_mem_alloc_detect(tide_mem_alloc_info *out);

/*
 * The family that serves malloc, detected on the first call and remembered
 * (the allocator of a process does not change). Returns TIDE_MEM_ALLOC_*;
 * TIDE_MEM_ALLOC_UNKNOWN for good if that first detection could not
 * allocate its probe.
 * Cost: after the first call, one atomic load.
 */
int tide_mem_alloc_family(void);

/*
 * The whole identity (name, version, library, how it got in front)
 * detected by that same first call, copied to *out. Returns 0, or
 * TIDE_ENOMEM for good if the first detection could not allocate its
 * probe (*out untouched). For callers that name the allocator repeatedly,
 * such as every /metrics scrape: after the first call it costs one copy,
 * no probe, no dladdr, no stat.
 */
int tide_mem_alloc_identity(tide_mem_alloc_info *out);

/* ---- effective options ------------------------------------------------- */

#define TIDE_MEM_ALLOC_OPTIONS_MAX 32

typedef struct tide_mem_alloc_option {
    char name[48];    /* "background_thread", "MALLOC_ARENA_MAX",
                         "glibc.malloc.arena_max", "mmap_threshold" */
    char value[80];   /* as text: "true", "10000", "2" */
    char source[12];  /* "mallctl": read back from jemalloc (opt.<name>);
                         "property": read back from tcmalloc;
                         "env": an environment variable;
                         "tunables": one item of GLIBC_TUNABLES;
                         "mallopt": Tide's own tide_mem_alloc_mallopt() */
} tide_mem_alloc_option;

typedef struct tide_mem_alloc_options {
    int    family;
    size_t count;
    int    truncated;   /* 1 when more than TIDE_MEM_ALLOC_OPTIONS_MAX
                           options (or an overlong value) were cut */
    tide_mem_alloc_option opt[TIDE_MEM_ALLOC_OPTIONS_MAX];
} tide_mem_alloc_options;

/*
 * The options in force for allocator `family` (normally
 * tide_mem_alloc_family()), in a fixed order:
 *   jemalloc   opt.background_thread, opt.dirty_decay_ms,
 *              opt.muzzy_decay_ms, opt.narenas (read back with mallctl, so
 *              they are what jemalloc applied, whatever set them: malloc_conf
 *              symbol, MALLOC_CONF, or /etc/malloc.conf), then the current
 *              "background_thread" state as background_thread_now, then
 *              MALLOC_CONF from the environment when set
 *   glibc      MALLOC_ARENA_MAX, MALLOC_ARENA_TEST, MALLOC_MMAP_THRESHOLD_,
 *              MALLOC_MMAP_MAX_, MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_,
 *              MALLOC_PERTURB_, MALLOC_CHECK_ from the environment when set,
 *              each glibc.malloc.* item of GLIBC_TUNABLES, then every
 *              successful tide_mem_alloc_mallopt() call (the last value per
 *              parameter). glibc has no call to read its options back; the
 *              environment is read as it is now, which is what glibc read at
 *              startup unless the program changed it since.
 *   tcmalloc   tcmalloc.max_total_thread_cache_bytes and
 *              tcmalloc.aggressive_memory_decommit (read back), then every
 *              TCMALLOC_* environment variable
 *   mimalloc   every MIMALLOC_* environment variable (mimalloc 2.0 has no
 *              stable way to name its options from outside)
 *   sanitizer  ASAN_OPTIONS, TSAN_OPTIONS, MSAN_OPTIONS, LSAN_OPTIONS when set
 * An option that cannot be read is left out, not guessed.
 *
 * Errors: none beyond TIDE_EINVAL for a family out of range; *out is always
 * written. Thread safety: reads the environment (like getenv, unsafe only
 * against a concurrent setenv). Cost: a few mallctl or property calls; no
 * allocation here (jemalloc may allocate inside mallctl on its first use).
 */
int tide_mem_alloc_options_read(int family, tide_mem_alloc_options *out);

/* The value of option `name` in `o`, or NULL. */
const char *tide_mem_alloc_option_get(const tide_mem_alloc_options *o, const char *name);

/*
 * "name=value name=value ..." into buf (cap bytes, always terminated when
 * cap > 0), in the order of `o`; "(none)" when there are none. Returns the
 * length the whole text needs, like snprintf (>= cap means it was cut).
 * No allocation.
 */
int tide_mem_alloc_options_format(const tide_mem_alloc_options *o, char *buf, size_t cap);

/*
 * mallopt(param, value), remembered so that the effective options can show
 * it. Only the glibc parameters Tide has a reason to set are accepted:
 * M_MMAP_THRESHOLD, M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_MAX, M_ARENA_MAX,
 * M_ARENA_TEST, M_MXFAST, M_PERTURB.
 *
 * Returns 0 when glibc accepted it. TIDE_EINVAL when `param` is not one of
 * those, when malloc is not served by glibc (the call would reach a glibc
 * allocator nobody uses; it is not made), or when mallopt refused the value
 * (it returned 0); the message names the parameter and the value. Only
 * accepted calls are remembered; a later call for the same parameter
 * replaces the earlier value.
 *
 * Call it before worker threads start: glibc applies most parameters to
 * arenas created afterwards, and M_ARENA_MAX only limits arenas not yet made.
 * Thread-safe (a mutex guards the record). Cost: one mallopt, which takes
 * the main arena's lock; no allocation.
 */
int tide_mem_alloc_mallopt(int param, int value);

/* ---- statistics ---------------------------------------------------------- */

typedef struct tide_mem_alloc_stats {
    int family;
    struct {                 /* mallinfo2(), summed over every arena */
        uint64_t arena;      /* bytes obtained from the system with brk/mmap
                                for the arenas (not counting mmapped chunks) */
        uint64_t in_use;     /* uordblks: bytes in allocated chunks */
        uint64_t free;       /* fordblks: bytes in free chunks (what trim may
                                return, minus partial pages) */
        uint64_t mmap;       /* hblkhd: bytes in chunks served by mmap */
        uint64_t mmap_count; /* hblks */
        uint64_t top_releasable; /* keepcost: free space at the top of the
                                    main heap */
        unsigned arenas;     /* number of arenas (<heap> sections of
                                malloc_info); 0 when has_arenas is 0 */
        int      has_arenas;
    } glibc;
    struct {                 /* stats.* after an "epoch" refresh */
        uint64_t allocated, active, resident, mapped, retained, metadata;
        uint64_t dirty;      /* stats.arenas.<all>.pdirty * arenas.page */
        uint64_t muzzy;      /* stats.arenas.<all>.pmuzzy * arenas.page */
    } jemalloc;
    struct {                 /* MallocExtension_GetNumericProperty */
        uint64_t allocated;          /* generic.current_allocated_bytes */
        uint64_t heap_size;          /* generic.heap_size */
        uint64_t pageheap_free;      /* tcmalloc.pageheap_free_bytes */
        uint64_t pageheap_unmapped;  /* tcmalloc.pageheap_unmapped_bytes */
    } tcmalloc;
    struct {                 /* mi_process_info */
        uint64_t current_rss, peak_rss, current_commit, peak_commit;
        uint64_t page_faults;
    } mimalloc;
    struct {                 /* __sanitizer_get_* */
        uint64_t allocated, heap_size, free;
    } sanitizer;
} tide_mem_alloc_stats;

/*
 * The statistics of allocator `family` (normally tide_mem_alloc_family());
 * only the member of that family is filled, the rest are 0.
 *
 * Errors: TIDE_EINVAL when the family is unknown or its symbols are absent
 * from the process; TIDE_EIO when jemalloc's mallctl fails for a statistic
 * every build has (the message names it). *out is written only on success.
 *
 * Cost, by family:
 *   glibc      mallinfo2() locks each arena in turn and walks its bins,
 *              then malloc_info() does the same walk again to count the
 *              arenas (measured: 39 ms + 32 ms with 2 million free chunks,
 *              4 ms + 5 ms with 200 thousand), writing its XML
 *              through a stdio stream that counts "<heap" as the text goes
 *              by. That stream is made with fopencookie, which mallocs one
 *              FILE (its buffer is on the stack), so this call allocates and
 *              frees once. For a scrape, never a hot path.
 *   jemalloc   about a dozen mallctl calls; the "epoch" refresh merges every
 *              arena's counters under their locks.
 *   tcmalloc   four property reads (each takes the page heap lock).
 *   mimalloc   one mi_process_info (getrusage and a read of its counters).
 *   sanitizer  three counter reads.
 * Thread-safe.
 */
int tide_mem_alloc_stats_read(int family, tide_mem_alloc_stats *out);

/*
 * What the allocator of `st` keeps in the process beyond the bytes its
 * live allocations hold, into *out, by the family's own figures:
 *   glibc      fordblks: free chunks. An upper bound on what is resident:
 *              it still counts the free chunks whose pages a trim gave
 *              back (glibc keeps no count of those).
 *   jemalloc   stats.resident - stats.allocated: dirty and muzzy pages,
 *              the unused parts of active pages, and its metadata.
 *   tcmalloc   generic.heap_size - tcmalloc.pageheap_unmapped_bytes -
 *              generic.current_allocated_bytes: the page heap's free
 *              pages and the central and per-thread caches.
 *   sanitizer  __sanitizer_get_free_bytes.
 * Returns 1 with *out set; 0 for mimalloc (mi_process_info gives no live
 * bytes to subtract) and any other family, *out untouched. Pure; no
 * allocation. Thread-safe.
 */
int tide_mem_alloc_held_free(const tide_mem_alloc_stats *st, uint64_t *out);

/* ---- release ----------------------------------------------------------- */

/*
 * Ask allocator `family` (normally tide_mem_alloc_family()) to return free
 * memory to the kernel, with its own call:
 *   glibc      malloc_trim(pad): every arena, every whole free page
 *              (madvise(MADV_DONTNEED)), and the top of the main heap
 *              (sbrk) less `pad` bytes kept there for the next
 *              allocations. *result is its return: 1 when memory was
 *              released, 0 when there was nothing to release.
 *   jemalloc   mallctl("arena.4096.purge") (4096 = MALLCTL_ARENAS_ALL in
 *              jemalloc 5): every arena's dirty and muzzy pages now.
 *              *result is 1.
 *   tcmalloc   MallocExtension_ReleaseFreeMemory(). *result is 1.
 *   mimalloc   mi_collect(true). *result is 1.
 *   sanitizer  __sanitizer_purge_allocator() when the runtime has it
 *              (*result 1), otherwise nothing (*result 0).
 * `pad` is glibc's alone (the others have no such argument); 0 returns
 * all it can.
 *
 * Errors: TIDE_EINVAL for an unknown family or absent symbols (*result 0);
 * TIDE_EIO when jemalloc's purge fails (the message has its errno).
 * Thread-safe. Cost: glibc locks each arena in turn and walks all its free
 * chunks, one madvise per free run; every thread that mallocs from that
 * arena waits meanwhile (a median of 141 ms on a 19 GiB node). Later
 * touches of the returned pages take minor faults. Allocates nothing.
 * Call it from a background thread after a large release (a cache sweep),
 * never per request.
 */
int tide_mem_alloc_release(int family, size_t pad, int *result);

/* ---- the heap report (GET /v1/admin/heap) ------------------------------ */

/* What tide_mem_alloc_heap_report produced. */
enum {
    TIDE_MEM_HEAP_NONE          = 0,  /* the allocator has no report Tide can ask
                                         for (tcmalloc, mimalloc, a sanitizer,
                                         unknown): nothing in *out */
    TIDE_MEM_HEAP_JEMALLOC_PROF = 1,  /* jemalloc's prof.dump: jeprof's input */
    TIDE_MEM_HEAP_PROF_OFF      = 2,  /* jemalloc without opt.prof (started without
                                         MALLOC_CONF=prof:true, or built without
                                         profiling): nothing in *out */
    TIDE_MEM_HEAP_GLIBC_INFO    = 3   /* glibc's malloc_info(0) XML */
};

/*
 * The allocator `family`'s own report of its heap, for an operator's tools:
 *   jemalloc   with opt.prof on: mallctl("prof.dump") into a file made with
 *              mkstemp under `dir` (NULL: $TMPDIR, or /tmp when unset or
 *              empty), read back whole and unlinked (also on failure);
 *              without it: TIDE_MEM_HEAP_PROF_OFF.
 *   glibc      malloc_info(0, f) into an open_memstream buffer.
 *   others     TIDE_MEM_HEAP_NONE.
 * Returns 0 with *kind set; with JEMALLOC_PROF or GLIBC_INFO *out is a
 * malloc'd buffer the caller frees, *len bytes with a NUL after them; with
 * NONE or PROF_OFF *out is NULL and *len 0. Errors (nothing left behind, no
 * file): TIDE_ENOMEM; TIDE_EIO when mkstemp, the dump or the read fails (the
 * message names the file and the errno).
 * Thread-safe. Cost: jemalloc writes one line per sampled stack (tens of KiB
 * to a few MiB) and holds its profiling locks meanwhile; glibc walks every
 * arena under its lock (as tide_mem_alloc_stats_read does). Never from an
 * event loop: call it on a worker thread.
 */
int tide_mem_alloc_heap_report(int family, const char *dir, char **out, size_t *len, int *kind);

#endif
