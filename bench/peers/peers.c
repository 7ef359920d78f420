/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * peers.c: bench/peers, Tide's store side by side with LMDB and RocksDB on
 * the workload of `tide bench store`: the options, the rounds, the summary,
 * the table and the JSON document. One run of one engine is peers_run.c;
 * the engines are engine_*.c behind peers.h.
 *
 * Order: for each size of --items, --runs rounds; each round runs every
 * engine once, in the order given (A, B, C, D, E, then again), each in a fresh
 * directory of its own under the bench directory, removed as soon as the
 * run ends. Interleaving spreads the machine's changing load over all the
 * engines alike; the summary takes medians over the rounds.
 *
 * The batch: LMDB and RocksDB commit once per --batch items. By default
 * (auto) it is the items of a burst, the most one commit of Tide's takes:
 * computed from the insert pool's accounting (burst_items), not measured,
 * so that no timer (Tide's commit thread also commits after a second,
 * whatever the pool holds) and no machine load moves it. Each Tide run is
 * checked against it (check_batch), and the bench says so on stderr when
 * Tide's commits do not fit.
 *
 * Invariants:
 *   1. Every engine directory is removed after its run, and the bench
 *      directory at the end, whatever the outcome; a removal that fails is
 *      an error (exit 1), never silent.
 *   2. With --json, stdout carries one JSON document and nothing else;
 *      progress goes to stderr in both modes.
 *   3. A figure that could not be read (no /proc/self/io write_bytes, no
 *      block device, a file mincore could not map) or that an engine has
 *      not (the own byte counter, Tide's alone) is null in the JSON and
 *      "-" in the table, never 0.
 * Never: print a summary after a failed run (a wrong value ends the bench
 *   with exit 1).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bench/bench_store.h"
#include "peers_out.h"
#include "peers_run.h"
#include "store/pool.h"
#include "store/full.h"
#include "util/size.h"

static const char help_text[] =
"NAME\n"
"    peers - Tide's store against LMDB and RocksDB on one workload\n"
"\n"
"SYNOPSIS\n"
"    build/bench/peers [--items N[,N...]] [--runs N] [--engines LIST]\n"
"                      [--baseline ENGINE] [--batch N] [--burst SIZE]\n"
"                      [--index-lag SIZE] [--value-size N] [--seed N]\n"
"                      [--dir DIR] [--json] [--record FILE]\n"
"                      [--cold-memory SIZE [--cold-fetches N]] [--no-warm]\n"
"                      [--fault-item N [--fault-in PHASE]]\n"
"\n"
"DESCRIPTION\n"
"    Runs each engine on the workload of `tide bench store`: item i has a\n"
"    32-byte key and a value-size-byte value, both random bytes from\n"
"    splitmix64 streams of i (the formula of tests/fixtures/nudb), made on\n"
"    the fly. A run has its phases in a process of its own (forked, so\n"
"    that no engine inherits another's heap or counters):\n"
"\n"
"    LOAD    puts items 0..N-1, then the engine's last commit (synced as its\n"
"            mode says); RocksDB also flushes its memtable and waits until\n"
"            no flush or compaction is pending or running.\n"
"    FETCH1  gets every item once on one thread, in a shuffled order (a\n"
"            keyed Feistel permutation, the same for every engine of a\n"
"            round), comparing each value byte for byte with the one put.\n"
"    FETCH2  the same with two threads, each taking half the order.\n"
"    COLD    with --cold-memory: the engine closed, its files' pages\n"
"            dropped from the page cache (fdatasync, POSIX_FADV_DONTNEED),\n"
"            the run's process moved into a v1 memory cgroup limited to\n"
"            --cold-memory (anonymous memory and page cache alike, as on\n"
"            a machine of that size), the engine opened again on its\n"
"            files, and the order's first --cold-fetches items fetched on\n"
"            one thread, each compared. Reported: fetches per second and\n"
"            per CPU-second, the device's read I/Os per fetch and KiB read\n"
"            per fetch (/sys/dev/block MAJ:MIN/stat, which counts every\n"
"            process's reads: run it on a quiet disk), /proc/self/io\n"
"            read_bytes per fetch, and the cgroup's peak and page cache.\n"
"            Needs root and /sys/fs/cgroup/memory.\n"
"\n"
"    A missing or wrong value stops the bench with exit status 1.\n"
"\n"
"    The puts differ in what they check: Tide's insert looks the key up\n"
"    first and refuses a duplicate, LMDB's put (MDB_NOOVERWRITE) descends\n"
"    the tree to the key's leaf whatever it finds, RocksDB's put is a blind\n"
"    overwrite that looks nothing up. rocksdb-sync-checked adds a get\n"
"    before each put, the work Tide's insert does.\n"
"\n"
"ENGINES\n"
"    tide          Tide's store (key size 32, block 4096, load factor 0.5,\n"
"                  burst SIZE): its commit thread commits a burst or a\n"
"                  second's worth, fdatasync'd; the load ends with\n"
"                  tide_store_sync.\n"
"    lmdb          LMDB: one write transaction per batch of N items,\n"
"                  committed with LMDB's sync; reads in a read-only\n"
"                  transaction per thread (values are not copied).\n"
"    rocksdb-sync  RocksDB: one write batch of N items per write, its WAL\n"
"                  synced on each; defaults plus a 10-bit Bloom filter.\n"
"    rocksdb-sync-checked\n"
"                  as rocksdb-sync, with a rocksdb_get of each key before\n"
"                  its put, failing if the key exists (it sees the batches\n"
"                  written, not the one being filled).\n"
"    rocksdb       the batches of rocksdb-sync, the WAL written but not\n"
"                  synced.\n"
"    tide-16k, tide-defer-16k\n"
"                  tide and tide-defer with a key-file block of 16384\n"
"                  bytes. Run only when named.\n"
"    tide-defer    Tide's store with the deferred index (index_lag_bytes\n"
"                  --index-lag): each commit appends and syncs its records\n"
"                  and tide.meta; the key file is written when the tail\n"
"                  index fills and at close. Run only when named.\n"
"\n"
"    N is --batch. By default it is the items of one burst: how many items\n"
"    Tide's insert pool takes before it holds burst SIZE bytes, by the\n"
"    pool's accounting (each item its header, key and value rounded up to\n"
"    16 bytes, plus 8 bytes per hash-table slot, power-of-two slots): the\n"
"    most one Tide commit takes. For 32 + 200 bytes and 16MiB, 59754 items\n"
"    (about 281 bytes each). Tide's own commits can be smaller, when its\n"
"    one-second timer fires before the pool is full; the batch never\n"
"    follows that timer.\n"
"\n"
"MEASUREMENTS\n"
"    Per phase: items/s (wall clock) and items per CPU-second (user +\n"
"    system time of the run's process, from getrusage, background threads\n"
"    included: the figure a shared machine distorts least); peak RSS,\n"
"    anonymous and file-backed (a thread samples /proc/self/status every\n"
"    10 ms); after each phase, the page cache the engine's files hold\n"
"    (mincore over each file of its directory, summed), which RSS shows\n"
"    for LMDB (its map is file-backed RSS) and for no engine that reads\n"
"    with pread (Tide, RocksDB). For the load: write amplification (WA),\n"
"    the bytes the process passed to write calls (/proc/self/io wchar)\n"
"    divided by the payload, items x (32 + value-size); as a second\n"
"    opinion,\n"
"    the bytes the block device holding DIR wrote (/sys/dev/block/\n"
"    MAJ:MIN/stat; every process's writes count there) over the payload;\n"
"    for Tide, its store's own bytes_written over the payload, which must\n"
"    agree with its wchar. /proc/self/io write_bytes is in the JSON only:\n"
"    the kernel counts it per dirtied page-cache folio (up to 64 KiB and\n"
"    more for a 4 KiB write on ext4 with large folios), inflated for\n"
"    engines that write in place. Also the commits, and the files'\n"
"    apparent and allocated size after the load.\n"
"    The JSON names: load_write_amp_wchar (the WA; the tables' \"WA\"),\n"
"    load_write_amp_device (\"WA dev\"), load_write_amp_store (\"WA own\":\n"
"    Tide's counter, null for the others), load_write_amp_write_bytes\n"
"    (per dirtied folio, inflated for in-place writes; JSON only), and\n"
"    load_page_cache, fetch1_page_cache, fetch2_page_cache (bytes).\n"
"    The summary is the median over the rounds, with the ratio of each\n"
"    engine's figure to the baseline engine's.\n"
"\n"
"OPTIONS\n"
"    --items LIST      items per run, one size or a growth curve such as\n"
"                      1000000,4000000,16000000 (at most 16 sizes, each 1\n"
"                      to 2^32-1). Default 1000000.\n"
"    --runs N          rounds per size, 1 to 1000; medians need 3 or more.\n"
"                      Default 3.\n"
"    --engines LIST    which engines, in round order, comma-separated.\n"
"                      Default tide,lmdb,rocksdb-sync,rocksdb-sync-checked,\n"
"                      rocksdb.\n"
"    --baseline E      the engine the ratios divide by; one of --engines.\n"
"                      Default tide (or the first engine).\n"
"    --batch N         items per LMDB transaction and RocksDB write batch.\n"
"                      Default auto (see ENGINES).\n"
"    --burst SIZE      Tide's burst_bytes (16MiB, 65536 forms). Default\n"
"                      16MiB, the library's default.\n"
"    --index-lag SIZE  tide-defer's tail index budget (index_lag_bytes:\n"
"                      64MiB, 1GiB forms). Default 64MiB, tided's default\n"
"                      without a memory limit.\n"
"    --value-size N    bytes per value, 1 to 65536. Default 200.\n"
"    --seed N          the data's seed, 0 to 2^31-1. Default 0.\n"
"    --dir DIR         make the bench directory (tide-peers-XXXXXX, one\n"
"                      directory per run inside) under DIR, an existing\n"
"                      directory. Everything is removed at the end (an\n"
"                      interrupted bench leaves it for you to remove).\n"
"                      Default /tmp.\n"
"    --cold-memory SIZE  run COLD with a cgroup of SIZE (64MiB to 1TiB,\n"
"                      2GiB forms). Default: no COLD.\n"
"    --cold-fetches N  COLD's fetches, at most the items. Default 100000.\n"
"    --no-warm         leave FETCH1 and FETCH2 out (their figures are \"-\"),\n"
"                      for a large store measured cold only.\n"
"    --fault-item N    for the tests: store item N (0 to the smallest\n"
"                      --items less 1; larger is refused) with its first\n"
"                      value byte flipped, in every run; the fetch must\n"
"                      then report a wrong value (exit 1).\n"
"    --fault-in PHASE  for the tests, with --fault-item: load (the\n"
"                      default: the item is stored wrong, so FETCH1 fails)\n"
"                      or fetch2 (stored right; FETCH2 alone expects the\n"
"                      flipped byte, so FETCH2's comparison must fail).\n"
"    --json            print the summary as one JSON document on stdout\n"
"                      (progress stays on stderr).\n"
"    --record FILE     append one line to FILE as each run ends: a JSON\n"
"                      object with its items, round, engine, batch, time\n"
"                      (Unix seconds), loadavg (/proc/loadavg then) and\n"
"                      every figure of the summary by the same names (a\n"
"                      number, or null where the run could not read it),\n"
"                      written and fsync'd before the next run starts. The\n"
"                      summary prints only when every run has ended; a\n"
"                      bench cut short keeps in FILE each run it finished,\n"
"                      from which medians can still be taken. FILE is\n"
"                      created if missing (mode 0644 less the umask), never\n"
"                      truncated.\n"
"    -h, --help        print this text.\n"
"\n"
"EXIT STATUS\n"
"    0 done; 1 an engine failed, a value was missing or wrong, a\n"
"    directory could not be removed, or --record's file could not be\n"
"    opened or written; 2 usage error.\n"
"\n"
"EXAMPLES\n"
"    build/bench/peers --items 1000000,4000000 --runs 3\n"
"    build/bench/peers --items 20000 --runs 1 --json > peers.json\n"
"    build/bench/peers --engines tide,rocksdb-sync-checked --baseline rocksdb-sync-checked\n"
"    build/bench/peers --engines tide-defer,tide-defer-16k,lmdb,rocksdb-sync \\\n"
"        --items 16000000 --cold-memory 1GiB --cold-fetches 200000 --no-warm\n"
"\n"
"    Built by `make bench-peers` (needs liblmdb-dev and librocksdb-dev:\n"
"    scripts/install-deps --bench); never part of bin/tide or libtide.\n";

static const peer_ops *const all_engines[] = {
    &peer_tide_ops, &peer_lmdb_ops, &peer_rocksdb_sync_ops, &peer_rocksdb_sync_checked_ops,
    &peer_rocksdb_ops, &peer_tide_defer_ops, &peer_tide_16k_ops, &peer_tide_defer_16k_ops,
};
#define ALL_ENGINES (sizeof all_engines / sizeof *all_engines)
#define DEFAULT_ENGINES 5          /* tide-defer and the 16k ones run when asked for */

static int usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "peers: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(build/bench/peers --help for the options)\n");
    return 2;
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    unsigned long long v;
    if (*s < '0' || *s > '9') return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* Call each(o, word) for every word of the comma-separated list s; an
 * empty word (",," or a comma at either end) or a failed call is -1. */
static int each_word(const char *s, peers_opts *o, int (*each)(peers_opts *, const char *))
{
    char buf[1024], *save = NULL, *tok;
    size_t n = strlen(s);
    if (n == 0 || n >= sizeof buf || s[0] == ',' || s[n - 1] == ',' || strstr(s, ",,"))
        return -1;
    snprintf(buf, sizeof buf, "%s", s);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (each(o, tok) != 0) return -1;
    return 0;
}

static int add_size(peers_opts *o, const char *word)
{
    if (o->nsizes == PEERS_SIZES_MAX) return -1;
    if (parse_u64(word, 1, UINT32_MAX, &o->sizes[o->nsizes]) != 0) return -1;
    o->nsizes++;
    return 0;
}

static const peer_ops *engine_named(const char *name)
{
    for (size_t i = 0; i < ALL_ENGINES; i++)
        if (strcmp(all_engines[i]->name, name) == 0) return all_engines[i];
    return NULL;
}

static int add_engine(peers_opts *o, const char *word)
{
    const peer_ops *e = engine_named(word);
    if (e == NULL || o->nengines == PEERS_ENGINES_MAX) return -1;
    for (size_t i = 0; i < o->nengines; i++)
        if (o->engines[i] == e) return -1;
    o->engines[o->nengines++] = e;
    return 0;
}

static int parse_items(const char *s, peers_opts *o)
{
    o->nsizes = 0;
    return each_word(s, o, add_size);
}

static int parse_engines(const char *s, peers_opts *o)
{
    o->nengines = 0;
    return each_word(s, o, add_engine);
}

/* One option with its value; 0, or the exit status of a usage error. */
static int option(peers_opts *o, const char *name, const char *val)
{
    struct stat st;
    if (strcmp(name, "--items") == 0) {
        if (parse_items(val, o)) return usage("--items '%s' is not a list of whole numbers "
                                              "from 1 to 4294967295 (at most 16)", val);
    } else if (strcmp(name, "--runs") == 0) {
        if (parse_u64(val, 1, 1000, &o->runs))
            return usage("--runs '%s' is not a whole number from 1 to 1000", val);
    } else if (strcmp(name, "--engines") == 0) {
        if (parse_engines(val, o))
            return usage("--engines '%s' is not a list of distinct engines among tide, "
                         "lmdb, rocksdb-sync, rocksdb-sync-checked, rocksdb, tide-defer, tide-16k, "
                         "tide-defer-16k", val);
    } else if (strcmp(name, "--baseline") == 0) {
        o->baseline_name = val;
    } else if (strcmp(name, "--batch") == 0) {
        if (strcmp(val, "auto") == 0) o->batch = 0;
        else if (parse_u64(val, 1, UINT32_MAX, &o->batch))
            return usage("--batch '%s' is not 'auto' or a whole number from 1", val);
    } else if (strcmp(name, "--burst") == 0) {
        if (tide_size_parse(val, &o->burst) || o->burst < 4096 || o->burst > ((uint64_t)1 << 32))
            return usage("--burst '%s' is not a size from 4KiB to 4GiB such as 16MiB", val);
    } else if (strcmp(name, "--index-lag") == 0) {
        if (tide_size_parse(val, &o->index_lag) || o->index_lag < 1)
            return usage("--index-lag '%s' is not a size of 1 byte or more such as 64MiB", val);
    } else if (strcmp(name, "--value-size") == 0) {
        if (parse_u64(val, 1, 65536, &o->value_size))
            return usage("--value-size '%s' is not a whole number from 1 to 65536", val);
    } else if (strcmp(name, "--seed") == 0) {
        if (parse_u64(val, 0, 2147483647, &o->seed))
            return usage("--seed '%s' is not a whole number from 0 to 2147483647", val);
    } else if (strcmp(name, "--fault-item") == 0) {
        if (parse_u64(val, 0, UINT32_MAX - 1, &o->fault_item))
            return usage("--fault-item '%s' is not a whole number from 0", val);
        o->fault_item++;
    } else if (strcmp(name, "--fault-in") == 0) {
        if (strcmp(val, "load") == 0) o->fault_phase = PH_LOAD;
        else if (strcmp(val, "fetch2") == 0) o->fault_phase = PH_FETCH2;
        else return usage("--fault-in '%s' is not load or fetch2", val);
    } else if (strcmp(name, "--cold-memory") == 0) {
        if (tide_size_parse(val, &o->cold_memory) || o->cold_memory < ((uint64_t)64 << 20) ||
            o->cold_memory > ((uint64_t)1 << 40))
            return usage("--cold-memory '%s' is not a size from 64MiB to 1TiB such as 2GiB", val);
    } else if (strcmp(name, "--cold-fetches") == 0) {
        if (parse_u64(val, 1, UINT32_MAX, &o->cold_fetches))
            return usage("--cold-fetches '%s' is not a whole number from 1 to 4294967295", val);
    } else if (strcmp(name, "--record") == 0) {
        if (*val == '\0') return usage("%s", "--record needs a file name");
        o->record = val;
    } else if (strcmp(name, "--dir") == 0) {
        if (stat(val, &st) != 0 || !S_ISDIR(st.st_mode) || strlen(val) > 3000)
            return usage("--dir '%s' is not an existing directory (of a path up to 3000 bytes)",
                         val);
        o->parent = val;
    } else {
        return usage("unknown option '%s'", name);
    }
    return 0;
}

static int parse(int argc, char **argv, peers_opts *o)
{
    memset(o, 0, sizeof *o);
    o->sizes[0] = 1000000;
    o->nsizes = 1;
    o->runs = 3;
    o->burst = TIDE_BURST_DEFAULT;
    o->value_size = 200;
    o->parent = "/tmp";
    for (size_t i = 0; i < DEFAULT_ENGINES; i++) o->engines[i] = all_engines[i];
    o->nengines = DEFAULT_ENGINES;
    o->index_lag = 64u << 20;
    o->cold_fetches = 100000;
    for (int i = 1; i < argc; i++) {
        int rc;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(help_text, stdout);
            return -1;
        }
        if (strcmp(argv[i], "--json") == 0) {
            o->json = 1;
            continue;
        }
        if (strcmp(argv[i], "--no-warm") == 0) {
            o->no_warm = 1;
            continue;
        }
        if (i + 1 >= argc) return usage("%s needs a value", argv[i]);
        rc = option(o, argv[i], argv[i + 1]);
        if (rc) return rc;
        i++;
    }
    if (o->fault_phase != PH_LOAD && o->fault_item == 0)
        return usage("%s", "--fault-in needs --fault-item");
    if (o->no_warm && o->fault_item)
        return usage("%s", "--fault-item needs the fetches that --no-warm leaves out");
    for (size_t z = 0; z < o->nsizes; z++) {
        char msg[160];
        if (o->fault_item == 0 || o->fault_item <= o->sizes[z]) continue;
        snprintf(msg, sizeof msg, "--fault-item %llu is not an item of a run of %llu items "
                 "(0 to %llu)", (unsigned long long)(o->fault_item - 1),
                 (unsigned long long)o->sizes[z], (unsigned long long)(o->sizes[z] - 1));
        return usage("%s", msg);
    }
    o->baseline = 0;
    if (o->baseline_name) {
        size_t b = 0;
        while (b < o->nengines && strcmp(o->engines[b]->name, o->baseline_name) != 0) b++;
        if (b == o->nengines)
            return usage("--baseline '%s' is not one of the engines run", o->baseline_name);
        o->baseline = b;
    } else {
        for (size_t b = 0; b < o->nengines; b++)
            if (o->engines[b] == &peer_tide_ops) o->baseline = b;
    }
    return 0;
}

/* The items of a burst: how many of the workload's items Tide's insert
 * pool takes before its `used` reaches burst_bytes, when an insert asks for
 * a commit and the next waits for room (store.c tide_store_insert), so the
 * most one commit takes. It follows the pool's accounting (store/pool.c):
 * an item takes sizeof(ti_pool_item) + key + value bytes rounded up to 16;
 * the hash table 8 bytes a slot, 1024 slots at first, doubled before an
 * item that finds it full; an item is admitted while used < burst. For
 * 32 + 200 bytes and 16 MiB: 272 bytes an item, 65536 slots, 59754 items. */
static uint64_t burst_items(uint64_t value_size, uint64_t burst)
{
    uint64_t item = (sizeof(ti_pool_item) + TIDE_BENCH_KEY_SIZE + value_size + 15) &
                    ~(uint64_t)15;
    uint64_t n = 0, slots = 0;

    while (n * item + slots * sizeof(ti_pool_item *) < burst) {
        if (n >= slots) slots = slots ? 2 * slots : 1024;
        n++;
    }
    return n;
}

static void read_loadavg(char *out, size_t n)
{
    FILE *f = fopen("/proc/loadavg", "r");
    snprintf(out, n, "unknown");
    if (f == NULL) return;
    if (fgets(out, (int)n, f) != NULL) out[strcspn(out, "\n")] = '\0';
    fclose(f);
}

/* A Tide run against burst_items: each commit takes at most a burst's
 * items, so at least ceil(items / burst items) commits; the timer adds at
 * most one commit per second of the load, and one more. Outside those
 * bounds the pool takes more or fewer items than computed: said on stderr
 * (the run's figures stand; the batch of the others is what is off). */
static void check_batch(const peers_state *ps, size_t z, const peer_result *res)
{
    uint64_t items = ps->opts.sizes[z], n = ps->batch_burst;
    uint64_t least = (items + n - 1) / n;
    uint64_t most = least + (uint64_t)res->ph[PH_LOAD].secs + 1;

    if (res->commits >= least && res->commits <= most) return;
    fprintf(stderr, "peers: tide made %llu commits of %llu items, outside %llu to %llu: its "
            "pool takes %s items per commit than the %llu burst_items computes (the batch "
            "is off)\n", (unsigned long long)res->commits, (unsigned long long)items,
            (unsigned long long)least, (unsigned long long)most,
            res->commits < least ? "more" : "fewer", (unsigned long long)n);
}

/* One engine's run at size index z, round r (1-based). 0 or 1 (failed). */
static int one_run(peers_state *ps, size_t z, unsigned r, size_t e)
{
    const peers_opts *o = &ps->opts;
    peer_result *res = &ps->results[(z * o->runs + (r - 1)) * o->nengines + e];
    char dir[3300];
    peer_job job;
    int rc;

    snprintf(dir, sizeof dir, "%s/%llu-%s-r%u", ps->dir, (unsigned long long)o->sizes[z],
             o->engines[e]->name, r);
    memset(&job, 0, sizeof job);
    job.ops = o->engines[e];
    job.dir = dir;
    job.cfg = (peer_cfg){ .items = o->sizes[z], .value_size = (size_t)o->value_size,
                          .batch = ps->batch, .burst = o->burst, .index_lag = o->index_lag };
    job.seed = o->seed;
    job.order_seed = tide_bench_fetch_seed(o->seed, r);
    job.fault_item = o->fault_item;
    job.fault_phase = o->fault_phase;
    job.warm = !o->no_warm;
    job.cold_memory = o->cold_memory;
    job.cold_fetches = o->cold_fetches;
    rc = peer_run(&job, res);
    if (peer_remove_tree(dir) != 0) {
        fprintf(stderr, "peers: cannot remove %s: %s\n", dir, strerror(errno));
        return 1;
    }
    if (rc) {
        fprintf(stderr, "peers: %s, %llu items, round %u: %s\n", job.ops->name,
                (unsigned long long)o->sizes[z], r, res->error);
        return 1;
    }
    peers_progress(ps, z, r, e);
    if (ps->record) {
        char load[128];
        read_loadavg(load, sizeof load);
        if (peers_record(ps, z, r, e, load) != 0) {
            fprintf(stderr, "peers: cannot write the record of %s, %llu items, round %u to "
                    "%s: %s\n", job.ops->name, (unsigned long long)o->sizes[z], r, o->record,
                    strerror(errno));
            return 1;
        }
    }
    if (job.ops == &peer_tide_ops) check_batch(ps, z, res);
    return 0;
}

/* Every round of every size. 0 or 1. */
static int run_all(peers_state *ps)
{
    const peers_opts *o = &ps->opts;
    for (size_t z = 0; z < o->nsizes; z++) {
        read_loadavg(ps->load_before[z], sizeof ps->load_before[z]);
        for (unsigned r = 1; r <= o->runs; r++)
            for (size_t e = 0; e < o->nengines; e++)
                if (one_run(ps, z, r, e)) return 1;
        read_loadavg(ps->load_after[z], sizeof ps->load_after[z]);
    }
    return 0;
}

int main(int argc, char **argv)
{
    peers_state ps;
    struct utsname un;
    int rc;

    memset(&ps, 0, sizeof ps);
    rc = parse(argc, argv, &ps.opts);
    if (rc) return rc < 0 ? 0 : rc;
    ps.batch_burst = burst_items(ps.opts.value_size, ps.opts.burst);
    ps.batch = ps.opts.batch ? ps.opts.batch : ps.batch_burst;
    ps.nproc = sysconf(_SC_NPROCESSORS_ONLN);
    if (uname(&un) == 0)
        snprintf(ps.kernel, sizeof ps.kernel, "%s %s %s", un.sysname, un.release, un.machine);
    ps.results = calloc(ps.opts.nsizes * ps.opts.runs * ps.opts.nengines, sizeof *ps.results);
    snprintf(ps.dir, sizeof ps.dir, "%s/tide-peers-XXXXXX", ps.opts.parent);
    if (ps.results == NULL || mkdtemp(ps.dir) == NULL) {
        fprintf(stderr, "peers: cannot make a directory under %s: %s\n", ps.opts.parent,
                strerror(errno));
        free(ps.results);
        return 1;
    }
    if (ps.opts.record && (ps.record = fopen(ps.opts.record, "a")) == NULL) {
        fprintf(stderr, "peers: cannot open --record %s to append: %s\n", ps.opts.record,
                strerror(errno));
        rmdir(ps.dir);
        free(ps.results);
        return 1;
    }
    peers_header(&ps);
    rc = run_all(&ps);
    if (ps.record && fclose(ps.record) != 0) {
        fprintf(stderr, "peers: cannot close --record %s: %s\n", ps.opts.record, strerror(errno));
        rc = 1;
    }
    if (rmdir(ps.dir) != 0) {
        fprintf(stderr, "peers: cannot remove %s: %s\n", ps.dir, strerror(errno));
        rc = 1;
    }
    if (rc == 0) rc = ps.opts.json ? peers_json(&ps) : peers_table(&ps);
    free(ps.results);
    return rc;
}
