/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ghost_run.h: running the RSS-ghost matrix (ghost.h) one fresh child per
 * scenario and variant, and what the parent and the child say to each
 * other.
 *
 * The parent re-executes its own binary (/proc/self/exe) as
 *
 *     <exe> ghost --child SCENARIO --variant VARIANT --size F
 *     <exe> ghost --child-probe
 *
 * with the variant's environment and LD_PRELOAD, because an allocator is
 * chosen when a process starts. The executable must answer those two
 * command lines by calling tide_lab_ghost_child() or
 * tide_lab_ghost_probe() and printing the object they return as one line
 * on stdout (bin/tide's `ghost` verb does); the parent reads it through a
 * pipe and makes a row of it.
 *
 * A row is a JSON object with every field of `tide ghost --json`'s
 * results (docs/GHOST.md): scenario, variant, skipped, status ("ok",
 * "skipped", "failed"), reason, package, the figures (null unless ok).
 *
 * Errors: the parent's functions never fail as such: a child that could
 * not start, died or said nothing gives a "failed" row with the reason.
 * They return NULL only when out of memory. Nothing here prints.
 * Thread safety: one matrix per process at a time (fork and a pipe per
 * row; stdout and stderr are flushed before each fork).
 */
#ifndef TIDE_LAB_GHOST_RUN_H
#define TIDE_LAB_GHOST_RUN_H

#include <jansson.h>

#include "lab/ghost.h"

/* A hung allocator must not hang the matrix: a child ends after this. */
#define TIDE_LAB_GHOST_CHILD_TIMEOUT_S 300

/* ---- the parent ----------------------------------------------------------------- */

/* "machine": page_size, kernel, glibc, tide_allocator, and allocators:
 * glibc's version and each preloadable allocator's (one probe child per
 * library a variant preloads; null when it is missing or the probe did not
 * say). Cost: a fork and exec per preloadable library. */
json_t *tide_lab_ghost_machine(void);

/* Run `scenario` under `v` at `size` in a child and return its row: ok
 * with the child's figures (ghost_bytes = after - start - live), skipped
 * (sanitized: a sanitizer's allocator serves malloc whatever is preloaded;
 * or v's library is missing, naming its package), or failed with why.
 * Cost: one child, the scenario's own time. */
json_t *tide_lab_ghost_row(const char *scenario, const tide_lab_ghost_variant *v, double size, int sanitized);

/* ---- the child ------------------------------------------------------------------ */

/* In the child: check that `variant` took effect, run `scenario`, and put
 * the report (or {"error": why}) in *out for the child to print. Sets an
 * alarm of TIDE_LAB_GHOST_CHILD_TIMEOUT_S first. Returns 0, TIDE_EINVAL for
 * an unknown scenario or variant, or the failing step's code. */
int tide_lab_ghost_child(const char *scenario, const char *variant, double size, json_t **out);

/* In a probe child: the allocator this process got, its version and its
 * library, or {"error": why}, in *out. 0 or the detection's code. */
int tide_lab_ghost_probe(json_t **out);

#endif
