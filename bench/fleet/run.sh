#!/bin/bash
# Issue 32's live fleet measurement (docs/fleet.md, "Measured"): for each
# router, spoc sweep of bench/fleet/issue32.yaml live — three `spoc sim
# serve` replicas behind the HAProxy spoc starts — REPEATS times, and once
# in the simulator (engine.kind sim, same file, same grid).
# Needs haproxy (apt-get install haproxy). Usage: bench/fleet/run.sh [OUT] [REPEATS]
set -euo pipefail
out=${1:-/tmp/spoc-fleet}
repeats=${2:-2}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
go build -o "$out/spoc" "$here/../../cmd/spoc"
declare -A grid=([round-robin]=48,72,96 [session-affinity]=72,108,144)
for router in round-robin session-affinity; do
  for kind in sim process; do
    sed -e "s|SPOC|$out/spoc|" -e "s|kind: process|kind: $kind|" -e "s|router: round-robin|router: $router|" \
      "$here/issue32.yaml" > "$out/$kind-$router.yaml"
  done
  "$out/spoc" sweep -c "$out/sim-$router.yaml" --seeds 1 --users "${grid[$router]}" -o "$out/sim-$router" \
    > "$out/sim-$router.out" 2>&1
done
for rep in $(seq 1 "$repeats"); do
  for router in round-robin session-affinity; do
    "$out/spoc" sweep -c "$out/process-$router.yaml" --seeds 1 --users "${grid[$router]}" -o "$out/live-$router-$rep" \
      > "$out/live-$router-$rep.out" 2>&1
  done
done
grep -H "capacity ceiling\|first failing" "$out"/*.out
