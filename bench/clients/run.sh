#!/usr/bin/env bash
# Acceptance of issue 34 (run.clients) on one machine: a client limited to
# a fraction of a core is client-bound at N users; the same N users over 4
# shards each limited the same way are not, and their merged TTFT and ITL
# lie inside the spread of 5 repeats of an unthrottled single client.
#
# cgroup v1 (this machine): cpu.cfs_quota_us / cpu.cfs_period_us under
# $CG_ROOT. On cgroup v2 the same limit is one file: echo "QUOTA PERIOD" >
# /sys/fs/cgroup/<group>/cpu.max (e.g. "10000 100000" for 0.1 core).
# Real time: run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
CG_ROOT=${CG_ROOT:-/sys/fs/cgroup/cpu/helpers}
QUOTA=${QUOTA:-10000}     # µs per 100 ms period: 0.1 core per client
USERS=${USERS:-150}
DUR=${DUR:-15s}
OUT=${OUT:-/tmp/c34-bench}
mkdir -p "$OUT"
SPOC="$OUT/spoc"
go build -o "$SPOC" ./cmd/spoc
export SPOC CG_ROOT

mkcg() { mkdir -p "$CG_ROOT/$1"; echo 100000 > "$CG_ROOT/$1/cpu.cfs_period_us"; echo "$QUOTA" > "$CG_ROOT/$1/cpu.cfs_quota_us"; }
cleanup() {
  [[ -n "${SRV:-}" ]] && kill "$SRV" 2>/dev/null || true
  for g in c34-single c34-shard-0 c34-shard-1 c34-shard-2 c34-shard-3; do rmdir "$CG_ROOT/$g" 2>/dev/null || true; done
}
trap cleanup EXIT
mkcg c34-single; for i in 0 1 2 3; do mkcg "c34-shard-$i"; done

PORT=${PORT:-18791}
"$SPOC" sim serve --vllm-faithful openai/gpt-oss-20b --gpu H200-SXM --port "$PORT" > "$OUT/server.log" 2>&1 &
SRV=$!
sleep 2
ARGS=(run --target "http://127.0.0.1:$PORT" --model openai/gpt-oss-20b --users "$USERS" --ramp 5s --warmup 8s --duration "$DUR" --think-time-scale "${THINK:-0.05}" --quiet --json)

uptime | tee "$OUT/uptime.txt"
# one throttled client: its own check should say client-bound
( echo $BASHPID > "$CG_ROOT/c34-single/cgroup.procs"; exec "$SPOC" "${ARGS[@]}" --out "$OUT/single-throttled.jsonl" ) > "$OUT/single-throttled.json"
# 4 throttled shards
SPOC_CLIENT_COMMAND="$PWD/bench/clients/shard-cgroup.sh" "$SPOC" "${ARGS[@]}" --clients 4 --out "$OUT/shards.jsonl" > "$OUT/shards.json"
# 5 unthrottled single clients
for r in 1 2 3 4 5; do "$SPOC" "${ARGS[@]}" --out "$OUT/single-$r.jsonl" > "$OUT/single-$r.json"; done
uptime | tee -a "$OUT/uptime.txt"

python3 - "$OUT" <<'PY'
import json, sys
d = sys.argv[1]
def load(n):
    s = json.load(open(f"{d}/{n}.json"))
    o = s["overall"]
    return dict(req=o["requests"], ttft50=o["ttft"]["p50_ms"], ttft95=o["ttft"]["p95_ms"], itl50=o["itl"]["p50_ms"], itl95=o["itl"]["p95_ms"],
                lag=s["client"]["dispatch_lag_p99_ms"], bound=s["client"]["client_bound"], reasons=s["client"].get("reasons"),
                shards=[(x["shard"], x["requests"], x["dispatch_lag_p99_ms"], x["start_skew_ms"], x["client_bound"]) for x in s["client"].get("shards") or []])
th, sh = load("single-throttled"), load("shards")
reps = [load(f"single-{r}") for r in range(1, 6)]
print("throttled single:", th)
print("4 throttled shards:", sh)
for r in reps: print("unthrottled single:", r)
ok = th["bound"] and not sh["bound"]
for k in ("ttft50", "ttft95", "itl50", "itl95"):
    lo, hi = min(r[k] for r in reps), max(r[k] for r in reps)
    inside = lo <= sh[k] <= hi
    ok = ok and inside
    print(f"{k}: shards {sh[k]:.2f} ms, unthrottled spread [{lo:.2f}, {hi:.2f}] inside={inside}")
print("PASS" if ok else "FAIL")
PY
