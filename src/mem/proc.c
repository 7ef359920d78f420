/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proc.c: reading /proc/self, /proc/PID and /sys without touching the heap.
 *
 * The figures read here are used to judge the allocator, so the readers
 * must not disturb what they measure. Each one is open(2), read(2) into a
 * buffer on the stack, close(2), then a parse over that buffer. There is no
 * stdio (fopen mallocs a FILE and its buffer), no malloc, no locale.
 *
 * The kernel writes these files in one go when they are read from offset 0
 * with a buffer large enough, so a single read usually returns everything;
 * the loop below continues until EOF or the buffer is full regardless.
 * A file larger than the buffer is cut at the buffer's size: the fields read
 * here all sit well inside the first 4 KiB (status) or are tiny (statm, io,
 * sysfs stat). /proc/self/mountinfo, which can be long, is streamed line by
 * line through a fixed buffer instead.
 *
 * The readers of another process (tide_mem_proc_pid_*, for tide lab's
 * sampler of its nodes) are the same functions: pid 0 names "self", any
 * other pid /proc/PID, so both read and parse the same way.
 *
 * smaps_rollup is the exception to "cheap": the kernel builds it by walking
 * every page table of the process under the mmap lock. It has its own
 * function, so that nobody pays for it by asking for RSS.
 *
 * tide_mem_rss_parts_of and _text read nothing: they split a status read
 * into what ps and top add up as RSS (the process's anonymous memory, the
 * store files' read-only maps, code and libraries) and say it in one line,
 * the same in tided's startup log and in tide doctor.
 *
 * Invariants:
 *   1. Every open file descriptor is closed before the function returns.
 *   2. Output structures are written only when the function returns 0.
 *   3. Every failure records the path and the reason with tide_err_set().
 *
 * Never: call malloc, fopen, sscanf, or anything else that may allocate
 * (strtoull and snprintf with %s/%u formats do not).
 */
#include "mem/proc.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tide/error.h"
#include "util/err.h"

/* Read up to cap - 1 bytes of `path` into buf and NUL-terminate it. */
static int read_small(const char *path, char *buf, size_t cap, size_t *len)
{
    size_t n = 0;
    int fd, rc = 0;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return tide_err_set(e == ENOENT ? TIDE_ENOENT : TIDE_EIO,
                            "%s: open: %s", path, strerror(e));
    }
    while (n < cap - 1) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0) {
            if (errno == EINTR) continue;
            rc = tide_err_set(TIDE_EIO, "%s: read at offset %zu: %s", path, n, strerror(errno));
            goto out;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    if (len) *len = n;
out:
    close(fd);
    return rc;
}

/* The unsigned number after "\n<name>" (name includes its colon), or after
 * <name> at the very start of the text. 1 when found. */
static int field_u64(const char *text, const char *name, uint64_t *out)
{
    size_t nl = strlen(name);
    const char *p = text;

    while (p) {
        if (strncmp(p, name, nl) == 0) {
            const char *q = p + nl;
            char *end;
            unsigned long long v;

            while (*q == ' ' || *q == '\t') q++;
            if (*q < '0' || *q > '9') return 0;
            errno = 0;
            v = strtoull(q, &end, 10);
            if (errno) return 0;
            *out = v;
            return 1;
        }
        p = strchr(p, '\n');
        if (p) p++;
    }
    return 0;
}

size_t tide_mem_proc_page_size(void)
{
    long page = sysconf(_SC_PAGESIZE);

    return page > 0 ? (size_t)page : 4096;
}

/* "/proc/self/<file>" for pid 0, "/proc/<pid>/<file>" otherwise. */
static void proc_path(char *buf, size_t cap, pid_t pid, const char *file)
{
    if (pid == 0) snprintf(buf, cap, "/proc/self/%s", file);
    else snprintf(buf, cap, "/proc/%d/%s", (int)pid, file);
}

int tide_mem_proc_pid_statm_rss(pid_t pid, uint64_t *rss_bytes)
{
    char path[48], buf[256], *p, *end;
    unsigned long long pages;
    int rc;

    proc_path(path, sizeof path, pid, "statm");
    rc = read_small(path, buf, sizeof buf, NULL);
    if (rc) return rc;
    /* "size resident shared text lib data dt" */
    p = buf;
    strtoull(p, &end, 10);
    if (end == p) goto bad;
    p = end;
    errno = 0;
    pages = strtoull(p, &end, 10);
    if (end == p || errno) goto bad;
    *rss_bytes = (uint64_t)pages * (uint64_t)tide_mem_proc_page_size();
    return 0;
bad:
    return tide_err_set(TIDE_ECORRUPT, "%s: cannot parse '%.40s'", path, buf);
}

int tide_mem_proc_statm_rss(uint64_t *rss_bytes)
{
    return tide_mem_proc_pid_statm_rss(0, rss_bytes);
}

int tide_mem_proc_status_read(tide_mem_proc_status *out)
{
    char buf[8192];
    tide_mem_proc_status s;
    uint64_t hwm = 0;
    int rc;

    rc = read_small("/proc/self/status", buf, sizeof buf, NULL);
    if (rc) return rc;
    memset(&s, 0, sizeof s);
    if (!field_u64(buf, "VmRSS:", &s.vm_rss))
        return tide_err_set(TIDE_ECORRUPT, "/proc/self/status: no VmRSS line");
    if (field_u64(buf, "VmHWM:", &hwm)) s.vm_hwm = hwm * 1024;
    s.vm_rss *= 1024;
    s.has_split = field_u64(buf, "RssAnon:", &s.rss_anon)
                & field_u64(buf, "RssFile:", &s.rss_file)
                & field_u64(buf, "RssShmem:", &s.rss_shmem);
    if (s.has_split) {
        s.rss_anon *= 1024;
        s.rss_file *= 1024;
        s.rss_shmem *= 1024;
    } else {
        s.rss_anon = s.rss_file = s.rss_shmem = 0;
    }
    *out = s;
    return 0;
}

int tide_mem_proc_anon_rss(uint64_t *bytes)
{
    tide_mem_proc_status st;
    int rc = tide_mem_proc_status_read(&st);

    if (rc == 0) *bytes = st.has_split ? st.rss_anon + st.rss_shmem : st.vm_rss;
    return rc;
}

int tide_mem_rss_parts_of(const tide_mem_proc_status *st, uint64_t maps_resident, tide_mem_rss_parts *out)
{
    if (!st->has_split) return tide_err_set(TIDE_EINVAL, "/proc/self/status has no RssAnon/RssFile split");
    /* Read at another moment than RssFile, the maps may say a page more:
     * they are part of it, never more. */
    out->store_maps = maps_resident < st->rss_file ? maps_resident : st->rss_file;
    out->other_files = st->rss_file - out->store_maps;
    out->anonymous = st->rss_anon + st->rss_shmem;
    out->rss = out->anonymous + st->rss_file;
    return 0;
}

/* MiB with one decimal, rounded, in integers (no %f: see "Never"). */
static void mib_text(uint64_t bytes, char *out, size_t cap)
{
    unsigned long long tenths = (unsigned long long)((bytes / 1024 * 10 + 512) / 1024);
    snprintf(out, cap, "%llu.%llu MiB", tenths / 10, tenths % 10);
}

void tide_mem_rss_parts_text(const tide_mem_rss_parts *p, int limited, char *out, size_t cap)
{
    char rss[32], anon[32], maps[32], files[32];

    mib_text(p->rss, rss, sizeof rss);
    mib_text(p->anonymous, anon, sizeof anon);
    mib_text(p->store_maps, maps, sizeof maps);
    mib_text(p->other_files, files, sizeof files);
    snprintf(out, cap, "RSS %s = %s process memory (anonymous, %s) + %s of nudb.dat/nudb.key mapped "
             "read-only (page cache the kernel reclaims; not counted) + %s code and libraries", rss, anon,
             limited ? "counted against memory_limit" : "what a memory_limit would count", maps, files);
}

int tide_mem_proc_pid_smaps_rollup_read(pid_t pid, tide_mem_proc_smaps *out)
{
    char path[48], buf[4096];
    tide_mem_proc_smaps m;
    const char *body;
    int rc;

    proc_path(path, sizeof path, pid, "smaps_rollup");
    rc = read_small(path, buf, sizeof buf, NULL);
    if (rc == TIDE_ENOENT)
        return tide_err_set(TIDE_ENOENT, "%s: absent; this kernel predates Linux 4.14, "
                            "which added it (use smaps or status instead)", path);
    if (rc) return rc;
    /* The first line names the address range ("00400000-ffff... ---p ...
     * [rollup]"); the fields follow, each on its own line. */
    body = strchr(buf, '\n');
    if (body == NULL)
        return tide_err_set(TIDE_ECORRUPT, "%s: no field lines in '%.60s'", path, buf);
    body++;
    memset(&m, 0, sizeof m);
    if (!field_u64(body, "Rss:", &m.rss))
        return tide_err_set(TIDE_ECORRUPT, "%s: no Rss line", path);
    field_u64(body, "Pss:", &m.pss);
    field_u64(body, "Referenced:", &m.referenced);
    field_u64(body, "Anonymous:", &m.anonymous);
    m.has_lazy_free = field_u64(body, "LazyFree:", &m.lazy_free);
    field_u64(body, "Swap:", &m.swap);
    m.rss *= 1024;
    m.pss *= 1024;
    m.referenced *= 1024;
    m.anonymous *= 1024;
    m.lazy_free *= 1024;
    m.swap *= 1024;
    *out = m;
    return 0;
}

int tide_mem_proc_smaps_rollup_read(tide_mem_proc_smaps *out)
{
    return tide_mem_proc_pid_smaps_rollup_read(0, out);
}

int tide_mem_proc_thread_faults(tide_mem_proc_faults *out)
{
    struct rusage ru;

    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return tide_err_set(TIDE_EIO, "getrusage(RUSAGE_THREAD): %s", strerror(errno));
    out->minflt = (uint64_t)ru.ru_minflt;
    out->majflt = (uint64_t)ru.ru_majflt;
    return 0;
}

int tide_mem_proc_io_read(tide_mem_proc_io *out)
{
    char buf[1024];
    tide_mem_proc_io io;
    int rc;

    rc = read_small("/proc/self/io", buf, sizeof buf, NULL);
    if (rc) return rc == TIDE_ENOENT ? TIDE_EIO : rc;
    memset(&io, 0, sizeof io);
    if (!field_u64(buf, "rchar:", &io.rchar) || !field_u64(buf, "wchar:", &io.wchar))
        return tide_err_set(TIDE_ECORRUPT, "/proc/self/io: no rchar or wchar line");
    io.has_device_bytes = field_u64(buf, "read_bytes:", &io.read_bytes)
                        & field_u64(buf, "write_bytes:", &io.write_bytes);
    if (!io.has_device_bytes) io.read_bytes = io.write_bytes = 0;
    *out = io;
    return 0;
}

/* Write the one-character command `cmd` to pid's clear_refs. */
static int clear_refs(pid_t pid, const char *cmd, const char *what)
{
    char path[48];
    int fd, rc = 0;
    ssize_t w;

    proc_path(path, sizeof path, pid, "clear_refs");
    fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return tide_err_set(TIDE_EIO, "%s: open: %s (%s not reset)", path, strerror(errno), what);
    do {
        w = write(fd, cmd, 1);
    } while (w < 0 && errno == EINTR);
    if (w != 1)
        rc = tide_err_set(TIDE_EIO, "%s: write '%s': %s (%s not reset)",
                          path, cmd, w < 0 ? strerror(errno) : "short write", what);
    close(fd);
    return rc;
}

int tide_mem_proc_reset_peak(void)
{
    return clear_refs(0, "5", "peak RSS");
}

int tide_mem_proc_pid_reset_referenced(pid_t pid)
{
    return clear_refs(pid, "1", "referenced bits");
}

/* ---- block devices ---- */

/* Fields 3 and 7 of a /sys/.../stat file, as bytes. */
static int read_dev_stat(const char *path, uint64_t *rd, uint64_t *wr, uint64_t *reads, uint64_t *writes)
{
    char buf[512], *p = NULL, *end;
    unsigned long long f[7];
    int rc, i;

    rc = read_small(path, buf, sizeof buf, NULL);
    if (rc) return rc == TIDE_ENOENT ? TIDE_EIO : rc;
    p = buf;
    for (i = 0; i < 7; i++) {
        errno = 0;
        f[i] = strtoull(p, &end, 10);
        if (end == p || errno)
            return tide_err_set(TIDE_ECORRUPT, "%s: field %d: cannot parse '%.60s'", path, i + 1, buf);
        p = end;
    }
    *rd = (uint64_t)f[2] * 512;
    *wr = (uint64_t)f[6] * 512;
    *reads = (uint64_t)f[0];
    *writes = (uint64_t)f[4];
    return 0;
}

/* The last component of the sysfs link `link` (e.g. ".../block/vda/vda1")
 * into name; with up = 1, the component before it ("vda"). */
static void link_name(const char *link, int up, char *name, size_t cap)
{
    char target[512];
    ssize_t n;
    char *slash;

    name[0] = '\0';
    n = readlink(link, target, sizeof target - 1);
    if (n <= 0) return;
    target[n] = '\0';
    slash = strrchr(target, '/');
    if (up && slash) {
        *slash = '\0';
        slash = strrchr(target, '/');
    }
    {
        const char *src = slash ? slash + 1 : target;
        size_t k = strlen(src);
        if (k >= cap) k = cap - 1;
        memcpy(name, src, k);
        name[k] = '\0';
    }
}

/*
 * For st_dev values that are not block devices: find the mount with that
 * MAJ:MIN in /proc/self/mountinfo and, when its source is a block device
 * node, return its st_rdev in *rdev. Lines are streamed through a 4 KiB
 * buffer; a line longer than that is skipped.
 */
static int mount_source_dev(dev_t dev, dev_t *rdev)
{
    char buf[4096], want[32], line[4096];
    size_t have = 0, ll = 0;
    int fd, rc = TIDE_ENOENT, skipping = 0;

    snprintf(want, sizeof want, "%u:%u", major(dev), minor(dev));
    fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return TIDE_ENOENT;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        have = (size_t)r;
        for (size_t i = 0; i < have; i++) {
            char c = buf[i];
            if (c != '\n') {
                if (ll < sizeof line - 1) line[ll++] = c;
                else skipping = 1;
                continue;
            }
            line[ll] = '\0';
            if (!skipping) {
                /* "id parent MAJ:MIN root mountpoint opts [tags] - fstype source superopts" */
                char *f3 = strchr(line, ' '), *sep, *src, *end;
                if (f3) f3 = strchr(f3 + 1, ' ');
                if (f3) {
                    f3++;
                    end = strchr(f3, ' ');
                    if (end && (size_t)(end - f3) == strlen(want) &&
                        memcmp(f3, want, (size_t)(end - f3)) == 0 &&
                        (sep = strstr(line, " - ")) != NULL) {
                        src = strchr(sep + 3, ' ');     /* after fstype */
                        if (src) {
                            struct stat st;
                            src++;
                            end = strchr(src, ' ');
                            if (end) *end = '\0';
                            if (stat(src, &st) == 0 && S_ISBLK(st.st_mode)) {
                                *rdev = st.st_rdev;
                                rc = 0;
                                goto out;
                            }
                        }
                    }
                }
            }
            ll = 0;
            skipping = 0;
        }
    }
out:
    close(fd);
    return rc;
}

int tide_mem_proc_blockdev_read(const char *path, tide_mem_proc_blockdev *out)
{
    tide_mem_proc_blockdev b;
    char sys[96], p2[128], devtext[64];
    struct stat st;
    dev_t dev;
    int rc;

    if (stat(path, &st) != 0) {
        int e = errno;
        return tide_err_set(e == ENOENT ? TIDE_ENOENT : TIDE_EIO, "%s: stat: %s", path, strerror(e));
    }
    memset(&b, 0, sizeof b);
    dev = st.st_dev;
    snprintf(sys, sizeof sys, "/sys/dev/block/%u:%u", major(dev), minor(dev));
    if (access(sys, F_OK) != 0) {
        dev_t rdev;
        if (mount_source_dev(dev, &rdev) != 0)
            return tide_err_set(TIDE_ENOENT, "%s: on device %u:%u, which is not a block device "
                                "(tmpfs, overlayfs or a network file system?)",
                                path, major(dev), minor(dev));
        dev = rdev;
        snprintf(sys, sizeof sys, "/sys/dev/block/%u:%u", major(dev), minor(dev));
    }
    b.major = major(dev);
    b.minor = minor(dev);
    link_name(sys, 0, b.name, sizeof b.name);
    snprintf(p2, sizeof p2, "%s/stat", sys);
    rc = read_dev_stat(p2, &b.bytes_read, &b.bytes_written, &b.reads, &b.writes);
    if (rc) return rc;

    snprintf(p2, sizeof p2, "%s/partition", sys);
    if (access(p2, F_OK) == 0) {
        unsigned ma, mi;
        b.is_partition = 1;
        /* sysfs resolves "..": the partition's directory sits in the disk's. */
        snprintf(p2, sizeof p2, "%s/../dev", sys);
        rc = read_small(p2, devtext, sizeof devtext, NULL);
        if (rc) return rc;
        {
            char *end, *end2;
            ma = (unsigned)strtoul(devtext, &end, 10);
            if (end == devtext || *end != ':')
                return tide_err_set(TIDE_ECORRUPT, "%s: cannot parse '%.20s'", p2, devtext);
            mi = (unsigned)strtoul(end + 1, &end2, 10);
            if (end2 == end + 1)
                return tide_err_set(TIDE_ECORRUPT, "%s: cannot parse '%.20s'", p2, devtext);
        }
        b.parent_major = ma;
        b.parent_minor = mi;
        link_name(sys, 1, b.parent_name, sizeof b.parent_name);
        snprintf(p2, sizeof p2, "%s/../stat", sys);
        rc = read_dev_stat(p2, &b.parent_bytes_read, &b.parent_bytes_written, &b.parent_reads, &b.parent_writes);
        if (rc) return rc;
    }
    *out = b;
    return 0;
}

/* ---- the process: CPU, start time, file descriptors ------------------------ */

static uint64_t boot_time_s;          /* btime, read once */
static pthread_once_t boot_once = PTHREAD_ONCE_INIT;

static void read_boot_time(void)
{
    /* /proc/stat grows with the CPU count (a line each, and a long intr
     * line before btime): 64 KiB covers a few hundred CPUs; a static buffer
     * because this runs once. */
    static char buf[65536];
    uint64_t v;

    if (read_small("/proc/stat", buf, sizeof buf, NULL) == 0 && field_u64(buf, "btime", &v))
        boot_time_s = v;
}

static uint64_t count_fds(void)
{
    char buf[4096];
    uint64_t n = 0;
    long got;
    int fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0) return 0;
    while ((got = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < got;) {
            struct dirent64 *d = (struct dirent64 *)(buf + off);
            if (d->d_name[0] != '.') n++;
            off += d->d_reclen;
        }
    }
    close(fd);
    return n > 0 ? n - 1 : 0;   /* not the descriptor this walk opened */
}

/* Fields 14, 15, 22 and 23 (utime, stime, starttime, vsize) of a
 * /proc/PID/stat line, from `p`, just after the command's ')': blanks,
 * field 3 (the state, one character), then fields 4 to 23, numbers
 * separated by blanks. 0, or -1 when a field is
 * missing or not a number. */
static int stat_fields(const char *p, unsigned long long f[4])
{
    static const int want[4] = { 14, 15, 22, 23 };
    char *end;
    int k = 0;

    while (*p == ' ') p++;
    if (*p == '\0') return -1;
    p++;
    for (int field = 4; field <= 23; field++) {
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p) return -1;
        if (field == want[k]) f[k++] = v;
        p = end;
    }
    return 0;
}

int tide_mem_proc_process_read(tide_mem_proc_process *out)
{
    char buf[2048];
    const char *p;
    unsigned long long f[4];   /* utime, stime, starttime, vsize */
    long tick = sysconf(_SC_CLK_TCK);
    struct rlimit rl;
    tide_mem_proc_process r;    /* *out is written only on success (invariant 2) */
    int rc;

    memset(&r, 0, sizeof r);
    pthread_once(&boot_once, read_boot_time);
    rc = read_small("/proc/self/stat", buf, sizeof buf, NULL);
    if (rc) return rc;
    /* The command name is in parentheses and may hold spaces or ')': the
     * fields resume after the last ')'. Field 3 (state) comes first. */
    p = strrchr(buf, ')');
    if (p == NULL || stat_fields(p + 1, f) != 0)
        return tide_err_set(TIDE_ECORRUPT, "/proc/self/stat: fields 14, 15, 22, 23 not found");
    if (tick <= 0) tick = 100;
    r.cpu_seconds = (double)(f[0] + f[1]) / (double)tick;
    r.start_time_seconds = (double)boot_time_s + (double)f[2] / (double)tick;
    r.virtual_bytes = f[3];
    r.open_fds = count_fds();
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) r.max_fds = rl.rlim_cur;
    r.virtual_max_bytes = UINT64_MAX;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) r.virtual_max_bytes = rl.rlim_cur;
    *out = r;
    return 0;
}
