#!/bin/sh
# Usage: bench/fidelity/run.sh FIDELITY FOREIGN_ARGS OUT [extra spoc plan flags]
# Runs spoc plan with plan.fidelity FIDELITY (live, multi or simulated) on
# the foreign engine of bench/fidelity/foreign.yaml, whose cost model
# FOREIGN_ARGS sets (e.g. "--gpu H100-SXM", "--throttle 0:0.6"), then
# prints the ceiling and the engine time as spoc and as the server
# processes counted it. SPOC_BIN is the spoc binary (default: spoc);
# SPOC_FOREIGN_CONFIG replaces foreign.yaml, SPOC_PLAN_BUDGET sets
# plan.budget.
# docs/fidelity.md lists the runs made with it.
set -eu
fidelity=$1 foreign=$2 out=$3
shift 3
spoc=${SPOC_BIN:-spoc}
cfg=$(mktemp --suffix .yaml)
trap 'rm -f "$cfg"' EXIT
cp "${SPOC_FOREIGN_CONFIG:-bench/fidelity/foreign.yaml}" "$cfg"
printf 'plan:\n  fidelity: %s\n' "$fidelity" >> "$cfg"
[ -z "${SPOC_PLAN_BUDGET:-}" ] || printf '  budget: %s\n' "$SPOC_PLAN_BUDGET" >> "$cfg"
rm -rf "$out"
SPOC_BIN=$spoc SPOC_FOREIGN_ARGS=$foreign "$spoc" plan -c "$cfg" --out "$out" "$@" 2> "$out.log" > /dev/null || { tail -20 "$out.log"; exit 1; }
# the servers' own count: one "engine usage" line per server at shutdown
up=$(cat "$out"/servers/*/server.log | sed -n 's/.*engine usage: up \([0-9.]*\)s.*/\1/p' | awk '{s+=$1} END {printf "%.1f", s}')
lag=$(cat "$out"/servers/*/server.log | sed -n 's/.*lag mean \([0-9.]*\)ms max \([0-9.]*\)ms.*/\1 \2/p' | awk '{m+=$1; n++; if ($2>x) x=$2} END {printf "mean %.2f ms, max %.1f ms", m/n, x}')
python3 - "$out/summary.json" "$up" "$lag" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
c = s["capacity"]
spoc = sum(p["engine_seconds"] for p in s["phases"])
starts = sum(p["engine_starts"] for p in s["phases"])
iv = c.get("ceiling_interval") or {}
e = c.get("estimate")
if e:
    r = c.get("refinement") or {}
    print(f'capacity {e["users"]:.1f} [{e["lo"]:.1f}, {e["hi"]}] ±{100*(e["precision"] or float("nan")):.1f} % (target ±{100*r.get("target", 0):.0f} %: {r.get("stopped")}, {r.get("runs")} fresh-seed runs), '
          f'binding {e["binding_clause"]}, spread {e.get("seed_spread")}; walk ceiling {c["ceiling"]}')
else:
    print(f'no estimate: {c.get("no_estimate")}')
print(f'ceiling {c["ceiling"]} users [{iv.get("lo")}, {iv.get("hi")}] over the seeds (first failing {c["first_failing_users"]} on {c.get("failed_clause")}, resolution {c["resolution_users"]}), '
      f'engine-seconds spoc {spoc:.1f} / servers {sys.argv[2]} on {starts} starts; server loop lag {sys.argv[3]}')
print("phases:", ", ".join(f'{p["name"]} {p["engine_seconds"]:.1f}s/{p["engine_starts"]}' for p in s["phases"] if p["engine_seconds"] > 0))
print("per-seed ceilings:", [x["users"] for x in iv.get("seeds", [])], "chosen:", c.get("config"))
f = s.get("fidelity") or {}
if f.get("correction"):
    fit = f["fit"]
    print(f'correction {f["correction"]}, fit error {fit["uncalibrated_rms_relative_error"]:.3f} -> {fit["fitted_rms_relative_error"]:.3f}, '
          f'held back {fit.get("held_back_rms_relative_error")} (first fit {fit.get("held_back_fit_correction")}), predicted ceiling {f.get("predicted_ceiling_users")}, '
          f'refit rounds {f.get("refit_rounds")}, kept trial {f.get("kept_trial")}')
    print("terms:", ", ".join(f'{t["name"]}={t["value"]:.4g} ({"identified" if t["identified"] else "held"}, rise {t["rms_log_error_rise"]:.3f})' for t in fit.get("terms", [])))
    for p in f.get("probes", []):
        print(f'  probe {p["users"]:4d} held_back={p.get("held_back", False)!s:5} live ttft95 {p["live"]["ttft_p95_ms"]:.0f} itl95 {p["live"]["itl_p95_ms"]:.1f} | calibrated ttft95 {p["calibrated"]["ttft_p95_ms"]:.0f} itl95 {p["calibrated"]["itl_p95_ms"]:.1f} err {p["calibrated_rms_relative_error"]:.3f}')
    for v in f.get("verified", []):
        print(f'  verify r{v["round"]} trial {v["trial"]} {v["users"]:4d}: predicted {v["predicted"]["pass"]} ttft95 {v["predicted"]["ttft_p95_ms"]:.0f} | live {v["measured"]["pass"]} ttft95 {v["measured"]["ttft_p95_ms"]:.0f}')
PY
