/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config_impl.h: what the node part's settings files share (config.c, the
 * table, defaults and values; config_file.c, the file; config_help.c,
 * tided's --help; config_mem.c, the memory limit; startup.c, the node's
 * options from the rows). Private to src/node: nothing outside includes it.
 *
 * The tables are constant and the functions thread-compatible: a
 * tide_config is changed by one thread at a time, as config.h says.
 */
#ifndef TIDE_CONFIG_IMPL_H
#define TIDE_CONFIG_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "node/config.h"

#define GiB (1024ull * 1024 * 1024)
#define MiB (1024ull * 1024)

/* How a setting's text is parsed. */
enum kind {
    K_NODE_SIZE, /* tiny..huge */
    K_PATH,      /* non-empty string */
    K_LISTEN,    /* HOST:PORT */
    K_UINT,      /* decimal integer in [min, max] */
    K_SIZE,      /* tide_size_parse, in [min, max] */
    K_BLOCK,     /* tide_block_size_parse: warns, never fails */
    K_LEVEL,     /* tide_log_level_parse */
    K_LOG_FORMAT,/* tide_log_format_parse: text or json */
    K_SECRET,    /* string, never printed */
    K_BOOL,      /* 1/0, true/false, yes/no, on/off */
    K_TRIM,      /* always, never, every:N, freed:SIZE, free-pct:P */
    K_ONLINE,    /* online_delete: N in [min, max] (0: off) or "manual" */
    K_LEVELS,    /* memory_levels: "S,H,C", percents in [min, max], S < H < C */
    K_CHOICE,    /* one of the row's `choices`, stored as its index */
    K_NAME       /* a name: 1 to field_size - 1 bytes of A-Z a-z 0-9 . _ - */
};

/* The C type of a setting's field in tide_config, found by FIELD() from
 * the field itself, so a row cannot name a field of another type. */
enum ti_storage { TI_INT, TI_UNSIGNED, TI_U64, TI_TEXT, TI_OTHER };
#define TI_STORAGE_OF(x) _Generic((x), int: TI_INT, unsigned: TI_UNSIGNED, uint64_t: TI_U64, \
                                  char *: TI_TEXT, default: TI_OTHER)

/* A row's name and its field in tide_config (offset, size and type): one
 * name, so the setting cannot be kept under another. Its flag and variable
 * are the same name spelt for each ("cache-budget", "TIDE_CACHE_BUDGET"),
 * which tests/test_config.c holds every row to. */
#define FIELD(f) .name = #f, .offset = offsetof(tide_config, f), .field_size = sizeof ((tide_config *)0)->f, \
                 .storage = TI_STORAGE_OF(((tide_config *)0)->f)
/* A row's destination in tide_node_opts, copied as a number of the
 * field's size (4 or 8 bytes) by tide_startup_node_opts. */
#define NODE(f) .node_offset = offsetof(tide_node_opts, f), .node_size = sizeof ((tide_node_opts *)0)->f

struct ti_config_setting;
struct ti_config_parsed;        /* a value parsed from its text (config.c) */
struct tide_node_opts;

/* The value of a setting as describe prints it ("1GiB", "on", "unset"). */
typedef void (*ti_config_format_fn)(const tide_config *c, const struct ti_config_setting *st, char *out,
                                    size_t cap);
/* Store a parsed value where its field is not one number or one text. */
typedef void (*ti_config_store_fn)(tide_config *c, const struct ti_config_setting *st,
                                   const struct ti_config_parsed *p, const char *text);
/* A default computed at tide_config_defaults (from the machine). */
typedef void (*ti_config_default_fn)(tide_config *c, const struct ti_config_setting *st);
/* Put the setting into the node's options where it is not one number. */
typedef void (*ti_config_node_fn)(const tide_config *c, struct tide_node_opts *o);

/*
 * One setting, all that is known of it: its names, how its text is read
 * and checked, its group, its default, its --help words, where its value
 * is kept (FIELD), how it is printed (format) and where it goes in the
 * node's options (NODE, or to_node; neither: tided's own or glibc's).
 */
typedef struct ti_config_setting {
    const char *name;     /* "cache_budget": its field's name (FIELD) */
    const char *flag;     /* "cache-budget" (without --), NULL: env only */
    const char *env;      /* "TIDE_CACHE_BUDGET" */
    const char *section;  /* "node"; NULL: env only */
    const char *alt_section, *alt_key;  /* a second file spelling, or NULL */
    enum kind kind;
    uint64_t min, max;
    int group;            /* TIDE_CFG_GROUP_*: its settings line and --check-config block */
    /* FIELD(f): where tide_config keeps the value, under `name` */
    size_t offset, field_size;
    enum ti_storage storage;
    ti_config_format_fn format;
    ti_config_store_fn store;       /* NULL: the number or text at offset */
    /* NODE(f) or to_node: where tide_node_opts takes it; neither: not the node's */
    size_t node_offset, node_size;  /* node_size 0: no NODE() */
    ti_config_node_fn to_node;
    int from_preset;      /* finish() fills it from node_size's preset */
    uint64_t preset[TIDE_NODE_SIZE_COUNT];  /* its value in each preset, by TIDE_NODE_* */
    ti_config_default_fn computed;  /* a default computed from the machine, or NULL */
    const char *def;      /* the built-in default as a source would write it,
                             parsed by tide_config_defaults(); NULL when the
                             default is computed or "unset" (then `dflt`) */
    const char *dflt;     /* --help's words for a default that is not `def`,
                             or NULL (the preset ones print the preset row) */
    const char *below_min;/* K_SIZE: why a value below min is refused, said
                             in place of the range; NULL: the range */
    int power_of_two;     /* K_SIZE: the value must be a power of two */
    const char *arg;      /* --help's name for the value: "SIZE", "SECONDS" */
    const char *help;     /* --help's description: what the setting does;
                             never its range or default, which are printed
                             from the fields above */
    const char *const *choices; /* K_CHOICE: the words, NULL-terminated; the
                             value stored is the word's index */
    const char *file_key; /* the config file's key when it is not `name`: the
                             unit written into it, where rippled reads a
                             key of the setting's name with another meaning
                             ("online_delete_objects"); NULL: `name` */
} ti_config_setting;

/* A key of rippled's [node_db] named like a Tide setting but counting
 * something else (its online_delete the ledgers it keeps; Tide's the
 * objects written into the newest generation). The file records it in
 * tide_config's rippled_keys, never as the setting's value; finish refuses
 * it while the setting is not given by an operator's source, since
 * neither reading it nor dropping it in silence is what its writer meant. */
typedef struct ti_config_rippled_key {
    const char *key;      /* "online_delete" */
    int         id;       /* TIDE_CFG_ONLINE_DELETE */
    const char *theirs;   /* what rippled counts with it: "the ledgers rippled keeps" */
    const char *ours;     /* what the setting counts */
    const char *value;    /* the file key's value, for the message: "N (objects; ...)" */
} ti_config_rippled_key;

/* The rows, by TIDE_CFG_* id; node_size's names, by TIDE_NODE_*; and the
 * RAM below which each node_size is chosen (one step per doubling; more
 * RAM than the last is huge). */
extern const ti_config_setting ti_config_settings[TIDE_CFG_COUNT];
extern const char *const ti_config_node_size_names[TIDE_NODE_SIZE_COUNT];
extern const uint64_t ti_config_node_size_ram_below[TIDE_NODE_SIZE_COUNT - 1];
extern const ti_config_rippled_key ti_config_rippled_keys[TIDE_CONFIG_RIPPLED_KEYS];

/*
 * Set setting `id` from `text` for a source of rank `kind` (TIDE_SRC_*),
 * described by `where` (file:line, variable or flag); `what` is how the
 * value was written, for messages ("tide.cfg:12: [node] cache_budget=12XB").
 * The one way every source changes a value. Returns 0 (also when a
 * higher-ranked source already set it) or TIDE_EINVAL with "<what>:
 * <reason>" in tide_last_error() (a secret's text is never in it).
 * Allocates nothing; O(len(text)).
 */
int ti_config_set_value(tide_config *c, int id, const char *text, int kind, const char *where,
                        const char *what);

/* Record where setting `id`'s value came from: rank `kind` (TIDE_SRC_*)
 * and the printf-formatted `where` (cut to fit src[id].where). */
void ti_config_set_source(tide_config *c, int id, int kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The memory limit's part of tide_config_finish (config_mem.c): the
 * limit's floor, the levels with the hysteresis, the budgets derived from
 * the limit and the check of the explicit ones. Returns 0 or TIDE_EINVAL
 * naming the settings and their sources. */
int ti_config_finish_memory(tide_config *c);

/* The archive's settings (config_archive.c): the node's options from
 * them, the host name as the prefix's default, and finish's checks of
 * the whole (online delete for a primary, a prefix fit for object
 * names), TIDE_EINVAL naming the settings and their sources. */
void ti_config_node_archive(const tide_config *c, struct tide_node_opts *o);
void ti_config_default_archive_prefix(tide_config *c, const ti_config_setting *st);
int  ti_config_finish_archive(tide_config *c);
extern const char *const ti_config_archive_words[];
extern const char *const ti_config_archive_sync_words[];
extern const char *const ti_config_archive_mode_words[];

/* Setting `id`'s value as a number (its field read by its storage; 0 for
 * a text or an array). */
uint64_t ti_config_number(const tide_config *c, int id);

/* v as the shortest exact size text ("1GiB", "512MB", "4096") into out. */
void ti_config_size_text(uint64_t v, char *out, size_t cap);

/* The flag nearest to `arg` ("--cache-budjet=1GiB": its name, without
 * the dashes and the value): a setting's flag or one of tided's own
 * (config, check-config, help, version), without "--", at most two
 * edits away (a byte added, dropped or changed, or two neighbours
 * swapped) and fewer than half its length; NULL when none is. The first
 * of the nearest, in the table's order. Allocates nothing. */
const char *ti_config_nearest_flag(const char *arg);

/* The setting whose config-file key (tide_config_file_key) is nearest to
 * `key` by the same rule, among those the file may hold; -1 when none is
 * near. Allocates nothing. */
int ti_config_nearest_key(const char *key);

/* s without its leading and trailing blanks (and a CR or LF), in place. */
char *ti_config_trim(char *s);

/* A value as shown in a message: whole up to 128 bytes, else its first 64
 * bytes and its length (a 5000-byte path must not push the reason out of
 * the message), after `prefix`, into out. */
void ti_config_show_value(char *out, size_t cap, const char *prefix, const char *val);

#endif
