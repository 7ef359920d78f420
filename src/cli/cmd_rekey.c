/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_rekey.c: `tide rekey PATH --block-size N`, the key file rebuilt.
 *
 * Three steps, as the library's rekey has them:
 *
 *   prepare  tide_store_inspect (a key file that is missing or unsound is
 *            no error here: the library rebuilds it from nudb.dat, if
 *            nudb.dat is sound, and says otherwise); the holders refusal;
 *            tide_store_recover_io when nudb.log holds an interrupted commit,
 *            so that the size of nudb.dat, which the progress line divides
 *            into passes, is the one the rekey will read.
 *   build    tide_store_rekey_with, which takes the lock itself (TIDE_EBUSY
 *            while a node has the store open). Progress goes to stderr
 *            (cli_progress.c) only when stderr is a terminal or
 *            --progress says so, at most ten redraws a second, in one
 *            measure: bytes of nudb.dat read over the whole run.
 *   report   the old and new figures, from the rekey's report and a fresh
 *            tide_store_inspect.
 *
 * Invariants:
 *   1. Status 2 means nothing was changed: --block-size is required and
 *      checked, with no fall-back (a typo must not rewrite a store at a
 *      block size nobody asked for).
 *   2. The progress line is ended (its last state, 100% when the rekey
 *      got through, kept as a line of its own) before anything else is
 *      printed.
 *
 * Never: write a store file itself (every change is tide_store_recover_io's
 *   or tide_store_rekey_with's), or draw progress when stderr is not a terminal
 *   unless --progress asks.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tide/error.h"
#include "store/full.h"
#include "util/clock.h"
#include "util/size.h"

#define REKEY_BUFFER_DEFAULT ((uint64_t)64 << 20)

static const char help_rekey[] =
"NAME\n"
"    tide rekey - rebuild the key file with a new block size\n"
"\n"
"SYNOPSIS\n"
"    tide rekey PATH --block-size N [--load-factor F] [--buffer SIZE]\n"
"               [--force] [--progress | --no-progress]\n"
"    tide rekey PATH [--block-size N] ...   (nudb.key missing or unusable)\n"
"\n"
"DESCRIPTION\n"
"    Builds a new nudb.key for the store in PATH from its data file, with\n"
"    block size N (and load factor F), the way an operator changes\n"
"    [node_db] nudb_block_size on an existing node. The values in nudb.dat\n"
"    stay where they are: every data record is indexed afresh, so the old\n"
"    key file is replaced, never read. The new table has\n"
"    ceil(records / (capacity x F)) buckets, where capacity is\n"
"    (N - 8) / 18 entries; a bucket that overflows spills, as NuDB's do,\n"
"    into a record appended to nudb.dat.\n"
"\n"
"    A missing nudb.key, or one that open refuses (grown or cut, holding\n"
"    no complete bucket, of another store, damaged: the first line of the\n"
"    output says why), is built the same way from nudb.dat alone: uid,\n"
"    appnum and key size come from nudb.dat's header, the salt and load\n"
"    factor from the old key file's header when it is this store's (else\n"
"    a new salt and 0.5), the block size from --block-size or else 4096.\n"
"    Its log says key_file_size 0, NuDB's mark of a rebuild, so a crash\n"
"    during it cuts nudb.dat back and removes the unusable key file, and\n"
"    the next rekey starts again.\n"
"\n"
"    The store is opened read-write, so rekey needs the store to itself:\n"
"    while a node (or a put) has it open, rekey refuses with 'store is\n"
"    busy' and changes nothing; so it does while any other process has\n"
"    one of the store's files open (NuDB takes no lock), naming it. A\n"
"    nudb.log left by a crash is recovered first, as any read-write open\n"
"    does, and rekey says so.\n"
"\n"
"    The new key file is written as nudb.key.new in passes: each pass\n"
"    walks nudb.dat once and fills the buckets that fit in the buffer, so\n"
"    memory stays about SIZE however large the store is, and a new table\n"
"    that does not fit in SIZE takes several passes. Then nudb.dat and\n"
"    nudb.key.new are synced and nudb.key.new is renamed over nudb.key;\n"
"    that one rename is the switch.\n"
"\n"
"    When it is interrupted (kill -9, power loss, a failed write, a full\n"
"    disk) the store is either the old one or the new one, never a broken\n"
"    one. Before the rename it is the old store: the next recovery (tide\n"
"    recover, or any read-write open: tide put, the node, rekey itself)\n"
"    cuts off the spill records this rekey had appended to nudb.dat, using\n"
"    the nudb.log it wrote first, and a read-write open removes the\n"
"    partial nudb.key.new. Between the final syncs and the rename the log\n"
"    is already empty; then nudb.rekey, written just before, says where\n"
"    the appended spill records start, and the next read-write open (or\n"
"    tide recover) cuts them off: left under the old key file, spill\n"
"    records of the new block size make NuDB's verify reject the store\n"
"    ('invalid size in spill'). After the rename it is the new store.\n"
"    Either way every value is kept; run rekey again to finish.\n"
"\n"
"    To ANOTHER block size (or when nudb.dat holds spill records of\n"
"    another size), rekey rewrites nudb.dat: NuDB's verify rejects spill\n"
"    records of another size than the key file's buckets ('invalid size\n"
"    in spill'), so the old table's cannot stay. nudb.dat.new gets the\n"
"    data records in their order, then the new table's spill records, and\n"
"    a new uid; nudb.key.new indexes it. It first checks the room: the\n"
"    free space must hold both new files (the data records, at most one\n"
"    spill record per bucket capacity of records, and the key file), or\n"
"    it fails with 'no space left', naming the bytes needed and free, and\n"
"    changes nothing. Both files are synced, then nudb.dat.new is renamed\n"
"    over nudb.dat and nudb.key.new over nudb.key, each rename made\n"
"    durable before the next. A kill before the first leaves the old\n"
"    store (the .new files are removed at the next read-write open); after\n"
"    the second, the new one; between them nudb.dat and nudb.key differ in\n"
"    uid, which NuDB refuses to open ('uid mismatch') without changing\n"
"    anything, and the next read-write open or tide recover finishes the\n"
"    switch. The old store and the new one each pass NuDB's verify.\n"
"    Rebuilding a missing key file keeps nudb.dat as it is.\n"
"\n"
"    On a terminal, progress is shown on stderr as one line that is\n"
"    redrawn at most ten times a second, and left, at 100%, as a line of\n"
"    its own when the rekey is done:\n"
"        tide rekey: pass 1/2 (walk 2/3)   52%  71.0 MiB of 136.2 MiB\n"
"    Everything on it is of one measure, the bytes of nudb.dat read over\n"
"    the whole run: the walk that counts the records, then every pass.\n"
"    The total is nudb.dat's size times the walks (1 + passes), and the\n"
"    rate that follows after a quarter of a second ('410 MiB/s') is the\n"
"    bytes read so far over the time taken, so the percent never goes\n"
"    back from one pass to the next and reaches 100% only at the end.\n"
"    The passes are known only once the records are counted: during the\n"
"    first walk the total assumes the records counted so far are typical\n"
"    of the file. When stderr is not a terminal nothing is printed there\n"
"    (see --progress).\n"
"\n"
"    At the end it prints on stdout what it did: the records indexed, the\n"
"    block size and capacity old -> new, the load factor, the buckets old\n"
"    -> new, the passes, the spill records appended, and the sizes of\n"
"    nudb.key and nudb.dat before and after.\n"
"\n"
"OPTIONS\n"
"    --block-size N   the new block size; required, except when nudb.key is\n"
"                     missing or unusable (then 4096). A power of two from\n"
"                     4096 to 32768: 4096, 8192, 16384 or 32768. Any other\n"
"                     value (5000, abc) is a usage error (exit 2) and the\n"
"                     store is not touched: unlike tide create and the\n"
"                     node's nudb_block_size, which fall back to 4096 with\n"
"                     a warning, rekey rewrites a key file, so a typo must\n"
"                     not. The old block size may be anything NuDB writes\n"
"                     (512, say).\n"
"    --load-factor F  target bucket fullness of the new table, greater than\n"
"                     0 and at most 1. Default: the store's own (shown by\n"
"                     tide info).\n"
"    --buffer SIZE    memory for the buckets of one pass, e.g. 512MiB,\n"
"                     64MB or 1048576 (K, M, G, T: powers of 1024; KB, MB,\n"
"                     GB, TB: powers of 1000). Default 64 MiB. At least one\n"
"                     bucket is indexed per pass, however small SIZE is.\n"
"    --force          rekey even though another process has the store's\n"
"                     files open (never while a Tide process holds it)\n"
"    --progress       draw the progress line on stderr even when it is not\n"
"                     a terminal (a log then holds every redraw, each\n"
"                     beginning with a carriage return)\n"
"    --no-progress    never draw it, even on a terminal\n"
"    -h, --help       print this text\n"
"\n"
"EXIT STATUS\n"
"    0 rekeyed; 1 store busy (nothing is changed), no store, a file is\n"
"    corrupt, I/O error or full disk (the store is the old one, or the\n"
"    new one when the error came after the switch, while syncing the\n"
"    directory or closing; tide info shows which); 2 usage error: no\n"
"    PATH, no --block-size or an invalid one (such as 5000), a bad\n"
"    --load-factor (such as 1.5) or --buffer, an unknown option (nothing\n"
"    is read or changed).\n"
"\n"
"    Errors are printed on stderr as\n"
"        tide rekey: <error name>: <what and where>\n"
"\n"
"COST\n"
"    Memory about SIZE. A bucket of the pass takes capacity x 24 + 16\n"
"    bytes of the buffer (about 4/3 of N), so a pass indexes about\n"
"    SIZE / (1.34 x N) buckets: the 64 MiB default does a key file of up\n"
"    to about 47 MiB in one pass. I/O: one sequential read of nudb.dat to\n"
"    count the records and one per pass, one write of the new key file,\n"
"    the spill records appended to nudb.dat, five syncs (nudb.log,\n"
"    nudb.dat, nudb.key.new, nudb.log, the directory) and a rename.\n"
"\n"
"EXAMPLES\n"
"    tide rekey /var/lib/tide/db --block-size 16384\n"
"    tide rekey db --block-size 32768 --load-factor 0.75 --buffer 512MiB\n"
"    tide rekey db --block-size 8192 && tide verify db\n";

static const struct option options[] = {
    { "block-size",  required_argument, NULL, 'b' },
    { "load-factor", required_argument, NULL, 'f' },
    { "buffer",      required_argument, NULL, 'm' },
    { "force",       no_argument,       NULL, 'F' },
    { "progress",    no_argument,       NULL, CLI_OPT_PROGRESS },
    { "no-progress", no_argument,       NULL, CLI_OPT_NO_PROGRESS },
    { NULL, 0, NULL, 0 },
};

typedef struct rekey_args {
    tide_rekey_opts o;
    int have_block;
    int progress;               /* CLI_PROGRESS_* */
} rekey_args;

static int option(void *arg, int id, const char *val)
{
    rekey_args *r = arg;
    uint64_t v;

    if (cli_progress_option(&r->progress, id)) return CLI_OK;
    switch (id) {
    case 'b':
        if (cli_parse_u64(val, 0, UINT32_MAX, &v) != 0 || !tide_block_size_valid((long long)v))
            return cli_usage("rekey", "--block-size '%s' is not a power of two from 4096 to "
                             "32768 (4096, 8192, 16384 or 32768); nothing was changed", val);
        r->o.block_size = (unsigned)v;
        r->have_block = 1;
        break;
    case 'f':
        if (cli_parse_double(val, &r->o.load_factor) != 0 ||
            !(r->o.load_factor > 0.0 && r->o.load_factor <= 1.0))
            return cli_usage("rekey", "--load-factor '%s' is not a number greater than 0 "
                             "and at most 1", val);
        break;
    case 'm':
        if (tide_size_parse(val, &v) != 0 || v == 0 || v > SIZE_MAX)
            return cli_usage("rekey", "--buffer '%s' is not a size of at least 1 byte "
                             "(e.g. 512MiB, 64MB, 1048576)", val);
        r->o.buffer_bytes = (size_t)v;
        break;
    default:
        r->o.ignore_holders = 1;
        break;
    }
    return CLI_OK;
}

static int busy(const char *path)
{
    return cli_error("rekey", "%s: store is busy: another process (a node?) has it open; "
                     "nothing was changed (%s)", path, tide_last_error());
}

/* ---- prepare ---- */

/* The store's headers into *in, recovering an interrupted commit first.
 * The one scan for other holders of the store is here: after it passes,
 * r->o.ignore_holders is set so that neither the recovery nor the library
 * reads /proc again. CLI_OK, or the status (printed). */
static int prepare(const char *path, rekey_args *r, tide_store_info *in)
{
    tide_recover_report rec;
    int rc;

    memset(in, 0, sizeof *in);
    rc = tide_store_inspect(path, NULL, in);
    if (rc == 0 && !r->have_block)
        return cli_usage("rekey", "--block-size is required: the new block size, a power of two "
                         "from 4096 to 32768");
    if (rc == TIDE_ECORRUPT || rc == TIDE_ENOTSTORE || rc == TIDE_EVERSION || rc == TIDE_EHASH ||
        rc == TIDE_EMISMATCH || rc == TIDE_ENOENT) {
        /* The key file may be what is wrong (missing, grown, cut, holding
         * no bucket): the library rebuilds it from nudb.dat if nudb.dat is
         * sound, and says otherwise. */
        struct stat st;
        char dat[4096];
        snprintf(dat, sizeof dat, "%s/nudb.dat", path);
        if (stat(dat, &st) == 0) in->dat_file_bytes = (uint64_t)st.st_size;
    } else if (rc) {
        return cli_fail_store("rekey", rc);
    }
    rc = cli_refuse_holders("rekey", path, r->o.ignore_holders, "a rekey");
    if (rc) return rc;
    r->o.ignore_holders = 1;    /* scanned just now: recovery and the library need not again */
    if (!in->needs_recovery) return CLI_OK;
    fprintf(stderr, "tide rekey: note: %s/nudb.log holds an interrupted commit; recovering "
                    "it first\n", path);
    rc = tide_store_recover_with(path, NULL, r->o.ignore_holders ? TIDE_RECOVER_FORCE : 0, &rec);
    if (rc == 0) rc = tide_store_inspect(path, NULL, in);
    if (rc == TIDE_EBUSY) return busy(path);
    if (rc) return cli_fail_store("rekey", rc);
    return CLI_OK;
}

/* ---- build, with a progress line ---- */

typedef struct rekey_progress {
    cli_progress line;
    uint64_t dat_bytes;         /* nudb.dat as the rekey reads it: one walk */
} rekey_progress;

/* The library's tide_progress_fn: done/total are bytes of nudb.dat read
 * over the whole run, the counting walk and every pass (tide_rekey_opts),
 * so the percent, the bytes and the rate on the line are all of that one
 * measure; the label says which walk it is in. */
static void progress_cb(void *arg, uint64_t done, uint64_t total)
{
    rekey_progress *p = arg;
    uint64_t walks = 1, walk = 1;
    char what[128];

    if (p->dat_bytes) {
        walks = (total + p->dat_bytes / 2) / p->dat_bytes;
        walk = done / p->dat_bytes + 1;
    }
    if (walks < 2) walks = 2;   /* the counting walk and at least one pass */
    if (walk > walks) walk = walks;
    if (walk == 1)
        snprintf(what, sizeof what, "counting records (walk 1/%llu)", (unsigned long long)walks);
    else
        snprintf(what, sizeof what, "pass %llu/%llu (walk %llu/%llu)", (unsigned long long)(walk - 1),
                 (unsigned long long)(walks - 1), (unsigned long long)walk, (unsigned long long)walks);
    cli_progress_draw(&p->line, what, done, total, NULL);
}

static int build(const char *path, rekey_args *r, const tide_store_info *in,
                 tide_rekey_report *rep)
{
    rekey_progress prog;
    int rc;

    memset(&prog, 0, sizeof prog);
    prog.dat_bytes = in->dat_file_bytes;
    cli_progress_start(&prog.line, "rekey", r->progress);
    if (prog.line.on) {
        r->o.progress = progress_cb;
        r->o.progress_arg = &prog;
    }
    memset(rep, 0, sizeof *rep);
    rc = tide_store_rekey_with(path, &r->o, rep);
    r->o.progress = NULL;
    r->o.progress_arg = NULL;
    cli_progress_end(&prog.line);           /* invariant 2 */
    if (rc == TIDE_EBUSY) return busy(path);
    if (rc) return cli_fail_store("rekey", rc);
    return CLI_OK;
}

/* ---- report ---- */

static void print_report(const char *path, const tide_rekey_opts *o, const tide_rekey_report *rep,
                         const tide_store_info *in, double secs)
{
    tide_store_info after;
    char b1[32], b2[32], b3[32];

    memset(&after, 0, sizeof after);
    if (tide_store_inspect(path, NULL, &after) != 0) after = *in;
    printf("rekeyed %s in %.2f s: %llu records indexed afresh from nudb.dat\n", path, secs,
           (unsigned long long)rep->records);
    if (rep->key_rebuilt) {
        /* Nothing of the old key file was usable but, perhaps, its salt. */
        printf("nudb.key       unusable, so built again from nudb.dat alone (%s)\n", rep->key_problem);
        if (rep->old_block_size)
            printf("block size     %u -> %u bytes (capacity %u entries per bucket)\n",
                   rep->old_block_size, rep->new_block_size, after.capacity);
        else
            printf("block size     (none) -> %u bytes (capacity %u entries per bucket)\n",
                   rep->new_block_size, after.capacity);
        printf("load factor    %u/65536 = %.4f\n", after.load_factor_raw, after.load_factor);
    } else {
        printf("block size     %u -> %u bytes (capacity %u -> %u entries per bucket)\n",
               rep->old_block_size, rep->new_block_size, in->capacity, after.capacity);
        printf("load factor    %u/65536 = %.4f -> %u/65536 = %.4f\n", in->load_factor_raw,
               in->load_factor, after.load_factor_raw, after.load_factor);
    }
    printf("buckets        %llu -> %llu\n", (unsigned long long)rep->old_buckets,
           (unsigned long long)rep->new_buckets);
    printf("passes         %u (walks of nudb.dat; buffer %s)\n", rep->passes,
           cli_human(o->buffer_bytes, b1, sizeof b1));
    printf("spill records  %llu appended to nudb.dat\n", (unsigned long long)rep->spill_records);
    if (rep->foreign_spill_records)
        printf("old spills     %llu spill records of another block size stay in nudb.dat, "
               "unreachable: Tide and NuDB read and write the store as before, but NuDB's verify "
               "(and tide verify) reject it for them ('invalid size in spill'); only rewriting "
               "nudb.dat would remove them\n", (unsigned long long)rep->foreign_spill_records);
    printf("nudb.key       %llu -> %llu bytes (%s)\n", (unsigned long long)rep->old_key_file_bytes,
           (unsigned long long)rep->new_key_file_bytes,
           cli_human(rep->new_key_file_bytes, b2, sizeof b2));
    printf("nudb.dat       %llu -> %llu bytes (%s)\n",
           (unsigned long long)rep->dat_file_bytes_before,
           (unsigned long long)rep->dat_file_bytes_after,
           cli_human(rep->dat_file_bytes_after, b3, sizeof b3));
}

static int run(int argc, char **argv)
{
    rekey_args r;
    tide_rekey_report rep;
    tide_store_info in;
    cli_args a;
    uint64_t t0;
    int rc;

    memset(&r, 0, sizeof r);
    tide_rekey_opts_init(&r.o);
    r.o.buffer_bytes = (size_t)REKEY_BUFFER_DEFAULT;
    if (cli_parse(&cli_verb_rekey, argc, argv, &r, &a, &rc)) return rc;
    rc = prepare(a.path, &r, &in);
    if (rc) return rc;
    t0 = tide_clock_mono_us();
    rc = build(a.path, &r, &in, &rep);
    if (rc) return rc;
    print_report(a.path, &r.o, &rep, &in, (double)(tide_clock_mono_us() - t0) / 1e6);
    return CLI_OK;
}

const cli_verb cli_verb_rekey = {
    .name = "rekey", .usage = "rekey PATH --block-size N",
    .summary = "rebuild the key file with a new block size",
    .help = help_rekey, .run = run,
    .options = options, .option = option, .args = CLI_ARGS_PATH, .store = 1,
};
