/*
 * alloc.c: naming the allocator that serves malloc, reading it, releasing it.
 *
 * A process has exactly one malloc that its calls bind to, but it may hold
 * several allocators: glibc's is always there, a jemalloc can be linked
 * with a prefix (its symbols present, its malloc not), a dlopen'd library
 * can bring its own. So the symbols an allocator exports only say it is
 * loaded. The verdict comes from a live block: one probe is allocated with
 * malloc, and each loaded family is asked, with its own call, whether that
 * block is its own (see tide_mem_alloc_detect in alloc.h). glibc has no such
 * call; it is named when malloc is defined by libc itself and nobody else
 * claims the block.
 *
 * "The malloc the process calls" is dlsym(RTLD_DEFAULT, "malloc"), except in
 * a non-PIE executable, where that is the executable's PLT stub (kept so
 * that function pointers compare equal): there the first object after the
 * executable, in load order, that defines malloc itself is the answer.
 *
 * Every allocator-specific function is found with dlsym(RTLD_DEFAULT), once,
 * under pthread_once, and kept in `syms`. A failed dlsym makes glibc
 * allocate its error message; doing the lookups once keeps the stats and
 * release paths free of that. glibc's own functions are called directly.
 *
 * Invariants:
 *   1. `syms` is written only by resolve_syms(), inside pthread_once; every
 *      reader goes through get_syms(), so the writes happen-before the reads.
 *   2. An allocator's ownership call is made only on a pointer it can be
 *      asked about safely: __sanitizer_get_ownership,
 *      MallocExtension_GetOwnership and mi_is_in_heap_region accept any
 *      pointer; jemalloc's sallocx does not, so it is called only once
 *      jemalloc's own thread counter (or sharing one object with malloc) has
 *      shown the block to be jemalloc's.
 *   3. The mallopt record holds at most one entry per known parameter and
 *      is read and written under `mallopt_lock`.
 *
 * Never: call an allocator's release or stats function for a family whose
 * symbols were not found; call sallocx on a block jemalloc may not own;
 * forward a mallopt to glibc when glibc does not serve malloc.
 */
#include "mem/alloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tide/error.h"
#include "util/err.h"

extern char **environ;

/* jemalloc 5's MALLCTL_ARENAS_ALL: "arena.4096.*" means every arena. */
#define JEMALLOC_ARENAS_ALL "4096"

/* The probe's size: larger than any per-call bookkeeping jemalloc does, so
 * that "thread.allocated grew by at least this much" means this block. */
#define PROBE_SIZE 3000

/* ---- symbols ----------------------------------------------------------- */

typedef int    (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
typedef size_t (*sallocx_fn)(const void *, int);
typedef size_t (*usable_size_fn)(void *);
typedef int    (*tc_get_prop_fn)(const char *, size_t *);
typedef int    (*tc_ownership_fn)(const void *);
typedef void   (*void_fn)(void);
typedef const char *(*tc_version_fn)(int *, int *, const char **);
typedef int    (*mi_version_fn)(void);
typedef void   (*mi_collect_fn)(bool);
typedef bool   (*mi_in_heap_fn)(const void *);
typedef void   (*mi_process_info_fn)(size_t *, size_t *, size_t *, size_t *, size_t *,
                                     size_t *, size_t *, size_t *);
typedef int    (*san_ownership_fn)(const volatile void *);
typedef size_t (*san_size_fn)(void);

static struct {
    void *malloc_addr;          /* the malloc calls bind to */
    void *libc_addr;            /* gnu_get_libc_version, inside libc */
    mallctl_fn mallctl;
    sallocx_fn sallocx;
    usable_size_fn usable_size;
    tc_get_prop_fn tc_get_prop;
    tc_ownership_fn tc_ownership;
    void_fn tc_release;
    tc_version_fn tc_version;
    mi_version_fn mi_version;
    mi_collect_fn mi_collect;
    mi_in_heap_fn mi_in_heap;
    mi_process_info_fn mi_process_info;
    san_ownership_fn san_ownership;
    san_size_fn san_allocated, san_heap_size, san_free;
    void_fn san_purge;
    const char *san_name;       /* which sanitizer runtime is loaded */
} syms;

static pthread_once_t syms_once = PTHREAD_ONCE_INIT;

static int defined_in_executable(const void *addr);

/* dlsym into a function pointer without a cast between object and function
 * pointer types. */
#define LOOKUP(field, name) do { \
        void *p_ = dlsym(RTLD_DEFAULT, name); \
        memcpy(&syms.field, &p_, sizeof p_); \
    } while (0)

/* Whether `addr` is a PLT stub of the executable standing for `name`: in a
 * non-PIE executable, an undefined dynamic symbol with a value (the stub's
 * address), which both &name and dlsym(RTLD_DEFAULT) return to keep
 * function pointers equal across objects. */
static int is_plt_stub(void *addr, const char *name)
{
    Dl_info di;
    const ElfW(Sym) *sym = NULL;

    if (!defined_in_executable(addr)) return 0;
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
    if (own != bound && defined_in_executable(own) &&
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
    syms.malloc_addr = bound_definition("malloc", own_malloc);
    syms.libc_addr = bound_definition("gnu_get_libc_version", own_version);

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
    if (dlsym(RTLD_DEFAULT, "__asan_init")) syms.san_name = "AddressSanitizer";
    else if (dlsym(RTLD_DEFAULT, "__tsan_init")) syms.san_name = "ThreadSanitizer";
    else if (dlsym(RTLD_DEFAULT, "__msan_init")) syms.san_name = "MemorySanitizer";
    else syms.san_name = "a sanitizer runtime";
    dlerror();   /* drop the message of the last failed lookup */
}

static void get_syms(void)
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

/* ---- detection ---------------------------------------------------------- */

static void copy_str(char *dst, size_t cap, const char *src)
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

static int defined_in_executable(const void *addr)
{
    struct in_main m = { (uintptr_t)addr, 0, 0 };

    dl_iterate_phdr(in_main_cb, &m);
    return m.found;
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

    return syms.mallctl("thread.allocated", out, &sz, NULL, 0) == 0 && sz == sizeof *out;
}

int tide_mem_alloc_detect(tide_mem_alloc_info *out)
{
    tide_mem_alloc_info in;
    Dl_info di;
    uint64_t je_before = 0, je_after = 0;
    int je_counted = 0;
    void *volatile probe;
    void *p;

    get_syms();
    memset(&in, 0, sizeof in);
    if (dladdr(syms.malloc_addr, &di) && di.dli_fname)
        copy_str(in.library, sizeof in.library, di.dli_fname);

    if (syms.mallctl) je_counted = jemalloc_thread_allocated(&je_before);
    probe = malloc(PROBE_SIZE);
    p = probe;
    if (p == NULL)
        return tide_err_set(TIDE_ENOMEM, "allocator detection: malloc(%d) for the probe block "
                            "failed", PROBE_SIZE);
    if (je_counted) je_counted = jemalloc_thread_allocated(&je_after);

    if (syms.san_ownership && syms.san_ownership(p)) {
        in.family = TIDE_MEM_ALLOC_SANITIZER;
        in.owner_checked = 1;
        copy_str(in.version, sizeof in.version, base_name(in.library));
        snprintf(in.evidence, sizeof in.evidence,
                 "%s owns a live block (__sanitizer_get_ownership)", syms.san_name);
    } else if (syms.mallctl) {
        int owned = 0;
        if (je_counted) {
            owned = je_after - je_before >= PROBE_SIZE;
            if (owned)
                snprintf(in.evidence, sizeof in.evidence,
                         "jemalloc's thread.allocated grew by %llu across a %d-byte malloc",
                         (unsigned long long)(je_after - je_before), PROBE_SIZE);
        } else if (object_base((const void *)syms.mallctl) == object_base(syms.malloc_addr)) {
            owned = 1;
            snprintf(in.evidence, sizeof in.evidence,
                     "mallctl and malloc are defined by the same object");
        }
        if (owned && syms.sallocx && syms.usable_size) {
            size_t a = syms.sallocx(p, 0), b = syms.usable_size(p);
            if (a != b || a < PROBE_SIZE) {
                owned = 0;
            } else {
                size_t n = strlen(in.evidence);
                snprintf(in.evidence + n, sizeof in.evidence - n,
                         "; sallocx = malloc_usable_size = %zu", a);
            }
        }
        if (owned) {
            const char *v = NULL;
            size_t sz = sizeof v;
            in.family = TIDE_MEM_ALLOC_JEMALLOC;
            in.owner_checked = 1;
            if (syms.mallctl("version", &v, &sz, NULL, 0) == 0 && v)
                copy_str(in.version, sizeof in.version, v);
        } else {
            in.evidence[0] = '\0';
        }
    }
    if (in.family == TIDE_MEM_ALLOC_UNKNOWN && syms.tc_ownership && syms.tc_ownership(p) == 1) {
        int major = 0, minor = 0;
        const char *patch = NULL;
        in.family = TIDE_MEM_ALLOC_TCMALLOC;
        in.owner_checked = 1;
        if (syms.tc_version)
            copy_str(in.version, sizeof in.version, syms.tc_version(&major, &minor, &patch));
        snprintf(in.evidence, sizeof in.evidence,
                 "MallocExtension_GetOwnership says tcmalloc owns a live block");
    }
    if (in.family == TIDE_MEM_ALLOC_UNKNOWN && syms.mi_in_heap && syms.mi_in_heap(p)) {
        in.family = TIDE_MEM_ALLOC_MIMALLOC;
        in.owner_checked = 1;
        if (syms.mi_version) {
            int v = syms.mi_version();
            snprintf(in.version, sizeof in.version, "%d.%d.%d", v / 100, (v % 100) / 10, v % 10);
        }
        snprintf(in.evidence, sizeof in.evidence,
                 "mi_is_in_heap_region says mimalloc owns a live block");
    }
    if (in.family == TIDE_MEM_ALLOC_UNKNOWN) {
        void *libc_base = object_base(syms.libc_addr);
        if (libc_base != NULL && libc_base == object_base(syms.malloc_addr)) {
            in.family = TIDE_MEM_ALLOC_GLIBC;
            copy_str(in.version, sizeof in.version, gnu_get_libc_version());
            snprintf(in.evidence, sizeof in.evidence,
                     "malloc is libc's own and no other allocator owns a live block");
        } else {
            snprintf(in.evidence, sizeof in.evidence,
                     "malloc is defined in %.120s, which no known allocator claims",
                     in.library[0] ? in.library : "an object dladdr cannot name");
        }
    }
    free(p);

    if (in.family == TIDE_MEM_ALLOC_GLIBC) in.via = TIDE_MEM_ALLOC_VIA_LIBC;
    else if (defined_in_executable(syms.malloc_addr)) in.via = TIDE_MEM_ALLOC_VIA_STATIC;
    else if (in.library[0] && preloaded(in.library)) in.via = TIDE_MEM_ALLOC_VIA_PRELOAD;
    else if (in.library[0]) in.via = TIDE_MEM_ALLOC_VIA_LINKED;
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

/* ---- mallopt record ------------------------------------------------------ */

static const struct { int param; const char *name; } mallopt_params[] = {
    { M_MMAP_THRESHOLD, "mmap_threshold" },
    { M_TRIM_THRESHOLD, "trim_threshold" },
    { M_TOP_PAD,        "top_pad" },
    { M_MMAP_MAX,       "mmap_max" },
    { M_ARENA_MAX,      "arena_max" },
    { M_ARENA_TEST,     "arena_test" },
    { M_MXFAST,         "mxfast" },
    { M_PERTURB,        "perturb" },
};
#define N_MALLOPT (sizeof mallopt_params / sizeof mallopt_params[0])

static pthread_mutex_t mallopt_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { int set; int value; } mallopt_done[N_MALLOPT];

int tide_mem_alloc_mallopt(int param, int value)
{
    size_t i;
    int family, ok;

    for (i = 0; i < N_MALLOPT; i++)
        if (mallopt_params[i].param == param) break;
    if (i == N_MALLOPT)
        return tide_err_set(TIDE_EINVAL, "mallopt: parameter %d is not one Tide sets "
                            "(mmap_threshold, trim_threshold, top_pad, mmap_max, arena_max, "
                            "arena_test, mxfast, perturb)", param);
    family = tide_mem_alloc_family();
    if (family != TIDE_MEM_ALLOC_GLIBC)
        return tide_err_set(TIDE_EINVAL, "mallopt(%s, %d): malloc is served by %s, not glibc; "
                            "not applied", mallopt_params[i].name, value,
                            tide_mem_alloc_family_name(family));
    pthread_mutex_lock(&mallopt_lock);
    ok = mallopt(param, value);
    if (ok == 1) {
        mallopt_done[i].set = 1;
        mallopt_done[i].value = value;
    }
    pthread_mutex_unlock(&mallopt_lock);
    if (ok != 1)
        return tide_err_set(TIDE_EINVAL, "mallopt(%s, %d): glibc refused the value",
                            mallopt_params[i].name, value);
    return 0;
}

/* ---- options -------------------------------------------------------------- */

static void add_option(tide_mem_alloc_options *o, const char *name, size_t name_len,
                       const char *value, const char *source)
{
    tide_mem_alloc_option *op;

    if (o->count == TIDE_MEM_ALLOC_OPTIONS_MAX) {
        o->truncated = 1;
        return;
    }
    op = &o->opt[o->count++];
    if (name_len >= sizeof op->name) {
        name_len = sizeof op->name - 1;
        o->truncated = 1;
    }
    memcpy(op->name, name, name_len);
    op->name[name_len] = '\0';
    if (strlen(value) >= sizeof op->value) o->truncated = 1;
    copy_str(op->value, sizeof op->value, value);
    copy_str(op->source, sizeof op->source, source);
}

static void add_env(tide_mem_alloc_options *o, const char *var)
{
    const char *v = getenv(var);

    if (v) add_option(o, var, strlen(var), v, "env");
}

/* Every environment variable whose name starts with `prefix`. */
static void add_env_prefixed(tide_mem_alloc_options *o, const char *prefix)
{
    size_t pl = strlen(prefix);

    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (eq && strncmp(*e, prefix, pl) == 0)
            add_option(o, *e, (size_t)(eq - *e), eq + 1, "env");
    }
}

/* The glibc.malloc.* items of GLIBC_TUNABLES ("a.b.c=v:d.e.f=w"). */
static void add_tunables(tide_mem_alloc_options *o)
{
    const char *t = getenv("GLIBC_TUNABLES");
    char value[80];

    while (t && *t) {
        size_t n = strcspn(t, ":");
        const char *eq = memchr(t, '=', n);
        if (eq && n > 13 && strncmp(t, "glibc.malloc.", 13) == 0) {
            size_t vl = n - (size_t)(eq + 1 - t);
            if (vl >= sizeof value) { vl = sizeof value - 1; o->truncated = 1; }
            memcpy(value, eq + 1, vl);
            value[vl] = '\0';
            add_option(o, t, (size_t)(eq - t), value, "tunables");
        }
        t += n;
        if (*t) t++;
    }
}

static void add_jemalloc_bool(tide_mem_alloc_options *o, const char *ctl, const char *name)
{
    bool b;
    size_t sz = sizeof b;

    if (syms.mallctl(ctl, &b, &sz, NULL, 0) == 0)
        add_option(o, name, strlen(name), b ? "true" : "false", "mallctl");
}

static void add_jemalloc_ssize(tide_mem_alloc_options *o, const char *ctl, const char *name)
{
    ssize_t v;
    size_t sz = sizeof v;
    char text[32];

    if (syms.mallctl(ctl, &v, &sz, NULL, 0) == 0) {
        snprintf(text, sizeof text, "%zd", v);
        add_option(o, name, strlen(name), text, "mallctl");
    }
}

static void add_jemalloc_unsigned(tide_mem_alloc_options *o, const char *ctl, const char *name)
{
    unsigned v;
    size_t sz = sizeof v;
    char text[32];

    if (syms.mallctl(ctl, &v, &sz, NULL, 0) == 0) {
        snprintf(text, sizeof text, "%u", v);
        add_option(o, name, strlen(name), text, "mallctl");
    }
}

static void add_tc_property(tide_mem_alloc_options *o, const char *prop)
{
    size_t v = 0;
    char text[32];

    if (syms.tc_get_prop(prop, &v)) {
        snprintf(text, sizeof text, "%zu", v);
        add_option(o, prop, strlen(prop), text, "property");
    }
}

int tide_mem_alloc_options_read(int family, tide_mem_alloc_options *out)
{
    get_syms();
    memset(out, 0, sizeof *out);
    out->family = family;
    switch (family) {
    case TIDE_MEM_ALLOC_JEMALLOC:
        if (syms.mallctl) {
            add_jemalloc_bool(out, "opt.background_thread", "background_thread");
            add_jemalloc_ssize(out, "opt.dirty_decay_ms", "dirty_decay_ms");
            add_jemalloc_ssize(out, "opt.muzzy_decay_ms", "muzzy_decay_ms");
            add_jemalloc_unsigned(out, "opt.narenas", "narenas");
            add_jemalloc_bool(out, "background_thread", "background_thread_now");
        }
        add_env(out, "MALLOC_CONF");
        break;
    case TIDE_MEM_ALLOC_GLIBC: {
        static const char *const vars[] = {
            "MALLOC_ARENA_MAX", "MALLOC_ARENA_TEST", "MALLOC_MMAP_THRESHOLD_",
            "MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
            "MALLOC_PERTURB_", "MALLOC_CHECK_",
        };
        char text[32];
        for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) add_env(out, vars[i]);
        add_tunables(out);
        pthread_mutex_lock(&mallopt_lock);
        for (size_t i = 0; i < N_MALLOPT; i++) {
            if (!mallopt_done[i].set) continue;
            snprintf(text, sizeof text, "%d", mallopt_done[i].value);
            add_option(out, mallopt_params[i].name, strlen(mallopt_params[i].name), text,
                       "mallopt");
        }
        pthread_mutex_unlock(&mallopt_lock);
        break;
    }
    case TIDE_MEM_ALLOC_TCMALLOC:
        if (syms.tc_get_prop) {
            add_tc_property(out, "tcmalloc.max_total_thread_cache_bytes");
            add_tc_property(out, "tcmalloc.aggressive_memory_decommit");
        }
        add_env_prefixed(out, "TCMALLOC_");
        break;
    case TIDE_MEM_ALLOC_MIMALLOC:
        add_env_prefixed(out, "MIMALLOC_");
        break;
    case TIDE_MEM_ALLOC_SANITIZER:
        add_env(out, "ASAN_OPTIONS");
        add_env(out, "TSAN_OPTIONS");
        add_env(out, "MSAN_OPTIONS");
        add_env(out, "LSAN_OPTIONS");
        break;
    case TIDE_MEM_ALLOC_UNKNOWN:
        break;
    default:
        return tide_err_set(TIDE_EINVAL, "allocator options: family %d is out of range", family);
    }
    return 0;
}

const char *tide_mem_alloc_option_get(const tide_mem_alloc_options *o, const char *name)
{
    for (size_t i = 0; i < o->count; i++)
        if (strcmp(o->opt[i].name, name) == 0) return o->opt[i].value;
    return NULL;
}

int tide_mem_alloc_options_format(const tide_mem_alloc_options *o, char *buf, size_t cap)
{
    size_t used = 0;

    if (cap) buf[0] = '\0';
    if (o->count == 0) return snprintf(buf, cap, "(none)");
    for (size_t i = 0; i < o->count; i++) {
        int n = snprintf(used < cap ? buf + used : NULL, used < cap ? cap - used : 0,
                         "%s%s=%s", i ? " " : "", o->opt[i].name, o->opt[i].value);
        if (n < 0) return n;
        used += (size_t)n;
    }
    return (int)used;
}

/* ---- statistics ------------------------------------------------------------ */

/* A stdio sink that counts "<heap nr=" in malloc_info's XML as it passes. */
struct heap_counter { size_t matched; unsigned heaps; };
static const char heap_tag[] = "<heap nr=";

static ssize_t heap_count_write(void *cookie, const char *buf, size_t n)
{
    struct heap_counter *hc = cookie;

    for (size_t i = 0; i < n; i++) {
        if (buf[i] == heap_tag[hc->matched]) {
            if (++hc->matched == sizeof heap_tag - 1) {
                hc->heaps++;
                hc->matched = 0;
            }
        } else {
            hc->matched = buf[i] == '<' ? 1 : 0;
        }
    }
    return (ssize_t)n;
}

static int glibc_arena_count(unsigned *out)
{
    struct heap_counter hc = { 0, 0 };
    cookie_io_functions_t io = { .read = NULL, .write = heap_count_write,
                                 .seek = NULL, .close = NULL };
    char vbuf[2048];
    FILE *f;
    int rc;

    f = fopencookie(&hc, "w", io);
    if (f == NULL) return -1;
    setvbuf(f, vbuf, _IOFBF, sizeof vbuf);
    rc = malloc_info(0, f);
    fclose(f);
    if (rc != 0 || hc.heaps == 0) return -1;
    *out = hc.heaps;
    return 0;
}

static int jemalloc_size(const char *name, uint64_t *out)
{
    size_t v = 0, sz = sizeof v;
    int e = syms.mallctl(name, &v, &sz, NULL, 0);

    if (e != 0)
        return tide_err_set(TIDE_EIO, "jemalloc: mallctl(\"%s\"): %s", name, strerror(e));
    *out = v;
    return 0;
}

int tide_mem_alloc_stats_read(int family, tide_mem_alloc_stats *out)
{
    tide_mem_alloc_stats s;
    int rc = 0;

    get_syms();
    memset(&s, 0, sizeof s);
    s.family = family;
    switch (family) {
    case TIDE_MEM_ALLOC_GLIBC: {
        struct mallinfo2 mi = mallinfo2();
        s.glibc.arena = mi.arena;
        s.glibc.in_use = mi.uordblks;
        s.glibc.free = mi.fordblks;
        s.glibc.mmap = mi.hblkhd;
        s.glibc.mmap_count = mi.hblks;
        s.glibc.top_releasable = mi.keepcost;
        s.glibc.has_arenas = glibc_arena_count(&s.glibc.arenas) == 0;
        break;
    }
    case TIDE_MEM_ALLOC_JEMALLOC: {
        uint64_t epoch = 1, page = 0, pdirty = 0, pmuzzy = 0;
        size_t sz = sizeof epoch;
        int e;
        if (!syms.mallctl) goto absent;
        e = syms.mallctl("epoch", &epoch, &sz, &epoch, sizeof epoch);
        if (e != 0)
            return tide_err_set(TIDE_EIO, "jemalloc: mallctl(\"epoch\"): %s", strerror(e));
        if ((rc = jemalloc_size("stats.allocated", &s.jemalloc.allocated)) ||
            (rc = jemalloc_size("stats.active", &s.jemalloc.active)) ||
            (rc = jemalloc_size("stats.resident", &s.jemalloc.resident)) ||
            (rc = jemalloc_size("stats.mapped", &s.jemalloc.mapped)) ||
            (rc = jemalloc_size("stats.retained", &s.jemalloc.retained)) ||
            (rc = jemalloc_size("stats.metadata", &s.jemalloc.metadata)) ||
            (rc = jemalloc_size("arenas.page", &page)) ||
            (rc = jemalloc_size("stats.arenas." JEMALLOC_ARENAS_ALL ".pdirty", &pdirty)) ||
            (rc = jemalloc_size("stats.arenas." JEMALLOC_ARENAS_ALL ".pmuzzy", &pmuzzy)))
            return rc;
        s.jemalloc.dirty = pdirty * page;
        s.jemalloc.muzzy = pmuzzy * page;
        break;
    }
    case TIDE_MEM_ALLOC_TCMALLOC: {
        size_t v[4] = { 0, 0, 0, 0 };
        static const char *const props[4] = {
            "generic.current_allocated_bytes", "generic.heap_size",
            "tcmalloc.pageheap_free_bytes", "tcmalloc.pageheap_unmapped_bytes",
        };
        if (!syms.tc_get_prop) goto absent;
        for (int i = 0; i < 4; i++)
            if (!syms.tc_get_prop(props[i], &v[i]))
                return tide_err_set(TIDE_EIO, "tcmalloc: property %s is not available", props[i]);
        s.tcmalloc.allocated = v[0];
        s.tcmalloc.heap_size = v[1];
        s.tcmalloc.pageheap_free = v[2];
        s.tcmalloc.pageheap_unmapped = v[3];
        break;
    }
    case TIDE_MEM_ALLOC_MIMALLOC: {
        size_t elapsed, user, sys, rss, peak_rss, commit, peak_commit, faults;
        if (!syms.mi_process_info) goto absent;
        syms.mi_process_info(&elapsed, &user, &sys, &rss, &peak_rss, &commit, &peak_commit,
                             &faults);
        s.mimalloc.current_rss = rss;
        s.mimalloc.peak_rss = peak_rss;
        s.mimalloc.current_commit = commit;
        s.mimalloc.peak_commit = peak_commit;
        s.mimalloc.page_faults = faults;
        break;
    }
    case TIDE_MEM_ALLOC_SANITIZER:
        if (!syms.san_allocated || !syms.san_heap_size || !syms.san_free) goto absent;
        s.sanitizer.allocated = syms.san_allocated();
        s.sanitizer.heap_size = syms.san_heap_size();
        s.sanitizer.free = syms.san_free();
        break;
    default:
        return tide_err_set(TIDE_EINVAL, "allocator statistics: no statistics for family %s (%d)",
                            tide_mem_alloc_family_name(family), family);
    }
    *out = s;
    return 0;
absent:
    return tide_err_set(TIDE_EINVAL, "allocator statistics: %s's symbols are not in this process",
                        tide_mem_alloc_family_name(family));
}

/* ---- release --------------------------------------------------------------- */

int tide_mem_alloc_release(int family, int *result)
{
    get_syms();
    *result = 0;
    switch (family) {
    case TIDE_MEM_ALLOC_GLIBC:
        *result = malloc_trim(0);
        return 0;
    case TIDE_MEM_ALLOC_JEMALLOC: {
        int e;
        if (!syms.mallctl) break;
        e = syms.mallctl("arena." JEMALLOC_ARENAS_ALL ".purge", NULL, NULL, NULL, 0);
        if (e != 0)
            return tide_err_set(TIDE_EIO, "jemalloc: mallctl(\"arena." JEMALLOC_ARENAS_ALL
                                ".purge\"): %s", strerror(e));
        *result = 1;
        return 0;
    }
    case TIDE_MEM_ALLOC_TCMALLOC:
        if (!syms.tc_release) break;
        syms.tc_release();
        *result = 1;
        return 0;
    case TIDE_MEM_ALLOC_MIMALLOC:
        if (!syms.mi_collect) break;
        syms.mi_collect(true);
        *result = 1;
        return 0;
    case TIDE_MEM_ALLOC_SANITIZER:
        if (syms.san_purge) {
            syms.san_purge();
            *result = 1;
        }
        return 0;
    default:
        return tide_err_set(TIDE_EINVAL, "allocator release: no release call for family %s (%d)",
                            tide_mem_alloc_family_name(family), family);
    }
    return tide_err_set(TIDE_EINVAL, "allocator release: %s's symbols are not in this process",
                        tide_mem_alloc_family_name(family));
}
