#!/bin/sh
# Usage: bench/fidelity/acceptance.sh OUTDIR
# The acceptance runs of docs/fidelity.md: spoc plan --estimate for the
# foreign configuration, then on each foreign engine (A: --gpu H100-SXM,
# B: --throttle 0:0.6 on sim serve's default H100) a live plan, a multi
# plan and the live plan again (is the reference repeatable?), each
# printed by run.sh. The two engines' plans run at the same time (each
# server and client is light: the servers log their event-loop lag, which
# says whether the machine kept up). SPOC_BIN is the spoc binary (default:
# spoc). About 70 minutes on a 2-core machine.
set -eu
out=$1
spoc=${SPOC_BIN:-spoc}
mkdir -p "$out"
stamp() { echo "== $(date -u +%H:%M:%S) $*; load $(cut -d' ' -f1-3 /proc/loadavg)"; }
cfg=$(mktemp --suffix .yaml)
# Ctrl-C or TERM stops both engines' plans and their servers: the whole
# process group gets SIGTERM (background jobs of a script ignore SIGINT)
trap 'rm -f "$cfg"' EXIT
trap 'trap - INT TERM; kill -TERM 0 2>/dev/null; exit 130' INT TERM
cp bench/fidelity/foreign.yaml "$cfg"
stamp "estimate"
SPOC_BIN=$spoc SPOC_FOREIGN_ARGS="--gpu H100-SXM" "$spoc" plan -c "$cfg" --estimate --json > "$out/estimate.json"
SPOC_BIN=$spoc SPOC_FOREIGN_ARGS="--gpu H100-SXM" "$spoc" plan -c "$cfg" --estimate
model() {
	name=$1 args=$2
	for run in live multi live-repeat; do
		stamp "$run on $name ($args)"
		SPOC_BIN=$spoc bench/fidelity/run.sh "${run%-repeat}" "$args" "$out/$run-$name" || { echo "failed: $run on $name"; failed=1; }
	done
	return $failed
}
failed=0
model A "--gpu H100-SXM" > "$out/A.out" 2>&1 &
a=$!
model B "--throttle 0:0.6" > "$out/B.out" 2>&1 &
b=$!
status=0
wait $a || status=1
wait $b || status=1
cat "$out/A.out" "$out/B.out"
stamp "done"
exit $status
