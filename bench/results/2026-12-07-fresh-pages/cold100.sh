#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Cold reads at 100M in a 6 GiB cgroup, where nudb.key (about 3.4 GiB)
# fits in 3/4 of the memory: block 16384, one run.
cd /tmp/ab2
echo "== tide-defer-16k 100M cold 6GiB $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> cold.log
./peers-pf3 --engines tide-defer-16k --items 100000000 --runs 1 --no-warm --index-lag 1GiB --dir /tmp/ab2 \
   --cold-memory 6GiB --cold-fetches 100000 --record /tmp/ab2/cold.jsonl >> cold.log 2>&1
echo "== done $(date +%T)" >> cold.log
