/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * peers_run.c: one run of one engine, in a child process: make the
 * engine's directory, LOAD, measure the files, FETCH with one thread, FETCH
 * again with two (unless --no-warm), COLD when asked for, close. The parent
 * removes the directory, and the cold phase's cgroup, whatever happened
 * (peers.c).
 *
 *   LOAD    put items 0..N-1 (key and value from tide_bench_key and
 *           tide_bench_value, the workload of `tide bench store`), then
 *           the engine's finish (its last commit, synced as its mode says).
 *           Timed from the first put to finish's return.
 *   FETCH1  get every item once, in the order tide_bench_perm gives for
 *           the round's seed, on the child's main thread; each value is
 *           compared byte for byte with the one put (a missing or wrong
 *           value fails the run).
 *   FETCH2  the same order split in two halves, one thread each, each
 *           with its own reader; timed from before the threads start to
 *           after both are joined.
 *
 * COLD, when asked for (peers_run.h): the engine closed, its files
 * dropped from the page cache, this process in a memory cgroup of the
 * asked size, the engine opened again and the order's first items fetched
 * on one thread, the first half as COLD and the second as SETTLED; their
 * frames add the device's read I/Os and bytes and /proc/self/io
 * read_bytes, so that reads per fetch can be told.
 *
 * Around each phase (a "frame", nothing inside the timed loop): the wall
 * clock (CLOCK_MONOTONIC), getrusage(RUSAGE_SELF) user + system time of the
 * whole process (the engine's background threads included: RocksDB's
 * flushes and compactions, Tide's commit thread), /proc/self/io
 * (write_bytes, wchar), the block device's sectors written (tide_mem_proc_
 * blockdev_read, as bench_store.c), and the peak RSS, anonymous and
 * file-backed, from the sampler of bench_store.h. After each phase's frame
 * (untimed): the page cache the engine's files hold, by mincore(2) over a
 * read-only mapping of each file of its directory, summed: the memory a
 * pread-based engine (Tide, RocksDB) leans on, which its RSS never shows.
 *
 * The test faults (--fault-item, --fault-in): item N stored with its first
 * value byte flipped (LOAD), so FETCH1 meets it first; or, with FETCH2,
 * stored right but expected flipped by FETCH2 alone, so that FETCH2's own
 * comparison is the one that fails.
 *
 * Invariants:
 *   1. Every fetched value is compared with the one put; `checked` counts
 *      them and must equal what the phases asked for (2 x items with
 *      FETCH1 and FETCH2, plus COLD's fetches) for a run that succeeded.
 *   2. The child writes exactly one peer_result to the pipe and exits with
 *      _exit (no atexit handlers, no stdio flush of the parent's buffers).
 * Never: print from the child; the parent reports.
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_store.h"
#include "mem/proc.h"
#include "peers_run.h"
#include "util/clock.h"

/* ---- the frame around a phase ---- */

typedef struct frame {
    const char *dir;
    uint64_t t0;
    double cpu0;
    tide_mem_proc_io io0;
    int wchar_ok, io_ok;
    tide_mem_proc_blockdev dev0;
    int dev_ok;
    tide_bench_sampler sm;
} frame;

static void frame_begin(frame *f, peer_phase *p, const char *dir)
{
    tide_mem_proc_status st;

    memset(f, 0, sizeof *f);
    memset(p, 0, sizeof *p);
    f->dir = dir;
    if (tide_mem_proc_status_read(&st) == 0) {
        p->anon_start = st.rss_anon;
        p->file_start = st.rss_file;
    }
    f->wchar_ok = tide_mem_proc_io_read(&f->io0) == 0;
    f->io_ok = f->wchar_ok && f->io0.has_device_bytes;
    f->dev_ok = tide_mem_proc_blockdev_read(dir, &f->dev0) == 0;
    tide_bench_sampler_start(&f->sm);
    f->cpu0 = tide_bench_cpu_seconds();
    f->t0 = tide_clock_mono_us();
}

static void frame_end(frame *f, peer_phase *p, uint64_t items)
{
    uint64_t t1 = tide_clock_mono_us();
    double cpu1 = tide_bench_cpu_seconds();
    tide_mem_proc_io io1;
    tide_mem_proc_blockdev dev1;

    tide_bench_sampler_stop(&f->sm);
    p->secs = t1 > f->t0 ? (double)(t1 - f->t0) / 1e6 : 1e-6;
    p->cpu_secs = cpu1 > f->cpu0 ? cpu1 - f->cpu0 : 1e-6;
    p->items_per_s = (double)items / p->secs;
    p->items_per_cpu_s = (double)items / p->cpu_secs;
    p->peak_anon = f->sm.max_anon;
    p->peak_file = f->sm.max_file;
    p->wchar_ok = f->wchar_ok && tide_mem_proc_io_read(&io1) == 0;
    p->io_ok = p->wchar_ok && f->io_ok && io1.has_device_bytes;
    if (p->wchar_ok) p->wchar = io1.wchar - f->io0.wchar;
    if (p->io_ok) p->write_bytes = io1.write_bytes - f->io0.write_bytes;
    p->dev_ok = f->dev_ok && tide_mem_proc_blockdev_read(f->dir, &dev1) == 0;
    if (p->dev_ok) {
        p->dev_written = dev1.bytes_written - f->dev0.bytes_written;
        p->dev_reads = dev1.reads - f->dev0.reads;
        p->dev_read_bytes = dev1.bytes_read - f->dev0.bytes_read;
    }
    if (p->io_ok) p->read_bytes = io1.read_bytes - f->io0.read_bytes;
    p->ran = 1;
    p->items = items;
}

/* ---- the phases ---- */

static int load(const peer_job *job, peer_engine *e, peer_result *res)
{
    const peer_ops *ops = job->ops;
    unsigned char key[TIDE_BENCH_KEY_SIZE];
    unsigned char *value = malloc(job->cfg.value_size);
    frame f;
    int rc = 0;

    if (value == NULL) {
        snprintf(res->error, sizeof res->error, "%s: no memory for a value", ops->name);
        return -1;
    }
    frame_begin(&f, &res->ph[PH_LOAD], job->dir);
    for (uint64_t i = 0; i < job->cfg.items && rc == 0; i++) {
        tide_bench_key(job->seed, i, key);
        tide_bench_value(job->seed, i, value, job->cfg.value_size);
        if (job->fault_phase == PH_LOAD && job->fault_item == i + 1)
            value[0] ^= 1;                              /* --fault-item, for the tests */
        rc = ops->put(e, key, value);
    }
    if (rc == 0) rc = ops->finish(e);
    frame_end(&f, &res->ph[PH_LOAD], job->cfg.items);
    free(value);
    if (rc) snprintf(res->error, sizeof res->error, "load: %s", ops->error(e));
    return rc;
}

/* The bytes of `path` resident in the page cache: mincore(2) over a
 * read-only shared mapping of the whole file. 0 or -1. */
static int file_cached(const char *path, uint64_t *out)
{
    long page = sysconf(_SC_PAGESIZE);
    int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -1;
    struct stat st;
    unsigned char *vec = NULL;
    void *m = MAP_FAILED;
    size_t pages = 0;

    *out = 0;
    if (fd < 0 || page <= 0 || fstat(fd, &st) != 0) goto out;
    if (st.st_size == 0) { rc = 0; goto out; }
    pages = ((size_t)st.st_size + (size_t)page - 1) / (size_t)page;
    vec = malloc(pages);
    m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (vec == NULL || m == MAP_FAILED || mincore(m, (size_t)st.st_size, vec) != 0) goto out;
    for (size_t i = 0; i < pages; i++) *out += (uint64_t)(vec[i] & 1) * (uint64_t)page;
    rc = 0;
out:
    if (m != MAP_FAILED) munmap(m, (size_t)st.st_size);
    free(vec);
    if (fd >= 0) close(fd);
    return rc;
}

/* The page cache held by the regular files of `dir` (one level, as
 * dir_sizes), summed into *out. 0, or -1 when one could not be read. */
static int dir_cached(const char *dir, uint64_t *out)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char p[4096];
    struct stat st;
    uint64_t one;
    int rc = 0;

    *out = 0;
    if (d == NULL) return -1;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (file_cached(p, &one) != 0) rc = -1;
        *out += one;
    }
    closedir(d);
    return rc;
}

/* One fetching thread's share: positions [from, to) of the order. */
typedef struct fetcher {
    const peer_job *job;
    peer_engine *e;
    const tide_bench_perm *perm;
    uint64_t from, to, checked;
    int ph;                                 /* PH_FETCH1 or PH_FETCH2 */
    pthread_t th;
    int rc;
    char error[PEER_ERROR_MAX + 100];
} fetcher;

static int check_one(fetcher *w, peer_reader *r, uint64_t k, unsigned char *key,
                     unsigned char *want)
{
    const peer_ops *ops = w->job->ops;
    size_t vs = w->job->cfg.value_size, len = 0, at = 0;
    uint64_t i = tide_bench_perm_at(w->perm, k);
    const unsigned char *got = NULL;
    const char *phase = w->ph == PH_FETCH1 ? "fetch1" : w->ph == PH_FETCH2 ? "fetch2" : "cold";  /* and settled */
    int rc;

    tide_bench_key(w->job->seed, i, key);
    rc = ops->get(r, key, &got, &len);
    if (rc < 0) {
        snprintf(w->error, sizeof w->error, "%s: %s", phase, ops->reader_error(r));
        return -1;
    }
    if (rc > 0) {
        snprintf(w->error, sizeof w->error, "%s: item %llu (fetched %llu-th) not found", phase,
                 (unsigned long long)i, (unsigned long long)k);
        return -1;
    }
    tide_bench_value(w->job->seed, i, want, vs);
    if (w->ph == w->job->fault_phase && w->job->fault_item == i + 1) want[0] ^= 1;
    if (len == vs && memcmp(got, want, vs) == 0) return 0;
    while (at < len && at < vs && got[at] == want[at]) at++;
    snprintf(w->error, sizeof w->error,
             "%s: item %llu (fetched %llu-th) has a wrong value: %zu bytes, "
             "%zu expected, first difference at byte %zu", phase,
             (unsigned long long)i, (unsigned long long)k, len, vs, at);
    return -1;
}

static void *fetch_main(void *arg)
{
    fetcher *w = arg;
    unsigned char key[TIDE_BENCH_KEY_SIZE];
    unsigned char *want = malloc(w->job->cfg.value_size);
    peer_reader *r = NULL;

    w->rc = -1;
    if (want == NULL) {
        snprintf(w->error, sizeof w->error, "fetch: no memory");
        return NULL;
    }
    if (w->job->ops->reader_open(w->e, &r) != 0) {
        snprintf(w->error, sizeof w->error, "fetch: %s", w->job->ops->error(w->e));
    } else {
        w->rc = 0;
        for (uint64_t k = w->from; k < w->to && w->rc == 0; k++) {
            w->rc = check_one(w, r, k, key, want);
            if (w->rc == 0) w->checked++;
        }
    }
    w->job->ops->reader_close(r);
    free(want);
    return NULL;
}

/* FETCH with `threads` (1 or 2) threads; with 1, on this thread. The n
 * positions of the round's order from `from` (every item but in COLD). */
static int fetch(const peer_job *job, peer_engine *e, peer_result *res, int threads, int ph, uint64_t from,
                 uint64_t n)
{
    tide_bench_perm perm;
    fetcher w[2];
    int started[2] = { 0, 0 };
    frame f;
    int rc = 0;

    tide_bench_perm_init(&perm, job->cfg.items, job->order_seed);
    for (int t = 0; t < threads; t++) {
        w[t] = (fetcher){ .job = job, .e = e, .perm = &perm, .ph = ph,
                          .from = from + n * (uint64_t)t / (uint64_t)threads,
                          .to = from + n * (uint64_t)(t + 1) / (uint64_t)threads };
    }
    frame_begin(&f, &res->ph[ph], job->dir);
    if (threads == 1) {
        fetch_main(&w[0]);
    } else {
        for (int t = 0; t < threads; t++)
            started[t] = pthread_create(&w[t].th, NULL, fetch_main, &w[t]) == 0;
        for (int t = 0; t < threads; t++) {
            if (started[t]) {
                pthread_join(w[t].th, NULL);
            } else {
                snprintf(w[t].error, sizeof w[t].error, "fetch: cannot start a thread");
                w[t].rc = -1;
            }
        }
    }
    frame_end(&f, &res->ph[ph], n);
    res->ph[ph].cache_ok = dir_cached(job->dir, &res->ph[ph].page_cache) == 0;
    for (int t = 0; t < threads; t++) {
        res->checked += w[t].checked;
        if (w[t].rc && rc == 0) {
            snprintf(res->error, sizeof res->error, "%s", w[t].error);
            rc = -1;
        }
    }
    return rc;
}

/* The apparent and allocated sizes of the files in `dir` (one level: every
 * engine here keeps its files flat). */
static void dir_sizes(const char *dir, uint64_t *file_bytes, uint64_t *disk_bytes)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char p[4096];
    struct stat st;

    *file_bytes = *disk_bytes = 0;
    if (d == NULL) return;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        *file_bytes += (uint64_t)st.st_size;
        *disk_bytes += (uint64_t)st.st_blocks * 512;
    }
    closedir(d);
}

/* ---- the cold phase ---- */

#define CGROUP_ROOT "/sys/fs/cgroup/memory"

/* Write `text` to `path`; 0 or -1 with errno. */
static int write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC), rc = -1;
    size_t n = strlen(text);
    if (fd < 0) return -1;
    if (write(fd, text, n) == (ssize_t)n) rc = 0;
    if (close(fd) != 0) rc = -1;
    return rc;
}

/* The number in cgroup file `name` (or, with `key`, the key's line of
 * memory.stat); 0 when it cannot be read. */
static uint64_t cgroup_value(const char *cg, const char *name, const char *key)
{
    char path[256], buf[8192], *at;
    int fd;
    ssize_t k;

    snprintf(path, sizeof path, "%s/%s", cg, name);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) return 0;
    k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0) return 0;
    buf[k] = '\0';
    if (key == NULL) return strtoull(buf, NULL, 10);
    for (at = buf; (at = strstr(at, key)) != NULL; at++)
        if ((at == buf || at[-1] == '\n') && at[strlen(key)] == ' ') return strtoull(at + strlen(key) + 1, NULL, 10);
    return 0;
}

/* The cgroup a cold phase runs in: CGROUP_ROOT/tide-peers-PID. */
void peer_cgroup_path(pid_t pid, char *buf, size_t cap)
{
    snprintf(buf, cap, CGROUP_ROOT "/tide-peers-%ld", (long)pid);
}

/* Make this process's cgroup, limited to `limit` bytes, and move into it.
 * 0, or -1 with res->error saying what failed. */
static int cgroup_enter(uint64_t limit, peer_result *res)
{
    char cg[128], path[192], text[32];

    peer_cgroup_path(getpid(), cg, sizeof cg);
    snprintf(text, sizeof text, "%llu", (unsigned long long)limit);
    if (mkdir(cg, 0755) != 0 && errno != EEXIST) goto fail;
    snprintf(path, sizeof path, "%s/memory.limit_in_bytes", cg);
    if (write_text(path, text) != 0) goto fail;
    snprintf(path, sizeof path, "%s/cgroup.procs", cg);
    snprintf(text, sizeof text, "%ld", (long)getpid());
    if (write_text(path, text) != 0) goto fail;
    return 0;
fail:
    snprintf(res->error, sizeof res->error, "cold: cannot make the memory cgroup %s (%s): the cold phase "
             "needs root and the v1 memory controller at " CGROUP_ROOT, cg, strerror(errno));
    return -1;
}

/* Drop every page of the regular files of `dir` from the page cache: a
 * clean page goes at POSIX_FADV_DONTNEED, so each file is synced first.
 * 0 or -1 with res->error. */
static int evict_dir(const char *dir, peer_result *res)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char p[4096];
    int rc = 0;

    if (d == NULL) rc = -1;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        struct stat st;
        int fd;
        if (de->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0 || fdatasync(fd) != 0 ||
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
            rc = -1;
        if (fd >= 0) close(fd);
    }
    if (d) closedir(d);
    if (rc) snprintf(res->error, sizeof res->error, "cold: cannot drop %s from the page cache: %s", dir,
                     strerror(errno));
    return rc;
}

/* COLD: the engine closed (*e becomes NULL), its pages dropped, this
 * process in a cgroup of job->cold_memory, the engine opened again and
 * job->cold_fetches items fetched. 0 or -1 with res->error. */
static int cold(const peer_job *job, peer_engine **e, peer_result *res)
{
    peer_cfg cfg = job->cfg;
    char err[PEER_ERROR_MAX], cg[128];
    uint64_t n = job->cold_fetches < job->cfg.items ? job->cold_fetches : job->cfg.items;
    int rc;

    job->ops->close(*e);
    *e = NULL;
    if (evict_dir(job->dir, res) != 0) return -1;
    if (dir_cached(job->dir, &res->cold_cached_before) != 0) res->cold_cached_before = UINT64_MAX;
    if (cgroup_enter(job->cold_memory, res) != 0) return -1;
    cfg.existing = 1;
    if (job->ops->open(e, job->dir, &cfg, err) != 0) {
        snprintf(res->error, sizeof res->error, "cold: open again: %s", err);
        return -1;
    }
    rc = fetch(job, *e, res, 1, PH_COLD, 0, n / 2);
    if (rc == 0) rc = fetch(job, *e, res, 1, PH_SETTLED, n / 2, n - n / 2);
    peer_cgroup_path(getpid(), cg, sizeof cg);
    res->cold_cg_peak = cgroup_value(cg, "memory.max_usage_in_bytes", NULL);
    res->cold_cg_cache = cgroup_value(cg, "memory.stat", "total_cache");
    return rc;
}

static void child_run(const peer_job *job, peer_result *res)
{
    const peer_ops *ops = job->ops;
    peer_engine *e = NULL;
    char err[PEER_ERROR_MAX];

    if (mkdir(job->dir, 0755) != 0) {
        snprintf(res->error, sizeof res->error, "cannot create %s: %s", job->dir,
                 strerror(errno));
        return;
    }
    if (ops->open(&e, job->dir, &job->cfg, err) != 0) {
        snprintf(res->error, sizeof res->error, "open: %s", err);
        return;
    }
    if (load(job, e, res) == 0) {
        res->commits = ops->commits(e);
        res->own_ok = ops->own_bytes_written != NULL;
        if (res->own_ok) res->own_written = ops->own_bytes_written(e);
        res->ph[PH_LOAD].cache_ok = dir_cached(job->dir, &res->ph[PH_LOAD].page_cache) == 0;
        dir_sizes(job->dir, &res->file_bytes, &res->disk_bytes);
        uint64_t want = (job->warm ? 2 * job->cfg.items : 0) +
                        (job->cold_memory ? (job->cold_fetches < job->cfg.items ? job->cold_fetches
                                                                                : job->cfg.items) : 0);
        if ((!job->warm || (fetch(job, e, res, 1, PH_FETCH1, 0, job->cfg.items) == 0 &&
                            fetch(job, e, res, 2, PH_FETCH2, 0, job->cfg.items) == 0)) &&
            (!job->cold_memory || cold(job, &e, res) == 0))
            res->ok = res->checked == want;
    }
    if (e) ops->close(e);
}

/* ---- the parent's side ---- */

static int read_all(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, (char *)buf + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        got += (size_t)k;
    }
    return 0;
}

int peer_run(const peer_job *job, peer_result *res)
{
    int fds[2], status = 0;
    pid_t pid;

    memset(res, 0, sizeof *res);
    if (pipe(fds) != 0) {
        snprintf(res->error, sizeof res->error, "pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        snprintf(res->error, sizeof res->error, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        child_run(job, res);
        _exit(write(fds[1], res, sizeof *res) == (ssize_t)sizeof *res ? 0 : 3);
    }
    close(fds[1]);
    if (read_all(fds[0], res, sizeof *res) != 0) {
        memset(res, 0, sizeof *res);
        snprintf(res->error, sizeof res->error, "the run's process ended without a result");
    }
    close(fds[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (res->ok && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        res->ok = 0;
        snprintf(res->error, sizeof res->error, "the run's process failed (status %d)", status);
    }
    if (job->cold_memory) {      /* the child's cgroup, emptied by its exit */
        char cg[128];
        peer_cgroup_path(pid, cg, sizeof cg);
        rmdir(cg);
    }
    if (!res->ok && res->error[0] == '\0')
        snprintf(res->error, sizeof res->error, "fetched %llu values, fewer than the run asked for",
                 (unsigned long long)res->checked);
    return res->ok ? 0 : -1;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int peer_remove_tree(const char *dir)
{
    struct stat st;
    if (lstat(dir, &st) != 0) return errno == ENOENT ? 0 : -1;
    return nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}
