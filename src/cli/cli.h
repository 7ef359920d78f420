/*
 * cli.h: what the parts of bin/tide share.
 *
 * tide.c owns main, the verb table and the help texts; cmd_store.c and
 * bench_store.c implement verbs. A verb is `int verb(int argc, char **argv)`
 * where argv[0] is the verb's name, and it returns the process's exit
 * status (CLI_OK, CLI_FAIL, CLI_USAGE). Verbs print their own errors, in
 * one form: "tide VERB: <what went wrong>" on stderr.
 */
#ifndef TIDE_CLI_H
#define TIDE_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tide/version.h"          /* TIDE_VERSION, for --version */

/* Exit statuses. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Verbs. */
int cli_cmd_create(int argc, char **argv);
int cli_cmd_info(int argc, char **argv);
int cli_cmd_put(int argc, char **argv);
int cli_cmd_get(int argc, char **argv);
int cli_cmd_visit(int argc, char **argv);
int cli_cmd_verify(int argc, char **argv);
int cli_cmd_recover(int argc, char **argv);
int cli_cmd_rekey(int argc, char **argv);
int cli_cmd_bench(int argc, char **argv);
int cli_cmd_doctor(int argc, char **argv);
int cli_cmd_ghost(int argc, char **argv);
int cli_cmd_lab(int argc, char **argv);

/* Print the full help of `verb` ("bench" for "bench store") to `f`.
 * Returns 0, or -1 when there is no such verb. */
int cli_help(const char *verb, FILE *f);

/* "tide VERB: <tide_strerror(rc)>: <tide_last_error()>" (the last part
 * omitted when empty). Returns CLI_FAIL, or CLI_USAGE for TIDE_EINVAL and
 * TIDE_EKEYSIZE. */
int cli_fail(const char *verb, int rc);

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

#endif
