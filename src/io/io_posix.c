/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * io_posix.c: the file interface on the real file system.
 *
 * A tide_file here is a file descriptor and the path it was opened with (for
 * messages). Positional reads and writes (pread/pwrite) loop until the whole
 * length is done, so callers never see a short transfer. Durability is
 * fdatasync(2), which also flushes a changed file size; directory entries are
 * made durable with fsync(2) on the directory.
 *
 * Invariants:
 *   1. Every failure maps errno through tide_err_from_errno and records
 *      "path: operation at offset N: strerror" for tide_last_error().
 *   2. The counters in the tide_io are updated with relaxed atomics only,
 *      so any thread may use any file.
 *   3. open never blocks and opens only regular files: a FIFO, directory,
 *      device or socket at a store file's path is TIDE_ENOTSTORE at once
 *      (looked at with stat first, then opened O_NONBLOCK and checked again
 *      with fstat, then made blocking again).
 *   4. list collects every name of the directory (readdir) before it calls
 *      back, sorted with strcmp, so the order is the same on every file
 *      system and the callback may change the directory. Its memory is one
 *      array of pointers and one copy of each name: O(entries x name
 *      length), freed before it returns.
 *
 *   5. A map (posix_map) is one reservation of address space (PROT_NONE,
 *      no memory committed) with the file mapped over its start, PROT_READ
 *      and MAP_SHARED, in page-aligned pieces with MAP_FIXED as the caller
 *      asks for more: the base never moves. A MAP_FIXED that fails may
 *      leave its range unreserved, so the map stops growing there
 *      (reserved := mapped) rather than ever map over what another mmap
 *      may since have been given; the reservation past the failed range
 *      is released at once (at most that one range, no memory, is held
 *      until exit).
 *
 *   6. No map of a file on tmpfs (or ramfs): there the file's pages are
 *      shared memory, and a process that maps them is charged them as
 *      RssShmem, which the memory governor and rotation_max_rss count as
 *      the node's own (proc.c). pread leaves them out of the process, as
 *      the page cache of a disk is. The caller reads with pread instead.
 *
 * Never: retry a failed fdatasync. After a failed sync the kernel may have
 *   dropped the dirty pages, so the caller must treat the data as lost.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include "io/io.h"
#include "util/err.h"

struct tide_file {
    int fd;
    tide_io *io;
    char path[];
};

static void count(uint64_t *c, uint64_t n) { __atomic_fetch_add(c, n, __ATOMIC_RELAXED); }

static int fail(const char *path, const char *op, uint64_t off, int e)
{
    int code = tide_err_from_errno(e);
    if (off == UINT64_MAX)
        return tide_err_set(code, "%s: %s: %s", path, op, strerror(e));
    return tide_err_set(code, "%s: %s at offset %llu: %s", path, op,
                        (unsigned long long)off, strerror(e));
}

const char *tide_io_file_kind(unsigned mode)
{
    mode_t m = (mode_t)mode;
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISDIR(m)) return "a directory";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

static int not_regular(const char *path, mode_t m)
{
    return tide_err_set(TIDE_ENOTSTORE, "%s: is %s, not a regular file: a store's files are "
                        "regular files; nothing was opened", path, tide_io_file_kind(m));
}

static int posix_open(tide_io *io, const char *path, int flags, tide_file **out)
{
    int oflags = O_CLOEXEC | O_NONBLOCK;
    tide_file *f = NULL;
    size_t n = strlen(path);
    struct stat st;
    int fd, fl;

    if (flags & TIDE_IO_CREATE) oflags |= O_RDWR | O_CREAT;
    else if (flags & TIDE_IO_WRITE) oflags |= O_RDWR;
    else oflags |= O_RDONLY;
    if ((flags & TIDE_IO_CREATE) && (flags & TIDE_IO_EXCL)) oflags |= O_EXCL;

    /* A FIFO's open(2) waits for its other end, a device's may act on the
     * device, a socket's fails with a puzzling ENXIO: look first. The
     * open is non-blocking too, so a FIFO put in place after the look is
     * still refused at once, by the fstat below. */
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) return not_regular(path, st.st_mode);
    f = malloc(sizeof *f + n + 1);
    if (f == NULL) return tide_err_set(TIDE_ENOMEM, "%s: open: out of memory", path);
    do fd = open(path, oflags, 0644); while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        int e = errno;
        free(f);
        return fail(path, "open", UINT64_MAX, e);
    }
    if (fstat(fd, &st) != 0 || (S_ISREG(st.st_mode) && ((fl = fcntl(fd, F_GETFL)) < 0 ||
                                                        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0))) {
        int e = errno;
        close(fd);
        free(f);
        return fail(path, "open", UINT64_MAX, e);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        free(f);
        return not_regular(path, st.st_mode);
    }
    f->fd = fd;
    f->io = io;
    memcpy(f->path, path, n + 1);
    *out = f;
    return 0;
}

static void posix_close(tide_file *f)
{
    if (f == NULL) return;
    close(f->fd);
    free(f);
}

/* pread into rbuf (writing 0) or pwrite from wbuf (writing 1) all `len`
 * bytes at `off`, retrying on EINTR and after a partial transfer; counts
 * the call once it is whole. A read that meets the end of the file is
 * TIDE_ECORRUPT (a short read); a write that makes no progress is
 * TIDE_EIO. */
static int transfer(tide_file *f, int writing, void *rbuf, const void *wbuf, size_t len,
                    uint64_t off)
{
    const char *what = writing ? "write" : "read";
    size_t done = 0;

    while (done < len) {
        off_t at = (off_t)(off + done);
        ssize_t n = writing ? pwrite(f->fd, (const uint8_t *)wbuf + done, len - done, at)
                            : pread(f->fd, (uint8_t *)rbuf + done, len - done, at);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(f->path, what, off + done, errno);
        }
        if (n == 0 && !writing)
            return tide_err_set(TIDE_ECORRUPT, "%s: short read at offset %llu: wanted %zu bytes, "
                                "the file ends after %zu", f->path,
                                (unsigned long long)off, len, done);
        if (n == 0) return fail(f->path, what, off + done, EIO);
        done += (size_t)n;
    }
    count(writing ? &f->io->bytes_written : &f->io->bytes_read, len);
    count(writing ? &f->io->writes : &f->io->reads, 1);
    return 0;
}

static int posix_read_at(tide_file *f, void *buf, size_t len, uint64_t off)
{
    return transfer(f, 0, buf, NULL, len, off);
}

static int posix_write_at(tide_file *f, const void *buf, size_t len, uint64_t off)
{
    return transfer(f, 1, NULL, buf, len, off);
}

static int posix_sync(tide_file *f)
{
    if (fdatasync(f->fd) != 0) return fail(f->path, "fdatasync", UINT64_MAX, errno);
    count(&f->io->syncs, 1);
    return 0;
}

static int posix_truncate(tide_file *f, uint64_t size)
{
    int r;
    do r = ftruncate(f->fd, (off_t)size); while (r != 0 && errno == EINTR);
    if (r != 0) return fail(f->path, "truncate", size, errno);
    return 0;
}

static int posix_size(tide_file *f, uint64_t *out)
{
    struct stat st;
    if (fstat(f->fd, &st) != 0) return fail(f->path, "stat", UINT64_MAX, errno);
    *out = (uint64_t)st.st_size;
    return 0;
}

static int posix_lock(tide_file *f, int exclusive)
{
    if (flock(f->fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            return tide_err_set(TIDE_EBUSY, exclusive
                                ? "%s: the store is open in another process or handle"
                                : "%s: the store is open for writing in another process or handle",
                                f->path);
        return fail(f->path, "lock", UINT64_MAX, errno);
    }
    return 0;
}

static int posix_unlink(tide_io *io, const char *path)
{
    (void)io;
    if (unlink(path) != 0) return fail(path, "unlink", UINT64_MAX, errno);
    return 0;
}

static int posix_rename(tide_io *io, const char *from, const char *to)
{
    (void)io;
    if (rename(from, to) != 0) return fail(from, "rename", UINT64_MAX, errno);
    return 0;
}

static int posix_sync_dir(tide_io *io, const char *dir)
{
    int fd, rc = 0;
    do fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); while (fd < 0 && errno == EINTR);
    if (fd < 0) return fail(dir, "open directory", UINT64_MAX, errno);
    if (fsync(fd) != 0) rc = fail(dir, "fsync directory", UINT64_MAX, errno);
    else count(&io->syncs, 1);
    close(fd);
    return rc;
}

static int posix_stat(tide_io *io, const char *path, int *is_dir)
{
    struct stat st;
    (void)io;
    if (stat(path, &st) != 0) return fail(path, "stat", UINT64_MAX, errno);
    if (is_dir) *is_dir = S_ISDIR(st.st_mode);
    return 0;
}

static int posix_link(tide_io *io, const char *path, char *target, size_t cap, int *dangling)
{
    struct stat st;
    char *real;
    ssize_t n;
    (void)io;

    *dangling = 0;
    if (cap == 0 || lstat(path, &st) != 0 || !S_ISLNK(st.st_mode)) return 0;
    if ((real = realpath(path, NULL)) != NULL) {
        snprintf(target, cap, "%s", real);
        free(real);
        return 1;
    }
    /* A loop, or a directory this user may not search: the open that
     * follows meets the same error and says so. */
    if (errno != ENOENT) return 0;
    *dangling = 1;
    n = readlink(path, target, cap - 1);
    target[n < 0 ? 0 : n] = '\0';
    return 1;
}

static int posix_free_bytes(tide_io *io, const char *dir, uint64_t *out)
{
    struct statfs st;
    (void)io;
    if (statfs(dir, &st) != 0) return fail(dir, "statfs", UINT64_MAX, errno);
    *out = (uint64_t)st.f_bavail * (uint64_t)st.f_bsize;
    return 0;
}

static int posix_mkdir(tide_io *io, const char *path)
{
    (void)io;
    if (mkdir(path, 0755) != 0) return fail(path, "mkdir", UINT64_MAX, errno);
    return 0;
}

static int posix_rmdir(tide_io *io, const char *path)
{
    (void)io;
    if (rmdir(path) == 0) return 0;
    /* POSIX lets rmdir say EEXIST for a directory with entries. */
    if (errno == ENOTEMPTY || errno == EEXIST)
        return tide_err_set(TIDE_ENOTEMPTY, "%s: rmdir: %s", path, strerror(ENOTEMPTY));
    return fail(path, "rmdir", UINT64_MAX, errno);
}

/* The names of directory `dir` (opened as `d`), "." and ".." left out,
 * into a malloc'd array *names of *n malloc'd strings, each followed by
 * its is_dir byte after the terminating NUL. */
static int read_names(const char *dir, DIR *d, char ***names, size_t *n)
{
    size_t cap = 0;
    struct dirent *e;

    *names = NULL;
    *n = 0;
    for (;;) {
        size_t len;
        char *copy;
        int is_dir;

        errno = 0;
        if ((e = readdir(d)) == NULL) break;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        is_dir = e->d_type == DT_DIR;
        if (e->d_type == DT_UNKNOWN) {
            struct stat st;
            is_dir = fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0
                     && S_ISDIR(st.st_mode);
        }
        if (*n == cap) {
            size_t c = cap ? cap * 2 : 16;
            char **p = realloc(*names, c * sizeof *p);
            if (p == NULL) return tide_err_set(TIDE_ENOMEM, "%s: list: out of memory", dir);
            *names = p;
            cap = c;
        }
        len = strlen(e->d_name);
        if ((copy = malloc(len + 2)) == NULL)
            return tide_err_set(TIDE_ENOMEM, "%s: list: out of memory", dir);
        memcpy(copy, e->d_name, len + 1);
        copy[len + 1] = (char)is_dir;
        (*names)[(*n)++] = copy;
    }
    if (errno != 0) return fail(dir, "read directory", UINT64_MAX, errno);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int posix_list(tide_io *io, const char *dir,
                      int (*fn)(void *arg, const char *name, int is_dir), void *arg)
{
    char **names = NULL;
    size_t n = 0;
    DIR *d;
    int rc;

    (void)io;
    if ((d = opendir(dir)) == NULL) return fail(dir, "open directory", UINT64_MAX, errno);
    rc = read_names(dir, d, &names, &n);
    closedir(d);
    if (rc == 0 && n > 1) qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = fn(arg, names[i], names[i][strlen(names[i]) + 1]);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

/* Read /proc/PID/comm into comm (cap bytes), without its newline. */
static void read_comm(int pid, char *comm, size_t cap)
{
    char path[64];
    ssize_t n = -1;
    int fd;

    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, comm, cap - 1);
        close(fd);
    }
    if (n <= 0) { snprintf(comm, cap, "?"); return; }
    comm[n] = '\0';
    comm[strcspn(comm, "\n")] = '\0';
}

/*
 * Every /proc/PID/fd/N is a link to what the process has open; fstatat
 * through it (following the link) gives the file's device and inode, so a
 * file is recognised whatever name the process opened it by, even after a
 * rename. Cost: one stat per descriptor of every process this one may look
 * into (about 1 ms per 1000 descriptors).
 */
static int posix_holders(tide_io *io, const char *const *paths, unsigned n,
                         tide_io_holder *out, size_t cap, size_t *count)
{
    struct { dev_t dev; ino_t ino; int ok; } want[8];
    DIR *proc = NULL;
    struct dirent *d;
    int self = (int)getpid(), any = 0;

    (void)io;
    *count = 0;
    if (n > sizeof want / sizeof want[0])
        return tide_err_set(TIDE_EINVAL, "holders: at most %zu paths", sizeof want / sizeof want[0]);
    for (unsigned i = 0; i < n; i++) {
        struct stat st;
        want[i].ok = stat(paths[i], &st) == 0;
        if (want[i].ok) { want[i].dev = st.st_dev; want[i].ino = st.st_ino; any = 1; }
    }
    if (!any) return 0;
    if ((proc = opendir("/proc")) == NULL) return fail("/proc", "open directory", UINT64_MAX, errno);
    while ((d = readdir(proc)) != NULL) {
        char fddir[64];
        DIR *fds;
        struct dirent *e;
        int pid, counted = 0;

        if (!isdigit((unsigned char)d->d_name[0])) continue;
        pid = atoi(d->d_name);
        if (pid == self) continue;
        snprintf(fddir, sizeof fddir, "/proc/%d/fd", pid);
        if ((fds = opendir(fddir)) == NULL) continue;      /* gone, or not ours to see */
        while (!counted && (e = readdir(fds)) != NULL) {
            struct stat st;
            if (e->d_name[0] == '.') continue;
            if (fstatat(dirfd(fds), e->d_name, &st, 0) != 0) continue;
            for (unsigned i = 0; i < n; i++) {
                if (!want[i].ok || st.st_dev != want[i].dev || st.st_ino != want[i].ino) continue;
                if (*count < cap) {
                    out[*count].pid = pid;
                    out[*count].path = i;
                    read_comm(pid, out[*count].comm, sizeof out[*count].comm);
                }
                (*count)++;
                counted = 1;              /* one entry per process is enough */
                break;
            }
        }
        closedir(fds);
    }
    closedir(proc);
    return 0;
}

/* tide.live's page (io.h: share). */
static int posix_share(tide_file *f, size_t len, int writable, void **out)
{
    void *p;

    /* A store through a shared map into a hole of the file allocates its
     * block at that moment, and a full disk then kills the process with
     * SIGBUS: the blocks are allocated here instead, where a full disk is
     * an error. A file system without fallocate keeps the old way. */
    if (writable) {
        int e = posix_fallocate(f->fd, 0, (off_t)len);
        if (e != 0 && e != EOPNOTSUPP && e != EINVAL) return fail(f->path, "allocate", UINT64_MAX, e);
    }
    p = mmap(NULL, len, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, f->fd, 0);
    if (p == MAP_FAILED) return fail(f->path, "mmap", UINT64_MAX, errno);
    *out = p;
    return 0;
}

static void posix_unshare(void *p, size_t len)
{
    if (p) munmap(p, len);
}

/* ---- maps (invariant 5) ---- */

static uint64_t page_round(uint64_t n)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    return (n + page - 1) / page * page;
}

/* Reserve m->reserved bytes (or the largest half, quarter, ... of it that
 * the kernel grants, down to `need`). */
static int map_reserve(tide_file *f, tide_io_map *m, uint64_t need)
{
    uint64_t r = page_round(m->reserved < need ? need : m->reserved);
    void *p = MAP_FAILED;

    while (r >= need && r > 0) {
        p = mmap(NULL, (size_t)r, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p != MAP_FAILED) break;
        r = page_round(r / 2);
        if (r < need) break;
    }
    if (p == MAP_FAILED)
        return tide_err_set(TIDE_ENOMEM, "%s: map: cannot reserve %llu bytes of address space: %s",
                            f->path, (unsigned long long)need, strerror(errno));
    m->base = p;
    m->reserved = r;
    m->mapped = 0;
    return 0;
}

/* Invariant 6: 0 when the file may be mapped. */
static int map_allowed(const tide_file *f)
{
    struct statfs fs;

    if (fstatfs(f->fd, &fs) != 0) return fail(f->path, "fstatfs", UINT64_MAX, errno);
    if (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC)
        return tide_err_set(TIDE_EINVAL, "%s: not mapped: the file is on tmpfs, where a map's "
                            "pages would count as this process's shared memory (RssShmem, "
                            "which the memory limit counts); read with pread", f->path);
    return 0;
}

/* Read-around fills memory with the neighbours of a page that scattered
 * reads will not ask for, pushing out pages they will: under memory
 * pressure each fault of a random record read 128 KiB for 232 bytes. The
 * advice is a hint: a kernel that refuses it still reads correctly. */
static void advise_random(tide_io_map *m)
{
    if (m->random_access && m->advised < m->mapped) {
        (void)madvise((uint8_t *)(uintptr_t)m->base + m->advised, (size_t)(m->mapped - m->advised),
                      MADV_RANDOM);
        m->advised = m->mapped;
    }
}

static int posix_map(tide_file *f, tide_io_map *m, uint64_t len)
{
    uint64_t want = page_round(len);
    void *at, *p;
    int rc;

    if (m->base == NULL && (rc = map_allowed(f)) != 0) return rc;
    if (m->base == NULL && (rc = map_reserve(f, m, want)) != 0) return rc;
    if (want <= m->mapped) {
        advise_random(m);
        return 0;
    }
    if (want > m->reserved)
        return tide_err_set(TIDE_ENOMEM, "%s: map: %llu bytes exceed the %llu reserved", f->path,
                            (unsigned long long)want, (unsigned long long)m->reserved);
    at = (uint8_t *)(uintptr_t)m->base + m->mapped;
    p = mmap(at, (size_t)(want - m->mapped), PROT_READ, MAP_SHARED | MAP_FIXED, f->fd,
             (off_t)m->mapped);
    if (p == MAP_FAILED) {
        int e = errno;
        /* Invariant 5: never map over [mapped, ...) again. The failed call
         * touched [mapped, want) only: [want, reserved) is still ours,
         * released now (unmap releases [0, reserved) alone, so it would be
         * held until the process exits). [mapped, want) may be a hole
         * another mmap has since been given: left alone. */
        if (m->reserved > want)
            munmap((uint8_t *)(uintptr_t)m->base + want, (size_t)(m->reserved - want));
        m->reserved = m->mapped;
        return fail(f->path, "mmap", m->mapped, e);
    }
    m->mapped = want;
    advise_random(m);
    return 0;
}

static void posix_unmap(tide_io_map *m)
{
    if (m->base) munmap((void *)(uintptr_t)m->base, (size_t)m->reserved);
    memset(m, 0, sizeof *m);
}

/* Pages of the map present in this process's page tables, from
 * /proc/self/pagemap (one u64 per virtual page, bit 63: present; readable
 * without privilege, which only zeroes the frame numbers). Not mincore():
 * that reports the file's pages in the page cache, whoever read them in. */
static int posix_map_resident(const tide_io_map *m, uint64_t *bytes)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), pages = 0;
    uint64_t first = (uint64_t)(uintptr_t)m->base / page, total = m->mapped / page;
    uint64_t ent[1024];
    int fd, rc = 0;

    *bytes = 0;
    if (total == 0) return 0;
    if ((fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)) < 0)
        return tide_err_set(TIDE_EIO, "map: /proc/self/pagemap: %s", strerror(errno));
    for (uint64_t at = 0; at < total && rc == 0;) {
        uint64_t n = total - at < 1024 ? total - at : 1024;
        ssize_t got = pread(fd, ent, (size_t)n * sizeof ent[0], (off_t)((first + at) * sizeof ent[0]));
        if (got <= 0 || got % (ssize_t)sizeof ent[0] != 0) {
            rc = tide_err_set(TIDE_EIO, "map: /proc/self/pagemap: %s", got < 0 ? strerror(errno) : "short read");
            break;
        }
        for (uint64_t i = 0; i < (uint64_t)got / sizeof ent[0]; i++) pages += ent[i] >> 63;
        at += (uint64_t)got / sizeof ent[0];
    }
    close(fd);
    if (rc == 0) *bytes = pages * page;
    return rc;
}

static tide_io posix_io = {
    .open = posix_open,
    .close = posix_close,
    .read_at = posix_read_at,
    .write_at = posix_write_at,
    .sync = posix_sync,
    .truncate = posix_truncate,
    .size = posix_size,
    .lock = posix_lock,
    .unlink = posix_unlink,
    .rename = posix_rename,
    .sync_dir = posix_sync_dir,
    .stat = posix_stat,
    .free_bytes = posix_free_bytes,
    .mkdir = posix_mkdir,
    .rmdir = posix_rmdir,
    .list = posix_list,
    .holders = posix_holders,
    .share = posix_share,
    .unshare = posix_unshare,
    .map = posix_map,
    .unmap = posix_unmap,
    .map_resident = posix_map_resident,
    .link = posix_link,
};

tide_io *tide_io_posix(void)
{
    return &posix_io;
}
