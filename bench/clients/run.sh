#!/usr/bin/env bash
# Acceptance of issue 34 (run.clients) on one machine: a client limited to
# a fraction of a core is client-bound at N users; the same N users over 4
# shards each limited the same way are not, and their merged TTFT and ITL
# lie inside the spread of 5 repeats of an unthrottled single client; the
# sharded client's per-token timing error p99 (against the test server's
# log of when it wrote each chunk, spoc bench client) is at most 2 ms.
#
# cgroup v1 (this machine): cpu.cfs_quota_us / cpu.cfs_period_us under
# $CG_ROOT. On cgroup v2 the same limit is one file: echo "QUOTA PERIOD" >
# /sys/fs/cgroup/<group>/cpu.max (e.g. "10000 100000" for 0.1 core).
# CG_ROOT must not lie under a group that is itself limited (the helpers'
# group that lowcpu and livelock throttle to 0.25 core): a child's quota
# is then shared with its siblings under the parent's, and 4 shards at
# 0.25 core each got 0.25 core together.
# Real time: run it alone on an otherwise idle machine, as root (cgroup
# writes, chrt). TOKEN_INTERVAL (default 40ms) paces the timing part's test
# server; the comment above that part says why. It prints PASS or FAIL.
set -euo pipefail
cd "$(dirname "$0")/../.."
CG_ROOT=${CG_ROOT:-/sys/fs/cgroup/cpu/spoc-c34}
PERIOD=${PERIOD:-1000000} # µs: a long period lets a shard's bursts (a new session's whole prompt rendered) fit in its budget
QUOTA=${QUOTA:-90000}     # µs per period: 0.09 core per client
USERS=${USERS:-200}
DUR=${DUR:-20s}
WARM_DUR=${WARM_DUR:-120s}
OUT=${OUT:-/tmp/c34-bench}
mkdir -p "$OUT"
SPOC="$OUT/spoc"
go build -o "$SPOC" ./cmd/spoc
export SPOC CG_ROOT

mkdir -p "$CG_ROOT"
# The same fraction of a core twice: a CFS quota for the runs at normal
# priority, and real-time bandwidth for the timing measurement, which runs
# at real-time priority as spoc bench client's own does on this shared
# machine (a real-time task ignores the CFS quota; a group it joins needs
# real-time runtime, which its parent hands down).
echo 700000 > "$CG_ROOT/cpu.rt_runtime_us"
mkcg() {
  mkdir -p "$CG_ROOT/$1"
  echo "$PERIOD" > "$CG_ROOT/$1/cpu.cfs_period_us"; echo "$QUOTA" > "$CG_ROOT/$1/cpu.cfs_quota_us"
  echo "$PERIOD" > "$CG_ROOT/$1/cpu.rt_period_us"; echo "$QUOTA" > "$CG_ROOT/$1/cpu.rt_runtime_us"
}
cleanup() {
  [[ -n "${SRV:-}" ]] && kill "$SRV" 2>/dev/null || true
  for g in c34-single c34-shard-0 c34-shard-1 c34-shard-2 c34-shard-3; do rmdir "$CG_ROOT/$g" 2>/dev/null || true; done
  rmdir "$CG_ROOT" 2>/dev/null || true
}
trap cleanup EXIT
mkcg c34-single; for i in 0 1 2 3; do mkcg "c34-shard-$i"; done

PORT=${PORT:-18791}
"$SPOC" sim serve --vllm-faithful openai/gpt-oss-20b --gpu H200-SXM --port "$PORT" > "$OUT/server.log" 2>&1 &
SRV=$!
sleep 2
THINK=${THINK:-0.05}
WARMUP=${WARMUP:-15s}
# Every client runs at real-time priority (RT=1, the default), as spoc
# bench client's fair measurement does on this shared machine: at normal
# priority other sessions' work preempted even the unthrottled client past
# the 10 ms lag allowance in 2-3 of 5 runs. A real-time task ignores the
# CFS quota; its cgroup's real-time bandwidth (set to the same fraction
# above) throttles it the same way. RT=0 runs at normal priority under the
# CFS quota.
# Real-time bandwidth is per CPU: the clients are pinned to one
# (CLIENT_CPU) so that a group's runtime is its whole share.
CHRT=(); [[ "${RT:-1}" == 1 ]] && CHRT=(taskset -c "${CLIENT_CPU:-1}" chrt -r 1)
ARGS=(run --target "http://127.0.0.1:$PORT" --model openai/gpt-oss-20b --users "$USERS" --ramp 5s --warmup "$WARMUP" --duration "$DUR" --think-time-scale "$THINK" --quiet --json)

uptime | tee "$OUT/uptime.txt"
# The server's prefix cache starts empty: a fresh server's first minute is
# every user's whole history prefilled (at 100 users hardly a request
# finished in a 20 s window). One unmeasured run of the same sessions
# fills it, so every measured run starts from the cache the same sessions
# left, not the first from an empty one.
"${CHRT[@]}" "$SPOC" "${ARGS[@]}" --duration "$WARM_DUR" --out "$OUT/warm.jsonl" > "$OUT/warm.json"
# The 5 unthrottled single clients with the 4 throttled shards in their
# middle (after the second), and the throttled single client last: the
# server's state drifts from run to run (its prefix cache, the machine), so
# a run made before all the repeats, as the shards' run once was, is
# compared with runs that drifted away from it.
single() { "${CHRT[@]}" "$SPOC" "${ARGS[@]}" --out "$OUT/single-$1.jsonl" > "$OUT/single-$1.json"; }
single 1; single 2
# 4 throttled shards
SPOC_CLIENT_COMMAND="$PWD/bench/clients/shard-cgroup.sh" "${CHRT[@]}" "$SPOC" "${ARGS[@]}" --clients 4 --out "$OUT/shards.jsonl" > "$OUT/shards.json"
single 3; single 4; single 5
# one throttled client: its own check should say client-bound
( echo $BASHPID > "$CG_ROOT/c34-single/cgroup.procs"; exec "${CHRT[@]}" "$SPOC" "${ARGS[@]}" --out "$OUT/single-throttled.jsonl" ) > "$OUT/single-throttled.json"
kill "$SRV"; SRV=

# Per-token timing error: the same users and workload against the test
# server, which logs when it wrote each chunk; the 4 throttled shards and
# one unthrottled client, each measured as an external client, everything
# at real-time priority (chrt -r 1: on a machine other sessions load, a
# client at normal priority is preempted for a token interval and more).
# The test server answers at once (20 ms to the first token), so the same
# 200 users start sessions, and render prompts, much faster than against
# sim serve above: at its default 20 ms per token the throttled shards
# needed their whole quota (0.366 of 0.36 cores, client-bound by their own
# check; run of 2026-12-06 06:16), against 0.027 core each in the
# acceptance run, and the timing error measured a saturated client. At 40
# ms per token (TOKEN_INTERVAL) they use 0.30 cores (0.075 each): still
# 2.7 times the acceptance run's client load, below the quota (run of
# 06:28; about 1,000 chunks/s against the acceptance run's 1,900-2,100).
RUN="$SPOC run --target {url} --model gpt-oss-120b --users {streams} --ramp 2s --warmup {warmup}s --duration {duration}s --think-time-scale $THINK --quiet --out {out}"
SPOC_CLIENT_COMMAND="$PWD/bench/clients/shard-cgroup.sh" chrt -r 1 "$SPOC" bench client --skip-self --levels "$USERS" --warmup "${WARMUP%s}s" --duration 10s --client-cpu "${CLIENT_CPU:-1}" --token-interval "${TOKEN_INTERVAL:-40ms}" \
  --external "shards-throttled=$RUN --clients 4" --external "single=$RUN" --json > "$OUT/timing.json" 2> "$OUT/timing.log" || true
uptime | tee -a "$OUT/uptime.txt"

python3 - "$OUT" <<'PY'
import json, sys
d = sys.argv[1]
def cores(h): return round(h["cpu_utilization"] * h["cpu_cores"], 4) if h else None
def load(n):
    s = json.load(open(f"{d}/{n}.json"))
    o, c = s["overall"], s["client"]
    return dict(req=o["requests"], ok=o["ok"], ttft50=o["ttft"]["p50_ms"], ttft95=o["ttft"]["p95_ms"], itl50=o["itl"]["p50_ms"], itl95=o["itl"]["p95_ms"],
                lag=c["dispatch_lag_p99_ms"], unsent_late=c.get("unsent_late"), cores=cores(c.get("health")), bound=c["client_bound"], reasons=c.get("reasons"),
                shards=[dict(shard=x["shard"], req=x["requests"], lag=x["dispatch_lag_p99_ms"], unsent_late=x.get("unsent_late"), cores=cores(x.get("health")),
                             skew=round(x["start_skew_ms"], 2), bound=x["client_bound"]) for x in c.get("shards") or []])
th, sh = load("single-throttled"), load("shards")
reps = [load(f"single-{r}") for r in range(1, 6)]
print("warm-up run:", load("warm"))
print("throttled single:", th)
print("4 throttled shards:", sh)
for r in reps: print("unthrottled single:", r)
ok = th["bound"] and not sh["bound"]
print(f"throttled single client-bound={th['bound']}, 4 throttled shards client-bound={sh['bound']}")
for k in ("ttft50", "ttft95", "itl50", "itl95"):
    lo, hi = min(r[k] for r in reps), max(r[k] for r in reps)
    inside = lo <= sh[k] <= hi
    ok = ok and inside
    print(f"{k}: shards {sh[k]:.2f} ms, unthrottled spread [{lo:.2f}, {hi:.2f}] inside={inside}")
levels = json.load(open(f"{d}/timing.json"))
if isinstance(levels, dict):  # spoc bench client failed: {"error": ...}
    print("timing:", levels.get("error"))
    levels, ok = [], False
for lv in levels:
    good = lv["itl_err_p99_ms"] <= 2
    if lv["client"] == "shards-throttled":
        ok = ok and good
    print(f"timing {lv['client']} {lv['streams']} streams: ITL error p99 {lv['itl_err_p99_ms']:.2f} ms (<= 2: {good}), TTFT error p99 {lv['ttft_err_p99_ms']:.2f} ms, "
          f"dispatch lag p99 {lv['dispatch_lag_p99_ms']:.2f} ms, {lv['timed']} streams timed, {lv['tokens_per_second']:.0f} tok/s, client {lv.get('client_cores', 0):.3f} cores")
print("PASS" if ok else "FAIL")
PY
