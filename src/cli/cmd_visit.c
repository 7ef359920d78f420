/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_visit.c: `tide visit PATH`, a walk of the data file.
 *
 * tide_store_visit_io reads nudb.dat only, in file order, and calls back for
 * every data record. Without --hex the callback keeps a histogram of value
 * sizes in power-of-two buckets (hist[k]: values of [2^k, 2^(k+1)) bytes)
 * and the extremes, printed at the end with the store's counts; with --hex
 * it prints KEYHEX VALUEHEX per record as it goes, through one static
 * buffer of 32 KiB of bytes at a time.
 *
 * Invariants:
 *   1. With --hex every record is one line, KEYHEX VALUEHEX, in file order;
 *      a write error on stdout stops the walk (the callback returns
 *      TIDE_EIO) and exits CLI_FAIL.
 *   2. Without --hex the histogram's counts add up to the records with a
 *      value of at least one byte (an empty value has no power-of-two
 *      bucket), and it is printed only when there is a record.
 *   3. A store whose nudb.log needs recovery is walked anyway, with a
 *      warning on stderr: the walk reads, it does not recover.
 *   4. The progress line (cli_progress.c: bytes of nudb.dat walked) is
 *      drawn only when stderr is a terminal, or with --progress; with
 *      --hex and stdout a terminal too, not unless --progress asks. It is
 *      ended before the counts are printed.
 *
 * Never: write to the store, or take a writer's lock on it (the walk reads
 *   a file; its one lock is the readers' shared one on tide.live, which the
 *   library's walk takes, so no rotation cuts the file under it).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tide/error.h"
#include "store/full.h"
#include "util/hex.h"

static const char help_visit[] =
"NAME\n"
"    tide visit - walk a store's data file\n"
"\n"
"SYNOPSIS\n"
"    tide visit PATH [--hex] [--progress | --no-progress]\n"
"\n"
"DESCRIPTION\n"
"    Reads nudb.dat from its header to its end, in file order, and never\n"
"    changes anything. Without --hex it prints the number of data records,\n"
"    their key and value bytes, a histogram of value sizes in power-of-two\n"
"    buckets ([1,2), [2,4), ... bytes), and the number and bytes of spill\n"
"    records (bucket overflow copies that NuDB appends to the data file).\n"
"\n"
"    With --hex it prints one line per data record: KEYHEX VALUEHEX.\n"
"\n"
"    The walk sees every record in the file, including records appended\n"
"    by an interrupted commit that a recovery would cut off; visit warns\n"
"    on stderr when nudb.log says a recovery is pending.\n"
"\n"
"    While a Tide writer (a node, a put) runs on the store, visit walks\n"
"    nudb.dat only as far as the writer says its records are complete\n"
"    (tide.live: 'Readers in other processes' in docs/DURABILITY.md), so a\n"
"    record it is appending is never read half written; it says so on\n"
"    stderr. Records the writer appends during the walk are not seen.\n"
"\n"
"    The walk holds a shared lock on the store's tide.live (the readers'\n"
"    lock, which no writer takes) from its start to its end. A node's\n"
"    rotation that drops this generation meanwhile only unlinks its files,\n"
"    and the walk reads on to the end; a visit that starts while the\n"
"    rotation cuts it exits 1 with 'a rotation is deleting it', one that\n"
"    starts after with 'a rotation has deleted it' (docs/ROTATION.md,\n"
"    'Readers while a node rotates').\n"
"\n"
"    On a terminal, progress is shown on stderr as one line, redrawn at\n"
"    most ten times a second, of the bytes of nudb.dat walked:\n"
"        tide visit: nudb.dat   62%  28.1 MiB of 45.4 MiB  410 MiB/s\n"
"    When the walk is done its last state stays as a line of its own\n"
"    (100% when it reached the end), before the counts. With --hex it is\n"
"    drawn only when stdout is not the terminal too, as in\n"
"        tide visit db --hex > records.txt\n"
"    When stderr is not a terminal nothing is printed there (see\n"
"    --progress), so the output is the same as without it.\n"
"\n"
"OPTIONS\n"
"    --hex        print every data record as KEYHEX VALUEHEX\n"
CLI_PROGRESS_HELP
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 walked; 1 no store, a record runs past the end of the file (the\n"
"    offset is printed), a rotation is deleting (has deleted) the\n"
"    generation, I/O error; 2 usage error.\n"
"\n"
"EXAMPLES\n"
"    tide visit db\n"
"    tide visit db --hex | wc -l\n";

static const struct option options[] = {
    { "hex",         no_argument, NULL, 'x' },
    { "progress",    no_argument, NULL, CLI_OPT_PROGRESS },
    { "no-progress", no_argument, NULL, CLI_OPT_NO_PROGRESS },
    { NULL, 0, NULL, 0 },
};

typedef struct visit_ctx {
    cli_flag_progress opt;      /* first, for cli_option_flag_progress; flag: --hex */
    cli_progress line;
    unsigned key_size;
    uint64_t hist[64];          /* hist[k]: values of [2^k, 2^(k+1)) bytes */
    uint64_t min, max;
} visit_ctx;

/* The walk's tide_progress_fn: bytes of nudb.dat walked of its size. */
static void progress_cb(void *arg, uint64_t done, uint64_t total)
{
    visit_ctx *v = arg;
    cli_progress_draw(&v->line, "nudb.dat", done, total, NULL);
}

static int floor_log2(uint64_t v)
{
    return 63 - __builtin_clzll(v);
}

static void put_hex(const void *p, uint64_t len)
{
    static char buf[2 * 32768 + 1];
    const unsigned char *b = p;

    while (len > 0) {
        size_t n = len > 32768 ? 32768 : (size_t)len;
        tide_hex_encode(b, n, buf);
        fwrite(buf, 1, 2 * n, stdout);
        b += n;
        len -= n;
    }
}

static int visit_cb(void *arg, uint64_t offset, const void *key, unsigned key_size,
                    const void *value, uint64_t len)
{
    visit_ctx *v = arg;

    (void)offset;
    v->key_size = key_size;
    if (v->opt.flag) {
        put_hex(key, v->key_size);
        putchar(' ');
        put_hex(value, len);
        putchar('\n');
        return ferror(stdout) ? TIDE_EIO : 0;
    }
    if (len > 0) v->hist[floor_log2(len)]++;
    if (len < v->min) v->min = len;
    if (len > v->max) v->max = len;
    return 0;
}

static void print_histogram(const visit_ctx *v, uint64_t records)
{
    int lo = floor_log2(v->min), hi = floor_log2(v->max);
    uint64_t top = 0;

    for (int k = lo; k <= hi; k++)
        if (v->hist[k] > top) top = v->hist[k];
    printf("value sizes     (bytes, power-of-two buckets)\n");
    for (int k = lo; k <= hi; k++) {
        char range[48];
        int bar = top ? (int)((v->hist[k] * 40 + top - 1) / top) : 0;
        snprintf(range, sizeof range, "[%llu, %llu)", 1ull << k,
                 k == 63 ? 0ull : 1ull << (k + 1));
        printf("  %-22s %10llu  %5.1f%%  %.*s\n", range, (unsigned long long)v->hist[k],
               100.0 * (double)v->hist[k] / (double)records, bar,
               "########################################");
    }
}

static void print_counts(const char *path, const visit_ctx *v, const tide_visit_stats *st,
                         unsigned key_size)
{
    char b1[32];

    printf("store           %s\n", path);
    printf("nudb.dat        %llu bytes (%s)\n", (unsigned long long)st->file_bytes,
           cli_human(st->file_bytes, b1, sizeof b1));
    printf("data records    %llu (%llu bytes: keys %llu, values %llu, size fields %llu)\n",
           (unsigned long long)st->data_records, (unsigned long long)st->data_bytes,
           (unsigned long long)(st->data_records * key_size),
           (unsigned long long)st->value_bytes, (unsigned long long)(st->data_records * 6));
    if (st->data_records > 0)
        printf("value size      min %llu, mean %.1f, max %llu bytes\n",
               (unsigned long long)v->min, (double)st->value_bytes / (double)st->data_records,
               (unsigned long long)v->max);
    printf("spill records   %llu (%llu bytes)\n", (unsigned long long)st->spill_records,
           (unsigned long long)st->spill_bytes);
    if (st->data_records > 0) print_histogram(v, st->data_records);
}

static int run(int argc, char **argv)
{
    visit_ctx v;
    tide_visit_stats st;
    tide_store_info in;
    cli_args a;
    int rc;

    memset(&v, 0, sizeof v);
    v.min = UINT64_MAX;
    if (cli_parse(&cli_verb_visit, argc, argv, &v, &a, &rc)) return rc;
    rc = tide_store_inspect(a.path, NULL, &in);
    if (rc) return cli_fail("visit", rc);
    tide_store_live lv;
    if (tide_store_live_info(a.path, NULL, &lv) == 0 && lv.writer_running)
        /* The walk stops where the running writer's records end. */
        fprintf(stderr, "tide visit: %s: a Tide writer (pid %d) runs: walking the %llu bytes of "
                "nudb.dat it has committed\n", a.path, lv.writer_pid,
                (unsigned long long)(lv.dat_committed > lv.dat_indexed ? lv.dat_committed
                                                                       : lv.dat_indexed));
    else if (in.idle_log)
        /* A stopped deferred writer's idle log: the walk stops at C (visit.c). */
        fprintf(stderr, "tide visit: %s: a deferred writer stopped without closing the store "
                "(killed?): walking the %llu bytes of nudb.dat it committed, of which those from "
                "offset %llu are not yet indexed ('tide recover %s' or its next start indexes "
                "them)\n", a.path, (unsigned long long)in.dat_committed,
                (unsigned long long)in.dat_indexed, a.path);
    else if (in.not_idle_why[0])
        fprintf(stderr, "tide visit: warning: %s; the walk includes the records a recovery would "
                "cut off\n", in.not_idle_why);
    else if (in.needs_recovery)
        fprintf(stderr, "tide visit: warning: %s/nudb.log holds an interrupted commit; the walk "
                        "includes the records a recovery would cut off\n", a.path);
    v.key_size = in.key_size;
    memset(&st, 0, sizeof st);
    /* Invariant 4: hex lines on the terminal the line would be drawn on
     * would be torn by its redraws. */
    if (v.opt.progress == CLI_PROGRESS_AUTO && v.opt.flag && isatty(1)) v.opt.progress = CLI_PROGRESS_OFF;
    cli_progress_start(&v.line, "visit", v.opt.progress);
    {
        tide_visit_opts o = { .progress = v.line.on ? progress_cb : NULL, .progress_arg = &v };
        rc = tide_store_visit_with(a.path, &o, visit_cb, &v, &st);
    }
    cli_progress_end(&v.line);
    if (v.opt.flag) {
        if (fflush(stdout) != 0 && rc == 0)
            return cli_error("visit", "writing to stdout: %s", strerror(errno));
    }
    if (rc) return cli_fail("visit", rc);
    if (!v.opt.flag) print_counts(a.path, &v, &st, in.key_size);
    return CLI_OK;
}

const cli_verb cli_verb_visit = {
    .name = "visit", .usage = "visit PATH",
    .summary = "walk the data file: counts, or every record in hex",
    .help = help_visit, .run = run,
    .options = options, .option = cli_option_flag_progress, .args = CLI_ARGS_PATH, .store = 1,
};
