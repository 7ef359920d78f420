/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli.c: what every verb of bin/tide shares: the prologue that parses a
 * verb's command line from its descriptor, the three forms of error
 * message, and the number parsers.
 *
 * cli_parse runs getopt_long over the verb's option table with --help
 * added, hands each option to the verb's handler, then checks the
 * positional arguments in the verb's shape (none, PATH, PATH KEYHEX,
 * KEYHEX) and, for a store verb, that PATH is a directory. The key is decoded before the
 * directory is looked at, so a bad key is a usage error (status 2) even
 * for a missing store.
 *
 * Invariants:
 *   1. Every usage error ends with "Try 'tide help VERB'." and status 2.
 *   2. Nothing here opens a store: a verb's status 2 means nothing was read
 *      or written.
 *
 * Never: print to stdout, except the manual asked for with --help.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tide/error.h"
#include "util/assert.h"
#include "util/err.h"
#include "util/hex.h"
#include "util/log.h"

#define OPTIONS_MAX 32              /* a verb's options, --help and the end included */

/* ---- messages ---- */

void cli_say(int level, const char *fmt, ...)
{
    char text[4096];
    const char *prefix = tide_log_prefix(level), *p = text;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    for (;;) {      /* line by line: the journal files each line on its own */
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);

        fprintf(stderr, "%s%.*s\n", prefix, len, p);
        if (nl == NULL || nl[1] == '\0') break;
        p = nl + 1;
    }
}

int cli_fail(const char *verb, int rc)
{
    const char *detail = tide_last_error();
    if (detail && *detail)
        cli_say(TIDE_LOG_ERROR, "tide %s: %s: %s", verb, tide_strerror(rc), detail);
    else
        cli_say(TIDE_LOG_ERROR, "tide %s: %s", verb, tide_strerror(rc));
    return (rc == TIDE_EINVAL || rc == TIDE_EKEYSIZE) ? CLI_USAGE : CLI_FAIL;
}

int cli_fail_store(const char *verb, int rc)
{
    cli_fail(verb, rc);
    return CLI_FAIL;
}

/* "tide VERB: MESSAGE" and, with `hint`, "Try 'tide help VERB'.". */
static void say(const char *verb, int hint, const char *fmt, va_list ap)
{
    char msg[3072];

    vsnprintf(msg, sizeof msg, fmt, ap);
    if (hint) cli_say(TIDE_LOG_ERROR, "tide %s: %s\nTry 'tide help %s'.", verb, msg, verb);
    else cli_say(TIDE_LOG_ERROR, "tide %s: %s", verb, msg);
}

int cli_usage(const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(verb, 1, fmt, ap);
    va_end(ap);
    return CLI_USAGE;
}

int cli_error(const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(verb, 0, fmt, ap);
    va_end(ap);
    return CLI_FAIL;
}

/* ---- numbers and output ---- */

int cli_parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
    const char *digits;
    char *end;
    unsigned long long v;
    int base = 10;

    if (text == NULL) return -1;
    while (*text == ' ' || *text == '\t') text++;
    digits = text;
    /* Decimal, or hex after 0x; never octal (a leading 0 is just a 0). */
    if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        digits = text + 2;
        base = 16;
    }
    if (!isxdigit((unsigned char)*digits) || (base == 10 && !isdigit((unsigned char)*digits)))
        return -1;                          /* no sign, no empty */
    errno = 0;
    v = strtoull(digits, &end, base);
    if (errno || end == digits) return -1;
    while (*end == ' ' || *end == '\t') end++;
    if (*end != '\0') return -1;
    if (v < min || v > max) return -1;
    *out = v;
    return 0;
}

int cli_parse_double(const char *text, double *out)
{
    char *end;
    double v;

    if (text == NULL || *text == '\0') return -1;
    errno = 0;
    v = strtod(text, &end);
    if (errno || end == text || *end != '\0' || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

int cli_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* ---- the options ---- */

void cli_getopt_reset(void)
{
    optind = 0;     /* glibc: 0 re-initialises the parser completely */
    opterr = 0;     /* verbs print their own messages */
}

int cli_option_error(const char *verb, int c, char **argv)
{
    const char *arg = argv[optind - 1];

    if (c == ':') {
        if (optopt && strncmp(arg, "--", 2) != 0)
            return cli_usage(verb, "option '-%c' needs a value", optopt);
        return cli_usage(verb, "option '%s' needs a value", arg);
    }
    if (optopt && strncmp(arg, "--", 2) != 0)
        return cli_usage(verb, "unknown option '-%c'", optopt);
    return cli_usage(verb, "unknown option '%s'", arg);
}

int cli_check_store_dir(const char *verb, const char *path)
{
    struct stat st;

    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            return cli_error(verb, "%s: no such directory", path);
        return cli_error(verb, "%s: %s", path, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        return cli_error(verb, "%s: not a directory (give the store's directory, "
                               "the one that holds nudb.dat and nudb.key)", path);
    return CLI_OK;
}

/* The options of `v` and --help, last, as getopt_long wants them. */
static void options_with_help(const cli_verb *v, struct option *out)
{
    size_t n = 0;

    while (v->options[n].name && n < OPTIONS_MAX - 2) {
        out[n] = v->options[n];
        n++;
    }
    TIDE_ASSERT(v->options[n].name == NULL);    /* a longer table would lose its last options */
    out[n++] = (struct option){ "help", no_argument, NULL, 'h' };
    out[n] = (struct option){ NULL, 0, NULL, 0 };
}

int cli_option_flag(void *opts, int id, const char *arg)
{
    (void)id;
    (void)arg;
    *(int *)opts = 1;
    return CLI_OK;
}

/* Decode KEYHEX into a->key. CLI_OK, or CLI_USAGE (printed) when it is
 * empty or not hex. */
static int decode_key(const char *verb, cli_args *a)
{
    const char *hex = a->key_hex;
    int rc;

    if (hex[0] == '\0')
        return cli_usage(verb, "the key is empty; give it in hex, 2 digits per byte");
    rc = tide_hex_decode(hex, a->key, CLI_KEY_MAX, &a->key_len);
    if (rc) {
        tide_err_prefix(rc, "key '%.80s%s'", hex, strlen(hex) > 80 ? "..." : "");
        cli_fail(verb, rc);
        cli_say(TIDE_LOG_ERROR, "Try 'tide help %s'.", verb);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* The positional arguments argv[first..argc) in v's shape. */
static int take_args(const cli_verb *v, int argc, char **argv, int first, cli_args *a)
{
    int n = argc - first;
    int rc;

    if (v->args == CLI_ARGS_NONE) {
        if (n > 0) return cli_usage(v->name, "unexpected argument '%s'", argv[first]);
        return CLI_OK;
    }
    if (v->args == CLI_ARGS_KEY) {
        if (n != 1)
            return cli_usage(v->name, "expected %s, got %d argument%s", v->args_text, n,
                             n == 1 ? "" : "s");
        a->key_hex = argv[first];
        return decode_key(v->name, a);
    }
    if (v->args == CLI_ARGS_PATH) {
        if (n < 1) return cli_usage(v->name, "no PATH given");
        if (n > 1) return cli_usage(v->name, "one PATH only (got '%s' too)", argv[first + 1]);
        a->path = argv[first];
    } else {
        if (n != 2)
            return cli_usage(v->name, "expected %s, got %d argument%s", v->args_text, n,
                             n == 1 ? "" : "s");
        a->path = argv[first];
        a->key_hex = argv[first + 1];
        rc = decode_key(v->name, a);
        if (rc) return rc;
    }
    return v->store ? cli_check_store_dir(v->name, a->path) : CLI_OK;
}

void cli_verb_help(const cli_verb *v, FILE *f)
{
    fputs(v->help, f);
    if (v->help_table) v->help_table(f);
    if (v->help_after) fputs(v->help_after, f);
}

int cli_parse(const cli_verb *v, int argc, char **argv, void *opts, cli_args *a, int *status)
{
    struct option table[OPTIONS_MAX];
    char shorts[32];
    int c, rc;

    options_with_help(v, table);
    snprintf(shorts, sizeof shorts, ":h%s", v->short_options ? v->short_options : "");
    a->path = a->key_hex = NULL;
    a->key_len = 0;
    cli_getopt_reset();
    while ((c = getopt_long(argc, argv, shorts, table, NULL)) != -1) {
        if (c == 'h') {
            cli_verb_help(v, stdout);
            *status = CLI_OK;
            return 1;
        }
        rc = (c == '?' || c == ':') ? cli_option_error(v->name, c, argv)
                                    : v->option(opts, c, optarg);
        if (rc) {
            *status = rc;
            return 1;
        }
    }
    rc = take_args(v, argc, argv, optind, a);
    *status = rc;
    return rc != CLI_OK;
}
