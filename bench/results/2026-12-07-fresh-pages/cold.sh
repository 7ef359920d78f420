#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Cold reads at 64M in a 4 GiB cgroup, where nudb.key (about 2.2 GiB) fits
# in 3/4 of the memory: block 16384 and block 4096, one run each.
cd /tmp/ab2
while pgrep -f 'run4.sh' > /dev/null; do sleep 10; done
for e in tide-defer-16k tide-defer; do
  echo "== $e 64M cold 4GiB $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> cold.log
  ./peers-pf3 --engines $e --items 64000000 --runs 1 --no-warm --index-lag 1GiB --dir /tmp/ab2 \
     --cold-memory 4GiB --cold-fetches 100000 --record /tmp/ab2/cold.jsonl >> cold.log 2>&1
done
echo "== done $(date +%T)" >> cold.log
