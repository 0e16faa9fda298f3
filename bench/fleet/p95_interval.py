#!/usr/bin/env python3
"""Level by level, the TTFT p95 of two sweeps' records with a bootstrap 95 %
interval of each: how far one level's p95 moves by sampling alone.

A level of bench/fleet's shortened sweeps measures 60-70 requests, so its
p95 is about the fourth-longest TTFT; round-robin's are re-prefills of whole
histories. Usage: p95_interval.py SIM_SWEEP_DIR LIVE_SWEEP_DIR (the -o
folders of `spoc sweep`; records/sweep-users-NNNNN.jsonl in each). Warm-up
and failed requests are left out; TTFT is first_token - sent; the p95 is
the nearest rank, ceil(0.95 n), as spoc's own; 2,000 resamples, seed 1.
"""
import datetime as dt
import glob
import json
import math
import os
import random
import sys


def when(s):
    # RFC 3339 with nanoseconds: Python keeps microseconds
    s = s.rstrip("Z")
    if "." in s:
        head, frac = s.split(".")
        s = head + "." + frac[:6]
    return dt.datetime.fromisoformat(s)


def ttfts(path):
    out = []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("warmup") or r.get("error") or not r.get("first_token"):
                continue
            out.append((when(r["first_token"]) - when(r["sent"])).total_seconds())
    return out


def p95(v):
    v = sorted(v)
    return v[max(0, min(math.ceil(0.95 * len(v)) - 1, len(v) - 1))]


def interval(v, rng, n=2000):
    b = sorted(p95(rng.choices(v, k=len(v))) for _ in range(n))
    return b[int(0.025 * n)], b[int(0.975 * n) - 1]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sim, live = sys.argv[1], sys.argv[2]
    rng = random.Random(1)
    print("users | simulated p95 [95 % interval] n | live p95 [95 % interval] n")
    for f in sorted(glob.glob(os.path.join(sim, "records", "sweep-users-*.jsonl"))):
        g = os.path.join(live, "records", os.path.basename(f))
        if not os.path.exists(g):
            continue
        a, b = ttfts(f), ttfts(g)
        if not a or not b:
            continue
        users = int(os.path.basename(f)[len("sweep-users-"):-len(".jsonl")])
        print("%d | %.2f s [%.2f, %.2f] %d | %.2f s [%.2f, %.2f] %d"
              % ((users, p95(a)) + interval(a, rng) + (len(a), p95(b)) + interval(b, rng) + (len(b),)))


if __name__ == "__main__":
    main()
