# SPDX-License-Identifier: BSD-2-Clause
# The A/B's runs: CPU µs per insert and inserts per CPU-s, each round and
# the median, per size and build.
import json, os, statistics, sys
here = os.path.dirname(os.path.abspath(__file__))
rows = {}
for v in ("base", "pf2", "pf3"):
    for l in open(os.path.join(here, f'ab3-{v}.jsonl')):
        r = json.loads(l)
        rows.setdefault((r['items'], v), []).append(r)
for (n, v), rs in sorted(rows.items()):
    us = [r['load_cpu_us_per_item'] for r in rs]
    k = [r['load_items_per_cpu_s'] / 1000 for r in rs]
    wa = [r['load_write_amp_wchar'] for r in rs]
    pk = [r['load_peak_anon'] / 2**20 for r in rs]
    print(f"{n:>10} {v:5} us {' '.join(f'{x:.3f}' for x in us)} med {statistics.median(us):.3f} "
          f"k/cpu-s med {statistics.median(k):.0f} wa {statistics.median(wa):.2f} peak {statistics.median(pk):.0f}MiB")
