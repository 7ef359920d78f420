/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * alloc_detect.c: naming the allocator that serves malloc.
 *
 * A process has exactly one malloc that its calls bind to, but it may hold
 * several allocators: glibc's is always there, a jemalloc can be linked
 * with a prefix (its symbols present, its malloc not), a dlopen'd library
 * can bring its own. So the symbols an allocator exports only say it is
 * loaded. The verdict comes from a live block: one probe is allocated with
 * malloc, and each loaded family is asked, with its own call, whether that
 * block is its own (see tide_mem_alloc_detect in alloc.h), in this order:
 * the sanitizer, jemalloc, tcmalloc, mimalloc. glibc has no such call; it
 * is named when malloc is defined by libc itself and nobody else claims the
 * block. Then how the allocator got in front of malloc's callers: libc's
 * own, defined in the executable, named in a preload list, or linked.
 *
 * The first detection is remembered for tide_mem_alloc_family() and
 * tide_mem_alloc_identity(): a process does not change its allocator.
 *
 * Invariants:
 *   1. An allocator's ownership call is made only on a pointer it can be
 *      asked about safely: __sanitizer_get_ownership,
 *      MallocExtension_GetOwnership and mi_is_in_heap_region accept any
 *      pointer; jemalloc's sallocx does not, so it is called only once
 *      jemalloc's own thread counter (or sharing one object with malloc) has
 *      shown the block to be jemalloc's.
 *   2. At most one family claims the probe: each probe after the first runs
 *      only while the family is still unknown.
 *   3. identity_cached is written once, inside family_once.
 *
 * Never: call sallocx on a block jemalloc may not own; name glibc when
 * malloc is not libc's own.
 */
#include "mem/alloc_impl.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tide/error.h"
#include "util/err.h"

/* The probe's size: larger than any per-call bookkeeping jemalloc does, so
 * that "thread.allocated grew by at least this much" means this block. */
#define PROBE_SIZE 3000

void ti_alloc_copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strlen(src) : 0;

    if (cap == 0) return;
    if (n >= cap) n = cap - 1;
    if (n) memcpy(dst, src, n);
    dst[n] = '\0';
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');

    return s ? s + 1 : path;
}

/* The load base of the object that holds `addr`, or NULL. */
static void *object_base(const void *addr)
{
    Dl_info di;

    if (addr == NULL || !dladdr(addr, &di)) return NULL;
    return di.dli_fbase;
}

/* 1 when `entry` (a path or a bare soname from a preload list) names the
 * file `lib`: same inode when both can be stat'ed, else the same base name. */
static int same_library(const char *entry, const char *lib)
{
    struct stat a, b;

    if (strchr(entry, '/') && stat(entry, &a) == 0 && stat(lib, &b) == 0)
        return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
    return strcmp(base_name(entry), base_name(lib)) == 0;
}

/* 1 when one of the whitespace- or colon-separated entries of `list`
 * names `lib`. `list` is copied; entries longer than 511 bytes are skipped. */
static int list_names(const char *list, const char *lib)
{
    char entry[512];
    const char *p = list;

    while (*p) {
        size_t n = strcspn(p, ": \t\n");
        if (n > 0 && n < sizeof entry) {
            memcpy(entry, p, n);
            entry[n] = '\0';
            if (same_library(entry, lib)) return 1;
        }
        p += n;
        if (*p) p++;
    }
    return 0;
}

static int preloaded(const char *lib)
{
    const char *env = getenv("LD_PRELOAD");
    char buf[4096];
    ssize_t n;
    size_t have = 0;
    int fd;

    if (env && list_names(env, lib)) return 1;
    fd = open("/etc/ld.so.preload", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    while (have < sizeof buf - 1) {
        n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        have += (size_t)n;
    }
    close(fd);
    buf[have] = '\0';
    return list_names(buf, lib);
}

static int jemalloc_thread_allocated(uint64_t *out)
{
    size_t sz = sizeof *out;

    return ti_alloc_syms.mallctl("thread.allocated", out, &sz, NULL, 0) == 0 && sz == sizeof *out;
}

/* The sanitizer's runtime owns the probe. */
static int probe_sanitizer(tide_mem_alloc_info *in, void *p)
{
    if (!ti_alloc_syms.san_ownership || !ti_alloc_syms.san_ownership(p)) return 0;
    in->family = TIDE_MEM_ALLOC_SANITIZER;
    in->owner_checked = 1;
    ti_alloc_copy_str(in->version, sizeof in->version, base_name(in->library));
    snprintf(in->evidence, sizeof in->evidence,
             "%s owns a live block (__sanitizer_get_ownership)", ti_alloc_syms.san_name);
    return 1;
}

/* jemalloc owns the probe: its thread counter grew by the probe's size
 * across the malloc (je_counted, the two readings), or, without the
 * counter, mallctl and malloc share an object; then sallocx must agree with
 * malloc_usable_size (invariant 1: only now is sallocx safe to call). */
static int probe_jemalloc(tide_mem_alloc_info *in, void *p, int je_counted, uint64_t je_before,
                          uint64_t je_after)
{
    int owned = 0;

    if (!ti_alloc_syms.mallctl) return 0;
    if (je_counted) {
        owned = je_after - je_before >= PROBE_SIZE;
        if (owned)
            snprintf(in->evidence, sizeof in->evidence,
                     "jemalloc's thread.allocated grew by %llu across a %d-byte malloc",
                     (unsigned long long)(je_after - je_before), PROBE_SIZE);
    } else if (object_base((const void *)ti_alloc_syms.mallctl) == object_base(ti_alloc_syms.malloc_addr)) {
        owned = 1;
        snprintf(in->evidence, sizeof in->evidence, "mallctl and malloc are defined by the same object");
    }
    if (owned && ti_alloc_syms.sallocx && ti_alloc_syms.usable_size) {
        size_t a = ti_alloc_syms.sallocx(p, 0), b = ti_alloc_syms.usable_size(p);
        if (a != b || a < PROBE_SIZE) {
            owned = 0;
        } else {
            size_t n = strlen(in->evidence);
            snprintf(in->evidence + n, sizeof in->evidence - n, "; sallocx = malloc_usable_size = %zu", a);
        }
    }
    if (!owned) {
        in->evidence[0] = '\0';
        return 0;
    }
    const char *v = NULL;
    size_t sz = sizeof v;
    in->family = TIDE_MEM_ALLOC_JEMALLOC;
    in->owner_checked = 1;
    if (ti_alloc_syms.mallctl("version", &v, &sz, NULL, 0) == 0 && v)
        ti_alloc_copy_str(in->version, sizeof in->version, v);
    return 1;
}

static int probe_tcmalloc(tide_mem_alloc_info *in, void *p)
{
    int major = 0, minor = 0;
    const char *patch = NULL;

    if (!ti_alloc_syms.tc_ownership || ti_alloc_syms.tc_ownership(p) != 1) return 0;
    in->family = TIDE_MEM_ALLOC_TCMALLOC;
    in->owner_checked = 1;
    if (ti_alloc_syms.tc_version)
        ti_alloc_copy_str(in->version, sizeof in->version, ti_alloc_syms.tc_version(&major, &minor, &patch));
    snprintf(in->evidence, sizeof in->evidence, "MallocExtension_GetOwnership says tcmalloc owns a live block");
    return 1;
}

static int probe_mimalloc(tide_mem_alloc_info *in, void *p)
{
    if (!ti_alloc_syms.mi_in_heap || !ti_alloc_syms.mi_in_heap(p)) return 0;
    in->family = TIDE_MEM_ALLOC_MIMALLOC;
    in->owner_checked = 1;
    if (ti_alloc_syms.mi_version) {
        int v = ti_alloc_syms.mi_version();
        snprintf(in->version, sizeof in->version, "%d.%d.%d", v / 100, (v % 100) / 10, v % 10);
    }
    snprintf(in->evidence, sizeof in->evidence, "mi_is_in_heap_region says mimalloc owns a live block");
    return 1;
}

/* Nobody claimed the probe: glibc when malloc is libc's own, else unknown. */
static void name_glibc_or_unknown(tide_mem_alloc_info *in)
{
    void *libc_base = object_base(ti_alloc_syms.libc_addr);

    if (libc_base != NULL && libc_base == object_base(ti_alloc_syms.malloc_addr)) {
        in->family = TIDE_MEM_ALLOC_GLIBC;
        ti_alloc_copy_str(in->version, sizeof in->version, gnu_get_libc_version());
        snprintf(in->evidence, sizeof in->evidence,
                 "malloc is libc's own and no other allocator owns a live block");
    } else {
        snprintf(in->evidence, sizeof in->evidence,
                 "malloc is defined in %.120s, which no known allocator claims",
                 in->library[0] ? in->library : "an object dladdr cannot name");
    }
}

/* How the named allocator got in front of malloc's callers. */
static int how_it_got_in(const tide_mem_alloc_info *in)
{
    if (in->family == TIDE_MEM_ALLOC_GLIBC) return TIDE_MEM_ALLOC_VIA_LIBC;
    if (ti_alloc_in_executable(ti_alloc_syms.malloc_addr)) return TIDE_MEM_ALLOC_VIA_STATIC;
    if (in->library[0] && preloaded(in->library)) return TIDE_MEM_ALLOC_VIA_PRELOAD;
    if (in->library[0]) return TIDE_MEM_ALLOC_VIA_LINKED;
    return TIDE_MEM_ALLOC_VIA_UNKNOWN;
}

int tide_mem_alloc_detect(tide_mem_alloc_info *out)
{
    tide_mem_alloc_info in;
    Dl_info di;
    uint64_t je_before = 0, je_after = 0;
    int je_counted = 0;
    void *volatile probe;
    void *p;

    ti_alloc_get_syms();
    memset(&in, 0, sizeof in);
    if (dladdr(ti_alloc_syms.malloc_addr, &di) && di.dli_fname)
        ti_alloc_copy_str(in.library, sizeof in.library, di.dli_fname);

    if (ti_alloc_syms.mallctl) je_counted = jemalloc_thread_allocated(&je_before);
    probe = malloc(PROBE_SIZE);
    p = probe;
    if (p == NULL)
        return tide_err_set(TIDE_ENOMEM, "allocator detection: malloc(%d) for the probe block "
                            "failed", PROBE_SIZE);
    if (je_counted) je_counted = jemalloc_thread_allocated(&je_after);

    if (!probe_sanitizer(&in, p) && !probe_jemalloc(&in, p, je_counted, je_before, je_after) &&
        !probe_tcmalloc(&in, p) && !probe_mimalloc(&in, p))
        name_glibc_or_unknown(&in);
    free(p);
    in.via = how_it_got_in(&in);
    *out = in;
    return 0;
}

static pthread_once_t family_once = PTHREAD_ONCE_INIT;
static tide_mem_alloc_info identity_cached;   /* written once, inside family_once */
static int identity_rc = TIDE_ENOMEM;

static void detect_family(void)
{
    identity_rc = tide_mem_alloc_detect(&identity_cached);
    if (identity_rc) identity_cached.family = TIDE_MEM_ALLOC_UNKNOWN;
}

int tide_mem_alloc_family(void)
{
    pthread_once(&family_once, detect_family);
    return identity_cached.family;
}

int tide_mem_alloc_identity(tide_mem_alloc_info *out)
{
    pthread_once(&family_once, detect_family);
    if (identity_rc == 0) *out = identity_cached;
    return identity_rc;
}
