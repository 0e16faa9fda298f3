#!/bin/sh
# Usage: bench/fidelity/acceptance.sh OUTDIR
# The acceptance runs of docs/fidelity.md, one after the other: spoc plan
# --estimate for the foreign configuration, then a live and a multi plan on
# each foreign engine (A: --gpu H100-SXM, B: --throttle 0:0.6), each
# printed by run.sh. SPOC_BIN is the spoc binary (default: spoc). About 35
# minutes on a 2-core machine.
set -eu
out=$1
spoc=${SPOC_BIN:-spoc}
mkdir -p "$out"
stamp() { echo "== $(date -u +%H:%M:%S) $*; load $(cut -d' ' -f1-3 /proc/loadavg)"; }
cfg=$(mktemp --suffix .yaml)
trap 'rm -f "$cfg"' EXIT
cp bench/fidelity/foreign.yaml "$cfg"
stamp "estimate"
SPOC_BIN=$spoc SPOC_FOREIGN_ARGS="--gpu H100-SXM" "$spoc" plan -c "$cfg" --estimate --json > "$out/estimate.json"
SPOC_BIN=$spoc SPOC_FOREIGN_ARGS="--gpu H100-SXM" "$spoc" plan -c "$cfg" --estimate
for model in "A --gpu H100-SXM" "B --throttle 0:0.6"; do
	name=${model%% *} args=${model#* }
	for fidelity in live multi; do
		stamp "$fidelity on $name ($args)"
		SPOC_BIN=$spoc bench/fidelity/run.sh "$fidelity" "$args" "$out/$fidelity-$name"
	done
done
stamp "done"
