/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli.h: what the parts of bin/tide share.
 *
 * A verb is described once, by a cli_verb: its name, its line in 'tide
 * help', its manual, its option table and its function. tide.c holds main,
 * the table of the descriptors and the overview; each verb's file (cmd_*.c)
 * holds its descriptor, its help, its options, its call into the library
 * and its output. The verbs of lab, ghost and doctor parse their own argv.
 *
 * A verb's function is `int run(int argc, char **argv)` where argv[0] is
 * the verb's name, and it returns the process's exit status (CLI_OK,
 * CLI_FAIL, CLI_USAGE). Verbs print their own errors, in one form:
 * "tide VERB: <what went wrong>" on stderr.
 */
#ifndef TIDE_CLI_H
#define TIDE_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tide/version.h"          /* TIDE_VERSION, for --version */

/* Exit statuses. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

#define CLI_KEY_MAX 65535u      /* the longest key a store can have */

/* What follows a verb's options; cli_parse checks it. */
enum {
    CLI_ARGS_NONE = 0,          /* nothing: "unexpected argument 'x'" */
    CLI_ARGS_PATH = 1,          /* PATH: "no PATH given", "one PATH only" */
    CLI_ARGS_PATH_KEY = 2,      /* PATH KEYHEX, the key decoded from hex */
    CLI_ARGS_KEY = 3,           /* KEYHEX alone, decoded (no PATH) */
};

/*
 * A verb's option handler: `id` is the option's val in the verb's table,
 * `arg` its value (NULL for a flag), `opts` the verb's own settings.
 * Returns CLI_OK, or CLI_USAGE having printed why (cli_usage).
 */
typedef int (*cli_option_fn)(void *opts, int id, const char *arg);

typedef struct cli_verb {
    const char *name;
    const char *usage;          /* its line in 'tide help': "create PATH" */
    const char *summary;        /* and what it does: "make an empty store" */
    const char *help;           /* the manual: 'tide help VERB', 'VERB --help' */
    /* A manual with a generated table in it (lab's variants): help, then
     * what help_table writes, then help_after. Both NULL for the others. */
    int (*help_table)(FILE *f);
    const char *help_after;
    int (*run)(int argc, char **argv);
    /* For cli_parse (NULL options: the verb parses its argv itself): */
    const struct option *options;   /* getopt_long's table; --help is added */
    cli_option_fn option;
    int args;                   /* CLI_ARGS_* */
    int store;                  /* PATH must be an existing directory */
    const char *args_text;      /* PATH_KEY: "expected <this>, got N arguments" */
    const char *short_options;  /* the one-letter forms of options, in getopt's
                                   syntax ("v" for -v); NULL: none but -h */
} cli_verb;

/* Write v's manual (help, help_table's output, help_after) to f. */
void cli_verb_help(const cli_verb *v, FILE *f);

/* The descriptors, in the order 'tide help' lists them. */
extern const cli_verb cli_verb_create, cli_verb_info, cli_verb_put, cli_verb_get,
                      cli_verb_visit, cli_verb_verify, cli_verb_recover, cli_verb_rekey,
                      cli_verb_generations, cli_verb_rotate, cli_verb_archive,
                      cli_verb_bench, cli_verb_doctor, cli_verb_ghost, cli_verb_lab;

/* `tide bench release ARGS` (cmd_bench_release.c): argv[0] is "release".
 * Returns the exit status. */
int cli_bench_release_main(int argc, char **argv);

/* `tide bench archive ARGS` (cmd_bench_archive.c): argv[0] is "archive".
 * Returns the exit status. */
int cli_bench_archive_main(int argc, char **argv);

/* The option handler of a verb whose one option is a flag: sets the int
 * `opts` points at to 1. */
int cli_option_flag(void *opts, int id, const char *arg);

/* What cli_parse leaves for the verb. */
typedef struct cli_args {
    const char *path;           /* PATH (NULL for CLI_ARGS_NONE) */
    const char *key_hex;        /* KEYHEX as given (CLI_ARGS_PATH_KEY, CLI_ARGS_KEY) */
    size_t key_len;             /* the decoded key's bytes */
    unsigned char key[CLI_KEY_MAX];
} cli_args;

/*
 * The prologue of every verb that has an option table: parse argv (argv[0]
 * the verb's name; options may come before or after the arguments) with
 * v->options, calling v->option for each with `opts`; print the manual on
 * -h/--help; check the arguments against v->args (and decode the key), then,
 * with v->store, that PATH is an existing directory. Usage errors are
 * found here, before any store is touched.
 *
 * Returns 0 when the verb is to go on with `a` filled, or 1 when the
 * command is over (the help printed, or an error): then *status is the
 * exit status. Not reentrant (getopt's globals).
 */
int cli_parse(const cli_verb *v, int argc, char **argv, void *opts, cli_args *a, int *status);

/* Print the full help of `verb` ("bench" for "bench store") to `f`.
 * Returns 0, or -1 when there is no such verb. */
int cli_help(const char *verb, FILE *f);

/* The formatted text on stderr, each of its lines ended by a newline and
 * begun with tide_log_prefix(level) (util/log.h): when stderr is the
 * journal (a systemd unit running `tide verify`), "<3>" files an error at
 * err. cli_fail, cli_usage, cli_error and tide.c's own errors go through
 * it. At most
 * 4095 bytes; no allocation. */
void cli_say(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "tide VERB: <tide_strerror(rc)>: <tide_last_error()>" (the last part
 * omitted when empty). Returns CLI_FAIL, or CLI_USAGE for TIDE_EINVAL and
 * TIDE_EKEYSIZE. */
int cli_fail(const char *verb, int rc);

/* cli_fail for a verb that had already checked its arguments: CLI_FAIL
 * whatever the code (a TIDE_EINVAL from the store is not a usage error). */
int cli_fail_store(const char *verb, int rc);

/* "tide VERB: <message>" and "Try 'tide help VERB'." on stderr; returns
 * CLI_USAGE. */
int cli_usage(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "tide VERB: <message>" on stderr; returns CLI_FAIL. */
int cli_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parse a whole decimal (or 0x hex) unsigned integer in [min, max]. 0 on
 * success, -1 otherwise (nothing printed). */
int cli_parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out);

/* Parse a whole decimal floating-point number. 0 or -1. */
int cli_parse_double(const char *text, double *out);

/* Write all `len` bytes to fd (restarting on EINTR). 0 or -1 with errno. */
int cli_write_all(int fd, const void *buf, size_t len);

/* Common getopt_long setup: reset the parser for a verb's own argv. The
 * verb's optstring must start with ':' so that a missing argument is told
 * apart from an unknown option. */
void cli_getopt_reset(void);

/* Report what getopt_long returned as '?' or ':' for argv (the verb's
 * argv): "unknown option '--x'" or "option '--x' needs a value". Returns
 * CLI_USAGE. */
int cli_option_error(const char *verb, int c, char **argv);

/* Check that `path` is an existing directory; otherwise print why
 * ("no such directory", "not a directory") and return CLI_FAIL. */
int cli_check_store_dir(const char *verb, const char *path);

/* ---- shared by the store verbs (cli_store.c) ---- */

/* The key's length against the store's key size: CLI_OK, or CLI_USAGE
 * having printed both. */
int cli_check_key_size(const char *verb, const cli_args *a, unsigned key_size);

/* Before a verb writes (put, recover, rekey): refuse while another process
 * has one of the store's files open, naming up to three, unless `force`.
 * `doing` says what would undo their commits ("a write"). CLI_OK or
 * CLI_FAIL (printed). */
int cli_refuse_holders(const char *verb, const char *path, int force, const char *doing);

/* What an interrupted rekey left in PATH: the sizes of nudb.dat.new and
 * nudb.key.new in *dat_new and *key_new (-1 for one that is not there).
 * 1 when either is there, else 0. One stat each. */
int cli_rekey_leftovers(const char *path, long long *dat_new, long long *key_new);

/* 1 when another process holds a lock on PATH/nudb.key that an exclusive
 * lock (a writer's) or, with `writer_only`, a shared one (a reader's) would
 * conflict with; 0 otherwise, also when nudb.key is missing. */
int cli_store_is_held(const char *path, int writer_only);

/* Write the JSON object `o` to stdout, indented, members in their order,
 * reals with 10 significant digits, then a newline; takes o's reference.
 * CLI_OK, or CLI_FAIL having printed "cannot write the JSON output". */
struct json_t;
int cli_json_print(const char *verb, struct json_t *o);

/* tide_size_format into buf: "1.5 MiB". */
const char *cli_human(uint64_t bytes, char *buf, size_t cap);

/* ---- the progress line of verify, visit and rekey (cli_progress.c) ---- */

#define CLI_PROGRESS_HZ 10      /* redraws a second, at most */

enum { CLI_PROGRESS_AUTO = 0, CLI_PROGRESS_ON = 1, CLI_PROGRESS_OFF = 2 };

/* The option ids of --progress and --no-progress, for a verb's table:
 *     { "progress", no_argument, NULL, CLI_OPT_PROGRESS },
 *     { "no-progress", no_argument, NULL, CLI_OPT_NO_PROGRESS }, */
enum { CLI_OPT_PROGRESS = 0x1001, CLI_OPT_NO_PROGRESS = 0x1002 };

/* The text each such verb's manual gives the two options (OPTIONS). */
#define CLI_PROGRESS_HELP \
"    --progress   draw the progress line on stderr even when it is not a\n" \
"                 terminal (a log file then holds every redraw, each\n" \
"                 beginning with a carriage return)\n" \
"    --no-progress\n" \
"                 never draw it, even on a terminal\n"

/* Set *mode for option `id` when it is one of the two: 1, else 0. */
int cli_progress_option(int *mode, int id);

/* The options of a verb with one flag beside the two (verify's --json,
 * visit's --hex), and their handler: `opts` points at one of these. */
typedef struct cli_flag_progress {
    int flag;                   /* the flag was given */
    int progress;               /* CLI_PROGRESS_* */
} cli_flag_progress;
int cli_option_flag_progress(void *opts, int id, const char *arg);

typedef struct cli_progress {
    const char *verb;
    int on, drawn;
    uint64_t start_us, last_us;
} cli_progress;

/* Begin a progress line for `verb` in `mode` (CLI_PROGRESS_*): AUTO draws
 * only when stderr is a terminal. Starts the clock of the rate. When it
 * draws, the process's log sink is replaced until cli_progress_end, so
 * that a log line erases the progress line instead of sharing it. One
 * progress line at a time. */
void cli_progress_start(cli_progress *p, const char *verb, int mode);

/* Redraw the line as "tide VERB: WHAT  P%  DONE of TOTAL[ UNIT]" when one
 * is due: at most CLI_PROGRESS_HZ a second, and always for done == total.
 * `unit` NULL: done and total are bytes (shown as sizes, with a rate).
 * No allocation; one fprintf when drawn, none otherwise. */
void cli_progress_draw(cli_progress *p, const char *what, uint64_t done, uint64_t total,
                       const char *unit);

/* End the line: a newline after a drawn line (it stays as the final
 * line), nothing otherwise. Call before printing anything else. */
void cli_progress_end(cli_progress *p);

/* A new measure begins on the line (verify's bytes of nudb.dat after its
 * buckets of nudb.key): the rate's clock starts again at `now_us`
 * (tide_clock_mono_us), so that the rate is of this measure's own time,
 * not of the steps before it (invariant 4). */
void cli_progress_restart(cli_progress *p, uint64_t now_us);

/* The line cli_progress_draw writes between "\r" and "\033[K", for
 * done/total at `now_us`, into `out` (cap bytes, NUL-terminated, cut when
 * short): "tide VERB: WHAT  P%  DONE of TOTAL[ UNIT][  RATE/s]", the rate
 * (bytes only) from RATE_AFTER_US after the measure's start on. Pure; a
 * test passes its own clock. */
void cli_progress_format(const cli_progress *p, const char *what, uint64_t done, uint64_t total,
                         const char *unit, uint64_t now_us, char *out, size_t cap);

/* ---- a directory with generations (cli_store.c) ---- */

struct tide_gen_manifest;

/*
 * Read PATH/tide.generations into *m (through POSIX I/O; no lock, nothing
 * written). Returns 0 when PATH holds generations; TIDE_ENOENT when it has
 * no manifest (a plain store, or nothing: the verb then does what it always
 * did); the manifest's read errors (TIDE_ECORRUPT, TIDE_EVERSION,
 * TIDE_ENOTSTORE, TIDE_EIO) with tide_last_error() naming the line.
 */
int cli_gens_manifest(const char *path, struct tide_gen_manifest *m);

/*
 * A reader of a node's directory found generation `id` of *m missing or
 * unreadable: was it dropped by a rotation since *m was read? Reads the
 * manifest again: 1 (and *m is the new one) when it no longer names `id`,
 * so the verb answers from the generations it names now; 0 when it still
 * does (a real fault: say it) or cannot be read again. Nothing printed.
 */
int cli_gens_dropped(const char *path, uint64_t id, struct tide_gen_manifest *m);

/* PATH/DIR into buf; CLI_OK, or CLI_FAIL having printed that the path is
 * too long. */
int cli_gen_path(const char *verb, const char *path, const char *dir, char *buf, size_t cap);

/* A Unix time in microseconds as ISO-8601 UTC with microseconds
 * ("2026-12-01T14:05:50.123456Z") into buf (at least 32 bytes); "never"
 * for 0. Returns buf. */
const char *cli_iso8601_us(uint64_t unix_us, char *buf, size_t cap);

#endif
