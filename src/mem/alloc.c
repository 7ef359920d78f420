/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * alloc.c: the allocator functions this process holds, found once, and the
 * names of the families. The other jobs of the allocator module are beside
 * it: alloc_detect.c names the allocator that serves malloc, alloc_options.c
 * reads its options, alloc_mallopt.c records Tide's own mallopt calls,
 * alloc_stats.c reads its statistics and alloc_release.c makes it give
 * memory back (alloc.h is their one contract; alloc_impl.h what they share).
 *
 * Every allocator-specific function is found with dlsym(RTLD_DEFAULT), once,
 * under pthread_once, and kept in ti_alloc_syms. A failed dlsym makes glibc
 * allocate its error message; doing the lookups once keeps the stats and
 * release paths free of that. glibc's own functions are called directly.
 *
 * "The malloc the process calls" is dlsym(RTLD_DEFAULT, "malloc"), except in
 * a non-PIE executable, where that is the executable's PLT stub (kept so
 * that function pointers compare equal): there the first object after the
 * executable, in load order, that defines malloc itself is the answer.
 *
 * Invariants:
 *   1. ti_alloc_syms is written only by resolve_syms(), inside pthread_once;
 *      every reader goes through ti_alloc_get_syms(), so the writes
 *      happen-before the reads.
 *   2. After resolution malloc_addr is never NULL (the bound malloc, or the
 *      own &malloc when dlsym finds none).
 *
 * Never: call dlsym on a stats or release path; call an allocator's
 * function whose member is NULL.
 */
#include "mem/alloc_impl.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

ti_alloc_syms_t ti_alloc_syms;

/* Whether `addr` lies in a loaded segment of the main executable (the first
 * object dl_iterate_phdr reports). */
struct in_main { uintptr_t addr; int seen; int found; };

static int in_main_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct in_main *m = arg;

    (void)size;
    if (m->seen++) return 1;   /* only the first object is the executable */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && m->addr >= lo && m->addr < lo + ph->p_memsz) {
            m->found = 1;
            break;
        }
    }
    return 1;
}

int ti_alloc_in_executable(const void *addr)
{
    struct in_main m = { (uintptr_t)addr, 0, 0 };

    dl_iterate_phdr(in_main_cb, &m);
    return m.found;
}

static pthread_once_t syms_once = PTHREAD_ONCE_INIT;

/* dlsym into a function pointer without a cast between object and function
 * pointer types. */
#define LOOKUP(field, name) do { \
        void *p_ = dlsym(RTLD_DEFAULT, name); \
        memcpy(&ti_alloc_syms.field, &p_, sizeof p_); \
    } while (0)

/* Whether `addr` is a PLT stub of the executable standing for `name`: in a
 * non-PIE executable, an undefined dynamic symbol with a value (the stub's
 * address), which both &name and dlsym(RTLD_DEFAULT) return to keep
 * function pointers equal across objects. */
static int is_plt_stub(void *addr, const char *name)
{
    Dl_info di;
    const ElfW(Sym) *sym = NULL;

    if (!ti_alloc_in_executable(addr)) return 0;
    if (!dladdr1(addr, &di, (void **)&sym, RTLD_DL_SYMENT) || sym == NULL || di.dli_sname == NULL)
        return 0;
    return sym->st_shndx == SHN_UNDEF && strcmp(di.dli_sname, name) == 0;
}

/* The first loaded object after the executable, in load order (the order
 * the dynamic linker searches), that itself defines `name`. */
struct first_def { const char *name; int index; void *found; };

static int first_def_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct first_def *f = arg;
    void *h, *p;
    Dl_info di;

    (void)size;
    if (f->index++ == 0 || info->dlpi_name == NULL || info->dlpi_name[0] == '\0') return 0;
    h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (h == NULL) return 0;
    p = dlsym(h, f->name);
    /* dlsym(h) also searches h's dependencies: keep only h's own. */
    if (p && dladdr(p, &di) && di.dli_fname && strcmp(di.dli_fname, info->dlpi_name) == 0)
        f->found = p;
    dlclose(h);
    return f->found != NULL;
}

/* The address every call to `name` binds to, given what this code sees as
 * &name (`own`). */
static void *bound_definition(const char *name, void *own)
{
    Dl_info di;
    void *bound = dlsym(RTLD_DEFAULT, name);

    if (bound == NULL) return own;
    if (is_plt_stub(bound, name)) {
        struct first_def f = { name, 0, NULL };
        dl_iterate_phdr(first_def_cb, &f);
        return f.found ? f.found : bound;
    }
    /* An allocator linked into the executable without exporting `name`:
     * &name is in the executable, and no symbol of that name is there. */
    if (own != bound && ti_alloc_in_executable(own) &&
        !(dladdr(own, &di) && di.dli_sname && strcmp(di.dli_sname, name) == 0))
        return own;
    return bound;
}

static void resolve_syms(void)
{
    void *(*m)(size_t) = malloc;
    const char *(*v)(void) = gnu_get_libc_version;
    void *own_malloc, *own_version;

    /* In PIE code &malloc is the definition every call binds to, and so is
     * dlsym(RTLD_DEFAULT)'s answer; bound_definition() handles the PLT stubs
     * of non-PIE executables and allocators linked in statically. */
    memcpy(&own_malloc, &m, sizeof own_malloc);
    memcpy(&own_version, &v, sizeof own_version);
    ti_alloc_syms.malloc_addr = bound_definition("malloc", own_malloc);
    ti_alloc_syms.libc_addr = bound_definition("gnu_get_libc_version", own_version);

    LOOKUP(mallctl, "mallctl");
    LOOKUP(sallocx, "sallocx");
    LOOKUP(usable_size, "malloc_usable_size");
    LOOKUP(tc_get_prop, "MallocExtension_GetNumericProperty");
    LOOKUP(tc_ownership, "MallocExtension_GetOwnership");
    LOOKUP(tc_release, "MallocExtension_ReleaseFreeMemory");
    LOOKUP(tc_version, "tc_version");
    LOOKUP(mi_version, "mi_version");
    LOOKUP(mi_collect, "mi_collect");
    LOOKUP(mi_in_heap, "mi_is_in_heap_region");
    LOOKUP(mi_process_info, "mi_process_info");
    LOOKUP(san_ownership, "__sanitizer_get_ownership");
    LOOKUP(san_allocated, "__sanitizer_get_current_allocated_bytes");
    LOOKUP(san_heap_size, "__sanitizer_get_heap_size");
    LOOKUP(san_free, "__sanitizer_get_free_bytes");
    LOOKUP(san_purge, "__sanitizer_purge_allocator");
    if (dlsym(RTLD_DEFAULT, "__asan_init")) ti_alloc_syms.san_name = "AddressSanitizer";
    else if (dlsym(RTLD_DEFAULT, "__tsan_init")) ti_alloc_syms.san_name = "ThreadSanitizer";
    else if (dlsym(RTLD_DEFAULT, "__msan_init")) ti_alloc_syms.san_name = "MemorySanitizer";
    else ti_alloc_syms.san_name = "a sanitizer runtime";
    dlerror();   /* drop the message of the last failed lookup */
}

void ti_alloc_get_syms(void)
{
    pthread_once(&syms_once, resolve_syms);
}

/* ---- names -------------------------------------------------------------- */

const char *tide_mem_alloc_family_name(int family)
{
    switch (family) {
    case TIDE_MEM_ALLOC_GLIBC:     return "glibc";
    case TIDE_MEM_ALLOC_JEMALLOC:  return "jemalloc";
    case TIDE_MEM_ALLOC_TCMALLOC:  return "tcmalloc";
    case TIDE_MEM_ALLOC_MIMALLOC:  return "mimalloc";
    case TIDE_MEM_ALLOC_SANITIZER: return "sanitizer";
    default:                       return "unknown";
    }
}

const char *tide_mem_alloc_via_name(int via)
{
    switch (via) {
    case TIDE_MEM_ALLOC_VIA_LIBC:    return "libc";
    case TIDE_MEM_ALLOC_VIA_PRELOAD: return "preload";
    case TIDE_MEM_ALLOC_VIA_LINKED:  return "linked";
    case TIDE_MEM_ALLOC_VIA_STATIC:  return "static";
    default:                         return "unknown";
    }
}
