#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
cd /work/main
echo "== lmdb 100M start $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/q/queue.log
SIZES=100000000 ENGINES=lmdb RUNS=1 OUT=/tmp/q/lmdb100 PEERS=/tmp/q/peers-cur BENCH_DIR=/tmp/q/bd bash bench/growth >> /tmp/q/queue.log 2>&1
echo "== lmdb 100M done rc $? $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/q/queue.log
