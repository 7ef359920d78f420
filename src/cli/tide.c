/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tide.c: main of bin/tide, the operator's command line.
 *
 * `tide VERB [OPTIONS] ARGS` runs one verb against a store directory and
 * exits: 0 when it did what was asked, 1 when the store said no (a key is
 * absent or already present, a file is corrupt, a write failed), 2 when the
 * command line itself is wrong. Scripts rely on those three values and on
 * the verbs' argument forms; change neither lightly.
 *
 * This file holds the table of verb descriptors, the global options
 * (--help, --version, --log-level), the overview ('tide help') and the help
 * verb. Everything 'tide help' says about a verb (its usage and summary)
 * and every list of the verbs (in the overview, in the help verb's manual,
 * in the errors) comes from the table. Each verb lives in its own file
 * with its manual: cmd_create.c, cmd_info.c, cmd_put.c, cmd_get.c,
 * cmd_visit.c, cmd_verify.c, cmd_recover.c, cmd_rekey.c,
 * cmd_generations.c, cmd_rotate.c, cmd_archive.c, cmd_bench.c,
 * cmd_doctor.c, cmd_ghost.c and cmd_lab.c. The helpers the verbs share
 * are in cli.c and cli_store.c.
 *
 * Help texts are written like man pages: synopsis, description, options
 * with their defaults, exit status, examples. `tide help VERB` and
 * `tide VERB --help` print the same text, on stdout, and exit 0.
 *
 * Logging: the store logs through tide_log (stderr). The CLI sets the level
 * to "warn" so that a command's output is only what the command prints;
 * --log-level or TIDE_LOG_LEVEL raise it; --log-format or TIDE_LOG_FORMAT
 * choose json lines instead of text (util/log.h).
 *
 * Invariants:
 *   1. main's exit status is the verb's own, unchanged; before a verb it
 *      is CLI_OK for --help and --version, CLI_USAGE (2) for a bad global
 *      option and a missing or unknown verb.
 *   2. Every verb name main accepts and every list of verbs it prints come
 *      from the one table (verbs[]): there is no second list to forget.
 *
 * Never: call exit() (main returns the status), or print an error on
 *   stdout.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "store/full.h"
#include "util/log.h"

#define HELP_WIDTH 74           /* the columns of a generated help paragraph */

/* ---- the overview ---- */

static const char help_head[] =
"NAME\n"
"    tide - operate Tide stores (NuDB version 2 files)\n"
"\n"
"SYNOPSIS\n"
"    tide [--log-level LEVEL] [--log-format FORMAT] VERB [OPTIONS] ARGS\n"
"    tide help [VERB]\n"
"    tide --help | --version\n"
"\n"
"DESCRIPTION\n"
"    A Tide store is a directory holding nudb.dat (the values, appended),\n"
"    nudb.key (the hash buckets) and, while a commit runs, nudb.log. Keys\n"
"    have a fixed size chosen at creation; values are 1 byte to 4 GiB - 1;\n"
"    a key is written once and never changed. Keys are given in hex.\n"
"\n"
"    A node with online delete on keeps its directory as generations: a\n"
"    manifest, tide.generations, naming complete stores in gen-*/, newest\n"
"    first. info, get and verify read such a directory whole; generations\n"
"    lists it and rotate rotates it offline ('tide help generations').\n"
"\n"
"VERBS\n";

static const char help_tail[] =
"\n"
"GLOBAL OPTIONS\n"
"    --log-level LEVEL  debug, info, warn (default), error or off: what the\n"
"                       store library logs on stderr. The environment\n"
"                       variable TIDE_LOG_LEVEL does the same; the option\n"
"                       wins.\n"
"    --log-format FORMAT\n"
"                       text (default) or json: how those lines are\n"
"                       written; json is one object per line,\n"
"                       {\"time\":...,\"level\":...,\"pid\":...,\"message\":...}\n"
"                       (tided(8), --log-format). TIDE_LOG_FORMAT does the\n"
"                       same; the option wins. A verb's own output and\n"
"                       errors are not log lines and keep their form.\n"
"    -h, --help         print this text and exit\n"
"    -V, --version      print the version and exit\n"
"\n"
"EXIT STATUS\n"
"    0  success\n"
"    1  the operation failed: key not found, key exists, no store, store\n"
"       busy, corrupt file, I/O error\n"
"    2  usage error: unknown verb or option, bad argument\n"
"\n"
"    Errors are printed on stderr as\n"
"        tide VERB: <error name>: <what and where>\n"
"\n"
"EXAMPLES\n"
"    tide create /var/lib/tide/db --key-size 32 --block-size 16384\n"
"    printf 'hello' | tide put /var/lib/tide/db $(printf '%064x' 1)\n"
"    tide get /var/lib/tide/db $(printf '%064x' 1)\n"
"    tide info --json /var/lib/tide/db\n"
"    tide verify /var/lib/tide/db\n"
"    tide rekey /var/lib/tide/db --block-size 16384\n"
"    tide generations /var/lib/tide/db\n"
"    tide bench store --items 100000 --runs 3\n"
"\n"
"    Run 'tide help VERB' for a verb's options.\n";

static int cmd_help(int argc, char **argv);

static const cli_verb verb_help = {
    .name = "help", .usage = "help [VERB]", .summary = "print this text, or a verb's",
    .run = cmd_help,
};

/* Every verb, in the order the overview lists them. */
static const cli_verb *const verbs[] = {
    &cli_verb_create, &cli_verb_info, &cli_verb_put, &cli_verb_get, &cli_verb_visit,
    &cli_verb_verify, &cli_verb_recover, &cli_verb_rekey, &cli_verb_generations,
    &cli_verb_rotate, &cli_verb_archive, &cli_verb_bench, &cli_verb_doctor,
    &cli_verb_ghost, &cli_verb_lab, &verb_help,
};
#define NVERBS (sizeof verbs / sizeof verbs[0])

/* The verbs' names into out, `sep` between them; `with_help` 0 leaves the
 * help verb out. */
static const char *verb_names(char *out, size_t cap, const char *sep, int with_help)
{
    size_t used = 0;

    out[0] = '\0';
    for (size_t i = 0; i < NVERBS; i++) {
        if (verbs[i] == &verb_help && !with_help) continue;
        used += (size_t)snprintf(out + used, cap - used, "%s%s", used ? sep : "", verbs[i]->name);
        if (used >= cap) break;
    }
    return out;
}

/* The VERBS section: usage in 19 columns, then the summary; a longer usage
 * has its summary on the next line. */
static void print_overview(FILE *f)
{
    fputs(help_head, f);
    for (size_t i = 0; i < NVERBS; i++) {
        if (strlen(verbs[i]->usage) > 18)
            fprintf(f, "    %s\n%23s%s\n", verbs[i]->usage, "", verbs[i]->summary);
        else
            fprintf(f, "    %-19s%s\n", verbs[i]->usage, verbs[i]->summary);
    }
    fputs(help_tail, f);
}

/* `text` as lines of at most HELP_WIDTH columns indented by four,
 * broken at blanks. */
static void print_paragraph(FILE *f, const char *text)
{
    size_t col = 0;

    while (*text) {
        size_t n = strcspn(text, " ");
        if (col > 0 && col + 1 + n > HELP_WIDTH) {
            fputc('\n', f);
            col = 0;
        }
        col += (size_t)fprintf(f, "%s%.*s", col ? " " : "    ", (int)n, text);
        text += n;
        text += strspn(text, " ");
    }
    if (col) fputc('\n', f);
}

static void print_help_help(FILE *f)
{
    char names[256], para[512];

    snprintf(para, sizeof para, "Without VERB, prints the overview of tide. With VERB (%s), "
             "prints that verb's manual, the same text as 'tide VERB --help'.",
             verb_names(names, sizeof names, ", ", 0));
    fputs("NAME\n"
          "    tide help - print help\n"
          "\n"
          "SYNOPSIS\n"
          "    tide help [VERB]\n"
          "\n"
          "DESCRIPTION\n", f);
    print_paragraph(f, para);
    fputs("\n"
          "EXIT STATUS\n"
          "    0 printed; 2 unknown verb.\n", f);
}

/* ---- the help verb ---- */

static const cli_verb *find_verb(const char *name)
{
    for (size_t i = 0; i < NVERBS; i++)
        if (strcmp(verbs[i]->name, name) == 0) return verbs[i];
    return NULL;
}

int cli_help(const char *name, FILE *f)
{
    const cli_verb *v = find_verb(name);
    if (v == NULL) return -1;
    if (v == &verb_help) print_help_help(f);
    else cli_verb_help(v, f);
    return 0;
}

static int cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        print_overview(stdout);
        return CLI_OK;
    }
    if (argc > 2) return cli_usage("help", "one verb at a time (got %d)", argc - 1);
    if (strcmp(argv[1], "store") == 0) return cli_help("bench", stdout), CLI_OK;
    if (cli_help(argv[1], stdout) != 0)
        return cli_usage("help", "'%s' is not a verb", argv[1]);
    return CLI_OK;
}

/* ---- main ---- */

/* The log setting in variable `var` read by `parse` (tide_log_level_parse,
 * tide_log_format_parse); `dflt` when unset, or when wrong (said so, with
 * the words it takes and the default's name). */
static int env_log_setting(const char *var, int (*parse)(const char *), int dflt, const char *words,
                           const char *dflt_name)
{
    const char *env = getenv(var);
    int v;

    if (env == NULL || *env == '\0') return dflt;
    v = parse(env);
    if (v >= 0) return v;
    cli_say(TIDE_LOG_WARN, "tide: %s='%s' is not %s; using %s", var, env, words, dflt_name);
    return dflt;
}

/* The options before the verb. Returns 0 to go on, or 1 with *status set
 * (--help, --version, an error). */
static int global_options(int argc, char **argv, int *level, int *format, int *status)
{
    static const struct option opts[] = {
        { "help",       no_argument,       NULL, 'h' },
        { "version",    no_argument,       NULL, 'V' },
        { "log-level",  required_argument, NULL, 'l' },
        { "log-format", required_argument, NULL, 'f' },
        { NULL, 0, NULL, 0 },
    };
    int c;

    *status = CLI_USAGE;
    /* '+': stop at the verb, whose options are its own. */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
        if (c == 'h') {
            print_overview(stdout);
            *status = CLI_OK;
            return 1;
        }
        if (c == 'V') {
            printf("tide %s (NuDB format version 2; block sizes %u to %u)\n",
                   TIDE_VERSION, TIDE_BLOCK_SIZE_MIN, TIDE_BLOCK_SIZE_MAX);
            *status = CLI_OK;
            return 1;
        }
        if (c == 'l' && (*level = tide_log_level_parse(optarg)) >= 0) continue;
        if (c == 'f' && (*format = tide_log_format_parse(optarg)) >= 0) continue;
        if (c == 'f')
            cli_say(TIDE_LOG_ERROR, "tide: --log-format '%s' is not text or json\n"
                                    "Try 'tide --help'.", optarg);
        else if (c == 'l')
            cli_say(TIDE_LOG_ERROR, "tide: --log-level '%s' is not debug, info, warn, error or off\n"
                                    "Try 'tide --help'.", optarg);
        else if (optopt)
            cli_say(TIDE_LOG_ERROR, "tide: unknown option '-%c'\nTry 'tide --help'.", optopt);
        else
            cli_say(TIDE_LOG_ERROR, "tide: unknown option '%s'\nTry 'tide --help'.", argv[optind - 1]);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const cli_verb *v;
    char names[256];
    int level = -1, format = -1, status;

    if (global_options(argc, argv, &level, &format, &status)) return status;
    /* the variables after the options: one an option overrides is not
     * read, so a bad one there is no warning */
    if (level < 0)
        level = env_log_setting("TIDE_LOG_LEVEL", tide_log_level_parse, TIDE_LOG_WARN,
                                "debug, info, warn, error or off", "warn");
    if (format < 0)
        format = env_log_setting("TIDE_LOG_FORMAT", tide_log_format_parse, TIDE_LOG_FORMAT_TEXT, "text or json",
                                 "text");
    tide_log_set_level(level);
    tide_log_set_format(format);
    if (optind >= argc) {
        cli_say(TIDE_LOG_ERROR, "tide: no verb given\n"
                                "Usage: tide VERB [OPTIONS] ARGS   (verbs: %s)\n"
                                "Try 'tide --help'.", verb_names(names, sizeof names, " ", 1));
        return CLI_USAGE;
    }
    v = find_verb(argv[optind]);
    if (v == NULL) {
        cli_say(TIDE_LOG_ERROR, "tide: '%s' is not a verb (%s)\n"
                                "Try 'tide --help'.", argv[optind], verb_names(names, sizeof names, ", ", 1));
        return CLI_USAGE;
    }
    return v->run(argc - optind, argv + optind);
}
