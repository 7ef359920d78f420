#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# tide-defer at 100M and 64M with tided's default lag (64 MiB) and 1 GiB,
# interleaved; cold phase in 2 GiB; binary $1.
P=$1
cd /work/main
for n in 100000000 64000000; do for lag in 1GiB 64MiB; do
  echo "== $n lag $lag $(date +%T)" >> /tmp/q/queue.log
  SIZES=$n ENGINES=tide-defer INDEX_LAG=$lag RUNS=1 OUT=/tmp/q/lag-$lag PEERS=$P BENCH_DIR=/tmp/q \
    bash bench/growth >> /tmp/q/queue.log 2>&1
done; done
echo "== part 2 done $(date +%T)" >> /tmp/q/queue.log
