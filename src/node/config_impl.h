/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config_impl.h: what the node part's settings files share (config.c, the
 * table, defaults and values; config_file.c, the file; config_help.c,
 * tided's --help). Private to src/node: nothing outside includes it.
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

/* A node_size preset: the values it gives the settings it fills
 * (docs/ARCHITECTURE.md, "node_size presets"). */
typedef struct ti_config_preset {
    unsigned sweep_interval;
    uint64_t cache_target, cache_age, cache_budget, insert_burst;
} ti_config_preset;

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
    K_LEVELS     /* memory_levels: "S,H,C", percents in [min, max], S < H < C */
};

typedef struct ti_config_setting {
    const char *name;     /* "cache_budget" */
    const char *flag;     /* "cache-budget" (without --), NULL: env only */
    const char *env;      /* "TIDE_CACHE_BUDGET" */
    const char *section;  /* "node"; NULL: env only */
    const char *alt_section, *alt_key;  /* a second file spelling, or NULL */
    enum kind kind;
    uint64_t min, max;
    int from_preset;      /* finish() fills it from node_size's preset */
    const char *def;      /* the built-in default as a source would write it,
                             parsed by tide_config_defaults(); NULL when the
                             default is computed or "unset" (then `dflt`) */
    const char *dflt;     /* --help's words for a default that is not `def`,
                             or NULL (the preset ones print the preset row) */
    const char *arg;      /* --help's name for the value: "SIZE", "SECONDS" */
    const char *help;     /* --help's description: what the setting does;
                             never its range or default, which are printed
                             from the fields above */
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

/* The rows, by TIDE_CFG_* id; the presets and node_size's names, by
 * TIDE_NODE_*; and the RAM below which each node_size is chosen (one step
 * per doubling; more RAM than the last is huge). */
extern const ti_config_setting ti_config_settings[TIDE_CFG_COUNT];
extern const ti_config_preset ti_config_presets[TIDE_NODE_SIZE_COUNT];
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

/* v as the shortest exact size text ("1GiB", "512MB", "4096") into out. */
void ti_config_size_text(uint64_t v, char *out, size_t cap);

/* s without its leading and trailing blanks (and a CR or LF), in place. */
char *ti_config_trim(char *s);

/* A value as shown in a message: whole up to 128 bytes, else its first 64
 * bytes and its length (a 5000-byte path must not push the reason out of
 * the message), after `prefix`, into out. */
void ti_config_show_value(char *out, size_t cap, const char *prefix, const char *val);

#endif
