/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmd_recover.c: `tide recover PATH`, an interrupted commit undone.
 *
 * Before the library is asked, two probes make sure the log is not a live
 * commit's: the lock on nudb.key (flock, non-blocking: every open store
 * holds it) and the processes that have the store's files open (any, NuDB's
 * included; skipped with --force). Then the size of nudb.log is noted (for
 * the message), tide_store_recover_with runs, and its report is told in
 * words: what was found and what was done to which file.
 *
 * Invariants:
 *   1. Both probes run before tide_store_recover_with: a store another
 *      process has locked (or, without --force, has open) is refused
 *      with "store is busy" (exit 1) and every file as it was.
 *   2. The exit status is CLI_OK only when the recovery returned 0, and
 *      then exactly one line on stdout says what it did.
 *
 * Never: apply or delete the nudb.log of an open store.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "tide/error.h"
#include "store/full.h"

#define LOG_HEADER_BYTES 62   /* NuDB's log header; a shorter nudb.log holds nothing */

static const char help_recover[] =
"NAME\n"
"    tide recover - undo a commit that a crash interrupted\n"
"\n"
"SYNOPSIS\n"
"    tide recover PATH [--force]\n"
"\n"
"DESCRIPTION\n"
"    A commit first writes the old image of every bucket it will change\n"
"    to nudb.log, with the sizes nudb.key and nudb.dat had before it. A\n"
"    crash in the middle of a commit leaves that log behind. Recovery does\n"
"    what NuDB does: it writes every complete old bucket image back into\n"
"    nudb.key, truncates nudb.key and nudb.dat to the recorded sizes (the\n"
"    values of the interrupted commit are lost; everything committed\n"
"    before it is kept), syncs both files and deletes nudb.log. Running it\n"
"    again, or after a crash during it, gives the same result.\n"
"\n"
"    A read-write open (tide put, tide rekey, the node) recovers by\n"
"    itself; the read-only tools (get, info, visit, verify) never do. This\n"
"    verb does it alone and says what it did:\n"
"        no nudb.log: nothing to recover\n"
"        deleted a partial log of N bytes (shorter than its header: the\n"
"            crash came before the commit changed anything)\n"
"        deleted an empty nudb.log: nothing to undo\n"
"        undid an interrupted commit: N buckets restored from nudb.log;\n"
"            nudb.key X -> Y bytes; nudb.dat X -> Y bytes\n"
"        an interrupted key-file rebuild: nudb.dat truncated to Y bytes,\n"
"            nudb.key deleted; run tide rekey to build it again\n"
"        removed a nudb.key of N bytes that held no complete bucket: with\n"
"            no commit to undo, a key file shorter than its header block\n"
"            and one bucket is what a rebuild (NuDB's rekey) killed after\n"
"            writing the header leaves; no committed store is that small.\n"
"            Like the interrupted rebuild's, it is removed (the data file\n"
"            is the truth); run tide rekey to build it\n"
"        kept and indexed N bytes of committed records (nudb.dat W -> C)\n"
"            that the deferred index had not written to nudb.key yet\n"
"\n"
"    A store written with the index deferred (tided's store_index_lag)\n"
"    keeps nudb.log between commits: its header alone, saying where the\n"
"    indexed records end (W), while tide.meta says where the committed\n"
"    ones end (C). That log carries Tide's mark in its pepper field, so\n"
"    NuDB refuses to open such a store ('hash mismatch') rather than cut\n"
"    the records past W; run this verb first, and NuDB opens the result.\n"
"    A log NuDB wrote (no mark) is rolled back as NuDB would, whatever\n"
"    tide.meta says. Every record kept past W is checked whole before\n"
"    anything is written: when one is not, recover refuses, names its\n"
"    offset and changes nothing.\n"
"\n"
"    While another process has the store open its nudb.log belongs to a\n"
"    live commit, and undoing it would destroy that process's work. So\n"
"    recover refuses with 'store is busy', changing nothing, when a Tide\n"
"    process holds the store's lock, and also when any other process has\n"
"    nudb.dat, nudb.key or nudb.log open (it looks through /proc/PID/fd\n"
"    and names the process: pid and name). The second check is the one\n"
"    that sees NuDB, which takes no lock: an XRP Ledger node writing its\n"
"    store looks, to the lock, exactly like a crashed one. Only processes\n"
"    this user may look into are seen (all of them as root).\n"
"\n"
"OPTIONS\n"
"    --force      recover even though another process has the store's\n"
"                 files open (a backup, a reader): skips the /proc check,\n"
"                 never the lock. Use it only when that process does not\n"
"                 write the store.\n"
"    -h, --help   print this text\n"
"\n"
"EXIT STATUS\n"
"    0 recovered, or nothing to recover; 1 store busy (a lock, or a\n"
"    process with the files open; nothing is changed), no store, the log\n"
"    belongs to another store, a file is corrupt, I/O error (the log is\n"
"    kept so that recovery can run again); 2 usage error.\n"
"\n"
"EXAMPLES\n"
"    tide recover /var/lib/tide/db\n"
"    tide recover db && tide verify db\n";

static const struct option options[] = {
    { "force", no_argument, NULL, 'f' },
    { NULL, 0, NULL, 0 },
};

/* What the recovery did, in a line or two. `log_bytes`: nudb.log's size
 * before; `rekey_left`: what an interrupted rekey had left before it (1
 * nudb.dat.new, 2 nudb.key.new, both 3), now gone. */
static void print_report(const char *path, const tide_recover_report *rep, long long log_bytes,
                         int rekey_left)
{
    if (rep->key_removed) {
        printf("%s: %s; removed a nudb.key of %llu bytes that held no complete bucket (what a "
               "key-file rebuild killed after writing its header leaves; no committed store is "
               "that small); nudb.dat is unchanged: run tide rekey to build the key file from it\n",
               path, !rep->had_log ? "no nudb.log" : rep->log_was_partial ? "deleted a partial log"
               : "deleted an empty nudb.log", (unsigned long long)rep->key_removed_bytes);
    } else if (!rep->had_log) {
        printf("%s: no nudb.log: nothing to recover\n", path);
    } else if (rep->log_was_partial) {
        printf("%s: deleted a partial log of %lld bytes (shorter than its %d-byte header: the "
               "crash came before the commit changed anything); nudb.dat and nudb.key are "
               "unchanged\n", path, log_bytes, LOG_HEADER_BYTES);
    } else if (rep->rebuild_interrupted) {
        printf("%s: an interrupted key-file rebuild: nudb.dat truncated to %llu bytes (from "
               "%llu), nudb.key deleted; run tide rekey to build it again from nudb.dat\n", path,
               (unsigned long long)rep->dat_truncated_to,
               (unsigned long long)rep->dat_truncated_from);
    } else if (rep->key_truncated_to == 0 && rekey_left) {
        printf("%s: deleted the empty nudb.log of an interrupted rekey: nothing to undo\n", path);
    } else if (rep->key_truncated_to == 0) {
        printf("%s: deleted an empty nudb.log (the store was closed uncleanly between "
               "commits): nothing to undo\n", path);
    } else {
        printf("%s: undid an interrupted commit: %llu bucket%s restored from nudb.log; "
               "nudb.key %llu -> %llu bytes; nudb.dat %llu -> %llu bytes\n", path,
               (unsigned long long)rep->buckets_restored, rep->buckets_restored == 1 ? "" : "s",
               (unsigned long long)rep->key_truncated_from,
               (unsigned long long)rep->key_truncated_to,
               (unsigned long long)rep->dat_truncated_from,
               (unsigned long long)rep->dat_truncated_to);
    }
    if (rep->rekey_completed)
        printf("%s: finished a rekey stopped between its renames: nudb.key.new renamed over "
               "nudb.key (nudb.dat was the new one already)\n", path);
    else if (rekey_left)
        printf("%s: removed what an interrupted rekey left (%s%s%s): the store is the one before "
               "the rekey; run it again\n", path, rekey_left & 1 ? "nudb.dat.new" : "",
               rekey_left == 3 ? " and " : "", rekey_left & 2 ? "nudb.key.new" : "");
    if (rep->tail_to > rep->tail_from)
        printf("%s: kept and indexed %llu bytes of committed records (nudb.dat %llu -> %llu) "
               "that the deferred index had not written to nudb.key yet (tide.meta)\n", path,
               (unsigned long long)(rep->tail_to - rep->tail_from),
               (unsigned long long)rep->tail_from, (unsigned long long)rep->tail_to);
}

static int run(int argc, char **argv)
{
    tide_recover_report rep;
    struct stat st;
    cli_args a;
    char log[4096];
    long long log_bytes = -1, dat_new = -1, key_new = -1;
    int rekey_left = 0;
    int rc, force = 0;

    if (cli_parse(&cli_verb_recover, argc, argv, &force, &a, &rc)) return rc;
    /* An open store keeps nudb.log (empty between commits, the undo records
     * of the commit in progress during one): that log is not ours to apply
     * or delete. */
    if (cli_store_is_held(a.path, 0))
        return cli_error("recover", "%s: store is busy: another process (a node?) has it open, "
                         "so a nudb.log there belongs to a live commit; nothing was changed",
                         a.path);
    rc = cli_refuse_holders("recover", a.path, force, "a recovery");
    if (rc) return rc;
    snprintf(log, sizeof log, "%s/nudb.log", a.path);
    if (stat(log, &st) == 0) log_bytes = (long long)st.st_size;
    if (cli_rekey_leftovers(a.path, &dat_new, &key_new))
        rekey_left = (dat_new >= 0 ? 1 : 0) | (key_new >= 0 ? 2 : 0);

    memset(&rep, 0, sizeof rep);
    rc = tide_store_recover_with(a.path, NULL, force ? TIDE_RECOVER_FORCE : 0, &rep);
    /* Busy before recovery began (rep still empty): nothing was changed.
     * After it, the library's message says what was done. */
    if (rc == TIDE_EBUSY && !rep.had_log && !rep.key_removed)
        return cli_error("recover", "%s: store is busy: another process opened it meanwhile (%s); "
                         "nothing was changed", a.path, tide_last_error());
    if (rc) return cli_fail_store("recover", rc);
    /* What the recovery removed of them (a finished switch renamed one). */
    if (rekey_left && cli_rekey_leftovers(a.path, &dat_new, &key_new))
        rekey_left = 0;
    print_report(a.path, &rep, log_bytes, rekey_left);
    return CLI_OK;
}

const cli_verb cli_verb_recover = {
    .name = "recover", .usage = "recover PATH",
    .summary = "undo a commit a crash interrupted (nudb.log)",
    .help = help_recover, .run = run,
    .options = options, .option = cli_option_flag, .args = CLI_ARGS_PATH, .store = 1,
};
