#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# head (19d60c7) at 1M with tided's default index lag (64 MiB), three
# rounds: the 1M end of the growth at that lag. Waits for ab2.sh.
cd /tmp/ab3
while pgrep -f 'ab2.sh' > /dev/null; do sleep 10; done
for r in 1 2 3; do
  echo "== head 1000000 lag 64MiB r$r $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> ab3.log
  ./peers-head --engines tide-defer --items 1000000 --runs 1 --no-warm --index-lag 64MiB --dir /tmp/ab3 \
     --record /tmp/ab3/ab-head-64MiB.jsonl >> ab3.log 2>&1
done
echo "== done $(date +%T)" >> ab3.log
