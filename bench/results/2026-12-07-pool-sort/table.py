# SPDX-License-Identifier: BSD-2-Clause
# The side-by-side runs of ab.sh: CPU µs per insert and inserts per CPU-s,
# each round and the median, per size, lag and build; then the 64M rounds
# with warm fetches.
import glob, json, os, statistics
here = os.path.dirname(os.path.abspath(__file__))
rows = {}
for path in sorted(glob.glob(os.path.join(here, 'ab-*.jsonl'))):
    v, lag = os.path.basename(path)[3:-6].split('-')
    for l in open(path):
        r = json.loads(l)
        rows.setdefault((lag, r['items'], v), []).append(r)
for (lag, n, v), rs in sorted(rows.items(), key=lambda k: (k[0][0], k[0][1], ['base', 'pool', 'sort', 'nopool', 'head'].index(k[0][2]))):
    us = [r['load_cpu_us_per_item'] for r in rs]
    k = [r['load_items_per_cpu_s'] / 1000 for r in rs]
    wa = [r['load_write_amp_wchar'] for r in rs]
    wd = [r['load_write_amp_device'] for r in rs]
    pk = [r['load_peak_anon'] / 2**20 for r in rs]
    print(f"{lag:5} {n:>10} {v:5} us {' '.join(f'{x:.3f}' for x in us)} med {statistics.median(us):.3f} "
          f"k/cpu-s {' '.join(f'{x:.0f}' for x in k)} med {statistics.median(k):.0f} "
          f"wa {statistics.median(wa):.2f}/{statistics.median(wd):.2f} peak {statistics.median(pk):.0f}MiB "
          f"files {statistics.median([r['file_bytes'] / 2**30 for r in rs]):.2f}GiB")
for path in sorted(glob.glob(os.path.join(here, 'warm64-*.jsonl'))):
    for l in open(path):
        r = json.loads(l)
        print(os.path.basename(path), r['items'], f"load {r['load_items_per_cpu_s']/1000:.0f}k/cpu-s "
              f"us {r['load_cpu_us_per_item']:.3f} fetch1 {r['fetch1_items_per_cpu_s']/1000:.0f}k "
              f"fetch2 {r['fetch2_items_per_cpu_s']/1000:.0f}k wa {r['load_write_amp_wchar']:.2f}/"
              f"{r['load_write_amp_device']:.2f} peak {r['load_peak_anon']/2**20:.0f}MiB "
              f"files {r['file_bytes']/2**30:.2f}GiB")
