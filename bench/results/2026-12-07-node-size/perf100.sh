#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
while pgrep -f part4.sh > /dev/null; do sleep 5; done
cd /tmp/q
echo "== perf 100M 1GiB $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/q/queue.log
perf record -F 99 -g -o /tmp/q/perf100.data -- /tmp/q/peers-new --engines tide-defer --items 100000000 \
  --runs 1 --no-warm --index-lag 1GiB --dir /tmp/q >> /tmp/q/queue.log 2>&1
echo "== perf done $(date +%T)" >> /tmp/q/queue.log
