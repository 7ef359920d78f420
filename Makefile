# SPDX-License-Identifier: BSD-2-Clause
# Tide's build: plain GNU make.
#
#   make              one archive per part (lib/parts/libtide_PART.a, the
#                     parts and their order from scripts/layers.txt), the
#                     whole library lib/libtide.a and lib/libtide.so.X.Y.Z
#                     (with its links libtide.so.X and libtide.so), bin/tide
#                     (if src/cli has sources), bin/tided (if src/server has
#                     sources), their man pages build/man/tide.1, tided.8
#   make install      copy them to PREFIX (/usr/local) under DESTDIR, with
#                     tide.pc, the headers, the unit and the sample config
#                     (the install section says where); make uninstall
#                     removes them
#
# The build takes CPPFLAGS, CFLAGS and LDFLAGS from the environment or the
# command line (after its own), WERROR= (no -Werror) and REVISION=TEXT.
#   make test         install missing packages (install-deps --test), build,
#                     run the structure checks and every tests/test_*.c
#                     (quietly: the build's output in build/test-build.log,
#                     shown on a failure; V=1 shows it)
#   make check        build, run scripts/check-layers,
#                     scripts/check-functions and scripts/check-abi, then
#                     the tests, without the package step
#   make check-fast   build and run only the fast tier, $(FAST_TESTS): the
#                     unit tests that need no tided, no HTTP and no
#                     package step (under a minute; cmocka must be there)
#   make check-layers the includes, objects and ARCHITECTURE.md's diagram
#                     against scripts/layers.txt (after a build)
#   make check-functions  no function in src/ over 100 lines unlisted
#   make check-licence    every source file has its SPDX-License-Identifier line
#   make check-abi    libtide.so's ABI against scripts/libtide.abi (abidiff)
#   make abi-baseline write scripts/libtide.abi from this build's libtide.so
#   make asan         the tests under AddressSanitizer + UBSan (build/asan)
#   make tsan         the $(TSAN_TESTS) (concurrency, io_sim) under ThreadSanitizer
#   make bench        build, then bench/run-store, bench/peers, bench/http
#                     (wrk, nginx) and bench/archive (a Ceph cluster of
#                     its own)
#   make bench-http   build, then bench/http only
#   make bench-archive  build, then bench/archive only (the RADOS archive's
#                     uploads, reads and acknowledged writes)
#   make bench-peers  build build/bench/peers (Tide's store against LMDB and
#                     RocksDB; needs liblmdb-dev and librocksdb-dev) and run
#                     it with $(PEERS_ARGS) (default --items 1000000 --runs 3,
#                     and a cold phase in 64 MiB where root may make a
#                     memory cgroup); bench/growth runs the full curve
#   make run          install missing packages for building and running only
#                     (install-deps, no test packages), build (quietly: the
#                     output in build/run-build.log, shown on a failure;
#                     V=1 shows it), then start tided on ./data, 127.0.0.1:8080
#   make clean        remove build/, lib/, bin/
#   make format-check tabs, trailing blanks and CRLF in C sources
#   make fuzz         build the libFuzzer targets (clang) and run each for
#                     FUZZ_SECONDS (default 30), or its own budget
#                     (FUZZ_SECONDS_<target>, FUZZ_RUNS_<target>); see
#                     fuzz/README.md
#   make fuzz-build   only build them (build/fuzz)
#   make fuzz-seeds   regenerate fuzz/corpus/ from tests/fixtures/nudb
#
# A sanitizer build is this same Makefile run again with BUILD, OPT, SAN,
# LIBDIR and BINDIR set, so its objects never mix with the normal ones.
# Helpers: every tests/*.c not named test_*.c is linked into each test,
# but tests/http_helpers.c, which only the test_http_* binaries link.
# test_fuzz_regress also links the fuzz targets (fuzz/fuzz_*.c and the
# store targets' fuzz/store_run.c, built by $(CC) like the tests) to
# replay fuzz/corpus/ and fuzz/crashers/; test_server_work links tided's
# server objects (all but tided.c).
# Test selection: `make check TESTS="test_util test_format"`, or run
# tests/run-tests yourself with test names.

BUILD   ?= build
LIBDIR  ?= lib
# make ALLOC=jemalloc|tcmalloc|mimalloc links tided and tide against that
# Debian library (libjemalloc2, libtcmalloc-minimal4, libmimalloc2.0) into
# bin/$(ALLOC)/, leaving the glibc binaries in bin/ as they are. For
# jemalloc, src/mem/jemalloc_conf.c turns its background thread on.
ALLOC   ?=
BINDIR  ?= bin$(if $(ALLOC),/$(ALLOC))
OPT     ?= -O2
SAN     ?=

CC      ?= cc
AR      ?= ar

# The hardening a Debian package gets (dpkg-buildflags, hardening=+all),
# on every object and program here: the library, bin/tide, bin/tided, the
# ALLOC= builds and the tests. tests/test_build.c checks the programs with
# readelf. Stack canaries in every function with an array or an address
# taken; format strings checked; position-independent code and executables;
# the relocations read-only (RELRO) once resolved, all at startup (-z now).
# _FORTIFY_SOURCE=2 turns memcpy, snprintf, read and friends into their
# checked __*_chk forms where the object size is known; it needs -O1 or
# more (glibc warns, and -Werror fails, at -O0), so it is left out at -O0.
# It is left out of the sanitizer builds too: ASan and TSan intercept
# memcpy and the others by name, and their runtimes have no interceptor
# for most __*_chk forms, so fortified calls would escape the sanitizer
# (google/sanitizers issue 247; the ASan FAQ says to build with
# -U_FORTIFY_SOURCE). The sanitizers check those calls more closely than
# FORTIFY does. -U first: a compiler that defines it by default (Ubuntu's
# gcc sets 3) would otherwise warn that it is redefined.
HARDEN_CFLAGS  := -fstack-protector-strong -Wformat -Werror=format-security -fPIE
HARDEN_FORTIFY  = -U_FORTIFY_SOURCE $(if $(SAN)$(filter -O0,$(OPT)),,-D_FORTIFY_SOURCE=2)
HARDEN_LDFLAGS := -pie -Wl,-z,relro -Wl,-z,now

# Sanitizer and -O0 builds check the store's invariants always (store.h:
# tide_store_check, opts.check_invariants).
DEBUG_CHECKS = $(if $(SAN)$(filter -O0,$(OPT)),-DTIDE_DEBUG_CHECKS)
# The build's own flags are TIDE_CFLAGS and TIDE_LDFLAGS; the user's (or
# dpkg-buildflags') CPPFLAGS, CFLAGS and LDFLAGS, from the environment or
# the command line, come after them on every compile and link line, so
# theirs win where the compiler takes the last one (-O, -g, -f...). Ours
# keep what the code needs (-std=c11, -D_GNU_SOURCE, -pthread, -Iinclude
# -Isrc, searched before any -I of theirs). CFLAGS is on the link lines
# too, as automake does, so that -flto or -fsanitize in it links.
# -Werror is $(WERROR): development and CI keep it; a distribution's build
# passes WERROR= so that a newer compiler's new warning does not fail it.
WERROR  ?= -Werror
CPPFLAGS ?=
CFLAGS  ?=
LDFLAGS ?=
TIDE_CFLAGS = -std=c11 -D_GNU_SOURCE -Wall -Wextra $(WERROR) $(OPT) -g -pthread $(SAN) \
           $(HARDEN_CFLAGS) $(HARDEN_FORTIFY) $(DEBUG_CHECKS) -Iinclude -Isrc
TIDE_CFLAGS += $(EXTRA_CFLAGS)
DEPFLAGS = -MMD -MP
TIDE_LDFLAGS = -pthread $(SAN) $(HARDEN_LDFLAGS)
TIDE_LDFLAGS += $(EXTRA_LDFLAGS)
# One compile line and one link line for everything built here by $(CC).
# TIDE_LAST_CFLAGS is what an object needs whatever the user's flags say,
# after them (the library objects' -fPIC: a CFLAGS=-fPIE must not undo it).
COMPILE = $(CC) $(TIDE_CFLAGS) $(CPPFLAGS) $(CFLAGS) $(TIDE_LAST_CFLAGS)
LINK    = $(CC) $(TIDE_LDFLAGS) $(CFLAGS) $(LDFLAGS)

# The revision the programs report (tide_build_info on /metrics, the
# startup log): the short commit hash when this directory is the top of a
# git work tree, else "unknown"; a distribution's build, made from a
# tarball, passes REVISION=. Only src/node/metrics.c and src/server/tided.c
# see it (as -DTIDE_REVISION="..."), and they are rebuilt when it changes
# ($(BUILD)/revision), not everything (it is not in the flags stamp).
ifeq ($(origin REVISION),undefined)
REVISION := $(shell [ "$$(git -C . rev-parse --show-toplevel 2>/dev/null)" = "$(CURDIR)" ] && \
                git -C . rev-parse --short HEAD 2>/dev/null || echo unknown)
endif
# It goes into a C string through the shell: one word, no quotes, no '\'.
ifneq ($(words $(REVISION))$(findstring ',$(REVISION))$(findstring ",$(REVISION))$(findstring \,$(REVISION)),1)
$(error REVISION="$(REVISION)": expected one word without quotes or backslashes, e.g. 0.1.0-1 or a commit hash)
endif
# What libtide (the store) needs: its users link these and nothing more.
# The parts above it add their own (PART_LIBS_*, SERVER_LIBS).
LIBS    := -lxxhash -lpthread -lm
# librados (librados-dev) for the tests that talk to a Ceph cluster
# (tests/support/ceph.h), as needed only: a process that loads it carries
# about 3 MB more anonymous and 12 MB more file-backed RSS, which the other
# tests' memory figures must not include.
TEST_LIBS := -lcmocka -Wl,--push-state,--as-needed -lrados -Wl,--pop-state

ASAN_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# die_after_fork=0 (the tsan target): the reader tests fork writer processes,
# which start their commit threads after the fork.
# -Wno-tsan: gcc warns that ThreadSanitizer does not model the two full
# fences of tide.live's seqlock (live.c, reader.c). Readers in other
# processes are outside what TSan sees anyway; inside one process the seqlock
# words are atomics, which it does model.
TSAN_SAN := -fsanitize=thread -fno-omit-frame-pointer -Wno-tsan

# ---- sources (any of these directories may be empty or absent) ----------

ALLOC_LIB_jemalloc := -l:libjemalloc.so.2
ALLOC_LIB_tcmalloc := -l:libtcmalloc_minimal.so.4
ALLOC_LIB_mimalloc := -l:libmimalloc.so.2
ifneq ($(ALLOC),)
ifeq ($(ALLOC_LIB_$(ALLOC)),)
$(error ALLOC=$(ALLOC): expected jemalloc, tcmalloc or mimalloc)
endif
# --no-as-needed: nothing calls the library by name; it must stay in
# DT_NEEDED so that its malloc is found before libc's.
ALLOC_LIBS := -Wl,--no-as-needed $(ALLOC_LIB_$(ALLOC))
ALLOC_OBJS := $(if $(filter jemalloc,$(ALLOC)),$(BUILD)/obj/src/mem/jemalloc_conf.o)
comma := ,
ALLOC_LDFLAGS := $(if $(filter jemalloc,$(ALLOC)),-Wl$(comma)--export-dynamic-symbol=malloc_conf)
endif

# The parts, their order and what each uses come from scripts/layers.txt
# (the one table of the layers; scripts/check-layers checks the includes
# and docs/ARCHITECTURE.md's diagram against it). Each row becomes
# PART:BUILDS:USES..., e.g. "store:lib:io:util".
LAYERS      := scripts/layers.txt
HASH        := \#
LAYER_ROWS  := $(shell sed -e 's/$(HASH).*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$$//' \
                   -e '/^$$/d' -e 's/[[:space:]][[:space:]]*/:/g' $(LAYERS))
row_words    = $(subst :, ,$(1))
PARTS       := $(foreach r,$(LAYER_ROWS),$(firstword $(call row_words,$(r))))
$(foreach r,$(LAYER_ROWS),$(eval PART_BUILDS_$(word 1,$(call row_words,$(r))) := $(word 2,$(call row_words,$(r)))))
$(foreach r,$(LAYER_ROWS),$(eval PART_USES_$(word 1,$(call row_words,$(r))) := $(filter-out -,$(wordlist 3,999,$(call row_words,$(r))))))
ifeq ($(filter cli server util,$(PARTS)),)
$(error $(LAYERS): no parts read (expected lines "PART BUILDS USES..."))
endif
# LIB_PARTS: the parts in libtide (`lib`); ARCHIVE_PARTS: every part with
# an archive (`lib` and `internal`), what the programs and tests link.
LIB_PARTS   := $(foreach p,$(PARTS),$(if $(filter lib,$(PART_BUILDS_$(p))),$(p)))
ARCHIVE_PARTS := $(foreach p,$(PARTS),$(if $(filter lib internal,$(PART_BUILDS_$(p))),$(p)))
# part_closure: the parts $(1) use, directly or through others, and $(1).
part_closure = $(sort $(1) $(foreach p,$(1),$(call part_closure,$(PART_USES_$(p)))))
# part_archives: the archives of the lib and internal parts among $(1) and all they use,
# in the table's order (highest first), the order the linker needs.
part_archives = $(foreach p,$(ARCHIVE_PARTS),$(if $(filter $(p),$(call part_closure,$(1))),$(PART_A_$(p))))

# jemalloc_conf.c (mem) defines malloc_conf for the ALLOC=jemalloc programs
# only: in an archive nothing would pull it in, and in every program it
# would set jemalloc's options where jemalloc is not the allocator.
PART_ONLY_ALLOC := src/mem/jemalloc_conf.c
$(foreach p,$(PARTS),$(eval PART_SRCS_$(p) := $(filter-out $(PART_ONLY_ALLOC),$(sort $(wildcard src/$(p)/*.c)))))
$(foreach p,$(ARCHIVE_PARTS),$(eval PART_A_$(p) := $(LIBDIR)/parts/libtide_$(p).a))
PART_ARCHIVES := $(foreach p,$(ARCHIVE_PARTS),$(PART_A_$(p)))

LIB_SRCS    := $(foreach p,$(LIB_PARTS),$(PART_SRCS_$(p)))
ARCHIVE_SRCS := $(foreach p,$(ARCHIVE_PARTS),$(PART_SRCS_$(p)))
CLI_SRCS    := $(PART_SRCS_cli)
SERVER_SRCS := $(PART_SRCS_server)
# What bin/tide, bin/tided and the tests link, in link order. The tests
# may use every part; a test's own objects come first.
CLI_ARCHIVES    := $(call part_archives,$(PART_USES_cli))
SERVER_ARCHIVES := $(call part_archives,$(PART_USES_server))
TEST_ARCHIVES   := $(PART_ARCHIVES)
# The helpers of the tests of tided over HTTP (a tided process, a libcurl
# client, raw sockets, the shared server; a real Prometheus and the Grafana
# dashboard's queries run on it): linked into the test_http_* binaries only.
HTTP_SUPPORT_SRCS := tests/http_helpers.c tests/dashboard.c
# Every other tests/*.c (e.g. tests/helpers.c) and tests/support/*.c: helpers
# linked into every test binary.
SUPPORT_SRCS := $(sort $(filter-out tests/test_%.c $(HTTP_SUPPORT_SRCS),$(wildcard tests/*.c)) \
                       $(wildcard tests/support/*.c))
ALL_TESTS   := $(sort $(patsubst tests/%.c,%,$(wildcard tests/test_*.c)))
HTTP_TESTS  := $(filter test_http_%,$(ALL_TESTS))
TESTS       ?= $(ALL_TESTS)
# The fast tier (`make check-fast`): the unit tests a developer runs often,
# in under a minute on a 2-core machine. The rule for membership, measured
# on a built tree with `TEST_SMOKE=0 tests/run-tests NAME`: a binary is in
# when it starts no tided and speaks no HTTP, runs neither promtool nor
# Prometheus, preloads no allocator, kills no process in a loop (kill -9
# and failure-point sweeps), is no benchmark, and takes under 5 s alone
# (the slowest in, test_store_defer and test_cache_concurrency, about 4 s).
# Left out by that rule: test_archive_tools (a Ceph cluster, 17 s),
# test_bench, test_build, test_ceph_fixture (a Ceph cluster's daemons,
# 9 s), test_check_config,
# test_doctor, test_ghost, test_gens (19 s), test_gens_concurrency (6 s),
# test_http_*, test_lab, test_logs, test_mem, test_memory_limit,
# test_metrics, test_node_arena, test_rotation_kill9,
# test_store_durability, test_store_durability_crashes and
# test_store_durability_deferred (failure points), test_store_flush (6 s),
# test_store_keymap_rollbacks and test_store_keymap_deferred (twelve
# failed syncs a second apart, 13 s each), test_store_kill9,
# test_store_malformed_sampled (5 s) and test_store_malformed_truncated
# (6 s), test_store_rekey. A long
# binary's tests are split among several binaries built from its one
# source (a PARTS table in its main, a file of two lines per other part),
# so that each binary fits tests/run-tests' limit on a loaded machine.
# cmocka 1.1.5 filters tests
# only by one pattern (cmocka_set_skip_filter), which cannot name what a
# binary would have to leave out, so a binary is in or out whole.
FAST_TESTS := test_arena test_arena_concurrency test_cache test_cache_concurrency test_cli_progress \
              test_config test_fixtures test_format test_fuzz_regress test_gen_manifest test_gens_readers \
              test_harness test_io_sim test_mem_cgroup test_mem_overload test_mem_pressure test_node \
              test_node_concurrency test_node_memory test_node_rotate test_server_work test_store_check \
              test_store_commit_bytes test_store_concurrency test_store_defer test_store_errors \
              test_store_api test_store_holders test_store_keymap test_store_malformed test_store_model test_store_pool \
              test_store_readers test_store_splits test_store_tally test_store_verify test_systemd test_util
TSAN_TESTS  ?= $(strip $(foreach t,$(ALL_TESTS),$(if $(or $(findstring concurrency,$(t)),$(findstring io_sim,$(t))),$(t))))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

LIB_OBJS     := $(call obj,$(LIB_SRCS))
ARCHIVE_OBJS := $(call obj,$(ARCHIVE_SRCS))
CLI_OBJS     := $(call obj,$(CLI_SRCS))
SERVER_OBJS  := $(call obj,$(SERVER_SRCS))
SUPPORT_OBJS := $(call obj,$(SUPPORT_SRCS))
HTTP_SUPPORT_OBJS := $(call obj,$(HTTP_SUPPORT_SRCS))
TEST_OBJS    := $(patsubst %,$(BUILD)/obj/tests/%.o,$(TESTS))
TEST_BINS    := $(patsubst %,$(BUILD)/tests/%,$(TESTS))
DEPS := $(patsubst %.o,%.d,$(ARCHIVE_OBJS) $(CLI_OBJS) $(SERVER_OBJS) $(SUPPORT_OBJS) $(HTTP_SUPPORT_OBJS) $(TEST_OBJS))

# The fuzz targets (fuzz/<name>.c, each defining <name>_one). fuzz_http
# also links tided's sources but the one with main (tided.c) and h2o; the
# two store targets link the run they share (fuzz/store_run.c).
FUZZ_TARGETS := fuzz_headers fuzz_bucket fuzz_store_image fuzz_store_script fuzz_http
FUZZ_SHARED  := fuzz/store_run.c
FUZZ_REGRESS_OBJS := $(call obj,$(patsubst %,fuzz/%.c,$(FUZZ_TARGETS)) $(FUZZ_SHARED))
FUZZ_SERVER_SRCS := $(filter-out src/server/tided.c,$(SERVER_SRCS))
DEPS += $(patsubst %.o,%.d,$(FUZZ_REGRESS_OBJS))

LIBTIDE := $(LIBDIR)/libtide.a
PROGS   := $(if $(CLI_SRCS),$(BINDIR)/tide) $(if $(SERVER_SRCS),$(BINDIR)/tided)

# The shared library's version is the one of include/tide/version.h (its
# three numbers); its SONAME carries the major number only, the ABI's: a
# program linked against libtide.so.1 runs against any libtide.so.1.x.y.
VERSION_H   := include/tide/version.h
version_num  = $(shell sed -n 's/^$(HASH)define TIDE_VERSION_$(1)[[:space:]][[:space:]]*\([0-9][0-9]*\).*/\1/p' $(VERSION_H))
SO_MAJOR    := $(call version_num,MAJOR)
SO_VERSION  := $(SO_MAJOR).$(call version_num,MINOR).$(call version_num,PATCH)
ifeq ($(words $(subst ., ,$(SO_VERSION))),3)
else
$(error $(VERSION_H): TIDE_VERSION_MAJOR, _MINOR and _PATCH not read (got "$(SO_VERSION)"))
endif
SONAME      := libtide.so.$(SO_MAJOR)
LIBTIDE_SO  := $(LIBDIR)/libtide.so.$(SO_VERSION)
LIBTIDE_SO_LINKS := $(LIBDIR)/$(SONAME) $(LIBDIR)/libtide.so
LIBTIDE_MAP := scripts/libtide.map

# The man pages, made from the programs' own --help texts (scripts/gen-man)
# so that they cannot disagree with them. `make` builds them except in an
# ALLOC= or sanitizer build (their programs print the same texts, and a
# sanitizer's leak report at exit would fail the generator); `make install`
# builds them in every variant (INSTALL_MANPAGES, a prerequisite).
MANDIR_BUILD := $(BUILD)/man
INSTALL_MANPAGES := $(if $(CLI_SRCS),$(MANDIR_BUILD)/tide.1) $(if $(SERVER_SRCS),$(MANDIR_BUILD)/tided.8)
MANPAGES := $(if $(ALLOC)$(SAN),,$(INSTALL_MANPAGES))

# bench/peers: a benchmark program outside the library and the programs
# (never in lib/, bin/ or the packages), so that libtide's users never
# depend on LMDB or RocksDB. It links the bench part's closure, the two
# libraries and jansson (its JSON report); `make check` builds it when both headers are installed
# (install-deps --test or --bench), for tests/peers-smoke, which skips
# saying so otherwise. Not in the sanitizer builds: RocksDB's threads are
# not instrumented, so TSan would report what it cannot see; the smoke
# test skips there (TIDE_PEERS_SKIP says why).
PEERS_SRCS := $(sort $(wildcard bench/peers/*.c))
PEERS_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(PEERS_SRCS))
PEERS_BIN  := $(BUILD)/bench/peers
PEERS_LIBS := -llmdb -lrocksdb -ljansson
PEERS_HAVE := $(if $(SAN),,$(and $(wildcard /usr/include/lmdb.h),$(wildcard /usr/include/rocksdb/c.h)))
# The cold phase (a store four times larger than its memory: 1M items of
# Tide's are about 240 MiB on disk) needs root and a v1 memory cgroup; the
# short run leaves it out where those are missing.
PEERS_COLD ?= $(shell [ -w /sys/fs/cgroup/memory ] && echo --cold-memory 64MiB --cold-fetches 20000)
PEERS_ARGS ?= --items 1000000 --runs 3 $(PEERS_COLD)
DEPS += $(PEERS_OBJS:.o=.d)

# What the tests see in their environment (run from the repo root).
TEST_ENV := TIDE_FIXTURES='$(CURDIR)/tests/fixtures/nudb' \
            TIDE_PEERS_BIN='$(abspath $(PEERS_BIN))' \
            $(if $(SAN),TIDE_PEERS_SKIP='a sanitizer build does not build bench/peers') \
            TIDE_BIN_DIR='$(abspath $(BINDIR))' \
            TEST_BINDIR='$(abspath $(BUILD)/tests)'

.PHONY: FORCE all tests test check check-build check-fast check-layers check-functions check-licence check-abi abi-baseline asan tsan bench bench-http bench-peers bench-archive run deps deps-test clean format-check alloc-jemalloc
.PHONY: fuzz fuzz-build fuzz-bins fuzz-deps fuzz-seeds
.DEFAULT_GOAL := all

all: $(LIBTIDE) $(LIBTIDE_SO) $(LIBTIDE_SO_LINKS) $(PART_ARCHIVES) $(PROGS) $(MANPAGES)

# ---- compile and link ----------------------------------------------------

# $(BUILD)/flags holds the compiler, the flags and the link flags of the
# last build in $(BUILD); it is rewritten only when they change, and every
# object and program depends on it, so a change of flags (a new hardening
# flag, OPT=-O0, EXTRA_CFLAGS) rebuilds everything instead of linking old
# objects built without it.
FLAGS_STAMP := $(BUILD)/flags
# The per-object additions are in it too (they are `private`, below).
LIB_OBJ_CFLAGS    := -fPIC -fno-semantic-interposition
SERVER_OBJ_CFLAGS := -DH2O_USE_LIBUV=0
FLAGS_NOW   := $(COMPILE) | $(LINK) | $(LIB_OBJ_CFLAGS) | $(SERVER_OBJ_CFLAGS)
$(FLAGS_STAMP): FORCE
	@mkdir -p $(@D)
	@if [ "$$(cat $@ 2>/dev/null)" != '$(FLAGS_NOW)' ]; then echo '$(FLAGS_NOW)' > $@; fi
FORCE:

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(COMPILE) $(DEPFLAGS) -c $< -o $@

# The per-object flags below are `private`: a target-specific variable is
# otherwise inherited by the target's prerequisites, and $(FLAGS_STAMP),
# one of them, would record whichever object's flags reached it first.
#
# The revision reaches the two files that report it; they depend on
# $(REVISION_STAMP), rewritten only when the revision changes.
REVISION_STAMP := $(BUILD)/revision
REVISION_OBJS  := $(call obj,src/node/metrics.c src/server/tided.c)
$(REVISION_STAMP): FORCE
	@mkdir -p $(@D)
	@if [ "$$(cat $@ 2>/dev/null)" != '$(REVISION)' ]; then echo '$(REVISION)' > $@; fi
$(REVISION_OBJS): $(REVISION_STAMP)
$(REVISION_OBJS): private TIDE_CFLAGS += -DTIDE_REVISION='"$(REVISION)"'

# The library's objects are position-independent code (-fPIC, after
# HARDEN_CFLAGS' -fPIE and after the user's CFLAGS, so it wins over a
# -fPIE in either, as a dpkg-buildflags with hardening may give): one compile of each serves the part
# archives, lib/libtide.a and lib/libtide.so. -fPIE code cannot go into a
# shared object (it assumes its global symbols resolve within the module:
# the link fails on its PC-relative references to them), and a second,
# -fPIC-only set of objects would double the build. In the programs, which
# link the archives into a PIE, -fPIC costs little: the linker turns their
# GOT loads of symbols the program defines back into direct addresses.
# -fno-semantic-interposition keeps what -fPIE allowed: a call to a global
# function of the same file may be inlined (under plain -fPIC gcc must
# assume an LD_PRELOAD replaces it). For libtide.so that means a preloaded
# tide_* replaces the programs' calls to it, never the library's own.
$(LIB_OBJS): private TIDE_LAST_CFLAGS += $(LIB_OBJ_CFLAGS)

# lib/libtide.a is the whole library in one archive, for a program outside
# the tree (fuzz/make-seeds.c is one); the programs and the tests link the
# part archives instead, in the table's order.
$(LIBTIDE): $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

# lib/libtide.so.X.Y.Z: the same objects as one shared library for
# programs outside the tree (pkg-config tide). It exports the functions
# include/tide/*.h declares only (scripts/libtide.map lists them; the
# parts' other tide_*, the ti_* and the rest stay inside), and
# records every library it uses (--no-undefined, so a missing one fails
# here, not in the program that loads it). Relocations are read-only and
# resolved at load (-z relro -z now), as in the programs. The programs
# here never link it: they link the part archives.
SO_LDFLAGS = -shared -Wl,-soname,$(SONAME) -Wl,--version-script=$(LIBTIDE_MAP) \
             -Wl,--no-undefined -pthread $(SAN) -Wl,-z,relro -Wl,-z,now $(EXTRA_LDFLAGS)
$(LIBTIDE_SO): $(LIB_OBJS) $(LIBTIDE_MAP) $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(SO_LDFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $(LIB_OBJS) $(call part_libs,$(LIB_PARTS)) $(LIBS)

# libtide.so.1 (the SONAME, what the loader looks for) and libtide.so
# (what -ltide finds at link time), both relative symbolic links.
$(LIBTIDE_SO_LINKS): $(LIBTIDE_SO)
	ln -sf $(notdir $(LIBTIDE_SO)) $@

# The man pages: remade when the program (so its --help) or the generator
# changes.
GEN_MAN := scripts/gen-man scripts/help2roff.awk
$(MANDIR_BUILD)/tide.1: $(BINDIR)/tide $(GEN_MAN)
	@mkdir -p $(@D)
	bash scripts/gen-man tide $(BINDIR)/tide $@
$(MANDIR_BUILD)/tided.8: $(BINDIR)/tided $(GEN_MAN)
	@mkdir -p $(@D)
	bash scripts/gen-man tided $(BINDIR)/tided $@

# One archive per lib or internal part (an empty one for a part with no sources yet).
$(foreach p,$(ARCHIVE_PARTS),$(eval $(PART_A_$(p)): $(call obj,$(PART_SRCS_$(p)))))
$(PART_ARCHIVES):
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(BINDIR)/tide: $(CLI_OBJS) $(ALLOC_OBJS) $(CLI_ARCHIVES) $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(LINK) $(ALLOC_LDFLAGS) -o $@ $(CLI_OBJS) $(ALLOC_OBJS) $(CLI_ARCHIVES) $(LIBS) $(CLI_LIBS) $(ALLOC_LIBS)

# The system libraries a part needs beyond $(LIBS), linked into every
# program and test that links the part: the client part speaks HTTP with
# libcurl (libcurl4-openssl-dev), for tide doctor and the lab's clients,
# and reads JSON with jansson, as the lab does.
PART_LIBS_client := -lcurl -ljansson
PART_LIBS_lab    := -ljansson
# The archive talks to Ceph RADOS through librados (librados-dev: its
# header), which src/archive/rados.c loads with dlopen at the first
# connection, so nothing that leaves the archive off maps it; it writes its
# manifest as JSON with jansson.
PART_LIBS_archive := -ljansson
part_libs = $(sort $(foreach p,$(call part_closure,$(1)),$(PART_LIBS_$(p))))
CLI_LIBS  := $(call part_libs,$(PART_USES_cli))

$(BINDIR)/tided: $(SERVER_OBJS) $(ALLOC_OBJS) $(SERVER_ARCHIVES) $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(LINK) $(ALLOC_LDFLAGS) -o $@ $(SERVER_OBJS) $(ALLOC_OBJS) $(SERVER_ARCHIVES) $(LIBS) $(SERVER_LIBS) $(ALLOC_LIBS)

# tided is built on h2o's library with its own event loop (Debian's
# libh2o-evloop-dev): its headers need H2O_USE_LIBUV=0, and the shared
# library brings its own dependencies (OpenSSL, zlib, wslay).
SERVER_LIBS := -lh2o-evloop -lsystemd -ljansson $(call part_libs,$(PART_USES_server))
$(SERVER_OBJS): private TIDE_CFLAGS += $(SERVER_OBJ_CFLAGS)
# The tests may use every part, so they link every part's libraries.
TEST_LIBS += $(call part_libs,$(ARCHIVE_PARTS))

$(TEST_BINS): $(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(SUPPORT_OBJS) $(TEST_ARCHIVES) $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(LINK) -o $@ $< $(TEST_EXTRA_OBJS) $(SUPPORT_OBJS) $(TEST_ARCHIVES) $(TEST_LIBS) $(LIBS)

# Extra objects of one test (empty for the others): test_fuzz_regress
# replays fuzz_http too, so it links tided's server objects and h2o.
$(BUILD)/tests/test_fuzz_regress: $(FUZZ_REGRESS_OBJS) $(call obj,$(FUZZ_SERVER_SRCS))
$(BUILD)/tests/test_fuzz_regress: TEST_EXTRA_OBJS = $(FUZZ_REGRESS_OBJS) $(call obj,$(FUZZ_SERVER_SRCS))
$(BUILD)/tests/test_fuzz_regress: TEST_LIBS += $(SERVER_LIBS)
$(call obj,fuzz/fuzz_http.c): private TIDE_CFLAGS += $(SERVER_OBJ_CFLAGS)
# The test_http_* binaries link the HTTP helpers (tests/http_helpers.c).
$(patsubst %,$(BUILD)/tests/%,$(HTTP_TESTS)): $(HTTP_SUPPORT_OBJS)
$(patsubst %,$(BUILD)/tests/%,$(HTTP_TESTS)): TEST_EXTRA_OBJS = $(HTTP_SUPPORT_OBJS)

# test_server_work starts tided's worker threads: it links the same server
# objects and includes server.h (h2o's headers).
$(BUILD)/tests/test_server_work: $(call obj,$(FUZZ_SERVER_SRCS))
$(BUILD)/tests/test_server_work: TEST_EXTRA_OBJS = $(call obj,$(FUZZ_SERVER_SRCS))
$(BUILD)/tests/test_server_work: TEST_LIBS += $(SERVER_LIBS)
$(BUILD)/obj/tests/test_server_work.o: private TIDE_CFLAGS += $(SERVER_OBJ_CFLAGS)
# test_cli_progress tests the CLI's progress line, which is in no archive
# (src/cli builds bin/tide only): it links those objects.
CLI_PROGRESS_TEST_OBJS := $(call obj,src/cli/cli_progress.c src/cli/cli.c src/cli/cli_store.c)
$(BUILD)/tests/test_cli_progress: $(CLI_PROGRESS_TEST_OBJS)
$(BUILD)/tests/test_cli_progress: TEST_EXTRA_OBJS = $(CLI_PROGRESS_TEST_OBJS)

tests: $(TEST_BINS)

$(PEERS_BIN): $(PEERS_OBJS) $(call part_archives,bench) $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(LINK) -o $@ $(PEERS_OBJS) $(call part_archives,bench) $(PEERS_LIBS) $(LIBS)

# ---- tests ---------------------------------------------------------------

# The package step runs first, alone; the build and the run follow it.
# `make run` installs what building and running need; the tests' packages
# (cmocka, the allocators, promtool and the Prometheus server, which come
# together in Debian's prometheus) only `make test`, asan and tsan install.
deps:
	bash scripts/install-deps

deps-test:
	bash scripts/install-deps --test

# $(call quiet_make,VERB,TARGET,LOG): make TARGET with its lines in LOG,
# shown (the last 40) only when it fails, so that the screen holds what
# follows the build (the tests' progress lines, tided's startup log);
# V=1 shows them as they come. The `+` before a call marks the line as
# a recursive make, as $(MAKE) written out would.
quiet_make = mkdir -p $(BUILD); \
	if [ -n "$(V)" ]; then $(MAKE) --no-print-directory $(2); \
	else echo "make $(1): building (the compiler's lines and any checks go to $(3); V=1 shows them)"; \
	    $(MAKE) --no-print-directory $(2) >$(3) 2>&1 || { tail -n 40 $(3); \
	    echo "make $(1): the build failed; its whole output is in $(3)"; exit 1; }; \
	    echo "make $(1): built"; fi

# The tests run on a line of their own, which `make -n test` only prints.
TEST_LOG := $(BUILD)/test-build.log
test: deps-test
	+@$(call quiet_make,test,check-build,$(TEST_LOG))
	@$(TEST_ENV) bash tests/run-tests $(TESTS)

# The jemalloc build of tided too (bin/jemalloc/), for the test that its
# startup log proves malloc_conf took effect; not in sanitizer builds, whose
# own allocator must come first.
check-build: all tests check-layers check-functions check-licence $(if $(SAN),,alloc-jemalloc check-abi) \
       $(if $(PEERS_HAVE),$(PEERS_BIN))

check: check-build
	$(TEST_ENV) bash tests/run-tests $(TESTS)

# The fast tier: builds what $(FAST_TESTS) need (their binaries and
# bin/tide, which some run) and runs them, without the package step, the
# smoke scripts or the structure checks. A missing cmocka is said at once.
check-fast:
	@printf '#include <stdarg.h>\n#include <stddef.h>\n#include <setjmp.h>\n#include <cmocka.h>\nint main(void) { return 0; }\n' \
	    | $(CC) -x c - -o /dev/null -lcmocka >/dev/null 2>&1 \
	    || { echo "check-fast: cmocka (libcmocka-dev) is missing; install it with scripts/install-deps --test"; exit 1; }
	@$(MAKE) --no-print-directory $(patsubst %,$(BUILD)/tests/%,$(FAST_TESTS)) $(if $(CLI_SRCS),$(BINDIR)/tide)
	$(TEST_ENV) TEST_SMOKE=0 bash tests/run-tests $(FAST_TESTS)

# The structure checks, before any test runs: the includes, the diagram in
# docs/ARCHITECTURE.md and the objects' symbols against scripts/layers.txt,
# and no function over 100 lines but those scripts/long-functions.txt lists.
check-layers: $(PART_ARCHIVES) $(PROGS)
	python3 scripts/check-layers --objects $(BUILD)

check-functions:
	python3 scripts/check-functions

# libtide.so's ABI against the committed baseline (scripts/check-abi says
# what it compares and what to do when it differs). Not in a sanitizer
# build, whose library is instrumented and never installed.
check-abi: $(LIBTIDE_SO)
	bash scripts/check-abi $(LIBTIDE_SO)

# Writes the baseline from this build's library: after adding a function,
# or after raising TIDE_VERSION_MAJOR for an incompatible change.
abi-baseline: $(LIBTIDE_SO)
	bash scripts/check-abi --update $(LIBTIDE_SO)

# Every source file carries the one-line SPDX header of LICENSE (BSD-2-Clause).
check-licence:
	python3 scripts/check-licence

alloc-jemalloc: all
	@$(MAKE) --no-print-directory ALLOC=jemalloc all

# A sanitizer build runs about three times slower: one binary gets 45
# minutes there (tests/run-tests' TEST_TIMEOUT, 15 by default), which the
# failure-point tests of test_store_durability needed on a loaded machine
# before they were split among three binaries.
asan: deps-test
	@TEST_TIMEOUT=$${TEST_TIMEOUT:-2700} $(MAKE) --no-print-directory BUILD=build/asan LIBDIR=build/asan/lib \
	    BINDIR=build/asan/bin OPT=-O1 SAN='$(ASAN_SAN)' check

tsan: deps-test
ifeq ($(strip $(TSAN_TESTS)),)
	@echo "tsan: no test name contains 'concurrency' yet; nothing to run"
else
	@TSAN_OPTIONS="die_after_fork=0 suppressions=$(CURDIR)/tests/tsan.supp $$TSAN_OPTIONS" TEST_TIMEOUT=$${TEST_TIMEOUT:-2700} $(MAKE) --no-print-directory \
	    BUILD=build/tsan LIBDIR=build/tsan/lib BINDIR=build/tsan/bin OPT=-O1 \
	    SAN='$(TSAN_SAN)' TESTS='$(TSAN_TESTS)' check
endif

# ---- install -------------------------------------------------------------
#
# make install [PREFIX=/usr/local] [DESTDIR=] [bindir=... sbindir=... ...]
# copies what `make` built (it builds first; it never runs the tests) to
# the GNU directories below, under DESTDIR (a staging root, as a package
# build uses; empty for the real one); sysconfdir is /etc for PREFIX=/usr. make uninstall removes those files
# again. A distribution passes its own: Debian's rules pass PREFIX=/usr,
# sysconfdir=/etc, unitdir=/lib/systemd/system and libdir with its
# multiarch triplet. The LIBDIR and BINDIR above are the build's output
# directories, not these.
#
# The unit (contrib/systemd/tided.service) and the sample config
# (contrib/tide.cfg) are installed when the tree has them. The config is
# the operator's file once installed: an existing one that differs from the
# sample is kept, and the new sample goes beside it as tide.cfg.new
# (uninstall removes the config only when it is still the sample).
#
# Everything install copies is a prerequisite (the man pages too, in an
# ALLOC= build), so a failure to build any of it fails before the first
# file is copied. An install to the real root (DESTDIR empty) ends with
# $(LDCONFIG) (ldconfig: the loader's cache, without which a program linked
# with -ltide does not find libtide.so.1 in /usr/local/lib), and so does
# uninstall; a staging install (DESTDIR set) does not: the package's own
# trigger runs it on the target. LDCONFIG= skips it. When it fails (not
# root) the install says so and what to run, and still succeeds.
PREFIX      ?= /usr/local
DESTDIR     ?=
bindir      ?= $(PREFIX)/bin
sbindir     ?= $(PREFIX)/sbin
libdir      ?= $(PREFIX)/lib
includedir  ?= $(PREFIX)/include
pkgconfigdir ?= $(libdir)/pkgconfig
mandir      ?= $(PREFIX)/share/man
# /usr's configuration lives in /etc, not /usr/etc (as Meson and the FHS
# have it): the sample config and the unit's --config name /etc/tide for
# PREFIX=/usr; any other PREFIX keeps its own etc (/usr/local/etc).
sysconfdir  ?= $(if $(filter /usr /usr/,$(PREFIX)),/etc,$(PREFIX)/etc)
unitdir     ?= $(PREFIX)/lib/systemd/system
INSTALL     ?= install
LDCONFIG    ?= ldconfig

PUBLIC_HEADERS := include/tide/store.h include/tide/error.h include/tide/version.h \
                  include/tide/log.h
UNIT_FILE   := contrib/systemd/tided.service
SAMPLE_CFG  := contrib/tide.cfg
PC_FILE     := $(BUILD)/tide.pc
# The unit names the Debian paths (/usr/sbin/tided, /etc/tide/...); an
# install elsewhere gets its own sbindir and sysconfdir in them (Debian's
# are the same paths, so its unit is installed unchanged).
UNIT_SED    := -e 's|/usr/sbin/tided|$(sbindir)/tided|g' -e 's|/etc/tide/|$(sysconfdir)/tide/|g'
D := $(DESTDIR)
# ldconfig after an install to the real root only (see above).
RUN_LDCONFIG = @if [ -z "$(DESTDIR)" ] && [ -n "$(LDCONFIG)" ]; then \
    echo "$(LDCONFIG)"; $(LDCONFIG) || \
    echo "install: $(LDCONFIG) failed; run it as root, or programs will not find $(SONAME) in $(libdir)"; fi

.PHONY: install uninstall

# tide.pc with this install's directories; libdir and includedir as
# ${prefix}/... when under PREFIX, so pkg-config --define-prefix can move
# them. Remade on every install (the directories are make variables).
$(PC_FILE): tide.pc.in FORCE
	@mkdir -p $(@D)
	sed -e 's|@prefix@|$(PREFIX)|' \
	    -e 's|@libdir@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(libdir))|' \
	    -e 's|@includedir@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(includedir))|' \
	    -e 's|@version@|$(SO_VERSION)|' -e '/^$(HASH)/d' $< > $@

install: all $(PC_FILE) $(INSTALL_MANPAGES)
	$(INSTALL) -d $(D)$(bindir) $(D)$(sbindir) $(D)$(libdir) $(D)$(pkgconfigdir) \
	    $(D)$(includedir)/tide $(D)$(mandir)/man1 $(D)$(mandir)/man8
	$(INSTALL) -m 755 $(BINDIR)/tide $(D)$(bindir)/tide
	$(INSTALL) -m 755 $(BINDIR)/tided $(D)$(sbindir)/tided
	$(INSTALL) -m 644 $(LIBTIDE) $(D)$(libdir)/libtide.a
	$(INSTALL) -m 644 $(LIBTIDE_SO) $(D)$(libdir)/$(notdir $(LIBTIDE_SO))
	ln -sfn $(notdir $(LIBTIDE_SO)) $(D)$(libdir)/$(SONAME)
	ln -sfn $(notdir $(LIBTIDE_SO)) $(D)$(libdir)/libtide.so
	$(INSTALL) -m 644 $(PUBLIC_HEADERS) $(D)$(includedir)/tide/
	$(INSTALL) -m 644 $(PC_FILE) $(D)$(pkgconfigdir)/tide.pc
	$(INSTALL) -m 644 $(MANDIR_BUILD)/tide.1 $(D)$(mandir)/man1/tide.1
	$(INSTALL) -m 644 $(MANDIR_BUILD)/tided.8 $(D)$(mandir)/man8/tided.8
	@if [ -f $(UNIT_FILE) ]; then \
	    echo "sed $(UNIT_SED) $(UNIT_FILE) > $(BUILD)/tided.service"; \
	    sed $(UNIT_SED) $(UNIT_FILE) > $(BUILD)/tided.service && \
	    echo "$(INSTALL) -D -m 644 $(BUILD)/tided.service $(D)$(unitdir)/tided.service" && \
	    $(INSTALL) -D -m 644 $(BUILD)/tided.service $(D)$(unitdir)/tided.service; \
	else echo "install: no $(UNIT_FILE) in this tree; not installed"; fi
	@if [ ! -f $(SAMPLE_CFG) ]; then \
	    echo "install: no $(SAMPLE_CFG) in this tree; not installed"; \
	elif [ -f $(D)$(sysconfdir)/tide/tide.cfg ] && \
	     ! cmp -s $(SAMPLE_CFG) $(D)$(sysconfdir)/tide/tide.cfg; then \
	    echo "$(INSTALL) -D -m 644 $(SAMPLE_CFG) $(D)$(sysconfdir)/tide/tide.cfg.new"; \
	    $(INSTALL) -D -m 644 $(SAMPLE_CFG) $(D)$(sysconfdir)/tide/tide.cfg.new; \
	    echo "install: kept $(D)$(sysconfdir)/tide/tide.cfg (it differs from the sample); the sample is tide.cfg.new"; \
	else \
	    echo "$(INSTALL) -D -m 644 $(SAMPLE_CFG) $(D)$(sysconfdir)/tide/tide.cfg"; \
	    $(INSTALL) -D -m 644 $(SAMPLE_CFG) $(D)$(sysconfdir)/tide/tide.cfg; \
	fi
	$(RUN_LDCONFIG)

# Only what install puts there; the directories go only when left empty
# (tide/ ones, which are Tide's own).
uninstall:
	rm -f $(D)$(bindir)/tide $(D)$(sbindir)/tided
	rm -f $(D)$(libdir)/libtide.a $(D)$(libdir)/$(notdir $(LIBTIDE_SO)) \
	    $(D)$(libdir)/$(SONAME) $(D)$(libdir)/libtide.so
	rm -f $(addprefix $(D)$(includedir)/tide/,$(notdir $(PUBLIC_HEADERS)))
	rm -f $(D)$(pkgconfigdir)/tide.pc
	rm -f $(D)$(mandir)/man1/tide.1 $(D)$(mandir)/man8/tided.8
	rm -f $(D)$(unitdir)/tided.service $(D)$(sysconfdir)/tide/tide.cfg.new
	@if [ -f $(D)$(sysconfdir)/tide/tide.cfg ] && [ -f $(SAMPLE_CFG) ] && \
	    cmp -s $(SAMPLE_CFG) $(D)$(sysconfdir)/tide/tide.cfg; then \
	    echo "rm -f $(D)$(sysconfdir)/tide/tide.cfg"; rm -f $(D)$(sysconfdir)/tide/tide.cfg; \
	elif [ -f $(D)$(sysconfdir)/tide/tide.cfg ]; then \
	    echo "uninstall: kept $(D)$(sysconfdir)/tide/tide.cfg (not the sample: the operator's)"; fi
	rmdir $(D)$(includedir)/tide $(D)$(sysconfdir)/tide 2>/dev/null || true
	$(RUN_LDCONFIG)

# ---- running -------------------------------------------------------------

bench: all
	bash scripts/install-deps --bench
	bash bench/run-store
	@$(MAKE) --no-print-directory $(PEERS_BIN)
	$(PEERS_BIN) $(PEERS_ARGS)
	bash bench/http
	bash bench/archive

# Tide's store against LMDB and RocksDB (bench/peers --help says how).
bench-peers: all
	bash scripts/install-deps --bench
	@$(MAKE) --no-print-directory $(PEERS_BIN)
	$(PEERS_BIN) $(PEERS_ARGS)

# Only tided against nginx (bench/http); see the script for its knobs.
bench-http: all
	bash scripts/install-deps --bench
	bash bench/http

# Only the archive against a cluster of its own (bench/archive); see the
# script for its knobs (SIZE, RUNS, KEYS, PUTS, INFLIGHT).
bench-archive: all
	bash scripts/install-deps --bench
	bash bench/archive

# tided creates ./data with an empty store on its first run. The build is
# quiet (quiet_make), so that tided's startup log, the checklist README.md
# points to, is what the screen shows.
RUN_LOG := $(BUILD)/run-build.log
run: deps
	+@$(call quiet_make,run,all,$(RUN_LOG))
	@echo "make run: tided's startup log follows: every setting and where it came from"
	exec $(BINDIR)/tided --data-dir ./data --listen 127.0.0.1:8080

clean:
	rm -rf build lib bin

# ---- fuzzing (clang + libFuzzer; never part of `make test`) --------------
#
# Each target is built from its fuzz/<name>.c, the libFuzzer shim
# (fuzz/libfuzzer_shim.c with -DFUZZ_ONE=<name>_one) and the library's
# sources, all compiled by clang with the same sanitizer flags into
# build/fuzz (never lib/libtide.a, which gcc built). A run keeps what it
# learns in build/fuzz/corpus/<name> (libFuzzer writes new inputs to the
# first directory it is given), reads the seeds in fuzz/corpus/<name>, and
# writes crashers to fuzz/crashers/<name>/, which `make test` replays.

FUZZ_SECONDS ?= 30
FUZZ_CC      ?= clang
FUZZ_FLAGS   ?=
FUZZ_BUILD   := build/fuzz
FUZZ_SAN     := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
                -fno-omit-frame-pointer
FUZZ_CFLAGS  := -std=c11 -D_GNU_SOURCE -Wall -Wextra $(WERROR) -O1 -g -pthread $(FUZZ_SAN) \
                -Iinclude -Isrc -Ifuzz
FUZZ_LIB_OBJS := $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(ARCHIVE_SRCS))
FUZZ_SERVER_OBJS := $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(FUZZ_SERVER_SRCS))
FUZZ_TGT_OBJS := $(patsubst %,$(FUZZ_BUILD)/obj/fuzz/%.o,$(FUZZ_TARGETS))
FUZZ_SHARED_OBJS := $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(FUZZ_SHARED))
FUZZ_SHIM_OBJS := $(patsubst %,$(FUZZ_BUILD)/obj/fuzz/shim_%.o,$(FUZZ_TARGETS))
FUZZ_BINS    := $(patsubst %,$(FUZZ_BUILD)/%,$(FUZZ_TARGETS))
FUZZ_DEPS    := $(patsubst %.o,%.d,$(FUZZ_LIB_OBJS) $(FUZZ_SERVER_OBJS) $(FUZZ_TGT_OBJS) \
                $(FUZZ_SHARED_OBJS) $(FUZZ_SHIM_OBJS))

fuzz-deps:
	bash scripts/install-deps --fuzz

fuzz-build: fuzz-deps
	@$(MAKE) --no-print-directory fuzz-bins

fuzz-bins: $(FUZZ_BINS)

# Static pattern rules only: make never chains them to remake a missing .d.
$(FUZZ_SHIM_OBJS): $(FUZZ_BUILD)/obj/fuzz/shim_%.o: fuzz/libfuzzer_shim.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(DEPFLAGS) -DFUZZ_ONE=$*_one -c $< -o $@

$(FUZZ_LIB_OBJS) $(FUZZ_SERVER_OBJS) $(FUZZ_TGT_OBJS) $(FUZZ_SHARED_OBJS): $(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(DEPFLAGS) -c $< -o $@

# tided's sources and the target that drives them see h2o's headers as
# tided does; the target links h2o and them.
$(FUZZ_SERVER_OBJS) $(FUZZ_BUILD)/obj/fuzz/fuzz_http.o: FUZZ_CFLAGS += -DH2O_USE_LIBUV=0
$(FUZZ_BUILD)/fuzz_http: $(FUZZ_SERVER_OBJS)
$(FUZZ_BUILD)/fuzz_http: FUZZ_TARGET_LIBS = $(SERVER_LIBS)
$(FUZZ_BUILD)/fuzz_store_image $(FUZZ_BUILD)/fuzz_store_script: $(FUZZ_BUILD)/obj/fuzz/store_run.o

# The targets link every library object, so every part's libraries too.
$(FUZZ_BINS): $(FUZZ_BUILD)/%: $(FUZZ_BUILD)/obj/fuzz/%.o $(FUZZ_BUILD)/obj/fuzz/shim_%.o $(FUZZ_LIB_OBJS)
	$(FUZZ_CC) $(FUZZ_SAN) -pthread -o $@ $^ $(FUZZ_TARGET_LIBS) $(call part_libs,$(ARCHIVE_PARTS)) $(LIBS)

# A target's own budget: FUZZ_SECONDS_<target> (default FUZZ_SECONDS) caps
# its time, and FUZZ_RUNS_<target> (default none) ends it after that many
# executions, e.g. CI's FUZZ_RUNS_fuzz_store_image=1000000 with
# FUZZ_SECONDS_fuzz_store_image=900 (.ci/run). The shell loop reads them as
# target:seconds:runs.
FUZZ_BUDGETS = $(foreach t,$(FUZZ_TARGETS),$(t):$(or $(FUZZ_SECONDS_$(t)),$(FUZZ_SECONDS)):$(FUZZ_RUNS_$(t)))

# AddressSanitizer's options for the runs (fuzz/README.md, "Speed"): a
# quarantine of 8 MiB (default 256) and a per-thread one of 64 KiB (default
# 1 MiB) keep freed memory in fewer, warm pages. The user's ASAN_OPTIONS
# come after them, so any of them can be set back.
FUZZ_ASAN_OPTIONS ?= quarantine_size_mb=8:thread_local_quarantine_size_kb=64

# Run every target, even after one crashes; fail at the end if any did.
# The whole libFuzzer output of a target is in build/fuzz/<name>.log; the
# end of the run lists each target's executions per second, how many it
# made and in how many seconds.
fuzz: fuzz-build
	@export UBSAN_OPTIONS="$${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"; \
	export ASAN_OPTIONS="$(FUZZ_ASAN_OPTIONS)$${ASAN_OPTIONS:+:$$ASAN_OPTIONS}"; \
	bad=""; speeds=""; \
	for b in $(FUZZ_BUDGETS); do \
	    t=$${b%%:*}; secs=$${b#*:}; runs=$${secs#*:}; secs=$${secs%%:*}; \
	    mkdir -p $(FUZZ_BUILD)/corpus/$$t fuzz/crashers/$$t fuzz/corpus/$$t; \
	    log=$(FUZZ_BUILD)/$$t.log; \
	    echo "==> $$t: $${runs:+$$runs executions or }$$secs s, seeds fuzz/corpus/$$t, crashers to fuzz/crashers/$$t/"; \
	    dict=""; [ -f fuzz/$$t.dict ] && dict="-dict=fuzz/$$t.dict"; \
	    start=$$(date +%s); \
	    $(FUZZ_BUILD)/$$t -max_total_time=$$secs $${runs:+-runs=$$runs} -timeout=10 \
	        -print_final_stats=1 -artifact_prefix=fuzz/crashers/$$t/ $$dict $(FUZZ_FLAGS) \
	        $(FUZZ_BUILD)/corpus/$$t fuzz/corpus/$$t >$$log 2>&1; \
	    rc=$$?; took=$$(( $$(date +%s) - start )); \
	    grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' $$log | sed 's/^/    /'; \
	    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' $$log | \
	        sed 's/^/    /'; \
	    n=$$(sed -n 's/^stat::number_of_executed_units: *//p' $$log); \
	    eps=$$(sed -n 's/^stat::average_exec_per_sec: *//p' $$log); \
	    short=""; [ -n "$$runs" ] && [ "$${n:-0}" -lt "$$runs" ] && short=", stopped at $$secs s before $$runs"; \
	    speeds="$$speeds$$(printf '%-18s %8s executions/s (%s executions in %s s%s)' $$t "$${eps:-?}" "$${n:-?}" $$took "$$short")\n"; \
	    if [ $$rc -ne 0 ]; then \
	        echo "    $$t FAILED (exit $$rc); the end of $$log:"; \
	        tail -n 60 $$log | sed 's/^/    | /'; \
	        grep -E 'Test unit written to' $$log | sed 's/^/    /'; \
	        bad="$$bad $$t"; \
	    fi; \
	done; \
	echo "fuzz: executions per second, per target:"; \
	printf "$$speeds" | sed 's/^/    /'; \
	if [ -n "$$bad" ]; then \
	    echo "fuzz: crashes in:$$bad (inputs in fuzz/crashers/; make test replays them)"; exit 1; \
	fi; \
	echo "fuzz: no crashes in $(words $(FUZZ_TARGETS)) targets"

# The seed generator is an ordinary program against lib/libtide.a.
$(BUILD)/fuzz-seeds/make-seeds: fuzz/make-seeds.c $(LIBTIDE)
	@mkdir -p $(@D)
	$(COMPILE) -Ifuzz $(TIDE_LDFLAGS) $(LDFLAGS) -o $@ $< $(LIBTIDE) $(LIBS)

fuzz-seeds: $(BUILD)/fuzz-seeds/make-seeds
	$(BUILD)/fuzz-seeds/make-seeds tests/fixtures/nudb fuzz/corpus

# Not part of `make test`: a quick look for tabs, trailing blanks and CRLF.
format-check:
	@files=$$(find include src tests bench -name '*.[ch]' 2>/dev/null); \
	bad=0; \
	if [ -n "$$files" ]; then \
	    if grep -n -P '\t' $$files; then echo "format-check: tabs above"; bad=1; fi; \
	    if grep -n -P '[ \t]+$$' $$files; then echo "format-check: trailing blanks above"; bad=1; fi; \
	    if grep -n -P '\r$$' $$files; then echo "format-check: CRLF above"; bad=1; fi; \
	fi; \
	if [ $$bad -eq 0 ]; then echo "format-check: clean"; fi; \
	exit $$bad

-include $(DEPS)
-include $(FUZZ_DEPS)
