#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The warm fetches at 64M, tided's default lag, one round each of morning
# (/tmp/ab/peers-pf, the prefetch A/B's build of 11:04 with the insert's
# prefetch, as the growth curve's) and head (19d60c7): sort's round at
# 18:35 fetched at a quarter of the curve's rate. Waits for ab3.sh.
cd /tmp/ab3
while pgrep -f 'ab2.sh|ab3.sh' > /dev/null; do sleep 10; done
for v in morning head; do
  echo "== $v 64M warm lag 64MiB $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> ab4.log
  ./peers-$v --engines tide-defer --items 64000000 --runs 1 --index-lag 64MiB --dir /tmp/ab3 \
     --record /tmp/ab3/warm64-$v.jsonl >> ab4.log 2>&1
done
echo "== done $(date +%T)" >> ab4.log
