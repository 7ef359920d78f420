/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tided.c: main of bin/tided, the Tide node server.
 *
 * `tided --check-config` stops after the settings: it prints them and
 * exits 0, or 2 when they do not pass, and touches nothing else
 * (check_config).
 *
 * tided serves one store over HTTP/1.1 (docs/HTTP.md). Its main does, in
 * order: --help and --version; the settings (defaults, --config FILE,
 * TIDE_* variables, flags, then the preset: node/config.h) and a data_dir
 * that is a directory or whose parent is (settle_settings); the signals
 * (SIGTERM, SIGINT, SIGQUIT and SIGHUP blocked in every thread and read
 * from a signalfd, SIGPIPE ignored), all before any thread exists; the
 * allocator options, the startup log and the node's options
 * (node/startup.h); the listening socket, bound before the store is
 * touched so that a tided that cannot serve creates no store; the node
 * (creating the store on first run), opened on a thread while the main
 * thread watches the signalfd, so that a stop signal ends a long open;
 * the workers and the event loops (loop.c, conn.c, work.c, api.c), loop 0
 * reading the signals from then on. SIGHUP reads the settings again
 * (reload_settings). Under systemd it sends sd_notify's messages
 * (notify.c) and takes STATE_DIRECTORY and CREDENTIALS_DIRECTORY as
 * defaults (read_settings; node/config_systemd.c). When the loops have drained after a stop signal it
 * stops the workers, closes the node, which commits what is pending, and
 * logs "shutdown complete".
 *
 * Exit status: 0 after a clean stop, or a stop signal during the store's
 * open; 1 when the store cannot be opened (busy, corrupt, I/O), the
 * address cannot be bound, or the final commit fails; 2 for a bad command
 * line or setting, with a message naming it.
 *
 * Invariants:
 *   1. No thread starts before the signal mask is set and mallopt ran:
 *      every thread inherits the mask, and mallopt must come first (the
 *      open thread included).
 *   2. The node is closed only after every loop and worker has stopped,
 *      so no request can reach a closed node.
 *
 * Never: print a token (the startup log shows only "set"/"unset"); exit
 * with the node open after its open returned (the stop during the open
 * exits before, as a crash would, with nothing acknowledged).
 */
#include "server/server.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <h2o/version.h>

#include "mem/alloc.h"
#include "node/startup.h"
#include "tide/error.h"
#include "tide/version.h"
#include "util/clock.h"
#include "util/log.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* Reachable for the whole run, so that what the loops leave behind at exit
 * (idle connections, answers nobody waits for) is not a leak. */
static tided_server server;

/* ---- help ------------------------------------------------------------ */

/* Every setting's entry (config.c's settings table holds its text, range
 * and default): those with a flag under OPTIONS, the env-only ones under
 * ENVIRONMENT. */
static void print_settings(FILE *f, int with_flag)
{
    char entry[4096];

    for (int id = 0; id < TIDE_CFG_COUNT; id++) {
        if ((tide_config_flag(id) != NULL) != with_flag) continue;
        tide_config_help(id, entry, sizeof entry);
        fputs(entry, f);
    }
}

/* NAME to OPTIONS: the settings with a flag from config.c's table. */
static void help_options(FILE *f)
{
    fputs(
"NAME\n"
"    tided - the Tide node server: a NuDB-format key/value store over HTTP\n"
"\n"
"SYNOPSIS\n"
"    tided [--config FILE] [--data-dir DIR] [--listen HOST:PORT]\n"
"          [--node-size SIZE] [--sweep-interval SECONDS] [--log-level LEVEL]\n"
"          [--SETTING VALUE | --SETTING=VALUE ...]\n"
"    tided --check-config [--config FILE] [--SETTING VALUE ...]\n"
"    tided --help | --version\n"
"\n"
"DESCRIPTION\n"
"    tided opens the store in DIR (creating an empty one on first run) and\n"
"    serves it over HTTP/1.1: PUT stores a value under a fixed-size key given\n"
"    in hex, GET and HEAD read it back. A key is written once. A PUT is\n"
"    visible at once and durable after the next commit (about a second);\n"
"    PUT ?sync=1 answers only once it is durable. Recent objects stay in the\n"
"    node cache; a sweep every sweep_interval seconds lets unused ones go\n"
"    and then returns freed heap memory to the kernel (one malloc_trim).\n"
"\n"
"    Settings come, highest first, from flags, TIDE_* environment\n"
"    variables, the config file, and the node_size preset. The startup log\n"
"    prints every setting with where it came from, the allocator and its\n"
"    options, the store's block size, and a warning for each unbounded\n"
"    consumer. A flag's value may follow it (--listen 127.0.0.1:9000) or an\n"
"    '=' (--listen=127.0.0.1:9000).\n"
"\n"
"    Sizes (SIZE) are a whole number of bytes, or one with a unit: B, K/KiB,\n"
"    M/MiB, G/GiB, T/TiB, P/PiB (powers of 1024) or KB, MB, GB, TB, PB\n"
"    (powers of 1000), in any case: 4096, 512MB, 1GiB. A space may come\n"
"    between the number and its unit (512 KiB, as the log writes sizes;\n"
"    quote it in a flag: --cache-budget '512 KiB'); a space or separator\n"
"    inside the number (1 000) and a fraction (1.5GiB: write 1536MiB) are\n"
"    refused, naming the setting and showing the accepted forms.\n"
"\n"
"OPTIONS\n"
"    --config FILE\n"
"        read settings from FILE (INI: [node] name=value, [node_size],\n"
"        [node_db] path= and nudb_block_size=, [sweep_interval]). Other\n"
"        sections (a rippled.cfg's [server], [ips], ...) are skipped with one\n"
"        info line each; '#' starts a comment anywhere. rippled's [node_db]\n"
"        online_delete (ledgers) and delete_batch (SQL records) are never read\n"
"        as Tide's online_delete and delete_batch, whose file keys carry their\n"
"        units: online_delete_objects, delete_batch_keys. FILE must be a\n"
"        regular file (a symlink to one is fine) of at most 1 MiB: a FIFO, a\n"
"        device or a directory is refused without waiting on it or reading\n"
"        it, naming FILE. SIGHUP reads it again; a refused file changes\n"
"        nothing.\n"
"        A commented sample with every setting is installed as\n"
"        /etc/tide/tide.cfg (contrib/tide.cfg in the sources).\n"
"    --check-config\n"
"        check the settings and exit, as nginx -t does: read them as a start\n"
"        would (the defaults, --config FILE, the TIDE_* variables, the other\n"
"        flags, the cgroup's memory limit), check every value and the rules\n"
"        that join them (the budgets derived from memory_limit and the\n"
"        explicit ones under its high mark, http_body_budget against\n"
"        max_object_size, memory_levels against memory_hysteresis) and that\n"
"        data_dir is a directory or can be made as one (its parent directory\n"
"        exists: tided makes the data directory, never its parents), then\n"
"        print every setting in force on stdout, one a line under a\n"
"        '# GROUP' line, as NAME=VALUE(SOURCE) (the tokens as set or unset),\n"
"        and a last line starting 'tided --check-config: OK'; warnings go to\n"
"        stderr (the start's too: an address beyond loopback, RLIMIT_NOFILE\n"
"        lowering http_max_connections). Exit 0, or 2 with the errors on\n"
"        stderr, or 1 when stdout could not be written. It never opens or\n"
"        creates the store, binds the address or starts a thread, so it may\n"
"        run next to the tided it checks for.\n", f);
    print_settings(f, 1);
    fputs(
"    -h, --help\n"
"        print this text and exit.\n"
"    -V, --version\n"
"        print the version and exit.\n"
"\n", f);
}

/* ENVIRONMENT: the env-only settings from config.c's table, and the
 * variables of the allocator and of systemd. */
static void help_environment(FILE *f)
{
    fputs(
"ENVIRONMENT\n"
"    Every option above has a TIDE_* variable, named with it. A variable\n"
"    that is set but empty (TIDE_MEMORY_LIMIT=, or only blanks) is an error\n"
"    naming it, not the default: it is mostly a script's variable that\n"
"    expanded to nothing, and taking it for unset would drop the setting\n"
"    without a word. Unset it for the default (unset TIDE_MEMORY_LIMIT;\n"
"    under systemd UnsetEnvironment=TIDE_MEMORY_LIMIT). The tokens are\n"
"    never flags (visible in ps) and never printed; each is read, highest\n"
"    first, from its variable, from its token file (a path: the variable\n"
"    or the config file's [http] key), or from systemd's credential:\n", f);
    print_settings(f, 0);
    fputs(
"    MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_, MALLOC_CONF\n"
"        the allocator's own variables; the startup log shows their effect.\n"
"    STATE_DIRECTORY\n"
"        set by systemd's StateDirectory=: its first path (of several joined\n"
"        by ':') is data_dir's default; the startup log names it as\n"
"        data_dir's source. A data_dir set anywhere wins.\n"
"    CREDENTIALS_DIRECTORY\n"
"        set by systemd's LoadCredential=: the files metrics_token and\n"
"        admin_token in it are read as the tokens when nothing above sets\n"
"        them, by the token files' rules; a missing or empty one is no\n"
"        token.\n"
"    NOTIFY_SOCKET, WATCHDOG_USEC, WATCHDOG_PID\n"
"        set by systemd for a Type=notify unit (sd_notify(3)): tided sends\n"
"        READY=1 once it serves, RELOADING=1 and READY=1 around a SIGHUP,\n"
"        STOPPING=1 at a stop signal, EXTEND_TIMEOUT_USEC while the store\n"
"        opens or the final commit runs, and, with WatchdogSec=, WATCHDOG=1\n"
"        every half interval while every event loop turns (a loop stuck in\n"
"        a request stops them; a stuck worker thread does not). Unset:\n"
"        nothing is sent. The unit: contrib/systemd/tided.service.\n"
"\n", f);
}

/* ENDPOINTS and LIMITS. */
static void help_endpoints(FILE *f)
{
    fputs(
"ENDPOINTS\n"
"    PUT  /v1/objects/KEYHEX[?sync=1]  body = the value (1 byte to\n"
"         max_object_size). 201 stored; 409 the key exists; 400 bad key or\n"
"         empty body; 413 body too large; 507 disk full; 503 store closed\n"
"         or failed, or overloaded (the memory level, with Retry-After: 1);\n"
"         500 other errors. With sync=1 the answer (201 or 409)\n"
"         comes after the commit that makes the value durable.\n"
"    GET  /v1/objects/KEYHEX           200 with the value\n"
"         (application/octet-stream); 404 absent; 400 bad key.\n"
"    HEAD /v1/objects/KEYHEX           as GET, headers only.\n"
"    GET  /healthz                     200 \"ok\".\n"
"    GET  /v1/status                   JSON: version, uptime, store, caches,\n"
"         memory by consumer with RSS, sweeps and the last trim, HTTP,\n"
"         and memory_limit (the limit, its source, the level, the marks,\n"
"         what counts, the actions and the level changes); archive (null\n"
"         when off): where it is, whether RADOS answers, the lag, and each\n"
"         local generation's state there.\n"
"    GET  /v1/sweeps                   JSON: the last 64 sweep rounds.\n"
"    POST /v1/admin/sweep              sweep and trim now; returns the report.\n"
"         401 without the admin token, 403 when none is configured.\n"
"    POST /v1/admin/rotate             online delete: copy the body's keys\n"
"         forward (hex lines, text/plain; or raw keys, application/\n"
"         octet-stream), rotate now, answer the report. 409 when online\n"
"         delete is off; 400 for a malformed body (nothing rotated).\n"
"         The body is at most max_object_size; a longer keep-list goes in\n"
"         pieces: POST /v1/admin/keep, then rotate?expect=R (docs/HTTP.md).\n"
"    POST /v1/admin/keep               copy the body's keys forward now;\n"
"         answers the manifest's rotation count R they were copied at.\n"
"    GET|POST /v1/admin/can_delete[?value=N|never|always|now]\n"
"         advisory_delete's allowance: read it, or set it with POST.\n"
"    GET  /v1/admin/heap               the allocator's heap report: jemalloc\n"
"         started with MALLOC_CONF=prof:true, a prof.dump (octet-stream,\n"
"         for jeprof); jemalloc without it, 409 profiling_off; glibc,\n"
"         malloc_info's XML; tcmalloc, mimalloc: 501 not_supported.\n"
"    GET  /v1/rotations                JSON: the last 32 rotation attempts.\n"
"    GET  /metrics                     Prometheus text (see TIDE_METRICS_TOKEN).\n"
"         Computed at scrape time on a worker thread: /proc reads and the\n"
"         allocator's statistics (glibc's walk every arena under its lock).\n"
"         Measured here: 1.1 ms per scrape at 86 MiB RSS (bench/scrape).\n"
"    KEYHEX is exactly twice the store's key size in hex digits (64 for the\n"
"    default 32-byte keys; any key size NuDB allows), either case. The\n"
"    query parameters are sync=0|1 on /v1/objects/ and value= on\n"
"    /v1/admin/can_delete, once each; anything else is 400. Errors are\n"
"    JSON: {\"error\":\"CODE\",\"detail\":\"...\"}, request\n"
"    bytes in it escaped as \\xNN. Other paths: 404; other methods: 405 with\n"
"    Allow; a method that is not an HTTP token: 400; a request target over\n"
"    1024 bytes (for keys over 378 bytes: 12 + 2 x key size + 256): 414.\n"
"    Full reference: docs/HTTP.md.\n"
"\n"
"LIMITS\n"
"    Request line and headers: 8192 + 4096 * 100 bytes and 100 headers\n"
"    (h2o). Request target: 1024 bytes, or 12 + 2 x key size + 256 for\n"
"    keys over 378 bytes. Body: max_object_size; a\n"
"    Content-Length over it is 413 before the body is read. Two\n"
"    Content-Length headers, or Content-Length with Transfer-Encoding: 400,\n"
"    connection closed. Request bodies held at once: http_body_budget (503\n"
"    with Retry-After beyond it). Connections: http_max_connections at\n"
"    once (fewer if RLIMIT_NOFILE is lower; tided raises its soft limit to\n"
"    the hard one), http_max_connections_per_client from one address;\n"
"    idle ones are closed after http_idle_timeout. A request's head must\n"
"    be complete http_header_timeout after its first byte, and its body\n"
"    keep http_body_min_rate after http_body_grace (408, connection\n"
"    closed); the whole request must arrive within http_request_timeout\n"
"    of the connection's wait for it (closed, no answer). HTTP/1.x only,\n"
"    without TLS.\n"
"\n"
"MEMORY LEVELS\n"
"    With a memory_limit (the operator's, or the cgroup's when unset), the\n"
"    bytes counted (the larger of RSS and the cgroup's usage less page\n"
"    cache) are compared with memory_levels' marks (default 80,90,97 per\n"
"    cent of the limit); a level is left below its mark less\n"
"    memory_hysteresis points. soft: sweep now, shrink the cache targets,\n"
"    trim. high: PUTs and request bodies are 503 overloaded with\n"
"    Retry-After: 1, bodies refused before they are read; GET, HEAD,\n"
"    /healthz, /metrics and /v1/status are served. critical: each event\n"
"    loop accepts only a reserve of 4 new connections (for monitoring;\n"
"    bodyless requests only), then no more until one closes (they wait\n"
"    in the backlog); the open ones are served. Nothing acknowledged is\n"
"    dropped. /v1/status'\n"
"    memory_limit and the tide_overload_* metrics show the level.\n"
"\n", f);
}

/* SIGNALS, EXIT STATUS and EXAMPLES. */
static void help_signals(FILE *f)
{
    fputs(
"SIGNALS\n"
"    SIGTERM, SIGINT, SIGQUIT\n"
"                     stop: close the listening socket, let requests in flight\n"
"                     finish (pending ?sync=1 included) for up to 10 s, close\n"
"                     the store (committing every acknowledged PUT), log\n"
"                     \"shutdown complete\" and exit 0. A second signal stops\n"
"                     waiting for requests in flight. During startup (the\n"
"                     store's open, which may recover or take long on a slow\n"
"                     disk) it stops tided before it serves, exit 0; the\n"
"                     interrupted open is finished at the next start.\n"
"    SIGHUP           reload: read the settings again (flags, TIDE_*\n"
"                     variables, --config FILE, the cgroup's memory limit)\n"
"                     and apply the ones that change while tided runs:\n"
"                     log_level, memory_limit, memory_levels,\n"
"                     memory_hysteresis and memory_pressure (the level is\n"
"                     computed again at once; each change is logged). Every\n"
"                     other change, the budgets derived from memory_limit\n"
"                     included, is named in the log and takes effect at the\n"
"                     next start (the tokens too: their files are read again,\n"
"                     and a changed token is named). tided logs to stderr and\n"
"                     has no log file to reopen. A file that no longer reads,\n"
"                     or a token file now refused, changes nothing.\n"
"    SIGPIPE          ignored.\n"
"\n"
"EXIT STATUS\n"
"    0  stopped by SIGTERM, SIGINT or SIGQUIT: store closed cleanly, or\n"
"       tided stopped before serving\n"
"    1  the store could not be opened (busy: another process holds it;\n"
"       corrupt; I/O error), the address could not be bound, an event loop\n"
"       failed, or closing the store failed; with --check-config: stdout\n"
"       could not be written\n"
"    2  bad command line, setting, environment variable, config file or\n"
"       token file (one others can read: chmod 600 FILE), or a data_dir\n"
"       whose parent directory does not exist; the message names it (with\n"
"       --check-config: the settings did not pass)\n"
"\n"
"EXAMPLES\n"
"    tided --data-dir /var/lib/tide --listen 127.0.0.1:8080\n"
"    TIDE_ADMIN_TOKEN_FILE=/etc/tide/admin.token tided --config /etc/tide/tide.cfg\n"
"    tided --listen [::1]:8080 --node-size small --log-level debug\n"
"    tided --check-config --config /etc/tide/tide.cfg && systemctl restart tided\n"
"    tided --log-format json --data-dir /var/lib/tide 2>>/var/log/tide.json\n"
"\n"
"    key=$(printf '%064x' 1)\n"
"    curl -X PUT --data-binary @value.bin \"http://127.0.0.1:8080/v1/objects/$key?sync=1\"\n"
"    curl -o value.bin http://127.0.0.1:8080/v1/objects/$key\n"
"    curl -s http://127.0.0.1:8080/v1/status | jq .memory\n"
"    curl -s http://127.0.0.1:8080/v1/status | jq .memory_limit\n"
"    curl -H \"Authorization: Bearer $TIDE_ADMIN_TOKEN\" -o heap.out \\\n"
"         http://127.0.0.1:8080/v1/admin/heap\n"
"    curl -X POST -H \"Authorization: Bearer $TIDE_ADMIN_TOKEN\" \\\n"
"         http://127.0.0.1:8080/v1/admin/sweep\n", f);
}

/* tided --help: a man page, its settings generated (print_settings). */
static void print_help(FILE *f)
{
    help_options(f);
    help_environment(f);
    help_endpoints(f);
    help_signals(f);
}

/* ---- startup --------------------------------------------------------- */

/* --log-format from the flag or TIDE_LOG_FORMAT, before the settings are
 * read, so that their own messages (a config file's info lines, a bad
 * value's error) come in that format too; the file's log_format applies
 * once it is read. A bad value is left for the settings to refuse. */
static void early_log_format(int argc, char **argv)
{
    const char *want = getenv("TIDE_LOG_FORMAT");
    int f;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        if (strcmp(argv[i], "--log-format") == 0 && i + 1 < argc) want = argv[++i];
        else if (strncmp(argv[i], "--log-format=", 13) == 0) want = argv[i] + 13;
    }
    if ((f = tide_log_format_parse(want)) >= 0) tide_log_set_format(f);
}

/* A line of a startup error on stderr as text: "tided: MESSAGE", each
 * line of it behind the journal's error prefix "<3>" when stderr is the
 * journal (tide_log_prefix), so that journald files all of it at "err"
 * (`journalctl -p err` shows why the unit failed), not at "info". */
static void report_text(const char *head, const char *msg)
{
    const char *prefix = tide_log_prefix(TIDE_LOG_ERROR);

    for (;;) {
        const char *nl = strchr(msg, '\n');
        int len = nl ? (int)(nl - msg) : (int)strlen(msg);

        fprintf(stderr, "%s%s%.*s\n", prefix, head, len, msg);
        if (nl == NULL || nl[1] == '\0') break;
        msg = nl + 1;
    }
    fflush(stderr);
}

/* A startup error on stderr: "tided: MESSAGE" (report_text), or an error
 * line when the log is json (a shipper reading stderr gets nothing but
 * json; tide_log gives it the journal's prefix too). */
static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
    char msg[TIDE_LOG_LINE_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (tide_log_get_format() == TIDE_LOG_FORMAT_JSON) tide_log(TIDE_LOG_ERROR, "%s", msg);
    else report_text("tided: ", msg);
}

/* --help, --version, --check-config and --config FILE, which
 * tide_config_apply_args does not act on. Returns -1 to go on, or the exit
 * status. */
static int early_flags(int argc, char **argv, const char **config, int *check)
{
    early_log_format(argc, argv);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--check-config") == 0) *check = 1;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            print_help(stdout);
            return EXIT_OK;
        }
        if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            printf("tided %s (h2o %s; NuDB format version 2)\n", TIDE_VERSION, H2O_VERSION);
            return EXIT_OK;
        }
        if (strcmp(a, "--config") == 0) {
            if (i + 1 >= argc) {
                report("--config: missing its value (a file)");
                return EXIT_USAGE;
            }
            *config = argv[++i];
        } else if (strncmp(a, "--config=", 9) == 0) {
            *config = a + 9;
        } else if (strcmp(a, "--") == 0) {
            break;
        }
    }
    return -1;
}

/* The settings from every source, in config.h's order (startup and
 * SIGHUP both). Returns 0 or the first error (tide_last_error says what);
 * *file_failed is set when it was the config file's own (unreadable). */
static int read_settings(tide_config *c, int argc, char **argv, const char *config, int *file_failed)
{
    int rc = 0;

    *file_failed = 0;
    tide_config_defaults(c);
    if (config && (rc = tide_config_load_file(c, config)) != 0) {
        *file_failed = 1;
        return rc;
    }
    rc = tide_config_apply_env(c, NULL, NULL);
    if (rc == 0) rc = tide_config_apply_args(c, argc, argv);
    /* systemd's StateDirectory= and LoadCredential= (config_systemd.c) */
    if (rc == 0) rc = tide_config_apply_state_dir(c, getenv("STATE_DIRECTORY"));
    if (rc == 0) rc = tide_config_load_tokens(c, getenv("CREDENTIALS_DIRECTORY"));
    if (rc == 0) rc = tide_config_apply_cgroup(c, NULL);   /* the cgroup's memory limit */
    if (rc == 0) rc = tide_config_finish(c);
    return rc;
}

static int load_settings(tide_config *c, int argc, char **argv, const char *config)
{
    int file_failed, rc = read_settings(c, argc, argv, config, &file_failed);

    if (rc && file_failed)
        report("--config %s: %s%s%s", config, tide_strerror(rc), tide_last_error()[0] ? ": " : "",
               tide_last_error());
    else if (rc)
        report("%s", tide_last_error());
    return rc;
}

/* Block the signals tided acts on (every thread made later inherits the
 * mask) and read them from a signalfd; ignore SIGPIPE. */
static int setup_signals(tided_server *srv)
{
    sigset_t set;

    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGQUIT);
    sigaddset(&set, SIGHUP);
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) return -1;
    srv->signal_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    return srv->signal_fd < 0 ? -1 : 0;
}

/* Raise the soft descriptor limit to the hard one and fit the connection
 * bound under it (a few dozen descriptors stay for the store and h2o). */
static void setup_connection_limit(tided_server *srv, const tide_config *c)
{
    struct rlimit rl;
    uint64_t fit;

    srv->max_connections = c->http_max_connections;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit want = rl;
        want.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &want) == 0) rl = want;
    }
    fit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
    fit = fit > 64 + 16 ? fit - 64 : 16;
    if (fit < srv->max_connections) {
        srv->max_connections = (unsigned)fit;
        tide_log(TIDE_LOG_WARN, "RLIMIT_NOFILE allows %llu descriptors: serving at most %u connections "
                 "(raise the limit, e.g. LimitNOFILE=%u, for http_max_connections=%u)",
                 (unsigned long long)rl.rlim_cur, srv->max_connections, c->http_max_connections + 64,
                 c->http_max_connections);
    }
}

/* 1 when `host` is 127.x, ::1 or localhost. Bound anywhere else, anyone
 * who can reach it can read /v1/status and /v1/sweeps (no token). */
static int listen_is_loopback(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 || strcmp(host, "localhost") == 0;
}

/* The warning for an address beyond loopback, from a start (`verb`
 * "listening on", after the bind) and from --check-config ("would listen
 * on"): the same text in both. */
static void warn_not_loopback(const tide_config *c, const char *listen_text, const char *verb)
{
    if (!listen_is_loopback(c->listen_host))
        tide_log(TIDE_LOG_WARN, "%s %s, not a loopback address: /healthz, /v1/status and /v1/sweeps "
                 "answer anyone who can reach it, without a token (they show the store's and the node's "
                 "figures, never a value or a token); PUT and GET of objects are open too. Put a proxy "
                 "with TLS and access control in front (docs/HTTP.md)", verb, listen_text);
}

/* A slow request's own bounds act only inside h2o's bound of the whole
 * request, which closes the connection without an answer: say so when the
 * operator's values leave one of them nothing to do. From a start and
 * from --check-config alike. */
static void warn_request_bounds(const tide_config *c)
{
    char hs[200], rs[200], gs[200];

    tide_config_source_text(c, TIDE_CFG_HTTP_HEADER_TIMEOUT, hs, sizeof hs);
    tide_config_source_text(c, TIDE_CFG_HTTP_REQUEST_TIMEOUT, rs, sizeof rs);
    tide_config_source_text(c, TIDE_CFG_HTTP_BODY_GRACE, gs, sizeof gs);
    if (c->http_header_timeout >= c->http_request_timeout)
        tide_log(TIDE_LOG_WARN, "http_header_timeout=%u (%s) is not below http_request_timeout=%u (%s): a slow "
                 "head is closed by the request timeout, without a 408; lower http_header_timeout",
                 c->http_header_timeout, hs, c->http_request_timeout, rs);
    if (c->http_body_min_rate != 0 && c->http_body_grace >= c->http_request_timeout)
        tide_log(TIDE_LOG_WARN, "http_body_grace=%u (%s) is not below http_request_timeout=%u (%s): "
                 "http_body_min_rate never applies, the request timeout closes a slow body first; lower "
                 "http_body_grace", c->http_body_grace, gs, c->http_request_timeout, rs);
}

/* ---- SIGHUP ------------------------------------------------------------ */

static int    saved_argc;
static char **saved_argv;
static const char *saved_config;

/* The settings whose memory-limit part is in force: the startup's, then
 * each SIGHUP's that applied (main thread only). */
static tide_config memory_in_force;

/* memory_limit's source as /v1/status shows it: "flag --memory-limit",
 * "file tide.cfg:3", "env TIDE_MEMORY_LIMIT", the cgroup's, or "default". */
static void memory_source_set(tided_server *srv, const tide_config *c)
{
    const tide_config_source *s = &c->src[TIDE_CFG_MEMORY_LIMIT];
    const char *kind = s->kind == TIDE_SRC_FILE ? "file " : s->kind == TIDE_SRC_ENV ? "env "
                     : s->kind == TIDE_SRC_FLAG ? "flag " : "";

    pthread_mutex_lock(&srv->memory_mu);
    snprintf(srv->memory_source, sizeof srv->memory_source, "%s%s", s->where[0] ? kind : "",
             s->where[0] ? s->where : "default");
    pthread_mutex_unlock(&srv->memory_mu);
}

static int memory_setting(int id)
{
    return id == TIDE_CFG_MEMORY_LIMIT || id == TIDE_CFG_MEMORY_LEVELS || id == TIDE_CFG_MEMORY_HYSTERESIS
        || id == TIDE_CFG_MEMORY_PRESSURE;
}

/* SIGHUP's part for the memory limit: memory_limit (the cgroup's read
 * again by read_settings), memory_levels, memory_hysteresis and
 * memory_pressure apply at once (tide_node_memory_configure); the budgets
 * derived from the limit stay until the next start, so a limit they do not
 * fit under (tide_config_check_limit_in_force) changes nothing and warns. */
static void reload_memory(tided_server *srv, const tide_config *fresh)
{
    const tide_config *was = &memory_in_force;
    char before[4500], after[4500];
    int rc;

    if (fresh->memory_limit == was->memory_limit && memcmp(fresh->memory_levels, was->memory_levels, sizeof was->memory_levels) == 0
        && fresh->memory_hysteresis == was->memory_hysteresis && fresh->memory_pressure == was->memory_pressure)
        return;
    /* The budgets stay as startup fixed them: a limit (or high mark) under
     * which they may hold more than the high mark would leave the node
     * shedding every write with its own caches full (a 8 GiB node's
     * derived budgets under 64 MiB hold 70 x the limit). */
    if (tide_config_check_limit_in_force(srv->cfg, fresh->memory_limit, fresh->memory_levels) != 0) {
        tide_log(TIDE_LOG_WARN, "SIGHUP: the memory limit's settings did not change: %s", tide_last_error());
        return;
    }
    rc = tide_node_memory_configure(srv->node, fresh->memory_limit, fresh->memory_levels, fresh->memory_hysteresis,
                                    fresh->memory_pressure);
    if (rc) {
        tide_log(TIDE_LOG_WARN, "SIGHUP: the memory limit's settings were refused, so they did not change: %s",
                 tide_last_error());
        return;
    }
    for (int id = 0; id < TIDE_CFG_COUNT; id++) {
        if (!memory_setting(id)) continue;
        tide_config_describe_one(was, id, before, sizeof before);
        tide_config_describe_one(fresh, id, after, sizeof after);
        if (strcmp(before, after) != 0)
            tide_log(TIDE_LOG_INFO, "SIGHUP: %s %s -> %s, in force now", tide_config_name(id), before, after);
    }
    memory_in_force = *fresh;
    memory_source_set(srv, fresh);
}

/* SIGHUP: read the settings again, apply log_level and the memory limit's
 * settings, log what else changed. */
static void reload_settings(tided_server *srv)
{
    static tide_config fresh;          /* main thread only (loop 0) */
    int file_failed;

    if (read_settings(&fresh, saved_argc, saved_argv, saved_config, &file_failed) != 0) {
        tide_log(TIDE_LOG_WARN, "SIGHUP: the settings do not read any more, so nothing changed: %s",
                 tide_last_error());
        return;
    }
    if (fresh.log_level != tide_log_get_level()) {
        tide_log(TIDE_LOG_INFO, "SIGHUP: log_level %s -> %s (%s)", tide_log_level_name(tide_log_get_level()),
                 tide_log_level_name(fresh.log_level), fresh.src[TIDE_CFG_LOG_LEVEL].where[0]
                 ? fresh.src[TIDE_CFG_LOG_LEVEL].where : "default");
        tide_log_set_level(fresh.log_level);
    }
    if (fresh.log_format != tide_log_get_format()) {
        tide_log(TIDE_LOG_INFO, "SIGHUP: log_format %s -> %s (%s)", tide_log_format_name(tide_log_get_format()),
                 tide_log_format_name(fresh.log_format), fresh.src[TIDE_CFG_LOG_FORMAT].where[0]
                 ? fresh.src[TIDE_CFG_LOG_FORMAT].where : "default");
        tide_log_set_format(fresh.log_format);
    }
    reload_memory(srv, &fresh);
    /* The tokens were read again (their files too) but, as every setting
     * not named above, are in force from the next start: describe shows
     * them only as set/unset, so a new token in the same file is named here. */
    if (strcmp(fresh.metrics_token, srv->cfg->metrics_token) != 0)
        tide_log(TIDE_LOG_WARN, "SIGHUP: the metrics token changed; it takes effect at the next start");
    if (strcmp(fresh.admin_token, srv->cfg->admin_token) != 0)
        tide_log(TIDE_LOG_WARN, "SIGHUP: the admin token changed; it takes effect at the next start");
    for (int id = 0; id < TIDE_CFG_COUNT; id++) {
        char was[4500], now[4500];
        if (id == TIDE_CFG_LOG_LEVEL || id == TIDE_CFG_LOG_FORMAT || memory_setting(id)) continue;
        tide_config_describe_one(srv->cfg, id, was, sizeof was);
        tide_config_describe_one(&fresh, id, now, sizeof now);
        if (strcmp(was, now) != 0)
            tide_log(TIDE_LOG_WARN, "SIGHUP: %s changed (%s -> %s); it takes effect at the next start",
                     tide_config_name(id), was, now);
    }
    tide_log(TIDE_LOG_INFO, "SIGHUP: settings read again%s%s; the log stays on stderr",
             saved_config ? " from " : "", saved_config ? saved_config : "");
}

/* ---- the store's open, which a signal may cut short ------------------- */

typedef struct open_job {
    tided_server     *srv;
    const tide_config *cfg;
    int               rc;
    int               done_fd;        /* written once the open returned */
    /* The open's tide_last_error(), which is the open thread's own: the
     * main thread logs it. */
    char              error[1024];
} open_job;

/* A test hook (tests/test_http_limits.c): TIDE_TEST_BALLAST_MIB=N holds N MiB,
 * touched, for the process's life, memory no budget counts (as the
 * allocator's fragmentation or h2o's buffers are), so that a test can put
 * the RSS between the marks of a limit its budgets fit under. Reachable
 * from here until exit. */
static void *test_ballast;

static void hold_test_ballast(void)
{
    const char *mib = getenv("TIDE_TEST_BALLAST_MIB");
    long n = mib && *mib ? strtol(mib, NULL, 10) : 0;

    if (n <= 0 || n > 4096 || test_ballast != NULL) return;
    test_ballast = malloc((size_t)n << 20);
    if (test_ballast) memset(test_ballast, 0x5a, (size_t)n << 20);
}

static void *open_thread(void *arg)
{
    open_job *j = arg;
    tide_node_opts o;
    uint64_t one = 1;

    /* A test hook (tests/test_http_lifecycle.c): hold the open as a slow disk or a
     * long recovery would, to prove a stop signal still ends startup. */
    const char *delay = getenv("TIDE_TEST_OPEN_DELAY_MS");
    if (delay && *delay) {
        long ms = strtol(delay, NULL, 10);
        if (ms > 0 && ms <= 600000) tide_clock_sleep_us((uint64_t)ms * 1000);
    }
    hold_test_ballast();
    tide_startup_node_opts(j->cfg, &o);
    o.create_if_missing = 1;
    j->rc = tide_node_open(&j->srv->node, &o);
    if (j->rc) snprintf(j->error, sizeof j->error, "%s", tide_last_error());
    if (write(j->done_fd, &one, sizeof one) != (ssize_t)sizeof one) { /* the poll sees the thread end anyway */ }
    return NULL;
}

/* Open the node on a thread while the signalfd is watched: a stop signal
 * before the open returns ends the process at once (exit 0), since nothing
 * was acknowledged yet and the store's open is safe to cut as a crash is.
 * Returns 0, or the open's error (logged). */
static int open_node(tided_server *srv, const tide_config *c)
{
    open_job j = { srv, c, 0, -1, "" };
    pthread_t tid;
    int rc, err;

    j.done_fd = eventfd(0, EFD_CLOEXEC);
    if (j.done_fd < 0) {
        tide_log(TIDE_LOG_ERROR, "cannot open the store in %s: eventfd: %s", c->data_dir, strerror(errno));
        return TIDE_EIO;
    }
    tided_notify_extend_begin("opening the store");
    err = pthread_create(&tid, NULL, open_thread, &j);
    if (err) {
        tided_notify_extend_end();
        close(j.done_fd);
        tide_log(TIDE_LOG_ERROR, "cannot open the store in %s: a thread: %s", c->data_dir, strerror(err));
        return TIDE_ENOMEM;
    }
    for (;;) {
        struct pollfd p[2] = { { j.done_fd, POLLIN, 0 }, { srv->signal_fd, POLLIN, 0 } };
        struct signalfd_siginfo si;
        if (poll(p, 2, -1) < 0 && errno != EINTR) break;
        if (p[0].revents) break;
        while (read(srv->signal_fd, &si, sizeof si) == (ssize_t)sizeof si) {
            if (si.ssi_signo == SIGHUP) {
                tide_log(TIDE_LOG_INFO, "SIGHUP during startup: nothing to reload yet");
                continue;
            }
            tide_log(TIDE_LOG_WARN, "%s during startup: stopping before serving, while the store in %s is "
                     "still opening (nothing was acknowledged yet; an interrupted open is finished at the "
                     "next start)", strsignal((int)si.ssi_signo), c->data_dir);
            tided_notify_stopping("stopped during the store's open");
            _exit(EXIT_OK);
        }
    }
    pthread_join(tid, NULL);
    tided_notify_extend_end();
    close(j.done_fd);
    rc = j.rc;
    if (rc == TIDE_EBUSY)
        tide_log(TIDE_LOG_ERROR, "cannot open the store in %s: it is busy: another process (another tided, "
                 "or a tide command) holds it: %s", c->data_dir, j.error);
    else if (rc)
        tide_log(TIDE_LOG_ERROR, "cannot open the store in %s: %s: %s", c->data_dir, tide_strerror(rc),
                 j.error);
    if (rc) return rc;
    srv->key_size = tide_node_key_size(srv->node);
    tide_log(TIDE_LOG_INFO, "store %s open: %u-byte keys", c->data_dir, srv->key_size);
    tide_startup_log_rss(c, srv->node);
    tide_startup_log_disk(c, srv->node);
    return 0;
}

/* ---- --check-config ------------------------------------------------------ */

static void warn_unbounded(void *arg, const char *consumer, const char *how)
{
    (void)arg;
    tide_log(TIDE_LOG_WARN, "unbounded: %s has no limit; %s", consumer, how);
}

/* tided --check-config, once the settings read and passed every check
 * (load_settings: the file, the variables, the flags, the cgroup's limit,
 * the budgets' rule): every setting in force with its source on stdout, one
 * a line ("cache_budget=1GiB(preset medium)"), each group under a "# GROUP"
 * line, the warnings a start gives on stderr, exit 0 (1 when stdout cannot
 * be written: the check's answer was lost). Nothing is opened,
 * bound or started: no store, no socket, no thread, no mallopt. */
static int check_config(const tide_config *c, const char *config)
{
    char piece[4500];

    /* The start's own warnings, from the same code: the descriptor limit
     * (raising the soft limit as a start does, in this process only) and
     * an address beyond loopback. */
    setup_connection_limit(&server, c);
    warn_not_loopback(c, c->listen, "would listen on");
    warn_request_bounds(c);

    for (int g = 0; g < TIDE_CFG_GROUP_COUNT; g++) {
        printf("# %s\n", tide_config_group_name(g));
        for (int id = 0; id < TIDE_CFG_COUNT; id++) {
            if (tide_config_group(id) != g) continue;
            tide_config_describe_setting(c, id, piece, sizeof piece);
            printf("%s\n", piece);
        }
    }
    tide_config_unbounded(c, tide_mem_alloc_family(), warn_unbounded, NULL);
    printf("tided --check-config: OK: the settings%s%s are valid (the store was not opened, %s not bound)\n",
           config ? " with " : "", config ? config : "", c->listen);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        tide_log(TIDE_LOG_ERROR, "--check-config: cannot write the settings to stdout: %s (exit 1)", strerror(errno));
        return EXIT_FAIL;
    }
    return EXIT_OK;
}

/* The server's copies of the settings its loops read (start only: a
 * SIGHUP changes none of them). */
static void server_settings(tided_server *srv, const tide_config *c)
{
    srv->cfg = c;
    srv->signal_fd = srv->listen_fd = -1;
    srv->max_object_size = (size_t)c->max_object_size;
    srv->admin_token = c->admin_token;
    srv->admin_token_len = strlen(c->admin_token);
    srv->metrics_token = c->metrics_token;
    srv->metrics_token_len = strlen(c->metrics_token);
    srv->metrics_public = c->metrics_public;
    srv->nloops = c->http_threads;
    srv->max_per_client = c->http_max_connections_per_client;
    srv->idle_timeout_ms = (uint64_t)c->http_idle_timeout * 1000;
    srv->request_timeout_ms = (uint64_t)c->http_request_timeout * 1000;
    srv->header_timeout_ms = (uint64_t)c->http_header_timeout * 1000;
    srv->body_min_rate = c->http_body_min_rate;
    srv->body_grace_ms = (uint64_t)c->http_body_grace * 1000;
    srv->body_budget = c->http_body_budget;
}

/* The settings of a start or of --check-config (`check`): read and checked
 * (load_settings), the log set from them, and data_dir checked before the
 * startup log says a new store will be created there. 0, or -1 once the
 * error is reported (exit 2). */
static int settle_settings(tide_config *cfg, int argc, char **argv, const char *config, int check)
{
    if (load_settings(cfg, argc, argv, config) != 0) {
        if (check) report("--check-config: the settings are not valid (exit 2)");
        else if (tide_log_get_format() != TIDE_LOG_FORMAT_JSON) report_text("", "Run 'tided --help' for the options.");
        return -1;
    }
    tide_log_set_format(cfg->log_format);
    tide_log_set_level(cfg->log_level);
    if (tide_startup_check_data_dir(cfg) != 0) {
        report("%s", tide_last_error());
        if (check) report("--check-config: the settings are not valid (exit 2)");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static tide_config cfg;
    tided_server *srv = &server;
    const char *config = NULL;
    int status = EXIT_FAIL, rc, check = 0;

    rc = early_flags(argc, argv, &config, &check);
    if (rc >= 0) return rc;
    if (settle_settings(&cfg, argc, argv, config, check) != 0) return EXIT_USAGE;
    if (check) return check_config(&cfg, config);
    server_settings(srv, &cfg);
    tided_clients_init(srv);
    pthread_mutex_init(&srv->memory_mu, NULL);
    memory_source_set(srv, &cfg);
    memory_in_force = cfg;
    saved_argc = argc;
    saved_argv = argv;
    saved_config = config;
    srv->reload = reload_settings;
    srv->started_mono_us = tide_clock_mono_us();
    srv->started_unix_s = tide_clock_real_ns() / 1000000000u;

    tided_notify_init();
    if (setup_signals(srv) != 0) {
        tide_log(TIDE_LOG_ERROR, "cannot set up signal handling: %s", strerror(errno));
        goto out;
    }
    if (tide_startup_apply_malloc(&cfg) != 0) {
        report("%s", tide_last_error());
        status = EXIT_USAGE;
        goto out;
    }
    tide_startup_log(&cfg);
    setup_connection_limit(srv, &cfg);
    warn_request_bounds(&cfg);
    /* Bind first: a tided that cannot serve must not create a store. */
    if (tided_listen(srv) != 0) {
        tide_log(TIDE_LOG_ERROR, "%s", tide_last_error());
        goto out;
    }
    warn_not_loopback(&cfg, srv->listen_text, "listening on");
    if (open_node(srv, &cfg) != 0) goto out;
    tided_api_setup(srv);
    if (tided_loops_init(srv) != 0) {
        tide_log(TIDE_LOG_ERROR, "cannot set up the event loops: %s", tide_last_error());
        goto out;
    }
    if (tided_worker_start(&srv->sync_worker, srv, "sync", TIDED_WORKER_SYNC) != 0
        || tided_worker_start(&srv->sweep_worker, srv, "sweep", TIDED_WORKER_SWEEP) != 0
        || tided_worker_start(&srv->metrics_worker, srv, "metrics", TIDED_WORKER_METRICS) != 0
        || tided_worker_start(&srv->rotate_worker, srv, "rotate", TIDED_WORKER_ROTATE) != 0
        || tided_worker_start(&srv->heap_worker, srv, "heap", TIDED_WORKER_HEAP) != 0
        || tided_pool_start(&srv->store_pool, srv, cfg.store_workers, cfg.store_queue) != 0)
        goto out;
    status = tided_loops_run(srv) == 0 ? EXIT_OK : EXIT_FAIL;
out:
    /* The workers finish their queued jobs (a sync commit, a sweep, a
     * trim) before they stop: systemd's stop timeout is extended from
     * here, not only from the close. */
    if (srv->node) tided_notify_extend_begin("stopping: the final commit");
    /* An admin rotation's gradual drop would hold the rotate worker for
     * minutes: interrupted, it returns at its next delete step. */
    if (srv->node) tide_node_interrupt(srv->node);
    tided_worker_stop(&srv->store_pool);      /* first: a ?sync=1 put goes on to sync */
    tided_worker_stop(&srv->sync_worker);
    tided_worker_stop(&srv->sweep_worker);
    tided_worker_stop(&srv->metrics_worker);
    tided_worker_stop(&srv->rotate_worker);
    tided_worker_stop(&srv->heap_worker);
    if (srv->node) {
        rc = tide_node_close(srv->node);
        tided_notify_extend_end();
        srv->node = NULL;
        if (rc) {
            tide_log(TIDE_LOG_ERROR, "closing the store failed: %s: %s", tide_strerror(rc), tide_last_error());
            status = EXIT_FAIL;
        }
    }
    if (status == EXIT_OK) tide_log(TIDE_LOG_INFO, "shutdown complete");
    return status;
}
