/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * alloc_heap.c: the allocator's own report of its heap (alloc.h's
 * tide_mem_alloc_heap_report), which tided's GET /v1/admin/heap sends.
 *
 * jemalloc writes a profile only to a file it opens itself (prof.dump takes
 * a file name), so the report goes through a private file: mkstemp makes it
 * (mode 0600, a name nobody else can guess), jemalloc truncates and writes
 * it, it is read back whole and unlinked. glibc's malloc_info writes to a
 * FILE *, which open_memstream keeps in memory.
 *
 * Invariants:
 *   1. No file this module made outlives the call, whatever fails.
 *   2. *out is set only on success with a report; else NULL.
 *
 * Never: call mallctl when ti_alloc_syms has none; read the dump through a
 * name another process could have replaced (the descriptor mkstemp gave is
 * the one read).
 */
#include "mem/alloc_impl.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tide/error.h"
#include "util/err.h"

/* Read the whole of `fd` (from its start) into a malloc'd buffer with a NUL
 * after it. */
static int read_fd(int fd, const char *path, char **out, size_t *len)
{
    struct stat st;
    char *buf = NULL;
    size_t cap, n = 0;
    int rc = 0;

    if (fstat(fd, &st) != 0) {
        rc = tide_err_set(TIDE_EIO, "heap report %s: fstat: %s", path, strerror(errno));
        goto out;
    }
    cap = (size_t)st.st_size + 1;
    buf = malloc(cap);
    if (buf == NULL) { rc = TIDE_ENOMEM; goto out; }
    for (;;) {
        ssize_t got;
        if (n + 1 == cap) {     /* it grew after the fstat: make room */
            char *more = realloc(buf, cap * 2);
            if (more == NULL) { rc = TIDE_ENOMEM; goto out; }
            buf = more;
            cap *= 2;
        }
        got = pread(fd, buf + n, cap - 1 - n, (off_t)n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            rc = tide_err_set(TIDE_EIO, "heap report %s: read: %s", path, strerror(errno));
            goto out;
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    buf = NULL;
out:
    free(buf);
    return rc;
}

static int jemalloc_report(const char *dir, char **out, size_t *len, int *kind)
{
    char path[4096];
    const char *name = path;
    _Bool prof = 0;
    size_t sz = sizeof prof;
    int fd = -1, rc = 0, e;

    *kind = TIDE_MEM_HEAP_PROF_OFF;
    if (!ti_alloc_syms.mallctl || ti_alloc_syms.mallctl("opt.prof", &prof, &sz, NULL, 0) != 0 || !prof)
        return 0;   /* off, or a jemalloc built without profiling (no opt.prof) */
    if (dir == NULL || dir[0] == '\0') dir = getenv("TMPDIR");
    if (dir == NULL || dir[0] == '\0') dir = "/tmp";
    if ((size_t)snprintf(path, sizeof path, "%s/tide-heap-XXXXXX", dir) >= sizeof path)
        return tide_err_set(TIDE_EIO, "heap report: the directory name %s is too long", dir);
    fd = mkstemp(path);
    if (fd < 0) return tide_err_set(TIDE_EIO, "heap report: mkstemp %s: %s", path, strerror(errno));
    e = ti_alloc_syms.mallctl("prof.dump", NULL, NULL, (void *)&name, sizeof name);
    if (e != 0) {
        rc = tide_err_set(TIDE_EIO, "heap report: jemalloc's mallctl(\"prof.dump\") into %s: %s", path,
                          strerror(e));
        goto out;
    }
    /* jemalloc opened the name again and truncated the same inode: the
     * descriptor reads what it wrote. */
    rc = read_fd(fd, path, out, len);
    if (rc == 0) *kind = TIDE_MEM_HEAP_JEMALLOC_PROF;
out:
    close(fd);
    unlink(path);
    return rc;
}

static int glibc_report(char **out, size_t *len, int *kind)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    int rc = 0;

    if (f == NULL) return TIDE_ENOMEM;
    if (malloc_info(0, f) != 0) {
        rc = tide_err_set(TIDE_EIO, "heap report: malloc_info: %s", strerror(errno));
    }
    if (fclose(f) != 0 && rc == 0) rc = TIDE_ENOMEM;   /* the stream could not grow */
    if (rc) {
        free(buf);
        return rc;
    }
    *out = buf;
    *len = n;
    *kind = TIDE_MEM_HEAP_GLIBC_INFO;
    return 0;
}

int tide_mem_alloc_heap_report(int family, const char *dir, char **out, size_t *len, int *kind)
{
    ti_alloc_get_syms();
    *out = NULL;
    *len = 0;
    *kind = TIDE_MEM_HEAP_NONE;
    if (family == TIDE_MEM_ALLOC_JEMALLOC) return jemalloc_report(dir, out, len, kind);
    if (family == TIDE_MEM_ALLOC_GLIBC) return glibc_report(out, len, kind);
    return 0;
}
