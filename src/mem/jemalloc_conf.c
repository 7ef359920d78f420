/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * jemalloc_conf.c: jemalloc's compile-time options for tided and tide when
 * they are linked against Debian's libjemalloc (make ALLOC=jemalloc).
 *
 * jemalloc reads the string in the global `malloc_conf` before the first
 * allocation, ahead of MALLOC_CONF from the environment, which still
 * overrides it option by option. The background thread is what makes
 * jemalloc purge dirty pages on time without an allocating thread doing
 * it; without it, memory a quiet node freed stays resident (the
 * documents behind Tide measured exactly that). The startup log reads the
 * options back with mallctl ("background_thread=true"), so a build where
 * this string did not take effect says so.
 *
 * This file is linked only into ALLOC=jemalloc builds (see the Makefile),
 * and the symbol is exported (--export-dynamic-symbol) so that the
 * library's lookup of malloc_conf finds it in the executable. It lives in
 * mem, the part that knows the allocators, but is no member of mem's
 * archive: a program that does not ask for jemalloc never carries it
 * (tests/test_build.c checks both).
 *
 * Invariants:
 *   1. The string sets one option, background_thread:true; every other
 *      option is jemalloc's default or what MALLOC_CONF says.
 *   2. The file defines one symbol, malloc_conf, and no function.
 *
 * Never: be linked into a build that does not ask for jemalloc, or set an
 *   option that MALLOC_CONF could not override.
 */
const char *malloc_conf = "background_thread:true";
