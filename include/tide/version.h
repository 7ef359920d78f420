/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tide/version.h: Tide's version, one definition for every part.
 *
 * TIDE_VERSION is the text the programs print (`tide --version`,
 * `tided --version`, /v1/status, the version label of
 * tide_build_info on /metrics); the three numbers are the same version
 * for a program that compares. A pre-release carries a suffix in the
 * text only ("-dev"), never in the numbers.
 *
 * Invariants:
 *   1. TIDE_VERSION begins with "MAJOR.MINOR.PATCH" of the three numbers
 *      below (tests/test_build.c checks it).
 *
 * Never: include anything; this header is read by every part, the lowest
 * included.
 */
#ifndef TIDE_VERSION_H
#define TIDE_VERSION_H

#define TIDE_VERSION_MAJOR 1
#define TIDE_VERSION_MINOR 0
#define TIDE_VERSION_PATCH 0
#define TIDE_VERSION       "1.0.0-dev"

#endif
