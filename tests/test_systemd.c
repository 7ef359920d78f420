/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_systemd.c: the settings systemd hands tided
 * (node/config_systemd.c): $STATE_DIRECTORY as data_dir's default, the
 * token files (metrics_token_file, admin_token_file) and the credentials
 * under $CREDENTIALS_DIRECTORY: what is read, in which order, and every
 * file refused with its reason. tided's own sd_notify messages, a token
 * file at work on /metrics and the refusals' exit status are in
 * test_http_systemd.c; the unit file's check in tests/systemd-smoke.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expect.h"
#include "helpers.h"
#include "node/config.h"
#include "tide/error.h"
#include "util/err.h"
#include "util/log.h"

typedef struct fx {
    char dir[512];
    char creds[600];        /* dir/creds, made */
    char token[600];        /* dir/metrics.token, not made */
    char log[8192];         /* the warnings logged */
} fx;

static void capture(void *arg, int level, const char *line)
{
    fx *f = arg;
    size_t n = strlen(f->log);
    (void)level;
    snprintf(f->log + n, sizeof f->log - n, "%s\n", line);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    if (f == NULL || th_scratch_make(f->dir, sizeof f->dir) != 0) return -1;
    th_path(f->creds, sizeof f->creds, f->dir, "creds");
    th_path(f->token, sizeof f->token, f->dir, "metrics.token");
    if (mkdir(f->creds, 0700) != 0) return -1;
    tide_log_set_sink(capture, f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    tide_log_set_sink(NULL, NULL);
    th_teardown(state);             /* the scratch directory, whatever the outcome */
    free(f);
    return 0;
}

/* Write `text` to `path` with `mode` (chmod after, past the umask). */
static void put(const char *path, const char *text, mode_t mode)
{
    if (th_write_file(path, text, strlen(text)) != 0 || chmod(path, mode) != 0)
        fail_msg("writing %s: expected success, got an error", path);
}

/* Defaults, then the environment `env` (NULL-terminated NAME=VALUE). */
static void config_with(tide_config *c, const char *const *env)
{
    tide_config_defaults(c);
    expect_ok(tide_config_apply_env(c, th_fake_getenv, (void *)env), "the environment");
}

static void source_is(const tide_config *c, int id, const char *want, const char *what)
{
    char got[200];
    tide_config_source_text(c, id, got, sizeof got);
    expect_str(got, want, what);
}

/* ---- STATE_DIRECTORY --------------------------------------------------------- */

static void state_directory_is_the_default_data_dir_with_its_first_path(void **state)
{
    static tide_config c;
    (void)state;

    config_with(&c, NULL);
    expect_ok(tide_config_apply_state_dir(&c, "/var/lib/tide:/var/lib/other"), "two paths");
    expect_str(c.data_dir, "/var/lib/tide", "the first of STATE_DIRECTORY's paths");
    source_is(&c, TIDE_CFG_DATA_DIR, "STATE_DIRECTORY", "its source");

    config_with(&c, NULL);
    expect_ok(tide_config_apply_state_dir(&c, NULL), "unset");
    expect_ok(tide_config_apply_state_dir(&c, ""), "empty");
    expect_str(c.data_dir, "./data", "without STATE_DIRECTORY the default stays");

    config_with(&c, (const char *const[]){ "TIDE_DATA_DIR=/srv/tide", NULL });
    expect_ok(tide_config_apply_state_dir(&c, "/var/lib/tide"), "with TIDE_DATA_DIR");
    expect_str(c.data_dir, "/srv/tide", "the operator's data_dir wins over STATE_DIRECTORY");

    config_with(&c, NULL);
    expect_error(tide_config_apply_state_dir(&c, "relative/dir"), TIDE_EINVAL, "a relative path");
    expect_contains(tide_last_error(), "STATE_DIRECTORY=relative/dir: not an absolute path", "the message");
    expect_str(c.data_dir, "./data", "a refused STATE_DIRECTORY changes nothing");
}

/* ---- token files ---------------------------------------------------------------- */

static void a_private_token_file_is_read_without_its_trailing_newline(void **state)
{
    fx *f = *state;
    static tide_config c;
    char env[700];

    put(f->token, "s3cret-Token_1\n", 0600);
    snprintf(env, sizeof env, "TIDE_METRICS_TOKEN_FILE=%s", f->token);
    config_with(&c, (const char *const[]){ env, NULL });
    expect_ok(tide_config_load_tokens(&c, NULL), "a 0600 token file");
    expect_str(c.metrics_token, "s3cret-Token_1", "the token, one newline dropped");
    source_is(&c, TIDE_CFG_METRICS_TOKEN, "env TIDE_METRICS_TOKEN_FILE", "the token's source");
    expect_str(c.admin_token, "", "the admin token is untouched");

    put(f->token, "group-readable", 0640);    /* root:tide 0640 is how a package may ship it */
    config_with(&c, (const char *const[]){ env, NULL });
    expect_ok(tide_config_load_tokens(&c, NULL), "a 0640 token file");
    expect_str(c.metrics_token, "group-readable", "the token without a newline");
}

/* The refusal for `text` in a file of `mode`, whose message holds `part`
 * (and never the token's text). */
static void refused(fx *f, const char *text, mode_t mode, const char *part, const char *what)
{
    static tide_config c;
    char env[700];

    if (text) put(f->token, text, mode);
    else unlink(f->token);
    snprintf(env, sizeof env, "TIDE_METRICS_TOKEN_FILE=%s", f->token);
    config_with(&c, (const char *const[]){ env, NULL });
    expect_error(tide_config_load_tokens(&c, NULL), TIDE_EINVAL, what);
    expect_contains(tide_last_error(), f->token, what);
    expect_contains(tide_last_error(), "metrics_token_file", what);
    expect_contains(tide_last_error(), part, what);
    if (text && strlen(text) > 4 && strstr(tide_last_error(), text) != NULL)
        fail_msg("%s: the message must not show the token; got: %s", what, tide_last_error());
    expect_str(c.metrics_token, "", "a refused file sets no token");
}

static void a_token_file_others_can_read_or_change_is_refused_with_its_mode_and_the_fix(void **state)
{
    fx *f = *state;
    char fix[700];

    snprintf(fix, sizeof fix, "chmod 600 %s", f->token);
    refused(f, "world-readable", 0644, "mode 0644 lets every user read the token", "0644");
    expect_contains(tide_last_error(), fix, "the fix");
    refused(f, "world-readable", 0604, "mode 0604", "0604");
    refused(f, "group-writable", 0620, "mode 0620 lets its group change the token", "0620");
    expect_contains(tide_last_error(), fix, "the fix for a group-writable file");
    refused(f, "other-writable", 0602, "lets every user change", "0602");
}

static void missing_empty_oversized_and_unheaderable_token_files_are_refused(void **state)
{
    fx *f = *state;
    char big[300];

    refused(f, NULL, 0, "cannot open it: No such file or directory", "a missing file");
    refused(f, "", 0600, "empty", "an empty file");
    refused(f, "\n", 0600, "empty", "a file of one newline");
    memset(big, 'a', 256);
    big[256] = '\0';
    refused(f, big, 0600, "longer than a token may be (255 bytes", "256 bytes");
    refused(f, "abc\n\n", 0600, "byte 4 is a second line", "two trailing newlines");
    refused(f, "two words", 0600, "byte 4 is a space", "a space");
    refused(f, "dos-line\r\n", 0600, "byte 9 is a carriage return", "a CRLF line end");
    refused(f, "line1\nline2", 0600, "byte 6 is a second line", "two lines");
    refused(f, "caf\xc3\xa9-token", 0600, "byte 4 is not ASCII", "UTF-8");
    memset(big, 'b', 255);
    big[255] = '\0';
    {
        static tide_config c;
        char env[700];
        put(f->token, big, 0600);
        snprintf(env, sizeof env, "TIDE_METRICS_TOKEN_FILE=%s", f->token);
        config_with(&c, (const char *const[]){ env, NULL });
        expect_ok(tide_config_load_tokens(&c, NULL), "255 bytes, the longest token");
        expect_u64(strlen(c.metrics_token), 255, "its length");
    }
    {
        static tide_config c;
        char env[700];
        snprintf(env, sizeof env, "TIDE_METRICS_TOKEN_FILE=%s", f->dir);
        config_with(&c, (const char *const[]){ env, NULL });
        expect_error(tide_config_load_tokens(&c, NULL), TIDE_EINVAL, "a directory");
        expect_contains(tide_last_error(), "not a regular file", "a directory's message");
    }
}

/* A FIFO named as a token file: the open must not wait for a writer
 * (it once did, hanging start, --check-config and SIGHUP's loop 0); an
 * alarm turns a hang into a failure. */
static void a_fifo_token_file_is_refused_without_blocking(void **state)
{
    fx *f = *state;
    static tide_config c;
    char fifo[700], env[760];

    th_path(fifo, sizeof fifo, f->dir, "fifo");
    if (mkfifo(fifo, 0600) != 0) fail_msg("mkfifo %s failed", fifo);
    snprintf(env, sizeof env, "TIDE_ADMIN_TOKEN_FILE=%s", fifo);
    config_with(&c, (const char *const[]){ env, NULL });
    alarm(10);                      /* SIGALRM kills the test if the open blocks */
    expect_error(tide_config_load_tokens(&c, NULL), TIDE_EINVAL, "a FIFO token file");
    alarm(0);
    expect_contains(tide_last_error(), "not a regular file", "a FIFO's message");
    expect_contains(tide_last_error(), fifo, "names the FIFO");
    expect_str(c.admin_token, "", "a FIFO sets no token");
}

/* A 0600 file of another user: that user could rewrite the token. Root
 * only (chown); tided's own user's file and root's are accepted. */
static void a_token_file_owned_by_another_user_is_refused(void **state)
{
    fx *f = *state;
    static tide_config c;
    char env[700];

    if (geteuid() != 0) {
        fprintf(stderr, "# skipped: the owner check needs root to chown the file to another user\n");
        skip();
    }
    put(f->token, "owned-by-nobody", 0600);
    if (chown(f->token, 65534, 65534) != 0) fail_msg("chown %s to 65534 failed", f->token);
    snprintf(env, sizeof env, "TIDE_METRICS_TOKEN_FILE=%s", f->token);
    config_with(&c, (const char *const[]){ env, NULL });
    expect_error(tide_config_load_tokens(&c, NULL), TIDE_EINVAL, "a token file owned by uid 65534");
    expect_contains(tide_last_error(), "owned by uid 65534", "the owner");
    expect_contains(tide_last_error(), "chown root", "the fix");
    /* As root (the unit's pre-start check), only root's files pass: the
     * message must not offer "tided's user (uid 0)" as a way out. */
    expect_contains(tide_last_error(), "not by root", "what root accepts");
    if (strstr(tide_last_error(), "tided's user") != NULL)
        fail_msg("as root the message should not offer tided's user: %s", tide_last_error());
    expect_contains(tide_last_error(), f->token, "the file");
    expect_str(c.metrics_token, "", "a refused file sets no token");
    if (chown(f->token, 0, 0) != 0) fail_msg("chown %s back to root failed", f->token);
    config_with(&c, (const char *const[]){ env, NULL });
    expect_ok(tide_config_load_tokens(&c, NULL), "the same file owned by root");
    expect_str(c.metrics_token, "owned-by-nobody", "its token");
}

/* The metrics token as docs/OPERATIONS.md installs it for Prometheus:
 * root's, readable by Prometheus' group (0640). Root only (chgrp to a
 * group root is not in); the unit's pre-start check runs as root and
 * must pass it. */
static void a_root_token_file_its_group_may_read_passes_as_prometheus_reads_it(void **state)
{
    fx *f = *state;
    static tide_config c;
    char env[700];

    if (geteuid() != 0) {
        fprintf(stderr, "# skipped: giving the file to another group needs root\n");
        skip();
    }
    put(f->token, "scraped-by-prometheus", 0640);
    if (chown(f->token, 0, 65534) != 0) fail_msg("chown %s to root:65534 failed", f->token);
    snprintf(env, sizeof env, "TIDE_METRICS_TOKEN_FILE=-%s", f->token);
    config_with(&c, (const char *const[]){ env, NULL });
    expect_ok(tide_config_load_tokens(&c, NULL), "a root:65534 0640 token file, as the pre-start check reads it");
    expect_str(c.metrics_token, "scraped-by-prometheus", "its token");
    if (chmod(f->token, 0660) != 0) fail_msg("chmod 660 %s failed", f->token);
    config_with(&c, (const char *const[]){ env, NULL });
    expect_error(tide_config_load_tokens(&c, NULL), TIDE_EINVAL, "the same file writable by its group");
    expect_contains(tide_last_error(), "lets its group change the token", "why");
}

/* "-FILE": a missing FILE is no token (the unit's pre-start check of its
 * credentials' sources); a FILE that exists is held to every rule. */
static void a_dash_before_the_token_file_makes_a_missing_file_no_token(void **state)
{
    fx *f = *state;
    static tide_config c;
    char env[700];

    unlink(f->token);
    snprintf(env, sizeof env, "TIDE_METRICS_TOKEN_FILE=-%s", f->token);
    config_with(&c, (const char *const[]){ env, NULL });
    expect_ok(tide_config_load_tokens(&c, f->creds), "-FILE with FILE missing");
    expect_str(c.metrics_token, "", "no token");
    source_is(&c, TIDE_CFG_METRICS_TOKEN, "default", "and no source");
    put(f->token, "dash-token\n", 0600);
    config_with(&c, (const char *const[]){ env, NULL });
    expect_ok(tide_config_load_tokens(&c, NULL), "-FILE with a private FILE");
    expect_str(c.metrics_token, "dash-token", "its token");
    put(f->token, "dash-token\n", 0644);
    config_with(&c, (const char *const[]){ env, NULL });
    expect_error(tide_config_load_tokens(&c, NULL), TIDE_EINVAL, "-FILE with a 0644 FILE");
    expect_contains(tide_last_error(), "mode 0644", "the mode");
    expect_contains(tide_last_error(), f->token, "the file, without the dash");
}

static void the_token_variable_beats_the_file_which_beats_the_credential(void **state)
{
    fx *f = *state;
    static tide_config c;
    char env[700], cred[700], admin[700];

    put(f->token, "from-file", 0600);
    th_path(cred, sizeof cred, f->creds, "metrics_token");
    put(cred, "from-credential\n", 0400);
    th_path(admin, sizeof admin, f->creds, "admin_token");
    put(admin, "admin-credential", 0400);
    snprintf(env, sizeof env, "TIDE_METRICS_TOKEN_FILE=%s", f->token);

    config_with(&c, (const char *const[]){ "TIDE_METRICS_TOKEN=from-env", env, NULL });
    expect_ok(tide_config_load_tokens(&c, f->creds), "variable, file and credential");
    expect_str(c.metrics_token, "from-env", "TIDE_METRICS_TOKEN wins");
    expect_contains(f->log, "TIDE_METRICS_TOKEN is set, so metrics_token_file", "the warning that the file is moot");
    expect_str(c.admin_token, "admin-credential", "the admin credential, nothing else given");
    source_is(&c, TIDE_CFG_ADMIN_TOKEN, "credential admin_token", "the credential's source");

    config_with(&c, (const char *const[]){ env, NULL });
    expect_ok(tide_config_load_tokens(&c, f->creds), "file and credential");
    expect_str(c.metrics_token, "from-file", "the file beats the credential");

    config_with(&c, NULL);
    expect_ok(tide_config_load_tokens(&c, f->creds), "the credential alone");
    expect_str(c.metrics_token, "from-credential", "the credential, its newline dropped");
    source_is(&c, TIDE_CFG_METRICS_TOKEN, "credential metrics_token", "its source");
}

static void a_missing_or_empty_credential_means_no_token_but_a_bad_one_is_refused(void **state)
{
    fx *f = *state;
    static tide_config c;
    char cred[700];

    config_with(&c, NULL);
    expect_ok(tide_config_load_tokens(&c, f->creds), "no credential files");
    expect_str(c.metrics_token, "", "no metrics token");
    source_is(&c, TIDE_CFG_METRICS_TOKEN, "default", "still the default");

    th_path(cred, sizeof cred, f->creds, "metrics_token");
    put(cred, "\n", 0400);                 /* the unit's SetCredential=metrics_token:\n */
    config_with(&c, NULL);
    expect_ok(tide_config_load_tokens(&c, f->creds), "the unit's empty fallback credential");
    expect_str(c.metrics_token, "", "an empty credential is no token");
    source_is(&c, TIDE_CFG_METRICS_TOKEN, "default", "and sets no source");

    put(cred, "readable", 0444);
    config_with(&c, NULL);
    expect_error(tide_config_load_tokens(&c, f->creds), TIDE_EINVAL, "a credential others can read");
    expect_contains(tide_last_error(), "credential ", "the message names the credential");
    expect_contains(tide_last_error(), "mode 0444", "and its mode");

    put(cred, "bad token", 0400);
    config_with(&c, NULL);
    expect_error(tide_config_load_tokens(&c, f->creds), TIDE_EINVAL, "a credential with a space");
    expect_contains(tide_last_error(), "byte 4 is a space", "the reason");
}

static void the_token_files_are_http_keys_of_the_config_file_and_have_help(void **state)
{
    fx *f = *state;
    static tide_config c;
    char cfg[700], text[1400], entry[4096];

    put(f->token, "file-key-token", 0600);
    th_path(cfg, sizeof cfg, f->dir, "tide.cfg");
    snprintf(text, sizeof text, "[http]\nadmin_token_file = %s\n", f->token);
    put(cfg, text, 0644);
    tide_config_defaults(&c);
    expect_ok(tide_config_load_file(&c, cfg), "[http] admin_token_file");
    expect_ok(tide_config_load_tokens(&c, NULL), "reading it");
    expect_str(c.admin_token, "file-key-token", "the admin token from the file key");
    expect_contains(c.src[TIDE_CFG_ADMIN_TOKEN].where, "tide.cfg:2", "its source names the line");

    put(cfg, "[http]\nadmin_token = nope\n", 0644);
    tide_config_defaults(&c);
    expect_error(tide_config_load_file(&c, cfg), TIDE_EINVAL, "a token itself in the file");
    expect_contains(tide_last_error(), "unknown key in [http]", "the message");

    tide_config_help(TIDE_CFG_METRICS_TOKEN_FILE, entry, sizeof entry);
    expect_contains(entry, "    TIDE_METRICS_TOKEN_FILE=FILE\n", "the heading");
    expect_contains(entry, "file [http] metrics_token_file.", "the file key");
    expect_contains(entry, "Precedence, highest first: TIDE_METRICS_TOKEN", "the precedence");
    expect_contains(entry, "CREDENTIALS_DIRECTORY", "the credential");
    if (tide_config_flag(TIDE_CFG_METRICS_TOKEN_FILE) != NULL || tide_config_flag(TIDE_CFG_ADMIN_TOKEN_FILE) != NULL)
        fail_msg("the token files must have no flag");
    tide_config_help(TIDE_CFG_DATA_DIR, entry, sizeof entry);
    expect_contains(entry, "STATE_DIRECTORY", "data_dir's help names STATE_DIRECTORY");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(state_directory_is_the_default_data_dir_with_its_first_path),
        cmocka_unit_test_setup_teardown(a_private_token_file_is_read_without_its_trailing_newline, setup, teardown),
        cmocka_unit_test_setup_teardown(a_token_file_others_can_read_or_change_is_refused_with_its_mode_and_the_fix,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(missing_empty_oversized_and_unheaderable_token_files_are_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_fifo_token_file_is_refused_without_blocking, setup, teardown),
        cmocka_unit_test_setup_teardown(a_token_file_owned_by_another_user_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(a_root_token_file_its_group_may_read_passes_as_prometheus_reads_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_dash_before_the_token_file_makes_a_missing_file_no_token, setup, teardown),
        cmocka_unit_test_setup_teardown(the_token_variable_beats_the_file_which_beats_the_credential, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_missing_or_empty_credential_means_no_token_but_a_bad_one_is_refused,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(the_token_files_are_http_keys_of_the_config_file_and_have_help, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("systemd", tests, NULL, NULL);
}
