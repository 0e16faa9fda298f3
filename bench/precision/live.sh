#!/bin/sh
# Usage: bench/precision/live.sh OUTDIR
# Issue 31's live acceptance: on two foreign engines (spoc sim serve
# launched as a process with a cost model the configuration does not
# know), two independent live plans (workload seeds 1 and 2) and a multi
# plan (seed 3), each with the default precision target (±10 %) and a
# plan.budget of 2600 s (2× what the live plan of docs/performance.md
# spent). Engine A: the H100 (--gpu H100-SXM) with constant think times
# of 0.5 s and a 1 s ramp — the first config of issue 31, where users march
# in step; engine B: the H100 throttled to 60 % (--throttle 0:0.6) with
# bench/fidelity/foreign.yaml's exponential think times. The search runs
# 12 trials (not foreign.yaml's 40) to fit the runs in 30 minutes: all
# six plans run side by side. Prints each plan (bench/fidelity/run.sh)
# and then checks: each live estimate within ±15 %, each inside the other
# live plan's interval, the multi estimate inside both live intervals.
# SPOC_BIN is the spoc binary (default: spoc).
set -eu
out=$1
spoc=${SPOC_BIN:-spoc}
mkdir -p "$out"
stamp() { echo "== $(date -u +%H:%M:%S) $*; load $(cut -d' ' -f1-3 /proc/loadavg)"; }
trap 'trap - INT TERM; kill -TERM 0 2>/dev/null; exit 130' INT TERM
engine() {
	name=$1 args=$2 think=$3 ramp=$4
	base=$(mktemp --suffix .yaml)
	sed -e "s|think_time_s: {kind: exponential, mean: 0.5}|think_time_s: $think|" \
		-e "s|^  ramp: 5s|  ramp: $ramp|" -e "s|^  trials: 40|  trials: 12|" bench/fidelity/foreign.yaml > "$base"
	one() {
		fid=$1 seed=$2
		cfg=bench/precision/.cfg-$name-$seed.yaml
		sed "s|^workload:|workload:\n  seed: $seed|" "$base" > "$cfg"
		stamp "$fid (seed $seed) on $name ($args)"
		SPOC_BIN=$spoc SPOC_FOREIGN_CONFIG=$cfg SPOC_PLAN_BUDGET=2600s bench/fidelity/run.sh "$fid" "$args" "$out/$name-$fid-$seed" || echo "failed: $fid $seed on $name"
		stamp "done: $fid (seed $seed) on $name"
		rm -f "$cfg"
	}
	# the three plans side by side (each server and client is light; the
	# servers log their event-loop lag and every run its dispatch lag, so
	# a machine that did not keep up shows as client-bound runs left out)
	one live 1 > "$out/$name-live-1.txt" 2>&1 &
	one live 2 > "$out/$name-live-2.txt" 2>&1 &
	one multi 3 > "$out/$name-multi-3.txt" 2>&1 &
	wait
	cat "$out/$name-live-1.txt" "$out/$name-live-2.txt" "$out/$name-multi-3.txt"
	rm -f "$base"
}
engine A "--gpu H100-SXM" "{kind: constant, value: 0.5}" 1s > "$out/A.txt" 2>&1 &
engine B "--throttle 0:0.6" "{kind: exponential, mean: 0.5}" 5s > "$out/B.txt" 2>&1 &
wait
cat "$out/A.txt" "$out/B.txt"
python3 - "$out" <<'PY'
import json, sys, os
out = sys.argv[1]
for eng in "AB":
    est = {}
    for name in ("live-1", "live-2", "multi-3"):
        p = os.path.join(out, f"{eng}-{name}", "summary.json")
        if os.path.exists(p):
            s = json.load(open(p))
            est[name] = (s["capacity"].get("estimate"), sum(ph["engine_seconds"] for ph in s["phases"]))
    def fmt(e):
        return f'{e["users"]:.1f} [{e["lo"]:.1f}, {e["hi"]}] ±{100*(e["precision"] or float("inf")):.1f} %'
    for n, (e, secs) in est.items():
        print(f'{eng} {n}: {fmt(e) if e else "no estimate"}, {secs:.0f} engine-s')
    l1, l2, m = (est.get(k, (None, 0))[0] for k in ("live-1", "live-2", "multi-3"))
    inside = lambda x, e: x is not None and e is not None and e["lo"] <= x["users"] <= (e["hi"] or float("inf"))
    if l1 and l2:
        print(f'{eng}: live plans within ±15 %: {l1["precision"] is not None and l1["precision"] <= 0.15} and {l2["precision"] is not None and l2["precision"] <= 0.15}; '
              f'each inside the other: {inside(l1, l2)} and {inside(l2, l1)}')
    if m and l1 and l2:
        print(f'{eng}: multi inside live-1: {inside(m, l1)}, inside live-2: {inside(m, l2)}')
PY
